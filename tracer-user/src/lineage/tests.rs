//! Unit tests: one per semantic rule, roles, container ids, stories and views.

use super::*;
use crate::event::{
    clone_flags as cf, prctl_opt, CapturedStr, CloneFlags, Comm, Event, EventKind, ExitStatus,
    PidNs, Syscall,
};

/// Writes events concisely; every method returns the seq of the (last) event it added.
#[derive(Default)]
struct B {
    events: Vec<Event>,
}

const THREAD_FLAGS: u64 = cf::CLONE_VM
    | cf::CLONE_FS
    | cf::CLONE_FILES
    | cf::CLONE_SIGHAND
    | cf::CLONE_THREAD
    | cf::CLONE_SYSVSEM;

impl B {
    fn push(&mut self, tgid: u32, tid: u32, comm: &str, kind: EventKind) -> u64 {
        let seq = self.events.len() as u64 + 1;
        self.events
            .push(Event::bare(seq, seq * 1000, tgid, tid, comm, kind));
        seq
    }

    #[allow(clippy::too_many_arguments)] // mirrors the Fork event's fields
    fn fork_full(
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

    fn fork(&mut self, caller: u32, child: u32) -> u64 {
        self.fork_full(
            caller,
            caller,
            child,
            child,
            0,
            Some(Syscall::Fork),
            Some(0),
        )
    }

    fn clone(&mut self, caller: u32, child: u32, flags: u64) -> u64 {
        self.fork_full(
            caller,
            caller,
            child,
            child,
            0,
            Some(Syscall::Clone),
            Some(flags),
        )
    }

    fn thread(&mut self, pid: u32, caller_tid: u32, tid: u32) -> u64 {
        self.fork_full(
            pid,
            caller_tid,
            tid,
            pid,
            0,
            Some(Syscall::Clone),
            Some(THREAD_FLAGS),
        )
    }

    fn exec_enter(&mut self, pid: u32, tid: u32, filename: &str, argv: &[&str]) -> u64 {
        self.push(
            pid,
            tid,
            "",
            EventKind::ExecEnter {
                syscall: Syscall::Execve,
                dirfd: -100,
                at_flags: 0,
                filename: CapturedStr::new(filename),
                argv: argv.iter().map(|s| s.to_string()).collect(),
                argv_truncated: false,
            },
        )
    }

    /// Exec enter + success, the exec'd comm given by the kernel (`""` = unknown).
    fn exec_comm(&mut self, pid: u32, tid: u32, filename: &str, argv: &[&str], comm: &str) -> u64 {
        self.exec_enter(pid, tid, filename, argv);
        self.push(
            pid,
            pid,
            comm,
            EventKind::Exec {
                cred: None,
                old_tid: tid,
                filename: CapturedStr::new(filename),
            },
        )
    }

    fn exec(&mut self, pid: u32, filename: &str, argv: &[&str]) -> u64 {
        self.exec_comm(pid, pid, filename, argv, "")
    }

    fn rename(&mut self, pid: u32, tid: u32, name: &str) -> u64 {
        self.push(
            pid,
            tid,
            "",
            EventKind::PrctlEnter {
                option: prctl_opt::PR_SET_NAME,
                arg2: 0,
                name: Some(CapturedStr::new(name)),
                shown: None,
            },
        )
    }

    fn subreaper(&mut self, pid: u32, tid: u32, on: bool) -> u64 {
        self.push(
            pid,
            tid,
            "",
            EventKind::PrctlEnter {
                option: prctl_opt::PR_SET_CHILD_SUBREAPER,
                arg2: on as u64,
                name: None,
                shown: None,
            },
        )
    }

    fn task_exit(&mut self, pid: u32, tid: u32, code: i32, group_dead: bool) -> u64 {
        let exit_code = ExitStatus::Exited { code }.to_wait_status();
        self.push(
            pid,
            tid,
            "",
            EventKind::TaskExit {
                exit_code,
                group_dead,
            },
        )
    }

    fn exit(&mut self, pid: u32, code: i32) -> u64 {
        self.push(
            pid,
            pid,
            "",
            EventKind::ExitEnter {
                syscall: Syscall::ExitGroup,
                code,
            },
        );
        self.task_exit(pid, pid, code, true)
    }

    fn engine(&self) -> Engine {
        let mut e = Engine::new();
        e.seed_snapshot(&[snap(1, 0, "systemd")]);
        for ev in &self.events {
            e.apply(ev);
        }
        e
    }
}

fn snap(pid: u32, ppid: u32, comm: &str) -> SnapshotProcess {
    SnapshotProcess {
        pid,
        ppid,
        comm: comm.into(),
        threads: vec![pid],
        ..Default::default()
    }
}

fn ppid(e: &Engine, pid: u32) -> u32 {
    e.process(pid).map(|p| p.ppid).unwrap_or(u32::MAX)
}

fn child_pids(e: &Engine, pid: u32) -> Vec<u32> {
    e.children(pid).iter().map(|p| p.pid).collect()
}

fn live_tids(e: &Engine, pid: u32) -> Vec<u32> {
    e.process(pid)
        .map(|p| p.live_tids().collect())
        .unwrap_or_default()
}

fn reasons(e: &Engine, pid: u32) -> Vec<String> {
    e.process(pid)
        .map(|p| p.lineage.iter().filter_map(|l| l.reason_text()).collect())
        .unwrap_or_default()
}

// ---- threads vs processes ----

#[test]
fn clone_thread_adds_a_thread_not_a_process() {
    let mut b = B::default();
    b.fork(1, 100);
    b.thread(100, 100, 101);
    let e = b.engine();
    assert!(e.process(101).is_none());
    assert_eq!(live_tids(&e, 100), vec![100, 101]);
    assert_eq!(child_pids(&e, 1), vec![100]);
    assert!(e.warnings().is_empty(), "{:?}", e.warnings());
}

#[test]
fn child_tgid_differing_from_tid_means_thread_even_without_flags() {
    let mut b = B::default();
    b.fork(1, 100);
    b.fork_full(100, 100, 101, 100, 0, None, None);
    let e = b.engine();
    assert!(e.process(101).is_none());
    assert_eq!(live_tids(&e, 100), vec![100, 101]);
}

#[test]
fn threads_subreaper_prctl_marks_the_whole_process() {
    let mut b = B::default();
    b.fork(1, 100);
    b.thread(100, 100, 101);
    let s = b.subreaper(100, 101, true);
    let e = b.engine();
    let p = e.process(100).unwrap();
    assert!(p.is_subreaper);
    assert_eq!(p.subreaper_seq(), Some(s));
}

#[test]
fn subreaper_cleared_with_zero() {
    let mut b = B::default();
    b.fork(1, 100);
    let set = b.subreaper(100, 100, true);
    let cleared = b.subreaper(100, 100, false);
    let e = b.engine();
    let p = e.process(100).unwrap();
    assert!(!p.is_subreaper);
    assert_eq!(
        (p.subreaper_seq(), p.subreaper_cleared_seq()),
        (Some(set), Some(cleared))
    );
}

#[test]
fn exit_group_ends_the_process_with_its_last_thread() {
    let mut b = B::default();
    b.fork(1, 100);
    b.fork(100, 200);
    b.thread(100, 100, 101);
    b.thread(100, 100, 102);
    b.push(
        100,
        101,
        "",
        EventKind::ExitEnter {
            syscall: Syscall::ExitGroup,
            code: 3,
        },
    );
    let first = b.task_exit(100, 100, 3, false);
    // Another thread still finishes a syscall after the leader's exit (a Go runtime does).
    b.push(
        100,
        102,
        "",
        EventKind::SyscallExit {
            syscall: Syscall::Clone,
            ret: 0,
        },
    );
    assert!(!replay_until(&b.events, first).process(100).unwrap().exited);
    b.task_exit(100, 102, 3, false);
    let last = b.task_exit(100, 101, 3, true);
    let e = b.engine();
    assert_eq!(e.processes().filter(|p| p.pid == 100).count(), 1);
    assert!(e.warnings().is_empty(), "{:?}", e.warnings());
    let p = e.process(100).unwrap();
    assert!(p.exited);
    assert_eq!(p.exit_status, Some(ExitStatus::Exited { code: 3 }));
    assert_eq!(p.exit_seq, Some(last));
    assert_eq!(p.live_thread_count(), 0);
    // Its child was orphaned once, when the process ended.
    assert_eq!(ppid(&e, 200), 1);
    assert_eq!(e.process(200).unwrap().lineage.len(), 2);
    assert!(e.warnings().is_empty(), "{:?}", e.warnings());
}

#[test]
fn group_dead_ends_the_process_even_with_unseen_thread_exits() {
    let mut b = B::default();
    b.fork(1, 100);
    b.thread(100, 100, 101);
    b.task_exit(100, 101, 0, true);
    let e = b.engine();
    assert!(e.process(100).unwrap().exited);
    assert!(live_tids(&e, 100).is_empty());
}

#[test]
fn a_threads_exit_keeps_the_process_and_its_children() {
    let mut b = B::default();
    b.fork(1, 100);
    b.thread(100, 100, 101);
    b.fork_full(100, 101, 200, 200, 0, Some(Syscall::Fork), Some(0));
    // The leader ends, another thread lives on: the process (and its children) stay.
    b.task_exit(100, 100, 0, false);
    let e = b.engine();
    assert!(!e.process(100).unwrap().exited);
    assert_eq!(live_tids(&e, 100), vec![101]);
    assert_eq!(ppid(&e, 200), 100);
    assert_eq!(e.process(200).unwrap().lineage.len(), 1);
}

#[test]
fn last_known_thread_exit_ends_the_process() {
    let mut b = B::default();
    b.fork(1, 100);
    b.task_exit(100, 100, 7, false);
    let e = b.engine();
    assert_eq!(
        e.process(100).unwrap().exit_status,
        Some(ExitStatus::Exited { code: 7 })
    );
}

#[test]
fn exit_status_keeps_signals() {
    let mut b = B::default();
    b.fork(1, 100);
    b.push(
        100,
        100,
        "",
        EventKind::TaskExit {
            exit_code: 9,
            group_dead: true,
        },
    );
    let e = b.engine();
    assert_eq!(
        e.process(100).unwrap().exit_status,
        Some(ExitStatus::Killed {
            signal: 9,
            core_dumped: false
        })
    );
}

// ---- creation ----

#[test]
fn fork_parent_is_the_caller() {
    let mut b = B::default();
    let s = b.fork(1, 100);
    let e = b.engine();
    let p = e.process(100).unwrap();
    assert_eq!(p.ppid, 1);
    assert_eq!(
        p.lineage,
        vec![LineageEntry {
            how: How::Fork,
            parent: 1,
            caller: Some(1),
            flags: Some(CloneFlags(0)),
            syscall: Some(Syscall::Fork),
            reason: None,
            seq: s,
            ts_ns: e.process(100).unwrap().birth_ts_ns,
            caller_tid: Some(1),
        }]
    );
    assert_eq!(p.start_seq, s);
    assert_eq!(p.birth_ts_ns, s * 1000);
}

#[test]
fn clone_parent_makes_the_callers_parent_the_parent() {
    let mut b = B::default();
    b.fork(1, 100);
    b.fork(100, 200);
    b.clone(200, 300, cf::CLONE_PARENT);
    let e = b.engine();
    let p = e.process(300).unwrap();
    assert_eq!(p.ppid, 100);
    assert_eq!(p.lineage[0].how, How::CloneParent);
    assert_eq!(p.lineage[0].caller, Some(200));
    assert_eq!(p.lineage[0].parent, 100);
    assert_eq!(p.lineage[0].flags_text().as_deref(), Some("CLONE_PARENT"));
    assert_eq!(child_pids(&e, 100), vec![200, 300]);
    assert!(child_pids(&e, 200).is_empty());
}

#[test]
fn the_sources_parent_wins_and_flags_unknown_stay_unknown() {
    let mut b = B::default();
    b.fork(1, 100);
    b.fork(100, 200);
    b.fork_full(200, 200, 300, 300, 100, Some(Syscall::Clone), None);
    let e = b.engine();
    assert_eq!(ppid(&e, 300), 100);
    // No guess at CLONE_PARENT: the caller and the parent say what is known.
    let birth = &e.process(300).unwrap().lineage[0];
    assert_eq!(birth.how, How::Clone);
    assert_eq!(
        (birth.caller, birth.parent, birth.flags),
        (Some(200), 100, None)
    );
}

#[test]
fn vfork_and_clone_vfork_are_vfork_clone_is_clone() {
    let mut b = B::default();
    b.fork_full(
        1,
        1,
        100,
        100,
        0,
        Some(Syscall::Vfork),
        Some(cf::CLONE_VM | cf::CLONE_VFORK),
    );
    b.clone(1, 101, cf::CLONE_VM | cf::CLONE_VFORK);
    b.fork_full(1, 1, 102, 102, 0, Some(Syscall::Clone3), Some(0));
    b.fork_full(1, 1, 103, 103, 0, None, None);
    let e = b.engine();
    let how = |pid| e.process(pid).unwrap().lineage[0].how;
    assert_eq!(how(100), How::Vfork);
    assert_eq!(how(101), How::Vfork);
    assert_eq!(how(102), How::Clone);
    assert_eq!(how(103), How::Clone);
    assert_eq!(e.process(101).unwrap().born_syscall, Some(Syscall::Clone));
}

#[test]
fn fork_copies_name_exe_argv_role_and_container_id() {
    let mut b = B::default();
    b.fork(1, 100);
    b.exec(
        100,
        "/usr/bin/runc",
        &["runc", "create", "--bundle", "/b/x", "cid1"],
    );
    b.fork(100, 101);
    let e = b.engine();
    let c = e.process(101).unwrap();
    assert_eq!(c.comm.to_string(), "runc");
    assert_eq!(c.exe.as_deref(), Some("/usr/bin/runc"));
    assert_eq!(c.argv.len(), 5);
    assert_eq!(c.container_id.as_deref(), Some("cid1"));
    assert_eq!(
        c.role,
        Some(Role::OciRuntime {
            subcommand: Some(OciCommand::Create)
        })
    );
}

// ---- exec ----

#[test]
fn exec_replaces_name_exe_and_argv() {
    let mut b = B::default();
    b.fork(1, 100);
    let s = b.exec(
        100,
        "/usr/bin/averyveryverylongname",
        &["averyveryverylongname", "-x"],
    );
    let e = b.engine();
    let p = e.process(100).unwrap();
    assert_eq!(p.comm.to_string(), "averyveryverylo");
    assert_eq!(p.exe.as_deref(), Some("/usr/bin/averyveryverylongname"));
    assert_eq!(
        &*p.argv,
        &["averyveryverylongname".to_string(), "-x".to_string()]
    );
    assert_eq!(p.execs.len(), 1);
    assert_eq!(p.execs[0].seq, s);
}

#[test]
fn exec_prefers_the_kernels_comm() {
    let mut b = B::default();
    b.fork(1, 100);
    b.exec_comm(100, 100, "/proc/self/exe", &["runc", "init"], "exe");
    let e = b.engine();
    let p = e.process(100).unwrap();
    assert_eq!(p.comm.to_string(), "exe");
    assert_eq!(p.role, Some(Role::OciInit { stage: None }));
}

#[test]
fn exec_from_a_non_leader_thread_takes_the_leaders_pid() {
    let mut b = B::default();
    b.fork(1, 100);
    b.thread(100, 100, 101);
    b.thread(100, 100, 102);
    b.exec_enter(100, 101, "/bin/true", &["true"]);
    // de_thread: the other threads (the old leader included) exit first.
    b.task_exit(100, 102, 0, false);
    b.task_exit(100, 100, 0, false);
    b.push(
        100,
        100,
        "true",
        EventKind::Exec {
            cred: None,
            old_tid: 101,
            filename: CapturedStr::new("/bin/true"),
        },
    );
    let e = b.engine();
    let p = e.process(100).unwrap();
    assert!(!p.exited);
    assert_eq!(live_tids(&e, 100), vec![100]);
    assert_eq!(p.comm.to_string(), "true");
    assert_eq!(&*p.argv, &["true".to_string()]);
    assert!(e.process(101).is_none());
}

#[test]
fn exec_kills_other_threads() {
    let mut b = B::default();
    b.fork(1, 100);
    b.thread(100, 100, 101);
    b.exec(100, "/bin/sh", &["sh"]);
    assert_eq!(live_tids(&b.engine(), 100), vec![100]);
}

#[test]
fn failed_exec_changes_nothing() {
    let mut b = B::default();
    b.fork(1, 100);
    b.exec(100, "/bin/sh", &["sh", "-c", "x"]);
    b.exec_enter(100, 100, "/nonexistent", &["nope"]);
    b.push(
        100,
        100,
        "",
        EventKind::SyscallExit {
            syscall: Syscall::Execve,
            ret: -2,
        },
    );
    let e = b.engine();
    let p = e.process(100).unwrap();
    assert_eq!(p.comm.to_string(), "sh");
    assert_eq!(p.exe.as_deref(), Some("/bin/sh"));
    assert_eq!(p.argv.len(), 3);
    assert_eq!(p.execs.len(), 1);
    // The failed enter was dropped: a later exec without an enter has no argv from it.
    let mut b2 = B {
        events: b.events.clone(),
    };
    b2.push(
        100,
        100,
        "",
        EventKind::Exec {
            cred: None,
            old_tid: 100,
            filename: CapturedStr::new("/bin/ls"),
        },
    );
    let e2 = b2.engine();
    assert!(e2.process(100).unwrap().argv.is_empty());
    assert_eq!(e2.process(100).unwrap().comm.to_string(), "ls");
}

#[test]
fn pr_set_name_renames_the_thread_and_the_leader_names_the_process() {
    let mut b = B::default();
    b.fork(1, 100);
    b.exec(100, "/usr/bin/app", &["app"]);
    b.thread(100, 100, 101);
    b.rename(100, 101, "worker");
    let e = b.engine();
    assert_eq!(e.process(100).unwrap().comm.to_string(), "app");
    assert_eq!(
        e.process(100).unwrap().threads[1].comm.to_string(),
        "worker"
    );
    b.rename(100, 100, "renamed-app");
    let e = b.engine();
    assert_eq!(e.process(100).unwrap().comm.to_string(), "renamed-app");
    assert_eq!(e.process(100).unwrap().renames().len(), 2);
}

// ---- orphans ----

/// 1 → 10 (subreaper) → 20 (subreaper) → 30 → 40
fn subreaper_chain() -> B {
    let mut b = B::default();
    b.fork(1, 10);
    b.subreaper(10, 10, true);
    b.fork(10, 20);
    b.subreaper(20, 20, true);
    b.fork(20, 30);
    b.fork(30, 40);
    b
}

#[test]
fn orphans_go_to_the_nearest_live_subreaper() {
    let mut b = subreaper_chain();
    let s = b.exit(30, 0);
    let e = b.engine();
    assert_eq!(ppid(&e, 40), 20);
    let last = e.process(40).unwrap().lineage.last().cloned().unwrap();
    assert_eq!(last.how, How::Adopted);
    assert_eq!(last.seq, s);
    assert_eq!(last.caller, None);
    assert_eq!(
        reasons(&e, 40),
        vec!["parent 30 exited; nearest subreaper 20"]
    );
    assert!(e
        .process(20)
        .unwrap()
        .child_ids()
        .contains(&e.process(40).unwrap().id));
}

#[test]
fn exited_subreapers_are_skipped() {
    let mut b = subreaper_chain();
    b.exit(20, 0);
    b.exit(30, 0);
    let e = b.engine();
    assert_eq!(ppid(&e, 30), 10);
    assert_eq!(ppid(&e, 40), 10);
    assert_eq!(
        reasons(&e, 40),
        vec!["parent 30 exited; nearest subreaper 10"],
        "{:?}",
        e.process(40).unwrap().lineage
    );
}

#[test]
fn subreaper_set_later_propagates_has_child_subreaper_to_descendants() {
    let mut b = B::default();
    b.fork(1, 10);
    b.fork(10, 20);
    b.fork(20, 30);
    b.subreaper(10, 10, true);
    b.exit(20, 0);
    let e = b.engine();
    assert!(e.process(30).unwrap().has_child_subreaper);
    assert_eq!(ppid(&e, 30), 10);
}

#[test]
fn without_has_child_subreaper_orphans_go_to_init_even_past_a_subreaper() {
    // 10 forks 20 before it becomes a subreaper, but propagation covers it; a process
    // created under a non-subreaper branch does not have it.
    let mut b = B::default();
    b.fork(1, 10);
    b.fork(1, 11);
    b.subreaper(10, 10, true);
    b.fork(11, 21);
    b.fork(21, 31);
    b.exit(21, 0);
    let e = b.engine();
    assert_eq!(ppid(&e, 31), 1);
    assert_eq!(
        reasons(&e, 31),
        vec!["parent 21 exited; no subreaper ancestor: init"]
    );
}

#[test]
fn init_is_synthesized_when_unknown() {
    let mut e = Engine::new();
    let mut b = B::default();
    b.fork(50, 60);
    b.fork(60, 70);
    b.exit(60, 0);
    for ev in &b.events {
        e.apply(ev);
    }
    let init = e.process(1).expect("synthesized init");
    assert_eq!(init.lineage[0].how, How::Unknown);
    assert_eq!(ppid(&e, 70), 1);
    assert_eq!(
        reasons(&e, 70),
        vec!["parent 60 exited; no subreaper ancestor: init"]
    );
}

#[test]
fn dying_subreaper_never_adopts_its_own_orphans() {
    let mut b = B::default();
    b.fork(1, 5);
    b.subreaper(5, 5, true);
    b.fork(5, 10);
    b.subreaper(10, 10, true);
    b.fork(10, 20);
    b.exit(10, 0);
    let e = b.engine();
    assert_eq!(ppid(&e, 20), 5);
    assert_eq!(
        reasons(&e, 20),
        vec!["parent 10 exited; nearest subreaper 5"]
    );
    // A subreaper with no subreaper ancestor hands its orphans to init.
    let mut b = B::default();
    b.fork(1, 10);
    b.subreaper(10, 10, true);
    b.fork(10, 20);
    b.exit(10, 0);
    let e = b.engine();
    assert_eq!(ppid(&e, 20), 1);
}

#[test]
fn many_orphans_are_adopted_together_in_pid_order() {
    let mut b = B::default();
    b.fork(1, 10);
    for pid in (100..400).rev() {
        b.fork(10, pid);
    }
    b.exit(150, 0);
    let s = b.exit(10, 0);
    let e = b.engine();
    let kids = child_pids(&e, 1);
    assert_eq!(kids.len(), 300);
    assert_eq!(kids.first(), Some(&10));
    assert!(!kids.contains(&150));
    assert_eq!(child_pids(&e, 10), vec![150]);
    assert!(e.process(399).unwrap().lineage[1].seq == s);
}

#[test]
fn exited_children_stay_with_their_dead_parent() {
    let mut b = B::default();
    b.fork(1, 10);
    b.fork(10, 20);
    b.exit(20, 0);
    b.exit(10, 0);
    let e = b.engine();
    assert_eq!(ppid(&e, 20), 10);
    assert_eq!(e.process(20).unwrap().lineage.len(), 1);
}

// ---- anomalies ----

#[test]
fn pid_reuse_while_alive_ends_the_old_record() {
    let mut b = B::default();
    b.fork(1, 100);
    b.fork(100, 200);
    b.fork(200, 300);
    let s = b.fork(1, 200);
    let e = b.engine();
    assert_eq!(
        e.warnings(),
        &[Warning {
            seq: s,
            kind: WarningKind::PidReuse { pid: 200 }
        }]
    );
    let new = e.process(200).unwrap();
    assert_eq!(new.start_seq, s);
    assert_eq!(new.ppid, 1);
    let old: Vec<_> = e.processes().filter(|p| p.pid == 200 && p.exited).collect();
    assert_eq!(old.len(), 1);
    assert_eq!(old[0].exit_seq, Some(s));
    // The old one's child was orphaned then.
    assert_eq!(ppid(&e, 300), 1);
}

#[test]
fn pid_reuse_after_exit_is_silent_and_keeps_the_old_record() {
    let mut b = B::default();
    b.fork(1, 100);
    b.exit(100, 0);
    b.fork(1, 100);
    let e = b.engine();
    assert!(e.warnings().is_empty());
    assert_eq!(e.processes().filter(|p| p.pid == 100).count(), 2);
    assert!(!e.process(100).unwrap().exited);
    assert_eq!(child_pids(&e, 1), vec![100, 100]);
}

#[test]
fn unknown_pids_get_placeholders_with_the_kernels_parent() {
    let mut b = B::default();
    let s = b.exec_enter(500, 500, "/bin/x", &["x"]);
    b.events[0].ppid = 7;
    b.events[0].comm = Comm::new("mystery");
    let e = b.engine();
    let p = e.process(500).unwrap();
    assert_eq!(p.lineage[0].how, How::Unknown);
    assert_eq!(p.ppid, 7);
    assert_eq!(p.comm.to_string(), "mystery");
    assert_eq!(e.process(7).unwrap().lineage[0].how, How::Unknown);
    assert_eq!(
        e.warnings(),
        &[
            Warning {
                seq: s,
                kind: WarningKind::UnknownPid { pid: 500 }
            },
            Warning {
                seq: s,
                kind: WarningKind::UnknownPid { pid: 7 }
            },
        ]
    );
}

#[test]
fn kernel_reported_parent_corrects_the_engine() {
    let mut b = B::default();
    b.fork(1, 100);
    b.fork(1, 200);
    let s = b.subreaper(200, 200, true);
    b.events[2].ppid = 100;
    let e = b.engine();
    assert_eq!(ppid(&e, 200), 100);
    assert_eq!(
        reasons(&e, 200),
        vec!["kernel reports parent 100, model had 1 (model/kernel disagreement)"]
    );
    assert_eq!(
        e.warnings(),
        &[Warning {
            seq: s,
            kind: WarningKind::Disagreement {
                pid: 200,
                model: 1,
                kernel: 100
            }
        }]
    );
    assert_eq!(child_pids(&e, 100), vec![200]);
    assert_eq!(child_pids(&e, 1), vec![100]);
}

#[test]
fn an_unknown_parent_is_filled_in_without_an_adoption() {
    let mut e = Engine::new();
    let mut b = B::default();
    b.exec_enter(500, 500, "/bin/x", &["x"]);
    b.exec_enter(500, 500, "/bin/y", &["y"]);
    b.events[1].ppid = 42;
    for ev in &b.events {
        e.apply(ev);
    }
    let p = e.process(500).unwrap();
    assert_eq!(p.ppid, 42);
    assert_eq!(p.lineage.len(), 1);
    assert_eq!(p.lineage[0].parent, 42);
    assert_eq!(
        e.warnings().iter().map(|w| w.kind).collect::<Vec<_>>(),
        vec![
            WarningKind::UnknownPid { pid: 500 },
            WarningKind::UnknownPid { pid: 42 }
        ]
    );
}

#[test]
fn seq_gaps_and_backwards_seqs_are_warned() {
    let mut b = B::default();
    b.fork(1, 100);
    b.fork(1, 101);
    b.fork(1, 102);
    b.events[1].seq = 10;
    b.events[2].seq = 5;
    let e = b.engine();
    assert_eq!(
        e.warnings().iter().map(|w| w.kind).collect::<Vec<_>>(),
        vec![
            WarningKind::LostEvents {
                after: 1,
                missing: 8
            },
            WarningKind::SeqBackwards { prev: 10 }
        ]
    );
    assert_eq!(e.last_seq(), Some(10));
    assert_eq!(child_pids(&e, 1), vec![100, 101, 102]);
}

#[test]
fn extreme_seqs_do_not_overflow() {
    let mut b = B::default();
    b.fork(1, 100);
    b.fork(1, 101);
    b.fork(1, 102);
    b.events[0].seq = u64::MAX - 1;
    b.events[1].seq = u64::MAX;
    b.events[2].seq = 0;
    let e = b.engine();
    assert_eq!(e.last_seq(), Some(u64::MAX));
    assert_eq!(e.warning_count(), 1);
}

#[test]
fn out_of_order_exec_before_fork_does_not_panic() {
    let mut b = B::default();
    b.exec(300, "/bin/sleep", &["sleep"]);
    b.fork(1, 300);
    b.task_exit(300, 300, 0, true);
    b.task_exit(300, 300, 0, true);
    let e = b.engine();
    assert!(e.warning_count() >= 2);
    assert_eq!(ppid(&e, 300), 1);
}

#[test]
fn arbitrary_streams_never_panic() {
    let mut e = Engine::new();
    arbitrary_stream(20_000).iter().for_each(|ev| e.apply(ev));
    assert_eq!(e.event_count(), 20_000);
    assert!(e.warnings().len() <= MAX_WARNINGS);
    let _ = tree_text(&e, TreeOpts::default());
    let _ = tree_json(&e);
    let _ = stories(&e);
}

/// Deterministic pseudo-random events over a tiny pid space: reuse, cycles, garbage.
fn arbitrary_stream(n: u64) -> Vec<Event> {
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    };
    let mut out = Vec::new();
    for seq in 0..n {
        let tgid = next(12) as u32;
        let tid = if next(3) == 0 { tgid + 20 } else { tgid };
        let kind = match next(9) {
            0 | 1 => EventKind::Fork {
                child_tid: next(40) as u32,
                child_tgid: next(40) as u32,
                child_ppid: next(13) as u32,
                syscall: None,
                flags: if next(2) == 0 {
                    None
                } else {
                    Some(CloneFlags(next(1 << 17) << 8))
                },
                child_ns: None,
            },
            2 => EventKind::Exec {
                cred: None,
                old_tid: next(40) as u32,
                filename: CapturedStr::new("/usr/bin/runc"),
            },
            3 => EventKind::ExecEnter {
                syscall: Syscall::Execve,
                dirfd: 0,
                at_flags: 0,
                filename: CapturedStr::new("x"),
                argv: vec!["runc".into(), "init".into()],
                argv_truncated: false,
            },
            4 => EventKind::TaskExit {
                exit_code: next(70000) as u32,
                group_dead: next(2) == 0,
            },
            5 => EventKind::PrctlEnter {
                option: prctl_opt::PR_SET_CHILD_SUBREAPER,
                arg2: next(2),
                name: None,
                shown: None,
            },
            6 => EventKind::PrctlEnter {
                option: prctl_opt::PR_SET_NAME,
                arg2: 0,
                name: Some(CapturedStr::new("runc:[2:INIT]")),
                shown: None,
            },
            7 => EventKind::ExitEnter {
                syscall: Syscall::ExitGroup,
                code: 1,
            },
            _ => EventKind::SyscallExit {
                syscall: Syscall::Execve,
                ret: -2,
            },
        };
        let ev = Event {
            seq: if next(50) == 0 { seq / 2 } else { seq },
            ts_ns: 0,
            tgid,
            tid,
            ppid: next(13) as u32,
            uid: 0,
            cgroup_id: 0,
            comm: Comm::new("x"),
            kind,
        };
        out.push(ev);
    }
    out
}

#[test]
fn warnings_are_bounded_but_counted() {
    let mut e = Engine::new();
    let mut b = B::default();
    for pid in 0..(MAX_WARNINGS as u32 + 500) {
        b.push(
            10_000 + pid,
            10_000 + pid,
            "",
            EventKind::CloneEnter {
                syscall: Syscall::Clone,
                flags: CloneFlags(0),
                exit_signal: 17,
            },
        );
    }
    for ev in &b.events {
        e.apply(ev);
    }
    assert_eq!(e.warnings().len(), MAX_WARNINGS);
    assert_eq!(e.warning_count(), MAX_WARNINGS as u64 + 500);
}

// ---- snapshot ----

#[test]
fn snapshot_seeds_processes_marked_as_such() {
    let mut e = Engine::new();
    e.seed_snapshot(&[
        snap(1, 0, "systemd"),
        SnapshotProcess {
            pid: 100,
            ppid: 1,
            comm: "containerd".into(),
            exe: Some("/usr/bin/containerd".into()),
            argv: vec!["/usr/bin/containerd".into()],
            threads: vec![100, 101, 102],
            subreaper: false,
            ..Default::default()
        },
        SnapshotProcess {
            pid: 200,
            ppid: 1,
            comm: "containerd-shim".into(),
            subreaper: true,
            ..Default::default()
        },
        snap(300, 200, "sleep"),
        snap(400, 300, "sh"),
    ]);
    assert_eq!(e.roots().iter().map(|p| p.pid).collect::<Vec<_>>(), vec![1]);
    assert_eq!(child_pids(&e, 1), vec![100, 200]);
    let c = e.process(100).unwrap();
    assert_eq!(c.lineage[0].how, How::Snapshot);
    assert_eq!(c.lineage[0].parent, 1);
    assert_eq!(c.role, Some(Role::RuntimeDaemon));
    assert_eq!(c.live_thread_count(), 3);
    assert_eq!(e.process(200).unwrap().role, Some(Role::Shim));
    assert!(e.process(400).unwrap().has_child_subreaper);
    let mut b = B::default();
    b.exit(300, 0);
    for ev in &b.events {
        e.apply(ev);
    }
    assert_eq!(ppid(&e, 400), 200);
    assert!(e.warnings().is_empty());
}

// ---- roles and container ids ----

fn cls(comm: &str, exe: Option<&str>, argv: &[&str]) -> Option<(Role, Option<String>)> {
    let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
    classify(comm.as_bytes(), exe, &argv).map(|c| (c.role, c.container_id))
}

#[test]
fn roles_from_names_and_argv() {
    assert_eq!(
        cls("containerd", None, &[]),
        Some((Role::RuntimeDaemon, None))
    );
    assert_eq!(
        cls("", Some("/usr/bin/dockerd"), &["dockerd"]),
        Some((Role::RuntimeDaemon, None))
    );
    assert_eq!(cls("crio", None, &[]), Some((Role::RuntimeDaemon, None)));
    assert_eq!(
        cls(
            "containerd-shim",
            Some("/usr/bin/containerd-shim-runc-v2"),
            &[
                "/usr/bin/containerd-shim-runc-v2",
                "-namespace",
                "k8s.io",
                "-id",
                "abc123",
                "-address",
                "/run/c.sock"
            ]
        ),
        Some((Role::Shim, Some("abc123".into())))
    );
    assert_eq!(
        cls(
            "conmon",
            Some("/usr/bin/conmon"),
            &[
                "/usr/bin/conmon",
                "--api-version",
                "1",
                "-c",
                "deadbeef",
                "-u",
                "x"
            ]
        ),
        Some((Role::Shim, Some("deadbeef".into())))
    );
    assert_eq!(
        cls("conmon", None, &["conmon", "--cid=feed", "-u", "x"]),
        Some((Role::Shim, Some("feed".into())))
    );
    assert_eq!(
        cls("pause", Some("/pause"), &["/pause"]),
        Some((Role::Sandbox, None))
    );
    assert_eq!(
        cls(
            "bridge",
            Some("/opt/cni/bin/bridge"),
            &["/opt/cni/bin/bridge"]
        ),
        Some((Role::CniPlugin, None))
    );
    assert_eq!(cls("bash", Some("/bin/bash"), &["bash"]), None);
    assert_eq!(
        cls("runc:[1:CHILD]", None, &[]),
        Some((
            Role::OciInit {
                stage: Some(InitStage::Child)
            },
            None
        ))
    );
    assert_eq!(
        cls("exe", Some("/proc/self/exe"), &["runc", "init"]),
        Some((Role::OciInit { stage: None }, None))
    );
}

#[test]
fn oci_runtime_subcommands_and_container_ids() {
    let rt = |sub| Role::OciRuntime {
        subcommand: Some(sub),
    };
    assert_eq!(
        cls(
            "runc",
            Some("/usr/bin/runc"),
            &[
                "runc",
                "--root",
                "/run/containerd/runc/k8s.io",
                "--log",
                "/run/x/log.json",
                "--log-format",
                "json",
                "create",
                "--bundle",
                "/run/containerd/io.containerd.runtime.v2.task/k8s.io/ID1",
                "--pid-file",
                "/run/x/init.pid",
                "ID1",
            ]
        ),
        Some((rt(OciCommand::Create), Some("ID1".into())))
    );
    assert_eq!(
        cls("runc", None, &["runc", "start", "ID2"]),
        Some((rt(OciCommand::Start), Some("ID2".into())))
    );
    assert_eq!(
        cls("runc", None, &["runc", "kill", "ID3", "9"]),
        Some((rt(OciCommand::Kill), Some("ID3".into())))
    );
    assert_eq!(
        cls("runc", None, &["runc", "delete", "--force", "ID4"]),
        Some((rt(OciCommand::Delete), Some("ID4".into())))
    );
    assert_eq!(
        cls("runc", None, &["runc", "state", "ID5"]),
        Some((rt(OciCommand::State), Some("ID5".into())))
    );
    assert_eq!(
        cls(
            "runc",
            None,
            &["runc", "run", "-d", "--bundle=/srv/b/", "ID6"]
        ),
        Some((rt(OciCommand::Run), Some("ID6".into())))
    );
    // argv cut short before the id: the bundle's basename.
    assert_eq!(
        cls(
            "runc",
            None,
            &["runc", "create", "--bundle", "/run/x/default/ID7"]
        ),
        Some((rt(OciCommand::Create), Some("ID7".into())))
    );
    assert_eq!(
        cls("crun", None, &["crun", "exec", "ID8", "sh"]),
        Some((rt(OciCommand::Exec), Some("ID8".into())))
    );
    assert_eq!(
        cls("runc", None, &["runc", "list"]),
        Some((rt(OciCommand::List), None))
    );
    assert_eq!(
        cls("runc", None, &["runc"]),
        Some((Role::OciRuntime { subcommand: None }, None))
    );
    assert_eq!(
        Role::OciRuntime {
            subcommand: Some(OciCommand::Create)
        }
        .to_string(),
        "oci-runtime create"
    );
    assert_eq!(
        Role::OciInit {
            stage: Some(InitStage::Init)
        }
        .to_string(),
        "oci-init 2:INIT"
    );
}

#[test]
fn oci_init_exec_becomes_container_or_sandbox_with_inherited_id() {
    let mut b = B::default();
    b.fork(1, 100);
    b.exec(100, "/usr/bin/runc", &["runc", "create", "C1"]);
    b.fork(100, 101);
    b.exec_comm(101, 101, "/proc/self/exe", &["runc", "init"], "exe");
    b.rename(101, 101, "runc:[2:INIT]");
    b.fork(100, 102);
    b.exec_comm(102, 102, "/proc/self/exe", &["runc", "init"], "exe");
    let s1 = b.exec(101, "/bin/sleep", &["sleep", "1"]);
    let s2 = b.exec(102, "/pause", &["/pause"]);
    b.exec(101, "/bin/ls", &["ls"]);
    let e = b.engine();
    assert_eq!(e.process(101).unwrap().role, Some(Role::Container));
    assert_eq!(e.process(101).unwrap().container_id.as_deref(), Some("C1"));
    assert_eq!(e.process(101).unwrap().workload_exec_seq(), Some(s1));
    assert_eq!(e.process(102).unwrap().role, Some(Role::Sandbox));
    assert_eq!(e.process(102).unwrap().workload_exec_seq(), Some(s2));
    // A plain process exec'ing something unknown has no role.
    let mut b = B::default();
    b.fork(1, 100);
    b.exec(100, "/usr/bin/containerd", &["containerd"]);
    b.fork(100, 101);
    b.exec(101, "/bin/true", &["true"]);
    assert_eq!(b.engine().process(101).unwrap().role, None);
}

// ---- stories ----

const CID: &str = "0123456789abcdef0123456789abcdef";

struct Seqs {
    shim_fork: u64,
    start_exit: u64,
    subreaper: u64,
    runc_exec: u64,
    init_exec: u64,
    parent_rename: u64,
    child_clone: u64,
    child_rename: u64,
    init_clone: u64,
    init_rename: u64,
    child_exit: u64,
    parent_exit: u64,
    runc_exit: u64,
    workload: u64,
}

/// containerd → shim start process (exits) → shim adopted by 1 → subreaper → runc create →
/// runc init → PARENT/CHILD/INIT (CLONE_PARENT) → intermediates exit → INIT adopted by the shim →
/// exec sleep.
fn containerd_story() -> (B, Seqs) {
    let mut b = B::default();
    let vf = cf::CLONE_VM | cf::CLONE_VFORK;
    b.fork(1, 900);
    b.exec(900, "/usr/bin/containerd", &["/usr/bin/containerd"]);
    b.thread(900, 900, 901);
    b.fork_full(900, 901, 1000, 1000, 0, Some(Syscall::Clone), Some(vf));
    b.exec(
        1000,
        "/usr/bin/containerd-shim-runc-v2",
        &[
            "/usr/bin/containerd-shim-runc-v2",
            "-namespace",
            "default",
            "-address",
            "/run/containerd/containerd.sock",
            "-id",
            CID,
            "start",
        ],
    );
    let shim_fork = b.fork_full(1000, 1000, 1001, 1001, 0, Some(Syscall::Clone), Some(vf));
    b.exec(
        1001,
        "/usr/bin/containerd-shim-runc-v2",
        &[
            "/usr/bin/containerd-shim-runc-v2",
            "-namespace",
            "default",
            "-id",
            CID,
            "-address",
            "/run/containerd/containerd.sock",
        ],
    );
    let start_exit = b.exit(1000, 0);
    let subreaper = b.subreaper(1001, 1001, true);
    b.thread(1001, 1001, 1002);
    b.fork_full(1001, 1002, 1010, 1010, 0, Some(Syscall::Clone), Some(vf));
    let bundle = format!("/run/containerd/io.containerd.runtime.v2.task/default/{CID}");
    let runc_exec = b.exec(
        1010,
        "/usr/bin/runc",
        &[
            "runc",
            "--root",
            "/run/containerd/runc/default",
            "--log",
            "/x/log.json",
            "--log-format",
            "json",
            "create",
            "--bundle",
            &bundle,
            "--pid-file",
            "/x/init.pid",
            CID,
        ],
    );
    b.fork_full(1010, 1010, 1011, 1011, 0, Some(Syscall::Clone), Some(vf));
    let init_exec = b.exec_comm(1011, 1011, "/proc/self/exe", &["runc", "init"], "exe");
    let parent_rename = b.rename(1011, 1011, "runc:[0:PARENT]");
    let child_clone = b.clone(1011, 1012, cf::CLONE_PARENT);
    let child_rename = b.rename(1012, 1012, "runc:[1:CHILD]");
    let init_clone = b.clone(1012, 1013, cf::CLONE_PARENT);
    let init_rename = b.rename(1013, 1013, "runc:[2:INIT]");
    let child_exit = b.exit(1012, 0);
    let parent_exit = b.exit(1011, 0);
    let runc_exit = b.exit(1010, 0);
    // runc start, then the workload.
    b.fork_full(1001, 1002, 1020, 1020, 0, Some(Syscall::Clone), Some(vf));
    b.exec(1020, "/usr/bin/runc", &["runc", "start", CID]);
    b.exit(1020, 0);
    let workload = b.exec_comm(1013, 1013, "/bin/sleep", &["sleep", "1000"], "sleep");
    let s = Seqs {
        shim_fork,
        start_exit,
        subreaper,
        runc_exec,
        init_exec,
        parent_rename,
        child_clone,
        child_rename,
        init_clone,
        init_rename,
        child_exit,
        parent_exit,
        runc_exit,
        workload,
    };
    (b, s)
}

#[test]
fn containerd_story_has_every_step_in_order() {
    let (b, s) = containerd_story();
    let e = b.engine();
    assert!(e.warnings().is_empty(), "{:?}", e.warnings());
    let stories = stories(&e);
    assert_eq!(stories.len(), 1);
    let st = &stories[0];
    assert_eq!(st.container_id.as_deref(), Some(CID));
    assert_eq!(st.kind, StoryKind::Containerd);
    assert_eq!(st.runtime.as_deref(), Some("runc create"));
    assert_eq!(st.shim_pid, Some(1001));
    assert_eq!(st.runtime_pid, Some(1010));
    assert_eq!(st.init_pid, 1013);
    assert_eq!(st.workload.as_deref(), Some("sleep"));
    use StepKind as K;
    let got: Vec<(K, u64, u32)> = st.steps.iter().map(|x| (x.kind, x.seq, x.pid)).collect();
    assert_eq!(
        got,
        vec![
            (K::ShimStarted, s.shim_fork, 1001),
            (K::ShimParentExited, s.start_exit, 1000),
            (K::ShimAdopted, s.start_exit, 1001),
            (K::ShimSubreaper, s.subreaper, 1001),
            (K::RuntimeStarted, s.runc_exec, 1010),
            (K::InitExec, s.init_exec, 1011),
            (K::StageRenamed, s.parent_rename, 1011),
            (K::ChildCloned, s.child_clone, 1012),
            (K::StageRenamed, s.child_rename, 1012),
            (K::InitCloned, s.init_clone, 1013),
            (K::StageRenamed, s.init_rename, 1013),
            (K::IntermediateExited, s.child_exit, 1012),
            (K::IntermediateExited, s.parent_exit, 1011),
            (K::RuntimeExited, s.runc_exit, 1010),
            (K::InitAdopted, s.runc_exit, 1013),
            (K::WorkloadExec, s.workload, 1013),
        ]
    );
    let text = |k: K| {
        st.steps
            .iter()
            .find(|x| x.kind == k)
            .map(|x| x.text.clone())
            .unwrap_or_default()
    };
    assert_eq!(
        text(K::ShimStarted),
        "shim containerd-shim 1001 started by containerd-shim 1000"
    );
    assert_eq!(
        text(K::ShimAdopted),
        "shim 1001 adopted by 1 (parent 1000 exited; no subreaper ancestor: init)"
    );
    assert_eq!(
        text(K::ChildCloned),
        "1011 cloned 1012 with CLONE_PARENT: parent 1010"
    );
    assert_eq!(
        text(K::InitAdopted),
        "init 1013 adopted by 1001 (parent 1010 exited; nearest subreaper 1001)"
    );
    assert_eq!(text(K::WorkloadExec), "init 1013 exec'd /bin/sleep");
    assert_eq!(
        text(K::InitExec),
        "child 1011 of runc 1010 exec'd runc init"
    );

    // The final tree: the workload under the shim, the shim under init.
    assert_eq!(ppid(&e, 1013), 1001);
    assert_eq!(ppid(&e, 1001), 1);
    let init = e.process(1013).unwrap();
    assert_eq!(init.role, Some(Role::Container));
    assert_eq!(init.container_id.as_deref(), Some(CID));
    assert_eq!(
        init.lineage
            .iter()
            .map(|l| (l.how, l.parent, l.caller))
            .collect::<Vec<_>>(),
        vec![
            (How::CloneParent, 1010, Some(1012)),
            (How::Adopted, 1001, None)
        ]
    );
}

#[test]
fn story_at_an_earlier_seq_lists_only_what_was_seen() {
    let (b, s) = containerd_story();
    let e = replay_until(&b.events, s.init_rename);
    let found = stories(&e);
    assert_eq!(found.len(), 1);
    let kinds: Vec<StepKind> = found[0].steps.iter().map(|x| x.kind).collect();
    assert_eq!(kinds.last(), Some(&StepKind::StageRenamed));
    assert!(!kinds.contains(&StepKind::InitAdopted));
    assert_eq!(found[0].workload, None);
    assert_eq!(e.last_seq(), Some(s.init_rename));
    // Before the rename to INIT there is no container birth yet.
    assert!(stories(&replay_until(&b.events, s.init_clone)).is_empty());
}

#[test]
fn conmon_story_ends_with_init_adopted_by_conmon() {
    let mut b = B::default();
    b.fork(1, 500);
    b.exec(500, "/usr/bin/podman", &["podman", "run"]);
    b.fork(500, 600);
    b.exec(
        600,
        "/usr/bin/conmon",
        &[
            "/usr/bin/conmon",
            "--api-version",
            "1",
            "-c",
            "C0FFEE",
            "-u",
            "C0FFEE",
        ],
    );
    b.fork(600, 601);
    b.exit(600, 0);
    b.subreaper(601, 601, true);
    b.fork(601, 610);
    b.exec(
        610,
        "/usr/bin/runc",
        &["/usr/bin/runc", "create", "--bundle", "/b/C0FFEE", "C0FFEE"],
    );
    b.fork(610, 611);
    b.exec_comm(611, 611, "/proc/self/exe", &["runc", "init"], "exe");
    b.rename(611, 611, "runc:[0:PARENT]");
    b.clone(611, 612, cf::CLONE_PARENT);
    b.rename(612, 612, "runc:[1:CHILD]");
    b.clone(612, 613, cf::CLONE_PARENT);
    b.rename(613, 613, "runc:[2:INIT]");
    b.exit(612, 0);
    b.exit(611, 0);
    let adopt = b.exit(610, 0);
    b.exec_comm(613, 613, "/usr/bin/nginx", &["nginx"], "nginx");
    let e = b.engine();
    let st = &stories(&e)[0];
    assert_eq!(st.kind, StoryKind::Conmon);
    assert_eq!(st.shim_pid, Some(601));
    assert_eq!(st.container_id.as_deref(), Some("C0FFEE"));
    assert_eq!(st.workload.as_deref(), Some("nginx"));
    let adopted = st
        .steps
        .iter()
        .find(|x| x.kind == StepKind::InitAdopted)
        .unwrap();
    assert_eq!((adopted.seq, adopted.pid), (adopt, 613));
    assert_eq!(ppid(&e, 613), 601);
    assert_eq!(
        st.steps.first().map(|x| x.kind),
        Some(StepKind::ShimStarted)
    );
}

#[test]
fn runc_run_story_has_no_shim_and_no_adoption() {
    let mut b = B::default();
    b.fork(1, 700);
    b.exec(700, "/usr/bin/runc", &["runc", "run", "box"]);
    b.fork(700, 701);
    b.exec_comm(701, 701, "/proc/self/exe", &["runc", "init"], "exe");
    b.rename(701, 701, "runc:[0:PARENT]");
    b.clone(701, 702, cf::CLONE_PARENT);
    b.rename(702, 702, "runc:[1:CHILD]");
    let init_clone = b.clone(702, 703, cf::CLONE_PARENT);
    b.rename(703, 703, "runc:[2:INIT]");
    b.exit(702, 0);
    b.exit(701, 0);
    b.exec_comm(703, 703, "/bin/sh", &["sh"], "sh");
    let e = b.engine();
    let st = &stories(&e)[0];
    assert_eq!(st.kind, StoryKind::Direct);
    assert_eq!(st.runtime.as_deref(), Some("runc run"));
    assert_eq!(st.shim_pid, None);
    assert_eq!(st.container_id.as_deref(), Some("box"));
    assert_eq!(ppid(&e, 703), 700);
    let kinds: Vec<StepKind> = st.steps.iter().map(|x| x.kind).collect();
    use StepKind as K;
    assert_eq!(
        kinds,
        vec![
            K::RuntimeStarted,
            K::InitExec,
            K::StageRenamed,
            K::ChildCloned,
            K::StageRenamed,
            K::InitCloned,
            K::StageRenamed,
            K::IntermediateExited,
            K::IntermediateExited,
            K::WorkloadExec
        ]
    );
    assert_eq!(st.steps[5].seq, init_clone);
}

// ---- pods ----

const SANDBOX: &str = "5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a";
const APP: &str = "a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0";

/// `runc create` of `id` by `shim` (from its thread), runc init → PARENT → CHILD → INIT, the
/// intermediates and runc exit, INIT exec's `workload`. Pids from `base`. Returns INIT's pid.
fn runc_create(b: &mut B, shim: u32, base: u32, id: &str, workload: &str) -> u32 {
    let vf = cf::CLONE_VM | cf::CLONE_VFORK;
    let (rt, parent, child, init) = (base, base + 1, base + 2, base + 3);
    b.fork_full(shim, shim + 1, rt, rt, 0, Some(Syscall::Clone), Some(vf));
    let bundle = format!("/run/containerd/io.containerd.runtime.v2.task/k8s.io/{id}");
    let log = format!("{bundle}/log.json");
    let argv = [
        "runc",
        "--root",
        "/run/containerd/runc/k8s.io",
        "--log",
        &log,
        "--log-format",
        "json",
        "create",
        "--bundle",
        &bundle,
        "--pid-file",
        "/x/init.pid",
        id,
    ];
    b.exec(rt, "/usr/bin/runc", &argv);
    b.fork_full(rt, rt, parent, parent, 0, Some(Syscall::Clone), Some(vf));
    b.exec_comm(parent, parent, "/proc/self/exe", &["runc", "init"], "exe");
    b.rename(parent, parent, "runc:[0:PARENT]");
    b.clone(parent, child, cf::CLONE_PARENT);
    b.rename(child, child, "runc:[1:CHILD]");
    b.clone(child, init, cf::CLONE_PARENT);
    b.rename(init, init, "runc:[2:INIT]");
    b.exit(child, 0);
    b.exit(parent, 0);
    b.exit(rt, 0);
    b.exec_comm(init, init, workload, &[workload], roles::basename(workload));
    init
}

/// containerd runs CNI (bridge → host-local, loopback) from Debian's /usr/lib/cni, starts the
/// pod's shim for the sandbox (pause), then a second `shim start` for the app container that
/// finds the running shim and exits, and the app is created under the same shim.
fn pod_story() -> B {
    let mut b = B::default();
    let vf = cf::CLONE_VM | cf::CLONE_VFORK;
    b.fork(1, 900);
    b.exec(900, "/usr/bin/containerd", &["/usr/bin/containerd"]);
    b.thread(900, 900, 901);
    for (pid, plugin) in [(950, "bridge"), (960, "loopback")] {
        b.fork_full(900, 901, pid, pid, 0, Some(Syscall::Clone), Some(vf));
        let path = format!("/usr/lib/cni/{plugin}");
        b.exec_comm(pid, pid, &path, &[&path], plugin);
        if plugin == "bridge" {
            b.fork(950, 951);
            b.exec_comm(
                951,
                951,
                "/usr/lib/cni/host-local",
                &["/usr/lib/cni/host-local"],
                "host-local",
            );
            b.exit(951, 0);
        }
        b.exit(pid, 0);
    }
    let shim_argv = |id: &str, start: bool| {
        let mut v = vec![
            "/usr/bin/containerd-shim-runc-v2".to_string(),
            "-namespace".into(),
            "k8s.io".into(),
            "-id".into(),
            id.to_string(),
        ];
        if start {
            v.push("start".into());
        }
        v
    };
    let exec_shim = |b: &mut B, pid: u32, argv: Vec<String>| {
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        b.exec(pid, "/usr/bin/containerd-shim-runc-v2", &argv)
    };
    b.fork_full(900, 901, 1000, 1000, 0, Some(Syscall::Clone), Some(vf));
    exec_shim(&mut b, 1000, shim_argv(SANDBOX, true));
    b.fork_full(1000, 1000, 1001, 1001, 0, Some(Syscall::Clone), Some(vf));
    exec_shim(&mut b, 1001, shim_argv(SANDBOX, false));
    b.exit(1000, 0);
    b.subreaper(1001, 1001, true);
    b.thread(1001, 1001, 1002);
    runc_create(&mut b, 1001, 1010, SANDBOX, "/pause");
    // The app container: `shim start -id APP` finds the pod's shim and exits at once.
    b.fork_full(900, 901, 1100, 1100, 0, Some(Syscall::Clone), Some(vf));
    exec_shim(&mut b, 1100, shim_argv(APP, true));
    b.exit(1100, 0);
    runc_create(&mut b, 1001, 1110, APP, "/bin/sleep");
    b
}

#[test]
fn cni_plugins_are_known_by_directory_or_by_name_under_a_runtime() {
    assert_eq!(
        cls(
            "bridge",
            Some("/usr/lib/cni/bridge"),
            &["/usr/lib/cni/bridge"]
        ),
        Some((Role::CniPlugin, None))
    );
    assert_eq!(cls("bridge", Some("/usr/sbin/bridge"), &["bridge"]), None);
    let e = pod_story().engine();
    for pid in [950, 951, 960] {
        assert_eq!(e.process(pid).unwrap().role, Some(Role::CniPlugin), "{pid}");
    }
    // The same names outside a runtime's tree are nobody's plugins.
    let mut b = B::default();
    b.fork(1, 100);
    b.exec(100, "/bin/bash", &["bash"]);
    b.fork(100, 101);
    b.exec(101, "/opt/lab/bridge", &["/opt/lab/bridge"]);
    assert_eq!(b.engine().process(101).unwrap().role, None);
    // Under a runtime, by name, wherever the bin dir is.
    let mut b = B::default();
    b.fork(1, 100);
    b.exec(100, "/usr/bin/containerd", &["containerd"]);
    b.fork(100, 101);
    b.exec(101, "/opt/lab/plugins/portmap", &["portmap"]);
    assert_eq!(b.engine().process(101).unwrap().role, Some(Role::CniPlugin));
}

#[test]
fn a_pods_second_container_joins_its_shim() {
    let e = pod_story().engine();
    let stories = stories(&e);
    assert_eq!(stories.len(), 2);
    let (sandbox, app) = (&stories[0], &stories[1]);
    assert_eq!(sandbox.container_id.as_deref(), Some(SANDBOX));
    assert_eq!(app.container_id.as_deref(), Some(APP));
    for st in [sandbox, app] {
        assert_eq!(st.sandbox_id.as_deref(), Some(SANDBOX));
        assert_eq!(st.shim_pid, Some(1001));
        assert_eq!(st.runtime.as_deref(), Some("runc create"));
    }
    assert!(sandbox.sandbox && !app.sandbox);
    let kinds = |st: &Story| st.steps.iter().map(|s| s.kind).collect::<Vec<_>>();
    use StepKind as K;
    let sk = kinds(sandbox);
    assert_eq!(sk.iter().filter(|&&k| k == K::CniPlugin).count(), 3);
    assert!(sk.contains(&K::ShimStarted) && !sk.contains(&K::ShimReused));
    let cni: Vec<&str> = sandbox
        .steps
        .iter()
        .filter(|s| s.kind == K::CniPlugin)
        .map(|s| s.text.as_str())
        .collect();
    assert_eq!(
        cni,
        [
            "cni plugin bridge 950 ran by containerd 900, exited with 0",
            "cni plugin host-local 951 ran by bridge 950, exited with 0",
            "cni plugin loopback 960 ran by containerd 900, exited with 0",
        ]
    );
    let ak = kinds(app);
    assert!(!ak.contains(&K::ShimStarted) && !ak.contains(&K::CniPlugin));
    let reused = app.steps.iter().find(|s| s.kind == K::ShimReused).unwrap();
    assert_eq!(reused.pid, 1100);
    assert!(
        reused.text.contains("found the pod's shim 1001"),
        "{}",
        reused.text
    );
    let t = story_text(&stories);
    let pod = &SANDBOX[..12];
    assert!(
        t.starts_with(&format!(
            "pod {pod}: sandbox {SANDBOX} (containerd, runc create) → pause\n"
        )),
        "{t}"
    );
    assert!(
        t.contains(&format!(
            "pod {pod}: container {APP} (containerd, runc create) → sleep\n"
        )),
        "{t}"
    );
}

// ---- views ----

#[test]
fn tree_text_is_pstree_like() {
    let (b, _) = containerd_story();
    let e = b.engine();
    let opts = TreeOpts {
        show_exited: false,
        show_threads: true,
    };
    assert_eq!(
        tree_text(&e, opts),
        "1 systemd\n\
         ├─ 900 containerd [runtime-daemon] {2 threads}\n\
         └─ 1001 containerd-shim [shim] {cid:0123456789ab} {2 threads} (subreaper) ⤴ adopted ← 1000 exited\n   \
         \u{20} └─ 1013 sleep [container] {cid:0123456789ab} (CLONE_PARENT via 1012) ⤴ adopted ← 1010 exited\n"
            .replace("   \u{20} └─", "   └─")
    );
    let full = tree_text(&e, TreeOpts::default());
    assert!(
        full.contains("│  └─ 1000 containerd-shim [shim] {cid:0123456789ab} (exit 0)\n"),
        "{full}"
    );
    assert!(full.contains("1012 runc:[1:CHILD] [oci-init 1:CHILD] {cid:0123456789ab} (CLONE_PARENT via 1011) (exit 0)"), "{full}");
}

#[test]
fn tree_text_survives_deep_chains_and_marks_placeholders() {
    let mut b = B::default();
    b.fork(1, 2);
    for pid in 2..3000 {
        b.fork(pid, pid + 1);
    }
    push_ghost(&mut b);
    let e = b.engine();
    let t = tree_text(&e, TreeOpts::default());
    // The cut says how many are not drawn and how to see them: the chain below the last pid
    // drawn is every pid up to 3000.
    let cut = t
        .lines()
        .find(|l| l.contains("└─ … "))
        .expect("a depth cut");
    let words: Vec<&str> = cut.split_whitespace().collect();
    let hidden: usize = words[2].parse().unwrap();
    let below: u32 = words[5].parse().unwrap();
    assert_eq!(hidden, (3000 - below) as usize, "{cut}");
    assert!(
        cut.ends_with(&format!("see them with --root {below} or --format json")),
        "{cut}"
    );
    assert!(!t.contains("\n3000 ") && !t.contains(" 3000 ?"));
    // Following the advice reaches the deepest process.
    let mut root = below;
    for _ in 0..3 {
        let sub = super::subtree_text(&e, root, TreeOpts::default()).unwrap();
        assert!(sub.starts_with(&format!("{root} ")), "{}", &sub[..100]);
        if sub.contains("└─ 3000 ") {
            root = 3000;
            break;
        }
        let cut = sub
            .lines()
            .find(|l| l.contains("└─ … "))
            .expect("a depth cut");
        root = cut.split_whitespace().nth(5).unwrap().parse().unwrap();
    }
    assert_eq!(root, 3000, "the deepest process is drawn below --root");
    assert!(super::subtree_text(&e, 123_456, TreeOpts::default()).is_none());
    assert!(
        t.ends_with("9000 ghost (placeholder)\n"),
        "{}",
        &t[t.len() - 200..]
    );
}

#[test]
fn tree_json_has_the_documented_fields() {
    let (b, s) = containerd_story();
    let e = b.engine();
    let v = tree_json(&e);
    let procs = v["processes"].as_array().unwrap();
    let init = procs.iter().find(|p| p["pid"] == 1013).unwrap();
    assert_eq!(init["ppid"], 1001);
    assert_eq!(init["comm"], "sleep");
    assert_eq!(init["exe"], "/bin/sleep");
    assert_eq!(init["argv"], serde_json::json!(["sleep", "1000"]));
    assert_eq!(init["role"], "container");
    assert_eq!(init["container_id"], CID);
    assert_eq!(init["subreaper"], false);
    assert_eq!(init["exited"], false);
    assert_eq!(init["exit_code"], serde_json::Value::Null);
    assert_eq!(init["threads"], serde_json::json!([1013]));
    assert_eq!(
        init["lineage"],
        serde_json::json!([
            {"how": "clone_parent", "parent": 1010, "caller": 1012, "caller_tid": 1012, "flags": "CLONE_PARENT", "reason": null, "seq": s.init_clone, "time": null},
            {"how": "adopted", "parent": 1001, "caller": null, "caller_tid": null, "flags": null,
             "reason": "parent 1010 exited; nearest subreaper 1001", "seq": s.runc_exit, "time": null}
        ])
    );
    let shim_start = procs.iter().find(|p| p["pid"] == 1000).unwrap();
    assert_eq!(shim_start["exited"], true);
    assert_eq!(shim_start["exit_code"], 0);
    assert_eq!(
        procs.iter().find(|p| p["pid"] == 1001).unwrap()["subreaper"],
        true
    );
    assert_eq!(
        procs.iter().find(|p| p["pid"] == 1).unwrap()["lineage"][0]["how"],
        "snapshot"
    );
}

#[test]
fn story_views_render() {
    let (b, s) = containerd_story();
    let stories = stories(&b.engine());
    let v = story_json(&stories);
    assert_eq!(v["stories"][0]["kind"], "containerd");
    assert_eq!(v["stories"][0]["init_pid"], 1013);
    assert_eq!(v["stories"][0]["steps"][0]["kind"], "shim_started");
    assert_eq!(v["stories"][0]["steps"][15]["seq"], s.workload);
    let t = story_text(&stories);
    assert!(
        t.starts_with(&format!(
            "container {CID} (containerd, runc create) → sleep\n"
        )),
        "{t}"
    );
    assert_eq!(t.lines().count(), 17);
}

// ---- pid namespaces: find_new_reaper() never leaves the dying process's namespace ----

const HOST_NS: u64 = 4026531836;
const CTR_NS: u64 = 4026532500;
const NESTED_NS: u64 = 4026532600;

fn ns(inum: u64, level: u32, ns_pid: u32) -> Option<PidNs> {
    Some(PidNs {
        inum,
        level,
        ns_pid,
    })
}

impl B {
    /// A birth the kernel reported in full: real parent, flags and the child's namespace.
    fn born(&mut self, caller: u32, child: u32, parent: u32, flags: u64, ns: Option<PidNs>) -> u64 {
        let seq = self.fork_full(
            caller,
            caller,
            child,
            child,
            parent,
            Some(Syscall::Clone),
            Some(flags),
        );
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
    fn alive(&mut self, pid: u32, ppid: u32) -> u64 {
        let seq = self.push(
            pid,
            pid,
            "",
            EventKind::CloneEnter {
                syscall: Syscall::Clone,
                flags: CloneFlags(0),
                exit_signal: 17,
            },
        );
        self.events.last_mut().unwrap().ppid = ppid;
        seq
    }
}

/// 1 → 10 shim (subreaper) → 20 `runc run` → [CLONE_PARENT] 30 container init (pid 1 in
/// CTR_NS) → 40 sh (pid 2) → 50 sleep (pid 3).
fn container() -> B {
    let mut b = B::default();
    b.born(1, 10, 1, 0, ns(HOST_NS, 0, 10));
    b.subreaper(10, 10, true);
    b.born(10, 20, 10, 0, ns(HOST_NS, 0, 20));
    b.born(20, 30, 10, cf::CLONE_PARENT, ns(CTR_NS, 1, 1));
    b.born(30, 40, 30, 0, ns(CTR_NS, 1, 2));
    b.born(40, 50, 40, 0, ns(CTR_NS, 1, 3));
    b
}

#[test]
fn an_orphan_inside_a_container_goes_to_the_containers_init_not_the_subreaper_outside() {
    let mut b = container();
    let s = b.exit(40, 0);
    b.alive(50, 30);
    let e = b.engine();
    assert_eq!(ppid(&e, 50), 30);
    assert_eq!(
        reasons(&e, 50),
        vec!["parent 40 exited; no subreaper in its pid namespace: that namespace's init 30"]
    );
    assert_eq!(e.process(50).unwrap().lineage[1].seq, s);
    assert!(e.warnings().is_empty(), "{:?}", e.warnings());
    assert_eq!(e.process(30).unwrap().ns_pid(), Some(1));
    assert_eq!(e.process(50).unwrap().ns_pid(), Some(3));
    let ctr = e.process(50).unwrap().pidns.unwrap();
    assert_eq!(e.namespace_init(&ctr).map(|p| p.pid), Some(30));
}

#[test]
fn when_a_namespaces_init_dies_its_processes_are_killed_not_adopted() {
    let mut b = container();
    b.exit(40, 0);
    b.exit(30, 0);
    let e = b.engine();
    // The orphan stays with the dead init until zap_pid_ns_processes() kills it.
    assert_eq!(ppid(&e, 50), 30);
    assert_eq!(reasons(&e, 50).len(), 1);
    assert!(e.warnings().is_empty(), "{:?}", e.warnings());
}

#[test]
fn outside_the_namespace_the_subreaper_still_adopts_the_init() {
    let mut b = container();
    b.exit(20, 0);
    let e = b.engine();
    // INIT's parent is the shim already (CLONE_PARENT): runc run's death changes nothing.
    assert_eq!(ppid(&e, 30), 10);
    let mut b = container();
    // runc run's own child (not CLONE_PARENT) at host level goes to the subreaper.
    b.born(20, 60, 20, 0, ns(HOST_NS, 0, 60));
    b.exit(20, 0);
    let e = b.engine();
    assert_eq!(
        reasons(&e, 60),
        vec!["parent 20 exited; nearest subreaper 10"]
    );
}

#[test]
fn a_subreaper_inside_a_container_adopts_before_the_namespaces_init() {
    let mut b = container();
    b.subreaper(40, 40, true);
    b.born(50, 70, 50, 0, ns(CTR_NS, 1, 4));
    b.exit(50, 0);
    let e = b.engine();
    assert_eq!(ppid(&e, 70), 40);
    assert_eq!(
        reasons(&e, 70),
        vec!["parent 50 exited; nearest subreaper 40"]
    );
}

#[test]
fn nested_namespaces_keep_to_their_own_level() {
    let mut b = container();
    b.subreaper(40, 40, true);
    // 50 starts a nested namespace: 80 is its init, 90 under it.
    b.born(50, 80, 50, 0, ns(NESTED_NS, 2, 1));
    b.born(80, 90, 80, 0, ns(NESTED_NS, 2, 2));
    b.born(90, 95, 90, 0, ns(NESTED_NS, 2, 3));
    b.exit(90, 0);
    b.exit(50, 0);
    let e = b.engine();
    // 95's search stops at level 2: the nested init, not subreaper 40 at level 1.
    assert_eq!(ppid(&e, 95), 80);
    // 80 (level 2) is a child of 50 (level 1): 50's death walks level 1 and finds 40.
    assert_eq!(ppid(&e, 80), 40);
    assert!(e.warnings().is_empty(), "{:?}", e.warnings());
}

#[test]
fn has_child_subreaper_comes_from_the_creator_not_the_clone_parent_parent() {
    let mut b = B::default();
    b.born(1, 10, 1, 0, ns(HOST_NS, 0, 10));
    b.born(10, 20, 10, 0, ns(HOST_NS, 0, 20));
    b.subreaper(10, 10, true);
    // 20 existed before 10 became a subreaper: propagation gives it the flag...
    b.born(1, 30, 1, 0, ns(HOST_NS, 0, 30));
    // ...while 30 (a child of init, no subreaper above) creates 35 with CLONE_PARENT:
    // 35's parent is init, its creator 30 has no has_child_subreaper.
    b.born(30, 35, 1, cf::CLONE_PARENT, ns(HOST_NS, 0, 35));
    // 20 creates 25 with CLONE_PARENT: 25's parent is 10; copy_signal copies 20's flag.
    b.born(20, 25, 10, cf::CLONE_PARENT, ns(HOST_NS, 0, 25));
    let e = b.engine();
    assert!(e.process(20).unwrap().has_child_subreaper);
    assert!(e.process(25).unwrap().has_child_subreaper);
    assert!(!e.process(35).unwrap().has_child_subreaper);
}

#[test]
fn the_model_is_corrected_by_the_kernel_and_says_whether_events_were_lost() {
    let mut b = container();
    let s = b.alive(50, 10);
    let e = b.engine();
    assert_eq!(
        e.warnings()[0].kind,
        WarningKind::Disagreement {
            pid: 50,
            model: 40,
            kernel: 10
        }
    );
    assert_eq!(e.warnings()[0].seq, s);
    assert_eq!(
        reasons(&e, 50),
        vec!["kernel reports parent 10, model had 40 (model/kernel disagreement)"]
    );
    let mut b = container();
    b.events
        .iter_mut()
        .for_each(|ev| ev.seq += u64::from(ev.seq > 2));
    let s = b.events.len() as u64 + 2;
    b.alive(50, 10);
    b.events.last_mut().unwrap().seq = s;
    let e = b.engine();
    assert!(e.warnings().iter().any(|w| w.kind
        == WarningKind::CorrectedAfterLoss {
            pid: 50,
            model: 40,
            kernel: 10
        }));
    assert!(!e
        .warnings()
        .iter()
        .any(|w| matches!(w.kind, WarningKind::Disagreement { .. })));
}

#[test]
fn the_kernel_naming_the_parent_that_just_exited_is_a_race_not_a_disagreement() {
    let mut b = container();
    b.exit(40, 0);
    b.alive(50, 40);
    let e = b.engine();
    assert_eq!(ppid(&e, 50), 30);
    assert!(e.warnings().is_empty(), "{:?}", e.warnings());
}

#[test]
fn an_unseen_namespace_init_leaves_the_parent_unknown_until_the_kernel_names_it() {
    let mut b = B::default();
    b.born(1, 10, 1, 0, ns(HOST_NS, 0, 10));
    b.born(10, 40, 10, 0, ns(CTR_NS, 1, 7));
    b.born(40, 50, 40, 0, ns(CTR_NS, 1, 8));
    b.exit(40, 0);
    b.alive(50, 33);
    let e = b.engine();
    assert_eq!(
        reasons(&e, 50),
        vec!["parent 40 exited; the init of its pid namespace (not seen)"]
    );
    assert_eq!(ppid(&e, 50), 33);
    assert!(!e
        .warnings()
        .iter()
        .any(|w| matches!(w.kind, WarningKind::Disagreement { .. })));
}

#[test]
fn lineage_names_the_calling_thread() {
    let mut b = B::default();
    b.fork(1, 100);
    b.thread(100, 100, 101);
    b.fork_full(100, 101, 200, 200, 100, Some(Syscall::Clone), Some(0));
    let e = b.engine();
    let birth = &e.process(200).unwrap().lineage[0];
    assert_eq!((birth.caller, birth.caller_tid), (Some(100), Some(101)));
}

#[test]
fn many_thread_exits_keep_the_live_count_right() {
    let mut b = B::default();
    b.fork(1, 100);
    for t in 0..20_000 {
        b.thread(100, 100, 1000 + t);
    }
    for t in 0..19_999 {
        b.task_exit(100, 1000 + t, 0, false);
    }
    let e = b.engine();
    let p = e.process(100).unwrap();
    assert_eq!(p.live_thread_count(), 2);
    assert!(!p.exited);
}

#[test]
fn an_ancestor_whose_namespace_is_unknown_ends_the_search_inside_a_container() {
    // The shim and the runtime came from a source that gave no namespace (a placeholder, an
    // old recording); the container's processes did.
    let mut b = B::default();
    b.born(1, 10, 1, 0, None);
    b.subreaper(10, 10, true);
    b.born(10, 20, 10, 0, None);
    b.born(20, 30, 10, cf::CLONE_PARENT, ns(CTR_NS, 1, 1));
    b.born(30, 40, 30, 0, ns(CTR_NS, 1, 2));
    b.born(40, 50, 40, 0, ns(CTR_NS, 1, 3));
    b.exit(40, 0);
    let e = b.engine();
    assert_eq!(ppid(&e, 50), 30);
}

// ---- cgroups and Kubernetes identity ----

impl B {
    fn cgroup_move(&mut self, mover: u32, pid: u32, path: &str) -> u64 {
        self.push(
            mover,
            mover,
            "",
            EventKind::CgroupAttach {
                pid,
                hierarchy: 8,
                cgroup_id: 7,
                path: CapturedStr::new(path),
            },
        )
    }
}

#[test]
fn cgroups_are_inherited_at_fork_and_moves_are_kept_in_order() {
    let mut b = B::default();
    let mut daemon = snap(10, 1, "containerd");
    daemon.cgroup = Some("/system.slice/containerd.service".into());
    b.fork(10, 20);
    b.clone(20, 30, cf::CLONE_PARENT);
    let m1 = b.cgroup_move(20, 30, "/kubepods/pod1/abc");
    let m2 = b.cgroup_move(20, 30, "/kubepods/pod1/abc/sub");
    b.fork(30, 40);
    b.clone(20, 50, cf::CLONE_INTO_CGROUP);
    b.cgroup_move(20, 999, "/nobody");
    let mut e = Engine::new();
    e.seed_snapshot(&[snap(1, 0, "systemd"), daemon]);
    b.events.iter().for_each(|ev| e.apply(ev));
    let cg = |pid| e.process(pid).unwrap().cgroup.as_deref().map(String::from);
    // The shim-like child stays in its creator's cgroup; the moved one and its children not.
    assert_eq!(cg(20).as_deref(), Some("/system.slice/containerd.service"));
    assert_eq!(cg(30).as_deref(), Some("/kubepods/pod1/abc/sub"));
    assert_eq!(cg(40).as_deref(), Some("/kubepods/pod1/abc/sub"));
    assert_eq!(
        cg(50),
        None,
        "CLONE_INTO_CGROUP: the target is not in the event"
    );
    let moves: Vec<(u64, &str, u32)> = e
        .process(30)
        .unwrap()
        .cgroup_moves()
        .iter()
        .map(|m| (m.seq, &*m.path, m.by))
        .collect();
    assert_eq!(
        moves,
        [
            (m1, "/kubepods/pod1/abc", 20),
            (m2, "/kubepods/pod1/abc/sub", 20)
        ]
    );
    assert!(e.process(40).unwrap().cgroup_moves().is_empty());
    assert!(e.warnings().is_empty(), "{:?}", e.warnings());
}

#[test]
fn a_bundles_identity_names_every_process_of_its_container() {
    let mut b = B::default();
    b.fork(1, 100);
    b.exec(
        100,
        "/usr/sbin/runc",
        &["runc", "create", "--bundle", "/b", "ctr1"],
    );
    b.push(
        100,
        100,
        "runc",
        EventKind::ContainerMeta {
            pid: 100,
            container_id: "ctr1".into(),
            annotations: [
                ("io.kubernetes.cri.sandbox-name", "web-7d9f"),
                ("io.kubernetes.cri.sandbox-namespace", "shop"),
                ("io.kubernetes.cri.sandbox-uid", "u-42"),
                ("io.kubernetes.cri.container-name", "nginx"),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        },
    );
    let meta = b.events.len() - 1;
    b.fork(100, 101);
    b.fork(1, 200);
    b.exec(200, "/usr/sbin/runc", &["runc", "start", "ctr1"]);
    b.fork(1, 300);
    // The metadata repeats the exec's seq and takes none of its own: no sequence warning.
    b.events[meta..].iter_mut().for_each(|ev| ev.seq -= 1);
    let e = b.engine();
    assert!(e.warnings().is_empty(), "{:?}", e.warnings());
    for pid in [100, 101, 200] {
        let k = e
            .process(pid)
            .unwrap()
            .k8s
            .clone()
            .unwrap_or_else(|| panic!("{pid}"));
        assert_eq!(k.pod_text().as_deref(), Some("shop/web-7d9f"));
        assert_eq!(k.container_name.as_deref(), Some("nginx"));
    }
    assert_eq!(e.process(300).unwrap().k8s, None);
    let label = node_label(e.process(101).unwrap(), TreeOpts::default());
    assert!(label.contains("<pod shop/web-7d9f · nginx>"), "{label}");
    // A child of that container that runs another container's runtime, whose bundle was not
    // read: still the pod (one shim per pod), never nginx's name.
    let mut b2 = B {
        events: b.events.clone(),
    };
    b2.fork(101, 102);
    b2.exec(
        102,
        "/usr/sbin/runc",
        &["runc", "create", "--bundle", "/b2", "ctr2"],
    );
    let e = b2.engine();
    let k = e.process(102).unwrap().k8s.clone().expect("pod kept");
    assert_eq!(k.pod_text().as_deref(), Some("shop/web-7d9f"));
    assert_eq!(k.container_name, None);
}

/// `runc create --bundle /b ctr1` by `pid` (real uid `uid`, in pid namespace `ns`) naming pod
/// `pod` for ctr1.
fn runtime_names_pod(b: &mut B, pid: u32, uid: u32, pod: &str, ns: Option<PidNs>) {
    b.born(1, pid, 1, 0, ns);
    b.exec(
        pid,
        "/usr/sbin/runc",
        &["runc", "create", "--bundle", "/b", "ctr1"],
    );
    b.push(
        pid,
        pid,
        "runc",
        EventKind::ContainerMeta {
            pid,
            container_id: "ctr1".into(),
            annotations: [
                ("io.kubernetes.cri.sandbox-name", pod),
                ("io.kubernetes.cri.sandbox-namespace", "shop"),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        },
    );
    let n = b.events.len();
    for ev in &mut b.events[n - 2..] {
        ev.uid = uid;
    }
}

#[test]
fn only_a_root_runtime_names_a_container_and_the_first_name_stands() {
    use crate::lineage::WarningKind as W;
    // A user's fake runtime first: ignored, then the real one names it.
    let mut b = B::default();
    runtime_names_pod(&mut b, 100, 1000, "not-mine", None);
    // Root inside a container (a child pid namespace), with a bundle of its own making.
    runtime_names_pod(&mut b, 150, 0, "from-a-container", ns(CTR_NS, 1, 7));
    runtime_names_pod(&mut b, 200, 0, "web", ns(HOST_NS, 0, 200));
    // Later, a root runtime with another pod's bundle for the same container id.
    runtime_names_pod(&mut b, 300, 0, "other", None);
    let e = b.engine();
    for pid in [100, 150, 200, 300] {
        let k = e.process(pid).unwrap().k8s.clone();
        assert_eq!(
            k.and_then(|k| k.pod_text()).as_deref(),
            Some("shop/web"),
            "pid {pid}"
        );
    }
    let kinds: Vec<W> = e.warnings().iter().map(|w| w.kind).collect();
    assert!(
        kinds.contains(&W::IdentityNotFromRoot {
            pid: 100,
            uid: 1000
        }),
        "{kinds:?}"
    );
    assert!(
        kinds.contains(&W::IdentityConflict { pid: 300 }),
        "{kinds:?}"
    );
}

#[test]
fn tree_json_lists_warnings_with_seq_pid_kind_and_text() {
    let mut b = B::default();
    b.fork(1, 2);
    push_ghost(&mut b);
    let e = b.engine();
    let v = tree_json(&e);
    assert_eq!(v["warning_count"], 1);
    let w = &v["warnings"][0];
    assert_eq!(w["kind"], "unknown_pid");
    assert_eq!(w["pid"], 9000);
    assert_eq!(w["seq"], e.warnings()[0].seq);
    assert!(w["text"].as_str().unwrap().contains("unknown pid 9000"));

    // Input warnings come first, without seq or pid, and count.
    let mut out = Vec::new();
    super::write_tree_json(
        &e,
        &[super::JsonWarning::input("no end record")],
        None,
        &mut out,
    )
    .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["warning_count"], 2);
    assert_eq!(
        v["warnings"][0],
        serde_json::json!({"seq": null, "pid": null, "kind": "input", "text": "no end record"})
    );
    assert_eq!(v["processes"], tree_json(&e)["processes"]);
}

/// A name a traced process chose (an OSC title sequence) never reaches the terminal raw.
const HOSTILE: &str = "\x1b]0;PWNED\x07";

fn no_raw_control(text: &str) {
    assert!(
        !text.chars().any(|c| c.is_control() && c != '\n'),
        "raw control byte in {text:?}"
    );
}

#[test]
fn hostile_names_are_escaped_in_the_text_tree_and_stories() {
    let mut b = B::default();
    b.fork(1, 2);
    b.exec_comm(2, 2, "/tmp/x\x1b[2J", &["x\x1b[2J", "\t"], HOSTILE);
    let e = b.engine();
    let t = tree_text(&e, TreeOpts::default());
    no_raw_control(&t);
    assert!(t.contains("2 \\33]0;PWNED\\7"), "{t}");
    let story = Story {
        phase: Phase::Birth,
        attempt: None,
        previous_init: None,
        container_id: Some(format!("cid{HOSTILE}")),
        kind: StoryKind::Containerd,
        runtime: Some(HOSTILE.into()),
        shim_pid: None,
        runtime_pid: None,
        init_pid: 2,
        workload: Some(HOSTILE.into()),
        pod: Some(HOSTILE.into()),
        container_name: Some(HOSTILE.into()),
        sandbox_id: Some(HOSTILE.into()),
        sandbox: false,
        steps: vec![StoryStep {
            kind: StepKind::ShimStarted,
            seq: 1,
            ts_ns: 0,
            time: None,
            pid: 2,
            text: format!("{HOSTILE} 2 started"),
            facts: Default::default(),
        }],
        terminated: None,
        restart: None,
        runtime_restart: None,
    };
    let s = story_text(&[story]);
    no_raw_control(&s);
    assert!(s.contains("cid\\33]0;PWNED\\7"), "{s}");
    // JSON keeps the real bytes (serde escapes them as \u001b).
    let j = serde_json::to_string(&tree_json(&e)).unwrap();
    no_raw_control(&j);
    let v: serde_json::Value = serde_json::from_str(&j).unwrap();
    let p2 = v["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pid"] == 2)
        .unwrap();
    assert_eq!(p2["comm"], HOSTILE);
}

/// An event of pid 9000, never seen created: the engine's `unknown_pid` warning.
fn push_ghost(b: &mut B) {
    b.push(
        9000,
        9000,
        "ghost",
        EventKind::CloneEnter {
            syscall: Syscall::Clone,
            flags: CloneFlags(0),
            exit_signal: 17,
        },
    );
}

// ---- the restart experiment ----

/// systemd 1 → sh 50 → containerd 100, whose shim 111 (double-forked, adopted by 1) runs
/// container c1; a `runc exec` 140 left under the daemon and a `runc exec` 150 under the shim
/// that ends while the daemon is down; containerd restarted as 200.
fn restart_stream() -> (B, u64) {
    let mut b = B::default();
    b.fork(1, 50);
    b.exec(50, "/bin/sh", &["sh", "-c", "restart loop"]);
    b.fork(50, 100);
    b.exec(100, "/usr/bin/containerd", &["containerd"]);
    b.fork(100, 110);
    let shim_argv = [
        "containerd-shim-runc-v2",
        "-namespace",
        "lab",
        "-id",
        "c1",
        "start",
    ];
    b.exec(110, "/usr/bin/containerd-shim-runc-v2", &shim_argv);
    b.fork(110, 111);
    b.exit(110, 0);
    b.subreaper(111, 111, true);
    b.fork(100, 140);
    b.exec(140, "/usr/bin/runc", &["runc", "exec", "c1"]);
    b.fork(111, 150);
    b.exec(
        150,
        "/usr/bin/runc",
        &["runc", "exec", "--process", "/p.json", "c1"],
    );
    let died = b.exit(100, 0);
    b.exit(150, 1);
    b.fork(50, 200);
    b.exec(200, "/usr/bin/containerd", &["containerd"]);
    (b, died)
}

#[test]
fn a_restarted_daemon_lists_survivors_and_losses() {
    let (b, died) = restart_stream();
    let e = b.engine();
    let rs = restart::runtime_restarts(&e);
    assert_eq!(rs.len(), 1, "{rs:?}");
    let r = &rs[0];
    assert_eq!(
        (r.daemon.as_str(), r.old_pid, r.new_pid),
        ("containerd", 100, 200)
    );
    assert_eq!(r.exit_seq, died);
    assert!(r.seq > died);
    let shim = r
        .survivors
        .iter()
        .find(|s| s.pid == 111)
        .expect("the shim survived");
    assert_eq!(shim.role.as_deref(), Some("shim"));
    assert_eq!(shim.parent, 1);
    assert_eq!(shim.container_id.as_deref(), Some("c1"));
    assert!(r.survivors.iter().all(|s| s.pid != 140 && s.pid != 150));
    let what: Vec<(u32, &str)> = r.lost.iter().map(|l| (l.pid, l.what)).collect();
    assert_eq!(
        what,
        vec![(140, "reparented"), (150, "exited")],
        "{:?}",
        r.lost
    );
    let text = restart::restarts_text(&rs);
    assert!(text.contains("containerd restarted: 100 exited"), "{text}");
    assert!(text.contains("survived: 111 [shim] container c1"), "{text}");
}

#[test]
fn a_daemon_that_stays_down_is_no_restart() {
    let (mut b, _) = restart_stream();
    b.events.truncate(b.events.len() - 3);
    assert!(restart::runtime_restarts(&b.engine()).is_empty());
    let mut other = B::default();
    other.fork(1, 100);
    other.exec(100, "/usr/bin/containerd", &["containerd"]);
    other.fork(1, 200);
    other.exec(200, "/usr/bin/containerd", &["containerd"]);
    other.exit(100, 0);
    assert!(
        restart::runtime_restarts(&other.engine()).is_empty(),
        "a daemon started before the old one exited is no restart"
    );
}

// ---- retention (bounded live state) ----

/// `n` short-lived children of `parent`, pids from `from`.
fn churn(b: &mut B, parent: u32, from: u32, n: u32) {
    for pid in from..from + n {
        b.fork(parent, pid);
        b.exit(pid, 0);
    }
}

fn engine_with(b: &B, r: Retention) -> Engine {
    let mut e = Engine::with_retention(r);
    e.seed_snapshot(&[snap(1, 0, "systemd")]);
    for ev in &b.events {
        e.apply(ev);
    }
    e
}

const SMALL: Retention = Retention {
    max_exited: 100,
    max_age_ns: u64::MAX,
};

#[test]
fn retention_keeps_live_processes_their_creators_and_adoptions_while_bounded() {
    let mut b = B::default();
    b.fork(1, 100); // a live shell
    b.fork(100, 300);
    b.fork(300, 301);
    b.fork(301, 302); // live grandchild of 300
    b.exit(301, 0); // 302 adopted by init, created by 301
    b.exit(300, 0);
    churn(&mut b, 100, 10_000, 20_000);
    let e = engine_with(&b, SMALL);
    let all = b.engine();
    // Bounded: the window, the live ones and a batch's slack, not 20,000.
    assert!(
        e.process_count() < 100 + 2 * 1024 + 10,
        "{}",
        e.process_count()
    );
    assert_eq!(e.pruned() as usize + e.process_count(), all.process_count());
    let p = e.process(302).expect("live process kept");
    assert_eq!(
        (p.ppid, p.parent.and_then(|i| e.get(i)).map(|q| q.pid)),
        (1, Some(1))
    );
    assert_eq!(reasons(&e, 302), reasons(&all, 302));
    let creator = p.creator.and_then(|c| e.get(c)).map(|c| c.pid);
    let birth = p.birth_parent.and_then(|c| e.get(c)).map(|c| c.pid);
    assert_eq!((creator, birth), (Some(301), Some(301)));
    // The creator's own creator stays too: no held record points to a dropped one.
    for q in e.processes() {
        for id in [q.parent, q.creator, q.birth_parent].into_iter().flatten() {
            assert!(
                e.get(id).is_some(),
                "pid {} points to a dropped record",
                q.pid
            );
        }
        for c in e.children_of(q) {
            assert!(e.get(c.id).is_some());
        }
    }
    assert!(child_pids(&e, 1).contains(&302));
    assert!(!child_pids(&e, 100).contains(&10_000), "old exits dropped");
    assert!(
        child_pids(&e, 100).contains(&29_999),
        "the newest exits kept"
    );
    // The newest exits are in the window, in order.
    let kept: Vec<u32> = e.children(100).iter().map(|c| c.pid).collect();
    assert!(kept.windows(2).all(|w| w[0] < w[1]));
    assert!(kept.len() >= 100);
}

#[test]
fn retention_keeps_the_stories_through_churn() {
    let (mut b, _) = containerd_story();
    churn(&mut b, 1, 100_000, 5_000);
    let e = engine_with(&b, SMALL);
    let all = b.engine();
    assert!(e.pruned() >= 4_000, "{}", e.pruned());
    let text = |e: &Engine| story_text(&stories(e));
    assert_eq!(text(&e), text(&all));
    assert_eq!(stories(&e).len(), 1);
    // The container ends: its story outlives the window.
    b.exit(1013, 0);
    churn(&mut b, 1, 200_000, 5_000);
    let (e, all) = (engine_with(&b, SMALL), b.engine());
    assert!(e.pruned() >= 9_000, "{}", e.pruned());
    assert_eq!(text(&e), text(&all));
}

#[test]
fn retention_drops_exits_older_than_the_age_window() {
    let mut b = B::default();
    b.fork(1, 100);
    churn(&mut b, 100, 1000, 3000);
    // Events are 1 µs apart, 3 per child: the last 500 µs hold about 167 exits.
    let r = Retention {
        max_exited: usize::MAX / 2,
        max_age_ns: 500_000,
    };
    let mut e = engine_with(&b, r);
    e.prune_now(b.events.last().unwrap().ts_ns);
    let exited = e.processes().filter(|p| p.exited).count();
    assert!((160..=170).contains(&exited), "{exited}");
    assert_eq!(e.process(100).map(|p| p.exited), Some(false));
    // Without a retention nothing is dropped.
    assert_eq!(b.engine().pruned(), 0);
    assert_eq!(b.engine().process_count(), 3002);
}

// ---- signals and deaths (death.rs) ----

impl B {
    /// A signal generated by `sender` (the event's task, as the probe sees it) for `target`.
    fn signal(&mut self, sender: u32, comm: &str, sig: i32, code: i32, target: u32) -> u64 {
        let delivered = crate::event::SignalResult::Delivered;
        let info = crate::synth::kill_info(sender, target, sig, code, delivered);
        self.push(sender, sender, comm, EventKind::Signal(info))
    }

    /// A SIGCHLD as an strace log shows it: the receiver's event, the child in si_pid, no
    /// sender thread.
    fn logged_sigchld(&mut self, child: u32, receiver: u32) -> u64 {
        let info = crate::event::SignalInfo {
            signal: SIGCHLD,
            code: CLD_EXITED,
            sender: child,
            sender_tid: 0,
            target: receiver,
            target_tid: receiver,
            group: true,
            result: crate::event::SignalResult::Delivered,
            inferred: false,
        };
        self.push(receiver, receiver, "", EventKind::Signal(info))
    }

    /// The last thread of `pid` ends, killed by `sig`.
    fn killed(&mut self, pid: u32, sig: i32) -> u64 {
        let exit_code = ExitStatus::Killed {
            signal: sig,
            core_dumped: false,
        }
        .to_wait_status();
        self.push(
            pid,
            pid,
            "",
            EventKind::TaskExit {
                exit_code,
                group_dead: true,
            },
        )
    }

    fn oom(&mut self, allocator: u32, victim: u32, cgroup: Option<&str>) -> u64 {
        let info = crate::event::OomInfo {
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

const SIGTERM: i32 = 15;
const SIGKILL: i32 = 9;
const SIGCHLD: i32 = 17;
const SI_USER: i32 = 0;
const SI_KERNEL: i32 = 0x80;
const CLD_EXITED: i32 = 1;
const CLD_KILLED: i32 = 2;

fn death(e: &Engine, pid: u32) -> Death {
    e.process(pid).and_then(|p| p.death()).expect("a death")
}

#[test]
fn a_killed_process_names_its_killer_and_a_sigchld_goes_to_its_parent() {
    let mut b = B::default();
    b.fork(1, 100);
    b.fork(100, 200);
    b.signal(100, "sh", SIGTERM, SI_USER, 200);
    b.killed(200, SIGTERM);
    b.signal(200, "sleep", SIGCHLD, CLD_KILLED, 100);
    let e = b.engine();
    let d = death(&e, 200);
    assert_eq!(d.how, DeathHow::Signal);
    assert_eq!(d.signal(), Some(SIGTERM));
    let by = d.sender().expect("a sender");
    assert_eq!((by.sender, by.sender_comm.to_string()), (100, "sh".into()));
    assert_eq!(d.to_string(), "killed by SIGTERM sent by 100 (sh)");
    assert_eq!(d.short(), "killed SIGTERM by 100");
    assert_eq!(e.sigchld_checks().agreed, 1);
    assert_eq!(e.sigchld_checks().disagreed, 0);
    // Both ends keep the signal; the sender keeps the SIGCHLD it got too.
    assert_eq!(e.process(200).unwrap().signals().len(), 2);
    assert_eq!(e.process(100).unwrap().signals().len(), 2);
    assert!(e.process(100).unwrap().death().is_none(), "alive");
}

#[test]
fn an_exit_is_an_exit_and_a_kernel_signal_names_no_sender() {
    let mut b = B::default();
    b.fork(1, 100);
    b.fork(100, 200);
    b.exit(200, 3);
    b.fork(100, 300);
    b.signal(300, "crash", 11, 1, 300);
    b.killed(300, 11);
    b.fork(100, 400);
    b.killed(400, SIGTERM);
    let e = b.engine();
    assert_eq!(death(&e, 200).how, DeathHow::Exit);
    assert_eq!(death(&e, 200).short(), "exit 3");
    let segv = death(&e, 300);
    assert_eq!((segv.how, segv.sender()), (DeathHow::Signal, None));
    assert_eq!(
        segv.to_string(),
        "killed by SIGSEGV raised by the kernel (SEGV_MAPERR)"
    );
    let unseen = death(&e, 400);
    assert!(unseen.by.is_none());
    assert_eq!(
        unseen.to_string(),
        "killed by SIGTERM (the sender was not seen)"
    );
}

#[test]
fn a_sigchld_to_another_process_than_the_models_parent_is_a_disagreement() {
    let mut b = B::default();
    b.fork(1, 100);
    b.fork(1, 150);
    b.fork(100, 200);
    b.exit(200, 0);
    b.signal(200, "x", SIGCHLD, CLD_EXITED, 150);
    let e = b.engine();
    let c = e.sigchld_checks();
    assert_eq!((c.agreed, c.disagreed), (0, 1));
    assert!(e.warnings().iter().any(|w| matches!(
        w.kind,
        WarningKind::SigchldDisagreement {
            pid: 200,
            model: 100,
            kernel: 150
        }
    )));
}

#[test]
fn a_dying_parent_hands_its_zombies_to_the_reaper_with_a_sigchld_each() {
    // kernel/exit.c reparent_leader(): 200's zombie child 300 goes to the subreaper 100 and
    // 100 gets a SIGCHLD for it, raised while 200 dies (the probe's current task is 200).
    let mut b = B::default();
    b.fork(1, 100);
    b.subreaper(100, 100, true);
    b.fork(100, 200);
    b.fork(200, 300);
    b.exit(300, 0);
    b.exit(200, 0);
    b.signal(200, "parent", SIGCHLD, CLD_EXITED, 100);
    b.signal(200, "parent", SIGCHLD, CLD_EXITED, 100);
    // As an strace log shows it: the zombie's pid in si_pid.
    b.logged_sigchld(300, 100);
    let e = b.engine();
    let c = e.sigchld_checks();
    assert_eq!((c.agreed, c.disagreed), (3, 0), "{:?}", e.warnings());
    // A zombie's handover is not an orphaning: 300 was never adopted while it ran.
    let adopted = |pid| e.process(pid).unwrap().last_adoption().is_some();
    assert!(!adopted(300));
}

#[test]
fn a_child_exiting_while_its_parent_dies_is_adopted_if_its_sigchld_names_the_reaper() {
    // kernel/exit.c: 300's exit tracepoint comes before 200's, but 200's exit_notify()
    // (forget_original_parent()) moves 300 to the subreaper 100 before 300's own
    // exit_notify() raises its SIGCHLD, which the probe sees raised by 300 itself.
    let mut b = B::default();
    b.fork(1, 100);
    b.subreaper(100, 100, true);
    b.fork(100, 200);
    b.fork(200, 300);
    b.fork(200, 400);
    b.exit(300, 0);
    b.exit(400, 0);
    b.exit(200, 0);
    let notified = b.signal(300, "cat", SIGCHLD, CLD_EXITED, 100);
    // 400's exit_notify() came first: it notified 200 and stays 200's zombie.
    b.signal(400, "cat", SIGCHLD, CLD_EXITED, 200);
    let e = b.engine();
    let c = e.sigchld_checks();
    assert_eq!((c.agreed, c.disagreed), (2, 0), "{:?}", e.warnings());
    let p = e.process(300).unwrap();
    assert_eq!(p.ppid, 100);
    let a = p.last_adoption().expect("300 adopted");
    assert_eq!((a.parent, a.seq), (100, notified));
    assert!(matches!(
        a.reason,
        Some(Reason::ParentExited {
            parent: 200,
            reaper: Reaper::Subreaper(100)
        })
    ));
    assert_eq!(e.process(400).unwrap().ppid, 200);
    assert!(e.process(400).unwrap().last_adoption().is_none());
}

#[test]
fn an_oom_victim_dies_oomkilled_in_its_cgroup() {
    let mut b = B::default();
    b.fork(1, 100);
    b.fork(100, 200);
    b.cgroup_move(100, 200, "/kubepods/pod1/c1");
    b.oom(200, 200, None);
    b.signal(200, "eat", SIGKILL, SI_KERNEL, 200);
    b.killed(200, SIGKILL);
    let e = b.engine();
    let d = death(&e, 200);
    assert_eq!(d.how, DeathHow::Oom);
    let oom = d.oom.as_ref().unwrap();
    assert_eq!(
        oom.cgroup.as_deref(),
        Some("/kubepods/pod1/c1"),
        "the model's cgroup"
    );
    assert_eq!(oom.limit, Some(64 << 20));
    assert_eq!(d.short(), "OOMKilled");
    let j = view::death_json(&crate::clock::Clock::None, &d);
    assert_eq!(j["how"], "oom");
    assert_eq!(j["cgroup"], "/kubepods/pod1/c1");
    assert_eq!(j["sender"], serde_json::Value::Null);
}

/// A process of one container's pid namespace (level 1), pid `ns_pid` there.
fn ns1(ns_pid: u32) -> Option<PidNs> {
    Some(PidNs {
        inum: 4026532000,
        level: 1,
        ns_pid,
    })
}

#[test]
fn the_death_of_a_namespace_init_kills_what_is_left_in_it() {
    let mut b = B::default();
    b.fork(1, 100);
    b.born(100, 200, 100, cf::CLONE_NEWPID, ns1(1));
    b.born(200, 300, 200, 0, ns1(2));
    // An exec'd process (setns into the namespace): its parent is outside.
    b.born(100, 400, 100, 0, ns1(3));
    b.killed(200, SIGKILL);
    b.signal(200, "sh", SIGKILL, SI_KERNEL, 300);
    b.signal(200, "sh", SIGKILL, SI_KERNEL, 400);
    b.killed(300, SIGKILL);
    b.killed(400, SIGKILL);
    b.fork(100, 500);
    b.killed(500, SIGKILL);
    let e = b.engine();
    assert_eq!(death(&e, 200).how, DeathHow::Signal, "the init itself");
    for pid in [300, 400] {
        let d = death(&e, pid);
        assert_eq!((d.how, d.ns_init), (DeathHow::PidNs, Some(200)), "{pid}");
        assert_eq!(
            view::death_json(&crate::clock::Clock::None, &d)["sender"],
            200
        );
    }
    assert_eq!(
        death(&e, 500).how,
        DeathHow::Signal,
        "outside the namespace"
    );
}

/// Pids of the records the namespace zap marked.
fn zapped(e: &Engine) -> Vec<u32> {
    e.processes()
        .filter(|p| p.zapped_by().is_some())
        .map(|p| p.pid)
        .collect()
}

#[test]
fn each_nested_namespace_is_zapped_by_its_own_init() {
    // zap_pid_ns_processes() kills every task with a pid in the dying init's namespace,
    // nested namespaces' included; the engine marks the processes whose own namespace it
    // is, and a nested one's when its own init's death (which that zap causes) comes.
    let n = 6;
    let evs = crate::synth::nested_namespaces(n);
    let init = |i: u32| crate::synth::NESTED_BASE + 2 * i;
    let first_exit = evs
        .iter()
        .position(|ev| matches!(ev.kind, EventKind::TaskExit { .. }))
        .expect("an exit");
    let mut e = Engine::new();
    for ev in &evs[..=first_exit] {
        e.apply(ev);
    }
    assert_eq!(
        zapped(&e),
        vec![init(0) + 1],
        "the outermost namespace's own worker"
    );
    let before = e.clone();
    for ev in &evs[first_exit + 1..] {
        e.apply(ev);
    }
    for i in 0..n {
        let d = death(&e, init(i) + 1);
        assert_eq!(
            (d.how, d.ns_init),
            (DeathHow::PidNs, Some(init(i))),
            "worker {i}"
        );
        if i > 0 {
            // the init of a nested namespace is not a process of the outer one's own
            assert_eq!(death(&e, init(i)).how, DeathHow::Signal, "init {i}");
        }
    }
    assert!(
        e.tree().namespaces().all(|ns| ns.live.is_empty()),
        "all ended"
    );
    // A clone taken before shares the index until written: it still holds its members, and
    // the same events give it the same marks.
    assert_eq!(zapped(&before), vec![init(0) + 1]);
    assert_eq!(
        before
            .tree()
            .namespaces()
            .map(|ns| ns.live.len())
            .sum::<usize>(),
        2 * n as usize - 1
    );
    let mut copy = before;
    for ev in &evs[first_exit + 1..] {
        copy.apply(ev);
    }
    assert_eq!(zapped(&copy), zapped(&e));
}

#[test]
fn a_namespace_whose_init_retention_dropped_still_zaps_its_live_members() {
    // As the scan of every record did: a live process of a namespace whose init record was
    // dropped is killed by the next init of that inode (the kernel reuses inode numbers).
    let mut b = B::default();
    b.fork(1, 100);
    b.born(100, 200, 100, cf::CLONE_NEWPID, ns1(1));
    // setns'd in (its parent is outside), its death never seen
    b.born(100, 400, 100, 0, ns1(3));
    b.exit(200, 0);
    let split = b.events.len();
    b.born(100, 500, 100, cf::CLONE_NEWPID, ns1(1));
    b.exit(500, 0);
    let mut e = Engine::with_retention(Retention {
        max_exited: 0,
        max_age_ns: u64::MAX,
    });
    e.seed_snapshot(&[snap(1, 0, "systemd")]);
    for ev in &b.events[..split] {
        e.apply(ev);
    }
    e.prune_now(0);
    assert!(e.process(200).is_none(), "the init's record was dropped");
    for ev in &b.events[split..] {
        e.apply(ev);
    }
    let p = e.process(400).expect("live");
    assert_eq!(p.zapped_by().map(|z| z.0), Some(500));
}

#[test]
fn a_processes_signals_are_bounded_and_its_killer_kept() {
    let mut b = B::default();
    b.fork(1, 100);
    b.fork(100, 200);
    b.signal(100, "sh", SIGTERM, SI_USER, 200);
    for _ in 0..(MAX_SIGNALS + 10) {
        b.signal(100, "sh", 23, SI_USER, 200);
    }
    b.killed(200, SIGTERM);
    let e = b.engine();
    let p = e.process(200).unwrap();
    assert_eq!(p.signals().len(), MAX_SIGNALS);
    assert_eq!(p.signals_dropped(), 11);
    assert_eq!(death(&e, 200).sender().map(|s| s.sender), Some(100));
    let j = e.process(200).map(|p| p.death()).unwrap();
    assert!(j.is_some());
}

#[test]
fn tree_json_has_death_and_signals() {
    let mut b = B::default();
    b.fork(1, 100);
    b.fork(100, 200);
    b.signal(100, "sh", SIGTERM, SI_USER, 200);
    b.killed(200, SIGTERM);
    let e = b.engine();
    let j = view::tree_json(&e);
    let procs = j["processes"].as_array().expect("processes");
    let p = procs.iter().find(|p| p["pid"] == 200).unwrap();
    assert_eq!(p["death"]["how"], "signal");
    assert_eq!(p["death"]["signal"], "SIGTERM");
    assert_eq!(p["death"]["sender"], 100);
    assert_eq!(p["death"]["sender_comm"], "sh");
    assert_eq!(p["death"]["code"], "SI_USER");
    assert_eq!(p["signals"][0]["target"], 200);
    let live = procs.iter().find(|p| p["pid"] == 100).unwrap();
    assert_eq!(live["death"], serde_json::Value::Null);
    assert!(view::tree_text(&e, TreeOpts::default()).contains("(killed SIGTERM by 100)"));
}

#[test]
fn a_child_dying_before_its_dead_parents_exit_notify_notifies_that_parent() {
    // The model hands 300 to the subreaper at 200's exit tracepoint; the kernel reparents in
    // 200's exit_notify(), later: 300 dying in between sends its SIGCHLD to 200.
    let mut b = B::default();
    b.fork(1, 100);
    b.subreaper(100, 100, true);
    b.fork(100, 200);
    b.fork(200, 300);
    b.exit(200, 0);
    b.exit(300, 0);
    b.signal(300, "sleep", SIGCHLD, CLD_EXITED, 200);
    // Not any earlier ancestor, though.
    b.fork(100, 400);
    b.fork(400, 500);
    b.exit(500, 0);
    b.signal(500, "x", SIGCHLD, CLD_EXITED, 1);
    let e = b.engine();
    let c = e.sigchld_checks();
    assert_eq!((c.agreed, c.disagreed), (1, 1), "{:?}", e.warnings());
    // Its own SIGCHLD says it died 200's child: the model's adoption is taken back.
    let p = e.process(300).unwrap();
    assert_eq!(p.ppid, 200);
    assert!(p.last_adoption().is_none(), "{:?}", p.lineage);
    assert_eq!(e.process(200).unwrap().children.len(), 1);
    let subreaper = e.adoption_totals().iter().find(|(k, _)| *k == "subreaper");
    assert_eq!(subreaper, Some(("subreaper", 0)));
}

#[test]
fn a_runtimes_64_hex_id_is_shortened_in_story_text_and_whole_in_json() {
    let id = "86b5f76eb0d4fec1673f66aba59ef4451e3fd2ce3b40b9eeaa2db4086ec68e27";
    let story = Story {
        phase: Phase::Birth,
        attempt: None,
        previous_init: None,
        container_id: Some(id.into()),
        kind: StoryKind::Containerd,
        runtime: Some("runc create".into()),
        shim_pid: None,
        runtime_pid: None,
        init_pid: 2,
        workload: Some("pause".into()),
        pod: Some("ns/web".into()),
        container_name: None,
        sandbox_id: Some(id.into()),
        sandbox: true,
        steps: vec![],
        terminated: None,
        restart: None,
        runtime_restart: None,
    };
    let text = story_text(std::slice::from_ref(&story));
    assert!(
        text.starts_with("pod ns/web: sandbox 86b5f76eb0d4… (containerd, runc create) → pause"),
        "{text}"
    );
    assert_eq!(story_json(&[story])["stories"][0]["container_id"], id);
}

#[test]
fn the_written_tree_is_the_tree_text_and_a_failed_write_is_the_error() {
    let (b, _) = containerd_story();
    let e = b.engine();
    let opts = TreeOpts::default();
    let mut out = Vec::new();
    super::write_tree_text(&e, opts, super::TextTree::All, &mut out).unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), tree_text(&e, opts));
    let mut out = Vec::new();
    super::write_tree_text(&e, opts, super::TextTree::Traced, &mut out).unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        super::traced_tree_text(&e, opts)
    );
    // A reader that went away (`tracer tree | head`): its error comes back, not a short tree.
    struct Closed;
    impl std::io::Write for Closed {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let err = super::write_tree_text(&e, opts, super::TextTree::All, &mut Closed).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::BrokenPipe);
}

// ---- stories kept as events arrive (stories.rs) ----

mod incremental;

// ---- who may speak for a container (identity.rs) ----

mod speakers;

// ---- restarts told as they happened (lifecycle.rs) ----

mod restarts;

// ---- what an strace log shows of signals and deaths (ending.rs, lifecycle.rs) ----

mod strace_facts;

// ---- a runtime daemon's restart as a story (restart_story.rs, explain/restart.rs) ----

mod runtime_restart;

// ---- each explanation right for its variant (explain/) ----

mod explain;

/// The kubelet's view of the death story of the container whose init is `init`.
fn terminated(e: &Engine, init: u32) -> super::kubelet::Terminated {
    let told = stories(e);
    let death = told
        .iter()
        .find(|s| s.phase == Phase::Death && s.init_pid == init)
        .expect("a death story");
    death.terminated.clone().expect("terminated")
}

/// A shim 500 and its container `c1` (init 603, running /bin/app).
fn one_container() -> (B, u32) {
    let mut b = B::default();
    b.fork(1, 500);
    let argv = ["containerd-shim-runc-v2", "-id", "c1"];
    b.exec(500, "/usr/bin/containerd-shim-runc-v2", &argv);
    let init = runc_create(&mut b, 500, 600, "c1", "/bin/app");
    (b, init)
}

#[test]
fn an_oom_kill_in_the_containers_memcg_is_oomkilled_whatever_the_init_exits_with() {
    let (mut b, init) = one_container();
    b.fork(init, 700);
    b.oom(700, 700, Some("/pods/c1"));
    b.killed(700, SIGKILL);
    b.exit(init, 1);
    let t = terminated(&b.engine(), init);
    assert_eq!(t.reason, super::kubelet::TermReason::OomKilled);
    assert_eq!(t.exit_code, 1);
    assert!(
        matches!(&t.cause, super::kubelet::Cause::OomKiller { pid: 700, memcg: Some(m), .. } if m == "/pods/c1"),
        "{:?}",
        t.cause
    );
    assert!(t.text().starts_with("Terminated: OOMKilled, exit code 1; the OOM killer chose app 700 in memory cgroup /pods/c1 (limit 64 MiB)"), "{}", t.text());
    // No OOM kill: its own exit, an Error; a fault the kernel raised: a crash, 128 + 11.
    let (mut b, init) = one_container();
    let other = runc_create(&mut b, 500, 650, "c2", "/bin/app");
    b.exit(init, 1);
    b.signal(other, "app", 11, SI_KERNEL, other);
    b.killed(other, 11);
    let e = b.engine();
    let t = terminated(&e, init);
    assert_eq!(
        (t.reason, t.exit_code),
        (super::kubelet::TermReason::Error, 1)
    );
    assert_eq!(t.cause, super::kubelet::Cause::Exit { code: 1 });
    let t = terminated(&e, other);
    assert_eq!(
        (t.reason, t.exit_code),
        (super::kubelet::TermReason::Error, 139)
    );
    assert!(
        matches!(t.cause, super::kubelet::Cause::Crash { .. }),
        "{:?}",
        t.cause
    );
}
