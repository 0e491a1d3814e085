//! Follows a process (and everything it creates) live, printing each lineage change as it
//! happens: births (with how: fork, clone, `CLONE_PARENT`...), adoptions (with why) and
//! exits. Ends when everything followed has exited, or on Ctrl-C.
//!
//! Needs the `capture` feature and root:
//!
//! ```text
//! sudo cargo run -p tracer-user --example follow_lineage -- --pid 1234
//! sudo cargo run -p tracer-user --example follow_lineage -- sh -c 'sleep 1 & wait'
//! ```

use std::collections::HashMap;
use std::future::Future;
use std::io::Write;

use futures_util::StreamExt;
use tracer::event::EventKind;
use tracer::lineage::{ProcId, SnapshotProcess};
use tracer::{CaptureBuilder, CaptureItem, Engine, Process, Target};

/// Prints the lineage entries of processes the engine has not reported yet.
struct Printer {
    /// Lineage entries already printed, per process record.
    printed: HashMap<ProcId, usize>,
}

impl Printer {
    fn report(&mut self, p: &Process, out: &mut impl Write) -> std::io::Result<()> {
        let done = self.printed.entry(p.id).or_insert(0);
        for (i, entry) in p.lineage.iter().enumerate().skip(*done) {
            if i == 0 {
                write!(
                    out,
                    "birth    {} {}: parent {}, {}",
                    p.pid,
                    p.name(),
                    entry.parent,
                    entry.how
                )?;
                if let Some(caller) = entry.caller.filter(|&c| c != entry.parent) {
                    write!(out, " by {caller}")?;
                }
                if let Some(flags) = entry.flags_text().filter(|f| !f.is_empty()) {
                    write!(out, " ({flags})")?;
                }
            } else {
                write!(
                    out,
                    "adoption {} {}: parent {}",
                    p.pid,
                    p.name(),
                    entry.parent
                )?;
                if let Some(reason) = entry.reason_text() {
                    write!(out, " ({reason})")?;
                }
            }
            writeln!(out)?;
        }
        *done = p.lineage.len();
        Ok(())
    }
}

/// What was before the capture: for a pid, its ancestors and descendants from /proc; for a
/// command, its ancestors from /proc and the command itself, as it is about to exec.
fn seed(target: &Target, child_pid: Option<u32>) -> Vec<SnapshotProcess> {
    let snap = tracer::capture::procfs::snapshot();
    let parents: HashMap<u32, u32> = snap.iter().map(|p| (p.pid, p.ppid)).collect();
    let descends = |mut pid: u32, from: u32| {
        for _ in 0..4096 {
            if pid == from {
                return true;
            }
            match parents.get(&pid) {
                Some(&ppid) if ppid != 0 => pid = ppid,
                _ => return false,
            }
        }
        false
    };
    match (target, child_pid) {
        (Target::Pid(pid), _) => snap
            .iter()
            .filter(|p| descends(p.pid, *pid) || descends(*pid, p.pid))
            .cloned()
            .collect(),
        (Target::Command(argv), Some(child)) => {
            let me = std::process::id();
            let mut seed: Vec<SnapshotProcess> = snap
                .iter()
                .filter(|p| descends(me, p.pid))
                .cloned()
                .collect();
            seed.push(SnapshotProcess {
                pid: child,
                ppid: me,
                comm: tracer::lineage::basename(&argv[0]).to_string(),
                exe: None,
                argv: argv.clone(),
                threads: vec![child],
                subreaper: false,
                ns: None,
                launched: true,
                cgroup: None,
                ..Default::default()
            });
            seed
        }
        _ => snap,
    }
}

/// Captures `target` and writes lineage changes to `out` until everything followed has
/// exited or `stop` completes. Needs a tokio runtime and root.
pub async fn run(
    target: Target,
    out: &mut impl Write,
    stop: impl Future<Output = ()>,
) -> Result<(), Box<dyn std::error::Error>> {
    let capture = CaptureBuilder::new(target.clone()).start()?;
    for note in capture.notes() {
        eprintln!("note: {note}");
    }
    let mut engine = Engine::new();
    let mut printer = Printer {
        printed: HashMap::new(),
    };
    let seed = seed(&target, capture.child_pid());
    engine.seed_snapshot(&seed);
    // Report the followed roots; everything else seeded is old news.
    for p in engine.processes() {
        let root = match &target {
            Target::Pid(pid) => p.pid == *pid,
            Target::Command(_) => Some(p.pid) == capture.child_pid(),
            Target::All => false,
        };
        if root {
            printer.report(p, out)?;
        } else {
            printer.printed.insert(p.id, p.lineage.len());
        }
    }
    out.flush()?;

    let mut items = std::pin::pin!(capture.into_stream());
    let mut stop = std::pin::pin!(stop);
    loop {
        let item = tokio::select! {
            item = items.next() => item,
            () = &mut stop => None,
        };
        let Some(item) = item else { break };
        let ev = match item? {
            CaptureItem::Event(ev) => ev,
            CaptureItem::Notice(notice) => {
                writeln!(out, "notice   {notice}")?;
                continue;
            }
        };
        // Who this event can change: the task itself, a new child, and the children of a
        // process that exits (they get adopted).
        let mut touched = vec![ev.tgid];
        if let Some((_, child_tgid)) = ev.kind.new_task() {
            touched.push(child_tgid);
        }
        if ev.kind.task_end() == Some(true) {
            touched.extend(engine.children(ev.tgid).iter().map(|c| c.pid));
        }
        engine.apply(&ev);
        for pid in touched {
            if let Some(p) = engine.process(pid) {
                printer.report(p, out)?;
            }
        }
        if let EventKind::TaskExit {
            group_dead: true, ..
        } = ev.kind
        {
            if let Some(status) = engine.process(ev.tgid).and_then(|p| p.exit_status) {
                writeln!(out, "exit     {} {}: {status}", ev.tgid, ev.comm)?;
            }
        }
        out.flush()?;
    }
    Ok(())
}

#[allow(dead_code)] // Also compiled into tests/examples.rs, which calls `run` only.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let target = match args.as_slice() {
        [flag, pid] if flag == "--pid" => Target::Pid(pid.parse()?),
        [flag] if flag == "--all" => Target::All,
        [dashes, cmd @ ..] if dashes == "--" && !cmd.is_empty() => Target::Command(cmd.to_vec()),
        cmd if !cmd.is_empty() && !cmd[0].starts_with('-') => Target::Command(cmd.to_vec()),
        _ => {
            eprintln!("usage: follow_lineage --pid PID | --all | [--] COMMAND [ARGS...]");
            std::process::exit(2);
        }
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    rt.block_on(async {
        let ctrl_c = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        run(target, &mut std::io::stdout().lock(), ctrl_c).await
    })
}
