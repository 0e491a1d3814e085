//! A container's restart as a story tells only what had happened by its step.

use super::*;

/// `runc create` of `id` under the shim 500 by `base` (its init `base + 3`), its bundle
/// naming pod shop/`pod` and container `app`, read when the runtime exec'd.
fn create_in(b: &mut Stream, base: u32, id: &str, pod: &str) -> u32 {
    let from = b.events.len();
    let init = runc_create(b, 500, base, id, "/bin/app");
    let exec = from
        + b.events[from..]
            .iter()
            .position(|e| e.tgid == base && matches!(e.kind, EventKind::Exec { .. }))
            .expect("the runtime's exec");
    let kind = PodAnnotations::new("shop", pod).named("app").meta(base, id);
    let seq = b.events[exec].seq;
    b.events.insert(
        exec + 1,
        Event::bare(seq, seq * 1000, base, base, "runc", kind),
    );
    init
}

fn create_named(b: &mut Stream, base: u32, id: &str) -> u32 {
    create_in(b, base, id, "web")
}

/// Seqs in order again after the insertions.
fn renumber(b: &mut Stream) {
    for (i, ev) in b.events.iter_mut().enumerate() {
        ev.seq = i as u64 + 1;
    }
}

/// A shim (500, its thread 501) whose container `app` is created at 600 and again at 700;
/// its first life ends before the second is created, or after.
fn two_lives(first_ends_before: bool) -> Engine {
    let mut b = Stream::default();
    b.fork(1, 500);
    let argv = ["containerd-shim-runc-v2", "-id", "sb"];
    b.exec(500, "/usr/bin/containerd-shim-runc-v2", &argv);
    b.thread(500, 500, 501);
    let first = create_named(&mut b, 600, "c1");
    if first_ends_before {
        b.exit(first, 1);
    }
    create_named(&mut b, 700, "c2");
    if !first_ends_before {
        b.exit(first, 1);
    }
    renumber(&mut b);
    b.engine()
}

fn restart_step(e: &Engine) -> String {
    let told = stories(e);
    let st = told
        .iter()
        .find(|s| s.phase == Phase::Restart)
        .expect("a restart");
    st.steps[0].text.clone()
}

#[test]
fn a_restart_states_the_last_lifes_end_only_once_it_has_happened() {
    let ended = restart_step(&two_lives(true));
    // The synthetic events carry no wall clock: no gap is stated.
    assert!(
        ended.ends_with("its last life (init 603) ended: exit 1; restarted (attempt 1)"),
        "{ended}"
    );
    let later = restart_step(&two_lives(false));
    assert!(
        later.ends_with(
            "its last life (init 603) was still running then (it ended later: exit 1); \
             restarted (attempt 1)"
        ),
        "{later}"
    );
}

#[test]
fn a_container_id_used_again_for_another_pod_is_a_new_container_not_a_restart() {
    let mut b = Stream::default();
    b.fork(1, 500);
    let argv = ["containerd-shim-runc-v2", "-id", "sb"];
    b.exec(500, "/usr/bin/containerd-shim-runc-v2", &argv);
    b.thread(500, 500, 501);
    let first = create_in(&mut b, 600, "c1", "web");
    b.exit(first, 0);
    // Deleted, then the same id for another pod's container of the same name.
    create_in(&mut b, 700, "c1", "db");
    renumber(&mut b);
    let e = b.engine();
    let told = stories(&e);
    assert!(
        told.iter().all(|s| s.phase != Phase::Restart),
        "{}",
        story_text(&told)
    );
    let pod = |pid| e.process(pid).and_then(|p| p.k8s.as_ref()?.pod_text());
    assert_eq!(
        pod(603).as_deref(),
        Some("shop/web"),
        "the old life keeps its pod"
    );
    assert_eq!(pod(703).as_deref(), Some("shop/db"));
    assert!(e
        .warnings()
        .iter()
        .all(|w| !matches!(w.kind, WarningKind::IdentityConflict { .. })));
}

/// `app` created once and again after each death, `gaps_s` (seconds) from each death to the
/// next creation, on a clock with a date; the engine after it.
fn lives_with_gaps(gaps_s: &[u64]) -> Engine {
    let mut b = Stream::default();
    b.fork(1, 500);
    let argv = ["containerd-shim-runc-v2", "-id", "sb"];
    b.exec(500, "/usr/bin/containerd-shim-runc-v2", &argv);
    b.thread(500, 500, 501);
    // Where each life's events start, and the gap before it.
    let mut starts = Vec::new();
    for i in 0..=gaps_s.len() {
        starts.push(b.events.len());
        let init = create_named(&mut b, 600 + 100 * i as u32, &format!("c{i}"));
        b.exit(init, 2);
    }
    renumber(&mut b);
    // 1 ms an event, and each gap before the life it precedes.
    let mut offset = 0;
    for (i, ev) in b.events.iter_mut().enumerate() {
        if let Some(k) = starts.iter().skip(1).position(|&s| s == i) {
            offset += gaps_s[k] * 1_000_000_000;
        }
        ev.ts_ns = ev.seq * 1_000_000 + offset;
    }
    let mut e = Engine::new();
    e.set_clock(crate::clock::Clock::boot(1_764_747_609_000_000_000, 0));
    e.seed_snapshot(&[snap(1, 0, "systemd")]);
    for ev in &b.events {
        e.apply(ev);
    }
    e
}

/// The restarts' kubelet view, oldest first: (restartCount, gap, back-off).
fn restarts_of(e: &Engine) -> Vec<(u32, Option<u64>, Option<&'static str>)> {
    stories(e)
        .iter()
        .filter_map(|s| s.restart.as_ref())
        .map(|r| (r.restart_count, r.since_last_end_ns, r.back_off))
        .collect()
}

#[test]
fn three_doubling_gaps_between_restarts_are_a_crash_loop_back_off() {
    const S: u64 = 1_000_000_000;
    let e = lives_with_gaps(&[10, 20, 40, 80]);
    let r = restarts_of(&e);
    assert_eq!(r.len(), 4, "{r:?}");
    // Each gap: the death's event to the next life's first step, a few ms of events apart.
    for ((n, gap, _), want) in r.iter().zip([10, 20, 40, 80]) {
        let gap = gap.expect("measured");
        assert!(
            gap > want * S && gap < want * S + S / 10,
            "restart {n}: {gap}"
        );
    }
    let named: Vec<_> = r.iter().map(|x| (x.0, x.2)).collect();
    let crash_loop = Some("CrashLoopBackOff");
    assert_eq!(
        named,
        [(1, None), (2, None), (3, crash_loop), (4, crash_loop)]
    );
    let told = stories(&e);
    let third = told
        .iter()
        .filter(|s| s.phase == Phase::Restart)
        .nth(2)
        .unwrap();
    let text = &third.steps[0].text;
    assert!(
        text.contains("restarted 40.0 s after its last life ended (attempt 3; CrashLoopBackOff"),
        "{text}"
    );
    // Kubelet's back-off capped at five minutes still is one.
    let r = restarts_of(&lives_with_gaps(&[80, 160, 300, 300]));
    assert_eq!(r.iter().filter(|x| x.2.is_some()).count(), 2, "{r:?}");
}

#[test]
fn restarts_at_steady_or_growing_but_not_doubling_gaps_are_no_back_off() {
    for gaps in [
        [10, 10, 10, 10],
        [10, 30, 90, 270],
        [1, 2, 4, 8],
        [40, 20, 10, 5],
    ] {
        let r = restarts_of(&lives_with_gaps(&gaps));
        assert_eq!(r.len(), 4, "{gaps:?}");
        assert!(r.iter().all(|x| x.2.is_none()), "{gaps:?}: {r:?}");
    }
}
