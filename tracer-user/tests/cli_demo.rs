//! `tracer demo` replays the embedded recording with no root, no BPF and no LLVM: run as
//! `nobody` when the tests run as root, else as whoever runs them.

#[allow(dead_code)]
#[path = "../../tests/src/prereq.rs"]
mod prereq;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

const TRACER: &str = env!("CARGO_BIN_EXE_tracer");

/// `tracer demo ARGS` as nobody (or as whoever runs the tests): its stdout and stderr.
fn run_demo(args: &[&str]) -> Option<(String, String)> {
    let out = if prereq::is_root() {
        let found = ["/usr/bin/setpriv", "/bin/setpriv"]
            .into_iter()
            .find(|p| Path::new(p).is_file());
        let why = "as root the test drops to nobody with setpriv (Debian package util-linux)";
        if !prereq::require("setpriv", found.is_some(), why) {
            return None;
        }
        let setpriv = found?;
        // A copy nobody can read and run, wherever the workspace is; one directory per call
        // (the tests run at the same time).
        static CALLS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("tracer-demo-nobody-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let copy = dir.join("tracer");
        std::fs::copy(TRACER, &copy).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
        let out = Command::new(setpriv)
            .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"])
            .arg(&copy)
            .arg("demo")
            .args(args)
            .current_dir(&dir)
            .output()
            .unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        out
    } else {
        Command::new(TRACER)
            .arg("demo")
            .args(args)
            .output()
            .unwrap()
    };
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "tracer demo failed: {stderr}");
    Some((stdout, stderr))
}

#[test]
fn demo_runs_without_root() {
    let Some((stdout, stderr)) = run_demo(&["containerd"]) else {
        return;
    };
    // The strace-like replay, the tree and the stories of the two containers.
    assert!(stdout.contains("PR_SET_CHILD_SUBREAPER"), "{stdout}");
    assert!(stdout.contains("containerd-shim"), "{stdout}");
    assert!(stdout.contains("runc:[2:INIT]"), "{stdout}");
    assert!(stdout.contains("== container stories"), "{stdout}");
    assert!(stderr.contains("2 container births"), "{stderr}");
}

/// Plain `tracer demo` is the pod lab: sandboxes, CNI plugins, containers under each pod's
/// one shim, and their stories.
#[test]
fn demo_pod_is_the_default() {
    let Some((stdout, stderr)) = run_demo(&[]) else {
        return;
    };
    assert_eq!(Some((stdout.clone(), stderr.clone())), run_demo(&["pod"]));
    assert!(stderr.contains("demo:pod.trace"), "{stderr}");
    for want in [
        "pause [sandbox]",
        "bridge [cni-plugin]",
        "host-local [cni-plugin]",
        ": sandbox ",
        ": container ",
        "cni plugin bridge",
        "found the pod's shim",
        "(containerd, runc create) → pause",
    ] {
        assert!(stdout.contains(want), "{want:?} not in:\n{stdout}");
    }
    // Two pods: two sandbox births, each a pod of its own; both pods were removed.
    let sandboxes = |phase: &str| {
        stdout
            .lines()
            .filter(|l| l.contains(": sandbox ") && l.ends_with(phase))
            .count()
    };
    assert_eq!(sandboxes("→ pause"), 2, "{stdout}");
    assert_eq!(sandboxes("→ pause [death]"), 2, "{stdout}");
    // The CRI ExecSync into `master` is an exec, not a third container of the pod.
    assert!(
        stdout.contains("(master) (containerd, runc exec) → cat [exec]"),
        "{stdout}"
    );
    assert!(stdout.contains("not its pid 1 (setns)"), "{stdout}");
}

/// `tracer demo lifecycle`: the rest of a container's life, from the bundled recording of the
/// pod lab's `--lifecycle` pod.
#[test]
fn demo_lifecycle_tells_execs_deaths_and_a_restart() {
    let Some((stdout, stderr)) = run_demo(&["lifecycle"]) else {
        return;
    };
    assert!(stderr.contains("demo:lifecycle.trace"), "{stderr}");
    for want in [
        "(app) (containerd, runc exec) → cat [exec]",
        "nothing was orphaned",
        "adopted by",
        "(crasher) (containerd) → sh [death]",
        "exited with 3",
        "[restart, attempt 1]",
        "the OOM killer chose init sh",
        "OOM-killed in cgroup",
        "(run by the shim) sent SIGTERM (SI_USER)",
        "— ignored: a namespace's pid 1 without a handler for it never gets it",
        "after SIGTERM (the grace period)",
        "with its pid namespace",
        "got SIGCHLD (CLD_KILLED)",
        "cni plugin bridge",
        "ran after the sandbox died",
        "(OOMKilled)",
    ] {
        assert!(stdout.contains(want), "{want:?} not in:\n{stdout}");
    }
}

/// The hidden `--screenshot COLSxROWS` (for the docs generator): the viewer's opening frame,
/// guided, as plain text, with no terminal; a bad size is one line and exit 1.
#[test]
fn demo_screenshot_prints_the_guided_opening_frame() {
    let out = Command::new(TRACER)
        .args(["demo", "--screenshot", "80x24"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(text.lines().count(), 24, "{text}");
    assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
    assert!(
        text.contains("guided · stories") && text.contains("── why: "),
        "{text}"
    );
    assert!(!text.contains('\x1b'), "plain text: {text:?}");
    // The status bar is a whole line: the shell's prompt after it starts on its own.
    let last = text.rsplit_terminator('\n').next().unwrap_or_default();
    assert!(
        text.ends_with('\n') && last.contains("REPLAY"),
        "{:?}",
        &text[text.len().saturating_sub(40)..]
    );
    let out = Command::new(TRACER)
        .args(["demo", "--screenshot", "80by24"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("COLSxROWS"), "{err}");
}

/// `tracer demo restart`: containerd restarted by its supervisor (the lab's restart loop)
/// while its container and an exec'd process live on under their shim; `tracer story` on the
/// bundled file tells the restart and the survivors.
#[test]
fn demo_restart_tells_what_survived_the_runtime_restart() {
    let Some((stdout, stderr)) = run_demo(&["restart"]) else {
        return;
    };
    assert!(stderr.contains("demo:restart.trace"), "{stderr}");
    assert!(stderr.contains("1 container births"), "{stderr}");
    assert!(
        stdout.contains("container lab-r (containerd, runc create) → sleep"),
        "{stdout}"
    );
    // The restart is a story of the list, between the exec's and the death's (by its seq).
    assert!(
        stdout.contains("\n#3 runtime daemon containerd restarted: 2058 → 2173, 3 lived on, 0 lost [runtime_restart]\n"),
        "{stdout}"
    );
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/demo/restart.trace");
    let out = Command::new(TRACER)
        .arg("story")
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let story = String::from_utf8_lossy(&out.stdout);
    // The old daemon's end and who signalled it, then the shim (adopted by PID 1), the
    // container's init and the exec'd sleep, each with the parent it had before; the new
    // daemon.
    let steps: Vec<&str> = story
        .lines()
        .skip_while(|l| !l.starts_with("#3 runtime daemon containerd restarted: "))
        .skip(1)
        .take_while(|l| l.starts_with("  [seq"))
        .collect();
    assert!(
        steps[0].ends_with("containerd 2058 exited with 0, after SIGTERM sent by 2046 (make-demo)"),
        "{story}"
    );
    let survivors: Vec<&&str> = steps.iter().filter(|l| l.contains(" lives on: ")).collect();
    assert_eq!(survivors.len(), 3, "{story}");
    assert!(survivors[0].contains("shim 2092 (containerd-shim) lives on: parent 1 "));
    assert!(survivors[1..]
        .iter()
        .all(|l| l.contains("lives on: parent 2092 ")));
    assert!(
        steps.iter().any(|l| l.contains("containerd 2173 started")),
        "{story}"
    );
}

/// `tracer ARGS` run in `dir`: status, stdout, stderr.
fn in_dir(dir: &Path, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(TRACER)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}

/// `demo:NAME` is the bundled demo even beside a file of that name, which is `./demo:NAME`;
/// the user hears so once, when writing such a file and when reading the name.
#[test]
fn demo_name_beside_a_file_of_that_name_is_the_demo_and_says_so_once() {
    let dir = std::env::temp_dir().join(format!("tracer-demo-shadow-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // The containerd demo, written under the pod demo's name.
    let (ok, _, err) = in_dir(&dir, &["demo", "containerd", "-o", "demo:pod"]);
    assert!(ok, "{err}");
    assert!(err.contains("read it as ./demo:pod"), "{err}");
    let (_, bundled, _) = in_dir(Path::new("/"), &["tree", "demo:pod"]);
    let (_, containerd, _) = in_dir(Path::new("/"), &["tree", "demo:containerd"]);
    assert_ne!(bundled, containerd);

    // `export --pod` opens the input twice (to find the pod, then to export it): the note is
    // still one line.
    for args in [
        &["tree", "demo:pod"][..],
        &["export", "--format", "jsonl", "demo:pod", "--pod", "web"],
    ] {
        let (ok, out, err) = in_dir(&dir, args);
        assert!(ok, "{err}");
        let notes: Vec<&str> = err.lines().filter(|l| l.contains("bundled demo")).collect();
        assert_eq!(notes.len(), 1, "{args:?}: {err}");
        assert!(notes[0].contains("./demo:pod"), "{err}");
        if args.len() == 2 {
            assert_eq!(out, bundled);
        }
    }
    let (ok, local, err) = in_dir(&dir, &["tree", "./demo:pod"]);
    assert!(ok && !err.contains("bundled demo"), "{err}");
    assert_eq!(local, containerd);
    // No file beside it: not a word.
    let (_, _, err) = in_dir(Path::new("/"), &["tree", "demo:pod"]);
    assert!(!err.contains("bundled demo"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `tracer ARGS`: status, stdout, stderr.
fn tracer(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(TRACER).args(args).output().unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}

/// `tracer story` numbers its stories as `--story` takes them, and `--story N|CONTAINER|KIND`
/// picks the same one in `story`, `export`, `view` and `demo`; the truth is the JSON list's
/// own fields (container name, phase), not the text being checked.
#[test]
fn stories_are_numbered_and_story_selects_one_everywhere() {
    let (ok, json, err) = tracer(&["story", "demo:lifecycle", "--format", "json"]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let list = v["stories"].as_array().unwrap().clone();
    for (i, s) in list.iter().enumerate() {
        assert_eq!(s["number"], i + 1, "{s}");
    }
    let first = |f: &dyn Fn(&serde_json::Value) -> bool| list.iter().position(f).unwrap() + 1;
    let hog_death = first(&|s| s["container_name"] == "hog" && s["phase"] == "death");
    let a_death = first(&|s| s["phase"] == "death");
    let hog = first(&|s| s["container_name"] == "hog");
    let (ok, text, err) = tracer(&["story", "demo:lifecycle"]);
    assert!(ok, "{err}");
    let heads: Vec<&str> = text.lines().filter(|l| l.starts_with('#')).collect();
    assert_eq!(heads.len(), list.len(), "{text}");
    for (i, h) in heads.iter().enumerate() {
        assert!(h.starts_with(&format!("#{} pod ", i + 1)), "{h}");
    }
    for (sel, n) in [
        ("hog:death", hog_death),
        ("death", a_death),
        ("hog", hog),
        ("7", 7),
    ] {
        let (ok, text, err) = tracer(&["story", "demo:lifecycle", "--story", sel]);
        assert!(ok, "{sel}: {err}");
        let heads: Vec<&str> = text.lines().filter(|l| l.starts_with('#')).collect();
        assert_eq!(heads, [heads_of(&list, n)], "{sel}");
    }
    assert_an_unknown_story_is_refused_everywhere(list.len());
    assert_the_viewer_opens_at_the_story(&list, hog_death);
    let (ok, svg, err) = tracer(&[
        "export",
        "demo:lifecycle",
        "--format",
        "svg",
        "--story",
        "hog:death",
    ]);
    assert!(ok && svg.contains("<svg"), "{err}");
    assert!(err.contains("1 stories") || svg.contains("hog"), "{err}");
}

/// An unknown story: one line saying what the recording has (its `stories` stories, hog
/// among them), on every command that takes `--story`.
fn assert_an_unknown_story_is_refused_everywhere(stories: usize) {
    for args in [
        &["story", "demo:lifecycle", "--story", "hog:exec"][..],
        &[
            "export",
            "demo:lifecycle",
            "--format",
            "svg",
            "--story",
            "hog:exec",
        ],
        &[
            "view",
            "demo:lifecycle",
            "--story",
            "hog:exec",
            "--screenshot",
            "100x30",
        ],
        &[
            "demo",
            "lifecycle",
            "--story",
            "hog:exec",
            "--screenshot",
            "100x30",
        ],
    ] {
        let (ok, _, err) = tracer(args);
        assert!(!ok, "{args:?}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(
            err.contains(&format!("{} stories", stories)) && err.contains("hog"),
            "{err}"
        );
    }
}

/// The viewer (`view` and `demo`) with `--story hog:death` opens guided at that story's first
/// step; `n` is its number in `list`.
fn assert_the_viewer_opens_at_the_story(list: &[serde_json::Value], n: usize) {
    let step_seq = list[n - 1]["steps"][0]["seq"].as_u64().unwrap();
    for args in [
        &[
            "view",
            "demo:lifecycle",
            "--story",
            "hog:death",
            "--screenshot",
            "120x40",
        ][..],
        &[
            "demo",
            "lifecycle",
            "--story",
            "hog:death",
            "--screenshot",
            "120x40",
        ],
    ] {
        let (ok, screen, err) = tracer(args);
        assert!(ok, "{err}");
        assert!(
            screen.contains(&format!("step seq {step_seq} ")),
            "{screen}"
        );
        assert!(screen.contains(&format!("▸ {step_seq:>6}")), "{screen}");
        assert!(
            screen.contains("container hog (containerd) → sh [death]"),
            "{screen}"
        );
    }
}

/// The `#N` header `tracer story` prints for story `n` of `list`, from its JSON fields.
fn heads_of(list: &[serde_json::Value], n: usize) -> String {
    let s = &list[n - 1];
    let name = s["container_name"].as_str().unwrap_or_default();
    let (ok, text, _) = tracer(&["story", "demo:lifecycle"]);
    assert!(ok);
    let h = text
        .lines()
        .find(|l| l.starts_with(&format!("#{n} ")))
        .unwrap_or_default()
        .to_string();
    assert!(h.contains(&format!("({name})")), "{h}");
    let phase = s["phase"].as_str().unwrap_or_default();
    assert_eq!(phase == "birth", !h.ends_with(']'), "{h}");
    assert!(phase == "birth" || h.contains(&format!("[{phase}")), "{h}");
    h
}
