//! Trace-file throughput and replay memory, on a synthetic 1M-event fork/exec storm.
//!
//! `cargo bench -p tracer-user --no-default-features --bench tracefile` (or `cargo xtask
//! bench-tracefile`). Prints write and read+decode rates, bytes per event, the ratio to the
//! 3M events/s target, and the peak RSS of a replay (engine + strace-like rendering) measured
//! in a fresh process.

use std::hint::black_box;
use std::time::Instant;
use tracer::render::LineRenderer;
use tracer::synth;
use tracer::tracefile::{CaptureMode, Header, TraceReader, TraceWriter};

const TARGET_EVENTS_PER_S: f64 = 3e6;
const TARGET_RSS_MIB: f64 = 150.0;

fn vm_hwm_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// In the child: replay the file the way `tracer replay` does, print the peak RSS.
fn replay_child(path: &str) {
    let t = Instant::now();
    let mut r = TraceReader::open(path.as_ref()).expect("open");
    let mut engine = tracer::Engine::seeded(&r.header().snapshot_processes());
    let mut renderer = LineRenderer::new();
    let mut lines = 0usize;
    let mut n = 0u64;
    for ev in r.events() {
        let ev = ev.expect("event");
        engine.apply(&ev);
        lines += renderer.render(&ev).len();
        n += 1;
    }
    let dt = t.elapsed().as_secs_f64();
    black_box(lines);
    println!(
        "replay: {n} events, {} processes, {:.2} s ({:.2} M events/s), peak RSS {:.1} MiB",
        engine.process_count(),
        dt,
        n as f64 / dt / 1e6,
        vm_hwm_kib() as f64 / 1024.0
    );
    println!("RSS_KIB {}", vm_hwm_kib());
}

fn main() {
    if let Ok(path) = std::env::var("TRACEFILE_BENCH_REPLAY") {
        replay_child(&path);
        return;
    }
    let n: u64 = std::env::var("TRACEFILE_BENCH_EVENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let path = std::env::temp_dir().join(format!("tracefile-bench-{}.trace", std::process::id()));

    let mut header = Header::for_this_host(CaptureMode::Command(vec!["sh".into()]));
    header.snapshot = synth::storm_snapshot().iter().map(Into::into).collect();
    let t = Instant::now();
    let mut w = TraceWriter::create(&path, &header).expect("create");
    for ev in synth::Storm::new(n) {
        w.write_event(&ev).expect("write");
    }
    w.finish().expect("finish");
    let dt_write = t.elapsed().as_secs_f64();
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    println!(
        "write: {n} events in {dt_write:.3} s ({:.2} M events/s, generation included); file {size} bytes, {:.2} bytes/event",
        n as f64 / dt_write / 1e6,
        size as f64 / n as f64
    );

    let mut best = f64::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        let mut r = TraceReader::open(&path).expect("open");
        let mut count = 0u64;
        for ev in r.events() {
            black_box(ev.expect("event"));
            count += 1;
        }
        assert_eq!(count, n);
        best = best.min(t.elapsed().as_secs_f64());
    }
    let rate = n as f64 / best;
    println!(
        "read+decode: best of 5 {best:.3} s, {:.2} M events/s; target {:.1} M/s: ratio {:.2}x",
        rate / 1e6,
        TARGET_EVENTS_PER_S / 1e6,
        rate / TARGET_EVENTS_PER_S
    );

    let exe = std::env::current_exe().expect("current exe");
    let out = std::process::Command::new(exe)
        .env("TRACEFILE_BENCH_REPLAY", &path)
        .output()
        .expect("replay child");
    let text = String::from_utf8_lossy(&out.stdout);
    for line in text.lines().filter(|l| !l.starts_with("RSS_KIB")) {
        println!("{line}");
    }
    if let Some(kib) = text
        .lines()
        .find_map(|l| l.strip_prefix("RSS_KIB "))
        .and_then(|v| v.parse::<f64>().ok())
    {
        println!(
            "replay peak RSS {:.1} MiB; target {TARGET_RSS_MIB} MiB: ratio {:.2}",
            kib / 1024.0,
            kib / 1024.0 / TARGET_RSS_MIB
        );
    }
    if std::env::var_os("TRACEFILE_BENCH_KEEP").is_some() {
        println!("kept {}", path.display());
    } else {
        let _ = std::fs::remove_file(&path);
    }
}
