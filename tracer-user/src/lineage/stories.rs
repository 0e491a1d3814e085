//! Stories kept as events arrive: a view that follows a growing recording updates them from
//! the records the last events changed, never from every record.
//!
//! Each story hangs on an anchor (the process that became a container's init, or was run in
//! one by `runc exec`) and remembers what it read ([`super::reads`]); an update re-files the
//! changed records in the index, finds the anchors that read them (or a class or a seq window
//! they fall in), and builds those again with the same code a one-shot [`Stories::build`]
//! runs. Restarts are counted per (pod, container name) in order of their births.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use super::engine::Engine;
use super::lifecycle::{self, CniAdded};
use super::process::{ProcId, Process};
use super::reads::{meta_fingerprint, Ctx, Deps, Index, Key, Touched};
use super::store::ChangeMark;
use super::story::{is_anchor, Story};

/// Every container life the engine has seen: a birth (a process that became `runc:[2:INIT]`
/// or exec'd out of an oci-init stage), an exec into a running container, a restart, and,
/// after each that ended, its death; ordered by their first step. One-shot: a view that
/// follows a growing recording keeps a [`Stories`] and updates it. A runtime daemon's restart
/// is a story too (`restart_story.rs`), placed by the old daemon's end.
pub fn stories(e: &Engine) -> Vec<Story> {
    Stories::build(e).list()
}

/// Where a story goes in the list: its first step's seq (the end if it has none), then its
/// anchor's `(start_seq, id)`, a life before its death.
type Slot = (u64, u64, ProcId, u8);

/// The work an update did (counted, for tests and benches).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Work {
    /// Changed records taken from the engine's change log.
    pub changed: u64,
    /// Stories (lives and deaths) built again.
    pub rebuilt: u64,
    /// Records the builders read.
    pub visited: u64,
}

/// One anchor's stories and what they read.
#[derive(Debug, Default)]
struct Anchor {
    order: (u64, ProcId),
    life: Option<Story>,
    group: Option<(String, String)>,
    slots: Vec<Slot>,
    life_deps: Deps,
    death_deps: Deps,
}

/// Who read what, the other way round: which anchors to build again when it changes.
#[derive(Debug, Default)]
struct Readers {
    full: HashMap<ProcId, HashSet<ProcId>>,
    meta: HashMap<ProcId, HashSet<ProcId>>,
    /// The meta fingerprint each meta-read record had when read.
    seen: HashMap<ProcId, u64>,
    keys: HashMap<Key, HashSet<ProcId>>,
}

impl Readers {
    fn add(&mut self, anchor: ProcId, d: &Deps, e: &Engine) {
        for &id in &d.full {
            self.full.entry(id).or_default().insert(anchor);
        }
        for &id in &d.meta {
            self.meta.entry(id).or_default().insert(anchor);
            if let Some(p) = e.get(id) {
                self.seen.insert(id, meta_fingerprint(p));
            }
        }
        for k in &d.keys {
            self.keys.entry(k.clone()).or_default().insert(anchor);
        }
    }

    fn remove(&mut self, anchor: ProcId, d: &Deps) {
        fn drop_from<K: std::hash::Hash + Eq + Clone>(
            m: &mut HashMap<K, HashSet<ProcId>>,
            k: &K,
            anchor: ProcId,
        ) -> bool {
            let Some(s) = m.get_mut(k) else { return false };
            s.remove(&anchor);
            let empty = s.is_empty();
            if empty {
                m.remove(k);
            }
            empty
        }
        for id in &d.full {
            drop_from(&mut self.full, id, anchor);
        }
        for id in &d.meta {
            if drop_from(&mut self.meta, id, anchor) {
                self.seen.remove(id);
            }
        }
        for k in &d.keys {
            drop_from(&mut self.keys, k, anchor);
        }
    }

    /// The anchors that read record `p`, given that it changed.
    fn of_record(&mut self, p: &Process, out: &mut BTreeSet<ProcId>) {
        out.extend(self.full.get(&p.id).into_iter().flatten());
        if let Some(readers) = self.meta.get(&p.id) {
            let fp = meta_fingerprint(p);
            if self.seen.insert(p.id, fp) != Some(fp) {
                out.extend(readers);
            }
        }
    }
}

/// Puts a birth in its restart group: the lives before it, the last one's init and anchor,
/// when it is not the first; the births after it count one more.
fn join_group(
    groups: &mut HashMap<(String, String), Vec<(u64, ProcId)>>,
    e: &Engine,
    g: (String, String),
    at: (u64, ProcId),
    later: &mut Vec<(u64, ProcId)>,
) -> Option<(u32, u32, ProcId)> {
    let v = groups.entry(g).or_default();
    let i = v.binary_search(&at).unwrap_or_else(|i| i);
    v.insert(i, at);
    later.extend_from_slice(&v[i + 1..]);
    let prev = i.checked_sub(1).map(|j| v[j].1)?;
    let init = e.get(prev).map_or(0, |p| p.pid);
    Some((i as u32, init, prev))
}

/// Every container life's stories, kept up to date as the engine takes events
/// ([`Stories::update`]); [`Stories::list`] is what [`super::stories`] returns for the engine.
#[derive(Debug, Default)]
pub struct Stories {
    idx: Index,
    /// Where the engine's change log was read up to; `None` before the first update.
    mark: Option<ChangeMark>,
    anchors: HashMap<ProcId, Anchor>,
    out: BTreeMap<Slot, Story>,
    /// Births by (pod, container name), in their anchors' order.
    groups: HashMap<(String, String), Vec<(u64, ProcId)>>,
    added: CniAdded,
    readers: Readers,
    version: u64,
    work: Work,
    /// The stories the last update built.
    fresh: Vec<Slot>,
    /// The runtime restarts' stories: when to find them again, and their slots.
    restarts: super::restart_story::Watch,
    restart_slots: Vec<Slot>,
}

impl Stories {
    /// Every story of `e` at once.
    pub fn build(e: &Engine) -> Stories {
        let mut s = Stories::default();
        s.update(e);
        s
    }

    /// Brings the stories up to `e`'s state: only the stories whose reads changed since the
    /// last update are built again (all of them the first time, or when the engine's change
    /// log no longer covers the last update: retention dropped records).
    pub fn update(&mut self, e: &Engine) {
        self.work = Work::default();
        self.fresh.clear();
        let changed: Vec<ProcId> = match self.mark.and_then(|m| e.tree().changed_since(m)) {
            Some(ids) => ids.to_vec(),
            None => {
                let version = self.version;
                *self = Stories {
                    version,
                    ..Stories::default()
                };
                e.processes().map(|p| p.id).collect()
            }
        };
        self.mark = Some(e.tree().change_mark());
        let dirty = self.invalidate(e, &changed);
        let restarts = self
            .restarts
            .dirty(changed.iter().filter_map(|&id| e.get(id)));
        if !dirty.is_empty() {
            self.rebuild(e, &dirty);
        }
        if restarts {
            self.rebuild_restarts(e);
        }
        if !dirty.is_empty() || restarts {
            self.version += 1;
        }
    }

    /// The runtime restarts' stories anew, each in the list by its first step (the old
    /// daemon's end), after the stories of the same seq.
    fn rebuild_restarts(&mut self, e: &Engine) {
        for slot in self.restart_slots.drain(..) {
            self.out.remove(&slot);
        }
        let (found, visited) = self.restarts.search(e);
        self.work.visited += visited;
        for (i, st) in found.into_iter().enumerate() {
            let first = st.steps.first().map_or(u64::MAX, |x| x.seq);
            let slot = (first, u64::MAX, i, 2);
            self.work.rebuilt += 1;
            self.restart_slots.push(slot);
            self.fresh.push(slot);
            self.out.insert(slot, st);
        }
    }

    /// The anchors whose stories the changed records may change.
    fn invalidate(&mut self, e: &Engine, changed: &[ProcId]) -> BTreeSet<ProcId> {
        // A flag per record id and what each record touched taken at once: the first build
        // sees every record of a million, and a hash set of them, or a key each, would cost
        // more than the stories.
        let mut seen = vec![false; e.id_bound()];
        let mut t = Touched::default();
        let mut dirty = BTreeSet::new();
        for &id in changed {
            match seen.get_mut(id) {
                Some(s) if !*s => *s = true,
                _ => continue,
            }
            let Some(p) = e.get(id) else { continue };
            self.work.changed += 1;
            self.idx.update(p, &mut t);
            self.readers.of_record(p, &mut dirty);
            if is_anchor(p) || self.anchors.contains_key(&p.id) {
                dirty.insert(p.id);
            }
            for k in t.keys.drain(..) {
                dirty.extend(self.readers.keys.get(&k).into_iter().flatten());
            }
            for id in t.records.drain(..) {
                dirty.extend(self.readers.full.get(&id).into_iter().flatten());
            }
        }
        dirty
    }

    /// Builds the dirty anchors' lives again, in their order (a birth's restart count reads
    /// the births before it), then the deaths the new lives or CNI ADD runs change.
    fn rebuild(&mut self, e: &Engine, dirty: &BTreeSet<ProcId>) {
        let mut todo: BTreeSet<(u64, ProcId)> = dirty
            .iter()
            .filter_map(|&id| e.get(id).map(|p| (p.start_seq, p.id)))
            .collect();
        let mut deaths = BTreeSet::new();
        let mut cni_moved = Vec::new();
        while let Some((start, id)) = todo.pop_first() {
            deaths.insert(id);
            let later = self.rebuild_life(e, (start, id), &mut cni_moved);
            todo.extend(later);
        }
        let mut t = Touched::default();
        for (pid, _) in cni_moved {
            self.idx.cni_windows(pid, &mut t);
        }
        for id in &t.records {
            deaths.extend(self.readers.full.get(id).into_iter().flatten());
        }
        for id in deaths {
            self.rebuild_death(e, id);
        }
    }

    /// Anchor `id`'s life anew; returns the births after it whose restart count may change.
    fn rebuild_life(
        &mut self,
        e: &Engine,
        (start, id): (u64, ProcId),
        cni_moved: &mut Vec<(u32, u64)>,
    ) -> Vec<(u64, ProcId)> {
        let mut a = self.anchors.remove(&id).unwrap_or_default();
        self.readers.remove(id, &a.life_deps);
        for slot in a.slots.drain(..) {
            self.out.remove(&slot);
        }
        if let Some(old) = a.life.take() {
            for k in lifecycle::cni_added(&old) {
                cni_moved.push(k);
                if let Some(n) = self.added.get_mut(&k) {
                    *n -= 1;
                    if *n == 0 {
                        self.added.remove(&k);
                    }
                }
            }
        }
        let mut later = self.leave_group(&a, (start, id));
        let anchor = e.get(id).filter(|p| is_anchor(p));
        let Some(anchor) = anchor else {
            self.readers.remove(id, &a.death_deps);
            return later;
        };
        let c = Ctx::new(e, &self.idx);
        let mut life = lifecycle::life(&c, anchor);
        a.group = lifecycle::restart_group(&life);
        let group = a.group.clone();
        let previous =
            group.and_then(|g| join_group(&mut self.groups, e, g, (start, id), &mut later));
        if let Some((before, init, prev_id)) = previous {
            let gaps = self
                .anchors
                .get(&prev_id)
                .and_then(|a| a.life.as_ref()?.restart.as_ref())
                .map(|r| r.gaps_ns.clone())
                .unwrap_or_default();
            lifecycle::mark_restart(&c, &mut life, before, init, &gaps);
        }
        let (deps, visited) = c.take();
        self.work.visited += visited;
        self.work.rebuilt += 1;
        for k in lifecycle::cni_added(&life) {
            cni_moved.push(k);
            *self.added.entry(k).or_default() += 1;
        }
        self.readers.add(id, &deps, e);
        a.life_deps = deps;
        a.order = (start, id);
        a.life = Some(life);
        self.anchors.insert(id, a);
        later
    }

    /// Takes anchor `a` out of its restart group; the births after it count one fewer.
    fn leave_group(&mut self, a: &Anchor, at: (u64, ProcId)) -> Vec<(u64, ProcId)> {
        let Some(g) = &a.group else { return Vec::new() };
        let Some(v) = self.groups.get_mut(g) else {
            return Vec::new();
        };
        let Ok(i) = v.binary_search(&at) else {
            return Vec::new();
        };
        v.remove(i);
        let later = v[i..].to_vec();
        if v.is_empty() {
            self.groups.remove(g);
        }
        later
    }

    /// Anchor `id`'s death story anew (after its life), and both in the list.
    fn rebuild_death(&mut self, e: &Engine, id: ProcId) {
        let Some(mut a) = self.anchors.remove(&id) else {
            return;
        };
        self.readers.remove(id, &a.death_deps);
        for slot in a.slots.drain(..) {
            self.out.remove(&slot);
        }
        let Some(life) = a.life.clone() else { return };
        let c = Ctx::new(e, &self.idx);
        let death = lifecycle::death(&c, &life, &self.added);
        let (deps, visited) = c.take();
        self.work.visited += visited;
        self.work.rebuilt += u64::from(death.is_some());
        self.readers.add(id, &deps, e);
        a.death_deps = deps;
        let (start, _) = a.order;
        let first = |s: &Story| s.steps.first().map_or(u64::MAX, |x| x.seq);
        for (part, st) in [(0u8, Some(life)), (1, death)] {
            let Some(st) = st else { continue };
            let slot = (first(&st), start, id, part);
            a.slots.push(slot);
            self.fresh.push(slot);
            self.out.insert(slot, st);
        }
        self.anchors.insert(id, a);
    }

    /// Every story, ordered by their first step (as [`super::stories`] gives them).
    pub fn iter(&self) -> impl Iterator<Item = &Story> + '_ {
        self.out.values()
    }

    /// The stories the last update built (new ones, and those it built again).
    pub fn fresh(&self) -> impl Iterator<Item = &Story> + '_ {
        self.fresh.iter().filter_map(|s| self.out.get(s))
    }

    /// Every story, copied.
    pub fn list(&self) -> Vec<Story> {
        self.out.values().cloned().collect()
    }

    /// How many stories there are.
    pub fn len(&self) -> usize {
        self.out.len()
    }

    /// No story yet.
    pub fn is_empty(&self) -> bool {
        self.out.is_empty()
    }

    /// Changes whenever an update built a story again (a caller copies the list only then).
    pub fn version(&self) -> u64 {
        self.version
    }

    /// What the last update did.
    pub fn work(&self) -> Work {
        self.work
    }
}
