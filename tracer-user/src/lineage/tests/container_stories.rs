//! Container stories (containerd, conmon, runc run) and pods.

use super::*;

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
    assert_containerd_step_texts(st);

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

/// The words of [`containerd_story`]'s steps (who started, adopted, cloned, exec'd whom).
fn assert_containerd_step_texts(st: &Story) {
    use StepKind as K;
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
    let mut b = Stream::default();
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
    let mut b = Stream::default();
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
    let mut b = Stream::default();
    b.fork(1, 100);
    b.exec(100, "/bin/bash", &["bash"]);
    b.fork(100, 101);
    b.exec(101, "/opt/lab/bridge", &["/opt/lab/bridge"]);
    assert_eq!(b.engine().process(101).unwrap().role, None);
    // Under a runtime, by name, wherever the bin dir is.
    let mut b = Stream::default();
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
