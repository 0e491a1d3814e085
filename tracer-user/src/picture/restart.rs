//! A runtime daemon's restart on the timeline: the time the daemon was down as a band across
//! every lane, its lifeline broken at the old pid's exit and resumed under the new pid (a
//! dashed line from one to the other), and each process that lived on outlined across the
//! band, so a trainee sees the shims and containers run through the gap.

use std::collections::HashMap;
use std::fmt::Write as _;

use super::layout::Geo;
use super::{xml_text, Col};
use crate::export::PidIndex;
use crate::lineage::restart::RuntimeRestart;
use crate::lineage::{Engine, ProcId, Story};

/// The restart's own marks, in a `<style>` of their own.
const STYLE: &str = "<style>.rgap{fill:#fdf1e6;stroke:#e6550d;stroke-dasharray:4 3}\
.rbreak{stroke:#e6550d;stroke-width:2.5;stroke-dasharray:6 4;fill:none}\
.rsurv{stroke:#e6550d;stroke-width:11;stroke-opacity:.28;stroke-linecap:round}\
.rl{font-size:12px;font-weight:bold;fill:#a63603;paint-order:stroke;stroke:#fff;stroke-width:3px}</style>";

/// The runtime restarts among `stories`.
fn restarts(stories: &[Story]) -> impl Iterator<Item = &RuntimeRestart> {
    stories.iter().filter_map(|s| s.runtime_restart.as_deref())
}

/// The legend's line for a picture that draws a restart.
pub(super) fn notes(stories: &[Story]) -> Vec<String> {
    restarts(stories)
        .take(1)
        .flat_map(|_| {
            [
                "Runtime restart: the shaded band is the time the daemon was down; its lifeline \
                 breaks at the old pid's exit and resumes (dashed) under the new pid;",
                "the outlined lifelines crossing the band lived on through it, with the same pid \
                 and the same parent.",
            ]
        })
        .map(String::from)
        .collect()
}

/// Draws every restart of `stories` before the lanes: the lifelines and marks stay on top.
pub(super) fn draw(
    s: &mut String,
    e: &Engine,
    g: &Geo,
    stories: &[Story],
    cols: &[Col],
    lane_of: &HashMap<ProcId, usize>,
) {
    let mut styled = false;
    let index = PidIndex::new(e);
    for r in restarts(stories) {
        let old = index.at(e, r.old_pid, r.exit_seq);
        let new = index.at(e, r.new_pid, r.seq);
        let at = |id: Option<ProcId>, seq: u64| {
            cols.iter().position(|c| Some(c.proc) == id && c.seq >= seq)
        };
        let (Some(i1), Some(i2)) = (at(old, r.exit_seq), at(new, 0)) else {
            continue;
        };
        let lane = |id: Option<ProcId>| id.and_then(|id| lane_of.get(&id)).map(|&l| g.y(l));
        let (Some(y1), Some(y2)) = (lane(old), lane(new)) else {
            continue;
        };
        if !styled {
            s.push_str(STYLE);
            styled = true;
        }
        // The band: every column from the old daemon's end to the new one's start (the
        // survivors' steps at the exit among them).
        let first = cols.iter().position(|c| c.seq >= r.exit_seq).unwrap_or(i1);
        let last = cols.iter().rposition(|c| c.seq <= r.seq).unwrap_or(i2);
        let (x1, x2) = (g.x(first) - 6, g.x(last.max(first)) + 6);
        band(s, g, r, x1, x2);
        let _ = write!(
            s,
            "<path class=\"rbreak\" data-restart=\"{} {}\" d=\"M{},{y1}L{},{y2}\"/>",
            r.old_pid,
            r.new_pid,
            g.x(i1),
            g.x(i2)
        );
        for sv in &r.survivors {
            let Some(y) = lane(index.at(e, sv.pid, r.exit_seq)) else {
                continue;
            };
            let _ = write!(
                s,
                "<line class=\"rsurv\" data-survivor=\"{}\" x1=\"{x1}\" y1=\"{y}\" x2=\"{x2}\" y2=\"{y}\"/>",
                sv.pid
            );
        }
    }
}

/// The band across every lane from the old daemon's exit to the new one's start, labelled.
fn band(s: &mut String, g: &Geo, r: &RuntimeRestart, x1: usize, x2: usize) {
    let (top, bottom) = (g.lanes_top(), g.lanes_bottom());
    let label = format!(
        "{} down: {} → {} ({} lived on)",
        r.daemon,
        r.old_pid,
        r.new_pid,
        r.survivors.len()
    );
    // Written leftwards from the band when the band is in the right half.
    let (x, anchor) = if x1 > g.width() / 2 {
        (x1 - 4, "end")
    } else {
        (x2 + 4, "start")
    };
    let _ = write!(
        s,
        "<rect class=\"rgap\" x=\"{x1}\" y=\"{top}\" width=\"{}\" height=\"{}\"/>\
         <text class=\"rl\" text-anchor=\"{anchor}\" x=\"{x}\" y=\"{}\">{}</text>",
        x2 - x1,
        bottom.saturating_sub(top),
        top + 14,
        xml_text(&label, 80)
    );
}

/// The HTML handout's survivors section: every process that lived on (pid, role, container,
/// its parent before the daemon's exit and after the new daemon's start, its recorded
/// cgroup), then what the restart cost.
pub(super) fn survivors_table(s: &mut String, r: &RuntimeRestart) {
    let _ = write!(
        s,
        "<h3>What lived on through the restart ({} → {})</h3><table class=\"surv\">\
         <tr><th>pid</th><th>name</th><th>role</th><th>container</th><th>parent before</th>\
         <th>parent after</th><th>cgroup (recorded)</th></tr>",
        r.old_pid, r.new_pid
    );
    let t = |x: &str| xml_text(x, 120);
    for sv in &r.survivors {
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            sv.pid,
            t(&sv.name),
            t(sv.role.as_deref().unwrap_or("?")),
            t(sv.container_id.as_deref().unwrap_or("?")),
            sv.parent,
            sv.parent,
            t(sv.cgroup.as_deref().unwrap_or("not recorded"))
        );
    }
    s.push_str("</table>");
    if r.survivors.is_empty() {
        s.push_str("<p>No shim or container process was running through the restart.</p>");
    }
    if r.lost.is_empty() {
        s.push_str("<p>Lost: nothing.</p>");
        return;
    }
    s.push_str("<p>Lost:</p><ul>");
    for l in &r.lost {
        let _ = write!(
            s,
            "<li>{} {} {} ({}) [seq {}]</li>",
            l.pid,
            t(&l.name),
            l.what,
            t(&l.detail),
            l.seq
        );
    }
    s.push_str("</ul>");
}
