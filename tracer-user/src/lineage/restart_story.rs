//! A runtime daemon's restart told as a story in the one story list: the daemon's end, every
//! shim and container process that lived on with its parent at that moment, what the restart
//! cost, the new daemon's start, and what stayed as it was.
//!
//! A view that follows a growing recording keeps a [`Watch`]: the restarts are found again
//! only when a daemon started, exec'd or ended, or when a process the last search read changed
//! what the search reads of it (its role, container, parent, end, cgroup), never per batch.

use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};

use super::engine::Engine;
use super::process::{ProcId, Process};
use super::restart::{daemon_key, runtime_restarts, RuntimeRestart, Survivor};
use super::roles::Role;
use super::story::{Facts, Phase, StepKind, Story, StoryKind, StoryStep};

/// Every runtime restart of `e` as a story, in order.
pub(super) fn restart_stories(e: &Engine) -> Vec<Story> {
    runtime_restarts(e)
        .into_iter()
        .map(|r| story(e, r))
        .collect()
}

/// One restart as a story (phase [`Phase::RuntimeRestart`]).
pub(super) fn story(e: &Engine, r: RuntimeRestart) -> Story {
    let mut steps = Vec::new();
    let mut step = |kind, seq, ts_ns, pid, text: String| {
        steps.push(StoryStep {
            kind,
            seq,
            ts_ns,
            time: e.time_of(ts_ns),
            pid,
            text,
            facts: Facts::None,
        })
    };
    step(
        StepKind::DaemonEnded,
        r.exit_seq,
        r.exit_ts_ns,
        r.old_pid,
        ended_text(&r),
    );
    for s in &r.survivors {
        step(
            StepKind::Survived,
            r.exit_seq,
            r.exit_ts_ns,
            s.pid,
            survivor_text(&r, s),
        );
    }
    for l in &r.lost {
        let text = format!("{} {} {}: {} (lost)", l.pid, l.name, l.what, l.detail);
        step(StepKind::RestartLost, l.seq, l.ts_ns, l.pid, text);
    }
    step(
        StepKind::DaemonStarted,
        r.seq,
        r.ts_ns,
        r.new_pid,
        started_text(&r),
    );
    step(
        StepKind::RestartUnchanged,
        r.seq,
        r.ts_ns,
        r.new_pid,
        unchanged_text(&r),
    );
    steps.sort_by_key(|s| s.seq);
    Story {
        phase: Phase::RuntimeRestart,
        attempt: None,
        previous_init: Some(r.old_pid),
        container_id: None,
        kind: daemon_kind(&r.daemon),
        runtime: Some(r.daemon.clone()),
        sandbox_id: None,
        sandbox: false,
        shim_pid: r
            .survivors
            .iter()
            .find(|s| s.role.as_deref() == Some("shim"))
            .map(|s| s.pid),
        runtime_pid: None,
        init_pid: r.new_pid,
        workload: None,
        pod: None,
        container_name: None,
        steps,
        terminated: None,
        restart: None,
        runtime_restart: Some(Box::new(r)),
    }
}

/// containerd's machinery, or CRI-O's and podman's (conmon) by the daemon's name.
fn daemon_kind(daemon: &str) -> StoryKind {
    match daemon {
        d if d.starts_with("containerd") || d == "dockerd" => StoryKind::Containerd,
        "crio" | "podman" | "conmon" => StoryKind::Conmon,
        _ => StoryKind::Unknown,
    }
}

/// `containerd 2058 exited with 0, after SIGTERM sent by 2046 (sh)`.
fn ended_text(r: &RuntimeRestart) -> String {
    let mut t = format!("{} {} {}", r.daemon, r.old_pid, r.ended);
    match &r.signal {
        // The fatal signal's sender is already in `ended`.
        Some(sig) if !r.ended.contains(&sig.signal) => {
            let who = match (sig.sender, sig.sender_name.as_str()) {
                (0, _) => "a sender the recording did not show".to_string(),
                (p, "") => p.to_string(),
                (p, n) => format!("{p} ({n})"),
            };
            t.push_str(&format!(", after {} sent by {who}", sig.signal));
        }
        Some(_) => {}
        None => t.push_str(" (no signal to it was recorded)"),
    }
    t
}

/// `shim 2092 (containerd-shim) lives on: parent 1 since seq 30 (adopted …), not containerd 2058's child`.
fn survivor_text(r: &RuntimeRestart, s: &Survivor) -> String {
    let role = s.role.as_deref().unwrap_or("process");
    format!(
        "{role} {} ({}) lives on: parent {} since seq {} ({}), never {} {}'s child",
        s.pid, s.name, s.parent, s.parent_since, s.parent_how, r.daemon, r.old_pid
    )
}

/// `containerd 2173 started (/usr/bin/containerd) by 2052, 1.2 s after 2058 exited`.
fn started_text(r: &RuntimeRestart) -> String {
    let exe = r
        .new_exe
        .as_deref()
        .map(|x| format!(" ({x})"))
        .unwrap_or_default();
    let gap = match (r.exit_ts_ns, r.ts_ns) {
        (a, b) if a > 0 && b >= a => format!(
            ", {} after {} exited",
            crate::clock::duration_text(b - a),
            r.old_pid
        ),
        _ => String::new(),
    };
    format!(
        "{} {} started{exe} by {}{gap}",
        r.daemon, r.new_pid, r.started_by
    )
}

/// What stayed: how many shims and container processes kept their pids and parents, and that
/// none of them is the new daemon's child.
fn unchanged_text(r: &RuntimeRestart) -> String {
    let count = |role: &str| {
        r.survivors
            .iter()
            .filter(|s| s.role.as_deref() == Some(role))
            .count()
    };
    let others = r.survivors.len() - count("shim");
    let adopted_by_new = r.survivors.iter().filter(|s| s.parent == r.new_pid).count();
    let kin = if adopted_by_new == 0 {
        format!("none is a child of the new {} {}", r.daemon, r.new_pid)
    } else {
        format!("{adopted_by_new} of them the new daemon's children")
    };
    format!(
        "unchanged: {} shim(s) and {others} container process(es) kept their pids and parents; {kin}; {} lost",
        count("shim"),
        r.lost.len()
    )
}

/// What the restart search reads of a record up to `last` (the latest restart's new daemon),
/// hashed: a change after it (the shim forking another `runc`, a container's later end) does
/// not make the restarts be found again; a change of its role or container does.
fn read_key(p: &Process, last: u64) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    let upto = |seq: u64| seq <= last;
    (p.pid, p.start_seq, p.exit_seq.filter(|&x| upto(x))).hash(&mut h);
    (p.role, p.container_id.as_deref()).hash(&mut h);
    p.lineage
        .iter()
        .filter(|l| upto(l.seq))
        .count()
        .hash(&mut h);
    let moves = p.cgroup_moves();
    moves.iter().filter(|m| upto(m.seq)).count().hash(&mut h);
    // The cgroup from its start counts only while no move says otherwise.
    moves.is_empty().then_some(p.cgroup.as_deref()).hash(&mut h);
    h.finish()
}

/// The restart stories of a followed recording, found again only when what they read changed.
#[derive(Debug, Default)]
pub(super) struct Watch {
    /// Each runtime daemon's [`daemon_key`].
    daemons: BTreeMap<ProcId, (u32, u64, Option<u64>, String)>,
    /// [`read_key`] of the records the last search read (those born before a restart's end).
    read: HashMap<ProcId, u64>,
    /// The seq of the latest restart's new daemon (0: none found).
    last: u64,
}

impl Watch {
    /// Whether the changed records call for a new search.
    pub(super) fn dirty<'a>(&mut self, changed: impl Iterator<Item = &'a Process>) -> bool {
        let mut dirty = false;
        for p in changed {
            if p.role == Some(Role::RuntimeDaemon) {
                dirty |= self.daemons.insert(p.id, daemon_key(p)).as_ref() != Some(&daemon_key(p));
            } else if self.last > 0 && p.start_seq < self.last {
                dirty |= self.read.get(&p.id) != Some(&read_key(p, self.last));
            }
        }
        dirty
    }

    /// The restart stories anew; the records they read remembered. Returns how many records
    /// the search visited.
    pub(super) fn search(&mut self, e: &Engine) -> (Vec<Story>, u64) {
        let found = restart_stories(e);
        self.last = found
            .iter()
            .filter_map(|s| s.runtime_restart.as_ref().map(|r| r.seq))
            .max()
            .unwrap_or(0);
        self.read.clear();
        let mut visited = 0;
        for p in e.processes() {
            visited += 1;
            if self.last > 0 && p.start_seq < self.last {
                self.read.insert(p.id, read_key(p, self.last));
            }
        }
        (found, visited)
    }
}
