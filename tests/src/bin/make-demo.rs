//! Re-records a bundled demo: runs `cargo xtask lab pod`'s (or `containerd`'s) scenario as
//! root, trims the recording and writes tests/fixtures/demo/SCENARIO.trace.
//!
//! `cargo build --release -p tracer-user && cargo run -p tests --bin make-demo [pod|containerd]`

use anyhow::Result;
use tests::labs::{Lab, Scenario};

fn main() -> Result<()> {
    let root = tests::workspace_root();
    let tracer = tests::release_tracer()?;
    let scenario: Scenario = match std::env::args().nth(1) {
        Some(a) => a.parse().map_err(anyhow::Error::msg)?,
        None => Scenario::Pod,
    };
    anyhow::ensure!(
        matches!(scenario, Scenario::Pod | Scenario::Containerd),
        "the demos are the pod and containerd labs"
    );
    let raw = root.join("target/labs/demo-raw.trace");
    tests::labs::install_interrupt_handler();
    let lab = Lab::new(tracer, raw.clone(), scenario);
    let out = tests::labs::run(scenario, &lab)?;
    println!("make-demo: recorded {}", out.summary);
    let dst = root
        .join("tests/fixtures/demo")
        .join(format!("{}.trace", scenario.name()));
    let (before, after) = tests::trim_trace(&raw, &dst)?;
    println!(
        "make-demo: wrote {} ({after} bytes; {before} before trimming)",
        dst.display()
    );
    Ok(())
}
