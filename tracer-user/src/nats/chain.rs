//! A segment's proof chain: who may add a message to a segment is whoever knows the next link.
//!
//! The segment's nonce is in the stream, so anyone who can read the stream and publish on the
//! node's subject can copy it, and publish frames under the numbers the agent uses next before
//! the agent does. A reader that meets such a frame first has read it before it can know it is
//! forged. The chain closes that gap (a one-way hash chain, as Lamport's one-time passwords
//! and TESLA's key chains are): when a segment starts, the agent draws a secret seed and hashes
//! it [`LINKS`] times; the last value is the header message's link, and message `i` of the
//! segment reveals the link `i` hashes before it, so each link is the hash of the next. A
//! reader checks each message's link against the last it accepted — the hash of a later link,
//! applied once per index between them, must give it — so messages dropped on the way (a full
//! buffer, a refused payload) do not break the chain. Nobody can compute a link before the agent
//! publishes it (that would take a SHA-256 preimage); once published, the message holding it is
//! in the stream first, and other bytes under the same index are refused.
//!
//! What it does not do: anyone with publish rights can still publish whole segments of their own
//! (other ids, their own chain), which readers read as other segments and report; and a reader
//! trusts the first header message it reads for a segment id, as it does the nonce.

use sha2::{Digest, Sha256};

/// Links in a segment's chain: at most this many messages per segment, header included. The
/// agent starts a new segment before they run out ([`Chain::nearly_spent`]).
pub const LINKS: u64 = 1 << 16;
/// Indexes apart that a reader checks at most: a forged index far ahead costs it at most
/// this many hashes.
pub const MAX_GAP: u64 = LINKS;
/// One link: SHA-256 cut to 128 bits (a preimage still takes 2^128 tries).
pub type Link = [u8; 16];
/// Every this many links, one is kept: any link is at most this many hashes from a kept one.
const KEEP_EVERY: u64 = 256;
/// Left for the last flushes of a segment once the agent decides to end it.
const RESERVE: u64 = 1024;

fn hash(l: &Link) -> Link {
    let d = Sha256::digest(l);
    let mut out = [0u8; 16];
    out.copy_from_slice(&d[..16]);
    out
}

/// The link `times` hashes after `l`.
fn hashed(mut l: Link, times: u64) -> Link {
    for _ in 0..times {
        l = hash(&l);
    }
    l
}

/// The agent's side: the links of one segment, message index by message index.
pub struct Chain {
    /// `kept[k]` is the link of index `k * KEEP_EVERY + KEEP_EVERY - 1` (the last one: the
    /// seed).
    kept: Vec<Link>,
}

impl Chain {
    /// A chain from a seed nobody else knows (`getrandom`).
    pub fn new() -> Chain {
        let mut seed = [0u8; 16];
        let _ = getrandom::fill(&mut seed);
        Chain::from_seed(seed)
    }

    /// The chain whose last link (index [`LINKS`] - 1) is `seed`.
    pub fn from_seed(seed: Link) -> Chain {
        let mut kept = vec![[0u8; 16]; (LINKS / KEEP_EVERY) as usize];
        let mut l = seed;
        for i in (0..LINKS).rev() {
            if i % KEEP_EVERY == KEEP_EVERY - 1 {
                kept[(i / KEEP_EVERY) as usize] = l;
            }
            l = hash(&l);
        }
        Chain { kept }
    }

    /// The link message `index` reveals; `None` past the chain's end.
    pub fn link(&self, index: u64) -> Option<Link> {
        let k = index / KEEP_EVERY;
        let kept = self.kept.get(usize::try_from(k).ok()?)?;
        // The kept link at or after `index` hashes down to it.
        Some(hashed(*kept, k * KEEP_EVERY + KEEP_EVERY - 1 - index))
    }

    /// Whether a segment that has used `next_index` indexes should end now, so its last
    /// flushes still get links.
    pub fn nearly_spent(next_index: u64) -> bool {
        next_index + RESERVE >= LINKS
    }
}

impl Default for Chain {
    fn default() -> Self {
        Chain::new()
    }
}

/// Hex of bytes (a link, a signature), as they go in a message header.
pub fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `N` bytes from their hex; `None` for anything else (hostile header values).
pub fn from_hex<const N: usize>(s: &str) -> Option<[u8; N]> {
    if s.len() != 2 * N || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let mut out = [0u8; N];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// What a reader decides of a message's link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The next link of the chain: the agent's message.
    Next,
    /// An index already read, with the same bytes: a copy (a publish stored twice), skipped.
    Duplicate,
    /// No link, one that does not hash to the chain, or an index already read with other
    /// bytes: not the agent's.
    Forged,
}

/// The reader's side: the last link accepted of one segment, and a digest of each message
/// accepted (at most [`LINKS`]) to tell a copy from a forgery under the same index.
#[derive(Clone, Debug)]
pub struct Verifier {
    index: u64,
    link: Link,
    /// Keyed by a key of this process: a publisher cannot make other bytes digest alike.
    key: std::collections::hash_map::RandomState,
    read: std::collections::HashMap<u64, u64>,
}

impl Verifier {
    /// Starts at the header message's link (index 0) and its bytes.
    pub fn new(header_link: Link, header: &[u8]) -> Verifier {
        let mut v = Verifier {
            index: 0,
            link: header_link,
            key: Default::default(),
            read: Default::default(),
        };
        v.read.insert(0, v.digest(header));
        v
    }

    fn digest(&self, payload: &[u8]) -> u64 {
        use std::hash::BuildHasher;
        self.key.hash_one(payload)
    }

    /// Checks message `index` revealing `link` with `payload`, and moves on when it is the
    /// chain's next.
    pub fn check(&mut self, index: Option<u64>, link: Option<Link>, payload: &[u8]) -> Verdict {
        let Some(index) = index else {
            return Verdict::Forged;
        };
        if index <= self.index {
            let same = self.read.get(&index) == Some(&self.digest(payload));
            return if same {
                Verdict::Duplicate
            } else {
                Verdict::Forged
            };
        }
        let Some(link) = link else {
            return Verdict::Forged;
        };
        let gap = index - self.index;
        if gap > MAX_GAP || hashed(link, gap) != self.link {
            return Verdict::Forged;
        }
        self.index = index;
        self.link = link;
        let d = self.digest(payload);
        self.read.insert(index, d);
        Verdict::Next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_link_hashes_to_the_one_before_and_gaps_are_checked() {
        let c = Chain::from_seed([7; 16]);
        let mut v = Verifier::new(c.link(0).unwrap(), b"head");
        assert_eq!(v.check(Some(1), c.link(1), b"a"), Verdict::Next);
        // Messages 2..=300 lost on the way: 301 still proves itself.
        assert_eq!(v.check(Some(301), c.link(301), b"b"), Verdict::Next);
        // The same index again: a copy, or other bytes under it.
        assert_eq!(v.check(Some(301), c.link(301), b"b"), Verdict::Duplicate);
        assert_eq!(v.check(Some(301), c.link(301), b"x"), Verdict::Forged);
        assert_eq!(v.check(Some(0), c.link(0), b"head"), Verdict::Duplicate);
        assert_eq!(v.check(Some(5), c.link(5), b"never read"), Verdict::Forged);
        // A forger who read link 301 cannot make 302's.
        assert_eq!(v.check(Some(302), c.link(301), b"f"), Verdict::Forged);
        assert_eq!(v.check(Some(302), Some([0; 16]), b"f"), Verdict::Forged);
        assert_eq!(v.check(Some(302), None, b"f"), Verdict::Forged);
        assert_eq!(v.check(None, c.link(302), b"f"), Verdict::Forged);
        // The forgeries moved nothing: the agent's 302 is still the next.
        assert_eq!(v.check(Some(302), c.link(302), b"c"), Verdict::Next);
        assert_eq!(
            v.check(Some(LINKS - 1), c.link(LINKS - 1), b"d"),
            Verdict::Next
        );
    }

    #[test]
    fn every_index_gets_the_link_a_full_walk_gives() {
        let seed = [3; 16];
        let c = Chain::from_seed(seed);
        assert_eq!(c.link(LINKS - 1), Some(seed));
        assert_eq!(c.link(LINKS), None);
        for i in [0, 1, 255, 256, 257, 1000, LINKS - 257, LINKS - 2] {
            assert_eq!(c.link(i), Some(hashed(seed, LINKS - 1 - i)), "index {i}");
        }
    }

    #[test]
    fn a_far_forged_index_costs_a_bounded_check() {
        let c = Chain::from_seed([1; 16]);
        let mut v = Verifier::new(c.link(0).unwrap(), b"");
        assert_eq!(v.check(Some(u64::MAX), c.link(9), b""), Verdict::Forged);
        assert_eq!(v.check(Some(9), c.link(9), b""), Verdict::Next);
    }

    #[test]
    fn hex_round_trips_and_refuses_anything_else() {
        let l = Chain::from_seed([0xab; 16]).link(0).unwrap();
        assert_eq!(from_hex(&to_hex(&l)), Some(l));
        for bad in [
            "",
            "zz",
            &"a".repeat(31),
            &"a".repeat(33),
            &"g".repeat(32),
            "é",
        ] {
            assert_eq!(from_hex::<16>(bad), None, "{bad}");
        }
    }

    #[test]
    fn two_chains_share_no_links() {
        let a = Chain::new();
        let b = Chain::new();
        assert_ne!(a.link(0), b.link(0));
    }
}
