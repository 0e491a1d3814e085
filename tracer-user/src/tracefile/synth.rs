//! A synthetic, realistic event stream (a shell running a fork/exec storm, with a container
//! start now and then) for benchmarks, property tests and fuzz seeds. Generated lazily.

use crate::event::{clone_flags as cf, CapturedStr, CloneFlags, Comm, Event, EventKind, Syscall};

/// Events of a storm: a shell (pid 1000) runs `/bin/true` again and again; every 16th round a
/// shim-like process (pid 900, a subreaper) starts `runc`, which clones `runc init` with
/// CLONE_PARENT and exits, so init is adopted.
pub struct Storm {
    seq: u64,
    ts: u64,
    round: u64,
    queue: std::collections::VecDeque<Event>,
    remaining: u64,
}

impl Storm {
    /// At most `n` events.
    pub fn new(n: u64) -> Storm {
        Storm {
            seq: 0,
            ts: 5_000_000_000,
            round: 0,
            queue: Default::default(),
            remaining: n,
        }
    }

    fn push(&mut self, tgid: u32, tid: u32, ppid: u32, comm: &str, kind: EventKind) {
        self.seq += 1;
        self.ts += 1_000 + (self.seq * 7919) % 20_000;
        self.queue.push_back(Event {
            seq: self.seq,
            ts_ns: self.ts,
            tgid,
            tid,
            ppid,
            uid: 0,
            cgroup_id: 4242,
            comm: Comm::new(comm),
            kind,
        });
    }

    fn round(&mut self) {
        let r = self.round;
        self.round += 1;
        let child = 2000 + (r % 60_000) as u32 * 2;
        if r % 16 == 15 {
            self.container(child);
            return;
        }
        let vf = CloneFlags(cf::CLONE_VM | cf::CLONE_VFORK);
        self.push(
            1000,
            1000,
            1,
            "sh",
            EventKind::CloneEnter {
                syscall: Syscall::Clone,
                flags: vf,
                exit_signal: 17,
            },
        );
        self.push(
            1000,
            1000,
            1,
            "sh",
            EventKind::Fork {
                child_tid: child,
                child_tgid: child,
                child_ppid: 1000,
                syscall: Some(Syscall::Clone),
                flags: Some(vf),
                child_ns: None,
            },
        );
        self.push(
            child,
            child,
            1000,
            "sh",
            EventKind::SyscallExit {
                syscall: Syscall::Clone,
                ret: 0,
            },
        );
        self.push(
            child,
            child,
            1000,
            "sh",
            EventKind::ExecEnter {
                syscall: Syscall::Execve,
                dirfd: -100,
                at_flags: 0,
                filename: CapturedStr::new("/bin/true"),
                argv: vec!["/bin/true".into(), format!("--round={r}")],
                argv_truncated: false,
            },
        );
        self.push(
            child,
            child,
            1000,
            "true",
            EventKind::Exec {
                cred: None,
                old_tid: child,
                filename: CapturedStr::new("/bin/true"),
            },
        );
        self.push(
            child,
            child,
            1000,
            "true",
            EventKind::SyscallExit {
                syscall: Syscall::Execve,
                ret: 0,
            },
        );
        self.push(
            1000,
            1000,
            1,
            "sh",
            EventKind::SyscallExit {
                syscall: Syscall::Clone,
                ret: i64::from(child),
            },
        );
        self.push(
            child,
            child,
            1000,
            "true",
            EventKind::ExitEnter {
                syscall: Syscall::ExitGroup,
                code: 0,
            },
        );
        self.push(
            child,
            child,
            1000,
            "true",
            EventKind::TaskExit {
                exit_code: 0,
                group_dead: true,
            },
        );
    }

    /// shim 900 → runc (child) → CLONE_PARENT runc init (child+1), runc exits, init is
    /// adopted by the shim, renames itself, execs the workload, exits.
    fn container(&mut self, runc: u32) {
        let init = runc + 1;
        let h = u64::from(runc).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let cid = format!("{h:016x}{:016x}{h:016x}{:016x}", !h, h.rotate_left(17));
        self.push(
            900,
            900,
            1,
            "containerd-shim",
            EventKind::Fork {
                child_tid: runc,
                child_tgid: runc,
                child_ppid: 900,
                syscall: Some(Syscall::Clone),
                flags: Some(CloneFlags(0)),
                child_ns: None,
            },
        );
        self.push(
            runc,
            runc,
            900,
            "containerd-shim",
            EventKind::ExecEnter {
                syscall: Syscall::Execve,
                dirfd: -100,
                at_flags: 0,
                filename: CapturedStr::new("/usr/bin/runc"),
                argv: vec![
                    "runc".into(),
                    "--root".into(),
                    "/run/containerd/runc/k8s.io".into(),
                    "create".into(),
                    "--bundle".into(),
                    format!("/run/containerd/io.containerd.runtime.v2.task/k8s.io/{cid}"),
                    cid.clone(),
                ],
                argv_truncated: false,
            },
        );
        self.push(
            runc,
            runc,
            900,
            "runc",
            EventKind::Exec {
                cred: None,
                old_tid: runc,
                filename: CapturedStr::new("/usr/bin/runc"),
            },
        );
        self.push(
            runc,
            runc,
            900,
            "runc",
            EventKind::Fork {
                child_tid: init,
                child_tgid: init,
                child_ppid: 900,
                syscall: Some(Syscall::Clone),
                flags: Some(CloneFlags(cf::CLONE_PARENT)),
                child_ns: None,
            },
        );
        self.push(
            init,
            init,
            900,
            "runc",
            EventKind::PrctlEnter {
                option: 15,
                arg2: 0,
                name: Some(CapturedStr::new("runc:[2:INIT]")),
                shown: None,
            },
        );
        self.push(
            runc,
            runc,
            900,
            "runc",
            EventKind::TaskExit {
                exit_code: 0,
                group_dead: true,
            },
        );
        self.push(
            init,
            init,
            900,
            "runc:[2:INIT]",
            EventKind::Exec {
                cred: None,
                old_tid: init,
                filename: CapturedStr::new("/pause"),
            },
        );
        self.push(
            init,
            init,
            900,
            "pause",
            EventKind::TaskExit {
                exit_code: 9,
                group_dead: true,
            },
        );
    }
}

impl Iterator for Storm {
    type Item = Event;

    fn next(&mut self) -> Option<Event> {
        if self.remaining == 0 {
            return None;
        }
        if self.queue.is_empty() {
            self.round();
        }
        self.remaining -= 1;
        self.queue.pop_front()
    }
}

/// The processes that exist when the storm starts.
pub fn storm_snapshot() -> Vec<super::SnapshotEntry> {
    vec![
        super::SnapshotEntry {
            pid: 1,
            ppid: 0,
            comm: "systemd".into(),
            exe: "/usr/lib/systemd/systemd".into(),
            argv: vec!["/sbin/init".into()],
            threads: vec![1],
            ..Default::default()
        },
        super::SnapshotEntry {
            pid: 900,
            ppid: 1,
            comm: "containerd-shim".into(),
            exe: "/usr/bin/containerd-shim-runc-v2".into(),
            argv: vec![
                "containerd-shim-runc-v2".into(),
                "-namespace".into(),
                "k8s.io".into(),
            ],
            threads: vec![900, 901, 902],
            ..Default::default()
        },
        super::SnapshotEntry {
            pid: 1000,
            ppid: 1,
            comm: "sh".into(),
            exe: "/usr/bin/sh".into(),
            argv: vec![
                "sh".into(),
                "-c".into(),
                "while :; do /bin/true; done".into(),
            ],
            threads: vec![1000],
            ..Default::default()
        },
    ]
}
