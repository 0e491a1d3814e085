//! Calls and tasks: clones in `-o` logs, attach and exit lines, threads, execs (a non-leader's
//! included), prctl, returns.

use super::*;

#[test]
fn o_log_new_pid_is_never_given_to_another_callers_clone() {
    // The podman.log bug: in an -o log (no notices) 17061's thread 17068 shows first at its exit,
    // long after 17061 went on with signal lines only; meanwhile the container init (17089)
    // made threads whose clone3 returns namespace pids and whose host tids show up unannounced.
    // 17068 is named by its return value at once, 17090 goes to 17089, never across callers.
    let text = format!(
        concat!(
            "17061 0.000001 clone3({{flags={f}, exit_signal=0}} => {{parent_tid=[17064]}}, 88) = 17064\n",
            "17061 0.000001 clone3({{flags={f}, exit_signal=0}} => {{parent_tid=[17068]}}, 88) = 17068\n",
            "17061 0.000001 --- SIGURG {{si_signo=SIGURG, si_code=SI_TKILL, si_pid=17061, si_uid=0}} ---\n",
            "17064 0.000001 clone(child_stack=NULL, flags=SIGCHLD) = 17089\n",
            "17089 0.000001 clone3({{flags={f}, exit_signal=0}} => {{parent_tid=[2]}}, 88) = 2\n",
            "17089 0.000001 clone3({{flags={f}, exit_signal=0}} => {{parent_tid=[3]}}, 88) = 3\n",
            "17089 0.000001 execve(\"/bin/sleep\", [\"sleep\", \"5\"], 0x1 /* 1 var */ <unfinished ...>\n",
            "17090 0.000001 +++ exited with 0 +++\n",
            "17089 0.000001 <... execve resumed>) = 0\n",
            "17068 0.000001 +++ exited with 0 +++\n",
            "17089 0.000001 exit_group(0) = ?\n",
            "17089 0.000001 +++ exited with 0 +++\n",
        ),
        f = THREAD_FLAGS
    );
    let imp = parse(&text);
    assert_eq!(imp.unreadable, 0, "{:?}", imp.first_unreadable);
    let tf = crate::names::parse_clone_flags(THREAD_FLAGS).unwrap().0;
    assert_eq!(
        forks(&imp),
        [
            (17061, 17064, 17061, Some(tf)),
            (17061, 17068, 17061, Some(tf)),
            (17064, 17089, 17089, Some(0)),
            (17089, 17090, 17089, Some(tf)),
        ]
    );
    let e = evs(&imp);
    use Syscall::*;
    // Fork and exit right at the clone's line, before the caller's signal
    assert_eq!(e[4], (17061, 17061, fork(17068, 17061, Clone3, tf)));
    assert_eq!(e[5], (17061, 17061, sys_exit(Clone3, 17068)));
    assert_eq!(
        e[6],
        (17061, 17061, signal(23, SI_TKILL, 17061, 17061, 17061))
    );
    // the namespace returns give the exit only; the child comes with its first line
    assert_eq!(e[11], (17089, 17089, sys_exit(Clone3, 2)));
    assert_eq!(e[13], (17089, 17089, sys_exit(Clone3, 3)));
    assert_eq!(
        e[15],
        (17089, 17089, fork_in(17090, 17089, 17061, Clone3, tf))
    );
    assert_eq!(e[16], (17089, 17090, exit(0, false)));
    assert!(e.contains(&(17061, 17068, exit(0, false))));
    assert!(
        !forks(&imp).iter().any(|f| f.1 < 300),
        "a namespace pid leaked"
    );

    vforks_in_flight_wait_for_the_clone_that_returns_the_new_pid();
}

/// In an `-o` log, two processes inside a vfork at once and a new pid speaks: no guess; the
/// clone that returns it names it.
fn vforks_in_flight_wait_for_the_clone_that_returns_the_new_pid() {
    let imp = parse(concat!(
        "1000 clone(child_stack=NULL, flags=SIGCHLD) = 1001\n",
        "1000 clone(child_stack=NULL, flags=CLONE_VM|CLONE_VFORK|SIGCHLD <unfinished ...>\n",
        "1001 clone(child_stack=NULL, flags=CLONE_VM|CLONE_VFORK|SIGCHLD <unfinished ...>\n",
        "1003 execve(\"/bin/b\", [\"b\"], 0x1 /* 1 var */) = 0\n",
        "1001 <... clone resumed>) = 1003\n",
        "1002 execve(\"/bin/a\", [\"a\"], 0x1 /* 1 var */) = 0\n",
        "1000 <... clone resumed>) = 1002\n",
    ));
    let vf = CLONE_VM | CLONE_VFORK;
    assert_eq!(
        forks(&imp),
        [
            (1000, 1001, 1001, Some(0)),
            (1001, 1003, 1003, Some(vf)),
            (1000, 1002, 1002, Some(vf)),
        ]
    );
    assert_eq!(
        evs(&imp).last(),
        Some(&(1000, 1000, sys_exit(Syscall::Clone, 1002)))
    );
}

#[test]
fn o_log_namespaced_caller_children_come_from_new_pids() {
    // 5001 is created with CLONE_NEWPID: its clones return pids of its namespace, even above 300
    let text = format!(
        concat!(
            "5000 clone(child_stack=NULL, flags=CLONE_NEWPID|SIGCHLD) = 5001\n",
            "5001 clone(child_stack=NULL, flags=SIGCHLD) = 700\n",
            "5001 clone3({{flags={f}, exit_signal=0}} => {{parent_tid=[701]}}, 88) = 701\n",
            "5003 execve(\"/bin/true\", [\"true\"], 0x1 /* 1 var */) = 0\n",
            "5004 +++ exited with 0 +++\n",
            "5003 exit_group(0) = ?\n",
            "5003 +++ exited with 0 +++\n",
            // a grandchild made inside the namespace is in it too
            "5001 clone(child_stack=NULL, flags=SIGCHLD) = 702\n",
            "5005 clone(child_stack=NULL, flags=SIGCHLD) = 703\n",
            "5006 exit_group(0) = ?\n",
            // a collision: 5000 is live, so this return is no host pid either
            "5001 clone(child_stack=NULL, flags=SIGCHLD) = 5000\n",
            "5001 exit_group(0) = ?\n",
            "5001 +++ exited with 0 +++\n",
            // the host caller's own clones are still named at once
            "5000 clone(child_stack=NULL, flags=SIGCHLD) = 5010\n",
            "5000 exit_group(0) = ?\n",
        ),
        f = THREAD_FLAGS
    );
    let imp = parse(&text);
    assert_eq!(imp.unreadable, 0, "{:?}", imp.first_unreadable);
    let tf = crate::names::parse_clone_flags(THREAD_FLAGS).unwrap().0;
    let newpid = cf::CLONE_NEWPID;
    assert_eq!(
        forks(&imp),
        [
            (5000, 5001, 5001, Some(newpid)),
            (5001, 5003, 5003, Some(0)),
            (5001, 5004, 5001, Some(tf)),
            (5001, 5005, 5005, Some(0)),
            (5005, 5006, 5006, Some(0)),
            (5000, 5010, 5010, Some(0)),
        ]
    );
    let e = evs(&imp);
    use Syscall::*;
    // the caller's exits come at once, with the namespace pids
    assert_eq!(e[4], (5001, 5001, sys_exit(Clone, 700)));
    assert_eq!(e[6], (5001, 5001, sys_exit(Clone3, 701)));
    assert_the_namespace_is_inferred(&imp, &e);
    assert!(e.contains(&(5001, 5001, sys_exit(Clone, 5000))));
    assert_eq!(
        e.last(),
        Some(&(
            5000,
            5000,
            K::ExitEnter {
                syscall: ExitGroup,
                code: 0
            }
        ))
    );
}

/// The namespace of `o_log_namespaced_caller_children_come_from_new_pids` is inferred: 5001 is
/// pid 1 of it, its descendants are in it at the pids their clones returned, the host caller's
/// other child is in none the log implies.
fn assert_the_namespace_is_inferred(imp: &Import, e: &[(u32, u32, EventKind)]) {
    let inside = PidNs::inferred(1, 1, 0);
    let child_ns = |pid: u32| fork_ns(imp, pid);
    assert_eq!(
        child_ns(5001),
        Some(Some(PidNs {
            ns_pid: 1,
            ..inside
        }))
    );
    let at = |ns_pid| Some(Some(PidNs { ns_pid, ..inside }));
    assert_eq!(child_ns(5003), at(700));
    assert_eq!(child_ns(5005), at(702));
    assert_eq!(child_ns(5006), at(703));
    assert_eq!(child_ns(5010), Some(None));
    let mut with_ns = fork_in(5003, 5003, 5001, Syscall::Clone, 0);
    if let K::Fork { child_ns, .. } = &mut with_ns {
        *child_ns = Some(PidNs {
            ns_pid: 700,
            ..inside
        });
    }
    assert_eq!(e[7], (5001, 5001, with_ns));
}

#[test]
fn attached_with_threads_and_detached() {
    let imp = parse(concat!(
        "strace: Process 15681 attached with 3 threads\n",
        "[pid 15689] 09:16:16.413860 clone(child_stack=NULL, flags=CLONE_VM|CLONE_VFORK|SIGCHLDstrace: Process 15913 attached\n",
        " <unfinished ...>\n",
        "[pid 15913] 09:16:16.414589 exit_group(0) = ?\n",
        "[pid 15687] 09:16:16.5 --- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED, si_pid=15913} ---\n",
        "[pid 15689] 09:16:16.414524 <... clone resumed>) = 15913\n",
        "strace: Process 15681 detached\n",
    ));
    assert_eq!(imp.unreadable, 0);
    // 15689 is one of containerd's threads: its events carry tgid 15681
    assert_eq!(
        forks(&imp),
        [(15689, 15913, 15913, Some(CLONE_VM | CLONE_VFORK))]
    );
    assert_eq!(imp.events[0].tgid, 15681);
    assert_eq!(imp.events[1].tgid, 15681);
    // the SIGCHLD is received by another unannounced thread of containerd: the process is
    // its target, the thread its receiving thread
    let e = evs(&imp);
    assert_eq!(e[3], (15681, 15687, signal(17, 1, 15913, 15681, 15687)));
    // the notices are understood, without events
    assert_eq!(imp.skipped, 2);
}

#[test]
fn exits_killed_and_signals() {
    let imp = parse(concat!(
        "[pid 10] +++ killed by SIGKILL +++\n",
        "[pid 11] +++ killed by SIGSEGV (core dumped) +++\n",
        "[pid 12] +++ exited with 137 +++\n",
        "[pid 13] --- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_KILLED, si_pid=10, si_status=SIGKILL} ---\n",
        "[pid 13] --- stopped by SIGSTOP ---\n",
    ));
    let e = evs(&imp);
    assert_eq!(e[0], (10, 10, exit(9, true)));
    assert_eq!(e[1], (11, 11, exit(11 | 0x80, true)));
    assert_eq!(e[2], (12, 12, exit(137 << 8, true)));
    // the signal is an event of its receiver; the group stop only a notice
    assert_eq!(e[3], (13, 13, signal(17, 2, 10, 13, 13)));
    assert_eq!(e.len(), 4);
    assert_eq!((imp.skipped, imp.unreadable), (1, 0));
    assert_eq!(
        crate::event::ExitStatus::from_wait_status(9),
        crate::event::ExitStatus::Killed {
            signal: 9,
            core_dumped: false
        }
    );
}

#[test]
fn thread_exit_and_exit_group() {
    let text = format!(
        concat!(
            "500 clone3({{flags={f}, exit_signal=0}} => {{parent_tid=[501]}}, 88) = 501\n",
            "501 exit(0) = ?\n",
            "501 +++ exited with 0 +++\n",
            "500 exit_group(2) = ?\n",
            "500 +++ exited with 2 +++\n",
        ),
        f = THREAD_FLAGS
    );
    let imp = parse(&text);
    let e = evs(&imp);
    assert_eq!(
        e[3],
        (
            500,
            501,
            K::ExitEnter {
                syscall: Syscall::Exit,
                code: 0
            }
        )
    );
    assert_eq!(e[4], (500, 501, exit(0, false)));
    assert_eq!(
        e[5],
        (
            500,
            500,
            K::ExitEnter {
                syscall: Syscall::ExitGroup,
                code: 2
            }
        )
    );
    assert_eq!(e[6], (500, 500, exit(2 << 8, true)));
}

#[test]
fn non_leader_exec_superseded_o_style() {
    // real strace 6.1 output with -o
    let text = format!(
        concat!(
            "11081 execve(\"./t\", [\"./t\"], 0x7fffcdb5b668 /* 35 vars */) = 0\n",
            "11081 clone3({{flags={f}, exit_signal=0}} <unfinished ...>\n",
            "11081 <... clone3 resumed> => {{parent_tid=[11084]}}, 88) = 11084\n",
            "11084 execve(\"/bin/true\", [\"true\"], 0x7ffec169a4e8 /* 35 vars */ <pid changed to 11081 ...>\n",
            "11081 +++ superseded by execve in pid 11084 +++\n",
            "11081 <... execve resumed>)             = 0\n",
            "11081 exit_group(0)                     = ?\n",
            "11081 +++ exited with 0 +++\n",
        ),
        f = THREAD_FLAGS
    );
    let imp = parse(&text);
    assert_eq!(imp.unreadable, 0);
    let e = evs(&imp);
    let n = e.len();
    assert!(
        matches!(&e[n - 5], (11081, 11084, K::ExecEnter { filename, .. }) if filename.value == "/bin/true")
    );
    assert_eq!(
        e[n - 4],
        (
            11081,
            11081,
            K::Exec {
                cred: None,
                old_tid: 11084,
                filename: CapturedStr::new("/bin/true")
            }
        )
    );
    assert_eq!(e[n - 3], (11081, 11081, sys_exit(Syscall::Execve, 0)));
    assert_eq!(e[n - 1], (11081, 11081, exit(0, true)));
}

#[test]
fn non_leader_exec_superseded_stderr_style() {
    // real strace 6.1 output (2>&1): after the exec only one task is left, so no prefixes
    let text = format!(
        concat!(
            "execve(\"./t\", [\"./t\"], 0x7ffe4f37bb48 /* 35 vars */) = 0\n",
            "clone3({{flags={f}, exit_signal=0}}strace: Process 11077 attached\n",
            " => {{parent_tid=[11077]}}, 88) = 11077\n",
            "[pid 11074] prctl(PR_SET_PDEATHSIG, SIGKILL) = 0\n",
            "[pid 11077] execve(\"/bin/true\", [\"true\"], 0x7ffe5024c458 /* 35 vars */ <pid changed to 11074 ...>\n",
            "+++ superseded by execve in pid 11077 +++\n",
            "<... execve resumed>)                   = 0\n",
            "exit_group(0)                           = ?\n",
            "+++ exited with 0 +++\n",
        ),
        f = THREAD_FLAGS
    );
    let imp = parse(&text);
    assert_eq!(imp.unreadable, 0);
    let e = evs(&imp);
    assert_eq!(e[0].0, 11074);
    assert_eq!(
        e[6],
        (
            11074,
            11074,
            K::PrctlEnter {
                option: PR_SET_PDEATHSIG,
                arg2: 9,
                name: None,
                shown: shown("PR_SET_PDEATHSIG, SIGKILL"),
            }
        )
    );
    assert!(matches!(&e[8], (11074, 11077, K::ExecEnter { .. })));
    assert_eq!(
        e[9],
        (
            11074,
            11074,
            K::Exec {
                cred: None,
                old_tid: 11077,
                filename: CapturedStr::new("/bin/true")
            }
        )
    );
    assert_eq!(e[10], (11074, 11074, sys_exit(Syscall::Execve, 0)));
    assert_eq!(
        e[11],
        (
            11074,
            11074,
            K::ExitEnter {
                syscall: Syscall::ExitGroup,
                code: 0
            }
        )
    );
    assert_eq!(e[12], (11074, 11074, exit(0, true)));
}

#[test]
fn superseded_without_pid_in_old_strace() {
    let text = format!(
        concat!(
            "[pid 20] clone3({{flags={f}, exit_signal=0}}, 88) = 21\n",
            "[pid 21] execve(\"/bin/true\", [\"true\"], 0x7ff /* 1 var */ <unfinished ...>\n",
            "[pid 20] +++ superseded by execve +++\n",
            "[pid 20] <... execve resumed>) = 0\n",
        ),
        f = THREAD_FLAGS
    );
    let imp = parse(&text);
    assert_eq!(
        imp.events.last().map(|e| (e.tid, e.kind.clone())),
        Some((20, sys_exit(Syscall::Execve, 0)))
    );
    let exec = &imp.events[imp.events.len() - 2];
    assert_eq!((exec.tgid, exec.tid), (20, 20));
    assert_eq!(
        exec.kind,
        K::Exec {
            cred: None,
            old_tid: 21,
            filename: CapturedStr::new("/bin/true")
        }
    );
}

#[test]
fn execve_and_execveat_arguments() {
    let imp = parse(concat!(
        "1 execve(\"/usr/bin/a\\tb\", [\"a\\\"q\\\"\", \"\\x41\\102\\n\", \"\\\\\", \"long\"..., ...], 0x7ffc /* 35 vars */) = 0\n",
        "1 execveat(6, \"\", [\"runc\", \"init\"], 0xc73f2e0 /* 8 vars */, AT_EMPTY_PATH) = 0\n",
        "1 execveat(AT_FDCWD, \"rel\", NULL, NULL, AT_SYMLINK_NOFOLLOW|AT_EMPTY_PATH) = -1 ENOENT (No such file or directory)\n",
        "1 execve(\"/x\"..., [], NULL) = -1 ENAMETOOLONG (File name too long)\n",
    ));
    let e = evs(&imp);
    assert_eq!(
        e[0].2,
        K::ExecEnter {
            syscall: Syscall::Execve,
            dirfd: -100,
            at_flags: 0,
            filename: CapturedStr::new("/usr/bin/a\tb"),
            argv: vec!["a\"q\"".into(), "AB\n".into(), "\\".into(), "long".into()],
            argv_truncated: true,
        }
    );
    assert_eq!(
        e[1].2,
        K::Exec {
            cred: None,
            old_tid: 1,
            filename: CapturedStr::new("/usr/bin/a\tb")
        }
    );
    assert_eq!(
        e[3].2,
        K::ExecEnter {
            syscall: Syscall::Execveat,
            dirfd: 6,
            at_flags: 0x1000,
            filename: CapturedStr::new(""),
            argv: vec!["runc".into(), "init".into()],
            argv_truncated: false,
        }
    );
    assert_eq!(
        e[6].2,
        K::ExecEnter {
            syscall: Syscall::Execveat,
            dirfd: -100,
            at_flags: 0x1100,
            filename: CapturedStr::new("rel"),
            argv: vec![],
            argv_truncated: false,
        }
    );
    assert_eq!(e[7].2, sys_exit(Syscall::Execveat, -2));
    assert!(
        matches!(&e[8].2, K::ExecEnter { filename, .. } if filename.truncated && filename.value == "/x")
    );
    assert_eq!(e[9].2, sys_exit(Syscall::Execve, -36));
    assert_eq!(e.len(), 10);
}

#[test]
fn unescape_c_escapes() {
    assert_eq!(unescape(r#"a\nb\tc\\d\"e"#), "a\nb\tc\\d\"e");
    assert_eq!(unescape(r"\x41\x4a\x4A"), "AJJ");
    assert_eq!(unescape(r"\101\0\7\177"), "A\0\x07\x7f");
    assert_eq!(unescape(r"\303\251"), "é"); // UTF-8 bytes in octal
    assert_eq!(unescape(r"\377"), "\u{fffd}"); // invalid UTF-8: replaced
    assert_eq!(unescape(r"end\"), "end\\");
    assert_eq!(unescape(r"\xZ"), "\\xZ");
    assert_eq!(unescape("plain ünïcödé"), "plain ünïcödé");
}

#[test]
fn prctl_forms() {
    let imp = parse(concat!(
        "9 prctl(PR_SET_NAME, \"runc:[1:CHILD]\") = 0\n",
        "9 prctl(PR_SET_NAME, \"runc:[0:PARENT]\"...) = 0\n",
        "9 prctl(PR_SET_CHILD_SUBREAPER, 1) = 0\n",
        "9 prctl(PR_SET_PDEATHSIG, SIGKILL <unfinished ...>\n",
        "9 <... prctl resumed>) = 0\n",
        "9 prctl(PR_CAPBSET_DROP, CAP_CHOWN) = 0\n",
        "9 prctl(PR_NOT_A_THING, 1) = -1 EINVAL (Invalid argument)\n",
    ));
    let e = evs(&imp);
    let name = |s: &str, t| {
        Some(CapturedStr {
            value: s.into(),
            truncated: t,
        })
    };
    assert_eq!(
        e[0].2,
        K::PrctlEnter {
            option: PR_SET_NAME,
            arg2: 0,
            name: name("runc:[1:CHILD]", false),
            shown: shown(r#"PR_SET_NAME, "runc:[1:CHILD]""#),
        }
    );
    assert_eq!(e[1].2, sys_exit(Syscall::Prctl, 0));
    assert_eq!(
        e[2].2,
        K::PrctlEnter {
            option: PR_SET_NAME,
            arg2: 0,
            name: name("runc:[0:PARENT]", true),
            shown: shown(r#"PR_SET_NAME, "runc:[0:PARENT]"..."#),
        }
    );
    assert_eq!(
        e[4].2,
        K::PrctlEnter {
            option: PR_SET_CHILD_SUBREAPER,
            arg2: 1,
            name: None,
            shown: shown("PR_SET_CHILD_SUBREAPER, 1"),
        }
    );
    assert_eq!(
        e[6].2,
        K::PrctlEnter {
            option: PR_SET_PDEATHSIG,
            arg2: 9,
            name: None,
            shown: shown("PR_SET_PDEATHSIG, SIGKILL"),
        }
    );
    assert_eq!(e[7].2, sys_exit(Syscall::Prctl, 0));
    assert_eq!(
        e[8].2,
        K::PrctlEnter {
            option: 24,
            arg2: 0,
            name: None,
            shown: shown("PR_CAPBSET_DROP, CAP_CHOWN"),
        }
    );
    // an option without a name here is skipped, with its exit
    assert_eq!(e.len(), 10);
    assert_eq!(imp.skipped, 1);
}

#[test]
fn restart_and_unknown_returns() {
    let imp = parse(concat!(
        "3 clone(child_stack=NULL, flags=SIGCHLD) = ? ERESTARTNOINTR (To be restarted)\n",
        "3 clone(child_stack=NULL, flags=SIGCHLD <unfinished ...>\n",
        "3 <... clone resumed>) = ?\n",
        "3 +++ killed by SIGKILL +++\n",
    ));
    let e = evs(&imp);
    assert_eq!(e[1].2, sys_exit(Syscall::Clone, -513));
    assert_eq!(e[2].2, clone_enter(Syscall::Clone, 0, 17));
    assert_eq!(e[3].2, exit(9, true));
    assert_eq!(e.len(), 4);
}

#[test]
fn resumed_without_call_in_log() {
    // log starts mid-call (strace -p): the exit still counts, Fork without known flags
    let imp = parse(
        "[pid 40] <... clone resumed>, child_tidptr=0x7f) = 41\n[pid 41] exit_group(0) = ?\n",
    );
    assert_eq!(
        imp.events[0].kind,
        K::Fork {
            child_tid: 41,
            child_tgid: 41,
            child_ppid: 0,
            syscall: Some(Syscall::Clone),
            flags: None,
            child_ns: None,
        }
    );
    assert_eq!(imp.events[1].kind, sys_exit(Syscall::Clone, 41));
}

#[test]
fn unprefixed_lines_follow_the_only_live_task() {
    // strace drops the prefix when a single task is left; here the initial process exits first
    let imp = parse(concat!(
        "strace: Process 50 attached\n",
        "clone(child_stack=NULL, flags=SIGCHLD) = 51\n",
        "strace: Process 51 attached\n",
        "[pid 50] +++ exited with 0 +++\n",
        "exit_group(4) = ?\n",
        "+++ exited with 4 +++\n",
    ));
    let e = evs(&imp);
    assert_eq!(e[0].1, 50);
    assert_eq!(e[1], (50, 50, fork_in(51, 51, 50, Syscall::Clone, 0)));
    assert_eq!(e[3], (50, 50, exit(0, true)));
    assert_eq!(
        e[4],
        (
            51,
            51,
            K::ExitEnter {
                syscall: Syscall::ExitGroup,
                code: 4
            }
        )
    );
    assert_eq!(e[5], (51, 51, exit(4 << 8, true)));
}

#[test]
fn quiet_log_child_speaks_before_unannounced_initial_resumes() {
    // `strace -qf` (no attach notices), 2>&1: the child's first line precedes the parent's
    let imp = parse(concat!(
        "execve(\"/bin/sh\", [\"sh\"], 0x7ffd /* 1 var */) = 0\n",
        "vfork( <unfinished ...>\n",
        "[pid 11232] execve(\"/bin/true\", [\"/bin/true\"], 0x55 /* 1 var */) = 0\n",
        "[pid 11231] <... vfork resumed>) = 11232\n",
        "+++ exited with 0 +++\n",
    ));
    assert_eq!(
        forks(&imp),
        [(11231, 11232, 11232, Some(CLONE_VM | CLONE_VFORK))]
    );
    assert_eq!(imp.events[0].tid, 11231);
    let last = imp.events.last().unwrap();
    assert_eq!((last.tid, last.kind.clone()), (11231, exit(0, true)));
    // and the initial process's resumed line comes first
    let imp = parse(concat!(
        "clone(child_stack=NULL, flags=SIGCHLD <unfinished ...>\n",
        "[pid 70] <... clone resumed>) = 71\n",
        "[pid 71] exit_group(0) = ?\n",
    ));
    assert_eq!(forks(&imp), [(70, 71, 71, Some(0))]);
}

#[test]
fn initial_pid_never_revealed_stays_placeholder() {
    let imp = parse("execve(\"/bin/true\", [\"true\"], 0x7ffd /* 1 var */) = 0\nexit_group(0) = ?\n+++ exited with 0 +++\n");
    assert!(imp
        .events
        .iter()
        .all(|e| e.tid == UNKNOWN_PID && e.tgid == UNKNOWN_PID));
    assert_eq!(imp.events.len(), 5);
}
