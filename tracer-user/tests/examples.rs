//! The examples' behaviour, checked: each example keeps its logic in a `run` function that
//! these tests call directly (compiling the example file as a module).

#[cfg(feature = "tui")]
#[path = "../examples/synthetic.rs"]
mod synthetic;

#[path = "../examples/replay_stories.rs"]
mod replay_stories;

#[cfg(feature = "capture")]
#[path = "../examples/follow_lineage.rs"]
mod follow_lineage;

use std::path::Path;

/// A path relative to the workspace root.
fn workspace_file(rel: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(rel)
}

#[cfg(feature = "tui")]
#[test]
fn synthetic_prints_the_tree_and_the_adoption() {
    let mut out = Vec::new();
    synthetic::run(&mut out).unwrap();
    let out = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[..5],
        [
            "100 sh",
            "└─ 200 supervisor (subreaper)",
            "   ├─ 300 worker (exit 0)",
            "   ├─ 400 worker (CLONE_PARENT via 300)",
            "   └─ 500 sleep ⤴ adopted ← 300 exited",
        ],
        "{out}"
    );
    for want in [
        "400 worker: clone_parent → parent 200",
        "500 sleep: fork → parent 300",
        "500 sleep: adopted → parent 200 (parent 300 exited; nearest subreaper 200)",
    ] {
        assert!(lines.contains(&want), "missing {want:?} in:\n{out}");
    }
    assert!(!out.contains("warning"), "{out}");
}

#[test]
fn replay_stories_tells_the_runc_story_of_the_ctr_fixture() {
    let mut out = Vec::new();
    replay_stories::run(&workspace_file("tests/fixtures/strace/ctr.log"), &mut out).unwrap();
    let out = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].ends_with("ctr.log: strace log (598 events, 13 processes, 1 container births)"),
        "{out}"
    );
    for want in [
        "container fx-ctr (containerd, runc create) → sleep",
        "  [seq     33] shim containerd-shim 15921 started by containerd-shim 15913",
        "  [seq     74] shim 15921 set PR_SET_CHILD_SUBREAPER",
        "  [seq    126] 15938 cloned 15940 with CLONE_PARENT: parent 15931",
        "  [seq    366] init 15941 adopted by 15921 (parent 15931 exited; nearest subreaper 15921)",
        "  [seq    411] init 15941 exec'd /bin/sleep",
    ] {
        assert!(lines.contains(&want), "missing {want:?} in:\n{out}");
    }
    // One birth, and the container's death (the log ends after `ctr task kill`).
    let heads: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("container "))
        .collect();
    assert_eq!(
        heads,
        [
            "container fx-ctr (containerd, runc create) → sleep",
            "container fx-ctr (containerd) → sleep [death]"
        ],
        "{out}"
    );
}

#[cfg(feature = "capture")]
#[test]
#[ignore = "root"]
fn follow_lineage_reports_the_command_birth_and_exit() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let argv = ["sh", "-c", "true"].map(String::from).to_vec();
    let mut out = Vec::new();
    let never = std::future::pending::<()>();
    let timeout = std::time::Duration::from_secs(30);
    rt.block_on(async {
        tokio::time::timeout(
            timeout,
            follow_lineage::run(tracer::Target::Command(argv), &mut out, never),
        )
        .await
        .expect("the capture ends when sh exits")
        .unwrap()
    });
    let out = String::from_utf8(out).unwrap();
    let me = std::process::id();
    let birth = out
        .lines()
        .find(|l| l.starts_with("birth ") && l.contains(" sh: parent "))
        .unwrap_or_else(|| panic!("no birth of sh in:\n{out}"));
    // The tracer started it (held before its exec until followed): launched, not seen born.
    assert!(
        birth.ends_with(&format!("parent {me}, launched")),
        "{birth}"
    );
    let pid = birth.split_whitespace().nth(1).unwrap();
    assert!(
        out.lines()
            .any(|l| l.starts_with(&format!("exit     {pid} sh: exited with 0"))),
        "{out}"
    );
}

/// The kinds of the events a capture of `sh -c '/bin/true; /bin/true'` delivers with `kinds`
/// selected, with or without the syscall probes, in order.
#[cfg(feature = "capture")]
fn kinds_seen(
    rt: &tokio::runtime::Runtime,
    kinds: &[tracer::EventKindFilter],
    syscalls: bool,
) -> Vec<&'static str> {
    use futures_util::StreamExt;
    use tracer::{CaptureBuilder, CaptureItem, Target};
    let argv = ["sh", "-c", "/bin/true; /bin/true"]
        .map(String::from)
        .to_vec();
    let _runtime = rt.enter(); // start() registers the ring buffer with tokio.
    let cap = CaptureBuilder::new(Target::Command(argv))
        .kinds(kinds)
        .syscalls(syscalls)
        .start()
        .unwrap();
    rt.block_on(async {
        let items = cap.into_stream().collect::<Vec<_>>();
        let items = tokio::time::timeout(std::time::Duration::from_secs(30), items)
            .await
            .expect("the stream ends when sh exits");
        items
            .into_iter()
            .filter_map(|i| match i.unwrap() {
                CaptureItem::Event(ev) => Some(ev.kind.name()),
                CaptureItem::Notice(_) => None,
            })
            .collect()
    })
}

/// The capture stream with event-kind selection (the API `follow_lineage` is built on).
#[cfg(feature = "capture")]
#[test]
#[ignore = "root"]
fn capture_stream_honours_event_kinds() {
    use tracer::EventKindFilter;

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let names = |kinds: &[EventKindFilter], syscalls: bool| kinds_seen(&rt, kinds, syscalls);
    let only_lifecycle = names(&[], true);
    assert!(only_lifecycle.contains(&"fork"), "{only_lifecycle:?}");
    assert!(only_lifecycle.contains(&"task_exit"), "{only_lifecycle:?}");
    assert!(
        only_lifecycle
            .iter()
            .all(|k| *k == "fork" || *k == "task_exit"),
        "{only_lifecycle:?}"
    );
    let exec = names(&[EventKindFilter::Exec], true);
    assert!(
        exec.contains(&"exec") && exec.contains(&"exec_enter"),
        "{exec:?}"
    );
    assert!(
        !exec
            .iter()
            .any(|k| ["clone_enter", "exit_enter", "prctl_enter"].contains(k)),
        "{exec:?}"
    );
    let all = names(&EventKindFilter::ALL, true);
    assert!(
        all.contains(&"clone_enter") && all.contains(&"exit_enter"),
        "{all:?}"
    );
    // Without syscall probes: births, execs with argv and deaths; no syscall events. Each
    // SIGCHLD follows its death (do_exit → exit_notify), sh's own to this untraced process
    // too: raised by a followed process while it dies.
    let sched = names(&EventKindFilter::ALL, false);
    assert_eq!(
        sched,
        [
            "exec_enter",
            "exec",
            "fork",
            "exec_enter",
            "exec",
            "task_exit",
            "signal",
            "fork",
            "exec_enter",
            "exec",
            "task_exit",
            "signal",
            "task_exit",
            "signal"
        ],
    );
}
