//! Root test of `tracer agent` on a replicated stream: a 3-server JetStream cluster on
//! loopback (Debian's nats-server: routes, a store each, one cluster name), the agent given
//! all three (`--nats A,B,C --replicas 3`); the server leading the stream is SIGKILLed while
//! the agent publishes, and what was published before and after is read back through the two
//! left. Truth: the test's own children's pids, and the servers' own `/jsz`. Run by
//! `cargo xtask test` as root (`--ignored`).
#![cfg(feature = "capture")]

use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tests::agent::{export, has_exec, marker, prerequisites, scrape, start_agent_with, Dirs};
use tests::servers::{free_port, sample, wait_or, Cluster};

/// The stream every agent publishes to.
const STREAM: &str = "TRACER";

#[test]
#[ignore = "root: loads the probes, starts a 3-server nats-server cluster"]
fn a_replicated_stream_outlives_its_leader() {
    if !prerequisites() {
        return;
    }
    let tracer = tests::release_tracer().expect("tracer binary");
    let dirs = Dirs::new("agent-cluster");
    let dir = dirs.dir.clone();
    let mut cluster = Cluster::start(3, &dir);
    let metrics_port = free_port();
    let agent_log = dir.join("agent.log");
    let mut agent = start_agent_with(
        &tracer,
        (&cluster.urls(&[0, 1, 2]), metrics_port),
        "cl",
        &agent_log,
        &[],
        &["--replicas", "3"],
    );
    let tag = format!("tracer-cluster-{}", std::process::id());
    let before = marker(&format!("{tag}-before"));
    let leader = stream_leader(&cluster, &format!("the exec of pid {before} stored"), || {
        has_exec(&export(&tracer, &cluster.reader_url(&[0, 1, 2], "cl"), &[]), before)
    });
    for i in cluster.running() {
        let replicas = cluster.stream(i, STREAM).expect("the stream")["config"]["num_replicas"].clone();
        assert_eq!(replicas, 3, "server s{i}: the stream's replicas");
    }

    // Processes keep starting while the leader dies: the agent is publishing then.
    let busy = Busy::start();
    cluster.kill(leader);
    let left: Vec<usize> = cluster.running();
    cluster.wait_for_meta_leader(3);
    let after = marker(&format!("{tag}-after"));
    drop(busy);
    let url = cluster.reader_url(&left, "cl");
    wait_or(
        "the exec after the kill stored, and the agent's buffer drained",
        60,
        || has_exec(&export(&tracer, &url, &[]), after) && buffered(metrics_port) == Some(0.0),
        || format!("{}\nagent:\n{}", cluster.logs_text(), log_of(&agent_log)),
    );
    let metrics = scrape(metrics_port).expect("metrics");
    let out = export(&tracer, &url, &[]);
    agent.terminate();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "export of {url} failed: {stderr}");
    assert!(stderr.trim().is_empty(), "export of {url} warned: {stderr}");
    for (pid, name) in [(before, "before"), (after, "after")] {
        assert!(
            has_exec(&out, pid),
            "the exec of the marker started {name} the kill (pid {pid}) is missing from {url}"
        );
    }
    for name in [
        "tracer_nats_dropped_events_total",
        "tracer_nats_stream_lost_events_total",
        "tracer_nats_buffered_events",
    ] {
        assert_eq!(sample(&metrics, name), 0.0, "{name}:\n{metrics}");
    }
    let new_leader = stream_leader(&cluster, "a new leader of the stream", || true);
    assert_ne!(new_leader, leader, "the killed server still leads the stream");
}

/// Once `ready()` holds, the index of the server leading the stream, as every running
/// server's `/jsz` reports it (all of them agreeing).
fn stream_leader(cluster: &Cluster, what: &str, mut ready: impl FnMut() -> bool) -> usize {
    let mut leader = None;
    wait_or(
        what,
        60,
        || {
            let named: Vec<Option<String>> = cluster
                .running()
                .into_iter()
                .map(|i| {
                    let s = cluster.stream(i, STREAM)?;
                    s["cluster"]["leader"].as_str().map(str::to_string)
                })
                .collect();
            let agreed = named.iter().all(|n| n.is_some() && *n == named[0]);
            leader = named[0].as_deref().and_then(|n| cluster.index_of(n));
            agreed && leader.is_some() && ready()
        },
        || cluster.logs_text(),
    );
    leader.expect("a stream leader")
}

/// The agent's `tracer_nats_buffered_events`, when it answers.
fn buffered(metrics_port: u16) -> Option<f64> {
    scrape(metrics_port).map(|m| sample(&m, "tracer_nats_buffered_events"))
}

fn log_of(path: &std::path::Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// A thread starting `/bin/true` every 20 ms until dropped: events for the agent to publish.
struct Busy {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Busy {
    fn start() -> Busy {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                let _ = Command::new("/bin/true").status();
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        // Some of it published before the kill.
        std::thread::sleep(Duration::from_millis(500));
        Busy {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
