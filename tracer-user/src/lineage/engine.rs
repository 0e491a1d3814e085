//! The state machine: events in, kernel process tree out.

use std::collections::HashMap as StdHashMap;
use std::fmt;
use std::sync::Arc;

use crate::event::{
    clone_flags as cf, CloneFlags, Comm, Event, ExitStatus, PidNs, SignalInfo, Syscall,
};

use super::death::{self, Sigchld, Undo};
use super::process::{
    argv_of, ExecRecord, How, LineageEntry, ProcId, Process, Reaper, Reason, Rename,
};
use super::reaper::{Adoption, NewReaper, Reparenting};
use super::roles::{basename, classify, classify_program, is_cni_plugin_name, InitStage, Role};
use super::transition::{Actor, Adapter, Birth, ExecDone, Transition};
use super::tree::{Ancestors, NewParent, Tree};

/// Warnings kept in full; later ones are only counted.
pub const MAX_WARNINGS: usize = 1000;

pub use crate::event::SnapshotProcess;
pub use retain::Retention;

/// Bounded live state: which exited records a live view drops (functions over the tree).
mod retain;

/// The pid-namespace zap `death.rs` models, through the engine, in the order strace reports it.
#[cfg(test)]
mod death_tests;

/// Something in the stream the engine had to guess around.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WarningKind {
    /// An event for a pid never created; a placeholder was synthesized.
    UnknownPid {
        /// The unknown pid.
        pid: u32,
    },
    /// An event for a thread the process was not known to have.
    UnknownThread {
        /// The process.
        pid: u32,
        /// The thread.
        tid: u32,
    },
    /// A fork created a pid that was still alive: its exit was missed.
    PidReuse {
        /// The reused pid.
        pid: u32,
    },
    /// A thread created twice.
    DuplicateThread {
        /// The process.
        pid: u32,
        /// The thread.
        tid: u32,
    },
    /// The kernel reported another parent than the model predicted, with no loss of events
    /// before: the model's rules were wrong. Corrected to the kernel's word.
    Disagreement {
        /// The process.
        pid: u32,
        /// The parent the model had.
        model: u32,
        /// The parent the kernel reported.
        kernel: u32,
    },
    /// The kernel reported another parent after events were lost: the model missed what
    /// happened. Corrected to the kernel's word.
    CorrectedAfterLoss {
        /// The process.
        pid: u32,
        /// The parent the model had.
        model: u32,
        /// The parent the kernel reported.
        kernel: u32,
    },
    /// seq went backwards.
    SeqBackwards {
        /// The seq before.
        prev: u64,
    },
    /// seq skipped: events were lost.
    LostEvents {
        /// The last seq before the gap.
        after: u64,
        /// How many seqs are missing.
        missing: u64,
    },
    /// Too many exec enters without a matching exit; they were dropped.
    PendingExecOverflow,
    /// A runtime not run by root named a container (its bundle's pod and container): ignored,
    /// as anyone can exec a binary called `runc` with another pod's bundle.
    IdentityNotFromRoot {
        /// The runtime process.
        pid: u32,
        /// Its real uid.
        uid: u32,
    },
    /// A runtime inside a container's pid namespace named a container: ignored, as root in a
    /// container owns every file there and can write a bundle naming any pod.
    IdentityFromContainer {
        /// The runtime process.
        pid: u32,
    },
    /// A process whose name or argv claims a role of the container machinery may not speak
    /// for a container, by the kernel's word on its credentials or executable: it keeps no
    /// role, container id or pod from that claim.
    RoleRefused {
        /// The process.
        pid: u32,
        /// Its real uid (`u32::MAX` when unknown).
        uid: u32,
        /// The role its name claimed.
        role: Role,
        /// Why it may not.
        why: super::identity::Refusal,
    },
    /// A runtime named a container that already had another identity: the first stands.
    IdentityConflict {
        /// The runtime process that gave the second identity.
        pid: u32,
    },
    /// The kernel sent a child's SIGCHLD to another process than the model's parent
    /// (do_notify_parent() writes to the parent of record): the model was wrong.
    SigchldDisagreement {
        /// The child.
        pid: u32,
        /// The parent the model had.
        model: u32,
        /// The process the kernel notified.
        kernel: u32,
    },
}

impl fmt::Display for WarningKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            WarningKind::UnknownPid { pid } => {
                write!(f, "unknown pid {pid}: placeholder synthesized")
            }
            WarningKind::UnknownThread { pid, tid } => {
                write!(f, "unknown thread {tid} of pid {pid}")
            }
            WarningKind::PidReuse { pid } => {
                write!(f, "pid {pid} reused while still alive: exit missed")
            }
            WarningKind::DuplicateThread { pid, tid } => {
                write!(f, "thread {tid} of pid {pid} created twice")
            }
            WarningKind::Disagreement { pid, model, kernel } => write!(
                f,
                "pid {pid}: model/kernel disagreement: kernel reports parent {kernel}, model had {model}"
            ),
            WarningKind::CorrectedAfterLoss { pid, model, kernel } => write!(
                f,
                "pid {pid}: kernel reports parent {kernel}, model had {model} (events were lost before)"
            ),
            WarningKind::SeqBackwards { prev } => write!(f, "seq went backwards (previous {prev})"),
            WarningKind::LostEvents { after, missing } => {
                write!(f, "{missing} events lost after seq {after}")
            }
            WarningKind::PendingExecOverflow => {
                f.write_str("too many unmatched exec enters; dropped")
            }
            WarningKind::IdentityNotFromRoot { pid, uid } => write!(
                f,
                "pid {pid} (uid {uid}, not root) named a container's pod: ignored"
            ),
            WarningKind::IdentityFromContainer { pid } => write!(
                f,
                "pid {pid} (inside a container's pid namespace) named a container's pod: ignored"
            ),
            WarningKind::RoleRefused {
                pid,
                uid,
                role,
                why,
            } => write!(
                f,
                "pid {pid} (uid {}) claims the role {role} by its name or argv but may not speak for a container ({}): taken as an ordinary process",
                UidText(uid),
                why.text()
            ),
            WarningKind::IdentityConflict { pid } => write!(
                f,
                "pid {pid} gave a container another pod identity than its first: the first stands"
            ),
            WarningKind::SigchldDisagreement { pid, model, kernel } => write!(
                f,
                "pid {pid}: model/kernel disagreement: its SIGCHLD went to {kernel}, model had parent {model}"
            ),
        }
    }
}

/// A uid as text: `?` when the source could not tell.
struct UidText(u32);

impl fmt::Display for UidText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            u32::MAX => f.write_str("?"),
            u => write!(f, "{u}"),
        }
    }
}

/// One anomaly the engine worked around, with the event that revealed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Warning {
    /// Seq of that event.
    pub seq: u64,
    /// What happened.
    pub kind: WarningKind,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "seq {}: {}", self.seq, self.kind)
    }
}

/// The lineage engine. Deterministic: the same events give the same state.
#[derive(Clone, Debug, Default)]
pub struct Engine {
    /// The process tree: records, pid and tid maps, pid namespaces (`tree.rs`).
    tree: Tree,
    /// Kubernetes identity of each container whose bundle was read, by container id.
    containers: StdHashMap<Arc<str>, Arc<super::k8s::K8sIdentity>>,
    adapter: Adapter,
    warnings: Vec<Warning>,
    warning_count: u64,
    last_seq: Option<u64>,
    events: u64,
    /// A sequence gap was seen: later corrections by the kernel may be missed events.
    lost: bool,
    /// The recording left other processes' events out on purpose (`--pod`): its gaps are
    /// no loss to warn about (the model still knows it misses events).
    scoped: bool,
    /// Live views: what is dropped of exited processes, and when (`retain.rs`).
    retention: retain::RetentionState,
    /// SIGCHLD recipients checked against the model (`death.rs`).
    sigchld: super::ending::SigchldChecks,
    /// Every adoption made, by kind (`record_adoption`).
    adoptions: super::process::AdoptionTotals,
    /// What the events' `ts_ns` mean (the recording's own clock), for the views' wall times.
    clock: crate::clock::Clock,
    /// `ts_ns` of the event being applied: the time of every record it makes.
    now_ts: u64,
    /// A runtime's bundle identity that came with its exec's call, before the exec: judged
    /// once the exec says what file the process runs (one per pid; dropped at its end).
    pending_meta: StdHashMap<u32, PendingMeta>,
}

/// [`Engine::container_meta`]'s arguments, held until the caller's exec.
#[derive(Clone, Debug)]
struct PendingMeta {
    by: Actor,
    cid: Arc<str>,
    identity: super::k8s::K8sIdentity,
}

impl Engine {
    /// An empty engine (seed it with [`Engine::seed_snapshot`] before the first event).
    pub fn new() -> Engine {
        Engine::default()
    }

    /// The events come from a recording scoped to a pod: its seq gaps are the other
    /// processes' events, left out on purpose, not losses to warn about.
    pub fn set_scoped(&mut self) {
        self.scoped = true;
    }

    // ---- queries ----

    /// The newest record for `pid` (live, or exited if no newer one).
    pub fn process(&self, pid: u32) -> Option<&Process> {
        self.tree.process(pid)
    }

    /// The process thread `tid` belongs to (its live record, else the newest with that pid) and
    /// the thread's own name: what a line about `tid` names it by.
    pub fn thread_of(&self, tid: u32) -> Option<(&Process, Comm)> {
        let id = self
            .tree
            .record_of_tid(tid)
            .or_else(|| self.tree.thread_record(tid))
            .or_else(|| self.tree.newest(tid))?;
        Some((&self.tree[id], self.tree.thread_comm(id, tid)))
    }

    /// A record by its id.
    pub fn get(&self, id: ProcId) -> Option<&Process> {
        self.tree.get(id)
    }

    /// Current children of `pid`'s newest record, exited ones included, by pid then seq.
    pub fn children(&self, pid: u32) -> Vec<&Process> {
        self.process(pid)
            .map_or_else(Vec::new, |p| self.children_of(p))
    }

    /// Current children of a record, by pid then birth seq.
    pub fn children_of(&self, p: &Process) -> Vec<&Process> {
        let mut v: Vec<&Process> = p
            .children
            .iter()
            .filter_map(|&c| self.tree.get(c))
            .collect();
        v.sort_by_key(|c| (c.pid, c.start_seq));
        v
    }

    /// The parent, grandparent... of record `id` (not `id` itself), nearest first.
    pub fn ancestors(&self, id: ProcId) -> Ancestors<'_> {
        self.tree.ancestors(id)
    }

    /// The records `keep` accepts, and every ancestor of each.
    pub fn with_ancestors(
        &self,
        keep: impl Fn(&Process) -> bool,
    ) -> std::collections::HashSet<ProcId> {
        let mut set = std::collections::HashSet::new();
        for p in self.processes().filter(|p| keep(p)) {
            if set.insert(p.id) {
                for a in self.ancestors(p.id) {
                    if !set.insert(a.id) {
                        break;
                    }
                }
            }
        }
        set
    }

    /// Record `id` and everything below it, depth first; `descend` says whether to go below
    /// a record (it is yielded either way). Bounded by the number of records.
    pub fn subtree(&self, id: ProcId, descend: impl FnMut(&Process) -> bool) -> Vec<ProcId> {
        self.tree.subtree(id, descend)
    }

    /// Records without a known parent, by pid then seq.
    pub fn roots(&self) -> Vec<&Process> {
        let mut v: Vec<&Process> = self.tree.records().filter(|p| p.parent.is_none()).collect();
        v.sort_by_key(|p| (p.pid, p.start_seq));
        v
    }

    /// Every record held, in creation order (exited and replaced ones included; with a
    /// [`Retention`](super::Retention), those it dropped are not).
    pub fn processes(&self) -> impl Iterator<Item = &Process> + '_ {
        self.tree.records()
    }

    /// Number of records held (exited and replaced ones included).
    pub fn process_count(&self) -> usize {
        self.tree.len()
    }

    /// Every [`ProcId`] given so far is below this (ids are never reused).
    pub fn id_bound(&self) -> ProcId {
        self.tree.id_bound()
    }

    /// The first [`MAX_WARNINGS`] warnings (see [`Engine::warning_count`] for the total).
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }

    /// Every adoption the engine made so far, by kind (never lowered by retention).
    pub fn adoption_totals(&self) -> super::process::AdoptionTotals {
        self.adoptions
    }

    /// All warnings, including those not kept.
    pub fn warning_count(&self) -> u64 {
        self.warning_count
    }

    /// Highest seq applied.
    pub fn last_seq(&self) -> Option<u64> {
        self.last_seq
    }

    /// Events applied so far.
    pub fn event_count(&self) -> u64 {
        self.events
    }

    /// The recording's own clock: what `ts_ns` means (no wall time unless set).
    pub fn clock(&self) -> crate::clock::Clock {
        self.clock
    }

    /// Sets the recording's clock ([`crate::input::Input::clock`] for a recording, the
    /// capture's start for a live view): the views' wall times come from it, never from the
    /// reader's clock.
    pub fn set_clock(&mut self, clock: crate::clock::Clock) {
        self.clock = clock;
    }

    /// The RFC 3339 UTC time of `ts_ns` on the recording's clock, when it has a date.
    pub fn time_of(&self, ts_ns: u64) -> Option<String> {
        self.clock.rfc3339(ts_ns)
    }

    /// The init (pid 1 there) of the pid namespace `ns`, when the source showed it.
    pub fn namespace_init(&self, ns: &PidNs) -> Option<&Process> {
        if ns.level == 0 {
            return self.process(1);
        }
        let id = self.tree.namespace(ns.inum)?.init?;
        self.tree.get(id)
    }

    /// Who would take `id`'s orphans if it died now, and by which rule of find_new_reaper()
    /// (the model's ancestor walk, as the viewer's detail pane shows it); `None` when the
    /// init of its pid namespace was never shown.
    pub fn orphans_would_go_to(&self, id: ProcId) -> Option<(u32, Reaper)> {
        super::reaper::reaper_of(&self.tree, id)
    }

    /// The SIGCHLD checks so far.
    pub fn sigchld_checks(&self) -> super::ending::SigchldChecks {
        self.sigchld
    }

    /// The process tree, for the lineage's readers (stories follow its change log).
    pub(super) fn tree(&self) -> &Tree {
        &self.tree
    }

    // ---- retention ----

    /// An empty engine that drops exited processes beyond `r` (live views). Without it,
    /// every record is kept (replay, files: bounded by the file).
    pub fn with_retention(r: Retention) -> Engine {
        Engine {
            retention: retain::RetentionState::new(r),
            ..Engine::new()
        }
    }

    /// The retention policy, if any.
    pub fn retention(&self) -> Option<Retention> {
        self.retention.policy()
    }

    /// Exited records dropped by the retention so far.
    pub fn pruned(&self) -> u64 {
        self.retention.pruned()
    }

    /// Drops what the policy lets go now; returns how many records.
    pub fn prune_now(&mut self, now_ts: u64) -> usize {
        match self.retention.policy() {
            Some(r) => self.prune(r, now_ts),
            None => 0,
        }
    }

    /// Runs a batch when enough exits piled up or the age window moved on.
    fn maybe_prune(&mut self, now_ts: u64) {
        if let Some(r) = self.retention.due(now_ts) {
            self.prune(r, now_ts);
        }
    }

    fn prune(&mut self, r: Retention, now_ts: u64) -> usize {
        let batch = retain::prune(&mut self.tree, r, now_ts);
        self.retention.ran(r, batch, self.tree.len(), now_ts);
        batch.dropped
    }

    // ---- seeding ----

    /// An engine that starts from the processes of a snapshot (a recording's header).
    pub fn seeded(snap: &[SnapshotProcess]) -> Engine {
        let mut e = Engine::new();
        if !snap.is_empty() {
            e.seed_snapshot(snap);
        }
        e
    }

    /// Adds processes that existed before tracing. Call before the first event.
    pub fn seed_snapshot(&mut self, snap: &[SnapshotProcess]) {
        let seq = self.last_seq.unwrap_or(0);
        let mut ids = Vec::with_capacity(snap.len());
        for s in snap {
            if let Some(old) = self.tree.live(s.pid) {
                self.end_process(old, None, seq, 0);
            }
            let id = self.seed_one(s, seq);
            ids.push((id, s.ppid));
        }
        for &(id, ppid) in &ids {
            if ppid != 0 {
                let pid = self.tree[id].pid;
                let parent = match self.tree.live(ppid) {
                    Some(pp) if pp != id => pp,
                    _ if ppid == pid => continue,
                    _ => self.placeholder(ppid, 0, seq, 0),
                };
                self.tree.set_parent(id, Some(parent), ppid);
            }
        }
        // has_child_subreaper is inherited: some ancestor is a subreaper.
        for &(id, _) in &ids {
            let inherited = self.ancestors(id).any(|a| a.is_subreaper);
            self.tree[id].has_child_subreaper = inherited;
        }
    }

    fn seed_one(&mut self, s: &SnapshotProcess, seq: u64) -> ProcId {
        let how = if s.launched {
            How::Launched
        } else {
            How::Snapshot
        };
        let id = self.tree.new_record(s.pid, how, seq, 0);
        let comm = Comm::new(&s.comm);
        let p = &mut self.tree[id];
        p.comm = comm;
        p.exe = s.exe.as_deref().map(Arc::from);
        p.argv = argv_of(&s.argv);
        p.is_subreaper = s.subreaper;
        p.threads[0].comm = comm;
        p.lineage[0].parent = s.ppid;
        if s.launched {
            p.lineage[0].caller = Some(s.ppid);
        }
        p.pidns = s.ns;
        p.cgroup = s.cgroup.as_deref().map(Arc::from);
        p.uid = s.uid;
        p.euid = s.cred.map_or(u32::MAX, |c| c.euid);
        p.program = s.cred.and_then(|c| c.program);
        p.standing = super::identity::standing(s.cred.as_ref(), s.uid);
        let named = classify(p.comm.as_bytes(), p.exe.as_deref(), &p.argv);
        // A running sandbox's or container's process is seen without the init stage it came
        // from: a pause inside a container keeps its role; a claim to speak needs standing.
        let inside = matches!(
            p.standing,
            super::identity::Standing::Refused(
                super::identity::Refusal::ContainerPidNs | super::identity::Refusal::ContainerMntNs
            )
        );
        let granted = match (p.program, p.standing.may_speak()) {
            (Some(prog), true) => classify_program(prog, p.comm.as_bytes(), &p.argv),
            _ => named.filter(|c| p.standing.may_speak() || (inside && c.role == Role::Sandbox)),
        };
        if let Some(c) = granted {
            p.role = Some(c.role);
            p.container_id = c.container_id.map(Arc::from);
        }
        self.attach_identity(id);
        for &tid in &s.threads {
            if tid != s.pid {
                self.tree.add_thread(id, tid, comm);
            }
        }
        self.tree.register_namespace(id);
        id
    }

    // ---- events ----

    /// Applies one event. Never panics; anomalies become warnings.
    pub fn apply(&mut self, ev: &Event) {
        self.events += 1;
        if !ev.kind.is_metadata() {
            self.track_seq(ev.seq);
        }
        self.now_ts = ev.ts_ns;
        let adapted = self.adapter.adapt(ev);
        if adapted.overflowed {
            self.warn(ev.seq, WarningKind::PendingExecOverflow);
        }
        self.step(&adapted.transition);
        self.maybe_prune(ev.ts_ns);
    }

    /// Applies one kernel transition (what [`Engine::apply`] makes of an event).
    pub fn step(&mut self, t: &Transition) {
        match t {
            Transition::Alive(a) => {
                self.task(a);
            }
            Transition::Born(a, b) => self.on_born(a, b),
            Transition::Exec(a, x) => self.on_exec(a, x),
            Transition::Renamed(a, comm) => {
                let id = self.task(a);
                self.rename(id, a.tid, *comm, a.seq);
            }
            Transition::Subreaper(a, on) => {
                let id = self.task(a);
                self.set_subreaper(id, *on, a.seq);
            }
            Transition::SubreaperSeen(a, on) => {
                // Only a change is news: a flag seen set keeps the seq it was set at.
                let id = self.task(a);
                if self.tree[id].is_subreaper != *on {
                    self.set_subreaper(id, *on, a.seq);
                }
            }
            Transition::ExitGroupCalled(a, code) => {
                let id = self.task(a);
                self.tree[id].exit_group_code = Some(*code);
            }
            Transition::TaskExit {
                actor,
                status,
                group_dead,
            } => self.on_task_exit(actor, *status, *group_dead),
            Transition::CgroupMoved { actor, tid, path } => {
                self.task(actor);
                self.cgroup_moved(*tid, path, actor);
            }
            Transition::ContainerMeta {
                actor,
                container_id,
                identity,
            } => {
                let id = self.task(actor);
                self.container_meta(id, actor, container_id, identity);
            }
            Transition::Signal(a, info) => self.on_signal(a, info),
            Transition::OomVictim(a, info) => death::oom_victim(&mut self.tree, a, info),
        }
    }

    /// A bundle identity refused for `why`: its runtime may not speak for a container.
    fn refuse_meta(&mut self, runtime: ProcId, by: &Actor, why: super::identity::Refusal) {
        let (pid, uid) = (by.pid, self.tree[runtime].uid);
        let role = self.tree[runtime]
            .role
            .unwrap_or(Role::OciRuntime { subcommand: None });
        let kind = WarningKind::RoleRefused {
            pid,
            uid,
            role,
            why,
        };
        self.warn(by.seq, kind);
    }

    /// cgroup_attach_task(): `tid`'s process is now in `path`.
    fn cgroup_moved(&mut self, tid: u32, path: &Arc<str>, by: &Actor) {
        // A task the stream never showed: nothing to attach the move to.
        let Some(id) = self.tree.record_of_tid(tid) else {
            return;
        };
        let p = &mut self.tree[id];
        p.cgroup = Some(path.clone());
        p.rare_mut().cgroup_moves.push(super::process::CgroupMove {
            seq: by.seq,
            ts_ns: by.ts_ns,
            path: path.clone(),
            by: by.pid,
        });
    }

    /// A container's Kubernetes identity: kept for processes classified later, and given to
    /// every record of that container now. Only from a runtime run by root in the host's pid
    /// namespace (a node's runtimes are; a user can exec a binary named `runc` on another
    /// pod's root-owned bundle with a victim's container id, and root in a container owns
    /// every file there), and only the first: a later, different identity for the same
    /// container is a warning, never a relabel. What a source cannot tell (strace logs: no
    /// uid, `u32::MAX`; no pid namespace) is taken at its word.
    fn container_meta(
        &mut self,
        runtime: ProcId,
        by: &Actor,
        cid: &Arc<str>,
        identity: &super::k8s::K8sIdentity,
    ) {
        if identity.is_empty() {
            return;
        }
        if self.tree[runtime].standing
            == super::identity::Standing::Refused(super::identity::Refusal::NotInstalled)
        {
            // The bundle comes with the exec call, before the exec: the file it runs is told
            // by the exec (the program then judged), not by what the caller ran before.
            let pending = PendingMeta {
                by: *by,
                cid: cid.clone(),
                identity: identity.clone(),
            };
            self.pending_meta.insert(by.pid, pending);
            return;
        }
        if let super::identity::Standing::Refused(why) = self.tree[runtime].standing {
            self.refuse_meta(runtime, by, why);
            return;
        }
        if by.uid != 0 && by.uid != u32::MAX {
            let kind = WarningKind::IdentityNotFromRoot {
                pid: by.pid,
                uid: by.uid,
            };
            self.warn(by.seq, kind);
            return;
        }
        if self.tree[runtime].pidns.is_some_and(|ns| ns.level > 0) {
            self.warn(by.seq, WarningKind::IdentityFromContainer { pid: by.pid });
            return;
        }
        let reused = match self.containers.get(cid) {
            Some(first) if **first == *identity => return,
            // Another identity while the container still runs: the first stands.
            Some(_) if self.container_runs(cid, runtime) => {
                self.warn(by.seq, WarningKind::IdentityConflict { pid: by.pid });
                return;
            }
            // Its id again, once every process of it ended (`runc delete`, then a create
            // under the same id for another pod): a new container, not the old one's restart.
            Some(_) => true,
            None => false,
        };
        let identity = Arc::new(identity.clone());
        self.containers.insert(cid.clone(), identity.clone());
        self.tree.update_where(
            |p| p.container_id.as_ref() == Some(cid) && !(reused && p.exited),
            |p| p.k8s = Some(identity.clone()),
        );
    }

    /// A process of container `cid` other than `runtime` (the one creating it now) is alive.
    fn container_runs(&self, cid: &Arc<str>, runtime: ProcId) -> bool {
        self.tree
            .records()
            .any(|p| !p.exited && p.id != runtime && p.container_id.as_ref() == Some(cid))
    }

    /// The identity of `id`'s container (it just got its container id), if that container's
    /// bundle was read. Else: for a shim, what its argv says (runtime namespace, the sandbox
    /// it serves); for anything else only the pod it inherited (one shim per pod), never the
    /// container name or sandbox role, which were another container's (the shim's `runc
    /// create` for the pod's next container inherits the sandbox's identity at fork).
    fn attach_identity(&mut self, id: ProcId) {
        use super::k8s::K8sIdentity;
        let p = &self.tree[id];
        let known = p
            .container_id
            .as_ref()
            .and_then(|c| self.containers.get(c))
            .cloned();
        let k8s = known.or_else(|| {
            if p.role == Some(Role::Shim) && p.k8s.is_none() {
                let argv = K8sIdentity::from_shim_argv(&p.argv, p.container_id.as_deref());
                return argv.map(Arc::new);
            }
            let pod_only = p.k8s.as_deref().map(|k| K8sIdentity {
                container_name: None,
                sandbox: false,
                ..k.clone()
            });
            pod_only.map(Arc::new)
        });
        self.tree[id].k8s = k8s;
    }

    fn track_seq(&mut self, seq: u64) {
        match self.last_seq {
            None => self.last_seq = Some(seq),
            Some(prev) if seq <= prev => self.warn(seq, WarningKind::SeqBackwards { prev }),
            Some(prev) => {
                if seq - prev > 1 {
                    self.lost = true;
                }
                if seq - prev > 1 && !self.scoped {
                    self.warn(
                        seq,
                        WarningKind::LostEvents {
                            after: prev,
                            missing: seq - prev - 1,
                        },
                    );
                }
                self.last_seq = Some(seq);
            }
        }
    }

    fn warn(&mut self, seq: u64, kind: WarningKind) {
        self.warning_count += 1;
        if self.warnings.len() < MAX_WARNINGS {
            self.warnings.push(Warning { seq, kind });
        }
    }

    /// A placeholder for a pid nobody created (warns).
    fn placeholder(&mut self, pid: u32, ppid: u32, seq: u64, ts_ns: u64) -> ProcId {
        self.warn(seq, WarningKind::UnknownPid { pid });
        let id = self.tree.new_record(pid, How::Unknown, seq, ts_ns);
        if ppid != 0 && ppid != pid {
            let parent = self.live_or_placeholder(ppid, seq, ts_ns);
            self.tree[id].lineage[0].parent = ppid;
            self.tree.set_parent(id, Some(parent), ppid);
            self.tree[id].has_child_subreaper = self.subreaper_above(parent);
        }
        id
    }

    /// The live record of `pid`, or a placeholder without a known parent.
    fn live_or_placeholder(&mut self, pid: u32, seq: u64, ts_ns: u64) -> ProcId {
        match self.tree.live(pid) {
            Some(id) => id,
            None => self.placeholder(pid, 0, seq, ts_ns),
        }
    }

    /// What a process created by `creator` inherits as has_child_subreaper (copy_signal()).
    fn subreaper_above(&self, creator: ProcId) -> bool {
        let c = &self.tree[creator];
        c.has_child_subreaper || c.is_subreaper
    }

    // ---- the kernel's word ----

    /// The live process an actor belongs to, with its thread; checks the parent the kernel
    /// reports against the model.
    fn task(&mut self, a: &Actor) -> ProcId {
        let id = match self.tree.live(a.pid) {
            Some(id) => id,
            None => {
                let id = self.placeholder(a.pid, a.ppid, a.seq, a.ts_ns);
                if a.tid != a.pid {
                    self.tree.add_thread(id, a.tid, a.comm);
                } else {
                    self.tree[id].comm = a.comm;
                    self.tree[id].threads[0].comm = a.comm;
                }
                return id;
            }
        };
        if self
            .tree
            .thread_slot(id, a.tid)
            .is_none_or(|i| !self.tree[id].threads[i].alive)
        {
            self.warn(
                a.seq,
                WarningKind::UnknownThread {
                    pid: a.pid,
                    tid: a.tid,
                },
            );
            self.tree.add_thread(id, a.tid, a.comm);
        }
        self.check_parent(id, a.ppid, a.seq);
        id
    }

    /// Compares the kernel's word on `id`'s parent with the model. A parent the model did not
    /// know is filled in; any other difference is a disagreement, corrected to the kernel's.
    fn check_parent(&mut self, id: ProcId, kernel: u32, seq: u64) {
        let (have, pid) = (self.tree[id].ppid, self.tree[id].pid);
        if kernel == 0 || kernel == have || kernel == pid || self.raced_exit(id, kernel) {
            return;
        }
        let parent = self.live_or_placeholder(kernel, seq, 0);
        if have == 0 {
            // Not a change of parent: the model did not know it yet.
            if let Some(last) = self.tree[id].lineage.last_mut() {
                last.parent = kernel;
            }
            self.tree.set_parent(id, Some(parent), kernel);
            if self.tree[id].born_how() != How::Snapshot {
                self.tree[id].has_child_subreaper |= self.subreaper_above(parent);
            }
            return;
        }
        let kind = if self.lost {
            WarningKind::CorrectedAfterLoss {
                pid,
                model: have,
                kernel,
            }
        } else {
            WarningKind::Disagreement {
                pid,
                model: have,
                kernel,
            }
        };
        self.warn(seq, kind);
        self.tree.set_parent(id, Some(parent), kernel);
        let reason = Reason::KernelReports {
            parent: kernel,
            model: have,
            after_loss: self.lost,
        };
        self.record_adoption(id, kernel, reason, seq);
    }

    /// `id`'s lineage gains its adoption by `parent`, counted in the engine's totals.
    fn record_adoption(&mut self, id: ProcId, parent: u32, reason: Reason, seq: u64) {
        self.adoptions.count(reason);
        self.tree[id].lineage.push(LineageEntry {
            how: How::Adopted,
            parent,
            caller: None,
            caller_tid: None,
            flags: None,
            syscall: None,
            reason: Some(reason),
            seq,
            ts_ns: self.now_ts,
        });
    }

    /// The kernel still names the parent the model just saw exit: the event came from
    /// between that parent's exit tracepoint and exit_notify()'s reparenting.
    fn raced_exit(&self, id: ProcId, kernel: u32) -> bool {
        let l = &self.tree[id].lineage;
        let before = match l.len() {
            n if n >= 2 && l[n - 1].how == How::Adopted => l[n - 2].parent,
            _ => return false,
        };
        before == kernel && self.process(kernel).is_some_and(|p| p.exited)
    }

    // ---- births, execs, names ----

    fn on_born(&mut self, a: &Actor, b: &Birth) {
        let creator = match self.late_creator(a.pid) {
            Some(id) => id,
            None => self.task(a),
        };
        let comm = if a.comm.is_empty() {
            self.tree.thread_comm(creator, a.tid)
        } else {
            a.comm
        };
        let thread = b.flags.is_some_and(|f| f.contains(cf::CLONE_THREAD));
        if thread || b.child_tgid != b.child_tid {
            let pid = if b.child_tgid != b.child_tid {
                b.child_tgid
            } else {
                a.pid
            };
            let id = if pid == self.tree[creator].pid {
                creator
            } else {
                self.live_or_placeholder(pid, a.seq, a.ts_ns)
            };
            if self.tree.add_thread(id, b.child_tid, comm) {
                let tid = b.child_tid;
                self.warn(a.seq, WarningKind::DuplicateThread { pid, tid });
            }
            return;
        }
        let how = birth_how(b);
        let id = match self.tree.live(b.child_tid) {
            // The source showed the process before its birth: one process, one record.
            Some(old) if self.unborn(old) => old,
            Some(old) => {
                self.warn(a.seq, WarningKind::PidReuse { pid: b.child_tid });
                self.end_process(old, None, a.seq, a.ts_ns);
                self.new_child(creator, b, comm, how, a)
            }
            None => self.new_child(creator, b, comm, how, a),
        };
        let (parent_pid, parent_id) = self.birth_parent(creator, b, a);
        let cpid = self.tree[creator].pid;
        let p = &mut self.tree[id];
        p.born_syscall = b.syscall;
        p.creator = Some(creator);
        p.birth_parent = parent_id;
        p.pidns = b.ns.or(p.pidns);
        p.lineage[0] = LineageEntry {
            how,
            parent: parent_pid,
            caller: Some(cpid),
            caller_tid: Some(a.tid),
            flags: b.flags,
            syscall: b.syscall,
            reason: None,
            seq: a.seq,
            ts_ns: a.ts_ns,
        };
        self.tree.set_parent(id, parent_id, parent_pid);
        // copy_signal() copies has_child_subreaper from `current`, the creator, which is not
        // the parent of a CLONE_PARENT child.
        self.tree[id].has_child_subreaper = self.subreaper_above(creator);
        self.tree.register_namespace(id);
        // Told after its parent's end: it was made before it, and that end's exit_notify()
        // handed it to the parent's reaper (forget_original_parent()).
        if let Some(dead) = parent_id.filter(|&p| self.tree[p].exited) {
            if let Some(r) = super::reaper::orphans(&self.tree, dead) {
                self.reparent(r, a.seq);
            }
        }
    }

    /// A new record for the child of a birth, with its creator's image.
    fn new_child(&mut self, creator: ProcId, b: &Birth, comm: Comm, how: How, a: &Actor) -> ProcId {
        let id = self.tree.new_record(b.child_tid, how, a.seq, a.ts_ns);
        let into = b.flags.is_some_and(|f| f.contains(cf::CLONE_INTO_CGROUP));
        self.inherit_image(id, creator, comm, into);
        id
    }

    /// A live record whose birth the source had not shown, which a birth now names: a
    /// placeholder the source made of the process's first events (an strace log names a
    /// child by its first line, which may come before its creator's clone returns), or a
    /// process of the start snapshot still as /proc showed it (read after the probes
    /// attached: its birth was in the ring buffer already; a process acts only after its
    /// birth, so one that exec'd, renamed, moved or made a child since is another). Not
    /// after a loss of events, where the pid may have been reused unseen.
    fn unborn(&self, id: ProcId) -> bool {
        let p = &self.tree[id];
        match p.born_how() {
            How::Unknown => true,
            How::Snapshot => {
                let seeded = |c: &ProcId| self.tree[*c].born_how() == How::Snapshot;
                !self.lost && p.as_made() && p.children.iter().all(seeded)
            }
            _ => false,
        }
    }

    /// The record a birth by `pid` came from when `pid` has ended and no other process took
    /// it: the source told the birth late (an strace log names a child by its first line,
    /// which may come after its creator's exit). `None` after a loss of events, where the
    /// pid may be a new process whose birth was lost.
    fn late_creator(&self, pid: u32) -> Option<ProcId> {
        if self.lost || self.tree.live(pid).is_some() {
            return None;
        }
        self.tree.newest(pid).filter(|&id| self.tree[id].exited)
    }

    /// The parent the source reported (the probe's is the kernel's word), else copy_process()'s
    /// rule ([`NewParent`]) on the model's creator: the caller, or its real parent with
    /// CLONE_PARENT or CLONE_THREAD. Unknown flags: the caller.
    fn birth_parent(&mut self, creator: ProcId, b: &Birth, a: &Actor) -> (u32, Option<ProcId>) {
        let c = &self.tree[creator];
        let (cpid, cppid, cparent) = (c.pid, c.ppid, c.parent);
        let parent = match (b.parent, NewParent::of(b.flags.unwrap_or_default())) {
            (0, NewParent::Caller) => cpid,
            (0, NewParent::CallersParent) => cppid,
            (p, _) => p,
        };
        let id = if parent == cpid {
            Some(creator)
        } else if parent == cppid && cparent.is_some_and(|p| !self.tree[p].exited) {
            cparent
        } else if parent == 0 {
            None
        } else if let Some(dead) = self.late_creator(parent) {
            // a birth told after the parent's end (see late_creator)
            Some(dead)
        } else {
            Some(self.live_or_placeholder(parent, a.seq, a.ts_ns))
        };
        (parent, id)
    }

    /// fork copies the creator's image: exe, argv, role, container id; cgroup_fork() puts
    /// the child in the creator's cgroup (unless CLONE_INTO_CGROUP names another).
    fn inherit_image(&mut self, id: ProcId, creator: ProcId, comm: Comm, into_cgroup: bool) {
        let c = &self.tree[creator];
        let (exe, argv, trunc, role, cid) = (
            c.exe.clone(),
            c.argv.clone(),
            c.argv_truncated,
            c.role,
            c.container_id.clone(),
        );
        let (k8s, cgroup) = (c.k8s.clone(), c.cgroup.clone().filter(|_| !into_cgroup));
        // copy_creds(): the child runs with its creator's credentials until it execs.
        let (uid, euid, standing, program) = (c.uid, c.euid, c.standing, c.program);
        let p = &mut self.tree[id];
        p.k8s = k8s;
        p.uid = uid;
        p.euid = euid;
        p.standing = standing;
        p.program = program;
        p.cgroup = cgroup;
        p.comm = comm;
        p.threads[0].comm = comm;
        p.exe = exe;
        p.argv = argv;
        p.argv_truncated = trunc;
        p.role = role;
        p.container_id = cid;
    }

    fn on_exec(&mut self, a: &Actor, x: &ExecDone) {
        let id = match self.tree.live(a.pid) {
            Some(id) => {
                self.check_parent(id, a.ppid, a.seq);
                id
            }
            None => self.placeholder(a.pid, a.ppid, a.seq, a.ts_ns),
        };
        let comm = if !a.comm.is_empty() {
            a.comm
        } else {
            Comm::new(x.exe.as_deref().map(basename).unwrap_or(""))
        };
        self.tree.exec_threads(id, comm);
        let p = &mut self.tree[id];
        p.comm = comm;
        p.exe = x.exe.clone();
        p.argv = argv_of(&x.argv);
        p.argv_truncated = x.truncated;
        p.uid = a.uid;
        p.euid = x.cred.map_or(u32::MAX, |c| c.euid);
        let cred = x.cred.map(|c| super::identity::reexec(c, p.program));
        p.program = cred.and_then(|c| c.program);
        p.standing = super::identity::standing(cred.as_ref(), a.uid);
        if let Some(exe) = &x.exe {
            // the result of an exec taken as run at the end of an input came after all
            if p.exec_unconfirmed() {
                p.execs.pop();
            }
            p.execs.push(ExecRecord {
                seq: a.seq,
                ts_ns: a.ts_ns,
                exe: exe.clone(),
                unconfirmed: false,
            });
        }
        self.classify_exec(id, a.seq);
        if let Some(m) = self.pending_meta.remove(&a.pid) {
            match self.tree[id].standing {
                // Still none of the runtimes' files: refused as any claim is.
                super::identity::Standing::Refused(
                    why @ super::identity::Refusal::NotInstalled,
                ) => self.refuse_meta(id, &m.by, why),
                _ => self.container_meta(id, &m.by, &m.cid, &m.identity),
            }
        }
    }

    /// The input ended (its last event applied): an exec whose call the source showed but not
    /// its result (an strace log cut in `execve(...) <unfinished ...>`) is what the process
    /// tried to run: taken as its exec, marked [`ExecRecord::unconfirmed`], its role what
    /// its argv names (credentials permitting, as for any exec). Call it once the input is
    /// read whole; a later event for the same call takes its place.
    pub fn end_of_input(&mut self) {
        for (tid, x) in self.adapter.take_unfinished_execs() {
            let Some(id) = self.tree.record_of_tid(tid) else {
                continue;
            };
            let p = &self.tree[id];
            let a = Actor {
                seq: self.last_seq.unwrap_or(0),
                ts_ns: self.now_ts,
                pid: p.pid,
                tid,
                ppid: 0,
                comm: Comm::default(),
                uid: p.uid,
            };
            self.on_exec(&a, &x);
            if let Some(last) = self.tree[id].execs.last_mut() {
                last.unconfirmed = true;
            }
        }
    }

    /// Role and container id after an exec. What the name and argv claim counts only when
    /// the kernel's word on the process lets it speak for a container ([`speaks_as`]); a
    /// refused claim is a warning, and the process stays what it was (a container's process
    /// stays its container's).
    fn classify_exec(&mut self, id: ProcId, seq: u64) {
        let p = &mut self.tree[id];
        let prev = p.role;
        let standing = p.standing;
        let named = classify(p.comm.as_bytes(), p.exe.as_deref(), &p.argv);
        // The file decides where the capture judged it; a source that could not judge (an
        // strace log, an older recording) has the name's word, standing permitting.
        let classified = match (p.program, standing.may_speak()) {
            (Some(prog), true) => classify_program(prog, p.comm.as_bytes(), &p.argv),
            _ => named.clone().filter(|c| speaks_as(c.role, prev, standing)),
        };
        let cni = named.is_none()
            && p.program.is_none()
            && standing.may_speak()
            && is_cni_plugin_name(p.exe.as_deref(), &p.argv)
            && self.runtime_ancestor(id);
        if let (Some(c), None, super::identity::Standing::Refused(why)) =
            (&named, &classified, standing)
        {
            let (pid, uid, role) = (self.tree[id].pid, self.tree[id].uid, c.role);
            self.warn(
                seq,
                WarningKind::RoleRefused {
                    pid,
                    uid,
                    role,
                    why,
                },
            );
        }
        let p = &mut self.tree[id];
        let new_role = match classified.as_ref().map(|c| c.role) {
            Some(r) => Some(r),
            None if cni => Some(Role::CniPlugin),
            None if matches!(prev, Some(Role::OciInit { .. }) | Some(Role::Container)) => {
                Some(Role::Container)
            }
            None => None,
        };
        if matches!(new_role, Some(Role::OciInit { .. })) && p.init_exec_seq().is_none() {
            p.rare_mut().init_exec_seq = Some(seq);
        }
        if matches!(prev, Some(Role::OciInit { .. }))
            && matches!(new_role, Some(Role::Container | Role::Sandbox))
        {
            p.rare_mut().workload_exec_seq = Some(seq);
        }
        p.role = new_role;
        if let Some(cid) = classified.and_then(|c| c.container_id) {
            p.container_id = Some(Arc::from(cid));
            self.attach_identity(id);
        }
    }

    /// Whether a runtime daemon is among the first ancestors of `id` (CNI plugins are run by
    /// the runtime, and IPAM plugins by the plugin it ran).
    fn runtime_ancestor(&self, id: ProcId) -> bool {
        self.ancestors(id)
            .take(8)
            .any(|a| a.role == Some(Role::RuntimeDaemon))
    }

    fn rename(&mut self, id: ProcId, tid: u32, comm: Comm, seq: u64) {
        if let Some(i) = self.tree.thread_slot(id, tid) {
            self.tree[id].threads[i].comm = comm;
        }
        let ts_ns = self.now_ts;
        let p = &mut self.tree[id];
        p.rare_mut().renames.push(Rename {
            seq,
            ts_ns,
            tid,
            comm,
        });
        // comm is per thread; the process shows its leader's. A new name makes no role: only
        // `runc init` (an exec that could speak) moves on through its stages by renaming — or,
        // where the source cannot tell credentials and missed the exec (an strace log that
        // starts late, a lost event), a process of no role yet.
        if tid == p.pid {
            p.comm = comm;
            let unseen = p.role.is_none() && p.standing == super::identity::Standing::Unverified;
            let init = matches!(p.role, Some(Role::OciInit { .. }));
            if let Some(stage) = InitStage::from_comm(comm.as_bytes()).filter(|_| init || unseen) {
                p.role = Some(Role::OciInit { stage: Some(stage) });
            }
        }
    }

    fn set_subreaper(&mut self, id: ProcId, on: bool, seq: u64) {
        let ts_ns = self.now_ts;
        let p = &mut self.tree[id];
        if !on {
            if p.is_subreaper {
                p.rare_mut().subreaper_cleared_seq = Some(seq);
            }
            p.is_subreaper = false;
            return;
        }
        p.is_subreaper = true;
        let rare = p.rare_mut();
        rare.subreaper_seq = Some(seq);
        rare.subreaper_ts_ns = ts_ns;
        rare.subreaper_cleared_seq = None;
        // kernel/sys.c propagate_has_child_subreaper(): descendants get has_child_subreaper;
        // a subtree that has it already, or under a pid namespace's init, is skipped.
        let below: Vec<ProcId> = self.tree[id].children.clone();
        for c in below {
            let ids = self.subtree(c, |p| {
                !p.exited && !p.has_child_subreaper && !p.is_ns_init()
            });
            for d in ids {
                let p = &mut self.tree[d];
                if !p.exited && !p.has_child_subreaper && !p.is_ns_init() {
                    p.has_child_subreaper = true;
                }
            }
        }
    }

    fn on_task_exit(&mut self, a: &Actor, status: u32, group_dead: bool) {
        let id = match self.tree.newest(a.pid) {
            // Late exits of other threads of a process already ended (exit_group).
            Some(id) if self.tree[id].exited => return,
            Some(id) => {
                self.check_parent(id, a.ppid, a.seq);
                id
            }
            None => self.placeholder(a.pid, a.ppid, a.seq, a.ts_ns),
        };
        self.tree.thread_died(id, a.tid);
        if group_dead {
            self.pending_meta.remove(&a.pid);
        }
        // After exit_group() the other threads still run until the kernel's SIGKILL reaches
        // them (a Go runtime's threads finish their syscalls): the process ends with the last.
        let p = &self.tree[id];
        if group_dead || p.live_threads == 0 {
            let status = ExitStatus::from_wait_status(status);
            self.end_process(id, Some(status), a.seq, a.ts_ns);
        }
        // Otherwise a thread ended: the process's children stay (they belong to the process).
    }

    // ---- deaths, orphans, signals ----

    /// The process is gone: `death::end` marks it, and its orphans go to their new reaper.
    fn end_process(&mut self, id: ProcId, status: Option<ExitStatus>, seq: u64, ts_ns: u64) {
        let ended = death::end(&mut self.tree, id, status, seq, ts_ns);
        if ended.first {
            self.retention.exited();
        }
        if let Some(r) = ended.orphans {
            self.reparent(r, seq);
        }
    }

    /// Hands the orphans to the reaper `reaper.rs` found.
    fn reparent(&mut self, r: Reparenting, seq: u64) {
        let (reaper, why) = match r.to {
            NewReaper::NamespaceDies => return,
            NewReaper::Adopt(id, why) => (Some(id), why),
            NewReaper::HostInitUnseen => {
                let init = self.tree.new_record(1, How::Unknown, seq, 0);
                (Some(init), Reaper::Init)
            }
            NewReaper::Unseen => (None, Reaper::NsInitUnseen),
        };
        let reaper_pid = reaper.map_or(0, |id| self.tree[id].pid);
        let reason = Reason::ParentExited {
            parent: self.tree[r.dead].pid,
            reaper: why,
        };
        self.tree.release_orphans(r.dead);
        for child in r.orphans {
            self.tree.adopt_orphan(child, reaper, reaper_pid);
            self.record_adoption(child, reaper_pid, reason, seq);
        }
    }

    /// A signal on the records (`death::signal`); a SIGCHLD's check counted, and the model's
    /// adoption moved or taken back where the kernel's word says it came at another time.
    fn on_signal(&mut self, a: &Actor, info: &SignalInfo) {
        let Some(verdict) = death::signal(&mut self.tree, a, info) else {
            return;
        };
        match verdict {
            Sigchld::Unchecked => self.sigchld.unchecked += 1,
            Sigchld::Agreed => self.sigchld.agreed += 1,
            Sigchld::AgreedAdopted(adoption) => {
                if let Some(ad) = adoption {
                    self.adopt(ad, a.seq);
                }
                self.sigchld.agreed += 1;
            }
            Sigchld::AgreedUndone(undo) => {
                if let Some(u) = undo {
                    self.unadopt(u);
                }
                self.sigchld.agreed += 1;
            }
            Sigchld::ParentInferred {
                child,
                parent,
                parent_pid,
            } => {
                self.sigchld.agreed += 1;
                let parent = match parent {
                    Some(id) => id,
                    None => self.placeholder(parent_pid, 0, a.seq, a.ts_ns),
                };
                self.tree.set_parent(child, Some(parent), parent_pid);
                self.tree[child].rare_mut().parent_from_sigchld = Some(a.seq);
            }
            Sigchld::Disagreed { pid, model, kernel } => {
                self.sigchld.disagreed += 1;
                let kind = WarningKind::SigchldDisagreement { pid, model, kernel };
                self.warn(a.seq, kind);
            }
        }
    }

    /// One adoption `reaper.rs` or `death.rs` decided: made, and counted.
    fn adopt(&mut self, ad: Adoption, seq: u64) {
        self.tree.set_parent(ad.child, ad.reaper, ad.reaper_pid);
        self.record_adoption(ad.child, ad.reaper_pid, ad.reason, seq);
    }

    /// An adoption the model made and the kernel never did, taken back.
    fn unadopt(&mut self, u: Undo) {
        self.tree[u.child].lineage.pop();
        self.adoptions.uncount(u.reason);
        self.tree.set_parent(u.child, Some(u.parent), u.parent_pid);
    }
}

/// Whether a process whose name and argv claim `role` may take it: a role that speaks for a
/// container (daemon, shim, runtime, init stages, CNI plugin) needs a process the kernel lets
/// speak; a sandbox (`pause`) is also what an init stage exec's into, inside the container.
fn speaks_as(role: Role, prev: Option<Role>, standing: super::identity::Standing) -> bool {
    standing.may_speak() || (role == Role::Sandbox && matches!(prev, Some(Role::OciInit { .. })))
}

/// How a birth happened, from what the source knows of the call.
fn birth_how(b: &Birth) -> How {
    let has = |bit| b.flags.is_some_and(|f: CloneFlags| f.contains(bit));
    if b.syscall == Some(Syscall::Vfork) || has(cf::CLONE_VFORK) {
        How::Vfork
    } else if has(cf::CLONE_PARENT) {
        How::CloneParent
    } else if b.syscall == Some(Syscall::Fork) {
        How::Fork
    } else {
        How::Clone
    }
}

/// Replays `events` with seq ≤ `seq` into a fresh engine: the tree as it was at `seq`.
pub fn replay_until(events: &[Event], seq: u64) -> Engine {
    let mut e = Engine::new();
    for ev in events.iter().filter(|ev| ev.seq <= seq) {
        e.apply(ev);
    }
    e
}
