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
mod find;
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
mod tests;

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use tokio::sync::mpsc;

pub use action::Action;
pub use msg::{Control, Msg, CHANNEL_CAPACITY};
pub use reduce::reduce;
pub use shot::{screenshot, ScreenSize};
pub use source::{Recorder, ReplayOpts};
pub use state::{AppState, Mode};
pub use ui::draw;

use crate::lineage::PodScope;

/// Shortest time between two frames (30 fps).
pub const FRAME: Duration = Duration::from_millis(33);
/// Messages taken from the source between two looks at the input.
const INGEST_BUDGET: usize = 64;

fn color_allowed() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

fn require_terminal() -> Result<()> {
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        anyhow::bail!("the viewer needs a terminal (stdin and stdout are not both a tty)");
    }
    Ok(())
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
pub fn run_replay(rec: Recording, opts: ReplayOpts) -> Result<quiz::Quiz> {
    require_terminal()?;
    let rt = runtime()?;
    rt.block_on(async move {
        let (tx, rx) = mpsc::channel(CHANNEL_CAPACITY);
        let (ctl_tx, ctl_rx) = mpsc::channel(64);
        let mut state = replay_state(rec.title, rec.pod.clone(), &rec.seed, &opts);
        state.playback.following = rec.tail.is_some();
        let replay = source::replay(rec.events, rec.seed, opts, rec.pod, tx, ctl_rx, rec.tail);
        let src = tokio::spawn(replay);
        let res = app_loop(state, rx, Some(ctl_tx)).await;
        src.abort();
        res.map(|s| s.quiz)
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
    state.playback.paused = opts.paused;
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
#[cfg(feature = "capture")]
pub struct LiveOpts {
    /// Ring-buffer size for the capture.
    pub ring_bytes: u32,
    /// Gets every batch the capture reads (the `--record FILE` hook).
    pub recorder: Option<Box<dyn Recorder>>,
    /// Also attach the syscall probes ([`CaptureBuilder::syscalls`](crate::CaptureBuilder::syscalls)).
    pub syscalls: bool,
    /// Which signals to record ([`CaptureBuilder::signals`](crate::CaptureBuilder::signals)).
    pub signals: crate::capture::SignalSet,
    /// The file the recorder writes, named on the status bar (`● rec FILE`).
    pub record_path: Option<std::path::PathBuf>,
    /// Open with threads hidden (`--no-threads`).
    pub no_threads: bool,
    /// Show only this pod, or one container of it (see [`AppState::pod`]), matched exactly
    /// as typed: empty until it appears.
    pub pod: Option<crate::lineage::PodQuery>,
}

#[cfg(feature = "capture")]
impl Default for LiveOpts {
    fn default() -> Self {
        LiveOpts {
            ring_bytes: tracer_common::DEFAULT_RING_BYTES,
            syscalls: false,
            signals: crate::capture::SignalSet::Default,
            recorder: None,
            record_path: None,
            no_threads: false,
            pod: None,
        }
    }
}

/// Live view of `target` until the user quits. Starting the capture fails before the
/// terminal is touched (so a missing privilege is one plain line on stderr).
#[cfg(feature = "capture")]
pub fn run_live(target: crate::capture::Target, opts: LiveOpts) -> Result<()> {
    use crate::capture::{CaptureBuilder, Target};
    require_terminal()?;
    let seed_scope = target.seed_scope();
    let title = match &target {
        Target::All => "all".to_string(),
        Target::Pid(p) => format!("pid {p}"),
        Target::Command(c) => format!("cmd {}", c.join(" ")),
    };
    // The viewer owns the terminal: a command gets /dev/null for its stdio (through a shell
    // that execs it, so the followed pid is the command's own).
    let (target, note) = match target {
        Target::Command(argv) => {
            let mut wrapped: Vec<String> = [
                "/bin/sh",
                "-c",
                "exec \"$@\" </dev/null >/dev/null 2>&1",
                "sh",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect();
            wrapped.extend(argv);
            (
                Target::Command(wrapped),
                Some("the command's stdin/stdout/stderr are /dev/null".to_string()),
            )
        }
        t => (t, None),
    };
    let rt = runtime()?;
    rt.block_on(async move {
        let cap = CaptureBuilder::new(target)
            .ring_bytes(opts.ring_bytes)
            .syscalls(opts.syscalls)
            .signals(opts.signals)
            .start()?;
        let (tx, rx) = mpsc::channel(CHANNEL_CAPACITY);
        let mut state = AppState::new_live(title);
        open_scoped(&mut state, opts.no_threads, opts.pod.map(PodScope::Typed));
        state.set_sched_probes(!cap.syscall_probes());
        state.log.time_clock = crate::clock::Clock::live();
        state.status.message = note;
        state.capture.seed_scope = seed_scope;
        state.status.recording = opts
            .record_path
            .filter(|_| opts.recorder.is_some())
            .map(|p| p.display().to_string());
        let src = tokio::spawn(source::live(cap, tx, opts.recorder));
        let res = app_loop(state, rx, None).await;
        // Dropping the receiver ends the source, which flushes the recorder.
        let _ = tokio::time::timeout(Duration::from_secs(2), src).await;
        res.map(drop)
    })
}

/// The event loop: input → reducer, source → ingestion, frames at ≤ 30 fps.
async fn app_loop(
    mut state: AppState,
    mut rx: mpsc::Receiver<Msg>,
    ctl: Option<mpsc::Sender<Control>>,
) -> Result<AppState> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut sigterm = signal(SignalKind::terminate())?;
    let mut sigint = signal(SignalKind::interrupt())?;
    let mut sighup = signal(SignalKind::hangup())?;
    state.view.color = color_allowed();

    let mut guard = term::Guard::enter().context("cannot set up the terminal")?;
    let size = guard.term.size()?;
    state.view.size = (size.width, size.height);

    let (in_tx, mut in_rx) = mpsc::channel(256);
    let stop = Arc::new(AtomicBool::new(false));
    let input = term::spawn_input(in_tx, stop.clone());

    let start = Instant::now();
    let mut frame = tokio::time::interval(FRAME);
    frame.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut source_open = true;
    let mut last_clock = 0u64;
    let mut result = Ok(());

    loop {
        tokio::select! {
            biased;
            _ = sigterm.recv() => break,
            _ = sigint.recv() => break,
            _ = sighup.recv() => break,
            ev = in_rx.recv() => {
                let Some(ev) = ev else { break };
                if let Some(a) = action::action_for(&ev, &state) {
                    for c in reduce(&mut state, a) {
                        if let Some(ctl) = &ctl {
                            let _ = ctl.try_send(c);
                        }
                    }
                }
                if std::mem::take(&mut state.capture.save_requested) {
                    state.status.message = Some(match save::write_new(&state) {
                        Ok((path, n)) => {
                            let name = path.display();
                            format!("wrote {n} events to {name} (tracer tree {name})")
                        }
                        Err(e) => format!("could not write the window: {e}"),
                    });
                    state.dirty = true;
                }
            }
            _ = frame.tick() => {
                let now = start.elapsed().as_millis() as u64;
                state.set_now(now);
                // The clock-driven parts (events/s, highlights) change a few times a second.
                if now >= last_clock + 250 {
                    last_clock = now;
                    state.dirty = true;
                    // A hung-up terminal (tmux killed, ssh gone) may send no SIGHUP to us:
                    // its size query fails, so leave instead of drawing into nothing.
                    if crossterm::terminal::size().is_err() {
                        break;
                    }
                }
                if state.dirty {
                    state.refresh();
                    if let Err(e) = guard.term.draw(|f| draw(f, &state)) {
                        result = Err(e).context("cannot draw");
                        break;
                    }
                    state.dirty = false;
                }
            }
            msg = rx.recv(), if source_open => {
                match msg {
                    Some(m) => {
                        state.ingest(m);
                        for _ in 0..INGEST_BUDGET {
                            match rx.try_recv() {
                                Ok(m) => state.ingest(m),
                                Err(_) => break,
                            }
                        }
                    }
                    None => source_open = false,
                }
            }
        }
        if state.quit {
            break;
        }
    }
    stop.store(true, Ordering::Relaxed);
    drop(in_rx);
    // Not joined: after a hangup crossterm's reader can spin on EOF and never return; the
    // thread ends with the process.
    drop(input);
    drop(guard);
    result.map(|()| state)
}
