//! Signals and deaths: who sent what to whom (kernel/signal.c __send_signal_locked(),
//! do_notify_parent()), the OOM killer's victims (mm/oom_kill.c mark_oom_victim()), and how
//! each process ended.
//!
//! A death is told from what the kernel said at the time: the wait status of the last thread
//! (sched_process_exit), the last terminating signal it was sent, an OOM mark, or the death of
//! its pid namespace's init (zap_pid_ns_processes(), which the engine models when that init
//! ends). SIGCHLD is a second kernel word on the parent: do_notify_parent() sends it to the
//! parent of record at that moment, and the engine checks it against the model.

use std::sync::Arc;

use crate::event::{Comm, ExitStatus, OomInfo, SignalInfo, SignalResult};
use crate::names::si_code;

use super::ending::{
    terminates, Death, DeathHow, OomMark, SignalRecord, MAX_SIGNALS, SIGCHLD, SIGKILL,
};
use super::process::{How, ProcId, Process, Reason};
use super::reaper::{self, Adoption, Reparenting};
use super::transition::Actor;
use super::tree::Tree;

impl Process {
    /// `exit 0`, `killed SIGTERM by 812`…, `running` while it lives ([`Death::short`]).
    pub fn exit_text(&self) -> String {
        self.death().map_or_else(|| "running".into(), |d| d.short())
    }

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
            ts_ns: self.exit_ts_ns,
        };
        match self.exit_status {
            None => {}
            Some(ExitStatus::Exited { .. }) => d.how = DeathHow::Exit,
            Some(ExitStatus::Killed { signal, .. }) => {
                d.by = self.killer().filter(|k| k.signal == signal).copied();
                d.how = DeathHow::Signal;
                if signal == SIGKILL {
                    if let Some(o) = self.oom() {
                        d.how = DeathHow::Oom;
                        d.oom = Some(o.clone());
                    } else if let Some((init, _)) = self.zapped_by() {
                        d.how = DeathHow::PidNs;
                        d.ns_init = Some(init);
                    }
                }
            }
        }
        Some(d)
    }
}

/// The engine's part of one process's end: what it counts and whom it reparents.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Ended {
    /// The record was live until now (retention counts the exited records it holds).
    pub first: bool,
    /// Its orphans and their new parent (`reaper.rs`), for the engine to apply.
    pub orphans: Option<Reparenting>,
}

/// The process is gone (the exit of its last thread, or a pid reused while the model still
/// had it): its record marked, its threads dead, its pid namespace's zap modelled, and the
/// reparenting of its orphans (exit_notify() → forget_original_parent()) returned.
pub(super) fn end(
    tree: &mut Tree,
    id: ProcId,
    status: Option<ExitStatus>,
    seq: u64,
    ts_ns: u64,
) -> Ended {
    let p = &mut tree[id];
    let first = !p.exited;
    p.exited = true;
    p.exit_status = status.or(p.exit_group_code.map(|code| ExitStatus::Exited { code }));
    p.exit_seq = Some(seq);
    p.exit_ts_ns = Some(ts_ns);
    tree.all_threads_dead(id);
    if matches!(status, Some(ExitStatus::Killed { signal: 9, .. })) {
        zapped_while_init_exits(tree, id);
    }
    tree.leave_namespace(id);
    if tree[id].is_ns_init() {
        zap_namespace(tree, id, seq);
    }
    Ended {
        first,
        orphans: reaper::orphans(tree, id),
    }
}

/// What a SIGCHLD said of the model's parent (do_notify_parent()), for the engine's counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Sigchld {
    /// Its child is not in the model.
    Unchecked,
    /// The kernel notified the model's parent, or the reaper a zombie was handed to.
    Agreed,
    /// It agrees once the model's adoption of the child is moved: the kernel adopted the
    /// child while it was exiting (`reaper::adopted_while_exiting`); the adoption to make.
    AgreedAdopted(Option<Adoption>),
    /// It agrees once the model's adoption of the child is taken back (`adoption_undone`).
    AgreedUndone(Option<Undo>),
    /// The model did not know the child's parent (the source never showed its birth): the
    /// process notified is it (do_notify_parent() signals the parent's thread group).
    ParentInferred {
        /// The child.
        child: ProcId,
        /// The notified process's record (`None`: the source named it only here).
        parent: Option<ProcId>,
        /// Its pid.
        parent_pid: u32,
    },
    /// The kernel notified another process: the model was wrong.
    Disagreed {
        /// The child.
        pid: u32,
        /// The parent the model had.
        model: u32,
        /// The process the kernel notified.
        kernel: u32,
    },
}

/// An adoption the model made that the kernel never did: `child` goes back to `parent`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Undo {
    /// The process the model had adopted.
    pub child: ProcId,
    /// Its parent before (the record of the pid its lineage names).
    pub parent: ProcId,
    /// That parent's pid.
    pub parent_pid: u32,
    /// The adoption's reason, to take off the totals.
    pub reason: Reason,
}

/// A generated signal: kept on the target's and the sender's records, the fatal one as the
/// target's `killer`; a SIGCHLD from do_notify_parent() checked against the model (`None`
/// for any other signal).
pub(super) fn signal(tree: &mut Tree, a: &Actor, info: &SignalInfo) -> Option<Sigchld> {
    let sender_id = live_or_newest(tree, info.sender);
    let sender_comm = match sender_id {
        _ if a.pid == info.sender && !a.comm.is_empty() => a.comm,
        Some(id) => tree[id].comm,
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
        inferred: info.inferred,
    };
    let target_id = live_or_newest(tree, info.target);
    if let Some(t) = target_id {
        let p = &mut tree[t];
        keep_signal(p, rec);
        if terminates(rec.signal) && rec.result != SignalResult::Ignored && !p.exited {
            p.rare_mut().killer = Some(rec);
        }
    }
    if let Some(s) = sender_id.filter(|&s| Some(s) != target_id) {
        keep_signal(&mut tree[s], rec);
    }
    let sigchld = rec.signal == SIGCHLD && (1..=si_code::CLD_CONTINUED).contains(&rec.code);
    sigchld.then(|| check_sigchld(tree, &rec))
}

/// The newest record of `pid` (0: none).
fn live_or_newest(tree: &Tree, pid: u32) -> Option<ProcId> {
    (pid != 0).then(|| tree.newest(pid)).flatten()
}

/// do_notify_parent() sends SIGCHLD to the child's parent of record (kernel/signal.c);
/// a dying process hands its zombie children to their new reaper with one more each
/// (kernel/exit.c reparent_leader()), in which the live probe's current task is the dying
/// parent and an strace log's `si_pid` is the zombie.
fn check_sigchld(tree: &Tree, rec: &SignalRecord) -> Sigchld {
    let Some(child) = live_or_newest(tree, rec.sender) else {
        return Sigchld::Unchecked;
    };
    let c = &tree[child];
    let model = c.ppid;
    // Any thread of the parent's thread group may dequeue it (complete_signal()): a
    // receiver the model knows as a thread stands for its process.
    let receiver = tree
        .record_of_tid(rec.target)
        .map_or(rec.target, |id| tree[id].pid);
    let handed_over = |dead: Option<ProcId>| {
        dead.is_some_and(|d| {
            tree[d].exited && reaper::reaper_of(tree, d).map(|(pid, _)| pid) == Some(receiver)
        })
    };
    // The model adopts orphans at the parent's exit tracepoint; the kernel reparents them
    // later, in its exit_notify(): a child dying in between still notifies the old parent.
    let raced_old_parent = c.last_adoption().is_some_and(
        |l| matches!(l.reason, Some(Reason::ParentExited { parent, .. }) if parent == receiver),
    );
    // The reverse race: the child's exit tracepoint came first, the parent's exit_notify()
    // handed it to the reaper before its own exit_notify() raised this SIGCHLD. Only a
    // live probe tells this apart from a zombie's handover (reparent_leader()): there the
    // sender's thread is the exiting child itself; an strace log's si_pid has no thread.
    let zombies_handed_over =
        c.children.iter().any(|&k| tree[k].exited) && handed_over(Some(child));
    if let Some(inferred) = parent_from_sigchld(tree, child, rec.target, receiver) {
        return inferred;
    }
    let exiting = c.exited && rec.sender_tid != 0 && rec.code <= si_code::CLD_DUMPED;
    if exiting && model != receiver && !zombies_handed_over && handed_over(c.parent) {
        return Sigchld::AgreedAdopted(reaper::adopted_while_exiting(tree, child));
    }
    // The first race, told by the child itself: it was never adopted while it ran.
    if exiting && raced_old_parent {
        return Sigchld::AgreedUndone(adoption_undone(tree, child));
    }
    let agrees = model == receiver
        || receiver == 0
        || raced_old_parent
        || handed_over(c.parent)
        || zombies_handed_over;
    if agrees {
        return Sigchld::Agreed;
    }
    Sigchld::Disagreed {
        pid: rec.sender,
        model,
        kernel: receiver,
    }
}

/// A child whose parent the model never knew (no birth in the source, no parent reported)
/// notified `receiver`: that is its parent (or the process of the thread that dequeued it).
fn parent_from_sigchld(tree: &Tree, child: ProcId, target: u32, receiver: u32) -> Option<Sigchld> {
    let c = &tree[child];
    if c.ppid != 0 || c.parent.is_some() || receiver == 0 || receiver == c.pid {
        return None;
    }
    let parent = tree.record_of_tid(target).or_else(|| tree.live(receiver));
    Some(Sigchld::ParentInferred {
        child,
        parent,
        parent_pid: receiver,
    })
}

/// `child`'s exit tracepoint came after its parent's, so the model handed it to the
/// reaper; but its own exit_notify() ran before the parent's forget_original_parent(),
/// and its SIGCHLD went to that parent: it died that parent's child (and only its zombie
/// went to the reaper, reparent_leader()). The adoption to take back.
fn adoption_undone(tree: &Tree, child: ProcId) -> Option<Undo> {
    let l = tree[child]
        .lineage
        .last()
        .filter(|l| l.how == How::Adopted)?;
    let Some(reason @ Reason::ParentExited { parent, .. }) = l.reason else {
        return None;
    };
    Some(Undo {
        child,
        parent: tree.newest(parent)?,
        parent_pid: parent,
        reason,
    })
}

/// The OOM killer chose the process of thread `info.tid`.
pub(super) fn oom_victim(tree: &mut Tree, a: &Actor, info: &OomInfo) {
    let Some(id) = tree.record_of_tid(info.tid) else {
        return;
    };
    let p = &mut tree[id];
    let cgroup = info.cgroup.as_deref().map(Arc::from).or(p.cgroup.clone());
    p.rare_mut().oom = Some(OomMark {
        seq: a.seq,
        ts_ns: a.ts_ns,
        cgroup,
        limit: info.limit,
        anon_rss_kb: info.anon_rss_kb,
    });
}

/// zap_pid_ns_processes(): the init of a pid namespace died, and the kernel kills every
/// process left in it (those of `runc exec` included, whose parents are outside). Marked
/// here: the live processes whose own namespace it is (the namespace's index, so the cost
/// is its members', not every record's); those of namespaces nested in it are marked when
/// their own init's death, which this zap causes, comes.
fn zap_namespace(tree: &mut Tree, init: ProcId, seq: u64) {
    let Some(ns) = tree[init].pidns else {
        return;
    };
    let init_pid = tree[init].pid;
    let Some(entry) = tree.namespace(ns.inum) else {
        return;
    };
    // Oldest record first, as the store holds them (the change log's order).
    let members: Vec<ProcId> = entry.live.iter().copied().collect();
    for id in members {
        if !tree[id].exited && id != init {
            tree[id].rare_mut().zapped_by = Some((init_pid, seq));
        }
    }
    for id in tree.take_zapped_early(ns.inum) {
        tree[id].rare_mut().zapped_by = Some((init_pid, seq));
    }
}

/// A member of a pid namespace was killed by SIGKILL that no one was seen sending, while
/// the namespace's init is on its way out (it called exit_group, or a fatal signal reached
/// it): that is the zap. The kernel runs zap_pid_ns_processes() in the init's own exit
/// (exit_notify() → forget_original_parent() → find_child_reaper()) and waits there for
/// every member, so the members end before the init's end is reported — strace prints
/// the init's `exit_group`, the members' `+++ killed by SIGKILL +++`, then the init's
/// `+++ exited`. Marked now; the init's end gives the zap's seq.
fn zapped_while_init_exits(tree: &mut Tree, id: ProcId) {
    let p = &tree[id];
    let sent = p
        .killer()
        .is_some_and(|k| k.signal == SIGKILL && k.sender != 0);
    let Some(ns) = p.pidns.filter(|ns| ns.level > 0 && ns.ns_pid != 1 && !sent) else {
        return;
    };
    let Some(init) = tree.namespace(ns.inum).and_then(|e| e.init) else {
        return;
    };
    let i = &tree[init];
    let exiting = i.exit_group_code.is_some() || i.killer().is_some();
    if i.exited || !exiting || init == id {
        return;
    }
    let init_pid = i.pid;
    tree[id].rare_mut().zapped_by = Some((init_pid, 0));
    tree.zapped_early(ns.inum, id);
}

fn keep_signal(p: &mut Process, rec: SignalRecord) {
    let rare = p.rare_mut();
    if rare.signals.len() < MAX_SIGNALS {
        rare.signals.push(rec);
    } else {
        rare.signals_dropped = rare.signals_dropped.saturating_add(1);
    }
}
