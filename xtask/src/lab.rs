//! `cargo xtask lab <runc|containerd|restart|podman|pod>`: a real runtime under `tracer record`,
//! narrated, then the recording shown. The scenario drivers live in `tests::labs` (shared
//! with the end-to-end tests); this is the command line around them.

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{cargo, run, setup, workspace_root};

#[derive(clap::Args)]
pub struct LabArgs {
    /// runc, containerd, restart, podman or pod.
    pub scenario: tests::labs::Scenario,
    /// Keep the recording here (default: target/labs/SCENARIO.trace).
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// Print `tracer tree` and `tracer story` instead of opening the interactive view.
    #[arg(long)]
    pub no_tui: bool,
    /// pod: restart containerd while the pods run (their processes keep pids and parents).
    #[arg(long)]
    pub restart_runtime: bool,
    /// pod: a third pod lives the rest of a container's life: ExecSync and a detached exec, a
    /// crash and its restart, an OOM kill, StopContainer with a grace period, the pod removed.
    #[arg(long)]
    pub lifecycle: bool,
}

/// The release `tracer` binary, built with the probes.
pub fn build_tracer() -> Result<PathBuf> {
    run(cargo().args(["build", "--release", "-p", "tracer-user"]))?;
    Ok(workspace_root().join("target/release/tracer"))
}

/// Re-runs this xtask command under `sudo -E` when not root. `Ok(true)`: it ran there.
pub fn reexec_as_root() -> Result<bool> {
    if setup::is_root() {
        return Ok(false);
    }
    let exe = std::env::current_exe()?;
    println!("xtask: not root: re-running with sudo -E");
    run(Command::new("sudo")
        .arg("-E")
        .arg(exe)
        .args(std::env::args_os().skip(1)))?;
    Ok(true)
}

pub fn lab(args: LabArgs) -> Result<()> {
    if reexec_as_root()? {
        return Ok(());
    }
    let scenario = args.scenario;
    if args.restart_runtime && scenario != tests::labs::Scenario::Pod {
        anyhow::bail!(
            "--restart-runtime is for the pod lab (the restart lab restarts containerd by itself)"
        );
    }
    if args.lifecycle && scenario != tests::labs::Scenario::Pod {
        anyhow::bail!("--lifecycle is for the pod lab");
    }
    setup::setup(&[setup::Scope::Run])?;
    let tracer = build_tracer()?;
    let trace = args.record.clone().unwrap_or_else(|| {
        workspace_root()
            .join("target/labs")
            .join(format!("{}.trace", scenario.name()))
    });
    tests::labs::install_interrupt_handler();
    let mut lab = tests::labs::Lab::new(tracer.clone(), trace, scenario);
    lab.restart_runtime = args.restart_runtime;
    lab.lifecycle = args.lifecycle;
    let out = tests::labs::run(scenario, &lab).with_context(|| format!("lab {scenario}"))?;
    println!("lab ▸ recorded {}", out.summary);
    show(&tracer, &out.trace, !args.no_tui)
}

/// Shows a recording: the interactive view when asked for and available, else the tree and
/// the container-birth stories. The one place that decides.
pub fn show(tracer: &Path, trace: &Path, tui: bool) -> Result<()> {
    let tracer_cmd = |args: &[&str]| -> Result<()> {
        let st = Command::new(tracer).args(args).arg(trace).status()?;
        anyhow::ensure!(st.success(), "tracer {} failed ({st})", args.join(" "));
        Ok(())
    };
    if tui && tests::bins::has_subcommand(tracer, "view") {
        return tracer_cmd(&["view"]);
    }
    println!("\n== tracer tree --traced {}\n", trace.display());
    tracer_cmd(&["tree", "--traced"])?;
    println!("\n== tracer story {}\n", trace.display());
    tracer_cmd(&["story"])
}
