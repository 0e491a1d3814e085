//! Trace files: a recorded capture that replays through the same code path as live tracing.
//!
//! The format is described byte by byte in `docs/trace-format.md`. In short: a 20-byte
//! preamble (magic, format version, header length and checksum), a header (tool version,
//! capture start, host, capture mode, the /proc snapshot of processes that existed at start,
//! the tracefs layouts used), then frames (a marker, a length, a number, checksums): batches of
//! [`Event`]s in a compact delta encoding, periodic [`StatsRecord`]s (drop counters and
//! sequence gaps) and a final end record.
//!
//! [`TraceWriter`] streams with bounded memory and hands a whole frame to the kernel at least
//! every [`FLUSH_INTERVAL`], so a recording killed with SIGKILL keeps every whole frame.
//! [`TraceReader`] streams frames back, never panics, checks every length before use and never
//! allocates more than the bytes actually present. A damaged frame costs that frame only: the
//! reader skips to the next frame marker whose header checksum holds and reports what it
//! skipped ([`TailReport`]); a frame read twice is delivered once. Damage it cannot skip
//! (the header, a version-1 file) yields one [`TraceFileError`] naming the byte offset and what
//! was expected, after every good frame.
//!
//! Privacy: environment variables are never recorded. argv is, and can hold secrets
//! (passwords and tokens passed on command lines); files are created with mode 0600.

mod codec;
mod packed;
pub use packed::{Iter as PackedIter, PackedEvents};
mod reader;
#[doc(hidden)]
mod writer;

pub use reader::{Checksums, Damage, Record, TailReport, TraceReader, MAX_KEPT_DAMAGE};
pub use writer::TraceWriter;

use crate::event::Event;
use crate::lineage::SnapshotProcess;
use std::time::Duration;

/// First 8 bytes of every trace file. The high byte rules out text files, the `\n` detects
/// line-ending conversion.
pub const MAGIC: [u8; 8] = *b"\x89TRACER\n";
/// The format version this tracer writes and the newest it reads (it reads every older one):
/// version 6 added the program an exec's executable is to its credentials, after the newest
/// one a kind of the kind table needs (version 5 added the last, `subreaper`).
pub const FORMAT_VERSION: u16 = 6;
const _: () = assert!(FORMAT_VERSION >= crate::event::Kind::NEWEST_FORMAT);
const _: () = assert!(FORMAT_VERSION >= codec::CRED_PROGRAM_SINCE);
/// The first version whose frames start with [`FRAME_SYNC`] and carry a number, the count of
/// events before them and a header checksum, so a reader skips a damaged frame and goes on.
pub const FRAMED_VERSION: u16 = 2;
/// Bytes before the header: magic, version, flags, header length, header CRC-32.
pub const PREAMBLE_LEN: usize = 20;
/// The marker every frame starts with (version 2): where a reader resynchronizes after damage.
pub const FRAME_SYNC: [u8; 4] = *b"\xf5FRM";
/// Bytes before each frame's payload (version 2): marker, length, type, frame number, events
/// before the frame, payload CRC-32, header CRC-32.
pub const FRAME_HEADER_LEN: usize = 29;
/// Bytes before each frame's payload in version 1: length, type, CRC-32.
pub const FRAME_HEADER_LEN_V1: usize = 9;
/// Largest header body accepted (a /proc snapshot of a very busy host fits easily).
pub const MAX_HEADER_LEN: u64 = 64 << 20;
/// Largest frame payload accepted.
pub const MAX_FRAME_LEN: u64 = 16 << 20;
/// The writer seals an event frame once it holds this many bytes of payload...
pub const FRAME_TARGET_BYTES: usize = 256 << 10;
/// ...or this many events...
pub const FRAME_MAX_EVENTS: usize = 8192;
/// ...or when this much time passed since the last flush.
pub const FLUSH_INTERVAL: Duration = Duration::from_millis(200);

/// Frame types. Types >= 0x80 are optional: readers skip the ones they do not know.
pub mod frame_type {
    /// A batch of events.
    pub const EVENTS: u8 = 1;
    /// Periodic counters ([`StatsRecord`](super::StatsRecord)).
    pub const STATS: u8 = 2;
    /// The final counters; nothing may follow.
    pub const END: u8 = 3;
}

/// How the capture chose its processes.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum CaptureMode {
    /// Not recorded.
    #[default]
    Unknown,
    /// `--pid PID`: that process and what it creates.
    Pid(u32),
    /// `--all`: the whole host.
    All,
    /// `-- CMD ARGS`: a command started by the tracer.
    Command(Vec<String>),
    /// Converted from another format (`format` is e.g. "strace"; `source` its file name).
    Import {
        /// The source format (`strace`).
        format: String,
        /// The source's file name.
        source: String,
    },
}

impl std::fmt::Display for CaptureMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CaptureMode::Unknown => f.write_str("unknown"),
            CaptureMode::Pid(p) => write!(f, "--pid {p}"),
            CaptureMode::All => f.write_str("--all"),
            CaptureMode::Command(argv) => write!(f, "-- {}", argv.join(" ")),
            CaptureMode::Import { format, source } => write!(f, "import of {format} {source}"),
        }
    }
}

/// A process that existed when the capture started, as /proc showed it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SnapshotEntry {
    /// Process id.
    pub pid: u32,
    /// Parent process id.
    pub ppid: u32,
    /// Task name.
    pub comm: String,
    /// Empty when unknown (kernel threads, or not readable).
    pub exe: String,
    /// Command line.
    pub argv: Vec<String>,
    /// Thread ids, the leader included.
    pub threads: Vec<u32>,
    /// Its pid namespace and pid there (`/proc/PID/ns/pid`, `NSpid:`), when read.
    pub ns: Option<crate::event::PidNs>,
    /// The command the tracer started (`record -- CMD`); its `ppid` is the tracer.
    pub launched: bool,
    /// Its cgroup in the reported hierarchy (`/proc/PID/cgroup`), when read.
    pub cgroup: Option<String>,
    /// Its real uid (`u32::MAX` when not read).
    pub uid: u32,
    /// Its credentials and executable, when read.
    pub cred: Option<crate::event::ExecCred>,
}

impl Default for SnapshotEntry {
    fn default() -> SnapshotEntry {
        SnapshotEntry::from(&SnapshotProcess::default())
    }
}

impl SnapshotEntry {
    /// As the engine's seed.
    pub fn to_snapshot_process(&self) -> SnapshotProcess {
        SnapshotProcess {
            pid: self.pid,
            ppid: self.ppid,
            comm: self.comm.clone(),
            exe: (!self.exe.is_empty()).then(|| self.exe.clone()),
            argv: self.argv.clone(),
            threads: self.threads.clone(),
            subreaper: false,
            ns: self.ns,
            launched: self.launched,
            cgroup: self.cgroup.clone(),
            uid: self.uid,
            cred: self.cred,
        }
    }
}

impl From<&SnapshotProcess> for SnapshotEntry {
    fn from(p: &SnapshotProcess) -> Self {
        SnapshotEntry {
            pid: p.pid,
            ppid: p.ppid,
            comm: p.comm.clone(),
            exe: p.exe.clone().unwrap_or_default(),
            argv: p.argv.clone(),
            threads: p.threads.clone(),
            ns: p.ns,
            launched: p.launched,
            cgroup: p.cgroup.clone(),
            uid: p.uid,
            cred: p.cred,
        }
    }
}

/// Everything a trace file says before its first event.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Header {
    /// The file's format version (the writer always writes [`FORMAT_VERSION`]).
    pub format_version: u16,
    /// Version of the tracer that wrote it.
    pub tool_version: String,
    /// Capture start, nanoseconds since the Unix epoch.
    pub start_wall_ns: u64,
    /// Capture start, CLOCK_BOOTTIME nanoseconds (the clock of [`Event::ts_ns`]).
    pub start_boot_ns: u64,
    /// The host's name.
    pub hostname: String,
    /// `uname -r` of the capturing host.
    pub kernel_release: String,
    /// How the capture chose its processes.
    pub mode: CaptureMode,
    /// Processes that existed at start, by pid.
    pub snapshot: Vec<SnapshotEntry>,
    /// tracefs layouts used: ("sched/sched_process_fork", format file text).
    pub layouts: Vec<(String, String)>,
    /// Free-form key/value pairs (ring size, notes, ...). Never environment variables.
    pub extra: Vec<(String, String)>,
}

/// The `probes` header entry for a probe set: `sched`, or `sched+syscalls` with the syscall
/// probes ([`CaptureBuilder::syscalls`](crate::capture::CaptureBuilder::syscalls)).
pub fn probe_set_name(syscalls: bool) -> &'static str {
    if syscalls {
        "sched+syscalls"
    } else {
        "sched"
    }
}

/// Which processes a recording's /proc snapshot holds (the header's `extra` key `snapshot`
/// says which, by [`SnapshotScope::name`]; [`Header::set_snapshot_scope`] writes it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SnapshotScope {
    /// What is followed (with its descendants and ancestors) and the container machinery
    /// ([`crate::names::is_runtime_machinery`]) with its ancestors: not the other tenants'
    /// command lines.
    #[default]
    Followed,
    /// Every process on the host (`--snapshot all`; what `--all` records).
    All,
}

impl SnapshotScope {
    /// `followed` or `all`, the header's `snapshot` value.
    pub fn name(self) -> &'static str {
        match self {
            SnapshotScope::Followed => "followed",
            SnapshotScope::All => "all",
        }
    }
}

impl Header {
    /// Says which processes [`Header::snapshot`] holds: the `extra` entry `snapshot`, as the
    /// recorder and the live view's `w` write it.
    pub fn set_snapshot_scope(&mut self, scope: SnapshotScope) {
        self.extra.retain(|(k, _)| k != "snapshot");
        self.extra.push(("snapshot".into(), scope.name().into()));
    }

    /// Says the recording holds one pod's events only (`record --pod`): the `extra` entries
    /// `pod` (the pod as asked for: `namespace/name`, `name`, `namespace/*`...) and, for one
    /// container of it, `container`. Its sequence gaps are the other processes' events.
    pub fn set_pod_scope(&mut self, pod: &str, container: Option<&str>) {
        self.extra.retain(|(k, _)| k != "pod" && k != "container");
        self.extra.push(("pod".into(), pod.into()));
        if let Some(c) = container {
            self.extra.push(("container".into(), c.into()));
        }
    }

    /// The pod (and container) a recording was scoped to ([`Header::set_pod_scope`]).
    pub fn pod_scope(&self) -> Option<(&str, Option<&str>)> {
        let get = |key: &str| {
            self.extra
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.as_str())
        };
        get("pod").map(|p| (p, get("container")))
    }

    /// What the recording's `ts_ns` mean: boot time, with this header's wall time at its start.
    pub fn clock(&self) -> crate::clock::Clock {
        crate::clock::Clock::boot(self.start_wall_ns, self.start_boot_ns)
    }

    /// A header for a capture starting now on this host: version, clocks, host name and kernel
    /// release filled in; no snapshot, no layouts.
    pub fn for_this_host(mode: CaptureMode) -> Header {
        let read = |p: &str| {
            std::fs::read_to_string(p)
                .map(|s| s.trim().to_string())
                .unwrap_or_default()
        };
        let start_wall_ns = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        Header {
            format_version: FORMAT_VERSION,
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
            start_wall_ns,
            start_boot_ns: boot_time_ns().unwrap_or(0),
            hostname: read("/proc/sys/kernel/hostname"),
            kernel_release: read("/proc/sys/kernel/osrelease"),
            mode,
            snapshot: Vec::new(),
            layouts: Vec::new(),
            extra: Vec::new(),
        }
    }

    /// Recorded with the "sched" probe set (the `probes` entry of [`Header::extra`]): no
    /// syscall exits in the stream (see [`LineRenderer::sched_probes`](crate::render::LineRenderer::sched_probes)).
    pub fn sched_probes(&self) -> bool {
        self.extra
            .iter()
            .any(|(k, v)| k == "probes" && v == probe_set_name(false))
    }

    /// The snapshot in the form [`crate::lineage::Engine::seed_snapshot`] takes.
    pub fn snapshot_processes(&self) -> Vec<SnapshotProcess> {
        self.snapshot
            .iter()
            .map(SnapshotEntry::to_snapshot_process)
            .collect()
    }
}

pub use crate::clock::boot_time_ns;

/// Drop counters and sequence gaps, written periodically and at the end.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct StatsRecord {
    /// Events written so far.
    pub events: u64,
    /// Highest event seq written so far.
    pub last_seq: u64,
    /// Sequence numbers missing so far (`last_seq - events`, see [`crate::stats::StreamStats`]).
    pub seq_gaps: u64,
    /// Events the probes could not put in the ring buffer (cumulative).
    pub drops: u64,
    /// Sequence numbers handed out by the probes (emitted or dropped); 0 when unknown.
    pub seq_issued: u64,
    /// Ring-buffer records that could not be decoded (cumulative).
    pub decode_errors: u64,
    /// CLOCK_BOOTTIME when the record was written; 0 when unknown.
    pub boot_ns: u64,
}

/// Everything that can go wrong reading or writing a trace file. Reading errors name the byte
/// offset where the problem starts and what was expected there.
#[derive(Debug, thiserror::Error)]
pub enum TraceFileError {
    /// Reading failed.
    #[error("byte {offset}: {error}")]
    Io {
        /// Where.
        offset: u64,
        /// The OS error.
        error: std::io::Error,
    },
    /// The file does not start with [`MAGIC`].
    #[error("byte 0: not a tracer trace file (expected the magic bytes 89 'TRACER' 0a, found {found:02x?})")]
    BadMagic {
        /// The first bytes found.
        found: Vec<u8>,
    },
    /// Written by a newer format version.
    #[error("byte {offset}: trace format version {found} is not supported (this tracer reads version 1 to {supported}); a newer tracer wrote it?")]
    UnknownVersion {
        /// Where the version is.
        offset: u64,
        /// The version found.
        found: u16,
        /// The newest version this tracer reads.
        supported: u16,
    },
    /// A length field larger than allowed (a corrupt or hostile file).
    #[error("byte {offset}: impossible {what} length {len} (expected at most {max})")]
    ImpossibleLength {
        /// Where the length is.
        offset: u64,
        /// What it is the length of.
        what: &'static str,
        /// The length found.
        len: u64,
        /// The largest allowed.
        max: u64,
    },
    /// The file ends early (a recording that was killed): every whole frame before is good.
    #[error("byte {offset}: file ends inside {what} (expected {need} bytes, {have} present)")]
    Truncated {
        /// Where the cut part starts.
        offset: u64,
        /// What was being read.
        what: &'static str,
        /// Bytes needed.
        need: u64,
        /// Bytes present.
        have: u64,
    },
    /// A checksum does not match: the bytes were damaged.
    #[error("byte {offset}: {what} checksum mismatch (stored {stored:08x}, computed {computed:08x}): corrupted data")]
    Checksum {
        /// Where the checksummed part starts.
        offset: u64,
        /// Which part.
        what: &'static str,
        /// The stored checksum.
        stored: u32,
        /// The checksum of the bytes read.
        computed: u32,
    },
    /// The bytes do not decode as expected.
    #[error("byte {offset}: garbage in {what}: expected {expected}")]
    Garbage {
        /// Where.
        offset: u64,
        /// What was being decoded.
        what: &'static str,
        /// What was expected.
        expected: &'static str,
    },
    #[error(
        "byte {offset}: unknown frame type {kind:#04x} (expected 1-3, or an optional type >= 0x80)"
    )]
    /// A mandatory frame type this tracer does not know.
    UnknownFrame {
        /// Where the frame starts.
        offset: u64,
        /// Its type byte.
        kind: u8,
    },
    /// Bytes after the end record.
    #[error("byte {offset}: data after the end record (expected end of file)")]
    AfterEnd {
        /// Where they start.
        offset: u64,
    },
    /// Writing: one event does not fit in a frame.
    #[error("one event encodes to {len} bytes, more than a frame may hold ({max})")]
    EventTooLarge {
        /// Its encoded size.
        len: usize,
        /// The largest frame.
        max: u64,
    },
    /// Writing failed.
    #[error("cannot write the trace file: {0}")]
    Write(std::io::Error),
}

impl TraceFileError {
    /// The byte offset a reading error is about.
    pub fn offset(&self) -> Option<u64> {
        match *self {
            TraceFileError::BadMagic { .. } => Some(0),
            TraceFileError::Io { offset, .. }
            | TraceFileError::UnknownVersion { offset, .. }
            | TraceFileError::ImpossibleLength { offset, .. }
            | TraceFileError::Truncated { offset, .. }
            | TraceFileError::Checksum { offset, .. }
            | TraceFileError::Garbage { offset, .. }
            | TraceFileError::UnknownFrame { offset, .. }
            | TraceFileError::AfterEnd { offset } => Some(offset),
            TraceFileError::EventTooLarge { .. } | TraceFileError::Write(_) => None,
        }
    }

    /// The file just stops (a recording that was killed): every whole frame before is good.
    pub fn is_truncation(&self) -> bool {
        matches!(self, TraceFileError::Truncated { .. })
    }
}

/// Writes `events` to an in-memory trace file (tests, fuzz seeds, conversions).
pub fn to_bytes<'a>(
    header: &Header,
    events: impl IntoIterator<Item = &'a Event>,
) -> Result<Vec<u8>, TraceFileError> {
    let mut w = TraceWriter::new(Vec::new(), header)?;
    for ev in events {
        w.write_event(ev)?;
    }
    w.finish()
}

#[cfg(test)]
pub(crate) mod tests;
