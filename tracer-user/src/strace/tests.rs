use super::*;
use crate::event::prctl_opt::{PR_SET_CHILD_SUBREAPER, PR_SET_NAME, PR_SET_PDEATHSIG};
use crate::event::PidNs;
use crate::event::{SignalInfo, SignalResult};
use crate::names::si_code::SI_TKILL;
use cf::{CLONE_PARENT, CLONE_VFORK, CLONE_VM};
use EventKind as K;

mod inferred;
mod signals;

const THREAD_FLAGS: &str = "CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD|CLONE_SYSVSEM|CLONE_SETTLS|CLONE_PARENT_SETTID|CLONE_CHILD_CLEARTID";

fn fixture(name: &str) -> String {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/strace")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// What the importer keeps of a prctl line's arguments as strace wrote them.
fn shown(args: &str) -> Option<Box<crate::event::PrctlShown>> {
    Some(Box::new(crate::event::PrctlShown {
        args: Some(args.into()),
        read: None,
    }))
}

/// The pid namespace of the `Fork` that made `child` (outer `None`: no such `Fork`).
fn fork_ns(imp: &Import, child: u32) -> Option<Option<PidNs>> {
    imp.events.iter().find_map(|ev| match ev.kind {
        K::Fork {
            child_tid,
            child_ns,
            ..
        } if child_tid == child => Some(child_ns),
        _ => None,
    })
}

fn parse(text: &str) -> Import {
    parse_log(text).expect("parses")
}

/// (tgid, tid, kind) of every event.
fn evs(imp: &Import) -> Vec<(u32, u32, EventKind)> {
    imp.events
        .iter()
        .map(|e| (e.tgid, e.tid, e.kind.clone()))
        .collect()
}

fn forks(imp: &Import) -> Vec<(u32, u32, u32, Option<u64>)> {
    imp.events
        .iter()
        .filter_map(|e| match e.kind {
            K::Fork {
                child_tid,
                child_tgid,
                flags,
                ..
            } => Some((e.tid, child_tid, child_tgid, flags.map(|f| f.0))),
            _ => None,
        })
        .collect()
}

fn clone_enter(sc: Syscall, flags: u64, sig: u32) -> EventKind {
    K::CloneEnter {
        syscall: sc,
        flags: CloneFlags(flags),
        exit_signal: sig,
    }
}

/// A Fork whose child's parent is `ppid` (copy_process: the caller's process, or its parent
/// with CLONE_PARENT or CLONE_THREAD).
fn fork_in(child: u32, tgid: u32, ppid: u32, sc: Syscall, flags: u64) -> EventKind {
    match fork(child, tgid, sc, flags) {
        K::Fork {
            child_tid,
            child_tgid,
            syscall,
            flags,
            child_ns,
            ..
        } => K::Fork {
            child_tid,
            child_tgid,
            child_ppid: ppid,
            syscall,
            flags,
            child_ns,
        },
        other => other,
    }
}

/// A Fork whose child's parent the log cannot tell (0).
fn fork(child: u32, tgid: u32, sc: Syscall, flags: u64) -> EventKind {
    K::Fork {
        child_tid: child,
        child_tgid: tgid,
        child_ppid: 0,
        syscall: Some(sc),
        flags: Some(CloneFlags(flags)),
        child_ns: None,
    }
}

fn sys_exit(sc: Syscall, ret: i64) -> EventKind {
    K::SyscallExit { syscall: sc, ret }
}

/// A signal delivered to `target_tid` of `target` (the receiver, whose log line it is).
fn sig_info(sig: i32, code: i32, sender: u32, target: u32, target_tid: u32) -> SignalInfo {
    SignalInfo {
        signal: sig,
        code,
        sender,
        sender_tid: 0,
        target,
        target_tid,
        group: code != SI_TKILL,
        result: SignalResult::Delivered,
        inferred: false,
    }
}

fn signal(sig: i32, code: i32, sender: u32, target: u32, target_tid: u32) -> EventKind {
    K::Signal(sig_info(sig, code, sender, target, target_tid))
}

fn exit(code: u32, group_dead: bool) -> EventKind {
    K::TaskExit {
        exit_code: code,
        group_dead,
    }
}

// ---------------------------------------------------------------- line forms

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

    // Two processes inside a vfork at once, a new pid speaks: no guess; the clone that returns
    // it names it.
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
    // The namespace is inferred: 5001 is pid 1 of it, its descendants are in it at the pids
    // their clones returned, the host caller's other child is in none the log implies.
    let inside = PidNs::inferred(1, 1, 0);
    let child_ns = |pid: u32| fork_ns(&imp, pid);
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
    let mut with_ns = fork_in(5003, 5003, 5001, Clone, 0);
    if let K::Fork { child_ns, .. } = &mut with_ns {
        *child_ns = Some(PidNs {
            ns_pid: 700,
            ..inside
        });
    }
    assert_eq!(e[7], (5001, 5001, with_ns));
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

// ---------------------------------------------------------------- robustness

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

// ---------------------------------------------------------------- real fixtures

/// Pids named in a truth file's `# ps ...` header, e.g. "container init 15136".
fn truth_pid(truth: &str, label: &str) -> u32 {
    let at = truth
        .find(label)
        .unwrap_or_else(|| panic!("{label} in truth"))
        + label.len();
    truth[at..]
        .trim_start()
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// (pid, ppid, comm) rows of the ps part of a truth file.
fn truth_rows(truth: &str) -> Vec<(u32, u32, String)> {
    truth
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            Some((
                w.next()?.parse().ok()?,
                w.next()?.parse().ok()?,
                w.next()?.to_string(),
            ))
        })
        .collect()
}

fn set_names(imp: &Import) -> Vec<(u32, String)> {
    imp.events
        .iter()
        .filter_map(|e| match &e.kind {
            K::PrctlEnter {
                option: PR_SET_NAME,
                name: Some(n),
                ..
            } => Some((e.tid, n.value.clone())),
            _ => None,
        })
        .collect()
}

fn clone_parent_forks(imp: &Import) -> Vec<(u32, u32)> {
    forks(imp)
        .into_iter()
        .filter(|f| f.3.is_some_and(|x| x & CLONE_PARENT != 0))
        .map(|f| (f.0, f.1))
        .collect()
}

fn execs(imp: &Import) -> Vec<(u32, String)> {
    imp.events
        .iter()
        .filter_map(|e| match &e.kind {
            K::Exec { filename, .. } => Some((e.tid, filename.value.clone())),
            _ => None,
        })
        .collect()
}

/// Facts every runc-based fixture shares: the three init stages, two CLONE_PARENT clones,
/// the last stage exec'ing the workload, and every Fork pairing with its exit.
fn check_runc_story(imp: &Import, init_pid: u32, workload: &str) {
    assert_eq!(imp.unreadable, 0, "{:?}", imp.first_unreadable);
    let names = set_names(imp);
    let stage = |n: &str| names.iter().find(|(_, s)| s == n).map(|(t, _)| *t);
    let (p, c, i) = (
        stage("runc:[0:PARENT]"),
        stage("runc:[1:CHILD]"),
        stage("runc:[2:INIT]"),
    );
    assert!(p.is_some() && c.is_some(), "{names:?}");
    assert_eq!(i, Some(init_pid));
    assert_eq!(
        clone_parent_forks(imp),
        [(p.unwrap(), c.unwrap()), (c.unwrap(), init_pid)]
    );
    assert!(
        execs(imp).contains(&(init_pid, workload.to_string())),
        "{:?}",
        execs(imp)
    );
    // seq 1, 2, 3 ...
    assert!(imp
        .events
        .iter()
        .enumerate()
        .all(|(i, e)| e.seq == i as u64 + 1));
    // every child named once
    let mut kids: Vec<u32> = forks(imp).iter().map(|f| f.1).collect();
    let n = kids.len();
    kids.sort_unstable();
    kids.dedup();
    assert_eq!(kids.len(), n);
}

#[test]
fn fixture_runc_o_file() {
    let imp = parse(&fixture("runc.log"));
    let truth = fixture("runc.truth.txt");
    let init = truth_pid(&truth, "container init");
    assert_eq!(init, 15136);
    check_runc_story(&imp, init, "/bin/sleep");
    assert_eq!(imp.lines, 171);
    // runc itself (15126) set itself subreaper; its Go threads carry its tgid
    let sub = imp.events.iter().find(|e| {
        matches!(
            e.kind,
            K::PrctlEnter {
                option: PR_SET_CHILD_SUBREAPER,
                arg2: 1,
                ..
            }
        )
    });
    assert_eq!(sub.map(|e| (e.tgid, e.tid)), Some((15126, 15126)));
    let vfork_caller = imp.events.iter().find(|e| {
        matches!(
            e.kind,
            K::Fork {
                child_tid: 15133,
                ..
            }
        )
    });
    assert_eq!(vfork_caller.map(|e| (e.tgid, e.tid)), Some((15126, 15128)));
    // the truth: sleep is alive, the rest of runc is gone
    assert!(truth_rows(&truth).contains(&(15136, 1, "sleep".into())));
    let exited: Vec<u32> = imp
        .events
        .iter()
        .filter(|e| {
            matches!(
                e.kind,
                K::TaskExit {
                    group_dead: true,
                    ..
                }
            )
        })
        .map(|e| e.tid)
        .collect();
    assert!(exited.contains(&15126) && exited.contains(&15133) && exited.contains(&15135));
    // the log ends after sleep exits (strace waited for it)
    assert_eq!(
        imp.events.last().map(|e| (e.tid, e.kind.clone())),
        Some((15136, exit(0, true)))
    );
    // -tt: ns since midnight
    assert_eq!(
        imp.events[0].ts_ns,
        (9 * 3600 + 15 * 60 + 30) * 1_000_000_000 + 704_030_000
    );
}

#[test]
fn fixture_runc_stderr_with_namespace_returns() {
    let imp = parse(&fixture("runc-stderr.log"));
    let truth = fixture("runc-stderr.truth.txt");
    let init = truth_pid(&truth, "container init");
    check_runc_story(&imp, init, "/bin/sleep");
    // the initial process (runc, never announced) was learned from its first prefixed line
    assert!(imp.events.iter().all(|e| e.tid != UNKNOWN_PID));
    assert_eq!(imp.events[0].tid, 15277);
    // inside the container's pid namespace clone3 returned 2..5; the attach notices won
    let init_threads: Vec<u32> = forks(&imp)
        .iter()
        .filter(|f| f.0 == init)
        .map(|f| f.1)
        .collect();
    assert_eq!(init_threads, [15287, 15288, 15289, 15290]);
    let rets: Vec<i64> = imp
        .events
        .iter()
        .filter(|e| e.tid == init)
        .filter_map(|e| match e.kind {
            K::SyscallExit {
                syscall: Syscall::Clone3,
                ret,
            } => Some(ret),
            _ => None,
        })
        .collect();
    assert_eq!(rets, [2, 3, 4, 5]);
    assert!(forks(&imp).iter().all(|f| f.1 > 15000));
    // -ttt: epoch ns
    assert_eq!(imp.events[0].ts_ns, 1_796_030_144_702_538_000);
}

#[test]
fn fixture_ctr_containerd_attached() {
    let imp = parse(&fixture("ctr.log"));
    let truth = fixture("ctr.truth.txt");
    let (containerd, shim, init) = (
        truth_pid(&truth, "containerd"),
        truth_pid(&truth, "shim"),
        truth_pid(&truth, "container init"),
    );
    check_runc_story(&imp, init, "/bin/sleep");
    // every event of containerd's threads is in containerd's process
    let tids: HashSet<u32> = truth_rows(&truth).iter().map(|r| r.0).collect();
    assert!(tids.contains(&containerd) && tids.contains(&shim));
    let first_fork = imp
        .events
        .iter()
        .find(|e| matches!(e.kind, K::Fork { .. }))
        .unwrap();
    assert_eq!(first_fork.tgid, containerd);
    assert_ne!(first_fork.tid, containerd);
    // the long-lived shim is forked by the short-lived `shim start`, which exits
    let shim_fork = imp
        .events
        .iter()
        .find(|e| matches!(e.kind, K::Fork { child_tid, .. } if child_tid == shim));
    let starter = shim_fork.unwrap().tgid;
    assert!(execs(&imp).contains(&(starter, "/usr/bin/containerd-shim-runc-v2".into())));
    assert!(imp
        .events
        .iter()
        .any(|e| e.tid == starter && e.kind == exit(0, true)));
    // the shim's threads are threads of the shim
    assert!(imp.events.iter().any(|e| e.tgid == shim && e.tid != shim));
    // `ctr task kill -s SIGKILL`
    assert!(imp
        .events
        .iter()
        .any(|e| e.tid == init && e.kind == exit(9, true)));
    // the shim set itself subreaper (from one of its threads)
    assert!(imp.events.iter().any(|e| e.tgid == shim
        && matches!(
            e.kind,
            K::PrctlEnter {
                option: PR_SET_CHILD_SUBREAPER,
                arg2: 1,
                ..
            }
        )));
}

#[test]
fn fixture_podman_conmon() {
    let imp = parse(&fixture("podman.log"));
    let truth = fixture("podman.truth.txt");
    let (podman, conmon, init) = (
        truth_pid(&truth, "podman"),
        truth_pid(&truth, "conmon"),
        truth_pid(&truth, "container init"),
    );
    check_runc_story(&imp, init, "/bin/sleep");
    // conmon double-forks: podman → conmon → conmon (which lives on, parent exits)
    let conmon_fork = imp
        .events
        .iter()
        .find(|e| matches!(e.kind, K::Fork { child_tid, .. } if child_tid == conmon));
    let first_conmon = conmon_fork.unwrap().tid;
    assert!(execs(&imp).contains(&(first_conmon, "/usr/bin/conmon".into())));
    let podman_child = imp
        .events
        .iter()
        .find(|e| matches!(e.kind, K::Fork { child_tid, .. } if child_tid == first_conmon));
    assert_eq!(podman_child.unwrap().tgid, podman);
    assert!(imp.events.iter().any(|e| e.tid == conmon
        && matches!(
            e.kind,
            K::PrctlEnter {
                option: PR_SET_CHILD_SUBREAPER,
                arg2: 1,
                ..
            }
        )));
    // the truth at capture time: conmon reparented to init, sleep under conmon
    let rows = truth_rows(&truth);
    assert!(rows.contains(&(conmon, 1, "conmon".into())));
    assert!(rows.contains(&(init, conmon, "sleep".into())));
    // -r: relative stamps summed; sleep ran ~5 s
    let exec_ts = imp
        .events
        .iter()
        .find(|e| e.tid == init && matches!(e.kind, K::Exec { .. }))
        .unwrap()
        .ts_ns;
    let exit_ts = imp
        .events
        .iter()
        .find(|e| e.tid == init && matches!(e.kind, K::TaskExit { .. }))
        .unwrap()
        .ts_ns;
    assert!(
        (5_000_000_000..5_100_000_000).contains(&(exit_ts - exec_ts)),
        "{}",
        exit_ts - exec_ts
    );
}

#[test]
fn children_get_the_parent_copy_process_gives_them() {
    let imp = parse(concat!(
        "10 clone(child_stack=NULL, flags=SIGCHLD) = 11\n",
        "11 clone(child_stack=NULL, flags=CLONE_PARENT|SIGCHLD) = 12\n",
        "12 clone(child_stack=0x7f, flags=CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD|CLONE_SYSVSEM) = 13\n",
        "10 exit_group(0) = ?\n",
        "10 +++ exited with 0 +++\n",
        "11 clone(child_stack=NULL, flags=CLONE_PARENT|SIGCHLD) = 14\n",
        "11 clone(child_stack=NULL, flags=SIGCHLD) = 15\n",
    ));
    let parents: Vec<(u32, u32)> = imp
        .events
        .iter()
        .filter_map(|e| match e.kind {
            K::Fork {
                child_tid,
                child_ppid,
                ..
            } => Some((child_tid, child_ppid)),
            _ => None,
        })
        .collect();
    // 12: CLONE_PARENT, the caller's parent; 13: a thread of 12, whose parent is 10 too;
    // 14: CLONE_PARENT after 10 exited: 11 was reparented where strace cannot see (unknown).
    assert_eq!(parents, [(11, 10), (12, 10), (13, 10), (14, 0), (15, 11)]);
}

#[test]
fn real_logs_infer_the_containers_namespace_from_runcs_stages() {
    for (log, init) in [("runc-stderr.log", 15286), ("runc.log", 0), ("ctr.log", 0)] {
        let imp = parse(&fixture(log));
        let mut e = crate::lineage::Engine::new();
        imp.events.iter().for_each(|ev| e.apply(ev));
        let stories = crate::lineage::stories(&e);
        let init = if init == 0 {
            stories.first().expect("a container birth").init_pid
        } else {
            init
        };
        let p = e.process(init).unwrap();
        let ns = p
            .pidns
            .unwrap_or_else(|| panic!("{log}: no namespace for INIT {init}"));
        assert!(!ns.is_known(), "{log}: inferred, not a kernel inode");
        assert_eq!((ns.level, p.ns_pid()), (1, Some(1)), "{log}");
        // runc's own processes are in no namespace the log implies.
        let creator = p.creator.and_then(|c| e.get(c)).unwrap();
        assert_eq!(creator.pidns, None, "{log}: {}", creator.pid);
        // What INIT creates is inside, at a pid the log does not show.
        for q in e.processes().filter(|q| q.creator == Some(p.id)) {
            assert_eq!(
                q.pidns.map(|n| (n.inum, n.ns_pid)),
                Some((ns.inum, 0)),
                "{log}"
            );
        }
    }
}

#[test]
fn real_logs_give_every_birth_its_calling_thread() {
    let mut thread_callers = 0;
    for log in ["runc-stderr.log", "runc.log", "ctr.log", "podman.log"] {
        let imp = parse(&fixture(log));
        let mut e = crate::lineage::Engine::new();
        imp.events.iter().for_each(|ev| e.apply(ev));
        let births = e.processes().filter(|p| p.creator.is_some());
        for p in births {
            let b = &p.lineage[0];
            let tid = b
                .caller_tid
                .unwrap_or_else(|| panic!("{log}: {} has no caller_tid", p.pid));
            let caller = e.get(p.creator.unwrap()).unwrap();
            assert!(
                caller.pid == tid || caller.threads.iter().any(|t| t.tid == tid),
                "{log}: {tid} is not a thread of {}",
                caller.pid
            );
            thread_callers += usize::from(tid != caller.pid);
        }
    }
    // containerd, the shims and runc (Go) create from threads other than their leader.
    assert!(thread_callers > 0);
}

#[test]
fn a_clone_return_that_shows_up_later_beats_the_first_unseen_pid() {
    // [pid 10] clone() = 100, then unseen 55, then 100: 100 is the child, 55 has no creator.
    let imp = parse(
        "[pid    10] clone(child_stack=NULL, flags=SIGCHLD) = 100\n\
         [pid    55] execve(\"/bin/a\", [\"a\"], 0x7ffc /* 3 vars */) = 0\n\
         [pid   100] execve(\"/bin/b\", [\"b\"], 0x7ffc /* 3 vars */) = 0\n\
         [pid   100] +++ exited with 0 +++\n\
         [pid    55] +++ exited with 0 +++\n\
         [pid    10] +++ exited with 0 +++\n",
    );
    assert_eq!(forks(&imp), vec![(10, 100, 100, Some(0))]);
    // The return value never shows up: the first unseen pid after the clone is the child, its
    // fork placed before its first event, seq still in order.
    let imp = parse(
        "[pid    10] clone(child_stack=NULL, flags=SIGCHLD) = 100\n\
         [pid    55] execve(\"/bin/a\", [\"a\"], 0x7ffc /* 3 vars */) = 0\n\
         [pid    10] wait4(-1, NULL, 0, NULL) = 55\n\
         [pid    55] +++ exited with 0 +++\n\
         [pid    10] +++ exited with 0 +++\n",
    );
    assert_eq!(forks(&imp), vec![(10, 55, 55, Some(0))]);
    let first_55 = imp.events.iter().position(|e| e.tid == 55).unwrap();
    let fork_at = imp
        .events
        .iter()
        .position(|e| matches!(e.kind, K::Fork { .. }))
        .unwrap();
    assert!(fork_at < first_55);
    let seqs: Vec<u64> = imp.events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=imp.events.len() as u64).collect::<Vec<_>>());
}

#[test]
fn unprefixed_lines_of_an_initial_process_that_never_shows_its_pid_are_marked() {
    let log = "execve(\"/bin/sh\", [\"sh\", \"-c\", \"x\"], 0x7ffc /* 3 vars */) = 0\n\
               clone(child_stack=NULL, flags=SIGCHLD) = 4086\n\
               [pid  4086] execve(\"/bin/true\", [\"true\"], 0x7ffc /* 3 vars */) = 0\n\
               [pid  4086] +++ exited with 0 +++\n\
               exit_group(0)                           = ?\n\
               +++ exited with 0 +++\n";
    let imp = parse(log);
    assert!(imp.initial_pid_unknown);
    assert!(imp.events.iter().any(|e| e.tid == UNKNOWN_PID));
    // Once a prefixed line shows it, its earlier lines are rewritten to it.
    let log = log.replace("exit_group(0)      ", "[pid  4085] exit_group(0)");
    let imp = parse(&log);
    assert!(!imp.initial_pid_unknown);
    assert!(imp.events.iter().all(|e| e.tid != UNKNOWN_PID));
    assert_eq!(forks(&imp), vec![(4085, 4086, 4086, Some(0))]);
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
