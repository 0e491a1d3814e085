//! The app state: the engine fed by the source, plus everything the view needs. Ingestion
//! ([`AppState::ingest`]) and the reducer mutate it; [`AppState::refresh`] recomputes the
//! derived parts (visible tree rows, stories) before a frame is drawn.

use std::collections::{HashMap, HashSet, VecDeque};

use crate::event::Event;
use crate::lineage::{Engine, ProcId, Process, Retention, Story};
use crate::render::LineRenderer;
use crate::stats::StreamStats;

pub use super::find::Findable;
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
/// Events between two replay snapshots at first: a seek replays at most this many (doubled
/// each time the snapshots are thinned out).
const SNAPSHOT_EVERY: usize = 16_384;
/// Most replay snapshots kept. A snapshot is an engine clone, which shares every record and
/// pid-map shard with the engine until one is written (`lineage::cow`), so each costs what
/// changed after it (about 7 MB each in an hour of a busy node, BENCHMARKS.md); past this
/// many, every other one goes and the spacing doubles, so they stay spread over the whole
/// recording.
const MAX_SNAPSHOTS: usize = 128;

/// Appends `r`'s lines for `ev` to `log`, each with what its event makes it
/// ([`LineKind`]): the last line of a thread's creation (CLONE_THREAD: the child's tid is not
/// its tgid) or of a task's exit is that event's own; the lines before it are others'
/// syscalls the event interrupted.
fn log_lines(log: &mut VecDeque<LogLine>, r: &mut LineRenderer, ev: &Event) {
    let own = match (ev.kind.new_task(), ev.kind.task_end()) {
        (Some((tid, tgid)), _) if tid != tgid => LineKind::ThreadStart,
        (_, Some(false)) => LineKind::ThreadEnd,
        (_, Some(true)) => LineKind::ProcessEnd,
        _ => LineKind::Other,
    };
    let lines = r.render(ev);
    let n = lines.len();
    for (i, text) in lines.into_iter().enumerate() {
        log.push_back(LogLine {
            seq: ev.seq,
            ts_ns: ev.ts_ns,
            tgid: ev.tgid,
            text,
            kind: if i + 1 == n { own } else { LineKind::Other },
        });
    }
}

/// What made a log line, as its event says (never guessed from the text, which a traced
/// process's names and argv are in): what hides it and how it is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineKind {
    /// A thread's creation (`Thread N attached`): hidden with threads.
    ThreadStart,
    /// A thread's exit (`+++ thread exited with 0 +++`): hidden with threads, drawn dim.
    ThreadEnd,
    /// A process's end (`+++ exited with 0 +++`, `+++ killed by SIGKILL +++`): drawn dim.
    ProcessEnd,
    /// Anything else.
    Other,
}

impl LineKind {
    /// A thread's creation or exit, which [`LogPane::hide_threads`] hides.
    pub fn is_thread(self) -> bool {
        matches!(self, LineKind::ThreadStart | LineKind::ThreadEnd)
    }

    /// A task's end, drawn dim: what follows it in the log is no longer that task's.
    pub fn is_end(self) -> bool {
        matches!(self, LineKind::ThreadEnd | LineKind::ProcessEnd)
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
    /// Its time (the event's `ts_ns`, on the recording's clock).
    pub ts_ns: u64,
    /// Process of the event.
    pub tgid: u32,
    /// The rendered line.
    pub text: String,
    /// What made it (its event's part in it).
    pub kind: LineKind,
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
    pub(super) index: usize,
    last_ts_ns: u64,
    pub(super) engine: Engine,
    stats: StreamStats,
    renderer: LineRenderer,
}

/// The process tree pane: its rows, the selection and scrolling, and what it shows.
pub struct TreePane {
    /// Visible rows (derived by [`AppState::refresh`]).
    pub rows: Vec<Row>,
    /// Row index of the selection (derived by [`AppState::refresh`]).
    pub cursor: usize,
    /// The selected row.
    pub selected: Option<RowKind>,
    /// The selection was chosen (by a key, a click, a story step, or the runtime daemon's
    /// row appearing): until then the view moves it to the runtime daemon when it appears.
    pub chosen: bool,
    /// Set by a story jump when the process is not in the tree yet (replay seeking ahead).
    pub select_pid: Option<u32>,
    /// First row on screen.
    pub offset: usize,
    /// Columns the tree is scrolled to the right (long rows are scrolled, not cut).
    pub hscroll: u16,
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
    /// Processes not exited (counted with the rows, not at every frame).
    pub live_processes: usize,
    /// The rows are rebuilt at the next refresh (the tree or a view option changed).
    dirty: bool,
}

/// The story pane: the container-birth stories and the step under its cursor.
pub struct StoryPane {
    /// Stories shown (replay: the whole file's; live: the engine's now).
    pub stories: Vec<Story>,
    /// Index into [`StoryPane::steps`].
    pub cursor: usize,
    /// The explanation of the step at `.0` is scrolled by `.1` pages (`m`; the draw wraps
    /// back to its start past the end). Another step shows its explanation from the top.
    pub why_scroll: (usize, usize),
    /// Guided: the story (an index into `stories`) the replay opens at (`--story`), until
    /// its first step is reached.
    pub open_at: Option<usize>,
    /// Live: the engine's stories, updated from what each batch changed.
    kept: crate::lineage::Stories,
    /// The version of `kept` that `stories` shows.
    shown: Option<u64>,
}

impl StoryPane {
    /// Every story step as (story index, step index), in story order.
    pub fn steps(&self) -> Vec<(usize, usize)> {
        self.stories
            .iter()
            .enumerate()
            .flat_map(|(i, s)| (0..s.steps.len()).map(move |j| (i, j)))
            .collect()
    }

    /// The steps of the story the cursor is in, as indexes into [`StoryPane::steps`]:
    /// what `[` / `]` move through.
    pub fn story_range(&self) -> std::ops::Range<usize> {
        let mut start = 0;
        for st in &self.stories {
            let end = start + st.steps.len();
            if self.cursor < end {
                return start..end;
            }
            start = end;
        }
        start..start
    }

    /// Pages the explanation of the current step is scrolled by.
    pub fn why_pages(&self) -> usize {
        match self.why_scroll {
            (k, n) if k == self.cursor => n,
            _ => 0,
        }
    }

    /// The story step under the cursor.
    pub fn current_step(&self) -> Option<&crate::lineage::StoryStep> {
        self.step_in(&self.stories)
    }

    /// The story step under the cursor, with the story it is told in (its explanation's
    /// variant).
    pub fn current(&self) -> Option<(&Story, &crate::lineage::StoryStep)> {
        self.stories
            .iter()
            .flat_map(|st| st.steps.iter().map(move |x| (st, x)))
            .nth(self.cursor)
    }

    /// Step number `k` (an index into [`StoryPane::steps`]).
    pub fn step_at(&self, k: usize) -> Option<&crate::lineage::StoryStep> {
        self.stories.iter().flat_map(|s| &s.steps).nth(k)
    }

    /// Step number `cursor` of `stories` (in story order).
    fn step_in<'a>(&self, stories: &'a [Story]) -> Option<&'a crate::lineage::StoryStep> {
        stories.iter().flat_map(|s| &s.steps).nth(self.cursor)
    }
}

/// The event log pane: its lines, the highlighted one, and the subtree filter.
pub struct LogPane {
    /// The event log (bounded).
    pub lines: VecDeque<LogLine>,
    /// The highlighted line's seq; `None` follows the tail.
    pub cursor: Option<u64>,
    /// Show only the selected process's subtree.
    pub subtree_only: bool,
    /// Threads hidden (`T`, `--no-threads`): no thread lines here, no thread rows in the
    /// tree (the `{N threads}` count stays on its process).
    pub hide_threads: bool,
    /// Pids of the selected subtree, for the filter (derived by [`AppState::refresh`]).
    pub subtree_pids: HashSet<u32>,
    /// Lines show their time of day (`c`), as strace's `-tt` places it.
    pub show_time: bool,
    /// What the events' `ts_ns` mean: the recording's own clock (a trace file's header, an
    /// strace log's stamps; live, the capture's start), never the viewer's.
    pub time_clock: crate::clock::Clock,
    /// Renders events into lines; it carries state between events (pending syscall
    /// enters), so it is kept, and saved with replay snapshots.
    renderer: LineRenderer,
}

impl LogLine {
    /// The line with its `-tt` stamp (`??` where the clock has none) after `[pid N] `, or
    /// after the seq for a line that is no task's (`Process N attached`), as strace places it.
    pub fn timed(&self, clock: crate::clock::Clock) -> String {
        use crate::clock::{Stamper, Style};
        let stamp = Stamper::new(clock, Style::Micros).stamp(self.ts_ns);
        let t = &self.text;
        let at = match t.find("[pid ") {
            Some(p) => t[p..].find("] ").map_or(0, |e| p + e + 2),
            // `#SEQ    ` is 8 columns; an unfinished line's blank seq too.
            None if t.starts_with('#') || t.starts_with("        ") => 8.min(t.len()),
            None => 0,
        };
        let at = if t.is_char_boundary(at) { at } else { 0 };
        format!("{}{stamp}{}", &t[..at], &t[at..])
    }
}

impl LogPane {
    /// Lines shown (all, or the selected subtree's; without thread lines when hidden).
    pub fn visible(&self) -> Vec<&LogLine> {
        self.lines
            .iter()
            .filter(|l| !self.subtree_only || self.subtree_pids.contains(&l.tgid))
            .filter(|l| !(self.hide_threads && l.kind.is_thread()))
            .collect()
    }

    /// Drops the oldest lines past [`LOG_CAP`].
    fn trim(&mut self) {
        let extra = self.lines.len().saturating_sub(LOG_CAP);
        self.lines.drain(..extra);
    }
}

/// The search: what is being typed after `/`, the last confirmed query, and where it looks.
pub struct Search {
    /// `/` being typed.
    pub input: Option<String>,
    /// The last confirmed search.
    pub query: String,
    /// Replay: every process of the whole recording ([`Msg::Index`]), so a search finds
    /// what the position has not reached yet, or has let go.
    pub index: Vec<Findable>,
    /// The hit `n` / `N` move from: `(pid, start_seq)`.
    pub hit: Option<(u32, u64)>,
}

impl Search {
    /// Does `p` match the search (name substring, pid prefix, container id prefix)?
    pub fn matches(&self, p: &Process) -> bool {
        matches_query(p, &self.query)
    }
}

/// Moving through the stream: pausing (a live view too), and replay's position, speed and
/// the snapshots it steps back from.
pub struct Playback {
    /// Replay or live view paused.
    pub paused: bool,
    /// Replay speed multiplier.
    pub speed: f64,
    /// Replay: every event received, in order (the file's first `events.len()`), packed: a
    /// million-process recording is stepped through in ~50 MB, not 400.
    events: crate::tracefile::PackedEvents,
    /// Replay: how many of `events` are applied (the position).
    pos: usize,
    /// Replay: number of events in the file.
    pub total: usize,
    /// Replay: the stories of the whole file.
    pub full_stories: Vec<Story>,
    /// Replay: engine and log states to seek from, oldest first (the first is the start and
    /// always stays); they cover every event received, ahead of the position too.
    pub(super) snapshots: Vec<Snapshot>,
    /// Most snapshots kept ([`MAX_SNAPSHOTS`]).
    pub(super) max_snapshots: usize,
    /// Events between two snapshots now ([`SNAPSHOT_EVERY`], doubled at each thinning).
    snapshot_every: usize,
    /// Replay of a recording followed live: its new events are appended as they come.
    pub following: bool,
    /// Guided replay: opened paused at the first story step, explanations shown.
    pub guided: bool,
}

/// Live: what was captured but is not in the engine or on disk yet.
pub struct Capture {
    /// Paused: events received but not applied yet.
    pub pending: Vec<Event>,
    /// The processes seen at the start, and the newest [`LIVE_EVENTS_CAP`] events (what `w`
    /// writes); whether older events were let go.
    pub window: (Vec<crate::lineage::SnapshotProcess>, VecDeque<Event>, bool),
    /// Which processes the window's seed holds (the header's `snapshot` key `w` writes).
    pub seed_scope: crate::tracefile::SnapshotScope,
    /// `w` was pressed; the app loop writes the window and clears it.
    pub save_requested: bool,
}

/// What the status line reports besides the position: messages and the source's health.
pub struct Status {
    /// Status-line message (search miss, notes).
    pub message: Option<String>,
    /// The source's error, once it failed.
    pub source_error: Option<String>,
    /// Live: events the ring buffer dropped.
    pub drops: u64,
    /// Live: the followed processes are all gone.
    pub target_exited: bool,
    /// Live: the trace file being written (`--record`), if any.
    pub recording: Option<String>,
}

/// The screen's layout switches: which panes show, which one has the keys, and the
/// terminal they are drawn on.
pub struct View {
    /// The pane the movement keys act on.
    pub pane: Pane,
    /// The focused pane fills the screen.
    pub zoom: bool,
    /// Show the story pane.
    pub show_story: bool,
    /// Show the event log (`L`; a guided view opens without it).
    pub show_log: bool,
    /// The story pane explains the selected step ([`crate::lineage::explain::why`]).
    pub show_explain: bool,
    /// Show the help.
    pub show_help: bool,
    /// Terminal size (columns, rows).
    pub size: (u16, u16),
    /// Colours allowed (`NO_COLOR` unset); modifiers are always used.
    pub color: bool,
}

/// The clock (passed in, never read from the wall clock while drawing) and what is timed
/// by it: the highlight of new processes and the events/s rate.
pub struct Clock {
    /// Current time in ms (passed in).
    pub now_ms: u64,
    /// When each process still highlighted as new was first seen (ms); a bulk load (a jump,
    /// the start of a replay at the end) highlights nothing. Expired entries are removed.
    pub seen_at: HashMap<ProcId, u64>,
    /// Records below this id were looked at for the highlight.
    seen_bound: ProcId,
    /// (time ms, events so far) samples for the events/s rate.
    rate: VecDeque<(u64, u64)>,
}

impl Clock {
    /// Events per second over the last two seconds.
    pub fn rate(&self) -> f64 {
        match (self.rate.front(), self.rate.back()) {
            (Some(&(t0, n0)), Some(&(t1, n1))) if t1 > t0 => {
                (n1.saturating_sub(n0)) as f64 * 1000.0 / (t1 - t0) as f64
            }
            _ => 0.0,
        }
    }

    /// Was this process first seen less than [`HIGHLIGHT_MS`] ago?
    pub fn is_new(&self, id: ProcId) -> bool {
        self.seen_at
            .get(&id)
            .is_some_and(|t| self.now_ms < t + HIGHLIGHT_MS)
    }
}

impl TreePane {
    /// The tree as a view opens: every process shown, nothing selected yet.
    fn new() -> TreePane {
        TreePane {
            rows: Vec::new(),
            cursor: 0,
            selected: None,
            chosen: false,
            select_pid: None,
            offset: 0,
            hscroll: 0,
            folded: HashSet::new(),
            focus_root: None,
            show_exited: true,
            show_threads: false,
            pod_view: false,
            live_processes: 0,
            dirty: true,
        }
    }
}

impl StoryPane {
    /// No stories yet.
    fn new() -> StoryPane {
        StoryPane {
            stories: Vec::new(),
            cursor: 0,
            why_scroll: (0, 0),
            open_at: None,
            kept: crate::lineage::Stories::default(),
            shown: None,
        }
    }
}

impl LogPane {
    /// An empty log, its lines numbered by seq.
    fn new() -> LogPane {
        LogPane {
            lines: VecDeque::new(),
            cursor: None,
            subtree_only: false,
            hide_threads: false,
            subtree_pids: HashSet::new(),
            show_time: false,
            time_clock: crate::clock::Clock::None,
            renderer: {
                let mut r = LineRenderer::new();
                r.show_seq = true;
                r
            },
        }
    }
}

impl Search {
    /// No search.
    fn new() -> Search {
        Search {
            input: None,
            query: String::new(),
            index: Vec::new(),
            hit: None,
        }
    }
}

impl Playback {
    /// At the start, playing at 1×.
    fn new() -> Playback {
        Playback {
            paused: false,
            speed: 1.0,
            events: Default::default(),
            pos: 0,
            total: 0,
            full_stories: Vec::new(),
            snapshots: Vec::new(),
            max_snapshots: MAX_SNAPSHOTS,
            snapshot_every: SNAPSHOT_EVERY,
            following: false,
            guided: false,
        }
    }
}

impl Capture {
    /// Nothing captured yet.
    fn new() -> Capture {
        Capture {
            pending: Vec::new(),
            window: (Vec::new(), VecDeque::new(), false),
            seed_scope: crate::tracefile::SnapshotScope::Followed,
            save_requested: false,
        }
    }
}

impl Status {
    /// Nothing to report.
    fn new() -> Status {
        Status {
            message: None,
            source_error: None,
            drops: 0,
            target_exited: false,
            recording: None,
        }
    }
}

impl View {
    /// The usual layout at 80×24, the tree focused.
    fn new() -> View {
        View {
            pane: Pane::Tree,
            zoom: false,
            show_story: false,
            show_log: true,
            show_explain: false,
            show_help: false,
            size: (80, 24),
            color: true,
        }
    }
}

impl Clock {
    /// At time 0.
    fn new() -> Clock {
        Clock {
            now_ms: 0,
            seen_at: HashMap::new(),
            seen_bound: 0,
            rate: VecDeque::new(),
        }
    }
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
    /// Only this pod, or one container of it: its processes and their ancestors in the tree,
    /// its containers' (or that container's) stories, as `tree`/`story --pod` show them.
    pub pod: Option<crate::lineage::PodScope>,
    /// The app should exit.
    pub quit: bool,
    /// Something changed since the last frame.
    pub dirty: bool,
    /// The process tree pane.
    pub tree: TreePane,
    /// The story pane.
    pub story: StoryPane,
    /// The event log pane.
    pub log: LogPane,
    /// The search.
    pub search: Search,
    /// Pausing and replay's position.
    pub playback: Playback,
    /// Live: pending events and the window `w` writes.
    pub capture: Capture,
    /// What the status line reports.
    pub status: Status,
    /// Layout switches and the terminal.
    pub view: View,
    /// The clock and the highlights and rate timed by it.
    pub clock: Clock,
    /// Guided replay's quiz: the question open, the answers and the score.
    pub quiz: super::quiz::Quiz,
    /// Across nodes (`view nats://HOST:PORT/*`): the node shown, of which.
    pub node: Option<NodePlace>,
}

/// Which node of several a view across nodes shows (one at a time: pids of different nodes
/// collide), and the one the user asked for next: the app loop then reopens its source.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodePlace {
    /// The node's name as its stream says it (escaped and bounded when drawn).
    pub name: String,
    /// Its index among the nodes, in node-name order.
    pub at: usize,
    /// How many nodes hold what the view shows.
    pub of: usize,
    /// The node `{`/`}` asked for.
    pub switch_to: Option<usize>,
}

impl AppState {
    fn new(mode: Mode, title: String) -> AppState {
        let mut s = AppState {
            mode,
            title,
            engine: Engine::new(),
            stats: StreamStats::default(),
            last_ts_ns: 0,
            pod: None,
            quit: false,
            dirty: true,
            tree: TreePane::new(),
            story: StoryPane::new(),
            log: LogPane::new(),
            search: Search::new(),
            quiz: super::quiz::Quiz::default(),
            playback: Playback::new(),
            capture: Capture::new(),
            status: Status::new(),
            view: View::new(),
            clock: Clock::new(),
            node: None,
        };
        s.push_snapshot();
        s
    }

    /// State for a live view titled `title`.
    pub fn new_live(title: impl Into<String>) -> AppState {
        let mut s = AppState::new(Mode::Live, title.into());
        s.engine = Engine::with_retention(Retention::default());
        s.playback.snapshots.clear();
        s.push_snapshot();
        s
    }

    /// The events come from the sched probe set (no syscall exits).
    pub fn sched_probes(&self) -> bool {
        self.log.renderer.sched_probes
    }

    /// The events come without syscall exits (see [`LineRenderer::sched_probes`]).
    pub fn set_sched_probes(&mut self, on: bool) {
        self.log.renderer.sched_probes = on;
        for snap in &mut self.playback.snapshots {
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
            self.capture.window.0.extend_from_slice(snap);
        }
        self.clock.seen_bound = self.engine.id_bound();
        self.tree.dirty = true;
        if self.playback.events.is_empty() {
            self.playback.snapshots.clear();
            self.push_snapshot();
        }
    }

    /// Guided replay: the story pane focused with explanations, paused (the source opens
    /// at the first step, see [`super::ReplayOpts::guided`]); the teaching layout, without
    /// the event log (`L` shows it).
    pub fn guide(&mut self) {
        self.playback.guided = true;
        self.playback.paused = true;
        self.view.show_story = true;
        self.view.show_log = false;
        self.view.show_explain = true;
        self.view.pane = Pane::Story;
        self.tree.dirty = true;
    }

    /// Replay position: events applied.
    pub fn position(&self) -> usize {
        self.playback.pos
    }

    /// Seq of the last applied event.
    pub fn last_seq(&self) -> Option<u64> {
        self.engine.last_seq()
    }

    /// Sets the clock (ms since the app started).
    pub fn set_now(&mut self, now_ms: u64) {
        if now_ms != self.clock.now_ms {
            let before = self.clock.seen_at.len();
            self.clock
                .seen_at
                .retain(|_, &mut t| t + HIGHLIGHT_MS > now_ms);
            let highlighted = self.clock.seen_at.len() != before;
            self.clock.now_ms = now_ms;
            if highlighted {
                self.dirty = true;
            }
        }
        self.clock.rate.push_back((now_ms, self.stats.events));
        while self
            .clock
            .rate
            .front()
            .is_some_and(|&(t, _)| t + RATE_WINDOW_MS < now_ms)
        {
            self.clock.rate.pop_front();
        }
    }

    // ---- ingestion ----

    /// Takes one message from the source.
    pub fn ingest(&mut self, msg: Msg) {
        self.dirty = true;
        match msg {
            Msg::Init { total, stories } => {
                self.playback.total = total;
                self.playback.full_stories = self.pod_stories(stories);
            }
            Msg::Events(evs) => {
                if self.mode == Mode::Live && self.playback.paused {
                    self.capture.pending.extend(evs);
                    if self.capture.pending.len() >= MAX_PENDING {
                        let p = std::mem::take(&mut self.capture.pending);
                        self.apply_events(p);
                        self.status.message = Some("too many events while paused: applied".into());
                    }
                } else {
                    self.apply_events(evs);
                    self.follow_story();
                    self.quiz_judge();
                }
            }
            Msg::Seed(snap) => self.seed(&snap),
            Msg::Goto(n) => {
                self.goto(n);
                self.follow_story();
                self.quiz_judge();
            }
            Msg::Index(index) => self.search.index = index,
            Msg::Grown(total) => self.playback.total = total,
            Msg::Drops(d) => self.status.drops = d,
            Msg::TargetExited => self.status.target_exited = true,
            Msg::Note(n) => self.status.message = Some(n),
            Msg::Error(e) => self.status.source_error = Some(e),
        }
    }

    /// Replay: the story cursor follows the position (the last step reached).
    fn follow_story(&mut self) {
        if self.mode != Mode::Replay {
            return;
        }
        let Some(at) = self.last_seq() else {
            self.story.cursor = 0;
            return;
        };
        let mut best: Option<(u64, usize)> = None;
        let mut k = 0;
        for st in &self.playback.full_stories {
            for step in &st.steps {
                if step.seq <= at && best.is_none_or(|(q, _)| step.seq >= q) {
                    best = Some((step.seq, k));
                }
                k += 1;
            }
        }
        let before = self.story.cursor;
        // A cursor already on a step of the latest event reached stays (steps share seqs),
        // and so does one on a question of the quiz (the replay waits before its step).
        let keep = self.quiz.asking.is_some()
            || self
                .story
                .step_in(&self.playback.full_stories)
                .is_some_and(|st| Some(st.seq) == best.map(|(q, _)| q));
        if let Some(k) = self.opened_story(at) {
            self.story.cursor = k;
        } else if !keep {
            self.story.cursor = best.map_or(0, |(_, k)| k);
        }
        // Guided: the tree shows the step's process as the step is reached...
        if self.playback.guided && (before != self.story.cursor || self.tree.selected.is_none()) {
            let step = self.story.step_in(&self.playback.full_stories);
            self.tree.select_pid = step.map(|st| st.pid);
            // ... and the log its event.
            self.log.cursor = step.map(|st| st.seq);
        }
    }

    /// An answer of the quiz waiting for its step: judged once the replay has applied it.
    pub(super) fn quiz_judge(&mut self) {
        let at = self.last_seq();
        if self
            .quiz
            .judge(&self.playback.full_stories, &self.engine, at)
        {
            self.dirty = true;
        }
    }

    /// Questions of the quiz the stories shown hold that are not asked yet.
    pub fn quiz_left(&self) -> usize {
        self.quiz.left(&self.story.stories)
    }

    /// `--story`: the first step of the story the replay opens at, once the position has
    /// reached it (then it is an ordinary view).
    fn opened_story(&mut self, at: u64) -> Option<usize> {
        let i = self.story.open_at?;
        let stories = &self.playback.full_stories;
        let first = stories.get(i).and_then(|s| s.steps.first());
        if first.is_some_and(|st| st.seq > at) {
            return None;
        }
        self.story.open_at = None;
        first?;
        Some(stories[..i].iter().map(|s| s.steps.len()).sum())
    }

    /// Applies pending events (live, on resume).
    pub fn flush_pending(&mut self) {
        let p = std::mem::take(&mut self.capture.pending);
        if !p.is_empty() {
            self.apply_events(p);
        }
    }

    fn apply_one(&mut self, ev: &Event) {
        self.engine.apply(ev);
        self.stats.observe(ev);
        self.last_ts_ns = self.last_ts_ns.max(ev.ts_ns);
        log_lines(&mut self.log.lines, &mut self.log.renderer, ev);
    }

    fn apply_events(&mut self, evs: Vec<Event>) {
        if evs.is_empty() {
            return;
        }
        let bulk = evs.len() > BULK_EVENTS;
        self.tree.dirty = true;
        if self.mode == Mode::Replay {
            self.forget_ahead();
        }
        for ev in evs {
            self.apply_one(&ev);
            if self.mode == Mode::Live {
                self.capture.window.1.push_back(ev.clone());
            }
            if self.mode == Mode::Replay {
                self.playback.events.push(&ev);
                self.playback.pos += 1;
                let last = self.playback.snapshots.last().map_or(0, |s| s.index);
                if self.playback.pos - last >= self.playback.snapshot_every {
                    self.snapshot_within_budget();
                }
            }
        }
        if self.mode == Mode::Replay && self.playback.pos >= self.playback.total.max(1) {
            // the recording's end: an exec whose result is not in it is taken as run
            self.engine.end_of_input();
        }
        if self.mode == Mode::Live {
            let recent = &mut self.capture.window.1;
            while recent.len() > LIVE_EVENTS_CAP {
                recent.pop_front();
                self.capture.window.2 = true;
            }
        }
        self.log.trim();
        let n = self.engine.id_bound();
        if !bulk {
            let now = self.clock.now_ms;
            self.clock
                .seen_at
                .extend((self.clock.seen_bound..n).map(|id| (id, now)));
        }
        self.clock.seen_bound = n;
    }

    fn push_snapshot(&mut self) {
        self.playback.snapshots.push(Snapshot {
            index: self.playback.pos,
            last_ts_ns: self.last_ts_ns,
            engine: self.engine.clone(),
            stats: self.stats.clone(),
            renderer: self.log.renderer.clone(),
        });
    }

    /// A snapshot of now; past [`MAX_SNAPSHOTS`], every other one goes first (the start
    /// stays) and the spacing doubles.
    fn snapshot_within_budget(&mut self) {
        let pb = &mut self.playback;
        if pb.snapshots.len() >= pb.max_snapshots.max(2) {
            let mut k = 0;
            pb.snapshots.retain(|_| {
                k += 1;
                k % 2 == 1
            });
            pb.snapshot_every = pb.snapshot_every.saturating_mul(2);
        }
        self.push_snapshot();
    }

    /// Events arrive at a position behind the last event held (a stepped-back replay goes
    /// on): what lay ahead is let go, the new events replace it.
    fn forget_ahead(&mut self) {
        let pos = self.playback.pos;
        if pos < self.playback.events.len() {
            self.playback.events.truncate(pos);
            self.playback.snapshots.retain(|s| s.index <= pos);
        }
    }

    /// Replay: to the first `n` events held (back or forward): on from here when no
    /// snapshot lies between, else from the nearest snapshot at or before `n`.
    fn goto(&mut self, n: usize) {
        let n = n.min(self.playback.events.len());
        let pos = self.playback.pos;
        let snap = self.playback.snapshots.iter().rfind(|s| s.index <= n);
        let from = match snap {
            Some(s) if n < pos || (s.index > pos && n - pos > self.playback.snapshot_every) => {
                s.clone()
            }
            _ => return self.apply_held(pos, n),
        };
        self.engine = from.engine;
        self.stats = from.stats;
        self.last_ts_ns = from.last_ts_ns;
        self.log.renderer = from.renderer;
        self.log.lines = self.log_before(from.index);
        self.apply_held(from.index, n);
    }

    /// Applies the held events `from..to` (decoded one at a time: a seek in a big recording
    /// never unpacks it) and makes `to` the position.
    fn apply_held(&mut self, from: usize, to: usize) {
        let events = std::mem::take(&mut self.playback.events);
        for ev in events.iter_from(from).take(to.saturating_sub(from)) {
            self.apply_one(&ev);
        }
        self.playback.events = events;
        self.playback.pos = to;
        self.log.trim();
        let n = self.engine.id_bound();
        self.clock.seen_at.retain(|&id, _| id < n);
        self.clock.seen_bound = n;
        self.tree.dirty = true;
        if self
            .log
            .cursor
            .is_some_and(|c| self.last_seq().is_none_or(|l| c > l))
        {
            self.log.cursor = None;
        }
    }

    /// The log lines the first `k` events leave (the last [`LOG_CAP`]). Some events make
    /// no line (an exec's return folds into its call): the events rendered double until
    /// they fill the log or reach the start.
    fn log_before(&self, k: usize) -> VecDeque<LogLine> {
        let mut m = LOG_CAP;
        let mut log = loop {
            let mut r = LineRenderer::new();
            r.show_seq = self.log.renderer.show_seq;
            r.sched_probes = self.log.renderer.sched_probes;
            let mut log = VecDeque::new();
            for ev in self
                .playback
                .events
                .iter_from(k.saturating_sub(m))
                .take(k.min(m))
            {
                log_lines(&mut log, &mut r, &ev);
            }
            if log.len() >= LOG_CAP || m >= k {
                break log;
            }
            m = m.saturating_mul(2);
        };
        let extra = log.len().saturating_sub(LOG_CAP);
        log.drain(..extra);
        log
    }

    /// Rebuild the rows at the next refresh (the tree or a view option changed).
    pub fn mark_tree_dirty(&mut self) {
        self.tree.dirty = true;
        self.dirty = true;
    }

    // ---- derived state ----

    /// Recomputes rows, cursor and stories after changes. Cheap when nothing changed.
    pub fn refresh(&mut self) {
        if self.tree.dirty {
            self.tree.dirty = false;
            if self
                .tree
                .focus_root
                .is_some_and(|f| self.engine.get(f).is_none())
            {
                self.tree.focus_root = None;
            }
            self.tree.rows = build_rows(self);
            self.tree.live_processes = self.engine.processes().filter(|p| !p.exited).count();
            match self.mode {
                Mode::Replay => self.story.stories = self.playback.full_stories.clone(),
                Mode::Live => self.live_stories(),
            }
            if self.story.cursor >= self.story.steps().len() {
                self.story.cursor = self.story.steps().len().saturating_sub(1);
            }
        }
        if let Some(pid) = self.tree.select_pid {
            if let Some(p) = self.engine.process(pid) {
                let id = p.id;
                self.tree.select_pid = None;
                self.unfold_to(id);
                if self.tree.dirty {
                    self.tree.dirty = false;
                    self.tree.rows = build_rows(self);
                }
                self.tree.selected = Some(RowKind::Proc(id));
                self.tree.chosen = true;
            }
        }
        if !self.tree.chosen {
            if let Some(i) = self.runtime_row() {
                self.tree.selected = Some(self.tree.rows[i].kind);
                self.tree.chosen = true;
            }
        }
        self.tree.cursor = match self.tree.selected {
            Some(k) => self
                .tree
                .rows
                .iter()
                .position(|r| r.kind == k)
                .or_else(|| {
                    self.tree
                        .rows
                        .iter()
                        .position(|r| r.kind == RowKind::Proc(k.proc()))
                })
                .unwrap_or(self.tree.cursor),
            None => 0,
        };
        self.tree.cursor = self.tree.cursor.min(self.tree.rows.len().saturating_sub(1));
        self.tree.selected = self.tree.rows.get(self.tree.cursor).map(|r| r.kind);
        self.log.subtree_pids.clear();
        if self.log.subtree_only {
            if let Some(p) = self.selected_process() {
                for id in self.engine.subtree(p.id, |_| true) {
                    if let Some(q) = self.engine.get(id) {
                        self.log.subtree_pids.insert(q.pid);
                    }
                }
            }
        }
        self.clamp_tree_offset();
    }

    /// The first row of a runtime daemon (containerd, CRI-O, dockerd): where the view opens,
    /// rather than on the recording machine's init.
    fn runtime_row(&self) -> Option<usize> {
        self.tree.rows.iter().position(|r| {
            matches!(r.kind, RowKind::Proc(id) if self.engine.get(id)
                .is_some_and(|p| p.role == Some(crate::lineage::Role::RuntimeDaemon)))
        })
    }

    /// Unfolds every ancestor of `id` and leaves a focus that does not contain it.
    pub fn unfold_to(&mut self, id: ProcId) {
        let mut in_focus = self.tree.focus_root.is_none() || self.tree.focus_root == Some(id);
        let above: Vec<ProcId> = self.engine.ancestors(id).map(|a| a.id).collect();
        for a in above {
            if self.tree.folded.remove(&a) {
                self.tree.dirty = true;
            }
            if self.tree.focus_root == Some(a) {
                in_focus = true;
            }
        }
        if !in_focus {
            self.tree.focus_root = None;
            self.tree.dirty = true;
        }
        if let Some(p) = self.engine.get(id) {
            if p.exited && !self.tree.show_exited {
                self.tree.show_exited = true;
                self.tree.dirty = true;
            }
        }
    }

    /// Keeps the selection on screen (the tree pane height comes from the layout).
    pub fn clamp_tree_offset(&mut self) {
        let h = layout::tree_height(self).max(1);
        if self.tree.cursor < self.tree.offset {
            self.tree.offset = self.tree.cursor;
        } else if self.tree.cursor >= self.tree.offset + h {
            self.tree.offset = self.tree.cursor + 1 - h;
        }
        let max = self.tree.rows.len().saturating_sub(h);
        self.tree.offset = self.tree.offset.min(max);
    }

    /// The selected row's process.
    pub fn selected_process(&self) -> Option<&Process> {
        self.tree.selected.and_then(|k| self.engine.get(k.proc()))
    }

    /// Live: the stories updated from what the engine's last events changed, copied to the
    /// pane only when they changed.
    fn live_stories(&mut self) {
        let s = &mut self.story;
        s.kept.update(&self.engine);
        if s.shown == Some(s.kept.version()) {
            return;
        }
        s.shown = Some(s.kept.version());
        self.story.stories = self.pod_stories(self.story.kept.list());
    }

    /// `stories`, or only the pod's when the view is scoped to one.
    fn pod_stories(&self, mut stories: Vec<Story>) -> Vec<Story> {
        if let Some(pod) = &self.pod {
            stories.retain(|st| crate::lineage::story_in_pod(st, pod));
        }
        stories
    }
}

/// Does `p` match the search `q` ([`Findable::matches`])?
pub fn matches_query(p: &Process, q: &str) -> bool {
    Findable::of(p).matches(q)
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

/// Pod view: each pod (as its bundles' annotations name it), its containers (the sandbox
/// first), then their processes in their lineage's shape (a process under its parent when
/// both are in the container; the others by pid). Processes outside pods are not listed.
fn pod_rows(e: &Engine, visible: &dyn Fn(&Process) -> bool) -> Vec<Row> {
    use std::collections::BTreeMap;
    type Containers = BTreeMap<(bool, String), HashSet<ProcId>>;
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
            .insert(p.id);
    }
    let mut rows = Vec::new();
    let np = pods.len();
    for (pi, containers) in pods.into_values().enumerate() {
        let pod_row = rows.len();
        let nc = containers.len();
        for (ci, members) in containers.into_values().enumerate() {
            let mut roots: Vec<&Process> = members
                .iter()
                .filter_map(|&id| e.get(id))
                .filter(|p| p.parent.is_none_or(|q| !members.contains(&q)))
                .collect();
            roots.sort_by_key(|p| (p.pid, p.start_seq));
            let Some(first) = roots.first() else { continue };
            if ci == 0 {
                rows.push(group_row(RowKind::Pod(first.id), None, pi + 1 == np, 0));
            }
            let c_row = rows.len();
            let c_kind = RowKind::Container(first.id);
            rows.push(group_row(c_kind, Some(pod_row), ci + 1 == nc, 1));
            let n = roots.len();
            for (i, r) in roots.into_iter().enumerate() {
                lineage_rows(e, r, &members, (Some(c_row), i + 1 == n, 2), &mut rows);
            }
        }
    }
    rows
}

/// `root` and, below it, its descendants that are in `members`, depth first by pid.
fn lineage_rows(
    e: &Engine,
    root: &Process,
    members: &HashSet<ProcId>,
    at: (Option<usize>, bool, u32),
    rows: &mut Vec<Row>,
) {
    let mut stack = vec![(root, at.0, at.1, at.2)];
    while let Some((p, parent_row, last, depth)) = stack.pop() {
        let me = rows.len();
        rows.push(group_row(RowKind::Proc(p.id), parent_row, last, depth));
        let kids: Vec<&Process> = e
            .children_of(p)
            .into_iter()
            .filter(|c| members.contains(&c.id))
            .collect();
        let nk = kids.len();
        for (i, c) in kids.into_iter().enumerate().rev() {
            stack.push((c, Some(me), i + 1 == nk, depth + 1));
        }
    }
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

/// The visible rows: a depth-first walk from the roots (or the focused process), skipping
/// exited leaves when they are hidden and the inside of folded nodes.
fn build_rows(s: &AppState) -> Vec<Row> {
    let e = &s.engine;
    // Live: exited processes go some time after their exit (replay keeps them: time travel).
    let expire_before = match s.mode {
        Mode::Live if s.last_ts_ns > EXITED_KEEP_NS => Some(s.last_ts_ns - EXITED_KEEP_NS),
        _ => None,
    };
    let gone = |p: &Process| {
        p.exited
            && (!s.tree.show_exited
                || expire_before.is_some_and(|t| p.exit_ts_ns.is_some_and(|x| x > 0 && x < t)))
    };
    let live = if s.tree.show_exited && expire_before.is_none() {
        HashSet::new()
    } else {
        live_below(e)
    };
    let scope = s.pod.as_ref().map(|m| crate::lineage::pod_scope(e, m));
    let visible = |p: &Process| {
        (!gone(p) || live.contains(&p.id)) && scope.as_ref().is_none_or(|sc| sc.contains(&p.id))
    };
    if s.tree.pod_view {
        return pod_rows(e, &visible);
    }
    let roots: Vec<&Process> = match s.tree.focus_root.and_then(|f| e.get(f)) {
        Some(f) => vec![f],
        None => e.roots().into_iter().filter(|p| visible(p)).collect(),
    };
    tree_rows(s, roots, &visible)
}

/// The rows of `roots` and, depth first, of their visible children and (shown) threads; a
/// folded process's inside counted, not listed.
fn tree_rows(s: &AppState, roots: Vec<&Process>, visible: &dyn Fn(&Process) -> bool) -> Vec<Row> {
    let e = &s.engine;
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
        let threads: Vec<u32> = if s.tree.show_threads && !s.log.hide_threads {
            p.live_tids().filter(|&t| t != p.pid).collect()
        } else {
            Vec::new()
        };
        let folded = s.tree.folded.contains(&p.id);
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
