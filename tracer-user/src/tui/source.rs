//! Source tasks: they own the events (a file's, or the capture's) and feed the app over the
//! bounded channel. The app never touches BPF.

use std::time::Duration;

use tokio::sync::mpsc::{Receiver, Sender};
use tokio::time::Instant;

use crate::event::Event;
use crate::lineage::Engine;

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

/// Virtual time of each event (ns from the first), gaps capped at [`MAX_GAP`].
fn virtual_times(events: &[Event]) -> Vec<u64> {
    let mut vt = Vec::with_capacity(events.len());
    let mut t = 0u64;
    let mut prev: Option<u64> = None;
    for ev in events {
        let gap = match prev {
            None => 0,
            Some(_) if ev.ts_ns == 0 => DEFAULT_GAP.as_nanos() as u64,
            Some(p) => ev.ts_ns.saturating_sub(p).min(MAX_GAP.as_nanos() as u64),
        };
        if ev.ts_ns != 0 {
            prev = Some(ev.ts_ns);
        } else if prev.is_none() {
            prev = Some(0);
        }
        t = t.saturating_add(gap);
        vt.push(t);
    }
    vt
}

/// Plays `events` with their original timing scaled by the speed; obeys [`Control`]s.
/// Returns when the app is gone (either channel closed).
pub async fn replay(
    events: Vec<Event>,
    seed: Vec<crate::lineage::SnapshotProcess>,
    opts: ReplayOpts,
    tx: Sender<Msg>,
    mut ctl: Receiver<Control>,
) {
    let total = events.len();
    let stories = {
        let mut e = Engine::new();
        e.seed_snapshot(&seed);
        events.iter().for_each(|ev| e.apply(ev));
        crate::lineage::stories(&e)
    };
    if tx
        .send(Msg::Init {
            total,
            stories: stories.clone(),
        })
        .await
        .is_err()
    {
        return;
    }
    let vt = virtual_times(&events);
    let mut pos = 0usize;
    let mut paused = opts.paused;
    let mut speed = opts.speed.clamp(1.0 / 64.0, 4096.0);
    // Timing anchor: at `anchor`, virtual time `anchor_vt` was reached.
    let mut anchor = Instant::now();
    let mut anchor_vt = 0u64;

    let send_range = |from: usize, to: usize| {
        let chunks: Vec<Vec<Event>> = events[from..to]
            .chunks(MAX_BATCH)
            .map(|c| c.to_vec())
            .collect();
        chunks
    };
    let first_step = stories.iter().flat_map(|s| &s.steps).map(|st| st.seq).min();
    let open_at = match first_step {
        Some(seq) if opts.guided => events.iter().position(|e| e.seq > seq).unwrap_or(total),
        _ if opts.at_end => total,
        _ => 0,
    };
    if opts.guided {
        paused = true;
    }
    if open_at > 0 {
        for c in send_range(0, open_at) {
            if tx.send(Msg::Events(c)).await.is_err() {
                return;
            }
        }
        pos = open_at;
    }

    loop {
        let due = |i: usize, anchor: Instant, anchor_vt: u64, speed: f64| -> Instant {
            let dv = vt[i].saturating_sub(anchor_vt) as f64 / speed;
            anchor + Duration::from_nanos(dv.min(3.6e12) as u64)
        };
        let next = (!paused && pos < total).then(|| due(pos, anchor, anchor_vt, speed));
        let sleep = tokio::time::sleep_until(next.unwrap_or_else(Instant::now));
        tokio::select! {
            c = ctl.recv() => {
                let Some(c) = c else { return };
                let mut target: Option<usize> = None;
                match c {
                    Control::Pause(p) => paused = p,
                    Control::Speed(s) => speed = s.clamp(1.0 / 64.0, 4096.0),
                    Control::Step(n) => {
                        paused = true;
                        target = Some(if n >= 0 {
                            pos.saturating_add(n as usize).min(total)
                        } else {
                            pos.saturating_sub(n.unsigned_abs() as usize)
                        });
                    }
                    Control::Seek(seq) => {
                        target = Some(events.iter().position(|e| e.seq > seq).unwrap_or(total));
                    }
                    Control::Start => target = Some(0),
                    Control::End => target = Some(total),
                }
                if let Some(t) = target {
                    if t > pos {
                        for c in send_range(pos, t) {
                            if tx.send(Msg::Events(c)).await.is_err() {
                                return;
                            }
                        }
                    } else if t < pos && tx.send(Msg::Rewind(t)).await.is_err() {
                        return;
                    }
                    pos = t;
                }
                // Re-anchor: the next event comes after its own gap from now.
                anchor = Instant::now();
                anchor_vt = if pos > 0 { vt[pos - 1] } else { vt.first().copied().unwrap_or(0) };
            }
            _ = sleep, if next.is_some() => {
                let now = Instant::now();
                let mut end = pos + 1;
                while end < total && end - pos < MAX_BATCH && due(end, anchor, anchor_vt, speed) <= now {
                    end += 1;
                }
                if tx.send(Msg::Events(events[pos..end].to_vec())).await.is_err() {
                    return;
                }
                pos = end;
            }
        }
    }
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
