//! Unit tests of the engine: what they share (the engine after a [`Stream`], the stories
//! they start from); the tests themselves, one file per topic, are under `tests/`.

use super::*;
use crate::event::{
    clone_flags as cf, prctl_opt, CapturedStr, CloneFlags, Comm, Event, EventKind, ExitStatus,
    PidNs, Syscall,
};
use crate::synth::{PodAnnotations, Stream, THREAD_FLAGS};

/// The engine after a stream, pid 1 (systemd) seeded from a snapshot.
trait Run {
    fn engine(&self) -> Engine;
}

impl Run for Stream {
    fn engine(&self) -> Engine {
        let mut e = Engine::new();
        e.seed_snapshot(&[snap(1, 0, "systemd")]);
        for ev in &self.events {
            e.apply(ev);
        }
        e
    }
}

fn snap(pid: u32, ppid: u32, comm: &str) -> SnapshotProcess {
    SnapshotProcess {
        pid,
        ppid,
        comm: comm.into(),
        threads: vec![pid],
        ..Default::default()
    }
}

fn ppid(e: &Engine, pid: u32) -> u32 {
    e.process(pid).map(|p| p.ppid).unwrap_or(u32::MAX)
}

fn child_pids(e: &Engine, pid: u32) -> Vec<u32> {
    e.children(pid).iter().map(|p| p.pid).collect()
}

fn live_tids(e: &Engine, pid: u32) -> Vec<u32> {
    e.process(pid)
        .map(|p| p.live_tids().collect())
        .unwrap_or_default()
}

fn reasons(e: &Engine, pid: u32) -> Vec<String> {
    e.process(pid)
        .map(|p| p.lineage.iter().filter_map(|l| l.reason_text()).collect())
        .unwrap_or_default()
}

/// Deterministic pseudo-random events over a tiny pid space: reuse, cycles, garbage.
fn arbitrary_stream(n: u64) -> Vec<Event> {
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    };
    let mut out = Vec::new();
    for seq in 0..n {
        let tgid = next(12) as u32;
        let tid = if next(3) == 0 { tgid + 20 } else { tgid };
        let kind = match next(9) {
            0 | 1 => EventKind::Fork {
                child_tid: next(40) as u32,
                child_tgid: next(40) as u32,
                child_ppid: next(13) as u32,
                syscall: None,
                flags: if next(2) == 0 {
                    None
                } else {
                    Some(CloneFlags(next(1 << 17) << 8))
                },
                child_ns: None,
            },
            2 => EventKind::Exec {
                cred: None,
                old_tid: next(40) as u32,
                filename: CapturedStr::new("/usr/bin/runc"),
            },
            3 => EventKind::ExecEnter {
                syscall: Syscall::Execve,
                dirfd: 0,
                at_flags: 0,
                filename: CapturedStr::new("x"),
                argv: vec!["runc".into(), "init".into()],
                argv_truncated: false,
            },
            4 => EventKind::TaskExit {
                exit_code: next(70000) as u32,
                group_dead: next(2) == 0,
            },
            5 => EventKind::PrctlEnter {
                option: prctl_opt::PR_SET_CHILD_SUBREAPER,
                arg2: next(2),
                name: None,
                shown: None,
            },
            6 => EventKind::PrctlEnter {
                option: prctl_opt::PR_SET_NAME,
                arg2: 0,
                name: Some(CapturedStr::new("runc:[2:INIT]")),
                shown: None,
            },
            7 => EventKind::ExitEnter {
                syscall: Syscall::ExitGroup,
                code: 1,
            },
            _ => EventKind::SyscallExit {
                syscall: Syscall::Execve,
                ret: -2,
            },
        };
        let ev = Event {
            seq: if next(50) == 0 { seq / 2 } else { seq },
            ts_ns: 0,
            tgid,
            tid,
            ppid: next(13) as u32,
            uid: 0,
            cgroup_id: 0,
            comm: Comm::new("x"),
            kind,
        };
        out.push(ev);
    }
    out
}

fn cls(comm: &str, exe: Option<&str>, argv: &[&str]) -> Option<(Role, Option<String>)> {
    let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
    classify(comm.as_bytes(), exe, &argv).map(|c| (c.role, c.container_id))
}

const SANDBOX: &str = "5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a";
const APP: &str = "a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0";

const CID: &str = "0123456789abcdef0123456789abcdef";

struct Seqs {
    shim_fork: u64,
    start_exit: u64,
    subreaper: u64,
    runc_exec: u64,
    init_exec: u64,
    parent_rename: u64,
    child_clone: u64,
    child_rename: u64,
    init_clone: u64,
    init_rename: u64,
    child_exit: u64,
    parent_exit: u64,
    runc_exit: u64,
    workload: u64,
}

/// containerd (900) starts the shim: `shim start` (1000) forks the shim (1001) and exits.
/// Returns the seqs of the shim's fork and of the start process's exit.
fn containerd_starts_a_shim(b: &mut Stream) -> (u64, u64) {
    let vf = cf::CLONE_VM | cf::CLONE_VFORK;
    b.fork(1, 900);
    b.exec(900, "/usr/bin/containerd", &["/usr/bin/containerd"]);
    b.thread(900, 900, 901);
    b.fork_full(900, 901, 1000, 1000, 0, Some(Syscall::Clone), Some(vf));
    b.exec(
        1000,
        "/usr/bin/containerd-shim-runc-v2",
        &[
            "/usr/bin/containerd-shim-runc-v2",
            "-namespace",
            "default",
            "-address",
            "/run/containerd/containerd.sock",
            "-id",
            CID,
            "start",
        ],
    );
    let shim_fork = b.fork_full(1000, 1000, 1001, 1001, 0, Some(Syscall::Clone), Some(vf));
    b.exec(
        1001,
        "/usr/bin/containerd-shim-runc-v2",
        &[
            "/usr/bin/containerd-shim-runc-v2",
            "-namespace",
            "default",
            "-id",
            CID,
            "-address",
            "/run/containerd/containerd.sock",
        ],
    );
    let start_exit = b.exit(1000, 0);
    (shim_fork, start_exit)
}

/// containerd → shim start process (exits) → shim adopted by 1 → subreaper → runc create →
/// runc init → PARENT/CHILD/INIT (CLONE_PARENT) → intermediates exit → INIT adopted by the shim →
/// exec sleep.
fn containerd_story() -> (Stream, Seqs) {
    let mut b = Stream::default();
    let vf = cf::CLONE_VM | cf::CLONE_VFORK;
    let (shim_fork, start_exit) = containerd_starts_a_shim(&mut b);
    let subreaper = b.subreaper(1001, 1001, true);
    b.thread(1001, 1001, 1002);
    b.fork_full(1001, 1002, 1010, 1010, 0, Some(Syscall::Clone), Some(vf));
    let bundle = format!("/run/containerd/io.containerd.runtime.v2.task/default/{CID}");
    let runc_exec = b.exec(
        1010,
        "/usr/bin/runc",
        &[
            "runc",
            "--root",
            "/run/containerd/runc/default",
            "--log",
            "/x/log.json",
            "--log-format",
            "json",
            "create",
            "--bundle",
            &bundle,
            "--pid-file",
            "/x/init.pid",
            CID,
        ],
    );
    b.fork_full(1010, 1010, 1011, 1011, 0, Some(Syscall::Clone), Some(vf));
    let init_exec = b.exec_comm(1011, 1011, "/proc/self/exe", &["runc", "init"], "exe");
    let parent_rename = b.rename(1011, 1011, "runc:[0:PARENT]");
    let child_clone = b.clone(1011, 1012, cf::CLONE_PARENT);
    let child_rename = b.rename(1012, 1012, "runc:[1:CHILD]");
    let init_clone = b.clone(1012, 1013, cf::CLONE_PARENT);
    let init_rename = b.rename(1013, 1013, "runc:[2:INIT]");
    let child_exit = b.exit(1012, 0);
    let parent_exit = b.exit(1011, 0);
    let runc_exit = b.exit(1010, 0);
    // runc start, then the workload.
    b.fork_full(1001, 1002, 1020, 1020, 0, Some(Syscall::Clone), Some(vf));
    b.exec(1020, "/usr/bin/runc", &["runc", "start", CID]);
    b.exit(1020, 0);
    let workload = b.exec_comm(1013, 1013, "/bin/sleep", &["sleep", "1000"], "sleep");
    let s = Seqs {
        shim_fork,
        start_exit,
        subreaper,
        runc_exec,
        init_exec,
        parent_rename,
        child_clone,
        child_rename,
        init_clone,
        init_rename,
        child_exit,
        parent_exit,
        runc_exit,
        workload,
    };
    (b, s)
}

/// `runc create` of `id` by `shim` (from its thread), runc init → PARENT → CHILD → INIT, the
/// intermediates and runc exit, INIT exec's `workload`. Pids from `base`. Returns INIT's pid.
fn runc_create(b: &mut Stream, shim: u32, base: u32, id: &str, workload: &str) -> u32 {
    let vf = cf::CLONE_VM | cf::CLONE_VFORK;
    let (rt, parent, child, init) = (base, base + 1, base + 2, base + 3);
    b.fork_full(shim, shim + 1, rt, rt, 0, Some(Syscall::Clone), Some(vf));
    let bundle = format!("/run/containerd/io.containerd.runtime.v2.task/k8s.io/{id}");
    let log = format!("{bundle}/log.json");
    let argv = [
        "runc",
        "--root",
        "/run/containerd/runc/k8s.io",
        "--log",
        &log,
        "--log-format",
        "json",
        "create",
        "--bundle",
        &bundle,
        "--pid-file",
        "/x/init.pid",
        id,
    ];
    b.exec(rt, "/usr/bin/runc", &argv);
    b.fork_full(rt, rt, parent, parent, 0, Some(Syscall::Clone), Some(vf));
    b.runc_init_stages(parent, child, init);
    b.exit(rt, 0);
    b.exec_comm(init, init, workload, &[workload], roles::basename(workload));
    init
}

/// containerd runs CNI (bridge → host-local, loopback) from Debian's /usr/lib/cni, starts the
/// pod's shim for the sandbox (pause), then a second `shim start` for the app container that
/// finds the running shim and exits, and the app is created under the same shim.
fn pod_story() -> Stream {
    let mut b = Stream::default();
    let vf = cf::CLONE_VM | cf::CLONE_VFORK;
    b.fork(1, 900);
    b.exec(900, "/usr/bin/containerd", &["/usr/bin/containerd"]);
    b.thread(900, 900, 901);
    for (pid, plugin) in [(950, "bridge"), (960, "loopback")] {
        b.fork_full(900, 901, pid, pid, 0, Some(Syscall::Clone), Some(vf));
        let path = format!("/usr/lib/cni/{plugin}");
        b.exec_comm(pid, pid, &path, &[&path], plugin);
        if plugin == "bridge" {
            b.fork(950, 951);
            b.exec_comm(
                951,
                951,
                "/usr/lib/cni/host-local",
                &["/usr/lib/cni/host-local"],
                "host-local",
            );
            b.exit(951, 0);
        }
        b.exit(pid, 0);
    }
    let shim_argv = |id: &str, start: bool| {
        let mut v = vec![
            "/usr/bin/containerd-shim-runc-v2".to_string(),
            "-namespace".into(),
            "k8s.io".into(),
            "-id".into(),
            id.to_string(),
        ];
        if start {
            v.push("start".into());
        }
        v
    };
    let exec_shim = |b: &mut Stream, pid: u32, argv: Vec<String>| {
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        b.exec(pid, "/usr/bin/containerd-shim-runc-v2", &argv)
    };
    b.fork_full(900, 901, 1000, 1000, 0, Some(Syscall::Clone), Some(vf));
    exec_shim(&mut b, 1000, shim_argv(SANDBOX, true));
    b.fork_full(1000, 1000, 1001, 1001, 0, Some(Syscall::Clone), Some(vf));
    exec_shim(&mut b, 1001, shim_argv(SANDBOX, false));
    b.exit(1000, 0);
    b.subreaper(1001, 1001, true);
    b.thread(1001, 1001, 1002);
    runc_create(&mut b, 1001, 1010, SANDBOX, "/pause");
    // The app container: `shim start -id APP` finds the pod's shim and exits at once.
    b.fork_full(900, 901, 1100, 1100, 0, Some(Syscall::Clone), Some(vf));
    exec_shim(&mut b, 1100, shim_argv(APP, true));
    b.exit(1100, 0);
    runc_create(&mut b, 1001, 1110, APP, "/bin/sleep");
    b
}

const HOST_NS: u64 = 4026531836;
const CTR_NS: u64 = 4026532500;
const NESTED_NS: u64 = 4026532600;

fn ns(inum: u64, level: u32, ns_pid: u32) -> Option<PidNs> {
    Some(PidNs {
        inum,
        level,
        ns_pid,
    })
}

/// 1 → 10 shim (subreaper) → 20 `runc run` → [CLONE_PARENT] 30 container init (pid 1 in
/// CTR_NS) → 40 sh (pid 2) → 50 sleep (pid 3).
fn container() -> Stream {
    let mut b = Stream::default();
    b.born(1, 10, 1, 0, ns(HOST_NS, 0, 10));
    b.subreaper(10, 10, true);
    b.born(10, 20, 10, 0, ns(HOST_NS, 0, 20));
    b.born(20, 30, 10, cf::CLONE_PARENT, ns(CTR_NS, 1, 1));
    b.born(30, 40, 30, 0, ns(CTR_NS, 1, 2));
    b.born(40, 50, 40, 0, ns(CTR_NS, 1, 3));
    b
}

/// An event of pid 9000, never seen created: the engine's `unknown_pid` warning.
fn push_ghost(b: &mut Stream) {
    b.push(
        9000,
        9000,
        "ghost",
        EventKind::CloneEnter {
            syscall: Syscall::Clone,
            flags: CloneFlags(0),
            exit_signal: 17,
        },
    );
}

/// systemd 1 → sh 50 → containerd 100, whose shim 111 (double-forked, adopted by 1) runs
/// container c1; a `runc exec` 140 left under the daemon and a `runc exec` 150 under the shim
/// that ends while the daemon is down; containerd restarted as 200.
fn restart_stream() -> (Stream, u64) {
    let mut b = Stream::default();
    b.fork(1, 50);
    b.exec(50, "/bin/sh", &["sh", "-c", "restart loop"]);
    b.fork(50, 100);
    b.exec(100, "/usr/bin/containerd", &["containerd"]);
    b.fork(100, 110);
    let shim_argv = [
        "containerd-shim-runc-v2",
        "-namespace",
        "lab",
        "-id",
        "c1",
        "start",
    ];
    b.exec(110, "/usr/bin/containerd-shim-runc-v2", &shim_argv);
    b.fork(110, 111);
    b.exit(110, 0);
    b.subreaper(111, 111, true);
    b.fork(100, 140);
    b.exec(140, "/usr/bin/runc", &["runc", "exec", "c1"]);
    b.fork(111, 150);
    b.exec(
        150,
        "/usr/bin/runc",
        &["runc", "exec", "--process", "/p.json", "c1"],
    );
    let died = b.exit(100, 0);
    b.exit(150, 1);
    b.fork(50, 200);
    b.exec(200, "/usr/bin/containerd", &["containerd"]);
    (b, died)
}

const SIGTERM: i32 = 15;
const SIGKILL: i32 = 9;
const SIGCHLD: i32 = 17;
const SI_USER: i32 = 0;
const SI_KERNEL: i32 = 0x80;
const CLD_EXITED: i32 = 1;
const CLD_KILLED: i32 = 2;

fn death(e: &Engine, pid: u32) -> Death {
    e.process(pid).and_then(|p| p.death()).expect("a death")
}

/// The kubelet's view of the death story of the container whose init is `init`.
fn terminated(e: &Engine, init: u32) -> super::kubelet::Terminated {
    let told = stories(e);
    let death = told
        .iter()
        .find(|s| s.phase == Phase::Death && s.init_pid == init)
        .expect("a death story");
    death.terminated.clone().expect("terminated")
}

/// A shim 500 and its container `c1` (init 603, running /bin/app).
fn one_container() -> (Stream, u32) {
    let mut b = Stream::default();
    b.fork(1, 500);
    let argv = ["containerd-shim-runc-v2", "-id", "c1"];
    b.exec(500, "/usr/bin/containerd-shim-runc-v2", &argv);
    let init = runc_create(&mut b, 500, 600, "c1", "/bin/app");
    (b, init)
}

// ---- the tests, one file per topic ----

mod anomalies;
mod births;
mod container_stories;
mod daemon_restart;
mod deaths;
mod k8s_identity;
mod reaper;
mod retention;
mod role_names;
mod threads;
mod views;

// ---- stories kept as events arrive (stories.rs) ----
mod incremental;

// ---- who may speak for a container (identity.rs) ----
mod speakers;

// ---- restarts told as they happened (lifecycle.rs) ----
mod restarts;

// ---- what an strace log shows of signals and deaths (ending.rs, lifecycle.rs) ----
mod strace_facts;

// ---- a runtime daemon's restart as a story (restart_story.rs, explain/restart.rs) ----
mod runtime_restart;

// ---- each explanation right for its variant (explain/) ----
mod explain;

// ---- one pod's life across nodes (across.rs) ----
mod across;
