//! Text and JSON views of the tree and the stories (schemas in docs/json-schemas.md).

use std::fmt::{self, Write};

use serde_json::{json, Value};

use crate::clock::Clock;
use crate::event::{ExitStatus, Syscall};

use super::ending::{Death, SignalRecord};
use super::engine::{Engine, Warning, WarningKind};
use super::pod::{in_pod, PodMatch};
use super::process::{How, ProcId, Process, Reason};
use super::roles::Role;
use super::story::{Phase, Story};
use crate::escape::escape;
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
    /// `<pod shop/web-7d9f · nginx>`: the pod and container its bundle's annotations name.
    Pod(&'a super::k8s::K8sIdentity),
    /// `{4 threads}`
    Threads(usize),
    /// `(uid 65534)`: not root, as the kernel said at its latest exec (or /proc at the start).
    Uid(u32),
    /// `(pid 1 in container)`: its pid inside its own pid namespace.
    NsPid(u32),
    /// `(placeholder)`: a pid the source named but never showed being created.
    Placeholder,
    /// `(parent not in the recording)`: a process the source showed acting whose birth and
    /// parent it never showed.
    ParentUnknown,
    /// `(made by a clone whose flags are not in the recording)`: a thread or a process, as
    /// far as the source tells (an strace log cut before the call's line).
    FlagsUnknown,
    /// `(exec result not in the recording)`: its latest exec's call is in the recording but
    /// not its result ([`super::process::ExecRecord::unconfirmed`]).
    ExecUnconfirmed,
    /// `(parent inferred from its SIGCHLD)`: its birth is not in the recording, and the
    /// process its SIGCHLD went to is its parent (do_notify_parent()).
    ParentInferred,
    /// An strace log's initial process whose pid the log never shows.
    InitialProcess,
    /// `(the recording machine's init)`: the host's PID 1 when its name is no init system's
    /// (a VM's `process_api`), [`Process::machine_init`].
    MachineInit,
    /// `(subreaper)`
    Subreaper,
    /// `(CLONE_PARENT via 8420)`: born to its caller's parent.
    CloneParent(Option<u32>),
    /// `⤴ adopted ← 8409 exited`
    Adopted(u32),
    /// `⤴ reparented (kernel-reported parent)`
    Reparented,
    /// `(exit 0)`, `(killed SIGTERM by 812)`, `(OOMKilled)`: [`exit_text`].
    Exit(String),
}

impl Mark<'_> {
    /// The mark as text, with its leading space.
    pub fn text(&self) -> String {
        match self {
            Mark::Role(r) => format!(" [{r}]"),
            Mark::Container(c) => format!(" {{cid:{}}}", escape(short_cid(c))),
            Mark::Pod(k) => {
                let pod = escape(&k.pod_text().unwrap_or_else(|| "?".into())).into_owned();
                match (&k.container_name, k.sandbox) {
                    (Some(c), _) => format!(" <pod {pod} · {}>", escape(c)),
                    (None, true) => format!(" <pod {pod} · sandbox>"),
                    (None, false) => format!(" <pod {pod}>"),
                }
            }
            Mark::Threads(n) => format!(" {{{n} threads}}"),
            Mark::Uid(u) => format!(" (uid {u})"),
            Mark::NsPid(n) => format!(" (pid {n} in container)"),
            Mark::Placeholder => " (placeholder)".into(),
            Mark::ParentUnknown => " (parent not in the recording)".into(),
            Mark::ParentInferred => " (parent inferred from its SIGCHLD)".into(),
            Mark::ExecUnconfirmed => " (exec result not in the recording)".into(),
            Mark::FlagsUnknown => " (made by a clone whose flags are not in the recording)".into(),
            Mark::InitialProcess => " (initial process: its pid is not in the log)".into(),
            Mark::MachineInit => " (the recording machine's init)".into(),
            Mark::Subreaper => " (subreaper)".into(),
            Mark::CloneParent(Some(c)) => format!(" (CLONE_PARENT via {c})"),
            Mark::CloneParent(None) => " (CLONE_PARENT)".into(),
            Mark::Adopted(parent) => format!(" ⤴ adopted ← {parent} exited"),
            Mark::Reparented => " ⤴ reparented (kernel-reported parent)".into(),
            Mark::Exit(st) => format!(" ({st})"),
        }
    }
}

/// How `p` ended, in a few words (`exit 0`, `killed SIGTERM by 812`, `OOMKilled`, `exited`
/// when the source did not show how): [`Death::short`].
pub fn exit_text(p: &Process) -> String {
    p.exit_text()
}

/// The marks of `p`'s label, in display order (`threads`: count threads above one).
pub fn marks(p: &Process, threads: bool) -> Vec<Mark<'_>> {
    let mut v = Vec::with_capacity(6);
    v.extend(p.role.map(Mark::Role));
    v.extend(p.container_id.as_deref().map(Mark::Container));
    v.extend(p.k8s.as_deref().filter(|k| !k.is_empty()).map(Mark::Pod));
    let n = p.live_thread_count();
    if threads && n > 1 {
        v.push(Mark::Threads(n));
    }
    v.extend(p.ns_pid().map(Mark::NsPid));
    if p.uid != 0 && p.uid != u32::MAX {
        v.push(Mark::Uid(p.uid));
    }
    if p.pid == crate::event::UNKNOWN_PID {
        // Only an strace log makes one: lines without a pid whose owner never showed its pid.
        v.push(Mark::InitialProcess);
    } else if p.born_how() == How::Unknown {
        v.push(match (p.parent_from_sigchld(), p.ppid, p.acted()) {
            (Some(_), _, _) => Mark::ParentInferred,
            (None, 0, true) if p.pid != 1 => Mark::ParentUnknown,
            _ => Mark::Placeholder,
        });
    }
    if p.machine_init().is_some() {
        v.push(Mark::MachineInit);
    }
    if p.is_subreaper {
        v.push(Mark::Subreaper);
    }
    if let Some(l) = p.lineage.first().filter(|l| l.how == How::CloneParent) {
        v.push(Mark::CloneParent(l.caller));
    }
    if p.exec_unconfirmed() {
        v.push(Mark::ExecUnconfirmed);
    }
    let clone = matches!(p.born_syscall, Some(Syscall::Clone | Syscall::Clone3));
    if clone && p.lineage.first().is_some_and(|l| l.flags.is_none()) {
        v.push(Mark::FlagsUnknown);
    }
    if let Some(a) = p.last_adoption() {
        v.push(match a.reason {
            Some(Reason::ParentExited { parent, .. }) => Mark::Adopted(parent),
            _ => Mark::Reparented,
        });
    }
    if p.exited {
        v.push(Mark::Exit(exit_text(p)));
    }
    v
}

/// `4090 runc [oci-runtime create] {cid:0123456789ab}` and marks.
pub fn node_label(p: &Process, opts: TreeOpts) -> String {
    let mut s = format!("{} {}", p.pid, escape(&p.name()));
    for m in marks(p, opts.show_threads) {
        s.push_str(&m.text());
    }
    s
}

/// pstree-like text, children ordered by pid.
pub fn tree_text(e: &Engine, opts: TreeOpts) -> String {
    text_of(|out| tree_text_of(e, opts, None, out))
}

/// Only what the recording saw act (born, exec'd, renamed, set a subreaper or exited after
/// the start) and its ancestors: leaves out the rest of the start snapshot.
pub fn traced_tree_text(e: &Engine, opts: TreeOpts) -> String {
    text_of(|out| write_text(e, opts, TextTree::Traced, out))
}

/// Only the processes of the pod `m` selects and their ancestors.
pub fn pod_tree_text(e: &Engine, opts: TreeOpts, m: &(impl PodMatch + ?Sized)) -> String {
    text_of(|out| tree_text_of(e, opts, Some(&super::pod::pod_scope(e, m)), out))
}

/// Which processes a text tree written by [`write_tree_text`] draws.
#[derive(Clone, Copy)]
pub enum TextTree<'a> {
    /// Every process ([`tree_text`]).
    All,
    /// What the recording saw act and its ancestors ([`traced_tree_text`]).
    Traced,
    /// The processes of a pod and their ancestors ([`pod_tree_text`]).
    Pod(&'a dyn PodMatch),
}

/// The text tree written to `out` line by line, never whole in memory (the tree of a
/// million processes is some 50 MB of text).
pub fn write_tree_text(
    e: &Engine,
    opts: TreeOpts,
    which: TextTree<'_>,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let mut w = IoText { out, err: None };
    match write_text(e, opts, which, &mut w) {
        Ok(()) => Ok(()),
        Err(fmt::Error) => Err(w.err.unwrap_or_else(|| std::io::Error::other("format"))),
    }
}

fn write_text(e: &Engine, opts: TreeOpts, which: TextTree<'_>, out: &mut dyn Write) -> fmt::Result {
    match which {
        TextTree::All => tree_text_of(e, opts, None, out),
        TextTree::Traced => tree_text_of(e, opts, Some(&e.with_ancestors(acted)), out),
        TextTree::Pod(m) => tree_text_of(e, opts, Some(&super::pod::pod_scope(e, m)), out),
    }
}

/// What `write` puts in a `String` (writing to one cannot fail).
fn text_of(write: impl FnOnce(&mut dyn Write) -> fmt::Result) -> String {
    let mut s = String::new();
    let _ = write(&mut s);
    s
}

/// An `io::Write` as a `fmt::Write`, keeping the I/O error `fmt::Error` cannot carry.
struct IoText<'a> {
    out: &'a mut dyn std::io::Write,
    err: Option<std::io::Error>,
}

impl Write for IoText<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.out.write_all(s.as_bytes()).map_err(|e| {
            self.err = Some(e);
            fmt::Error
        })
    }
}

/// Did the recording see `p` act: born, exec'd, renamed, set a subreaper or exited after the
/// start?
pub fn acted(p: &Process) -> bool {
    p.born_how() != How::Snapshot
        || p.exit_seq.is_some()
        || !p.execs.is_empty()
        || !p.renames().is_empty()
        || p.subreaper_seq().is_some()
}

fn tree_text_of(
    e: &Engine,
    opts: TreeOpts,
    keep: Option<&HashSet<ProcId>>,
    out: &mut dyn Write,
) -> fmt::Result {
    for root in e.roots() {
        if root.exited && !opts.show_exited && !has_live_descendant(e, root) {
            continue;
        }
        if keep.is_some_and(|k| !k.contains(&root.id)) {
            continue;
        }
        writeln!(out, "{}", node_label(root, opts))?;
        write_children(e, root, opts, keep, "", out)?;
    }
    Ok(())
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
    out: &mut dyn Write,
) -> fmt::Result {
    // Depth is bounded by the number of records; a cycle cannot form because a record only
    // ever gets a parent that existed before it or one found walking up from it.
    let kids = shown_children(e, p, opts, keep);
    let n = kids.len();
    for (i, c) in kids.into_iter().enumerate() {
        let last = i + 1 == n;
        let branch = if last { "└─ " } else { "├─ " };
        writeln!(out, "{prefix}{branch}{}", node_label(c, opts))?;
        let next = format!("{prefix}{}", if last { "   " } else { "│  " });
        // Bounds the recursion (and the line width) on absurdly deep chains.
        if next.len() < MAX_PREFIX_BYTES {
            write_children(e, c, opts, keep, &next, out)?;
        } else if !c.child_ids().is_empty() {
            let hidden = descendant_count(e, c, opts, keep);
            writeln!(
                out,
                "{next}└─ … {hidden} more below {} not drawn (too deep): see them with --root {} or --format json",
                c.pid, c.pid
            )?;
        }
    }
    Ok(())
}

/// The children of `p` the text tree draws, by pid.
fn shown_children<'e>(
    e: &'e Engine,
    p: &Process,
    opts: TreeOpts,
    keep: Option<&HashSet<ProcId>>,
) -> Vec<&'e Process> {
    e.children_of(p)
        .into_iter()
        .filter(|c| opts.show_exited || !c.exited || has_live_descendant(e, c))
        .filter(|c| keep.is_none_or(|k| k.contains(&c.id)))
        .collect()
}

/// Processes below `p`, all generations, that the text tree would draw.
fn descendant_count(
    e: &Engine,
    p: &Process,
    opts: TreeOpts,
    keep: Option<&HashSet<ProcId>>,
) -> usize {
    let mut stack = vec![p];
    let mut n = 0usize;
    while let Some(q) = stack.pop() {
        for c in shown_children(e, q, opts, keep) {
            n += 1;
            stack.push(c);
        }
        // A record only gets a parent that existed before it, so no cycle; bounded anyway.
        if n > e.process_count() {
            break;
        }
    }
    n
}

/// The text tree below the newest process with pid `root`, that process first; `None` when
/// the recording has no such pid.
pub fn subtree_text(e: &Engine, root: u32, opts: TreeOpts) -> Option<String> {
    let p = e.process(root)?;
    Some(text_of(|out| {
        writeln!(out, "{}", node_label(p, opts))?;
        write_children(e, p, opts, None, "", out)
    }))
}

/// One process of the tree JSON: every per-process field is built here; times on the recording's `clock`.
fn process_json(clock: &Clock, p: &Process) -> Value {
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
                "time": clock.rfc3339(l.ts_ns),
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
    let mut v = process_json_base(p, lineage, exit_code, signal);
    let exec = p.execs.last();
    v["born_ts_ns"] = json!(p.birth_ts_ns);
    v["born_time"] = json!(clock.rfc3339(p.birth_ts_ns));
    v["exec_seq"] = json!(exec.map(|x| x.seq));
    v["exec_ts_ns"] = json!(exec.map(|x| x.ts_ns));
    v["exec_time"] = json!(exec.and_then(|x| clock.rfc3339(x.ts_ns)));
    v["exec_result_unknown"] = json!(p.exec_unconfirmed());
    v["parent_from_sigchld"] = json!(p.parent_from_sigchld());
    v["exit_ts_ns"] = json!(p.exit_ts_ns);
    v["exit_time"] = json!(p.exit_ts_ns.and_then(|t| clock.rfc3339(t)));
    let moves = p.cgroup_moves().iter().map(
        |m| json!({ "seq": m.seq, "time": clock.rfc3339(m.ts_ns), "path": &*m.path, "by": m.by }),
    );
    v["cgroup_moves"] = moves.collect();
    v["death"] = p.death().map_or(Value::Null, |d| death_json(clock, &d));
    v["signals"] = p.signals().iter().map(|r| signal_json(clock, r)).collect();
    v["signals_dropped"] = json!(p.signals_dropped());
    v
}

/// The `death` object of the tree JSON; its time on the recording's `clock`.
pub fn death_json(clock: &Clock, d: &Death) -> Value {
    let by = d.sender();
    let mut v = json!({
        "how": d.how.as_str(),
        "signal": d.signal().map(crate::names::signal),
        "sender": by.map(|b| b.sender).or(d.ns_init),
        "sender_comm": by.map(|b| b.sender_comm.to_string()),
        "sender_tid": by.map(|b| b.sender_tid).filter(|&t| t != 0),
        "code": d.by.as_ref().map(|b| b.code_name()),
        "seq": d.seq,
        "ts_ns": d.ts_ns,
        "time": d.ts_ns.and_then(|t| clock.rfc3339(t)),
        "text": d.to_string(),
    });
    if let Some(o) = &d.oom {
        v["cgroup"] = json!(o.cgroup.as_deref());
        v["limit"] = json!(o.limit);
    }
    v
}

/// One entry of a process's `signals` list.
fn signal_json(clock: &Clock, r: &SignalRecord) -> Value {
    json!({
        "seq": r.seq,
        "ts_ns": r.ts_ns,
        "time": clock.rfc3339(r.ts_ns),
        "signal": r.signal_name(),
        "sender": r.sender,
        "target": r.target,
        "code": r.code_name(),
    })
}

fn process_json_base(
    p: &Process,
    lineage: Vec<Value>,
    exit_code: Option<Value>,
    signal: Option<String>,
) -> Value {
    json!({
        "pid": p.pid,
        "ppid": p.ppid,
        "comm": p.comm.to_string(),
        "exe": p.exe.as_deref(),
        "argv": &*p.argv,
        "role": p.role.map(|r| r.name()),
        "role_detail": p.role.and_then(|r| r.detail()),
        "container_id": p.container_id.as_deref(),
        "uid": (p.uid != u32::MAX).then_some(p.uid),
        "euid": (p.euid != u32::MAX).then_some(p.euid),
        "standing": p.standing.as_str(),
        "ns_pid": p.pidns.filter(|ns| ns.ns_pid != 0).map(|ns| ns.ns_pid),
        "pidns": p.pidns.filter(|ns| ns.is_known()).map(|ns| ns.inum),
        "pidns_level": p.pidns.map(|ns| ns.level),
        "pidns_inferred": p.pidns.is_some_and(|ns| !ns.is_known()),
        "pod": p.k8s.as_ref().and_then(|k| k.pod.as_deref()),
        "container_name": p.k8s.as_ref().and_then(|k| k.container_name.as_deref()),
        "sandbox": p.k8s.as_ref().is_some_and(|k| k.sandbox),
        "sandbox_id": p.k8s.as_ref().and_then(|k| k.sandbox_id.as_deref()),
        "runtime_namespace": p.k8s.as_ref().and_then(|k| k.runtime_namespace.as_deref()),
        "cgroup": p.cgroup.as_deref(),
        "subreaper": p.is_subreaper,
        "subreaper_seq": p.subreaper_seq(),
        "subreaper_cleared_seq": p.subreaper_cleared_seq(),
        "exited": p.exited,
        "exit_code": exit_code.unwrap_or(Value::Null),
        "exit_signal": signal,
        "threads": p.live_tids().collect::<Vec<u32>>(),
        "start_seq": p.start_seq,
        "exit_seq": p.exit_seq,
        "lineage": lineage,
    })
}

/// What the engine's warning is about: a short name, and the pid when it names one.
fn warning_kind(k: &WarningKind) -> (&'static str, Option<u32>) {
    match *k {
        WarningKind::UnknownPid { pid } => ("unknown_pid", Some(pid)),
        WarningKind::UnknownThread { pid, .. } => ("unknown_thread", Some(pid)),
        WarningKind::PidReuse { pid } => ("pid_reuse", Some(pid)),
        WarningKind::DuplicateThread { pid, .. } => ("duplicate_thread", Some(pid)),
        WarningKind::Disagreement { pid, .. } => ("disagreement", Some(pid)),
        WarningKind::CorrectedAfterLoss { pid, .. } => ("corrected_after_loss", Some(pid)),
        WarningKind::SeqBackwards { .. } => ("seq_backwards", None),
        WarningKind::LostEvents { .. } => ("lost_events", None),
        WarningKind::PendingExecOverflow => ("pending_exec_overflow", None),
        WarningKind::IdentityNotFromRoot { pid, .. } => ("identity_not_from_root", Some(pid)),
        WarningKind::IdentityFromContainer { pid } => ("identity_from_container", Some(pid)),
        WarningKind::RoleRefused { pid, .. } => ("role_refused", Some(pid)),
        WarningKind::IdentityConflict { pid } => ("identity_conflict", Some(pid)),
        WarningKind::SigchldDisagreement { pid, .. } => ("sigchld_disagreement", Some(pid)),
    }
}

/// One entry of the JSON `warnings` list: an engine anomaly, or something the input said
/// (a damaged or cut-short file, lines not understood), which has no seq or pid.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct JsonWarning {
    /// Seq of the event that revealed it (`None` for input warnings).
    pub seq: Option<u64>,
    /// The process it is about, when one.
    pub pid: Option<u32>,
    /// A short machine name (`unknown_pid`, `lost_events`, ..., `input`).
    pub kind: &'static str,
    /// One line for people.
    pub text: String,
}

impl From<&Warning> for JsonWarning {
    fn from(w: &Warning) -> Self {
        let (kind, pid) = warning_kind(&w.kind);
        JsonWarning {
            seq: Some(w.seq),
            pid,
            kind,
            text: w.kind.to_string(),
        }
    }
}

impl JsonWarning {
    /// A warning about the input itself (kind `input`).
    pub fn input(text: impl Into<String>) -> Self {
        JsonWarning {
            seq: None,
            pid: None,
            kind: "input",
            text: text.into(),
        }
    }
}

/// The processes of [`TreeJson`], serialized one at a time so a huge tree is never held as a
/// whole JSON value; their times on the recording's clock.
struct ProcessList<'a>(&'a [&'a Process], Clock);

impl serde::Serialize for ProcessList<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|p| process_json(&self.1, p)))
    }
}

/// The tree as JSON: `{ "last_seq", "warning_count", "warnings": [...], "processes": [...] }`,
/// processes by pid then seq. `input_warnings` come first in `warnings` and count in
/// `warning_count`; the engine's list holds its first [`super::MAX_WARNINGS`].
#[derive(serde::Serialize)]
pub struct TreeJson<'a> {
    last_seq: Option<u64>,
    warning_count: u64,
    warnings: Vec<JsonWarning>,
    processes: ProcessList<'a>,
}

/// Builds [`TreeJson`] over `procs` (from [`tree_json_processes`]).
pub fn tree_json_doc<'a>(
    e: &Engine,
    procs: &'a [&'a Process],
    input_warnings: &[JsonWarning],
) -> TreeJson<'a> {
    let mut warnings = input_warnings.to_vec();
    warnings.extend(e.warnings().iter().map(JsonWarning::from));
    TreeJson {
        last_seq: e.last_seq(),
        warning_count: e.warning_count() + input_warnings.len() as u64,
        warnings,
        processes: ProcessList(procs, e.clock()),
    }
}

/// The processes in JSON order: by pid, then start seq; only those of the pod `pod` selects
/// when given.
pub fn tree_json_processes<'e>(e: &'e Engine, pod: Option<&dyn PodMatch>) -> Vec<&'e Process> {
    let mut ps: Vec<&Process> = e
        .processes()
        .filter(|p| pod.is_none_or(|m| in_pod(p, m)))
        .collect();
    ps.sort_by_key(|p| (p.pid, p.start_seq, p.id));
    ps
}

/// Writes the tree JSON (pretty-printed) to `out`, one process at a time; only pod `pod`'s
/// processes when given.
pub fn write_tree_json(
    e: &Engine,
    input_warnings: &[JsonWarning],
    pod: Option<&dyn PodMatch>,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let procs = tree_json_processes(e, pod);
    let doc = tree_json_doc(e, &procs, input_warnings);
    serde_json::to_writer_pretty(&mut *out, &doc).map_err(std::io::Error::from)?;
    out.write_all(b"\n")
}

/// The tree as one JSON value (tests, small trees); `tracer tree` streams with
/// [`write_tree_json`].
pub fn tree_json(e: &Engine) -> Value {
    let procs = tree_json_processes(e, None);
    serde_json::to_value(tree_json_doc(e, &procs, &[])).unwrap_or(Value::Null)
}

/// Stories as text: a header per container birth, then one line per step.
pub fn story_text(stories: &[Story]) -> String {
    story_text_with(stories, false)
}

/// Width the explanations are wrapped to in [`story_text_with`].
const WHY_WIDTH: usize = 96;

/// [`story_text`], with each step's explanation ([`super::explain::why`]) under it when
/// `explain`.
pub fn story_text_with(stories: &[Story], explain: bool) -> String {
    let mut out = String::new();
    for (i, s) in stories.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&story_header(s, false));
        out.push('\n');
        for st in &s.steps {
            let _ = writeln!(out, "  [seq {:>6}] {}", st.seq, escape(&st.text));
            if explain {
                let w = super::explain::why(s, st);
                let opts = textwrap::Options::new(WHY_WIDTH)
                    .initial_indent("      why: ")
                    .subsequent_indent("           ");
                for line in textwrap::wrap(&w.text, &opts) {
                    let _ = writeln!(out, "{line}");
                }
                let _ = writeln!(out, "           ({})", w.source);
            }
        }
    }
    out
}

/// [`story_text_with`] for stories each headed by its number (`#3 pod …`), the one
/// `--story 3` takes: `stories` are `(number, story)`.
pub fn numbered_story_text(stories: &[(usize, &Story)], explain: bool) -> String {
    let mut out = String::new();
    for (i, (n, s)) in stories.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let _ = write!(out, "#{n} ");
        out.push_str(&story_text_with(std::slice::from_ref(*s), explain));
    }
    out
}

/// A story's header: `pod shop/web: sandbox 0123… (containerd, runc create) → pause`,
/// `pod shop/web: container 4567… (nginx) (…) → nginx [exec]`, `container 89ab… (…)` outside
/// a pod. `brief` (the viewer): a named container by its name only, an unnamed one by the
/// 12-character short id (`crictl ps`'s).
pub fn story_header(s: &Story, brief: bool) -> String {
    if let Some(r) = &s.runtime_restart {
        return restart_header(r);
    }
    let mut out = String::new();
    let cid = s.container_id.as_deref().unwrap_or("?");
    let what = if s.sandbox { "sandbox" } else { "container" };
    let id = match (&s.container_name, brief) {
        (Some(n), true) => escape(n).into_owned(),
        (_, true) => escape(short_cid(cid)).into_owned(),
        // A runtime's 64-hex id as crictl and docker print it, twelve digits; the JSON keeps
        // the whole id, and any other id is printed whole.
        (_, false) if cid.len() == 64 && cid.bytes().all(|b| b.is_ascii_hexdigit()) => {
            format!("{}…", short_cid(cid))
        }
        (_, false) => escape(cid).into_owned(),
    };
    match (&s.pod, &s.sandbox_id) {
        // The pod by name when a bundle gave it, else by the short form of its sandbox id,
        // as `crictl pods` shows it.
        (Some(pod), _) => {
            let _ = write!(out, "pod {}: {what} {id}", escape(pod));
        }
        (None, Some(sb)) => {
            let _ = write!(out, "pod {}: {what} {id}", escape(short_cid(sb)));
        }
        (None, None) => {
            let _ = write!(out, "container {id}");
        }
    }
    if let (Some(n), false) = (&s.container_name, brief) {
        let _ = write!(out, " ({})", escape(n));
    }
    let _ = write!(out, " ({}", s.kind.as_str());
    if let Some(r) = &s.runtime {
        let _ = write!(out, ", {}", escape(r));
    }
    out.push(')');
    if let Some(w) = &s.workload {
        let _ = write!(out, " → {}", escape(w));
    }
    out.push_str(&phase_label(s));
    out
}

/// `runtime daemon containerd restarted: 2058 → 2173, 3 lived on [runtime_restart]`.
fn restart_header(r: &super::restart::RuntimeRestart) -> String {
    format!(
        "runtime daemon {} restarted: {} → {}, {} lived on, {} lost [{}]",
        escape(&r.daemon),
        r.old_pid,
        r.new_pid,
        r.survivors.len(),
        r.lost.len(),
        Phase::RuntimeRestart.as_str()
    )
}

/// ` [exec]`, ` [death]`, ` [restart, attempt 2]`; nothing for a birth (the default).
pub fn phase_label(s: &Story) -> String {
    match (s.phase, s.attempt) {
        (Phase::Birth, _) => String::new(),
        (Phase::Restart, Some(n)) => format!(" [restart, attempt {n}]"),
        (Phase::Restart | Phase::Exec | Phase::Death | Phase::RuntimeRestart, _) => {
            format!(" [{}]", s.phase.as_str())
        }
    }
}

/// Stories as JSON: `{ "stories": [...] }`.
pub fn story_json(stories: &[Story]) -> Value {
    json!({ "stories": stories })
}
