//! Fork/exec storm benchmark: the workload times itself (so tracer start-up is not counted),
//! configurations alternate within each round, and ratios are taken against the untraced run
//! of the same round. Reports median, min and max of the ratios.

use anyhow::{bail, Context, Result};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

fn workload(n: u32, out: &Path) -> String {
    format!(
        "s=$(date +%s%N); i=0; while [ $i -lt {n} ]; do /bin/true; i=$((i+1)); done; e=$(date +%s%N); echo $((e-s)) > {}",
        out.display()
    )
}

#[derive(Clone, Copy, PartialEq)]
enum Config {
    Untraced,
    Follow,
    All,
    Strace,
}

impl Config {
    fn name(self) -> &'static str {
        match self {
            Config::Untraced => "untraced",
            Config::Follow => "tracer (follow)",
            Config::All => "tracer --all",
            Config::Strace => "strace -f",
        }
    }
}

fn read_ns(path: &Path) -> Result<f64> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("workload wrote no time to {}", path.display()))?;
    Ok(text.trim().parse::<f64>()? / 1e9)
}

fn run_once(cfg: Config, tracer: &Path, n: u32, tmp: &Path) -> Result<f64> {
    let out = tmp.join("elapsed");
    let _ = std::fs::remove_file(&out);
    let script = workload(n, &out);
    let mut background: Option<Child> = None;
    let status = match cfg {
        Config::Untraced => Command::new("sh").args(["-c", &script]).status()?,
        Config::Follow => Command::new(tracer)
            .args(["trace", "-o", "/dev/null", "--", "sh", "-c", &script])
            .stderr(Stdio::null())
            .status()?,
        Config::All => {
            let child = Command::new(tracer)
                .args(["trace", "--all", "-o", "/dev/null"])
                .stderr(Stdio::null())
                .spawn()?;
            background = Some(child);
            // Probes attach within a few hundred ms; wait so the whole storm is traced.
            std::thread::sleep(Duration::from_millis(1500));
            Command::new("sh").args(["-c", &script]).status()?
        }
        Config::Strace => Command::new("strace")
            .args([
                "-f",
                "-e",
                "trace=clone,clone3,execve,exit_group,prctl",
                "-o",
                "/dev/null",
                "sh",
                "-c",
                &script,
            ])
            .status()?,
    };
    if let Some(mut child) = background {
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        let _ = child.wait();
    }
    if !status.success() {
        bail!("{} run failed: {status}", cfg.name());
    }
    read_ns(&out)
}

fn stats(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(|a, b| a.total_cmp(b));
    let med = if v.is_empty() {
        f64::NAN
    } else {
        v[v.len() / 2]
    };
    (
        med,
        *v.first().unwrap_or(&f64::NAN),
        *v.last().unwrap_or(&f64::NAN),
    )
}

pub fn storm(root: &Path, n: u32, runs: u32) -> Result<()> {
    if !crate::setup::is_root() {
        bail!("the benchmark loads probes: run it as root");
    }
    let tracer = root.join("target/release/tracer");
    let tmp = std::env::temp_dir().join(format!("tracer-bench-{}", std::process::id()));
    std::fs::create_dir_all(&tmp)?;
    let have_strace = Command::new("strace")
        .arg("-V")
        .stdout(Stdio::null())
        .status()
        .is_ok();
    let mut configs = vec![Config::Untraced, Config::Follow, Config::All];
    if have_strace {
        configs.push(Config::Strace);
    }
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); configs.len()];
    // One warm-up round (page cache, probe object), not counted.
    for &c in &configs {
        run_once(c, &tracer, n.min(100), &tmp)?;
    }
    for round in 0..runs {
        // Rotate the order each round so no configuration always runs first.
        for k in 0..configs.len() {
            let i = (k + round as usize) % configs.len();
            times[i].push(run_once(configs[i], &tracer, n, &tmp)?);
        }
        println!("bench: round {}/{runs} done", round + 1);
    }
    let _ = std::fs::remove_dir_all(&tmp);
    let mut report = format!(
        "## Fork/exec storm: {n} x /bin/true from a shell loop, {runs} paired rounds\n\n\
         | configuration | median time (s) | ratio median | ratio min | ratio max |\n|---|---|---|---|---|\n"
    );
    for (i, c) in configs.iter().enumerate() {
        let ratios: Vec<f64> = times[i]
            .iter()
            .zip(&times[0])
            .map(|(t, base)| t / base)
            .collect();
        let (tm, _, _) = stats(times[i].clone());
        let (rm, rmin, rmax) = stats(ratios);
        report.push_str(&format!(
            "| {} | {tm:.3} | {rm:.3}x | {rmin:.3}x | {rmax:.3}x |\n",
            c.name()
        ));
    }
    println!("\n{report}");
    let path = root.join("target/bench-storm.md");
    std::fs::write(&path, &report)?;
    println!("bench: table written to {}", path.display());
    Ok(())
}
