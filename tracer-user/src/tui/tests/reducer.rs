//! Keys and the reducer: actions, movement, folds, toggles, search, replay controls, the log pane.

use super::*;

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
    assert_eq!(s.playback.speed, crate::tui::reduce::MIN_SPEED);
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
