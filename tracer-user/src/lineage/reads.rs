//! What a story reads of the engine: the records and the indexes its builders look things up
//! in, each read noted as a dependency, so `Stories::update` rebuilds a story only when
//! something it read changed.
//!
//! A read is one of: a whole record ([`Ctx::get`]: any write to it counts), a record's
//! identity only ([`Ctx::meta`]: pid, name, role, parents, oci-init; a hub such as the runtime
//! daemon or init is read this way, so its many children do not touch every story), which
//! record a pid names ([`Ctx::process`], [`Ctx::born_by`]), or a class of records found by
//! key ([`Key`]). Seq windows over the sandboxes and CNI plugins are not keys: a change there
//! counts as a write to the sandbox whose window it falls in (`Index::neighbours`).

use std::cell::{Cell, RefCell};
use std::collections::{BTreeSet, HashMap};
use std::hash::{Hash, Hasher};
use std::ops::Bound::{Excluded, Unbounded};
use std::sync::Arc;

use super::engine::Engine;
use super::pidmap::PidMap;
use super::process::{ProcId, Process};
use super::roles::{OciCommand, Role};

/// A class of records a story looked up by key.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) enum Key {
    /// OCI runtimes born of a shim.
    RuntimesOf(ProcId),
    /// Shims with this container id.
    ShimsOf(Arc<str>),
    /// `runc delete` runs for this container id.
    DeletesOf(Arc<str>),
    /// Processes killed with the pid namespace of this init (its pid, its exit seq).
    Zapped(u32, u64),
    /// The pid namespace with this inode (its init).
    Namespace(u64),
    /// Which records have this pid.
    Pid(u32),
    /// Processes of this container id the OOM killer chose.
    OomVictimsOf(Arc<str>),
}

/// What one story read.
#[derive(Clone, Debug, Default)]
pub(super) struct Deps {
    pub full: Vec<ProcId>,
    pub meta: Vec<ProcId>,
    pub keys: Vec<Key>,
}

/// The part of a record the indexes file it under. Kept only for records that have one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Class {
    role: Option<Role>,
    cid: Option<Arc<str>>,
    birth_parent: Option<ProcId>,
    start_seq: u64,
    workload: Option<u64>,
    exit: Option<u64>,
    zapped: Option<(u32, u64)>,
    oom: bool,
}

impl Class {
    fn of(p: &Process) -> Class {
        Class {
            role: p.role,
            cid: p.container_id.clone(),
            birth_parent: p.birth_parent,
            start_seq: p.start_seq,
            workload: p.workload_exec_seq(),
            exit: p.exit_seq,
            zapped: p.zapped_by(),
            oom: p.oom().is_some(),
        }
    }

    fn is_empty(&self) -> bool {
        self.role.is_none() && self.zapped.is_none() && !self.oom
    }

    /// The keys a record of this class is found by.
    fn keys(&self) -> Vec<Key> {
        let mut k = Vec::new();
        match (self.role, &self.cid) {
            (Some(Role::OciRuntime { subcommand }), cid) => {
                k.extend(self.birth_parent.map(Key::RuntimesOf));
                if let (Some(OciCommand::Delete), Some(c)) = (subcommand, cid) {
                    k.push(Key::DeletesOf(c.clone()));
                }
            }
            (Some(Role::Shim), Some(c)) => k.push(Key::ShimsOf(c.clone())),
            _ => {}
        }
        k.extend(self.zapped.map(|(p, s)| Key::Zapped(p, s)));
        if let (true, Some(c)) = (self.oom, &self.cid) {
            k.push(Key::OomVictimsOf(c.clone()));
        }
        k
    }

    fn sandbox_end(&self) -> Option<u64> {
        self.workload.filter(|_| self.role == Some(Role::Sandbox))
    }

    fn sandbox_exit(&self) -> Option<u64> {
        self.exit.filter(|_| self.role == Some(Role::Sandbox))
    }

    fn cni_start(&self) -> Option<u64> {
        (self.role == Some(Role::CniPlugin)).then_some(self.start_seq)
    }
}

/// The lookups the story builders make, kept up to date record by record.
#[derive(Clone, Debug, Default)]
pub(super) struct Index {
    /// Every id below it was indexed.
    bound: ProcId,
    /// The newest record of each pid, and for a record the one before it with its pid.
    newest: PidMap<ProcId>,
    older: HashMap<ProcId, ProcId>,
    class: HashMap<ProcId, Class>,
    by_key: HashMap<Key, Vec<ProcId>>,
    /// Sandboxes by their pause exec, sandboxes by their exit, CNI plugins by their birth.
    sandbox_ends: BTreeSet<(u64, ProcId)>,
    sandbox_exits: BTreeSet<(u64, ProcId)>,
    cni: BTreeSet<(u64, ProcId)>,
}

/// What a record's change means to the stories, besides the record itself.
#[derive(Debug, Default)]
pub(super) struct Touched {
    /// Classes that gained or lost a record.
    pub keys: Vec<Key>,
    /// Records whose stories' seq windows moved (count them as written).
    pub records: Vec<ProcId>,
}

impl Index {
    /// Files record `p` (new or changed) anew; what that changes for the stories goes to `t`.
    pub fn update(&mut self, p: &Process, t: &mut Touched) {
        if p.id >= self.bound {
            self.add_pid(p);
            t.keys.push(Key::Pid(p.pid));
            // A namespace's init is named once, at the birth of its pid 1 (register_namespace).
            let init = p.pidns.filter(|ns| ns.level > 0 && ns.ns_pid == 1);
            t.keys.extend(init.map(|ns| Key::Namespace(ns.inum)));
        }
        let new = Class::of(p);
        let old = self.class.get(&p.id).cloned().unwrap_or_default();
        if new == old {
            return;
        }
        self.unfile(p.id, &old, t);
        self.file(p.id, &new, t);
        if new.is_empty() {
            self.class.remove(&p.id);
        } else {
            self.class.insert(p.id, new);
        }
    }

    fn add_pid(&mut self, p: &Process) {
        if let Some(prev) = self.newest.insert(p.pid, p.id) {
            if prev < p.id {
                self.older.insert(p.id, prev);
            } else {
                // Out of order (never from the store): keep the newest.
                self.newest.insert(p.pid, prev);
            }
        }
        self.bound = self.bound.max(p.id + 1);
    }

    fn unfile(&mut self, id: ProcId, c: &Class, t: &mut Touched) {
        for k in c.keys() {
            if let Some(v) = self.by_key.get_mut(&k) {
                v.retain(|&x| x != id);
                if v.is_empty() {
                    self.by_key.remove(&k);
                }
            }
            t.keys.push(k);
        }
        self.neighbours(c, t);
        c.sandbox_end().map(|w| self.sandbox_ends.remove(&(w, id)));
        c.sandbox_exit()
            .map(|x| self.sandbox_exits.remove(&(x, id)));
        c.cni_start().map(|s| self.cni.remove(&(s, id)));
    }

    fn file(&mut self, id: ProcId, c: &Class, t: &mut Touched) {
        for k in c.keys() {
            let v = self.by_key.entry(k.clone()).or_default();
            if let Err(at) = v.binary_search(&id) {
                v.insert(at, id);
            }
            t.keys.push(k);
        }
        c.sandbox_end().map(|w| self.sandbox_ends.insert((w, id)));
        c.sandbox_exit().map(|x| self.sandbox_exits.insert((x, id)));
        c.cni_start().map(|s| self.cni.insert((s, id)));
        self.neighbours(c, t);
    }

    /// The sandboxes whose windows the CNI plugins with `pid` are in (a birth story named
    /// them as its CNI ADD runs, or stopped naming them).
    pub fn cni_windows(&self, pid: u32, t: &mut Touched) {
        let mut at = self.newest.get(&pid).copied();
        while let Some(id) = at {
            if let Some(c) = self.class.get(&id) {
                self.neighbours(c, t);
            }
            at = self.older.get(&id).copied();
        }
    }

    /// The sandboxes whose windows a record of class `c` is in: a sandbox's CNI ADD runs
    /// come between the previous pause exec and its own, its teardown between its exit and
    /// the next sandbox's.
    fn neighbours(&self, c: &Class, t: &mut Touched) {
        let next_end = |s: u64| {
            self.sandbox_ends
                .range((Excluded((s, usize::MAX)), Unbounded))
        };
        let prev_exit = |s: u64| self.sandbox_exits.range(..(s, 0)).next_back();
        for s in [c.sandbox_end(), c.cni_start()].into_iter().flatten() {
            t.records.extend(next_end(s).next().map(|&(_, id)| id));
        }
        for s in [c.sandbox_exit(), c.cni_start()].into_iter().flatten() {
            t.records.extend(prev_exit(s).map(|&(_, id)| id));
        }
    }
}

/// A meta read's fingerprint: what [`Ctx::meta`] allows a builder to read of a record.
pub(super) fn meta_fingerprint(p: &Process) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (p.pid, p.ppid, p.birth_parent, p.creator, p.role).hash(&mut h);
    (p.was_oci_init(), p.comm.as_bytes(), p.exe.as_deref()).hash(&mut h);
    h.finish()
}

/// The engine as one story's builders see it: every read noted.
pub(super) struct Ctx<'a> {
    pub e: &'a Engine,
    idx: &'a Index,
    deps: RefCell<Deps>,
    /// Records visited so far (the counted work).
    visited: Cell<u64>,
}

impl<'a> Ctx<'a> {
    pub fn new(e: &'a Engine, idx: &'a Index) -> Self {
        Ctx {
            e,
            idx,
            deps: RefCell::default(),
            visited: Cell::new(0),
        }
    }

    /// What was read since the last call, and how many records.
    pub fn take(&self) -> (Deps, u64) {
        (self.deps.take(), self.visited.replace(0))
    }

    fn count(&self) {
        self.visited.set(self.visited.get() + 1);
    }

    fn key(&self, k: Key) {
        self.deps.borrow_mut().keys.push(k);
    }

    /// Record `id`, all of it.
    pub fn get(&self, id: ProcId) -> Option<&'a Process> {
        self.count();
        self.deps.borrow_mut().full.push(id);
        self.e.get(id)
    }

    /// Record `id` for what [`meta_fingerprint`] covers only (pid, ppid, parents, role,
    /// name, oci-init): read anything else through [`Ctx::get`].
    pub fn meta(&self, id: ProcId) -> Option<&'a Process> {
        self.count();
        self.deps.borrow_mut().meta.push(id);
        self.e.get(id)
    }

    /// `pid`'s newest record (`Engine::process`), all of it.
    pub fn process(&self, pid: u32) -> Option<&'a Process> {
        self.key(Key::Pid(pid));
        self.e.process(pid).and_then(|p| self.get(p.id))
    }

    /// `pid`'s newest record, for what [`Ctx::meta`] allows.
    pub fn process_meta(&self, pid: u32) -> Option<&'a Process> {
        self.key(Key::Pid(pid));
        self.e.process(pid).and_then(|p| self.meta(p.id))
    }

    /// The newest record of `pid` born by `seq` (a pid the recording saw reused names
    /// several).
    pub fn born_by(&self, pid: u32, seq: u64) -> Option<&'a Process> {
        self.key(Key::Pid(pid));
        let mut at = self.idx.newest.get(&pid).copied();
        let mut best: Option<&Process> = None;
        while let Some(id) = at {
            self.count();
            if let Some(p) = self.e.get(id).filter(|p| p.start_seq <= seq) {
                if best.is_none_or(|b| (p.start_seq, p.id) > (b.start_seq, b.id)) {
                    best = Some(p);
                }
            }
            at = self.idx.older.get(&id).copied();
        }
        best.and_then(|p| self.get(p.id))
    }

    /// The records filed under `k`, by id, each read whole.
    pub fn class(&self, k: Key) -> Vec<&'a Process> {
        let ids = self.idx.by_key.get(&k).cloned().unwrap_or_default();
        self.key(k);
        ids.into_iter().filter_map(|id| self.get(id)).collect()
    }

    /// The init of the pid namespace `inum`, for what [`Ctx::meta`] allows.
    pub fn namespace_init(&self, inum: u64) -> Option<&'a Process> {
        self.key(Key::Namespace(inum));
        let init = self.e.tree().namespace(inum)?.init?;
        self.meta(init)
    }

    /// The newest pause exec among sandboxes before `seq` (their windows: see
    /// `Index::neighbours`).
    pub fn sandbox_end_before(&self, seq: u64) -> Option<u64> {
        self.idx
            .sandbox_ends
            .range(..(seq, 0))
            .next_back()
            .map(|&(w, _)| w)
    }

    /// The first exit after `seq` of a sandbox other than `not`.
    pub fn sandbox_exit_after(&self, seq: u64, not: ProcId) -> Option<u64> {
        self.idx
            .sandbox_exits
            .range((Excluded((seq, usize::MAX)), Unbounded))
            .find(|&&(_, id)| id != not)
            .map(|&(x, _)| x)
    }

    /// CNI plugins born strictly between `after` and `before`, by id, each read whole.
    pub fn cni_between(&self, after: u64, before: u64) -> Vec<&'a Process> {
        if after.saturating_add(1) >= before {
            return Vec::new();
        }
        let mut ids: Vec<ProcId> = self
            .idx
            .cni
            .range((Excluded((after, usize::MAX)), Excluded((before, 0))))
            .map(|&(_, id)| id)
            .collect();
        ids.sort_unstable();
        ids.into_iter().filter_map(|id| self.get(id)).collect()
    }
}
