//! Root tests of the agent's image run as deploy/daemonset.yaml says (podman in place of a
//! kubelet): a pod's birth published, and a capability short of the manifest named. Run by
//! `cargo xtask test` as root (`--ignored`), after `cargo xtask image`.
#![cfg(feature = "capture")]

use std::process::{Command, Stdio};

use tests::agent::{assert_runc_run_birth, prerequisites, runc_run, scrape, tracer_out, Dirs};
use tests::bins::release_tracer;
use tests::prereq::require_program;
use tests::servers::{free_port, listening, sample, start_nats, wait_or};

/// The image `cargo xtask image` builds (before the root tests in `cargo xtask test`).
const IMAGE: &str = "localhost/tracer:latest";

/// A podman container removed (with force) when dropped.
struct Container(String);

impl Drop for Container {
    fn drop(&mut self) {
        let _ = Command::new("podman")
            .args(["rm", "--force", "--time", "2", &self.0])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

impl Container {
    fn logs(&self) -> String {
        Command::new("podman")
            .args(["logs", &self.0])
            .output()
            .map(|o| {
                String::from_utf8_lossy(&o.stdout).into_owned()
                    + &String::from_utf8_lossy(&o.stderr)
            })
            .unwrap_or_default()
    }
}

/// deploy/daemonset.yaml's container as a kubelet would run it on node `n1` (its pod IP the
/// host's: the manifest asks for the host network), publishing to `nats_port`.
fn manifest_run(nats_port: u16) -> tests::deploy::PodmanRun {
    let url = format!("nats://127.0.0.1:{nats_port}");
    // The node's key in a directory of the test's (made as the kubelet makes a
    // DirectoryOrCreate hostPath), not the machine's /var/lib/tracer.
    let keys = std::env::temp_dir().join(format!("tracer-daemonset-key-{nats_port}"));
    std::fs::create_dir_all(&keys).expect("key directory");
    let keys = keys.to_string_lossy().into_owned();
    let cluster = tests::deploy::Cluster {
        fields: [("spec.nodeName", "n1"), ("status.podIP", "127.0.0.1")].into(),
        // One loopback server: a stream of one copy (the manifest asks a cluster for 3).
        env: [("NATS_URL", url.as_str()), ("NATS_REPLICAS", "1")].into(),
        host_paths: [("/var/lib/tracer", keys.as_str())].into(),
    };
    tests::deploy::daemonset_run(
        &tests::workspace_root().join("deploy/daemonset.yaml"),
        &cluster,
    )
    .expect("deploy/daemonset.yaml translates to podman flags")
}

/// `podman run` of the image with `run`'s flags and arguments; `detach` or in the foreground.
fn podman_run(run: &tests::deploy::PodmanRun, name: &str, detach: bool) -> std::process::Output {
    let mut cmd = Command::new("podman");
    cmd.args(["run", "--pull=never", "--name", name]);
    if detach {
        cmd.arg("--detach");
    }
    // Not the manifest's: podman on this machine cannot apply its own default rlimits to a
    // container without CAP_SYS_RESOURCE ("error setting rlimit type 7"); a kubelet's runtime
    // passes the node's.
    cmd.args(["--ulimit=nofile=1024:1024", "--ulimit=nproc=1024:1024"]);
    cmd.args(&run.flags).arg(IMAGE).args(&run.args);
    cmd.stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run podman: {e}"))
}

/// `run` started detached as `TAG-PID`; the test fails if podman cannot start it.
fn start_container(run: &tests::deploy::PodmanRun, tag: &str) -> Container {
    let c = Container(format!("{tag}-{}", std::process::id()));
    let started = podman_run(run, &c.0, true);
    assert!(
        started.status.success(),
        "podman run: {}",
        String::from_utf8_lossy(&started.stderr)
    );
    c
}

/// The metrics port the manifest's `--listen` names.
fn manifest_metrics_port(run: &tests::deploy::PodmanRun) -> u16 {
    run.args
        .iter()
        .find_map(|a| a.strip_prefix("--listen="))
        .and_then(|a| a.rsplit(':').next()?.parse().ok())
        .expect("the manifest's agent has --listen=IP:PORT")
}

#[test]
#[ignore = "root: runs the agent's image with podman as the DaemonSet says, nats-server, runc"]
fn the_daemonsets_container_publishes_a_pod_as_the_manifest_runs_it() {
    let have_image = || {
        Command::new("podman")
            .args(["image", "exists", IMAGE])
            .status()
            .is_ok_and(|s| s.success())
    };
    if !(prerequisites()
        && require_program("podman", "podman")
        && tests::prereq::require(
            "image",
            have_image(),
            "`cargo xtask image` builds localhost/tracer:latest",
        ))
    {
        return;
    }
    let tracer = release_tracer().expect("tracer binary");
    let dirs = Dirs::new("daemonset");
    let nats_port = free_port();
    let mut nats = start_nats(
        nats_port,
        &dirs.dir.join("store"),
        &dirs.dir.join("nats.log"),
    );
    let run = manifest_run(nats_port);
    let metrics_port = manifest_metrics_port(&run);
    assert!(
        !listening(metrics_port),
        "port {metrics_port} (the manifest's) is taken"
    );

    let agent = start_container(&run, "tracer-daemonset");
    wait_or(
        "the agent in its container to capture",
        60,
        || {
            let _ = Command::new("/bin/true").status();
            scrape(metrics_port).is_some_and(|m| m.contains("tracer_events_total{"))
        },
        || agent.logs(),
    );
    let births = r#"tracer_container_births_total{runtime="runc"}"#;
    let before = sample(&scrape(metrics_port).unwrap_or_default(), births);
    let id = format!("tracer-ds-{}", std::process::id());
    let (runc_pid, init_pid) = runc_run(&dirs.dir.join("bundle"), &id);
    wait_or(
        "the birth in tracer_container_births_total",
        30,
        || sample(&scrape(metrics_port).unwrap_or_default(), births) >= before + 1.0,
        || agent.logs(),
    );
    let url = format!("nats://127.0.0.1:{nats_port}/n1");
    let story: serde_json::Value =
        serde_json::from_str(&tracer_out(&tracer, &["story", &url, "--format", "json"]))
            .expect("story JSON");
    let tree: serde_json::Value =
        serde_json::from_str(&tracer_out(&tracer, &["tree", &url, "--format", "json"]))
            .expect("tree JSON");
    drop(agent);
    nats.terminate();

    // Read back from NATS: the pod's name (from the bundle, read through the runtime's
    // /proc/PID/root from inside the container) and the CLONE_PARENT birth.
    let stories = story["stories"].as_array().expect("stories");
    let mine = stories
        .iter()
        .find(|s| s["init_pid"] == init_pid)
        .unwrap_or_else(|| panic!("no story of init {init_pid}: {story}"));
    assert_eq!(mine["pod"], format!("default/{id}"), "{mine}");
    assert_runc_run_birth(&tree, init_pid, runc_pid, &url);
}

#[test]
#[ignore = "root: runs the agent's image with podman, one capability short of the manifest"]
fn the_daemonsets_container_without_a_needed_capability_fails_naming_it() {
    if !(prerequisites() && require_program("podman", "podman")) {
        return;
    }
    let run = manifest_run(free_port());
    for cap in ["BPF", "PERFMON"] {
        assert!(
            run.cap_add.iter().any(|c| c == cap),
            "the manifest adds no {cap}"
        );
        let short = run.without_capability(cap);
        let name = Container(format!(
            "tracer-ds-no-{}-{}",
            cap.to_lowercase(),
            std::process::id()
        ));
        let out = podman_run(&short, &name.0, false);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success(),
            "the agent ran without CAP_{cap}: {stderr}"
        );
        let errors: Vec<&str> = stderr
            .lines()
            .filter(|l| l.starts_with("tracer:"))
            .collect();
        assert_eq!(errors.len(), 1, "one line from tracer expected: {stderr}");
        assert!(errors[0].contains(&format!("CAP_{cap}")), "{stderr}");
    }
    // Without CAP_SYS_PTRACE the agent runs but says what it cannot read.
    let short = run.without_capability("SYS_PTRACE");
    let agent = start_container(&short, "tracer-ds-no-ptrace");
    wait_or(
        "the warning about CAP_SYS_PTRACE",
        20,
        || agent.logs().contains("no CAP_SYS_PTRACE"),
        || agent.logs(),
    );
}
