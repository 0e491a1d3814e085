//! Reading a recording for a command: the one place a FILE argument is opened (a bundled
//! `demo:NAME` included), events up to the first error, `--pod`'s pod and events, and how
//! the input ended.

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use tracer::demo::Demo;
use tracer::input::{Input, InputError, Loaded};
use tracer::lineage::{Engine, PodEvents, PodQuery, SelectedPod};
use tracer::Event;

/// `nats://HOST:PORT/*` (every node), when that is what `file` names.
#[cfg(feature = "nats")]
pub(super) fn all_nodes(file: &Path) -> Result<Option<tracer::nats::NatsSource>> {
    use tracer::nats::NatsSource;
    Ok(file
        .to_str()
        .filter(|s| NatsSource::is_nats(s))
        .map(NatsSource::parse)
        .transpose()?
        .filter(|s| s.is_all_nodes()))
}

/// The nodes of `src` (every node of a server) whose streams hold pod `pod`, each read
/// through the engine, by node name. A node whose stream cannot be read is a warning; the
/// warnings about a node's input are printed when `say_notes` (a command that reads the node
/// again prints them then).
#[cfg(feature = "nats")]
pub(super) fn nodes_with_pod(
    src: &tracer::nats::NatsSource,
    pod: Option<&PodQuery>,
    at: Option<u64>,
    say_notes: bool,
) -> Result<Vec<(String, Loaded)>> {
    let pod = needs_pod(pod)?;
    let search = tracer::input::nodes_with_pod(src, pod, at)?;
    searched(src, pod, search, say_notes)
}

/// The nodes of `src` whose streams hold anything the across-nodes story of `pod` tells (the
/// pod, the pods of its family, of its namespace), each read whole, their warnings printed.
#[cfg(feature = "nats")]
pub(super) fn nodes_across(
    src: &tracer::nats::NatsSource,
    pod: &PodQuery,
) -> Result<Vec<(String, Loaded)>> {
    let search = tracer::input::nodes_across(src, pod)?;
    searched(src, pod, search, true)
}

/// `--pod` or `-n`, which `nats://HOST:PORT/*` needs.
#[cfg(feature = "nats")]
pub(super) fn needs_pod(pod: Option<&PodQuery>) -> Result<&PodQuery> {
    use anyhow::Context;
    pod.context(
        "nats://HOST:PORT/* reads every node: say which pod with --pod NAME (or -n NS: every pod of a namespace)",
    )
}

/// What a search of every node found: unreadable nodes (and with `say_notes` the found
/// nodes' input notes) said on stderr; none found is the error.
#[cfg(feature = "nats")]
fn searched(
    src: &tracer::nats::NatsSource,
    pod: &PodQuery,
    search: tracer::input::PodSearch,
    say_notes: bool,
) -> Result<Vec<(String, Loaded)>> {
    for (node, e) in &search.unreadable {
        tracer::say!("tracer: warning: {}: {e}", src.with_node(node));
    }
    for (node, l) in search.found.iter().filter(|_| say_notes) {
        for n in &l.notes {
            tracer::say!("tracer: warning: {}: {n}", src.with_node(node));
        }
    }
    if search.found.is_empty() {
        anyhow::bail!(
            "{} not found on any of the {} nodes in the stream",
            asked(pod),
            search.nodes
        );
    }
    Ok(search.found)
}

/// A pod query as the user typed it, escaped: `pod NAME` or `every pod of namespace NS`.
fn asked(q: &PodQuery) -> String {
    use tracer::escape::escape;
    match (q.every_pod(), &q.namespace) {
        (true, Some(ns)) => format!("every pod of namespace {}", escape(ns)),
        _ => format!("pod {}", escape(&q.pod)),
    }
}

/// The one recording a command reads: `file` itself, or for `nats://HOST:PORT/*` the stream
/// of the one node that holds pod `pod` (with the engine that read it there).
pub(super) fn one_source(
    file: &Path,
    pod: Option<&PodQuery>,
) -> Result<(std::path::PathBuf, Option<Engine>)> {
    #[cfg(feature = "nats")]
    if let Some(src) = all_nodes(file)? {
        let mut found = nodes_with_pod(&src, pod, None, false)?;
        if found.len() == 1 {
            let (node, l) = found.remove(0);
            return Ok((src.with_node(&node).into(), Some(l.engine)));
        }
        let names: Vec<&str> = found.iter().map(|(n, _)| n.as_str()).collect();
        anyhow::bail!(
            "{} is on several nodes ({}): name one as {}",
            pod.map(asked).unwrap_or_default(),
            names.join(", "),
            src.with_node("NODE")
        );
    }
    let _ = pod;
    Ok((file.to_path_buf(), None))
}

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
    let (file, engine) = one_source(file, pod)?;
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
            tracer::say!(
                "tracer: {}: {} bytes at the tail unusable (from byte {})",
                input.path.display(),
                tail.unusable_bytes,
                tail.unusable_from.unwrap_or(0)
            );
        }
    }
    let truncated = e.is_truncation();
    if truncated {
        tracer::say!(
            "tracer: warning: {e} (the recording was interrupted; every whole frame was used)"
        );
        Ok(())
    } else if salvage {
        tracer::say!("tracer: salvage: {e}; every good frame before it was used");
        Ok(())
    } else {
        Err(anyhow::Error::new(e)
            .context("the file is damaged (use --salvage to keep every good frame before it)"))
    }
}

/// The recording a command's `FILE [MORE...]` names: FILE, or for the files of one
/// `strace -ff -o PREFIX` set given one by one (the shell's `PREFIX.*`), the set (named by its
/// PREFIX, which `Input::open` reads as one log). Every file of the set must be given.
pub(super) fn one_recording(file: &Path, more: &[PathBuf]) -> Result<PathBuf> {
    if more.is_empty() {
        return Ok(file.to_path_buf());
    }
    let prefix_of = |p: &Path| -> Option<PathBuf> {
        let name = p.file_name()?.to_str()?;
        let (prefix, pid) = name.rsplit_once('.')?;
        (!pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
            .then(|| p.with_file_name(prefix))
    };
    let shown = tracer::escape::path;
    let prefix = prefix_of(file).with_context(|| {
        format!(
            "one recording is read at a time: {} is not a file of an strace -ff set (PREFIX.PID)",
            shown(file)
        )
    })?;
    let all = || std::iter::once(file).chain(more.iter().map(PathBuf::as_path));
    for p in all() {
        if prefix_of(p).as_deref() != Some(prefix.as_path()) {
            anyhow::bail!(
                "{} is not a file of the strace -ff set {}.*",
                shown(p),
                shown(&prefix)
            );
        }
    }
    // (one directory: each file's prefix, its directory included, is the same)
    let mut given: Vec<&std::ffi::OsStr> = all().filter_map(Path::file_name).collect();
    let set = tracer::input::ff::files_of(&prefix)?.unwrap_or_default();
    let mut on_disk: Vec<&std::ffi::OsStr> =
        set.iter().filter_map(|(_, p)| p.file_name()).collect();
    given.sort();
    given.dedup();
    on_disk.sort();
    if given != on_disk || std::fs::symlink_metadata(&prefix).is_ok() {
        anyhow::bail!(
            "give every file of the strace -ff set ({}.*: {} files), or its prefix {} alone",
            shown(&prefix),
            on_disk.len(),
            shown(&prefix)
        );
    }
    Ok(prefix)
}

/// The recording at `path`, told apart by content. `demo:NAME` always names a bundled demo,
/// whatever files the directory holds (a command's meaning never depends on the current
/// directory); a file of that name is read as `./demo:NAME`, which the user is told once
/// when one is here.
pub(super) fn open_input(path: &Path) -> Result<Input> {
    let Some(demo) = Demo::from_path(path) else {
        let input = Input::open(path)?;
        super::output::remember_input(path);
        return Ok(input);
    };
    let local = std::fs::symlink_metadata(path).is_ok();
    let shown = tracer::escape::path(path);
    let demo = demo.map_err(|e| match local {
        true => anyhow::anyhow!("{e}; the file of that name is read as ./{shown}"),
        false => e.into(),
    })?;
    if local && !SAID_SHADOWED.swap(true, std::sync::atomic::Ordering::Relaxed) {
        tracer::say!("tracer: note: {shown} is the bundled demo; the file of that name here is read as ./{shown}");
    }
    Ok(demo.open()?)
}

/// Whether the note of [`open_input`] was given (a command may open its input twice).
static SAID_SHADOWED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
