//! Why a runtime daemon's restart leaves its containers running: the general rule for each
//! step of a [`super::story::Phase::RuntimeRestart`] story, and what this recording holds for
//! it (the cgroups it recorded, who signalled the daemon, who started it again). Only what the
//! recording holds is stated; what it lacks is said to be not recorded.

use std::fmt::Write as _;

use super::super::restart::{RuntimeRestart, Survivor};
use super::super::story::{StepKind, Story, StoryStep};
use super::Told;
use crate::escape::escape;

/// The old daemon's end. (text, source)
pub(super) const DAEMON_ENDED: (&str, &str) = (
    "The runtime daemon ended: a stop (`systemctl stop`/`restart` sends SIGTERM to the \
     unit's main process), a crash or a kill. Its own children are orphaned and reparented \
     (kernel/exit.c find_new_reaper), but the shims are not its children: each was \
     double-forked (the short-lived `shim start` process forked it and exited, and the \
     kernel handed the orphan to the nearest PR_SET_CHILD_SUBREAPER ancestor or to pid 1). \
     On a systemd node, containerd's own unit file, containerd.service, sets \
     KillMode=process: on a stop systemd signals only the unit's main process. With the \
     default KillMode=control-group it would kill every process left in the unit's \
     cgroup, the shims too when they sit there.",
    "kernel/exit.c exit_notify() → forget_original_parent() → find_new_reaper(); \
     containerd containerd.service (KillMode=process, Delegate=yes, Restart=always); \
     systemd.kill(5) KillMode=",
);

/// A shim or container process that lived on. (text, source)
pub(super) const SURVIVED: (&str, &str) = (
    "This process lived on with the same pid and the same parent. A shim's parent is \
     the process that adopted it when its `start` parent exited (pid 1, or a subreaper), \
     never the daemon, so the daemon's exit orphans nothing of it; and the shim set \
     PR_SET_CHILD_SUBREAPER, so the container's processes hang off the shim, not the \
     daemon. What could still kill it is a unit stop that kills the cgroup: \
     containerd.service's KillMode=process is what prevents that on a systemd node.",
    "kernel/exit.c find_new_reaper(); kernel/sys.c PR_SET_CHILD_SUBREAPER; containerd \
     pkg/shim (double fork), containerd.service; systemd.kill(5)",
);

/// What the restart cost. (text, source)
pub(super) const RESTART_LOST: (&str, &str) = (
    "What the restart cost: a process that was the old daemon's child (a `runc` or CNI \
     plugin it had started) was reparented when the daemon exited, or a process of the \
     runtime ended while no daemon ran. Work the daemon had in flight is done again by \
     the new daemon; the containers themselves are not touched.",
    "kernel/exit.c forget_original_parent(); containerd runtime/v2 (task reconnect)",
);

/// The new daemon's start. (text, source)
pub(super) const DAEMON_STARTED: (&str, &str) = (
    "The daemon was started again (by its supervisor: systemd's Restart=, or whoever \
     ran it) under a new pid. It finds its running containers from its state directory \
     and reconnects to each shim's socket (containerd reloads its tasks, the shims' \
     addresses are in their bundles); it does not become their parent: no system call \
     can make a running process another's child.",
    "containerd runtime/v2 (loadExistingTasks, shim reconnect); kernel/fork.c (a parent \
     is only given at birth or by reparenting on exit)",
);

/// What stayed as it was. (text, source)
pub(super) const RESTART_UNCHANGED: (&str, &str) = (
    "What the restart did not change: every shim and container process kept its pid \
     and its parent, and none became the new daemon's child. The daemon is not in the \
     containers' process tree: it talks to the shims over their sockets (ttrpc), so it \
     can be restarted or upgraded while the containers run.",
    "containerd runtime/v2 shim design; kernel/exit.c (reparenting only on a parent's exit)",
);

/// CRI-O's way, told only when the restarted daemon is CRI-O's: its unit keeps the default kill
/// mode and moves each conmon out of its cgroup (crio.conf `conmon_cgroup`).
const CRIO: &str = "CRI-O's crio.service keeps the default kill mode instead and moves each \
     conmon out of its cgroup (crio.conf conmon_cgroup: a scope of its own, or the pod's \
     cgroup).";

/// A restart step's explanation: the rule (`general`, one of the consts above), then what
/// this recording holds for it.
pub(super) fn why(t: &Told, general: (&str, &'static str)) -> (String, &'static str) {
    let (text, source) = general;
    let crio = t.step.kind == StepKind::Survived
        && t.story
            .runtime_restart
            .as_deref()
            .is_some_and(|r| r.daemon == "crio");
    let text = if crio {
        format!("{text} {CRIO}")
    } else {
        text.to_string()
    };
    match recorded(t.story, t.step) {
        Some(facts) => (format!("{text} {facts}"), source),
        None => (text, source),
    }
}

/// What this recording holds for `step` of a runtime restart story: the recorded cgroups,
/// the signal's sender, the new daemon's parent. `None` for other stories.
pub(super) fn recorded(st: &Story, step: &StoryStep) -> Option<String> {
    let r = st.runtime_restart.as_deref()?;
    let mut t = String::from("In this recording: ");
    match step.kind {
        StepKind::DaemonEnded => ended(&mut t, r),
        StepKind::Survived => {
            let s = r.survivors.iter().find(|s| s.pid == step.pid)?;
            survived(&mut t, r, s);
        }
        StepKind::DaemonStarted | StepKind::RestartUnchanged => started(&mut t, r),
        _ => return None,
    }
    Some(t)
}

/// The old daemon's end: its cgroup, the signal and its sender, as recorded.
fn ended(t: &mut String, r: &RuntimeRestart) {
    let d = escape(&r.daemon);
    match &r.daemon_cgroup {
        Some(cg) => {
            let _ = write!(t, "{d} {} sat in cgroup {}", r.old_pid, escape(cg));
        }
        None => {
            let _ = write!(t, "{d} {}'s cgroup was not recorded", r.old_pid);
        }
    }
    match &r.signal {
        Some(s) if s.sender != 0 => {
            let _ = write!(t, "; {} was sent by {}", s.signal, s.sender);
            if !s.sender_name.is_empty() {
                let _ = write!(t, " ({})", escape(&s.sender_name));
            }
        }
        Some(s) => {
            let _ = write!(t, "; {} was sent by a sender not recorded", s.signal);
        }
        None => t.push_str("; no signal to it was recorded"),
    }
    let _ = write!(t, "; it ended: {}.", escape(&r.ended));
}

/// A survivor: its parent and since when, its cgroup against the daemon's, and what a
/// control-group kill would have done to it.
fn survived(t: &mut String, r: &RuntimeRestart, s: &Survivor) {
    let _ = write!(
        t,
        "{} {} kept parent {} (since seq {}: {}). ",
        s.role.as_deref().unwrap_or("process"),
        s.pid,
        s.parent,
        s.parent_since,
        escape(&s.parent_how)
    );
    match (&s.cgroup, &r.daemon_cgroup) {
        (Some(c), Some(d)) if c == d => {
            let _ = write!(
                t,
                "It sat in {}'s own cgroup {}: a stop that killed the whole cgroup \
                 (systemd's default KillMode=control-group) would have killed it. ",
                escape(&r.daemon),
                escape(c)
            );
            t.push_str(if r.started_by == 1 {
                "The daemon was started by pid 1; under containerd.service, KillMode=process \
                 limits a stop to the main process."
            } else {
                "Here no systemd unit ran the daemon (it was not started by pid 1): only the \
                 daemon was signalled, so no unit's KillMode came into it."
            });
        }
        (Some(c), Some(d)) => {
            let _ = write!(
                t,
                "It sat in cgroup {}, not in {}'s cgroup {}: a kill of the daemon's cgroup \
                 would not have reached it.",
                escape(c),
                escape(&r.daemon),
                escape(d)
            );
        }
        (Some(c), None) => {
            let _ = write!(
                t,
                "It sat in cgroup {}; the daemon's cgroup was not recorded.",
                escape(c)
            );
        }
        (None, _) => t.push_str("Its cgroup was not recorded."),
    }
}

/// Who started the new daemon: a systemd unit only when the recording shows pid 1 doing it.
fn started(t: &mut String, r: &RuntimeRestart) {
    let _ = write!(
        t,
        "{} {} was started by {}",
        escape(&r.daemon),
        r.new_pid,
        r.started_by
    );
    if r.started_by != 1 {
        t.push_str(
            ", not by pid 1: no systemd unit ran this daemon here, so no unit's KillMode applied; \
             the shims lived on by the double fork and the subreaper alone",
        );
    }
    let _ = write!(
        t,
        "; {} process(es) lived on, {} lost.",
        r.survivors.len(),
        r.lost.len()
    );
}
