//! Re-records the bundled demo: runs `cargo xtask lab containerd`'s scenario (as root), trims
//! the recording and writes tests/fixtures/demo/containerd.trace.
//!
//! `cargo build --release -p tracer-user && cargo run -p tests --bin make-demo`

use anyhow::Result;
use tests::labs::{Lab, Scenario};

fn main() -> Result<()> {
    let root = tests::workspace_root();
    let tracer = tests::release_tracer()?;
    let raw = root.join("target/labs/demo-raw.trace");
    tests::labs::install_interrupt_handler();
    let lab = Lab::new(tracer, raw.clone(), Scenario::Containerd);
    let out = tests::labs::run(Scenario::Containerd, &lab)?;
    println!("make-demo: recorded {}", out.summary);
    let dst = root.join("tests/fixtures/demo/containerd.trace");
    let (before, after) = tests::trim_trace(&raw, &dst)?;
    println!(
        "make-demo: wrote {} ({after} bytes; {before} before trimming)",
        dst.display()
    );
    Ok(())
}
