//! `tracer record`, `tracer replay`, `tracer export`, `tracer import-strace`: trace files.

use super::TargetArgs;
use anyhow::{Context, Result};
use clap::ValueEnum;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};
use tracer::input::{Input, InputError};
use tracer::render::LineRenderer;
use tracer::stats::StreamStats;
use tracer::tracefile::{CaptureMode, Header, TraceWriter};
use tracer::Event;

#[derive(clap::Args, Debug)]
pub struct RecordArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Trace file to write (created with mode 0600; argv is recorded and can hold secrets).
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
}

#[derive(clap::Args, Debug)]
pub struct ReplayArgs {
    /// A trace file or an strace log (told apart by content).
    pub file: PathBuf,
    /// Replay speed: 1 = original timing, 2 = twice as fast, 0 = as fast as possible.
    /// Default: 1 when stdout is a terminal, else as fast as possible.
    #[arg(long, value_name = "X")]
    pub speed: Option<f64>,
    /// Advance one event at a time: press Enter for the next (reads stdin; EOF runs to the end).
    #[arg(long, conflicts_with = "speed")]
    pub step: bool,
    /// Print strace-like lines instead of the interactive view (the default when stdout is
    /// not a terminal).
    #[arg(long)]
    pub no_tui: bool,
    /// Prefix lines with the event sequence number.
    #[arg(long)]
    pub seq: bool,
    /// On a corrupt file, use every good frame before the damage and report the rest.
    #[arg(long)]
    pub salvage: bool,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportFormat {
    /// One event per line, as `tracer trace --format json`.
    Jsonl,
    /// Chrome trace-event JSON for ui.perfetto.dev.
    Perfetto,
    /// Graphviz lineage graph (`dot -Tsvg`).
    Dot,
}

#[derive(clap::Args, Debug)]
pub struct ExportArgs {
    /// A trace file or an strace log (told apart by content).
    pub file: PathBuf,
    #[arg(long, value_enum)]
    pub format: ExportFormat,
    /// Output file (`-` or absent: stdout).
    #[arg(short, long, value_name = "OUT")]
    pub output: Option<PathBuf>,
    /// On a corrupt file, use every good frame before the damage and report the rest.
    #[arg(long)]
    pub salvage: bool,
}

#[derive(clap::Args, Debug)]
pub struct ImportArgs {
    /// An `strace -f` log.
    pub log: PathBuf,
    /// Trace file to write.
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
}

pub fn record(args: RecordArgs) -> Result<ExitCode> {
    #[cfg(feature = "capture")]
    {
        super::record::run(args)
    }
    #[cfg(not(feature = "capture"))]
    {
        let _ = args;
        anyhow::bail!("this tracer was built without live capture (feature `capture` off)")
    }
}

/// Creates an output file with mode 0600 (exports carry argv too).
fn create_private(path: &Path) -> Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("cannot create {}", path.display()))
}

/// Events of `input` until the first error, which is kept in `err`.
fn until_error<'a>(
    input: &'a mut Input,
    err: &'a mut Option<InputError>,
) -> impl Iterator<Item = Event> + 'a {
    std::iter::from_fn(move || match input.next_event()? {
        Ok(ev) => Some(ev),
        Err(e) => {
            *err = Some(e);
            None
        }
    })
}

/// Reports how the input ended. A file cut short (a recording killed) is a warning; damage is
/// an error unless `salvage`.
fn finish_input(input: &Input, err: Option<InputError>, salvage: bool) -> Result<()> {
    if let Some(tail) = input.tail() {
        if tail.unusable_bytes > 0 {
            eprintln!(
                "tracer: {}: {} bytes at the tail unusable (from byte {})",
                input.path.display(),
                tail.unusable_bytes,
                tail.unusable_from.unwrap_or(0)
            );
        }
        if !tail.clean_end && err.is_none() {
            eprintln!(
                "tracer: {}: no end record: the recording was interrupted; every whole frame was used",
                input.path.display()
            );
        }
    }
    let Some(e) = err else { return Ok(()) };
    let truncated = e.trace_error().is_some_and(|t| t.is_truncation());
    if truncated {
        eprintln!(
            "tracer: warning: {e} (the recording was interrupted; every whole frame was used)"
        );
        Ok(())
    } else if salvage {
        eprintln!("tracer: salvage: {e}; every good frame before it was used");
        Ok(())
    } else {
        Err(anyhow::Error::new(e)
            .context("the file is damaged (use --salvage to keep every good frame before it)"))
    }
}

fn open_input(path: &Path) -> Result<Input> {
    Ok(Input::open(path)?)
}

pub fn replay(args: ReplayArgs) -> Result<ExitCode> {
    if std::io::stdout().is_terminal() && !args.no_tui && !args.step {
        // The same viewer as `tracer view`, at the asked speed.
        let speed = args.speed.filter(|s| *s > 0.0).unwrap_or(1.0);
        return super::tui::view(&args.file, speed, false, false);
    }
    let input = open_input(&args.file)?;
    let opts = ReplayOpts {
        speed: args.speed,
        step: args.step,
        seq: args.seq,
        salvage: args.salvage,
    };
    replay_input(input, &opts)?;
    Ok(ExitCode::SUCCESS)
}

/// How `replay_input` paces and prints.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReplayOpts {
    /// 1 = original timing, 0 = as fast as possible; `None`: 1 on a terminal, else 0.
    pub speed: Option<f64>,
    pub step: bool,
    pub seq: bool,
    pub salvage: bool,
}

/// Replays an opened input as strace-like lines (the non-interactive view); returns the
/// engine it fed, for the tree and stories.
pub fn replay_input(mut input: Input, args: &ReplayOpts) -> Result<tracer::lineage::Engine> {
    if let Some(h) = input.header() {
        eprintln!(
            "tracer: {} recorded on {} (kernel {}), {}, tracer {}, {} processes at start",
            input.path.display(),
            if h.hostname.is_empty() {
                "?"
            } else {
                &h.hostname
            },
            if h.kernel_release.is_empty() {
                "?"
            } else {
                &h.kernel_release
            },
            h.mode,
            h.tool_version,
            h.snapshot.len()
        );
    }
    let stdout = std::io::stdout();
    let tty = stdout.is_terminal();
    let speed = match args.speed {
        _ if args.step => 0.0,
        Some(s) => s,
        None if tty => 1.0,
        None => 0.0,
    };
    let paced = speed > 0.0 && speed.is_finite();
    let mut out = std::io::BufWriter::with_capacity(64 << 10, stdout.lock());
    let mut engine = input.seeded_engine();
    let mut renderer = LineRenderer::new();
    renderer.show_seq = args.seq;
    renderer.sched_probes = input.sched_probes();
    let mut stats = StreamStats::default();
    let mut err = None;
    let started = Instant::now();
    let mut t0: Option<u64> = None;
    let mut broken_pipe = false;
    let mut step = args.step;
    for ev in until_error(&mut input, &mut err) {
        stats.observe(&ev);
        engine.apply(&ev);
        if broken_pipe {
            continue;
        }
        if paced && ev.ts_ns != 0 {
            let base = *t0.get_or_insert(ev.ts_ns);
            let due = Duration::from_secs_f64(ev.ts_ns.saturating_sub(base) as f64 / 1e9 / speed);
            let now = started.elapsed();
            if due > now {
                if out.flush().is_err() {
                    broken_pipe = true;
                    continue;
                }
                std::thread::sleep(due - now);
            }
        }
        let lines = renderer.render(&ev);
        for line in &lines {
            if writeln!(out, "{line}").is_err() {
                broken_pipe = true;
                break;
            }
        }
        if step && !lines.is_empty() {
            let _ = out.flush();
            let mut buf = String::new();
            if std::io::stdin()
                .read_line(&mut buf)
                .map_or(true, |n| n == 0)
            {
                step = false;
            }
        }
    }
    let _ = out.flush();
    drop(out);
    let drops = input.last_stats().map_or(0, |s| s.drops);
    let live = engine.processes().filter(|p| !p.exited).count();
    eprintln!(
        "tracer: replayed {}; {} processes ({} alive at the end), {} warnings, {} container stories",
        stats.summary(drops),
        engine.process_count(),
        live,
        engine.warning_count(),
        tracer::lineage::stories(&engine).len()
    );
    finish_input(&input, err, args.salvage)?;
    Ok(engine)
}

pub fn export(args: ExportArgs) -> Result<ExitCode> {
    let mut input = open_input(&args.file)?;
    let snapshot = input.snapshot();
    let mut sink: Box<dyn Write> = match &args.output {
        Some(p) if p.as_os_str() != "-" => Box::new(create_private(p)?),
        _ => Box::new(std::io::stdout().lock()),
    };
    let mut out = std::io::BufWriter::with_capacity(256 << 10, &mut sink);
    let mut err = None;
    let res: std::io::Result<String> = (|| {
        let what = match args.format {
            ExportFormat::Jsonl => {
                let n = tracer::export::write_jsonl(until_error(&mut input, &mut err), &mut out)?;
                format!("{n} events")
            }
            ExportFormat::Perfetto => {
                let e = tracer::export::write_perfetto(
                    &snapshot,
                    until_error(&mut input, &mut err),
                    &mut out,
                )?;
                format!(
                    "{} processes, {} events",
                    e.process_count(),
                    e.event_count()
                )
            }
            ExportFormat::Dot => {
                let mut e = tracer::export::seeded(&snapshot);
                for ev in until_error(&mut input, &mut err) {
                    e.apply(&ev);
                }
                tracer::export::write_dot(&e, &mut out)?;
                format!("{} processes", e.process_count())
            }
        };
        out.flush()?;
        Ok(what)
    })();
    drop(out);
    let what = match res {
        Ok(w) => w,
        // `tracer export ... | head`: the reader went away; not an error.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(ExitCode::SUCCESS),
        Err(e) => return Err(anyhow::Error::new(e).context("cannot write the export")),
    };
    if let Some(p) = &args.output {
        if p.as_os_str() != "-" {
            eprintln!("tracer: wrote {} ({what})", p.display());
        }
    }
    finish_input(&input, err, args.salvage)?;
    Ok(ExitCode::SUCCESS)
}

pub fn import_strace(args: ImportArgs) -> Result<ExitCode> {
    let mut input = open_input(&args.log)?;
    let mut header = Header::for_this_host(CaptureMode::Import {
        format: input.kind.name().to_string(),
        source: args.log.display().to_string(),
    });
    if let Some(h) = input.header() {
        // Re-encoding a trace file: keep what it says about its capture.
        header = h.clone();
    }
    let mut w = TraceWriter::create(&args.output, &header)
        .with_context(|| format!("cannot create {}", args.output.display()))?;
    let mut err = None;
    for ev in until_error(&mut input, &mut err) {
        w.write_event(&ev)?;
    }
    let n = w.stats().events;
    w.finish()?;
    eprintln!("tracer: wrote {} ({n} events)", args.output.display());
    finish_input(&input, err, false)?;
    Ok(ExitCode::SUCCESS)
}
