//! `Stories::update` against a one-shot build, and its work per batch against the history.

use super::*;

/// containerd (900, its thread 901) under init.
fn node() -> Stream {
    let mut b = Stream::default();
    b.fork(1, 900);
    b.exec(900, "/usr/bin/containerd", &["/usr/bin/containerd"]);
    b.thread(900, 900, 901);
    b
}

/// A child of containerd's thread that execs `argv`.
fn daemon_child(b: &mut Stream, pid: u32, argv: &[&str]) {
    let vf = cf::CLONE_VM | cf::CLONE_VFORK;
    b.fork_full(900, 901, pid, pid, 0, Some(Syscall::Clone), Some(vf));
    b.exec_comm(pid, pid, argv[0], argv, roles::basename(argv[0]));
}

/// A runc subcommand the shim runs for container `id`, to its exit.
fn runc(b: &mut Stream, shim: u32, pid: u32, sub: &str, id: &str) {
    b.fork(shim, pid);
    b.exec(pid, "/usr/bin/runc", &["runc", sub, id]);
    b.exit(pid, 0);
}

/// The bundle's annotations of container `id` (its runtime `rt`): pod `web-N` in `shop`.
fn bundle(b: &mut Stream, rt: u32, id: &str, pod: &str, name: Option<&str>) {
    let mut annotations = PodAnnotations::new("shop", pod);
    if let Some(name) = name {
        annotations = annotations.named(name);
    }
    b.push(rt, rt, "runc", annotations.meta(rt, id));
}

/// One pod's whole life, its pids from `base`: CNI ADD, the shim, the sandbox, the app
/// container (named, so every third pod of a name is a restart of it), a stop (a shell's
/// SIGUSR1, SIGTERM by `runc kill`), `runc delete`, the sandbox's end, CNI DEL, the shim's exit; and health
/// probes init runs meanwhile.
fn pod_life(b: &mut Stream, i: u32) {
    let base = 10_000 + i * 100;
    let (sandbox, app) = (format!("{:064x}", 2 * i + 1), format!("{:064x}", 2 * i + 2));
    let pod = format!("web-{}", i / 3);
    daemon_child(b, base + 90, &["/usr/lib/cni/bridge"]);
    b.exit(base + 90, 0);
    let shim = |id: &str, start: bool| {
        let mut v = vec!["/usr/bin/containerd-shim-runc-v2", "-id", id];
        v.extend(start.then_some("start"));
        v.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let argv = shim(&sandbox, true);
    daemon_child(
        b,
        base,
        &argv.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    b.fork(base, base + 1);
    let argv = shim(&sandbox, false);
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    b.exec(base + 1, argv[0], &argv);
    b.exit(base, 0);
    b.subreaper(base + 1, base + 1, true);
    b.thread(base + 1, base + 1, base + 2);
    let pause = runc_create(b, base + 1, base + 10, &sandbox, "/pause");
    bundle(b, base + 10, &sandbox, &pod, None);
    let argv = shim(&app, true);
    daemon_child(
        b,
        base + 20,
        &argv.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    b.exit(base + 20, 0);
    let init = runc_create(b, base + 1, base + 30, &app, "/bin/sleep");
    bundle(b, base + 30, &app, &pod, Some("app"));
    for k in 0..5 {
        b.fork(1, base + 60 + k);
        b.exec(base + 60 + k, "/bin/true", &["true"]);
        b.exit(base + 60 + k, 0);
    }
    // A shell signals the app, then execs: the death story names it by its name now.
    b.fork(1, base + 45);
    b.exec(base + 45, "/bin/sh", &["sh"]);
    b.signal(base + 45, "sh", 10, SI_USER, init);
    b.fork(base + 1, base + 40);
    b.exec(base + 40, "/usr/bin/runc", &["runc", "kill", &app, "15"]);
    b.signal(base + 40, "runc", SIGTERM, SI_USER, init);
    b.exit(base + 40, 0);
    b.killed(init, SIGTERM);
    b.signal(init, "sleep", SIGCHLD, CLD_KILLED, base + 1);
    runc(b, base + 1, base + 41, "delete", &app);
    b.exec(base + 45, "/bin/true", &["true"]);
    b.exit(base + 45, 0);
    // Its pid taken again: the story names the sender as the pid's newest record does.
    b.fork(1, base + 45);
    b.exec(base + 45, "/bin/date", &["date"]);
    b.exit(base + 45, 0);
    b.killed(pause, SIGKILL);
    runc(b, base + 1, base + 42, "delete", &sandbox);
    daemon_child(b, base + 91, &["/usr/lib/cni/bridge"]);
    b.exit(base + 91, 0);
    b.exit(base + 1, 0);
}

/// The stories updated after every `batch` events are those a one-shot build gives.
fn same_as_one_shot(events: &[Event], batch: usize) {
    let mut e = Engine::new();
    e.seed_snapshot(&[snap(1, 0, "systemd")]);
    let mut s = Stories::build(&e);
    for (n, chunk) in events.chunks(batch).enumerate() {
        chunk.iter().for_each(|ev| e.apply(ev));
        s.update(&e);
        let want = stories(&e);
        assert_eq!(
            s.list(),
            want,
            "batch {n} of {batch} (to seq {})",
            e.last_seq().unwrap_or(0)
        );
    }
}

#[test]
fn updated_stories_are_the_one_shot_stories_after_every_event() {
    let mut b = node();
    for i in 0..7 {
        pod_life(&mut b, i);
    }
    let (containerd, _) = containerd_story();
    for evs in [&b.events, &pod_story().events, &containerd.events] {
        for batch in [1, 5, 64] {
            same_as_one_shot(evs, batch);
        }
    }
    // The lives hold what this test means to check: restarts, deaths, CNI both ways.
    let all = stories(&b.engine());
    let kinds: Vec<StepKind> = all.iter().flat_map(|s| &s.steps).map(|s| s.kind).collect();
    for k in [
        StepKind::Restarted,
        StepKind::SignalSent,
        StepKind::RuntimeDelete,
        StepKind::CniPlugin,
        StepKind::CniTeardown,
        StepKind::ShimExited,
        StepKind::ShimReused,
    ] {
        assert!(kinds.contains(&k), "{k:?} missing");
    }
}

/// Garbage (pid reuse, cycles, backwards seqs, stray renames to `runc:[2:INIT]`) is told the
/// same way too.
#[test]
fn arbitrary_streams_are_told_the_same_as_they_arrive() {
    let events = arbitrary_stream(3000);
    same_as_one_shot(&events, 1);
    same_as_one_shot(&events, 37);
    assert!(!stories(&Stream { events }.engine()).is_empty());
}

/// A followed view's work per batch does not grow with the history: the 1000th pod's batch
/// costs no more than the 10th's (counted: records changed, stories built, records read).
#[test]
fn a_batchs_work_does_not_grow_with_the_history() {
    let mut b = node();
    let mut e = Engine::new();
    e.seed_snapshot(&[snap(1, 0, "systemd")]);
    b.events.iter().for_each(|ev| e.apply(ev));
    let mut s = Stories::build(&e);
    let mut work = Vec::new();
    for i in 0..1000 {
        let from = b.events.len();
        pod_life(&mut b, i);
        b.events[from..].iter().for_each(|ev| e.apply(ev));
        s.update(&e);
        work.push(s.work());
    }
    let (w10, w1000) = (work[9], work[999]);
    assert!(w10.rebuilt > 0 && w10.visited > 0, "{w10:?}");
    assert!(w1000.changed <= w10.changed, "{w10:?} then {w1000:?}");
    assert!(w1000.rebuilt <= w10.rebuilt, "{w10:?} then {w1000:?}");
    assert!(w1000.visited <= w10.visited, "{w10:?} then {w1000:?}");
    assert_eq!(s.len(), 4000, "a birth and a death per container");
    assert_eq!(s.list(), stories(&e));
    eprintln!("work per batch: batch 10 {w10:?}, batch 1000 {w1000:?}");
}

/// zap_pid_ns_processes(): the init's death story lists what its namespace's end killed
/// (found by the namespace's init and its exit), told the same way as events arrive.
#[test]
fn a_death_story_names_what_the_namespaces_end_killed() {
    let mut b = container();
    b.rename(30, 30, "runc:[2:INIT]");
    b.exit(30, 0);
    b.killed(40, SIGKILL);
    b.killed(50, SIGKILL);
    let all = stories(&b.engine());
    let death = all.iter().find(|s| s.phase == Phase::Death);
    let killed: Vec<u32> = death
        .expect("a death story")
        .steps
        .iter()
        .filter(|s| s.kind == StepKind::NamespaceKilled)
        .map(|s| s.pid)
        .collect();
    assert_eq!(killed, [40, 50]);
    same_as_one_shot(&b.events, 1);
}

/// A runtime restart is told the same as events arrive, and found again only when what it
/// reads changed: a shim forking another `runc` after the restart does not search again.
#[test]
fn a_runtime_restart_is_told_the_same_and_searched_only_when_it_may_change() {
    let (mut b, _) = super::restart_stream();
    for batch in [1, 4] {
        same_as_one_shot(&b.events, batch);
    }
    let mut e = Engine::new();
    e.seed_snapshot(&[snap(1, 0, "systemd")]);
    b.events.iter().for_each(|ev| e.apply(ev));
    let mut s = Stories::build(&e);
    assert!(s.iter().any(|st| st.phase == Phase::RuntimeRestart));
    let from = b.events.len();
    b.fork(111, 300);
    b.exec(300, "/usr/bin/runc", &["runc", "state", "c1"]);
    b.events[from..].iter().for_each(|ev| e.apply(ev));
    s.update(&e);
    assert!(
        s.fresh().all(|st| st.phase != Phase::RuntimeRestart),
        "the shim's new child changes nothing the restart read"
    );
    assert_eq!(s.list(), stories(&e));
    // The shim's end, after the restart, is no part of it either.
    let from = b.events.len();
    b.exit(111, 0);
    b.events[from..].iter().for_each(|ev| e.apply(ev));
    s.update(&e);
    assert!(s.fresh().all(|st| st.phase != Phase::RuntimeRestart));
    assert_eq!(s.list(), stories(&e));
    // The new daemon ends too: the search runs again (and still finds the one restart).
    let from = b.events.len();
    b.exit(200, 0);
    b.events[from..].iter().for_each(|ev| e.apply(ev));
    s.update(&e);
    assert!(s.fresh().any(|st| st.phase == Phase::RuntimeRestart));
    assert_eq!(s.list(), stories(&e));
}
