//! What tracing costs the traced host: time inside the probes (the kernel's `run_time_ns`)
//! plus the tracer's own CPU, read at two gates around the workload so that start-up (loading
//! and verifying the probes, the /proc snapshot) and shutdown are not counted.

use anyhow::{bail, Context, Result};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

/// CPU time of the live threads of `pid`, in seconds: the sum of the first field of
/// `/proc/PID/task/*/schedstat`, the scheduler's `sum_exec_runtime` in ns. utime+stime
/// (/proc/PID/stat) count whole 10 ms ticks, too coarse for a storm's few milliseconds.
/// Threads that exited between two readings are missed (the tracer keeps its threads).
pub(super) fn cpu_seconds(pid: u32) -> Option<f64> {
    let mut ns = 0u64;
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))
        .ok()?
        .flatten()
    {
        let Ok(text) = std::fs::read_to_string(task.path().join("schedstat")) else {
            continue;
        };
        ns += text.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(ns as f64 / 1e9)
}

/// A FIFO the workload's shell waits on (`read _ < FIFO`) until the bench lets it pass.
pub(super) struct Gate(PathBuf);

impl Gate {
    pub(super) fn new(dir: &Path, name: &str) -> Result<Gate> {
        let path = dir.join(name);
        let _ = std::fs::remove_file(&path);
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())?;
        // SAFETY: a NUL-terminated path that lives across the call.
        if unsafe { libc::mkfifo(c.as_ptr(), 0o600) } != 0 {
            bail!(
                "mkfifo {}: {}",
                path.display(),
                std::io::Error::last_os_error()
            );
        }
        Ok(Gate(path))
    }

    /// The shell words that wait at this gate.
    pub(super) fn wait_words(&self) -> String {
        format!("read _ < {}", self.0.display())
    }

    /// Blocks until the shell waits at the gate (a FIFO opened for writing without blocking
    /// fails with ENXIO until a reader has it open), or fails once `watch` has exited.
    pub(super) fn reached(&self, watch: &mut Child) -> Result<std::fs::File> {
        let start = Instant::now();
        loop {
            match std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&self.0)
            {
                Ok(f) => return Ok(f),
                Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {}
                Err(e) => return Err(e).with_context(|| format!("{}", self.0.display())),
            }
            if let Some(st) = watch.try_wait()? {
                bail!("exited ({st}) before reaching {}", self.0.display());
            }
            if start.elapsed() > Duration::from_secs(120) {
                bail!("the workload never reached {}", self.0.display());
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Lets a shell waiting here pass, if there is one (after a failed measurement).
    pub(super) fn release(&self) {
        if let Ok(f) = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&self.0)
        {
            let _ = Gate::open(f);
        }
    }

    /// Lets the waiting shell pass.
    pub(super) fn open(mut f: std::fs::File) -> Result<()> {
        f.write_all(b"\n")?;
        Ok(())
    }
}

/// The tracer's counters at one instant: (seconds inside its probes, its own CPU seconds).
pub(super) fn reading(pid: u32) -> Option<(f64, f64)> {
    Some((super::probe_seconds(pid)?, cpu_seconds(pid)?))
}

/// One traced run's cost: probe seconds, tracer CPU seconds, the workload's wall seconds.
#[derive(Clone, Copy)]
pub(super) struct Cost {
    pub probe: f64,
    pub cpu: f64,
    pub wall: f64,
}

impl Cost {
    fn share(&self) -> f64 {
        100.0 * (self.probe + self.cpu) / self.wall
    }
}

/// The cost table: per configuration, the probes' time and the tracer's CPU per run (both
/// load-independent counts), and their sum as a share of the workload's wall time against
/// `goal` (percent), met or not by the median.
pub(super) fn table(runs: &[(super::Config, Cost)], goal: Option<f64>) -> String {
    let mut s = String::from(
        "\nWhat tracing cost, per run: time inside the probes (kernel.bpf_stats_enabled, \
         `run_time_ns` summed over every program) and the tracer's own CPU (every thread's \
         `sum_exec_runtime`, /proc/PID/task/*/schedstat), both read at gates just before and \
         after the workload (start-up not counted), as a share of the workload's wall time:\n\n\
         | configuration | probe time (ms) | tracer CPU (ms) | total (ms) | share median | share min | share max | goal |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    let mut configs: Vec<super::Config> = Vec::new();
    for (c, _) in runs {
        if !configs.contains(c) {
            configs.push(*c);
        }
    }
    for cfg in configs {
        let mine: Vec<Cost> = runs.iter().filter(|r| r.0 == cfg).map(|r| r.1).collect();
        let (probe, _, _) = super::stats(mine.iter().map(|c| c.probe * 1e3).collect());
        let (cpu, _, _) = super::stats(mine.iter().map(|c| c.cpu * 1e3).collect());
        let (total, _, _) = super::stats(mine.iter().map(|c| (c.probe + c.cpu) * 1e3).collect());
        let (sm, smin, smax) = super::stats(mine.iter().map(Cost::share).collect());
        let verdict = match goal {
            Some(g) if sm <= g => format!("<= {g}%: met"),
            Some(g) => format!("<= {g}%: NOT met"),
            None => String::new(),
        };
        s.push_str(&format!(
            "| {} | {probe:.2} | {cpu:.2} | {total:.2} | {sm:.2}% | {smin:.2}% | {smax:.2}% | {verdict} |\n",
            cfg.name()
        ));
    }
    s
}

/// Lets the workload (`watch`, or the tracer's own command) through `go` and waits for it at
/// `done`, reading the tracer `pid`'s counters at both: what the workload cost it. The
/// pauses let the tracer finish starting (its /proc snapshot) and drain the ring (it polls
/// every 50 ms).
pub(super) fn measure(pid: u32, watch: &mut Child, go: &Gate, done: &Gate) -> Result<Cost> {
    let f = go.reached(watch)?;
    std::thread::sleep(Duration::from_millis(300));
    let before = reading(pid).context("the tracer holds no probes")?;
    Gate::open(f)?;
    let f = done.reached(watch)?;
    std::thread::sleep(Duration::from_millis(200));
    let after = reading(pid).context("the tracer is gone")?;
    Gate::open(f)?;
    Ok(Cost {
        probe: after.0 - before.0,
        cpu: after.1 - before.1,
        wall: 0.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// utime + stime of `pid` (/proc/PID/stat fields 14 and 15), in seconds: the kernel's
    /// other count of the same CPU time, in 10 ms ticks.
    fn stat_seconds(pid: u32) -> f64 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let after_comm = &stat[stat.rfind(')').unwrap() + 2..];
        let f: Vec<u64> = after_comm
            .split(' ')
            .skip(11)
            .take(2)
            .map(|v| v.parse().unwrap())
            .collect();
        // SAFETY: sysconf has no preconditions.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
        (f[0] + f[1]) as f64 / hz
    }

    #[test]
    fn cpu_seconds_agrees_with_the_kernels_tick_count() {
        let dir = tempfile::tempdir().unwrap();
        let gate = Gate::new(dir.path(), "held").unwrap();
        // Spins for a while, then waits at the gate so it can be read while alive.
        let script = format!(
            "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; {}",
            gate.wait_words()
        );
        let mut sh = Command::new("sh").args(["-c", &script]).spawn().unwrap();
        let f = gate.reached(&mut sh).unwrap();
        let (mine, ticks) = (cpu_seconds(sh.id()).unwrap(), stat_seconds(sh.id()));
        Gate::open(f).unwrap();
        assert!(sh.wait().unwrap().success());
        assert!(ticks >= 0.05, "the spin took too little CPU: {ticks} s");
        assert!(
            (mine - ticks).abs() <= 0.02 + ticks * 0.1,
            "schedstat {mine} s, stat {ticks} s"
        );
    }

    #[test]
    fn a_gate_holds_the_workload_until_opened() {
        let dir = tempfile::tempdir().unwrap();
        let gate = Gate::new(dir.path(), "go").unwrap();
        let passed = dir.path().join("passed");
        let script = format!("{}; : > {}", gate.wait_words(), passed.display());
        let mut sh = Command::new("sh").args(["-c", &script]).spawn().unwrap();
        let f = gate.reached(&mut sh).unwrap();
        std::thread::sleep(Duration::from_millis(200));
        assert!(!passed.exists(), "went through a closed gate");
        Gate::open(f).unwrap();
        assert!(sh.wait().unwrap().success());
        assert!(passed.exists());
        // A workload that never comes to the gate is an error, not a hang.
        let mut gone = Command::new("true").spawn().unwrap();
        assert!(gate.reached(&mut gone).is_err());
    }

    #[test]
    fn the_cost_table_says_met_or_not_by_the_median_share() {
        let run = |probe_ms: f64, cpu_ms: f64| Cost {
            probe: probe_ms / 1e3,
            cpu: cpu_ms / 1e3,
            wall: 1.0,
        };
        let runs = [
            (super::super::Config::Follow, run(2.0, 2.0)),
            (super::super::Config::Follow, run(2.0, 2.5)),
            (super::super::Config::Follow, run(9.0, 9.0)),
            (super::super::Config::All, run(1.0, 1.0)),
            (super::super::Config::All, run(3.0, 3.0)),
            (super::super::Config::All, run(4.0, 4.0)),
        ];
        let t = table(&runs, Some(0.5));
        let row = |name: &str| {
            t.lines()
                .find(|l| l.starts_with(&format!("| {name} |")))
                .unwrap()
                .to_string()
        };
        assert_eq!(
            row("tracer (follow)"),
            "| tracer (follow) | 2.00 | 2.50 | 4.50 | 0.45% | 0.40% | 1.80% | <= 0.5%: met |"
        );
        // Met by its best run, not by its median: not met.
        assert!(row("tracer --all").ends_with("| 0.60% | 0.20% | 0.80% | <= 0.5%: NOT met |"));
    }
}
