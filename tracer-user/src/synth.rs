//! The one test kit: synthetic events, processes, pods and strace logs for every test,
//! example and benchmark (the engine's, the viewer's, the readers', the scale recordings of
//! `tests::big`); not a stable API. [`Stream`] writes a story a step at a time; [`Storm`] is
//! an endless realistic stream; the functions below make one event each or whole shapes.

use crate::event::{CapturedStr, CloneFlags, Event, EventKind, SignalInfo, SignalResult, Syscall};

mod pod;
mod sample;
mod storm;
mod stream;

pub use pod::PodAnnotations;
pub use sample::{sample_event, sample_events};
pub use storm::{storm_snapshot, Storm};
pub use stream::{Stream, THREAD_FLAGS};

fn event(seq: u64, tgid: u32, comm: &str, kind: EventKind) -> Event {
    event_at(seq, seq * 1_000_000, tgid, comm, kind)
}

/// An event of `tgid`'s main thread at `seq`, stamped `ts_ns`: for a test whose output shows
/// the time (an export's timestamps, a line's stamp).
pub fn event_at(seq: u64, ts_ns: u64, tgid: u32, comm: &str, kind: EventKind) -> Event {
    Event::bare(seq, ts_ns, tgid, tgid, comm, kind)
}

/// A `clone` of process `child` with `flags` whose parent is `ppid` (the caller itself, or
/// its parent with CLONE_PARENT).
pub fn clone_kind(child: u32, ppid: u32, flags: u64) -> EventKind {
    EventKind::Fork {
        child_tid: child,
        child_tgid: child,
        child_ppid: ppid,
        syscall: Some(Syscall::Clone),
        flags: Some(CloneFlags(flags)),
        child_ns: None,
    }
}

/// `n` processes in a 4-ary tree under pid 1000: each forked by its parent then exec'd
/// (`worker-N`); every third one has exited. Seqs are 1.. without gaps.
pub fn fork_tree(n: u32) -> Vec<Event> {
    let mut evs = Vec::with_capacity(n as usize * 3);
    let mut seq = 0u64;
    let mut next = |evs: &mut Vec<Event>, tgid: u32, comm: &str, kind: EventKind| {
        seq += 1;
        evs.push(event(seq, tgid, comm, kind));
    };
    for i in 1..n {
        let pid = 1000 + i;
        let parent = 1000 + (i - 1) / 4;
        next(&mut evs, parent, "", clone_kind(pid, parent, 0));
        let name = format!("worker-{i}");
        next(
            &mut evs,
            pid,
            &name,
            EventKind::Exec {
                cred: None,
                old_tid: pid,
                filename: CapturedStr::new(format!("/usr/bin/{name}")),
            },
        );
    }
    for i in (3..n).step_by(3) {
        next(
            &mut evs,
            1000 + i,
            "",
            EventKind::TaskExit {
                exit_code: 0,
                group_dead: true,
            },
        );
    }
    evs
}

/// `n` processes in one chain under pid 1000: each forked by the one before it, then
/// exec'd (`link-N`); all alive at the end. The deepest tree a recording can hold.
pub fn chain(n: u32) -> Vec<Event> {
    let mut evs = Vec::with_capacity(n as usize * 2);
    for i in 1..n {
        let (pid, parent) = (1000 + i, 999 + i);
        let seq = evs.len() as u64 + 1;
        evs.push(event(seq, parent, "", clone_kind(pid, parent, 0)));
        let name = format!("link-{i}");
        let exec = EventKind::Exec {
            cred: None,
            old_tid: pid,
            filename: CapturedStr::new(format!("/usr/bin/{name}")),
        };
        evs.push(event(seq + 1, pid, &name, exec));
    }
    evs
}

/// One process (pid 1000) creating `n` threads; with `short_lived` each exits before the next
/// is created (a thread pool churning), else all stay. Scale input for `tracer tree`.
pub fn many_threads(n: u32, short_lived: bool) -> Vec<Event> {
    let thread_flags = tracer_common::clone_flags::CLONE_VM
        | tracer_common::clone_flags::CLONE_THREAD
        | tracer_common::clone_flags::CLONE_SIGHAND;
    let mut evs = Vec::with_capacity(n as usize * 2 + 1);
    let mut seq = 0u64;
    let mut next = |evs: &mut Vec<Event>, tgid: u32, tid: u32, kind: EventKind| {
        seq += 1;
        let mut ev = event(seq, tgid, "pool", kind);
        ev.tid = tid;
        evs.push(ev);
    };
    let fork = |child: u32, flags: u64| EventKind::Fork {
        child_tid: child,
        child_tgid: if flags == 0 { child } else { 1000 },
        child_ppid: 1,
        syscall: Some(Syscall::Clone),
        flags: Some(CloneFlags(flags)),
        child_ns: None,
    };
    next(&mut evs, 1, 1, fork(1000, 0));
    for i in 0..n {
        // Thread ids wrap below the kernel's default pid_max, as real ones do.
        let tid = 1001 + i % 4_000_000;
        next(&mut evs, 1000, 1000, fork(tid, thread_flags));
        if short_lived {
            let exit = EventKind::TaskExit {
                exit_code: 0,
                group_dead: false,
            };
            next(&mut evs, 1000, tid, exit);
        }
    }
    evs
}

/// `parent` forking process `pid` (seq 0: a [`Script`](crate::source::Script) numbers events).
pub fn fork(parent: u32, pid: u32) -> Event {
    event(0, parent, "", clone_kind(pid, parent, 0))
}

/// `pid` exec'ing `path` (its comm becomes the file name).
pub fn exec(pid: u32, path: &str) -> Event {
    let comm = path.rsplit('/').next().unwrap_or(path);
    let kind = EventKind::Exec {
        cred: None,
        old_tid: pid,
        filename: CapturedStr::new(path),
    };
    event(0, pid, comm, kind)
}

/// Process `pid` exiting with `code` (the raw wait status; its whole thread group).
pub fn exit(pid: u32, code: u32) -> Event {
    let kind = EventKind::TaskExit {
        exit_code: code,
        group_dead: true,
    };
    event(0, pid, "", kind)
}

/// What the kernel reports of `sender` signalling the whole process `target` (a kill).
pub fn kill_info(
    sender: u32,
    target: u32,
    sig: i32,
    code: i32,
    result: SignalResult,
) -> SignalInfo {
    SignalInfo {
        signal: sig,
        code,
        sender,
        sender_tid: sender,
        target,
        target_tid: target,
        group: true,
        result,
        inferred: false,
    }
}

/// `sender` (uid 0) generating signal `sig` for process `target` with `si_code` `code`: a kill
/// of the whole process, with what the kernel did with it.
pub fn kill(sender: u32, target: u32, sig: i32, code: i32, result: SignalResult) -> Event {
    let info = kill_info(sender, target, sig, code, result);
    let mut ev = event(0, sender, "", EventKind::Signal(info));
    ev.uid = 0;
    ev
}

/// Root of the host's namespaces running a file of root's (`/usr/bin/…`, 0755): the
/// credentials that may speak for a container.
pub fn root_cred() -> crate::event::ExecCred {
    crate::event::ExecCred {
        euid: 0,
        fsuid: 0,
        userns_level: 0,
        pidns_level: 0,
        mnt_ns: 4_026_531_841,
        host_mnt: true,
        exe: Some(crate::event::ExeFile {
            dev: 0xfe01,
            ino: 4242,
            uid: 0,
            mode: 0o100_755,
            nlink: 1,
        }),
        program: None,
    }
}

/// [`exec`] with the credentials the kernel reported and the real uid `uid`.
pub fn exec_as(pid: u32, path: &str, uid: u32, cred: crate::event::ExecCred) -> Event {
    let mut ev = exec(pid, path);
    ev.uid = uid;
    if let EventKind::Exec { cred: c, .. } = &mut ev.kind {
        *c = Some(cred);
    }
    ev
}

/// A host process as a /proc snapshot shows it: root's, on the host ([`root_cred`]), as a
/// node's daemons are.
pub fn process(pid: u32, ppid: u32, comm: &str) -> crate::event::SnapshotProcess {
    crate::event::SnapshotProcess {
        pid,
        ppid,
        comm: comm.into(),
        argv: vec![comm.into()],
        threads: vec![pid],
        uid: 0,
        cred: Some(root_cred()),
        ..Default::default()
    }
}

/// First pid of [`nested_namespaces`]: namespace `i`'s init is `NESTED_BASE + 2i`, the worker
/// it forks into its own namespace `NESTED_BASE + 2i + 1`.
pub const NESTED_BASE: u32 = 1000;

/// `n` nested pid namespaces (`unshare -Urpf` run again inside each one): the init of
/// namespace `i` (pid 1 there, `inum` `0xf000_0000 + i`, level `i + 1`) forks a worker into
/// its own namespace and then the init of namespace `i + 1`. Then the inits exit, the
/// outermost first, each followed by its worker's SIGKILL, as zap_pid_ns_processes() kills it.
/// Seqs are 1.. without gaps. The hostile input of the namespace zap.
pub fn nested_namespaces(n: u32) -> Vec<Event> {
    let mut evs = Vec::with_capacity(n as usize * 4 + 1);
    let mut seq = 0u64;
    let mut next = |evs: &mut Vec<Event>, tgid: u32, kind: EventKind| {
        seq += 1;
        evs.push(event(seq, tgid, "", kind));
    };
    let ns = |i: u32, ns_pid: u32| crate::event::PidNs {
        inum: 0xf000_0000 + u64::from(i),
        level: i + 1,
        ns_pid,
    };
    let clone = |child: u32, parent: u32, flags: u64, child_ns| EventKind::Fork {
        child_tid: child,
        child_tgid: child,
        child_ppid: parent,
        syscall: Some(Syscall::Clone),
        flags: Some(CloneFlags(flags)),
        child_ns: Some(child_ns),
    };
    let newpid = tracer_common::clone_flags::CLONE_NEWPID;
    let init = |i: u32| NESTED_BASE + 2 * i;
    next(
        &mut evs,
        NESTED_BASE - 1,
        clone(init(0), NESTED_BASE - 1, newpid, ns(0, 1)),
    );
    for i in 0..n {
        next(&mut evs, init(i), clone(init(i) + 1, init(i), 0, ns(i, 2)));
        if i + 1 < n {
            next(
                &mut evs,
                init(i),
                clone(init(i + 1), init(i), newpid, ns(i + 1, 1)),
            );
        }
    }
    let exit = |exit_code| EventKind::TaskExit {
        exit_code,
        group_dead: true,
    };
    for i in 0..n {
        // The outermost init exits; every inner one is killed by its parent namespace's zap.
        next(&mut evs, init(i), exit(if i == 0 { 0 } else { 9 }));
        next(&mut evs, init(i) + 1, exit(9));
    }
    evs
}

/// An `strace -f` log (stderr form, `[pid N]`) of a fork chain with `n` clones in flight at
/// once: pid `1000 + i` starts `clone(...) <unfinished ...>`, its child `1000 + i + 1` speaks
/// first (and clones in turn); then every call resumes, returning its child's pid, and the
/// processes exit, the newest first. Hostile input of the importer's bookkeeping of calls.
pub fn strace_unfinished_clones(n: u32) -> String {
    let mut s = String::with_capacity(n as usize * 160);
    let call = "clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD";
    for i in 0..n {
        s.push_str(&format!("[pid {}] {call} <unfinished ...>\n", 1000 + i));
    }
    for i in 0..n {
        let (caller, child) = (1000 + i, 1001 + i);
        s.push_str(&format!(
            "[pid {caller}] <... clone resumed>, child_tidptr=0x7f0) = {child}\n"
        ));
    }
    for i in (0..=n).rev() {
        s.push_str(&format!("[pid {}] +++ exited with 0 +++\n", 1000 + i));
    }
    s
}

/// An `strace -f` log of `n` tasks whose first line resumes a clone made before tracing
/// (`<... clone resumed>`, the call itself not in the log), each returning a pid that then
/// exits. Hostile input of the importer's bookkeeping of returned clones.
pub fn strace_resumed_clones(n: u32) -> String {
    let mut s = String::with_capacity(n as usize * 120);
    for i in 0..n {
        let (caller, child) = (1000 + i, 1000 + n + i);
        s.push_str(&format!(
            "[pid {caller}] <... clone resumed>, child_tidptr=0x7f0) = {child}\n"
        ));
    }
    for child in 1000 + n..1000 + 2 * n {
        s.push_str(&format!("[pid {child}] exit_group(0) = ?\n"));
        s.push_str(&format!("[pid {child}] +++ exited with 0 +++\n"));
    }
    s
}

/// An `strace -f` log (stderr style, attach notices) of a pid namespace torn down in the
/// order the kernel writes it: host process 100 clones init 101 with CLONE_NEWPID, the init
/// makes `members` processes (102, 103, ...; pids 2, 3, ... there), one more member (the
/// last pid) is killed by SIGKILL before the init exits (a kill the log does not show), then
/// the init's `exit_group`, the other members' `+++ killed by SIGKILL +++` (the zap), the
/// init's `+++ exited`, its SIGCHLD to 100.
pub fn strace_pidns_teardown(members: u32) -> String {
    let clone = "clone(child_stack=NULL, flags=SIGCHLD <unfinished ...>";
    let mut s =
        String::from("[pid   100] clone(child_stack=NULL, flags=CLONE_NEWPID|SIGCHLD) = 101\n");
    s.push_str("strace: Process 101 attached\n");
    for i in 0..=members {
        s.push_str(&format!("[pid   101] {clone}\n"));
        s.push_str(&format!("strace: Process {} attached\n", 102 + i));
        s.push_str(&format!(
            "[pid   101] <... clone resumed>, child_tidptr=0x1) = {}\n",
            2 + i
        ));
    }
    s.push_str(&format!(
        "[pid {:5}] +++ killed by SIGKILL +++\n",
        102 + members
    ));
    s.push_str("[pid   101] exit_group(0)                     = ?\n");
    for i in (0..members).rev() {
        s.push_str(&format!("[pid {:5}] +++ killed by SIGKILL +++\n", 102 + i));
    }
    s.push_str("[pid   101] +++ exited with 0 +++\n");
    s.push_str("--- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED, si_pid=101, si_uid=0, si_status=0, si_utime=0, si_stime=0} ---\n");
    s
}

/// One event of every [`EventKind`], each optional field set and each number unlike the
/// others (what a reader must carry through unchanged), seqs 1.. in order; events 1 to 3 are
/// pid 1000 forking 1001, which execs and exits. The input of the JSON-lines round trip.
pub fn every_kind() -> Vec<Event> {
    let kinds = process_kinds().into_iter().chain(report_kinds());
    kinds
        .enumerate()
        .map(|(i, kind)| {
            let tgid = if i == 0 { 1000 } else { 1001 };
            let mut ev = event(i as u64 + 1, tgid, "sh", kind);
            ev.tid = tgid + 2;
            ev.ppid = 999;
            ev.uid = u32::MAX - 1;
            ev.cgroup_id = 77;
            ev
        })
        .collect()
}

/// [`every_kind`]'s first kinds: a process's birth, exec and rename.
fn process_kinds() -> Vec<EventKind> {
    use crate::event::PidNs;
    use tracer_common::clone_flags as cf;
    let cred = crate::event::ExecCred {
        userns_level: 1,
        pidns_level: 2,
        host_mnt: false,
        ..root_cred()
    };
    vec![
        EventKind::CloneEnter {
            syscall: Syscall::Clone3,
            flags: CloneFlags(cf::CLONE_VM | cf::CLONE_VFORK | 0x1_0000_0000),
            exit_signal: 17,
        },
        EventKind::Fork {
            child_tid: 1001,
            child_tgid: 1001,
            child_ppid: 1000,
            syscall: Some(Syscall::Vfork),
            flags: Some(CloneFlags(cf::CLONE_NEWPID)),
            child_ns: Some(PidNs::inferred(7, 1, 1)),
        },
        EventKind::SyscallExit {
            syscall: Syscall::Clone3,
            ret: -11,
        },
        EventKind::ExecEnter {
            syscall: Syscall::Execveat,
            dirfd: -100,
            at_flags: 0x1000,
            filename: CapturedStr {
                value: "/bin/sh \u{1b}[31m\"quoted\"\n".into(),
                truncated: true,
            },
            argv: vec!["sh".into(), "-c".into(), "échappé \\ \t".into()],
            argv_truncated: true,
        },
        EventKind::Exec {
            old_tid: 1002,
            filename: CapturedStr::new("/bin/sh"),
            cred: Some(cred),
        },
        EventKind::PrctlEnter {
            option: 15,
            arg2: u64::MAX,
            name: Some(CapturedStr::new("worker")),
            shown: Some(Box::new(crate::event::PrctlShown {
                args: Some("PR_SET_NAME, \"worker\"".into()),
                read: Some(7),
            })),
        },
    ]
}

/// [`every_kind`]'s last kinds: what the kernel reports of a process (cgroup, signals, OOM,
/// a runtime's bundle) and its end.
fn report_kinds() -> Vec<EventKind> {
    use crate::event::OomInfo;
    vec![
        EventKind::CgroupAttach {
            pid: 1001,
            hierarchy: 3,
            cgroup_id: u64::MAX - 1,
            path: CapturedStr::new("/kubepods/pod-1"),
        },
        EventKind::Signal(SignalInfo {
            signal: 11,
            code: 2,
            sender: 1000,
            sender_tid: 1003,
            target: 1001,
            target_tid: 1004,
            group: true,
            result: SignalResult::AlreadyPending,
            inferred: true,
        }),
        EventKind::Signal(SignalInfo {
            signal: 40,
            code: -9,
            sender: 0,
            sender_tid: 0,
            target: 1001,
            target_tid: 1001,
            group: false,
            result: SignalResult::Other,
            inferred: false,
        }),
        EventKind::OomVictim(OomInfo {
            tid: 1001,
            total_vm_kb: 1,
            anon_rss_kb: 2,
            file_rss_kb: 3,
            shmem_rss_kb: 4,
            oom_score_adj: -998,
            cgroup: Some("/kubepods/pod-1".into()),
            limit: Some(32 << 20),
        }),
        EventKind::ContainerMeta {
            pid: 1000,
            container_id: "abc123".into(),
            annotations: [("io.kubernetes.cri.sandbox-name".into(), "web".into())].into(),
        },
        EventKind::Subreaper { on: true },
        EventKind::ExitEnter {
            syscall: Syscall::ExitGroup,
            code: -1,
        },
        EventKind::TaskExit {
            exit_code: 0x8b,
            group_dead: true,
        },
    ]
}

/// `pid` exec'ing `path` with `argv`: the exec's start (where argv is read) and its success.
pub fn exec_argv(pid: u32, path: &str, argv: &[&str]) -> [Event; 2] {
    let enter = EventKind::ExecEnter {
        syscall: Syscall::Execve,
        dirfd: -100,
        at_flags: 0,
        filename: CapturedStr::new(path),
        argv: argv.iter().map(|a| a.to_string()).collect(),
        argv_truncated: false,
    };
    [event(0, pid, "", enter), exec(pid, path)]
}

/// What a runtime `pid` read of container `cid`'s bundle: container `container` of pod
/// `namespace/pod`, as containerd's CRI plugin annotates it.
pub fn container_meta(pid: u32, cid: &str, namespace: &str, pod: &str, container: &str) -> Event {
    let annotations = PodAnnotations::new(namespace, pod).uid(pod);
    event(
        0,
        pid,
        "runc",
        annotations.container(container).meta(pid, cid),
    )
}
