//! Small system helpers: /proc reads, running commands, waiting, Ctrl-C, Debian packages.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// A process as /proc shows it at one moment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcInfo {
    pub pid: u32,
    /// Field 4 of /proc/PID/stat: the kernel's parent right now.
    pub ppid: u32,
    pub comm: String,
    pub argv: Vec<String>,
    /// Field 3 of /proc/PID/stat: R, S, D, Z (exited, not yet reaped)...
    pub state: char,
}

impl ProcInfo {
    /// Reads /proc/PID/stat and cmdline.
    pub fn read(pid: u32) -> Result<ProcInfo> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .with_context(|| format!("process {pid} is gone"))?;
        // comm may hold spaces and parentheses: it ends at the last ')'.
        let open = stat.find('(').context("stat: no comm")?;
        let close = stat.rfind(')').context("stat: no comm")?;
        let comm = stat[open + 1..close].to_string();
        let mut fields = stat[close + 1..].split_whitespace();
        let state = fields
            .next()
            .and_then(|s| s.chars().next())
            .context("stat: no state")?;
        let ppid = fields
            .next()
            .and_then(|s| s.parse().ok())
            .context("stat: no ppid")?;
        let argv = std::fs::read(format!("/proc/{pid}/cmdline"))
            .unwrap_or_default()
            .split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        Ok(ProcInfo {
            pid,
            ppid,
            comm,
            argv,
            state,
        })
    }

    /// It has exited; only its parent's wait is missing.
    pub fn is_zombie(&self) -> bool {
        matches!(self.state, 'Z' | 'X')
    }
}

impl std::fmt::Display for ProcInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} (ppid {})", self.comm, self.pid, self.ppid)
    }
}

/// Every pid in /proc.
pub fn pids() -> Vec<u32> {
    std::fs::read_dir("/proc")
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Live processes matching `pred`.
pub fn find_procs(pred: impl Fn(&ProcInfo) -> bool) -> Vec<ProcInfo> {
    pids()
        .into_iter()
        .filter_map(|p| ProcInfo::read(p).ok())
        .filter(|p| pred(p))
        .collect()
}

pub fn alive(pid: u32) -> bool {
    // A zombie still has /proc/PID; its state is 'Z'.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            s.rfind(')')
                .and_then(|i| s[i + 1..].split_whitespace().next())
                .is_some_and(|st| st != "Z" && st != "X")
        })
        .unwrap_or(false)
}

pub fn signal(pid: u32, sig: i32) {
    if pid > 1 {
        // SAFETY: kill has no memory preconditions.
        unsafe { libc::kill(pid as i32, sig) };
    }
}

/// CLOCK_BOOTTIME in nanoseconds (the clock of the probes' timestamps).
pub fn boot_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

pub use crate::prereq::is_root;

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_interrupt(_: libc::c_int) {
    if INTERRUPTED.swap(true, Ordering::SeqCst) {
        // Second Ctrl-C: the user insists. (Cleanup already started with the first.)
        // SAFETY: _exit is async-signal-safe.
        unsafe { libc::_exit(130) };
    }
}

/// Turns SIGINT/SIGTERM into a flag that every wait checks, so the scenario returns an error
/// and its [`crate::labs::Cleanup`] guard runs. Children are started in their own process groups, so
/// a terminal Ctrl-C reaches only this process.
pub fn install_interrupt_handler() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler only touches an atomic (and _exit), both async-signal-safe.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_interrupt as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

pub fn check_interrupt() -> Result<()> {
    if interrupted() {
        bail!("interrupted (Ctrl-C): cleaning up");
    }
    Ok(())
}

/// Sleeps, waking early (with an error) on Ctrl-C.
pub fn pause(d: Duration) -> Result<()> {
    let end = Instant::now() + d;
    while Instant::now() < end {
        check_interrupt()?;
        std::thread::sleep(Duration::from_millis(50).min(end - Instant::now()));
    }
    Ok(())
}

/// Polls `f` every 100 ms until it gives a value, for at most `timeout`.
pub fn wait_for<T>(
    what: &str,
    timeout: Duration,
    mut f: impl FnMut() -> Result<Option<T>>,
) -> Result<T> {
    let end = Instant::now() + timeout;
    loop {
        check_interrupt()?;
        if let Some(v) = f()? {
            return Ok(v);
        }
        if Instant::now() >= end {
            bail!("timed out after {timeout:?} waiting for {what}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Runs a command to completion; its stdout on success, its stderr in the error otherwise.
pub fn output(cmd: &mut Command) -> Result<String> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run {}", show(cmd)))?;
    if !out.status.success() {
        bail!(
            "{} failed ({}): {}",
            show(cmd),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Runs a command and ignores how it went (cleanup).
pub fn quietly(cmd: &mut Command) {
    let _ = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// `prog arg arg` for messages.
pub fn show(cmd: &Command) -> String {
    std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Path of a program, searched in PATH (and the sbin directories, which sudo may drop).
pub fn which(prog: &str) -> Option<PathBuf> {
    let path = std::env::var("PATH").unwrap_or_default();
    let found = path
        .split(':')
        .chain(["/usr/local/sbin", "/usr/sbin", "/sbin"])
        .map(|d| Path::new(d).join(prog))
        .find(|p| p.is_file());
    found
}

/// Installs the scenario's missing Debian packages (root, apt-get), starting and enabling no
/// service ([`crate::packages`]).
pub fn ensure_packages(pkgs: &[&'static str]) -> Result<()> {
    let needs: Vec<crate::packages::Need> = pkgs
        .iter()
        .map(|p| {
            (
                *p,
                "a runtime this lab runs (the lab starts its own instance)",
            )
        })
        .collect();
    crate::packages::install("lab", &needs).map(|_| ())
}

/// Mount points at or under `dir` (deepest first), from /proc/self/mountinfo.
pub fn mounts_under(dir: &Path) -> Vec<PathBuf> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let mut v: Vec<PathBuf> = text
        .lines()
        .filter_map(|l| l.split_whitespace().nth(4))
        // mountinfo escapes spaces as \040; lab paths have none.
        .map(PathBuf::from)
        .filter(|m| m.starts_with(dir))
        .collect();
    v.sort_by_key(|m| std::cmp::Reverse(m.components().count()));
    v.dedup();
    v
}
