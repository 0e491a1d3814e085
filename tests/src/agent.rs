//! The agent tests' kit (tests/tests/agent*.rs): `tracer agent` started beside its own
//! nats-server ([`World`]), its `/metrics` scraped, a `runc run` named as a pod's container,
//! markers on the host, and the TLS certificates the encrypted tests use. Everything here
//! fails the test it runs in on an error.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::bins::release_tracer;
use crate::prereq::{require_program, require_root};
use crate::servers::{get, start_nats, two_ports, wait_for, wait_or, Guard};
use crate::{busybox_bundle, temp_dir};
use tracer::synth::PodAnnotations;

/// `tracer agent --all` publishing to `nats_port` as `node`, metrics on `metrics_port`, with
/// `env` added to its environment.
pub fn start_agent(
    tracer: &Path,
    (nats_port, metrics_port): (u16, u16),
    node: &str,
    log: &Path,
    env: &[(&str, &Path)],
) -> Guard {
    let nats = format!("nats://127.0.0.1:{nats_port}");
    start_agent_with(tracer, (&nats, metrics_port), node, log, env, &["--all"])
}

/// `tracer agent` publishing to `nats` (one server or a list) as `node`, metrics on
/// `metrics_port`, with `args` (its target and scope, its heartbeat, its stream); returns once
/// its capture runs. It says where it publishes only after the probes are attached: a line,
/// not a count of events, so a scoped agent on a quiet host is ready as soon as any other.
/// Its first message reaches the stream a moment later: a reader waits for it
/// ([`wait_for_nodes`], as [`World::start`] does).
pub fn start_agent_with(
    tracer: &Path,
    (nats, metrics_port): (&str, u16),
    node: &str,
    log: &Path,
    env: &[(&str, &Path)],
    args: &[&str],
) -> Guard {
    // The node's key beside the log: each test's agent a node of its own, nothing written to
    // the machine's /var/lib/tracer.
    let key = log.with_extension("nk");
    let child = Command::new(tracer)
        .envs(env.iter().copied())
        .args(["agent", "--node", node, "--nats", nats])
        .arg("--key")
        .arg(&key)
        .args(args)
        .arg("--listen")
        .arg(format!("127.0.0.1:{metrics_port}"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).expect("agent log"))
        .spawn()
        .expect("start tracer agent");
    let mut g = Guard(child);
    let text = || std::fs::read_to_string(log).unwrap_or_default();
    wait_or(
        "the agent to capture",
        60,
        || {
            if let Ok(Some(st)) = g.0.try_wait() {
                panic!("the agent exited ({st}); its log:\n{}", text());
            }
            text().contains("tracer: publishing to") && scrape(metrics_port).is_some()
        },
        || format!("its log:\n{}\nmetrics: {:?}", text(), scrape(metrics_port)),
    );
    g
}

/// GET /metrics; the body, when the answer is 200.
pub fn scrape(port: u16) -> Option<String> {
    get(port, "/metrics", Duration::from_secs(5))
        .filter(|(status, _)| status.contains(" 200 "))
        .map(|(_, body)| body)
}

/// Runs `cmd`; its stdout, or the test fails with its stderr.
pub fn succeed(cmd: &mut Command) -> String {
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

/// `tracer ARGS`'s stdout; the test fails if it fails.
pub fn tracer_out(tracer: &Path, args: &[&str]) -> String {
    succeed(Command::new(tracer).args(args))
}

/// Waits until `ok` holds of `tracer nodes` read from `servers`, which may fail meanwhile (a
/// cluster that lost a server answers once its stream's new leader is elected, however long
/// a loaded machine takes); the last answer or error is in the failure. Returns the answer.
pub fn wait_for_nodes(
    what: &str,
    tracer: &Path,
    servers: &str,
    ok: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let last = std::cell::RefCell::new(Err(String::new()));
    let read = || {
        let out = Command::new(tracer)
            .args(["nodes", servers, "--format", "json"])
            .output()
            .expect("run tracer nodes");
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).into_owned());
        }
        serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())
    };
    wait_or(
        what,
        90,
        || {
            let got = read();
            let done = got.as_ref().is_ok_and(&ok);
            *last.borrow_mut() = got;
            done
        },
        || format!("the last answer: {:?}", last.borrow()),
    );
    last.into_inner().expect("the answer waited for")
}

/// The row of `node` in a `nodes` JSON (`null` while the node has not published).
pub fn row<'a>(t: &'a serde_json::Value, node: &str) -> &'a serde_json::Value {
    t["nodes"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["node"] == node))
        .unwrap_or(&serde_json::Value::Null)
}

/// Root, nats-server, promtool and runc: what every agent test needs.
pub fn prerequisites() -> bool {
    require_root()
        && require_program("nats-server", "nats-server")
        && require_program("promtool", "prometheus")
        && require_program("runc", "runc")
}

/// A test's directory, removed when dropped.
pub struct Dirs {
    pub dir: PathBuf,
}

impl Dirs {
    pub fn new(tag: &str) -> Dirs {
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
pub struct World {
    pub agent: Guard,
    pub nats: Guard,
    pub tracer: PathBuf,
    pub nats_port: u16,
    pub metrics_port: u16,
    pub dirs: Dirs,
}

impl World {
    pub fn start(tag: &str) -> World {
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
        // A reader needs the node's first message in the stream: the agent publishes from a
        // task of its own, a moment after its capture runs.
        let url = format!("nats://127.0.0.1:{nats_port}");
        wait_for_nodes("n1's first message in the stream", &tracer, &url, |t| {
            !row(t, "n1").is_null()
        });
        World {
            agent,
            nats,
            tracer,
            nats_port,
            metrics_port,
            dirs,
        }
    }

    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}/n1", self.nats_port)
    }
}

/// Container `app` of pod `default/ID`: `runc run` of a busybox bundle made in `dir`, named
/// and annotated as containerd's CRI plugin annotates its bundles. Deleted when dropped.
pub struct PodContainer {
    pub id: String,
    pub runc: Child,
    /// The container's init, as `runc state` reports it.
    pub init: u32,
}

impl PodContainer {
    /// Started running `argv`; returns once `runc state` names its init.
    pub fn run(dir: &Path, id: &str, argv: &[&str]) -> PodContainer {
        let bundle = busybox_bundle(dir, argv).expect("bundle");
        let config = bundle.join("config.json");
        let mut c: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&config).expect("config.json")).expect("JSON");
        c["annotations"] = PodAnnotations::new("default", id).container("app").json();
        std::fs::write(&config, serde_json::to_vec(&c).expect("JSON")).expect("write config");
        let runc = Command::new("runc")
            .args(["run", "--bundle"])
            .arg(&bundle)
            .arg(id)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("runc run");
        let mut init = 0;
        wait_for("runc state to report the init", 20, || {
            let out = Command::new("runc").args(["state", id]).output();
            init = out
                .ok()
                .and_then(|o| serde_json::from_slice::<serde_json::Value>(&o.stdout).ok())
                .and_then(|v| v["pid"].as_u64())
                .unwrap_or(0) as u32;
            init > 0
        });
        PodContainer {
            id: id.to_string(),
            runc,
            init,
        }
    }

    /// Its init is running: /proc says so, not the tool.
    pub fn alive(&self) -> bool {
        std::fs::read_to_string(format!("/proc/{}/stat", self.init))
            .is_ok_and(|s| !s.contains(") Z "))
    }
}

impl Drop for PodContainer {
    fn drop(&mut self) {
        let _ = Command::new("runc")
            .args(["delete", "--force", &self.id])
            .status();
        let _ = self.runc.kill();
        let _ = self.runc.wait();
    }
}

/// A [`PodContainer`] sleeping a little, run to its end; returns (runc's pid, the container
/// init's pid as `runc state` reported it while it ran).
pub fn runc_run(dir: &Path, id: &str) -> (u32, u32) {
    let mut c = PodContainer::run(dir, id, &["sleep", "2"]);
    let st = c.runc.wait().expect("runc exit");
    assert!(st.success(), "runc run failed: {st}");
    (c.runc.id(), c.init)
}

/// In `tree` (JSON, read from `url`), the container init was born by CLONE_PARENT from runc's
/// stages: its real parent is `runc run` itself.
pub fn assert_runc_run_birth(tree: &serde_json::Value, init_pid: u32, runc_pid: u32, url: &str) {
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

/// JSON lines.
pub fn jsonl(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect()
}

/// Runs `sh -c 'exit 0' MARKER` on the host; its pid.
pub fn marker(name: &str) -> u32 {
    let mut c = Command::new("/bin/sh")
        .args(["-c", "exit 0", name])
        .spawn()
        .expect("marker process");
    let pid = c.id();
    assert!(c.wait().expect("marker exit").success());
    pid
}

/// Runs openssl in `dir`; fails the test with its output when it fails.
pub fn openssl(dir: &Path, args: &[&str]) {
    succeed(Command::new("openssl").current_dir(dir).args(args));
}

/// A CA and a certificate for 127.0.0.1 it signed, made in `dir`: (ca.pem, server.pem,
/// server.key).
pub fn make_certificates(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
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
pub struct TlsSetup {
    pub tracer: PathBuf,
    pub dirs: Dirs,
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl TlsSetup {
    pub fn new(tag: &str) -> TlsSetup {
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

/// The jsonl export of `url` (its output whole, status and stderr included).
pub fn export(tracer: &Path, url: &str, env: &[(&str, &Path)]) -> std::process::Output {
    Command::new(tracer)
        .envs(env.iter().copied())
        .args(["export", url, "--format", "jsonl"])
        .output()
        .expect("run tracer export")
}

/// Whether the export holds the exec of the marker process `pid`.
pub fn has_exec(out: &std::process::Output, pid: u32) -> bool {
    out.status.success()
        && jsonl(&String::from_utf8_lossy(&out.stdout))
            .iter()
            .any(|e| e["tgid"] == pid && e["event"] == "exec_enter")
}
