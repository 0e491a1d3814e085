//! Big synthetic recordings for the scale benchmarks (`cargo xtask bench --only scale`):
//! the shapes `tracer tree`, the pictures and the viewer are measured on.

use anyhow::{Context, Result};
use std::path::Path;
use tracer::event::{CapturedStr, CloneFlags, Event, EventKind, Syscall};
use tracer::synth;
use tracer::tracefile::{to_bytes, Header};

/// How the processes of a big recording hang together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// A 4-ary fork tree, each child exec'd, every third exited.
    Tree,
    /// One chain: each process forked by the one before (the deepest tree).
    Chain,
    /// One process's threads, all alive (`short_lived`: each exits before the next).
    Threads {
        /// Each thread exits before the next is made (a churning pool).
        short_lived: bool,
    },
    /// Pid namespaces nested `n` deep, each init's death zapping its own
    /// ([`synth::nested_namespaces`]).
    NestedNamespaces,
}

/// Writes a recording of `n` processes (or threads) of `shape` to `path`; the number of
/// events written.
pub fn write(path: &Path, shape: Shape, n: u32) -> Result<usize> {
    let evs = match shape {
        Shape::Tree => synth::fork_tree(n),
        Shape::Chain => synth::chain(n),
        Shape::Threads { short_lived } => synth::many_threads(n, short_lived),
        Shape::NestedNamespaces => synth::nested_namespaces(n),
    };
    let bytes = to_bytes(&Header::default(), &evs)?;
    std::fs::write(path, bytes).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(evs.len())
}

/// The first child's pid in [`write_strace_children`]'s log; the parent is one below.
pub const STRACE_FIRST_CHILD: u32 = 1001;

/// Writes an `strace -f` log (stderr form, `[pid N]`) of one parent (pid 1000) that forks `n`
/// children one after the other, each exiting before the next is made: per child the parent's
/// `clone(...) = N`, the child's `exit_group(0) = ?` and its `+++ exited with 0 +++` (3 lines a
/// child, no pid reused). Written as it is made, never held whole. The strace rows of the scale
/// benchmark; returns the lines written.
pub fn write_strace_children(path: &Path, n: u32) -> Result<u64> {
    use std::io::Write;
    let file =
        std::fs::File::create(path).with_context(|| format!("cannot write {}", path.display()))?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, file);
    let parent = STRACE_FIRST_CHILD - 1;
    let call = "clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD, child_tidptr=0x7f3a1c2d3a10)";
    for i in 0..n {
        let child = STRACE_FIRST_CHILD + i;
        writeln!(w, "[pid {parent}] {call} = {child}")?;
        writeln!(w, "[pid {child}] exit_group(0)                     = ?")?;
        writeln!(w, "[pid {child}] +++ exited with 0 +++")?;
    }
    w.flush()
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(u64::from(n) * 3)
}

/// Daemons (pids 100..164, in the header's snapshot) that spawn the short-lived children of
/// a busy node.
const BUSY_DAEMONS: u32 = 64;

/// Writes an hour of a busy node to `path`, streaming: daemons each forking short-lived
/// children (health probes, CNI, cron) that exec and exit, with the syscall probes' events
/// (clone, exec and exit entries, clone and exec returns): 8 events a process, pids wrapping
/// below 4,000,000 as the kernel's do. Stops at `events` events (rounded up to a whole
/// process); returns how many were written. The seek benchmark's recording.
pub fn write_busy_node(path: &Path, events: u64) -> Result<u64> {
    use tracer::tracefile::{SnapshotEntry, TraceWriter};
    let snapshot = (0..BUSY_DAEMONS)
        .map(|i| SnapshotEntry {
            pid: 100 + i,
            ppid: 1,
            comm: format!("daemon-{i}"),
            threads: vec![100 + i],
            ..Default::default()
        })
        .collect();
    let header = Header {
        snapshot,
        ..Header::default()
    };
    let mut w = TraceWriter::create(path, &header)?;
    let mut seq = 0u64;
    let mut child = 1000u32;
    while seq < events {
        let daemon = 100 + child % BUSY_DAEMONS;
        let pid = child;
        child = if child >= 3_999_999 { 1000 } else { child + 1 };
        for (tgid, comm, kind) in short_life(daemon, pid) {
            seq += 1;
            w.write_event(&Event::bare(seq, seq * 100_000, tgid, tgid, &comm, kind))?;
        }
    }
    w.finish()?;
    Ok(seq)
}

/// The 8 events of one short-lived child `pid` of `daemon`, as the syscall probes report it
/// (the acting process, its comm, the event): cloned, exec'd as a probe, exited.
fn short_life(daemon: u32, pid: u32) -> Vec<(u32, String, EventKind)> {
    let dname = format!("daemon-{}", daemon - 100);
    let mut events = cloned(daemon, pid, &dname);
    events.extend(probe_runs(pid, dname));
    events
}

/// `daemon` (named `dname`) clones `pid`: its clone's entry, the fork, the clone's return.
fn cloned(daemon: u32, pid: u32, dname: &str) -> Vec<(u32, String, EventKind)> {
    let (clone, flags) = (Syscall::Clone, CloneFlags(0));
    let dname = dname.to_string();
    vec![
        (
            daemon,
            dname.clone(),
            EventKind::CloneEnter {
                syscall: clone,
                flags,
                exit_signal: 17,
            },
        ),
        (
            daemon,
            dname.clone(),
            EventKind::Fork {
                child_tid: pid,
                child_tgid: pid,
                child_ppid: daemon,
                syscall: Some(clone),
                flags: Some(flags),
                child_ns: None,
            },
        ),
        (
            daemon,
            dname.clone(),
            EventKind::SyscallExit {
                syscall: clone,
                ret: i64::from(pid),
            },
        ),
    ]
}

/// `pid` (still named `dname`, its parent's name) execs a probe that exits at once.
fn probe_runs(pid: u32, dname: String) -> Vec<(u32, String, EventKind)> {
    let probe = format!("probe-{}", pid % 97);
    let path = format!("/usr/bin/{probe}");
    let exec = Syscall::Execve;
    vec![
        (
            pid,
            dname,
            EventKind::ExecEnter {
                syscall: exec,
                dirfd: -100,
                at_flags: 0,
                filename: CapturedStr::new(path.clone()),
                argv: vec![probe.clone(), "--check".into()],
                argv_truncated: false,
            },
        ),
        (
            pid,
            probe.clone(),
            EventKind::Exec {
                old_tid: pid,
                filename: CapturedStr::new(path),
                cred: None,
            },
        ),
        (
            pid,
            probe.clone(),
            EventKind::SyscallExit {
                syscall: exec,
                ret: 0,
            },
        ),
        (
            pid,
            probe.clone(),
            EventKind::ExitEnter {
                syscall: Syscall::ExitGroup,
                code: 0,
            },
        ),
        (
            pid,
            probe,
            EventKind::TaskExit {
                exit_code: 0,
                group_dead: true,
            },
        ),
    ]
}
