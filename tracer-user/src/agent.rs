//! The node agent (feature `agent`): a live source published to NATS JetStream as segments
//! (docs/nats.md), with the Prometheus metrics of what it saw. `tracer agent` runs it over the
//! capture; tests run it over a synthetic source ([`crate::source::Script`]), without root.

use crate::event::SnapshotProcess;
use crate::lineage::identity::{standing, Standing};
use crate::lineage::Retention;
use crate::metrics::Metrics;
use crate::nats::{self, NatsError, Outbox, Outgoing, Segment, StreamLimits};
use crate::source::{DriveOpts, EventSource, SourceLoop, Step};
use crate::tracefile::Header;
use crate::Engine;
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
    /// What /proc said of its credentials and executable.
    pub standing: Standing,
}

/// Every process of `procs` named like one of [`DAEMONS`] (by comm), in that order. podman has
/// no daemon but its API service (`podman system service`): a `podman run` someone typed
/// ends soon and creates nothing the agent should follow after.
pub fn daemon_candidates(procs: &[SnapshotProcess]) -> Vec<DaemonCandidate> {
    let is = |p: &SnapshotProcess, d: &str| {
        p.comm == d && (d != "podman" || p.argv.iter().skip(1).any(|a| a == "service"))
    };
    DAEMONS
        .iter()
        .flat_map(|d| {
            procs
                .iter()
                .filter(move |p| is(p, d))
                .map(move |p| DaemonCandidate {
                    pid: p.pid,
                    name: d,
                    standing: standing(p.cred.as_ref()),
                })
        })
        .collect()
}

/// The daemon to follow: the first candidate the kernel's word trusts — root of the host's
/// namespaces, running a file only root may change ([`standing`]); a name alone (a copy of
/// `sleep` called `containerd`, run by anyone) never is.
pub fn daemon_in(procs: &[SnapshotProcess]) -> Option<(u32, &'static str)> {
    daemon_candidates(procs)
        .into_iter()
        .find(|c| c.standing == Standing::Trusted)
        .map(|c| (c.pid, c.name))
}

/// One line per candidate passed over, for the operator: `pid 4242 is named containerd but
/// is not followed: it is not root`.
pub fn passed_over(procs: &[SnapshotProcess]) -> Vec<String> {
    let chosen = daemon_in(procs).map(|c| c.0);
    daemon_candidates(procs)
        .into_iter()
        .filter(|c| Some(c.pid) != chosen)
        .map(|c| {
            let why = match c.standing {
                Standing::Refused(r) => r.text(),
                Standing::Unverified => "its credentials could not be read",
                Standing::Trusted => "another trusted one came first",
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
    forged: std::sync::atomic::AtomicU64,
}

impl Shared {
    fn push(&self, msgs: Vec<Outgoing>) {
        self.lock().push_all(msgs);
        self.wake.notify_one();
    }
    fn lock(&self) -> std::sync::MutexGuard<'_, Outbox> {
        self.outbox.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Publishes the outbox in order, forever: a message leaves the outbox only once JetStream
/// acknowledged it; on failure it is retried (same message id: stored once).
async fn publisher(server: String, node: String, limits: StreamLimits, shared: Arc<Shared>) {
    let subject = nats::subject(&node);
    let client = loop {
        match nats::connect_node(&server, &node).await {
            Ok(c) => break c,
            Err(e) => {
                crate::say!("tracer: {e}; retrying");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    };
    let js = async_nats::jetstream::new(client);
    let mut backoff = Duration::from_millis(100);
    let mut stream_ready = false;
    let mut failing = false;
    // Whether the message at the front was sent before (a failed attempt), and how many ids
    // someone else published first.
    let mut tried_before = false;
    let mut forged = 0u64;
    loop {
        if !stream_ready {
            match nats::ensure_stream(&js, limits).await {
                Ok(_) => stream_ready = true,
                Err(e) => {
                    report_failure(&mut failing, &e);
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(5));
                    continue;
                }
            }
        }
        let next = shared.lock().front().cloned();
        let Some(m) = next else {
            let _ = tokio::time::timeout(Duration::from_secs(1), shared.wake.notified()).await;
            continue;
        };
        match nats::publish(&js, &subject, &m).await {
            Ok(true) if !tried_before => {
                // Never sent by us, yet the stream has the id: someone published it first.
                forged += 1;
                shared
                    .forged
                    .store(forged, std::sync::atomic::Ordering::Relaxed);
                crate::say!(
                    "tracer: NATS: message id {} was already in the stream, not published by this agent ({forged} so far): published again under a new id",
                    crate::escape::escape(&m.message_id())
                );
                if let Some(front) = shared.lock().front_mut() {
                    front.renew_id();
                }
            }
            Ok(_) => {
                tried_before = false;
                shared.lock().pop();
                backoff = Duration::from_millis(100);
                if failing {
                    crate::say!("tracer: publishing to {server} again");
                    failing = false;
                }
            }
            Err(nats::NatsError::TooLarge(len)) => {
                // Retrying cannot help: counted as dropped (raise the server's max_payload).
                crate::say!("tracer: NATS refused a message of {len} bytes (max_payload): dropped");
                tried_before = false;
                shared.lock().drop_front();
            }
            Err(e) => {
                // The server may have stored it before the error: a duplicate acknowledgement
                // of the retry is then ours.
                tried_before = true;
                report_failure(&mut failing, &e);
                // The stream may be gone with a server that lost its store.
                stream_ready = false;
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(5));
            }
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
    run_id: String,
    segment_no: u64,
    segment: Option<Segment>,
    segment_started: Instant,
    segment_every: Duration,
    engine: Engine,
    metrics: Arc<Mutex<Metrics>>,
    shared: Arc<Shared>,
    last_flush: Instant,
    last_stats: Instant,
    daemon: bool,
}

impl Agent {
    fn header(&self, src: &impl EventSource) -> Header {
        let mut h = src.header();
        h.extra.push(("node".into(), self.node.clone()));
        h
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
        let (seg, head) = Segment::start(id, &header)?;
        self.shared.push(head);
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
            m.set_foreign_duplicates(
                self.shared
                    .forged
                    .load(std::sync::atomic::Ordering::Relaxed),
            );
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
        if self.segment_started.elapsed() >= self.segment_every {
            self.rotate(src)?;
        }
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
        forged: std::sync::atomic::AtomicU64::new(0),
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
        // Random: segment and message ids an outsider cannot predict.
        run_id: nats::random_id(),
        segment_no: 0,
        segment: None,
        segment_started: now,
        segment_every: cfg.segment_every,
        engine: metrics_engine(),
        metrics,
        shared: shared.clone(),
        last_flush: now,
        last_stats: now,
        daemon: cfg.daemon,
    };
    agent.rotate(&src)?;
    let mut lp = SourceLoop::endless(src);
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
    let src = lp.into_source();
    let engine_records = agent.engine.process_count();
    if let Some(mut seg) = agent.segment.take() {
        // The last counters go out with the end record.
        let c = src.counters();
        seg.set_counters(c.drops, c.seq_issued, c.decode_errors);
        shared.push(seg.finish()?);
    }
    let until = Instant::now() + Duration::from_secs(5);
    while !shared.lock().is_empty() && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let o = shared.lock();
    Ok(AgentReport {
        kernel_drops: src.counters().drops,
        buffer_drops: o.dropped_events(),
        unsent: o.buffered_events(),
        engine_records,
    })
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
}
