//! `cargo xtask setup`: checks each prerequisite, installs what is missing, says what it does.
//! Idempotent: a second run only prints `ok` lines.

use anyhow::{bail, Context, Result};
use std::path::Path;
use std::process::Command;
use tests::packages::Need;

/// The nightly the probes are built with (keep in sync with tracer-user/build.rs).
pub const EBPF_TOOLCHAIN: &str = "nightly-2026-05-20";
const LLVM_PREFIX: &str = "/usr/lib/llvm-22";
/// What running needs: building the probes (bpf-linker links against LLVM 22).
const RUN_PACKAGES: &[Need] = &[
    (
        "llvm-22-dev",
        "bpf-linker links against LLVM 22 to build the eBPF probes",
    ),
    (
        "libpolly-22-dev",
        "LLVM 22's llvm-config names Polly among its libraries",
    ),
    ("zlib1g-dev", "LLVM 22's link dependency (bpf-linker)"),
    ("libzstd-dev", "LLVM 22's link dependency (bpf-linker)"),
];

/// What the tests need on top (a test whose prerequisite is missing fails: tests/src/prereq.rs).
/// The labs install their runtimes themselves (`Scenario::packages`).
const TEST_PACKAGES: &[Need] = &[
    (
        "busybox-static",
        "the containers' root filesystems and images",
    ),
    ("runc", "the root tests run containers with runc"),
    ("strace", "strace logs to import and compare with"),
    (
        "gcc",
        "the strace root test builds a program whose second thread takes SIGCHLD",
    ),
    ("tmux", "the viewer tests drive a real terminal"),
    ("graphviz", "`dot` renders the DOT export in its test"),
    (
        "util-linux",
        "setpriv/unshare for the privilege and pid-namespace tests",
    ),
    (
        "librsvg2-bin",
        "rsvg-convert renders the SVG export in its test",
    ),
    (
        "chromium",
        "headless Chromium renders the HTML export and prints it to PDF in its tests",
    ),
    (
        "poppler-utils",
        "pdftoppm and pdftotext read the HTML handout's printed PDF in its test",
    ),
    (
        "nats-server",
        "the agent tests publish to a real JetStream server",
    ),
    ("prometheus", "promtool lints the agent's /metrics"),
    (
        "bpftrace",
        "the bench's probe floor: a program that only counts on the tracer's tracepoints",
    ),
    ("openssl", "the TLS test makes its CA and certificates"),
    (
        "podman",
        "the image is built and the DaemonSet's container run with podman",
    ),
    (
        "kubernetes-client",
        "kubectl finds the `kubectl tracer` plugin and runs it in its test",
    ),
];

/// Packages of a program another package may already give (Google Cloud's `kubectl`
/// package, say, which owns /usr/bin/kubectl too: dpkg would refuse to overwrite it): not
/// installed when that program is on the PATH, whoever installed it.
const PROGRAM_OF: &[(&str, &str)] = &[("kubernetes-client", "kubectl")];

/// `needs` without the packages whose program is already there ([`PROGRAM_OF`]).
fn not_provided(needs: &[Need]) -> Vec<Need> {
    let on_path = |program: &str| {
        std::env::var_os("PATH")
            .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
    };
    needs
        .iter()
        .copied()
        .filter(|(pkg, _)| {
            !PROGRAM_OF
                .iter()
                .any(|(p, program)| p == pkg && on_path(program))
        })
        .collect()
}

/// What `cargo xtask dist` needs on top of running: a static (musl) build, whose C parts
/// (ring's) need musl's compiler wrapper.
const DIST_PACKAGES: &[Need] = &[(
    "musl-tools",
    "musl-gcc compiles ring's C for the static binary",
)];
/// What `cargo xtask image` needs on top of dist.
const IMAGE_PACKAGES: &[Need] = &[("podman", "builds the image into the local storage")];

/// The static binary's target.
pub const MUSL_TARGET: &str = "x86_64-unknown-linux-musl";

/// What a task needs set up, beyond running's needs (the probes' toolchain), which every
/// task has.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Scope {
    Run,
    Tests,
    Dist,
    Image,
}

impl Scope {
    fn packages(self) -> &'static [&'static [Need]] {
        match self {
            Scope::Run => &[],
            Scope::Tests => &[TEST_PACKAGES],
            Scope::Dist => &[DIST_PACKAGES],
            Scope::Image => &[DIST_PACKAGES, IMAGE_PACKAGES],
        }
    }
}

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

fn apt_packages(needs: &[Need]) -> Result<()> {
    let needs = &not_provided(needs);
    if tests::packages::install("setup", needs)? == 0 {
        let names: Vec<&str> = needs.iter().map(|(p, _)| *p).collect();
        ok(&format!("apt packages ({})", names.join(" ")));
    }
    Ok(())
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

/// Checks and installs what the `scopes` need: the probes' toolchain always, the tests'
/// packages, the static build's target and the Debian packager for dist and image.
pub fn setup(scopes: &[Scope]) -> Result<()> {
    apt_packages(RUN_PACKAGES)?;
    for needs in scopes.iter().flat_map(|s| s.packages()) {
        apt_packages(needs)?;
    }
    nightly()?;
    bpf_linker()?;
    if scopes
        .iter()
        .any(|s| matches!(s, Scope::Dist | Scope::Image))
    {
        musl_target()?;
        cargo_deb()?;
    }
    tracefs()?;
    btf();
    Ok(())
}

fn musl_target() -> Result<()> {
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .any(|l| l == MUSL_TARGET)
        })
        .unwrap_or(false);
    if installed {
        ok(&format!("rust target {MUSL_TARGET}"));
        return Ok(());
    }
    doing(&format!(
        "rust target {MUSL_TARGET}: the static node binary"
    ));
    run(Command::new("rustup").args(["target", "add", MUSL_TARGET]))
}

/// The pinned cargo-deb (builds the node's .deb).
const CARGO_DEB: &str = "3.8.0";

fn cargo_deb() -> Result<()> {
    let version = Command::new("cargo-deb").arg("--version").output();
    if let Ok(out) = &version {
        if out.status.success() && String::from_utf8_lossy(&out.stdout).contains(CARGO_DEB) {
            ok(&format!("cargo-deb {CARGO_DEB}"));
            return Ok(());
        }
    }
    doing(&format!("cargo-deb {CARGO_DEB}: packs the node's .deb"));
    run(Command::new("cargo").args(["install", "cargo-deb", "--locked", "--version", CARGO_DEB]))
}
