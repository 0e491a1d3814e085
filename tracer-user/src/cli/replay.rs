//! `tracer replay`: a recording as strace-like lines, paced, or the interactive view.

use super::reading::{finish_input, open_input, source_and_pod, until_error};
use anyhow::Result;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};
use tracer::escape::escape;
use tracer::input::Input;
use tracer::lineage::PodEvents;
use tracer::stats::StreamStats;

/// How a recording is played: the flags `replay` and `view` share.
#[derive(clap::Args, Debug, Clone)]
pub struct PlayArgs {
    /// A trace file or an strace log (told apart by content); `-` reads stdin; `demo:NAME` a
    /// bundled demo; `nats://HOST:PORT/NODE` a node's stream (`nats://HOST:PORT/*` with
    /// `--pod`; the viewer follows a node's stream live).
    pub file: PathBuf,
    /// The other files of an `strace -ff -o PREFIX` set, given one by one (`PREFIX.*`); the
    /// set can also be named by PREFIX alone.
    #[arg(value_name = "MORE")]
    pub more: Vec<PathBuf>,
    /// Playback speed: 1 = original timing, 2 = twice as fast; printed, 0 = as fast as
    /// possible. Default: 1 in the viewer; printed, 1 when stdout is a terminal, else as fast
    /// as possible.
    #[arg(long, value_name = "X")]
    pub speed: Option<f64>,
    /// One event at a time: the viewer opens paused (`.` steps); printed, Enter prints the
    /// next (reads stdin; EOF runs to the end).
    #[arg(long, visible_alias = "paused")]
    pub step: bool,
    /// Start at the end: the viewer opens on the final tree; printed, no waiting between
    /// events.
    #[arg(long)]
    pub end: bool,
    /// Open the viewer paused at this sequence number: every event up to SEQ applied (the
    /// event log's `#SEQ`; a SEQ between two events opens after the earlier one). With
    /// `--screenshot`, that frame.
    #[arg(long, value_name = "SEQ", conflicts_with_all = ["end", "guided", "story", "quiz"])]
    pub at: Option<u64>,
    /// Guided, in the viewer: open paused at the first container-birth step with its
    /// explanation; `]` / `[` move between steps.
    #[arg(long, conflicts_with_all = ["step", "end"])]
    pub guided: bool,
    /// On a corrupt file, use every good frame before the damage and report the rest.
    #[arg(long)]
    pub salvage: bool,
    // Guided, opened at that story (`STORY_HELP`).
    #[arg(long, value_name = "N|CONTAINER|KIND", conflicts_with_all = ["step", "end"], help = super::STORY_HELP)]
    pub story: Option<String>,
    /// Guided, as a quiz: before an adoption, a CLONE_PARENT clone's parent or a signal's
    /// sender is shown, name the pid (type it, or select it in the tree, then Enter); the
    /// viewer says right or wrong with the kernel rule and keeps the score (`Q` toggles).
    #[arg(long, conflicts_with_all = ["step", "end"])]
    pub quiz: bool,
    // Only the pod's (or container's) events: of its processes and of the shim, runtime and
    // runc stages that started its containers.
    #[command(flatten)]
    pub pod: super::PodArgs,
    /// In the viewer, hide threads (their lines in the event log, their rows in the tree);
    /// `T` toggles.
    #[arg(long)]
    pub no_threads: bool,
    /// Print the viewer's first frame at COLSxROWS as plain text and exit (for the docs).
    #[arg(long, value_name = "COLSxROWS", hide = true)]
    pub screenshot: Option<tracer::tui::ScreenSize>,
}

#[derive(clap::Args, Debug)]
pub struct ReplayArgs {
    #[command(flatten)]
    pub play: PlayArgs,
    /// Print strace-like lines instead of the interactive view (the default when stdout is
    /// not a terminal).
    #[arg(long, conflicts_with_all = ["guided", "story", "quiz", "at"])]
    pub no_tui: bool,
    /// Prefix lines with the event sequence number.
    #[arg(long)]
    pub seq: bool,
    #[command(flatten)]
    pub lines: super::lines::LineArgs,
}

/// `tracer view`: the recording in the viewer, whatever stdout is.
pub fn view(p: PlayArgs) -> Result<ExitCode> {
    let speed = p.speed.unwrap_or(1.0);
    let v = super::tui::ViewOpts {
        paused: p.step,
        at_end: p.end,
        at: p.at,
        guided: p.guided || p.story.is_some() || p.quiz,
        story: p.story.clone(),
        quiz: p.quiz,
        salvage: p.salvage,
        pod: p.pod.query(),
        no_threads: p.no_threads,
        screenshot: p.screenshot,
    };
    super::tui::view(&super::reading::one_recording(&p.file, &p.more)?, speed, v)
}

pub fn replay(args: ReplayArgs) -> Result<ExitCode> {
    let p = args.play;
    let viewer = std::io::stdout().is_terminal() && !args.no_tui && !p.step;
    let shown = p.guided || p.story.is_some() || p.quiz || p.screenshot.is_some() || p.at.is_some();
    if shown || viewer {
        // The same viewer as `tracer view`, at the asked speed.
        let speed = p.speed.filter(|s| *s > 0.0);
        return view(PlayArgs { speed, ..p });
    }
    let file = super::reading::one_recording(&p.file, &p.more)?;
    let (file, keep) = source_and_pod(&file, p.pod.query().as_ref())?;
    let input = open_input(&file)?;
    let opts = PaceOpts {
        speed: if p.end { Some(0.0) } else { p.speed },
        step: p.step,
        seq: args.seq,
        salvage: p.salvage,
        lines: args.lines,
    };
    replay_input(input, &opts, keep.as_ref())?;
    Ok(ExitCode::SUCCESS)
}

/// How `replay_input` paces and prints.
#[derive(Clone, Debug, Default)]
pub struct PaceOpts {
    /// 1 = original timing, 0 = as fast as possible; `None`: 1 on a terminal, else 0.
    pub speed: Option<f64>,
    pub step: bool,
    pub seq: bool,
    pub salvage: bool,
    /// Stamps, names and which lines print.
    pub lines: super::lines::LineArgs,
}

/// Replays an opened input as strace-like lines (the non-interactive view), printing only
/// `keep`'s events when given; returns the engine it fed (with every event), for the tree and
/// stories.
pub fn replay_input(
    mut input: Input,
    args: &PaceOpts,
    keep: Option<&PodEvents>,
) -> Result<tracer::lineage::Engine> {
    print_origin(&input);
    let stdout = std::io::stdout();
    let mut pace = Pace::new(args, stdout.is_terminal());
    let mut out = std::io::BufWriter::with_capacity(64 << 10, stdout.lock());
    let mut engine = input.seeded_engine();
    let mut renderer = args
        .lines
        .renderer(input.clock(), args.seq, input.sched_probes())?;
    let mut stats = StreamStats::default();
    let mut err = None;
    // The first write error: lines stop, the replay still feeds the engine for the summary.
    let mut write_err: Option<std::io::Error> = None;
    let mut shown = 0u64;
    // Every event feeds the counts and the engine; `--pod` only chooses the lines printed.
    for ev in until_error(&mut input, &mut err) {
        stats.observe(&ev);
        engine.apply(&ev);
        if write_err.is_some() || keep.is_some_and(|k| !k.contains(&ev)) {
            continue;
        }
        shown += 1;
        let lines = renderer.render_in(&ev, Some(&engine));
        let written = pace.wait_for(&ev, &mut out).and_then(|()| {
            lines.iter().try_for_each(|line| writeln!(out, "{line}"))?;
            pace.step(!lines.is_empty(), &mut out)
        });
        write_err = written.err();
    }
    if write_err.is_none() {
        write_err = out.flush().err();
    }
    drop(out);
    print_summary(&input, &engine, &stats, keep.map(|k| (shown, k)));
    finish_input(&input, err, args.salvage)?;
    super::output::check_write(write_err.map_or(Ok(()), Err))?;
    Ok(engine)
}

/// Where and how the recording was made, from its header, on stderr.
fn print_origin(input: &Input) {
    let Some(h) = input.header() else { return };
    let or_unknown = |s: &str| {
        if s.is_empty() {
            "?".into()
        } else {
            escape(s).into_owned()
        }
    };
    tracer::say!(
        "tracer: {} recorded on {} (kernel {}), {}, tracer {}, {} processes at start",
        input.path.display(),
        or_unknown(&h.hostname),
        or_unknown(&h.kernel_release),
        escape(&h.mode.to_string()),
        escape(&h.tool_version),
        h.snapshot.len()
    );
}

/// The replay's pace: the recording's own timing scaled by `speed` (0: as fast as possible),
/// or one event at a time on Enter (`--step`, until stdin ends). As in the viewer, each gap
/// between events counts for at most [`MAX_GAP`] and the speed is held to the viewer's range:
/// a forged or broken clock (a 2^63 ns gap) never stalls the replay.
struct Pace {
    speed: f64,
    started: Instant,
    /// The last event's timestamp.
    prev: Option<u64>,
    /// Recording time played so far: the sum of the capped gaps (ns).
    played: u64,
    /// Whether the cap was said (once).
    capped: bool,
    step: bool,
}

/// The longest wait between two printed events, in recording time (the viewer's cap).
const MAX_GAP: Duration = tracer::tui::source::MAX_GAP;

impl Pace {
    fn new(args: &PaceOpts, tty: bool) -> Pace {
        let speed = match args.speed {
            _ if args.step => 0.0,
            Some(s) if s > 0.0 => s.clamp(1.0 / 64.0, 4096.0),
            Some(s) => s,
            None if tty => 1.0,
            None => 0.0,
        };
        Pace {
            speed,
            started: Instant::now(),
            prev: None,
            played: 0,
            capped: false,
            step: args.step,
        }
    }

    /// Sleeps until `ev` is due (what is written so far is flushed first).
    fn wait_for(&mut self, ev: &tracer::Event, out: &mut impl Write) -> std::io::Result<()> {
        if !(self.speed > 0.0 && self.speed.is_finite()) || ev.ts_ns == 0 {
            return Ok(());
        }
        let gap = self.prev.map_or(0, |p| ev.ts_ns.saturating_sub(p));
        self.prev = Some(ev.ts_ns);
        let cap = MAX_GAP.as_nanos() as u64;
        if gap > cap && !std::mem::replace(&mut self.capped, true) {
            tracer::say!(
                "tracer: note: {:.1}s without an event before event {}; each such gap is replayed as {}s",
                gap as f64 / 1e9,
                ev.seq,
                MAX_GAP.as_secs_f64()
            );
        }
        self.played = self.played.saturating_add(gap.min(cap));
        let due = Duration::try_from_secs_f64(self.played as f64 / 1e9 / self.speed)
            .unwrap_or(Duration::MAX);
        let now = self.started.elapsed();
        if due > now {
            out.flush()?;
            std::thread::sleep(due - now);
        }
        Ok(())
    }

    /// With `--step`, after lines were printed: waits for Enter (EOF ends stepping).
    fn step(&mut self, printed: bool, out: &mut impl Write) -> std::io::Result<()> {
        if !self.step || !printed {
            return Ok(());
        }
        out.flush()?;
        let mut buf = String::new();
        if std::io::stdin()
            .read_line(&mut buf)
            .map_or(true, |n| n == 0)
        {
            self.step = false;
        }
        Ok(())
    }
}

/// The closing summary on stderr: counts, drops, processes, warnings, stories, and with
/// `--pod` how many events of its processes were shown.
fn print_summary(
    input: &Input,
    engine: &tracer::lineage::Engine,
    stats: &StreamStats,
    pod: Option<(u64, &PodEvents)>,
) {
    let drops = input.last_stats().map_or(0, |s| s.drops);
    let live = engine.processes().filter(|p| !p.exited).count();
    let stories = tracer::lineage::stories(engine);
    let births = stories.iter().filter(|s| s.phase.is_birth()).count();
    tracer::say!(
        "tracer: replayed {}; {} processes ({} alive at the end), {} warnings, {births} container births ({} container stories with execs, deaths and restarts)",
        stats.summary(drops),
        engine.process_count(),
        live,
        engine.warning_count(),
        stories.len()
    );
    if let Some((shown, k)) = pod {
        tracer::say!(
            "tracer: shown {shown} events of the pod's {} processes",
            k.process_count()
        );
    }
}
