//! Output paths another user prepared, end to end through the binary, in a world-writable
//! sticky directory like /tmp: a planted symlink (to a file of root's; to a loop block device),
//! another user's file, and a block device named directly survive every writer untouched, and
//! the writer exits non-zero with one line naming the path and the rule.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
use common::{sample, text, tracer};
#[path = "../../tests/src/prereq.rs"]
mod prereq;

/// A shared directory (mode 1777) with a file of the test's user to aim links at.
struct Shared {
    dir: PathBuf,
    victim: PathBuf,
    input: PathBuf,
    log: PathBuf,
}

impl Shared {
    fn new(name: &str) -> Shared {
        let dir = common::temp("cli-outputs", name);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o1777)).unwrap();
        let victim = dir.join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let (input, _) = sample(&dir, 50);
        let log = dir.join("strace.log");
        std::fs::write(&log, "100 execve(\"/bin/true\", [\"true\"], 0x7ffc /* 0 vars */) = 0\n100 exit_group(0) = ?\n100 +++ exited with 0 +++\n").unwrap();
        Shared {
            dir,
            victim,
            input,
            log,
        }
    }

    /// A symlink named `name` pointing at `to`.
    fn link(&self, name: &str, to: &Path) -> PathBuf {
        let l = self.dir.join(name);
        std::os::unix::fs::symlink(to, &l).unwrap();
        l
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Every command that writes an output file, aimed at `out`; the live ones only as root
/// (they load the probes).
fn writers(s: &Shared, out: &Path, live: bool) -> Vec<Vec<String>> {
    let (i, o) = (s.input.to_str().unwrap(), out.to_str().unwrap());
    let mut w = vec![
        vec!["export", "--format", "jsonl", i, "-o", o],
        vec!["export", "--format", "svg", i, "-o", o],
        vec!["import-strace", s.log.to_str().unwrap(), "-o", o],
        vec!["tree", i, "-o", o],
        vec!["story", i, "-o", o],
        vec!["demo", "pod", "-o", o],
    ];
    if live {
        w.push(vec!["record", "-o", o, "--", "true"]);
        w.push(vec!["trace", "-o", o, "--", "true"]);
    }
    w.into_iter()
        .map(|c| c.into_iter().map(String::from).collect())
        .collect()
}

/// Each writer fails with one line naming `out` and `rule`, and `intact()` still holds.
fn refused_by_all(s: &Shared, out: &Path, live: bool, rule: &str, intact: &dyn Fn() -> bool) {
    for cmd in writers(s, out, live) {
        let r = tracer(&cmd.iter().map(String::as_str).collect::<Vec<_>>());
        let err = text(&r.stderr);
        assert!(!r.status.success(), "{cmd:?} succeeded");
        assert_ne!(r.status.code(), Some(101), "{cmd:?} panicked: {err}");
        let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("tracer: ")).collect();
        assert_eq!(lines.len(), 1, "{cmd:?}: one error line expected: {err}");
        assert!(lines[0].contains(out.to_str().unwrap()), "{cmd:?}: {err}");
        assert!(lines[0].contains(rule), "{cmd:?}: {err}");
        assert!(intact(), "{cmd:?} changed what {} points at", out.display());
    }
}

#[test]
fn a_planted_symlink_is_never_written_through() {
    let s = Shared::new("symlink");
    let link = s.link("out", &s.victim);
    let intact = || std::fs::read(&s.victim).unwrap() == b"precious";
    refused_by_all(&s, &link, false, "symbolic link", &intact);
    assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
}

/// `ln -s /etc-like-dir /tmp/x/traces` by another user, then root's `-o /tmp/x/traces/passwd`:
/// a link in a directory of the path is refused like a final one, and nothing behind it is
/// created or replaced.
#[test]
fn a_planted_directory_symlink_is_never_walked_through() {
    let s = Shared::new("dir-symlink");
    let etc = s.dir.join("etc-like");
    std::fs::create_dir(&etc).unwrap();
    std::fs::write(etc.join("passwd"), "root:x:0:0").unwrap();
    let traces = s.dir.join("traces");
    plant_link(&etc, &traces);
    let intact = || {
        std::fs::read(etc.join("passwd")).unwrap() == b"root:x:0:0"
            && std::fs::read_dir(&etc).unwrap().count() == 1
    };
    for out in ["passwd", "fresh.json"] {
        refused_by_all(
            &s,
            &traces.join(out),
            false,
            "traces is a symbolic link",
            &intact,
        );
    }
}

/// A symlink at `link` to `to`, made by nobody when the tests run as root (as another user of
/// a shared /tmp would), else by the test's user.
fn plant_link(to: &Path, link: &Path) {
    if !prereq::is_root() {
        std::os::unix::fs::symlink(to, link).unwrap();
        return;
    }
    let st = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "ln",
            "-s",
        ])
        .args([to, link])
        .status()
        .expect("setpriv (util-linux)");
    assert!(st.success());
    use std::os::unix::fs::MetadataExt;
    assert_eq!(std::fs::symlink_metadata(link).unwrap().uid(), 65534);
}

/// A loop device over a 1 MiB file of a known pattern, detached on drop.
struct Loop {
    dev: PathBuf,
    backing: PathBuf,
}

impl Loop {
    fn new(dir: &Path) -> Loop {
        let backing = dir.join("disk.img");
        std::fs::write(&backing, pattern()).unwrap();
        let out = Command::new("losetup")
            .args(["--find", "--show"])
            .arg(&backing)
            .output()
            .expect("losetup");
        assert!(out.status.success(), "losetup: {}", text(&out.stderr));
        Loop {
            dev: PathBuf::from(text(&out.stdout).trim()),
            backing,
        }
    }

    fn intact(&self) -> bool {
        std::fs::read(&self.dev).is_ok_and(|b| b == pattern())
            && std::fs::read(&self.backing).is_ok_and(|b| b == pattern())
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.dev).status();
    }
}

fn pattern() -> Vec<u8> {
    (0..1 << 20).map(|i: u32| (i % 251) as u8).collect()
}

#[test]
#[ignore = "root: a loop block device, a file of another uid, and the live writers"]
fn outputs_aimed_at_devices_root_files_and_other_users_files_are_refused() {
    if !(prereq::require_root() && prereq::require_program("losetup", "mount")) {
        return;
    }
    let s = Shared::new("root");
    // A file of root's, behind a link another user could plant in a sticky directory.
    let link = s.link("to-root-file", &s.victim);
    let intact = || std::fs::read(&s.victim).unwrap() == b"precious";
    refused_by_all(&s, &link, true, "symbolic link", &intact);

    let disk = Loop::new(&s.dir);
    let to_dev = s.link("to-disk", &disk.dev);
    refused_by_all(&s, &to_dev, true, "symbolic link", &|| disk.intact());
    refused_by_all(&s, &disk.dev, true, "block device", &|| disk.intact());

    let theirs = s.dir.join("theirs.trace");
    std::fs::write(&theirs, "their data").unwrap();
    std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
    let owned = || {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::symlink_metadata(&theirs).unwrap();
        m.uid() == 65534 && std::fs::read(&theirs).unwrap() == b"their data"
    };
    refused_by_all(&s, &theirs, true, "belongs to uid 65534", &owned);
}
