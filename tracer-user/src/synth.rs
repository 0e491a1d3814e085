//! Synthetic event streams for tests and benchmarks (the engine's, the viewer's, the scale
//! recordings of `tests::big`); not a stable API.

use crate::event::{CapturedStr, CloneFlags, Event, EventKind, Syscall};

fn event(seq: u64, tgid: u32, comm: &str, kind: EventKind) -> Event {
    Event::bare(seq, seq * 1_000_000, tgid, tgid, comm, kind)
}

/// `n` processes in a 4-ary tree under pid 1000: each forked by its parent then exec'd
/// (`worker-N`); every third one has exited. Seqs are 1.. without gaps.
pub fn fork_tree(n: u32) -> Vec<Event> {
    let mut evs = Vec::with_capacity(n as usize * 3);
    let mut seq = 0u64;
    let mut next = |evs: &mut Vec<Event>, tgid: u32, comm: &str, kind: EventKind| {
        seq += 1;
        evs.push(event(seq, tgid, comm, kind));
    };
    for i in 1..n {
        let pid = 1000 + i;
        let parent = 1000 + (i - 1) / 4;
        next(&mut evs, parent, "", fork_kind(pid, parent));
        let name = format!("worker-{i}");
        next(
            &mut evs,
            pid,
            &name,
            EventKind::Exec {
                cred: None,
                old_tid: pid,
                filename: CapturedStr::new(format!("/usr/bin/{name}")),
            },
        );
    }
    for i in (3..n).step_by(3) {
        next(
            &mut evs,
            1000 + i,
            "",
            EventKind::TaskExit {
                exit_code: 0,
                group_dead: true,
            },
        );
    }
    evs
}

/// `n` processes in one chain under pid 1000: each forked by the one before it, then
/// exec'd (`link-N`); all alive at the end. The deepest tree a recording can hold.
pub fn chain(n: u32) -> Vec<Event> {
    let mut evs = Vec::with_capacity(n as usize * 2);
    for i in 1..n {
        let (pid, parent) = (1000 + i, 999 + i);
        let seq = evs.len() as u64 + 1;
        evs.push(event(seq, parent, "", fork_kind(pid, parent)));
        let name = format!("link-{i}");
        let exec = EventKind::Exec {
            cred: None,
            old_tid: pid,
            filename: CapturedStr::new(format!("/usr/bin/{name}")),
        };
        evs.push(event(seq + 1, pid, &name, exec));
    }
    evs
}

/// `parent` forking `pid` (a process, not a thread).
fn fork_kind(pid: u32, parent: u32) -> EventKind {
    EventKind::Fork {
        child_tid: pid,
        child_tgid: pid,
        child_ppid: parent,
        syscall: Some(Syscall::Clone),
        flags: Some(CloneFlags(0)),
        child_ns: None,
    }
}

/// One process (pid 1000) creating `n` threads; with `short_lived` each exits before the next
/// is created (a thread pool churning), else all stay. Scale input for `tracer tree`.
pub fn many_threads(n: u32, short_lived: bool) -> Vec<Event> {
    let thread_flags = tracer_common::clone_flags::CLONE_VM
        | tracer_common::clone_flags::CLONE_THREAD
        | tracer_common::clone_flags::CLONE_SIGHAND;
    let mut evs = Vec::with_capacity(n as usize * 2 + 1);
    let mut seq = 0u64;
    let mut next = |evs: &mut Vec<Event>, tgid: u32, tid: u32, kind: EventKind| {
        seq += 1;
        let mut ev = event(seq, tgid, "pool", kind);
        ev.tid = tid;
        evs.push(ev);
    };
    let fork = |child: u32, flags: u64| EventKind::Fork {
        child_tid: child,
        child_tgid: if flags == 0 { child } else { 1000 },
        child_ppid: 1,
        syscall: Some(Syscall::Clone),
        flags: Some(CloneFlags(flags)),
        child_ns: None,
    };
    next(&mut evs, 1, 1, fork(1000, 0));
    for i in 0..n {
        // Thread ids wrap below the kernel's default pid_max, as real ones do.
        let tid = 1001 + i % 4_000_000;
        next(&mut evs, 1000, 1000, fork(tid, thread_flags));
        if short_lived {
            let exit = EventKind::TaskExit {
                exit_code: 0,
                group_dead: false,
            };
            next(&mut evs, 1000, tid, exit);
        }
    }
    evs
}

/// `parent` forking process `pid` (seq 0: a [`Script`](crate::source::Script) numbers events).
pub fn fork(parent: u32, pid: u32) -> Event {
    event(0, parent, "", fork_kind(pid, parent))
}

/// `pid` exec'ing `path` (its comm becomes the file name).
pub fn exec(pid: u32, path: &str) -> Event {
    let comm = path.rsplit('/').next().unwrap_or(path);
    let kind = EventKind::Exec {
        cred: None,
        old_tid: pid,
        filename: CapturedStr::new(path),
    };
    event(0, pid, comm, kind)
}

/// Process `pid` exiting with `code` (the raw wait status; its whole thread group).
pub fn exit(pid: u32, code: u32) -> Event {
    let kind = EventKind::TaskExit {
        exit_code: code,
        group_dead: true,
    };
    event(0, pid, "", kind)
}

/// Root of the host's namespaces running a file of root's (`/usr/bin/…`, 0755): the
/// credentials that may speak for a container.
pub fn root_cred() -> crate::event::ExecCred {
    crate::event::ExecCred {
        euid: 0,
        fsuid: 0,
        userns_level: 0,
        pidns_level: 0,
        mnt_ns: 4_026_531_841,
        host_mnt: true,
        exe: Some(crate::event::ExeFile {
            dev: 0xfe01,
            ino: 4242,
            uid: 0,
            mode: 0o100_755,
            nlink: 1,
        }),
    }
}

/// [`exec`] with the credentials the kernel reported and the real uid `uid`.
pub fn exec_as(pid: u32, path: &str, uid: u32, cred: crate::event::ExecCred) -> Event {
    let mut ev = exec(pid, path);
    ev.uid = uid;
    if let EventKind::Exec { cred: c, .. } = &mut ev.kind {
        *c = Some(cred);
    }
    ev
}

/// A host process as a /proc snapshot shows it.
pub fn process(pid: u32, ppid: u32, comm: &str) -> crate::event::SnapshotProcess {
    crate::event::SnapshotProcess {
        pid,
        ppid,
        comm: comm.into(),
        argv: vec![comm.into()],
        threads: vec![pid],
        ..Default::default()
    }
}
