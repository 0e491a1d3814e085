//! Root tests: load the real probes, trace a child that makes known syscalls, assert exactly
//! what the kernel reported. Run by `cargo xtask test` as root (`--ignored`).
#![cfg(feature = "capture")]

use tests::{busybox_bundle, capture_command, temp_dir, which, Captured};
use tracer::event::{clone_flags as cf, CapturedStr, CloneFlags};
use tracer::synth::PodAnnotations;
use tracer::{EventKind, Syscall};

const ACTOR: &str = env!("CARGO_BIN_EXE_actor");
const RING: u32 = 8 << 20;

/// (syscall, flags, child_tid, child_tgid, child_ppid) of a Fork.
type ForkRow = (Option<Syscall>, Option<CloneFlags>, u32, u32, u32);

/// Every Fork made by `tgid`.
fn forks_by(c: &Captured, tgid: u32) -> Vec<ForkRow> {
    c.events
        .iter()
        .filter(|e| e.tgid == tgid)
        .filter_map(|e| {
            let EventKind::Fork {
                syscall,
                flags,
                child_tid,
                child_tgid,
                child_ppid,
                ..
            } = &e.kind
            else {
                return None;
            };
            Some((*syscall, *flags, *child_tid, *child_tgid, *child_ppid))
        })
        .collect()
}

/// Removes runc container `id` (whatever state it is in) and the test's scratch directory.
fn remove_container(id: &str, dir: Option<&std::path::Path>) {
    let _ = std::process::Command::new("runc")
        .args(["delete", "--force", id])
        .status();
    if let Some(d) = dir {
        let _ = std::fs::remove_dir_all(d);
    }
}

/// (wait status, group_dead) of the last TaskExit of `tid`.
fn exit_of(c: &Captured, tid: u32) -> Option<(u32, bool)> {
    c.events.iter().rev().find_map(|e| {
        let EventKind::TaskExit {
            exit_code,
            group_dead,
        } = e.kind
        else {
            return None;
        };
        (e.tid == tid).then_some((exit_code, group_dead))
    })
}

fn assert_no_gaps(c: &Captured) {
    assert_eq!(c.drops, 0, "events were dropped");
    assert_eq!(
        c.seq_issued,
        c.events.len() as u64,
        "sequence numbers issued vs received"
    );
    let mut seqs: Vec<u64> = c.events.iter().map(|e| e.seq).collect();
    seqs.sort_unstable();
    assert_eq!(seqs, (1..=c.events.len() as u64).collect::<Vec<_>>());
}

/// Every way the actor creates a task (glibc fork, fork, vfork, CLONE_PARENT, clone3, a
/// thread), then its prctls.
const CREATE_AND_PRCTL: [&str; 9] = [
    ACTOR,
    "fork",
    "sysfork",
    "vfork",
    "clone-parent",
    "clone3",
    "thread",
    "name",
    "subreaper",
];

#[test]
#[ignore = "root"]
fn lifecycle_syscalls_are_reported_exactly() {
    let steps = [&CREATE_AND_PRCTL[..], &["exec-fail", "exec:/bin/true"]].concat();
    let c = capture_command(&steps, RING, true, true).expect("capture");
    assert_no_gaps(&c);
    let actor = c.pid;
    let me = std::process::id();
    assert_eq!(c.status.and_then(|s| s.code()), Some(0));

    let forks = forks_by(&c, actor);
    assert_eq!(forks.len(), 6, "forks: {forks:#?}");
    let glibc_fork = cf::CLONE_CHILD_CLEARTID | cf::CLONE_CHILD_SETTID;
    // glibc fork(): the clone syscall.
    assert_eq!(forks[0].0, Some(Syscall::Clone));
    assert_eq!(forks[0].1, Some(CloneFlags(glibc_fork)));
    assert_eq!((forks[0].3, forks[0].4), (forks[0].2, actor));
    assert_eq!(
        (forks[1].0, forks[1].1),
        (Some(Syscall::Fork), Some(CloneFlags(0)))
    );
    assert_eq!(forks[1].4, actor);
    assert_eq!(forks[2].0, Some(Syscall::Vfork));
    assert_eq!(forks[2].1, Some(CloneFlags(cf::CLONE_VM | cf::CLONE_VFORK)));
    // CLONE_PARENT: created by the actor, but its parent is the actor's parent (this test).
    assert_eq!(
        (forks[3].0, forks[3].1),
        (Some(Syscall::Clone), Some(CloneFlags(cf::CLONE_PARENT)))
    );
    assert_eq!(forks[3].4, me, "CLONE_PARENT child's real parent");
    assert_eq!(
        (forks[4].0, forks[4].1),
        (Some(Syscall::Clone3), Some(CloneFlags(0)))
    );
    assert_eq!(forks[4].4, actor);
    // A thread: same tgid, parent is the creator's parent.
    let (sc, flags, tid, tgid, ppid) = forks[5];
    assert_eq!(sc, Some(Syscall::Clone3));
    assert!(
        flags.is_some_and(|f| f.contains(cf::CLONE_THREAD | cf::CLONE_VM)),
        "{flags:?}"
    );
    assert_eq!((tgid, ppid), (actor, me));
    assert_ne!(tid, actor);

    // Exit codes of the children, and the thread's exit is not a process death.
    for (i, code) in [(0usize, 3u32), (1, 8), (2, 4), (3, 5), (4, 6)] {
        assert_eq!(
            exit_of(&c, forks[i].2),
            Some((code << 8, true)),
            "child {i}"
        );
    }
    assert_eq!(exit_of(&c, tid), Some((0, false)));

    // prctl: name and subreaper, with their results; later events carry the new comm.
    let prctls: Vec<_> = c
        .events
        .iter()
        .filter_map(|e| {
            let EventKind::PrctlEnter {
                option, arg2, name, ..
            } = &e.kind
            else {
                return None;
            };
            Some((*option, *arg2, name.clone()))
        })
        .collect();
    assert_eq!(prctls.len(), 2, "{prctls:?}");
    assert_eq!(
        (prctls[0].0, prctls[0].2.clone()),
        (15, Some(CapturedStr::new("actor-renamed")))
    );
    assert_eq!(
        (prctls[1].0, prctls[1].1, prctls[1].2.clone()),
        (36, 1, None)
    );
    let prctl_rets = c
        .events
        .iter()
        .filter(|e| {
            matches!(
                e.kind,
                EventKind::SyscallExit {
                    syscall: Syscall::Prctl,
                    ret: 0
                }
            )
        })
        .count();
    assert_eq!(prctl_rets, 2);

    // exec failure then success.
    let execs: Vec<_> = c
        .events
        .iter()
        .filter(|e| e.tgid == actor)
        .filter_map(|e| {
            if let EventKind::ExecEnter { filename, .. } = &e.kind {
                return Some(format!("enter {}", filename.value));
            }
            if let EventKind::SyscallExit {
                syscall: Syscall::Execve,
                ret,
            } = &e.kind
            {
                return Some(format!("ret {ret}"));
            }
            let EventKind::Exec {
                filename, old_tid, ..
            } = &e.kind
            else {
                return None;
            };
            Some(format!("exec {} {}", filename.value, *old_tid == actor))
        })
        .collect();
    let start = format!("enter {ACTOR}");
    let started = format!("exec {ACTOR} true");
    assert_eq!(
        execs,
        [
            start.as_str(),
            started.as_str(),
            "ret 0",
            "enter /nonexistent/actor",
            "ret -2",
            "enter /bin/true",
            "exec /bin/true true",
            "ret 0"
        ]
    );
    let renamed_before_exec = c
        .events
        .iter()
        .any(|e| e.tgid == actor && e.comm.to_string() == "actor-renamed");
    assert!(renamed_before_exec);

    // Only the actor and what it created were traced.
    let mut known: Vec<u32> = forks.iter().map(|f| f.3).collect();
    known.push(actor);
    for e in &c.events {
        assert!(
            known.contains(&e.tgid),
            "event from untraced process: {e:?}"
        );
    }
    assert_eq!(exit_of(&c, actor), Some((0, true)));
}

/// The default probe set: no syscall tracepoints, the same lineage from task/sched ones.
#[test]
#[ignore = "root"]
fn lifecycle_without_syscall_probes_is_reported_exactly() {
    let steps = [
        &CREATE_AND_PRCTL[..],
        &["fork", "exec-fail", "exec:/bin/true"],
    ]
    .concat();
    let c = capture_command(&steps, RING, true, false).expect("capture");
    assert_no_gaps(&c);
    let actor = c.pid;
    let me = std::process::id();
    assert_eq!(c.status.and_then(|s| s.code()), Some(0));
    // Nothing from a syscall probe.
    let syscall_events: Vec<_> = c
        .events
        .iter()
        .filter(|e| {
            matches!(
                e.kind,
                EventKind::CloneEnter { .. }
                    | EventKind::SyscallExit { .. }
                    | EventKind::ExitEnter { .. }
            )
        })
        .collect();
    assert!(syscall_events.is_empty(), "{syscall_events:#?}");

    // Clone flags from task_newtask; the syscall is not known.
    let forks = forks_by(&c, actor);
    let glibc_fork = cf::CLONE_CHILD_CLEARTID | cf::CLONE_CHILD_SETTID;
    let flags: Vec<_> = forks.iter().map(|f| (f.0, f.1)).collect();
    let known = |f: u64| (None, Some(CloneFlags(f)));
    assert_eq!(flags.len(), 7, "forks: {forks:#?}");
    assert_eq!(
        flags[..5],
        [
            known(glibc_fork),
            known(0),
            known(cf::CLONE_VM | cf::CLONE_VFORK),
            known(cf::CLONE_PARENT),
            known(0)
        ]
    );
    assert!(flags[5]
        .1
        .is_some_and(|f| f.contains(cf::CLONE_THREAD | cf::CLONE_VM)));
    assert_eq!(flags[6], known(glibc_fork));
    let ppids: Vec<u32> = forks.iter().map(|f| f.4).collect();
    assert_eq!(ppids, [actor, actor, actor, me, actor, me, actor]);
    for (i, code) in [(0usize, 3u32), (1, 8), (2, 4), (3, 5), (4, 6), (6, 3)] {
        assert_eq!(
            exit_of(&c, forks[i].2),
            Some((code << 8, true)),
            "child {i}"
        );
    }
    assert_eq!(exit_of(&c, forks[5].2), Some((0, false)));

    // PR_SET_NAME from task_rename (exec's renames are not reported); the subreaper flag,
    // read from the kernel (no prctl call is seen), when the actor next creates a process,
    // just before that fork.
    let prctls: Vec<_> = c
        .events
        .iter()
        .filter_map(|e| {
            let (option, arg2, name) = e.kind.as_prctl()?;
            let report = matches!(e.kind, EventKind::Subreaper { .. });
            Some((e.tid, report, option, arg2, name.map(|n| n.value.clone())))
        })
        .collect();
    assert_eq!(
        prctls,
        [
            (actor, false, 15, 0, Some("actor-renamed".to_string())),
            (actor, true, 36, 1, None)
        ]
    );
    let pos = |pred: &dyn Fn(&EventKind) -> bool| c.events.iter().position(|e| pred(&e.kind));
    let subreaper = pos(&|k| matches!(k, EventKind::Subreaper { on: true })).unwrap();
    let last_fork =
        pos(&|k| matches!(k, EventKind::Fork { child_tid, .. } if *child_tid == forks[6].2))
            .unwrap();
    assert_eq!(subreaper + 1, last_fork);

    // Only the successful exec, with argv from the new image, then the exec itself.
    let execs: Vec<_> = c
        .events
        .iter()
        .filter(|e| e.tgid == actor)
        .filter_map(|e| {
            if let EventKind::ExecEnter { filename, argv, .. } = &e.kind {
                let leader = e.tid == actor;
                return Some(format!("enter {} {argv:?} {leader}", filename.value));
            }
            let EventKind::Exec {
                filename, old_tid, ..
            } = &e.kind
            else {
                return None;
            };
            Some(format!("exec {} {}", filename.value, *old_tid == actor))
        })
        .collect();
    let args: Vec<String> = steps.iter().map(|s| s.to_string()).collect();
    assert_eq!(
        execs,
        [
            format!("enter {ACTOR} {args:?} true"),
            format!("exec {ACTOR} true"),
            r#"enter /bin/true ["/bin/true"] true"#.to_string(),
            "exec /bin/true true".to_string(),
        ]
    );
    assert_eq!(exit_of(&c, actor), Some((0, true)));
}

#[test]
#[ignore = "root"]
fn exit_codes_and_signals() {
    let c = capture_command(&[ACTOR, "exit:7"], RING, true, true).expect("capture");
    assert_no_gaps(&c);
    let enter = c.events.iter().find_map(|e| {
        let EventKind::ExitEnter { syscall, code } = e.kind else {
            return None;
        };
        Some((syscall, code))
    });
    assert_eq!(enter, Some((Syscall::ExitGroup, 7)));
    assert_eq!(exit_of(&c, c.pid), Some((7 << 8, true)));

    let c = capture_command(&[ACTOR, "sigkill"], RING, true, false).expect("capture");
    assert_eq!(exit_of(&c, c.pid), Some((libc::SIGKILL as u32, true)));
    assert!(!c
        .events
        .iter()
        .any(|e| matches!(e.kind, EventKind::ExitEnter { .. })));
}

#[test]
#[ignore = "root"]
fn ring_overflow_drops_are_counted_exactly() {
    // One page of ring, nothing read while 400 forks happen: most events cannot fit.
    let c = capture_command(&[ACTOR, "storm:400"], 4096, false, false).expect("capture");
    assert!(c.drops > 0, "expected drops with a one-page ring");
    assert_eq!(
        c.drops,
        c.seq_issued - c.events.len() as u64,
        "drops == issued - delivered"
    );
    // Gaps inside the delivered stream are drops too (trailing drops leave no gap).
    let mut stats = tracer::stats::StreamStats::default();
    c.events.iter().for_each(|e| stats.observe(e));
    assert!(stats.gaps() <= c.drops);
    assert_eq!(stats.max_seq - stats.gaps(), c.events.len() as u64);
}

#[test]
#[ignore = "root"]
fn runc_run_shows_init_stages_and_clone_parent() {
    runc_run(false);
}

#[test]
#[ignore = "root"]
fn runc_run_with_syscall_probes() {
    runc_run(true);
}

fn runc_run(syscalls: bool) {
    if which("runc").is_none() {
        panic!("runc is not installed (cargo xtask setup installs it)");
    }
    let dir = temp_dir("runc").expect("temp dir");
    let bundle = busybox_bundle(&dir, &["/bin/true"]).expect("bundle");
    let id = format!("tracer-test-{}", std::process::id());
    let bundle_s = bundle.to_string_lossy().to_string();
    let c = capture_command(
        &["runc", "run", "--bundle", &bundle_s, &id],
        RING,
        true,
        syscalls,
    );
    remove_container(&id, Some(&dir));
    let c = c.expect("capture");
    assert_eq!(c.drops, 0);
    assert_eq!(c.status.and_then(|s| s.code()), Some(0), "runc run failed");
    let runc = c.pid;
    // The engine predicted every parent the kernel then reported.
    let engine = tests::seeded_with_command(&c, "runc");
    tests::assert_no_model_disagreement(&engine, "runc run");

    let names: Vec<(u32, String)> = c
        .events
        .iter()
        .filter_map(|e| {
            let EventKind::PrctlEnter {
                option: 15,
                name: Some(n),
                ..
            } = &e.kind
            else {
                return None;
            };
            Some((e.tgid, n.value.clone()))
        })
        .collect();
    let stage = |s: &str| names.iter().find(|(_, n)| n == s).map(|(p, _)| *p);
    let parent = stage("runc:[0:PARENT]").expect("PARENT rename");
    let child = stage("runc:[1:CHILD]").expect("CHILD rename");
    let init = stage("runc:[2:INIT]").expect("INIT rename");

    // PARENT clones CHILD and CHILD clones INIT, both with CLONE_PARENT: real parent = runc run.
    let cp: Vec<_> = c
        .events
        .iter()
        .filter_map(|e| {
            let EventKind::Fork {
                flags: Some(f),
                child_tgid,
                child_ppid,
                ..
            } = &e.kind
            else {
                return None;
            };
            let parent = f.contains(cf::CLONE_PARENT) && !f.contains(cf::CLONE_THREAD);
            parent.then_some((e.tgid, *child_tgid, *child_ppid))
        })
        .collect();
    assert_eq!(cp.len(), 2, "CLONE_PARENT clones: {cp:?}");
    assert_eq!(cp[0].0, parent);
    assert_eq!(cp[0].1, child);
    assert_eq!(cp[1].0, child);
    assert_eq!(cp[1].1, init);
    assert!(
        cp.iter().all(|&(_, _, ppid)| ppid == runc),
        "{cp:?} vs runc {runc}"
    );

    // runc run makes itself a subreaper: its prctl call, or without syscall probes the
    // probes' report of the flag.
    assert!(c
        .events
        .iter()
        .any(|e| e.tgid == runc && e.kind.as_prctl() == Some((36, 1, None))));

    // The container's process execs the workload.
    let exec = c.events.iter().find(|e| {
        e.tgid == init
            && matches!(&e.kind, EventKind::Exec { filename, .. } if filename.value == "/bin/true")
    });
    assert!(exec.is_some(), "no exec of /bin/true by INIT {init}");
}

/// Ctrl-C stops `tracer trace --all` while it is busy: the signal may land while a batch is
/// being written, and must not be lost there; the status is strace's, 130.
#[test]
#[ignore = "root"]
fn sigint_stops_a_busy_system_wide_trace() {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    let tracer = tests::release_tracer().expect("release tracer binary");
    use std::os::unix::process::CommandExt;
    // Its own process group, so the loop and the actor it runs go together.
    let mut load = Command::new("sh")
        .args(["-c", &format!("while :; do {ACTOR} storm:200; done")])
        .process_group(0)
        .spawn()
        .expect("load");
    let mut t = Command::new(&tracer)
        .args(["trace", "--all", "-o", "/dev/null"])
        .stderr(Stdio::piped())
        .spawn()
        .expect("tracer");
    std::thread::sleep(Duration::from_secs(2));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(t.id() as i32, libc::SIGINT) };
    // A generous ceiling: the storm may slow the exit on a loaded machine; what matters is
    // that SIGINT is not lost (a lost one never ends the trace).
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(st) = t.try_wait().expect("wait") {
            break Some(st);
        }
        if Instant::now() > deadline {
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // SAFETY: signalling the process group we created.
    unsafe { libc::kill(-(load.id() as i32), libc::SIGKILL) };
    let _ = load.wait();
    if status.is_none() {
        let _ = t.kill();
    }
    let out = t.wait_with_output().expect("output");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(status.is_some(), "tracer still running 60 s after SIGINT");
    // strace -p's status at Ctrl-C: 128 + SIGINT.
    assert_eq!(status.and_then(|s| s.code()), Some(130), "{stderr}");
    assert!(stderr.contains(" dropped, "), "no summary: {stderr}");
}

/// A process that becomes a subreaper after creating its children, and creates nothing more,
/// is still reported as one (at its child's death, before the grandchild is adopted), and the
/// engine puts the orphan under it, as the kernel does.
#[test]
#[ignore = "root"]
fn late_subreaper_is_reported_before_the_adoption() {
    let c = capture_command(&[ACTOR, "late-subreaper"], RING, true, false).expect("capture");
    assert_no_gaps(&c);
    let actor = c.pid;
    let child = forks_by(&c, actor)[0].2;
    let grandchild = forks_by(&c, child)[0].2;
    let pos = |pred: &dyn Fn(&tracer::Event) -> bool| c.events.iter().position(pred).unwrap();
    let reported = pos(&|e| e.tgid == actor && matches!(e.kind, EventKind::Subreaper { on: true }));
    let child_death = pos(&|e| e.tid == child && matches!(e.kind, EventKind::TaskExit { .. }));
    assert!(
        reported < child_death,
        "subreaper reported at {reported}, child died at {child_death}"
    );
    assert_eq!(c.events[reported].comm.to_string(), "actor");
    assert_eq!(exit_of(&c, child), Some((9 << 8, true)));
    assert_eq!(exit_of(&c, grandchild), Some((10 << 8, true)));
    let engine = tests::seeded_with_command(&c, "actor");
    // The engine predicted the adoption itself: had it guessed another reaper, the
    // grandchild's later events (which carry the kernel's parent) would have corrected it
    // with a warning.
    tests::assert_no_model_disagreement(&engine, "late subreaper");
    let warnings: Vec<String> = engine.warnings().iter().map(|w| w.to_string()).collect();
    assert!(warnings.is_empty(), "{warnings:#?}");
    let g = engine.process(grandchild).expect("grandchild known");
    assert_eq!(g.ppid, actor, "the grandchild's parent after the adoption");
    let adopted = g.last_adoption().expect("the grandchild was adopted");
    assert_eq!(
        adopted.reason,
        Some(tracer::lineage::Reason::ParentExited {
            parent: child,
            reaper: tracer::lineage::Reaper::Subreaper(actor)
        }),
        "{:?}",
        g.lineage
    );
}

/// Without syscall probes argv is read from the new image in one read of its argument area:
/// entries of any length come through whole up to the 4 KiB budget, and only a total past it is
/// cut (the last entry as far as it fits) and flagged, as docs/events.md says. With syscall
/// probes the same budget holds.
#[test]
#[ignore = "root"]
fn argv_is_whole_up_to_its_budget() {
    let long = "l".repeat(300);
    let exact = "e".repeat(127);
    let fits = [
        "/bin/true",
        exact.as_str(),
        "mid",
        long.as_str(),
        "",
        "tail",
    ];
    let over = "o".repeat(5000);
    let cut = ["/bin/true", "x", over.as_str()];
    for syscalls in [false, true] {
        assert_eq!(
            exec_argv(&fits, syscalls),
            Some((fits.iter().map(|s| s.to_string()).collect(), false)),
            "syscalls: {syscalls}"
        );
        // "/bin/true\0x\0" leaves 4096 - 12 bytes of the long entry.
        let want = vec![
            "/bin/true".to_string(),
            "x".into(),
            over[..4096 - 12].into(),
        ];
        assert_eq!(
            exec_argv(&cut, syscalls),
            Some((want, true)),
            "syscalls: {syscalls}"
        );
    }
}

/// The argv of the first exec_enter of a command run under capture.
fn exec_argv(argv: &[&str], syscalls: bool) -> Option<(Vec<String>, bool)> {
    let c = capture_command(argv, RING, true, syscalls).expect("capture");
    c.events.iter().find_map(|e| {
        let EventKind::ExecEnter {
            argv,
            argv_truncated,
            ..
        } = &e.kind
        else {
            return None;
        };
        Some((argv.clone(), *argv_truncated))
    })
}

/// One /proc observation of a process inside a container: host pid, host ppid, NSpid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Seen {
    pid: u32,
    ppid: u32,
    ns_pid: u32,
}

/// `pid` as /proc shows it, when it lives in a pid namespace one level below the host's.
fn seen_in_container(pid: u32) -> Option<Seen> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |k: &str| -> Vec<u32> {
        status
            .lines()
            .find_map(|l| l.strip_prefix(k))
            .map(|v| {
                v.split_whitespace()
                    .filter_map(|x| x.parse().ok())
                    .collect()
            })
            .unwrap_or_default()
    };
    match (field("NSpid:").as_slice(), field("PPid:").as_slice()) {
        ([_, ns_pid], [ppid]) => Some(Seen {
            pid,
            ppid: *ppid,
            ns_pid: *ns_pid,
        }),
        _ => None,
    }
}

/// The first process in a container whose cmdline is `argv`, and its parent, as /proc shows
/// them at one moment.
fn in_container_with_parent(argv: &[&str]) -> Option<(Seen, Seen)> {
    let want: Vec<u8> = argv
        .iter()
        .flat_map(|a| [a.as_bytes(), b"\0"].concat())
        .collect();
    tests::labs::system::pids().into_iter().find_map(|pid| {
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        if cmd != want {
            return None;
        }
        let me = seen_in_container(pid)?;
        Some((me, seen_in_container(me.ppid)?))
    })
}

#[test]
#[ignore = "root"]
fn an_orphan_in_a_container_is_reaped_by_the_containers_init() {
    if which("runc").is_none() {
        panic!("runc is not installed (cargo xtask setup installs it)");
    }
    let dir = temp_dir("orphan").expect("temp dir");
    let script = "(sleep 2 &); sleep 1";
    let bundle = busybox_bundle(&dir, &["sh", "-c", script]).expect("bundle");
    let id = format!("tracer-orphan-{}", std::process::id());
    let bundle_s = bundle.to_string_lossy().to_string();
    // /proc while the container runs: the orphan `sleep 2` and the container's init.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            // Its parent once the subshell is gone: the container's init (`sh`, or the
            // `sleep 1` it exec'd into).
            let mut found = None;
            while found.is_none() && !stop.load(std::sync::atomic::Ordering::Relaxed) {
                found = in_container_with_parent(&["sleep", "2"]).filter(|(_, p)| p.ns_pid == 1);
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            found
        })
    };
    let c = capture_command(
        &["runc", "run", "--bundle", &bundle_s, &id],
        RING,
        true,
        false,
    );
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let found = watcher.join().expect("watcher");
    remove_container(&id, Some(&dir));
    let c = c.expect("capture");
    assert_eq!(c.drops, 0);
    let (orphan, init) =
        found.expect("/proc never showed `sleep 2` adopted by the container's init");
    // The kernel's own word, from outside the tool: the orphan's parent is the container init.
    assert_eq!(orphan.ppid, init.pid, "{orphan:?} {init:?}");
    assert_eq!(init.ns_pid, 1);

    let mut e = tracer::Engine::new();
    c.events.iter().for_each(|ev| e.apply(ev));
    for w in e.warnings() {
        assert!(
            !matches!(
                w.kind,
                tracer::lineage::WarningKind::Disagreement { .. }
                    | tracer::lineage::WarningKind::CorrectedAfterLoss { .. }
            ),
            "{w}"
        );
    }
    let p = e.process(orphan.pid).expect("orphan in the engine");
    let adoptions: Vec<_> = p.lineage.iter().skip(1).collect();
    assert_eq!(adoptions.len(), 1, "{:?}", p.lineage);
    assert_eq!(adoptions[0].parent, init.pid, "{:?}", p.lineage);
    assert!(matches!(
        adoptions[0].reason,
        Some(tracer::lineage::Reason::ParentExited {
            reaper: tracer::lineage::Reaper::NsInit(i),
            ..
        }) if i == init.pid
    ));
    assert_eq!(p.ns_pid(), Some(orphan.ns_pid));
    assert!(orphan.ns_pid > 1);
    let ip = e.process(init.pid).expect("init in the engine");
    assert_eq!(ip.ns_pid(), Some(1));
    // Every other process of the container is at pid > 1 there.
    let ns = ip.pidns.expect("init's namespace");
    let others: Vec<_> = e
        .processes()
        .filter(|q| {
            q.pidns
                == Some(tracer::PidNs {
                    ns_pid: q.ns_pid().unwrap_or(0),
                    ..ns
                })
        })
        .filter(|q| q.pid != init.pid)
        .collect();
    assert!(others.len() >= 2, "subshell and orphan at least");
    assert!(others.iter().all(|q| q.ns_pid().is_some_and(|n| n > 1)));
}

#[test]
#[ignore = "root"]
fn pod_names_and_cgroups_come_from_the_recording_alone() {
    if which("runc").is_none() {
        panic!("runc is not installed (cargo xtask setup installs it)");
    }
    let tracer = tests::release_tracer().expect("release tracer");
    let dir = temp_dir("k8s").expect("temp dir");
    let bundle = busybox_bundle(&dir, &["sh", "-c", "sleep 0.2"]).expect("bundle");
    let leaf = format!("tracer-test-web-7d9f-nginx-{}", std::process::id());
    let config = bundle.join("config.json");
    let mut cfg: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    let annotations = PodAnnotations::new("shop", "web-7d9f")
        .sandbox_id("sb-1")
        .uid("u-42");
    cfg["annotations"] = annotations.container("nginx").json();
    cfg["linux"]["cgroupsPath"] = format!("/tracer-test/{leaf}").into();
    std::fs::write(&config, serde_json::to_vec(&cfg).unwrap()).unwrap();
    let id = format!("tracer-k8s-{}", std::process::id());
    let trace = dir.join("k8s.trace");
    let rec = std::process::Command::new(&tracer)
        .arg("record")
        .arg("-o")
        .arg(&trace)
        .args(["--", "runc", "run", "--bundle"])
        .arg(&bundle)
        .arg(&id)
        .output()
        .expect("tracer record");
    remove_container(&id, None);
    assert!(rec.status.success(), "{rec:?}");
    let tree_json = |extra: &[&str]| {
        let out = std::process::Command::new(&tracer)
            .arg("tree")
            .arg(&trace)
            .args(["--format", "json"])
            .args(extra)
            .output()
            .expect("tracer tree");
        assert!(out.status.success(), "{out:?}");
        serde_json::from_slice::<serde_json::Value>(&out.stdout).expect("json")
    };
    let out = std::process::Command::new(&tracer)
        .arg("tree")
        .arg(&trace)
        .args(["--format", "json"])
        .output()
        .expect("tracer tree");
    // --pod: that pod's processes only (runc run and its stages, the init).
    let pod = tree_json(&["--pod", "shop/web-7d9f"]);
    let pod = pod["processes"].as_array().expect("processes");
    assert!(pod.len() >= 3, "{pod:?}");
    assert!(pod.iter().all(|p| p["pod"]["name"] == "web-7d9f"));
    // A pod the recording does not hold is one line on stderr and exit 1 (not an empty tree).
    let other = std::process::Command::new(&tracer)
        .arg("tree")
        .arg(&trace)
        .args(["--pod", "other"])
        .output()
        .expect("tracer tree");
    let err = String::from_utf8_lossy(&other.stderr);
    assert_eq!(other.status.code(), Some(1), "{other:?}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(other.stdout.is_empty(), "{other:?}");
    let _ = std::fs::remove_dir_all(&dir);
    // runc leaves the cgroup it made: remove it in every v1 hierarchy and the v2 tree.
    for h in std::fs::read_dir("/sys/fs/cgroup")
        .into_iter()
        .flatten()
        .flatten()
    {
        let _ = std::fs::remove_dir(h.path().join("tracer-test").join(&leaf));
        let _ = std::fs::remove_dir(h.path().join("tracer-test"));
    }
    assert!(out.status.success(), "{out:?}");
    let tree: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let procs = tree["processes"].as_array().expect("processes");
    let init = procs
        .iter()
        .find(|p| p["ns_pid"] == 1)
        .expect("the container init (pid 1 in its namespace)");
    assert_eq!(
        init["pod"],
        serde_json::json!({"namespace": "shop", "name": "web-7d9f", "uid": "u-42"})
    );
    assert_eq!(init["container_name"], "nginx");
    let init_cg = init["cgroup"].as_str().expect("init cgroup");
    assert!(init_cg.contains(&leaf), "{init_cg}");
    let runtime = procs
        .iter()
        .find(|p| p["role"] == "oci-runtime" && p["role_detail"] == "run")
        .expect("runc run");
    let rt_cg = runtime["cgroup"].as_str().expect("runtime cgroup");
    assert!(!rt_cg.is_empty() && !rt_cg.contains(&leaf), "{rt_cg}");
}

// ---- signals and OOM kills -------------------------------------------------------------------

use tracer::event::{OomInfo, SignalInfo, SignalResult};
use tracer::names::si_code::{SI_KERNEL, SI_USER};

/// (the event's own tgid, the signal) of every Signal event of signal `sig`.
fn signals_of(c: &Captured, sig: i32) -> Vec<(u32, SignalInfo)> {
    c.events
        .iter()
        .filter_map(|e| {
            let EventKind::Signal(i) = e.kind else {
                return None;
            };
            (i.signal == sig).then_some((e.tgid, i))
        })
        .collect()
}

/// A shell kills its background job: one SIGTERM, from the shell (kill(2): SI_USER, to the
/// whole process), to the job, which dies of it. Truth: the pids the shell printed.
#[test]
#[ignore = "root"]
fn a_kill_is_reported_with_its_sender_and_target() {
    let dir = temp_dir("signal").expect("temp dir");
    let out = dir.join("pids");
    let script = format!(
        "exec >'{}'; echo $$; sleep 100 & echo $!; kill -TERM $!; wait",
        out.display()
    );
    let c = capture_command(&["sh", "-c", &script], RING, true, false).expect("capture");
    let printed = std::fs::read_to_string(&out).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    let pids: Vec<u32> = printed.lines().filter_map(|l| l.parse().ok()).collect();
    let [shell, job] = pids[..] else {
        panic!("the shell printed {printed:?}");
    };
    assert_eq!(shell, c.pid);
    let terms = signals_of(&c, libc::SIGTERM);
    assert_eq!(terms.len(), 1, "{terms:#?}");
    let (tgid, term) = terms[0];
    assert_eq!((tgid, term.sender, term.sender_tid), (shell, shell, shell));
    assert_eq!((term.target, term.target_tid), (job, job));
    assert_eq!(term.code, SI_USER);
    assert!(term.group, "kill(2) signals the whole process");
    assert_eq!(term.result, SignalResult::Delivered);
    assert_eq!(exit_of(&c, job), Some((libc::SIGTERM as u32, true)));
}

/// A memory cgroup made for one test, removed when dropped: cgroup v1's memory hierarchy
/// when the host has one (hybrid hosts), else a v2 child of the unified root.
struct MemoryCgroup {
    dir: std::path::PathBuf,
    /// Its path in the hierarchy, as /proc/PID/cgroup shows it.
    path: String,
    v2: bool,
}

impl MemoryCgroup {
    /// A cgroup `name` at the top of the memory hierarchy with a `limit` and no swap.
    fn create(name: &str, limit: u64) -> Result<MemoryCgroup, String> {
        use tracer::capture::oom::memory_mounts;
        let mountinfo =
            std::fs::read_to_string("/proc/self/mountinfo").map_err(|e| e.to_string())?;
        let top = |v2| {
            memory_mounts(&mountinfo, v2)
                .into_iter()
                .find(|m| m.root == "/")
                .map(|m| m.point)
        };
        let (mount, v2) = match (top(false), top(true)) {
            (Some(m), _) => (m, false),
            (None, Some(m)) => (m, true),
            (None, None) => return Err("no memory cgroup hierarchy is mounted".into()),
        };
        if v2 {
            std::fs::write(mount.join("cgroup.subtree_control"), "+memory")
                .map_err(|e| format!("enabling the v2 memory controller: {e}"))?;
        }
        let dir = mount.join(name);
        std::fs::create_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let cg = MemoryCgroup {
            dir,
            path: format!("/{name}"),
            v2,
        };
        cg.limit(limit)?;
        Ok(cg)
    }

    /// The limit, and no swap to escape to (where the files exist).
    fn limit(&self, limit: u64) -> Result<(), String> {
        let write = |file: &str, value: &str| {
            std::fs::write(self.dir.join(file), value).map_err(|e| format!("{file}: {e}"))
        };
        let has = |file: &str| self.dir.join(file).exists();
        if self.v2 {
            write("memory.max", &limit.to_string())?;
            if has("memory.swap.max") {
                write("memory.swap.max", "0")?;
            }
            return Ok(());
        }
        write("memory.limit_in_bytes", &limit.to_string())?;
        if has("memory.memsw.limit_in_bytes") {
            write("memory.memsw.limit_in_bytes", &limit.to_string())?;
        }
        write("memory.swappiness", "0")
    }

    /// The kernel's count of OOM kills in this cgroup (`oom_kill` of memory.oom_control on
    /// v1, of memory.events on v2).
    fn oom_kills(&self) -> Option<u64> {
        let file = if self.v2 {
            "memory.events"
        } else {
            "memory.oom_control"
        };
        let text = std::fs::read_to_string(self.dir.join(file)).ok()?;
        text.lines()
            .find_map(|l| l.strip_prefix("oom_kill "))
            .and_then(|v| v.trim().parse().ok())
    }
}

impl Drop for MemoryCgroup {
    fn drop(&mut self) {
        // The killed process may take a moment to leave it.
        for _ in 0..50 {
            if std::fs::remove_dir(&self.dir).is_ok() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        eprintln!("could not remove the test cgroup {}", self.dir.display());
    }
}

/// A process that outgrows its memory cgroup's 32 MiB: one OomVictim naming it, its cgroup and
/// the limit, the OOM killer's SIGKILL (SI_KERNEL), and its death by SIGKILL. Truth from
/// outside: the cgroup's own oom_kill counter went up by one.
#[test]
#[ignore = "root"]
fn an_oom_kill_names_the_victim_its_cgroup_and_limit() {
    use std::os::unix::process::ExitStatusExt;
    const LIMIT: u64 = 32 << 20;
    let name = format!("tracer-oom-{}", std::process::id());
    let cg = MemoryCgroup::create(&name, LIMIT);
    let why = cg.as_ref().err().cloned().unwrap_or_default();
    if !tests::prereq::require("memory-cgroup", cg.is_ok(), &why) {
        return;
    }
    let cg = cg.expect("checked");
    let before = cg.oom_kills().expect("the cgroup's oom_kill counter");
    let enter = format!("cgroup:{}", cg.dir.display());
    let c = capture_command(&[ACTOR, &enter, "eat-memory"], RING, true, false);
    let after = cg.oom_kills();
    let path = cg.path.clone();
    drop(cg);
    let c = c.expect("capture");
    assert_eq!(after, Some(before + 1), "the kernel's oom_kill count");
    assert_eq!(c.status.and_then(|s| s.signal()), Some(libc::SIGKILL));
    let victims: Vec<&OomInfo> = c
        .events
        .iter()
        .filter_map(|e| {
            let EventKind::OomVictim(o) = &e.kind else {
                return None;
            };
            Some(o)
        })
        .collect();
    assert_eq!(victims.len(), 1, "{victims:#?}");
    let v = victims[0];
    assert_eq!(v.tid, c.pid);
    assert_eq!(v.cgroup.as_deref(), Some(path.as_str()));
    assert_eq!(v.limit, Some(LIMIT));
    // Most of the limit is the memory it touched.
    assert!((16 << 10..=32 << 10).contains(&v.anon_rss_kb), "{v:?}");
    let kills = signals_of(&c, libc::SIGKILL);
    assert_eq!(kills.len(), 1, "{kills:#?}");
    assert_eq!((kills[0].1.target, kills[0].1.code), (c.pid, SI_KERNEL));
    assert_eq!(exit_of(&c, c.pid), Some((libc::SIGKILL as u32, true)));
}

/// Every process descending from `pid` now, as /proc shows it.
fn descendants(pid: u32) -> Vec<tests::labs::system::ProcInfo> {
    let all = tests::labs::system::find_procs(|_| true);
    let mut found: Vec<tests::labs::system::ProcInfo> = Vec::new();
    let mut parents = vec![pid];
    while let Some(p) = parents.pop() {
        for q in all.iter().filter(|q| q.ppid == p) {
            parents.push(q.pid);
            found.push(q.clone());
        }
    }
    found
}

/// The namespace's init (`sh` under our `unshare`) and its two `sleep`s, once both have
/// exec'd: (init, sleeps).
fn ns_init_and_sleeps(me: u32) -> Option<(u32, Vec<u32>)> {
    let procs = descendants(me);
    let unshare = procs.iter().find(|p| p.comm == "unshare" && p.ppid == me)?;
    let init = procs
        .iter()
        .find(|p| p.comm == "sh" && p.ppid == unshare.pid)?;
    let sleeps: Vec<u32> = procs
        .iter()
        .filter(|p| p.comm == "sleep" && p.ppid == init.pid)
        .map(|p| p.pid)
        .collect();
    (sleeps.len() == 2).then_some((init.pid, sleeps))
}

/// When a pid namespace's init dies, the kernel kills the rest of the namespace
/// (zap_pid_ns_processes, from the dying init's exit): one SIGKILL each, SI_KERNEL, sent by
/// the init. Truth: the pids /proc showed before the init was killed.
#[test]
#[ignore = "root"]
fn a_dying_namespace_init_kills_the_rest_with_si_kernel() {
    use std::time::{Duration, Instant};
    if !tests::prereq::require_program("unshare", "util-linux") {
        return;
    }
    let me = std::process::id();
    let killer = std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Some((init, sleeps)) = ns_init_and_sleeps(me) {
                tests::labs::system::signal(init, libc::SIGKILL);
                return Some((init, sleeps));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        // Never leave the sleeps behind.
        for p in descendants(me) {
            tests::labs::system::signal(p.pid, libc::SIGKILL);
        }
        None
    });
    let argv = [
        "unshare",
        "--pid",
        "--fork",
        "sh",
        "-c",
        "sleep 100 & sleep 100 & wait",
    ];
    let c = capture_command(&argv, RING, true, false);
    let found = killer.join().expect("killer thread");
    let c = c.expect("capture");
    let (init, sleeps) = found.expect("/proc never showed the namespace's sh and two sleeps");
    // Our own kill of the init: sent by this process, which the capture does not trace.
    let kills = signals_of(&c, libc::SIGKILL);
    let ours: Vec<_> = kills.iter().filter(|(_, k)| k.target == init).collect();
    assert_eq!(ours.len(), 1, "{kills:#?}");
    assert_eq!((ours[0].1.sender, ours[0].1.code), (me, SI_USER));
    for sleep in sleeps {
        let zap: Vec<_> = kills.iter().filter(|(_, k)| k.target == sleep).collect();
        assert_eq!(zap.len(), 1, "sleep {sleep}: {kills:#?}");
        let (tgid, k) = *zap[0];
        assert_eq!((tgid, k.sender, k.code), (init, init, SI_KERNEL), "{k:?}");
        assert_eq!(k.target_tid, sleep);
        assert!(k.group);
        assert_eq!(exit_of(&c, sleep), Some((libc::SIGKILL as u32, true)));
    }
}

// ---- the start snapshot's scope ---------------------------------------------------------------

/// This process and its ancestors, as /proc shows them now: (pid, ppid), up to PID 1.
fn own_ancestry() -> Vec<(u32, u32)> {
    let mut chain = Vec::new();
    let mut pid = std::process::id();
    while pid != 0 && chain.len() < 4096 {
        let info = tests::labs::ProcInfo::read(pid).expect("an ancestor in /proc");
        chain.push((pid, info.ppid));
        pid = info.ppid;
    }
    chain
}

/// `tracer record [--snapshot all] -o FILE -- true`: the header's `snapshot` value, the
/// snapshot, and the tracer's pid.
fn record_true(extra: &[&str]) -> (Option<String>, Vec<tracer::lineage::SnapshotProcess>, u32) {
    let tracer = tests::release_tracer().expect("release tracer");
    let dir = temp_dir("snapshot").expect("temp dir");
    let trace = dir.join("true.trace");
    let child = std::process::Command::new(&tracer)
        .arg("record")
        .args(extra)
        .arg("-o")
        .arg(&trace)
        .args(["--", "true"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("tracer record");
    let tracer_pid = child.id();
    let out = child.wait_with_output().expect("tracer record");
    assert!(out.status.success(), "{out:?}");
    let input = tracer::input::Input::open(&trace).expect("open the recording");
    let header = input.header().expect("a trace file");
    let scope = header
        .extra
        .iter()
        .find(|(key, _)| key == "snapshot")
        .map(|(_, v)| v.clone());
    let snap = input.snapshot();
    let _ = std::fs::remove_dir_all(&dir);
    (scope, snap, tracer_pid)
}

/// A `sleep` with `argv0`, killed on drop.
struct Sleeper(std::process::Child);

impl Sleeper {
    fn start(argv0: &str) -> Sleeper {
        use std::os::unix::process::CommandExt;
        let c = std::process::Command::new("sleep")
            .arg0(argv0)
            .arg("120")
            .spawn()
            .expect("sleep");
        Sleeper(c)
    }

    /// Its pid, once /proc shows it with its argv0 (it exec'd).
    fn pid_seen(&self, argv0: &str) -> u32 {
        let pid = self.0.id();
        for _ in 0..200 {
            let info = tests::labs::ProcInfo::read(pid).expect("the sleeper in /proc");
            if info.argv.first().map(String::as_str) == Some(argv0) {
                return pid;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        panic!("/proc never showed {pid} as {argv0}");
    }
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A recording's start snapshot holds the command's ancestry and the container machinery, not
/// the rest of the host (another process's command line: here a sibling of the tracer, a
/// child of one of its ancestors); `--snapshot all` holds the host. Truth from /proc: the
/// outsider and a stand-in runtime daemon (argv[0] `containerd`) run throughout, and the
/// test's own ancestry is walked.
#[test]
#[ignore = "root"]
fn a_recordings_snapshot_holds_the_lineage_and_the_runtime_only() {
    let tag = format!("tracer-snapshot-outsider-{}", std::process::id());
    let outsider = Sleeper::start(&tag);
    let daemon = Sleeper::start("containerd");
    let (outsider_pid, daemon_pid) = (outsider.pid_seen(&tag), daemon.pid_seen("containerd"));
    let ancestry = own_ancestry();
    assert_eq!(ancestry.last().map(|a| a.0), Some(1), "{ancestry:?}");

    let (scope, snap, tracer_pid) = record_true(&[]);
    let has = |pid: u32| snap.iter().find(|p| p.pid == pid);
    assert!(
        has(outsider_pid).is_none(),
        "the outsider is in the snapshot"
    );
    assert!(
        !snap.iter().any(|p| p.argv.iter().any(|a| a.contains(&tag))),
        "the outsider's argv is in the snapshot"
    );
    assert_eq!(scope.as_deref(), Some("followed"));
    for (pid, ppid) in &ancestry {
        let p = has(*pid).unwrap_or_else(|| panic!("ancestor {pid} missing"));
        assert_eq!(p.ppid, *ppid, "ancestor {pid}'s parent");
    }
    let tracer = has(tracer_pid).expect("the tracer (the command's parent)");
    assert_eq!(tracer.ppid, std::process::id());
    assert_eq!(has(daemon_pid).map(|p| p.ppid), Some(std::process::id()));
    // Everything else: the tracer's own child (the command, not yet exec'd) or the container
    // machinery and its ancestors.
    let lineage: Vec<u32> = ancestry.iter().map(|a| a.0).chain([tracer_pid]).collect();
    let ppid: std::collections::HashMap<u32, u32> = snap.iter().map(|p| (p.pid, p.ppid)).collect();
    let mut runtime = std::collections::HashSet::new();
    for m in snap
        .iter()
        .filter(|p| tracer::capture::procfs::is_machinery(p))
    {
        let mut pid = m.pid;
        while pid != 0 && runtime.insert(pid) {
            pid = ppid.get(&pid).copied().unwrap_or(0);
        }
    }
    for p in &snap {
        assert!(
            lineage.contains(&p.pid) || p.ppid == tracer_pid || runtime.contains(&p.pid),
            "{} {} {:?} is neither the command's lineage nor the runtime",
            p.pid,
            p.comm,
            p.argv
        );
    }

    let (scope, snap, _) = record_true(&["--snapshot", "all"]);
    assert_eq!(scope.as_deref(), Some("all"));
    assert!(
        snap.iter()
            .any(|p| p.pid == outsider_pid && p.argv.first() == Some(&tag)),
        "--snapshot all: the outsider is missing"
    );
    drop((outsider, daemon));
}
