//! Reading a recording for a command: the one place a FILE argument is opened (a bundled
//! `demo:NAME` included), events up to the first error, `--pod`'s pod and events, and how
//! the input ended.

use anyhow::Result;
use std::path::{Path, PathBuf};
use tracer::demo::Demo;
use tracer::input::{Input, InputError, Loaded};
use tracer::lineage::{Engine, PodEvents, PodQuery, SelectedPod};
use tracer::Event;

/// Events of `input` until the first error, which is kept in `err`.
pub(super) fn until_error<'a>(
    input: &'a mut Input,
    err: &'a mut Option<InputError>,
) -> impl Iterator<Item = Event> + 'a {
    std::iter::from_fn(move || match input.next_event()? {
        Ok(ev) => Some(ev),
        Err(e) => {
            *err = Some(e);
            None
        }
    })
}

/// [`until_error`], only the events `keep` holds when given (`--pod`).
pub(super) fn kept<'a>(
    input: &'a mut Input,
    err: &'a mut Option<InputError>,
    keep: Option<&'a PodEvents>,
) -> impl Iterator<Item = Event> + 'a {
    until_error(input, err).filter(move |ev| keep.is_none_or(|k| k.contains(ev)))
}

/// The recording a command reads (`/*`: the node holding `--pod`), and the pod's events.
pub(super) fn source_and_pod(
    file: &Path,
    pod: Option<&PodQuery>,
) -> Result<(PathBuf, Option<PodEvents>)> {
    let (file, engine) = super::lineage::one_source(file, pod.map(|q| q.pod.as_str()))?;
    let keep = pod.map(|q| pod_events(&file, q, engine)).transpose()?;
    Ok((file, keep))
}

/// The events of the pod `q` asks for in the recording at `path`, from `engine` when it read
/// the whole recording already, else from a read of it.
fn pod_events(path: &Path, q: &PodQuery, engine: Option<Engine>) -> Result<PodEvents> {
    if path.as_os_str() == "-" {
        anyhow::bail!("--pod reads the recording twice (to find the pod, then to show it): give a file, not stdin");
    }
    let engine = match engine {
        Some(e) => e,
        None => load(path, None)?.engine,
    };
    let pod = select_pod(path, &engine, q)?;
    Ok(PodEvents::new(&engine, &pod))
}

/// The one pod `q` names in the recording at `path` (read into `engine`): none, or several,
/// is the error.
pub(super) fn select_pod(path: &Path, engine: &Engine, q: &PodQuery) -> Result<SelectedPod> {
    tracer::lineage::resolve_pod(engine, q)
        .map_err(|e| anyhow::Error::new(e).context(tracer::escape::path(path)))
}

/// The recording at `path` run through the engine (up to event `at`).
pub(super) fn load(path: &Path, at: Option<u64>) -> Result<Loaded> {
    Ok(Loaded::from_input(open_input(path)?, at)?)
}

/// Reports how the input ended. A file cut short (a recording killed) is a warning; damage
/// that stopped reading is an error unless `salvage`.
pub(super) fn finish_input(input: &Input, err: Option<InputError>, salvage: bool) -> Result<()> {
    super::output::print_input_notes(input, err.is_some());
    let Some(e) = err else { return Ok(()) };
    if let Some(tail) = input.tail() {
        if tail.unusable_bytes > 0 {
            eprintln!(
                "tracer: {}: {} bytes at the tail unusable (from byte {})",
                input.path.display(),
                tail.unusable_bytes,
                tail.unusable_from.unwrap_or(0)
            );
        }
    }
    let truncated = e.trace_error().is_some_and(|t| t.is_truncation());
    if truncated {
        eprintln!(
            "tracer: warning: {e} (the recording was interrupted; every whole frame was used)"
        );
        Ok(())
    } else if salvage {
        eprintln!("tracer: salvage: {e}; every good frame before it was used");
        Ok(())
    } else {
        Err(anyhow::Error::new(e)
            .context("the file is damaged (use --salvage to keep every good frame before it)"))
    }
}

/// The recording at `path`, told apart by content; `demo:NAME` is a bundled demo.
pub(super) fn open_input(path: &Path) -> Result<Input> {
    match Demo::from_path(path) {
        Some(demo) => Ok(demo?.open()?),
        None => Ok(Input::open(path)?),
    }
}
