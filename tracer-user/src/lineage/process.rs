//! Process records and their lineage history.

use std::fmt;
use std::sync::Arc;

use crate::event::{CloneFlags, Comm, ExitStatus, PidNs, Syscall};

use super::ending::{OomMark, SignalRecord};
use super::roles::{basename, InitStage, Role};

pub use small_list::SmallList;

/// A list that keeps its one element in place (a record's threads, lineage and execs).
mod small_list;

/// Index of a process record inside an [`super::Engine`]. Stable for the engine's lifetime;
/// unlike a pid it is never reused.
pub type ProcId = usize;

/// How a process got its current (or an earlier) parent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum How {
    /// clone(2)/clone3(2) without CLONE_PARENT.
    Clone,
    /// Created with CLONE_PARENT: the parent is the caller's parent.
    CloneParent,
    /// fork(2).
    Fork,
    /// vfork(2).
    Vfork,
    /// Reparented after its parent exited (or corrected from a kernel report).
    Adopted,
    /// Existed before tracing started (from a /proc snapshot).
    Snapshot,
    /// Started by the tracer itself (`tracer trace -- CMD`), held until it was followed.
    Launched,
    /// Synthesized because an event named a pid the engine had never seen.
    Unknown,
}

impl How {
    /// As in JSON and the views (`clone_parent`).
    pub fn as_str(self) -> &'static str {
        match self {
            How::Clone => "clone",
            How::CloneParent => "clone_parent",
            How::Fork => "fork",
            How::Vfork => "vfork",
            How::Adopted => "adopted",
            How::Snapshot => "snapshot",
            How::Launched => "launched",
            How::Unknown => "unknown",
        }
    }
}

impl fmt::Display for How {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who took the orphans (kernel/exit.c find_new_reaper).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reaper {
    /// The nearest live ancestor in the same pid namespace that set PR_SET_CHILD_SUBREAPER.
    Subreaper(u32),
    /// The host's init (pid 1 of the initial pid namespace).
    Init,
    /// The init of a container's pid namespace (its `child_reaper`), by host pid.
    NsInit(u32),
    /// The init of the dying process's pid namespace, which the source never showed.
    NsInitUnseen,
}

/// Why an adoption happened. Structured (no allocation per exit); rendered on demand.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reason {
    /// Its parent exited and the kernel picked a new one.
    ParentExited {
        /// The parent that exited.
        parent: u32,
        /// Who took the orphan.
        reaper: Reaper,
    },
    /// The kernel reported another parent than the model had. `after_loss`: events were
    /// lost before, so the model missed something; otherwise the model itself was wrong.
    KernelReports {
        /// The parent the kernel reported.
        parent: u32,
        /// The parent the model had.
        model: u32,
        /// A sequence gap or drop preceded the report.
        after_loss: bool,
    },
}

/// The kinds of adoption, by who took the orphan (or that the kernel named another parent).
pub const ADOPTION_KINDS: [&str; 4] = ["subreaper", "init", "namespace_init", "kernel_reports"];

/// The kind of an adoption's reason, one of [`ADOPTION_KINDS`].
pub fn adoption_kind(r: Reason) -> &'static str {
    match r {
        Reason::ParentExited { reaper, .. } => match reaper {
            Reaper::Subreaper(_) => "subreaper",
            Reaper::Init => "init",
            Reaper::NsInit(_) | Reaper::NsInitUnseen => "namespace_init",
        },
        Reason::KernelReports { .. } => "kernel_reports",
    }
}

/// Adoptions the engine has made since it started, by kind: totals that only grow, so a
/// live view's retention (which drops old records and their lineage) does not lower them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AdoptionTotals([u64; ADOPTION_KINDS.len()]);

impl AdoptionTotals {
    pub(super) fn count(&mut self, r: Reason) {
        let kind = adoption_kind(r);
        if let Some(i) = ADOPTION_KINDS.iter().position(|k| *k == kind) {
            self.0[i] += 1;
        }
    }

    /// An adoption the engine took back (the kernel never made it).
    pub(super) fn uncount(&mut self, r: Reason) {
        let kind = adoption_kind(r);
        if let Some(i) = ADOPTION_KINDS.iter().position(|k| *k == kind) {
            self.0[i] = self.0[i].saturating_sub(1);
        }
    }

    /// Each kind with its total.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        ADOPTION_KINDS.iter().copied().zip(self.0.iter().copied())
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Reason::ParentExited {
                parent,
                reaper: Reaper::Subreaper(s),
            } => {
                write!(f, "parent {parent} exited; nearest subreaper {s}")
            }
            Reason::ParentExited {
                parent,
                reaper: Reaper::Init,
            } => {
                write!(f, "parent {parent} exited; no subreaper ancestor: init")
            }
            Reason::ParentExited {
                parent,
                reaper: Reaper::NsInit(i),
            } => {
                write!(
                    f,
                    "parent {parent} exited; no subreaper in its pid namespace: that namespace's init {i}"
                )
            }
            Reason::ParentExited {
                parent,
                reaper: Reaper::NsInitUnseen,
            } => {
                write!(
                    f,
                    "parent {parent} exited; the init of its pid namespace (not seen)"
                )
            }
            Reason::KernelReports {
                parent,
                model,
                after_loss: true,
            } => {
                write!(
                    f,
                    "kernel reports parent {parent}, model had {model} (events were lost before)"
                )
            }
            Reason::KernelReports {
                parent,
                model,
                after_loss: false,
            } => {
                write!(
                    f,
                    "kernel reports parent {parent}, model had {model} (model/kernel disagreement)"
                )
            }
        }
    }
}

/// One step of a process's history: its birth, then every change of parent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineageEntry {
    /// Birth (`Clone`, `Fork`...) or `Adopted`.
    pub how: How,
    /// The parent (tgid) from this point on; 0 when unknown.
    pub parent: u32,
    /// The process that called clone/fork (differs from `parent` with CLONE_PARENT).
    pub caller: Option<u32>,
    /// The calling thread (a thread of `caller`, not necessarily its leader).
    pub caller_tid: Option<u32>,
    /// Clone flags of the creating call, when known.
    pub flags: Option<CloneFlags>,
    /// The creating syscall, when known.
    pub syscall: Option<Syscall>,
    /// Why an adoption happened (`None` for a birth).
    pub reason: Option<Reason>,
    /// Seq of the event that made this entry.
    pub seq: u64,
    /// Its time (the recording's `ts_ns`).
    pub ts_ns: u64,
}

impl LineageEntry {
    /// `CLONE_VM|CLONE_VFORK`, or `None` when the flags are unknown.
    pub fn flags_text(&self) -> Option<String> {
        self.flags.map(|f| crate::names::clone_flags(f.0))
    }

    /// The reason as text (`parent 300 exited; nearest subreaper 200`).
    pub fn reason_text(&self) -> Option<String> {
        self.reason.map(|r| r.to_string())
    }
}

/// A move into another cgroup (cgroup_attach_task).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CgroupMove {
    /// Seq of the event.
    pub seq: u64,
    /// Its time (the recording's `ts_ns`).
    pub ts_ns: u64,
    /// The destination cgroup (path in the reported hierarchy).
    pub path: Arc<str>,
    /// The process that moved it (the runtime writing `cgroup.procs`).
    pub by: u32,
}

/// A thread of a process. The comm is per thread; a process shows its leader's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Thread {
    /// Thread id.
    pub tid: u32,
    /// The thread's name.
    pub comm: Comm,
    /// Not exited yet.
    pub alive: bool,
}

/// A successful exec.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExecRecord {
    /// Seq of the exec event.
    pub seq: u64,
    /// Its time (the recording's `ts_ns`).
    pub ts_ns: u64,
    /// The file exec'd.
    pub exe: Arc<str>,
    /// The source showed the call but not its result (an strace log cut in the call): what
    /// the process tried to run, taken as run ([`super::Engine::end_of_input`]).
    pub unconfirmed: bool,
}

/// A PR_SET_NAME.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rename {
    /// Seq of the prctl.
    pub seq: u64,
    /// Its time (the recording's `ts_ns`).
    pub ts_ns: u64,
    /// The thread that renamed itself.
    pub tid: u32,
    /// The new name.
    pub comm: Comm,
}

/// One process (thread group) as the engine knows it. Exited processes are kept.
#[derive(Clone, Debug)]
pub struct Process {
    /// This record's id (stable, never reused).
    pub id: ProcId,
    /// Process id (tgid).
    pub pid: u32,
    /// Current parent tgid (0 = unknown).
    pub ppid: u32,
    /// Current parent's record.
    pub parent: Option<ProcId>,
    /// The leader thread's name.
    pub comm: Comm,
    /// Executable of the latest exec, when known.
    pub exe: Option<Arc<str>>,
    /// Shared with the creator until the next exec (fork copies without allocating).
    pub argv: Arc<[String]>,
    /// argv was cut short by the source.
    pub argv_truncated: bool,
    /// Every thread seen, the leader first.
    pub threads: SmallList<Thread>,
    /// Called PR_SET_CHILD_SUBREAPER.
    pub is_subreaper: bool,
    /// `signal->has_child_subreaper`: an ancestor was a subreaper when this process was
    /// created (copied from the creator by copy_signal), or became one later.
    pub has_child_subreaper: bool,
    /// Its pid namespace and pid there, when the source knows them.
    pub pidns: Option<PidNs>,
    /// The whole process exited.
    pub exited: bool,
    /// How it ended, when seen.
    pub exit_status: Option<ExitStatus>,
    /// Code passed to exit_group, if it was seen.
    pub exit_group_code: Option<i32>,
    /// Runtime role (shim, oci-runtime, oci-init...), when recognized.
    pub role: Option<Role>,
    /// Container id, when argv or an ancestor shows one.
    pub container_id: Option<Arc<str>>,
    /// Its pod and container name, when its container's bundle annotations named them.
    pub k8s: Option<Arc<super::k8s::K8sIdentity>>,
    /// Its real and effective uid at its latest exec (or as /proc showed them; a child's are
    /// its creator's until it execs); `u32::MAX` when the source could not tell.
    pub uid: u32,
    /// See [`Process::uid`].
    pub euid: u32,
    /// Whether the kernel's word on its credentials and executable lets it speak for a
    /// container (a role, a container id, a pod): [`super::identity::standing`].
    pub standing: super::identity::Standing,
    /// The runtime program its executable is, as the capture judged the file (a child's is
    /// its creator's until it execs); `None` where nothing judged it.
    pub program: Option<super::identity::Program>,
    /// Its cgroup (in the reported hierarchy): from /proc at the start, inherited at fork
    /// (cgroup_fork), changed by moves. `None` when unknown.
    pub cgroup: Option<Arc<str>>,
    /// Birth first, then adoptions, oldest first.
    pub lineage: SmallList<LineageEntry>,
    /// The syscall that created it, when known.
    pub born_syscall: Option<Syscall>,
    /// Seq of its birth (or of the snapshot).
    pub start_seq: u64,
    /// Timestamp of its birth (boot-time ns; 0 when unknown).
    pub birth_ts_ns: u64,
    /// Seq of its exit.
    pub exit_seq: Option<u64>,
    /// Timestamp of its exit.
    pub exit_ts_ns: Option<u64>,
    /// The process that called clone/fork.
    pub creator: Option<ProcId>,
    /// The parent at birth.
    pub birth_parent: Option<ProcId>,
    /// Every successful exec, oldest first.
    pub execs: SmallList<ExecRecord>,
    /// What few processes have (signals, renames, cgroup moves...): read through
    /// [`Process::signals`], [`Process::renames`]... `None` until one is set.
    rare: Option<Box<Rare>>,
    pub(crate) children: Vec<ProcId>,
    /// Threads still alive (kept so a thread's exit does not scan every thread).
    pub(crate) live_threads: u32,
}

/// The fields of a [`Process`] that few processes ever set, boxed together: a record without
/// any costs one pointer instead of some 300 bytes (a million processes are read in bounded
/// memory).
#[derive(Clone, Debug, Default)]
pub(crate) struct Rare {
    /// Every move into another cgroup, oldest first.
    pub cgroup_moves: Vec<CgroupMove>,
    /// Seq of its PR_SET_CHILD_SUBREAPER.
    pub subreaper_seq: Option<u64>,
    /// Time of that PR_SET_CHILD_SUBREAPER.
    pub subreaper_ts_ns: u64,
    /// Seq of a later PR_SET_CHILD_SUBREAPER(0) that cleared it.
    pub subreaper_cleared_seq: Option<u64>,
    /// Every PR_SET_NAME, oldest first.
    pub renames: Vec<Rename>,
    /// Signals it received or sent that the source kept, oldest first (at most
    /// [`super::ending::MAX_SIGNALS`]).
    pub signals: Vec<super::ending::SignalRecord>,
    /// Signals not kept in `signals`.
    pub signals_dropped: u32,
    /// The last signal it received whose default action ends a process.
    pub killer: Option<super::ending::SignalRecord>,
    /// The OOM killer chose it.
    pub oom: Option<super::ending::OomMark>,
    /// The init of its pid namespace (host pid) and the seq of that init's death.
    pub zapped_by: Option<(u32, u64)>,
    /// The exec that made it an oci-init (`runc init`).
    pub init_exec_seq: Option<u64>,
    /// The exec from an oci-init stage into the workload.
    pub workload_exec_seq: Option<u64>,
    /// Its parent was unknown (the source never showed its birth) until its SIGCHLD named it:
    /// the seq of that signal.
    pub parent_from_sigchld: Option<u64>,
}

impl Process {
    /// The words for the host's PID 1 when it is no init system: "the recording machine's init
    /// (process_api)" — what a tree, a story or an adoption ("adopted by 1, …") calls it.
    /// `None` for any other process, and for an init system's PID 1.
    pub fn machine_init(&self) -> Option<String> {
        let host = self.pidns.is_none_or(|ns| ns.level == 0);
        (self.pid == 1 && host)
            .then(|| crate::names::machine_init_words(&self.name()))
            .flatten()
    }

    pub(crate) fn blank(id: ProcId, pid: u32, how: How, seq: u64, ts_ns: u64) -> Process {
        Process {
            id,
            pid,
            ppid: 0,
            parent: None,
            comm: Comm::default(),
            exe: None,
            argv: argv_of(&[]),
            argv_truncated: false,
            threads: SmallList::one(Thread {
                tid: pid,
                comm: Comm::default(),
                alive: true,
            }),
            is_subreaper: false,
            has_child_subreaper: false,
            pidns: None,
            exited: false,
            exit_status: None,
            exit_group_code: None,
            role: None,
            container_id: None,
            k8s: None,
            uid: u32::MAX,
            euid: u32::MAX,
            standing: super::identity::Standing::Unverified,
            program: None,
            cgroup: None,
            lineage: SmallList::one(LineageEntry {
                how,
                parent: 0,
                caller: None,
                caller_tid: None,
                flags: None,
                syscall: None,
                reason: None,
                seq,
                ts_ns,
            }),
            born_syscall: None,
            start_seq: seq,
            birth_ts_ns: ts_ns,
            exit_seq: None,
            exit_ts_ns: None,
            creator: None,
            birth_parent: None,
            execs: SmallList::new(),
            rare: None,
            children: Vec::new(),
            live_threads: 1,
        }
    }

    /// How it was born (the first lineage entry).
    pub fn born_how(&self) -> How {
        self.lineage.first().map_or(How::Unknown, |l| l.how)
    }

    /// Current children, exited ones included (they stay where they died).
    pub fn child_ids(&self) -> &[ProcId] {
        &self.children
    }

    /// Ids of the threads still alive.
    pub fn live_tids(&self) -> impl Iterator<Item = u32> + '_ {
        self.threads.iter().filter(|t| t.alive).map(|t| t.tid)
    }

    /// Number of threads still alive.
    pub fn live_thread_count(&self) -> usize {
        self.live_threads as usize
    }

    /// Its pid inside its own pid namespace, when known and not the host's.
    pub fn ns_pid(&self) -> Option<u32> {
        self.pidns
            .filter(|ns| ns.level > 0 && ns.ns_pid != 0)
            .map(|ns| ns.ns_pid)
    }

    /// The init of a pid namespace below the host's (pid 1 there): `is_child_reaper()`.
    pub(super) fn is_ns_init(&self) -> bool {
        self.pidns.is_some_and(|ns| ns.level > 0 && ns.ns_pid == 1)
    }

    /// The last adoption, if any.
    pub fn last_adoption(&self) -> Option<&LineageEntry> {
        self.lineage
            .iter()
            .skip(1)
            .rev()
            .find(|l| l.how == How::Adopted)
    }

    /// Stages of `runc init` this process renamed itself to, with the seq.
    pub fn stage_renames(&self) -> impl Iterator<Item = (InitStage, &Rename)> {
        self.renames()
            .iter()
            .filter_map(|r| InitStage::from_comm(r.comm.as_bytes()).map(|s| (s, r)))
    }

    /// Was (or is) part of a `runc init` chain (a stage's name alone counts only from a
    /// process that may speak for a container: PR_SET_NAME is anyone's).
    pub fn was_oci_init(&self) -> bool {
        self.init_exec_seq().is_some()
            || matches!(self.role, Some(Role::OciInit { .. }))
            || (self.standing.may_speak() && self.stage_renames().next().is_some())
    }

    /// Display name: the comm, else the exe's basename, else `?`.
    pub fn name(&self) -> String {
        if !self.comm.is_empty() {
            return self.comm.to_string();
        }
        match &self.exe {
            Some(e) => basename(e).to_string(),
            None => "?".to_string(),
        }
    }
}

/// The rarely set fields, read as if they were the record's own (empty or `None` when the
/// record has none).
impl Process {
    /// Every move into another cgroup, oldest first.
    pub fn cgroup_moves(&self) -> &[CgroupMove] {
        self.rare.as_ref().map_or(&[], |r| &r.cgroup_moves)
    }

    /// Seq of its PR_SET_CHILD_SUBREAPER.
    pub fn subreaper_seq(&self) -> Option<u64> {
        self.rare.as_ref().and_then(|r| r.subreaper_seq)
    }

    /// Time (`ts_ns`) of its PR_SET_CHILD_SUBREAPER, when it set it.
    pub fn subreaper_ts_ns(&self) -> Option<u64> {
        self.subreaper_seq()
            .and(self.rare.as_ref().map(|r| r.subreaper_ts_ns))
    }

    /// The time (`ts_ns`) of its exec at `seq`, when it exec'd then.
    pub fn exec_ts_ns(&self, seq: u64) -> Option<u64> {
        self.execs.iter().find(|x| x.seq == seq).map(|x| x.ts_ns)
    }

    /// Seq of a later PR_SET_CHILD_SUBREAPER(0) that cleared it.
    pub fn subreaper_cleared_seq(&self) -> Option<u64> {
        self.rare.as_ref().and_then(|r| r.subreaper_cleared_seq)
    }

    /// Every PR_SET_NAME, oldest first.
    pub fn renames(&self) -> &[Rename] {
        self.rare.as_ref().map_or(&[], |r| &r.renames)
    }

    /// Signals it received or sent that the source kept, oldest first (at most
    /// [`super::ending::MAX_SIGNALS`]; [`Process::signals_dropped`] counts the ones past that).
    pub fn signals(&self) -> &[SignalRecord] {
        self.rare.as_ref().map_or(&[], |r| &r.signals)
    }

    /// Signals not kept in [`Process::signals`].
    pub fn signals_dropped(&self) -> u32 {
        self.rare.as_ref().map_or(0, |r| r.signals_dropped)
    }

    /// The last signal it received whose default action ends a process: what killed it, when
    /// a signal did (kept even when [`Process::signals`] is full).
    pub fn killer(&self) -> Option<&SignalRecord> {
        self.rare.as_ref().and_then(|r| r.killer.as_ref())
    }

    /// The OOM killer chose it.
    pub fn oom(&self) -> Option<&OomMark> {
        self.rare.as_ref().and_then(|r| r.oom.as_ref())
    }

    /// Its pid namespace's init died while it lived: zap_pid_ns_processes() sent it SIGKILL.
    /// The init's host pid and the seq of its death.
    pub fn zapped_by(&self) -> Option<(u32, u64)> {
        self.rare.as_ref().and_then(|r| r.zapped_by)
    }

    /// The exec that made it an oci-init (`runc init`).
    pub fn init_exec_seq(&self) -> Option<u64> {
        self.rare.as_ref().and_then(|r| r.init_exec_seq)
    }

    /// The exec from an oci-init stage into the workload.
    pub fn workload_exec_seq(&self) -> Option<u64> {
        self.rare.as_ref().and_then(|r| r.workload_exec_seq)
    }

    /// Its parent was unknown until its SIGCHLD named it: the seq of that signal.
    pub fn parent_from_sigchld(&self) -> Option<u64> {
        self.rare.as_ref().and_then(|r| r.parent_from_sigchld)
    }

    /// The source showed it do something of its own (an exec, a rename, a thread, an exit),
    /// not only named it as another's parent.
    pub fn acted(&self) -> bool {
        !self.execs.is_empty() || self.exited || self.threads.len() > 1 || self.rare.is_some()
    }

    /// Nothing of its own has been recorded since it was made (no exec, rename, signal, move,
    /// subreaper...): a snapshot record still as /proc showed it.
    pub(crate) fn as_made(&self) -> bool {
        self.execs.is_empty() && self.rare.is_none()
    }

    /// Its latest exec's result is not in the recording (see [`ExecRecord::unconfirmed`]).
    pub fn exec_unconfirmed(&self) -> bool {
        self.execs.last().is_some_and(|x| x.unconfirmed)
    }

    /// The rare fields, to set one (boxed at the first).
    pub(crate) fn rare_mut(&mut self) -> &mut Rare {
        self.rare.get_or_insert_with(Box::default)
    }
}

/// `name pid`, as the story lines name a process.
pub(super) fn label(p: &Process) -> String {
    format!("{} {}", p.name(), p.pid)
}

/// argv as a record keeps it; the empty one is shared, so a record without argv (a fork that
/// never exec'd, a source that does not read argv) allocates nothing for it.
pub(crate) fn argv_of(argv: &[String]) -> Arc<[String]> {
    static EMPTY: std::sync::OnceLock<Arc<[String]>> = std::sync::OnceLock::new();
    if argv.is_empty() {
        return EMPTY.get_or_init(|| Arc::from(Vec::new())).clone();
    }
    Arc::from(argv)
}
