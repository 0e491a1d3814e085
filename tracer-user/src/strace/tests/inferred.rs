//! What the importer infers from a signal line where strace printed neither the sender's
//! pid as the log names it nor the receiving thread's process, each marked inferred.

use super::*;

fn sigs(imp: &Import) -> Vec<(u32, SignalInfo)> {
    let of = |e: &Event| match e.kind {
        K::Signal(i) => Some((e.tgid, i)),
        _ => None,
    };
    imp.events.iter().filter_map(of).collect()
}

/// `si_pid` of a child made before tracing, in an inferred namespace: the process whose end
/// comes just before the SIGCHLD, when its status fits `si_code` and the log names no other
/// parent for it; else 0, counted.
#[test]
fn an_untied_si_pid_is_the_exit_just_before_the_sigchld() {
    let imp = parse(concat!(
        "100 clone(child_stack=NULL, flags=CLONE_NEWPID|SIGCHLD) = 101\n",
        "101 clone(child_stack=NULL, flags=SIGCHLD) = 2\n",
        "102 exit_group(0) = ?\n",
        "102 +++ exited with 0 +++\n",
        "101 --- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED, si_pid=2, si_uid=0, si_status=0} ---\n",
        "105 exit_group(3) = ?\n",
        "105 +++ exited with 3 +++\n",
        "101 --- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED, si_pid=7, si_uid=0, si_status=3} ---\n",
        "106 +++ killed by SIGKILL +++\n",
        "101 --- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_KILLED, si_pid=8, si_uid=0, si_status=SIGKILL} ---\n",
        "107 +++ killed by SIGKILL +++\n",
        "101 --- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED, si_pid=9, si_uid=0, si_status=0} ---\n",
        "108 +++ exited with 0 +++\n",
        "109 execve(\"/bin/true\", [\"true\"], 0x1 /* 1 var */) = 0\n",
        "101 --- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED, si_pid=10, si_uid=0, si_status=0} ---\n",
        "100 clone(child_stack=NULL, flags=SIGCHLD) = 110\n",
        "110 +++ exited with 0 +++\n",
        "101 --- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED, si_pid=11, si_uid=0, si_status=0} ---\n",
    ));
    assert_eq!(imp.unreadable, 0, "{:?}", imp.first_unreadable);
    let got: Vec<(u32, bool)> = sigs(&imp)
        .iter()
        .map(|(_, i)| (i.sender, i.inferred))
        .collect();
    // tied by its clone; the exit before; the kill before; a kill for CLD_EXITED: no; an
    // exec in between: no; 100's child: not 101's
    assert_eq!(
        got,
        [
            (102, false),
            (105, true),
            (106, true),
            (0, false),
            (0, false),
            (0, false)
        ]
    );
    assert_eq!(imp.untranslated_senders, 3);
}

/// A Go parent traced with `strace -f -o FILE -p`: no attach notices, so its threads appear
/// unannounced. The SIGCHLD one of them dequeues is its process's: the thread is taken as
/// the child's parent's (marked inferred) and the model agrees.
#[test]
fn a_sigchld_dequeued_by_an_unannounced_thread_is_its_parents() {
    let log = concat!(
        "200 clone(child_stack=NULL, flags=SIGCHLD) = 201\n",
        "203 futex(0x1, FUTEX_WAIT_PRIVATE, 0, NULL <unfinished ...>\n",
        "201 exit_group(0) = ?\n",
        "201 +++ exited with 0 +++\n",
        "203 <... futex resumed>) = ? ERESTARTSYS (To be restarted if SA_RESTART is set)\n",
        "203 --- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED, si_pid=201, si_uid=0, si_status=0} ---\n",
        "203 rt_sigreturn({mask=[]}) = 202\n",
        "203 futex(0x1, FUTEX_WAIT_PRIVATE, 0, NULL) = 0\n",
        "203 clone(child_stack=NULL, flags=SIGCHLD) = 204\n",
    );
    let imp = parse(log);
    assert_eq!(imp.unreadable, 0, "{:?}", imp.first_unreadable);
    let (tgid, info) = sigs(&imp)[0];
    assert_eq!((tgid, info.target, info.target_tid), (200, 200, 203));
    assert!(info.inferred && info.sender == 201, "{info:?}");
    // from then on the thread is the process's: its child is 200's
    let fork = imp.events.iter().find_map(|e| match e.kind {
        K::Fork {
            child_tid: 204,
            child_ppid,
            ..
        } => Some((e.tgid, e.tid, child_ppid)),
        _ => None,
    });
    assert_eq!(fork, Some((200, 203, 200)));
    let mut e = crate::lineage::Engine::new();
    imp.events.iter().for_each(|ev| e.apply(ev));
    assert_eq!(
        (e.sigchld_checks().agreed, e.sigchld_checks().disagreed),
        (1, 0)
    );
    // The child's parent gone, the receiver is no thread of it (a reaper it was handed to).
    let imp = parse(&log.replace(
        "203 <... futex",
        "200 exit_group(0) = ?\n200 +++ exited with 0 +++\n203 <... futex",
    ));
    let (tgid, info) = sigs(&imp)[0];
    assert_eq!((tgid, info.target, info.inferred), (203, 203, false));
}

/// `unshare --pid --fork sh -c 'sleep 100 & sleep 100 & exit 0'` under `strace -f -o`, as
/// strace 6.1 wrote it (tests/fixtures/strace/unshare-pidns.log): unshare(CLONE_NEWPID) makes
/// the next child pid 1 of a new namespace, and each member's pid there is what its clone
/// returned (2, 3), in the order the kernel numbers them (host pids and namespace pids count
/// up together), though the members' first lines come in the other order.
#[test]
fn unshare_newpid_and_the_clones_returns_give_each_members_namespace_pid() {
    let imp = parse(&fixture("unshare-pidns.log"));
    assert_eq!(imp.unreadable, 0, "{:?}", imp.first_unreadable);
    let ns_of = |child: u32| fork_ns(&imp, child);
    let init = ns_of(18718).flatten().expect("the init's namespace");
    assert_eq!((init.ns_pid, init.level), (1, 1));
    let pids: Vec<Option<(u64, u32)>> = [18719, 18720]
        .iter()
        .map(|&c| ns_of(c).flatten().map(|n| (n.inum, n.ns_pid)))
        .collect();
    assert_eq!(pids, [Some((init.inum, 2)), Some((init.inum, 3))]);
}

/// With attach notices the member's `Fork` comes before its clone returns: the return gives
/// it its namespace pid all the same.
#[test]
fn a_members_namespace_pid_comes_with_a_return_after_its_notice() {
    let imp = parse(concat!(
        "[pid   100] unshare(CLONE_NEWPID|CLONE_NEWNS) = 0\n",
        "[pid   100] clone(child_stack=NULL, flags=SIGCHLD) = 101\n",
        "strace: Process 101 attached\n",
        "[pid   101] clone(child_stack=NULL, flags=SIGCHLD <unfinished ...>\n",
        "strace: Process 102 attached\n",
        "[pid   101] <... clone resumed>, child_tidptr=0x1) = 2\n",
        "[pid   100] unshare(CLONE_NEWPID) = -1 EPERM (Operation not permitted)\n",
        "[pid   100] clone(child_stack=NULL, flags=SIGCHLD) = 103\n",
    ));
    assert_eq!(imp.unreadable, 0, "{:?}", imp.first_unreadable);
    let ns: Vec<(u32, Option<u32>)> = imp
        .events
        .iter()
        .filter_map(|e| match e.kind {
            K::Fork {
                child_tid,
                child_ns,
                ..
            } => Some((child_tid, child_ns.map(|n| n.ns_pid))),
            _ => None,
        })
        .collect();
    // a failed unshare changes nothing: 103 goes where 101 went, the caller's own namespace
    // being the log's (a child of the caller after unshare is in the new one: the kernel's
    // pid_ns_for_children stays)
    assert_eq!(ns, [(101, Some(1)), (102, Some(2)), (103, Some(0))]);
}

/// (how, pid namespace init, text) of each process's death after an import.
fn deaths(imp: &Import, pids: &[u32]) -> Vec<(crate::lineage::DeathHow, Option<u32>, String)> {
    let mut e = crate::lineage::Engine::new();
    e.seed_snapshot(imp.initial.as_slice());
    imp.events.iter().for_each(|ev| e.apply(ev));
    let death = |p: u32| e.process(p).and_then(|p| p.death()).expect("a death");
    pids.iter()
        .map(|&p| death(p))
        .map(|d| (d.how, d.ns_init, d.to_string()))
        .collect()
}

/// zap_pid_ns_processes() runs in the init's own exit and waits for the members: strace
/// prints the init's exit_group, the members' deaths, then the init's exit. Members killed
/// in between are the zap's; one killed before the init's exit_group is not.
#[test]
fn a_namespace_teardown_in_the_kernels_own_order_is_the_zap() {
    use crate::lineage::DeathHow::{PidNs, Signal};
    let imp = parse(&fixture("unshare-pidns.log"));
    let teardown = "killed by SIGKILL from its pid namespace's teardown (init 18718 died: zap_pid_ns_processes)";
    let want = (PidNs, Some(18718), teardown.to_string());
    assert_eq!(deaths(&imp, &[18719, 18720]), [want.clone(), want]);
    // the synth kit's crafted log: stderr style, one member killed before the init exits
    let imp = parse(&crate::synth::strace_pidns_teardown(3));
    assert_eq!(imp.unreadable, 0, "{:?}", imp.first_unreadable);
    let got = deaths(&imp, &[102, 103, 104, 105]);
    let zapped = |(how, init, _): &(_, _, _)| (*how, *init);
    let got: Vec<_> = got.iter().map(zapped).collect();
    assert_eq!(
        got,
        [
            (PidNs, Some(101)),
            (PidNs, Some(101)),
            (PidNs, Some(101)),
            (Signal, None)
        ]
    );
}

/// `strace -p` of a process that became a subreaper before the log began: its
/// `prctl(PR_GET_CHILD_SUBREAPER, [1]) = 0` is the flag seen set, so a grandchild orphaned
/// later goes to it (kernel/exit.c find_new_reaper(): the nearest subreaper ancestor), not to
/// PID 1, and the kernel's SIGCHLD agrees. `[0]` is the flag seen clear.
#[test]
fn a_subreaper_flag_read_back_is_the_flag_from_then_on() {
    let log = |flag: u32| {
        format!(
            concat!(
                "strace: Process 500 attached\n",
                "[pid   500] prctl(PR_GET_CHILD_SUBREAPER, [{}]) = 0\n",
                "[pid   500] clone(child_stack=NULL, flags=SIGCHLD) = 501\n",
                "strace: Process 501 attached\n",
                "[pid   501] clone(child_stack=NULL, flags=SIGCHLD) = 502\n",
                "strace: Process 502 attached\n",
                "[pid   501] exit_group(0) = ?\n",
                "[pid   501] +++ exited with 0 +++\n",
                "[pid   500] --- SIGCHLD {{si_signo=SIGCHLD, si_code=CLD_EXITED, si_pid=501, si_uid=0, si_status=0}} ---\n",
                "[pid   502] exit_group(0) = ?\n",
                "[pid   502] +++ exited with 0 +++\n",
                "[pid   500] --- SIGCHLD {{si_signo=SIGCHLD, si_code=CLD_EXITED, si_pid=502, si_uid=0, si_status=0}} ---\n",
            ),
            flag
        )
    };
    let run = |flag| {
        let imp = parse(&log(flag));
        assert_eq!(imp.unreadable, 0, "{:?}", imp.first_unreadable);
        let mut e = crate::lineage::Engine::new();
        e.seed_snapshot(&[
            crate::synth::process(1, 0, "systemd"),
            crate::synth::process(500, 1, "shim"),
        ]);
        imp.events.iter().for_each(|ev| e.apply(ev));
        let c = e.sigchld_checks();
        (e.process(502).map(|p| p.ppid), c.agreed, c.disagreed)
    };
    assert_eq!(run(1), (Some(500), 2, 0));
    assert_eq!(run(0), (Some(1), 1, 1));
}
