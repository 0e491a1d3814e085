//! Any bytes through the strace log importer: no panic, and `parse_log` (whole text) and
//! `parse_reader` (line by line) give the same import.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Every invariant lives in the library so the kept crashers check the same ones.
    tracer::fuzz_check::strace_parser(data);
});
