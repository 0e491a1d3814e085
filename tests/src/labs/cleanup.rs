//! The guard that leaves the machine as the lab found it, on success, failure and Ctrl-C.

use crate::labs::system::{alive, find_procs, mounts_under, quietly, signal};
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
    /// A containerd the lab started (a daemon, or under a restart loop): stop the loop if
    /// any, then the daemon.
    Containerd {
        stop_file: PathBuf,
        pid_file: PathBuf,
    },
    /// `podman rm -f NAME` with the lab's storage options.
    PodmanContainer { opts: Vec<String>, name: String },
    /// Kill what still runs from the directory (processes whose argv names it, and their
    /// descendants: a shim and its container survive their daemon), unmount whatever is
    /// mounted under it, then remove it.
    Dir(PathBuf),
    /// Remove a directory the runtimes create outside the lab's own (e.g. /run/containerd),
    /// if it did not exist when the lab started and no daemon uses it any more.
    NewDir {
        path: PathBuf,
        unless_running: &'static str,
    },
    /// A network namespace bind-mounted at a path (CNI's `/var/run/netns/cni-…`): unmount
    /// and remove it.
    Netns(PathBuf),
    /// A network link the lab's CNI config made (the bridge): `ip link del`.
    Link(String),
    /// Remove a cgroup the runtime created (in every hierarchy where it did not exist at the
    /// start), once empty.
    NewCgroup(Vec<PathBuf>),
}

impl Undo {
    /// `NewDir` for `path`, or `None` when it exists already.
    pub fn new_dir(path: impl Into<PathBuf>, unless_running: &'static str) -> Option<Undo> {
        let path = path.into();
        (!path.exists()).then_some(Undo::NewDir {
            path,
            unless_running,
        })
    }

    /// `NewCgroup` for cgroup `name` in the hierarchies that lack it now (v1 and v2).
    pub fn new_cgroup(name: &str) -> Undo {
        let root = std::path::Path::new("/sys/fs/cgroup");
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(root)
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .map(|e| e.path())
                    .filter(|p| p.is_dir())
                    .map(|p| p.join(name))
                    .collect()
            })
            .unwrap_or_default();
        dirs.push(root.join(name));
        dirs.retain(|d| !d.exists());
        Undo::NewCgroup(dirs)
    }
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

    pub fn extend(&mut self, u: impl IntoIterator<Item = Undo>) {
        self.undo.extend(u);
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
            let needle = dir.to_string_lossy().into_owned();
            kill_trees(|p| p.argv.iter().any(|a| a.contains(&needle)));
            for m in mounts_under(dir) {
                quietly(Command::new("umount").arg("-l").arg(&m));
            }
            let _ = std::fs::remove_dir_all(dir);
        }
        Undo::NewDir {
            path,
            unless_running,
        } => {
            if find_procs(|p| p.comm == *unless_running).is_empty() {
                let _ = std::fs::remove_dir_all(path);
            }
        }
        Undo::Netns(path) => {
            quietly(Command::new("umount").arg(path));
            let _ = std::fs::remove_file(path);
        }
        Undo::Link(name) => quietly(Command::new("ip").args(["link", "del", name])),
        Undo::NewCgroup(dirs) => {
            for d in dirs {
                remove_cgroup(d);
            }
        }
    }
}

/// SIGKILLs the processes matching `pred` and all their descendants (deepest first, so
/// nothing is left to be adopted), and waits for them to go.
fn kill_trees(pred: impl Fn(&crate::labs::ProcInfo) -> bool) {
    let all = find_procs(|_| true);
    let mut doomed: Vec<(u32, usize)> =
        all.iter().filter(|p| pred(p)).map(|p| (p.pid, 0)).collect();
    let mut i = 0;
    while i < doomed.len() {
        let (pid, depth) = doomed[i];
        for c in all.iter().filter(|c| c.ppid == pid) {
            if !doomed.iter().any(|(d, _)| *d == c.pid) {
                doomed.push((c.pid, depth + 1));
            }
        }
        i += 1;
    }
    doomed.sort_by_key(|(_, depth)| std::cmp::Reverse(*depth));
    for (pid, _) in &doomed {
        signal(*pid, libc::SIGKILL);
    }
    let end = Instant::now() + Duration::from_secs(5);
    while doomed.iter().any(|(p, _)| alive(*p)) && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// rmdir of a cgroup and its children, deepest first (cgroupfs files cannot be unlinked;
/// a cgroup with processes stays).
fn remove_cgroup(dir: &std::path::Path) {
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.filter_map(|e| e.ok()) {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                remove_cgroup(&e.path());
            }
        }
    }
    let _ = std::fs::remove_dir(dir);
}
