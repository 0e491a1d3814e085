//! Root filesystems and OCI bundles from busybox-static (no image pulls).

use anyhow::{ensure, Context, Result};
use std::path::{Path, PathBuf};

/// Applets linked in the rootfs.
const APPLETS: &[&str] = &["sh", "true", "sleep", "echo", "cat", "ls", "ps"];

/// Builds `dir` into a busybox-static root filesystem.
pub fn busybox_rootfs(dir: &Path) -> Result<PathBuf> {
    let busybox = ["/bin/busybox", "/usr/bin/busybox"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .context("busybox-static is not installed (apt-get install busybox-static)")?;
    std::fs::create_dir_all(dir.join("bin"))?;
    for d in ["proc", "sys", "dev", "tmp", "etc"] {
        std::fs::create_dir_all(dir.join(d))?;
    }
    std::fs::copy(&busybox, dir.join("bin/busybox"))?;
    for applet in APPLETS {
        let link = dir.join("bin").join(applet);
        if std::fs::symlink_metadata(&link).is_err() {
            std::os::unix::fs::symlink("busybox", link)?;
        }
    }
    Ok(dir.to_path_buf())
}

/// Builds an OCI bundle in `dir` (`dir/rootfs` + `config.json` from `runc spec`) running `args`.
pub fn busybox_bundle(dir: &Path, args: &[&str]) -> Result<PathBuf> {
    busybox_rootfs(&dir.join("rootfs"))?;
    let _ = std::fs::remove_file(dir.join("config.json"));
    let status = std::process::Command::new("runc")
        .arg("spec")
        .current_dir(dir)
        .status()
        .context("runc is not installed (apt-get install runc)")?;
    ensure!(status.success(), "runc spec failed");
    let path = dir.join("config.json");
    let mut config: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path)?)?;
    config["process"]["terminal"] = false.into();
    config["process"]["args"] = args.iter().map(|a| serde_json::Value::from(*a)).collect();
    std::fs::write(&path, serde_json::to_vec_pretty(&config)?)?;
    Ok(dir.to_path_buf())
}
