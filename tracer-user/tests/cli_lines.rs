//! strace's line options on `replay`, end to end: a real `strace -f -tt` log's own times are
//! the ones replay prints; `-t` counts (`-tt` is not a command); `-e` words are checked; what
//! `replay` prints reads back as the same tree.

#[allow(dead_code)] // `sample` is for the trace-file suites
mod common;
#[allow(dead_code)] // the root checks are for the live suites
#[path = "../../tests/src/prereq.rs"]
mod prereq;

use common::{temp, text, tracer};
use std::collections::BTreeSet;

/// The `HH:MM:SS.uuuuuu` token of an strace line (after its pid column or `[pid N]`).
fn tod_stamp(line: &str) -> Option<String> {
    line.split_whitespace()
        .find(|t| t.len() == 15 && t.as_bytes()[2] == b':' && t.as_bytes()[8] == b'.')
        .map(String::from)
}

/// strace 6.1 records `sh` starting two children with `-f -tt`: `replay -tt` prints every
/// exec, exit and signal line with a stamp the log itself has (the log is the truth: it is
/// strace's, not ours), and the exec of each child at the very time strace saw it.
#[test]
fn a_real_strace_tt_logs_times_are_shown_by_replay() {
    if !prereq::require_program("strace", "strace") {
        return;
    }
    let dir = temp("cli-lines", "strace-tt");
    let log = dir.join("log");
    let st = std::process::Command::new("strace")
        .args(["-f", "-tt", "-o"])
        .arg(&log)
        .args(["sh", "-c", "/bin/true; sleep 0.2; /bin/true"])
        .status()
        .expect("strace");
    assert!(st.success());
    let logged = std::fs::read_to_string(&log).unwrap();
    let r = tracer(&["replay", "-tt", log.to_str().unwrap()]);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(r.status.success(), "{}", text(&r.stderr));
    let shown = text(&r.stdout);
    let log_stamps: BTreeSet<String> = logged.lines().filter_map(tod_stamp).collect();
    let lines: Vec<&str> = shown.lines().collect();
    assert!(lines.len() >= 6, "{shown}");
    for l in &lines {
        let s = tod_stamp(l).unwrap_or_else(|| panic!("no -tt stamp: {l}\n{shown}"));
        assert!(
            log_stamps.contains(&s),
            "{l}: {s} is not a time of the log\n{logged}"
        );
    }
    // Each execve of sh, sleep and true: the time of the log's line of its call.
    let execs = |t: &str| -> Vec<String> {
        t.lines()
            .filter(|l| l.contains("execve(\"/"))
            .filter_map(tod_stamp)
            .collect()
    };
    assert_eq!(execs(&shown), execs(&logged), "{shown}\n{logged}");
    assert!(execs(&logged).len() >= 3, "{logged}");
}

/// `-tt` is strace's flag, not a command (clap once took `-t` for the command and hinted
/// `-- -t`); an unknown `-e` word is one line and status 1.
#[test]
fn t_counts_and_e_words_are_checked() {
    let r = tracer(&[
        "replay",
        "-ttt",
        "-r",
        "-Y",
        "--decode-pids=pidns,k8s",
        "demo:pod",
    ]);
    assert!(r.status.success(), "{}", text(&r.stderr));
    let first = text(&r.stdout)
        .lines()
        .next()
        .map(String::from)
        .unwrap_or_default();
    // -r wins over -t, as in strace: the first line's gap is 0.
    assert!(first.contains("  0.000000 "), "{first}");
    for bad in ["trace=exce", "signal=SIGFOO", "verbose=all"] {
        let r = tracer(&["replay", "-e", bad, "demo:pod"]);
        let err = text(&r.stderr);
        assert_eq!(r.status.code(), Some(1), "{bad}: {err}");
        let lines: Vec<&str> = err.lines().filter(|l| l.contains(bad)).collect();
        assert_eq!(lines.len(), 1, "{bad}: {err}");
    }
    let r = tracer(&["replay", "--decode-pids=names", "demo:pod"]);
    assert_eq!(r.status.code(), Some(2), "{}", text(&r.stderr));
}

/// `-e trace=signal -e signal=SIGKILL`: only SIGKILL lines, each under its receiver.
#[test]
fn e_chooses_the_lines() {
    let r = tracer(&[
        "replay",
        "-e",
        "trace=signal",
        "-e",
        "signal=SIGKILL",
        "demo:lifecycle",
    ]);
    assert!(r.status.success(), "{}", text(&r.stderr));
    let out = text(&r.stdout);
    assert!(out.lines().count() >= 3, "{out}");
    for l in out.lines() {
        assert!(
            l.starts_with("[pid") && l.contains("--- SIGKILL {si_signo=SIGKILL"),
            "{l}"
        );
    }
}

/// `replay -o`-like text (stdout to a file) read back: `tree` of it has the recording's
/// processes under the same parents.
#[test]
fn replayed_lines_read_back_as_the_same_tree() {
    let dir = temp("cli-lines", "read-back");
    let lines = dir.join("lines.txt");
    for opts in [&[][..], &["-tt", "-Y", "--seq", "--decode-pids=all"]] {
        let mut args = vec!["replay"];
        args.extend_from_slice(opts);
        args.push("demo:lifecycle");
        let r = tracer(&args);
        assert!(r.status.success(), "{}", text(&r.stderr));
        std::fs::write(&lines, &r.stdout).unwrap();
        let want = parents(&tracer(&[
            "tree",
            "--traced",
            "--format",
            "json",
            "demo:lifecycle",
        ]));
        let got = parents(&tracer(&[
            "tree",
            "--format",
            "json",
            lines.to_str().unwrap(),
        ]));
        // Every process the lines saw born has the parent and end the recording gave it.
        let born: Vec<_> = got.iter().filter(|p| p.3).collect();
        assert!(born.len() > 50, "{opts:?}: {born:?}");
        for p in born {
            let w = want.iter().find(|w| w.0 == p.0 && w.3);
            assert_eq!(
                w.map(|w| (w.1, &w.2)),
                Some((p.1, &p.2)),
                "{opts:?}: pid {}",
                p.0
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// (pid, ppid at birth, exit code or signal, born in the recording) of every process.
fn parents(out: &std::process::Output) -> Vec<(u64, u64, String, bool)> {
    assert!(out.status.success(), "{}", text(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    json["processes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let birth = &p["lineage"][0];
            let born = birth["how"].as_str() != Some("snapshot") && birth["how"] != "unknown";
            let end = format!("{} {}", p["exit_code"], p["exit_signal"]);
            (
                p["pid"].as_u64().unwrap(),
                birth["parent"].as_u64().unwrap_or(0),
                end,
                born,
            )
        })
        .collect()
}
