//! Real strace logs (runc, containerd, podman) against their truth files.

use super::*;

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
