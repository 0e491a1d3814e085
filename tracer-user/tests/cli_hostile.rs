//! Hostile and damaged input, end to end through the `tracer` binary: closed pipes and full
//! disks, output files (modes, devices, the input itself), control bytes in names, streams
//! read once, damaged and duplicated frames, dropped lines and events said out loud.

use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use tracer::synth;
use tracer::tracefile::{to_bytes, CaptureMode, Header, TraceReader, TraceWriter};
use tracer::{Event, EventKind};

mod common;
use common::{sample as storm, text, tracer, TRACER};

const HOSTILE: &str = "\x1b]0;PWNED\x07";

fn temp(name: &str) -> PathBuf {
    common::temp("cli-hostile", name)
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

fn no_panic(out: &Output) {
    let e = text(&out.stderr);
    assert!(!e.contains("panicked"), "{e}");
    assert_ne!(out.status.code(), Some(101), "{e}");
}

#[test]
fn a_closed_pipe_ends_quietly() {
    let dir = temp("epipe");
    let (path, _) = storm(&dir, 20_000);
    for cmd in [
        vec!["tree", p(&path)],
        vec!["tree", "--format", "json", p(&path)],
        vec!["replay", p(&path)],
        vec!["export", "--format", "jsonl", p(&path)],
    ] {
        let mut child = Command::new(TRACER)
            .args(&cmd)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // `| head -1`: one line read, then the pipe closed.
        let mut stdout = child.stdout.take().unwrap();
        let mut first = [0u8; 64];
        let n = stdout.read(&mut first).unwrap();
        assert!(n > 0);
        drop(stdout);
        let out = child.wait_with_output().unwrap();
        no_panic(&out);
        assert_eq!(out.status.code(), Some(0), "{cmd:?}: {}", text(&out.stderr));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every command that prints on stdout, small outputs included (which fit in a pipe's buffer
/// and so never meet a reader that left after one read).
fn stdout_writers(path: &Path) -> Vec<Vec<&str>> {
    vec![
        vec!["tree", p(path)],
        vec!["tree", "--format", "json", p(path)],
        vec!["story", p(path)],
        vec!["replay", p(path)],
        vec!["export", "--format", "jsonl", p(path)],
        vec!["completions", "bash"],
        vec!["manpage"],
        vec!["demo", "pod", "--no-tui"],
        vec!["view", "demo:pod", "--screenshot", "80x24"],
        vec!["--help"],
        vec!["tree", "--help"],
        vec!["--version"],
    ]
}

/// The write end of a pipe whose read end is already closed: every write is EPIPE.
fn closed_pipe() -> std::fs::File {
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: `fds` is a valid array of two ints for pipe(2) to fill.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: both descriptors were just returned by pipe(2) and are owned by no one else.
    let (read, write) = unsafe {
        (
            std::fs::File::from_raw_fd(fds[0]),
            std::fs::File::from_raw_fd(fds[1]),
        )
    };
    drop(read);
    write
}

#[test]
fn a_pipe_closed_before_the_first_write_ends_quietly() {
    let dir = temp("epipe-early");
    let (path, _) = storm(&dir, 2_000);
    for cmd in stdout_writers(&path) {
        let (out, both) = into(&cmd, closed_pipe);
        assert_eq!(out.status.code(), Some(0), "{cmd:?}: {}", text(&out.stderr));
        let e = text(&out.stderr);
        assert!(!e.contains("cannot write"), "{cmd:?}: {e}");
        // `2>&1 | head -1`: stderr closed too, where the summary and notes go.
        assert_eq!(both, Some(0), "{cmd:?} with stderr closed");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_full_disk_is_one_line_and_a_failure() {
    let dir = temp("enospc");
    let (path, _) = storm(&dir, 2_000);
    for cmd in stdout_writers(&path) {
        let (out, both) = into(&cmd, full_disk);
        assert_eq!(out.status.code(), Some(1), "{cmd:?}");
        let e = text(&out.stderr);
        let last = e.lines().last().unwrap_or("");
        assert!(last.contains("No space left on device"), "{cmd:?}: {e}");
        // Stderr full too: nothing can be said, the status still tells.
        assert_eq!(both, Some(1), "{cmd:?} with stderr full");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `cmd` run with stdout into what `sink` makes (its output, stderr captured, checked for no
/// panic), then with stderr there too (its exit status).
fn into(cmd: &[&str], sink: fn() -> std::fs::File) -> (Output, Option<i32>) {
    let out = Command::new(TRACER)
        .args(cmd)
        .stdout(sink())
        .output()
        .unwrap();
    no_panic(&out);
    let both = Command::new(TRACER)
        .args(cmd)
        .stdout(sink())
        .stderr(sink())
        .status()
        .unwrap();
    (out, both.code())
}

fn full_disk() -> std::fs::File {
    std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap()
}

fn strace_log(dir: &Path) -> PathBuf {
    let log = dir.join("l.strace");
    std::fs::write(
        &log,
        format!(
            "100 execve(\"/bin/sh\", [\"sh\"], 0x0 /* 1 var */) = 0\n\
             garbage {HOSTILE} line\n\
             100 clone(child_stack=NULL, flags=SIGCHLD) = 101\n\
             101 exit_group(0) = ?\n\
             101 +++ exited with 0 +++\n\
             100 exit_group(0) = ?\n\
             100 +++ exited with 0 +++\n"
        ),
    )
    .unwrap();
    log
}

#[test]
fn output_files_are_0600_and_devices_are_left_alone() {
    let dir = temp("modes");
    let log = strace_log(&dir);
    let null_before = std::fs::metadata("/dev/null").unwrap();
    for cmd in [
        vec!["import-strace", p(&log), "-o", "/dev/null"],
        vec!["export", "--format", "jsonl", p(&log), "-o", "/dev/null"],
    ] {
        let out = tracer(&cmd);
        assert!(out.status.success(), "{cmd:?}: {}", text(&out.stderr));
        let after = std::fs::metadata("/dev/null").unwrap();
        assert_eq!(
            after.mode(),
            null_before.mode(),
            "{cmd:?} changed /dev/null"
        );
        assert_eq!(after.uid(), null_before.uid());
        assert_eq!(after.rdev(), null_before.rdev());
    }
    // An existing 0644 file becomes a new 0600 file.
    for (i, fmt) in ["jsonl", "dot", "perfetto"].iter().enumerate() {
        let out_path = dir.join(format!("out{i}"));
        std::fs::write(&out_path, "old").unwrap();
        std::fs::set_permissions(&out_path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let out = tracer(&["export", "--format", fmt, p(&log), "-o", p(&out_path)]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let m = std::fs::metadata(&out_path).unwrap();
        assert_eq!(m.mode() & 0o777, 0o600, "{fmt}");
    }
    let trace = dir.join("t.trace");
    std::fs::write(&trace, "old").unwrap();
    std::fs::set_permissions(&trace, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = tracer(&["import-strace", p(&log), "-o", p(&trace)]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(std::fs::metadata(&trace).unwrap().mode() & 0o777, 0o600);
    // A failed write leaves the target as it was and no temporary file behind.
    let keep = dir.join("keep");
    std::fs::write(&keep, "precious").unwrap();
    let bad = dir.join("not-a-recording");
    std::fs::write(&bad, b"\x7fELF\x02\x01").unwrap();
    let out = tracer(&["export", "--format", "jsonl", p(&bad), "-o", p(&keep)]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(std::fs::read(&keep).unwrap(), b"precious");
    assert!(std::fs::read_dir(&dir).unwrap().all(|e| !e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .ends_with(".tmp")));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn output_onto_the_input_keeps_the_input_whole() {
    let dir = temp("onto-input");
    let (path, evs) = storm(&dir, 30_000);
    let out = tracer(&["import-strace", p(&path), "-o", p(&path)]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let mut r = TraceReader::open(&path).unwrap();
    let back: Vec<Event> = r.events().collect::<Result<_, _>>().unwrap();
    assert_eq!(back, evs);
    assert!(r.tail().clean_end);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `-o /dev/stdout` (and its other names) writes to the descriptor itself: `>> log` appends,
/// `1<> file` writes at its offset, nothing is truncated.
#[test]
fn output_to_our_own_descriptor_appends_and_never_truncates() {
    let dir = temp("own-fd");
    let (path, _) = storm(&dir, 200);
    let expected = tracer(&["tree", p(&path)]).stdout;
    for name in ["/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"] {
        let log = dir.join("log");
        std::fs::write(&log, "before\n").unwrap();
        let append = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
        let out = Command::new(TRACER)
            .args(["tree", p(&path), "-o", name])
            .stdout(append)
            .output()
            .unwrap();
        assert!(out.status.success(), "{name}: {}", text(&out.stderr));
        let got = std::fs::read(&log).unwrap();
        assert_eq!(got[..7], *b"before\n", "{name}: the log was overwritten");
        assert_eq!(got[7..], expected, "{name}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `-o /proc/self/fd/1` where that descriptor is the recording being read: refused before a
/// byte is written, the recording whole.
#[test]
fn output_to_a_descriptor_of_the_input_is_refused() {
    let dir = temp("own-fd-input");
    let (path, _) = storm(&dir, 2_000);
    let log = strace_log(&dir);
    let before = (std::fs::read(&path).unwrap(), std::fs::read(&log).unwrap());
    for (input, name) in [(&path, "/dev/stdout"), (&log, "/proc/self/fd/1")] {
        for cmd in [
            vec!["tree", p(input), "-o", name],
            vec!["export", "--format", "jsonl", p(input), "-o", name],
            vec!["import-strace", p(input), "-o", name],
        ] {
            let onto = std::fs::OpenOptions::new().write(true).open(input).unwrap();
            let out = Command::new(TRACER)
                .args(&cmd)
                .stdout(onto)
                .output()
                .unwrap();
            no_panic(&out);
            let e = text(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{cmd:?}: {e}");
            assert!(e.contains("it is the input being read"), "{cmd:?}: {e}");
        }
    }
    let after = (std::fs::read(&path).unwrap(), std::fs::read(&log).unwrap());
    assert!(before == after, "an input was overwritten");
    std::fs::remove_dir_all(&dir).unwrap();
}

fn hostile_trace(dir: &Path) -> PathBuf {
    named_trace(dir, HOSTILE)
}

/// A recording of process 7 named `name` (its exit), its command line and host name `name`.
fn named_trace(dir: &Path, name: &str) -> PathBuf {
    let evs = vec![
        Event::bare(
            1,
            1000,
            7,
            7,
            name,
            EventKind::ExitEnter {
                syscall: tracer::event::Syscall::ExitGroup,
                code: 0,
            },
        ),
        Event::bare(
            2,
            2000,
            7,
            7,
            name,
            EventKind::TaskExit {
                exit_code: 0,
                group_dead: true,
            },
        ),
    ];
    let mut h = Header::for_this_host(CaptureMode::Command(vec![name.into()]));
    h.hostname = name.into();
    let path = dir.join("named.trace");
    std::fs::write(&path, to_bytes(&h, &evs).unwrap()).unwrap();
    path
}

#[test]
fn control_bytes_never_reach_the_terminal() {
    let dir = temp("escape");
    let trace = hostile_trace(&dir);
    let log = strace_log(&dir);
    for cmd in [
        vec!["tree", p(&trace)],
        vec!["story", p(&trace)],
        vec!["replay", p(&trace)],
        vec!["export", "--format", "dot", p(&trace)],
        vec!["replay", p(&log)],
        vec!["tree", p(&log)],
    ] {
        let out = tracer(&cmd);
        assert!(out.status.success(), "{cmd:?}: {}", text(&out.stderr));
        for (what, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
            assert!(
                !bytes.iter().any(|&b| b == 0x1b || b == 0x07),
                "{cmd:?} {what}: {}",
                text(bytes)
            );
        }
    }
    let out = tracer(&["tree", p(&trace)]);
    assert!(
        text(&out.stdout).contains("7 \\33]0;PWNED\\7"),
        "{}",
        text(&out.stdout)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Names that reorder or hide text where they are shown: a right-to-left override and a
/// zero-width space.
const INVISIBLE: &str = "evil\u{202e}txt.exe\u{200b}";

#[test]
fn bidi_and_invisible_characters_are_escaped_in_pictures_and_file_names() {
    let dir = temp("bidi");
    let trace = named_trace(&dir, INVISIBLE);
    let raw = |b: &[u8]| {
        let t = text(b);
        t.contains('\u{202e}') || t.contains('\u{200b}')
    };
    for cmd in [
        vec!["export", "--format", "svg", "--all", p(&trace)],
        vec!["export", "--format", "html", "--all", p(&trace)],
        vec!["export", "--format", "dot", p(&trace)],
    ] {
        let out = tracer(&cmd);
        let shown = text(&out.stdout);
        assert!(out.status.success(), "{cmd:?}: {}", text(&out.stderr));
        assert!(!raw(&out.stdout), "{cmd:?} shows the characters raw");
        // Escaped as the text outputs escape them (DOT doubles the backslashes).
        assert!(
            shown.contains("evil\\342\\200\\256txt") || shown.contains("evil\\\\342"),
            "{cmd:?}: {shown}"
        );
    }
    // A file name from the command line, in the error that names it.
    let missing = dir.join(format!("{INVISIBLE}{HOSTILE}"));
    let out = tracer(&["tree", p(&missing)]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(!raw(&out.stderr) && !out.stderr.contains(&0x1b), "{err}");
    assert!(
        err.contains("cannot read") && err.contains("\\33]0;PWNED\\7"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn stdin_dev_stdin_and_fifos_are_read_once() {
    let dir = temp("stream");
    // Bigger than the 4096-byte sniff window and the pipe buffer.
    let (path, _) = storm(&dir, 20_000);
    let want = tracer(&["tree", "--format", "json", p(&path)]);
    assert!(want.status.success());
    for arg in ["-", "/dev/stdin"] {
        let out = Command::new(TRACER)
            .args(["tree", "--format", "json", arg])
            .stdin(std::fs::File::open(&path).unwrap())
            .output()
            .unwrap();
        assert!(out.status.success(), "{arg}: {}", text(&out.stderr));
        assert_eq!(out.stdout, want.stdout, "{arg}");
        // Through a real pipe too (`cat x.trace | tracer tree -`).
        let mut child = Command::new(TRACER)
            .args(["tree", "--format", "json", arg])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let feeder = std::thread::spawn(move || stdin.write_all(&bytes).unwrap());
        let out = child.wait_with_output().unwrap();
        feeder.join().unwrap();
        assert!(out.status.success(), "{arg} pipe");
        assert_eq!(out.stdout, want.stdout, "{arg} pipe");
    }
    let fifo = dir.join("fifo");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let feeder = {
        let (fifo, path) = (fifo.clone(), path.clone());
        std::thread::spawn(move || {
            let mut f = std::fs::OpenOptions::new().write(true).open(fifo).unwrap();
            f.write_all(&std::fs::read(path).unwrap()).unwrap();
        })
    };
    let out = tracer(&["tree", "--format", "json", p(&fifo)]);
    feeder.join().unwrap();
    assert!(out.status.success(), "fifo: {}", text(&out.stderr));
    assert_eq!(out.stdout, want.stdout);
    // An strace log on stdin, and `export -` too.
    let log = strace_log(&dir);
    let out = Command::new(TRACER)
        .args(["export", "--format", "jsonl", "-"])
        .stdin(std::fs::File::open(&log).unwrap())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("exit_group"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn unparsed_strace_lines_are_counted_by_every_command() {
    let dir = temp("strace-count");
    let log = strace_log(&dir);
    let out_trace = dir.join("o.trace");
    for cmd in [
        vec!["replay", p(&log)],
        vec!["export", "--format", "jsonl", p(&log)],
        vec!["import-strace", p(&log), "-o", p(&out_trace)],
        vec!["tree", p(&log)],
        vec!["story", p(&log)],
    ] {
        let out = tracer(&cmd);
        assert!(out.status.success(), "{cmd:?}");
        let e = text(&out.stderr);
        assert!(e.contains("1 of 7 lines not understood"), "{cmd:?}: {e}");
        assert!(
            e.contains("line 2: garbage \\33]0;PWNED\\7 line"),
            "{cmd:?}: {e}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A trace file with `frames` frames of 100 events each (each flushed), without its end record
/// when `end` is false; returns the frames' byte ranges.
fn framed(dir: &Path, end: bool) -> (PathBuf, Vec<std::ops::Range<usize>>, Vec<Event>) {
    let path = dir.join(if end { "framed.trace" } else { "noend.trace" });
    let evs: Vec<Event> = synth::Storm::new(1_000).collect();
    let mut w = TraceWriter::new(Vec::new(), &Header::default()).unwrap();
    let mut ranges = vec![];
    let mut start = w.bytes_written() as usize;
    for chunk in evs.chunks(100) {
        for e in chunk {
            w.write_event(e).unwrap();
        }
        w.flush().unwrap();
        ranges.push(start..w.bytes_written() as usize);
        start = w.bytes_written() as usize;
    }
    let mut bytes = w.finish().unwrap();
    if !end {
        bytes.truncate(start);
    }
    std::fs::write(&path, bytes).unwrap();
    (path, ranges, evs)
}

fn jsonl_count(out: &Output) -> usize {
    text(&out.stdout).lines().count()
}

#[test]
fn a_damaged_frame_costs_itself_and_is_reported() {
    let dir = temp("damage");
    let (path, ranges, evs) = framed(&dir, true);
    let mut bytes = std::fs::read(&path).unwrap();
    // One flipped bit in the length of frame 3.
    bytes[ranges[3].start + 5] ^= 0x04;
    let bad = dir.join("bad.trace");
    std::fs::write(&bad, &bytes).unwrap();
    let out = tracer(&["export", "--format", "jsonl", p(&bad)]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(jsonl_count(&out), evs.len() - 100);
    let e = text(&out.stderr);
    assert!(
        e.contains(&format!(
            "damaged: byte {}: {} bytes skipped (1 frames, 100 events lost)",
            ranges[3].start,
            ranges[3].len()
        )),
        "{e}"
    );
    assert!(
        e.contains(&format!(
            "the end record counts {} events written, {} were read",
            evs.len(),
            evs.len() - 100
        )),
        "{e}"
    );
    for cmd in ["tree", "story", "replay"] {
        let out = tracer(&[cmd, p(&bad)]);
        assert!(out.status.success(), "{cmd}");
        assert!(text(&out.stderr).contains("100 events lost"), "{cmd}");
    }
    // The JSON tree lists it too.
    let out = tracer(&["tree", "--format", "json", p(&bad)]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ws = v["warnings"].as_array().unwrap();
    assert!(ws
        .iter()
        .any(|w| w["kind"] == "input" && w["text"].as_str().unwrap().contains("100 events lost")));

    // A duplicated frame: read once, and said.
    let good = std::fs::read(&path).unwrap();
    let r = ranges[2].clone();
    let mut dup = good[..r.end].to_vec();
    dup.extend_from_slice(&good[r.clone()]);
    dup.extend_from_slice(&good[r.end..]);
    let dup_path = dir.join("dup.trace");
    std::fs::write(&dup_path, &dup).unwrap();
    let out = tracer(&["export", "--format", "jsonl", p(&dup_path)]);
    assert!(out.status.success());
    assert_eq!(jsonl_count(&out), evs.len());
    assert!(
        text(&out.stderr).contains("1 duplicated frames skipped"),
        "{}",
        text(&out.stderr)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn tree_and_story_say_what_is_missing() {
    let dir = temp("missing");
    let (noend, _, evs) = framed(&dir, false);
    for cmd in ["tree", "story"] {
        let out = tracer(&[cmd, p(&noend)]);
        assert!(out.status.success());
        assert!(
            text(&out.stderr).contains("no end record"),
            "{cmd}: {}",
            text(&out.stderr)
        );
    }
    let (full, _, _) = framed(&dir, true);
    let last = evs.iter().map(|e| e.seq).max().unwrap();
    let out = tracer(&["tree", "--at", &(last + 50).to_string(), p(&full)]);
    assert!(out.status.success());
    let e = text(&out.stderr);
    assert!(
        e.contains(&format!(
            "--at {} is past the last event (seq {last})",
            last + 50
        )),
        "{e}"
    );
    let out = tracer(&["tree", "--at", &(last - 1).to_string(), p(&full)]);
    assert!(!text(&out.stderr).contains("past the last event"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A recording whose clock jumps 2^63 ns between two events (forged or broken) replays at
/// speed 1 in about a second a gap, saying once that gaps are cut short.
#[test]
fn a_forged_gap_between_events_never_stalls_the_replay() {
    let dir = temp("gap");
    let mut evs: Vec<Event> = synth::Storm::new(4).collect();
    let t0 = 1_000_000;
    for (i, ev) in evs.iter_mut().enumerate() {
        ev.ts_ns = match i {
            0 => t0,
            1 => t0 + (1 << 63),
            _ => t0 + (1 << 63) + (1 << 62),
        };
    }
    let mut h = Header::for_this_host(CaptureMode::Command(vec!["sh".into()]));
    h.snapshot = synth::storm_snapshot().iter().map(Into::into).collect();
    let path = dir.join("gap.trace");
    std::fs::write(&path, to_bytes(&h, &evs).unwrap()).unwrap();
    let started = std::time::Instant::now();
    let mut child = Command::new(TRACER)
        .args(["replay", "--no-tui", "--speed", "1", p(&path)])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > std::time::Duration::from_secs(30) {
            let _ = child.kill();
            panic!("replay --speed 1 still sleeping after 30 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    no_panic(&out);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let e = text(&out.stderr);
    assert_eq!(e.matches("each such gap is replayed as").count(), 1, "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A NATS credentials or key file another user can write is refused before any connection,
/// in one line naming the file and the rule.
#[cfg(feature = "nats")]
#[test]
fn a_credentials_file_others_can_write_is_refused_in_one_line() {
    let dir = temp("creds");
    let creds = dir.join("user.creds");
    std::fs::write(&creds, "not even parsed").unwrap();
    std::fs::set_permissions(&creds, std::fs::Permissions::from_mode(0o666)).unwrap();
    for var in ["TRACER_NATS_CREDS", "TRACER_NATS_CA"] {
        let out = Command::new(TRACER)
            .args(["tree", "nats://127.0.0.1:9/node"])
            .env(var, &creds)
            .output()
            .unwrap();
        no_panic(&out);
        let e = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{var}: {e}");
        let lines: Vec<&str> = e.lines().collect();
        assert_eq!(lines.len(), 1, "{var}: {e}");
        assert!(lines[0].contains(p(&creds)), "{var}: {e}");
        assert!(
            lines[0].contains("writable by group or others"),
            "{var}: {e}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
