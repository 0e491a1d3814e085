//! Exports of an event stream: JSON lines, Chrome trace-event JSON (Perfetto) and a
//! Graphviz lineage graph. Every export runs the events through the same [`Engine`] as live
//! tracing and replay.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::io::{self, Write};

use serde_json::{json, Value};

use crate::escape::escape;
use crate::event::{Event, EventKind};
use crate::lineage::{Engine, How, ProcId, Process, Reason, Role, SnapshotProcess};

/// One JSON object per line, exactly as `tracer trace --format json` prints events, each
/// with its wall time on the recording's `clock`.
pub fn write_jsonl(
    events: impl Iterator<Item = Event>,
    clock: crate::clock::Clock,
    out: &mut impl Write,
) -> io::Result<u64> {
    let mut n = 0;
    for ev in events {
        serde_json::to_writer(&mut *out, &ev.timed(&clock)).map_err(io::Error::from)?;
        out.write_all(b"\n")?;
        n += 1;
    }
    Ok(n)
}

/// Maps event timestamps to trace time in microseconds from the first event. Sources without
/// timestamps (ts 0) use the sequence number as the clock (1 seq = 1 µs).
#[derive(Clone, Copy, Debug, Default)]
struct Clock {
    t0: Option<u64>,
    use_ts: bool,
}

impl Clock {
    fn observe(&mut self, ev: &Event) {
        if self.t0.is_none() {
            self.use_ts = ev.ts_ns != 0;
            self.t0 = Some(if self.use_ts { ev.ts_ns } else { 0 });
        }
    }

    fn at(&self, ts_ns: u64, seq: u64) -> f64 {
        if self.use_ts {
            if ts_ns == 0 {
                return 0.0;
            }
            ts_ns.saturating_sub(self.t0.unwrap_or(0)) as f64 / 1000.0
        } else {
            seq as f64
        }
    }
}

/// Finds the record a pid denoted at a given seq (pids are reused). One sorted array, not a
/// list per pid: most pids have one record, and a million small lists cost more than the
/// records' ids.
pub(crate) struct PidIndex {
    /// (pid, record) by pid, then record id (creation order); the id as [`Id32`]: half the
    /// bytes of a `usize` on a million records.
    by_pid: Vec<(u32, Id32)>,
}

impl PidIndex {
    pub(crate) fn new(e: &Engine) -> Self {
        let mut by_pid: Vec<(u32, Id32)> = e.processes().map(|p| (p.pid, Id32::of(p.id))).collect();
        by_pid.sort_unstable();
        PidIndex { by_pid }
    }

    pub(crate) fn at(&self, e: &Engine, pid: u32, seq: u64) -> Option<ProcId> {
        let from = self.by_pid.partition_point(|&(p, _)| p < pid);
        let to = self.by_pid.partition_point(|&(p, _)| p <= pid);
        let ids = &self.by_pid[from..to];
        ids.iter()
            .rev()
            .map(|&(_, id)| id.get())
            .find(|&id| e.get(id).is_some_and(|p| p.start_seq <= seq))
            .or_else(|| ids.first().map(|&(_, id)| id.get()))
    }
}

/// A record id in four bytes, for the exports' tables over every record (a recording of
/// more than 2^32 records does not fit in memory anyway).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Id32(u32);

impl Id32 {
    /// `id` (saturated at `u32::MAX`, which no record reaches).
    pub(crate) fn of(id: ProcId) -> Id32 {
        Id32(u32::try_from(id).unwrap_or(u32::MAX))
    }

    pub(crate) fn get(self) -> ProcId {
        self.0 as ProcId
    }
}

fn role_text(p: &Process) -> String {
    p.role.map(|r| r.to_string()).unwrap_or_default()
}

/// `4086 runc oci-runtime create`: the track name.
fn track_name(p: &Process) -> String {
    let role = role_text(p);
    if role.is_empty() {
        format!("{} {}", p.pid, p.name())
    } else {
        format!("{} {} {}", p.pid, p.name(), role)
    }
}

/// An arrow between two tracks.
struct Flow {
    from: ProcId,
    to: ProcId,
    t: f64,
    name: Cow<'static, str>,
    /// The target's slice started earlier (adoption): bind to the enclosing slice.
    enclosing: bool,
}

/// What the Perfetto writer keeps while the engine reads the events: instants and flows are
/// written as they happen (the trace-event format puts no order on its events), only the times
/// adoptions look up are kept until the end.
#[derive(Default)]
struct Gathered {
    /// seq → time of the events that can cause adoptions (exits; forks for corrections), in
    /// chunks: no doubling's spare half on a million exits.
    times: Vec<Vec<(u64, f64)>>,
    t_last: f64,
    /// Flows written so far (the next one's id).
    flows: usize,
}

/// Entries per chunk of [`Gathered::times`].
const TIMES_CHUNK: usize = 1 << 16;

impl Gathered {
    /// An exec or prctl as an instant on its process's track; the times adoptions look up.
    fn note_event<W: Write>(
        &mut self,
        e: &Engine,
        ev: &Event,
        t: f64,
        lines: &mut TraceLines<'_, W>,
    ) -> io::Result<()> {
        if let EventKind::Exec { filename, .. } = &ev.kind {
            if let Some(p) = e.process(ev.tgid) {
                let args = json!({ "filename": filename.value, "argv": &*p.argv, "seq": ev.seq });
                lines.instant(p.id, t, &format!("exec {}", filename.value), args)?;
            }
        }
        if let (Some(p), Some((option, arg2, name))) = (e.process(ev.tgid), ev.kind.as_prctl()) {
            let opt = crate::names::prctl_option(option);
            let label = match name {
                Some(n) => format!("prctl {opt} {}", n.value),
                None => format!("prctl {opt} {arg2}"),
            };
            let args = json!({ "tid": ev.tid, "option": opt, "arg2": arg2,
                               "name": name.map(|n| &n.value), "seq": ev.seq });
            lines.instant(p.id, t, &label, args)?;
        }
        if ev.kind.new_task().is_some() || ev.kind.task_end().is_some() {
            if self.times.last().is_none_or(|c| c.len() == TIMES_CHUNK) {
                self.times.push(Vec::with_capacity(TIMES_CHUNK));
            }
            if let Some(chunk) = self.times.last_mut() {
                chunk.push((ev.seq, t));
            }
        }
        Ok(())
    }

    /// A flow from its creator to each process the last event made (`before..`).
    fn note_births<W: Write>(
        &mut self,
        e: &Engine,
        before: usize,
        t: f64,
        lines: &mut TraceLines<'_, W>,
    ) -> io::Result<()> {
        for id in before..e.process_count() {
            let Some(p) = e.get(id) else { continue };
            let how = p.born_how();
            if !matches!(how, How::Clone | How::CloneParent | How::Fork | How::Vfork) {
                continue;
            }
            if let Some(creator) = p.creator {
                let name = match (how, p.lineage.first().map(|l| l.parent)) {
                    (How::CloneParent, Some(parent)) => {
                        Cow::Owned(format!("clone CLONE_PARENT (parent {parent})"))
                    }
                    _ => Cow::Borrowed(how.as_str()),
                };
                let flow = Flow {
                    from: creator,
                    to: id,
                    t,
                    name,
                    enclosing: false,
                };
                lines.flow(self.flows, &flow)?;
                self.flows += 1;
            }
        }
        Ok(())
    }

    /// A flow from the old parent to each adopted process, at the time of the event that
    /// caused the adoption.
    fn note_adoptions<W: Write>(
        &mut self,
        e: &Engine,
        lines: &mut TraceLines<'_, W>,
    ) -> io::Result<()> {
        // Chunks are in seq order when the events are; sorted as one otherwise.
        let mut times = std::mem::take(&mut self.times);
        let sorted = times.iter().flatten().is_sorted_by_key(|a| a.0);
        if !sorted {
            let mut all: Vec<(u64, f64)> = times.drain(..).flatten().collect();
            all.sort_by_key(|a| a.0);
            times = vec![all];
        }
        let time_of = |seq: u64| -> f64 {
            // The chunk holding the last time at or before `seq`.
            let c = times.partition_point(|c| c.first().is_some_and(|x| x.0 <= seq));
            let Some(chunk) = c.checked_sub(1).and_then(|c| times.get(c)) else {
                return 0.0;
            };
            match chunk.binary_search_by(|x| x.0.cmp(&seq)) {
                Ok(i) => chunk[i].1,
                Err(0) => 0.0,
                Err(i) => chunk[i - 1].1,
            }
        };
        let index = PidIndex::new(e);
        for p in e.processes() {
            for l in p.lineage.iter().skip(1) {
                if l.how != How::Adopted {
                    continue;
                }
                let Some(from) = index.at(e, l.parent, l.seq) else {
                    continue;
                };
                let flow = Flow {
                    from,
                    to: p.id,
                    t: time_of(l.seq),
                    name: Cow::Owned(format!("adopted: {}", l.reason_text().unwrap_or_default())),
                    enclosing: true,
                };
                lines.flow(self.flows, &flow)?;
                self.flows += 1;
            }
        }
        Ok(())
    }
}

/// Chrome trace-event JSON (what ui.perfetto.dev and chrome://tracing open): a track per
/// process named "pid comm role", a slice for each process's lifetime, instant events for
/// exec and prctl, flow arrows for clone, CLONE_PARENT and adoption. Returns the final engine.
/// Written as the events are read: the instants and birth arrows as they happen, then the
/// adoption arrows and the tracks (which need the end).
pub fn write_perfetto(
    snapshot: &[SnapshotProcess],
    events: impl Iterator<Item = Event>,
    out: &mut impl Write,
) -> io::Result<Engine> {
    let mut e = Engine::seeded(snapshot);
    let mut clock = Clock::default();
    let mut gathered = Gathered::default();
    // One object per line inside {"traceEvents": [...]}.
    out.write_all(b"{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n")?;
    let mut lines = TraceLines { out, first: true };
    for ev in events {
        clock.observe(&ev);
        let t = clock.at(ev.ts_ns, ev.seq);
        gathered.t_last = gathered.t_last.max(t);
        let before = e.process_count();
        e.apply(&ev);
        gathered.note_event(&e, &ev, t, &mut lines)?;
        gathered.note_births(&e, before, t, &mut lines)?;
    }
    gathered.note_adoptions(&e, &mut lines)?;
    for p in e.processes() {
        lines.process_track(p, &clock, gathered.t_last)?;
    }
    lines.out.write_all(b"\n]}\n")?;
    Ok(e)
}

/// A process's Perfetto track (pid and tid alike).
fn track_id(id: ProcId) -> u64 {
    id as u64 + 1
}

/// The trace events written so far, comma-separated, one a line.
struct TraceLines<'w, W: Write> {
    out: &'w mut W,
    first: bool,
}

impl<W: Write> TraceLines<'_, W> {
    fn put(&mut self, v: Value) -> io::Result<()> {
        if !self.first {
            self.out.write_all(b",\n")?;
        }
        self.first = false;
        serde_json::to_writer(&mut *self.out, &v).map_err(io::Error::from)
    }

    /// An instant (an exec, a prctl) on the track of `proc`.
    fn instant(&mut self, proc: ProcId, t: f64, name: &str, args: Value) -> io::Result<()> {
        let track = track_id(proc);
        self.put(
            json!({"ph": "i", "s": "t", "name": name, "cat": "lifecycle", "pid": track,
                         "tid": track, "ts": t, "args": args}),
        )
    }

    /// A process's track: its names, its place, and the slice of its lifetime.
    fn process_track(&mut self, p: &Process, clock: &Clock, t_last: f64) -> io::Result<()> {
        let track = track_id(p.id);
        let name = track_name(p);
        self.put(
            json!({"ph": "M", "name": "process_name", "pid": track, "tid": track,
                        "args": {"name": name}}),
        )?;
        self.put(
            json!({"ph": "M", "name": "thread_name", "pid": track, "tid": track,
                        "args": {"name": name}}),
        )?;
        self.put(
            json!({"ph": "M", "name": "process_sort_index", "pid": track, "tid": track,
                        "args": {"sort_index": p.id}}),
        )?;
        let start = if p.born_how() == How::Snapshot {
            0.0
        } else {
            clock.at(p.birth_ts_ns, p.start_seq)
        };
        let end = match (p.exit_ts_ns, p.exit_seq) {
            (Some(ts), Some(seq)) => clock.at(ts, seq),
            _ => t_last,
        }
        .max(start);
        let exit = p.death().map(|d| d.to_string());
        self.put(
            json!({"ph": "X", "name": p.name(), "cat": "process", "pid": track, "tid": track,
                        "ts": start, "dur": end - start,
                        "args": {"pid": p.pid, "ppid": p.ppid, "exe": p.exe.as_deref(),
                                 "argv": &*p.argv, "role": p.role.map(|r| r.to_string()),
                                 "container_id": p.container_id.as_deref(),
                                 "born": p.born_how().as_str(), "exit": exit,
                                 "start_seq": p.start_seq, "exit_seq": p.exit_seq}}),
        )
    }

    /// A flow's arrow: its start on the source's track, its end on the target's.
    fn flow(&mut self, n: usize, f: &Flow) -> io::Result<()> {
        let (from, to) = (track_id(f.from), track_id(f.to));
        self.put(
            json!({"ph": "s", "id": n, "name": f.name, "cat": "lineage", "pid": from,
                        "tid": from, "ts": f.t}),
        )?;
        let mut end = json!({"ph": "f", "id": n, "name": f.name, "cat": "lineage", "pid": to,
                             "tid": to, "ts": f.t});
        if f.enclosing {
            end["bp"] = json!("e");
        }
        self.put(end)
    }
}

/// A DOT double-quoted string.
fn dot_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => {}
            c if (c as u32) < 0x20 => out.push(' '),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// (shape, fill colour) per role.
pub(crate) fn role_style(role: Option<Role>) -> (&'static str, &'static str) {
    match role {
        Some(Role::RuntimeDaemon) => ("box3d", "#9ecae1"),
        Some(Role::Shim) => ("hexagon", "#fdd49e"),
        Some(Role::OciRuntime { .. }) => ("component", "#fdae6b"),
        Some(Role::OciInit { .. }) => ("octagon", "#fc9272"),
        Some(Role::Sandbox) => ("note", "#dadaeb"),
        Some(Role::Container) => ("doubleoctagon", "#a1d99b"),
        Some(Role::CniPlugin) => ("cds", "#c994c7"),
        None => ("box", "#ffffff"),
    }
}

/// The parent `p` was created by (its parent at birth).
fn creation_parent(e: &Engine, index: &PidIndex, p: &Process) -> Option<ProcId> {
    let birth = p.lineage.first()?;
    p.birth_parent.or_else(|| {
        if birth.parent != 0 && p.lineage.len() == 1 {
            p.parent
        } else if birth.parent != 0 {
            index
                .at(e, birth.parent, birth.seq)
                .filter(|&id| id != p.id)
        } else {
            None
        }
    })
}

/// Chains of three or more plain processes (no role, no container, never adopted, adopting
/// none), each the only child of the one before: drawn as one node, they keep the host's
/// ancestry above the runtime daemon (shells, `timeout`, the recorder) from taking half the
/// width of a left-to-right graph. Each member maps to (the chain's last process, its first).
fn plain_chains(e: &Engine, index: &PidIndex) -> HashMap<ProcId, (ProcId, ProcId)> {
    // Per record, its children at birth as far as a chain needs them: none, one (which), or
    // more. Four bytes a record, not a list per parent.
    const NONE: u32 = u32::MAX;
    const MANY: u32 = u32::MAX - 1;
    let mut child_of = vec![NONE; e.id_bound()];
    let mut adopting: std::collections::HashSet<ProcId> = Default::default();
    for p in e.processes() {
        if let Some(slot) = creation_parent(e, index, p).and_then(|f| child_of.get_mut(f)) {
            *slot = match *slot {
                NONE => Id32::of(p.id).0,
                _ => MANY,
            };
        }
        adopting.extend(
            p.lineage
                .iter()
                .skip(1)
                .filter_map(|l| index.at(e, l.parent, l.seq)),
        );
    }
    let plain = |id: ProcId| {
        e.get(id).is_some_and(|p| {
            p.role.is_none()
                && p.container_id.is_none()
                && p.k8s.is_none()
                && p.lineage.len() == 1
                && p.born_how() != How::Unknown
                && !adopting.contains(&id)
        })
    };
    let only_child = |id: ProcId| match child_of.get(id) {
        Some(&c) if c != NONE && c != MANY => Some(Id32(c).get()),
        _ => None,
    };
    let mut out = HashMap::new();
    for p in e.processes() {
        // The inverse of `child_of` is `creation_parent` itself: no map of a million entries.
        if !plain(p.id)
            || creation_parent(e, index, p).is_some_and(|f| plain(f) && only_child(f).is_some())
        {
            continue;
        }
        let mut chain = vec![p.id];
        let mut last = p.id;
        while let Some(c) = only_child(last).filter(|&c| plain(c)) {
            chain.push(c);
            last = c;
        }
        // The last one stands for the chain: its children hang on it.
        if chain.len() >= 3 {
            out.extend(chain.iter().map(|&id| (id, (last, chain[0]))));
        }
    }
    out
}

/// Graphviz lineage graph of the final engine state: creation edges solid (CLONE_PARENT
/// labelled), adoption edges dashed with their reason, roles as shapes and colours, exited
/// processes greyed. With `scope` only those processes and the edges between them (a pod's
/// processes and their ancestors: `lineage::pod_scope`), the runtime daemon drawn as seen.
pub fn write_dot(
    e: &Engine,
    scope: Option<&HashSet<ProcId>>,
    out: &mut impl Write,
) -> io::Result<()> {
    writeln!(out, "digraph lineage {{")?;
    writeln!(
        out,
        "  graph [rankdir=LR, fontname=\"Helvetica\", label=\"process lineage (solid: created, dashed: adopted; grey: exited)\"];"
    )?;
    writeln!(
        out,
        "  node [fontname=\"Helvetica\", style=\"filled\", fontsize=10];"
    )?;
    writeln!(out, "  edge [fontname=\"Helvetica\", fontsize=8];")?;
    let index = PidIndex::new(e);
    let chains = plain_chains(e, &index);
    let shown = |id: ProcId| scope.is_none_or(|s| s.contains(&id));
    for p in e.processes().filter(|p| shown(p.id)) {
        dot_node(p, &chains, e, out)?;
    }
    let drawn = |id: ProcId| chains.get(&id).map_or(id, |&(rep, _)| rep);
    for p in e.processes().filter(|p| shown(p.id)) {
        dot_edges(e, &index, p, &drawn, &shown, out)?;
    }
    writeln!(out, "}}")?;
    Ok(())
}

/// `p`'s node: pid and name (a collapsed chain's first and count above it), role, container,
/// exit, placeholder. A chain's other members draw nothing.
fn dot_node(
    p: &Process,
    chains: &HashMap<ProcId, (ProcId, ProcId)>,
    e: &Engine,
    out: &mut impl Write,
) -> io::Result<()> {
    let (shape, fill) = role_style(p.role);
    // Control bytes made visible first (`\33`), then the DOT quoting on top.
    let mut label = format!("{} {}", p.pid, escape(&p.name()));
    match chains.get(&p.id) {
        Some(&(rep, _)) if rep != p.id => return Ok(()),
        Some(&(_, first)) => {
            let n = chains.values().filter(|&&(r, _)| r == p.id).count();
            let top = e
                .get(first)
                .map(|f| format!("{} {}", f.pid, escape(&f.name())));
            label = format!("{}\n⋮ {} more\n{label}", top.unwrap_or_default(), n - 2);
        }
        None => {}
    }
    if let Some(r) = p.role {
        label.push_str(&format!("\n[{r}]"));
    }
    if let Some(c) = &p.container_id {
        let short: String = c.chars().take(12).collect();
        label.push_str(&format!("\ncid {}", escape(&short)));
    }
    if p.exited {
        label.push_str(&format!("\n({})", crate::lineage::view::exit_text(p)));
    }
    if p.born_how() == How::Unknown {
        label.push_str("\n(placeholder)");
    }
    if p.exited {
        writeln!(
            out,
            "  p{} [label={}, shape={shape}, fillcolor=\"#eeeeee\", color=\"#999999\", fontcolor=\"#777777\"];",
            p.id,
            dot_str(&label)
        )?;
    } else {
        writeln!(
            out,
            "  p{} [label={}, shape={shape}, fillcolor=\"{fill}\"];",
            p.id,
            dot_str(&label)
        )?;
    }
    Ok(())
}

/// `p`'s creation edge from its parent at birth and its adoption edges, from processes shown.
fn dot_edges(
    e: &Engine,
    index: &PidIndex,
    p: &Process,
    drawn: &impl Fn(ProcId) -> ProcId,
    shown: &impl Fn(ProcId) -> bool,
    out: &mut impl Write,
) -> io::Result<()> {
    let Some(birth) = p.lineage.first() else {
        return Ok(());
    };
    // Creation edge: from the parent at birth (none inside a collapsed chain).
    let birth_parent = creation_parent(e, index, p)
        .filter(|&from| shown(from))
        .map(drawn)
        .filter(|&from| from != drawn(p.id));
    if let Some(from) = birth_parent {
        let attrs = match birth.how {
            How::CloneParent => {
                let via = birth
                    .caller
                    .map(|c| format!(" via {c}"))
                    .unwrap_or_default();
                format!(" [label={}]", dot_str(&format!("CLONE_PARENT{via}")))
            }
            How::Vfork => " [label=\"vfork\"]".to_string(),
            How::Snapshot => " [color=\"#888888\"]".to_string(),
            _ => String::new(),
        };
        writeln!(out, "  p{from} -> p{}{attrs};", drawn(p.id))?;
    }
    for l in p.lineage.iter().skip(1) {
        let Some(from) = index.at(e, l.parent, l.seq).filter(|&f| shown(f)) else {
            continue;
        };
        let reason = match l.reason {
            Some(r @ Reason::ParentExited { .. }) | Some(r @ Reason::KernelReports { .. }) => {
                r.to_string()
            }
            None => l.how.as_str().to_string(),
        };
        writeln!(
            out,
            "  p{from} -> p{} [style=dashed, color=\"#3182bd\", fontcolor=\"#3182bd\", label={}];",
            p.id,
            dot_str(&format!("adopted: {reason}"))
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::CapturedStr;
    use crate::synth;

    /// The exports' clock in these tests: 1 ms, then 1 µs per seq.
    fn ev(seq: u64, tgid: u32, comm: &str, kind: EventKind) -> Event {
        synth::event_at(seq, 1_000_000 + seq * 1000, tgid, comm, kind)
    }

    fn fork(seq: u64, parent: u32, child: u32, ppid: u32, flags: u64) -> Event {
        ev(seq, parent, "x", synth::clone_kind(child, ppid, flags))
    }

    /// A shim starts runc, which starts runc init with CLONE_PARENT, then exits: init is
    /// adopted by the shim (a subreaper).
    pub(crate) fn story() -> (Vec<SnapshotProcess>, Vec<Event>) {
        let snap = vec![
            SnapshotProcess {
                pid: 1,
                ppid: 0,
                comm: "systemd".into(),
                exe: Some("/usr/lib/systemd/systemd".into()),
                argv: vec!["/sbin/init".into()],
                threads: vec![1],
                subreaper: false,
                ..Default::default()
            },
            SnapshotProcess {
                pid: 50,
                ppid: 1,
                comm: "containerd-shim".into(),
                exe: Some("/usr/bin/containerd-shim-runc-v2".into()),
                argv: vec!["containerd-shim-runc-v2".into()],
                threads: vec![50],
                subreaper: true,
                ..Default::default()
            },
        ];
        let cp = crate::event::clone_flags::CLONE_PARENT;
        let evs = vec![
            fork(1, 50, 60, 50, 0),
            ev(
                2,
                60,
                "runc",
                EventKind::Exec {
                    cred: None,
                    old_tid: 60,
                    filename: CapturedStr::new("/usr/bin/runc"),
                },
            ),
            fork(3, 60, 61, 50, cp),
            ev(
                4,
                61,
                "runc",
                EventKind::PrctlEnter {
                    option: 15,
                    arg2: 0,
                    name: Some(CapturedStr::new("runc:[2:INIT]")),
                    shown: None,
                },
            ),
            fork(5, 60, 62, 60, 0),
            ev(
                6,
                60,
                "runc",
                EventKind::TaskExit {
                    exit_code: 0,
                    group_dead: true,
                },
            ),
        ];
        (snap, evs)
    }

    #[test]
    fn jsonl_is_the_trace_json() {
        let (_, evs) = story();
        let mut out = Vec::new();
        // 2025-12-03T07:40:09Z at boot time 0: the second event (ts 1,002,000 ns) 1.002 ms on.
        assert_eq!(evs[1].ts_ns, 1_002_000);
        let clock = crate::clock::Clock::boot(1_764_747_609_000_000_000, 0);
        assert_eq!(
            write_jsonl(evs.clone().into_iter(), clock, &mut out).unwrap(),
            6
        );
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 6);
        assert_eq!(
            lines[0],
            serde_json::to_string(&evs[0].timed(&clock)).unwrap()
        );
        let v: Value = serde_json::from_str(lines[1]).unwrap();
        assert_eq!(v["event"], "exec");
        assert_eq!(v["seq"], evs[1].seq);
        assert_eq!(v["time"], "2025-12-03T07:40:09.001002000Z");
        assert!(v.get("time_of_day").is_none());
        // No date on the clock: no time invented; a time of day only where the log had one.
        let mut out = Vec::new();
        write_jsonl(evs.clone().into_iter(), crate::clock::Clock::None, &mut out).unwrap();
        let v: Value =
            serde_json::from_str(String::from_utf8(out).unwrap().lines().nth(1).unwrap()).unwrap();
        assert_eq!(v["time"], Value::Null);
        let mut out = Vec::new();
        write_jsonl(
            evs.clone().into_iter(),
            crate::clock::Clock::TimeOfDay,
            &mut out,
        )
        .unwrap();
        let v: Value =
            serde_json::from_str(String::from_utf8(out).unwrap().lines().nth(1).unwrap()).unwrap();
        assert_eq!(v["time"], Value::Null);
        assert!(v["time_of_day"].as_str().unwrap().len() == 18);
    }

    #[test]
    fn perfetto_has_tracks_slices_instants_and_flows() {
        let (snap, evs) = story();
        let mut out = Vec::new();
        let e = write_perfetto(&snap, evs.into_iter(), &mut out).unwrap();
        let v: Value = serde_json::from_slice(&out).unwrap();
        let events = v["traceEvents"].as_array().unwrap();
        let count = |ph: &str| events.iter().filter(|x| x["ph"] == ph).count();
        assert_eq!(count("X"), e.process_count());
        assert!(events.iter().any(|x| x["ph"] == "M"
            && x["name"] == "process_name"
            && x["args"]["name"]
                .as_str()
                .unwrap()
                .starts_with("50 containerd-shim shim")));
        assert!(events
            .iter()
            .any(|x| x["ph"] == "i" && x["name"] == "exec /usr/bin/runc"));
        assert!(events
            .iter()
            .any(|x| x["ph"] == "i" && x["name"] == "prctl PR_SET_NAME runc:[2:INIT]"));
        let flows: Vec<&Value> = events.iter().filter(|x| x["ph"] == "s").collect();
        assert!(flows.iter().any(|x| x["name"]
            .as_str()
            .unwrap()
            .starts_with("clone CLONE_PARENT")));
        assert!(flows
            .iter()
            .any(|x| x["name"].as_str().unwrap().starts_with("adopted")));
        assert_eq!(count("s"), count("f"));
    }

    #[test]
    fn dot_marks_creation_adoption_roles_and_exits() {
        let (snap, evs) = story();
        let mut e = Engine::seeded(&snap);
        for ev in &evs {
            e.apply(ev);
        }
        let mut out = Vec::new();
        write_dot(&e, None, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("digraph lineage {"));
        assert!(text.contains("CLONE_PARENT via 60"), "{text}");
        assert!(text.contains("style=dashed"), "{text}");
        assert!(text.contains("adopted: parent 60 exited"), "{text}");
        assert!(text.contains("fillcolor=\"#eeeeee\""), "{text}");
        assert!(text.contains("shape=hexagon"), "{text}");
        assert!(text.trim_end().ends_with('}'));

        // Debian's graphviz must render it (skipped when dot is not installed).
        let dot = std::process::Command::new("dot")
            .arg("-Tsvg")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn();
        let Ok(mut child) = dot else {
            eprintln!("dot not installed: skipping the render check");
            return;
        };
        child
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        let res = child.wait_with_output().unwrap();
        assert!(
            res.status.success(),
            "dot failed: {}",
            String::from_utf8_lossy(&res.stderr)
        );
        let svg = String::from_utf8_lossy(&res.stdout);
        assert!(svg.contains("<svg"), "{svg}");
        assert!(svg.contains("CLONE_PARENT via 60"));
    }

    #[test]
    fn dot_draws_a_chain_of_plain_ancestors_as_one_node() {
        let mut e = Engine::new();
        for ev in crate::synth::chain(8) {
            e.apply(&ev);
        }
        let mut out = Vec::new();
        write_dot(&e, None, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        // 1000 (never seen born) and 1001..1007 as one node hung on it.
        assert_eq!(text.matches(" [label=").count(), 2, "{text}");
        assert!(
            text.contains("1001 link-1\\n⋮ 5 more\\n1007 link-7"),
            "{text}"
        );
        assert_eq!(text.matches(" -> ").count(), 1, "{text}");
    }

    #[test]
    fn dot_strings_are_escaped() {
        assert_eq!(dot_str("a\"b\\c\nd"), "\"a\\\"b\\\\c\\nd\"");
    }

    #[test]
    fn dot_labels_show_control_bytes_escaped() {
        let mut e = Engine::seeded(&[]);
        e.apply(&ev(
            1,
            7,
            "\x1b]0;PWNED\x07",
            EventKind::ExitEnter {
                syscall: crate::event::Syscall::ExitGroup,
                code: 0,
            },
        ));
        let mut out = Vec::new();
        write_dot(&e, None, &mut out).unwrap();
        let dot = String::from_utf8(out).unwrap();
        assert!(!dot.chars().any(|c| c.is_control() && c != '\n'), "{dot}");
        // `\33` made visible, its backslash then quoted for DOT.
        assert!(dot.contains("7 \\\\33]0;PWNED\\\\7"), "{dot}");
    }
}
