//! Process records by stable id: O(1) lookups, and records can be dropped (retention)
//! without renumbering the ids other records and the viewer hold.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::ops::{Index, IndexMut};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use super::cow::Chunked;
use super::pidmap::PidHasher;
use super::process::{ProcId, Process};

/// Records in creation order. Until the first [`Store::retain`] an id is its index; after
/// it, an index map says where each held id is (ids of dropped records are not in it).
#[derive(Clone, Debug, Default)]
pub(super) struct Store {
    /// Shared with the engine's clones (checkpoints) until written ([`Chunked`]).
    recs: Chunked<Process>,
    slots: Option<HashMap<ProcId, u32, BuildHasherDefault<PidHasher>>>,
    next_id: ProcId,
    /// What changed, for readers that follow the engine (`Stories::update`).
    changes: Changes,
}

/// Ids of the records changed (created, or written through `IndexMut` or `update_where`) since a reader's
/// [`ChangeMark`], bounded: a reader too far behind, or after a change the log cannot name
/// (retention dropped records), is told to start over.
#[derive(Debug)]
struct Changes {
    /// Which log this is: a mark taken on another engine (or a copy) is worth nothing here.
    origin: u64,
    log: Vec<ProcId>,
    /// Entries dropped from the front of `log` so far.
    base: u64,
    /// Bumped when the log cannot say what changed.
    resets: u64,
    /// The log's end when a reader last took a mark: an entry before it is never merged
    /// with a new one (that reader has read it). Atomic only to keep `Engine` `Sync`.
    marked: AtomicU64,
}

/// The next log's origin.
static ORIGINS: AtomicU64 = AtomicU64::new(1);

impl Default for Changes {
    fn default() -> Self {
        Changes {
            origin: ORIGINS.fetch_add(1, Relaxed),
            log: Vec::new(),
            base: 0,
            resets: 0,
            marked: AtomicU64::new(0),
        }
    }
}

impl Clone for Changes {
    fn clone(&self) -> Self {
        Changes {
            origin: ORIGINS.fetch_add(1, Relaxed),
            // No mark taken on the original is worth anything on the copy (its origin is
            // new), so the copy's log starts empty where the original's ends.
            log: Vec::new(),
            base: self.end(),
            resets: self.resets,
            marked: AtomicU64::new(self.end()),
        }
    }
}

/// Entries the change log keeps: many batches' worth (a follower reads it after each); half
/// go when it is full.
const MAX_CHANGES: usize = 1 << 16;

/// Where a reader of [`Store::changed_since`] stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChangeMark {
    origin: u64,
    resets: u64,
    pos: u64,
}

impl Changes {
    fn end(&self) -> u64 {
        self.base + self.log.len() as u64
    }

    fn note(&mut self, id: ProcId) {
        if self.log.last() == Some(&id) && self.end() > *self.marked.get_mut() {
            return;
        }
        if self.log.len() >= MAX_CHANGES {
            let half = MAX_CHANGES / 2;
            self.log.drain(..half);
            self.base += half as u64;
        }
        self.log.push(id);
    }
}

impl Store {
    fn slot(&self, id: ProcId) -> Option<usize> {
        match &self.slots {
            None => (id < self.recs.len()).then_some(id),
            Some(m) => m.get(&id).map(|&s| s as usize),
        }
    }

    /// The record `id`, unless it never existed or was dropped.
    pub fn get(&self, id: ProcId) -> Option<&Process> {
        self.slot(id).and_then(|s| self.recs.get(s))
    }

    pub fn contains(&self, id: ProcId) -> bool {
        self.slot(id).is_some()
    }

    /// Adds the record `make` builds for the next id.
    pub fn push(&mut self, make: impl FnOnce(ProcId) -> Process) -> ProcId {
        let id = self.next_id;
        self.next_id += 1;
        if let Some(m) = &mut self.slots {
            m.insert(id, self.recs.len() as u32);
        }
        self.recs.push(make(id));
        self.changes.note(id);
        id
    }

    /// Records held.
    pub fn len(&self) -> usize {
        self.recs.len()
    }

    /// Every id ever given is below this.
    pub fn id_bound(&self) -> ProcId {
        self.next_id
    }

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &Process> + '_ {
        self.recs.iter()
    }

    /// Applies `change` to the records `pick` selects, noting each as changed (and copying
    /// only the shared chunks that hold one).
    pub fn update_where(
        &mut self,
        pick: impl Fn(&Process) -> bool,
        mut change: impl FnMut(&mut Process),
    ) {
        let changes = &mut self.changes;
        self.recs.update_where(pick, |p| {
            change(p);
            changes.note(p.id);
        });
    }

    /// The mark of now: [`Store::changed_since`] it names what changes after.
    pub fn change_mark(&self) -> ChangeMark {
        let c = &self.changes;
        let pos = c.end();
        c.marked.store(pos, Relaxed);
        ChangeMark {
            origin: c.origin,
            resets: c.resets,
            pos,
        }
    }

    /// Ids of the records changed since `mark` (repeats possible), or `None` when the log no
    /// longer says (the reader must start over).
    pub fn changed_since(&self, mark: ChangeMark) -> Option<&[ProcId]> {
        let c = &self.changes;
        let from = mark.pos.checked_sub(c.base)?;
        (mark.origin == c.origin && mark.resets == c.resets)
            .then(|| c.log.get(from as usize..))
            .flatten()
    }

    /// Keeps the records whose position (in [`Store::iter`] order) `keep` marks.
    pub fn retain_marked(&mut self, keep: &[bool]) {
        self.changes.resets += 1;
        let mut i = 0;
        self.recs.retain(|_| {
            i += 1;
            keep.get(i - 1).copied().unwrap_or(true)
        });
        let m = self.slots.get_or_insert_with(HashMap::default);
        m.clear();
        m.extend(self.recs.iter().enumerate().map(|(s, p)| (p.id, s as u32)));
    }

    /// Position of record `id` in [`Store::iter`] order.
    pub fn position(&self, id: ProcId) -> Option<usize> {
        self.slot(id)
    }
}

impl Index<ProcId> for Store {
    type Output = Process;
    /// Engine-internal ids always name held records (retention drops no record another held
    /// record points to).
    fn index(&self, id: ProcId) -> &Process {
        match self.slot(id) {
            Some(s) => self.recs.get(s).expect("a slot names a held record"),
            None => panic!("record {id} not held"),
        }
    }
}

impl IndexMut<ProcId> for Store {
    fn index_mut(&mut self, id: ProcId) -> &mut Process {
        match self.slot(id) {
            Some(s) => {
                self.changes.note(id);
                self.recs.get_mut(s).expect("a slot names a held record")
            }
            None => panic!("record {id} not held"),
        }
    }
}
