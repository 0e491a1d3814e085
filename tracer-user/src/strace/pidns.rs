//! Pid namespaces an strace log implies. strace shows no namespace, so they are inferred:
//!
//! * a child created with `CLONE_NEWPID` is the first process (pid 1) of a new namespace;
//! * runc's `runc:[1:CHILD]` stage has unshared the pid namespace before it clones
//!   `runc:[2:INIT]` (CLONE_PARENT) when the runtime creates a container (`runc create`,
//!   `runc run`): INIT is pid 1 of a new namespace. Under `runc exec` the stages join the
//!   container's namespace instead (setns), so nothing is inferred there;
//! * any other child is in its creator's namespace, with a pid there that the log does not
//!   show (0: unknown). A process whose namespace nothing implies gets none.
//!
//! An inferred namespace gets an id of its own ([`PidNs::inferred`], numbered in order of
//! appearance), never a kernel inode.
//!
//! Pids inside an inferred namespace are learnt from the clones that made them: clone returns
//! the child's pid in the *caller's* namespace, and once the importer has named the child (by
//! its pid in the log) the pair is kept ([`NsInference::named`]); a new namespace's first
//! process is its pid 1. [`NsInference::log_pid`] reads a namespace pid back as the log's pid.

use std::collections::{HashMap, HashSet};

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
}

impl NsInference {
    /// Learns from an event of task `tid` of process `tgid` before it is emitted.
    pub fn observe(&mut self, tgid: u32, tid: u32, kind: &EventKind) {
        match kind {
            EventKind::PrctlEnter {
                option: prctl_opt::PR_SET_NAME,
                name: Some(name),
                ..
            } => {
                let stage = InitStage::from_comm(name.value.as_bytes());
                if stage == Some(InitStage::Child) {
                    self.bounded_insert_stage(tid);
                } else {
                    self.child_stage.remove(&tid);
                }
            }
            EventKind::ExecEnter { filename, argv, .. } => {
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
            _ => {}
        }
    }

    fn bounded_insert_stage(&mut self, tid: u32) {
        if self.child_stage.len() >= MAX_TRACKED {
            self.child_stage.clear();
        }
        self.child_stage.insert(tid);
    }

    /// The namespace of a new process `child` created by thread `tid` of `tgid`.
    pub fn born(&mut self, tgid: u32, tid: u32, child: u32, flags: Option<u64>) -> Option<PidNs> {
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
        let parent_ns = self.ns_of.get(&tgid).copied();
        let ns = if has(cf::CLONE_NEWPID) || init_stage {
            self.next_id += 1;
            let level = parent_ns.map_or(1, |p| p.level + 1);
            Some(PidNs::inferred(self.next_id, level, 1))
        } else {
            parent_ns.map(|p| PidNs { ns_pid: 0, ..p })
        };
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

    /// A clone made by process `caller` returned `ret` and the log named its child `child`:
    /// `ret` is the child's pid in the caller's namespace (whatever namespace the child went
    /// to), so it is learnt when the caller's namespace is an inferred one.
    pub fn named(&mut self, caller: u32, ret: i64, child: u32) {
        let Some(ns) = self.ns_of.get(&caller) else {
            return;
        };
        if let Some(pid) = u32::try_from(ret).ok().filter(|&p| p > 0) {
            self.remember(ns.inum, pid, child);
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
        for pid in self.pids.values_mut().filter(|p| **p == from) {
            *pid = to;
        }
    }

    /// Task `tid` is gone (its process too when it led it).
    pub fn gone(&mut self, tid: u32) {
        self.child_stage.remove(&tid);
        self.ns_of.remove(&tid);
        self.runtime_cmd.remove(&tid);
    }
}
