//! The arrows of a timeline (births, CLONE_PARENT, adoptions, signals) as geometry, laid out
//! before anything is drawn: so that the step callouts can be placed off every arrowhead
//! (`super::callout_spots`), and a test can hold each arrow to its lifelines.

use std::collections::HashMap;
use std::fmt::Write as _;

use super::{xml_text, Col, Geo, Mark};
use crate::lineage::ProcId;

/// An arrowhead's length, in its line's stroke widths (the markers' `markerWidth`).
pub(super) const HEAD_STROKES: f64 = 7.0;

/// One arrow, from (`x1`, `y1`) to its head at (`x2`, `y2`).
pub(super) struct Arrow {
    /// Its style class (`birth`, `cp`, `adopt`, `sig`).
    pub class: &'static str,
    /// Its marker's id.
    pub head: &'static str,
    pub x1: usize,
    pub y1: usize,
    pub x2: usize,
    pub y2: usize,
    /// Words written beside it (a signal's name).
    pub label: Option<String>,
}

/// A box, its corners' coordinates.
#[derive(Clone, Copy, Debug)]
pub(super) struct Rect {
    pub x0: f64,
    pub y0: f64,
    pub x1: f64,
    pub y1: f64,
}

/// The stroke width of an arrow of `class` (the style sheet's).
pub(super) fn stroke(class: &str) -> f64 {
    match class {
        "cp" => 2.0,
        "sig" => 1.8,
        _ => 1.6,
    }
}

/// The box around the arrowhead of a line from (`x1`, `y1`) to (`x2`, `y2`) of stroke width
/// `sw`: the marker's triangle (10 × 10 units, its tip 1 unit past the line's end) turned
/// along the line.
pub(super) fn head_box(x1: f64, y1: f64, x2: f64, y2: f64, sw: f64) -> Rect {
    let len = HEAD_STROKES * sw;
    let (dx, dy) = (x2 - x1, y2 - y1);
    let d = dx.hypot(dy).max(1e-9);
    let (ux, uy) = (dx / d, dy / d);
    let tip = (x2 + ux * len * 0.1, y2 + uy * len * 0.1);
    let base = (x2 - ux * len * 0.9, y2 - uy * len * 0.9);
    let (px, py) = (-uy * len / 2.0, ux * len / 2.0);
    let pts = [tip, (base.0 + px, base.1 + py), (base.0 - px, base.1 - py)];
    let xs = pts.map(|p| p.0);
    let ys = pts.map(|p| p.1);
    Rect {
        x0: xs.iter().copied().fold(f64::MAX, f64::min),
        y0: ys.iter().copied().fold(f64::MAX, f64::min),
        x1: xs.iter().copied().fold(f64::MIN, f64::max),
        y1: ys.iter().copied().fold(f64::MIN, f64::max),
    }
}

/// A circle at (`cx`, `cy`) of radius `r` touches `b`.
pub(super) fn circle_hits(cx: f64, cy: f64, r: f64, b: &Rect) -> bool {
    let nx = cx.clamp(b.x0, b.x1);
    let ny = cy.clamp(b.y0, b.y1);
    (cx - nx).hypot(cy - ny) < r
}

impl Arrow {
    /// The box around its head.
    pub(super) fn head_box(&self) -> Rect {
        let f = |v: usize| v as f64;
        head_box(
            f(self.x1),
            f(self.y1),
            f(self.x2),
            f(self.y2),
            stroke(self.class),
        )
    }

    /// Where its label's baseline starts: beside its middle, right of it.
    fn label_at(&self) -> (usize, usize) {
        ((self.x1 + self.x2) / 2 + 4, (self.y1 + self.y2) / 2 + 4)
    }

    /// The box its label takes (12 px text, 7 px a character at most).
    pub(super) fn label_box(&self) -> Option<Rect> {
        let n = self.label.as_ref()?.chars().count().min(41) as f64;
        let (x, y) = self.label_at();
        let (x, y) = (x as f64, y as f64);
        Some(Rect {
            x0: x,
            y0: y - 11.0,
            x1: x + n * 7.0,
            y1: y + 3.0,
        })
    }

    pub(super) fn draw(&self, s: &mut String) {
        let Arrow {
            class,
            head,
            x1,
            y1,
            x2,
            y2,
            ..
        } = self;
        let _ = write!(
            s,
            "<line class=\"{class}\" x1=\"{x1}\" y1=\"{y1}\" x2=\"{x2}\" y2=\"{y2}\" marker-end=\"url(#{head})\"/>"
        );
        if let Some(l) = &self.label {
            let (x, y) = self.label_at();
            let _ = write!(
                s,
                "<text class=\"sgl\" x=\"{x}\" y=\"{y}\">{}</text>",
                xml_text(l, 40)
            );
        }
    }
}

/// The lineage's arrows: births (from the parent; CLONE_PARENT's in its colour) and adoptions
/// (from the orphan to its new parent); signals are `super::signals::arrows`. An arrow whose
/// other end has no lane (cut from a picture too large) comes from just above.
pub(super) fn arrows(g: &Geo, cols: &[Col], lane_of: &HashMap<ProcId, usize>) -> Vec<Arrow> {
    let mut v = Vec::new();
    for (i, c) in cols.iter().enumerate() {
        let Some(&lane) = lane_of.get(&c.proc) else {
            continue;
        };
        let (x, y) = (g.x(i), g.y(lane));
        let lane_y = |p: Option<ProcId>| {
            p.and_then(|p| lane_of.get(&p))
                .map_or(y.saturating_sub(16), |&l| g.y(l))
        };
        // An arrow stops short of the lifeline it points at.
        let short = |to: usize, from: usize| if from < to { to - 5 } else { to + 5 };
        let (class, head, y1, y2) = match &c.mark {
            Mark::Birth {
                from, clone_parent, ..
            } => {
                let fy = lane_y(*from);
                match clone_parent {
                    true => ("cp", "aho", fy, short(y, fy)),
                    false => ("birth", "ahk", fy, short(y, fy)),
                }
            }
            Mark::Adopted { from } => {
                let py = lane_y(*from);
                ("adopt", "ahb", y, short(py, y))
            }
            _ => continue,
        };
        v.push(Arrow {
            class,
            head,
            x1: x,
            y1,
            x2: x,
            y2,
            label: None,
        });
    }
    v
}
