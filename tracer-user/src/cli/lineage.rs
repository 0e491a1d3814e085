//! `tracer tree` and `tracer story`: the lineage engine over a recorded file.

use super::OutputFormat;
use anyhow::{Context, Result};
use std::path::Path;
use tracer::lineage::{
    replay_until, story_json, story_text, tree_json, tree_text, Engine, TreeOpts,
};
use tracer::Event;

/// Events of an strace log, with the importer's complaints on stderr (never fatal unless
/// no line at all was understood).
pub fn load_events(path: &Path) -> Result<Vec<Event>> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let import =
        tracer::strace::parse_reader(&bytes[..]).with_context(|| path.display().to_string())?;
    if import.unreadable > 0 {
        eprintln!(
            "tracer: {}: {} lines not understood",
            path.display(),
            import.unreadable
        );
        for (line, text) in &import.first_unreadable {
            eprintln!("tracer:   line {line}: {text}");
        }
    }
    Ok(import.events)
}

fn engine_for(events: &[Event], at: Option<u64>) -> Engine {
    match at {
        Some(seq) => replay_until(events, seq),
        None => {
            let mut e = Engine::new();
            events.iter().for_each(|ev| e.apply(ev));
            e
        }
    }
}

pub fn tree(file: &Path, format: OutputFormat, at: Option<u64>, hide_exited: bool) -> Result<()> {
    let events = load_events(file)?;
    let engine = engine_for(&events, at);
    match format {
        OutputFormat::Text => {
            let opts = TreeOpts {
                show_exited: !hide_exited,
                ..TreeOpts::default()
            };
            print!("{}", tree_text(&engine, opts));
            if engine.warning_count() > 0 {
                eprintln!("tracer: {} anomalies in the stream (missing or out-of-order events); see --format json", engine.warning_count());
            }
        }
        OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&tree_json(&engine))?),
    }
    Ok(())
}

pub fn story(file: &Path, format: OutputFormat) -> Result<()> {
    let events = load_events(file)?;
    let engine = engine_for(&events, None);
    let stories = engine.stories();
    match format {
        OutputFormat::Text if stories.is_empty() => println!("no container birth found"),
        OutputFormat::Text => print!("{}", story_text(&stories)),
        OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&story_json(&stories))?),
    }
    Ok(())
}
