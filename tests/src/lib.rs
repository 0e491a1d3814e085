//! Shared helpers for the end-to-end tests: run a command under live capture, build OCI
//! bundles from busybox-static, and the real-runtime labs ([`labs`]) that `cargo xtask lab`
//! drives too (xtask uses this crate without its `capture` feature, so no BPF toolchain).

pub mod agent;
pub mod big;
pub mod bins;
pub mod deploy;
pub mod labs;
pub mod packages;
pub mod prereq;
pub mod servers;
pub mod tmux;

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use tracer::Event;

/// OCI bundles from busybox-static (shared with the labs).
pub use labs::busybox_bundle;

/// The engine's model of the kernel was wrong: the kernel reported another parent than the
/// engine had predicted (the engine then takes the kernel's word, so its tree alone would not
/// show the mistake). The one place the truth tests name that warning kind.
pub fn is_model_disagreement(w: &tracer::lineage::Warning) -> bool {
    use tracer::lineage::WarningKind as W;
    matches!(
        w.kind,
        W::Disagreement { .. } | W::CorrectedAfterLoss { .. } | W::SigchldDisagreement { .. }
    )
}

/// Fails with every model/kernel disagreement the engine met (see [`is_model_disagreement`]).
pub fn assert_no_model_disagreement(e: &tracer::Engine, what: &str) {
    let bad: Vec<String> = e
        .warnings()
        .iter()
        .filter(|w| is_model_disagreement(w))
        .map(|w| w.to_string())
        .collect();
    assert!(
        bad.is_empty(),
        "{what}: the engine's model disagreed with the kernel:\n  {}",
        bad.join("\n  ")
    );
}

/// What a capture of one command delivered.
#[derive(Debug)]
pub struct Captured {
    pub events: Vec<Event>,
    pub drops: u64,
    pub seq_issued: u64,
    /// The command's pid (host namespace).
    pub pid: u32,
    pub status: Option<std::process::ExitStatus>,
}

/// The ring buffer the live tests capture with: room for every event of a test's command.
pub const RING: u32 = 8 << 20;

impl Captured {
    /// (wait status, group_dead) of the last TaskExit of `tid`.
    pub fn exit_of(&self, tid: u32) -> Option<(u32, bool)> {
        self.events.iter().rev().find_map(|e| {
            let tracer::EventKind::TaskExit {
                exit_code,
                group_dead,
            } = e.kind
            else {
                return None;
            };
            (e.tid == tid).then_some((exit_code, group_dead))
        })
    }
}

/// The engine of a capture of a command: seeded with this test process and the command
/// (named `comm`), then every event the capture got.
pub fn seeded_with_command(c: &Captured, comm: &str) -> tracer::Engine {
    let me = std::process::id();
    let mut engine = tracer::Engine::new();
    engine.seed_snapshot(&[
        tracer::lineage::SnapshotProcess {
            pid: me,
            ..Default::default()
        },
        tracer::lineage::SnapshotProcess {
            pid: c.pid,
            ppid: me,
            comm: comm.into(),
            ..Default::default()
        },
    ]);
    c.events.iter().for_each(|e| engine.apply(e));
    engine
}

/// True when the process may load BPF programs.
pub use prereq::is_root;

/// Runs `argv` followed from its first instruction until every followed process is gone.
/// With `read_live == false` nothing is read until the command exits (to force drops).
/// `syscalls` attaches the syscall probes too (`CaptureBuilder::syscalls`).
#[cfg(feature = "capture")]
pub fn capture_command(
    argv: &[&str],
    ring_bytes: u32,
    read_live: bool,
    syscalls: bool,
) -> Result<Captured> {
    use std::time::{Duration, Instant};
    use tracer::capture::{CaptureBuilder, Target};
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let target = Target::Command(argv.iter().map(|s| s.to_string()).collect());
        let mut cap = CaptureBuilder::new(target)
            .ring_bytes(ring_bytes)
            .syscalls(syscalls)
            .start()?;
        anyhow::ensure!(
            cap.syscall_probes() == syscalls,
            "probe set {} ({:?})",
            cap.probe_set(),
            cap.notes()
        );
        let pid = cap.child_pid().context("command pid")?;
        let deadline = Instant::now() + Duration::from_secs(60);
        if !read_live {
            let child = cap.child_mut().context("child")?;
            child.wait()?;
            // Let descendants finish too.
            while cap.followed_count() > 0 && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        // The library's one loop: it ends once every followed process is gone.
        let mut lp = tracer::SourceLoop::new(cap);
        let mut events = Vec::new();
        let read = async {
            while let Some(item) = lp.next().await {
                if let tracer::CaptureItem::Event(ev) = item? {
                    events.push(ev);
                }
            }
            anyhow::Ok(())
        };
        let left = deadline.saturating_duration_since(Instant::now());
        if let Ok(read) = tokio::time::timeout(left, read).await {
            read?;
        } else {
            for item in lp.finish() {
                if let tracer::CaptureItem::Event(ev) = item {
                    events.push(ev);
                }
            }
        }
        let mut cap = lp.into_source();
        let status = cap.child_mut().and_then(|c| c.wait().ok());
        Ok(Captured {
            drops: cap.drops(),
            seq_issued: cap.seq_issued(),
            events,
            pid,
            status,
        })
    })
}

/// Path of a program, searched in PATH.
pub fn which(prog: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join(prog))
        .find(|p| p.is_file())
}

/// A fresh, empty temporary directory (removed by the caller).
pub fn temp_dir(tag: &str) -> Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("tracer-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// The workspace's root directory.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// Rewrites a lab recording small enough to bundle: every event kept; the /proc snapshot
/// reduced to the processes the events name and their ancestors (ancestors keep only
/// argv[0]); the tracefs layouts dropped (replay does not need them). Returns (bytes before,
/// bytes after).
pub fn trim_trace(src: &Path, dst: &Path) -> Result<(u64, u64)> {
    use std::collections::{HashMap, HashSet};
    use tracer::input::Input;
    use tracer::tracefile::TraceWriter;
    use tracer::EventKind;

    let mut input = Input::open(src)?;
    let mut header = input.header().context("not a trace file")?.clone();
    let events: Vec<Event> = input.by_ref().collect::<Result<_, _>>()?;
    let counters = input.last_stats().copied().unwrap_or_default();

    let mut named: HashSet<u32> = HashSet::new();
    for ev in &events {
        named.extend([ev.tgid, ev.ppid]);
        if let EventKind::Fork { child_ppid, .. } = ev.kind {
            named.insert(child_ppid);
        }
    }
    let by_pid: HashMap<u32, u32> = header.snapshot.iter().map(|p| (p.pid, p.ppid)).collect();
    let mut keep: HashSet<u32> = HashSet::new();
    for &pid in &named {
        let mut p = pid;
        while by_pid.contains_key(&p) && keep.insert(p) {
            p = by_pid[&p];
        }
    }
    header.snapshot.retain(|p| keep.contains(&p.pid));
    for p in &mut header.snapshot {
        if !named.contains(&p.pid) {
            p.argv.truncate(1);
        }
    }
    header.layouts.clear();
    header.extra.push((
        "note".into(),
        "trimmed for bundling: snapshot reduced to the processes the events name and their \
         ancestors; tracefs layouts dropped"
            .into(),
    ));
    let mut w = TraceWriter::create(dst, &header)?;
    for ev in &events {
        w.write_event(ev)?;
    }
    w.set_counters(counters.drops, counters.seq_issued, counters.decode_errors);
    w.finish()?;
    Ok((std::fs::metadata(src)?.len(), std::fs::metadata(dst)?.len()))
}
