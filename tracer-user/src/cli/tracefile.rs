//! `tracer record`, `tracer replay`, `tracer export`, `tracer import-strace`: trace files.

use anyhow::{Context, Result};
use clap::ValueEnum;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};
use tracer::escape::escape;
use tracer::input::{Input, InputError};
use tracer::lineage::PodEvents;
use tracer::outfile::OutFile;
use tracer::render::LineRenderer;
use tracer::stats::StreamStats;
use tracer::tracefile::{CaptureMode, Header, TraceWriter};
use tracer::Event;

#[derive(clap::Args, Debug)]
pub struct ReplayArgs {
    /// A trace file or an strace log (told apart by content); `-` reads stdin;
    /// `nats://HOST:PORT/NODE` a node's stream (`nats://HOST:PORT/*` with `--pod`).
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
    /// Guided, in the viewer: open paused at the first container-birth step with its
    /// explanation; `]` / `[` move between steps.
    #[arg(long, conflicts_with_all = ["no_tui", "step"])]
    pub guided: bool,
    /// Only the events of this pod (its name or `namespace/name`): of its processes and of
    /// the shim, runtime and runc stages that started its containers. With
    /// `nats://HOST:PORT/*`: the node that has it.
    #[arg(long, value_name = "NAME")]
    pub pod: Option<String>,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportFormat {
    /// One event per line, as `tracer trace --format json`.
    Jsonl,
    /// Chrome trace-event JSON for ui.perfetto.dev.
    Perfetto,
    /// Graphviz lineage graph (`dot -Tsvg`).
    Dot,
    /// A timeline of the container births: a lifeline per process, seq across.
    Svg,
    /// One self-contained page: the timeline, the explained stories and the tree.
    Html,
}

#[derive(clap::Args, Debug)]
pub struct ExportArgs {
    /// A trace file or an strace log (told apart by content); `-` reads stdin;
    /// `nats://HOST:PORT/NODE` a node's stream (`nats://HOST:PORT/*` with `--pod`).
    pub file: PathBuf,
    #[arg(long, value_enum)]
    pub format: ExportFormat,
    /// Output file (`-` or absent: stdout).
    #[arg(short, long, value_name = "OUT")]
    pub output: Option<PathBuf>,
    /// On a corrupt file, use every good frame before the damage and report the rest.
    #[arg(long)]
    pub salvage: bool,
    /// svg/html: draw every process the recording saw act, not only the container births'
    /// actors.
    #[arg(long)]
    pub all: bool,
    /// Only the events of this pod (as `replay --pod`). With `nats://HOST:PORT/*`: the node
    /// that has it.
    #[arg(long, value_name = "NAME")]
    pub pod: Option<String>,
}

#[derive(clap::Args, Debug)]
pub struct ImportArgs {
    /// An `strace -f` log (or a trace file, re-encoded); `-` reads stdin.
    pub log: PathBuf,
    /// Trace file to write.
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
}

pub fn record(args: super::RecordArgs) -> Result<ExitCode> {
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

/// [`until_error`], only the events `keep` holds when given (`--pod`).
fn kept<'a>(
    input: &'a mut Input,
    err: &'a mut Option<InputError>,
    keep: Option<&'a PodEvents>,
) -> impl Iterator<Item = Event> + 'a {
    until_error(input, err).filter(move |ev| keep.is_none_or(|k| k.contains(ev)))
}

/// The recording a command reads (`/*`: the node holding `--pod`), and the pod's events.
fn source_and_pod(file: &Path, pod: Option<&str>) -> Result<(PathBuf, Option<PodEvents>)> {
    let (file, engine) = super::lineage::one_source(file, pod)?;
    let keep = pod
        .map(|p| super::lineage::pod_events(&file, p, engine))
        .transpose()?;
    Ok((file, keep))
}

/// Reports how the input ended. A file cut short (a recording killed) is a warning; damage
/// that stopped reading is an error unless `salvage`.
fn finish_input(input: &Input, err: Option<InputError>, salvage: bool) -> Result<()> {
    super::output::print_input_notes(input, err.is_some());
    let Some(e) = err else { return Ok(()) };
    if let Some(tail) = input.tail() {
        if tail.unusable_bytes > 0 {
            eprintln!(
                "tracer: {}: {} bytes at the tail unusable (from byte {})",
                input.path.display(),
                tail.unusable_bytes,
                tail.unusable_from.unwrap_or(0)
            );
        }
    }
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
    if args.guided || (std::io::stdout().is_terminal() && !args.no_tui && !args.step) {
        // The same viewer as `tracer view`, at the asked speed.
        let speed = args.speed.filter(|s| *s > 0.0).unwrap_or(1.0);
        let v = super::tui::ViewOpts {
            guided: args.guided,
            pod: args.pod.clone(),
            ..Default::default()
        };
        return super::tui::view(&args.file, speed, v);
    }
    let (file, keep) = source_and_pod(&args.file, args.pod.as_deref())?;
    let input = open_input(&file)?;
    let opts = ReplayOpts {
        speed: args.speed,
        step: args.step,
        seq: args.seq,
        salvage: args.salvage,
    };
    replay_input(input, &opts, keep.as_ref())?;
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

/// Replays an opened input as strace-like lines (the non-interactive view), printing only
/// `keep`'s events when given; returns the engine it fed (with every event), for the tree and
/// stories.
pub fn replay_input(
    mut input: Input,
    args: &ReplayOpts,
    keep: Option<&PodEvents>,
) -> Result<tracer::lineage::Engine> {
    if let Some(h) = input.header() {
        let or_unknown = |s: &str| {
            if s.is_empty() {
                "?".into()
            } else {
                escape(s).into_owned()
            }
        };
        eprintln!(
            "tracer: {} recorded on {} (kernel {}), {}, tracer {}, {} processes at start",
            input.path.display(),
            or_unknown(&h.hostname),
            or_unknown(&h.kernel_release),
            escape(&h.mode.to_string()),
            escape(&h.tool_version),
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
    // The first write error: lines stop, the replay still feeds the engine for the summary.
    let mut write_err: Option<std::io::Error> = None;
    let mut step = args.step;
    let mut shown = 0u64;
    // Every event feeds the counts and the engine; `--pod` only chooses the lines printed.
    for ev in until_error(&mut input, &mut err) {
        stats.observe(&ev);
        engine.apply(&ev);
        if write_err.is_some() || keep.is_some_and(|k| !k.contains(&ev)) {
            continue;
        }
        shown += 1;
        if paced && ev.ts_ns != 0 {
            let base = *t0.get_or_insert(ev.ts_ns);
            let due = Duration::from_secs_f64(ev.ts_ns.saturating_sub(base) as f64 / 1e9 / speed);
            let now = started.elapsed();
            if due > now {
                if let Err(e) = out.flush() {
                    write_err = Some(e);
                    continue;
                }
                std::thread::sleep(due - now);
            }
        }
        let lines = renderer.render(&ev);
        if let Err(e) = lines.iter().try_for_each(|line| writeln!(out, "{line}")) {
            write_err = Some(e);
            continue;
        }
        if step && !lines.is_empty() {
            if let Err(e) = out.flush() {
                write_err = Some(e);
                continue;
            }
            let mut buf = String::new();
            if std::io::stdin()
                .read_line(&mut buf)
                .map_or(true, |n| n == 0)
            {
                step = false;
            }
        }
    }
    if write_err.is_none() {
        write_err = out.flush().err();
    }
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
    if let Some(k) = keep {
        eprintln!(
            "tracer: shown {shown} events of the pod's {} processes",
            k.process_count()
        );
    }
    finish_input(&input, err, args.salvage)?;
    super::output::check_write(write_err.map_or(Ok(()), Err))?;
    Ok(engine)
}

pub fn export(args: ExportArgs) -> Result<ExitCode> {
    if args.all && !matches!(args.format, ExportFormat::Svg | ExportFormat::Html) {
        anyhow::bail!("--all is for --format svg and html (the other formats hold every process)");
    }
    let (source, keep) = source_and_pod(&args.file, args.pod.as_deref())?;
    let mut input = open_input(&source)?;
    let snapshot = input.snapshot();
    let mut file = match &args.output {
        Some(p) if p.as_os_str() != "-" => Some(
            OutFile::atomic(p)
                .with_context(|| format!("cannot create {}", tracer::escape::path(p)))?,
        ),
        _ => None,
    };
    let mut sink: Box<dyn Write> = match file.as_mut() {
        Some(f) => Box::new(f),
        None => Box::new(std::io::stdout().lock()),
    };
    let mut out = std::io::BufWriter::with_capacity(256 << 10, &mut sink);
    let mut err = None;
    let res: std::io::Result<String> = (|| {
        let what = match args.format {
            ExportFormat::Jsonl => {
                let n = tracer::export::write_jsonl(
                    kept(&mut input, &mut err, keep.as_ref()),
                    &mut out,
                )?;
                format!("{n} events")
            }
            ExportFormat::Perfetto => {
                let e = tracer::export::write_perfetto(
                    &snapshot,
                    kept(&mut input, &mut err, keep.as_ref()),
                    &mut out,
                )?;
                format!(
                    "{} processes, {} events",
                    e.process_count(),
                    e.event_count()
                )
            }
            ExportFormat::Dot => {
                let mut e = tracer::Engine::seeded(&snapshot);
                for ev in kept(&mut input, &mut err, keep.as_ref()) {
                    e.apply(&ev);
                }
                tracer::export::write_dot(&e, &mut out)?;
                format!("{} processes", e.process_count())
            }
            ExportFormat::Svg | ExportFormat::Html => {
                let mut e = tracer::Engine::seeded(&snapshot);
                for ev in kept(&mut input, &mut err, keep.as_ref()) {
                    e.apply(&ev);
                }
                let opts = tracer::picture::PictureOpts { all: args.all };
                let title = source.file_name().map_or_else(
                    || source.display().to_string(),
                    |n| n.to_string_lossy().into_owned(),
                );
                if args.format == ExportFormat::Svg {
                    tracer::picture::write_svg(&e, opts, &title, &mut out)?;
                } else {
                    tracer::picture::write_html(&e, opts, &title, &mut out)?;
                }
                format!("{} processes", e.process_count())
            }
        };
        out.flush()?;
        Ok(what)
    })();
    drop(out);
    drop(sink);
    let what = match res {
        Ok(w) => w,
        // `tracer export ... | head`: the reader went away; not an error.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(ExitCode::SUCCESS),
        Err(e) => return Err(anyhow::Error::new(e).context("cannot write the export")),
    };
    // A damaged input fails before the output replaces anything.
    finish_input(&input, err, args.salvage)?;
    if let (Some(f), Some(p)) = (file, &args.output) {
        f.commit()
            .with_context(|| format!("cannot write {}", tracer::escape::path(p)))?;
        eprintln!("tracer: wrote {} ({what})", p.display());
    }
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
    // Written beside the target and renamed at the end: `-o` naming the input reads it whole.
    let file = OutFile::atomic(&args.output)
        .with_context(|| format!("cannot create {}", tracer::escape::path(&args.output)))?;
    let mut w = TraceWriter::new(std::io::BufWriter::with_capacity(256 << 10, file), &header)
        .with_context(|| format!("cannot write {}", tracer::escape::path(&args.output)))?;
    let mut err = None;
    for ev in until_error(&mut input, &mut err) {
        w.write_event(&ev)?;
    }
    let n = w.stats().events;
    let file = w.finish()?.into_inner().map_err(|e| e.into_error())?;
    finish_input(&input, err, false)?;
    file.commit()
        .with_context(|| format!("cannot write {}", tracer::escape::path(&args.output)))?;
    eprintln!("tracer: wrote {} ({n} events)", args.output.display());
    Ok(ExitCode::SUCCESS)
}
