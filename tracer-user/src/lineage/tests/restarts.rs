//! A container's restart as a story tells only what had happened by its step.

use super::*;

/// `runc create` of `id` under the shim 500 by `base` (its init `base + 3`), its bundle
/// naming pod shop/`pod` and container `app`, read when the runtime exec'd.
fn create_in(b: &mut B, base: u32, id: &str, pod: &str) -> u32 {
    let from = b.events.len();
    let init = runc_create(b, 500, base, id, "/bin/app");
    let exec = from
        + b.events[from..]
            .iter()
            .position(|e| e.tgid == base && matches!(e.kind, EventKind::Exec { .. }))
            .expect("the runtime's exec");
    let annotations = [
        ("io.kubernetes.cri.sandbox-name", pod),
        ("io.kubernetes.cri.sandbox-namespace", "shop"),
        ("io.kubernetes.cri.container-name", "app"),
    ];
    let kind = EventKind::ContainerMeta {
        pid: base,
        container_id: id.into(),
        annotations: annotations
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    };
    let seq = b.events[exec].seq;
    b.events.insert(
        exec + 1,
        Event::bare(seq, seq * 1000, base, base, "runc", kind),
    );
    init
}

fn create_named(b: &mut B, base: u32, id: &str) -> u32 {
    create_in(b, base, id, "web")
}

/// Seqs in order again after the insertions.
fn renumber(b: &mut B) {
    for (i, ev) in b.events.iter_mut().enumerate() {
        ev.seq = i as u64 + 1;
    }
}

/// A shim (500, its thread 501) whose container `app` is created at 600 and again at 700;
/// its first life ends before the second is created, or after.
fn two_lives(first_ends_before: bool) -> Engine {
    let mut b = B::default();
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
    let mut b = B::default();
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
