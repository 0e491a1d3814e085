//! Signals and deaths (death.rs): killers, SIGCHLD, OOM kills, the pid-namespace zap.

use super::*;

#[test]
fn a_killed_process_names_its_killer_and_a_sigchld_goes_to_its_parent() {
    let mut b = Stream::default();
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
    let mut b = Stream::default();
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
    let mut b = Stream::default();
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
    let mut b = Stream::default();
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
    let mut b = Stream::default();
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
    let mut b = Stream::default();
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
    let mut b = Stream::default();
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
    let mut b = Stream::default();
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
    let mut b = Stream::default();
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
    let mut b = Stream::default();
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
    let mut b = Stream::default();
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
    crate::lineage::write_tree_text(&e, opts, crate::lineage::TextTree::All, &mut out).unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), tree_text(&e, opts));
    let mut out = Vec::new();
    crate::lineage::write_tree_text(&e, opts, crate::lineage::TextTree::Traced, &mut out).unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        crate::lineage::traced_tree_text(&e, opts)
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
    let err = crate::lineage::write_tree_text(&e, opts, crate::lineage::TextTree::All, &mut Closed)
        .unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::BrokenPipe);
}

// ---- each explanation right for its variant (explain/) ----

#[test]
fn an_oom_kill_in_the_containers_memcg_is_oomkilled_whatever_the_init_exits_with() {
    let (mut b, init) = one_container();
    b.fork(init, 700);
    b.oom(700, 700, Some("/pods/c1"));
    b.killed(700, SIGKILL);
    b.exit(init, 1);
    let t = terminated(&b.engine(), init);
    assert_eq!(t.reason, crate::lineage::kubelet::TermReason::OomKilled);
    assert_eq!(t.exit_code, 1);
    assert!(
        matches!(&t.cause, crate::lineage::kubelet::Cause::OomKiller { pid: 700, memcg: Some(m), .. } if m == "/pods/c1"),
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
        (crate::lineage::kubelet::TermReason::Error, 1)
    );
    assert_eq!(t.cause, crate::lineage::kubelet::Cause::Exit { code: 1 });
    let t = terminated(&e, other);
    assert_eq!(
        (t.reason, t.exit_code),
        (crate::lineage::kubelet::TermReason::Error, 139)
    );
    assert!(
        matches!(t.cause, crate::lineage::kubelet::Cause::Crash { .. }),
        "{:?}",
        t.cause
    );
}
