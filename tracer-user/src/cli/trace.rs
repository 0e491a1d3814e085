//! `tracer trace`: live strace-like output.

use super::{OutputFormat, TargetArgs};
use anyhow::{Context, Result};
use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};
use tracer::capture::{CaptureBuilder, Target};
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
                std::fs::File::create(path)
                    .with_context(|| format!("cannot create {}", path.display()))?,
            )),
            None => Box::new(std::io::BufWriter::new(std::io::stdout())),
        };
        let mut cap = CaptureBuilder::new(target.clone())
            .ring_bytes(args.ring_bytes)
            .start()?;
        for note in cap.notes() {
            eprintln!("tracer: note: {note}");
        }
        let follow = !matches!(target, Target::All);
        let deadline = args
            .duration
            .map(|s| Instant::now() + Duration::from_secs_f64(s.max(0.0)));
        let mut sigterm =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        let mut tick = tokio::time::interval(Duration::from_millis(100));
        let mut renderer = LineRenderer::new();
        renderer.show_seq = seq;
        let mut stats = StreamStats::default();
        let mut batch = Vec::new();
        let mut broken_pipe = false;

        let mut emit = |batch: &mut Vec<tracer::Event>, out: &mut Box<dyn Write + Send>| -> bool {
            for ev in batch.drain(..) {
                stats.observe(&ev);
                let res = match format {
                    OutputFormat::Json => serde_json::to_string(&ev)
                        .map_err(std::io::Error::other)
                        .and_then(|s| writeln!(out, "{s}")),
                    OutputFormat::Text => renderer
                        .render(&ev)
                        .iter()
                        .try_for_each(|l| writeln!(out, "{l}")),
                };
                if res.is_err() {
                    return false;
                }
            }
            out.flush().is_ok()
        };

        loop {
            tokio::select! {
                r = cap.next_batch(&mut batch) => {
                    r?;
                    if !emit(&mut batch, &mut out) { broken_pipe = true; break; }
                }
                _ = tick.tick() => {
                    if deadline.is_some_and(|d| Instant::now() >= d) { break; }
                    // Like strace -f: done once every followed process is gone.
                    if follow && cap.followed_count() == 0 { break; }
                }
                _ = tokio::signal::ctrl_c() => break,
                _ = sigterm.recv() => break,
            }
        }
        cap.drain_now(&mut batch);
        if !broken_pipe {
            emit(&mut batch, &mut out);
        }
        let dropped = cap.drops();
        eprintln!("tracer: {}", stats.summary(dropped));
        if cap.decode_errors() > 0 {
            eprintln!(
                "tracer: {} records could not be decoded",
                cap.decode_errors()
            );
        }
        // Like strace CMD: exit with the command's status.
        let code = match cap.child_mut() {
            Some(child) => match child.try_wait() {
                Ok(Some(st)) => st.code().map_or(1, |c| c as u8),
                _ => 0,
            },
            None => 0,
        };
        Ok(ExitCode::from(code))
    })
}
