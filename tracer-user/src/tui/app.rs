//! The whole viewer over any terminal: a source task, the [`app_loop`] (input → reducer,
//! source → ingestion, frames at ≤ 30 fps), drawn on any ratatui [`Backend`] and fed by any
//! [`UserInput`]. The real terminal (`tui/term.rs`) and the tests' fake one
//! (`tui/fake.rs`: ratatui's `TestBackend` and a script of keys) run the same code.

use std::future::Future;
use std::time::Instant;

use crossterm::event::Event as TermEvent;
use ratatui::backend::Backend;
use ratatui::Terminal;
use tokio::sync::mpsc;

use super::msg::{Control, Msg, CHANNEL_CAPACITY};
use super::state::NodePlace;
use super::{action, draw, reduce, save, source};
use super::{AppState, LiveOpts, Recording, ReplayOpts, TuiError, FRAME, INGEST_BUDGET};

/// Where the viewer reads its user from: the terminal's events (keys, mouse, resizes), or a
/// script of them in tests.
pub trait UserInput {
    /// The next event; `None` when the user is gone (the input closed, or a signal that
    /// stops the viewer). Cancel-safe: the loop drops it when a frame or a message comes
    /// first, and nothing may be lost then.
    fn next(&mut self) -> impl Future<Output = Option<TermEvent>>;
}

/// A replay of `rec` on `term` until the user quits (or the input ends); the final state.
/// `color`: the terminal may show colours (`NO_COLOR` unset).
pub async fn replay_app<B: Backend>(
    rec: Recording,
    opts: ReplayOpts,
    term: &mut Terminal<B>,
    input: &mut impl UserInput,
    color: bool,
) -> Result<AppState, TuiError>
where
    B::Error: std::error::Error + Send + Sync + 'static,
{
    replay_node(rec, opts, None, term, input, color).await
}

/// Across nodes: node `names[i]`'s recording, as `open(i)` makes it (with how it opens), replayed on `term`; the
/// user's `{`/`}` reopens the view on the node before or after it, until the user quits (or
/// the input ends). A node that cannot be opened ends the viewer with its error.
pub async fn nodes_app<B: Backend>(
    names: &[String],
    open: &mut super::OpenNode<'_>,
    term: &mut Terminal<B>,
    input: &mut impl UserInput,
    color: bool,
) -> Result<AppState, TuiError>
where
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let mut at = 0;
    loop {
        let (rec, opts) = open(at).map_err(TuiError::Node)?;
        let node = NodePlace {
            name: names.get(at).cloned().unwrap_or_default(),
            at,
            of: names.len(),
            switch_to: None,
        };
        let state = replay_node(rec, opts, Some(node), term, input, color).await?;
        match state.node.as_ref().and_then(|n| n.switch_to) {
            Some(next) if !state.quit => at = next,
            _ => return Ok(state),
        }
    }
}

/// [`replay_app`], of one node of several when `node` says which.
async fn replay_node<B: Backend>(
    rec: Recording,
    opts: ReplayOpts,
    node: Option<NodePlace>,
    term: &mut Terminal<B>,
    input: &mut impl UserInput,
    color: bool,
) -> Result<AppState, TuiError>
where
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let (tx, rx) = mpsc::channel(CHANNEL_CAPACITY);
    let (ctl_tx, ctl_rx) = mpsc::channel(64);
    let mut state = super::replay_state(rec.title, rec.pod.clone(), &rec.seed, &opts);
    state.node = node;
    state.playback.following = rec.tail.is_some();
    state.view.color = color;
    let replay = source::replay(rec.events, rec.seed, opts, rec.pod, tx, ctl_rx, rec.tail);
    let src = tokio::spawn(replay);
    let res = app_loop(state, term, input, rx, Some(ctl_tx)).await;
    src.abort();
    res
}

/// A live view of `src` on `term` until the user quits (or the input ends): the final state,
/// and the source's task, still flushing its recorder (the app is gone: it ends at once).
/// `color` as for [`replay_app`].
pub async fn live_app<B: Backend, S: crate::source::EventSource + 'static>(
    src: S,
    mut opts: LiveOpts,
    term: &mut Terminal<B>,
    input: &mut impl UserInput,
    color: bool,
) -> (Result<AppState, TuiError>, tokio::task::JoinHandle<()>)
where
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let (tx, rx) = mpsc::channel(CHANNEL_CAPACITY);
    let mut state = super::live_state(&mut opts);
    state.view.color = color;
    let task = tokio::spawn(source::live(src, tx, opts.recorder));
    // Dropping the receiver (the loop's end) ends the source, which flushes the recorder.
    (app_loop(state, term, input, rx, None).await, task)
}

/// The event loop: input → reducer, source → ingestion, frames at ≤ 30 fps, drawn only
/// when something changed; ends when the user quits, the input ends or the terminal is gone.
pub async fn app_loop<B: Backend>(
    mut state: AppState,
    term: &mut Terminal<B>,
    input: &mut impl UserInput,
    mut rx: mpsc::Receiver<Msg>,
    ctl: Option<mpsc::Sender<Control>>,
) -> Result<AppState, TuiError>
where
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let size = term.size().map_err(TuiError::terminal)?;
    state.view.size = (size.width, size.height);
    let mut frames = Frames::new();
    let mut source_open = true;
    loop {
        tokio::select! {
            biased;
            ev = input.next() => {
                let Some(ev) = ev else { break };
                take_input(&mut state, &ev, ctl.as_ref());
            }
            _ = frames.interval.tick() => {
                if !frames.show(&mut state, term)? {
                    break;
                }
            }
            msg = rx.recv(), if source_open => match msg {
                Some(m) => take_msgs(&mut state, m, &mut rx),
                None => source_open = false,
            },
        }
        // A switch of node: the caller reopens the view on the node asked for.
        if state.quit || state.node.as_ref().is_some_and(|n| n.switch_to.is_some()) {
            break;
        }
    }
    Ok(state)
}

/// A terminal event: its action reduced, the controls it asks for sent to a replay source,
/// and the window written when `w` asked for it.
fn take_input(state: &mut AppState, ev: &TermEvent, ctl: Option<&mpsc::Sender<Control>>) {
    if let Some(a) = action::action_for(ev, state) {
        for c in reduce(state, a) {
            if let Some(ctl) = ctl {
                let _ = ctl.try_send(c);
            }
        }
    }
    if std::mem::take(&mut state.capture.save_requested) {
        state.status.message = Some(match save::write_new(state) {
            Ok((path, n)) => {
                let name = path.display();
                format!("wrote {n} events to {name} (tracer tree {name})")
            }
            Err(e) => format!("could not write the window: {e}"),
        });
        state.dirty = true;
    }
}

/// `m` and what else the source has ready, up to [`INGEST_BUDGET`] (then the input gets a
/// look again).
fn take_msgs(state: &mut AppState, m: Msg, rx: &mut mpsc::Receiver<Msg>) {
    state.ingest(m);
    for _ in 0..INGEST_BUDGET {
        match rx.try_recv() {
            Ok(m) => state.ingest(m),
            Err(_) => break,
        }
    }
}

/// The frame clock: ticks at most every [`FRAME`], the state's clock from the loop's start.
struct Frames {
    interval: tokio::time::Interval,
    start: Instant,
    last_clock: u64,
}

impl Frames {
    fn new() -> Frames {
        let mut interval = tokio::time::interval(FRAME);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        Frames {
            interval,
            start: Instant::now(),
            last_clock: 0,
        }
    }

    /// One tick: the clock moved on, and a frame drawn when something changed. False when
    /// the terminal is gone.
    fn show<B: Backend>(
        &mut self,
        state: &mut AppState,
        term: &mut Terminal<B>,
    ) -> Result<bool, TuiError>
    where
        B::Error: std::error::Error + Send + Sync + 'static,
    {
        let now = self.start.elapsed().as_millis() as u64;
        state.set_now(now);
        // The clock-driven parts (events/s, highlights) change a few times a second.
        if now >= self.last_clock + 250 {
            self.last_clock = now;
            state.dirty = true;
            // A hung-up terminal (tmux killed, ssh gone) may send no SIGHUP to us: its size
            // query fails, so leave instead of drawing into nothing.
            if term.size().is_err() {
                return Ok(false);
            }
        }
        if state.dirty {
            state.refresh();
            term.draw(|f| draw(f, state)).map_err(TuiError::draw)?;
            state.dirty = false;
        }
        Ok(true)
    }
}
