//! `tracer agent`: headless capture on one node, published to NATS JetStream (docs/nats.md),
//! with Prometheus metrics on `--listen`.

use anyhow::{Context, Result};
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tracer::agent::{self, AgentConfig};
use tracer::capture::{procfs, CaptureBuilder, Target};
use tracer::metrics::Metrics;
use tracer::nats::{self, StreamLimits};

#[derive(clap::Args, Debug)]
pub struct AgentArgs {
    /// NATS server (`nats://HOST:PORT`), or a cluster's servers as a list
    /// (`nats://A:4222,nats://B:4222,...`): the client reconnects, to any of them, for as long
    /// as the agent runs.
    #[arg(long, value_name = "URL[,URL...]")]
    pub nats: String,
    /// Copies of the stream the NATS cluster keeps, when the agent creates it (1 to 5; more
    /// than 1 needs a JetStream cluster). An existing stream is used as it is (a stream with
    /// other replicas is said).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=nats::MAX_REPLICAS as i64))]
    pub replicas: u8,
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
    #[arg(long, value_enum, value_name = "SCOPE", default_value_t = super::Snapshot::Followed, help = super::SNAPSHOT_HELP)]
    pub snapshot: super::Snapshot,
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
    /// Publish a heartbeat this often (`10s`, `500ms`, `1m`; a bare number is seconds): the
    /// agent's counters and wall time, what `tracer nodes` reads; a node is `silent` after 3
    /// intervals without a word.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = super::nodes::duration_arg)]
    pub heartbeat: Duration,
    /// The node's signing key: made there (0600, its directory 0700) on the first start,
    /// read after; its public key is what readers trust (`--trust-keys`, docs/nats.md).
    #[arg(long, value_name = "FILE", default_value = tracer::nats::sign::DEFAULT_KEY_FILE)]
    pub key: std::path::PathBuf,
    /// Stop after this many seconds.
    #[arg(long, value_name = "SECS")]
    pub duration: Option<f64>,
    /// Ring-buffer size in bytes (power of two, at least a page).
    #[arg(long, value_name = "BYTES", default_value_t = tracer_common::DEFAULT_RING_BYTES)]
    pub ring_bytes: u32,
    /// Which generated signals to record: default (those that end, stop, continue or reap a
    /// process), all (every signal, e.g. Go's SIGURG), or none.
    #[arg(long, value_enum, value_name = "SET", default_value_t = super::Signals::Default)]
    pub signals: super::Signals,
    // Only one pod's events (`LIVE_SCOPE_HELP`).
    #[command(flatten)]
    pub pod: super::PodArgs,
}

/// `--pid`, `--all`, or the first runtime daemon running (`--all` when none is).
fn agent_target(args: &AgentArgs) -> Target {
    match (args.pid, args.all) {
        (Some(pid), _) => Target::Pid(pid),
        (None, true) => Target::All,
        (None, false) => find_daemon().map_or(Target::All, |(pid, name)| {
            tracer::say!("tracer: following {name} (pid {pid})");
            Target::Pid(pid)
        }),
    }
}

/// The first of the runtime daemons running that the kernel's word trusts; every other
/// process named like one is told.
fn find_daemon() -> Option<(u32, &'static str)> {
    let procs = procfs::snapshot();
    for line in agent::passed_over(&procs) {
        tracer::say!("tracer: {line}");
    }
    agent::daemon_in(&procs)
}

/// `--nats`: one server or a list, each `nats://HOST:PORT` (an item may leave out the
/// scheme). Checked here: the client would refuse a bad one only later, and the agent retry
/// it forever.
fn check_servers(list: &str) -> Result<()> {
    let servers = nats::servers(list);
    if servers.is_empty() || servers.len() > nats::MAX_SERVERS {
        anyhow::bail!(
            "--nats takes nats://HOST:PORT, or a list of at most {} (nats://A:4222,nats://B:4222)",
            nats::MAX_SERVERS
        );
    }
    for s in &servers {
        let shown = nats::guard::shown(s);
        let Some(rest) = s.strip_prefix("nats://") else {
            anyhow::bail!("--nats: {shown}: each server is nats://HOST:PORT");
        };
        if rest.contains('/') {
            anyhow::bail!("--nats: {shown}: each server is nats://HOST:PORT, with no path");
        }
        nats::guard::plain_server(s).map_err(|e| anyhow::anyhow!("--nats: {shown}: {e}"))?;
    }
    Ok(())
}

pub fn run(args: AgentArgs) -> Result<ExitCode> {
    nats::check_node(&args.node)?;
    check_servers(&args.nats)?;
    // Before connecting anywhere: a node agent without the capabilities fails at once, naming
    // them, instead of publishing an empty stream.
    tracer::capture::check_privileges()?;
    if let Some(note) = tracer::capture::ptrace_note() {
        tracer::say!("tracer: warning: {note}");
    }
    // Before capturing: a key that cannot be read or made is the operator's to fix.
    let key = nats::sign::load_or_create(&args.key)?;
    tracer::say!("tracer: node {} signs with key {}", args.node, key.public());
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
            tracer::say!("tracer: metrics on http://{bound}/metrics");
        }
        let cap = CaptureBuilder::new(target)
            .ring_bytes(args.ring_bytes)
            .signals(args.signals.into())
            .snapshot(args.snapshot.into())
            .start()?;
        for note in cap.notes() {
            tracer::say!("tracer: note: {note}");
        }
        let cfg = AgentConfig {
            server: args.nats.clone(),
            node: args.node.clone(),
            buffer_events: args.buffer_events,
            segment_every: Duration::from_secs(args.segment_secs.max(1)),
            limits: StreamLimits {
                max_bytes: args.stream_max_bytes,
                replicas: args.replicas.into(),
                ..StreamLimits::default()
            },
            daemon,
            deadline: args
                .duration
                .map(|s| Instant::now() + Duration::from_secs_f64(s.max(0.0))),
            pod: args.pod.query(),
            heartbeat: args.heartbeat,
            key: Some(std::sync::Arc::new(key)),
        };
        tracer::say!(
            "tracer: publishing to {} subject {}",
            nats::guard::shown(&args.nats),
            nats::subject(&args.node)
        );
        let report = agent::run(cap, cfg, metrics, super::trace::stop_signal()?).await?;
        tracer::say!(
            "tracer: agent stopped; {} events dropped by the kernel, {} for a full buffer, {} unsent, {} lost by the stream",
            report.kernel_drops, report.buffer_drops, report.unsent, report.lost_in_stream
        );
        Ok(ExitCode::SUCCESS)
    })
}
