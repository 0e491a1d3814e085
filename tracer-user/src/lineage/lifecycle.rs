//! The rest of a container's life after its birth: a process run in it (`runc exec`), its
//! death (the signals of a stop, the OOM killer, the kernel's SIGCHLD to the shim, `runc
//! delete`, a pod's network torn down and its shim's exit) and its restart.

use std::collections::HashMap;
use std::sync::Arc;

use crate::event::SignalResult;

use super::ending::SIGCHLD;
use super::kubelet::Cause;
use super::process::{Process, Reason};
use super::reads::{Ctx, Key};
use super::roles::{OciCommand, Role};
use super::story::{
    descends_from, label, last_exec, runtime_daemon_of, runtime_label, Phase, StepKind, Story,
    StoryStep,
};

const SIGTERM: i32 = 15;
const SIGKILL: i32 = 9;

/// Steps of one kind a death story lists at most (a signal storm, a crowded namespace).
const MAX_STEPS_PER_KIND: usize = 16;

/// The CNI ADD runs a sandbox's birth told (CNI DEL is never another sandbox's teardown),
/// counted over every life.
pub(super) type CniAdded = HashMap<(u32, u64), u32>;

/// A life's story from its anchor: its birth or exec steps (a birth's restart is marked
/// after, by [`mark_restart`], once the lives before it are known).
pub(super) fn life(c: &Ctx, anchor: &Process) -> Story {
    let mut st = super::story::build(c, anchor);
    if st.phase == Phase::Exec {
        add_exec_steps(c, &mut st);
    }
    super::explain::facts::annotate(c, &mut st);
    st
}

/// The group a birth's restarts are counted in: its pod and container name.
pub(super) fn restart_group(st: &Story) -> Option<(String, String)> {
    (st.phase == Phase::Birth)
        .then(|| st.pod.clone().zip(st.container_name.clone()))
        .flatten()
}

/// The CNI ADD runs a life tells.
pub(super) fn cni_added(st: &Story) -> impl Iterator<Item = (u32, u64)> + '_ {
    st.steps
        .iter()
        .filter(|s| s.kind == StepKind::CniPlugin)
        .map(|s| (s.pid, s.seq))
}

/// An exec's own steps, in their place among the others.
fn add_exec_steps(c: &Ctx, st: &mut Story) {
    let Some(p) = init_of(c, st) else { return };
    let runtime = st.runtime_pid.and_then(|r| c.born_by(r, p.start_seq));
    let mut step = |kind, seq, ts, pid, text: String| {
        st.steps.push(StoryStep::new(c, kind, seq, ts, pid, text))
    };
    exec_steps(c, p, runtime, &mut step);
    st.steps.sort_by_key(|s| s.seq);
}

/// The steps only an exec tells: the process entered the container's pid namespace without
/// being its init (runc's CHILD joined it with setns() before cloning), and how it ended
/// relative to `runc exec`, which waits for it unless detached.
fn exec_steps(
    c: &Ctx,
    p: &Process,
    runtime: Option<&Process>,
    step: &mut impl FnMut(StepKind, u64, u64, u32, String),
) {
    let init = p
        .pidns
        .and_then(|ns| c.namespace_init(ns.inum))
        .map(|i| format!("; the container's init is {}", label(i)))
        .unwrap_or_default();
    let joined = match p.ns_pid() {
        Some(n) => format!(
            "{} is pid {n} in the container's pid namespace, not its pid 1 (setns){init}",
            p.pid
        ),
        None => format!("{} runs in the container's namespaces (setns){init}", p.pid),
    };
    step(
        StepKind::ExecJoined,
        p.start_seq,
        p.birth_ts_ns,
        p.pid,
        joined,
    );
    let (Some(x), Some(d)) = (p.exit_seq, p.death()) else {
        return;
    };
    // Its exit tracepoint can precede the runtime's and still its SIGCHLD go to the reaper:
    // the runtime's exit_notify() reparented it first (the engine then records an adoption).
    let handed_by = |r: &Process| {
        p.last_adoption().is_some_and(
            |l| matches!(l.reason, Some(Reason::ParentExited { parent, .. }) if parent == r.pid),
        )
    };
    let after = match runtime.and_then(|r| r.exit_seq.map(|rx| (r, rx))) {
        Some((r, rx)) if x < rx && !handed_by(r) => {
            format!(" before {} exited: nothing was orphaned", label(r))
        }
        Some((r, rx)) if x < rx => format!(
            " as {} exited, which handed it to {} first",
            label(r),
            p.ppid
        ),
        Some(_) => format!(" (its parent then: {})", p.ppid),
        None => String::new(),
    };
    step(
        StepKind::ExecEnded,
        x,
        p.exit_ts_ns.unwrap_or_default(),
        p.pid,
        format!("{} {d}{after}", label(p)),
    );
}

/// The record of a story's init: the newest process with its pid born by the story's end.
fn init_of<'a>(c: &Ctx<'a>, st: &Story) -> Option<&'a Process> {
    let last = st.steps.iter().map(|s| s.seq).max().unwrap_or(u64::MAX);
    c.born_by(st.init_pid, last)
}

/// kubelet creates a container again (a new id, the same pod and name) when its last one
/// ended and the pod's restart policy says so: a later birth of a named container is a
/// restart, linked to the life before it (`lives_before` of them, the last one's init
/// `previous`, the gaps `previous_gaps` that life's restart measured).
pub(super) fn mark_restart(
    c: &Ctx,
    st: &mut Story,
    lives_before: u32,
    previous: u32,
    previous_gaps: &[u64],
) {
    let (Some(pod), Some(name)) = (&st.pod, &st.container_name) else {
        return;
    };
    let (seq, ts) = st.steps.first().map_or((0, 0), |s| (s.seq, s.ts_ns));
    let prev = c.process(previous);
    let how = previous_end(prev, seq);
    // The gap from the last life's end, when it ended by this step and the clock measures it.
    let gap = prev
        .and_then(|p| p.exit_seq.filter(|&x| x <= seq).and(p.exit_ts_ns))
        .filter(|_| c.e.clock().has_time())
        .map(|end| ts.saturating_sub(end));
    let restart = super::kubelet::restart(lives_before, previous_gaps, gap);
    let text = format!(
        "container {name} of pod {pod} created again; its last life (init {previous}) {how}; {}",
        restart.text()
    );
    let init_pid = st.init_pid;
    let step = StoryStep::new(c, StepKind::Restarted, seq, ts, init_pid, text);
    st.steps.insert(0, step);
    st.phase = Phase::Restart;
    st.attempt = Some(lives_before);
    st.previous_init = Some(previous);
    st.restart = Some(restart);
}

/// How the life before a restart had ended by the restart's step at `seq`: a step never
/// states what has not happened yet there (a death later in the recording is said to come
/// later).
fn previous_end(prev: Option<&Process>, seq: u64) -> String {
    let death = prev.and_then(Process::death);
    let by_then = prev.and_then(|p| p.exit_seq).is_some_and(|s| s <= seq);
    match death {
        Some(d) if by_then => format!("ended: {}", d.short()),
        Some(d) => format!("was still running then (it ended later: {})", d.short()),
        None => "was still running then".into(),
    }
}

/// After a life whose container's init died, its death story.
pub(super) fn death(c: &Ctx, life: &Story, added: &CniAdded) -> Option<Story> {
    let init = life.phase.is_birth().then(|| init_of(c, life)).flatten()?;
    init.exited.then(|| death_story(c, life, init, added))
}

/// A container's end, step by step.
fn death_story(c: &Ctx, life: &Story, init: &Process, cni_added: &CniAdded) -> Story {
    let mut steps = Vec::new();
    let mut step =
        |kind, seq, ts, pid, text: String| steps.push(StoryStep::new(c, kind, seq, ts, pid, text));
    signal_steps(c, life, init, &mut step);
    if let Some(o) = &init.oom() {
        let cg = o.cgroup.as_deref().unwrap_or("?");
        let limit = o.limit.map_or("not read".into(), crate::names::size);
        let text = format!(
            "the OOM killer chose init {} in memory cgroup {cg} (limit {limit}, anon-rss {} kB)",
            label(init),
            o.anon_rss_kb
        );
        step(StepKind::OomKilled, o.seq, o.ts_ns, init.pid, text);
    }
    let terminated = super::kubelet::terminated(c, life.shim_pid, init);
    if let (Some(x), Some(d)) = (init.exit_seq, init.death()) {
        let ts = init.exit_ts_ns.unwrap_or_default();
        let text = format!("init {} {d}", label(init));
        step(StepKind::InitDied, x, ts, init.pid, text);
        if let Some(t) = &terminated {
            step(StepKind::Terminated, x, ts, init.pid, t.text());
        }
    }
    if let Some(Cause::KilledAtOnce {
        pod_stopped: Some(p),
        ..
    }) = terminated.as_ref().map(|t| &t.cause)
    {
        step(
            StepKind::PodStopped,
            p.by.seq,
            p.ts_ns,
            p.sandbox_pid,
            p.text(init.pid),
        );
    }
    namespace_steps(c, init, &mut step);
    reaped_steps(c, init, StepKind::InitReaped, &mut step);
    delete_steps(c, life, init, &mut step);
    if life.sandbox {
        pod_removal_steps(c, life, init, cni_added, &mut step);
    }
    steps.sort_by_key(|s| s.seq);
    let mut st = Story {
        phase: Phase::Death,
        attempt: life.attempt,
        previous_init: Some(init.pid),
        runtime: None,
        runtime_pid: None,
        steps,
        terminated,
        restart: None,
        runtime_restart: None,
        ..life.clone()
    };
    super::explain::facts::annotate(c, &mut st);
    st
}

/// The signals others sent the init: a stop's SIGTERM (runc kill, run by the shim for
/// containerd), then SIGKILL if the grace period ran out (its length as recorded).
fn signal_steps(
    c: &Ctx,
    life: &Story,
    init: &Process,
    step: &mut impl FnMut(StepKind, u64, u64, u32, String),
) {
    let mut term_ts = None;
    let fatal = init.death().and_then(|d| d.signal());
    let sent = init
        .signals()
        .iter()
        .filter(|s| s.target == init.pid && s.sender != init.pid && s.tells_a_death(fatal));
    for s in sent.take(MAX_STEPS_PER_KIND) {
        let sender = c.process_meta(s.sender).filter(|_| s.sender != 0);
        let who = match sender {
            Some(p) if s.inferred => format!("{} (inferred)", runtime_label(p)),
            Some(p) => runtime_label(p),
            None => s.sender_words(),
        };
        let by_shim = sender
            .filter(|p| life.shim_pid.is_some_and(|sh| p.ppid == sh))
            .map(|_| " (run by the shim)")
            .unwrap_or_default();
        let mut text = format!(
            "{who}{by_shim} sent {} ({}) to init {}",
            s.signal_name(),
            s.code_name(),
            label(init)
        );
        text.push_str(result_text(s.result, init.is_ns_init()));
        if s.signal == SIGTERM {
            term_ts.get_or_insert(s.ts_ns);
        }
        let timed = c.e.clock().has_time();
        if let Some(t) = term_ts.filter(|&t| s.signal == SIGKILL && timed && s.ts_ns >= t) {
            let gap = crate::clock::duration_text(s.ts_ns - t);
            text.push_str(&format!(", {gap} after SIGTERM (the grace period)"));
        }
        step(StepKind::SignalSent, s.seq, s.ts_ns, s.sender, text);
    }
}

/// What the kernel did with a signal, when it did not queue it: a pid namespace's init
/// ignores what it has no handler for (kernel/signal.c sig_task_ignored, SIGNAL_UNKILLABLE).
fn result_text(r: SignalResult, ns_init: bool) -> &'static str {
    match (r, ns_init) {
        (SignalResult::Delivered, _) => "",
        (SignalResult::Ignored, true) => {
            " — ignored: a namespace's pid 1 without a handler for it never gets it"
        }
        (SignalResult::Ignored, false) => " — ignored by its target",
        (SignalResult::AlreadyPending, _) => " — already pending",
        _ => " — not queued",
    }
}

/// zap_pid_ns_processes(): what the init's death killed in its pid namespace.
fn namespace_steps(
    c: &Ctx,
    init: &Process,
    step: &mut impl FnMut(StepKind, u64, u64, u32, String),
) {
    let Some(died) = init.exit_seq else { return };
    let zapped = c.class(Key::Zapped(init.pid, died));
    let zapped = zapped.into_iter().filter(|p| {
        p.zapped_by()
            .is_some_and(|(i, s)| i == init.pid && Some(s) == init.exit_seq)
    });
    for p in zapped.take(MAX_STEPS_PER_KIND) {
        let seq = p.exit_seq.unwrap_or(p.start_seq);
        let ts = p.exit_ts_ns.unwrap_or(p.birth_ts_ns);
        let text = format!(
            "the kernel killed {} with its pid namespace (its init {} died)",
            label(p),
            init.pid
        );
        step(StepKind::NamespaceKilled, seq, ts, p.pid, text);
    }
}

/// do_notify_parent(): the SIGCHLD for `p`'s death, sent to its parent of record, which
/// reaps it (the shim for a container's init, init or a subreaper for a shim).
fn reaped_steps(
    c: &Ctx,
    p: &Process,
    kind: StepKind,
    step: &mut impl FnMut(StepKind, u64, u64, u32, String),
) {
    let notices = p
        .signals()
        .iter()
        .filter(|s| s.signal == SIGCHLD && s.sender == p.pid && s.code > 0);
    for s in notices.take(1) {
        let to = c
            .process_meta(s.target)
            .map_or_else(|| s.target.to_string(), label);
        let text = format!(
            "{to}, {}'s parent of record, got SIGCHLD ({}) for its death",
            p.pid,
            s.code_name()
        );
        step(kind, s.seq, s.ts_ns, s.target, text);
    }
}

/// `runc delete` for the container, after its init died: the runtime's state and cgroup go.
fn delete_steps(
    c: &Ctx,
    life: &Story,
    init: &Process,
    step: &mut impl FnMut(StepKind, u64, u64, u32, String),
) {
    let Some(cid) = life.container_id.as_deref() else {
        return;
    };
    let died = init.exit_seq.unwrap_or(0);
    let deletes = c.class(Key::DeletesOf(Arc::from(cid)));
    let deletes = deletes.into_iter().filter(|p| {
        p.role
            == Some(Role::OciRuntime {
                subcommand: Some(OciCommand::Delete),
            })
            && p.container_id.as_deref() == Some(cid)
            && p.start_seq > died
    });
    for d in deletes.take(MAX_STEPS_PER_KIND) {
        let (seq, ts) = last_exec(d);
        let text = format!("{} ran for container {cid}", runtime_label(d));
        step(StepKind::RuntimeDelete, seq, ts, d.pid, text);
    }
}

/// StopPodSandbox / RemovePodSandbox: the pod's shim exits once its sandbox is deleted, its
/// SIGCHLD going to its parent of record, and the runtime daemon tears the pod's network down
/// (CNI DEL: containerd 1.6 does so after the sandbox container stopped), before any other
/// sandbox dies.
fn pod_removal_steps(
    c: &Ctx,
    life: &Story,
    pause: &Process,
    cni_added: &CniAdded,
    step: &mut impl FnMut(StepKind, u64, u64, u32, String),
) {
    let shim = life.shim_pid.and_then(|s| c.born_by(s, pause.start_seq));
    let died = pause.exit_seq.unwrap_or(u64::MAX);
    let until = c.sandbox_exit_after(died, pause.id).unwrap_or(u64::MAX);
    let daemon = shim.and_then(|s| runtime_daemon_of(c, s));
    let plugins = c.cni_between(died, until);
    let cni = plugins.into_iter().filter(|p| {
        let seq = p.execs.last().map_or(p.start_seq, |x| x.seq);
        p.role == Some(Role::CniPlugin)
            && p.start_seq > died
            && p.start_seq < until
            && !cni_added.contains_key(&(p.pid, seq))
            && daemon.is_none_or(|d| descends_from(c, p, d.id))
    });
    for p in cni.take(MAX_STEPS_PER_KIND) {
        let (seq, ts) = last_exec(p);
        let end = p
            .death()
            .map_or_else(|| "still running".into(), |d| d.to_string());
        let text = format!("cni plugin {} ran after the sandbox died, {end}", label(p));
        step(StepKind::CniTeardown, seq, ts, p.pid, text);
    }
    let Some(shim) = shim.filter(|s| s.exited) else {
        return;
    };
    if let (Some(x), Some(d)) = (shim.exit_seq, shim.death()) {
        step(
            StepKind::ShimExited,
            x,
            shim.exit_ts_ns.unwrap_or_default(),
            shim.pid,
            format!("shim {} {d}", label(shim)),
        );
    }
    reaped_steps(c, shim, StepKind::ShimReaped, step);
}
