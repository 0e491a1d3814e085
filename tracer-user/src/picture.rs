//! Pictures of a recording for training: an SVG timeline of the container births (one
//! lifeline per process, seq across, births, CLONE_PARENT, adoptions, exits, subreapers) and a
//! self-contained HTML page with the picture, the tree and the explained stories.
//!
//! Everything the recording controls (names, argv, paths, ids) is XML-escaped and bounded
//! before it is written ([`xml_text`]).

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::io::{self, Write};

use crate::export::{role_style, PidIndex};
use crate::lineage::{basename, explain, view, Engine, How, Phase, ProcId, Process, Story};

/// Longest caption or label kept, in characters (longer ones end with `…`).
const MAX_TEXT: usize = 72;
/// Width of the lane labels on the left.
const LABEL_W: usize = 330;
/// Width of one event column.
const COL_W: usize = 24;
/// Height of one lane.
const LANE_H: usize = 38;
/// Least height of the header (title and legend); the slanted captions may need more.
const MIN_HEAD_H: usize = 250;
/// Width of a caption character, in pixels (10.5 px sans-serif, generous).
const CHAR_W: f64 = 6.4;
/// Room on the right for the last slanted captions.
const RIGHT_W: usize = 300;
/// Slant of the captions, in degrees.
const SLANT: i32 = -55;
/// Most lifelines drawn: 2,000 lanes are already 76,000 px tall; past that a picture teaches
/// nothing and only grows the file, so the rest are left out with a note.
pub const MAX_LANES: usize = 2_000;
/// Most event columns drawn (240,000 px wide), for the same reason.
pub const MAX_COLS: usize = 10_000;

/// What [`write_svg`] draws.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PictureOpts {
    /// Every process the recording saw act (and their parents), not only the stories' actors.
    pub all: bool,
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
}

impl Mark {
    /// Order of marks at the same seq: a death before the adoptions it causes.
    fn rank(&self) -> u8 {
        match self {
            Mark::Birth { .. } => 0,
            Mark::Exec => 1,
            Mark::Rename => 2,
            Mark::Subreaper => 3,
            Mark::Exit(_) => 4,
            Mark::Adopted { .. } => 5,
        }
    }
}

/// One column: one event of one process.
struct Col {
    seq: u64,
    proc: ProcId,
    mark: Mark,
    caption: String,
    /// A story step (drawn bold).
    step: bool,
}

/// The processes drawn: the stories' actors, their parents at birth, their creators and
/// every parent that adopted one of them; with `all`, every process that acted.
fn actors(e: &Engine, stories: &[Story], all: bool) -> Vec<ProcId> {
    let index = PidIndex::new(e);
    let mut keep: HashSet<ProcId> = HashSet::new();
    if all {
        keep.extend(e.processes().filter(|p| view::acted(p)).map(|p| p.id));
    } else {
        for st in stories {
            for step in &st.steps {
                keep.extend(index.at(e, step.pid, step.seq));
            }
        }
    }
    let core: Vec<ProcId> = keep.iter().copied().collect();
    for id in core {
        let Some(p) = e.get(id) else { continue };
        keep.extend(p.birth_parent);
        keep.extend(p.creator);
        for l in p.lineage.iter().skip(1) {
            keep.extend(index.at(e, l.parent, l.seq));
        }
    }
    let mut v: Vec<ProcId> = keep.into_iter().collect();
    v.sort_by_key(|&id| e.get(id).map(|p| (p.start_seq, p.id)));
    v
}

fn birth_caption(e: &Engine, p: &Process) -> Option<(Mark, String)> {
    let b = p.lineage.first()?;
    if !matches!(
        b.how,
        How::Clone | How::CloneParent | How::Fork | How::Vfork
    ) {
        return None;
    }
    let caller = p.creator.and_then(|c| e.get(c));
    let caller_pid = caller.map_or_else(|| b.caller.unwrap_or(0), |c| c.pid);
    let clone_parent = b.how == How::CloneParent;
    let text = if clone_parent {
        format!(
            "{caller_pid} cloned {} with CLONE_PARENT: parent {}",
            p.pid, b.parent
        )
    } else {
        format!("{caller_pid} {} {}", verb(b.how), p.pid)
    };
    let from = p.birth_parent;
    let mark = Mark::Birth {
        from,
        caller: p.creator.filter(|c| Some(*c) != from),
        clone_parent,
    };
    Some((mark, text))
}

fn verb(h: How) -> &'static str {
    match h {
        How::Fork => "forked",
        How::Vfork => "vforked",
        _ => "cloned",
    }
}

/// Every column for the drawn processes, in seq order.
fn columns(e: &Engine, lanes: &[ProcId], stories: &[Story]) -> Vec<Col> {
    let index = PidIndex::new(e);
    let steps: HashSet<(u64, u32)> = stories
        .iter()
        .flat_map(|s| &s.steps)
        .map(|s| (s.seq, s.pid))
        .collect();
    let mut cols = Vec::new();
    for &id in lanes {
        let Some(p) = e.get(id) else { continue };
        let mut push = |seq: u64, mark: Mark, caption: String| {
            cols.push(Col {
                seq,
                proc: id,
                mark,
                caption,
                step: steps.contains(&(seq, p.pid)),
            })
        };
        if let Some((mark, text)) = birth_caption(e, p) {
            push(p.start_seq, mark, text);
        }
        for x in &p.execs {
            push(
                x.seq,
                Mark::Exec,
                format!("{} exec {}", p.pid, basename(&x.exe)),
            );
        }
        for r in &p.renames {
            push(r.seq, Mark::Rename, format!("{} renamed {}", p.pid, r.comm));
        }
        if let Some(s) = p.subreaper_seq {
            let t = format!("{} PR_SET_CHILD_SUBREAPER", p.pid);
            push(s, Mark::Subreaper, t);
        }
        if let Some(x) = p.exit_seq {
            let st = view::exit_text(p);
            push(
                x,
                Mark::Exit(st.clone()),
                format!("{} {} {st}", p.pid, p.name()),
            );
        }
        for l in p.lineage.iter().skip(1).filter(|l| l.how == How::Adopted) {
            let reason = l.reason_text().unwrap_or_default();
            let from = index.at(e, l.parent, l.seq);
            let t = format!("{} adopted by {}: {reason}", p.pid, l.parent);
            push(l.seq, Mark::Adopted { from }, t);
        }
    }
    cols.sort_by_key(|c| (c.seq, c.mark.rank(), c.proc));
    for c in &mut cols {
        c.caption = format!("{} {}", c.seq, c.caption);
    }
    cols
}

/// The lane's two label lines: `PID NAME` and its marks (role, container, …).
fn lane_label(p: &Process) -> (String, String) {
    let head = format!("{} {}", p.pid, p.name());
    let marks: String = view::marks(p, false)
        .iter()
        .filter(|m| {
            matches!(
                m,
                view::Mark::Role(_)
                    | view::Mark::Container(_)
                    | view::Mark::NsPid(_)
                    | view::Mark::Placeholder
            )
        })
        .map(|m| m.text())
        .collect();
    (head, marks.trim().to_string())
}

const STYLE: &str = "text{font-family:'DejaVu Sans',Verdana,sans-serif;font-size:11px;fill:#222}\
.t{font-size:16px;font-weight:bold}.lg{font-size:11px;fill:#444}.pid{font-weight:bold}\
.mk{font-size:10px;fill:#555}.cap{font-size:10.5px;fill:#666}.step{fill:#000;font-weight:bold}\
.grid{stroke:#e4e4e4;stroke-width:1}.birth{stroke:#222;stroke-width:1.6}\
.cp{stroke:#d95f02;stroke-width:2}.adopt{stroke:#3182bd;stroke-width:1.6;stroke-dasharray:5 3}\
.caller{fill:#fff;stroke:#d95f02;stroke-width:2}.st{font-size:9.5px;fill:#555}";

/// Geometry of the drawing.
struct Geo {
    cols: usize,
    lanes: usize,
    /// Height of the header: the baseline of the captions.
    head: usize,
}

impl Geo {
    fn new(cols: &[Col], lanes: usize) -> Geo {
        let longest = cols
            .iter()
            .map(|c| c.caption.chars().count().min(MAX_TEXT + 1))
            .max()
            .unwrap_or(0);
        let rise = longest as f64 * CHAR_W * f64::from(SLANT).to_radians().sin().abs();
        Geo {
            cols: cols.len(),
            lanes,
            head: MIN_HEAD_H.max(rise as usize + 16),
        }
    }

    fn x(&self, col: usize) -> usize {
        LABEL_W + 20 + col * COL_W + COL_W / 2
    }
    fn y(&self, lane: usize) -> usize {
        self.head + 20 + lane * LANE_H + LANE_H / 2
    }
    fn width(&self) -> usize {
        LABEL_W + 20 + self.cols.max(1) * COL_W + RIGHT_W
    }
    fn height(&self) -> usize {
        self.head + 20 + self.lanes.max(1) * LANE_H + 30
    }
    fn right(&self) -> usize {
        LABEL_W + 20 + self.cols.max(1) * COL_W
    }
}

/// The SVG timeline of `e`'s container births (see the module docs). `title` names the
/// recording.
pub fn svg(e: &Engine, stories: &[Story], opts: PictureOpts, title: &str) -> String {
    let mut lanes = actors(e, stories, opts.all);
    let all_lanes = lanes.len();
    lanes.truncate(MAX_LANES);
    let mut cols = columns(e, &lanes, stories);
    let all_cols = cols.len();
    cols.truncate(MAX_COLS);
    let lane_of: HashMap<ProcId, usize> =
        lanes.iter().enumerate().map(|(i, &id)| (id, i)).collect();
    let g = Geo::new(&cols, lanes.len());
    let mut s = String::with_capacity(4096 + cols.len() * 400 + lanes.len() * 300);
    let _ = write!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\">\
         <style>{STYLE}</style>\
         <defs><marker id=\"ahb\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" orient=\"auto-start-reverse\"><path d=\"M0,0L10,5L0,10z\" fill=\"#3182bd\"/></marker>\
         <marker id=\"aho\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" orient=\"auto-start-reverse\"><path d=\"M0,0L10,5L0,10z\" fill=\"#d95f02\"/></marker>\
         <marker id=\"ahk\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" orient=\"auto-start-reverse\"><path d=\"M0,0L10,5L0,10z\" fill=\"#222\"/></marker></defs>\
         <rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>",
        w = g.width(),
        h = g.height()
    );
    let scope = if opts.all {
        "every process that acted"
    } else {
        "the container births' actors"
    };
    let _ = write!(
        s,
        "<text class=\"t\" x=\"12\" y=\"26\">Container births: {}</text>\
         <text class=\"lg\" x=\"12\" y=\"44\">{} processes ({scope}), {} events; seq across, one lifeline per process</text>",
        xml_text(title, MAX_TEXT),
        lanes.len(),
        cols.len()
    );
    legend(&mut s);
    if all_lanes > lanes.len() || all_cols > cols.len() {
        let _ = write!(
            s,
            "<text class=\"lg\" x=\"12\" y=\"62\">Cut to the first {} of {all_lanes} processes and {} of {all_cols} events (by seq): narrow it with --pod, or leave out --all</text>",
            lanes.len(),
            cols.len()
        );
    }
    if lanes.is_empty() {
        let _ = write!(
            s,
            "<text class=\"lg\" x=\"12\" y=\"{}\">no container birth found (--all draws every process)</text>",
            g.head + 30
        );
    }
    draw_grid_and_captions(&mut s, &g, &cols);
    draw_lanes(&mut s, e, &g, &lanes, &cols);
    draw_marks(&mut s, &g, &cols, &lane_of);
    s.push_str("</svg>\n");
    s
}

fn legend(s: &mut String) {
    let rows: [(&str, &str); 6] = [
        ("<line class=\"birth\" x1=\"0\" y1=\"0\" x2=\"28\" y2=\"0\" marker-end=\"url(#ahk)\"/>", "born: clone/fork, arrow from the parent"),
        ("<line class=\"cp\" x1=\"0\" y1=\"0\" x2=\"28\" y2=\"0\" marker-end=\"url(#aho)\"/><circle class=\"caller\" cx=\"0\" cy=\"0\" r=\"4\"/>", "CLONE_PARENT: born to the caller's parent (○ the caller)"),
        ("<line class=\"adopt\" x1=\"0\" y1=\"0\" x2=\"28\" y2=\"0\" marker-end=\"url(#ahb)\"/>", "adopted: to its new parent, when its parent exited"),
        ("<path d=\"M14,-6L20,0L14,6L8,0z\" fill=\"#6a51a3\"/>", "PR_SET_CHILD_SUBREAPER"),
        ("<circle cx=\"14\" cy=\"0\" r=\"4\" fill=\"#31a354\"/><rect x=\"24\" y=\"-4\" width=\"8\" height=\"8\" fill=\"#fd8d3c\"/>", "exec ● · rename (PR_SET_NAME) ▪"),
        ("<line x1=\"0\" y1=\"0\" x2=\"20\" y2=\"0\" stroke=\"#888\" stroke-width=\"4\"/><line x1=\"20\" y1=\"-7\" x2=\"20\" y2=\"7\" stroke=\"#000\" stroke-width=\"2\"/>", "lifeline, ending at the exit (status below)"),
    ];
    for (i, (icon, text)) in rows.iter().enumerate() {
        let y = 72 + i * 20;
        let _ = write!(
            s,
            "<g transform=\"translate(16,{y})\">{icon}</g><text class=\"lg\" x=\"56\" y=\"{}\">{text}</text>",
            y + 4
        );
    }
    let _ = write!(
        s,
        "<text class=\"lg\" x=\"12\" y=\"{}\">Captions (bold: story steps) name each event by seq.</text>",
        72 + rows.len() * 20 + 6
    );
}

fn draw_grid_and_captions(s: &mut String, g: &Geo, cols: &[Col]) {
    let bottom = g.height() - 20;
    for (i, c) in cols.iter().enumerate() {
        let x = g.x(i);
        let _ = write!(
            s,
            "<line class=\"grid\" x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{bottom}\"/>",
            g.head + 4
        );
        let class = if c.step { "cap step" } else { "cap" };
        let y = g.head;
        let _ = write!(
            s,
            "<text class=\"{class}\" x=\"{}\" y=\"{y}\" transform=\"rotate({SLANT} {x} {y})\">{}</text>",
            x + 3,
            xml_text(&c.caption, MAX_TEXT)
        );
    }
}

/// Each drawn process's birth and exit columns, found in one pass over the columns.
fn lane_ends(cols: &[Col]) -> HashMap<ProcId, (Option<usize>, Option<usize>)> {
    let mut ends: HashMap<ProcId, (Option<usize>, Option<usize>)> = HashMap::new();
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

fn draw_lanes(s: &mut String, e: &Engine, g: &Geo, lanes: &[ProcId], cols: &[Col]) {
    let ends = lane_ends(cols);
    for (k, &id) in lanes.iter().enumerate() {
        let Some(p) = e.get(id) else { continue };
        let y = g.y(k);
        let (head, marks) = lane_label(p);
        let _ = write!(
            s,
            "<text class=\"pid\" x=\"12\" y=\"{}\">{}</text><text class=\"mk\" x=\"12\" y=\"{}\">{}</text>",
            y - 2,
            xml_text(&head, 44),
            y + 11,
            xml_text(&marks, 60)
        );
        let (birth, exit) = ends.get(&id).copied().unwrap_or_default();
        let start = birth.map_or(LABEL_W + 16, |i| g.x(i));
        let end = exit.map(|i| g.x(i));
        let (_, fill) = role_style(p.role);
        let stroke = if fill == "#ffffff" { "#9e9e9e" } else { fill };
        let _ = write!(
            s,
            "<line x1=\"{start}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\" stroke=\"{stroke}\" stroke-width=\"5\" stroke-linecap=\"round\"/>",
            end.unwrap_or(g.right())
        );
    }
}

fn draw_marks(s: &mut String, g: &Geo, cols: &[Col], lane_of: &HashMap<ProcId, usize>) {
    for (i, c) in cols.iter().enumerate() {
        let Some(&lane) = lane_of.get(&c.proc) else {
            continue;
        };
        let (x, y) = (g.x(i), g.y(lane));
        // A lane not drawn: a short arrow from just above.
        let lane_y = |p: Option<ProcId>| {
            p.and_then(|p| lane_of.get(&p))
                .map_or(y.saturating_sub(16), |&l| g.y(l))
        };
        // An arrow stops short of the lifeline it points at.
        let short = |to: usize, from: usize| if from < to { to - 5 } else { to + 5 };
        match &c.mark {
            Mark::Birth {
                from,
                caller,
                clone_parent,
            } => {
                let fy = lane_y(*from);
                let (class, head) = if *clone_parent {
                    ("cp", "aho")
                } else {
                    ("birth", "ahk")
                };
                arrow(s, class, head, x, fy, short(y, fy));
                if let Some(&l) = caller.and_then(|c| lane_of.get(&c)) {
                    let _ = write!(
                        s,
                        "<circle class=\"caller\" cx=\"{x}\" cy=\"{}\" r=\"5\"/>",
                        g.y(l)
                    );
                }
            }
            // From the orphan to its new parent.
            Mark::Adopted { from } => {
                let py = lane_y(*from);
                arrow(s, "adopt", "ahb", x, y, short(py, y));
            }
            glyph => draw_glyph(s, glyph, x, y),
        }
    }
}

fn arrow(s: &mut String, class: &str, head: &str, x: usize, y1: usize, y2: usize) {
    let _ = write!(
        s,
        "<line class=\"{class}\" x1=\"{x}\" y1=\"{y1}\" x2=\"{x}\" y2=\"{y2}\" marker-end=\"url(#{head})\"/>"
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
            x + 3,
            y + 16,
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
        Mark::Birth { .. } | Mark::Adopted { .. } => Ok(()),
    };
}

/// Writes [`svg`] to `out`.
pub fn write_svg(
    e: &Engine,
    opts: PictureOpts,
    title: &str,
    out: &mut impl Write,
) -> io::Result<()> {
    let stories = crate::lineage::stories(e);
    out.write_all(svg(e, &stories, opts, title).as_bytes())
}

const PAGE_STYLE: &str = "body{font-family:'DejaVu Sans',Verdana,sans-serif;margin:24px;color:#222;background:#fff;max-width:1400px}\
h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ccc}\
h3{font-size:15px}.pic{overflow-x:auto;border:1px solid #ddd}\
pre{background:#f6f6f6;padding:12px;overflow-x:auto;font-size:12px}\
ol{padding-left:0;list-style:none}li{margin:10px 0}.seq{font-family:monospace;color:#666;margin-right:8px}\
.why{margin:4px 0 0 72px;color:#333}.src{margin:2px 0 0 72px;color:#777;font-size:12px;font-family:monospace}";

/// One self-contained page (no network): the picture, the explained stories and the tree at
/// the end of the recording.
pub fn write_html(
    e: &Engine,
    opts: PictureOpts,
    title: &str,
    out: &mut impl Write,
) -> io::Result<()> {
    let stories = crate::lineage::stories(e);
    let t = xml_text(title, 200);
    let mut s = String::with_capacity(64 << 10);
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>Container births: {t}</title><style>{PAGE_STYLE}</style></head><body>\
         <h1>Container births: {t}</h1>\
         <p>Container births found: {}; execs into running containers: {}; deaths: {}. \
         The picture shows each process as a lifeline (seq across); \
         the stories explain every step with the kernel rule or runtime design behind it.</p>\
         <h2>Timeline</h2><div class=\"pic\">",
        stories.iter().filter(|s| s.phase.is_birth()).count(),
        stories.iter().filter(|s| s.phase == Phase::Exec).count(),
        stories.iter().filter(|s| s.phase == Phase::Death).count(),
    );
    s.push_str(&svg(e, &stories, opts, title));
    s.push_str("</div><h2>Stories</h2>");
    if stories.is_empty() {
        s.push_str("<p>No container birth found.</p>");
    }
    for st in &stories {
        let head = view::story_text(std::slice::from_ref(st));
        let head = head.lines().next().unwrap_or_default();
        let _ = write!(s, "<h3>{}</h3><ol>", xml_text(head, 200));
        for step in &st.steps {
            let w = explain::why(step.kind);
            let _ = write!(
                s,
                "<li><span class=\"seq\">seq {}</span>{}<p class=\"why\">{}</p><p class=\"src\">{}</p></li>",
                step.seq,
                xml_text(&step.text, 300),
                xml_text(w.text, 2000),
                xml_text(w.source, 300)
            );
        }
        s.push_str("</ol>");
    }
    let tree = view::traced_tree_text(e, view::TreeOpts::default());
    let tree: String = tree
        .lines()
        .map(|l| xml_text(l, 300))
        .collect::<Vec<_>>()
        .join("\n");
    let _ = writeln!(
        s,
        "<h2>Process tree at the end</h2><pre>{tree}</pre></body></html>"
    );
    out.write_all(s.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_text_escapes_markup_and_control_characters() {
        assert_eq!(
            xml_text("<a href=\"x\">&'\u{1b}[31m\0", 100),
            "&lt;a href=&quot;x&quot;&gt;&amp;&apos;\u{fffd}[31m\u{fffd}"
        );
        assert_eq!(xml_text("abcdef", 3), "abc…");
        // A right-to-left override would reorder what the picture shows: escaped as in text.
        assert_eq!(
            xml_text("a\u{202e}b\u{feff}", 100),
            "a\\342\\200\\256b\\357\\273\\277"
        );
    }

    #[test]
    fn a_picture_of_every_process_is_cut_with_a_note() {
        let mut e = Engine::new();
        for ev in crate::synth::chain(MAX_LANES as u32 + 10) {
            e.apply(&ev);
        }
        let svg = svg(&e, &[], PictureOpts { all: true }, "t");
        assert_eq!(svg.matches("<text class=\"pid\"").count(), MAX_LANES);
        // Each drawn lane's lifeline starts at its own birth column.
        assert_eq!(svg.matches("stroke-linecap=\"round\"").count(), MAX_LANES);
        assert!(svg.contains(&format!(
            "Cut to the first {MAX_LANES} of {} processes",
            MAX_LANES + 10
        )));
        let small = super::svg(&e, &[], PictureOpts { all: false }, "t");
        assert!(!small.contains("Cut to"));
    }

    #[test]
    fn a_lifeline_runs_from_its_birth_to_its_exit_column() {
        let evs: Vec<_> = crate::synth::fork_tree(4).into_iter().collect();
        let mut e = Engine::new();
        for ev in &evs {
            e.apply(ev);
        }
        let svg = svg(&e, &[], PictureOpts { all: true }, "t");
        // pid 1003's lifeline: from its own birth column to its own exit column, neither
        // another lane's.
        let cols = columns(&e, &actors(&e, &[], true), &[]);
        let at = |proc_pid: u32, pick: fn(&Mark) -> bool| {
            let i = cols
                .iter()
                .position(|c| e.get(c.proc).unwrap().pid == proc_pid && pick(&c.mark));
            i.map(|i| LABEL_W + 20 + i * COL_W + COL_W / 2)
        };
        let birth = at(1003, |m| matches!(m, Mark::Birth { .. })).unwrap();
        let exit = at(1003, |m| matches!(m, Mark::Exit(_))).unwrap();
        assert_ne!(birth, exit);
        let lifeline = format!("<line x1=\"{birth}\" y1=");
        let l = svg
            .find(&lifeline)
            .expect("the lifeline of 1003 starts at its birth");
        let element = svg[l..].split("/>").next().unwrap();
        assert!(element.contains(&format!("x2=\"{exit}\"")), "{element}");
    }
}
