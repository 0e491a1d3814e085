//! What flows between the source task and the app: [`Msg`] from the source (over a bounded
//! channel), [`Control`] back to a replay source.

use crate::event::Event;
use crate::lineage::Story;

/// Capacity of the source → app channel. A live source coalesces batches when it is full
/// instead of waiting, so ingestion never waits for drawing.
pub const CHANNEL_CAPACITY: usize = 64;

/// A message from the source to the app.
#[derive(Clone, Debug)]
pub enum Msg {
    /// Replay: the file's size and its complete container-birth stories (so `[`/`]` can jump
    /// to steps that lie ahead).
    Init {
        /// Events in the file.
        total: usize,
        /// Its stories.
        stories: Vec<Story>,
    },
    /// Replay: what the search finds in the whole recording (every process it ever holds),
    /// sent after [`Msg::Init`].
    Index(Vec<super::find::Findable>),
    /// Replay of a followed recording: it grew to this many events, its stories unchanged
    /// since the last [`Msg::Init`].
    Grown(usize),
    /// Live: processes that existed before tracing (from /proc), sent before any event.
    Seed(Vec<crate::lineage::SnapshotProcess>),
    /// Events in seq order, to apply.
    Events(Vec<Event>),
    /// Replay: to the first `n` events of the file, back or forward within the events the
    /// app already holds (from its nearest checkpoint at or before `n`).
    Goto(usize),
    /// Live: events lost to a full ring buffer so far.
    Drops(u64),
    /// Live: every followed process is gone (the view stays until `q`).
    TargetExited,
    /// Something the user should see on the status line.
    Note(String),
    /// The source failed; it sends nothing more.
    Error(String),
}

/// Playback commands for a replay source (a live source ignores them).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Control {
    /// Pause (`true`) or resume.
    Pause(bool),
    /// Step `n` events forward (n > 0) or back (n < 0); pauses.
    Step(i64),
    /// Move so that the last applied event is the last one with seq ≤ this.
    Seek(u64),
    /// Go to the first event.
    Start,
    /// Go to the last event.
    End,
    /// Set the speed multiplier.
    Speed(f64),
}
