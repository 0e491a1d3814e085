//! A signal line's sender and receiver as the log names pids, and what the kernel lets the
//! importer infer where strace printed neither (each inference marked
//! [`SignalInfo::inferred`]):
//!
//! * do_notify_parent() sends a child's SIGCHLD to its parent's thread group, and any of its
//!   threads may dequeue it (kernel/signal.c complete_signal()). A receiving tid the log never
//!   created (an `strace -f -o FILE -p` log has no attach notices, so a Go parent's threads
//!   appear unannounced) is a thread of the child's parent, when the log names that parent
//!   and it is alive.
//! * `si_pid` is the child's pid in the receiver's pid namespace. When no clone in the log
//!   gave that pid (the child was made before tracing), the process whose `+++ exited` or
//!   `+++ killed` line comes just before the SIGCHLD, with the matching `si_code`, is taken as
//!   the child — strace stops the parent for its SIGCHLD right after it reaped the child's
//!   exit — unless the log names another parent for it.

use super::line::SigLine;
use super::Parser;
use crate::event::{EventKind, ExitStatus, SignalInfo};
use crate::names::si_code::{CLD_DUMPED, CLD_EXITED, CLD_KILLED, SI_TKILL};

/// Most exited processes whose parent is kept for their SIGCHLD.
const MAX_EXITED_PARENTS: usize = 1 << 16;

impl Parser {
    /// Task `tid` stopped to receive a signal (strace shows the receiver, never the sender's
    /// call): the event is the receiver's, delivered.
    pub(super) fn signal(&mut self, tid: u32, ts: u64, s: SigLine) {
        let child_exit = matches!(s.code, CLD_EXITED | CLD_KILLED | CLD_DUMPED) && s.signal == 17;
        let mut inferred = false;
        if child_exit {
            inferred = self.thread_of_parent(tid, &s);
        }
        let target = self.tgid(tid);
        let mut sender = self.sender(target, &s);
        if child_exit && sender != 0 {
            // only a process's end notifies its parent (threads.rs)
            self.untangle(sender);
        }
        let untranslated = s.strace_pid.is_none() && s.si_pid.is_some_and(|n| n > 0);
        if sender == 0 && child_exit && untranslated {
            if let Some(child) = self.exit_just_before(target, &s) {
                self.out.untranslated_senders = self.out.untranslated_senders.saturating_sub(1);
                sender = child;
                inferred = true;
            }
        }
        let info = SignalInfo {
            signal: s.signal as i32, // at most 128
            code: s.code,
            sender,
            sender_tid: 0,
            target,
            target_tid: tid,
            group: s.code != SI_TKILL,
            result: s.result,
            inferred,
        };
        self.emit(tid, ts, EventKind::Signal(info));
    }

    /// The sender of a signal process `receiver` got, as the log names pids; 0 when unknown.
    /// `si_pid` 0 is the kernel's own "unknown": the sender is outside the receiver's namespace.
    pub(super) fn sender(&mut self, receiver: u32, s: &SigLine) -> u32 {
        if let Some(p) = s.strace_pid {
            return p;
        }
        let Some(n) = s.si_pid.filter(|&n| n > 0) else {
            return 0;
        };
        self.log_pid(receiver, n).unwrap_or_else(|| {
            self.out.untranslated_senders += 1;
            0
        })
    }

    /// Pid `n` of the pid namespace process `tgid` is in, as the log names pids (strace's
    /// namespace): `n` itself when the log puts `tgid` in strace's namespace, the process a
    /// clone there returned `n` for when it is in an inferred one; `None` when nested in a
    /// namespace the log does not tie pids of.
    pub(super) fn log_pid(&self, tgid: u32, n: u32) -> Option<u32> {
        match self.pidns.ns_of(tgid) {
            Some(ns) => self.pidns.log_pid(ns, n),
            None if self.nested.contains(&tgid) => None,
            None => Some(n),
        }
    }

    /// A SIGCHLD received by `tid`, a task the log never created: when the child it names
    /// has a live parent in the log, `tid` is one of that parent's threads (now recorded so).
    fn thread_of_parent(&mut self, tid: u32, s: &SigLine) -> bool {
        // Not created in the log: it appeared unannounced, or its line came first of all
        // (an `-p` log's thread may speak before its leader does).
        let unknown = self.unclaimed.contains(&tid) || self.initial == Some(tid);
        if !unknown || self.tgid(tid) != tid || self.parents.contains_key(&tid) {
            return false;
        }
        // An unclaimed task is in strace's namespace as far as the log tells.
        let Some(child) = s.strace_pid.or(s.si_pid).filter(|&n| n > 0) else {
            return false;
        };
        let parent = self.parents.get(&child).or(self.exited_parents.get(&child));
        let Some(&parent) = parent.filter(|&&p| p != tid && self.live.contains(&p)) else {
            return false;
        };
        self.unclaimed.remove(&tid);
        if self.initial == Some(tid) && self.released.count == 0 {
            // the process that began the log is the parent, whose thread spoke first (once
            // events are handed out, the reader was seeded with the initial process already)
            self.initial = Some(parent);
            self.unclaimed.remove(&parent);
        }
        self.set_thread(tid, parent);
        // what the thread did so far was its process's (once per thread: bounded; of what a
        // `Stream` has not handed out yet)
        for e in self.out.events.iter_mut().filter(|e| e.tid == tid) {
            e.tgid = parent;
        }
        true
    }

    /// The process whose end is the event just before this SIGCHLD of `receiver`, when its
    /// status matches `si_code` and the log names no other parent for it.
    fn exit_just_before(&self, receiver: u32, s: &SigLine) -> Option<u32> {
        let last = self.out.events.last()?;
        let EventKind::TaskExit {
            exit_code,
            group_dead: true,
        } = last.kind
        else {
            return None;
        };
        let killed = matches!(
            ExitStatus::from_wait_status(exit_code),
            ExitStatus::Killed { .. }
        );
        let code_fits = (s.code == CLD_EXITED) != killed;
        let child = last.tgid;
        let parent_fits = self
            .exited_parents
            .get(&child)
            .is_none_or(|&p| p == receiver);
        (code_fits && parent_fits && child != receiver).then_some(child)
    }

    /// Process `tgid` ended: its parent as the log named it is kept for its SIGCHLD.
    pub(super) fn exited_parent(&mut self, tgid: u32) {
        let Some(&parent) = self.parents.get(&tgid) else {
            return;
        };
        if self.exited_parents.len() >= MAX_EXITED_PARENTS {
            self.exited_parents.clear();
        }
        self.exited_parents.insert(tgid, parent);
    }
}
