//! `tracer export`: a recording to JSON lines, Perfetto, Graphviz, SVG or HTML.

use super::reading::{finish_input, kept, open_input, source_and_pod};
use anyhow::Result;
use clap::ValueEnum;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

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
    // Only the pod's (or container's) events, as `replay --pod`.
    #[command(flatten)]
    pub pod: super::PodArgs,
}

pub fn export(args: ExportArgs) -> Result<ExitCode> {
    if args.all && !matches!(args.format, ExportFormat::Svg | ExportFormat::Html) {
        anyhow::bail!("--all is for --format svg and html (the other formats hold every process)");
    }
    let (source, keep) = source_and_pod(&args.file, args.pod.query().as_ref())?;
    let mut input = open_input(&source)?;
    let snapshot = input.snapshot();
    let mut file = super::output::out_file(args.output.as_deref())?;
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
        super::output::commit(f, p)?;
        eprintln!("tracer: wrote {} ({what})", p.display());
    }
    Ok(ExitCode::SUCCESS)
}
