//! Root tests of `tracer agent` against real servers from Debian packages: `nats-server -js`
//! on a loopback port (package nats-server) and `promtool check metrics` (package
//! prometheus): a container's birth published and served as metrics, a NATS outage within the
//! buffer, the viewer following a node's stream. Each test starts and stops its own servers.
//! Run by `cargo xtask test` as root (`--ignored`); the kit is `tests::agent`.
#![cfg(feature = "capture")]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tests::agent::{
    assert_runc_run_birth, jsonl, marker, prerequisites, runc_run, scrape, tracer_out, World,
};
use tests::prereq::require_program;
use tests::servers::{sample, start_nats, wait_for};
use tests::tmux::Tmux;

#[test]
#[ignore = "root: loads the probes, starts nats-server and runc"]
fn agent_publishes_a_container_birth_and_serves_metrics() {
    if !prerequisites() {
        return;
    }
    let mut w = World::start("agent-birth");
    let (dir, metrics_port) = (w.dirs.dir.clone(), w.metrics_port);
    let births = r#"tracer_container_births_total{runtime="runc"}"#;
    let before = sample(&scrape(metrics_port).unwrap_or_default(), births);

    let id = format!("tracer-agent-{}", std::process::id());
    let (runc_pid, init_pid) = runc_run(&dir.join("bundle"), &id);
    wait_for("the birth in tracer_container_births_total", 20, || {
        sample(&scrape(metrics_port).unwrap_or_default(), births) >= before + 1.0
    });
    promtool_check(&scrape(metrics_port).expect("metrics"));

    let url = w.url();
    let tree: serde_json::Value =
        serde_json::from_str(&tracer_out(&w.tracer, &["tree", &url, "--format", "json"]))
            .expect("tree JSON");
    let pod = format!("default/{id}");
    let reads = PodReads::across_nodes(&w, &pod);
    w.agent.terminate();
    w.nats.terminate();
    reads.check(&pod, init_pid);
    assert_runc_run_birth(&tree, init_pid, runc_pid, &url);
}

/// `promtool check metrics` passes on `metrics`.
fn promtool_check(metrics: &str) {
    let mut check = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool");
    check
        .stdin
        .take()
        .expect("stdin")
        .write_all(metrics.as_bytes())
        .expect("feed promtool");
    let out = check.wait_with_output().expect("promtool result");
    assert!(
        out.status.success(),
        "promtool check metrics failed:\n{}{}\non:\n{metrics}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// What every reader said about one pod, searched for on every node
/// (`nats://HOST:PORT/*`), and a process that is not the pod's.
struct PodReads {
    tree: serde_json::Value,
    /// `tree nats://…/* -n default`: every pod of the namespace, on every node.
    namespace_tree: serde_json::Value,
    story: serde_json::Value,
    events: Vec<serde_json::Value>,
    replayed: String,
    other: u32,
}

impl PodReads {
    fn across_nodes(w: &World, pod: &str) -> PodReads {
        let all = format!("nats://127.0.0.1:{}/*", w.nats_port);
        let out = |args: &[&str]| tracer_out(&w.tracer, args);
        // A process that is not the pod's: in the node's stream, never in the pod's events.
        let other = marker(&format!("tracer-not-the-pod-{}", std::process::id()));
        wait_for("the marker in the node's stream", 20, || {
            jsonl(&out(&["export", &w.url(), "--format", "jsonl"]))
                .iter()
                .any(|e| e["tgid"] == other)
        });
        let json = |args: &[&str]| -> serde_json::Value {
            serde_json::from_str(&out(args)).expect("JSON")
        };
        PodReads {
            tree: json(&["tree", &all, "--pod", pod, "--format", "json"]),
            namespace_tree: json(&["tree", &all, "-n", "default", "--format", "json"]),
            story: json(&["story", &all, "--pod", pod, "--format", "json"]),
            events: jsonl(&out(&["export", &all, "--pod", pod, "--format", "jsonl"])),
            replayed: out(&["replay", &all, "--pod", pod, "--no-tui"]),
            other,
        }
    }

    /// Found on n1 only, with the container's init; the other process nowhere.
    fn check(&self, pod: &str, init_pid: u32) {
        let (tree, story, other) = (&self.tree, &self.story, self.other);
        let nodes = tree["nodes"].as_array().expect("nodes");
        assert_eq!(nodes.len(), 1, "{tree}");
        assert_eq!(nodes[0]["node"], "n1");
        let pids: Vec<&serde_json::Value> = nodes[0]["tree"]["processes"]
            .as_array()
            .expect("processes")
            .iter()
            .map(|p| &p["pid"])
            .collect();
        assert!(pids.contains(&&serde_json::json!(init_pid)), "{tree}");
        let ns = &self.namespace_tree;
        assert_eq!(ns["nodes"][0]["node"], "n1", "{ns}");
        let in_ns = ns["nodes"][0]["tree"]["processes"]
            .as_array()
            .expect("processes");
        assert!(in_ns.iter().any(|p| p["pid"] == init_pid), "{ns}");
        assert_eq!(story["parts"][0]["node"], "n1", "{story}");
        let births: Vec<&serde_json::Value> = story["parts"][0]["stories"]
            .as_array()
            .expect("stories")
            .iter()
            .filter(|s| s["phase"] == "birth")
            .collect();
        assert_eq!(births.len(), 1, "{story}");
        assert_eq!(births[0]["init_pid"], init_pid, "{story}");
        assert_eq!(births[0]["pod"], pod, "{story}");
        // The pod's events: its init's birth and exec are there, the other process is not.
        let evs = &self.events;
        let init_born = evs
            .iter()
            .any(|e| e["event"] == "fork" && e["child_tgid"] == init_pid);
        assert!(init_born, "the init's fork is not among the pod's events");
        assert!(evs
            .iter()
            .any(|e| e["tgid"] == init_pid && e["event"] == "exec"));
        assert!(
            evs.iter().all(|e| e["tgid"] != other),
            "pid {other} is not the pod's"
        );
        let r = &self.replayed;
        assert!(r.contains(&format!("[pid {init_pid:>6}]")), "{r}");
        assert!(!r.contains("tracer-not-the-pod"), "{r}");
    }
}

#[test]
#[ignore = "root: loads the probes, starts and kills nats-server"]
fn a_nats_outage_within_the_buffer_loses_nothing() {
    if !prerequisites() {
        return;
    }
    let mut w = World::start("agent-outage");
    let (dir, metrics_port, nats_port) = (w.dirs.dir.clone(), w.metrics_port, w.nats_port);
    let store = dir.join("store");
    let tag = format!("tracer-outage-{}", std::process::id());
    let before = marker(&format!("{tag}-before"));
    std::thread::sleep(Duration::from_secs(1));

    w.nats.0.kill().expect("kill nats-server");
    w.nats.0.wait().expect("reap nats-server");
    let during = marker(&format!("{tag}-during"));
    // The agent holds what it could not publish: the gauge shows it.
    wait_for("events buffered during the outage", 20, || {
        sample(
            &scrape(metrics_port).unwrap_or_default(),
            "tracer_nats_buffered_events",
        ) > 0.0
    });
    // Longer than the client's 5 s acknowledgement timeout: publishes fail and are retried.
    std::thread::sleep(Duration::from_secs(7));
    w.nats = start_nats(nats_port, &store, &dir.join("nats2.log"));
    let after = marker(&format!("{tag}-after"));
    wait_for("the buffer to drain", 60, || {
        sample(
            &scrape(metrics_port).unwrap_or_default(),
            "tracer_nats_buffered_events",
        ) == 0.0
    });
    let metrics = scrape(metrics_port).expect("metrics");
    w.agent.terminate();
    let log = std::fs::read_to_string(dir.join("agent.log")).unwrap_or_default();
    assert!(
        log.contains("buffering and retrying") && log.contains("again"),
        "the agent never failed a publish and recovered:\n{log}"
    );

    let out = Command::new(&w.tracer)
        .args(["export", &w.url(), "--format", "jsonl"])
        .output()
        .expect("export");
    w.nats.terminate();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "export failed: {stderr}");
    // Whole: no frame skipped or missing, the agent's end record there.
    assert!(stderr.trim().is_empty(), "export warned: {stderr}");
    assert_eq!(
        sample(&metrics, "tracer_nats_dropped_events_total"),
        0.0,
        "{metrics}"
    );
    let events = jsonl(&String::from_utf8_lossy(&out.stdout));
    for (pid, name) in [(before, "before"), (during, "during"), (after, "after")] {
        let argv = serde_json::json!(["/bin/sh", "-c", "exit 0", format!("{tag}-{name}")]);
        let seen = events
            .iter()
            .any(|e| e["tgid"] == pid && e["event"] == "exec_enter" && e["argv"] == argv);
        assert!(seen, "the exec of the marker {name} (pid {pid}) is missing");
    }
}

#[test]
#[ignore = "root: loads the probes, starts nats-server; drives the viewer in tmux"]
fn view_follows_a_nodes_stream_live() {
    if !(prerequisites() && require_program("tmux", "tmux")) {
        return;
    }
    let mut w = World::start("agent-view");
    let dir = w.dirs.dir.clone();
    let t = Tmux::start("agent-view", 200, 50);
    t.wait_for(&["$"]);
    let source = format!("{} --end", w.url());
    let viewer = t.start_viewer(&w.tracer, &source, &["FOLLOW"], &dir.join("view.pid"));
    // A program that did not exist when the viewer read the stream, with a name of its own.
    let shows = |name: &str| {
        let prog = dir.join(name);
        std::fs::copy("/bin/sleep", &prog).expect("copy sleep");
        let mut c = Command::new(&prog)
            .arg("30")
            .spawn()
            .expect("start the marker");
        let pid = c.id();
        // Searched for until the viewer has it: the detail pane then names the process.
        let found = format!("process {pid}");
        let deadline = Instant::now() + tests::tmux::CEILING;
        while !t.capture().contains(&found) {
            assert!(
                Instant::now() < deadline,
                "pid {pid} ({name}) never showed in the followed view:\n{}",
                t.capture()
            );
            t.send(&["/"]);
            t.type_text(name);
            t.send(&["Enter"]);
            std::thread::sleep(Duration::from_millis(500));
        }
        let _ = c.kill();
        let _ = c.wait();
    };
    let tag = std::process::id() % 100_000;
    shows(&format!("tailmark{tag}"));
    // The server goes away and comes back: the view says so, and follows on.
    w.nats.0.kill().expect("kill nats-server");
    w.nats.0.wait().expect("reap nats-server");
    t.wait_for(&["disconnected; reconnecting"]);
    w.nats = start_nats(w.nats_port, &dir.join("store"), &dir.join("nats2.log"));
    shows(&format!("tailagain{tag}"));
    t.send(&["q"]);
    t.assert_terminal_usable("after-follow-ok");
    assert!(
        !Path::new(&format!("/proc/{}", viewer.trim())).exists(),
        "the viewer did not exit at q"
    );
}
