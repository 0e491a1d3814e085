//! Synthetic event streams for the viewer's tests and benchmark (not a public API).

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
        next(
            &mut evs,
            parent,
            "",
            EventKind::Fork {
                child_tid: pid,
                child_tgid: pid,
                child_ppid: parent,
                syscall: Some(Syscall::Clone),
                flags: Some(CloneFlags(0)),
                child_ns: None,
            },
        );
        let name = format!("worker-{i}");
        next(
            &mut evs,
            pid,
            &name,
            EventKind::Exec {
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
