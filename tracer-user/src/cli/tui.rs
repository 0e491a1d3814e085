//! `tracer` (no subcommand), `tracer tui` and `tracer view`: the terminal viewer.

use super::TargetArgs;
use anyhow::Result;
use std::path::Path;
use std::process::ExitCode;
use tracer::tui::ReplayOpts;

/// `tracer view FILE`: replay an strace log in the viewer.
pub fn view(file: &Path, speed: f64, paused: bool, at_end: bool) -> Result<ExitCode> {
    if !(speed.is_finite() && speed > 0.0) {
        anyhow::bail!("--speed must be a positive number");
    }
    let events = super::lineage::load_events(file)?;
    let title = file.file_name().map_or_else(
        || file.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let opts = ReplayOpts {
        speed,
        paused,
        at_end,
    };
    tracer::tui::run_replay(events, title, opts)?;
    Ok(ExitCode::SUCCESS)
}

/// Live target of `tracer` / `tracer tui`: `--all` when nothing is said.
pub fn default_target() -> TargetArgs {
    TargetArgs {
        pid: None,
        all: true,
        duration: None,
        ring_bytes: tracer_common::DEFAULT_RING_BYTES,
        command: Vec::new(),
    }
}

/// `tracer tui [--pid PID | --all | -- CMD]`: the live view.
pub fn live(mut args: TargetArgs) -> Result<ExitCode> {
    if args.duration.is_some() {
        anyhow::bail!("--duration is for `tracer trace`; the viewer runs until `q`");
    }
    if args.pid.is_none() && args.command.is_empty() {
        args.all = true;
    }
    #[cfg(feature = "capture")]
    {
        use tracer::capture::CaptureError;
        let target = super::trace::target_of(&args)?;
        let opts = tracer::tui::LiveOpts {
            ring_bytes: args.ring_bytes,
            recorder: None,
        };
        tracer::tui::run_live(target, opts).map_err(|e| {
            // One line that says why and what works without root (exit code 2 kept).
            match e.downcast_ref::<CaptureError>() {
                Some(CaptureError::MissingPrivilege(m)) => {
                    anyhow::Error::new(CaptureError::MissingPrivilege(format!(
                        "{m}; `tracer view FILE` replays a recording without"
                    )))
                }
                _ => e.context("live view"),
            }
        })?;
        Ok(ExitCode::SUCCESS)
    }
    #[cfg(not(feature = "capture"))]
    {
        let _ = args;
        anyhow::bail!(
            "this tracer was built without live capture (feature `capture` off); `tracer view FILE` replays a recording"
        )
    }
}
