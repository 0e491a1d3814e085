//! `--at SEQ`: the frame a viewer opened at a position shows (every event up to it replayed
//! from the start) is the frame it shows after seeking there from the end, through its
//! snapshots, at and around every snapshot and at positions spread over the recording.

use super::*;
use crate::tui::shot::{still, ScreenSize};
use crate::tui::Recording;

const SIZE: ScreenSize = ScreenSize {
    cols: 160,
    rows: 45,
};

/// A storm with container starts (so the story pane has stories), long enough to cross
/// two snapshots.
fn storm() -> Vec<Event> {
    crate::synth::Storm::new(40_000).collect()
}

fn recording(evs: &[Event]) -> Recording {
    Recording {
        events: evs.iter().cloned().collect(),
        seed: crate::synth::storm_snapshot(),
        title: "storm.trace".into(),
        tail: None,
        pod: None,
    }
}

fn at(seq: u64) -> ReplayOpts {
    ReplayOpts {
        at: Some(seq),
        ..ReplayOpts::default()
    }
}

/// The seq `--at` names to open after the first `n` events.
fn seq_before(evs: &[Event], n: usize) -> u64 {
    n.checked_sub(1).map_or(0, |i| evs[i].seq)
}

/// `tracer view --at SEQ --screenshot`: opened there, replayed from the start.
fn opened_at(evs: &[Event], n: usize) -> String {
    crate::tui::screenshot(recording(evs), &at(seq_before(evs, n)), SIZE)
}

/// The viewer opened at the end (paused), as the source opens it.
fn opened_at_end(evs: &[Event]) -> AppState {
    let rec = recording(evs);
    let opts = at(u64::MAX);
    let mut s = crate::tui::replay_state(rec.title, None, &rec.seed, &opts);
    for m in crate::tui::source::opening(rec.events, &rec.seed, &opts, None) {
        s.ingest(m);
    }
    s
}

/// First different line of two frames, with both lines.
fn first_difference(a: &str, b: &str) -> Option<(usize, String, String)> {
    let (la, lb): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    (0..la.len().max(lb.len()))
        .find(|&i| la.get(i) != lb.get(i))
        .map(|i| {
            let line = |v: &[&str]| v.get(i).copied().unwrap_or("<none>").to_string();
            (i, line(&la), line(&lb))
        })
}

#[test]
fn a_seek_from_snapshots_shows_the_frame_a_replay_from_the_start_shows() {
    let evs = storm();
    let mut s = opened_at_end(&evs);
    assert_eq!(s.position(), evs.len());
    assert!(s.playback.paused, "--at opens paused");
    let marks: Vec<usize> = s.playback.snapshots.iter().map(|x| x.index).collect();
    assert!(marks.len() >= 3, "snapshots at {marks:?}");
    // At and around every snapshot, both ends, and spread positions (a fixed LCG: the same
    // positions every run, none chosen by hand).
    let mut want: Vec<usize> = vec![0, 1, evs.len() - 1, evs.len()];
    for &m in &marks {
        want.extend(
            [m.saturating_sub(1), m, m + 1]
                .iter()
                .filter(|&&n| n <= evs.len()),
        );
    }
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..4 {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        want.push((x >> 33) as usize % evs.len());
    }
    // Backwards first (restored from an earlier snapshot), then in the order drawn.
    want.sort_unstable_by(|a, b| b.cmp(a));
    want.dedup();
    for n in want {
        s.ingest(Msg::Goto(n));
        let seeked = still(&mut s, SIZE);
        let opened = opened_at(&evs, n);
        if let Some((line, got, expected)) = first_difference(&seeked, &opened) {
            panic!(
                "at {n} (seq {}), row {line}:\n seek: {got}\n open: {expected}\n{seeked}",
                seq_before(&evs, n)
            );
        }
    }
}

#[test]
fn at_opens_after_the_event_named_or_the_one_before_a_gap() {
    let evs = storm();
    let n = 1_234;
    let s = |opts: &ReplayOpts| {
        let rec = recording(&evs);
        let mut st = crate::tui::replay_state(rec.title, None, &rec.seed, opts);
        for m in crate::tui::source::opening(rec.events, &rec.seed, opts, None) {
            st.ingest(m);
        }
        st.position()
    };
    assert_eq!(s(&at(evs[n - 1].seq)), n);
    // A seq no event has (the storm's are consecutive: past the last) opens at the end.
    assert_eq!(s(&at(evs[evs.len() - 1].seq + 10)), evs.len());
    assert_eq!(s(&at(0)), 0);
}
