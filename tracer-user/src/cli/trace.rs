//! `tracer trace`: live strace-like output.

use super::{OutputFormat, TargetArgs};
use anyhow::{Context, Result};
use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};
use tracer::capture::{Capture, CaptureBuilder, CaptureItem, CaptureLoop, Target};
use tracer::render::LineRenderer;
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
) -> Result<ExitCode> {
    let target = target_of(&args)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
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
        let mut cap = CaptureBuilder::new(target.clone())
            .ring_bytes(args.ring_bytes)
            .syscalls(args.syscalls)
            .start()?;
        for note in cap.notes() {
            eprintln!("tracer: note: {note}");
        }
        let deadline = args
            .duration
            .map(|s| Instant::now() + Duration::from_secs_f64(s.max(0.0)));
        let mut renderer = LineRenderer::new();
        renderer.show_seq = seq;
        renderer.sched_probes = !cap.syscall_probes();
        let mut stats = StreamStats::default();

        let mut emit = |batch: &mut Vec<tracer::Event>,
                        out: &mut Box<dyn Write + Send>|
         -> std::io::Result<()> {
            for ev in batch.drain(..) {
                stats.observe(&ev);
                match format {
                    OutputFormat::Json => serde_json::to_string(&ev)
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
        drive(&mut cap, deadline, |step, _| match step {
            Step::Batch(batch) => match emit(batch, &mut out) {
                Ok(()) => Ok(true),
                Err(e) => {
                    write_err = Some(e);
                    Ok(false)
                }
            },
            Step::Tick => Ok(true),
        })
        .await?;
        super::output::check_write(write_err.map_or(Ok(()), Err))?;
        let dropped = cap.drops();
        eprintln!("tracer: {}", stats.summary(dropped));
        if cap.decode_errors() > 0 {
            eprintln!(
                "tracer: {} records could not be decoded",
                cap.decode_errors()
            );
        }
        let code = command_exit_code(&mut cap);
        cap.release_in_background();
        Ok(ExitCode::from(code))
    })
}

/// What [`drive`] hands to its callback.
pub(super) enum Step<'a> {
    /// Events read from the ring buffer (drain them).
    Batch(&'a mut Vec<tracer::Event>),
    /// 100 ms passed.
    Tick,
}

/// `trace` and `record` over the capture loop ([`CaptureLoop`]): hands each batch of events
/// and a 100 ms tick to `on` (which returns false to stop at once), and ends on the deadline,
/// Ctrl-C, SIGTERM, or — when following — once every followed process is gone (like strace
/// -f). What is left in the ring buffer is handed over before it returns.
pub(super) async fn drive(
    cap: &mut Capture,
    deadline: Option<Instant>,
    mut on: impl FnMut(Step<'_>, &Capture) -> Result<bool>,
) -> Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    // Streams made once: a signal that lands while `on` runs waits in them (a `ctrl_c()`
    // future made per iteration would miss it, and `--all` would never stop).
    let mut sigterm = signal(SignalKind::terminate())?;
    let mut sigint = signal(SignalKind::interrupt())?;
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    let mut lp = CaptureLoop::new(cap);
    let mut batch = Vec::new();
    let events = |item: CaptureItem, batch: &mut Vec<tracer::Event>| {
        if let CaptureItem::Event(ev) = item {
            batch.push(ev);
        }
    };
    loop {
        tokio::select! {
            item = lp.next() => {
                let Some(item) = item else { break };
                let mut item = Some(item?);
                while let Some(i) = item {
                    events(i, &mut batch);
                    item = lp.ready();
                }
                if !on(Step::Batch(&mut batch), lp.capture())? {
                    return Ok(());
                }
            }
            _ = tick.tick() => {
                if !on(Step::Tick, lp.capture())? {
                    return Ok(());
                }
                if deadline.is_some_and(|d| Instant::now() >= d) { break; }
            }
            _ = sigint.recv() => break,
            _ = sigterm.recv() => break,
        }
    }
    for i in lp.finish() {
        events(i, &mut batch);
    }
    on(Step::Batch(&mut batch), lp.capture())?;
    Ok(())
}

/// Like strace CMD: the command's exit status (0 when there was no command or it still runs).
pub(super) fn command_exit_code(cap: &mut Capture) -> u8 {
    match cap.child_mut().map(|c| c.try_wait()) {
        Some(Ok(Some(st))) => st.code().map_or(1, |c| c as u8),
        _ => 0,
    }
}
