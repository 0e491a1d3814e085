//! Real-runtime labs: each [`Scenario`] runs real container runtimes on this machine (no image
//! pulls: a busybox-static rootfs) under `tracer record`, narrates each step, reads the truth
//! from /proc while the containers run, and leaves the machine as it found it (a [`Cleanup`]
//! guard runs on success, failure and Ctrl-C).
//!
//! Used by `cargo xtask lab` (which then shows the recording) and by the end-to-end tests in
//! `tests/tests/labs.rs` (which check the reconstructed tree against the [`Truth`]).

mod bundle;
mod cleanup;
pub mod cri;
mod image;
pub mod lifecycle;
pub mod pod;
mod recorder;
mod sandbox;
mod scenarios;
pub mod system;

pub use bundle::{busybox_bundle, busybox_rootfs};
pub use cleanup::{stop_pid, Cleanup, Undo};
pub use recorder::{Follow, Recorder};
pub use system::{install_interrupt_handler, is_root, ProcInfo};

use anyhow::{bail, Result};
use std::path::PathBuf;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scenario {
    /// `runc run` of a bundle: INIT is born a child of `runc run` (CLONE_PARENT), no adoption.
    Runc,
    /// containerd (private unless one runs), two `ctr run -d` containers: two shims.
    Containerd,
    /// A container and a `ctr task exec` survive a containerd restart under their shim.
    Restart,
    /// `podman run --runtime runc`: conmon is the container's parent.
    Podman,
    /// containerd's CRI plugin driven like kubelet: two pods (sandbox, CNI, two containers
    /// under one shim each; one pod shares its pid namespace).
    Pod,
}

impl Scenario {
    pub const ALL: [Scenario; 5] = [
        Scenario::Runc,
        Scenario::Containerd,
        Scenario::Restart,
        Scenario::Podman,
        Scenario::Pod,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Scenario::Runc => "runc",
            Scenario::Containerd => "containerd",
            Scenario::Restart => "restart",
            Scenario::Podman => "podman",
            Scenario::Pod => "pod",
        }
    }

    /// Debian packages the scenario runs (installed when missing).
    pub fn packages(self) -> &'static [&'static str] {
        match self {
            Scenario::Runc => &["runc", "busybox-static"],
            Scenario::Containerd | Scenario::Restart => &["runc", "busybox-static", "containerd"],
            Scenario::Podman => &["runc", "busybox-static", "podman", "conmon"],
            Scenario::Pod => &[
                "runc",
                "busybox-static",
                "containerd",
                "containernetworking-plugins",
                "catatonit",
                "iproute2",
            ],
        }
    }
}

impl std::str::FromStr for Scenario {
    type Err = String;
    fn from_str(s: &str) -> Result<Scenario, String> {
        Scenario::ALL
            .into_iter()
            .find(|x| x.name() == s)
            .ok_or_else(|| {
                format!("unknown scenario {s:?} (runc, containerd, restart, podman, pod)")
            })
    }
}

impl std::fmt::Display for Scenario {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Where a lab runs and what it records.
#[derive(Clone, Debug)]
pub struct Lab {
    /// The `tracer` binary (release build, with probes).
    pub tracer: PathBuf,
    /// The recording to write.
    pub trace: PathBuf,
    /// Scratch directory: created, and removed (with anything mounted under it) at the end.
    pub work: PathBuf,
    /// Print one narrated line per step.
    pub narrate: bool,
    /// `pod`: restart the runtime daemon while the pods run.
    pub restart_runtime: bool,
    /// `pod`: a third pod lives the rest of a container's life (execs, a crash and its
    /// restart, an OOM kill, a stop with a grace period, the pod's removal).
    pub lifecycle: bool,
}

impl Lab {
    /// A lab writing `trace`, with a scratch directory under the system temp dir.
    pub fn new(tracer: PathBuf, trace: PathBuf, scenario: Scenario) -> Lab {
        let work = std::env::temp_dir().join(format!(
            "tracer-lab-{}-{}",
            scenario.name(),
            std::process::id()
        ));
        Lab {
            tracer,
            trace,
            work,
            narrate: true,
            restart_runtime: false,
            lifecycle: false,
        }
    }

    pub(crate) fn say(&self, line: impl std::fmt::Display) {
        if self.narrate {
            println!("lab ▸ {line}");
        }
    }
}

/// A container as /proc showed it while it ran.
#[derive(Clone, Debug)]
pub struct ContainerTruth {
    pub id: String,
    /// Its name in the pod spec (CRI containers only; none for a sandbox or a plain runtime).
    pub name: Option<String>,
    /// The container's init (the workload, `sleep`).
    pub init: ProcInfo,
    /// What should be its parent, found independently of the init's ppid: the shim (by its
    /// `-id` argument), conmon (`podman inspect`), or `runc run` (the recorded command).
    pub monitor: ProcInfo,
}

/// Every process in /proc at one moment: the walk started at `boot_ns` and ended at `end_ns`
/// (CLOCK_BOOTTIME, the clock of the trace's event timestamps). The reconstructed tree at
/// those times must match it.
#[derive(Clone, Debug)]
pub struct Moment {
    pub label: String,
    /// Taken before the walk: everything the trace says happened before it, /proc showed.
    pub boot_ns: u64,
    /// Taken after the walk.
    pub end_ns: u64,
    pub procs: Vec<ProcInfo>,
}

impl Moment {
    pub fn now(label: impl Into<String>) -> Moment {
        let boot_ns = system::boot_ns();
        let procs = system::find_procs(|_| true);
        Moment {
            label: label.into(),
            boot_ns,
            end_ns: system::boot_ns(),
            procs,
        }
    }

    /// The live (not zombie) processes of the scenario at this moment: `roots` and, in /proc's
    /// own tree, every descendant of them.
    pub fn scenario(&self, roots: &[u32]) -> Vec<&ProcInfo> {
        let live: Vec<&ProcInfo> = self.procs.iter().filter(|p| !p.is_zombie()).collect();
        let mut inside: Vec<u32> = roots
            .iter()
            .copied()
            .filter(|r| live.iter().any(|p| p.pid == *r))
            .collect();
        // Grows the set level by level; a pid joins at most once, so this ends.
        loop {
            let before = inside.len();
            for p in &live {
                if !inside.contains(&p.pid) && inside.contains(&p.ppid) {
                    inside.push(p.pid);
                }
            }
            if inside.len() == before {
                break;
            }
        }
        live.into_iter()
            .filter(|p| inside.contains(&p.pid))
            .collect()
    }
}

/// A pod while it ran.
#[derive(Clone, Debug)]
pub struct PodTruth {
    /// `namespace/name`.
    pub name: String,
    /// The CRI sandbox id (the shim's `-id`).
    pub sandbox_id: String,
    /// The pod's IP (PodSandboxStatus).
    pub ip: String,
    /// The containers share the pod's pid namespace.
    pub shared_pid: bool,
    /// The pod's one shim.
    pub shim: ProcInfo,
    /// The sandbox (pause) first, then the containers; each with the shim as `monitor`.
    pub containers: Vec<ContainerTruth>,
    /// Every process under the shim once all containers ran.
    pub procs: Vec<ProcInfo>,
}

/// What /proc said at the moments that matter.
#[derive(Clone, Debug, Default)]
pub struct Truth {
    /// The pid `tracer record` follows: the command it started, or `--pid`'s process.
    pub followed: u32,
    /// Whole-/proc snapshots taken while the containers ran.
    pub moments: Vec<Moment>,
    /// The runtime daemon (containerd): one entry per start (`restart`: before, after).
    pub daemons: Vec<ProcInfo>,
    /// The containers while they ran.
    pub containers: Vec<ContainerTruth>,
    /// `restart`: the same containers re-read after the daemon came back.
    pub after_restart: Vec<ContainerTruth>,
    /// `restart`: the `ctr task exec` process before and after the restart.
    pub exec: Vec<ProcInfo>,
    /// `pod`: the pods.
    pub pods: Vec<PodTruth>,
    /// `pod --lifecycle`: the third pod's lives and deaths.
    pub lifecycle: Option<lifecycle::LifecycleTruth>,
}

impl Truth {
    /// Where the scenario's processes hang in /proc: the followed process, the daemons and
    /// the container monitors (a shim or conmon is adopted away from what started it).
    pub fn roots(&self) -> Vec<u32> {
        let mut v = vec![self.followed];
        v.extend(self.daemons.iter().map(|d| d.pid));
        v.extend(self.containers.iter().map(|c| c.monitor.pid));
        v
    }
}

/// What a lab run produced.
#[derive(Debug)]
pub struct Outcome {
    pub scenario: Scenario,
    pub trace: PathBuf,
    /// The recorder's summary (`FILE: N events in S s, ...`).
    pub summary: String,
    pub truth: Truth,
}

/// Runs `scenario`: installs its packages if missing, records it, cleans up.
pub fn run(scenario: Scenario, lab: &Lab) -> Result<Outcome> {
    if !is_root() {
        bail!("labs run real container runtimes and load the probes: run as root");
    }
    system::ensure_packages(scenario.packages())?;
    if !lab.tracer.is_file() {
        bail!(
            "no tracer binary at {} (cargo build --release -p tracer-user)",
            lab.tracer.display()
        );
    }
    if let Some(dir) = lab.trace.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut cleanup = Cleanup::new();
    // Undone last: what the runtimes leave outside the scratch directory.
    match scenario {
        Scenario::Pod => {
            cleanup.extend(Undo::new_dir("/run/containerd", "containerd"));
            cleanup.push(Undo::new_cgroup(&pod::cgroup_name()));
        }
        Scenario::Containerd | Scenario::Restart => {
            // The shim keeps runc state, fifos and sockets here whatever the daemon's config.
            cleanup.extend(Undo::new_dir("/run/containerd", "containerd"));
            cleanup.push(Undo::new_cgroup(scenarios::NAMESPACE));
        }
        Scenario::Podman => {
            cleanup.extend(Undo::new_dir("/run/containers", "podman"));
            cleanup.push(Undo::new_cgroup("libpod_parent"));
        }
        Scenario::Runc => {}
    }
    let _ = std::fs::remove_dir_all(&lab.work);
    std::fs::create_dir_all(&lab.work)?;
    cleanup.push(Undo::Dir(lab.work.clone()));
    let (truth, summary) = match scenario {
        Scenario::Runc => scenarios::runc(lab, &mut cleanup)?,
        Scenario::Containerd => scenarios::containerd(lab, &mut cleanup)?,
        Scenario::Restart => scenarios::restart(lab, &mut cleanup)?,
        Scenario::Podman => scenarios::podman(lab, &mut cleanup)?,
        Scenario::Pod => pod::pod(lab, &mut cleanup)?,
    };
    lab.say("cleaning up: containers, daemons, mounts and scratch files");
    cleanup.run();
    Ok(Outcome {
        scenario,
        trace: lab.trace.clone(),
        summary,
        truth,
    })
}
