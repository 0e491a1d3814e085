//! The node package from `cargo xtask dist` (run before the root tests by `cargo xtask test`):
//! the static binary runs where there is no library at all, its checksum holds, and the .deb
//! installs with dpkg, traces from its installed path, and is removed without a trace.

use std::path::{Path, PathBuf};
use std::process::Command;

use tests::prereq::{require, require_program, require_root};

fn dist_dir() -> PathBuf {
    tests::workspace_root().join("target/dist")
}

/// The .deb in target/dist, if `cargo xtask dist` made one.
fn deb() -> Option<PathBuf> {
    std::fs::read_dir(dist_dir())
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "deb"))
}

fn output(cmd: &mut Command) -> (bool, String, String) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn dpkg_installed(pkg: &str) -> bool {
    tests::packages::dpkg_installed(pkg)
}

#[test]
#[ignore = "root: needs `cargo xtask dist`; runs the binary in an empty root"]
fn the_static_binary_runs_with_no_library_and_matches_its_checksum() {
    let dir = dist_dir();
    let tracer = dir.join("tracer");
    if !(require_root()
        && require(
            "dist",
            tracer.is_file(),
            "`cargo xtask dist` writes target/dist/tracer",
        ))
    {
        return;
    }
    let (ok, out, err) = output(
        Command::new("sha256sum")
            .arg("-c")
            .arg("tracer.sha256")
            .current_dir(&dir),
    );
    assert!(ok, "sha256sum -c: {out}{err}");
    // kubectl's plugin: a link to the binary beside it, as the .deb installs it.
    let link = std::fs::read_link(dir.join("kubectl-tracer")).expect("target/dist/kubectl-tracer");
    assert_eq!(
        link,
        Path::new("tracer"),
        "kubectl-tracer links to {link:?}"
    );
    // An empty root: no libc, no loader, no Rust, no LLVM. A dynamic binary cannot start here.
    let root = tests::temp_dir("dist-root").expect("temp dir");
    std::fs::copy(&tracer, root.join("tracer")).expect("copy");
    let (ok, out, err) = output(
        Command::new("chroot")
            .arg(&root)
            .args(["/tracer", "--version"]),
    );
    let _ = std::fs::remove_dir_all(&root);
    assert!(ok, "tracer --version in an empty root: {err}");
    assert!(out.starts_with("tracer "), "{out}");
}

#[test]
#[ignore = "root: installs and removes the .deb with dpkg"]
fn the_deb_installs_traces_and_removes_cleanly() {
    let Some(deb) = deb() else {
        assert!(!require(
            "dist",
            false,
            "`cargo xtask dist` writes target/dist/*.deb"
        ));
        return;
    };
    if !(require_root() && require_program("dpkg", "dpkg")) {
        return;
    }
    assert!(
        !dpkg_installed("tracer"),
        "a tracer package is already installed: not touching it"
    );
    let (ok, out, err) = output(Command::new("dpkg").arg("-i").arg(&deb));
    assert!(ok, "dpkg -i: {out}{err}");
    let result = std::panic::catch_unwind(|| check_installed(Path::new("/usr/bin/tracer")));
    let (ok, out, err) = output(Command::new("dpkg").args(["--purge", "tracer"]));
    assert!(ok, "dpkg --purge: {out}{err}");
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
    assert!(!dpkg_installed("tracer"));
    for gone in [
        "/usr/bin/tracer",
        "/usr/bin/kubectl-tracer",
        "/usr/share/man/man1/tracer.1.gz",
        "/usr/share/bash-completion/completions/tracer",
    ] {
        assert!(!Path::new(gone).exists(), "{gone} left behind");
    }
}

/// What the package put on the machine works from where it put it.
fn check_installed(bin: &Path) {
    let (_, files, _) = output(Command::new("dpkg").args(["-L", "tracer"]));
    for want in [
        "/usr/bin/tracer",
        "/usr/bin/kubectl-tracer",
        "/usr/share/man/man1/tracer.1.gz",
        "/usr/share/bash-completion/completions/tracer",
        "/usr/share/zsh/vendor-completions/_tracer",
        "/usr/share/fish/vendor_completions.d/tracer.fish",
    ] {
        assert!(
            files.lines().any(|l| l == want),
            "{want} not in the package: {files}"
        );
    }
    let (ok, version, err) = output(Command::new(bin).arg("--version"));
    assert!(ok && version.starts_with("tracer "), "{version}{err}");
    let plugin = bin.with_file_name("kubectl-tracer");
    let target = std::fs::read_link(&plugin).expect("/usr/bin/kubectl-tracer is a link");
    assert_eq!(
        plugin.with_file_name(target),
        bin,
        "kubectl-tracer links elsewhere"
    );
    let (ok, help, err) = output(Command::new(&plugin).arg("--help"));
    assert!(
        ok && help.contains("kubectl tracer"),
        "kubectl-tracer --help: {help}{err}"
    );
    let (ok, man, err) = output(Command::new("zcat").arg("/usr/share/man/man1/tracer.1.gz"));
    assert!(ok && man.contains(".TH tracer"), "man page: {err}");
    // A short live trace from the installed path: the probes are in the binary.
    let (ok, out, err) = output(Command::new(bin).args(["trace", "--", "true"]));
    assert!(ok, "tracer trace -- true: {err}");
    assert!(out.contains("true"), "no exec of true in: {out}");
    assert!(out.contains("+++ exited with 0 +++"), "no exit in: {out}");
}
