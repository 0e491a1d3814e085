//! Events held in memory in the trace file's own encoding: about 20 bytes an event instead
//! of an [`Event`]'s 136 and its strings. The viewer's replay keeps a whole recording this
//! way (the source to play it, the app to step back through it).

use super::codec::{decode_event, encode_event, Ctx, Cur};
use crate::event::Event;

/// Events per block: the encoding restarts at each block (fresh delta state), so any event
/// is found by decoding at most this many.
const BLOCK: usize = 256;

/// An append-only list of events, packed; read back by range.
#[derive(Clone, Debug, Default)]
pub struct PackedEvents {
    bytes: Vec<u8>,
    /// Byte offset of each block's first event.
    blocks: Vec<usize>,
    len: usize,
    ctx: Ctx,
}

impl PackedEvents {
    /// An empty list.
    pub fn new() -> PackedEvents {
        PackedEvents::default()
    }

    /// Number of events.
    pub fn len(&self) -> usize {
        self.len
    }

    /// No events.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes held (the encoding and the block index).
    pub fn heap_bytes(&self) -> usize {
        self.bytes.capacity() + self.blocks.capacity() * std::mem::size_of::<usize>()
    }

    /// Appends `ev`.
    pub fn push(&mut self, ev: &Event) {
        if self.len.is_multiple_of(BLOCK) {
            self.blocks.push(self.bytes.len());
            self.ctx.reset();
        }
        encode_event(&mut self.bytes, &mut self.ctx, ev);
        self.len += 1;
    }

    /// Events `from..to` (clamped to the list).
    pub fn range(&self, from: usize, to: usize) -> Vec<Event> {
        let n = to.min(self.len).saturating_sub(from);
        self.iter_from(from).take(n).collect()
    }

    /// Every event, decoded one at a time.
    pub fn iter(&self) -> Iter<'_> {
        self.iter_from(0)
    }

    /// The events from number `from` on, decoded one at a time.
    pub fn iter_from(&self, from: usize) -> Iter<'_> {
        let block = from / BLOCK;
        let start = self.blocks.get(block).copied().unwrap_or(self.bytes.len());
        let mut it = Iter {
            list: self,
            cur: Cur::new(&self.bytes[start..]),
            ctx: Ctx::default(),
            next: block * BLOCK,
        };
        while it.next < from.min(self.len) && it.next().is_some() {}
        it
    }

    /// Index of the first event whose seq is above `seq` (the length if none): a binary
    /// search over the blocks' first events, then one block decoded. The events are in seq
    /// order, as every recording holds them; out of order, the answer is still an index.
    pub fn first_after(&self, seq: u64) -> usize {
        let first_seq = |b: usize| self.iter_from(b * BLOCK).next().map_or(u64::MAX, |e| e.seq);
        // The last block whose first event is at or before `seq`.
        let (mut lo, mut hi) = (0, self.blocks.len());
        while lo + 1 < hi {
            let mid = lo + (hi - lo) / 2;
            if first_seq(mid) <= seq {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let from = lo * BLOCK;
        self.iter_from(from)
            .position(|e| e.seq > seq)
            .map_or(self.len, |k| from + k)
    }

    /// Keeps the first `n` events.
    pub fn truncate(&mut self, n: usize) {
        if n >= self.len {
            return;
        }
        let it = self.iter_from(n);
        let (end, ctx) = (self.bytes.len() - it.cur.buf.len(), it.ctx);
        self.bytes.truncate(end);
        self.blocks.truncate(n.div_ceil(BLOCK));
        self.ctx = ctx;
        self.len = n;
    }
}

impl Extend<Event> for PackedEvents {
    fn extend<I: IntoIterator<Item = Event>>(&mut self, iter: I) {
        iter.into_iter().for_each(|ev| self.push(&ev));
    }
}

impl FromIterator<Event> for PackedEvents {
    fn from_iter<I: IntoIterator<Item = Event>>(iter: I) -> Self {
        let mut p = PackedEvents::new();
        p.extend(iter);
        p
    }
}

/// Decodes a [`PackedEvents`] in order.
pub struct Iter<'a> {
    list: &'a PackedEvents,
    cur: Cur<'a>,
    ctx: Ctx,
    next: usize,
}

impl Iterator for Iter<'_> {
    type Item = Event;

    fn next(&mut self) -> Option<Event> {
        if self.next >= self.list.len {
            return None;
        }
        if self.next.is_multiple_of(BLOCK) {
            self.ctx.reset();
        }
        // What `push` encoded decodes; a failure would be a codec bug, and ends the list
        // there rather than inventing events.
        let ev = decode_event(&mut self.cur, &mut self.ctx).ok()?;
        self.next += 1;
        Some(ev)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_and_truncation_read_back_what_was_pushed() {
        let evs = crate::synth::fork_tree(600);
        let mut p = PackedEvents::new();
        evs.iter().for_each(|ev| p.push(ev));
        assert_eq!(p.len(), evs.len());
        let unpacked = evs.len() * std::mem::size_of::<Event>();
        assert!(p.heap_bytes() * 2 < unpacked, "{} bytes", p.heap_bytes());
        for (a, b) in [
            (0, evs.len()),
            (255, 257),
            (256, 256),
            (300, 1000),
            (1, 2),
            (5, 9999),
        ] {
            let b = b.min(evs.len());
            assert_eq!(p.range(a, b), evs[a.min(b)..b], "{a}..{b}");
        }
        for n in [evs.len() - 1, 513, 512, 511, 256, 1, 0] {
            p.truncate(n);
            assert_eq!(p.len(), n);
            assert_eq!(p.range(0, n), evs[..n], "after truncate({n})");
            // And appending again continues the encoding from there.
            let m = (n + 3).min(evs.len());
            evs[n..m].iter().for_each(|ev| p.push(ev));
            assert_eq!(p.range(0, m), evs[..m], "appended after truncate({n})");
            p.truncate(n);
        }
    }
}
