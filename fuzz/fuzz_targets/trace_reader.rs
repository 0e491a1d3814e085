//! Any bytes through content detection and the trace reader: no panic, no unbounded
//! allocation (libFuzzer's -rss_limit_mb / -malloc_limit_mb catch those), at most one error,
//! and re-encoding what was read gives the same events back.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tracer::tracefile::{Record, TraceReader};

fuzz_target!(|data: &[u8]| {
    let _ = tracer::input::detect(data);
    let Ok(mut r) = TraceReader::new(std::io::Cursor::new(data)) else {
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
    let tail = r.tail();
    assert!(tail.unusable_bytes <= data.len() as u64);
    // The events-only path (what the commands use) yields the same events.
    let mut r2 = TraceReader::new(std::io::Cursor::new(data)).expect("header read twice");
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
    // Whatever was read re-encodes and reads back identically.
    let bytes = tracer::tracefile::to_bytes(&header, &events).expect("re-encode");
    let mut again = TraceReader::new(std::io::Cursor::new(&bytes)).expect("re-read header");
    let back: Vec<_> = again.events().collect::<Result<_, _>>().expect("re-read events");
    assert_eq!(back, events);
    assert_eq!(again.header(), &header);
});
