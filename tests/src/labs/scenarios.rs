//! The four scenarios. Each: build a rootfs, start the recorder on the right target, act,
//! read the truth from /proc while the containers run, tear down, stop the recorder.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::labs::cleanup::{stop_pid, Cleanup, Undo};
use crate::labs::recorder::{Follow, Recorder};
use crate::labs::system::{alive, find_procs, output, pause, wait_for, which, ProcInfo};
use crate::labs::{busybox_bundle, busybox_rootfs, ContainerTruth, Lab, Moment, Truth};

/// How long the recorder may take to end by itself once everything it follows is gone.
const RECORDER_GRACE: Duration = Duration::from_secs(10);
pub(crate) const STARTUP: Duration = Duration::from_secs(30);

pub(crate) fn s(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

pub(crate) fn start_recorder(lab: &Lab, follow: &Follow, what: &str) -> Result<Recorder> {
    lab.say(format!(
        "starting `tracer record -o {}` {what}",
        lab.trace.display()
    ));
    Recorder::start(&lab.tracer, &lab.trace, follow)
}

pub(crate) fn finish(lab: &Lab, rec: Recorder) -> Result<String> {
    let summary = rec.finish(RECORDER_GRACE)?;
    lab.say(format!("recorder stopped: {summary}"));
    Ok(summary)
}

fn describe(lab: &Lab, c: &ContainerTruth, monitor: &str) {
    lab.say(format!(
        "/proc now: container {} init {} (ppid {}) — {monitor} {} (ppid {})",
        c.id, c.init.pid, c.init.ppid, c.monitor.pid, c.monitor.ppid
    ));
}

// ---------------------------------------------------------------------------------------------
// runc

pub(crate) fn runc(lab: &Lab, cleanup: &mut Cleanup) -> Result<(Truth, String)> {
    let id = format!("tracer-lab-{}", std::process::id());
    lab.say("building an OCI bundle from busybox-static (`runc spec`, workload `sleep 300`)");
    let bundle = busybox_bundle(&lab.work.join("bundle"), &["/bin/sleep", "300"])?;
    cleanup.push(Undo::RuncContainer(id.clone()));
    let rec = start_recorder(
        lab,
        &Follow::Command(vec![
            s(&which("runc").context("runc is not installed")?),
            "run".into(),
            "--bundle".into(),
            s(&bundle),
            id.clone(),
        ]),
        &format!("-- runc run --bundle … {id} (followed from its first instruction)"),
    )?;
    lab.say("runc run: PARENT → CHILD → INIT, each clone with CLONE_PARENT, so INIT is born a child of `runc run` itself");
    let runc_pid = rec.command_pid()?;
    let init = wait_for("the container to run", STARTUP, || {
        let Ok(out) = output(Command::new("runc").args(["state", &id])) else {
            return Ok(None);
        };
        let st: serde_json::Value = serde_json::from_str(&out)?;
        Ok((st["status"] == "running")
            .then(|| st["pid"].as_u64())
            .flatten()
            .map(|p| p as u32))
    })?;
    pause(Duration::from_millis(300))?;
    let c = ContainerTruth {
        id: id.clone(),
        name: None,
        init: ProcInfo::read(init)?,
        monitor: ProcInfo::read(runc_pid)?,
    };
    describe(lab, &c, "runc run");
    let moment = Moment::now("runc: container running");
    lab.say("no adoption here: `runc run` stays (a subreaper) and waits for INIT. Contrast `runc create` under a shim (lab containerd): create exits and INIT is adopted by the shim");
    lab.say(format!(
        "runc kill {id} KILL: runc run reaps INIT, deletes the container and exits"
    ));
    output(Command::new("runc").args(["kill", &id, "KILL"]))?;
    wait_for("runc run to exit", STARTUP, || {
        Ok((!alive(runc_pid)).then_some(()))
    })?;
    let summary = finish(lab, rec)?;
    Ok((
        Truth {
            followed: runc_pid,
            moments: vec![moment],
            containers: vec![c],
            ..Truth::default()
        },
        summary,
    ))
}

// ---------------------------------------------------------------------------------------------
// containerd

/// A containerd to talk to: the host's, or a private one with its own root, state and socket,
/// run the way a node runs it: a daemon adopted by PID 1 (its starter exits), or, when it is
/// to be restarted, under a supervisor adopted by PID 1 (a small restart loop, like systemd's
/// `Restart=always`) so the restarted daemon is a child of what the recorder follows.
pub(crate) struct Containerd {
    pub(crate) address: String,
    private: Option<Private>,
}

struct Private {
    stop_file: PathBuf,
    pid_file: PathBuf,
    /// Supervised: the FIFO the restart loop reads before it starts the first daemon, so the
    /// recorder attached to the supervisor sees that start.
    gate: Option<PathBuf>,
}

pub(crate) const NAMESPACE: &str = "tracer-lab";
/// Restart loop bound: a daemon that keeps failing does not spin.
const MAX_STARTS: u32 = 3;

/// How a private containerd runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Launch {
    /// A daemon whose starter exited: PID 1 is its parent; the recorder attaches to it
    /// (`--pid`), as an operator does.
    Daemon,
    /// Under a restart loop whose starter exited; the recorder attaches to the loop.
    Supervised,
}

impl Containerd {
    /// The host's containerd if one runs and `allow_host`, else a private one launched as
    /// `launch` says, with `cri` (its CRI plugin's TOML tables) or without the CRI plugin; and
    /// the pid the recorder follows. A supervised daemon starts once [`Containerd::open_gate`]
    /// is called (after the recorder attached).
    pub(crate) fn choose(
        lab: &Lab,
        allow_host: bool,
        cri: Option<&str>,
        launch: Launch,
    ) -> Result<(Containerd, Follow)> {
        let host_sock = "/run/containerd/containerd.sock";
        let running = find_procs(|p| p.comm == "containerd");
        if allow_host && Path::new(host_sock).exists() {
            if let Some(p) = running.first() {
                lab.say(format!(
                    "containerd {} is running: using it (namespace {NAMESPACE})",
                    p.pid
                ));
                return Ok((
                    Containerd {
                        address: host_sock.into(),
                        private: None,
                    },
                    Follow::Pid(p.pid),
                ));
            }
        }
        let dir = lab.work.join("containerd");
        std::fs::create_dir_all(&dir)?;
        let d = s(&dir);
        let config = dir.join("config.toml");
        let no_cri = match cri {
            Some(_) => "",
            None => "disabled_plugins = [\"io.containerd.grpc.v1.cri\"]\n",
        };
        std::fs::write(
            &config,
            format!(
                "version = 2\nroot = \"{d}/root\"\nstate = \"{d}/state\"\n{no_cri}\
                 [grpc]\n  address = \"{d}/containerd.sock\"\n\
                 [ttrpc]\n  address = \"{d}/containerd.sock.ttrpc\"\n\
                 [debug]\n  address = \"{d}/debug.sock\"\n{}",
                cri.unwrap_or("")
            ),
        )?;
        let bin = which("containerd").context("containerd is not installed")?;
        let daemon = format!(
            "{} --config {} >>{} 2>&1 </dev/null",
            s(&bin),
            s(&config),
            s(&dir.join("containerd.log"))
        );
        let gate = dir.join("gate");
        let ctd = Containerd {
            address: format!("{d}/containerd.sock"),
            private: Some(Private {
                stop_file: dir.join("stop"),
                pid_file: dir.join("containerd.pid"),
                gate: (launch == Launch::Supervised).then(|| gate.clone()),
            }),
        };
        let follow = match launch {
            Launch::Daemon => {
                lab.say(format!(
                    "no containerd running: a private one (root, state and socket under {d}), started as a daemon (its starter exits: PID 1 adopts it)"
                ));
                let pid_file = s(&dir.join("containerd.pid"));
                daemonize(&format!("{daemon} & echo $! >{pid_file}"))?;
                Follow::Pid(ctd.wait_ready(None)?.pid)
            }
            Launch::Supervised => {
                lab.say(format!(
                    "no containerd running: a private one (root, state and socket under {d}) under a restart loop, started as a daemon (PID 1 adopts the loop)"
                ));
                Follow::Pid(ctd.supervise(&dir, &daemon, &gate)?)
            }
        };
        Ok((ctd, follow))
    }

    /// Writes and starts the restart loop (held at `gate`); its pid.
    fn supervise(&self, dir: &Path, daemon: &str, gate: &Path) -> Result<u32> {
        let p = self.private.as_ref().context("not a private containerd")?;
        output(Command::new("mkfifo").arg(gate))?;
        let script = dir.join("restart-loop.sh");
        std::fs::write(
            &script,
            format!(
                "# containerd, restarted when it exits (like systemd's Restart=always)\n\
                 read go <{gate}\n\
                 n=0\n\
                 while [ $n -lt {MAX_STARTS} ] && [ ! -e {stop} ]; do\n\
                 \x20 n=$((n+1))\n\
                 \x20 {daemon} &\n\
                 \x20 echo $! >{pid}\n\
                 \x20 wait $!\n\
                 done\n",
                gate = s(gate),
                stop = s(&p.stop_file),
                pid = s(&p.pid_file),
            ),
        )?;
        let out = daemonize(&format!(
            "/bin/sh {} </dev/null >/dev/null 2>&1 & echo $!",
            s(&script)
        ))?;
        out.trim()
            .parse()
            .with_context(|| format!("the restart loop's pid: {out:?}"))
    }

    /// Lets a supervised daemon start (the restart loop waits at its gate until then).
    pub(crate) fn open_gate(&self) -> Result<()> {
        let Some(gate) = self.private.as_ref().and_then(|p| p.gate.as_ref()) else {
            return Ok(());
        };
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        // Non-blocking: ENXIO until the loop has the FIFO open for reading.
        let mut fifo = wait_for("the restart loop to wait at its gate", STARTUP, || {
            Ok(std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(gate)
                .ok())
        })?;
        fifo.write_all(b"go\n")?;
        Ok(())
    }

    pub(crate) fn undo(&self) -> Option<Undo> {
        self.private.as_ref().map(|p| Undo::Containerd {
            stop_file: p.stop_file.clone(),
            pid_file: p.pid_file.clone(),
        })
    }

    fn ctr(&self, args: &[&str]) -> Result<String> {
        self.ctr_in(NAMESPACE, args)
    }

    /// `ctr` in a containerd namespace (the CRI plugin's is `k8s.io`).
    pub(crate) fn ctr_in(&self, namespace: &str, args: &[&str]) -> Result<String> {
        output(
            Command::new("ctr")
                .args(["--address", &self.address, "--namespace", namespace])
                .args(args),
        )
    }

    fn pid_from_file(&self) -> Option<u32> {
        let p = self.private.as_ref()?;
        std::fs::read_to_string(&p.pid_file)
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    /// Waits until a containerd (other than `not`) answers on the socket.
    pub(crate) fn wait_ready(&self, not: Option<u32>) -> Result<ProcInfo> {
        let pid = wait_for("containerd to answer", STARTUP, || {
            let pid = match &self.private {
                Some(_) => self
                    .pid_from_file()
                    .filter(|p| Some(*p) != not && alive(*p)),
                None => find_procs(|p| p.comm == "containerd")
                    .first()
                    .map(|p| p.pid),
            };
            Ok(pid.filter(|_| self.ctr(&["version"]).is_ok()))
        })?;
        ProcInfo::read(pid)
    }

    /// `ctr run -d --rootfs ROOTFS ID sleep 300`; the truth once it runs.
    fn run(
        &self,
        lab: &Lab,
        cleanup: &mut Cleanup,
        rootfs: &Path,
        id: &str,
    ) -> Result<ContainerTruth> {
        cleanup.push(Undo::CtrContainer {
            address: self.address.clone(),
            id: id.to_string(),
        });
        lab.say(format!(
            "ctr run -d --rootfs … {id} sleep 300: containerd runs `containerd-shim-runc-v2 … start`, which starts the long-lived shim and exits"
        ));
        self.ctr(&["run", "-d", "--rootfs", &s(rootfs), id, "/bin/sleep", "300"])?;
        let init = self.task_pid(id)?;
        let shim = shim_with_id(id)?;
        pause(Duration::from_millis(300))?;
        let c = ContainerTruth {
            id: id.to_string(),
            name: None,
            init: ProcInfo::read(init)?,
            monitor: ProcInfo::read(shim.pid)?,
        };
        describe(lab, &c, "shim");
        Ok(c)
    }

    fn task_pid(&self, id: &str) -> Result<u32> {
        wait_for("the task to run", STARTUP, || {
            let out = self.ctr(&["task", "ls"])?;
            Ok(out.lines().find_map(|l| {
                let cols: Vec<&str> = l.split_whitespace().collect();
                (cols.len() >= 3 && cols[0] == id && cols[2] == "RUNNING")
                    .then(|| cols[1].parse().ok())
                    .flatten()
            }))
        })
    }

    /// Kills the task (every process in it), deletes task and container.
    fn remove(&self, lab: &Lab, c: &ContainerTruth) -> Result<()> {
        lab.say(format!(
            "ctr task kill -s SIGKILL --all {id}; task delete; container delete: the shim runs `runc delete` and exits",
            id = c.id
        ));
        self.ctr(&["task", "kill", "-s", "SIGKILL", "--all", &c.id])?;
        wait_for("the container to stop", STARTUP, || {
            Ok((!alive(c.init.pid)).then_some(()))
        })?;
        // The shim reports the exit asynchronously; delete may need a moment.
        wait_for("task delete", STARTUP, || {
            Ok(self.ctr(&["task", "delete", &c.id]).is_ok().then_some(()))
        })?;
        self.ctr(&["containers", "delete", &c.id])?;
        wait_for("the shim to exit", STARTUP, || {
            Ok((!alive(c.monitor.pid)).then_some(()))
        })
    }

    /// Stops a private daemon and its restart loop if any (the host's is left alone).
    pub(crate) fn stop(&self, lab: &Lab) -> Result<()> {
        let Some(p) = &self.private else {
            return Ok(());
        };
        lab.say(match p.gate {
            Some(_) => "stopping the private containerd and its restart loop",
            None => "stopping the private containerd",
        });
        std::fs::write(&p.stop_file, b"")?;
        if let Some(pid) = self.pid_from_file() {
            stop_pid(pid, libc::SIGTERM, Duration::from_secs(10));
        }
        Ok(())
    }
}

/// The long-lived shim started with `-id ID` (not its `start` process), once it runs.
pub(crate) fn shim_with_id(id: &str) -> Result<ProcInfo> {
    wait_for("the shim", STARTUP, || {
        Ok(find_procs(|p| {
            p.argv
                .first()
                .is_some_and(|a| a.contains("containerd-shim"))
                && p.argv.windows(2).any(|w| w[0] == "-id" && w[1] == id)
                && !p.argv.iter().any(|a| a == "start")
        })
        .into_iter()
        .next())
    })
}

/// Runs `script` with `/bin/sh -c` in its own process group and waits for it: what it starts
/// in the background outlives it and is adopted by PID 1, as a daemon is. Its output.
fn daemonize(script: &str) -> Result<String> {
    use std::os::unix::process::CommandExt;
    output(
        Command::new("/bin/sh")
            .args(["-c", script])
            .process_group(0),
    )
}

/// What `containerd_setup` started: the daemon to talk to, the recorder, the truth so far
/// (followed pid, first daemon), the rootfs.
type Setup = (Containerd, Recorder, Truth, PathBuf);

fn containerd_setup(
    lab: &Lab,
    cleanup: &mut Cleanup,
    allow_host: bool,
    launch: Launch,
) -> Result<Setup> {
    lab.say("building a busybox-static rootfs (no image pull)");
    let rootfs = busybox_rootfs(&lab.work.join("rootfs"))?;
    let (ctd, follow) = Containerd::choose(lab, allow_host, None, launch)?;
    if let Some(u) = ctd.undo() {
        cleanup.push(u);
    }
    let rec = start_recorder(lab, &follow, &follow_what(&follow, launch))?;
    let followed = match follow {
        Follow::Pid(p) => p,
        Follow::Command(_) => rec.command_pid()?,
    };
    ctd.open_gate()?;
    let daemon = ctd.wait_ready(None)?;
    lab.say(format!(
        "containerd {} answers on {}",
        daemon.pid, ctd.address
    ));
    let truth = Truth {
        followed,
        daemons: vec![daemon],
        ..Truth::default()
    };
    Ok((ctd, rec, truth, rootfs))
}

/// What the recorder follows, said as an operator would.
pub(crate) fn follow_what(follow: &Follow, launch: Launch) -> String {
    match (follow, launch) {
        (Follow::Pid(p), Launch::Daemon) => {
            format!("--pid {p} (the running containerd and everything it starts)")
        }
        (Follow::Pid(p), Launch::Supervised) => {
            format!("--pid {p} (the supervisor: the containerd it starts, and the one it restarts)")
        }
        (Follow::Command(argv), _) => format!("-- {}", argv.join(" ")),
    }
}

pub(crate) fn containerd(lab: &Lab, cleanup: &mut Cleanup) -> Result<(Truth, String)> {
    let (ctd, rec, mut truth, rootfs) = containerd_setup(lab, cleanup, true, Launch::Daemon)?;
    for id in ["lab-a", "lab-b"] {
        let c = ctd.run(lab, cleanup, &rootfs, id)?;
        truth.containers.push(c);
        truth
            .moments
            .push(Moment::now(format!("containerd: {id} running")));
    }
    lab.say("two containers, two shims: each shim was adopted by init (or the nearest subreaper) when `shim start` exited, and each container init was adopted by its shim when `runc create` exited");
    for c in &truth.containers {
        ctd.remove(lab, c)?;
    }
    ctd.stop(lab)?;
    let summary = finish(lab, rec)?;
    Ok((truth, summary))
}

pub(crate) fn restart(lab: &Lab, cleanup: &mut Cleanup) -> Result<(Truth, String)> {
    // Never restart the host's daemon: always a private one.
    let (ctd, rec, truth, rootfs) = containerd_setup(lab, cleanup, false, Launch::Supervised)?;
    let daemon = truth.daemons[0].clone();
    let c = ctd.run(lab, cleanup, &rootfs, "lab-r")?;
    lab.say("ctr task exec -d --exec-id lab-exec lab-r sleep 301: the shim runs `runc exec`; the new process ends up under the shim too");
    ctd.ctr(&[
        "task",
        "exec",
        "-d",
        "--exec-id",
        "lab-exec",
        "lab-r",
        "/bin/sleep",
        "301",
    ])?;
    let exec_pid = wait_for("the exec'd process", STARTUP, || {
        let out = ctd.ctr(&["task", "ps", "lab-r"])?;
        Ok(out
            .lines()
            .filter_map(|l| l.split_whitespace().next()?.parse::<u32>().ok())
            .find(|p| *p != c.init.pid)
            .filter(|p| ProcInfo::read(*p).is_ok_and(|i| i.argv.iter().any(|a| a == "301"))))
    })?;
    pause(Duration::from_millis(300))?;
    let exec_before = ProcInfo::read(exec_pid)?;
    let before = Moment::now("restart: before, container and exec running");
    lab.say(format!(
        "/proc now: exec'd sleep {} (ppid {})",
        exec_before.pid, exec_before.ppid
    ));
    lab.say(format!(
        "stopping containerd {} (SIGTERM, as `systemctl restart containerd` would); the shim and its processes do not depend on it",
        daemon.pid
    ));
    stop_pid(daemon.pid, libc::SIGTERM, Duration::from_secs(10));
    let daemon2 = ctd.wait_ready(Some(daemon.pid))?;
    lab.say(format!(
        "containerd is back as pid {} (was {}); it reconnects to the running shim",
        daemon2.pid, daemon.pid
    ));
    pause(Duration::from_millis(300))?;
    let after = ContainerTruth {
        id: c.id.clone(),
        name: None,
        init: ProcInfo::read(c.init.pid)?,
        monitor: ProcInfo::read(c.monitor.pid)?,
    };
    let exec_after = ProcInfo::read(exec_pid)?;
    let after_moment = Moment::now("restart: after containerd came back");
    describe(lab, &after, "shim");
    lab.say(format!(
        "/proc now: exec'd sleep {} (ppid {}): same pids, same parents",
        exec_after.pid, exec_after.ppid
    ));
    // The task must still be known to the new daemon.
    let still = ctd.task_pid("lab-r")?;
    if still != c.init.pid {
        bail!(
            "after the restart containerd reports task pid {still}, not {}",
            c.init.pid
        );
    }
    ctd.remove(lab, &c)?;
    ctd.stop(lab)?;
    let summary = finish(lab, rec)?;
    Ok((
        Truth {
            moments: vec![before, after_moment],
            daemons: vec![daemon, daemon2],
            containers: vec![c],
            after_restart: vec![after],
            exec: vec![exec_before, exec_after],
            ..truth
        },
        summary,
    ))
}

// ---------------------------------------------------------------------------------------------
// podman

/// podman's global options: its storage, state and temporary files under `dir` (vfs), the
/// cgroupfs manager, no events log.
fn podman_storage(dir: &Path) -> Vec<String> {
    [
        "--root",
        &s(&dir.join("root")),
        "--runroot",
        &s(&dir.join("runroot")),
        "--tmpdir",
        &s(&dir.join("tmp")),
        "--storage-driver",
        "vfs",
        "--cgroup-manager",
        "cgroupfs",
        "--events-backend",
        "none",
    ]
    .iter()
    .map(|x| x.to_string())
    .collect()
}

/// `podman OPTS run -d --name NAME ... --rootfs ROOTFS /bin/sleep 300`: the container
/// started with runc, no network, from a rootfs (no image).
fn podman_run_argv(opts: &[String], name: &str, rootfs: &Path) -> Result<Vec<String>> {
    let mut argv = vec![s(&which("podman").context("podman is not installed")?)];
    argv.extend(opts.iter().cloned());
    argv.extend(
        [
            "run",
            "-d",
            "--name",
            name,
            "--runtime",
            "runc",
            "--network",
            "none",
            "--ulimit",
            "nofile=1024:1024",
            "--ulimit",
            "nproc=1024:1024",
            "--rootfs",
            &s(rootfs),
            "/bin/sleep",
            "300",
        ]
        .iter()
        .map(|x| x.to_string()),
    );
    Ok(argv)
}

pub(crate) fn podman(lab: &Lab, cleanup: &mut Cleanup) -> Result<(Truth, String)> {
    lab.say("building a busybox-static rootfs (no image pull)");
    let rootfs = busybox_rootfs(&lab.work.join("rootfs"))?;
    let pod = lab.work.join("podman");
    let opts = podman_storage(&pod);
    let name = "lab-podman".to_string();
    cleanup.push(Undo::PodmanContainer {
        opts: opts.clone(),
        name: name.clone(),
    });
    let argv = podman_run_argv(&opts, &name, &rootfs)?;
    let rec = start_recorder(
        lab,
        &Follow::Command(argv),
        "-- podman run -d --runtime runc … (followed from its first instruction)",
    )?;
    let followed = rec.command_pid()?;
    lab.say("podman starts conmon, which forks again: the survivor sets PR_SET_CHILD_SUBREAPER and runs `runc create`; podman runs `runc start`");
    let podman = |args: &[&str]| output(Command::new("podman").args(&opts).args(args));
    let (init, conmon) = wait_for("the container to run", STARTUP, || {
        let Ok(out) = podman(&[
            "inspect",
            "--format",
            "{{.State.Pid}} {{.State.ConmonPid}}",
            &name,
        ]) else {
            return Ok(None);
        };
        let v: Vec<u32> = out
            .split_whitespace()
            .filter_map(|x| x.parse().ok())
            .collect();
        Ok((v.len() == 2 && v[0] > 0 && v[1] > 0).then(|| (v[0], v[1])))
    })?;
    pause(Duration::from_millis(500))?;
    let c = ContainerTruth {
        id: name.clone(),
        name: None,
        init: ProcInfo::read(init)?,
        monitor: ProcInfo::read(conmon)?,
    };
    describe(lab, &c, "conmon");
    let moment = Moment::now("podman: container running");
    lab.say("conmon, not podman, is the container's parent: podman has exited, conmon stays to watch the workload");
    lab.say(format!(
        "podman rm -f {name}: conmon's exit hook runs `podman container cleanup`"
    ));
    podman(&["rm", "--force", "--time", "0", &name])?;
    wait_for("conmon to exit", STARTUP, || {
        Ok((!alive(conmon)).then_some(()))
    })?;
    let summary = finish(lab, rec)?;
    Ok((
        Truth {
            followed,
            moments: vec![moment],
            containers: vec![c],
            ..Truth::default()
        },
        summary,
    ))
}
