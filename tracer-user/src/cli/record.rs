//! `tracer record`: live capture into a trace file.

use super::RecordArgs;
use anyhow::{Context, Result};
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};
use tracer::capture::{header_for, CaptureBuilder};
use tracer::source::{EventSource, SourceLoop, Step};
use tracer::tracefile::TraceWriter;

pub fn run(args: RecordArgs) -> Result<ExitCode> {
    let target = super::trace::target_of(&args.target)?;
    // One thread: the reader's poll and tick then wake this thread alone, where a worker
    // thread would wake it through a futex each time (twice the idle CPU).
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let stop = super::trace::stop_signal()?;
        // The /proc snapshot is read while the probes load.
        let (t, ring_bytes, scope) = (target.clone(), args.target.ring_bytes, args.snapshot);
        let snap = std::thread::spawn(move || header_for(&t, ring_bytes, scope.into()));
        let started = CaptureBuilder::new(target.clone())
            .ring_bytes(args.target.ring_bytes)
            .syscalls(args.target.syscalls)
            .signals(args.target.signals.into())
            .start();
        let mut header = snap
            .join()
            .map_err(|_| anyhow::anyhow!("the /proc snapshot thread panicked"))?;
        let cap = started?;
        cap.facts().add_to(&mut header);
        for note in cap.notes() {
            tracer::say!("tracer: note: {note}");
        }
        let mut w = TraceWriter::create(&args.output, &header)
            .with_context(|| format!("cannot create {}", tracer::escape::path(&args.output)))?;

        let deadline = args
            .target
            .duration
            .map(|s| Instant::now() + Duration::from_secs_f64(s.max(0.0)));
        let started = Instant::now();
        let mut last_status = Instant::now();
        let mut last_events = 0u64;
        let tty = std::io::stderr().is_terminal();

        let mut lp = SourceLoop::new(cap);
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
        tracer::say!(
            "tracer: wrote {}: {} events in {:.1} s, {} dropped, {} sequence gaps, {} bytes ({:.1} bytes/event)",
            args.output.display(),
            stats.events,
            started.elapsed().as_secs_f64(),
            stats.drops,
            stats.seq_gaps,
            bytes,
            bytes as f64 / stats.events.max(1) as f64
        );
        if stats.decode_errors > 0 {
            tracer::say!(
                "tracer: {} records could not be decoded",
                stats.decode_errors
            );
        }
        let code = super::trace::command_exit_code(&mut cap);
        cap.release_in_background();
        Ok(ExitCode::from(code))
    })
}
