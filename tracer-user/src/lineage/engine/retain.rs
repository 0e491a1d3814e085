//! Bounded live state: exited processes beyond a window (count and age) are dropped and
//! counted, except what the tree and the stories still need.
//!
//! Kept: live processes; processes with a runtime role (the stories are told from them);
//! exited processes within the window; and, closed over, the parent, creator and birth
//! parent of everything kept, so no held record points to a dropped one (only `children`
//! lists are trimmed). Pruning runs in batches whose cost is linear in the records held, and
//! a batch waits for as many new exits as an eighth of that: amortized O(1) per event.

use crate::lineage::process::{ProcId, Process};
use crate::lineage::tree::Tree;

/// How much of the past a live engine keeps (see `Engine::with_retention`).
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

/// The retention's own state: its policy and when its next batch runs.
#[derive(Clone, Debug, Default)]
pub(super) struct RetentionState {
    policy: Option<Retention>,
    /// Exited records held now.
    exited_held: usize,
    /// Records dropped so far.
    pruned: u64,
    /// A batch runs when `exited_held` passes this...
    next_count: usize,
    /// ...or event time passes this.
    next_ts: u64,
}

impl RetentionState {
    /// A state that drops exited processes beyond `r`.
    pub fn new(r: Retention) -> RetentionState {
        RetentionState {
            policy: Some(r),
            next_count: r.max_exited + MIN_BATCH,
            ..RetentionState::default()
        }
    }

    /// The policy, if any.
    pub fn policy(&self) -> Option<Retention> {
        self.policy
    }

    /// Records dropped so far.
    pub fn pruned(&self) -> u64 {
        self.pruned
    }

    /// One more exited record is held.
    pub fn exited(&mut self) {
        self.exited_held += 1;
    }

    /// The policy when a batch is due at `now_ts` (enough exits piled up, or the age window
    /// moved on); the first event time sets the age window's first step.
    pub fn due(&mut self, now_ts: u64) -> Option<Retention> {
        let r = self.policy?;
        let by_count = self.exited_held > self.next_count;
        let by_age = self.next_ts != 0 && now_ts >= self.next_ts && self.exited_held > 0;
        if self.next_ts == 0 && now_ts > 0 {
            self.next_ts = now_ts.saturating_add(age_step(r));
        }
        (by_count || by_age).then_some(r)
    }

    /// A batch ran at `now_ts`: it dropped `b.dropped`, and `held` records (`b.exited` of
    /// them exited) are left. The next batch waits for an eighth of what is held: its
    /// linear cost is spread over as many exits, and the records held above the window stay
    /// a small part of it.
    pub fn ran(&mut self, r: Retention, b: Batch, held: usize, now_ts: u64) {
        self.pruned += b.dropped as u64;
        self.exited_held = b.exited;
        let slack = MIN_BATCH.max(held / 8);
        self.next_count = r.max_exited.max(b.exited) + slack;
        self.next_ts = now_ts.saturating_add(age_step(r));
    }
}

/// What one batch did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Batch {
    /// Records dropped.
    pub dropped: usize,
    /// Exited records left.
    pub exited: usize,
}

/// Drops from `tree` what `r` lets go at `now_ts`.
pub(super) fn prune(tree: &mut Tree, r: Retention, now_ts: u64) -> Batch {
    let keep = marks(tree, r, now_ts);
    let dropped: Vec<ProcId> = tree
        .records()
        .zip(&keep)
        .filter(|(_, k)| !**k)
        .map(|(p, _)| p.id)
        .collect();
    // Nothing to drop: the store, its change log and the stories following it stay as
    // they are (dropping resets the log, which makes every follower build again).
    if !dropped.is_empty() {
        tree.drop_records(&dropped, &keep);
    }
    Batch {
        dropped: dropped.len(),
        exited: tree.records().filter(|p| p.exited).count(),
    }
}

/// Which records to keep, by position in the tree's records.
fn marks(tree: &Tree, r: Retention, now_ts: u64) -> Vec<bool> {
    let mut exits: Vec<u64> = tree.records().filter_map(|p| p.exit_seq).collect();
    let cutoff = match exits.len().checked_sub(r.max_exited) {
        Some(n) if n > 0 && r.max_exited > 0 => *exits.select_nth_unstable(n).1,
        Some(_) if r.max_exited == 0 => u64::MAX,
        _ => 0,
    };
    let oldest_ts = now_ts.saturating_sub(r.max_age_ns);
    let in_window =
        |seq: u64, ts: Option<u64>| seq >= cutoff && ts.is_none_or(|t| t == 0 || t >= oldest_ts);
    let mut keep = vec![false; tree.len()];
    let mut stack: Vec<usize> = Vec::new();
    for (i, p) in tree.records().enumerate() {
        let window = p.exit_seq.is_some_and(|s| in_window(s, p.exit_ts_ns));
        if !p.exited || p.role.is_some() || window {
            keep[i] = true;
            stack.push(i);
        }
    }
    let recs: Vec<&Process> = tree.records().collect();
    while let Some(i) = stack.pop() {
        let p = recs[i];
        for id in [p.parent, p.creator, p.birth_parent].into_iter().flatten() {
            if let Some(j) = tree.position(id) {
                if !keep[j] {
                    keep[j] = true;
                    stack.push(j);
                }
            }
        }
    }
    keep
}

/// How often, in event time, the age window is checked.
fn age_step(r: Retention) -> u64 {
    (r.max_age_ns / 8).max(1_000_000_000)
}
