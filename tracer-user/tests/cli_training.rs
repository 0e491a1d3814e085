//! The training commands end to end: `tracer story --explain` (text and JSON) and
//! `tracer export --format svg|html` on a real containerd strace log.

use std::path::PathBuf;
use std::process::Command;

const TRACER: &str = env!("CARGO_BIN_EXE_tracer");

fn ctr_log() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/strace/ctr.log")
}

fn tracer(args: &[&str]) -> String {
    let out = Command::new(TRACER).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "tracer {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn story_explain_json_gives_every_step_a_why() {
    let log = ctr_log();
    let log = log.to_str().unwrap();
    let v: serde_json::Value =
        serde_json::from_str(&tracer(&["story", log, "--explain", "--format", "json"])).unwrap();
    let steps: Vec<&serde_json::Value> = v["stories"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["steps"].as_array().unwrap())
        .collect();
    assert!(steps.len() > 10);
    for st in steps {
        let why = st["why"].as_str().unwrap_or_default();
        assert!(why.len() > 40 && why.ends_with('.'), "{st}");
        assert!(st["why_source"].is_string(), "{st}");
    }
    assert_eq!(v["runtime_restarts"], serde_json::json!([]));
    // Without --explain the JSON stays as it was.
    let plain: serde_json::Value =
        serde_json::from_str(&tracer(&["story", log, "--format", "json"])).unwrap();
    assert!(plain["stories"][0]["steps"][0].get("why").is_none());
    let text = tracer(&["story", log, "--explain"]);
    assert!(text.contains("      why: "), "{text}");
    assert!(text.contains("find_new_reaper"), "{text}");
}

#[test]
fn export_svg_and_html_to_files() {
    let log = ctr_log();
    let dir = std::env::temp_dir().join(format!("tracer-cli-training-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for fmt in ["svg", "html"] {
        let out = dir.join(format!("ctr.{fmt}"));
        tracer(&[
            "export",
            log.to_str().unwrap(),
            "--format",
            fmt,
            "-o",
            out.to_str().unwrap(),
        ]);
        let text = std::fs::read_to_string(&out).unwrap();
        assert!(
            text.contains("<svg") && text.contains("CLONE_PARENT"),
            "{fmt}"
        );
        assert!(text.contains("containerd-shim"), "{fmt}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `tracer view FILE --guided --screenshot COLSxROWS`: the guided viewer's opening frame as
/// plain text, the teaching layout (the story pane from column 120·38% on), no terminal.
#[test]
fn view_screenshot_prints_the_guided_opening_frame() {
    let log = ctr_log();
    let text = tracer(&[
        "view",
        log.to_str().unwrap(),
        "--guided",
        "--no-threads",
        "--screenshot",
        "160x45",
    ]);
    assert_eq!(text.lines().count(), 45, "{text}");
    let top = text.lines().next().unwrap_or_default();
    let col = top
        .find("┌ guided · stories")
        .map(|b| top[..b].chars().count());
    assert!(col.is_some_and(|c| (160 - c) * 100 >= 160 * 60), "{text}");
    assert!(
        text.contains("threads hidden") && text.contains("── why: "),
        "{text}"
    );
}
