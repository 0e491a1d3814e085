//! Where everything of a picture goes: the label column, the pod bands and their lifelines,
//! the event columns, the step list under them, and the viewBox that fits it all to a page.

use std::fmt::Write as _;

use super::{callout, short_ids, xml_text, Page, PictureError, MIN_FONT, MIN_PAGE_FONT};
use crate::lineage::{view, ProcId, Story};

/// Width of the row labels on the left.
const LABEL_W: usize = 290;
/// Width of one event column; on a page, down to [`MIN_COL_W`] to fit: the marks of two
/// neighbouring columns still clear each other (the widest, a subreaper's diamond, is 14 px),
/// and callouts that would touch are lifted (`super::callout_spots`).
pub(super) const COL_W: usize = 24;
pub(super) const MIN_COL_W: usize = 13;
/// Height of one lane.
const LANE_H: usize = 28;
/// Height of a pod band's title.
const GROUP_H: usize = 20;
/// Space between two pod bands.
const GROUP_GAP: usize = 8;
/// Room right of the last column, for the last exit's status.
const RIGHT_W: usize = 110;
/// The bottom of the legend: the lanes start here, or under the notes.
const LEGEND_END: usize = 106;
/// Baseline of the first note under the legend, and the height of one note.
pub(super) const NOTES_Y: usize = LEGEND_END + 14;
pub(super) const NOTE_H: usize = 18;
/// Height of one line of the step list.
const LINE_H: usize = 15;
/// Width of a 12 px DejaVu Sans character on average, generous.
const CHAR_W: f64 = 6.9;
/// A lifeline longer than this repeats its row's label along it.
const REPEAT_EVERY: usize = 900;
/// Least width of a picture (room for the legend and the step list); on a page it is scaled
/// down to the page's width.
const MIN_W: usize = 1200;

/// One drawn process: its lane's label and the pod it is grouped under.
pub(super) struct Row {
    /// The process drawn on it; several runs of one program when they share it
    /// (`super::share_rows`).
    pub ids: Vec<ProcId>,
    /// `namespace/name` of its pod; `None`: the host's and the runtime daemon's.
    pub group: Option<String>,
    /// `PID name [role]`.
    pub head: String,
    /// `shop/web · nginx`, `shop/web · sandbox (pause)`.
    pub sub: String,
}

/// One entry of the step list.
pub(super) enum Line {
    /// A story's title.
    Head(String),
    /// Step number and text.
    Step(usize, String),
    /// A note after the steps.
    Note(String),
}

/// The step list of `stories`: each story's title, then its numbered steps (numbers running
/// on across stories, as the callouts are numbered).
pub(super) fn step_lines(stories: &[Story]) -> Vec<Line> {
    let mut v = Vec::new();
    let mut n = 0;
    for st in stories {
        if stories.len() > 1 {
            let head = view::story_text(std::slice::from_ref(st));
            v.push(Line::Head(short_ids(
                head.lines().next().unwrap_or_default(),
            )));
        }
        for step in &st.steps {
            n += 1;
            v.push(Line::Step(
                n,
                format!("seq {} · {}", step.seq, short_ids(&step.text)),
            ));
        }
    }
    v
}

/// Width of all but the event columns: labels, the margin before the first column, the room
/// after the last.
const FIXED_W: usize = LABEL_W + 24 + RIGHT_W;

/// The width of one event column: [`COL_W`], or on a page as narrow as needed (down to
/// [`MIN_COL_W`]) for the page's width at 5% above the least readable scale.
pub(super) fn col_width(cols: usize, page: Option<Page>) -> usize {
    page.map_or(COL_W, |p| {
        (page_room(p) / cols.max(1)).clamp(MIN_COL_W, COL_W)
    })
}

/// The width the event columns have on `page` at 5% above the least readable scale.
fn page_room(p: Page) -> usize {
    (p.px().0 * MIN_FONT / MIN_PAGE_FONT * 0.95 - FIXED_W as f64).max(0.0) as usize
}

/// The width a time axis spreads `cols` events over: a page's room, else as wide as the event
/// axis would draw them (at least 900 px).
pub(super) fn time_room(cols: usize, page: Option<Page>) -> usize {
    page.map_or((cols * COL_W).max(900), page_room)
}

/// The geometry of one picture.
pub(super) struct Geo {
    cols: usize,
    col_w: usize,
    /// On a time axis: each column's offset from the first (`super::axis`).
    offsets: Option<Vec<usize>>,
    /// Each lane's centre.
    ys: Vec<usize>,
    /// Each pod band: first and last row, top and bottom.
    bands: Vec<(usize, usize, usize, usize)>,
    top: usize,
    bottom: usize,
    width: usize,
    /// The step list, laid out: (column, first baseline, wrapped lines, number).
    list: Vec<(usize, usize, Vec<String>, Option<usize>)>,
    height: usize,
}

impl Geo {
    pub(super) fn new(
        rows: &[Row],
        cols: usize,
        notes: usize,
        steps: &[Line],
        page: Option<Page>,
    ) -> Geo {
        Geo::build(rows, cols, notes, steps, page, None)
    }

    /// [`Geo::new`] on a time axis: column `i` at `offsets[i]` px from the first.
    pub(super) fn timed(
        rows: &[Row],
        offsets: Vec<usize>,
        notes: usize,
        steps: &[Line],
        page: Option<Page>,
    ) -> Geo {
        Geo::build(rows, offsets.len(), notes, steps, page, Some(offsets))
    }

    fn build(
        rows: &[Row],
        cols: usize,
        notes: usize,
        steps: &[Line],
        page: Option<Page>,
        offsets: Option<Vec<usize>>,
    ) -> Geo {
        let top = LEGEND_END + notes * NOTE_H;
        let (ys, bands, bottom) = lanes(rows, top);
        let col_w = match offsets {
            Some(_) => MIN_COL_W,
            None => col_width(cols, page),
        };
        let span = match offsets.as_ref().and_then(|o| o.last()) {
            Some(last) => last + col_w,
            None => cols.max(1) * col_w,
        };
        let width = (FIXED_W + span).max(MIN_W);
        let mut g = Geo {
            cols,
            col_w,
            offsets,
            ys,
            bands,
            top,
            bottom,
            width,
            list: Vec::new(),
            height: bottom + 16,
        };
        // Two columns of steps on a wide picture; on a page, three when that lets the
        // picture be drawn larger (a long list on a short timeline).
        let mut best = (0.0, 1);
        for ncols in 1..=3 {
            if width < ncols * 370 {
                break;
            }
            g.lay_out_steps(steps, ncols);
            let scale = page.map_or(f64::from(ncols.min(2) as u8), |p| {
                let (pw, ph) = p.px();
                (pw / g.width as f64).min(ph / g.height as f64)
            });
            if scale > best.0 {
                best = (scale, ncols);
            }
        }
        g.lay_out_steps(steps, best.1);
        g
    }

    /// Splits the step list into `ncols` columns, wrapping each step to two lines at most.
    fn lay_out_steps(&mut self, steps: &[Line], ncols: usize) {
        self.list.clear();
        if steps.is_empty() {
            return;
        }
        let col_w = (self.width - 24) / ncols;
        let chars = ((col_w as f64 - 40.0) / CHAR_W) as usize;
        let wrapped: Vec<(Vec<String>, Option<usize>)> = steps
            .iter()
            .map(|l| match l {
                Line::Head(t) => (vec![xml_text(t, chars.saturating_sub(8))], None),
                Line::Step(n, t) => (wrap2(t, chars), Some(*n)),
                Line::Note(t) => (
                    textwrap::wrap(t, chars + 3)
                        .iter()
                        .map(|l| xml_text(l, chars + 3))
                        .collect(),
                    None,
                ),
            })
            .collect();
        let total: usize = wrapped.iter().map(|(l, _)| l.len() * LINE_H + 5).sum();
        let first = self.bottom + 40;
        let (mut col, mut y) = (0, first);
        let mut end = first;
        for (lines, n) in wrapped {
            let h = lines.len() * LINE_H + 5;
            if col + 1 < ncols && y - first + h / 2 > total.div_ceil(ncols) {
                col += 1;
                y = first;
            }
            self.list.push((12 + col * col_w, y, lines, n));
            y += h;
            end = end.max(y);
        }
        self.height = end + 10;
    }

    /// The viewBox: the drawing itself, or (with a page) the page's shape around it, scaled
    /// so that it fits; an error when its text would then be under [`MIN_PAGE_FONT`] (`stories`:
    /// how many it draws, for the error's advice).
    pub(super) fn fit(&self, page: Option<Page>, stories: usize) -> Result<String, PictureError> {
        let (w, h) = (self.width as f64, self.height as f64);
        let Some(page) = page else {
            return Ok(format!("0 0 {} {}", self.width, self.height));
        };
        let (pw, ph) = page.px();
        let scale = (pw / w).min(ph / h);
        if MIN_FONT * scale < MIN_PAGE_FONT {
            return Err(PictureError::TooBig {
                stories,
                page,
                w: self.width,
                h: self.height,
                font: MIN_FONT * scale,
            });
        }
        let (vw, vh) = (pw / scale, ph / scale);
        Ok(format!(
            "{:.1} {:.1} {vw:.1} {vh:.1}",
            -(vw - w) / 2.0,
            -(vh - h) / 2.0
        ))
    }

    pub(super) fn x(&self, col: usize) -> usize {
        let at = match &self.offsets {
            Some(o) => o.get(col).or(o.last()).copied().unwrap_or_default(),
            None => col * self.col_w,
        };
        LABEL_W + 24 + at + self.col_w / 2
    }
    /// The x of a point `off` px right of the first column's (a time axis's tick).
    pub(super) fn x_off(&self, off: usize) -> usize {
        LABEL_W + 24 + off + self.col_w / 2
    }
    pub(super) fn y(&self, row: usize) -> usize {
        self.ys.get(row).copied().unwrap_or(self.top)
    }
    pub(super) fn width(&self) -> usize {
        self.width
    }
    pub(super) fn height(&self) -> usize {
        self.height
    }
    pub(super) fn right(&self) -> usize {
        match self.offsets.as_ref().and_then(|o| o.last()) {
            Some(last) => LABEL_W + 24 + last + self.col_w,
            None => LABEL_W + 24 + self.cols.max(1) * self.col_w,
        }
    }
    pub(super) fn lanes_top(&self) -> usize {
        self.top
    }
    pub(super) fn lanes_bottom(&self) -> usize {
        self.bottom
    }

    /// A band behind each pod's rows, titled with the pod, the title repeated along a wide
    /// band.
    pub(super) fn draw_groups(&self, s: &mut String, rows: &[Row]) {
        for &(first, _, top, bottom) in &self.bands {
            let title = match &rows[first].group {
                Some(g) if g.starts_with("pod ") => g.clone(),
                Some(g) => format!("pod {g}"),
                None => "host and runtime daemon".to_string(),
            };
            let _ = write!(
                s,
                "<rect class=\"band\" x=\"4\" y=\"{top}\" width=\"{}\" height=\"{}\" rx=\"4\"/>",
                self.right() + RIGHT_W / 2,
                bottom - top
            );
            for x in std::iter::once(12).chain(repeats(self.right())) {
                let _ = write!(
                    s,
                    "<text class=\"grp\" x=\"{x}\" y=\"{}\">{}</text>",
                    top + 16,
                    xml_text(&title, 60)
                );
            }
        }
    }

    /// A row's label at the left, and again along each of its lifelines (`spans`, from and to
    /// x) every [`REPEAT_EVERY`] px.
    pub(super) fn draw_label(&self, s: &mut String, row: &Row, y: usize, spans: &[(usize, usize)]) {
        let _ = write!(
            s,
            "<text class=\"pid\" x=\"12\" y=\"{}\">{}</text><text class=\"mk\" x=\"12\" y=\"{}\">{}</text>",
            y - 2,
            xml_text(&row.head, 38),
            y + 11,
            xml_text(&row.sub, 44)
        );
        let both = if row.sub.is_empty() {
            row.head.clone()
        } else {
            format!("{} · {}", row.head, row.sub)
        };
        let along = spans
            .iter()
            .flat_map(|&(start, end)| repeats(end).filter(move |&x| x > start));
        for x in along {
            let _ = write!(
                s,
                "<text class=\"rep\" x=\"{x}\" y=\"{}\">{}</text>",
                y - 5,
                xml_text(&both, 70)
            );
        }
    }

    /// The step list: each step's number in the same circle as its callout.
    pub(super) fn draw_steps(&self, s: &mut String, steps: &[Line]) {
        if steps.is_empty() {
            return;
        }
        let _ = write!(
            s,
            "<text class=\"sh\" x=\"12\" y=\"{}\">Steps (the numbers on the timeline)</text>",
            self.bottom + 20
        );
        for (i, (x, y, lines, n)) in self.list.iter().enumerate() {
            let class = match (n, &steps[i]) {
                (Some(_), _) => "sl",
                (None, Line::Note(_)) => "lg",
                (None, _) => "sh",
            };
            if let Some(n) = n {
                callout(s, *n, x + 10, y - 4);
            }
            let tx = if n.is_some() { x + 26 } else { *x };
            for (i, l) in lines.iter().enumerate() {
                let _ = write!(
                    s,
                    "<text class=\"{class}\" x=\"{tx}\" y=\"{}\">{l}</text>",
                    y + i * LINE_H
                );
            }
        }
    }
}

/// Where a label at the left is repeated: every [`REPEAT_EVERY`] px after it, while a
/// label there still has room before `to`.
fn repeats(to: usize) -> impl Iterator<Item = usize> {
    (1..)
        .map(|i| 12 + i * REPEAT_EVERY)
        .take_while(move |&x| to > 2 * REPEAT_EVERY && x + REPEAT_EVERY / 3 < to)
}

/// `text` wrapped to `chars` columns, at most two lines (the second cut with `…`), each
/// escaped.
fn wrap2(text: &str, chars: usize) -> Vec<String> {
    let lines = textwrap::wrap(text, chars.max(20));
    let mut v: Vec<String> = lines.iter().take(2).map(|l| xml_text(l, chars)).collect();
    if lines.len() > 2 {
        if let Some(last) = v.last_mut() {
            last.push('…');
        }
    }
    v
}

/// Each row's lane centre, the pod bands (first row, last row, top, bottom) and the bottom
/// of the last band, from `top` down.
#[allow(clippy::type_complexity)]
fn lanes(rows: &[Row], top: usize) -> (Vec<usize>, Vec<(usize, usize, usize, usize)>, usize) {
    let mut ys = Vec::with_capacity(rows.len());
    let mut bands = Vec::new();
    let mut y = top;
    let mut i = 0;
    while i < rows.len() {
        let first = i;
        while i < rows.len() && rows[i].group == rows[first].group {
            i += 1;
        }
        let band_top = y;
        y += GROUP_H;
        for _ in first..i {
            ys.push(y + LANE_H / 2 + 4);
            y += LANE_H;
        }
        y += 6;
        bands.push((first, i - 1, band_top, y));
        y += GROUP_GAP;
    }
    (ys, bands, y)
}
