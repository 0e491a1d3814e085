//! A dying process's orphans: kernel/exit.c exit_notify() → forget_original_parent() →
//! find_child_reaper() / find_new_reaper(). Functions over the [`Tree`] that say where the
//! orphans go; the engine applies the [`Reparenting`] (and counts the adoptions).

use super::process::{ProcId, Reaper, Reason};
use super::tree::Tree;

/// Where a dying process's live children go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum NewReaper {
    /// Reparented to this record.
    Adopt(ProcId, Reaper),
    /// Reparented to the host's init, pid 1, which the source never showed (expected when
    /// tracing starts below pid 1): a record is made for it, with no warning.
    HostInitUnseen,
    /// Reparented to the init of the dying process's pid namespace, which the source never
    /// showed: the new parent is unknown until the kernel names it.
    Unseen,
    /// The dying process is its pid namespace's init: the kernel kills every process left in
    /// the namespace (zap_pid_ns_processes) and nobody is adopted.
    NamespaceDies,
}

/// forget_original_parent()'s work at one death: the orphans, oldest pid first, and where
/// they go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Reparenting {
    /// The dying process.
    pub dead: ProcId,
    /// Its live children.
    pub orphans: Vec<ProcId>,
    /// Their new parent.
    pub to: NewReaper,
}

/// One adoption to make: `child`'s parent becomes `reaper` (its record, if any, and pid), for
/// `reason`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Adoption {
    /// The adopted process.
    pub child: ProcId,
    /// The new parent's record (`None`: a namespace init never shown).
    pub reaper: Option<ProcId>,
    /// The new parent's pid (0 when unknown).
    pub reaper_pid: u32,
    /// Why, as the child's lineage tells it.
    pub reason: Reason,
}

/// The orphans of `dead` (just ended) and their new parent; `None` when it left none.
pub(super) fn orphans(tree: &Tree, dead: ProcId) -> Option<Reparenting> {
    let orphans = tree.live_children(dead);
    if orphans.is_empty() {
        return None;
    }
    Some(Reparenting {
        dead,
        orphans,
        to: find_new_reaper(tree, dead),
    })
}

/// `child`'s exit tracepoint came before its parent's, so the model left it with that
/// parent; but the parent's exit_notify() reparented it (forget_original_parent() moves
/// every child, exiting or not) before the child's own exit_notify() raised its SIGCHLD,
/// which named the reaper. The kernel adopted it while it was exiting: the adoption to make.
pub(super) fn adopted_while_exiting(tree: &Tree, child: ProcId) -> Option<Adoption> {
    let dead = tree[child].parent?;
    let (reaper_pid, why) = reaper_of(tree, dead)?;
    Some(Adoption {
        child,
        reaper: tree.newest(reaper_pid),
        reaper_pid,
        reason: Reason::ParentExited {
            parent: tree[dead].pid,
            reaper: why,
        },
    })
}

/// find_new_reaper(). Its first case, another live thread of the dying process, is not
/// one here: a process ends only with its last thread and its children stay until then.
/// The subreaper search only climbs while the ancestors are at the dying process's pid
/// namespace level: it never leaves the namespace.
fn find_new_reaper(tree: &Tree, dying: ProcId) -> NewReaper {
    if let Some((id, pid)) = nearest_subreaper(tree, dying) {
        return NewReaper::Adopt(id, Reaper::Subreaper(pid));
    }
    child_reaper(tree, dying)
}

/// The live subreaper find_new_reaper() would pick for `dying`'s orphans, if any.
fn nearest_subreaper(tree: &Tree, dying: ProcId) -> Option<(ProcId, u32)> {
    let d = &tree[dying];
    if !d.has_child_subreaper {
        return None;
    }
    let level = d.pidns.map(|ns| ns.level);
    tree.ancestors(dying)
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

/// Who takes `dead`'s orphans now (find_new_reaper(), read only), and by which rule: a
/// subreaper, its pid namespace's init, or pid 1; `None` when that init was never shown.
pub(super) fn reaper_of(tree: &Tree, dead: ProcId) -> Option<(u32, Reaper)> {
    if let Some((_, pid)) = nearest_subreaper(tree, dead) {
        return Some((pid, Reaper::Subreaper(pid)));
    }
    match tree[dead].pidns {
        Some(ns) if ns.level > 0 => {
            let init = tree.namespace(ns.inum).and_then(|n| n.init)?;
            let pid = tree[init].pid;
            Some((pid, Reaper::NsInit(pid)))
        }
        _ => Some((1, Reaper::Init)),
    }
}

/// find_child_reaper(): the dying process's namespace's `child_reaper`.
fn child_reaper(tree: &Tree, dying: ProcId) -> NewReaper {
    match tree[dying].pidns {
        Some(ns) if ns.level > 0 => match tree.namespace(ns.inum).and_then(|n| n.init) {
            Some(init) if init == dying => NewReaper::NamespaceDies,
            // Still its child_reaper while the namespace is being torn down.
            Some(init) => NewReaper::Adopt(init, Reaper::NsInit(tree[init].pid)),
            None => NewReaper::Unseen,
        },
        _ => match tree.live(1) {
            // The dying process never adopts its own orphans.
            Some(init) if init == dying => NewReaper::NamespaceDies,
            Some(init) => NewReaper::Adopt(init, Reaper::Init),
            None => NewReaper::HostInitUnseen,
        },
    }
}
