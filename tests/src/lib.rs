//! Shared helpers for the end-to-end tests: run a command under live capture, build OCI
//! bundles from busybox-static.

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use tracer::Event;

/// What a capture of one command delivered.
#[derive(Debug)]
pub struct Captured {
    pub events: Vec<Event>,
    pub drops: u64,
    pub seq_issued: u64,
    /// The command's pid (host namespace).
    pub pid: u32,
    pub status: Option<std::process::ExitStatus>,
}

/// True when the process may load BPF programs (root tests skip otherwise... but are
/// `#[ignore = "root"]` anyway, so this only guards a manual `--ignored` run).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Runs `argv` followed from its first instruction until every followed process is gone.
/// With `read_live == false` nothing is read until the command exits (to force drops).
#[cfg(feature = "capture")]
pub fn capture_command(argv: &[&str], ring_bytes: u32, read_live: bool) -> Result<Captured> {
    use std::time::{Duration, Instant};
    use tracer::capture::{CaptureBuilder, Target};
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let target = Target::Command(argv.iter().map(|s| s.to_string()).collect());
        let mut cap = CaptureBuilder::new(target).ring_bytes(ring_bytes).start()?;
        let pid = cap.child_pid().context("command pid")?;
        let mut events = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(60);
        if !read_live {
            let child = cap.child_mut().context("child")?;
            child.wait()?;
            // Let descendants finish too.
            while cap.followed_count() > 0 && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        while cap.followed_count() > 0 && Instant::now() < deadline {
            let _ =
                tokio::time::timeout(Duration::from_millis(50), cap.next_batch(&mut events)).await;
        }
        cap.drain_now(&mut events);
        let status = cap.child_mut().and_then(|c| c.wait().ok());
        Ok(Captured {
            drops: cap.drops(),
            seq_issued: cap.seq_issued(),
            events,
            pid,
            status,
        })
    })
}

/// Path of a program, searched in PATH.
pub fn which(prog: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join(prog))
        .find(|p| p.is_file())
}

/// Builds an OCI bundle in `dir` whose rootfs is busybox-static, running `args`.
pub fn busybox_bundle(dir: &Path, args: &[&str]) -> Result<PathBuf> {
    let busybox = ["/bin/busybox", "/usr/bin/busybox"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .context("busybox-static is not installed (apt-get install busybox-static)")?;
    let rootfs = dir.join("rootfs");
    std::fs::create_dir_all(rootfs.join("bin"))?;
    for d in ["proc", "sys", "dev", "tmp", "etc"] {
        std::fs::create_dir_all(rootfs.join(d))?;
    }
    std::fs::copy(&busybox, rootfs.join("bin/busybox"))?;
    for applet in ["sh", "true", "sleep", "echo", "cat", "ls"] {
        let link = rootfs.join("bin").join(applet);
        if !link.exists() {
            std::os::unix::fs::symlink("busybox", link)?;
        }
    }
    let status = std::process::Command::new("runc")
        .arg("spec")
        .current_dir(dir)
        .status()
        .context("runc is not installed (apt-get install runc)")?;
    anyhow::ensure!(status.success(), "runc spec failed");
    let path = dir.join("config.json");
    let mut config: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path)?)?;
    config["process"]["terminal"] = false.into();
    config["process"]["args"] = args.iter().map(|a| serde_json::Value::from(*a)).collect();
    std::fs::write(&path, serde_json::to_vec_pretty(&config)?)?;
    Ok(dir.to_path_buf())
}

/// A fresh, empty temporary directory (removed by the caller).
pub fn temp_dir(tag: &str) -> Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("tracer-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}
