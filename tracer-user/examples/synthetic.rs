//! Writes lifecycle events, plays them through a live source, feeds them to the lineage
//! engine and prints the tree.
//!
//! The scene: a shell (pid 100) starts a supervisor (200) that marks itself a child
//! subreaper and forks a worker (300); the worker creates a sibling with `CLONE_PARENT` (400,
//! whose parent is therefore the supervisor), forks a grandchild (500) and exits: the
//! grandchild is adopted by the nearest subreaper, the supervisor.
//!
//! The events are written with the test kit (`synth::Stream`) and played by the synthetic live
//! source (`source::Script`), the one whole-app tests run on without root.
//!
//! ```text
//! cargo run -p tracer-user --no-default-features --features tui --example synthetic
//! ```

use std::io::Write;

use tracer::lineage::{tree_text, SnapshotProcess, TreeOpts};
use tracer::source::{EventSource, Script, Scripted};
use tracer::synth::Stream;
use tracer::Engine;

/// The events of the scene described at the top of this file.
fn scene() -> Stream {
    let mut s = Stream::default();
    s.fork(100, 200);
    s.exec_comm(
        200,
        200,
        "/usr/bin/supervisor",
        &["supervisor"],
        "supervisor",
    );
    s.subreaper(200, 200, true);
    s.fork(200, 300);
    let worker = ["worker", "--once"];
    s.exec_comm(300, 300, "/usr/bin/worker", &worker, "worker");
    let clone = Some(tracer::Syscall::Clone);
    let parent = tracer::event::clone_flags::CLONE_PARENT;
    s.fork_full(300, 300, 400, 400, 200, clone, Some(parent));
    s.fork(300, 500);
    s.exec_comm(500, 500, "/bin/sleep", &["sleep", "60"], "sleep");
    s.exit(300, 0);
    s
}

/// The scene as a live source plays it: the shell existed before the events start (as a
/// capture reads it from /proc), its parent left unknown (0).
fn source() -> Script {
    let shell = SnapshotProcess {
        pid: 100,
        ppid: 0,
        comm: "sh".into(),
        exe: Some("/bin/sh".into()),
        argv: vec!["sh".into()],
        ..SnapshotProcess::default()
    };
    Script::new(None, vec![shell]).then(Scripted::Events(scene().events))
}

/// Feeds the scene to an engine and writes what it learned to `out`.
pub fn run(out: &mut impl Write) -> std::io::Result<()> {
    let mut script = source();
    let mut engine = Engine::seeded(&script.seed());
    let mut events = Vec::new();
    script.drain_now(&mut events);
    for ev in &events {
        engine.apply(ev);
    }
    write!(out, "{}", tree_text(&engine, TreeOpts::default()))?;
    writeln!(out)?;
    for pid in [400, 500] {
        let p = engine.process(pid).expect("in the scene");
        for entry in &p.lineage {
            write!(
                out,
                "{pid} {}: {} → parent {}",
                p.name(),
                entry.how,
                entry.parent
            )?;
            if let Some(reason) = entry.reason_text() {
                write!(out, " ({reason})")?;
            }
            writeln!(out)?;
        }
    }
    for w in engine.warnings() {
        writeln!(out, "warning: {w:?}")?;
    }
    Ok(())
}

#[allow(dead_code)] // Also compiled into tests/examples.rs, which calls `run` only.
fn main() -> std::io::Result<()> {
    run(&mut std::io::stdout().lock())
}
