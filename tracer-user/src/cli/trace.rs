//! `tracer trace`: live strace-like output.

use super::{OutputFormat, PodArgs, TargetArgs};
use anyhow::{Context, Result};
use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};
use tracer::capture::{header_for, Capture, CaptureBuilder, Target};
use tracer::lineage::{LiveScope, PodQuery, PodScope, SnapshotProcess};
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

pub fn run(
    args: TargetArgs,
    format: OutputFormat,
    seq: bool,
    output: Option<std::path::PathBuf>,
    record: Option<std::path::PathBuf>,
    pod: PodArgs,
) -> Result<ExitCode> {
    let target = live_target(&args, &pod)?;
    let query = pod.query();
    // One thread: the reader's poll and tick then wake this thread alone, where a worker
    // thread would wake it through a futex each time (twice the idle CPU).
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let mut out: Box<dyn Write + Send> = match &output {
            Some(path) => Box::new(std::io::BufWriter::new(
                tracer::outfile::create_streaming(path)
                    .with_context(|| format!("cannot create {}", tracer::escape::path(path)))?,
            )),
            None => Box::new(std::io::BufWriter::new(std::io::stdout())),
        };
        // With --record, the same capture's events also go to a trace file.
        let (cap, mut rec, seed) = match &record {
            Some(path) => {
                let followed = super::Snapshot::Followed;
                let q = query.as_ref();
                let (cap, w, seed) = start_recording(&target, &args, followed, path, q)?;
                (cap, Some(w), seed)
            }
            None => {
                let cap = CaptureBuilder::new(target.clone())
                    .ring_bytes(args.ring_bytes)
                    .syscalls(args.syscalls)
                    .signals(args.signals.into())
                    .start()?;
                for note in cap.notes() {
                    tracer::say!("tracer: note: {note}");
                }
                (cap, None, Vec::new())
            }
        };
        let deadline = args
            .duration
            .map(|s| Instant::now() + Duration::from_secs_f64(s.max(0.0)));
        // The capture's start as a trace header would have it: the JSON lines' wall times.
        let clock =
            tracer::tracefile::Header::for_this_host(tracer::tracefile::CaptureMode::All).clock();
        let mut renderer = LineRenderer::new();
        renderer.show_seq = seq;
        renderer.sched_probes = !cap.syscall_probes();
        let mut stats = StreamStats::default();

        let mut emit = |batch: &mut Vec<tracer::Event>,
                        out: &mut Box<dyn Write + Send>,
                        rec: &mut Option<tracer::tracefile::TraceWriter<std::fs::File>>|
         -> std::io::Result<()> {
            for ev in batch.drain(..) {
                stats.observe(&ev);
                if let Some(w) = rec.as_mut() {
                    w.write_event(&ev).map_err(std::io::Error::other)?;
                }
                match format {
                    OutputFormat::Json => serde_json::to_string(&ev.timed(&clock))
                        .map_err(std::io::Error::other)
                        .and_then(|s| writeln!(out, "{s}"))?,
                    OutputFormat::Text => renderer
                        .render(&ev)
                        .iter()
                        .try_for_each(|l| writeln!(out, "{l}"))?,
                };
            }
            out.flush()
        };

        // A write error ends the trace: quietly for a closed stdout (`| head`), else below.
        let mut write_err = None;
        let mut lp = source_loop(cap, query, &seed);
        drive(&mut lp, deadline, |step, cap| match step {
            Step::Batch(batch) => match emit(batch, &mut out, &mut rec) {
                Ok(()) => Ok(true),
                Err(e) => {
                    write_err = Some(e);
                    Ok(false)
                }
            },
            Step::Tick => {
                if let Some(w) = rec.as_mut() {
                    w.write_stats(cap.drops(), cap.seq_issued(), cap.decode_errors())?;
                    w.maybe_flush()?;
                }
                Ok(true)
            }
            Step::Drops(_) => Ok(true),
        })
        .await?;
        let mut cap = lp.into_source();
        if let (Some(w), Some(path)) = (rec.take(), &record) {
            finish_record(w, &cap, path)?;
        }
        super::output::check_write(write_err.map_or(Ok(()), Err))?;
        let dropped = cap.drops();
        tracer::say!("tracer: {}", stats.summary(dropped));
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
/// With `pod`, the header says the recording is scoped to it.
pub(super) fn start_recording(
    target: &Target,
    args: &super::TargetArgs,
    scope: super::Snapshot,
    output: &std::path::Path,
    pod: Option<&PodQuery>,
) -> Result<(Capture, TraceWriter<std::fs::File>, Vec<SnapshotProcess>)> {
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
    Ok((cap, w, header.snapshot_processes()))
}

/// A future that resolves at Ctrl-C or SIGTERM. The handlers are installed here, at once: a
/// signal that lands while the loop's callback runs waits for the next poll (a `ctrl_c()`
/// future made per iteration would miss it, and `--all` would never stop).
pub(super) fn stop_signal() -> Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut sigterm = signal(SignalKind::terminate())?;
    let mut sigint = signal(SignalKind::interrupt())?;
    Ok(async move {
        tokio::select! {
            _ = sigterm.recv() => {}
            _ = sigint.recv() => {}
        }
    })
}

/// The library's one loop ([`tracer::source::drive`]) with the command line's stops: a
/// 100 ms tick, the deadline, Ctrl-C and SIGTERM.
pub(super) async fn drive<S: EventSource>(
    lp: &mut SourceLoop<S>,
    deadline: Option<Instant>,
    on: impl FnMut(Step<'_>, &mut S) -> Result<bool>,
) -> Result<Ended> {
    let opts = DriveOpts {
        tick: Duration::from_millis(100),
        deadline,
    };
    tracer::source::drive(lp, opts, stop_signal()?, on).await
}

/// Like strace CMD: the command's exit status (0 when there was no command or it still runs).
pub(super) fn command_exit_code(cap: &mut Capture) -> u8 {
    match cap.child_mut().map(|c| c.try_wait()) {
        Some(Ok(Some(st))) => st.code().map_or(1, |c| c as u8),
        _ => 0,
    }
}
