//! Re-records a bundled demo: runs `cargo xtask lab pod`'s (or `containerd`'s, `restart`'s)
//! scenario as root, trims the recording and writes tests/fixtures/demo/SCENARIO.trace. The
//! labs attach to a containerd adopted by PID 1 (or to its supervisor), as an operator does,
//! so the demo's tree starts at PID 1 → the runtime.
//!
//! `cargo build --release -p tracer-user && cargo run -p tests --bin make-demo [pod|containerd|lifecycle|restart]`

use anyhow::Result;
use tests::labs::{Lab, Scenario};

fn main() -> Result<()> {
    let root = tests::workspace_root();
    let tracer = tests::bins::release_tracer()?;
    let which = std::env::args().nth(1).unwrap_or_else(|| "pod".into());
    // `lifecycle` is the pod lab with its third pod.
    let lifecycle = which == "lifecycle";
    let scenario: Scenario = match lifecycle {
        true => Scenario::Pod,
        false => which.parse().map_err(anyhow::Error::msg)?,
    };
    anyhow::ensure!(
        matches!(
            scenario,
            Scenario::Pod | Scenario::Containerd | Scenario::Restart
        ),
        "the demos are the pod (and pod --lifecycle), containerd and restart labs"
    );
    let raw = root.join("target/labs/demo-raw.trace");
    tests::labs::install_interrupt_handler();
    let mut lab = Lab::new(tracer, raw.clone(), scenario);
    lab.lifecycle = lifecycle;
    let out = tests::labs::run(scenario, &lab)?;
    println!("make-demo: recorded {}", out.summary);
    let dst = root
        .join("tests/fixtures/demo")
        .join(format!("{which}.trace"));
    let (before, after) = tests::trim_trace(&raw, &dst)?;
    println!(
        "make-demo: wrote {} ({after} bytes; {before} before trimming)",
        dst.display()
    );
    Ok(())
}
