//! The kernel transitions the engine models, and the adapter that turns the event model into
//! them.
//!
//! Every source (the probes, the strace importer, trace files) ends in [`Event`]s; what is
//! particular to a source (a namespace pid in a clone return, a parent strace cannot see, an
//! argv reported before its exec) is settled where that source builds its events. This
//! adapter only pairs what the event model splits in two (an exec's argv with its success,
//! `exit_group`'s code with the death) so the engine sees one transition per kernel fact.

use std::sync::Arc;

use crate::event::{
    prctl_opt, CapturedStr, CloneFlags, Comm, Event, EventKind, ExecCred, OomInfo, PidNs,
    SignalInfo, Syscall,
};

use super::pidmap::PidMap;

/// Who a transition happened to, and what the kernel said of it at that moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Actor {
    /// Seq of the event.
    pub seq: u64,
    /// Boot-time ns (0 when unknown).
    pub ts_ns: u64,
    /// Process (tgid).
    pub pid: u32,
    /// Thread.
    pub tid: u32,
    /// The kernel's word on its real parent (tgid); 0 when the source cannot tell.
    pub ppid: u32,
    /// The thread's name then (empty when unknown).
    pub comm: Comm,
    /// Its real uid then; `u32::MAX` when the source cannot tell.
    pub uid: u32,
}

/// copy_process(): a new task. The [`Actor`] is the calling thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Birth {
    /// The new task's thread id (host namespace).
    pub child_tid: u32,
    /// Its process id (the caller's with CLONE_THREAD).
    pub child_tgid: u32,
    /// Its real parent as the source saw it; 0 when it did not (then copy_process()'s rule
    /// decides from the flags).
    pub parent: u32,
    /// The creating call, when known.
    pub syscall: Option<Syscall>,
    /// Its clone flags, when known.
    pub flags: Option<CloneFlags>,
    /// The new task's pid namespace and its pid there, when known.
    pub ns: Option<PidNs>,
}

/// A successful exec (bprm_execve → exec_binprm).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExecDone {
    /// The thread that called exec (it takes over the leader's pid: de_thread()).
    pub old_tid: u32,
    /// The file, when known.
    pub exe: Option<Arc<str>>,
    /// The new argv, when the source reported it.
    pub argv: Vec<String>,
    /// argv (or the path) was cut short by the source.
    pub truncated: bool,
    /// The kernel's word on the task's credentials and executable after the exec, when the
    /// source saw it.
    pub cred: Option<ExecCred>,
}

/// One fact about the kernel's process tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Transition {
    /// A live task made a call that changes nothing the model keeps (clone entry, a failed
    /// exec, a syscall exit...): it exists, and the kernel reports its parent.
    Alive(Actor),
    /// copy_process().
    Born(Actor, Birth),
    /// A successful exec.
    Exec(Actor, ExecDone),
    /// The thread's comm changed (PR_SET_NAME, `task_rename`).
    Renamed(Actor, Comm),
    /// PR_SET_CHILD_SUBREAPER set (true) or cleared.
    Subreaper(Actor, bool),
    /// PR_GET_CHILD_SUBREAPER read the flag (an strace log's `[1]`/`[0]`): the flag as it
    /// is from this event on, whenever it was set (before the log began: `strace -p`).
    SubreaperSeen(Actor, bool),
    /// exit_group(code) called: every thread of the process is going.
    ExitGroupCalled(Actor, i32),
    /// cgroup_attach_task(): the actor (the mover) put task `tid` into cgroup `path`.
    CgroupMoved {
        /// Who moved it.
        actor: Actor,
        /// The moved task.
        tid: u32,
        /// The destination cgroup.
        path: Arc<str>,
    },
    /// The Kubernetes annotations of container `container_id`, read from its bundle when the
    /// runtime (the actor) started on it.
    ContainerMeta {
        /// The runtime.
        actor: Actor,
        /// The container id.
        container_id: Arc<str>,
        /// What the annotations say.
        identity: super::k8s::K8sIdentity,
    },
    /// A signal was generated (__send_signal_locked / do_notify_parent). The actor is the task
    /// the source saw it in, which may be gone already (a dying child's SIGCHLD): only the
    /// signal's own sender and target count.
    Signal(Actor, SignalInfo),
    /// The OOM killer marked a victim (mark_oom_victim); the actor was allocating.
    OomVictim(Actor, OomInfo),
    /// A task ended (do_exit); `group_dead` when it was the last of its process.
    TaskExit {
        /// The task.
        actor: Actor,
        /// wait(2) status word.
        status: u32,
        /// It was the last live thread of its process.
        group_dead: bool,
    },
}

impl Actor {
    /// The task an event happened in, as the event says.
    fn of(ev: &Event) -> Actor {
        Actor {
            seq: ev.seq,
            ts_ns: ev.ts_ns,
            pid: ev.tgid,
            tid: ev.tid,
            ppid: ev.ppid,
            comm: ev.comm,
            uid: ev.uid,
        }
    }
}

impl Transition {
    /// The variant's name (what the kind table, `event::Kind`, lists as the engine's).
    pub fn name(&self) -> &'static str {
        match self {
            Transition::Alive(_) => "Alive",
            Transition::Born(..) => "Born",
            Transition::Exec(..) => "Exec",
            Transition::Renamed(..) => "Renamed",
            Transition::Subreaper(..) => "Subreaper",
            Transition::SubreaperSeen(..) => "SubreaperSeen",
            Transition::ExitGroupCalled(..) => "ExitGroupCalled",
            Transition::CgroupMoved { .. } => "CgroupMoved",
            Transition::ContainerMeta { .. } => "ContainerMeta",
            Transition::Signal(..) => "Signal",
            Transition::OomVictim(..) => "OomVictim",
            Transition::TaskExit { .. } => "TaskExit",
        }
    }

    /// The task it happened to.
    pub fn actor(&self) -> &Actor {
        match self {
            Transition::Alive(a)
            | Transition::Born(a, _)
            | Transition::Exec(a, _)
            | Transition::Renamed(a, _)
            | Transition::Subreaper(a, _)
            | Transition::SubreaperSeen(a, _)
            | Transition::ExitGroupCalled(a, _)
            | Transition::CgroupMoved { actor: a, .. }
            | Transition::ContainerMeta { actor: a, .. }
            | Transition::Signal(a, _)
            | Transition::OomVictim(a, _)
            | Transition::TaskExit { actor: a, .. } => a,
        }
    }
}

/// Pending exec enters kept at most (stale ones pile up when exits are lost).
pub(crate) const MAX_PENDING_EXECS: usize = 1 << 16;

#[derive(Clone, Debug)]
struct PendingExec {
    filename: String,
    argv: Vec<String>,
    truncated: bool,
}

/// Event model → transitions. Holds exec enters until their outcome.
#[derive(Clone, Debug, Default)]
pub struct Adapter {
    pending_exec: PidMap<PendingExec>,
}

/// What [`Adapter::adapt`] made of one event.
#[derive(Debug)]
pub(crate) struct Adapted {
    pub transition: Transition,
    /// Pending exec enters were dropped to stay bounded.
    pub overflowed: bool,
}

impl Adapter {
    /// The transition one event stands for.
    pub(crate) fn adapt(&mut self, ev: &Event) -> Adapted {
        let actor = Actor::of(ev);
        let mut overflowed = false;
        let transition = match &ev.kind {
            EventKind::Fork { .. } => born(actor, &ev.kind),
            EventKind::Exec {
                old_tid,
                filename,
                cred,
            } => Transition::Exec(actor, self.exec_done(ev.tid, *old_tid, filename, *cred)),
            EventKind::ExecEnter {
                filename,
                argv,
                argv_truncated,
                ..
            } => {
                overflowed = self.exec_enter(ev.tid, filename, argv, *argv_truncated);
                Transition::Alive(actor)
            }
            EventKind::SyscallExit { syscall, ret } => {
                // A failed exec changes nothing; a successful one was consumed by Exec.
                if syscall.is_exec() && *ret <= 0 {
                    self.pending_exec.remove(&ev.tid);
                }
                Transition::Alive(actor)
            }
            EventKind::ExitEnter { syscall, code } if *syscall == Syscall::ExitGroup => {
                Transition::ExitGroupCalled(actor, *code)
            }
            EventKind::PrctlEnter { .. } => prctl(actor, &ev.kind),
            // The flag the probes read from the kernel: the prctl that set it.
            EventKind::Subreaper { on } => Transition::Subreaper(actor, *on),
            EventKind::TaskExit {
                exit_code,
                group_dead,
            } => {
                self.pending_exec.remove(&ev.tid);
                Transition::TaskExit {
                    actor,
                    status: *exit_code,
                    group_dead: *group_dead,
                }
            }
            EventKind::CgroupAttach { pid, path, .. } => Transition::CgroupMoved {
                actor,
                tid: *pid,
                path: Arc::from(path.value.as_str()),
            },
            EventKind::ContainerMeta { .. } => container_meta(actor, &ev.kind),
            EventKind::Signal(i) => Transition::Signal(actor, *i),
            EventKind::OomVictim(o) => Transition::OomVictim(actor, o.clone()),
            EventKind::ExitEnter { .. } | EventKind::CloneEnter { .. } => Transition::Alive(actor),
        };
        Adapted {
            transition,
            overflowed,
        }
    }

    /// The exec attempts whose outcome never came (the source ended), by tid: each as the
    /// exec it would be.
    pub(crate) fn take_unfinished_execs(&mut self) -> Vec<(u32, ExecDone)> {
        let mut v: Vec<(u32, ExecDone)> = self
            .pending_exec
            .drain()
            .map(|(tid, p)| {
                let exe = (!p.filename.is_empty()).then(|| Arc::from(p.filename.as_str()));
                let x = ExecDone {
                    old_tid: tid,
                    exe,
                    argv: p.argv,
                    truncated: p.truncated,
                    cred: None,
                };
                (tid, x)
            })
            .collect();
        v.sort_by_key(|(tid, _)| *tid);
        v
    }

    /// Holds an exec's argv until its outcome; whether older ones were dropped to stay bounded.
    fn exec_enter(
        &mut self,
        tid: u32,
        filename: &CapturedStr,
        argv: &[String],
        argv_truncated: bool,
    ) -> bool {
        let overflowed = self.pending_exec.len() >= MAX_PENDING_EXECS;
        if overflowed {
            self.pending_exec.clear();
        }
        let pending = PendingExec {
            filename: filename.value.clone(),
            argv: argv.to_vec(),
            truncated: argv_truncated || filename.truncated,
        };
        self.pending_exec.insert(tid, pending);
        overflowed
    }

    fn exec_done(
        &mut self,
        tid: u32,
        old_tid: u32,
        filename: &CapturedStr,
        cred: Option<ExecCred>,
    ) -> ExecDone {
        let filename = filename.value.as_str();
        let pending = self.pending_exec.remove(&old_tid);
        if old_tid != tid {
            // The exec'ing thread took over the leader's pid; its own tid is gone.
            self.pending_exec.remove(&tid);
        }
        let exe = if !filename.is_empty() {
            Some(Arc::from(filename))
        } else {
            pending.as_ref().map(|p| Arc::from(p.filename.as_str()))
        };
        let (argv, truncated) = pending.map_or((Vec::new(), false), |p| (p.argv, p.truncated));
        ExecDone {
            old_tid,
            exe,
            argv,
            truncated,
            cred,
        }
    }
}

/// copy_process(): a new task (a thread of the creator's process with a tgid of 0).
fn born(actor: Actor, kind: &EventKind) -> Transition {
    let EventKind::Fork {
        child_tid,
        child_tgid,
        child_ppid,
        syscall,
        flags,
        child_ns,
    } = kind
    else {
        return Transition::Alive(actor);
    };
    let birth = Birth {
        child_tid: *child_tid,
        child_tgid: if *child_tgid == 0 {
            *child_tid
        } else {
            *child_tgid
        },
        parent: *child_ppid,
        syscall: *syscall,
        flags: *flags,
        ns: *child_ns,
    };
    Transition::Born(actor, birth)
}

/// A bundle's annotations, read for the runtime (the actor).
fn container_meta(actor: Actor, kind: &EventKind) -> Transition {
    let EventKind::ContainerMeta {
        container_id,
        annotations,
        ..
    } = kind
    else {
        return Transition::Alive(actor);
    };
    Transition::ContainerMeta {
        actor,
        container_id: Arc::from(container_id.as_str()),
        identity: super::k8s::K8sIdentity::from_annotations(annotations),
    }
}

/// A prctl call: a rename, the subreaper flag set or cleared, or read back (an strace log's
/// `PR_GET_CHILD_SUBREAPER, [1]`); any other option changes nothing the model keeps.
fn prctl(actor: Actor, kind: &EventKind) -> Transition {
    let EventKind::PrctlEnter {
        option,
        arg2,
        name,
        shown,
    } = kind
    else {
        return Transition::Alive(actor);
    };
    match (*option, name) {
        (prctl_opt::PR_SET_NAME, Some(name)) => Transition::Renamed(actor, Comm::new(&name.value)),
        (prctl_opt::PR_SET_CHILD_SUBREAPER, _) => Transition::Subreaper(actor, *arg2 != 0),
        (prctl_opt::PR_GET_CHILD_SUBREAPER, _) => match shown.as_ref().and_then(|s| s.read) {
            Some(v) => Transition::SubreaperSeen(actor, v != 0),
            None => Transition::Alive(actor),
        },
        _ => Transition::Alive(actor),
    }
}

#[cfg(test)]
#[path = "transition_kinds_tests.rs"]
mod kinds_tests;
