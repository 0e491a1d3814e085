//! `tracer trace`: live strace-like output.

use super::{OutputFormat, TargetArgs};
use anyhow::{Context, Result};
use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};
use tracer::capture::{Capture, CaptureBuilder, Target};
use tracer::clock::Clock;
use tracer::source::{DriveOpts, Ended, EventSource, SourceLoop, Step};
use tracer::stats::StreamStats;

pub fn target_of(args: &TargetArgs) -> Result<Target> {
    Ok(match (args.pid, args.all, args.command.is_empty()) {
        (Some(pid), false, true) => Target::Pid(pid),
        (None, true, true) => Target::All,
        (None, false, false) => Target::Command(args.command.clone()),
        (None, false, true) => anyhow::bail!("say what to trace: --pid PID, --all, or -- CMD ARGS"),
        _ => anyhow::bail!("--pid, --all and -- CMD are exclusive"),
    })
}

pub fn run(
    args: TargetArgs,
    format: OutputFormat,
    seq: bool,
    output: Option<std::path::PathBuf>,
    lines: super::lines::LineArgs,
) -> Result<ExitCode> {
    let target = target_of(&args)?;
    // Refused before any probe loads: an unknown `-e` word is a usage error.
    super::lines::LineArgs::renderer(&lines, Clock::None, seq, false)?;
    // One thread: the reader's poll and tick then wake this thread alone, where a worker
    // thread would wake it through a futex each time (twice the idle CPU).
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let stop = stop_signal()?;
        let mut out: Box<dyn Write + Send> = match &output {
            Some(path) => Box::new(std::io::BufWriter::new(
                tracer::outfile::create_streaming(path)
                    .with_context(|| format!("cannot create {}", tracer::escape::path(path)))?,
            )),
            None => Box::new(std::io::BufWriter::new(std::io::stdout())),
        };
        let cap = CaptureBuilder::new(target.clone())
            .ring_bytes(args.ring_bytes)
            .syscalls(args.syscalls)
            .signals(args.signals.into())
            .start()?;
        for note in cap.notes() {
            tracer::say!("tracer: note: {note}");
        }
        let deadline = args
            .duration
            .map(|s| Instant::now() + Duration::from_secs_f64(s.max(0.0)));
        let mut renderer = lines.renderer(Clock::live(), seq, !cap.syscall_probes())?;
        // The names `-Y` prints are the engine's view of each process as the events go by,
        // from the start snapshot on; exited ones are let go as the agent's are (a long
        // `--all` stays bounded).
        let mut engine = renderer.decode.any().then(|| {
            let mut e = tracer::lineage::Engine::with_retention(Default::default());
            e.seed_snapshot(&tracer::capture::procfs::snapshot());
            e
        });
        let mut stats = StreamStats::default();

        let mut emit = |batch: &mut Vec<tracer::Event>,
                        out: &mut Box<dyn Write + Send>|
         -> std::io::Result<()> {
            for ev in batch.drain(..) {
                stats.observe(&ev);
                if let Some(e) = &mut engine {
                    e.apply(&ev);
                }
                match format {
                    OutputFormat::Json => serde_json::to_string(&ev)
                        .map_err(std::io::Error::other)
                        .and_then(|s| writeln!(out, "{s}"))?,
                    OutputFormat::Text => renderer
                        .render_in(&ev, engine.as_ref())
                        .iter()
                        .try_for_each(|l| writeln!(out, "{l}"))?,
                };
            }
            out.flush()
        };

        // A write error ends the trace: quietly for a closed stdout (`| head`), else below.
        let mut write_err = None;
        let mut lp = SourceLoop::new(cap);
        drive(&mut lp, deadline, stop, |step, _| match step {
            Step::Batch(batch) => match emit(batch, &mut out) {
                Ok(()) => Ok(true),
                Err(e) => {
                    write_err = Some(e);
                    Ok(false)
                }
            },
            Step::Drops(_) | Step::Tick => Ok(true),
        })
        .await?;
        let mut cap = lp.into_source();
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
