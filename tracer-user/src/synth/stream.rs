//! [`Stream`]: a numbered event stream written a step at a time, each step as the kernel
//! reports it (the engine's tests tell their stories with it).

use crate::event::{
    clone_flags as cf, prctl_opt, CapturedStr, CloneFlags, Event, EventKind, ExitStatus, OomInfo,
    PidNs, SignalInfo, SignalResult, Syscall,
};

/// The flags glibc's `pthread_create` passes to clone (a thread, not a process).
pub const THREAD_FLAGS: u64 = cf::CLONE_VM
    | cf::CLONE_FS
    | cf::CLONE_FILES
    | cf::CLONE_SIGHAND
    | cf::CLONE_THREAD
    | cf::CLONE_SYSVSEM;

/// Events written concisely: event `n` has seq `n` and `ts_ns` `n × 1000`; every method returns
/// the seq of the (last) event it added. A test may edit [`Stream::events`] afterwards (a
/// lost event, a seq out of order).
#[derive(Debug, Default)]
pub struct Stream {
    /// The events, seqs 1.. in order.
    pub events: Vec<Event>,
}

impl Stream {
    /// Any event, by task `tgid`/`tid` named `comm`.
    pub fn push(&mut self, tgid: u32, tid: u32, comm: &str, kind: EventKind) -> u64 {
        let seq = self.events.len() as u64 + 1;
        self.events
            .push(Event::bare(seq, seq * 1000, tgid, tid, comm, kind));
        seq
    }

    /// A birth as `sched_process_fork` reports it, every field given.
    #[allow(clippy::too_many_arguments)] // mirrors the Fork event's fields
    pub fn fork_full(
        &mut self,
        caller: u32,
        caller_tid: u32,
        child: u32,
        child_tgid: u32,
        child_ppid: u32,
        syscall: Option<Syscall>,
        flags: Option<u64>,
    ) -> u64 {
        self.push(
            caller,
            caller_tid,
            "",
            EventKind::Fork {
                child_tid: child,
                child_tgid,
                child_ppid,
                syscall,
                flags: flags.map(CloneFlags),
                child_ns: None,
            },
        )
    }

    /// `caller` forks process `child` (fork(2); the kernel's parent unknown).
    pub fn fork(&mut self, caller: u32, child: u32) -> u64 {
        let fork = Some(Syscall::Fork);
        self.fork_full(caller, caller, child, child, 0, fork, Some(0))
    }

    /// `caller` clones process `child` with `flags`.
    pub fn clone(&mut self, caller: u32, child: u32, flags: u64) -> u64 {
        let clone = Some(Syscall::Clone);
        self.fork_full(caller, caller, child, child, 0, clone, Some(flags))
    }

    /// Thread `caller_tid` of process `pid` creates thread `tid` ([`THREAD_FLAGS`]).
    pub fn thread(&mut self, pid: u32, caller_tid: u32, tid: u32) -> u64 {
        let (clone, flags) = (Some(Syscall::Clone), Some(THREAD_FLAGS));
        self.fork_full(pid, caller_tid, tid, pid, 0, clone, flags)
    }

    /// A birth the kernel reported in full: real parent, flags and the child's namespace.
    pub fn born(
        &mut self,
        caller: u32,
        child: u32,
        parent: u32,
        flags: u64,
        ns: Option<PidNs>,
    ) -> u64 {
        let clone = Some(Syscall::Clone);
        let seq = self.fork_full(caller, caller, child, child, parent, clone, Some(flags));
        if let Some(Event {
            kind: EventKind::Fork { child_ns, .. },
            ..
        }) = self.events.last_mut()
        {
            *child_ns = ns;
        }
        seq
    }

    /// The kernel's word on `pid`'s parent, as every probe event carries it.
    pub fn alive(&mut self, pid: u32, ppid: u32) -> u64 {
        let kind = EventKind::CloneEnter {
            syscall: Syscall::Clone,
            flags: CloneFlags(0),
            exit_signal: 17,
        };
        let seq = self.push(pid, pid, "", kind);
        self.events.last_mut().expect("just pushed").ppid = ppid;
        seq
    }

    /// Thread `tid` of `pid` enters execve(`filename`, `argv`).
    pub fn exec_enter(&mut self, pid: u32, tid: u32, filename: &str, argv: &[&str]) -> u64 {
        let kind = EventKind::ExecEnter {
            syscall: Syscall::Execve,
            dirfd: -100,
            at_flags: 0,
            filename: CapturedStr::new(filename),
            argv: argv.iter().map(|s| s.to_string()).collect(),
            argv_truncated: false,
        };
        self.push(pid, tid, "", kind)
    }

    /// Exec enter + success, the exec'd comm given by the kernel (`""` = unknown).
    pub fn exec_comm(
        &mut self,
        pid: u32,
        tid: u32,
        filename: &str,
        argv: &[&str],
        comm: &str,
    ) -> u64 {
        self.exec_enter(pid, tid, filename, argv);
        let kind = EventKind::Exec {
            cred: None,
            old_tid: tid,
            filename: CapturedStr::new(filename),
        };
        self.push(pid, pid, comm, kind)
    }

    /// Exec enter + success by the leader, the comm unknown.
    pub fn exec(&mut self, pid: u32, filename: &str, argv: &[&str]) -> u64 {
        self.exec_comm(pid, pid, filename, argv, "")
    }

    /// `runc init`'s stages once its first process `parent` is forked: it execs `runc init`
    /// and names itself `runc:[0:PARENT]`, clones `child` (`runc:[1:CHILD]`) with
    /// CLONE_PARENT, which clones `init` (`runc:[2:INIT]`) with CLONE_PARENT; then CHILD and
    /// PARENT exit (runc's libcontainer/nsenter/nsexec.c).
    pub fn runc_init_stages(&mut self, parent: u32, child: u32, init: u32) {
        self.exec_comm(parent, parent, "/proc/self/exe", &["runc", "init"], "exe");
        self.rename(parent, parent, "runc:[0:PARENT]");
        self.clone(parent, child, cf::CLONE_PARENT);
        self.rename(child, child, "runc:[1:CHILD]");
        self.clone(child, init, cf::CLONE_PARENT);
        self.rename(init, init, "runc:[2:INIT]");
        self.exit(child, 0);
        self.exit(parent, 0);
    }

    /// Thread `tid` of `pid` calls prctl(PR_SET_NAME, `name`).
    pub fn rename(&mut self, pid: u32, tid: u32, name: &str) -> u64 {
        let kind = EventKind::PrctlEnter {
            option: prctl_opt::PR_SET_NAME,
            arg2: 0,
            name: Some(CapturedStr::new(name)),
            shown: None,
        };
        self.push(pid, tid, "", kind)
    }

    /// Thread `tid` of `pid` calls prctl(PR_SET_CHILD_SUBREAPER, `on`).
    pub fn subreaper(&mut self, pid: u32, tid: u32, on: bool) -> u64 {
        let kind = EventKind::PrctlEnter {
            option: prctl_opt::PR_SET_CHILD_SUBREAPER,
            arg2: on as u64,
            name: None,
            shown: None,
        };
        self.push(pid, tid, "", kind)
    }

    /// Thread `tid` of `pid` ends, exiting with `code`; `group_dead` when it was the last.
    pub fn task_exit(&mut self, pid: u32, tid: u32, code: i32, group_dead: bool) -> u64 {
        let exit_code = ExitStatus::Exited { code }.to_wait_status();
        let kind = EventKind::TaskExit {
            exit_code,
            group_dead,
        };
        self.push(pid, tid, "", kind)
    }

    /// `pid` calls exit_group(`code`) and ends.
    pub fn exit(&mut self, pid: u32, code: i32) -> u64 {
        let kind = EventKind::ExitEnter {
            syscall: Syscall::ExitGroup,
            code,
        };
        self.push(pid, pid, "", kind);
        self.task_exit(pid, pid, code, true)
    }

    /// The last thread of `pid` ends, killed by `sig`.
    pub fn killed(&mut self, pid: u32, sig: i32) -> u64 {
        let exit_code = ExitStatus::Killed {
            signal: sig,
            core_dumped: false,
        }
        .to_wait_status();
        let kind = EventKind::TaskExit {
            exit_code,
            group_dead: true,
        };
        self.push(pid, pid, "", kind)
    }

    /// `mover` moves `pid` into cgroup `path`.
    pub fn cgroup_move(&mut self, mover: u32, pid: u32, path: &str) -> u64 {
        let kind = EventKind::CgroupAttach {
            pid,
            hierarchy: 8,
            cgroup_id: 7,
            path: CapturedStr::new(path),
        };
        self.push(mover, mover, "", kind)
    }

    /// A signal generated by `sender` (the event's task, as the probe sees it) for `target`.
    pub fn signal(&mut self, sender: u32, comm: &str, sig: i32, code: i32, target: u32) -> u64 {
        let info = super::kill_info(sender, target, sig, code, SignalResult::Delivered);
        self.push(sender, sender, comm, EventKind::Signal(info))
    }

    /// A SIGCHLD as an strace log shows it: the receiver's event, the child in si_pid, no
    /// sender thread.
    pub fn logged_sigchld(&mut self, child: u32, receiver: u32) -> u64 {
        let info = SignalInfo {
            signal: 17,
            code: crate::names::si_code::CLD_EXITED,
            sender: child,
            sender_tid: 0,
            target: receiver,
            target_tid: receiver,
            group: true,
            result: SignalResult::Delivered,
            inferred: false,
        };
        self.push(receiver, receiver, "", EventKind::Signal(info))
    }

    /// The OOM killer picks `victim` (in memory cgroup `cgroup`) while `allocator` allocates.
    pub fn oom(&mut self, allocator: u32, victim: u32, cgroup: Option<&str>) -> u64 {
        let info = OomInfo {
            tid: victim,
            total_vm_kb: 100_000,
            anon_rss_kb: 65_000,
            file_rss_kb: 0,
            shmem_rss_kb: 0,
            oom_score_adj: 0,
            cgroup: cgroup.map(str::to_string),
            limit: Some(64 << 20),
        };
        self.push(allocator, allocator, "", EventKind::OomVictim(info))
    }
}
