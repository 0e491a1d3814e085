//! Bounded live state: exited processes beyond a window (count and age) are dropped and
//! counted, except what the tree and the stories still need.
//!
//! Kept: live processes; processes with a runtime role (the stories are told from them);
//! exited processes within the window; and, closed over, the parent, creator and birth
//! parent of everything kept, so no held record points to a dropped one (only `children`
//! lists are trimmed). Pruning runs in batches whose cost is linear in the records held, and
//! a batch waits for as many new exits as an eighth of that: amortized O(1) per event.

use std::sync::Arc;

use super::Engine;
use crate::lineage::process::ProcId;

/// How much of the past a live engine keeps (see [`Engine::with_retention`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retention {
    /// Exited processes kept, newest exits first.
    pub max_exited: usize,
    /// Exited processes are kept at most this long after their exit (event time, ns).
    pub max_age_ns: u64,
}

impl Default for Retention {
    /// 10,000 exited processes, 10 minutes.
    fn default() -> Retention {
        Retention {
            max_exited: 10_000,
            max_age_ns: 600 * 1_000_000_000,
        }
    }
}

/// Fewest new exits between two batches.
const MIN_BATCH: usize = 1024;

#[derive(Clone, Debug, Default)]
pub(in crate::lineage) struct RetentionState {
    policy: Option<Retention>,
    /// Exited records held now.
    pub exited_held: usize,
    /// Records dropped so far.
    pruned: u64,
    /// A batch runs when `exited_held` passes this...
    next_count: usize,
    /// ...or event time passes this.
    next_ts: u64,
}

impl Engine {
    /// An empty engine that drops exited processes beyond `r` (live views). Without it,
    /// every record is kept (replay, files: bounded by the file).
    pub fn with_retention(r: Retention) -> Engine {
        let mut e = Engine::new();
        e.retention.policy = Some(r);
        e.retention.next_count = r.max_exited + MIN_BATCH;
        e
    }

    /// The retention policy, if any.
    pub fn retention(&self) -> Option<Retention> {
        self.retention.policy
    }

    /// Exited records dropped by the retention so far.
    pub fn pruned(&self) -> u64 {
        self.retention.pruned
    }

    /// Runs a batch when enough exits piled up or the age window moved on.
    pub(in crate::lineage) fn maybe_prune(&mut self, now_ts: u64) {
        let Some(r) = self.retention.policy else {
            return;
        };
        let st = &self.retention;
        let by_count = st.exited_held > st.next_count;
        let by_age = st.next_ts != 0 && now_ts >= st.next_ts && st.exited_held > 0;
        if st.next_ts == 0 && now_ts > 0 {
            self.retention.next_ts = now_ts.saturating_add(age_step(r));
        }
        if by_count || by_age {
            self.prune(r, now_ts);
        }
    }

    /// Drops what the policy lets go now; returns how many records.
    pub fn prune_now(&mut self, now_ts: u64) -> usize {
        match self.retention.policy {
            Some(r) => self.prune(r, now_ts),
            None => 0,
        }
    }

    fn prune(&mut self, r: Retention, now_ts: u64) -> usize {
        let keep = self.marks(r, now_ts);
        let dropped: Vec<ProcId> = self
            .procs
            .iter()
            .zip(&keep)
            .filter(|(_, k)| !**k)
            .map(|(p, _)| p.id)
            .collect();
        // Nothing to drop: the store, its change log and the stories following it stay as
        // they are (dropping resets the log, which makes every follower build again).
        if !dropped.is_empty() {
            self.drop_records(&dropped, &keep);
        }
        let exited = self.procs.iter().filter(|p| p.exited).count();
        let st = &mut self.retention;
        st.pruned += dropped.len() as u64;
        st.exited_held = exited;
        // An eighth of what is held: the batch's linear cost is spread over as many exits,
        // and the records held above the window stay a small part of it.
        let slack = MIN_BATCH.max(self.procs.len() / 8);
        st.next_count = r.max_exited.max(exited) + slack;
        st.next_ts = now_ts.saturating_add(age_step(r));
        dropped.len()
    }

    /// Drops the records `keep` does not mark (`dropped`, their ids) and every index entry
    /// and child link that names one.
    fn drop_records(&mut self, dropped: &[ProcId], keep: &[bool]) {
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

    /// Which records to keep, by position in the store.
    fn marks(&self, r: Retention, now_ts: u64) -> Vec<bool> {
        let mut exits: Vec<u64> = self.procs.iter().filter_map(|p| p.exit_seq).collect();
        let cutoff = match exits.len().checked_sub(r.max_exited) {
            Some(n) if n > 0 && r.max_exited > 0 => *exits.select_nth_unstable(n).1,
            Some(_) if r.max_exited == 0 => u64::MAX,
            _ => 0,
        };
        let oldest_ts = now_ts.saturating_sub(r.max_age_ns);
        let in_window = |seq: u64, ts: Option<u64>| {
            seq >= cutoff && ts.is_none_or(|t| t == 0 || t >= oldest_ts)
        };
        let mut keep = vec![false; self.procs.len()];
        let mut stack: Vec<usize> = Vec::new();
        for (i, p) in self.procs.iter().enumerate() {
            let window = p.exit_seq.is_some_and(|s| in_window(s, p.exit_ts_ns));
            if !p.exited || p.role.is_some() || window {
                keep[i] = true;
                stack.push(i);
            }
        }
        let recs: Vec<&crate::lineage::process::Process> = self.procs.iter().collect();
        while let Some(i) = stack.pop() {
            let p = recs[i];
            for id in [p.parent, p.creator, p.birth_parent].into_iter().flatten() {
                if let Some(j) = self.procs.position(id) {
                    if !keep[j] {
                        keep[j] = true;
                        stack.push(j);
                    }
                }
            }
        }
        keep
    }

    /// Removes the indexes' entries that name record `id`.
    fn forget(&mut self, id: ProcId) {
        let p = &self.procs[id];
        if self.by_pid.get(&p.pid) == Some(&id) {
            self.by_pid.remove(&p.pid);
        }
        let tids: Vec<u32> = p.threads.iter().map(|t| t.tid).collect();
        for tid in tids {
            self.forget_thread(tid, id);
        }
    }
}

/// How often, in event time, the age window is checked.
fn age_step(r: Retention) -> u64 {
    (r.max_age_ns / 8).max(1_000_000_000)
}
