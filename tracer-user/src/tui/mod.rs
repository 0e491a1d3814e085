//! The terminal viewer: process tree, lineage detail, event log and container
//! stories, live or replaying a recording.
//!
//! Architecture (tracexec-style):
//! - a **source** task ([`source::replay`], or `source::live` with feature `capture`)
//!   owns the events and sends [`Msg`]s over a bounded channel; the app never touches BPF;
//! - terminal **input** is read on its own thread and mapped to [`Action`]s
//!   ([`action::action_for`]);
//! - a **reducer** ([`reduce()`]) updates the [`AppState`] and may send [`Control`]s back to a
//!   replay source (pause, step, seek, speed);
//! - **rendering** is a pure function of the state ([`draw`]), run at most 30 times a
//!   second and only when something changed; ingestion drains the channel between frames
//!   and never waits for drawing.
//!
//! The terminal is restored on quit, on panic (hook) and on SIGTERM/SIGINT.

pub mod action;
pub mod app;
mod find;
#[cfg(feature = "nats")]
pub mod fleet;
pub mod msg;
pub mod quiz;
pub mod reduce;
mod save;
mod shot;
pub mod source;
pub mod state;
mod term;
pub mod ui;

#[cfg(test)]
mod app_tests;
#[cfg(test)]
mod fake;
#[cfg(test)]
mod tests;

use std::io::IsTerminal;
use std::time::Duration;

use tokio::sync::mpsc;

pub use action::Action;
pub use app::UserInput;
pub use msg::{Control, Msg, CHANNEL_CAPACITY};
pub use reduce::reduce;
pub use shot::{screenshot, screenshot_node, ScreenSize};
pub use source::{Recorder, ReplayOpts};
pub use state::{AppState, Mode, NodePlace};
pub use ui::draw;

use crate::lineage::PodScope;

/// Shortest time between two frames (30 fps).
pub const FRAME: Duration = Duration::from_millis(33);
/// Messages taken from the source between two looks at the input.
const INGEST_BUDGET: usize = 64;

/// Why the viewer could not run.
#[derive(Debug, thiserror::Error)]
pub enum TuiError {
    /// stdin or stdout is no terminal.
    #[error("the viewer needs a terminal (stdin and stdout are not both a tty)")]
    NotATerminal,
    /// The async runtime could not start.
    #[error("cannot start the async runtime")]
    Runtime(#[source] std::io::Error),
    /// Setting up the terminal (raw mode, alternate screen, its size, the signals that stop
    /// the viewer) failed.
    #[error("cannot set up the terminal")]
    Terminal(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// Across nodes: a node's recording could not be opened (the line says which and why).
    #[error("{0}")]
    Node(String),
    /// Drawing a frame failed.
    #[error("cannot draw")]
    Draw(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl TuiError {
    fn terminal(e: impl std::error::Error + Send + Sync + 'static) -> TuiError {
        TuiError::Terminal(Box::new(e))
    }

    fn draw(e: impl std::error::Error + Send + Sync + 'static) -> TuiError {
        TuiError::Draw(Box::new(e))
    }
}

fn color_allowed() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// The viewer's async runtime (two workers). A live source that needs one to start (the
/// capture registers its ring buffer with the runtime's reactor) starts inside it, then
/// [`run_live`] runs on it.
pub fn runtime() -> Result<tokio::runtime::Runtime, TuiError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(TuiError::Runtime)
}

/// Fails unless stdin and stdout are both a terminal: checked before anything starts (a
/// live source, a command it runs).
pub fn require_terminal() -> Result<(), TuiError> {
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        return Err(TuiError::NotATerminal);
    }
    Ok(())
}

/// The real terminal, set up, and its input: restored when dropped (the input first, then
/// the terminal).
struct RealTerminal {
    input: term::TermInput,
    guard: term::Guard,
}

impl RealTerminal {
    fn open() -> Result<RealTerminal, TuiError> {
        let guard = term::Guard::enter().map_err(TuiError::terminal)?;
        let input = term::TermInput::start().map_err(TuiError::terminal)?;
        Ok(RealTerminal { input, guard })
    }
}

/// A recording for the viewer.
pub struct Recording {
    /// Its events (for a recording followed live: those stored when it was opened), packed.
    pub events: crate::tracefile::PackedEvents,
    /// Its /proc snapshot, where the tree starts.
    pub seed: Vec<crate::lineage::SnapshotProcess>,
    /// Names it on the status bar.
    pub title: String,
    /// A recording followed live: its later events, appended as they come.
    pub tail: Option<mpsc::Receiver<crate::input::TailItem>>,
    /// Show only this pod or container (see [`AppState::pod`]).
    pub pod: Option<PodScope>,
}

/// Replays a recording in the viewer until the user quits; returns the quiz's score.
/// Needs a terminal (callers check `stdout().is_terminal()` first).
pub fn run_replay(rec: Recording, opts: ReplayOpts) -> Result<quiz::Quiz, TuiError> {
    require_terminal()?;
    let rt = runtime()?;
    rt.block_on(async move {
        let mut t = RealTerminal::open()?;
        let state =
            app::replay_app(rec, opts, &mut t.guard.term, &mut t.input, color_allowed()).await;
        drop(t);
        state.map(|s| s.quiz)
    })
}

/// Across nodes: opens node `i` (of the list the viewer got, in node-name order) for the
/// viewer (with how it opens: its clock and probes are the node's), or says in one line why
/// it cannot.
pub type OpenNode<'a> = dyn FnMut(usize) -> Result<(Recording, ReplayOpts), String> + 'a;

/// Replays one node of `names` at a time (`open` opens each) until the user quits; `{`/`}`
/// switch nodes. Needs a terminal.
pub fn run_nodes(names: &[String], open: &mut OpenNode<'_>) -> Result<quiz::Quiz, TuiError> {
    require_terminal()?;
    let rt = runtime()?;
    rt.block_on(async move {
        let mut t = RealTerminal::open()?;
        let (term, input) = (&mut t.guard.term, &mut t.input);
        let state = app::nodes_app(names, open, term, input, color_allowed()).await;
        drop(t);
        state.map(|s| s.quiz)
    })
}

/// A replay viewer's state before its source sends anything.
fn replay_state(
    title: String,
    pod: Option<PodScope>,
    seed: &[crate::lineage::SnapshotProcess],
    opts: &ReplayOpts,
) -> AppState {
    let mut state = AppState::new_replay(title);
    state.set_sched_probes(opts.sched_probes);
    state.log.time_clock = opts.clock;
    state.playback.paused = opts.paused || opts.at.is_some();
    state.playback.speed = opts.speed;
    open_scoped(&mut state, opts.no_threads, pod);
    state.seed(seed);
    if opts.guided {
        state.guide();
        state.story.open_at = opts.story;
        state.quiz.on = opts.quiz;
    }
    state
}

/// What a view, live or replay, opens with besides its source: threads hidden
/// (`--no-threads`) and the pod or container it shows (`--pod`, `--container`).
fn open_scoped(state: &mut AppState, no_threads: bool, pod: Option<PodScope>) {
    state.log.hide_threads = no_threads;
    state.pod = pod;
}

/// Options of a live view.
#[derive(Default)]
pub struct LiveOpts {
    /// What the view shows, on the status bar: `all`, `pid 4082`, `cmd …`.
    pub title: String,
    /// Gets every batch the source reads (the `--record FILE` hook).
    pub recorder: Option<Box<dyn Recorder>>,
    /// The file the recorder writes, named on the status bar (`● rec FILE`).
    pub record_path: Option<std::path::PathBuf>,
    /// The source has no syscall probes (the capture's
    /// [`syscall_probes`](crate::capture::Capture::syscall_probes) off): the log completes
    /// calls whose exits will not come.
    pub sched_probes: bool,
    /// Which processes the source's seed holds (what `w` writes says it).
    pub seed_scope: crate::tracefile::SnapshotScope,
    /// A line for the status bar as the view opens.
    pub note: Option<String>,
    /// Open with threads hidden (`--no-threads`).
    pub no_threads: bool,
    /// Show only this pod, or one container of it (see [`AppState::pod`]), matched exactly
    /// as typed: empty until it appears.
    pub pod: Option<crate::lineage::PodQuery>,
}

/// A live viewer's state before its source sends anything.
fn live_state(opts: &mut LiveOpts) -> AppState {
    let mut state = AppState::new_live(std::mem::take(&mut opts.title));
    open_scoped(
        &mut state,
        opts.no_threads,
        opts.pod.take().map(PodScope::Typed),
    );
    state.set_sched_probes(opts.sched_probes);
    state.log.time_clock = crate::clock::Clock::live();
    state.status.message = opts.note.take();
    state.capture.seed_scope = opts.seed_scope;
    state.status.recording = opts
        .record_path
        .take()
        .filter(|_| opts.recorder.is_some())
        .map(|p| p.display().to_string());
    state
}

/// Live view of `src` (the capture, or any [`EventSource`](crate::source::EventSource))
/// until the user quits. Runs on the caller's runtime ([`runtime`]), where a source that
/// needs one was started: so a source that cannot start fails before the terminal is
/// touched (a missing privilege is one plain line on stderr).
pub async fn run_live<S: crate::source::EventSource + 'static>(
    src: S,
    opts: LiveOpts,
) -> Result<(), TuiError> {
    require_terminal()?;
    let mut t = RealTerminal::open()?;
    let (state, task) =
        app::live_app(src, opts, &mut t.guard.term, &mut t.input, color_allowed()).await;
    drop(t);
    // The terminal is back; the source flushes its recorder.
    let _ = tokio::time::timeout(Duration::from_secs(2), task).await;
    state.map(drop)
}
