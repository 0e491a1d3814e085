//! Root tests of deaths under the real probes: a kill with its sender and target, an OOM
//! kill with the victim's memory cgroup and limit, a dying pid namespace's init killing the
//! rest. Run by `cargo xtask test` as root (`--ignored`).
#![cfg(feature = "capture")]

use tests::{capture_command, temp_dir, Captured, RING};
use tracer::event::{OomInfo, SignalInfo, SignalResult};
use tracer::names::si_code::{SI_KERNEL, SI_USER};
use tracer::EventKind;

const ACTOR: &str = env!("CARGO_BIN_EXE_actor");

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
    assert_eq!(c.exit_of(job), Some((libc::SIGTERM as u32, true)));
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
    assert_eq!(c.exit_of(c.pid), Some((libc::SIGKILL as u32, true)));
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
        assert_eq!(c.exit_of(sleep), Some((libc::SIGKILL as u32, true)));
    }
}

// ---- the start snapshot's scope ---------------------------------------------------------------
