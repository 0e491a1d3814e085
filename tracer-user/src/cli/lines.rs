//! strace's line options, the same for `trace` and `replay`: `-t`/`-tt`/`-ttt`, `-r`, `-Y`,
//! `--decode-pids`, `-e trace=`/`-e signal=`.

use anyhow::Result;
use tracer::clock::{Clock, Stamper, Style};
use tracer::render::{Decode, LineFilter, LineRenderer};

/// How strace-like lines are printed.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct LineArgs {
    /// Time of day on each line, as strace: -t HH:MM:SS, -tt with microseconds, -ttt seconds
    /// since the epoch. Wall time from the recording's own clock (a trace file's header, an
    /// strace log's stamps; live: the capture's start), never the reader's; `??` where the
    /// recording has none.
    #[arg(short = 't', action = clap::ArgAction::Count)]
    pub time: u8,
    /// Seconds since the previous line on each line, as strace -r.
    #[arg(short = 'r', long = "relative-timestamps")]
    pub relative: bool,
    /// The pid's name on each line and in si_pid: `[pid  1234<sleep>]` (--decode-pids=comm).
    #[arg(short = 'Y')]
    pub comm: bool,
    /// What pids are printed with, comma separated: comm (-Y), pidns (si_pid and clone's
    /// return as the process's own pid namespace has them, the host pid in strace's
    /// comment), k8s (the task's pod and container: ` k8s=NS/POD/CONTAINER` in `[pid ...]`,
    /// not strace's), all, none.
    #[arg(long = "decode-pids", value_name = "WHAT", value_parser = decode_pids)]
    pub decode_pids: Vec<Decode>,
    /// Which lines print, as strace's -e: trace=CLASSES (exec, fork/clone, exit, signal, oom,
    /// cgroup, rename, subreaper, prctl, bundle, process, the syscalls' names, all, none; `!`
    /// inverts)
    /// and signal=SIGNALS (SIGTERM,SIGKILL, !SIGCHLD, all, none). Repeatable.
    #[arg(short = 'e', value_name = "EXPR")]
    pub expr: Vec<String>,
}

fn decode_pids(s: &str) -> Result<Decode, String> {
    Decode::parse(s)
}

impl LineArgs {
    /// What pids are printed with: every `--decode-pids` and `-Y` together.
    pub fn decode(&self) -> Decode {
        let mut d = Decode {
            comm: self.comm,
            ..Decode::default()
        };
        for x in &self.decode_pids {
            d.comm |= x.comm;
            d.pidns |= x.pidns;
            d.k8s |= x.k8s;
        }
        d
    }

    /// The renderer these options ask for, its stamps on `clock`.
    pub fn renderer(&self, clock: Clock, seq: bool, sched_probes: bool) -> Result<LineRenderer> {
        let mut r = LineRenderer::new();
        r.show_seq = seq;
        r.sched_probes = sched_probes;
        r.stamper = Style::from_flags(self.time, self.relative).map(|s| Stamper::new(clock, s));
        r.decode = self.decode();
        r.filter = LineFilter::from_exprs(&self.expr)?;
        Ok(r)
    }
}
