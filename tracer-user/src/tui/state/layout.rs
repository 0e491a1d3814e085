//! Where each pane goes on screen: a pure function of the state's switches and the terminal
//! size. The state uses it to keep the selection on screen; the draw uses it to place panes.

use ratatui::layout::Rect;

use super::{AppState, Pane};

/// Where each pane goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Areas {
    /// The process tree.
    pub tree: Rect,
    /// The detail pane of the selection, when there is room.
    pub detail: Option<Rect>,
    /// The story pane, when shown.
    pub story: Option<Rect>,
    /// The event log.
    pub log: Rect,
    /// The status line.
    pub status: Rect,
}

/// Width from which the tree gets its own column.
const WIDE: u16 = 120;

/// `x * num / 100` without u16 overflow.
fn pct(x: u16, num: u32) -> u16 {
    (u32::from(x) * num / 100) as u16
}

/// Splits `area` into panes for state `s`.
pub fn layout(area: Rect, s: &AppState) -> Areas {
    let h = area.height.saturating_sub(1);
    let status = Rect::new(area.x, area.y + h, area.width, area.height.min(1));
    if s.view.zoom {
        return zoomed(area, h, status, active_pane(s));
    }
    let mut a = if teaching(s) {
        teaching_layout(area, h, status, s.view.show_log)
    } else {
        usual_layout(area, h, status, s)
    };
    if !s.view.show_log && !a.log.is_empty() {
        // The pane above the log takes its rows.
        let grow = a.log.height;
        if let Some(r) = a
            .story
            .as_mut()
            .or(a.detail.as_mut())
            .filter(|r| r.x == a.log.x)
        {
            r.height += grow;
        }
        a.log = Rect::new(a.log.x, a.log.y + grow, a.log.width, 0);
    }
    a
}

/// The guided view's layout is for teaching: the story and its explanation get most of the
/// screen.
pub fn teaching(s: &AppState) -> bool {
    s.playback.guided && s.view.show_story
}

/// Share of the width the story pane gets in the teaching layout (wide screens).
const TEACH_PCT: u32 = 62;

/// Wide: the tree over the detail on the left, the story (over the log, when shown) on the
/// right, [`TEACH_PCT`] of the width. Narrow: a few tree rows over the story (and the log).
fn teaching_layout(area: Rect, h: u16, status: Rect, log: bool) -> Areas {
    if area.width >= WIDE {
        let rw = pct(area.width, TEACH_PCT);
        let lw = area.width - rw;
        let t = pct(h, 60);
        let st = if log { pct(h, 65) } else { h };
        let rx = area.x + lw;
        Areas {
            tree: Rect::new(area.x, area.y, lw, t),
            detail: Some(Rect::new(area.x, area.y + t, lw, h - t)),
            story: Some(Rect::new(rx, area.y, rw, st)),
            log: Rect::new(rx, area.y + st, rw, h - st),
            status,
        }
    } else {
        let t = pct(h, 25).max(3.min(h));
        let st = if log { pct(h - t, 65) } else { h - t };
        Areas {
            tree: Rect::new(area.x, area.y, area.width, t),
            detail: None,
            story: Some(Rect::new(area.x, area.y + t, area.width, st)),
            log: Rect::new(area.x, area.y + t + st, area.width, h - t - st),
            status,
        }
    }
}

/// The exploring layout: the tree beside (wide) or over the other panes.
fn usual_layout(area: Rect, h: u16, status: Rect, s: &AppState) -> Areas {
    if area.width >= WIDE {
        let lw = pct(area.width, 55);
        let rw = area.width - lw;
        let tree = Rect::new(area.x, area.y, lw, h);
        let rx = area.x + lw;
        let (d, st) = if s.view.show_story && s.view.show_explain {
            (pct(h, 20), pct(h, 55))
        } else if s.view.show_story {
            (pct(h, 35), pct(h, 35))
        } else {
            (pct(h, 45), 0)
        };
        let detail = Rect::new(rx, area.y, rw, d);
        let story = Rect::new(rx, area.y + d, rw, st);
        let log = Rect::new(rx, area.y + d + st, rw, h - d - st);
        Areas {
            tree,
            detail: Some(detail),
            story: s.view.show_story.then_some(story),
            log,
            status,
        }
    } else {
        let t = pct(h, if s.view.show_explain { 30 } else { 45 }).max(3.min(h));
        let m = pct(h - t, 55).min(h - t);
        let tree = Rect::new(area.x, area.y, area.width, t);
        let mid = Rect::new(area.x, area.y + t, area.width, m);
        let log = Rect::new(area.x, area.y + t + m, area.width, h - t - m);
        Areas {
            tree,
            detail: (!s.view.show_story).then_some(mid),
            story: s.view.show_story.then_some(mid),
            log,
            status,
        }
    }
}

/// `pane` over the whole screen but the status line; the others get empty areas.
fn zoomed(area: Rect, h: u16, status: Rect, pane: Pane) -> Areas {
    let full = Rect::new(area.x, area.y, area.width, h);
    let none = Rect::new(area.x, area.y, 0, 0);
    let mut a = Areas {
        tree: none,
        detail: None,
        story: None,
        log: none,
        status,
    };
    match pane {
        Pane::Tree => a.tree = full,
        Pane::Story => a.story = Some(full),
        Pane::Log => a.log = full,
    }
    a
}

/// Rows the tree pane shows at the current terminal size.
pub fn tree_height(s: &AppState) -> usize {
    let a = layout(Rect::new(0, 0, s.view.size.0, s.view.size.1), s);
    a.tree.height.saturating_sub(1) as usize
}

/// Pane the movement keys act on (the story pane and the log only while shown).
pub fn active_pane(s: &AppState) -> Pane {
    match s.view.pane {
        Pane::Story if !s.view.show_story => Pane::Tree,
        Pane::Log if !s.view.show_log => Pane::Tree,
        p => p,
    }
}
