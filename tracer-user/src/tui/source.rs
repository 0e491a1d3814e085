//! Source tasks: they own the events (a file's, or the capture's) and feed the app over the
//! bounded channel. The app never touches BPF.

use std::time::Duration;

use tokio::sync::mpsc::{Receiver, Sender};
use tokio::time::Instant;

use crate::event::Event;
use crate::input::TailItem;
use crate::lineage::{Engine, PodScope};
use crate::tracefile::PackedEvents;

use super::msg::{Control, Msg};

/// Longest pause between two replayed events (at 1×): idle stretches are compressed.
pub const MAX_GAP: Duration = Duration::from_secs(1);
/// Pace at 1× when the file has no timestamps.
pub const DEFAULT_GAP: Duration = Duration::from_millis(20);
/// Most events per message.
const MAX_BATCH: usize = 8_192;

/// How a replay starts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReplayOpts {
    /// Multiplier of the original timing (2.0 = twice as fast).
    pub speed: f64,
    /// Start paused.
    pub paused: bool,
    /// Start with every event applied (the final tree) instead of from the first one.
    pub at_end: bool,
    /// Open paused with every event up to this sequence number applied (`--at SEQ`; over
    /// `at_end`, under `guided`).
    pub at: Option<u64>,
    /// Recorded without syscall probes ([`Header::sched_probes`](crate::tracefile::Header::sched_probes)).
    pub sched_probes: bool,
    /// Guided: open paused right after the first story step's event (overrides `at_end`).
    pub guided: bool,
    /// Guided: open at this story's first step instead (an index into the stories the view
    /// shows: with a pod scope, the pod's), as `--story` selects it.
    pub story: Option<usize>,
    /// Guided: quiz the user before each step that reveals a choice of the kernel's.
    pub quiz: bool,
    /// Open with threads hidden (`--no-threads`: no thread lines, no thread rows).
    pub no_threads: bool,
    /// What the events' `ts_ns` mean ([`Input::clock`](crate::input::Input::clock)): the log's
    /// time of day (`c`).
    pub clock: crate::clock::Clock,
}

impl Default for ReplayOpts {
    fn default() -> Self {
        ReplayOpts {
            speed: 1.0,
            paused: false,
            at_end: false,
            at: None,
            sched_probes: false,
            guided: false,
            story: None,
            quiz: false,
            no_threads: false,
            clock: crate::clock::Clock::None,
        }
    }
}

/// Virtual time (ns from the first event) of a growing event list, gaps capped at
/// [`MAX_GAP`].
#[derive(Default)]
struct Clock {
    t: u64,
    prev: Option<u64>,
    times: Vec<u64>,
}

impl Clock {
    fn push(&mut self, ev: &Event) {
        let gap = match self.prev {
            None => 0,
            Some(_) if ev.ts_ns == 0 => DEFAULT_GAP.as_nanos() as u64,
            Some(p) => ev.ts_ns.saturating_sub(p).min(MAX_GAP.as_nanos() as u64),
        };
        if ev.ts_ns != 0 {
            self.prev = Some(ev.ts_ns);
        } else if self.prev.is_none() {
            self.prev = Some(0);
        }
        self.t = self.t.saturating_add(gap);
        self.times.push(self.t);
    }
}

/// A recording as the replay source holds it: its events so far, their virtual times, and
/// the stories of them all. The engine that tells the stories is kept only while events
/// can still come (a followed recording).
struct Played {
    events: PackedEvents,
    /// What the search finds: every process of the recording so far.
    index: Vec<super::find::Findable>,
    clock: Clock,
    engine: Option<Engine>,
    /// Kept up to date batch by batch while the recording grows.
    stories: crate::lineage::Stories,
    /// The stories' version the app last got whole.
    sent: u64,
}

impl Played {
    fn new(
        events: PackedEvents,
        seed: &[crate::lineage::SnapshotProcess],
        growing: bool,
    ) -> Played {
        let mut engine = crate::lineage::Engine::seeded(seed);
        let mut clock = Clock::default();
        for ev in events.iter() {
            clock.push(&ev);
            engine.apply(&ev);
        }
        let stories = crate::lineage::Stories::build(&engine);
        Played {
            index: super::find::Findable::every(&engine),
            sent: stories.version(),
            stories,
            events,
            clock,
            engine: growing.then_some(engine),
        }
    }

    fn append(&mut self, events: Vec<Event>) {
        for ev in &events {
            self.clock.push(ev);
            if let Some(e) = self.engine.as_mut() {
                e.apply(ev);
            }
            self.events.push(ev);
        }
        if let Some(e) = &self.engine {
            self.stories.update(e);
        }
    }

    fn init(&self) -> Msg {
        Msg::Init {
            total: self.events.len(),
            stories: self.stories.list(),
        }
    }

    /// The search's index, after [`Played::init`].
    fn index(&self) -> Msg {
        Msg::Index(self.index.clone())
    }

    /// After an append: the stories again only when they changed, else the new size.
    fn grown(&mut self) -> Msg {
        if self.stories.version() == self.sent {
            return Msg::Grown(self.events.len());
        }
        self.sent = self.stories.version();
        self.init()
    }

    /// After an append that changed the stories: the search's index too.
    /// (The app's search also looks at its own engine: what came since is found there.)
    fn regrown(&mut self) -> Vec<Msg> {
        match self.grown() {
            m @ Msg::Init { .. } => {
                if let Some(e) = &self.engine {
                    self.index = super::find::Findable::every(e);
                }
                vec![m, self.index()]
            }
            m => vec![m],
        }
    }

    /// `events[from..to]` in messages of at most [`MAX_BATCH`], each decoded as it is
    /// taken (seeking to the end of a big recording never holds it all unpacked).
    fn chunks(&self, from: usize, to: usize) -> impl Iterator<Item = Msg> + '_ {
        (from..to)
            .step_by(MAX_BATCH)
            .map(move |a| Msg::Events(self.events.range(a, (a + MAX_BATCH).min(to))))
    }

    /// Index of the first event after `seq` (the end if none).
    fn after(&self, seq: u64) -> usize {
        self.events.first_after(seq)
    }
}

/// The next items of a followed recording; never ready without one.
async fn next_tail(tail: &mut Option<Receiver<TailItem>>, buf: &mut Vec<TailItem>) -> usize {
    match tail {
        Some(rx) => rx.recv_many(buf, MAX_BATCH).await,
        None => std::future::pending().await,
    }
}

/// The replay position and its timing.
struct Player {
    pos: usize,
    /// Events sent to the app so far: it holds them, and goes anywhere among them itself.
    sent: usize,
    paused: bool,
    speed: f64,
    /// Timing anchor: at `anchor`, virtual time `anchor_vt` was reached.
    anchor: Instant,
    anchor_vt: u64,
}

impl Player {
    fn due(&self, vt: u64) -> Instant {
        let dv = vt.saturating_sub(self.anchor_vt) as f64 / self.speed;
        self.anchor + Duration::from_nanos(dv.min(3.6e12) as u64)
    }

    /// Re-anchors so that the event at `pos` comes after its own gap from now.
    fn reanchor(&mut self, times: &[u64]) {
        self.anchor = Instant::now();
        self.anchor_vt = match self.pos {
            0 => times.first().copied().unwrap_or(0),
            p => times[p - 1],
        };
    }

    /// What takes the app from the position to `t`: there itself when it holds event `t`
    /// already, else to the last event it holds, then the events after. Moves there.
    fn move_to<'a>(&mut self, t: usize, played: &'a Played) -> impl Iterator<Item = Msg> + 'a {
        let reach = t.min(self.sent);
        let goto = (reach != self.pos).then_some(Msg::Goto(reach));
        let from = self.sent.max(reach);
        self.pos = t;
        self.sent = self.sent.max(t);
        goto.into_iter().chain(played.chunks(from, t))
    }

    /// Where a control moves the position to, if it does.
    fn control(&mut self, c: Control, played: &Played) -> Option<usize> {
        let total = played.events.len();
        match c {
            Control::Pause(p) => self.paused = p,
            Control::Speed(s) => self.speed = s.clamp(1.0 / 64.0, 4096.0),
            Control::Step(n) => {
                self.paused = true;
                return Some(if n >= 0 {
                    self.pos.saturating_add(n as usize).min(total)
                } else {
                    self.pos.saturating_sub(n.unsigned_abs() as usize)
                });
            }
            Control::Seek(seq) => return Some(played.after(seq)),
            Control::Start => return Some(0),
            Control::End => return Some(total),
        }
        None
    }
}

/// Where a replay opens: guided at the first step of the stories it shows (the pod's or the
/// container's with `pod`), after the event `--at` names, at the end, or at the start.
fn open_position(played: &Played, opts: &ReplayOpts, pod: Option<&PodScope>) -> usize {
    let total = played.events.len();
    let shown = || {
        played
            .stories
            .iter()
            .filter(|s| pod.is_none_or(|m| crate::lineage::story_in_pod(s, m)))
    };
    let first_step = opts
        .story
        .and_then(|i| shown().nth(i))
        .and_then(|s| s.steps.first())
        .or_else(|| shown().flat_map(|s| &s.steps).min_by_key(|st| st.seq))
        .map(|st| st.seq);
    match first_step {
        Some(seq) if opts.guided => played.after(seq),
        _ if opts.at.is_some() => opts.at.map_or(total, |seq| played.after(seq)),
        _ if opts.at_end => total,
        _ => 0,
    }
}

/// What a replay source sends as it opens, without playing on: the stories, then the events
/// up to where it opens (a still of the opening, [`super::screenshot`]); `pod` is the view's
/// scope.
pub fn opening(
    events: PackedEvents,
    seed: &[crate::lineage::SnapshotProcess],
    opts: &ReplayOpts,
    pod: Option<&PodScope>,
) -> Vec<Msg> {
    let played = Played::new(events, seed, false);
    let open_at = open_position(&played, opts, pod);
    [played.init(), played.index()]
        .into_iter()
        .chain(played.chunks(0, open_at))
        .collect()
}

/// Sends `msgs` in order; false when the app is gone.
async fn send_all(tx: &Sender<Msg>, msgs: impl IntoIterator<Item = Msg>) -> bool {
    for m in msgs {
        if tx.send(m).await.is_err() {
            return false;
        }
    }
    true
}

/// Plays `events` with their original timing scaled by the speed; obeys [`Control`]s. With
/// a `tail` (a recording followed live), its events are appended as they come: played in
/// turn, at once when the replay had reached the end. Returns when the app is gone (either
/// channel closed). `pod` is the view's scope (where a guided replay opens).
pub async fn replay(
    events: PackedEvents,
    seed: Vec<crate::lineage::SnapshotProcess>,
    opts: ReplayOpts,
    pod: Option<PodScope>,
    tx: Sender<Msg>,
    mut ctl: Receiver<Control>,
    mut tail: Option<Receiver<TailItem>>,
) {
    let mut played = Played::new(events, &seed, tail.is_some());
    if !send_all(&tx, [played.init(), played.index()]).await {
        return;
    }
    let mut p = Player {
        pos: 0,
        sent: 0,
        paused: opts.paused || opts.guided || opts.at.is_some(),
        speed: opts.speed.clamp(1.0 / 64.0, 4096.0),
        anchor: Instant::now(),
        anchor_vt: 0,
    };
    let open_at = open_position(&played, &opts, pod.as_ref());
    if !send_all(&tx, p.move_to(open_at, &played)).await {
        return;
    }
    let mut items = Vec::new();
    loop {
        let total = played.events.len();
        let next = (!p.paused && p.pos < total).then(|| p.due(played.clock.times[p.pos]));
        let sleep = tokio::time::sleep_until(next.unwrap_or_else(Instant::now));
        tokio::select! {
            c = ctl.recv() => {
                let Some(c) = c else { return };
                if let Some(t) = p.control(c, &played) {
                    if !send_all(&tx, p.move_to(t, &played)).await {
                        return;
                    }
                }
                p.reanchor(&played.clock.times);
            }
            n = next_tail(&mut tail, &mut items) => {
                if !take_tail(&mut played, &mut p, &mut tail, items.drain(..), n, &tx).await {
                    return;
                }
            }
            _ = sleep, if next.is_some() => {
                let now = Instant::now();
                let mut end = p.pos + 1;
                while end < total && end - p.pos < MAX_BATCH && p.due(played.clock.times[end]) <= now {
                    end += 1;
                }
                if !send_all(&tx, p.move_to(end, &played)).await {
                    return;
                }
            }
        }
    }
}

/// Appends what a followed recording sent (`n` items; none: it ended) and tells the app.
/// False when the app is gone.
async fn take_tail(
    played: &mut Played,
    p: &mut Player,
    tail: &mut Option<Receiver<TailItem>>,
    items: impl Iterator<Item = TailItem>,
    n: usize,
    tx: &Sender<Msg>,
) -> bool {
    let caught_up = p.pos == played.events.len();
    let mut fresh = Vec::new();
    let mut failed = None;
    let mut note = None;
    for item in items {
        match item {
            TailItem::Event(ev) => fresh.push(ev),
            TailItem::CaughtUp => {}
            TailItem::Note(n) => note = Some(n),
            TailItem::Failed(e) => failed = Some(e.to_string()),
        }
    }
    if let Some(n) = note {
        if tx.send(Msg::Note(n)).await.is_err() {
            return false;
        }
    }
    if !fresh.is_empty() {
        played.append(fresh);
        if caught_up {
            // Waiting at the end: the first new event plays now, the rest with their gaps.
            p.anchor = Instant::now();
            p.anchor_vt = played.clock.times[p.pos];
        }
        if !send_all(tx, played.regrown()).await {
            return false;
        }
    }
    let end = match (failed, n) {
        (Some(e), _) => Some(Msg::Error(e)),
        (None, 0) => Some(Msg::Note("the followed stream ended".into())),
        _ => None,
    };
    if let Some(m) = end {
        *tail = None;
        return tx.send(m).await.is_ok();
    }
    true
}

/// Where a live source can copy every event batch it reads (a trace-file writer, when
/// `--record` is wired). Called on the source task, before the batch goes to the app.
pub trait Recorder: Send {
    /// Called once the source has started, before the first batch (a trace file's header
    /// takes the capture's layouts and probe set from it).
    fn begin(&mut self, _facts: &crate::source::SourceFacts) -> std::io::Result<()> {
        Ok(())
    }
    /// Records one batch of events, in seq order.
    fn record(&mut self, batch: &[Event]) -> std::io::Result<()>;
    /// Called once when the source ends, with its final counters (for the end record).
    fn finish(&mut self, _counters: crate::source::Counters) -> std::io::Result<()> {
        Ok(())
    }
}

/// Events read while the app's channel was full, and the drop total not yet reported:
/// coalesced here, so the live loop never waits for the app.
#[derive(Default)]
struct Backlog {
    events: Vec<Event>,
    drops: Option<u64>,
}

impl Backlog {
    /// Hands over what the channel takes now; false once the app is gone.
    fn offer(&mut self, tx: &Sender<Msg>) -> bool {
        use tokio::sync::mpsc::error::TrySendError;
        if !self.events.is_empty() {
            match tx.try_send(Msg::Events(std::mem::take(&mut self.events))) {
                Ok(()) => {}
                Err(TrySendError::Full(Msg::Events(evs))) => self.events = evs,
                Err(_) => return false,
            }
        }
        if self.events.is_empty()
            && self
                .drops
                .is_some_and(|d| tx.try_send(Msg::Drops(d)).is_ok())
        {
            self.drops = None;
        }
        true
    }

    /// Everything left, waiting for the app (the source ended: nothing else to read).
    async fn flush(&mut self, tx: &Sender<Msg>) -> bool {
        if !self.events.is_empty()
            && tx
                .send(Msg::Events(std::mem::take(&mut self.events)))
                .await
                .is_err()
        {
            return false;
        }
        match self.drops.take() {
            Some(d) => tx.send(Msg::Drops(d)).await.is_ok(),
            None => true,
        }
    }
}

/// Reads a live source (the capture, or a synthetic one) through the one loop and feeds the
/// app: its seed, its notes, then events, drop totals, and the target's end. Never waits for
/// the app: while the channel is full, batches are coalesced here and the source keeps being
/// read (the ring buffer drained).
pub async fn live<S: crate::source::EventSource>(
    src: S,
    tx: Sender<Msg>,
    mut recorder: Option<Box<dyn Recorder>>,
) {
    use crate::source::{DriveOpts, Ended, SourceLoop, Step};
    let seed = src.seed();
    if !seed.is_empty() && tx.send(Msg::Seed(seed)).await.is_err() {
        return;
    }
    let facts = src.facts();
    for note in facts.notes.iter().cloned() {
        let _ = tx.try_send(Msg::Note(note));
    }
    if let Some(Err(e)) = recorder.as_mut().map(|r| r.begin(&facts)) {
        let _ = tx.try_send(Msg::Error(format!("recording not started: {e}")));
        recorder = None;
    }
    let mut lp = SourceLoop::new(src);
    let mut backlog = Backlog::default();
    let opts = DriveOpts {
        tick: Duration::from_millis(100),
        deadline: None,
    };
    let app_gone = tx.closed();
    // A failed recording said at once, or (the channel full) after the loop.
    let mut untold = None;
    let ended = crate::source::drive(&mut lp, opts, app_gone, |step, _| {
        match step {
            Step::Batch(batch) => {
                if let Some(rec) = recorder.as_mut() {
                    if let Err(e) = rec.record(batch) {
                        let msg = Msg::Error(format!("recording stopped: {e}"));
                        untold = tx.try_send(msg).err().map(|e| e.into_inner());
                        recorder = None;
                    }
                }
                backlog.events.append(batch);
            }
            Step::Drops(total) => backlog.drops = Some(total),
            Step::Tick => {}
        }
        // An app that quit ends the loop through `app_gone`, after the final drain (which a
        // recording still gets).
        backlog.offer(&tx);
        Ok::<_, S::Error>(true)
    })
    .await;
    let finished = recorder.as_mut().map(|r| r.finish(lp.source().counters()));
    if let Some(msg) = untold {
        let _ = tx.send(msg).await;
    }
    if let Err(e) = &ended {
        let _ = backlog.flush(&tx).await;
        let _ = tx.send(Msg::Error(format!("capture: {e}"))).await;
    }
    if let Some(Err(e)) = finished {
        let _ = tx
            .send(Msg::Error(format!("recording not finished: {e}")))
            .await;
    }
    if matches!(ended, Ok(Ended::TargetGone)) && backlog.flush(&tx).await {
        let _ = tx.send(Msg::TargetExited).await;
    }
}
