//! Debian packages, installed the one way set-up and the labs share: only the missing ones,
//! each named with why it is needed, and without leaving a service behind. Packages such as
//! containerd, podman, nats-server and prometheus ship units that their maintainer scripts
//! enable and start; on a developer's machine that would be a second, system containerd or an
//! unauthenticated NATS on :4222. The tests start their own instances, so:
//!
//! - while apt runs, `/usr/sbin/policy-rc.d` answers 101 ("action forbidden"), which
//!   `invoke-rc.d` and `deb-systemd-invoke` obey: nothing is started;
//! - every unit or init script the install enabled (a new link under /etc/systemd/system or
//!   /etc/rc?.d) is disabled again, with the tools Debian's own scripts use.
//!
//! Units the administrator had enabled before are never touched.

use anyhow::{bail, Context, Result};
use std::collections::BTreeSet;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A package and the one-line reason it is installed.
pub type Need = (&'static str, &'static str);

/// Where Debian's service policy hook lives.
const POLICY_RC_D: &str = "/usr/sbin/policy-rc.d";

/// Whether a Debian package is installed.
pub fn dpkg_installed(pkg: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", pkg])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"))
        .unwrap_or(false)
}

/// The needs whose package is not installed yet.
pub fn missing(needs: &[Need]) -> Vec<Need> {
    needs
        .iter()
        .copied()
        .filter(|(p, _)| !dpkg_installed(p))
        .collect()
}

/// Installs the missing packages of `needs` (root, apt-get), one `who: install` line per
/// package with its reason, starting no service and leaving none enabled. Returns how many it
/// installed.
pub fn install(who: &str, needs: &[Need]) -> Result<usize> {
    let missing = missing(needs);
    if missing.is_empty() {
        return Ok(0);
    }
    let names: Vec<&str> = missing.iter().map(|(p, _)| *p).collect();
    if !Path::new("/usr/bin/apt-get").exists() {
        bail!(
            "missing packages {} and this is not a Debian-like system (no apt-get): install them by hand",
            names.join(" ")
        );
    }
    if !crate::prereq::is_root() {
        bail!(
            "missing packages {}: run as root (or `sudo apt-get install {}`)",
            names.join(" "),
            names.join(" ")
        );
    }
    for (pkg, why) in &missing {
        println!("{who}: install   {pkg}: {why}");
    }
    let before = enabled_links();
    let result = {
        let _hold = ServiceHold::new()?;
        apt_install(&names)
    };
    for unit in disable_new(&before) {
        println!("{who}: disabled  {unit} (installed for the tests, which start their own)");
    }
    result.map(|()| missing.len())
}

fn apt_install(names: &[&str]) -> Result<()> {
    let ok = |c: &mut Command| c.status().map(|s| s.success()).unwrap_or(false);
    if !ok(Command::new("apt-get").args(["update", "-qq"])) {
        bail!("apt-get update failed");
    }
    if !ok(Command::new("apt-get")
        .args(["install", "-y", "-qq", "--no-install-recommends"])
        .args(names)
        .env("DEBIAN_FRONTEND", "noninteractive"))
    {
        bail!("apt-get install {} failed", names.join(" "));
    }
    Ok(())
}

/// The line that marks a policy-rc.d as this helper's own.
const HOLD_MARK: &str = "# tracer set-up: start no service while installing.";

/// `policy-rc.d` answering 101 while it lives, removed on drop. An administrator's own
/// policy-rc.d is left as it is (and then decides); one of ours left behind by an interrupted
/// run (Ctrl-C during apt) is recognised by its mark and removed this time.
struct ServiceHold {
    created: bool,
}

impl ServiceHold {
    fn new() -> Result<ServiceHold> {
        // create_new: never replaces a policy the administrator wrote.
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o755)
            .custom_flags(libc::O_NOFOLLOW)
            .open(POLICY_RC_D);
        match file {
            Ok(mut f) => {
                f.write_all(format!("#!/bin/sh\n{HOLD_MARK}\nexit 101\n").as_bytes())
                    .with_context(|| format!("cannot write {POLICY_RC_D}"))?;
                Ok(ServiceHold { created: true })
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let ours = std::fs::read_to_string(POLICY_RC_D)
                    .is_ok_and(|text| text.lines().any(|l| l == HOLD_MARK));
                Ok(ServiceHold { created: ours })
            }
            Err(e) => Err(e).with_context(|| format!("cannot create {POLICY_RC_D}")),
        }
    }
}

impl Drop for ServiceHold {
    fn drop(&mut self) {
        if self.created {
            let _ = std::fs::remove_file(POLICY_RC_D);
        }
    }
}

/// The directories whose links say a service is enabled: systemd's (`*.wants`, `*.requires`,
/// aliases) and sysvinit's runlevels.
fn link_dirs() -> Vec<PathBuf> {
    let mut dirs = vec![PathBuf::from("/etc/systemd/system")];
    dirs.extend(
        "0123456S"
            .chars()
            .map(|r| PathBuf::from(format!("/etc/rc{r}.d"))),
    );
    dirs
}

/// Every symlink under the enablement directories (two levels deep, as systemd lays them).
pub fn enabled_links() -> BTreeSet<PathBuf> {
    let mut links = BTreeSet::new();
    for dir in link_dirs() {
        collect_links(&dir, 2, &mut links);
    }
    links
}

fn collect_links(dir: &Path, depth: u32, out: &mut BTreeSet<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_symlink() {
            out.insert(entry.path());
        } else if kind.is_dir() && depth > 1 {
            collect_links(&entry.path(), depth - 1, out);
        }
    }
}

/// Disables what got enabled since `before`: systemd units with `deb-systemd-helper disable`
/// (which also records the choice, so an upgrade does not enable them again), init scripts
/// with `update-rc.d NAME disable`. Returns the units and scripts it disabled.
fn disable_new(before: &BTreeSet<PathBuf>) -> Vec<String> {
    let mut units = BTreeSet::new();
    let mut scripts = BTreeSet::new();
    for link in enabled_links().difference(before) {
        let Some(name) = link.file_name().map(|n| n.to_string_lossy().into_owned()) else {
            continue;
        };
        if link.starts_with("/etc/systemd/system") {
            units.insert(name);
        } else if let Some(script) = name.get(3..).filter(|_| name.starts_with('S')) {
            // /etc/rcN.d/S01name
            scripts.insert(script.to_string());
        }
    }
    let quiet = |c: &mut Command| {
        c.stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    for unit in &units {
        let _ = quiet(Command::new("deb-systemd-helper").args(["disable", unit]));
    }
    // Whatever links are left (no helper, or an alias it does not know) are the enablement
    // itself.
    for link in enabled_links().difference(before) {
        if link.starts_with("/etc/systemd/system") {
            let _ = std::fs::remove_file(link);
        }
    }
    for script in &scripts {
        let _ = quiet(Command::new("update-rc.d").args([script, "disable"]));
    }
    units.into_iter().chain(scripts).collect()
}
