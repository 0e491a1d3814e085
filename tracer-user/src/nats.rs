//! Trace streams over NATS JetStream (docs/nats.md): one subject per node
//! (`tracer.NODE.events`) in the stream [`STREAM`], carrying the trace-file encoding cut into
//! messages — a *segment* is one trace file: a header message (preamble + header with the
//! node's /proc snapshot) followed by frame messages (whole version-2 frames). The agent starts
//! a new segment periodically, so a reader that comes late (or after the stream's limits
//! dropped the oldest messages) starts at the next header. Concatenating a segment's messages
//! gives a trace file [`crate::TraceReader`] reads as it is.
//!
//! The agent side: [`Outbox`] (the bounded local buffer), [`Segment`] (a [`TraceWriter`] whose
//! bytes are taken out message by message), [`ensure_stream`] and [`publish`] (stream
//! creation, publishing with acknowledgements; the agent retries). The reader side:
//! [`NatsSource`], then [`Feed`] (a node's messages streamed by a thread of its own, up to now
//! or following the tail) cut back into segments, which [`crate::Input`] reads one after the
//! other as one recording. [`connect`] is the one way both sides connect (credentials and TLS
//! from the environment).

use std::collections::VecDeque;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_nats::jetstream::{self, stream};
use bytes::Bytes;

use crate::tracefile::{Header, TraceFileError, TraceWriter};

/// The JetStream stream every node publishes to.
pub const STREAM: &str = "TRACER";

pub mod burst;
pub mod chain;
pub mod guard;
pub mod heartbeat;
pub mod sign;
/// Message header naming the segment (one trace file) a message belongs to.
pub const SEGMENT_HEADER: &str = "Tracer-Segment";
/// Message header: `header` (preamble and header) or `frames`.
pub const PART_HEADER: &str = "Tracer-Part";
/// Message header: the segment's nonce, 128 random bits in hex chosen when it starts, on
/// every message of it (header and frames). A reader drops a segment's messages that do not
/// carry its header message's nonce: published by someone who cannot read the stream.
/// Segments of agents before it have none on any message and are read unchecked.
pub const NONCE_HEADER: &str = "Tracer-Nonce";
/// Message header: the link of the segment's proof chain this message reveals, 32 hex digits
/// ([`chain`]): each message's link hashes to the one before, so nobody can publish a message
/// of the segment before the agent does. Segments of agents before it have none.
pub const LINK_HEADER: &str = "Tracer-Link";
/// Largest message payload: a segment's bytes are cut into messages of at most this size
/// (NATS servers accept 1 MiB by default). Cuts fall anywhere, since a reader only
/// concatenates them.
pub const MAX_MESSAGE: usize = 512 << 10;
/// Longest node name accepted (it is a subject token).
pub const MAX_NODE_LEN: usize = 128;

/// Why a NATS operation failed.
#[derive(Debug, thiserror::Error)]
pub enum NatsError {
    /// The source is not `nats://HOST:PORT/NODE`.
    #[error("not a NATS source ({0}): expected nats://HOST:PORT/NODE")]
    BadUrl(String),
    /// A node name that cannot be a subject token.
    #[error("bad node name {0:?}: letters, digits, '-' and '_' only, at most {MAX_NODE_LEN}")]
    BadNode(String),
    /// Connecting failed.
    #[error("cannot connect to {server}: {error}")]
    Connect {
        /// `nats://HOST:PORT`.
        server: String,
        /// The client's error.
        error: async_nats::ConnectError,
    },
    /// A JetStream request failed.
    #[error("{what}: {error}")]
    JetStream {
        /// What was being done.
        what: &'static str,
        /// The client's own error (it has one type per request: downcast to tell them apart).
        /// In the message, so not also the source (a chain would say it twice).
        error: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A JetStream request went unanswered each time it was asked ([`LEADER_WAITS`]); it
    /// holds what was being done.
    #[error(
        "{0}: timed out: no answer to {asked} requests in {secs} s",
        asked = LEADER_WAITS.len(),
        secs = LEADER_WAITS.iter().sum::<Duration>().as_secs()
    )]
    Unanswered(&'static str),
    /// A one-off read heard nothing for this long: the stream ended there.
    #[error("reading: no message for {0:?}")]
    Quiet(Duration),
    /// The reader's thread or its runtime could not start.
    #[error("{what}: {error}")]
    Start {
        /// What was being started.
        what: &'static str,
        /// Why it could not (in the message).
        error: std::io::Error,
    },
    /// The reader's thread stopped (it panicked, or ended before saying where the stream was).
    #[error("the NATS reader stopped")]
    ReaderStopped,
    /// The server refused a message as larger than its `max_payload`.
    #[error("a message of {0} bytes is larger than the server accepts (max_payload)")]
    TooLarge(usize),
    /// The node has no message in the stream.
    #[error("no message from node {0} in the stream (no agent published as that node yet)")]
    NoData(String),
    /// A credentials, certificate or key file that could not be read, or that breaks the rule
    /// for secrets ([`crate::outfile::open_secret`]).
    #[error("cannot read the NATS {what} {}: {error}", crate::escape::path(path))]
    Credentials {
        /// Which file: `credentials`, `CA certificates`...
        what: &'static str,
        /// The file.
        path: std::path::PathBuf,
        /// The error.
        error: std::io::Error,
    },
    /// Connection settings that do not go together.
    #[error("{0}")]
    Config(&'static str),
    /// Encoding a segment failed.
    #[error(transparent)]
    Encode(#[from] TraceFileError),
    /// The server broke the protocol's bounds ([`guard`]); the connection was cut.
    #[error("{server}: {violation}; the connection was cut")]
    Protocol {
        /// `nats://HOST:PORT`.
        server: String,
        /// What it sent.
        violation: guard::Violation,
    },
    /// The loopback relay to the server could not start.
    #[error("cannot relay to {server}: {error}")]
    Relay {
        /// `nats://HOST:PORT`.
        server: String,
        /// Why.
        error: std::io::Error,
    },
}

fn js_err<E: Into<Box<dyn std::error::Error + Send + Sync>>>(
    what: &'static str,
) -> impl FnOnce(E) -> NatsError {
    move |error| NatsError::JetStream {
        what,
        error: error.into(),
    }
}

/// A node name usable as a subject token: `[A-Za-z0-9_-]{1,128}`.
pub fn check_node(node: &str) -> Result<(), NatsError> {
    let ok = !node.is_empty()
        && node.len() <= MAX_NODE_LEN
        && node
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(NatsError::BadNode(node.to_string()))
    }
}

/// The subject a node publishes to.
pub fn subject(node: &str) -> String {
    format!("tracer.{node}.events")
}

/// The node of `nats://HOST:PORT/*`: every node that published.
pub const ALL_NODES: &str = "*";

/// A node's stream as a recording: `nats://HOST:PORT/NODE` (or `/*`: every node). The
/// servers of a cluster are a list, `nats://HOST:PORT,HOST:PORT,.../NODE` (each may be
/// written `nats://HOST:PORT` too): the reader connects to any one that answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NatsSource {
    /// `nats://HOST:PORT`, or `nats://HOST:PORT,HOST:PORT,...` ([`servers`] splits it).
    pub server: String,
    /// The node.
    pub node: String,
}

impl NatsSource {
    /// `nats://HOST:PORT/*`.
    pub fn is_all_nodes(&self) -> bool {
        self.node == ALL_NODES
    }

    /// The same server, one node.
    pub fn with_node(&self, node: &str) -> String {
        format!("{}/{node}", self.server)
    }

    /// Whether `s` names a NATS source at all (then [`NatsSource::parse`] decides if it is good).
    pub fn is_nats(s: &str) -> bool {
        s.starts_with("nats://")
    }

    /// Parses `nats://HOST:PORT/NODE`, or a list of servers before the node
    /// (`nats://HOST:PORT,HOST:PORT/NODE`; `nats://HOST:PORT,nats://HOST:PORT/NODE` too).
    pub fn parse(s: &str) -> Result<NatsSource, NatsError> {
        let bad = || NatsError::BadUrl(s.to_string());
        let rest = s.strip_prefix("nats://").ok_or_else(bad)?;
        let (hosts, node) = rest.rsplit_once('/').ok_or_else(bad)?;
        let hosts: Vec<&str> = hosts
            .split(',')
            .map(|h| h.strip_prefix("nats://").unwrap_or(h))
            .collect();
        let bad_host = |h: &&str| h.is_empty() || h.contains(['/', '@', '?', '#']);
        if hosts.len() > MAX_SERVERS || hosts.iter().any(bad_host) {
            return Err(bad());
        }
        if node != ALL_NODES {
            check_node(node)?;
        }
        Ok(NatsSource {
            server: format!("nats://{}", hosts.join(",")),
            node: node.to_string(),
        })
    }
}

/// Most servers in one list (a cluster's seed servers; the client learns the rest when
/// connected directly).
pub const MAX_SERVERS: usize = 32;

/// The servers of a list, each a URL the client takes: `nats://A:4222,nats://B:4222` and
/// `nats://A:4222,B:4222` both give `["nats://A:4222", "nats://B:4222"]` (an item without a
/// scheme takes the one before it). Items are trimmed; empty ones are left out.
pub fn servers(list: &str) -> Vec<String> {
    let mut scheme = "nats";
    let mut out = Vec::new();
    for item in list.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        match item.split_once("://") {
            Some((s, _)) => {
                scheme = s;
                out.push(item.to_string());
            }
            None => out.push(format!("{scheme}://{item}")),
        }
    }
    out
}

/// Which part of a segment a message holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// Preamble and header: the start of a trace file.
    Header,
    /// Whole frames that follow it.
    Frames,
    /// A heartbeat ([`heartbeat`]): no trace bytes, the agent's word that it is there; its
    /// text travels in [`heartbeat::HEARTBEAT_HEADER`] and the message's payload is empty.
    Heartbeat,
}

impl Part {
    /// The value of [`PART_HEADER`].
    pub fn as_str(self) -> &'static str {
        match self {
            Part::Header => "header",
            Part::Frames => "frames",
            Part::Heartbeat => "heartbeat",
        }
    }
}

/// One message waiting to be published.
#[derive(Clone, Debug)]
pub struct Outgoing {
    /// The segment it belongs to (unique per agent run and segment).
    pub segment: String,
    /// Header or frames.
    pub part: Part,
    /// Its number in the segment (0 is the header): with the segment and the nonce, the
    /// JetStream message id, so a publish retried after a lost acknowledgement is stored once.
    pub index: u64,
    /// Random, so that nobody who reads the stream can publish the agent's next message ids
    /// first (JetStream would then drop the agent's own messages as duplicates).
    pub nonce: u64,
    /// The segment's nonce ([`NONCE_HEADER`]), the same on all its messages.
    pub segment_nonce: Arc<str>,
    /// Its link of the segment's proof chain ([`LINK_HEADER`]).
    pub link: Option<chain::Link>,
    /// The bytes.
    pub payload: Bytes,
    /// Events in it.
    pub events: u64,
    /// The node key's public key and signature (hex), on a signed segment's header message
    /// and heartbeats ([`sign`]).
    pub signed: Option<(Arc<str>, String)>,
}

impl Outgoing {
    /// The JetStream de-duplication id: `SEGMENT-INDEX-NONCE`.
    pub fn message_id(&self) -> String {
        format!("{}-{}-{:016x}", self.segment, self.index, self.nonce)
    }

    /// A fresh nonce: the same message under a new id (after a duplicate acknowledgement for
    /// an id someone else published first).
    pub fn renew_id(&mut self) {
        self.nonce = random_u64();
    }
}

/// 64 random bits from the kernel (getrandom(2)); 0 only if the kernel has none to give.
pub fn random_u64() -> u64 {
    let mut b = [0u8; 8];
    let _ = getrandom::fill(&mut b);
    u64::from_ne_bytes(b)
}

/// An id nobody can predict: 128 random bits in hex (agent run ids).
pub fn random_id() -> String {
    format!("{:016x}{:016x}", random_u64(), random_u64())
}

/// The bounded local buffer between capture and NATS. Frame messages are kept while their
/// events fit in `max_events`; a batch that does not fit is dropped whole and counted (the
/// reader sees the hole as a gap in the frame numbers and the events-before counts). Header
/// messages are always kept: without one, a segment cannot be read at all.
#[derive(Debug)]
pub struct Outbox {
    queue: VecDeque<Outgoing>,
    events: u64,
    max_events: u64,
    dropped_events: u64,
    dropped_messages: u64,
}

impl Outbox {
    /// An empty buffer holding at most `max_events` events.
    pub fn new(max_events: u64) -> Outbox {
        Outbox {
            queue: VecDeque::new(),
            events: 0,
            max_events,
            dropped_events: 0,
            dropped_messages: 0,
        }
    }

    /// Queues `m`, or drops and counts it when its events do not fit. Returns whether it was
    /// queued.
    pub fn push(&mut self, m: Outgoing) -> bool {
        self.push_all(vec![m])
    }

    /// Queues the messages one flush made (a segment's bytes cut in pieces) all, or drops and
    /// counts them all when their events do not fit. Returns whether they were queued.
    pub fn push_all(&mut self, msgs: Vec<Outgoing>) -> bool {
        let frames = msgs.iter().any(|m| m.part == Part::Frames);
        let events: u64 = msgs.iter().map(|m| m.events).sum();
        if frames && self.events + events > self.max_events {
            self.dropped_events += events;
            self.dropped_messages += msgs.len() as u64;
            return false;
        }
        for m in msgs {
            self.events += m.events;
            self.queue.push_back(m);
        }
        true
    }

    /// The oldest message, still queued.
    pub fn front(&self) -> Option<&Outgoing> {
        self.queue.front()
    }

    /// The oldest message, to change its id.
    pub fn front_mut(&mut self) -> Option<&mut Outgoing> {
        self.queue.front_mut()
    }

    /// Removes the oldest message (once it was published).
    pub fn pop(&mut self) -> Option<Outgoing> {
        let m = self.queue.pop_front()?;
        self.events -= m.events;
        Some(m)
    }

    /// Drops the oldest message for good (one the server will never take), counting it.
    pub fn drop_front(&mut self) {
        if let Some(m) = self.pop() {
            self.dropped_events += m.events;
            self.dropped_messages += 1;
        }
    }

    /// The stream lost what it held (a server without its store), and `head` is the header
    /// of segment `current`: queued messages of a segment whose header is neither queued nor
    /// `current`'s would follow no header in the new stream, and are dropped; `head` is queued
    /// first (under new ids) unless already queued, so `current`'s queued frames stay
    /// readable. Returns the events dropped (not counted as dropped for a full buffer: the
    /// caller counts them as lost with the stream).
    pub fn after_stream_lost(&mut self, current: &str, head: &[Outgoing]) -> u64 {
        let starts = |m: &Outgoing| m.part == Part::Header && m.index == 0;
        let mut readable: std::collections::HashSet<String> = self
            .queue
            .iter()
            .filter(|m| starts(m))
            .map(|m| m.segment.clone())
            .collect();
        let head_queued = readable.contains(current);
        readable.insert(current.to_string());
        let before = self.events;
        self.queue.retain(|m| readable.contains(&m.segment));
        self.events = self.queue.iter().map(|m| m.events).sum();
        if !head_queued {
            for m in head.iter().rev() {
                let mut m = m.clone();
                m.renew_id();
                self.events += m.events;
                self.queue.push_front(m);
            }
        }
        before.saturating_sub(self.events)
    }

    /// Events waiting.
    pub fn buffered_events(&self) -> u64 {
        self.events
    }

    /// Messages waiting.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// Nothing waits.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Events dropped because the buffer was full.
    pub fn dropped_events(&self) -> u64 {
        self.dropped_events
    }

    /// Messages dropped because the buffer was full.
    pub fn dropped_messages(&self) -> u64 {
        self.dropped_messages
    }
}

/// A `Write` whose bytes are taken out by its other handle.
#[derive(Clone, Default)]
struct Taken(Arc<Mutex<Vec<u8>>>);

impl Taken {
    fn take(&self) -> Vec<u8> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl Write for Taken {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// One trace file written as messages: [`Segment::start`] gives the header message,
/// [`Segment::flush`] one frames message with everything written since.
pub struct Segment {
    id: String,
    /// [`NONCE_HEADER`]: unpredictable, so only who reads the stream can know it.
    nonce: Arc<str>,
    writer: TraceWriter<Taken>,
    buf: Taken,
    /// The proof chain whose links its messages reveal.
    chain: chain::Chain,
    next_index: u64,
    events_taken: u64,
    /// The node's key, which signs its header message and heartbeats, and its public key.
    signer: Option<(Arc<sign::NodeKey>, Arc<str>)>,
}

impl Segment {
    /// Starts segment `id` with `header`; returns it and its header messages.
    pub fn start(id: String, header: &Header) -> Result<(Segment, Vec<Outgoing>), NatsError> {
        Segment::start_signed(id, header, None)
    }

    /// [`Segment::start`], its header message and heartbeats signed by `key` when given.
    pub fn start_signed(
        id: String,
        header: &Header,
        key: Option<Arc<sign::NodeKey>>,
    ) -> Result<(Segment, Vec<Outgoing>), NatsError> {
        let buf = Taken::default();
        let writer = TraceWriter::new(buf.clone(), header)?;
        let mut seg = Segment {
            id,
            nonce: random_id().into(),
            writer,
            buf,
            chain: chain::Chain::new(),
            next_index: 0,
            events_taken: 0,
            signer: key.map(|k| {
                let public = Arc::from(k.public());
                (k, public)
            }),
        };
        let bytes = seg.buf.take();
        let head = seg.messages(Part::Header, bytes, 0);
        Ok((seg, head))
    }

    /// `bytes` cut into messages of at most [`MAX_MESSAGE`]; the events count goes with the
    /// last one.
    fn messages(&mut self, part: Part, bytes: Vec<u8>, events: u64) -> Vec<Outgoing> {
        let bytes = Bytes::from(bytes);
        let n = bytes.len().div_ceil(MAX_MESSAGE).max(1);
        (0..n)
            .map(|i| {
                let end = ((i + 1) * MAX_MESSAGE).min(bytes.len());
                let mut m = Outgoing {
                    segment: self.id.clone(),
                    part,
                    index: self.next_index,
                    nonce: random_u64(),
                    segment_nonce: self.nonce.clone(),
                    link: self.chain.link(self.next_index),
                    payload: bytes.slice((i * MAX_MESSAGE).min(end)..end),
                    events: if i + 1 == n { events } else { 0 },
                    signed: None,
                };
                m.signed = self.signature_of(&m);
                self.next_index += 1;
                m
            })
            .collect()
    }

    /// The key and signature of `m` when it is a signed segment's first message or a heartbeat
    /// ([`sign::header_statement`], [`sign::heartbeat_statement`]).
    fn signature_of(&self, m: &Outgoing) -> Option<(Arc<str>, String)> {
        let (key, public) = self.signer.as_ref()?;
        let statement = match m.part {
            Part::Header if m.index == 0 => {
                sign::header_statement(&m.segment, &m.segment_nonce, m.link.as_ref(), &m.payload)
            }
            Part::Heartbeat => {
                sign::heartbeat_statement(&m.segment, m.index, m.link.as_ref(), &m.payload)
            }
            _ => return None,
        };
        Some((public.clone(), key.sign(&statement)))
    }

    /// The segment's id (`NODE-RUN-N`).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Its proof chain runs out soon: the agent starts the next segment now, so the last
    /// messages of this one still get links.
    pub fn nearly_spent(&self) -> bool {
        chain::Chain::nearly_spent(self.next_index)
    }

    /// Appends an event.
    pub fn write_event(&mut self, ev: &crate::Event) -> Result<(), NatsError> {
        Ok(self.writer.write_event(ev)?)
    }

    /// The capture's counters, carried by the next stats or end record.
    pub fn set_counters(&mut self, drops: u64, seq_issued: u64, decode_errors: u64) {
        self.writer.set_counters(drops, seq_issued, decode_errors);
    }

    /// Seals what was written into frames messages (with a stats record when `stats`); none
    /// when there is nothing.
    pub fn flush(&mut self, stats: bool) -> Result<Vec<Outgoing>, NatsError> {
        if stats {
            let s = *self.writer.stats();
            self.writer
                .write_stats(s.drops, s.seq_issued, s.decode_errors)?;
        } else {
            self.writer.flush()?;
        }
        Ok(self.frames_messages())
    }

    /// Ends the segment with its end record; returns the last frames messages.
    pub fn finish(mut self) -> Result<Vec<Outgoing>, NatsError> {
        let events = self.writer.stats().events - self.events_taken;
        let bytes = {
            let writer = std::mem::replace(
                &mut self.writer,
                TraceWriter::new(Taken::default(), &Header::default())?,
            );
            writer.finish()?;
            self.buf.take()
        };
        Ok(self.messages(Part::Frames, bytes, events))
    }

    fn frames_messages(&mut self) -> Vec<Outgoing> {
        let bytes = self.buf.take();
        if bytes.is_empty() {
            return Vec::new();
        }
        let events = self.writer.stats().events - self.events_taken;
        self.events_taken = self.writer.stats().events;
        self.messages(Part::Frames, bytes, events)
    }
}

/// Limits of the stream when the agent creates it.
#[derive(Clone, Copy, Debug)]
pub struct StreamLimits {
    /// Oldest messages go first past this size.
    pub max_bytes: i64,
    /// Messages older than this go.
    pub max_age: Duration,
    /// Copies of each message the servers of a JetStream cluster keep (1 to 5; more than 1
    /// needs a cluster of at least that many servers).
    pub replicas: usize,
}

impl Default for StreamLimits {
    fn default() -> Self {
        StreamLimits {
            max_bytes: 1 << 30,
            max_age: Duration::from_secs(7 * 24 * 3600),
            replicas: 1,
        }
    }
}

/// Most replicas JetStream keeps of a stream.
pub const MAX_REPLICAS: usize = 5;

/// When the first connection fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FirstConnect {
    /// Keep trying (the agent: it starts before the server may be up, and runs unattended).
    Retry,
    /// Fail at once with the error (a reader: a person is waiting for an answer).
    Fail,
}

/// Environment variables that give every connection (agent and readers) credentials and
/// TLS: what a DaemonSet mounts from a Secret.
pub const ENV_CREDS: &str = "TRACER_NATS_CREDS";
/// PEM file of the CA roots that sign the server's certificate; setting it requires TLS.
pub const ENV_CA: &str = "TRACER_NATS_CA";
/// Client certificate (PEM) for servers that verify clients; needs [`ENV_KEY`].
pub const ENV_CERT: &str = "TRACER_NATS_CERT";
/// The client certificate's key (PEM).
pub const ENV_KEY: &str = "TRACER_NATS_KEY";

fn env_path(name: &str) -> Option<std::path::PathBuf> {
    std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(Into::into)
}

/// Whether the environment asks for TLS ([`ENV_CA`], or a client certificate).
fn tls_configured() -> bool {
    env_path(ENV_CA).is_some() || env_path(ENV_CERT).is_some() || env_path(ENV_KEY).is_some()
}

/// The secret file `path` (checked by [`crate::outfile::open_secret`]), open for the rest of
/// the process, as a `/proc/self/fd/N` name: the client reads its certificates by name at
/// every connection, and that name is the file checked, whatever is at `path` later.
fn held_secret(
    what: &'static str,
    path: std::path::PathBuf,
) -> Result<std::path::PathBuf, NatsError> {
    use std::os::fd::AsRawFd;
    static HELD: std::sync::Mutex<Vec<std::fs::File>> = std::sync::Mutex::new(Vec::new());
    let file = crate::outfile::open_secret(&path).map_err(|error| NatsError::Credentials {
        what,
        path,
        error,
    })?;
    let name = format!("/proc/self/fd/{}", file.as_raw_fd());
    HELD.lock().unwrap_or_else(|e| e.into_inner()).push(file);
    Ok(name.into())
}

/// The credentials file at `path`, read under the rule for secrets.
fn read_credentials(path: std::path::PathBuf) -> Result<String, NatsError> {
    use std::io::Read;
    let what = "credentials";
    let mut text = String::new();
    crate::outfile::open_secret(&path)
        .and_then(|mut f| f.read_to_string(&mut text))
        .map_err(|error| NatsError::Credentials { what, path, error })?;
    Ok(text)
}

/// Options with the environment's credentials and TLS (see [`ENV_CREDS`]). Each file must
/// pass [`crate::outfile::open_secret`] (root's or ours, written by no one else, reached
/// through no other user's link or directory): root's agent never authenticates with what
/// another user put in place.
async fn auth_options() -> Result<async_nats::ConnectOptions, NatsError> {
    let mut o = async_nats::ConnectOptions::new();
    if let Some(path) = env_path(ENV_CREDS) {
        let text = read_credentials(path.clone())?;
        o = o
            .credentials(&text)
            .map_err(|error| NatsError::Credentials {
                what: "credentials",
                path,
                error,
            })?;
    }
    if let Some(ca) = env_path(ENV_CA) {
        let ca = held_secret("CA certificates", ca)?;
        o = o.add_root_certificates(ca).require_tls(true);
    }
    match (env_path(ENV_CERT), env_path(ENV_KEY)) {
        (Some(cert), Some(key)) => {
            let cert = held_secret("client certificate", cert)?;
            let key = held_secret("client key", key)?;
            o = o.add_client_certificate(cert, key).require_tls(true)
        }
        (None, None) => {}
        _ => {
            return Err(NatsError::Config(
                "set both TRACER_NATS_CERT and TRACER_NATS_KEY",
            ))
        }
    }
    Ok(o)
}

/// Connects to `server`. Once connected, the client reconnects for as long as it lives
/// (buffering what is published meanwhile); `first` says what a failed first attempt does.
pub async fn connect(server: &str, first: FirstConnect) -> Result<async_nats::Client, NatsError> {
    let (client, watch) = connect_with(server, first, None, None).await?;
    report_violations(&guard::shown(server), watch);
    Ok(client)
}

/// Says on stderr each time the server breaks the protocol's bounds (the relay cuts that
/// connection and the client reconnects): for the agent, which keeps going.
fn report_violations(server: &str, watch: Violations) {
    let Some(mut w) = watch else { return };
    let server = server.to_string();
    let burst = burst::Shared::default();
    tokio::spawn(async move {
        while w.changed().await.is_ok() {
            if let Some(v) = w.borrow_and_update().clone() {
                let e = NatsError::Protocol {
                    server: server.clone(),
                    violation: v,
                };
                for line in burst::offer(&burst, "violation", e.to_string()) {
                    crate::say!("tracer: {line}");
                }
            }
        }
    });
}

/// The relay's report of a server breaking the protocol's bounds (none when connected
/// directly, over TLS).
type Violations = Option<tokio::sync::watch::Receiver<Option<guard::Violation>>>;

/// Runs `f`, unless the server breaks the protocol's bounds first: then that is the error.
async fn unless_violated<T>(
    server: &str,
    watch: &Violations,
    f: impl std::future::Future<Output = Result<T, NatsError>>,
) -> Result<T, NatsError> {
    let violated = async {
        let Some(mut w) = watch.clone() else {
            return std::future::pending().await;
        };
        let seen = w.wait_for(|v| v.is_some()).await.map(|v| v.clone());
        match seen {
            Ok(Some(v)) => v,
            _ => std::future::pending().await,
        }
    };
    let r = tokio::select! {
        r = f => r,
        violation = violated => return Err(NatsError::Protocol { server: server.to_string(), violation }),
    };
    // A failure the cut connection caused is told as its cause.
    let cause = watch.as_ref().and_then(|w| w.borrow().clone());
    match (r, cause) {
        (Err(_), Some(violation)) => Err(NatsError::Protocol {
            server: server.to_string(),
            violation,
        }),
        (r, _) => r,
    }
}

/// The inbox prefix of `node`'s agent: its acknowledgements come to `_INBOX.tracer.NODE.*`,
/// so a node's NATS user needs to subscribe only there, and cannot listen to the replies
/// other clients get (a reader's messages come as replies to its inbox).
pub fn node_inbox(node: &str) -> String {
    format!("_INBOX.tracer.{node}")
}

/// [`connect`] for `node`'s agent: the first attempt retried, replies to [`node_inbox`].
pub async fn connect_node(server: &str, node: &str) -> Result<async_nats::Client, NatsError> {
    let (client, watch) =
        connect_with(server, FirstConnect::Retry, None, Some(node_inbox(node))).await?;
    report_violations(&guard::shown(server), watch);
    Ok(client)
}

/// [`connect`], telling `notes` when the connection is lost and when it is back, with
/// replies to `inbox` when given. A plain-text connection goes through a [`guard`] relay,
/// whose reports come back with the client.
async fn connect_with(
    server: &str,
    first: FirstConnect,
    notes: Option<Notes>,
    inbox: Option<String>,
) -> Result<(async_nats::Client, Violations), NatsError> {
    let mut o = auth_options().await?.max_reconnects(None);
    // Messages name the server without the credentials its URL may hold.
    let shown = guard::shown(server);
    let (targets, watch) = relayed(server).await?;
    if watch.is_some() {
        // Servers a cluster advertises would be connected to directly, past the relays.
        o = o.ignore_discovered_servers();
    }
    if let Some(prefix) = inbox {
        o = o.custom_inbox_prefix(prefix);
    }
    let server_name = shown.clone();
    let burst = burst::Shared::default();
    o = o.event_callback(move |event| {
        let text = match (&event, &notes) {
            (async_nats::Event::Disconnected, Some(_)) => {
                Some(("lost", format!("{server_name}: disconnected; reconnecting")))
            }
            (async_nats::Event::Connected, Some(_)) => {
                Some(("back", format!("{server_name}: connected again")))
            }
            // A refusal (a permissions violation, say) is why publishes go unacknowledged:
            // said once per refusal, the server's words escaped.
            (async_nats::Event::ServerError(e), _) => Some((
                "refused",
                format!(
                    "{server_name}: the server refused: {}",
                    crate::escape::escape(&e.to_string())
                ),
            )),
            _ => None,
        };
        let lines = text.map(|(kind, t)| burst::offer(&burst, kind, t));
        for text in lines.unwrap_or_default() {
            match &notes {
                Some(notes) => say(notes, text),
                None => crate::say!("tracer: {text}"),
            }
        }
        async {}
    });
    o = match first {
        FirstConnect::Retry => o
            .retry_on_initial_connect()
            .connection_timeout(Duration::from_secs(2)),
        FirstConnect::Fail => o.connection_timeout(Duration::from_secs(5)),
    };
    let client = unless_violated(&shown, &watch, async {
        o.connect(targets)
            .await
            .map_err(|error| NatsError::Connect {
                server: shown.clone(),
                error,
            })
    })
    .await?;
    Ok((client, watch))
}

/// What the client connects to for the servers of `list` ([`servers`]): each plain-text
/// server through a [`guard`] relay of its own (unless TLS is configured), the others as
/// they are; with the relays' reports merged into one.
async fn relayed(list: &str) -> Result<(Vec<String>, Violations), NatsError> {
    let all = servers(list);
    if all.is_empty() || all.len() > MAX_SERVERS {
        return Err(NatsError::BadUrl(guard::shown(list)));
    }
    let mut targets = Vec::new();
    let mut watches = Vec::new();
    for server in all {
        let relay_err = |error| NatsError::Relay {
            server: guard::shown(&server),
            error,
        };
        let plain = guard::plain_server(&server).map_err(relay_err)?;
        match plain.filter(|_| !tls_configured()) {
            Some(p) => {
                let r = guard::start(&p).await.map_err(relay_err)?;
                targets.push(r.url);
                watches.push(r.failed);
            }
            None => targets.push(server),
        }
    }
    Ok((targets, merged(watches)))
}

/// One report for several relays: the first violation any of them saw. Each forwarder ends
/// when the merged report is let go of, which lets its relay end too.
fn merged(mut watches: Vec<tokio::sync::watch::Receiver<Option<guard::Violation>>>) -> Violations {
    if watches.len() <= 1 {
        return watches.pop();
    }
    let (tx, rx) = tokio::sync::watch::channel(None);
    for mut w in watches {
        let tx = tx.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    changed = w.changed() => {
                        if changed.is_err() {
                            return;
                        }
                    }
                    _ = tx.closed() => return,
                }
                if let Some(v) = w.borrow_and_update().clone() {
                    let _ = tx.send(Some(v));
                }
            }
        });
    }
    Some(rx)
}

/// The stream, created with `limits` when missing (an existing one is used as configured:
/// one with other replicas than `limits.replicas` is said once, never recreated, which would
/// lose what it holds).
pub async fn ensure_stream(
    js: &jetstream::Context,
    limits: StreamLimits,
) -> Result<stream::Stream, NatsError> {
    let stream = js
        .get_or_create_stream(stream::Config {
            name: STREAM.to_string(),
            subjects: vec!["tracer.*.events".to_string()],
            max_bytes: limits.max_bytes,
            max_age: limits.max_age,
            storage: stream::StorageType::File,
            discard: stream::DiscardPolicy::Old,
            duplicate_window: Duration::from_secs(120),
            num_replicas: limits.replicas,
            ..Default::default()
        })
        .await
        .map_err(js_err("creating the stream"))?;
    let has = stream.cached_info().config.num_replicas;
    if let Some(line) = replicas_note(has, limits.replicas) {
        crate::say!("tracer: {line}");
    }
    Ok(stream)
}

/// The line that says the stream has `has` replicas, not the `wanted` ones: once per process
/// and pair (the agent opens the stream again every few seconds).
fn replicas_note(has: usize, wanted: usize) -> Option<String> {
    static TOLD: Mutex<Option<(usize, usize)>> = Mutex::new(None);
    // A stream created before replicas were set says 0: the server keeps one copy.
    let has = has.max(1);
    let mut told = TOLD.lock().unwrap_or_else(|e| e.into_inner());
    if has == wanted || *told == Some((has, wanted)) {
        return None;
    }
    *told = Some((has, wanted));
    Some(format!(
        "the stream {STREAM} exists with {has} replica(s), not the {wanted} asked: used as it is (change it with `nats stream edit {STREAM} --replicas {wanted}`)"
    ))
}

/// JetStream's acknowledgement of a publish.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ack {
    /// The server already had a message with that id (a retry of ours, or someone else's).
    pub duplicate: bool,
    /// The message's sequence number in the stream.
    pub sequence: u64,
}

/// Publishes one message and waits for JetStream's acknowledgement.
pub async fn publish(
    js: &jetstream::Context,
    subject: &str,
    m: &Outgoing,
) -> Result<Ack, NatsError> {
    // A heartbeat's text goes in a header and its payload is empty: a reader before
    // heartbeats reads it as a message of the segment without bytes.
    let (payload, beat) = match m.part {
        Part::Heartbeat => (Bytes::new(), Some(String::from_utf8_lossy(&m.payload))),
        _ => (m.payload.clone(), None),
    };
    let mut msg = jetstream::message::PublishMessage::build()
        .payload(payload)
        .message_id(m.message_id())
        .header(SEGMENT_HEADER, m.segment.as_str())
        .header(PART_HEADER, m.part.as_str())
        .header(NONCE_HEADER, &*m.segment_nonce);
    if let Some(link) = &m.link {
        msg = msg.header(LINK_HEADER, chain::to_hex(link).as_str());
    }
    if let Some(beat) = beat {
        msg = msg.header(heartbeat::HEARTBEAT_HEADER, &*beat);
    }
    if let Some((key, sig)) = &m.signed {
        msg = msg
            .header(sign::KEY_HEADER, &**key)
            .header(sign::SIGNATURE_HEADER, sig.as_str());
    }
    js.send_publish(subject.to_string(), msg)
        .await
        .map_err(|e| match e.kind() {
            jetstream::context::PublishErrorKind::MaxPayloadExceeded => {
                NatsError::TooLarge(m.payload.len())
            }
            _ => js_err("publishing")(e),
        })?
        .await
        .map_err(js_err("waiting for the acknowledgement"))
        .map(|ack| Ack {
            duplicate: ack.duplicate,
            sequence: ack.sequence,
        })
}

/// Longest wait between publishes a server keeps answering "duplicate" (and between failed
/// ones).
pub const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// Duplicate acknowledgements for ids this agent never sent, in a row. One is someone who
/// published an id first, and the message goes again at once under a new one; a server that
/// answers every publish so (broken, or hostile) would make the agent publish in a loop, so
/// each further one waits twice as long, up to [`MAX_BACKOFF`], and a burst is said once.
#[derive(Debug, Default)]
pub struct Duplicates {
    in_row: u32,
    total: u64,
}

impl Duplicates {
    /// One more: how long to wait before publishing again, and whether it starts a burst
    /// (the one to say).
    pub fn more(&mut self) -> (Duration, bool) {
        self.in_row = self.in_row.saturating_add(1);
        self.total += 1;
        let wait = match self.in_row {
            1 => Duration::ZERO,
            n => (Duration::from_millis(50) * (1 << (n - 2).min(16))).min(MAX_BACKOFF),
        };
        (wait, self.in_row == 1)
    }

    /// A message was stored: the burst, if any, ended.
    pub fn stored(&mut self) {
        self.in_row = 0;
    }

    /// Duplicates of ids never sent, all bursts.
    pub fn total(&self) -> u64 {
        self.total
    }
}

/// A message read back: its headers that matter and its payload.
#[derive(Clone, Debug)]
pub struct Received {
    /// [`SEGMENT_HEADER`] (empty when missing).
    pub segment: String,
    /// [`PART_HEADER`], when known.
    pub part: Option<Part>,
    /// Its number in the segment, from the message id (`None` when it has none).
    pub index: Option<u64>,
    /// Its sequence number in the stream.
    pub seq: u64,
    /// [`NONCE_HEADER`], when it has one.
    pub nonce: Option<String>,
    /// [`LINK_HEADER`], when it has a well-formed one.
    pub link: Option<chain::Link>,
    /// [`sign::KEY_HEADER`] and [`sign::SIGNATURE_HEADER`], when it has both, bounded.
    pub signed: Option<(String, String)>,
    /// The bytes.
    pub payload: Bytes,
}

impl Received {
    /// The first message of a segment: a header message numbered 0 (or not numbered).
    pub fn starts_segment(&self) -> bool {
        self.part == Some(Part::Header) && self.index.is_none_or(|i| i == 0)
    }
}

fn received(m: &async_nats::Message, seq: u64) -> Received {
    let get = |name: &str| {
        m.headers
            .as_ref()
            .and_then(|h| h.get(name))
            .map(|v| v.as_str().to_string())
    };
    let part = match get(PART_HEADER).as_deref() {
        Some("header") => Some(Part::Header),
        Some("frames") => Some(Part::Frames),
        Some("heartbeat") => Some(Part::Heartbeat),
        _ => None,
    };
    let segment = get(SEGMENT_HEADER).unwrap_or_default();
    // The id is `SEGMENT-INDEX-NONCE` (Outgoing::message_id; `SEGMENT-INDEX` before nonces).
    let index = get("Nats-Msg-Id").and_then(|id| {
        let rest = id.strip_prefix(segment.as_str())?.strip_prefix('-')?;
        rest.split('-').next()?.parse().ok()
    });
    // Bounded: a forger's header is no bigger than the agent's (32 hex digits).
    let nonce = get(NONCE_HEADER).filter(|n| n.len() <= 64);
    Received {
        segment,
        part,
        index,
        seq,
        nonce,
        link: get(LINK_HEADER).and_then(|l| chain::from_hex(&l)),
        signed: get(sign::KEY_HEADER)
            .zip(get(sign::SIGNATURE_HEADER))
            .filter(|(k, s)| k.len() <= sign::MAX_KEY_TEXT && s.len() <= 128),
        // A heartbeat's text is its payload here: the chain's digest covers it.
        payload: match part {
            Some(Part::Heartbeat) => heartbeat::received_text(get(heartbeat::HEARTBEAT_HEADER)),
            _ => m.payload.clone(),
        },
    }
}

async fn jetstream_reader(
    server: &str,
    notes: Option<Notes>,
) -> Result<(jetstream::Context, Violations), NatsError> {
    let (client, watch) = connect_with(server, FirstConnect::Fail, notes, None).await?;
    Ok((jetstream::new(client), watch))
}

async fn open_stream(js: &jetstream::Context) -> Result<stream::Stream, NatsError> {
    while_unanswered("opening the stream", info_timed_out, || {
        js.get_stream(STREAM)
    })
    .await
}

/// The stream's info request went unanswered in time (not refused, not a JetStream error).
fn info_timed_out(e: &jetstream::context::GetStreamError) -> bool {
    use std::error::Error;
    e.kind() == jetstream::context::GetStreamErrorKind::Request
        && e.source()
            .and_then(|s| s.downcast_ref::<jetstream::context::RequestError>())
            .is_some_and(|r| r.kind() == jetstream::context::RequestErrorKind::TimedOut)
}

/// Subjects of the stream looked at at most when listing its nodes.
pub const MAX_SUBJECTS: usize = 100_000;
/// Nodes listed at most (by name); the others are counted.
pub const MAX_NODES: usize = 256;
/// Subjects whose first message is looked at together.
const FIRST_LOOKS: usize = 16;

/// The nodes of a stream, as [`nodes`] lists them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeList {
    /// Node names, sorted: subjects whose first message is one of an agent's segments.
    pub nodes: Vec<String>,
    /// Subjects named like a node's whose first message is none of an agent's (junk someone
    /// published there), or whose name is no node's.
    pub not_agents: usize,
    /// Nodes past [`MAX_NODES`], left out (the last by name).
    pub left_out: usize,
}

/// The nodes that have messages in the stream: subjects `tracer.NODE.events` whose first
/// message an agent's segment could have begun with, sorted, at most [`MAX_NODES`].
pub async fn nodes(server: &str) -> Result<NodeList, NatsError> {
    let (js, watch) = jetstream_reader(server, None).await?;
    unless_violated(server, &watch, nodes_of(&js)).await
}

async fn nodes_of(js: &jetstream::Context) -> Result<NodeList, NatsError> {
    use futures_util::StreamExt;
    let stream = open_stream(js).await?;
    let mut subjects = stream
        .info_with_subjects("tracer.*.events")
        .await
        .map_err(js_err("listing the subjects"))?;
    let mut named = Vec::new();
    let mut list = NodeList::default();
    while let Some(s) = subjects.next().await {
        let (subject, _) = s.map_err(js_err("listing the subjects"))?;
        let node = subject
            .strip_prefix("tracer.")
            .and_then(|s| s.strip_suffix(".events"));
        match node.filter(|n| check_node(n).is_ok()) {
            Some(n) if named.len() < MAX_SUBJECTS => named.push(n.to_string()),
            _ => list.not_agents += 1,
        }
    }
    let looks = named.into_iter().map(|node| {
        let stream = &stream;
        async move {
            let first = stream
                .get_first_raw_message_by_subject(subject(&node), 0)
                .await;
            (first.is_ok_and(|m| agent_began(&node, &m)), node)
        }
    });
    let mut looked: Vec<(bool, String)> = futures_util::stream::iter(looks)
        .buffer_unordered(FIRST_LOOKS)
        .collect()
        .await;
    looked.sort_by(|a, b| a.1.cmp(&b.1));
    for (agents, node) in looked {
        match (agents, list.nodes.len() < MAX_NODES) {
            (false, _) => list.not_agents += 1,
            (true, true) => list.nodes.push(node),
            (true, false) => list.left_out += 1,
        }
    }
    Ok(list)
}

/// Whether `m`, the first message stored for `node`, is one an agent of that node publishes:
/// a message of one of its segments (`NODE-RUN-N`); when it is a segment's header, a trace
/// file's magic and a good signature ([`sign`]); any message of a segment when the stream's
/// limits dropped its first ones (the chain and signature are checked when it is read).
fn agent_began(node: &str, m: &jetstream::message::StreamMessage) -> bool {
    let get = |name: &str| m.headers.get(name).map(|v| v.as_str().to_string());
    let ours = get(SEGMENT_HEADER).is_some_and(|id| {
        id.strip_prefix(node)
            .and_then(|rest| rest.strip_prefix('-'))
            .is_some_and(|rest| !rest.is_empty())
    });
    match get(PART_HEADER).as_deref() {
        Some("header") => {
            ours && m.payload.starts_with(&crate::tracefile::MAGIC) && {
                // Signed by the node's trusted key when the operator gave one, else by any key:
                // anyone can shape a header, nobody else can sign one.
                let (key, sig) = (get(sign::KEY_HEADER), get(sign::SIGNATURE_HEADER));
                let segment = get(SEGMENT_HEADER).unwrap_or_default();
                let nonce = get(NONCE_HEADER).unwrap_or_default();
                let link = get(LINK_HEADER).and_then(|l| chain::from_hex(&l));
                let st = sign::header_statement(&segment, &nonce, link.as_ref(), &m.payload);
                let trusted = sign::trusted().and_then(|t| t.get(node));
                key.zip(sig).is_some_and(|(k, s)| {
                    trusted.is_none_or(|t| t == k) && sign::verify(&k, &st, &s)
                })
            }
        }
        Some("frames" | "heartbeat") => ours,
        _ => false,
    }
}

/// How far a reader reads a node's stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Follow {
    /// From its start to the last message stored when it was opened.
    UntilNow,
    /// From its start, then every message published after, until the reader is dropped.
    Forever,
}

/// What the reading thread hands over.
pub(crate) enum Fed {
    /// The stream's last sequence number for the node when reading began.
    Start(u64),
    Msg(Received),
    Failed(NatsError),
}

/// Other segments' messages in a row, with none of the one being read, after which that one
/// is taken to have ended (its agent restarted): about six seconds of an agent's messages.
pub(crate) const QUIET_MESSAGES: usize = 32;
/// Payload bytes of other segments held while one is read.
const HELD_BYTES: usize = 16 << 20;

/// Messages held between the reading thread and the reader: a few, so a node's stream is
/// streamed, never held whole (messages are at most [`MAX_MESSAGE`]).
const FEED_MESSAGES: usize = 64;

/// A node's messages in stream order, read by a thread of its own into a small bounded
/// channel, then cut back into segments: [`Feed::next_segment`] skips to the next segment's
/// first message, [`SegmentRead`] reads one segment's bytes as a trace file.
pub struct Feed {
    rx: std::sync::mpsc::Receiver<Fed>,
    /// A message taken but not used yet: the first one of the next segment.
    pending: Option<Received>,
    /// The last message stored when reading began.
    last_at_open: u64,
    /// That message has been handed over.
    history_read: bool,
    on_caught_up: Option<Box<dyn FnOnce() + Send>>,
    notes: Notes,
    skipped: u64,
    /// Other segments' messages met while a segment was being read and not (yet) known to
    /// end it, read after it (see [`SegmentRead`]); at most [`HELD_BYTES`] of payload.
    held: std::collections::VecDeque<Received>,
    /// Their payload bytes.
    held_bytes: usize,
    /// Other segments' messages since the segment being read had one of its own.
    since_own: usize,
    /// Messages taken but to be read again, before the stream's next ones.
    requeue: std::collections::VecDeque<Received>,
    /// Messages of a segment that came after another segment had started.
    interleaved: u64,
    /// Segments whose start is not a trace file's.
    bad_segments: u64,
    /// A segment's messages without its nonce (dropped).
    wrong_nonce: u64,
    /// A segment's messages with its nonce but not a link of its chain, or other bytes under
    /// an index already read (dropped).
    forged: u64,
    /// A segment's messages read again with the same bytes (skipped).
    duplicates: u64,
    /// Told each heartbeat the chain proves ([`Feed::on_heartbeat`]).
    heartbeats: Option<heartbeat::HeartbeatFn>,
    /// The node read and the key it is pinned to ([`sign`]).
    keys: sign::Pin,
    /// Segments not signed by the node's key, or heartbeats not signed by their segment's
    /// (not read).
    forged_signed: u64,
}

/// Where a following reader says how its connection fares (a lost server, and its return).
pub type NoteFn = Box<dyn Fn(String) + Send>;

/// The note handler, set by the reader's user after the thread started.
type Notes = Arc<Mutex<Option<NoteFn>>>;

/// Tells the note handler, if one is set.
fn say(notes: &Notes, text: String) {
    log::debug!("{text}");
    if let Some(f) = notes.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
        f(text);
    }
}

/// A shared handle: the reader of the current segment and whoever opens the next one.
pub type SharedFeed = Arc<Mutex<Feed>>;

pub(crate) fn lock(feed: &SharedFeed) -> std::sync::MutexGuard<'_, Feed> {
    feed.lock().unwrap_or_else(|e| e.into_inner())
}

impl Feed {
    /// Starts reading `src` (one node) and waits until the stream answered: a missing stream,
    /// an empty subject or an unreachable server is an error here.
    pub fn open(src: &NatsSource, follow: Follow) -> Result<Feed, NatsError> {
        let (tx, rx) = std::sync::mpsc::sync_channel(FEED_MESSAGES);
        let src = src.clone();
        let node = src.node.clone();
        let notes = Notes::default();
        let pump_notes = notes.clone();
        std::thread::Builder::new()
            .name("nats-reader".into())
            .spawn(move || pump_thread(src, follow, tx, pump_notes))
            .map_err(|error| NatsError::Start {
                what: "starting the reader",
                error,
            })?;
        match rx.recv() {
            Ok(Fed::Start(last)) => Ok(Feed {
                notes,
                keys: sign::Pin::for_node(&node),
                ..Feed::new(rx, last)
            }),
            Ok(Fed::Failed(e)) => Err(e),
            _ => Err(NatsError::ReaderStopped),
        }
    }

    pub(crate) fn new(rx: std::sync::mpsc::Receiver<Fed>, last_at_open: u64) -> Feed {
        Feed {
            rx,
            pending: None,
            last_at_open,
            history_read: false,
            on_caught_up: None,
            notes: Notes::default(),
            skipped: 0,
            held: std::collections::VecDeque::new(),
            held_bytes: 0,
            since_own: 0,
            requeue: std::collections::VecDeque::new(),
            interleaved: 0,
            bad_segments: 0,
            wrong_nonce: 0,
            forged: 0,
            duplicates: 0,
            heartbeats: None,
            keys: sign::Pin::default(),
            forged_signed: 0,
        }
    }

    /// Reads as node `node`'s feed: its key pinned as [`sign::Pin::for_node`] says.
    pub fn as_node(mut self, node: &str) -> Feed {
        self.keys = sign::Pin::for_node(node);
        self
    }

    /// Segments under another key than the node's (or unsigned once it is pinned), and
    /// heartbeats not signed by their segment's key: never read as the node's.
    pub fn forged_signed(&self) -> u64 {
        self.forged_signed
    }

    /// A feed of messages already at hand (tests, and anything that has them in memory), as
    /// if the stream's last message had been `last_at_open` when it was opened.
    pub fn from_messages(msgs: Vec<Received>, last_at_open: u64) -> Feed {
        let (tx, rx) = std::sync::mpsc::sync_channel(msgs.len());
        for m in msgs {
            let _ = tx.send(Fed::Msg(m));
        }
        Feed::new(rx, last_at_open)
    }

    /// Calls `f` once every message stored at opening was read and the reader asks for more:
    /// then every event they hold was read too (a trace reader asks for bytes only after it
    /// handed over the frame before).
    pub fn on_caught_up(&mut self, f: Box<dyn FnOnce() + Send>) {
        self.on_caught_up = Some(f);
    }

    /// Calls `f` (on the reading thread: it must not block) when a following reader loses
    /// the server and when it reads again.
    pub fn on_note(&mut self, f: NoteFn) {
        *self.notes.lock().unwrap_or_else(|e| e.into_inner()) = Some(f);
    }

    /// Messages skipped: frames whose segment's first message is not in the stream (the
    /// stream's limits dropped it) or that carried no segment headers.
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// Messages of a segment that came after another segment's first message: two agents
    /// publishing as one node, or messages forged by someone with publish rights on the
    /// node's subject. They were read with their own segment.
    pub fn interleaved(&self) -> u64 {
        self.interleaved
    }

    /// Counts a segment whose start is not a trace file's (the reader skips it).
    pub fn bad_segment(&mut self) {
        self.bad_segments += 1;
    }

    /// Segments skipped because their start is not a trace file's.
    pub fn bad_segments(&self) -> u64 {
        self.bad_segments
    }

    /// Messages under a segment's id without its nonce ([`NONCE_HEADER`]): dropped, as
    /// published by someone who could not read the stream.
    pub fn wrong_nonce(&self) -> u64 {
        self.wrong_nonce
    }

    /// Messages under a segment's id and nonce that do not carry the next link of its proof
    /// chain ([`chain`]), or carry other bytes under an index already read: dropped, as
    /// published by someone who reads the stream but is not its agent.
    pub fn forged(&self) -> u64 {
        self.forged
    }

    /// Messages of a segment read again with the same bytes (a publish stored twice): skipped.
    pub fn duplicates(&self) -> u64 {
        self.duplicates
    }

    /// The next message; `None` at the end (the thread stopped: all read, or no follow).
    fn recv(&mut self) -> Option<Result<Received, NatsError>> {
        if let Some(m) = self.pending.take() {
            return Some(Ok(m));
        }
        if let Some(m) = self.requeue.pop_front() {
            return Some(Ok(m));
        }
        // Stored messages held for after the segment being read are not read yet.
        let stored_held = self.held.iter().any(|m| m.seq <= self.last_at_open);
        if self.history_read && !stored_held {
            if let Some(f) = self.on_caught_up.take() {
                f();
            }
        }
        match self.rx.recv().ok()? {
            Fed::Msg(m) => {
                self.history_read |= m.seq >= self.last_at_open;
                Some(Ok(m))
            }
            Fed::Failed(e) => Some(Err(e)),
            Fed::Start(_) => self.recv(),
        }
    }

    /// Skips to the first message of the next segment and returns a reader of it; `None`
    /// at the end, or with `stored_only` when the messages stored at opening hold none.
    pub fn next_segment(
        feed: &SharedFeed,
        stored_only: bool,
    ) -> Option<Result<SegmentRead, NatsError>> {
        let mut f = lock(feed);
        // What the last segment held is read first: a segment abandoned before its end (a
        // header the reader could not use) never reached the read that releases it.
        f.release_held(None);
        loop {
            if stored_only && f.history_read && f.pending.is_none() && f.requeue.is_empty() {
                return None;
            }
            match f.recv()? {
                Ok(m) if m.starts_segment() && !f.signed_by_node(&m) => f.forged_signed += 1,
                Ok(m) if m.starts_segment() => {
                    return Some(Ok(SegmentRead {
                        key: m.signed.as_ref().map(|(k, _)| k.clone()),
                        feed: feed.clone(),
                        verifier: m.link.map(|l| chain::Verifier::new(l, &m.payload)),
                        id: m.segment,
                        nonce: m.nonce,
                        buf: m.payload,
                    }));
                }
                Ok(_) => f.skipped += 1,
                Err(e) => return Some(Err(e)),
            }
        }
    }
}

/// One segment's bytes, message after message: a trace file for [`crate::TraceReader`]. It
/// ends where the next segment starts (or the feed ends).
pub struct SegmentRead {
    feed: SharedFeed,
    id: String,
    /// Its first message's nonce: every other message of it must carry the same (`None`: an
    /// agent before nonces, read unchecked).
    nonce: Option<String>,
    /// Its first message's link: every other message of it must prove itself against it
    /// (`None`: an agent before proof chains, read with the nonce check alone).
    verifier: Option<chain::Verifier>,
    /// The key that signed its header message: its heartbeats must be signed by it too
    /// (`None`: an agent before signatures).
    key: Option<String>,
    buf: Bytes,
}

impl SegmentRead {
    /// The segment's id (`NODE-RUN-N`).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Whether `next` is the segment this agent run starts after this one
    /// (`NODE-RUN-N` → `NODE-RUN-N+1`): a rotation, which ends this segment at once.
    fn is_successor(&self, next: &str) -> bool {
        let split = |id: &str| {
            let (run, n) = id.rsplit_once('-')?;
            Some((run.to_string(), n.parse::<u64>().ok()?))
        };
        matches!((split(&self.id), split(next)), (Some((a, n)), Some((b, m))) if a == b && m == n + 1)
    }

    /// What a message means for this segment: more of its bytes, its end, or neither (held
    /// to be read after it). This run's next segment ends it at once. Other segments'
    /// messages are held while this one goes on: its own messages after them mean the two are
    /// interleaved (forged, or two agents on one node name), counted, and this one is read to
    /// its end whatever was published between; [`QUIET_MESSAGES`] others in a row with none
    /// of its own mean it ended (an agent restarted).
    fn consider(&mut self, f: &mut Feed, m: Received) -> Option<Bytes> {
        if m.segment == self.id && !m.starts_segment() {
            if self.nonce.is_some() && m.nonce != self.nonce {
                // Its id, not its nonce: someone who read the id elsewhere (or guessed it).
                f.wrong_nonce += 1;
                return Some(Bytes::new());
            }
            if m.part == Some(Part::Heartbeat) && self.verifier.is_none() {
                // An agent without a chain sends no heartbeat: someone else's, never read.
                f.forged += 1;
                return Some(Bytes::new());
            }
            if let Some(v) = &mut self.verifier {
                match v.check(m.index, m.link, &m.payload) {
                    chain::Verdict::Next => {}
                    chain::Verdict::Duplicate => {
                        f.duplicates += 1;
                        return Some(Bytes::new());
                    }
                    chain::Verdict::Forged => {
                        // Its id and nonce (read from the stream), not its agent's next link.
                        f.forged += 1;
                        return Some(Bytes::new());
                    }
                }
            }
            f.since_own = 0;
            if !f.held.is_empty() {
                f.interleaved += 1;
            }
            if m.part == Some(Part::Heartbeat) {
                // Proven by the chain, as every message of the segment: never trace bytes;
                // the node's word only when its segment's key signed it.
                if sign::heartbeat_signed(self.key.as_deref(), &self.id, &m) {
                    f.heard(&self.id, &m.payload);
                } else {
                    f.forged_signed += 1;
                }
                return Some(Bytes::new());
            }
            return Some(m.payload);
        }
        if m.starts_segment() && self.is_successor(&m.segment) {
            f.pending = Some(m);
            f.release_held(None);
            return None;
        }
        f.since_own += 1;
        if f.since_own > QUIET_MESSAGES {
            f.release_held(Some(m));
            return None;
        }
        f.hold(m);
        Some(Bytes::new())
    }
}

impl Feed {
    /// Keeps another segment's message for later; past [`HELD_BYTES`] the oldest held ones
    /// are let go and counted as skipped (an interleaver cannot make a reader hold a stream).
    fn hold(&mut self, m: Received) {
        self.held_bytes += m.payload.len();
        self.held.push_back(m);
        while self.held_bytes > HELD_BYTES {
            let Some(old) = self.held.pop_front() else {
                break;
            };
            self.held_bytes -= old.payload.len();
            self.skipped += 1;
        }
    }

    /// The segment being read ended: the held messages (then `next`) are read before
    /// anything still queued.
    fn release_held(&mut self, next: Option<Received>) {
        let mut q: std::collections::VecDeque<Received> = self.held.drain(..).collect();
        q.extend(next);
        q.extend(self.requeue.drain(..));
        self.requeue = q;
        self.held_bytes = 0;
        self.since_own = 0;
    }
}

impl std::io::Read for SegmentRead {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        while self.buf.is_empty() {
            let feed = self.feed.clone();
            let mut f = lock(&feed);
            let m = match f.recv() {
                None => {
                    // The end: held messages are read next.
                    f.release_held(None);
                    return Ok(0);
                }
                Some(Err(e)) => return Err(std::io::Error::other(e)),
                Some(Ok(m)) => m,
            };
            match self.consider(&mut f, m) {
                Some(bytes) => self.buf = bytes,
                None => return Ok(0),
            }
        }
        let n = out.len().min(self.buf.len());
        out[..n].copy_from_slice(&self.buf[..n]);
        self.buf = self.buf.slice(n..);
        Ok(n)
    }
}

/// The reading thread: a runtime of its own, so callers need none.
fn pump_thread(
    src: NatsSource,
    follow: Follow,
    tx: std::sync::mpsc::SyncSender<Fed>,
    notes: Notes,
) {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let _ = tx.send(Fed::Failed(NatsError::Start {
                what: "starting a runtime",
                error: e,
            }));
            return;
        }
    };
    if let Err(e) = rt.block_on(pump(&src, follow, &tx, &notes)) {
        let _ = tx.send(Fed::Failed(e));
    }
}

/// Longest pull a reader makes (see [`pump`]).
const PULL_EXPIRES: Duration = Duration::from_secs(4);

/// How long a one-off read waits for the next message of a stream that holds more.
const QUIET_END: Duration = Duration::from_secs(15);

/// Hands `m` over without blocking the runtime the client's connection runs on.
async fn hand_over(tx: &std::sync::mpsc::SyncSender<Fed>, mut m: Fed) -> bool {
    loop {
        match tx.try_send(m) {
            Ok(()) => return true,
            Err(std::sync::mpsc::TrySendError::Full(back)) => {
                m = back;
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            Err(std::sync::mpsc::TrySendError::Disconnected(_)) => return false,
        }
    }
}

/// The stream's last sequence number for `node` now, and an ordered consumer of the node's
/// messages from the start; `None` when the node has none.
async fn ordered_messages(
    js: &jetstream::Context,
    node: &str,
) -> Result<Option<(u64, jetstream::consumer::pull::Ordered)>, NatsError> {
    let subject = subject(node);
    let stream = open_stream(js).await?;
    let last = match stream.get_last_raw_message_by_subject(&subject).await {
        Ok(m) => m.sequence,
        Err(e) if e.kind() == stream::LastRawMessageErrorKind::NoMessageFound => return Ok(None),
        Err(e) => return Err(js_err("finding the last message")(e)),
    };
    let config = jetstream::consumer::pull::OrderedConfig {
        filter_subject: subject,
        deliver_policy: jetstream::consumer::DeliverPolicy::All,
        // Pulls of at most 4 s, so idle heartbeats every 2 s: a consumer a restarted
        // server lost is recreated after two missed ones, not the client's 30 s.
        max_expires: PULL_EXPIRES,
        ..Default::default()
    };
    let consumer = create_consumer(&stream, config).await?;
    let msgs = consumer.messages().await.map_err(js_err("reading"))?;
    Ok(Some((last, msgs)))
}

/// How long a reader waits for each answer to a JetStream request before asking again, and
/// so how many times it asks (30 s in all) before it gives up. nats-server leaves two
/// requests unanswered for a while in a cluster that just lost a server:
/// - a stream's info and consumer requests while the stream's group elects a new leader;
/// - the creation of an ordered (R1, ephemeral) consumer that it placed on the lost server:
///   nats-server before 2.9.12 (Debian 12 ships 2.9.10) picks any of the stream's peers, a
///   dead one too (`createGroupForConsumer` in server/jetstream_cluster.go), so one
///   creation in three times out while one of three servers is down, and each new request
///   is placed anew.
///
/// Short first waits make many tries (a lost placement costs a second, not the client's
/// 5 s); the later, longer ones leave a slow server time to answer.
pub const LEADER_WAITS: [Duration; 9] = {
    const fn s(n: u64) -> Duration {
        Duration::from_secs(n)
    }
    [s(1), s(1), s(2), s(2), s(4), s(5), s(5), s(5), s(5)]
};

/// `request()`, asked again (once per [`LEADER_WAITS`]) while it goes unanswered: within
/// that wait, or with an error `timed_out` says is a timeout; any other error at once, as
/// `what` failed.
async fn while_unanswered<T, E, Fut>(
    what: &'static str,
    timed_out: fn(&E) -> bool,
    mut request: impl FnMut() -> Fut,
) -> Result<T, NatsError>
where
    Fut: std::future::Future<Output = Result<T, E>>,
    E: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    for wait in LEADER_WAITS {
        match tokio::time::timeout(wait, request()).await {
            Ok(Ok(v)) => return Ok(v),
            Ok(Err(e)) if !timed_out(&e) => return Err(js_err(what)(e)),
            // Dropping the request abandons it; a consumer the server creates after all
            // goes after its inactive threshold (30 s) unread.
            Ok(Err(_)) | Err(_) => {}
        }
    }
    Err(NatsError::Unanswered(what))
}

/// `stream.create_consumer(config)`, tried again while the request times out.
async fn create_consumer(
    stream: &stream::Stream,
    config: jetstream::consumer::pull::OrderedConfig,
) -> Result<jetstream::consumer::Consumer<jetstream::consumer::pull::OrderedConfig>, NatsError> {
    while_unanswered(
        "creating a consumer",
        |e: &stream::ConsumerError| e.kind() == stream::ConsumerErrorKind::TimedOut,
        || stream.create_consumer(config.clone()),
    )
    .await
}

/// Reads the node's messages in order into `tx` until the end (or forever), or the reader
/// is dropped.
async fn pump(
    src: &NatsSource,
    follow: Follow,
    tx: &std::sync::mpsc::SyncSender<Fed>,
    notes: &Notes,
) -> Result<(), NatsError> {
    let following = (follow == Follow::Forever).then(|| notes.clone());
    let (js, watch) = jetstream_reader(&src.server, following).await?;
    unless_violated(&src.server, &watch, pump_from(&js, src, follow, tx, notes)).await
}

/// [`pump`] once connected.
async fn pump_from(
    js: &jetstream::Context,
    src: &NatsSource,
    follow: Follow,
    tx: &std::sync::mpsc::SyncSender<Fed>,
    notes: &Notes,
) -> Result<(), NatsError> {
    use futures_util::StreamExt;
    let (last, mut msgs) = match ordered_messages(js, &src.node).await? {
        Some(found) => found,
        None => return Err(NatsError::NoData(src.node.clone())),
    };
    if !hand_over(tx, Fed::Start(last)).await {
        return Ok(());
    }
    let url = src.with_node(&src.node);
    let mut troubled = false;
    loop {
        let next = match follow {
            Follow::Forever => msgs.next().await,
            // A one-off read never waits for a message that may not come.
            Follow::UntilNow => tokio::time::timeout(QUIET_END, msgs.next())
                .await
                .map_err(|_| NatsError::Quiet(QUIET_END))?,
        };
        let Some(m) = next else { break };
        let m = match m {
            Ok(m) => m,
            // The ordered consumer recreates itself after a server restart or a missed
            // heartbeat; a follower waits for it (saying so once), a one-off read reports it.
            Err(e) if follow == Follow::Forever => {
                if !std::mem::replace(&mut troubled, true) {
                    say(notes, format!("{url}: {e}; still following"));
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
                continue;
            }
            Err(e) => return Err(js_err("reading")(e)),
        };
        if std::mem::take(&mut troubled) {
            say(notes, format!("{url}: reading again"));
        }
        let (seq, pending) = m
            .info()
            .map(|i| (i.stream_sequence, i.pending))
            .map_err(js_err("reading"))?;
        if !hand_over(tx, Fed::Msg(received(&m, seq))).await {
            return Ok(());
        }
        // Up to the last message stored at the start, or to the end of the stream when the
        // stream's limits removed that one meanwhile.
        if follow == Follow::UntilNow && (seq >= last || pending == 0) {
            return Ok(());
        }
    }
    Ok(())
}

/// Runs `f` to completion on a runtime of its own, on a thread of its own (so callers inside
/// a runtime can use it too).
pub fn block_on<T: Send + 'static>(
    f: impl std::future::Future<Output = Result<T, NatsError>> + Send + 'static,
) -> Result<T, NatsError> {
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|error| NatsError::Start {
                what: "starting a runtime",
                error,
            })?;
        rt.block_on(f)
    })
    .join()
    .unwrap_or_else(|_| Err(NatsError::ReaderStopped))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::tracefile::tests::sample_header;

    #[test]
    fn sources_parse_and_bound_the_node() {
        assert_eq!(
            NatsSource::parse("nats://127.0.0.1:4222/n1").unwrap(),
            NatsSource {
                server: "nats://127.0.0.1:4222".into(),
                node: "n1".into()
            }
        );
        assert!(NatsSource::parse("nats://127.0.0.1:4222").is_err());
        assert!(NatsSource::parse("nats://h/a.b").is_err());
        assert!(NatsSource::parse("nats://h/a>").is_err());
        assert!(NatsSource::parse("nats://h/").is_err());
        assert!(NatsSource::parse(&format!("nats://h/{}", "a".repeat(129))).is_err());
        assert!(NatsSource::parse("nats://u@h/n").is_err());
        let all = NatsSource::parse("nats://h:1/*").unwrap();
        assert!(all.is_all_nodes());
        assert_eq!(all.with_node("n2"), "nats://h:1/n2");
    }

    #[test]
    fn a_cluster_is_a_list_of_servers() {
        let want = NatsSource {
            server: "nats://a:1,b:2,c:3".into(),
            node: "n1".into(),
        };
        assert_eq!(NatsSource::parse("nats://a:1,b:2,c:3/n1").unwrap(), want);
        assert_eq!(
            NatsSource::parse("nats://a:1,nats://b:2,nats://c:3/n1").unwrap(),
            want
        );
        // The node's URL of a list reads back as the same list.
        assert_eq!(NatsSource::parse(&want.with_node("n1")).unwrap(), want);
        for bad in ["nats://a:1,,b:2/n1", "nats://a:1,/n1", "nats://a:1,u@b/n1"] {
            assert!(NatsSource::parse(bad).is_err(), "{bad}");
        }
        let many = vec!["h:1"; MAX_SERVERS + 1].join(",");
        assert!(NatsSource::parse(&format!("nats://{many}/n1")).is_err());
        assert_eq!(
            servers("nats://a:1, b:2,tls://c:3,d:4"),
            ["nats://a:1", "nats://b:2", "tls://c:3", "tls://d:4"]
        );
        assert_eq!(
            servers(&want.server),
            ["nats://a:1", "nats://b:2", "nats://c:3"]
        );
    }

    #[test]
    fn other_replicas_are_said_once() {
        assert_eq!(replicas_note(3, 3), None);
        // A stream of one copy reports 0 or 1.
        assert_eq!(replicas_note(0, 1), None);
        let line = replicas_note(1, 3).expect("said");
        assert!(line.contains("1 replica(s), not the 3 asked"), "{line}");
        assert_eq!(replicas_note(1, 3), None, "said again");
        assert!(replicas_note(3, 1).is_some());
    }

    pub(crate) fn frames(n: u64) -> Outgoing {
        Outgoing {
            segment: "s".into(),
            part: Part::Frames,
            index: 1,
            nonce: 7,
            segment_nonce: "k".into(),
            link: None,
            payload: Bytes::new(),
            events: n,
            signed: None,
        }
    }

    #[test]
    fn message_ids_are_unpredictable() {
        let mut m = frames(0);
        m.renew_id();
        let (a, b) = (m.message_id(), {
            m.renew_id();
            m.message_id()
        });
        assert_ne!(a, b, "a renewed id repeats");
        assert!(a.starts_with("s-1-") && a.len() == "s-1-".len() + 16, "{a}");
        assert_ne!(random_id(), random_id());
        assert_eq!(random_id().len(), 32);
    }

    #[test]
    fn duplicates_in_a_row_back_off_to_a_bound_and_are_said_once_a_burst() {
        let mut d = Duplicates::default();
        let burst: Vec<(Duration, bool)> = (0..20).map(|_| d.more()).collect();
        assert_eq!(
            burst[0],
            (Duration::ZERO, true),
            "one duplicate goes again at once"
        );
        assert_eq!(burst[1], (Duration::from_millis(50), false));
        assert_eq!(burst[2].0, Duration::from_millis(100));
        assert!(burst.windows(2).all(|w| w[1].0 >= w[0].0), "{burst:?}");
        assert_eq!(burst[19], (MAX_BACKOFF, false), "bounded");
        assert_eq!(burst.iter().filter(|(_, say)| *say).count(), 1);
        d.stored();
        assert_eq!(d.more(), (Duration::ZERO, true), "a new burst");
        assert_eq!(d.total(), 21);
        // However long the burst, the wait stays bounded (no overflow).
        for _ in 0..100_000 {
            d.more();
        }
        assert_eq!(d.more().0, MAX_BACKOFF);
    }

    #[test]
    fn after_a_lost_stream_the_current_segment_is_readable_again_and_orphans_go() {
        let msg = |seg: &str, part: Part, index: u64, events: u64| Outgoing {
            segment: seg.into(),
            part,
            index,
            events,
            ..frames(0)
        };
        let mut o = Outbox::new(100);
        // Segment a's last frames (its header stored, now lost), b's header still queued
        // with a frame, then c (current) whose header was stored and lost.
        o.push(msg("a", Part::Frames, 5, 3));
        o.push(msg("b", Part::Header, 0, 0));
        o.push(msg("b", Part::Frames, 1, 2));
        o.push(msg("c", Part::Frames, 4, 7));
        let head = [msg("c", Part::Header, 0, 0)];
        assert_eq!(o.after_stream_lost("c", &head), 3, "a's frames go");
        let left: Vec<(String, u64)> = std::iter::from_fn(|| o.pop())
            .map(|m| (m.segment, m.index))
            .collect();
        let want = [("c", 0), ("b", 0), ("b", 1), ("c", 4)];
        assert_eq!(left, want.map(|(s, i)| (s.to_string(), i)));
        assert_eq!(o.buffered_events(), 0);
        // A header still queued is not queued twice.
        o.push(head[0].clone());
        assert_eq!(o.after_stream_lost("c", &head), 0);
        assert_eq!(o.len(), 1);
    }

    #[test]
    fn outbox_keeps_what_fits_and_counts_the_rest() {
        let mut o = Outbox::new(10);
        assert!(o.push(frames(6)));
        assert!(!o.push(frames(5)));
        assert!(o.push(frames(4)));
        let mut h = frames(0);
        h.part = Part::Header;
        assert!(o.push(h));
        assert_eq!((o.buffered_events(), o.dropped_events()), (10, 5));
        assert_eq!(o.dropped_messages(), 1);
        assert_eq!(o.pop().unwrap().events, 6);
        assert!(o.push(frames(5)));
        assert_eq!(o.buffered_events(), 9);
        assert_eq!(o.len(), 3);
        // Pieces of one flush go together: none of them when the events do not fit.
        let mut piece = frames(0);
        piece.index = 7;
        assert!(!o.push_all(vec![piece, frames(2)]));
        assert_eq!(
            (o.len(), o.dropped_messages(), o.dropped_events()),
            (3, 3, 7)
        );
        o.drop_front();
        assert_eq!(
            (o.len(), o.dropped_events(), o.buffered_events()),
            (2, 11, 5)
        );
    }

    pub(crate) fn as_received(m: &Outgoing) -> Received {
        Received {
            segment: m.segment.clone(),
            part: Some(m.part),
            index: Some(m.index),
            seq: 0,
            nonce: Some(m.segment_nonce.to_string()),
            link: m.link,
            signed: m.signed.as_ref().map(|(k, s)| (k.to_string(), s.clone())),
            payload: m.payload.clone(),
        }
    }

    /// Sequence numbers from 1, as a stream holding only `msgs` gives them.
    pub(crate) fn numbered(msgs: &mut [Received]) {
        for (i, m) in msgs.iter_mut().enumerate() {
            m.seq = i as u64 + 1;
        }
    }

    /// Segment `id`, still open: its header messages, then one frames message per event.
    pub(crate) fn flushed_per_event(id: &str, evs: &[crate::Event]) -> Vec<Received> {
        segment_of(id, evs, false)
    }

    /// Segment `id`: its header messages, one frames message per event, and with `end` its
    /// last message with the end record.
    pub(crate) fn segment_of(id: &str, evs: &[crate::Event], end: bool) -> Vec<Received> {
        let (mut seg, head) = Segment::start(id.into(), &sample_header()).unwrap();
        let mut msgs: Vec<Received> = head.iter().map(as_received).collect();
        for ev in evs {
            seg.write_event(ev).unwrap();
            msgs.extend(seg.flush(false).unwrap().iter().map(as_received));
        }
        if end {
            msgs.extend(seg.finish().unwrap().iter().map(as_received));
        }
        msgs
    }

    #[test]
    fn what_an_abandoned_segment_held_is_read_next() {
        use crate::synth::sample_events;
        let evs = sample_events();
        // Segment a's header, another run's whole segment b between a's messages, a's frames.
        let mut a = flushed_per_event("n1-aaaa-0", &evs);
        let b = segment_of("n1-bbbb-0", &evs[..1], true);
        let after = a.split_off(1);
        let mut msgs = a;
        msgs.extend(b);
        msgs.extend(after);
        numbered(&mut msgs);
        let last = msgs.len() as u64;
        let feed: SharedFeed = Arc::new(Mutex::new(Feed::from_messages(msgs, last)));
        let mut first = Feed::next_segment(&feed, true).unwrap().unwrap();
        assert_eq!(first.id(), "n1-aaaa-0");
        // Two reads: a's header, then (holding b) a's first frames. Then a is abandoned, as a
        // reader does with a segment whose header it cannot use.
        let mut buf = vec![0u8; 1 << 20];
        for _ in 0..2 {
            assert!(std::io::Read::read(&mut first, &mut buf).unwrap() > 0);
        }
        assert!(
            !lock(&feed).held.is_empty(),
            "b was not held while a was read"
        );
        drop(first);
        let next = Feed::next_segment(&feed, true)
            .expect("b is read next")
            .unwrap();
        assert_eq!(next.id(), "n1-bbbb-0");
    }

    /// A server that answers the handshake's INFO and then sends `then`, and holds on.
    async fn hostile_server(then: &'static [u8]) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut c, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let info = b"INFO {\"server_id\":\"x\",\"version\":\"2.10.0\",\"proto\":1,\"headers\":true,\"max_payload\":1048576}\r\n";
                    let _ = c.write_all(info).await;
                    let mut buf = [0u8; 4096];
                    let _ = c.read(&mut buf).await;
                    // The line, or message, a megabyte at a time without its end.
                    for _ in 0..64 {
                        if c.write_all(then).await.is_err() {
                            return;
                        }
                        let _ = c.write_all(&[b'A'; 1 << 20]).await;
                    }
                    tokio::time::sleep(Duration::from_secs(60)).await;
                });
            }
        });
        format!("nats://{addr}")
    }

    /// A server whose INFO line never ends (64 MiB of it, then it holds on).
    async fn endless_info_server() -> std::net::SocketAddr {
        use tokio::io::AsyncWriteExt;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut c, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let _ = c.write_all(b"INFO {\"server_id\":\"").await;
                    for _ in 0..64 {
                        if c.write_all(&[b'A'; 1 << 20]).await.is_err() {
                            return;
                        }
                    }
                    tokio::time::sleep(Duration::from_secs(60)).await;
                });
            }
        });
        addr
    }

    #[tokio::test]
    async fn every_url_form_goes_through_the_guard() {
        let addr = endless_info_server().await;
        for url in [
            format!("nats://{addr}"),
            format!("nats://u:p@{addr}"),
            format!("nats://s3cret@{addr}"),
            format!("nats://{addr}?x=1"),
            format!("nats://u:p@{addr}?x=1"),
        ] {
            let r =
                tokio::time::timeout(Duration::from_secs(20), connect(&url, FirstConnect::Fail))
                    .await;
            match r.expect("the connection was cut in time") {
                Err(e @ NatsError::Protocol { .. }) => {
                    let text = e.to_string();
                    assert!(
                        text.contains("protocol line longer") && !text.contains('\n'),
                        "{url}: {text}"
                    );
                }
                Err(e) => panic!("{url}: not cut by the guard: {e}"),
                Ok(_) => panic!("{url}: connected"),
            }
        }
        // Several servers in one string: refused in one line, never connected to.
        let several = format!("nats://{addr},nats://{addr}");
        let e = connect(&several, FirstConnect::Fail).await.err().unwrap();
        assert!(!e.to_string().contains('\n'), "{e}");
    }

    #[tokio::test]
    async fn a_server_sending_an_endless_line_or_a_huge_message_is_cut_off_and_named() {
        for (then, want) in [
            (&b"-ERR "[..], guard::Violation::LongLine),
            (
                &b"MSG a 1 99999999999\r\n"[..],
                guard::Violation::BigMessage(99_999_999_999),
            ),
        ] {
            let server = hostile_server(then).await;
            let r = tokio::time::timeout(Duration::from_secs(20), nodes(&server)).await;
            let r = r.map(|r| r.map(|l| l.nodes));
            match r.expect("the reader gave up in time") {
                Err(NatsError::Protocol { violation, .. }) => assert_eq!(violation, want),
                other => panic!("{other:?}"),
            }
        }
    }
}
