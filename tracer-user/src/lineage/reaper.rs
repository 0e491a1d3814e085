//! A process's death and its orphans: kernel/exit.c exit_notify() → forget_original_parent()
//! → find_child_reaper() / find_new_reaper(), and zap_pid_ns_processes().

use crate::event::ExitStatus;

use super::engine::Engine;
use super::process::{How, ProcId, Reaper, Reason};

/// Where a dying process's live children go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum NewReaper {
    /// Reparented to this record.
    Adopt(ProcId, Reaper),
    /// Reparented to the init of the dying process's pid namespace, which the source never
    /// showed: the new parent is unknown until the kernel names it.
    Unseen,
    /// The dying process is its pid namespace's init: the kernel kills every process left in
    /// the namespace (zap_pid_ns_processes) and nobody is adopted.
    NamespaceDies,
}

impl Engine {
    /// The process is gone: mark it and hand its live children to the new reaper.
    pub(super) fn end_process(
        &mut self,
        id: ProcId,
        status: Option<ExitStatus>,
        seq: u64,
        ts_ns: u64,
    ) {
        let p = &mut self.procs[id];
        if !p.exited {
            self.retention.exited_held += 1;
        }
        p.exited = true;
        p.exit_status = status.or(p.exit_group_code.map(|code| ExitStatus::Exited { code }));
        p.exit_seq = Some(seq);
        p.exit_ts_ns = Some(ts_ns);
        self.all_threads_dead(id);
        if matches!(status, Some(ExitStatus::Killed { signal: 9, .. })) {
            self.zapped_while_init_exits(id);
        }
        self.leave_namespace(id);
        if super::engine::is_ns_init(&self.procs[id]) {
            self.zap_namespace(id, seq);
        }
        let mut orphans: Vec<ProcId> = self.procs[id]
            .children
            .iter()
            .copied()
            .filter(|&c| !self.procs[c].exited)
            .collect();
        if orphans.is_empty() {
            return;
        }
        orphans.sort_by_key(|&c| (self.procs[c].pid, c));
        let (reaper_id, reason) = match self.find_new_reaper(id, seq) {
            NewReaper::NamespaceDies => return,
            NewReaper::Adopt(r, reaper) => (Some(r), reaper),
            NewReaper::Unseen => (None, Reaper::NsInitUnseen),
        };
        self.adopt_all(id, orphans, reaper_id, reason, seq);
    }

    fn adopt_all(
        &mut self,
        dead: ProcId,
        orphans: Vec<ProcId>,
        reaper: Option<ProcId>,
        why: Reaper,
        seq: u64,
    ) {
        let dead_pid = self.procs[dead].pid;
        let reaper_pid = reaper.map_or(0, |r| self.procs[r].pid);
        // Detach all orphans at once (set_parent per orphan would rescan the list each time).
        let mut kept = std::mem::take(&mut self.procs[dead].children);
        kept.retain(|&c| self.procs[c].exited);
        self.procs[dead].children = kept;
        for c in orphans {
            self.procs[c].parent = None;
            self.adopt(c, (reaper, reaper_pid), dead_pid, why, seq);
        }
    }

    /// One orphan of `dead_pid` goes to `reaper` (its record, if any, and pid).
    fn adopt(
        &mut self,
        c: ProcId,
        (reaper, reaper_pid): (Option<ProcId>, u32),
        dead_pid: u32,
        why: Reaper,
        seq: u64,
    ) {
        self.set_parent(c, reaper, reaper_pid);
        let reason = Reason::ParentExited {
            parent: dead_pid,
            reaper: why,
        };
        self.record_adoption(c, reaper_pid, reason, seq);
    }

    /// `child`'s exit tracepoint came after its parent's, so the model handed it to the
    /// reaper; but its own exit_notify() ran before the parent's forget_original_parent(),
    /// and its SIGCHLD went to that parent: it died that parent's child (and only its zombie
    /// went to the reaper, reparent_leader()). The adoption is taken back.
    pub(super) fn adoption_undone(&mut self, child: ProcId) {
        let last = self.procs[child].lineage.last().cloned();
        let Some(l) = last.filter(|l| l.how == How::Adopted) else {
            return;
        };
        let Some(reason @ Reason::ParentExited { parent, .. }) = l.reason else {
            return;
        };
        let Some(old) = self.by_pid.get(&parent).copied() else {
            return;
        };
        self.procs[child].lineage.pop();
        self.adoptions.uncount(reason);
        self.set_parent(child, Some(old), parent);
    }

    /// `child`'s exit tracepoint came before its parent's, so the model left it with that
    /// parent; but the parent's exit_notify() reparented it (forget_original_parent() moves
    /// every child, exiting or not) before the child's own exit_notify() raised its SIGCHLD,
    /// which named the reaper. The kernel adopted it while it was exiting.
    pub(super) fn adopted_while_exiting(&mut self, child: ProcId, seq: u64) {
        let Some(dead) = self.procs[child].parent else {
            return;
        };
        let Some((reaper_pid, why)) = self.reaper_of(dead) else {
            return;
        };
        let reaper = self.by_pid.get(&reaper_pid).copied();
        let dead_pid = self.procs[dead].pid;
        self.adopt(child, (reaper, reaper_pid), dead_pid, why, seq);
    }

    /// find_new_reaper(). Its first case, another live thread of the dying process, is not
    /// one here: a process ends only with its last thread and its children stay until then.
    /// The subreaper search only climbs while the ancestors are at the dying process's pid
    /// namespace level: it never leaves the namespace.
    fn find_new_reaper(&mut self, dying: ProcId, seq: u64) -> NewReaper {
        if let Some((id, pid)) = self.nearest_subreaper(dying) {
            return NewReaper::Adopt(id, Reaper::Subreaper(pid));
        }
        self.child_reaper(dying, seq)
    }

    /// The live subreaper find_new_reaper() would pick for `dying`'s orphans, if any.
    fn nearest_subreaper(&self, dying: ProcId) -> Option<(ProcId, u32)> {
        let d = &self.procs[dying];
        if !d.has_child_subreaper {
            return None;
        }
        let level = d.pidns.map(|ns| ns.level);
        self.ancestors(dying)
            .take_while(|a| match (level, a.pidns) {
                (Some(l), Some(ns)) => ns.level == l,
                // An ancestor is never deeper than its descendant: below the host's
                // namespace, an ancestor of unknown level may be outside it.
                (Some(l), None) => l == 0,
                (None, _) => true,
            })
            .find(|a| a.is_subreaper && !a.exited && a.id != dying)
            .map(|a| (a.id, a.pid))
    }

    /// Who takes `dead`'s orphans now (find_new_reaper(), read only): a subreaper, its pid
    /// namespace's init, or pid 1; `None` when that init was never shown.
    pub(super) fn reaper_pid(&self, dead: ProcId) -> Option<u32> {
        self.reaper_of(dead).map(|(pid, _)| pid)
    }

    /// Who would take `id`'s orphans if it died now, and by which rule of find_new_reaper()
    /// (the model's ancestor walk, as the viewer's detail pane shows it); `None` when the
    /// init of its pid namespace was never shown.
    pub fn orphans_would_go_to(&self, id: ProcId) -> Option<(u32, Reaper)> {
        self.reaper_of(id)
    }

    /// [`Self::reaper_pid`] and which rule of find_new_reaper() picked it.
    fn reaper_of(&self, dead: ProcId) -> Option<(u32, Reaper)> {
        if let Some((_, pid)) = self.nearest_subreaper(dead) {
            return Some((pid, Reaper::Subreaper(pid)));
        }
        match self.procs[dead].pidns {
            Some(ns) if ns.level > 0 => {
                let init = self.namespaces.get(&ns.inum).and_then(|n| n.init)?;
                let pid = self.procs[init].pid;
                Some((pid, Reaper::NsInit(pid)))
            }
            _ => Some((1, Reaper::Init)),
        }
    }

    /// find_child_reaper(): the dying process's namespace's `child_reaper`.
    fn child_reaper(&mut self, dying: ProcId, seq: u64) -> NewReaper {
        match self.procs[dying].pidns {
            Some(ns) if ns.level > 0 => {
                match self.namespaces.get(&ns.inum).and_then(|n| n.init) {
                    Some(init) if init == dying => NewReaper::NamespaceDies,
                    // Still its child_reaper while the namespace is being torn down.
                    Some(init) => NewReaper::Adopt(init, Reaper::NsInit(self.procs[init].pid)),
                    None => NewReaper::Unseen,
                }
            }
            _ => {
                let init = match self.by_pid.get(&1) {
                    Some(&i) if !self.procs[i].exited => i,
                    // Synthesized init: expected when tracing starts below pid 1, so no warning.
                    _ => self.new_record(1, How::Unknown, seq, 0),
                };
                // The dying process never adopts its own orphans.
                if init == dying {
                    NewReaper::NamespaceDies
                } else {
                    NewReaper::Adopt(init, Reaper::Init)
                }
            }
        }
    }
}
