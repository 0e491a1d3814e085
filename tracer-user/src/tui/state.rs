//! The app state: the engine fed by the source, plus everything the view needs. Ingestion
//! ([`AppState::ingest`]) and the reducer mutate it; [`AppState::refresh`] recomputes the
//! derived parts (visible tree rows, stories) before a frame is drawn.

use std::collections::{HashMap, HashSet, VecDeque};

use crate::event::Event;
use crate::lineage::{Engine, ProcId, Process, Retention, Story};
use crate::render::LineRenderer;
use crate::stats::StreamStats;

use super::msg::Msg;

/// Where each pane goes (the selection is kept on screen with it).
pub mod layout;

/// Log lines kept (oldest dropped first). Replay rebuilds them from its packed events when
/// it steps back.
pub const LOG_CAP: usize = 20_000;
/// Live: the newest events kept for `w` (write the window to a trace file).
pub const LIVE_EVENTS_CAP: usize = 20_000;
/// Events kept pending while a live view is paused before they are applied anyway.
pub const MAX_PENDING: usize = 1_000_000;
/// How long a new node stays highlighted, in ms.
pub const HIGHLIGHT_MS: u64 = 2_000;
/// Live: exited processes leave the tree this long (event time) after their exit, unless
/// something below them still runs.
pub const EXITED_KEEP_NS: u64 = 30_000_000_000;
/// A batch this big is a jump or a catch-up: its new nodes are not highlighted.
const BULK_EVENTS: usize = 256;
/// Window of the events/s rate, in ms.
const RATE_WINDOW_MS: u64 = 2_000;
/// Fewest events between two replay snapshots (more when the tree is big).
const SNAPSHOT_EVERY: usize = 4_096;
/// Process records all replay snapshots together may hold (about 930 bytes each): the
/// oldest are let go past it, and none is taken of an engine bigger than it. Stepping back
/// through a recording of a million processes then replays from an earlier point instead
/// of keeping copies of a gigabyte engine (BENCHMARKS.md).
const SNAPSHOT_RECORDS: usize = 300_000;

/// Appends `r`'s lines for `ev` to `log`.
fn log_lines(log: &mut VecDeque<LogLine>, r: &mut LineRenderer, ev: &Event) {
    for text in r.render(ev) {
        log.push_back(LogLine {
            seq: ev.seq,
            tgid: ev.tgid,
            text,
        });
    }
}

/// Where the events come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// A running capture.
    Live,
    /// A file.
    Replay,
}

/// Which pane the movement keys act on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pane {
    /// The process tree.
    Tree,
    /// The container-birth stories.
    Story,
    /// The event log.
    Log,
}

/// One line of the event log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogLine {
    /// Seq of the event that produced the line.
    pub seq: u64,
    /// Process of the event.
    pub tgid: u32,
    /// The rendered line.
    pub text: String,
}

/// What a tree row shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RowKind {
    /// A process.
    Proc(ProcId),
    /// A thread of a process (other than its leader), shown when threads are expanded.
    Thread {
        /// The process.
        proc: ProcId,
        /// The thread.
        tid: u32,
    },
    /// Pod view: a pod's header, named by one of its processes.
    Pod(ProcId),
    /// Pod view: a container's header (or the sandbox's), named by one of its processes.
    Container(ProcId),
}

impl RowKind {
    /// The process the row belongs to.
    pub fn proc(self) -> ProcId {
        match self {
            RowKind::Proc(p)
            | RowKind::Thread { proc: p, .. }
            | RowKind::Pod(p)
            | RowKind::Container(p) => p,
        }
    }
}

/// A visible tree row. The connector prefix is built at draw time from `parent_row` and
/// `last` (only for the rows on screen, so a deep tree costs O(rows) memory).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Row {
    /// What it shows.
    pub kind: RowKind,
    /// Row of its parent in the tree.
    pub parent_row: Option<usize>,
    /// Last sibling (└─ rather than ├─).
    pub last: bool,
    /// Nesting depth.
    pub depth: u32,
    /// Folded with this many children hidden.
    pub folded_children: usize,
}

/// Engine and log state at a replay position, to step back without replaying everything.
#[derive(Clone)]
pub(super) struct Snapshot {
    index: usize,
    last_ts_ns: u64,
    pub(super) engine: Engine,
    stats: StreamStats,
    renderer: LineRenderer,
}

/// Everything the view shows. Rendering is a pure function of this.
pub struct AppState {
    /// Live or replay.
    pub mode: Mode,
    /// Live: the target (`all`, `pid 4082`, `cmd …`); replay: the file name.
    pub title: String,
    /// The lineage engine fed by the source.
    pub engine: Engine,
    /// Counts of what arrived.
    pub stats: StreamStats,
    /// Newest event timestamp seen (the stream's clock).
    pub last_ts_ns: u64,
    /// Live: events the ring buffer dropped.
    pub drops: u64,
    /// The event log (bounded).
    pub log: VecDeque<LogLine>,
    renderer: LineRenderer,

    // ---- replay ----
    /// Replay: the events applied so far, in order (the file's first `events.len()`),
    /// packed: a million-process recording is stepped back through in ~50 MB, not 400.
    events: crate::tracefile::PackedEvents,
    /// Replay: number of events in the file.
    pub total: usize,
    /// Replay: the stories of the whole file.
    pub full_stories: Vec<Story>,
    pub(super) snapshots: Vec<Snapshot>,
    /// The snapshots' budget in process records ([`SNAPSHOT_RECORDS`]).
    pub(super) snapshot_records: usize,
    /// Replay speed multiplier.
    pub speed: f64,
    /// Replay or live view paused.
    pub paused: bool,
    /// Live, paused: events received but not applied yet.
    pub pending: Vec<Event>,
    /// Live: the followed processes are all gone.
    pub target_exited: bool,
    /// Live: the trace file being written (`--record`), if any.
    pub recording: Option<String>,
    /// Live: the processes seen at the start, and the newest [`LIVE_EVENTS_CAP`] events
    /// (what `w` writes); whether older events were let go.
    pub window: (Vec<crate::lineage::SnapshotProcess>, VecDeque<Event>, bool),
    /// Live: `w` was pressed; the app loop writes the window and clears it.
    pub save_requested: bool,
    /// The source's error, once it failed.
    pub source_error: Option<String>,
    /// Status-line message (search miss, notes).
    pub message: Option<String>,

    // ---- clock (passed in, never read from the wall clock while drawing) ----
    /// Current time in ms (passed in).
    pub now_ms: u64,
    /// When each process still highlighted as new was first seen (ms); a bulk load (a jump,
    /// the start of a replay at the end) highlights nothing. Expired entries are removed.
    pub seen_at: HashMap<ProcId, u64>,
    /// Records below this id were looked at for the highlight.
    seen_bound: ProcId,
    /// (time ms, events so far) samples for the events/s rate.
    rate: VecDeque<(u64, u64)>,

    // ---- view ----
    /// Terminal size (columns, rows).
    pub size: (u16, u16),
    /// The selected row.
    pub selected: Option<RowKind>,
    /// Set by a story jump when the process is not in the tree yet (replay seeking ahead).
    pub select_pid: Option<u32>,
    /// First tree row on screen.
    pub tree_offset: usize,
    /// Folded processes.
    pub folded: HashSet<ProcId>,
    /// The subtree focused on (Enter).
    pub focus_root: Option<ProcId>,
    /// Show exited processes.
    pub show_exited: bool,
    /// Show threads.
    pub show_threads: bool,
    /// The tree grouped as pods → containers → processes (`p`).
    pub pod_view: bool,
    /// Only this pod (its name or `namespace/name`): its processes and their ancestors in
    /// the tree, its containers' stories.
    pub pod: Option<String>,
    /// Replay of a recording followed live: its new events are appended as they come.
    pub following: bool,
    /// Show the story pane.
    pub show_story: bool,
    /// Show the help.
    pub show_help: bool,
    /// The story pane explains the selected step ([`crate::lineage::explain::why`]).
    pub show_explain: bool,
    /// The focused pane fills the screen.
    pub zoom: bool,
    /// Columns the tree is scrolled to the right (long rows are scrolled, not cut).
    pub tree_hscroll: u16,
    /// Guided replay: opened paused at the first story step, explanations shown.
    pub guided: bool,
    /// The event log shows only the selected process's subtree.
    pub log_subtree_only: bool,
    /// The pane the movement keys act on.
    pub pane: Pane,
    /// Index into [`AppState::story_steps`].
    pub story_cursor: usize,
    /// Log: the highlighted line's seq; `None` follows the tail.
    pub log_cursor: Option<u64>,
    /// `/` being typed.
    pub search_input: Option<String>,
    /// The last confirmed search.
    pub search: String,
    /// The app should exit.
    pub quit: bool,
    /// Colours allowed (`NO_COLOR` unset); modifiers are always used.
    pub color: bool,

    // ---- derived by refresh() ----
    /// Visible tree rows.
    pub rows: Vec<Row>,
    /// Processes not exited (counted with the rows, not at every frame).
    pub live_processes: usize,
    /// Row index of the selection.
    pub cursor: usize,
    /// Stories shown (replay: the whole file's; live: the engine's now).
    pub stories: Vec<Story>,
    /// Pids of the selected subtree, for the log filter.
    pub subtree_pids: HashSet<u32>,
    /// Something changed since the last frame.
    pub dirty: bool,
    tree_dirty: bool,
}

impl AppState {
    fn new(mode: Mode, title: String) -> AppState {
        let mut s = AppState {
            mode,
            title,
            engine: Engine::new(),
            stats: StreamStats::default(),
            last_ts_ns: 0,
            drops: 0,
            log: VecDeque::new(),
            renderer: LineRenderer::new(),
            events: Default::default(),
            total: 0,
            full_stories: Vec::new(),
            snapshots: Vec::new(),
            snapshot_records: SNAPSHOT_RECORDS,
            speed: 1.0,
            paused: false,
            pending: Vec::new(),
            target_exited: false,
            recording: None,
            window: (Vec::new(), VecDeque::new(), false),
            save_requested: false,
            source_error: None,
            message: None,
            now_ms: 0,
            seen_at: HashMap::new(),
            seen_bound: 0,
            rate: VecDeque::new(),
            size: (80, 24),
            selected: None,
            select_pid: None,
            tree_offset: 0,
            folded: HashSet::new(),
            focus_root: None,
            show_exited: true,
            show_threads: false,
            pod_view: false,
            pod: None,
            following: false,
            show_story: false,
            show_help: false,
            show_explain: false,
            zoom: false,
            tree_hscroll: 0,
            guided: false,
            log_subtree_only: false,
            pane: Pane::Tree,
            story_cursor: 0,
            log_cursor: None,
            search_input: None,
            search: String::new(),
            quit: false,
            color: true,
            rows: Vec::new(),
            live_processes: 0,
            cursor: 0,
            stories: Vec::new(),
            subtree_pids: HashSet::new(),
            dirty: true,
            tree_dirty: true,
        };
        s.renderer.show_seq = true;
        s.push_snapshot();
        s
    }

    /// State for a live view titled `title`.
    pub fn new_live(title: impl Into<String>) -> AppState {
        let mut s = AppState::new(Mode::Live, title.into());
        s.engine = Engine::with_retention(Retention::default());
        s.snapshots.clear();
        s.push_snapshot();
        s
    }

    /// The events come from the sched probe set (no syscall exits).
    pub fn sched_probes(&self) -> bool {
        self.renderer.sched_probes
    }

    /// The events come without syscall exits (see [`LineRenderer::sched_probes`]).
    pub fn set_sched_probes(&mut self, on: bool) {
        self.renderer.sched_probes = on;
        for snap in &mut self.snapshots {
            snap.renderer.sched_probes = on;
        }
    }

    /// State for a replay titled `title`.
    pub fn new_replay(title: impl Into<String>) -> AppState {
        AppState::new(Mode::Replay, title.into())
    }

    /// Adds the processes that existed before the first event (a trace file's /proc
    /// snapshot, or the live start). Before any event, replay's rewind point includes them.
    pub fn seed(&mut self, snap: &[crate::lineage::SnapshotProcess]) {
        self.engine.seed_snapshot(snap);
        if self.mode == Mode::Live {
            self.window.0.extend_from_slice(snap);
        }
        self.seen_bound = self.engine.id_bound();
        self.tree_dirty = true;
        if self.events.is_empty() {
            self.snapshots.clear();
            self.push_snapshot();
        }
    }

    /// Guided replay: the story pane focused with explanations, paused (the source opens
    /// at the first step, see [`super::ReplayOpts::guided`]).
    pub fn guide(&mut self) {
        self.guided = true;
        self.paused = true;
        self.show_story = true;
        self.show_explain = true;
        self.pane = Pane::Story;
        self.tree_dirty = true;
    }

    /// Replay position: events applied.
    pub fn position(&self) -> usize {
        self.events.len()
    }

    /// Seq of the last applied event.
    pub fn last_seq(&self) -> Option<u64> {
        self.engine.last_seq()
    }

    /// Events per second over the last two seconds.
    pub fn rate(&self) -> f64 {
        match (self.rate.front(), self.rate.back()) {
            (Some(&(t0, n0)), Some(&(t1, n1))) if t1 > t0 => {
                (n1.saturating_sub(n0)) as f64 * 1000.0 / (t1 - t0) as f64
            }
            _ => 0.0,
        }
    }

    /// Sets the clock (ms since the app started).
    pub fn set_now(&mut self, now_ms: u64) {
        if now_ms != self.now_ms {
            let before = self.seen_at.len();
            self.seen_at.retain(|_, &mut t| t + HIGHLIGHT_MS > now_ms);
            let highlighted = self.seen_at.len() != before;
            self.now_ms = now_ms;
            if highlighted {
                self.dirty = true;
            }
        }
        self.rate.push_back((now_ms, self.stats.events));
        while self
            .rate
            .front()
            .is_some_and(|&(t, _)| t + RATE_WINDOW_MS < now_ms)
        {
            self.rate.pop_front();
        }
    }

    /// Was this process first seen less than [`HIGHLIGHT_MS`] ago?
    pub fn is_new(&self, id: ProcId) -> bool {
        self.seen_at
            .get(&id)
            .is_some_and(|t| self.now_ms < t + HIGHLIGHT_MS)
    }

    // ---- ingestion ----

    /// Takes one message from the source.
    pub fn ingest(&mut self, msg: Msg) {
        self.dirty = true;
        match msg {
            Msg::Init { total, stories } => {
                self.total = total;
                self.full_stories = self.pod_stories(stories);
            }
            Msg::Events(evs) => {
                if self.mode == Mode::Live && self.paused {
                    self.pending.extend(evs);
                    if self.pending.len() >= MAX_PENDING {
                        let p = std::mem::take(&mut self.pending);
                        self.apply_events(p);
                        self.message = Some("too many events while paused: applied".into());
                    }
                } else {
                    self.apply_events(evs);
                    self.follow_story();
                }
            }
            Msg::Seed(snap) => self.seed(&snap),
            Msg::Rewind(n) => {
                self.rewind(n);
                self.follow_story();
            }
            Msg::Drops(d) => self.drops = d,
            Msg::TargetExited => self.target_exited = true,
            Msg::Note(n) => self.message = Some(n),
            Msg::Error(e) => self.source_error = Some(e),
        }
    }

    /// Replay: the story cursor follows the position (the last step reached).
    fn follow_story(&mut self) {
        if self.mode != Mode::Replay {
            return;
        }
        let Some(at) = self.last_seq() else {
            self.story_cursor = 0;
            return;
        };
        let mut best: Option<(u64, usize)> = None;
        let mut k = 0;
        for st in &self.full_stories {
            for step in &st.steps {
                if step.seq <= at && best.is_none_or(|(q, _)| step.seq >= q) {
                    best = Some((step.seq, k));
                }
                k += 1;
            }
        }
        let before = self.story_cursor;
        // A cursor already on a step of the latest event reached stays (steps share seqs).
        let keep = self
            .current_step_in(&self.full_stories)
            .is_some_and(|st| Some(st.seq) == best.map(|(q, _)| q));
        if !keep {
            self.story_cursor = best.map_or(0, |(_, k)| k);
        }
        // Guided: the tree shows the step's process as the step is reached...
        if self.guided && (before != self.story_cursor || self.selected.is_none()) {
            let step = self.current_step_in(&self.full_stories);
            self.select_pid = step.map(|st| st.pid);
            // ... and the log its event.
            self.log_cursor = step.map(|st| st.seq);
        }
    }

    /// Applies pending events (live, on resume).
    pub fn flush_pending(&mut self) {
        let p = std::mem::take(&mut self.pending);
        if !p.is_empty() {
            self.apply_events(p);
        }
    }

    fn apply_one(&mut self, ev: &Event) {
        self.engine.apply(ev);
        self.stats.observe(ev);
        self.last_ts_ns = self.last_ts_ns.max(ev.ts_ns);
        log_lines(&mut self.log, &mut self.renderer, ev);
    }

    fn apply_events(&mut self, evs: Vec<Event>) {
        if evs.is_empty() {
            return;
        }
        let bulk = evs.len() > BULK_EVENTS;
        self.tree_dirty = true;
        for ev in evs {
            self.apply_one(&ev);
            if self.mode == Mode::Live {
                self.window.1.push_back(ev.clone());
            }
            if self.mode == Mode::Replay {
                self.events.push(&ev);
                let last = self.snapshots.last().map_or(0, |s| s.index);
                let every = SNAPSHOT_EVERY.max(self.engine.process_count());
                if self.events.len() - last >= every {
                    self.snapshot_within_budget();
                }
            }
        }
        if self.mode == Mode::Live {
            let recent = &mut self.window.1;
            while recent.len() > LIVE_EVENTS_CAP {
                recent.pop_front();
                self.window.2 = true;
            }
        }
        self.trim_log();
        let n = self.engine.id_bound();
        if !bulk {
            let now = self.now_ms;
            self.seen_at
                .extend((self.seen_bound..n).map(|id| (id, now)));
        }
        self.seen_bound = n;
    }

    fn push_snapshot(&mut self) {
        self.snapshots.push(Snapshot {
            index: self.events.len(),
            last_ts_ns: self.last_ts_ns,
            engine: self.engine.clone(),
            stats: self.stats.clone(),
            renderer: self.renderer.clone(),
        });
    }

    /// A snapshot of now, if it fits in [`SNAPSHOT_RECORDS`] after letting the oldest go
    /// (the first, the start, always stays).
    fn snapshot_within_budget(&mut self) {
        let cost = self.engine.process_count();
        if cost > self.snapshot_records {
            return;
        }
        let held = |s: &[Snapshot]| -> usize { s.iter().map(|s| s.engine.process_count()).sum() };
        while self.snapshots.len() > 1 && held(&self.snapshots) + cost > self.snapshot_records {
            self.snapshots.remove(1);
        }
        self.push_snapshot();
    }

    /// Replay: back to the first `n` events, from the nearest snapshot.
    fn rewind(&mut self, n: usize) {
        if n >= self.events.len() {
            return;
        }
        self.snapshots.retain(|s| s.index <= n);
        let Some(snap) = self.snapshots.last().cloned() else {
            return;
        };
        self.engine = snap.engine;
        self.stats = snap.stats;
        self.last_ts_ns = snap.last_ts_ns;
        self.renderer = snap.renderer;
        self.log = self.log_before(snap.index);
        // Decoded one at a time: stepping back through a big recording never unpacks it.
        let events = std::mem::take(&mut self.events);
        for ev in events.iter_from(snap.index).take(n - snap.index) {
            self.apply_one(&ev);
        }
        self.events = events;
        self.trim_log();
        self.events.truncate(n);
        let n = self.engine.id_bound();
        self.seen_at.retain(|&id, _| id < n);
        self.seen_bound = n;
        self.tree_dirty = true;
        if self
            .log_cursor
            .is_some_and(|c| self.last_seq().is_none_or(|l| c > l))
        {
            self.log_cursor = None;
        }
    }

    fn trim_log(&mut self) {
        let extra = self.log.len().saturating_sub(LOG_CAP);
        self.log.drain(..extra);
    }

    /// The log as it stood after the first `k` events: the lines of the last [`LOG_CAP`]
    /// of them, rendered afresh (a syscall whose enter lies before that window shows as
    /// resumed, as strace shows one it attached in the middle of).
    fn log_before(&self, k: usize) -> VecDeque<LogLine> {
        let mut r = LineRenderer::new();
        r.show_seq = self.renderer.show_seq;
        r.sched_probes = self.renderer.sched_probes;
        let mut log = VecDeque::new();
        for ev in self
            .events
            .iter_from(k.saturating_sub(LOG_CAP))
            .take(k.min(LOG_CAP))
        {
            log_lines(&mut log, &mut r, &ev);
        }
        let extra = log.len().saturating_sub(LOG_CAP);
        log.drain(..extra);
        log
    }

    /// Rebuild the rows at the next refresh (the tree or a view option changed).
    pub fn mark_tree_dirty(&mut self) {
        self.tree_dirty = true;
        self.dirty = true;
    }

    // ---- derived state ----

    /// Recomputes rows, cursor and stories after changes. Cheap when nothing changed.
    pub fn refresh(&mut self) {
        if self.tree_dirty {
            self.tree_dirty = false;
            if self
                .focus_root
                .is_some_and(|f| self.engine.get(f).is_none())
            {
                self.focus_root = None;
            }
            self.rows = build_rows(self);
            self.live_processes = self.engine.processes().filter(|p| !p.exited).count();
            self.stories = match self.mode {
                Mode::Replay => self.full_stories.clone(),
                Mode::Live => self.pod_stories(crate::lineage::stories(&self.engine)),
            };
            if self.story_cursor >= self.story_steps().len() {
                self.story_cursor = self.story_steps().len().saturating_sub(1);
            }
        }
        if let Some(pid) = self.select_pid {
            if let Some(p) = self.engine.process(pid) {
                let id = p.id;
                self.select_pid = None;
                self.unfold_to(id);
                if self.tree_dirty {
                    self.tree_dirty = false;
                    self.rows = build_rows(self);
                }
                self.selected = Some(RowKind::Proc(id));
            }
        }
        self.cursor = match self.selected {
            Some(k) => self
                .rows
                .iter()
                .position(|r| r.kind == k)
                .or_else(|| {
                    self.rows
                        .iter()
                        .position(|r| r.kind == RowKind::Proc(k.proc()))
                })
                .unwrap_or(self.cursor),
            None => 0,
        };
        self.cursor = self.cursor.min(self.rows.len().saturating_sub(1));
        self.selected = self.rows.get(self.cursor).map(|r| r.kind);
        self.subtree_pids.clear();
        if self.log_subtree_only {
            if let Some(p) = self.selected_process() {
                for id in self.engine.subtree(p.id, |_| true) {
                    if let Some(q) = self.engine.get(id) {
                        self.subtree_pids.insert(q.pid);
                    }
                }
            }
        }
        self.clamp_tree_offset();
    }

    /// Unfolds every ancestor of `id` and leaves a focus that does not contain it.
    pub fn unfold_to(&mut self, id: ProcId) {
        let mut in_focus = self.focus_root.is_none() || self.focus_root == Some(id);
        let above: Vec<ProcId> = self.engine.ancestors(id).map(|a| a.id).collect();
        for a in above {
            if self.folded.remove(&a) {
                self.tree_dirty = true;
            }
            if self.focus_root == Some(a) {
                in_focus = true;
            }
        }
        if !in_focus {
            self.focus_root = None;
            self.tree_dirty = true;
        }
        if let Some(p) = self.engine.get(id) {
            if p.exited && !self.show_exited {
                self.show_exited = true;
                self.tree_dirty = true;
            }
        }
    }

    /// Keeps the selection on screen (the tree pane height comes from the layout).
    pub fn clamp_tree_offset(&mut self) {
        let h = layout::tree_height(self).max(1);
        if self.cursor < self.tree_offset {
            self.tree_offset = self.cursor;
        } else if self.cursor >= self.tree_offset + h {
            self.tree_offset = self.cursor + 1 - h;
        }
        let max = self.rows.len().saturating_sub(h);
        self.tree_offset = self.tree_offset.min(max);
    }

    /// The selected row's process.
    pub fn selected_process(&self) -> Option<&Process> {
        self.selected.and_then(|k| self.engine.get(k.proc()))
    }

    /// Every story step as (story index, step index), in story order.
    pub fn story_steps(&self) -> Vec<(usize, usize)> {
        self.stories
            .iter()
            .enumerate()
            .flat_map(|(i, s)| (0..s.steps.len()).map(move |j| (i, j)))
            .collect()
    }

    /// The story step under the story cursor.
    pub fn current_step(&self) -> Option<&crate::lineage::StoryStep> {
        self.current_step_in(&self.stories)
    }

    /// Step number `story_cursor` of `stories` (in story order).
    fn current_step_in<'a>(&self, stories: &'a [Story]) -> Option<&'a crate::lineage::StoryStep> {
        stories.iter().flat_map(|s| &s.steps).nth(self.story_cursor)
    }

    /// Log lines shown (all, or the selected subtree's).
    pub fn visible_log(&self) -> Vec<&LogLine> {
        if self.log_subtree_only {
            self.log
                .iter()
                .filter(|l| self.subtree_pids.contains(&l.tgid))
                .collect()
        } else {
            self.log.iter().collect()
        }
    }

    /// `stories`, or only the pod's when the view is scoped to one.
    fn pod_stories(&self, mut stories: Vec<Story>) -> Vec<Story> {
        if let Some(pod) = &self.pod {
            stories.retain(|st| crate::lineage::story_in_pod(st, pod));
        }
        stories
    }

    /// Does `p` match the search (name substring, pid prefix, container id prefix)?
    pub fn matches_search(&self, p: &Process) -> bool {
        matches_query(p, &self.search)
    }
}

/// Does `p` match the search `q`: a pid prefix (digits), else part of its name, a
/// container-id prefix, or part of its pod's or container's name (case-insensitive)?
pub fn matches_query(p: &Process, q: &str) -> bool {
    let q = q.trim();
    if q.is_empty() {
        return false;
    }
    if q.bytes().all(|b| b.is_ascii_digit()) {
        return p.pid.to_string().starts_with(q);
    }
    let ql = q.to_lowercase();
    let k8s = p.k8s.as_deref();
    let pod = k8s.and_then(|k| k.pod_text());
    p.name().to_lowercase().contains(&ql)
        || pod.is_some_and(|n| n.to_lowercase().contains(&ql))
        || k8s
            .and_then(|k| k.container_name.as_deref())
            .is_some_and(|n| n.to_lowercase().contains(&ql))
        || p.container_id
            .as_deref()
            .is_some_and(|c| c.to_lowercase().starts_with(&ql))
        || p.exe
            .as_deref()
            .is_some_and(|e| crate::lineage::basename(e).to_lowercase().contains(&ql))
}

/// The records whose subtree holds a live process.
fn live_below(e: &Engine) -> HashSet<ProcId> {
    let mut live = HashSet::new();
    for p in e.processes().filter(|p| !p.exited) {
        for a in e.ancestors(p.id) {
            if !live.insert(a.id) {
                break;
            }
        }
    }
    live
}

/// The visible rows: a depth-first walk from the roots (or the focused process), skipping
/// exited leaves when they are hidden and the inside of folded nodes.
/// Pod view: each pod (as its bundles' annotations name it), its containers (the sandbox
/// first), then their processes by pid. Processes outside pods are not listed.
fn pod_rows(e: &Engine, visible: &dyn Fn(&Process) -> bool) -> Vec<Row> {
    use std::collections::BTreeMap;
    type Containers = BTreeMap<(bool, String), Vec<(u32, ProcId)>>;
    let mut pods: BTreeMap<String, Containers> = BTreeMap::new();
    for p in e.processes().filter(|p| visible(p)) {
        let Some(k) = p.k8s.as_deref() else { continue };
        let Some(pod) = k.pod_text() else { continue };
        let name = match (&k.container_name, &p.container_id) {
            (Some(n), _) => n.to_string(),
            (None, Some(c)) => c.to_string(),
            (None, None) => String::new(),
        };
        let key = (!k.sandbox, name);
        pods.entry(pod)
            .or_default()
            .entry(key)
            .or_default()
            .push((p.pid, p.id));
    }
    let mut rows = Vec::new();
    let np = pods.len();
    for (pi, containers) in pods.into_values().enumerate() {
        let Some(rep) = containers.values().next().and_then(|v| v.first()) else {
            continue;
        };
        let pod_row = rows.len();
        rows.push(group_row(RowKind::Pod(rep.1), None, pi + 1 == np, 0));
        let nc = containers.len();
        for (ci, mut procs) in containers.into_values().enumerate() {
            procs.sort_unstable();
            let c_row = rows.len();
            rows.push(group_row(
                RowKind::Container(procs[0].1),
                Some(pod_row),
                ci + 1 == nc,
                1,
            ));
            let n = procs.len();
            for (i, (_, id)) in procs.into_iter().enumerate() {
                rows.push(group_row(RowKind::Proc(id), Some(c_row), i + 1 == n, 2));
            }
        }
    }
    rows
}

fn group_row(kind: RowKind, parent_row: Option<usize>, last: bool, depth: u32) -> Row {
    Row {
        kind,
        parent_row,
        last,
        depth,
        folded_children: 0,
    }
}

fn build_rows(s: &AppState) -> Vec<Row> {
    let e = &s.engine;
    // Live: exited processes go some time after their exit (replay keeps them: time travel).
    let expire_before = match s.mode {
        Mode::Live if s.last_ts_ns > EXITED_KEEP_NS => Some(s.last_ts_ns - EXITED_KEEP_NS),
        _ => None,
    };
    let gone = |p: &Process| {
        p.exited
            && (!s.show_exited
                || expire_before.is_some_and(|t| p.exit_ts_ns.is_some_and(|x| x > 0 && x < t)))
    };
    let live = if s.show_exited && expire_before.is_none() {
        HashSet::new()
    } else {
        live_below(e)
    };
    let scope = s
        .pod
        .as_deref()
        .map(|name| crate::lineage::pod_scope(e, name));
    let visible = |p: &Process| {
        (!gone(p) || live.contains(&p.id)) && scope.as_ref().is_none_or(|sc| sc.contains(&p.id))
    };
    if s.pod_view {
        return pod_rows(e, &visible);
    }
    let roots: Vec<&Process> = match s.focus_root.and_then(|f| e.get(f)) {
        Some(f) => vec![f],
        None => e.roots().into_iter().filter(|p| visible(p)).collect(),
    };
    let mut rows = Vec::with_capacity(e.process_count());
    // (process, parent row, last, depth), pushed in reverse so they pop in order.
    let mut stack: Vec<(&Process, Option<usize>, bool, u32)> = Vec::new();
    let n = roots.len();
    for (i, r) in roots.into_iter().enumerate().rev() {
        stack.push((r, None, i + 1 == n, 0));
    }
    while let Some((p, parent_row, last, depth)) = stack.pop() {
        if rows.len() > 4 * e.process_count() + 16 {
            break; // cannot happen (no cycles); bounds the walk anyway
        }
        let kids: Vec<&Process> = e
            .children_of(p)
            .into_iter()
            .filter(|c| visible(c))
            .collect();
        let threads: Vec<u32> = if s.show_threads {
            p.live_tids().filter(|&t| t != p.pid).collect()
        } else {
            Vec::new()
        };
        let folded = s.folded.contains(&p.id);
        let hidden = if folded {
            kids.len() + threads.len()
        } else {
            0
        };
        let me = rows.len();
        rows.push(Row {
            kind: RowKind::Proc(p.id),
            parent_row,
            last,
            depth,
            folded_children: hidden,
        });
        if folded {
            continue;
        }
        let nk = kids.len();
        for (i, t) in threads.iter().enumerate() {
            rows.push(Row {
                kind: RowKind::Thread {
                    proc: p.id,
                    tid: *t,
                },
                parent_row: Some(me),
                last: nk == 0 && i + 1 == threads.len(),
                depth: depth + 1,
                folded_children: 0,
            });
        }
        for (i, c) in kids.into_iter().enumerate().rev() {
            stack.push((c, Some(me), i + 1 == nk, depth + 1));
        }
    }
    rows
}
