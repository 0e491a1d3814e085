//! The one seam between where live events come from and what reads them.
//!
//! A live source ([`EventSource`]) is the eBPF capture (`capture::Capture`) or a scripted
//! synthetic one ([`Script`]). Every reader goes through the same loop over it:
//! [`SourceLoop`] turns batches into [`CaptureItem`]s with the loss notices they imply, enriches
//! them ([`enrich`]) and ends a followed target (its set: [`Followed`]); `drive` (with a tokio
//! runtime: features `capture`, `tui` or `agent`) adds the tick, the deadline and the stop
//! signal. `tracer trace`/`record`, the agent and the live viewer all read through `drive`, so
//! whole-app tests run them on a synthetic source without root, and the root tests prove the
//! capture behind the same interface.

use crate::event::{Event, SnapshotProcess};
use crate::tracefile::Header;
use std::collections::VecDeque;
use std::future::Future;

pub mod enrich;
pub mod followed;
#[cfg(test)]
mod tests;

pub use enrich::Host;
pub use followed::{Followed, Mirror, Unmirrored};

/// One item of a live source: an event or a notice of loss.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CaptureItem {
    /// A decoded event, in sequence order.
    Event(Event),
    /// Something was lost.
    Notice(Notice),
}

/// Events lost on the way from the kernel, reported in the capture stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Notice {
    /// The ring buffer was full and the probes dropped events; `total` is the count since the
    /// capture started (the per-CPU drop counters summed). Reported after the batch in which
    /// the counter grew.
    Drops {
        /// Events dropped since the start.
        total: u64,
    },
    /// Sequence numbers `before_seq - missing .. before_seq` never arrived (every event,
    /// dropped or not, takes a sequence number). Reported just before the event `before_seq`.
    /// An event can still arrive late, in a later batch, inside a reported gap: it is yielded
    /// as usual; the drop counter is the authority on what was lost.
    Gap {
        /// How many sequence numbers are missing.
        missing: u64,
        /// The first sequence number after the gap.
        before_seq: u64,
    },
    /// Every followed process has exited (follow mode): the last item; the ring buffer was
    /// drained before it.
    TargetGone,
}

impl std::fmt::Display for Notice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Notice::Drops { total } => write!(f, "ring buffer full: {total} events dropped so far"),
            Notice::Gap {
                missing,
                before_seq,
            } => write!(f, "{missing} events missing before seq {before_seq}"),
            Notice::TargetGone => write!(f, "every followed process has exited"),
        }
    }
}

/// A live source's loss counters, as a trace file's stats record keeps them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Events the kernel side dropped (a full ring buffer).
    pub drops: u64,
    /// Sequence numbers handed out: every event emitted or dropped takes one.
    pub seq_issued: u64,
    /// Records that could not be decoded.
    pub decode_errors: u64,
}

/// Why a [`Script`] refused: it was asked to follow a process its host does not have.
#[derive(Debug, thiserror::Error)]
#[error("no process {0} to follow")]
pub struct NoSuchProcess(pub u32);

/// What only a started source knows, for a recording's header: tracefs layouts, the command
/// it launched, its probe set and notes.
#[derive(Clone, Debug, Default)]
pub struct SourceFacts {
    /// tracefs `format` layouts of the tracepoints in use.
    pub layouts: Vec<(String, String)>,
    /// The command the source started, as the engine's seed (its birth was never seen).
    pub launched: Option<SnapshotProcess>,
    /// `sched` or `sched+syscalls`.
    pub probes: String,
    /// Non-fatal things noticed while starting.
    pub notes: Vec<String>,
}

impl SourceFacts {
    /// Adds these facts to a header made before the source started.
    pub fn add_to(&self, header: &mut Header) {
        header.layouts = self.layouts.clone();
        header
            .snapshot
            .extend(self.launched.as_ref().map(Into::into));
        header.extra.push(("probes".into(), self.probes.clone()));
        for note in &self.notes {
            header.extra.push(("note".into(), note.clone()));
        }
    }
}

/// A live source of events: the eBPF capture, or a synthetic script for tests.
///
/// `next_batch` is cancel-safe: a dropped future loses nothing (the capture's records stay in
/// the ring buffer; a script's steps stay queued).
pub trait EventSource: Send {
    /// Why reading or following failed (the capture's `CaptureError`).
    type Error: std::error::Error + Send + Sync + 'static;
    /// Waits for events and appends them to `out`, in sequence order within the batch. May
    /// return with nothing appended (the capture's poll interval passed).
    fn next_batch(
        &mut self,
        out: &mut Vec<Event>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;
    /// Appends whatever is ready now, without waiting (the final drain).
    fn drain_now(&mut self, out: &mut Vec<Event>);
    /// Loss counters so far.
    fn counters(&self) -> Counters;
    /// Whether the source follows chosen processes (and can therefore run out of them).
    fn following(&self) -> bool;
    /// Follow mode: every followed process is gone.
    fn target_gone(&self) -> bool;
    /// How many processes are followed now (0 once all exited).
    fn followed_count(&self) -> usize;
    /// Follows `pid` too (a restarted daemon's successor).
    fn follow(&mut self, pid: u32) -> Result<(), Self::Error>;
    /// The host's processes now (where a daemon is looked for, and a header's snapshot).
    fn processes(&self) -> Vec<SnapshotProcess>;
    /// A recording's header as of now: this host, the source's mode, a fresh snapshot.
    fn header(&self) -> Header;
    /// What only the started source knows (see [`SourceFacts`]).
    fn facts(&self) -> SourceFacts;
    /// The host the loop's enrichment stage reads (bundle configs, OOM victims' cgroups: see
    /// [`enrich`]); sources with no host to read from (a recording) have none.
    fn host(&self) -> Option<&dyn Host> {
        None
    }
    /// The processes a live view starts from: the followed ones with their ancestors.
    fn seed(&self) -> Vec<SnapshotProcess>;
    /// Called once the target is gone (the capture reaps its command).
    fn target_ended(&mut self) {}
}

/// `pid`, its ancestors and (if asked) its descendants out of a /proc snapshot.
#[cfg(any(feature = "capture", feature = "tui", feature = "agent"))]
pub(crate) fn lineage_of(
    snap: Vec<SnapshotProcess>,
    pid: u32,
    descendants: bool,
) -> Vec<SnapshotProcess> {
    lineage_where(snap, |p| p.pid == pid, descendants.then_some(pid))
}

/// The processes of a /proc snapshot that `picked` chooses, with (if `below` says whose) every
/// descendant of that pid, and the ancestors of all of them: a tree closed under parents, so
/// nothing kept hangs from an unknown pid.
#[cfg(any(feature = "capture", feature = "tui", feature = "agent"))]
pub(crate) fn lineage_where(
    snap: Vec<SnapshotProcess>,
    picked: impl Fn(&SnapshotProcess) -> bool,
    below: Option<u32>,
) -> Vec<SnapshotProcess> {
    use std::collections::{HashMap, HashSet};
    let ppid: HashMap<u32, u32> = snap.iter().map(|p| (p.pid, p.ppid)).collect();
    // Whether `below` is `c` or one of its ancestors (bounded: a snapshot read while processes
    // come and go may hold a parent cycle).
    let under = |mut c: u32| {
        for _ in 0..4096 {
            if c == 0 {
                return false;
            }
            if Some(c) == below {
                return true;
            }
            c = ppid.get(&c).copied().unwrap_or(0);
        }
        false
    };
    let mut keep: HashSet<u32> = HashSet::new();
    for p in snap.iter().filter(|p| picked(p) || under(p.pid)) {
        let mut cur = p.pid;
        while cur != 0 && keep.insert(cur) {
            cur = ppid.get(&cur).copied().unwrap_or(0);
        }
    }
    snap.into_iter().filter(|p| keep.contains(&p.pid)).collect()
}

/// The one loop over a live source: reads batches, turns them into [`CaptureItem`]s with the
/// loss notices they imply, and ends a followed target with [`Notice::TargetGone`].
/// `next` is cancel-safe (use it in `tokio::select!`): items are queued here, never lost.
pub struct SourceLoop<S> {
    src: S,
    follow: bool,
    batch: Vec<Event>,
    queue: VecDeque<CaptureItem>,
    max_seq: u64,
    drops: u64,
    done: bool,
    /// `--pod`: only that pod's events go on ([`SourceLoop::scoped`]).
    scope: Option<crate::lineage::LiveScope>,
}

impl<S: EventSource> SourceLoop<S> {
    /// A loop over `src` that ends once its followed processes are gone (`trace`, `record`,
    /// the viewer).
    pub fn new(src: S) -> Self {
        let follow = src.following();
        Self::with_end(src, follow)
    }

    /// A loop that never ends by itself: the agent, which follows a restarted daemon's
    /// successor once the followed set is empty.
    pub fn endless(src: S) -> Self {
        Self::with_end(src, false)
    }

    fn with_end(src: S, follow: bool) -> Self {
        SourceLoop {
            follow,
            src,
            batch: Vec::new(),
            queue: VecDeque::new(),
            max_seq: 0,
            drops: 0,
            done: false,
            scope: None,
        }
    }

    /// Hands on only the events of the pod `scope` waits for (`--pod`, `-n`, `--container`
    /// of `trace`, `record`, `agent`): the source still follows what it follows, this loop
    /// reads every event it gives (enriched, sequence gaps told as losses), and
    /// the scope drops the others' events before anyone sees them.
    pub fn scoped(mut self, scope: crate::lineage::LiveScope) -> Self {
        self.scope = Some(scope);
        self
    }

    /// The source, for its counters.
    pub fn source(&self) -> &S {
        &self.src
    }

    /// The source, mutably (to follow another process, to wait on a command).
    pub fn source_mut(&mut self) -> &mut S {
        &mut self.src
    }

    /// The source back.
    pub fn into_source(self) -> S {
        self.src
    }

    /// The enrichment stage over `batch[start..]`, just read: what only the source's host
    /// knows, asked while it still shows it ([`enrich`]).
    fn enrich(&mut self, start: usize) {
        enrich::enrich(&mut self.batch, start, self.src.host());
    }

    /// Moves the batch into the queue with the notices it implies (the gaps of the whole
    /// stream, before a scope leaves events out).
    fn enqueue_batch(&mut self) {
        if let Some(scope) = self.scope.as_mut() {
            for ev in &self.batch {
                if let Some(gap) = Self::gap(&mut self.max_seq, ev) {
                    self.queue.push_back(gap);
                }
            }
            scope.retain(&mut self.batch);
        }
        for ev in self.batch.drain(..) {
            if self.scope.is_none() {
                if let Some(gap) = Self::gap(&mut self.max_seq, &ev) {
                    self.queue.push_back(gap);
                }
            }
            self.queue.push_back(CaptureItem::Event(ev));
        }
        let drops = self.src.counters().drops;
        if drops > self.drops {
            self.drops = drops;
            self.queue
                .push_back(CaptureItem::Notice(Notice::Drops { total: drops }));
        }
    }

    /// The loss notice `ev` implies after the highest seq so far (raised to `ev`'s).
    fn gap(max_seq: &mut u64, ev: &Event) -> Option<CaptureItem> {
        let gap = (ev.seq > *max_seq + 1).then(|| {
            CaptureItem::Notice(Notice::Gap {
                missing: ev.seq - *max_seq - 1,
                before_seq: ev.seq,
            })
        });
        *max_seq = (*max_seq).max(ev.seq);
        gap
    }

    /// An item already read, without waiting.
    pub fn ready(&mut self) -> Option<CaptureItem> {
        self.queue.pop_front()
    }

    /// The next item; `None` once the loop ended (the target is gone, or after an error).
    pub async fn next(&mut self) -> Option<Result<CaptureItem, S::Error>> {
        loop {
            if let Some(item) = self.queue.pop_front() {
                return Some(Ok(item));
            }
            if self.done {
                return None;
            }
            if let Err(e) = self.src.next_batch(&mut self.batch).await {
                self.done = true;
                return Some(Err(e));
            }
            self.enrich(0);
            if self.follow && self.src.target_gone() {
                // Everything followed has exited: take what is left and end.
                let start = self.batch.len();
                self.src.drain_now(&mut self.batch);
                self.enrich(start);
                self.src.target_ended();
                self.done = true;
                self.enqueue_batch();
                self.queue
                    .push_back(CaptureItem::Notice(Notice::TargetGone));
                continue;
            }
            self.enqueue_batch();
        }
    }

    /// Stopping early (a signal, a deadline): what the source still holds.
    pub fn finish(&mut self) -> Vec<CaptureItem> {
        if !self.done {
            let start = self.batch.len();
            self.src.drain_now(&mut self.batch);
            self.enrich(start);
            self.enqueue_batch();
            self.done = true;
        }
        self.queue.drain(..).collect()
    }
}

/// What [`drive`] hands to its callback.
pub enum Step<'a> {
    /// Events read (drain them). Notices are not handed over: the drop count is in
    /// [`EventSource::counters`], and the end of the target ends the loop.
    Batch(&'a mut Vec<Event>),
    /// A drop notice: the total so far grew to this.
    Drops(u64),
    /// The tick passed ([`DriveOpts::tick`]).
    Tick,
}

/// How [`drive`] runs.
#[derive(Clone, Copy, Debug)]
pub struct DriveOpts {
    /// How often [`Step::Tick`] comes.
    pub tick: std::time::Duration,
    /// When to stop, if ever.
    pub deadline: Option<std::time::Instant>,
}

/// Why [`drive`] returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    /// Every followed process is gone.
    TargetGone,
    /// The deadline passed.
    Deadline,
    /// The stop future resolved (a signal).
    Stopped,
    /// The callback returned false.
    Callback,
}

/// The one loop every live reader runs: hands each batch of events, each drop notice and a
/// tick to `on` (which returns false to stop at once) until the loop ends (the target is
/// gone: see [`SourceLoop::new`]), the deadline passes or `stop` resolves. What the source
/// still holds is handed over before it returns, unless `on` stopped it.
///
/// The tick never starves the source: the tick's period restarts after `on` handled it, so
/// reading always gets a whole period uncontested (longer than the capture's poll interval),
/// however long the tick's work took; a batch already read waits in the loop's queue.
#[cfg(any(feature = "capture", feature = "tui", feature = "agent"))]
pub async fn drive<S, E>(
    lp: &mut SourceLoop<S>,
    opts: DriveOpts,
    stop: impl Future<Output = ()>,
    mut on: impl FnMut(Step<'_>, &mut S) -> Result<bool, E>,
) -> Result<Ended, E>
where
    S: EventSource,
    E: From<S::Error>,
{
    let mut tick = tokio::time::interval(opts.tick);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut stop = std::pin::pin!(stop);
    let mut batch = Vec::new();
    let ended = loop {
        tokio::select! {
            item = lp.next() => {
                let Some(item) = item else { break Ended::TargetGone };
                let mut item = Some(item?);
                let mut drops = None;
                while let Some(i) = item {
                    match i {
                        CaptureItem::Event(ev) => batch.push(ev),
                        CaptureItem::Notice(Notice::Drops { total }) => drops = Some(total),
                        CaptureItem::Notice(_) => {}
                    }
                    item = lp.ready();
                }
                if !on(Step::Batch(&mut batch), &mut lp.src)? {
                    return Ok(Ended::Callback);
                }
                if let Some(total) = drops {
                    if !on(Step::Drops(total), &mut lp.src)? {
                        return Ok(Ended::Callback);
                    }
                }
            }
            _ = tick.tick() => {
                if !on(Step::Tick, &mut lp.src)? {
                    return Ok(Ended::Callback);
                }
                tick.reset();
                if opts.deadline.is_some_and(|d| std::time::Instant::now() >= d) {
                    break Ended::Deadline;
                }
            }
            _ = &mut stop => break Ended::Stopped,
        }
    };
    for i in lp.finish() {
        if let CaptureItem::Event(ev) = i {
            batch.push(ev);
        }
    }
    on(Step::Batch(&mut batch), &mut lp.src)?;
    Ok(ended)
}

#[cfg(any(feature = "capture", feature = "tui", feature = "agent"))]
pub use recorded::Recorded;
#[cfg(any(feature = "capture", feature = "tui", feature = "agent"))]
pub use script::{Script, Scripted};

#[cfg(any(feature = "capture", feature = "tui", feature = "agent"))]
mod script {
    use super::{
        lineage_of, Counters, EventSource, Followed, Host, NoSuchProcess, SourceFacts, Unmirrored,
    };
    use crate::event::{Event, SnapshotProcess};
    use crate::tracefile::{CaptureMode, Header};
    use std::collections::VecDeque;
    use std::time::{Duration, Instant};

    /// How long an idle script waits before returning an empty batch, like the capture's
    /// poll interval.
    const POLL: Duration = Duration::from_millis(20);

    /// One step of a [`Script`].
    #[derive(Clone, Debug)]
    pub enum Scripted {
        /// One batch of events (numbered in order when added).
        Events(Vec<Event>),
        /// `n` events lost: their sequence numbers are skipped and the drop counter grows.
        Drop(u64),
        /// Nothing for this long (from when the step is reached).
        Wait(Duration),
        /// Nothing until `pid` is followed (the agent following a restarted daemon).
        UntilFollowed(u32),
        /// From now on the host's processes are these.
        Processes(Vec<SnapshotProcess>),
        /// Nothing until the flag is set: a test's cue (it did what must come first).
        Until(std::sync::Arc<std::sync::atomic::AtomicBool>),
    }

    /// A scripted live source: the real loop, agent and viewer run on it without root. It
    /// keeps the followed set from its events as the probes do, waits like the capture (an
    /// empty batch every poll interval) when its script is blocked or done, and has the host
    /// a test gives it ([`Script::host`]), or none.
    pub struct Script {
        steps: VecDeque<Scripted>,
        /// The last sequence number given to a step when it was added.
        seq: u64,
        /// Sequence numbers issued so far: those of the steps reached.
        issued: u64,
        drops: u64,
        follow: Option<u32>,
        followed: Followed<Unmirrored>,
        processes: Vec<SnapshotProcess>,
        wait_until: Option<Instant>,
        host: Option<Box<dyn Host + Send>>,
    }

    impl Script {
        /// A source following `pid` (and what it creates), or everything with `None`, on a
        /// host whose processes are `processes`.
        pub fn new(follow: Option<u32>, processes: Vec<SnapshotProcess>) -> Script {
            let mut followed = Followed::new(Unmirrored);
            if let Some(pid) = follow {
                followed.follow(pid).unwrap_or_else(|never| match never {});
            }
            Script {
                steps: VecDeque::new(),
                seq: 0,
                issued: 0,
                drops: 0,
                follow,
                followed,
                processes,
                wait_until: None,
                host: None,
            }
        }

        /// The host the loop's enrichment stage reads (bundle configs, OOM victims' cgroups).
        pub fn host(mut self, host: impl Host + Send + 'static) -> Script {
            self.host = Some(Box::new(host));
            self
        }

        /// Adds a step; events are numbered from the last sequence number.
        pub fn then(mut self, step: Scripted) -> Script {
            let step = match step {
                Scripted::Events(evs) => Scripted::Events(self.number(evs)),
                Scripted::Drop(n) => {
                    self.seq += n;
                    Scripted::Drop(n)
                }
                other => other,
            };
            self.steps.push_back(step);
            self
        }

        fn number(&mut self, mut evs: Vec<Event>) -> Vec<Event> {
            for ev in &mut evs {
                self.seq += 1;
                ev.seq = self.seq;
                ev.ts_ns = self.seq * 1_000_000;
            }
            evs
        }

        /// The next batch, or `None` when blocked (or done).
        fn step(&mut self, out: &mut Vec<Event>) -> Option<()> {
            loop {
                match self.steps.front_mut()? {
                    Scripted::Events(evs) => {
                        let evs = std::mem::take(evs);
                        self.steps.pop_front();
                        self.followed.observe(&evs);
                        self.issued = evs.iter().map(|e| e.seq).fold(self.issued, u64::max);
                        out.extend(evs);
                        return Some(());
                    }
                    Scripted::Drop(n) => {
                        self.drops += *n;
                        self.issued += *n;
                    }
                    Scripted::Processes(p) => self.processes = std::mem::take(p),
                    Scripted::Wait(d) => {
                        let until = *self.wait_until.get_or_insert(Instant::now() + *d);
                        if Instant::now() < until {
                            return None;
                        }
                        self.wait_until = None;
                    }
                    Scripted::UntilFollowed(pid) if !self.followed.contains(*pid) => return None,
                    Scripted::UntilFollowed(_) => {}
                    Scripted::Until(cue) if !cue.load(std::sync::atomic::Ordering::SeqCst) => {
                        return None
                    }
                    Scripted::Until(_) => {}
                }
                self.steps.pop_front();
            }
        }
    }

    impl EventSource for Script {
        type Error = NoSuchProcess;
        async fn next_batch(&mut self, out: &mut Vec<Event>) -> Result<(), NoSuchProcess> {
            if self.step(out).is_none() {
                tokio::time::sleep(POLL).await;
            }
            Ok(())
        }
        fn drain_now(&mut self, out: &mut Vec<Event>) {
            while self.step(out).is_some() {}
        }
        fn counters(&self) -> Counters {
            Counters {
                drops: self.drops,
                seq_issued: self.issued,
                decode_errors: 0,
            }
        }
        fn following(&self) -> bool {
            self.follow.is_some()
        }
        fn target_gone(&self) -> bool {
            self.following() && self.followed.gone(|| self.drops > 0)
        }
        fn followed_count(&self) -> usize {
            self.followed.count()
        }
        fn follow(&mut self, pid: u32) -> Result<(), NoSuchProcess> {
            if !self.processes.iter().any(|p| p.pid == pid) {
                return Err(NoSuchProcess(pid));
            }
            self.followed
                .follow(pid)
                .unwrap_or_else(|never| match never {});
            Ok(())
        }
        fn processes(&self) -> Vec<SnapshotProcess> {
            self.processes.clone()
        }
        fn header(&self) -> Header {
            let mode = self.follow.map_or(CaptureMode::All, CaptureMode::Pid);
            let mut h = Header::for_this_host(mode);
            h.snapshot = self.processes.iter().map(Into::into).collect();
            self.facts().add_to(&mut h);
            h
        }
        fn facts(&self) -> SourceFacts {
            SourceFacts {
                probes: "synthetic".into(),
                ..SourceFacts::default()
            }
        }
        fn host(&self) -> Option<&dyn Host> {
            self.host.as_deref().map(|h| h as &dyn Host)
        }
        fn seed(&self) -> Vec<SnapshotProcess> {
            match self.follow {
                Some(pid) => lineage_of(self.processes.clone(), pid, true),
                None => self.processes.clone(),
            }
        }
    }
}

#[cfg(any(feature = "capture", feature = "tui", feature = "agent"))]
mod recorded {
    use super::{Counters, EventSource, SourceFacts};
    use crate::event::{Event, SnapshotProcess};
    use crate::input::{Input, InputError};
    use crate::tracefile::{probe_set_name, CaptureMode, Header};

    /// Events handed over per batch, as a ring-buffer read would.
    const BATCH: usize = 256;

    /// A stored recording (trace file, strace log, a node's NATS stream up to now) as a live
    /// source: its events in batches as fast as they are read, its header's snapshot as the
    /// host, its stats record's counters. Its target is gone at its end, so a
    /// [`SourceLoop::new`](super::SourceLoop::new) over it ends there with the last item
    /// `TargetGone`. Reading is blocking: meant for files and stored streams, not a tail.
    pub struct Recorded {
        input: Input,
        ended: bool,
        /// Damage met while filling a batch: reported after that batch's events.
        error: Option<InputError>,
    }

    impl Recorded {
        /// The recording `input`, from its first event.
        pub fn new(input: Input) -> Recorded {
            Recorded {
                input,
                ended: false,
                error: None,
            }
        }

        /// Up to `max` events into `out`; damage ends the recording there (kept for the
        /// next call, so the events before it are handed over first).
        fn read(&mut self, out: &mut Vec<Event>, max: usize) {
            if self.ended {
                return;
            }
            for _ in 0..max {
                match self.input.next_event() {
                    Some(Ok(ev)) => out.push(ev),
                    Some(Err(e)) => {
                        self.error = Some(e);
                        self.ended = true;
                        break;
                    }
                    None => {
                        self.ended = true;
                        break;
                    }
                }
            }
        }
    }

    impl EventSource for Recorded {
        type Error = InputError;
        async fn next_batch(&mut self, out: &mut Vec<Event>) -> Result<(), InputError> {
            if let Some(e) = self.error.take() {
                return Err(e);
            }
            if self.ended {
                std::future::pending::<()>().await;
            }
            self.read(out, BATCH);
            Ok(())
        }
        fn drain_now(&mut self, out: &mut Vec<Event>) {
            self.read(out, usize::MAX);
        }
        fn counters(&self) -> Counters {
            self.input
                .last_stats()
                .map_or_else(Counters::default, |s| Counters {
                    drops: s.drops,
                    seq_issued: s.seq_issued,
                    decode_errors: s.decode_errors,
                })
        }
        fn following(&self) -> bool {
            true
        }
        fn target_gone(&self) -> bool {
            // Damage is reported first (the next batch is its error).
            self.ended && self.error.is_none()
        }
        fn followed_count(&self) -> usize {
            usize::from(!self.ended)
        }
        fn follow(&mut self, _pid: u32) -> Result<(), InputError> {
            // A recording holds what it holds: nothing more can be followed.
            Ok(())
        }
        fn processes(&self) -> Vec<SnapshotProcess> {
            self.input.snapshot()
        }
        fn header(&self) -> Header {
            self.input.header().cloned().unwrap_or_else(|| {
                let mut h = Header::for_this_host(CaptureMode::All);
                h.snapshot = self.processes().iter().map(Into::into).collect();
                h
            })
        }
        fn facts(&self) -> SourceFacts {
            SourceFacts {
                layouts: self
                    .input
                    .header()
                    .map(|h| h.layouts.clone())
                    .unwrap_or_default(),
                launched: None,
                probes: probe_set_name(!self.input.sched_probes()).into(),
                notes: Vec::new(),
            }
        }
        fn seed(&self) -> Vec<SnapshotProcess> {
            self.input.snapshot()
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use crate::source::{CaptureItem, Notice, SourceLoop};

        #[tokio::test]
        async fn a_recording_through_the_loop_gives_every_event_then_its_end() {
            let want: Vec<Event> = crate::demo::open()
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            let mut lp = SourceLoop::new(Recorded::new(crate::demo::open().unwrap()));
            let mut got = Vec::new();
            let mut last = None;
            while let Some(item) = lp.next().await {
                match item.unwrap() {
                    CaptureItem::Event(ev) => got.push(ev),
                    CaptureItem::Notice(n) => last = Some(n),
                }
            }
            assert!(want.len() > BATCH, "the demo spans several batches");
            assert_eq!(got, want);
            assert_eq!(last, Some(Notice::TargetGone));
        }

        #[tokio::test]
        async fn damage_comes_after_the_events_before_it() {
            // The demo cut inside its last frame (a recording killed mid-write): what the
            // reader gives before its error.
            let bytes = crate::demo::Demo::Pod.bytes();
            let read = |n: usize| {
                let cut: &'static [u8] = Box::leak(bytes[..n].into());
                let input = Input::from_trace_bytes("cut.trace", cut).unwrap();
                let mut evs = Vec::new();
                for ev in input {
                    match ev {
                        Ok(ev) => evs.push(ev),
                        Err(_) => return Some((cut, evs)),
                    }
                }
                None
            };
            let (cut, before) = (1..bytes.len() / 2)
                .find_map(|back| read(bytes.len() - back).filter(|(_, e)| !e.is_empty()))
                .expect("a cut with events before the damage");
            let input = Input::from_trace_bytes("cut.trace", cut).unwrap();
            let mut lp = SourceLoop::new(Recorded::new(input));
            let (mut got, mut failed) = (Vec::new(), false);
            while let Some(item) = lp.next().await {
                match item {
                    Ok(CaptureItem::Event(ev)) => got.push(ev),
                    Ok(CaptureItem::Notice(n)) => panic!("{n} before the damage was reported"),
                    Err(_) => failed = true,
                }
            }
            assert!(failed, "the damage was never reported");
            assert_eq!(got, before);
        }
    }
}
