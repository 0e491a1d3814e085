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
        let offsets = place(&gaps, &cut, scale);
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
                "time across (100 px = {}; events under {MIN_GAP} px apart pushed right",
                duration_text((100.0 / self.scale) as u64)
            )
        } else {
            format!("time across (too many events to draw in proportion: {MIN_GAP} px apart each")
        };
        if !self.cuts.is_empty() {
            n.push_str("; ⫽ an idle gap cut, its length above, ticks from its end");
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

/// Each column's offset at `scale` (px per ns): where its time puts it (the cut gaps taken
/// out, each drawn [`CUT_W`] wide), or [`MIN_GAP`] after the column before when that is
/// further right. A burst pushes the columns after it right only until a wait lets them
/// catch up with their times: elsewhere x is time.
fn place(gaps: &[u64], cut: &[bool], scale: f64) -> Vec<usize> {
    let mut out = Vec::with_capacity(gaps.len() + 1);
    out.push(0);
    let (mut shown, mut cut_px, mut last) = (0u64, 0usize, 0usize);
    for (&dt, &c) in gaps.iter().zip(cut) {
        let least = if c {
            cut_px += CUT_W;
            last + CUT_W
        } else {
            shown += dt;
            last + MIN_GAP
        };
        let at = ((shown as f64 * scale).round() as usize + cut_px).max(least);
        out.push(at);
        last = at;
    }
    out
}

/// The largest scale (px per ns) whose [`place`]ment fits `room` px; 0 when the least gaps
/// alone fill it.
fn fit(gaps: &[u64], cut: &[bool], room: usize) -> f64 {
    let width = |scale: f64| place(gaps, cut, scale).last().copied().unwrap_or_default();
    if width(0.0) >= room {
        return 0.0;
    }
    let shown: u64 = gaps.iter().zip(cut).filter(|g| !g.1).map(|g| *g.0).sum();
    let (mut lo, mut hi) = (0.0, room as f64 / shown.max(1) as f64);
    for _ in 0..50 {
        let mid = (lo + hi) / 2.0;
        if width(mid) > room {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    lo
}

/// Ticks every 1, 2 or 5 × 10ⁿ ns since the first column (after a cut gap: since its end), at
/// least [`TICK_GAP`] px apart at `scale`; none inside a cut gap.
fn ticks(
    cols: &[Col],
    gaps: &[u64],
    cut: &[bool],
    offsets: &[usize],
    scale: f64,
) -> Vec<(usize, String)> {
    if cols.is_empty() || scale <= 0.0 {
        return Vec::new();
    }
    // A little over the least gap: rounding never drops every other tick.
    let least = 1.25 * TICK_GAP as f64 / scale;
    let step = (0..19)
        .flat_map(|e| [1u64, 2, 5].map(|m| m * 10u64.pow(e)))
        .find(|&s| s as f64 >= least)
        .unwrap_or(u64::MAX / 4);
    let mut out: Vec<(usize, String)> = Vec::new();
    // The time since the first column, or since the end of the last cut: ticks count from
    // there (a cut's own label says what it left out).
    let mut since = 0u64;
    for i in 0..gaps.len() {
        let a = since;
        since += gaps[i];
        if cut[i] {
            since = 0;
            continue;
        }
        if gaps[i] == 0 {
            continue;
        }
        let b = since;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lineage::Engine;
    use crate::picture::svg;
    use crate::synth::{exit, fork};

    const MS: u64 = 1_000_000;

    #[test]
    fn x_is_time_except_where_a_burst_pushes_columns_right() {
        // 1 s, a burst of two 1 ms gaps, then a 2 s wait (a grace period).
        let gaps = [1000 * MS, MS, MS, 2000 * MS];
        let cut = cuts(&gaps);
        assert_eq!(cut, [false; 4], "nothing cut: the wait is what shows");
        let scale = fit(&gaps, &cut, 600);
        let at = place(&gaps, &cut, scale);
        assert!(at[4] <= 600 && at[4] >= 590, "{at:?}");
        // The burst is spread to the least gap, and the column after the wait is back at its
        // time: its offset is its time at the scale.
        assert_eq!(at[2] - at[1], MIN_GAP);
        assert_eq!(at[3] - at[2], MIN_GAP);
        let t4 = gaps.iter().sum::<u64>() as f64 * scale;
        assert_eq!(at[4], t4.round() as usize, "{at:?}");
        // The wait is two thirds of the time and takes two thirds of the width, give or take
        // the burst's spread.
        let wait = (at[4] - at[3]) as f64 / at[4] as f64;
        assert!((0.6..0.7).contains(&wait), "{wait}");
    }

    #[test]
    fn only_a_gap_that_would_leave_no_room_is_cut() {
        assert_eq!(
            cuts(&[MS, MS, 600_000 * MS, MS]),
            [false, false, true, false]
        );
        assert_eq!(cuts(&[100 * MS, 200 * MS, 2000 * MS]), [false; 3]);
        // Short gaps are never cut, however uneven.
        assert_eq!(cuts(&[1, 900 * MS]), [false; 2]);
    }

    fn timed(evs: Vec<crate::event::Event>, ts: &[u64]) -> String {
        let mut e = Engine::new();
        for ((seq, mut ev), &t) in (1..).zip(evs).zip(ts) {
            ev.seq = seq;
            ev.ts_ns = t;
            e.apply(&ev);
        }
        let opts = PictureOpts {
            all: true,
            axis: Axis::Time,
            ..Default::default()
        };
        svg(&e, &[], &opts, "t").unwrap()
    }

    #[test]
    fn a_cut_gap_is_drawn_with_its_length_and_ticks_tell_the_time() {
        let evs = vec![fork(100, 200), exit(200, 0), fork(100, 300), exit(300, 0)];
        let pic = timed(evs, &[MS, 2 * MS, 600_000 * MS, 601 * MS + 600_000 * MS]);
        assert_eq!(pic.matches("<rect class=\"cut\"").count(), 1, "{pic}");
        assert!(pic.contains(">⫽ 9 min 59 s cut</text>"), "{pic}");
        assert!(pic.contains("⫽ an idle gap cut"), "{pic}");
        // Ticks count from the cut's end, evenly: x is time there.
        let tick = |label: &str| -> usize {
            let end = pic.find(&format!("\">{label}</text>")).expect(label);
            let x = pic[..end].rsplit("class=\"tk\" x=\"").next().unwrap();
            x.split('"').next().unwrap().parse().unwrap()
        };
        let (t1, t2, t6) = (tick("+100 ms"), tick("+200 ms"), tick("+600 ms"));
        assert!((t6 - t1).abs_diff(5 * (t2 - t1)) <= 2, "{t1} {t2} {t6}");
        assert!(pic.contains("time across (100 px = "), "{pic}");
    }

    #[test]
    fn a_recording_without_times_keeps_one_column_per_event_and_says_so() {
        let evs = vec![fork(100, 200), exit(200, 0)];
        let pic = timed(evs, &[0, 0]);
        assert!(pic.contains("the recording has no times"), "{pic}");
        assert!(pic.contains("seq across"), "{pic}");
    }
}
