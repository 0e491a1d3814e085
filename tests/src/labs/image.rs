//! Container images without a registry: a root filesystem written as an OCI image layout
//! (one uncompressed layer, config, manifest, index) in a tar archive, for `ctr images import`.

use anyhow::{Context, Result};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::labs::system::output;

/// A blob written into the layout: its digest (`sha256:…`) and size.
struct Blob {
    digest: String,
    size: u64,
}

/// Moves `file` into `layout/blobs/sha256/<digest>`.
fn add_blob(layout: &Path, file: &Path) -> Result<Blob> {
    let sum = output(Command::new("sha256sum").arg(file))?;
    let hex = sum
        .split_whitespace()
        .next()
        .filter(|h| h.len() == 64)
        .with_context(|| format!("sha256sum {}: {sum:?}", file.display()))?
        .to_string();
    let size = std::fs::metadata(file)?.len();
    let dir = layout.join("blobs/sha256");
    std::fs::create_dir_all(&dir)?;
    std::fs::rename(file, dir.join(&hex))?;
    Ok(Blob {
        digest: format!("sha256:{hex}"),
        size,
    })
}

fn add_json(layout: &Path, name: &str, v: &serde_json::Value) -> Result<Blob> {
    let f = layout.join(name);
    std::fs::write(&f, serde_json::to_vec(v)?)?;
    add_blob(layout, &f)
}

/// The OCI architecture name of this machine.
fn oci_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    }
}

/// Writes `rootfs` as the OCI image `name` (e.g. `tracer-lab.local/pause:1`) running
/// `entrypoint`, into `work/<file>.tar`; returns the archive.
pub fn oci_archive(work: &Path, rootfs: &Path, name: &str, entrypoint: &[&str]) -> Result<PathBuf> {
    let stem = name.replace(['/', ':'], "_");
    let layout = work.join(format!("{stem}.layout"));
    let _ = std::fs::remove_dir_all(&layout);
    std::fs::create_dir_all(&layout)?;
    let layer_tar = layout.join("layer.tar");
    // Numeric owners, no mtimes that matter: the layer is the rootfs as it is.
    output(
        Command::new("tar")
            .arg("--numeric-owner")
            .arg("-C")
            .arg(rootfs)
            .arg("-cf")
            .arg(&layer_tar)
            .arg("."),
    )?;
    let layer = add_blob(&layout, &layer_tar)?;
    let config = add_json(
        &layout,
        "config.json",
        &json!({
            "architecture": oci_arch(),
            "os": "linux",
            "config": { "Entrypoint": entrypoint, "WorkingDir": "/" },
            "rootfs": { "type": "layers", "diff_ids": [layer.digest] },
        }),
    )?;
    let manifest = add_json(
        &layout,
        "manifest.json",
        &json!({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {
                "mediaType": "application/vnd.oci.image.config.v1+json",
                "digest": config.digest, "size": config.size,
            },
            "layers": [{
                "mediaType": "application/vnd.oci.image.layer.v1.tar",
                "digest": layer.digest, "size": layer.size,
            }],
        }),
    )?;
    let tag = name.rsplit_once(':').map_or("latest", |(_, t)| t);
    std::fs::write(
        layout.join("index.json"),
        serde_json::to_vec(&json!({
            "schemaVersion": 2,
            "manifests": [{
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "digest": manifest.digest, "size": manifest.size,
                "annotations": {
                    "io.containerd.image.name": name,
                    "org.opencontainers.image.ref.name": tag,
                },
            }],
        }))?,
    )?;
    std::fs::write(
        layout.join("oci-layout"),
        br#"{"imageLayoutVersion":"1.0.0"}"#,
    )?;
    let archive = work.join(format!("{stem}.tar"));
    output(
        Command::new("tar")
            .arg("-C")
            .arg(&layout)
            .arg("-cf")
            .arg(&archive)
            .args(["oci-layout", "index.json", "blobs"]),
    )?;
    Ok(archive)
}
