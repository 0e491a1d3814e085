//! `tracer tree` and `tracer story`: the lineage engine over a recording.

use super::output::to_output;
use super::reading::select_pod;
#[cfg(feature = "nats")]
use super::reading::{all_nodes, needs_pod, nodes_across, nodes_with_pod};
use super::OutputFormat;
use anyhow::Result;
use std::path::Path;
use tracer::input::Loaded;
use tracer::lineage::{
    numbered_story_text, story_json, subtree_text, write_tree_json, write_tree_text, Engine,
    JsonWarning, PodMatch, PodQuery, Story, TextTree, TreeOpts,
};

/// A recording (trace file or strace log, told apart by content; `-` is stdin) run through the
/// engine, seeded with the trace file's /proc snapshot; up to event `at` when given. Every
/// warning about the input is printed on stderr and returned.
pub fn load_engine(path: &Path, at: Option<u64>) -> Result<Loaded> {
    let loaded = super::reading::load(path, at)?;
    for n in &loaded.notes {
        tracer::say!("tracer: warning: {}: {n}", path.display());
    }
    Ok(loaded)
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
            if let Some(pid) = a.root {
                let text = subtree_text(&engine, pid, opts).ok_or_else(|| {
                    anyhow::anyhow!("--root {pid}: no process with that pid in the recording")
                })?;
                to_output(a.output, |out| out.write_all(text.as_bytes()))?;
            } else {
                let which = match pod {
                    Some(m) => TextTree::Pod(m),
                    None if a.traced => TextTree::Traced,
                    None => TextTree::All,
                };
                to_output(a.output, |out| write_tree_text(&engine, opts, which, out))?;
            }
            if engine.warning_count() > 0 {
                tracer::say!("tracer: {} anomalies in the stream (missing or out-of-order events); see --format json", engine.warning_count());
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
    let found = nodes_with_pod(src, a.pod.as_ref(), a.at, true)?;
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
                out.write_all(tracer::lineage::pod_tree_text(&l.engine, opts, pod).as_bytes())?;
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
    /// `--story`: only the story it selects (its number kept).
    pub story: Option<&'a str>,
}

/// The index of the story `sel` (`--story`) names in `stories`, or the one-line error that
/// says what `file` has.
pub fn pick_story(stories: &[Story], sel: &str, file: &Path) -> Result<usize> {
    tracer::lineage::select_story(stories, sel)
        .map_err(|e| anyhow::anyhow!("{}: --story: {e}", tracer::escape::path(file)))
}

/// `stories` numbered from 1 as `--story` takes them; only the one `sel` names when given.
fn numbered(stories: Vec<Story>, sel: Option<&str>, file: &Path) -> Result<Vec<(usize, Story)>> {
    let one = sel.map(|s| pick_story(&stories, s, file)).transpose()?;
    Ok(stories
        .into_iter()
        .enumerate()
        .filter(|(i, _)| one.is_none_or(|k| k == *i))
        .map(|(i, s)| (i + 1, s))
        .collect())
}

pub fn story(a: StoryArgs<'_>) -> Result<()> {
    #[cfg(feature = "nats")]
    if let Some(src) = all_nodes(a.file)? {
        return story_across(&a, &src);
    }
    let engine = load_engine(a.file, None)?.engine;
    show_stories(&a, &engine)
}

/// `tracer story nats://HOST:PORT/* --pod NAME` (or `-n NS`): the pod's life on every node
/// that held it, in wall-clock order, its replacements linked (`lineage::across`).
#[cfg(feature = "nats")]
fn story_across(a: &StoryArgs<'_>, src: &tracer::nats::NatsSource) -> Result<()> {
    use tracer::lineage::across::{tell, NodeEngine};
    let q = needs_pod(a.pod.as_ref())?;
    let found = nodes_across(src, q)?;
    let nodes: Vec<NodeEngine<'_>> = found
        .iter()
        .map(|(node, l)| NodeEngine {
            node,
            engine: &l.engine,
        })
        .collect();
    let shown = || tracer::escape::path(a.file);
    let mut told = tell(&nodes, q).map_err(|e| anyhow::Error::new(e).context(shown()))?;
    if let Some(sel) = a.story {
        told.retain_story(sel)
            .map_err(|e| anyhow::anyhow!("{}: --story: {e}", shown()))?;
    }
    to_output(a.output, |out| match a.format {
        OutputFormat::Text => out.write_all(told.text(a.explain).as_bytes()),
        OutputFormat::Json => {
            serde_json::to_writer_pretty(&mut *out, &told.json(a.explain))?;
            writeln!(out)
        }
    })
}

/// The stories (and runtime restarts) of one recording.
fn show_stories(a: &StoryArgs<'_>, engine: &Engine) -> Result<()> {
    use tracer::lineage::restart::runtime_restarts;
    let mut stories = tracer::lineage::stories(engine);
    let mut restarts = runtime_restarts(engine);
    if let Some(q) = &a.pod {
        let pod = select_pod(a.file, engine, q)?;
        stories.retain(|st| tracer::lineage::story_in_pod(st, &pod));
        restarts.clear();
    }
    if a.story.is_some() {
        restarts.clear();
    }
    let stories = numbered(stories, a.story, a.file)?;
    to_output(a.output, |out| match a.format {
        OutputFormat::Text => {
            if stories.is_empty() {
                writeln!(out, "no container birth found")?;
            }
            // A runtime restart is a story of the list (its own header and steps).
            let list: Vec<(usize, &Story)> = stories.iter().map(|(n, s)| (*n, s)).collect();
            out.write_all(numbered_story_text(&list, a.explain).as_bytes())
        }
        OutputFormat::Json => {
            let (numbers, stories): (Vec<usize>, Vec<Story>) = stories.iter().cloned().unzip();
            let mut json = story_json(&stories);
            if a.explain {
                tracer::lineage::explain::add_whys(&mut json, &stories);
            }
            // Each story's number, as `--story` takes it.
            if let Some(list) = json["stories"].as_array_mut() {
                for (v, n) in list.iter_mut().zip(&numbers) {
                    v["number"] = serde_json::json!(n);
                }
            }
            json["runtime_restarts"] =
                serde_json::to_value(restarts).map_err(std::io::Error::from)?;
            serde_json::to_writer_pretty(&mut *out, &json)?;
            writeln!(out)
        }
    })
}
