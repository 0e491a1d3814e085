//! Project tasks: `cargo xtask setup | run | test | bench | fuzz | lab`.

mod bench;
mod fuzz;
mod lab;
mod setup;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
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
    /// Install what is missing: apt packages, the eBPF nightly + rust-src, bpf-linker; mount tracefs.
    Setup,
    /// Set up, build, and run `tracer` as root (arguments after `--` go to tracer).
    Run {
        #[arg(last = true)]
        args: Vec<String>,
    },
    /// Set up, then run every test: unit, engine-only build, and (as root) the live probe tests.
    Test,
    /// Whole-process benchmarks as root: fork/exec storm and dd (untraced vs tracer vs strace),
    /// event throughput, pod creation through CRI; writes BENCHMARKS.md (target/bench.md with
    /// --only).
    Bench {
        /// Paired runs per configuration.
        #[arg(long, default_value_t = 15)]
        runs: u32,
        /// Only one part: storm, dd, throughput or pod.
        #[arg(long)]
        only: Option<String>,
    },
    /// Run each cargo-fuzz target (fuzz/) for a bounded time; crashers become regression tests.
    Fuzz {
        /// Seconds per target.
        #[arg(long, default_value_t = 60)]
        secs: u64,
        /// Only this target (trace_reader, strace_parser).
        #[arg(long)]
        target: Option<String>,
    },
    /// A real runtime (runc, containerd, restart, podman) under `tracer record`, narrated, then
    /// shown; installs its packages if missing and cleans up after itself (root).
    Lab(lab::LabArgs),
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

/// Totals of cargo's `test result:` lines across every test run.
#[derive(Default)]
struct Tally {
    passed: u64,
    failed: u64,
    ignored: u64,
}

/// Runs a `cargo test`, echoing its output and adding its result lines to `tally`.
fn run_tests(cmd: &mut Command, tally: &mut Tally) -> Result<()> {
    use std::io::BufRead;
    println!("xtask: {cmd:?}");
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot run {cmd:?}"))?;
    if let Some(out) = child.stdout.take() {
        for line in std::io::BufReader::new(out).lines() {
            let line = line?;
            println!("{line}");
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
                            "passed" => tally.passed += n,
                            "failed" => tally.failed += n,
                            "ignored" => tally.ignored += n,
                            _ => {}
                        }
                    }
                }
            }
        }
    }
    let status = child.wait()?;
    if !status.success() {
        bail!("{cmd:?} failed ({status})");
    }
    Ok(())
}

fn test() -> Result<()> {
    setup::setup()?;
    let mut tally = Tally::default();
    let result = test_all(&mut tally);
    // One closing line over every run (root tests are counted as skipped when not root).
    println!(
        "tests: {} passed, {} failed, {} skipped",
        tally.passed, tally.failed, tally.ignored
    );
    result
}

fn test_all(tally: &mut Tally) -> Result<()> {
    // Everything that does not need root: unit, doc and fixture tests of the default members
    // (tracer-ebpf is built for BPF by tracer-user/build.rs, never for the host's test harness).
    run_tests(cargo().args(["test"]), tally)?;
    // The trainee build: no aya, no BPF toolchain, no root.
    run_tests(
        cargo()
            .args(["test", "-p", "tracer-user", "--no-default-features"])
            .env("AYA_BUILD_SKIP", "1"),
        tally,
    )?;
    // The library's docs: every public item documented, no broken links.
    run(cargo()
        .args(["doc", "--no-deps", "-p", "tracer-user"])
        .env("RUSTDOCFLAGS", "-D warnings"))?;
    if setup::is_root() {
        // Live probe tests, one at a time (they share the host's tracepoints and runc state).
        // Only the ignored (root) ones: the rest already ran above, where these counted as
        // ignored; what runs now is no longer skipped.
        let before = tally.passed + tally.failed;
        // The lab tests record with the release binary, as `cargo xtask lab` does.
        run(cargo().args(["build", "--release", "-p", "tracer-user"]))?;
        run_tests(
            cargo().args(["test", "-p", "tests", "--", "--ignored", "--test-threads=1"]),
            tally,
        )?;
        // The library's root tests: the follow_lineage example and the capture stream.
        run_tests(
            cargo().args([
                "test",
                "-p",
                "tracer-user",
                "--test",
                "examples",
                "--",
                "--ignored",
            ]),
            tally,
        )?;
        let ran = tally.passed + tally.failed - before;
        tally.ignored = tally.ignored.saturating_sub(ran);
    } else {
        println!("xtask: not root: skipping the live probe tests (run `sudo -E cargo xtask test` to include them)");
    }
    Ok(())
}

/// `cargo xtask run`: the live view as root, following the container runtime if one runs;
/// where the probes cannot load, says why in one line and shows the recorded demo instead.
fn run_tracer(args: Vec<String>) -> Result<()> {
    if let Err(e) = setup::setup() {
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
    let view = if lab::has_subcommand(bin, "tui") {
        "tui"
    } else {
        "trace"
    };
    std::iter::once(view.to_string()).chain(target).collect()
}

/// Shows the bundled demo (no root, no BPF, no LLVM), building without the probes if needed.
fn demo_instead(why: &str, built: bool) -> Result<()> {
    println!("xtask: cannot trace live: {why}; replaying the bundled demo instead");
    if !built {
        run(cargo()
            .args([
                "build",
                "--release",
                "-p",
                "tracer-user",
                "--no-default-features",
            ])
            .env("AYA_BUILD_SKIP", "1"))?;
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
        Task::Setup => setup::setup(),
        Task::Run { args } => run_tracer(args),
        Task::Test => test(),
        Task::Bench { runs, only } => {
            setup::setup()?;
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
    }
}
