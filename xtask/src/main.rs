//! Project tasks: `cargo xtask setup | run | test | bench | fuzz | lab | modules | sources |
//! docs`.

mod bench;
mod dist;
mod fuzz;
mod lab;
mod modules;
mod setup;
mod sources;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use setup::Scope;
use std::path::PathBuf;
use std::process::Command;

#[derive(Parser)]
#[command(name = "xtask")]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

#[derive(Subcommand)]
enum Task {
    /// Install what is missing, starting no service: running's needs (LLVM 22, the eBPF nightly
    /// with rust-src, bpf-linker, tracefs), with --tests the tests' packages, with --dist the
    /// static build's (musl target, cargo-deb).
    Setup {
        /// Also what the tests need (runc, tmux, chromium, nats-server, prometheus, podman, ...).
        #[arg(long)]
        tests: bool,
        /// Also what `cargo xtask dist` needs.
        #[arg(long)]
        dist: bool,
    },
    /// Set up, build, and run `tracer` as root (arguments after `--` go to tracer).
    Run {
        #[arg(last = true)]
        args: Vec<String>,
    },
    /// Set up, then run every test: unit, engine-only build, and (as root) the live probe tests.
    Test,
    /// Whole-process benchmarks as root: fork/exec storm and dd (untraced vs tracer vs strace),
    /// event throughput, pod creation through CRI, the live viewer's memory over many process
    /// lifetimes (soak; sizes from TRACER_SOAK_LIFETIMES and TRACER_SOAK_PROCESSES), start and
    /// stop latency, the NATS agent at rising event rates (agent; its RSS run's size from
    /// TRACER_BENCH_AGENT_LIFETIMES); writes BENCHMARKS.md (target/bench.md with --only).
    Bench {
        /// Paired runs per configuration.
        #[arg(long, default_value_t = 15)]
        runs: u32,
        /// Only one part: storm, cost (the probes beside a counting-only bpftrace program), dd,
        /// throughput, pod, latency, scale, soak, agent, seek or crafted (no probes: built
        /// without them).
        #[arg(long)]
        only: Option<String>,
    },
    /// The node package in target/dist/: a static `tracer` (probes embedded), its sha256, the
    /// `kubectl-tracer` link (kubectl's plugin), man page, shell completions and a .deb.
    Dist,
    /// `dist`, then deploy/Containerfile built into the local podman storage as
    /// localhost/tracer:latest (FROM scratch: nothing pulled).
    Image,
    /// Run each cargo-fuzz target (fuzz/) for a bounded time; crashers become regression tests.
    Fuzz {
        /// Seconds per target.
        #[arg(long, default_value_t = 60)]
        secs: u64,
        /// Only this target (trace_reader, strace_parser, json_lines).
        #[arg(long)]
        target: Option<String>,
    },
    /// A real runtime (runc, containerd, restart, podman) under `tracer record`, narrated, then
    /// shown; installs its packages if missing and cleans up after itself (root).
    Lab(lab::LabArgs),
    /// The module graphs of tracer-user and of the tests crate (every target, tests included):
    /// no import cycle between sibling modules, and ARCHITECTURE.md's `## Import rules` kept.
    Modules,
    /// Every function of the workspace at most 80 lines (data tables excepted by name, each
    /// with why), and no source file with a NUL byte.
    Sources,
    /// Rewrite the README's and docs' generated blocks (screens, excerpts, help) and pictures
    /// (docs/birth.svg) from what the binary prints now; the `cli_docs` test fails while one
    /// differs.
    Docs,
}

fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(PathBuf::from)
        .unwrap_or_default()
}

fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(workspace_root());
    cmd
}

fn run(cmd: &mut Command) -> Result<()> {
    println!("xtask: {cmd:?}");
    let status = cmd
        .status()
        .with_context(|| format!("cannot run {cmd:?}"))?;
    if !status.success() {
        bail!("{cmd:?} failed ({status})");
    }
    Ok(())
}

/// Totals of cargo's `test result:` lines across every test run, and which tests did not run:
/// ignored ones (root tests when not root) and the ones a missing prerequisite skipped on the
/// developer's request (tests/src/prereq.rs, reported through [`skip_log`]).
#[derive(Default)]
struct Tally {
    passed: u64,
    failed: u64,
    /// Tests cargo reported `ignored` (with the reason given, if any), until a later run (the
    /// root tests) ran them.
    ignored_names: std::collections::BTreeMap<String, String>,
}

impl Tally {
    /// One line of `cargo test` output.
    fn observe(&mut self, line: &str) {
        if let Some(rest) = line.strip_prefix("test result: ") {
            for part in rest.split(';') {
                let mut words = part
                    .split_whitespace()
                    .filter(|w| *w != "ok." && *w != "FAILED.");
                if let (Some(n), Some(what)) = (
                    words.next().and_then(|n| n.parse::<u64>().ok()),
                    words.next(),
                ) {
                    match what {
                        "passed" => self.passed += n,
                        "failed" => self.failed += n,
                        _ => {}
                    }
                }
            }
        } else if let Some((name, outcome)) = line
            .strip_prefix("test ")
            .and_then(|l| l.split_once(" ... "))
        {
            if let Some(rest) = outcome.strip_prefix("ignored") {
                let reason = rest.trim_start_matches([',', ' ']).to_string();
                self.ignored_names.insert(name.to_string(), reason);
            } else {
                // Ran now (ok or FAILED): counted by this run's result line.
                self.ignored_names.remove(name);
            }
        }
    }
}

/// The file the tests append opted-out skips to (`TRACER_TEST_SKIP_LOG`).
fn skip_log() -> PathBuf {
    workspace_root().join("target/test-skips.log")
}

/// Runs a `cargo test`, echoing its output and adding its result lines to `tally`.
fn run_tests(cmd: &mut Command, tally: &mut Tally) -> Result<()> {
    use std::io::BufRead;
    cmd.env(tests::prereq::SKIP_LOG_VAR, skip_log());
    println!("xtask: {cmd:?}");
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot run {cmd:?}"))?;
    if let Some(out) = child.stdout.take() {
        for line in std::io::BufReader::new(out).lines() {
            let line = line?;
            println!("{line}");
            tally.observe(&line);
        }
    }
    let status = child.wait()?;
    if !status.success() {
        bail!("{cmd:?} failed ({status})");
    }
    Ok(())
}

fn test() -> Result<()> {
    // As root the deploy tests install and run the node package and image: set them up too.
    if setup::is_root() {
        setup::setup(&[Scope::Tests, Scope::Image])?;
    } else {
        setup::setup(&[Scope::Tests])?;
    }
    let _ = std::fs::remove_file(skip_log());
    let mut tally = Tally::default();
    let result = test_all(&mut tally);
    // Skips on request passed as far as cargo knows: move them to the skipped column.
    let opted: Vec<String> = std::fs::read_to_string(skip_log())
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let mut f = l.splitn(3, '\t');
            let (test, what, why) = (f.next(), f.next(), f.next());
            format!(
                "{} (missing `{}`: {}; opted out with {})",
                test.unwrap_or("?"),
                what.unwrap_or("?"),
                why.unwrap_or("?"),
                tests::prereq::SKIP_VAR
            )
        })
        .collect();
    // By name: a test ignored in both the default and the engine-only run counts once.
    let skipped = tally.ignored_names.len() + opted.len();
    // One closing line over every run, then every test that did not run, by name.
    println!(
        "tests: {} passed, {} failed, {} skipped",
        tally.passed.saturating_sub(opted.len() as u64),
        tally.failed,
        skipped
    );
    for (name, reason) in &tally.ignored_names {
        match reason.as_str() {
            "" => println!("xtask: skipped {name} (ignored)"),
            r => println!("xtask: skipped {name} (ignored: {r})"),
        }
    }
    for line in &opted {
        println!("xtask: skipped {line}");
    }
    result
}

fn test_all(tally: &mut Tally) -> Result<()> {
    // Every run goes on after a failing one (and cargo past a failing test binary), so the
    // closing lines count and name everything; the failures are reported together at the end.
    let mut failed: Vec<String> = Vec::new();
    let mut keep = |r: Result<()>| {
        if let Err(e) = r {
            failed.push(format!("{e:#}"));
        }
    };
    // The module graph and the sources' shape first: quick, and independent of what compiles.
    keep(modules::modules(&workspace_root()));
    keep(sources::sources(&workspace_root()));
    // Everything that does not need root: unit, doc and fixture tests of the default members
    // (tracer-ebpf is built for BPF by tracer-user/build.rs, never for the host's test harness).
    keep(run_tests(cargo().args(["test", "--no-fail-fast"]), tally));
    // The engine alone (what an embedder compiles), then the trainee build (the command and
    // the viewer, NATS readers, no aya, no BPF toolchain, no root).
    for features in [&[][..], &["--features", "cli,nats"][..]] {
        keep(run_tests(
            cargo()
                .args([
                    "test",
                    "--no-fail-fast",
                    "-p",
                    "tracer-user",
                    "--no-default-features",
                ])
                .args(features)
                .env("AYA_BUILD_SKIP", "1"),
            tally,
        ));
    }
    // The agent without the probes: its rootless test, built with no aya and no BPF toolchain
    // (the tests crate's `agent` feature), as an embedder of the agent builds it.
    keep(run_tests(
        cargo()
            .args([
                "test",
                "--no-fail-fast",
                "-p",
                "tests",
                "--no-default-features",
            ])
            .args(["--features", "agent", "--test", "agent_synthetic"])
            .env("AYA_BUILD_SKIP", "1"),
        tally,
    ));
    // The library's docs: every public item documented, no broken links.
    keep(run(cargo()
        .args(["doc", "--no-deps", "-p", "tracer-user"])
        .env("RUSTDOCFLAGS", "-D warnings")));
    if setup::is_root() {
        root_tests(tally, &mut keep)?;
    } else {
        println!("xtask: not root: skipping the live probe tests (run `sudo -E cargo xtask test` to include them)");
    }
    if !failed.is_empty() {
        bail!("{}", failed.join("\n"));
    }
    Ok(())
}

/// The tests only root can run, after the release build and the image they use: a build
/// that fails stops here; a failing run is kept and the next one goes on.
fn root_tests(tally: &mut Tally, keep: &mut impl FnMut(Result<()>)) -> Result<()> {
    // Live probe tests, one at a time (they share the host's tracepoints and runc state).
    // Only the ignored (root) ones: the rest already ran above, where these were ignored;
    // the tally takes each one that runs now off the skipped list.
    // The lab tests record with the release binary, as `cargo xtask lab` does.
    run(cargo().args(["build", "--release", "-p", "tracer-user"]))?;
    // The node package and image the deploy tests install and run.
    keep(dist::build_image());
    // Every integration test's ignored (root) ones, the tests crate's and the library's (the
    // follow_lineage example, the capture stream, a recording killed with SIGKILL, outputs
    // aimed at devices and other users' files). The same packages as the first `cargo test`
    // (the default members, so the same features): a `-p` here would unify features anew
    // and build every test binary a second time. `--test '*'` leaves out the library's own
    // ignored generators (fuzz seeds, big recordings), which need their variables.
    keep(run_tests(
        cargo().args([
            "test",
            "--no-fail-fast",
            "--test",
            "*",
            "--",
            "--ignored",
            "--test-threads=1",
        ]),
        tally,
    ));
    Ok(())
}

/// `cargo xtask run`: the live view as root, following the container runtime if one runs;
/// where the probes cannot load, says why in one line and shows the recorded demo instead.
fn run_tracer(args: Vec<String>) -> Result<()> {
    if let Err(e) = setup::setup(&[Scope::Run]) {
        return demo_instead(&format!("the probe toolchain is not set up ({e:#})"), false);
    }
    if run(cargo().args(["build", "--release", "-p", "tracer-user"])).is_err() {
        return demo_instead("the probes did not build", false);
    }
    let bin = workspace_root().join("target/release/tracer");
    if !std::path::Path::new("/sys/kernel/btf/vmlinux").exists() {
        return demo_instead("this kernel has no BTF (/sys/kernel/btf/vmlinux)", true);
    }
    let args = if args.is_empty() {
        live_args(&bin, default_target())
    } else {
        args
    };
    let mut cmd = if setup::is_root() {
        Command::new(&bin)
    } else if tests::labs::system::which("sudo").is_some() {
        let mut c = Command::new("sudo");
        c.arg("-E").arg(&bin);
        c
    } else {
        return demo_instead("live tracing needs root and there is no sudo", true);
    };
    cmd.args(&args);
    println!("xtask: {}", tests::labs::system::show(&cmd));
    let status = cmd
        .status()
        .with_context(|| format!("cannot run {cmd:?}"))?;
    match status.code() {
        // The tracer said in one line what this machine or user lacks.
        Some(2) => demo_instead("the probes cannot load here (see above)", true),
        _ if status.success() => Ok(()),
        _ => bail!("tracer failed ({status})"),
    }
}

/// The live command for a target: the interactive view when the binary has it, else
/// strace-like lines. The one place that decides.
fn live_args(bin: &std::path::Path, target: Vec<String>) -> Vec<String> {
    let view = if tests::bins::has_subcommand(bin, "tui") {
        "tui"
    } else {
        "trace"
    };
    std::iter::once(view.to_string()).chain(target).collect()
}

/// `target/release/tracer` without the probes (feature `cli` alone): no BPF toolchain needed.
fn build_without_probes(features: &str) -> Result<()> {
    run(cargo()
        .args([
            "build",
            "--release",
            "-p",
            "tracer-user",
            "--no-default-features",
            "--features",
            features,
        ])
        .env("AYA_BUILD_SKIP", "1"))
}

/// Shows the bundled demo (no root, no BPF, no LLVM), building without the probes if needed.
fn demo_instead(why: &str, built: bool) -> Result<()> {
    println!("xtask: cannot trace live: {why}; replaying the bundled demo instead");
    if !built {
        build_without_probes("cli")?;
    }
    run(Command::new(workspace_root().join("target/release/tracer")).arg("demo"))
}

/// Follow the container runtime if one runs, else trace the whole host.
fn default_target() -> Vec<String> {
    for daemon in ["containerd", "crio", "podman", "dockerd"] {
        if let Ok(out) = Command::new("pidof").arg("-s").arg(daemon).output() {
            let pid = String::from_utf8_lossy(&out.stdout).trim().to_string();
            if out.status.success() && !pid.is_empty() {
                println!("xtask: following {daemon} (pid {pid})");
                return vec!["--pid".into(), pid];
            }
        }
    }
    println!("xtask: no container runtime running: tracing the whole host (Ctrl-C to stop)");
    vec!["--all".into()]
}

fn main() -> std::process::ExitCode {
    match dispatch(Cli::parse().task) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            let chain: Vec<String> = e.chain().map(|c| c.to_string()).collect();
            eprintln!("xtask: error: {}", chain.join(": "));
            std::process::ExitCode::FAILURE
        }
    }
}

fn dispatch(task: Task) -> Result<()> {
    match task {
        Task::Setup { tests, dist } => {
            let scopes = [
                Some(Scope::Run),
                tests.then_some(Scope::Tests),
                dist.then_some(Scope::Dist),
            ];
            setup::setup(&scopes.into_iter().flatten().collect::<Vec<_>>())
        }
        Task::Run { args } => run_tracer(args),
        Task::Test => test(),
        Task::Bench { runs, only } if only.as_deref() == Some("crafted") => {
            // Recordings only: the binary without the probes (no BPF toolchain, no set-up).
            build_without_probes("cli")?;
            bench::run(&workspace_root(), runs, only.as_deref())
        }
        Task::Bench { runs, only } if only.as_deref() == Some("seek") => {
            // Recordings in the viewer: without the probes too.
            build_without_probes("cli,tui")?;
            bench::run(&workspace_root(), runs, only.as_deref())
        }
        Task::Bench { runs, only } => {
            setup::setup(&[Scope::Tests])?;
            run(cargo().args([
                "build",
                "--release",
                "-p",
                "tracer-user",
                "-p",
                "tests",
                "--bin",
                "tracer",
                "--bin",
                "actor",
            ]))?;
            bench::run(&workspace_root(), runs, only.as_deref())
        }
        Task::Fuzz { secs, target } => fuzz::fuzz(&workspace_root(), secs, target.as_deref()),
        Task::Lab(args) => lab::lab(args),
        Task::Dist => dist::dist().map(|_| ()),
        Task::Image => dist::image(),
        Task::Modules => modules::modules(&workspace_root()),
        Task::Sources => sources::sources(&workspace_root()),
        Task::Docs => run(cargo()
            .args(["test", "-p", "tracer-user", "--test", "cli_docs"])
            .env("TRACER_DOCS_WRITE", "1")),
    }
}

#[cfg(test)]
mod tests_tally {
    use super::Tally;

    #[test]
    fn root_tests_that_ran_later_leave_the_skipped_list() {
        let mut t = Tally::default();
        for l in [
            "test labs_runc ... ignored, root",
            "test live_a ... ignored, root",
            "test unit_x ... ok",
            "test result: ok. 1 passed; 0 failed; 2 ignored; 0 measured; 0 filtered out",
            // The root run: one of them runs (and fails), the other stays skipped.
            "test labs_runc ... FAILED",
            "test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 1 filtered out",
        ] {
            t.observe(l);
        }
        assert_eq!((t.passed, t.failed), (1, 1));
        let left: Vec<(&str, &str)> = t
            .ignored_names
            .iter()
            .map(|(n, r)| (n.as_str(), r.as_str()))
            .collect();
        assert_eq!(left, [("live_a", "root")]);
    }
}
