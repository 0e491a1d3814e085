//! `tracer demo [NAME] [-o FILE]`: an embedded lab recording, replayed or written out.

use super::replay::{replay_input, PaceOpts};
use anyhow::Result;
use std::process::ExitCode;
use tracer::demo::Demo;
use tracer::input::Input;
use tracer::lineage::{
    numbered_story_text, pod_tree_text, story_in_pod, traced_tree_text, PodEvents, SelectedPod,
    Story, TreeOpts,
};

/// `tracer demo NAME`: any of [`Demo::ALL`], by its short name, each with its help line.
#[derive(Clone, Copy, Debug)]
struct DemoName;

impl clap::builder::TypedValueParser for DemoName {
    type Value = Demo;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Demo, clap::Error> {
        let name = value.to_string_lossy();
        Demo::from_name(&name).map_err(|e| {
            let mut err = clap::Error::new(clap::error::ErrorKind::InvalidValue).with_cmd(cmd);
            use clap::error::{ContextKind, ContextValue};
            if let Some(a) = arg {
                err.insert(ContextKind::InvalidArg, ContextValue::String(a.to_string()));
            }
            err.insert(ContextKind::InvalidValue, ContextValue::String(e.0));
            let names = Demo::ALL.iter().map(|d| d.key().to_string()).collect();
            err.insert(ContextKind::ValidValue, ContextValue::Strings(names));
            err
        })
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(Demo::ALL.iter().map(|d| {
            clap::builder::PossibleValue::new(d.key()).help(d.about())
        })))
    }
}

#[derive(clap::Args, Debug)]
pub struct DemoArgs {
    /// Which recording (`demo:NAME` names it wherever a FILE is taken).
    #[arg(value_parser = DemoName, default_value = "pod", value_name = "NAME")]
    pub which: Demo,
    /// Write the recording to this trace file instead of replaying it (never through a
    /// symlink, never over another user's file).
    #[arg(short, long, value_name = "FILE", conflicts_with_all = ["speed", "seq", "no_tui", "guided", "free", "screenshot", "pod", "story", "quiz"])]
    pub output: Option<std::path::PathBuf>,
    /// Replay speed: 1 = original timing, 0 = as fast as possible (the default without the
    /// viewer; the viewer plays at 1).
    #[arg(long, value_name = "X")]
    pub speed: Option<f64>,
    /// Prefix lines with the event sequence number.
    #[arg(long)]
    pub seq: bool,
    /// Print the replay instead of the interactive view (the default when stdout is not a
    /// terminal).
    #[arg(long)]
    pub no_tui: bool,
    /// Guided, in the viewer (the default on a terminal): open paused at the first
    /// container-birth step with its explanation; `]` / `[` step through the selected story.
    #[arg(long, conflicts_with_all = ["no_tui", "free"])]
    pub guided: bool,
    /// In the viewer, play the recording freely from its start instead of the guided tour.
    #[arg(long, conflicts_with = "no_tui")]
    pub free: bool,
    /// In the viewer, hide threads (their lines in the event log, their rows in the tree).
    #[arg(long)]
    pub no_threads: bool,
    // Guided, opened at that story (`STORY_HELP`).
    #[arg(long, value_name = "N|CONTAINER|KIND", conflicts_with_all = ["no_tui", "free"], help = super::STORY_HELP)]
    pub story: Option<String>,
    /// Guided, as a quiz: before an adoption, a CLONE_PARENT clone's parent or a signal's
    /// sender is shown, name the pid (type it, or select it in the tree, then Enter); the
    /// viewer says right or wrong with the kernel rule and keeps the score (`Q` toggles).
    #[arg(long, conflicts_with_all = ["no_tui", "free"])]
    pub quiz: bool,
    /// Print the viewer's first frame at COLSxROWS as plain text and exit (for the docs).
    #[arg(long, value_name = "COLSxROWS", hide = true, conflicts_with = "no_tui")]
    pub screenshot: Option<tracer::tui::ScreenSize>,
    // Only the pod's (or container's) tree and stories; printed, its events.
    #[command(flatten)]
    pub pod: super::PodArgs,
}

pub fn run(args: DemoArgs) -> Result<ExitCode> {
    let demo = args.which;
    if let Some(path) = &args.output {
        return write_demo(demo, path);
    }
    show(demo, demo.open()?, &args)
}

/// `tracer demo NAME -o FILE`: the bundled trace file, as it is embedded.
fn write_demo(demo: Demo, path: &std::path::Path) -> Result<ExitCode> {
    use std::io::Write;
    let Some(mut file) = super::output::out_file(Some(path))? else {
        anyhow::bail!("-o -: a trace file is binary; name a file");
    };
    file.write_all(demo.bytes())
        .and_then(|()| file.flush())
        .map_err(|e| {
            anyhow::Error::new(e).context(format!("cannot write {}", tracer::escape::path(path)))
        })?;
    super::output::commit(file, path)?;
    // `demo:NAME` read back is the bundled demo, not this file (reading::open_input).
    let read_as = match Demo::from_path(path) {
        Some(_) => format!("; read it as ./{}", tracer::escape::path(path)),
        None => String::new(),
    };
    tracer::say!(
        "tracer: wrote {} ({} bytes; read it as any trace file{read_as})",
        tracer::escape::path(path),
        demo.bytes().len()
    );
    Ok(ExitCode::SUCCESS)
}

/// What the demo is narrowed to: the pod (and container) `--pod` names and its events, and
/// the story `--story` selects among the stories shown; none, or several, is the one-line
/// error every command gives.
struct Narrowed {
    pod: Option<(SelectedPod, PodEvents)>,
    story: Option<usize>,
}

fn narrowed(demo: Demo, args: &DemoArgs) -> Result<Narrowed> {
    let q = args.pod.query();
    if q.is_none() && args.story.is_none() {
        return Ok(Narrowed {
            pod: None,
            story: None,
        });
    }
    let path = std::path::PathBuf::from(format!("{}{}", tracer::demo::FILE_PREFIX, demo.key()));
    let engine = super::reading::load(&path, None)?.engine;
    let pod = q
        .map(|q| super::reading::select_pod(&path, &engine, &q))
        .transpose()?;
    let story = args
        .story
        .as_deref()
        .map(|sel| super::tui::story_index(&path, &engine, pod.as_ref(), sel))
        .transpose()?;
    let pod = pod.map(|p| {
        let keep = PodEvents::new(&engine, &p);
        (p, keep)
    });
    Ok(Narrowed { pod, story })
}

/// Shows the demo: the viewer on a terminal, else the printed replay, tree and stories.
fn show(demo: Demo, input: Input, args: &DemoArgs) -> Result<ExitCode> {
    use std::io::IsTerminal;
    let Narrowed { pod, story } = narrowed(demo, args)?;
    let (pod, keep) = pod.unzip();
    let viewer = std::io::stdout().is_terminal() && !args.no_tui;
    let guided = args.guided || story.is_some() || args.quiz;
    if guided || args.screenshot.is_some() || viewer {
        let (sched_probes, clock) = (input.sched_probes(), input.clock());
        let seed = input.snapshot();
        let events = input.collect::<Result<tracer::tracefile::PackedEvents, _>>()?;
        let opts = tracer::tui::ReplayOpts {
            speed: args.speed.filter(|s| *s > 0.0).unwrap_or(1.0),
            paused: false,
            at_end: false,
            at: None,
            sched_probes,
            guided: !args.free,
            story,
            quiz: args.quiz,
            no_threads: args.no_threads,
            clock,
        };
        let rec = tracer::tui::Recording {
            events,
            seed,
            title: demo.title().into(),
            tail: None,
            pod: pod.map(tracer::lineage::PodScope::Found),
        };
        match args.screenshot {
            Some(size) => {
                super::output::print_screenshot(&tracer::tui::screenshot(rec, &opts, size))?
            }
            None => super::tui::say_score(&tracer::tui::run_replay(rec, opts)?),
        }
        return Ok(ExitCode::SUCCESS);
    }
    let opts = PaceOpts {
        speed: Some(args.speed.unwrap_or(0.0)),
        seq: args.seq,
        ..PaceOpts::default()
    };
    let engine = replay_input(input, &opts, keep.as_ref())?;
    let mut stories = tracer::lineage::stories(&engine);
    stories.retain(|st| pod.as_ref().is_none_or(|p| story_in_pod(st, p)));
    super::output::to_stdout(|out| {
        writeln!(out, "\n== process tree at the end of the demo\n")?;
        let tree = match &pod {
            Some(p) => pod_tree_text(&engine, TreeOpts::default(), p),
            None => traced_tree_text(&engine, TreeOpts::default()),
        };
        out.write_all(tree.as_bytes())?;
        writeln!(
            out,
            "\n== container stories: births, execs, deaths, restarts\n"
        )?;
        // A runtime daemon that exited and started again (the restart demo) is a story of
        // the list, after the stories before the old daemon's end.
        let numbered: Vec<(usize, &Story)> = stories
            .iter()
            .enumerate()
            .map(|(i, s)| (i + 1, s))
            .collect();
        out.write_all(numbered_story_text(&numbered, false).as_bytes())?;
        Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}
