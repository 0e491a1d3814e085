//! `tracer record` killed with SIGKILL leaves a file that replays every whole frame.
//! Root and the probes (`#[ignore = "root"]`: `cargo xtask test` runs it as root); without
//! them it fails, unless opted out (tests/src/prereq.rs).
#![cfg(feature = "capture")]

#[allow(dead_code)]
#[path = "../../tests/src/prereq.rs"]
mod prereq;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tracer::tracefile::TraceReader;
use tracer::EventKind;

/// Execs of /bin/true in the file so far, and whether reading stopped on a non-truncation error.
fn trues(path: &std::path::Path) -> (usize, Option<String>) {
    let Ok(mut r) = TraceReader::open(path) else {
        return (0, None);
    };
    let mut n = 0;
    let mut bad = None;
    for ev in r.events() {
        match ev {
            Ok(ev) => {
                if matches!(&ev.kind, EventKind::Exec { filename, .. } if filename.value == "/bin/true")
                {
                    n += 1;
                }
            }
            Err(e) if e.is_truncation() => {}
            Err(e) => bad = Some(e.to_string()),
        }
    }
    (n, bad)
}

/// Waits until the recording at `path` holds the ten execs of /bin/true and the shell wrote
/// `pidfile`; false when the recorder ended because this machine cannot load the probes.
fn wait_for_the_execs(child: &mut std::process::Child, path: &Path, pidfile: &Path) -> bool {
    // A generous ceiling: only a recorder that never writes the execs reaches it.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            let mut err = String::new();
            use std::io::Read;
            let _ = child.stderr.take().unwrap().read_to_string(&mut err);
            // Exit code 2: this machine cannot load the probes (privilege, kernel feature).
            if !prereq::require("probes", status.code() != Some(2), err.trim()) {
                return false;
            }
            panic!("tracer record ended early ({status}): {err}");
        }
        // Events reach the file within the 200 ms flush interval, while it runs.
        if (trues(path).0 >= 10 && pidfile.exists()) || Instant::now() > deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    true
}

#[test]
#[ignore = "root"]
fn sigkilled_record_keeps_every_whole_frame() {
    if !prereq::require_root() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("record-sigkill-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("k.trace");
    // An older recording at the path, 0644, with a second name: replaced by a new 0600 file,
    // never truncated or chmod'ed in place (the other name keeps it as it was).
    std::fs::write(&path, "old recording").unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let other = dir.join("other-name");
    std::fs::hard_link(&path, &other).unwrap();
    let pidfile = dir.join("sleep.pid");
    // The command never ends by itself: the test waits for the ten execs, however slow the
    // machine, then kills the recorder (and, after it, the orphaned sleep).
    let script = format!(
        "for i in 1 2 3 4 5 6 7 8 9 10; do /bin/true; done; echo $$ > {}; exec sleep 600",
        pidfile.display()
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_tracer"))
        .arg("record")
        .arg("-o")
        .arg(&path)
        .args(["--", "sh", "-c", &script])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if !wait_for_the_execs(&mut child, &path, &pidfile) {
        return;
    }
    child.kill().unwrap(); // SIGKILL
    let _ = child.wait();
    if let Some(pid) = std::fs::read_to_string(&pidfile)
        .ok()
        .and_then(|p| p.trim().parse::<i32>().ok())
    {
        // SAFETY: kill has no memory preconditions; the pid is the sleep this test started.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    let (n, bad) = trues(&path);
    assert_eq!(bad, None);
    assert_eq!(n, 10, "every /bin/true exec is in the killed recording");
    let mut r = TraceReader::open(&path).unwrap();
    assert!(
        r.header().snapshot.len() > 1,
        "the /proc snapshot is recorded"
    );
    assert!(
        !r.header().layouts.is_empty(),
        "the tracefs layouts are recorded"
    );
    let _ = r.events().count();
    assert!(!r.tail().clean_end, "no end record after SIGKILL");
    let mode = std::fs::metadata(&path).unwrap();
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(mode.permissions().mode() & 0o777, 0o600);
    let kept = std::fs::metadata(&other).unwrap();
    assert_eq!(kept.permissions().mode() & 0o777, 0o644);
    assert_eq!(std::fs::read(&other).unwrap(), b"old recording");
    std::fs::remove_dir_all(&dir).unwrap();
}
