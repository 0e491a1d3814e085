//! Root tests of `tracer agent` against real servers from Debian packages: `nats-server -js`
//! on a loopback port (package nats-server) and `promtool check metrics` (package
//! prometheus). Each test starts and stops its own servers. Run by `cargo xtask test` as root
//! (`--ignored`).
#![cfg(feature = "capture")]

use std::io::Write;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tests::prereq::{require_program, require_root};
use tests::servers::{
    free_port, get, listening, sample, start_nats, start_nats_with, two_ports, wait_for, wait_or,
    Guard,
};
use tests::tmux::Tmux;
use tests::{busybox_bundle, release_tracer, temp_dir};
use tracer::synth::PodAnnotations;

/// `tracer agent --all` publishing to `nats_port` as `node`, metrics on `metrics_port`, with
/// `env` added to its environment.
fn start_agent(
    tracer: &Path,
    (nats_port, metrics_port): (u16, u16),
    node: &str,
    log: &Path,
    env: &[(&str, &Path)],
) -> Guard {
    let log_path = log;
    let log = std::fs::File::create(log_path).expect("agent log");
    let child = Command::new(tracer)
        .envs(env.iter().copied())
        .args(["agent", "--all", "--node", node, "--nats"])
        .arg(format!("nats://127.0.0.1:{nats_port}"))
        .arg("--listen")
        .arg(format!("127.0.0.1:{metrics_port}"))
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start tracer agent");
    let mut g = Guard(child);
    let log_text = || std::fs::read_to_string(log_path).unwrap_or_default();
    // Capturing once it counted an event (the endpoint is up before the probes are). A quiet
    // host may start no process for minutes: each try starts one.
    wait_or(
        "the agent to capture",
        60,
        || {
            if let Ok(Some(st)) = g.0.try_wait() {
                panic!("the agent exited ({st}); its log:\n{}", log_text());
            }
            let _ = Command::new("/bin/true").status();
            scrape(metrics_port).is_some_and(|m| m.contains("tracer_events_total{"))
        },
        || {
            format!(
                "its log:\n{}\nmetrics: {:?}",
                log_text(),
                scrape(metrics_port)
            )
        },
    );
    g
}

/// GET /metrics; the body, when the answer is 200.
fn scrape(port: u16) -> Option<String> {
    get(port, "/metrics", Duration::from_secs(5))
        .filter(|(status, _)| status.contains(" 200 "))
        .map(|(_, body)| body)
}

/// Runs `cmd`; its stdout, or the test fails with its stderr.
fn succeed(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 output")
}

fn tracer_out(tracer: &Path, args: &[&str]) -> String {
    succeed(Command::new(tracer).args(args))
}

fn prerequisites() -> bool {
    require_root()
        && require_program("nats-server", "nats-server")
        && require_program("promtool", "prometheus")
        && require_program("runc", "runc")
}

struct Dirs {
    dir: PathBuf,
}

impl Dirs {
    fn new(tag: &str) -> Dirs {
        Dirs {
            dir: temp_dir(tag).expect("temp dir"),
        }
    }
}

impl Drop for Dirs {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A test's world: the tracer binary, its directory (removed at the end), nats-server and an
/// agent publishing as `n1`. Fields drop in order: agent, server, then the directory.
struct World {
    agent: Guard,
    nats: Guard,
    tracer: PathBuf,
    nats_port: u16,
    metrics_port: u16,
    dirs: Dirs,
}

impl World {
    fn start(tag: &str) -> World {
        let tracer = release_tracer().expect("tracer binary");
        let dirs = Dirs::new(tag);
        let dir = &dirs.dir;
        let (nats_port, metrics_port) = two_ports();
        let nats = start_nats(nats_port, &dir.join("store"), &dir.join("nats.log"));
        let agent = start_agent(
            &tracer,
            (nats_port, metrics_port),
            "n1",
            &dir.join("agent.log"),
            &[],
        );
        World {
            agent,
            nats,
            tracer,
            nats_port,
            metrics_port,
            dirs,
        }
    }

    fn url(&self) -> String {
        format!("nats://127.0.0.1:{}/n1", self.nats_port)
    }
}

/// `runc run` of a busybox container sleeping a little, annotated as container `app` of pod
/// `default/ID`; returns (runc's pid, the container
/// init's pid as `runc state` reports it while it runs).
fn runc_run(dir: &Path, id: &str) -> (u32, u32) {
    let bundle = busybox_bundle(dir, &["sleep", "2"]).expect("bundle");
    // Named as a Kubernetes pod, as containerd's CRI plugin names its bundles.
    let config = bundle.join("config.json");
    let mut c: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&config).expect("config.json")).expect("JSON");
    c["annotations"] = PodAnnotations::new("default", id).container("app").json();
    std::fs::write(&config, serde_json::to_vec(&c).expect("JSON")).expect("write config");
    let mut runc = Command::new("runc")
        .args(["run", "--bundle"])
        .arg(&bundle)
        .arg(id)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .expect("runc run");
    let mut init = None;
    wait_for("runc state to report the init", 20, || {
        let out = Command::new("runc").args(["state", id]).output();
        init = out
            .ok()
            .and_then(|o| serde_json::from_slice::<serde_json::Value>(&o.stdout).ok())
            .and_then(|v| v["pid"].as_u64())
            .filter(|p| *p > 0);
        init.is_some()
    });
    let st = runc.wait().expect("runc exit");
    let _ = Command::new("runc")
        .args(["delete", "--force", id])
        .status();
    assert!(st.success(), "runc run failed: {st}");
    (runc.id(), init.expect("init pid") as u32)
}

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

/// In `tree` (JSON, read from `url`), the container init was born by CLONE_PARENT from runc's
/// stages: its real parent is `runc run` itself.
fn assert_runc_run_birth(tree: &serde_json::Value, init_pid: u32, runc_pid: u32, url: &str) {
    let init = tree["processes"]
        .as_array()
        .expect("processes")
        .iter()
        .find(|p| p["pid"] == init_pid)
        .unwrap_or_else(|| panic!("container init {init_pid} not in the tree read from {url}"));
    let birth = &init["lineage"][0];
    assert_eq!(birth["how"], "clone_parent", "{init}");
    assert_eq!(birth["parent"], runc_pid, "{init}");
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
        assert_eq!(story["nodes"][0]["node"], "n1", "{story}");
        let births: Vec<&serde_json::Value> = story["nodes"][0]["story"]["stories"]
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

/// JSON lines.
fn jsonl(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect()
}

/// Runs `sh -c 'exit 0' MARKER` on the host; its pid.
fn marker(name: &str) -> u32 {
    let mut c = Command::new("/bin/sh")
        .args(["-c", "exit 0", name])
        .spawn()
        .expect("marker process");
    let pid = c.id();
    assert!(c.wait().expect("marker exit").success());
    pid
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

/// Runs openssl in `dir`; fails the test with its output when it fails.
fn openssl(dir: &Path, args: &[&str]) {
    succeed(Command::new("openssl").current_dir(dir).args(args));
}

/// A CA and a certificate for 127.0.0.1 it signed, made in `dir`: (ca.pem, server.pem,
/// server.key).
fn make_certificates(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let mut ca = vec!["req", "-x509", "-days", "1", "-subj", "/CN=tracer test CA"];
    ca.extend(ec);
    ca.extend(["-keyout", "ca.key", "-out", "ca.pem"]);
    openssl(dir, &ca);
    let mut csr = vec!["req", "-subj", "/CN=127.0.0.1"];
    csr.extend(ec);
    csr.extend(["-keyout", "server.key", "-out", "server.csr"]);
    openssl(dir, &csr);
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n",
    )
    .expect("extensions");
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-days",
            "1",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-extfile",
            "server.ext",
            "-out",
            "server.pem",
        ],
    );
    (
        dir.join("ca.pem"),
        dir.join("server.pem"),
        dir.join("server.key"),
    )
}

/// The tracer binary and a test directory holding a CA and a server certificate it signed
/// ([`make_certificates`]).
struct TlsSetup {
    tracer: PathBuf,
    dirs: Dirs,
    ca: PathBuf,
    cert: PathBuf,
    key: PathBuf,
}

impl TlsSetup {
    fn new(tag: &str) -> TlsSetup {
        let tracer = release_tracer().expect("tracer binary");
        let dirs = Dirs::new(tag);
        let (ca, cert, key) = make_certificates(&dirs.dir);
        TlsSetup {
            tracer,
            dirs,
            ca,
            cert,
            key,
        }
    }
}

#[test]
#[ignore = "root: loads the probes, starts nats-server with TLS"]
fn the_agent_and_readers_use_tls_from_the_environment() {
    if !(prerequisites() && require_program("openssl", "openssl")) {
        return;
    }
    let TlsSetup {
        tracer,
        dirs,
        ca,
        cert,
        key,
    } = TlsSetup::new("agent-tls");
    let dir = &dirs.dir;
    let (nats_port, metrics_port) = two_ports();
    let tls = [
        "--tls".as_ref(),
        "--tlscert".as_ref(),
        cert.as_os_str(),
        "--tlskey".as_ref(),
        key.as_os_str(),
    ];
    let mut nats = start_nats_with(nats_port, &dir.join("store"), &dir.join("nats.log"), &tls);
    let with_ca = [("TRACER_NATS_CA", ca.as_path())];
    let log = dir.join("agent.log");
    let mut agent = start_agent(&tracer, (nats_port, metrics_port), "n1", &log, &with_ca);
    let url = format!("nats://127.0.0.1:{nats_port}/n1");
    let tag = format!("tracer-tls-{}", std::process::id());
    let pid = marker(&tag);
    let read = |env: &[(&str, &Path)]| export(&tracer, &url, env);
    // The marker's exec arrives over TLS, read back over TLS.
    let has_marker = |out: &std::process::Output| has_exec(out, pid);
    let why = || {
        let log = std::fs::read_to_string(&log).unwrap_or_default();
        let reader = String::from_utf8_lossy(&read(&with_ca).stderr).into_owned();
        format!("reader: {reader}\nagent log:\n{log}")
    };
    wait_or(
        "the marker in the stream, over TLS",
        30,
        || has_marker(&read(&with_ca)),
        why,
    );
    // Without the CA the server's certificate is not trusted: a one-line error, no panic.
    let untrusted = read(&[]);
    agent.terminate();
    nats.terminate();
    let stderr = String::from_utf8_lossy(&untrusted.stderr);
    assert_eq!(untrusted.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("cannot connect to nats://127.0.0.1"),
        "{stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
}

/// The image `cargo xtask image` builds (before the root tests in `cargo xtask test`).
const IMAGE: &str = "localhost/tracer:latest";

/// A podman container removed (with force) when dropped.
struct Container(String);

impl Drop for Container {
    fn drop(&mut self) {
        let _ = Command::new("podman")
            .args(["rm", "--force", "--time", "2", &self.0])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

impl Container {
    fn logs(&self) -> String {
        Command::new("podman")
            .args(["logs", &self.0])
            .output()
            .map(|o| {
                String::from_utf8_lossy(&o.stdout).into_owned()
                    + &String::from_utf8_lossy(&o.stderr)
            })
            .unwrap_or_default()
    }
}

/// deploy/daemonset.yaml's container as a kubelet would run it on node `n1` (its pod IP the
/// host's: the manifest asks for the host network), publishing to `nats_port`.
fn manifest_run(nats_port: u16) -> tests::deploy::PodmanRun {
    let url = format!("nats://127.0.0.1:{nats_port}");
    let cluster = tests::deploy::Cluster {
        fields: [("spec.nodeName", "n1"), ("status.podIP", "127.0.0.1")].into(),
        env: [("NATS_URL", url.as_str())].into(),
    };
    tests::deploy::daemonset_run(
        &tests::workspace_root().join("deploy/daemonset.yaml"),
        &cluster,
    )
    .expect("deploy/daemonset.yaml translates to podman flags")
}

/// `podman run` of the image with `run`'s flags and arguments; `detach` or in the foreground.
fn podman_run(run: &tests::deploy::PodmanRun, name: &str, detach: bool) -> std::process::Output {
    let mut cmd = Command::new("podman");
    cmd.args(["run", "--pull=never", "--name", name]);
    if detach {
        cmd.arg("--detach");
    }
    // Not the manifest's: podman on this machine cannot apply its own default rlimits to a
    // container without CAP_SYS_RESOURCE ("error setting rlimit type 7"); a kubelet's runtime
    // passes the node's.
    cmd.args(["--ulimit=nofile=1024:1024", "--ulimit=nproc=1024:1024"]);
    cmd.args(&run.flags).arg(IMAGE).args(&run.args);
    cmd.stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run podman: {e}"))
}

/// `run` started detached as `TAG-PID`; the test fails if podman cannot start it.
fn start_container(run: &tests::deploy::PodmanRun, tag: &str) -> Container {
    let c = Container(format!("{tag}-{}", std::process::id()));
    let started = podman_run(run, &c.0, true);
    assert!(
        started.status.success(),
        "podman run: {}",
        String::from_utf8_lossy(&started.stderr)
    );
    c
}

/// The metrics port the manifest's `--listen` names.
fn manifest_metrics_port(run: &tests::deploy::PodmanRun) -> u16 {
    run.args
        .iter()
        .find_map(|a| a.strip_prefix("--listen="))
        .and_then(|a| a.rsplit(':').next()?.parse().ok())
        .expect("the manifest's agent has --listen=IP:PORT")
}

#[test]
#[ignore = "root: runs the agent's image with podman as the DaemonSet says, nats-server, runc"]
fn the_daemonsets_container_publishes_a_pod_as_the_manifest_runs_it() {
    let have_image = || {
        Command::new("podman")
            .args(["image", "exists", IMAGE])
            .status()
            .is_ok_and(|s| s.success())
    };
    if !(prerequisites()
        && require_program("podman", "podman")
        && tests::prereq::require(
            "image",
            have_image(),
            "`cargo xtask image` builds localhost/tracer:latest",
        ))
    {
        return;
    }
    let tracer = release_tracer().expect("tracer binary");
    let dirs = Dirs::new("daemonset");
    let nats_port = free_port();
    let mut nats = start_nats(
        nats_port,
        &dirs.dir.join("store"),
        &dirs.dir.join("nats.log"),
    );
    let run = manifest_run(nats_port);
    let metrics_port = manifest_metrics_port(&run);
    assert!(
        !listening(metrics_port),
        "port {metrics_port} (the manifest's) is taken"
    );

    let agent = start_container(&run, "tracer-daemonset");
    wait_or(
        "the agent in its container to capture",
        60,
        || {
            let _ = Command::new("/bin/true").status();
            scrape(metrics_port).is_some_and(|m| m.contains("tracer_events_total{"))
        },
        || agent.logs(),
    );
    let births = r#"tracer_container_births_total{runtime="runc"}"#;
    let before = sample(&scrape(metrics_port).unwrap_or_default(), births);
    let id = format!("tracer-ds-{}", std::process::id());
    let (runc_pid, init_pid) = runc_run(&dirs.dir.join("bundle"), &id);
    wait_or(
        "the birth in tracer_container_births_total",
        30,
        || sample(&scrape(metrics_port).unwrap_or_default(), births) >= before + 1.0,
        || agent.logs(),
    );
    let url = format!("nats://127.0.0.1:{nats_port}/n1");
    let story: serde_json::Value =
        serde_json::from_str(&tracer_out(&tracer, &["story", &url, "--format", "json"]))
            .expect("story JSON");
    let tree: serde_json::Value =
        serde_json::from_str(&tracer_out(&tracer, &["tree", &url, "--format", "json"]))
            .expect("tree JSON");
    drop(agent);
    nats.terminate();

    // Read back from NATS: the pod's name (from the bundle, read through the runtime's
    // /proc/PID/root from inside the container) and the CLONE_PARENT birth.
    let stories = story["stories"].as_array().expect("stories");
    let mine = stories
        .iter()
        .find(|s| s["init_pid"] == init_pid)
        .unwrap_or_else(|| panic!("no story of init {init_pid}: {story}"));
    assert_eq!(mine["pod"], format!("default/{id}"), "{mine}");
    assert_runc_run_birth(&tree, init_pid, runc_pid, &url);
}

#[test]
#[ignore = "root: runs the agent's image with podman, one capability short of the manifest"]
fn the_daemonsets_container_without_a_needed_capability_fails_naming_it() {
    if !(prerequisites() && require_program("podman", "podman")) {
        return;
    }
    let run = manifest_run(free_port());
    for cap in ["BPF", "PERFMON"] {
        assert!(
            run.cap_add.iter().any(|c| c == cap),
            "the manifest adds no {cap}"
        );
        let short = run.without_capability(cap);
        let name = Container(format!(
            "tracer-ds-no-{}-{}",
            cap.to_lowercase(),
            std::process::id()
        ));
        let out = podman_run(&short, &name.0, false);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success(),
            "the agent ran without CAP_{cap}: {stderr}"
        );
        let errors: Vec<&str> = stderr
            .lines()
            .filter(|l| l.starts_with("tracer:"))
            .collect();
        assert_eq!(errors.len(), 1, "one line from tracer expected: {stderr}");
        assert!(errors[0].contains(&format!("CAP_{cap}")), "{stderr}");
    }
    // Without CAP_SYS_PTRACE the agent runs but says what it cannot read.
    let short = run.without_capability("SYS_PTRACE");
    let agent = start_container(&short, "tracer-ds-no-ptrace");
    wait_or(
        "the warning about CAP_SYS_PTRACE",
        20,
        || agent.logs().contains("no CAP_SYS_PTRACE"),
        || agent.logs(),
    );
}

/// A scrape answered 200 within 2 s.
fn answers(port: u16) -> bool {
    get(port, "/metrics", Duration::from_secs(2)).is_some_and(|(status, body)| {
        status.contains(" 200 ") && body.contains("tracer_events_total")
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
    let refused = tree["warnings"]
        .as_array()
        .expect("warnings")
        .iter()
        .any(|w| w["kind"] == "identity_not_from_root");
    assert!(
        refused,
        "no identity_not_from_root warning: {}",
        tree["warnings"]
    );
}

/// The jsonl export of `url` (its output whole, status and stderr included).
fn export(tracer: &Path, url: &str, env: &[(&str, &Path)]) -> std::process::Output {
    Command::new(tracer)
        .envs(env.iter().copied())
        .args(["export", url, "--format", "jsonl"])
        .output()
        .expect("run tracer export")
}

/// Whether the export holds the exec of the marker process `pid`.
fn has_exec(out: &std::process::Output, pid: u32) -> bool {
    out.status.success()
        && jsonl(&String::from_utf8_lossy(&out.stdout))
            .iter()
            .any(|e| e["tgid"] == pid && e["event"] == "exec_enter")
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
        stderr.contains("came after another segment had started"),
        "the reader did not report the forged segment: {stderr}"
    );
    // The forged events are read as their own segment, after the agent's: reported, not
    // hidden, and hiding nothing.
    let forged = jsonl(&String::from_utf8_lossy(&out.stdout))
        .iter()
        .any(|e| e["tgid"] == FORGED_PID);
    assert!(forged, "the forged segment's event is missing: {stderr}");
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

/// A client certificate for `cn` signed by the CA of [`make_certificates`] in `dir`:
/// (cert, key).
fn client_certificate(dir: &Path, cn: &str) -> (PathBuf, PathBuf) {
    let (key, csr, cert) = (
        format!("{cn}.key"),
        format!("{cn}.csr"),
        format!("{cn}.pem"),
    );
    let subj = format!("/CN={cn}");
    openssl(
        dir,
        &[
            "req",
            "-subj",
            &subj,
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            &key,
            "-out",
            &csr,
        ],
    );
    std::fs::write(dir.join("client.ext"), "extendedKeyUsage=clientAuth\n").expect("ext");
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-days",
            "1",
            "-in",
            &csr,
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-extfile",
            "client.ext",
            "-out",
            &cert,
        ],
    );
    (dir.join(cert), dir.join(key))
}

/// nats-server with TLS, each client certificate mapped to a user, and the users and rights
/// of deploy/nats-authorization.conf (copied as it is).
fn start_nats_with_authorization(dir: &Path, port: u16) -> Guard {
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/nats-authorization.conf");
    std::fs::copy(&shipped, dir.join("nats-authorization.conf")).expect("copy the rights");
    let conf = format!(
        "tls {{\n  cert_file: \"{d}/server.pem\"\n  key_file: \"{d}/server.key\"\n  \
         ca_file: \"{d}/ca.pem\"\n  verify_and_map: true\n}}\ninclude ./nats-authorization.conf\n",
        d = dir.display()
    );
    let path = dir.join("nats.conf");
    std::fs::write(&path, conf).expect("nats.conf");
    start_nats_with(
        port,
        &dir.join("store"),
        &dir.join("nats.log"),
        &["-c".as_ref(), path.as_os_str()],
    )
}

/// What [`as_user`] tries.
enum Try {
    /// Publishing one message on the subject.
    Publish(&'static str),
    /// Subscribing to the subject.
    Subscribe(&'static str),
}

/// Connects as the user of the client certificate `(cert, key)`, tries `what`, and returns
/// what the server answered (its errors, as the client reports them).
fn as_user(port: u16, ca: &Path, (cert, key): (&Path, &Path), what: Try) -> Vec<String> {
    let said = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let heard = said.clone();
    rt.block_on(async move {
        let client = async_nats::ConnectOptions::new()
            .add_root_certificates(ca.to_path_buf())
            .add_client_certificate(cert.to_path_buf(), key.to_path_buf())
            .require_tls(true)
            .event_callback(move |e| {
                heard.lock().unwrap().push(e.to_string());
                async {}
            })
            .connect(format!("nats://127.0.0.1:{port}"))
            .await
            .expect("connect");
        let _sub = match what {
            Try::Publish(subject) => {
                client
                    .publish(subject, "forged".into())
                    .await
                    .expect("publish");
                None
            }
            Try::Subscribe(subject) => Some(client.subscribe(subject).await.expect("subscribe")),
        };
        client.flush().await.expect("flush");
        // The refusal comes back asynchronously.
        tokio::time::sleep(Duration::from_secs(1)).await;
    });
    let said = said.lock().unwrap().clone();
    said
}

#[test]
#[ignore = "root: loads the probes, starts nats-server with TLS users"]
fn per_node_rights_keep_each_node_to_its_own_subject() {
    if !(prerequisites() && require_program("openssl", "openssl")) {
        return;
    }
    let TlsSetup {
        tracer, dirs, ca, ..
    } = TlsSetup::new("agent-rights");
    let dir = &dirs.dir;
    let (node_cert, node_key) = client_certificate(dir, "tracer-node-1");
    let (reader_cert, reader_key) = client_certificate(dir, "tracer-reader");
    let (nats_port, metrics_port) = two_ports();
    let nats_log = dir.join("nats.log");
    let mut nats = start_nats_with_authorization(dir, nats_port);
    let node1 = [
        ("TRACER_NATS_CA", ca.as_path()),
        ("TRACER_NATS_CERT", node_cert.as_path()),
        ("TRACER_NATS_KEY", node_key.as_path()),
    ];
    let reader = [
        ("TRACER_NATS_CA", ca.as_path()),
        ("TRACER_NATS_CERT", reader_cert.as_path()),
        ("TRACER_NATS_KEY", reader_key.as_path()),
    ];
    let log = dir.join("agent.log");
    let mut agent = start_agent(
        &tracer,
        (nats_port, metrics_port),
        "tracer-node-1",
        &log,
        &node1,
    );
    let url = |node: &str| format!("nats://127.0.0.1:{nats_port}/{node}");
    let pid = marker(&format!("tracer-rights-{}", std::process::id()));
    let server_log = || std::fs::read_to_string(&nats_log).unwrap_or_default();
    wait_or(
        "node 1's marker, read by the reader",
        30,
        || has_exec(&export(&tracer, &url("tracer-node-1"), &reader), pid),
        || {
            let out = export(&tracer, &url("tracer-node-1"), &reader);
            format!(
                "reader: {}\nagent log:\n{}\nserver log:\n{}",
                String::from_utf8_lossy(&out.stderr),
                std::fs::read_to_string(&log).unwrap_or_default(),
                server_log()
            )
        },
    );
    agent.terminate();
    // Node 1 publishing as node 2, the reader publishing at all, node 1 listening to the
    // replies readers get: the server refuses each (its log and its answer say so).
    let node1_ids = (node_cert.as_path(), node_key.as_path());
    let reader_ids = (reader_cert.as_path(), reader_key.as_path());
    let said = [
        as_user(
            nats_port,
            &ca,
            node1_ids,
            Try::Publish("tracer.tracer-node-2.events"),
        ),
        as_user(
            nats_port,
            &ca,
            reader_ids,
            Try::Publish("tracer.tracer-node-1.events"),
        ),
        as_user(nats_port, &ca, node1_ids, Try::Subscribe("_INBOX.>")),
    ];
    for (what, answer) in [
        ("Publish to \"tracer.tracer-node-2.events\"", &said[0]),
        ("Publish to \"tracer.tracer-node-1.events\"", &said[1]),
        ("Subscription to \"_INBOX.>\"", &said[2]),
    ] {
        assert!(
            answer
                .iter()
                .any(|e| e.contains("Permissions Violation") && e.contains(what)),
            "not refused: {what}: {answer:?}\nserver log:\n{}",
            server_log()
        );
    }
    for subject in ["tracer.tracer-node-2.events", "tracer.tracer-node-1.events"] {
        let logged = server_log().lines().any(|l| {
            l.contains("Publish Violation") && l.contains(&format!("Subject \"{subject}\""))
        });
        assert!(logged, "the server did not log refusing {subject}");
    }
    // Node 2's history stays empty; node 1's certificate reads nothing (it may only publish).
    let out = export(&tracer, &url("tracer-node-2"), &reader);
    assert!(!out.status.success(), "node 2 has a history");
    let out = export(&tracer, &url("tracer-node-1"), &node1);
    assert!(!out.status.success(), "a node read the stream");
    nats.terminate();
}
