//! Cgroups and Kubernetes identity: who names a container, hostile names escaped.

use super::*;

#[test]
fn cgroups_are_inherited_at_fork_and_moves_are_kept_in_order() {
    let mut b = Stream::default();
    let mut daemon = snap(10, 1, "containerd");
    daemon.cgroup = Some("/system.slice/containerd.service".into());
    b.fork(10, 20);
    b.clone(20, 30, cf::CLONE_PARENT);
    let m1 = b.cgroup_move(20, 30, "/kubepods/pod1/abc");
    let m2 = b.cgroup_move(20, 30, "/kubepods/pod1/abc/sub");
    b.fork(30, 40);
    b.clone(20, 50, cf::CLONE_INTO_CGROUP);
    b.cgroup_move(20, 999, "/nobody");
    let mut e = Engine::new();
    e.seed_snapshot(&[snap(1, 0, "systemd"), daemon]);
    b.events.iter().for_each(|ev| e.apply(ev));
    let cg = |pid| e.process(pid).unwrap().cgroup.as_deref().map(String::from);
    // The shim-like child stays in its creator's cgroup; the moved one and its children not.
    assert_eq!(cg(20).as_deref(), Some("/system.slice/containerd.service"));
    assert_eq!(cg(30).as_deref(), Some("/kubepods/pod1/abc/sub"));
    assert_eq!(cg(40).as_deref(), Some("/kubepods/pod1/abc/sub"));
    assert_eq!(
        cg(50),
        None,
        "CLONE_INTO_CGROUP: the target is not in the event"
    );
    let moves: Vec<(u64, &str, u32)> = e
        .process(30)
        .unwrap()
        .cgroup_moves()
        .iter()
        .map(|m| (m.seq, &*m.path, m.by))
        .collect();
    assert_eq!(
        moves,
        [
            (m1, "/kubepods/pod1/abc", 20),
            (m2, "/kubepods/pod1/abc/sub", 20)
        ]
    );
    assert!(e.process(40).unwrap().cgroup_moves().is_empty());
    assert!(e.warnings().is_empty(), "{:?}", e.warnings());
}

#[test]
fn a_bundles_identity_names_every_process_of_its_container() {
    let mut b = Stream::default();
    b.fork(1, 100);
    b.exec(
        100,
        "/usr/sbin/runc",
        &["runc", "create", "--bundle", "/b", "ctr1"],
    );
    let pod = PodAnnotations::new("shop", "web-7d9f").uid("u-42");
    b.push(100, 100, "runc", pod.named("nginx").meta(100, "ctr1"));
    let meta = b.events.len() - 1;
    b.fork(100, 101);
    b.fork(1, 200);
    b.exec(200, "/usr/sbin/runc", &["runc", "start", "ctr1"]);
    b.fork(1, 300);
    // The metadata repeats the exec's seq and takes none of its own: no sequence warning.
    b.events[meta..].iter_mut().for_each(|ev| ev.seq -= 1);
    let e = b.engine();
    assert!(e.warnings().is_empty(), "{:?}", e.warnings());
    for pid in [100, 101, 200] {
        let k = e
            .process(pid)
            .unwrap()
            .k8s
            .clone()
            .unwrap_or_else(|| panic!("{pid}"));
        assert_eq!(k.pod_text().as_deref(), Some("shop/web-7d9f"));
        assert_eq!(k.container_name.as_deref(), Some("nginx"));
    }
    assert_eq!(e.process(300).unwrap().k8s, None);
    let label = node_label(e.process(101).unwrap(), TreeOpts::default());
    assert!(label.contains("<pod shop/web-7d9f · nginx>"), "{label}");
    // A child of that container that runs another container's runtime, whose bundle was not
    // read: still the pod (one shim per pod), never nginx's name.
    let mut b2 = Stream {
        events: b.events.clone(),
    };
    b2.fork(101, 102);
    b2.exec(
        102,
        "/usr/sbin/runc",
        &["runc", "create", "--bundle", "/b2", "ctr2"],
    );
    let e = b2.engine();
    let k = e.process(102).unwrap().k8s.clone().expect("pod kept");
    assert_eq!(k.pod_text().as_deref(), Some("shop/web-7d9f"));
    assert_eq!(k.container_name, None);
}

/// `runc create --bundle /b ctr1` by `pid` (real uid `uid`, in pid namespace `ns`) naming pod
/// `pod` for ctr1.
fn runtime_names_pod(b: &mut Stream, pid: u32, uid: u32, pod: &str, ns: Option<PidNs>) {
    b.born(1, pid, 1, 0, ns);
    b.exec(
        pid,
        "/usr/sbin/runc",
        &["runc", "create", "--bundle", "/b", "ctr1"],
    );
    let meta = PodAnnotations::new("shop", pod).meta(pid, "ctr1");
    b.push(pid, pid, "runc", meta);
    let n = b.events.len();
    for ev in &mut b.events[n - 2..] {
        ev.uid = uid;
    }
}

#[test]
fn only_a_root_runtime_names_a_container_and_the_first_name_stands() {
    use crate::lineage::WarningKind as W;
    // A user's fake runtime first: ignored, then the real one names it.
    let mut b = Stream::default();
    runtime_names_pod(&mut b, 100, 1000, "not-mine", None);
    // Root inside a container (a child pid namespace), with a bundle of its own making.
    runtime_names_pod(&mut b, 150, 0, "from-a-container", ns(CTR_NS, 1, 7));
    runtime_names_pod(&mut b, 200, 0, "web", ns(HOST_NS, 0, 200));
    // Later, a root runtime with another pod's bundle for the same container id.
    runtime_names_pod(&mut b, 300, 0, "other", None);
    let e = b.engine();
    for pid in [100, 150, 200, 300] {
        let k = e.process(pid).unwrap().k8s.clone();
        assert_eq!(
            k.and_then(|k| k.pod_text()).as_deref(),
            Some("shop/web"),
            "pid {pid}"
        );
    }
    let kinds: Vec<W> = e.warnings().iter().map(|w| w.kind).collect();
    assert!(
        kinds.contains(&W::IdentityNotFromRoot {
            pid: 100,
            uid: 1000
        }),
        "{kinds:?}"
    );
    assert!(
        kinds.contains(&W::IdentityConflict { pid: 300 }),
        "{kinds:?}"
    );
}

#[test]
fn tree_json_lists_warnings_with_seq_pid_kind_and_text() {
    let mut b = Stream::default();
    b.fork(1, 2);
    push_ghost(&mut b);
    let e = b.engine();
    let v = tree_json(&e);
    assert_eq!(v["warning_count"], 1);
    let w = &v["warnings"][0];
    assert_eq!(w["kind"], "unknown_pid");
    assert_eq!(w["pid"], 9000);
    assert_eq!(w["seq"], e.warnings()[0].seq);
    assert!(w["text"].as_str().unwrap().contains("unknown pid 9000"));

    // Input warnings come first, without seq or pid, and count.
    let mut out = Vec::new();
    crate::lineage::write_tree_json(
        &e,
        &[crate::lineage::JsonWarning::input("no end record")],
        None,
        &mut out,
    )
    .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["warning_count"], 2);
    assert_eq!(
        v["warnings"][0],
        serde_json::json!({"seq": null, "pid": null, "kind": "input", "text": "no end record"})
    );
    assert_eq!(v["processes"], tree_json(&e)["processes"]);
}

/// A name a traced process chose (an OSC title sequence) never reaches the terminal raw.
const HOSTILE: &str = "\x1b]0;PWNED\x07";

fn no_raw_control(text: &str) {
    assert!(
        !text.chars().any(|c| c.is_control() && c != '\n'),
        "raw control byte in {text:?}"
    );
}

#[test]
fn hostile_names_are_escaped_in_the_text_tree_and_stories() {
    let mut b = Stream::default();
    b.fork(1, 2);
    b.exec_comm(2, 2, "/tmp/x\x1b[2J", &["x\x1b[2J", "\t"], HOSTILE);
    let e = b.engine();
    let t = tree_text(&e, TreeOpts::default());
    no_raw_control(&t);
    assert!(t.contains("2 \\33]0;PWNED\\7"), "{t}");
    let story = Story {
        phase: Phase::Birth,
        attempt: None,
        previous_init: None,
        container_id: Some(format!("cid{HOSTILE}")),
        kind: StoryKind::Containerd,
        runtime: Some(HOSTILE.into()),
        shim_pid: None,
        runtime_pid: None,
        init_pid: 2,
        workload: Some(HOSTILE.into()),
        pod: Some(HOSTILE.into()),
        container_name: Some(HOSTILE.into()),
        sandbox_id: Some(HOSTILE.into()),
        sandbox: false,
        steps: vec![StoryStep {
            kind: StepKind::ShimStarted,
            seq: 1,
            ts_ns: 0,
            time: None,
            pid: 2,
            text: format!("{HOSTILE} 2 started"),
            facts: Default::default(),
        }],
        terminated: None,
        restart: None,
        runtime_restart: None,
    };
    let s = story_text(&[story]);
    no_raw_control(&s);
    assert!(s.contains("cid\\33]0;PWNED\\7"), "{s}");
    // JSON keeps the real bytes (serde escapes them as \u001b).
    let j = serde_json::to_string(&tree_json(&e)).unwrap();
    no_raw_control(&j);
    let v: serde_json::Value = serde_json::from_str(&j).unwrap();
    let p2 = v["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pid"] == 2)
        .unwrap();
    assert_eq!(p2["comm"], HOSTILE);
}
