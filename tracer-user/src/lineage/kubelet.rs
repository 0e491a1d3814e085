//! A container life's end in the kubelet's words: what its `ContainerStateTerminated` would say
//! (`reason`, `exitCode`, `startedAt`, `finishedAt`, as `kubectl describe pod` shows them under
//! `Last State`), the cause the recording shows (a CRI StopContainer and the grace period it
//! used, a StopPodSandbox's timeout 0, the OOM killer, the process's own exit or crash), and a
//! restart's attempt, the time since the life before ended and the kubelet's back-off.

use serde::Serialize;

use crate::clock::duration_text;
use crate::event::ExitStatus;

use super::ending::{SignalRecord, SIGKILL};
use super::process::{label, Process};
use super::reads::{Ctx, Key};
use super::roles::{OciCommand, Role};

const SIGTERM: i32 = 15;
const NS: u64 = 1_000_000_000;
/// The kubelet's first restart back-off (pkg/kubelet/kubelet.go `backOffPeriod`).
pub const BACK_OFF_INITIAL_NS: u64 = 10 * NS;
/// Its cap (`MaxContainerBackOff`): the back-off doubles up to five minutes.
pub const BACK_OFF_MAX_NS: u64 = 300 * NS;
/// Doubling gaps in a row that name a CrashLoopBackOff.
pub const BACK_OFF_GAPS: usize = 3;
/// Gaps a restart keeps of the ones before it (enough to see the back-off).
const GAPS_KEPT: usize = 8;

/// `ContainerStateTerminated.Reason` as kubelet and containerd's CRI set it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum TermReason {
    /// Exit code 0.
    Completed,
    /// Any other end.
    Error,
    /// The OOM killer killed the init or a process of the container's memory cgroup.
    #[serde(rename = "OOMKilled")]
    OomKilled,
}

impl TermReason {
    /// From the wait status and whether the OOM killer struck (containerd's CRI: OOMKilled
    /// when the task saw an OOM event, else Completed for 0 and Error otherwise).
    pub fn of(status: ExitStatus, oom: bool) -> TermReason {
        match (oom, exit_code(status)) {
            (true, _) => TermReason::OomKilled,
            (false, 0) => TermReason::Completed,
            (false, _) => TermReason::Error,
        }
    }

    /// `Completed`, `Error`, `OOMKilled`.
    pub fn as_str(self) -> &'static str {
        match self {
            TermReason::Completed => "Completed",
            TermReason::Error => "Error",
            TermReason::OomKilled => "OOMKilled",
        }
    }
}

/// `exitCode`: the code it exited with, or 128 + N for a signal N (as a shell and the runtime
/// report a killed process).
pub fn exit_code(status: ExitStatus) -> i32 {
    match status {
        ExitStatus::Exited { code } => code,
        ExitStatus::Killed { signal, .. } => 128 + signal,
    }
}

/// Who sent a signal of a stop: a process, and whether it was the OCI runtime's `kill` run by
/// the container's shim (how containerd's task Kill, asked by CRI, reaches runc).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Sender {
    /// Its pid.
    pub pid: u32,
    /// `runc 3384`, as the story lines name a process.
    pub name: String,
    /// It was `runc kill` (or another OCI runtime's) run by the shim.
    pub runtime_kill: bool,
    /// Seq of the signal.
    pub seq: u64,
}

/// The pod's sandbox killed at once after a container: the pod was stopped.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PodStop {
    /// The sandbox's init (pause).
    pub sandbox_pid: u32,
    /// `pause 3061`.
    pub sandbox: String,
    /// Its SIGKILL's sender.
    pub by: Sender,
    /// Time (`ts_ns`) of that SIGKILL.
    pub ts_ns: u64,
}

/// What ended a container's init, as the recording shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Cause {
    /// It exited by itself.
    Exit {
        /// Its exit code.
        code: i32,
    },
    /// A signal it raised itself or the kernel raised (a fault, abort).
    Crash {
        /// The signal.
        signal: String,
    },
    /// The OOM killer (mm/oom_kill.c) killed the init or a process of its memory cgroup.
    OomKiller {
        /// The victim.
        pid: u32,
        /// `sh 3285`, as the story lines name it.
        name: String,
        /// Its memory cgroup.
        memcg: Option<String>,
        /// The limit in force (bytes).
        limit: Option<u64>,
        /// Seq of the kill.
        seq: u64,
    },
    /// SIGTERM, then SIGKILL if the grace period ran out (CRI StopContainer when the runtime
    /// sent them).
    StopContainer {
        /// Who sent SIGTERM.
        term: Sender,
        /// Who sent SIGKILL, if it came.
        kill: Option<Sender>,
        /// SIGTERM to SIGKILL: the grace period used, when the clock measures time.
        grace_ns: Option<u64>,
    },
    /// SIGKILL with no SIGTERM before (a stop with timeout 0).
    KilledAtOnce {
        /// Who sent it.
        kill: Sender,
        /// The SIGKILL with no SIGTERM the pod's sandbox got likewise after it: the pod was
        /// stopped (CRI StopPodSandbox stops its containers with timeout 0).
        pod_stopped: Option<PodStop>,
    },
    /// A fatal signal whose sending the recording did not show.
    Killed {
        /// The signal.
        signal: String,
    },
    /// A fatal signal another process sent (neither a stop's SIGTERM nor SIGKILL).
    Signal {
        /// The signal.
        signal: String,
        /// Who sent it.
        by: Sender,
    },
}

/// What kubelet's `ContainerStateTerminated` would say of a container life, with its cause.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Terminated {
    /// `Completed`, `Error` or `OOMKilled`.
    pub reason: TermReason,
    /// The exit code, 128 + N for a signal N.
    #[serde(rename = "exitCode")]
    pub exit_code: i32,
    /// The signal that killed it, by number (kubelet's `signal`), when one did.
    pub signal: Option<i32>,
    /// When it started (its init exec'd the workload: `runc start`), RFC 3339, when the
    /// recording's clock has a date.
    #[serde(rename = "startedAt")]
    pub started_at: Option<String>,
    /// When its init died, RFC 3339, when the clock has a date.
    #[serde(rename = "finishedAt")]
    pub finished_at: Option<String>,
    /// `ts_ns` of the start and of the end.
    pub started_ts_ns: u64,
    /// See `started_ts_ns`.
    pub finished_ts_ns: u64,
    /// How long it ran, when the clock measures time.
    pub ran_ns: Option<u64>,
    /// What ended it.
    pub cause: Cause,
}

/// A restart as kubelet counts it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Restart {
    /// `restartCount` after this restart (1 for the first).
    #[serde(rename = "restartCount")]
    pub restart_count: u32,
    /// Time from the last life's end to this one's first step, when both were seen and the
    /// clock measures time.
    pub since_last_end_ns: Option<u64>,
    /// The gaps between deaths and restarts up to this one, oldest first, while each was
    /// measured (the last few).
    pub gaps_ns: Vec<u64>,
    /// `CrashLoopBackOff` when the last [`BACK_OFF_GAPS`] gaps double as kubelet's back-off
    /// does.
    pub back_off: Option<&'static str>,
}

/// Whether `next` follows `prev` as kubelet's back-off does: double it, up to the cap, with
/// slack for the time a restart takes (a sync period, the runtime's create and start).
fn doubles(prev: u64, next: u64) -> bool {
    let want = prev.saturating_mul(2).min(BACK_OFF_MAX_NS);
    next >= want / 10 * 8 && next <= want / 4 * 5 + 2 * NS
}

/// Whether the gaps (oldest first) end with [`BACK_OFF_GAPS`] that double one after the other
/// from at least kubelet's first back-off (less jitter): a CrashLoopBackOff.
pub fn is_back_off(gaps: &[u64]) -> bool {
    let Some(last) = gaps.len().checked_sub(BACK_OFF_GAPS).map(|i| &gaps[i..]) else {
        return false;
    };
    last.iter().all(|&g| g >= BACK_OFF_INITIAL_NS / 10 * 8)
        && last.windows(2).all(|w| doubles(w[0], w[1]))
}

/// A restart after `previous_gaps` (the life before's own [`Restart::gaps_ns`]), `gap` after
/// the last life ended.
pub fn restart(restart_count: u32, previous_gaps: &[u64], gap: Option<u64>) -> Restart {
    let mut gaps_ns = match gap {
        Some(g) => {
            let mut v = previous_gaps.to_vec();
            v.push(g);
            v
        }
        None => Vec::new(),
    };
    let cut = gaps_ns.len().saturating_sub(GAPS_KEPT);
    gaps_ns.drain(..cut);
    let back_off = is_back_off(&gaps_ns).then_some("CrashLoopBackOff");
    Restart {
        restart_count,
        since_last_end_ns: gap,
        gaps_ns,
        back_off,
    }
}

impl Restart {
    /// `restarted 10.2 s after its last life ended (attempt 2; CrashLoopBackOff: …)`.
    pub fn text(&self) -> String {
        let mut t = match self.since_last_end_ns {
            Some(g) => format!("restarted {} after its last life ended", duration_text(g)),
            None => "restarted".to_string(),
        };
        t.push_str(&format!(" (attempt {}", self.restart_count));
        if let Some(b) = self.back_off {
            let gaps: Vec<String> = self.gaps_ns.iter().map(|&g| duration_text(g)).collect();
            t.push_str(&format!(
                "; {b}: the gaps double as kubelet's back-off does, {}",
                gaps.join(", ")
            ));
        }
        t.push(')');
        t
    }
}

/// A stop's signals to `init` from other processes: the first SIGTERM, and the first SIGKILL
/// after it (or the first at all).
fn stop_signals(init: &Process) -> (Option<&SignalRecord>, Option<&SignalRecord>) {
    let mut sent = init
        .signals()
        .iter()
        .filter(|s| s.target == init.pid && s.sender != init.pid && s.sender != 0 && s.user_sent());
    let term = sent.clone().find(|s| s.signal == SIGTERM);
    let after = term.map_or(0, |t| t.seq);
    let kill = sent.find(|s| s.signal == SIGKILL && s.seq >= after);
    (term, kill)
}

/// The sender of `s` as the cause names it.
fn sender(c: &Ctx, shim: Option<u32>, s: &SignalRecord) -> Sender {
    let p = c.process_meta(s.sender);
    let runtime_kill = p.is_some_and(|p| {
        shim.is_some_and(|sh| p.ppid == sh)
            && matches!(
                p.role,
                Some(Role::OciRuntime {
                    subcommand: Some(OciCommand::Kill)
                })
            )
    });
    Sender {
        pid: s.sender,
        name: p.map_or_else(|| s.sender.to_string(), label),
        runtime_kill,
        seq: s.seq,
    }
}

/// The OOM kill that ended the life of `init`: its own, else one of its container's memory
/// cgroup during its life.
fn oom_kill<'a>(c: &Ctx<'a>, init: &'a Process) -> Option<&'a Process> {
    if init.oom().is_some() {
        return Some(init);
    }
    let cid = init.container_id.clone()?;
    let end = init.exit_seq?;
    c.class(Key::OomVictimsOf(cid))
        .into_iter()
        .filter(|p| {
            p.oom()
                .is_some_and(|o| o.seq >= init.start_seq && o.seq <= end)
        })
        .min_by_key(|p| p.oom().map(|o| o.seq))
}

/// A stop with no SIGTERM whose pod's sandbox was stopped so as well, later.
fn pod_stopped(c: &Ctx, shim: Option<u32>, init: &Process, kill: &SignalRecord) -> Option<PodStop> {
    let shim_pid = shim;
    let shim = c.born_by(shim?, init.start_seq)?;
    let sandbox = shim
        .children
        .iter()
        .filter_map(|&k| c.meta(k))
        .filter(|k| k.role == Some(Role::Sandbox) && k.id != init.id)
        .find_map(|k| c.get(k.id))?;
    let (term, k) = stop_signals(sandbox);
    let k = k.filter(|k| term.is_none() && k.seq > kill.seq)?;
    Some(PodStop {
        sandbox_pid: sandbox.pid,
        sandbox: label(sandbox),
        by: sender(c, shim_pid, k),
        ts_ns: k.ts_ns,
    })
}

/// What ended `init` (its wait status `status`).
fn cause(c: &Ctx, shim: Option<u32>, init: &Process, status: ExitStatus) -> Cause {
    if let Some(v) = oom_kill(c, init) {
        let o = v.oom().expect("oom_kill finds a marked process");
        return Cause::OomKiller {
            pid: v.pid,
            name: label(v),
            memcg: o.cgroup.as_deref().map(String::from),
            limit: o.limit,
            seq: o.seq,
        };
    }
    let (term, kill) = stop_signals(init);
    match (term, kill, status) {
        (Some(t), k, _) => Cause::StopContainer {
            term: sender(c, shim, t),
            kill: k.map(|k| sender(c, shim, k)),
            grace_ns: k
                .filter(|_| c.e.clock().has_time())
                .map(|k| k.ts_ns.saturating_sub(t.ts_ns)),
        },
        (None, Some(k), ExitStatus::Killed { signal, .. }) if signal == SIGKILL => {
            Cause::KilledAtOnce {
                kill: sender(c, shim, k),
                pod_stopped: pod_stopped(c, shim, init, k),
            }
        }
        (_, _, ExitStatus::Exited { code }) => Cause::Exit { code },
        (_, _, ExitStatus::Killed { signal, .. }) => {
            let name = crate::names::signal(signal);
            match init.killer().filter(|k| k.signal == signal) {
                // Sent by another process that the recording names.
                Some(k) if k.user_sent() && k.sender != init.pid && k.sender != 0 => {
                    Cause::Signal {
                        signal: name,
                        by: sender(c, shim, k),
                    }
                }
                // The kernel raised it (a fault), or the process sent it to itself.
                Some(k) if !k.user_sent() || k.sender == init.pid => Cause::Crash { signal: name },
                _ => Cause::Killed { signal: name },
            }
        }
    }
}

/// What kubelet would say of the life whose init is `init` (ended), started at its workload
/// exec.
pub(super) fn terminated(c: &Ctx, shim: Option<u32>, init: &Process) -> Option<Terminated> {
    let status = init.exit_status?;
    let end = init.exit_ts_ns?;
    let start = init
        .workload_exec_seq()
        .and_then(|s| init.exec_ts_ns(s))
        .unwrap_or(init.birth_ts_ns);
    let cause = cause(c, shim, init, status);
    let oom = matches!(cause, Cause::OomKiller { .. });
    Some(Terminated {
        reason: TermReason::of(status, oom),
        exit_code: exit_code(status),
        signal: match status {
            ExitStatus::Killed { signal, .. } => Some(signal),
            ExitStatus::Exited { .. } => None,
        },
        started_at: c.e.time_of(start),
        finished_at: c.e.time_of(end),
        started_ts_ns: start,
        finished_ts_ns: end,
        ran_ns: c.e.clock().has_time().then(|| end.saturating_sub(start)),
        cause,
    })
}

impl Sender {
    fn text(&self) -> String {
        match self.runtime_kill {
            true => format!("{} (runc kill, run by the shim)", self.name),
            false => self.name.clone(),
        }
    }
}

impl Cause {
    /// The cause in a few words, as far as the init's death shows it (a pod stop that comes
    /// after is told by its own step).
    pub fn text(&self) -> String {
        match self {
            Cause::Exit { code } => format!("its own exit (code {code})"),
            Cause::Crash { signal } => {
                format!("it crashed ({signal}, raised by the kernel or by itself)")
            }
            Cause::OomKiller {
                name, memcg, limit, ..
            } => {
                // Raw: a story's text is escaped where it is written out.
                let memcg = memcg.as_deref().unwrap_or("?");
                let limit = limit.map_or("not read".into(), crate::names::size);
                format!("the OOM killer chose {name} in memory cgroup {memcg} (limit {limit})")
            }
            Cause::StopContainer {
                term,
                kill,
                grace_ns,
            } => {
                let what = match term.runtime_kill {
                    true => "StopContainer",
                    false => "stopped",
                };
                let mut t = format!("{what}: SIGTERM by {}", term.text());
                match (kill, grace_ns) {
                    (Some(k), Some(g)) => t.push_str(&format!(
                        ", SIGKILL by {} {} after SIGTERM (the grace period)",
                        k.text(),
                        duration_text(*g)
                    )),
                    (Some(k), None) => t.push_str(&format!(", then SIGKILL by {}", k.text())),
                    (None, _) => t.push_str(", no SIGKILL needed"),
                }
                t
            }
            Cause::KilledAtOnce { kill, .. } => format!(
                "killed at once: SIGKILL by {} with no SIGTERM before (a stop with timeout 0)",
                kill.text()
            ),
            Cause::Killed { signal } => format!("killed by {signal}; the sender was not seen"),
            Cause::Signal { signal, by } => format!("{signal} sent by {}", by.text()),
        }
    }
}

impl PodStop {
    /// `StopPodSandbox: the pod's sandbox pause 3061 was killed at once too …`.
    pub fn text(&self, init: u32) -> String {
        format!(
            "StopPodSandbox: the pod's sandbox {} got SIGKILL at once too, from {}: init \
             {init} was stopped with its pod (timeout 0)",
            self.sandbox,
            self.by.text()
        )
    }
}

impl Terminated {
    /// `Terminated: OOMKilled, exit code 137, ran 3.2 s; the OOM killer chose …`.
    pub fn text(&self) -> String {
        let ran = self
            .ran_ns
            .map(|r| format!(", ran {}", duration_text(r)))
            .unwrap_or_default();
        format!(
            "Terminated: {}, exit code {}{ran}; {}",
            self.reason.as_str(),
            self.exit_code,
            self.cause.text()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = NS;

    #[test]
    fn reasons_and_exit_codes_are_the_kubelets() {
        let exited = |code| ExitStatus::Exited { code };
        let killed = |signal| ExitStatus::Killed {
            signal,
            core_dumped: false,
        };
        assert_eq!(TermReason::of(exited(0), false), TermReason::Completed);
        assert_eq!(TermReason::of(exited(3), false), TermReason::Error);
        assert_eq!(TermReason::of(killed(9), false), TermReason::Error);
        assert_eq!(TermReason::of(killed(9), true), TermReason::OomKilled);
        // An OOM kill in the memcg is OOMKilled even when the init then exited by itself.
        assert_eq!(TermReason::of(exited(1), true), TermReason::OomKilled);
        assert_eq!(exit_code(exited(3)), 3);
        assert_eq!(exit_code(killed(9)), 137);
        assert_eq!(exit_code(killed(15)), 143);
        assert_eq!(
            serde_json::to_value(TermReason::OomKilled).unwrap(),
            "OOMKilled"
        );
    }

    #[test]
    fn doubling_gaps_are_a_crash_loop_back_off() {
        // kubelet: 10 s, 20 s, 40 s..., each measured with a restart's own latency.
        assert!(is_back_off(&[
            10_400_000_000,
            20_300_000_000,
            40_900_000_000
        ]));
        assert!(is_back_off(&[2 * S, 10 * S, 20 * S, 40 * S]));
        // Capped at five minutes: 160 s, 300 s, 300 s still follow it.
        assert!(is_back_off(&[160 * S, 300 * S, 301 * S]));
        // Two doubling gaps are not yet three.
        assert!(!is_back_off(&[10 * S, 20 * S]));
        // Not doubling: steady, tripling, or doubling below kubelet's first back-off.
        assert!(!is_back_off(&[10 * S, 10 * S, 10 * S]));
        assert!(!is_back_off(&[10 * S, 30 * S, 90 * S]));
        assert!(!is_back_off(&[S, 2 * S, 4 * S]));
        // The last three count: a back-off broken by a quick restart is none.
        assert!(!is_back_off(&[10 * S, 20 * S, 40 * S, 5 * S]));
    }

    #[test]
    fn a_restart_carries_its_gaps_while_they_are_measured() {
        let r = restart(3, &[10 * S, 20 * S], Some(40 * S));
        assert_eq!(r.gaps_ns, vec![10 * S, 20 * S, 40 * S]);
        assert_eq!(r.back_off, Some("CrashLoopBackOff"));
        assert!(
            r.text().starts_with(
                "restarted 40.0 s after its last life ended (attempt 3; CrashLoopBackOff"
            ),
            "{}",
            r.text()
        );
        // A gap not measured starts the count again.
        let r = restart(4, &r.gaps_ns, None);
        assert!(r.gaps_ns.is_empty() && r.back_off.is_none());
        assert_eq!(r.text(), "restarted (attempt 4)");
        let many: Vec<u64> = (0..20).map(|_| 300 * S).collect();
        assert_eq!(restart(21, &many, Some(300 * S)).gaps_ns.len(), GAPS_KEPT);
    }
}
