//! `tracer export`: a recording to JSON lines, Perfetto, Graphviz, SVG or HTML.

use super::reading::{finish_input, kept, open_input, select_pod, source_and_pod, until_error};
use anyhow::Result;
use clap::ValueEnum;
use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use tracer::input::{Input, InputError};
use tracer::lineage::{PodEvents, ProcId, SnapshotProcess};
use tracer::picture::{Axis, Page, PictureOpts};

/// `--page`: the printed page a picture is laid out for.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageArg {
    /// A4 landscape (297 × 210 mm).
    A4,
    /// A 16:9 slide (1280 × 720 px).
    #[value(name = "16:9")]
    Wide,
}

/// `--axis`: what runs across a picture.
#[derive(ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AxisArg {
    /// One column per event, in seq order.
    #[default]
    Events,
    /// Time: waits (a grace period) show as room; a long idle gap is cut, its length written.
    Time,
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
    /// A trace file or an strace log (told apart by content); `-` reads stdin; `demo:NAME` a
    /// bundled demo; `nats://HOST:PORT/NODE` a node's stream (`nats://HOST:PORT/*` with
    /// `--pod`).
    pub file: PathBuf,
    /// The other files of an `strace -ff -o PREFIX` set, given one by one (`PREFIX.*`); the
    /// set can also be named by PREFIX alone.
    #[arg(value_name = "MORE")]
    pub more: Vec<PathBuf>,
    /// What to write.
    #[arg(long, value_enum)]
    pub format: ExportFormat,
    /// Output file (`-` or absent: stdout; never through a symlink, never over another
    /// user's file; a bare format word, `-o json`, is refused: that is `--format`).
    #[arg(short, long, value_name = "OUT")]
    pub output: Option<PathBuf>,
    /// On a corrupt file, use every good frame before the damage and report the rest.
    #[arg(long)]
    pub salvage: bool,
    /// svg/html: draw every process the recording saw act, not only the container births'
    /// actors.
    #[arg(long)]
    pub all: bool,
    // jsonl/perfetto: only the pod's (or container's) events, as `replay --pod`; dot: its
    // processes and their ancestors, as `tree --pod`; svg/html: its stories.
    #[command(flatten)]
    pub pod: super::PodArgs,
    // svg/html: only one story (`STORY_HELP`).
    #[arg(long, value_name = "N|CONTAINER|KIND", help = super::STORY_HELP)]
    pub story: Option<String>,
    /// svg/html: lay the picture out for a printed page, scaled to fit with no text under
    /// 10 px (too large a picture is an error: pick one story with --story; every story of
    /// the bundled demos fits).
    #[arg(long, value_enum, value_name = "PAGE")]
    pub page: Option<PageArg>,
    /// svg/html: what runs across the timeline: `events` (one column per event) or `time`.
    #[arg(long, value_enum, value_name = "AXIS")]
    pub axis: Option<AxisArg>,
}

/// Whether the export is a picture; an error for a picture's flag given to another format.
fn is_picture(args: &ExportArgs) -> Result<bool> {
    let picture = matches!(args.format, ExportFormat::Svg | ExportFormat::Html);
    if args.all && !picture {
        anyhow::bail!("--all is for --format svg and html (the other formats hold every process)");
    }
    if (args.story.is_some() || args.page.is_some() || args.axis.is_some()) && !picture {
        anyhow::bail!("--story, --page and --axis are for --format svg and html");
    }
    Ok(picture)
}

pub fn export(args: ExportArgs) -> Result<ExitCode> {
    let picture = is_picture(&args)?;
    let query = args.pod.query();
    let file = super::reading::one_recording(&args.file, &args.more)?;
    let (source, keep) = source_and_pod(&file, query.as_ref())?;
    let mut input = open_input(&source)?;
    let snapshot = input.snapshot();
    let mut err = None;
    // Drawn before the output is created: a picture that cannot be drawn writes nothing.
    let mut drawn = picture
        .then(|| {
            draw(
                &args,
                &source,
                keep.as_ref(),
                &mut input,
                &mut err,
                &snapshot,
            )
        })
        .transpose()?;
    let mut dot = match args.format {
        ExportFormat::Dot => Some(dot_graph(&args, &source, &mut input, &mut err, &snapshot)?),
        _ => None,
    };
    let mut file = super::output::out_file(args.output.as_deref())?;
    let mut sink: Box<dyn Write> = match file.as_mut() {
        Some(f) => Box::new(f),
        None => Box::new(std::io::stdout().lock()),
    };
    let mut out = std::io::BufWriter::with_capacity(256 << 10, &mut sink);
    let res: std::io::Result<String> = (|| {
        let what = match args.format {
            ExportFormat::Jsonl => {
                let clock = input.clock();
                let n = tracer::export::write_jsonl(
                    kept(&mut input, &mut err, keep.as_ref()),
                    clock,
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
                let (processes, events) = (e.process_count(), e.event_count());
                format!("{processes} processes, {events} events")
            }
            ExportFormat::Dot => {
                let (e, scope) = dot.take().unwrap_or_default();
                tracer::export::write_dot(&e, scope.as_ref(), &mut out)?;
                let n = scope.map_or(e.process_count(), |s| s.len());
                format!("{n} processes")
            }
            ExportFormat::Svg | ExportFormat::Html => {
                let (text, what) = drawn.take().unwrap_or_default();
                out.write_all(&text)?;
                what
            }
        };
        out.flush()?;
        Ok(what)
    })();
    drop(out);
    drop(sink);
    let Some(what) = written(res)? else {
        return Ok(ExitCode::SUCCESS);
    };
    // A damaged input fails before the output replaces anything.
    finish_input(&input, err, args.salvage)?;
    if let (Some(f), Some(p)) = (file, &args.output) {
        super::output::commit(f, p)?;
        tracer::say!("tracer: wrote {} ({what})", p.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// What an export wrote, or `None` when its reader went away (`tracer export ... | head`:
/// not an error).
fn written(res: std::io::Result<String>) -> Result<Option<String>> {
    match res {
        Ok(w) => Ok(Some(w)),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(None),
        Err(e) => Err(anyhow::Error::new(e).context("cannot write the export")),
    }
}

/// The engine the DOT graph is drawn from, and with `--pod` the processes it shows. Every
/// event is read, as for the pictures: the pod's processes and their ancestors are drawn as
/// seen (the runtime daemon no placeholder), as `tree --pod` shows them.
fn dot_graph(
    args: &ExportArgs,
    source: &Path,
    input: &mut Input,
    err: &mut Option<InputError>,
    snapshot: &[SnapshotProcess],
) -> Result<(tracer::Engine, Option<HashSet<ProcId>>)> {
    let mut e = tracer::Engine::seeded(snapshot);
    for ev in until_error(input, err) {
        e.apply(&ev);
    }
    let scope = match args.pod.query() {
        Some(q) => Some(tracer::lineage::pod_scope(&e, &select_pod(source, &e, &q)?)),
        None => None,
    };
    Ok((e, scope))
}

/// The svg or html export and its summary. Every event is read, not only the pod's: the
/// runtime daemon and the shim's double fork stay real rows; `--pod` picks the stories, as
/// `tracer story --pod` does, and `--all` draws only the pod's processes.
fn draw(
    args: &ExportArgs,
    source: &Path,
    keep: Option<&PodEvents>,
    input: &mut Input,
    err: &mut Option<InputError>,
    snapshot: &[SnapshotProcess],
) -> Result<(Vec<u8>, String)> {
    let mut e = tracer::Engine::seeded(snapshot);
    for ev in until_error(input, err) {
        e.apply(&ev);
    }
    let mut stories = tracer::lineage::stories(&e);
    if let Some(q) = args.pod.query() {
        let pod = select_pod(source, &e, &q)?;
        stories.retain(|st| tracer::lineage::story_in_pod(st, &pod));
    }
    if let Some(sel) = &args.story {
        let i = super::lineage::pick_story(&stories, sel, source)?;
        stories = vec![stories.swap_remove(i)];
    }
    let scope = keep.map(|k| {
        let born: HashSet<(u32, u64)> = k.lifetimes().map(|(pid, from, _)| (pid, from)).collect();
        e.processes()
            .filter(|p| born.contains(&(p.pid, p.start_seq)))
            .map(|p| p.id)
            .collect()
    });
    let opts = PictureOpts {
        all: args.all,
        page: args.page.map(|p| match p {
            PageArg::A4 => Page::A4,
            PageArg::Wide => Page::Wide,
        }),
        scope,
        axis: match args.axis.unwrap_or_default() {
            AxisArg::Events => Axis::Events,
            AxisArg::Time => Axis::Time,
        },
    };
    let title = source.file_name().map_or_else(
        || source.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let mut text = Vec::new();
    if args.format == ExportFormat::Svg {
        tracer::picture::write_svg(&e, &stories, &opts, &title, &mut text)?;
    } else {
        tracer::picture::write_html(&e, &stories, &opts, &title, &mut text)?;
    }
    let html = args.format != ExportFormat::Svg;
    let drawn = tracer::picture::drawn_processes(&e, &stories, &opts, html);
    let what = format!("{} stories, {drawn} processes drawn", stories.len());
    Ok((text, what))
}
