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
    aya_build::build_ebpf(
        [aya_build::Package {
            name: "tracer-ebpf",
            root_dir: root,
            ..Default::default()
        }],
        aya_build::Toolchain::Custom(EBPF_TOOLCHAIN),
    )?;
    // Skipped build: leave an empty object so include_bytes! works; loading reports it.
    if !out.exists() {
        std::fs::write(&out, [])?;
    }
    Ok(())
}
