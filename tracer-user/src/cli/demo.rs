//! `tracer demo [pod|containerd|lifecycle|restart]`: an embedded lab recording, replayed.

use super::replay::{replay_input, PaceOpts};
use anyhow::Result;
use std::process::ExitCode;
use tracer::demo::Demo;
use tracer::input::Input;
use tracer::lineage::{story_text, traced_tree_text, TreeOpts};

/// The bundled recordings.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default)]
pub enum Which {
    /// `cargo xtask lab pod`: two CRI pods (sandbox, CNI plugins, containers under one shim).
    #[default]
    Pod,
    /// `cargo xtask lab containerd`: two `ctr run` containers, two shims.
    Containerd,
    /// `cargo xtask lab pod --lifecycle`: the rest of a container's life (execs, a crash and
    /// its restart, an OOM kill, a stop with a grace period, the pods removed).
    Lifecycle,
    /// `cargo xtask lab restart`: containerd restarted by its supervisor while its container
    /// and an exec'd process live on under their shim.
    Restart,
}

#[derive(clap::Args, Debug)]
pub struct DemoArgs {
    /// Which recording.
    #[arg(value_enum, default_value_t = Which::Pod)]
    pub which: Which,
    /// Replay speed: 1 = original timing, 0 = as fast as possible (the default without the
    /// viewer; the viewer plays at 1).
    #[arg(long, value_name = "X")]
    pub speed: Option<f64>,
    /// Prefix lines with the event sequence number.
    #[arg(long)]
    pub seq: bool,
    /// Print the replay instead of the interactive view (the default when stdout is not a
    /// terminal).
    #[arg(long)]
    pub no_tui: bool,
    /// Guided, in the viewer: open paused at the first container-birth step with its
    /// explanation; `]` / `[` move between steps.
    #[arg(long, conflicts_with = "no_tui")]
    pub guided: bool,
}

pub fn run(args: DemoArgs) -> Result<ExitCode> {
    let demo = match args.which {
        Which::Pod => Demo::Pod,
        Which::Containerd => Demo::Containerd,
        Which::Lifecycle => Demo::Lifecycle,
        Which::Restart => Demo::Restart,
    };
    show(demo, demo.open()?, &args)
}

/// Shows the demo: the viewer on a terminal, else the printed replay, tree and stories.
fn show(demo: Demo, input: Input, args: &DemoArgs) -> Result<ExitCode> {
    use std::io::IsTerminal;
    if args.guided || (std::io::stdout().is_terminal() && !args.no_tui) {
        let sched_probes = input.sched_probes();
        let seed = input.snapshot();
        let events = input.collect::<Result<tracer::tracefile::PackedEvents, _>>()?;
        let opts = tracer::tui::ReplayOpts {
            speed: args.speed.filter(|s| *s > 0.0).unwrap_or(1.0),
            paused: false,
            at_end: false,
            sched_probes,
            guided: args.guided,
        };
        let rec = tracer::tui::Recording {
            events,
            seed,
            title: demo.title().into(),
            tail: None,
            pod: None,
        };
        tracer::tui::run_replay(rec, opts)?;
        return Ok(ExitCode::SUCCESS);
    }
    let opts = PaceOpts {
        speed: Some(args.speed.unwrap_or(0.0)),
        seq: args.seq,
        ..PaceOpts::default()
    };
    let engine = replay_input(input, &opts, None)?;
    super::output::to_stdout(|out| {
        writeln!(out, "\n== process tree at the end of the demo\n")?;
        out.write_all(traced_tree_text(&engine, TreeOpts::default()).as_bytes())?;
        writeln!(
            out,
            "\n== container stories: births, execs, deaths, restarts\n"
        )?;
        out.write_all(story_text(&tracer::lineage::stories(&engine)).as_bytes())
    })?;
    Ok(ExitCode::SUCCESS)
}
