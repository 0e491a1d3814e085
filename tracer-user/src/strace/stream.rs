//! An strace log read as a stream ([`Stream`]): events handed out while the log is read, so
//! that neither the log's text nor its events are ever held whole (a log of a million
//! processes is some 5 million events: about 0.7 GB as [`Event`]s).
//!
//! The importer changes events it made earlier in a few cases; an event is handed out only
//! once no line to come, nor the end of the log, can change it:
//! * while the initial process has no pid (`bind_anon` rewrites every event), or none was
//!   seen: nothing is handed out;
//! * a clone whose child's `Fork` is out before its return (`fork_at`), or waiting for a
//!   candidate child (`candidate`, placed at the end of the log): nothing from that event on;
//! * a fork into a pid namespace the log implies (`order_member_pids` at the end): nothing
//!   from the first one on (such logs are held whole, as [`super::parse_reader`] does);
//! * the last [`STREAM_WINDOW`] events are always held: a task first taken as a process of its
//!   own and later, at a SIGCHLD, found to be a thread of its child's parent
//!   (`thread_of_parent`) has its events rewritten as far back as they are held, and the
//!   initial process is the one named when the first event was handed out.
//!
//! A log shorter than the window gives exactly [`super::parse_reader`]'s events.

use std::collections::{HashSet, VecDeque};
use std::io::BufRead;

use super::{Import, Parser, StraceError, MAX_LINE_BYTES};
use crate::event::{Event, EventKind};

/// Events a [`Stream`] holds back at least (the reach of a thread's late attribution to its
/// process); it hands them out in batches of as many.
pub const STREAM_WINDOW: usize = 1 << 16;

/// Pids below this are kept as bits in [`Released`] (the kernel's `PID_MAX_LIMIT`).
const PID_BITS: u32 = 1 << 22;

/// What a [`Stream`] handed out of the parser's events, as far as the parser still asks.
#[derive(Debug, Default)]
pub(super) struct Released {
    /// Events handed out (the parser's `out.events` holds those after them).
    pub count: usize,
    /// The first event handed out: its tgid, and whether it is an exec.
    pub first: Option<(u32, bool)>,
    /// Children the handed-out `Fork`s named (a candidate child never takes one of them):
    /// pids below [`PID_BITS`] a bit each, others in `others`.
    bits: Vec<u64>,
    others: HashSet<u32>,
    /// Index of the first `Fork` into a pid namespace (held from it on).
    pub ns_fork: Option<usize>,
}

impl Released {
    /// A handed-out `Fork` named `pid` as its child.
    pub fn named(&self, pid: u32) -> bool {
        if pid < PID_BITS {
            let (word, bit) = ((pid / 64) as usize, pid % 64);
            self.bits.get(word).is_some_and(|w| w & (1 << bit) != 0)
        } else {
            self.others.contains(&pid)
        }
    }

    fn note(&mut self, e: &Event) {
        self.count += 1;
        self.first.get_or_insert((e.tgid, is_exec(&e.kind)));
        let EventKind::Fork { child_tid, .. } = e.kind else {
            return;
        };
        if child_tid < PID_BITS {
            let (word, bit) = ((child_tid / 64) as usize, child_tid % 64);
            if word >= self.bits.len() {
                self.bits.resize(word + 1, 0);
            }
            self.bits[word] |= 1 << bit;
        } else {
            self.others.insert(child_tid);
        }
    }
}

/// An exec's entry or the exec itself (how `strace CMD` logs open).
pub(super) fn is_exec(kind: &EventKind) -> bool {
    matches!(kind, EventKind::ExecEnter { .. } | EventKind::Exec { .. })
}

impl Parser {
    /// Events made so far, handed out or held.
    pub(super) fn emitted(&self) -> usize {
        self.released.count + self.out.events.len()
    }

    /// How many of the held events no later line can change, `window` of them kept back.
    fn releasable(&self, window: usize) -> usize {
        if self.anon || self.initial.is_none() {
            return 0;
        }
        let mut limit = self.emitted().saturating_sub(window.max(1));
        if let Some(at) = self.released.ns_fork {
            limit = limit.min(at);
        }
        for c in self.clones.iter() {
            for at in [c.candidate.map(|(_, at)| at), c.fork_at, c.enter_at]
                .into_iter()
                .flatten()
            {
                limit = limit.min(at);
            }
        }
        limit.saturating_sub(self.released.count)
    }

    /// Hands the first `n` held events out to `into`.
    fn release(&mut self, n: usize, into: &mut VecDeque<Event>) {
        for e in self.out.events.drain(..n) {
            self.released.note(&e);
            into.push_back(e);
        }
    }

    /// What the import knows so far, without its events.
    fn report(&self) -> Import {
        let o = &self.out;
        Import {
            events: Vec::new(),
            lines: o.lines,
            skipped: o.skipped,
            unreadable: o.unreadable,
            first_unreadable: o.first_unreadable.clone(),
            initial_pid_unknown: self.anon,
            untranslated_senders: o.untranslated_senders,
            rejoined: o.rejoined,
            prompts: o.prompts,
            unfinished_execs: o.unfinished_execs,
            clock: o.clock,
            initial: self.initial_process(),
        }
    }
}

/// Reads the next line of `reader` into `buf` (cleared first): `Some(cut)` (the line was
/// longer than [`MAX_LINE_BYTES`] and kept cut), `None` at the end. Every `\n` ends a line; a
/// last line without one counts too.
pub(super) fn read_line<R: BufRead>(
    reader: &mut R,
    buf: &mut Vec<u8>,
) -> std::io::Result<Option<bool>> {
    buf.clear();
    let mut too_long = false;
    loop {
        let chunk = match reader.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            return Ok((!buf.is_empty() || too_long).then_some(too_long));
        }
        let (part, used, eol) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (&chunk[..i], i + 1, true),
            None => (chunk, chunk.len(), false),
        };
        let room = MAX_LINE_BYTES.saturating_sub(buf.len());
        if part.len() > room {
            buf.extend_from_slice(&part[..room]);
            too_long = true;
        } else {
            buf.extend_from_slice(part);
        }
        reader.consume(used);
        if eol {
            return Ok(Some(too_long));
        }
    }
}

/// An strace log imported as it is read: [`Stream::next_event`] hands out each event once no
/// later line can change it (see the module's text), holding at least the last `window`.
pub struct Stream<R> {
    reader: R,
    /// `None` once the log ended.
    parser: Option<Box<Parser>>,
    ready: VecDeque<Event>,
    window: usize,
    /// Held events at which to look again for some to hand out.
    next_check: usize,
    /// The whole import's counts, once the log ended.
    done: Option<Import>,
    buf: Vec<u8>,
}

impl<R: BufRead> Stream<R> {
    /// A stream holding back [`STREAM_WINDOW`] events.
    pub fn new(reader: R) -> Stream<R> {
        Stream::with_window(reader, STREAM_WINDOW)
    }

    /// A stream holding back `window` events (at least one).
    pub fn with_window(reader: R, window: usize) -> Stream<R> {
        let window = window.max(1);
        Stream {
            reader,
            parser: Some(Box::default()),
            ready: VecDeque::new(),
            window,
            next_check: window.saturating_mul(2),
            done: None,
            buf: Vec::with_capacity(512),
        }
    }

    /// Reads until the first events are ready or the log ended: then the initial process and
    /// the clock ([`Stream::report`]) are what the events are read with. A log in which no
    /// line was understood is [`StraceError::NotAnStraceLog`] here.
    pub fn prime(&mut self) -> Result<(), StraceError> {
        self.fill()
    }

    /// The next event, in log order; `None` at the end of the log.
    pub fn next_event(&mut self) -> Option<Result<Event, StraceError>> {
        if self.ready.is_empty() {
            if let Err(e) = self.fill() {
                return Some(Err(e));
            }
        }
        self.ready.pop_front().map(Ok)
    }

    /// Events read and not handed out yet (what the stream holds).
    pub fn held(&self) -> usize {
        self.ready.len() + self.parser.as_ref().map_or(0, |p| p.out.events.len())
    }

    /// The import's counts, clock and initial process without its events: final once
    /// [`Stream::next_event`] returned `None`, so far before.
    pub fn report(&self) -> Import {
        match (&self.done, &self.parser) {
            (Some(done), _) => done.clone(),
            (None, Some(p)) => p.report(),
            (None, None) => Import::default(),
        }
    }

    fn fill(&mut self) -> Result<(), StraceError> {
        while self.ready.is_empty() {
            let Some(p) = self.parser.as_mut() else {
                return Ok(());
            };
            match read_line(&mut self.reader, &mut self.buf) {
                Ok(Some(cut)) => {
                    p.feed_bytes(&self.buf, cut);
                    if p.out.events.len() >= self.next_check {
                        let n = p.releasable(self.window);
                        p.release(n, &mut self.ready);
                        self.next_check = p.out.events.len().saturating_add(self.window);
                    }
                }
                Ok(None) => {
                    let Some(p) = self.parser.take() else {
                        return Ok(());
                    };
                    let mut import = (*p).finish()?;
                    self.ready.extend(import.events.drain(..));
                    import.events = Vec::new();
                    self.done = Some(import);
                }
                Err(e) => {
                    self.parser = None;
                    return Err(e.into());
                }
            }
        }
        Ok(())
    }
}
