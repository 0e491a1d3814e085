//! Replays every kept fuzz input (tests/fuzz-regressions/) through the very checks of the fuzz
//! targets, reading as the fuzzer read (trace checksums not verified, so the bytes reach the
//! decoders that once failed on them), plus the fuzz seeds and hand-made hostile inputs.

use std::io::Cursor;
use std::path::{Path, PathBuf};
use tracer::synth;
use tracer::tracefile::{to_bytes, Checksums, Header, TraceReader, MAGIC};
use tracer::Event;

/// The files of a directory under tracer-user/, sorted; the directory must exist and hold at
/// least one file (a missing or empty one would make the test vacuous).
fn files(dir: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.is_file() && p.file_name().is_some_and(|n| n != ".gitignore"))
        .collect();
    v.sort();
    assert!(!v.is_empty(), "{} holds no input", dir.display());
    v
}

fn replay(dir: &str, check: fn(&[u8])) -> usize {
    let files = files(dir);
    for f in &files {
        eprintln!("replaying {}", f.display());
        check(&std::fs::read(f).unwrap());
    }
    files.len()
}

#[test]
fn kept_trace_reader_crashers_stay_fixed() {
    replay(
        "tests/fuzz-regressions/trace_reader",
        tracer::fuzz_check::trace_reader,
    );
}

/// A damaged byte inside an events frame: a checked reader skips that frame at its checksum
/// (and reports it), the fuzzer's reading (the one the kept crashers are replayed with) goes on
/// into the decoder with the damaged bytes.
#[test]
fn replays_reach_the_decoders_behind_the_checksums() {
    let events: Vec<Event> = synth::Storm::new(50).collect();
    let mut bytes = to_bytes(&Header::default(), &events).unwrap();
    let header_end = TraceReader::new(Cursor::new(&bytes)).unwrap().offset() as usize;
    // Past the frame header, inside the first event's bytes.
    bytes[header_end + tracer::tracefile::FRAME_HEADER_LEN + 2] ^= 0x5a;
    let read = |c: Checksums| {
        let mut r = TraceReader::with_checksums(Cursor::new(&bytes), c).unwrap();
        let ok = r.events().filter(Result::is_ok).count();
        (ok, r.tail().damage_count, r.tail().error.clone())
    };
    let (checked, damage, _) = read(Checksums::Verify);
    assert_eq!(damage, 1, "the checked reader reports the damaged frame");
    assert!(checked < events.len(), "{checked}");
    let (skipped, damage, error) = read(Checksums::Skip);
    assert_eq!(damage, 0, "no checksum stops the unchecked reader");
    // The decoder saw the damaged frame: it delivered more than the checked reader, or met
    // the damage as a decode error.
    assert!(skipped > checked || error.is_some(), "{skipped} {error:?}");
    tracer::fuzz_check::trace_reader(&bytes);
}

#[test]
fn kept_strace_parser_inputs_stay_fixed() {
    replay(
        "tests/fuzz-regressions/strace_parser",
        tracer::fuzz_check::strace_parser,
    );
}

#[test]
fn fuzz_seeds_pass_the_checks() {
    let n = replay(
        "../fuzz/seeds/trace_reader",
        tracer::fuzz_check::trace_reader,
    );
    assert!(n >= 4, "trace seeds: {n}");
    replay(
        "../fuzz/seeds/strace_parser",
        tracer::fuzz_check::strace_parser,
    );
    replay("../fuzz/seeds/json_lines", tracer::fuzz_check::json_lines);
}

#[test]
fn kept_json_lines_inputs_stay_fixed() {
    replay(
        "tests/fuzz-regressions/json_lines",
        tracer::fuzz_check::json_lines,
    );
}

/// The preamble of format version 1 with a header length and checksum.
fn preamble(header_len: u32) -> Vec<u8> {
    let mut v = MAGIC.to_vec();
    v.extend_from_slice(&1u16.to_le_bytes());
    v.extend_from_slice(&0u16.to_le_bytes());
    v.extend_from_slice(&header_len.to_le_bytes());
    v.extend_from_slice(&0u32.to_le_bytes());
    v
}

#[test]
fn hostile_inputs() {
    // Header claiming 64 MiB with nothing behind it: an error at once, nothing allocated.
    let a = preamble(64 << 20);
    tracer::fuzz_check::trace_reader(&a);
    let err = TraceReader::new(Cursor::new(&a)).err().expect("an error");
    assert!(err.offset().is_some(), "{err}");
    // An empty recording's preamble and header, then a frame claiming 16 MiB with one byte
    // behind it: a cut file, nothing allocated for the claim.
    let empty = to_bytes(&Header::default(), &[]).unwrap();
    let header_end = TraceReader::new(Cursor::new(&empty)).unwrap().offset() as usize;
    let mut b = empty[..header_end].to_vec();
    b.extend_from_slice(&(16u32 << 20).to_le_bytes());
    b.push(1);
    b.extend_from_slice(&0u32.to_le_bytes());
    b.push(0);
    tracer::fuzz_check::trace_reader(&b);
    let mut r = TraceReader::new(Cursor::new(&b)).expect("the header is fine");
    let errs: Vec<_> = r.events().filter_map(Result::err).collect();
    assert_eq!(errs.len(), 1);
    assert!(errs[0].is_truncation(), "{}", errs[0]);
    for n in 0..b.len() {
        tracer::fuzz_check::trace_reader(&b[..n]);
    }
}
