//! Which tasks of a log are threads. The log says so by a `CLONE_THREAD` clone that made the
//! task, a non-leader exec (`+++ superseded by execve in pid N +++`), or a child's SIGCHLD
//! dequeued by a task the log never created (`senders.rs`). `strace: Process N attached with
//! M threads` names only N: the next M-1 unknown pids that appear without their own notice or
//! a clone naming them are taken as N's threads — *tentatively*, since in an excerpt (a
//! `grep` of the log, a `head`/`tail` cut) a pid may be unknown only because the lines that
//! made it were cut. A tentative thread is taken back as a process of its own (parent
//! unknown, as far as the log tells) when the log shows it is one:
//!
//! * it exec'd and kept its pid: a thread that execs takes its leader's pid (de_thread():
//!   strace prints `<pid changed to N ...>`), so a task that execs as itself leads a process;
//! * a clone that made a process (no CLONE_THREAD) returned its pid;
//! * a SIGCHLD names it (`si_pid`): only a process's end notifies a parent;
//! * it called exit_group and its supposed process went on calling afterwards, or never
//!   ended in the log (exit_group() kills every thread of the group, its leader last; none
//!   starts a call after it).
//!
//! Its events so far (as far as they are held) become its own process's.

use std::collections::HashMap;

use super::Parser;
use crate::event::EventKind;
use crate::lineage::NewParent;

/// Tentative threads, and those that called exit_group.
#[derive(Debug, Default)]
pub(super) struct Tentative {
    /// tid → the process it was taken to be a thread of.
    of: HashMap<u32, u32>,
    /// A tentative thread that called exit_group → its supposed process.
    exit_grouped: HashMap<u32, u32>,
}

impl Parser {
    /// The log ended: a tentative thread that called exit_group while its supposed process
    /// lives on was not of it.
    pub(super) fn exit_groups_at_end(&mut self) {
        let gone: Vec<u32> = self
            .tentative
            .exit_grouped
            .iter()
            .filter(|(_, g)| self.live.contains(g))
            .map(|(&t, _)| t)
            .collect();
        for t in gone {
            self.untangle(t);
        }
    }

    /// `tid` taken as a thread of `tgid` on an attach notice's count alone.
    pub(super) fn tentative_thread(&mut self, tid: u32, tgid: u32) {
        self.set_thread(tid, tgid);
        self.tentative.of.insert(tid, tgid);
    }

    /// The log showed `tid` is a thread (a clone with CLONE_THREAD made it): no longer
    /// tentative.
    pub(super) fn thread_confirmed(&mut self, tid: u32) {
        self.tentative.of.remove(&tid);
        self.tentative.exit_grouped.remove(&tid);
    }

    /// The log showed `tid` leads a process of its own: if it was a tentative thread, it is
    /// taken back (its held events become its process's). Whether it was one.
    pub(super) fn untangle(&mut self, tid: u32) -> bool {
        let Some(tgid) = self.tentative.of.remove(&tid) else {
            return false;
        };
        self.tentative.exit_grouped.remove(&tid);
        self.tgid_of.remove(&tid);
        if let Some(set) = self.threads.get_mut(&tgid) {
            set.remove(&tid);
        }
        for e in self.out.events.iter_mut().filter(|e| e.tid == tid) {
            e.tgid = tid;
            match &mut e.kind {
                // a leader's end is its process's
                EventKind::TaskExit { group_dead, .. } => *group_dead = true,
                EventKind::Fork {
                    child_tid,
                    child_ppid,
                    flags: Some(f),
                    ..
                } if NewParent::of(*f) == NewParent::Caller && *child_ppid == tgid => {
                    *child_ppid = tid;
                    self.parents.insert(*child_tid, tid);
                }
                _ => {}
            }
        }
        if self.live.contains(&tid) {
            self.unclaimed.insert(tid);
        }
        true
    }

    /// `tid` called exit_group: a tentative thread whose supposed process calls again after
    /// it is not of that process.
    pub(super) fn exit_group_called(&mut self, tid: u32) {
        if let Some(&tgid) = self.tentative.of.get(&tid) {
            self.tentative.exit_grouped.insert(tid, tgid);
        }
    }

    /// `tid` starts a call: the tentative threads that called exit_group in its process are
    /// not of it.
    pub(super) fn calls_after_exit_group(&mut self, tid: u32) {
        if self.tentative.exit_grouped.is_empty() {
            return;
        }
        let tgid = self.tgid(tid);
        let gone: Vec<u32> = self
            .tentative
            .exit_grouped
            .iter()
            .filter(|&(&t, &g)| g == tgid && t != tid)
            .map(|(&t, _)| t)
            .collect();
        for t in gone {
            self.untangle(t);
        }
    }
}
