//! [`Storm`]: a synthetic, realistic event stream (a shell running a fork/exec storm, with a
//! container start now and then) for benchmarks, property tests and fuzz seeds. Generated
//! lazily.

use crate::event::{
    clone_flags as cf, CapturedStr, CloneFlags, Comm, Event, EventKind, SnapshotProcess, Syscall,
};

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

    /// An event of process `pid` (its only thread), child of `ppid`.
    fn push(&mut self, pid: u32, ppid: u32, comm: &str, kind: EventKind) {
        self.seq += 1;
        self.ts += 1_000 + (self.seq * 7919) % 20_000;
        self.queue.push_back(Event {
            seq: self.seq,
            ts_ns: self.ts,
            tgid: pid,
            tid: pid,
            ppid,
            uid: 0,
            cgroup_id: 4242,
            comm: Comm::new(comm),
            kind,
        });
    }

    /// The shell vforks `child`, which runs `/bin/true --round=N` and exits; every 16th
    /// round is a container start instead.
    fn round(&mut self) {
        let r = self.round;
        self.round += 1;
        let child = 2000 + (r % 60_000) as u32 * 2;
        if r % 16 == 15 {
            self.container(child);
            return;
        }
        let vf = CloneFlags(cf::CLONE_VM | cf::CLONE_VFORK);
        let enter = EventKind::CloneEnter {
            syscall: Syscall::Clone,
            flags: vf,
            exit_signal: 17,
        };
        self.push(1000, 1, "sh", enter);
        self.push(1000, 1, "sh", birth(child, 1000, vf));
        self.push(child, 1000, "sh", returned(Syscall::Clone, 0));
        let argv = vec!["/bin/true".into(), format!("--round={r}")];
        self.push(child, 1000, "sh", exec_enter("/bin/true", argv));
        self.push(child, 1000, "true", exec_done(child, "/bin/true"));
        self.push(child, 1000, "true", returned(Syscall::Execve, 0));
        let ret = i64::from(child);
        self.push(1000, 1, "sh", returned(Syscall::Clone, ret));
        let exit_group = EventKind::ExitEnter {
            syscall: Syscall::ExitGroup,
            code: 0,
        };
        self.push(child, 1000, "true", exit_group);
        self.push(child, 1000, "true", ended(0));
    }

    /// shim 900 → runc (child) → CLONE_PARENT runc init (child+1), runc exits, init is
    /// adopted by the shim, renames itself, execs the workload, exits.
    fn container(&mut self, runc: u32) {
        let init = runc + 1;
        let h = u64::from(runc).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let cid = format!("{h:016x}{:016x}{h:016x}{:016x}", !h, h.rotate_left(17));
        let shim = "containerd-shim";
        self.push(900, 1, shim, birth(runc, 900, CloneFlags(0)));
        let argv = [
            "runc",
            "--root",
            "/run/containerd/runc/k8s.io",
            "create",
            "--bundle",
        ];
        let mut argv: Vec<String> = argv.iter().map(|a| a.to_string()).collect();
        argv.push(format!(
            "/run/containerd/io.containerd.runtime.v2.task/k8s.io/{cid}"
        ));
        argv.push(cid);
        self.push(runc, 900, shim, exec_enter("/usr/bin/runc", argv));
        self.push(runc, 900, "runc", exec_done(runc, "/usr/bin/runc"));
        let parent = CloneFlags(cf::CLONE_PARENT);
        self.push(runc, 900, "runc", birth(init, 900, parent));
        let rename = EventKind::PrctlEnter {
            option: 15,
            arg2: 0,
            name: Some(CapturedStr::new("runc:[2:INIT]")),
            shown: None,
        };
        self.push(init, 900, "runc", rename);
        self.push(runc, 900, "runc", ended(0));
        self.push(init, 900, "runc:[2:INIT]", exec_done(init, "/pause"));
        self.push(init, 900, "pause", ended(9));
    }
}

/// Process `child` born by clone with `flags`, its parent `ppid`.
fn birth(child: u32, ppid: u32, flags: CloneFlags) -> EventKind {
    EventKind::Fork {
        child_tid: child,
        child_tgid: child,
        child_ppid: ppid,
        syscall: Some(Syscall::Clone),
        flags: Some(flags),
        child_ns: None,
    }
}

fn returned(syscall: Syscall, ret: i64) -> EventKind {
    EventKind::SyscallExit { syscall, ret }
}

fn exec_enter(path: &str, argv: Vec<String>) -> EventKind {
    EventKind::ExecEnter {
        syscall: Syscall::Execve,
        dirfd: -100,
        at_flags: 0,
        filename: CapturedStr::new(path),
        argv,
        argv_truncated: false,
    }
}

fn exec_done(pid: u32, path: &str) -> EventKind {
    EventKind::Exec {
        cred: None,
        old_tid: pid,
        filename: CapturedStr::new(path),
    }
}

/// The process ends with raw wait status `exit_code`.
fn ended(exit_code: u32) -> EventKind {
    EventKind::TaskExit {
        exit_code,
        group_dead: true,
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

/// The processes that exist when the storm starts (a trace file's header holds them as
/// `SnapshotEntry::from`).
pub fn storm_snapshot() -> Vec<SnapshotProcess> {
    let process =
        |pid, ppid, comm: &str, exe: &str, argv: &[&str], threads: &[u32]| SnapshotProcess {
            pid,
            ppid,
            comm: comm.into(),
            exe: Some(exe.into()),
            argv: argv.iter().map(|a| a.to_string()).collect(),
            threads: threads.to_vec(),
            ..Default::default()
        };
    vec![
        process(
            1,
            0,
            "systemd",
            "/usr/lib/systemd/systemd",
            &["/sbin/init"],
            &[1],
        ),
        process(
            900,
            1,
            "containerd-shim",
            "/usr/bin/containerd-shim-runc-v2",
            &["containerd-shim-runc-v2", "-namespace", "k8s.io"],
            &[900, 901, 902],
        ),
        process(
            1000,
            1,
            "sh",
            "/usr/bin/sh",
            &["sh", "-c", "while :; do /bin/true; done"],
            &[1000],
        ),
    ]
}
