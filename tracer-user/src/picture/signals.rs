//! Deaths on the timeline: a signal as an arrow from the sender's lifeline to the target's
//! (SIGTERM, SIGKILL; a dead child's SIGCHLD from its exit to its parent), and the OOM killer's
//! choice named on the victim's lifeline with its memory cgroup and limit.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use super::marks::Arrow;
use super::{short_ids, xml_text, Col, Geo, LaneEnds, Mark, Story};
use crate::event::SignalResult;
use crate::export::PidIndex;
use crate::lineage::{DeathHow, Engine, ProcId, Process, SignalRecord};

/// SIGCHLD.
const SIGCHLD: i32 = 17;

/// The signals a story step shows: the records of the step's process at the step's seq.
fn step_signals<'a>(
    e: &'a Engine,
    index: &'a PidIndex,
    stories: &'a [Story],
) -> impl Iterator<Item = (ProcId, &'a SignalRecord)> + 'a {
    stories
        .iter()
        .flat_map(|st| &st.steps)
        .flat_map(move |step| {
            let id = index.at(e, step.pid, step.seq);
            let recs = id.and_then(|id| e.get(id)).map_or(&[][..], |p| p.signals());
            recs.iter()
                .filter(move |r| r.seq == step.seq && r.sender != 0)
                .filter_map(move |r| Some((id?, r)))
        })
}

/// The sender and the target of `r`, as the records they were at its seq.
fn ends(e: &Engine, index: &PidIndex, r: &SignalRecord) -> Option<(ProcId, ProcId)> {
    Some((index.at(e, r.sender, r.seq)?, index.at(e, r.target, r.seq)?))
}

/// Adds the sender and the target of every signal a step of `stories` shows: an arrow's both
/// ends are drawn lifelines.
pub(super) fn add_actors(
    e: &Engine,
    index: &PidIndex,
    stories: &[Story],
    keep: &mut HashSet<ProcId>,
) {
    for (_, r) in step_signals(e, index, stories) {
        if let Some((from, to)) = ends(e, index, r) {
            keep.extend([from, to]);
        }
    }
}

/// A column per signal to draw: those the stories' steps show (on the step's own lifeline,
/// where its callout goes), and with `all` the signal that killed each drawn process. Both
/// ends must be drawn.
pub(super) fn columns(
    e: &Engine,
    stories: &[Story],
    lanes: &[ProcId],
    all: bool,
    cols: &mut Vec<Col>,
) {
    let index = PidIndex::new(e);
    let drawn: HashSet<ProcId> = lanes.iter().copied().collect();
    let mut seen: HashSet<u64> = HashSet::new();
    let killers = lanes
        .iter()
        .filter(|_| all)
        .filter_map(|&id| Some((id, e.get(id)?.killer().filter(|k| k.user_sent())?)));
    for (on, r) in step_signals(e, &index, stories).chain(killers) {
        let Some((from, to)) = ends(e, &index, r) else {
            continue;
        };
        if from == to || !drawn.contains(&from) || !drawn.contains(&to) || !seen.insert(r.seq) {
            continue;
        }
        cols.push(Col {
            seq: r.seq,
            ts: r.ts_ns,
            proc: on,
            mark: Mark::Signal {
                from,
                to,
                label: label(r),
            },
            callouts: Vec::new(),
        });
    }
}

/// `SIGTERM`, `SIGKILL`, `SIGCHLD to the parent`; `(ignored)` when the kernel dropped it.
pub(super) fn label(r: &SignalRecord) -> String {
    let mut t = r.signal_name();
    if r.signal == SIGCHLD && !r.user_sent() {
        t.push_str(" to the parent");
    }
    if r.result == SignalResult::Ignored {
        t.push_str(" (ignored)");
    }
    t
}

/// The OOM killer's mark on `p`: its seq, time and `OOM kill · memcg PATH · limit 32 MiB`.
pub(super) fn oom(p: &Process) -> Option<(u64, u64, String)> {
    let m = p.oom()?;
    let cg = m.cgroup.as_deref().map_or_else(
        || "memcg not read".to_string(),
        |c| format!("memcg {}", short_ids(c)),
    );
    let limit = m
        .limit
        .map_or_else(|| "limit not read".to_string(), crate::names::size);
    Some((m.seq, m.ts_ns, format!("OOM kill · {cg} · limit {limit}")))
}

/// The exit's words on the lifeline: the OOM killer's SIGKILL told as such (its memory
/// cgroup is on the OOM mark), else the tree's.
pub(super) fn exit_text(p: &Process) -> String {
    match p.death() {
        Some(d) if d.how == DeathHow::Oom => "killed SIGKILL (OOM)".to_string(),
        _ => crate::lineage::view::exit_text(p),
    }
}

/// The signal arrows of `cols`: from the sender's lifeline at the column (or at its exit,
/// when it has ended: a SIGCHLD is sent as the child dies) to the target's.
pub(super) fn arrows(
    g: &Geo,
    cols: &[Col],
    lane_of: &HashMap<ProcId, usize>,
    lane_ends: &LaneEnds,
) -> Vec<Arrow> {
    let mut v = Vec::new();
    for (i, c) in cols.iter().enumerate() {
        let Mark::Signal { from, to, label } = &c.mark else {
            continue;
        };
        let (Some(&lf), Some(&lt)) = (lane_of.get(from), lane_of.get(to)) else {
            continue;
        };
        let exit = lane_ends.get(from).and_then(|e| e.1).filter(|&x| x < i);
        let (y1, y2) = (g.y(lf), g.y(lt));
        let y2 = if y1 < y2 { y2 - 5 } else { y2 + 5 };
        v.push(Arrow {
            class: "sig",
            head: "ahs",
            x1: g.x(exit.unwrap_or(i)),
            y1,
            x2: g.x(i),
            y2,
            label: Some(label.clone()),
        });
    }
    v
}

/// The OOM mark: a red bolt on the victim's lifeline, its memory cgroup and limit under it
/// (ending at the mark when it would run past `right`).
pub(super) fn draw_oom(s: &mut String, text: &str, x: usize, y: usize, right: usize) {
    let _ = write!(
        s,
        "<path class=\"oom\" d=\"M{},{}L{},{}L{},{}L{},{}L{},{}L{},{}z\"/>",
        x + 2,
        y - 10,
        x - 5,
        y + 1,
        x,
        y + 1,
        x - 2,
        y + 10,
        x + 5,
        y - 1,
        x,
        y - 1
    );
    let text = xml_text(text, 90);
    let wide = text.chars().count() * 7;
    let (tx, anchor) = if x + 8 + wide > right {
        (x.saturating_sub(8), "end")
    } else {
        (x + 8, "start")
    };
    let _ = write!(
        s,
        "<text class=\"oomt\" x=\"{tx}\" y=\"{}\" text-anchor=\"{anchor}\">{text}</text>",
        y + 15
    );
}

#[cfg(test)]
mod tests {
    use crate::event::{Event, EventKind, OomInfo, SignalResult};
    use crate::lineage::Engine;
    use crate::picture::{svg, PictureOpts};
    use crate::synth::{exit, fork, kill};

    /// 100 forks 200 and 300; 300 SIGTERMs 200, which dies of it; 400 is OOM-killed in a
    /// memory cgroup whose path is hostile.
    fn engine() -> Engine {
        let oom = OomInfo {
            tid: 400,
            total_vm_kb: 1,
            anon_rss_kb: 2,
            file_rss_kb: 3,
            shmem_rss_kb: 4,
            oom_score_adj: 0,
            cgroup: Some("/k8s/<evil>&\u{1b}".into()),
            limit: Some(32 << 20),
        };
        let evs = [
            fork(100, 200),
            fork(100, 300),
            fork(100, 400),
            kill(300, 200, 15, 0, SignalResult::Delivered),
            exit(200, 15),
            Event::bare(0, 0, 400, 400, "hog", EventKind::OomVictim(oom)),
            kill(400, 400, 9, 0x80, SignalResult::Delivered),
            exit(400, 9),
        ];
        let mut e = Engine::new();
        for (seq, mut ev) in (1..).zip(evs) {
            ev.seq = seq;
            ev.ts_ns = seq * 1_000_000;
            e.apply(&ev);
        }
        e
    }

    #[test]
    fn a_kill_is_an_arrow_from_sender_to_target_and_an_oom_names_its_memcg_escaped() {
        let e = engine();
        let opts = PictureOpts {
            all: true,
            ..Default::default()
        };
        let pic = svg(&e, &[], &opts, "t").unwrap();
        // One signal arrow (the legend's starts at 0): 300's SIGTERM; the OOM killer's SIGKILL
        // is the kernel's own.
        let sig: Vec<&str> = pic
            .split("<line class=\"sig\"")
            .skip(1)
            .filter(|l| !l.starts_with(" x1=\"0\""))
            .collect();
        assert_eq!(sig.len(), 1, "{pic}");
        let lane_y = |pid: &str| {
            let label = pic.find(&format!(">{pid} ")).unwrap();
            let y = pic[..label].rsplit("y=\"").next().unwrap();
            y.split('"').next().unwrap().parse::<usize>().unwrap() + 2
        };
        let y = |attr: &str| -> usize {
            let v = sig[0].split(&format!("{attr}=\"")).nth(1).unwrap();
            v.split('"').next().unwrap().parse().unwrap()
        };
        assert_eq!(y("y1"), lane_y("300"), "from the sender's lifeline");
        assert_eq!(y("y2"), lane_y("200") + 5, "to the target's, short of it");
        assert!(pic.contains(">SIGTERM</text>"), "{pic}");
        assert!(
            pic.contains(">OOM kill · memcg /k8s/&lt;evil&gt;&amp;\u{fffd} · limit 32 MiB</text>"),
            "{pic}"
        );
        assert!(
            !pic.contains("<evil>") && !pic.contains("OOMKilled"),
            "{pic}"
        );
        // Their glyphs are in the legend.
        assert!(pic.contains("signal: from sender to target"));
        assert!(pic.contains("OOM kill: the memory cgroup and its limit"));
    }
}
