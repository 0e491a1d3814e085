//! Live capture with the eBPF probes: load, configure, attach, follow, read the ring buffer.
//!
//! [`Capture::start`] returns once every probe is attached (and, for a command target, the
//! command is released to exec). [`Capture::next_batch`] then yields decoded events in
//! sequence order, batch by batch.

pub mod layout;
pub mod procfs;

use crate::decode::decode;
use crate::event::Event;
use aya::maps::{HashMap as BpfHashMap, MapData, PerCpuArray, RingBuf};
use aya::programs::TracePoint;
use aya::{Ebpf, EbpfLoader};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use tokio::io::unix::AsyncFd;
use tracer_common::{ProbeConfig, DEFAULT_RING_BYTES};

pub use layout::TracepointLayouts;

/// The probe object built by build.rs (empty when built with `AYA_BUILD_SKIP=1`).
static PROBES: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/tracer"));

/// What went wrong starting or running a capture. Each variant renders as one line.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    #[error("missing privilege: {0}")]
    MissingPrivilege(String),
    #[error("kernel feature missing: {0}")]
    KernelFeature(String),
    #[error("this tracer was built without eBPF probes (AYA_BUILD_SKIP or no BPF toolchain); rebuild with `cargo xtask setup` done")]
    NoProbes,
    #[error("probe {program} failed to load: {message}")]
    ProbeLoad {
        program: String,
        message: String,
        /// The kernel verifier's log, when the kernel rejected the program.
        verifier_log: Option<String>,
    },
    #[error("cannot start command `{command}`")]
    Spawn {
        command: String,
        #[source]
        source: std::io::Error,
    },
    #[error("no process with pid {0}")]
    NoSuchProcess(u32),
    #[error("ring buffer: {0}")]
    Io(#[from] std::io::Error),
    #[error("BPF map {0}")]
    Map(String),
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

/// Builder for a [`Capture`].
#[derive(Clone, Debug)]
pub struct CaptureBuilder {
    target: Target,
    ring_bytes: u32,
    btf_path: std::path::PathBuf,
}

impl CaptureBuilder {
    pub fn new(target: Target) -> Self {
        CaptureBuilder {
            target,
            ring_bytes: DEFAULT_RING_BYTES,
            btf_path: "/sys/kernel/btf/vmlinux".into(),
        }
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

    pub fn btf_path(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.btf_path = path.into();
        self
    }

    /// Loads and attaches the probes and starts following the target.
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

/// Checks root / CAP_BPF+CAP_PERFMON before trying to load anything.
pub fn check_privileges() -> Result<(), CaptureError> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return Ok(());
    }
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let eff = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .unwrap_or(0);
    const CAP_SYS_ADMIN: u64 = 1 << 21;
    const CAP_PERFMON: u64 = 1 << 38;
    const CAP_BPF: u64 = 1 << 39;
    if eff & CAP_SYS_ADMIN != 0 || (eff & CAP_BPF != 0 && eff & CAP_PERFMON != 0) {
        return Ok(());
    }
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    Err(CaptureError::MissingPrivilege(format!(
        "loading eBPF probes needs root or CAP_BPF+CAP_PERFMON (running as uid {uid}); try sudo"
    )))
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
pub const POLL: std::time::Duration = std::time::Duration::from_millis(50);

/// (program name in the object, tracepoint category, tracepoint name, required)
const PROBES_TABLE: &[(&str, &str, &str, bool)] = &[
    ("sys_enter_clone", "syscalls", "sys_enter_clone", true),
    ("sys_exit_clone", "syscalls", "sys_exit_clone", true),
    ("sys_enter_clone3", "syscalls", "sys_enter_clone3", false),
    ("sys_exit_clone3", "syscalls", "sys_exit_clone3", false),
    // fork/vfork exist on x86_64 but not on arm64.
    ("sys_enter_fork", "syscalls", "sys_enter_fork", false),
    ("sys_exit_fork", "syscalls", "sys_exit_fork", false),
    ("sys_enter_vfork", "syscalls", "sys_enter_vfork", false),
    ("sys_exit_vfork", "syscalls", "sys_exit_vfork", false),
    ("sys_enter_execve", "syscalls", "sys_enter_execve", true),
    ("sys_exit_execve", "syscalls", "sys_exit_execve", true),
    (
        "sys_enter_execveat",
        "syscalls",
        "sys_enter_execveat",
        false,
    ),
    ("sys_exit_execveat", "syscalls", "sys_exit_execveat", false),
    ("sys_enter_exit", "syscalls", "sys_enter_exit", true),
    (
        "sys_enter_exit_group",
        "syscalls",
        "sys_enter_exit_group",
        true,
    ),
    ("sys_enter_prctl", "syscalls", "sys_enter_prctl", true),
    ("sys_exit_prctl", "syscalls", "sys_exit_prctl", true),
    ("sched_process_fork", "sched", "sched_process_fork", true),
    ("sched_process_exec", "sched", "sched_process_exec", true),
    ("sched_process_exit", "sched", "sched_process_exit", true),
];

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
    decode_errors: u64,
    _logger: Option<tokio::task::JoinHandle<()>>,
}

impl Capture {
    fn start(b: CaptureBuilder) -> Result<Capture, CaptureError> {
        check_privileges()?;
        if PROBES.is_empty() {
            return Err(CaptureError::NoProbes);
        }
        if let Target::Pid(pid) = b.target {
            if !Path::new(&format!("/proc/{pid}")).exists() {
                return Err(CaptureError::NoSuchProcess(pid));
            }
        }
        raise_memlock();
        let mut notes = Vec::new();
        let mut cfg = ProbeConfig::EMPTY;
        cfg.follow_all = u32::from(b.target == Target::All);
        cfg.self_tgid = std::process::id();
        // Wake the reader when a quarter of the ring is used; otherwise it polls every POLL.
        cfg.wakeup_bytes = b.ring_bytes / 4;
        let root = layout::tracefs_root()?;
        let layouts = layout::tracepoint_offsets(&root, &mut cfg)?;
        layout::btf_offsets(&b.btf_path, &mut cfg)?;

        let mut ebpf = EbpfLoader::new()
            .override_global("CONFIG", &cfg, true)
            .map_max_entries("EVENTS", b.ring_bytes)
            .load(PROBES)
            .map_err(|e| {
                let message = e.to_string();
                if message.contains("Operation not permitted") {
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
            })?;

        // aya-log: the logger must stay alive and be drained, or loading fails.
        let logger = match aya_log::EbpfLogger::init(&mut ebpf) {
            Ok(logger) => match readable_fd(logger) {
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
            },
            Err(e) => {
                notes.push(format!("probe log unavailable: {e}"));
                None
            }
        };

        for &(prog, cat, name, required) in PROBES_TABLE {
            if let Err(e) = attach(&mut ebpf, prog, cat, name) {
                if required {
                    return Err(e);
                }
                notes.push(format!(
                    "optional tracepoint {cat}:{name} not attached: {e}"
                ));
            }
        }

        let ring = ebpf
            .take_map("EVENTS")
            .ok_or_else(|| CaptureError::Map("EVENTS missing from the probe object".into()))?;
        let ring =
            RingBuf::try_from(ring).map_err(|e| CaptureError::Map(format!("EVENTS: {e}")))?;
        let ring = readable_fd(ring)?;

        let mut cap = Capture {
            ebpf,
            ring,
            target: b.target.clone(),
            child: None,
            child_pid: None,
            layouts,
            notes,
            decode_errors: 0,
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
        let map = self
            .ebpf
            .map_mut("FOLLOWED")
            .ok_or_else(|| CaptureError::Map("FOLLOWED missing".into()))?;
        let mut followed: BpfHashMap<_, u32, u32> =
            BpfHashMap::try_from(map).map_err(|e| CaptureError::Map(format!("FOLLOWED: {e}")))?;
        followed
            .insert(tgid, 1, 0)
            .map_err(|e| CaptureError::Map(format!("FOLLOWED insert: {e}")))
    }

    /// Number of tgids currently followed (0 once every followed process has exited).
    pub fn followed_count(&self) -> usize {
        let Some(map) = self.ebpf.map("FOLLOWED") else {
            return 0;
        };
        match BpfHashMap::<_, u32, u32>::try_from(map) {
            Ok(m) => m.keys().filter(|k| k.is_ok()).count(),
            Err(_) => 0,
        }
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
        self.child_pid = Some(followed?);
        self.child = Some(child);
        Ok(())
    }

    /// Waits until the ring buffer has a batch (the probes wake the reader only when a
    /// quarter of the ring is used) or [`POLL`] has passed, then appends every available
    /// event to `out`, sorted by sequence number. Undecodable records are counted, not fatal.
    pub async fn next_batch(&mut self, out: &mut Vec<Event>) -> Result<(), CaptureError> {
        let errors = match tokio::time::timeout(POLL, self.ring.readable_mut()).await {
            Ok(guard) => {
                let mut guard = guard?;
                let errors = drain(guard.get_inner_mut(), out);
                guard.clear_ready();
                errors
            }
            Err(_) => drain(self.ring.get_mut(), out),
        };
        self.decode_errors += errors;
        Ok(())
    }

    /// Appends whatever is in the ring buffer now, without waiting (for the final drain).
    pub fn drain_now(&mut self, out: &mut Vec<Event>) {
        let errors = drain(self.ring.get_mut(), out);
        self.decode_errors += errors;
    }

    /// Events lost to a full ring buffer (sum of the per-CPU counters).
    pub fn drops(&self) -> u64 {
        let Some(map) = self.ebpf.map("DROPS") else {
            return 0;
        };
        match PerCpuArray::<_, u64>::try_from(map) {
            Ok(a) => a.get(&0, 0).map(|v| v.iter().sum()).unwrap_or(0),
            Err(_) => 0,
        }
    }

    /// Sequence numbers handed out so far: every event emitted or dropped takes one.
    pub fn seq_issued(&self) -> u64 {
        let Some(map) = self.ebpf.map("SEQ") else {
            return 0;
        };
        match aya::maps::Array::<_, u64>::try_from(map) {
            Ok(a) => a.get(&0, 0).unwrap_or(0),
            Err(_) => 0,
        }
    }

    pub fn decode_errors(&self) -> u64 {
        self.decode_errors
    }

    /// The command's pid, for a [`Target::Command`].
    pub fn child_pid(&self) -> Option<u32> {
        self.child_pid
    }

    /// The command started for a [`Target::Command`], to wait on.
    pub fn child_mut(&mut self) -> Option<&mut std::process::Child> {
        self.child.as_mut()
    }

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

fn attach(ebpf: &mut Ebpf, prog: &str, cat: &str, name: &str) -> Result<(), CaptureError> {
    let program: &mut TracePoint = ebpf
        .program_mut(prog)
        .ok_or_else(|| CaptureError::ProbeLoad {
            program: prog.into(),
            message: "not in the probe object".into(),
            verifier_log: None,
        })?
        .try_into()
        .map_err(|e: aya::programs::ProgramError| CaptureError::ProbeLoad {
            program: prog.into(),
            message: e.to_string(),
            verifier_log: None,
        })?;
    program.load().map_err(|e| {
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
    })?;
    program
        .attach(cat, name)
        .map_err(|e| CaptureError::ProbeLoad {
            program: prog.into(),
            message: format!("attach to {cat}:{name}: {e}"),
            verifier_log: None,
        })?;
    Ok(())
}
