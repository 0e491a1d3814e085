//! The state machine: events in, kernel process tree out.

use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use crate::event::{
    clone_flags as cf, prctl_opt, CloneFlags, Comm, Event, EventKind, ExitStatus, Syscall,
};

use super::process::{
    basename, ExecRecord, How, LineageEntry, ProcId, Process, Reaper, Reason, Rename, Thread,
};
use super::roles::{classify, is_cni_plugin_name, Role};

/// Warnings kept in full; later ones are only counted.
pub const MAX_WARNINGS: usize = 1000;
/// Pending exec enters kept at most (stale ones pile up when exits are lost).
const MAX_PENDING_EXECS: usize = 1 << 16;

/// Fx-style hasher: pids are small integers, SipHash would dominate the per-event cost.
#[derive(Default, Clone, Copy)]
pub(crate) struct PidHasher(u64);

const FX_K: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl Hasher for PidHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(FX_K);
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.0 = (self.0.rotate_left(5) ^ u64::from(n)).wrapping_mul(FX_K);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

pub(crate) type PidMap<V> = HashMap<u32, V, BuildHasherDefault<PidHasher>>;

/// A process that existed before tracing, as read from /proc.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
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
}

/// Something in the stream the engine had to guess around.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WarningKind {
    /// An event for a pid never created; a placeholder was synthesized.
    UnknownPid {
        /// The unknown pid.
        pid: u32,
    },
    /// An event for a thread the process was not known to have.
    UnknownThread {
        /// The process.
        pid: u32,
        /// The thread.
        tid: u32,
    },
    /// A fork created a pid that was still alive: its exit was missed.
    PidReuse {
        /// The reused pid.
        pid: u32,
    },
    /// A thread created twice.
    DuplicateThread {
        /// The process.
        pid: u32,
        /// The thread.
        tid: u32,
    },
    /// The kernel reported another parent than the engine had; corrected.
    ParentMismatch {
        /// The process.
        pid: u32,
        /// The parent the engine had.
        engine: u32,
        /// The parent the kernel reported.
        kernel: u32,
    },
    /// seq went backwards.
    SeqBackwards {
        /// The seq before.
        prev: u64,
    },
    /// seq skipped: events were lost.
    LostEvents {
        /// The last seq before the gap.
        after: u64,
        /// How many seqs are missing.
        missing: u64,
    },
    /// Too many exec enters without a matching exit; they were dropped.
    PendingExecOverflow,
}

impl fmt::Display for WarningKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            WarningKind::UnknownPid { pid } => {
                write!(f, "unknown pid {pid}: placeholder synthesized")
            }
            WarningKind::UnknownThread { pid, tid } => {
                write!(f, "unknown thread {tid} of pid {pid}")
            }
            WarningKind::PidReuse { pid } => {
                write!(f, "pid {pid} reused while still alive: exit missed")
            }
            WarningKind::DuplicateThread { pid, tid } => {
                write!(f, "thread {tid} of pid {pid} created twice")
            }
            WarningKind::ParentMismatch {
                pid,
                engine,
                kernel,
            } => {
                write!(
                    f,
                    "pid {pid}: kernel reports parent {kernel}, engine had {engine}"
                )
            }
            WarningKind::SeqBackwards { prev } => write!(f, "seq went backwards (previous {prev})"),
            WarningKind::LostEvents { after, missing } => {
                write!(f, "{missing} events lost after seq {after}")
            }
            WarningKind::PendingExecOverflow => {
                f.write_str("too many unmatched exec enters; dropped")
            }
        }
    }
}

/// One anomaly the engine worked around, with the event that revealed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Warning {
    /// Seq of that event.
    pub seq: u64,
    /// What happened.
    pub kind: WarningKind,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "seq {}: {}", self.seq, self.kind)
    }
}

/// An exec enter waiting for its outcome.
#[derive(Clone, Debug)]
struct PendingExec {
    filename: String,
    argv: Vec<String>,
    truncated: bool,
}

/// The lineage engine. Deterministic: the same events give the same state.
#[derive(Clone, Debug, Default)]
pub struct Engine {
    procs: Vec<Process>,
    /// pid → its newest record (live or exited).
    by_pid: PidMap<ProcId>,
    pending_exec: PidMap<PendingExec>,
    warnings: Vec<Warning>,
    warning_count: u64,
    last_seq: Option<u64>,
    events: u64,
}

impl Engine {
    /// An empty engine (seed it with [`Engine::seed_snapshot`] before the first event).
    pub fn new() -> Engine {
        Engine::default()
    }

    // ---- queries ----

    /// The newest record for `pid` (live, or exited if no newer one).
    pub fn process(&self, pid: u32) -> Option<&Process> {
        self.by_pid.get(&pid).and_then(|&id| self.procs.get(id))
    }

    /// A record by its id.
    pub fn get(&self, id: ProcId) -> Option<&Process> {
        self.procs.get(id)
    }

    /// Current children of `pid`'s newest record, exited ones included, by pid then seq.
    pub fn children(&self, pid: u32) -> Vec<&Process> {
        self.process(pid)
            .map_or_else(Vec::new, |p| self.children_of(p))
    }

    /// Current children of a record, by pid then birth seq.
    pub fn children_of(&self, p: &Process) -> Vec<&Process> {
        let mut v: Vec<&Process> = p
            .children
            .iter()
            .filter_map(|&c| self.procs.get(c))
            .collect();
        v.sort_by_key(|c| (c.pid, c.start_seq));
        v
    }

    /// Records without a known parent, by pid then seq.
    pub fn roots(&self) -> Vec<&Process> {
        let mut v: Vec<&Process> = self.procs.iter().filter(|p| p.parent.is_none()).collect();
        v.sort_by_key(|p| (p.pid, p.start_seq));
        v
    }

    /// Every record ever made, in creation order (exited and replaced ones included).
    pub fn processes(&self) -> impl Iterator<Item = &Process> + '_ {
        self.procs.iter()
    }

    /// Number of records (exited and replaced ones included).
    pub fn process_count(&self) -> usize {
        self.procs.len()
    }

    /// The first [`MAX_WARNINGS`] warnings (see [`Engine::warning_count`] for the total).
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }

    /// All warnings, including those not kept.
    pub fn warning_count(&self) -> u64 {
        self.warning_count
    }

    /// Highest seq applied.
    pub fn last_seq(&self) -> Option<u64> {
        self.last_seq
    }

    /// Events applied so far.
    pub fn event_count(&self) -> u64 {
        self.events
    }

    /// Container-birth stories found so far.
    pub fn stories(&self) -> Vec<super::Story> {
        super::story::detect(self)
    }

    // ---- seeding ----

    /// Adds processes that existed before tracing. Call before the first event.
    pub fn seed_snapshot(&mut self, snap: &[SnapshotProcess]) {
        let seq = self.last_seq.unwrap_or(0);
        let mut ids = Vec::with_capacity(snap.len());
        for s in snap {
            if let Some(&old) = self.by_pid.get(&s.pid) {
                if !self.procs[old].exited {
                    self.end_process(old, None, seq, 0);
                }
            }
            let id = self.new_record(s.pid, How::Snapshot, seq, 0);
            let p = &mut self.procs[id];
            p.comm = Comm::new(&s.comm);
            p.exe = s.exe.as_deref().map(Arc::from);
            p.argv = Arc::from(s.argv.clone());
            p.is_subreaper = s.subreaper;
            p.threads[0].comm = p.comm;
            for &tid in &s.threads {
                if tid != s.pid {
                    p.threads.push(Thread {
                        tid,
                        comm: p.comm,
                        alive: true,
                    });
                }
            }
            p.lineage[0].parent = s.ppid;
            if let Some(c) = classify(p.comm.as_bytes(), p.exe.as_deref(), &p.argv) {
                p.role = Some(c.role);
                p.container_id = c.container_id.map(Arc::from);
            }
            ids.push((id, s.ppid));
        }
        for &(id, ppid) in &ids {
            if ppid != 0 {
                let pid = self.procs[id].pid;
                let parent = match self.by_pid.get(&ppid) {
                    Some(&pp) if !self.procs[pp].exited && pp != id => pp,
                    _ if ppid == pid => continue,
                    _ => self.placeholder(ppid, 0, seq, 0),
                };
                self.set_parent(id, Some(parent), ppid);
            }
        }
        // has_child_subreaper is inherited: compute it top-down along the ancestry.
        for &(id, _) in &ids {
            let mut cur = self.procs[id].parent;
            let mut hops = 0;
            while let Some(a) = cur {
                if hops > self.procs.len() {
                    break;
                }
                hops += 1;
                if self.procs[a].is_subreaper {
                    self.procs[id].has_child_subreaper = true;
                    break;
                }
                cur = self.procs[a].parent;
            }
        }
    }

    // ---- events ----

    /// Applies one event. Never panics; anomalies become warnings.
    pub fn apply(&mut self, ev: &Event) {
        self.events += 1;
        self.track_seq(ev.seq);
        match &ev.kind {
            EventKind::Fork {
                child_tid,
                child_tgid,
                child_ppid,
                syscall,
                flags,
            } => self.on_fork(ev, *child_tid, *child_tgid, *child_ppid, *syscall, *flags),
            EventKind::Exec { old_tid, filename } => self.on_exec(ev, *old_tid, &filename.value),
            EventKind::ExecEnter {
                filename,
                argv,
                argv_truncated,
                ..
            } => {
                self.task(ev);
                if self.pending_exec.len() >= MAX_PENDING_EXECS {
                    self.pending_exec.clear();
                    self.warn(ev.seq, WarningKind::PendingExecOverflow);
                }
                self.pending_exec.insert(
                    ev.tid,
                    PendingExec {
                        filename: filename.value.clone(),
                        argv: argv.clone(),
                        truncated: *argv_truncated || filename.truncated,
                    },
                );
            }
            EventKind::SyscallExit { syscall, ret } => {
                self.task(ev);
                // A failed exec changes nothing; a successful one was consumed by Exec.
                if matches!(syscall, Syscall::Execve | Syscall::Execveat) && *ret <= 0 {
                    self.pending_exec.remove(&ev.tid);
                }
            }
            EventKind::ExitEnter { syscall, code } => {
                let id = self.task(ev);
                if *syscall == Syscall::ExitGroup {
                    self.procs[id].exit_group_code = Some(*code);
                }
            }
            EventKind::PrctlEnter { option, arg2, name } => {
                let id = self.task(ev);
                match *option {
                    prctl_opt::PR_SET_NAME => {
                        if let Some(name) = name {
                            self.rename(id, ev.tid, Comm::new(&name.value), ev.seq);
                        }
                    }
                    prctl_opt::PR_SET_CHILD_SUBREAPER => self.set_subreaper(id, *arg2 != 0, ev.seq),
                    _ => {}
                }
            }
            EventKind::CloneEnter { .. } => {
                self.task(ev);
            }
            EventKind::TaskExit {
                exit_code,
                group_dead,
            } => self.on_task_exit(ev, *exit_code, *group_dead),
        }
    }

    fn track_seq(&mut self, seq: u64) {
        match self.last_seq {
            None => self.last_seq = Some(seq),
            Some(prev) if seq <= prev => self.warn(seq, WarningKind::SeqBackwards { prev }),
            Some(prev) => {
                if seq - prev > 1 {
                    self.warn(
                        seq,
                        WarningKind::LostEvents {
                            after: prev,
                            missing: seq - prev - 1,
                        },
                    );
                }
                self.last_seq = Some(seq);
            }
        }
    }

    fn warn(&mut self, seq: u64, kind: WarningKind) {
        self.warning_count += 1;
        if self.warnings.len() < MAX_WARNINGS {
            self.warnings.push(Warning { seq, kind });
        }
    }

    fn new_record(&mut self, pid: u32, how: How, seq: u64, ts_ns: u64) -> ProcId {
        let id = self.procs.len();
        self.procs.push(Process::blank(id, pid, how, seq, ts_ns));
        self.by_pid.insert(pid, id);
        id
    }

    /// A placeholder for a pid nobody created (warns).
    fn placeholder(&mut self, pid: u32, ppid: u32, seq: u64, ts_ns: u64) -> ProcId {
        self.warn(seq, WarningKind::UnknownPid { pid });
        let id = self.new_record(pid, How::Unknown, seq, ts_ns);
        if ppid != 0 && ppid != pid {
            let parent = self.live_or_placeholder(ppid, seq, ts_ns);
            self.procs[id].lineage[0].parent = ppid;
            self.set_parent(id, Some(parent), ppid);
            self.inherit_subreaper(id);
        }
        id
    }

    /// The live record of `pid`, or a placeholder without a known parent.
    fn live_or_placeholder(&mut self, pid: u32, seq: u64, ts_ns: u64) -> ProcId {
        match self.by_pid.get(&pid) {
            Some(&id) if !self.procs[id].exited => id,
            _ => self.placeholder(pid, 0, seq, ts_ns),
        }
    }

    fn inherit_subreaper(&mut self, id: ProcId) {
        if let Some(p) = self.procs[id].parent {
            let inh = self.procs[p].has_child_subreaper || self.procs[p].is_subreaper;
            self.procs[id].has_child_subreaper = inh;
        }
    }

    fn set_parent(&mut self, id: ProcId, parent: Option<ProcId>, ppid: u32) {
        if let Some(old) = self.procs[id].parent {
            let ch = &mut self.procs[old].children;
            if let Some(pos) = ch.iter().position(|&c| c == id) {
                ch.swap_remove(pos);
            }
        }
        self.procs[id].parent = parent;
        self.procs[id].ppid = ppid;
        if let Some(p) = parent {
            self.procs[p].children.push(id);
        }
    }

    /// The live process the event happened in, with its thread; checks the parent the
    /// kernel reports.
    fn task(&mut self, ev: &Event) -> ProcId {
        let id = match self.by_pid.get(&ev.tgid) {
            Some(&id) if !self.procs[id].exited => id,
            _ => {
                let id = self.placeholder(ev.tgid, ev.ppid, ev.seq, ev.ts_ns);
                let p = &mut self.procs[id];
                if ev.tid != ev.tgid {
                    p.threads.push(Thread {
                        tid: ev.tid,
                        comm: ev.comm,
                        alive: true,
                    });
                } else {
                    p.comm = ev.comm;
                    p.threads[0].comm = ev.comm;
                }
                return id;
            }
        };
        if !self.procs[id]
            .threads
            .iter()
            .any(|t| t.tid == ev.tid && t.alive)
        {
            self.warn(
                ev.seq,
                WarningKind::UnknownThread {
                    pid: ev.tgid,
                    tid: ev.tid,
                },
            );
            let p = &mut self.procs[id];
            match p.threads.iter_mut().find(|t| t.tid == ev.tid) {
                Some(t) => t.alive = true,
                None => p.threads.push(Thread {
                    tid: ev.tid,
                    comm: ev.comm,
                    alive: true,
                }),
            }
        }
        self.check_parent(id, ev.ppid, ev.seq);
        id
    }

    /// Corrects the parent from the kernel's report (a missed fork or reparenting).
    fn check_parent(&mut self, id: ProcId, kernel: u32, seq: u64) {
        let have = self.procs[id].ppid;
        if kernel == 0 || kernel == have || kernel == self.procs[id].pid {
            return;
        }
        let parent = match self.by_pid.get(&kernel) {
            // The kernel may report the dying parent a moment after its exit event.
            Some(&pp) if self.procs[pp].exited => return,
            Some(&pp) => pp,
            None => self.placeholder(kernel, 0, seq, 0),
        };
        let pid = self.procs[id].pid;
        let p = &mut self.procs[id];
        if have == 0
            && p.lineage.len() == 1
            && matches!(p.lineage[0].how, How::Unknown | How::Snapshot)
        {
            // Not a change of parent: the parent was simply not known yet.
            p.lineage[0].parent = kernel;
            self.set_parent(id, Some(parent), kernel);
            self.inherit_subreaper(id);
            return;
        }
        self.warn(
            seq,
            WarningKind::ParentMismatch {
                pid,
                engine: have,
                kernel,
            },
        );
        self.set_parent(id, Some(parent), kernel);
        self.procs[id].lineage.push(LineageEntry {
            how: How::Adopted,
            parent: kernel,
            caller: None,
            flags: None,
            syscall: None,
            reason: Some(Reason::KernelReports { parent: kernel }),
            seq,
        });
    }

    fn on_fork(
        &mut self,
        ev: &Event,
        child_tid: u32,
        child_tgid: u32,
        child_ppid: u32,
        syscall: Option<Syscall>,
        flags: Option<CloneFlags>,
    ) {
        let creator = self.task(ev);
        let child_tgid = if child_tgid == 0 {
            child_tid
        } else {
            child_tgid
        };
        let thread_flag = flags.is_some_and(|f| f.contains(cf::CLONE_THREAD));
        let comm = if ev.comm.is_empty() {
            self.procs[creator]
                .threads
                .iter()
                .find(|t| t.tid == ev.tid)
                .map_or(self.procs[creator].comm, |t| t.comm)
        } else {
            ev.comm
        };

        if thread_flag || child_tgid != child_tid {
            let pid = if child_tgid != child_tid {
                child_tgid
            } else {
                ev.tgid
            };
            let id = if pid == self.procs[creator].pid {
                creator
            } else {
                self.live_or_placeholder(pid, ev.seq, ev.ts_ns)
            };
            let p = &mut self.procs[id];
            let dup = match p.threads.iter_mut().find(|t| t.tid == child_tid) {
                Some(t) if t.alive => true,
                Some(t) => {
                    t.alive = true;
                    t.comm = comm;
                    false
                }
                None => {
                    p.threads.push(Thread {
                        tid: child_tid,
                        comm,
                        alive: true,
                    });
                    false
                }
            };
            if dup {
                self.warn(
                    ev.seq,
                    WarningKind::DuplicateThread {
                        pid,
                        tid: child_tid,
                    },
                );
            }
            return;
        }

        // A new process.
        if let Some(&old) = self.by_pid.get(&child_tid) {
            if !self.procs[old].exited {
                self.warn(ev.seq, WarningKind::PidReuse { pid: child_tid });
                self.end_process(old, None, ev.seq, ev.ts_ns);
            }
        }
        let (cpid, cppid, cparent) = {
            let c = &self.procs[creator];
            (c.pid, c.ppid, c.parent)
        };
        let clone_parent = flags.is_some_and(|f| f.contains(cf::CLONE_PARENT));
        let (parent_pid, parent_id) = if child_ppid != 0 && child_ppid != cpid {
            let id = if child_ppid == cppid && cparent.is_some_and(|p| !self.procs[p].exited) {
                cparent
            } else {
                Some(self.live_or_placeholder(child_ppid, ev.seq, ev.ts_ns))
            };
            (child_ppid, id)
        } else if child_ppid == 0 && clone_parent {
            (cppid, cparent)
        } else {
            (cpid, Some(creator))
        };
        let how = if syscall == Some(Syscall::Vfork)
            || flags.is_some_and(|f| f.contains(cf::CLONE_VFORK))
        {
            How::Vfork
        } else if clone_parent || (flags.is_none() && parent_pid != cpid && parent_pid != 0) {
            How::CloneParent
        } else if syscall == Some(Syscall::Fork) {
            How::Fork
        } else {
            How::Clone
        };

        let id = self.new_record(child_tid, how, ev.seq, ev.ts_ns);
        let (exe, argv, trunc, role, cid) = {
            let c = &self.procs[creator];
            (
                c.exe.clone(),
                c.argv.clone(),
                c.argv_truncated,
                c.role,
                c.container_id.clone(),
            )
        };
        let p = &mut self.procs[id];
        p.comm = comm;
        p.threads[0].comm = comm;
        p.exe = exe;
        p.argv = argv;
        p.argv_truncated = trunc;
        p.role = role;
        p.container_id = cid;
        p.born_syscall = syscall;
        p.creator = Some(creator);
        p.birth_parent = parent_id;
        p.lineage[0] = LineageEntry {
            how,
            parent: parent_pid,
            caller: Some(cpid),
            flags,
            syscall,
            reason: None,
            seq: ev.seq,
        };
        self.set_parent(id, parent_id, parent_pid);
        self.inherit_subreaper(id);
    }

    fn on_exec(&mut self, ev: &Event, old_tid: u32, filename: &str) {
        let id = match self.by_pid.get(&ev.tgid) {
            Some(&id) if !self.procs[id].exited => {
                self.check_parent(id, ev.ppid, ev.seq);
                id
            }
            _ => self.placeholder(ev.tgid, ev.ppid, ev.seq, ev.ts_ns),
        };
        let pending = self.pending_exec.remove(&old_tid);
        if old_tid != ev.tid {
            // The exec'ing thread took over the leader's pid; its own tid is gone.
            self.pending_exec.remove(&ev.tid);
        }
        let exe: Option<Arc<str>> = if !filename.is_empty() {
            Some(Arc::from(filename))
        } else {
            pending.as_ref().map(|p| Arc::from(p.filename.as_str()))
        };
        let (argv, trunc) = match pending {
            Some(p) => (p.argv, p.truncated),
            None => (Vec::new(), false),
        };
        let comm = if !ev.comm.is_empty() {
            ev.comm
        } else {
            Comm::new(exe.as_deref().map(basename).unwrap_or(""))
        };
        let p = &mut self.procs[id];
        // Exec leaves one thread, with the leader's pid; every other thread is gone.
        for t in p.threads.iter_mut() {
            t.alive = false;
        }
        let leader = p.pid;
        match p.threads.iter_mut().find(|t| t.tid == leader) {
            Some(t) => {
                t.alive = true;
                t.comm = comm;
            }
            None => p.threads.push(Thread {
                tid: leader,
                comm,
                alive: true,
            }),
        }
        p.comm = comm;
        p.exe = exe.clone();
        p.argv = Arc::from(argv);
        p.argv_truncated = trunc;
        if let Some(exe) = exe {
            p.execs.push(ExecRecord { seq: ev.seq, exe });
        }
        let prev = p.role;
        let classified = classify(p.comm.as_bytes(), p.exe.as_deref(), &p.argv);
        let cni = classified.is_none()
            && is_cni_plugin_name(p.exe.as_deref(), &p.argv)
            && self.runtime_ancestor(id);
        let p = &mut self.procs[id];
        let new_role = match classified.as_ref().map(|c| c.role) {
            Some(r) => Some(r),
            None if cni => Some(Role::CniPlugin),
            None if matches!(prev, Some(Role::OciInit { .. }) | Some(Role::Container)) => {
                Some(Role::Container)
            }
            None => None,
        };
        if matches!(new_role, Some(Role::OciInit { .. })) && p.init_exec_seq.is_none() {
            p.init_exec_seq = Some(ev.seq);
        }
        if matches!(prev, Some(Role::OciInit { .. }))
            && matches!(new_role, Some(Role::Container | Role::Sandbox))
        {
            p.workload_exec_seq = Some(ev.seq);
        }
        p.role = new_role;
        if let Some(cid) = classified.and_then(|c| c.container_id) {
            p.container_id = Some(Arc::from(cid));
        }
    }

    /// Whether a runtime daemon is among the first ancestors of `id` (CNI plugins are run by
    /// the runtime, and IPAM plugins by the plugin it ran).
    fn runtime_ancestor(&self, id: ProcId) -> bool {
        let mut at = self.procs[id].parent;
        for _ in 0..8 {
            let Some(a) = at else { return false };
            if self.procs[a].role == Some(Role::RuntimeDaemon) {
                return true;
            }
            at = self.procs[a].parent;
        }
        false
    }

    fn rename(&mut self, id: ProcId, tid: u32, comm: Comm, seq: u64) {
        let p = &mut self.procs[id];
        if let Some(t) = p.threads.iter_mut().find(|t| t.tid == tid) {
            t.comm = comm;
        }
        p.renames.push(Rename { seq, tid, comm });
        // comm is per thread; the process shows its leader's.
        if tid == p.pid {
            p.comm = comm;
            if let Some(c) = classify(comm.as_bytes(), None, &[]) {
                p.role = Some(c.role);
            }
        }
    }

    fn set_subreaper(&mut self, id: ProcId, on: bool, seq: u64) {
        self.procs[id].is_subreaper = on;
        if !on {
            return;
        }
        self.procs[id].subreaper_seq = Some(seq);
        // Like kernel/sys.c propagate_has_child_subreaper: existing descendants inherit it;
        // subtrees that already have it are skipped.
        let mut stack: Vec<ProcId> = self.procs[id].children.clone();
        let mut visited = 0usize;
        while let Some(c) = stack.pop() {
            visited += 1;
            if visited > self.procs.len() {
                break;
            }
            let p = &mut self.procs[c];
            if p.exited || p.has_child_subreaper {
                continue;
            }
            p.has_child_subreaper = true;
            stack.extend_from_slice(&p.children);
        }
    }

    fn on_task_exit(&mut self, ev: &Event, exit_code: u32, group_dead: bool) {
        let id = match self.by_pid.get(&ev.tgid) {
            // Late exits of other threads of a process already ended (exit_group).
            Some(&id) if self.procs[id].exited => return,
            Some(&id) => {
                self.check_parent(id, ev.ppid, ev.seq);
                id
            }
            None => self.placeholder(ev.tgid, ev.ppid, ev.seq, ev.ts_ns),
        };
        let p = &mut self.procs[id];
        if let Some(t) = p.threads.iter_mut().find(|t| t.tid == ev.tid) {
            t.alive = false;
        }
        self.pending_exec.remove(&ev.tid);
        let p = &self.procs[id];
        if group_dead || p.exit_group_code.is_some() || !p.threads.iter().any(|t| t.alive) {
            self.end_process(
                id,
                Some(ExitStatus::from_wait_status(exit_code)),
                ev.seq,
                ev.ts_ns,
            );
        }
        // Otherwise a thread ended: the process's children stay (they belong to the process).
    }

    /// The process is gone: mark it and hand its live children to the new reaper.
    fn end_process(&mut self, id: ProcId, status: Option<ExitStatus>, seq: u64, ts_ns: u64) {
        let p = &mut self.procs[id];
        p.exited = true;
        p.exit_status = status.or(p.exit_group_code.map(|code| ExitStatus::Exited { code }));
        p.exit_seq = Some(seq);
        p.exit_ts_ns = Some(ts_ns);
        for t in p.threads.iter_mut() {
            t.alive = false;
        }
        let dead_pid = p.pid;
        if !self.procs[id]
            .children
            .iter()
            .any(|&c| !self.procs[c].exited)
        {
            return;
        }
        let mut orphans: Vec<ProcId> = self.procs[id]
            .children
            .iter()
            .copied()
            .filter(|&c| !self.procs[c].exited)
            .collect();
        orphans.sort_by_key(|&c| (self.procs[c].pid, c));
        let Some((reaper_id, reaper)) = self.find_new_reaper(id, seq) else {
            return;
        };
        let reaper_pid = self.procs[reaper_id].pid;
        // Detach all orphans at once (set_parent per orphan would rescan the list each time).
        let mut kept = std::mem::take(&mut self.procs[id].children);
        kept.retain(|&c| self.procs[c].exited);
        self.procs[id].children = kept;
        for c in orphans {
            self.procs[c].parent = None;
            self.set_parent(c, Some(reaper_id), reaper_pid);
            self.procs[c].lineage.push(LineageEntry {
                how: How::Adopted,
                parent: reaper_pid,
                caller: None,
                flags: None,
                syscall: None,
                reason: Some(Reason::ParentExited {
                    parent: dead_pid,
                    reaper,
                }),
                seq,
            });
        }
    }

    /// kernel/exit.c find_new_reaper. Another live thread is not a case here: a process only
    /// ends with its last thread, and its children stay with it until then.
    fn find_new_reaper(&mut self, dying: ProcId, seq: u64) -> Option<(ProcId, Reaper)> {
        if self.procs[dying].has_child_subreaper {
            let mut cur = self.procs[dying].parent;
            let mut hops = 0;
            while let Some(a) = cur {
                hops += 1;
                if hops > self.procs.len() || a == dying {
                    break;
                }
                let ap = &self.procs[a];
                if ap.is_subreaper && !ap.exited {
                    return Some((a, Reaper::Subreaper(ap.pid)));
                }
                cur = ap.parent;
            }
        }
        let init = match self.by_pid.get(&1) {
            Some(&i) if !self.procs[i].exited => i,
            // Synthesized init: expected when tracing starts below pid 1, so no warning.
            _ => self.new_record(1, How::Unknown, seq, 0),
        };
        // The dying process never adopts its own orphans (pid 1 dying keeps them).
        (init != dying).then_some((init, Reaper::Init))
    }
}

/// Replays `events` with seq ≤ `seq` into a fresh engine: the tree as it was at `seq`.
pub fn replay_until(events: &[Event], seq: u64) -> Engine {
    let mut e = Engine::new();
    for ev in events.iter().filter(|ev| ev.seq <= seq) {
        e.apply(ev);
    }
    e
}
