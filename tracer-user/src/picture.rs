//! Pictures of a recording for training: an SVG timeline of container stories (one lifeline
//! per process, grouped per pod, seq across; births, CLONE_PARENT, adoptions, exits,
//! subreapers), numbered callouts keyed to a step list, optionally fitted to a printed page
//! ([`Page`]); and a self-contained HTML page with one picture per story, the explained steps
//! and the tree ([`write_html`]).
//!
//! Everything the recording controls (names, argv, paths, ids) is XML-escaped and bounded
//! before it is written ([`xml_text`]).

mod axis;
mod html;
mod layout;
mod marks;
mod restart;
mod signals;

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::io::{self, Write};

use crate::export::{role_style, PidIndex};
use crate::lineage::{view, Engine, How, ProcId, Process, Role, Story};

pub use axis::Axis;
pub use html::write_html;
use layout::{Geo, Row};

/// Longest label kept, in characters (longer ones end with `…`).
const MAX_TEXT: usize = 72;
/// Most lifelines drawn: 2,000 lanes are already 80,000 px tall; past that a picture teaches
/// nothing and only grows the file, so the rest are left out with a note.
pub const MAX_LANES: usize = 2_000;
/// Most event columns drawn, for the same reason.
pub const MAX_COLS: usize = 10_000;
/// The smallest font size the drawing uses, in its own pixels (its style sheet). A page is only
/// filled while this stays at least [`MIN_PAGE_FONT`] once scaled to the page.
pub const MIN_FONT: f64 = 12.0;
/// The smallest text allowed on a printed page, in CSS pixels (96 per inch).
pub const MIN_PAGE_FONT: f64 = 10.0;

/// A printed page the picture is laid out for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Page {
    /// A4 landscape, 297 × 210 mm.
    A4,
    /// A 16:9 slide, 1280 × 720 px.
    Wide,
}

impl Page {
    /// Its size in CSS pixels (96 per inch).
    pub fn px(self) -> (f64, f64) {
        match self {
            Page::A4 => (297.0 / 25.4 * 96.0, 210.0 / 25.4 * 96.0),
            Page::Wide => (1280.0, 720.0),
        }
    }

    /// The SVG `width` and `height` attributes.
    fn size_attrs(self) -> (&'static str, &'static str) {
        match self {
            Page::A4 => ("297mm", "210mm"),
            Page::Wide => ("1280px", "720px"),
        }
    }

    /// As the command line names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Page::A4 => "a4",
            Page::Wide => "16:9",
        }
    }
}

/// Why a picture could not be drawn.
#[derive(Debug, thiserror::Error)]
pub enum PictureError {
    /// The drawing is too large for the page without text under [`MIN_PAGE_FONT`].
    #[error(
        "the picture is {w}×{h} px: on the {page} page its text would be {font:.1} px (under {MIN_PAGE_FONT} px); leave out --page{}",
        if *.stories > 1 { ", or draw one story (--story N)" } else { "" },
        page = .page.as_str()
    )]
    TooBig {
        /// How many stories it draws (one cannot be cut further; none: `--all` draws processes).
        stories: usize,
        /// The page asked for.
        page: Page,
        /// The drawing's own width, in its pixels.
        w: usize,
        /// (its height)
        h: usize,
        /// Its smallest text once scaled to the page, in CSS pixels.
        font: f64,
    },
    /// Writing it failed.
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// What [`svg`] draws.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PictureOpts {
    /// Every process the recording saw act (and their parents), not only the stories' actors.
    pub all: bool,
    /// Lay the picture out for this page: its size, the content scaled to fit.
    pub page: Option<Page>,
    /// With `all`: only these processes (a pod's), and their parents.
    pub scope: Option<HashSet<ProcId>>,
    /// What runs across: one column per event, or time.
    pub axis: Axis,
}

/// `s` escaped for XML text and attribute values, control characters (not allowed in XML
/// 1.0) replaced by U+FFFD, invisible format characters (bidi controls, zero-width ones)
/// shown escaped as the text outputs show them, at most `max` characters (then `…`).
pub fn xml_text(s: &str, max: usize) -> String {
    let mut out = String::with_capacity(s.len().min(max * 2) + 8);
    for (n, c) in s.chars().enumerate() {
        if n == max {
            out.push('…');
            break;
        }
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if c.is_control() || ('\u{fffe}'..='\u{ffff}').contains(&c) => out.push('\u{fffd}'),
            c if crate::escape::is_invisible(c) => {
                out.push_str(&crate::escape::escape(c.encode_utf8(&mut [0; 4])))
            }
            c => out.push(c),
        }
    }
    out
}

/// `text` with every run of 32 or more hex digits (container and sandbox ids, in cgroup paths
/// too) cut to its first 12, as `crictl` shows ids: a handout's line stays one line.
pub fn short_ids(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut run = String::new();
    let flush = |run: &mut String, out: &mut String| {
        if run.len() >= 32 {
            out.push_str(&run[..12]);
            out.push('…');
        } else {
            out.push_str(run);
        }
        run.clear();
    };
    for c in text.chars() {
        if c.is_ascii_hexdigit() {
            run.push(c);
        } else {
            flush(&mut run, &mut out);
            out.push(c);
        }
    }
    flush(&mut run, &mut out);
    out
}

/// What happens in one column of the timeline.
#[derive(Clone, Debug)]
enum Mark {
    /// Born to `from` (its parent); `caller` marked when it differs (CLONE_PARENT).
    Birth {
        from: Option<ProcId>,
        caller: Option<ProcId>,
        clone_parent: bool,
    },
    /// Reparented to `from` (the new parent).
    Adopted { from: Option<ProcId> },
    /// The process ended (`exit 0`, `killed SIGKILL`).
    Exit(String),
    /// PR_SET_CHILD_SUBREAPER.
    Subreaper,
    /// An exec.
    Exec,
    /// A rename (PR_SET_NAME).
    Rename,
    /// A story step no other mark shows (a cgroup move): only its callout.
    Step,
    /// A signal from `from` to `to`, drawn from the sender's lifeline (a dead child's SIGCHLD
    /// from its exit) to the target's, labelled.
    Signal {
        from: ProcId,
        to: ProcId,
        label: String,
    },
    /// The OOM killer chose it: its memory cgroup and limit.
    Oom(String),
}

impl Mark {
    /// Order of marks at the same seq: a death before the adoptions it causes.
    fn rank(&self) -> u8 {
        match self {
            Mark::Birth { .. } => 0,
            Mark::Exec => 1,
            Mark::Rename => 2,
            Mark::Subreaper => 3,
            Mark::Step | Mark::Signal { .. } => 4,
            Mark::Oom(_) => 5,
            Mark::Exit(_) => 6,
            Mark::Adopted { .. } => 7,
        }
    }
}

/// One column: one event of one process.
struct Col {
    seq: u64,
    /// Its time (the recording's `ts_ns`), for the time axis.
    ts: u64,
    proc: ProcId,
    mark: Mark,
    /// The numbers of the story steps it shows (1-based, keyed to the step list).
    callouts: Vec<usize>,
}

/// The processes drawn: the stories' actors, their parents at birth, their creators and
/// every parent that adopted one of them; with `all`, every process that acted (in `scope`).
fn actors(e: &Engine, stories: &[Story], opts: &PictureOpts) -> Vec<ProcId> {
    let index = PidIndex::new(e);
    // A flag per record, not a hash set: with `all` every record of a million may be kept.
    let mut keep = Keep(vec![false; e.id_bound()]);
    if opts.all {
        for p in e
            .processes()
            .filter(|p| view::acted(p))
            .filter(|p| opts.scope.as_ref().is_none_or(|s| s.contains(&p.id)))
        {
            keep.insert(p.id);
        }
    } else {
        let mut some: HashSet<ProcId> = HashSet::new();
        for st in stories {
            for step in &st.steps {
                some.extend(index.at(e, step.pid, step.seq));
            }
        }
        signals::add_actors(e, &index, stories, &mut some);
        for id in some {
            keep.insert(id);
        }
    }
    let core: Vec<ProcId> = keep.ids().collect();
    for id in core {
        let Some(p) = e.get(id) else { continue };
        if let Some(c) = p.creator {
            keep.insert(c);
        }
        for l in p.lineage.iter().skip(1) {
            if let Some(a) = index.at(e, l.parent, l.seq) {
                keep.insert(a);
            }
        }
    }
    // Every birth arrow starts on a drawn lifeline: each drawn process's parent at birth, up
    // to the first one the recording did not see born.
    let mut todo: Vec<ProcId> = keep.ids().collect();
    while let Some(id) = todo.pop() {
        let parent = e.get(id).and_then(|p| p.birth_parent);
        if let Some(b) = parent.filter(|&b| keep.insert(b)) {
            todo.push(b);
        }
    }
    drop(todo);
    let mut v: Vec<ProcId> = keep.ids().collect();
    drop(keep);
    v.sort_by_key(|&id| e.get(id).map(|p| (p.start_seq, p.id)));
    v
}

/// The records [`actors`] keeps, a flag per record id.
struct Keep(Vec<bool>);

impl Keep {
    /// Keeps `id`; whether it was not kept before.
    fn insert(&mut self, id: ProcId) -> bool {
        if id >= self.0.len() {
            self.0.resize(id + 1, false);
        }
        !std::mem::replace(&mut self.0[id], true)
    }

    fn ids(&self) -> impl Iterator<Item = ProcId> + '_ {
        self.0
            .iter()
            .enumerate()
            .filter(|(_, &k)| k)
            .map(|(id, _)| id)
    }
}

fn birth_mark(p: &Process) -> Option<Mark> {
    let b = p.lineage.first()?;
    if !matches!(
        b.how,
        How::Clone | How::CloneParent | How::Fork | How::Vfork
    ) {
        return None;
    }
    let from = p.birth_parent;
    Some(Mark::Birth {
        from,
        caller: p.creator.filter(|c| Some(*c) != from),
        clone_parent: b.how == How::CloneParent,
    })
}

/// runc runs from a sealed copy of itself in memory (a memfd, exec'd as `/dev/fd/N` or
/// `/proc/self/fd/N`), so that a container's process cannot overwrite the host's runc binary
/// through `/proc/self/exe` (CVE-2019-5736). Such an exec is no step of any story: it is left
/// out of the picture and explained once in the legend ([`REEXEC_NOTE`]).
fn is_self_reexec(exe: &str) -> bool {
    exe.starts_with("/dev/fd/") || exe.starts_with("/proc/self/fd/") || exe.starts_with("memfd:")
}

/// The legend's line for the execs [`is_self_reexec`] leaves out.
const REEXEC_NOTE: &str =
    "Not drawn: runc re-executing itself from a sealed in-memory copy (/dev/fd/N, a memfd), \
so a container cannot overwrite the host's runc binary through /proc/self/exe (CVE-2019-5736).";

/// Every column for the drawn processes, in seq order, and whether a runc self re-exec was
/// left out.
fn columns(e: &Engine, lanes: &[ProcId]) -> (Vec<Col>, bool) {
    let index = PidIndex::new(e);
    let mut cols = Vec::new();
    let mut reexec = false;
    for &id in lanes {
        let Some(p) = e.get(id) else { continue };
        let mut push = |seq: u64, ts: u64, mark: Mark| {
            cols.push(Col {
                seq,
                ts,
                proc: id,
                mark,
                callouts: Vec::new(),
            })
        };
        if let Some(mark) = birth_mark(p) {
            push(p.start_seq, p.birth_ts_ns, mark);
        }
        for x in &p.execs {
            if is_self_reexec(&x.exe) {
                reexec = true;
            } else {
                push(x.seq, x.ts_ns, Mark::Exec);
            }
        }
        for r in p.renames() {
            push(r.seq, r.ts_ns, Mark::Rename);
        }
        if let Some(s) = p.subreaper_seq() {
            push(s, p.subreaper_ts_ns().unwrap_or_default(), Mark::Subreaper);
        }
        if let Some(x) = p.exit_seq {
            push(
                x,
                p.exit_ts_ns.unwrap_or_default(),
                Mark::Exit(signals::exit_text(p)),
            );
        }
        if let Some((seq, ts, text)) = signals::oom(p) {
            push(seq, ts, Mark::Oom(text));
        }
        for l in p.lineage.iter().skip(1).filter(|l| l.how == How::Adopted) {
            let from = index.at(e, l.parent, l.seq);
            push(l.seq, l.ts_ns, Mark::Adopted { from });
        }
    }
    cols.sort_by_key(|c| (c.seq, c.mark.rank(), c.proc));
    (cols, reexec)
}

/// Numbers the stories' steps (1, 2, … across them) and hangs each number on the column that
/// shows it: the same process's mark at the step's seq, else a [`Mark::Step`] column of its
/// own. A step of a process not drawn is only listed.
fn add_callouts(e: &Engine, stories: &[Story], lanes: &HashSet<ProcId>, cols: &mut Vec<Col>) {
    let index = PidIndex::new(e);
    let mut n = 0;
    for step in stories.iter().flat_map(|s| &s.steps) {
        n += 1;
        let Some(id) = index
            .at(e, step.pid, step.seq)
            .filter(|id| lanes.contains(id))
        else {
            continue;
        };
        match cols.iter_mut().find(|c| c.seq == step.seq && c.proc == id) {
            Some(c) => c.callouts.push(n),
            None => cols.push(Col {
                seq: step.seq,
                ts: step.ts_ns,
                proc: id,
                mark: Mark::Step,
                callouts: vec![n],
            }),
        }
    }
    cols.sort_by_key(|c| (c.seq, c.mark.rank(), c.proc));
}

/// Which pod and container a drawn process works for: its own annotations, else the first
/// story naming it. `None`: the host's and the runtime daemon's.
fn row_of(p: &Process, story: Option<&Story>) -> Row {
    let mut head = format!("{} {}", p.pid, p.name());
    if let Some(r) = p.role {
        let _ = write!(head, " [{r}]");
    }
    let own = p.k8s.as_deref().filter(|k| !k.is_empty());
    let pod = own
        .and_then(|k| k.pod_text())
        .or_else(|| story.and_then(|s| s.pod.clone()))
        .or_else(|| {
            let sb = story.and_then(|s| s.sandbox_id.as_deref())?;
            Some(format!("pod {}", sb.get(..12).unwrap_or(sb)))
        });
    let container = match (own, story) {
        (Some(k), _) if k.container_name.is_some() => k.container_name.as_deref().map(String::from),
        (Some(k), _) if k.sandbox => Some("sandbox (pause)".to_string()),
        (_, Some(s)) if s.sandbox => Some(format!(
            "sandbox ({})",
            s.workload.as_deref().unwrap_or("pause")
        )),
        (_, Some(s)) => s.container_name.clone().or_else(|| {
            let cid = s.container_id.as_deref()?;
            Some(format!("container {}", cid.get(..12).unwrap_or(cid)))
        }),
        _ => None,
    };
    let sub = match (&pod, container) {
        (Some(pod), Some(c)) => format!("{pod} · {c}"),
        (Some(pod), None) => pod.clone(),
        (None, Some(c)) => c,
        (None, None) => view::marks(p, false)
            .iter()
            .filter(|m| {
                matches!(
                    m,
                    view::Mark::NsPid(_)
                        | view::Mark::Placeholder
                        | view::Mark::ParentUnknown
                        | view::Mark::ParentInferred
                )
            })
            .map(|m| m.text())
            .collect::<String>()
            .trim()
            .to_string(),
    };
    Row {
        ids: vec![p.id],
        group: pod,
        head,
        sub,
    }
}

/// The drawn processes as rows, grouped per pod (the host's first), each group by birth.
fn rows(e: &Engine, stories: &[Story], lanes: &[ProcId]) -> Vec<Row> {
    let index = PidIndex::new(e);
    let mut story_of: HashMap<ProcId, usize> = HashMap::new();
    for (i, st) in stories.iter().enumerate() {
        for step in &st.steps {
            if let Some(id) = index.at(e, step.pid, step.seq) {
                story_of.entry(id).or_insert(i);
            }
        }
    }
    let mut rows: Vec<Row> = lanes
        .iter()
        .filter_map(|&id| e.get(id))
        .map(|p| {
            // Only the runtime's helpers (shim, runc and its stages, CNI plugins) work for the
            // story's pod; init and the daemon, which a step may name, stay the host's.
            let helper = p.role.is_some_and(|r| r != Role::RuntimeDaemon);
            let story = story_of.get(&p.id).filter(|_| helper);
            row_of(p, story.map(|&i| &stories[i]))
        })
        .collect();
    // Groups in the order they first appear (rows are by birth), the host's first.
    let mut order: HashMap<Option<String>, usize> = HashMap::new();
    order.insert(None, 0);
    for r in &rows {
        let n = order.len();
        order.entry(r.group.clone()).or_insert(n);
    }
    rows.sort_by_key(|r| order[&r.group]);
    rows
}

/// Rows shared by runs of one program: a process born and ended inside the picture joins the
/// row of an earlier one of the same pod group and container, name, executable, role, argv
/// and parent's row once that one has ended, with room left for its exit status. A pod's CNI plugins, run again on every
/// retry of a teardown (and their IPAM plugin, run by each), take one row each instead of one
/// per run; each run keeps its own lifeline, birth arrow and exit.
fn share_rows(rows: Vec<Row>, e: &Engine, ends: &LaneEnds, col_w: usize) -> Vec<Row> {
    let span = |id: ProcId| match ends.get(&id) {
        Some(&(Some(birth), Some(exit))) => Some((birth, exit)),
        _ => None,
    };
    let mut row_of: HashMap<ProcId, usize> = HashMap::new();
    let mut out: Vec<Row> = Vec::with_capacity(rows.len());
    for r in rows {
        let id = r.ids[0];
        let key = |id: ProcId| {
            let p = e.get(id)?;
            let parent = p.birth_parent.map(|b| row_of.get(&b).copied().ok_or(b));
            Some((p.name(), p.exe.clone(), p.role, p.argv.clone(), parent))
        };
        let free = |o: &Row| {
            let (Some((birth, _)), Some(&last)) = (span(id), o.ids.last()) else {
                return false;
            };
            o.group == r.group
                && o.sub == r.sub
                && key(o.ids[0]) == key(id)
                && span(last).is_some_and(|(_, exit)| birth > exit + exit_room(e, last, col_w))
        };
        let k = match out.iter().position(free) {
            Some(k) => {
                out[k].ids.push(id);
                k
            }
            None => {
                out.push(r);
                out.len() - 1
            }
        };
        row_of.insert(id, k);
    }
    for r in out.iter_mut().filter(|r| r.ids.len() > 1) {
        r.head = shared_head(e, &r.ids);
    }
    out
}

/// Columns of `col_w` px the exit status of `id` takes right of its exit.
fn exit_room(e: &Engine, id: ProcId, col_w: usize) -> usize {
    let chars = e
        .get(id)
        .map_or(0, |p| signals::exit_text(p).chars().count());
    (chars * 7 + 8).div_ceil(col_w)
}

/// `3624, 3639, 3654 loopback [cni-plugin]`; past three runs `3624, 3639 +4 loopback …`.
fn shared_head(e: &Engine, ids: &[ProcId]) -> String {
    let pids: Vec<String> = ids
        .iter()
        .filter_map(|&id| e.get(id))
        .map(|p| p.pid.to_string())
        .collect();
    let mut head = if pids.len() > 3 {
        format!("{} +{}", pids[..2].join(", "), pids.len() - 2)
    } else {
        pids.join(", ")
    };
    if let Some(p) = ids.first().and_then(|&id| e.get(id)) {
        let _ = write!(head, " {}", p.name());
        if let Some(r) = p.role {
            let _ = write!(head, " [{r}]");
        }
    }
    head
}

const STYLE: &str = "text{font-family:'DejaVu Sans',Verdana,sans-serif;font-size:12px;fill:#222}\
.t{font-size:18px;font-weight:bold}.lg{font-size:12px;fill:#444}.pid{font-weight:bold}\
.mk{font-size:12px;fill:#444}.grp{font-size:12px;font-weight:bold;fill:#333}\
.band{fill:#f4f6fa;stroke:#d0d6e2}.rep{font-size:12px;fill:#999}\
.co{fill:#fff;stroke:#b2182b;stroke-width:1.6}.con{font-size:12px;font-weight:bold;fill:#b2182b;text-anchor:middle}\
.sh{font-size:13px;font-weight:bold}.sl{font-size:12px}\
.grid{stroke:#e8e8e8;stroke-width:1}.birth{stroke:#222;stroke-width:1.6}\
.cp{stroke:#d95f02;stroke-width:2}.adopt{stroke:#3182bd;stroke-width:1.6;stroke-dasharray:5 3}\
.caller{fill:#fff;stroke:#d95f02;stroke-width:2}.st{font-size:12px;fill:#555}\
.sig{stroke:#c51b7d;stroke-width:1.8}.sgl{font-size:12px;font-weight:bold;fill:#c51b7d}\
.oom{fill:#e31a1c}.oomt{font-size:12px;fill:#b30000}.tick{stroke:#bbb;stroke-width:1;stroke-dasharray:2 3}\
.tk{font-size:12px;fill:#555;text-anchor:middle}.wait{fill:none;stroke:#888;stroke-width:1}.cut{fill:#fafafa;stroke:#999;stroke-dasharray:4 3}\
.st,.rep,.sgl,.oomt,.tk{paint-order:stroke;stroke:#fff;stroke-width:3px;stroke-linejoin:round}";

const DEFS: &str = "<defs><marker id=\"ahb\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" orient=\"auto-start-reverse\"><path d=\"M0,0L10,5L0,10z\" fill=\"#3182bd\"/></marker>\
<marker id=\"aho\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" orient=\"auto-start-reverse\"><path d=\"M0,0L10,5L0,10z\" fill=\"#d95f02\"/></marker>\
<marker id=\"ahk\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" orient=\"auto-start-reverse\"><path d=\"M0,0L10,5L0,10z\" fill=\"#222\"/></marker>\
<marker id=\"ahs\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" orient=\"auto-start-reverse\"><path d=\"M0,0L10,5L0,10z\" fill=\"#c51b7d\"/></marker></defs>";

/// The SVG timeline of `stories` (see the module docs). `title` names the recording.
pub fn svg(
    e: &Engine,
    stories: &[Story],
    opts: &PictureOpts,
    title: &str,
) -> Result<String, PictureError> {
    draw(e, stories, opts, title, Drawn::Alone)
}

/// Where a picture goes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Drawn {
    /// On its own: the step list under the timeline, the page's shape around it.
    Alone,
    /// In the HTML page, which lists the steps with their explanations and scales the
    /// picture to its width: neither list nor page margins.
    InPage,
}

/// [`svg`], as [`Drawn`] says.
fn draw(
    e: &Engine,
    stories: &[Story],
    opts: &PictureOpts,
    title: &str,
    how: Drawn,
) -> Result<String, PictureError> {
    let list = how == Drawn::Alone;
    let (rows, cols, ends, mut notes, reexec) = content(e, stories, opts);
    notes.extend(restart::notes(stories));
    let mut steps = if list {
        layout::step_lines(stories)
    } else {
        Vec::new()
    };
    // Under the steps when they are listed (a page's room is in its height), else a note.
    match (reexec, list) {
        (true, true) => steps.push(layout::Line::Note(REEXEC_NOTE.to_string())),
        (true, false) => notes.push(REEXEC_NOTE.to_string()),
        _ => {}
    }
    // A death's marks get a third row of the legend.
    let deaths = cols
        .iter()
        .any(|c| matches!(c.mark, Mark::Signal { .. } | Mark::Oom(_)));
    let timed = axis::Timed::new(&cols, opts, &mut notes);
    let g = match &timed {
        Some(t) => Geo::timed(&rows, t.offsets(), notes.len(), &steps, opts.page),
        None => Geo::new(&rows, cols.len(), notes.len(), &steps, opts.page),
    };
    let mut s = String::with_capacity(4096 + cols.len() * 300 + rows.len() * 300);
    open_svg(
        &mut s,
        &g,
        opts.page.filter(|_| how == Drawn::Alone),
        stories.len(),
    )?;
    let across = timed
        .as_ref()
        .map_or_else(|| "seq across".to_string(), axis::Timed::legend);
    header(&mut s, stories, &rows, cols.len(), opts.all, &across, title);
    legend(&mut s, deaths);
    draw_notes(&mut s, &g, &notes, rows.is_empty());
    let lane_of: HashMap<ProcId, usize> = rows
        .iter()
        .enumerate()
        .flat_map(|(i, r)| r.ids.iter().map(move |&id| (id, i)))
        .collect();
    g.draw_groups(&mut s, &rows);
    draw_grid(&mut s, &g, cols.len());
    restart::draw(&mut s, e, &g, stories, &cols, &lane_of);
    if let Some(t) = &timed {
        t.draw(&mut s, &g);
    }
    draw_lanes(&mut s, e, &g, &rows, &ends);
    draw_marks(&mut s, &g, &cols, &lane_of);
    draw_arrows_and_callouts(&mut s, &g, &cols, &lane_of, &ends);
    g.draw_steps(&mut s, &steps);
    s.push_str("</svg>\n");
    Ok(s)
}

/// The notes on what was cut, under the header; a line saying so when no story was found.
fn draw_notes(s: &mut String, g: &Geo, notes: &[String], no_rows: bool) {
    for (i, n) in notes.iter().enumerate() {
        let _ = write!(
            s,
            "<text class=\"lg\" x=\"12\" y=\"{}\">{}</text>",
            layout::NOTES_Y + i * layout::NOTE_H,
            xml_text(n, 240)
        );
    }
    if no_rows {
        let _ = write!(
            s,
            "<text class=\"lg\" x=\"12\" y=\"{}\">no container story found (--all draws every process)</text>",
            g.lanes_top() + 20
        );
    }
}

/// The arrows (lineage, then signals), then the callouts, kept off the arrowheads and off
/// the signals' names.
fn draw_arrows_and_callouts(
    s: &mut String,
    g: &Geo,
    cols: &[Col],
    lane_of: &HashMap<ProcId, usize>,
    ends: &LaneEnds,
) {
    let mut arrows = marks::arrows(g, cols, lane_of);
    arrows.extend(signals::arrows(g, cols, lane_of, ends));
    for a in &arrows {
        a.draw(s);
    }
    let heads: Vec<marks::Rect> = arrows
        .iter()
        .map(marks::Arrow::head_box)
        .chain(arrows.iter().filter_map(marks::Arrow::label_box))
        .collect();
    draw_callouts(s, g, cols, lane_of, &heads);
}

/// What a picture draws: its rows, its columns, each process's birth and exit columns, the
/// notes on what was cut, and whether a runc self re-exec was left out.
fn content(
    e: &Engine,
    stories: &[Story],
    opts: &PictureOpts,
) -> (Vec<Row>, Vec<Col>, LaneEnds, Vec<String>, bool) {
    let mut lanes = actors(e, stories, opts);
    let all_lanes = lanes.len();
    lanes.truncate(MAX_LANES);
    let (mut cols, reexec) = columns(e, &lanes);
    signals::columns(e, stories, &lanes, opts.all, &mut cols);
    add_callouts(e, stories, &lanes.iter().copied().collect(), &mut cols);
    let all_cols = cols.len();
    cols.truncate(MAX_COLS);
    let ends = lane_ends(&cols);
    let col_w = match opts.axis {
        Axis::Events => layout::col_width(cols.len(), opts.page),
        Axis::Time => axis::MIN_GAP,
    };
    let rows = share_rows(rows(e, stories, &lanes), e, &ends, col_w);
    let mut notes = Vec::new();
    if all_lanes > lanes.len() || all_cols > cols.len() {
        notes.push(format!(
            "Cut to the first {} of {all_lanes} processes and {} of {all_cols} events (by seq): narrow it with --pod or --story, or leave out --all",
            lanes.len(),
            cols.len()
        ));
    }
    (rows, cols, ends, notes, reexec)
}

/// The `<svg>` element, its style and the white ground: sized for `page` when given (the
/// drawing fitted in it), else the drawing's own size.
fn open_svg(
    s: &mut String,
    g: &Geo,
    page: Option<Page>,
    stories: usize,
) -> Result<(), PictureError> {
    let view_box = g.fit(page, stories)?;
    let (w, h) = match page {
        Some(p) => {
            let (w, h) = p.size_attrs();
            (w.to_string(), h.to_string())
        }
        None => (g.width().to_string(), g.height().to_string()),
    };
    let _ = write!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"{view_box}\">\
         <style>{STYLE}</style>{DEFS}<rect x=\"-50%\" y=\"-50%\" width=\"200%\" height=\"200%\" fill=\"#fff\"/>"
    );
    Ok(())
}

fn header(
    s: &mut String,
    stories: &[Story],
    rows: &[Row],
    cols: usize,
    all: bool,
    across: &str,
    title: &str,
) {
    let what = match stories {
        [one] => short_ids(
            view::story_text(std::slice::from_ref(one))
                .lines()
                .next()
                .unwrap_or_default(),
        ),
        _ => "Container stories".to_string(),
    };
    let scope = if all {
        "every process that acted"
    } else {
        "the stories' actors"
    };
    let procs: usize = rows.iter().map(|r| r.ids.len()).sum();
    let shared = if procs > rows.len() {
        " (runs of one program share a row)"
    } else {
        ""
    };
    let _ = write!(
        s,
        "<text class=\"t\" x=\"12\" y=\"26\">{}</text>\
         <text class=\"lg\" x=\"12\" y=\"46\">{}: {procs} processes ({scope}), {cols} events; {across}, one lifeline per process{shared}, grouped per pod</text>",
        xml_text(&what, 110),
        xml_text(title, MAX_TEXT),
    );
}

/// The legend: what each mark means; with `deaths`, the signal and OOM marks too.
fn legend(s: &mut String, deaths: bool) {
    let rows: [(&str, &str); 8] = [
        ("<line class=\"birth\" x1=\"0\" y1=\"0\" x2=\"28\" y2=\"0\" marker-end=\"url(#ahk)\"/>", "born: clone/fork, arrow from the parent"),
        ("<line class=\"cp\" x1=\"0\" y1=\"0\" x2=\"28\" y2=\"0\" marker-end=\"url(#aho)\"/><circle class=\"caller\" cx=\"0\" cy=\"0\" r=\"4\"/>", "CLONE_PARENT: born to its caller's parent (○ caller)"),
        ("<line class=\"adopt\" x1=\"0\" y1=\"0\" x2=\"28\" y2=\"0\" marker-end=\"url(#ahb)\"/>", "adopted: by a new parent when its parent exited"),
        ("<path d=\"M14,-6L20,0L14,6L8,0z\" fill=\"#6a51a3\"/>", "PR_SET_CHILD_SUBREAPER"),
        ("<circle cx=\"14\" cy=\"0\" r=\"4\" fill=\"#31a354\"/><rect x=\"24\" y=\"-4\" width=\"8\" height=\"8\" fill=\"#fd8d3c\"/>", "exec ● · rename (PR_SET_NAME) ▪"),
        ("<circle class=\"co\" cx=\"14\" cy=\"0\" r=\"8\"/><text class=\"con\" x=\"14\" y=\"4\">1</text>", "a story step: see the numbered list"),
        ("<line class=\"sig\" x1=\"0\" y1=\"0\" x2=\"28\" y2=\"0\" marker-end=\"url(#ahs)\"/>", "signal: from sender to target (SIGTERM, SIGKILL, SIGCHLD)"),
        ("<path class=\"oom\" d=\"M16,-10L9,1L14,1L12,10L19,-1L14,-1z\"/>", "OOM kill: the memory cgroup and its limit"),
    ];
    let shown = if deaths { rows.len() } else { 6 };
    for (i, (icon, text)) in rows.iter().take(shown).enumerate() {
        // Three rows fit where two do, closer together.
        let (x, y) = match deaths {
            true => (16 + (i % 3) * 395, 62 + (i / 3) * 18),
            false => (16 + (i % 3) * 395, 70 + (i / 3) * 22),
        };
        let _ = write!(
            s,
            "<g transform=\"translate({x},{y})\">{icon}</g><text class=\"lg\" x=\"{}\" y=\"{}\">{text}</text>",
            x + 40,
            y + 4
        );
    }
}

fn draw_grid(s: &mut String, g: &Geo, cols: usize) {
    for i in 0..cols {
        let x = g.x(i);
        let _ = write!(
            s,
            "<line class=\"grid\" x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{}\"/>",
            g.lanes_top(),
            g.lanes_bottom()
        );
    }
}

/// Each drawn process's birth and exit columns.
type LaneEnds = HashMap<ProcId, (Option<usize>, Option<usize>)>;

/// [`LaneEnds`], found in one pass over the columns.
fn lane_ends(cols: &[Col]) -> LaneEnds {
    let mut ends = LaneEnds::new();
    for (i, c) in cols.iter().enumerate() {
        let end = ends.entry(c.proc).or_default();
        match c.mark {
            Mark::Birth { .. } => end.0 = end.0.or(Some(i)),
            Mark::Exit(_) => end.1 = end.1.or(Some(i)),
            _ => {}
        }
    }
    ends
}

fn draw_lanes(s: &mut String, e: &Engine, g: &Geo, rows: &[Row], ends: &LaneEnds) {
    for (k, row) in rows.iter().enumerate() {
        let y = g.y(k);
        let mut spans = Vec::with_capacity(row.ids.len());
        for &id in &row.ids {
            let Some(p) = e.get(id) else { continue };
            let (birth, exit) = ends.get(&id).copied().unwrap_or_default();
            let start = birth.map_or(g.x(0) - 8, |i| g.x(i));
            let end = exit.map_or(g.right(), |i| g.x(i));
            let (_, fill) = role_style(p.role);
            let stroke = if fill == "#ffffff" { "#9e9e9e" } else { fill };
            let _ = write!(
                s,
                "<line x1=\"{start}\" y1=\"{y}\" x2=\"{end}\" y2=\"{y}\" stroke=\"{stroke}\" stroke-width=\"5\" stroke-linecap=\"round\"/>"
            );
            spans.push((start, end));
        }
        g.draw_label(s, row, y, &spans);
    }
}

/// The marks on the lifelines (arrows are [`marks::arrows`]): a CLONE_PARENT's caller, exit,
/// subreaper, exec, rename, OOM kill.
fn draw_marks(s: &mut String, g: &Geo, cols: &[Col], lane_of: &HashMap<ProcId, usize>) {
    for (i, c) in cols.iter().enumerate() {
        let Some(&lane) = lane_of.get(&c.proc) else {
            continue;
        };
        let (x, y) = (g.x(i), g.y(lane));
        match &c.mark {
            Mark::Birth { caller, .. } => {
                if let Some(&l) = caller.and_then(|c| lane_of.get(&c)) {
                    let _ = write!(
                        s,
                        "<circle class=\"caller\" cx=\"{x}\" cy=\"{}\" r=\"5\"/>",
                        g.y(l)
                    );
                }
            }
            Mark::Oom(text) => signals::draw_oom(s, text, x, y, g.width()),
            glyph => draw_glyph(s, glyph, x, y),
        }
    }
}

/// The numbered circles: above the lifeline at the step's column, lifted when they would
/// touch a circle already placed (several steps in one column, or neighbouring columns
/// narrowed to fit a page).
fn draw_callouts(
    s: &mut String,
    g: &Geo,
    cols: &[Col],
    lane_of: &HashMap<ProcId, usize>,
    heads: &[marks::Rect],
) {
    for (n, x, y) in callout_spots(g, cols, lane_of, heads) {
        callout(s, n, x, y);
    }
}

/// Where each callout goes: (step number, centre x, centre y). Columns come left to right, so
/// only the circles placed within a few diameters to the left can be in the way. A circle goes
/// above its lifeline, else just right or left of its column, one circle higher at a time while
/// it stays under the lanes' top, then below it; never over the legend, and never over an
/// arrowhead (`heads`): the head shows where an arrow ends.
fn callout_spots(
    g: &Geo,
    cols: &[Col],
    lane_of: &HashMap<ProcId, usize>,
    heads: &[marks::Rect],
) -> Vec<(usize, usize, usize)> {
    // The widest circle's diameter (three digits) and a gap.
    const CLEAR: usize = 2 * (CALLOUT_R + 2);
    // A step aside: the circle clears an arrow along its column.
    const ASIDE: usize = CALLOUT_R + 6;
    let mut spots: Vec<(usize, usize, usize)> = Vec::new();
    let r = (CALLOUT_R + 3) as f64;
    for (i, c) in cols.iter().enumerate() {
        let Some(&lane) = lane_of.get(&c.proc) else {
            continue;
        };
        let x = g.x(i);
        let near_heads: Vec<&marks::Rect> = heads
            .iter()
            .filter(|h| h.x0 - r < (x + ASIDE) as f64 && h.x1 + r > x.saturating_sub(ASIDE) as f64)
            .collect();
        for &n in &c.callouts {
            let near: Vec<(usize, usize)> = spots
                .iter()
                .rev()
                .take_while(|s| s.1 + CLEAR + 2 * ASIDE > x)
                .map(|s| (s.1, s.2))
                .collect();
            let (base, top) = (g.y(lane), g.lanes_top() + CALLOUT_R + 2);
            let above = (0..)
                .map(|k| (base - 16).checked_sub(k * CLEAR).filter(|&y| y >= top))
                .take_while(Option::is_some)
                .flatten();
            let below = (0..6).map(|k| base + 16 + k * CLEAR);
            let free = |&(cx, cy): &(usize, usize)| {
                let (fx, fy) = (cx as f64, cy as f64);
                near.iter().all(|&(ox, oy)| {
                    (ox.abs_diff(cx) as f64).hypot(oy.abs_diff(cy) as f64) >= CLEAR as f64
                }) && near_heads.iter().all(|h| !marks::circle_hits(fx, fy, r, h))
            };
            let spot = above
                .chain(below)
                .flat_map(|y| [(x, y), (x + ASIDE, y), (x.saturating_sub(ASIDE), y)])
                .find(free)
                .unwrap_or((x, base - 16));
            spots.push((n, spot.0, spot.1));
        }
    }
    spots
}

/// A callout's radius (two-digit numbers; three digits get 2 px more).
const CALLOUT_R: usize = 9;

/// A circled step number centred on (`x`, `y`).
fn callout(s: &mut String, n: usize, x: usize, y: usize) {
    let r = if n >= 100 { CALLOUT_R + 2 } else { CALLOUT_R };
    let _ = write!(
        s,
        "<circle class=\"co\" cx=\"{x}\" cy=\"{y}\" r=\"{r}\"/><text class=\"con\" x=\"{x}\" y=\"{}\">{n}</text>",
        y + 4
    );
}

/// The marks drawn on the lifeline itself: exit, subreaper, exec, rename.
fn draw_glyph(s: &mut String, m: &Mark, x: usize, y: usize) {
    let _ = match m {
        Mark::Exit(st) => write!(
            s,
            "<line x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{}\" stroke=\"#000\" stroke-width=\"2.5\"/>\
             <text class=\"st\" x=\"{}\" y=\"{}\">{}</text>",
            y - 8,
            y + 8,
            x + 5,
            y + 4,
            xml_text(st, 24)
        ),
        Mark::Subreaper => write!(
            s,
            "<path d=\"M{x},{}L{},{y}L{x},{}L{},{y}z\" fill=\"#6a51a3\"/>",
            y - 8,
            x + 7,
            y + 8,
            x - 7
        ),
        Mark::Exec => write!(
            s,
            "<circle cx=\"{x}\" cy=\"{y}\" r=\"5\" fill=\"#31a354\" stroke=\"#fff\"/>"
        ),
        Mark::Rename => write!(
            s,
            "<rect x=\"{}\" y=\"{}\" width=\"9\" height=\"9\" fill=\"#fd8d3c\" stroke=\"#fff\"/>",
            x - 4,
            y - 4
        ),
        Mark::Birth { .. }
        | Mark::Adopted { .. }
        | Mark::Step
        | Mark::Signal { .. }
        | Mark::Oom(_) => Ok(()),
    };
}

/// How many processes the pictures draw, each once: the one picture of `stories` (`svg`), or
/// with `per_story` those of a page (`html`: one per story, and the whole with `--all`). A
/// summary that says so counts what the reader sees, not every process the recording holds.
pub fn drawn_processes(
    e: &Engine,
    stories: &[Story],
    opts: &PictureOpts,
    per_story: bool,
) -> usize {
    let lanes = |st: &[Story], o: &PictureOpts| {
        let mut l = actors(e, st, o);
        l.truncate(MAX_LANES);
        l
    };
    let mut ids: HashSet<ProcId> = HashSet::new();
    if !per_story || opts.all {
        ids.extend(lanes(stories, opts));
    }
    if per_story {
        let one = PictureOpts {
            all: false,
            ..opts.clone()
        };
        for st in stories {
            ids.extend(lanes(std::slice::from_ref(st), &one));
        }
    }
    ids.len()
}

/// Writes [`svg`] to `out`.
pub fn write_svg(
    e: &Engine,
    stories: &[Story],
    opts: &PictureOpts,
    title: &str,
    out: &mut impl Write,
) -> Result<(), PictureError> {
    out.write_all(svg(e, stories, opts, title)?.as_bytes())?;
    Ok(())
}

#[cfg(test)]
mod geometry_tests;
#[cfg(test)]
mod tests;
