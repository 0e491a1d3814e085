//! strace log import: `strace -f` output to [`crate::Event`]s.
//!
//! [`parse_log`] (whole text) and [`parse_reader`] (any `BufRead`, line by line) turn the output
//! of `strace -f` into the same event model the eBPF probes produce, so the lineage engine can
//! replay it. [`Parser`] is the underlying line-at-a-time state machine.
//!
//! # Accepted input
//! * pid prefixes: `[pid  123] ` (strace writing to stderr), the `123   ` column (`-o FILE -f`),
//!   `123<comm>` (`-Y`), or none.
//! * timestamps: `-t`, `-tt` (time of day; ts_ns = ns since midnight, a day is added when the
//!   clock goes back by more than 12 h), `-ttt` (ns since the epoch), `-r` (relative; summed).
//!   Without timestamps `ts_ns` is 0; lines without one (notices) keep the previous value.
//! * `name(args) = ret`, `name(args <unfinished ...>` + `<... name resumed>rest) = ret` (joined
//!   by pid), `<pid changed to N ...>`, `+++ exited with N +++`, `+++ killed by SIG [(core
//!   dumped)] +++`, `+++ superseded by execve [in pid N] +++`, `--- SIG {siginfo} ---` and
//!   `--- stopped by SIG ---` (see Signals), `strace: Process N attached [with M threads]` —
//!   also when spliced into the middle of another line (strace writes it to stderr, so with
//!   `2>&1` it can split a syscall line in two; the halves are joined again), an optional `-T`
//!   duration `<0.000012>` at the end.
//! * clone/clone3/fork/vfork/execve/execveat/exit/exit_group/prctl and signal lines become
//!   events; any other syscall line is understood and skipped. Lines that are none of the above
//!   are counted as unreadable (the first [`MAX_KEPT_UNREADABLE`] kept) and never stop the
//!   import; a log in which no line at all is understood is [`StraceError::NotAnStraceLog`].
//!
//! # Which task a line belongs to
//! * A line without a pid belongs to the only live task when exactly one is known (strace drops
//!   the prefix whenever a single task is traced), else to the initial process. The initial
//!   process is the first `Process N attached` (`strace -p`) or the first pid seen that is not a
//!   child. When `strace CMD` starts the initial process, strace never prints its pid: its lines
//!   get the placeholder [`UNKNOWN_PID`] (0) until the first prefixed line that can only be it
//!   (a new pid that is not the child of an in-flight clone — or whose first line resumes a
//!   call, which a new child cannot do); then every event so far is rewritten to the real pid.
//!   If it never shows, 0 stays: [`Import::initial_pid_unknown`] says so, and the text tree
//!   and the commands' warnings call it "the initial process", not a pid.
//! * Thread ids map to process ids through the CLONE_THREAD clones seen. `Process N attached
//!   with M threads` (`strace -p`) announces only N: the next M-1 unknown pids that appear
//!   without a notice or a matching clone are taken as N's threads, tentatively: one the log
//!   later shows to lead a process of its own is taken back (`threads.rs`).
//!
//! Logs as people find them — pasted, wrapped, excerpts, `-ff` sets, strace before 5.3 — are
//! read by the rules of docs/strace-import.md (`text.rs`, `flags.rs`, `threads.rs`).
//! * A pid seen again after its `+++ exited` line is a new task (pid reuse).
//! * A `Fork`'s `child_ppid` is the parent copy_process gives the child: the caller's process,
//!   or with CLONE_PARENT or CLONE_THREAD the caller's parent when the log created the caller
//!   and that parent is still alive (else 0, unknown: strace does not show reparenting).
//! * Every event has `ppid` 0 (unknown), `uid` `u32::MAX`, `cgroup_id` 0 and an empty `comm`
//!   (also with `-Y`, whose `<comm>` is accepted and ignored); `seq` counts from 1 in emission
//!   order, which is log order.
//!
//! # Children and pid namespaces
//! A clone's return value is the child's pid in the *caller's* pid namespace (so is clone3's
//! `=> {parent_tid=[N]}`, which is never used), while strace prints pids of its own namespace
//! in `[pid N]`, the `N ` column and `Process N attached` (see `runc-stderr.log`: the container
//! init's clone3 returns 2, 3, ... for tids 15287, 15288, ...). The return value N is *foreign*
//! (not a pid of strace's namespace) when the log says so:
//! * the caller's process is known to be in a nested pid namespace: it or an ancestor was
//!   created with `CLONE_NEWPID`, or an earlier clone of it was foreign by the next rule;
//! * N < 300 while strace has already printed a pid above 300 (after a namespace hands out a
//!   pid above `RESERVED_PIDS` = 300 it never goes below 300 again; only `set_tid` or a write
//!   to `ns_last_pid` could, so a clone3 with `set_tid` is exempt) — this marks the caller's
//!   process as nested;
//! * N is a live task already (this clone only).
//!
//! The child's identity is taken from, in this order:
//! 1. a `Process N attached` notice — strace prints it after the clone call starts: before the
//!    resumed line, spliced into the call line, or right after the returning line. It goes to
//!    the clone that returned N, else to a waiting clone (below);
//! 2. in a log without notices, the first line of a pid not seen before, matched the same way
//!    (a first line that resumes a call is a task that existed before tracing) — except when
//!    the waiting clone returned a pid of strace's namespace not seen yet: that return value,
//!    if it shows up later in the log, names the child; the first unseen pid after the clone is
//!    taken only if it never does (at the end of the log, its `Fork` then placed before its
//!    first event);
//! 3. the return value N when it is not foreign: in an `-o FILE` log (pid column, no notice
//!    seen — strace writes notices to stderr, never into the file) at once when the call
//!    returns; otherwise when neither came before the caller's next line (or its exit, or the
//!    end of the log).
//!
//! A *waiting clone* is the oldest clone still inside the call or, when there is none, the
//! oldest returned clone whose child could not be named (its return value was foreign) — but
//! only when all clones of that kind were made by one process: a new pid is never guessed to be
//! the child of one caller rather than another (it stays without a creator; a later clone that
//! returns exactly that pid still names it). A foreign return gives the caller's `SyscallExit`
//! at once (`-o`) or at its next line, and the child's `Fork` when a new pid matches, if ever;
//! such clones are forgotten when they made threads and their process exits, or (the older
//! half) beyond [`MAX_UNSEEN`]. Nested namespaces deeper than the fresh-namespace or `CLONE_NEWPID` cases
//! (e.g. a long-lived namespace that already handed out pids above 300, entered by `setns` or
//! `unshare`, which are not events) are not detected: there the return value can still name
//! the child by its namespace pid.
//!
//! `Fork` is emitted as soon as the identity is known — before the child's own events, unless
//! the child spoke while no single caller could be named — and the caller's `SyscallExit` once
//! both the return and the identity are known (so it follows `Fork`, as with the probes; after
//! a foreign return it comes first). A failed clone gives `CloneEnter` + `SyscallExit{-errno}`; a
//! clone cut by a restart (`= ? ERESTARTNOINTR`) `SyscallExit{-513}`; `= ?` (the caller died)
//! no exit. prctl options without a name in [`crate::names`] are skipped.
//!
//! # Signals
//! strace prints a `--- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED, si_pid=7, ...} ---` line
//! when a traced task stops to receive a signal (a signal-delivery stop; the sender's own call
//! is not shown). Each such line is one [`EventKind::Signal`] in the receiver's context: its
//! tgid/tid, `target`/`target_tid` the receiver, `result` delivered, `group` unless `si_code`
//! is `SI_TKILL` (tgkill), `sender_tid` 0. `si_code` is read by name ([`crate::names::si_code()`],
//! the fault codes of SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP included), as a number
//! (`-X raw`, or a code strace has no name for), or `-X verbose`'s `0x1 /* CLD_EXITED */`.
//! `--- stopped by SIGSTOP ---` is a group stop, no signal generated: a notice, no event. A
//! signal line whose siginfo does not read (no `si_code`, an unknown code name, `si_signo`
//! naming another signal, a signal number outside 1..=128, a `si_pid` no `pid_t` can be) is
//! unreadable, counted like any other.
//!
//! `sender` is `si_pid` as the log names pids. The kernel writes `si_pid` in the receiver's pid
//! namespace (do_notify_parent() the child's pid in the parent's namespace; kill and tgkill the
//! sender's own, which is the receiver's, a task naming only tasks of its namespace and below)
//! and 0 when the sender is outside it. So:
//! * `/* N in strace's PID NS */` after it (`--decode-pids=pidns`): N, strace's own translation;
//! * no `si_pid` (faults, `SI_KERNEL`, timers), 0 or a negative one: 0 (unknown);
//! * a receiver in strace's namespace as far as the log tells: `si_pid` itself;
//! * a receiver in a namespace `pidns.rs` inferred: the process the log named as the child of a
//!   clone that returned `si_pid` in that namespace, the namespace's first process for 1
//!   (kept after that process's exit, since its parent's SIGCHLD comes after strace printed the
//!   exit; replaced by a later clone returning the same pid). When no clone in the log gave that
//!   pid (the process was made before tracing, or by a task strace did not follow), or the
//!   receiver is known to be nested in a namespace the log does not tie pids of: 0, counted in
//!   [`Import::untranslated_senders`] — never a bare guess: a SIGCHLD's child is taken from
//!   the exit line just before it only where the kernel's order allows (`senders.rs`), and
//!   marked [`SignalInfo::inferred`](crate::event::SignalInfo::inferred).
//!
//! A SIGCHLD received by a tid the log never created (an `-o FILE -p` log of a Go parent: no
//! attach notices, its threads unannounced) is its process's: the tid is taken as a thread of
//! the child's parent, when the log names it and it lives (marked inferred, `senders.rs`).
//!
//! # Exits
//! strace prints `+++ exited with N +++` for every traced task, threads included (checked with
//! strace 6.1). A thread's gives `TaskExit{group_dead: false}`, a thread-group leader's (which the
//! kernel reports last) `group_dead: true`; no exits are synthesized. After a non-leader exec
//! (`+++ superseded by execve in pid T +++`) the leader's `<... execve resumed> = 0` gives
//! `Exec{old_tid: T}` in the leader's pid; the other threads are dropped silently, as the kernel
//! does.

mod args;
mod clones;
mod flags;
mod line;
mod ours;
mod pidns;
mod senders;
mod stream;
#[cfg(test)]
mod tests;
mod text;
mod threads;

use std::collections::{HashMap, HashSet, VecDeque};
use std::io::BufRead;

use crate::event::{CapturedStr, CloneFlags, Comm, Event, EventKind, Syscall};
use crate::lineage::NewParent;
use line::{Body, End, Line, Stamp};
use tracer_common::clone_flags as cf;

pub use args::unescape;
pub use stream::{Stream, STREAM_WINDOW};

pub use crate::event::UNKNOWN_PID;
/// How many unreadable lines [`Import::first_unreadable`] keeps.
pub const MAX_KEPT_UNREADABLE: usize = 5;
/// Longer lines are cut to this many bytes (by [`parse_reader`]) and kept only as unreadable.
pub const MAX_LINE_BYTES: usize = 1 << 20;
/// A line cut by a spliced attach notice is joined with the next one only up to this size...
const MAX_CARRY_BYTES: usize = 64 << 10;
/// ...and this many notices in a row.
const MAX_CARRY_CUTS: u32 = 16;
/// At most this many characters of an unreadable line are kept.
const KEPT_CHARS: usize = 200;
/// Once a pid namespace has handed out a pid above this, new pids in it are never below it
/// (`RESERVED_PIDS` in kernel/pid.c: allocation wraps around to 300, not to 1).
const RESERVED_PIDS: u32 = 300;
/// At most this many returned clones wait for a child they could not name (namespace pids).
pub const MAX_UNSEEN: usize = 256;

/// The result of an import.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Import {
    /// Events in log order, `seq` 1, 2, 3, ...
    pub events: Vec<Event>,
    /// Lines read (blank ones included).
    pub lines: usize,
    /// Understood lines that produced no event (other syscalls, stop and attach notices,
    /// `= ?` ...).
    pub skipped: usize,
    /// Lines that are not strace output.
    pub unreadable: usize,
    /// The first [`MAX_KEPT_UNREADABLE`] unreadable lines: (1-based line number, text, cut to
    /// 200 characters).
    pub first_unreadable: Vec<(usize, String)>,
    /// Lines without a pid belong to the initial process, whose pid the log never showed:
    /// their events carry [`UNKNOWN_PID`] ("the initial process").
    pub initial_pid_unknown: bool,
    /// Signal events whose `si_pid` is a pid of the receiver's pid namespace that the log never
    /// tied to one of its own pids: their sender is 0 (unknown).
    pub untranslated_senders: usize,
    /// What the log's time stamps mean (the first stamp seen tells): `-ttt` epoch, `-t`/`-tt`
    /// time of day, `-r` relative, or none.
    pub clock: crate::clock::Clock,
    /// Lines joined to the line before them: the log was wrapped (mail, a terminal, a web
    /// page) or a removed line had cut them (`text.rs`). A line cut by strace's own attach
    /// notice is not counted.
    pub rejoined: usize,
    /// Shell prompt lines skipped (`$ strace ...` pasted with the log).
    pub prompts: usize,
    /// Execs whose call is in the log but not their result (the log ends in the call):
    /// readers take each as what its process ran ([`crate::lineage::Engine::end_of_input`]).
    pub unfinished_execs: usize,
    /// The initial process, which the log shows but never creates: the command `strace CMD`
    /// started (`launched`: its start precedes the log, as a command's does in a trace
    /// file's snapshot) or the first process `strace -p` attached to. What a reader seeds its
    /// engine with, as a trace file's /proc snapshot is; parent unknown (0).
    pub initial: Option<crate::event::SnapshotProcess>,
}

/// Why an strace log could not be imported. Unreadable lines are not errors: they are
/// counted in [`Import::unreadable`].
#[derive(Debug, thiserror::Error)]
pub enum StraceError {
    /// Not a single line was understood.
    #[error("neither a trace file nor an strace log ({lines} lines, none understood)")]
    NotAnStraceLog {
        /// Lines read.
        lines: usize,
    },
    /// Reading the log failed.
    #[error("reading the strace log: {0}")]
    Io(#[from] std::io::Error),
}

/// When the line of an `strace -ff` file (no pid prefix) was written, for merging the files
/// of a set: `Some((absolute, ns))`, the stamp of `-t`/`-tt`/`-ttt` (absolute: ns since
/// midnight or the epoch) or of `-r` (not absolute: the time since the file's line before).
pub fn ff_stamp(line: &str) -> Option<(bool, u64)> {
    let tok = line.trim_start().split(' ').next()?;
    match line::parse_stamp(tok)? {
        Stamp::Epoch(ns) | Stamp::TimeOfDay(ns) => Some((true, ns)),
        Stamp::Relative(ns) => Some((false, ns)),
    }
}

/// Parses a whole strace log.
pub fn parse_log(text: &str) -> Result<Import, StraceError> {
    let mut p = Parser::new();
    // Every '\n' ends a line (a lone "\n" is one empty line), as for `parse_reader`.
    if !text.is_empty() {
        for l in text.strip_suffix('\n').unwrap_or(text).split('\n') {
            p.feed_line(l);
        }
    }
    p.finish()
}

/// Parses a log line by line from a reader. Invalid UTF-8 is replaced; lines longer than
/// [`MAX_LINE_BYTES`] count as unreadable.
pub fn parse_reader<R: BufRead>(mut reader: R) -> Result<Import, StraceError> {
    let mut p = Parser::new();
    let mut buf: Vec<u8> = Vec::with_capacity(512);
    while let Some(cut) = stream::read_line(&mut reader, &mut buf)? {
        p.feed_bytes(&buf, cut);
    }
    p.finish()
}

/// A clone-family call whose child or return is still to come.
#[derive(Clone, Debug)]
struct CloneRec {
    id: u64,
    caller: u32,
    /// the caller's process when it made the call
    tgid: u32,
    syscall: Syscall,
    /// `None` when the call itself was not in the log (log starts at the resumed line).
    flags: Option<u64>,
    /// clone3 with `set_tid`: the caller chose the pid (checkpoint/restore)
    set_tid: bool,
    ret: Option<i64>,
    child: Option<u32>,
    /// The caller's `SyscallExit` is out, the child is still unnamed: its pid in strace's
    /// namespace is unknown (the return value is not one), the next new pid of this caller's
    /// process may be it.
    closed: bool,
    ts: u64,
    /// The first unseen pid that appeared after this clone returned a pid not seen yet: the
    /// child if the return value never shows up in the log (index of its first event).
    candidate: Option<(u32, usize)>,
    /// Its child's `Fork`, emitted before the return (index in the events): the return
    /// value gives it its pid in an inferred namespace.
    fork_at: Option<usize>,
    /// Its `CloneEnter`, whose flags the call's return line gives (index in the events).
    enter_at: Option<usize>,
}

impl CloneRec {
    /// It made a thread (CLONE_THREAD), not a process.
    fn makes_thread(&self) -> bool {
        self.flags.is_some_and(|f| f & cf::CLONE_THREAD != 0)
    }
}

#[derive(Clone, Debug)]
enum Pending {
    Clone(u64),
    Exec { filename: CapturedStr, old_tid: u32 },
    Prctl { emitted: bool },
    Exit,
}

/// Where a pid never seen before showed up.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Seen {
    Attach {
        threads: Option<u32>,
    },
    Prefix,
    /// in front of a `<... resumed>` line: the task was already in a call
    PrefixResumed,
}

/// Line-at-a-time strace log parser. Feed lines with [`Parser::feed_line`], then
/// [`Parser::finish`].
#[derive(Debug, Default)]
pub struct Parser {
    out: Import,
    understood: usize,
    seq: u64,
    // time
    ts_ns: u64,
    last_tod: Option<u64>,
    day_offset: u64,
    /// A line held for its continuation (`text.rs`: cut by a spliced attach notice, or
    /// wrapped), and the notices to apply after it.
    carry: Option<text::Carry>,
    /// How a pasted log was set in its page (`text.rs`).
    paste: text::Paste,
    deferred: Vec<Body<'static>>,
    // tasks
    /// Tasks seen and not exited (a pid seen again after its exit is a new task: pid reuse).
    live: HashSet<u32>,
    /// thread tid → its process's tgid (leaders are not in it)
    tgid_of: HashMap<u32, u32>,
    /// tgid → its live threads other than the leader
    threads: HashMap<u32, HashSet<u32>>,
    initial: Option<u32>,
    anon: bool,
    /// A `-o FILE` pid column was seen.
    column: bool,
    /// An attach notice was seen.
    notices: bool,
    /// The initial process was first seen in an attach notice (`strace -p`).
    initial_attached: bool,
    /// The highest pid strace printed (prefixes and notices: pids of strace's namespace).
    max_pid: u32,
    /// Processes (tgids) known to run in a pid namespace below strace's.
    nested: HashSet<u32>,
    /// Live pids that appeared without a known creator (the initial process aside).
    unclaimed: HashSet<u32>,
    /// (tgid, threads of it not yet seen) from `attached with M threads`.
    /// Entries leave when their count reaches 0, so the front is always the one to fill.
    unannounced: VecDeque<(u32, u32)>,
    /// Threads taken on that count alone, until the log says otherwise (`threads.rs`).
    tentative: threads::Tentative,
    pending: HashMap<u32, Pending>,
    clones: clones::Clones,
    next_clone: u64,
    /// Non-leader exec: leader pid → the thread that exec'd.
    pid_changed: HashMap<u32, u32>,
    /// Pid namespaces the log implies (strace shows none).
    pidns: pidns::NsInference,
    /// Process (tgid) → its parent as copy_process set it, for processes created in the log.
    parents: HashMap<u32, u32>,
    /// The log is `tracer trace`'s (a line only it prints was seen): births are stated, a
    /// `+++ exited` line is a whole process's end.
    ours: bool,
    /// Ours: a creator whose birth line came before its clone line (the call is printed
    /// whole at its return) → the child that line named.
    stated: HashMap<u32, u32>,
    /// Process → its parent, kept after its exit (bounded): the parent's SIGCHLD comes after
    /// strace printed the exit, and tells which process the receiving thread is of.
    exited_parents: HashMap<u32, u32>,
    /// What [`Stream`] handed out already (`out.events` holds the events after them).
    released: stream::Released,
}

impl Parser {
    /// A parser at the start of a log.
    pub fn new() -> Parser {
        Parser::default()
    }

    /// Feeds one line of bytes (lossy UTF-8). `cut`: the line was longer than the caller kept.
    pub fn feed_bytes(&mut self, bytes: &[u8], cut: bool) {
        if cut {
            if let Some(c) = self.carry.take() {
                self.flush(c);
            }
            self.out.lines += 1;
            let text = String::from_utf8_lossy(bytes);
            self.unreadable(self.out.lines, &text);
            return;
        }
        let text = String::from_utf8_lossy(bytes);
        self.feed_line(&text);
    }

    fn apply_deferred(&mut self) {
        for notice in std::mem::take(&mut self.deferred) {
            self.apply(Line {
                pid: None,
                column: false,
                stamp: None,
                stamp2: None,
                body: notice,
            });
        }
    }

    /// Ends the import: resolves what is still open and returns the result.
    pub fn finish(mut self) -> Result<Import, StraceError> {
        if let Some(c) = self.carry.take() {
            self.flush(c);
        }
        self.apply_deferred();
        self.exit_groups_at_end();
        self.out.unfinished_execs = self
            .pending
            .values()
            .filter(|p| matches!(p, Pending::Exec { .. }))
            .count();
        for id in self.clones.ids() {
            if let Some(caller) = self.clones.get(id).map(|c| c.caller) {
                self.fallback_identity(caller);
            }
        }
        self.resolve_candidates();
        pidns::order_member_pids(&mut self.out.events);
        self.out.initial_pid_unknown = self.anon;
        self.out.initial = self.initial_process();
        if self.understood == 0 {
            return Err(StraceError::NotAnStraceLog {
                lines: self.out.lines,
            });
        }
        Ok(self.out)
    }

    /// The initial process as the engine is seeded with it: pid [`UNKNOWN_PID`] when the log
    /// never showed it. None when the log has no line of any process.
    fn initial_process(&self) -> Option<crate::event::SnapshotProcess> {
        let pid = match (self.initial, self.anon) {
            (Some(pid), false) => pid,
            (_, true) => UNKNOWN_PID,
            (None, false) => return None,
        };
        // `strace CMD` logs open with the command's own execve; a log that opens otherwise
        // (our replayed lines, a cut log) began with a process that already ran.
        let opens_with_exec = match self.released.first {
            Some(first) => first == (pid, true),
            None => self
                .out
                .events
                .first()
                .is_some_and(|e| e.tgid == pid && stream::is_exec(&e.kind)),
        };
        Some(crate::event::SnapshotProcess {
            pid,
            threads: vec![pid],
            launched: !self.initial_attached && opens_with_exec,
            ..Default::default()
        })
    }

    fn unreadable(&mut self, no: usize, text: &str) {
        self.out.unreadable += 1;
        if self.out.first_unreadable.len() < MAX_KEPT_UNREADABLE {
            let kept: String = text.chars().take(KEPT_CHARS).collect();
            self.out.first_unreadable.push((no, kept));
        }
    }

    fn apply_counted(&mut self, l: Line<'_>) {
        if l.body == Body::Blank {
            return;
        }
        self.understood += 1;
        let before = self.seq;
        self.apply(l);
        if self.seq == before {
            self.out.skipped += 1;
        }
    }

    // ---- time ----

    fn stamp(&mut self, s: Stamp) {
        if self.out.clock == crate::clock::Clock::None {
            self.out.clock = match s {
                Stamp::Epoch(_) => crate::clock::Clock::Epoch,
                Stamp::Relative(_) => crate::clock::Clock::Relative,
                Stamp::TimeOfDay(_) => crate::clock::Clock::TimeOfDay,
            };
        }
        match s {
            Stamp::Epoch(ns) => self.ts_ns = ns,
            Stamp::Relative(ns) => self.ts_ns = self.ts_ns.saturating_add(ns),
            Stamp::TimeOfDay(ns) => {
                const DAY: u64 = 86_400_000_000_000;
                if let Some(last) = self.last_tod {
                    if ns < last && last - ns > DAY / 2 {
                        self.day_offset = self.day_offset.saturating_add(DAY);
                    }
                }
                self.last_tod = Some(ns);
                self.ts_ns = self.day_offset.saturating_add(ns);
            }
        }
    }

    // ---- tasks ----

    fn tgid(&self, tid: u32) -> u32 {
        self.tgid_of.get(&tid).copied().unwrap_or(tid)
    }

    fn emit(&mut self, tid: u32, ts: u64, kind: EventKind) {
        self.seq += 1;
        let tgid = self.tgid(tid);
        self.pidns.observe(tgid, tid, &kind);
        if matches!(
            kind,
            EventKind::Fork {
                child_ns: Some(_),
                ..
            }
        ) {
            // `order_member_pids` reorders such forks' namespace pids at the end of the log.
            let at = self.emitted();
            self.released.ns_fork.get_or_insert(at);
        }
        self.out.events.push(Event {
            seq: self.seq,
            ts_ns: ts,
            tgid,
            tid,
            ppid: 0,
            uid: u32::MAX,
            cgroup_id: 0,
            comm: Comm::default(),
            kind,
        });
    }

    /// The task of a line without a pid.
    fn unprefixed_tid(&mut self) -> u32 {
        if self.anon {
            return UNKNOWN_PID;
        }
        if self.live.len() == 1 {
            if let Some(&only) = self.live.iter().next() {
                return only;
            }
        }
        if let Some(i) = self.initial {
            return i;
        }
        self.anon = true;
        UNKNOWN_PID
    }

    /// A pid shows up for the first time.
    fn first_seen(&mut self, pid: u32, how: Seen) {
        if !self.live.insert(pid) {
            return;
        }
        // a new task: an exited process's parent and namespace no longer speak for this pid
        self.exited_parents.remove(&pid);
        self.pidns.reused(pid);
        if let Some(tgid) = self.tgid_of.remove(&pid) {
            // stale: the pid was a thread that vanished without an exit line
            if let Some(set) = self.threads.get_mut(&tgid) {
                set.remove(&pid);
            }
        }
        // (1) a clone that returned exactly this pid
        if let Some(i) = self.clones.returning(i64::from(pid)) {
            self.assign_child(i, pid);
            return;
        }
        if self.anon && !matches!(how, Seen::Attach { .. }) {
            // The initial process, whose earlier lines had no pid, or its child? A resumed line
            // continues a call made earlier, so it is the initial process; a child can also
            // speak while the initial process is still inside the clone (vfork, `-q` logs).
            let in_clone = self.clones.in_call_of(UNKNOWN_PID);
            match in_clone {
                Some(i) if how == Seen::Prefix => self.assign_child(i, pid),
                _ => self.bind_anon(pid),
            }
            return;
        }
        // threads of an attached process appear unannounced
        if !matches!(how, Seen::Attach { .. }) {
            if let Some(slot) = self.unannounced.front_mut() {
                slot.1 -= 1;
                let tgid = slot.0;
                if slot.1 == 0 {
                    self.unannounced.pop_front();
                }
                self.tentative_thread(pid, tgid);
                return;
            }
        }
        // (2) a clone of a single process still waiting for its child. A task whose first line
        // resumes a call is not new: it existed before tracing.
        if how != Seen::PrefixResumed {
            if let Some(i) = self.waiting_clone() {
                if !self.return_may_show(i) {
                    self.assign_child(i, pid);
                    return;
                }
                // The clone returned a pid of strace's namespace not seen yet: that pid, if it
                // shows up later, is the child; this one only if it never does.
                let at = self.emitted();
                self.clones.update(i, |c| {
                    c.candidate.get_or_insert((pid, at));
                });
            }
        }
        // a process that existed before tracing, or a child nobody can be named the creator of
        match self.initial {
            None => {
                self.initial = Some(pid);
                self.initial_attached = matches!(how, Seen::Attach { .. });
            }
            Some(_) if how != Seen::PrefixResumed => {
                self.unclaimed.insert(pid);
            }
            Some(_) => {}
        }
        if let Seen::Attach { threads: Some(n) } = how {
            if n > 1 {
                self.unannounced.push_back((pid, n - 1));
            }
        }
    }

    /// The initial process's pid is now known: rewrite what was recorded under the placeholder.
    fn bind_anon(&mut self, pid: u32) {
        self.anon = false;
        self.initial = Some(pid);
        let fix = |v: &mut u32| {
            if *v == UNKNOWN_PID {
                *v = pid
            }
        };
        for e in &mut self.out.events {
            fix(&mut e.tid);
            fix(&mut e.tgid);
            if let EventKind::Fork {
                child_tgid,
                child_ppid,
                flags,
                ..
            } = &mut e.kind
            {
                fix(child_tgid);
                // 0 is the placeholder only where the caller is the parent; with CLONE_PARENT,
                // CLONE_THREAD or unknown flags it means "unknown" and stays.
                if flags.is_some_and(|f| NewParent::of(f) == NewParent::Caller) {
                    fix(child_ppid);
                }
            }
            if let EventKind::Exec { old_tid, .. } = &mut e.kind {
                fix(old_tid);
            }
            if let EventKind::Signal(s) = &mut e.kind {
                fix(&mut s.target);
                fix(&mut s.target_tid);
            }
        }
        for v in self.tgid_of.values_mut() {
            fix(v);
        }
        for v in self.parents.values_mut() {
            fix(v);
        }
        self.clones.rename(UNKNOWN_PID, pid);
        if self.nested.remove(&UNKNOWN_PID) {
            self.nested.insert(pid);
        }
        self.pidns.rebind(UNKNOWN_PID, pid);
        for p in self.pending.values_mut() {
            if let Pending::Exec { old_tid, .. } = p {
                fix(old_tid);
            }
        }
        if let Some(p) = self.pending.remove(&UNKNOWN_PID) {
            self.pending.insert(pid, p);
        }
        for v in self.pid_changed.values_mut() {
            fix(v);
        }
        if let Some(t) = self.pid_changed.remove(&UNKNOWN_PID) {
            self.pid_changed.insert(pid, t);
        }
        if let Some(set) = self.threads.remove(&UNKNOWN_PID) {
            self.threads.insert(pid, set);
        }
    }

    /// The clone a new pid (no notice or return value names it) is the child of: the oldest
    /// clone still inside the call, else the oldest returned one whose child could not be
    /// named — each only when all such clones were made by one process, never a guess between
    /// callers.
    fn waiting_clone(&self) -> Option<u64> {
        self.clones.waiting()
    }

    /// Clone `i` returned a pid that may still show up in the log as its child: one of
    /// strace's namespace (not foreign) that no live task has.
    fn return_may_show(&mut self, i: u64) -> bool {
        match self
            .clones
            .get(i)
            .and_then(|c| c.ret)
            .and_then(|r| u32::try_from(r).ok())
        {
            Some(n) if n > 0 && !self.live.contains(&n) => !self.foreign_return(i, n),
            _ => false,
        }
    }

    /// At the end of the log: a clone whose return value never showed up gets its candidate
    /// (the first unseen pid after it) as child, its `Fork` placed before that pid's first
    /// event.
    fn resolve_candidates(&mut self) {
        // Assigning one clone's child changes no other clone: one pass, oldest first.
        // Children the log's Forks name, read once (then each assignment adds its own).
        let mut claimed: HashSet<u32> = HashSet::new();
        for e in &self.out.events {
            if let EventKind::Fork { child_tid, .. } = e.kind {
                claimed.insert(child_tid);
            }
        }
        for i in self.clones.ids() {
            let Some((pid, at)) = self
                .clones
                .get(i)
                .filter(|c| c.child.is_none())
                .and_then(|c| c.candidate)
            else {
                continue;
            };
            self.clones.update(i, |c| c.candidate = None);
            // (and the Forks handed out already; a candidate holds its events back: `at` is
            // never among those)
            let named = claimed.contains(&pid) || self.released.named(pid);
            if named || at > self.emitted() || at < self.released.count {
                continue;
            }
            let base = self.released.count;
            let end = self.out.events.len();
            self.assign_child(i, pid);
            // Move what assign_child emitted to where the child first appeared; seq stays
            // emission order.
            let emitted = self.out.events.len() - end;
            self.out.events[at - base..].rotate_right(emitted);
            for (k, e) in self.out.events.iter_mut().enumerate().skip(at - base) {
                e.seq = (base + k) as u64 + 1;
            }
        }
    }

    /// Evidence that the return value `n` of clone `i` is not a pid of strace's namespace.
    fn foreign_return(&mut self, i: u64, n: u32) -> bool {
        let Some(c) = self.clones.get(i) else {
            return false;
        };
        if self.nested.contains(&c.tgid) {
            return true;
        }
        // strace's namespace handed out a pid above RESERVED_PIDS: no new pid there is below it
        if n < RESERVED_PIDS && self.max_pid > RESERVED_PIDS && !c.set_tid {
            let tgid = c.tgid;
            self.nested.insert(tgid);
            return true;
        }
        // another task has that pid
        self.live.contains(&n) && !self.unclaimed.contains(&n)
    }

    /// Clone `i` returned a pid (stored in `ret`) and its child is not named yet.
    fn returned(&mut self, i: u64) {
        let Some(n) = self
            .clones
            .get(i)
            .and_then(|c| c.ret)
            .and_then(|r| u32::try_from(r).ok())
        else {
            return;
        };
        let thread = self.clones.get(i).is_some_and(CloneRec::makes_thread);
        if thread {
            self.thread_confirmed(n);
        } else {
            self.untangle(n);
        }
        if self.unclaimed.contains(&n) {
            // the child spoke first, nobody could be named its creator then
            self.assign_child(i, n);
            return;
        }
        let foreign = self.foreign_return(i, n);
        // In a log without attach notices the return value names the child now, unless the log
        // says it is not a pid of strace's namespace; otherwise a notice may still follow.
        if self.column && !self.notices {
            if foreign {
                self.close(i);
            } else {
                self.assign_child(i, n);
            }
        }
    }

    /// Emits the caller's `SyscallExit` of clone `i`, whose child stays unnamed for now.
    fn close(&mut self, i: u64) {
        let Some(c) = self.clones.get(i).filter(|c| !c.closed) else {
            return;
        };
        let (caller, ts, syscall, ret) = (c.caller, c.ts, c.syscall, c.ret.unwrap_or(0));
        self.clones.update(i, |c| c.closed = true);
        self.emit(caller, ts, EventKind::SyscallExit { syscall, ret });
        if self.clones.closed_count() > MAX_UNSEEN {
            // forget the older half at once (amortized: not one on every call)
            for id in self.clones.closed().into_iter().take(MAX_UNSEEN / 2) {
                self.clones.remove(id);
            }
        }
    }

    fn assign_child(&mut self, i: u64, child: u32) {
        let Some(c) = self.clones.get(i).cloned() else {
            return;
        };
        let thread = c.makes_thread();
        let child_tgid = if thread { self.tgid(c.caller) } else { child };
        self.tgid_of.remove(&child); // a reused pid
        self.unclaimed.remove(&child);
        let mut child_ns = None;
        if thread {
            self.set_thread(child, child_tgid);
        } else {
            self.nested.remove(&child);
            let nested = self.nested.contains(&c.tgid);
            child_ns = self.pidns.born(c.tgid, c.caller, child, c.flags, nested);
            // (a caller that exited before its child spoke is no longer in `nested`: the
            // child's namespace says it)
            let below = child_ns.is_some_and(|ns| ns.ns_pid == 1 || ns.level > 0);
            if below || nested {
                self.nested.insert(child);
            }
        }
        self.live.insert(child);
        if let Some(ret) = c.ret {
            self.learn_pid(&c, ret, child);
        }
        let child_ppid = self.new_parent(&c);
        if !thread {
            match child_ppid {
                Some(p) => self.parents.insert(child, p),
                None => self.parents.remove(&child),
            };
        }
        let ts = if c.ret.is_some() { c.ts } else { self.ts_ns };
        if let (Some(ret), Some(ns)) = (c.ret, child_ns.as_mut()) {
            self.pidns.member_pid(c.tgid, ns, ret);
        }
        let fork_at = self.emitted();
        self.emit(
            c.caller,
            ts,
            EventKind::Fork {
                child_tid: child,
                child_tgid,
                child_ppid: child_ppid.unwrap_or(0),
                syscall: Some(c.syscall),
                flags: c.flags.map(CloneFlags),
                child_ns,
            },
        );
        if let Some(ret) = c.ret {
            if !c.closed {
                self.emit(
                    c.caller,
                    c.ts,
                    EventKind::SyscallExit {
                        syscall: c.syscall,
                        ret,
                    },
                );
            }
            self.clones.remove(i);
        } else {
            self.clones.update(i, |c| {
                c.child = Some(child);
                c.fork_at = Some(fork_at);
            });
        }
    }

    /// Clone `c`, whose child's `Fork` is out already, returned `ret`: the child's pid in its
    /// namespace when it is the caller's inferred one.
    fn member_pid_at(&mut self, c: &CloneRec, ret: i64) {
        let Some(at) = c.fork_at.and_then(|at| at.checked_sub(self.released.count)) else {
            return;
        };
        let tgid = c.tgid;
        if let Some(Event {
            kind: EventKind::Fork {
                child_ns: Some(ns), ..
            },
            ..
        }) = self.out.events.get_mut(at)
        {
            self.pidns.member_pid(tgid, ns, ret);
        }
    }

    /// The parent copy_process gives the child of clone `c` ([`NewParent`]): the caller's
    /// process, or with CLONE_PARENT or CLONE_THREAD the caller's own parent — known when the
    /// log created the caller and that parent is still alive (after its exit the caller was
    /// reparented, which strace does not show). Unknown flags (the call is not in the log):
    /// unknown.
    fn new_parent(&self, c: &CloneRec) -> Option<u32> {
        match NewParent::of(CloneFlags(c.flags?)) {
            NewParent::Caller => Some(c.tgid),
            NewParent::CallersParent => self
                .parents
                .get(&c.tgid)
                .copied()
                .filter(|p| self.live.contains(p)),
        }
    }

    /// Clone `c` returned `ret` for `child`: the child's pid in the caller's pid namespace. Only
    /// processes are learnt: `si_pid` names a process, never a thread.
    fn learn_pid(&mut self, c: &CloneRec, ret: i64, child: u32) {
        if !c.makes_thread() {
            self.pidns.named(c.tgid, ret, child);
        }
    }

    /// The caller moved on without a notice naming its child: use the return value, unless
    /// the log says it is not a pid of strace's namespace (then the child may still show up as
    /// a new pid).
    fn fallback_identity(&mut self, caller: u32) {
        // Each turn closes the call or names its child (and forgets it): it leaves `open_of`.
        while let Some(i) = self.clones.open_of(caller) {
            let Some(c) = self.clones.get(i) else {
                return;
            };
            let n = c.ret.and_then(|r| u32::try_from(r).ok()).filter(|&p| p > 0);
            let candidate = c.candidate.is_some();
            match n {
                // A candidate appeared meanwhile: wait for the return value to show up until
                // the end of the log (`finish`), the caller's exit line now.
                Some(n) if !self.unclaimed.contains(&n) && candidate => self.close(i),
                Some(n) if self.unclaimed.contains(&n) || !self.foreign_return(i, n) => {
                    self.assign_child(i, n)
                }
                _ => self.close(i),
            }
        }
    }

    /// `tid` is a thread of `tgid` (not its leader).
    fn set_thread(&mut self, tid: u32, tgid: u32) {
        self.tgid_of.insert(tid, tgid);
        self.threads.entry(tgid).or_default().insert(tid);
    }

    /// `tid` is gone; when it led its process, so are the process's other threads.
    fn task_gone(&mut self, tid: u32) {
        self.stated.remove(&tid);
        self.pidns.gone(tid);
        self.live.remove(&tid);
        self.pending.remove(&tid);
        self.unclaimed.remove(&tid);
        match self.tgid_of.remove(&tid) {
            Some(tgid) => {
                if let Some(set) = self.threads.get_mut(&tgid) {
                    set.remove(&tid);
                }
            }
            None => {
                self.parents.remove(&tid);
                for t in self.threads.remove(&tid).unwrap_or_default() {
                    self.live.remove(&t);
                    self.pending.remove(&t);
                    self.tgid_of.remove(&t);
                    self.unclaimed.remove(&t);
                }
                self.nested.remove(&tid);
                // threads the process made and nobody could name died with it
                for id in self.clones.closed() {
                    if self
                        .clones
                        .get(id)
                        .is_some_and(|c| c.tgid == tid && c.makes_thread())
                    {
                        self.clones.remove(id);
                    }
                }
            }
        }
    }

    // ---- lines ----

    fn apply(&mut self, l: Line<'_>) {
        self.note_line(&l);
        if self.apply_taskless(&l) {
            return;
        }
        let tid = self.line_tid(&l);
        // A clone whose child was never announced: settle it before the caller goes on.
        let resumed_clone =
            matches!(l.body, Body::Resumed { syscall: Some(s), .. } if s.creates_task());
        if !resumed_clone && self.clones.open_of(tid).is_some() {
            self.fallback_identity(tid);
        }
        self.apply_body(tid, l.body);
    }

    /// What every line tells, whatever it is: its stamps, the highest pid printed, whether
    /// pids come in the `-o FILE` column, whether attach notices are in the log.
    fn note_line(&mut self, l: &Line<'_>) {
        if let Some(s) = l.stamp {
            self.stamp(s);
        }
        if let Some(s) = l.stamp2 {
            if l.stamp.is_none() || matches!(l.stamp, Some(Stamp::Relative(_))) {
                self.stamp(s);
            }
        }
        if let Some(p) = l.pid {
            self.max_pid = self.max_pid.max(p);
            self.column |= l.column;
        }
        if let Body::Attached { pid, .. } = l.body {
            self.max_pid = self.max_pid.max(pid);
            self.notices = true;
        }
    }

    /// The lines that settle no clone: blanks and notices, signal stops, attach notices and
    /// our birth lines. True when `l` was one of them (and is applied).
    fn apply_taskless(&mut self, l: &Line<'_>) -> bool {
        match l.body {
            Body::Blank | Body::Notice => {
                if let Some(p) = l.pid {
                    self.first_seen(p, Seen::Prefix);
                }
            }
            Body::Signal(sig) => {
                // It settles no clone (as when signal lines were skipped): only the caller's
                // next syscall says its child's attach notice is not coming, and a signal stop
                // can fall between a clone's return and that notice.
                let tid = match l.pid {
                    Some(p) => {
                        self.first_seen(p, Seen::Prefix);
                        p
                    }
                    None => self.unprefixed_tid(),
                };
                self.signal(tid, self.ts_ns, sig);
            }
            Body::Attached { pid, threads } => self.first_seen(pid, Seen::Attach { threads }),
            Body::Born(b) => self.born(b),
            Body::Call { .. }
            | Body::Resumed { .. }
            | Body::Exited(_)
            | Body::Killed { .. }
            | Body::Superseded(_)
            | Body::ThreadEnd(_)
            | Body::Ours(_)
            | Body::Unshare(_) => return false,
        }
        true
    }

    /// The task a line of a task's own (a call, a resumed call, an exit...) belongs to.
    fn line_tid(&mut self, l: &Line<'_>) -> u32 {
        match (l.pid, l.body) {
            (Some(p), Body::Resumed { .. }) => {
                self.first_seen(p, Seen::PrefixResumed);
                p
            }
            (Some(p), _) => {
                self.first_seen(p, Seen::Prefix);
                p
            }
            // the leader's line after a non-leader exec, printed once only one task is left
            (None, Body::Superseded(Some(old))) if self.live.contains(&old) => self.tgid(old),
            (None, _) => self.unprefixed_tid(),
        }
    }

    /// A line of task `tid`'s own, once any clone it left open is settled.
    fn apply_body(&mut self, tid: u32, body: Body<'_>) {
        let ts = self.ts_ns;
        match body {
            Body::Call {
                syscall: Some(sc),
                args,
                end,
            } => self.call(tid, ts, sc, args, end),
            Body::Call { syscall: None, .. } => {}
            Body::Resumed {
                syscall: Some(sc),
                args,
                end,
            } => {
                // strace before 5.3: clone's arguments come with its return
                let late = sc.creates_task().then(|| clone_args(sc, args)).flatten();
                if let Some(flags) = late {
                    self.flags_at_return(tid, flags);
                }
                self.resumed(tid, ts, sc, end, late)
            }
            Body::Resumed { syscall: None, .. } => {}
            Body::Exited(code) => self.exit(tid, ts, ((code as u32) & 0xff) << 8),
            Body::Killed { signal, core } => {
                self.exit(tid, ts, (signal & 0x7f) | if core { 0x80 } else { 0 })
            }
            Body::Superseded(old) => self.superseded(tid, old),
            Body::Unshare(flags) if flags & cf::CLONE_NEWPID != 0 => self.pidns.unshared(tid),
            Body::Unshare(_) => {}
            Body::ThreadEnd(status) => self.thread_end(tid, ts, status),
            // One that does not read as the event it names is skipped, as other notices are.
            Body::Ours(text) => {
                if let Some(kind) = ours::notice_event(text, tid) {
                    self.emit(tid, ts, kind);
                }
            }
            Body::Blank
            | Body::Signal(_)
            | Body::Notice
            | Body::Attached { .. }
            | Body::Born(_) => {}
        }
    }

    fn call(&mut self, tid: u32, ts: u64, sc: Syscall, args: &str, end: End) {
        self.calls_after_exit_group(tid);
        match sc {
            Syscall::Clone | Syscall::Clone3 | Syscall::Fork | Syscall::Vfork => {
                self.clone_call(tid, ts, sc, args)
            }
            Syscall::Execve | Syscall::Execveat => {
                let kind = exec_args(sc, args);
                // exec_args makes an ExecEnter.
                let filename = if let EventKind::ExecEnter { filename, .. } = &kind {
                    filename.clone()
                } else {
                    CapturedStr::default()
                };
                self.emit(tid, ts, kind);
                self.pending.insert(
                    tid,
                    Pending::Exec {
                        filename,
                        old_tid: tid,
                    },
                );
                if let End::PidChanged(leader) = end {
                    self.pid_changed.insert(leader, tid);
                }
            }
            Syscall::Exit | Syscall::ExitGroup => {
                if sc == Syscall::ExitGroup {
                    self.exit_group_called(tid);
                }
                let code = args
                    .trim()
                    .split(',')
                    .next()
                    .and_then(crate::names::parse_int)
                    .unwrap_or(0);
                self.emit(
                    tid,
                    ts,
                    EventKind::ExitEnter {
                        syscall: sc,
                        code: code as i32,
                    },
                );
                self.pending.insert(tid, Pending::Exit);
            }
            Syscall::Prctl => {
                let emitted = match prctl_args(args, end) {
                    Some(kind) => {
                        self.emit(tid, ts, kind);
                        true
                    }
                    None => false,
                };
                self.pending.insert(tid, Pending::Prctl { emitted });
            }
        }
        if let End::Returned(ret) = end {
            self.resumed(tid, ts, sc, End::Returned(ret), None);
        }
    }

    /// `tid` calls a clone-family syscall: its entry, and the call held until its child and
    /// return are known.
    fn clone_call(&mut self, tid: u32, ts: u64, sc: Syscall, args: &str) {
        let parsed = clone_args(sc, args);
        let (flags, exit_signal) = parsed.unwrap_or_default();
        let enter_at = self.emitted();
        let enter = EventKind::CloneEnter {
            syscall: sc,
            flags: CloneFlags(flags),
            exit_signal,
        };
        self.emit(tid, ts, enter);
        let set_tid = sc == Syscall::Clone3 && args.contains("set_tid=");
        let id = self.new_clone(tid, ts, sc, parsed.map(|p| p.0), set_tid);
        if parsed.is_none() {
            // its flags come at its return: the entry is written again then
            self.clones.update(id, |c| c.enter_at = Some(enter_at));
        }
        if let Some(child) = self.stated.remove(&tid) {
            self.clones.update(id, |c| c.child = Some(child));
        }
        self.pending.insert(tid, Pending::Clone(id));
    }

    /// A call of `tid` returns (`late`: a clone's flags printed only now, when its call is not
    /// in the log).
    fn resumed(&mut self, tid: u32, ts: u64, sc: Syscall, end: End, late: Option<(u64, u32)>) {
        let ret = match end {
            End::Returned(r) => r,
            // resumed and cut again: still in flight
            End::Unfinished | End::PidChanged(_) => return,
        };
        let mut pending = self.pending.remove(&tid);
        if pending.is_none() && matches!(sc, Syscall::Execve | Syscall::Execveat) {
            if let Some(old) = self.pid_changed.remove(&tid) {
                pending = self.pending.remove(&old);
            }
        }
        match sc {
            Syscall::Clone | Syscall::Clone3 | Syscall::Fork | Syscall::Vfork => {
                let id = match pending {
                    Some(Pending::Clone(id)) if self.clones.get(id).is_some() => id,
                    // the call itself is not in the log
                    _ => self.new_clone(tid, ts, sc, late.map(|f| f.0), false),
                };
                self.clone_returned(tid, ts, sc, id, ret);
            }
            Syscall::Execve | Syscall::Execveat => {
                let (filename, old_tid) = match pending {
                    Some(Pending::Exec { filename, old_tid }) => (filename, old_tid),
                    _ => (CapturedStr::default(), tid),
                };
                match ret {
                    Some(0) => {
                        if old_tid != tid {
                            self.exec_takeover(tid, old_tid);
                        } else {
                            // it exec'd as itself: it leads its process (threads.rs)
                            self.untangle(tid);
                        }
                        self.emit(
                            tid,
                            ts,
                            EventKind::Exec {
                                old_tid,
                                filename,
                                cred: None,
                            },
                        );
                        self.emit(
                            tid,
                            ts,
                            EventKind::SyscallExit {
                                syscall: sc,
                                ret: 0,
                            },
                        );
                    }
                    Some(r) => self.emit(
                        tid,
                        ts,
                        EventKind::SyscallExit {
                            syscall: sc,
                            ret: r,
                        },
                    ),
                    None => {}
                }
            }
            Syscall::Prctl => {
                let emitted = matches!(pending, Some(Pending::Prctl { emitted: true }));
                if let (true, Some(r)) = (emitted, ret) {
                    self.emit(
                        tid,
                        ts,
                        EventKind::SyscallExit {
                            syscall: sc,
                            ret: r,
                        },
                    );
                }
            }
            Syscall::Exit | Syscall::ExitGroup => {}
        }
    }

    /// A clone-family call of `tid` starts (or resumes, when its start is not in the log:
    /// flags `None`); its id.
    fn new_clone(
        &mut self,
        tid: u32,
        ts: u64,
        sc: Syscall,
        flags: Option<u64>,
        set_tid: bool,
    ) -> u64 {
        self.next_clone += 1;
        let id = self.next_clone;
        let tgid = self.tgid(tid);
        self.clones.insert(CloneRec {
            id,
            caller: tid,
            tgid,
            syscall: sc,
            flags,
            set_tid,
            ret: None,
            child: None,
            closed: false,
            ts,
            candidate: None,
            fork_at: None,
            enter_at: None,
        });
        id
    }

    /// Clone `id` of `tid` returned `ret` (`None`: `= ?`, the caller died in it).
    fn clone_returned(&mut self, tid: u32, ts: u64, sc: Syscall, id: u64, ret: Option<i64>) {
        self.clones.update(id, |c| c.ts = ts);
        let exit = |ret| EventKind::SyscallExit { syscall: sc, ret };
        match ret {
            Some(r) if r > 0 => match self.clones.get(id).and_then(|c| c.child) {
                Some(child) => {
                    if let Some(c) = self.clones.remove(id) {
                        self.learn_pid(&c, r, child);
                        self.member_pid_at(&c, r);
                    }
                    self.emit(tid, ts, exit(r));
                }
                None => {
                    self.clones.update(id, |c| c.ret = Some(r));
                    self.returned(id);
                }
            },
            Some(r) => {
                self.clones.remove(id);
                self.emit(tid, ts, exit(r));
            }
            None => {
                self.clones.remove(id);
            }
        }
    }

    /// `+++ superseded by execve in pid OLD +++` in the leader's pid.
    fn superseded(&mut self, leader: u32, old: Option<u32>) {
        // The thread in an exec is one of the leader's process: its threads are read, not
        // every task's pending call (one superseded line per thread made that quadratic).
        let old = old.or_else(|| {
            let tgid = self.tgid(leader);
            self.threads
                .get(&tgid)?
                .iter()
                .filter(|&&t| {
                    t != leader
                        && matches!(self.pending.get(&t), Some(Pending::Exec { .. }))
                        && self.tgid(t) == tgid
                })
                .min()
                .copied()
        });
        let Some(old) = old else { return };
        if old == leader {
            return;
        }
        if let Some(Pending::Exec { filename, .. }) = self.pending.remove(&old) {
            self.pending.insert(
                leader,
                Pending::Exec {
                    filename,
                    old_tid: old,
                },
            );
        }
        self.pid_changed.remove(&leader);
    }

    /// A non-leader thread exec'd: it now is the leader; the other threads are gone.
    fn exec_takeover(&mut self, leader: u32, old: u32) {
        for t in self.threads.remove(&leader).unwrap_or_default() {
            self.live.remove(&t);
            self.tgid_of.remove(&t);
            if t != old {
                self.pending.remove(&t);
            }
        }
        self.tgid_of.remove(&leader);
        self.live.insert(leader);
    }

    fn exit(&mut self, tid: u32, ts: u64, exit_code: u32) {
        let tgid = self.tgid(tid);
        // Our lines say `+++ thread exited +++` for every other thread's end: a `+++ exited`
        // is the process's, whichever thread was last.
        let group_dead = self.ours || tgid == tid;
        if group_dead {
            self.exited_parent(tgid);
        }
        self.emit(
            tid,
            ts,
            EventKind::TaskExit {
                exit_code,
                group_dead,
            },
        );
        self.task_gone(tid);
        if self.ours && tgid != tid {
            self.task_gone(tgid);
        }
    }

    /// Ours: `+++ thread exited with N +++`, a thread's end (the leader's too: its process
    /// lives on in its other threads).
    fn thread_end(&mut self, tid: u32, ts: u64, exit_code: u32) {
        self.ours = true;
        self.emit(
            tid,
            ts,
            EventKind::TaskExit {
                exit_code,
                group_dead: false,
            },
        );
        if self.tgid(tid) != tid {
            self.task_gone(tid);
        }
    }

    /// Ours: a birth line names the child, its process, its parent and its creator; the
    /// `Fork` is emitted as it says, nothing inferred.
    fn born(&mut self, b: line::Born) {
        self.ours = true;
        let caller = b.by.or(b.parent).filter(|&p| p != 0).unwrap_or(b.tgid);
        self.max_pid = self.max_pid.max(b.child).max(caller);
        self.first_seen(caller, Seen::Prefix);
        let thread = b.child != b.tgid;
        self.tgid_of.remove(&b.child);
        self.unclaimed.remove(&b.child);
        self.live.insert(b.child);
        let parent = match b.parent {
            Some(p) => p,
            None => self.parents.get(&b.tgid).copied().unwrap_or(0),
        };
        if thread {
            self.set_thread(b.child, b.tgid);
        } else if parent != 0 {
            self.parents.insert(b.child, parent);
        }
        let kind = EventKind::Fork {
            child_tid: b.child,
            child_tgid: b.tgid,
            child_ppid: parent,
            syscall: b.syscall,
            flags: b.flags.map(CloneFlags),
            child_ns: None,
        };
        self.emit(caller, self.ts_ns, kind);
        // The creator's clone line names no other child: in the call now, or printed next.
        match self.clones.in_call_of(caller) {
            Some(id) => self.clones.update(id, |c| c.child = Some(b.child)),
            None => {
                self.stated.insert(caller, b.child);
            }
        }
    }
}

/// The static form of a notice body (it borrows nothing).
fn to_static(b: Body<'_>) -> Body<'static> {
    match b {
        Body::Attached { pid, threads } => Body::Attached { pid, threads },
        _ => Body::Notice,
    }
}

/// (flags without the signal, exit signal) of a clone-family call; `None` when the text
/// names none (strace before 5.3 printed clone's arguments only at its exit: a call cut by
/// another task's line is `clone( <unfinished ...>`, its flags in the resumed line).
fn clone_args(sc: Syscall, args: &str) -> Option<(u64, u32)> {
    let first = || args::split_top(args).next().map(str::trim).unwrap_or("");
    match sc {
        Syscall::Fork => Some((0, 17)),
        Syscall::Vfork => Some((cf::CLONE_VM | cf::CLONE_VFORK, 17)),
        Syscall::Clone => match args::keyed(args, "flags") {
            Some(f) => Some(args::parse_flags_lenient(f)),
            // no key names (raw form): flags are the first argument on x86-64
            None if !first().is_empty() && !first().contains('=') => {
                Some(args::parse_flags_lenient(first()))
            }
            None => None,
        },
        Syscall::Clone3 => {
            // `{flags=..., exit_signal=SIGCHLD, ...} => {parent_tid=[5]}`
            let inner = first().strip_prefix('{')?;
            let inner = match inner.find('}') {
                Some(end) => inner.get(..end).unwrap_or(""),
                None => inner,
            };
            let (flags, sig_in_flags) = args::keyed(inner, "flags")
                .map(args::parse_flags_lenient)
                .unwrap_or((0, 0));
            let sig = args::keyed(inner, "exit_signal")
                .and_then(args::parse_signal)
                .unwrap_or(sig_in_flags);
            Some((flags, sig))
        }
        _ => Some((0, 0)),
    }
}

fn exec_args(sc: Syscall, args: &str) -> EventKind {
    let mut it = args::split_top(args);
    let (dirfd, path) = if sc == Syscall::Execveat {
        (it.next().map(args::parse_dirfd).unwrap_or(-100), it.next())
    } else {
        (-100, it.next())
    };
    let filename = path.and_then(args::parse_cstr).unwrap_or_default();
    let (argv, argv_truncated) = it.next().map(args::parse_argv).unwrap_or_default();
    // strace writes envp before execveat's flags; our lines leave envp out
    let rest: Vec<&str> = it.collect();
    let flags = match rest.as_slice() {
        [_envp, flags, ..] => Some(*flags),
        [one] if one.starts_with("AT_") || *one == "0" => Some(*one),
        _ => None,
    };
    let at_flags = match sc {
        Syscall::Execveat => flags.map(args::parse_at_flags).unwrap_or(0),
        _ => 0,
    };
    EventKind::ExecEnter {
        syscall: sc,
        dirfd,
        at_flags,
        filename,
        argv,
        argv_truncated,
    }
}

/// A prctl line's event: the option and arg2 (a signal name read as its number), PR_SET_NAME's
/// name, and what strace wrote (`shown`): the arguments as written, symbolic names kept
/// (printable ASCII up to [`MAX_SHOWN_ARGS`](crate::event::MAX_SHOWN_ARGS) bytes, else left
/// out), and a PR_GET_CHILD_SUBREAPER's `[N]` when the call returned 0.
fn prctl_args(args: &str, end: End) -> Option<EventKind> {
    use crate::event::{prctl_opt, PrctlShown, MAX_SHOWN_ARGS};
    let mut it = args::split_top(args);
    let option = crate::names::parse_prctl_option(it.next()?)?;
    let arg2_text = it.next().unwrap_or("0");
    let text = args.trim();
    let printable = text.bytes().all(|b| (0x20..=0x7e).contains(&b));
    let read = arg2_text
        .strip_prefix('[')
        .and_then(|r| r.strip_suffix(']'))
        .and_then(crate::names::parse_int)
        .and_then(|v| u64::try_from(v).ok())
        .filter(|_| option == prctl_opt::PR_GET_CHILD_SUBREAPER && end == End::Returned(Some(0)));
    let shown = PrctlShown {
        args: (printable && text.len() <= MAX_SHOWN_ARGS).then(|| text.to_owned()),
        read,
    };
    let shown = (shown.args.is_some() || read.is_some()).then(|| Box::new(shown));
    if option == prctl_opt::PR_SET_NAME {
        let name = args::parse_cstr(arg2_text).unwrap_or_default();
        return Some(EventKind::PrctlEnter {
            option,
            arg2: 0,
            name: Some(name),
            shown,
        });
    }
    let arg2 = crate::names::parse_int(arg2_text)
        .map(|v| v as u64)
        .or_else(|| args::parse_signal(arg2_text).map(u64::from))
        .unwrap_or(0);
    Some(EventKind::PrctlEnter {
        option,
        arg2,
        name: None,
        shown,
    })
}
