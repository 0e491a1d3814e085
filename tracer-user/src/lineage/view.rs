//! Text and JSON views of the tree and the stories (schemas in docs/json-schemas.md).

use std::fmt::Write as _;

use serde_json::{json, Value};

use super::engine::Engine;
use super::process::{How, ProcId, Process, Reason};
use super::story::Story;
use std::collections::HashSet;

/// Indentation kept at most (about 1000 levels); deeper subtrees are shown as `…`.
const MAX_PREFIX_BYTES: usize = 4096;

/// Options for [`tree_text`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TreeOpts {
    /// Show exited processes (with their exit status) where they died.
    pub show_exited: bool,
    /// Show `{N threads}` for multi-threaded processes.
    pub show_threads: bool,
}

impl Default for TreeOpts {
    fn default() -> Self {
        TreeOpts {
            show_exited: true,
            show_threads: true,
        }
    }
}

/// First 12 characters of a container id.
fn short_cid(cid: &str) -> &str {
    match cid.char_indices().nth(12) {
        Some((i, _)) => &cid[..i],
        None => cid,
    }
}

/// `4090 runc [oci-runtime create] {cid:0123456789ab}` and marks.
pub fn node_label(p: &Process, opts: TreeOpts) -> String {
    let mut s = format!("{} {}", p.pid, p.name());
    if let Some(r) = p.role {
        let _ = write!(s, " [{r}]");
    }
    if let Some(c) = &p.container_id {
        let _ = write!(s, " {{cid:{}}}", short_cid(c));
    }
    let n = p.live_thread_count();
    if opts.show_threads && n > 1 {
        let _ = write!(s, " {{{n} threads}}");
    }
    if p.born_how() == How::Unknown {
        s.push_str(" (placeholder)");
    }
    if p.is_subreaper {
        s.push_str(" (subreaper)");
    }
    if let Some(l) = p.lineage.first() {
        if l.how == How::CloneParent {
            match l.caller {
                Some(c) => {
                    let _ = write!(s, " (CLONE_PARENT via {c})");
                }
                None => s.push_str(" (CLONE_PARENT)"),
            }
        }
    }
    if let Some(a) = p.last_adoption() {
        match a.reason {
            Some(Reason::ParentExited { parent, .. }) => {
                let _ = write!(s, " ⤴ adopted ← {parent} exited");
            }
            Some(Reason::KernelReports { .. }) | None => {
                s.push_str(" ⤴ adopted (kernel-reported parent)")
            }
        }
    }
    if p.exited {
        match p.exit_status {
            Some(st) => {
                let _ = write!(s, " ({st})");
            }
            None => s.push_str(" (exited)"),
        }
    }
    s
}

/// pstree-like text, children ordered by pid.
pub fn tree_text(e: &Engine, opts: TreeOpts) -> String {
    tree_text_of(e, opts, None)
}

/// Only what the recording saw act (born, exec'd, renamed, set a subreaper or exited after
/// the start) and its ancestors: leaves out the rest of the start snapshot.
pub fn traced_tree_text(e: &Engine, opts: TreeOpts) -> String {
    let mut keep = HashSet::new();
    let acted = |p: &Process| {
        p.born_how() != How::Snapshot
            || p.exit_seq.is_some()
            || !p.execs.is_empty()
            || !p.renames.is_empty()
            || p.subreaper_seq.is_some()
    };
    for p in e.processes().filter(|p| acted(p)) {
        let mut q = Some(p);
        while let Some(x) = q {
            if !keep.insert(x.id) {
                break;
            }
            q = x.parent.and_then(|id| e.get(id));
        }
    }
    tree_text_of(e, opts, Some(&keep))
}

fn tree_text_of(e: &Engine, opts: TreeOpts, keep: Option<&HashSet<ProcId>>) -> String {
    let mut out = String::new();
    for root in e.roots() {
        if root.exited && !opts.show_exited && !has_live_descendant(e, root) {
            continue;
        }
        if keep.is_some_and(|k| !k.contains(&root.id)) {
            continue;
        }
        out.push_str(&node_label(root, opts));
        out.push('\n');
        write_children(e, root, opts, keep, "", &mut out);
    }
    out
}

fn has_live_descendant(e: &Engine, p: &Process) -> bool {
    let mut stack: Vec<&Process> = vec![p];
    let mut seen = 0usize;
    while let Some(q) = stack.pop() {
        seen += 1;
        if seen > e.process_count() {
            break;
        }
        for c in e.children_of(q) {
            if !c.exited {
                return true;
            }
            stack.push(c);
        }
    }
    false
}

fn write_children(
    e: &Engine,
    p: &Process,
    opts: TreeOpts,
    keep: Option<&HashSet<ProcId>>,
    prefix: &str,
    out: &mut String,
) {
    // Depth is bounded by the number of records; a cycle cannot form because a record only
    // ever gets a parent that existed before it or one found walking up from it.
    let kids: Vec<&Process> = e
        .children_of(p)
        .into_iter()
        .filter(|c| opts.show_exited || !c.exited || has_live_descendant(e, c))
        .filter(|c| keep.is_none_or(|k| k.contains(&c.id)))
        .collect();
    let n = kids.len();
    for (i, c) in kids.into_iter().enumerate() {
        let last = i + 1 == n;
        out.push_str(prefix);
        out.push_str(if last { "└─ " } else { "├─ " });
        out.push_str(&node_label(c, opts));
        out.push('\n');
        let next = format!("{prefix}{}", if last { "   " } else { "│  " });
        // Bounds the recursion (and the line width) on absurdly deep chains.
        if next.len() < MAX_PREFIX_BYTES {
            write_children(e, c, opts, keep, &next, out);
        } else if !c.child_ids().is_empty() {
            out.push_str(&next);
            out.push_str("└─ …\n");
        }
    }
}

fn process_json(p: &Process) -> Value {
    let lineage: Vec<Value> = p
        .lineage
        .iter()
        .map(|l| {
            json!({
                "how": l.how.as_str(),
                "parent": l.parent,
                "caller": l.caller,
                "flags": l.flags_text(),
                "reason": l.reason_text(),
                "seq": l.seq,
            })
        })
        .collect();
    let exit_code = p.exit_status.map(|s| match s {
        crate::event::ExitStatus::Exited { code } => json!(code),
        crate::event::ExitStatus::Killed { .. } => Value::Null,
    });
    let signal = p.exit_status.and_then(|s| match s {
        crate::event::ExitStatus::Killed { signal, .. } => Some(crate::names::signal(signal)),
        crate::event::ExitStatus::Exited { .. } => None,
    });
    json!({
        "pid": p.pid,
        "ppid": p.ppid,
        "comm": p.comm.to_string(),
        "exe": p.exe.as_deref(),
        "argv": &*p.argv,
        "role": p.role.map(|r| r.name()),
        "role_detail": p.role.and_then(|r| r.detail()),
        "container_id": p.container_id.as_deref(),
        "subreaper": p.is_subreaper,
        "exited": p.exited,
        "exit_code": exit_code.unwrap_or(Value::Null),
        "exit_signal": signal,
        "threads": p.live_tids().collect::<Vec<u32>>(),
        "start_seq": p.start_seq,
        "exit_seq": p.exit_seq,
        "lineage": lineage,
    })
}

/// The tree as JSON: `{ "last_seq", "warnings", "processes": [...] }`, processes by pid then seq.
pub fn tree_json(e: &Engine) -> Value {
    let mut ps: Vec<&Process> = e.processes().collect();
    ps.sort_by_key(|p| (p.pid, p.start_seq, p.id));
    json!({
        "last_seq": e.last_seq(),
        "warnings": e.warning_count(),
        "processes": ps.into_iter().map(process_json).collect::<Vec<_>>(),
    })
}

/// Stories as text: a header per container birth, then one line per step.
pub fn story_text(stories: &[Story]) -> String {
    let mut out = String::new();
    for (i, s) in stories.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let cid = s.container_id.as_deref().unwrap_or("?");
        if let Some(pod) = &s.pod {
            let what = if s.sandbox { "sandbox" } else { "container" };
            // The pod by the short form of its sandbox id, as `crictl pods` shows it.
            let short = pod.get(..12).unwrap_or(pod);
            let _ = write!(out, "pod {short}: {what} {cid}");
        } else {
            let _ = write!(out, "container {cid}");
        }
        let _ = write!(out, " ({}", s.kind.as_str());
        if let Some(r) = &s.runtime {
            let _ = write!(out, ", {r}");
        }
        out.push(')');
        if let Some(w) = &s.workload {
            let _ = write!(out, " → {w}");
        }
        out.push('\n');
        for st in &s.steps {
            let _ = writeln!(out, "  [seq {:>6}] {}", st.seq, st.text);
        }
    }
    out
}

/// Stories as JSON: `{ "stories": [...] }`.
pub fn story_json(stories: &[Story]) -> Value {
    json!({ "stories": stories })
}
