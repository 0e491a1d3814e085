//! Replays every kept fuzz crasher (tests/fuzz-regressions/) through the same checks as the
//! fuzz targets, plus hand-made hostile inputs.

use std::path::Path;

/// The trace_reader fuzz target's checks (shared with fuzz/fuzz_targets/trace_reader.rs).
fn check_trace_bytes(data: &[u8]) {
    tracer::tracefile::fuzz_check(data);
}

fn files(dir: &str) -> Vec<std::path::PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn kept_trace_reader_crashers_stay_fixed() {
    for f in files("tests/fuzz-regressions/trace_reader") {
        let data = std::fs::read(&f).unwrap();
        eprintln!("replaying {}", f.display());
        check_trace_bytes(&data);
    }
}

#[test]
fn kept_strace_parser_crashers_stay_fixed() {
    for f in files("tests/fuzz-regressions/strace_parser") {
        let data = std::fs::read(&f).unwrap();
        if let Ok(text) = std::str::from_utf8(&data) {
            let _ = tracer::strace::parse_log(text);
        }
    }
}

#[test]
fn fuzz_seeds_pass_the_checks() {
    for f in files("../fuzz/seeds/trace_reader") {
        check_trace_bytes(&std::fs::read(&f).unwrap());
    }
}

#[test]
fn hostile_inputs() {
    let mut magic = tracer::tracefile::MAGIC.to_vec();
    magic.extend_from_slice(&1u16.to_le_bytes());
    magic.extend_from_slice(&0u16.to_le_bytes());
    // Header claiming 64 MiB with nothing behind it.
    let mut a = magic.clone();
    a.extend_from_slice(&(64u32 << 20).to_le_bytes());
    a.extend_from_slice(&0u32.to_le_bytes());
    check_trace_bytes(&a);
    // Empty header (checksum of nothing is 0), then a frame claiming 16 MiB.
    let mut b = magic.clone();
    b.extend_from_slice(&0u32.to_le_bytes());
    b.extend_from_slice(&0u32.to_le_bytes());
    b.extend_from_slice(&(16u32 << 20).to_le_bytes());
    b.push(1);
    b.extend_from_slice(&0u32.to_le_bytes());
    check_trace_bytes(&b);
    for n in 0..b.len() {
        check_trace_bytes(&b[..n]);
    }
}
