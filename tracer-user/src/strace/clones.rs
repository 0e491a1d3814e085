//! The clone-family calls the importer still has open, in call order, with the indexes its
//! per-line lookups read. Each lookup used to scan every open call, which made a log of many
//! calls in flight at once (`<unfinished ...>`, or `<... clone resumed>` of calls made before
//! tracing) quadratic; here each is a map lookup, and a record changes only through
//! [`Clones::update`], which keeps the indexes in step with it.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::CloneRec;

/// Ids under one key of an index: most keys hold one, which needs no allocation.
#[derive(Debug)]
enum IdSet {
    One(u64),
    Many(BTreeSet<u64>),
}

impl IdSet {
    fn first(&self) -> Option<u64> {
        match self {
            IdSet::One(id) => Some(*id),
            IdSet::Many(set) => set.first().copied(),
        }
    }
}

/// Ids by key, oldest first under each.
#[derive(Debug)]
struct Index<K>(HashMap<K, IdSet>);

impl<K> Default for Index<K> {
    fn default() -> Self {
        Index(HashMap::new())
    }
}

impl<K: std::hash::Hash + Eq> Index<K> {
    fn insert(&mut self, k: K, id: u64) {
        match self.0.get_mut(&k) {
            None => {
                self.0.insert(k, IdSet::One(id));
            }
            Some(IdSet::Many(set)) => {
                set.insert(id);
            }
            Some(one) => {
                if let IdSet::One(old) = *one {
                    *one = IdSet::Many(BTreeSet::from([old, id]));
                }
            }
        }
    }

    fn remove(&mut self, k: K, id: u64) {
        let gone = match self.0.get_mut(&k) {
            Some(IdSet::One(old)) => *old == id,
            Some(IdSet::Many(set)) => {
                set.remove(&id);
                set.is_empty()
            }
            None => false,
        };
        if gone {
            self.0.remove(&k);
        }
    }

    fn first(&self, k: &K) -> Option<u64> {
        self.0.get(k)?.first()
    }

    fn set(&mut self, k: K, id: u64, add: bool) {
        match add {
            true => self.insert(k, id),
            false => self.remove(k, id),
        }
    }
}

/// Ids of one kind of record, oldest first, and how many of them each caller process made.
#[derive(Debug, Default)]
struct Kind {
    ids: BTreeSet<u64>,
    per_tgid: HashMap<u32, usize>,
    by_caller: Index<u32>,
}

impl Kind {
    fn add(&mut self, c: &CloneRec) {
        self.ids.insert(c.id);
        *self.per_tgid.entry(c.tgid).or_default() += 1;
        self.by_caller.insert(c.caller, c.id);
    }

    fn remove(&mut self, c: &CloneRec) {
        self.ids.remove(&c.id);
        if let Some(n) = self.per_tgid.get_mut(&c.tgid) {
            *n -= 1;
            if *n == 0 {
                self.per_tgid.remove(&c.tgid);
            }
        }
        self.by_caller.remove(c.caller, c.id);
    }

    /// The oldest, when one process made them all.
    fn oldest_of_one_process(&self) -> Option<u64> {
        if self.per_tgid.len() > 1 {
            return None;
        }
        self.ids.first().copied()
    }

    fn oldest_of_caller(&self, caller: u32) -> Option<u64> {
        self.by_caller.first(&caller)
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
    by_ret: Index<i64>,
    /// Returned, the caller's `SyscallExit` not out yet, by caller.
    open: Index<u32>,
    /// The caller's `SyscallExit` is out (at most [`super::MAX_UNSEEN`] of them).
    closed: BTreeSet<u64>,
}

impl Clones {
    /// Enters (`add`) or takes out record `c` of every index that holds it: which ones do is
    /// said here once, for both.
    fn index(&mut self, c: &CloneRec, add: bool) {
        if c.child.is_none() {
            let kind = match c.ret {
                None => &mut self.in_call,
                Some(_) => &mut self.unnamed,
            };
            match add {
                true => kind.add(c),
                false => kind.remove(c),
            }
            if let Some(r) = c.ret {
                self.by_ret.set(r, c.id, add);
            }
        }
        if c.ret.is_some() && !c.closed {
            self.open.set(c.caller, c.id, add);
        }
        if c.closed {
            match add {
                true => self.closed.insert(c.id),
                false => self.closed.remove(&c.id),
            };
        }
    }

    /// Adds a call (its id newer than every held one).
    pub fn insert(&mut self, c: CloneRec) {
        self.index(&c, true);
        self.recs.insert(c.id, c);
    }

    pub fn get(&self, id: u64) -> Option<&CloneRec> {
        self.recs.get(&id)
    }

    pub fn remove(&mut self, id: u64) -> Option<CloneRec> {
        let c = self.recs.remove(&id)?;
        self.index(&c, false);
        Some(c)
    }

    /// Changes record `id`, its indexes with it.
    pub fn update(&mut self, id: u64, change: impl FnOnce(&mut CloneRec)) {
        let Some(mut c) = self.recs.remove(&id) else {
            return;
        };
        self.index(&c, false);
        change(&mut c);
        self.index(&c, true);
        self.recs.insert(id, c);
    }

    /// Every held call, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &CloneRec> + '_ {
        self.recs.values()
    }

    /// Every held id, oldest first.
    pub fn ids(&self) -> Vec<u64> {
        self.recs.keys().copied().collect()
    }

    /// The oldest returned call with an unnamed child that returned `ret`.
    pub fn returning(&self, ret: i64) -> Option<u64> {
        self.by_ret.first(&ret)
    }

    /// The oldest call of `caller` still inside the call, child unnamed.
    pub fn in_call_of(&self, caller: u32) -> Option<u64> {
        self.in_call.oldest_of_caller(caller)
    }

    /// The oldest returned call of `caller` whose `SyscallExit` is not out.
    pub fn open_of(&self, caller: u32) -> Option<u64> {
        self.open.first(&caller)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Syscall;

    fn rec(id: u64, caller: u32, ret: Option<i64>) -> CloneRec {
        CloneRec {
            id,
            caller,
            tgid: caller,
            syscall: Syscall::Clone,
            flags: None,
            set_tid: false,
            ret,
            child: None,
            closed: false,
            ts: 0,
            candidate: None,
            fork_at: None,
            enter_at: None,
        }
    }

    #[test]
    fn a_key_holding_several_calls_gives_the_oldest_left() {
        // One caller resuming three calls made before tracing, two returning the same pid.
        let mut c = Clones::default();
        c.insert(rec(1, 7, Some(50)));
        c.insert(rec(2, 7, Some(50)));
        c.insert(rec(3, 7, Some(60)));
        assert_eq!((c.open_of(7), c.returning(50)), (Some(1), Some(1)));
        c.update(1, |r| r.closed = true);
        assert_eq!((c.open_of(7), c.returning(50)), (Some(2), Some(1)));
        c.update(1, |r| r.child = Some(99));
        assert_eq!((c.open_of(7), c.returning(50)), (Some(2), Some(2)));
        c.remove(2);
        assert_eq!((c.open_of(7), c.returning(50)), (Some(3), None));
        assert_eq!(c.closed(), vec![1]);
        c.remove(3);
        c.remove(1);
        assert_eq!(
            (c.open_of(7), c.returning(60), c.waiting()),
            (None, None, None)
        );
    }
}
