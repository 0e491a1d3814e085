//! The node agent (feature `agent`): a live source published to NATS JetStream as segments
//! (docs/nats.md), with the Prometheus metrics of what it saw. `tracer agent` runs it over the
//! capture; tests run it over a synthetic source ([`crate::source::Script`]), without root.

use crate::event::SnapshotProcess;
use crate::lineage::identity::{standing, Refusal, Standing};
use crate::lineage::Retention;
use crate::metrics::Metrics;
use crate::nats::{self, NatsError, Outbox, Outgoing, Segment, StreamLimits};
use crate::source::{DriveOpts, EventSource, SourceLoop, Step};
use crate::tracefile::Header;
use crate::Engine;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// Runtime daemons the agent follows by default, in this order.
pub const DAEMONS: [&str; 4] = ["containerd", "crio", "dockerd", "podman"];

/// Why the agent stopped.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The live source failed (the capture's `CaptureError`, boxed: any source's error).
    #[error(transparent)]
    Source(Box<dyn std::error::Error + Send + Sync>),
    /// A segment could not be written.
    #[error(transparent)]
    Nats(#[from] NatsError),
    /// Events arrived with no segment open (a bug: a segment is open from the start).
    #[error("no segment open")]
    NoSegment,
}

/// How the agent runs.
#[derive(Clone, Debug)]
pub struct AgentConfig {
    /// NATS server, `nats://HOST:PORT`.
    pub server: String,
    /// This node's name (checked with [`nats::check_node`]).
    pub node: String,
    /// Events kept while NATS cannot take them.
    pub buffer_events: u64,
    /// How often a new segment starts.
    pub segment_every: Duration,
    /// The stream's limits, when the agent creates it.
    pub limits: StreamLimits,
    /// Whether the source follows a runtime daemon, whose successor is followed when it
    /// restarts.
    pub daemon: bool,
    /// When to stop, if ever.
    pub deadline: Option<Instant>,
    /// `--pod`/`-n`/`--container`: only that pod's events are published (the source's
    /// loop leaves the others out, [`SourceLoop::scoped`]); each segment's header says so.
    pub pod: Option<crate::lineage::PodQuery>,
    /// How often the agent publishes a heartbeat ([`nats::heartbeat`]): its word that it is
    /// there, with its counters, read by `tracer nodes`.
    pub heartbeat: Duration,
    /// The node's key, which signs each segment's header and every heartbeat
    /// ([`nats::sign`]); `None` publishes unsigned segments, as agents before signatures.
    pub key: Option<Arc<nats::sign::NodeKey>>,
}

/// What the agent lost, when it stopped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AgentReport {
    /// Events the kernel side dropped.
    pub kernel_drops: u64,
    /// Events dropped for a full buffer while NATS could not take them.
    pub buffer_drops: u64,
    /// Events still unsent when the agent stopped.
    pub unsent: u64,
    /// Events published that the stream no longer holds (its server lost its store), with
    /// those still queued for the segments it lost: a possible loss, as a reader sees it.
    pub lost_in_stream: u64,
    /// Duplicate acknowledgements for messages this agent never sent before.
    pub foreign_duplicates: u64,
    /// Process records the engine behind the metrics held when the agent stopped: bounded
    /// by its [`Retention`] however many processes came and went.
    pub engine_records: usize,
}

/// A process named like one of [`DAEMONS`], and whether the kernel's word lets it be the
/// daemon the agent follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DaemonCandidate {
    /// Its pid.
    pub pid: u32,
    /// The daemon it is named like.
    pub name: &'static str,
    /// What /proc said of its credentials and executable: trusted only when it is root by
    /// its real uid and runs that daemon's installed file.
    pub standing: Standing,
    /// Trusted shims of its kind run on the node (containerd-shims for containerd and
    /// dockerd, conmons for crio and podman): it is the runtime the node's containers use.
    pub has_shims: bool,
}

/// Every process of `procs` named like one of [`DAEMONS`] (by comm), in that order. podman has
/// no daemon but its API service (`podman system service`): a `podman run` someone typed
/// ends soon and creates nothing the agent should follow after.
pub fn daemon_candidates(procs: &[SnapshotProcess]) -> Vec<DaemonCandidate> {
    let is = |p: &SnapshotProcess, d: &str| {
        p.comm == d && (d != "podman" || p.argv.iter().skip(1).any(|a| a == "service"))
    };
    let trusted_runs = |program| {
        procs.iter().any(|p| {
            p.cred.and_then(|c| c.program) == Some(program)
                && standing(p.cred.as_ref(), p.uid) == Standing::Trusted
        })
    };
    DAEMONS
        .iter()
        .flat_map(|d| procs.iter().filter(move |p| is(p, d)).map(move |p| (d, p)))
        .map(|(d, p)| {
            let program = p.cred.and_then(|c| c.program);
            let standing = match standing(p.cred.as_ref(), p.uid) {
                // root's, but another file than that daemon's: `cp /bin/sleep containerd`
                Standing::Trusted if program.is_some_and(|x| x.daemon_name() != Some(*d)) => {
                    Standing::Refused(Refusal::NotInstalled)
                }
                s => s,
            };
            DaemonCandidate {
                pid: p.pid,
                name: d,
                standing,
                has_shims: program.and_then(|x| x.shim()).is_some_and(trusted_runs),
            }
        })
        .collect()
}

/// The daemon to follow: a candidate the kernel's word trusts ([`standing`]: root by its real
/// uid, of the host's namespaces, running the daemon's installed file) — the first with shims
/// of its kind on the node, else the first; a name alone (a copy of `sleep` called
/// `containerd`, a setuid program run by anyone under a daemon's name) never is.
pub fn daemon_in(procs: &[SnapshotProcess]) -> Option<(u32, &'static str)> {
    chosen(&daemon_candidates(procs)).map(|c| (c.pid, c.name))
}

fn chosen(all: &[DaemonCandidate]) -> Option<DaemonCandidate> {
    let trusted = || all.iter().filter(|c| c.standing == Standing::Trusted);
    trusted()
        .find(|c| c.has_shims)
        .or_else(|| trusted().next())
        .copied()
}

/// One line per candidate passed over, for the operator: `pid 4242 is named containerd but
/// is not followed: it is not root`.
pub fn passed_over(procs: &[SnapshotProcess]) -> Vec<String> {
    let all = daemon_candidates(procs);
    let chosen = chosen(&all);
    all.iter()
        .filter(|c| Some(c.pid) != chosen.map(|c| c.pid))
        .map(|c| {
            let why = match (c.standing, chosen) {
                (Standing::Refused(r), _) => r.text().to_string(),
                (Standing::Unverified, _) => "its credentials could not be read".to_string(),
                (Standing::Trusted, Some(w)) if w.has_shims && !c.has_shims => format!(
                    "no shims of its kind run, and {} (pid {}) has them",
                    w.name, w.pid
                ),
                (Standing::Trusted, _) => "another trusted one came first".to_string(),
            };
            format!(
                "pid {} is named {} but is not followed: {why}",
                c.pid, c.name
            )
        })
        .collect()
}

/// The engine behind the metrics: a busy node ends thousands of processes a second, so
/// exited ones beyond the live viewer's window are dropped (a segment lasts minutes).
fn metrics_engine() -> Engine {
    Engine::with_retention(Retention::default())
}

/// Shared between the capture loop and the publisher task.
struct Shared {
    outbox: Mutex<Outbox>,
    wake: Notify,
    /// Duplicate acknowledgements for messages this agent never sent (their ids published by
    /// someone else first), for the metrics.
    forged: AtomicU64,
    /// Events published (acknowledged) that are no longer in the stream: a server that lost
    /// its store, and what was still queued for the segments it held.
    lost_in_stream: AtomicU64,
    /// The stream lost what it held: the capture side starts a new segment (whose header a
    /// reader needs) before anything more is published.
    new_segment: AtomicBool,
    /// Heartbeats and outages, between the publisher and the capture side.
    beats: Mutex<Beats>,
}

impl Shared {
    fn push(&self, msgs: Vec<Outgoing>) {
        self.lock().push_all(msgs);
        self.wake.notify_one();
    }
    fn lock(&self) -> std::sync::MutexGuard<'_, Outbox> {
        self.outbox.lock().unwrap_or_else(|e| e.into_inner())
    }
    fn beats(&self) -> std::sync::MutexGuard<'_, Beats> {
        self.beats.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What heartbeats need to know of the publisher.
#[derive(Debug, Default)]
struct Beats {
    /// Publishing fails since then (wall ns), with the events dropped for a full buffer when
    /// the last message went through.
    down: Option<(u64, u64)>,
    /// Events dropped for a full buffer when the last message went through: an outage's drops
    /// start there, not at the first failure seen (a publish waits for its acknowledgement
    /// first, and the buffer may overflow meanwhile).
    dropped_at_store: u64,
    /// An outage ended: said by the next heartbeat, at once.
    back: Option<nats::heartbeat::Back>,
}

/// What the publisher knows of the stream it published to, to tell when the server lost it.
#[derive(Debug, Default)]
struct StreamSeen {
    /// The stream's creation time, when last opened.
    created: Option<async_nats::datetime::DateTime>,
    /// The sequence number of the last message stored (0: none yet).
    last_seq: u64,
    /// That of the current segment's first header message (0: none yet): once the stream
    /// no longer holds it, the segment cannot be read, whatever was stored after.
    header_seq: u64,
    /// Events stored since the stream was last seen whole.
    stored_events: u64,
}

impl StreamSeen {
    /// The stream as opened now: whether it is another than before (created anew), or holds
    /// none of what was stored (emptied).
    fn opened(&mut self, info: &async_nats::jetstream::stream::Info) -> bool {
        let before = self.created.replace(info.created);
        let recreated = before.is_some_and(|t| t != info.created);
        let first = info.state.first_sequence;
        let emptied = (self.last_seq > 0 && first > self.last_seq)
            || (self.header_seq > 0 && first > self.header_seq);
        if recreated || emptied {
            // Told once: a recreated stream numbers from 1 again, and an emptied one is not
            // emptied again by the next opening.
            self.last_seq = 0;
            self.header_seq = 0;
        }
        recreated || emptied
    }

    /// A message stored at `seq` (`header`: a segment's first): whether its sequence went
    /// back, a stream started anew.
    fn stored(&mut self, seq: u64, events: u64, header: bool) -> bool {
        let back = seq <= self.last_seq;
        self.last_seq = seq;
        if header {
            self.header_seq = seq;
        }
        self.stored_events += events;
        back
    }
}

/// The publisher task's state: publishes the outbox in order, forever. A message leaves the
/// outbox only once JetStream acknowledged it; on failure it is retried (same message id:
/// stored once).
struct Publisher {
    server: String,
    subject: String,
    limits: StreamLimits,
    shared: Arc<Shared>,
    js: async_nats::jetstream::Context,
    backoff: Duration,
    stream_ready: bool,
    failing: bool,
    /// Whether the message at the front was sent before (a failed attempt): a duplicate
    /// acknowledgement of its retry is then ours.
    tried_before: bool,
    duplicates: nats::Duplicates,
    seen: StreamSeen,
    /// When the stream was last looked at: it is looked at again every [`STREAM_CHECK`],
    /// so one emptied without any error on our side (purged) is noticed too.
    checked: Instant,
}

/// How often the publisher asks the server for the stream's state.
const STREAM_CHECK: Duration = Duration::from_secs(2);

/// Connects (retrying) and publishes forever.
async fn publisher(server: String, node: String, limits: StreamLimits, shared: Arc<Shared>) {
    let burst = nats::burst::Shared::default();
    let client = loop {
        match nats::connect_node(&server, &node).await {
            Ok(c) => break c,
            Err(e) => {
                for line in nats::burst::offer(&burst, "connect", format!("{e}; retrying")) {
                    crate::say!("tracer: {line}");
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    };
    let mut p = Publisher {
        server: nats::guard::shown(&server),
        subject: nats::subject(&node),
        limits,
        shared,
        js: async_nats::jetstream::new(client),
        backoff: Duration::from_millis(100),
        stream_ready: false,
        failing: false,
        tried_before: false,
        duplicates: nats::Duplicates::default(),
        seen: StreamSeen::default(),
        checked: Instant::now(),
    };
    loop {
        p.step().await;
    }
}

impl Publisher {
    async fn step(&mut self) {
        if self.shared.new_segment.load(Ordering::SeqCst) {
            // What is queued belongs to segments the stream lost: wait for the new one.
            tokio::time::sleep(Duration::from_millis(20)).await;
            return;
        }
        if self.checked.elapsed() >= STREAM_CHECK {
            self.stream_ready = false;
        }
        if !self.stream_ready {
            self.checked = Instant::now();
            self.open_stream().await;
            return;
        }
        let next = self.shared.lock().front().cloned();
        let Some(m) = next else {
            let _ = tokio::time::timeout(Duration::from_secs(1), self.shared.wake.notified()).await;
            return;
        };
        match nats::publish(&self.js, &self.subject, &m).await {
            Ok(ack) if ack.duplicate && !self.tried_before => self.foreign_duplicate(&m).await,
            Ok(ack) => self.stored(&m, ack),
            Err(NatsError::TooLarge(len)) => {
                // Retrying cannot help: counted as dropped (raise the server's max_payload).
                crate::say!("tracer: NATS refused a message of {len} bytes (max_payload): dropped");
                self.tried_before = false;
                self.shared.lock().drop_front();
            }
            Err(e) => {
                // The server may have stored it before the error: a duplicate acknowledgement
                // of the retry is then ours.
                self.tried_before = true;
                // The stream may be gone with a server that lost its store.
                self.stream_ready = false;
                self.fail(&e).await;
            }
        }
    }

    async fn fail(&mut self, e: &NatsError) {
        if !self.failing {
            let mut beats = self.shared.beats();
            beats.down = Some((nats::heartbeat::wall_now_ns(), beats.dropped_at_store));
        }
        report_failure(&mut self.failing, e);
        tokio::time::sleep(self.backoff).await;
        self.backoff = (self.backoff * 2).min(nats::MAX_BACKOFF);
    }

    /// Opens (or creates) the stream, and tells whether it lost what it held.
    async fn open_stream(&mut self) {
        match nats::ensure_stream(&self.js, self.limits).await {
            Ok(stream) => {
                self.stream_ready = true;
                if self.seen.opened(stream.cached_info()) {
                    self.stream_lost();
                }
            }
            Err(e) => self.fail(&e).await,
        }
    }

    /// Never sent by us, yet the stream has the id: someone published it first. Published
    /// again under a new id, after a wait that grows while this goes on.
    async fn foreign_duplicate(&mut self, m: &Outgoing) {
        let (wait, first) = self.duplicates.more();
        let total = self.duplicates.total();
        self.shared.forged.store(total, Ordering::Relaxed);
        if first {
            crate::say!(
                "tracer: NATS: message id {} was already in the stream, not published by this agent ({total} so far): publishing again under new ids, waiting longer each time while this lasts",
                crate::escape::escape(&m.message_id()),
            );
        }
        if let Some(front) = self.shared.lock().front_mut() {
            front.renew_id();
        }
        tokio::time::sleep(wait).await;
    }

    fn stored(&mut self, m: &Outgoing, ack: nats::Ack) {
        self.tried_before = false;
        self.duplicates.stored();
        let (buffered, dropped) = {
            let mut o = self.shared.lock();
            let before = (o.buffered_events(), o.dropped_events());
            o.pop();
            before
        };
        self.shared.beats().stored(buffered, dropped);
        self.backoff = Duration::from_millis(100);
        if self.failing {
            crate::say!("tracer: publishing to {} again", self.server);
            self.failing = false;
        }
        // A duplicate's sequence is its first copy's, not a new one.
        let header = m.index == 0;
        if !ack.duplicate && self.seen.stored(ack.sequence, m.events, header) {
            // Stored at the start of a new stream, after no header: lost to readers too.
            self.stream_lost();
        }
    }

    /// The server lost the stream's messages: every event stored before may be gone. The
    /// capture side starts a new segment; until then nothing is published.
    fn stream_lost(&mut self) {
        let lost = std::mem::take(&mut self.seen.stored_events);
        let total = self.shared.lost_in_stream.fetch_add(lost, Ordering::SeqCst) + lost;
        self.shared.new_segment.store(true, Ordering::SeqCst);
        crate::say!(
            "tracer: NATS: the stream lost what it held (created anew or emptied by the server): {lost} events published before may be lost ({total} so far); starting a new segment"
        );
    }
}

impl Beats {
    /// A message went through, `buffered` events waiting with it and `dropped` dropped in
    /// all: the end of an outage, if one was on.
    fn stored(&mut self, buffered: u64, dropped: u64) {
        self.dropped_at_store = dropped;
        if let Some((down_ns, dropped_before)) = self.down.take() {
            self.back = Some(nats::heartbeat::Back {
                down_ns,
                back_ns: nats::heartbeat::wall_now_ns(),
                buffered,
                dropped: dropped.saturating_sub(dropped_before),
            });
        }
    }
}

/// One line when publishing starts failing, not one per retry.
fn report_failure(failing: &mut bool, e: &nats::NatsError) {
    if !*failing {
        crate::say!("tracer: NATS: {e}; buffering and retrying");
        *failing = true;
    }
}

/// The capture side: segments, the engine behind the metrics, and when to do what.
struct Agent {
    node: String,
    key: Option<Arc<nats::sign::NodeKey>>,
    run_id: String,
    segment_no: u64,
    segment: Option<Segment>,
    /// The current segment's header messages, to publish again into a stream that lost them.
    head: Vec<Outgoing>,
    segment_started: Instant,
    segment_every: Duration,
    engine: Engine,
    metrics: Arc<Mutex<Metrics>>,
    shared: Arc<Shared>,
    last_flush: Instant,
    last_stats: Instant,
    daemon: bool,
    pod: Option<crate::lineage::PodQuery>,
    /// Events read from the source, all segments (for heartbeats).
    events: u64,
    heartbeat_every: Duration,
    /// When the last heartbeat was queued (`None`: none yet, one goes at the first tick).
    last_heartbeat: Option<Instant>,
}

impl Agent {
    fn header(&self, src: &impl EventSource) -> Header {
        let mut h = src.header();
        h.extra.push(("node".into(), self.node.clone()));
        if let Some(q) = &self.pod {
            let text = crate::lineage::PodScope::Typed(q.clone()).pod_text();
            h.set_pod_scope(&text, q.container.as_deref());
        }
        h
    }

    /// The stream lost its segments (a server without its store): the current segment's
    /// header goes out again first, so what is queued of it stays readable (a reader sees the
    /// frames the stream lost as missing), and a new segment starts, as a rotation does.
    fn after_stream_lost(&mut self, src: &impl EventSource) -> Result<(), AgentError> {
        self.requeue_head();
        self.rotate(src)?;
        Ok(())
    }

    /// Queues the current segment's header again, before its frames, and lets the publisher
    /// go on. What is queued of earlier segments would follow no header: lost, and counted.
    fn requeue_head(&self) {
        if let Some(id) = self.head.first().map(|m| m.segment.clone()) {
            let orphans = self.shared.lock().after_stream_lost(&id, &self.head);
            self.shared
                .lost_in_stream
                .fetch_add(orphans, Ordering::SeqCst);
        }
        self.shared.new_segment.store(false, Ordering::SeqCst);
        self.shared.wake.notify_one();
    }

    /// Ends the current segment (if any) and starts the next, with a fresh snapshot; the
    /// engine behind the metrics starts from it too, so its memory stays bounded.
    fn rotate(&mut self, src: &impl EventSource) -> Result<(), AgentError> {
        if let Some(seg) = self.segment.take() {
            self.shared.push(seg.finish()?);
        }
        let header = self.header(src);
        let id = format!("{}-{}-{}", self.node, self.run_id, self.segment_no);
        self.segment_no += 1;
        let (seg, head) = Segment::start_signed(id, &header, self.key.clone())?;
        self.shared.push(head.clone());
        self.head = head;
        self.segment = Some(seg);
        self.segment_started = Instant::now();
        self.engine = metrics_engine();
        self.engine.seed_snapshot(&header.snapshot_processes());
        self.lock_metrics().engine_replaced();
        Ok(())
    }

    fn lock_metrics(&self) -> std::sync::MutexGuard<'_, Metrics> {
        self.metrics.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn on_batch(&mut self, batch: &mut Vec<crate::Event>) -> Result<(), AgentError> {
        let seg = self.segment.as_mut().ok_or(AgentError::NoSegment)?;
        let mut metrics = self.metrics.lock().unwrap_or_else(|e| e.into_inner());
        self.events += batch.len() as u64;
        for ev in batch.drain(..) {
            metrics.observe(&ev);
            self.engine.apply(&ev);
            seg.write_event(&ev)?;
        }
        Ok(())
    }

    fn on_tick(&mut self, src: &mut impl EventSource) -> Result<(), AgentError> {
        let stats_due = self.last_stats.elapsed() >= Duration::from_secs(1);
        if stats_due || self.last_flush.elapsed() >= Duration::from_millis(200) {
            let seg = self.segment.as_mut().ok_or(AgentError::NoSegment)?;
            let c = src.counters();
            seg.set_counters(c.drops, c.seq_issued, c.decode_errors);
            let msgs = seg.flush(stats_due)?;
            self.shared.push(msgs);
            self.last_flush = Instant::now();
        }
        if stats_due {
            self.last_stats = Instant::now();
            let (buffered, dropped) = {
                let o = self.shared.lock();
                (o.buffered_events(), o.dropped_events())
            };
            let mut m = self.lock_metrics();
            m.set_counters(src.counters().drops, buffered, dropped);
            m.set_foreign_duplicates(self.shared.forged.load(Ordering::Relaxed));
            m.set_lost_in_stream(self.shared.lost_in_stream.load(Ordering::SeqCst));
            m.update_from(&self.engine);
            drop(m);
            if self.daemon && src.followed_count() == 0 {
                // The daemon restarted: follow its successor once it runs.
                let procs = src.processes();
                if let Some((pid, name)) = daemon_in(&procs) {
                    for line in passed_over(&procs) {
                        crate::say!("tracer: {line}");
                    }
                    crate::say!("tracer: following {name} again (pid {pid})");
                    src.follow(pid).map_err(|e| AgentError::Source(e.into()))?;
                }
            }
        }
        self.heartbeat(src)?;
        if self.shared.new_segment.load(Ordering::SeqCst) {
            self.after_stream_lost(src)?;
        } else if self.segment_started.elapsed() >= self.segment_every
            || self.segment.as_ref().is_some_and(Segment::nearly_spent)
        {
            self.rotate(src)?;
        }
        Ok(())
    }
}

impl Agent {
    /// Queues a heartbeat every interval (none while one still waits: an outage queues one,
    /// not one per interval), and at once after an outage, saying what was buffered and
    /// dropped during it: after what it buffered.
    fn heartbeat(&mut self, src: &impl EventSource) -> Result<(), AgentError> {
        let due = self
            .last_heartbeat
            .is_none_or(|t| t.elapsed() >= self.heartbeat_every);
        let back = self.shared.beats().back.take();
        if back.is_none() && (!due || self.shared.lock().holds_heartbeat()) {
            return Ok(());
        }
        let (buffered, dropped) = {
            let o = self.shared.lock();
            (o.buffered_events(), o.dropped_events())
        };
        let h = nats::heartbeat::Heartbeat {
            interval_ms: u64::try_from(self.heartbeat_every.as_millis()).unwrap_or(u64::MAX),
            wall_ns: nats::heartbeat::wall_now_ns(),
            events: self.events,
            kernel_drops: src.counters().drops,
            buffered,
            dropped,
            back,
        };
        if let Some(b) = &back {
            crate::say!(
                "tracer: NATS: back; {} events buffered during the outage published after, {} dropped",
                b.buffered,
                b.dropped
            );
        }
        let seg = self.segment.as_mut().ok_or(AgentError::NoSegment)?;
        self.shared.push(seg.heartbeat(&h));
        self.last_heartbeat = Some(Instant::now());
        Ok(())
    }
}

/// A task aborted when this is dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Runs the agent over `src` until the deadline or `stop`: segments published to
/// `cfg.server` (a publisher task retries and buffers), `metrics` kept up to date. Unlike
/// `trace`/`record`, it never ends because the followed processes are gone: a runtime daemon
/// that restarts is followed again. What is still buffered gets five seconds to go out.
pub async fn run<S: EventSource>(
    src: S,
    cfg: AgentConfig,
    metrics: Arc<Mutex<Metrics>>,
    stop: impl std::future::Future<Output = ()>,
) -> Result<AgentReport, AgentError> {
    let shared = Arc::new(Shared {
        outbox: Mutex::new(Outbox::new(cfg.buffer_events)),
        wake: Notify::new(),
        forged: AtomicU64::new(0),
        lost_in_stream: AtomicU64::new(0),
        new_segment: AtomicBool::new(false),
        beats: Mutex::default(),
    });
    // Stopped however `run` returns: an error must not leave it retrying forever.
    let _publishing = AbortOnDrop(tokio::spawn(publisher(
        cfg.server.clone(),
        cfg.node.clone(),
        cfg.limits,
        shared.clone(),
    )));
    let now = Instant::now();
    let mut agent = Agent {
        node: cfg.node.clone(),
        key: cfg.key.clone(),
        // Random: segment and message ids an outsider cannot predict.
        run_id: nats::random_id(),
        segment_no: 0,
        segment: None,
        head: Vec::new(),
        segment_started: now,
        segment_every: cfg.segment_every,
        engine: metrics_engine(),
        metrics,
        shared: shared.clone(),
        last_flush: now,
        last_stats: now,
        daemon: cfg.daemon,
        pod: cfg.pod.clone(),
        events: 0,
        heartbeat_every: cfg.heartbeat,
        last_heartbeat: None,
    };
    if cfg.pod.is_some() {
        agent.engine.set_scoped();
    }
    agent.rotate(&src)?;
    let seed = src.seed();
    let mut lp = match cfg.pod {
        Some(q) => SourceLoop::endless(src).scoped(crate::lineage::LiveScope::new(q, &seed)),
        None => SourceLoop::endless(src),
    };
    let opts = DriveOpts {
        tick: Duration::from_millis(100),
        deadline: cfg.deadline,
    };
    // The loop's error is the source's or the agent's own: boxed, then told apart.
    type Boxed = Box<dyn std::error::Error + Send + Sync>;
    let driven = crate::source::drive(&mut lp, opts, stop, |step, src| {
        match step {
            Step::Batch(batch) => agent.on_batch(batch)?,
            Step::Drops(_) => {}
            Step::Tick => agent.on_tick(src)?,
        }
        Ok::<_, Boxed>(true)
    });
    if let Err(e) = driven.await {
        return Err(e
            .downcast::<AgentError>()
            .map_or_else(AgentError::Source, |e| *e));
    }
    agent.stop(lp.into_source()).await
}

impl Agent {
    /// Ends the last segment and gives the buffer five seconds to drain; what was lost.
    async fn stop(mut self, src: impl EventSource) -> Result<AgentReport, AgentError> {
        let shared = self.shared.clone();
        let engine_records = self.engine.process_count();
        if shared.new_segment.load(Ordering::SeqCst) {
            // A stream lost just before the stop: the publisher waits for the new segment.
            self.after_stream_lost(&src)?;
        }
        if let Some(mut seg) = self.segment.take() {
            // The last counters go out with the end record.
            let c = src.counters();
            seg.set_counters(c.drops, c.seq_issued, c.decode_errors);
            shared.push(seg.finish()?);
        }
        let until = Instant::now() + Duration::from_secs(5);
        while !shared.lock().is_empty() && Instant::now() < until {
            if shared.new_segment.load(Ordering::SeqCst) {
                // Lost while draining: the last segment's header again, no new segment.
                self.requeue_head();
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let o = shared.lock();
        Ok(AgentReport {
            kernel_drops: src.counters().drops,
            buffer_drops: o.dropped_events(),
            unsent: o.buffered_events(),
            lost_in_stream: shared.lost_in_stream.load(Ordering::SeqCst),
            foreign_duplicates: shared.forged.load(Ordering::SeqCst),
            engine_records,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_podman_command_is_no_daemon_but_its_api_service_is() {
        let proc_of = |pid: u32, argv: &[&str]| SnapshotProcess {
            pid,
            ppid: 1,
            comm: "podman".into(),
            argv: argv.iter().map(|a| a.to_string()).collect(),
            cred: Some(crate::synth::root_cred()),
            ..Default::default()
        };
        let run = proc_of(10, &["podman", "run", "-d", "img"]);
        assert_eq!(daemon_in(std::slice::from_ref(&run)), None);
        let service = proc_of(11, &["podman", "system", "service", "--time=0"]);
        assert_eq!(daemon_in(&[run, service]), Some((11, "podman")));
    }

    #[test]
    fn the_daemon_followed_is_the_one_the_kernel_trusts_never_a_name_alone() {
        let daemon = |pid: u32, cred| SnapshotProcess {
            pid,
            ppid: 1,
            comm: "containerd".into(),
            cred,
            ..Default::default()
        };
        let nobody = crate::event::ExecCred {
            euid: 65534,
            fsuid: 65534,
            ..crate::synth::root_cred()
        };
        // nobody's copy of `sleep` named containerd comes first by pid.
        let procs = [
            daemon(50, Some(nobody)),
            daemon(90, Some(crate::synth::root_cred())),
        ];
        assert_eq!(daemon_in(&procs), Some((90, "containerd")));
        assert_eq!(
            passed_over(&procs),
            ["pid 50 is named containerd but is not followed: it is not root"]
        );
        // Alone, or unreadable, it is never followed.
        assert_eq!(daemon_in(&procs[..1]), None);
        assert_eq!(daemon_in(&[daemon(7, None)]), None);
    }

    /// The capture's judgment of the file decides: nobody's setuid program named containerd
    /// is refused by its real uid, root's other file by its inode; of two trusted daemons the
    /// one whose shims run is followed, and the operator is told why the other is not.
    #[test]
    fn the_daemon_followed_runs_its_installed_file_and_has_the_nodes_shims() {
        use crate::lineage::identity::Program;
        let proc_of = |pid: u32, comm: &str, uid: u32, program| SnapshotProcess {
            pid,
            ppid: 1,
            uid,
            comm: comm.into(),
            cred: Some(crate::event::ExecCred {
                program: Some(program),
                ..crate::synth::root_cred()
            }),
            ..Default::default()
        };
        let setuid = proc_of(40, "containerd", 65534, Program::Other);
        let copy = proc_of(41, "containerd", 0, Program::Other);
        let crio_named_containerd = proc_of(42, "containerd", 0, Program::Crio);
        let crio = proc_of(50, "crio", 0, Program::Crio);
        let procs = [
            setuid.clone(),
            copy.clone(),
            crio_named_containerd,
            crio.clone(),
        ];
        assert_eq!(daemon_in(&procs), Some((50, "crio")));
        assert_eq!(
            passed_over(&procs),
            [
                "pid 40 is named containerd but is not followed: it is root only by a setuid exec (its real uid is not 0)",
                "pid 41 is named containerd but is not followed: its executable is not the runtime's installed file",
                "pid 42 is named containerd but is not followed: its executable is not the runtime's installed file",
            ]
        );
        let containerd = proc_of(60, "containerd", 0, Program::Containerd);
        let conmon = proc_of(70, "conmon", 0, Program::Conmon);
        let procs = [containerd.clone(), crio.clone(), conmon.clone()];
        assert_eq!(daemon_in(&procs), Some((50, "crio")));
        assert_eq!(
            passed_over(&procs),
            ["pid 60 is named containerd but is not followed: no shims of its kind run, and crio (pid 50) has them"]
        );
        // nobody's conmon is no shim of crio's.
        let fake = proc_of(71, "conmon", 65534, Program::Conmon);
        assert_eq!(
            daemon_in(&[containerd, crio, fake]),
            Some((60, "containerd"))
        );
    }
}
