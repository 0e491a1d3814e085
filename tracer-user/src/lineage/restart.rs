//! The restart experiment: a runtime daemon (containerd, dockerd…) that exited and was started
//! again during the recording, what kept running through it and what did not.
//!
//! The containers survive by design: their shims were double-forked away from the daemon
//! (reparented to init or a subreaper) and are the subreapers of the containers' processes, so
//! the daemon's death reparents nothing of theirs.

use serde::Serialize;

use super::ending::SIGCHLD;
use super::engine::Engine;
use super::process::{How, ProcId, Process};
use super::roles::{basename, Role};

/// A process that kept its pid and parent across a restart.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Survivor {
    /// Its pid (the same before and after).
    pub pid: u32,
    /// Its role (`shim`, `container`…).
    pub role: Option<String>,
    /// Its container, when known.
    pub container_id: Option<String>,
    /// Its parent (the same before and after).
    pub parent: u32,
    /// Its name (comm) at the restart.
    pub name: String,
    /// Seq of the event that gave it that parent (its birth, or its adoption).
    pub parent_since: u64,
    /// How it got that parent: `born` or the adoption's reason.
    pub parent_how: String,
    /// Its cgroup at the daemon's exit as the recording holds it (`None`: not recorded).
    pub cgroup: Option<String>,
}

/// A process the restart cost: it died while the daemon was down, or it lost its parent
/// (the old daemon) and was reparented.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Lost {
    /// Its pid.
    pub pid: u32,
    /// Its name.
    pub name: String,
    /// Its role, when it had one.
    pub role: Option<String>,
    /// Its container, when known.
    pub container_id: Option<String>,
    /// `exited` or `reparented`.
    pub what: &'static str,
    /// `exit 0`, `killed SIGKILL`, or the reparenting reason.
    pub detail: String,
    /// Seq of the event that shows it.
    pub seq: u64,
    /// That event's wall time (RFC 3339), when the recording's clock has a date.
    pub time: Option<String>,
    /// That event's time (the recording's `ts_ns`).
    pub ts_ns: u64,
}

/// A runtime daemon that exited and was started again.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RuntimeRestart {
    /// The daemon's name (`containerd`).
    pub daemon: String,
    /// The first daemon's pid.
    pub old_pid: u32,
    /// The second daemon's pid.
    pub new_pid: u32,
    /// Seq at which the first daemon exited.
    pub exit_seq: u64,
    /// Seq at which the new daemon started (its exec, or its birth).
    pub seq: u64,
    /// Wall time of the old daemon's exit (RFC 3339), when the clock has a date.
    pub exit_time: Option<String>,
    /// Wall time of the new daemon's start.
    pub time: Option<String>,
    /// Every shim, sandbox and container process alive through the restart with the same
    /// pid and parent.
    pub survivors: Vec<Survivor>,
    /// What died while the daemon was down, or lost the old daemon as its parent.
    pub lost: Vec<Lost>,
    /// How the old daemon ended: `exited with 0`, `killed by SIGKILL sent by 1 (systemd)`.
    pub ended: String,
    /// The last signal the old daemon was sent before its end, when the recording shows one
    /// (a SIGTERM it handled and then exited 0 is a stop as much as a SIGKILL).
    pub signal: Option<DaemonSignal>,
    /// The old daemon's cgroup at its exit, as recorded (`None`: not recorded).
    pub daemon_cgroup: Option<String>,
    /// The new daemon's parent at its start.
    pub started_by: u32,
    /// The new daemon's program (its exec), when seen.
    pub new_exe: Option<String>,
    /// The old daemon's exit time (the recording's `ts_ns`).
    pub exit_ts_ns: u64,
    /// The new daemon's start time (the recording's `ts_ns`).
    pub ts_ns: u64,
}

/// A signal sent to the old daemon before it ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DaemonSignal {
    /// `SIGTERM`.
    pub signal: String,
    /// The sender's pid (0: the source could not tell).
    pub sender: u32,
    /// The sender's name then (empty when unknown).
    pub sender_name: String,
    /// Seq of the signal's event.
    pub seq: u64,
    /// Its time (the recording's `ts_ns`).
    pub ts_ns: u64,
}

/// Seq from which `p` was the daemon: its last exec, else its birth.
fn daemon_since(p: &Process) -> u64 {
    p.execs.last().map_or(p.start_seq, |x| x.seq)
}

fn daemon_name(p: &Process) -> String {
    p.exe
        .as_deref()
        .map_or_else(|| p.name(), |e| basename(e).to_string())
}

/// The restart fingerprint of the runtime daemons: changes when one starts, execs or exits.
pub(super) fn daemon_key(p: &Process) -> (u32, u64, Option<u64>, String) {
    (p.pid, daemon_since(p), p.exit_seq, daemon_name(p))
}

/// Every restart of a runtime daemon in the recording, in order.
pub fn runtime_restarts(e: &Engine) -> Vec<RuntimeRestart> {
    let mut daemons: Vec<&Process> = e
        .processes()
        .filter(|p| p.role == Some(Role::RuntimeDaemon))
        .collect();
    daemons.sort_by_key(|p| (daemon_since(p), p.id));
    let mut out = Vec::new();
    for (i, old) in daemons.iter().enumerate() {
        let Some(exit_seq) = old.exit_seq else {
            continue;
        };
        let name = daemon_name(old);
        let next = daemons[i + 1..]
            .iter()
            .find(|n| daemon_name(n) == name && daemon_since(n) > exit_seq);
        if let Some(new) = next {
            out.push(restart(e, old, new, exit_seq));
        }
    }
    out
}

fn restart(e: &Engine, old: &Process, new: &Process, exit_seq: u64) -> RuntimeRestart {
    let seq = daemon_since(new);
    let mut survivors = Vec::new();
    let mut lost = Vec::new();
    for p in e.processes() {
        if p.id == old.id || p.id == new.id || p.start_seq >= exit_seq {
            continue;
        }
        if p.exit_seq.is_some_and(|x| x < exit_seq) {
            continue;
        }
        let moved = p
            .lineage
            .iter()
            .skip(1)
            .find(|l| l.seq >= exit_seq && l.seq <= seq);
        let died = p.exit_seq.filter(|&x| x <= seq);
        if let Some(l) = moved.filter(|l| l.how == How::Adopted && parent_was(e, p, old.id, l.seq))
        {
            let detail = l.reason_text().unwrap_or_default();
            lost.push(lost_entry(
                p,
                "reparented",
                detail,
                (l.seq, l.ts_ns, e.time_of(l.ts_ns)),
            ));
        } else if let Some(x) = died.filter(|_| related(e, p, old.id, exit_seq)) {
            let st = p.exit_text();
            let time = p.exit_ts_ns.and_then(|t| e.time_of(t));
            let ts = p.exit_ts_ns.unwrap_or_default();
            lost.push(lost_entry(p, "exited", st, (x, ts, time)));
        } else if died.is_none() && moved.is_none() && in_container_world(p) {
            survivors.push(survivor(p, exit_seq, seq));
        }
    }
    survivors.sort_by_key(|s| s.pid);
    lost.sort_by_key(|l| (l.seq, l.pid));
    let ts_ns = new.execs.last().map_or(new.birth_ts_ns, |x| x.ts_ns);
    let exit_ts_ns = old.exit_ts_ns.unwrap_or_default();
    RuntimeRestart {
        daemon: daemon_name(old),
        old_pid: old.pid,
        new_pid: new.pid,
        exit_seq,
        seq,
        exit_time: old.exit_ts_ns.and_then(|t| e.time_of(t)),
        time: e.time_of(ts_ns),
        survivors,
        lost,
        ended: old
            .death()
            .map_or_else(|| "ended".to_string(), |d| d.to_string()),
        signal: last_signal(old, exit_seq),
        daemon_cgroup: cgroup_at(old, exit_seq),
        started_by: parent_at(new, seq),
        new_exe: new.execs.last().map(|x| x.exe.to_string()),
        exit_ts_ns,
        ts_ns,
    }
}

/// A process that lived on: its pid, role and container, its parent at `seq` (the new
/// daemon's start) and since when, its cgroup at the old daemon's exit.
fn survivor(p: &Process, exit_seq: u64, seq: u64) -> Survivor {
    let since = p.lineage.iter().take_while(|l| l.seq <= seq).last();
    let parent_how = match since {
        Some(l) if l.how == How::Adopted => {
            format!("adopted ({})", l.reason_text().unwrap_or_default())
        }
        _ => "born".to_string(),
    };
    Survivor {
        pid: p.pid,
        role: p.role.map(|r| r.to_string()),
        container_id: p.container_id.as_deref().map(str::to_string),
        parent: parent_at(p, seq),
        name: p.name(),
        parent_since: since.map_or(p.start_seq, |l| l.seq),
        parent_how,
        cgroup: cgroup_at(p, exit_seq),
    }
}

/// `p`'s cgroup at `seq` as the recording holds it: the last move before it, else (no move
/// before) the cgroup it had from its start when no move came after either; `None` when the
/// recording does not say.
fn cgroup_at(p: &Process, seq: u64) -> Option<String> {
    let moves = p.cgroup_moves();
    match moves.iter().rev().find(|m| m.seq <= seq) {
        Some(m) => Some(m.path.to_string()),
        None if moves.is_empty() => p.cgroup.as_deref().map(str::to_string),
        None => None,
    }
}

/// The last signal sent to `p` (not a SIGCHLD of its children) up to its exit at `exit_seq`.
fn last_signal(p: &Process, exit_seq: u64) -> Option<DaemonSignal> {
    let sigs = p.signals().iter().chain(p.killer());
    sigs.filter(|s| s.target == p.pid && s.seq <= exit_seq && s.signal != SIGCHLD)
        .max_by_key(|s| s.seq)
        .map(|s| DaemonSignal {
            signal: s.signal_name(),
            sender: s.sender,
            sender_name: s.sender_comm.to_string(),
            seq: s.seq,
            ts_ns: s.ts_ns,
        })
}

/// A shim, sandbox or container process (what a restart must not touch).
fn in_container_world(p: &Process) -> bool {
    matches!(
        p.role,
        Some(Role::Shim | Role::Sandbox | Role::Container | Role::OciInit { .. })
    )
}

/// Worth reporting when it dies during the restart: part of the runtime or the containers,
/// or a child of the old daemon.
fn related(e: &Engine, p: &Process, daemon: ProcId, exit_seq: u64) -> bool {
    p.role.is_some()
        || p.container_id.is_some()
        || p.birth_parent == Some(daemon)
        || parent_was(e, p, daemon, exit_seq)
}

/// Was `daemon` the parent of `p` just before `seq`?
fn parent_was(e: &Engine, p: &Process, daemon: ProcId, seq: u64) -> bool {
    let pid = e.get(daemon).map_or(0, |d| d.pid);
    parent_at(p, seq.saturating_sub(1)) == pid
}

/// `p`'s parent after every lineage entry up to `seq`.
fn parent_at(p: &Process, seq: u64) -> u32 {
    p.lineage
        .iter()
        .take_while(|l| l.seq <= seq)
        .last()
        .map_or(p.ppid, |l| l.parent)
}

fn lost_entry(
    p: &Process,
    what: &'static str,
    detail: String,
    (seq, ts_ns, time): (u64, u64, Option<String>),
) -> Lost {
    Lost {
        pid: p.pid,
        name: p.name(),
        role: p.role.map(|r| r.to_string()),
        container_id: p.container_id.as_deref().map(str::to_string),
        what,
        detail,
        seq,
        time,
        ts_ns,
    }
}

/// The restarts as text: what survived and what was lost, one line each.
pub fn restarts_text(rs: &[RuntimeRestart]) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    for r in rs {
        let _ = writeln!(
            out,
            "runtime daemon {} restarted: {} exited [seq {}], {} started [seq {}]",
            r.daemon, r.old_pid, r.exit_seq, r.new_pid, r.seq
        );
        if r.survivors.is_empty() {
            let _ = writeln!(
                out,
                "  survived: nothing of the containers' (none was running)"
            );
        }
        for s in &r.survivors {
            let role = s.role.as_deref().unwrap_or("?");
            let cid = s.container_id.as_deref().unwrap_or("?");
            let _ = writeln!(
                out,
                "  survived: {} [{role}] container {cid}, same pid, parent {} before and after",
                s.pid, s.parent
            );
        }
        for l in &r.lost {
            let role = l
                .role
                .as_deref()
                .map(|r| format!(" [{r}]"))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "  lost:     {} {}{role} {} ({}) [seq {}]",
                l.pid, l.name, l.what, l.detail, l.seq
            );
        }
    }
    out
}
