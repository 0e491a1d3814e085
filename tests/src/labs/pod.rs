//! The pod lab: a private containerd with its CRI plugin, driven through the CRI API the way
//! kubelet drives it (sandbox, CNI networking, containers in the pod, exec, teardown).

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::labs::cleanup::{stop_pid, Cleanup, Undo};
use crate::labs::cri::{info_netns, ContainerSpec, Cri, PodSpec};
use crate::labs::image::oci_archive;
use crate::labs::scenarios::{finish, follow_what, s, start_recorder, Containerd, Launch, STARTUP};
use crate::labs::system::{find_procs, pause, wait_for, ProcInfo};
use crate::labs::{busybox_rootfs, Follow, Lab, Moment, PodTruth, Truth};

/// The CRI plugin's containerd namespace.
const K8S_NS: &str = "k8s.io";
/// Debian's containernetworking-plugins.
const CNI_BIN: &str = "/usr/lib/cni";

/// Names that are this run's alone (other labs may run at the same time).
struct Names {
    pause: String,
    busybox: String,
    network: String,
    bridge: String,
    subnet: String,
    cgroup: String,
}

impl Names {
    fn new() -> Names {
        let id = std::process::id();
        Names {
            pause: format!("tracer-lab.local/pause:{id}"),
            busybox: format!("tracer-lab.local/busybox:{id}"),
            network: format!("tracer-lab-{id}"),
            // IFNAMSIZ: 15 bytes at most.
            bridge: format!("trlab{}", id % 10_000_000),
            subnet: format!("10.{}.{}.0/24", 200 + id % 50, (id / 50) % 256),
            cgroup: cgroup_name(),
        }
    }
}

/// The cgroupfs parent of the lab's pods. Its removal must be undone after the processes in
/// it are gone, so the guard registers it before the scratch directory's.
pub(crate) fn cgroup_name() -> String {
    format!("tracer-lab-pod-{}", std::process::id())
}

/// The CRI plugin's configuration: local sandbox image, CNI from Debian's bin dir and the
/// lab's conflist, oom_score_adj never lowered (this VM refuses it: runc fails without).
fn cri_toml(n: &Names, cni_conf: &Path) -> String {
    format!(
        "[plugins.\"io.containerd.grpc.v1.cri\"]\n\
         \x20 sandbox_image = \"{pause}\"\n\
         \x20 restrict_oom_score_adj = true\n\
         [plugins.\"io.containerd.grpc.v1.cri\".containerd]\n\
         \x20 snapshotter = \"native\"\n\
         [plugins.\"io.containerd.grpc.v1.cri\".cni]\n\
         \x20 bin_dir = \"{CNI_BIN}\"\n\
         \x20 conf_dir = \"{conf}\"\n",
        pause = n.pause,
        conf = s(cni_conf),
    )
}

/// A bridge with host-local addresses from a lab-only subnet (containerd adds loopback).
fn write_cni_conf(dir: &Path, n: &Names, ipam_dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    let conf = serde_json::json!({
        "cniVersion": "0.4.0",
        "name": n.network,
        "plugins": [{
            "type": "bridge",
            "bridge": n.bridge,
            "isGateway": true,
            "ipMasq": false,
            "ipam": {
                "type": "host-local",
                "ranges": [[{ "subnet": n.subnet }]],
                "dataDir": s(ipam_dir),
            },
        }],
    });
    std::fs::write(
        dir.join("10-lab.conflist"),
        serde_json::to_vec_pretty(&conf)?,
    )?;
    Ok(())
}

/// The pause image (catatonit in pause mode, as podman runs it) and a busybox-static image.
fn build_images(lab: &Lab, n: &Names) -> Result<[PathBuf; 2]> {
    lab.say("building two images without a registry, as OCI image layouts: pause = catatonit -P (podman's own pause), apps = busybox-static");
    let pause_root = lab.work.join("pause-rootfs");
    std::fs::create_dir_all(&pause_root)?;
    let catatonit =
        crate::labs::system::which("catatonit").context("catatonit is not installed")?;
    std::fs::copy(catatonit, pause_root.join("pause"))?;
    for d in ["proc", "sys", "dev", "etc"] {
        std::fs::create_dir_all(pause_root.join(d))?;
    }
    let pause = oci_archive(&lab.work, &pause_root, &n.pause, &["/pause", "-P"])?;
    let apps = busybox_rootfs(&lab.work.join("busybox-rootfs"))?;
    let busybox = oci_archive(&lab.work, &apps, &n.busybox, &["/bin/sh"])?;
    Ok([pause, busybox])
}

/// The two pods: "web" (one pid namespace per container, kubelet's default; its first
/// container forks a worker that forks again, like nginx) and "shared"
/// (`shareProcessNamespace`: pause is the namespace's init and reaps the orphan made there).
fn pods(n: &Names) -> Vec<(PodSpec, Vec<ContainerSpec>)> {
    let pod = |name: &str, share_pid| PodSpec {
        name: name.to_string(),
        namespace: "tracer-lab".into(),
        uid: format!("{name}-{}", std::process::id()),
        hostname: format!("{name}-pod"),
        share_pid,
        cgroup_parent: format!("/{}", n.cgroup),
    };
    let c =
        |name: &str, script: &str| ContainerSpec::new(name, &n.busybox, &["/bin/sh", "-c", script]);
    vec![
        (
            pod("web", false),
            vec![
                c("master", "sh -c 'sleep 3002 & wait' & wait"),
                c("sidecar", "exec sleep 3001"),
            ],
        ),
        (
            pod("shared", true),
            vec![
                c("orphaner", "(sleep 3003 &); exec sleep 3004"),
                c("sleeper", "exec sleep 3005"),
            ],
        ),
    ]
}

/// `--lifecycle`'s third pod: a pid namespace per container.
fn lifecycle_pod(n: &Names) -> PodSpec {
    PodSpec {
        name: "life".into(),
        namespace: "tracer-lab".into(),
        uid: format!("life-{}", std::process::id()),
        hostname: "life-pod".into(),
        share_pid: false,
        cgroup_parent: format!("/{}", n.cgroup),
    }
}

/// Every live descendant of `root` (by /proc ppid), `root` excluded.
pub fn descendants(root: u32) -> Vec<ProcInfo> {
    let all = find_procs(|_| true);
    let mut out: Vec<ProcInfo> = Vec::new();
    let mut frontier = vec![root];
    while let Some(p) = frontier.pop() {
        for c in all.iter().filter(|c| c.ppid == p) {
            if !out.iter().any(|o| o.pid == c.pid) {
                frontier.push(c.pid);
                out.push(c.clone());
            }
        }
    }
    out
}

/// Waits until the pod's processes are all there (the web master's worker and its child;
/// the shared pod's orphan, adopted by pause), then records them.
fn settle(lab: &Lab, pod: &mut PodTruth) -> Result<()> {
    let pause_pid = pod.containers[0].init.pid;
    let first = pod.containers[1].init.pid;
    if pod.shared_pid {
        let orphan = wait_for("the orphan to be adopted", STARTUP, || {
            Ok(
                find_procs(|p| p.argv.iter().any(|a| a == "3003") && p.ppid == pause_pid)
                    .into_iter()
                    .next(),
            )
        })?;
        lab.say(format!(
            "/proc now: the orphan {orphan} — its parent is pause: in a shared pid namespace the kernel hands orphans to the namespace's init"
        ));
    } else {
        let grandchild = wait_for("the worker's child", STARTUP, || {
            Ok(descendants(first).into_iter().find(|p| p.comm == "sleep"))
        })?;
        let worker = ProcInfo::read(grandchild.ppid)?;
        lab.say(format!(
            "/proc now: master {first} → worker {worker} → {grandchild} (like nginx's master and workers)"
        ));
    }
    pause(Duration::from_millis(300))?;
    pod.shim = ProcInfo::read(pod.shim.pid)?;
    pod.procs = descendants(pod.shim.pid);
    Ok(())
}

/// `--restart-runtime`: containerd is stopped and comes back while the pods run; their
/// processes keep their pids and parents.
fn restart(
    lab: &Lab,
    ctd: &Containerd,
    daemon: &ProcInfo,
    pods: &[PodTruth],
) -> Result<(ProcInfo, Cri)> {
    lab.say(format!(
        "stopping containerd {} (SIGTERM, as `systemctl restart containerd` would); the shims and the pods do not depend on it",
        daemon.pid
    ));
    stop_pid(daemon.pid, libc::SIGTERM, Duration::from_secs(10));
    let daemon2 = ctd.wait_ready(Some(daemon.pid))?;
    let cri = connect(lab, ctd)?;
    for pod in pods {
        let now = descendants(pod.shim.pid);
        let same = pod
            .procs
            .iter()
            .all(|p| now.iter().any(|q| q.pid == p.pid && q.ppid == p.ppid));
        if !same {
            bail!("pod {}: processes changed across the restart", pod.name);
        }
        lab.say(format!(
            "/proc now: pod {}: the same {} processes, same parents, under shim {} (ppid {})",
            pod.name,
            now.len(),
            pod.shim.pid,
            ProcInfo::read(pod.shim.pid)?.ppid
        ));
    }
    lab.say(format!(
        "containerd is back as pid {} (was {}); the pods are removed through it",
        daemon2.pid, daemon.pid
    ));
    Ok((daemon2, cri))
}

/// A CRI connection once the plugin answers (it loads after the daemon's own services).
fn connect(lab: &Lab, ctd: &Containerd) -> Result<Cri> {
    let sock = PathBuf::from(&ctd.address);
    let (cri, version) = wait_for("the CRI plugin to answer", STARTUP, || {
        let Ok(mut cri) = Cri::connect(&sock) else {
            return Ok(None);
        };
        Ok(cri.version().ok().map(|v| (cri, v)))
    })?;
    lab.say(format!("CRI answers on {}: {version}", ctd.address));
    Ok(cri)
}

/// Images, the CNI conflist and a private containerd with its CRI plugin, launched as
/// `launch` says (a supervised one waits at its gate), with what undoes them.
fn prepare(
    lab: &Lab,
    cleanup: &mut Cleanup,
    launch: Launch,
) -> Result<(Names, [PathBuf; 2], Containerd, Follow)> {
    let n = Names::new();
    let images = build_images(lab, &n)?;
    let cni_dir = lab.work.join("cni");
    write_cni_conf(&cni_dir, &n, &lab.work.join("cni-ipam"))?;
    cleanup.push(Undo::Link(n.bridge.clone()));
    lab.say(format!(
        "CNI: bridge {} with host-local addresses from {} (plugins from {CNI_BIN}, Debian's containernetworking-plugins)",
        n.bridge, n.subnet
    ));
    let (ctd, follow) = Containerd::choose(lab, false, Some(&cri_toml(&n, &cni_dir)), launch)?;
    if let Some(u) = ctd.undo() {
        cleanup.push(u);
    }
    Ok((n, images, ctd, follow))
}

/// Once containerd answers: the images imported into the CRI namespace, a CRI connection.
fn import_and_connect(
    lab: &Lab,
    ctd: &Containerd,
    n: &Names,
    images: &[PathBuf],
) -> Result<(ProcInfo, Cri)> {
    let daemon = ctd.wait_ready(None)?;
    for img in images {
        ctd.ctr_in(
            K8S_NS,
            &["images", "import", "--snapshotter", "native", &s(img)],
        )?;
    }
    lab.say(format!(
        "containerd {} answers; images imported into its k8s.io namespace: {}, {}",
        daemon.pid, n.pause, n.busybox
    ));
    Ok((daemon, connect(lab, ctd)?))
}

pub(crate) fn pod(lab: &Lab, cleanup: &mut Cleanup) -> Result<(Truth, String)> {
    // Restarting the runtime needs a supervisor that the recorder follows.
    let launch = match lab.restart_runtime {
        true => Launch::Supervised,
        false => Launch::Daemon,
    };
    let (n, images, ctd, follow) = prepare(lab, cleanup, launch)?;
    let rec = start_recorder(lab, &follow, &follow_what(&follow, launch))?;
    ctd.open_gate()?;
    let (daemon, mut cri) = import_and_connect(lab, &ctd, &n, &images)?;
    let mut truth = Truth {
        followed: match follow {
            Follow::Pid(p) => p,
            Follow::Command(_) => 0,
        },
        daemons: vec![daemon.clone()],
        ..Truth::default()
    };
    for (spec, containers) in pods(&n) {
        let mut p = super::sandbox::run_pod(lab, &mut cri, cleanup, &spec, &containers)?;
        settle(lab, &mut p)?;
        truth.pods.push(p);
    }
    let web = &truth.pods[0];
    let (code, out) = cri.exec_sync(&web.containers[1].id, &["/bin/cat", "/etc/hostname"])?;
    lab.say(format!(
        "ExecSync master `cat /etc/hostname` → exit {code}: {:?} (the shim ran `runc exec`; the process is gone)",
        out.trim()
    ));
    truth.moments.push(Moment::now("pod: both pods running"));
    if lab.lifecycle {
        let spec = lifecycle_pod(&n);
        let life = super::lifecycle::lifecycle(lab, &mut cri, &ctd, cleanup, &spec, &n.busybox)?;
        truth.lifecycle = Some(life);
    }
    for p in &truth.pods {
        lab.say(format!(
            "pod {}: one shim {} (ppid {}) for the sandbox and its {} containers; {} processes under it",
            p.name,
            p.shim.pid,
            p.shim.ppid,
            p.containers.len() - 1,
            p.procs.len()
        ));
    }
    if lab.restart_runtime {
        let (daemon2, cri2) = restart(lab, &ctd, &daemon, &truth.pods)?;
        truth.daemons.push(daemon2);
        truth
            .moments
            .push(Moment::now("pod: after containerd came back"));
        cri = cri2;
    }
    for p in &truth.pods {
        lab.say(format!(
            "StopPodSandbox + RemovePodSandbox {}: containers killed, CNI DEL, the shim exits",
            p.name
        ));
        cri.remove_pod(&p.sandbox_id)?;
        let shim = p.shim.pid;
        wait_for("the shim to exit", STARTUP, || {
            Ok((!crate::labs::system::alive(shim)).then_some(()))
        })?;
    }
    ctd.stop(lab)?;
    let summary = finish(lab, rec)?;
    Ok((truth, summary))
}

/// How the pod-creation benchmark watches containerd.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Watch {
    Untraced,
    /// `tracer record --pid <containerd>`.
    Tracer,
    /// `strace -f -p <containerd>` with the lifecycle syscalls (the seeds' method).
    Strace,
}

/// Pod creation latency as kubelet drives it (RunPodSandbox + CreateContainer +
/// StartContainer of one container), `rounds` paired rounds of `watches` in rotating order
/// after one warm-up each; the seconds per watch. Pods are removed between runs, untimed.
pub fn bench_pod_creation(lab: &Lab, watches: &[Watch], rounds: u32) -> Result<Vec<Vec<f64>>> {
    let mut cleanup = Cleanup::new();
    let _ = std::fs::remove_dir_all(&lab.work);
    std::fs::create_dir_all(&lab.work)?;
    cleanup.extend(Undo::new_dir("/run/containerd", "containerd"));
    cleanup.push(Undo::new_cgroup(&cgroup_name()));
    cleanup.push(Undo::Dir(lab.work.clone()));
    let (n, images, ctd, _) = prepare(lab, &mut cleanup, Launch::Daemon)?;
    let (daemon, mut cri) = import_and_connect(lab, &ctd, &n, &images)?;
    let (spec, containers) = pods(&n).swap_remove(0);
    let one = &containers[1..];
    let mut times = vec![Vec::new(); watches.len()];
    for round in 0..=rounds {
        for k in 0..watches.len() {
            let i = (k + round as usize) % watches.len();
            let t = time_pod(
                lab,
                &mut cri,
                &mut cleanup,
                &spec,
                one,
                watches[i],
                daemon.pid,
            )?;
            // Round 0 warms every configuration up; it is not counted.
            if round > 0 {
                times[i].push(t);
            }
        }
    }
    ctd.stop(lab)?;
    cleanup.run();
    Ok(times)
}

/// One pod created under `watch`, timed; then removed (untimed, unwatched).
fn time_pod(
    lab: &Lab,
    cri: &mut Cri,
    cleanup: &mut Cleanup,
    spec: &PodSpec,
    containers: &[ContainerSpec],
    watch: Watch,
    daemon: u32,
) -> Result<f64> {
    let trace = lab.work.join("bench.trace");
    let rec = match watch {
        Watch::Tracer => Some(crate::labs::Recorder::start(
            &lab.tracer,
            &trace,
            &Follow::Pid(daemon),
        )?),
        _ => None,
    };
    let strace = match watch {
        Watch::Strace => Some(attach_strace(daemon)?),
        _ => None,
    };
    let start = std::time::Instant::now();
    let sandbox = cri.run_pod(spec)?;
    for c in containers {
        cri.start_container(spec, &sandbox, c)?;
    }
    let secs = start.elapsed().as_secs_f64();
    drop(rec);
    if let Some(mut st) = strace {
        crate::labs::system::signal(st.id(), libc::SIGINT);
        let _ = st.wait();
    }
    let (_, info) = cri.pod_status(&sandbox)?;
    if let Some(ns) = info_netns(&info) {
        cleanup.push(Undo::Netns(PathBuf::from(ns)));
    }
    cri.remove_pod(&sandbox)?;
    Ok(secs)
}

/// `strace -f -p PID` on the lifecycle syscalls, once it has attached to every thread.
fn attach_strace(pid: u32) -> Result<std::process::Child> {
    let mut child = std::process::Command::new("strace")
        .args([
            "-f",
            "-e",
            "trace=clone,clone3,fork,vfork,execve,execveat,exit,exit_group,prctl",
            "-o",
            "/dev/null",
            "-p",
            &pid.to_string(),
        ])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .context("strace is not installed")?;
    let me = child.id();
    // Attached once every thread of the daemon has strace as its tracer.
    let threads = || -> Vec<u32> {
        std::fs::read_dir(format!("/proc/{pid}/task"))
            .map(|d| {
                d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                    .collect()
            })
            .unwrap_or_default()
    };
    let traced = |tid: u32| {
        std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/status"))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("TracerPid:"))
                    .and_then(|v| v.trim().parse::<u32>().ok())
            })
            == Some(me)
    };
    let res = wait_for("strace to attach", STARTUP, || {
        Ok(threads().into_iter().all(traced).then_some(()))
    });
    if let Err(e) = res {
        let _ = child.kill();
        let _ = child.wait();
        return Err(e);
    }
    Ok(child)
}
