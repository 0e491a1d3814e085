//! The JSON-lines reader's fuzz oracle.

use crate::input::jsonl::JsonLines;

/// The invariants the `json_lines` fuzz target and its kept crashers check on arbitrary bytes:
/// no panic, at most one error and it names a line the input has, and the events read before
/// it write out (`export --format json`) and read back identically.
/// Panics when one is broken (it is a test oracle, not an API).
#[doc(hidden)]
pub fn json_lines(data: &[u8]) {
    let _ = crate::input::detect(data);
    let lines = data.split(|&b| b == b'\n').count() as u64;
    let mut events = Vec::new();
    let mut errors = 0;
    for r in JsonLines::new(data) {
        match r {
            Ok(ev) => {
                assert_eq!(errors, 0, "an event after the error");
                events.push(ev);
            }
            Err(e) => {
                errors += 1;
                let line = e.to_string();
                let n: u64 = line
                    .strip_prefix("line ")
                    .and_then(|s| s.split(':').next())
                    .and_then(|s| s.parse().ok())
                    .unwrap_or_else(|| panic!("an error without its line: {line}"));
                assert!((1..=lines).contains(&n), "line {n} of {lines}");
                assert!(
                    !line.contains('\n'),
                    "a message of more than one line: {line}"
                );
            }
        }
    }
    assert!(errors <= 1);
    let mut out = Vec::new();
    let clock = crate::clock::Clock::boot(1_764_747_609_000_000_000, 1);
    crate::export::write_jsonl(events.clone().into_iter(), clock, &mut out)
        .expect("write to memory");
    let back: Vec<_> = JsonLines::new(&out[..])
        .collect::<Result<_, _>>()
        .expect("what was read reads back");
    assert_eq!(back, events);
}
