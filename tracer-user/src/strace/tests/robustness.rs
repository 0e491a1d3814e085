//! Robustness: garbage, odd and adversarial lines, random bytes, and many calls in flight at once.

use super::*;

/// xorshift: deterministic pseudo-random bytes without a dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
fn garbage_lines_are_counted_and_kept() {
    let mut text = String::from("1 exit(0) = ?\n");
    for i in 0..7 {
        text.push_str(&format!("garbage line {i}\n"));
    }
    text.push_str("\n   \n1 clone(child_stack=NULL, flags=SIGCHLD\n"); // cut syscall line
    let imp = parse(&text);
    assert_eq!(imp.lines, 11);
    assert_eq!(imp.unreadable, 8);
    assert_eq!(imp.skipped, 0);
    assert_eq!(imp.first_unreadable.len(), MAX_KEPT_UNREADABLE);
    assert_eq!(imp.first_unreadable[0], (2, "garbage line 0".to_string()));
    assert_eq!(imp.first_unreadable[4], (6, "garbage line 4".to_string()));
}

#[test]
fn nothing_understood_is_an_error() {
    for text in [
        "",
        "\n\n",
        "hello\nworld\n",
        "{\"seq\": 1}\n",
        "\u{feff}\u{0}\u{7f}",
    ] {
        let err = parse_log(text).unwrap_err();
        assert!(
            matches!(err, StraceError::NotAnStraceLog { .. }),
            "{text:?}"
        );
        assert!(err
            .to_string()
            .contains("neither a trace file nor an strace log"));
    }
}

#[test]
fn odd_lines_never_panic() {
    let long = "x".repeat(3 << 20);
    let deep = "(".repeat(100_000);
    let cases: Vec<String> = vec![
        "[pid".into(),
        "[pid ]".into(),
        "[pid 99999999999999999999] exit(0) = ?".into(),
        "[pid 1".into(),
        "1".into(),
        "1 ".into(),
        "1 2".into(),
        "12:00".into(),
        "1 99:99:99 exit(0) = ?".into(),
        "1 1.99999999999999999999 exit(0) = ?".into(),
        "1 18446744073709551615.9 exit(0) = ?".into(),
        "+++".into(),
        "+++ +++".into(),
        "+++ killed by SIGNOPE +++".into(),
        "+++ exited with 99999999999 +++".into(),
        "<... resumed>".into(),
        "<... clone resumed".into(),
        "<... clone resumed>".into(),
        "<... execve resumed> = 0".into(),
        "clone(".into(),
        "clone() =".into(),
        "clone() = ".into(),
        "clone() = -".into(),
        "clone() = 0x".into(),
        "execve(\"".into(),
        "execve(\"\\".into(),
        "execve(\"a\", [\"".into(),
        "execve(\"a\", [\"b\", ) = 0".into(),
        "execve(\"a\", [[[[[\"b\"]) = 0".into(),
        "clone3({flags=CLONE_VM, exit_signal=SIGNOPE}) = 5".into(),
        "prctl() = 0".into(),
        "prctl(PR_SET_NAME) = 0".into(),
        "exit_group() = ?".into(),
        "strace: Process".into(),
        "strace: Process 5 attached with threads".into(),
        "x strace: Process 5 attached with 99999999999 threads".into(),
        "strace: Process 5 attached".repeat(3),
        format!("clone({deep}) = 5"),
        format!("execve(\"{long}\", [], NULL) = 0"),
        format!("[pid 3] {long}"),
        "ünïcödé(ß) = 0".into(),
        "[pid 1] прctl(PR_SET_NAME, \"😀\") = 0".into(),
        "1 prctl(PR_SET_NAME, \"😀\\xff\\xf0\\x9f\") = 0".into(),
        "\u{0}\u{1}\u{2}\r".into(),
        "1 exit(0) = ? <0.0>".into(),
        "1 exit(0) = ? <>".into(),
        "1 execve(\"a\", [\"b\"], 0x0 <pid changed to x ...>".into(),
        "1 execve(\"a\", [\"b\"], 0x0 <pid changed to 4294967296 ...>".into(),
        "+++ superseded by execve in pid 1 +++".into(),
        "+++ superseded by execve +++".into(),
    ];
    for c in &cases {
        let _ = parse_log(c);
        let _ = parse_log(&format!("1 exit(0) = ?\n{c}\n{c}\n"));
        let _ = parse_reader(c.as_bytes());
    }
}

#[test]
fn adversarial_patterns_stay_linear_and_bounded() {
    // every line cut by a notice: joined at most MAX_CARRY_CUTS times, never one huge line
    let line = "[pid 1] clone(child_stack=NULL, flags=SIGCHLDstrace: Process 2 attached\n";
    let imp = parse(&line.repeat(200_000));
    assert!(imp.unreadable > 0 && imp.unreadable < 200_000 / (MAX_CARRY_CUTS as usize - 1) + 2);
    assert!(imp
        .first_unreadable
        .iter()
        .all(|(_, t)| t.chars().count() <= 200));
    // midnight wraps forever: saturates instead of overflowing
    let imp = parse(&"1 23:00:00 exit(0) = ?\n1 00:00:00 exit(0) = ?\n".repeat(120_000));
    assert_eq!(imp.events.len(), 240_000);
    // many processes that exit: bookkeeping shrinks again
    let mut text = String::new();
    for pid in 2..50_000u32 {
        text.push_str(&format!(
            "1 fork() = {pid}\n{pid} exit_group(0) = ?\n{pid} +++ exited with 0 +++\n"
        ));
    }
    let imp = parse(&text);
    assert_eq!(forks(&imp).len(), 49_998);
}

#[test]
fn thread_state_is_dropped_with_the_process() {
    let text = format!(
        concat!(
            "500 clone3({{flags={f}, exit_signal=0}}, 88) = 501\n",
            "501 exit_group(0) = ?\n",
            "500 +++ exited with 0 +++\n",
            // 501 never printed its own exit line; the pid comes back as a process
            "9 fork() = 501\n",
            "501 exit_group(0) = ?\n",
        ),
        f = THREAD_FLAGS
    );
    let imp = parse(&text);
    let last = imp.events.last().unwrap();
    assert_eq!((last.tgid, last.tid), (501, 501));
    assert_eq!(forks(&imp)[1], (9, 501, 501, Some(0)));
}

#[test]
fn fuzz_random_bytes_and_mutated_fixtures() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    // random bytes, biased towards strace's punctuation
    let alphabet =
        b"[]{}()<>\"\\=,.:|+-? 0123456789pidclonexecvfkrtSIGCHLD_attached\n\t\xc3\xa9\xff";
    for _ in 0..300 {
        let n = (rng.next() % 400) as usize;
        let bytes: Vec<u8> = (0..n)
            .map(|_| alphabet[(rng.next() as usize) % alphabet.len()])
            .collect();
        let _ = parse_reader(&bytes[..]);
        let _ = parse_log(&String::from_utf8_lossy(&bytes));
    }
    // real lines, cut and spliced at random places
    let corpus = [
        fixture("runc-stderr.log"),
        fixture("ctr.log"),
        fixture("podman.log"),
    ]
    .concat();
    let lines: Vec<&str> = corpus.lines().collect();
    for _ in 0..300 {
        let mut text = String::new();
        for _ in 0..20 {
            let l = lines[(rng.next() as usize) % lines.len()];
            let cut = (rng.next() as usize) % (l.len() + 1);
            let cut = (0..=cut)
                .rev()
                .find(|&i| l.is_char_boundary(i))
                .unwrap_or(0);
            match rng.next() % 4 {
                0 => text.push_str(&l[..cut]),
                1 => text.push_str(&l[cut..]),
                2 => {
                    text.push_str(&l[..cut]);
                    text.push_str("strace: Process 77 attached\n");
                    text.push_str(&l[cut..]);
                }
                _ => text.push_str(l),
            }
            text.push('\n');
        }
        let _ = parse_log(&text);
    }
}

#[test]
fn reader_matches_text_and_handles_bad_bytes() {
    for f in ["runc.log", "runc-stderr.log", "ctr.log", "podman.log"] {
        let text = fixture(f);
        let a = parse_log(&text).unwrap();
        // a tiny buffer so lines span many fill_buf calls
        let b = parse_reader(std::io::BufReader::with_capacity(7, text.as_bytes())).unwrap();
        assert_eq!(a, b, "{f}");
    }
    let mut bytes = b"1 prctl(PR_SET_NAME, \"a\xffb\") = 0\r\n".to_vec();
    bytes.extend(std::iter::repeat_n(b'y', MAX_LINE_BYTES + 10));
    bytes.extend_from_slice(b"\n1 exit(0) = ?");
    let imp = parse_reader(&bytes[..]).unwrap();
    assert_eq!(imp.lines, 3);
    assert_eq!(imp.unreadable, 1);
    assert_eq!(imp.first_unreadable[0].0, 2);
    assert_eq!(imp.first_unreadable[0].1.len(), 200);
    assert!(
        matches!(&imp.events[0].kind, K::PrctlEnter { name: Some(n), .. } if n.value == "a\u{fffd}b")
    );
    assert_eq!(
        imp.events.last().unwrap().kind,
        K::ExitEnter {
            syscall: Syscall::Exit,
            code: 0
        }
    );
}

// ---------------------------------------------------------------- many calls in flight

#[test]
fn a_fork_chain_with_every_clone_in_flight_names_each_child_by_its_caller() {
    // Each new pid speaks while its parent is still inside the clone: it is that clone's
    // child (the only clone in flight of a single process); the returns agree.
    let n = 40;
    let imp = parse(&crate::synth::strace_unfinished_clones(n));
    assert_eq!(imp.unreadable, 0);
    let flags = cf::CLONE_CHILD_CLEARTID | cf::CLONE_CHILD_SETTID;
    let mut want = vec![(1000, 1000, clone_enter(Syscall::Clone, flags, 17))];
    for i in 1..n {
        let (parent, child) = (1000 + i - 1, 1000 + i);
        want.push((
            parent,
            parent,
            fork_in(child, child, parent, Syscall::Clone, flags),
        ));
        want.push((child, child, clone_enter(Syscall::Clone, flags, 17)));
    }
    for i in 0..n - 1 {
        want.push((
            1000 + i,
            1000 + i,
            sys_exit(Syscall::Clone, i64::from(1001 + i)),
        ));
    }
    // The last child shows up only after its parent's return: named by the return value.
    let (parent, last) = (1000 + n - 1, 1000 + n);
    want.push((
        parent,
        parent,
        fork_in(last, last, parent, Syscall::Clone, flags),
    ));
    want.push((parent, parent, sys_exit(Syscall::Clone, i64::from(last))));
    for pid in (1000..=last).rev() {
        want.push((pid, pid, exit(0, true)));
    }
    assert_eq!(evs(&imp), want);
}

#[test]
fn clones_resumed_from_before_tracing_name_the_pids_they_returned() {
    // Each caller's first line resumes a clone made before tracing (a task that existed
    // already, not a child); the pid each returned then exits: that clone's child, its
    // parent unknown (the call's flags are not in the log).
    let n = 40;
    let imp = parse(&crate::synth::strace_resumed_clones(n));
    assert_eq!(imp.unreadable, 0);
    let mut want = Vec::new();
    for i in 0..n {
        let (caller, child) = (1000 + i, 1000 + n + i);
        let fork = K::Fork {
            child_tid: child,
            child_tgid: child,
            child_ppid: 0,
            syscall: Some(Syscall::Clone),
            flags: None,
            child_ns: None,
        };
        want.push((caller, caller, fork));
        want.push((caller, caller, sys_exit(Syscall::Clone, i64::from(child))));
        // named at its first line, before its own events
        let exit_enter = K::ExitEnter {
            syscall: Syscall::ExitGroup,
            code: 0,
        };
        want.push((child, child, exit_enter));
        want.push((child, child, exit(0, true)));
    }
    assert_eq!(evs(&imp), want);
}
