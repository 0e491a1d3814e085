//! Snapshots of whole screens (TestBackend + insta) on the real strace fixtures.

use super::*;

#[test]
fn snapshot_ctr_initial_80x24() {
    let mut s = at_end("ctr", (80, 24));
    insta::assert_snapshot!(screen(&mut s));
}

#[test]
fn snapshot_ctr_initial_200x60() {
    let mut s = at_end("ctr", (200, 60));
    insta::assert_snapshot!(screen(&mut s));
}

#[test]
fn snapshot_runc_and_podman_120x40() {
    let mut s = at_end("runc", (120, 40));
    insta::assert_snapshot!("runc_120x40", screen(&mut s));
    let mut s = at_end("podman", (120, 40));
    insta::assert_snapshot!("podman_120x40", screen(&mut s));
}

#[test]
fn snapshot_selection_with_lineage() {
    // The container init: cloned with CLONE_PARENT by CHILD, adopted by the shim.
    let mut s = at_end("ctr", (200, 60));
    search(&mut s, "sleep");
    assert_eq!(s.selected_process().map(|p| p.pid), Some(15941));
    insta::assert_snapshot!("selection_200x60", screen(&mut s));
    let mut s = at_end("ctr", (80, 24));
    select_pid(&mut s, 15921);
    insta::assert_snapshot!("selection_shim_80x24", screen(&mut s));
}

#[test]
fn snapshot_story_pane() {
    let mut s = at_end("ctr", (80, 24));
    keys(&mut s, &[Action::ToggleStory, Action::Down, Action::Down]);
    assert_eq!(s.view.pane, Pane::Story);
    insta::assert_snapshot!("story_80x24", screen(&mut s));
    let mut s = at_end("ctr", (200, 60));
    keys(&mut s, &[Action::ToggleStory]);
    insta::assert_snapshot!("story_200x60", screen(&mut s));
}

#[test]
fn snapshot_help_overlay() {
    let mut s = at_end("ctr", (80, 24));
    reduce(&mut s, key('?'));
    assert!(s.view.show_help);
    let text = screen(&mut s);
    for (k, _) in crate::tui::action::KEY_HELP {
        assert!(text.contains(k), "help lacks {k}");
    }
    insta::assert_snapshot!("help_80x24", text);
}

#[test]
fn snapshot_empty_trace() {
    let mut s = replay_state("empty.log", &[], 0, (80, 24));
    insta::assert_snapshot!("empty_80x24", screen(&mut s));
    let mut s = AppState::new_live("all");
    s.view.size = (80, 24);
    s.set_now(1_000);
    insta::assert_snapshot!("empty_live_80x24", screen(&mut s));
    // Only a file being written is called a recording, and it is named.
    s.status.recording = Some("/tmp/x\n.trace".into());
    let text = screen(&mut s);
    assert!(text.contains("● rec /tmp/x\\n.trace"), "{text}");
}

#[test]
fn snapshot_drops_and_gaps_in_red() {
    // Live view of the runc capture with events 41..=45 lost (INIT's birth among them) and 7
    // drops reported.
    let evs: Vec<Event> = fixture("runc")
        .into_iter()
        .filter(|e| !(41..=45).contains(&e.seq))
        .collect();
    let mut s = AppState::new_live("pid 15126");
    s.view.size = (80, 24);
    s.ingest(Msg::Events(evs));
    s.ingest(Msg::Drops(7));
    s.set_now(60_000);
    assert_eq!(s.stats.gaps(), 5);
    let t = render(&mut s);
    let text = t.backend().to_string();
    assert!(text.contains("drops 7"), "{text}");
    assert!(text.contains("gaps 5"), "{text}");
    let buf = t.backend().buffer();
    let y = 23;
    let row: String = (0..80).map(|x| buf[(x, y)].symbol().to_string()).collect();
    let x = row.find("drops 7").expect("drops on the status line");
    let x = row[..x].chars().count() as u16;
    assert_eq!(buf[(x, y)].bg, Color::Red);
    insta::assert_snapshot!("drops_gaps_80x24", text);
}

#[test]
fn no_red_when_nothing_lost() {
    let mut s = at_end("runc", (80, 24));
    let t = render(&mut s);
    let buf = t.backend().buffer();
    assert!((0..80).all(|x| buf[(x, 23)].bg != Color::Red));
}

#[test]
fn snapshot_replay_midway_highlights_new_nodes() {
    let evs = fixture("ctr");
    // Up to CHILD's clone of INIT; five more events arrive one by one (stepping): the
    // CLONE_PARENT birth of INIT.
    let at = evs
        .iter()
        .position(|e| {
            matches!(
                e.kind,
                EventKind::Fork {
                    child_tid: 15941,
                    ..
                }
            )
        })
        .unwrap()
        - 1;
    let mut s = replay_state("ctr.log", &evs, at, (100, 30));
    s.set_now(100_000);
    for ev in &evs[at..at + 5] {
        s.ingest(Msg::Events(vec![ev.clone()]));
    }
    s.set_now(100_500);
    let text = screen(&mut s);
    // Only INIT was born in those five events: its row, under runc create, alone is new.
    let new_rows: Vec<&str> = text.lines().filter(|l| l.contains(" new ")).collect();
    assert_eq!(new_rows.len(), 1, "{text}");
    assert!(
        new_rows[0].contains(
            "└─ 15941 runc:[2:INIT] new [oci-init 2:INIT] {cid:fx-ctr} (pid 1 in container) (CLONE_PARENT v"
        ),
        "{text}"
    );
    insta::assert_snapshot!("midway_100x30", text);
    s.set_now(103_000);
    assert!(!screen(&mut s).contains(" new"));
}

#[test]
fn snapshot_threads_exited_fold_focus() {
    let mut s = at_end("ctr", (100, 40));
    reduce(&mut s, key('t'));
    insta::assert_snapshot!("threads_expanded", screen(&mut s));
    let mut s = at_end("ctr", (100, 30));
    reduce(&mut s, key('x'));
    insta::assert_snapshot!("exited_hidden", screen(&mut s));
    let mut s = at_end("ctr", (100, 30));
    select_pid(&mut s, 15931);
    reduce(&mut s, Action::Left); // fold runc create
    insta::assert_snapshot!("folded", screen(&mut s));
    let mut s = at_end("ctr", (100, 30));
    select_pid(&mut s, 15921);
    reduce(&mut s, Action::Enter); // focus the shim's subtree
    reduce(&mut s, key('f')); // log: that subtree only
    insta::assert_snapshot!("focused_subtree_log_filtered", screen(&mut s));
}

/// `c` puts each log line's time of day after its `[pid N]`, from the recording's clock (here
/// a header's: 05:00:00 UTC at the first event's boot time), and takes it off; no clock: `??`.
#[test]
fn c_shows_the_log_lines_time_from_the_recordings_clock() {
    use crate::clock::{Clock, Stamper, Style};
    let mut s = at_end("ctr", (200, 60));
    let first_ts = s
        .log
        .lines
        .iter()
        .map(|l| l.ts_ns)
        .find(|&t| t > 0)
        .unwrap();
    let clock = Clock::boot(1_764_738_000_000_000_000, first_ts); // 2025-12-03T05:00:00Z
    s.log.time_clock = clock;
    // The machine's time zone decides the hour, as strace's -tt: the minutes and the
    // microseconds of 05:00:00.000000 UTC are the same everywhere that matters here.
    let stamp = Stamper::new(clock, Style::Micros).stamp(first_ts);
    assert!(stamp.ends_with(":00:00.000000 "), "{stamp}");
    let plain = screen(&mut s);
    reduce(&mut s, key('c'));
    let timed = screen(&mut s);
    let first = s
        .log
        .lines
        .iter()
        .find(|l| l.ts_ns == first_ts && l.text.contains("[pid"));
    let line = first.map(|l| l.timed(clock)).unwrap_or_default();
    assert!(line.contains(&format!("] {stamp}")), "{line}");
    assert!(!plain.contains(":00:00."), "{plain}");
    assert!(timed.contains(&format!("] {}", &stamp[..6])), "{timed}");
    s.log.time_clock = Clock::None;
    assert!(screen(&mut s).contains("] ??:??:??.?????? "));
    reduce(&mut s, key('c'));
    assert_eq!(screen(&mut s), plain);
}

#[test]
fn draws_at_any_size_without_panicking() {
    let mut s = at_end("podman", (80, 24));
    reduce(&mut s, key('s'));
    reduce(&mut s, key('?'));
    for (w, h) in [
        (1, 1),
        (10, 3),
        (20, 5),
        (40, 10),
        (80, 24),
        (119, 24),
        (120, 24),
        (300, 100),
    ] {
        s.view.size = (w, h);
        s.refresh();
        let _ = screen(&mut s);
    }
}
