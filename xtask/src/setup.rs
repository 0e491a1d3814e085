//! `cargo xtask setup`: checks each prerequisite, installs what is missing, says what it does.
//! Idempotent: a second run only prints `ok` lines.

use anyhow::{bail, Context, Result};
use std::path::Path;
use std::process::Command;

/// The nightly the probes are built with (keep in sync with tracer-user/build.rs).
pub const EBPF_TOOLCHAIN: &str = "nightly-2026-05-20";
const LLVM_PREFIX: &str = "/usr/lib/llvm-22";
/// Debian packages the build, the probes and the tests need (tests fail, not skip, without
/// them: tests/src/prereq.rs). Keep in sync with .ci/run.
const APT_PACKAGES: &[&str] = &[
    "llvm-22-dev",
    "libpolly-22-dev",
    "zlib1g-dev",
    "libzstd-dev",
    "busybox-static",
    "runc",
    "strace",
    "tmux",
    "graphviz",
    "util-linux",
    // The picture tests render `tracer export --format svg/html` with real renderers.
    "librsvg2-bin",
    "chromium",
    // protoc: the pod lab's CRI client (k8s-cri) compiles the CRI protos at build time.
    "protobuf-compiler",
    // The agent tests run a real NATS JetStream server (one with TLS, its certificates made
    // by openssl) and lint /metrics with promtool.
    "nats-server",
    "prometheus",
    "openssl",
];

pub use tests::prereq::is_root;

fn ok(what: &str) {
    println!("setup: ok        {what}");
}

fn doing(what: &str) {
    println!("setup: install   {what}");
}

fn succeeded(cmd: &mut Command) -> bool {
    cmd.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    cmd.status().map(|s| s.success()).unwrap_or(false)
}

fn run(cmd: &mut Command) -> Result<()> {
    let status = cmd
        .status()
        .with_context(|| format!("cannot run {cmd:?}"))?;
    if !status.success() {
        bail!("{cmd:?} failed ({status})");
    }
    Ok(())
}

fn dpkg_installed(pkg: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", pkg])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"))
        .unwrap_or(false)
}

fn apt_packages() -> Result<()> {
    let missing: Vec<&str> = APT_PACKAGES
        .iter()
        .copied()
        .filter(|p| !dpkg_installed(p))
        .collect();
    if missing.is_empty() {
        ok(&format!("apt packages ({})", APT_PACKAGES.join(" ")));
        return Ok(());
    }
    if !Path::new("/usr/bin/apt-get").exists() {
        bail!(
            "missing packages {} and this is not a Debian-like system (no apt-get): install LLVM 22 \
             development files, busybox-static and runc by hand",
            missing.join(" ")
        );
    }
    if !is_root() {
        bail!(
            "missing packages {}: run as root (or `sudo apt-get install {}`)",
            missing.join(" "),
            missing.join(" ")
        );
    }
    doing(&format!("apt packages: {}", missing.join(" ")));
    run(Command::new("apt-get").arg("update").arg("-qq"))?;
    run(Command::new("apt-get")
        .args(["install", "-y", "-qq", "--no-install-recommends"])
        .args(&missing)
        .env("DEBIAN_FRONTEND", "noninteractive"))
    .context("apt-get install failed; is llvm-22-dev available (bookworm-security)?")
}

fn nightly() -> Result<()> {
    let has_src = Command::new("rustup")
        .args(["run", EBPF_TOOLCHAIN, "rustc", "--print", "sysroot"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| {
            Path::new(String::from_utf8_lossy(&o.stdout).trim())
                .join("lib/rustlib/src/rust/library/core")
                .is_dir()
        })
        .unwrap_or(false);
    if has_src {
        ok(&format!("rust toolchain {EBPF_TOOLCHAIN} with rust-src"));
        return Ok(());
    }
    if !succeeded(Command::new("rustup").arg("--version")) {
        bail!("rustup is missing: the probes need the {EBPF_TOOLCHAIN} toolchain with rust-src");
    }
    doing(&format!("rust toolchain {EBPF_TOOLCHAIN} + rust-src"));
    run(Command::new("rustup").args([
        "toolchain",
        "install",
        EBPF_TOOLCHAIN,
        "--component",
        "rust-src",
        "--profile",
        "minimal",
    ]))
}

fn bpf_linker() -> Result<()> {
    let version = Command::new("bpf-linker").arg("--version").output();
    if let Ok(out) = &version {
        if out.status.success() {
            ok(&format!(
                "bpf-linker ({})",
                String::from_utf8_lossy(&out.stdout).trim()
            ));
            return Ok(());
        }
    }
    if !Path::new(LLVM_PREFIX).join("bin/llvm-config").exists() {
        bail!("bpf-linker needs LLVM 22 at {LLVM_PREFIX} (apt-get install llvm-22-dev libpolly-22-dev)");
    }
    doing("bpf-linker (built against LLVM 22; takes a few minutes)");
    let path = format!(
        "{LLVM_PREFIX}/bin:{}",
        std::env::var("PATH").unwrap_or_default()
    );
    run(Command::new("cargo")
        .args([
            "install",
            "bpf-linker",
            "--locked",
            "--no-default-features",
            "--features",
            "llvm-22",
        ])
        .env("LLVM_PREFIX", LLVM_PREFIX)
        .env("PATH", path))
}

fn tracefs() -> Result<()> {
    if Path::new("/sys/kernel/tracing/events").is_dir() {
        ok("tracefs at /sys/kernel/tracing");
        return Ok(());
    }
    if !is_root() {
        println!("setup: note      tracefs is not mounted; live tracing will need `mount -t tracefs nodev /sys/kernel/tracing` as root");
        return Ok(());
    }
    doing("mount tracefs at /sys/kernel/tracing");
    run(Command::new("mount").args(["-t", "tracefs", "nodev", "/sys/kernel/tracing"]))
}

fn btf() {
    if Path::new("/sys/kernel/btf/vmlinux").exists() {
        ok("kernel BTF at /sys/kernel/btf/vmlinux");
    } else {
        println!("setup: note      no /sys/kernel/btf/vmlinux: live tracing is unavailable on this kernel (replay still works)");
    }
}

/// Everything needed to build the probes and run the root tests.
pub fn setup() -> Result<()> {
    apt_packages()?;
    nightly()?;
    bpf_linker()?;
    tracefs()?;
    btf();
    Ok(())
}
