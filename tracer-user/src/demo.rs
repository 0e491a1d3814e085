//! The bundled demos: real recordings of `cargo xtask lab pod` (two CRI pods: sandboxes, CNI
//! plugins, containers under one shim per pod) and `cargo xtask lab containerd` (two `ctr run`
//! containers, two shims); see tests/fixtures/demo/README.md. Embedded in the binary so
//! `tracer demo` needs no root, no BPF and no LLVM.

use crate::input::{Input, InputError};

/// Which bundled recording.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Demo {
    /// `cargo xtask lab pod` (the default).
    #[default]
    Pod,
    /// `cargo xtask lab containerd`.
    Containerd,
}

impl Demo {
    /// The trace file's bytes.
    pub fn bytes(self) -> &'static [u8] {
        match self {
            Demo::Pod => include_bytes!("../../tests/fixtures/demo/pod.trace"),
            Demo::Containerd => include_bytes!("../../tests/fixtures/demo/containerd.trace"),
        }
    }

    /// Name the demo goes by in messages.
    pub fn name(self) -> &'static str {
        match self {
            Demo::Pod => "demo:pod.trace",
            Demo::Containerd => "demo:containerd.trace",
        }
    }

    /// Title for the viewer.
    pub fn title(self) -> &'static str {
        match self {
            Demo::Pod => "demo: pod lab (CRI)",
            Demo::Containerd => "demo: containerd lab",
        }
    }

    /// The demo, opened like any trace file.
    pub fn open(self) -> Result<Input, InputError> {
        Input::from_trace_bytes(self.name(), self.bytes())
    }
}

/// The default demo trace file's bytes.
pub fn demo_trace() -> &'static [u8] {
    Demo::default().bytes()
}

/// The default demo, opened like any trace file.
pub fn open() -> Result<Input, InputError> {
    Demo::default().open()
}
