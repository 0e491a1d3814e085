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
    terminates, Death, DeathHow, OomMark, SigchldChecks, SignalRecord, MAX_SIGNALS, SIGCHLD,
    SIGKILL,
};
use super::engine::{Engine, WarningKind};
use super::process::{ProcId, Process, Reason};
use super::transition::Actor;

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
            inferred: info.inferred,
        };
        let target_id = self.live_or_newest(info.target);
        if let Some(t) = target_id {
            keep_signal(&mut self.procs[t], rec);
            let p = &mut self.procs[t];
            if terminates(rec.signal) && rec.result != SignalResult::Ignored && !p.exited {
                p.rare_mut().killer = Some(rec);
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
        // Any thread of the parent's thread group may dequeue it (complete_signal()): a
        // receiver the model knows as a thread stands for its process.
        let receiver = self
            .record_of_tid(rec.target)
            .map_or(rec.target, |id| self.procs[id].pid);
        let rec = &SignalRecord {
            target: receiver,
            ..*rec
        };
        let handed_over = |e: &Engine, dead: Option<ProcId>| {
            dead.is_some_and(|d| e.procs[d].exited && e.reaper_pid(d) == Some(rec.target))
        };
        // The model adopts orphans at the parent's exit tracepoint; the kernel reparents them
        // later, in its exit_notify(): a child dying in between still notifies the old parent.
        let raced_old_parent = c.last_adoption().is_some_and(|l| {
            matches!(l.reason, Some(Reason::ParentExited { parent, .. }) if parent == rec.target)
        });
        // The reverse race: the child's exit tracepoint came first, the parent's exit_notify()
        // handed it to the reaper before its own exit_notify() raised this SIGCHLD. Only a
        // live probe tells this apart from a zombie's handover (reparent_leader()): there the
        // sender's thread is the exiting child itself; an strace log's si_pid has no thread.
        let zombies_handed_over =
            c.children.iter().any(|&k| self.procs[k].exited) && handed_over(self, Some(child));
        let exiting = c.exited && rec.sender_tid != 0 && rec.code <= si_code::CLD_DUMPED;
        if exiting && model != rec.target && !zombies_handed_over && handed_over(self, c.parent) {
            self.adopted_while_exiting(child, rec.seq);
            self.sigchld.agreed += 1;
            return;
        }
        // The first race, told by the child itself: it was never adopted while it ran.
        if exiting && raced_old_parent {
            self.adoption_undone(child);
            self.sigchld.agreed += 1;
            return;
        }
        let agrees = model == rec.target
            || rec.target == 0
            || raced_old_parent
            || handed_over(self, c.parent)
            || zombies_handed_over;
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
    pub(super) fn zap_namespace(&mut self, init: ProcId, seq: u64) {
        let Some(ns) = self.procs[init].pidns else {
            return;
        };
        let init_pid = self.procs[init].pid;
        let Some(entry) = self.namespaces.get(&ns.inum) else {
            return;
        };
        // Oldest record first, as the store holds them (the change log's order).
        let members: Vec<ProcId> = entry.live.iter().copied().collect();
        for id in members {
            let p = &self.procs[id];
            if !p.exited && id != init {
                self.procs[id].rare_mut().zapped_by = Some((init_pid, seq));
            }
        }
        let early = self
            .namespaces
            .get_mut(&ns.inum)
            .map(|e| std::mem::take(&mut e.zapped_early))
            .unwrap_or_default();
        for id in early {
            self.procs[id].rare_mut().zapped_by = Some((init_pid, seq));
        }
    }

    /// A member of a pid namespace was killed by SIGKILL that no one was seen sending, while
    /// the namespace's init is on its way out (it called exit_group, or a fatal signal reached
    /// it): that is the zap. The kernel runs zap_pid_ns_processes() in the init's own exit
    /// (exit_notify() → forget_original_parent() → find_child_reaper()) and waits there for
    /// every member, so the members end before the init's end is reported — strace prints
    /// the init's `exit_group`, the members' `+++ killed by SIGKILL +++`, then the init's
    /// `+++ exited`. Marked now; the init's end gives the zap's seq.
    pub(super) fn zapped_while_init_exits(&mut self, id: ProcId) {
        let p = &self.procs[id];
        let sent = p
            .killer()
            .is_some_and(|k| k.signal == SIGKILL && k.sender != 0);
        let Some(ns) = p.pidns.filter(|ns| ns.level > 0 && ns.ns_pid != 1 && !sent) else {
            return;
        };
        let Some(init) = self.namespaces.get(&ns.inum).and_then(|e| e.init) else {
            return;
        };
        let i = &self.procs[init];
        let exiting = i.exit_group_code.is_some() || i.killer().is_some();
        if i.exited || !exiting || init == id {
            return;
        }
        let init_pid = i.pid;
        self.procs[id].rare_mut().zapped_by = Some((init_pid, 0));
        if let Some(e) = self.namespaces.get_mut(&ns.inum) {
            e.zapped_early.push(id);
        }
    }

    /// The SIGCHLD checks so far.
    pub fn sigchld_checks(&self) -> SigchldChecks {
        self.sigchld
    }
}

fn keep_signal(p: &mut Process, rec: SignalRecord) {
    let rare = p.rare_mut();
    if rare.signals.len() < MAX_SIGNALS {
        rare.signals.push(rec);
    } else {
        rare.signals_dropped = rare.signals_dropped.saturating_add(1);
    }
}
