//! Signals and deaths: who sent what to whom (kernel/signal.c __send_signal_locked(),
//! do_notify_parent()), the OOM killer's victims (mm/oom_kill.c mark_oom_victim()), and how
//! each process ended.
//!
//! A death is told from what the kernel said at the time: the wait status of the last thread
//! (sched_process_exit), the last terminating signal it was sent, an OOM mark, or the death of
//! its pid namespace's init (zap_pid_ns_processes(), which the engine models when that init
//! ends). SIGCHLD is a second kernel word on the parent: do_notify_parent() sends it to the
//! parent of record at that moment, and the engine checks it against the model.

use std::fmt;
use std::sync::Arc;

use crate::event::{Comm, ExitStatus, OomInfo, SignalInfo, SignalResult};
use crate::names::{self, si_code};

use super::engine::{Engine, WarningKind};
use super::process::{ProcId, Process};
use super::transition::Actor;

/// Signals kept per process (a shim reaps a SIGCHLD per child it ever had).
pub const MAX_SIGNALS: usize = 64;

const SIGKILL: i32 = 9;
pub(super) const SIGCHLD: i32 = 17;

/// One generated signal, as a process's history keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SignalRecord {
    /// Seq of the event.
    pub seq: u64,
    /// Its time (boot-time ns; 0 when the source had none).
    pub ts_ns: u64,
    /// The signal number.
    pub signal: i32,
    /// `si_code`.
    pub code: i32,
    /// The sending process (0: the source could not tell).
    pub sender: u32,
    /// The sending thread (0: unknown).
    pub sender_tid: u32,
    /// The sender's name then (empty when unknown).
    pub sender_comm: Comm,
    /// The target process.
    pub target: u32,
    /// The target thread.
    pub target_tid: u32,
    /// What the kernel did with it.
    pub result: SignalResult,
}

impl SignalRecord {
    /// Sent by a process (kill, tgkill, sigqueue: `si_code` ≤ 0), not raised by the kernel
    /// (SI_KERNEL, fault codes, CLD_*): only then does the sender stand for someone's choice.
    pub fn user_sent(&self) -> bool {
        self.code <= 0
    }

    /// `SIGTERM` by name.
    pub fn signal_name(&self) -> String {
        names::signal(self.signal)
    }

    /// `SI_USER` by name.
    pub fn code_name(&self) -> String {
        names::si_code(self.signal, self.code)
    }
}

/// The OOM killer's choice of a process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OomMark {
    /// Seq of the oom_victim event.
    pub seq: u64,
    /// The memory cgroup it was killed in: what the capture read, else the model's cgroup of
    /// the process (its reported hierarchy; runtimes use one path in every controller).
    pub cgroup: Option<Arc<str>>,
    /// The memory limit in force (bytes), when read.
    pub limit: Option<u64>,
    /// Its anonymous resident memory then (KiB).
    pub anon_rss_kb: u64,
}

/// How a process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeathHow {
    /// exit(2) / exit_group(2), or returning from main.
    Exit,
    /// A signal whose default action ends the process.
    Signal,
    /// The OOM killer's SIGKILL.
    Oom,
    /// Its pid namespace's init died: zap_pid_ns_processes() killed it.
    PidNs,
    /// It ended, but the source did not show how.
    Unknown,
}

impl DeathHow {
    /// As in JSON: `exit`, `signal`, `oom`, `pidns`, `unknown`.
    pub fn as_str(self) -> &'static str {
        match self {
            DeathHow::Exit => "exit",
            DeathHow::Signal => "signal",
            DeathHow::Oom => "oom",
            DeathHow::PidNs => "pidns",
            DeathHow::Unknown => "unknown",
        }
    }
}

/// A process's death, as the recording tells it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Death {
    /// How it ended.
    pub how: DeathHow,
    /// The wait status, when seen.
    pub status: Option<ExitStatus>,
    /// The signal that killed it, when the recording showed it being sent.
    pub by: Option<SignalRecord>,
    /// The OOM killer's mark (`how` is `Oom`).
    pub oom: Option<OomMark>,
    /// The init whose death killed it (`how` is `PidNs`).
    pub ns_init: Option<u32>,
    /// Seq of its end.
    pub seq: Option<u64>,
}

impl Death {
    /// The fatal signal, when a signal ended it.
    pub fn signal(&self) -> Option<i32> {
        match self.status {
            Some(ExitStatus::Killed { signal, .. }) => Some(signal),
            _ => None,
        }
    }

    /// Who sent the fatal signal, when a process chose to (`None` for the kernel's own).
    pub fn sender(&self) -> Option<&SignalRecord> {
        self.by.as_ref().filter(|b| b.user_sent() && b.sender != 0)
    }

    /// A few words for a tree label: `exit 0`, `killed SIGTERM by 812`, `OOMKilled`.
    pub fn short(&self) -> String {
        let sig = || self.signal().map(names::signal).unwrap_or_default();
        match self.how {
            DeathHow::Exit => match self.status {
                Some(ExitStatus::Exited { code }) => format!("exit {code}"),
                _ => "exited".into(),
            },
            DeathHow::Signal => match self.sender() {
                Some(b) => format!("killed {} by {}", sig(), b.sender),
                None => format!("killed {}", sig()),
            },
            DeathHow::Oom => "OOMKilled".into(),
            DeathHow::PidNs => match self.ns_init {
                Some(i) => format!("killed {}: pid ns init {i} died", sig()),
                None => format!("killed {}: pid ns init died", sig()),
            },
            DeathHow::Unknown => "exited".into(),
        }
    }
}

impl fmt::Display for Death {
    /// `killed by SIGTERM sent by 812 (sh, thread 813)`, `OOM-killed in cgroup /x (limit
    /// 33554432 bytes)`...
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.how, self.status) {
            (DeathHow::Exit, Some(st)) => write!(f, "{st}"),
            (DeathHow::Signal, Some(st)) => {
                write!(f, "{st}")?;
                match (&self.by, self.sender()) {
                    (Some(_), Some(b)) => write_sender(f, b),
                    (Some(b), None) => write!(f, " raised by the kernel ({})", b.code_name()),
                    (None, _) => f.write_str(" (the sender was not seen)"),
                }
            }
            (DeathHow::Oom, _) => {
                f.write_str("OOM-killed")?;
                let oom = self.oom.as_ref();
                if let Some(cg) = oom.and_then(|o| o.cgroup.as_deref()) {
                    write!(f, " in cgroup {}", crate::escape::escape(cg))?;
                }
                match oom.and_then(|o| o.limit) {
                    Some(l) => write!(f, " (limit {l} bytes)"),
                    None => f.write_str(" (limit not read)"),
                }
            }
            (DeathHow::PidNs, _) => {
                write!(f, "killed by SIGKILL: its pid namespace's init")?;
                if let Some(i) = self.ns_init {
                    write!(f, " {i}")?;
                }
                f.write_str(" died (zap_pid_ns_processes)")
            }
            _ => f.write_str("ended (how was not seen)"),
        }
    }
}

fn write_sender(f: &mut fmt::Formatter<'_>, b: &SignalRecord) -> fmt::Result {
    write!(f, " sent by {}", b.sender)?;
    let comm = crate::escape::escape(&b.sender_comm.to_string()).into_owned();
    match (
        comm.is_empty(),
        b.sender_tid != 0 && b.sender_tid != b.sender,
    ) {
        (false, true) => write!(f, " ({comm}, thread {})", b.sender_tid),
        (false, false) => write!(f, " ({comm})"),
        (true, true) => write!(f, " (thread {})", b.sender_tid),
        (true, false) => Ok(()),
    }
}

/// The default action of `sig` ends the process (signal(7): Term or Core).
pub fn terminates(sig: i32) -> bool {
    !matches!(sig, 17..=23 | 28) && (1..=64).contains(&sig)
}

impl Process {
    /// How it ended; `None` while it lives.
    pub fn death(&self) -> Option<Death> {
        if !self.exited {
            return None;
        }
        let mut d = Death {
            how: DeathHow::Unknown,
            status: self.exit_status,
            by: None,
            oom: None,
            ns_init: None,
            seq: self.exit_seq,
        };
        match self.exit_status {
            None => {}
            Some(ExitStatus::Exited { .. }) => d.how = DeathHow::Exit,
            Some(ExitStatus::Killed { signal, .. }) => {
                d.by = self.killer.filter(|k| k.signal == signal);
                d.how = DeathHow::Signal;
                if signal == SIGKILL {
                    if let Some(o) = &self.oom {
                        d.how = DeathHow::Oom;
                        d.oom = Some(o.clone());
                    } else if let Some((init, _)) = self.zapped_by {
                        d.how = DeathHow::PidNs;
                        d.ns_init = Some(init);
                    }
                }
            }
        }
        Some(d)
    }
}

/// What the SIGCHLD checks found: do_notify_parent()'s recipient against the model's parent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SigchldChecks {
    /// The recipient was the model's parent (or the reaper a zombie was handed to).
    pub agreed: u64,
    /// It was not: a model/kernel disagreement (each also a warning).
    pub disagreed: u64,
    /// The child was not known to the model (outside the recording), so nothing to check.
    pub unchecked: u64,
}

impl Engine {
    /// A generated signal: kept on the target's and the sender's records, the fatal one as
    /// the target's `killer`; a SIGCHLD from do_notify_parent() checked against the model.
    pub(super) fn on_signal(&mut self, a: &Actor, info: &SignalInfo) {
        let sender_id = self.live_or_newest(info.sender);
        let sender_comm = match sender_id {
            _ if a.pid == info.sender && !a.comm.is_empty() => a.comm,
            Some(id) => self.procs[id].comm,
            None => Comm::default(),
        };
        let rec = SignalRecord {
            seq: a.seq,
            ts_ns: a.ts_ns,
            signal: info.signal,
            code: info.code,
            sender: info.sender,
            sender_tid: info.sender_tid,
            sender_comm,
            target: info.target,
            target_tid: info.target_tid,
            result: info.result,
        };
        let target_id = self.live_or_newest(info.target);
        if let Some(t) = target_id {
            keep_signal(&mut self.procs[t], rec);
            let p = &mut self.procs[t];
            if terminates(rec.signal) && rec.result != SignalResult::Ignored && !p.exited {
                p.killer = Some(rec);
            }
        }
        if let Some(s) = sender_id.filter(|&s| Some(s) != target_id) {
            keep_signal(&mut self.procs[s], rec);
        }
        if rec.signal == SIGCHLD && (1..=si_code::CLD_CONTINUED).contains(&rec.code) {
            self.check_sigchld(&rec);
        }
    }

    /// The newest record of `pid` (0: none).
    fn live_or_newest(&self, pid: u32) -> Option<ProcId> {
        (pid != 0).then(|| self.by_pid.get(&pid).copied()).flatten()
    }

    /// do_notify_parent() sends SIGCHLD to the child's parent of record (kernel/signal.c);
    /// a dying process hands its zombie children to their new reaper with one more each
    /// (kernel/exit.c reparent_leader()), in which the live probe's current task is the dying
    /// parent and an strace log's `si_pid` is the zombie.
    fn check_sigchld(&mut self, rec: &SignalRecord) {
        let Some(child) = self.live_or_newest(rec.sender) else {
            self.sigchld.unchecked += 1;
            return;
        };
        let c = &self.procs[child];
        let model = c.ppid;
        let handed_over = |e: &Engine, dead: Option<ProcId>| {
            dead.is_some_and(|d| e.procs[d].exited && e.reaper_pid(d) == Some(rec.target))
        };
        let agrees = model == rec.target
            || rec.target == 0
            || handed_over(self, c.parent)
            || (c.children.iter().any(|&k| self.procs[k].exited) && handed_over(self, Some(child)));
        if agrees {
            self.sigchld.agreed += 1;
            return;
        }
        self.sigchld.disagreed += 1;
        let kind = WarningKind::SigchldDisagreement {
            pid: rec.sender,
            model,
            kernel: rec.target,
        };
        self.warn(rec.seq, kind);
    }

    /// The OOM killer chose the process of thread `info.tid`.
    pub(super) fn on_oom_victim(&mut self, a: &Actor, info: &OomInfo) {
        let Some(id) = self.record_of_tid(info.tid) else {
            return;
        };
        let p = &mut self.procs[id];
        p.oom = Some(OomMark {
            seq: a.seq,
            cgroup: info.cgroup.as_deref().map(Arc::from).or(p.cgroup.clone()),
            limit: info.limit,
            anon_rss_kb: info.anon_rss_kb,
        });
    }

    /// zap_pid_ns_processes(): the init of a pid namespace died, and the kernel kills every
    /// process left in it (those of `runc exec` included, whose parents are outside).
    pub(super) fn zap_namespace(&mut self, init: ProcId, seq: u64) {
        let Some(ns) = self.procs[init].pidns else {
            return;
        };
        let init_pid = self.procs[init].pid;
        for p in self.procs.iter_mut() {
            if p.pidns.is_some_and(|n| n.inum == ns.inum) && !p.exited && p.id != init {
                p.zapped_by = Some((init_pid, seq));
            }
        }
    }

    /// The SIGCHLD checks so far.
    pub fn sigchld_checks(&self) -> SigchldChecks {
        self.sigchld
    }
}

fn keep_signal(p: &mut Process, rec: SignalRecord) {
    if p.signals.len() < MAX_SIGNALS {
        p.signals.push(rec);
    } else {
        p.signals_dropped = p.signals_dropped.saturating_add(1);
    }
}
