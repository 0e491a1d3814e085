//! Input → [`Action`]. Keys depend only on the mode (search typing, help shown), never on
//! the terminal.

use crossterm::event::{
    Event as TermEvent, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEventKind,
};

use super::state::AppState;

/// What a key, mouse or resize event asks the viewer to do.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// q: quit.
    Quit,
    /// ↑ / k: previous row.
    Up,
    /// ↓ / j: next row.
    Down,
    /// PgUp: a page up.
    PageUp,
    /// PgDn: a page down.
    PageDown,
    /// Home: first row.
    Home,
    /// End: last row.
    EndRow,
    /// ← / h: fold, or go to the parent.
    Left,
    /// → / l: unfold, or go to the first child.
    Right,
    /// Enter: focus the subtree (tree), jump to the step's event (story).
    Enter,
    /// Esc / Backspace: close help, cancel search, leave the focus, follow the log tail.
    Back,
    /// /: start a search.
    SearchStart,
    /// A character typed into the search.
    SearchChar(char),
    /// Backspace in the search.
    SearchBackspace,
    /// Enter: run the search.
    SearchConfirm,
    /// Esc: leave the search.
    SearchCancel,
    /// n: next match.
    SearchNext,
    /// N: previous match.
    SearchPrev,
    /// t: show threads.
    ToggleThreads,
    /// T: hide threads everywhere (log lines and tree rows).
    HideThreads,
    /// L: show / hide the event log.
    ToggleLog,
    /// m: scroll the explanation by a page (back to its start past the end).
    MoreWhy,
    /// Tree ↔ pods → containers → processes.
    TogglePods,
    /// x: show exited processes.
    ToggleExited,
    /// s: show the story pane.
    ToggleStory,
    /// ?: help.
    ToggleHelp,
    /// e: explain the selected story step.
    ToggleExplain,
    /// z: the focused pane fills the screen.
    ToggleZoom,
    /// <: scroll the tree left.
    ScrollLeft,
    /// >: scroll the tree right.
    ScrollRight,
    /// f: log shows the selected subtree only.
    ToggleLogFilter,
    /// c: log lines with their time of day (strace -tt), from the recording's clock.
    ToggleLogTime,
    /// Tab: next pane.
    NextPane,
    /// Space: pause / resume.
    TogglePause,
    /// w: live, not recording: write what the view holds to a trace file.
    SaveWindow,
    /// .: one event forward.
    StepForward,
    /// ,: one event back.
    StepBack,
    /// [: previous story step.
    PrevStoryStep,
    /// }: across nodes, the next node holding the pod or namespace.
    NextNode,
    /// {: across nodes, the previous one.
    PrevNode,
    /// ]: next story step.
    NextStoryStep,
    /// +: replay faster.
    Faster,
    /// -: replay slower.
    Slower,
    /// g: replay start (live: first row).
    Start,
    /// G: replay end (live: last row).
    End,
    /// Mouse wheel at (column, row): scrolls the pane under the pointer.
    Scroll {
        /// Wheel up (else down).
        up: bool,
        /// Column.
        col: u16,
        /// Row.
        row: u16,
    },
    /// Left click at (column, row): focuses that pane (and selects the tree row).
    Click {
        /// Column.
        col: u16,
        /// Row.
        row: u16,
    },
    /// Q: replay, quiz mode on / off (guided).
    ToggleQuiz,
    /// A digit of the quiz's answer.
    QuizDigit(char),
    /// Backspace in the quiz's answer.
    QuizBackspace,
    /// Enter on a question: answer with the digits typed, else the process selected.
    QuizAnswer,
    /// Esc on a question: pass (the answer is shown, not scored right).
    QuizPass,
    /// The terminal was resized to (columns, rows).
    Resize(u16, u16),
}

/// Every key, for the help overlay: (keys, what).
pub const KEY_HELP: &[(&str, &str)] = &[
    ("↑/k ↓/j", "select (in the focused pane)"),
    ("PgUp PgDn Home End", "page / first / last"),
    ("←/h →/l", "fold / unfold (or go to parent / child)"),
    (
        "Enter",
        "tree: focus subtree · story: jump to the step's event",
    ),
    (
        "Esc Backspace",
        "leave focus / search / help; log follows the tail",
    ),
    ("/", "search name, pid, container id, pod (Enter, Esc)"),
    ("n N", "next / previous match"),
    (
        "t T p",
        "thread rows · T hides threads in log and tree · pods",
    ),
    ("x", "show / hide exited (live drops them 30 s after exit)"),
    ("s", "story pane (container births, step by step)"),
    (
        "e m z < >",
        "explain the step · m more · zoom · scroll the tree",
    ),
    (
        "f L c",
        "event log: all / subtree only · hide / show · c: time (-tt)",
    ),
    ("Tab", "focus next pane (tree, story, log)"),
    (
        "space w",
        "pause (live still records) · w: save view to a file",
    ),
    (". ,", "replay: step one event forward / back"),
    (
        "[ ] Q",
        "previous / next step of the selected story · Q quiz",
    ),
    ("+ - { }", "replay speed ×2 / ÷2 · { } previous / next node"),
    ("g G", "replay: start / end (live: first / last row)"),
    ("mouse", "wheel scrolls the pane under it; click selects"),
    ("?", "this help"),
    ("q Ctrl-C", "quit"),
];

/// Maps a terminal event to an action (`None`: ignored).
pub fn action_for(ev: &TermEvent, s: &AppState) -> Option<Action> {
    match ev {
        TermEvent::Key(k) => key_action(k, s),
        TermEvent::Mouse(m) => match m.kind {
            MouseEventKind::ScrollUp => Some(Action::Scroll {
                up: true,
                col: m.column,
                row: m.row,
            }),
            MouseEventKind::ScrollDown => Some(Action::Scroll {
                up: false,
                col: m.column,
                row: m.row,
            }),
            MouseEventKind::Down(crossterm::event::MouseButton::Left) => Some(Action::Click {
                col: m.column,
                row: m.row,
            }),
            _ => None,
        },
        TermEvent::Resize(w, h) => Some(Action::Resize(*w, *h)),
        _ => None,
    }
}

/// The action a key asks for in state `s` (keys mean other things while searching).
pub fn key_action(k: &KeyEvent, s: &AppState) -> Option<Action> {
    if k.kind == KeyEventKind::Release {
        return None;
    }
    let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
    if ctrl && matches!(k.code, KeyCode::Char('c')) {
        return Some(Action::Quit);
    }
    if s.search.input.is_some() {
        return match k.code {
            KeyCode::Enter => Some(Action::SearchConfirm),
            KeyCode::Esc => Some(Action::SearchCancel),
            KeyCode::Backspace => Some(Action::SearchBackspace),
            KeyCode::Char(c) if !ctrl => Some(Action::SearchChar(c)),
            _ => None,
        };
    }
    if s.quiz.asking.is_some() {
        match k.code {
            KeyCode::Char(c) if c.is_ascii_digit() && !ctrl => return Some(Action::QuizDigit(c)),
            KeyCode::Backspace => return Some(Action::QuizBackspace),
            KeyCode::Enter => return Some(Action::QuizAnswer),
            KeyCode::Esc => return Some(Action::QuizPass),
            _ => {}
        }
    }
    if s.view.show_help {
        return match k.code {
            KeyCode::Char('q') => Some(Action::Quit),
            _ => Some(Action::ToggleHelp),
        };
    }
    Some(match k.code {
        KeyCode::Char('q') => Action::Quit,
        KeyCode::Up | KeyCode::Char('k') => Action::Up,
        KeyCode::Down | KeyCode::Char('j') => Action::Down,
        KeyCode::PageUp => Action::PageUp,
        KeyCode::PageDown => Action::PageDown,
        KeyCode::Home => Action::Home,
        KeyCode::End => Action::EndRow,
        KeyCode::Left | KeyCode::Char('h') => Action::Left,
        KeyCode::Right | KeyCode::Char('l') => Action::Right,
        KeyCode::Enter => Action::Enter,
        KeyCode::Esc | KeyCode::Backspace => Action::Back,
        KeyCode::Tab | KeyCode::BackTab => Action::NextPane,
        KeyCode::Char('/') => Action::SearchStart,
        KeyCode::Char('n') => Action::SearchNext,
        KeyCode::Char('N') => Action::SearchPrev,
        KeyCode::Char('t') => Action::ToggleThreads,
        KeyCode::Char('T') => Action::HideThreads,
        KeyCode::Char('L') => Action::ToggleLog,
        KeyCode::Char('m') => Action::MoreWhy,
        KeyCode::Char('p') => Action::TogglePods,
        KeyCode::Char('x') => Action::ToggleExited,
        KeyCode::Char('s') => Action::ToggleStory,
        KeyCode::Char('f') => Action::ToggleLogFilter,
        KeyCode::Char('c') => Action::ToggleLogTime,
        KeyCode::Char('?') => Action::ToggleHelp,
        KeyCode::Char('e') => Action::ToggleExplain,
        KeyCode::Char('z') => Action::ToggleZoom,
        KeyCode::Char('<') => Action::ScrollLeft,
        KeyCode::Char('>') => Action::ScrollRight,
        KeyCode::Char(' ') => Action::TogglePause,
        KeyCode::Char('w') => Action::SaveWindow,
        KeyCode::Char('.') => Action::StepForward,
        KeyCode::Char(',') => Action::StepBack,
        KeyCode::Char('[') => Action::PrevStoryStep,
        KeyCode::Char(']') => Action::NextStoryStep,
        KeyCode::Char('}') => Action::NextNode,
        KeyCode::Char('{') => Action::PrevNode,
        KeyCode::Char('+') | KeyCode::Char('=') => Action::Faster,
        KeyCode::Char('-') | KeyCode::Char('_') => Action::Slower,
        KeyCode::Char('g') => Action::Start,
        KeyCode::Char('G') => Action::End,
        KeyCode::Char('Q') => Action::ToggleQuiz,
        _ => return None,
    })
}
