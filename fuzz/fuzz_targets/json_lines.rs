//! Any bytes through the JSON-lines reader: no panic, one error at most naming a line of the
//! input, and what was read writes out and reads back the same.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Every invariant lives in the library so the kept crashers check the same ones.
    tracer::fuzz_check::json_lines(data);
});
