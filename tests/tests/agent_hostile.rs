//! Root tests of `tracer agent` against what others control: its `/metrics` endpoint abused,
//! a user's fake runtime, segments forged into its stream. Run by `cargo xtask test` as root
//! (`--ignored`).
#![cfg(feature = "capture")]

use std::io::Write;
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tests::agent::{export, has_exec, jsonl, marker, prerequisites, runc_run, tracer_out, World};
use tests::prereq::require_program;
use tests::servers::{get, wait_for, wait_or};
use tracer::synth::PodAnnotations;

/// A scrape answered 200 within 2 s, with the exposition: a metric there from the start (the
/// agent may not have counted an event yet, so no `tracer_events_total` sample).
fn answers(port: u16) -> bool {
    get(port, "/metrics", Duration::from_secs(2)).is_some_and(|(status, body)| {
        status.contains(" 200 ") && body.contains("tracer_nats_stream_lost_events_total ")
    })
}

/// VmRSS of `pid` in KiB.
fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            l.strip_prefix("VmRSS:")?
                .trim()
                .strip_suffix("kB")?
                .trim()
                .parse()
                .ok()
        })
        .unwrap_or(0)
}

#[test]
#[ignore = "root: loads the probes, starts nats-server; abuses the agent's /metrics"]
fn the_metrics_endpoint_survives_abuse_in_bounded_memory() {
    if !(prerequisites() && require_program("prlimit", "util-linux")) {
        return;
    }
    let w = World::start("agent-abuse");
    let (port, pid) = (w.metrics_port, w.agent.0.id());
    for path in ["/metrics", "/metrics?x=1", "/metrics/"] {
        let (status, _) = get(port, path, Duration::from_secs(2)).expect("an answer");
        assert!(status.contains(" 200 "), "{path}: {status}");
    }
    let (status, _) = get(port, "/other", Duration::from_secs(2)).expect("an answer");
    assert!(status.contains(" 404 "), "{status}");
    let rss_before = rss_kib(pid);

    // A header that never ends: the agent closes the connection after its request limit.
    let mut endless = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    endless
        .write_all(b"GET /metrics HTTP/1.1\r\nX-Endless: ")
        .expect("write");
    let chunk = vec![b'a'; 64 * 1024];
    let until = Instant::now() + Duration::from_secs(5);
    let mut sent = 0usize;
    while Instant::now() < until && endless.write_all(&chunk).is_ok() {
        sent += chunk.len();
    }
    assert!(sent < 8 << 20, "the agent took {sent} bytes of one header");
    assert!(answers(port), "no answer after the endless header");

    // 1,000 idle connections, then a scrape.
    let idle: Vec<TcpStream> = (0..1000)
        .filter_map(|_| TcpStream::connect(("127.0.0.1", port)).ok())
        .collect();
    assert!(idle.len() > 900, "only {} connections opened", idle.len());
    assert!(
        answers(port),
        "no answer within 2 s under 1,000 idle connections"
    );
    drop(idle);

    // Out of descriptors: the agent's soft limit lowered to what it has open now plus a few,
    // then more connections than that; it must answer again once they are gone.
    let nofile = |soft: &str| {
        let st = Command::new("prlimit")
            .args(["--pid", &pid.to_string(), &format!("--nofile={soft}:")])
            .status()
            .expect("prlimit");
        assert!(st.success(), "prlimit --nofile={soft}:");
    };
    let soft_before = Command::new("prlimit")
        .args([
            "--pid",
            &pid.to_string(),
            "--nofile",
            "--output=SOFT",
            "--noheadings",
        ])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .expect("prlimit");
    let open = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("fds")
        .count();
    nofile(&(open + 8).to_string());
    let flood: Vec<TcpStream> = (0..200)
        .filter_map(|_| TcpStream::connect(("127.0.0.1", port)).ok())
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    drop(flood);
    wait_for("an answer after descriptor exhaustion", 5, || answers(port));
    nofile(&soft_before);
    assert!(answers(port));
    let grown = rss_kib(pid).saturating_sub(rss_before);
    assert!(grown < 20 * 1024, "the agent's RSS grew by {grown} KiB");
}

#[test]
#[ignore = "root: loads the probes, starts nats-server and runc; execs a user's fake runtime"]
fn a_users_fake_runtime_never_names_a_container() {
    if !(prerequisites()
        && require_program("setpriv", "util-linux")
        && require_program("busybox", "busybox-static"))
    {
        return;
    }
    let w = World::start("agent-fake-runtime");
    let dir = w.dirs.dir.clone();
    let id = format!("tracer-victim-{}", std::process::id());
    // Another pod's bundle, owned by root as every bundle on a node is.
    let other = dir.join("other");
    std::fs::create_dir_all(&other).expect("dir");
    let pod = PodAnnotations::new("default", "not-the-victims").container("app");
    let config = serde_json::json!({ "annotations": pod.json() });
    std::fs::write(other.join("config.json"), config.to_string()).expect("config");
    // A user's binary called runc (busybox: it only has to be exec'd), run as uid 65534
    // before the real runtime creates the container, with the victim's container id.
    use std::os::unix::fs::PermissionsExt;
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).expect("bin");
    for d in [&dir, &bin] {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let busybox = tests::which("busybox").expect("busybox");
    std::fs::copy(busybox, bin.join("runc")).expect("copy");
    let _ = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(bin.join("runc"))
        .args(["create", "--bundle"])
        .arg(&other)
        .arg(&id)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("the fake runtime");
    let (_, init_pid) = runc_run(&dir.join("bundle"), &id);
    let url = w.url();
    let story_of_init = || -> Option<serde_json::Value> {
        let story: serde_json::Value =
            serde_json::from_str(&tracer_out(&w.tracer, &["story", &url, "--format", "json"]))
                .ok()?;
        story["stories"]
            .as_array()?
            .iter()
            .find(|s| s["init_pid"] == init_pid)
            .cloned()
    };
    wait_for("the victim's story in the stream", 20, || {
        story_of_init().is_some()
    });
    let mine = story_of_init().expect("story");
    assert_eq!(mine["pod"], format!("default/{id}"), "{mine}");
    let tree: serde_json::Value =
        serde_json::from_str(&tracer_out(&w.tracer, &["tree", &url, "--format", "json"]))
            .expect("tree JSON");
    // The fake's bundle identity refused, by its real uid (the file it exec'd is judged with
    // the exec; nobody's is refused as not root).
    let refused = tree["warnings"]
        .as_array()
        .expect("warnings")
        .iter()
        .any(|w| {
            w["kind"] == "identity_not_from_root"
                || (w["kind"] == "role_refused"
                    && w["text"]
                        .as_str()
                        .is_some_and(|t| t.contains("(uid 65534)")))
        });
    assert!(
        refused,
        "nobody's identity was not refused: {}",
        tree["warnings"]
    );
}

/// A runtime and a JetStream context on the test's nats-server, as a client of the stream.
fn jetstream(nats_port: u16) -> (tokio::runtime::Runtime, async_nats::jetstream::Context) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let server = format!("nats://127.0.0.1:{nats_port}");
    // The context spawns on the runtime: made inside it.
    let js = rt.block_on(async {
        let client = tracer::nats::connect(&server, tracer::nats::FirstConnect::Fail)
            .await
            .expect("connect");
        async_nats::jetstream::new(client)
    });
    (rt, js)
}

/// A pid no process has (above the kernel's pid_max limit).
const FORGED_PID: u32 = 4_194_305;

/// An exec by [`FORGED_PID`], as a forger writes it.
fn forged_exec() -> tracer::Event {
    use tracer::event::{CapturedStr, EventKind};
    let kind = EventKind::Exec {
        old_tid: FORGED_PID,
        filename: CapturedStr::new("/usr/bin/forged"),
        cred: None,
    };
    tracer::Event::bare(1, 1, FORGED_PID, FORGED_PID, "forged", kind)
}

/// Publishes on `node`'s subject a whole segment its agent never wrote: a trace file whose one
/// event is an exec by [`FORGED_PID`], as anyone with publish rights there could.
fn forge_segment(nats_port: u16, node: &str) {
    use tracer::nats;
    let (rt, js) = jetstream(nats_port);
    rt.block_on(async {
        let id = format!("{node}-{}-0", nats::random_id());
        let header = tracer::tracefile::Header::default();
        let (mut seg, mut msgs) = nats::Segment::start(id, &header).expect("segment");
        seg.write_event(&forged_exec()).expect("event");
        msgs.extend(seg.flush(false).expect("flush"));
        for m in &msgs {
            nats::publish(&js, &nats::subject(node), m)
                .await
                .expect("publish");
        }
    });
}

#[test]
#[ignore = "root: loads the probes, starts nats-server"]
fn a_forged_segment_in_the_stream_is_reported_and_hides_none_of_the_agents_events() {
    if !prerequisites() {
        return;
    }
    let mut w = World::start("agent-forged");
    let url = w.url();
    let tag = format!("tracer-forged-{}", std::process::id());
    let log = w.dirs.dir.join("agent.log");
    let why = |out: std::process::Output| {
        let log = std::fs::read_to_string(&log).unwrap_or_default();
        format!(
            "reader: {}\nagent log:\n{log}",
            String::from_utf8_lossy(&out.stderr)
        )
    };
    let before = marker(&format!("{tag}-before"));
    wait_or(
        "the first marker in the stream",
        30,
        || has_exec(&export(&w.tracer, &url, &[]), before),
        || why(export(&w.tracer, &url, &[])),
    );
    // In the middle of the agent's segment, a forged one: its header and frames.
    forge_segment(w.nats_port, "n1");
    let after = marker(&format!("{tag}-after"));
    wait_or(
        "the marker run after the forgery in the stream",
        30,
        || has_exec(&export(&w.tracer, &url, &[]), after),
        || why(export(&w.tracer, &url, &[])),
    );
    w.agent.terminate();
    let out = export(&w.tracer, &url, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(has_exec(&out, before) && has_exec(&out, after), "{stderr}");
    assert!(
        stderr.contains("segments or heartbeats forged: not signed by node n1's key"),
        "the reader did not report the forged segment: {stderr}"
    );
    // The forged segment is never the node's word: its event is not read.
    let forged = jsonl(&String::from_utf8_lossy(&out.stdout))
        .iter()
        .any(|e| e["tgid"] == FORGED_PID);
    assert!(!forged, "the forged segment's event was read: {stderr}");
}

/// A forger with publish rights on n1's subject, who reads the stream: a whole segment of
/// its own (its nonce, its chain) whose heartbeat says the node beats every millisecond and
/// was last heard an hour ago, signed by a key of its own. `tracer nodes` shows n1 live with
/// its agent's interval, and says what was forged.
#[test]
#[ignore = "root: loads the probes, starts nats-server"]
fn a_forged_heartbeat_is_never_the_nodes_word() {
    use tracer::nats;
    if !prerequisites() {
        return;
    }
    let w = World::start("agent-forged-beat");
    let (rt, js) = jetstream(w.nats_port);
    rt.block_on(async {
        let id = format!("n1-{}-0", nats::random_id());
        let key = std::sync::Arc::new(nats::sign::NodeKey::generate());
        let header = tracer::tracefile::Header::default();
        let (mut seg, mut msgs) =
            nats::Segment::start_signed(id, &header, Some(key)).expect("segment");
        let beat = nats::heartbeat::Heartbeat {
            interval_ms: 1,
            wall_ns: nats::heartbeat::wall_now_ns() - 3_600_000_000_000,
            ..Default::default()
        };
        msgs.extend(seg.heartbeat(&beat));
        for m in &msgs {
            nats::publish(&js, &nats::subject("n1"), m)
                .await
                .expect("publish");
        }
    });
    let server = format!("nats://127.0.0.1:{}", w.nats_port);
    let out = Command::new(&w.tracer)
        .args(["nodes", &server, "--format", "json"])
        .output()
        .expect("tracer nodes");
    assert!(out.status.success(), "{out:?}");
    let t: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let n1 = tests::agent::row(&t, "n1");
    assert_eq!(n1["state"], "live", "{n1}");
    assert_eq!(n1["interval_ms"], 10_000, "{n1}");
    let notes = n1["notes"].to_string();
    assert!(
        notes.contains("forged: not signed by node n1's key"),
        "{notes}"
    );
}

/// Frames numbered 0 to `n` - 1 with no events, then frame `n` holding an exec by
/// [`FORGED_PID`]: numbers running past any the agent has used yet.
fn frames_ahead(n: usize) -> Vec<u8> {
    let mut w =
        tracer::tracefile::TraceWriter::new(Vec::new(), &tracer::tracefile::Header::default())
            .expect("writer");
    let start = w.bytes_written() as usize;
    for _ in 0..n {
        w.write_stats(0, 0, 0).expect("stats frame");
    }
    w.write_event(&forged_exec()).expect("event");
    w.flush().expect("flush");
    let end = w.bytes_written() as usize;
    w.finish().expect("finish")[start..end].to_vec()
}

/// As someone who may read the stream and publish on `node`'s subject: reads the node's last
/// message and publishes, under its segment, nonce and link and the agent's next index, frames
/// numbered ahead of the agent's (one with an exec of its own). Returns the segment forged into.
fn forge_frames_ahead(nats_port: u16, node: &str) -> String {
    use tracer::nats;
    let (rt, js) = jetstream(nats_port);
    rt.block_on(async {
        let stream = js.get_stream(nats::STREAM).await.expect("stream");
        let last = stream
            .get_last_raw_message_by_subject(&nats::subject(node))
            .await
            .expect("the node's last message");
        let get = |h: &str| {
            last.headers
                .get(h)
                .map(|v| v.as_str().to_string())
                .expect(h)
        };
        let segment = get(nats::SEGMENT_HEADER);
        let id = get("Nats-Msg-Id");
        let index: u64 = id[segment.len() + 1..]
            .split('-')
            .next()
            .and_then(|i| i.parse().ok())
            .expect("message index");
        let msg = async_nats::jetstream::message::PublishMessage::build()
            .payload(frames_ahead(5_000).into())
            .message_id(format!(
                "{segment}-{}-{:016x}",
                index + 1,
                nats::random_u64()
            ))
            .header(nats::SEGMENT_HEADER, segment.as_str())
            .header(nats::PART_HEADER, "frames")
            .header(nats::NONCE_HEADER, get(nats::NONCE_HEADER).as_str())
            .header(nats::LINK_HEADER, get(nats::LINK_HEADER).as_str());
        js.send_publish(nats::subject(node), msg)
            .await
            .expect("publish")
            .await
            .expect("acknowledged");
        segment
    })
}

#[test]
#[ignore = "root: loads the probes, starts nats-server"]
fn frames_forged_ahead_by_a_reader_of_the_stream_are_dropped_unread_and_hide_nothing() {
    if !prerequisites() {
        return;
    }
    let mut w = World::start("agent-ahead");
    let url = w.url();
    let tag = format!("tracer-ahead-{}", std::process::id());
    let before = marker(&format!("{tag}-before"));
    wait_or(
        "the first marker in the stream",
        30,
        || has_exec(&export(&w.tracer, &url, &[]), before),
        || String::from_utf8_lossy(&export(&w.tracer, &url, &[]).stderr).into_owned(),
    );
    // Into the agent's current segment, before the agent's own next message.
    let segment = forge_frames_ahead(w.nats_port, "n1");
    let after = marker(&format!("{tag}-after"));
    let out = || export(&w.tracer, &url, &[]);
    wait_or(
        "the marker run after the forgery, read back",
        30,
        || has_exec(&out(), after),
        || String::from_utf8_lossy(&out().stderr).into_owned(),
    );
    w.agent.terminate();
    let out = out();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(has_exec(&out, before) && has_exec(&out, after), "{stderr}");
    let forged = jsonl(&String::from_utf8_lossy(&out.stdout))
        .iter()
        .any(|e| e["tgid"] == FORGED_PID);
    assert!(
        !forged,
        "the forged exec was read as segment {segment}'s: {stderr}"
    );
    assert!(
        stderr.contains("1 messages forged"),
        "the reader did not report the forgery: {stderr}"
    );
}

/// A server that greets each client, answers its pings (so the connection stays up) and
/// every other line it sends (a subscription, a publish and its payload) with `n` `-ERR`
/// lines.
fn erring_server(n: usize) -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            std::thread::spawn(move || err_each_line(conn, n));
        }
    });
    port
}

fn err_each_line(conn: std::net::TcpStream, n: usize) {
    use std::io::BufRead;
    let mut out = match conn.try_clone() {
        Ok(c) => c,
        Err(_) => return,
    };
    let info = "INFO {\"server_id\":\"flood\",\"version\":\"2.10.0\",\"proto\":1,\"headers\":true,\"max_payload\":1048576}\r\n";
    let errs = "-ERR 'flood'\r\n".repeat(n);
    if out.write_all(info.as_bytes()).is_err() {
        return;
    }
    for line in std::io::BufReader::new(conn)
        .split(b'\n')
        .map_while(Result::ok)
    {
        let reply = match &line[..] {
            l if l.starts_with(b"PING") => "PONG\r\n",
            l if l.starts_with(b"CONNECT") || l.starts_with(b"PONG") => continue,
            _ => errs.as_str(),
        };
        if out.write_all(reply.as_bytes()).is_err() {
            return;
        }
    }
}

/// Lines of `text` that are not blank.
fn lines_of(text: &str) -> usize {
    text.lines().filter(|l| !l.trim().is_empty()).count()
}

/// A server answering every request with a hundred `-ERR` lines: the agent and a reader say
/// each burst in a line and a count, not a line per error.
#[test]
#[ignore = "root: loads the probes"]
fn an_error_flood_is_a_line_and_a_count_per_burst() {
    if !tests::prereq::require_root() {
        return;
    }
    let port = erring_server(100);
    let url = format!("nats://127.0.0.1:{port}");
    let tracer = tests::bins::release_tracer().expect("release tracer");
    let dirs = tests::agent::Dirs::new("agent-flood");
    let log = dirs.dir.join("agent.log");
    let metrics = tests::servers::free_port();
    let mut agent =
        tests::agent::start_agent_with(&tracer, (&url, metrics), "flood", &log, &[], &["--all"]);
    std::thread::sleep(Duration::from_secs(10));
    agent.terminate();
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        text.contains("flood"),
        "the server's errors were never said:\n{text}"
    );
    assert!(lines_of(&text) <= 30, "{} lines:\n{text}", lines_of(&text));
    let reader = Command::new(&tracer)
        .args(["tree", &format!("{url}/flood")])
        .stdin(Stdio::null())
        .output()
        .expect("tracer tree");
    let err = String::from_utf8_lossy(&reader.stderr);
    assert!(!reader.status.success(), "{err}");
    assert!(lines_of(&err) <= 30, "{} lines:\n{err}", lines_of(&err));
}

/// A thousand junk subjects named like nodes beside one agent's: `tracer nodes` lists the
/// agent's node alone and says how many subjects it skipped.
#[test]
#[ignore = "root: loads the probes, starts nats-server"]
fn a_subject_flood_is_skipped_and_counted() {
    if !prerequisites() {
        return;
    }
    let w = World::start("agent-subjects");
    let (rt, js) = jetstream(w.nats_port);
    rt.block_on(async {
        for i in 0..1000 {
            let subject = format!("tracer.flood{i:04}.events");
            let ack = js.publish(subject, "junk".into()).await.expect("publish");
            ack.await.expect("stored");
        }
    });
    let server = format!("nats://127.0.0.1:{}", w.nats_port);
    let out = Command::new(&w.tracer)
        .args(["nodes", &server, "--format", "json"])
        .output()
        .expect("tracer nodes");
    assert!(out.status.success(), "{out:?}");
    let t: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let names: Vec<&str> = t["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .filter_map(|r| r["node"].as_str())
        .collect();
    // Bounded messages: the first names, not a thousand rows.
    assert_eq!(
        names,
        ["n1"],
        "{} nodes: {:?}",
        names.len(),
        &names[..names.len().min(5)]
    );
    assert_eq!(t["not_agents"], 1000);
    let text = tracer_out(&w.tracer, &["nodes", &server]);
    assert!(text.contains("(1000 subjects skipped"), "{text}");
}
