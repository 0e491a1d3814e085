//! Rendering: `draw(frame, &AppState)`, a pure function of the state (time included: the
//! state carries its clock). Only the rows on screen are formatted, so a frame costs
//! O(screen), whatever the size of the tree.

use std::fmt::Write as _;

use ratatui::layout::{Alignment, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use ratatui::Frame;

use crate::escape::escape;
use crate::lineage::view::{marks, Mark};
use crate::lineage::{How, LineageEntry, Process, Reaper, Role, Story, StoryStep};

use super::action::KEY_HELP;
use super::quiz;
use super::state::layout::{active_pane, layout};
use super::state::{AppState, Mode, Pane, Row, RowKind};

/// Colour only when the terminal may show it (`NO_COLOR` unset); modifiers always.
fn fg(s: &AppState, c: Color) -> Style {
    if s.view.color {
        Style::new().fg(c)
    } else {
        Style::new()
    }
}

/// A pane's frame: a title line on top, and a left edge when it sits in the right column.
fn pane_block<'a>(s: &AppState, area: Rect, title: String, pane: Option<Pane>) -> Block<'a> {
    let focused = pane.is_some_and(|p| p == active_pane(s));
    let style = if focused {
        fg(s, Color::Cyan).add_modifier(Modifier::BOLD)
    } else {
        Style::new().add_modifier(Modifier::DIM)
    };
    let borders = if area.x > 0 {
        Borders::TOP | Borders::LEFT
    } else {
        Borders::TOP
    };
    Block::new()
        .borders(borders)
        .border_style(style)
        .title(Span::styled(format!(" {title} "), style))
}

/// Draws the whole screen.
pub fn draw(f: &mut Frame, s: &AppState) {
    let area = f.area();
    if area.width < 20 || area.height < 5 {
        f.render_widget(Paragraph::new("terminal too small"), area);
        return;
    }
    let a = layout(area, s);
    if !a.tree.is_empty() {
        draw_tree(f, s, a.tree);
    }
    if let Some(r) = a.detail {
        draw_detail(f, s, r);
    }
    if let Some(r) = a.story {
        draw_story(f, s, r);
    }
    if !a.log.is_empty() {
        draw_log(f, s, a.log);
    }
    draw_status(f, s, a.status);
    if s.view.show_help {
        draw_help(f, s, area);
    }
}

// ---- tree ----

fn role_color(r: Role) -> Color {
    match r {
        Role::RuntimeDaemon => Color::Blue,
        Role::Shim => Color::Magenta,
        Role::OciRuntime { .. } => Color::Yellow,
        Role::OciInit { .. } => Color::LightYellow,
        Role::Container => Color::Green,
        Role::Sandbox => Color::Gray,
        Role::CniPlugin => Color::LightBlue,
    }
}

/// pstree connectors for a row: ancestors' verticals then its own branch.
fn prefix(rows: &[Row], i: usize, max_levels: usize) -> String {
    let row = rows[i];
    if row.depth == 0 {
        return String::new();
    }
    let mut levels: Vec<bool> = Vec::new(); // ancestor is last (from nearest up)
    let mut cur = row.parent_row;
    let mut truncated = false;
    while let Some(p) = cur {
        let r = rows[p];
        if r.depth == 0 {
            break;
        }
        if levels.len() >= max_levels {
            truncated = true;
            break;
        }
        levels.push(r.last);
        cur = r.parent_row;
    }
    let mut s = String::with_capacity(levels.len() * 3 + 4);
    if truncated {
        s.push('…');
    }
    for &last in levels.iter().rev() {
        s.push_str(if last { "   " } else { "│  " });
    }
    s.push_str(if row.last { "└─ " } else { "├─ " });
    s
}

fn proc_spans<'a>(s: &AppState, p: &Process, row: &Row) -> Vec<Span<'a>> {
    let mut v = Vec::with_capacity(10);
    let base = if p.exited {
        Style::new().add_modifier(Modifier::DIM)
    } else {
        Style::new()
    };
    v.push(Span::styled(
        p.pid.to_string(),
        base.patch(fg(s, Color::Cyan)),
    ));
    let name_style = if s.search.matches(p) {
        base.patch(fg(s, Color::Yellow))
            .add_modifier(Modifier::UNDERLINED | Modifier::BOLD)
    } else {
        base.add_modifier(Modifier::BOLD)
    };
    v.push(Span::raw(" "));
    v.push(Span::styled(escape(&p.name()).into_owned(), name_style));
    // Next to the name, where a long row is never cut.
    if s.clock.is_new(p.id) {
        v.push(Span::styled(
            " new",
            fg(s, Color::Green).add_modifier(Modifier::BOLD),
        ));
    }
    let mut folded = (row.folded_children > 0)
        .then(|| Span::styled(format!(" [+{}]", row.folded_children), fg(s, Color::Cyan)));
    // The thread count shows here only while the thread rows are hidden.
    for m in marks(p, !s.tree.show_threads) {
        // The pod view names the pod and container once, on their group rows.
        if s.tree.pod_view && matches!(m, Mark::Pod(_) | Mark::Container(_)) {
            continue;
        }
        if !matches!(
            m,
            Mark::Role(_) | Mark::Container(_) | Mark::Pod(_) | Mark::Threads(_)
        ) {
            v.extend(folded.take());
        }
        v.push(Span::styled(m.text(), mark_style(s, &m, base)));
    }
    v.extend(folded.take());
    v
}

fn mark_style(s: &AppState, m: &Mark<'_>, base: Style) -> Style {
    let mark = base.patch(fg(s, Color::Yellow));
    match m {
        Mark::Role(r) => base.patch(fg(s, role_color(*r))),
        Mark::Container(_) | Mark::Pod(_) => base.patch(fg(s, Color::Magenta)),
        Mark::Subreaper => base.patch(fg(s, Color::Blue)),
        Mark::CloneParent(_) | Mark::NsPid(_) => mark,
        Mark::Adopted(_) | Mark::Reparented => mark.add_modifier(Modifier::BOLD),
        Mark::Threads(_)
        | Mark::Uid(_)
        | Mark::Placeholder
        | Mark::ParentUnknown
        | Mark::ParentInferred
        | Mark::FlagsUnknown
        | Mark::ExecUnconfirmed
        | Mark::InitialProcess
        | Mark::MachineInit
        | Mark::Exit(_) => base,
    }
}

/// `text` cut to `max` terminal columns (a wide character takes two), the cut shown by `…`.
fn clipped(text: &str, max: usize) -> String {
    let width = |s: &str| Span::raw(s).width();
    if width(text) <= max {
        return text.to_string();
    }
    let mut t = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = width(c.encode_utf8(&mut [0; 4]));
        if used + w > max.saturating_sub(1) {
            break;
        }
        used += w;
        t.push(c);
    }
    t.push('…');
    t
}

/// The status bar's scope: `pod tracer-lab/web · container master` (names escaped, each
/// bounded: the recording or the user chose them).
fn scope_text(scope: &crate::lineage::PodScope) -> String {
    let mut t = format!("pod {}", clipped(&escape(&scope.pod_text()), 40));
    if let Some(c) = scope.container() {
        let _ = write!(t, " · container {}", clipped(&escape(c), 24));
    }
    t
}

/// A pod view header: `pod shop/web-7d9f (uid u-42)`, `container nginx {cid:…}`, `sandbox`.
fn group_span<'a>(s: &AppState, p: &Process, pod: bool) -> Span<'a> {
    let k = p.k8s.as_deref();
    let text = if pod {
        let name = k.and_then(|k| k.pod_text()).unwrap_or_default();
        match k.and_then(|k| k.pod.as_ref()).map(|p| p.uid.as_str()) {
            Some(uid) if !uid.is_empty() => format!("pod {name} (uid {uid})"),
            _ => format!("pod {name}"),
        }
    } else {
        let cid = p
            .container_id
            .as_deref()
            .map(|c| format!(" {{cid:{}}}", crate::lineage::view::short_cid(c)))
            .unwrap_or_default();
        match k.and_then(|k| k.container_name.as_deref()) {
            Some(n) => format!("container {n}{cid}"),
            None => format!("sandbox{cid}"),
        }
    };
    let style = Style::new().add_modifier(Modifier::BOLD);
    Span::styled(
        escape(&text).into_owned(),
        style.patch(fg(s, Color::Magenta)),
    )
}

/// The tree pane's title: the live count (or the pods), the focus, what is hidden, the search.
fn tree_title(s: &AppState) -> String {
    let mut title = format!("processes {} live", s.tree.live_processes);
    if s.tree.pod_view {
        let pods = s
            .tree
            .rows
            .iter()
            .filter(|r| matches!(r.kind, RowKind::Pod(_)))
            .count();
        title = format!("pods {pods} · containers → processes (p: tree)");
    }
    if let Some(p) = s.tree.focus_root.and_then(|id| s.engine.get(id)) {
        let _ = write!(title, " · focus {} {}", p.pid, escape(&p.name()));
    }
    if !s.tree.show_exited {
        title.push_str(" · exited hidden");
    }
    if !s.search.query.is_empty() {
        let _ = write!(title, " · /{}", s.search.query);
    }
    title
}

/// Tree row `i`: its connectors, then what it shows; the cursor's reversed, a new one bold.
fn tree_line(s: &AppState, i: usize, max_levels: usize) -> Line<'static> {
    let row = s.tree.rows[i];
    let mut spans = vec![Span::styled(
        prefix(&s.tree.rows, i, max_levels),
        Style::new().add_modifier(Modifier::DIM),
    )];
    match row.kind {
        RowKind::Proc(id) => {
            if let Some(p) = s.engine.get(id) {
                spans.extend(proc_spans(s, p, &row));
            }
        }
        RowKind::Pod(id) | RowKind::Container(id) => {
            if let Some(p) = s.engine.get(id) {
                spans.push(group_span(s, p, matches!(row.kind, RowKind::Pod(_))));
            }
        }
        RowKind::Thread { proc, tid } => {
            let name = s
                .engine
                .get(proc)
                .map(|p| match p.threads.iter().find(|t| t.tid == tid) {
                    Some(t) if !t.comm.is_empty() => t.comm.to_string(),
                    _ => p.name(),
                })
                .unwrap_or_default();
            spans.push(Span::styled(
                format!("{{{}}} {tid}", escape(&name)),
                Style::new().add_modifier(Modifier::DIM),
            ));
        }
    }
    let line = Line::from(spans);
    if i == s.tree.cursor {
        line.style(Style::new().add_modifier(Modifier::REVERSED))
    } else if matches!(row.kind, RowKind::Proc(id) if s.clock.is_new(id)) {
        line.style(Style::new().add_modifier(Modifier::BOLD))
    } else {
        line
    }
}

fn draw_tree(f: &mut Frame, s: &AppState, area: Rect) {
    let mut title = tree_title(s);
    // The block is drawn after the rows: the title says whether rows go past the edge.
    let block = pane_block(s, area, String::new(), Some(Pane::Tree));
    let inner = block.inner(area);
    let h = inner.height as usize;
    if s.tree.rows.is_empty() {
        f.render_widget(pane_block(s, area, title, Some(Pane::Tree)), area);
        f.render_widget(
            Paragraph::new(Line::styled(
                "no processes yet",
                Style::new().add_modifier(Modifier::DIM),
            )),
            inner,
        );
        return;
    }
    // The reducer keeps the offset; clamp again in case the size changed since.
    let mut off = s.tree.offset.min(s.tree.rows.len().saturating_sub(1));
    if s.tree.cursor < off {
        off = s.tree.cursor;
    } else if h > 0 && s.tree.cursor >= off + h {
        off = s.tree.cursor + 1 - h;
    }
    let max_levels = ((inner.width as usize + s.tree.hscroll as usize) / 3).max(2);
    let lines: Vec<Line> = (off..(off + h).min(s.tree.rows.len()))
        .map(|i| tree_line(s, i, max_levels))
        .collect();
    let widest = lines.iter().map(Line::width).max().unwrap_or(0);
    let room = inner.width as usize;
    let hs = (s.tree.hscroll as usize).min(widest.saturating_sub(room));
    // Scrolled: where, and whether rows go on past the right edge.
    if hs > 0 {
        let _ = write!(title, " · ◂ col {hs}");
        if widest > room + hs {
            title.push_str(" · > more");
        }
    }
    f.render_widget(pane_block(s, area, title, Some(Pane::Tree)), area);
    f.render_widget(Paragraph::new(lines).scroll((0, hs as u16)), inner);
}

// ---- detail ----

/// The selected process's detail pane, one section after another. `draw_detail` inserts a
/// thread's line after the first (the header), so the header stays one line.
fn detail_lines(s: &AppState, p: &Process) -> Vec<Line<'static>> {
    let mut out = vec![detail_header(p)];
    out.extend(detail_command(s, p));
    out.extend(detail_lineage(s, p));
    out.push(detail_exit(s, p));
    out.extend(detail_cgroup(s, p));
    out.extend(detail_pidns(s, p));
    out.extend(detail_subreaper(s, p));
    out.push(detail_threads(s, p));
    out.extend(detail_history(s, p));
    out
}

/// A detail row's key, padded to one column.
fn detail_key(s: &AppState, k: &str) -> Span<'static> {
    Span::styled(format!("{k:<10}"), fg(s, Color::Cyan))
}

/// Who it is: pid, name, role, and the container and pod it belongs to (from the runtime's
/// argv and the bundle's annotations).
fn detail_header(p: &Process) -> Line<'static> {
    let mut head = format!("{} {}", p.pid, escape(&p.name()));
    if let Some(r) = p.role {
        let _ = write!(head, " [{r}]");
    }
    if let Some(c) = &p.container_id {
        let _ = write!(head, " container {}", escape(c));
    }
    if let Some(k) = &p.k8s {
        if let Some(pod) = k.pod_text() {
            let _ = write!(head, " pod {pod}");
        }
        if let Some(c) = &k.container_name {
            let _ = write!(head, " ({c})");
        }
    }
    Line::styled(head, Style::new().add_modifier(Modifier::BOLD))
}

/// What it runs: the executable and argv of its latest exec (a fork shares its creator's
/// until it execs), `…` when the source cut argv short. Escaped: the traced process wrote them.
fn detail_command(s: &AppState, p: &Process) -> Vec<Line<'static>> {
    let mut argv = p
        .argv
        .iter()
        .map(|a| escape(a))
        .collect::<Vec<_>>()
        .join(" ");
    if p.argv_truncated {
        argv.push_str(" …");
    }
    vec![
        Line::from(vec![
            detail_key(s, "exe"),
            Span::raw(escape(p.exe.as_deref().unwrap_or("?")).into_owned()),
        ]),
        Line::from(vec![detail_key(s, "argv"), Span::raw(argv)]),
    ]
}

/// Its parents over time: the birth (kernel/fork.c copy_process; the caller differs from the
/// parent with CLONE_PARENT), then each adoption (kernel/exit.c find_new_reaper). Both of
/// those are why a parent is not who called clone, so they stand out.
fn detail_lineage(s: &AppState, p: &Process) -> Vec<Line<'static>> {
    p.lineage
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let mut t = if i == 0 {
                birth_text(l)
            } else {
                let mut t = format!("{} by {}", l.how, l.parent);
                if let Some(r) = l.reason_text() {
                    let _ = write!(t, ": {r}");
                }
                t
            };
            let _ = write!(t, " @{}", l.seq);
            let k = if i == 0 { "born" } else { "" };
            let style = if l.how == How::Adopted || l.how == How::CloneParent {
                fg(s, Color::Yellow)
            } else {
                Style::new()
            };
            Line::from(vec![detail_key(s, k), Span::styled(t, style)])
        })
        .collect()
}

/// `clone by 300 (thread 301) (clone3) → parent 200 [CLONE_PARENT]`: how it was born, by
/// which process and thread, and the parent the kernel gave it.
fn birth_text(l: &LineageEntry) -> String {
    let mut t = l.how.to_string();
    if let Some(c) = l.caller {
        let _ = write!(t, " by {c}");
        if let Some(tid) = l.caller_tid.filter(|&t| t != c) {
            let _ = write!(t, " (thread {tid})");
        }
    }
    if let Some(sc) = l.syscall {
        let _ = write!(t, " ({sc})");
    }
    let _ = write!(t, " → parent {}", l.parent);
    if let Some(fl) = l.flags_text() {
        if !fl.is_empty() {
            let _ = write!(t, " [{fl}]");
        }
    }
    t
}

/// Its end: the exit status (code or signal) and the event that showed it, or running.
fn detail_exit(s: &AppState, p: &Process) -> Line<'static> {
    let exit = if p.exited {
        let mut t = p.death().map(|d| d.to_string()).unwrap_or_default();
        if let Some(q) = p.exit_seq {
            let _ = write!(t, " @{q}");
        }
        t
    } else {
        "running".into()
    };
    Line::from(vec![detail_key(s, "exit"), Span::raw(exit)])
}

/// Its cgroup, inherited at fork (kernel/cgroup/cgroup.c cgroup_fork), and every move into
/// another one (a write to `cgroup.procs`, cgroup_attach_task), with who made it.
fn detail_cgroup(s: &AppState, p: &Process) -> Vec<Line<'static>> {
    let current = p
        .cgroup
        .as_ref()
        .map(|cg| Line::from(vec![detail_key(s, "cgroup"), Span::raw(cg.to_string())]));
    let moves = p.cgroup_moves().iter().map(|m| {
        let t = format!("moved to {} by {} @{}", m.path, m.by, m.seq);
        Line::from(vec![detail_key(s, ""), Span::raw(t)])
    });
    current.into_iter().chain(moves).collect()
}

/// Its pid namespace when not the host's: its pid there (what `getpid()` returns inside, one
/// of the pids kernel/pid.c alloc_pid gives at each level) and the nesting level.
fn detail_pidns(s: &AppState, p: &Process) -> Option<Line<'static>> {
    let ns = p.pidns.filter(|ns| ns.level > 0)?;
    let id = if ns.is_known() {
        format!("pid:[{}]", ns.inum)
    } else {
        "inferred".into()
    };
    let pid = match ns.ns_pid {
        0 => "?".to_string(),
        n => n.to_string(),
    };
    let t = format!("pid {pid} in {id} (level {})", ns.level);
    Some(Line::from(vec![detail_key(s, "pidns"), Span::raw(t)]))
}

/// Whether its orphans come to it, each fact under its own name: `subreaper`, its own
/// PR_SET_CHILD_SUBREAPER (kernel/sys.c prctl sets `is_child_subreaper`); `inherited`, the
/// kernel's `has_child_subreaper` flag (copied at fork, never cleared: it says an ancestor
/// was a subreaper then, not that one lives now); `orphans→`, the model's find_new_reaper
/// walk for it now, the one an adoption step tells.
fn detail_subreaper(s: &AppState, p: &Process) -> Vec<Line<'static>> {
    let sub = match (p.is_subreaper, p.subreaper_seq()) {
        (true, Some(q)) => format!("yes (PR_SET_CHILD_SUBREAPER @{q})"),
        (true, None) => "yes".into(),
        (false, Some(q)) => match p.subreaper_cleared_seq() {
            Some(c) => format!("no (set @{q}, cleared @{c})"),
            None => "no".into(),
        },
        (false, None) => "no".into(),
    };
    let mut out = vec![Line::from(vec![detail_key(s, "subreaper"), Span::raw(sub)])];
    if p.has_child_subreaper && !p.is_subreaper {
        out.push(Line::from(vec![
            detail_key(s, "inherited"),
            Span::raw("has_child_subreaper (kernel flag)"),
        ]));
    }
    let walk = s.engine.orphans_would_go_to(p.id);
    // A pid 1 has no one to hand its orphans to; an exited process has none left.
    if !p.exited && walk.is_none_or(|(pid, _)| pid != p.pid) {
        let to = match walk {
            Some((pid, Reaper::Subreaper(_))) => format!("{pid} (nearest live subreaper)"),
            Some((pid, Reaper::Init)) => format!("{pid} (no live subreaper ancestor: init)"),
            Some((pid, _)) => format!("{pid} (its pid namespace's init)"),
            None => "its pid namespace's init (not seen)".into(),
        };
        out.push(Line::from(vec![detail_key(s, "orphans→"), Span::raw(to)]));
    }
    out
}

/// Its live threads (CLONE_THREAD: same tgid), the first dozen of them.
fn detail_threads(s: &AppState, p: &Process) -> Line<'static> {
    let tids: Vec<String> = p.live_tids().take(12).map(|t| t.to_string()).collect();
    let n = p.live_thread_count();
    let mut th = if n == 0 {
        "none live".to_string()
    } else {
        format!("{n} live: {}", tids.join(" "))
    };
    if n > tids.len() {
        th.push_str(" …");
    }
    Line::from(vec![detail_key(s, "threads"), Span::raw(th)])
}

/// What it became: every exec (fs/exec.c begin_new_exec resets the comm), then every
/// PR_SET_NAME rename (kernel/sys.c → set_task_comm, per thread: runc's init stages).
fn detail_history(s: &AppState, p: &Process) -> Vec<Line<'static>> {
    let execs = p.execs.iter().map(|x| {
        Line::from(vec![
            detail_key(s, "exec"),
            Span::raw(format!("{} @{}", escape(&x.exe), x.seq)),
        ])
    });
    let renames = p.renames().iter().map(|r| {
        Line::from(vec![
            detail_key(s, "renamed"),
            Span::raw(format!(
                "{} (tid {}) @{}",
                escape(&r.comm.to_string()),
                r.tid,
                r.seq
            )),
        ])
    });
    execs.chain(renames).collect()
}

fn draw_detail(f: &mut Frame, s: &AppState, area: Rect) {
    let p = s.selected_process();
    let title = match p {
        Some(p) => format!("process {}", p.pid),
        None => "process".into(),
    };
    let block = pane_block(s, area, title, None);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let lines = match p {
        Some(p) => match s.tree.selected {
            Some(RowKind::Thread { tid, .. }) => {
                let mut l = detail_lines(s, p);
                l.insert(
                    1,
                    Line::from(format!("thread {tid} of {} {}", p.pid, escape(&p.name()))),
                );
                l
            }
            _ => detail_lines(s, p),
        },
        None => vec![Line::styled(
            "nothing selected",
            Style::new().add_modifier(Modifier::DIM),
        )],
    };
    f.render_widget(Paragraph::new(lines), inner);
}

// ---- story ----

fn draw_story(f: &mut Frame, s: &AppState, area: Rect) {
    let mut title = format!("stories {} ([ ] steps, Enter jumps", s.story.stories.len());
    title.push_str(if s.view.show_explain {
        ", e hides why, z zooms)"
    } else {
        ")"
    });
    if s.playback.guided {
        title = format!("guided · {title}");
    }
    let block = pane_block(s, area, title, Some(Pane::Story));
    let mut inner = block.inner(area);
    f.render_widget(block, area);
    if s.story.stories.is_empty() {
        f.render_widget(
            Paragraph::new(Line::styled(
                "no container birth seen yet",
                Style::new().add_modifier(Modifier::DIM),
            )),
            inner,
        );
        return;
    }
    let (lines, cursor_line, header_line) = story_lines(s, inner.width);
    if s.view.show_explain || s.quiz.on {
        if let Some((story, step)) = s.story.current() {
            let why = match s.quiz.on {
                true => quiz_lines(s, story, step, inner.width),
                false => why_lines(s, story, step, inner.width),
            };
            // The steps keep a third of the pane (at least three rows, fewer if there are
            // fewer); `m` pages through an explanation cut short, `z` gives it the screen.
            let keep = (lines.len() as u16).min((inner.height / 3).max(3));
            let wh = (why.len() as u16).min(inner.height.saturating_sub(keep));
            let r = Rect::new(inner.x, inner.y + inner.height - wh, inner.width, wh);
            inner.height -= wh;
            let shown = paged(s, why, usize::from(wh), s.story.why_pages(), "m");
            f.render_widget(Paragraph::new(shown), r);
        }
    }
    let h = inner.height as usize;
    let off = cursor_line
        .saturating_sub(h / 2)
        .min(lines.len().saturating_sub(h));
    let below = lines.len() > off + h;
    // The selected step's story stays named: its header takes the first row once scrolled off.
    let header = (header_line < off && cursor_line > off).then(|| lines[header_line].clone());
    let mut shown: Vec<Line> = lines.into_iter().skip(off).take(h).collect();
    if let (Some(hd), Some(first)) = (header, shown.first_mut()) {
        *first = hd;
    }
    if below && h > 1 {
        shown.pop();
        shown.push(more_line(s, "↑↓ steps"));
    }
    f.render_widget(Paragraph::new(shown), inner);
}

/// The story pane's lines, each story's header then its steps; the cursor's line and its
/// story's header line.
fn story_lines(s: &AppState, width: u16) -> (Vec<Line<'static>>, usize, usize) {
    let at = s.last_seq();
    let mut lines = Vec::new();
    let (mut cursor_line, mut header_line) = (0, 0);
    let mut k = 0;
    for st in &s.story.stories {
        let header = lines.len();
        lines.push(Line::styled(
            crate::lineage::view::story_header(st, true),
            Style::new().add_modifier(Modifier::BOLD),
        ));
        for step in &st.steps {
            let cur = k == s.story.cursor;
            if cur {
                cursor_line = lines.len();
                header_line = header;
            }
            let future = s.mode == Mode::Replay && at.is_none_or(|a| step.seq > a);
            let mut style = if future {
                Style::new().add_modifier(Modifier::DIM)
            } else {
                Style::new()
            };
            if cur {
                style = style.add_modifier(Modifier::REVERSED);
            }
            let mark = if cur { "▸" } else { " " };
            let text = format!("{mark} {:>6}  {}", step.seq, step_text(s, k, step, future));
            if s.view.zoom {
                // Zoomed: whole steps, wrapped under their text.
                let opts = textwrap::Options::new(usize::from(width.max(20)))
                    .subsequent_indent("          ");
                for l in textwrap::wrap(&text, opts) {
                    lines.push(Line::styled(l.into_owned(), style));
                }
            } else {
                // Cut where the pane ends, and said so: the whole text is on the `why:` line.
                lines.push(Line::styled(clipped(&text, usize::from(width)), style));
            }
            k += 1;
        }
    }
    (lines, cursor_line, header_line)
}

/// A step's line in the story pane; in quiz mode, a step not reached yet is not told (its
/// line could give an answer away), and the one asked about is its question.
fn step_text(s: &AppState, k: usize, step: &StoryStep, future: bool) -> String {
    if s.quiz.asking == Some(k) {
        return format!("? {}", escape(&quiz::question(step)));
    }
    match s.quiz.on && future {
        true => "· · ·".into(),
        false => escape(&step.text).into_owned(),
    }
}

/// The quiz's part of the story pane, in place of the explanation: the question open and
/// the answer typed; the verdict with the step's explanation; nothing of a step not reached.
fn quiz_lines(s: &AppState, story: &Story, step: &StoryStep, width: u16) -> Vec<Line<'static>> {
    let k = s.story.cursor;
    let width = usize::from(width.max(10));
    let head = fg(s, Color::Yellow).add_modifier(Modifier::BOLD);
    let wrap = |t: &str, style: Style| -> Vec<Line<'static>> {
        textwrap::wrap(t, width)
            .into_iter()
            .map(|l| Line::styled(l.into_owned(), style))
            .collect()
    };
    if s.quiz.asking == Some(k) {
        let mut out = wrap(&format!("── quiz: {}", escape(&quiz::question(step))), head);
        out.extend(wrap(
            &format!(
                "pid: {}█  (type it, or select the process in the tree; Enter answers, Esc passes)",
                s.quiz.typed
            ),
            Style::new(),
        ));
        out.extend(wrap(
            &score_text(s),
            Style::new().add_modifier(Modifier::DIM),
        ));
        return out;
    }
    if s.last_seq().is_none_or(|a| step.seq > a) {
        return wrap("── quiz: ] goes on (a question comes first)", head);
    }
    let Some(v) = s.quiz.verdict.as_ref().filter(|v| v.step == k) else {
        return match s.view.show_explain {
            true => why_lines(s, story, step, width as u16),
            false => Vec::new(),
        };
    };
    let truth = v
        .truth
        .map_or("not shown in the recording".into(), |p| p.to_string());
    let said = match (v.guess, v.right()) {
        (None, _) => format!("── passed: it is {truth}"),
        (Some(_), true) => format!("── right: {truth}"),
        (Some(g), false) => format!("── wrong: you said {g}, it is {truth}"),
    };
    let style = match v.right() {
        true => fg(s, Color::Green).add_modifier(Modifier::BOLD),
        false => fg(s, Color::Red).add_modifier(Modifier::BOLD),
    };
    let mut out = wrap(&said, style);
    out.extend(why_lines(s, story, step, width as u16));
    out.extend(wrap(
        &score_text(s),
        Style::new().add_modifier(Modifier::DIM),
    ));
    out
}

/// `quiz: 3 of 4 right`, and `— quiz over` once every question of the stories is asked.
fn score_text(s: &AppState) -> String {
    let over = match s.quiz.asked > 0 && s.quiz_left() == 0 && s.quiz.asking.is_none() {
        true => " — quiz over",
        false => "",
    };
    format!("quiz: {} of {} right{over}", s.quiz.right, s.quiz.asked)
}

/// `more ↓ (KEY)`: the text above goes on below the pane's edge.
fn more_line(s: &AppState, key: &str) -> Line<'static> {
    Line::styled(
        format!("── more ↓ ({key}) ──"),
        fg(s, Color::Yellow).add_modifier(Modifier::BOLD),
    )
}

/// Page `pages` (wrapping back to the first) of `lines` in `h` rows: the last row says
/// `more ↓` while the text goes on below.
fn paged(
    s: &AppState,
    lines: Vec<Line<'static>>,
    h: usize,
    pages: usize,
    key: &str,
) -> Vec<Line<'static>> {
    if lines.len() <= h || h < 2 {
        return lines.into_iter().take(h).collect();
    }
    let page = h - 1;
    let off = (pages % lines.len().div_ceil(page)) * page;
    let below = off + page < lines.len();
    let mut shown: Vec<Line> = lines.into_iter().skip(off).take(page).collect();
    if below {
        shown.push(more_line(s, key));
    } else {
        shown.push(Line::styled(
            "── end (m: from the top) ──",
            Style::new().add_modifier(Modifier::DIM),
        ));
    }
    shown
}

/// The explanation of `step` in `story`, wrapped to `width`: a rule, the text, its source.
fn why_lines(s: &AppState, story: &Story, step: &StoryStep, width: u16) -> Vec<Line<'static>> {
    let w = crate::lineage::explain::why(story, step);
    let width = usize::from(width.max(10));
    let head = fg(s, Color::Cyan).add_modifier(Modifier::BOLD);
    let mut out: Vec<Line> = textwrap::wrap(&format!("── why: {}", step.text), width)
        .into_iter()
        .map(|l| Line::styled(l.into_owned(), head))
        .collect();
    for l in textwrap::wrap(&w.text, width) {
        out.push(Line::raw(l.into_owned()));
    }
    for l in textwrap::wrap(&format!("source: {}", w.source), width) {
        out.push(Line::styled(
            l.into_owned(),
            fg(s, Color::Cyan).add_modifier(Modifier::DIM),
        ));
    }
    out
}

// ---- log ----

fn draw_log(f: &mut Frame, s: &AppState, area: Rect) {
    let lines = s.log.visible();
    let scope = if s.log.subtree_only {
        match s.selected_process() {
            Some(p) => format!("subtree of {}", p.pid),
            None => "subtree".into(),
        }
    } else {
        "all".into()
    };
    let follow = if s.log.cursor.is_some() {
        ""
    } else {
        " · following"
    };
    let block = pane_block(s, area, format!("log ({scope}){follow}"), Some(Pane::Log));
    let inner = block.inner(area);
    f.render_widget(block, area);
    let h = inner.height as usize;
    if lines.is_empty() {
        f.render_widget(
            Paragraph::new(Line::styled(
                "no events yet",
                Style::new().add_modifier(Modifier::DIM),
            )),
            inner,
        );
        return;
    }
    let (off, hl) = match s.log.cursor {
        Some(seq) => {
            let i = lines
                .iter()
                .position(|l| l.seq >= seq)
                .unwrap_or(lines.len() - 1);
            let hl = lines[i].seq;
            (
                i.saturating_sub(h / 2).min(lines.len().saturating_sub(h)),
                Some(hl),
            )
        }
        None => (lines.len().saturating_sub(h), None),
    };
    let out: Vec<Line> = lines
        .iter()
        .skip(off)
        .take(h)
        .map(|l| {
            let style = if Some(l.seq) == hl {
                Style::new().add_modifier(Modifier::REVERSED)
            } else if l.kind.is_end() {
                Style::new().add_modifier(Modifier::DIM)
            } else {
                Style::new()
            };
            match s.log.show_time {
                true => Line::styled(l.timed(s.log.time_clock), style),
                false => Line::styled(l.text.clone(), style),
            }
        })
        .collect();
    f.render_widget(Paragraph::new(out), inner);
}

// ---- status ----

fn speed_text(x: f64) -> String {
    if x >= 1.0 {
        format!("{}x", x.round() as u64)
    } else {
        format!("1/{}x", (1.0 / x).round() as u64)
    }
}

/// A replay's place on the status bar: the selected step's seq (which the position's count
/// is not), the position, and the quiz's score.
fn replay_position(s: &AppState, v: &mut Vec<Span<'static>>) {
    if let Some(st) = s.story.current_step().filter(|_| s.view.show_story) {
        v.push(Span::raw(format!("step seq {}", st.seq)));
        v.push(sep());
    }
    let end = match s.position() >= s.playback.total {
        true => " end",
        false => "",
    };
    v.push(Span::raw(format!(
        "event {}/{}{end}",
        s.position(),
        s.playback.total
    )));
    if s.quiz.on {
        v.push(sep());
        v.push(Span::styled(
            format!("quiz {}/{}", s.quiz.right, s.quiz.asked),
            fg(s, Color::Yellow).add_modifier(Modifier::BOLD),
        ));
    }
}

/// ` │ `, between the status bar's parts.
fn sep() -> Span<'static> {
    Span::styled(" │ ", Style::new().add_modifier(Modifier::DIM))
}

/// A count that says something was lost: red (reversed without colour) when not zero.
fn bad(s: &AppState, n: u64) -> Style {
    match (n > 0, s.view.color) {
        (false, _) => Style::new(),
        (true, true) => Style::new()
            .fg(Color::White)
            .bg(Color::Red)
            .add_modifier(Modifier::BOLD),
        (true, false) => Style::new().add_modifier(Modifier::REVERSED | Modifier::BOLD),
    }
}

/// The search being typed, in place of the status bar.
fn search_line(s: &AppState, q: &str) -> Line<'static> {
    Line::from(vec![
        Span::styled("/", fg(s, Color::Yellow).add_modifier(Modifier::BOLD)),
        Span::raw(q.to_string()),
        Span::styled("█", Style::new().add_modifier(Modifier::SLOW_BLINK)),
        Span::styled(
            "   name, pid or container id · Enter search · Esc cancel",
            Style::new().add_modifier(Modifier::DIM),
        ),
    ])
}

/// The mode's badge, the title and the scope.
fn status_head(s: &AppState) -> Vec<Span<'static>> {
    let (mode, mode_color) = match s.mode {
        Mode::Live => (" LIVE ", Color::Green),
        Mode::Replay if s.playback.following => (" FOLLOW ", Color::Green),
        Mode::Replay => (" REPLAY ", Color::Cyan),
    };
    let badge = if s.view.color {
        Style::new()
            .fg(Color::Black)
            .bg(mode_color)
            .add_modifier(Modifier::BOLD)
    } else {
        Style::new().add_modifier(Modifier::REVERSED | Modifier::BOLD)
    };
    let title = clipped(&escape(&s.title), 22);
    let mut v = vec![
        Span::styled(mode, badge),
        Span::raw(" "),
        Span::styled(title, Style::new().add_modifier(Modifier::BOLD)),
        sep(),
    ];
    if let Some(n) = &s.node {
        // The name comes from the stream: escaped, and bounded so the place stays in view.
        let name = clipped(&escape(&n.name), 24);
        v.push(Span::raw(format!("node {name} ({}/{})", n.at + 1, n.of)));
        v.push(sep());
    }
    if let Some(scope) = &s.pod {
        v.push(Span::raw(scope_text(scope)));
        v.push(sep());
    }
    v
}

/// Live: paused (and what waits), or whether a file is written; the target's end.
fn live_playback(s: &AppState, v: &mut Vec<Span<'static>>) {
    if s.playback.paused {
        v.push(Span::styled(
            format!("⏸ paused +{}", s.capture.pending.len()),
            fg(s, Color::Yellow).add_modifier(Modifier::BOLD),
        ));
    } else {
        match &s.status.recording {
            Some(file) => v.push(Span::styled(
                format!("● rec {}", crate::escape::escape(file)),
                fg(s, Color::Red),
            )),
            // The badge says LIVE; nothing is written to a file.
            None => v.push(Span::raw("not recorded")),
        }
    }
    if s.status.target_exited {
        v.push(sep());
        v.push(Span::raw("target exited"));
    }
}

/// The status bar's parts, left to right.
fn status_spans(s: &AppState) -> Vec<Span<'static>> {
    let mut v = status_head(s);
    // One count of events: replay, the position in the recording; live, those applied.
    match s.mode {
        Mode::Replay => replay_position(s, &mut v),
        Mode::Live => v.push(Span::raw(format!(
            "{} events {:.0}/s",
            s.stats.events,
            s.clock.rate()
        ))),
    }
    // Losses only when there are some.
    let gaps = s.stats.gaps();
    for (what, n) in [("drops", s.status.drops), ("gaps", gaps)] {
        if n > 0 {
            v.push(sep());
            v.push(Span::styled(format!("{what} {n}"), bad(s, n)));
        }
    }
    if s.log.hide_threads {
        v.push(sep());
        v.push(Span::raw("threads hidden"));
    }
    v.push(sep());
    match s.mode {
        Mode::Replay => {
            let play = if s.playback.paused { "⏸" } else { "▶" };
            let speed = speed_text(s.playback.speed);
            v.push(Span::raw(format!("{play} {speed}")));
        }
        Mode::Live => live_playback(s, &mut v),
    }
    if let Some(e) = &s.status.source_error {
        v.push(sep());
        v.push(Span::styled(e.clone(), bad(s, 1)));
    } else if let Some(m) = &s.status.message {
        v.push(sep());
        v.push(Span::styled(m.clone(), fg(s, Color::Yellow)));
    }
    v
}

fn draw_status(f: &mut Frame, s: &AppState, area: Rect) {
    if let Some(q) = &s.search.input {
        f.render_widget(Paragraph::new(search_line(s, q)), area);
        return;
    }
    let line = Line::from(status_spans(s));
    let used = line.width();
    f.render_widget(Paragraph::new(line), area);
    let help = "? help ";
    if area.width as usize > used + help.len() {
        let r = Rect::new(
            area.x + area.width - help.len() as u16,
            area.y,
            help.len() as u16,
            1,
        );
        f.render_widget(
            Paragraph::new(Span::styled(help, Style::new().add_modifier(Modifier::DIM)))
                .alignment(Alignment::Right),
            r,
        );
    }
}

// ---- help ----

fn draw_help(f: &mut Frame, s: &AppState, area: Rect) {
    let w = area.width.saturating_sub(2).min(76);
    let h = (KEY_HELP.len() as u16 + 2).min(area.height.saturating_sub(1));
    let r = Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height.saturating_sub(1) - h) / 2,
        w,
        h,
    );
    f.render_widget(Clear, r);
    let block = Block::bordered()
        .title(" keys (any key closes) ")
        .border_style(fg(s, Color::Cyan));
    let inner = block.inner(r);
    f.render_widget(block, r);
    let lines: Vec<Line> = KEY_HELP
        .iter()
        .map(|(k, d)| {
            Line::from(vec![
                Span::styled(
                    format!(" {k:<19}"),
                    fg(s, Color::Yellow).add_modifier(Modifier::BOLD),
                ),
                Span::raw(*d),
            ])
        })
        .collect();
    f.render_widget(Paragraph::new(lines), inner);
}
