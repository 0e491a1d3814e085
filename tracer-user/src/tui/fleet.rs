//! The fleet mode: `tracer view nats://HOST:PORT` (no node) shows the nodes table
//! ([`crate::fleet`], the one `tracer nodes` prints), read again every interval; `r` reads it
//! now, arrows and PgUp/PgDn scroll, `q` quits. [`draw_fleet`] is a pure function of what
//! was read.

use std::time::Duration;

use crossterm::event::{Event as TermEvent, KeyCode, KeyEventKind};
use ratatui::backend::TestBackend;
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph};
use ratatui::{Frame, Terminal};

use super::app::UserInput;
use super::{RealTerminal, ScreenSize, TuiError};
pub use crate::fleet::DEFAULT_WINDOW;
use crate::fleet::{self, Table};

/// What the mode shows: the last table read (or why it could not be), and how far it is
/// scrolled.
#[derive(Debug, Default)]
pub struct FleetView {
    /// The server, `nats://HOST:PORT` (its credentials hidden).
    pub server: String,
    /// The table, or the error that reading it gave (one line).
    pub table: Option<Result<Table, String>>,
    /// Lines scrolled past.
    pub scroll: u16,
}

/// Draws `v`: a title line, then each node's lines, as `tracer nodes` prints them (every
/// name from the stream escaped there).
pub fn draw_fleet(f: &mut Frame, v: &FleetView) {
    let [top, body] = Layout::vertical([Constraint::Length(1), Constraint::Min(0)]).areas(f.area());
    let when = match &v.table {
        Some(Ok(t)) => format!(
            "{} nodes at {}",
            t.nodes.len(),
            t.now.as_deref().unwrap_or("?")
        ),
        Some(Err(_)) => "cannot read the fleet".into(),
        None => "reading…".into(),
    };
    let title = format!(" {} — {when} — r: read now, q: quit", v.server);
    f.render_widget(
        Paragraph::new(title).style(Style::default().add_modifier(Modifier::REVERSED)),
        top,
    );
    let lines: Vec<Line> = match &v.table {
        Some(Ok(t)) => t
            .nodes
            .iter()
            .flat_map(|r| fleet::node_lines(r, t.window_secs))
            .map(Line::from)
            .collect(),
        Some(Err(e)) => vec![Line::from(crate::escape::escape(e).into_owned())],
        None => Vec::new(),
    };
    f.render_widget(
        Paragraph::new(lines)
            .scroll((v.scroll, 0))
            .block(Block::default().borders(Borders::NONE)),
        body,
    );
}

/// `v` drawn once at `size`, as plain text (`--screenshot`).
pub fn fleet_screenshot(v: &FleetView, size: ScreenSize) -> String {
    // TestBackend cannot fail.
    let Ok(mut t) = Terminal::new(TestBackend::new(size.cols, size.rows));
    if t.draw(|f| draw_fleet(f, v)).is_err() {
        return String::new();
    }
    super::shot::plain_text(t.backend().buffer())
}

/// The table of `server` now, read off the async runtime (it blocks).
async fn read(server: &str, window: Duration) -> Result<Table, String> {
    let s = server.to_string();
    tokio::task::spawn_blocking(move || fleet::table(&s, window).map_err(|e| e.to_string()))
        .await
        .unwrap_or_else(|_| Err("the reader stopped".into()))
}

/// What a key does in the mode: `None` to quit, else whether to read the table now.
fn key(v: &mut FleetView, ev: TermEvent) -> Option<bool> {
    let TermEvent::Key(k) = ev else {
        return Some(false);
    };
    if k.kind == KeyEventKind::Release {
        return Some(false);
    }
    match k.code {
        KeyCode::Char('q') | KeyCode::Esc => return None,
        KeyCode::Char('r') => return Some(true),
        KeyCode::Down | KeyCode::Char('j') => v.scroll = v.scroll.saturating_add(1),
        KeyCode::Up | KeyCode::Char('k') => v.scroll = v.scroll.saturating_sub(1),
        KeyCode::PageDown => v.scroll = v.scroll.saturating_add(20),
        KeyCode::PageUp => v.scroll = v.scroll.saturating_sub(20),
        _ => {}
    }
    Some(false)
}

/// Runs the mode on the terminal until the user quits: the table read every
/// [`crate::nats::heartbeat::DEFAULT_INTERVAL`], drawn after each read and each key.
pub fn run_fleet(server: &str, window: Duration) -> Result<(), TuiError> {
    super::require_terminal()?;
    let rt = super::runtime()?;
    rt.block_on(async {
        let mut term = RealTerminal::open()?;
        let mut v = FleetView {
            server: crate::nats::guard::shown(server),
            ..FleetView::default()
        };
        let mut tick = tokio::time::interval(crate::nats::heartbeat::DEFAULT_INTERVAL);
        loop {
            let now = tokio::select! {
                _ = tick.tick() => true,
                ev = term.input.next() => match ev.and_then(|ev| key(&mut v, ev)) {
                    None => return Ok(()),
                    Some(now) => now,
                },
            };
            if now {
                v.table = Some(read(server, window).await);
            }
            term.guard
                .term
                .draw(|f| draw_fleet(f, &v))
                .map_err(TuiError::draw)?;
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::{NodeRow, State};

    fn node(name: &str, state: State) -> NodeRow {
        NodeRow {
            node: name.into(),
            state,
            last_word: Some("2026-12-04T16:00:00.000000000Z".into()),
            last_word_ns: Some(1),
            interval_ms: Some(10_000),
            heartbeat: None,
            back: None,
            pods: vec![crate::fleet::PodRow {
                namespace: "default".into(),
                name: "web\x1b[2J".into(),
                containers: vec!["app".into()],
                containers_left_out: 0,
            }],
            pods_left_out: 0,
            restarts: 0,
            deaths: 1,
            ends: Vec::new(),
            error: None,
            notes: Vec::new(),
        }
    }

    #[test]
    fn the_mode_draws_what_nodes_prints_and_scrolls() {
        let t = Table {
            now: Some("2026-12-04T16:00:05.000000000Z".into()),
            window_secs: 3600,
            nodes: vec![node("a", State::Live), node("b", State::Silent)],
            not_agents: 0,
            left_out: 0,
        };
        let mut v = FleetView {
            server: "nats://h:4222".into(),
            table: Some(Ok(t)),
            scroll: 0,
        };
        let size = ScreenSize {
            cols: 100,
            rows: 20,
        };
        let shot = fleet_screenshot(&v, size);
        let lines: Vec<&str> = shot.lines().collect();
        assert!(
            lines[0].contains("nats://h:4222 — 2 nodes at 2026-12-04T16:00:05"),
            "{shot}"
        );
        assert!(lines[1].starts_with("a: live; last word"), "{shot}");
        assert!(
            shot.contains("b: silent since 2026-12-04T16:00:00.000000000Z"),
            "{shot}"
        );
        assert!(shot.contains("default/web\\33[2J: app"), "escaped: {shot}");
        assert!(!shot.contains('\x1b'));
        let down = TermEvent::Key(KeyCode::Down.into());
        assert_eq!(key(&mut v, down), Some(false));
        let scrolled = fleet_screenshot(&v, size);
        assert!(scrolled
            .lines()
            .nth(1)
            .is_some_and(|l| !l.starts_with("a: live")));
        assert_eq!(
            key(&mut v, TermEvent::Key(KeyCode::Char('r').into())),
            Some(true)
        );
        assert_eq!(key(&mut v, TermEvent::Key(KeyCode::Char('q').into())), None);
        v.table = Some(Err("cannot connect\nto x".into()));
        v.scroll = 0;
        let err = fleet_screenshot(&v, size);
        assert!(err.contains("cannot connect\\nto x"), "{err}");
    }
}
