//! One frame of the viewer as plain text, without a terminal: what `--screenshot COLSxROWS`
//! prints for the docs, and what tests look at.

use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::Terminal;

use super::source::{opening, ReplayOpts};
use super::state::{AppState, HIGHLIGHT_MS};
use super::{draw, Recording};

/// A screen size, `COLSxROWS` on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScreenSize {
    /// Columns.
    pub cols: u16,
    /// Rows.
    pub rows: u16,
}

impl std::str::FromStr for ScreenSize {
    type Err = String;

    /// `160x45`: 20 to 1000 columns, 5 to 1000 rows.
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("{s:?} is not COLSxROWS (like 160x45)");
        let (c, r) = s.split_once(['x', 'X']).ok_or_else(bad)?;
        let cols: u16 = c.trim().parse().map_err(|_| bad())?;
        let rows: u16 = r.trim().parse().map_err(|_| bad())?;
        if !(20..=1000).contains(&cols) || !(5..=1000).contains(&rows) {
            return Err(format!(
                "{s:?}: a screenshot is 20 to 1000 columns by 5 to 1000 rows"
            ));
        }
        Ok(ScreenSize { cols, rows })
    }
}

/// The viewer's first frame on `rec` opened with `opts` (guided: at the first story step),
/// at `size`, as plain text: one line per row, trailing blanks trimmed, no colours.
pub fn screenshot(rec: Recording, opts: &ReplayOpts, size: ScreenSize) -> String {
    screenshot_node(rec, opts, size, None)
}

/// [`screenshot`] of one node of several (`node` says which, on the status bar).
pub fn screenshot_node(
    rec: Recording,
    opts: &ReplayOpts,
    size: ScreenSize,
    node: Option<super::state::NodePlace>,
) -> String {
    let mut state = super::replay_state(rec.title, rec.pod.clone(), &rec.seed, opts);
    state.node = node;
    for m in opening(rec.events, &rec.seed, opts, rec.pod.as_ref()) {
        state.ingest(m);
    }
    still(&mut state, size)
}

/// `state` drawn once at `size`, as plain text; the clock past every highlight.
pub fn still(state: &mut AppState, size: ScreenSize) -> String {
    state.view.size = (size.cols, size.rows);
    state.view.color = false;
    state.set_now(HIGHLIGHT_MS * 30);
    state.refresh();
    // TestBackend cannot fail.
    let Ok(mut t) = Terminal::new(TestBackend::new(size.cols, size.rows));
    if t.draw(|f| draw(f, state)).is_err() {
        return String::new();
    }
    plain_text(t.backend().buffer())
}

/// The buffer's symbols row by row (a wide character's second cell is skipped).
pub(super) fn plain_text(b: &Buffer) -> String {
    let mut out = String::new();
    for y in 0..b.area.height {
        let mut line = String::new();
        let mut skip = 0;
        for x in 0..b.area.width {
            if skip > 0 {
                skip -= 1;
                continue;
            }
            let sym = b[(x, y)].symbol();
            line.push_str(sym);
            skip = unicode_width(sym).saturating_sub(1);
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn unicode_width(s: &str) -> usize {
    ratatui::text::Span::raw(s).width()
}
