//! `cargo xtask bench --only agent`: `tracer agent --all` publishing to a loopback
//! `nats-server -js` while `actor pace:vfork:RATE:SECS` makes process lifetimes at rising
//! rates, as a busy node's health probes and cron jobs do.
//!
//! Counted, not timed where it can be: events and drops from the agent's own metrics and the
//! stream read back (`tracer replay`'s sequence gaps), CPU from the run time of the agent's
//! threads (/proc/PID/task/*/schedstat), bytes from nats-server's monitoring (`/varz` in_bytes, `/jsz` bytes) and
//! from a `tracer record --all` file of the same generator run, RSS from /proc/PID/status.

use super::{status_kib, Bench};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tests::servers::{get, sample, start_nats_with, two_ports, Guard};

/// Events one `vfork` lifetime makes: the fork, the child's exit, and the SIGCHLD its parent
/// is sent (the default signal set records it).
const EVENTS_PER_LIFETIME: f64 = 3.0;

/// Seconds each rate runs.
const SECS: f64 = 10.0;

/// Target rates in events/s; 0 is as fast as the generator can.
const RATES: [u64; 4] = [10_000, 50_000, 100_000, 0];

/// How many lifetimes the RSS run makes: `TRACER_BENCH_AGENT_LIFETIMES` (default 1,000,000).
fn lifetimes_total() -> u64 {
    std::env::var("TRACER_BENCH_AGENT_LIFETIMES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000)
}

/// nats-server with JetStream and its monitoring port, on a store of its own.
struct Server {
    _guard: Guard,
    port: u16,
    monitor: u16,
}

impl Server {
    fn start(dir: &Path) -> Result<Server> {
        std::fs::create_dir_all(dir)?;
        let (port, monitor) = two_ports();
        let m = monitor.to_string();
        let guard = start_nats_with(
            port,
            &dir.join("store"),
            &dir.join("nats.log"),
            &["-m".as_ref(), m.as_ref()],
        );
        Ok(Server {
            _guard: guard,
            port,
            monitor,
        })
    }

    /// A number of a monitoring page (`/varz` `in_bytes`, `/jsz` `bytes`).
    fn number(&self, page: &str, key: &str) -> Result<u64> {
        let (status, body) = get(self.monitor, page, Duration::from_secs(5))
            .with_context(|| format!("nats-server's {page} did not answer"))?;
        if !status.contains(" 200 ") {
            bail!("nats-server's {page}: {status}");
        }
        let v: serde_json::Value =
            serde_json::from_str(&body).with_context(|| format!("nats-server's {page}"))?;
        v[key]
            .as_u64()
            .with_context(|| format!("nats-server's {page} has no {key}"))
    }
}

/// What the agent's metrics and /proc say at one moment.
#[derive(Clone, Copy, Debug, Default)]
struct Reading {
    events: f64,
    kernel_drops: f64,
    buffer_drops: f64,
    buffered: f64,
    /// The CPU time of all its threads (schedstat), in seconds.
    cpu_s: f64,
    wire_bytes: u64,
    stream_bytes: u64,
}

/// A running `tracer agent --all`; SIGTERM and reaped on drop.
struct AgentRun {
    guard: Guard,
    metrics: u16,
    log: PathBuf,
}

impl AgentRun {
    fn start(b: &Bench, server: &Server, node: &str) -> Result<AgentRun> {
        let (metrics, _) = two_ports();
        let log = b.tmp.join(format!("agent-{node}.log"));
        let child = Command::new(&b.tracer)
            .args(["agent", "--all", "--node", node])
            .arg("--nats")
            .arg(format!("nats://127.0.0.1:{}", server.port))
            .arg("--listen")
            .arg(format!("127.0.0.1:{metrics}"))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log)?)
            .spawn()
            .context("cannot start tracer agent")?;
        let mut run = AgentRun {
            guard: Guard(child),
            metrics,
            log,
        };
        // Ready once it counted an event and the stream holds its header message.
        let until = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(st) = run.guard.0.try_wait()? {
                bail!("the agent exited ({st}): {}", run.log_text());
            }
            let _ = Command::new("/bin/true").status();
            let counted = run
                .scrape()
                .is_some_and(|m| sample_sum(&m, "tracer_events_total{") > 0.0);
            if counted && server.number("/jsz", "messages").unwrap_or(0) > 0 {
                break;
            }
            if Instant::now() > until {
                bail!("the agent never published: {}", run.log_text());
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        Ok(run)
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn scrape(&self) -> Option<String> {
        get(self.metrics, "/metrics", Duration::from_secs(5))
            .filter(|(status, _)| status.contains(" 200 "))
            .map(|(_, body)| body)
    }

    fn read(&self, server: &Server) -> Result<Reading> {
        let m = self
            .scrape()
            .context("the agent's /metrics did not answer")?;
        Ok(Reading {
            events: sample_sum(&m, "tracer_events_total{"),
            kernel_drops: sample(&m, "tracer_dropped_events_total"),
            buffer_drops: sample(&m, "tracer_nats_dropped_events_total"),
            buffered: sample(&m, "tracer_nats_buffered_events"),
            cpu_s: super::cost::cpu_seconds(self.guard.0.id()).context("the agent is gone")?,
            wire_bytes: server.number("/varz", "in_bytes")?,
            stream_bytes: server.number("/jsz", "bytes")?,
        })
    }

    /// Waits until nothing is buffered and the event count almost stood still for half a
    /// second (the agent caught up with the ring). The host's own processes go on (other
    /// builds, other benches): "almost" is under 1,000 events in the pause, and after 60 s
    /// the reading is taken as it is, said on stdout.
    fn settle(&self, server: &Server) -> Result<Reading> {
        let start = Instant::now();
        let mut last = self.read(server)?;
        loop {
            std::thread::sleep(Duration::from_millis(500));
            let now = self.read(server)?;
            if now.buffered == 0.0 && now.events - last.events < 1000.0 {
                return Ok(now);
            }
            if start.elapsed() > Duration::from_secs(60) {
                println!("bench: agent: the host never went quiet; reading taken after 60 s");
                return Ok(now);
            }
            last = now;
        }
    }

    /// SIGTERM, then its exit (the end record and the drain of its buffer).
    fn stop(mut self) {
        self.guard.terminate();
    }
}

/// Sum of every sample whose name (with labels) starts with `prefix`.
fn sample_sum(text: &str, prefix: &str) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(prefix))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// `actor STEP`, which prints `lifetimes N seconds S`: (N, S).
fn generate(actor: &Path, step: &str) -> Result<(u64, f64)> {
    let out = Command::new(actor).arg(step).output()?;
    if !out.status.success() {
        bail!("actor {step} failed: {}", out.status);
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let w: Vec<&str> = text.split_whitespace().collect();
    match (w.get(1).map(|v| v.parse()), w.get(3).map(|v| v.parse())) {
        (Some(Ok(n)), Some(Ok(s))) => Ok((n, s)),
        _ => bail!("actor {step} printed {text:?}"),
    }
}

/// `tracer replay --no-tui SOURCE`'s summary: (events, dropped, sequence gaps).
fn replayed(tracer: &Path, source: &str) -> Result<(u64, u64, u64)> {
    let out = Command::new(tracer)
        .args(["replay", "--no-tui", source])
        .stdout(Stdio::null())
        .output()?;
    let err = String::from_utf8_lossy(&out.stderr);
    let line = err
        .lines()
        .find(|l| l.starts_with("tracer: replayed "))
        .with_context(|| format!("tracer replay {source} gave no summary: {err}"))?;
    let number_before = |word: &str| -> Option<u64> {
        let i = line.find(word)?;
        line[..i].split_whitespace().last()?.parse().ok()
    };
    let n = line["tracer: replayed ".len()..]
        .split_whitespace()
        .next()
        .and_then(|v| v.parse().ok());
    match (
        n,
        number_before(" dropped"),
        number_before(" sequence gaps"),
    ) {
        (Some(n), Some(d), Some(g)) => Ok((n, d, g)),
        _ => bail!("cannot read the summary {line:?}"),
    }
}

/// One rate: the agent's figures, and the stream read back.
struct RateRow {
    target: u64,
    generated: f64,
    received: f64,
    /// Share of the events counted by the time the generator ended (the rest came from the
    /// ring buffer after it).
    live_share: f64,
    kernel_drops: f64,
    buffer_drops: f64,
    gaps: u64,
    cpu_per_10k: f64,
    wire_per_event: f64,
    stream_per_event: f64,
    file_per_event: f64,
    hwm_mib: f64,
}

fn rate_run(b: &Bench, actor: &Path, target: u64, n: usize) -> Result<RateRow> {
    let server = Server::start(&b.tmp.join(format!("nats-{n}")))?;
    let node = format!("bench-{n}");
    let agent = AgentRun::start(b, &server, &node)?;
    let lifetimes_per_s = target as f64 / EVENTS_PER_LIFETIME;
    let before = agent.read(&server)?;
    let (made, secs) = generate(actor, &format!("pace:vfork:{lifetimes_per_s:.0}:{SECS}"))?;
    let at_end = agent.read(&server)?;
    let after = agent.settle(&server)?;
    let hwm = status_kib(agent.guard.0.id(), "VmHWM:").unwrap_or(0) as f64 / 1024.0;
    agent.stop();
    let events = after.events - before.events;
    let cpu_s = after.cpu_s - before.cpu_s;
    let rate = events / secs;
    let source = format!("nats://127.0.0.1:{}/{node}", server.port);
    let (_, _, gaps) = replayed(&b.tracer, &source)?;
    let file_per_event = record_bytes_per_event(b, actor, lifetimes_per_s)?;
    Ok(RateRow {
        target,
        generated: made as f64 * EVENTS_PER_LIFETIME / secs,
        received: rate,
        live_share: (at_end.events - before.events) / events,
        kernel_drops: after.kernel_drops - before.kernel_drops,
        buffer_drops: after.buffer_drops - before.buffer_drops,
        gaps,
        cpu_per_10k: 100.0 * cpu_s / secs / (rate / 10_000.0),
        wire_per_event: (after.wire_bytes - before.wire_bytes) as f64 / events,
        stream_per_event: (after.stream_bytes - before.stream_bytes) as f64 / events,
        file_per_event,
        hwm_mib: hwm,
    })
}

/// Bytes per event of a `tracer record --all` file of the same generator run (paced the
/// same), its header (the /proc snapshot) left out as the stream's is.
fn record_bytes_per_event(b: &Bench, actor: &Path, lifetimes_per_s: f64) -> Result<f64> {
    let file = b.tmp.join("agent-reference.trace");
    let _ = std::fs::remove_file(&file);
    let mut rec = Guard(
        Command::new(&b.tracer)
            .args(["record", "--all", "-o"])
            .arg(&file)
            .stderr(Stdio::null())
            .spawn()?,
    );
    // The probes attach and the header is written within a second or two.
    let until = Instant::now() + Duration::from_secs(30);
    while header_len(&file).is_none() {
        if Instant::now() > until {
            bail!("tracer record wrote no header");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(500));
    generate(actor, &format!("pace:vfork:{lifetimes_per_s:.0}:{SECS}"))?;
    rec.terminate();
    let (events, _, _) = super::recorded_counts(&file)?;
    let size = std::fs::metadata(&file)?.len();
    let head = header_len(&file).context("no header")?;
    Ok((size - head) as f64 / events.max(1) as f64)
}

/// Bytes of a trace file's preamble and header (20 + header_len), once written.
fn header_len(file: &Path) -> Option<u64> {
    let bytes = std::fs::read(file).ok()?;
    let len = u32::from_le_bytes(bytes.get(12..16)?.try_into().ok()?) as u64;
    (bytes.len() as u64 >= 20 + len).then_some(20 + len)
}

/// The agent's RSS while `actor burst:vfork:N` makes `total` lifetimes in chunks.
fn rss_run(b: &Bench, actor: &Path, total: u64) -> Result<(String, f64, f64)> {
    let server = Server::start(&b.tmp.join("nats-rss"))?;
    let agent = AgentRun::start(b, &server, "bench-rss")?;
    let pid = agent.guard.0.id();
    let mib = |field: &str| status_kib(pid, field).map_or(0.0, |k| k as f64 / 1024.0);
    let mut rows = vec![(0u64, mib("VmRSS:"))];
    let mut s = String::from("| lifetimes so far | agent VmRSS |\n|---|---|\n");
    let chunk = 50_000u64.min(total.max(1));
    let mut done = 0u64;
    while done < total {
        let (made, _) = generate(actor, &format!("burst:vfork:{}", chunk.min(total - done)))?;
        done += made;
        agent.settle(&server)?;
        rows.push((done, mib("VmRSS:")));
        println!("bench: agent rss {done}: {:.1} MiB", mib("VmRSS:"));
    }
    let hwm = mib("VmHWM:");
    agent.stop();
    for (n, m) in &rows {
        s.push_str(&format!("| {n} | {m:.1} MiB |\n"));
    }
    // Growth after warm-up: from the first chunk to the end.
    let first = rows.get(1).map_or(0.0, |r| r.1);
    let last = rows.last().map_or(0.0, |r| r.1);
    Ok((s, hwm, last - first))
}

fn met(ok: bool) -> &'static str {
    if ok {
        "met"
    } else {
        "NOT met"
    }
}

/// The section: one row per rate, then the RSS run.
pub(super) fn agent(b: &Bench, actor: &Path) -> Result<String> {
    let mut s = String::from(
        "| target events/s | generated events/s | received events/s | received by the generator's end | kernel drops | buffer drops | stream gaps | agent CPU per 10k events/s | wire B/event | stream B/event | trace file B/event | stream / file | agent VmHWM |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    let mut rows = Vec::new();
    for (n, &target) in RATES.iter().enumerate() {
        let r = rate_run(b, actor, target, n)?;
        println!(
            "bench: agent {}: {:.0} events/s received, {} drops, {:.2}% CPU per 10k/s",
            r.target,
            r.received,
            r.kernel_drops + r.buffer_drops,
            r.cpu_per_10k
        );
        let label = match r.target {
            0 => "max".to_string(),
            t => t.to_string(),
        };
        s.push_str(&format!(
            "| {label} | {:.0} | {:.0} | {:.1}% | {} | {} | {} | {:.2}% | {:.1} | {:.1} | {:.1} | {:.2}x | {:.1} MiB |\n",
            r.generated,
            r.received,
            100.0 * r.live_share,
            r.kernel_drops,
            r.buffer_drops,
            r.gaps,
            r.cpu_per_10k,
            r.wire_per_event,
            r.stream_per_event,
            r.file_per_event,
            r.stream_per_event / r.file_per_event,
            r.hwm_mib
        ));
        rows.push(r);
    }
    let clean = rows
        .iter()
        .filter(|r| r.kernel_drops + r.buffer_drops == 0.0 && r.gaps == 0)
        .map(|r| r.received)
        .fold(0.0, f64::max);
    let worst_cpu = rows.iter().map(|r| r.cpu_per_10k).fold(0.0, f64::max);
    let worst_bytes = rows
        .iter()
        .map(|r| r.stream_per_event / r.file_per_event)
        .fold(0.0, f64::max);
    s.push_str(&format!(
        "\nHighest rate received with 0 drops and 0 gaps: **{clean:.0} events/s** (goal: 0 drops at >= 100,000: {}).\n\
         Agent CPU: at most **{worst_cpu:.2}%** of one core per 10k events/s (goal <= 5%: {}).\n\
         Stream bytes per event: at most **{worst_bytes:.2}x** a trace file's (goal <= 1.2x: {}).\n\n",
        met(clean >= 100_000.0),
        met(worst_cpu <= 5.0),
        met(worst_bytes <= 1.2),
    ));
    let total = lifetimes_total();
    let (table, hwm, growth) = rss_run(b, actor, total)?;
    s.push_str(&format!(
        "Agent RSS over {total} process lifetimes (`actor burst:vfork:50000` chunks, sampled once \
         the agent caught up):\n\n{table}\nPeak (VmHWM) **{hwm:.1} MiB**, growth after the first \
         chunk {growth:.1} MiB (goal <= 64 MiB and flat: {}).\n",
        met(hwm <= 64.0 && growth <= 8.0)
    ));
    Ok(s)
}
