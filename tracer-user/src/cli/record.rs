//! `tracer record`: live capture into a trace file.

use super::RecordArgs;
use anyhow::Result;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};
use tracer::source::Step;
use tracer::tracefile::StatsRecord;

pub fn run(args: RecordArgs) -> Result<ExitCode> {
    let target = super::trace::live_target(&args.target, &args.pod)?;
    let pod = args.pod.query();
    // One thread: the reader's poll and tick then wake this thread alone, where a worker
    // thread would wake it through a futex each time (twice the idle CPU).
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        // Caught from before the capture starts its command: a signal at the start is not
        // the default death.
        let stop = super::trace::stop_signal()?;
        let (cap, mut w, seed, _) = super::trace::start_recording(
            &target,
            &args.target,
            args.snapshot,
            &args.output,
            pod.as_ref(),
        )?;

        let deadline = args
            .target
            .duration
            .map(|s| Instant::now() + Duration::from_secs_f64(s.max(0.0)));
        let started = Instant::now();
        let mut last_status = Instant::now();
        let mut last_events = 0u64;
        let tty = std::io::stderr().is_terminal();

        let mut lp = super::trace::source_loop(cap, pod, &seed);
        super::trace::drive(&mut lp, deadline, stop, |step, cap| {
            match step {
                Step::Batch(batch) => {
                    for ev in batch.drain(..) {
                        w.write_event(&ev)?;
                    }
                }
                Step::Tick if last_status.elapsed() >= Duration::from_secs(1) => {
                    let dt = last_status.elapsed().as_secs_f64();
                    let events = w.stats().events;
                    let rate = (events - last_events) as f64 / dt;
                    last_events = events;
                    last_status = Instant::now();
                    w.write_stats(cap.drops(), cap.seq_issued(), cap.decode_errors())?;
                    if tty {
                        tracer::say_inline!(
                            "\r\x1b[Ktracer: recording {}: {events} events, {rate:.0}/s, {} drops, {:.0} s",
                            args.output.display(),
                            cap.drops(),
                            started.elapsed().as_secs_f64()
                        );
                        let _ = std::io::stderr().flush();
                    }
                }
                Step::Drops(_) | Step::Tick => {}
            }
            w.maybe_flush()?;
            Ok(true)
        })
        .await?;
        let mut cap = lp.into_source();
        w.set_counters(cap.drops(), cap.seq_issued(), cap.decode_errors());
        let stats = *w.stats();
        let file = w.finish()?;
        let bytes = file.metadata().map(|m| m.len()).unwrap_or(0);
        if tty {
            tracer::say_inline!("\r\x1b[K");
        }
        say_wrote(&args.output, &stats, bytes, started.elapsed().as_secs_f64());
        let code = super::trace::command_exit_code(&mut cap);
        cap.release_in_background();
        Ok(ExitCode::from(code))
    })
}

/// The closing lines: what the trace file holds, and the records that could not be decoded.
fn say_wrote(path: &std::path::Path, stats: &StatsRecord, bytes: u64, secs: f64) {
    tracer::say!(
        "tracer: wrote {}: {} events in {:.1} s, {} dropped, {} sequence gaps, {} ({:.1} bytes/event)",
        path.display(),
        stats.events,
        secs,
        stats.drops,
        stats.seq_gaps,
        tracer::names::size(bytes),
        bytes as f64 / stats.events.max(1) as f64
    );
    if stats.decode_errors > 0 {
        tracer::say!(
            "tracer: {} records could not be decoded",
            stats.decode_errors
        );
    }
}
