//! Opening recorded input: a trace file or an strace log, told apart by content (never by
//! file name), both yielding the same [`Event`] stream.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use crate::event::Event;
use crate::lineage::{Engine, SnapshotProcess};
use crate::tracefile::{Header, StatsRecord, TailReport, TraceFileError, TraceReader, MAGIC};

/// What a file's first bytes say it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A tracer trace file (see [`crate::tracefile`]).
    TraceFile,
    /// An `strace -f` log (see [`crate::strace`]).
    StraceLog,
    /// JSON lines, one event each: what `tracer trace --format json` prints (see [`jsonl`]).
    JsonLines,
}

impl Kind {
    /// `trace file` / `strace log`.
    pub fn name(self) -> &'static str {
        match self {
            Kind::TraceFile => "trace file",
            Kind::StraceLog => "strace log",
            Kind::JsonLines => "JSON lines",
        }
    }
}

/// Why an input could not be opened or read.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The file could not be opened or read.
    #[error("cannot read {}: {error}", crate::escape::path(path))]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
    /// The content is neither a trace file nor an strace log.
    #[error("{}: {reason}", crate::escape::path(path))]
    NotRecognized {
        /// The file.
        path: PathBuf,
        /// What it looks like instead.
        reason: &'static str,
    },
    /// A trace file that is damaged or unsupported; the inner error names the byte offset.
    #[error("{}: {error}", crate::escape::path(path))]
    TraceFile {
        /// The file.
        path: PathBuf,
        /// The trace reader's error (see [`TraceFileError::offset`]).
        error: TraceFileError,
    },
    /// A NATS source that could not be read.
    #[cfg(feature = "nats")]
    #[error("{}: {error}", crate::escape::path(path))]
    Nats {
        /// The source.
        path: PathBuf,
        /// What failed.
        error: crate::nats::NatsError,
    },
    /// JSON lines with a line that is not an event (the error names the line).
    #[error("{}: {error}", crate::escape::path(path))]
    JsonLines {
        /// The file.
        path: PathBuf,
        /// What is wrong, and on which line.
        error: jsonl::JsonLineError,
    },
    /// An strace log in which nothing could be read.
    #[error("{}: strace log: {message}", crate::escape::path(path))]
    Strace {
        /// The file.
        path: PathBuf,
        /// The importer's error.
        message: String,
    },
}

impl InputError {
    /// The trace-file error inside, if that is what it is.
    pub fn trace_error(&self) -> Option<&TraceFileError> {
        match self {
            InputError::TraceFile { error, .. } => Some(error),
            _ => None,
        }
    }

    /// The recording was cut inside its last frame or line (a writer killed mid-write):
    /// every event before it is whole.
    pub fn is_truncation(&self) -> bool {
        match self {
            InputError::TraceFile { error, .. } => error.is_truncation(),
            InputError::JsonLines { error, .. } => error.is_truncation(),
            _ => false,
        }
    }
}

/// Bytes looked at to decide.
const SNIFF_BYTES: usize = 4096;

/// Decides from a file's first bytes. A file that starts like the magic but is cut short or
/// differs later is still a (broken) trace file, so its error is the trace reader's.
pub fn detect(prefix: &[u8]) -> Result<Kind, &'static str> {
    if prefix.is_empty() {
        return Err("empty file: neither a trace file nor an strace log");
    }
    let n = prefix.len().min(MAGIC.len());
    // The magic's first byte (0x89) never starts text; 4 bytes in, the name is certain.
    if prefix[..n] == MAGIC[..n] || (prefix.len() >= 4 && prefix[..4] == MAGIC[..4]) {
        return Ok(Kind::TraceFile);
    }
    if prefix.contains(&0) {
        return Err("binary data: neither a trace file nor an strace log");
    }
    if jsonl::looks_like(prefix) {
        return Ok(Kind::JsonLines);
    }
    match std::str::from_utf8(prefix) {
        Ok(_) => Ok(Kind::StraceLog),
        // A multi-byte character cut by the sniff window is fine.
        Err(e) if e.error_len().is_none() => Ok(Kind::StraceLog),
        Err(_) => Err("binary data (not UTF-8): neither a trace file nor an strace log"),
    }
}

/// Where recording bytes come from: a file, standard input, or bytes in memory (the demo).
pub type TraceSource = Box<dyn Read + Send>;

/// An strace log after its sniffed bytes.
type StraceSource = std::io::Chain<std::io::Cursor<Vec<u8>>, TraceSource>;

/// JSON lines after their sniffed bytes.
type JsonSource =
    jsonl::JsonLines<BufReader<std::io::Chain<std::io::Cursor<Vec<u8>>, TraceSource>>>;

enum Source {
    Trace(Box<TraceReader<TraceSource>>),
    /// An strace log, imported as it is read.
    Strace(Box<crate::strace::Stream<BufReader<StraceSource>>>),
    /// JSON lines, and their first line read ahead (it names the initial process).
    Json(Box<JsonSource>, Option<Result<Event, jsonl::JsonLineError>>),
    /// A node's NATS stream: its segments (trace files) read one after the other; the first
    /// one's header stands for all.
    #[cfg(feature = "nats")]
    Nats {
        first: Box<Header>,
        current: Box<TraceReader<TraceSource>>,
        feed: crate::nats::SharedFeed,
        /// Segments that ended inside a frame.
        cut: u64,
        /// What the segments before `current` skipped (damage, duplicated and forged frames).
        earlier: Box<TailReport>,
    },
}

/// An opened input: its header (trace files) and its events, streamed.
pub struct Input {
    /// The file opened.
    pub path: PathBuf,
    /// What it turned out to be.
    pub kind: Kind,
    source: Source,
    strace_report: Option<StraceReport>,
    /// An `strace -ff` set: its files, and whether they were merged by time (`ff.rs`).
    ff_set: Option<(usize, bool)>,
}

/// What the strace importer could not read (lines are never fatal unless none was understood).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StraceReport {
    /// Lines read.
    pub lines: usize,
    /// Lines that could not be understood.
    pub unreadable: usize,
    /// The first few unreadable lines: (line number, text).
    pub first_unreadable: Vec<(usize, String)>,
    /// Lines without a pid belong to the initial process, whose pid the log never showed
    /// (its events carry pid [`crate::strace::UNKNOWN_PID`]).
    pub initial_pid_unknown: bool,
    /// Signals whose sender is a pid of a container's namespace the log never tied to one of
    /// its own pids (their sender is 0, unknown).
    pub untranslated_senders: usize,
    /// Lines joined to the line before them (a wrapped or cut log).
    pub rejoined: usize,
    /// Shell prompt lines skipped.
    pub prompts: usize,
    /// Execs whose result the log does not hold.
    pub unfinished_execs: usize,
    /// What the log's time stamps mean.
    pub clock: crate::clock::Clock,
    /// The process the log shows but never creates (see [`crate::strace::Import::initial`]).
    pub initial: Option<SnapshotProcess>,
}

impl StraceReport {
    /// What an import's counts say (its events aside).
    fn of(import: crate::strace::Import) -> StraceReport {
        StraceReport {
            lines: import.lines,
            unreadable: import.unreadable,
            first_unreadable: import.first_unreadable,
            initial_pid_unknown: import.initial_pid_unknown,
            untranslated_senders: import.untranslated_senders,
            rejoined: import.rejoined,
            prompts: import.prompts,
            unfinished_execs: import.unfinished_execs,
            clock: import.clock,
            initial: import.initial,
        }
    }

    /// Its lines for [`Input::notes`].
    fn notes(&self) -> Vec<String> {
        let r = self;
        let mut notes = Vec::new();
        if r.unreadable > 0 {
            notes.push(format!(
                "{} of {} lines not understood (skipped)",
                r.unreadable, r.lines
            ));
            for (line, text) in &r.first_unreadable {
                notes.push(format!("  line {line}: {}", crate::escape::escape(text)));
            }
        }
        if r.initial_pid_unknown {
            notes.push(format!(
                "lines without a pid belong to the initial process, whose pid the log never shows: shown as pid {} (\"initial process\")",
                crate::strace::UNKNOWN_PID
            ));
        }
        if r.rejoined > 0 {
            notes.push(format!(
                "{} lines re-joined to the line before them (the log was wrapped, or a removed line had cut them)",
                r.rejoined
            ));
        }
        if r.prompts > 0 {
            notes.push(format!("{} shell prompt lines skipped", r.prompts));
        }
        if r.unfinished_execs > 0 {
            notes.push(format!(
                "{} execs whose result is not in the log (it ends in the call): each taken as what its process ran, marked \"exec result not in the recording\"",
                r.unfinished_execs
            ));
        }
        if r.untranslated_senders > 0 {
            notes.push(format!(
                "{} signals from a pid of the receiver's pid namespace that no clone in the log gave: sender unknown (0)",
                r.untranslated_senders
            ));
        }
        notes
    }
}

impl Input {
    /// Opens `path` (`-`: standard input) and detects what it is from its content. The input
    /// is opened once and read as a stream, so a pipe, `/dev/stdin` or a FIFO works as well
    /// as a file. `nats://HOST:PORT/NODE` (feature `agent`) reads that node's stream as it is
    /// now, from its start (docs/nats.md).
    pub fn open(path: &Path) -> Result<Input, InputError> {
        let io = |error| InputError::Io {
            path: path.to_path_buf(),
            error,
        };
        #[cfg(feature = "nats")]
        if let Some(url) = path
            .to_str()
            .filter(|s| crate::nats::NatsSource::is_nats(s))
        {
            return Input::open_nats(url, crate::nats::Follow::UntilNow);
        }
        let file: TraceSource = if path.as_os_str() == "-" {
            Box::new(std::io::stdin())
        } else {
            match File::open(path) {
                Ok(f) => Box::new(f),
                // `strace -ff -o PREFIX` wrote PREFIX.PID files, not PREFIX
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    let Some(files) = ff::files_of(path).map_err(io)? else {
                        return Err(io(e));
                    };
                    let merged = ff::Merged::new(files).map_err(io)?;
                    let set = (merged.files(), merged.by_time());
                    let mut input = Input::from_reader(path, Box::new(merged))?;
                    input.ff_set = Some(set);
                    return Ok(input);
                }
                Err(e) => return Err(io(e)),
            }
        };
        Input::from_reader(path, file)
    }

    /// Reads a recording from `src`, once, as a stream; `path` names it in messages.
    pub fn from_reader(path: &Path, mut src: TraceSource) -> Result<Input, InputError> {
        let io = |error| InputError::Io {
            path: path.to_path_buf(),
            error,
        };
        let mut prefix = Vec::with_capacity(SNIFF_BYTES);
        (&mut src)
            .take(SNIFF_BYTES as u64)
            .read_to_end(&mut prefix)
            .map_err(io)?;
        let kind = detect(&prefix).map_err(|reason| InputError::NotRecognized {
            path: path.to_path_buf(),
            reason,
        })?;
        let mut report = None;
        let source = match kind {
            Kind::TraceFile => {
                // The sniffed bytes, then the rest: nothing is read twice.
                let chained = std::io::Cursor::new(prefix).chain(src);
                let src: TraceSource = Box::new(BufReader::with_capacity(256 << 10, chained));
                let reader = TraceReader::new(src).map_err(|e| InputError::TraceFile {
                    path: path.to_path_buf(),
                    error: e,
                })?;
                Source::Trace(Box::new(reader))
            }
            Kind::StraceLog => {
                // Read as a stream: neither the log's text nor its events are held whole.
                let chained = std::io::Cursor::new(prefix).chain(src);
                let mut stream = Box::new(crate::strace::Stream::new(BufReader::with_capacity(
                    256 << 10,
                    chained,
                )));
                stream.prime().map_err(|e| InputError::Strace {
                    path: path.to_path_buf(),
                    message: e.to_string(),
                })?;
                report = Some(StraceReport::of(stream.report()));
                Source::Strace(stream)
            }
            Kind::JsonLines => {
                let chained = std::io::Cursor::new(prefix).chain(src);
                let mut lines = jsonl::JsonLines::new(BufReader::with_capacity(256 << 10, chained));
                let first = lines.next();
                Source::Json(Box::new(lines), first)
            }
        };
        Ok(Input {
            path: path.to_path_buf(),
            kind,
            source,
            strace_report: report,
            ff_set: None,
        })
    }

    /// A trace file held in memory (the embedded demo); `name` stands in for its path in
    /// messages.
    pub fn from_trace_bytes(name: &str, bytes: &'static [u8]) -> Result<Input, InputError> {
        let src: TraceSource = Box::new(bytes);
        let reader = TraceReader::new(src).map_err(|e| InputError::TraceFile {
            path: PathBuf::from(name),
            error: e,
        })?;
        Ok(Input {
            path: PathBuf::from(name),
            kind: Kind::TraceFile,
            source: Source::Trace(Box::new(reader)),
            strace_report: None,
            ff_set: None,
        })
    }

    /// A node's NATS stream from its start: up to the last message stored now, or following
    /// its tail (`follow`).
    #[cfg(feature = "nats")]
    pub fn open_nats(url: &str, follow: crate::nats::Follow) -> Result<Input, InputError> {
        let nats = |error| InputError::Nats {
            path: PathBuf::from(url),
            error,
        };
        let src = crate::nats::NatsSource::parse(url).map_err(nats)?;
        if src.is_all_nodes() {
            return Err(InputError::NotRecognized {
                path: PathBuf::from(url),
                reason: "every node at once: nats://HOST:PORT/* needs --pod NAME to pick a node",
            });
        }
        let feed = crate::nats::Feed::open(&src, follow).map_err(nats)?;
        Input::from_feed(url, feed)
    }

    /// Reads a NATS feed's segments as one recording; the first segment's header (its /proc
    /// snapshot) seeds the engine. `name` stands in for a path in messages.
    #[cfg(feature = "nats")]
    pub fn from_feed(name: &str, feed: crate::nats::Feed) -> Result<Input, InputError> {
        let path = PathBuf::from(name);
        let feed = std::sync::Arc::new(std::sync::Mutex::new(feed));
        let current = next_nats_segment(&path, &feed, true).ok_or(InputError::NotRecognized {
            path: path.clone(),
            reason: "no segment header in the stream (its first messages were dropped by the stream's limits, or it holds no agent's data)",
        })??;
        Ok(Input {
            kind: Kind::TraceFile,
            source: Source::Nats {
                first: Box::new(current.header().clone()),
                current: Box::new(current),
                feed,
                cut: 0,
                earlier: Box::default(),
            },
            path,
            strace_report: None,
            ff_set: None,
        })
    }

    /// For a NATS stream followed: calls `f` once every event stored when it was opened has
    /// been read (see [`crate::nats::Feed::on_caught_up`]). Other inputs never call it.
    #[cfg(feature = "nats")]
    pub fn on_caught_up(&mut self, f: Box<dyn FnOnce() + Send>) {
        if let Source::Nats { feed, .. } = &self.source {
            crate::nats::lock(feed).on_caught_up(f);
        }
    }

    /// For a NATS stream followed: calls `f` (on the reading thread; it must not block) when
    /// the server is lost and when reading resumes. Other inputs never call it.
    #[cfg(feature = "nats")]
    pub fn on_note(&mut self, f: crate::nats::NoteFn) {
        if let Source::Nats { feed, .. } = &self.source {
            crate::nats::lock(feed).on_note(f);
        }
    }

    /// A node's NATS stream (whose last segment is usually still being written).
    pub fn is_nats_stream(&self) -> bool {
        match &self.source {
            #[cfg(feature = "nats")]
            Source::Nats { .. } => true,
            _ => false,
        }
    }

    /// Segments of a NATS stream that ended inside a frame (their agent stopped between the
    /// pieces of a message); the frames before were read.
    pub fn cut_segments(&self) -> u64 {
        match &self.source {
            #[cfg(feature = "nats")]
            Source::Nats { cut, .. } => *cut,
            _ => 0,
        }
    }

    /// Messages of a NATS stream skipped because their segment's header was not there.
    pub fn skipped_messages(&self) -> u64 {
        match &self.source {
            #[cfg(feature = "nats")]
            Source::Nats { feed, .. } => crate::nats::lock(feed).skipped(),
            _ => 0,
        }
    }

    /// Segments of a NATS stream whose start is not a trace file's (skipped).
    pub fn bad_segments(&self) -> u64 {
        match &self.source {
            #[cfg(feature = "nats")]
            Source::Nats { feed, .. } => crate::nats::lock(feed).bad_segments(),
            _ => 0,
        }
    }

    /// Messages of a NATS stream that came after another segment had started (forged, or two
    /// agents publishing as one node); they were read with their own segment.
    pub fn interleaved_messages(&self) -> u64 {
        match &self.source {
            #[cfg(feature = "nats")]
            Source::Nats { feed, .. } => crate::nats::lock(feed).interleaved(),
            _ => 0,
        }
    }

    /// Messages of a NATS stream under a segment's id without its nonce (dropped: published
    /// by someone who could not read the stream).
    pub fn wrong_nonce_messages(&self) -> u64 {
        match &self.source {
            #[cfg(feature = "nats")]
            Source::Nats { feed, .. } => crate::nats::lock(feed).wrong_nonce(),
            _ => 0,
        }
    }

    /// Messages of a NATS stream under a segment's id and nonce without the next link of its
    /// proof chain, or with other bytes under an index already read (dropped: published by
    /// someone who reads the stream, not its agent).
    pub fn forged_messages(&self) -> u64 {
        match &self.source {
            #[cfg(feature = "nats")]
            Source::Nats { feed, .. } => crate::nats::lock(feed).forged(),
            _ => 0,
        }
    }

    /// How a NATS stream's node key was pinned (sign.rs); `None` for other inputs.
    #[cfg(feature = "nats")]
    pub fn key_pin(&self) -> Option<crate::nats::sign::Pin> {
        match &self.source {
            Source::Nats { feed, .. } => Some(crate::nats::lock(feed).pin().clone()),
            _ => None,
        }
    }

    /// Messages of a NATS stream read again with the same bytes (skipped).
    pub fn duplicate_messages(&self) -> u64 {
        match &self.source {
            #[cfg(feature = "nats")]
            Source::Nats { feed, .. } => crate::nats::lock(feed).duplicates(),
            _ => 0,
        }
    }

    /// For an strace log: how many lines the importer could not read, and the first of them.
    pub fn strace_report(&self) -> Option<&StraceReport> {
        self.strace_report.as_ref()
    }

    /// The trace file's header (`None` for an strace log).
    pub fn header(&self) -> Option<&Header> {
        match &self.source {
            Source::Trace(r) => Some(r.header()),
            #[cfg(feature = "nats")]
            Source::Nats { first, .. } => Some(first),
            Source::Strace(_) | Source::Json(..) => None,
        }
    }

    /// What the events' `ts_ns` mean, from the recording's own clock: a trace file's header
    /// (wall time at its start), an strace log's stamps, or none.
    pub fn clock(&self) -> crate::clock::Clock {
        if let Some(h) = self.header() {
            return h.clock();
        }
        self.strace_report
            .as_ref()
            .map(|r| r.clock)
            .unwrap_or_default()
    }

    /// Processes that existed at the start: a trace file's /proc snapshot; an strace log's
    /// initial process (the command strace started, or the first one it attached to), whose
    /// start is never in the log; JSON lines' first actor and its parent ([`jsonl::initial_processes`]).
    pub fn snapshot(&self) -> Vec<SnapshotProcess> {
        if let Some(h) = self.header() {
            return h.snapshot_processes();
        }
        if let Source::Json(_, Some(Ok(first))) = &self.source {
            return jsonl::initial_processes(first);
        }
        let initial = self.strace_report.as_ref().and_then(|r| r.initial.clone());
        initial.into_iter().collect()
    }

    /// Recorded without syscall probes (see [`Header::sched_probes`]); false for strace logs.
    pub fn sched_probes(&self) -> bool {
        self.header().is_some_and(Header::sched_probes)
    }

    /// A fresh engine seeded with the snapshot and told the recording's clock
    /// ([`Input::clock`]), ready for the events; for a recording scoped to a pod, one that
    /// takes its gaps for the events left out.
    pub fn seeded_engine(&self) -> Engine {
        let mut e = Engine::seeded(&self.snapshot());
        e.set_clock(self.clock());
        if self.header().and_then(Header::pod_scope).is_some() {
            e.set_scoped();
        }
        e
    }

    /// The latest drop counters read (trace files only).
    pub fn last_stats(&self) -> Option<&StatsRecord> {
        match &self.source {
            Source::Trace(r) => r.last_stats(),
            #[cfg(feature = "nats")]
            Source::Nats { current, .. } => current.last_stats(),
            Source::Strace(_) | Source::Json(..) => None,
        }
    }

    /// How a trace file ended, once the events are exhausted (`None` for an strace log).
    pub fn tail(&self) -> Option<&TailReport> {
        match &self.source {
            Source::Trace(r) => Some(r.tail()),
            #[cfg(feature = "nats")]
            Source::Nats { current, .. } => Some(current.tail()),
            Source::Strace(_) | Source::Json(..) => None,
        }
    }

    /// A NATS stream's lines for [`Input::notes`]: what its segments and messages held that
    /// the agent did not write, or that the stream no longer holds.
    fn stream_notes(&self) -> Vec<String> {
        let input = self;
        let mut notes = Vec::new();
        if input.cut_segments() > 0 {
            notes.push(format!(
                "{} segments end inside a frame (their agent stopped mid-message): their whole frames were used",
                input.cut_segments()
            ));
        }
        if input.skipped_messages() > 0 {
            notes.push(format!(
                "{} messages skipped: the start of their segment is no longer in the stream",
                input.skipped_messages()
            ));
        }
        if input.interleaved_messages() > 0 {
            notes.push(format!(
                "{} messages of a segment came after another segment had started on this node's subject: \
                 two agents publish as one node, or someone forged messages (publish rights on the subject are \
                 write access to its history)",
                input.interleaved_messages()
            ));
        }
        if input.wrong_nonce_messages() > 0 {
            notes.push(format!(
                "{} messages dropped: they name a segment of this node but not its nonce (published by someone other than its agent)",
                input.wrong_nonce_messages()
            ));
        }
        if input.forged_messages() > 0 {
            notes.push(format!(
                "{} messages forged: they carry a segment's id and nonce but not the next link of its agent's chain \
                 (published by someone who reads the stream; dropped unread)",
                input.forged_messages()
            ));
        }
        if input.duplicate_messages() > 0 {
            notes.push(format!(
                "{} messages skipped: copies of a message of their segment already read",
                input.duplicate_messages()
            ));
        }
        if input.bad_segments() > 0 {
            notes.push(format!(
                "{} segments skipped: their start is not a trace file (published by something other than an agent)",
                input.bad_segments()
            ));
        }
        notes
    }

    /// What the user must hear about an input once it is read, one line each: strace lines not
    /// understood, damaged frames skipped, duplicated frames, counts that disagree, an unusable
    /// tail, a missing end record. Text from the input is escaped.
    pub fn notes(&self, stopped_by_error: bool) -> Vec<String> {
        let input = self;
        let mut notes = Vec::new();
        match input.ff_set {
            Some((n, true)) => notes.push(format!(
                "{n} files of an strace -ff set read as one log, merged by their time stamps (line numbers count the merged lines)"
            )),
            Some((n, false)) => notes.push(format!(
                "{n} files of an strace -ff set read as one log, one after another in pid order: they have no -t/-tt/-ttt time stamps, so what happened between processes is not in order"
            )),
            None => {}
        }
        if let Some(r) = input.strace_report() {
            notes.extend(r.notes());
        }
        notes.extend(input.stream_notes());
        #[cfg(feature = "nats")]
        if let Source::Nats { earlier, feed, .. } = &input.source {
            notes.extend(
                earlier
                    .warnings()
                    .into_iter()
                    .map(|w| format!("earlier segments: {w}")),
            );
            notes.extend(signature_notes(&crate::nats::lock(feed)));
        }
        if let Some(tail) = input.tail() {
            notes.extend(tail.warnings());
            if tail.unusable_bytes > 0 && !stopped_by_error {
                notes.push(format!(
                    "{} bytes at the tail unusable (from byte {}): {}",
                    tail.unusable_bytes,
                    tail.unusable_from.unwrap_or(0),
                    tail.error.as_deref().unwrap_or("damaged")
                ));
            }
            if !tail.clean_end && !stopped_by_error {
                notes.push(if input.is_nats_stream() {
                    "no end record in the last segment: its agent is still publishing (or stopped without ending it); every whole frame was used"
                } else {
                    "no end record: the recording was interrupted; every whole frame was used"
                }.into());
            }
        }
        notes
    }

    /// The next event; after an error, `None`.
    pub fn next_event(&mut self) -> Option<Result<Event, InputError>> {
        match &mut self.source {
            Source::Trace(r) => r.events().next().map(|r| {
                r.map_err(|e| InputError::TraceFile {
                    path: self.path.clone(),
                    error: e,
                })
            }),
            Source::Strace(stream) => match stream.next_event() {
                Some(r) => Some(r.map_err(|e| InputError::Strace {
                    path: self.path.clone(),
                    message: e.to_string(),
                })),
                None => {
                    // The log ended: its counts are whole now (its initial process is the one
                    // the engine was seeded with: fixed once the first events were out).
                    self.strace_report = Some(StraceReport::of(stream.report()));
                    None
                }
            },
            Source::Json(lines, first) => first.take().or_else(|| lines.next()).map(|r| {
                r.map_err(|error| InputError::JsonLines {
                    path: self.path.clone(),
                    error,
                })
            }),
            #[cfg(feature = "nats")]
            Source::Nats {
                current,
                feed,
                cut,
                earlier,
                ..
            } => loop {
                match current.events().next() {
                    // An agent stopped between the pieces of a message: the segment's whole
                    // frames were read; the next segment goes on.
                    Some(Err(e)) if e.is_truncation() => *cut += 1,
                    Some(r) => {
                        return Some(r.map_err(|e| InputError::TraceFile {
                            path: self.path.clone(),
                            error: e,
                        }))
                    }
                    None => {}
                }
                match next_nats_segment(&self.path, feed, false)? {
                    Ok(next) => {
                        earlier.absorb_damage(current.tail());
                        **current = next;
                    }
                    Err(e) => return Some(Err(e)),
                }
            },
        }
    }
}

/// The next segment of a NATS feed as a trace reader; `None` at the feed's end.
#[cfg(feature = "nats")]
fn next_nats_segment(
    path: &Path,
    feed: &crate::nats::SharedFeed,
    stored_only: bool,
) -> Option<Result<TraceReader<TraceSource>, InputError>> {
    loop {
        let seg = match crate::nats::Feed::next_segment(feed, stored_only)? {
            Ok(seg) => seg,
            Err(error) => {
                return Some(Err(InputError::Nats {
                    path: path.to_path_buf(),
                    error,
                }))
            }
        };
        let src: TraceSource = Box::new(seg);
        match TraceReader::new(src) {
            Ok(reader) => return Some(Ok(reader)),
            // Not a trace file: published by something else (anyone with publish rights on
            // the subject). Counted and skipped; the node's own segments go on being read.
            Err(_) => crate::nats::lock(feed).bad_segment(),
        }
    }
}

/// A recording run through the engine, and what the user must hear about its input.
#[derive(Debug)]
pub struct Loaded {
    /// The engine after the recording (or up to the event asked for).
    pub engine: Engine,
    /// One line each: [`Input::notes`], a cut tail, an `at` past the end.
    pub notes: Vec<String>,
}

impl Loaded {
    /// A recording (trace file or strace log, told apart by content; `-` is stdin; a
    /// `nats://` node stream) run through the engine, seeded with its /proc snapshot; up to
    /// event `at` when given. A recording killed mid-write is read up to its last whole frame
    /// (a note says so); other damage is the error.
    pub fn read(path: &Path, at: Option<u64>) -> Result<Loaded, InputError> {
        Loaded::from_input(Input::open(path)?, at)
    }

    /// [`Loaded::read`] of a recording already opened.
    pub fn from_input(mut input: Input, at: Option<u64>) -> Result<Loaded, InputError> {
        let mut engine = input.seeded_engine();
        let mut notes = Vec::new();
        let mut stopped = false;
        while let Some(ev) = input.next_event() {
            let ev = match ev {
                Ok(ev) => ev,
                // A recording killed mid-write: every whole frame is used.
                Err(e) if e.is_truncation() => {
                    let t = match &e {
                        InputError::TraceFile { error, .. } => error.to_string(),
                        InputError::JsonLines { error, .. } => error.to_string(),
                        _ => e.to_string(),
                    };
                    notes.push(format!("{t}; using the events before it"));
                    stopped = true;
                    break;
                }
                Err(e) => return Err(e),
            };
            if at.is_some_and(|seq| ev.seq > seq) {
                stopped = true;
                break;
            }
            engine.apply(&ev);
        }
        if !stopped {
            engine.end_of_input();
            notes.extend(input.notes(false));
        } else if input.kind == Kind::StraceLog {
            // Stopped early by --at: the rest of the log is read (not applied) for its counts.
            while let Some(Ok(_)) = input.next_event() {}
        }
        if let Some(r) = input.strace_report().filter(|_| stopped) {
            // Stopped early by --at: the strace counts are known anyway.
            if r.unreadable > 0 {
                notes.extend(input.notes(true));
            }
        }
        if let Some(seq) = at {
            match engine.last_seq() {
                Some(last) if seq > last => notes.push(format!(
                    "--at {seq} is past the last event (seq {last}): this is the final state"
                )),
                None => notes.push(format!("--at {seq}: the recording has no events")),
                _ => {}
            }
        }
        Ok(Loaded { engine, notes })
    }
}

/// Which nodes of a NATS server hold a pod: each node's stream read through the engine.
#[cfg(feature = "nats")]
#[derive(Debug)]
pub struct PodSearch {
    /// Nodes with a stream on the server.
    pub nodes: usize,
    /// The nodes whose streams hold the pod, by name, with what reading them gave.
    pub found: Vec<(String, Loaded)>,
    /// Nodes whose streams could not be read (the others were still searched).
    pub unreadable: Vec<(String, InputError)>,
}

/// Searches every node of `src`'s server for pod `pod` (read up to event `at` when given).
/// Only listing the nodes can fail; a node that cannot be read is reported in the result.
#[cfg(feature = "nats")]
pub fn nodes_with_pod(
    src: &crate::nats::NatsSource,
    pod: &crate::lineage::PodQuery,
    at: Option<u64>,
) -> Result<PodSearch, InputError> {
    read_nodes(src, at, &|e| crate::lineage::pod::has_pod(e, pod))
}

/// Every node of `src`'s server that holds something the across-nodes story of `pod` may
/// tell ([`crate::lineage::across::holds`]: the pod, a pod of its family, of its namespace),
/// read whole.
#[cfg(feature = "nats")]
pub fn nodes_across(
    src: &crate::nats::NatsSource,
    pod: &crate::lineage::PodQuery,
) -> Result<PodSearch, InputError> {
    read_nodes(src, None, &|e| crate::lineage::across::holds(e, pod))
}

/// Reads each node of `src`'s server through the engine, one after the other (up to event
/// `at` when given), and keeps those `keep` wants; the others' engines are dropped as soon as
/// read, so at most the kept ones and one more are held. Only listing the nodes can fail.
#[cfg(feature = "nats")]
pub fn read_nodes(
    src: &crate::nats::NatsSource,
    at: Option<u64>,
    keep: &dyn Fn(&Engine) -> bool,
) -> Result<PodSearch, InputError> {
    let server = src.server.clone();
    let nodes = crate::nats::block_on(async move { crate::nats::nodes(&server).await }).map_err(
        |error| InputError::Nats {
            path: PathBuf::from(&src.server),
            error,
        },
    )?;
    let nodes = nodes.nodes;
    let mut search = PodSearch {
        nodes: nodes.len(),
        found: Vec::new(),
        unreadable: Vec::new(),
    };
    for node in nodes {
        let url = src.with_node(&node);
        match Loaded::read(Path::new(&url), at) {
            Ok(l) if keep(&l.engine) => search.found.push((node, l)),
            Ok(_) => {}
            Err(e) => search.unreadable.push((node, e)),
        }
    }
    Ok(search)
}

/// What a followed recording sends after the events it held when opened (see
/// [`follow_nats`]).
#[derive(Debug)]
pub enum TailItem {
    /// One more event.
    Event(Event),
    /// Every event stored when the recording was opened has been sent.
    CaughtUp,
    /// How the source fares (a lost server, and its return), for the status line.
    Note(String),
    /// The source failed; nothing more comes.
    Failed(InputError),
}

/// A node's NATS stream followed live: what it held when opened, and a channel carrying
/// every event published after.
#[cfg(feature = "nats")]
pub struct Followed {
    /// The first segment's /proc snapshot.
    pub seed: Vec<SnapshotProcess>,
    /// Recorded without syscall probes.
    pub sched_probes: bool,
    /// The stream's clock (its first segment's header).
    pub clock: crate::clock::Clock,
    /// The events stored when it was opened.
    pub history: crate::tracefile::PackedEvents,
    /// Everything after, as it is published; closed when the stream ends.
    pub tail: tokio::sync::mpsc::Receiver<TailItem>,
}

/// Events queued between the following thread and its reader.
#[cfg(feature = "nats")]
const TAIL_EVENTS: usize = 4096;

/// Opens `url` (`nats://HOST:PORT/NODE`) following its tail: reads what is stored now, then
/// leaves a thread reading the rest into [`Followed::tail`]; the thread ends with the first
/// event published after the receiver was dropped. Waits for the history, so it is called
/// outside an async runtime.
#[cfg(feature = "nats")]
pub fn follow_nats(url: &str) -> Result<Followed, InputError> {
    let mut input = Input::open_nats(url, crate::nats::Follow::Forever)?;
    let (tx, mut rx) = tokio::sync::mpsc::channel(TAIL_EVENTS);
    let hook = tx.clone();
    input.on_caught_up(Box::new(move || {
        let _ = hook.blocking_send(TailItem::CaughtUp);
    }));
    let notes = tx.clone();
    // A note that finds the queue full is dropped: events matter more.
    input.on_note(Box::new(move |n| {
        let _ = notes.try_send(TailItem::Note(n));
    }));
    let (seed, sched_probes, clock) = (input.snapshot(), input.sched_probes(), input.clock());
    let thread = std::thread::Builder::new()
        .name("nats-follow".into())
        .spawn(move || {
            while let Some(r) = input.next_event() {
                let failed = r.is_err();
                let item = r.map_or_else(TailItem::Failed, TailItem::Event);
                if tx.blocking_send(item).is_err() || failed {
                    return;
                }
            }
        });
    thread.map_err(|error| InputError::Io {
        path: PathBuf::from(url),
        error,
    })?;
    let mut history = crate::tracefile::PackedEvents::new();
    loop {
        match rx.blocking_recv() {
            Some(TailItem::Event(ev)) => history.push(&ev),
            Some(TailItem::Failed(e)) => return Err(e),
            Some(TailItem::Note(_)) => {}
            Some(TailItem::CaughtUp) | None => break,
        }
    }
    Ok(Followed {
        seed,
        sched_probes,
        clock,
        history,
        tail: rx,
    })
}

impl Iterator for Input {
    type Item = Result<Event, InputError>;
    fn next(&mut self) -> Option<Self::Item> {
        self.next_event()
    }
}

/// What a NATS feed's signatures said: segments or heartbeats forged under another key (or
/// unsigned where the node signs), and then the key taken on first use (sign.rs).
#[cfg(feature = "nats")]
fn signature_notes(feed: &crate::nats::Feed) -> Vec<String> {
    let mut notes = Vec::new();
    let pin = feed.pin();
    if feed.forged_signed() > 0 {
        notes.push(format!(
            "{} segments or heartbeats forged: not signed by node {}'s key (published by someone else on its subject; not read)",
            feed.forged_signed(),
            crate::escape::escape(&pin.node)
        ));
    }
    // Said where it matters: beside a forgery (which key won), and in `tracer nodes`
    // (`Input::key_pin`), not on every read of a node that signs as it always did.
    if let (true, true, Some(k)) = (feed.forged_signed() > 0, pin.first_use, &pin.key) {
        notes.push(format!(
            "node {}'s key taken on first use: {} (give --trust-keys a file naming it to pin it)",
            crate::escape::escape(&pin.node),
            crate::escape::escape(k)
        ));
    }
    notes
}

/// `strace -ff` sets read as one log.
pub mod ff;
pub mod jsonl;

#[cfg(all(test, feature = "nats"))]
mod nats_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_by_content() {
        assert_eq!(detect(&MAGIC), Ok(Kind::TraceFile));
        assert_eq!(detect(&MAGIC[..3]), Ok(Kind::TraceFile));
        assert_eq!(detect(b"\x89TRAXXXX"), Ok(Kind::TraceFile));
        assert_eq!(
            detect(b"4085  clone(child_stack=NULL, flags=CLONE_PARENT|SIGCHLD) = 4086\n"),
            Ok(Kind::StraceLog)
        );
        assert_eq!(detect("execve(\"/bin/é".as_bytes()), Ok(Kind::StraceLog));
        assert_eq!(detect(&"é".as_bytes()[..1]), Ok(Kind::StraceLog));
        assert!(detect(b"").is_err());
        assert!(detect(b"\x7fELF\x02\x01\x01\x00").is_err());
        assert!(detect(b"\xff\xfe\xfd text").is_err());
    }

    #[test]
    fn opens_a_trace_file_whatever_its_name() {
        let dir = std::env::temp_dir().join(format!("input-detect-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("looks-like.strace.log");
        let evs = crate::synth::sample_events();
        let bytes =
            crate::tracefile::to_bytes(&crate::tracefile::tests::sample_header(), &evs).unwrap();
        std::fs::write(&path, &bytes).unwrap();
        let mut input = Input::open(&path).unwrap();
        assert_eq!(input.kind, Kind::TraceFile);
        assert_eq!(input.snapshot().len(), 2);
        let got: Vec<Event> = input.by_ref().collect::<Result<_, _>>().unwrap();
        assert_eq!(got, evs);
        assert!(input.tail().unwrap().clean_end);

        // Broken magic: the trace reader's error, with the offset.
        let mut bad = bytes.clone();
        bad[5] = b'x';
        std::fs::write(&path, &bad).unwrap();
        let err = Input::open(&path).err().unwrap();
        assert!(
            err.to_string().contains("byte 0: not a tracer trace file"),
            "{err}"
        );

        // Text goes to the strace importer.
        std::fs::write(
            &path,
            "1 execve(\"/bin/true\", [\"true\"], 0x0 /* 0 vars */) = 0\n",
        )
        .unwrap();
        match Input::open(&path) {
            Ok(i) => assert_eq!(i.kind, Kind::StraceLog),
            Err(e) => assert!(matches!(e, InputError::Strace { .. }), "{e}"),
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
