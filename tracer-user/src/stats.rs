//! Stream statistics: events per kind and sequence gaps (lost events).

use crate::event::Event;
use std::collections::BTreeMap;

/// Counts what a stream delivered. Sequence numbers start at 1 and a lost event still takes
/// one, so `max_seq - events` is the number of events that never arrived.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StreamStats {
    /// Events observed.
    pub events: u64,
    /// Events per kind name (`fork`, `exec`...).
    pub per_kind: BTreeMap<&'static str, u64>,
    /// Highest seq seen.
    pub max_seq: u64,
}

impl StreamStats {
    /// Counts one event.
    pub fn observe(&mut self, ev: &Event) {
        *self.per_kind.entry(ev.kind.name()).or_insert(0) += 1;
        // Metadata repeats the seq of the event it was read for: no seq of its own.
        if ev.kind.is_metadata() {
            return;
        }
        self.events += 1;
        self.max_seq = self.max_seq.max(ev.seq);
    }

    /// Events missing from the sequence so far.
    pub fn gaps(&self) -> u64 {
        self.max_seq.saturating_sub(self.events)
    }

    /// `12 events (exec 2, fork 3, ...), 0 dropped, 0 sequence gaps`.
    pub fn summary(&self, dropped: u64) -> String {
        let kinds: Vec<String> = self
            .per_kind
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        format!(
            "{} events ({}), {} dropped, {} sequence gaps",
            self.events,
            if kinds.is_empty() {
                "none".to_string()
            } else {
                kinds.join(", ")
            },
            dropped,
            self.gaps()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_count_missing_sequence_numbers() {
        let mut s = StreamStats::default();
        for seq in [1, 2, 5, 4, 9] {
            s.observe(&Event {
                seq,
                ..crate::synth::exit(1, 0)
            });
        }
        assert_eq!(s.gaps(), 4); // 3, 6, 7, 8
        assert_eq!(
            s.summary(4),
            "5 events (task_exit 5), 4 dropped, 4 sequence gaps"
        );
    }
}
