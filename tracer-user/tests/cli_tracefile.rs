//! The trace-file commands end to end: replay, export (jsonl, perfetto, dot), damage handling.
//! (Hostile input, output errors and output files: cli_hostile.rs.)

#[allow(dead_code)]
#[path = "../../tests/src/prereq.rs"]
mod prereq;

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
use common::{sample, text, tracer};

fn temp(name: &str) -> PathBuf {
    common::temp("cli-tracefile", name)
}

// What the sample is known to hold, written out by hand from `synth::Storm`'s definition (not
// from any renderer): in round r the shell 1000 vforks child 2000+2r, which execs
// `/bin/true --round=r` and exits 0 (9 events); every 16th round (r = 15, 31, ...) is a container
// start instead (8 events): shim 900 forks runc 2000+2r, which clones init 2001+2r with
// CLONE_PARENT (so init's parent is 900) and exits 0; init is killed by SIGKILL.

/// The child of round `r`.
fn round_child(r: u32) -> u32 {
    2000 + 2 * r
}

#[test]
fn replay_prints_strace_lines_and_a_summary() {
    let dir = temp("replay");
    let (path, evs) = sample(&dir, 500);
    let out = tracer(&["replay", path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("execve(\"/bin/true\""), "{stdout}");
    // Same lines as the live renderer gives for the same events.
    let mut r = tracer::render::LineRenderer::new();
    let expected: Vec<String> = evs.iter().flat_map(|e| r.render(e)).collect();
    assert_eq!(stdout.lines().collect::<Vec<_>>(), expected);
    let stderr = text(&out.stderr);
    assert!(stderr.contains("replayed 500 events"), "{stderr}");
    // 500 events = 3 × 143 (15 plain rounds + 1 container) + 7 plain rounds + 8 events of a
    // 56th: containers in rounds 15, 31 and 47.
    assert!(stderr.contains("3 container births"), "{stderr}");

    // Independent of the renderer: the first round as strace would print it.
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines[..7],
        [
            "Process 2000 attached (parent 1000) by [pid 1000]",
            "[pid   1000] clone(flags=CLONE_VM|CLONE_VFORK|SIGCHLD <unfinished ...>",
            "[pid   2000] <... clone resumed>) = 0",
            r#"[pid   2000] execve("/bin/true", ["/bin/true", "--round=0"]) = 0"#,
            "[pid   1000] <... clone resumed>) = 2000",
            "[pid   2000] exit_group(0) = ?",
            "[pid   2000] +++ exited with 0 +++",
        ]
    );
    // Every plain round's exec (45 in the three whole cycles, 8 after), each with its round.
    let execs = lines
        .iter()
        .filter(|l| l.contains("execve(\"/bin/true\""))
        .count();
    assert_eq!(execs, 53);
    for r in (0..55).filter(|r| r % 16 != 15) {
        let c = round_child(r);
        let want = format!(r#"[pid {c:>6}] execve("/bin/true", ["/bin/true", "--round={r}"]) = 0"#);
        assert!(lines.contains(&want.as_str()), "missing {want}");
        let attached = format!("Process {c} attached (parent 1000) by [pid 1000]");
        assert!(lines.contains(&attached.as_str()), "missing {attached}");
    }
    for r in [15, 31, 47] {
        let (runc, init) = (round_child(r), round_child(r) + 1);
        for born in [runc, init] {
            let want = format!("Process {born} attached (parent 900) by [pid ");
            assert!(lines.iter().any(|l| l.starts_with(&want)), "missing {want}");
        }
        for want in [
            format!("[pid {runc:>6}] +++ exited with 0 +++"),
            format!("[pid {init:>6}] +++ killed by SIGKILL +++"),
        ] {
            assert!(lines.contains(&want.as_str()), "missing {want}");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn export_jsonl_is_trace_json() {
    let dir = temp("jsonl");
    let (path, evs) = sample(&dir, 300);
    let out_path = dir.join("out.jsonl");
    let out = tracer(&[
        "export",
        path.to_str().unwrap(),
        "--format",
        "jsonl",
        "-o",
        out_path.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let got = std::fs::read_to_string(&out_path).unwrap();
    // Each event with its wall time on the file's own clock (its header's).
    let clock = tracer::Input::open(&path).unwrap().clock();
    assert!(clock.rfc3339(evs[0].ts_ns).is_some(), "{clock:?}");
    let expected: Vec<String> = evs
        .iter()
        .map(|e| serde_json::to_string(&e.timed(&clock)).unwrap())
        .collect();
    assert_eq!(got.lines().collect::<Vec<_>>(), expected);
    assert_fields_as_the_docs_name_them(&got);
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&out_path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn export_perfetto_and_dot() {
    let dir = temp("pf");
    let (path, _) = sample(&dir, 400);
    let pf = dir.join("out.json");
    let out = tracer(&[
        "export",
        path.to_str().unwrap(),
        "--format",
        "perfetto",
        "-o",
        pf.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&pf).unwrap()).unwrap();
    let evs = v["traceEvents"].as_array().unwrap();
    assert!(evs.iter().any(|e| e["ph"] == "X"));
    assert!(evs.iter().any(|e| e["ph"] == "s"));
    // One process slice per process, with the parent the storm gives it: 3 at the start, and
    // 400 events = 2 cycles (286) + 12 plain rounds (108) + 6 events of round 44, whose fork
    // is the 2nd; two containers of 2 processes each.
    let slices: Vec<&serde_json::Value> = evs
        .iter()
        .filter(|e| e["ph"] == "X" && e["cat"] == "process")
        .collect();
    assert_eq!(slices.len(), 3 + (30 + 13) + 2 * 2);
    let ppid_of = |pid: u32| {
        slices
            .iter()
            .find(|e| e["args"]["pid"] == pid)
            .map(|e| e["args"]["ppid"].clone())
    };
    assert_eq!(ppid_of(round_child(0)), Some(serde_json::json!(1000)));
    assert_eq!(ppid_of(round_child(44)), Some(serde_json::json!(1000)));
    assert_eq!(ppid_of(round_child(15) + 1), Some(serde_json::json!(900)));
    assert_eq!(ppid_of(round_child(45)), None);

    export_dot(&path, &dir);
}

/// The 300 events' JSON lines of [`sample`], independent of serde's view of `Event`: fields
/// as docs/events.md names them, the storm's execs and its CLONE_PARENT forks.
fn assert_fields_as_the_docs_name_them(got: &str) {
    let rows: Vec<serde_json::Value> = got
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 300);
    let first = &rows[0];
    assert_eq!(
        (
            &first["seq"],
            &first["tgid"],
            &first["comm"],
            &first["event"],
            &first["flags"]
        ),
        (
            &serde_json::json!(1),
            &serde_json::json!(1000),
            &serde_json::json!("sh"),
            &serde_json::json!("clone_enter"),
            &serde_json::json!("CLONE_VM|CLONE_VFORK")
        )
    );
    let fork = &rows[1];
    assert_eq!(fork["event"], "fork");
    assert_eq!(
        (&fork["child_tid"], &fork["child_ppid"]),
        (&serde_json::json!(2000), &serde_json::json!(1000))
    );
    // 300 events: rounds 0..=31 (two cycles, 286 events), round 32, and 5 events of round 33
    // (its exec is the 5th): 30 + 2 execs of /bin/true.
    let true_execs = rows
        .iter()
        .filter(|r| r["event"] == "exec" && r["filename"]["value"] == "/bin/true")
        .count();
    assert_eq!(true_execs, 32);
    let clone_parent = rows
        .iter()
        .filter(|r| r["event"] == "fork" && r["flags"] == "CLONE_PARENT")
        .map(|r| {
            (
                r["tgid"].clone(),
                r["child_tid"].clone(),
                r["child_ppid"].clone(),
            )
        })
        .collect::<Vec<_>>();
    assert_eq!(
        clone_parent,
        [
            (
                serde_json::json!(2030),
                serde_json::json!(2031),
                serde_json::json!(900)
            ),
            (
                serde_json::json!(2062),
                serde_json::json!(2063),
                serde_json::json!(900)
            ),
        ]
    );
}

/// `export --format dot` of the recording at `path`: each container init under the shim,
/// the edge labelled; graphviz draws it (when installed). Removes `dir` at the end.
fn export_dot(path: &Path, dir: &Path) {
    let dot_path = dir.join("out.dot");
    let out = tracer(&[
        "export",
        path.to_str().unwrap(),
        "--format",
        "dot",
        "-o",
        dot_path.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let dot = std::fs::read_to_string(&dot_path).unwrap();
    // Each container init (2031, 2063) hangs under the shim (900), not under runc, which
    // cloned it with CLONE_PARENT.
    let node = |label: &str| {
        dot.lines()
            .find(|l| l.contains(&format!("[label=\"{label}")))
            .and_then(|l| l.split_whitespace().next())
            .unwrap_or_else(|| panic!("no node {label}:\n{dot}"))
            .to_string()
    };
    let shim = node("900 containerd-shim");
    for (runc, init) in [(2030, 2031), (2062, 2063)] {
        let edge = format!(
            "  {shim} -> {} [label=\"CLONE_PARENT via {runc}\"];",
            node(&format!("{init} "))
        );
        assert!(dot.lines().any(|l| l == edge), "missing {edge}:\n{dot}");
    }
    if !prereq::require_program("dot", "graphviz") {
        return;
    }
    let o = Command::new("dot")
        .arg("-Tsvg")
        .arg(&dot_path)
        .arg("-o")
        .arg(dir.join("out.svg"))
        .output()
        .expect("run dot");
    assert!(o.status.success(), "dot: {}", text(&o.stderr));
    let svg = std::fs::read_to_string(dir.join("out.svg")).unwrap();
    assert!(
        svg.contains("CLONE_PARENT via 2030"),
        "the rendered graph keeps the edge label"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn damage_is_an_error_unless_salvage_and_a_cut_file_is_a_warning() {
    let dir = temp("damage");
    let (path, _) = sample(&dir, 30_000);
    let bytes = std::fs::read(&path).unwrap();
    let mut bad = bytes.clone();
    let at = bytes.len() * 2 / 3;
    bad[at] ^= 0xff;
    let bad_path = dir.join("bad.trace");
    std::fs::write(&bad_path, &bad).unwrap();
    // Version 2: the damaged frame is skipped and reported, the rest is used.
    let out = tracer(&["replay", bad_path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("checksum mismatch"), "{stderr}");
    assert!(stderr.contains("events lost"), "{stderr}");

    // Version 1 (the demo as it was recorded then) has no frame markers: damage stops
    // reading, an error unless --salvage.
    let demo =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/trace/containerd-v1.trace");
    let mut v1 = std::fs::read(demo).unwrap();
    assert_eq!(v1[8], 1, "a version 1 recording");
    let at = v1.len() * 2 / 3;
    v1[at] ^= 0xff;
    std::fs::write(&bad_path, &v1).unwrap();
    let out = tracer(&["replay", bad_path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("checksum mismatch"), "{stderr}");
    assert!(stderr.contains("bytes at the tail unusable"), "{stderr}");
    assert!(stderr.contains("--salvage"), "{stderr}");
    let out = tracer(&["replay", "--salvage", bad_path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));

    let cut_path = dir.join("cut.trace");
    std::fs::write(&cut_path, &bytes[..bytes.len() - 100]).unwrap();
    let out = tracer(&["replay", cut_path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("interrupted"));

    let junk = dir.join("junk.bin");
    std::fs::write(&junk, b"\x7fELF\x02\x01\x01\x00\x00").unwrap();
    let out = tracer(&["replay", junk.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("neither a trace file nor an strace log"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `view FILE --at SEQ --screenshot`: the frame after the event SEQ names, paused there. The
/// truth is the storm's definition (see the top): three whole rounds are 27 events, so at
/// seq 27 the children of rounds 0 to 2 are in the tree and round 3's is not yet.
#[test]
fn view_at_seq_prints_the_frame_there() {
    let dir = temp("view-at");
    let (path, _) = sample(&dir, 500);
    let f = path.to_str().unwrap();
    let shot = |at: &str| {
        let out = tracer(&["view", f, "--at", at, "--screenshot", "160x45"]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let at27 = shot("27");
    assert!(at27.contains("event 27/500"), "{at27}");
    for r in 0..3 {
        assert!(at27.contains(&format!("─ {} ", round_child(r))), "{at27}");
    }
    assert!(!at27.contains(&format!("─ {} ", round_child(3))), "{at27}");
    // Past the last seq: the end.
    assert!(shot("100000").contains("event 500/500 end"));
    // A position and the end together make no sense; a word is no seq.
    for bad in [&["--at", "3", "--end"][..], &["--at", "three"]] {
        let out = tracer(&[&["view", f][..], bad].concat());
        assert!(!out.status.success(), "{bad:?} accepted");
    }
}
