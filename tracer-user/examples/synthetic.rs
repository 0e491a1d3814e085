//! Builds lifecycle events by hand, feeds them to the lineage engine and prints the tree.
//!
//! The scene: a shell (pid 100) starts a supervisor (200) that marks itself a child
//! subreaper and forks a worker (300); the worker creates a sibling with `CLONE_PARENT` (400,
//! whose parent is therefore the supervisor), forks a grandchild (500) and exits: the
//! grandchild is adopted by the nearest subreaper, the supervisor.
//!
//! ```text
//! cargo run -p tracer-user --no-default-features --example synthetic
//! ```

use std::io::Write;

use tracer::event::{clone_flags, prctl_opt, CapturedStr, CloneFlags, Event, EventKind};
use tracer::lineage::{tree_text, SnapshotProcess, TreeOpts};
use tracer::{Engine, Syscall};

/// Events in sequence order, numbered from 1.
struct Script {
    events: Vec<Event>,
}

impl Script {
    fn push(&mut self, tgid: u32, comm: &str, kind: EventKind) {
        let seq = self.events.len() as u64 + 1;
        self.events
            .push(Event::bare(seq, 1_000 * seq, tgid, tgid, comm, kind));
    }

    fn fork(&mut self, caller: (u32, &str), child: u32, parent: u32, flags: u64) {
        self.push(
            caller.0,
            caller.1,
            EventKind::Fork {
                child_tid: child,
                child_tgid: child,
                child_ppid: parent,
                syscall: Some(if flags == 0 {
                    Syscall::Fork
                } else {
                    Syscall::Clone
                }),
                flags: Some(CloneFlags(flags)),
                child_ns: None,
            },
        );
    }

    fn exec(&mut self, pid: u32, old_comm: &str, path: &str, argv: &[&str]) {
        self.push(
            pid,
            old_comm,
            EventKind::ExecEnter {
                syscall: Syscall::Execve,
                dirfd: -100,
                at_flags: 0,
                filename: CapturedStr::new(path),
                argv: argv.iter().map(|a| a.to_string()).collect(),
                argv_truncated: false,
            },
        );
        let name = path.rsplit('/').next().unwrap_or(path);
        self.push(
            pid,
            name,
            EventKind::Exec {
                old_tid: pid,
                filename: CapturedStr::new(path),
                cred: None,
            },
        );
    }

    fn exit(&mut self, pid: u32, comm: &str, code: u32) {
        self.push(
            pid,
            comm,
            EventKind::TaskExit {
                exit_code: code << 8,
                group_dead: true,
            },
        );
    }
}

/// The events of the scene described at the top of this file.
fn scene() -> Vec<Event> {
    let mut s = Script { events: Vec::new() };
    s.fork((100, "sh"), 200, 100, 0);
    s.exec(200, "sh", "/usr/bin/supervisor", &["supervisor"]);
    s.push(
        200,
        "supervisor",
        EventKind::PrctlEnter {
            option: prctl_opt::PR_SET_CHILD_SUBREAPER,
            arg2: 1,
            name: None,
            shown: None,
        },
    );
    s.push(
        200,
        "supervisor",
        EventKind::SyscallExit {
            syscall: Syscall::Prctl,
            ret: 0,
        },
    );
    s.fork((200, "supervisor"), 300, 200, 0);
    s.exec(300, "supervisor", "/usr/bin/worker", &["worker", "--once"]);
    s.fork((300, "worker"), 400, 200, clone_flags::CLONE_PARENT);
    s.fork((300, "worker"), 500, 300, 0);
    s.exec(500, "worker", "/bin/sleep", &["sleep", "60"]);
    s.exit(300, "worker", 0);
    s.events
}

/// Feeds the scene to an engine and writes what it learned to `out`.
pub fn run(out: &mut impl Write) -> std::io::Result<()> {
    let mut engine = Engine::new();
    // The shell existed before the events start (as a capture would read it from /proc);
    // its parent is left unknown (0).
    engine.seed_snapshot(&[SnapshotProcess {
        pid: 100,
        ppid: 0,
        comm: "sh".into(),
        exe: Some("/bin/sh".into()),
        argv: vec!["sh".into()],
        ..SnapshotProcess::default()
    }]);
    for ev in scene() {
        engine.apply(&ev);
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
