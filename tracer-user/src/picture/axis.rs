//! The time axis (`--axis time`): the room between two events is the time between them, so
//! that a wait (a stop's grace period, a restart's back-off) shows as room, labelled with its
//! length. Events closer than a column are set a column apart (the header says so); an idle
//! gap that would leave no room for the rest is cut, and the cut is drawn with its length.

use std::fmt::Write as _;

use super::{layout, Col, Geo, PictureOpts};
use crate::clock::duration_text;

/// What runs across a picture.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Axis {
    /// One column per event, in seq order.
    #[default]
    Events,
    /// Time: the room between two events is the time between them.
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
/// The least width of a wait that gets its length written over it.
const LABEL_W: usize = 56;

/// A time axis laid out for a picture's columns.
pub(super) struct Timed {
    /// Each column's x offset from the first.
    offsets: Vec<usize>,
    /// The waits wide enough to label: the offsets of the columns either side, the time.
    waits: Vec<(usize, usize, u64)>,
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
        let between = |i: usize| (offsets[i], offsets[i + 1], gaps[i]);
        Some(Timed {
            waits: (0..gaps.len())
                .filter(|&i| !cut[i] && offsets[i + 1] - offsets[i] >= LABEL_W)
                .map(between)
                .collect(),
            cuts: (0..gaps.len()).filter(|&i| cut[i]).map(between).collect(),
            offsets,
            scale,
        })
    }

    /// How to read the axis, for the header: `time across (100 px = 1.5 s; …)`.
    pub(super) fn legend(&self) -> String {
        let mut n = if self.scale > 0.0 {
            format!(
                "time across (100 px = {}, waits labelled; events under {MIN_GAP} px apart spread",
                duration_text((100.0 / self.scale) as u64)
            )
        } else {
            format!("time across (too many events to draw in proportion: {MIN_GAP} px apart each")
        };
        if !self.cuts.is_empty() {
            n.push_str("; ⫽ an idle gap cut short");
        }
        n.push(')');
        n
    }

    /// Each column's x offset from the first.
    pub(super) fn offsets(&self) -> Vec<usize> {
        self.offsets.clone()
    }

    /// Each labelled wait (a bracket from one column to the next in the first band's title
    /// row, its length over it) and each cut gap (a dashed band across the lanes, the time it
    /// left out written likewise).
    pub(super) fn draw(&self, s: &mut String, g: &Geo) {
        let (top, bottom) = (g.lanes_top(), g.lanes_bottom());
        let y = top + 10;
        for &(a, b, dt) in &self.cuts {
            let (x0, x1) = (g.x_off(a) + 8, g.x_off(b) - 8);
            let _ = write!(
                s,
                "<rect class=\"cut\" x=\"{x0}\" y=\"{top}\" width=\"{}\" height=\"{}\"/>\
                 <text class=\"tk\" x=\"{}\" y=\"{}\">⫽ {} cut</text>",
                x1 - x0,
                bottom - top,
                (x0 + x1) / 2,
                y + 4,
                duration_text(dt)
            );
        }
        for &(a, b, dt) in &self.waits {
            let (x0, x1) = (g.x_off(a) + 2, g.x_off(b) - 2);
            let _ = write!(
                s,
                "<path class=\"wait\" d=\"M{x0},{}V{y}H{x1}V{}\"/>\
                 <text class=\"tk\" x=\"{}\" y=\"{}\">{}</text>",
                y + 4,
                y + 4,
                (x0 + x1) / 2,
                y + 4,
                duration_text(dt)
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

/// Each column's offset at `scale` (px per ns): the room before it is the time since the
/// column before, at least [`MIN_GAP`]; a cut gap is [`CUT_W`].
fn place(gaps: &[u64], cut: &[bool], scale: f64) -> Vec<usize> {
    let mut out = Vec::with_capacity(gaps.len() + 1);
    let mut at = 0;
    out.push(at);
    for (&dt, &c) in gaps.iter().zip(cut) {
        at += match c {
            true => CUT_W,
            false => ((dt as f64 * scale).round() as usize).max(MIN_GAP),
        };
        out.push(at);
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
    let longest = gaps.iter().zip(cut).filter(|g| !g.1).map(|g| *g.0).max();
    let (mut lo, mut hi) = (0.0, room as f64 / longest.unwrap_or(1).max(1) as f64);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lineage::Engine;
    use crate::picture::svg;
    use crate::synth::{exit, fork};

    const MS: u64 = 1_000_000;

    #[test]
    fn the_room_between_two_events_is_the_time_between_them() {
        // 1 s, a burst of two 1 ms gaps, then a 2 s wait (a grace period).
        let gaps = [1000 * MS, MS, MS, 2000 * MS];
        let cut = cuts(&gaps);
        assert_eq!(cut, [false; 4], "nothing cut: the wait is what shows");
        let scale = fit(&gaps, &cut, 600);
        let at = place(&gaps, &cut, scale);
        assert!(at[4] <= 600 && at[4] >= 590, "{at:?}");
        // The burst is spread to the least gap; each wait is its time at the scale, the 2 s
        // one twice the 1 s one.
        assert_eq!(at[2] - at[1], MIN_GAP);
        assert_eq!(at[3] - at[2], MIN_GAP);
        assert_eq!(at[1], (1000.0 * MS as f64 * scale).round() as usize);
        assert!((at[4] - at[3]).abs_diff(2 * at[1]) <= 1, "{at:?}");
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
    fn a_cut_gap_and_a_wait_are_drawn_with_their_length() {
        let evs = vec![fork(100, 200), exit(200, 0), fork(100, 300), exit(300, 0)];
        let pic = timed(evs, &[MS, 2 * MS, 600_000 * MS, 601 * MS + 600_000 * MS]);
        assert_eq!(pic.matches("<rect class=\"cut\"").count(), 1, "{pic}");
        assert!(pic.contains(">⫽ 9 min 59 s cut</text>"), "{pic}");
        assert!(pic.contains("⫽ an idle gap cut short"), "{pic}");
        // The wait after the cut is written over its room.
        assert!(pic.contains(">601 ms</text>"), "{pic}");
        assert_eq!(pic.matches("<path class=\"wait\"").count(), 1, "{pic}");
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
