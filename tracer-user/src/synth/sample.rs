//! [`sample_events`]: the common kinds with awkward values, what the readers' tests (trace
//! files, NATS segments, recordings opened by content) write and read back.

use crate::event::{CapturedStr, CloneFlags, Comm, Event, EventKind, Syscall};

/// An event as every one of [`sample_events`] is stamped: its time from its seq, parent 1,
/// cgroup 42, `sh`.
pub fn sample_event(seq: u64, tgid: u32, tid: u32, kind: EventKind) -> Event {
    Event {
        seq,
        ts_ns: 1_000_000 + seq * 1000,
        tgid,
        tid,
        ppid: 1,
        uid: 0,
        cgroup_id: 42,
        comm: Comm::new("sh"),
        kind,
    }
}

/// One of each common kind, with awkward values: fields changing between events, time going
/// backwards, a 16-byte comm, max values, a seq going backwards.
pub fn sample_events() -> Vec<Event> {
    let mut v = sample_births();
    v.extend(sample_ends());
    v[3].ts_ns = 5;
    v[4].uid = u32::MAX;
    v[5].comm = Comm::from_bytes(b"0123456789abcdef");
    v[6].cgroup_id = u64::MAX;
    v[7].ppid = 0;
    v[8].ts_ns = u64::MAX;
    v[9].seq = 3; // backwards
    v[10].tgid = u32::MAX;
    v[10].tid = 0;
    v
}

/// Events 1 to 5: 100 clones 101, which execs runc.
fn sample_births() -> Vec<Event> {
    vec![
        sample_event(
            1,
            100,
            100,
            EventKind::CloneEnter {
                syscall: Syscall::Clone,
                flags: CloneFlags(0x0100_0000 | 0x8000),
                exit_signal: 17,
            },
        ),
        sample_event(
            2,
            100,
            100,
            EventKind::Fork {
                child_tid: 101,
                child_tgid: 101,
                child_ppid: 100,
                syscall: Some(Syscall::Clone),
                flags: Some(CloneFlags(0x8000)),
                child_ns: None,
            },
        ),
        sample_event(
            3,
            100,
            100,
            EventKind::SyscallExit {
                syscall: Syscall::Clone,
                ret: 101,
            },
        ),
        sample_event(
            4,
            101,
            101,
            EventKind::ExecEnter {
                syscall: Syscall::Execveat,
                dirfd: -100,
                at_flags: 0x1000,
                filename: CapturedStr {
                    value: "/usr/bin/runc ünïcode \"q\"".into(),
                    truncated: true,
                },
                argv: vec!["runc".into(), "--root".into(), "".into(), "init".into()],
                argv_truncated: true,
            },
        ),
        sample_event(
            5,
            101,
            101,
            EventKind::Exec {
                cred: None,
                old_tid: 101,
                filename: CapturedStr::new("/usr/bin/runc"),
            },
        ),
    ]
}

/// Events 6 to 11: runc renames itself and exits; 100 forks again, fails a vfork.
fn sample_ends() -> Vec<Event> {
    vec![
        sample_event(
            6,
            101,
            102,
            EventKind::PrctlEnter {
                option: 15,
                arg2: u64::MAX,
                name: Some(CapturedStr::new("runc:[2:INIT]")),
                shown: None,
            },
        ),
        sample_event(
            7,
            101,
            102,
            EventKind::PrctlEnter {
                option: 36,
                arg2: 1,
                name: None,
                shown: None,
            },
        ),
        sample_event(
            8,
            101,
            101,
            EventKind::ExitEnter {
                syscall: Syscall::ExitGroup,
                code: -1,
            },
        ),
        sample_event(
            20,
            101,
            101,
            EventKind::TaskExit {
                exit_code: 0x8b,
                group_dead: true,
            },
        ),
        sample_event(
            21,
            100,
            100,
            EventKind::Fork {
                child_tid: 103,
                child_tgid: 103,
                child_ppid: 0,
                syscall: None,
                flags: None,
                child_ns: None,
            },
        ),
        sample_event(
            22,
            100,
            100,
            EventKind::SyscallExit {
                syscall: Syscall::Vfork,
                ret: -11,
            },
        ),
    ]
}
