//! What tracing costs the traced host: time inside the probes (the kernel's `run_time_ns`)
//! plus the tracer's own CPU, read at two gates around the workload so that start-up (loading
//! and verifying the probes, the /proc snapshot) and shutdown are not counted.

use anyhow::{bail, Context, Result};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

/// CPU time of the live threads of `pid`, in seconds: the sum of the first field of
/// `/proc/PID/task/*/schedstat`, the scheduler's `sum_exec_runtime` in ns. utime+stime
/// (/proc/PID/stat) count whole 10 ms ticks, too coarse for a storm's few milliseconds.
/// Threads that exited between two readings are missed (the tracer keeps its threads).
pub(super) fn cpu_seconds(pid: u32) -> Option<f64> {
    let mut ns = 0u64;
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))
        .ok()?
        .flatten()
    {
        let Ok(text) = std::fs::read_to_string(task.path().join("schedstat")) else {
            continue;
        };
        ns += text.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(ns as f64 / 1e9)
}

/// A FIFO the workload's shell waits on (`read _ < FIFO`) until the bench lets it pass.
pub(super) struct Gate(PathBuf);

impl Gate {
    pub(super) fn new(dir: &Path, name: &str) -> Result<Gate> {
        let path = dir.join(name);
        let _ = std::fs::remove_file(&path);
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())?;
        // SAFETY: a NUL-terminated path that lives across the call.
        if unsafe { libc::mkfifo(c.as_ptr(), 0o600) } != 0 {
            bail!(
                "mkfifo {}: {}",
                path.display(),
                std::io::Error::last_os_error()
            );
        }
        Ok(Gate(path))
    }

    /// The shell words that wait at this gate.
    pub(super) fn wait_words(&self) -> String {
        format!("read _ < {}", self.0.display())
    }

    /// Blocks until the shell waits at the gate (a FIFO opened for writing without blocking
    /// fails with ENXIO until a reader has it open), or fails once `watch` has exited.
    pub(super) fn reached(&self, watch: &mut Child) -> Result<std::fs::File> {
        let start = Instant::now();
        loop {
            match std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&self.0)
            {
                Ok(f) => return Ok(f),
                Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {}
                Err(e) => return Err(e).with_context(|| format!("{}", self.0.display())),
            }
            if let Some(st) = watch.try_wait()? {
                bail!("exited ({st}) before reaching {}", self.0.display());
            }
            if start.elapsed() > Duration::from_secs(120) {
                bail!("the workload never reached {}", self.0.display());
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Lets a shell waiting here pass, if there is one (after a failed measurement).
    pub(super) fn release(&self) {
        if let Ok(f) = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&self.0)
        {
            let _ = Gate::open(f);
        }
    }

    /// Lets the waiting shell pass.
    pub(super) fn open(mut f: std::fs::File) -> Result<()> {
        f.write_all(b"\n")?;
        Ok(())
    }
}

/// One BPF program a process holds: what it is attached to (a tracepoint's name, or
/// `prog ID` when the kernel names no attachment) and the kernel's counters of it
/// (kernel.bpf_stats_enabled): nanoseconds inside it and runs.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Probe {
    pub name: String,
    /// Attached raw (a raw or typed tracepoint: the arguments in place), not through a
    /// perf event's tracefs record.
    pub raw: bool,
    pub ns: u64,
    pub calls: u64,
}

/// A number field (`key:\tVALUE`) of a /proc fdinfo text.
fn fdinfo_field(text: &str, key: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .and_then(|v| v.trim().parse().ok())
}

/// BPF_TASK_FD_QUERY: the tracepoint that descriptor `fd` of `pid` attaches a program to
/// (a perf event's or a raw tracepoint link's), and that program's id.
fn task_fd_query(pid: u32, fd: u32) -> Option<(String, u64, bool)> {
    /// `union bpf_attr`'s task_fd_query member (include/uapi/linux/bpf.h).
    #[repr(C)]
    struct Attr {
        pid: u32,
        fd: u32,
        flags: u32,
        buf_len: u32,
        buf: u64,
        prog_id: u32,
        fd_type: u32,
        probe_offset: u64,
        probe_addr: u64,
    }
    const BPF_TASK_FD_QUERY: libc::c_long = 20;
    let mut buf = [0u8; 256];
    let mut attr = Attr {
        pid,
        fd,
        flags: 0,
        buf_len: buf.len() as u32,
        buf: buf.as_mut_ptr() as u64,
        prog_id: 0,
        fd_type: 0,
        probe_offset: 0,
        probe_addr: 0,
    };
    // SAFETY: the attribute and the name buffer it points at live across the call; the kernel
    // writes at most buf_len bytes.
    let r = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            BPF_TASK_FD_QUERY,
            &mut attr as *mut Attr,
            std::mem::size_of::<Attr>() as u32,
        )
    };
    if r != 0 || attr.prog_id == 0 {
        return None;
    }
    const BPF_FD_TYPE_RAW_TRACEPOINT: u32 = 0;
    let name = std::ffi::CStr::from_bytes_until_nul(&buf).ok()?;
    let raw = attr.fd_type == BPF_FD_TYPE_RAW_TRACEPOINT;
    Some((
        name.to_string_lossy().into_owned(),
        u64::from(attr.prog_id),
        raw,
    ))
}

/// What a BPF link's fdinfo says it attaches: (tracepoint, program id, raw).
fn link_target(text: &str) -> Option<(String, u64, bool)> {
    let tp = text
        .lines()
        .find_map(|l| l.strip_prefix("tp_name:"))?
        .trim();
    let raw = text
        .lines()
        .find_map(|l| l.strip_prefix("link_type:"))
        .is_some_and(|t| t.trim() == "raw_tracepoint");
    Some((tp.to_string(), fdinfo_field(text, "prog_id")?, raw))
}

/// Every BPF program `pid` holds, named by the tracepoint it is attached to (a link's
/// fdinfo, or BPF_TASK_FD_QUERY on a perf event), with its counters; `None` when it holds
/// none. The same reading serves the tracer (aya: links) and bpftrace (perf events).
pub(super) fn probes(pid: u32) -> Option<Vec<Probe>> {
    let mut progs: Vec<(u64, u64, u64)> = Vec::new();
    let mut names: std::collections::HashMap<u64, (String, bool)> = Default::default();
    for entry in std::fs::read_dir(format!("/proc/{pid}/fdinfo"))
        .ok()?
        .flatten()
    {
        let Ok(text) = std::fs::read_to_string(entry.path()) else {
            continue;
        };
        let id = fdinfo_field(&text, "prog_id");
        if text.contains("prog_type:") {
            let (ns, calls) = (
                fdinfo_field(&text, "run_time_ns"),
                fdinfo_field(&text, "run_cnt"),
            );
            progs.push((id.unwrap_or(0), ns.unwrap_or(0), calls.unwrap_or(0)));
            continue;
        }
        if let Some((name, prog, raw)) = link_target(&text) {
            names.insert(prog, (name, raw));
            continue;
        }
        let Some(fd) = entry
            .file_name()
            .to_str()
            .and_then(|f| f.parse::<u32>().ok())
        else {
            continue;
        };
        let anon = std::fs::read_link(format!("/proc/{pid}/fd/{fd}"))
            .is_ok_and(|l| l.to_string_lossy().starts_with("anon_inode:"));
        if let Some((name, prog, raw)) = anon.then(|| task_fd_query(pid, fd)).flatten() {
            names.insert(prog, (name, raw));
        }
    }
    if progs.is_empty() {
        return None;
    }
    let mut out: Vec<Probe> = progs
        .into_iter()
        .map(|(id, ns, calls)| {
            let (name, raw) = names
                .remove(&id)
                .unwrap_or_else(|| (format!("prog {id}"), false));
            Probe {
                name,
                raw,
                ns,
                calls,
            }
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Some(out)
}

/// What each probe did between two readings (by name; a probe only in `after` counts whole).
pub(super) fn probe_delta(before: &[Probe], after: &[Probe]) -> Vec<Probe> {
    after
        .iter()
        .map(|a| {
            let b = before.iter().find(|b| b.name == a.name);
            Probe {
                name: a.name.clone(),
                raw: a.raw,
                ns: a.ns - b.map_or(0, |b| b.ns.min(a.ns)),
                calls: a.calls - b.map_or(0, |b| b.calls.min(a.calls)),
            }
        })
        .collect()
}

/// A process's counters at one instant: its probes and its own CPU seconds.
pub(super) fn reading(pid: u32) -> Option<(Vec<Probe>, f64)> {
    Some((probes(pid)?, cpu_seconds(pid)?))
}

/// One traced run's cost: probe seconds, tracer CPU seconds, the workload's wall seconds,
/// and what each probe did.
#[derive(Clone)]
pub(super) struct Cost {
    pub probe: f64,
    pub cpu: f64,
    pub wall: f64,
    pub probes: Vec<Probe>,
}

impl Cost {
    fn share(&self) -> f64 {
        100.0 * (self.probe + self.cpu) / self.wall
    }
}

/// The cost table: per configuration, the probes' time and the tracer's CPU per run (both
/// load-independent counts), and their sum as a share of the workload's wall time against
/// `goal` (percent), met or not by the median.
pub(super) fn table(runs: &[(super::Config, Cost)], goal: Option<f64>) -> String {
    let mut s = String::from(
        "\nWhat tracing cost, per run: time inside the probes (kernel.bpf_stats_enabled, \
         `run_time_ns` summed over every program) and the tracer's own CPU (every thread's \
         `sum_exec_runtime`, /proc/PID/task/*/schedstat), both read at gates just before and \
         after the workload (start-up not counted), as a share of the workload's wall time:\n\n\
         | configuration | probe time (ms) | tracer CPU (ms) | total (ms) | share median | share min | share max | goal |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    let mut configs: Vec<super::Config> = Vec::new();
    for (c, _) in runs {
        if !configs.contains(c) {
            configs.push(*c);
        }
    }
    for cfg in configs {
        let mine: Vec<&Cost> = runs.iter().filter(|r| r.0 == cfg).map(|r| &r.1).collect();
        let (probe, _, _) = super::stats(mine.iter().map(|c| c.probe * 1e3).collect());
        let (cpu, _, _) = super::stats(mine.iter().map(|c| c.cpu * 1e3).collect());
        let (total, _, _) = super::stats(mine.iter().map(|c| (c.probe + c.cpu) * 1e3).collect());
        let (sm, smin, smax) = super::stats(mine.iter().map(|c| c.share()).collect());
        let verdict = match goal {
            Some(g) if sm <= g => format!("<= {g}%: met"),
            Some(g) => format!("<= {g}%: NOT met"),
            None => String::new(),
        };
        s.push_str(&format!(
            "| {} | {probe:.2} | {cpu:.2} | {total:.2} | {sm:.2}% | {smin:.2}% | {smax:.2}% | {verdict} |\n",
            cfg.name()
        ));
    }
    s
}

/// Lets the workload (`watch`, or the tracer's own command) through `go` and waits for it at
/// `done`, reading the tracer `pid`'s counters at both: what the workload cost it. The
/// pauses let the tracer finish starting (its /proc snapshot) and drain the ring (it polls
/// every 50 ms).
pub(super) fn measure(pid: u32, watch: &mut Child, go: &Gate, done: &Gate) -> Result<Cost> {
    let f = go.reached(watch)?;
    std::thread::sleep(Duration::from_millis(300));
    let before = reading(pid).context("the tracer holds no probes")?;
    Gate::open(f)?;
    let f = done.reached(watch)?;
    std::thread::sleep(Duration::from_millis(200));
    let after = reading(pid).context("the tracer is gone")?;
    Gate::open(f)?;
    let probes = probe_delta(&before.0, &after.0);
    Ok(Cost {
        probe: probes.iter().map(|p| p.ns).sum::<u64>() as f64 / 1e9,
        cpu: after.1 - before.1,
        wall: 0.0,
        probes,
    })
}

/// The tracepoints the tracer attaches by default (`record`, with or without `--all`:
/// tracer-common's `tracepoints::SCHED` and `TASK`, and the raw ones its loader adds), as
/// bpftrace names them. bpftrace 0.17 (Debian 12) has no raw tracepoints: the floor attaches
/// the classic tracepoint of the same name, whose attach costs it a little more (the kernel's
/// trigger bench: ~41 ns a call against ~8 for a raw one), a floor no lower than the true one.
pub(super) const FLOOR_TRACEPOINTS: [(&str, &str); 8] = [
    ("sched", "sched_process_exec"),
    ("sched", "sched_process_exit"),
    ("sched", "sched_process_fork"),
    ("task", "task_newtask"),
    ("task", "task_rename"),
    ("signal", "signal_generate"),
    ("cgroup", "cgroup_attach_task"),
    ("oom", "mark_victim"),
];

/// The floor's bpftrace program: each tracepoint counts its calls in a map of its own, and
/// does nothing else.
pub(super) fn floor_program() -> String {
    FLOOR_TRACEPOINTS
        .iter()
        .map(|(cat, name)| format!("tracepoint:{cat}:{name} {{ @{name} = count(); }}\n"))
        .collect()
}

/// `script` under the counting-only bpftrace program, its probes read at the gates as the
/// tracer's are: what the same tracepoints cost a program that does nothing.
pub(super) fn floor_run(tmp: &Path, script: &str) -> Result<(std::process::ExitStatus, Cost)> {
    let go = Gate::new(tmp, "go")?;
    let done = Gate::new(tmp, "done")?;
    let gated = format!("{}; {script}; {}", go.wait_words(), done.wait_words());
    let mut bt = std::process::Command::new("bpftrace")
        .args(["-e", &floor_program()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .context("bpftrace (cargo xtask setup --tests installs it)")?;
    let attached = wait_attached(&mut bt, FLOOR_TRACEPOINTS.len());
    let result = attached.and_then(|()| {
        let mut shell = std::process::Command::new("sh")
            .args(["-c", &gated])
            .spawn()?;
        let measured = measure(bt.id(), &mut shell, &go, &done);
        if measured.is_err() {
            let _ = shell.kill();
        }
        let status = shell.wait()?;
        Ok((status, measured?))
    });
    // SAFETY: signalling our own child.
    unsafe { libc::kill(bt.id() as i32, libc::SIGINT) };
    let _ = bt.wait();
    result
}

/// Waits until `child` has `n` programs attached to named tracepoints.
fn wait_attached(child: &mut Child, n: usize) -> Result<()> {
    let start = Instant::now();
    loop {
        let named = probes(child.id()).map_or(0, |p| {
            p.iter().filter(|p| !p.name.starts_with("prog ")).count()
        });
        if named >= n {
            return Ok(());
        }
        if let Some(st) = child.try_wait()? {
            bail!("bpftrace exited ({st}) before attaching");
        }
        if start.elapsed() > Duration::from_secs(60) {
            bail!("bpftrace attached {named} of {n} tracepoints in 60 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Per probe, over the runs of one configuration: (ns inside it, calls), summed.
fn per_probe(runs: &[(super::Config, Cost)], cfg: super::Config) -> Vec<Probe> {
    let mut out: Vec<Probe> = Vec::new();
    for p in runs.iter().filter(|r| r.0 == cfg).flat_map(|r| &r.1.probes) {
        match out.iter_mut().find(|o| o.name == p.name) {
            Some(o) => {
                o.ns += p.ns;
                o.calls += p.calls;
            }
            None => out.push(p.clone()),
        }
    }
    out
}

/// ns per call, or "-" when it never ran.
fn per_call(ns: u64, calls: u64) -> String {
    if calls == 0 {
        "-".into()
    } else {
        format!("{:.0}", ns as f64 / calls as f64)
    }
}

/// The probe-floor table: per tracepoint, ns per call and calls per run of the floor and
/// of each tracer configuration in `tracers`; then each one's median time inside its probes
/// per run, per storm process (`processes` a run), and its ratio to the floor's against
/// `goal` (met or not by the medians).
pub(super) fn floor_table(
    runs: &[(super::Config, Cost)],
    tracers: &[super::Config],
    processes: u64,
    goal: f64,
) -> String {
    let floor = per_probe(runs, super::Config::Floor);
    let rounds = |cfg| runs.iter().filter(|r| r.0 == cfg).count().max(1) as u64;
    let mut s = String::from("| tracepoint | floor ns/call | floor calls/run |");
    for t in tracers {
        s.push_str(&format!(" {} ns/call | calls/run | x floor |", t.name()));
    }
    s.push_str(&format!(
        "\n|---|---|---|{}\n",
        "---|---|---|".repeat(tracers.len())
    ));
    let mine: Vec<Vec<Probe>> = tracers.iter().map(|t| per_probe(runs, *t)).collect();
    let mut names: Vec<String> = floor.iter().map(|f| f.name.clone()).collect();
    for p in mine.iter().flatten() {
        if !names.contains(&p.name) {
            names.push(p.name.clone());
        }
    }
    let find = |v: &[Probe], n: &str| {
        v.iter()
            .find(|p| p.name == n)
            .map_or((0, 0, false), |p| (p.ns, p.calls, p.raw))
    };
    for name in &names {
        let (fns, fcalls, _) = find(&floor, name);
        if fcalls == 0 && mine.iter().all(|m| find(m, name).1 == 0) {
            continue;
        }
        let fr = rounds(super::Config::Floor);
        s.push_str(&format!(
            "| {name} | {} | {} |",
            per_call(fns, fcalls),
            fcalls / fr
        ));
        for (t, m) in tracers.iter().zip(&mine) {
            let (ns, calls, raw) = find(m, name);
            let how = if raw { " (raw)" } else { "" };
            let ratio = if fcalls == 0 || calls == 0 || fns == 0 {
                "-".into()
            } else {
                format!(
                    "{:.1}x",
                    (ns as f64 / calls as f64) / (fns as f64 / fcalls as f64)
                )
            };
            s.push_str(&format!(
                " {}{how} | {} | {ratio} |",
                per_call(ns, calls),
                calls / rounds(*t)
            ));
        }
        s.push('\n');
    }
    s.push_str(&floor_totals(runs, tracers, processes, goal));
    s
}

/// The totals under the floor table: median probe time per run and per storm process, and
/// each tracer's ratio to the floor against `goal`.
fn floor_totals(
    runs: &[(super::Config, Cost)],
    tracers: &[super::Config],
    processes: u64,
    goal: f64,
) -> String {
    let median = |cfg| {
        let v: Vec<f64> = runs
            .iter()
            .filter(|r| r.0 == cfg)
            .map(|r| r.1.probe)
            .collect();
        super::stats(v).0
    };
    let floor = median(super::Config::Floor);
    let mut s = format!(
        "\n| program | probe time per run (ms, median) | per storm process (ns) | x floor | goal |\n\
         |---|---|---|---|---|\n| {} | {:.2} | {:.0} | 1.0x | |\n",
        super::Config::Floor.name(),
        floor * 1e3,
        floor * 1e9 / processes as f64
    );
    for t in tracers {
        let m = median(*t);
        let ratio = m / floor;
        let verdict = if ratio <= goal { "met" } else { "NOT met" };
        s.push_str(&format!(
            "| {} | {:.2} | {:.0} | {ratio:.2}x | <= {goal}x: {verdict} |\n",
            t.name(),
            m * 1e3,
            m * 1e9 / processes as f64
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// utime + stime of `pid` (/proc/PID/stat fields 14 and 15), in seconds: the kernel's
    /// other count of the same CPU time, in 10 ms ticks.
    fn stat_seconds(pid: u32) -> f64 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let after_comm = &stat[stat.rfind(')').unwrap() + 2..];
        let f: Vec<u64> = after_comm
            .split(' ')
            .skip(11)
            .take(2)
            .map(|v| v.parse().unwrap())
            .collect();
        // SAFETY: sysconf has no preconditions.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
        (f[0] + f[1]) as f64 / hz
    }

    #[test]
    fn cpu_seconds_agrees_with_the_kernels_tick_count() {
        let dir = tempfile::tempdir().unwrap();
        let gate = Gate::new(dir.path(), "held").unwrap();
        // Spins for a while, then waits at the gate so it can be read while alive.
        let script = format!(
            "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; {}",
            gate.wait_words()
        );
        let mut sh = Command::new("sh").args(["-c", &script]).spawn().unwrap();
        let f = gate.reached(&mut sh).unwrap();
        let (mine, ticks) = (cpu_seconds(sh.id()).unwrap(), stat_seconds(sh.id()));
        Gate::open(f).unwrap();
        assert!(sh.wait().unwrap().success());
        assert!(ticks >= 0.05, "the spin took too little CPU: {ticks} s");
        assert!(
            (mine - ticks).abs() <= 0.02 + ticks * 0.1,
            "schedstat {mine} s, stat {ticks} s"
        );
    }

    #[test]
    fn a_gate_holds_the_workload_until_opened() {
        let dir = tempfile::tempdir().unwrap();
        let gate = Gate::new(dir.path(), "go").unwrap();
        let passed = dir.path().join("passed");
        let script = format!("{}; : > {}", gate.wait_words(), passed.display());
        let mut sh = Command::new("sh").args(["-c", &script]).spawn().unwrap();
        let f = gate.reached(&mut sh).unwrap();
        std::thread::sleep(Duration::from_millis(200));
        assert!(!passed.exists(), "went through a closed gate");
        Gate::open(f).unwrap();
        assert!(sh.wait().unwrap().success());
        assert!(passed.exists());
        // A workload that never comes to the gate is an error, not a hang.
        let mut gone = Command::new("true").spawn().unwrap();
        assert!(gate.reached(&mut gone).is_err());
    }

    #[test]
    fn a_links_fdinfo_names_its_tracepoint_and_says_whether_it_is_raw() {
        // As 6.18 prints them: aya's raw tracepoint link and its perf-event link.
        let raw = "pos:\t0\nflags:\t02000002\nlink_type:\traw_tracepoint\nlink_id:\t90\n\
                   prog_tag:\t52412ecdb5091d1e\nprog_id:\t111\ntp_name:\tsched_process_fork\ncookie:\t0\n";
        let perf = "link_type:\tperf\nlink_id:\t91\nprog_tag:\td884db188e09f22e\nprog_id:\t112\n\
                    tp_name:\tsched_process_exec\nevent_type:\ttracepoint\ncookie:\t0\n";
        assert_eq!(
            link_target(raw),
            Some(("sched_process_fork".to_string(), 111, true))
        );
        assert_eq!(
            link_target(perf),
            Some(("sched_process_exec".to_string(), 112, false))
        );
        // A program's own fdinfo is no link.
        let prog =
            "prog_type:\t5\nprog_jited:\t1\nprog_id:\t101\nrun_time_ns:\t53567\nrun_cnt:\t112\n";
        assert_eq!(link_target(prog), None);
        assert_eq!(fdinfo_field(prog, "run_time_ns"), Some(53567));
        assert_eq!(fdinfo_field(prog, "run_cnt"), Some(112));
        assert_eq!(fdinfo_field(prog, "run"), None);
    }

    #[test]
    fn a_process_without_bpf_programs_has_no_probe_reading() {
        assert_eq!(probes(std::process::id()), None);
    }

    #[test]
    fn a_probe_delta_is_per_name_and_never_negative() {
        let p = |name: &str, ns, calls| Probe {
            name: name.into(),
            raw: false,
            ns,
            calls,
        };
        let before = [p("a", 100, 10), p("b", 50, 5)];
        let after = [p("a", 300, 30), p("b", 50, 5), p("c", 7, 1)];
        let d = probe_delta(&before, &after);
        assert_eq!(d, [p("a", 200, 20), p("b", 0, 0), p("c", 7, 1)]);
    }

    #[test]
    fn the_floor_table_gives_each_probe_per_call_and_the_ratio_of_the_medians() {
        use super::super::Config;
        let run = |probes: Vec<Probe>| Cost {
            probe: probes.iter().map(|p| p.ns).sum::<u64>() as f64 / 1e9,
            cpu: 0.0,
            wall: 1.0,
            probes,
        };
        let p = |name: &str, ns, calls| Probe {
            name: name.into(),
            raw: false,
            ns,
            calls,
        };
        let runs = vec![
            (Config::Floor, run(vec![p("exit", 200_000, 1000)])),
            (Config::Floor, run(vec![p("exit", 400_000, 1000)])),
            (Config::Follow, run(vec![p("exit", 500_000, 1000)])),
            (Config::Follow, run(vec![p("exit", 700_000, 1000)])),
            (Config::FollowBaseline, run(vec![p("exit", 700_000, 1000)])),
            (
                Config::All,
                run(vec![p("exit", 600_000, 1000), p("fork", 0, 0)]),
            ),
            (Config::All, run(vec![p("exit", 1_000_000, 1000)])),
        ];
        let t = floor_table(&runs, &[Config::Follow, Config::All], 1000, 1.5);
        // 300 ns a call for the floor; 600 (2.0x) and 800 (2.7x) for the tracer.
        assert!(
            t.contains("| exit | 300 | 1000 | 600 | 1000 | 2.0x | 800 | 1000 | 2.7x |"),
            "{t}"
        );
        // A probe that never ran on either side has no row.
        assert!(!t.contains("| fork |"), "{t}");
        // Medians of the totals (the upper of two): floor 0.4 ms, follow 0.7 (1.75x), --all 1.0.
        assert!(
            t.contains("| bpftrace, counting only | 0.40 | 400 | 1.0x | |"),
            "{t}"
        );
        assert!(
            t.contains("| tracer (follow) | 0.70 | 700 | 1.75x | <= 1.5x: NOT met |"),
            "{t}"
        );
        let cheap = vec![
            (Config::Floor, run(vec![p("exit", 400_000, 1000)])),
            (Config::Follow, run(vec![p("exit", 600_000, 1000)])),
        ];
        let t = floor_table(&cheap, &[Config::Follow], 1000, 1.5);
        assert!(t.contains("| 1.50x | <= 1.5x: met |"), "{t}");
    }

    #[test]
    fn the_floor_program_counts_on_every_tracepoint_and_does_nothing_else() {
        let prog = floor_program();
        assert_eq!(prog.lines().count(), FLOOR_TRACEPOINTS.len());
        for (cat, name) in FLOOR_TRACEPOINTS {
            assert!(
                prog.contains(&format!("tracepoint:{cat}:{name} {{ @{name} = count(); }}")),
                "{prog}"
            );
        }
    }

    #[test]
    fn the_cost_table_says_met_or_not_by_the_median_share() {
        let run = |probe_ms: f64, cpu_ms: f64| Cost {
            probe: probe_ms / 1e3,
            cpu: cpu_ms / 1e3,
            wall: 1.0,
            probes: Vec::new(),
        };
        let runs = [
            (super::super::Config::Follow, run(2.0, 2.0)),
            (super::super::Config::Follow, run(2.0, 2.5)),
            (super::super::Config::Follow, run(9.0, 9.0)),
            (super::super::Config::All, run(1.0, 1.0)),
            (super::super::Config::All, run(3.0, 3.0)),
            (super::super::Config::All, run(4.0, 4.0)),
        ];
        let t = table(&runs, Some(0.5));
        let row = |name: &str| {
            t.lines()
                .find(|l| l.starts_with(&format!("| {name} |")))
                .unwrap()
                .to_string()
        };
        assert_eq!(
            row("tracer (follow)"),
            "| tracer (follow) | 2.00 | 2.50 | 4.50 | 0.45% | 0.40% | 1.80% | <= 0.5%: met |"
        );
        // Met by its best run, not by its median: not met.
        assert!(row("tracer --all").ends_with("| 0.60% | 0.20% | 0.80% | <= 0.5%: NOT met |"));
    }
}
