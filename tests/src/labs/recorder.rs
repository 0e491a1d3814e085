//! `tracer record` run as a child process, in its own process group.

use anyhow::{bail, Context, Result};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::labs::system::{find_procs, wait_for};

/// What the recorder follows.
#[derive(Clone, Debug)]
pub enum Follow {
    /// `--pid PID`.
    Pid(u32),
    /// `-- CMD ARGS`: started by the tracer, followed from its first instruction.
    Command(Vec<String>),
}

/// A running `tracer record -o FILE ...`. Dropping it stops it (SIGINT, then SIGKILL).
pub struct Recorder {
    child: Option<Child>,
    pub trace: PathBuf,
    pub log: PathBuf,
}

impl Recorder {
    /// Starts the recorder and waits until its probes are attached (the file's header is
    /// written after they are).
    pub fn start(tracer: &Path, trace: &Path, follow: &Follow) -> Result<Recorder> {
        let log = trace.with_extension("record.log");
        let _ = std::fs::remove_file(trace);
        let logf = std::fs::File::create(&log)
            .with_context(|| format!("cannot create {}", log.display()))?;
        let mut cmd = Command::new(tracer);
        cmd.arg("record").arg("-o").arg(trace);
        match follow {
            Follow::Pid(p) => {
                cmd.arg("--pid").arg(p.to_string());
            }
            Follow::Command(argv) => {
                cmd.arg("--").args(argv);
            }
        }
        let child = cmd
            .stdin(Stdio::null())
            .stdout(logf.try_clone()?)
            .stderr(logf)
            // Ctrl-C at the terminal goes to the lab only; the lab stops the recorder.
            .process_group(0)
            .spawn()
            .with_context(|| format!("cannot start {}", tracer.display()))?;
        let mut rec = Recorder {
            child: Some(child),
            trace: trace.to_path_buf(),
            log,
        };
        wait_for("the recorder to attach", Duration::from_secs(30), || {
            if let Some(st) = rec.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                bail!("tracer record exited ({st}): {}", rec.log_text().trim());
            }
            Ok(std::fs::metadata(&rec.trace)
                .is_ok_and(|m| m.len() >= 20)
                .then_some(()))
        })?;
        Ok(rec)
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// The command the recorder started (`Follow::Command`).
    pub fn command_pid(&self) -> Result<u32> {
        let me = self.pid();
        wait_for("the recorded command", Duration::from_secs(10), || {
            Ok(find_procs(|p| p.ppid == me).first().map(|p| p.pid))
        })
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Lets the recorder end by itself (it stops when everything it follows is gone) for up
    /// to `grace`, then interrupts it; returns its summary line (`wrote FILE: N events ...`).
    pub fn finish(mut self, grace: Duration) -> Result<String> {
        let mut child = self.child.take().context("recorder already stopped")?;
        let end = Instant::now() + grace;
        while child.try_wait()?.is_none() && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(50));
        }
        if child.try_wait()?.is_none() {
            crate::labs::system::signal(child.id(), libc::SIGINT);
        }
        let end = Instant::now() + Duration::from_secs(15);
        while child.try_wait()?.is_none() {
            if Instant::now() >= end {
                let _ = child.kill();
                let _ = child.wait();
                bail!("tracer record did not stop: {}", self.log_text().trim());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let log = self.log_text();
        let summary = log
            .lines()
            .rev()
            .find_map(|l| l.strip_prefix("tracer: wrote "))
            .map(str::to_string);
        match summary {
            Some(s) => Ok(s),
            None => bail!("tracer record wrote no summary: {}", log.trim()),
        }
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            crate::labs::cleanup::stop_pid(c.id(), libc::SIGINT, Duration::from_secs(10));
            let _ = c.wait();
        }
    }
}
