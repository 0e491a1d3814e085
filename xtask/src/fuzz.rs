//! `cargo xtask fuzz`: runs every cargo-fuzz target in fuzz/ for a bounded time.
//!
//! Needs the pinned nightly (the same one the probes use) and cargo-fuzz (installed from
//! crates.io when missing). New crashers are copied to tracer-user/tests/fuzz-regressions/,
//! where `cargo test` replays them forever after.

use anyhow::{bail, Context, Result};
use std::path::Path;
use std::process::Command;

use crate::setup::EBPF_TOOLCHAIN;

/// Targets and whether they are wired up yet.
const TARGETS: &[&str] = &["trace_reader", "strace_parser", "json_lines"];

fn have_cargo_fuzz() -> bool {
    Command::new("cargo")
        .args(["fuzz", "--version"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

pub fn fuzz(root: &Path, secs: u64, only: Option<&str>) -> Result<()> {
    if !have_cargo_fuzz() {
        println!("xtask: installing cargo-fuzz");
        crate::run(Command::new("cargo").args(["install", "--locked", "cargo-fuzz"]))?;
    }
    let toolchain = format!("+{EBPF_TOOLCHAIN}");
    let dir = root.join("fuzz");
    let mut failed = Vec::new();
    for &target in TARGETS.iter().filter(|t| only.is_none_or(|o| o == **t)) {
        let corpus = dir.join("corpus").join(target);
        let seeds = dir.join("seeds").join(target);
        std::fs::create_dir_all(&corpus)?;
        std::fs::create_dir_all(&seeds)?;
        let artifacts = dir.join("artifacts").join(target);
        let before = list(&artifacts);
        let mut cmd = Command::new("cargo");
        cmd.current_dir(&dir)
            .args([toolchain.as_str(), "fuzz", "run", target])
            .arg(&corpus)
            .arg(&seeds)
            .arg("--")
            .arg(format!("-max_total_time={secs}"))
            // Unbounded allocation from a length field shows up as a malloc/RSS limit crash.
            .args([
                "-rss_limit_mb=1024",
                "-malloc_limit_mb=256",
                "-max_len=65536",
            ])
            .arg("-print_final_stats=1");
        println!("xtask: {cmd:?}");
        let status = cmd.status().context("cannot run cargo fuzz")?;
        let new: Vec<_> = list(&artifacts)
            .into_iter()
            .filter(|p| !before.contains(p))
            .collect();
        if !status.success() || !new.is_empty() {
            let keep = root.join("tracer-user/tests/fuzz-regressions").join(target);
            std::fs::create_dir_all(&keep)?;
            for p in &new {
                if let Some(name) = p.file_name() {
                    std::fs::copy(p, keep.join(name))?;
                    println!(
                        "xtask: crasher kept as regression test input: {}",
                        keep.join(name).display()
                    );
                }
            }
            failed.push(target);
        }
    }
    if !failed.is_empty() {
        bail!(
            "fuzz targets failed: {} (inputs kept in tracer-user/tests/fuzz-regressions/)",
            failed.join(", ")
        );
    }
    println!("xtask: fuzz: every target ran {secs} s without a failure");
    Ok(())
}

fn list(dir: &Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default()
}
