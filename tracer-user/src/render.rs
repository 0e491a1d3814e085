//! strace-like one-line rendering of events, with enter/exit pairing per thread.
//!
//! A syscall's enter is held until its exit so the usual case prints as one line
//! (`[pid 4085] clone(flags=CLONE_PARENT|SIGCHLD) = 4086`). When another thread's event comes
//! in between, the held call is printed `<unfinished ...>` and its exit later as
//! `<... clone resumed>) = 4086`, exactly as strace does.
//!
//! strace's habits, each an option of [`LineRenderer`]: a time stamp after the pid
//! (`-t`/`-tt`/`-ttt`/`-r`, [`Stamper`]), the pid's name (`-Y`: `[pid  1234<sleep>]`, and in
//! `si_pid`), `si_pid` in the receiver's pid namespace (`--decode-pids=pidns`), and which lines
//! print (`-e trace=`, `-e signal=`: [`LineFilter`]). A signal is printed under its receiver,
//! as strace does. The names come from the lineage engine the caller feeds with every event
//! before rendering it ([`LineRenderer::render_in`]).

mod filter;

pub use filter::{Class, FilterError, LineFilter};

use crate::clock::Stamper;
use crate::escape::{angled, escape, quoted as quote};
use crate::event::{Event, EventKind, ExitStatus, OomInfo, SignalInfo, SignalResult, Syscall};
use crate::lineage::Engine;
use crate::names;
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

/// `-Y` / `--decode-pids=`: what a pid is printed with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Decode {
    /// `comm` (`-Y`): the task's name, `[pid  1234<sleep>]`, `si_pid=9034<runc>`.
    pub comm: bool,
    /// `pidns`: `si_pid` as the receiver's pid namespace has it, with the host pid in strace's
    /// comment (`si_pid=1 /* 28484 in strace's PID NS */`); a clone's return value likewise.
    pub pidns: bool,
    /// `k8s` (ours, strace has no such thing): the pod and container of the task,
    /// `[pid  1234<sleep> k8s=default/web/app]`.
    pub k8s: bool,
}

impl Decode {
    /// From `--decode-pids=LIST` (`comm`, `pidns`, `k8s`, `all`, `none`, comma separated).
    pub fn parse(list: &str) -> Result<Decode, String> {
        let mut d = Decode::default();
        for w in list.split(',') {
            match w.trim() {
                "comm" => d.comm = true,
                "pidns" => d.pidns = true,
                "k8s" => d.k8s = true,
                "all" => {
                    d = Decode {
                        comm: true,
                        pidns: true,
                        k8s: true,
                    }
                }
                "none" => d = Decode::default(),
                other => {
                    return Err(format!(
                        "--decode-pids={}: unknown (comm, pidns, k8s, all, none)",
                        escape(other)
                    ))
                }
            }
        }
        Ok(d)
    }

    /// Whether the renderer needs the engine's view of each process.
    pub fn any(&self) -> bool {
        self.comm || self.pidns || self.k8s
    }
}

/// Arguments of a held syscall enter, already formatted.
#[derive(Clone)]
struct Held {
    syscall: Syscall,
    args: String,
    /// Printed as `<unfinished ...>` already.
    flushed: bool,
    /// Host pid of the child, from the fork event (it may differ from the return value,
    /// which is in the caller's pid namespace).
    child: Option<u32>,
    /// The pid as printed at the enter (`-Y`: its name then).
    label: String,
    /// The enter's time (its line's stamp).
    ts_ns: u64,
}

/// Turns events into strace-like lines. Feed events in order with [`LineRenderer::render`].
#[derive(Clone, Default)]
pub struct LineRenderer {
    held: HashMap<u32, Held>,
    /// Thread whose enter is held and printed nothing yet (at most one at a time).
    open: Option<u32>,
    /// Prefix each line with the event's sequence number.
    pub show_seq: bool,
    /// The events come from the "sched" probe set (no syscall probes, see
    /// [`CaptureBuilder::syscalls`](crate::capture::CaptureBuilder::syscalls) and the
    /// `probes` trace-header entry): no syscall exits arrive, so an execve line completes at
    /// its exec and a prctl line at once, both `= 0` (only successful ones are seen).
    pub sched_probes: bool,
    /// Time stamps (`-t`, `-tt`, `-ttt`, `-r`) from the recording's clock.
    pub stamper: Option<Stamper>,
    /// What pids are printed with (`-Y`, `--decode-pids`).
    pub decode: Decode,
    /// Which lines print (`-e trace=`, `-e signal=`).
    pub filter: LineFilter,
    /// The processes traced, when not every one is (a command and what it creates): a signal
    /// prints only at one of them, as strace prints a signal only where it dequeues it. The
    /// probes also report what a traced process sends outside (its SIGCHLD to the tracer
    /// that started it), which is no traced task's line.
    pub traced: Option<HashSet<u32>>,
}

fn ret_text(syscall: Syscall, ret: i64, child: Option<u32>, pidns: bool) -> String {
    if ret < 0 {
        return format!("-1 {}", names::errno(-ret));
    }
    match child {
        Some(host) if syscall.creates_task() && ret > 0 && host as i64 != ret => match pidns {
            true => format!("{ret} /* {host} in strace's PID NS */"),
            false => format!("{ret} (host pid {host})"),
        },
        _ => ret.to_string(),
    }
}

/// What a line is about, with the engine that names its pids.
struct Ctx<'a> {
    engine: Option<&'a Engine>,
}

impl LineRenderer {
    /// A renderer with no pending calls and default options.
    pub fn new() -> Self {
        Self::default()
    }

    /// How `tid` is printed inside `[pid ...]`: right-aligned, then `<comm>` (`-Y`) and
    /// ` k8s=NS/POD/CONTAINER` when asked and known.
    fn label(&self, cx: &Ctx, tid: u32) -> String {
        let mut s = format!("{tid:>6}");
        let Some((p, comm)) = cx.engine.and_then(|e| e.thread_of(tid)) else {
            return s;
        };
        if self.decode.comm {
            let _ = write!(s, "<{}>", angled(&comm.to_str_lossy()));
        }
        if let (true, Some(k)) = (self.decode.k8s, p.k8s.as_deref()) {
            if let Some(pod) = &k.pod {
                let _ = write!(s, " k8s={}/{}", angled(&pod.namespace), angled(&pod.name));
                if let Some(c) = &k.container_name {
                    let _ = write!(s, "/{}", angled(c));
                }
            }
        }
        s
    }

    /// The start of a line: `#SEQ `, `[pid LABEL] ` (when the line is a task's) and the stamp.
    fn lead(&mut self, seq: Option<u64>, label: Option<&str>, ts_ns: u64) -> String {
        let mut line = String::new();
        match (self.show_seq, seq) {
            (true, Some(seq)) => {
                let _ = write!(line, "#{seq:<6} ");
            }
            (true, None) => line.push_str("        "),
            (false, _) => {}
        }
        if let Some(label) = label {
            let _ = write!(line, "[pid {label}] ");
        }
        if let Some(st) = &mut self.stamper {
            line.push_str(&st.stamp(ts_ns));
        }
        line
    }

    /// The start of `ev`'s line about `tid`.
    fn lead_for(&mut self, cx: &Ctx, ev: &Event, tid: u32) -> String {
        let label = self.label(cx, tid);
        self.lead(Some(ev.seq), Some(&label), ev.ts_ns)
    }

    /// Prints the held enter of another thread as `<unfinished ...>` before `ev`'s line.
    fn flush_open(&mut self, ev: &Event, lines: &mut Vec<String>) {
        let Some(tid) = self.open.take() else { return };
        if tid == ev.tid {
            self.open = Some(tid);
            return;
        }
        let Some(h) = self.held.get(&tid).cloned() else {
            return;
        };
        let mut line = self.lead(None, Some(&h.label), h.ts_ns);
        let _ = write!(line, "{}({} <unfinished ...>", h.syscall, h.args);
        if let Some(h) = self.held.get_mut(&tid) {
            h.flushed = true;
        }
        lines.push(line);
    }

    fn hold(
        &mut self,
        cx: &Ctx,
        ev: &Event,
        syscall: Syscall,
        args: String,
        out: &mut Vec<String>,
    ) {
        self.flush_open(ev, out);
        let label = self.label(cx, ev.tid);
        let held = Held {
            syscall,
            args,
            flushed: false,
            child: None,
            label,
            ts_ns: ev.ts_ns,
        };
        if let Some(old) = self.held.insert(ev.tid, held) {
            // An enter without exit (lost event): say so rather than drop it silently.
            if !old.flushed {
                let mut line = self.lead(Some(ev.seq), Some(&old.label), old.ts_ns);
                let _ = write!(line, "{}({} <no exit seen>", old.syscall, old.args);
                out.push(line);
            }
        }
        self.open = Some(ev.tid);
    }

    /// The line for `tid`'s return from `syscall`: the held enter completed or resumed.
    fn syscall_exit(
        &mut self,
        cx: &Ctx,
        ev: &Event,
        syscall: Syscall,
        ret: i64,
        out: &mut Vec<String>,
    ) {
        self.flush_open(ev, out);
        if self.open == Some(ev.tid) {
            self.open = None;
        }
        let pidns = self.decode.pidns;
        let line = match self.held.remove(&ev.tid) {
            Some(h) if h.syscall == syscall && !h.flushed => {
                let mut line = self.lead(Some(ev.seq), Some(&h.label), h.ts_ns);
                let ret = ret_text(syscall, ret, h.child, pidns);
                let _ = write!(line, "{}({}) = {ret}", h.syscall, h.args);
                line
            }
            held => {
                // Resumed, or a new child returning from clone, or an exit whose enter we missed.
                let child = held.filter(|h| h.syscall == syscall).and_then(|h| h.child);
                let mut line = self.lead_for(cx, ev, ev.tid);
                let ret = ret_text(syscall, ret, child, pidns);
                let _ = write!(line, "<... {syscall} resumed>) = {ret}");
                line
            }
        };
        out.push(line);
    }

    /// Renders one event; returns zero or more finished lines. Without an engine, pids are
    /// printed bare (`-Y` needs one: [`LineRenderer::render_in`]).
    pub fn render(&mut self, ev: &Event) -> Vec<String> {
        self.render_in(ev, None)
    }

    /// Renders one event, naming pids from `engine`, which the caller has fed with every event
    /// up to and including `ev` (so a process's name is the one it has at this event).
    pub fn render_in(&mut self, ev: &Event, engine: Option<&Engine>) -> Vec<String> {
        let cx = Ctx { engine };
        let mut lines = Vec::new();
        if !self.keep_traced(ev) || !self.filter.shows(ev) || self.orphan_exit(ev) {
            if matches!(ev.kind, EventKind::TaskExit { .. }) {
                self.forget(ev.tid);
            }
            return lines;
        }
        match &ev.kind {
            EventKind::CloneEnter {
                syscall,
                flags,
                exit_signal,
            } => {
                let args = clone_args(*syscall, flags.0, *exit_signal);
                self.hold(&cx, ev, *syscall, args, &mut lines);
            }
            EventKind::ExecEnter { syscall, .. } => {
                let args = exec_args(&ev.kind);
                self.hold(&cx, ev, *syscall, args, &mut lines);
            }
            EventKind::PrctlEnter { .. } => self.prctl(&cx, ev, &mut lines),
            EventKind::Subreaper { on } => {
                // The prctl it stands for, as the recordings before this kind printed it; no
                // exit comes (the probes saw the flag, not a call).
                let opt = names::prctl_option(tracer_common::prctl::PR_SET_CHILD_SUBREAPER);
                let args = format!("{opt}, {}", u8::from(*on));
                self.hold(&cx, ev, Syscall::Prctl, args, &mut lines);
                self.syscall_exit(&cx, ev, Syscall::Prctl, 0, &mut lines);
            }
            EventKind::SyscallExit { syscall, ret } => {
                self.syscall_exit(&cx, ev, *syscall, *ret, &mut lines);
            }
            EventKind::ExitEnter { syscall, code } => {
                self.flush_open(ev, &mut lines);
                let mut line = self.lead_for(&cx, ev, ev.tid);
                let _ = write!(line, "{syscall}({code}) = ?");
                lines.push(line);
            }
            EventKind::Fork { .. } => self.fork(&cx, ev, &mut lines),
            EventKind::Exec { .. } => self.exec(&cx, ev, &mut lines),
            EventKind::TaskExit { .. } => self.task_exit(&cx, ev, &mut lines),
            EventKind::Signal(i) => self.signal(&cx, ev, i, &mut lines),
            EventKind::CgroupAttach { .. }
            | EventKind::OomVictim(_)
            | EventKind::ContainerMeta { .. } => {
                if let Some(text) = notice_text(&ev.kind) {
                    self.flush_open(ev, &mut lines);
                    let mut line = self.lead_for(&cx, ev, ev.tid);
                    let _ = write!(line, "--- {text} ---");
                    lines.push(line);
                }
            }
        }
        lines
    }

    /// A prctl call's line (with its exit when no exit will come).
    fn prctl(&mut self, cx: &Ctx, ev: &Event, lines: &mut Vec<String>) {
        let EventKind::PrctlEnter {
            option,
            arg2,
            name,
            shown,
        } = &ev.kind
        else {
            return;
        };
        let opt = names::prctl_option(*option);
        let args = match (name, *option) {
            // as the strace log wrote them (printable ASCII, bounded by the importer)
            _ if shown.as_ref().is_some_and(|s| s.args.is_some()) => shown
                .as_ref()
                .and_then(|s| s.args.as_deref())
                .map(shown_args)
                .unwrap_or_default(),
            (Some(n), _) => format!("{opt}, {}", quote(&n.value, n.truncated)),
            (None, tracer_common::prctl::PR_SET_PDEATHSIG) => {
                format!("{opt}, {}", names::signal(*arg2 as i32))
            }
            (None, _) => format!("{opt}, {arg2}"),
        };
        self.hold(cx, ev, Syscall::Prctl, args, lines);
        if self.sched_probes {
            // No exit will come: only successful ones are seen.
            self.syscall_exit(cx, ev, Syscall::Prctl, 0, lines);
        }
    }

    /// Follows the traced set through `ev`; false for a signal whose receiver is outside it.
    fn keep_traced(&mut self, ev: &Event) -> bool {
        let Some(traced) = self.traced.as_mut() else {
            return true;
        };
        match &ev.kind {
            EventKind::Fork { child_tgid, .. } if traced.contains(&ev.tgid) => {
                traced.insert(*child_tgid);
            }
            EventKind::TaskExit {
                group_dead: true, ..
            } => {
                traced.remove(&ev.tgid);
            }
            EventKind::Signal(i) => {
                let receiver = if i.target != 0 { i.target } else { ev.tgid };
                return traced.contains(&receiver);
            }
            _ => {}
        }
        true
    }

    /// A return whose call `-e trace=` left out (a prctl that was not a rename).
    fn orphan_exit(&self, ev: &Event) -> bool {
        !self.filter.is_all()
            && matches!(ev.kind, EventKind::SyscallExit { .. })
            && !self.held.contains_key(&ev.tid)
    }

    fn forget(&mut self, tid: u32) {
        self.held.remove(&tid);
        if self.open == Some(tid) {
            self.open = None;
        }
    }

    fn fork(&mut self, cx: &Ctx, ev: &Event, lines: &mut Vec<String>) {
        let EventKind::Fork {
            child_tid,
            child_tgid,
            child_ppid,
            syscall,
            flags,
            ..
        } = &ev.kind
        else {
            return;
        };
        if let Some(h) = self.held.get_mut(&ev.tid) {
            h.child = Some(*child_tid);
        }
        // Held line of the creator stays open: the fork happens inside its syscall.
        let mut line = self.lead(Some(ev.seq), None, ev.ts_ns);
        if child_tgid != child_tid {
            let _ = write!(line, "Thread {child_tid} attached (process {child_tgid})");
        } else {
            let _ = write!(line, "Process {child_tid} attached (parent {child_ppid})");
        }
        let by = self.label(cx, ev.tid);
        let _ = write!(line, " by [pid {}]", by.trim_start());
        // No clone line will say how it was created.
        if let (true, Some(f)) = (self.sched_probes, flags) {
            let name = syscall.unwrap_or(Syscall::Clone);
            let _ = write!(line, " {name}({})", names::clone_flags(f.0));
        }
        self.flush_open(ev, lines);
        lines.push(line);
    }

    fn exec(&mut self, cx: &Ctx, ev: &Event, lines: &mut Vec<String>) {
        let EventKind::Exec { old_tid, .. } = &ev.kind else {
            return;
        };
        if *old_tid != ev.tid {
            // strace's own form (strace.c maybe_switch_tcbs): in the leader's pid, which the
            // exec'ing thread now has, naming the thread's old tid; the exec's return follows.
            self.flush_open(ev, lines);
            let mut line = self.lead_for(cx, ev, ev.tid);
            let _ = write!(line, "+++ superseded by execve in pid {old_tid} +++");
            lines.push(line);
            // The exec's exit is reported in the leader's tid: move the held enter.
            if let Some(h) = self.held.remove(old_tid) {
                self.held.insert(ev.tid, h);
            }
        }
        if self.sched_probes {
            // No exit will come: the exec is the successful return.
            match self.held.get(&ev.tid).map(|h| h.syscall) {
                Some(sc) if sc.is_exec() => self.syscall_exit(cx, ev, sc, 0, lines),
                _ => {}
            }
        }
    }

    fn task_exit(&mut self, cx: &Ctx, ev: &Event, lines: &mut Vec<String>) {
        let EventKind::TaskExit {
            exit_code,
            group_dead,
        } = &ev.kind
        else {
            return;
        };
        self.flush_open(ev, lines);
        self.held.remove(&ev.tid);
        let mut line = self.lead_for(cx, ev, ev.tid);
        let status = ExitStatus::from_wait_status(*exit_code);
        match group_dead {
            true => {
                let _ = write!(line, "+++ {status} +++");
            }
            false => {
                let _ = write!(line, "+++ thread {status} +++");
            }
        }
        lines.push(line);
    }

    /// strace's signal line, under the receiver: `[pid TARGET] --- SIGTERM {si_signo=SIGTERM,
    /// si_code=SI_USER, si_pid=SENDER, si_uid=0} ---`.
    fn signal(&mut self, cx: &Ctx, ev: &Event, i: &SignalInfo, lines: &mut Vec<String>) {
        self.flush_open(ev, lines);
        let target = [i.target_tid, i.target, ev.tid]
            .into_iter()
            .find(|&t| t != 0)
            .unwrap_or(ev.tid);
        let mut line = self.lead_for(cx, ev, target);
        line.push_str("--- ");
        line.push_str(&self.signal_text(cx, ev, i));
        line.push_str(" ---");
        lines.push(line);
    }

    fn signal_text(&self, cx: &Ctx, ev: &Event, i: &SignalInfo) -> String {
        let sig = names::signal(i.signal);
        let mut t = format!(
            "{sig} {{si_signo={sig}, si_code={}",
            names::si_code(i.signal, i.code)
        );
        // The kernel fills si_pid and si_uid for a sender's kill/tgkill/sigqueue (si_code <= 0)
        // and a child's SIGCHLD; faults and SI_KERNEL name none.
        let has_sender = i.code <= 0 || i.signal == 17;
        if has_sender && i.sender != 0 {
            let _ = write!(t, ", si_pid={}", self.sender_text(cx, i));
            // The event's uid is its task's: the sender's when the event is in its context.
            if ev.tgid == i.sender && ev.uid != u32::MAX {
                let _ = write!(t, ", si_uid={}", ev.uid);
            }
        }
        t.push('}');
        t.push_str(match i.result {
            SignalResult::Delivered => "",
            SignalResult::Ignored => " (ignored)",
            SignalResult::AlreadyPending => " (already pending)",
            SignalResult::OverflowFail => " (not queued: overflow)",
            SignalResult::LoseInfo => " (queued without its info)",
            SignalResult::Other => " (unknown result)",
        });
        t
    }

    /// `si_pid`: the sender's pid, `<comm>` with `-Y`; with `pidns`, as the receiver's pid
    /// namespace has it (0 for a sender outside it) with the host pid in strace's comment.
    fn sender_text(&self, cx: &Ctx, i: &SignalInfo) -> String {
        let tid = if i.sender_tid != 0 {
            i.sender_tid
        } else {
            i.sender
        };
        let sender = cx.engine.and_then(|e| e.thread_of(tid));
        let mut s = i.sender.to_string();
        let ns = |pid: u32| {
            cx.engine
                .and_then(|e| e.thread_of(pid))
                .and_then(|(p, _)| p.pidns)
        };
        let target = if i.target != 0 {
            i.target
        } else {
            i.target_tid
        };
        let nested = ns(target).filter(|n| n.level > 0 && self.decode.pidns);
        if let Some(rns) = nested {
            let inside = sender
                .and_then(|(p, _)| p.pidns)
                .filter(|sns| sns.inum == rns.inum)
                .map_or(0, |sns| sns.ns_pid);
            s = inside.to_string();
        }
        if let (true, Some((_, comm))) = (self.decode.comm, sender) {
            let _ = write!(s, "<{}>", angled(&comm.to_str_lossy()));
        }
        if nested.is_some() {
            let _ = write!(s, " /* {} in strace's PID NS */", i.sender);
        }
        s
    }
}

fn clone_args(syscall: Syscall, flags: u64, exit_signal: u32) -> String {
    match syscall {
        Syscall::Fork | Syscall::Vfork => String::new(),
        Syscall::Clone3 => format!(
            "{{flags={}, exit_signal={}}}",
            names::clone_flags(flags),
            names::signal(exit_signal as i32)
        ),
        _ => format!(
            "flags={}",
            names::clone_flags_with_signal(flags, exit_signal)
        ),
    }
}

fn exec_args(kind: &EventKind) -> String {
    let EventKind::ExecEnter {
        syscall,
        dirfd,
        at_flags,
        filename,
        argv,
        argv_truncated,
    } = kind
    else {
        return String::new();
    };
    let mut args = String::new();
    if *syscall == Syscall::Execveat {
        if *dirfd == -100 {
            args.push_str("AT_FDCWD, ");
        } else {
            let _ = write!(args, "{dirfd}, ");
        }
    }
    args.push_str(&quote(&filename.value, filename.truncated));
    args.push_str(", [");
    for (i, a) in argv.iter().enumerate() {
        if i > 0 {
            args.push_str(", ");
        }
        args.push_str(&quote(a, false));
    }
    if *argv_truncated {
        args.push_str(", ...");
    }
    args.push(']');
    if *syscall == Syscall::Execveat {
        let _ = write!(args, ", {}", names::at_flags(*at_flags));
    }
    args
}

/// A prctl's arguments as an strace log wrote them: kept as they are when they are what the
/// importer keeps (printable ASCII, at most [`MAX_SHOWN_ARGS`](crate::event::MAX_SHOWN_ARGS)
/// bytes); anything else (a JSON-lines file says what it likes) escaped and cut.
fn shown_args(a: &str) -> String {
    let max = crate::event::MAX_SHOWN_ARGS;
    if a.len() <= max && a.bytes().all(|b| (0x20..=0x7e).contains(&b)) {
        return a.to_owned();
    }
    let cut: String = a.chars().take(max).collect();
    escape(&cut).into_owned()
}

/// The notices strace has no line for, in its `--- ... ---` style.
fn notice_text(kind: &EventKind) -> Option<String> {
    Some(match kind {
        EventKind::CgroupAttach { pid, path, .. } => format!(
            "cgroup: {pid} moved to {}",
            quote(&path.value, path.truncated)
        ),
        EventKind::OomVictim(o) => oom_text(o),
        EventKind::ContainerMeta {
            container_id,
            annotations,
            ..
        } => {
            let kv: Vec<String> = annotations
                .iter()
                .map(|(k, v)| format!("{}={}", escape(k), quote(v, false)))
                .collect();
            format!("bundle of {}: {}", quote(container_id, false), kv.join(" "))
        }
        EventKind::CloneEnter { .. }
        | EventKind::SyscallExit { .. }
        | EventKind::ExecEnter { .. }
        | EventKind::ExitEnter { .. }
        | EventKind::PrctlEnter { .. }
        | EventKind::Fork { .. }
        | EventKind::Exec { .. }
        | EventKind::TaskExit { .. }
        | EventKind::Signal(_)
        | EventKind::Subreaper { .. } => return None,
    })
}

/// `OOM killer: victim 300 ... in cgroup "/kubepods/..." (limit 67108864 bytes)`.
fn oom_text(o: &OomInfo) -> String {
    let mut t = format!(
        "OOM killer: victim {} total-vm={}kB anon-rss={}kB file-rss={}kB shmem-rss={}kB oom_score_adj={}",
        o.tid, o.total_vm_kb, o.anon_rss_kb, o.file_rss_kb, o.shmem_rss_kb, o.oom_score_adj
    );
    if let Some(cg) = &o.cgroup {
        let _ = write!(t, " in cgroup {}", quote(cg, false));
    }
    if let Some(l) = o.limit {
        let _ = write!(t, " (limit {l} bytes)");
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{CapturedStr, CloneFlags};
    use tracer_common::clone_flags as cf;

    /// The lines' events in these tests: no clock, comm `x`.
    fn ev(seq: u64, tid: u32, kind: EventKind) -> Event {
        crate::synth::event_at(seq, 0, tid, "x", kind)
    }

    fn all(events: &[Event]) -> Vec<String> {
        let mut r = LineRenderer::new();
        events.iter().flat_map(|e| r.render(e)).collect()
    }

    #[test]
    fn clone_parent_line_like_strace() {
        let lines = all(&[
            ev(
                1,
                4085,
                EventKind::CloneEnter {
                    syscall: Syscall::Clone,
                    flags: CloneFlags(cf::CLONE_PARENT),
                    exit_signal: 17,
                },
            ),
            ev(
                2,
                4085,
                EventKind::Fork {
                    child_tid: 4086,
                    child_tgid: 4086,
                    child_ppid: 4084,
                    syscall: Some(Syscall::Clone),
                    flags: Some(CloneFlags(cf::CLONE_PARENT)),
                    child_ns: None,
                },
            ),
            ev(
                3,
                4085,
                EventKind::SyscallExit {
                    syscall: Syscall::Clone,
                    ret: 4086,
                },
            ),
        ]);
        assert_eq!(
            lines,
            vec![
                "Process 4086 attached (parent 4084) by [pid 4085]",
                "[pid   4085] clone(flags=CLONE_PARENT|SIGCHLD) = 4086",
            ]
        );
    }

    #[test]
    fn sched_probe_set_completes_lines_without_exits() {
        let exec_enter = |file: &str| EventKind::ExecEnter {
            syscall: Syscall::Execve,
            dirfd: -100,
            at_flags: 0,
            filename: CapturedStr::new(file),
            argv: vec![file.into(), "-x".into()],
            argv_truncated: false,
        };
        let events = [
            ev(
                1,
                20,
                EventKind::Fork {
                    child_tid: 21,
                    child_tgid: 21,
                    child_ppid: 19,
                    syscall: None,
                    flags: Some(CloneFlags(cf::CLONE_PARENT)),
                    child_ns: None,
                },
            ),
            ev(
                2,
                21,
                EventKind::PrctlEnter {
                    option: tracer_common::prctl::PR_SET_NAME,
                    arg2: 0,
                    name: Some(CapturedStr::new("runc:[1:CHILD]")),
                    shown: None,
                },
            ),
            ev(3, 21, exec_enter("/bin/sh")),
            // Another thread's event in between: the exec line still completes at the exec.
            ev(
                4,
                30,
                EventKind::PrctlEnter {
                    option: tracer_common::prctl::PR_SET_CHILD_SUBREAPER,
                    arg2: 1,
                    name: None,
                    shown: None,
                },
            ),
            ev(
                5,
                21,
                EventKind::Exec {
                    cred: None,
                    old_tid: 21,
                    filename: CapturedStr::new("/bin/sh"),
                },
            ),
        ];
        let mut r = LineRenderer {
            sched_probes: true,
            ..LineRenderer::default()
        };
        let lines: Vec<String> = events.iter().flat_map(|e| r.render(e)).collect();
        assert_eq!(
            lines,
            vec![
                "Process 21 attached (parent 19) by [pid 20] clone(CLONE_PARENT)",
                r#"[pid     21] prctl(PR_SET_NAME, "runc:[1:CHILD]") = 0"#,
                r#"[pid     21] execve("/bin/sh", ["/bin/sh", "-x"] <unfinished ...>"#,
                "[pid     30] prctl(PR_SET_CHILD_SUBREAPER, 1) = 0",
                "[pid     21] <... execve resumed>) = 0",
            ]
        );
        // With syscall probes the same events wait for their exits.
        let held: Vec<String> = events
            .iter()
            .flat_map(|e| all(std::slice::from_ref(e)))
            .collect();
        assert_eq!(held, ["Process 21 attached (parent 19) by [pid 20]"]);
    }

    #[test]
    fn namespace_pid_is_shown_with_host_pid() {
        let lines = all(&[
            ev(
                1,
                50,
                EventKind::CloneEnter {
                    syscall: Syscall::Fork,
                    flags: CloneFlags(0),
                    exit_signal: 17,
                },
            ),
            ev(
                2,
                50,
                EventKind::Fork {
                    child_tid: 51,
                    child_tgid: 51,
                    child_ppid: 50,
                    syscall: Some(Syscall::Fork),
                    flags: Some(CloneFlags(0)),
                    child_ns: None,
                },
            ),
            ev(
                3,
                50,
                EventKind::SyscallExit {
                    syscall: Syscall::Fork,
                    ret: 7,
                },
            ),
        ]);
        assert_eq!(lines[1], "[pid     50] fork() = 7 (host pid 51)");
    }

    #[test]
    fn interleaving_prints_unfinished_and_resumed() {
        let lines = all(&[
            ev(
                1,
                10,
                EventKind::ExecEnter {
                    syscall: Syscall::Execve,
                    dirfd: -100,
                    at_flags: 0,
                    filename: CapturedStr::new("/nope"),
                    argv: vec!["nope".into()],
                    argv_truncated: false,
                },
            ),
            ev(
                2,
                11,
                EventKind::ExitEnter {
                    syscall: Syscall::ExitGroup,
                    code: 3,
                },
            ),
            ev(
                3,
                10,
                EventKind::SyscallExit {
                    syscall: Syscall::Execve,
                    ret: -2,
                },
            ),
            ev(
                4,
                11,
                EventKind::TaskExit {
                    exit_code: 3 << 8,
                    group_dead: true,
                },
            ),
            ev(
                5,
                12,
                EventKind::TaskExit {
                    exit_code: 9,
                    group_dead: true,
                },
            ),
        ]);
        assert_eq!(
            lines,
            vec![
                "[pid     10] execve(\"/nope\", [\"nope\"] <unfinished ...>",
                "[pid     11] exit_group(3) = ?",
                "[pid     10] <... execve resumed>) = -1 ENOENT",
                "[pid     11] +++ exited with 3 +++",
                "[pid     12] +++ killed by SIGKILL +++",
            ]
        );
    }

    #[test]
    fn prctl_forms() {
        let lines = all(&[
            ev(
                1,
                5,
                EventKind::PrctlEnter {
                    option: 15,
                    arg2: 0,
                    name: Some(CapturedStr::new("runc:[0:PARENT]")),
                    shown: None,
                },
            ),
            ev(
                2,
                5,
                EventKind::SyscallExit {
                    syscall: Syscall::Prctl,
                    ret: 0,
                },
            ),
            ev(
                3,
                5,
                EventKind::PrctlEnter {
                    option: 36,
                    arg2: 1,
                    name: None,
                    shown: None,
                },
            ),
            ev(
                4,
                5,
                EventKind::SyscallExit {
                    syscall: Syscall::Prctl,
                    ret: 0,
                },
            ),
        ]);
        assert_eq!(
            lines,
            vec![
                "[pid      5] prctl(PR_SET_NAME, \"runc:[0:PARENT]\") = 0",
                "[pid      5] prctl(PR_SET_CHILD_SUBREAPER, 1) = 0",
            ]
        );
    }

    #[test]
    fn control_bytes_in_arguments_are_escaped_like_strace() {
        let name = CapturedStr {
            value: "\x1b]0;PWNED\x07".into(),
            truncated: false,
        };
        let lines = all(&[
            ev(
                1,
                5,
                EventKind::ExecEnter {
                    syscall: Syscall::Execve,
                    dirfd: -100,
                    at_flags: 0,
                    filename: CapturedStr {
                        value: "/tmp/\x1b[2J\x7f".into(),
                        truncated: false,
                    },
                    argv: vec!["a\nb".into(), "\x1b1".into()],
                    argv_truncated: false,
                },
            ),
            ev(
                2,
                5,
                EventKind::SyscallExit {
                    syscall: Syscall::Execve,
                    ret: 0,
                },
            ),
            ev(
                3,
                5,
                EventKind::PrctlEnter {
                    option: tracer_common::prctl::PR_SET_NAME,
                    arg2: 0,
                    name: Some(name),
                    shown: None,
                },
            ),
            ev(
                4,
                5,
                EventKind::SyscallExit {
                    syscall: Syscall::Prctl,
                    ret: 0,
                },
            ),
        ]);
        assert_eq!(
            lines[0],
            "[pid      5] execve(\"/tmp/\\33[2J\\177\", [\"a\\nb\", \"\\0331\"]) = 0"
        );
        assert!(lines[1].contains("\"\\33]0;PWNED\\7\""), "{}", lines[1]);
        assert!(lines.iter().all(|l| !l.chars().any(char::is_control)));
    }
}

#[cfg(test)]
mod forms {
    //! The line forms of strace's habits: signals under their receiver, stamps after the pid,
    //! `-Y` names (hostile ones escaped), `--decode-pids=pidns`, `-e`.
    use super::*;
    use crate::clock::{Clock, Style};
    use crate::event::PidNs;
    use crate::synth;

    fn kill(sender: u32, target: u32, code: i32, uid: u32, result: SignalResult) -> Event {
        let mut ev = synth::kill(sender, target, 15, code, result);
        ev.seq = 7;
        ev.uid = uid;
        ev
    }

    fn engine(procs: &[(u32, &str, Option<PidNs>)]) -> Engine {
        let snap: Vec<_> = procs
            .iter()
            .map(|&(pid, comm, ns)| crate::event::SnapshotProcess {
                ns,
                ..synth::process(pid, 1, comm)
            })
            .collect();
        Engine::seeded(&snap)
    }

    fn one(r: &mut LineRenderer, ev: &Event, e: Option<&Engine>) -> String {
        r.render_in(ev, e).join("\n")
    }

    /// A traced command's signals print where it receives them, and what it sends outside
    /// (its SIGCHLD to the tracer that started it) prints nowhere, as under strace.
    #[test]
    fn a_signal_prints_only_at_a_traced_receiver() {
        let mut r = LineRenderer {
            traced: Some([200].into()),
            ..LineRenderer::new()
        };
        let chld = |from, to| synth::kill(from, to, libc::SIGCHLD, 1, SignalResult::Delivered);
        let shown = |r: &mut LineRenderer, ev: &Event| !r.render(ev).is_empty();
        assert!(shown(&mut r, &synth::fork(200, 201)));
        assert!(shown(
            &mut r,
            &synth::kill(150, 201, 15, 0, SignalResult::Delivered)
        ));
        assert!(shown(&mut r, &synth::exit(201, 0)));
        assert!(shown(&mut r, &chld(201, 200)));
        assert!(shown(&mut r, &synth::exit(200, 0)));
        assert!(!shown(&mut r, &chld(200, 100)), "to the tracer");
        assert!(!shown(
            &mut r,
            &synth::kill(150, 201, 15, 0, SignalResult::Ignored)
        ));
        let mut every = LineRenderer::new();
        assert!(shown(&mut every, &chld(200, 100)), "no traced set: all");
    }

    #[test]
    fn a_signal_is_under_its_receiver_with_the_sender_in_si_pid() {
        let e = engine(&[(9034, "runc", None), (9035, "sleep", None)]);
        let term = kill(9034, 9035, 0, 0, SignalResult::Delivered);
        let mut r = LineRenderer::new();
        assert_eq!(
            one(&mut r, &term, None),
            "[pid   9035] --- SIGTERM {si_signo=SIGTERM, si_code=SI_USER, si_pid=9034, si_uid=0} ---"
        );
        r.decode.comm = true;
        assert_eq!(
            one(&mut r, &term, Some(&e)),
            "[pid   9035<sleep>] --- SIGTERM {si_signo=SIGTERM, si_code=SI_USER, si_pid=9034<runc>, si_uid=0} ---"
        );
        // Not delivered: what the kernel did, after the siginfo; no uid known: none invented.
        let ignored = kill(9034, 9035, 0, u32::MAX, SignalResult::Ignored);
        assert_eq!(
            one(&mut LineRenderer::new(), &ignored, None),
            "[pid   9035] --- SIGTERM {si_signo=SIGTERM, si_code=SI_USER, si_pid=9034} (ignored) ---"
        );
        // The kernel's own (SI_KERNEL) names no sender.
        let kernel = kill(9034, 9035, 0x80, 0, SignalResult::Delivered);
        assert_eq!(
            one(&mut LineRenderer::new(), &kernel, None),
            "[pid   9035] --- SIGTERM {si_signo=SIGTERM, si_code=SI_KERNEL} ---"
        );
    }

    #[test]
    fn stamps_follow_the_pid_as_strace_places_them() {
        let ts = (7 * 3600 + 40 * 60 + 9) * 1_000_000_000 + 123_456_789;
        let mut r = LineRenderer {
            show_seq: true,
            stamper: Some(Stamper::new(Clock::TimeOfDay, Style::Micros)),
            ..LineRenderer::default()
        };
        let mut exit = synth::exit(5, 3 << 8);
        exit.ts_ns = ts;
        exit.seq = 12;
        assert_eq!(
            one(&mut r, &exit, None),
            "#12     [pid      5] 07:40:09.123456 +++ exited with 3 +++"
        );
        let mut fork = synth::fork(5, 6);
        fork.ts_ns = ts;
        fork.seq = 13;
        assert_eq!(
            one(&mut r, &fork, None),
            "#13     07:40:09.123456 Process 6 attached (parent 5) by [pid 5]"
        );
        // No clock: blanks of the same width, never the reader's time.
        r.stamper = Some(Stamper::new(Clock::None, Style::Seconds));
        assert_eq!(
            one(&mut r, &exit, None),
            "#12     [pid      5] ??:??:?? +++ exited with 3 +++"
        );
    }

    #[test]
    fn a_hostile_name_cannot_end_the_brackets_and_reads_back() {
        let e = engine(&[(5, "a>] x\x1b<", None)]);
        let mut r = LineRenderer::new();
        r.decode.comm = true;
        let line = one(&mut r, &synth::exit(5, 0), Some(&e));
        assert_eq!(
            line,
            "[pid      5<a\\076\\135 x\\33\\074>] +++ exited with 0 +++"
        );
        let back = crate::strace::parse_log(&line).unwrap();
        assert_eq!(back.unreadable, 0);
        assert_eq!(back.events[0].tid, 5);
    }

    #[test]
    fn pidns_puts_si_pid_in_the_receivers_namespace() {
        let ns = |ns_pid| {
            Some(PidNs {
                inum: 7,
                level: 1,
                ns_pid,
            })
        };
        let e = engine(&[
            (100, "runc", None),
            (200, "init", ns(1)),
            (201, "sh", ns(2)),
        ]);
        let mut r = LineRenderer::new();
        r.decode.pidns = true;
        let inside = one(
            &mut r,
            &kill(201, 200, 0, 0, SignalResult::Delivered),
            Some(&e),
        );
        assert!(
            inside.contains("si_pid=2 /* 201 in strace's PID NS */,"),
            "{inside}"
        );
        // From outside the receiver's namespace the kernel writes 0.
        let outside = one(
            &mut r,
            &kill(100, 200, 0, 0, SignalResult::Delivered),
            Some(&e),
        );
        assert!(
            outside.contains("si_pid=0 /* 100 in strace's PID NS */,"),
            "{outside}"
        );
        // A receiver on the host: its pids are strace's own.
        let host = one(
            &mut r,
            &kill(201, 100, 0, 0, SignalResult::Delivered),
            Some(&e),
        );
        assert!(host.contains("si_pid=201,"), "{host}");
        for l in [inside, outside] {
            let back = crate::strace::parse_log(&l).unwrap();
            let EventKind::Signal(i) = &back.events[0].kind else {
                panic!("{l}")
            };
            assert!(i.sender == 201 || i.sender == 100, "{l}: {i:?}");
        }
    }

    #[test]
    fn e_words_as_strace_spells_them() {
        let f = |e: &[&str]| LineFilter::from_exprs(e);
        let term = kill(1, 2, 0, 0, SignalResult::Delivered);
        let mut chld = term.clone();
        if let EventKind::Signal(i) = &mut chld.kind {
            i.signal = 17;
        }
        let exit = synth::exit(2, 0);
        let shows = |f: LineFilter| (f.shows(&term), f.shows(&chld), f.shows(&exit));
        assert_eq!(shows(f(&["signal=!SIGCHLD"]).unwrap()), (true, false, true));
        assert_eq!(
            shows(f(&["trace=%process", "signal=TERM"]).unwrap()),
            (true, false, true)
        );
        assert_eq!(shows(f(&["trace=!exit"]).unwrap()), (true, true, false));
        assert_eq!(
            shows(f(&["trace=none", "signal=all"]).unwrap()),
            (false, false, false)
        );
        assert_eq!(
            shows(f(&["exit_group,signal", "s=15"]).unwrap()),
            (true, false, true)
        );
        assert_eq!(f(&["trace=exce"]), Err(FilterError::Class("exce".into())));
        assert_eq!(
            f(&["signal=SIGFOO"]),
            Err(FilterError::Signal("SIGFOO".into()))
        );
        assert!(matches!(
            f(&["abbrev=none"]),
            Err(FilterError::Qualifier(_))
        ));
    }
}

#[cfg(test)]
mod round_trip;

#[cfg(test)]
mod kind_tests;
