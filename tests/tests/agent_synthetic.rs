//! The agent on a synthetic source, without root: the library's agent loop (the one
//! `tracer agent` runs over the capture) publishing a scripted containerd's life to a real
//! `nats-server -js` (Debian's package), read back segment by segment. What the script did is
//! the truth: every event it emitted, once, in order; the drops it counted; the daemon it
//! restarted followed again. And a reader against a stream whose leader does not answer:
//! asked again, a bounded number of times (the server's own delivery count is the truth);
//! a reader of a 3-server cluster that lost one, whatever server its consumer is placed on.
#![cfg(feature = "agent")]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tests::prereq::require_program;
use tests::servers::{free_port, sample, start_core_nats, start_nats, wait_for, Cluster};
use tests::temp_dir;
use tracer::agent::{self, AgentConfig};
use tracer::event::{Event, EventKind};
use tracer::metrics::Metrics;
use tracer::nats::{Feed, Follow, NatsSource, StreamLimits, LEADER_WAITS};
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
        // Each wait outlasts the test's segment length, so the three phases land in three
        // segments however slowly the machine runs the script.
        .then(Scripted::Wait(Duration::from_millis(1500)))
        .then(Scripted::Events(vec![fork(200, 201), exec(201, SHIM)]))
}

/// An agent publishing as `node` to the nats-server on `port` for `run`: a buffer of 1,000
/// events, segments of 10 minutes, no daemon followed.
fn config(port: u16, node: &str, run: Duration) -> AgentConfig {
    AgentConfig {
        pod: None,
        server: format!("nats://127.0.0.1:{port}"),
        node: node.into(),
        buffer_events: 1000,
        segment_every: Duration::from_secs(600),
        limits: StreamLimits::default(),
        daemon: false,
        deadline: Some(Instant::now() + run),
        heartbeat: tracer::nats::heartbeat::DEFAULT_INTERVAL,
        key: Some(Arc::new(tracer::nats::sign::NodeKey::generate())),
    }
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
        segment_every: Duration::from_secs(1),
        daemon: true,
        ..config(port, "synthetic", Duration::from_secs(8))
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
        buffer_events: 1_000_000,
        ..config(port, "busy", Duration::from_secs(4))
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

/// The events a reader reads from `node` now (none when the stream or node is not there),
/// with its notes.
fn read_node(port: u16, node: &str) -> (Vec<Event>, Vec<String>) {
    let url = format!("nats://127.0.0.1:{port}/{node}");
    let Ok(mut input) = tracer::Input::open(std::path::Path::new(&url)) else {
        return (Vec::new(), Vec::new());
    };
    let events = input.by_ref().map_while(Result::ok).collect();
    let notes = input.notes(false);
    (events, notes)
}

/// A server without a persistent store restarts mid-segment: the stream comes back empty.
/// The agent publishes its segment's header again and starts a new segment, so a reader
/// sees what came after; what the old store held is counted as possibly lost.
#[test]
fn a_stream_the_server_lost_mid_segment_is_started_again_and_the_loss_counted() {
    lost_mid_segment("lost", |dir, port, nats| {
        // The server goes, and comes back on the same port with an empty store.
        drop(nats);
        start_nats(port, &dir.join("store-2"), &dir.join("nats-2.log"))
    });
}

/// The same when someone empties the stream (`nats stream purge`) while the agent runs and
/// nothing fails on its side: it notices at its next look at the stream.
#[test]
fn a_stream_purged_mid_segment_is_started_again_and_the_loss_counted() {
    lost_mid_segment("purged", |_, port, nats| {
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        rt.block_on(async {
            let client = async_nats::connect(format!("127.0.0.1:{port}"))
                .await
                .expect("connect");
            let js = async_nats::jetstream::new(client);
            let stream = js.get_stream(tracer::nats::STREAM).await.expect("stream");
            stream.purge().await.expect("purge");
        });
        nats
    });
}

/// An agent publishes; `lose` takes what the stream held (given the test's directory, the
/// port and the server, it returns the server that runs after); the agent then starts a
/// new segment a reader reads, and counts the loss.
fn lost_mid_segment(
    node: &str,
    lose: impl FnOnce(&std::path::Path, u16, tests::servers::Guard) -> tests::servers::Guard,
) {
    use std::sync::atomic::{AtomicBool, Ordering};
    if !require_program("nats-server", "nats-server") {
        return;
    }
    let dir = temp_dir(&format!("agent-{node}")).expect("temp dir");
    let port = free_port();
    let nats = start_nats(port, &dir.join("store-1"), &dir.join("nats-1.log"));
    let cue = Arc::new(AtomicBool::new(false));
    let host = vec![process(1, 0, "init"), process(100, 1, "containerd")];
    let script = Script::new(Some(100), host)
        .then(Scripted::Events(vec![
            fork(100, 101),
            exec(101, "/bin/before"),
            exit(101, 0),
        ]))
        .then(Scripted::Until(cue.clone()))
        .then(Scripted::Events(vec![
            fork(100, 102),
            exec(102, "/bin/after"),
        ]));
    let cfg = config(port, node, Duration::from_secs(120));
    let metrics = Arc::new(Mutex::new(Metrics::new()));
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let m = metrics.clone();
    let agent = std::thread::spawn(move || {
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        let stop = async {
            let _ = stop_rx.await;
        };
        rt.block_on(agent::run(script, cfg, m, stop))
    });
    let exec_of = |evs: &[Event], pid: u32| {
        evs.iter()
            .any(|e| e.tgid == pid && matches!(e.kind, EventKind::Exec { .. }))
    };
    wait_for("the first events in the stream", 30, || {
        exec_of(&read_node(port, node).0, 101)
    });
    let _nats = lose(&dir, port, nats);
    // The 3 events the first store held (the metrics are updated every second). A purge is
    // seen at the agent's next look at the stream: what it published before then is counted
    // lost too, so the next events come once it is seen.
    let lost = || {
        sample(
            &metrics.lock().unwrap().encode(),
            "tracer_nats_stream_lost_events_total",
        )
    };
    wait_for("the loss in the metrics", 30, || lost() >= 3.0);
    cue.store(true, Ordering::SeqCst);
    tests::servers::wait_or(
        "the events after the loss in the new stream",
        60,
        || exec_of(&read_node(port, node).0, 102),
        || format!("{:?}", read_node(port, node)),
    );
    let (events, notes) = read_node(port, node);
    assert!(!exec_of(&events, 101), "the old store's events are gone");
    assert!(
        notes.iter().any(|n| n.contains("missing")),
        "the frames the stream lost are told: {notes:?}"
    );
    let _ = stop_tx.send(());
    let report = agent.join().expect("agent thread").expect("agent");
    assert!(report.lost_in_stream >= 3, "{report:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// What the fake server answers a stream-info request with: a stream as nats-server
/// describes it.
const STREAM_INFO: &str = r#"{"type":"io.nats.jetstream.api.v1.stream_info_response","config":{"name":"TRACER","subjects":["tracer.*.events"],"retention":"limits","max_consumers":-1,"max_msgs":-1,"max_bytes":-1,"max_age":0,"max_msgs_per_subject":-1,"max_msg_size":-1,"discard":"old","storage":"file","num_replicas":1,"duplicate_window":120000000000},"created":"2026-01-01T00:00:00Z","state":{"messages":0,"bytes":0,"first_seq":0,"first_ts":"0001-01-01T00:00:00Z","last_seq":0,"last_ts":"0001-01-01T00:00:00Z","consumer_count":0}}"#;

/// A JetStream server on loopback that calls every publish a duplicate; counts the publishes
/// on `subject`.
async fn all_duplicates_server(
    subject: &'static str,
    publishes: Arc<std::sync::atomic::AtomicU64>,
) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move {
        while let Ok((c, _)) = listener.accept().await {
            tokio::spawn(serve_duplicates(c, subject, publishes.clone()));
        }
    });
    port
}

async fn serve_duplicates(
    c: tokio::net::TcpStream,
    subject: &'static str,
    publishes: Arc<std::sync::atomic::AtomicU64>,
) {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
    let (r, mut w) = c.into_split();
    let mut r = tokio::io::BufReader::new(r);
    let info = "INFO {\"server_id\":\"fake\",\"version\":\"2.10.0\",\"proto\":1,\"headers\":true,\"max_payload\":1048576,\"jetstream\":true}\r\n";
    if w.write_all(info.as_bytes()).await.is_err() {
        return;
    }
    let mut sid = String::from("1");
    let mut line = String::new();
    loop {
        line.clear();
        if r.read_line(&mut line).await.unwrap_or(0) == 0 {
            return;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        let answer = match f.first().map(|s| s.to_ascii_uppercase()).as_deref() {
            Some("PING") => "PONG\r\n".to_string(),
            Some("SUB") if f.len() >= 3 => {
                sid = f[f.len() - 1].to_string();
                continue;
            }
            Some("PUB" | "HPUB") if f.len() >= 4 => {
                let total: usize = f[f.len() - 1].parse().unwrap_or(0);
                let mut body = vec![0u8; total + 2];
                if r.read_exact(&mut body).await.is_err() {
                    return;
                }
                let reply = f[2];
                let json = if f[1] == subject {
                    publishes.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    r#"{"stream":"TRACER","seq":1,"duplicate":true}"#
                } else {
                    STREAM_INFO
                };
                format!("MSG {reply} {sid} {}\r\n{json}\r\n", json.len())
            }
            _ => continue,
        };
        if w.write_all(answer.as_bytes()).await.is_err() {
            return;
        }
    }
}

/// A server that calls every publish a duplicate would have the agent publish in a loop:
/// the tries back off (a few in seconds, not thousands) and are counted.
#[test]
fn duplicate_acknowledgements_without_end_back_off() {
    use std::sync::atomic::{AtomicU64, Ordering};
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let publishes = Arc::new(AtomicU64::new(0));
    let port = rt.block_on(all_duplicates_server(
        "tracer.dup.events",
        publishes.clone(),
    ));
    let host = vec![process(1, 0, "init"), process(100, 1, "containerd")];
    let script = Script::new(Some(100), host).then(Scripted::Events(vec![fork(100, 101)]));
    let cfg = config(port, "dup", Duration::from_secs(2));
    let metrics = Arc::new(Mutex::new(Metrics::new()));
    let report = rt
        .block_on(agent::run(script, cfg, metrics, std::future::pending()))
        .expect("agent");
    // About 7 s of trying (2 s running, 5 s draining): with waits doubling from 50 ms to
    // 5 s, a dozen tries at most; without, a loop of thousands.
    let tries = publishes.load(Ordering::SeqCst);
    assert!((2..=20).contains(&tries), "{tries} publishes");
    assert!(report.unsent > 0, "{report:?}");
    assert_eq!(report.foreign_duplicates, tries, "each one counted");
}

/// A real `nats-server` without JetStream where the test alone answers stream-info requests:
/// the first `silent` of them go unanswered, as while a cluster's stream elects its new
/// leader; the rest get [`STREAM_INFO`]. Returns what a reader's `nodes` made of it and how
/// many requests the server delivered.
fn nodes_with_silent_leader(silent: u64) -> (Result<Vec<String>, String>, u64) {
    use futures_util::StreamExt;
    use std::sync::atomic::{AtomicU64, Ordering};
    let dir = temp_dir(&format!("silent-leader-{silent}")).expect("temp dir");
    let port = free_port();
    let _nats = start_core_nats(port, &dir.join("nats.log"));
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let asked = Arc::new(AtomicU64::new(0));
    let counted = asked.clone();
    let client = rt.block_on(async {
        let client = async_nats::connect(format!("127.0.0.1:{port}"))
            .await
            .expect("connect");
        let info = format!("$JS.API.STREAM.INFO.{}", tracer::nats::STREAM);
        let mut sub = client.subscribe(info).await.expect("subscribe");
        client.flush().await.expect("flush");
        let answering = client.clone();
        tokio::spawn(async move {
            while let Some(m) = sub.next().await {
                let n = counted.fetch_add(1, Ordering::SeqCst) + 1;
                if let (Some(reply), true) = (m.reply, n > silent) {
                    let _ = answering.publish(reply, STREAM_INFO.into()).await;
                }
            }
        });
        client
    });
    let url = format!("nats://127.0.0.1:{port}");
    let got = rt
        .block_on(tracer::nats::nodes(&url))
        .map(|list| list.nodes)
        .map_err(|e| e.to_string());
    drop(client);
    let _ = std::fs::remove_dir_all(&dir);
    (got, asked.load(Ordering::SeqCst))
}

/// A reader opening the stream while its leader does not answer asks again: one silence
/// (one request timed out) and the next answer is read as the stream's.
#[test]
fn a_reader_asks_again_while_the_streams_leader_is_silent() {
    if !require_program("nats-server", "nats-server") {
        return;
    }
    let (got, asked) = nodes_with_silent_leader(1);
    assert_eq!(got, Ok(Vec::new()));
    // The open asked twice, listing the subjects once more.
    assert_eq!(asked, 3);
}

/// A leader that never answers: a bounded number of requests, then one line naming what
/// failed and why.
#[test]
fn a_reader_gives_up_on_a_silent_leader_in_a_bounded_number_of_tries() {
    if !require_program("nats-server", "nats-server") {
        return;
    }
    let (got, asked) = nodes_with_silent_leader(u64::MAX);
    let err = got.expect_err("no stream");
    assert!(
        err.contains("opening the stream") && err.contains("timed out") && !err.contains('\n'),
        "{err}"
    );
    assert_eq!(asked, LEADER_WAITS.len() as u64);
}

/// Reads the events of `url` now: all of them, or what failed.
fn read_url(url: &str) -> Result<Vec<Event>, String> {
    let input = tracer::Input::open(std::path::Path::new(url)).map_err(|e| e.to_string())?;
    input.collect::<Result<_, _>>().map_err(|e| e.to_string())
}

/// Reads through a JetStream cluster that lost one of its three servers. Each read creates
/// an ordered consumer, and Debian's nats-server (2.9.10) places it on any of the stream's
/// three servers, the dead one too, where its creation is never answered: one read in three
/// until the reader asks again. Every read gets every event the agent published.
#[test]
fn every_read_through_a_cluster_that_lost_a_server_gets_the_events() {
    const READS: usize = 12;
    if !require_program("nats-server", "nats-server") {
        return;
    }
    let dir = temp_dir("agent-placed").expect("temp dir");
    let mut cluster = Cluster::start(3, &dir);
    let host = vec![process(1, 0, "init"), process(100, 1, "containerd")];
    let script = Script::new(Some(100), host).then(Scripted::Events(vec![
        fork(100, 101),
        exec(101, SHIM),
        exit(101, 0),
    ]));
    let cfg = AgentConfig {
        server: cluster.urls(&[0, 1, 2]),
        limits: StreamLimits {
            replicas: 3,
            ..StreamLimits::default()
        },
        ..config(0, "placed", Duration::from_secs(2))
    };
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let metrics = Arc::new(Mutex::new(Metrics::new()));
    let report = rt
        .block_on(agent::run(script, cfg, metrics, std::future::pending()))
        .expect("agent");
    assert_eq!(report.unsent, 0, "{report:?}");
    cluster.kill(0);
    cluster.wait_for_meta_leader(3);
    let url = cluster.reader_url(&[1, 2], "placed");
    for read in 1..=READS {
        let seqs = read_url(&url).map(|evs| evs.iter().map(|e| e.seq).collect::<Vec<_>>());
        assert_eq!(seqs, Ok(vec![1, 2, 3]), "read {read} of {READS}");
    }
    drop(cluster);
    let _ = std::fs::remove_dir_all(&dir);
}
