//! The text and JSON views of the tree and the stories.

use super::*;

#[test]
fn tree_text_is_pstree_like() {
    let (b, _) = containerd_story();
    let e = b.engine();
    let opts = TreeOpts {
        show_exited: false,
        show_threads: true,
    };
    assert_eq!(
        tree_text(&e, opts),
        "1 systemd\n\
         ├─ 900 containerd [runtime-daemon] {2 threads}\n\
         └─ 1001 containerd-shim [shim] {cid:0123456789ab} {2 threads} (subreaper) ⤴ adopted ← 1000 exited\n   \
         \u{20} └─ 1013 sleep [container] {cid:0123456789ab} (CLONE_PARENT via 1012) ⤴ adopted ← 1010 exited\n"
            .replace("   \u{20} └─", "   └─")
    );
    let full = tree_text(&e, TreeOpts::default());
    assert!(
        full.contains("│  └─ 1000 containerd-shim [shim] {cid:0123456789ab} (exit 0)\n"),
        "{full}"
    );
    assert!(full.contains("1012 runc:[1:CHILD] [oci-init 1:CHILD] {cid:0123456789ab} (CLONE_PARENT via 1011) (exit 0)"), "{full}");
}

#[test]
fn tree_text_survives_deep_chains_and_marks_placeholders() {
    let mut b = Stream::default();
    b.fork(1, 2);
    for pid in 2..3000 {
        b.fork(pid, pid + 1);
    }
    push_ghost(&mut b);
    let e = b.engine();
    let t = tree_text(&e, TreeOpts::default());
    // The cut says how many are not drawn and how to see them: the chain below the last pid
    // drawn is every pid up to 3000.
    let cut = t
        .lines()
        .find(|l| l.contains("└─ … "))
        .expect("a depth cut");
    let words: Vec<&str> = cut.split_whitespace().collect();
    let hidden: usize = words[2].parse().unwrap();
    let below: u32 = words[5].parse().unwrap();
    assert_eq!(hidden, (3000 - below) as usize, "{cut}");
    assert!(
        cut.ends_with(&format!("see them with --root {below} or --format json")),
        "{cut}"
    );
    assert!(!t.contains("\n3000 ") && !t.contains(" 3000 ?"));
    // Following the advice reaches the deepest process.
    let mut root = below;
    for _ in 0..3 {
        let sub = crate::lineage::subtree_text(&e, root, TreeOpts::default()).unwrap();
        assert!(sub.starts_with(&format!("{root} ")), "{}", &sub[..100]);
        if sub.contains("└─ 3000 ") {
            root = 3000;
            break;
        }
        let cut = sub
            .lines()
            .find(|l| l.contains("└─ … "))
            .expect("a depth cut");
        root = cut.split_whitespace().nth(5).unwrap().parse().unwrap();
    }
    assert_eq!(root, 3000, "the deepest process is drawn below --root");
    assert!(crate::lineage::subtree_text(&e, 123_456, TreeOpts::default()).is_none());
    assert!(
        t.ends_with("9000 ghost (placeholder)\n"),
        "{}",
        &t[t.len() - 200..]
    );
}

#[test]
fn tree_json_has_the_documented_fields() {
    let (b, s) = containerd_story();
    let e = b.engine();
    let v = tree_json(&e);
    let procs = v["processes"].as_array().unwrap();
    let init = procs.iter().find(|p| p["pid"] == 1013).unwrap();
    assert_eq!(init["ppid"], 1001);
    assert_eq!(init["comm"], "sleep");
    assert_eq!(init["exe"], "/bin/sleep");
    assert_eq!(init["argv"], serde_json::json!(["sleep", "1000"]));
    assert_eq!(init["role"], "container");
    assert_eq!(init["container_id"], CID);
    assert_eq!(init["subreaper"], false);
    assert_eq!(init["exited"], false);
    assert_eq!(init["exit_code"], serde_json::Value::Null);
    assert_eq!(init["threads"], serde_json::json!([1013]));
    assert_eq!(
        init["lineage"],
        serde_json::json!([
            {"how": "clone_parent", "parent": 1010, "caller": 1012, "caller_tid": 1012, "flags": "CLONE_PARENT", "reason": null, "seq": s.init_clone, "time": null},
            {"how": "adopted", "parent": 1001, "caller": null, "caller_tid": null, "flags": null,
             "reason": "parent 1010 exited; nearest subreaper 1001", "seq": s.runc_exit, "time": null}
        ])
    );
    let shim_start = procs.iter().find(|p| p["pid"] == 1000).unwrap();
    assert_eq!(shim_start["exited"], true);
    assert_eq!(shim_start["exit_code"], 0);
    assert_eq!(
        procs.iter().find(|p| p["pid"] == 1001).unwrap()["subreaper"],
        true
    );
    assert_eq!(
        procs.iter().find(|p| p["pid"] == 1).unwrap()["lineage"][0]["how"],
        "snapshot"
    );
}

#[test]
fn story_views_render() {
    let (b, s) = containerd_story();
    let stories = stories(&b.engine());
    let v = story_json(&stories);
    assert_eq!(v["stories"][0]["kind"], "containerd");
    assert_eq!(v["stories"][0]["init_pid"], 1013);
    assert_eq!(v["stories"][0]["steps"][0]["kind"], "shim_started");
    assert_eq!(v["stories"][0]["steps"][15]["seq"], s.workload);
    let t = story_text(&stories);
    assert!(
        t.starts_with(&format!(
            "container {CID} (containerd, runc create) → sleep\n"
        )),
        "{t}"
    );
    assert_eq!(t.lines().count(), 17);
}
