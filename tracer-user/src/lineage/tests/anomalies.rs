//! Anomalies (pid reuse, unknown pids, seq gaps, arbitrary streams) and the /proc snapshot.

use super::*;

#[test]
fn pid_reuse_while_alive_ends_the_old_record() {
    let mut b = Stream::default();
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
    let mut b = Stream::default();
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
    let mut b = Stream::default();
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
    let mut b = Stream::default();
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
    let mut b = Stream::default();
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
    let mut b = Stream::default();
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
    let mut b = Stream::default();
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
    let mut b = Stream::default();
    b.exec(300, "/bin/sleep", &["sleep"]);
    b.fork(1, 300);
    b.task_exit(300, 300, 0, true);
    b.task_exit(300, 300, 0, true);
    let e = b.engine();
    // the exec made a placeholder; the fork is its birth (one process, one record)
    assert!(e.warning_count() >= 1);
    assert_eq!(ppid(&e, 300), 1);
    assert_eq!(e.processes().filter(|p| p.pid == 300).count(), 1);
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

#[test]
fn warnings_are_bounded_but_counted() {
    let mut e = Engine::new();
    let mut b = Stream::default();
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
    let mut b = Stream::default();
    b.exit(300, 0);
    for ev in &b.events {
        e.apply(ev);
    }
    assert_eq!(ppid(&e, 400), 200);
    assert!(e.warnings().is_empty());
}

/// A live view reads /proc after its probes attached: a process made in between is in its
/// snapshot and its birth is in the stream after it. One process, one record; a snapshot
/// process that events touched and that ended is a reused pid's predecessor, as before.
#[test]
fn a_snapshot_process_whose_birth_comes_after_the_snapshot_is_one_record() {
    let snap = [
        crate::synth::process(1, 0, "init"),
        crate::synth::process(60, 1, "bash"),
        crate::synth::process(70, 1, "old"),
    ];
    let mut b = Stream::default();
    b.fork(1, 60);
    b.exec(60, "/bin/sleep", &["sleep"]);
    b.exit(60, 0);
    b.exit(70, 0);
    b.fork(1, 70);
    let mut e = Engine::seeded(&snap);
    b.events.iter().for_each(|ev| e.apply(ev));
    let records = |pid| e.processes().filter(|p| p.pid == pid).count();
    assert_eq!((records(60), records(70)), (1, 2));
    let p = e.process(60).unwrap();
    assert_eq!(
        (p.name().as_str(), p.born_how(), p.exited),
        ("sleep", How::Fork, true)
    );
    assert!(e.warnings().is_empty(), "{:?}", e.warnings());
}
