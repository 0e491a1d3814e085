//! `tracer agent`: headless capture on one node, published to NATS JetStream (docs/nats.md),
//! with Prometheus metrics on `--listen`.

use anyhow::{Context, Result};
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Notify;
use tracer::capture::{procfs, Capture, CaptureBuilder, Target};
use tracer::metrics::Metrics;
use tracer::nats::{self, Outbox, Outgoing, Segment, StreamLimits};
use tracer::tracefile::Header;
use tracer::Engine;

/// Runtime daemons followed by default, in this order.
const DAEMONS: [&str; 4] = ["containerd", "crio", "dockerd", "podman"];

#[derive(clap::Args, Debug)]
pub struct AgentArgs {
    /// NATS server (`nats://HOST:PORT`); the client reconnects for as long as the agent runs.
    #[arg(long, value_name = "URL")]
    pub nats: String,
    /// This node's name (the subject `tracer.NODE.events`): letters, digits, `-`, `_`.
    #[arg(long, value_name = "NAME")]
    pub node: String,
    /// Serve Prometheus metrics at http://ADDR/metrics.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<SocketAddr>,
    /// Follow this process and what it creates (default: the container runtime daemon if one
    /// runs — containerd, crio, dockerd, `podman system service` — else every process).
    #[arg(short, long, conflicts_with = "all")]
    pub pid: Option<u32>,
    /// Trace every process on the host.
    #[arg(short, long)]
    pub all: bool,
    /// Events kept locally while NATS cannot take them; past that, batches are dropped and
    /// counted (`tracer_nats_dropped_events_total`).
    #[arg(long, value_name = "N", default_value_t = 1_000_000)]
    pub buffer_events: u64,
    /// Start a new segment (a header with a fresh /proc snapshot, where a late reader can
    /// start) this often.
    #[arg(long, value_name = "SECS", default_value_t = 300)]
    pub segment_secs: u64,
    /// Size limit of the stream when the agent creates it.
    #[arg(long, value_name = "BYTES", default_value_t = 1 << 30)]
    pub stream_max_bytes: i64,
    /// Stop after this many seconds.
    #[arg(long, value_name = "SECS")]
    pub duration: Option<f64>,
    /// Ring-buffer size in bytes (power of two, at least a page).
    #[arg(long, value_name = "BYTES", default_value_t = tracer_common::DEFAULT_RING_BYTES)]
    pub ring_bytes: u32,
}

/// `--pid`, `--all`, or the first runtime daemon running (`--all` when none is).
fn agent_target(args: &AgentArgs) -> Target {
    match (args.pid, args.all) {
        (Some(pid), _) => Target::Pid(pid),
        (None, true) => Target::All,
        (None, false) => find_daemon().map_or(Target::All, |(pid, name)| {
            eprintln!("tracer: following {name} (pid {pid})");
            Target::Pid(pid)
        }),
    }
}

/// The first of [`DAEMONS`] running.
fn find_daemon() -> Option<(u32, &'static str)> {
    daemon_in(&procfs::snapshot())
}

/// The first of [`DAEMONS`] among `procs`, by its comm. podman has no daemon but its API
/// service (`podman system service`): a `podman run` someone typed ends soon and creates
/// nothing the agent should follow after.
fn daemon_in(procs: &[tracer::lineage::SnapshotProcess]) -> Option<(u32, &'static str)> {
    let is = |p: &tracer::lineage::SnapshotProcess, d: &str| {
        p.comm == d && (d != "podman" || p.argv.iter().skip(1).any(|a| a == "service"))
    };
    DAEMONS
        .iter()
        .find_map(|d| procs.iter().find(|p| is(p, d)).map(|p| (p.pid, *d)))
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
                eprintln!("tracer: {e}; retrying");
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
                eprintln!(
                    "tracer: NATS: message id {} was already in the stream, not published by this agent ({forged} so far): published again under a new id",
                    tracer::escape::escape(&m.message_id())
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
                    eprintln!("tracer: publishing to {server} again");
                    failing = false;
                }
            }
            Err(nats::NatsError::TooLarge(len)) => {
                // Retrying cannot help: counted as dropped (raise the server's max_payload).
                eprintln!("tracer: NATS refused a message of {len} bytes (max_payload): dropped");
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
        eprintln!("tracer: NATS: {e}; buffering and retrying");
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
    fn header(&self, cap: &Capture) -> Header {
        let mut h = super::record::header_for(cap.target(), 0);
        super::record::add_capture_facts(&mut h, cap);
        h.extra.push(("node".into(), self.node.clone()));
        h
    }

    /// Ends the current segment (if any) and starts the next, with a fresh snapshot; the
    /// engine behind the metrics starts from it too, so its memory stays bounded.
    fn rotate(&mut self, cap: &Capture) -> Result<()> {
        if let Some(seg) = self.segment.take() {
            self.shared.push(seg.finish()?);
        }
        let header = self.header(cap);
        let id = format!("{}-{}-{}", self.node, self.run_id, self.segment_no);
        self.segment_no += 1;
        let (seg, head) = Segment::start(id, &header)?;
        self.shared.push(head);
        self.segment = Some(seg);
        self.segment_started = Instant::now();
        self.engine = Engine::new();
        self.engine.seed_snapshot(&header.snapshot_processes());
        self.lock_metrics().engine_replaced();
        Ok(())
    }

    fn lock_metrics(&self) -> std::sync::MutexGuard<'_, Metrics> {
        self.metrics.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn on_batch(&mut self, batch: &mut Vec<tracer::Event>) -> Result<()> {
        let seg = self.segment.as_mut().context("no segment")?;
        let mut metrics = self.metrics.lock().unwrap_or_else(|e| e.into_inner());
        for ev in batch.drain(..) {
            metrics.observe(&ev);
            self.engine.apply(&ev);
            seg.write_event(&ev)?;
        }
        Ok(())
    }

    fn on_tick(&mut self, cap: &mut Capture) -> Result<()> {
        let stats_due = self.last_stats.elapsed() >= Duration::from_secs(1);
        if stats_due || self.last_flush.elapsed() >= Duration::from_millis(200) {
            let seg = self.segment.as_mut().context("no segment")?;
            seg.set_counters(cap.drops(), cap.seq_issued(), cap.decode_errors());
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
            m.set_counters(cap.drops(), buffered, dropped);
            m.set_foreign_duplicates(
                self.shared
                    .forged
                    .load(std::sync::atomic::Ordering::Relaxed),
            );
            m.update_from(&self.engine);
            drop(m);
            if self.daemon && cap.followed_count() == 0 {
                // The daemon restarted: follow its successor once it runs.
                if let Some((pid, name)) = find_daemon() {
                    eprintln!("tracer: following {name} again (pid {pid})");
                    cap.follow(pid)?;
                }
            }
        }
        if self.segment_started.elapsed() >= self.segment_every {
            self.rotate(cap)?;
        }
        Ok(())
    }
}

/// Captures until the deadline, Ctrl-C or SIGTERM, handing batches and a 100 ms tick to the
/// agent. Unlike `trace`/`record`, it never ends because the followed processes are gone: a
/// runtime daemon that restarts is followed again.
async fn run_loop(cap: &mut Capture, agent: &mut Agent, deadline: Option<Instant>) -> Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut sigterm = signal(SignalKind::terminate())?;
    let mut sigint = signal(SignalKind::interrupt())?;
    let mut batch = Vec::new();
    let mut last_tick = Instant::now();
    loop {
        // A batch comes within the capture's poll interval; the tick work runs between
        // batches. (A timer raced against the batch would win whenever the tick work ran
        // long, and drop the batch's pending poll each time: nothing would be read.)
        tokio::select! {
            r = cap.next_batch(&mut batch) => {
                r?;
                agent.on_batch(&mut batch)?;
            }
            _ = sigint.recv() => break,
            _ = sigterm.recv() => break,
        }
        if last_tick.elapsed() >= Duration::from_millis(100) {
            last_tick = Instant::now();
            agent.on_tick(cap)?;
            if deadline.is_some_and(|d| Instant::now() >= d) {
                break;
            }
        }
    }
    cap.drain_now(&mut batch);
    agent.on_batch(&mut batch)?;
    // The last counters go out with the end record.
    if let Some(seg) = agent.segment.as_mut() {
        seg.set_counters(cap.drops(), cap.seq_issued(), cap.decode_errors());
    }
    Ok(())
}

pub fn run(args: AgentArgs) -> Result<ExitCode> {
    nats::check_node(&args.node)?;
    if !args.nats.starts_with("nats://") || args.nats["nats://".len()..].contains('/') {
        anyhow::bail!("--nats takes nats://HOST:PORT");
    }
    // Before connecting anywhere: a node agent without the capabilities fails at once, naming
    // them, instead of publishing an empty stream.
    tracer::capture::check_privileges()?;
    if let Some(note) = tracer::capture::ptrace_note() {
        eprintln!("tracer: warning: {note}");
    }
    let target = agent_target(&args);
    let daemon = args.pid.is_none() && !args.all && matches!(target, Target::Pid(_));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let metrics = Arc::new(Mutex::new(Metrics::new()));
        if let Some(addr) = args.listen {
            let m = metrics.clone();
            let bound = tracer::metrics::serve(
                addr,
                Arc::new(move || m.lock().unwrap_or_else(|e| e.into_inner()).encode()),
            )
            .with_context(|| format!("cannot listen on {addr}"))?;
            eprintln!("tracer: metrics on http://{bound}/metrics");
        }
        let shared = Arc::new(Shared {
            outbox: Mutex::new(Outbox::new(args.buffer_events)),
            wake: Notify::new(),
            forged: std::sync::atomic::AtomicU64::new(0),
        });
        let limits = StreamLimits {
            max_bytes: args.stream_max_bytes,
            ..StreamLimits::default()
        };
        let publishing = tokio::spawn(publisher(
            args.nats.clone(),
            args.node.clone(),
            limits,
            shared.clone(),
        ));
        let mut cap = CaptureBuilder::new(target)
            .ring_bytes(args.ring_bytes)
            .start()?;
        for note in cap.notes() {
            eprintln!("tracer: note: {note}");
        }
        let now = Instant::now();
        // Random: segment and message ids an outsider cannot predict.
        let run_id = nats::random_id();
        let mut agent = Agent {
            node: args.node.clone(),
            run_id,
            segment_no: 0,
            segment: None,
            segment_started: now,
            segment_every: Duration::from_secs(args.segment_secs.max(1)),
            engine: Engine::new(),
            metrics: metrics.clone(),
            shared: shared.clone(),
            last_flush: now,
            last_stats: now,
            daemon,
        };
        agent.rotate(&cap)?;
        eprintln!(
            "tracer: publishing to {} subject {}",
            args.nats,
            nats::subject(&args.node)
        );
        let deadline = args
            .duration
            .map(|s| Instant::now() + Duration::from_secs_f64(s.max(0.0)));
        run_loop(&mut cap, &mut agent, deadline).await?;
        if let Some(seg) = agent.segment.take() {
            shared.push(seg.finish()?);
        }
        // What is still buffered gets a few seconds to go out.
        let until = Instant::now() + Duration::from_secs(5);
        while !shared.lock().is_empty() && Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        publishing.abort();
        let o = shared.lock();
        eprintln!(
            "tracer: agent stopped; {} events dropped by the kernel, {} for a full buffer, {} unsent",
            cap.drops(),
            o.dropped_events(),
            o.buffered_events()
        );
        Ok(ExitCode::SUCCESS)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_podman_command_is_no_daemon_but_its_api_service_is() {
        let proc_of = |pid: u32, argv: &[&str]| tracer::lineage::SnapshotProcess {
            pid,
            ppid: 1,
            comm: "podman".into(),
            argv: argv.iter().map(|a| a.to_string()).collect(),
            ..Default::default()
        };
        let run = proc_of(10, &["podman", "run", "-d", "img"]);
        assert_eq!(daemon_in(std::slice::from_ref(&run)), None);
        let service = proc_of(11, &["podman", "system", "service", "--time=0"]);
        assert_eq!(daemon_in(&[run, service]), Some((11, "podman")));
    }
}
