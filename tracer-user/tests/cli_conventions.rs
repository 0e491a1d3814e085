//! The command line's shared rules, end to end: `demo:NAME` wherever a FILE is taken and
//! `demo NAME -o FILE`; one `--pod` rule (no match is one line and exit 1; a sandbox-id
//! prefix, `namespace/name`, `-n`, `--container`); `-o` refusing a bare format word and a
//! symlink; `--ring-bytes` checked at parse time; `-f` accepted.

#[allow(dead_code)] // `sample` is for the trace-file suites
mod common;

use common::{temp, text, tracer, TRACER};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// The bundled pod lab as committed (the truth `demo:pod` must equal).
fn pod_fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/demo/pod.trace")
}

/// `tracer ARGS` run in `dir`, stdin closed.
fn tracer_in(dir: &std::path::Path, args: &[&str]) -> Output {
    Command::new(TRACER)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn ok(args: &[&str]) -> String {
    let out = tracer(args);
    assert!(
        out.status.success(),
        "tracer {args:?}: {}",
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// Asserts `tracer ARGS` failed with status `code` and one stderr line; returns the line.
fn one_line_error(out: &Output, code: i32) -> String {
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{err}");
    assert_eq!(err.lines().count(), 1, "{err:?}");
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
    err
}

#[test]
fn a_demo_is_a_file_everywhere_and_an_unknown_one_is_one_line() {
    let fixture = pod_fixture();
    let f = fixture.to_str().unwrap();
    for cmd in [
        &["tree"][..],
        &["story", "--explain"],
        &["export", "--format", "jsonl"],
    ] {
        let from_file = ok(&[cmd, &[f]].concat());
        let from_demo = ok(&[cmd, &["demo:pod"]].concat());
        assert!(!from_demo.is_empty());
        assert_eq!(from_demo, from_file, "{cmd:?}");
    }
    ok(&["replay", "demo:containerd", "--no-tui"]);
    for cmd in ["tree", "story", "export", "replay", "view", "import-strace"] {
        let out = tracer(&[cmd, "demo:nosuch"]);
        let err = text(&out.stderr);
        assert!(!out.status.success(), "{cmd}");
        if cmd == "export" || cmd == "import-strace" {
            continue; // their required flags are said first
        }
        assert_eq!(err.lines().count(), 1, "{cmd}: {err}");
        assert!(
            err.contains("no bundled demo nosuch (demos: pod, containerd"),
            "{err}"
        );
    }
}

#[test]
fn demo_o_file_writes_the_embedded_recording() {
    let dir = temp("cli_conventions", "demo_o");
    let out = tracer_in(&dir, &["demo", "pod", "-o", "pod.trace"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let written = std::fs::read(dir.join("pod.trace")).unwrap();
    assert_eq!(written, std::fs::read(pod_fixture()).unwrap());
    // What it wrote reads as the demo does.
    let path = dir.join("pod.trace");
    assert_eq!(
        ok(&["tree", path.to_str().unwrap()]),
        ok(&["tree", "demo:pod"])
    );
    // Never through a symlink.
    let target = dir.join("victim");
    std::fs::write(&target, b"keep").unwrap();
    std::os::unix::fs::symlink(&target, dir.join("link")).unwrap();
    let out = tracer_in(&dir, &["demo", "pod", "-o", "link"]);
    assert!(one_line_error(&out, 1).contains("symbolic link"));
    assert_eq!(std::fs::read(&target).unwrap(), b"keep");
}

#[test]
fn a_pod_that_is_not_there_is_one_line_and_exit_1_for_every_command() {
    for args in [
        &["tree", "demo:pod", "--pod", "nosuch"][..],
        &["tree", "demo:pod", "--pod", "nosuch", "--format", "json"],
        &["story", "demo:pod", "--pod", "nosuch"],
        &["export", "demo:pod", "--format", "jsonl", "--pod", "nosuch"],
        &["replay", "demo:pod", "--no-tui", "--pod", "nosuch"],
        &["view", "demo:pod", "--pod", "nosuch"],
        &["tree", "demo:pod", "--pod", "web", "-n", "default"],
        &["story", "demo:pod", "--pod", "web", "--container", "nosuch"],
        &["view", "demo:pod", "--pod", "web", "--container", "nosuch"],
        &["demo", "pod", "--no-tui", "--pod", "nosuch"],
        &[
            "demo",
            "--screenshot",
            "80x24",
            "--pod",
            "web",
            "--container",
            "nosuch",
        ],
        &[
            "replay",
            "demo:pod",
            "--guided",
            "--pod",
            "web",
            "--container",
            "nosuch",
        ],
    ] {
        let err = one_line_error(&tracer(args), 1);
        assert!(err.starts_with("tracer: demo:pod: "), "{args:?}: {err}");
    }
    let err = one_line_error(&tracer(&["tree", "demo:pod", "--pod", "nosuch"]), 1);
    assert_eq!(
        err,
        "tracer: demo:pod: no pod nosuch in the recording (pods: tracer-lab/shared, tracer-lab/web)\n"
    );
}

/// The web pod's sandbox id, from the recording's stories.
fn web_sandbox_id() -> String {
    let all: serde_json::Value =
        serde_json::from_str(&ok(&["story", "demo:pod", "--format", "json"])).unwrap();
    let stories = all["stories"].as_array().unwrap();
    let web = stories
        .iter()
        .find(|s| s["pod"] == "tracer-lab/web")
        .unwrap();
    web["sandbox_id"].as_str().unwrap().to_string()
}

#[test]
fn a_sandbox_id_prefix_a_uid_and_namespace_name_all_select_the_pod() {
    let by_name = ok(&["tree", "demo:pod", "--pod", "tracer-lab/web"]);
    assert!(by_name.contains("<pod tracer-lab/web"), "{by_name}");
    assert!(!by_name.contains("tracer-lab/shared"), "{by_name}");
    let sid = web_sandbox_id();
    let tree: serde_json::Value =
        serde_json::from_str(&ok(&["tree", "demo:pod", "--format", "json"])).unwrap();
    let uid = tree["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pod"]["name"] == "web")
        .map(|p| p["pod"]["uid"].as_str().unwrap().to_string())
        .unwrap();
    assert!(!uid.is_empty());
    // crictl prints 13 digits.
    for pod in [&sid[..13], &sid, "web", &uid] {
        assert_eq!(ok(&["tree", "demo:pod", "--pod", pod]), by_name, "{pod}");
    }
    assert_eq!(
        ok(&["tree", "demo:pod", "-n", "tracer-lab", "--pod", "web"]),
        by_name
    );
    let stories = ok(&["story", "demo:pod", "--pod", &sid[..13]]);
    assert_eq!(
        stories,
        ok(&["story", "demo:pod", "--pod", "tracer-lab/web"])
    );
    assert!(stories.starts_with("#1 pod tracer-lab/web: "), "{stories}");
}

#[test]
fn container_keeps_one_containers_stories_processes_and_events() {
    let json = |args: &[&str]| -> serde_json::Value { serde_json::from_str(&ok(args)).unwrap() };
    let s = json(&[
        "story",
        "demo:pod",
        "--format",
        "json",
        "--pod",
        "web",
        "--container",
        "sidecar",
    ]);
    let names: Vec<&str> = s["stories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|st| st["container_name"].as_str().unwrap_or("-"))
        .collect();
    assert!(
        !names.is_empty() && names.iter().all(|n| *n == "sidecar"),
        "{names:?}"
    );
    let tree = ok(&["tree", "demo:pod", "--pod", "web", "--container", "sidecar"]);
    assert!(
        tree.contains("· sidecar>") && tree.contains("sleep [container]"),
        "{tree}"
    );
    // The pod's shim is the sidecar's ancestor; the sandbox's pause and master are not.
    assert!(
        !tree.contains("· master>") && !tree.contains("pause"),
        "{tree}"
    );
    let lines = |args: &[&str]| ok(args).lines().count();
    let pod = lines(&["export", "demo:pod", "--format", "jsonl", "--pod", "web"]);
    let one = lines(&[
        "export",
        "demo:pod",
        "--format",
        "jsonl",
        "--pod",
        "web",
        "--container",
        "sidecar",
    ]);
    assert!(0 < one && one < pod, "{one} of {pod}");
}

/// The pids of `tracer tree demo:pod --format json` with `scope` (the text command's truth).
fn tree_pids(scope: &[&str]) -> std::collections::BTreeSet<u64> {
    let tree: serde_json::Value =
        serde_json::from_str(&ok(
            &[&["tree", "demo:pod", "--format", "json"], scope].concat()
        ))
        .unwrap();
    let pids: std::collections::BTreeSet<u64> = tree["processes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["pid"].as_u64().unwrap())
        .collect();
    assert!(!pids.is_empty(), "{scope:?}");
    pids
}

/// Does the screen's tree pane have a row for `pid` (a root at the line's start, or below a
/// branch; the log pane writes `[pid  N]`, the detail pane `│N`)?
fn has_tree_row(screen: &str, pid: u64) -> bool {
    screen
        .lines()
        .any(|l| l.starts_with(&format!("{pid} ")) || l.contains(&format!("─ {pid} ")))
}

#[test]
fn the_viewer_with_container_shows_what_tree_and_story_show_of_it() {
    let web = ["--pod", "tracer-lab/web"];
    let sidecar = [&web[..], &["--container", "sidecar"]].concat();
    let shown = tree_pids(&sidecar);
    let master_only: Vec<u64> = tree_pids(&[&web[..], &["--container", "master"]].concat())
        .difference(&shown)
        .copied()
        .collect();
    assert!(!master_only.is_empty());
    let view = |extra: &[&str]| {
        ok(&[
            &["view", "demo:pod", "--screenshot", "200x60"],
            &sidecar[..],
            extra,
        ]
        .concat())
    };
    let end = view(&["--end"]);
    for pid in &shown {
        assert!(has_tree_row(&end, *pid), "{pid} missing:\n{end}");
    }
    for pid in &master_only {
        assert!(!has_tree_row(&end, *pid), "{pid} of master shown:\n{end}");
    }
    let status = end.lines().last().unwrap();
    assert!(
        status.contains("pod tracer-lab/web · container sidecar"),
        "{status}"
    );
    // The story pane (guided) lists the container's stories, as `story` does.
    let stories: serde_json::Value = serde_json::from_str(&ok(&[
        &["story", "demo:pod", "--format", "json"],
        &sidecar[..],
    ]
    .concat()))
    .unwrap();
    let n = stories["stories"].as_array().unwrap().len();
    let guided = view(&["--guided"]);
    assert!(
        guided.contains(&format!("guided · stories {n} (")),
        "{n}:\n{guided}"
    );
    let headers: Vec<&str> = guided
        .lines()
        .filter_map(|l| l.split_once("pod tracer-lab/web: ").map(|(_, h)| h))
        .collect();
    assert_eq!(headers.len(), n, "{guided}");
    assert!(
        headers.iter().all(|h| h.starts_with("container sidecar ")),
        "{headers:?}"
    );
}

/// `tracer demo --no-tui` with `--pod`/`--container` prints what `tree` and `story` print of
/// it; in the viewer, the status bar names the scope.
#[test]
fn demo_with_container_prints_what_tree_and_story_print() {
    let scope = ["--pod", "web", "--container", "sidecar"];
    let printed = ok(&[&["demo", "pod", "--no-tui"][..], &scope].concat());
    let section = |from: &str, to: Option<&str>| -> String {
        let start = printed.find(from).unwrap_or_else(|| panic!("{printed}")) + from.len();
        let end = to.map_or(printed.len(), |t| printed[start..].find(t).unwrap() + start);
        printed[start..end].trim_matches('\n').to_string()
    };
    let tree = ok(&[&["tree", "demo:pod"][..], &scope].concat());
    let story = ok(&[&["story", "demo:pod"][..], &scope].concat());
    assert!(
        tree.contains("· sidecar>") && !tree.contains("· master>"),
        "{tree}"
    );
    assert_eq!(
        section("== process tree at the end of the demo", Some("\n== ")),
        tree.trim_matches('\n')
    );
    assert_eq!(
        section(
            "== container stories: births, execs, deaths, restarts",
            None
        ),
        story.trim_matches('\n')
    );
    let shot = ok(&[&["demo", "--screenshot", "160x30"][..], &scope].concat());
    let status = shot.lines().last().unwrap();
    assert!(
        status.contains("pod tracer-lab/web · container sidecar"),
        "{status}"
    );
}

#[test]
fn o_with_a_format_word_is_one_line_suggesting_format() {
    let dir = temp("cli_conventions", "o_json");
    for args in [
        &["tree", "demo:pod", "-o", "json"][..],
        &["story", "demo:pod", "-o", "yaml"],
        &["export", "demo:pod", "--format", "dot", "-o", "dot"],
        &["import-strace", "demo:pod", "-o", "jsonl"],
        &["demo", "pod", "-o", "svg"],
        &["trace", "-p", "1", "-o", "json"],
        &["record", "-o", "perfetto", "--", "true"],
    ] {
        let word = args
            .last()
            .copied()
            .filter(|w| *w != "true")
            .unwrap_or("perfetto");
        let err = one_line_error(&tracer_in(&dir, args), 1);
        assert!(err.contains(&format!("--format {word}")), "{args:?}: {err}");
    }
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        0,
        "a file was written"
    );
    // A file of that name, said plainly, is written.
    let out = tracer_in(&dir, &["tree", "demo:pod", "-o", "./json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        std::fs::read_to_string(dir.join("json")).unwrap(),
        ok(&["tree", "demo:pod"])
    );
}

#[test]
fn tree_and_story_o_never_write_through_a_symlink() {
    let dir = temp("cli_conventions", "o_link");
    let target = dir.join("victim");
    std::fs::write(&target, b"keep").unwrap();
    std::os::unix::fs::symlink(&target, dir.join("link")).unwrap();
    for cmd in ["tree", "story"] {
        let err = one_line_error(&tracer_in(&dir, &[cmd, "demo:pod", "-o", "link"]), 1);
        assert!(err.contains("symbolic link"), "{err}");
        assert_eq!(std::fs::read(&target).unwrap(), b"keep");
        let out = tracer_in(&dir, &[cmd, "demo:pod", "-o", "out.txt"]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert_eq!(
            std::fs::read_to_string(dir.join("out.txt")).unwrap(),
            ok(&[cmd, "demo:pod"])
        );
    }
}

#[test]
fn a_ring_size_that_is_not_a_power_of_two_is_refused_before_anything_runs() {
    for (cmd, bytes) in [
        (&["trace"][..], "5000"),
        (&["record", "-o", "x"], "1000"),
        (&["tui"], "6144"),
    ] {
        let out = tracer(&[cmd, &["--ring-bytes", bytes, "--", "true"]].concat());
        let err = text(&out.stderr);
        // clap's usage error.
        assert_eq!(out.status.code(), Some(2), "{cmd:?}: {err}");
        assert!(err.contains("power of two"), "{cmd:?}: {err}");
    }
}

#[test]
fn f_is_accepted_like_strace() {
    // Parsed, then refused for what follows: `--duration` is not for the viewer.
    let out = tracer(&["tui", "-f", "--duration", "1"]);
    let err = one_line_error(&out, 1);
    assert!(err.contains("--duration is for `tracer trace`"), "{err}");
    let help = ok(&["trace", "--help"]);
    assert!(help.contains("-f, --follow-forks"), "{help}");
}

/// The long options a command's `--help` lists.
fn options(cmd: &str) -> Vec<String> {
    let help = ok(&[cmd, "--help"]);
    let mut opts: Vec<String> = help
        .split_whitespace()
        .filter(|w| w.starts_with("--") && w.len() > 2)
        .map(|w| w.trim_end_matches([',', '.', ')', ']']).to_string())
        .collect();
    opts.sort();
    opts.dedup();
    opts
}

#[test]
fn replay_and_view_share_their_flags() {
    let (replay, view) = (options("replay"), options("view"));
    for o in [
        "--speed",
        "--step",
        "--paused",
        "--end",
        "--guided",
        "--salvage",
        "--pod",
    ] {
        assert!(view.contains(&o.to_string()), "view lacks {o}: {view:?}");
    }
    let missing: Vec<&String> = view.iter().filter(|o| !replay.contains(o)).collect();
    assert!(missing.is_empty(), "replay lacks {missing:?}");
    // The old spelling of each still works where it was: `view --paused`, `replay --step`.
    let out = ok(&["replay", "demo:pod", "--no-tui", "--paused", "--pod", "web"]);
    assert!(out.contains("execve("), "{out}");
}

/// An `strace -ff -o PREFIX` set is one recording wherever a FILE is taken: by its prefix, or
/// every file given (`PREFIX.*`); a part of the set, or a file of another, is one line.
#[test]
fn an_strace_ff_set_is_one_recording_by_its_prefix_or_all_its_files() {
    let dir = temp("conventions", "ff");
    let corpus = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/strace/corpus");
    let mut files = Vec::new();
    for e in std::fs::read_dir(&corpus).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(pid) = name.strip_prefix("unshare-ff.log.") {
            std::fs::copy(e.path(), dir.join(format!("x.{pid}"))).unwrap();
            files.push(format!("x.{pid}"));
        }
    }
    files.sort();
    assert!(files.len() >= 4, "{files:?}");
    let by_prefix = tracer_in(&dir, &["tree", "x"]);
    assert!(by_prefix.status.success(), "{}", text(&by_prefix.stderr));
    assert!(text(&by_prefix.stderr).contains("files of an strace -ff set"));
    let mut all = vec!["tree"];
    all.extend(files.iter().map(String::as_str));
    let by_files = tracer_in(&dir, &all);
    assert_eq!(text(&by_files.stdout), text(&by_prefix.stdout));
    // the orphan of the double fork under the namespace's init, as in the whole log
    assert!(
        text(&by_prefix.stdout).contains("adopted"),
        "{}",
        text(&by_prefix.stdout)
    );
    let part = tracer_in(&dir, &["tree", &files[0], &files[1]]);
    assert_eq!(part.status.code(), Some(1));
    assert!(one_line_error(&part, 1).contains("give every file of the strace -ff set"));
    let other = tracer_in(&dir, &["tree", &files[0], "elsewhere.log"]);
    assert!(one_line_error(&other, 1).contains("is not a file of the strace -ff set"));
}
