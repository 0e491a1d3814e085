//! One pod's life across two nodes, without root: two agents on scripted sources (node `a`,
//! node `b`) publish to a real `nats-server -js` (Debian's package); the `tracer` binary, as a
//! user runs it, reads every node back (`nats://HOST:PORT/*`). What the scripts did is the
//! truth: a ReplicaSet's pod `web-7d9f8b6c4d-abcde` stopped on node a, its replacement
//! `web-7d9f8b6c4d-fghij` started on node b 4,000 events later (a script's event `n` is
//! stamped `n` ms on its node's boot clock, and both agents run on this machine: one boot).
#![cfg(feature = "agent")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tests::prereq::require_program;
use tests::servers::{free_port, start_nats};
use tests::temp_dir;
use tracer::agent::{self, AgentConfig};
use tracer::event::{clone_flags as cf, Event, Syscall};
use tracer::metrics::Metrics;
use tracer::nats::{Feed, Follow, NatsSource, StreamLimits};
use tracer::source::{Script, Scripted};
use tracer::synth::{process, PodAnnotations, Stream};
use tracer::tracefile::TraceReader;

/// containerd's pid on both nodes (its thread: 101).
const CONTAINERD: u32 = 100;
const SIGTERM: i32 = 15;
const SIGKILL: i32 = 9;
const SIGCHLD: i32 = 17;
/// Events node b's script has before the replacement's first: its gap after abcde's end.
const GAP_EVENTS: u64 = 4000;

/// containerd's thread vforks `pid`, which execs `argv`.
fn daemon_child(b: &mut Stream, pid: u32, argv: &[&str]) -> u64 {
    let vf = cf::CLONE_VM | cf::CLONE_VFORK;
    let seq = b.fork_full(CONTAINERD, 101, pid, pid, 0, Some(Syscall::Clone), Some(vf));
    b.exec(pid, argv[0], argv);
    seq
}

/// `runc create` of `id` by `shim` (pids from `base`): runc init → PARENT → CHILD → INIT,
/// the bundle naming container `name` (none: the sandbox) of `shop/pod`, INIT exec's
/// `workload`. Returns INIT's pid.
fn runc_create(
    b: &mut Stream,
    shim: u32,
    base: u32,
    id: &str,
    pod: &str,
    name: Option<&str>,
) -> u32 {
    let (rt, parent, child, init) = (base, base + 1, base + 2, base + 3);
    let vf = cf::CLONE_VM | cf::CLONE_VFORK;
    b.fork_full(shim, shim + 1, rt, rt, 0, Some(Syscall::Clone), Some(vf));
    let bundle = format!("/run/containerd/io.containerd.runtime.v2.task/k8s.io/{id}");
    b.exec(
        rt,
        "/usr/bin/runc",
        &["runc", "create", "--bundle", &bundle, id],
    );
    let meta = PodAnnotations::new("shop", pod).uid(pod);
    let meta = match name {
        Some(n) => meta.container(n),
        None => meta.sandbox(),
    };
    b.push(rt, rt, "runc", meta.meta(rt, id));
    b.fork_full(rt, rt, parent, parent, 0, Some(Syscall::Clone), Some(vf));
    b.runc_init_stages(parent, child, init);
    b.exit(rt, 0);
    let workload = if name.is_some() {
        "/bin/sleep"
    } else {
        "/pause"
    };
    b.exec(init, workload, &[workload]);
    init
}

/// Pod `shop/pod` started (pids from `base`): its shim, sandbox and container `app`. Returns
/// the index of the shim's birth (its sandbox's first step), the shim, the pause and the
/// app's init.
fn start_pod(b: &mut Stream, pod: &str, base: u32) -> (usize, u32, u32, u32) {
    let (sandbox, app) = (format!("{base:064x}"), format!("{:064x}", base + 1));
    let shim = "/usr/bin/containerd-shim-runc-v2";
    daemon_child(b, base, &[shim, "-id", &sandbox, "start"]);
    let first = b.fork(base, base + 1) as usize - 1;
    b.exec(base + 1, shim, &[shim, "-id", &sandbox]);
    b.exit(base, 0);
    b.subreaper(base + 1, base + 1, true);
    b.thread(base + 1, base + 1, base + 2);
    let pause = runc_create(b, base + 1, base + 10, &sandbox, pod, None);
    let init = runc_create(b, base + 1, base + 30, &app, pod, Some("app"));
    (first, base + 1, pause, init)
}

/// The pod stopped: `runc kill` SIGTERMs the app, then the pause is killed. Returns the index
/// of the pause's death.
fn stop_pod(b: &mut Stream, shim: u32, pause: u32, init: u32) -> usize {
    b.fork(shim, shim + 60);
    b.exec(shim + 60, "/usr/bin/runc", &["runc", "kill", "app", "15"]);
    b.signal(shim + 60, "runc", SIGTERM, 0, init);
    b.exit(shim + 60, 0);
    b.killed(init, SIGTERM);
    b.signal(init, "sleep", SIGCHLD, 2, shim);
    b.signal(shim, "shim", SIGKILL, 0, pause);
    b.killed(pause, SIGKILL) as usize - 1
}

/// What each node ran: node a's events and the index of abcde's end; node b's events (the
/// replacement after [`GAP_EVENTS`] jobs of another daemon) and the replacement's first
/// event's index; the inits of abcde and fghij.
struct Nodes {
    a: Vec<Event>,
    b: Vec<Event>,
    abcde_init: u32,
    fghij_init: u32,
}

fn nodes() -> (Nodes, usize, usize) {
    let mut a = Stream::default();
    let (_, shim, pause, abcde_init) = start_pod(&mut a, "web-7d9f8b6c4d-abcde", 1000);
    let end = stop_pod(&mut a, shim, pause, abcde_init);
    let mut b = Stream::default();
    // Another daemon's jobs (a cron), one fork and one exit each.
    let target = GAP_EVENTS as usize + end;
    while b.events.len() < target {
        let pid = 5000 + b.events.len() as u32;
        b.fork(50, pid);
        if b.events.len() < target {
            b.exit(pid, 0);
        }
    }
    let (first, _, _, fghij_init) = start_pod(&mut b, "web-7d9f8b6c4d-fghij", 1000);
    let n = Nodes {
        a: a.events,
        b: b.events,
        abcde_init,
        fghij_init,
    };
    (n, end, first)
}

/// An agent publishing `events` as `node` to the nats-server on `port`, for `run`.
fn agent_run(port: u16, node: &str, events: Vec<Event>, run: Duration) {
    let host = vec![
        process(1, 0, "init"),
        process(50, 1, "cron"),
        process(CONTAINERD, 1, "containerd"),
    ];
    let script = Script::new(None, host).then(Scripted::Events(events));
    let cfg = AgentConfig {
        pod: None,
        server: format!("nats://127.0.0.1:{port}"),
        node: node.into(),
        buffer_events: 100_000,
        segment_every: Duration::from_secs(600),
        limits: StreamLimits::default(),
        daemon: false,
        deadline: Some(Instant::now() + run),
        heartbeat: tracer::nats::heartbeat::DEFAULT_INTERVAL,
        key: Some(Arc::new(tracer::nats::sign::NodeKey::generate())),
    };
    let metrics = Arc::new(Mutex::new(Metrics::new()));
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let report = rt
        .block_on(agent::run(script, cfg, metrics, std::future::pending()))
        .expect("agent");
    assert_eq!((report.buffer_drops, report.unsent), (0, 0), "{node}");
}

/// The `tracer` binary with the NATS readers (`nodes` is there only with them).
fn tracer_bin() -> PathBuf {
    tests::bins::debug_tracer("cli,nats", "nodes", "agent-across")
}

/// Wall time minus boot time on `node`'s clock, as its first segment's header says (each
/// agent reads the two clocks once, a moment apart: they differ by that moment).
fn boot_epoch(port: u16, node: &str) -> i128 {
    let src = NatsSource::parse(&format!("nats://127.0.0.1:{port}/{node}")).expect("url");
    let feed = Arc::new(Mutex::new(
        Feed::open(&src, Follow::UntilNow).expect("open"),
    ));
    let mut seg = Feed::next_segment(&feed, true)
        .expect("a segment")
        .expect("segment");
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut seg, &mut bytes).expect("read segment");
    let h = TraceReader::new(&bytes[..])
        .expect("trace")
        .header()
        .clone();
    i128::from(h.start_wall_ns) - i128::from(h.start_boot_ns)
}

fn run(tracer: &Path, args: &[&str]) -> Output {
    Command::new(tracer)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run tracer {args:?}: {e}"))
}

/// `tracer ARGS`'s stdout; the test fails with its stderr if it fails.
fn stdout(tracer: &Path, args: &[&str]) -> String {
    let out = run(tracer, args);
    assert!(
        out.status.success(),
        "tracer {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

#[test]
fn a_pod_replaced_on_another_node_is_told_across_nodes_with_its_gap() {
    if !require_program("nats-server", "nats-server") {
        return;
    }
    let tracer = tracer_bin();
    let dir = temp_dir("agent-across").expect("temp dir");
    let port = free_port();
    let _nats = start_nats(port, &dir.join("store"), &dir.join("nats.log"));
    let (n, end, first) = nodes();
    // Script numbering: event i has seq i + 1, stamped (i + 1) ms.
    // The replacement's shim is born a few events after the other daemon's last job.
    let gap_ms = (first as i64) - (end as i64);
    assert!((4000..4050).contains(&gap_ms), "{gap_ms}");
    publish(port, &n);
    let all = format!("nats://127.0.0.1:{port}/*");
    // The gap on the wall clock: the scripts' boot times (event i at i + 1 ms) on each node's
    // clock.
    let ms = |i: usize| i128::try_from(i + 1).expect("index") * 1_000_000;
    let gap = boot_epoch(port, "b") + ms(first) - boot_epoch(port, "a") - ms(end);
    let gap_text = tracer::clock::duration_text(u64::try_from(gap).expect("a gap after"));

    // The ReplicaSet's pods: abcde on a, the link, fghij on b, in that order.
    let text = stdout(&tracer, &["story", &all, "--pod", "web-7d9f8b6c4d"]);
    let at = |s: &str| {
        text.find(s)
            .unwrap_or_else(|| panic!("{s:?} missing from:\n{text}"))
    };
    let on_a = at("node a: pod shop/web-7d9f8b6c4d-abcde");
    let link = at("replaced: pod shop/web-7d9f8b6c4d-abcde on node a ended ");
    let on_b = at("node b: pod shop/web-7d9f8b6c4d-fghij");
    assert!(on_a < link && link < on_b, "{text}");
    at(&format!(
        "; pod shop/web-7d9f8b6c4d-fghij on node b started {gap_text} after its end"
    ));
    assert_eq!(text.matches("#1 pod shop/").count(), 2, "{text}");

    // The replaced pod's name finds its replacement too; the JSON has the gap in ns.
    let json = stdout(
        &tracer,
        &[
            "story",
            &all,
            "--pod",
            "web-7d9f8b6c4d-abcde",
            "--format",
            "json",
        ],
    );
    let js: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    let nodes: Vec<&str> = js["parts"]
        .as_array()
        .expect("parts")
        .iter()
        .map(|p| p["node"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(nodes, ["a", "b"], "{js}");
    let r = &js["replaced"][0];
    assert_eq!(
        (r["node"].as_str(), r["on"].as_str()),
        (Some("a"), Some("b")),
        "{js}"
    );
    assert_eq!(r["gap_ns"].as_i64().map(i128::from), Some(gap), "{js}");
    let inits: Vec<i64> = js["parts"]
        .as_array()
        .expect("parts")
        .iter()
        .flat_map(|p| p["stories"].as_array().cloned().unwrap_or_default())
        .filter(|s| s["phase"] == "birth" && s["sandbox"] == false)
        .filter_map(|s| s["init_pid"].as_i64())
        .collect();
    assert_eq!(
        inits,
        [i64::from(n.abcde_init), i64::from(n.fghij_init)],
        "{js}"
    );

    namespace_tree(&tracer, &all, &n);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `tree nats://…/* -n shop`: the namespace's pods on both nodes, each node's own processes;
/// a namespace no node holds is one line and exit 1. Then the namespace's view.
fn namespace_tree(tracer: &Path, all: &str, n: &Nodes) {
    // `tree … -n shop`: the namespace's pods on both nodes, each node's own processes.
    let tree = stdout(tracer, &["tree", all, "-n", "shop", "--format", "json"]);
    let tree: serde_json::Value = serde_json::from_str(&tree).expect("JSON");
    let per_node: Vec<(String, bool)> = tree["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .map(|t| {
            let pids = t["tree"]["processes"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let init = if t["node"] == "a" {
                n.abcde_init
            } else {
                n.fghij_init
            };
            let has = pids.iter().any(|p| p["pid"] == init);
            (t["node"].as_str().unwrap_or("").to_string(), has)
        })
        .collect();
    assert_eq!(per_node, [("a".into(), true), ("b".into(), true)], "{tree}");
    // A namespace no node holds is one line and exit 1.
    let none = run(tracer, &["tree", all, "-n", "prod"]);
    assert_eq!(none.status.code(), Some(1));
    let err = String::from_utf8_lossy(&none.stderr);
    assert!(
        err.contains("every pod of namespace prod not found on any of the 2 nodes"),
        "{err}"
    );
    namespace_view(tracer, all);
}

/// `view nats://…/* -n shop`: one node at a time, node a first (node-name order), the
/// nodes on the status bar; its frame is node a's (the pod's stop, which node b never saw).
fn namespace_view(tracer: &Path, all: &str) {
    let args = ["view", all, "-n", "shop", "--end", "--screenshot", "120x30"];
    let shot = stdout(tracer, &args);
    assert!(shot.contains("│ node a (1/2) │ pod shop/*"), "{shot}");
    assert!(shot.contains("1061 runc [oci-runtime kill]"), "{shot}");
    assert!(!shot.contains("node b"), "{shot}");
}

/// Agents `a` and `b` publish their nodes' events at once, for 3 s.
fn publish(port: u16, n: &Nodes) {
    let (ea, eb) = (n.a.clone(), n.b.clone());
    let a = std::thread::spawn(move || agent_run(port, "a", ea, Duration::from_secs(3)));
    let b = std::thread::spawn(move || agent_run(port, "b", eb, Duration::from_secs(3)));
    a.join().expect("agent a");
    b.join().expect("agent b");
}
