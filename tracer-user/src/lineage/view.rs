//! Text and JSON views of the tree and the stories (schemas in docs/json-schemas.md).

use std::fmt::Write as _;

use serde_json::{json, Value};

use crate::event::ExitStatus;

use super::engine::Engine;
use super::process::{How, ProcId, Process, Reason};
use super::roles::Role;
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
pub fn short_cid(cid: &str) -> &str {
    match cid.char_indices().nth(12) {
        Some((i, _)) => &cid[..i],
        None => cid,
    }
}

/// One part of a process's label after `PID NAME`. The text tree and the viewer draw the
/// same list, each in its own style.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mark<'a> {
    /// `[oci-runtime create]`
    Role(Role),
    /// `{cid:0123456789ab}` (the first 12 characters)
    Container(&'a str),
    /// `{4 threads}`
    Threads(usize),
    /// `(pid 1 in container)`: its pid inside its own pid namespace.
    NsPid(u32),
    /// `(placeholder)`: a pid the source named but never showed being created.
    Placeholder,
    /// `(subreaper)`
    Subreaper,
    /// `(CLONE_PARENT via 8420)`: born to its caller's parent.
    CloneParent(Option<u32>),
    /// `⤴ adopted ← 8409 exited`
    Adopted(u32),
    /// `⤴ reparented (kernel-reported parent)`
    Reparented,
    /// `(exit 0)`, `(killed SIGKILL)`
    Exit(Option<ExitStatus>),
}

impl Mark<'_> {
    /// The mark as text, with its leading space.
    pub fn text(&self) -> String {
        match self {
            Mark::Role(r) => format!(" [{r}]"),
            Mark::Container(c) => format!(" {{cid:{}}}", short_cid(c)),
            Mark::Threads(n) => format!(" {{{n} threads}}"),
            Mark::NsPid(n) => format!(" (pid {n} in container)"),
            Mark::Placeholder => " (placeholder)".into(),
            Mark::Subreaper => " (subreaper)".into(),
            Mark::CloneParent(Some(c)) => format!(" (CLONE_PARENT via {c})"),
            Mark::CloneParent(None) => " (CLONE_PARENT)".into(),
            Mark::Adopted(parent) => format!(" ⤴ adopted ← {parent} exited"),
            Mark::Reparented => " ⤴ reparented (kernel-reported parent)".into(),
            Mark::Exit(st) => format!(" ({})", exit_text(*st)),
        }
    }
}

/// `exit 0`, `killed SIGKILL`, `exited` (status unknown).
pub fn exit_text(st: Option<ExitStatus>) -> String {
    match st {
        Some(ExitStatus::Exited { code }) => format!("exit {code}"),
        Some(ExitStatus::Killed { signal, .. }) => {
            format!("killed {}", crate::names::signal(signal))
        }
        None => "exited".into(),
    }
}

/// The marks of `p`'s label, in display order (`threads`: count threads above one).
pub fn marks(p: &Process, threads: bool) -> Vec<Mark<'_>> {
    let mut v = Vec::with_capacity(6);
    v.extend(p.role.map(Mark::Role));
    v.extend(p.container_id.as_deref().map(Mark::Container));
    let n = p.live_thread_count();
    if threads && n > 1 {
        v.push(Mark::Threads(n));
    }
    v.extend(p.ns_pid().map(Mark::NsPid));
    if p.born_how() == How::Unknown {
        v.push(Mark::Placeholder);
    }
    if p.is_subreaper {
        v.push(Mark::Subreaper);
    }
    if let Some(l) = p.lineage.first().filter(|l| l.how == How::CloneParent) {
        v.push(Mark::CloneParent(l.caller));
    }
    if let Some(a) = p.last_adoption() {
        v.push(match a.reason {
            Some(Reason::ParentExited { parent, .. }) => Mark::Adopted(parent),
            _ => Mark::Reparented,
        });
    }
    if p.exited {
        v.push(Mark::Exit(p.exit_status));
    }
    v
}

/// `4090 runc [oci-runtime create] {cid:0123456789ab}` and marks.
pub fn node_label(p: &Process, opts: TreeOpts) -> String {
    let mut s = format!("{} {}", p.pid, p.name());
    for m in marks(p, opts.show_threads) {
        s.push_str(&m.text());
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
        if keep.insert(p.id) {
            for a in e.ancestors(p.id) {
                if !keep.insert(a.id) {
                    break;
                }
            }
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
    let mut found = false;
    e.subtree(p.id, |q| {
        found |= q.id != p.id && !q.exited;
        !found
    });
    found
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
                "caller_tid": l.caller_tid,
                "flags": l.flags_text(),
                "reason": l.reason_text(),
                "seq": l.seq,
            })
        })
        .collect();
    let exit_code = p.exit_status.map(|s| match s {
        ExitStatus::Exited { code } => json!(code),
        ExitStatus::Killed { .. } => Value::Null,
    });
    let signal = p.exit_status.and_then(|s| match s {
        ExitStatus::Killed { signal, .. } => Some(crate::names::signal(signal)),
        ExitStatus::Exited { .. } => None,
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
        "ns_pid": p.pidns.filter(|ns| ns.ns_pid != 0).map(|ns| ns.ns_pid),
        "pidns": p.pidns.filter(|ns| ns.is_known()).map(|ns| ns.inum),
        "pidns_level": p.pidns.map(|ns| ns.level),
        "pidns_inferred": p.pidns.is_some_and(|ns| !ns.is_known()),
        "subreaper": p.is_subreaper,
        "subreaper_seq": p.subreaper_seq,
        "subreaper_cleared_seq": p.subreaper_cleared_seq,
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
