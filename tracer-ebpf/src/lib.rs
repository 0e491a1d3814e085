#![no_std]
// The probes live in main.rs (the BPF object); this lib only lets the host build see the crate.
