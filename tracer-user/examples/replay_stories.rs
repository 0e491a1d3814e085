//! Opens a trace file or an `strace -f` log (told apart by content), replays it through the
//! lineage engine and prints every container birth it saw, step by step.
//!
//! ```text
//! cargo run -p tracer-user --no-default-features --example replay_stories -- tests/fixtures/strace/ctr.log
//! ```

use std::io::Write;
use std::path::Path;

use tracer::lineage::story_text;
use tracer::Input;

/// Replays `path` and writes a summary line and the stories to `out`.
pub fn run(path: &Path, out: &mut impl Write) -> Result<(), Box<dyn std::error::Error>> {
    let mut input = Input::open(path)?;
    // Trace files carry a /proc snapshot of what ran before the capture: seed it first.
    let mut engine = input.seeded_engine();
    let mut events = 0u64;
    for event in input.by_ref() {
        engine.apply(&event?);
        events += 1;
    }
    let stories = tracer::lineage::stories(&engine);
    writeln!(
        out,
        "{}: {} ({events} events, {} processes, {} container births)",
        path.display(),
        input.kind.name(),
        engine.process_count(),
        stories.iter().filter(|s| s.phase.is_birth()).count()
    )?;
    if let Some(report) = input.strace_report() {
        if report.unreadable > 0 {
            writeln!(out, "{} unreadable strace lines", report.unreadable)?;
        }
    }
    if let Some(tail) = input.tail() {
        if let Some(error) = &tail.error {
            writeln!(out, "file damaged: {error}")?;
        }
    }
    writeln!(out)?;
    write!(out, "{}", story_text(&stories))?;
    Ok(())
}

#[allow(dead_code)] // Also compiled into tests/examples.rs, which calls `run` only.
fn main() -> std::process::ExitCode {
    let Some(path) = std::env::args_os().nth(1) else {
        eprintln!("usage: replay_stories FILE   (a tracer trace file or an strace -f log)");
        return std::process::ExitCode::from(2);
    };
    match run(Path::new(&path), &mut std::io::stdout().lock()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("replay_stories: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
