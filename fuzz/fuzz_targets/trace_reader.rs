//! Any bytes through content detection and the trace reader: no panic, no unbounded
//! allocation (libFuzzer's -rss_limit_mb / -malloc_limit_mb catch those), at most one error,
//! and re-encoding what was read gives the same events back.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Every invariant lives in the library so the kept crashers check the same ones.
    tracer::fuzz_check::trace_reader(data);
});
