//! `tracer`: process-lineage tracing for container hosts.
//!
//! The crate answers "who started this process, and how did it end up under that parent?"
//! for the process trees that container runtimes build (containerd-shim → runc → `runc init`
//! stages → workload). It is a library first: the `tracer` binary and its TUI are thin
//! layers over the API below, and other tools (agents, test harnesses, notebooks) can embed
//! the capture, the lineage engine and the trace files directly.
//!
//! # The flow
//!
//! ```text
//!  eBPF probes ──► capture ──┐
//!  (feature `capture`)       │
//!  strace -f log ──► strace ─┼──► Event ──► lineage::Engine ──► tree / stories / JSON
//!  trace file ──► tracefile ─┘        └───► render (strace-like lines), stats, tracefile
//! ```
//!
//! 1. **Sources** produce [`Event`]s, one model for all of them: live capture
//!    (`CaptureBuilder` → `Capture`, module `capture`, feature `capture`), the `strace -f` importer
//!    ([`strace::parse_log`]) and recorded trace files ([`TraceReader`]). [`Input`] opens a
//!    file and tells a trace file from an strace log by its content. Live sources (the
//!    capture, or the synthetic `source::Script`) implement [`EventSource`] and are read
//!    through one loop, [`SourceLoop`] (and `source::drive`), which the CLI, the agent and
//!    the viewer share.
//! 2. **The engine**, [`Engine`], is a pure state machine: [`Engine::apply`] each event in
//!    sequence order, then query it — [`Engine::process`], [`Engine::children`],
//!    [`Process::lineage`] (birth and every adoption, with how and why), [`lineage::stories`]
//!    (container births), [`replay_until`] (the tree at a sequence number).
//! 3. **Views** render the engine: [`lineage::tree_text`], [`lineage::story_text`] and their
//!    JSON twins; [`render`] prints strace-like lines; [`TraceWriter`] records events.
//!
//! # Feature flags
//!
//! With none (`default-features = false`): the event model, the engine, the strace importer,
//! trace files, the views and the exports; no aya, tokio, clap, ratatui or NATS client, no
//! LLVM, no root (about 30 packages). Each feature adds one part; all are on by default:
//!
//! - `capture`: live capture with the eBPF probes (module `capture`). Building needs the
//!   nightly BPF toolchain (`cargo xtask setup`); running needs root (or `CAP_BPF` +
//!   `CAP_PERFMON`).
//! - `tui`: the terminal viewer (module `tui`), replay and, with `capture`, live.
//! - `nats`: reading a node's `nats://` stream (module `nats`; no capture, no aya).
//! - `agent`: `nats` + the agent's loop over any live source (module `agent`) and its
//!   metrics (module `metrics`); no aya: it runs on a `source::Script` without the probes.
//! - `cli`: the `tracer` command (with `tui`); `--features cli,nats` is the trainee build;
//!   `tracer agent` needs `agent` and `capture`. Only this edge uses `anyhow`;
//!   the library's errors, the viewer's included, are typed.
//!
//! # Examples
//!
//! Feed the engine hand-made events (a shell forks a child that runs `true`):
//!
//! ```
//! use tracer::event::{CapturedStr, Comm, Event, EventKind, Syscall};
//! use tracer::lineage::{tree_text, How, TreeOpts};
//! use tracer::Engine;
//!
//! let ev = |seq, tgid, kind| Event::bare(seq, 0, tgid, tgid, "sh", kind);
//! let mut engine = Engine::new();
//! engine.apply(&ev(1, 100, EventKind::Fork {
//!     child_tid: 101, child_tgid: 101, child_ppid: 100,
//!     syscall: Some(Syscall::Clone), flags: None, child_ns: None,
//! }));
//! engine.apply(&ev(2, 101, EventKind::Exec {
//!     old_tid: 101, filename: CapturedStr::new("/bin/true"), cred: None,
//! }));
//! engine.apply(&ev(3, 101, EventKind::TaskExit { exit_code: 0, group_dead: true }));
//!
//! let child = engine.process(101).unwrap();
//! assert_eq!(child.ppid, 100);
//! assert_eq!(child.born_how(), How::Clone);
//! assert!(child.exited);
//! println!("{}", tree_text(&engine, TreeOpts::default()));
//! ```
//!
//! Import an `strace -f` log and find who created whom:
//!
//! ```
//! let log = "\
//! 4085  clone(child_stack=NULL, flags=CLONE_CHILD_SETTID|SIGCHLD) = 4086
//! 4086  execve(\"/bin/true\", [\"true\"], 0x7ffd /* 20 vars */) = 0
//! 4086  exit_group(0)                     = ?
//! 4086  +++ exited with 0 +++
//! ";
//! let import = tracer::strace::parse_log(log).unwrap();
//! let mut engine = tracer::Engine::new();
//! for ev in &import.events {
//!     engine.apply(ev);
//! }
//! let child = engine.process(4086).unwrap();
//! assert_eq!(child.ppid, 4085);
//! assert_eq!(child.exe.as_deref(), Some("/bin/true"));
//! ```
//!
//! Write a trace file to memory and read it back:
//!
//! ```
//! use tracer::event::{Comm, Event, EventKind};
//! use tracer::tracefile::{CaptureMode, Header};
//! use tracer::{TraceReader, TraceWriter};
//!
//! let event = Event {
//!     seq: 1, ts_ns: 5, tgid: 7, tid: 7, ppid: 1, uid: 0, cgroup_id: 0,
//!     comm: Comm::new("sleep"),
//!     kind: EventKind::TaskExit { exit_code: 0, group_dead: true },
//! };
//! let mut writer = TraceWriter::new(Vec::new(), &Header::for_this_host(CaptureMode::All))?;
//! writer.write_event(&event)?;
//! let bytes: Vec<u8> = writer.finish()?;
//!
//! let mut reader = TraceReader::new(&bytes[..])?;
//! let events: Vec<Event> = reader.events().collect::<Result<_, _>>()?;
//! assert_eq!(events, [event]);
//! assert!(reader.tail().clean_end);
//! # Ok::<(), tracer::TraceFileError>(())
//! ```
//!
//! Live capture (feature `capture`, as root) is shown in the `capture` module's documentation; runnable
//! programs are in `tracer-user/examples/` (`synthetic`, `replay_stories`,
//! `follow_lineage`).
#![forbid(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

/// `eprintln!` that never panics: one line on stderr, dropped when stderr is a closed pipe
/// or a full disk (`tracer replay F 2>&1 | head -1`), where `eprintln!` would panic. What
/// the tool says on stderr goes through it; a failed command still exits non-zero.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {{
        use ::std::io::Write as _;
        let _ = ::std::writeln!(::std::io::stderr().lock(), $($arg)*);
    }};
}

/// [`say!`] without the newline (a status line redrawn in place).
#[macro_export]
macro_rules! say_inline {
    ($($arg:tt)*) => {{
        use ::std::io::Write as _;
        let mut err = ::std::io::stderr().lock();
        let _ = ::std::write!(err, $($arg)*).and_then(|()| err.flush());
    }};
}

pub mod clock;
pub mod decode;
pub mod demo;
pub mod escape;
pub mod event;
pub mod export;
#[doc(hidden)]
pub mod fuzz_check;
pub mod input;
pub mod lineage;
pub mod names;
pub mod outfile;
pub mod picture;
pub mod render;
pub mod source;
pub mod stats;
pub mod strace;
#[doc(hidden)]
pub mod synth;
pub mod tracefile;

#[cfg(feature = "agent")]
pub mod agent;
#[cfg(feature = "capture")]
pub mod capture;
#[cfg(feature = "nats")]
pub mod fleet;
#[cfg(feature = "agent")]
pub mod metrics;
#[cfg(feature = "nats")]
pub mod nats;
#[cfg(feature = "tui")]
pub mod tui;

pub use decode::DecodeError;
pub use event::{Comm, Event, EventKind, ExitStatus, PidNs, Syscall};
pub use input::{Input, InputError};
pub use lineage::{replay_until, Engine, LineageEntry, Process, Story};
pub use strace::StraceError;
pub use tracefile::{TraceFileError, TraceReader, TraceWriter};

#[cfg(feature = "capture")]
pub use capture::{Capture, CaptureBuilder, CaptureError, EventKindFilter, Target};
pub use source::{CaptureItem, EventSource, Notice, SourceLoop};
