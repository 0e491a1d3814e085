//! `tracer` (no subcommand), `tracer tui` and `tracer view`: the terminal viewer.

use super::TargetArgs;
use anyhow::Result;
use std::path::Path;
use std::process::ExitCode;
use tracer::tui::ReplayOpts;

/// `tracer view FILE`: replay a recording (trace file or strace log) in the viewer.
pub fn view(file: &Path, speed: f64, paused: bool, at_end: bool) -> Result<ExitCode> {
    if !(speed.is_finite() && speed > 0.0) {
        anyhow::bail!("--speed must be a positive number");
    }
    let input = tracer::Input::open(file)?;
    let sched_probes = input.sched_probes();
    let seed = input.snapshot();
    let events = input.collect::<Result<Vec<_>, _>>()?;
    let title = file.file_name().map_or_else(
        || file.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let opts = ReplayOpts {
        speed,
        paused,
        at_end,
        sched_probes,
    };
    tracer::tui::run_replay(events, seed, title, opts)?;
    Ok(ExitCode::SUCCESS)
}

/// Live target of `tracer` / `tracer tui`: `--all` when nothing is said.
pub fn default_target() -> TargetArgs {
    TargetArgs {
        pid: None,
        all: true,
        duration: None,
        ring_bytes: tracer_common::DEFAULT_RING_BYTES,
        syscalls: false,
        command: Vec::new(),
    }
}

/// `--record FILE` of the live view: every captured batch goes into a trace file.
#[cfg(feature = "capture")]
struct FileRecorder {
    writer: Option<tracer::tracefile::TraceWriter<std::fs::File>>,
}

#[cfg(feature = "capture")]
impl FileRecorder {
    fn create(
        path: &Path,
        target: &tracer::capture::Target,
        ring_bytes: u32,
        syscalls: bool,
    ) -> Result<FileRecorder> {
        use anyhow::Context;
        use tracer::capture::layout;
        use tracer::tracefile::TraceWriter;
        let mut header = super::record::header_for(target, ring_bytes);
        // The same layouts the capture resolves when it starts.
        let mut cfg = tracer_common::ProbeConfig::EMPTY;
        if let Ok(layouts) =
            layout::tracefs_root().and_then(|root| layout::tracepoint_offsets(&root, &mut cfg))
        {
            header.layouts = layouts.formats;
        }
        // Written before the capture starts, so the capture's own choice is made here too.
        let btf = tracer::capture::CaptureBuilder::DEFAULT_BTF;
        let syscalls = syscalls
            || layout::btf_offsets(Path::new(btf), &mut cfg).is_err()
            || tracer::capture::task_probes_missing(&cfg).is_some();
        let probes = tracer::tracefile::probe_set_name(syscalls);
        header.extra.push(("probes".into(), probes.into()));
        let writer = TraceWriter::create(path, &header)
            .with_context(|| format!("cannot create {}", path.display()))?;
        Ok(FileRecorder {
            writer: Some(writer),
        })
    }
}

#[cfg(feature = "capture")]
impl tracer::tui::Recorder for FileRecorder {
    fn record(&mut self, batch: &[tracer::Event]) -> std::io::Result<()> {
        let Some(w) = self.writer.as_mut() else {
            return Ok(());
        };
        for ev in batch {
            w.write_event(ev).map_err(std::io::Error::other)?;
        }
        w.maybe_flush().map_err(std::io::Error::other)?;
        Ok(())
    }

    fn finish(&mut self, drops: u64) -> std::io::Result<()> {
        if let Some(mut w) = self.writer.take() {
            w.set_counters(drops, 0, 0);
            w.finish().map_err(std::io::Error::other)?;
        }
        Ok(())
    }
}

/// `tracer tui [--pid PID | --all | -- CMD] [--record FILE]`: the live view.
pub fn live(mut args: TargetArgs, record: Option<std::path::PathBuf>) -> Result<ExitCode> {
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
        tracer::capture::check_privileges()?;
        let recorder: Option<Box<dyn tracer::tui::Recorder>> = match &record {
            Some(path) => Some(Box::new(FileRecorder::create(
                path,
                &target,
                args.ring_bytes,
                args.syscalls,
            )?)),
            None => None,
        };
        let opts = tracer::tui::LiveOpts {
            ring_bytes: args.ring_bytes,
            syscalls: args.syscalls,
            recorder,
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
        let _ = (args, record);
        anyhow::bail!(
            "this tracer was built without live capture (feature `capture` off); `tracer view FILE` replays a recording"
        )
    }
}
