//! The bundled demo: a real recording of `cargo xtask lab containerd` (two containers, two
//! shims; see tests/fixtures/demo/README.md), embedded in the binary so `tracer demo` needs no
//! root, no BPF and no LLVM.

use crate::input::{Input, InputError};

/// The demo trace file's bytes.
pub fn demo_trace() -> &'static [u8] {
    include_bytes!("../../tests/fixtures/demo/containerd.trace")
}

/// Name the demo goes by in messages.
pub const DEMO_NAME: &str = "demo:containerd.trace";

/// The demo, opened like any trace file.
pub fn open() -> Result<Input, InputError> {
    Input::from_trace_bytes(DEMO_NAME, demo_trace())
}
