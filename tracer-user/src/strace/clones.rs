//! The clone-family calls the importer still has open, in call order, with the indexes its
//! per-line lookups read. Each lookup used to scan every open call, which made a log of many
//! calls in flight at once (`<unfinished ...>`, or `<... clone resumed>` of calls made before
//! tracing) quadratic; here each is a map lookup, and a record changes only through
//! [`Clones::update`], which keeps the indexes in step with it.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::CloneRec;

/// Ids of one kind of record, oldest first, and how many of them each caller process made.
#[derive(Debug, Default)]
struct Kind {
    ids: BTreeSet<u64>,
    per_tgid: HashMap<u32, usize>,
    by_caller: HashMap<u32, BTreeSet<u64>>,
}

impl Kind {
    fn add(&mut self, c: &CloneRec) {
        self.ids.insert(c.id);
        *self.per_tgid.entry(c.tgid).or_default() += 1;
        self.by_caller.entry(c.caller).or_default().insert(c.id);
    }

    fn remove(&mut self, c: &CloneRec) {
        self.ids.remove(&c.id);
        if let Some(n) = self.per_tgid.get_mut(&c.tgid) {
            *n -= 1;
            if *n == 0 {
                self.per_tgid.remove(&c.tgid);
            }
        }
        remove_from(&mut self.by_caller, c.caller, c.id);
    }

    /// The oldest, when one process made them all.
    fn oldest_of_one_process(&self) -> Option<u64> {
        if self.per_tgid.len() > 1 {
            return None;
        }
        self.ids.first().copied()
    }

    fn oldest_of_caller(&self, caller: u32) -> Option<u64> {
        self.by_caller.get(&caller)?.first().copied()
    }
}

fn remove_from<K: std::hash::Hash + Eq>(m: &mut HashMap<K, BTreeSet<u64>>, k: K, id: u64) {
    if let Some(set) = m.get_mut(&k) {
        set.remove(&id);
        if set.is_empty() {
            m.remove(&k);
        }
    }
}

/// Open clone-family calls by id (ids grow in call order).
#[derive(Debug, Default)]
pub(super) struct Clones {
    recs: BTreeMap<u64, CloneRec>,
    /// Still inside the call, child unnamed.
    in_call: Kind,
    /// Returned, child unnamed.
    unnamed: Kind,
    /// Returned, child unnamed, by return value.
    by_ret: HashMap<i64, BTreeSet<u64>>,
    /// Returned, the caller's `SyscallExit` not out yet, by caller.
    open: HashMap<u32, BTreeSet<u64>>,
    /// The caller's `SyscallExit` is out (at most [`super::MAX_UNSEEN`] of them).
    closed: BTreeSet<u64>,
}

impl Clones {
    fn index(&mut self, c: &CloneRec) {
        if c.child.is_none() {
            match c.ret {
                None => self.in_call.add(c),
                Some(r) => {
                    self.unnamed.add(c);
                    self.by_ret.entry(r).or_default().insert(c.id);
                }
            }
        }
        if c.ret.is_some() && !c.closed {
            self.open.entry(c.caller).or_default().insert(c.id);
        }
        if c.closed {
            self.closed.insert(c.id);
        }
    }

    fn unindex(&mut self, c: &CloneRec) {
        if c.child.is_none() {
            match c.ret {
                None => self.in_call.remove(c),
                Some(r) => {
                    self.unnamed.remove(c);
                    remove_from(&mut self.by_ret, r, c.id);
                }
            }
        }
        if c.ret.is_some() && !c.closed {
            remove_from(&mut self.open, c.caller, c.id);
        }
        if c.closed {
            self.closed.remove(&c.id);
        }
    }

    /// Adds a call (its id newer than every held one).
    pub fn insert(&mut self, c: CloneRec) {
        self.index(&c);
        self.recs.insert(c.id, c);
    }

    pub fn get(&self, id: u64) -> Option<&CloneRec> {
        self.recs.get(&id)
    }

    pub fn remove(&mut self, id: u64) -> Option<CloneRec> {
        let c = self.recs.remove(&id)?;
        self.unindex(&c);
        Some(c)
    }

    /// Changes record `id`, its indexes with it.
    pub fn update(&mut self, id: u64, change: impl FnOnce(&mut CloneRec)) {
        let Some(mut c) = self.recs.remove(&id) else {
            return;
        };
        self.unindex(&c);
        change(&mut c);
        self.index(&c);
        self.recs.insert(id, c);
    }

    /// Every held id, oldest first.
    pub fn ids(&self) -> Vec<u64> {
        self.recs.keys().copied().collect()
    }

    /// The oldest returned call with an unnamed child that returned `ret`.
    pub fn returning(&self, ret: i64) -> Option<u64> {
        self.by_ret.get(&ret)?.first().copied()
    }

    /// The oldest call of `caller` still inside the call, child unnamed.
    pub fn in_call_of(&self, caller: u32) -> Option<u64> {
        self.in_call.oldest_of_caller(caller)
    }

    /// The oldest returned call of `caller` whose `SyscallExit` is not out.
    pub fn open_of(&self, caller: u32) -> Option<u64> {
        self.open.get(&caller)?.first().copied()
    }

    /// The oldest call still inside the call or, when there is none, the oldest returned one
    /// with an unnamed child — each only when one process made all of that kind.
    pub fn waiting(&self) -> Option<u64> {
        if !self.in_call.ids.is_empty() {
            return self.in_call.oldest_of_one_process();
        }
        self.unnamed.oldest_of_one_process()
    }

    pub fn closed_count(&self) -> usize {
        self.closed.len()
    }

    /// Ids of the calls whose `SyscallExit` is out, oldest first.
    pub fn closed(&self) -> Vec<u64> {
        self.closed.iter().copied().collect()
    }

    /// Rewrites the caller and its process `from` to `to` (the initial process's pid became
    /// known): once per log.
    pub fn rename(&mut self, from: u32, to: u32) {
        for id in self.ids() {
            self.update(id, |c| {
                if c.caller == from {
                    c.caller = to;
                }
                if c.tgid == from {
                    c.tgid = to;
                }
            });
        }
    }
}
