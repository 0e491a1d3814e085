//! Root test of `tracer agent` on a replicated stream: a 3-server JetStream cluster on
//! loopback (Debian's nats-server: routes, a store each, one cluster name), the agent given
//! all three (`--nats A,B,C --replicas 3`); the server leading the stream is SIGKILLed while
//! the agent publishes, and what was published before and after is read back through the two
//! left. Truth: the test's own children's pids, and the servers' own `/jsz`. Run by
//! `cargo xtask test` as root (`--ignored`).
#![cfg(feature = "capture")]

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tests::agent::{export, has_exec, marker, prerequisites, scrape, start_agent_with, Dirs};
use tests::servers::{free_port, sample, wait_or, Cluster};
use tracer::nats::STREAM;

#[test]
#[ignore = "root: loads the probes, starts a 3-server nats-server cluster"]
fn a_replicated_stream_outlives_its_leader() {
    if !prerequisites() {
        return;
    }
    let tracer = tests::bins::release_tracer().expect("tracer binary");
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
        &["--all", "--replicas", "3"],
    );
    let tag = format!("tracer-cluster-{}", std::process::id());
    let before = marker(&format!("{tag}-before"));
    let leader = stream_leader(
        &cluster,
        &agent_log,
        &format!("the exec of pid {before} stored"),
        || {
            has_exec(
                &export(&tracer, &cluster.reader_url(&[0, 1, 2], "cl"), &[]),
                before,
            )
        },
    );
    for i in cluster.running() {
        let replicas =
            cluster.stream(i, STREAM).expect("the stream")["config"]["num_replicas"].clone();
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
        "the exec after the kill read back through the two left",
        60,
        || has_exec(&export(&tracer, &url, &[]), after),
        || {
            let out = export(&tracer, &url, &[]);
            format!(
                "{}\nagent:\n{}\nexport: {}\nbuffered: {:?}",
                cluster.logs_text(),
                log_of(&agent_log),
                String::from_utf8_lossy(&out.stderr),
                buffered(metrics_port)
            )
        },
    );
    let metrics = scrape(metrics_port).expect("metrics");
    // Stopped, the agent drains its buffer, ends its segment and says what it could not send.
    agent.terminate();
    let out = export_through(&tracer, &url, &cluster);
    let log = log_of(&agent_log);
    assert!(
        log.contains("0 for a full buffer, 0 unsent, 0 lost by the stream"),
        "the agent lost events:\n{log}"
    );
    check_read_back(&out, &url, [(before, "before"), (after, "after")], &metrics);
    let new_leader = stream_leader(&cluster, &agent_log, "a new leader of the stream", || true);
    assert_ne!(
        new_leader, leader,
        "the killed server still leads the stream"
    );
}

/// The export of `url`, which succeeds at once: the reader itself asks again while the
/// servers left elect leaders or leave its consumer's creation unanswered.
fn export_through(tracer: &Path, url: &str, cluster: &Cluster) -> std::process::Output {
    let out = export(tracer, url, &[]);
    assert!(
        out.status.success(),
        "export through the servers left: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        cluster.logs_text()
    );
    out
}

/// The export of `url` is whole and holds each marker's exec; the agent's counters say
/// nothing was lost.
fn check_read_back(
    out: &std::process::Output,
    url: &str,
    markers: [(u32, &str); 2],
    metrics: &str,
) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "export of {url} failed: {stderr}");
    assert!(stderr.trim().is_empty(), "export of {url} warned: {stderr}");
    for (pid, name) in markers {
        assert!(
            has_exec(out, pid),
            "the exec of the marker started {name} the kill (pid {pid}) is missing from {url}"
        );
    }
    // The host keeps starting processes (--all): what is buffered is what is in flight, never
    // what was lost, which these count.
    for name in [
        "tracer_nats_dropped_events_total",
        "tracer_nats_stream_lost_events_total",
    ] {
        assert_eq!(sample(metrics, name), 0.0, "{name}:\n{metrics}");
    }
}

/// Once `ready()` holds, the index of the server leading the stream, as every running
/// server's `/jsz` reports it (all of them agreeing).
fn stream_leader(
    cluster: &Cluster,
    agent_log: &std::path::Path,
    what: &str,
    mut ready: impl FnMut() -> bool,
) -> usize {
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
        || format!("{}\nagent:\n{}", cluster.logs_text(), log_of(agent_log)),
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
