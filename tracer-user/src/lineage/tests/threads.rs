//! Threads and processes: which clone adds a thread, which exit ends the process.

use super::*;

#[test]
fn clone_thread_adds_a_thread_not_a_process() {
    let mut b = Stream::default();
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
    let mut b = Stream::default();
    b.fork(1, 100);
    b.fork_full(100, 100, 101, 100, 0, None, None);
    let e = b.engine();
    assert!(e.process(101).is_none());
    assert_eq!(live_tids(&e, 100), vec![100, 101]);
}

#[test]
fn threads_subreaper_prctl_marks_the_whole_process() {
    let mut b = Stream::default();
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
    let mut b = Stream::default();
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
    let mut b = Stream::default();
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
    let mut b = Stream::default();
    b.fork(1, 100);
    b.thread(100, 100, 101);
    b.task_exit(100, 101, 0, true);
    let e = b.engine();
    assert!(e.process(100).unwrap().exited);
    assert!(live_tids(&e, 100).is_empty());
}

#[test]
fn a_threads_exit_keeps_the_process_and_its_children() {
    let mut b = Stream::default();
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
    let mut b = Stream::default();
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
    let mut b = Stream::default();
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
