//! `cargo xtask dist` and `cargo xtask image`: what a node gets. `target/dist/` holds a static
//! `tracer` (musl, probes embedded: runs where there is no Rust, LLVM or libc of a given
//! version), its sha256, the `kubectl-tracer` link to it (kubectl's plugin), its man page and
//! shell completions, and a Debian package of them (cargo-deb, which installs the link too). The image is `deploy/Containerfile` built on `target/dist/` into the local
//! podman storage: `FROM scratch`, so nothing is pulled.

use anyhow::{bail, ensure, Context, Result};
use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::setup::{self, Scope, MUSL_TARGET};
use crate::{cargo, run, workspace_root};

/// The image `cargo xtask image` builds (deploy/daemonset.yaml names the same).
pub const IMAGE: &str = "localhost/tracer:latest";

/// The link `dist` ships beside the binary (and the .deb installs): kubectl's plugin name.
pub const PLUGIN_LINK: &str = "kubectl-tracer";

/// Where `dist` writes.
pub fn dist_dir() -> PathBuf {
    workspace_root().join("target/dist")
}

/// `cargo xtask dist`: sets up, then [`build_dist`].
pub fn dist() -> Result<PathBuf> {
    setup::setup(&[Scope::Dist])?;
    build_dist()
}

/// Builds `target/dist/`: the static binary, its sha256, the kubectl plugin's link, docs and
/// completions, the .deb.
pub fn build_dist() -> Result<PathBuf> {
    let binary = build_static()?;
    let out = dist_dir();
    // A fresh directory each time: nothing stale is packed.
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(out.join("share"))?;
    let tracer = out.join("tracer");
    std::fs::copy(&binary, &tracer)
        .with_context(|| format!("cannot copy {} to {}", binary.display(), tracer.display()))?;
    write_sha256(&tracer)?;
    // kubectl runs `kubectl tracer` as the program of this name on the PATH: the same binary,
    // which answers to its name.
    let plugin = out.join(PLUGIN_LINK);
    std::os::unix::fs::symlink("tracer", &plugin)
        .with_context(|| format!("cannot link {}", plugin.display()))?;
    // cargo-deb finds assets under the target's release directory by the `target/release/`
    // prefix (tracer-user's [package.metadata.deb]); the same files are kept in dist/share.
    let share = binary.with_file_name("share");
    std::fs::create_dir_all(&share)?;
    generate_docs(&tracer, &share)?;
    for f in std::fs::read_dir(&share)?.flatten() {
        std::fs::copy(f.path(), out.join("share").join(f.file_name()))?;
    }
    let deb = build_deb(&out)?;
    println!("dist: {}", tracer.display());
    println!("dist: {}", deb.display());
    Ok(out)
}

/// `cargo build --release --target x86_64-unknown-linux-musl`, checked to be static.
fn build_static() -> Result<PathBuf> {
    run(cargo()
        .args(["build", "--release", "-p", "tracer-user", "--bin", "tracer"])
        .args(["--target", MUSL_TARGET]))?;
    let binary = workspace_root()
        .join("target")
        .join(MUSL_TARGET)
        .join("release/tracer");
    ensure_static(&binary)?;
    Ok(binary)
}

/// The binary has no program interpreter and needs no shared library (no `DT_NEEDED`). A
/// static-pie (Rust's musl default) keeps a dynamic section for its own relocations, so that
/// alone is no sign of a shared library.
pub fn ensure_static(binary: &Path) -> Result<()> {
    use object::read::elf::{Dyn, ElfFile64, ProgramHeader};
    use object::{elf, Endianness};
    let data =
        std::fs::read(binary).with_context(|| format!("cannot read {}", binary.display()))?;
    let file = ElfFile64::<Endianness>::parse(&*data)
        .with_context(|| format!("{} is not a 64-bit ELF file", binary.display()))?;
    let endian = file.endian();
    for ph in file.elf_program_headers() {
        if ph.p_type(endian) == elf::PT_INTERP {
            bail!(
                "{} names a program interpreter: not static",
                binary.display()
            );
        }
        let entries = ph
            .dynamic(endian, &*data)
            .ok()
            .flatten()
            .unwrap_or_default();
        if entries
            .iter()
            .any(|d| d.d_tag(endian) == u64::from(elf::DT_NEEDED))
        {
            bail!("{} needs shared libraries: not static", binary.display());
        }
    }
    Ok(())
}

/// `tracer.sha256` beside the binary, in `sha256sum -c` form.
fn write_sha256(binary: &Path) -> Result<()> {
    let digest = Sha256::digest(std::fs::read(binary)?);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    let name = binary.file_name().unwrap_or_default().to_string_lossy();
    let mut f = std::fs::File::create(binary.with_extension("sha256"))?;
    writeln!(f, "{hex}  {name}")?;
    Ok(())
}

/// The man page and bash/zsh/fish completions, as the binary itself prints them.
fn generate_docs(tracer: &Path, share: &Path) -> Result<()> {
    let write = |args: &[&str], to: &Path| -> Result<()> {
        let out = Command::new(tracer)
            .args(args)
            .output()
            .with_context(|| format!("cannot run {}", tracer.display()))?;
        ensure!(
            out.status.success(),
            "tracer {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::write(to, out.stdout).with_context(|| format!("cannot write {}", to.display()))
    };
    write(&["manpage"], &share.join("tracer.1"))?;
    gzip(&share.join("tracer.1"))?;
    for shell in ["bash", "zsh", "fish"] {
        write(
            &["completions", shell],
            &share.join(format!("tracer.{shell}")),
        )?;
    }
    Ok(())
}

/// `FILE` → `FILE.gz` (man pages are installed compressed).
fn gzip(file: &Path) -> Result<()> {
    let data = std::fs::read(file)?;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(&data)?;
    let mut name = file.as_os_str().to_owned();
    name.push(".gz");
    std::fs::write(PathBuf::from(name), gz.finish()?)?;
    std::fs::remove_file(file)?;
    Ok(())
}

/// The .deb (tracer-user's `[package.metadata.deb]`), packed from what `dist` just built.
fn build_deb(out: &Path) -> Result<PathBuf> {
    run(Command::new("cargo-deb")
        .current_dir(workspace_root())
        .args(["-p", "tracer-user", "--no-build", "--no-strip"])
        .args(["--target", MUSL_TARGET, "--output"])
        .arg(out))?;
    let deb = std::fs::read_dir(out)?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "deb"))
        .context("cargo-deb wrote no .deb")?;
    Ok(deb)
}

/// `cargo xtask image`: sets up, then [`build_image`].
pub fn image() -> Result<()> {
    setup::setup(&[Scope::Image])?;
    build_image()
}

/// [`build_dist`], then `deploy/Containerfile` on `target/dist/` into the local podman
/// storage as [`IMAGE`], pulling nothing.
pub fn build_image() -> Result<()> {
    let out = build_dist()?;
    let containerfile = workspace_root().join("deploy/Containerfile");
    run(Command::new("podman")
        .args(["build", "--pull=never", "--tag", IMAGE, "--file"])
        .arg(&containerfile)
        .arg(&out))?;
    println!("image: {IMAGE} (podman image exists {IMAGE})");
    Ok(())
}
