//! Orphans and their reaper: subreapers, init, and pid namespaces (find_new_reaper() never leaves
//! the dying process's namespace).

use super::*;

/// 1 → 10 (subreaper) → 20 (subreaper) → 30 → 40
fn subreaper_chain() -> Stream {
    let mut b = Stream::default();
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
    let mut b = Stream::default();
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
    let mut b = Stream::default();
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
    let mut b = Stream::default();
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
    let mut b = Stream::default();
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
    let mut b = Stream::default();
    b.fork(1, 10);
    b.subreaper(10, 10, true);
    b.fork(10, 20);
    b.exit(10, 0);
    let e = b.engine();
    assert_eq!(ppid(&e, 20), 1);
}

#[test]
fn many_orphans_are_adopted_together_in_pid_order() {
    let mut b = Stream::default();
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
    let mut b = Stream::default();
    b.fork(1, 10);
    b.fork(10, 20);
    b.exit(20, 0);
    b.exit(10, 0);
    let e = b.engine();
    assert_eq!(ppid(&e, 20), 10);
    assert_eq!(e.process(20).unwrap().lineage.len(), 1);
}

// ---- pid namespaces: find_new_reaper() never leaves the dying process's namespace ----

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
    let mut b = Stream::default();
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
    let mut b = Stream::default();
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
    let mut b = Stream::default();
    b.fork(1, 100);
    b.thread(100, 100, 101);
    b.fork_full(100, 101, 200, 200, 100, Some(Syscall::Clone), Some(0));
    let e = b.engine();
    let birth = &e.process(200).unwrap().lineage[0];
    assert_eq!((birth.caller, birth.caller_tid), (Some(100), Some(101)));
}

#[test]
fn many_thread_exits_keep_the_live_count_right() {
    let mut b = Stream::default();
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
    let mut b = Stream::default();
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
