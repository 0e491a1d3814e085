//! The fleet (feature `nats`): one row per node that published to a NATS server — its
//! agent's last word, `live` or `silent since`, the pods it ran then, its restarts and deaths
//! of late, and the outage it came back from (docs/nats.md, `tracer nodes`).
//!
//! Each node's stream is read as any `nats://HOST:PORT/NODE` recording is ([`Input`]): its
//! segments through the engine, the pods from the one pod model ([`PodFacts`]), the restarts
//! and deaths from the stories; its heartbeats ([`crate::nats::heartbeat`]), which the
//! segments' chains prove, give the agent's interval, counters and wall time. Everything a
//! stream says is hostile: names are escaped where they are printed, and what a row lists is
//! bounded.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;

use crate::clock;
use crate::input::{Input, InputError};
use crate::lineage::pod::PodFacts;
use crate::lineage::{stories, Engine, Phase};
use crate::nats::heartbeat::{self, Back, Heartbeat};
use crate::nats::{Feed, Follow, NatsError, NatsSource};

/// Pods listed per node at most; the rest are counted.
pub const MAX_PODS: usize = 64;
/// Containers listed per pod at most; the rest are counted.
pub const MAX_CONTAINERS: usize = 16;
/// Restarts and deaths listed per node at most (all are counted).
pub const MAX_ENDS: usize = 16;
/// The window restarts and deaths are counted in, unless told otherwise (`--window`).
pub const DEFAULT_WINDOW: Duration = Duration::from_secs(3600);

/// Why the fleet could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    /// Not `nats://HOST:PORT`.
    #[error("not a NATS server ({0}): expected nats://HOST:PORT[,HOST:PORT...]")]
    BadUrl(String),
    /// Listing the nodes failed.
    #[error(transparent)]
    Nats(#[from] NatsError),
}

/// One node's stream, read through the engine.
pub struct NodeRead {
    /// The node's name (a subject token: `[A-Za-z0-9_-]{1,128}`).
    pub node: String,
    /// The engine after its whole stream.
    pub engine: Engine,
    /// The wall time of its last event (ns since the epoch, on its segments' clock).
    pub last_event_ns: Option<u64>,
    /// Its last heartbeat, proven by its segment's chain.
    pub heartbeat: Option<Heartbeat>,
    /// The last outage its agent came back from.
    pub back: Option<Back>,
    /// What reading it said (skipped, forged messages...).
    pub notes: Vec<String>,
}

/// Reads a node's feed whole: its events through the engine, its heartbeats heard.
pub fn read_feed(node: &str, mut feed: Feed) -> Result<NodeRead, InputError> {
    type Heard = (Option<Heartbeat>, Option<Back>);
    let heard: Arc<Mutex<Heard>> = Arc::default();
    let h = heard.clone();
    feed.on_heartbeat(Box::new(move |_, beat| {
        let mut h = h.lock().unwrap_or_else(|e| e.into_inner());
        h.0 = Some(beat);
        if beat.back.is_some() {
            h.1 = beat.back;
        }
    }));
    let mut input = Input::from_feed(node, feed)?;
    let mut engine = input.seeded_engine();
    let clock = input.clock();
    let mut last_ts = None;
    let mut cut = false;
    while let Some(ev) = input.next_event() {
        match ev {
            Ok(ev) => {
                last_ts = Some(ev.ts_ns);
                engine.apply(&ev);
            }
            // A stream whose agent was killed mid-message: every whole frame is used.
            Err(e) if e.is_truncation() => {
                cut = true;
                break;
            }
            Err(e) => return Err(e),
        }
    }
    let (beat, back) = *heard.lock().unwrap_or_else(|e| e.into_inner());
    let mut notes = input.notes(cut);
    if let Some(crate::nats::sign::Pin {
        first_use: true,
        key: Some(k),
        ..
    }) = input.key_pin()
    {
        notes.push(format!(
            "key taken on first use: {} (pin it with --trust-keys)",
            crate::escape::escape(&k)
        ));
    }
    Ok(NodeRead {
        node: node.to_string(),
        last_event_ns: last_ts
            .and_then(|t| clock.epoch_ns(t))
            .and_then(|n| u64::try_from(n).ok()),
        engine,
        heartbeat: beat,
        back,
        notes,
    })
}

/// Reads node `node` of `server` (`nats://HOST:PORT`) up to its last message now.
pub fn read_node(server: &str, node: &str) -> Result<NodeRead, InputError> {
    let url = format!("{server}/{node}");
    let nats = |error| InputError::Nats {
        path: url.clone().into(),
        error,
    };
    let src = NatsSource::parse(&url).map_err(nats)?;
    let feed = Feed::open(&src, Follow::UntilNow).map_err(nats)?;
    read_feed(node, feed)
}

/// Whether a node is heard from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// A word within [`heartbeat::SILENT_AFTER`] of its intervals.
    Live,
    /// No word for longer: its agent, its node or the way to NATS is gone. Not a loss: an
    /// agent that comes back publishes what it buffered.
    Silent,
    /// No word with a time at all.
    Unknown,
}

/// A live pod and its containers at the node's last word.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PodRow {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// Its containers with a live process, by name (the sandbox is none of them).
    pub containers: Vec<String>,
    /// Containers left out past [`MAX_CONTAINERS`].
    pub containers_left_out: usize,
}

/// A restart or a death in the window.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EndRow {
    /// `restart` or `death`.
    pub phase: &'static str,
    /// `namespace/name` of its pod, when named.
    pub pod: Option<String>,
    /// The container's name, when named.
    pub container: Option<String>,
    /// When (RFC 3339 UTC).
    pub time: Option<String>,
}

/// An outage the agent came back from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BackRow {
    /// When it published again (RFC 3339 UTC, the agent's clock).
    pub since: Option<String>,
    /// When publishing started failing.
    pub down_since: Option<String>,
    /// Events it had buffered then, published after.
    pub buffered: u64,
    /// Events dropped for a full buffer during the outage.
    pub dropped: u64,
}

/// One node of the fleet.
#[derive(Clone, Debug, Serialize)]
pub struct NodeRow {
    /// The node's name.
    pub node: String,
    /// Live, silent or unknown, at the time the table was made.
    pub state: State,
    /// The wall time of its agent's last word: its last heartbeat or event (RFC 3339 UTC).
    pub last_word: Option<String>,
    /// The same, ns since the epoch.
    pub last_word_ns: Option<u64>,
    /// Its agent's heartbeat interval, ms (none: an agent before heartbeats; the default is
    /// assumed).
    pub interval_ms: Option<u64>,
    /// Its last heartbeat's counters.
    pub heartbeat: Option<Heartbeat>,
    /// The last outage its agent came back from.
    pub back: Option<BackRow>,
    /// Its live pods at its last word, by namespace and name.
    pub pods: Vec<PodRow>,
    /// Pods left out past [`MAX_PODS`].
    pub pods_left_out: usize,
    /// Container restarts in the window.
    pub restarts: usize,
    /// Container deaths in the window.
    pub deaths: usize,
    /// Those restarts and deaths, the first [`MAX_ENDS`].
    pub ends: Vec<EndRow>,
    /// Why it could not be read, if it could not.
    pub error: Option<String>,
    /// What reading it said.
    pub notes: Vec<String>,
}

fn time_text(ns: u64) -> Option<String> {
    clock::rfc3339(i128::from(ns))
}

/// How far ahead of the reader's clock a node's word may be dated: beyond it, a heartbeat, an
/// event or a story is no word of the node's (a forger's, or a clock far off), and is said.
pub const MAX_SKEW: Duration = Duration::from_secs(300);

/// The row of a node read, at wall time `now_ns`, counting restarts and deaths since
/// `window` before it; what is dated more than [`MAX_SKEW`] after `now_ns` is left out and
/// said in its notes.
pub fn row(read: &NodeRead, now_ns: u64, window: Duration) -> NodeRow {
    let ahead = now_ns.saturating_add(nanos(MAX_SKEW));
    let mut notes = read.notes.clone();
    let mut refuse = |what: &str, ns: u64| {
        let at = time_text(ns).unwrap_or_else(|| ns.to_string());
        notes.push(format!(
            "{what} is dated {at}, more than {} s after this reader's clock: not taken as the node's word",
            MAX_SKEW.as_secs()
        ));
    };
    let beat = read.heartbeat.filter(|h| h.wall_ns <= ahead);
    if let (Some(h), None) = (read.heartbeat, beat) {
        refuse("its last heartbeat", h.wall_ns);
    }
    let last_event = read.last_event_ns.filter(|&t| t <= ahead);
    if let (Some(t), None) = (read.last_event_ns, last_event) {
        refuse("its last event", t);
    }
    let last_word_ns = beat.map(|h| h.wall_ns).max(last_event);
    let interval = beat.map_or(heartbeat::DEFAULT_INTERVAL, |h| {
        Duration::from_millis(h.interval_ms)
    });
    let silent_after = interval.saturating_mul(heartbeat::SILENT_AFTER);
    let state = match last_word_ns {
        None => State::Unknown,
        Some(t) if now_ns.saturating_sub(t) > nanos(silent_after) => State::Silent,
        Some(_) => State::Live,
    };
    let (pods, pods_left_out) = live_pods(&read.engine);
    let since = now_ns.saturating_sub(nanos(window));
    let (ends, later) = ends_between(&read.engine, since, ahead);
    if later > 0 {
        notes.push(format!(
            "{later} restarts or deaths dated more than {} s after this reader's clock: not counted",
            MAX_SKEW.as_secs()
        ));
    }
    NodeRow {
        node: read.node.clone(),
        state,
        last_word: last_word_ns.and_then(time_text),
        last_word_ns,
        interval_ms: beat.map(|h| h.interval_ms),
        heartbeat: beat,
        back: read.back.filter(|b| b.back_ns <= ahead).map(|b| BackRow {
            since: time_text(b.back_ns),
            down_since: time_text(b.down_ns),
            buffered: b.buffered,
            dropped: b.dropped,
        }),
        pods,
        pods_left_out,
        restarts: ends.iter().filter(|e| e.phase == "restart").count(),
        deaths: ends.iter().filter(|e| e.phase == "death").count(),
        ends: ends.into_iter().take(MAX_ENDS).collect(),
        error: None,
        notes,
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// The pods with a live process, each with its containers that have one (the pod model's
/// facts of each process), at most [`MAX_PODS`]; and how many more.
pub fn live_pods(e: &Engine) -> (Vec<PodRow>, usize) {
    let mut pods: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for p in e.processes().filter(|p| !p.exited) {
        let Some(f) = PodFacts::of_process(p) else {
            continue;
        };
        let containers = pods
            .entry((f.namespace.to_string(), f.name.to_string()))
            .or_default();
        if let Some(c) = f.container {
            containers.insert(c.to_string());
        }
    }
    let left_out = pods.len().saturating_sub(MAX_PODS);
    let rows = pods
        .into_iter()
        .take(MAX_PODS)
        .map(|((namespace, name), cs)| PodRow {
            namespace,
            name,
            containers_left_out: cs.len().saturating_sub(MAX_CONTAINERS),
            containers: cs.into_iter().take(MAX_CONTAINERS).collect(),
        })
        .collect();
    (rows, left_out)
}

/// The restarts and deaths of containers whose story starts from `since_ns` to `until_ns`
/// (wall), in order (all of them when the recording has no wall clock), and how many start
/// after `until_ns`.
fn ends_between(e: &Engine, since_ns: u64, until_ns: u64) -> (Vec<EndRow>, usize) {
    let clock = e.clock();
    let mut later = 0;
    let ends = stories(e)
        .into_iter()
        .filter(|s| matches!(s.phase, Phase::Restart | Phase::Death))
        .filter(|s| {
            let at = s.steps.first().and_then(|st| clock.epoch_ns(st.ts_ns));
            let ahead = at.is_some_and(|t| t > i128::from(until_ns));
            later += usize::from(ahead);
            !ahead && at.is_none_or(|t| t >= i128::from(since_ns))
        })
        .map(|s| EndRow {
            phase: s.phase.as_str(),
            time: s.steps.first().and_then(|st| e.time_of(st.ts_ns)),
            pod: s.pod,
            container: s.container_name,
        })
        .collect();
    (ends, later)
}

/// The fleet of a server at one moment.
#[derive(Clone, Debug, Serialize)]
pub struct Table {
    /// When it was made (RFC 3339 UTC, the reader's clock).
    pub now: Option<String>,
    /// The window restarts and deaths are counted in, seconds.
    pub window_secs: u64,
    /// One row per node that published, by name.
    pub nodes: Vec<NodeRow>,
    /// Subjects named like a node's whose first message is none of an agent's.
    pub not_agents: usize,
    /// Nodes past [`crate::nats::MAX_NODES`], left out.
    pub left_out: usize,
}

/// `nats://HOST:PORT` or a cluster's list (`nats://A:4222,B:4222`), checked (no node, no
/// path: a `/` in a host is refused by the parse), as the list readers connect to.
pub fn server_of(url: &str) -> Result<String, FleetError> {
    let trimmed = url.strip_suffix('/').unwrap_or(url);
    NatsSource::parse(&format!("{trimmed}/*"))
        .map(|src| src.server)
        .map_err(|_| FleetError::BadUrl(url.to_string()))
}

/// Nodes read at once.
pub const READERS: usize = 8;
/// The most a table waits for its nodes; a node not read by then is a row saying so.
pub const READ_WITHIN: Duration = Duration::from_secs(60);

/// Every node of `server` (`nats://HOST:PORT`) now: each stream read whole, [`READERS`] at a
/// time, within [`READ_WITHIN`] (a node that cannot be read is a row with its error).
pub fn table(server: &str, window: Duration) -> Result<Table, FleetError> {
    let server = server_of(server)?;
    let s = server.clone();
    let list = crate::nats::block_on(async move { crate::nats::nodes(&s).await })?;
    Ok(Table {
        now: time_text(heartbeat::wall_now_ns()),
        window_secs: window.as_secs(),
        nodes: read_all(&server, &list.nodes, window),
        not_agents: list.not_agents,
        left_out: list.left_out,
    })
}

/// The rows of `nodes`, in their order, read by [`READERS`] threads; those not read within
/// [`READ_WITHIN`] say so (their threads are let go, and take no other node).
fn read_all(server: &str, nodes: &[String], window: Duration) -> Vec<NodeRow> {
    use std::collections::VecDeque;
    let queue: Arc<Mutex<VecDeque<(usize, String)>>> =
        Arc::new(Mutex::new(nodes.iter().cloned().enumerate().collect()));
    let (tx, rx) = std::sync::mpsc::channel();
    for _ in 0..READERS.min(nodes.len()) {
        let (queue, tx, server) = (queue.clone(), tx.clone(), server.to_string());
        std::thread::spawn(move || loop {
            let next = queue.lock().unwrap_or_else(|e| e.into_inner()).pop_front();
            let Some((i, node)) = next else { return };
            let row = match read_node(&server, &node) {
                Ok(read) => row(&read, heartbeat::wall_now_ns(), window),
                Err(e) => unreadable(&node, e.to_string()),
            };
            if tx.send((i, row)).is_err() {
                return;
            }
        });
    }
    drop(tx);
    let deadline = std::time::Instant::now() + READ_WITHIN;
    let mut rows: Vec<Option<NodeRow>> = nodes.iter().map(|_| None).collect();
    for _ in 0..nodes.len() {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok((i, r)) => rows[i] = Some(r),
            Err(_) => break,
        }
    }
    queue.lock().unwrap_or_else(|e| e.into_inner()).clear();
    let late = format!("not read within {}s", READ_WITHIN.as_secs());
    rows.into_iter()
        .zip(nodes)
        .map(|(r, node)| r.unwrap_or_else(|| unreadable(node, late.clone())))
        .collect()
}

/// The row of a node that could not be read, and why.
fn unreadable(node: &str, error: String) -> NodeRow {
    NodeRow {
        node: node.to_string(),
        state: State::Unknown,
        last_word: None,
        last_word_ns: None,
        interval_ms: None,
        heartbeat: None,
        back: None,
        pods: Vec::new(),
        pods_left_out: 0,
        restarts: 0,
        deaths: 0,
        ends: Vec::new(),
        error: Some(error),
        notes: Vec::new(),
    }
}

mod text;
pub use text::{node_lines, render};

#[cfg(test)]
mod tests;
