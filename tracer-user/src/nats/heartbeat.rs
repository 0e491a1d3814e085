//! Heartbeats: the agent's word that it is there, every interval (docs/nats.md).
//!
//! A heartbeat is a message of the node's current segment ([`Part::Heartbeat`]): it carries
//! the segment's id and nonce and the next link of its proof chain ([`super::chain`]), as a
//! frames message does, and a line of text in [`HEARTBEAT_HEADER`] with an empty payload.
//! So a reader checks it as any message of the segment — one published by someone who is
//! not the agent is dropped unread, and a heartbeat read moves the chain as the agent's own
//! messages do (a forger cannot take its index after) — and it never holds trace bytes: a
//! reader skips it (a reader before heartbeats sees an empty message of the segment, and
//! skips it too). Nothing in it ends a segment, starts one, or counts as another's.
//!
//! What it says: the agent's interval, its counters (events, kernel drops, events buffered
//! and dropped for a full buffer) and its wall time; after an outage, when publishing failed
//! and when it went through again, with the events buffered then and those dropped meanwhile
//! ([`Back`]).

use std::time::Duration;

use bytes::Bytes;

use super::{Feed, Outbox, Outgoing, Part, Segment};

/// Message header holding a heartbeat's text (its payload is empty).
pub const HEARTBEAT_HEADER: &str = "Tracer-Heartbeat";
/// How often an agent says it is there, unless told otherwise (`--heartbeat`).
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(10);
/// Longest heartbeat text read: a header longer than this is someone else's, read as empty.
pub const MAX_TEXT: usize = 512;
/// Intervals without a word after which a node is silent.
pub const SILENT_AFTER: u32 = 3;

/// After an outage: what the agent kept and lost while it could not publish.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Back {
    /// When publishing started failing (the agent's wall clock, ns since the epoch).
    pub down_ns: u64,
    /// When a message went through again.
    pub back_ns: u64,
    /// Events waiting in the agent's buffer when it went through again: what it published
    /// after.
    pub buffered: u64,
    /// Events dropped for a full buffer during the outage.
    pub dropped: u64,
}

/// One heartbeat's word.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Heartbeat {
    /// The agent's interval between heartbeats, in ms.
    pub interval_ms: u64,
    /// The agent's wall clock when it made the heartbeat (ns since the epoch).
    pub wall_ns: u64,
    /// Events the agent read from its source, all segments.
    pub events: u64,
    /// Events the kernel side dropped.
    pub kernel_drops: u64,
    /// Events waiting in its buffer for NATS.
    pub buffered: u64,
    /// Events dropped for a full buffer, in all.
    pub dropped: u64,
    /// The outage it just came back from, on the first heartbeat after it.
    pub back: Option<Back>,
}

impl Heartbeat {
    /// The header's text: `key=value` words, numbers only.
    pub fn text(&self) -> String {
        let mut t = format!(
            "v=1 interval_ms={} wall_ns={} events={} kernel_drops={} buffered={} dropped={}",
            self.interval_ms,
            self.wall_ns,
            self.events,
            self.kernel_drops,
            self.buffered,
            self.dropped
        );
        if let Some(b) = &self.back {
            t.push_str(&format!(
                " down_ns={} back_ns={} back_buffered={} back_dropped={}",
                b.down_ns, b.back_ns, b.buffered, b.dropped
            ));
        }
        t
    }

    /// Reads [`Heartbeat::text`]; `None` for anything else (a heartbeat is hostile input:
    /// every word bounded, numbers only, a missing one refused). Unknown words are left for
    /// later versions.
    pub fn parse(text: &[u8]) -> Option<Heartbeat> {
        if text.len() > MAX_TEXT {
            return None;
        }
        let text = std::str::from_utf8(text).ok()?;
        let mut words = std::collections::HashMap::new();
        for w in text.split(' ') {
            let (k, v) = w.split_once('=')?;
            words.insert(k, v.parse::<u64>().ok()?);
        }
        let get = |k: &str| words.get(k).copied();
        if get("v")? != 1 {
            return None;
        }
        let back = match (get("down_ns"), get("back_ns")) {
            (Some(down_ns), Some(back_ns)) => Some(Back {
                down_ns,
                back_ns,
                buffered: get("back_buffered")?,
                dropped: get("back_dropped")?,
            }),
            _ => None,
        };
        Some(Heartbeat {
            interval_ms: get("interval_ms")?,
            wall_ns: get("wall_ns")?,
            events: get("events")?,
            kernel_drops: get("kernel_drops")?,
            buffered: get("buffered")?,
            dropped: get("dropped")?,
            back,
        })
    }
}

/// The wall clock now, ns since the epoch (0 before it).
pub fn wall_now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// What a reader is told of each heartbeat the chain proved: the segment's id and the word.
pub type HeartbeatFn = Box<dyn FnMut(&str, Heartbeat) + Send>;

/// A received heartbeat's text as its payload: bounded (a longer header reads as empty, and
/// then as no heartbeat).
pub(crate) fn received_text(header: Option<String>) -> Bytes {
    match header {
        Some(t) if t.len() <= MAX_TEXT => Bytes::from(t.into_bytes()),
        _ => Bytes::new(),
    }
}

impl Feed {
    /// Calls `f` for each heartbeat read, once its segment's chain proved it (on the thread
    /// that reads the segments). Heartbeats are never trace bytes: without this they are
    /// only skipped.
    pub fn on_heartbeat(&mut self, f: HeartbeatFn) {
        self.heartbeats = Some(f);
    }

    /// A heartbeat of segment `id`, proven: told to the handler when its text reads.
    pub(super) fn heard(&mut self, id: &str, text: &[u8]) {
        if let (Some(f), Some(h)) = (self.heartbeats.as_mut(), Heartbeat::parse(text)) {
            f(id, h);
        }
    }
}

impl Outbox {
    /// A heartbeat waits to be published (the agent queues no other then).
    pub fn holds_heartbeat(&self) -> bool {
        self.queue.iter().any(|m| m.part == Part::Heartbeat)
    }
}

impl Segment {
    /// A heartbeat of this segment: the next index and link of its chain, `h`'s text.
    pub fn heartbeat(&mut self, h: &Heartbeat) -> Vec<Outgoing> {
        self.messages(Part::Heartbeat, h.text().into_bytes(), 0)
    }
}

#[cfg(test)]
mod tests;
