//! The viewer in a real terminal: `tracer view` on the ctr fixture inside a detached tmux
//! session of fixed size; keys are sent, the pane is captured, and after `q` (and after a
//! SIGTERM) the terminal must be back to a usable shell (alternate screen left, cooked mode).
//! tmux is a prerequisite (tests/src/prereq.rs): missing, the test fails unless opted out.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

use tests::tmux::{Tmux, CEILING};

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace")
        .to_path_buf()
}

fn newest_mtime(dir: &Path) -> SystemTime {
    let mut newest = SystemTime::UNIX_EPOCH;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(m) = e.metadata().and_then(|m| m.modified()) {
                newest = newest.max(m);
            }
        }
    }
    newest
}

/// A `tracer` binary with live capture: target/release/tracer, which `cargo xtask test` builds
/// right before the root tests (target/debug/tracer may be the engine-only build by then).
fn capture_tracer_bin() -> PathBuf {
    let ws = workspace();
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| ws.join("target"));
    let src = newest_mtime(&ws.join("tracer-user/src"));
    let bin = target.join("release/tracer");
    let fresh = bin
        .metadata()
        .and_then(|m| m.modified())
        .is_ok_and(|m| m >= src);
    assert!(fresh, "{} is missing or older than the sources: run `cargo build --release -p tracer-user` (cargo xtask test does)", bin.display());
    bin
}

/// The `tracer` binary: target/debug/tracer when it is newer than the sources, else one
/// built (without capture) into a target dir of its own (the main one is locked by the
/// running `cargo test`).
fn tracer_bin() -> PathBuf {
    let ws = workspace();
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| ws.join("target"));
    let src = newest_mtime(&ws.join("tracer-user/src"));
    let main = target.join("debug/tracer");
    if main
        .metadata()
        .and_then(|m| m.modified())
        .is_ok_and(|m| m >= src)
    {
        return main;
    }
    let own = target.join("tui-tmux");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let st = Command::new(cargo)
        .current_dir(&ws)
        .args(["build", "-q", "-p", "tracer-user", "--bin", "tracer"])
        .args(["--no-default-features", "--features", "cli"])
        .arg("--target-dir")
        .arg(&own)
        .status()
        .expect("cargo build");
    assert!(st.success(), "building tracer failed");
    own.join("debug/tracer")
}

#[test]
fn tui_replay_in_tmux() {
    if !tests::prereq::require_program("tmux", "tmux") {
        return;
    }
    let bin = tracer_bin();
    let fixture = workspace().join("tests/fixtures/strace/ctr.log");
    let t = Tmux::start("replay", 100, 30);
    t.wait_for(&["$"]);
    t.type_text(&format!("{} view {}", bin.display(), fixture.display()));
    t.send(&["Enter"]);
    t.wait_for(&["REPLAY", "ctr.log"]);
    // To the end of the recording: the whole tree.
    t.send(&["G"]);
    let screen = t.wait_for(&[
        "598/598",
        "containerd-shim [shim]",
        "runc [oci-runtime create]",
        "sleep [container]",
        "⤴ adopted ← 15913 exited",
        "(CLONE_PARENT via 15940)",
    ]);
    assert!(screen.contains("runc:[1:CHILD]"), "{screen}");

    // Search the container init: the detail pane shows its lineage.
    t.send(&["/"]);
    t.type_text("sleep");
    t.send(&["Enter"]);
    t.wait_for(&["process 15941", "adopted by 15921: parent 15931 exited"]);

    // Story pane, then step back one event.
    t.send(&["s"]);
    t.wait_for(&["stories 2", "init 15941 exec'd /bin/sleep"]);
    t.send(&[","]);
    t.wait_for(&["597/598"]);

    // Help overlay lists the keys; any key closes it.
    t.send(&["?"]);
    t.wait_for(&["keys (any key closes)", "q Ctrl-C"]);
    t.send(&["Escape"]);
    t.wait_until("help closed", |t| !t.capture().contains("keys (any key"));

    t.send(&["q"]);
    t.assert_terminal_usable("after-q-ok");

    // SIGTERM restores the terminal too.
    let pidfile = std::env::temp_dir().join(format!("tracer-tui-test-{}.pid", std::process::id()));
    let pid = t.start_viewer(
        &bin,
        &fixture.display().to_string(),
        &["REPLAY", "ctr.log"],
        &pidfile,
    );
    let st = Command::new("kill")
        .args(["-TERM", pid.trim()])
        .status()
        .expect("kill");
    assert!(st.success());
    t.assert_terminal_usable("after-term-ok");

    // The terminal goes away (tmux killed): the viewer must exit, not spin on a dead tty.
    let pid = t.start_viewer(
        &bin,
        &fixture.display().to_string(),
        &["REPLAY", "ctr.log"],
        &pidfile,
    );
    drop(t);
    let proc_dir = std::path::PathBuf::from(format!("/proc/{}", pid.trim()));
    let deadline = Instant::now() + CEILING;
    let gone = |state: &str| state.is_empty() || state.contains(") Z ");
    while !gone(&std::fs::read_to_string(proc_dir.join("stat")).unwrap_or_default())
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(100));
    }
    let state = std::fs::read_to_string(proc_dir.join("stat")).unwrap_or_default();
    // Gone, or a zombie waiting for tmux's reaper.
    assert!(gone(&state), "viewer still running after hangup: {state}");
}

/// Live view of a command (root; run with `--ignored`): its processes appear, `q` restores.
#[test]
#[ignore = "root"]
fn tui_live_in_tmux() {
    if !tests::prereq::require_program("tmux", "tmux") || !tests::prereq::require_root() {
        return;
    }
    let bin = capture_tracer_bin();
    let t = Tmux::start("live", 120, 35);
    t.wait_for(&["$"]);
    t.type_text(&format!(
        "{} tui -- sh -c 'sleep 0.3; /bin/true; exec sleep 30'",
        bin.display()
    ));
    t.send(&["Enter"]);
    t.wait_for(&["LIVE", "cmd sh -c", "true (exit 0)", "sleep"]);
    t.send(&["q"]);
    t.assert_terminal_usable("after-live-ok");
}
