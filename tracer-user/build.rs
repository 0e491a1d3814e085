//! Builds the eBPF probes (tracer-ebpf) with aya-build when the `capture` feature is on.
//! `AYA_BUILD_SKIP=1` skips that: the binary then says at run time that it has no probes.

fn main() -> anyhow::Result<()> {
    // Without this cargo reruns the script (and rebuilds the probes) on any change in this
    // package; aya-build adds the probe crate's directory itself.
    println!("cargo:rerun-if-changed=build.rs");
    #[cfg(feature = "capture")]
    build_probes()?;
    Ok(())
}

#[cfg(feature = "capture")]
fn build_probes() -> anyhow::Result<()> {
    /// The nightly toolchain the probes are built with (rust-src + bpf-linker on LLVM 22);
    /// keep in sync with xtask/src/setup.rs.
    const EBPF_TOOLCHAIN: &str = "nightly-2026-05-20";
    use std::path::PathBuf;
    let out = PathBuf::from(std::env::var("OUT_DIR")?).join("tracer");
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?).join("../tracer-ebpf");
    let root = root
        .to_str()
        .ok_or_else(|| anyhow::anyhow!("non-UTF-8 path"))?;
    let log = PathBuf::from(std::env::var("OUT_DIR")?).join("probe-build.log");
    quiet_unless_failed(&log, || {
        aya_build::build_ebpf(
            [aya_build::Package {
                name: "tracer-ebpf",
                root_dir: root,
                ..Default::default()
            }],
            aya_build::Toolchain::Custom(EBPF_TOOLCHAIN),
        )
    })?;
    // Skipped build: leave an empty object so include_bytes! works; loading reports it.
    if !out.exists() {
        std::fs::write(&out, [])?;
    }
    Ok(())
}

/// Runs `build` with this script's stdout going to `log`, then passes cargo's directives on
/// and drops aya-build's `cargo:warning=` echo of the nested build's progress, unless `build`
/// failed (then every line is shown, so the error has its context).
#[cfg(feature = "capture")]
fn quiet_unless_failed(
    log: &std::path::Path,
    build: impl FnOnce() -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    use std::io::Write;
    use std::os::fd::AsRawFd;
    let file = std::fs::File::create(log)?;
    std::io::stdout().flush()?;
    // SAFETY: dup of our own stdout; the copy is closed below after being restored.
    let saved = unsafe { libc::dup(1) };
    if saved < 0 {
        return build();
    }
    // SAFETY: both descriptors are open; fd 1 now writes to `file`.
    unsafe { libc::dup2(file.as_raw_fd(), 1) };
    let result = build();
    let _ = std::io::stdout().flush();
    // SAFETY: `saved` is the original stdout, open since the dup above.
    unsafe {
        libc::dup2(saved, 1);
        libc::close(saved);
    }
    let text = std::fs::read_to_string(log).unwrap_or_default();
    for line in text.lines() {
        if result.is_err() || !line.starts_with("cargo:warning=") {
            println!("{line}");
        }
    }
    result
}
