//! The process tree the engine models: the records (by stable id), which record a pid or a
//! tid names now, who is whose parent, and the pid namespaces with their inits and live
//! members. One type with its own methods; the engine (`engine.rs`) drives it, and the
//! kernel's rules at a death (`death.rs`, `reaper.rs`) and the retention (`engine/retain.rs`)
//! are functions over it.
//!
//! Structure is changed through the methods here (parents and children together, the pid,
//! tid and namespace indexes with the records); a record's own fields through `tree[id]`.

use std::collections::{BTreeSet, HashMap as StdHashMap};
use std::ops::{Index, IndexMut};
use std::sync::Arc;

use crate::event::{clone_flags as cf, CloneFlags, Comm};

use super::cow::CowPidMap as PidMap;
use super::process::{How, ProcId, Process, Thread};
use super::store::{ChangeMark, Store};

/// A pid namespace below the host's, as far as the source showed it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Namespace {
    /// Its `child_reaper`: the first process created in it (pid 1 there).
    pub init: Option<ProcId>,
    /// Its live processes (those whose own namespace it is, init included), by record id:
    /// what zap_pid_ns_processes() kills is read here, not found by a scan of every record.
    /// Written at birth and at exit; shared with the engine's clones until written.
    pub live: Arc<BTreeSet<ProcId>>,
    /// Members killed by SIGKILL while the init's exit was under way, before the init's own
    /// end was seen (the order a waiting tracer reports): its end gives them the zap's seq.
    pub zapped_early: Vec<ProcId>,
}

/// The process tree. Cloning it costs O(chunks): the records and pid maps are held in
/// copy-on-write chunks (`cow.rs`), the namespaces' member sets behind `Arc`s.
#[derive(Clone, Debug, Default)]
pub(super) struct Tree {
    procs: Store,
    /// pid → its newest record (live or exited).
    by_pid: PidMap<ProcId>,
    /// tid → (record, index in its `threads`) of the newest thread with that id, for threads
    /// other than a leader: a leader is slot 0 of `by_pid`'s record for its tid (most
    /// processes have one thread, and a second map entry each would cost as much as a
    /// third of the record).
    tids: PidMap<(ProcId, usize)>,
    /// Pid namespaces below the host's, by inode (or the strace importer's inferred id).
    namespaces: StdHashMap<u64, Namespace>,
}

/// Who copy_process() (kernel/fork.c) makes a new task's real parent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NewParent {
    /// The caller's process.
    Caller,
    /// The caller's own real parent: `CLONE_PARENT`, or `CLONE_THREAD` (a thread's parent is
    /// its process's).
    CallersParent,
}

impl NewParent {
    /// The rule for a clone with `flags`. The one place the user side keeps it: for sources
    /// that do not report the child's parent (the strace importer; the engine for a birth
    /// whose parent its source left unknown). The probe reads the parent from the new task
    /// itself (`sched_process_fork`), and that word is taken as it is.
    pub fn of(flags: CloneFlags) -> NewParent {
        if flags.0 & (cf::CLONE_PARENT | cf::CLONE_THREAD) != 0 {
            NewParent::CallersParent
        } else {
            NewParent::Caller
        }
    }
}

/// Walks from a process's parent up to the root; bounded, so a cycle cannot hang it.
pub struct Ancestors<'a> {
    tree: &'a Tree,
    next: Option<ProcId>,
    left: usize,
}

impl<'a> Iterator for Ancestors<'a> {
    type Item = &'a Process;
    fn next(&mut self) -> Option<&'a Process> {
        self.left = self.left.checked_sub(1)?;
        let p = self.tree.procs.get(self.next?)?;
        self.next = p.parent;
        Some(p)
    }
}

impl Index<ProcId> for Tree {
    type Output = Process;
    /// Engine-internal ids always name held records (see [`Store`]).
    fn index(&self, id: ProcId) -> &Process {
        &self.procs[id]
    }
}

impl IndexMut<ProcId> for Tree {
    /// The record, noted as changed (`Store::changed_since`).
    fn index_mut(&mut self, id: ProcId) -> &mut Process {
        &mut self.procs[id]
    }
}

impl Tree {
    // ---- records ----

    /// The record `id`, unless it never existed or was dropped.
    pub fn get(&self, id: ProcId) -> Option<&Process> {
        self.procs.get(id)
    }

    /// Every record held, in creation order.
    pub fn records(&self) -> impl DoubleEndedIterator<Item = &Process> + '_ {
        self.procs.iter()
    }

    /// Records held.
    pub fn len(&self) -> usize {
        self.procs.len()
    }

    /// Every id ever given is below this.
    pub fn id_bound(&self) -> ProcId {
        self.procs.id_bound()
    }

    /// Position of record `id` in [`Tree::records`] order.
    pub fn position(&self, id: ProcId) -> Option<usize> {
        self.procs.position(id)
    }

    /// Applies `change` to the records `pick` selects (each noted as changed).
    pub fn update_where(
        &mut self,
        pick: impl Fn(&Process) -> bool,
        change: impl FnMut(&mut Process),
    ) {
        self.procs.update_where(pick, change);
    }

    /// The mark of now, for [`Tree::changed_since`].
    pub fn change_mark(&self) -> ChangeMark {
        self.procs.change_mark()
    }

    /// Ids of the records changed since `mark`, or `None` when the reader must start over.
    pub fn changed_since(&self, mark: ChangeMark) -> Option<&[ProcId]> {
        self.procs.changed_since(mark)
    }

    /// A new record for `pid`, now the one its pid names.
    pub fn new_record(&mut self, pid: u32, how: How, seq: u64, ts_ns: u64) -> ProcId {
        let id = self
            .procs
            .push(|id| Process::blank(id, pid, how, seq, ts_ns));
        self.by_pid.insert(pid, id);
        // The newest task with this id is now this leader (found through `by_pid`).
        self.tids.remove(&pid);
        id
    }

    // ---- pids and tids ----

    /// The newest record of `pid` (live or exited).
    pub fn newest(&self, pid: u32) -> Option<ProcId> {
        self.by_pid.get(&pid).copied()
    }

    /// The newest record of `pid`, as a record.
    pub fn process(&self, pid: u32) -> Option<&Process> {
        self.newest(pid).and_then(|id| self.procs.get(id))
    }

    /// The live record of `pid`.
    pub fn live(&self, pid: u32) -> Option<ProcId> {
        self.newest(pid).filter(|&id| !self.procs[id].exited)
    }

    /// The live process thread `tid` belongs to (a leader's tid is its pid).
    pub fn record_of_tid(&self, tid: u32) -> Option<ProcId> {
        match self.tids.get(&tid) {
            Some(&(id, _)) if !self.procs[id].exited => Some(id),
            _ => self.live(tid),
        }
    }

    /// The record of the newest non-leader thread `tid`, live or not.
    pub fn thread_record(&self, tid: u32) -> Option<ProcId> {
        self.tids.get(&tid).map(|&(id, _)| id)
    }

    /// Where thread `tid` of record `id` is in its `threads`.
    pub fn thread_slot(&self, id: ProcId, tid: u32) -> Option<usize> {
        match self.tids.get(&tid) {
            Some(&(p, i)) => (p == id && i < self.procs[id].threads.len()).then_some(i),
            // The leader: slot 0 of the newest record of its pid.
            None => (self.newest(tid) == Some(id) && self.procs[id].pid == tid).then_some(0),
        }
    }

    /// Marks thread `tid` of `id` alive (adding it if new); true if it already was.
    pub fn add_thread(&mut self, id: ProcId, tid: u32, comm: Comm) -> bool {
        if let Some(i) = self.thread_slot(id, tid) {
            let p = &mut self.procs[id];
            let t = &mut p.threads[i];
            if t.alive {
                return true;
            }
            t.alive = true;
            t.comm = comm;
            p.live_threads += 1;
            return false;
        }
        let p = &mut self.procs[id];
        p.threads.push(Thread {
            tid,
            comm,
            alive: true,
        });
        p.live_threads += 1;
        let slot = p.threads.len() - 1;
        self.tids.insert(tid, (id, slot));
        false
    }

    /// Thread `tid` of `id` ended.
    pub fn thread_died(&mut self, id: ProcId, tid: u32) {
        if let Some(i) = self.thread_slot(id, tid) {
            let p = &mut self.procs[id];
            if p.threads[i].alive {
                p.threads[i].alive = false;
                p.live_threads -= 1;
            }
        }
    }

    /// Every thread of the record is gone (its process ended).
    pub fn all_threads_dead(&mut self, id: ProcId) {
        let p = &mut self.procs[id];
        for t in p.threads.iter_mut() {
            t.alive = false;
        }
        p.live_threads = 0;
    }

    /// de_thread() (fs/exec.c): exec leaves one thread, with the leader's pid; every other
    /// one is gone.
    pub fn exec_threads(&mut self, id: ProcId, comm: Comm) {
        let leader = self.procs[id].pid;
        self.all_threads_dead(id);
        self.add_thread(id, leader, comm);
        if let Some(i) = self.thread_slot(id, leader) {
            self.procs[id].threads[i].comm = comm;
        }
    }

    /// The name of thread `tid` of `id`, else the process's.
    pub fn thread_comm(&self, id: ProcId, tid: u32) -> Comm {
        let p = &self.procs[id];
        self.thread_slot(id, tid)
            .map_or(p.comm, |i| p.threads[i].comm)
    }

    // ---- parents ----

    /// `id`'s parent is now `parent` (its record, if any) with pid `ppid`.
    pub fn set_parent(&mut self, id: ProcId, parent: Option<ProcId>, ppid: u32) {
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

    /// `dead`'s live children, by pid then id: its orphans.
    pub fn live_children(&self, dead: ProcId) -> Vec<ProcId> {
        let mut v: Vec<ProcId> = self.procs[dead]
            .children
            .iter()
            .copied()
            .filter(|&c| !self.procs[c].exited)
            .collect();
        v.sort_by_key(|&c| (self.procs[c].pid, c));
        v
    }

    /// Takes `dead`'s live children off its list at once ([`Tree::set_parent`] per orphan
    /// would rescan the list each time); each then gets its new parent from
    /// [`Tree::adopt_orphan`].
    pub fn release_orphans(&mut self, dead: ProcId) {
        let mut kept = std::mem::take(&mut self.procs[dead].children);
        kept.retain(|&c| self.procs[c].exited);
        self.procs[dead].children = kept;
    }

    /// An orphan [`Tree::release_orphans`] took off its dead parent's list now has `parent`.
    pub fn adopt_orphan(&mut self, c: ProcId, parent: Option<ProcId>, ppid: u32) {
        self.procs[c].parent = None;
        self.set_parent(c, parent, ppid);
    }

    /// The parent, grandparent... of record `id` (not `id` itself), nearest first.
    pub fn ancestors(&self, id: ProcId) -> Ancestors<'_> {
        Ancestors {
            tree: self,
            next: self.procs.get(id).and_then(|p| p.parent),
            left: self.procs.len(),
        }
    }

    /// Record `id` and everything below it, depth first; `descend` says whether to go below
    /// a record (it is yielded either way). Bounded by the number of records.
    pub fn subtree(&self, id: ProcId, mut descend: impl FnMut(&Process) -> bool) -> Vec<ProcId> {
        let mut out = Vec::new();
        let mut stack = vec![id];
        while let Some(c) = stack.pop() {
            let Some(p) = self.procs.get(c) else { continue };
            if out.len() >= self.procs.len() {
                break;
            }
            out.push(c);
            if descend(p) {
                stack.extend_from_slice(&p.children);
            }
        }
        out
    }

    // ---- pid namespaces ----

    /// The namespace of inode `inum`, when the source showed a process of it.
    pub fn namespace(&self, inum: u64) -> Option<&Namespace> {
        self.namespaces.get(&inum)
    }

    /// Every namespace below the host's that still has an init or a live member (what the
    /// tests check the index against).
    #[cfg(test)]
    pub fn namespaces(&self) -> impl Iterator<Item = &Namespace> + '_ {
        self.namespaces.values()
    }

    /// Records a new process's pid namespace; the first process of one is its init.
    pub fn register_namespace(&mut self, id: ProcId) {
        let Some(ns) = self.procs[id].pidns.filter(|ns| ns.level > 0) else {
            return;
        };
        let entry = self.namespaces.entry(ns.inum).or_default();
        if ns.ns_pid == 1 {
            entry.init = Some(id);
        }
        Arc::make_mut(&mut entry.live).insert(id);
    }

    /// The process ended: it is no longer one of its namespace's live processes.
    pub fn leave_namespace(&mut self, id: ProcId) {
        let Some(ns) = self.procs[id].pidns.filter(|ns| ns.level > 0) else {
            return;
        };
        if let Some(entry) = self.namespaces.get_mut(&ns.inum) {
            if entry.live.contains(&id) {
                Arc::make_mut(&mut entry.live).remove(&id);
            }
        }
    }

    /// Member `id` of namespace `inum` died in the zap before its init's end was seen.
    pub fn zapped_early(&mut self, inum: u64, id: ProcId) {
        if let Some(e) = self.namespaces.get_mut(&inum) {
            e.zapped_early.push(id);
        }
    }

    /// The members [`Tree::zapped_early`] noted, taken out.
    pub fn take_zapped_early(&mut self, inum: u64) -> Vec<ProcId> {
        self.namespaces
            .get_mut(&inum)
            .map(|e| std::mem::take(&mut e.zapped_early))
            .unwrap_or_default()
    }

    // ---- dropping (retention) ----

    /// Drops the records `keep` does not mark (`dropped`, their ids; `keep` by position in
    /// [`Tree::records`] order) and every index entry and child link that names one.
    pub fn drop_records(&mut self, dropped: &[ProcId], keep: &[bool]) {
        for &id in dropped {
            self.forget(id);
        }
        self.procs.retain_marked(keep);
        let procs = &self.procs;
        // Only exited records are dropped, and a namespace's `live` holds none; a namespace
        // whose init went keeps its entry while live processes remain in it (an init of a
        // reused inum zaps them as the scan of every record did).
        self.namespaces.retain(|_, ns| {
            if ns.init.is_some_and(|i| !procs.contains(i)) {
                ns.init = None;
            }
            if ns.live.iter().any(|&m| !procs.contains(m)) {
                Arc::make_mut(&mut ns.live).retain(|&m| procs.contains(m));
            }
            ns.init.is_some() || !ns.live.is_empty()
        });
        let mut trimmed: Vec<(ProcId, Vec<ProcId>)> = Vec::new();
        for p in procs.iter() {
            if p.children.iter().any(|&c| !procs.contains(c)) {
                let kept = p.children.iter().copied().filter(|&c| procs.contains(c));
                trimmed.push((p.id, kept.collect()));
            }
        }
        for (id, children) in trimmed {
            self.procs[id].children = children;
        }
    }

    /// Removes the pid and tid index entries that name record `id`.
    fn forget(&mut self, id: ProcId) {
        let p = &self.procs[id];
        if self.by_pid.get(&p.pid) == Some(&id) {
            self.by_pid.remove(&p.pid);
        }
        let tids: Vec<u32> = p.threads.iter().map(|t| t.tid).collect();
        for tid in tids {
            if self.tids.get(&tid).is_some_and(|&(p, _)| p == id) {
                self.tids.remove(&tid);
            }
        }
    }
}
