//! One pod's life across nodes (across.rs): each node's boot clock turned into wall time, a
//! ReplicaSet's pod deleted on one node linked to its replacement on another with the gap,
//! the queries that find them, hostile node names.

use super::*;
use crate::clock::Clock;
use crate::lineage::across::{self, Across, NodeEngine};

const S: u64 = 1_000_000_000;
/// Wall time (ns since the epoch) of node a's first event: 2026-12-04T10:00:00Z.
const WALL: u64 = 1_796_378_400 * S;
/// Each event 100 ms after the one before, on every node.
const STEP: u64 = S / 10;

/// containerd (900, its thread 901) under init.
fn node() -> Stream {
    let mut b = Stream::default();
    b.fork(1, 900);
    b.exec(900, "/usr/bin/containerd", &["/usr/bin/containerd"]);
    b.thread(900, 900, 901);
    b
}

/// containerd's thread forks `pid`, which execs `argv`; the fork's seq.
fn daemon_child(b: &mut Stream, pid: u32, argv: &[&str]) -> u64 {
    let vf = cf::CLONE_VM | cf::CLONE_VFORK;
    let seq = b.fork_full(900, 901, pid, pid, 0, Some(Syscall::Clone), Some(vf));
    b.exec_comm(pid, pid, argv[0], argv, roles::basename(argv[0]));
    seq
}

/// Pod `shop/pod` started by containerd, its pids from `base`: the shim, its sandbox (pause)
/// and container `app`, each bundle naming the pod. Returns the seq of the shim's birth (the
/// sandbox's first step), the shim, the pause and the app's init.
fn start_pod(b: &mut Stream, pod: &str, base: u32) -> (u64, u32, u32, u32) {
    let (sandbox, app) = (format!("{base:064x}"), format!("{:064x}", base + 1));
    let shim = "/usr/bin/containerd-shim-runc-v2";
    daemon_child(b, base, &[shim, "-id", &sandbox, "start"]);
    let first = b.fork(base, base + 1);
    b.exec(base + 1, shim, &[shim, "-id", &sandbox]);
    b.exit(base, 0);
    b.subreaper(base + 1, base + 1, true);
    b.thread(base + 1, base + 1, base + 2);
    let pause = runc_create(b, base + 1, base + 10, &sandbox, "/pause");
    let meta = PodAnnotations::new("shop", pod).uid(pod).sandbox();
    b.push(base + 10, base + 10, "runc", meta.meta(base + 10, &sandbox));
    let init = runc_create(b, base + 1, base + 30, &app, "/bin/sleep");
    let meta = PodAnnotations::new("shop", pod).uid(pod).container("app");
    b.push(base + 30, base + 30, "runc", meta.meta(base + 30, &app));
    (first, base + 1, pause, init)
}

/// The kubelet stops the pod: `runc kill` SIGTERMs the app, which dies, then the pause is
/// killed. Returns the seq of the pause's death (the pod's end).
fn stop_pod(b: &mut Stream, shim: u32, pause: u32, init: u32) -> u64 {
    b.fork(shim, shim + 60);
    b.exec(shim + 60, "/usr/bin/runc", &["runc", "kill", "app", "15"]);
    b.signal(shim + 60, "runc", SIGTERM, SI_USER, init);
    b.exit(shim + 60, 0);
    b.killed(init, SIGTERM);
    b.signal(init, "sleep", SIGCHLD, CLD_KILLED, shim);
    b.signal(shim, "shim", SIGKILL, SI_USER, pause);
    b.killed(pause, SIGKILL)
}

/// The metadata events repeat their exec's seq (as the capture writes them), and event `n`
/// comes at boot time `boot + n × STEP`.
fn stamped(mut b: Stream, boot: u64) -> Vec<Event> {
    let mut seq = 0;
    for ev in &mut b.events {
        if !ev.kind.is_metadata() {
            seq += 1;
        }
        ev.seq = seq;
        ev.ts_ns = boot + seq * STEP;
    }
    b.events
}

/// The engine of a node whose recording started at wall time `wall` at boot time `boot`.
fn engine(events: &[Event], wall: u64, boot: u64) -> Engine {
    let mut e = Engine::new();
    e.seed_snapshot(&[snap(1, 0, "systemd")]);
    e.set_clock(Clock::boot(wall, boot));
    events.iter().for_each(|ev| e.apply(ev));
    e
}

/// Node a (booted 1000 s before its recording): pods `abcde` (stopped) and `klmno` (lives on)
/// of ReplicaSet `web-7d9f8b6c4d`, and `db-0`. Node b (booted 20 s before): `fghij`, whose
/// sandbox's first step comes 4 s after abcde's end, then the pod `other`. Returns the
/// engines, and the wall time of abcde's end.
fn two_nodes() -> (Engine, Engine, u64) {
    let mut a = node();
    let (_, shim, pause, init) = start_pod(&mut a, "web-7d9f8b6c4d-abcde", 1000);
    start_pod(&mut a, "web-7d9f8b6c4d-klmno", 2000);
    start_pod(&mut a, "db-0", 3000);
    let end = stop_pod(&mut a, shim, pause, init);
    let (boot_a, boot_b) = (1000 * S, 20 * S);
    let a = stamped(a, boot_a);
    // Node a's clock: event n at wall time WALL + n × STEP.
    let died = WALL + a[end as usize - 1].seq * STEP;
    let mut b = node();
    let (first, ..) = start_pod(&mut b, "web-7d9f8b6c4d-fghij", 1000);
    start_pod(&mut b, "other-5f6d7c8b9a-zzzzz", 4000);
    let b = stamped(b, boot_b);
    // Node b's recording started so that the sandbox's first step is 4 s after abcde's end.
    let wall_b = died + 4 * S - b[first as usize - 1].seq * STEP;
    let (ea, eb) = (engine(&a, WALL, boot_a), engine(&b, wall_b, boot_b));
    (ea, eb, died)
}

fn query(pod: &str) -> PodQuery {
    PodQuery {
        pod: pod.into(),
        ..PodQuery::default()
    }
}

fn tell(a: &Engine, b: &Engine, q: &PodQuery) -> Result<Across, PodError> {
    let nodes = [
        NodeEngine {
            node: "a",
            engine: a,
        },
        NodeEngine {
            node: "b",
            engine: b,
        },
    ];
    across::tell(&nodes, q)
}

/// `node/pod` of each part, in order.
fn parts(t: &Across) -> Vec<String> {
    t.parts
        .iter()
        .map(|p| format!("{}:{}", p.node, p.pod))
        .collect()
}

#[test]
fn a_pod_deleted_on_one_node_is_replaced_on_another_four_seconds_later() {
    let (a, b, died) = two_nodes();
    let t = tell(&a, &b, &query("web-7d9f8b6c4d-abcde")).unwrap();
    assert_eq!(
        parts(&t),
        ["a:shop/web-7d9f8b6c4d-abcde", "b:shop/web-7d9f8b6c4d-fghij"]
    );
    assert_eq!(t.parts[0].ended_ns, Some(i128::from(died)));
    assert_eq!(t.parts[1].born_ns, Some(i128::from(died + 4 * S)));
    assert_eq!(t.replaced.len(), 1, "{:?}", t.replaced);
    let r = &t.replaced[0];
    assert_eq!((r.from, r.to, r.gap_ns), (0, 1, i128::from(4 * S)));
    // Each part has the pod's stories on its node: abcde's births and deaths, fghij's births.
    let phases =
        |i: usize| -> Vec<Phase> { t.parts[i].stories.iter().map(|(_, s)| s.phase).collect() };
    assert_eq!(
        phases(0),
        [Phase::Birth, Phase::Birth, Phase::Death, Phase::Death]
    );
    assert_eq!(phases(1), [Phase::Birth, Phase::Birth]);
    let text = t.text(false);
    let linked = "replaced: pod shop/web-7d9f8b6c4d-abcde on node a ended 2026-12-04T10:00:";
    assert!(text.contains(linked), "{text}");
    assert!(
        text.contains("; pod shop/web-7d9f8b6c4d-fghij on node b started 4.0 s after its end"),
        "{text}"
    );
    let (at_a, at_link, at_b) = (
        text.find("node a: pod shop/web-7d9f8b6c4d-abcde").unwrap(),
        text.find("replaced:").unwrap(),
        text.find("node b: pod shop/web-7d9f8b6c4d-fghij").unwrap(),
    );
    assert!(at_a < at_link && at_link < at_b, "{text}");
    let js = t.json(false);
    assert_eq!(js["replaced"][0]["gap_ns"], 4 * S, "{js}");
    assert_eq!(js["replaced"][0]["by"], "shop/web-7d9f8b6c4d-fghij");
    assert_eq!(js["replaced"][0]["on"], "b");
    assert_eq!(js["parts"][1]["stories"][0]["number"], 1);
}

#[test]
fn the_replacement_the_replicaset_or_the_deployment_finds_the_same_life() {
    let (a, b, _) = two_nodes();
    let pair = ["a:shop/web-7d9f8b6c4d-abcde", "b:shop/web-7d9f8b6c4d-fghij"];
    // The replacement, by name or namespace/name: the pod it replaced comes too.
    for q in ["web-7d9f8b6c4d-fghij", "shop/web-7d9f8b6c4d-fghij"] {
        assert_eq!(parts(&tell(&a, &b, &query(q)).unwrap()), pair, "{q}");
    }
    // The ReplicaSet's or the Deployment's name: every pod of it, klmno (never replaced) too.
    for q in ["web-7d9f8b6c4d", "web"] {
        let t = tell(&a, &b, &query(q)).unwrap();
        let mut got = parts(&t);
        got.sort();
        assert_eq!(
            got,
            [pair[0], "a:shop/web-7d9f8b6c4d-klmno", pair[1]],
            "{q}"
        );
        assert_eq!(t.replaced.len(), 1, "{q}");
    }
    // A pod of the family that was never replaced stands alone.
    let t = tell(&a, &b, &query("web-7d9f8b6c4d-klmno")).unwrap();
    assert_eq!(parts(&t), ["a:shop/web-7d9f8b6c4d-klmno"]);
    assert!(t.replaced.is_empty());
    // -n alone: every pod of the namespace on both nodes, in wall-clock order.
    let every = PodQuery {
        namespace: Some("shop".into()),
        ..PodQuery::default()
    };
    let t = tell(&a, &b, &every).unwrap();
    assert_eq!(t.parts.len(), 5, "{:?}", parts(&t));
    assert!(t.parts.windows(2).all(|w| w[0].first_ns <= w[1].first_ns));
    // --container: only that container's stories, the pods found as before.
    let app = PodQuery {
        container: Some("app".into()),
        ..query("web-7d9f8b6c4d-abcde")
    };
    let t = tell(&a, &b, &app).unwrap();
    assert!(t
        .parts
        .iter()
        .all(|p| p.stories.iter().all(|(_, s)| !s.sandbox)));
    assert_eq!(t.replaced.len(), 1);
    let err = tell(&a, &b, &query("nope")).unwrap_err().to_string();
    assert!(
        err.starts_with("no pod nope in the recording (pods: shop/db-0"),
        "{err}"
    );
}

#[test]
fn nodes_are_ordered_by_wall_time_not_by_their_boot_clocks() {
    let (a, b, _) = two_nodes();
    // Node b's boot clock reads far less than node a's: its pod still comes after.
    let t = tell(&a, &b, &query("other-5f6d7c8b9a-zzzzz")).unwrap();
    let t_a = tell(&a, &b, &query("db-0")).unwrap();
    assert!(t.parts[0].first_ns > t_a.parts[0].first_ns);
    let t = tell(&a, &b, &every_web()).unwrap();
    let nodes: Vec<&str> = t.parts.iter().map(|p| p.node.as_str()).collect();
    assert_eq!(nodes, ["a", "a", "b"], "{:?}", parts(&t));
}

fn every_web() -> PodQuery {
    query("web")
}

#[test]
fn a_hostile_node_name_is_bounded_and_escaped() {
    let (a, b, _) = two_nodes();
    let evil = format!("evil\x1b[31m{}", "n".repeat(300));
    let nodes = [
        NodeEngine {
            node: &evil,
            engine: &a,
        },
        NodeEngine {
            node: "b",
            engine: &b,
        },
    ];
    let t = across::tell(&nodes, &query("web-7d9f8b6c4d-abcde")).unwrap();
    assert!(t.parts[0].node.len() <= across::MAX_NODE_NAME);
    let text = t.text(false);
    assert!(!text.contains('\x1b'), "{text:?}");
    let shown = format!("node {}nnn", crate::escape::escape("evil\x1b[31m"));
    assert!(text.contains(&shown), "{text}");
}
