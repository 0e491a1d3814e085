//! The trace reader's fuzz oracle.

use crate::tracefile::{to_bytes, Checksums, Record, TraceReader};
use std::io::Cursor;

/// The invariants the `trace_reader` fuzz target and the kept crashers check on arbitrary
/// bytes: no panic, at most one error and it names an offset, the events-only path agrees
/// with the record path, and what was read re-encodes and reads back identically.
/// Checksums are not verified (a random input never has a valid one), so the bytes reach the
/// decoders behind them: the fuzzer and the replay of its kept crashers read the same way.
/// Panics when one is broken (it is a test oracle, not an API).
#[doc(hidden)]
pub fn trace_reader(data: &[u8]) {
    let _ = crate::input::detect(data);
    let Ok(mut r) = TraceReader::with_checksums(Cursor::new(data), Checksums::Skip) else {
        return;
    };
    let header = r.header().clone();
    let mut events = Vec::new();
    let mut errors = 0;
    for rec in r.by_ref() {
        match rec {
            Ok(Record::Event(e)) => events.push(e),
            Ok(_) => {}
            Err(e) => {
                errors += 1;
                assert!(e.offset().is_some(), "reading error without an offset: {e}");
            }
        }
    }
    assert!(errors <= 1);
    assert!(r.tail().unusable_bytes <= data.len() as u64);
    // The events-only path (what the commands use) yields the same events.
    let mut r2 =
        TraceReader::with_checksums(Cursor::new(data), Checksums::Skip).expect("header read twice");
    let mut again_events = Vec::new();
    let mut again_errors = 0;
    // Keep pulling after the error: nothing more may come out.
    for ev in r2.events() {
        match ev {
            Ok(e) => {
                assert_eq!(again_errors, 0, "an event after the error");
                again_events.push(e)
            }
            Err(_) => again_errors += 1,
        }
    }
    assert!(again_errors <= 1);
    assert_eq!(again_events, events);
    let bytes = to_bytes(&header, &events).expect("re-encode");
    let mut again = TraceReader::new(Cursor::new(&bytes)).expect("re-read");
    let back: Vec<_> = again.events().collect::<Result<_, _>>().expect("events");
    assert_eq!(back, events);
}
