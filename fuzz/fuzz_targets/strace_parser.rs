//! Any text through the strace log importer: no panic.
//!
//! TODO(merge): strace — once `tracer::strace::parse_log` exists, replace the body with the
//! commented call below (and drop the `input::parse_strace_log` indirection if you like).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // let _ = tracer::strace::parse_log(text);
    let _ = tracer::input::parse_strace_log(text);
});
