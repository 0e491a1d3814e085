//! Root tests of `tracer trace`'s lines as strace users read them: time stamps against the
//! machine's clock, a signal under its receiver with `-Y` names, a trace read back as a tree,
//! and strace's exit status at Ctrl-C and SIGTERM. Truth from outside the tool: the system
//! clock, the pids and names the test's own shells print and /proc shows. Run by `cargo xtask
//! test` as root (`--ignored`).
#![cfg(feature = "capture")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tests::temp_dir;

const DAY_NS: i128 = 86_400_000_000_000;

fn tracer() -> PathBuf {
    tests::bins::release_tracer().expect("release tracer binary")
}

fn now_ns() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_nanos() as i128
}

/// `tracer trace ARGS -o FILE -- sh -c SCRIPT` with TZ=UTC; the lines and the run's output.
fn trace_sh(args: &[&str], script: &str, dir: &Path) -> (Vec<String>, Output) {
    let lines = dir.join("lines.txt");
    let out = Command::new(tracer())
        .env("TZ", "UTC")
        .arg("trace")
        .args(args)
        .arg("-o")
        .arg(&lines)
        .args(["--", "sh", "-c", script])
        .output()
        .expect("tracer trace");
    let text = std::fs::read_to_string(&lines).unwrap_or_default();
    (text.lines().map(String::from).collect(), out)
}

/// The `-tt` stamp of a line: after `[pid N] `, or first when the line is no task's.
fn stamp_of(line: &str) -> Option<i128> {
    let rest = match line.strip_prefix("[pid") {
        Some(r) => r.split_once("] ")?.1,
        None => line,
    };
    let tok = rest.split(' ').next()?;
    let (hms, us) = tok.split_once('.')?;
    let mut parts = hms.split(':').map(|p| p.parse::<i128>().ok());
    let (h, m, s) = (parts.next()??, parts.next()??, parts.next()??);
    let us: i128 = us.parse().ok().filter(|_| us.len() == 6)?;
    Some(((h * 60 + m) * 60 + s) * 1_000_000_000 + us * 1000)
}

/// Every `trace -tt` line carries a time of day within a second of the machine's clock as the
/// test read it before and after the run (UTC, so the time zone cannot hide an offset).
#[test]
#[ignore = "root"]
fn trace_tt_lines_are_within_a_second_of_the_machines_clock() {
    let dir = temp_dir("lines-tt").expect("temp dir");
    let before = now_ns();
    let (lines, out) = trace_sh(&["-tt"], "sleep 0.3; /bin/true", &dir);
    let after = now_ns();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(out.status.success(), "{out:?}");
    let stamps: Vec<i128> = lines.iter().filter_map(|l| stamp_of(l)).collect();
    assert_eq!(
        stamps.len(),
        lines.len(),
        "a line without a -tt stamp: {lines:#?}"
    );
    assert!(stamps.len() >= 4, "{lines:#?}");
    let (lo, hi) = ((before - 1_000_000_000), (after + 1_000_000_000));
    for (line, t) in lines.iter().zip(&stamps) {
        // The time of day in [before - 1 s, after + 1 s], midnight included.
        let from_lo = (t - lo.rem_euclid(DAY_NS)).rem_euclid(DAY_NS);
        assert!(
            from_lo <= hi - lo,
            "{line} is not within a second of {before}..{after}"
        );
    }
}

/// The pids and names a script prints: `$$`, `$!`... one per line.
fn printed(file: &Path) -> Vec<String> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(String::from)
        .collect()
}

/// A shell kills its background `sleep` once /proc shows it blocked in its nanosleep (its
/// comm reads `sleep` already inside execve, before the exec's tracepoint fires; blocked in
/// the sleep, the exec is done): the SIGTERM line is the
/// job's, `[pid JOB<sleep>]`, with the shell as `si_pid=SHELL<sh>` and the test's uid; the
/// shell's SIGCHLD is under the shell. Truth: the pids and names the shell read from /proc.
#[test]
#[ignore = "root"]
fn a_signal_is_printed_under_its_receiver_with_y_names() {
    let dir = temp_dir("lines-signal").expect("temp dir");
    let pids = dir.join("pids");
    let script = format!(
        "exec >'{}'; echo $$; read me </proc/$$/comm; echo $me; sleep 100 & echo $!; \
         while read n r </proc/$!/syscall; [ \"$n\" != 230 ] && [ \"$n\" != 35 ]; do :; done; \
         kill -TERM $!; wait",
        pids.display()
    );
    let (lines, out) = trace_sh(&["-Y"], &script, &dir);
    let said = printed(&pids);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(out.status.success(), "{out:?}");
    let [shell, shell_comm, job] = &said[..] else {
        panic!("the shell printed {said:?}");
    };
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    let term = format!(
        "[pid {job:>6}<sleep>] --- SIGTERM {{si_signo=SIGTERM, si_code=SI_USER, si_pid={shell}<{shell_comm}>, si_uid={uid}}} ---"
    );
    let terms: Vec<&String> = lines.iter().filter(|l| l.contains("SIGTERM {")).collect();
    assert_eq!(terms, [&term], "{lines:#?}");
    let chld = format!("[pid {shell:>6}<{shell_comm}>] --- SIGCHLD {{si_signo=SIGCHLD, si_code=CLD_KILLED, si_pid={job}<sleep>, si_uid={uid}}} ---");
    assert!(lines.contains(&chld), "no {chld}: {lines:#?}");
}

/// (ppid, exit_code) of `pid` in `tracer tree --format json`'s processes.
fn parent_and_exit(tree: &serde_json::Value, pid: u32) -> Option<(u64, Option<i64>)> {
    tree["processes"]
        .as_array()?
        .iter()
        .rev()
        .find(|p| p["pid"].as_u64() == Some(u64::from(pid)))
        .map(|p| (p["ppid"].as_u64().unwrap_or(0), p["exit_code"].as_i64()))
}

/// `trace -o F` (with every decoration) then `tree F`: the processes the test's shells
/// started, under the parents that started them, with their exit codes.
#[test]
#[ignore = "root"]
fn a_trace_read_back_is_the_tree_the_shells_made() {
    let dir = temp_dir("lines-tree").expect("temp dir");
    let pids = dir.join("pids");
    let script = format!(
        "exec >'{}'; echo $$; sh -c 'echo $$; sleep 0.1 & echo $!; wait'; sh -c 'echo $$; exit 3'; true",
        pids.display()
    );
    for opts in [
        &[][..],
        &["-tt", "-Y", "--seq"],
        &["-r", "--decode-pids=all", "--syscalls"],
    ] {
        let (lines, out) = trace_sh(opts, &script, &dir);
        assert!(out.status.success(), "{opts:?}: {out:?}");
        let said: Vec<u32> = printed(&pids)
            .iter()
            .filter_map(|l| l.parse().ok())
            .collect();
        let [shell, a, b, c] = said[..] else {
            panic!("{opts:?}: the shells printed {said:?}");
        };
        let tree = Command::new(tracer())
            .args(["tree", "--format", "json"])
            .arg(dir.join("lines.txt"))
            .output()
            .expect("tracer tree");
        assert!(tree.status.success(), "{opts:?}: {tree:?}\n{lines:#?}");
        let json: serde_json::Value = serde_json::from_slice(&tree.stdout).expect("tree JSON");
        let want = [(a, shell, 0), (b, a, 0), (c, shell, 3)];
        for (pid, parent, code) in want {
            let got = parent_and_exit(&json, pid);
            assert_eq!(
                got,
                Some((u64::from(parent), Some(code))),
                "{opts:?} {pid}: {lines:#?}"
            );
        }
        // The command's own start is not in the lines (the tracer started it): the only
        // warnings are about it, none about the processes the lines saw born.
        let warnings = json["warnings"].as_array().expect("warnings");
        for w in warnings {
            assert_eq!(w["pid"].as_u64(), Some(u64::from(shell)), "{opts:?}: {w}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The pid of `parent`'s child running `comm`, once /proc shows it (up to 10 s).
fn child_named(parent: u32, comm: &str) -> Option<u32> {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        let path = format!("/proc/{parent}/task/{parent}/children");
        let kids = std::fs::read_to_string(path).unwrap_or_default();
        for kid in kids
            .split_whitespace()
            .filter_map(|k| k.parse::<u32>().ok())
        {
            let c = std::fs::read_to_string(format!("/proc/{kid}/comm")).unwrap_or_default();
            if c.trim() == comm {
                return Some(kid);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

/// `tracer SUBCOMMAND ... -- sleep 30` stopped by `sig`, sent as a terminal's Ctrl-C is (to
/// the whole process group) or to the tracer alone: its exit status.
fn stopped_status(sub: &[&str], sig: i32, group: bool) -> Option<i32> {
    use std::os::unix::process::CommandExt;
    let mut t = Command::new(tracer())
        .args(sub)
        .args(["--", "sleep", "30"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .expect("tracer");
    let pid = t.id();
    let sleep = child_named(pid, "sleep");
    let target = if group { -(pid as i32) } else { pid as i32 };
    // SAFETY: signalling the child (or its process group) this test started.
    unsafe { libc::kill(target, sig) };
    let status = t.wait().expect("wait");
    if let Some(s) = sleep {
        // SAFETY: the sleep the tracer started for this test, if it is still there.
        unsafe { libc::kill(s as i32, libc::SIGKILL) };
    }
    assert!(sleep.is_some(), "{sub:?}: /proc never showed the sleep");
    status.code()
}

/// strace's exit status: Ctrl-C (SIGINT to the foreground group: the command dies of it) is
/// 130, SIGTERM to the tracer alone 143, for `trace` and `record`.
#[test]
#[ignore = "root"]
fn ctrl_c_and_sigterm_exit_as_strace_does() {
    let dir = temp_dir("lines-exit").expect("temp dir");
    let rec = dir.join("r.trace");
    let rec = rec.to_str().expect("utf-8 path");
    for sub in [&["trace"][..], &["record", "-o", rec]] {
        assert_eq!(
            stopped_status(sub, libc::SIGINT, true),
            Some(130),
            "{sub:?}"
        );
        assert_eq!(
            stopped_status(sub, libc::SIGTERM, false),
            Some(143),
            "{sub:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
