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
    let selected = s.tree.selected;
    match a {
        Action::Quit => s.quit = true,
        Action::Resize(w, h) => s.view.size = (w, h),
        Action::Up
        | Action::Down
        | Action::Scroll { .. }
        | Action::Click { .. }
        | Action::PageUp
        | Action::PageDown
        | Action::Home
        | Action::EndRow
        | Action::Left
        | Action::Right
        | Action::Enter
        | Action::Back => navigate(s, a, &mut out),
        Action::SearchStart
        | Action::SearchChar(_)
        | Action::SearchBackspace
        | Action::SearchCancel
        | Action::SearchConfirm
        | Action::SearchNext
        | Action::SearchPrev => search_key(s, a, &mut out),
        Action::ToggleThreads
        | Action::HideThreads
        | Action::ToggleLog
        | Action::MoreWhy
        | Action::TogglePods
        | Action::ToggleExited
        | Action::ToggleStory
        | Action::ToggleHelp
        | Action::ToggleExplain
        | Action::ToggleZoom
        | Action::ScrollLeft
        | Action::ScrollRight
        | Action::ToggleLogFilter
        | Action::ToggleLogTime
        | Action::NextPane => view_key(s, a),
        Action::SaveWindow
        | Action::TogglePause
        | Action::StepForward
        | Action::StepBack
        | Action::PrevStoryStep
        | Action::NextStoryStep
        | Action::Faster
        | Action::Slower
        | Action::Start
        | Action::End => playback_key(s, a, &mut out),
        Action::ToggleQuiz => toggle_quiz(s),
        Action::NextNode => switch_node(s, true),
        Action::PrevNode => switch_node(s, false),
        Action::QuizDigit(_) | Action::QuizBackspace | Action::QuizAnswer | Action::QuizPass => {
            quiz_key(s, a, &mut out)
        }
    }
    if s.tree.selected != selected {
        s.tree.chosen = true;
    }
    s.refresh();
    out
}

/// Moving in the focused pane: rows, pages, folds, the wheel and clicks, Enter and Esc.
fn navigate(s: &mut AppState, a: Action, out: &mut Vec<Control>) {
    match a {
        Action::Up => move_by(s, -1, out),
        Action::Down => move_by(s, 1, out),
        Action::Scroll { up, col, row } => {
            let keep = s.view.pane;
            if let Some(p) = pane_at(s, col, row) {
                s.view.pane = p;
            }
            move_by(s, if up { -3 } else { 3 }, out);
            s.view.pane = keep;
        }
        Action::Click { col, row } => click(s, col, row),
        Action::PageUp => move_by(s, -(page(s) as i64), out),
        Action::PageDown => move_by(s, page(s) as i64, out),
        Action::Home => move_by(s, i64::MIN / 2, out),
        Action::EndRow => move_by(s, i64::MAX / 2, out),
        Action::Left => left(s),
        Action::Right => right(s),
        Action::Enter => enter(s, out),
        Action::Back => back(s),
        // Other groups are reduce's.
        _ => {}
    }
}

/// `/`, the query typed, and `n` / `N` through its hits.
fn search_key(s: &mut AppState, a: Action, out: &mut Vec<Control>) {
    match a {
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
                search(s, true, true, out);
            }
        }
        Action::SearchNext => search(s, true, false, out),
        Action::SearchPrev => search(s, false, false, out),
        // Other groups are reduce's.
        _ => {}
    }
}

/// What the panes show and which one has the keys.
fn view_key(s: &mut AppState, a: Action) {
    match a {
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
        Action::ToggleExplain => toggle_explain(s),
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
        // Other groups are reduce's.
        _ => {}
    }
}

/// `e`: the explanation shown or hidden; shown, the story pane with it.
fn toggle_explain(s: &mut AppState) {
    s.view.show_explain = !s.view.show_explain;
    if s.view.show_explain && !s.view.show_story {
        s.view.show_story = true;
        s.view.pane = Pane::Story;
        s.mark_tree_dirty();
    }
}

/// Moving through the stream: pause, steps, story steps, speed, start and end; `w`.
fn playback_key(s: &mut AppState, a: Action, out: &mut Vec<Control>) {
    let replay = s.mode == Mode::Replay;
    match a {
        Action::SaveWindow => save_window(s),
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
        Action::PrevStoryStep => story_jump(s, false, out),
        Action::NextStoryStep => story_jump(s, true, out),
        Action::Faster | Action::Slower if replay => {
            let f = if a == Action::Faster { 2.0 } else { 0.5 };
            s.playback.speed = (s.playback.speed * f).clamp(MIN_SPEED, MAX_SPEED);
            out.push(Control::Speed(s.playback.speed));
        }
        Action::Start if replay => {
            s.log.cursor = None;
            out.push(Control::Start);
        }
        Action::End if replay => {
            s.log.cursor = None;
            out.push(Control::End);
        }
        Action::Start => move_by(s, i64::MIN / 2, out),
        Action::End => move_by(s, i64::MAX / 2, out),
        // Live has no speed; other groups are reduce's.
        _ => {}
    }
}

/// `w`: live and not recording, the app loop writes the window; else why not.
fn save_window(s: &mut AppState) {
    match (&s.mode, &s.status.recording) {
        (Mode::Live, None) => s.capture.save_requested = true,
        (Mode::Live, Some(f)) => s.status.message = Some(format!("already recording to {f}")),
        (Mode::Replay, _) => s.status.message = Some("replay: this is a recording already".into()),
    }
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

fn move_by(s: &mut AppState, d: i64, out: &mut Vec<Control>) {
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
                let k = (s.story.cursor as i64).saturating_add(d).clamp(0, n - 1) as usize;
                step_to(s, k, out);
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

/// The search's hits as `(pid, start_seq)`, in the order of their births: replay, every
/// process of the whole recording ([`Msg::Index`](super::Msg::Index)) and what the engine
/// holds besides; live (or scoped to a pod), the engine's processes, exited ones included.
fn hits(s: &AppState) -> Vec<(u32, u64)> {
    let q = s.search.query.as_str();
    let mut hits: Vec<(u32, u64)> = Vec::new();
    if s.pod.is_none() {
        let found = s.search.index.iter().filter(|f| f.matches(q));
        hits.extend(found.map(|f| (f.pid, f.start_seq)));
    }
    let known: std::collections::HashSet<(u32, u64)> = hits.iter().copied().collect();
    let here = s.engine.processes().filter(|p| s.search.matches(p));
    hits.extend(
        here.map(|p| (p.pid, p.start_seq))
            .filter(|h| !known.contains(h)),
    );
    hits.sort_by_key(|&(pid, start)| (start, pid));
    hits
}

/// The record of the process `pid` born at `start`, when the engine at the position has it.
fn record_of(s: &AppState, (pid, start): (u32, u64)) -> Option<crate::lineage::ProcId> {
    match s.engine.process(pid) {
        Some(p) if p.start_seq == start => Some(p.id),
        _ => s
            .engine
            .processes()
            .find(|p| p.pid == pid && p.start_seq == start)
            .map(|p| p.id),
    }
}

/// Goes to the next (or previous) hit, wrapping; a fresh search (`fresh`) to the first hit
/// the position holds, else the recording's first. A hit is shown wherever it is: unfolded,
/// exited processes shown, out of a focus or the pod view; one the position has not
/// reached (or has gone past, with its pid taken again) moves the replay to its birth.
fn search(s: &mut AppState, forward: bool, fresh: bool, out: &mut Vec<Control>) {
    if s.search.query.is_empty() {
        return;
    }
    let hits = hits(s);
    if hits.is_empty() {
        s.status.message = Some(format!("no match for {:?}", s.search.query));
        return;
    }
    let at = s.search.hit.and_then(|h| hits.iter().position(|&x| x == h));
    let i = match (fresh, at) {
        (true, _) | (false, None) => (0..hits.len())
            .find(|&i| record_of(s, hits[i]).is_some())
            .unwrap_or(0),
        (false, Some(i)) if forward => (i + 1) % hits.len(),
        (false, Some(i)) => (i + hits.len() - 1) % hits.len(),
    };
    let hit = hits[i];
    s.search.hit = Some(hit);
    s.view.pane = Pane::Tree;
    let note = format!("match {}/{} for {:?}", i + 1, hits.len(), s.search.query);
    match record_of(s, hit) {
        Some(id) => show_record(s, id),
        None if s.mode == Mode::Replay => {
            // Not at this position: the replay goes to its birth, the tree follows.
            s.tree.select_pid = Some(hit.0);
            s.playback.paused = true;
            out.push(Control::Pause(true));
            out.push(Control::Seek(hit.1));
            s.status.message = Some(format!("{note}: born at seq {}", hit.1));
            return;
        }
        None => {}
    }
    s.status.message = Some(note);
}

/// Selects record `id` in the tree, making it visible first.
fn show_record(s: &mut AppState, id: crate::lineage::ProcId) {
    s.unfold_to(id);
    if s.tree.pod_view && s.engine.get(id).is_none_or(|p| p.k8s.is_none()) {
        s.tree.pod_view = false;
    }
    s.mark_tree_dirty();
    s.tree.selected = Some(RowKind::Proc(id));
}

/// `[` / `]`: the previous / next step of the story the cursor is in (the one selected in
/// the story pane, whatever the replay position); replay seeks to it. At either end of the
/// story the status line says so: another story is chosen with ↑↓, not by stepping past.
fn story_jump(s: &mut AppState, next: bool, out: &mut Vec<Control>) {
    // A move in the stories leaves an open question unanswered (it is asked again).
    s.quiz.asking = None;
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
            go_to_step(s, k, out);
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

/// ↑↓ in the story pane: the step's process selected in the tree and its event in the log;
/// guided, the replay goes to it too (as `]` does).
fn step_to(s: &mut AppState, k: usize, out: &mut Vec<Control>) {
    s.quiz.asking = None;
    if s.playback.guided && s.mode == Mode::Replay {
        return go_to_step(s, k, out);
    }
    let Some(step) = s.story.step_at(k) else {
        return;
    };
    (s.log.cursor, s.tree.select_pid) = (Some(step.seq), Some(step.pid));
    s.story.cursor = k;
}

/// To step `k`: in quiz mode, a question first when the move would reveal one of its
/// story's steps the quiz asks about.
fn go_to_step(s: &mut AppState, k: usize, out: &mut Vec<Control>) {
    if let Some(q) = question_before(s, k) {
        return ask(s, q, out);
    }
    jump_to_step(s, k, out);
}

/// The step of `k`'s story the quiz asks about that going to `k` would reveal: not asked
/// yet, its event after the position and at or before `k`'s.
fn question_before(s: &AppState, k: usize) -> Option<usize> {
    if !s.quiz.on || s.mode != Mode::Replay {
        return None;
    }
    let step = |k: usize| s.story.step_at(k);
    let to = step(k)?.seq;
    let at = s.last_seq();
    let mut range = s.story.stories.iter().scan(0, |start, st| {
        let r = *start..*start + st.steps.len();
        *start = r.end;
        Some(r)
    });
    let story = range.find(|r| r.contains(&k))?;
    story.filter(|&q| !s.quiz.answered.contains(&q)).find(|&q| {
        step(q).is_some_and(|st| {
            super::quiz::asks(st.kind) && st.seq <= to && at.is_none_or(|a| st.seq > a)
        })
    })
}

/// Opens the question on step `q`: the replay waits just before its event.
fn ask(s: &mut AppState, q: usize, out: &mut Vec<Control>) {
    let Some(seq) = s.story.step_at(q).map(|st| st.seq) else {
        return;
    };
    s.quiz.asking = Some(q);
    s.quiz.typed.clear();
    s.quiz.verdict = None;
    s.story.cursor = q;
    s.view.pane = Pane::Tree;
    s.playback.paused = true;
    out.push(Control::Pause(true));
    if s.last_seq().is_none_or(|a| a + 1 < seq) {
        out.push(Control::Seek(seq.saturating_sub(1)));
    }
    s.status.message =
        Some("quiz: type the pid or select it in the tree · Enter answers · Esc passes".into());
}

/// The answer to the open question (`None`: passed): judged once the replay shows its step.
fn answer(s: &mut AppState, guess: Option<u32>, out: &mut Vec<Control>) {
    let Some(q) = s.quiz.asking.take() else {
        return;
    };
    s.quiz.answered.insert(q);
    s.quiz.typed.clear();
    s.quiz.judging = Some((q, guess));
    s.view.pane = Pane::Story;
    jump_to_step(s, q, out);
    s.quiz_judge();
}

/// A key on an open question: a digit, Backspace, Enter (the digits typed, else the process
/// selected in the tree), Esc (pass).
fn quiz_key(s: &mut AppState, a: Action, out: &mut Vec<Control>) {
    match a {
        Action::QuizDigit(c) if s.quiz.typed.len() < 10 => s.quiz.typed.push(c),
        Action::QuizBackspace => {
            s.quiz.typed.pop();
        }
        Action::QuizAnswer => {
            let typed = s.quiz.typed.parse::<u32>().ok();
            let guess = typed.or_else(|| s.selected_process().map(|p| p.pid));
            answer(s, guess, out);
        }
        Action::QuizPass => answer(s, None, out),
        _ => {}
    }
}

/// `Q`: the quiz on (in the guided layout) or off; off, an open question is dropped.
fn toggle_quiz(s: &mut AppState) {
    if s.mode != Mode::Replay {
        s.status.message = Some("the quiz is for a replay (tracer view FILE --quiz)".into());
        return;
    }
    s.quiz.on = !s.quiz.on;
    if s.quiz.on && !s.playback.guided {
        s.guide();
    }
    if !s.quiz.on {
        s.quiz.asking = None;
    }
    s.status.message = Some(match s.quiz.on {
        true => "quiz on: ] asks before each adoption, clone and signal is shown".into(),
        false => "quiz off".into(),
    });
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

/// Across nodes: asks the app loop for the next (or previous) node, wrapping round; nothing
/// with one node or none.
fn switch_node(s: &mut AppState, next: bool) {
    let Some(n) = s.node.as_mut().filter(|n| n.of > 1) else {
        return;
    };
    n.switch_to = Some(match next {
        true => (n.at + 1) % n.of,
        false => (n.at + n.of - 1) % n.of,
    });
}
