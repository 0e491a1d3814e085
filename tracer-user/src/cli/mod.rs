//! Argument parsing and dispatch for the `tracer` binary.

#[cfg(all(feature = "agent", feature = "capture"))]
mod agent;
mod demo;
mod export;
mod import;
mod kubectl;
mod lineage;
mod lines;
#[cfg(feature = "nats")]
mod nodes;
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
    /// A bare format word (`-o json`) is refused: that is `--format`.
    #[arg(short, long, value_name = "FILE")]
    pub output: std::path::PathBuf,
    #[arg(long, value_enum, value_name = "SCOPE", default_value_t = Snapshot::Followed, help = SNAPSHOT_HELP)]
    pub snapshot: Snapshot,
    /// `--pod`, `-n`, `--container`: only that pod's events are written (`LIVE_SCOPE_HELP`).
    #[command(flatten)]
    pub pod: PodArgs,
}

/// `--pod`'s help for `trace`, `record` and `agent`: the capture keeps one pod's events.
pub const LIVE_SCOPE_HELP: &str = "Only this pod's events (`namespace/name`, `name`, its uid \
    or its full sandbox id, as its bundles' annotations name it; the pod need not exist yet): \
    from its sandbox's first runtime exec on, its processes and the runtime's and shims' that \
    act for it. Without --pid or -- CMD every process is followed and the others' events are \
    left out; a recording's header says the scope";

/// `--container`'s help for `trace`, `record` and `agent`.
pub const LIVE_SCOPE_CONTAINER_HELP: &str = "With --pod or -n: only this container's events \
    (its name in the pod spec)";

/// `--snapshot`'s help, the same for `record`, `tui --record` and `agent`.
const SNAPSHOT_HELP: &str = "Which processes the recording's /proc snapshot of the start \
    holds: followed (what is followed, its ancestors, and the container runtime's processes: \
    containerd, shims, runc, crio, dockerd, kubelet) or all (every process on the host, other \
    users' command lines included; --all records it always)";

/// `--story`'s help, the same for `story`, `export`, `view` and `demo`.
pub const STORY_HELP: &str = "Only one story: N (its number, as `tracer story` heads it; \
    with --pod, among that pod's stories), CONTAINER (a container's name, or its id or a \
    prefix of it: its first story), CONTAINER:KIND (`hog:death`: that container's story of \
    that phase) or KIND (birth, exec, death, restart: the first story of that phase). A \
    story the recording does not hold is an error that lists what it has";

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
    /// Read NATS streams pinning each node to the key this file names (lines `NODE KEY`, the
    /// public keys agents print at their start): a segment or heartbeat under another key is
    /// forged. Without it, a node's first key read is pinned, and said.
    #[cfg(feature = "nats")]
    #[arg(long, global = true, value_name = "FILE")]
    pub trust_keys: Option<std::path::PathBuf>,
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
    #[arg(long, value_name = "BYTES", default_value_t = tracer_common::DEFAULT_RING_BYTES,
          value_parser = ring_bytes)]
    pub ring_bytes: u32,
    /// Accepted for strace's sake and ignored: every child, thread and exec of a followed
    /// process is always followed (strace -f).
    #[arg(short = 'f', long = "follow-forks")]
    pub follow_forks: bool,
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

/// `--ring-bytes`: a power of two of at least a page, said at parse time (the probes' ring
/// buffer is a power-of-two multiple of the page size: BPF_MAP_TYPE_RINGBUF).
fn ring_bytes(s: &str) -> Result<u32, String> {
    let n: u32 = s.parse().map_err(|e| format!("{e}"))?;
    let page = page_size();
    if n.is_power_of_two() && n >= page {
        Ok(n)
    } else {
        Err(format!(
            "must be a power of two of at least a page ({page} bytes), e.g. {}",
            n.max(page).checked_next_power_of_two().unwrap_or(1 << 31)
        ))
    }
}

/// This machine's page size.
fn page_size() -> u32 {
    // SAFETY: sysconf has no preconditions and reads no memory of ours.
    let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u32::try_from(v).ok().filter(|&p| p > 0).unwrap_or(4096)
}

/// `--pod`, `-n`, `--container`: one pod of a recording (and one container of it), or every
/// pod of a namespace (`-n` alone), the same rule for every command; no such pod is an error.
#[derive(clap::Args, Debug, Clone, Default)]
#[group(skip)]
#[command(group = clap::ArgGroup::new("pod_or_namespace").args(["pod", "namespace"]).multiple(true))]
pub struct PodArgs {
    /// Only this pod: `namespace/name`, `name`, its uid, or its sandbox id or a unique prefix
    /// of it (as `crictl pods` prints); with `nats://HOST:PORT/*`, the node that has it. A
    /// pod the recording does not hold is an error.
    #[arg(long, value_name = "POD", value_parser = clap::builder::NonEmptyStringValueParser::new())]
    pub pod: Option<String>,
    /// Only pods of this Kubernetes namespace; alone (no --pod), every pod of it.
    #[arg(short = 'n', long, value_name = "NS", value_parser = clap::builder::NonEmptyStringValueParser::new())]
    pub namespace: Option<String>,
    /// With --pod or -n: only this container of the pod (its name in the pod spec): its
    /// processes and their ancestors, its stories; printed or exported, its events.
    #[arg(long, value_name = "NAME", requires = "pod_or_namespace")]
    pub container: Option<String>,
}

impl PodArgs {
    /// The query, when `--pod` or `-n` was given (`-n` alone: every pod of the namespace).
    pub fn query(&self) -> Option<tracer::lineage::PodQuery> {
        if self.pod.is_none() && self.namespace.is_none() {
            return None;
        }
        Some(tracer::lineage::PodQuery {
            pod: self.pod.clone().unwrap_or_default(),
            namespace: self.namespace.clone(),
            container: self.container.clone(),
        })
    }
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
    /// For people: lines and trees.
    Text,
    /// For programs: one JSON document (`trace`: one object per line).
    Json,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Print lifecycle events as they happen, like `strace -f -e trace=clone,execve,exit_group,prctl`
    /// (children are always followed).
    #[command(
        mut_arg("pod", |a| a.help(LIVE_SCOPE_HELP)),
        mut_arg("container", |a| a.help(LIVE_SCOPE_CONTAINER_HELP))
    )]
    Trace {
        #[command(flatten)]
        target: TargetArgs,
        /// text: strace-like lines; json: one JSON object per event.
        #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
        format: OutputFormat,
        /// Prefix text lines with the event sequence number.
        #[arg(long)]
        seq: bool,
        /// Write events here instead of stdout (a bare format word, `-o json`, is refused:
        /// that is `--format`).
        #[arg(short, long, value_name = "FILE")]
        output: Option<std::path::PathBuf>,
        /// Also write the same events to this trace file, as `tracer record -o FILE` does (one
        /// capture: the lines and the file hold the same events).
        #[arg(long, value_name = "FILE")]
        record: Option<std::path::PathBuf>,
        // Only one pod's events (`LIVE_SCOPE_HELP`).
        #[command(flatten)]
        pod: PodArgs,
        #[command(flatten)]
        lines: lines::LineArgs,
    },
    /// The process tree a recording leads to: kernel parents, roles, adoptions, threads.
    Tree {
        /// A trace file or an `strace -f` log (told apart by content); `-` reads stdin;
        /// `demo:NAME` a bundled demo; `nats://HOST:PORT/NODE` a node's stream
        /// (`nats://HOST:PORT/*` with `--pod`).
        file: std::path::PathBuf,
        /// The other files of an `strace -ff -o PREFIX` set, given one by one (`PREFIX.*`);
        /// the set can also be named by PREFIX alone.
        #[arg(value_name = "MORE")]
        more: Vec<std::path::PathBuf>,
        /// text: a pstree-like tree with roles, adoptions and exits; json: every process with
        /// its lineage (docs/lineage.md).
        #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
        format: OutputFormat,
        /// Write the tree to this file instead of stdout (never through a symlink, never over
        /// another user's file).
        #[arg(short, long, value_name = "FILE")]
        output: Option<std::path::PathBuf>,
        /// The tree as it was right after this event sequence number.
        #[arg(long, value_name = "SEQ")]
        at: Option<u64>,
        /// Leave exited processes out of the text tree.
        #[arg(long)]
        hide_exited: bool,
        /// Only the processes the recording saw act, and their ancestors (not the rest of the
        /// start snapshot).
        #[arg(long, conflicts_with = "pod")]
        traced: bool,
        /// Text tree: only the subtree of this process (the newest with that pid); how to see
        /// what lies below the depth the full tree stops drawing at. The JSON lists every
        /// process anyway.
        #[arg(long, value_name = "PID", conflicts_with_all = ["traced", "pod"])]
        root: Option<u32>,
        // Tree: the pod's (or container's) processes and their ancestors.
        #[command(flatten)]
        pod: PodArgs,
    },
    /// The container births in a recording, step by step, each with the event that proves it.
    Story {
        /// A trace file or an `strace -f` log (told apart by content); `-` reads stdin;
        /// `demo:NAME` a bundled demo; `nats://HOST:PORT/NODE` a node's stream
        /// (`nats://HOST:PORT/*` with `--pod`).
        file: std::path::PathBuf,
        /// The other files of an `strace -ff -o PREFIX` set, given one by one (`PREFIX.*`);
        /// the set can also be named by PREFIX alone.
        #[arg(value_name = "MORE")]
        more: Vec<std::path::PathBuf>,
        /// text: a header per story, a line per step; json: the stories and their steps.
        #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
        format: OutputFormat,
        /// Write the stories to this file instead of stdout (never through a symlink, never
        /// over another user's file).
        #[arg(short, long, value_name = "FILE")]
        output: Option<std::path::PathBuf>,
        /// Explain each step: the kernel rule or runtime design behind it, and where it lives
        /// (JSON: `why` and `why_source` on every step).
        #[arg(long)]
        explain: bool,
        // Stories: only the pod's (or container's), and no runtime restarts.
        #[command(flatten)]
        pod: PodArgs,
        #[arg(long, value_name = "N|CONTAINER|KIND", help = STORY_HELP)]
        story: Option<String>,
    },
    /// Record lifecycle events to a trace file (format: docs/trace-format.md).
    #[command(
        mut_arg("pod", |a| a.help(LIVE_SCOPE_HELP)),
        mut_arg("container", |a| a.help(LIVE_SCOPE_CONTAINER_HELP))
    )]
    Record(RecordArgs),
    /// Replay a trace file (or strace log) through the lineage engine, printing strace-like lines.
    Replay(replay::ReplayArgs),
    /// Convert a trace file (or strace log) to JSON lines, Perfetto JSON, Graphviz, an SVG
    /// timeline or an HTML page.
    Export(export::ExportArgs),
    /// Convert an `strace -f` log into a trace file.
    ImportStrace(import::ImportArgs),
    /// Live terminal viewer: process tree, lineage, event log, container stories (the default).
    #[command(
        mut_arg("pod", |a| a.help(tui::LIVE_POD_HELP)),
        mut_arg("container", |a| a.help(tui::LIVE_CONTAINER_HELP))
    )]
    Tui(tui::LiveArgs),
    /// Replay a recording (trace file or strace -f log) in the terminal viewer; a node's NATS
    /// stream is followed live. The same flags as `replay`.
    View(replay::PlayArgs),
    /// Headless capture on this node, published to NATS JetStream, with Prometheus metrics
    /// (docs/nats.md).
    #[cfg(all(feature = "agent", feature = "capture"))]
    #[command(
        mut_arg("pod", |a| a.help(LIVE_SCOPE_HELP)),
        mut_arg("container", |a| a.help(LIVE_SCOPE_CONTAINER_HELP))
    )]
    Agent(agent::AgentArgs),
    /// Every node that published to a NATS server: its agent's last word, live or silent
    /// since, its pods then, its restarts and deaths of late (docs/nats.md).
    #[cfg(feature = "nats")]
    Nodes(nodes::NodesArgs),
    /// Replay a bundled lab recording (a CRI pod lab by default; no root, no BPF needed), or
    /// write it to a file (`-o`); `demo:NAME` names it wherever a FILE is taken.
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

/// The command line: `tracer`'s, or `kubectl tracer`'s when the binary runs as
/// `kubectl-tracer` (kubectl's plugin, [`kubectl`]).
pub fn parse() -> Result<Cli, clap::Error> {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    match args.first().is_some_and(|a| kubectl::is_plugin(a)) {
        true => kubectl::parse(args, std::env::var_os(kubectl::ENV_NATS)),
        false => Cli::try_parse_from(args),
    }
}

/// What a command line clap did not run means: `--help` and `--version` are printed as every
/// stdout output is (clap would drop a write error: `--help > /dev/full` would say nothing and
/// succeed); a usage error is clap's, on stderr, status 2.
pub fn parse_error(e: clap::Error) -> ExitCode {
    use std::io::IsTerminal;
    if e.use_stderr() {
        e.exit();
    }
    let text = match std::io::stdout().is_terminal() {
        true => e.render().ansi().to_string(),
        false => e.render().to_string(),
    };
    match output::to_stdout(|out| out.write_all(text.as_bytes())) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            tracer::say!("tracer: {err:#}");
            ExitCode::FAILURE
        }
    }
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
    #[cfg(feature = "nats")]
    if let Some(path) = &cli.trust_keys {
        tracer::nats::sign::trust(tracer::nats::sign::TrustedKeys::load(path)?);
    }
    match cli.command {
        None => tui::live(tui::LiveArgs::everything()),
        Some(Command::Tui(args)) => tui::live(args),
        // `nats://HOST:PORT` without a node: the fleet's nodes.
        #[cfg(feature = "nats")]
        Some(Command::View(args))
            if tracer::fleet::server_of(&args.file.to_string_lossy()).is_ok() =>
        {
            nodes::view(&args.file.to_string_lossy(), args.screenshot)
        }
        Some(Command::View(args)) => replay::view(args),
        Some(Command::Tree {
            file,
            more,
            format,
            output,
            at,
            hide_exited,
            traced,
            root,
            pod,
        }) => lineage::tree(lineage::TreeArgs {
            file: &reading::one_recording(&file, &more)?,
            format,
            output: output.as_deref(),
            at,
            hide_exited,
            traced,
            root,
            pod: pod.query(),
        })
        .map(|()| ExitCode::SUCCESS),
        Some(Command::Story {
            file,
            more,
            format,
            output,
            explain,
            pod,
            story,
        }) => lineage::story(lineage::StoryArgs {
            file: &reading::one_recording(&file, &more)?,
            format,
            output: output.as_deref(),
            explain,
            pod: pod.query(),
            story: story.as_deref(),
        })
        .map(|()| ExitCode::SUCCESS),
        Some(Command::Trace {
            target,
            format,
            seq,
            output,
            record,
            pod,
            lines,
        }) => trace_command(target, format, seq, output, record, pod, lines),
        Some(Command::Record(args)) => record_command(args),
        Some(Command::Replay(args)) => replay::replay(args),
        Some(Command::Export(args)) => export::export(args),
        Some(Command::ImportStrace(args)) => import::import_strace(args),
        Some(Command::Demo(args)) => demo::run(args),
        Some(Command::Completions { shell }) => completions(shell),
        Some(Command::Manpage) => {
            let page = manpage()?;
            output::to_stdout(|out| out.write_all(&page))?;
            Ok(ExitCode::SUCCESS)
        }
        #[cfg(all(feature = "agent", feature = "capture"))]
        Some(Command::Agent(args)) => agent::run(args),
        #[cfg(feature = "nats")]
        Some(Command::Nodes(args)) => nodes::run(args),
    }
}

/// `tracer trace`: its output paths checked before the probes load.
fn trace_command(
    target: TargetArgs,
    format: OutputFormat,
    seq: bool,
    output: Option<std::path::PathBuf>,
    record: Option<std::path::PathBuf>,
    pod: PodArgs,
    lines: lines::LineArgs,
) -> Result<ExitCode> {
    for o in output.iter().chain(&record) {
        output::out_path(o)?;
    }
    #[cfg(feature = "capture")]
    {
        trace::run(
            target,
            trace::TraceOpts {
                format,
                seq,
                output,
                record,
                pod,
                lines,
            },
        )
    }
    #[cfg(not(feature = "capture"))]
    {
        let _ = (target, format, seq, output, record, pod, lines);
        anyhow::bail!("this tracer was built without live capture (feature `capture` off)")
    }
}

/// `tracer completions SHELL`.
fn completions(shell: clap_complete::Shell) -> Result<ExitCode> {
    let mut cmd = <Cli as clap::CommandFactory>::command();
    // clap_complete panics when a write fails (`| head -1`, `> /dev/full`): the
    // script is made in memory and written as every other output is.
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, "tracer", &mut script);
    output::to_stdout(|out| out.write_all(&script))?;
    Ok(ExitCode::SUCCESS)
}

/// tracer(1): the command and, in a section each, every subcommand with its synopsis and
/// options — one page, so it points to no other page (clap_mangen's subcommand list names a
/// `tracer-SUB(1)` page per subcommand, which no package ships).
fn manpage() -> std::io::Result<Vec<u8>> {
    let mut cmd = <Cli as clap::CommandFactory>::command().disable_help_subcommand(true);
    cmd.build();
    let man = clap_mangen::Man::new(cmd.clone());
    let mut page = Vec::new();
    man.render_title(&mut page)?;
    man.render_name_section(&mut page)?;
    man.render_synopsis_section(&mut page)?;
    man.render_description_section(&mut page)?;
    man.render_options_section(&mut page)?;
    page.extend_from_slice(b".SH COMMANDS\n");
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
        let line = format!(
            ".TP\n\\fBtracer {}\\fR\n{} (section TRACER {} below)\n",
            roff_text(sub.get_name()),
            roff_text(&about),
            roff_text(&sub.get_name().to_uppercase())
        );
        page.extend_from_slice(line.as_bytes());
    }
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("tracer {}", sub.get_name());
        let sub = sub.clone().bin_name(name.clone());
        let man = clap_mangen::Man::new(sub.clone());
        page.extend_from_slice(format!(".SH \"{}\"\n", name.to_uppercase()).as_bytes());
        // Its own sections become subsections of its one.
        let mut part = Vec::new();
        man.render_description_section(&mut part)?;
        man.render_synopsis_section(&mut part)?;
        if sub.get_arguments().any(|a| !a.is_hide_set()) {
            man.render_options_section(&mut part)?;
        }
        let part = String::from_utf8_lossy(&part).replace(".SH ", ".SS ");
        page.extend_from_slice(part.as_bytes());
    }
    man.render_version_section(&mut page)?;
    Ok(page)
}

/// Text as roff prints it: a backslash escaped, a hyphen a minus, no control dot first.
fn roff_text(s: &str) -> String {
    let s = s.replace('\\', "\\e").replace('-', "\\-");
    match s.starts_with(['.', '\'']) {
        true => format!("\\&{s}"),
        false => s,
    }
}

/// `tracer record`, or why this build cannot.
fn record_command(args: RecordArgs) -> Result<std::process::ExitCode> {
    output::out_path(&args.output)?;
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

#[cfg(test)]
mod tests {
    use super::Cli;
    use clap::CommandFactory;

    /// Every argument of `cmd` and its subcommands without help text, as `path: --arg`.
    fn without_help(cmd: &clap::Command, path: &str, out: &mut Vec<String>) {
        for a in cmd.get_arguments() {
            let builtin = matches!(a.get_id().as_str(), "help" | "version");
            if !builtin && a.get_help().is_none() && a.get_long_help().is_none() {
                out.push(format!("{path}: {}", a.get_id()));
            }
        }
        for sub in cmd.get_subcommands() {
            without_help(sub, &format!("{path} {}", sub.get_name()), out);
        }
    }

    #[test]
    fn every_flag_and_positional_has_help() {
        let mut missing = Vec::new();
        without_help(&Cli::command(), "tracer", &mut missing);
        assert!(missing.is_empty(), "arguments without help: {missing:?}");
    }

    #[test]
    fn the_man_page_holds_every_subcommand_and_option_and_points_to_no_other_page() {
        let page = String::from_utf8(super::manpage().unwrap()).unwrap();
        let cmd = Cli::command();
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            let entry = format!("\\fBtracer {}\\fR", super::roff_text(sub.get_name()));
            assert!(page.contains(&entry), "no {entry} among the commands");
            let heading = format!(".SH \"TRACER {}\"", sub.get_name().to_uppercase());
            let at = page
                .find(&heading)
                .unwrap_or_else(|| panic!("no {heading}"));
            let section = &page[at..];
            let section = &section[..section[1..].find(".SH \"").map_or(section.len(), |e| e + 1)];
            for a in sub.get_arguments().filter(|a| !a.is_hide_set()) {
                if let Some(long) = a.get_long() {
                    // In the options list, where a line starts with it (or with its short
                    // form before it); the synopsis names it too, after '[' or '|'.
                    let want = format!("\\fB\\-\\-{}\\fR", long.replace('-', "\\-"));
                    let listed = section.contains(&format!("\n{want}"))
                        || section.contains(&format!("\\fR, {want}"));
                    assert!(listed, "tracer {}: {want} not listed", sub.get_name());
                }
            }
        }
        assert!(!page.contains("(1)"), "a page is pointed to");
    }

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn a_ring_size_is_a_power_of_two_of_at_least_a_page() {
        let page = super::page_size();
        assert_eq!(super::ring_bytes(&page.to_string()), Ok(page));
        assert_eq!(super::ring_bytes("1048576"), Ok(1 << 20));
        for bad in ["1000", "0", "-1", "x", &(page / 2).to_string(), "3145728"] {
            assert!(super::ring_bytes(bad).is_err(), "{bad}");
        }
    }
}
