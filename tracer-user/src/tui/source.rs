//! Source tasks: they own the events (a file's, or the capture's) and feed the app over the
//! bounded channel. The app never touches BPF.

use std::time::Duration;

use tokio::sync::mpsc::{Receiver, Sender};
use tokio::time::Instant;

use crate::event::Event;
use crate::input::TailItem;
use crate::lineage::Engine;
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
    /// Recorded without syscall probes ([`Header::sched_probes`](crate::tracefile::Header::sched_probes)).
    pub sched_probes: bool,
    /// Guided: open paused right after the first story step's event (overrides `at_end`).
    pub guided: bool,
}

impl Default for ReplayOpts {
    fn default() -> Self {
        ReplayOpts {
            speed: 1.0,
            paused: false,
            at_end: false,
            sched_probes: false,
            guided: false,
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
    clock: Clock,
    engine: Option<Engine>,
    stories: Vec<crate::lineage::Story>,
}

impl Played {
    fn new(
        events: PackedEvents,
        seed: &[crate::lineage::SnapshotProcess],
        growing: bool,
    ) -> Played {
        let mut engine = crate::export::seeded(seed);
        let mut clock = Clock::default();
        for ev in events.iter() {
            clock.push(&ev);
            engine.apply(&ev);
        }
        Played {
            stories: crate::lineage::stories(&engine),
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
            self.stories = crate::lineage::stories(e);
        }
    }

    fn init(&self) -> Msg {
        Msg::Init {
            total: self.events.len(),
            stories: self.stories.clone(),
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
        let total = self.events.len();
        self.events
            .iter()
            .position(|e| e.seq > seq)
            .unwrap_or(total)
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

/// Where a replay opens: guided at the first story step, at the end, or at the start.
fn open_position(played: &Played, opts: &ReplayOpts) -> usize {
    let total = played.events.len();
    let first_step = played
        .stories
        .iter()
        .flat_map(|s| &s.steps)
        .map(|st| st.seq)
        .min();
    match first_step {
        Some(seq) if opts.guided => played.after(seq),
        _ if opts.at_end => total,
        _ => 0,
    }
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
/// channel closed).
pub async fn replay(
    events: PackedEvents,
    seed: Vec<crate::lineage::SnapshotProcess>,
    opts: ReplayOpts,
    tx: Sender<Msg>,
    mut ctl: Receiver<Control>,
    mut tail: Option<Receiver<TailItem>>,
) {
    let mut played = Played::new(events, &seed, tail.is_some());
    if tx.send(played.init()).await.is_err() {
        return;
    }
    let mut p = Player {
        pos: 0,
        paused: opts.paused || opts.guided,
        speed: opts.speed.clamp(1.0 / 64.0, 4096.0),
        anchor: Instant::now(),
        anchor_vt: 0,
    };
    let open_at = open_position(&played, &opts);
    if open_at > 0 && !send_all(&tx, played.chunks(0, open_at)).await {
        return;
    }
    p.pos = open_at;
    let mut items = Vec::new();
    loop {
        let total = played.events.len();
        let next = (!p.paused && p.pos < total).then(|| p.due(played.clock.times[p.pos]));
        let sleep = tokio::time::sleep_until(next.unwrap_or_else(Instant::now));
        tokio::select! {
            c = ctl.recv() => {
                let Some(c) = c else { return };
                if let Some(t) = p.control(c, &played) {
                    let msgs: Box<dyn Iterator<Item = Msg> + Send + '_> = match t.cmp(&p.pos) {
                        std::cmp::Ordering::Greater => Box::new(played.chunks(p.pos, t)),
                        std::cmp::Ordering::Less => Box::new(std::iter::once(Msg::Rewind(t))),
                        std::cmp::Ordering::Equal => Box::new(std::iter::empty()),
                    };
                    if !send_all(&tx, msgs).await {
                        return;
                    }
                    p.pos = t;
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
                if !send_all(&tx, played.chunks(p.pos, end)).await {
                    return;
                }
                p.pos = end;
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
        if tx.send(played.init()).await.is_err() {
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
    /// Called once the capture has started, before the first batch (a trace file's header
    /// takes the capture's layouts and probe set from it).
    #[cfg(feature = "capture")]
    fn begin(&mut self, _cap: &crate::capture::Capture) -> std::io::Result<()> {
        Ok(())
    }
    /// Records one batch of events, in seq order.
    fn record(&mut self, batch: &[Event]) -> std::io::Result<()>;
    /// Called once when the capture ends, with the drop count.
    fn finish(&mut self, _drops: u64) -> std::io::Result<()> {
        Ok(())
    }
}

/// `pid`, its ancestors and (if asked) its descendants out of a /proc snapshot.
#[cfg(feature = "capture")]
fn lineage_of(
    snap: Vec<crate::lineage::SnapshotProcess>,
    pid: u32,
    descendants: bool,
) -> Vec<crate::lineage::SnapshotProcess> {
    use std::collections::{HashMap, HashSet};
    let ppid: HashMap<u32, u32> = snap.iter().map(|p| (p.pid, p.ppid)).collect();
    let mut keep: HashSet<u32> = HashSet::new();
    let mut cur = Some(pid);
    while let Some(p) = cur {
        if p == 0 || !keep.insert(p) {
            break;
        }
        cur = ppid.get(&p).copied();
    }
    // Descendants: anything whose ancestry reaches `pid`.
    for p in snap.iter().filter(|_| descendants) {
        let mut chain = Vec::new();
        let mut c = p.pid;
        let mut hops = 0;
        while c != 0 && hops < 4096 {
            if c == pid {
                keep.extend(chain);
                break;
            }
            chain.push(c);
            c = ppid.get(&c).copied().unwrap_or(0);
            hops += 1;
        }
    }
    snap.into_iter().filter(|p| keep.contains(&p.pid)).collect()
}

/// Reads the capture and feeds the app. Never waits for the app: while the channel is full
/// batches are coalesced here (the ring buffer keeps being drained).
#[cfg(feature = "capture")]
pub async fn live(
    mut cap: crate::capture::Capture,
    tx: Sender<Msg>,
    mut recorder: Option<Box<dyn Recorder>>,
) {
    use crate::capture::{CaptureItem, Notice, Target};
    let mut pending: Vec<Event> = Vec::new();
    let mut batch: Vec<Event> = Vec::new();
    let mut tick = tokio::time::interval(Duration::from_millis(500));
    let seed = match cap.target() {
        Target::All => crate::capture::procfs::snapshot(),
        Target::Pid(pid) => lineage_of(crate::capture::procfs::snapshot(), *pid, true),
        // Its descendants come from the events (it started after the probes).
        Target::Command(_) => match cap.child_pid() {
            Some(pid) => {
                let mut seed = lineage_of(crate::capture::procfs::snapshot(), pid, false);
                seed.retain(|p| p.pid != pid);
                seed.extend(cap.launched_process());
                seed
            }
            None => Vec::new(),
        },
    };
    if !seed.is_empty() && tx.send(Msg::Seed(seed)).await.is_err() {
        return;
    }
    for note in cap.notes().to_vec() {
        let _ = tx.try_send(Msg::Note(note));
    }
    if let Some(Err(e)) = recorder.as_mut().map(|r| r.begin(&cap)) {
        let _ = tx.try_send(Msg::Error(format!("recording not started: {e}")));
        recorder = None;
    }
    let mut lp = crate::capture::CaptureLoop::new(&mut cap);
    // Messages the full channel refused, retried at the tick (the loop never waits for the app).
    let (mut drops_due, mut exited_due, mut ended) = (None, false, false);
    loop {
        tokio::select! {
            permit = tx.reserve(), if !pending.is_empty() => {
                match permit {
                    Ok(p) => p.send(Msg::Events(std::mem::take(&mut pending))),
                    Err(_) => break,
                }
            }
            item = lp.next(), if !ended => {
                let mut item = match item {
                    None => { ended = true; continue; }
                    Some(Err(e)) => {
                        let _ = tx.send(Msg::Error(format!("capture: {e}"))).await;
                        break;
                    }
                    Some(Ok(item)) => Some(item),
                };
                while let Some(i) = item {
                    match i {
                        CaptureItem::Event(ev) => batch.push(ev),
                        CaptureItem::Notice(Notice::Drops { total }) => drops_due = Some(total),
                        CaptureItem::Notice(Notice::TargetGone) => exited_due = true,
                        CaptureItem::Notice(Notice::Gap { .. }) => {}
                    }
                    item = lp.ready();
                }
                if let Some(rec) = recorder.as_mut() {
                    if let Err(e) = rec.record(&batch) {
                        let _ = tx.try_send(Msg::Error(format!("recording stopped: {e}")));
                        recorder = None;
                    }
                }
                pending.append(&mut batch);
            }
            _ = tick.tick() => {
                if tx.is_closed() {
                    break;
                }
            }
        }
        if drops_due.is_some_and(|d| tx.try_send(Msg::Drops(d)).is_ok()) {
            drops_due = None;
        }
        if exited_due && pending.is_empty() && tx.try_send(Msg::TargetExited).is_ok() {
            exited_due = false;
        }
    }
    let rest: Vec<Event> = lp
        .finish()
        .into_iter()
        .filter_map(|i| match i {
            CaptureItem::Event(ev) => Some(ev),
            CaptureItem::Notice(_) => None,
        })
        .collect();
    if let Some(rec) = recorder.as_mut() {
        let _ = rec.record(&rest);
        let _ = rec.finish(cap.drops());
    }
}
