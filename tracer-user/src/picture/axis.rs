//! The time axis (`--axis time`): x follows each event's `ts_ns`, so that a wait (a stop's
//! grace period, a restart's back-off) shows as room. Events closer than a column are set a
//! column apart (said in a note); an idle gap that would leave no room for the rest is cut, and
//! the cut is drawn with its length. Ticks are times since the first event drawn.

use std::fmt::Write as _;

use super::{layout, Col, Geo, PictureOpts};
use crate::clock::duration_text;

/// What runs across a picture.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Axis {
    /// One column per event, in seq order.
    #[default]
    Events,
    /// Time: x follows `ts_ns`.
    Time,
}

/// The least room between two events on the time axis: one narrow column.
pub(super) const MIN_GAP: usize = layout::MIN_COL_W;
/// The width a cut gap is drawn at.
const CUT_W: usize = 64;
/// A gap is cut when it is this many times longer than all the other (uncut) gaps together…
const CUT_FACTOR: u64 = 20;
/// …and at least this long (ns).
const CUT_LEAST: u64 = 1_000_000_000;
/// The least room between two tick labels.
const TICK_GAP: usize = 70;

/// A time axis laid out for a picture's columns.
pub(super) struct Timed {
    /// Each column's x offset from the first.
    offsets: Vec<usize>,
    /// Ticks: offset and label.
    ticks: Vec<(usize, String)>,
    /// Cut gaps: the offsets of the columns either side, and the time left out.
    cuts: Vec<(usize, usize, u64)>,
    /// Pixels per ns (0: too many events to draw their times in proportion).
    scale: f64,
}

impl Timed {
    /// The time axis for `cols` when `opts` asks for one (the header says how to read it:
    /// [`Timed::legend`]). `None` with a note when the recording has no times.
    pub(super) fn new(cols: &[Col], opts: &PictureOpts, notes: &mut Vec<String>) -> Option<Timed> {
        if opts.axis != Axis::Time || cols.is_empty() {
            return None;
        }
        let gaps: Vec<u64> = cols
            .windows(2)
            .map(|w| w[1].ts.saturating_sub(w[0].ts))
            .collect();
        if gaps.iter().all(|&g| g == 0) {
            notes.push(
                "--axis time: the recording has no times for these events; one column per event"
                    .to_string(),
            );
            return None;
        }
        let cut = cuts(&gaps);
        let scale = fit(&gaps, &cut, layout::time_room(cols.len(), opts.page));
        let widths: Vec<usize> = gaps
            .iter()
            .zip(&cut)
            .map(|(&dt, &c)| match c {
                true => CUT_W,
                false => ((dt as f64 * scale).round() as usize).max(MIN_GAP),
            })
            .collect();
        let offsets: Vec<usize> = std::iter::once(0)
            .chain(widths.iter().scan(0, |at, w| {
                *at += w;
                Some(*at)
            }))
            .collect();
        let mut t = Timed {
            ticks: ticks(cols, &gaps, &cut, &offsets, scale),
            cuts: (0..gaps.len())
                .filter(|&i| cut[i])
                .map(|i| (offsets[i], offsets[i + 1], gaps[i]))
                .collect(),
            offsets,
            scale,
        };
        t.ticks.retain(|tk| {
            t.cuts
                .iter()
                .all(|c| tk.0.abs_diff((c.0 + c.1) / 2) >= TICK_GAP)
        });
        Some(t)
    }

    /// How to read the axis, for the header: `time across (100 px = 1.5 s; …)`.
    pub(super) fn legend(&self) -> String {
        let mut n = if self.scale > 0.0 {
            format!(
                "time across (100 px = {}; events closer than {MIN_GAP} px set {MIN_GAP} px apart",
                duration_text((100.0 / self.scale) as u64)
            )
        } else {
            format!("time across (too many events to draw in proportion: {MIN_GAP} px apart each")
        };
        if !self.cuts.is_empty() {
            n.push_str("; ⫽ an idle gap cut, its length above");
        }
        n.push(')');
        n
    }

    /// Each column's x offset from the first.
    pub(super) fn offsets(&self) -> Vec<usize> {
        self.offsets.clone()
    }

    /// The ticks (a dotted line across the lanes, its time in the first band's title row) and
    /// the cut gaps (a dashed band across the lanes, the time left out written likewise).
    pub(super) fn draw(&self, s: &mut String, g: &Geo) {
        let (top, bottom) = (g.lanes_top(), g.lanes_bottom());
        for &(a, b, dt) in &self.cuts {
            let (x0, x1) = (g.x_off(a) + 8, g.x_off(b) - 8);
            let _ = write!(
                s,
                "<rect class=\"cut\" x=\"{x0}\" y=\"{top}\" width=\"{}\" height=\"{}\"/>\
                 <text class=\"tk\" x=\"{}\" y=\"{}\">⫽ {} cut</text>",
                x1 - x0,
                bottom - top,
                (x0 + x1) / 2,
                top + 14,
                duration_text(dt)
            );
        }
        for (off, label) in &self.ticks {
            let x = g.x_off(*off);
            let _ = write!(
                s,
                "<line class=\"tick\" x1=\"{x}\" y1=\"{top}\" x2=\"{x}\" y2=\"{bottom}\"/>\
                 <text class=\"tk\" x=\"{x}\" y=\"{}\">{label}</text>",
                top + 14
            );
        }
    }
}

/// Which gaps are cut: the longest, while it is [`CUT_FACTOR`] times longer than the other
/// uncut gaps together and at least [`CUT_LEAST`].
fn cuts(gaps: &[u64]) -> Vec<bool> {
    let mut cut = vec![false; gaps.len()];
    let mut order: Vec<usize> = (0..gaps.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(gaps[i]));
    let mut rest: u64 = gaps.iter().sum();
    for i in order {
        rest -= gaps[i];
        if gaps[i] < CUT_LEAST || gaps[i] <= rest.saturating_mul(CUT_FACTOR) {
            break;
        }
        cut[i] = true;
    }
    cut
}

/// The scale (px per ns) that spreads the uncut gaps over `room` px, each at least
/// [`MIN_GAP`]; 0 when their least widths alone fill it.
fn fit(gaps: &[u64], cut: &[bool], room: usize) -> f64 {
    let width = |scale: f64| -> f64 {
        gaps.iter()
            .zip(cut)
            .map(|(&dt, &c)| match c {
                true => CUT_W as f64,
                false => (dt as f64 * scale).max(MIN_GAP as f64),
            })
            .sum()
    };
    let room = room as f64;
    if width(0.0) >= room {
        return 0.0;
    }
    let longest = gaps.iter().zip(cut).filter(|g| !g.1).map(|g| *g.0).max();
    let (mut lo, mut hi) = (0.0, room / longest.unwrap_or(1).max(1) as f64);
    for _ in 0..60 {
        let mid = (lo + hi) / 2.0;
        if width(mid) > room {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    lo
}

/// Ticks every 1, 2 or 5 × 10ⁿ ns since the first column, at least [`TICK_GAP`] px apart at
/// `scale`; none inside a cut gap.
fn ticks(
    cols: &[Col],
    gaps: &[u64],
    cut: &[bool],
    offsets: &[usize],
    scale: f64,
) -> Vec<(usize, String)> {
    let Some(first) = cols.first().map(|c| c.ts) else {
        return Vec::new();
    };
    if scale <= 0.0 {
        return Vec::new();
    }
    let least = TICK_GAP as f64 / scale;
    let step = (0..19)
        .flat_map(|e| [1u64, 2, 5].map(|m| m * 10u64.pow(e)))
        .find(|&s| s as f64 >= least)
        .unwrap_or(u64::MAX / 4);
    let mut out: Vec<(usize, String)> = Vec::new();
    for i in (0..gaps.len()).filter(|&i| !cut[i] && gaps[i] > 0) {
        let a = cols[i].ts.saturating_sub(first);
        let b = a + gaps[i];
        let w = (offsets[i + 1] - offsets[i]) as f64;
        let mut k = a.div_ceil(step);
        while k * step <= b {
            let t = k * step;
            let off = offsets[i] + ((t - a) as f64 / gaps[i] as f64 * w) as usize;
            if out.last().is_none_or(|l| off >= l.0 + TICK_GAP) {
                let label = if t == 0 {
                    "0".to_string()
                } else {
                    format!("+{}", duration_text(t))
                };
                out.push((off, label));
            }
            k += 1;
        }
    }
    out
}
