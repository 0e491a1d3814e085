//! Line forms: pid prefixes, stamps, strace's output options, the clone family, calls unfinished
//! and resumed, spliced notices.

use super::*;

#[test]
fn event_metadata_defaults_and_seq() {
    let imp = parse("10 exit_group(3) = ?\n10 +++ exited with 3 +++\n");
    assert_eq!(imp.lines, 2);
    assert_eq!(imp.events.len(), 2);
    let e = &imp.events[0];
    assert_eq!(
        (e.seq, e.ts_ns, e.ppid, e.uid, e.cgroup_id),
        (1, 0, 0, u32::MAX, 0)
    );
    assert!(e.comm.is_empty());
    assert_eq!(
        e.kind,
        K::ExitEnter {
            syscall: Syscall::ExitGroup,
            code: 3
        }
    );
    assert_eq!(imp.events[1].seq, 2);
    assert_eq!(imp.events[1].kind, exit(3 << 8, true));
}

#[test]
fn pid_prefix_styles() {
    let imp = parse(concat!(
        "[pid  4321] prctl(PR_SET_CHILD_SUBREAPER, 1) = 0\n",
        "4322  prctl(PR_SET_CHILD_SUBREAPER, 1) = 0\n",
        "4323<runc:[2:INIT]> prctl(PR_SET_CHILD_SUBREAPER, 1) = 0\n",
        "[pid 4324<sh>] prctl(PR_SET_CHILD_SUBREAPER, 1) = 0\n",
    ));
    let tids: Vec<u32> = imp.events.iter().map(|e| e.tid).collect();
    assert_eq!(tids, [4321, 4321, 4322, 4322, 4323, 4323, 4324, 4324]);
    assert_eq!(imp.unreadable, 0);
    assert_eq!(
        imp.events[0].kind,
        K::PrctlEnter {
            option: PR_SET_CHILD_SUBREAPER,
            arg2: 1,
            name: None,
            shown: shown("PR_SET_CHILD_SUBREAPER, 1"),
        }
    );
    assert_eq!(imp.events[1].kind, sys_exit(Syscall::Prctl, 0));
}

#[test]
fn decode_pids_comm_prefixes() {
    // real strace 6.1 `-f -Y` output, stderr and -o styles
    for text in [
        concat!(
            "execve(\"/usr/bin/sh\", [\"sh\", \"-c\", \"/bin/true\"], 0x7ffdadcd5200 /* 35 vars */) = 0\n",
            "vfork(strace: Process 1859 attached\n",
            " <unfinished ...>\n",
            "[pid  1859<sh>] execve(\"/bin/true\", [\"/bin/true\"], 0x55c519d10880 /* 35 vars */ <unfinished ...>\n",
            "[pid  1858<sh>] <... vfork resumed>)    = 1859<true>\n",
            "[pid  1859<true>] <... execve resumed>) = 0\n",
            "[pid  1859<true>] exit_group(0)         = ?\n",
            "[pid  1859<true>] +++ exited with 0 +++\n",
            "--- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED, si_pid=1859, si_uid=0, si_status=0} ---\n",
            "exit_group(0)                           = ?\n",
        ),
        concat!(
            "1858<strace> execve(\"/usr/bin/sh\", [\"sh\", \"-c\", \"/bin/true\"], 0x7ffd96a555f0 /* 35 vars */) = 0\n",
            "1858<sh> vfork( <unfinished ...>\n",
            "1859<sh> execve(\"/bin/true\", [\"/bin/true\"], 0x5630e04d7880 /* 35 vars */ <unfinished ...>\n",
            "1858<sh> <... vfork resumed>)           = 1859<true>\n",
            "1859<true> <... execve resumed>)        = 0\n",
            "1859<true> exit_group(0)                = ?\n",
            "1859<true> +++ exited with 0 +++\n",
            "1858<sh> --- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED, si_pid=1864, si_uid=0} ---\n",
            "1858<sh> exit_group(0)                  = ?\n",
        ),
    ] {
        let imp = parse(text);
        assert_eq!(imp.unreadable, 0, "{:?}", imp.first_unreadable);
        assert_eq!(forks(&imp), [(1858, 1859, 1859, Some(CLONE_VM | CLONE_VFORK))]);
        assert!(execs(&imp).contains(&(1859, "/bin/true".into())));
        let last = imp.events.last().unwrap();
        assert_eq!((last.tid, last.kind.clone()), (1858, K::ExitEnter { syscall: Syscall::ExitGroup, code: 0 }));
        assert!(imp.events.iter().any(|e| e.kind == sys_exit(Syscall::Vfork, 1859)));
    }
}

#[test]
fn pid_reuse_after_exit_is_a_new_task() {
    let imp = parse(concat!(
        "[pid 10] clone(child_stack=NULL, flags=SIGCHLD) = 11\n",
        "strace: Process 11 attached\n",
        "[pid 11] +++ exited with 0 +++\n",
        "[pid 10] clone(child_stack=NULL, flags=SIGCHLD) = 11\n",
        "strace: Process 11 attached\n",
        "[pid 11] exit_group(1) = ?\n",
    ));
    assert_eq!(forks(&imp), [(10, 11, 11, Some(0)), (10, 11, 11, Some(0))]);
}

#[test]
fn timestamps_absolute() {
    // -t, -tt: ns since midnight, with a day added across midnight
    let imp = parse(concat!(
        "1 23:59:59 exit(0) = ?\n",
        "2 23:59:59.250000 exit(0) = ?\n",
        "3 00:00:01.5 exit(0) = ?\n",
    ));
    let ts: Vec<u64> = imp.events.iter().map(|e| e.ts_ns).collect();
    let s = 1_000_000_000u64;
    assert_eq!(
        ts,
        [
            86_399 * s,
            86_399 * s + 250_000_000,
            86_401 * s + 500_000_000
        ]
    );
    // -ttt: epoch, any precision
    let imp = parse("[pid 7] 1796030144.702538 exit(0) = ?\n1796030145.000000001 exit(1) = ?\n");
    assert_eq!(imp.events[0].ts_ns, 1_796_030_144_702_538_000);
    assert_eq!(imp.events[1].ts_ns, 1_796_030_145_000_000_001);
    assert_eq!(imp.events[1].tid, 7); // the only task known
}

#[test]
fn timestamps_relative_accumulate_and_notices_keep_time() {
    let imp = parse(concat!(
        "17061      0.000000 execve(\"/bin/x\", [\"x\"], 0x7ffc /* 3 vars */) = 0\n",
        "17061      0.250000 clone(child_stack=NULL, flags=SIGCHLD) = 17062\n",
        "strace: Process 17062 attached\n",
        "17062      1.000001 exit_group(0)       = ?\n",
    ));
    let ts: Vec<(&str, u64)> = imp
        .events
        .iter()
        .map(|e| (e.kind.name(), e.ts_ns))
        .collect();
    assert_eq!(
        ts,
        [
            ("exec_enter", 0),
            ("exec", 0),
            ("syscall_exit", 0),
            ("clone_enter", 250_000_000),
            ("fork", 250_000_000),
            ("syscall_exit", 250_000_000),
            ("exit_enter", 1_250_001_000),
        ]
    );
}

#[test]
fn duration_suffix_is_ignored() {
    let imp = parse("5 prctl(PR_SET_NAME, \"x\") = 0 <0.000012>\n");
    assert_eq!(imp.events[1].kind, sys_exit(Syscall::Prctl, 0));
}

#[test]
fn rarer_strace_output_options() {
    let imp = parse(concat!(
        // -i
        "[pid 5] 09:00:00 [00007f3c9a8e1b2d] clone(child_stack=NULL, flags=SIGCHLD) = 6\n",
        "strace: Process 6 attached\n",
        // -k
        " > /usr/lib/x86_64-linux-gnu/libc.so.6(__clone+0x40) [0x10a2c0]\n",
        // -X verbose
        "[pid 6] clone(child_stack=NULL, flags=0x1200011 /* CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD */, child_tidptr=0x7f) = 7\n",
        "[ Process PID=6 runs in 32 bit mode. ]\n",
        "[pid 7] ????( <unfinished ...>\n",
    ));
    assert_eq!(imp.unreadable, 0, "{:?}", imp.first_unreadable);
    assert_eq!(
        forks(&imp),
        [
            (5, 6, 6, Some(0)),
            (
                6,
                7,
                7,
                Some(cf::CLONE_CHILD_CLEARTID | cf::CLONE_CHILD_SETTID)
            )
        ]
    );
    assert_eq!(imp.skipped, 2); // -k and "[ Process ...]"; "????(" named the child
}

#[test]
fn clone_family_calls() {
    let imp = parse(concat!(
        "100 clone(child_stack=NULL, flags=CLONE_VM|CLONE_VFORK|SIGCHLD) = 101\n",
        "100 fork() = 102\n",
        "100 vfork() = 103\n",
        "100 clone3({flags=CLONE_PARENT, exit_signal=SIGCHLD, stack=NULL, stack_size=0}, 88) = 104\n",
        "100 clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD, child_tidptr=0x7f) = -1 EAGAIN (Resource temporarily unavailable)\n",
        "100 exit_group(0) = ?\n",
    ));
    let e = evs(&imp);
    use Syscall::*;
    assert_eq!(
        e[0],
        (100, 100, clone_enter(Clone, CLONE_VM | CLONE_VFORK, 17))
    );
    // -o log, no notices: the return value names the child once the caller moves on
    assert_eq!(
        e[1],
        (
            100,
            100,
            fork_in(101, 101, 100, Clone, CLONE_VM | CLONE_VFORK)
        )
    );
    assert_eq!(e[2], (100, 100, sys_exit(Clone, 101)));
    assert_eq!(e[3].2, clone_enter(Fork, 0, 17));
    assert_eq!(e[4].2, fork_in(102, 102, 100, Fork, 0));
    assert_eq!(e[5].2, sys_exit(Fork, 102));
    assert_eq!(e[6].2, clone_enter(Vfork, CLONE_VM | CLONE_VFORK, 17));
    assert_eq!(
        e[7].2,
        fork_in(103, 103, 100, Vfork, CLONE_VM | CLONE_VFORK)
    );
    assert_eq!(e[9].2, clone_enter(Clone3, CLONE_PARENT, 17));
    // CLONE_PARENT: the parent of 100, which the log does not show
    assert_eq!(e[10].2, fork(104, 104, Clone3, CLONE_PARENT));
    // failed clone: enter + exit with -errno, no fork
    assert_eq!(
        e[12].2,
        clone_enter(Clone, cf::CLONE_CHILD_CLEARTID | cf::CLONE_CHILD_SETTID, 17)
    );
    assert_eq!(e[13].2, sys_exit(Clone, -11));
    assert_eq!(
        e[14].2,
        K::ExitEnter {
            syscall: ExitGroup,
            code: 0
        }
    );
    assert_eq!(e.len(), 15);
}

#[test]
fn clone_return_fallback_at_end_and_contradicted() {
    // child never shows: resolved from the return value at the end of the log
    let imp = parse("100 clone(child_stack=NULL, flags=SIGCHLD) = 101\n");
    assert_eq!(forks(&imp), [(100, 101, 101, Some(0))]);
    assert_eq!(
        imp.events.last().unwrap().kind,
        sys_exit(Syscall::Clone, 101)
    );
    // the return value is a pid that is already another task: no Fork, only the exit
    let imp = parse(concat!(
        "7 exit(0) = ?\n",
        "100 clone(child_stack=NULL, flags=SIGCHLD) = 7\n",
        "100 exit_group(0) = ?\n",
    ));
    assert!(forks(&imp).is_empty());
    assert_eq!(imp.events[2].kind, sys_exit(Syscall::Clone, 7));
}

#[test]
fn unfinished_resumed_interleaved_by_pid() {
    let imp = parse(concat!(
        "[pid   300] --- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED, si_pid=299, si_uid=0, si_status=0, si_utime=0, si_stime=0} ---\n",
        "[pid   200] clone(child_stack=NULL, flags=CLONE_VM|CLONE_VFORK|SIGCHLD <unfinished ...>\n",
        "[pid   300] execve(\"/bin/a\", [\"a\"], 0x7ff /* 1 var */ <unfinished ...>\n",
        "[pid   300] <... execve resumed>) = 0\n",
        "[pid   200] <... clone resumed>) = 201\n",
        "[pid   201] execve(\"/bin/b\", [\"b\"], 0x7ff /* 1 var */) = -1 ENOENT (No such file or directory)\n",
    ));
    let mut e = evs(&imp);
    use Syscall::*;
    assert_eq!(e.remove(0), (300, 300, signal(17, 1, 299, 300, 300)));
    assert_eq!(
        e[0],
        (200, 200, clone_enter(Clone, CLONE_VM | CLONE_VFORK, 17))
    );
    assert_eq!(e[1].1, 300);
    assert!(matches!(&e[1].2, K::ExecEnter { filename, .. } if filename.value == "/bin/a"));
    assert_eq!(
        e[2],
        (
            300,
            300,
            K::Exec {
                cred: None,
                old_tid: 300,
                filename: CapturedStr::new("/bin/a")
            }
        )
    );
    assert_eq!(e[3], (300, 300, sys_exit(Execve, 0)));
    // the clone returns 201; the child speaks next: it is 201
    assert_eq!(
        e[4],
        (
            200,
            200,
            fork_in(201, 201, 200, Clone, CLONE_VM | CLONE_VFORK)
        )
    );
    assert_eq!(e[5], (200, 200, sys_exit(Clone, 201)));
    // failed exec: exit only, no Exec
    assert_eq!(e[7], (201, 201, sys_exit(Execve, -2)));
    assert_eq!(e.len(), 8);
}

#[test]
fn child_speaks_before_parent_resumes() {
    // -o log: the child's first line comes before the parent's resumed line
    let imp = parse(concat!(
        "15128 clone(child_stack=NULL, flags=CLONE_VM|CLONE_VFORK|SIGCHLD <unfinished ...>\n",
        "15133 execve(\"/proc/self/exe\", [\"runc\", \"init\"], 0xc0 /* 7 vars */ <unfinished ...>\n",
        "15128 <... clone resumed>) = 15133\n",
        "15133 <... execve resumed>) = 0\n",
    ));
    let names: Vec<&str> = imp.events.iter().map(|e| e.kind.name()).collect();
    assert_eq!(
        names,
        [
            "clone_enter",
            "fork",
            "exec_enter",
            "syscall_exit",
            "exec",
            "syscall_exit"
        ]
    );
    assert_eq!(
        forks(&imp),
        [(15128, 15133, 15133, Some(CLONE_VM | CLONE_VFORK))]
    );
}

#[test]
fn spliced_attach_notice() {
    // real strace 6.1 output (2>&1): the notice splits the clone line in two
    let text = concat!(
        "clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLDstrace: Process 11076 attached\n",
        ", child_tidptr=0x7f5717b50a10) = 11076\n",
        "[pid 11076] exit_group(3)               = ?\n",
        "[pid 11074] vfork(strace: Process 11077 attached\n",
        " <unfinished ...>\n",
        "[pid 11077] exit_group(0) = ?\n",
        "[pid 11074] <... vfork resumed>) = 11077\n",
    );
    let imp = parse(text);
    assert_eq!(imp.unreadable, 0, "{:?}", imp.first_unreadable);
    assert_eq!(imp.lines, 7);
    let e = evs(&imp);
    use Syscall::*;
    let f = cf::CLONE_CHILD_CLEARTID | cf::CLONE_CHILD_SETTID;
    // the initial process's pid is learned from its first prefixed line and patched in
    assert_eq!(e[0], (11074, 11074, clone_enter(Clone, f, 17)));
    assert_eq!(e[1], (11074, 11074, fork_in(11076, 11076, 11074, Clone, f)));
    assert_eq!(e[2], (11074, 11074, sys_exit(Clone, 11076)));
    assert_eq!(
        e[3],
        (
            11076,
            11076,
            K::ExitEnter {
                syscall: ExitGroup,
                code: 3
            }
        )
    );
    assert_eq!(
        e[4],
        (11074, 11074, clone_enter(Vfork, CLONE_VM | CLONE_VFORK, 17))
    );
    // the notice came while vfork was still in the call: Fork before the child's events
    assert_eq!(
        e[5],
        (
            11074,
            11074,
            fork_in(11077, 11077, 11074, Vfork, CLONE_VM | CLONE_VFORK)
        )
    );
    assert_eq!(e[6].1, 11077);
    assert_eq!(e[7], (11074, 11074, sys_exit(Vfork, 11077)));
    assert_eq!(e.len(), 8);
}

#[test]
fn spliced_notice_whose_continuation_never_comes() {
    let imp = parse(concat!(
        "[pid 5] clone(child_stack=NULL, flags=SIGCHLDstrace: Process 6 attached\n",
        "[pid 6] exit_group(0) = ?\n",
    ));
    // the cut half is unreadable, the next line still counts, the notice still names 6
    assert_eq!(imp.unreadable, 1);
    assert_eq!(imp.first_unreadable[0].0, 1);
    assert!(imp.first_unreadable[0].1.starts_with("[pid 5] clone("));
    assert_eq!(
        evs(&imp)[0],
        (
            6,
            6,
            K::ExitEnter {
                syscall: Syscall::ExitGroup,
                code: 0
            }
        )
    );
}

#[test]
fn notice_inside_a_string_is_not_spliced() {
    let imp = parse("[pid 9] write(2, \"strace: Process 5 attached\\n\", 27) = 27\n");
    assert_eq!((imp.skipped, imp.unreadable), (1, 0));
    assert!(imp.events.is_empty());
}

#[test]
fn namespace_pid_mismatch_attach_notice_wins() {
    // real runc output: inside the container's pid namespace clone3 returns 2, the host tid is 15287
    let text = format!(
        concat!(
            "[pid 15286] 1796030144.838705 clone3({{flags={f}, exit_signal=0, stack=0x7f, stack_size=0x7fff80, tls=0x7f}} => {{parent_tid=[2]}}, 88) = 2\n",
            "strace: Process 15287 attached\n",
            "[pid 15286] 1796030144.839398 clone3({{flags={f}, exit_signal=0}}strace: Process 15289 attached\n",
            " => {{parent_tid=[4]}}, 88) = 4\n",
            "[pid 15289] 1796030144.865596 +++ exited with 0 +++\n",
            "[pid 15287] 1796030144.865609 +++ exited with 0 +++\n",
        ),
        f = THREAD_FLAGS
    );
    let imp = parse(&text);
    assert_eq!(imp.unreadable, 0);
    let tf = crate::names::parse_clone_flags(THREAD_FLAGS).unwrap().0;
    assert_eq!(
        forks(&imp),
        [
            (15286, 15287, 15286, Some(tf)),
            (15286, 15289, 15286, Some(tf))
        ]
    );
    let e = evs(&imp);
    assert_eq!(e[2], (15286, 15286, sys_exit(Syscall::Clone3, 2)));
    // the threads exit as threads of 15286
    assert_eq!(e[6], (15286, 15289, exit(0, false)));
    assert_eq!(e[7], (15286, 15287, exit(0, false)));
}
