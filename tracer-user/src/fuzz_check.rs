//! Fuzz oracles shared by the cargo-fuzz targets (fuzz/) and the replay of their kept
//! crashers (tests/fuzz_regressions.rs). They sit above every reader they check (the trace
//! reader, the strace importer, the JSON-lines reader, input detection), so no reader depends on its oracle.
//! Each panics when an invariant breaks: a test oracle, not an API.

mod json_lines;
mod strace_parser;
mod trace_reader;

pub use json_lines::json_lines;
pub use strace_parser::strace_parser;
pub use trace_reader::trace_reader;
