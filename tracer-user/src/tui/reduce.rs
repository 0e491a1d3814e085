//! The reducer: an [`Action`] updates the [`AppState`] and may ask a replay source to move
//! ([`Control`]s, sent by the caller).

use super::action::Action;
use super::msg::Control;
use super::state::layout::{active_pane, layout, tree_height};
use super::state::{AppState, Mode, Pane, RowKind};

/// Slowest replay speed multiplier.
pub const MIN_SPEED: f64 = 1.0 / 16.0;
/// Fastest replay speed multiplier.
pub const MAX_SPEED: f64 = 1024.0;
/// Columns one `<` / `>` scrolls the tree.
pub const HSCROLL_STEP: u16 = 8;
/// Furthest the tree scrolls right (the draw stops at the widest row on screen).
const MAX_HSCROLL: u16 = 4096;

/// Applies `a`; returns what the replay source must do.
pub fn reduce(s: &mut AppState, a: Action) -> Vec<Control> {
    s.refresh();
    s.dirty = true;
    if !matches!(a, Action::Resize(..) | Action::SearchChar(_)) {
        s.status.message = None;
    }
    let mut out = Vec::new();
    let replay = s.mode == Mode::Replay;
    let selected = s.tree.selected;
    match a {
        Action::Quit => s.quit = true,
        Action::Resize(w, h) => s.view.size = (w, h),
        Action::Up => move_by(s, -1),
        Action::Down => move_by(s, 1),
        Action::Scroll { up, col, row } => {
            let keep = s.view.pane;
            if let Some(p) = pane_at(s, col, row) {
                s.view.pane = p;
            }
            move_by(s, if up { -3 } else { 3 });
            s.view.pane = keep;
        }
        Action::Click { col, row } => click(s, col, row),
        Action::PageUp => move_by(s, -(page(s) as i64)),
        Action::PageDown => move_by(s, page(s) as i64),
        Action::Home => move_by(s, i64::MIN / 2),
        Action::EndRow => move_by(s, i64::MAX / 2),
        Action::Left => left(s),
        Action::Right => right(s),
        Action::Enter => enter(s, &mut out),
        Action::Back => back(s),
        Action::SearchStart => s.search.input = Some(String::new()),
        Action::SearchChar(c) => {
            if let Some(q) = s.search.input.as_mut() {
                if q.chars().count() < 64 {
                    q.push(c);
                }
            }
        }
        Action::SearchBackspace => {
            if let Some(q) = s.search.input.as_mut() {
                q.pop();
            }
        }
        Action::SearchCancel => s.search.input = None,
        Action::SearchConfirm => {
            if let Some(q) = s.search.input.take() {
                s.search.query = q.trim().to_string();
                s.mark_tree_dirty();
                search(s, true, true);
            }
        }
        Action::SearchNext => search(s, true, false),
        Action::SearchPrev => search(s, false, false),
        Action::ToggleThreads => {
            s.tree.show_threads = !s.tree.show_threads;
            s.mark_tree_dirty();
        }
        Action::HideThreads => {
            s.log.hide_threads = !s.log.hide_threads;
            s.mark_tree_dirty();
        }
        Action::ToggleLog => toggle_pane(s, Pane::Log),
        Action::MoreWhy => {
            let pages = s.story.why_pages();
            s.story.why_scroll = (s.story.cursor, pages + 1);
        }
        Action::TogglePods => {
            s.tree.pod_view = !s.tree.pod_view;
            s.tree.offset = 0;
            s.mark_tree_dirty();
        }
        Action::ToggleExited => {
            s.tree.show_exited = !s.tree.show_exited;
            s.mark_tree_dirty();
        }
        Action::ToggleStory => toggle_pane(s, Pane::Story),
        Action::ToggleHelp => s.view.show_help = !s.view.show_help,
        Action::ToggleExplain => {
            s.view.show_explain = !s.view.show_explain;
            if s.view.show_explain && !s.view.show_story {
                s.view.show_story = true;
                s.view.pane = Pane::Story;
                s.mark_tree_dirty();
            }
        }
        Action::ToggleZoom => {
            s.view.zoom = !s.view.zoom;
            s.mark_tree_dirty();
        }
        Action::ScrollLeft => s.tree.hscroll = s.tree.hscroll.saturating_sub(HSCROLL_STEP),
        Action::ScrollRight => {
            s.tree.hscroll = (s.tree.hscroll + HSCROLL_STEP).min(MAX_HSCROLL);
        }
        Action::ToggleLogFilter => s.log.subtree_only = !s.log.subtree_only,
        Action::ToggleLogTime => s.log.show_time = !s.log.show_time,
        Action::NextPane => {
            s.view.pane = match active_pane(s) {
                Pane::Tree if s.view.show_story => Pane::Story,
                Pane::Tree | Pane::Story if s.view.show_log => Pane::Log,
                Pane::Tree | Pane::Story | Pane::Log => Pane::Tree,
            }
        }
        Action::SaveWindow => match (&s.mode, &s.status.recording) {
            (Mode::Live, None) => s.capture.save_requested = true,
            (Mode::Live, Some(f)) => s.status.message = Some(format!("already recording to {f}")),
            (Mode::Replay, _) => {
                s.status.message = Some("replay: this is a recording already".into())
            }
        },
        Action::TogglePause => {
            s.playback.paused = !s.playback.paused;
            if !s.playback.paused && s.mode == Mode::Live {
                s.flush_pending();
            }
            out.push(Control::Pause(s.playback.paused));
        }
        Action::StepForward | Action::StepBack if replay => {
            s.playback.paused = true;
            s.log.cursor = None;
            out.push(Control::Step(if a == Action::StepForward { 1 } else { -1 }));
        }
        Action::StepForward | Action::StepBack => {
            s.status.message = Some("stepping is for replay; space pauses".into());
        }
        Action::PrevStoryStep => story_jump(s, false, &mut out),
        Action::NextStoryStep => story_jump(s, true, &mut out),
        Action::Faster | Action::Slower if replay => {
            let f = if a == Action::Faster { 2.0 } else { 0.5 };
            s.playback.speed = (s.playback.speed * f).clamp(MIN_SPEED, MAX_SPEED);
            out.push(Control::Speed(s.playback.speed));
        }
        Action::Faster | Action::Slower => {}
        Action::Start if replay => {
            s.log.cursor = None;
            out.push(Control::Start);
        }
        Action::End if replay => {
            s.log.cursor = None;
            out.push(Control::End);
        }
        Action::Start => move_by(s, i64::MIN / 2),
        Action::End => move_by(s, i64::MAX / 2),
    }
    if s.tree.selected != selected {
        s.tree.chosen = true;
    }
    s.refresh();
    out
}

/// Shows or hides the story pane or the log: shown, it takes the keys; hidden, the tree.
fn toggle_pane(s: &mut AppState, pane: Pane) {
    let shown = match pane {
        Pane::Story => &mut s.view.show_story,
        Pane::Log => &mut s.view.show_log,
        Pane::Tree => return,
    };
    *shown = !*shown;
    let on = *shown;
    s.view.pane = if on { pane } else { Pane::Tree };
    s.mark_tree_dirty();
}

/// The pane under a screen position (the detail pane counts as none).
fn pane_at(s: &AppState, col: u16, row: u16) -> Option<Pane> {
    let a = layout(
        ratatui::layout::Rect::new(0, 0, s.view.size.0, s.view.size.1),
        s,
    );
    let p = ratatui::layout::Position::new(col, row);
    if a.tree.contains(p) {
        Some(Pane::Tree)
    } else if a.story.is_some_and(|r| r.contains(p)) {
        Some(Pane::Story)
    } else if a.log.contains(p) {
        Some(Pane::Log)
    } else {
        None
    }
}

fn click(s: &mut AppState, col: u16, row: u16) {
    let Some(p) = pane_at(s, col, row) else {
        return;
    };
    s.view.pane = p;
    if p == Pane::Tree {
        let a = layout(
            ratatui::layout::Rect::new(0, 0, s.view.size.0, s.view.size.1),
            s,
        );
        // The first line of the pane is its title.
        if row > a.tree.y {
            let i = s.tree.offset + (row - a.tree.y - 1) as usize;
            if let Some(r) = s.tree.rows.get(i) {
                s.tree.selected = Some(r.kind);
            }
        }
    }
}

fn page(s: &AppState) -> usize {
    match active_pane(s) {
        Pane::Tree => tree_height(s).max(2) - 1,
        _ => 5,
    }
}

fn move_by(s: &mut AppState, d: i64) {
    match active_pane(s) {
        Pane::Tree => {
            if s.tree.rows.is_empty() {
                return;
            }
            let max = s.tree.rows.len() as i64 - 1;
            let i = (s.tree.cursor as i64).saturating_add(d).clamp(0, max) as usize;
            s.tree.cursor = i;
            s.tree.selected = Some(s.tree.rows[i].kind);
        }
        Pane::Story => {
            let n = s.story.steps().len() as i64;
            if n > 0 {
                s.story.cursor = (s.story.cursor as i64).saturating_add(d).clamp(0, n - 1) as usize;
            }
        }
        Pane::Log => {
            let lines = s.log.visible();
            if lines.is_empty() {
                return;
            }
            let cur = match s.log.cursor {
                Some(seq) => lines
                    .iter()
                    .position(|l| l.seq >= seq)
                    .unwrap_or(lines.len() - 1),
                None => lines.len() - 1,
            } as i64;
            let i = cur.saturating_add(d).clamp(0, lines.len() as i64 - 1) as usize;
            s.log.cursor = if i + 1 == lines.len() && d > 0 {
                None
            } else {
                Some(lines[i].seq)
            };
        }
    }
}

fn left(s: &mut AppState) {
    if active_pane(s) != Pane::Tree {
        return;
    }
    let Some(row) = s.tree.rows.get(s.tree.cursor).copied() else {
        return;
    };
    match row.kind {
        RowKind::Proc(id) => {
            let has_kids = s
                .tree
                .rows
                .get(s.tree.cursor + 1)
                .is_some_and(|r| r.parent_row == Some(s.tree.cursor));
            if has_kids {
                s.tree.folded.insert(id);
                s.mark_tree_dirty();
                return;
            }
        }
        RowKind::Thread { .. } | RowKind::Pod(_) | RowKind::Container(_) => {}
    }
    if let Some(p) = row.parent_row.and_then(|i| s.tree.rows.get(i)) {
        s.tree.selected = Some(p.kind);
    }
}

fn right(s: &mut AppState) {
    if active_pane(s) != Pane::Tree {
        return;
    }
    let Some(row) = s.tree.rows.get(s.tree.cursor).copied() else {
        return;
    };
    if let RowKind::Proc(id) = row.kind {
        if s.tree.folded.remove(&id) {
            s.mark_tree_dirty();
        } else if let Some(next) = s.tree.rows.get(s.tree.cursor + 1) {
            if next.parent_row == Some(s.tree.cursor) {
                s.tree.selected = Some(next.kind);
            }
        }
    }
}

fn enter(s: &mut AppState, out: &mut Vec<Control>) {
    match active_pane(s) {
        Pane::Tree => {
            let Some(id) = s.tree.selected.map(|k| k.proc()) else {
                return;
            };
            s.tree.focus_root = if s.tree.focus_root == Some(id) {
                None
            } else {
                Some(id)
            };
            s.tree.selected = Some(RowKind::Proc(id));
            s.tree.folded.remove(&id);
            s.tree.offset = 0;
            s.mark_tree_dirty();
        }
        Pane::Story => jump_to_step(s, s.story.cursor, out),
        Pane::Log => {}
    }
}

fn back(s: &mut AppState) {
    if s.view.show_help {
        s.view.show_help = false;
    } else if s.log.cursor.is_some() && active_pane(s) == Pane::Log {
        s.log.cursor = None;
    } else if s.tree.focus_root.is_some() {
        s.tree.focus_root = None;
        s.mark_tree_dirty();
    } else if !s.search.query.is_empty() {
        s.search.query.clear();
        s.mark_tree_dirty();
    } else {
        s.log.cursor = None;
    }
}

/// Selects the next (or previous) matching row, wrapping; `from_current` includes the
/// current row (a fresh search).
fn search(s: &mut AppState, forward: bool, from_current: bool) {
    if s.search.query.is_empty() {
        return;
    }
    // Unfold everything that hides a match, so the walk below can reach it.
    let hidden: Vec<usize> = s
        .engine
        .processes()
        .filter(|p| s.search.matches(p))
        .map(|p| p.id)
        .collect();
    if hidden.is_empty() {
        s.status.message = Some(format!("no match for {:?}", s.search.query));
        return;
    }
    for id in hidden {
        s.unfold_to(id);
    }
    s.refresh();
    let n = s.tree.rows.len();
    if n == 0 {
        return;
    }
    let start = s.tree.cursor;
    for k in 0..n {
        let off = if from_current { k } else { k + 1 };
        let i = if forward {
            (start + off) % n
        } else {
            (start + n - (off % n)) % n
        };
        if let RowKind::Proc(id) = s.tree.rows[i].kind {
            if s.engine.get(id).is_some_and(|p| s.search.matches(p)) {
                s.tree.selected = Some(s.tree.rows[i].kind);
                s.view.pane = Pane::Tree;
                return;
            }
        }
    }
    s.status.message = Some(format!("no visible match for {:?}", s.search.query));
}

/// `[` / `]`: the previous / next step of the story the cursor is in (the one selected in
/// the story pane, whatever the replay position); replay seeks to it. At either end of the
/// story the status line says so: another story is chosen with ↑↓, not by stepping past.
fn story_jump(s: &mut AppState, next: bool, out: &mut Vec<Control>) {
    if s.story.steps().is_empty() {
        s.status.message = Some("no container birth found (yet)".into());
        return;
    }
    let story = s.story.story_range();
    // A step the replay has not reached yet (selected ahead): `]` goes to it first.
    let ahead = s.mode == Mode::Replay
        && s.story
            .current_step()
            .is_some_and(|st| s.last_seq().is_none_or(|a| st.seq > a));
    let target = if next && ahead {
        Some(s.story.cursor)
    } else if next {
        Some(s.story.cursor + 1).filter(|k| story.contains(k))
    } else {
        s.story.cursor.checked_sub(1).filter(|k| story.contains(k))
    };
    match target {
        Some(k) => {
            if !s.view.show_story {
                s.view.show_story = true;
                s.view.pane = Pane::Story;
                s.mark_tree_dirty();
            }
            jump_to_step(s, k, out);
        }
        None => {
            let end = if next { "last" } else { "first" };
            s.status.message = Some(format!(
                "{end} step of this story ({}/{}); ↑↓ in the story pane select another",
                s.story.cursor + 1 - story.start,
                story.len()
            ));
        }
    }
}

/// Selects a step: its process in the tree, its event in the log; replay seeks to it.
fn jump_to_step(s: &mut AppState, k: usize, out: &mut Vec<Control>) {
    let steps = s.story.steps();
    let Some(&(i, j)) = steps.get(k) else { return };
    let step = &s.story.stories[i].steps[j];
    let (seq, pid) = (step.seq, step.pid);
    s.story.cursor = k;
    s.log.cursor = Some(seq);
    s.tree.select_pid = Some(pid);
    if s.mode == Mode::Replay && s.last_seq() != Some(seq) {
        s.playback.paused = true;
        out.push(Control::Pause(true));
        out.push(Control::Seek(seq));
    }
}
