//! Pid namespaces an strace log implies. strace shows no namespace, so they are inferred:
//!
//! * a child created with `CLONE_NEWPID` is the first process (pid 1) of a new namespace, and
//!   so is the first child after its caller's `unshare(CLONE_NEWPID) = 0`; the caller's later
//!   children join that namespace (the kernel keeps it as the task's pid_ns_for_children);
//! * runc's `runc:[1:CHILD]` stage has unshared the pid namespace before it clones
//!   `runc:[2:INIT]` (CLONE_PARENT) when the runtime creates a container (`runc create`,
//!   `runc run`): INIT is pid 1 of a new namespace. Under `runc exec` the stages join the
//!   container's namespace instead (setns), so nothing is inferred there;
//! * any other child is in its creator's namespace, with a pid there that the log does not
//!   show (0: unknown). A process whose namespace nothing implies gets none;
//! * a process the log shows to be in a nested namespace (its clones return that namespace's
//!   pids: `nested` in the parser) whose namespace the log never made — an excerpt that cut
//!   runc's stages, a log attached inside a container — is in a namespace of its own whose
//!   init the log never shows, and so are its children: an orphan among them goes to that
//!   unseen init (its parent unknown), never to the host's pid 1.
//!
//! An inferred namespace gets an id of its own ([`PidNs::inferred`], numbered in order of
//! appearance), never a kernel inode.
//!
//! Pids inside an inferred namespace are learnt from the clones that made them: clone returns
//! the child's pid in the *caller's* namespace, and once the importer has named the child (by
//! its pid in the log) the pair is kept ([`NsInference::named`]); a new namespace's first
//! process is its pid 1. [`NsInference::log_pid`] reads a namespace pid back as the log's pid.
//! The same return is the child's `ns_pid` in its `Fork` when the child is in the caller's
//! inferred namespace ([`NsInference::member_pid`]; [`order_member_pids`] keeps them in the
//! kernel's numbering order).

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::event::{clone_flags as cf, prctl_opt, EventKind, PidNs};
use crate::lineage::{classify, InitStage, OciCommand, Role};

/// Most processes tracked (older entries are dropped past it: a bounded guess, not a leak).
const MAX_TRACKED: usize = 1 << 16;

/// What the importer knows of namespaces so far.
#[derive(Debug, Default)]
pub(super) struct NsInference {
    /// tgid → its (inferred) pid namespace.
    ns_of: HashMap<u32, PidNs>,
    /// tgid → the OCI runtime command it runs under (`runc create`, `runc exec`...), inherited.
    runtime_cmd: HashMap<u32, OciCommand>,
    /// Threads named `runc:[1:CHILD]`.
    child_stage: HashSet<u32>,
    next_id: u64,
    /// (namespace id, pid there) → the process's pid in the log. Kept after the process exits:
    /// its parent's SIGCHLD names it after strace has printed its exit, and the kernel frees the
    /// pid only when it is reaped; a later clone that returns the same pid replaces it.
    pids: HashMap<(u64, u32), u32>,
    /// Tasks that called `unshare(CLONE_NEWPID)` → the namespace their children go to (none
    /// yet: the next child is its pid 1). The kernel keeps it as the task's
    /// pid_ns_for_children (kernel/nsproxy.c), so every later child goes there too.
    for_children: HashMap<u32, Option<PidNs>>,
    /// Processes that exited → their namespace: a child the log names only after its
    /// creator's exit (its first line came later) was made in that namespace.
    exited: HashMap<u32, PidNs>,
}

impl NsInference {
    /// Learns from an event of task `tid` of process `tgid` before it is emitted.
    pub fn observe(&mut self, tgid: u32, tid: u32, kind: &EventKind) {
        if let EventKind::PrctlEnter {
            option: prctl_opt::PR_SET_NAME,
            name: Some(name),
            ..
        } = kind
        {
            let stage = InitStage::from_comm(name.value.as_bytes());
            if stage == Some(InitStage::Child) {
                self.bounded_insert_stage(tid);
            } else {
                self.child_stage.remove(&tid);
            }
        }
        if let EventKind::ExecEnter { filename, argv, .. } = kind {
            let role = classify(b"", Some(&filename.value), argv).map(|c| c.role);
            if let Some(Role::OciRuntime {
                subcommand: Some(cmd),
            }) = role
            {
                if self.runtime_cmd.len() < MAX_TRACKED {
                    self.runtime_cmd.insert(tgid, cmd);
                }
            }
        }
    }

    fn bounded_insert_stage(&mut self, tid: u32) {
        if self.child_stage.len() >= MAX_TRACKED {
            self.child_stage.clear();
        }
        self.child_stage.insert(tid);
    }

    /// The namespace of a new process `child` created by thread `tid` of `tgid`; `nested`: the
    /// log shows `tgid` in a namespace below strace's (its clones return that namespace's
    /// pids) though not how it got there (an excerpt, a log attached inside a container).
    pub fn born(
        &mut self,
        tgid: u32,
        tid: u32,
        child: u32,
        flags: Option<u64>,
        nested: bool,
    ) -> Option<PidNs> {
        if self.ns_of.len() >= MAX_TRACKED {
            self.ns_of.clear();
        }
        if let Some(cmd) = self.runtime_cmd.get(&tgid).copied() {
            if self.runtime_cmd.len() < MAX_TRACKED {
                self.runtime_cmd.insert(child, cmd);
            }
        }
        let has = |bit| flags.is_some_and(|f| f & bit != 0);
        let creates = matches!(
            self.runtime_cmd.get(&tgid),
            Some(OciCommand::Create | OciCommand::Run)
        );
        let init_stage = self.child_stage.contains(&tid) && has(cf::CLONE_PARENT) && creates;
        let parent_ns = match self.caller_ns(tgid) {
            None if nested => Some(self.unseen(tgid)),
            ns => ns,
        };
        let unshared = self.for_children.get(&tid).copied();
        let ns = if let Some(Some(ns)) = unshared {
            Some(PidNs { ns_pid: 0, ..ns })
        } else if has(cf::CLONE_NEWPID) || init_stage || unshared.is_some() {
            self.next_id += 1;
            let level = parent_ns.map_or(1, |p| p.level + 1);
            Some(PidNs::inferred(self.next_id, level, 1))
        } else {
            parent_ns.map(|p| PidNs { ns_pid: 0, ..p })
        };
        if unshared == Some(None) {
            self.for_children.insert(tid, ns);
        }
        match ns {
            Some(ns) => {
                if ns.ns_pid == 1 {
                    self.remember(ns.inum, 1, child);
                }
                self.ns_of.insert(child, ns)
            }
            None => self.ns_of.remove(&child),
        };
        ns
    }

    /// The namespace of `tgid`, nested where the log never showed the namespace made: one of
    /// its own, whose init and depth are unknown (level 1), and `tgid`'s pid there unknown.
    fn unseen(&mut self, tgid: u32) -> PidNs {
        self.next_id += 1;
        let ns = PidNs::inferred(self.next_id, 1, 0);
        self.ns_of.insert(tgid, ns);
        ns
    }

    /// A clone made by process `caller` returned `ret` and the log named its child `child`:
    /// `ret` is the child's pid in the caller's namespace (whatever namespace the child went
    /// to), so it is learnt when the caller's namespace is an inferred one.
    pub fn named(&mut self, caller: u32, ret: i64, child: u32) {
        let Some(ns) = self.caller_ns(caller) else {
            return;
        };
        if let Some(pid) = u32::try_from(ret).ok().filter(|&p| p > 0) {
            self.remember(ns.inum, pid, child);
        }
    }

    /// Task `tid` called `unshare(CLONE_NEWPID)`: its next child is pid 1 of a new namespace.
    pub fn unshared(&mut self, tid: u32) {
        if self.for_children.len() >= MAX_TRACKED {
            self.for_children.clear();
        }
        self.for_children.insert(tid, None);
    }

    /// A clone of process `caller` returned `ret` for a child in namespace `ns`: when that is
    /// the caller's own inferred namespace, `ret` is the child's pid there.
    pub fn member_pid(&self, caller: u32, ns: &mut PidNs, ret: i64) {
        let same = self.caller_ns(caller).is_some_and(|c| c.inum == ns.inum);
        if let Some(pid) = u32::try_from(ret)
            .ok()
            .filter(|&p| p > 0 && same && ns.ns_pid == 0)
        {
            ns.ns_pid = pid;
        }
    }

    /// `child` has pid `ns_pid` in namespace `inum` (bounded like the other maps).
    fn remember(&mut self, inum: u64, ns_pid: u32, child: u32) {
        if self.pids.len() >= MAX_TRACKED {
            self.pids.clear();
        }
        self.pids.insert((inum, ns_pid), child);
    }

    /// The namespace process `tgid` is in, when the log implies one.
    pub fn ns_of(&self, tgid: u32) -> Option<PidNs> {
        self.ns_of.get(&tgid).copied()
    }

    /// The namespace a clone of process `tgid` made its child in: its own, also after its
    /// exit (a child the log names late was made before it).
    fn caller_ns(&self, tgid: u32) -> Option<PidNs> {
        self.ns_of
            .get(&tgid)
            .or_else(|| self.exited.get(&tgid))
            .copied()
    }

    /// Pid `pid` names a new task: what an exited process of that pid left is not its.
    pub fn reused(&mut self, pid: u32) {
        if !self.exited.is_empty() {
            self.exited.remove(&pid);
        }
    }

    /// Pid `ns_pid` of namespace `ns` as the log names that process; `None` when no clone the
    /// log showed gave that pid there (the process was made before tracing, or by a task strace
    /// did not follow).
    pub fn log_pid(&self, ns: PidNs, ns_pid: u32) -> Option<u32> {
        self.pids.get(&(ns.inum, ns_pid)).copied()
    }

    /// What was learnt of task `from` belongs to `to` (the initial process's pid became known).
    pub fn rebind(&mut self, from: u32, to: u32) {
        if let Some(ns) = self.ns_of.remove(&from) {
            self.ns_of.insert(to, ns);
        }
        if let Some(cmd) = self.runtime_cmd.remove(&from) {
            self.runtime_cmd.insert(to, cmd);
        }
        if self.child_stage.remove(&from) {
            self.child_stage.insert(to);
        }
        if let Some(ns) = self.for_children.remove(&from) {
            self.for_children.insert(to, ns);
        }
        for pid in self.pids.values_mut().filter(|p| **p == from) {
            *pid = to;
        }
    }

    /// Task `tid` is gone (its process too when it led it).
    pub fn gone(&mut self, tid: u32) {
        self.child_stage.remove(&tid);
        self.for_children.remove(&tid);
        if let Some(ns) = self.ns_of.remove(&tid) {
            if self.exited.len() >= MAX_TRACKED {
                self.exited.clear();
            }
            self.exited.insert(tid, ns);
        }
        self.runtime_cmd.remove(&tid);
    }
}

/// Namespace pids in the order of the host pids: alloc_pid() numbers a new process in every
/// level of its namespace at once, each counting up, so of two children of one caller in one
/// namespace the one with the lower host pid has the lower pid there. A log without attach
/// notices names children by their first line, which may come in the other order (two
/// members killed together print in any order): the pids their clones returned are put back
/// in that order. (A namespace whose pids wrapped around is not told apart.)
pub(super) fn order_member_pids(events: &mut [crate::event::Event]) {
    let mut groups: BTreeMap<(u32, u64), Vec<usize>> = BTreeMap::new();
    for (at, e) in events.iter().enumerate() {
        if let EventKind::Fork {
            child_ns: Some(ns), ..
        } = &e.kind
        {
            if ns.ns_pid > 1 && !ns.is_known() {
                groups.entry((e.tgid, ns.inum)).or_default().push(at);
            }
        }
    }
    for at in groups.into_values().filter(|g| g.len() > 1) {
        // Only forks were grouped.
        let child = |i: usize| {
            if let EventKind::Fork {
                child_tid,
                child_ns,
                ..
            } = &events[i].kind
            {
                (*child_tid, child_ns.map_or(0, |n| n.ns_pid))
            } else {
                (0, 0)
            }
        };
        let mut ns_pids: Vec<u32> = at.iter().map(|&i| child(i).1).collect();
        ns_pids.sort_unstable();
        let mut by_host = at.clone();
        by_host.sort_by_key(|&i| child(i).0);
        for (i, pid) in by_host.into_iter().zip(ns_pids) {
            if let EventKind::Fork {
                child_ns: Some(ns), ..
            } = &mut events[i].kind
            {
                ns.ns_pid = pid;
            }
        }
    }
}
