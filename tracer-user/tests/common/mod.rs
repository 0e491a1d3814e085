//! Helpers of the command-line tests (cli_tracefile.rs, cli_hostile.rs).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use tracer::synth;
use tracer::tracefile::{to_bytes, CaptureMode, Header};
use tracer::Event;

pub const TRACER: &str = env!("CARGO_BIN_EXE_tracer");

/// A fresh directory for test `name` of `suite`.
pub fn temp(suite: &str, name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("{suite}-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `dir/storm.trace`: `n` events of the synthetic storm, with its start snapshot.
pub fn sample(dir: &Path, n: u64) -> (PathBuf, Vec<Event>) {
    let mut h = Header::for_this_host(CaptureMode::Command(vec!["sh".into()]));
    h.snapshot = synth::storm_snapshot().iter().map(Into::into).collect();
    let evs: Vec<Event> = synth::Storm::new(n).collect();
    let path = dir.join("storm.trace");
    std::fs::write(&path, to_bytes(&h, &evs).unwrap()).unwrap();
    (path, evs)
}

pub fn tracer(args: &[&str]) -> Output {
    Command::new(TRACER).args(args).output().unwrap()
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}
