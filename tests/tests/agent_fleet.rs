//! Root tests of `tracer nodes` against real agents and real nats-servers: two agents on a
//! 3-server JetStream cluster, one server killed with SIGKILL and then one agent, the dead
//! agent read back from the two servers left as `silent since` its last word with the pod it
//! held then; an agent through a NATS outage, read back as `back since`, with what its own
//! metrics said it buffered and dropped. Truth from outside the tool: the test's clock at the
//! kill, the containers' processes in /proc, nats-server's own monitoring (`/jsz`), the
//! agent's `/metrics`. Run by `cargo xtask test` as root (`--ignored`); the kit is `tests::agent`.
#![cfg(feature = "capture")]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tests::agent::{
    prerequisites, row, scrape, start_agent_with, tracer_out, wait_for_nodes, Dirs, PodContainer,
};
use tests::servers::{free_port, sample, start_nats, two_ports, wait_or, Cluster, Guard};

/// Whether `row` lists pod `default/ID` with its container `app`.
fn holds(row: &serde_json::Value, id: &str) -> bool {
    row["pods"].as_array().is_some_and(|pods| {
        pods.iter().any(|p| {
            p["namespace"] == "default"
                && p["name"] == id
                && p["containers"]
                    .as_array()
                    .is_some_and(|c| c.contains(&"app".into()))
        })
    })
}

fn now_ns() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_nanos() as i128
}

/// nats-server's own word: the subjects (nodes) the stream holds on server `i` of the
/// cluster, from its monitoring port.
fn subjects_held(cluster: &Cluster, i: usize) -> u64 {
    let v = cluster.jsz(i, "streams=true").expect("/jsz");
    v["account_details"][0]["stream_detail"][0]["state"]["num_subjects"]
        .as_u64()
        .unwrap_or_else(|| panic!("no num_subjects in /jsz: {v}"))
}

/// `tracer agent` as `node` on the cluster `servers` (`--replicas 3`, a heartbeat every
/// `beat`), publishing pod `default/POD`'s events only: the test's agents share this host.
fn scoped_agent(
    tracer: &Path,
    servers: &str,
    dir: &Path,
    node: &str,
    pod: &str,
    beat: &str,
) -> Guard {
    let pod = format!("default/{pod}");
    let args = [
        "--heartbeat",
        beat,
        "--replicas",
        "3",
        "--all",
        "--pod",
        &pod,
    ];
    let log = dir.join(format!("{node}.log"));
    start_agent_with(tracer, (servers, free_port()), node, &log, &[], &args)
}

#[test]
#[ignore = "root: loads the probes, starts nats-server and runc"]
fn a_killed_agent_is_silent_since_its_last_word_with_the_pods_it_held() {
    if !prerequisites() {
        return;
    }
    let tracer = tests::bins::release_tracer().expect("tracer binary");
    let dirs = Dirs::new("agent-fleet");
    let dir = &dirs.dir;
    // A cluster is what a fleet publishes to: three servers, the stream kept on each.
    let mut cluster = Cluster::start(3, dir);
    let servers = cluster.urls(&[0, 1, 2]);
    let pid = std::process::id();
    let (pod_a, pod_b) = (format!("fleet-a-{pid}"), format!("fleet-b-{pid}"));
    // Each node is judged by its own interval: a's long one keeps it live however loaded
    // the machine; b's short one makes its silence quick to see.
    let _a = scoped_agent(&tracer, &servers, dir, "a", &pod_a, "10s");
    let mut b = scoped_agent(&tracer, &servers, dir, "b", &pod_b, "2s");
    let ca = PodContainer::run(&dir.join(&pod_a), &pod_a, &["sleep", "600"]);
    let cb = PodContainer::run(&dir.join(&pod_b), &pod_b, &["sleep", "600"]);
    wait_for_nodes("both pods in `tracer nodes`", &tracer, &servers, |t| {
        t["nodes"].as_array().is_some_and(|n| n.len() == 2)
            && holds(row(t, "a"), &pod_a)
            && holds(row(t, "b"), &pod_b)
    });
    assert!(ca.alive() && cb.alive(), "the containers run (/proc)");
    // One server of the cluster dies: the agents go on through the two left once the
    // stream has a new leader (publishes wait for it meanwhile), and the fleet is read there.
    cluster.kill(0);
    cluster.wait_for_meta_leader(3);
    let left = cluster.urls(&[1, 2]);
    let live = |t: &serde_json::Value, n: &str| row(t, n)["state"] == "live";
    wait_for_nodes(
        "a and b live through the servers left",
        &tracer,
        &left,
        |t| live(t, "a") && live(t, "b"),
    );
    b.0.kill().expect("SIGKILL agent b");
    let killed = now_ns();
    let _ = b.0.wait();
    // Three of b's intervals (2 s) without a word.
    let t = wait_for_nodes(
        "b silent, read from the servers left",
        &tracer,
        &left,
        |t| row(t, "b")["state"] == "silent",
    );
    assert!(cb.alive(), "b's container outlived its agent (/proc)");
    let (ra, rb) = (row(&t, "a"), row(&t, "b"));
    assert_eq!(ra["state"], "live", "{t}");
    assert!(holds(ra, &pod_a), "{t}");
    assert_eq!(rb["state"], "silent", "{t}");
    assert!(holds(rb, &pod_b), "b's pod at its last word: {t}");
    let word = i128::from(rb["last_word_ns"].as_u64().expect("last_word_ns"));
    assert!(
        word <= killed && killed - word < 10_000_000_000,
        "b's last word {} is not within its last intervals before the kill",
        rb["last_word"]
    );
    let held = [1, 2].map(|i| subjects_held(&cluster, i));
    assert_eq!(held, [2, 2], "the servers left hold two nodes");
    text_agrees(&tracer, &left, rb, &pod_b);
}

/// `tracer nodes` as text says what its JSON row `rb` of the killed b says: silent since its
/// last word, with b's pod, and a live.
fn text_agrees(tracer: &Path, servers: &str, rb: &serde_json::Value, pod_b: &str) {
    let since = format!("b: silent since {}", rb["last_word"].as_str().unwrap_or(""));
    let pod = format!("default/{pod_b}: app");
    let text = tracer_out(tracer, &["nodes", servers]);
    assert!(
        text.contains(&since) && text.contains(&pod),
        "b's row: {since:?} with {pod:?}\n{text}"
    );
    assert!(text.lines().any(|l| l.starts_with("a: live")), "{text}");
}

/// A shell following the test's orders: each line written to it starts `/bin/true`. What the
/// agent follows, so that events come when the test says, not when the host's other work
/// does.
struct Spawner {
    sh: Child,
}

impl Spawner {
    fn start() -> Spawner {
        let sh = Command::new("/bin/sh")
            .args(["-c", "while read x; do /bin/true; done"])
            .stdin(Stdio::piped())
            .spawn()
            .expect("sh");
        Spawner { sh }
    }

    fn spawn(&mut self, n: usize) {
        let stdin = self.sh.stdin.as_mut().expect("stdin");
        for _ in 0..n {
            stdin.write_all(b"x\n").expect("order");
        }
    }
}

impl Drop for Spawner {
    fn drop(&mut self) {
        let _ = self.sh.kill();
        let _ = self.sh.wait();
    }
}

/// The agent's metrics, once two scrapes a stats period apart agree on `names`.
fn settled(metrics_port: u16, names: &[&str]) -> Vec<f64> {
    let read = || {
        let m = scrape(metrics_port).unwrap_or_default();
        names.iter().map(|n| sample(&m, n)).collect::<Vec<f64>>()
    };
    let mut last = read();
    loop {
        std::thread::sleep(Duration::from_millis(2500));
        let now = read();
        if now == last {
            return now;
        }
        last = now;
    }
}

#[test]
#[ignore = "root: loads the probes, starts nats-server"]
fn an_agent_back_from_an_outage_says_what_it_buffered_and_dropped() {
    if !prerequisites() {
        return;
    }
    let tracer = tests::bins::release_tracer().expect("tracer binary");
    let dirs = Dirs::new("agent-fleet-outage");
    let dir: PathBuf = dirs.dir.clone();
    let (nats_port, metrics_port) = two_ports();
    let store = dir.join("store");
    let nats = start_nats(nats_port, &store, &dir.join("nats.log"));
    let server = format!("nats://127.0.0.1:{nats_port}");
    let mut spawner = Spawner::start();
    let pid = spawner.sh.id().to_string();
    let log = dir.join("agent.log");
    // A buffer small enough that the outage overflows it: some events dropped.
    let args = ["--pid", &pid, "--buffer-events", "40", "--heartbeat", "1s"];
    let _agent = start_agent_with(&tracer, (&server, metrics_port), "o1", &log, &[], &args);
    spawner.spawn(3);
    wait_for_nodes("o1 live in `tracer nodes`", &tracer, &server, |t| {
        row(t, "o1")["state"] == "live"
    });
    drop(nats);
    let agent_log = || std::fs::read_to_string(&log).unwrap_or_default();
    // Events keep coming while NATS is away, past the 5 s acknowledgement timeout.
    for _ in 0..40 {
        spawner.spawn(1);
        std::thread::sleep(Duration::from_millis(200));
    }
    wait_or(
        "the agent to buffer",
        30,
        || agent_log().contains("buffering and retrying"),
        agent_log,
    );
    let names = [
        "tracer_nats_buffered_events",
        "tracer_nats_dropped_events_total",
    ];
    let before = settled(metrics_port, &names);
    assert!(
        before[0] > 0.0 && before[1] > 0.0,
        "buffered and dropped: {before:?}"
    );
    let _nats = start_nats(nats_port, &store, &dir.join("nats2.log"));
    let t = wait_for_nodes("o1 back in `tracer nodes`", &tracer, &server, |t| {
        !row(t, "o1")["back"].is_null()
    });
    let back = &row(&t, "o1")["back"];
    assert_eq!(back["buffered"].as_f64(), Some(before[0]), "{back}");
    assert_eq!(back["dropped"].as_f64(), Some(before[1]), "{back}");
    let text = tracer_out(&tracer, &["nodes", &server]);
    let want = format!(
        "back since {}, {} events buffered, {} dropped",
        back["since"].as_str().unwrap_or(""),
        before[0],
        before[1]
    );
    assert!(text.contains(&want), "{want}\n{text}");
}
