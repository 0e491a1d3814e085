//! Root tests of what a live capture writes and reads back: `record --pod` of a pod that does
//! not exist yet holds its processes and no others; `trace --format json -o F` (and its
//! `--record`) read back by `tree` give the processes and parents the processes themselves
//! report. Run by `cargo xtask test` as root (`--ignored`).
#![cfg(feature = "capture")]

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use tests::labs::system::wait_for;
use tests::{busybox_bundle, temp_dir, which};
use tracer::synth::PodAnnotations;
use tracer::EventKind;

/// A bundle in `dir` whose container runs `sh -c SCRIPT`, annotated as container `web` of
/// pod `shop/POD` (as containerd's CRI plugin annotates it), in cgroup `/tracer-test/LEAF`.
fn pod_bundle(dir: &Path, pod: &str, leaf: &str, script: &str) -> PathBuf {
    let bundle = busybox_bundle(dir, &["sh", "-c", script]).expect("bundle");
    let config = bundle.join("config.json");
    let mut cfg: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    let (sandbox, uid) = (format!("sb-{pod}"), format!("uid-{pod}"));
    let annotations = PodAnnotations::new("shop", pod)
        .sandbox_id(&sandbox)
        .uid(&uid);
    cfg["annotations"] = annotations.container("web").json();
    cfg["linux"]["cgroupsPath"] = format!("/tracer-test/{leaf}").into();
    std::fs::write(&config, serde_json::to_vec(&cfg).unwrap()).unwrap();
    bundle
}

/// `runc run` of `bundle` as container `id`, in the background.
fn runc_run(bundle: &Path, id: &str) -> Child {
    Command::new("runc")
        .args(["run", "--bundle"])
        .arg(bundle)
        .arg(id)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .expect("runc run")
}

/// `runc ARGS`, its output, and its pid in `pids` (a runc command naming a container acts for
/// its pod: a scoped recording holds it).
fn runc(args: &[&str], pids: &mut Vec<u32>) -> std::process::Output {
    let child = Command::new("runc")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("runc");
    pids.push(child.id());
    child.wait_with_output().expect("runc")
}

/// The container's init pid as the runtime reports it (`runc state`), once it runs.
fn init_pid(id: &str, pids: &mut Vec<u32>) -> u32 {
    wait_for("the container to run", Duration::from_secs(60), || {
        let out = runc(&["state", id], pids);
        let state: serde_json::Value = match serde_json::from_slice(&out.stdout) {
            Ok(v) => v,
            Err(_) => return Ok(None),
        };
        Ok((state["status"] == "running")
            .then(|| state["pid"].as_u64().map(|p| p as u32))
            .flatten())
    })
    .expect("runc state")
}

/// Every process the container holds now (`runc ps`).
fn container_pids(id: &str, pids: &mut Vec<u32>) -> Vec<u32> {
    let out = runc(&["ps", "--format", "json", id], pids);
    serde_json::from_slice::<Vec<u32>>(&out.stdout).unwrap_or_default()
}

/// Removes the containers, the cgroups runc left and the test's directory.
fn clean_up(ids: &[&str], leaves: &[&str], dir: &Path) {
    for id in ids {
        let _ = Command::new("runc")
            .args(["delete", "--force", id])
            .status();
    }
    for h in std::fs::read_dir("/sys/fs/cgroup")
        .into_iter()
        .flatten()
        .flatten()
    {
        for leaf in leaves {
            let _ = std::fs::remove_dir(h.path().join("tracer-test").join(leaf));
        }
        let _ = std::fs::remove_dir(h.path().join("tracer-test"));
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// Every pid an event names: its own process, and the one it creates, moves, names, signals.
fn pids_named(ev: &tracer::Event) -> Vec<u32> {
    let mut v = vec![ev.tgid];
    if let EventKind::Fork { child_tgid, .. } = &ev.kind {
        v.push(*child_tgid);
    }
    if let EventKind::CgroupAttach { pid, .. } | EventKind::ContainerMeta { pid, .. } = &ev.kind {
        v.push(*pid);
    }
    if let EventKind::Signal(i) = &ev.kind {
        v.extend([i.sender, i.target]);
    }
    if let EventKind::OomVictim(o) = &ev.kind {
        v.push(o.tid);
    }
    v
}

#[test]
#[ignore = "root"]
fn record_pod_holds_a_pod_started_later_and_nothing_else() {
    assert!(
        which("runc").is_some(),
        "runc is not installed (cargo xtask setup installs it)"
    );
    let tracer = tests::bins::release_tracer().expect("release tracer");
    let me = std::process::id();
    let dir = temp_dir("scoped-pod").expect("temp dir");
    let (pod, other) = (format!("web-{me}"), format!("other-{me}"));
    let (id_a, id_b) = (
        format!("tracer-scope-a-{me}"),
        format!("tracer-scope-b-{me}"),
    );
    let (leaf_a, leaf_b) = (format!("scope-a-{me}"), format!("scope-b-{me}"));
    // Both stay up long enough for `runc state`/`runc ps` to see them, however busy the CPU.
    let script = "sleep 3 & sleep 3; wait";
    let bundle_a = pod_bundle(&dir.join("a"), &pod, &leaf_a, script);
    let bundle_b = pod_bundle(&dir.join("b"), &other, &leaf_b, script);
    let trace = dir.join("pod.trace");
    let mut rec = start_recorder(&tracer, &trace, &pod, &dir);
    // The pod, another pod and an unrelated process, all at once, after the recorder.
    let mut run_a = runc_run(&bundle_a, &id_a);
    let mut run_b = runc_run(&bundle_b, &id_b);
    let mut unrelated = Command::new("sleep").arg("3").spawn().expect("sleep");
    // The runc commands the test runs on each container (`state`, `ps`).
    let (mut asked_a, mut asked_b) = (Vec::new(), Vec::new());
    let (init_a, init_b) = (init_pid(&id_a, &mut asked_a), init_pid(&id_b, &mut asked_b));
    let procs_a = container_pids(&id_a, &mut asked_a);
    let procs_b = container_pids(&id_b, &mut asked_b);
    let (runc_a, runc_b, lone) = (run_a.id(), run_b.id(), unrelated.id());
    for c in [&mut run_a, &mut run_b, &mut unrelated] {
        let _ = c.wait();
    }
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: kill(2) on the recorder this test started and has not reaped.
    unsafe { libc::kill(rec.id() as i32, libc::SIGINT) };
    let st = rec.wait().expect("recorder exit");
    let record_log = std::fs::read_to_string(dir.join("record.log")).unwrap_or_default();
    let mut input = tracer::input::Input::open(&trace).expect("the recording");
    let scope = input.header().and_then(|h| {
        h.pod_scope()
            .map(|(p, c)| (p.to_string(), c.map(String::from)))
    });
    let events: Vec<tracer::Event> = input.by_ref().collect::<Result<_, _>>().expect("events");
    clean_up(&[&id_a, &id_b], &[&leaf_a, &leaf_b], &dir);
    // Stopped by Ctrl-C, it exits as strace does: 128 + SIGINT.
    assert_eq!(st.code(), Some(130), "tracer record: {st}: {record_log}");
    assert_eq!(
        scope,
        Some((format!("shop/{pod}"), None)),
        "the header says the scope"
    );

    let named: HashSet<u32> = events.iter().flat_map(pids_named).collect();
    // The pod: its runtime, its init and every process the container held.
    assert!(procs_a.len() >= 2, "runc ps {id_a}: {procs_a:?}");
    for pid in [runc_a, init_a].iter().chain(&procs_a) {
        assert!(
            named.contains(pid),
            "pid {pid} of the pod missing: {named:?}"
        );
    }
    // Nothing of the other pod, of the unrelated process, of the recorder.
    let absent: Vec<u32> = [runc_b, init_b, lone, rec.id()]
        .into_iter()
        .chain(procs_b)
        .chain(asked_b)
        .collect();
    for pid in &absent {
        assert!(
            !named.contains(pid),
            "pid {pid} is not the pod's: {named:?}"
        );
    }
    assert_only_the_pod_acts(&events, me, runc_a, &asked_a);
}

/// `tracer record --pod shop/POD` into `trace` (its output in `dir/record.log`), once its
/// probes are attached (it has written the header).
fn start_recorder(tracer: &Path, trace: &Path, pod: &str, dir: &Path) -> std::process::Child {
    let log = std::fs::File::create(dir.join("record.log")).unwrap();
    let rec = Command::new(tracer)
        .arg("record")
        .arg("-o")
        .arg(trace)
        .args(["--pod", &format!("shop/{pod}")])
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("tracer record");
    // The header is written once the probes are attached.
    wait_for("the recorder to attach", Duration::from_secs(60), || {
        Ok(std::fs::metadata(trace)
            .is_ok_and(|m| m.len() >= 20)
            .then_some(()))
    })
    .expect("recorder");
    rec
}

/// Every process acting in the recording is the pod's runtime (`runc`) or was created in it;
/// the test (`me`) only as the creator of the runc commands naming the pod's container
/// (`asked`).
fn assert_only_the_pod_acts(events: &[tracer::Event], me: u32, runc: u32, asked: &[u32]) {
    let mut created: HashSet<u32> = HashSet::from([runc]);
    for ev in events {
        if let EventKind::Fork { child_tgid, .. } = ev.kind {
            if ev.tgid == me {
                let ours = child_tgid == runc || asked.contains(&child_tgid);
                assert!(
                    ours,
                    "the test's forks kept are the pod's runc commands: {ev:?}"
                );
            } else {
                assert!(created.contains(&ev.tgid), "{ev:?}");
            }
            created.insert(child_tgid);
        } else {
            assert!(
                created.contains(&ev.tgid),
                "an event of a process not the pod's: {ev:?}"
            );
        }
    }
}

/// Runs `tracer trace --format json -o lines --record trace -- sh -c SCRIPT` where each
/// process writes `pid ppid` to `dir/truth`; returns the tracer's pid and the truth.
fn trace_sh(tracer: &Path, dir: &Path) -> (u32, BTreeMap<u32, u32>) {
    let truth = dir.join("truth");
    let script = format!(
        "echo $$ $PPID >> {t}; sh -c 'echo $$ $PPID >> {t}; sh -c \"echo \\$\\$ \\$PPID >> {t}\"' & \
         sh -c 'echo $$ $PPID >> {t}; exit 3'; wait",
        t = truth.display()
    );
    let child = Command::new(tracer)
        .args(["trace", "--format", "json", "-o"])
        .arg(dir.join("lines.jsonl"))
        .arg("--record")
        .arg(dir.join("same.trace"))
        .args(["--", "sh", "-c", &script])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tracer trace");
    let tracer_pid = child.id();
    let out = child.wait_with_output().expect("tracer trace");
    assert!(out.status.success(), "{out:?}");
    let text = std::fs::read_to_string(&truth).unwrap();
    let pairs = text.lines().map(|l| {
        let v: Vec<u32> = l.split_whitespace().map(|w| w.parse().unwrap()).collect();
        (v[0], v[1])
    });
    (tracer_pid, pairs.collect())
}

/// `tracer tree FILE --format json`: each process's pid and parent, and the warnings.
fn tree_of(tracer: &Path, file: &Path) -> (BTreeMap<u32, u32>, u64) {
    let out = Command::new(tracer)
        .arg("tree")
        .arg(file)
        .args(["--format", "json"])
        .output()
        .expect("tracer tree");
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let procs = v["processes"].as_array().expect("processes");
    let tree = procs
        .iter()
        .map(|p| {
            (
                p["pid"].as_u64().unwrap() as u32,
                p["ppid"].as_u64().unwrap_or(0) as u32,
            )
        })
        .collect();
    (tree, v["warning_count"].as_u64().unwrap_or(u64::MAX))
}

#[test]
#[ignore = "root"]
fn trace_json_lines_and_its_record_read_back_as_the_same_tree() {
    let tracer = tests::bins::release_tracer().expect("release tracer");
    let dir = temp_dir("scoped-json").expect("temp dir");
    let (tracer_pid, truth) = trace_sh(&tracer, &dir);
    assert_eq!(truth.len(), 4, "{truth:?}");
    let (lines, warnings) = tree_of(&tracer, &dir.join("lines.jsonl"));
    let (recorded, _) = tree_of(&tracer, &dir.join("same.trace"));
    // The same capture: the trace file's events are the lines.
    let exported = Command::new(&tracer)
        .arg("export")
        .arg(dir.join("same.trace"))
        .args(["--format", "jsonl"])
        .output()
        .expect("tracer export");
    let printed = std::fs::read(dir.join("lines.jsonl")).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(warnings, 0, "reading the lines back is no anomaly");
    for (pid, ppid) in &truth {
        assert_eq!(
            lines.get(pid),
            Some(ppid),
            "pid {pid} in the lines' tree: {lines:?}"
        );
        assert_eq!(
            recorded.get(pid),
            Some(ppid),
            "pid {pid} in the recording's tree"
        );
    }
    // The command's parent is the tracer that started it.
    let root = truth.keys().min().unwrap();
    assert_eq!(truth[root], tracer_pid);
    assert!(exported.status.success(), "{exported:?}");
    assert_eq!(
        exported.stdout, printed,
        "trace --record holds the events trace printed"
    );
}
