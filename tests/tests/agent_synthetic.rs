//! The agent on a synthetic source, without root: the library's agent loop (the one
//! `tracer agent` runs over the capture) publishing a scripted containerd's life to a real
//! `nats-server -js` (Debian's package), read back segment by segment. What the script did is
//! the truth: every event it emitted, once, in order; the drops it counted; the daemon it
//! restarted followed again.
#![cfg(feature = "capture")]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tests::prereq::require_program;
use tests::servers::{free_port, start_nats};
use tests::temp_dir;
use tracer::agent::{self, AgentConfig};
use tracer::event::{Event, EventKind};
use tracer::metrics::Metrics;
use tracer::nats::{Feed, Follow, NatsSource, StreamLimits};
use tracer::source::{Script, Scripted};
use tracer::synth::{exec, exit, fork, process};
use tracer::tracefile::{Header, StatsRecord, TraceReader};

const SHIM: &str = "/usr/bin/containerd-shim-runc-v2";

/// containerd (pid 100) starts a shim that runs sleep; two events are lost; after a pause
/// longer than a segment everything exits; containerd comes back as pid 200, whose new shim
/// is seen only if the agent follows it.
fn restarting_containerd() -> Script {
    let host = vec![process(1, 0, "init"), process(100, 1, "containerd")];
    let restarted = vec![process(1, 0, "init"), process(200, 1, "containerd")];
    Script::new(Some(100), host)
        .then(Scripted::Events(vec![fork(100, 101), exec(101, SHIM)]))
        .then(Scripted::Drop(2))
        .then(Scripted::Events(vec![
            fork(101, 102),
            exec(102, "/bin/sleep"),
        ]))
        .then(Scripted::Wait(Duration::from_millis(1500)))
        .then(Scripted::Events(vec![
            exit(102, 0),
            exit(101, 0),
            exit(100, 0),
        ]))
        .then(Scripted::Processes(restarted))
        .then(Scripted::UntilFollowed(200))
        .then(Scripted::Events(vec![fork(200, 201), exec(201, SHIM)]))
}

/// One segment read back: its id, header, events and last stats record.
struct Read {
    id: String,
    header: Header,
    events: Vec<Event>,
    stats: Option<StatsRecord>,
}

/// Every segment stored on `node`'s subject, in order.
fn segments(port: u16, node: &str) -> Vec<Read> {
    let src = NatsSource::parse(&format!("nats://127.0.0.1:{port}/{node}")).expect("url");
    let feed = Arc::new(Mutex::new(
        Feed::open(&src, Follow::UntilNow).expect("open"),
    ));
    let mut out = Vec::new();
    while let Some(seg) = Feed::next_segment(&feed, true) {
        let mut seg = seg.expect("segment");
        let id = seg.id().to_string();
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut seg, &mut bytes).expect("read segment");
        let mut r = TraceReader::new(&bytes[..]).expect("trace");
        let events = r.events().collect::<Result<Vec<_>, _>>().expect("events");
        out.push(Read {
            id,
            header: r.header().clone(),
            events,
            stats: r.last_stats().copied(),
        });
    }
    out
}

#[test]
fn the_agent_rotates_counts_drops_and_follows_a_restarted_daemon_without_root() {
    if !require_program("nats-server", "nats-server") {
        return;
    }
    let dir = temp_dir("agent-synthetic").expect("temp dir");
    let port = free_port();
    let _nats = start_nats(port, &dir.join("store"), &dir.join("nats.log"));
    let metrics = Arc::new(Mutex::new(Metrics::new()));
    let cfg = AgentConfig {
        server: format!("nats://127.0.0.1:{port}"),
        node: "synthetic".into(),
        buffer_events: 1000,
        segment_every: Duration::from_secs(1),
        limits: StreamLimits::default(),
        daemon: true,
        deadline: Some(Instant::now() + Duration::from_secs(5)),
    };
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let stop = std::future::pending();
    let report = rt
        .block_on(agent::run(
            restarting_containerd(),
            cfg,
            metrics.clone(),
            stop,
        ))
        .expect("agent");
    assert_eq!(
        (report.kernel_drops, report.buffer_drops, report.unsent),
        (2, 0, 0)
    );

    let segs = segments(port, "synthetic");
    // Rotation: several segments of one run, numbered in order, each a whole trace file.
    assert!(segs.len() >= 3, "{} segments", segs.len());
    let run = segs[0].id.rsplit_once('-').expect("id").0.to_string();
    for (i, s) in segs.iter().enumerate() {
        assert_eq!(s.id, format!("{run}-{i}"));
    }
    // Every scripted event exactly once, in order, across the rotations: 1, 2, (3 and 4
    // dropped), 5..=11.
    let seqs: Vec<u64> = segs
        .iter()
        .flat_map(|s| s.events.iter().map(|e| e.seq))
        .collect();
    assert_eq!(seqs, [1, 2, 5, 6, 7, 8, 9, 10, 11]);
    // Each segment starts from a fresh snapshot: the later ones see the restarted daemon.
    let last = segs.last().expect("a segment");
    assert!(last.header.snapshot.iter().any(|p| p.pid == 200));
    assert!(!segs[0].header.snapshot.iter().any(|p| p.pid == 200));
    // The restarted daemon was followed: its shim's exec is in the stream.
    let followed_again = segs.iter().flat_map(|s| &s.events).any(|e| {
        e.tgid == 201
            && matches!(&e.kind, EventKind::Exec { filename, .. } if filename.value == SHIM)
    });
    assert!(
        followed_again,
        "pid 201's exec missing: the restarted daemon was not followed"
    );
    // The drops reach the stream's stats records and the metrics.
    assert_eq!(last.stats.map(|s| s.drops), Some(2));
    let text = metrics.lock().unwrap().encode();
    assert!(text.contains("tracer_dropped_events_total 2"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A busy node: 30,000 processes start and end under a followed daemon within one segment.
/// Every event reaches the stream, and the engine behind the metrics holds a bounded window
/// of them (the live viewer's retention), not all 30,000.
#[test]
fn the_agents_engine_stays_bounded_while_thirty_thousand_processes_come_and_go() {
    if !require_program("nats-server", "nats-server") {
        return;
    }
    const LIFETIMES: u32 = 30_000;
    let dir = temp_dir("agent-busy").expect("temp dir");
    let port = free_port();
    let _nats = start_nats(port, &dir.join("store"), &dir.join("nats.log"));
    // A cron daemon's jobs: no runtime role, which the retention would keep.
    let host = vec![process(1, 0, "init"), process(100, 1, "cron")];
    let mut script = Script::new(Some(100), host);
    for chunk in (0..LIFETIMES).collect::<Vec<_>>().chunks(1000) {
        let evs = chunk
            .iter()
            .flat_map(|i| [fork(100, 1000 + i), exit(1000 + i, 0)])
            .collect();
        script = script.then(Scripted::Events(evs));
    }
    let cfg = AgentConfig {
        server: format!("nats://127.0.0.1:{port}"),
        node: "busy".into(),
        buffer_events: 1_000_000,
        segment_every: Duration::from_secs(600),
        limits: StreamLimits::default(),
        daemon: false,
        deadline: Some(Instant::now() + Duration::from_secs(4)),
    };
    let metrics = Arc::new(Mutex::new(Metrics::new()));
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let report = rt
        .block_on(agent::run(script, cfg, metrics, std::future::pending()))
        .expect("agent");
    assert_eq!((report.buffer_drops, report.unsent), (0, 0));
    let segs = segments(port, "busy");
    let events: usize = segs.iter().map(|s| s.events.len()).sum();
    assert_eq!(events, 2 * LIFETIMES as usize, "events in the stream");
    // Retention::default(): 10,000 exited processes kept, pruned once an eighth more exited.
    assert!(
        report.engine_records < 15_000,
        "the metrics engine held {} records after {LIFETIMES} lifetimes",
        report.engine_records
    );
    let _ = std::fs::remove_dir_all(&dir);
}
