//! A process's birth (its parent, its clone kind, what it inherits) and its execs and renames.

use super::*;

#[test]
fn fork_parent_is_the_caller() {
    let mut b = Stream::default();
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
    let mut b = Stream::default();
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
    let mut b = Stream::default();
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
    let mut b = Stream::default();
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
    let mut b = Stream::default();
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
    let mut b = Stream::default();
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
    let mut b = Stream::default();
    b.fork(1, 100);
    b.exec_comm(100, 100, "/proc/self/exe", &["runc", "init"], "exe");
    let e = b.engine();
    let p = e.process(100).unwrap();
    assert_eq!(p.comm.to_string(), "exe");
    assert_eq!(p.role, Some(Role::OciInit { stage: None }));
}

#[test]
fn exec_from_a_non_leader_thread_takes_the_leaders_pid() {
    let mut b = Stream::default();
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
    let mut b = Stream::default();
    b.fork(1, 100);
    b.thread(100, 100, 101);
    b.exec(100, "/bin/sh", &["sh"]);
    assert_eq!(live_tids(&b.engine(), 100), vec![100]);
}

#[test]
fn failed_exec_changes_nothing() {
    let mut b = Stream::default();
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
    let mut b2 = Stream {
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
    let mut b = Stream::default();
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
