//! `--pod NAME` on a recording: `story`, `export` and `replay` keep one pod's births and
//! events (the bundled pod lab holds two pods, `tracer-lab/web` and `tracer-lab/shared`).

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

const TRACER: &str = env!("CARGO_BIN_EXE_tracer");

fn pod_trace() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/demo/pod.trace")
        .display()
        .to_string()
}

fn run(args: &[&str]) -> Output {
    Command::new(TRACER)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn ok(args: &[&str]) -> String {
    let out = run(args);
    assert!(
        out.status.success(),
        "tracer {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn json(args: &[&str]) -> serde_json::Value {
    serde_json::from_str(&ok(args)).unwrap()
}

fn jsonl(args: &[&str]) -> Vec<serde_json::Value> {
    ok(args)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The container inits of each pod, from the unfiltered stories.
fn inits(all: &serde_json::Value, pod: &str) -> Vec<u64> {
    all["stories"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["pod"] == pod)
        .map(|s| s["init_pid"].as_u64().unwrap())
        .collect()
}

#[test]
fn story_and_export_keep_one_pod() {
    let f = pod_trace();
    let all = json(&["story", &f, "--format", "json"]);
    let (web, shared) = (
        inits(&all, "tracer-lab/web"),
        inits(&all, "tracer-lab/shared"),
    );
    assert!(!web.is_empty() && !shared.is_empty());

    // By name or namespace/name: the pod's births, all of them, nothing else.
    for name in ["shared", "tracer-lab/shared"] {
        let only = json(&["story", &f, "--pod", name, "--format", "json"]);
        assert_eq!(inits(&only, "tracer-lab/shared"), shared);
        assert_eq!(only["stories"].as_array().unwrap().len(), shared.len());
    }

    let every = jsonl(&["export", &f, "--format", "jsonl"]);
    let kept = jsonl(&["export", &f, "--pod", "web", "--format", "jsonl"]);
    assert!(kept.len() < every.len());
    assert!(
        kept.iter().all(|e| every.contains(e)),
        "only the recording's events"
    );
    for pid in &web {
        let of = |evs: &[serde_json::Value]| evs.iter().filter(|e| e["tgid"] == *pid).count();
        assert_eq!(of(&kept), of(&every), "every event of web's init {pid}");
    }
    assert!(kept.iter().all(|e| !shared
        .iter()
        .any(|pid| e["tgid"] == *pid || e["child_tgid"] == *pid)));

    let lines = ok(&["replay", &f, "--pod", "web", "--no-tui"]);
    assert!(
        web.iter()
            .all(|pid| lines.contains(&format!("[pid {pid:>6}]"))),
        "{lines}"
    );
    assert!(
        shared
            .iter()
            .all(|pid| !lines.contains(&format!("[pid {pid:>6}]"))),
        "{lines}"
    );
}

#[test]
fn a_pod_that_is_not_there_or_stdin_is_a_one_line_error() {
    let f = pod_trace();
    for args in [
        vec!["story", f.as_str(), "--pod", "nope"],
        vec!["export", f.as_str(), "--pod", "nope", "--format", "jsonl"],
        vec!["replay", "-", "--pod", "web", "--no-tui"],
        vec!["tree", "nats://127.0.0.1:1/*"],
    ] {
        let out = run(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

/// `-n NS` alone is every pod of that namespace, for every command that takes a pod; a
/// namespace without pods is one line and status 1; `--container` needs `--pod` or `-n`.
#[test]
fn a_namespace_alone_is_every_pod_of_it() {
    let t = pod_trace();
    // The values of one field (a JSON pointer) over a tree's processes.
    let field = |v: &serde_json::Value, at: &str| -> std::collections::BTreeSet<String> {
        v["processes"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|p| p.pointer(at)?.as_str().map(String::from))
            .collect()
    };
    let pods_in = |v: &serde_json::Value| field(v, "/pod/name");
    let every = json(&["tree", &t, "-n", "tracer-lab", "--format", "json"]);
    assert_eq!(pods_in(&every), ["shared", "web"].map(String::from).into());
    let web = json(&["tree", &t, "--pod", "web", "--format", "json"]);
    assert_eq!(pods_in(&web), ["web"].map(String::from).into());
    let stories = json(&["story", &t, "-n", "tracer-lab", "--format", "json"]);
    let all = json(&["story", &t, "--format", "json"]);
    let count = |v: &serde_json::Value| v["stories"].as_array().map_or(0, Vec::len);
    assert!(count(&stories) > 0, "{stories}");
    let pods_of_stories: std::collections::BTreeSet<&str> = stories["stories"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["pod"].as_str())
        .collect();
    assert_eq!(
        pods_of_stories,
        ["tracer-lab/shared", "tracer-lab/web"].into()
    );
    assert!(count(&stories) <= count(&all));
    let events = jsonl(&["export", &t, "--format", "jsonl", "-n", "tracer-lab"]);
    let web_events = jsonl(&["export", &t, "--format", "jsonl", "--pod", "web"]);
    assert!(
        events.len() > web_events.len(),
        "{} {}",
        events.len(),
        web_events.len()
    );
    let none = run(&["tree", &t, "-n", "nope"]);
    let err = String::from_utf8_lossy(&none.stderr);
    assert_eq!(none.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("no pod nope/* in the recording"), "{err}");
    let alone = run(&["tree", &t, "--container", "master"]);
    assert_eq!(alone.status.code(), Some(2), "{alone:?}");
    let master = json(&[
        "tree",
        &t,
        "-n",
        "tracer-lab",
        "--container",
        "master",
        "--format",
        "json",
    ]);
    assert_eq!(
        field(&master, "/container_name"),
        ["master"].map(String::from).into()
    );
}
