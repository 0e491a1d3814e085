//! `cargo xtask bench` (root): whole-process benchmarks with paired, alternating runs.
//!
//! Each workload times itself (so tracer start-up is not counted); configurations alternate
//! within each round in a rotating order; ratios are taken against the untraced run of the
//! same round and reported as median, min and max. A full run writes BENCHMARKS.md.

mod agent;
mod cost;

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

#[derive(Clone, Copy, PartialEq)]
enum Config {
    Untraced,
    Follow,
    All,
    /// `--all` without the signal probe (`--signals none`): what the signal probe costs.
    AllNoSignals,
    /// The same with the syscall tracepoints attached (`--syscalls`): the earlier design.
    FollowSyscalls,
    AllSyscalls,
    Strace,
    /// [`Config::Follow`] and [`Config::All`] with the binary `TRACER_BENCH_BASELINE` names:
    /// a before/after pair measured in the same rounds, under the same load.
    FollowBaseline,
    AllBaseline,
    /// bpftrace counting on the tracepoints the tracer attaches, and nothing else: the floor
    /// any probe on those tracepoints pays.
    Floor,
    /// Pod creation: `tracer record --pid <containerd>`.
    RecordDaemon,
    /// Pod creation: the seeds' `strace -f -p <containerd>`.
    StraceDaemon,
}

impl Config {
    fn name(self) -> &'static str {
        match self {
            Config::Untraced => "untraced",
            Config::Follow => "tracer (follow)",
            Config::All => "tracer --all",
            Config::AllNoSignals => "tracer --all --signals none",
            Config::FollowBaseline => "baseline tracer (follow)",
            Config::AllBaseline => "baseline tracer --all",
            Config::FollowSyscalls => "tracer --syscalls (follow)",
            Config::AllSyscalls => "tracer --all --syscalls",
            Config::Strace => "strace -f (same syscalls)",
            Config::Floor => "bpftrace, counting only",
            Config::RecordDaemon => "tracer record --pid <containerd>",
            Config::StraceDaemon => "strace -f -p <containerd> (same syscalls)",
        }
    }
}

/// The untraced baseline, then each way of running the tracer.
const TRACER_CONFIGS: [Config; 5] = [
    Config::Untraced,
    Config::Follow,
    Config::All,
    Config::FollowSyscalls,
    Config::AllSyscalls,
];

struct Bench {
    tracer: PathBuf,
    tmp: PathBuf,
    /// What each traced run cost (probe time, tracer CPU, workload time): the kernel's own
    /// accounting, free of run-to-run noise.
    costs: std::cell::RefCell<Vec<(Config, cost::Cost)>>,
    /// `TRACER_BENCH_BASELINE`: another build of the tracer, run beside this one in the storm.
    baseline: Option<PathBuf>,
    /// The cost of the traced run under way, until its workload time is known.
    last_cost: std::cell::Cell<Option<cost::Cost>>,
}

/// Turns on the kernel's per-program run-time accounting; puts the old value back on drop.
struct BpfStats(Option<String>);

impl BpfStats {
    const PATH: &'static str = "/proc/sys/kernel/bpf_stats_enabled";
    fn enable() -> BpfStats {
        let old = std::fs::read_to_string(Self::PATH).ok();
        let _ = std::fs::write(Self::PATH, "1");
        BpfStats(old)
    }
}

impl Drop for BpfStats {
    fn drop(&mut self) {
        if let Some(old) = &self.0 {
            let _ = std::fs::write(Self::PATH, old.trim());
        }
    }
}

/// `sh -c` script that runs `body` and writes its own elapsed ns to `out`.
fn timed(body: &str, out: &Path) -> String {
    format!(
        "s=$(date +%s%N); {body}; e=$(date +%s%N); echo $((e-s)) > {}",
        out.display()
    )
}

impl Bench {
    fn run_once(&self, cfg: Config, body: &str) -> Result<f64> {
        let out = self.tmp.join("elapsed");
        let _ = std::fs::remove_file(&out);
        let script = timed(body, &out);
        let status = match cfg {
            Config::Untraced => Command::new("sh").args(["-c", &script]).status()?,
            Config::Follow
            | Config::FollowSyscalls
            | Config::All
            | Config::AllSyscalls
            | Config::AllNoSignals
            | Config::FollowBaseline
            | Config::AllBaseline => self.run_traced(cfg, &script)?,
            Config::Floor => {
                let (status, cost) = cost::floor_run(&self.tmp, &script)?;
                self.last_cost.set(Some(cost));
                status
            }
            Config::RecordDaemon | Config::StraceDaemon => bail!("pod-only configuration"),
            Config::Strace => Command::new("strace")
                .args([
                    "-f",
                    "-e",
                    "trace=clone,clone3,fork,vfork,execve,execveat,exit,exit_group,prctl",
                ])
                .args(["-o", "/dev/null", "sh", "-c", &script])
                .status()?,
        };
        if !status.success() {
            bail!("{} run failed: {status}", cfg.name());
        }
        let text = std::fs::read_to_string(&out).context("the workload wrote no time")?;
        let secs = text.trim().parse::<f64>()? / 1e9;
        if let Some(c) = self.last_cost.take() {
            let wall = secs;
            self.costs
                .borrow_mut()
                .push((cfg, cost::Cost { wall, ..c }));
        }
        Ok(secs)
    }

    /// `script` traced by `cfg` (the tracer's command in follow mode, beside `--all`),
    /// between two gates where the tracer's probe time and CPU are read (kept for
    /// [`probe_table`]).
    fn run_traced(&self, cfg: Config, script: &str) -> Result<std::process::ExitStatus> {
        let go = cost::Gate::new(&self.tmp, "go")?;
        let done = cost::Gate::new(&self.tmp, "done")?;
        let gated = format!("{}; {script}; {}", go.wait_words(), done.wait_words());
        let tracer = match (cfg, &self.baseline) {
            (Config::FollowBaseline | Config::AllBaseline, Some(b)) => b,
            (Config::FollowBaseline | Config::AllBaseline, None) => bail!("no baseline binary"),
            _ => &self.tracer,
        };
        let trace = self.tmp.join("run.trace");
        let _ = std::fs::remove_file(&trace);
        let mut cmd = Command::new(tracer);
        // What a node runs: a recording (its writer's work counted), not text for a terminal.
        cmd.arg("record")
            .arg("-o")
            .arg(&trace)
            .args(
                matches!(cfg, Config::FollowSyscalls | Config::AllSyscalls).then_some("--syscalls"),
            )
            .args(match cfg {
                Config::AllNoSignals => &["--signals", "none"][..],
                _ => &[],
            })
            .stderr(Stdio::null());
        if matches!(
            cfg,
            Config::Follow | Config::FollowSyscalls | Config::FollowBaseline
        ) {
            let mut tracer = cmd.args(["--", "sh", "-c", &gated]).spawn()?;
            let pid = tracer.id();
            let measured = cost::measure(pid, &mut tracer, &go, &done);
            if measured.is_err() {
                go.release();
                done.release();
            }
            let status = tracer.wait()?;
            self.last_cost.set(Some(measured?));
            return Ok(status);
        }
        let mut tracer = cmd.arg("--all").spawn()?;
        // Probes attach within a few hundred ms; wait so the whole workload is traced.
        std::thread::sleep(Duration::from_millis(1500));
        let mut shell = Command::new("sh").args(["-c", &gated]).spawn()?;
        let measured = cost::measure(tracer.id(), &mut shell, &go, &done);
        if measured.is_err() {
            let _ = shell.kill();
        }
        let status = shell.wait()?;
        // SAFETY: signalling our own child.
        unsafe { libc::kill(tracer.id() as i32, libc::SIGINT) };
        let _ = tracer.wait();
        self.last_cost.set(Some(measured?));
        Ok(status)
    }

    /// Runs every config `rounds` times, rotating the order; returns per-config times.
    fn paired(&self, configs: &[Config], body: &str, rounds: u32) -> Result<Vec<Vec<f64>>> {
        let mut times = vec![Vec::new(); configs.len()];
        for &c in configs {
            self.run_once(c, body)?; // warm-up, not counted
        }
        self.costs.borrow_mut().clear();
        for round in 0..rounds {
            for k in 0..configs.len() {
                let i = (k + round as usize) % configs.len();
                times[i].push(self.run_once(configs[i], body)?);
            }
        }
        Ok(times)
    }
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

/// Markdown table of `times` against `times[0]` (the untraced baseline).
fn table(configs: &[Config], times: &[Vec<f64>], goals: &[&str]) -> String {
    let mut s = String::from(
        "| configuration | median time (s) | ratio median | ratio min | ratio max | goal |\n|---|---|---|---|---|---|\n",
    );
    for (i, c) in configs.iter().enumerate() {
        let ratios: Vec<f64> = times[i].iter().zip(&times[0]).map(|(t, b)| t / b).collect();
        let (tm, _, _) = stats(times[i].clone());
        let (rm, rmin, rmax) = stats(ratios);
        let goal = goals.get(i).copied().unwrap_or("");
        s.push_str(&format!(
            "| {} | {tm:.3} | {rm:.3}x | {rmin:.3}x | {rmax:.3}x | {goal} |\n",
            c.name()
        ));
    }
    s
}

/// What the traced runs since the last call cost (the runs are drained), against `goal`
/// (percent of the workload's time).
fn probe_table(b: &Bench, goal: Option<f64>) -> String {
    let runs: Vec<_> = b.costs.borrow_mut().drain(..).collect();
    if runs.is_empty() {
        return String::new();
    }
    cost::table(&runs, goal)
}

/// Pod creation latency through CRI (RunPodSandbox + CreateContainer + StartContainer, as
/// kubelet drives it), containerd untraced, recorded by tracer, and under strace.
fn pod(b: &Bench, runs: u32) -> Result<String> {
    use ::tests::labs::pod::{bench_pod_creation, Watch};
    let mut lab = ::tests::labs::Lab::new(
        b.tracer.clone(),
        b.tmp.join("pod.trace"),
        ::tests::labs::Scenario::Pod,
    );
    lab.narrate = false;
    lab.work = b.tmp.join("pod-lab");
    ::tests::labs::system::ensure_packages(::tests::labs::Scenario::Pod.packages())?;
    let configs = [Config::Untraced, Config::RecordDaemon, Config::StraceDaemon];
    let rounds = runs.max(5);
    let times = bench_pod_creation(
        &lab,
        &[Watch::Untraced, Watch::Tracer, Watch::Strace],
        rounds,
    )?;
    let mut s = format!(
        "## 4. Pod creation through CRI: RunPodSandbox + CreateContainer + StartContainer ({rounds} rounds)\n\n\
         A private containerd 1.6 with its CRI plugin (CNI bridge + host-local, local images), driven \
         by the pod lab's CRI client; each run creates one pod with one container and is timed by \
         the client, then the pod is removed (untimed). The tracer and strace attach to the running \
         containerd before the run and detach after it.\n\n"
    );
    s.push_str(&table(&configs, &times, &["", "<= 1.05x", ""]));
    s.push('\n');
    Ok(s)
}

/// Events, drops and sequence gaps of a recording, from its last stats record (the end
/// record carries the capture's final counters), read with the library.
fn recorded_counts(path: &Path) -> Result<(u64, u64, u64)> {
    let mut r = tracer::TraceReader::open(path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    for ev in r.events() {
        ev.with_context(|| format!("reading {}", path.display()))?;
    }
    let stats = r
        .last_stats()
        .with_context(|| format!("{}: no stats record", path.display()))?;
    Ok((stats.events, stats.drops, stats.seq_gaps))
}

/// Clone/exit bursts at rising parallelism; events/s delivered, drops and gaps per level.
/// With `ring_bytes`, one burst into a ring too small for it: drops, counted.
fn throughput(b: &Bench, actor: &Path, syscalls: bool, ring_bytes: Option<u32>) -> Result<String> {
    let mut s = String::from(
        "| parallel actors x threads | events | seconds | events/s | dropped | sequence gaps |\n|---|---|---|---|---|---|\n",
    );
    let mut best_clean = 0.0f64;
    let levels: &[(u32, u32)] = match ring_bytes {
        Some(_) => &[(8, 20_000)],
        None => &[(1, 20_000), (2, 20_000), (4, 20_000), (8, 20_000)],
    };
    for &(par, n) in levels {
        let out = b.tmp.join("elapsed");
        let _ = std::fs::remove_file(&out);
        let body = (0..par)
            .map(|_| format!("{} threads:{n} &", actor.display()))
            .collect::<Vec<_>>()
            .join(" ")
            + " wait";
        let script = timed(&body, &out);
        let trace = b.tmp.join("throughput.trace");
        let _ = std::fs::remove_file(&trace);
        let res = Command::new(&b.tracer)
            .arg("record")
            .arg("-o")
            .arg(&trace)
            .args(syscalls.then_some("--syscalls"))
            .args(ring_bytes.map(|r| format!("--ring-bytes={r}")))
            .args(["--", "sh", "-c", &script])
            .stderr(Stdio::null())
            .status()?;
        anyhow::ensure!(res.success(), "tracer record failed: {res}");
        let (events, dropped, gaps) = recorded_counts(&trace)?;
        let secs = std::fs::read_to_string(&out)?.trim().parse::<f64>()? / 1e9;
        let rate = events as f64 / secs;
        if dropped == 0 {
            best_clean = best_clean.max(rate);
        }
        s.push_str(&format!(
            "| {par} x {n} | {events} | {secs:.2} | {rate:.0} | {dropped} | {gaps} |\n"
        ));
        println!(
            "bench: throughput{} {par} x {n}: {rate:.0} events/s, {dropped} dropped",
            if syscalls { " --syscalls" } else { "" }
        );
    }
    if ring_bytes.is_none() {
        s.push_str(&format!(
            "\nHighest rate with zero drops (default 8 MiB ring): **{best_clean:.0} events/s** (goal >= 200,000).\n"
        ));
    }
    Ok(s)
}

fn wall_ns() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// `PROG ARGS -- sh -c 'date +%s%N > FILE'` `runs` times: (ms from launch until the command
/// ran, ms from the command's end until the tracer exited), each run.
fn launch_latency(b: &Bench, prog: &[&str], runs: u32) -> Result<Vec<(f64, f64)>> {
    let out = b.tmp.join("ran-at");
    let mut v = Vec::new();
    for _ in 0..runs {
        let _ = std::fs::remove_file(&out);
        let script = format!("date +%s%N > {}", out.display());
        let t0 = wall_ns();
        let status = Command::new(prog[0])
            .args(&prog[1..])
            .args(["sh", "-c", &script])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()?;
        let t2 = wall_ns();
        if !status.success() {
            bail!("{} failed: {status}", prog.join(" "));
        }
        let t1: u128 = std::fs::read_to_string(&out)?.trim().parse()?;
        v.push(((t1 - t0) as f64 / 1e6, (t2 - t1) as f64 / 1e6));
    }
    Ok(v)
}

/// Start and stop latency of `tracer trace -- CMD` (and strace's, for scale).
fn latency(b: &Bench, runs: u32) -> Result<String> {
    let tracer = b.tracer.to_string_lossy().into_owned();
    let mut s = String::from(
        "| command | runs | launch → command running (median, min–max) | command end → exit (median, min–max) |\n|---|---|---|---|\n",
    );
    let trace = [tracer.as_str(), "trace", "-o", "/dev/null", "--"];
    let strace = ["strace", "-f", "-o", "/dev/null"];
    for (name, prog) in [
        ("tracer trace -- sh -c date", &trace[..]),
        ("strace -f sh -c date", &strace[..]),
    ] {
        let v = launch_latency(b, prog, runs)?;
        let (a, a0, a1) = stats(v.iter().map(|x| x.0).collect());
        let (z, z0, z1) = stats(v.iter().map(|x| x.1).collect());
        s.push_str(&format!(
            "| `{name}` | {runs} | {a:.0} ms ({a0:.0}–{a1:.0}) | {z:.0} ms ({z0:.0}–{z1:.0}) |\n"
        ));
        println!("bench: latency {name}: start {a:.0} ms, stop {z:.0} ms");
    }
    s.push_str("\nGoals for `tracer trace`: command running <= 150 ms after launch, tracer exited <= 100 ms after the command.\n");
    Ok(s)
}

/// Resident set of `pid` in KiB (`VmRSS`).
fn rss_kib(pid: u32) -> Option<u64> {
    status_kib(pid, "VmRSS:")
}

/// A `/proc/PID/status` size field (`VmRSS:`, `VmHWM:`) in KiB.
fn status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// A private tmux server running the live viewer; killed on drop.
struct Viewer {
    socket: String,
    pid: u32,
}

impl Viewer {
    /// `tracer ARGS` in a private tmux server (the args are plain words and paths).
    fn start(tracer: &Path, args: &str) -> Result<Viewer> {
        let socket = format!("tracer-bench-{}", std::process::id());
        let cmd = format!("exec {} {args}", tracer.display());
        let ok = Command::new("tmux")
            .args([
                "-L",
                &socket,
                "new-session",
                "-d",
                "-x",
                "160",
                "-y",
                "45",
                &cmd,
            ])
            .status()?
            .success();
        if !ok {
            bail!("tmux new-session failed");
        }
        let out = Command::new("tmux")
            .args(["-L", &socket, "list-panes", "-F", "#{pane_pid}"])
            .output()?;
        let pid = String::from_utf8_lossy(&out.stdout).trim().parse()?;
        // The probes load and the /proc snapshot is read before the first event counts.
        std::thread::sleep(Duration::from_secs(3));
        Ok(Viewer { socket, pid })
    }

    fn rss_mib(&self) -> Result<f64> {
        let kib = rss_kib(self.pid).context("the viewer is gone")?;
        Ok(kib as f64 / 1024.0)
    }

    fn peak_mib(&self) -> Result<f64> {
        let kib = status_kib(self.pid, "VmHWM:").context("the viewer is gone")?;
        Ok(kib as f64 / 1024.0)
    }

    /// The bottom line of the screen (the status bar).
    fn status_line(&self) -> Result<String> {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "capture-pane", "-p"])
            .output()?;
        let text = String::from_utf8_lossy(&out.stdout);
        Ok(text
            .lines()
            .rfind(|l| !l.trim().is_empty())
            .unwrap_or("")
            .to_string())
    }

    /// Waits (up to `limit`) until the status bar contains `what`; the time it took.
    fn wait_for(&self, what: &str, limit: Duration) -> Result<Duration> {
        self.wait_polling(what, limit, Duration::from_millis(50))
    }

    /// [`Viewer::wait_for`], polling every 5 ms (seeks are timed in tens of ms).
    fn wait_quick(&self, what: &str, limit: Duration) -> Result<Duration> {
        self.wait_polling(what, limit, Duration::from_millis(5))
    }

    fn wait_polling(&self, what: &str, limit: Duration, every: Duration) -> Result<Duration> {
        let start = std::time::Instant::now();
        while !self.status_line()?.contains(what) {
            if start.elapsed() > limit {
                bail!("the viewer never showed {what:?}: {}", self.status_line()?);
            }
            std::thread::sleep(every);
        }
        Ok(start.elapsed())
    }

    fn keys(&self, keys: &str) -> Result<()> {
        let ok = Command::new("tmux")
            .args(["-L", &self.socket, "send-keys", keys])
            .status()?
            .success();
        if !ok {
            bail!("tmux send-keys failed");
        }
        Ok(())
    }
}

/// Wall seconds and peak RSS (MiB) of `tracer ARGS`, its output thrown away. The peak is
/// read from the child's own `VmHWM` while it runs: `ru_maxrss` would start at ours (a forked
/// child's high-water mark is carried over through exec).
fn peak_of(tracer: &Path, args: &[&str]) -> Result<(f64, f64)> {
    let start = std::time::Instant::now();
    let mut child = Command::new(tracer)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let mut peak = 0;
    let status = loop {
        if let Some(kib) = status_kib(child.id(), "VmHWM:") {
            peak = peak.max(kib);
        }
        if let Some(st) = child.try_wait()? {
            break st;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    if !status.success() {
        bail!("tracer {} failed ({status})", args.join(" "));
    }
    Ok((start.elapsed().as_secs_f64(), peak as f64 / 1024.0))
}

/// Events the strace importer makes of each child of [`::tests::big::write_strace_children`]'s
/// log: the parent's clone entry, the fork and the clone's return; the child's exit entry and
/// its exit.
const STRACE_EVENTS_PER_CHILD: usize = 5;

/// `tracer tree`, the exports of every process and the viewer at its end, on a million
/// processes (a trace file, and an strace log of one parent's million exited children) and a
/// 200,000-deep chain.
fn scale(b: &Bench) -> Result<String> {
    use ::tests::big::{write, write_strace_children, Shape};
    let mut s =
        String::from("| recording | command | wall | peak RSS | goal |\n|---|---|---|---|---|\n");
    let cases = [
        (
            "1,000,000 processes (4-ary tree)",
            Some(Shape::Tree),
            1_000_000u32,
            "tree1m.trace",
        ),
        (
            "1,000,000 exited children of one parent (strace log, 3M lines)",
            None,
            1_000_000,
            "children1m.log",
        ),
        (
            "200,000-deep chain",
            Some(Shape::Chain),
            200_000,
            "chain200k.trace",
        ),
    ];
    for (what, shape, n, name) in cases {
        let file = b.tmp.join(name);
        let total = match shape {
            Some(shape) => write(&file, shape, n)?,
            None => {
                write_strace_children(&file, n)?;
                n as usize * STRACE_EVENTS_PER_CHILD
            }
        };
        let f = file.to_str().context("temp path")?;
        let tree_mib = scale_rows(b, what, f, &mut s)?;
        if shape != Some(Shape::Chain) {
            s.push_str(&scale_viewer(b, what, f, total, tree_mib)?);
        }
        let _ = std::fs::remove_file(&file);
    }
    Ok(s)
}

/// `tree`, `story` and every export of the recording `f` (what it is: `what`), a row each in
/// `s`; `tree`'s peak (MiB).
fn scale_rows(b: &Bench, what: &str, f: &str, s: &mut String) -> Result<f64> {
    let out = b.tmp.join("picture");
    let o = out.to_str().context("temp path")?;
    let runs: [(&str, Vec<&str>, &str); 7] = [
        ("`tree`", vec!["tree", f], "<= 600 MB"),
        ("`story`", vec!["story", f], "<= 600 MB"),
        (
            "`export --format dot`",
            vec!["export", "--format", "dot", "-o", o, f],
            "<= 600 MB",
        ),
        (
            "`export --format perfetto`",
            vec!["export", "--format", "perfetto", "-o", o, f],
            "<= 600 MB",
        ),
        (
            "`export --format jsonl`",
            vec!["export", "--format", "jsonl", "-o", o, f],
            "<= 600 MB",
        ),
        (
            "`export --all --format svg`",
            vec!["export", "--all", "--format", "svg", "-o", o, f],
            "< 30 s, <= 600 MB",
        ),
        (
            "`export --all --format html`",
            vec!["export", "--all", "--format", "html", "-o", o, f],
            "< 30 s, <= 600 MB",
        ),
    ];
    let mut tree_mib = 0.0;
    for (label, args, goal) in runs {
        let _ = std::fs::remove_file(&out);
        let (secs, mib) = peak_of(&b.tracer, &args)?;
        if label == "`tree`" {
            tree_mib = mib;
        }
        s.push_str(&format!(
            "| {what} | {label} | {secs:.1} s | {mib:.0} MiB ({:.0} MB) | {goal} |\n",
            mib * 1.048_576
        ));
        println!("bench: scale {what} {label}: {secs:.1} s, {mib:.0} MiB");
    }
    let _ = std::fs::remove_file(&out);
    Ok(tree_mib)
}

/// The viewer opened at the end of a scale recording of `total` events (in tmux): the time to
/// open, its settled and peak RSS, then one step back.
fn scale_viewer(b: &Bench, what: &str, f: &str, total: usize, tree_mib: f64) -> Result<String> {
    let v = Viewer::start(&b.tracer, &format!("view --end --paused {f}"))?;
    let load = v.wait_for(&format!("{total}/{total}"), Duration::from_secs(600))?;
    // Settled: the same RSS twice, a second apart.
    let mut rss = v.rss_mib()?;
    loop {
        std::thread::sleep(Duration::from_secs(1));
        let now = v.rss_mib()?;
        if now == rss {
            break;
        }
        rss = now;
    }
    v.keys(",")?;
    let back = v.wait_for(
        &format!("{}/{}", total - 1, total),
        Duration::from_secs(600),
    )?;
    let peak = v.peak_mib()?;
    Ok(format!(
        "| {what} | `view --end` (in tmux): at the end / peak | {:.0} s to open | {rss:.0} / {peak:.0} MiB ({:.0} MB) | <= 1.2 GB (`tree`: {tree_mib:.0} MiB) |\n\
         | {what} | `view --end`, one step back (`,`) | {:.1} s | | |\n",
        load.as_secs_f64(),
        peak * 1.048_576,
        back.as_secs_f64()
    ))
}

/// Seeks in an hour of a busy node (10M events, 1.2M short-lived processes):
/// `view --at SEQ --screenshot 160x45` from start to exit at the first, middle and last seq
/// and five spread ones, then the viewer's `g`, `G`, `,` and `.` once it holds the whole
/// recording.
fn seek(b: &Bench) -> Result<String> {
    let file = b.tmp.join("busy10m.trace");
    let total = ::tests::big::write_busy_node(&file, 10_000_000)?;
    let f = file.to_str().context("temp path")?;
    let mut s = String::from("| seek | wall | peak RSS | goal |\n|---|---|---|---|\n");
    let total_seq = total as u64;
    // Five positions from a fixed LCG: the same every run, none chosen by hand.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let spread = std::iter::repeat_with(move || {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        1 + (x >> 33) % total_seq
    });
    let named = [("first", 1), ("middle", total_seq / 2), ("last", total_seq)];
    let places = named
        .into_iter()
        .chain(spread.take(5).map(|q| ("random", q)));
    for (what, seq) in places {
        let at = seq.to_string();
        let args = ["view", f, "--at", &at, "--screenshot", "160x45"];
        let (secs, mib) = peak_of(&b.tracer, &args)?;
        s.push_str(&format!(
            "| `view --at {at} --screenshot 160x45` ({what}) | {:.0} ms | {mib:.0} MiB | <= 300 ms |\n",
            secs * 1e3
        ));
        println!("bench: seek view --at {at} ({what}): {secs:.2} s, {mib:.0} MiB");
    }
    let v = Viewer::start(&b.tracer, &format!("view --end --paused {f}"))?;
    let open = v.wait_for(&format!("{total}/{total}"), Duration::from_secs(900))?;
    let mut rows = vec![format!(
        "| `view --end`: open (every event applied once) | {:.1} s | | |\n",
        open.as_secs_f64()
    )];
    for (key, pos, what) in [
        ("g", 0, "`g` (to the start)"),
        ("G", total, "`G` (to the end)"),
        (",", total - 1, "`,` (one step back from the end)"),
        ("g", 0, "`g` again"),
        (".", 1, "`.` (one step on)"),
        ("G", total, "`G` again"),
    ] {
        v.keys(key)?;
        let took = v.wait_quick(&format!(" {pos}/{total}"), Duration::from_secs(120))?;
        rows.push(format!(
            "| viewer {what} | {:.0} ms | | <= 100 ms |\n",
            took.as_secs_f64() * 1e3
        ));
        println!("bench: seek viewer {what}: {took:?}");
    }
    let peak = v.peak_mib()?;
    rows.push(format!("| viewer peak RSS | | {peak:.0} MiB | |\n"));
    s.extend(rows);
    Ok(s)
}

/// `tracer tree` on crafted input that made the import or the engine super-linear: strace
/// logs of many calls in flight at once, and deeply nested pid namespaces. The baseline
/// binary (`TRACER_BENCH_BASELINE`), when given, runs on the same files.
fn crafted(b: &Bench) -> Result<String> {
    use ::tests::big::{write, Shape};
    use tracer::synth;
    let logs = [
        (
            "40,000 `<unfinished ...>` clones (strace log)",
            "unfinished40k.log",
            synth::strace_unfinished_clones(40_000),
        ),
        (
            "100,000 `<... clone resumed>` lines (strace log)",
            "resumed100k.log",
            synth::strace_resumed_clones(100_000),
        ),
    ];
    let mut files = Vec::new();
    for (what, name, text) in logs {
        let path = b.tmp.join(name);
        std::fs::write(&path, text)?;
        files.push((what, path));
    }
    let nested = b.tmp.join("nested50k.trace");
    write(&nested, Shape::NestedNamespaces, 50_000)?;
    files.push(("50,000 nested pid namespaces (trace file)", nested));
    let mut bins = vec![("this change", b.tracer.clone())];
    if let Some(base) = &b.baseline {
        bins.push(("before (baseline)", base.clone()));
    }
    let mut s = String::from(
        "| input | binary | `tree` wall | CPU (user + sys) | peak RSS | goal |\n|---|---|---|---|---|---|\n",
    );
    for (what, path) in &files {
        let f = path.to_str().context("temp path")?;
        for (label, bin) in &bins {
            let cpu = children_cpu();
            let (secs, mib) = peak_of(bin, &["tree", f])?;
            let cpu = children_cpu() - cpu;
            s.push_str(&format!(
                "| {what} | {label} | {secs:.2} s | {cpu:.2} s | {mib:.0} MiB | <= 1 s |\n"
            ));
            println!(
                "bench: crafted {what} ({label}): {secs:.2} s wall, {cpu:.2} s CPU, {mib:.0} MiB"
            );
        }
    }
    Ok(s)
}

/// CPU seconds (user + sys) of every child waited for so far: on a loaded machine the wall
/// time of a run is mostly waiting for a core.
fn children_cpu() -> f64 {
    // SAFETY: getrusage writes the struct it is given; zeroed is a valid rusage.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to a rusage of this process.
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) } != 0 {
        return 0.0;
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(ru.ru_utime) + secs(ru.ru_stime)
}

impl Drop for Viewer {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .status();
    }
}

/// How many lifetimes the soak drives, and how many of them are processes (the rest are
/// threads): `TRACER_SOAK_LIFETIMES`, `TRACER_SOAK_PROCESSES`.
fn soak_counts() -> (u64, u64) {
    let var = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let total = var("TRACER_SOAK_LIFETIMES", 1_000_000);
    (total, var("TRACER_SOAK_PROCESSES", total).min(total))
}

/// `tracer tui --all` in tmux while `actor` forks (then, past the process count, spawns
/// threads) in chunks; the viewer's RSS at each checkpoint.
fn soak(b: &Bench, actor: &Path) -> Result<String> {
    let (total, processes) = soak_counts();
    let viewer = Viewer::start(&b.tracer, "tui --all")?;
    let start = std::time::Instant::now();
    let mut s =
        String::from("| lifetimes so far | of which processes | viewer RSS |\n|---|---|---|\n");
    let mut rows = vec![(0u64, viewer.rss_mib()?)];
    let checkpoints = [10_000u64, 50_000, 100_000, 200_000, 500_000, 1_000_000];
    let mut done = 0u64;
    for &mark in checkpoints.iter().filter(|&&m| m <= total) {
        while done < mark {
            let n = (mark - done).min(50_000);
            let step = match done < processes {
                true => format!("storm:{}", n.min(processes - done)),
                false => format!("threads:{n}"),
            };
            let n = step.split(':').nth(1).unwrap_or("0").parse::<u64>()?;
            if !Command::new(actor).arg(&step).status()?.success() {
                bail!("actor {step} failed");
            }
            done += n;
        }
        // Let the viewer catch up with the ring before reading its size.
        std::thread::sleep(Duration::from_secs(2));
        rows.push((done, viewer.rss_mib()?));
        println!(
            "bench: soak {done}: {:.1} MiB",
            rows.last().map_or(0.0, |r| r.1)
        );
    }
    for &(n, mib) in &rows {
        let procs = n.min(processes);
        s.push_str(&format!("| {n} | {procs} | {mib:.1} MiB |\n"));
    }
    let at = |n: u64| rows.iter().find(|r| r.0 == n).map(|r| r.1);
    if let (Some(a), Some(z)) = (at(10_000), at(50_000)) {
        s.push_str(&format!(
            "\nGrowth from 10,000 to 50,000 lifetimes: {:.1} MiB (goal <= 8 MiB).\n",
            z - a
        ));
    }
    let peak = rows.iter().map(|r| r.1).fold(0.0, f64::max);
    s.push_str(&format!(
        "Highest RSS: {peak:.1} MiB (goal <= 150 MiB, flat after warm-up); {} s in all.\n",
        start.elapsed().as_secs()
    ));
    Ok(s)
}

pub fn run(root: &Path, runs: u32, only: Option<&str>) -> Result<()> {
    if !crate::setup::is_root() {
        bail!("the benchmarks load probes: run them as root");
    }
    let b = Bench {
        tracer: root.join("target/release/tracer"),
        tmp: std::env::temp_dir().join(format!("tracer-bench-{}", std::process::id())),
        costs: Default::default(),
        baseline: std::env::var_os("TRACER_BENCH_BASELINE").map(PathBuf::from),
        last_cost: Default::default(),
    };
    let _stats = BpfStats::enable();
    std::fs::create_dir_all(&b.tmp)?;
    let have_strace = have_strace();
    let mut report = String::from("# Benchmarks (measured by `cargo xtask bench`)\n\n");
    report.push_str(&format!(
        "Machine: {} cores, kernel {}. Paired rounds: {runs}. Ratios are per round against the untraced run.\n\n",
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim()
    ));
    let want = |name: &str| only.is_none_or(|o| o == name);

    if want("storm") {
        report.push_str(&storm(&b, runs, have_strace)?);
    }
    if want("cost") {
        report.push_str(&probe_floor(&b, runs)?);
    }
    if want("dd") {
        report.push_str(&dd(&b, runs, have_strace)?);
    }
    if want("throughput") {
        report.push_str(&throughput_section(&b, &root.join("target/release/actor"))?);
    }
    if want("pod") {
        report.push_str(&pod(&b, runs)?);
        println!("bench: pod done");
    }
    if want("latency") {
        report.push_str("## 7. Start and stop: `tracer trace -- sh -c date`\n\n");
        report.push_str(&latency(&b, 5)?);
        report.push('\n');
    }
    if want("scale") {
        report.push_str("## 8. Scale: a million processes, the pictures and the viewer\n\n");
        report.push_str(&scale(&b)?);
        report.push('\n');
        println!("bench: scale done");
    }
    if want("agent") {
        let actor = root.join("target/release/actor");
        report.push_str(
            "## 9. Agent on a busy node: `tracer agent --all` publishing to a loopback `nats-server -js`\n\n",
        );
        report.push_str(&agent::agent(&b, &actor)?);
        report.push('\n');
        println!("bench: agent done");
    }
    if want("seek") {
        report.push_str("## 10. Seek in an hour of a busy node: 10M events, 1.2M processes\n\n");
        report.push_str(&seek(&b)?);
        report.push('\n');
        println!("bench: seek done");
    }
    if want("crafted") {
        report.push_str("## 12. Crafted input: `tracer tree` on what made it super-linear\n\n");
        report.push_str(&crafted(&b)?);
        report.push('\n');
        println!("bench: crafted done");
    }
    if want("soak") {
        let actor = root.join("target/release/actor");
        report.push_str("## 6. Soak: `tracer tui --all` (in tmux) while processes come and go\n\n");
        report.push_str(&soak(&b, &actor)?);
        report.push('\n');
    }
    let _ = std::fs::remove_dir_all(&b.tmp);
    write_report(root, only, report)
}

/// Whether strace runs here (its rows are left out otherwise).
fn have_strace() -> bool {
    Command::new("strace")
        .arg("-V")
        .stdout(Stdio::null())
        .status()
        .is_ok()
}

/// The report's closing section, written to BENCHMARKS.md (a full run) or target/bench.md.
fn write_report(root: &Path, only: Option<&str>, mut report: String) -> Result<()> {
    report.push_str(
        "## 5. Userspace (criterion, one core)\n\n\
         `cargo bench -p tracer-user --no-default-features --features tui` runs `pipeline` (decode, decode + lineage, \
         strace import), `tracefile` (read + decode, write, replay RSS) and `tui` (one frame of a \
         10k-process tree); criterion prints each throughput.\n",
    );
    // A full run is the report; a partial one (--only) stays out of the tree.
    let path = if only.is_none() {
        root.join("BENCHMARKS.md")
    } else {
        root.join("target/bench.md")
    };
    std::fs::write(&path, &report)?;
    println!("\n{report}\nbench: written to {}", path.display());
    Ok(())
}

/// Section 1: a fork/exec storm, untraced against each tracer configuration (and strace).
fn storm(b: &Bench, runs: u32, have_strace: bool) -> Result<String> {
    let mut report = String::new();
    let mut configs = TRACER_CONFIGS.to_vec();
    configs.push(Config::AllNoSignals);
    if b.baseline.is_some() {
        configs.extend([Config::FollowBaseline, Config::AllBaseline]);
    }
    let body = "i=0; while [ $i -lt 1000 ]; do /bin/true; i=$((i+1)); done";
    // The goals are 2-3% and a round varies by about 5% here: twice the rounds.
    let times = b.paired(&configs, body, runs * 2)?;
    report.push_str(&format!(
        "## 1. Fork/exec storm: 1,000 x `/bin/true` from a shell loop ({} rounds)\n\n",
        runs * 2
    ));
    report.push_str(&table(&configs, &times, &["", "<= 1.02x", "<= 1.03x"]));
    report.push_str(&probe_table(b, Some(0.5)));
    if have_strace {
        let configs = [Config::Untraced, Config::Strace];
        let times = b.paired(&configs, body, runs.min(5))?;
        report.push_str("\nstrace on the same storm:\n\n");
        report.push_str(&table(&configs, &times, &["", "(~1.7x measured before)"]));
    }
    report.push('\n');
    println!("bench: storm done");
    Ok(report)
}

/// Section 1's probe floor: the storm untraced, under a bpftrace program that only counts on
/// the tracer's tracepoints, and under the tracer (follow and `--all`, and the baseline
/// binary's when given), alternating in each round: every probe's time per call beside the
/// floor's, the totals' ratio against 1.5x, and what tracing cost against 0.5% of the storm.
fn probe_floor(b: &Bench, runs: u32) -> Result<String> {
    let mut configs = vec![Config::Untraced, Config::Floor, Config::Follow, Config::All];
    if b.baseline.is_some() {
        configs.extend([Config::FollowBaseline, Config::AllBaseline]);
    }
    let body = "i=0; while [ $i -lt 1000 ]; do /bin/true; i=$((i+1)); done";
    let load_before = loadavg();
    let times = b.paired(&configs, body, runs * 2)?;
    let all: Vec<_> = b.costs.borrow_mut().drain(..).collect();
    let mut report = format!(
        "### Probe floor: the storm's probes beside a counting-only program ({} rounds, load average before: {load_before})\n\n",
        runs * 2,
    );
    report.push_str(&table(&configs, &times, &[]));
    report.push_str(
        "\nTime inside each probe (kernel.bpf_stats_enabled `run_time_ns` / `run_cnt`, read from \
         each program's descriptor at the gates around the workload; every call on the host counts, \
         so both sides see the same background). The floor is bpftrace counting each call in a map \
         of its own, on classic tracepoints (bpftrace 0.17 has no raw ones); (raw) marks a tracer \
         program attached raw or typed (tp_btf):\n\n",
    );
    let tracers: Vec<Config> = configs[2..].to_vec();
    report.push_str(&cost::floor_table(&all, &tracers, 1000, 1.5));
    let traced: Vec<_> = all.into_iter().filter(|r| r.0 != Config::Floor).collect();
    report.push_str(&cost::table(&traced, Some(0.5)));
    report.push_str(&format!("\nLoad average after: {}\n\n", loadavg()));
    println!("bench: cost done");
    Ok(report)
}

/// /proc/loadavg's three averages.
fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// Section 2: a syscall-heavy process making no traced call (and strace on a tenth of it).
fn dd(b: &Bench, runs: u32, have_strace: bool) -> Result<String> {
    let mut report = String::new();
    // Makes none of the traced calls: the probes' cost here is the filter alone.
    let configs = TRACER_CONFIGS;
    // One dd takes ~50 ms here: ten per timed run keep the ratio above the noise.
    let body = "for i in 1 2 3 4 5 6 7 8 9 10; do dd if=/dev/zero of=/dev/null bs=1 count=200000 2>/dev/null; done";
    let times = b.paired(&configs, body, runs)?;
    report.push_str(
        "## 2. Syscall-heavy process making no traced call: `dd bs=1 count=200000`, 10 per run\n\n",
    );
    report.push_str(&table(&configs, &times, &["", "<= 1.02x", "<= 1.02x"]));
    report.push_str(&probe_table(b, None));
    if have_strace {
        // strace stops on every syscall here (~800x): a tenth of the work, fewer rounds.
        let small = "dd if=/dev/zero of=/dev/null bs=1 count=20000 2>/dev/null";
        let configs = [Config::Untraced, Config::Strace];
        let times = b.paired(&configs, small, runs.min(3))?;
        report.push_str("\nstrace with the same syscall filter, on `count=20000`:\n\n");
        report.push_str(&table(&configs, &times, &["", "(~810x measured before)"]));
    }
    report.push('\n');
    println!("bench: dd done");
    Ok(report)
}

/// Section 3: event throughput, with and without `--syscalls`, and past capacity.
fn throughput_section(b: &Bench, actor: &Path) -> Result<String> {
    let mut report = String::new();
    report.push_str(
        "## 3. Event throughput: clone/exit bursts (threads), `tracer record` in follow mode \
         (events, drops and gaps from the recording's stats record)\n\n",
    );
    report.push_str(&throughput(b, actor, false, None)?);
    report.push_str("\nWith `--syscalls` (three times the events per thread):\n\n");
    report.push_str(&throughput(b, actor, true, None)?);
    report.push_str("\nPast capacity: the largest burst, `--syscalls`, into a 64 KiB ring:\n\n");
    report.push_str(&throughput(b, actor, true, Some(64 << 10))?);
    report.push_str(
        "\nDrops are counted per CPU at the failed reserve and each takes a sequence number, \
         so every drop inside the stream is also a gap (drops after the last delivered event \
         leave none); the root test `ring_overflow_drops_are_counted_exactly` checks \
         `drops == issued - delivered` exactly.\n\n",
    );
    Ok(report)
}
