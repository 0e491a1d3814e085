//! The decoded event model: what the probes report, what strace import produces, what the
//! lineage engine consumes and what trace files store. Owned, plain data, no OS access.

use serde::{Deserialize, Serialize};
use std::fmt;

pub use tracer_common::{clone_flags, prctl as prctl_opt};

mod kind;
pub mod program;
pub use kind::{EventKind, Kind, KindRow};

/// Which syscall an event belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Syscall {
    /// `clone(2)`.
    Clone,
    /// `clone3(2)`.
    Clone3,
    /// `fork(2)`.
    Fork,
    /// `vfork(2)`.
    Vfork,
    /// `execve(2)`.
    Execve,
    /// `execveat(2)`.
    Execveat,
    /// `exit(2)`: ends the calling thread.
    Exit,
    /// `exit_group(2)`: ends every thread of the process.
    ExitGroup,
    /// `prctl(2)`.
    Prctl,
}

impl Syscall {
    /// From the wire id in `tracer_common::syscall`; `None` for unknown ids.
    pub fn from_wire(id: u32) -> Option<Syscall> {
        use tracer_common::syscall as s;
        Some(match id {
            s::CLONE => Syscall::Clone,
            s::CLONE3 => Syscall::Clone3,
            s::FORK => Syscall::Fork,
            s::VFORK => Syscall::Vfork,
            s::EXECVE => Syscall::Execve,
            s::EXECVEAT => Syscall::Execveat,
            s::EXIT => Syscall::Exit,
            s::EXIT_GROUP => Syscall::ExitGroup,
            s::PRCTL => Syscall::Prctl,
            _ => return None,
        })
    }

    /// The wire id in `tracer_common::syscall`.
    pub fn to_wire(self) -> u32 {
        use tracer_common::syscall as s;
        match self {
            Syscall::Clone => s::CLONE,
            Syscall::Clone3 => s::CLONE3,
            Syscall::Fork => s::FORK,
            Syscall::Vfork => s::VFORK,
            Syscall::Execve => s::EXECVE,
            Syscall::Execveat => s::EXECVEAT,
            Syscall::Exit => s::EXIT,
            Syscall::ExitGroup => s::EXIT_GROUP,
            Syscall::Prctl => s::PRCTL,
        }
    }

    /// The syscall's name (`exit_group`).
    pub fn name(self) -> &'static str {
        match self {
            Syscall::Clone => "clone",
            Syscall::Clone3 => "clone3",
            Syscall::Fork => "fork",
            Syscall::Vfork => "vfork",
            Syscall::Execve => "execve",
            Syscall::Execveat => "execveat",
            Syscall::Exit => "exit",
            Syscall::ExitGroup => "exit_group",
            Syscall::Prctl => "prctl",
        }
    }

    /// From a syscall name (`clone3`); `None` for other syscalls.
    pub fn from_name(name: &str) -> Option<Syscall> {
        Some(match name {
            "clone" => Syscall::Clone,
            "clone3" => Syscall::Clone3,
            "fork" => Syscall::Fork,
            "vfork" => Syscall::Vfork,
            "execve" => Syscall::Execve,
            "execveat" => Syscall::Execveat,
            "exit" => Syscall::Exit,
            "exit_group" => Syscall::ExitGroup,
            "prctl" => Syscall::Prctl,
            _ => return None,
        })
    }

    /// clone, clone3, fork or vfork.
    pub fn creates_task(self) -> bool {
        matches!(
            self,
            Syscall::Clone | Syscall::Clone3 | Syscall::Fork | Syscall::Vfork
        )
    }

    /// execve or execveat.
    pub fn is_exec(self) -> bool {
        matches!(self, Syscall::Execve | Syscall::Execveat)
    }
}

impl fmt::Display for Syscall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A task name as the kernel keeps it: at most 15 bytes. Stored inline (no allocation per event).
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Comm {
    len: u8,
    bytes: [u8; 16],
}

impl Comm {
    /// From a NUL-padded kernel buffer; stops at the first NUL.
    pub fn from_bytes(raw: &[u8]) -> Comm {
        let end = raw
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(raw.len())
            .min(16);
        let mut bytes = [0u8; 16];
        bytes[..end].copy_from_slice(&raw[..end]);
        Comm {
            len: end as u8,
            bytes,
        }
    }

    /// From a string, cut to 15 bytes like the kernel does (on a char boundary).
    pub fn new(s: &str) -> Comm {
        let mut end = s.len().min(15);
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        Comm::from_bytes(&s.as_bytes()[..end])
    }

    /// The name's bytes (at most 16, no NUL).
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }

    /// No name known.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Lossy text form (kernel comms are bytes, not necessarily UTF-8).
    pub fn to_str_lossy(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(self.as_bytes())
    }
}

impl fmt::Display for Comm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_str_lossy())
    }
}

impl fmt::Debug for Comm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.to_str_lossy())
    }
}

impl Serialize for Comm {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_str_lossy())
    }
}

/// Read back from its JSON text: at most 16 bytes, as the kernel's buffer (longer text is cut
/// as [`Comm::new`] cuts it).
impl<'de> Deserialize<'de> for Comm {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Comm, D::Error> {
        let s = std::borrow::Cow::<'de, str>::deserialize(d)?;
        Ok(match s.len() {
            0..=16 => Comm::from_bytes(s.as_bytes()),
            _ => Comm::new(&s),
        })
    }
}

/// A string captured from the kernel or a log, with whether it was cut short.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CapturedStr {
    /// The text (lossy UTF-8).
    pub value: String,
    /// The source cut it short (probe buffer or strace's `...`).
    pub truncated: bool,
}

impl CapturedStr {
    /// A complete (not truncated) string.
    pub fn new(value: impl Into<String>) -> Self {
        CapturedStr {
            value: value.into(),
            truncated: false,
        }
    }
}

/// Clone flags (without the exit signal), rendered by name in JSON.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CloneFlags(pub u64);

impl CloneFlags {
    /// All bits of `bit` set.
    pub fn contains(self, bit: u64) -> bool {
        self.0 & bit == bit
    }
}

impl Serialize for CloneFlags {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&crate::names::clone_flags(self.0))
    }
}

/// Read back from the names [`Serialize`] writes (`CLONE_VM|CLONE_VFORK`, unknown bits in hex).
impl<'de> Deserialize<'de> for CloneFlags {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<CloneFlags, D::Error> {
        let s = std::borrow::Cow::<'de, str>::deserialize(d)?;
        match crate::names::parse_clone_flags(&s) {
            Some((flags, 0)) => Ok(CloneFlags(flags)),
            _ => Err(serde::de::Error::custom(
                "clone flags that are not CLONE_* names or a number",
            )),
        }
    }
}

/// The pid namespace a task lives in, and its pid there.
///
/// The kernel keeps one `struct upid` per level in `task->thread_pid->numbers[]`; the task's
/// own namespace is the deepest one (`numbers[level]`). Level 0 is the host (initial)
/// namespace, where `ns_pid` is the host pid.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PidNs {
    /// The namespace's inode number (`/proc/PID/ns/pid` shows `pid:[INUM]`). Kernel inode
    /// numbers are 32-bit: a larger value ([`PidNs::inferred`]) is an id the strace importer
    /// gave a namespace it inferred (strace logs cannot see namespaces).
    pub inum: u64,
    /// Nesting depth: 0 for the host namespace, 1 for a container's, ...
    pub level: u32,
    /// The task's pid inside that namespace (`getpid()` there); 0 when unknown.
    pub ns_pid: u32,
}

impl PidNs {
    /// First id of namespaces a source inferred rather than saw.
    pub const INFERRED: u64 = 1 << 32;

    /// A namespace the source inferred, with an id of its own (`n` < 2^32).
    pub fn inferred(n: u64, level: u32, ns_pid: u32) -> PidNs {
        PidNs {
            inum: Self::INFERRED | n,
            level,
            ns_pid,
        }
    }

    /// The namespace is known by its kernel inode (not merely inferred).
    pub fn is_known(&self) -> bool {
        self.inum != 0 && self.inum < Self::INFERRED
    }
}

/// The tid/tgid an strace log's initial process gets while the log has not revealed its pid
/// (strace prints no pid for the process it started).
pub const UNKNOWN_PID: u32 = 0;

/// One lifecycle event. Its JSON (one object, the kind's fields beside the common ones) reads
/// back into the same event; fields it does not know are ignored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Event {
    /// Global sequence number; consecutive unless events were lost.
    pub seq: u64,
    /// Boot-time nanoseconds (CLOCK_BOOTTIME). 0 when the source had no timestamps.
    pub ts_ns: u64,
    /// Process id (thread-group id) of the task the event happened in.
    pub tgid: u32,
    /// Thread id of that task.
    pub tid: u32,
    /// Its real parent's tgid at the time, 0 when unknown (strace logs do not say).
    pub ppid: u32,
    /// Real uid; `u32::MAX` when unknown.
    pub uid: u32,
    /// cgroup v2 id; 0 when unknown.
    pub cgroup_id: u64,
    /// Task name at the time of the event (empty when unknown).
    pub comm: Comm,
    /// What happened.
    #[serde(flatten)]
    pub kind: EventKind,
}

/// An event as its JSON line: its fields, then its wall time on the recording's clock.
#[derive(Serialize)]
pub struct TimedEvent<'a> {
    #[serde(flatten)]
    event: &'a Event,
    /// RFC 3339 UTC with nanoseconds, when the clock has a date; else null.
    time: Option<String>,
    /// The time of day alone, for a clock that has no date (an strace `-t`/`-tt` log).
    #[serde(skip_serializing_if = "Option::is_none")]
    time_of_day: Option<String>,
}

impl Event {
    /// This event with its wall time from `clock` (the recording's own), for JSON lines.
    pub fn timed(&self, clock: &crate::clock::Clock) -> TimedEvent<'_> {
        TimedEvent {
            event: self,
            time: clock.rfc3339(self.ts_ns),
            time_of_day: clock.time_of_day(self.ts_ns),
        }
    }

    /// An event of thread `tid` of process `tgid` that carries only its identity: ppid, uid
    /// and cgroup id 0. What tests, examples and hand-made streams build.
    pub fn bare(seq: u64, ts_ns: u64, tgid: u32, tid: u32, comm: &str, kind: EventKind) -> Event {
        Event {
            seq,
            ts_ns,
            tgid,
            tid,
            ppid: 0,
            uid: 0,
            cgroup_id: 0,
            comm: Comm::new(comm),
            kind,
        }
    }
}

/// [`Event`]'s own fields, as its JSON holds them.
#[derive(Deserialize)]
struct EventJson {
    seq: u64,
    ts_ns: u64,
    tgid: u32,
    tid: u32,
    ppid: u32,
    uid: u32,
    cgroup_id: u64,
    comm: Comm,
}

/// The names [`EventJson`] reads.
const EVENT_FIELDS: [&str; 8] = [
    "seq",
    "ts_ns",
    "tgid",
    "tid",
    "ppid",
    "uid",
    "cgroup_id",
    "comm",
];

/// Read back from the one object [`Serialize`] writes. A kind's field may share a name with
/// the event's own (`cgroup_attach` has its destination's `cgroup_id` after the event's), so
/// the object is read in order: each name's first occurrence is the event's, the rest the
/// kind's.
impl<'de> Deserialize<'de> for Event {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Event, D::Error> {
        struct Fields;
        impl<'de> serde::de::Visitor<'de> for Fields {
            type Value = Event;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an event object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut m: A) -> Result<Event, A::Error> {
                use serde::de::Error;
                use serde_json::{Map, Value};
                let (mut own, mut kind) = (Map::new(), Map::new());
                while let Some((k, v)) = m.next_entry::<String, Value>()? {
                    match EVENT_FIELDS.contains(&k.as_str()) && !own.contains_key(&k) {
                        true => own.insert(k, v),
                        false => kind.insert(k, v),
                    };
                }
                let e = EventJson::deserialize(Value::Object(own)).map_err(A::Error::custom)?;
                let kind = EventKind::deserialize(Value::Object(kind)).map_err(A::Error::custom)?;
                Ok(Event {
                    seq: e.seq,
                    ts_ns: e.ts_ns,
                    tgid: e.tgid,
                    tid: e.tid,
                    ppid: e.ppid,
                    uid: e.uid,
                    cgroup_id: e.cgroup_id,
                    comm: e.comm,
                    kind,
                })
            }
        }
        d.deserialize_map(Fields)
    }
}

/// Most bytes of a prctl's arguments kept as an strace log wrote them.
pub const MAX_SHOWN_ARGS: usize = 256;

/// What an strace log showed of a prctl call that the option and arg2 do not hold.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrctlShown {
    /// The arguments as strace wrote them (`PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_KILL,
    /// 0, 0`: symbolic names kept), when they are printable ASCII of at most
    /// [`MAX_SHOWN_ARGS`] bytes (else none: the option and arg2 are printed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<String>,
    /// What a `PR_GET_*` call that returned 0 wrote to arg2's address, as strace printed it
    /// (`PR_GET_CHILD_SUBREAPER, [1]`): an observation of the flag from this event on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<u64>,
}

/// A task's credentials and executable as the kernel has them right after an exec (or as
/// /proc shows them for a process that existed before tracing): what decides whether a
/// process may speak for a container (docs/lineage.md, "Who may speak for a container").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ExecCred {
    /// Effective uid (in the initial user namespace's terms).
    pub euid: u32,
    /// Filesystem uid: whose files it may write.
    pub fsuid: u32,
    /// Nesting level of its user namespace: 0 for the initial one. /proc shows only whether
    /// it is the initial one (PID 1's), so a snapshot says 1 for any other.
    pub userns_level: u32,
    /// Nesting level of its pid namespace: 0 for the host's.
    pub pidns_level: u32,
    /// Its mount namespace's inode number (0 when unknown).
    pub mnt_ns: u32,
    /// That mount namespace is the host's (PID 1's).
    pub host_mnt: bool,
    /// The file it runs, when read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exe: Option<ExeFile>,
    /// The runtime program that file is, as the capture judged it by its device and inode
    /// ([`program::Installed`]); None where nothing judged it (an older
    /// recording, an unread executable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<program::Program>,
}

/// The inode of a process's executable (`mm->exe_file`, `/proc/PID/exe`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ExeFile {
    /// Its device, as `stat(2)`'s `st_dev` gives it.
    pub dev: u64,
    /// Its inode number.
    pub ino: u64,
    /// Its owner (uid).
    pub uid: u32,
    /// Its mode (type and permission bits, `st_mode`).
    pub mode: u32,
    /// Its hard links: 0 for a memfd (runc re-executes itself from a sealed one) or a deleted
    /// file, which no other process can open by a path to write.
    pub nlink: u32,
}

impl ExeFile {
    /// Only root can change the file: owned by root and not writable by group or others —
    /// unless it has no name left (a memfd, as runc re-executes itself from a sealed one, or
    /// a deleted file), which nobody can open by a path to write.
    pub fn roots_alone(&self) -> bool {
        self.uid == 0 && (self.mode & 0o022 == 0 || self.nlink == 0)
    }
}

/// What the kernel did with a generated signal (include/trace/events/signal.h `TRACE_SIGNAL_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SignalResult {
    /// Queued for the target (strace's lines are all of this kind).
    Delivered,
    /// The target ignores it (SIG_IGN, or the default action is to ignore).
    Ignored,
    /// A non-realtime signal already pending: merged into it.
    AlreadyPending,
    /// A realtime signal that could not be queued.
    OverflowFail,
    /// Queued without its siginfo.
    LoseInfo,
    /// A value this tracer does not know.
    Other,
}

impl SignalResult {
    /// From the tracepoint's `result` field.
    pub fn from_wire(v: u32) -> SignalResult {
        match v {
            0 => SignalResult::Delivered,
            1 => SignalResult::Ignored,
            2 => SignalResult::AlreadyPending,
            3 => SignalResult::OverflowFail,
            4 => SignalResult::LoseInfo,
            _ => SignalResult::Other,
        }
    }

    /// Back to the tracepoint's value (`Other` as 5).
    pub fn to_wire(self) -> u32 {
        self as u32
    }
}

/// A generated signal: who sent which signal to whom, and what the kernel did with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize)]
#[serde(try_from = "SignalJson")]
pub struct SignalInfo {
    /// The signal number.
    pub signal: i32,
    /// `si_code` (`SI_USER`, `SI_KERNEL`, `CLD_EXITED`...; [`crate::names::si_code()`]).
    pub code: i32,
    /// The sending process (tgid); 0 when the source cannot tell (strace: a signal the kernel
    /// raised names no sender).
    pub sender: u32,
    /// The sending thread; 0 when unknown.
    pub sender_tid: u32,
    /// The target process (tgid); 0 when unknown.
    pub target: u32,
    /// The target thread (the process's leader for a signal to the whole process).
    pub target_tid: u32,
    /// Sent to the thread group (kill) rather than one thread (tgkill).
    pub group: bool,
    /// What the kernel did with it.
    pub result: SignalResult,
    /// The source inferred the sender or the receiving thread's process rather than saw it:
    /// an strace log's `si_pid` that no clone in the log gave, tied to the exit just before
    /// the SIGCHLD, or a thread the log never created, taken as one of the child's parent.
    /// The probes see both and never infer. JSON: written only when true.
    pub inferred: bool,
}

impl Serialize for SignalInfo {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("SignalInfo", 8 + usize::from(self.inferred))?;
        st.serialize_field("signal", &crate::names::signal(self.signal))?;
        st.serialize_field("code", &crate::names::si_code(self.signal, self.code))?;
        st.serialize_field("sender", &self.sender)?;
        st.serialize_field("sender_tid", &self.sender_tid)?;
        st.serialize_field("target", &self.target)?;
        st.serialize_field("target_tid", &self.target_tid)?;
        st.serialize_field("group", &self.group)?;
        st.serialize_field("result", &self.result)?;
        if self.inferred {
            st.serialize_field("inferred", &true)?;
        }
        st.end()
    }
}

/// [`SignalInfo`]'s JSON, its signal and code by name, as [`Serialize`] writes them.
#[derive(Deserialize)]
struct SignalJson {
    signal: String,
    code: String,
    sender: u32,
    sender_tid: u32,
    target: u32,
    target_tid: u32,
    group: bool,
    result: SignalResult,
    #[serde(default)]
    inferred: bool,
}

impl TryFrom<SignalJson> for SignalInfo {
    type Error = &'static str;
    fn try_from(j: SignalJson) -> Result<SignalInfo, &'static str> {
        let signal = crate::names::signal_number(&j.signal)
            .or_else(|| j.signal.parse().ok())
            .ok_or("a signal that is neither a SIG* name nor a number")?;
        let code = crate::names::si_code_number(&j.code)
            .ok_or("an si_code that is neither a name nor a number")?;
        Ok(SignalInfo {
            signal,
            code,
            sender: j.sender,
            sender_tid: j.sender_tid,
            target: j.target,
            target_tid: j.target_tid,
            group: j.group,
            result: j.result,
            inferred: j.inferred,
        })
    }
}

/// The OOM killer's victim (oom:mark_victim) and the memory cgroup it was killed in.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct OomInfo {
    /// The victim thread (the tracepoint's `pid`, host namespace).
    pub tid: u32,
    /// Its virtual memory, anonymous, file and shared-memory RSS, page tables (KiB).
    pub total_vm_kb: u64,
    /// Anonymous resident memory (KiB).
    pub anon_rss_kb: u64,
    /// File-backed resident memory (KiB).
    pub file_rss_kb: u64,
    /// Shared-memory resident memory (KiB).
    pub shmem_rss_kb: u64,
    /// Its `oom_score_adj`.
    pub oom_score_adj: i32,
    /// The memory cgroup the victim was in (the pod's or container's), when the capture
    /// could read it.
    pub cgroup: Option<String>,
    /// That cgroup's memory limit in bytes (`memory.max` / `memory.limit_in_bytes`), when
    /// one was set and readable.
    pub limit: Option<u64>,
}

/// How a task ended, decoded from a wait(2) status word.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "how", rename_all = "snake_case")]
pub enum ExitStatus {
    /// Exited normally.
    Exited {
        /// The exit code (0-255).
        code: i32,
    },
    /// Killed by a signal.
    Killed {
        /// The signal number.
        signal: i32,
        /// A core dump was written.
        core_dumped: bool,
    },
}

impl ExitStatus {
    /// From a wait(2) status word.
    pub fn from_wait_status(status: u32) -> ExitStatus {
        let sig = (status & 0x7f) as i32;
        if sig == 0 {
            ExitStatus::Exited {
                code: ((status >> 8) & 0xff) as i32,
            }
        } else {
            ExitStatus::Killed {
                signal: sig,
                core_dumped: status & 0x80 != 0,
            }
        }
    }

    /// Back to a wait(2) status word.
    pub fn to_wait_status(self) -> u32 {
        match self {
            ExitStatus::Exited { code } => ((code as u32) & 0xff) << 8,
            ExitStatus::Killed {
                signal,
                core_dumped,
            } => (signal as u32 & 0x7f) | if core_dumped { 0x80 } else { 0 },
        }
    }
}

impl fmt::Display for ExitStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ExitStatus::Exited { code } => write!(f, "exited with {code}"),
            ExitStatus::Killed {
                signal,
                core_dumped,
            } => {
                write!(f, "killed by {}", crate::names::signal(signal))?;
                if core_dumped {
                    f.write_str(" (core dumped)")?;
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comm_stops_at_nul_and_caps_at_16() {
        assert_eq!(Comm::from_bytes(b"sh\0garbage").to_string(), "sh");
        assert_eq!(Comm::from_bytes(&[b'a'; 20]).as_bytes().len(), 16);
        assert_eq!(
            Comm::new("runc:[2:INIT]xxxxxxxx").to_string(),
            "runc:[2:INIT]xx"
        );
    }

    #[test]
    fn wait_status_round_trips() {
        for s in [
            ExitStatus::Exited { code: 3 },
            ExitStatus::Killed {
                signal: 9,
                core_dumped: false,
            },
        ] {
            assert_eq!(ExitStatus::from_wait_status(s.to_wait_status()), s);
        }
        assert_eq!(
            ExitStatus::from_wait_status(0x8b),
            ExitStatus::Killed {
                signal: 11,
                core_dumped: true
            }
        );
    }

    #[test]
    fn syscall_wire_ids_round_trip() {
        for id in 1..=9 {
            let s = Syscall::from_wire(id).unwrap();
            assert_eq!(s.to_wire(), id);
            assert_eq!(Syscall::from_name(s.name()), Some(s));
        }
        assert_eq!(Syscall::from_wire(0), None);
        assert_eq!(Syscall::from_wire(99), None);
    }
}

/// A process that existed before tracing, as read from /proc.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotProcess {
    /// Process id.
    pub pid: u32,
    /// Parent process id (0 when unknown).
    pub ppid: u32,
    /// Task name.
    pub comm: String,
    /// Executable path, when readable.
    pub exe: Option<String>,
    /// Command line.
    pub argv: Vec<String>,
    /// Thread ids (the leader's included or not; it is added).
    pub threads: Vec<u32>,
    /// PR_SET_CHILD_SUBREAPER, if the source knows it (/proc does not show it).
    pub subreaper: bool,
    /// Its pid namespace and pid there, when the source knows them.
    pub ns: Option<PidNs>,
    /// The tracer started it (the command of `tracer trace -- CMD`); `ppid` is the tracer.
    pub launched: bool,
    /// Its cgroup in the reported hierarchy (`/proc/PID/cgroup`), when read.
    pub cgroup: Option<String>,
    /// Its real uid, when read (`u32::MAX` otherwise, as in events).
    pub uid: u32,
    /// Its credentials and executable, when read.
    pub cred: Option<ExecCred>,
}

impl Default for SnapshotProcess {
    fn default() -> SnapshotProcess {
        SnapshotProcess {
            pid: 0,
            ppid: 0,
            comm: String::new(),
            exe: None,
            argv: Vec::new(),
            threads: Vec::new(),
            subreaper: false,
            ns: None,
            launched: false,
            cgroup: None,
            uid: u32::MAX,
            cred: None,
        }
    }
}

/// Largest bundle `config.json` a live source reads and the model parses (a real one is a
/// few KiB; annotations can grow it).
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;
