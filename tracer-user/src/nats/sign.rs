//! Segments a forger cannot replace: each agent signs its segments with a key of its node.
//!
//! The proof chain ([`super::chain`]) binds every message of a segment to whoever made the
//! segment's header, but anyone with publish rights on the node's subject can make a whole
//! segment of their own (its own nonce, its own chain, heartbeats whose words they pick).
//! So the agent signs, with an ed25519 key it made on its first start and keeps in a
//! root-only file ([`load_or_create`]), what a segment's header message says
//! ([`header_statement`]: the segment id, its nonce, the chain's head and the header bytes)
//! and each heartbeat ([`heartbeat_statement`]); the message carries the public key
//! ([`KEY_HEADER`]) and the signature ([`SIGNATURE_HEADER`]). A reader pins each node's key —
//! from the operator's file of trusted keys ([`TrustedKeys`], `--trust-keys`), else the first
//! it reads, said once — and a segment or heartbeat under another key, or unsigned once the
//! node's key is pinned, is forged: never the node's word.
//!
//! Keys are NATS's own (nkeys): public keys `N…` (a server's), seeds `SN…`, as `nk` prints
//! them.

use std::collections::HashMap;
use std::path::Path;

use nkeys::{KeyPair, KeyPairType};
use sha2::{Digest, Sha256};

use super::chain::{self, Link};

/// Message header: the public key a message is signed with (an nkey, `N…`).
pub const KEY_HEADER: &str = "Tracer-Key";
/// Message header: the ed25519 signature of the message's statement, in hex.
pub const SIGNATURE_HEADER: &str = "Tracer-Signature";
/// Where the agent keeps its node's key unless told otherwise (`--key`).
pub const DEFAULT_KEY_FILE: &str = "/var/lib/tracer/node.nk";
/// Longest key text read from a message or a file line (an nkey is 56 characters).
pub const MAX_KEY_TEXT: usize = 64;
/// Lines of a trusted-keys file read at most.
pub const MAX_TRUSTED: usize = 100_000;

/// Why a key could not be had.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The key file could not be read or made.
    #[error("{path}: {error}")]
    Io {
        /// The file.
        path: String,
        /// What failed.
        error: std::io::Error,
    },
    /// The file holds no seed of ours.
    #[error("{0}: not a node key (an nkey seed, SN…)")]
    NotAKey(String),
    /// A line of a trusted-keys file is not `NODE KEY`.
    #[error("{path} line {line}: expected `NODE KEY` (a node name and an nkey N…)")]
    BadTrusted {
        /// The file.
        path: String,
        /// Its line number, from 1.
        line: usize,
    },
}

/// A node's signing key.
pub struct NodeKey(KeyPair);

/// Its public key only: the seed is never printed.
impl std::fmt::Debug for NodeKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "NodeKey({})", self.public())
    }
}

impl NodeKey {
    /// A new key from the kernel's random bytes.
    pub fn generate() -> NodeKey {
        let mut seed = [0u8; 32];
        let _ = getrandom::fill(&mut seed);
        // Any 32 bytes are an ed25519 seed: this cannot fail.
        let kp = KeyPair::new_from_raw(KeyPairType::Server, seed);
        NodeKey(kp.unwrap_or_else(|_| KeyPair::new_server()))
    }

    /// The key of seed text `text` (`SN…`).
    pub fn from_seed(text: &str) -> Option<NodeKey> {
        let kp = KeyPair::from_seed(text.trim()).ok()?;
        (kp.key_pair_type() == KeyPairType::Server).then_some(NodeKey(kp))
    }

    /// The seed's text, for the key file.
    pub fn seed(&self) -> String {
        self.0.seed().unwrap_or_default()
    }

    /// The public key (`N…`), as messages carry it.
    pub fn public(&self) -> String {
        self.0.public_key()
    }

    /// The signature of `statement`, in hex.
    pub fn sign(&self, statement: &[u8]) -> String {
        chain::to_hex(&self.0.sign(statement).unwrap_or_default())
    }
}

/// Whether `signature` (hex) is `public`'s (an nkey `N…`) over `statement`. Hostile input:
/// anything malformed is no signature.
pub fn verify(public: &str, statement: &[u8], signature: &str) -> bool {
    if public.len() > MAX_KEY_TEXT {
        return false;
    }
    let Some(sig) = chain::from_hex::<64>(signature) else {
        return false;
    };
    let Ok(kp) = KeyPair::from_public_key(public) else {
        return false;
    };
    kp.key_pair_type() == KeyPairType::Server && kp.verify(statement, &sig).is_ok()
}

/// What a segment's header message says, signed: its segment id, nonce, chain head (the
/// link of index 0; the chain then proves every later message) and a digest of its bytes.
pub fn header_statement(
    segment: &str,
    nonce: &str,
    head: Option<&Link>,
    payload: &[u8],
) -> Vec<u8> {
    let head = head.map(|l| chain::to_hex(l)).unwrap_or_default();
    let digest = chain::to_hex(&Sha256::digest(payload));
    format!("tracer segment\n{segment}\n{nonce}\n{head}\n{digest}").into_bytes()
}

/// What a heartbeat says, signed: its segment, index, link and words.
pub fn heartbeat_statement(segment: &str, index: u64, link: Option<&Link>, text: &[u8]) -> Vec<u8> {
    let link = link.map(|l| chain::to_hex(l)).unwrap_or_default();
    let mut s = format!("tracer heartbeat\n{segment}\n{index}\n{link}\n").into_bytes();
    s.extend_from_slice(text);
    s
}

/// The keys an operator trusts, node by node (`--trust-keys FILE`: lines `NODE KEY`, `#`
/// comments and blank lines skipped).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TrustedKeys(HashMap<String, String>);

impl TrustedKeys {
    /// Reads `text` (the file at `path`, named in errors).
    pub fn parse(text: &str, path: &str) -> Result<TrustedKeys, KeyError> {
        let mut keys = HashMap::new();
        for (i, line) in text.lines().enumerate().take(MAX_TRUSTED) {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let bad = || KeyError::BadTrusted {
                path: path.to_string(),
                line: i + 1,
            };
            let mut words = line.split_whitespace();
            let (Some(node), Some(key), None) = (words.next(), words.next(), words.next()) else {
                return Err(bad());
            };
            let ok = super::check_node(node).is_ok()
                && KeyPair::from_public_key(key)
                    .is_ok_and(|k| k.key_pair_type() == KeyPairType::Server);
            if !ok {
                return Err(bad());
            }
            keys.insert(node.to_string(), key.to_string());
        }
        Ok(TrustedKeys(keys))
    }

    /// Reads the file at `path` (under the same rules as credentials: `open_secret`).
    pub fn load(path: &Path) -> Result<TrustedKeys, KeyError> {
        use std::io::Read;
        let shown = crate::escape::path(path);
        let io = |error| KeyError::Io {
            path: shown.clone(),
            error,
        };
        let mut text = String::new();
        crate::outfile::open_secret(path)
            .map_err(io)?
            .take(8 << 20)
            .read_to_string(&mut text)
            .map_err(io)?;
        TrustedKeys::parse(&text, &shown)
    }

    /// The key trusted for `node`.
    pub fn get(&self, node: &str) -> Option<&str> {
        self.0.get(node).map(String::as_str)
    }
}

/// The trusted keys this process reads with, when the operator gave some.
static TRUSTED: std::sync::OnceLock<TrustedKeys> = std::sync::OnceLock::new();

/// Sets the trusted keys every reader of this process pins nodes with (once).
pub fn trust(keys: TrustedKeys) {
    let _ = TRUSTED.set(keys);
}

/// The trusted keys, when set.
pub fn trusted() -> Option<&'static TrustedKeys> {
    TRUSTED.get()
}

/// A reader's key for one node: the one the operator trusts, else the first it reads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pin {
    /// The node.
    pub node: String,
    /// Its key, once known.
    pub key: Option<String>,
    /// The key came from the trusted keys, not from the stream.
    pub trusted: bool,
    /// The key was taken on first use, from the stream.
    pub first_use: bool,
}

impl Pin {
    /// The pin of `node`: its trusted key when the operator gave one ([`trust`]).
    pub fn for_node(node: &str) -> Pin {
        let key = trusted().and_then(|t| t.get(node)).map(str::to_string);
        Pin {
            node: node.to_string(),
            trusted: key.is_some(),
            key,
            first_use: false,
        }
    }
}

/// The signing key of `m` (a message starting a segment) when its signature over its
/// [`header_statement`] holds.
fn header_key(m: &super::Received) -> Option<&str> {
    let (key, sig) = m.signed.as_ref()?;
    let nonce = m.nonce.as_deref().unwrap_or("");
    let st = header_statement(&m.segment, nonce, m.link.as_ref(), &m.payload);
    verify(key, &st, sig).then_some(key.as_str())
}

impl super::Feed {
    /// Whether segment start `m` is the node's: signed by its pinned key — or, before any key
    /// is known, signed well (its key then pinned, on first use) or by an agent before
    /// signatures (no key at all). Once a key is pinned, an unsigned segment is no agent's
    /// of that node.
    pub(super) fn signed_by_node(&mut self, m: &super::Received) -> bool {
        match (&self.keys.key, header_key(m)) {
            (Some(pinned), Some(k)) => pinned == k,
            (Some(_), None) => false,
            (None, Some(k)) => {
                self.keys.key = Some(k.to_string());
                self.keys.first_use = true;
                true
            }
            (None, None) => m.signed.is_none(),
        }
    }

    /// The node's key as this reader pinned it.
    pub fn pin(&self) -> &Pin {
        &self.keys
    }
}

/// Whether heartbeat `m` of segment `id` is its segment's word: signed by `key`, the key
/// that signed the segment (an unsigned segment's heartbeats, an agent's before signatures,
/// are read as they come: the chain proves them).
pub(super) fn heartbeat_signed(key: Option<&str>, id: &str, m: &super::Received) -> bool {
    let Some(key) = key else {
        return true;
    };
    let Some((k, sig)) = &m.signed else {
        return false;
    };
    let st = heartbeat_statement(id, m.index.unwrap_or(0), m.link.as_ref(), &m.payload);
    k == key && verify(k, &st, sig)
}

/// The node key at `path`: read when the file is there (a regular file of root's, or ours,
/// that nobody else may write: `open_secret`), else made and written there, mode 0600, in
/// a directory made 0700 when missing — never through a symbolic link, never over a file.
pub fn load_or_create(path: &Path) -> Result<NodeKey, KeyError> {
    use std::io::{Read, Write};
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let shown = crate::escape::path(path);
    let io = |error| KeyError::Io {
        path: shown.clone(),
        error,
    };
    match crate::outfile::open_secret(path) {
        Ok(f) => {
            let mut text = String::new();
            f.take(4096).read_to_string(&mut text).map_err(io)?;
            return NodeKey::from_seed(&text).ok_or_else(|| KeyError::NotAKey(shown.clone()));
        }
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io(e)),
        Err(_) => {}
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(io)?;
    }
    let key = NodeKey::generate();
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(io)?;
    f.write_all(format!("{}\n", key.seed()).as_bytes())
        .map_err(io)?;
    f.sync_all().map_err(io)?;
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_is_its_keys_over_its_statement_alone() {
        let key = NodeKey::generate();
        let other = NodeKey::generate();
        let head = [7u8; 16];
        let st = header_statement("n1-run-0", "abcd", Some(&head), b"bytes");
        let sig = key.sign(&st);
        assert!(verify(&key.public(), &st, &sig));
        assert!(!verify(&other.public(), &st, &sig), "another key");
        let changed = header_statement("n1-run-0", "abce", Some(&head), b"bytes");
        assert!(!verify(&key.public(), &changed, &sig), "another nonce");
        let payload = header_statement("n1-run-0", "abcd", Some(&head), b"bytez");
        assert!(!verify(&key.public(), &payload, &sig), "other bytes");
        assert!(!verify(&key.public(), &st, "00"), "short");
        assert!(!verify("N-not-a-key", &st, &sig));
        let hb = heartbeat_statement("n1-run-0", 3, Some(&head), b"v=1 wall_ns=1");
        assert!(
            !verify(&key.public(), &hb, &sig),
            "a header's signature on a heartbeat"
        );
        let again = NodeKey::from_seed(&key.seed()).expect("seed");
        assert_eq!(again.public(), key.public());
        assert!(NodeKey::from_seed("SUnot").is_none());
    }

    #[test]
    fn trusted_keys_are_node_and_key_per_line() {
        let k = NodeKey::generate().public();
        let text = format!("# fleet\n\nn1 {k}\nn-2   {k}\n");
        let t = TrustedKeys::parse(&text, "f").expect("parse");
        assert_eq!(
            (t.get("n1"), t.get("n-2"), t.get("n3")),
            (Some(&k[..]), Some(&k[..]), None)
        );
        for bad in [
            format!("n1 {k} x"),
            "n1".into(),
            format!("n.1 {k}"),
            "n1 Nxyz".into(),
        ] {
            let e = TrustedKeys::parse(&bad, "f").unwrap_err().to_string();
            assert!(e.starts_with("f line 1: expected `NODE KEY`"), "{bad}: {e}");
        }
    }

    #[test]
    fn the_key_file_is_made_once_and_read_after() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("tracer-key-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let path = dir.join("keys/node.nk");
        let made = load_or_create(&path).expect("made");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let dmode = std::fs::metadata(dir.join("keys"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(dmode & 0o777, 0o700);
        assert_eq!(load_or_create(&path).expect("read").public(), made.public());
        // Never through a link: one in its place is refused, and what it points at is left.
        let link = dir.join("keys/link.nk");
        let target = dir.join("elsewhere");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(load_or_create(&link).is_err());
        assert!(!target.exists());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A segment of `id` signed by `key` (or unsigned): its header, one frames message per
    /// event, a heartbeat with `wall_ns` after the events.
    fn segment(
        id: &str,
        key: Option<&std::sync::Arc<NodeKey>>,
        wall_ns: u64,
    ) -> Vec<crate::nats::Received> {
        use crate::nats::tests::as_received;
        let header = crate::tracefile::tests::sample_header();
        let (mut seg, head) =
            crate::nats::Segment::start_signed(id.into(), &header, key.cloned()).unwrap();
        let mut msgs: Vec<_> = head.iter().map(as_received).collect();
        for ev in crate::synth::sample_events() {
            seg.write_event(&ev).unwrap();
            msgs.extend(seg.flush(false).unwrap().iter().map(as_received));
        }
        let beat = crate::nats::heartbeat::Heartbeat {
            wall_ns,
            interval_ms: 2000,
            ..Default::default()
        };
        msgs.extend(seg.heartbeat(&beat).iter().map(as_received));
        msgs
    }

    /// The events read from `msgs` as node n1's stream, the heartbeats' times heard, the feed.
    fn read(mut msgs: Vec<crate::nats::Received>) -> (usize, Vec<u64>, crate::nats::SharedFeed) {
        use crate::nats::Feed;
        crate::nats::tests::numbered(&mut msgs);
        let last = msgs.len() as u64;
        let mut feed = Feed::from_messages(msgs, last).as_node("n1");
        let heard = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let h = heard.clone();
        feed.on_heartbeat(Box::new(move |_, b| h.lock().unwrap().push(b.wall_ns)));
        let feed = std::sync::Arc::new(std::sync::Mutex::new(feed));
        let mut events = 0;
        while let Some(seg) = Feed::next_segment(&feed, true) {
            let mut r = crate::TraceReader::new(seg.unwrap()).unwrap();
            events += r.events().filter(|e| e.is_ok()).count();
        }
        let heard = heard.lock().unwrap().clone();
        (events, heard, feed)
    }

    /// The node's segments are read, its key pinned on first use; a whole segment someone
    /// else made (its own nonce, chain and heartbeat) under another key, or unsigned, is
    /// forged and read as nothing; a heartbeat whose signature is not its segment's is not
    /// heard.
    #[test]
    fn a_segment_or_heartbeat_under_another_key_is_forged() {
        let (node, forger) = (
            std::sync::Arc::new(NodeKey::generate()),
            std::sync::Arc::new(NodeKey::generate()),
        );
        let n = crate::synth::sample_events().len();
        let mut msgs = segment("n1-run-0", Some(&node), 1);
        msgs.extend(segment("n1-forged-0", Some(&forger), 2));
        msgs.extend(segment("n1-unsigned-0", None, 3));
        msgs.extend(segment("n1-run-1", Some(&node), 4));
        let (events, heard, feed) = read(msgs);
        assert_eq!((events, heard), (2 * n, vec![1, 4]));
        let f = crate::nats::lock(&feed);
        assert_eq!(f.forged_signed(), 2);
        assert_eq!(
            (f.pin().key.as_deref(), f.pin().first_use),
            (Some(&node.public()[..]), true)
        );
        drop(f);
        // The heartbeat of the node's segment re-signed by the forger: the chain holds, the
        // signature does not.
        let mut msgs = segment("n1-run-0", Some(&node), 5);
        let last = msgs.last_mut().unwrap();
        let st = heartbeat_statement(
            &last.segment,
            last.index.unwrap(),
            last.link.as_ref(),
            &last.payload,
        );
        last.signed = Some((node.public(), forger.sign(&st)));
        let (events, heard, feed) = read(msgs);
        assert_eq!(
            (events, heard, crate::nats::lock(&feed).forged_signed()),
            (n, vec![], 1)
        );
    }

    /// With the operator's trusted key for the node, the first segment is judged by it too.
    #[test]
    fn a_trusted_key_decides_from_the_first_segment() {
        let (node, forger) = (
            std::sync::Arc::new(NodeKey::generate()),
            std::sync::Arc::new(NodeKey::generate()),
        );
        let mut feed = crate::nats::Feed::from_messages(Vec::new(), 0);
        feed.keys = Pin {
            node: "n1".into(),
            key: Some(node.public()),
            trusted: true,
            first_use: false,
        };
        for (key, ok) in [(&forger, false), (&node, true)] {
            let m = &segment("n1-run-0", Some(key), 1)[0];
            assert_eq!(feed.signed_by_node(m), ok);
        }
        assert!(
            !feed.signed_by_node(&segment("n1-old-0", None, 1)[0]),
            "unsigned"
        );
        assert!(!feed.keys.first_use);
    }
}
