//! `tracer`: process-lineage tracing for container hosts.
//!
//! The flow is capture → [`event::Event`] → [`lineage::Engine`] → views. Capture (the eBPF
//! probes, feature `capture`) and strace import both produce the same event model, so
//! everything after capture runs without root, BPF or LLVM.
#![forbid(unsafe_op_in_unsafe_fn)]

pub mod decode;
pub mod demo;
pub mod event;
pub mod export;
pub mod input;
pub mod lineage;
pub mod names;
pub mod render;
pub mod stats;
pub mod strace;
pub mod tracefile;

#[cfg(feature = "capture")]
pub mod capture;

pub use event::{Comm, Event, EventKind, ExitStatus, Syscall};
