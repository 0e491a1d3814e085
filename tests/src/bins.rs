//! The `tracer` binaries tests and labs run, found in the target directory cargo builds into
//! and built only where none fresh is there: each extra build is a whole dependency tree in
//! a target directory of its own (gigabytes and minutes on a CI machine).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

use anyhow::{ensure, Result};

use crate::workspace_root;

/// The target directory cargo builds into: `CARGO_TARGET_DIR`, else the workspace's target/.
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"))
}

/// The newest modification time of any file under `dir` (the library's sources).
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

/// Whether `bin` exists and is at least as new as every file of tracer-user/src.
fn fresh(bin: &Path) -> bool {
    let src = newest_mtime(&workspace_root().join("tracer-user/src"));
    bin.metadata()
        .and_then(|m| m.modified())
        .is_ok_and(|m| m >= src)
}

/// Whether `tracer --help` lists the subcommand `name` (which features the binary has).
pub fn has_subcommand(tracer: &Path, name: &str) -> bool {
    let Ok(out) = Command::new(tracer).arg("--help").output() else {
        return false;
    };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .any(|l| l.split_whitespace().next() == Some(name))
}

/// A debug `tracer` for a rootless test that runs `needs`: target/debug/tracer when it is
/// fresh and has that subcommand (the workspace's `cargo test` builds it with the default
/// features, before any test runs), else one built with `features` (no capture: no BPF
/// toolchain) into target/`own`, since the running `cargo test` holds the main one's lock.
pub fn debug_tracer(features: &str, needs: &str, own: &str) -> PathBuf {
    let main = target_dir().join("debug/tracer");
    if fresh(&main) && has_subcommand(&main, needs) {
        return main;
    }
    let own = target_dir().join(own);
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let st = Command::new(cargo)
        .current_dir(workspace_root())
        .args(["build", "-q", "-p", "tracer-user", "--bin", "tracer"])
        .args(["--no-default-features", "--features", features])
        .arg("--target-dir")
        .arg(&own)
        .env("AYA_BUILD_SKIP", "1")
        .status()
        .expect("cargo build");
    assert!(st.success(), "building tracer ({features}) failed");
    own.join("debug/tracer")
}

/// What to do about a release `tracer` that is missing or older than the sources.
const STALE: &str = "is missing or older than the sources: run `cargo build --release -p \
                     tracer-user` (cargo xtask test does)";

/// The release `tracer` with live capture, which `cargo xtask test` builds right before the
/// root tests; a test that needs it fails when it is missing or older than the sources.
pub fn capture_tracer() -> PathBuf {
    let bin = target_dir().join("release/tracer");
    assert!(fresh(&bin), "{} {STALE}", bin.display());
    bin
}

/// The release `tracer` binary the labs record with; built when missing, refused when older
/// than the sources (a test would try the code before the change).
pub fn release_tracer() -> Result<PathBuf> {
    let bin = target_dir().join("release/tracer");
    if !bin.is_file() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let st = Command::new(cargo)
            .args(["build", "--release", "-p", "tracer-user"])
            .current_dir(workspace_root())
            .status()?;
        ensure!(st.success(), "cargo build --release -p tracer-user failed");
    }
    ensure!(fresh(&bin), "{} {STALE}", bin.display());
    Ok(bin)
}
