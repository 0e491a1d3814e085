//! Root test of `kubectl tracer` with Debian's kubectl (package kubernetes-client): the binary
//! linked as `kubectl-tracer` on the PATH is found by `kubectl plugin list`, and
//! `kubectl tracer …` runs it with the NATS servers from `--nats` or `TRACER_NATS`, and
//! kubectl's `-n/--namespace`, with no Kubernetes cluster: it reads a node's stream that
//! `tracer agent` publishes to a loopback nats-server. Truth: the container's pids from
//! `runc`. Run by `cargo xtask test` as root (`--ignored`); each command the plugin is run
//! with is one row of [`runs`], so another is one more row.
#![cfg(feature = "capture")]

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use tests::agent::{marker, prerequisites, runc_run, World};
use tests::prereq::require_program;
use tests::servers::wait_for;

/// A directory holding `kubectl-tracer`, a link to the tracer binary, put first on the PATH
/// of every kubectl run.
struct Plugin {
    dir: PathBuf,
    path: OsString,
}

impl Plugin {
    fn new(tracer: &Path, dir: &Path) -> Plugin {
        let dir = dir.join("plugins");
        std::fs::create_dir_all(&dir).expect("plugin dir");
        std::os::unix::fs::symlink(tracer, dir.join("kubectl-tracer")).expect("link");
        let mut path = OsString::from(&dir);
        path.push(":");
        path.push(std::env::var_os("PATH").unwrap_or_default());
        Plugin { dir, path }
    }

    /// `kubectl ARGS` with the plugin on the PATH, `env` added, no kubeconfig nor cluster.
    fn kubectl(&self, args: &[&str], env: &[(&str, &str)]) -> (bool, String, String) {
        let out = Command::new("kubectl")
            .args(args)
            .env("PATH", &self.path)
            .env("KUBECONFIG", self.dir.join("no-kubeconfig"))
            .envs(env.iter().copied())
            .output()
            .expect("run kubectl");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

/// One `kubectl tracer` run: its arguments, its environment, and what its stdout must show.
struct Run {
    args: Vec<String>,
    env: Vec<(&'static str, String)>,
    check: Check,
}

/// What a run's stdout must show: why not, when it does not.
type Check = Box<dyn Fn(&str) -> Result<(), String>>;

#[test]
#[ignore = "root: loads the probes, starts nats-server and runc; runs kubectl"]
fn kubectl_finds_the_plugin_and_runs_it_on_nats_reads() {
    if !(prerequisites() && require_program("kubectl", "kubernetes-client")) {
        return;
    }
    let w = World::start("kubectl");
    let plugin = Plugin::new(&w.tracer, &w.dirs.dir);
    let (ok, out, err) = plugin.kubectl(&["plugin", "list"], &[]);
    let link = plugin.dir.join("kubectl-tracer");
    assert!(
        ok && out.lines().any(|l| l.trim() == link.to_string_lossy()),
        "kubectl plugin list does not list {}:\n{out}{err}",
        link.display()
    );

    let id = format!("tracer-kubectl-{}", std::process::id());
    let (_, init_pid) = runc_run(&w.dirs.dir.join("bundle"), &id);
    // Once a later process is in the stream, so is the container.
    let later = marker(&format!("{id}-later"));
    let server = format!("nats://127.0.0.1:{}", w.nats_port);
    wait_for("the marker in the node's stream", 30, || {
        let (ok, out, _) = plugin.kubectl(&["tracer", "tree", &w.url(), "--format", "json"], &[]);
        ok && holds(&out, "pid", later)
    });
    for run in runs(&w, &server, &id, init_pid) {
        let mut args = vec!["tracer"];
        args.extend(run.args.iter().map(String::as_str));
        let env: Vec<(&str, &str)> = run.env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let (ok, out, err) = plugin.kubectl(&args, &env);
        assert!(ok, "kubectl {args:?} {env:?} failed: {err}");
        if let Err(why) = (run.check)(&out) {
            panic!("kubectl {args:?} {env:?}: {why}\n{out}");
        }
    }
}

/// Every `kubectl tracer` run of the test: a node's stream named whole, a pod found on every
/// node with the servers from the environment or `--nats`, kubectl's `-n` and `--namespace`
/// both, and the fleet's nodes.
fn runs(w: &World, server: &str, pod: &str, init_pid: u32) -> Vec<Run> {
    let env = || vec![("TRACER_NATS", server.to_string())];
    let has_init = move |out: &str| {
        holds(out, "init_pid", init_pid)
            .then_some(())
            .ok_or(format!("no story of the init {init_pid}"))
    };
    let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    vec![
        Run {
            args: args(&["tree", &w.url(), "--format", "json"]),
            env: vec![],
            check: Box::new(move |out: &str| {
                holds(out, "pid", init_pid)
                    .then_some(())
                    .ok_or(format!("the container init {init_pid} is not in the tree"))
            }),
        },
        Run {
            args: args(&["story", "--pod", pod, "-n", "default", "--format", "json"]),
            env: env(),
            check: Box::new(has_init),
        },
        Run {
            // The flag wins over the environment (which names no server).
            args: args(&[
                "story",
                "--nats",
                server,
                "--pod",
                pod,
                "--namespace=default",
                "--format",
                "json",
            ]),
            env: vec![("TRACER_NATS", "nats://127.0.0.1:1".into())],
            check: Box::new(has_init),
        },
        Run {
            // The fleet: the servers from the environment, no node named.
            args: args(&["nodes", "--format", "json"]),
            env: env(),
            check: Box::new(|out: &str| {
                let v: serde_json::Value = serde_json::from_str(out).map_err(|e| e.to_string())?;
                let rows = v["nodes"].as_array().ok_or("no nodes")?;
                rows.iter()
                    .any(|r| r["node"] == "n1" && r["state"] == "live")
                    .then_some(())
                    .ok_or("node n1 is not live".to_string())
            }),
        },
    ]
}

/// Whether the JSON document `out` has, anywhere, an object whose `key` is `value`.
fn holds(out: &str, key: &str, value: u32) -> bool {
    fn walk(v: &serde_json::Value, key: &str, value: u32) -> bool {
        match v {
            serde_json::Value::Object(m) => {
                m.get(key) == Some(&serde_json::json!(value))
                    || m.values().any(|v| walk(v, key, value))
            }
            serde_json::Value::Array(a) => a.iter().any(|v| walk(v, key, value)),
            _ => false,
        }
    }
    serde_json::from_str(out).is_ok_and(|v: serde_json::Value| walk(&v, key, value))
}
