//! Argument parsing and dispatch for the `tracer` binary.

#[cfg(feature = "agent")]
mod agent;
mod demo;
mod export;
mod import;
mod lineage;
mod output;
mod reading;
#[cfg(feature = "capture")]
mod record;
mod replay;
#[cfg(feature = "capture")]
mod trace;
mod tui;

use anyhow::Result;
use clap::{Parser, Subcommand, ValueEnum};
use std::process::ExitCode;

/// `tracer record`'s arguments.
#[derive(clap::Args, Debug)]
pub struct RecordArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Trace file to write (created with mode 0600; argv is recorded and can hold secrets).
    #[arg(short, long, value_name = "FILE")]
    pub output: std::path::PathBuf,
    #[arg(long, value_enum, value_name = "SCOPE", default_value_t = Snapshot::Followed, help = SNAPSHOT_HELP)]
    pub snapshot: Snapshot,
}

/// `--snapshot`'s help, the same for `record`, `tui --record` and `agent`.
const SNAPSHOT_HELP: &str = "Which processes the recording's /proc snapshot of the start \
    holds: followed (what is followed, its ancestors, and the container runtime's processes: \
    containerd, shims, runc, crio, dockerd, kubelet) or all (every process on the host, other \
    users' command lines included; --all records it always)";

/// `--snapshot`: which processes a recording's start snapshot holds.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Snapshot {
    Followed,
    All,
}

#[cfg(feature = "capture")]
impl From<Snapshot> for tracer::capture::procfs::SnapshotScope {
    fn from(s: Snapshot) -> Self {
        use tracer::capture::procfs::SnapshotScope;
        match s {
            Snapshot::Followed => SnapshotScope::Followed,
            Snapshot::All => SnapshotScope::All,
        }
    }
}

#[derive(Parser, Debug)]
#[command(
    name = "tracer",
    version,
    about = "eBPF process-lineage tracer for container hosts"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Which processes a live command follows.
#[derive(clap::Args, Debug, Clone)]
pub struct TargetArgs {
    /// Follow this process and everything it creates from now on.
    #[arg(short, long, conflicts_with = "all")]
    pub pid: Option<u32>,
    /// Trace every process on the host.
    #[arg(short, long)]
    pub all: bool,
    /// Stop after this many seconds.
    #[arg(long, value_name = "SECS")]
    pub duration: Option<f64>,
    /// Ring-buffer size in bytes (power of two, at least a page).
    #[arg(long, value_name = "BYTES", default_value_t = tracer_common::DEFAULT_RING_BYTES)]
    pub ring_bytes: u32,
    /// Also attach the syscall tracepoints: every clone/execve/exit/prctl call with its
    /// arguments and result, failed execs included, like strace. Costs every syscall on the
    /// host some 10% while attached; the lineage is the same without.
    #[arg(long)]
    pub syscalls: bool,
    /// Which generated signals to record: default (those that end, stop, continue or reap a
    /// process: SIGCHLD, SIGKILL, SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGABRT, SIGSEGV, SIGBUS,
    /// SIGILL, SIGFPE, SIGSYS, SIGPIPE, SIGSTOP, SIGCONT), all (every signal, e.g. Go's
    /// SIGURG, one per goroutine preemption), or none.
    #[arg(long, value_enum, value_name = "SET", default_value_t = Signals::Default)]
    pub signals: Signals,
    /// Command to start and follow from its first instruction (after `--`).
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// `--signals`: which generated signals a live capture records.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signals {
    Default,
    All,
    None,
}

#[cfg(feature = "capture")]
impl From<Signals> for tracer::capture::SignalSet {
    fn from(s: Signals) -> Self {
        use tracer::capture::SignalSet;
        match s {
            Signals::Default => SignalSet::Default,
            Signals::All => SignalSet::All,
            Signals::None => SignalSet::None,
        }
    }
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputFormat {
    Text,
    Json,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Print lifecycle events as they happen, like `strace -f -e trace=clone,execve,exit_group,prctl`.
    Trace {
        #[command(flatten)]
        target: TargetArgs,
        /// text: strace-like lines; json: one JSON object per event.
        #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
        format: OutputFormat,
        /// Prefix text lines with the event sequence number.
        #[arg(long)]
        seq: bool,
        /// Write events here instead of stdout.
        #[arg(short, long, value_name = "FILE")]
        output: Option<std::path::PathBuf>,
    },
    /// The process tree a recording leads to: kernel parents, roles, adoptions, threads.
    Tree {
        /// A trace file or an `strace -f` log (told apart by content); `-` reads stdin;
        /// `nats://HOST:PORT/NODE` a node's stream (`nats://HOST:PORT/*` with `--pod`).
        file: std::path::PathBuf,
        #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
        format: OutputFormat,
        /// The tree as it was right after this event sequence number.
        #[arg(long, value_name = "SEQ")]
        at: Option<u64>,
        /// Leave exited processes out of the text tree.
        #[arg(long)]
        hide_exited: bool,
        /// Only the processes the recording saw act, and their ancestors (not the rest of the
        /// start snapshot).
        #[arg(long)]
        traced: bool,
        /// Text tree: only the subtree of this process (the newest with that pid); how to see
        /// what lies below the depth the full tree stops drawing at. The JSON lists every
        /// process anyway.
        #[arg(long, value_name = "PID", conflicts_with = "traced")]
        root: Option<u32>,
        /// Only the processes of this pod (its name or `namespace/name`, as its bundles'
        /// Kubernetes annotations name it) and their ancestors; with `nats://HOST:PORT/*`, on
        /// every node that has it.
        #[arg(long, value_name = "NAME", conflicts_with_all = ["traced", "root"])]
        pod: Option<String>,
    },
    /// The container births in a recording, step by step, each with the event that proves it.
    Story {
        /// A trace file or an `strace -f` log (told apart by content); `-` reads stdin;
        /// `nats://HOST:PORT/NODE` a node's stream (`nats://HOST:PORT/*` with `--pod`).
        file: std::path::PathBuf,
        #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
        format: OutputFormat,
        /// Explain each step: the kernel rule or runtime design behind it, and where it lives
        /// (JSON: `why` and `why_source` on every step).
        #[arg(long)]
        explain: bool,
        /// Only the births of this pod's containers (its name or `namespace/name`); with
        /// `nats://HOST:PORT/*`, on every node that has it.
        #[arg(long, value_name = "NAME")]
        pod: Option<String>,
    },
    /// Record lifecycle events to a trace file (format: docs/trace-format.md).
    Record(RecordArgs),
    /// Replay a trace file (or strace log) through the lineage engine, printing strace-like lines.
    Replay(replay::ReplayArgs),
    /// Convert a trace file (or strace log) to JSON lines, Perfetto JSON or Graphviz.
    Export(export::ExportArgs),
    /// Convert an `strace -f` log into a trace file.
    ImportStrace(import::ImportArgs),
    /// Live terminal viewer: process tree, lineage, event log, container stories (the default).
    Tui {
        #[command(flatten)]
        target: TargetArgs,
        /// Also write everything captured to this trace file.
        #[arg(long, value_name = "FILE")]
        record: Option<std::path::PathBuf>,
        #[arg(long, value_enum, value_name = "SCOPE", default_value_t = Snapshot::Followed, requires = "record", help = SNAPSHOT_HELP)]
        snapshot: Snapshot,
    },
    /// Replay a recording (trace file or strace -f log) in the terminal viewer; a node's NATS
    /// stream is followed live.
    View {
        /// A trace file or an `strace -f` log; `-` reads stdin; `nats://HOST:PORT/NODE` shows
        /// the node's stream from its start, then follows its tail.
        file: std::path::PathBuf,
        /// Playback speed relative to the recorded timing.
        #[arg(long, default_value_t = 1.0)]
        speed: f64,
        /// Start paused (step with `.`).
        #[arg(long)]
        paused: bool,
        /// Start at the end (the final tree) instead of playing from the first event.
        #[arg(long)]
        end: bool,
        /// Guided: open paused at the first container-birth step with its explanation;
        /// `]` / `[` move between steps.
        #[arg(long)]
        guided: bool,
        /// Only this pod (its name or `namespace/name`): its processes and their ancestors,
        /// its containers' stories. With `nats://HOST:PORT/*`: the node that has it.
        #[arg(long, value_name = "NAME")]
        pod: Option<String>,
    },
    /// Headless capture on this node, published to NATS JetStream, with Prometheus metrics
    /// (docs/nats.md).
    #[cfg(feature = "agent")]
    Agent(agent::AgentArgs),
    /// Replay the bundled recording of a containerd lab (no root, no BPF needed).
    Demo(demo::DemoArgs),
    /// Print a shell completion script: `tracer completions bash > /etc/bash_completion.d/tracer`.
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff) on stdout; the node package installs it as tracer(1).
    #[command(hide = true)]
    Manpage,
}

/// Errors that mean "this machine or user cannot do that" exit with 2; others with 1.
pub fn exit_code_for(e: &anyhow::Error) -> u8 {
    #[cfg(feature = "capture")]
    if let Some(c) = e.downcast_ref::<tracer::capture::CaptureError>() {
        use tracer::capture::CaptureError as C;
        if matches!(
            c,
            C::MissingPrivilege(_) | C::KernelFeature(_) | C::NoProbes
        ) {
            return 2;
        }
    }
    let _ = e;
    1
}

pub fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        None => tui::live(tui::default_target(), None, Snapshot::Followed),
        Some(Command::Tui {
            target,
            record,
            snapshot,
        }) => tui::live(target, record, snapshot),
        Some(Command::View {
            file,
            speed,
            paused,
            end,
            guided,
            pod,
        }) => tui::view(
            &file,
            speed,
            tui::ViewOpts {
                paused,
                at_end: end,
                guided,
                pod,
            },
        ),
        Some(Command::Tree {
            file,
            format,
            at,
            hide_exited,
            traced,
            root,
            pod,
        }) => lineage::tree(lineage::TreeArgs {
            file: &file,
            format,
            at,
            hide_exited,
            traced,
            root,
            pod: pod.as_deref(),
        })
        .map(|()| ExitCode::SUCCESS),
        Some(Command::Story {
            file,
            format,
            explain,
            pod,
        }) => lineage::story(lineage::StoryArgs {
            file: &file,
            format,
            explain,
            pod: pod.as_deref(),
        })
        .map(|()| ExitCode::SUCCESS),
        Some(Command::Trace {
            target,
            format,
            seq,
            output,
        }) => {
            #[cfg(feature = "capture")]
            {
                trace::run(target, format, seq, output)
            }
            #[cfg(not(feature = "capture"))]
            {
                let _ = (target, format, seq, output);
                anyhow::bail!("this tracer was built without live capture (feature `capture` off)")
            }
        }
        Some(Command::Record(args)) => record_command(args),
        Some(Command::Replay(args)) => replay::replay(args),
        Some(Command::Export(args)) => export::export(args),
        Some(Command::ImportStrace(args)) => import::import_strace(args),
        Some(Command::Demo(args)) => demo::run(args),
        Some(Command::Completions { shell }) => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut cmd, "tracer", &mut std::io::stdout());
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Manpage) => {
            let cmd = <Cli as clap::CommandFactory>::command();
            clap_mangen::Man::new(cmd).render(&mut std::io::stdout())?;
            Ok(ExitCode::SUCCESS)
        }
        #[cfg(feature = "agent")]
        Some(Command::Agent(args)) => agent::run(args),
    }
}

/// `tracer record`, or why this build cannot.
fn record_command(args: RecordArgs) -> Result<std::process::ExitCode> {
    #[cfg(feature = "capture")]
    {
        record::run(args)
    }
    #[cfg(not(feature = "capture"))]
    {
        let _ = args;
        anyhow::bail!("this tracer was built without live capture (feature `capture` off)")
    }
}
