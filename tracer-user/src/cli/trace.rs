//! `tracer trace`: live strace-like output.

use super::{OutputFormat, PodArgs, TargetArgs};
use anyhow::{Context, Result};
use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};
use tracer::capture::{header_for, Capture, CaptureBuilder, Target};
use tracer::clock::Clock;
use tracer::lineage::{Engine, LiveScope, PodQuery, PodScope, SnapshotProcess};
use tracer::render::LineRenderer;
use tracer::source::{DriveOpts, Ended, EventSource, SourceLoop, Step};
use tracer::stats::StreamStats;
use tracer::tracefile::TraceWriter;

pub fn target_of(args: &TargetArgs) -> Result<Target> {
    Ok(match (args.pid, args.all, args.command.is_empty()) {
        (Some(pid), false, true) => Target::Pid(pid),
        (None, true, true) => Target::All,
        (None, false, false) => Target::Command(args.command.clone()),
        (None, false, true) => anyhow::bail!("say what to trace: --pid PID, --all, or -- CMD ARGS"),
        _ => anyhow::bail!("--pid, --all and -- CMD are exclusive"),
    })
}

/// What a live command follows: with `--pod` or `-n` and no other target, every process
/// (its [`source_loop`] keeps the pod's events).
pub(super) fn live_target(args: &TargetArgs, pod: &PodArgs) -> Result<Target> {
    let none = args.pid.is_none() && !args.all && args.command.is_empty();
    if none && pod.query().is_some() {
        return Ok(Target::All);
    }
    target_of(args)
}

/// The loop over `cap`; with a pod asked for, only its events go on (the engine that tells
/// them seeded with `seed`, what existed at the start).
pub(super) fn source_loop(
    cap: Capture,
    pod: Option<PodQuery>,
    seed: &[SnapshotProcess],
) -> SourceLoop<Capture> {
    let lp = SourceLoop::new(cap);
    match pod {
        Some(q) => lp.scoped(LiveScope::new(q, seed)),
        None => lp,
    }
}

/// What `trace` prints: lines (or JSON lines) of each event, through `renderer`, with the
/// names `-Y` wants from `engine`; `--record`'s file gets every event too.
struct Emit {
    format: OutputFormat,
    renderer: LineRenderer,
    engine: Option<Engine>,
    clock: Clock,
    rec: Option<TraceWriter<std::fs::File>>,
    stats: StreamStats,
}

impl Emit {
    fn batch(
        &mut self,
        batch: &mut Vec<tracer::Event>,
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        for ev in batch.drain(..) {
            self.stats.observe(&ev);
            if let Some(w) = self.rec.as_mut() {
                w.write_event(&ev).map_err(std::io::Error::other)?;
            }
            if let Some(e) = &mut self.engine {
                e.apply(&ev);
            }
            match self.format {
                OutputFormat::Json => serde_json::to_string(&ev.timed(&self.clock))
                    .map_err(std::io::Error::other)
                    .and_then(|s| writeln!(out, "{s}"))?,
                OutputFormat::Text => self
                    .renderer
                    .render_in(&ev, self.engine.as_ref())
                    .iter()
                    .try_for_each(|l| writeln!(out, "{l}"))?,
            };
        }
        out.flush()
    }

    /// The recording's counters, and its frames sealed now and then.
    fn tick(&mut self, cap: &Capture) -> Result<()> {
        if let Some(w) = self.rec.as_mut() {
            w.write_stats(cap.drops(), cap.seq_issued(), cap.decode_errors())?;
            w.maybe_flush()?;
        }
        Ok(())
    }
}

/// Where the lines go: the `-o` file (streamed, never through a symlink) or stdout.
fn open_out(output: Option<&std::path::Path>) -> Result<Box<dyn Write + Send>> {
    Ok(match output {
        Some(path) => Box::new(std::io::BufWriter::new(
            tracer::outfile::create_streaming(path)
                .with_context(|| format!("cannot create {}", tracer::escape::path(path)))?,
        )),
        None => Box::new(std::io::BufWriter::new(std::io::stdout())),
    })
}

/// The capture, with `--record`'s trace file when asked for, what existed at the start (the
/// recording's snapshot; empty without one), and the clock the lines' times come from: the
/// recording's own header when there is one, so the lines and the file agree on every time.
type Started = (
    Capture,
    Option<TraceWriter<std::fs::File>>,
    Vec<SnapshotProcess>,
    Clock,
);

fn start(
    target: &Target,
    args: &TargetArgs,
    record: Option<&std::path::Path>,
    q: Option<&PodQuery>,
) -> Result<Started> {
    if let Some(path) = record {
        let followed = super::Snapshot::Followed;
        let (cap, w, seed, clock) = start_recording(target, args, followed, path, q)?;
        return Ok((cap, Some(w), seed, clock));
    }
    let cap = CaptureBuilder::new(target.clone())
        .ring_bytes(args.ring_bytes)
        .syscalls(args.syscalls)
        .signals(args.signals.into())
        .start()?;
    for note in cap.notes() {
        tracer::say!("tracer: note: {note}");
    }
    Ok((cap, None, Vec::new(), Clock::live()))
}

/// `tracer trace`'s options beyond the target.
pub struct TraceOpts {
    pub format: OutputFormat,
    pub seq: bool,
    pub output: Option<std::path::PathBuf>,
    pub record: Option<std::path::PathBuf>,
    pub pod: PodArgs,
    pub lines: super::lines::LineArgs,
}

pub fn run(args: TargetArgs, o: TraceOpts) -> Result<ExitCode> {
    let target = live_target(&args, &o.pod)?;
    // Refused before any probe loads: an unknown `-e` word is a usage error.
    o.lines.renderer(Clock::None, o.seq, false)?;
    // One thread: the reader's poll and tick then wake this thread alone, where a worker
    // thread would wake it through a futex each time (twice the idle CPU).
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let stop = stop_signal()?;
        let mut out = open_out(o.output.as_deref())?;
        let query = o.pod.query();
        let (cap, rec, seed, clock) = start(&target, &args, o.record.as_deref(), query.as_ref())?;
        let deadline = args
            .duration
            .map(|s| Instant::now() + Duration::from_secs_f64(s.max(0.0)));
        let mut renderer = o.lines.renderer(clock, o.seq, !cap.syscall_probes())?;
        renderer.traced = traced_roots(&cap);
        let mut emit = Emit {
            format: o.format,
            engine: renderer.decode.any().then(names_engine),
            renderer,
            clock,
            rec,
            stats: StreamStats::default(),
        };
        // A write error ends the trace: quietly for a closed stdout (`| head`), else below.
        let mut write_err = None;
        let mut lp = source_loop(cap, query, &seed);
        drive(&mut lp, deadline, stop, |step, cap| match step {
            Step::Batch(batch) => match emit.batch(batch, &mut out) {
                Ok(()) => Ok(true),
                Err(e) => {
                    write_err = Some(e);
                    Ok(false)
                }
            },
            Step::Tick => emit.tick(cap).map(|()| true),
            Step::Drops(_) => Ok(true),
        })
        .await?;
        let mut cap = lp.into_source();
        if let (Some(w), Some(path)) = (emit.rec.take(), &o.record) {
            finish_record(w, &cap, path)?;
        }
        super::output::check_write(write_err.map_or(Ok(()), Err))?;
        tracer::say!("tracer: {}", emit.stats.summary(cap.drops()));
        if cap.decode_errors() > 0 {
            tracer::say!(
                "tracer: {} records could not be decoded",
                cap.decode_errors()
            );
        }
        let code = command_exit_code(&mut cap);
        cap.release_in_background();
        Ok(ExitCode::from(code))
    })
}

/// The processes a capture traces from its start, what they create joining them (None: all).
fn traced_roots(cap: &Capture) -> Option<std::collections::HashSet<u32>> {
    match cap.target() {
        Target::All => None,
        Target::Pid(pid) => Some([*pid].into()),
        Target::Command(_) => Some(cap.child_pid().into_iter().collect()),
    }
}

/// The engine whose view of each process gives the names `-Y` prints, as the events go by,
/// from the start snapshot on; exited processes are let go as the agent's are (a long
/// `--all` stays bounded).
fn names_engine() -> Engine {
    let mut e = Engine::with_retention(Default::default());
    e.seed_snapshot(&tracer::capture::procfs::snapshot());
    e
}

/// The end of `trace --record`'s file: the capture's counters and the end record.
fn finish_record(
    mut w: tracer::tracefile::TraceWriter<std::fs::File>,
    cap: &Capture,
    path: &std::path::Path,
) -> Result<()> {
    w.set_counters(cap.drops(), cap.seq_issued(), cap.decode_errors());
    let events = w.stats().events;
    w.finish()
        .with_context(|| format!("cannot finish {}", tracer::escape::path(path)))?;
    tracer::say!(
        "tracer: recorded {events} events in {}",
        tracer::escape::path(path)
    );
    Ok(())
}

/// Starts the capture of `target` and the trace file `output` it is written to, its header
/// holding the /proc snapshot (`scope`), read while the probes load; the capture's notes said.
/// What `record` and `trace --record` begin with.
/// With `pod`, the header says the recording is scoped to it. The clock is the header's.
pub(super) fn start_recording(
    target: &Target,
    args: &super::TargetArgs,
    scope: super::Snapshot,
    output: &std::path::Path,
    pod: Option<&PodQuery>,
) -> Result<(
    Capture,
    TraceWriter<std::fs::File>,
    Vec<SnapshotProcess>,
    Clock,
)> {
    let (t, ring_bytes) = (target.clone(), args.ring_bytes);
    let snap = std::thread::spawn(move || header_for(&t, ring_bytes, scope.into()));
    let started = CaptureBuilder::new(target.clone())
        .ring_bytes(args.ring_bytes)
        .syscalls(args.syscalls)
        .signals(args.signals.into())
        .start();
    let mut header = snap
        .join()
        .map_err(|_| anyhow::anyhow!("the /proc snapshot thread panicked"))?;
    let cap = started?;
    cap.facts().add_to(&mut header);
    if let Some(q) = pod {
        let text = PodScope::Typed(q.clone()).pod_text();
        header.set_pod_scope(&text, q.container.as_deref());
    }
    for note in cap.notes() {
        tracer::say!("tracer: note: {note}");
    }
    let w = TraceWriter::create(output, &header)
        .with_context(|| format!("cannot create {}", tracer::escape::path(output)))?;
    Ok((cap, w, header.snapshot_processes(), header.clock()))
}

/// The signal that stopped a live command (0: none), for its exit status.
static STOPPED_BY: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// A future that resolves at Ctrl-C or SIGTERM. The handlers are installed here, at once: a
/// signal that lands while the loop's callback runs waits for the next poll (a `ctrl_c()`
/// future made per iteration would miss it, and `--all` would never stop).
pub(super) fn stop_signal() -> Result<impl std::future::Future<Output = ()>> {
    use std::sync::atomic::Ordering;
    use tokio::signal::unix::{signal, SignalKind};
    let mut sigterm = signal(SignalKind::terminate())?;
    let mut sigint = signal(SignalKind::interrupt())?;
    Ok(async move {
        let sig = tokio::select! {
            _ = sigterm.recv() => libc::SIGTERM,
            _ = sigint.recv() => libc::SIGINT,
        };
        STOPPED_BY.store(sig, Ordering::Relaxed);
    })
}

/// The library's one loop ([`tracer::source::drive`]) with the command line's stops: a
/// 100 ms tick, the deadline, and `stop` ([`stop_signal`]: Ctrl-C and SIGTERM, caught from
/// before the capture starts its command, so a signal at the start is not the default death).
pub(super) async fn drive<S: EventSource>(
    lp: &mut SourceLoop<S>,
    deadline: Option<Instant>,
    stop: impl std::future::Future<Output = ()>,
    on: impl FnMut(Step<'_>, &mut S) -> Result<bool>,
) -> Result<Ended> {
    let opts = DriveOpts {
        tick: Duration::from_millis(100),
        deadline,
    };
    tracer::source::drive(lp, opts, stop, on).await
}

/// Like strace CMD: the command's exit status, 128+N when it was killed by signal N; 128+N
/// when signal N (Ctrl-C, SIGTERM) stopped the tracer first; else 0 (no command, or it still
/// runs).
pub(super) fn command_exit_code(cap: &mut Capture) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    let status = match cap.child_mut().map(|c| c.try_wait()) {
        Some(Ok(Some(st))) => st.code().or_else(|| st.signal().map(|s| 128 + s)),
        _ => None,
    };
    let stopped = STOPPED_BY.load(std::sync::atomic::Ordering::Relaxed);
    let code = match (status, stopped) {
        (Some(c), _) => c,
        (None, s) if s > 0 => 128 + s,
        (None, _) => 0,
    };
    u8::try_from(code).unwrap_or(1)
}
