//! Big synthetic recordings for the scale benchmarks (`cargo xtask bench --only scale`):
//! the shapes `tracer tree`, the pictures and the viewer are measured on.

use anyhow::{Context, Result};
use std::path::Path;
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

/// Daemons (pids 100..164, in the header's snapshot) that spawn the short-lived children of
/// a busy node.
const BUSY_DAEMONS: u32 = 64;

/// Writes an hour of a busy node to `path`, streaming: daemons each forking short-lived
/// children (health probes, CNI, cron) that exec and exit, with the syscall probes' events
/// (clone, exec and exit entries, clone and exec returns): 8 events a process, pids wrapping
/// below 4,000,000 as the kernel's do. Stops at `events` events (rounded up to a whole
/// process); returns how many were written. The seek benchmark's recording.
pub fn write_busy_node(path: &Path, events: u64) -> Result<u64> {
    use tracer::event::{CapturedStr, CloneFlags, Event, EventKind, Syscall};
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
    let seq = std::cell::Cell::new(0u64);
    let mut child = 1000u32;
    let put = |w: &mut TraceWriter<_>, tgid: u32, comm: &str, kind: EventKind| {
        let n = seq.get() + 1;
        seq.set(n);
        w.write_event(&Event::bare(n, n * 100_000, tgid, tgid, comm, kind))
    };
    while seq.get() < events {
        let daemon = 100 + child % BUSY_DAEMONS;
        let pid = child;
        child = if child >= 3_999_999 { 1000 } else { child + 1 };
        let dname = format!("daemon-{}", daemon - 100);
        let probe = format!("probe-{}", pid % 97);
        let path = format!("/usr/bin/{probe}");
        let (clone, exec) = (Syscall::Clone, Syscall::Execve);
        let flags = CloneFlags(0);
        put(
            &mut w,
            daemon,
            &dname,
            EventKind::CloneEnter {
                syscall: clone,
                flags,
                exit_signal: 17,
            },
        )?;
        let fork = EventKind::Fork {
            child_tid: pid,
            child_tgid: pid,
            child_ppid: daemon,
            syscall: Some(clone),
            flags: Some(flags),
            child_ns: None,
        };
        put(&mut w, daemon, &dname, fork)?;
        put(
            &mut w,
            daemon,
            &dname,
            EventKind::SyscallExit {
                syscall: clone,
                ret: i64::from(pid),
            },
        )?;
        let enter = EventKind::ExecEnter {
            syscall: exec,
            dirfd: -100,
            at_flags: 0,
            filename: CapturedStr::new(path.clone()),
            argv: vec![probe.clone(), "--check".into()],
            argv_truncated: false,
        };
        put(&mut w, pid, &dname, enter)?;
        put(
            &mut w,
            pid,
            &probe,
            EventKind::Exec {
                old_tid: pid,
                filename: CapturedStr::new(path),
                cred: None,
            },
        )?;
        put(
            &mut w,
            pid,
            &probe,
            EventKind::SyscallExit {
                syscall: exec,
                ret: 0,
            },
        )?;
        put(
            &mut w,
            pid,
            &probe,
            EventKind::ExitEnter {
                syscall: Syscall::ExitGroup,
                code: 0,
            },
        )?;
        put(
            &mut w,
            pid,
            &probe,
            EventKind::TaskExit {
                exit_code: 0,
                group_dead: true,
            },
        )?;
    }
    w.finish()?;
    Ok(seq.get())
}
