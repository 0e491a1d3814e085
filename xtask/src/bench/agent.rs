//! `cargo xtask bench --only agent`: `tracer agent --all` publishing to a loopback
//! `nats-server -js` while `actor` makes one kind of event at rising rates: process
//! lifetimes (a busy node's health probes and cron jobs), thread lifetimes (a thread pool
//! that grows and shrinks), signals (Go's SIGURG preemption, recorded with `--signals all`).
//! For each, the highest rate sustained with no loss, as Inspektor Gadget's harness measures
//! its agent: after a warm-up, several runs of a fixed length at each rate.
//!
//! Counted, not timed where it can be: events and drops from the agent's own metrics and the
//! stream read back (`tracer replay`'s sequence gaps), CPU from the run time of the agent's
//! threads (/proc/PID/task/*/schedstat), bytes from nats-server's monitoring (`/varz` in_bytes, `/jsz` bytes) and
//! from a `tracer record --all` file of the same generator, RSS from /proc/PID/status.

use super::{status_kib, Bench};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tests::servers::{get, sample, start_nats_with, two_ports, Guard};

/// One kind of event the bench drives, and what one of its units (a lifetime, a signal)
/// makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Generator {
    /// vfork() children that exit at once and are reaped: the fork, the child's exit, and the
    /// SIGCHLD its parent is sent (the default signal set records it), one worker per CPU.
    Process,
    /// Bare clone(CLONE_THREAD) threads that exit at once and are joined: the clone and the
    /// thread's exit (no SIGCHLD), one worker per CPU.
    Thread,
    /// kill(getpid(), SIGUSR1) with a handler, from one thread; the agent records every
    /// signal (`--signals all`).
    Signal,
}

impl Generator {
    const ALL: [Generator; 3] = [Generator::Process, Generator::Thread, Generator::Signal];

    fn key(self) -> &'static str {
        match self {
            Generator::Process => "process",
            Generator::Thread => "thread",
            Generator::Signal => "signal",
        }
    }

    fn what(self) -> &'static str {
        match self {
            Generator::Process => "process lifetimes (`actor pace:vfork:RATE:SECS`: fork + exit + SIGCHLD = 3 events each)",
            Generator::Thread => "thread lifetimes (`actor pace:clone-thread:RATE:SECS`: clone + exit = 2 events each)",
            Generator::Signal => "signals (`actor signals:RATE:SECS`, agent with `--signals all`: 1 event each)",
        }
    }

    /// Events one unit makes.
    fn per_unit(self) -> f64 {
        match self {
            Generator::Process => 3.0,
            Generator::Thread => 2.0,
            Generator::Signal => 1.0,
        }
    }

    /// What the agent is run with beside `--all`.
    fn agent_args(self) -> &'static [&'static str] {
        match self {
            Generator::Signal => &["--signals", "all"],
            _ => &[],
        }
    }

    /// Target rates in events/s, rising; 0 is as fast as the generator can.
    fn rates(self) -> &'static [u64] {
        match self {
            Generator::Process => &[30_000, 0],
            Generator::Thread => &[100_000, 200_000, 0],
            Generator::Signal => &[250_000, 500_000, 0],
        }
    }

    /// The actor's step that makes `events_per_s` (0: as fast as it can) for `secs`.
    fn step(self, events_per_s: u64, secs: f64) -> String {
        let units = events_per_s as f64 / self.per_unit();
        match self {
            Generator::Process => format!("pace:vfork:{units:.0}:{secs}"),
            Generator::Thread => format!("pace:clone-thread:{units:.0}:{secs}"),
            Generator::Signal => format!("signals:{units:.0}:{secs}"),
        }
    }
}

/// How long the bench runs, from the environment: `TRACER_BENCH_AGENT_RUNS` runs (default 5)
/// of `TRACER_BENCH_AGENT_SECS` seconds (20) at each rate after `TRACER_BENCH_AGENT_WARMUP`
/// seconds (5), for the generators `TRACER_BENCH_AGENT_GENERATORS` names (comma-separated
/// `process,thread,signal`, default all); `TRACER_BENCH_AGENT_LIFETIMES` lifetimes in the RSS
/// run (1,000,000; 0 leaves it out).
#[derive(Clone, Debug)]
struct Plan {
    runs: u32,
    secs: f64,
    warmup: f64,
    generators: Vec<Generator>,
    lifetimes: u64,
}

impl Plan {
    fn from_env() -> Plan {
        fn var<T: std::str::FromStr>(name: &str, default: T) -> T {
            std::env::var(name)
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(default)
        }
        let names = std::env::var("TRACER_BENCH_AGENT_GENERATORS").unwrap_or_default();
        let generators = Generator::ALL
            .into_iter()
            .filter(|g| names.is_empty() || names.split(',').any(|n| n.trim() == g.key()))
            .collect();
        Plan {
            runs: var("TRACER_BENCH_AGENT_RUNS", 5u32).max(1),
            secs: var("TRACER_BENCH_AGENT_SECS", 20.0f64).max(1.0),
            warmup: var("TRACER_BENCH_AGENT_WARMUP", 5.0f64).max(0.0),
            generators,
            lifetimes: var("TRACER_BENCH_AGENT_LIFETIMES", 1_000_000u64),
        }
    }
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
    fn start(b: &Bench, server: &Server, node: &str, extra: &[&str]) -> Result<AgentRun> {
        let (metrics, _) = two_ports();
        let log = b.tmp.join(format!("agent-{node}.log"));
        let child = Command::new(&b.tracer)
            .args(["agent", "--all", "--node", node])
            .arg("--key")
            .arg(b.tmp.join(format!("agent-{node}.nk")))
            .args(extra)
            // Room for a whole rate's runs (a 500k/s signal stream is ~4 MB/s): the stream
            // read back for gaps must not have lost its oldest messages to the size limit.
            .args(["--stream-max-bytes", &(16u64 << 30).to_string()])
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

/// One run at one rate: what the generator made and the agent counted, used and lost.
#[derive(Clone, Copy, Debug, Default)]
struct RunFigures {
    /// Events/s the generator made (its own count).
    generated: f64,
    /// Events/s the agent counted, up to when it caught up (the host's own included).
    received: f64,
    /// Share of the events counted by the time the generator ended (the rest came from the
    /// ring buffer after it).
    live_share: f64,
    kernel_drops: f64,
    buffer_drops: f64,
    /// The agent's CPU in % of one core per 10k events/s received.
    cpu_per_10k: f64,
}

/// One rate: its runs, and the stream read back.
struct RateRow {
    target: u64,
    runs: Vec<RunFigures>,
    gaps: u64,
    wire_per_event: f64,
    stream_per_event: f64,
    hwm_mib: f64,
}

impl RateRow {
    fn drops(&self) -> f64 {
        self.runs
            .iter()
            .map(|r| r.kernel_drops + r.buffer_drops)
            .sum()
    }

    /// The rate every run sustained (the slowest run's), when nothing was lost and, for a
    /// paced rate, every run made at least 95% of it.
    fn sustained(&self) -> Option<f64> {
        let slowest = self
            .runs
            .iter()
            .map(|r| r.generated)
            .fold(f64::MAX, f64::min);
        let reached = self.target == 0 || slowest >= 0.95 * self.target as f64;
        (self.drops() == 0.0 && self.gaps == 0 && reached).then_some(slowest)
    }
}

/// Median, min and max of `f` over the runs.
fn spread(runs: &[RunFigures], f: impl Fn(&RunFigures) -> f64) -> (f64, f64, f64) {
    let mut v: Vec<f64> = runs.iter().map(f).collect();
    v.sort_by(f64::total_cmp);
    let mid = v.get(v.len() / 2).copied().unwrap_or(0.0);
    (
        mid,
        v.first().copied().unwrap_or(0.0),
        v.last().copied().unwrap_or(0.0),
    )
}

/// One run of the generator while the agent runs: its figures from the readings around it.
fn one_run(
    agent: &AgentRun,
    server: &Server,
    actor: &Path,
    step: &str,
    per_unit: f64,
) -> Result<(RunFigures, Reading, Reading)> {
    let before = agent.read(server)?;
    let (made, secs) = generate(actor, step)?;
    let at_end = agent.read(server)?;
    let after = agent.settle(server)?;
    let events = after.events - before.events;
    let rate = events / secs;
    let cpu_s = after.cpu_s - before.cpu_s;
    let figures = RunFigures {
        generated: made as f64 * per_unit / secs,
        received: rate,
        live_share: (at_end.events - before.events) / events,
        kernel_drops: after.kernel_drops - before.kernel_drops,
        buffer_drops: after.buffer_drops - before.buffer_drops,
        cpu_per_10k: 100.0 * cpu_s / secs / (rate / 10_000.0),
    };
    Ok((figures, before, after))
}

/// One rate of one generator: a fresh server and agent, the warm-up, then the runs; the
/// whole stream read back for gaps.
fn rate_run(b: &Bench, plan: &Plan, actor: &Path, g: Generator, target: u64) -> Result<RateRow> {
    let tag = format!("{}-{target}", g.key());
    let server = Server::start(&b.tmp.join(format!("nats-{tag}")))?;
    let node = format!("bench-{tag}");
    let agent = AgentRun::start(b, &server, &node, g.agent_args())?;
    if plan.warmup > 0.0 {
        generate(actor, &g.step(target, plan.warmup))?;
        agent.settle(&server)?;
    }
    let step = g.step(target, plan.secs);
    let mut runs = Vec::new();
    let (mut first, mut last) = (None, None);
    for n in 0..plan.runs {
        let (r, before, after) = one_run(&agent, &server, actor, &step, g.per_unit())?;
        println!(
            "bench: agent {} {target} run {n}: {:.0} generated, {:.0} received events/s, {} drops, {:.3}% CPU per 10k/s",
            g.key(),
            r.generated,
            r.received,
            r.kernel_drops + r.buffer_drops,
            r.cpu_per_10k
        );
        first.get_or_insert(before);
        last = Some(after);
        runs.push(r);
    }
    let hwm = status_kib(agent.guard.0.id(), "VmHWM:").unwrap_or(0) as f64 / 1024.0;
    agent.stop();
    let (first, last) = (first.unwrap_or_default(), last.unwrap_or_default());
    let events = (last.events - first.events).max(1.0);
    let source = format!("nats://127.0.0.1:{}/{node}", server.port);
    let (_, _, gaps) = replayed(&b.tracer, &source)?;
    // Said as soon as known: a run cut short still shows what it read back.
    println!(
        "bench: agent {} {target}: {gaps} stream gaps, {:.1} stream B/event, {hwm:.1} MiB VmHWM",
        g.key(),
        (last.stream_bytes - first.stream_bytes) as f64 / events
    );
    Ok(RateRow {
        target,
        runs,
        gaps,
        wire_per_event: (last.wire_bytes - first.wire_bytes) as f64 / events,
        stream_per_event: (last.stream_bytes - first.stream_bytes) as f64 / events,
        hwm_mib: hwm,
    })
}

/// Bytes per event of a `tracer record --all` file of the generator at its first rate for
/// `secs`, its header (the /proc snapshot) left out as the stream's is.
fn record_bytes_per_event(b: &Bench, actor: &Path, g: Generator, secs: f64) -> Result<f64> {
    let file = b.tmp.join(format!("agent-reference-{}.trace", g.key()));
    let _ = std::fs::remove_file(&file);
    let mut rec = Guard(
        Command::new(&b.tracer)
            .args(["record", "--all", "-o"])
            .arg(&file)
            .args(g.agent_args())
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
    generate(actor, &g.step(g.rates()[0], secs))?;
    rec.terminate();
    let (events, _, _) = super::recorded_counts(&file)?;
    let size = std::fs::metadata(&file)?.len();
    let head = header_len(&file).context("no header")?;
    let _ = std::fs::remove_file(&file);
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
    let agent = AgentRun::start(b, &server, "bench-rss", &[])?;
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

/// One generator's table: a row per rate.
fn generator_table(rows: &[RateRow]) -> String {
    let mut s = String::from(
        "| target events/s | generated events/s, median (min–max) | received events/s (median) | received by the generator's end (lowest) | kernel drops | buffer drops | stream gaps | agent CPU per 10k events/s, median (min–max) | wire B/event | stream B/event | agent VmHWM |\n\
         |---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        let label = match r.target {
            0 => "max".to_string(),
            t => t.to_string(),
        };
        let (gen, gen_lo, gen_hi) = spread(&r.runs, |f| f.generated);
        let (rec, _, _) = spread(&r.runs, |f| f.received);
        let (_, live_lo, _) = spread(&r.runs, |f| f.live_share);
        let (cpu, cpu_lo, cpu_hi) = spread(&r.runs, |f| f.cpu_per_10k);
        let kernel: f64 = r.runs.iter().map(|f| f.kernel_drops).sum();
        let buffer: f64 = r.runs.iter().map(|f| f.buffer_drops).sum();
        s.push_str(&format!(
            "| {label} | {gen:.0} ({gen_lo:.0}–{gen_hi:.0}) | {rec:.0} | {:.1}% | {kernel} | {buffer} | {} | {cpu:.3}% ({cpu_lo:.3}–{cpu_hi:.3}%) | {:.1} | {:.1} | {:.1} MiB |\n",
            100.0 * live_lo,
            r.gaps,
            r.wire_per_event,
            r.stream_per_event,
            r.hwm_mib
        ));
    }
    s
}

/// What one generator gave: its highest clean rate, its worst CPU per 10k events/s (the
/// median of each rate's runs), whether its fastest rate was clean, and stream bytes per
/// event against a trace file's.
struct Outcome {
    generator: Generator,
    alone: f64,
    sustained: f64,
    max_clean: bool,
    worst_cpu: f64,
    stream_over_file: f64,
}

/// One generator: alone (no agent) for the warm-up's length, each rate, the reference file.
fn generator_section(
    b: &Bench,
    plan: &Plan,
    actor: &Path,
    g: Generator,
) -> Result<(String, Outcome)> {
    let alone_secs = plan.warmup.max(5.0);
    let (made, secs) = generate(actor, &g.step(0, alone_secs))?;
    let alone = made as f64 * g.per_unit() / secs;
    println!(
        "bench: agent {}: the generator alone makes {alone:.0} events/s",
        g.key()
    );
    let mut rows = Vec::new();
    for &target in g.rates() {
        rows.push(rate_run(b, plan, actor, g, target)?);
    }
    let file = record_bytes_per_event(b, actor, g, alone_secs)?;
    let sustained = rows
        .iter()
        .filter_map(RateRow::sustained)
        .fold(0.0, f64::max);
    let worst_cpu = rows
        .iter()
        .map(|r| spread(&r.runs, |f| f.cpu_per_10k).0)
        .fold(0.0, f64::max);
    let stream = rows.iter().map(|r| r.stream_per_event).fold(0.0, f64::max);
    let mut s = format!(
        "### {}\n\nThe generator alone (no agent, {alone_secs} s as fast as it can): **{alone:.0} events/s**.\n\n{}",
        g.what(),
        generator_table(&rows)
    );
    s.push_str(&format!(
        "\nHighest rate every run sustained with 0 drops and 0 gaps: **{sustained:.0} events/s** ({:.0} per second of {}). A `tracer record --all` file of the generator holds {file:.1} B/event: the stream at most {:.2}x that.\n\n",
        sustained / g.per_unit(),
        match g {
            Generator::Signal => "signals",
            _ => "lifetimes",
        },
        stream / file,
    ));
    let outcome = Outcome {
        generator: g,
        alone,
        sustained,
        max_clean: rows.last().and_then(RateRow::sustained).is_some(),
        worst_cpu,
        stream_over_file: stream / file,
    };
    Ok((s, outcome))
}

/// The goals, one row each, met or not, from what the generators gave.
fn goals(outcomes: &[Outcome]) -> String {
    let mut s = String::from("| goal | figure | |\n|---|---|---|\n");
    for o in outcomes {
        let (rate_goal, rate_ok, cpu_goal) = match o.generator {
            Generator::Signal => (
                "signals: 0 drops at >= 500,000 events/s".to_string(),
                o.sustained >= 500_000.0,
                Some(0.2),
            ),
            Generator::Thread => (
                "thread lifetimes: 0 drops at >= 100,000 lifetimes/s (200,000 events/s)".to_string(),
                o.sustained >= 200_000.0,
                None,
            ),
            Generator::Process => (
                format!("process lifetimes: 0 drops at the generator's own maximum ({:.0} events/s alone)", o.alone),
                o.max_clean,
                Some(1.0),
            ),
        };
        s.push_str(&format!(
            "| {rate_goal} | **{:.0} events/s** sustained | {} |\n",
            o.sustained,
            met(rate_ok)
        ));
        let cpu = format!("**{:.3}%** (the worst rate's median)", o.worst_cpu);
        match cpu_goal {
            Some(goal) => s.push_str(&format!(
                "| {}: agent CPU <= {goal}% of a core per 10k events/s | {cpu} | {} |\n",
                o.generator.key(),
                met(o.worst_cpu <= goal)
            )),
            None => s.push_str(&format!(
                "| {}: agent CPU per 10k events/s (no goal) | {cpu} | |\n",
                o.generator.key()
            )),
        }
        s.push_str(&format!(
            "| {}: stream bytes per event <= 1.2x a trace file's | **{:.2}x** | {} |\n",
            o.generator.key(),
            o.stream_over_file,
            met(o.stream_over_file <= 1.2)
        ));
    }
    s
}

/// The section: each generator's rates, the goals, then the RSS run.
pub(super) fn agent(b: &Bench, actor: &Path) -> Result<String> {
    let plan = Plan::from_env();
    let started = Instant::now();
    let mut s = format!(
        "Each rate: a fresh `nats-server -js` and `tracer agent --all`, {} s of warm-up at the rate, then {} runs of {} s (`TRACER_BENCH_AGENT_WARMUP`, `_RUNS`, `_SECS`).\n\n",
        plan.warmup, plan.runs, plan.secs
    );
    let mut outcomes = Vec::new();
    for &g in &plan.generators {
        let (text, o) = generator_section(b, &plan, actor, g)?;
        s.push_str(&text);
        outcomes.push(o);
    }
    s.push_str(&goals(&outcomes));
    if plan.lifetimes > 0 {
        let total = plan.lifetimes;
        let (table, hwm, growth) = rss_run(b, actor, total)?;
        s.push_str(&format!(
            "\nAgent RSS over {total} process lifetimes (`actor burst:vfork:50000` chunks, sampled once \
             the agent caught up):\n\n{table}\nPeak (VmHWM) **{hwm:.1} MiB**, growth after the first \
             chunk {growth:.1} MiB (goal <= 64 MiB and flat: {}).\n",
            met(hwm <= 64.0 && growth <= 8.0)
        ));
    }
    s.push_str(&format!(
        "\nThe agent bench took {:.0} s.\n",
        started.elapsed().as_secs_f64()
    ));
    Ok(s)
}
