//! Snapshot tests (TestBackend + insta) on the real strace fixtures, reducer and key tests,
//! and the replay source driven through its channels.

use std::path::PathBuf;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::style::Color;
use ratatui::Terminal;

use super::action::{key_action, Action};
use super::msg::{Control, Msg};
use super::reduce::reduce;
use super::source::{replay, ReplayOpts};
use super::state::{AppState, Mode, Pane, RowKind, LOG_CAP};
use super::ui::draw;
use crate::event::{Event, EventKind};
use crate::lineage::{replay_until, tree_text, Engine, TreeOpts};

fn fixture(name: &str) -> Vec<Event> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/strace")
        .join(format!("{name}.log"));
    let text = std::fs::read_to_string(&path).expect("fixture");
    crate::strace::parse_log(&text).expect("import").events
}

fn stories_of(events: &[Event]) -> Vec<crate::lineage::Story> {
    let mut e = Engine::new();
    events.iter().for_each(|ev| e.apply(ev));
    crate::lineage::stories(&e)
}

/// A replay state with the first `upto` events of `events` applied, the clock far past any
/// highlight.
fn replay_state(title: &str, events: &[Event], upto: usize, size: (u16, u16)) -> AppState {
    let mut s = AppState::new_replay(title);
    s.view.size = size;
    s.playback.paused = true;
    s.ingest(Msg::Init {
        total: events.len(),
        stories: stories_of(events),
    });
    s.ingest(Msg::Events(events[..upto].to_vec()));
    s.set_now(60_000);
    s.refresh();
    s
}

fn at_end(name: &str, size: (u16, u16)) -> AppState {
    let evs = fixture(name);
    let n = evs.len();
    replay_state(&format!("{name}.log"), &evs, n, size)
}

fn render(s: &mut AppState) -> Terminal<TestBackend> {
    let mut t = Terminal::new(TestBackend::new(s.view.size.0, s.view.size.1)).expect("terminal");
    s.refresh();
    t.draw(|f| draw(f, s)).expect("draw");
    t
}

fn screen(s: &mut AppState) -> String {
    render(s).backend().to_string()
}

fn key(c: char) -> Action {
    let s = AppState::new_live("t");
    key_action(&KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE), &s).expect("mapped")
}

fn keys(s: &mut AppState, acts: &[Action]) -> Vec<Control> {
    acts.iter().flat_map(|a| reduce(s, a.clone())).collect()
}

fn select_pid(s: &mut AppState, pid: u32) {
    let id = s.engine.process(pid).expect("pid").id;
    s.tree.selected = Some(RowKind::Proc(id));
    s.refresh();
}

fn search(s: &mut AppState, q: &str) {
    reduce(s, Action::SearchStart);
    for c in q.chars() {
        reduce(s, Action::SearchChar(c));
    }
    reduce(s, Action::SearchConfirm);
}

// ---- snapshots ----

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
    for (k, _) in super::action::KEY_HELP {
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

// ---- keys and reducer ----

#[test]
fn keys_map_to_actions() {
    let s = AppState::new_live("t");
    let k = |c: KeyCode| key_action(&KeyEvent::new(c, KeyModifiers::NONE), &s);
    assert_eq!(k(KeyCode::Up), Some(Action::Up));
    assert_eq!(k(KeyCode::Char('k')), Some(Action::Up));
    assert_eq!(k(KeyCode::Char('j')), Some(Action::Down));
    assert_eq!(k(KeyCode::Left), Some(Action::Left));
    assert_eq!(k(KeyCode::Right), Some(Action::Right));
    assert_eq!(k(KeyCode::Enter), Some(Action::Enter));
    assert_eq!(k(KeyCode::Char('/')), Some(Action::SearchStart));
    assert_eq!(k(KeyCode::Char(' ')), Some(Action::TogglePause));
    assert_eq!(k(KeyCode::Char('.')), Some(Action::StepForward));
    assert_eq!(k(KeyCode::Char(',')), Some(Action::StepBack));
    assert_eq!(k(KeyCode::Char('[')), Some(Action::PrevStoryStep));
    assert_eq!(k(KeyCode::Char(']')), Some(Action::NextStoryStep));
    assert_eq!(k(KeyCode::Char('+')), Some(Action::Faster));
    assert_eq!(k(KeyCode::Char('-')), Some(Action::Slower));
    assert_eq!(k(KeyCode::Char('g')), Some(Action::Start));
    assert_eq!(k(KeyCode::Char('G')), Some(Action::End));
    assert_eq!(k(KeyCode::Char('q')), Some(Action::Quit));
    assert_eq!(k(KeyCode::Char('Z')), None);
    let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert_eq!(key_action(&ctrl_c, &s), Some(Action::Quit));

    // While typing a search, letters are text, not commands.
    let mut s = AppState::new_live("t");
    s.search.input = Some(String::new());
    let k = |c: KeyCode| key_action(&KeyEvent::new(c, KeyModifiers::NONE), &s);
    assert_eq!(k(KeyCode::Char('q')), Some(Action::SearchChar('q')));
    assert_eq!(k(KeyCode::Esc), Some(Action::SearchCancel));
    assert_eq!(k(KeyCode::Enter), Some(Action::SearchConfirm));
}

#[test]
fn movement_fold_and_focus() {
    let mut s = at_end("ctr", (80, 24));
    assert_eq!(s.tree.cursor, 0);
    let n = s.tree.rows.len();
    reduce(&mut s, Action::Down);
    assert_eq!(s.selected_process().map(|p| p.pid), Some(15921));
    reduce(&mut s, Action::EndRow);
    assert_eq!(s.tree.cursor, n - 1);
    reduce(&mut s, Action::Down);
    assert_eq!(s.tree.cursor, n - 1, "stays on the last row");
    reduce(&mut s, Action::Home);
    assert_eq!(s.tree.cursor, 0);
    reduce(&mut s, Action::Up);
    assert_eq!(s.tree.cursor, 0);

    select_pid(&mut s, 15921);
    reduce(&mut s, Action::Left);
    assert!(s.tree.rows.len() < n, "folded");
    assert!(s.tree.rows[s.tree.cursor].folded_children > 0);
    reduce(&mut s, Action::Right);
    assert_eq!(s.tree.rows.len(), n, "unfolded");
    reduce(&mut s, Action::Right);
    assert_eq!(
        s.selected_process().map(|p| p.pid),
        Some(15931),
        "first child"
    );
    reduce(&mut s, Action::Left); // runc has children: folds
    reduce(&mut s, Action::Left); // folded: goes to the parent
    assert_eq!(s.selected_process().map(|p| p.pid), Some(15921));

    reduce(&mut s, Action::Enter);
    let shim = s.engine.process(15921).map(|p| p.id);
    assert_eq!(s.tree.focus_root, shim);
    assert_eq!(s.tree.rows[0].kind, RowKind::Proc(shim.unwrap_or(0)));
    reduce(&mut s, Action::Back);
    assert_eq!(s.tree.focus_root, None);
}

#[test]
fn mouse_scrolls_the_pane_under_it_and_click_selects() {
    let mut s = at_end("ctr", (80, 24));
    // Wheel over the tree (row 3) moves the selection.
    reduce(
        &mut s,
        Action::Scroll {
            up: false,
            col: 5,
            row: 3,
        },
    );
    assert_eq!(s.tree.cursor, 3);
    // Wheel over the log (bottom rows) scrolls the log, not the tree.
    reduce(
        &mut s,
        Action::Scroll {
            up: true,
            col: 5,
            row: 20,
        },
    );
    assert_eq!(s.tree.cursor, 3);
    assert!(s.log.cursor.is_some());
    assert_eq!(s.view.pane, Pane::Tree, "focus unchanged by the wheel");
    // Click on the tree's 6th line selects that row.
    reduce(&mut s, Action::Click { col: 10, row: 6 });
    assert_eq!(s.tree.cursor, 5);
    assert_eq!(s.selected_process().map(|p| p.pid), Some(15941));
    reduce(&mut s, Action::Click { col: 10, row: 20 });
    assert_eq!(s.view.pane, Pane::Log);
}

#[test]
fn toggles() {
    let mut s = at_end("ctr", (80, 24));
    let n = s.tree.rows.len();
    reduce(&mut s, key('x'));
    assert!(!s.tree.show_exited);
    assert!(s.tree.rows.len() < n);
    // An exited process stays only when something below it lives.
    for (i, r) in s.tree.rows.iter().enumerate() {
        let p = s.engine.get(r.kind.proc()).expect("proc");
        if p.exited {
            assert!(
                s.tree.rows.iter().any(|c| c.parent_row == Some(i)),
                "{}",
                p.pid
            );
        }
    }
    reduce(&mut s, key('x'));
    assert_eq!(s.tree.rows.len(), n);
    reduce(&mut s, key('t'));
    assert!(s.tree.rows.len() > n, "threads expanded");
    assert!(s
        .tree
        .rows
        .iter()
        .any(|r| matches!(r.kind, RowKind::Thread { .. })));
    reduce(&mut s, key('s'));
    assert!(s.view.show_story);
    reduce(&mut s, Action::NextPane);
    assert_eq!(s.view.pane, Pane::Log);
    reduce(&mut s, key('s'));
    assert!(!s.view.show_story);
    reduce(&mut s, key('?'));
    assert!(s.view.show_help);
    reduce(&mut s, Action::Back);
    assert!(!s.view.show_help);
    reduce(&mut s, key('q'));
    assert!(s.quit);
}

#[test]
fn search_by_name_pid_and_container_id() {
    let mut s = at_end("ctr", (80, 24));
    search(&mut s, "15941");
    assert_eq!(s.selected_process().map(|p| p.pid), Some(15941));
    search(&mut s, "PARENT");
    assert_eq!(s.selected_process().map(|p| p.pid), Some(15938));
    search(&mut s, "fx-c");
    let first = s.selected_process().map(|p| p.pid);
    assert!(first.is_some());
    reduce(&mut s, key('n'));
    assert_ne!(s.selected_process().map(|p| p.pid), first);
    reduce(&mut s, key('N'));
    assert_eq!(s.selected_process().map(|p| p.pid), first);
    search(&mut s, "nothing-like-this");
    assert!(s
        .status
        .message
        .as_deref()
        .is_some_and(|m| m.contains("no match")));
    // A match inside a folded subtree unfolds it.
    select_pid(&mut s, 15921);
    reduce(&mut s, Action::Left);
    search(&mut s, "sleep");
    assert_eq!(s.selected_process().map(|p| p.pid), Some(15941));
}

#[test]
fn replay_keys_emit_controls() {
    let mut s = at_end("ctr", (80, 24));
    s.playback.paused = false;
    assert_eq!(reduce(&mut s, key(' ')), vec![Control::Pause(true)]);
    assert!(s.playback.paused);
    assert_eq!(reduce(&mut s, key('.')), vec![Control::Step(1)]);
    assert_eq!(reduce(&mut s, key(',')), vec![Control::Step(-1)]);
    assert_eq!(reduce(&mut s, key('+')), vec![Control::Speed(2.0)]);
    assert_eq!(reduce(&mut s, key('-')), vec![Control::Speed(1.0)]);
    for _ in 0..20 {
        reduce(&mut s, key('-'));
    }
    assert_eq!(s.playback.speed, super::reduce::MIN_SPEED);
    assert_eq!(reduce(&mut s, key('g')), vec![Control::Start]);
    assert_eq!(reduce(&mut s, key('G')), vec![Control::End]);
}

#[test]
fn story_steps_seek_and_select() {
    let evs = fixture("ctr");
    let mut s = replay_state("ctr.log", &evs, 0, (80, 24));
    let c = reduce(&mut s, key(']'));
    let first = s.playback.full_stories[0].steps[0].clone();
    assert_eq!(c, vec![Control::Pause(true), Control::Seek(first.seq)]);
    assert!(s.view.show_story);
    // The source answers with the events up to that seq.
    let upto = evs
        .iter()
        .position(|e| e.seq > first.seq)
        .unwrap_or(evs.len());
    s.ingest(Msg::Events(evs[..upto].to_vec()));
    s.refresh();
    assert_eq!(s.selected_process().map(|p| p.pid), Some(first.pid));
    assert_eq!(s.log.cursor, Some(first.seq));
    let c = reduce(&mut s, key(']'));
    assert!(matches!(c.last(), Some(Control::Seek(q)) if *q > first.seq));
    assert_eq!(
        reduce(&mut s, key('[')),
        vec![],
        "nothing before the first step"
    );
    // Enter on a step (story pane) jumps to it.
    s.story.cursor = 3;
    let c = reduce(&mut s, Action::Enter);
    let st = &s.playback.full_stories[0].steps[3];
    assert_eq!(c, vec![Control::Pause(true), Control::Seek(st.seq)]);
}

#[test]
fn live_pause_keeps_recording_and_stepping_is_replay_only() {
    let evs = fixture("runc");
    let mut s = AppState::new_live("all");
    s.ingest(Msg::Events(evs[..50].to_vec()));
    assert_eq!(reduce(&mut s, key(' ')), vec![Control::Pause(true)]);
    s.ingest(Msg::Events(evs[50..].to_vec()));
    assert_eq!(s.stats.events, 50, "paused view");
    assert_eq!(s.capture.pending.len(), evs.len() - 50);
    reduce(&mut s, key(' '));
    assert_eq!(s.stats.events, evs.len() as u64);
    assert!(s.capture.pending.is_empty());
    assert_eq!(reduce(&mut s, key('.')), vec![]);
    assert!(s.status.message.is_some());
    // g/G move the selection in live mode.
    s.refresh();
    reduce(&mut s, key('G'));
    assert_eq!(s.tree.cursor, s.tree.rows.len() - 1);
    reduce(&mut s, key('g'));
    assert_eq!(s.tree.cursor, 0);
    assert_eq!(s.mode, Mode::Live);
}

#[test]
fn log_pane_scrolls_and_filters() {
    let mut s = at_end("ctr", (80, 24));
    let total = s.log.visible().len();
    reduce(&mut s, Action::NextPane);
    assert_eq!(s.view.pane, Pane::Log);
    reduce(&mut s, Action::Up);
    assert!(s.log.cursor.is_some());
    reduce(&mut s, Action::Back);
    assert_eq!(s.log.cursor, None);
    reduce(&mut s, Action::NextPane);
    select_pid(&mut s, 15941);
    reduce(&mut s, key('f'));
    let sub = s.log.visible().len();
    assert!(sub > 0 && sub < total);
    assert!(s.log.visible().iter().all(|l| l.tgid == 15941));
}

// ---- rewind and the source ----

fn tree_of(s: &AppState) -> String {
    tree_text(&s.engine, TreeOpts::default())
}

/// `Msg::Goto(n)` leaves the engine and counts a straight replay of the first `n` events does.
fn goto_matches_replay(s: &mut AppState, evs: &[Event], n: usize) {
    s.ingest(Msg::Goto(n));
    assert_eq!(s.position(), n);
    let want = match n {
        0 => Engine::new(),
        n => replay_until(evs, evs[n - 1].seq),
    };
    assert_eq!(tree_of(s), tree_text(&want, TreeOpts::default()), "at {n}");
    assert_eq!(s.stats.events, n as u64, "at {n}");
}

#[test]
fn rewind_matches_replay_until() {
    // Big enough to cross several snapshots.
    let evs = crate::synth::fork_tree(6_000);
    let mut s = replay_state("synth", &evs, evs.len(), (80, 24));
    for n in [evs.len() - 1, 9_000, 4_097, 4_096, 100, 1, 0] {
        goto_matches_replay(&mut s, &evs, n);
    }
    // And forward again.
    s.ingest(Msg::Events(evs.clone()));
    assert_eq!(s.position(), evs.len());

    let evs = fixture("podman");
    let mut s = replay_state("podman.log", &evs, evs.len(), (80, 24));
    let log_full: Vec<String> = s.log.lines.iter().map(|l| l.text.clone()).collect();
    s.ingest(Msg::Goto(10));
    s.ingest(Msg::Events(evs[10..].to_vec()));
    let log_again: Vec<String> = s.log.lines.iter().map(|l| l.text.clone()).collect();
    assert_eq!(log_full, log_again, "the log is rebuilt identically");
}

#[test]
fn stepping_back_a_big_replay_keeps_snapshots_and_the_log_within_bounds() {
    let evs = crate::synth::fork_tree(30_000);
    assert!(evs.len() > LOG_CAP * 3);
    let mut s = AppState::new_replay("synth");
    s.playback.max_snapshots = 4;
    s.ingest(Msg::Init {
        total: evs.len(),
        stories: Vec::new(),
    });
    s.ingest(Msg::Events(evs.clone()));
    let held = s.playback.snapshots.len();
    assert!((2..=4).contains(&held), "{held} snapshots kept");
    assert_eq!(s.log.lines.len(), LOG_CAP);
    for n in [evs.len() - 1, evs.len() / 2, LOG_CAP + 7, 10] {
        s.ingest(Msg::Goto(n));
        let want = replay_until(&evs, evs[n - 1].seq);
        assert_eq!(tree_of(&s), tree_text(&want, TreeOpts::default()), "at {n}");
        // The log is what a straight replay to n would show in its last LOG_CAP lines.
        let straight = replay_state("synth", &evs, n, (80, 24));
        let log = |s: &AppState| {
            s.log
                .lines
                .iter()
                .map(|l| l.text.clone())
                .collect::<Vec<_>>()
        };
        let (got, want) = (log(&s), log(&straight));
        if let Some(i) = (0..got.len().min(want.len())).find(|&i| got[i] != want[i]) {
            panic!("log at {n}, line {i}: {:?} != {:?}", got[i], want[i]);
        }
        assert_eq!(got.len(), want.len(), "log at {n}");
    }
}

#[test]
fn seeks_from_snapshots_match_a_full_replay_at_and_around_every_snapshot() {
    let evs = crate::synth::fork_tree(20_000);
    let mut s = AppState::new_replay("synth");
    s.ingest(Msg::Init {
        total: evs.len(),
        stories: Vec::new(),
    });
    s.ingest(Msg::Events(evs.clone()));
    let marks: Vec<usize> = s.playback.snapshots.iter().map(|x| x.index).collect();
    assert!(marks.len() >= 3, "snapshots at {marks:?}");
    let (a, b, end) = (marks[1], marks[2], evs.len());
    // Back, then forward past a snapshot (restored from it), around each snapshot, and back
    // to the end the app holds.
    let order = [0, b + 1, a - 1, end - 1, 1, a, b, a + 1, b - 1, end, 2];
    for n in order {
        goto_matches_replay(&mut s, &evs, n);
    }
}

/// How long the replay source may take to answer before the test fails: generous (a loaded
/// machine is slow, not wrong); every wait ends as soon as the answer comes.
const CEILING: std::time::Duration = std::time::Duration::from_secs(60);

async fn recv_any(rx: &mut tokio::sync::mpsc::Receiver<Msg>) -> Msg {
    tokio::time::timeout(CEILING, rx.recv())
        .await
        .expect("source answered")
        .expect("source alive")
}

/// The source's next message but the search's index.
async fn recv_events(rx: &mut tokio::sync::mpsc::Receiver<Msg>) -> Msg {
    loop {
        match recv_any(rx).await {
            Msg::Index(_) => continue,
            m => return m,
        }
    }
}

#[tokio::test]
async fn replay_source_obeys_controls() {
    let evs = fixture("runc");
    let total = evs.len();
    let (tx, mut rx) = tokio::sync::mpsc::channel(8);
    let (ctl, ctl_rx) = tokio::sync::mpsc::channel(8);
    let opts = ReplayOpts {
        paused: true,
        ..ReplayOpts::default()
    };
    let task = tokio::spawn(replay(
        evs.iter().cloned().collect(),
        Vec::new(),
        opts,
        None,
        tx,
        ctl_rx,
        None,
    ));
    let mut s = AppState::new_replay("runc.log");
    s.ingest(recv_events(&mut rx).await);
    assert_eq!(s.playback.total, total);
    assert!(!s.playback.full_stories.is_empty());

    ctl.send(Control::Step(1)).await.unwrap();
    s.ingest(recv_events(&mut rx).await);
    assert_eq!(s.position(), 1);
    ctl.send(Control::Step(1)).await.unwrap();
    s.ingest(recv_events(&mut rx).await);
    ctl.send(Control::Step(-1)).await.unwrap();
    let m = recv_events(&mut rx).await;
    assert!(matches!(m, Msg::Goto(1)));
    s.ingest(m);
    assert_eq!(s.position(), 1);
    // Ahead of what the app holds: to the last event it holds, then the events after.
    ctl.send(Control::Seek(evs[99].seq)).await.unwrap();
    let m = recv_events(&mut rx).await;
    assert!(matches!(m, Msg::Goto(2)));
    s.ingest(m);
    s.ingest(recv_events(&mut rx).await);
    assert_eq!(s.position(), 100);
    ctl.send(Control::End).await.unwrap();
    while s.position() < total {
        s.ingest(recv_events(&mut rx).await);
    }
    ctl.send(Control::Start).await.unwrap();
    s.ingest(recv_events(&mut rx).await);
    assert_eq!(s.position(), 0);
    // Back to the end, within what the app holds: one message.
    ctl.send(Control::End).await.unwrap();
    let m = recv_events(&mut rx).await;
    assert!(matches!(m, Msg::Goto(n) if n == total));
    s.ingest(m);
    assert_eq!(s.position(), total);
    ctl.send(Control::Start).await.unwrap();
    s.ingest(recv_events(&mut rx).await);

    // Playing fast reaches the end by itself.
    ctl.send(Control::Speed(4096.0)).await.unwrap();
    ctl.send(Control::Pause(false)).await.unwrap();
    while s.position() < total {
        s.ingest(recv_events(&mut rx).await);
    }
    assert_eq!(s.position(), total);
    drop(ctl);
    tokio::time::timeout(CEILING, task)
        .await
        .expect("source ends when the app is gone")
        .expect("no panic");
}

#[test]
fn live_drops_exited_processes_after_a_while() {
    let mut evs = crate::synth::fork_tree(20);
    let exited: Vec<u32> = (3..20).step_by(3).map(|i| 1000 + i).collect();
    let mut late = evs[0].clone();
    late.seq = evs.len() as u64 + 1;
    late.ts_ns += 2 * super::state::EXITED_KEEP_NS;
    evs.push(late);
    let pids = |s: &AppState| -> Vec<u32> {
        s.tree
            .rows
            .iter()
            .filter_map(|r| s.engine.get(r.kind.proc()).map(|p| p.pid))
            .collect()
    };
    let mut live = AppState::new_live("all");
    live.ingest(Msg::Events(evs[..evs.len() - 1].to_vec()));
    live.refresh();
    assert!(
        exited.iter().all(|p| pids(&live).contains(p)),
        "recent exits shown"
    );
    live.ingest(Msg::Events(vec![evs[evs.len() - 1].clone()]));
    live.refresh();
    let shown = pids(&live);
    assert!(exited.iter().all(|p| !shown.contains(p)), "{shown:?}");
    // Their orphans were adopted and still run.
    assert!(shown.contains(&1013), "{shown:?}");
    // Replay keeps them all.
    let n = evs.len();
    let s = replay_state("synth", &evs, n, (80, 24));
    assert!(exited.iter().all(|p| pids(&s).contains(p)));
}

#[test]
fn hostile_names_and_argv_are_escaped_on_screen() {
    use crate::event::{CapturedStr, EventKind, Syscall};
    let hostile = "\x1b]0;PWNED\x07";
    let evs = vec![
        Event::bare(
            1,
            1000,
            7,
            7,
            "sh",
            EventKind::ExecEnter {
                syscall: Syscall::Execve,
                dirfd: -100,
                at_flags: 0,
                filename: CapturedStr {
                    value: "/bin/x\x1b[2J".into(),
                    truncated: false,
                },
                argv: vec![format!("x{hostile}")],
                argv_truncated: false,
            },
        ),
        Event::bare(
            2,
            2000,
            7,
            7,
            hostile,
            EventKind::Exec {
                cred: None,
                old_tid: 7,
                filename: CapturedStr {
                    value: "/bin/x\x1b[2J".into(),
                    truncated: false,
                },
            },
        ),
    ];
    let mut s = replay_state("hostile", &evs, 2, (120, 30));
    let text = screen(&mut s);
    assert!(text.contains("\\33]0;PWNED\\7"), "{text}");
    assert!(!text.contains('\x1b') && !text.contains('\x07'), "{text}");
}

// ---- training: explanations, guided replay, zoom, horizontal scroll ----

/// A guided replay as the source opens it: paused right after the first story step.
async fn guided_state(name: &str, size: (u16, u16)) -> (AppState, Vec<Event>) {
    let evs = fixture(name);
    let (tx, mut rx) = tokio::sync::mpsc::channel(8);
    let (_ctl, ctl_rx) = tokio::sync::mpsc::channel(8);
    let opts = ReplayOpts {
        guided: true,
        ..ReplayOpts::default()
    };
    let task = tokio::spawn(replay(
        evs.iter().cloned().collect(),
        Vec::new(),
        opts,
        None,
        tx,
        ctl_rx,
        None,
    ));
    let mut s = AppState::new_replay(format!("{name}.log"));
    s.view.size = size;
    s.guide();
    s.ingest(recv_events(&mut rx).await); // Init
    let index = recv_any(&mut rx).await;
    assert!(matches!(index, Msg::Index(_)), "the search's index follows");
    s.ingest(index);
    s.ingest(recv_events(&mut rx).await); // up to the first step
                                          // Paused: nothing more comes.
    let more = tokio::time::timeout(std::time::Duration::from_millis(300), rx.recv()).await;
    assert!(more.is_err(), "a guided replay starts paused");
    task.abort();
    s.set_now(60_000);
    s.refresh();
    (s, evs)
}

#[tokio::test]
async fn guided_replay_opens_at_the_first_step_with_its_explanation() {
    let (mut s, evs) = guided_state("ctr", (120, 40)).await;
    let first = s
        .playback
        .full_stories
        .iter()
        .flat_map(|st| &st.steps)
        .min_by_key(|st| st.seq)
        .cloned()
        .expect("a step");
    // The tree is the one at that moment: every event up to the step, none after.
    assert_eq!(s.last_seq(), Some(first.seq));
    assert!(s.engine.process(first.pid).is_some());
    assert!(evs.iter().any(|e| e.seq > first.seq));
    assert_eq!(s.story.current_step().map(|st| st.seq), Some(first.seq));
    assert_eq!(s.selected_process().map(|p| p.pid), Some(first.pid));
    assert_eq!(
        s.log.cursor,
        Some(first.seq),
        "the log shows the step's event"
    );
    let text = screen(&mut s);
    let why = {
        let (story, step) = s.story.current().expect("a step");
        assert_eq!(step, &first);
        crate::lineage::explain::why(story, step).text
    };
    let first_words: String = why.split_whitespace().take(4).collect::<Vec<_>>().join(" ");
    assert!(text.contains(&first_words), "{text}");
    insta::assert_snapshot!("guided_first_step_120x40", text);

    // `]` seeks to the next step; the explanation follows it.
    let c = reduce(&mut s, key(']'));
    let Some(Control::Seek(next)) = c.last().cloned() else {
        panic!("{c:?}")
    };
    assert!(next > first.seq);
    let upto = evs.iter().position(|e| e.seq > next).unwrap_or(evs.len());
    s.ingest(Msg::Events(evs[s.position()..upto].to_vec()));
    s.refresh();
    let step = s.story.current_step().cloned().expect("a step");
    assert_eq!(step.seq, next);
    assert_eq!(s.selected_process().map(|p| p.pid), Some(step.pid));
    insta::assert_snapshot!("guided_second_step_120x40", screen(&mut s));
}

#[tokio::test]
async fn guided_steps_visit_every_step_of_the_story_even_at_the_same_seq() {
    let (mut s, evs) = guided_state("ctr", (120, 40)).await;
    let all: Vec<u64> = s.playback.full_stories[0]
        .steps
        .iter()
        .map(|st| st.seq)
        .collect();
    // What the replay source does with a seek.
    let press = |s: &mut AppState, c: char| {
        for c in reduce(s, key(c)) {
            if let Control::Seek(q) = c {
                let n = evs.iter().position(|e| e.seq > q).unwrap_or(evs.len());
                if n >= s.position() {
                    s.ingest(Msg::Events(evs[s.position()..n].to_vec()));
                } else {
                    s.ingest(Msg::Goto(n));
                }
            }
        }
        s.refresh();
        s.story.current_step().expect("a step").seq
    };
    let mut seen = vec![s.story.current_step().expect("a step").seq];
    for _ in 1..all.len() {
        seen.push(press(&mut s, ']'));
    }
    assert_eq!(seen, all, "every step once, in order");
    assert!(
        all.windows(2).any(|w| w[0] == w[1]),
        "the fixture has steps sharing a seq"
    );
    let mut back = vec![seen.pop().unwrap()];
    for _ in 1..all.len() {
        back.push(press(&mut s, '['));
    }
    back.reverse();
    assert_eq!(back, all, "and back, every step once");
    assert_eq!(s.story.cursor, 0);
}

#[test]
fn explain_pane_toggles_with_e() {
    let mut s = at_end("ctr", (100, 30));
    keys(&mut s, &[key('s')]);
    let plain = screen(&mut s);
    keys(&mut s, &[key('e')]);
    assert!(s.view.show_explain);
    let explained = screen(&mut s);
    assert!(explained.contains("── why:"), "{explained}");
    assert!(!plain.contains("── why:"));
    insta::assert_snapshot!("explain_pane_100x30", explained);
    keys(&mut s, &[key('e')]);
    assert_eq!(screen(&mut s), plain, "e again hides it");
}

#[test]
fn zoom_gives_the_story_pane_the_screen() {
    let mut s = at_end("ctr", (80, 24));
    keys(&mut s, &[key('s'), key('e'), key('z')]);
    let text = screen(&mut s);
    // No other pane, and whole step lines.
    assert!(!text.contains("events "), "{text}");
    assert!(!text.contains("processes "), "{text}");
    // Every step shown is whole (wrapped lines joined back).
    let words = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
    let joined = words(
        &text
            .lines()
            .map(|l| l.trim_matches('"'))
            .collect::<Vec<_>>()
            .join(" "),
    );
    let steps: Vec<_> = s
        .story
        .stories
        .iter()
        .flat_map(|st| st.steps.clone())
        .collect();
    let last = steps.last().expect("steps");
    assert!(joined.contains(&words(&last.text)), "{text}");
    let long = steps
        .iter()
        .find(|st| st.text.len() > 70)
        .expect("a long step");
    keys(&mut s, &vec![Action::Up; steps.len()]);
    let top = screen(&mut s);
    let joined_top = words(
        &top.lines()
            .map(|l| l.trim_matches('"'))
            .collect::<Vec<_>>()
            .join(" "),
    );
    assert!(joined_top.contains(&words(&long.text)), "{top}");
    keys(&mut s, &vec![Action::Down; steps.len()]);
    insta::assert_snapshot!("zoomed_story_80x24", text);
    keys(&mut s, &[key('z')]);
    assert!(screen(&mut s).contains(" log (all)"));
}

#[test]
fn long_tree_rows_scroll_instead_of_being_cut() {
    let mut s = at_end("ctr", (60, 24));
    keys(&mut s, &[key('z')]);
    let before = screen(&mut s);
    // The label's tail is off screen before scrolling and on screen after.
    let shim = s.engine.process(15921).expect("shim");
    let label = crate::lineage::node_label(shim, crate::lineage::TreeOpts::default());
    let tail: String = label
        .chars()
        .rev()
        .take(12)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    assert!(!before.contains(&tail), "{before}");
    keys(&mut s, &vec![key('>'); 8]);
    let after = screen(&mut s);
    assert!(after.contains("◂ col"), "{after}");
    assert!(after.contains(&tail), "{after}");
    insta::assert_snapshot!("tree_scrolled_60x24", after);
    keys(&mut s, &vec![key('<'); 8]);
    assert_eq!(screen(&mut s), before);
}

// ---- pods ----

/// A shim (pid 100) running two `runc create`s of one pod, each followed by the metadata its
/// bundle gave: the sandbox `sb1` and the container `c1` (`nginx`), both of pod shop/web-7d9f.
fn pod_events() -> Vec<Event> {
    use crate::event::{CapturedStr, CloneFlags, EventKind, Syscall};
    let mut evs = Vec::new();
    let mut push = |pid: u32, comm: &str, kind: EventKind| {
        let seq = evs.len() as u64 + 1;
        evs.push(Event::bare(seq, seq * 1000, pid, pid, comm, kind));
    };
    let ann = |extra: &[(&str, &str)]| {
        let mut a: std::collections::BTreeMap<String, String> = [
            ("io.kubernetes.cri.sandbox-name", "web-7d9f"),
            ("io.kubernetes.cri.sandbox-namespace", "shop"),
            ("io.kubernetes.cri.sandbox-uid", "u-42"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        a.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        a
    };
    for (runc, init, cid, extra, workload) in [
        (
            110,
            111,
            "sb1",
            vec![("io.kubernetes.cri.container-type", "sandbox")],
            "/pause",
        ),
        (
            120,
            121,
            "c1",
            vec![
                ("io.kubernetes.cri.container-type", "container"),
                ("io.kubernetes.cri.container-name", "nginx"),
            ],
            "/nginx",
        ),
    ] {
        let fork = |child| EventKind::Fork {
            child_tid: child,
            child_tgid: child,
            child_ppid: 0,
            syscall: Some(Syscall::Clone),
            flags: Some(CloneFlags(0)),
            child_ns: None,
        };
        push(100, "containerd-shim", fork(runc));
        let argv: Vec<String> = ["runc", "create", "--bundle", "/b", cid]
            .iter()
            .map(|s| s.to_string())
            .collect();
        push(
            runc,
            "containerd-shim",
            EventKind::ExecEnter {
                syscall: Syscall::Execve,
                dirfd: -100,
                at_flags: 0,
                filename: CapturedStr::new("/usr/sbin/runc"),
                argv,
                argv_truncated: false,
            },
        );
        push(
            runc,
            "runc",
            EventKind::Exec {
                cred: None,
                old_tid: runc,
                filename: CapturedStr::new("/usr/sbin/runc"),
            },
        );
        push(
            runc,
            "runc",
            EventKind::ContainerMeta {
                pid: runc,
                container_id: cid.into(),
                annotations: ann(&extra),
            },
        );
        push(runc, "runc", fork(init));
        push(
            init,
            &workload[1..],
            EventKind::Exec {
                cred: None,
                old_tid: init,
                filename: CapturedStr::new(workload),
            },
        );
    }
    // Metadata takes no seq of its own: it repeats the exec's.
    let mut seq = 0;
    for ev in evs.iter_mut() {
        if !ev.kind.is_metadata() {
            seq += 1;
        }
        ev.seq = seq;
    }
    evs
}

#[test]
fn pod_view_groups_pods_containers_and_processes() {
    let mut evs = pod_events();
    // The sandbox's runc exits, as runc create does once its init waits.
    let seq = evs.last().map_or(0, |e| e.seq) + 1;
    let exit = crate::event::EventKind::TaskExit {
        exit_code: 0,
        group_dead: true,
    };
    evs.push(Event::bare(seq, seq * 1000, 110, 110, "runc", exit));
    let mut s = replay_state("pods", &evs, evs.len(), (100, 24));
    let tree = screen(&mut s);
    assert!(tree.contains("<pod shop/web-7d9f · nginx>"), "{tree}");
    keys(&mut s, &[key('p')]);
    let text = screen(&mut s);
    let rows: Vec<&str> = text
        .lines()
        .map(|l| l.trim_matches('"').trim_end())
        .collect();
    let pos = |needle: &str| {
        rows.iter()
            .position(|r| r.contains(needle))
            .unwrap_or_else(|| panic!("no {needle:?} in\n{text}"))
    };
    // pod → sandbox (runc 110, init 111) → container nginx (runc 120, init 121).
    let order = [
        pos("pod shop/web-7d9f (uid u-42)"),
        pos("sandbox {cid:sb1}"),
        pos("110 runc"),
        pos("111 pause"),
        pos("container nginx {cid:c1}"),
        pos("120 runc"),
        pos("121 nginx"),
    ];
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}\n{text}");
    assert!(
        !text.contains("100 containerd-shim"),
        "outside the pod: {text}"
    );
    // The lineage keeps its shape: the init under the runc that cloned it.
    let indent = |i: usize| rows[i].find(|c: char| c.is_ascii_digit()).unwrap_or(0);
    assert!(indent(pos("121 nginx")) > indent(pos("120 runc")), "{text}");
    // The pod is named once in the tree, on its row; the exit status shows.
    let tree = &rows[..pos(" process ")];
    let named = tree.iter().filter(|r| r.contains("web-7d9f")).count();
    assert_eq!(named, 1, "{text}");
    assert!(rows[pos("110 runc")].contains("(exit 0)"), "{text}");
    insta::assert_snapshot!("pods_100x24", text);
    keys(&mut s, &[key('p')]);
    assert!(screen(&mut s).contains("100 containerd-shim"));
}

/// The values of the `snapshot` key in the header of the trace file at `path`, as read back.
fn snapshot_key(path: &std::path::Path) -> Vec<String> {
    let input = crate::Input::open(path).expect("readable");
    let header = input.header().expect("a trace file's header");
    header
        .extra
        .iter()
        .filter(|(k, _)| k == "snapshot")
        .map(|(_, v)| v.clone())
        .collect()
}

#[test]
fn w_writes_the_live_window_to_a_new_private_trace_file() {
    use std::os::unix::fs::PermissionsExt;
    let evs = fixture("runc");
    let mut s = AppState::new_live("pid 15126");
    s.ingest(Msg::Events(evs.clone()));
    reduce(&mut s, Action::SaveWindow);
    assert!(s.capture.save_requested);
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("w.trace");
    let n = super::save::write_window(&s, &path).expect("written");
    assert_eq!(n as usize, evs.len());
    let mode = std::fs::metadata(&path).expect("file").permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    // The file reads back into the same tree as the events themselves.
    let mut input = crate::Input::open(&path).expect("readable");
    let mut back = crate::Engine::new();
    back.seed_snapshot(&input.snapshot());
    while let Some(ev) = input.next_event() {
        back.apply(&ev.expect("event"));
    }
    let mut truth = crate::Engine::new();
    evs.iter().for_each(|ev| truth.apply(ev));
    let text = |e: &crate::Engine| crate::lineage::tree_text(e, Default::default());
    assert_eq!(text(&back), text(&truth));
    assert_eq!(snapshot_key(&path), ["followed"]);
    // Never over an existing file.
    assert!(super::save::write_window(&s, &path).is_err());
    // A view of every process (`--all`) was seeded from the whole host: the header says so.
    s.capture.seed_scope = crate::tracefile::SnapshotScope::All;
    let all = dir.path().join("all.trace");
    super::save::write_window(&s, &all).expect("written");
    assert_eq!(snapshot_key(&all), ["all"]);
    // Recording already: nothing to save.
    s.capture.save_requested = false;
    s.status.recording = Some("r.trace".into());
    reduce(&mut s, Action::SaveWindow);
    assert!(!s.capture.save_requested);
}

#[tokio::test]
async fn a_followed_replay_plays_what_is_published_after_it_opened() {
    use crate::input::TailItem;
    let evs = fixture("runc");
    let (head, rest) = evs.split_at(evs.len() / 3);
    let (tx, mut rx) = tokio::sync::mpsc::channel(8);
    let (_ctl, ctl_rx) = tokio::sync::mpsc::channel(8);
    let (tail, tail_rx) = tokio::sync::mpsc::channel(evs.len() + 2);
    let opts = ReplayOpts {
        at_end: true,
        speed: 4096.0,
        ..ReplayOpts::default()
    };
    let task = tokio::spawn(replay(
        head.iter().cloned().collect(),
        Vec::new(),
        opts,
        None,
        tx,
        ctl_rx,
        Some(tail_rx),
    ));
    let mut s = AppState::new_replay("nats://x/n1");
    while s.position() < head.len() {
        s.ingest(recv_events(&mut rx).await);
    }
    assert_eq!(s.playback.total, head.len());
    tail.send(TailItem::CaughtUp).await.unwrap();
    for ev in rest {
        tail.send(TailItem::Event(ev.clone())).await.unwrap();
    }
    // Waiting at the end, the new events play by themselves and the stories grow with them.
    while s.position() < evs.len() {
        s.ingest(recv_events(&mut rx).await);
    }
    assert_eq!(s.playback.total, evs.len());
    assert_eq!(s.playback.full_stories, stories_of(&evs));
    assert_ne!(
        s.playback.full_stories,
        stories_of(head),
        "the stories grew"
    );
    drop(tail);
    let end = recv_events(&mut rx).await;
    assert!(
        matches!(&end, Msg::Note(n) if n.contains("ended")),
        "{end:?}"
    );
    drop(rx);
    task.abort();
}

/// The processes the tree pane has a row for.
fn shown_processes(s: &AppState) -> std::collections::HashSet<crate::lineage::ProcId> {
    s.tree
        .rows
        .iter()
        .filter_map(|r| match r.kind {
            RowKind::Proc(id) => Some(id),
            _ => None,
        })
        .collect()
}

/// The story pane lists stories, all of container `name` (as the stories name it).
fn only_stories_of(s: &AppState, name: &str) {
    assert!(!s.story.stories.is_empty());
    assert!(s
        .story
        .stories
        .iter()
        .all(|st| st.container_name.as_deref() == Some(name)));
}

#[test]
fn a_view_scoped_to_a_pod_shows_its_processes_and_stories_only() {
    let mut input = crate::demo::open().unwrap();
    let seed = input.snapshot();
    let evs: Vec<Event> = input.by_ref().collect::<Result<_, _>>().unwrap();
    let mut s = AppState::new_replay("pod.trace");
    s.pod = Some(crate::lineage::PodScope::Typed(crate::lineage::PodQuery {
        pod: "shared".into(),
        ..Default::default()
    }));
    s.seed(&seed);
    let mut e = Engine::new();
    e.seed_snapshot(&seed);
    evs.iter().for_each(|ev| e.apply(ev));
    s.ingest(Msg::Init {
        total: evs.len(),
        stories: crate::lineage::stories(&e),
    });
    s.ingest(Msg::Events(evs.clone()));
    s.refresh();
    let scope = crate::lineage::pod_scope(&e, "shared");
    let shown = shown_processes(&s);
    assert!(!shown.is_empty());
    assert!(shown.iter().all(|id| scope.contains(id)));
    let in_pod: Vec<_> = e
        .processes()
        .filter(|p| crate::lineage::in_pod(p, "shared"))
        .collect();
    assert!(!in_pod.is_empty());
    assert!(
        in_pod.iter().all(|p| shown.contains(&p.id)),
        "every pod process shown"
    );
    assert!(!s.playback.full_stories.is_empty());
    assert!(s
        .playback
        .full_stories
        .iter()
        .all(|st| crate::lineage::story_in_pod(st, "shared")));
}

#[test]
fn a_guided_view_scoped_to_a_container_opens_at_its_first_step() {
    let mut input = crate::demo::Demo::Pod.open().expect("demo");
    let seed = input.snapshot();
    let events: crate::tracefile::PackedEvents =
        input.by_ref().collect::<Result<_, _>>().expect("events");
    let mut e = Engine::seeded(&seed);
    events.iter().for_each(|ev| e.apply(&ev));
    let q = crate::lineage::PodQuery {
        pod: "web".into(),
        namespace: None,
        container: Some("sidecar".into()),
    };
    let scope = crate::lineage::PodScope::Found(crate::lineage::resolve_pod(&e, &q).unwrap());
    // The truth from the stories' own container names, not the matcher.
    let first = crate::lineage::stories(&e)
        .iter()
        .filter(|st| st.container_name.as_deref() == Some("sidecar"))
        .flat_map(|st| st.steps.iter().map(|step| step.seq))
        .min()
        .expect("sidecar steps");
    let all_first = crate::lineage::stories(&e)
        .iter()
        .flat_map(|st| st.steps.iter().map(|step| step.seq))
        .min();
    assert!(
        all_first < Some(first),
        "the demo's first step is another's"
    );
    let opts = guided();
    let mut s = super::replay_state("demo".into(), Some(scope.clone()), &seed, &opts);
    for m in super::source::opening(events, &seed, &opts, Some(&scope)) {
        s.ingest(m);
    }
    s.refresh();
    assert_eq!(s.last_seq(), Some(first));
    only_stories_of(&s, "sidecar");
}

#[test]
fn a_live_view_waiting_for_a_container_shows_it_once_it_appears() {
    use crate::lineage::Process;
    let mut input = crate::demo::Demo::Pod.open().expect("demo");
    let seed = input.snapshot();
    let evs: Vec<Event> = input.by_ref().collect::<Result<_, _>>().expect("events");
    let mut s = AppState::new_live("all");
    s.pod = Some(crate::lineage::PodScope::Typed(crate::lineage::PodQuery {
        pod: "tracer-lab/web".into(),
        namespace: None,
        container: Some("sidecar".into()),
    }));
    s.seed(&seed);
    let container = |p: &Process| p.k8s.as_ref().and_then(|k| k.container_name.clone());
    // Until a process of the container is known, nothing: the pod's sandbox is not it.
    let first = evs
        .iter()
        .position(|ev| {
            matches!(&ev.kind, EventKind::ContainerMeta { .. }) && {
                let mut e = Engine::seeded(&seed);
                evs.iter()
                    .take_while(|x| x.seq <= ev.seq)
                    .for_each(|x| e.apply(x));
                let found = e
                    .processes()
                    .any(|p| container(p).as_deref() == Some("sidecar"));
                found
            }
        })
        .expect("the sidecar's bundle");
    s.ingest(Msg::Events(evs[..first].to_vec()));
    s.refresh();
    assert!(shown_processes(&s).is_empty());
    s.ingest(Msg::Events(evs[first..].to_vec()));
    s.refresh();
    let rows = shown_processes(&s);
    let of = |name: &str| -> Vec<crate::lineage::ProcId> {
        s.engine
            .processes()
            .filter(|p| container(p).as_deref() == Some(name))
            .map(|p| p.id)
            .collect()
    };
    assert!(!of("sidecar").is_empty() && !of("master").is_empty());
    assert!(of("sidecar").iter().all(|id| rows.contains(id)), "{rows:?}");
    assert!(!of("master").iter().any(|id| rows.contains(id)), "{rows:?}");
    only_stories_of(&s, "sidecar");
}

/// A recorder that keeps what it is given, for the live-source tests.
#[derive(Clone, Default)]
struct Kept(std::sync::Arc<std::sync::Mutex<(Vec<Event>, Option<u64>)>>);

impl super::Recorder for Kept {
    fn record(&mut self, batch: &[Event]) -> std::io::Result<()> {
        self.0.lock().unwrap().0.extend_from_slice(batch);
        Ok(())
    }
    fn finish(&mut self, c: crate::source::Counters) -> std::io::Result<()> {
        self.0.lock().unwrap().1 = Some(c.drops);
        Ok(())
    }
}

/// containerd (pid 100) starting a shim that runs a container's sleep, three events lost on
/// the way, then everything exiting.
fn shim_script() -> crate::source::Script {
    use crate::source::{Script, Scripted};
    use crate::synth::{exec, exit, fork, process};
    let host = vec![process(1, 0, "init"), process(100, 1, "containerd")];
    Script::new(Some(100), host)
        .then(Scripted::Events(vec![
            fork(100, 101),
            exec(101, "/usr/bin/containerd-shim-runc-v2"),
        ]))
        .then(Scripted::Drop(3))
        .then(Scripted::Events(vec![
            fork(101, 102),
            exec(102, "/bin/sleep"),
        ]))
        .then(Scripted::Wait(std::time::Duration::from_millis(300)))
        .then(Scripted::Events(vec![
            exit(102, 0),
            exit(101, 0),
            exit(100, 0),
        ]))
}

#[tokio::test]
async fn the_live_view_of_a_synthetic_source_shows_births_drops_and_the_end_of_its_target() {
    let kept = Kept::default();
    // A one-message channel and an app that reads late: the source coalesces, never waits.
    let (tx, mut rx) = tokio::sync::mpsc::channel(1);
    let task = tokio::spawn(super::source::live(
        shim_script(),
        tx,
        Some(Box::new(kept.clone())),
    ));
    let mut s = AppState::new_live("pid 100");
    s.view.size = (100, 30);
    tokio::time::sleep(std::time::Duration::from_millis(150)).await;
    let mut seen_before_exit = None;
    while let Some(m) = tokio::time::timeout(std::time::Duration::from_secs(10), rx.recv())
        .await
        .expect("the live source never ended")
    {
        if matches!(m, Msg::TargetExited) {
            seen_before_exit = Some(s.stats.events);
        }
        s.ingest(m);
    }
    task.await.unwrap();
    // The seed (containerd and its ancestor) and all seven events, then the target's end.
    assert_eq!(seen_before_exit, Some(7), "the end came before the events");
    assert!(s.status.target_exited);
    assert_eq!(s.status.drops, 3);
    assert_eq!(s.stats.gaps(), 3);
    let text = screen(&mut s);
    for shown in ["containerd", "containerd-shim", "sleep", "drops 3"] {
        assert!(text.contains(shown), "{shown} missing:\n{text}");
    }
    // The recorder got every event and the final drop count.
    let (recorded, drops) = kept.0.lock().unwrap().clone();
    assert_eq!(
        recorded.iter().map(|e| e.seq).collect::<Vec<_>>(),
        [1, 2, 6, 7, 8, 9, 10]
    );
    assert_eq!(drops, Some(3));
}

#[tokio::test]
async fn the_live_source_stops_when_the_viewer_quits() {
    use crate::source::{Script, Scripted};
    use crate::synth::{fork, process};
    // A target that never ends: only the viewer's quit (the receiver dropped) stops it.
    let script = Script::new(Some(100), vec![process(100, 1, "containerd")])
        .then(Scripted::Events(vec![fork(100, 101)]));
    let kept = Kept::default();
    let (tx, mut rx) = tokio::sync::mpsc::channel(4);
    let task = tokio::spawn(super::source::live(
        script,
        tx,
        Some(Box::new(kept.clone())),
    ));
    assert!(matches!(rx.recv().await, Some(Msg::Seed(_))));
    drop(rx);
    tokio::time::timeout(std::time::Duration::from_secs(5), task)
        .await
        .expect("the source outlived the viewer")
        .unwrap();
    assert_eq!(
        kept.0.lock().unwrap().1,
        Some(0),
        "the recording was not finished"
    );
}

// ---- teaching: the selected story, its layout, threads, the opening ----

/// A replay state on the bundled pod demo, opened as the viewer opens it.
fn demo_state(opts: &ReplayOpts, size: (u16, u16)) -> AppState {
    let mut input = crate::demo::Demo::Pod.open().expect("demo");
    let seed = input.snapshot();
    let events: crate::tracefile::PackedEvents =
        input.by_ref().collect::<Result<_, _>>().expect("events");
    let mut s = super::replay_state("demo".into(), None, &seed, opts);
    for m in super::source::opening(events, &seed, opts, None) {
        s.ingest(m);
    }
    s.view.size = size;
    s.set_now(60_000);
    s.refresh();
    s
}

fn guided() -> ReplayOpts {
    ReplayOpts {
        guided: true,
        ..ReplayOpts::default()
    }
}

/// What the replay source does with the seeks in `c`.
fn seek(s: &mut AppState, evs: &[Event], c: &[Control]) {
    for c in c {
        if let Control::Seek(q) = c {
            let n = evs.iter().position(|e| e.seq > *q).unwrap_or(evs.len());
            if n >= s.position() {
                s.ingest(Msg::Events(evs[s.position()..n].to_vec()));
            } else {
                s.ingest(Msg::Goto(n));
            }
        }
    }
    s.refresh();
}

#[tokio::test]
async fn brackets_step_through_the_story_selected_in_the_pane() {
    let (mut s, evs) = guided_state("ctr", (120, 40)).await;
    let lens: Vec<usize> = s.story.stories.iter().map(|st| st.steps.len()).collect();
    assert!(lens.len() >= 2 && lens[1] >= 2, "{lens:?}");
    // Select the second story's first step in the pane (no seek: the replay stays).
    let at = s.last_seq();
    while s.story.cursor < lens[0] {
        reduce(&mut s, Action::Down);
    }
    assert_eq!(s.last_seq(), at);
    let second = &s.story.stories[1].steps;
    let (first_seq, next_seq) = (second[0].seq, second[1].seq);
    // Ahead of the replay, `]` brings the replay to the selected step first...
    let c = reduce(&mut s, key(']'));
    assert_eq!(c.last(), Some(&Control::Seek(first_seq)), "{c:?}");
    assert_eq!(s.story.cursor, lens[0]);
    seek(&mut s, &evs, &c);
    assert_eq!(
        s.story.cursor, lens[0],
        "the replay's position does not move it"
    );
    // ... then to the next step of that story, wherever the other stories are (a step of
    // the same event needs no seek: a death's Terminated comes with the init's death).
    let c = reduce(&mut s, key(']'));
    let want = (next_seq != first_seq).then_some(Control::Seek(next_seq));
    assert_eq!(c.last(), want.as_ref(), "{c:?}");
    seek(&mut s, &evs, &c);
    assert_eq!(s.story.cursor, lens[0] + 1);
    // `[` back to its first step, then `[` again says so instead of leaving the story.
    let c = reduce(&mut s, key('['));
    let want = (next_seq != first_seq).then_some(Control::Seek(first_seq));
    assert_eq!(c.last(), want.as_ref(), "{c:?}");
    seek(&mut s, &evs, &c);
    let c = reduce(&mut s, key('['));
    assert!(!c.iter().any(|c| matches!(c, Control::Seek(_))), "{c:?}");
    assert_eq!(s.story.cursor, lens[0]);
    let msg = s.status.message.clone().unwrap_or_default();
    assert!(msg.contains("first step of this story"), "{msg}");
    // To its last step; one more `]` stays there and says so.
    for _ in 1..lens[1] {
        let c = reduce(&mut s, key(']'));
        seek(&mut s, &evs, &c);
    }
    assert_eq!(s.story.cursor, lens[0] + lens[1] - 1);
    let c = reduce(&mut s, key(']'));
    assert!(!c.iter().any(|c| matches!(c, Control::Seek(_))), "{c:?}");
    assert_eq!(s.story.cursor, lens[0] + lens[1] - 1, "no jump elsewhere");
    let msg = s.status.message.clone().unwrap_or_default();
    assert!(msg.contains("last step of this story"), "{msg}");
    // The first story's last step, though another story follows: `]` stays in it too.
    while s.story.cursor > lens[0] - 1 {
        reduce(&mut s, Action::Up);
    }
    let c = reduce(&mut s, key(']'));
    assert!(!c.iter().any(|c| matches!(c, Control::Seek(_))), "{c:?}");
    assert_eq!(s.story.cursor, lens[0] - 1, "no jump into the next story");
    let msg = s.status.message.clone().unwrap_or_default();
    assert!(msg.contains("last step of this story"), "{msg}");
    // The step's explanation is the one shown.
    let step = s.story.current_step().cloned().expect("step");
    let text = screen(&mut s);
    assert!(
        text.contains(&format!("why: {}", &step.text[..20])),
        "{text}"
    );
}

/// Where the story pane's box starts on a captured screen: the column of the corner before
/// its title.
fn story_box_col(text: &str) -> Option<usize> {
    text.lines().find_map(|l| {
        let l = l.trim_matches('"');
        let at = l.find(" guided · stories")?;
        Some(l[..at].chars().count().saturating_sub(1))
    })
}

#[tokio::test]
async fn the_guided_layout_gives_the_story_most_of_the_width_and_hides_the_log() {
    let (mut s, _) = guided_state("ctr", (160, 45)).await;
    let a = super::state::layout::layout(ratatui::layout::Rect::new(0, 0, 160, 45), &s);
    let story = a.story.expect("story pane");
    assert!(story.width * 100 >= 160 * 60, "{a:?}");
    assert!(a.log.is_empty(), "the log is hidden while guided: {a:?}");
    let text = screen(&mut s);
    let col = story_box_col(&text).unwrap_or_else(|| panic!("{text}"));
    assert!(
        (160 - col) * 100 >= 160 * 60,
        "story box at column {col}\n{text}"
    );
    assert!(!text.contains(" log ("), "{text}");
    // `L` brings the log back, and takes it away again.
    reduce(&mut s, key('L'));
    assert!(screen(&mut s).contains(" log (all)"));
    reduce(&mut s, key('L'));
    assert!(!screen(&mut s).contains(" log ("));
}

#[tokio::test]
async fn at_80x24_the_step_and_its_explanation_show_and_cut_text_says_more() {
    let (mut s, _) = guided_state("ctr", (80, 24)).await;
    let step = s.story.current_step().cloned().expect("step");
    let (story, _) = s.story.current().expect("a step");
    let story = story.clone();
    let why = crate::lineage::explain::why(&story, &step).text;
    let text = screen(&mut s);
    let start: String = why.split_whitespace().take(5).collect::<Vec<_>>().join(" ");
    assert!(text.contains(&start), "{text}");
    assert!(
        text.contains(&format!("why: {}", &step.text[..20])),
        "{text}"
    );
    // The steps go on below the pane: said.
    assert!(text.contains("more ↓"), "{text}");
    // Further down the story, its header stays on screen.
    let header = crate::lineage::view::story_header(&s.story.stories[0], true);
    keys(&mut s, &vec![Action::Down; 12]);
    let text = screen(&mut s);
    assert!(!text.contains(&format!("▸ {:>6}", step.seq)), "{text}");
    assert!(text.contains(&header), "{header}\n{text}");
    // A pane too short for the explanation: `more ↓ (m)`, and `m` shows the rest.
    let (mut s, _) = guided_state("ctr", (60, 18)).await;
    let text = screen(&mut s);
    assert!(text.contains("more ↓ (m)"), "{text}");
    let source = crate::lineage::explain::why(&story, &step).source;
    let tail: String = source.chars().take(12).collect();
    assert!(!text.contains(&tail), "{text}");
    let mut seen = false;
    for _ in 0..10 {
        reduce(&mut s, key('m'));
        seen |= screen(&mut s).contains(&tail);
    }
    assert!(seen, "m pages to the explanation's end");
}

#[test]
fn the_thread_key_hides_thread_lines_and_rows() {
    let mut s = at_end("ctr", (120, 40));
    let thread_lines = |s: &AppState| {
        s.log
            .visible()
            .iter()
            .filter(|l| l.text.contains("Thread ") || l.text.contains("+++ thread"))
            .count()
    };
    assert!(thread_lines(&s) > 0);
    let all = s.log.visible().len();
    reduce(&mut s, key('t'));
    let rows = |s: &AppState| {
        s.tree
            .rows
            .iter()
            .filter(|r| matches!(r.kind, RowKind::Thread { .. }))
            .count()
    };
    assert!(rows(&s) > 0);
    reduce(&mut s, key('T'));
    assert_eq!(thread_lines(&s), 0);
    assert!(!s.log.visible().is_empty() && s.log.visible().len() < all);
    assert_eq!(rows(&s), 0, "no thread rows either");
    assert!(screen(&mut s).contains("threads hidden"));
    reduce(&mut s, key('T'));
    assert!(thread_lines(&s) > 0 && rows(&s) > 0);
}

#[test]
fn the_status_bar_shows_one_event_count() {
    let evs = fixture("ctr");
    let mut s = replay_state("ctr.log", &evs, 100, (120, 40));
    let text = screen(&mut s);
    let status = text.lines().last().expect("status").to_string();
    assert!(
        status.contains(&format!("event 100/{}", evs.len())),
        "{status}"
    );
    // No other count: the numbers on it are the position's two.
    let numbers = status
        .split(|c: char| !c.is_ascii_digit())
        .filter(|w| !w.is_empty())
        .count();
    assert_eq!(numbers, 3, "100, the total and the speed: {status}");
    assert!(
        !status.contains("drops") && !status.contains("gaps"),
        "{status}"
    );
}

fn on_the_runtime(s: &AppState) {
    let p = s.selected_process().expect("a selection");
    let daemon = Some(crate::lineage::Role::RuntimeDaemon);
    assert_eq!(p.role, daemon, "{} selected", p.pid);
}

#[test]
fn the_demo_opens_guided_on_its_first_step_and_else_on_the_runtime() {
    let at_end = ReplayOpts {
        at_end: true,
        ..ReplayOpts::default()
    };
    let s = demo_state(&at_end, (160, 45));
    on_the_runtime(&s);
    // Played from its start, the selection moves to the daemon when it appears...
    let mut s = demo_state(&ReplayOpts::default(), (160, 45));
    let mut input = crate::demo::Demo::Pod.open().expect("demo");
    let evs: Vec<Event> = input.by_ref().collect::<Result<_, _>>().expect("events");
    s.ingest(Msg::Events(evs.clone()));
    s.refresh();
    on_the_runtime(&s);
    // ... unless one was chosen before.
    let mut s = demo_state(&ReplayOpts::default(), (160, 45));
    reduce(&mut s, Action::Down);
    let chosen = s.tree.selected;
    s.ingest(Msg::Events(evs));
    s.refresh();
    assert_eq!(s.tree.selected, chosen);
    let s = demo_state(&guided(), (80, 24));
    let step = s.story.current_step().expect("a step");
    assert_eq!(s.last_seq(), Some(step.seq));
    assert_eq!(s.selected_process().map(|p| p.pid), Some(step.pid));
}

#[test]
fn a_screenshot_is_the_opening_frame_as_plain_text() {
    let mut input = crate::demo::Demo::Pod.open().expect("demo");
    let seed = input.snapshot();
    let events = input.by_ref().collect::<Result<_, _>>().expect("events");
    let rec = super::Recording {
        events,
        seed,
        title: "demo".into(),
        tail: None,
        pod: None,
    };
    let size = "80x24".parse::<super::ScreenSize>().expect("size");
    let text = super::screenshot(rec, &guided(), size);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 24, "{text}");
    assert!(lines.iter().all(|l| l.chars().count() <= 80), "{text}");
    assert!(text.contains("guided · stories"), "{text}");
    assert!(
        lines[23].contains("REPLAY") && lines[23].contains("event "),
        "{text}"
    );
    // Story headers name the pod and what the container is, not a 64-hex id.
    let header = text
        .lines()
        .find(|l| l.starts_with("pod "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        header.contains(": sandbox ") || header.contains(": container "),
        "{header}"
    );
    assert!(
        !header
            .split(|c: char| !c.is_ascii_hexdigit())
            .any(|w| w.len() > 12),
        "{header}"
    );
    for bad in ["x24", "80x", "10x10", "80x24x1", "axb"] {
        assert!(bad.parse::<super::ScreenSize>().is_err(), "{bad}");
    }
}

/// The restart demo in the guided viewer: containerd's restart is a story of the walk, its
/// steps shown with their explanation and what the recording holds for them.
#[test]
fn the_guided_walk_reaches_the_runtime_restart_and_explains_it() {
    use crate::lineage::{Phase, StepKind};
    let opts = guided();
    let mut input = crate::demo::Demo::Restart.open().expect("demo");
    let seed = input.snapshot();
    let events: crate::tracefile::PackedEvents =
        input.by_ref().collect::<Result<_, _>>().expect("events");
    let mut s = super::replay_state("restart".into(), None, &seed, &opts);
    for m in super::source::opening(events, &seed, &opts, None) {
        s.ingest(m);
    }
    s.view.size = (160, 60);
    s.set_now(60_000);
    s.refresh();
    let steps = s.story.steps();
    let at = steps.iter().position(|&(i, j)| {
        let st = &s.story.stories[i];
        st.phase == Phase::RuntimeRestart && st.steps[j].kind == StepKind::Survived
    });
    s.story.cursor = at.expect("the restart's steps are in the walk");
    let text = screen(&mut s);
    assert!(text.contains("lives on: parent 1"), "{text}");
    assert!(
        text.contains("recording: shim 2092 kept parent 1"),
        "{text}"
    );
    assert!(text.contains("containerd's own cgroup /"), "{text}");
}

/// The detail pane's subreaper lines name their facts and agree with the adoption step: the
/// shim keeps the kernel's inherited has_child_subreaper flag after its parent (a subreaper)
/// exited, while the ancestor walk, like the step "adopted by 1", now ends at init.
#[test]
fn the_subreaper_lines_agree_with_the_adoption_step() {
    let evs = fixture("ctr");
    let stories = stories_of(&evs);
    let adopted = stories[0]
        .steps
        .iter()
        .find(|x| x.kind == crate::lineage::StepKind::ShimAdopted)
        .expect("the shim's adoption")
        .clone();
    assert!(adopted.text.contains("adopted by 1 "), "{}", adopted.text);
    // Before its parent's exit, the walk ends at that parent, a live subreaper.
    let before = evs.iter().position(|e| e.seq >= adopted.seq).unwrap();
    let mut s = replay_state("ctr", &evs, before, (200, 60));
    select_pid(&mut s, adopted.pid);
    let text = screen(&mut s);
    assert!(
        text.contains("orphans→  15913 (nearest live subreaper)"),
        "{text}"
    );
    // After it, the walk ends at init, as the step says, and the inherited flag stays.
    let mut s = replay_state("ctr", &evs, before + 1, (200, 60));
    select_pid(&mut s, adopted.pid);
    let text = screen(&mut s);
    assert!(
        text.contains("orphans→  1 (no live subreaper ancestor: init)"),
        "{text}"
    );
    assert!(
        text.contains("inherited has_child_subreaper (kernel flag)"),
        "{text}"
    );
    assert!(!text.contains("subreaper ancestor exists"), "{text}");
}

/// The viewer's explanations of the recorded fixtures (containerd's `ctr`, a `runc run` by
/// hand, podman's conmon) name nothing their stories do not hold.
#[test]
fn the_fixtures_stories_are_explained_for_what_they_hold() {
    for name in [
        "ctr",
        "runc",
        "podman",
        "runc-run",
        "runc-run-orphan",
        "runc-stderr",
    ] {
        let all = stories_of(&fixture(name));
        assert!(!all.is_empty(), "{name}");
        let bad = crate::lineage::explain::check::failures(&all);
        assert!(bad.is_empty(), "{name}:\n{}", bad.join("\n"));
    }
}

// ---- reaching a story, the quiz ----

/// The pid a step's own line names as its answer: `adopted by N`, `: parent N`.
fn answer_in_text(text: &str) -> u32 {
    let after = text
        .split_once("adopted by ")
        .or_else(|| text.split_once(": parent "))
        .map(|(_, r)| r)
        .expect("an answer in the line");
    let digits: String = after.chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().expect("a pid")
}

/// `]` until the quiz asks (the source's seeks applied on the way).
fn next_question(s: &mut AppState, evs: &[Event]) -> usize {
    for _ in 0..40 {
        let c = reduce(s, key(']'));
        seek(s, evs, &c);
        if let Some(q) = s.quiz.asking {
            return q;
        }
    }
    panic!("no question");
}

#[tokio::test]
async fn the_quiz_asks_before_the_step_and_judges_right_and_wrong_with_the_kernel_rule() {
    let (mut s, evs) = guided_state("ctr", (100, 30)).await;
    reduce(&mut s, key('Q'));
    assert!(s.quiz.on);
    // The shim's adoption shares its event with its parent's exit: asked before either.
    let q = next_question(&mut s, &evs);
    let step = s.story.current_step().cloned().expect("step");
    assert_eq!(s.story.cursor, q);
    assert_eq!(step.kind, crate::lineage::StepKind::ShimAdopted);
    assert!(
        s.last_seq().is_some_and(|a| a < step.seq),
        "the replay waits before it"
    );
    let truth = answer_in_text(&step.text);
    let text = screen(&mut s);
    assert!(
        !text.contains(&step.text),
        "the answer is not on screen:\n{text}"
    );
    assert!(text.contains("who adopts shim 15921?"), "{text}");
    // A wrong pid, typed.
    let wrong = truth + 15912;
    for c in wrong.to_string().chars() {
        reduce(&mut s, Action::QuizDigit(c));
    }
    assert!(screen(&mut s).contains(&format!("pid: {wrong}")));
    let c = reduce(&mut s, Action::QuizAnswer);
    seek(&mut s, &evs, &c);
    let v = s.quiz.verdict.clone().expect("judged");
    assert_eq!(
        (v.guess, v.truth, v.right()),
        (Some(wrong), Some(truth), false)
    );
    assert_eq!((s.quiz.right, s.quiz.asked), (0, 1));
    let (story, _) = s.story.current().expect("a step");
    let rule = crate::lineage::explain::why(story, &step).text;
    let text = screen(&mut s);
    assert!(
        text.contains(&format!("wrong: you said {wrong}, it is {truth}")),
        "{text}"
    );
    assert!(
        text.contains(
            &rule
                .split_whitespace()
                .take(6)
                .collect::<Vec<_>>()
                .join(" ")
        ),
        "{text}"
    );
    assert!(
        text.contains("quiz 0/1"),
        "the status bar keeps the score:\n{text}"
    );
    insta::assert_snapshot!("quiz_wrong_100x30", text);
    // Back before its event and on again: a question is asked once.
    for _ in 0..2 {
        let c = reduce(&mut s, key('['));
        seek(&mut s, &evs, &c);
    }
    assert!(s.last_seq().is_some_and(|a| a < step.seq));
    let c = reduce(&mut s, key(']'));
    seek(&mut s, &evs, &c);
    assert!(s.quiz.asking.is_none());
    // The CLONE_PARENT clone: `[` on its question leaves it open for later, unanswered;
    // then it is answered by selecting the parent in the tree, and Enter.
    let q2 = next_question(&mut s, &evs);
    let c = reduce(&mut s, key('['));
    seek(&mut s, &evs, &c);
    assert_eq!(s.quiz.asking, None);
    assert!(!s.quiz.answered.contains(&q2));
    assert_eq!(next_question(&mut s, &evs), q2);
    assert!(q2 > q);
    let step = s.story.current_step().cloned().expect("step");
    assert_eq!(step.kind, crate::lineage::StepKind::ChildCloned);
    let truth = answer_in_text(&step.text);
    select_pid(&mut s, truth);
    let c = reduce(&mut s, Action::QuizAnswer);
    seek(&mut s, &evs, &c);
    let v = s.quiz.verdict.clone().expect("judged");
    assert_eq!(
        (v.guess, v.truth, v.right()),
        (Some(truth), Some(truth), true)
    );
    assert_eq!((s.quiz.right, s.quiz.asked), (1, 2));
    let text = screen(&mut s);
    assert!(text.contains(&format!("right: {truth}")), "{text}");
    assert!(text.contains("quiz: 1 of 2 right"), "{text}");
    insta::assert_snapshot!("quiz_right_100x30", text);
}

#[test]
fn quiz_keys_are_digits_enter_and_esc_only_while_asking() {
    let mut s = AppState::new_replay("t");
    let k = |s: &AppState, c: KeyCode| key_action(&KeyEvent::new(c, KeyModifiers::NONE), s);
    assert_eq!(k(&s, KeyCode::Char('Q')), Some(Action::ToggleQuiz));
    assert_eq!(k(&s, KeyCode::Char('4')), None);
    s.quiz.asking = Some(0);
    assert_eq!(k(&s, KeyCode::Char('4')), Some(Action::QuizDigit('4')));
    assert_eq!(k(&s, KeyCode::Enter), Some(Action::QuizAnswer));
    assert_eq!(k(&s, KeyCode::Esc), Some(Action::QuizPass));
    assert_eq!(
        k(&s, KeyCode::Down),
        Some(Action::Down),
        "the tree still moves"
    );
}

#[tokio::test]
async fn a_search_finds_a_process_the_replay_has_not_reached_and_goes_there() {
    let (mut s, evs) = guided_state("ctr", (100, 30)).await;
    assert!(s.engine.process(15941).is_none(), "not born yet");
    let born = evs
        .iter()
        .find(|e| {
            matches!(
                &e.kind,
                EventKind::Fork {
                    child_tgid: 15941,
                    ..
                }
            )
        })
        .map(|e| e.seq)
        .expect("its birth");
    let c = search_seeking(&mut s, &evs, "15941");
    assert!(c.contains(&Control::Seek(born)), "{c:?}");
    assert_eq!(s.selected_process().map(|p| p.pid), Some(15941));
    // Hidden (exited processes not shown, its ancestor folded): shown.
    s.tree.show_exited = false;
    select_pid(&mut s, 15921);
    reduce(&mut s, Action::Left);
    search(&mut s, "PARENT");
    assert_eq!(s.selected_process().map(|p| p.pid), Some(15938));
}

/// A search for `q`, its controls applied as the source would.
fn search_seeking(s: &mut AppState, evs: &[Event], q: &str) -> Vec<Control> {
    reduce(s, Action::SearchStart);
    for c in q.chars() {
        reduce(s, Action::SearchChar(c));
    }
    let c = reduce(s, Action::SearchConfirm);
    seek(s, evs, &c);
    c
}

#[tokio::test]
async fn up_and_down_in_the_story_pane_move_the_tree_and_the_status_names_the_seq() {
    let (mut s, evs) = guided_state("ctr", (100, 30)).await;
    let steps: Vec<_> = s.story.stories[0].steps.clone();
    let c = reduce(&mut s, Action::Down);
    assert_eq!(c.last(), Some(&Control::Seek(steps[1].seq)), "{c:?}");
    seek(&mut s, &evs, &c);
    assert_eq!(s.selected_process().map(|p| p.pid), Some(steps[1].pid));
    let text = screen(&mut s);
    assert!(
        text.contains(&format!("step seq {}", steps[1].seq)),
        "{text}"
    );
    // Not guided: the tree selects the step's process, no seek.
    let mut s = at_end("ctr", (100, 30));
    reduce(&mut s, Action::ToggleStory);
    let c = reduce(&mut s, Action::Down);
    assert!(c.is_empty(), "{c:?}");
    let step = s.story.current_step().cloned().expect("step");
    assert_eq!(s.selected_process().map(|p| p.pid), Some(step.pid));
}

#[test]
fn a_guided_replay_opens_at_the_story_asked_for() {
    let evs = fixture("ctr");
    let opts = ReplayOpts {
        guided: true,
        story: Some(1),
        ..ReplayOpts::default()
    };
    let mut s = super::replay_state("ctr.log".into(), None, &[], &opts);
    for m in super::source::opening(evs.iter().cloned().collect(), &[], &opts, None) {
        s.ingest(m);
    }
    s.refresh();
    let death = &s.story.stories[1];
    assert_eq!(s.story.cursor, s.story.stories[0].steps.len());
    assert_eq!(s.last_seq(), Some(death.steps[0].seq));
}
