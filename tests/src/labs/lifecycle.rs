//! `cargo xtask lab pod --lifecycle`: the rest of kubelet's part, through the CRI API. In a
//! third pod: an ExecSync and a detached exec into a running container, a container that
//! crashes and is created again (attempt 1), one with a memory limit that the OOM killer
//! ends, a StopContainer with a grace period its init ignores SIGTERM through, then
//! StopPodSandbox and RemovePodSandbox. The truth comes from the runtime (ContainerStatus:
//! exit code and reason), /proc and the kernel's own OOM counter.

use anyhow::{bail, Context, Result};
use std::time::{Duration, Instant};

use crate::labs::cleanup::Cleanup;
use crate::labs::cri::{v1, ContainerSpec, ContainerState, Cri, PodSpec};
use crate::labs::scenarios::{Containerd, STARTUP};
use crate::labs::system::{alive, find_procs, wait_for, ProcInfo};
use crate::labs::Lab;

/// The hog container's memory limit.
pub const HOG_LIMIT: i64 = 32 << 20;
/// StopContainer's grace period for the stopper (seconds).
pub const GRACE_SECS: i64 = 2;

/// One container's life as the runtime and /proc told it.
#[derive(Clone, Debug)]
pub struct Life {
    pub id: String,
    pub name: String,
    /// Its init's host pid (from the runtime's verbose status).
    pub init: u32,
    /// ContainerStatus once it exited (`None`: it was still running when read).
    pub end: Option<ContainerState>,
}

/// What the lifecycle pod showed.
#[derive(Clone, Debug)]
pub struct LifecycleTruth {
    pub pod: String,
    pub sandbox_id: String,
    pub pause: u32,
    pub shim: ProcInfo,
    /// `app`, which the execs run in.
    pub app: Life,
    /// ExecSync's exit code.
    pub exec_sync_code: i32,
    /// The detached exec's process while it ran (its parent: the shim).
    pub detached: ProcInfo,
    /// `crasher`'s two lives: exit 3, then attempt 1.
    pub crashed: Life,
    pub restarted: Life,
    /// `hog`: OOMKilled; the kernel's `oom_kill` count (/proc/vmstat) went up by this much.
    pub hog: Life,
    pub hog_cgroup: String,
    pub oom_kills: u64,
    /// `stopper`: StopContainer with a grace period; how long StopContainer took.
    pub stopper: Life,
    pub stop_took: Duration,
}

fn busybox(image: &str, name: &str, script: &str) -> ContainerSpec {
    ContainerSpec::new(name, image, &["/bin/sh", "-c", script])
}

/// The kernel's count of OOM kills since boot (`oom_kill` in /proc/vmstat).
fn oom_kill_count() -> Result<u64> {
    let text = std::fs::read_to_string("/proc/vmstat")?;
    text.lines()
        .find_map(|l| l.strip_prefix("oom_kill "))
        .and_then(|v| v.trim().parse().ok())
        .context("/proc/vmstat has no oom_kill line")
}

/// Starts a container and reads its init's pid at once (the runtime knows it from `runc
/// create`, before the workload can end).
fn start(cri: &mut Cri, pod: &PodSpec, sandbox: &str, c: &ContainerSpec) -> Result<Life> {
    let id = cri.start_container(pod, sandbox, c)?;
    let init = cri.container_pid(&id)?;
    Ok(Life {
        id,
        name: c.name.clone(),
        init,
        end: None,
    })
}

/// Waits until the container has exited, and keeps its status.
fn wait_exited(cri: &mut Cri, life: &mut Life) -> Result<()> {
    let st = wait_for(&format!("{} to exit", life.name), STARTUP, || {
        let st = cri.container_state(&life.id)?;
        Ok((st.state == v1::ContainerState::ContainerExited).then_some(st))
    })?;
    life.end = Some(st);
    Ok(())
}

/// The lifecycle pod, from RunPodSandbox to RemovePodSandbox.
pub(crate) fn lifecycle(
    lab: &Lab,
    cri: &mut Cri,
    ctd: &Containerd,
    cleanup: &mut Cleanup,
    spec: &PodSpec,
    image: &str,
) -> Result<LifecycleTruth> {
    let pod = super::sandbox::run_pod(lab, cri, cleanup, spec, &[])?;
    let sandbox = pod.sandbox_id.clone();
    let mut app = start(
        cri,
        spec,
        &sandbox,
        &busybox(image, "app", "exec sleep 3006"),
    )?;
    let (exec_sync_code, _) = cri.exec_sync(&app.id, &["/bin/cat", "/etc/hostname"])?;
    lab.say(format!(
        "ExecSync app `cat /etc/hostname` → exit {exec_sync_code}: the shim ran `runc exec`, which waited for cat"
    ));
    let detached = detached_exec(lab, ctd, &app, pod.shim.pid)?;
    let (crashed, restarted) = crash_and_restart(lab, cri, spec, &sandbox, image)?;
    let (hog, hog_cgroup, oom_kills) = oom(lab, cri, spec, &sandbox, image)?;
    let (stopper, stop_took) = stop_with_grace(lab, cri, spec, &sandbox, image)?;
    lab.say(format!(
        "StopPodSandbox + RemovePodSandbox {}: app and crasher killed, CNI DEL, the shim exits",
        pod.name
    ));
    cri.stop_pod(&sandbox)?;
    let mut restarted = restarted;
    app.end = Some(cri.container_state(&app.id)?);
    restarted.end = Some(cri.container_state(&restarted.id)?);
    cri.remove_pod(&sandbox)?;
    let shim = pod.shim.pid;
    wait_for("the shim to exit", STARTUP, || {
        Ok((!alive(shim)).then_some(()))
    })?;
    Ok(LifecycleTruth {
        pod: pod.name,
        sandbox_id: sandbox,
        pause: pod.containers[0].init.pid,
        shim: pod.shim,
        app,
        exec_sync_code,
        detached,
        crashed,
        restarted,
        hog,
        hog_cgroup,
        oom_kills,
        stopper,
        stop_took,
    })
}

/// `ctr task exec --detach`: the shim runs `runc exec --detach`, which returns at once; the
/// process, orphaned, is adopted by the shim (its subreaper).
fn detached_exec(lab: &Lab, ctd: &Containerd, app: &Life, shim: u32) -> Result<ProcInfo> {
    ctd.ctr_in(
        "k8s.io",
        &[
            "tasks",
            "exec",
            "--detach",
            "--exec-id",
            "lab-detached",
            &app.id,
            "/bin/sleep",
            "3007",
        ],
    )?;
    let p = wait_for("the detached exec", STARTUP, || {
        Ok(
            find_procs(|p| p.argv.iter().any(|a| a == "3007") && p.comm == "sleep")
                .into_iter()
                .next(),
        )
    })?;
    if p.ppid != shim {
        bail!("the detached exec {p} is not the shim {shim}'s child");
    }
    lab.say(format!(
        "ctr task exec --detach app sleep 3007 → /proc: {p}, adopted by the shim {shim} once `runc exec --detach` returned"
    ));
    Ok(p)
}

/// A container whose process exits 3, and kubelet's restart: the same name, attempt 1.
fn crash_and_restart(
    lab: &Lab,
    cri: &mut Cri,
    spec: &PodSpec,
    sandbox: &str,
    image: &str,
) -> Result<(Life, Life)> {
    let first = busybox(image, "crasher", "sleep 1; exit 3");
    let mut crashed = start(cri, spec, sandbox, &first)?;
    wait_exited(cri, &mut crashed)?;
    let st = crashed
        .end
        .as_ref()
        .map(|e| (e.exit_code, e.reason.clone()));
    lab.say(format!(
        "crasher (init {}) exited: ContainerStatus says {st:?}; kubelet creates it again (attempt 1)",
        crashed.init
    ));
    let again = ContainerSpec {
        attempt: 1,
        ..busybox(image, "crasher", "exec sleep 3008")
    };
    let restarted = start(cri, spec, sandbox, &again)?;
    lab.say(format!(
        "crasher attempt 1: new container {}, init {}",
        &restarted.id[..12.min(restarted.id.len())],
        restarted.init
    ));
    Ok((crashed, restarted))
}

/// A container with a 32 MiB limit whose init doubles a string until the memory cgroup's
/// OOM killer ends it.
fn oom(
    lab: &Lab,
    cri: &mut Cri,
    spec: &PodSpec,
    sandbox: &str,
    image: &str,
) -> Result<(Life, String, u64)> {
    let before = oom_kill_count()?;
    let c = ContainerSpec {
        memory_limit: Some(HOG_LIMIT),
        ..busybox(
            image,
            "hog",
            "a=xxxxxxxxxxxxxxxx; while :; do a=\"$a$a\"; done",
        )
    };
    let mut hog = start(cri, spec, sandbox, &c)?;
    let cgroup = cri.container_state(&hog.id)?.info["runtimeSpec"]["linux"]["cgroupsPath"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    wait_exited(cri, &mut hog)?;
    let kills = oom_kill_count()? - before;
    let reason = hog.end.as_ref().map_or("", |e| e.reason.as_str());
    if reason != "OOMKilled" || kills == 0 {
        bail!("hog: ContainerStatus reason {reason:?}, {kills} OOM kills: not an OOM kill");
    }
    lab.say(format!(
        "hog (init {}, memory limit {HOG_LIMIT}) → ContainerStatus {reason}; /proc/vmstat oom_kill +{kills}; cgroup {cgroup}",
        hog.init
    ));
    Ok((hog, cgroup, kills))
}

/// StopContainer with a grace period: the runtime sends SIGTERM, which a pid 1 without a
/// handler never gets (SIGNAL_UNKILLABLE), then SIGKILL when the period runs out.
fn stop_with_grace(
    lab: &Lab,
    cri: &mut Cri,
    spec: &PodSpec,
    sandbox: &str,
    image: &str,
) -> Result<(Life, Duration)> {
    let mut stopper = start(
        cri,
        spec,
        sandbox,
        &busybox(image, "stopper", "exec sleep 3009"),
    )?;
    let t = Instant::now();
    cri.stop_container(&stopper.id, GRACE_SECS)?;
    let took = t.elapsed();
    wait_exited(cri, &mut stopper)?;
    lab.say(format!(
        "StopContainer stopper (init {}, grace {GRACE_SECS} s): took {:.1} s; ContainerStatus exit {:?}",
        stopper.init,
        took.as_secs_f64(),
        stopper.end.as_ref().map(|e| (e.exit_code, e.reason.clone()))
    ));
    Ok((stopper, took))
}
