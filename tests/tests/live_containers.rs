//! Root tests of containers under the real probes: `runc run`'s init stages and CLONE_PARENT,
//! an orphan reaped by the container's init, pod names and cgroups from the recording alone.
//! Run by `cargo xtask test` as root (`--ignored`).
#![cfg(feature = "capture")]

use std::path::Path;
use tests::{busybox_bundle, capture_command, temp_dir, which, Captured, RING};
use tracer::event::clone_flags as cf;
use tracer::synth::PodAnnotations;
use tracer::EventKind;

/// Removes runc container `id` (whatever state it is in) and the test's scratch directory.
fn remove_container(id: &str, dir: Option<&std::path::Path>) {
    let _ = std::process::Command::new("runc")
        .args(["delete", "--force", id])
        .status();
    if let Some(d) = dir {
        let _ = std::fs::remove_dir_all(d);
    }
}

#[test]
#[ignore = "root"]
fn runc_run_shows_init_stages_and_clone_parent() {
    runc_run(false);
}

#[test]
#[ignore = "root"]
fn runc_run_with_syscall_probes() {
    runc_run(true);
}

fn runc_run(syscalls: bool) {
    if which("runc").is_none() {
        panic!("runc is not installed (cargo xtask setup installs it)");
    }
    let dir = temp_dir("runc").expect("temp dir");
    let bundle = busybox_bundle(&dir, &["/bin/true"]).expect("bundle");
    let id = format!("tracer-test-{}", std::process::id());
    let bundle_s = bundle.to_string_lossy().to_string();
    let c = capture_command(
        &["runc", "run", "--bundle", &bundle_s, &id],
        RING,
        true,
        syscalls,
    );
    remove_container(&id, Some(&dir));
    let c = c.expect("capture");
    assert_eq!(c.drops, 0);
    assert_eq!(c.status.and_then(|s| s.code()), Some(0), "runc run failed");
    let runc = c.pid;
    // The engine predicted every parent the kernel then reported.
    let engine = tests::seeded_with_command(&c, "runc");
    tests::assert_no_model_disagreement(&engine, "runc run");

    let (parent, child, init) = runc_stages(&c);

    // PARENT clones CHILD and CHILD clones INIT, both with CLONE_PARENT: real parent = runc run.
    let cp: Vec<_> = c
        .events
        .iter()
        .filter_map(|e| {
            let EventKind::Fork {
                flags: Some(f),
                child_tgid,
                child_ppid,
                ..
            } = &e.kind
            else {
                return None;
            };
            let parent = f.contains(cf::CLONE_PARENT) && !f.contains(cf::CLONE_THREAD);
            parent.then_some((e.tgid, *child_tgid, *child_ppid))
        })
        .collect();
    assert_eq!(cp.len(), 2, "CLONE_PARENT clones: {cp:?}");
    assert_eq!(cp[0].0, parent);
    assert_eq!(cp[0].1, child);
    assert_eq!(cp[1].0, child);
    assert_eq!(cp[1].1, init);
    assert!(
        cp.iter().all(|&(_, _, ppid)| ppid == runc),
        "{cp:?} vs runc {runc}"
    );

    // runc run makes itself a subreaper: its prctl call, or without syscall probes the
    // probes' report of the flag.
    assert!(c
        .events
        .iter()
        .any(|e| e.tgid == runc && e.kind.as_prctl() == Some((36, 1, None))));

    // The container's process execs the workload.
    let exec = c.events.iter().find(|e| {
        e.tgid == init
            && matches!(&e.kind, EventKind::Exec { filename, .. } if filename.value == "/bin/true")
    });
    assert!(exec.is_some(), "no exec of /bin/true by INIT {init}");
}

/// One /proc observation of a process inside a container: host pid, host ppid, NSpid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Seen {
    pid: u32,
    ppid: u32,
    ns_pid: u32,
}

/// `pid` as /proc shows it, when it lives in a pid namespace one level below the host's.
fn seen_in_container(pid: u32) -> Option<Seen> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |k: &str| -> Vec<u32> {
        status
            .lines()
            .find_map(|l| l.strip_prefix(k))
            .map(|v| {
                v.split_whitespace()
                    .filter_map(|x| x.parse().ok())
                    .collect()
            })
            .unwrap_or_default()
    };
    match (field("NSpid:").as_slice(), field("PPid:").as_slice()) {
        ([_, ns_pid], [ppid]) => Some(Seen {
            pid,
            ppid: *ppid,
            ns_pid: *ns_pid,
        }),
        _ => None,
    }
}

/// The first process in a container whose cmdline is `argv`, and its parent, as /proc shows
/// them at one moment.
fn in_container_with_parent(argv: &[&str]) -> Option<(Seen, Seen)> {
    let want: Vec<u8> = argv
        .iter()
        .flat_map(|a| [a.as_bytes(), b"\0"].concat())
        .collect();
    tests::labs::system::pids().into_iter().find_map(|pid| {
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        if cmd != want {
            return None;
        }
        let me = seen_in_container(pid)?;
        Some((me, seen_in_container(me.ppid)?))
    })
}

#[test]
#[ignore = "root"]
fn an_orphan_in_a_container_is_reaped_by_the_containers_init() {
    if which("runc").is_none() {
        panic!("runc is not installed (cargo xtask setup installs it)");
    }
    let dir = temp_dir("orphan").expect("temp dir");
    let script = "(sleep 2 &); sleep 1";
    let bundle = busybox_bundle(&dir, &["sh", "-c", script]).expect("bundle");
    let id = format!("tracer-orphan-{}", std::process::id());
    let bundle_s = bundle.to_string_lossy().to_string();
    // /proc while the container runs: the orphan `sleep 2` and the container's init.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            // Its parent once the subshell is gone: the container's init (`sh`, or the
            // `sleep 1` it exec'd into).
            let mut found = None;
            while found.is_none() && !stop.load(std::sync::atomic::Ordering::Relaxed) {
                found = in_container_with_parent(&["sleep", "2"]).filter(|(_, p)| p.ns_pid == 1);
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            found
        })
    };
    let c = capture_command(
        &["runc", "run", "--bundle", &bundle_s, &id],
        RING,
        true,
        false,
    );
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let found = watcher.join().expect("watcher");
    remove_container(&id, Some(&dir));
    let c = c.expect("capture");
    assert_eq!(c.drops, 0);
    let (orphan, init) =
        found.expect("/proc never showed `sleep 2` adopted by the container's init");
    // The kernel's own word, from outside the tool: the orphan's parent is the container init.
    assert_eq!(orphan.ppid, init.pid, "{orphan:?} {init:?}");
    assert_eq!(init.ns_pid, 1);

    assert_orphan_adopted_by_the_init(&c, &orphan, &init);
}

#[test]
#[ignore = "root"]
fn pod_names_and_cgroups_come_from_the_recording_alone() {
    if which("runc").is_none() {
        panic!("runc is not installed (cargo xtask setup installs it)");
    }
    let tracer = tests::bins::release_tracer().expect("release tracer");
    let dir = temp_dir("k8s").expect("temp dir");
    let bundle = busybox_bundle(&dir, &["sh", "-c", "sleep 0.2"]).expect("bundle");
    let leaf = format!("tracer-test-web-7d9f-nginx-{}", std::process::id());
    annotate_as_a_pod(&bundle, &leaf);
    let id = format!("tracer-k8s-{}", std::process::id());
    let trace = dir.join("k8s.trace");
    let rec = record_runc_run(&tracer, &trace, (&bundle, &dir), &id);
    remove_container(&id, None);
    assert!(rec.status.success(), "{rec:?}");
    let tree_json = |extra: &[&str]| {
        let out = std::process::Command::new(&tracer)
            .arg("tree")
            .arg(&trace)
            .args(["--format", "json"])
            .args(extra)
            .output()
            .expect("tracer tree");
        assert!(out.status.success(), "{out:?}");
        serde_json::from_slice::<serde_json::Value>(&out.stdout).expect("json")
    };
    let out = std::process::Command::new(&tracer)
        .arg("tree")
        .arg(&trace)
        .args(["--format", "json"])
        .output()
        .expect("tracer tree");
    // --pod: that pod's processes only (runc run and its stages, the init).
    let pod = tree_json(&["--pod", "shop/web-7d9f"]);
    let pod = pod["processes"].as_array().expect("processes");
    assert!(pod.len() >= 3, "{pod:?}");
    assert!(pod.iter().all(|p| p["pod"]["name"] == "web-7d9f"));
    // A pod the recording does not hold is one line on stderr and exit 1 (not an empty tree).
    let other = std::process::Command::new(&tracer)
        .arg("tree")
        .arg(&trace)
        .args(["--pod", "other"])
        .output()
        .expect("tracer tree");
    let err = String::from_utf8_lossy(&other.stderr);
    assert_eq!(other.status.code(), Some(1), "{other:?}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(other.stdout.is_empty(), "{other:?}");
    let _ = std::fs::remove_dir_all(&dir);
    remove_test_cgroup(&leaf);
    assert!(out.status.success(), "{out:?}");
    let tree: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let procs = tree["processes"].as_array().expect("processes");
    let init = procs
        .iter()
        .find(|p| p["ns_pid"] == 1)
        .expect("the container init (pid 1 in its namespace)");
    assert_eq!(
        init["pod"],
        serde_json::json!({"namespace": "shop", "name": "web-7d9f", "uid": "u-42"})
    );
    assert_eq!(init["container_name"], "nginx");
    let init_cg = init["cgroup"].as_str().expect("init cgroup");
    assert!(init_cg.contains(&leaf), "{init_cg}");
    let runtime = procs
        .iter()
        .find(|p| p["role"] == "oci-runtime" && p["role_detail"] == "run")
        .expect("runc run");
    let rt_cg = runtime["cgroup"].as_str().expect("runtime cgroup");
    assert!(!rt_cg.is_empty() && !rt_cg.contains(&leaf), "{rt_cg}");
}

/// `runc run --bundle eb` run from eb's directory: the relative bundle is the runtime's
/// working directory's, and the recording names the pod its config.json annotates.
#[test]
#[ignore = "root"]
fn a_relative_bundle_names_its_pod() {
    assert!(
        which("runc").is_some(),
        "runc is not installed (cargo xtask setup installs it)"
    );
    let tracer = tests::bins::release_tracer().expect("release tracer");
    let dir = temp_dir("k8s-rel").expect("temp dir");
    let bundle = busybox_bundle(&dir, &["sh", "-c", "sleep 0.2"]).expect("bundle");
    let leaf = format!("tracer-test-rel-{}", std::process::id());
    annotate_as_a_pod(&bundle, &leaf);
    let (from, name) = (
        bundle.parent().expect("parent"),
        bundle.file_name().expect("name"),
    );
    let id = format!("tracer-k8s-rel-{}", std::process::id());
    let trace = dir.join("rel.trace");
    let rec = record_runc_run(&tracer, &trace, (Path::new(name), from), &id);
    remove_container(&id, None);
    remove_test_cgroup(&leaf);
    assert!(rec.status.success(), "{rec:?}");
    let out = std::process::Command::new(&tracer)
        .arg("tree")
        .arg(&trace)
        .args(["--format", "json", "--pod", "shop/web-7d9f"])
        .output()
        .expect("tracer tree");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(out.status.success(), "{out:?}");
    let tree: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let procs = tree["processes"].as_array().expect("processes");
    let init = procs
        .iter()
        .find(|p| p["ns_pid"] == 1)
        .expect("the container init");
    assert_eq!(init["container_name"], "nginx", "{init}");
}

// ---- signals and OOM kills -------------------------------------------------------------------

/// runc's PARENT, CHILD and INIT stages, by the names they give themselves (PR_SET_NAME).
fn runc_stages(c: &Captured) -> (u32, u32, u32) {
    let names: Vec<(u32, String)> = c
        .events
        .iter()
        .filter_map(|e| {
            let EventKind::PrctlEnter {
                option: 15,
                name: Some(n),
                ..
            } = &e.kind
            else {
                return None;
            };
            Some((e.tgid, n.value.clone()))
        })
        .collect();
    let stage = |s: &str| names.iter().find(|(_, n)| n == s).map(|(p, _)| *p);
    let parent = stage("runc:[0:PARENT]").expect("PARENT rename");
    let child = stage("runc:[1:CHILD]").expect("CHILD rename");
    let init = stage("runc:[2:INIT]").expect("INIT rename");
    (parent, child, init)
}

/// The engine's model of the orphan: adopted once, by the container's init as its pid
/// namespace's reaper, at the pid /proc showed; every other process of the container at a
/// pid above 1 there.
fn assert_orphan_adopted_by_the_init(c: &Captured, orphan: &Seen, init: &Seen) {
    let mut e = tracer::Engine::new();
    c.events.iter().for_each(|ev| e.apply(ev));
    for w in e.warnings() {
        assert!(
            !matches!(
                w.kind,
                tracer::lineage::WarningKind::Disagreement { .. }
                    | tracer::lineage::WarningKind::CorrectedAfterLoss { .. }
            ),
            "{w}"
        );
    }
    let p = e.process(orphan.pid).expect("orphan in the engine");
    let adoptions: Vec<_> = p.lineage.iter().skip(1).collect();
    assert_eq!(adoptions.len(), 1, "{:?}", p.lineage);
    assert_eq!(adoptions[0].parent, init.pid, "{:?}", p.lineage);
    assert!(matches!(
        adoptions[0].reason,
        Some(tracer::lineage::Reason::ParentExited {
            reaper: tracer::lineage::Reaper::NsInit(i),
            ..
        }) if i == init.pid
    ));
    assert_eq!(p.ns_pid(), Some(orphan.ns_pid));
    assert!(orphan.ns_pid > 1);
    let ip = e.process(init.pid).expect("init in the engine");
    assert_eq!(ip.ns_pid(), Some(1));
    // Every other process of the container is at pid > 1 there.
    let ns = ip.pidns.expect("init's namespace");
    let others: Vec<_> = e
        .processes()
        .filter(|q| {
            q.pidns
                == Some(tracer::PidNs {
                    ns_pid: q.ns_pid().unwrap_or(0),
                    ..ns
                })
        })
        .filter(|q| q.pid != init.pid)
        .collect();
    assert!(others.len() >= 2, "subshell and orphan at least");
    assert!(others.iter().all(|q| q.ns_pid().is_some_and(|n| n > 1)));
}

/// `tracer record -o TRACE -- runc run --bundle BUNDLE ID`, run in `cwd`.
fn record_runc_run(
    tracer: &Path,
    trace: &Path,
    (bundle, cwd): (&Path, &Path),
    id: &str,
) -> std::process::Output {
    std::process::Command::new(tracer)
        .arg("record")
        .arg("-o")
        .arg(trace)
        .args(["--", "runc", "run", "--bundle"])
        .arg(bundle)
        .arg(id)
        .current_dir(cwd)
        .output()
        .expect("tracer record")
}

/// Names the bundle's container `nginx` of pod `shop/web-7d9f`, as containerd's CRI plugin
/// annotates a bundle, in the cgroup `/tracer-test/LEAF`.
fn annotate_as_a_pod(bundle: &std::path::Path, leaf: &str) {
    let config = bundle.join("config.json");
    let mut cfg: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    let annotations = PodAnnotations::new("shop", "web-7d9f")
        .sandbox_id("sb-1")
        .uid("u-42");
    cfg["annotations"] = annotations.container("nginx").json();
    cfg["linux"]["cgroupsPath"] = format!("/tracer-test/{leaf}").into();
    std::fs::write(&config, serde_json::to_vec(&cfg).unwrap()).unwrap();
}

/// runc leaves the cgroup it made: removed in every v1 hierarchy and the v2 tree.
fn remove_test_cgroup(leaf: &str) {
    for h in std::fs::read_dir("/sys/fs/cgroup")
        .into_iter()
        .flatten()
        .flatten()
    {
        let _ = std::fs::remove_dir(h.path().join("tracer-test").join(leaf));
        let _ = std::fs::remove_dir(h.path().join("tracer-test"));
    }
}
