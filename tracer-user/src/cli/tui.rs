//! `tracer` (no subcommand), `tracer tui` and `tracer view`: the terminal viewer.

use super::TargetArgs;
use anyhow::Result;
use std::path::Path;
use std::process::ExitCode;
use tracer::clock::Clock;
use tracer::lineage::PodScope;
use tracer::tui::ReplayOpts;

/// How `tracer view` (and `replay` on a terminal) opens a recording.
#[derive(Clone, Debug, Default)]
pub struct ViewOpts {
    /// Start paused.
    pub paused: bool,
    /// Start at the end.
    pub at_end: bool,
    /// Start paused after the event with this sequence number (`--at SEQ`).
    pub at: Option<u64>,
    /// Guided: paused at the first story step, explanations shown.
    pub guided: bool,
    /// `--story`: guided, opened at the story it selects.
    pub story: Option<String>,
    /// `--quiz`: guided, as a quiz.
    pub quiz: bool,
    /// On a corrupt file, show every good frame before the damage.
    pub salvage: bool,
    /// Only this pod.
    pub pod: Option<tracer::lineage::PodQuery>,
    /// Threads hidden (`--no-threads`).
    pub no_threads: bool,
    /// Print the first frame at this size instead of opening the viewer (`--screenshot`).
    pub screenshot: Option<tracer::tui::ScreenSize>,
}

impl ViewOpts {
    fn replay_opts(&self, speed: f64, sched_probes: bool, clock: Clock) -> ReplayOpts {
        ReplayOpts {
            clock,
            speed,
            paused: self.paused,
            at_end: self.at_end,
            at: self.at,
            sched_probes,
            guided: self.guided,
            story: None,
            quiz: self.quiz,
            no_threads: self.no_threads,
        }
    }
}

/// The index, among the stories a view shows (its pod's when scoped), of the one `--story`
/// selects in the recording `engine` holds.
pub fn story_index(
    file: &Path,
    engine: &tracer::Engine,
    pod: Option<&tracer::lineage::SelectedPod>,
    sel: &str,
) -> Result<usize> {
    let mut stories = tracer::lineage::stories(engine);
    if let Some(p) = pod {
        stories.retain(|st| tracer::lineage::story_in_pod(st, p));
    }
    super::lineage::pick_story(&stories, sel, file)
}

/// `tracer view FILE`: replay a recording (trace file or strace log) in the viewer; a node's
/// NATS stream is followed live.
pub fn view(file: &Path, speed: f64, v: ViewOpts) -> Result<ExitCode> {
    if !(speed.is_finite() && speed > 0.0) {
        anyhow::bail!("--speed must be a positive number");
    }
    #[cfg(feature = "nats")]
    if let Some(src) = super::reading::all_nodes(file)? {
        return view_across(&src, speed, v);
    }
    let (file, _) = &super::reading::one_source(file, v.pod.as_ref())?;
    #[cfg(feature = "nats")]
    if let Some(url) = file
        .to_str()
        .filter(|s| tracer::nats::NatsSource::is_nats(s))
    {
        return view_followed(url, speed, v);
    }
    let mut input = super::reading::open_input(file)?;
    let sched_probes = input.sched_probes();
    let seed = input.snapshot();
    let mut events = tracer::tracefile::PackedEvents::new();
    let want_engine = v.pod.is_some() || v.story.is_some();
    let mut pod_engine = want_engine.then(|| tracer::Engine::seeded(&seed));
    let mut cut = None;
    while let Some(ev) = input.next_event() {
        match ev {
            Ok(ev) => {
                if let Some(e) = pod_engine.as_mut() {
                    e.apply(&ev);
                }
                events.push(&ev);
            }
            // A recording killed mid-write (or damaged, with --salvage): every whole frame is
            // shown.
            Err(e) if v.salvage || e.is_truncation() => {
                cut = Some(e);
                break;
            }
            Err(e) => return Err(e.into()),
        }
    }
    let pod = match (&v.pod, &pod_engine) {
        (Some(q), Some(e)) => Some(super::reading::select_pod(file, e, q)?),
        _ => None,
    };
    let story = match (&v.story, &pod_engine) {
        (Some(sel), Some(e)) => Some(story_index(file, e, pod.as_ref(), sel)?),
        _ => None,
    };
    let pod = pod.map(PodScope::Found);
    let title = file.file_name().map_or_else(
        || file.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let opts = ReplayOpts {
        story,
        ..v.replay_opts(speed, sched_probes, input.clock())
    };
    let rec = tracer::tui::Recording {
        events,
        seed,
        title,
        tail: None,
        pod,
    };
    if let Some(size) = v.screenshot {
        super::output::print_screenshot(&tracer::tui::screenshot(rec, &opts, size))?;
        return Ok(ExitCode::SUCCESS);
    }
    let quiz = tracer::tui::run_replay(rec, opts)?;
    say_score(&quiz);
    // Said once the terminal is back: what of the input could not be shown.
    super::output::print_input_notes(&input, cut.is_some());
    if let Some(e) = cut {
        tracer::say!(
            "tracer: warning: {e} (the recording was interrupted or damaged; every whole frame before it was shown)"
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The quiz's score, once the terminal is back (nothing when no question was judged).
pub fn say_score(quiz: &tracer::tui::quiz::Quiz) {
    if quiz.asked > 0 {
        tracer::say!("tracer: quiz: {} of {} right", quiz.right, quiz.asked);
    }
}

/// `tracer view nats://HOST:PORT/NODE`: the node's stream from its start, then its tail as
/// it is published, until `q`.
#[cfg(feature = "nats")]
fn view_followed(url: &str, speed: f64, v: ViewOpts) -> Result<ExitCode> {
    if v.story.is_some() {
        anyhow::bail!("--story is for a stored recording: a followed stream's stories grow");
    }
    let (rec, opts) = followed_recording(url, tracer::input::follow_nats(url)?, speed, &v);
    say_score(&tracer::tui::run_replay(rec, opts)?);
    Ok(ExitCode::SUCCESS)
}

/// A followed node's stream `f` (from `url`) as the viewer's recording, with its options.
#[cfg(feature = "nats")]
fn followed_recording(
    url: &str,
    f: tracer::input::Followed,
    speed: f64,
    v: &ViewOpts,
) -> (tracer::tui::Recording, tracer::tui::ReplayOpts) {
    let opts = v.replay_opts(speed, f.sched_probes, f.clock);
    let rec = tracer::tui::Recording {
        events: f.history,
        seed: f.seed,
        title: url.to_string(),
        tail: Some(f.tail),
        pod: v.pod.clone().map(PodScope::Typed),
    };
    (rec, opts)
}

/// `tracer view nats://HOST:PORT/*`: the one node holding the pod or namespace followed, or
/// several one at a time ([`view_nodes`]).
#[cfg(feature = "nats")]
fn view_across(src: &tracer::nats::NatsSource, speed: f64, v: ViewOpts) -> Result<ExitCode> {
    let found = super::reading::nodes_with_pod(src, v.pod.as_ref(), None, false)?;
    let mut names: Vec<String> = found.into_iter().map(|(n, _)| n).collect();
    if names.len() > 1 {
        names.sort();
        return view_nodes(src, &names, speed, v);
    }
    let url = names.first().map(|n| src.with_node(n)).unwrap_or_default();
    view_followed(&url, speed, v)
}

/// `tracer view nats://HOST:PORT/* -n NS` where several nodes hold the pod or namespace:
/// one node at a time (pids of different nodes collide), each followed as
/// [`view_followed`] follows one, `{`/`}` switching in node-name order (`names`, sorted).
#[cfg(feature = "nats")]
fn view_nodes(
    src: &tracer::nats::NatsSource,
    names: &[String],
    speed: f64,
    v: ViewOpts,
) -> Result<ExitCode> {
    if v.story.is_some() {
        anyhow::bail!("--story is for a stored recording: a followed stream's stories grow");
    }
    let urls: Vec<String> = names.iter().map(|n| src.with_node(n)).collect();
    let mut open = |i: usize| {
        let url = urls.get(i).map(String::as_str).unwrap_or_default();
        // On a thread of its own: the follow reads the stream's start blocking, which the
        // viewer's runtime may not do.
        let f = std::thread::scope(|s| s.spawn(|| tracer::input::follow_nats(url)).join())
            .map_err(|_| format!("{}: reading the stream failed", tracer::escape::escape(url)))?
            .map_err(|e| format!("{:#}", anyhow::Error::new(e)))?;
        Ok(followed_recording(url, f, speed, &v))
    };
    if let Some(size) = v.screenshot {
        let (rec, opts) = open(0).map_err(anyhow::Error::msg)?;
        let node = tracer::tui::NodePlace {
            name: names.first().cloned().unwrap_or_default(),
            at: 0,
            of: names.len(),
            switch_to: None,
        };
        let shot = tracer::tui::screenshot_node(rec, &opts, size, Some(node));
        super::output::print_screenshot(&shot)?;
        return Ok(ExitCode::SUCCESS);
    }
    say_score(&tracer::tui::run_nodes(names, &mut open)?);
    Ok(ExitCode::SUCCESS)
}

/// `tracer tui`'s arguments: what to follow, and what the live view shows and records.
#[derive(clap::Args, Debug)]
pub struct LiveArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Also write everything captured to this trace file.
    #[arg(long, value_name = "FILE")]
    pub record: Option<std::path::PathBuf>,
    /// `--pod`, `-n`, `--container`, their help said for a live view (`LIVE_POD_HELP`).
    #[command(flatten)]
    pub pod: super::PodArgs,
    /// Hide threads (their lines in the event log, their rows in the tree); `T` toggles.
    #[arg(long)]
    pub no_threads: bool,
    #[arg(long, value_enum, value_name = "SCOPE", default_value_t = super::Snapshot::Followed, requires = "record", help = super::SNAPSHOT_HELP)]
    pub snapshot: super::Snapshot,
}

impl LiveArgs {
    /// `tracer` with no subcommand: every process (`--all`), nothing recorded, no pod.
    pub fn everything() -> LiveArgs {
        LiveArgs {
            target: TargetArgs {
                pid: None,
                all: true,
                duration: None,
                ring_bytes: tracer_common::DEFAULT_RING_BYTES,
                syscalls: false,
                signals: super::Signals::Default,
                follow_forks: false,
                command: Vec::new(),
            },
            record: None,
            pod: super::PodArgs::default(),
            no_threads: false,
            snapshot: super::Snapshot::Followed,
        }
    }
}

/// `tracer tui --pod`'s help: a live view matches the pod exactly as the capture shows it.
pub const LIVE_POD_HELP: &str = "Only this pod (`namespace/name`, `name`, its uid or its full \
    sandbox id): the view stays empty until the pod appears, then shows its processes and \
    their ancestors and its containers' stories";

/// `tracer tui --container`'s help.
pub const LIVE_CONTAINER_HELP: &str = "With --pod: only this container of the pod (its name in \
    the pod spec): the view stays empty until it appears, then shows its processes and their \
    ancestors and its stories";

/// `--record FILE` of the live view: every captured batch goes into a trace file. The file
/// is created first (so a bad path fails before the viewer starts); the header is written
/// once the capture has started, with the layouts and probe set it chose.
#[cfg(feature = "capture")]
struct FileRecorder {
    pending: Option<(std::fs::File, tracer::tracefile::Header)>,
    writer: Option<tracer::tracefile::TraceWriter<std::fs::File>>,
}

#[cfg(feature = "capture")]
impl FileRecorder {
    fn create(
        path: &Path,
        target: &tracer::capture::Target,
        ring_bytes: u32,
        scope: super::Snapshot,
    ) -> Result<Self> {
        use anyhow::Context;
        let file = tracer::outfile::create_streaming(path)
            .with_context(|| format!("cannot create {}", tracer::escape::path(path)))?;
        let header = tracer::capture::header_for(target, ring_bytes, scope.into());
        Ok(FileRecorder {
            pending: Some((file, header)),
            writer: None,
        })
    }
}

#[cfg(feature = "capture")]
impl tracer::tui::Recorder for FileRecorder {
    fn begin(&mut self, facts: &tracer::source::SourceFacts) -> std::io::Result<()> {
        let Some((file, mut header)) = self.pending.take() else {
            return Ok(());
        };
        facts.add_to(&mut header);
        let w =
            tracer::tracefile::TraceWriter::new(file, &header).map_err(std::io::Error::other)?;
        self.writer = Some(w);
        Ok(())
    }

    fn record(&mut self, batch: &[tracer::Event]) -> std::io::Result<()> {
        let Some(w) = self.writer.as_mut() else {
            return Ok(());
        };
        for ev in batch {
            w.write_event(ev).map_err(std::io::Error::other)?;
        }
        w.maybe_flush().map_err(std::io::Error::other)?;
        Ok(())
    }

    fn finish(&mut self, c: tracer::source::Counters) -> std::io::Result<()> {
        if let Some(mut w) = self.writer.take() {
            w.set_counters(c.drops, c.seq_issued, c.decode_errors);
            w.finish().map_err(std::io::Error::other)?;
        }
        Ok(())
    }
}

/// `tracer tui [--pid PID | --all | -- CMD] [--record FILE]`: the live view.
pub fn live(live: LiveArgs) -> Result<ExitCode> {
    let pod = live.pod.query();
    let LiveArgs {
        target: mut args,
        record,
        snapshot,
        no_threads,
        ..
    } = live;
    if args.duration.is_some() {
        anyhow::bail!("--duration is for `tracer trace`; the viewer runs until `q`");
    }
    if args.pid.is_none() && args.command.is_empty() {
        args.all = true;
    }
    #[cfg(feature = "capture")]
    {
        use anyhow::Context;
        let target = super::trace::target_of(&args)?;
        tracer::capture::check_privileges()?;
        let recorder: Option<Box<dyn tracer::tui::Recorder>> = match &record {
            Some(path) => Some(Box::new(FileRecorder::create(
                path,
                &target,
                args.ring_bytes,
                snapshot,
            )?)),
            None => None,
        };
        let mut opts = tracer::tui::LiveOpts {
            title: live_title(&target),
            seed_scope: target.seed_scope(),
            recorder,
            record_path: record.clone(),
            pod,
            no_threads,
            ..Default::default()
        };
        // Before the capture starts (and runs a command): the viewer needs the terminal.
        tracer::tui::require_terminal().context("live view")?;
        let (target, note) = command_off_terminal(target);
        opts.note = note;
        let rt = tracer::tui::runtime().context("live view")?;
        rt.block_on(async move {
            // Started on the viewer's runtime, whose reactor reads its ring buffer.
            let cap = tracer::capture::CaptureBuilder::new(target)
                .ring_bytes(args.ring_bytes)
                .syscalls(args.syscalls)
                .signals(args.signals.into())
                .start()
                .map_err(capture_failed)?;
            opts.sched_probes = !cap.syscall_probes();
            tracer::tui::run_live(cap, opts).await.context("live view")
        })?;
        Ok(ExitCode::SUCCESS)
    }
    #[cfg(not(feature = "capture"))]
    {
        let _ = (args, record, snapshot, pod, no_threads);
        anyhow::bail!(
            "this tracer was built without live capture (feature `capture` off); `tracer view FILE` replays a recording"
        )
    }
}

/// The live view's title on the status bar: `all`, `pid 4082`, `cmd …`.
#[cfg(feature = "capture")]
fn live_title(target: &tracer::capture::Target) -> String {
    use tracer::capture::Target;
    match target {
        Target::All => "all".to_string(),
        Target::Pid(p) => format!("pid {p}"),
        Target::Command(c) => format!("cmd {}", c.join(" ")),
    }
}

/// The viewer owns the terminal: a command gets /dev/null for its stdio (through a shell
/// that execs it, so the followed pid is the command's own); the note says so.
#[cfg(feature = "capture")]
fn command_off_terminal(
    target: tracer::capture::Target,
) -> (tracer::capture::Target, Option<String>) {
    use tracer::capture::Target;
    let Target::Command(argv) = target else {
        return (target, None);
    };
    let shell = [
        "/bin/sh",
        "-c",
        "exec \"$@\" </dev/null >/dev/null 2>&1",
        "sh",
    ];
    let mut wrapped: Vec<String> = shell.iter().map(|s| s.to_string()).collect();
    wrapped.extend(argv);
    let note = "the command's stdin/stdout/stderr are /dev/null";
    (Target::Command(wrapped), Some(note.to_string()))
}

/// A capture that could not start, in one line that says why and what works without root
/// (a missing privilege keeps its exit code 2).
#[cfg(feature = "capture")]
fn capture_failed(e: tracer::capture::CaptureError) -> anyhow::Error {
    use tracer::capture::CaptureError;
    match e {
        CaptureError::MissingPrivilege(m) => anyhow::Error::new(CaptureError::MissingPrivilege(
            format!("{m}; `tracer view FILE` replays a recording without"),
        )),
        e => anyhow::Error::new(e).context("live view"),
    }
}
