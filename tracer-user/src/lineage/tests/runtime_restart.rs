//! A runtime daemon's restart as a story of the list (restart_story.rs) and its explanation
//! (explain/restart.rs): its steps, its survivors' parents, and only what the recording holds.

use super::*;

/// systemd 1 → containerd 100 → `shim start` 110 → shim 111 (adopted by 1, subreaper);
/// systemd stops containerd with SIGTERM, and starts it again as 200. With `cgroups`, the
/// daemon's unit cgroup is recorded (the shim inherits it at fork).
fn unit_restart(cgroups: bool) -> Stream {
    let mut b = Stream::default();
    b.fork(1, 100);
    b.exec(100, "/usr/bin/containerd", &["containerd"]);
    if cgroups {
        b.cgroup_move(1, 100, "/system.slice/containerd.service");
    }
    b.fork(100, 110);
    let argv = [
        "containerd-shim-runc-v2",
        "-namespace",
        "k8s.io",
        "-id",
        "c1",
        "start",
    ];
    b.exec(110, "/usr/bin/containerd-shim-runc-v2", &argv);
    b.fork(110, 111);
    b.exit(110, 0);
    b.subreaper(111, 111, true);
    b.signal(1, "systemd", 15, 0, 100);
    b.exit(100, 0);
    b.fork(1, 200);
    b.exec(200, "/usr/bin/containerd", &["containerd"]);
    b
}

/// The one runtime restart story of `e`.
fn restart_story(e: &Engine) -> Story {
    let all = stories(e);
    let mut found = all.into_iter().filter(|s| s.phase == Phase::RuntimeRestart);
    let st = found.next().expect("a runtime restart story");
    assert!(found.next().is_none(), "one restart, one story");
    st
}

#[test]
fn a_daemon_restart_is_a_story_with_its_survivors_losses_and_new_daemon() {
    let (b, died) = restart_stream();
    let st = restart_story(&b.engine());
    let kinds: Vec<(StepKind, u32)> = st.steps.iter().map(|s| (s.kind, s.pid)).collect();
    assert_eq!(kinds[0], (StepKind::DaemonEnded, 100), "{kinds:?}");
    assert_eq!(st.steps[0].seq, died);
    for k in [
        (StepKind::Survived, 111),
        (StepKind::RestartLost, 140),
        (StepKind::RestartLost, 150),
        (StepKind::DaemonStarted, 200),
    ] {
        assert!(kinds.contains(&k), "{k:?} missing: {kinds:?}");
    }
    assert_eq!(kinds.last(), Some(&(StepKind::RestartUnchanged, 200)));
    assert!(st.steps.windows(2).all(|w| w[0].seq <= w[1].seq));
    let r = st.runtime_restart.as_deref().expect("the restart's data");
    assert_eq!((r.old_pid, r.new_pid, st.init_pid), (100, 200, 200));
    let shim = r.survivors.iter().find(|s| s.pid == 111).unwrap();
    assert_eq!(shim.parent, 1, "the shim stays PID 1's, never the daemon's");
    assert!(r
        .survivors
        .iter()
        .all(|s| s.parent != 100 && s.parent != 200));
    let step = st.steps.iter().find(|s| s.pid == 111).unwrap();
    assert!(step.text.contains("lives on: parent 1 "), "{}", step.text);
    assert!(
        step.text.contains("never containerd 100's child"),
        "{}",
        step.text
    );
    let started = st.steps.iter().find(|s| s.kind == StepKind::DaemonStarted);
    assert!(started.unwrap().text.contains("containerd 200 started"));
    let unchanged = &st.steps.last().unwrap().text;
    assert!(
        unchanged.contains("1 shim(s)")
            && unchanged.contains("none is a child of the new containerd 200"),
        "{unchanged}"
    );
}

#[test]
fn the_daemons_end_names_the_signal_and_its_sender() {
    let st = restart_story(&unit_restart(false).engine());
    let end = &st.steps[0];
    assert_eq!(end.kind, StepKind::DaemonEnded);
    assert_eq!(
        end.text,
        "containerd 100 exited with 0, after SIGTERM sent by 1 (systemd)"
    );
    let r = st.runtime_restart.as_deref().unwrap();
    let sig = r.signal.as_ref().expect("the SIGTERM was recorded");
    assert_eq!((sig.signal.as_str(), sig.sender), ("SIGTERM", 1));
    assert_eq!(r.started_by, 1);
}

/// Each sentence naming KillMode=process says whose setting it is: containerd.service's.
fn killmode_is_the_units(text: &str) {
    for sentence in text.split(". ") {
        if sentence.contains("KillMode=process") {
            assert!(
                sentence.contains("containerd.service"),
                "{sentence:?} in {text}"
            );
        }
    }
}

#[test]
fn the_explanation_names_the_recorded_cgroups_and_nothing_the_recording_lacks() {
    let st = restart_story(&unit_restart(true).engine());
    let why = |kind: StepKind| {
        let step = st.steps.iter().find(|s| s.kind == kind).unwrap();
        crate::lineage::explain::why(&st, step).text
    };
    let survived = why(StepKind::Survived);
    assert!(
        survived.contains("It sat in containerd's own cgroup /system.slice/containerd.service"),
        "{survived}"
    );
    assert!(
        survived.contains("started by pid 1; under containerd.service, KillMode=process"),
        "{survived}"
    );
    let ended = why(StepKind::DaemonEnded);
    assert!(
        ended.contains("containerd 100 sat in cgroup /system.slice/containerd.service"),
        "{ended}"
    );
    assert!(ended.contains("SIGTERM was sent by 1 (systemd)"), "{ended}");
    for step in &st.steps {
        killmode_is_the_units(&crate::lineage::explain::why(&st, step).text);
    }
    // No cgroup recorded: said so, and no cgroup named.
    let st = restart_story(&unit_restart(false).engine());
    for step in &st.steps {
        let text = crate::lineage::explain::why(&st, step).text;
        assert!(!text.contains("sat in"), "{text}");
        killmode_is_the_units(&text);
    }
    let step = st
        .steps
        .iter()
        .find(|s| s.kind == StepKind::Survived)
        .unwrap();
    assert!(crate::lineage::explain::why(&st, step)
        .text
        .ends_with("Its cgroup was not recorded."));
    let end = crate::lineage::explain::why(&st, &st.steps[0]).text;
    assert!(
        end.contains("containerd 100's cgroup was not recorded"),
        "{end}"
    );
}

#[test]
fn a_daemon_not_started_by_pid_1_is_not_told_as_a_systemd_unit() {
    let (b, _) = restart_stream();
    let st = restart_story(&b.engine());
    let step = st
        .steps
        .iter()
        .find(|s| s.kind == StepKind::DaemonStarted)
        .unwrap();
    let text = crate::lineage::explain::why(&st, step).text;
    assert!(
        text.contains("was started by 50, not by pid 1: no systemd unit ran this daemon here"),
        "{text}"
    );
}

/// A sender's name is the traced process's to choose: escaped in the explanation and in the
/// story's text, never written raw.
#[test]
fn a_hostile_senders_name_is_escaped_wherever_the_restart_is_told() {
    let mut b = Stream::default();
    b.fork(1, 100);
    b.exec(100, "/usr/bin/containerd", &["containerd"]);
    b.fork(1, 60);
    b.signal(60, "ev\u{1b}[2Jil", 15, 0, 100);
    b.exit(100, 0);
    b.fork(1, 200);
    b.exec(200, "/usr/bin/containerd", &["containerd"]);
    let e = b.engine();
    let st = restart_story(&e);
    let why = crate::lineage::explain::why(&st, &st.steps[0]).text;
    assert!(
        why.contains("SIGTERM was sent by 60 (ev\\33[2Jil)"),
        "{why}"
    );
    let text = story_text(std::slice::from_ref(&st));
    assert!(
        !text.contains('\u{1b}') && !why.contains('\u{1b}'),
        "{text}"
    );
    assert!(
        text.contains("after SIGTERM sent by 60 (ev\\33[2Jil)"),
        "{text}"
    );
}
