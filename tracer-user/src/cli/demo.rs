//! `tracer demo`: the embedded recording of `cargo xtask lab containerd`, replayed.

use super::tracefile::{replay_input, ReplayOpts};
use anyhow::Result;
use std::process::ExitCode;
use tracer::input::Input;
use tracer::lineage::{story_text, traced_tree_text, TreeOpts};

#[derive(clap::Args, Debug)]
pub struct DemoArgs {
    /// Replay speed: 1 = original timing, 0 = as fast as possible (the default).
    #[arg(long, value_name = "X", default_value_t = 0.0)]
    pub speed: f64,
    /// Prefix lines with the event sequence number.
    #[arg(long)]
    pub seq: bool,
    /// Print the replay instead of the interactive view (the only view for now).
    #[arg(long)]
    pub no_tui: bool,
}

pub fn run(args: DemoArgs) -> Result<ExitCode> {
    let input = tracer::demo::open()?;
    show(input, &args)
}

/// Shows the demo. The interactive view, when it exists, replaces this one call.
fn show(input: Input, args: &DemoArgs) -> Result<ExitCode> {
    let opts = ReplayOpts {
        speed: Some(args.speed),
        seq: args.seq,
        ..ReplayOpts::default()
    };
    let engine = replay_input(input, &opts)?;
    println!("\n== process tree at the end of the demo\n");
    print!("{}", traced_tree_text(&engine, TreeOpts::default()));
    println!("\n== container births\n");
    print!("{}", story_text(&engine.stories()));
    Ok(ExitCode::SUCCESS)
}
