//! `tracer tree` and `tracer story`: the lineage engine over a recording.

use super::output::to_output;
use super::reading::select_pod;
use super::OutputFormat;
use anyhow::Result;
use std::path::Path;
use tracer::input::Loaded;
use tracer::lineage::{
    pod_tree_text, story_json, story_text_with, subtree_text, traced_tree_text, tree_text,
    write_tree_json, Engine, JsonWarning, PodMatch, PodQuery, TreeOpts,
};

/// A recording (trace file or strace log, told apart by content; `-` is stdin) run through the
/// engine, seeded with the trace file's /proc snapshot; up to event `at` when given. Every
/// warning about the input is printed on stderr and returned.
pub fn load_engine(path: &Path, at: Option<u64>) -> Result<Loaded> {
    let loaded = super::reading::load(path, at)?;
    for n in &loaded.notes {
        eprintln!("tracer: warning: {}: {n}", path.display());
    }
    Ok(loaded)
}

/// `nats://HOST:PORT/*` (every node), when that is what `file` names.
#[cfg(feature = "nats")]
fn all_nodes(file: &Path) -> Result<Option<tracer::nats::NatsSource>> {
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
fn nodes_with_pod(
    src: &tracer::nats::NatsSource,
    pod: Option<&str>,
    at: Option<u64>,
    say_notes: bool,
) -> Result<Vec<(String, Loaded)>> {
    use anyhow::Context;
    use tracer::escape::escape;
    let pod = pod.context("nats://HOST:PORT/* reads every node: say which pod with --pod NAME")?;
    let search = tracer::input::nodes_with_pod(src, pod, at)?;
    for (node, e) in &search.unreadable {
        eprintln!("tracer: warning: {}: {e}", src.with_node(node));
    }
    for (node, l) in search.found.iter().filter(|_| say_notes) {
        for n in &l.notes {
            eprintln!("tracer: warning: {}: {n}", src.with_node(node));
        }
    }
    if search.found.is_empty() {
        anyhow::bail!(
            "pod {} not found on any of the {} nodes in the stream",
            escape(pod),
            search.nodes
        );
    }
    Ok(search.found)
}

/// The one recording a command reads: `file` itself, or for `nats://HOST:PORT/*` the stream
/// of the one node that holds pod `pod` (with the engine that read it there).
pub fn one_source(file: &Path, pod: Option<&str>) -> Result<(std::path::PathBuf, Option<Engine>)> {
    #[cfg(feature = "nats")]
    if let Some(src) = all_nodes(file)? {
        let mut found = nodes_with_pod(&src, pod, None, false)?;
        if found.len() == 1 {
            let (node, l) = found.remove(0);
            return Ok((src.with_node(&node).into(), Some(l.engine)));
        }
        let names: Vec<&str> = found.iter().map(|(n, _)| n.as_str()).collect();
        anyhow::bail!(
            "pod {} is on several nodes ({}): name one as {}",
            tracer::escape::escape(pod.unwrap_or_default()),
            names.join(", "),
            src.with_node("NODE")
        );
    }
    let _ = pod;
    Ok((file.to_path_buf(), None))
}

/// What `tracer tree` shows.
pub struct TreeArgs<'a> {
    pub file: &'a Path,
    pub format: OutputFormat,
    /// `-o FILE`, else stdout.
    pub output: Option<&'a Path>,
    pub at: Option<u64>,
    pub hide_exited: bool,
    pub traced: bool,
    pub root: Option<u32>,
    /// Only this pod's (or container's) processes.
    pub pod: Option<PodQuery>,
}

pub fn tree(a: TreeArgs<'_>) -> Result<()> {
    #[cfg(feature = "nats")]
    if let Some(src) = all_nodes(a.file)? {
        return tree_all_nodes(&a, &src);
    }
    let Loaded { engine, notes } = load_engine(a.file, a.at)?;
    let pod = a
        .pod
        .as_ref()
        .map(|q| select_pod(a.file, &engine, q))
        .transpose()?;
    let pod = pod.as_ref().map(|p| p as &dyn PodMatch);
    match a.format {
        OutputFormat::Text => {
            let opts = TreeOpts {
                show_exited: !a.hide_exited,
                ..TreeOpts::default()
            };
            let text = match a.root {
                Some(pid) => subtree_text(&engine, pid, opts).ok_or_else(|| {
                    anyhow::anyhow!("--root {pid}: no process with that pid in the recording")
                })?,
                None => match pod {
                    Some(m) => pod_tree_text(&engine, opts, m),
                    None if a.traced => traced_tree_text(&engine, opts),
                    None => tree_text(&engine, opts),
                },
            };
            to_output(a.output, |out| out.write_all(text.as_bytes()))?;
            if engine.warning_count() > 0 {
                eprintln!("tracer: {} anomalies in the stream (missing or out-of-order events); see --format json", engine.warning_count());
            }
        }
        OutputFormat::Json => {
            let warnings: Vec<JsonWarning> = notes.into_iter().map(JsonWarning::input).collect();
            to_output(a.output, |out| {
                write_tree_json(&engine, &warnings, pod, out)
            })?;
        }
    }
    Ok(())
}

/// `tracer tree nats://HOST:PORT/* --pod NAME`: the pod's processes on every node that has
/// them, node by node. A node whose stream cannot be read is a warning, not the end.
#[cfg(feature = "nats")]
fn tree_all_nodes(a: &TreeArgs<'_>, src: &tracer::nats::NatsSource) -> Result<()> {
    let found = nodes_with_pod(src, a.pod.as_ref().map(|q| q.pod.as_str()), a.at, true)?;
    let pods = found
        .iter()
        .map(|(node, l)| {
            select_pod(
                Path::new(node),
                &l.engine,
                a.pod.as_ref().unwrap_or(&PodQuery::default()),
            )
        })
        .collect::<Result<Vec<_>>>()?;
    let opts = TreeOpts {
        show_exited: !a.hide_exited,
        ..TreeOpts::default()
    };
    match a.format {
        OutputFormat::Text => to_output(a.output, |out| {
            for ((node, l), pod) in found.iter().zip(&pods) {
                writeln!(out, "node {node}:")?;
                out.write_all(pod_tree_text(&l.engine, opts, pod).as_bytes())?;
            }
            Ok(())
        })?,
        OutputFormat::Json => {
            use tracer::lineage::view::{tree_json_doc, tree_json_processes};
            let warnings: Vec<Vec<JsonWarning>> = found
                .iter()
                .map(|(_, l)| l.notes.iter().cloned().map(JsonWarning::input).collect())
                .collect();
            let procs: Vec<_> = found
                .iter()
                .zip(&pods)
                .map(|((_, l), pod)| tree_json_processes(&l.engine, Some(pod)))
                .collect();
            let nodes: Vec<NodeTree<'_>> = found
                .iter()
                .zip(&procs)
                .zip(&warnings)
                .map(|(((node, l), p), w)| NodeTree {
                    node,
                    tree: tree_json_doc(&l.engine, p, w),
                })
                .collect();
            to_output(a.output, |out| {
                serde_json::to_writer_pretty(&mut *out, &NodeTrees { nodes })?;
                writeln!(out)
            })?;
        }
    }
    Ok(())
}

/// `{"nodes": [{"node": ..., "tree": <tree JSON>}]}`, serialized in one go.
#[cfg(feature = "nats")]
#[derive(serde::Serialize)]
struct NodeTrees<'a> {
    nodes: Vec<NodeTree<'a>>,
}

#[cfg(feature = "nats")]
#[derive(serde::Serialize)]
struct NodeTree<'a> {
    node: &'a str,
    tree: tracer::lineage::view::TreeJson<'a>,
}

/// What `tracer story` shows.
pub struct StoryArgs<'a> {
    pub file: &'a Path,
    pub format: OutputFormat,
    /// `-o FILE`, else stdout.
    pub output: Option<&'a Path>,
    pub explain: bool,
    /// Only this pod's (or container's) stories, and no runtime restarts.
    pub pod: Option<PodQuery>,
}

pub fn story(a: StoryArgs<'_>) -> Result<()> {
    #[cfg(feature = "nats")]
    if let Some(src) = all_nodes(a.file)? {
        let found = nodes_with_pod(&src, a.pod.as_ref().map(|q| q.pod.as_str()), None, true)?;
        let per_node = found.into_iter().map(|(n, l)| (Some(n), l.engine));
        return show_stories(&a, per_node.collect());
    }
    let engine = load_engine(a.file, None)?.engine;
    show_stories(&a, vec![(None, engine)])
}

/// The stories (and runtime restarts) of one recording, or of each node named.
fn show_stories(a: &StoryArgs<'_>, engines: Vec<(Option<String>, Engine)>) -> Result<()> {
    use tracer::lineage::restart::{restarts_text, runtime_restarts};
    let mut shown = Vec::new();
    for (node, engine) in engines {
        let mut stories = tracer::lineage::stories(&engine);
        let mut restarts = runtime_restarts(&engine);
        if let Some(q) = &a.pod {
            let at = node.as_deref().map_or(a.file, Path::new);
            let pod = select_pod(at, &engine, q)?;
            stories.retain(|st| tracer::lineage::story_in_pod(st, &pod));
            restarts.clear();
        }
        shown.push((node, stories, restarts));
    }
    to_output(a.output, |out| match a.format {
        OutputFormat::Text => {
            for (node, stories, restarts) in &shown {
                if let Some(node) = node {
                    writeln!(out, "node {node}:")?;
                }
                if stories.is_empty() {
                    writeln!(out, "no container birth found")?;
                }
                out.write_all(story_text_with(stories, a.explain).as_bytes())?;
                if !restarts.is_empty() {
                    write!(out, "\n{}", restarts_text(restarts))?;
                }
            }
            Ok(())
        }
        OutputFormat::Json => {
            let mut list = Vec::new();
            for (node, stories, restarts) in &shown {
                let mut json = story_json(stories);
                if a.explain {
                    tracer::lineage::explain::add_whys(&mut json, stories);
                }
                json["runtime_restarts"] =
                    serde_json::to_value(restarts).map_err(std::io::Error::from)?;
                list.push(match node {
                    Some(n) => serde_json::json!({ "node": n, "story": json }),
                    None => json,
                });
            }
            let json = match shown.first() {
                Some((None, _, _)) => list.swap_remove(0),
                _ => serde_json::json!({ "nodes": list }),
            };
            serde_json::to_writer_pretty(&mut *out, &json)?;
            writeln!(out)
        }
    })
}
