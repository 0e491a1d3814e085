//! The package installer of set-up and the labs (tests::packages) on a real package: a local
//! .deb whose maintainer script enables a systemd unit and an init script and starts the
//! service, as containerd's, podman's, nats-server's and prometheus's do. Installed through
//! the helper, nothing is started and nothing stays enabled.

use std::path::{Path, PathBuf};
use std::process::Command;

use tests::prereq::{require_program, require_root};

const PKG: &str = "tracer-test-service";
const MARKER: &str = "/run/tracer-test-service.started";
const POLICY: &str = "/usr/sbin/policy-rc.d";

/// Moves the machine's own policy-rc.d away while it lives (so the helper's is what is
/// tested); on drop purges the test package, puts the policy back, then removes `dir`.
struct Restore {
    saved: Option<PathBuf>,
    dir: PathBuf,
}

impl Drop for Restore {
    fn drop(&mut self) {
        let _ = Command::new("dpkg").args(["--purge", PKG]).output();
        let _ = std::fs::remove_file(MARKER);
        if let Some(saved) = &self.saved {
            let _ = std::fs::rename(saved, POLICY);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn write(path: &Path, text: &str, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
    std::fs::write(path, text).expect("write");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// A package with a unit and an init script, a postinst that enables both the way debhelper's
/// snippets do and starts the service unless policy-rc.d forbids it (exit 101, the check
/// invoke-rc.d and deb-systemd-invoke make; the start leaves a marker), and a postrm that
/// forgets the enablement state on purge.
fn build_deb(dir: &Path) -> PathBuf {
    let root = dir.join("pkg");
    write(
        &root.join("DEBIAN/control"),
        &format!("Package: {PKG}\nVersion: 1.0\nArchitecture: all\nMaintainer: tracer tests <t@localhost>\nDescription: a service that must not start\n"),
        0o644,
    );
    write(
        &root.join(format!("lib/systemd/system/{PKG}.service")),
        "[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n",
        0o644,
    );
    write(
        &root.join(format!("etc/init.d/{PKG}")),
        &format!("#!/bin/sh\n### BEGIN INIT INFO\n# Provides: {PKG}\n# Required-Start:\n# Required-Stop:\n# Default-Start: 2 3 4 5\n# Default-Stop: 0 1 6\n### END INIT INFO\n[ \"$1\" = start ] && touch {MARKER}\nexit 0\n"),
        0o755,
    );
    write(
        &root.join("DEBIAN/postinst"),
        &format!(
            "#!/bin/sh\nset -e\ndeb-systemd-helper enable {PKG}.service\nupdate-rc.d {PKG} defaults >/dev/null\n\
             rc=0\n[ -x {POLICY} ] && {{ {POLICY} {PKG} start || rc=$?; }}\n[ \"$rc\" = 101 ] || touch {MARKER}\n"
        ),
        0o755,
    );
    write(
        &root.join("DEBIAN/postrm"),
        &format!(
            "#!/bin/sh\nset -e\nif [ \"$1\" = purge ]; then\n  deb-systemd-helper purge {PKG}.service\n  update-rc.d {PKG} remove >/dev/null\nfi\n"
        ),
        0o755,
    );
    let deb = dir.join(format!("{PKG}.deb"));
    let st = Command::new("dpkg-deb")
        .args(["--root-owner-group", "--build"])
        .arg(&root)
        .arg(&deb)
        .output()
        .expect("dpkg-deb");
    assert!(
        st.status.success(),
        "dpkg-deb: {}",
        String::from_utf8_lossy(&st.stderr)
    );
    deb
}

#[test]
#[ignore = "root: installs and purges a local package with apt-get"]
fn packages_are_installed_without_starting_or_enabling_their_services() {
    if !(require_root()
        && require_program("apt-get", "apt")
        && require_program("deb-systemd-helper", "init-system-helpers"))
    {
        return;
    }
    assert!(
        !tests::packages::dpkg_installed(PKG),
        "{PKG} is installed: not touching it"
    );
    let dir = tests::temp_dir("packages").expect("temp dir");
    let deb = build_deb(&dir);
    let saved = Path::new(POLICY).exists().then(|| {
        let to = dir.join("policy-rc.d.saved");
        std::fs::rename(POLICY, &to).expect("move the machine's policy-rc.d aside");
        to
    });
    let _restore = Restore {
        saved,
        dir: dir.clone(),
    };
    let before = tests::packages::enabled_links();
    // apt-get takes a path to a local .deb where it takes a name.
    let path: &'static str = Box::leak(deb.to_string_lossy().into_owned().into_boxed_str());
    tests::packages::install("test", &[(path, "a package whose service must not start")])
        .expect("install");
    assert!(tests::packages::dpkg_installed(PKG), "not installed");
    assert!(
        !Path::new(MARKER).exists(),
        "the service was started during the install"
    );
    let new: Vec<PathBuf> = tests::packages::enabled_links()
        .difference(&before)
        .filter(|l| {
            !l.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('K'))
        })
        .cloned()
        .collect();
    assert!(new.is_empty(), "left enabled: {new:?}");
    assert!(
        !Path::new(POLICY).exists(),
        "the helper's policy-rc.d was left behind"
    );
}
