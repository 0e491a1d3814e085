//! The guard that leaves the machine as the lab found it, on success, failure and Ctrl-C.

use crate::system::{alive, mounts_under, quietly, signal};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

/// One thing to undo. Every action is idempotent and quiet: the scenario's own teardown may
/// already have done it.
#[derive(Debug)]
pub enum Undo {
    /// `runc delete --force ID`.
    RuncContainer(String),
    /// Kill the task (and its execs), delete it and the container, via a containerd socket.
    CtrContainer { address: String, id: String },
    /// A containerd started by the lab under a restart loop: stop the loop, then the daemon.
    Containerd {
        stop_file: PathBuf,
        pid_file: PathBuf,
    },
    /// `podman rm -f NAME` with the lab's storage options.
    PodmanContainer { opts: Vec<String>, name: String },
    /// Unmount whatever is mounted under the directory, then remove it.
    Dir(PathBuf),
}

/// Runs its [`Undo`] actions, last registered first, when dropped.
#[derive(Debug, Default)]
pub struct Cleanup {
    undo: Vec<Undo>,
}

impl Cleanup {
    pub fn new() -> Cleanup {
        Cleanup::default()
    }

    pub fn push(&mut self, u: Undo) {
        self.undo.push(u);
    }

    /// Runs everything now (also what Drop does).
    pub fn run(&mut self) {
        while let Some(u) = self.undo.pop() {
            undo(&u);
        }
    }
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        self.run();
    }
}

/// Sends `sig`, then SIGKILL if `pid` is still alive after `grace`.
pub fn stop_pid(pid: u32, sig: i32, grace: Duration) {
    if !alive(pid) {
        return;
    }
    signal(pid, sig);
    let end = Instant::now() + grace;
    while alive(pid) && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(50));
    }
    if alive(pid) {
        signal(pid, libc::SIGKILL);
    }
}

fn undo(u: &Undo) {
    match u {
        Undo::RuncContainer(id) => quietly(Command::new("runc").args(["delete", "--force", id])),
        Undo::CtrContainer { address, id } => {
            let ctr = |args: &[&str]| {
                quietly(Command::new("ctr").args(["--address", address]).args(args));
            };
            ctr(&["task", "kill", "--all", "-s", "SIGKILL", id]);
            ctr(&["task", "delete", "--force", id]);
            ctr(&["containers", "delete", id]);
        }
        Undo::Containerd {
            stop_file,
            pid_file,
        } => {
            let _ = std::fs::write(stop_file, b"");
            if let Some(pid) = std::fs::read_to_string(pid_file)
                .ok()
                .and_then(|s| s.trim().parse::<u32>().ok())
            {
                stop_pid(pid, libc::SIGTERM, Duration::from_secs(10));
            }
        }
        Undo::PodmanContainer { opts, name } => {
            quietly(
                Command::new("podman")
                    .args(opts)
                    .args(["rm", "--force", "--time", "0", name]),
            );
        }
        Undo::Dir(dir) => {
            for m in mounts_under(dir) {
                quietly(Command::new("umount").arg("-l").arg(&m));
            }
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}
