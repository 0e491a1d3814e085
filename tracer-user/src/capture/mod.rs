//! Live capture with the eBPF probes: load, configure, attach, follow, read the ring buffer.
//!
//! Build a capture with [`CaptureBuilder`] (which processes: [`Target`]; ring-buffer size;
//! which [`EventKindFilter`]s), then [`start`](CaptureBuilder::start) it. It returns once every
//! probe is attached (and, for a command target, the command is released to exec). Then either
//!
//! - turn it into an async [`Stream`](futures_core::Stream) of [`CaptureItem`]s with
//!   [`Capture::into_stream`]: decoded events in sequence order, plus [`Notice`]s when the
//!   ring buffer dropped events or the sequence has a gap, and when a followed target is gone;
//! - read the same items through a [`SourceLoop`], which keeps the capture at hand (its
//!   counters, the command's exit status); or
//! - pull raw batches yourself with [`Capture::next_batch`] / [`Capture::drain_now`], keeping
//!   access to the counters ([`Capture::drops`], [`Capture::followed_count`], ...). Raw
//!   batches carry no loss notices and are not enriched (no bundle metadata,
//!   `ContainerMeta`; no OOM victim's cgroup read from `/proc` on a kernel before 6.2): the
//!   loop adds them, from what the capture reports and its host ([`ProcHost`]).
//!
//! Capturing needs root (or `CAP_BPF` + `CAP_PERFMON`) and a tokio runtime with I/O enabled.
//!
//! ```no_run
//! # async fn demo() -> Result<(), tracer::CaptureError> {
//! use futures_util::StreamExt;
//! use tracer::{CaptureBuilder, CaptureItem, Engine, EventKindFilter, Target};
//!
//! let capture = CaptureBuilder::new(Target::Command(vec!["sh".into(), "-c".into(), "true".into()]))
//!     .kinds(&[EventKindFilter::Exec])
//!     .start()?;
//! let mut engine = Engine::new();
//! let mut items = std::pin::pin!(capture.into_stream());
//! while let Some(item) = items.next().await {
//!     match item? {
//!         CaptureItem::Event(ev) => engine.apply(&ev),
//!         CaptureItem::Notice(notice) => eprintln!("{notice}"),
//!     }
//! }
//! print!("{}", tracer::lineage::tree_text(&engine, Default::default()));
//! # Ok(()) }
//! ```

mod bundle;
pub mod cgroup;
mod host;
pub mod layout;
pub mod oom;
pub mod procfs;
pub mod signals;

use crate::decode::decode;
use crate::event::program::Installed;
use crate::event::{Event, EventKind};
use aya::maps::{MapData, PerCpuArray, RingBuf};
use aya::programs::{BtfTracePoint, RawTracePoint, TracePoint};
use aya::{Ebpf, EbpfLoader};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use tokio::io::unix::AsyncFd;
use tracer_common::tracepoints::{Group, Tracepoint, SCHED, SYSCALLS, TASK};
use tracer_common::{maps, ProbeConfig, DEFAULT_RING_BYTES};

pub use crate::source::{CaptureItem, Notice};
use crate::source::{Counters, EventSource, Followed, Host, SourceFacts, SourceLoop};
use host::KernelFollowed;
pub use host::ProcHost;
pub use layout::TracepointLayouts;
pub use signals::SignalSet;

/// The probe object built by build.rs (empty when built with `AYA_BUILD_SKIP=1`).
static PROBES: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/tracer"));

/// What went wrong starting or running a capture. Each variant renders as one line; match on
/// the variant to tell the cases apart (e.g. [`CaptureError::MissingPrivilege`] → suggest
/// `sudo`; [`CaptureError::KernelFeature`] → the kernel is too old or lacks BTF/tracefs).
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// Not root and without `CAP_BPF` + `CAP_PERFMON` (or `CAP_SYS_ADMIN`), or the kernel
    /// refused to create BPF maps. The text says what was missing and as whom we ran.
    #[error("missing privilege: {0}")]
    MissingPrivilege(String),
    /// The kernel lacks something the probes need: tracefs, a tracepoint or one of its
    /// fields, BTF (`/sys/kernel/btf/vmlinux`) or a `task_struct` field in it.
    #[error("kernel feature missing: {0}")]
    KernelFeature(String),
    /// This build has no probe object (built with `AYA_BUILD_SKIP=1` or without the BPF
    /// toolchain).
    #[error("this tracer was built without eBPF probes (AYA_BUILD_SKIP or no BPF toolchain); rebuild with `cargo xtask setup` done")]
    NoProbes,
    /// A probe program could not be loaded or attached.
    #[error("probe {program} failed to load: {message}")]
    ProbeLoad {
        /// The program's name in the probe object (`(object)` for the whole object).
        program: String,
        /// What failed.
        message: String,
        /// The kernel verifier's log, when the kernel rejected the program.
        verifier_log: Option<String>,
    },
    /// The command of a [`Target::Command`] could not be started.
    #[error("cannot start command `{command}`")]
    Spawn {
        /// The command line, joined with spaces.
        command: String,
        /// Why it could not start.
        #[source]
        source: std::io::Error,
    },
    /// The pid of a [`Target::Pid`] does not exist.
    #[error("no process with pid {0}")]
    NoSuchProcess(u32),
    /// Reading the ring buffer (or registering it with tokio) failed.
    #[error("ring buffer: {0}")]
    Io(#[from] std::io::Error),
    /// A BPF map was missing from the probe object or could not be used.
    #[error("BPF map {0}")]
    Map(String),
}

/// Groups of events a capture can select with [`CaptureBuilder::kinds`]. Each group is a set
/// of probes; unselected groups are not attached at all, so they cost nothing.
///
/// `sched_process_fork` and `sched_process_exit` are always attached: the lineage engine
/// needs every birth and every death ([`Fork`](crate::event::EventKind::Fork),
/// [`TaskExit`](crate::event::EventKind::TaskExit)) to keep the tree right.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventKindFilter {
    /// Clone flags of every birth (`task:task_newtask`); with
    /// [`CaptureBuilder::syscalls`] also clone, clone3, fork and vfork entries and returns
    /// ([`CloneEnter`](crate::event::EventKind::CloneEnter) and their
    /// [`SyscallExit`](crate::event::EventKind::SyscallExit)). Without it, `Fork` events carry
    /// no clone flags or syscall, so the engine cannot tell `CLONE_PARENT` births apart.
    Clone,
    /// Successful execs ([`Exec`](crate::event::EventKind::Exec)) with their argv
    /// ([`ExecEnter`](crate::event::EventKind::ExecEnter)); with [`CaptureBuilder::syscalls`]
    /// every execve/execveat entry and return (`SyscallExit`), failed ones too. Without it,
    /// processes keep the command line they were forked with and no roles are found.
    Exec,
    /// exit and exit_group calls ([`ExitEnter`](crate::event::EventKind::ExitEnter)); only
    /// with [`CaptureBuilder::syscalls`] (deaths and their status are always reported).
    Exit,
    /// `PR_SET_NAME` (`runc init` stages, from `task:task_rename`) as
    /// [`PrctlEnter`](crate::event::EventKind::PrctlEnter); with [`CaptureBuilder::syscalls`]
    /// every prctl call and its `SyscallExit`. Without syscall probes, `PR_SET_CHILD_SUBREAPER`
    /// is inferred at births and deaths, so it comes whatever the selection.
    Prctl,
    /// Generated signals ([`Signal`](crate::event::EventKind::Signal), the raw
    /// `signal:signal_generate` tracepoint), those of [`CaptureBuilder::signals`], sent by or
    /// to a traced process.
    Signal,
    /// The OOM killer's victims ([`OomVictim`](crate::event::EventKind::OomVictim),
    /// `oom:mark_victim`), with their memory cgroup and its limit.
    Oom,
}

impl EventKindFilter {
    /// Every group (the default).
    pub const ALL: [EventKindFilter; 6] = [
        EventKindFilter::Clone,
        EventKindFilter::Exec,
        EventKindFilter::Exit,
        EventKindFilter::Prctl,
        EventKindFilter::Signal,
        EventKindFilter::Oom,
    ];
}

/// Which processes to trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// This process and everything it creates from now on.
    Pid(u32),
    /// Start this command and follow it from its first instruction (like `strace CMD`).
    Command(Vec<String>),
    /// Every process on the host.
    All,
}

impl Target {
    /// Which processes a live view's seed ([`EventSource::seed`] of its capture) holds: the
    /// whole host when everything is followed, else the followed lineage.
    pub fn seed_scope(&self) -> procfs::SnapshotScope {
        match self {
            Target::All => procfs::SnapshotScope::All,
            Target::Pid(_) | Target::Command(_) => procfs::SnapshotScope::Followed,
        }
    }
}

/// Builder for a [`Capture`]: the target, the ring-buffer size and the event kinds.
#[derive(Clone, Debug)]
pub struct CaptureBuilder {
    target: Target,
    ring_bytes: u32,
    btf_path: std::path::PathBuf,
    kinds: Vec<EventKindFilter>,
    syscalls: bool,
    signals: SignalSet,
    snapshot: procfs::SnapshotScope,
}

impl CaptureBuilder {
    /// Where the kernel's BTF is read from unless [`CaptureBuilder::btf_path`] says otherwise.
    pub const DEFAULT_BTF: &'static str = "/sys/kernel/btf/vmlinux";

    /// A capture of `target` with the default ring buffer and every event kind.
    pub fn new(target: Target) -> Self {
        CaptureBuilder {
            target,
            ring_bytes: DEFAULT_RING_BYTES,
            btf_path: Self::DEFAULT_BTF.into(),
            kinds: EventKindFilter::ALL.to_vec(),
            syscalls: false,
            signals: SignalSet::Default,
            snapshot: procfs::SnapshotScope::Followed,
        }
    }

    /// Which processes the headers of [`EventSource::header`] snapshot (the followed ones and
    /// the container machinery unless told; the whole host for [`Target::All`] whatever this
    /// says).
    pub fn snapshot(mut self, scope: procfs::SnapshotScope) -> Self {
        self.snapshot = scope;
        self
    }

    /// Which signals [`EventKindFilter::Signal`] records ([`SignalSet::Default`] unless
    /// told): every signal generated on the host passes the probe, so the set is checked
    /// there, before anything is reserved. [`SignalSet::None`] leaves the probe detached.
    pub fn signals(mut self, set: SignalSet) -> Self {
        self.signals = set;
        self
    }

    /// Also attach the syscall tracepoints (off by default), for strace's detail: every
    /// clone/exec/exit/prctl call with its arguments and return value, failed execs, every
    /// prctl option. The price: while any syscall tracepoint is enabled the kernel takes its
    /// slower traced-syscall path for *every* syscall of every task on the host (about 10%
    /// on a syscall-bound process; see BENCHMARKS.md).
    ///
    /// Without them the lineage is the same: births with their clone flags
    /// (`task:task_newtask`), execs with argv (read from the new image at
    /// `sched_process_exec`), `PR_SET_NAME` (`task:task_rename`), deaths with exit codes, and
    /// `PR_SET_CHILD_SUBREAPER`, reported when the subreaper first creates a process.
    pub fn syscalls(mut self, on: bool) -> Self {
        self.syscalls = on;
        self
    }

    /// Captures only these groups of events (plus births and deaths, always: see
    /// [`EventKindFilter`]). The probes of the other groups are not attached. An empty slice
    /// keeps births and deaths only.
    pub fn kinds(mut self, kinds: &[EventKindFilter]) -> Self {
        self.kinds = kinds.to_vec();
        self
    }

    /// Ring-buffer size in bytes; rounded up to a power of two of at least one page.
    pub fn ring_bytes(mut self, bytes: u32) -> Self {
        let page = page_size();
        self.ring_bytes = bytes
            .max(page)
            .checked_next_power_of_two()
            .unwrap_or(1 << 31);
        self
    }

    /// Where to read the kernel's BTF (default `/sys/kernel/btf/vmlinux`), for the
    /// `task_struct` offsets the probes need.
    pub fn btf_path(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.btf_path = path.into();
        self
    }

    /// Loads and attaches the probes and starts following the target.
    ///
    /// Call it inside a tokio runtime with I/O enabled (it registers the ring buffer with
    /// the runtime's reactor, and panics without one, like any tokio I/O type).
    pub fn start(self) -> Result<Capture, CaptureError> {
        Capture::start(self)
    }
}

/// A close-on-exec pipe (read end, write end).
fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0i32; 2];
    // SAFETY: fds is a valid 2-element array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: pipe2 just returned these two fresh descriptors; each is owned once.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn page_size() -> u32 {
    // SAFETY: sysconf has no preconditions.
    let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if v > 0 {
        v as u32
    } else {
        4096
    }
}

/// Checks CAP_BPF + CAP_PERFMON (or CAP_SYS_ADMIN) before trying to load anything. By the
/// effective capability set, not the uid: root in a container started with `--cap-drop=ALL`
/// has uid 0 and none of them.
pub fn check_privileges() -> Result<(), CaptureError> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let missing = missing_capabilities(&status);
    if missing.is_empty() {
        return Ok(());
    }
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    Err(CaptureError::MissingPrivilege(format!(
        "loading eBPF probes needs {} (uid {uid} has not; as a user: sudo; in a container: add the capability)",
        missing.join(" and ")
    )))
}

/// Why pod names may be missing, when this process lacks CAP_SYS_PTRACE (and CAP_SYS_ADMIN is
/// no substitute here): the runtimes' bundles are read through `/proc/PID/root` and `cwd`,
/// and other processes' `/proc/PID/exe` and namespace links, which `ptrace_may_access`
/// (kernel/ptrace.c) refuses to a reader whose capabilities are not a superset of the
/// target's unless it has CAP_SYS_PTRACE.
pub fn ptrace_note() -> Option<String> {
    const CAP_SYS_PTRACE: u64 = 1 << 19;
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    (effective_capabilities(&status) & CAP_SYS_PTRACE == 0).then(|| {
        "no CAP_SYS_PTRACE: runtimes' bundles and other processes' /proc links are unreadable, \
         so pod and container names and executables may be missing"
            .to_string()
    })
}

/// `CapEff` of a `/proc/PID/status` text (0 when absent).
fn effective_capabilities(status: &str) -> u64 {
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .unwrap_or(0)
}

/// The capabilities the probes need that `/proc/self/status`'s `CapEff` lacks: CAP_BPF to
/// load programs and maps, CAP_PERFMON to attach tracepoints (include/linux/capability.h:
/// `bpf_capable`, `perfmon_capable`), both implied by CAP_SYS_ADMIN.
pub fn missing_capabilities(status: &str) -> Vec<&'static str> {
    const CAP_SYS_ADMIN: u64 = 1 << 21;
    const CAP_PERFMON: u64 = 1 << 38;
    const CAP_BPF: u64 = 1 << 39;
    let eff = effective_capabilities(status);
    if eff & CAP_SYS_ADMIN != 0 {
        return Vec::new();
    }
    [(CAP_BPF, "CAP_BPF"), (CAP_PERFMON, "CAP_PERFMON")]
        .into_iter()
        .filter(|(bit, _)| eff & bit == 0)
        .map(|(_, name)| name)
        .collect()
}

/// RLIMIT_MEMLOCK only matters before kernel 5.11 (memcg accounting since); a failed raise
/// is a note, never an error.
fn raise_memlock() {
    let lim = libc::rlimit {
        rlim_cur: libc::RLIM_INFINITY,
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: valid pointer to an initialized rlimit.
    if unsafe { libc::setrlimit(libc::RLIMIT_MEMLOCK, &lim) } != 0 {
        log::debug!("note: could not raise RLIMIT_MEMLOCK (not needed on kernel >= 5.11)");
    }
}

/// How often the reader drains the ring without a wakeup: the latency of a quiet stream.
/// The same as the callers' tick (`DriveOpts::tick`), so both timers fire in one wakeup of
/// an idle tracer, not two.
pub const POLL: std::time::Duration = std::time::Duration::from_millis(100);

/// Whether the kernel refused with EPERM somewhere down `e`'s causes (a map it would not
/// create: no CAP_BPF, or a lockdown).
fn refused_for_privilege(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(e);
    while let Some(c) = cause {
        let io = c.downcast_ref::<std::io::Error>();
        if io.and_then(std::io::Error::raw_os_error) == Some(libc::EPERM) {
            return true;
        }
        cause = c.source();
    }
    false
}

impl EventKindFilter {
    /// The probes' group this choice selects.
    fn group(self) -> Group {
        match self {
            EventKindFilter::Clone => Group::Clone,
            EventKindFilter::Exec => Group::Exec,
            EventKindFilter::Exit => Group::Exit,
            EventKindFilter::Prctl => Group::Prctl,
            EventKindFilter::Signal => Group::Signal,
            EventKindFilter::Oom => Group::Oom,
        }
    }
}

/// Whether `p` is attached for the `kinds` chosen.
fn selected(p: &Tracepoint, kinds: &[EventKindFilter]) -> bool {
    p.group.is_none_or(|g| kinds.iter().any(|k| k.group() == g))
}

/// Why this kernel cannot run without syscall probes, if it cannot (`cfg` filled by
/// [`layout::tracepoint_offsets`] and [`layout::btf_offsets`]).
pub fn task_probes_missing(cfg: &ProbeConfig) -> Option<&'static str> {
    use tracer_common::NO_OFFSET;
    [
        (
            cfg.newtask_flags,
            "tracepoint task:task_newtask (clone_flags)",
        ),
        (cfg.rename_pid, "tracepoint task:task_rename (pid)"),
        (cfg.rename_newcomm, "tracepoint task:task_rename (newcomm)"),
        (cfg.task_mm, "BTF task_struct.mm"),
        (cfg.mm_arg_start, "BTF mm_struct.arg_start"),
        (cfg.mm_arg_end, "BTF mm_struct.arg_end"),
        (cfg.task_in_execve_bit, "BTF task_struct.in_execve"),
        (
            cfg.signal_subreaper_bit,
            "BTF signal_struct.is_child_subreaper",
        ),
        (
            cfg.signal_has_subreaper_bit,
            "BTF signal_struct.has_child_subreaper",
        ),
        (cfg.task_comm, "BTF task_struct.comm"),
        (cfg.task_flags, "BTF task_struct.flags"),
    ]
    .into_iter()
    .find(|(off, _)| *off == NO_OFFSET)
    .map(|(_, what)| what)
}

/// A running capture. Dropping it detaches every probe (and kills a command it started
/// that is still gated).
pub struct Capture {
    ebpf: Ebpf,
    ring: AsyncFd<RingBuf<MapData>>,
    target: Target,
    child: Option<std::process::Child>,
    child_pid: Option<u32>,
    layouts: TracepointLayouts,
    notes: Vec<String>,
    syscalls: bool,
    decode_errors: u64,
    /// The followed set, mirrored into the probes' map (which the probes keep at births and
    /// deaths); read from the stream in follow mode.
    followed: Followed<KernelFollowed>,
    /// What the loop's enrichment stage reads: this host's `/proc`.
    host: ProcHost,
    /// The runtimes' installed files, read at the start: what program each exec runs.
    programs: Installed,
    /// The command's pidfd, readable once it exited: the reader drains at once then.
    child_exit: Option<AsyncFd<OwnedFd>>,
    /// The ring buffer's size, for a recording's header.
    ring_bytes: u32,
    /// Which processes a header's snapshot holds.
    snapshot: procfs::SnapshotScope,
    /// The attached probes (detached together on drop).
    links: Vec<Link>,
    _logger: Option<tokio::task::JoinHandle<()>>,
}

/// What fails before anything is loaded: privileges, a build without probes, a pid that is
/// not there.
fn preflight(b: &CaptureBuilder) -> Result<(), CaptureError> {
    check_privileges()?;
    if PROBES.is_empty() {
        return Err(CaptureError::NoProbes);
    }
    if let Target::Pid(pid) = b.target {
        if !Path::new(&format!("/proc/{pid}")).exists() {
            return Err(CaptureError::NoSuchProcess(pid));
        }
    }
    Ok(())
}

/// The probes' load-time configuration: mode, this kernel's tracepoint and BTF offsets, the
/// probe set (syscall probes when asked, or when a task-tracepoint field is missing), the
/// reported cgroup hierarchy. Returns it with the tracefs layouts read.
fn configure(
    b: &CaptureBuilder,
    notes: &mut Vec<String>,
) -> Result<(ProbeConfig, TracepointLayouts), CaptureError> {
    let mut cfg = ProbeConfig::EMPTY;
    cfg.follow_all = u32::from(b.target == Target::All);
    cfg.self_tgid = std::process::id();
    // Wake the reader when a quarter of the ring is used; otherwise it polls every POLL.
    cfg.wakeup_bytes = b.ring_bytes / 4;
    let root = layout::tracefs_root()?;
    let layouts = layout::tracepoint_offsets(&root, &mut cfg)?;
    layout::btf_offsets(&b.btf_path, &mut cfg)?;
    let mut syscalls = b.syscalls;
    if !syscalls {
        if let Some(what) = task_probes_missing(&cfg) {
            notes.push(format!("{what} missing: using syscall probes instead"));
            syscalls = true;
        }
    }
    cfg.no_syscall_probes = u32::from(!syscalls);
    if let Some(h) = cgroup::reported() {
        cfg.cgroup_hierarchy = h.id;
    }
    cfg.signal_mask = b.signals.mask();
    // Mount namespace inodes are 32-bit in the kernel (ns_common::inum).
    cfg.host_mntns = procfs::HostNs::of(std::path::Path::new("/proc")).mnt as u32;
    Ok((cfg, layouts))
}

/// Loads the probe object with `cfg` and the ring size. The kernel refusing a map with EPERM
/// is a missing privilege; anything else is a load failure.
fn load<'a>(
    loader: &mut EbpfLoader<'a>,
    cfg: &'a ProbeConfig,
    ring_bytes: u32,
) -> Result<Ebpf, CaptureError> {
    loader
        .override_global(maps::CONFIG, cfg, true)
        .map_max_entries(maps::EVENTS, ring_bytes)
        .load(PROBES)
        .map_err(|e| {
            let message = e.to_string();
            if refused_for_privilege(&e) {
                CaptureError::MissingPrivilege(format!(
                    "the kernel refused to load BPF maps: {message}"
                ))
            } else {
                CaptureError::ProbeLoad {
                    program: "(object)".into(),
                    message,
                    verifier_log: None,
                }
            }
        })
}

/// aya-log's reader: the logger must stay alive and be drained, or loading fails. Without it
/// the capture goes on (a note says so).
fn drain_probe_log(
    ebpf: &mut Ebpf,
    notes: &mut Vec<String>,
) -> Option<tokio::task::JoinHandle<()>> {
    let fd = aya_log::EbpfLogger::init(ebpf)
        .map_err(|e| e.to_string())
        .and_then(|logger| readable_fd(logger).map_err(|e| e.to_string()));
    match fd {
        Ok(mut fd) => Some(tokio::spawn(async move {
            while let Ok(mut guard) = fd.readable_mut().await {
                guard.get_inner_mut().flush();
                guard.clear_ready();
            }
        })),
        Err(e) => {
            notes.push(format!("probe log unavailable: {e}"));
            None
        }
    }
}

/// Attaches the fork probe, then every probe of the set whose kind is selected (the signal
/// probe when `signals` too); a required one that fails detaches the others and fails, an
/// optional one is a note.
/// `sets`: syscall probes, signals, and the raw mark_victim (the victim task handed over:
/// [`layout::raw_oom_ready`]) instead of the classic one. A row's typed program is tried
/// before its classic one (the exec's only where the kernel's BTF gave the binprm's name).
fn attach_probes(
    ebpf: &mut Ebpf,
    kinds: &[EventKindFilter],
    sets: (bool, bool, bool),
    cfg: &ProbeConfig,
    notes: &mut Vec<String>,
) -> Result<Vec<Link>, CaptureError> {
    let (syscalls, signals, raw_oom) = sets;
    let extra = if syscalls { SYSCALLS } else { TASK };
    let mut links = vec![attach_fork(ebpf, notes)?];
    let mut btf = None;
    for p in SCHED.iter().chain(extra) {
        if !selected(p, kinds) {
            continue;
        }
        let exec_ok =
            p.name != "sched_process_exec" || cfg.bprm_filename != tracer_common::NO_OFFSET;
        if p.typed && exec_ok {
            if let Some(link) = attach_typed(ebpf, p.name, &mut btf, notes) {
                links.push(link);
                continue;
            }
        }
        if p.name == "mark_victim" && raw_oom {
            match attach_raw(ebpf, "mark_victim_raw", "mark_victim") {
                Ok(link) => {
                    links.push(link);
                    continue;
                }
                Err(e) => notes.push(format!(
                    "raw tracepoint mark_victim not attached ({e}): OOM victims' cgroups read from /proc"
                )),
            }
        }
        match attach(ebpf, p.name, p.category, p.name) {
            Ok(link) => links.push(link),
            Err(e) if p.required => {
                detach_all(links);
                return Err(e);
            }
            Err(e) => notes.push(format!(
                "optional tracepoint {}:{} not attached: {e}",
                p.category, p.name
            )),
        }
    }
    if signals && kinds.contains(&EventKindFilter::Signal) {
        match attach_raw(ebpf, "signal_generate", "signal_generate") {
            Ok(link) => links.push(link),
            Err(e) => notes.push(format!(
                "raw tracepoint signal_generate not attached ({e}): no signals"
            )),
        }
    }
    Ok(links)
}

/// The ring buffer, registered with tokio.
fn take_ring(ebpf: &mut Ebpf) -> Result<AsyncFd<RingBuf<MapData>>, CaptureError> {
    let ring = ebpf.take_map(maps::EVENTS).ok_or_else(|| {
        CaptureError::Map(format!("{} missing from the probe object", maps::EVENTS))
    })?;
    let ring =
        RingBuf::try_from(ring).map_err(|e| CaptureError::Map(format!("{}: {e}", maps::EVENTS)))?;
    Ok(readable_fd(ring)?)
}

/// A pidfd for `pid` (Linux 5.3+), readable once the process exits.
fn pidfd(pid: u32) -> Option<AsyncFd<OwnedFd>> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    if fd < 0 {
        return None;
    }
    // SAFETY: the syscall just returned this fresh descriptor; it is owned once.
    let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
    readable_fd(fd).ok()
}

impl Capture {
    fn start(b: CaptureBuilder) -> Result<Capture, CaptureError> {
        preflight(&b)?;
        raise_memlock();
        // aya parses the kernel's BTF for its own use when the loader is made: on another
        // core, while the offsets are read here.
        let loader = std::thread::spawn(EbpfLoader::new);
        let mut notes = Vec::new();
        let (cfg, layouts) = configure(&b, &mut notes)?;
        let syscalls = cfg.no_syscall_probes == 0;
        let mut loader = loader.join().map_err(|_| CaptureError::ProbeLoad {
            program: "(object)".into(),
            message: "the loader thread panicked".into(),
            verifier_log: None,
        })?;
        let mut ebpf = load(&mut loader, &cfg, b.ring_bytes)?;
        let logger = drain_probe_log(&mut ebpf, &mut notes);
        let signals = cfg.signal_mask != 0;
        let raw_oom = layout::raw_oom_ready(&cfg);
        let sets = (syscalls, signals, raw_oom);
        let links = attach_probes(&mut ebpf, &b.kinds, sets, &cfg, &mut notes)?;
        let ring = take_ring(&mut ebpf)?;
        let followed = Followed::new(KernelFollowed::take(&mut ebpf)?);
        let mut cap = Capture {
            ebpf,
            ring,
            target: b.target.clone(),
            child: None,
            child_pid: None,
            layouts,
            notes,
            syscalls,
            decode_errors: 0,
            followed,
            host: ProcHost::new(),
            programs: procfs::installed_programs(),
            child_exit: None,
            ring_bytes: b.ring_bytes,
            snapshot: b.snapshot,
            links,
            _logger: logger,
        };
        match &b.target {
            Target::Pid(pid) => cap.follow(*pid)?,
            Target::Command(argv) => cap.spawn_followed(argv)?,
            Target::All => {}
        }
        Ok(cap)
    }

    /// Adds a tgid to the followed set (follow mode).
    pub fn follow(&mut self, tgid: u32) -> Result<(), CaptureError> {
        self.followed.follow(tgid)
    }

    /// Whether this capture follows chosen processes (not [`Target::All`]).
    fn following(&self) -> bool {
        self.target != Target::All
    }

    /// Follow mode: every followed process is gone. Known from the events read so far; the
    /// BPF map confirms an empty set (a birth whose event is still in the ring), and is asked
    /// once a second after events were lost (a death may be among them; the drop counter is
    /// a syscall too, asked only then).
    pub fn target_gone(&self) -> bool {
        self.following() && self.followed.gone(|| self.drops() > 0)
    }

    /// Number of tgids currently followed (0 once every followed process has exited). Walks
    /// the BPF map, one syscall per key: [`Capture::target_gone`] is the cheap question.
    pub fn followed_count(&self) -> usize {
        self.followed.count()
    }

    /// Starts `argv` held at a gate, follows its pid, then lets it exec: nothing it does is missed.
    ///
    /// std's spawn only returns after the child has exec'd, so the child reports its own pid
    /// over a pipe from its pre-exec hook while a helper thread sits in spawn.
    fn spawn_followed(&mut self, argv: &[String]) -> Result<(), CaptureError> {
        let command = argv.join(" ");
        let spawn_err = |source| CaptureError::Spawn {
            command: command.clone(),
            source,
        };
        let (prog, args) = argv
            .split_first()
            .ok_or_else(|| spawn_err(std::io::Error::other("empty command")))?;
        let (gate_r, gate_w) = pipe().map_err(spawn_err)?;
        let (pid_r, pid_w) = pipe().map_err(spawn_err)?;
        let (gr, gw, pw) = (gate_r.as_raw_fd(), gate_w.as_raw_fd(), pid_w.as_raw_fd());
        let mut cmd = std::process::Command::new(prog);
        cmd.args(args);
        // SAFETY: the hook only calls async-signal-safe functions (close, getpid, write, read, _exit).
        unsafe {
            cmd.pre_exec(move || {
                libc::close(gw);
                let pid = libc::getpid();
                if libc::write(pw, (&pid as *const i32).cast(), 4) != 4 {
                    libc::_exit(127);
                }
                libc::close(pw);
                let mut b = 0u8;
                // Wait until the tracer follows our pid; EOF means it gave up: never run untraced.
                if libc::read(gr, (&mut b as *mut u8).cast(), 1) != 1 {
                    libc::_exit(127);
                }
                Ok(())
            });
        }
        // The thread keeps the child's pipe ends open until the fork has surely happened.
        let spawner = std::thread::spawn(move || {
            let res = cmd.spawn();
            drop((pid_w, gate_r));
            res
        });
        let mut buf = [0u8; 4];
        // SAFETY: reading into a valid 4-byte buffer from our own pipe.
        let n = unsafe { libc::read(pid_r.as_raw_fd(), buf.as_mut_ptr().cast(), 4) };
        let followed = if n == 4 {
            let pid = i32::from_ne_bytes(buf) as u32;
            self.follow(pid).map(|()| pid)
        } else {
            Err(CaptureError::Spawn {
                command: command.clone(),
                source: std::io::Error::other("child did not start"),
            })
        };
        if followed.is_ok() {
            // SAFETY: writing one byte from a valid buffer to our own pipe.
            unsafe { libc::write(gate_w.as_raw_fd(), [1u8].as_ptr().cast(), 1) };
        }
        // Closing the gate unreleased makes the child _exit(127) instead of running untraced.
        drop(gate_w);
        let child = spawner
            .join()
            .map_err(|_| spawn_err(std::io::Error::other("spawn thread panicked")))?
            .map_err(spawn_err)?;
        let pid = followed?;
        self.child_pid = Some(pid);
        self.child_exit = pidfd(pid);
        self.child = Some(child);
        Ok(())
    }

    /// Waits until the ring buffer has a batch (the probes wake the reader only when a
    /// quarter of the ring is used) or [`POLL`] has passed, then appends every available
    /// event to `out`, sorted by sequence number. Undecodable records are counted, not fatal.
    pub async fn next_batch(&mut self, out: &mut Vec<Event>) -> Result<(), CaptureError> {
        let start = out.len();
        let child_exit = self.child_exit.as_ref();
        let exited = async {
            match child_exit {
                Some(fd) => fd.readable().await.map(|_| ()),
                None => std::future::pending().await,
            }
        };
        let errors = tokio::select! {
            r = tokio::time::timeout(POLL, self.ring.readable_mut()) => match r {
                Ok(guard) => {
                    let mut guard = guard?;
                    let errors = drain(guard.get_inner_mut(), out);
                    guard.clear_ready();
                    errors
                }
                Err(_) => drain(self.ring.get_mut(), out),
            },
            // The command is gone: its exit record is in the ring already (the probe ran in
            // do_exit, before the pidfd became readable); read it now, not at the next poll.
            _ = exited => {
                self.child_exit = None;
                drain(self.ring.get_mut(), out)
            }
        };
        self.decode_errors += errors;
        self.observe(out, start);
        Ok(())
    }

    /// Bookkeeping for events just read: each exec's program judged by its file, the followed
    /// set.
    fn observe(&mut self, out: &mut [Event], start: usize) {
        for ev in &mut out[start..] {
            // No runtime file seen at all (a root the host's files are not in): nothing to
            // judge by, so the exec stays unjudged, as before judgments.
            if let (EventKind::Exec { cred: Some(c), .. }, false) =
                (&mut ev.kind, self.programs.is_empty())
            {
                c.program = c.exe.map(|x| self.programs.program_of(&x));
            }
        }
        if self.following() {
            self.followed.observe(&out[start..]);
        }
    }

    /// Appends whatever is in the ring buffer now, without waiting (for the final drain).
    pub fn drain_now(&mut self, out: &mut Vec<Event>) {
        let start = out.len();
        let errors = drain(self.ring.get_mut(), out);
        self.decode_errors += errors;
        self.observe(out, start);
    }

    /// Events lost to a full ring buffer (sum of the per-CPU counters).
    pub fn drops(&self) -> u64 {
        let Some(map) = self.ebpf.map(maps::DROPS) else {
            return 0;
        };
        match PerCpuArray::<_, u64>::try_from(map) {
            Ok(a) => a.get(&0, 0).map(|v| v.iter().sum()).unwrap_or(0),
            Err(_) => 0,
        }
    }

    /// Sequence numbers handed out so far: every event emitted or dropped takes one.
    pub fn seq_issued(&self) -> u64 {
        let Some(map) = self.ebpf.map(maps::SEQ) else {
            return 0;
        };
        match aya::maps::Array::<_, u64>::try_from(map) {
            Ok(a) => a.get(&0, 0).unwrap_or(0),
            Err(_) => 0,
        }
    }

    /// Ring-buffer records that could not be decoded (logged and skipped).
    pub fn decode_errors(&self) -> u64 {
        self.decode_errors
    }

    /// The command this capture started ([`Target::Command`]), as the engine's seed: the
    /// tracer's child, held before its exec until it was followed, so no probe saw its birth.
    pub fn launched_process(&self) -> Option<crate::event::SnapshotProcess> {
        let Target::Command(argv) = &self.target else {
            return None;
        };
        let pid = self.child_pid?;
        let me = procfs::read_process(Path::new("/proc"), std::process::id());
        Some(crate::event::SnapshotProcess {
            pid,
            ppid: std::process::id(),
            comm: me.as_ref().map(|m| m.comm.clone()).unwrap_or_default(),
            exe: None,
            argv: argv.clone(),
            threads: vec![pid],
            subreaper: false,
            ns: me.as_ref().and_then(|m| m.ns),
            launched: true,
            cgroup: me.as_ref().and_then(|m| m.cgroup.clone()),
            // Its credentials are the tracer's until its exec reports its own.
            uid: me.map_or(u32::MAX, |m| m.uid),
            cred: None,
        })
    }

    /// The command's pid, for a [`Target::Command`].
    pub fn child_pid(&self) -> Option<u32> {
        self.child_pid
    }

    /// The command started for a [`Target::Command`], to wait on.
    pub fn child_mut(&mut self) -> Option<&mut std::process::Child> {
        self.child.as_mut()
    }

    /// What this capture follows.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// tracefs layouts the probes were configured with.
    pub fn layouts(&self) -> &TracepointLayouts {
        &self.layouts
    }

    /// Non-fatal things noticed while starting (optional tracepoints missing, ...).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Whether the syscall tracepoints are attached ([`CaptureBuilder::syscalls`], or
    /// because this kernel lacks what the probes need without them).
    pub fn syscall_probes(&self) -> bool {
        self.syscalls
    }

    /// `sched` or `sched+syscalls`: the probe set, as trace headers record it.
    pub fn probe_set(&self) -> &'static str {
        crate::tracefile::probe_set_name(self.syscalls)
    }
}

impl Capture {
    /// Ends the capture without waiting for the kernel to detach the probes: a forked child
    /// keeps only the probes' descriptors, closes them and exits, while this process goes on
    /// at once (each perf-event tracepoint takes an RCU grace period, under a kernel mutex, to
    /// detach: ~40 ms apiece, 200 ms in all). For a command-line tool about to exit; the
    /// probes stay attached, with nothing followed, until the child is done. Falls back to
    /// detaching here if the child cannot be made.
    pub fn release_in_background(mut self) {
        let keep = probe_fds();
        let links = std::mem::take(&mut self.links);
        let max_fd = max_fd();
        // The child closes its copies once ours are closed (EOF here), so its are the last.
        let Ok((ready_r, ready_w)) = pipe() else {
            detach_all(links);
            return;
        };
        let r = ready_r.as_raw_fd();
        // SAFETY: the child only calls async-signal-safe functions (close, read, _exit) on
        // data prepared before the fork.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            for fd in (0..=max_fd).filter(|fd| *fd != r && !keep.contains(fd)) {
                // SAFETY: closing descriptors of this child's own table.
                unsafe { libc::close(fd) };
            }
            let mut b = 0u8;
            // SAFETY: reading into a valid byte from our own pipe; then closing our own
            // descriptors and exiting without destructors or atexit handlers.
            unsafe {
                libc::read(r, (&mut b as *mut u8).cast(), 1);
                for &fd in &keep {
                    libc::close(fd);
                }
                libc::_exit(0)
            }
        }
        drop(ready_r);
        if pid < 0 {
            detach_all(links);
            return;
        }
        drop(links);
        drop(self);
        drop(ready_w);
    }
}

/// This process's descriptors of BPF objects and perf events (what holds the probes).
fn probe_fds() -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else {
        return Vec::new();
    };
    let mut fds: Vec<i32> = dir
        .flatten()
        .filter(|e| {
            std::fs::read_link(e.path()).is_ok_and(|t| {
                let t = t.to_string_lossy();
                t.starts_with("anon_inode:bpf") || t == "anon_inode:[perf_event]"
            })
        })
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    fds.sort_unstable();
    fds
}

/// The highest descriptor number this process may have open.
fn max_fd() -> i32 {
    let highest = std::fs::read_dir("/proc/self/fd")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .max();
    highest.unwrap_or(1024) + 64
}

impl Drop for Capture {
    fn drop(&mut self) {
        detach_all(std::mem::take(&mut self.links));
    }
}

/// The trace-file header of a live capture of `target`: host, mode, ring size, and the /proc
/// snapshot of the processes that exist now, of `scope` (read it before the probes attach:
/// whatever starts in between shows up as a placeholder when it first acts). What only the
/// started capture knows is added by [`SourceFacts::add_to`].
pub fn header_for(
    target: &Target,
    ring_bytes: u32,
    scope: procfs::SnapshotScope,
) -> crate::tracefile::Header {
    use crate::tracefile::{CaptureMode, Header};
    let mode = match target {
        Target::Pid(p) => CaptureMode::Pid(*p),
        Target::All => CaptureMode::All,
        Target::Command(argv) => CaptureMode::Command(argv.clone()),
    };
    let (scope, snap) = scoped_snapshot(target, scope);
    let mut header = Header::for_this_host(mode);
    header.snapshot = snap.iter().map(Into::into).collect();
    header
        .extra
        .push(("ring_bytes".into(), ring_bytes.to_string()));
    header.set_snapshot_scope(scope);
    header
}

/// The /proc snapshot of `scope` around what `target` follows, and the scope it has: `--all`
/// follows the whole host, so its snapshot is too. A command is not started yet when its
/// header is read: its lineage is this process's.
fn scoped_snapshot(
    target: &Target,
    scope: procfs::SnapshotScope,
) -> (procfs::SnapshotScope, Vec<crate::event::SnapshotProcess>) {
    use procfs::SnapshotScope;
    let followed = match (scope, target) {
        (SnapshotScope::All, _) | (_, Target::All) => {
            return (SnapshotScope::All, procfs::snapshot())
        }
        (SnapshotScope::Followed, Target::Pid(pid)) => *pid,
        (SnapshotScope::Followed, Target::Command(_)) => std::process::id(),
    };
    let snap = procfs::followed_scope(procfs::snapshot(), followed, true);
    (SnapshotScope::Followed, snap)
}

impl EventSource for Capture {
    type Error = CaptureError;
    fn next_batch(
        &mut self,
        out: &mut Vec<Event>,
    ) -> impl std::future::Future<Output = Result<(), CaptureError>> + Send {
        Capture::next_batch(self, out)
    }
    fn drain_now(&mut self, out: &mut Vec<Event>) {
        Capture::drain_now(self, out)
    }
    fn counters(&self) -> Counters {
        Counters {
            drops: self.drops(),
            seq_issued: self.seq_issued(),
            decode_errors: self.decode_errors(),
        }
    }
    fn following(&self) -> bool {
        Capture::following(self)
    }
    fn target_gone(&self) -> bool {
        Capture::target_gone(self)
    }
    fn followed_count(&self) -> usize {
        Capture::followed_count(self)
    }
    fn follow(&mut self, pid: u32) -> Result<(), CaptureError> {
        Capture::follow(self, pid)
    }
    fn processes(&self) -> Vec<crate::event::SnapshotProcess> {
        procfs::snapshot()
    }
    fn header(&self) -> crate::tracefile::Header {
        let mut h = header_for(&self.target, self.ring_bytes, self.snapshot);
        self.facts().add_to(&mut h);
        h
    }
    fn facts(&self) -> SourceFacts {
        SourceFacts {
            layouts: self.layouts.formats.clone(),
            launched: self.launched_process(),
            probes: self.probe_set().into(),
            notes: self.notes.clone(),
        }
    }
    fn host(&self) -> Option<&dyn Host> {
        Some(&self.host)
    }
    // The scope a recording's header calls `followed` (its `snapshot` key, which the
    // viewer's `w` writes too): the followed lineage and the container machinery.
    fn seed(&self) -> Vec<crate::event::SnapshotProcess> {
        match &self.target {
            Target::All => procfs::snapshot(),
            Target::Pid(pid) => procfs::followed_scope(procfs::snapshot(), *pid, true),
            // Its descendants come from the events (it started after the probes).
            Target::Command(_) => match self.child_pid {
                Some(pid) => {
                    let mut seed = procfs::followed_scope(procfs::snapshot(), pid, false);
                    seed.retain(|p| p.pid != pid);
                    seed.extend(self.launched_process());
                    seed
                }
                None => Vec::new(),
            },
        }
    }
    fn target_ended(&mut self) {
        // Reap the command (its status stays readable through `child_mut`).
        if let Some(child) = self.child_mut() {
            let _ = child.try_wait();
        }
    }
}

impl Capture {
    /// Turns the capture into an async stream of events and loss notices.
    ///
    /// Events come in sequence order within each batch the ring buffer yields (see
    /// [`next_batch`](Capture::next_batch)); a [`Notice::Gap`] precedes an event when
    /// sequence numbers are missing before it, and a [`Notice::Drops`] follows a batch after
    /// which the kernel's drop counter grew.
    ///
    /// For a [`Target::Pid`] or [`Target::Command`] the stream ends once every followed
    /// process has exited (like `strace -f`), with [`Notice::TargetGone`] last; for
    /// [`Target::All`] it never ends by itself. Dropping the stream detaches the probes.
    /// After an error the stream ends. ([`SourceLoop`] is the same, keeping the capture at
    /// hand.)
    ///
    /// Poll it inside a tokio runtime with I/O and time enabled; pin it
    /// (`std::pin::pin!`) to call `StreamExt::next` on it.
    pub fn into_stream(
        self,
    ) -> impl futures_core::Stream<Item = Result<CaptureItem, CaptureError>> {
        futures_util::stream::unfold(SourceLoop::new(self), |mut lp| async move {
            let item = lp.next().await?;
            Some((item, lp))
        })
    }
}

/// Registers an fd-owning value with tokio for readability.
fn readable_fd<T: AsRawFd>(inner: T) -> std::io::Result<AsyncFd<T>> {
    // SAFETY: `inner` owns the fd and moves into the AsyncFd, so the fd stays open for as
    // long as it is registered.
    unsafe { AsyncFd::register_with_interest(inner, tokio::io::Interest::READABLE) }
        .map_err(|e| e.into())
}

/// Decodes every available record into `out`, sorted by sequence number within the batch
/// (sequence numbers are taken on several CPUs). Returns the number of undecodable records.
fn drain(ring: &mut RingBuf<MapData>, out: &mut Vec<Event>) -> u64 {
    let start = out.len();
    let mut errors = 0;
    while let Some(item) = ring.next() {
        match decode(&item) {
            Ok(ev) => out.push(ev),
            Err(e) => {
                errors += 1;
                log::warn!("undecodable record: {e}");
            }
        }
    }
    out[start..].sort_by_key(|e| e.seq);
    errors
}

/// The program `prog` of the object, as program type `P`.
fn program<'a, P>(ebpf: &'a mut Ebpf, prog: &str) -> Result<&'a mut P, CaptureError>
where
    &'a mut P: TryFrom<&'a mut aya::programs::Program, Error = aya::programs::ProgramError>,
{
    ebpf.program_mut(prog)
        .ok_or_else(|| CaptureError::ProbeLoad {
            program: prog.into(),
            message: "not in the probe object".into(),
            verifier_log: None,
        })?
        .try_into()
        .map_err(|e: aya::programs::ProgramError| load_error(prog, e))
}

fn load_error(prog: &str, e: aya::programs::ProgramError) -> CaptureError {
    let verifier_log = match &e {
        aya::programs::ProgramError::LoadError { verifier_log, .. } => {
            Some(verifier_log.to_string())
        }
        _ => None,
    };
    CaptureError::ProbeLoad {
        program: prog.into(),
        message: e.to_string(),
        verifier_log,
    }
}

fn attach_error(prog: &str, what: &str, e: aya::programs::ProgramError) -> CaptureError {
    CaptureError::ProbeLoad {
        program: prog.into(),
        message: format!("attach to {what}: {e}"),
        verifier_log: None,
    }
}

/// An attached probe, owned: dropping it detaches it.
type Link = Box<dyn Send>;

fn attach(ebpf: &mut Ebpf, prog: &str, cat: &str, name: &str) -> Result<Link, CaptureError> {
    let program: &mut TracePoint = program(ebpf, prog)?;
    program.load().map_err(|e| load_error(prog, e))?;
    let id = program
        .attach(cat, name)
        .map_err(|e| attach_error(prog, &format!("{cat}:{name}"), e))?;
    let link = program.take_link(id).map_err(|e| load_error(prog, e))?;
    Ok(Box::new(link))
}

fn attach_raw(ebpf: &mut Ebpf, prog: &str, name: &str) -> Result<Link, CaptureError> {
    let program: &mut RawTracePoint = program(ebpf, prog)?;
    program.load().map_err(|e| load_error(prog, e))?;
    let id = program
        .attach(name)
        .map_err(|e| attach_error(prog, &format!("raw tracepoint {name}"), e))?;
    let link = program.take_link(id).map_err(|e| load_error(prog, e))?;
    Ok(Box::new(link))
}

/// The typed (tp_btf) program of tracepoint `name`, `{name}_btf`, attached; `None` with a
/// note when this kernel refuses it (the classic one is attached instead). `btf`: the
/// kernel's BTF, read at the first call.
fn attach_typed(
    ebpf: &mut Ebpf,
    name: &str,
    btf: &mut Option<Result<aya::Btf, String>>,
    notes: &mut Vec<String>,
) -> Option<Link> {
    let btf = btf.get_or_insert_with(|| aya::Btf::from_sys_fs().map_err(|e| e.to_string()));
    let attached = match btf {
        Ok(btf) => {
            let prog = format!("{name}_btf");
            program::<BtfTracePoint>(ebpf, &prog).and_then(|program| {
                program.load(name, btf).map_err(|e| load_error(&prog, e))?;
                let id = program
                    .attach()
                    .map_err(|e| attach_error(&prog, &format!("tp_btf {name}"), e))?;
                let link = program.take_link(id).map_err(|e| load_error(&prog, e))?;
                Ok(Box::new(link) as Link)
            })
        }
        Err(e) => Err(CaptureError::ProbeLoad {
            program: format!("{name}_btf"),
            message: format!("the kernel's BTF: {e}"),
            verifier_log: None,
        }),
    };
    attached
        .map_err(|e| {
            notes.push(format!(
                "typed tracepoint {name} not attached ({e}): the classic one instead"
            ))
        })
        .ok()
}

/// Detaches every probe at once: each perf-event tracepoint waits for an RCU grace period
/// when it is detached (perf_trace_event_unreg → tracepoint_synchronize_unregister), so one
/// after the other they take tens of ms each; side by side the waits overlap.
fn detach_all(links: Vec<Link>) {
    let threads: Vec<_> = links
        .into_iter()
        .map(|l| std::thread::spawn(move || drop(l)))
        .collect();
    for t in threads {
        let _ = t.join();
    }
}

/// Births: the raw sched_process_fork tracepoint (the child task itself, so its real parent
/// and pid namespace), else the classic one with a note (no pid namespaces then).
fn attach_fork(ebpf: &mut Ebpf, notes: &mut Vec<String>) -> Result<Link, CaptureError> {
    match attach_raw(ebpf, "sched_process_fork_raw", "sched_process_fork") {
        Ok(link) => Ok(link),
        Err(e) => {
            notes.push(format!(
                "raw tracepoint sched_process_fork unavailable ({e}): pid namespaces unknown"
            ));
            attach(ebpf, "sched_process_fork", "sched", "sched_process_fork")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_capabilities_are_named_from_the_effective_set() {
        let status =
            |eff: u64| format!("Name:\ttracer\nCapPrm:\tffffffffff\nCapEff:\t{eff:016x}\n");
        let (admin, perfmon, bpf) = (1u64 << 21, 1u64 << 38, 1u64 << 39);
        assert!(missing_capabilities(&status(bpf | perfmon)).is_empty());
        assert!(missing_capabilities(&status(admin)).is_empty());
        assert_eq!(missing_capabilities(&status(perfmon)), ["CAP_BPF"]);
        assert_eq!(missing_capabilities(&status(bpf)), ["CAP_PERFMON"]);
        assert_eq!(missing_capabilities(&status(0)), ["CAP_BPF", "CAP_PERFMON"]);
        // Root with every capability dropped (a container's `--cap-drop=ALL`): uid 0 is no
        // capability.
        assert_eq!(
            missing_capabilities("Uid:\t0\t0\t0\t0\nCapEff:\t0000000000000000\n").len(),
            2
        );
    }

    #[test]
    fn without_task_probe_offsets_syscall_probes_are_used() {
        let mut cfg = ProbeConfig::EMPTY;
        assert_eq!(
            task_probes_missing(&cfg),
            Some("tracepoint task:task_newtask (clone_flags)")
        );
        cfg.newtask_flags = 32;
        cfg.rename_pid = 8;
        cfg.rename_newcomm = 28;
        cfg.task_mm = 1;
        cfg.mm_arg_start = 2;
        cfg.mm_arg_end = 3;
        cfg.task_in_execve_bit = 4;
        assert_eq!(
            task_probes_missing(&cfg),
            Some("BTF signal_struct.is_child_subreaper")
        );
        cfg.signal_subreaper_bit = 5;
        cfg.signal_has_subreaper_bit = 6;
        cfg.task_comm = 7;
        assert_eq!(task_probes_missing(&cfg), Some("BTF task_struct.flags"));
        cfg.task_flags = 8;
        assert_eq!(task_probes_missing(&cfg), None);
    }

    #[test]
    fn every_probe_has_a_kind_and_births_and_deaths_always_stay() {
        let all = || SCHED.iter().chain(TASK).chain(SYSCALLS);
        let kind = |name: &str| {
            let p = all().find(|p| p.name == name).expect("a probe");
            EventKindFilter::ALL
                .into_iter()
                .find(|k| selected(p, &[*k]) && !selected(p, &[]))
        };
        for (prog, want) in [
            ("sched_process_exec", EventKindFilter::Exec),
            ("sys_enter_clone3", EventKindFilter::Clone),
            ("sys_exit_vfork", EventKindFilter::Clone),
            ("sys_enter_fork", EventKindFilter::Clone),
            ("sys_exit_execveat", EventKindFilter::Exec),
            ("sys_enter_exit", EventKindFilter::Exit),
            ("sys_enter_exit_group", EventKindFilter::Exit),
            ("sys_exit_prctl", EventKindFilter::Prctl),
            ("task_newtask", EventKindFilter::Clone),
            ("task_rename", EventKindFilter::Prctl),
            ("mark_victim", EventKindFilter::Oom),
        ] {
            assert_eq!(kind(prog), Some(want), "{prog}");
        }
        let always: Vec<_> = all().filter(|p| selected(p, &[])).map(|p| p.name).collect();
        // Births are attached by attach_fork, whatever the selection.
        assert_eq!(always, ["sched_process_exit", "cgroup_attach_task"]);
    }

    #[test]
    fn the_probe_object_has_every_map_and_program_the_loader_uses() {
        assert!(!PROBES.is_empty(), "built without probes: nothing to check");
        let obj = aya_obj::Object::parse(PROBES).expect("the probe object parses");
        for name in maps::USED {
            assert!(
                obj.maps.contains_key(name),
                "map {name} missing from the probe object"
            );
        }
        let tables = SCHED.iter().chain(TASK).chain(SYSCALLS);
        let raw = [
            "sched_process_fork_raw",
            "sched_process_fork",
            "signal_generate",
            "mark_victim_raw",
        ];
        for name in tables.clone().map(|p| p.name).chain(raw) {
            assert!(
                obj.programs.contains_key(name),
                "program {name} missing from the probe object"
            );
        }
        let typed: Vec<String> = tables
            .filter(|p| p.typed)
            .map(|p| format!("{}_btf", p.name))
            .collect();
        assert_eq!(typed.len(), 4, "{typed:?}");
        for name in typed {
            assert!(
                obj.programs.contains_key(&name),
                "typed program {name} missing from the probe object"
            );
        }
    }

    #[test]
    fn a_refusal_for_privilege_is_known_by_its_errno_not_its_text() {
        // What aya returns when the kernel will not create a map.
        let refused = |errno| {
            aya::EbpfError::MapError(aya::maps::MapError::CreateError {
                name: "EVENTS".into(),
                io_error: std::io::Error::from_raw_os_error(errno),
            })
        };
        assert!(refused_for_privilege(&refused(libc::EPERM)));
        assert!(!refused_for_privilege(&refused(libc::EINVAL)));
        // The words alone are not the kernel's errno.
        assert!(!refused_for_privilege(&std::io::Error::other(
            "Operation not permitted"
        )));
    }
}
