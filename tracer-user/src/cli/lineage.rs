//! `tracer tree` and `tracer story`: the lineage engine over a recording.

use super::OutputFormat;
use anyhow::Result;
use std::path::Path;
use tracer::input::Input;
use tracer::lineage::{
    story_json, story_text, traced_tree_text, tree_json, tree_text, Engine, TreeOpts,
};

/// A recording (trace file or strace log, told apart by content) run through the engine,
/// seeded with the trace file's /proc snapshot; up to event `at` when given.
pub fn load_engine(path: &Path, at: Option<u64>) -> Result<Engine> {
    let mut input = Input::open(path)?;
    if let Some(r) = input.strace_report() {
        if r.unreadable > 0 {
            eprintln!(
                "tracer: {}: {} of {} lines not understood",
                path.display(),
                r.unreadable,
                r.lines
            );
            for (line, text) in &r.first_unreadable {
                eprintln!("tracer:   line {line}: {text}");
            }
        }
    }
    let mut engine = input.seeded_engine();
    for ev in input.by_ref() {
        let ev = match ev {
            Ok(ev) => ev,
            // A recording killed mid-write: every whole frame is used.
            Err(e) if e.trace_error().is_some_and(|t| t.is_truncation()) => {
                eprintln!("tracer: warning: {e}; using the events before it");
                break;
            }
            Err(e) => return Err(e.into()),
        };
        if at.is_some_and(|seq| ev.seq > seq) {
            break;
        }
        engine.apply(&ev);
    }
    Ok(engine)
}

pub fn tree(
    file: &Path,
    format: OutputFormat,
    at: Option<u64>,
    hide_exited: bool,
    traced: bool,
) -> Result<()> {
    let engine = load_engine(file, at)?;
    match format {
        OutputFormat::Text => {
            let opts = TreeOpts {
                show_exited: !hide_exited,
                ..TreeOpts::default()
            };
            if traced {
                print!("{}", traced_tree_text(&engine, opts));
            } else {
                print!("{}", tree_text(&engine, opts));
            }
            if engine.warning_count() > 0 {
                eprintln!("tracer: {} anomalies in the stream (missing or out-of-order events); see --format json", engine.warning_count());
            }
        }
        OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&tree_json(&engine))?),
    }
    Ok(())
}

pub fn story(file: &Path, format: OutputFormat) -> Result<()> {
    let engine = load_engine(file, None)?;
    let stories = tracer::lineage::stories(&engine);
    match format {
        OutputFormat::Text if stories.is_empty() => println!("no container birth found"),
        OutputFormat::Text => print!("{}", story_text(&stories)),
        OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&story_json(&stories))?),
    }
    Ok(())
}
