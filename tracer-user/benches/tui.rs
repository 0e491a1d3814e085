//! Viewer frame cost. Goal: one frame of a 10k-process tree renders in ≤ 10 ms.
//! `draw` is the pure render of a frame (rows already derived); `refresh+draw` also rebuilds
//! the visible rows from the engine, as after a batch of events.

use criterion::{criterion_group, criterion_main, Criterion};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use std::hint::black_box;
use std::time::Instant;
use tracer::synth;
use tracer::tui::state::RowKind;
use tracer::tui::{draw, AppState, Msg};

const PROCS: u32 = 10_000;
const BUDGET_MS: f64 = 10.0;

fn state(size: (u16, u16)) -> AppState {
    let mut s = AppState::new_live("bench");
    s.view.size = size;
    s.ingest(Msg::Events(synth::fork_tree(PROCS)));
    s.set_now(60_000);
    s.refresh();
    // Select a deep process in the middle so the detail pane and connectors have work.
    let mid = s.tree.rows[s.tree.rows.len() / 2].kind;
    s.tree.selected = Some(mid);
    s.refresh();
    assert!(matches!(mid, RowKind::Proc(_)));
    assert!(s.engine.process_count() >= PROCS as usize);
    s
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("tui_frame_10k_procs");
    for size in [(80u16, 24u16), (200, 60)] {
        let mut s = state(size);
        let mut term = Terminal::new(TestBackend::new(size.0, size.1)).expect("terminal");
        g.bench_function(format!("draw_{}x{}", size.0, size.1), |b| {
            b.iter(|| {
                term.draw(|f| draw(f, black_box(&s))).expect("draw");
            })
        });
        g.bench_function(format!("refresh+draw_{}x{}", size.0, size.1), |b| {
            b.iter(|| {
                s.mark_tree_dirty();
                s.refresh();
                term.draw(|f| draw(f, black_box(&s))).expect("draw");
            })
        });
        // A plain summary line, whatever criterion's output format.
        let n = 50;
        let t = Instant::now();
        for _ in 0..n {
            s.mark_tree_dirty();
            s.refresh();
            term.draw(|f| draw(f, &s)).expect("draw");
        }
        let ms = t.elapsed().as_secs_f64() * 1000.0 / n as f64;
        println!(
            "tui frame ({} processes, {}x{}, rows rebuilt): {ms:.3} ms per frame ({})",
            s.engine.process_count(),
            size.0,
            size.1,
            if ms <= BUDGET_MS {
                "within the 10 ms budget"
            } else {
                "OVER the 10 ms budget"
            }
        );
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
