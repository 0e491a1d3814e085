//! Process records by stable id: O(1) lookups, and records can be dropped (retention)
//! without renumbering the ids other records and the viewer hold.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::ops::{Index, IndexMut};

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

    /// Applies `f` to the records `pick` selects (copying only the shared chunks that hold
    /// one).
    pub fn update_where(&mut self, pick: impl Fn(&Process) -> bool, f: impl FnMut(&mut Process)) {
        self.recs.update_where(pick, f);
    }

    /// Keeps the records whose position (in [`Store::iter`] order) `keep` marks.
    pub fn retain_marked(&mut self, keep: &[bool]) {
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
            Some(s) => self.recs.get_mut(s).expect("a slot names a held record"),
            None => panic!("record {id} not held"),
        }
    }
}
