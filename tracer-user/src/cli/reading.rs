//! Reading a recording for a command: events up to the first error, `--pod`'s events, and
//! how the input ended.

use anyhow::Result;
use std::path::{Path, PathBuf};
use tracer::input::{Input, InputError};
use tracer::lineage::PodEvents;
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
    pod: Option<&str>,
) -> Result<(PathBuf, Option<PodEvents>)> {
    let (file, engine) = super::lineage::one_source(file, pod)?;
    let keep = pod
        .map(|p| super::lineage::pod_events(&file, p, engine))
        .transpose()?;
    Ok((file, keep))
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

/// The recording at `path`, told apart by content.
pub(super) fn open_input(path: &Path) -> Result<Input> {
    Ok(Input::open(path)?)
}
