//! The trace-file commands end to end: replay, export (jsonl, perfetto, dot), damage handling.
//! (Hostile input, output errors and output files: cli_hostile.rs.)

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
use common::{sample, text, tracer};

fn temp(name: &str) -> PathBuf {
    common::temp("cli-tracefile", name)
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
    assert!(stderr.contains("container stories"), "{stderr}");
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
    let expected: Vec<String> = evs
        .iter()
        .map(|e| serde_json::to_string(e).unwrap())
        .collect();
    assert_eq!(got.lines().collect::<Vec<_>>(), expected);
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
    assert!(dot.contains("CLONE_PARENT via"));
    if let Ok(o) = Command::new("dot")
        .arg("-Tsvg")
        .arg(&dot_path)
        .arg("-o")
        .arg(dir.join("out.svg"))
        .output()
    {
        assert!(o.status.success(), "dot: {}", text(&o.stderr));
    } else {
        eprintln!("dot not installed: render check skipped");
    }
    std::fs::remove_dir_all(&dir).unwrap();
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
