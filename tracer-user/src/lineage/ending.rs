//! How processes end, as data: the signals a process's history keeps, the OOM killer's mark,
//! a death and how it is told, the SIGCHLD checks' counts. Built by the engine (`death.rs`);
//! read by every view.

use std::fmt;
use std::sync::Arc;

use crate::event::{Comm, ExitStatus, SignalResult};
use crate::names;

/// Signals kept per process (a shim reaps a SIGCHLD per child it ever had).
pub const MAX_SIGNALS: usize = 64;

/// SIGKILL.
pub(super) const SIGKILL: i32 = 9;
/// SIGCHLD.
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
    /// The source inferred the sender or the receiving thread's process
    /// ([`crate::event::SignalInfo::inferred`]).
    pub inferred: bool,
}

/// Who sent a signal whose `si_pid` is 0 although a process sent it (kill, tgkill,
/// sigqueue): the kernel writes 0 when the sender is outside the receiver's pid namespace
/// (kernel/signal.c: task_tgid_nr_ns() of a task the namespace cannot see).
pub const OUTSIDE_SENDER: &str = "a sender outside the receiver's pid namespace";

impl SignalRecord {
    /// Sent by a process (kill, tgkill, sigqueue: `si_code` ≤ 0), not raised by the kernel
    /// (SI_KERNEL, fault codes, CLD_*): only then does the sender stand for someone's choice.
    pub fn user_sent(&self) -> bool {
        self.code <= 0
    }

    /// A process sent it, but from outside the receiver's pid namespace, so its pid there is
    /// 0 (`OUTSIDE_SENDER`); the views never print that 0 as a pid.
    pub fn from_outside(&self) -> bool {
        self.sender == 0 && self.user_sent()
    }

    /// The sender in a few words: its pid (`(inferred)` after it when the source inferred
    /// it), `OUTSIDE_SENDER`, or `the kernel` for a signal it raised.
    pub fn sender_words(&self) -> String {
        match (self.sender, self.user_sent()) {
            (0, true) => OUTSIDE_SENDER.into(),
            (0, false) => "the kernel".into(),
            (pid, _) if self.inferred => format!("{pid} (inferred)"),
            (pid, _) => pid.to_string(),
        }
    }

    /// A death story lists it: its default action ends a process (signal(7) Term or Core) or
    /// it is the signal that did (`fatal`). Never SIGCHLD, nor SIGURG (Go's preemption),
    /// SIGWINCH, SIGCONT or a stop signal: they end no one, whatever the process did with
    /// them.
    pub fn tells_a_death(&self, fatal: Option<i32>) -> bool {
        self.signal != SIGCHLD && (terminates(self.signal) || fatal == Some(self.signal))
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
    /// Its time (the recording's `ts_ns`).
    pub ts_ns: u64,
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
    /// Time (`ts_ns`) of its end.
    pub ts_ns: Option<u64>,
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
            DeathHow::Signal => match self.by.filter(|b| b.user_sent()) {
                Some(b) if b.from_outside() => format!("killed {} from outside its pid ns", sig()),
                Some(b) => format!("killed {} by {}", sig(), b.sender_words()),
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
                    (Some(b), None) if b.from_outside() => write!(f, " sent by {OUTSIDE_SENDER}"),
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
                    Some(l) => write!(f, " (limit {})", crate::names::size(l)),
                    None => f.write_str(" (limit not read)"),
                }
            }
            (DeathHow::PidNs, _) => {
                f.write_str("killed by SIGKILL from its pid namespace's teardown (init ")?;
                if let Some(i) = self.ns_init {
                    write!(f, "{i} ")?;
                }
                f.write_str("died: zap_pid_ns_processes)")
            }
            _ => f.write_str("ended (how was not seen)"),
        }
    }
}

fn write_sender(f: &mut fmt::Formatter<'_>, b: &SignalRecord) -> fmt::Result {
    write!(f, " sent by {}", b.sender_words())?;
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
