//! One pod sandbox as kubelet starts it through the CRI API (RunPodSandbox, its status, each
//! container), shared by the pod lab's pods and the lifecycle pod.

use anyhow::{Context, Result};
use std::path::PathBuf;

use crate::labs::cleanup::{Cleanup, Undo};
use crate::labs::cri::{info_netns, info_pid, ContainerSpec, Cri, PodSpec};
use crate::labs::scenarios::shim_with_id;
use crate::labs::system::ProcInfo;
use crate::labs::{ContainerTruth, Lab, PodTruth};

/// Runs one pod: RunPodSandbox, its status, each container; the truth once all run.
pub(crate) fn run_pod(
    lab: &Lab,
    cri: &mut Cri,
    cleanup: &mut Cleanup,
    pod: &PodSpec,
    containers: &[ContainerSpec],
) -> Result<PodTruth> {
    let pid_ns = if pod.share_pid {
        "one pid namespace for the pod (shareProcessNamespace): pause is its init"
    } else {
        "a pid namespace per container (kubelet's default)"
    };
    lab.say(format!(
        "RunPodSandbox {}/{} (hostname {}, {pid_ns}): containerd runs the CNI plugins, then `containerd-shim-runc-v2 start` for the sandbox",
        pod.namespace, pod.name, pod.hostname
    ));
    let sandbox = cri.run_pod(pod)?;
    let (ip, info) = cri.pod_status(&sandbox)?;
    if let Some(ns) = info_netns(&info) {
        cleanup.push(Undo::Netns(PathBuf::from(ns)));
    }
    let pause_pid = info_pid(&info).context("PodSandboxStatus: no sandbox pid")?;
    let shim = shim_with_id(&sandbox)?;
    let pause = ProcInfo::read(pause_pid)?;
    lab.say(format!(
        "PodSandboxStatus: sandbox {} has IP {ip}; /proc now: shim {} (ppid {}), {pause}",
        &sandbox[..12.min(sandbox.len())],
        shim.pid,
        shim.ppid,
    ));
    let mut truth = PodTruth {
        name: format!("{}/{}", pod.namespace, pod.name),
        sandbox_id: sandbox.clone(),
        ip,
        shared_pid: pod.share_pid,
        shim: shim.clone(),
        containers: vec![ContainerTruth {
            id: sandbox.clone(),
            name: None,
            init: pause,
            monitor: shim.clone(),
        }],
        procs: Vec::new(),
    };
    for c in containers {
        lab.say(format!(
            "CreateContainer + StartContainer {} ({}): `shim start` finds the pod's shim and exits; that shim runs `runc create`",
            c.name,
            c.command.last().map_or("", String::as_str)
        ));
        let id = cri.start_container(pod, &sandbox, c)?;
        let init = ProcInfo::read(cri.container_pid(&id)?)?;
        lab.say(format!(
            "/proc now: {} {init} — the pod's shim is {}",
            c.name, shim.pid
        ));
        truth.containers.push(ContainerTruth {
            id,
            name: Some(c.name.clone()),
            init,
            monitor: shim.clone(),
        });
    }
    Ok(truth)
}
