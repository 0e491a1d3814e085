//! Container-birth stories: the ordered steps, each with the seq of the event that proves it.

use serde::Serialize;

pub(super) use super::process::label;
use super::process::{How, ProcId, Process, Reason};
use super::reads::{Ctx, Key};
use super::roles::{InitStage, OciCommand, Role};

/// Which machinery started the container.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StoryKind {
    /// containerd-shim* → runc.
    Containerd,
    /// conmon → runc (podman, CRI-O).
    Conmon,
    /// An OCI runtime run directly (`runc run`, `runc create` from a shell).
    Direct,
    /// Only the init chain was seen.
    Unknown,
}

impl StoryKind {
    /// As in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            StoryKind::Containerd => "containerd",
            StoryKind::Conmon => "conmon",
            StoryKind::Direct => "direct",
            StoryKind::Unknown => "unknown",
        }
    }
}

/// What one step of a [`Story`] shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StepKind {
    /// The shim process was created.
    ShimStarted,
    /// The shim's parent (the `start` process) exited.
    ShimParentExited,
    /// The shim was reparented (to init or a subreaper).
    ShimAdopted,
    /// The shim called PR_SET_CHILD_SUBREAPER.
    ShimSubreaper,
    /// The container joined a shim already running for its pod: the `shim start` process
    /// (if seen) found it and exited, and no new shim was born (one shim per pod).
    ShimReused,
    /// A CNI plugin ran for the pod's network (sandbox stories).
    CniPlugin,
    /// The OCI runtime (`runc create`/`run`) exec'd.
    RuntimeStarted,
    /// A child of the runtime exec'd `runc init`.
    InitExec,
    /// An init stage renamed itself (`runc:[0:PARENT]`…).
    StageRenamed,
    /// PARENT cloned CHILD (CLONE_PARENT: its parent is the runtime).
    ChildCloned,
    /// CHILD cloned INIT (CLONE_PARENT).
    InitCloned,
    /// PARENT or CHILD exited.
    IntermediateExited,
    /// The runtime process exited.
    RuntimeExited,
    /// INIT was reparented to the subreaper (or init).
    InitAdopted,
    /// INIT exec'd the workload.
    WorkloadExec,
    /// The runtime moved INIT into the container's cgroup.
    InitCgroup,
    /// `runc exec`: CHILD cloned the process to run in the container (CLONE_PARENT).
    ExecCloned,
    /// The exec'd process is in the container's pid namespace, but not its pid 1 (setns).
    ExecJoined,
    /// The exec'd process execve()d the program asked for.
    ExecProgram,
    /// `runc exec` exited (it waits for the process unless detached).
    ExecRuntimeExited,
    /// The exec'd process was adopted by the shim (`runc exec --detach`).
    ExecAdopted,
    /// The exec'd process ended.
    ExecEnded,
    /// A process sent the container's init a signal (a stop's SIGTERM, then SIGKILL).
    SignalSent,
    /// The OOM killer chose the container's init.
    OomKilled,
    /// The container's init died.
    InitDied,
    /// The kernel told the init's parent of record (the shim) with SIGCHLD.
    InitReaped,
    /// The init's death killed what was left in its pid namespace.
    NamespaceKilled,
    /// `runc delete` ran for the container.
    RuntimeDelete,
    /// A CNI plugin ran after the sandbox died (the pod's network torn down).
    CniTeardown,
    /// The pod's shim exited.
    ShimExited,
    /// The kernel told the shim's parent of record with SIGCHLD.
    ShimReaped,
    /// The container was created again after its last life ended (a restart).
    Restarted,
    /// What kubelet's ContainerStateTerminated says of the life that ended, and its cause.
    Terminated,
    /// The pod's sandbox was killed at once after the container: the pod was stopped.
    PodStopped,
    /// A runtime daemon (containerd, crio…) ended: how, and who signalled it.
    DaemonEnded,
    /// A shim or container process lived on through the daemon's restart, its parent kept.
    Survived,
    /// A process the restart cost: it died while the daemon was down, or lost the old
    /// daemon as its parent.
    RestartLost,
    /// The runtime daemon started again under a new pid.
    DaemonStarted,
    /// What the restart left as it was: the survivors' pids and parents.
    RestartUnchanged,
}

/// Which part of a container's life a story tells.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// The container's birth.
    Birth,
    /// A process run in a running container (`runc exec`): not a birth.
    Exec,
    /// Its end: signals, death, reaping, `runc delete`.
    Death,
    /// A birth of a container that lived before in this recording (same pod and name).
    Restart,
    /// A runtime daemon (containerd…) ended and started again while its containers lived on:
    /// not one container's story but the runtime's.
    RuntimeRestart,
}

impl Phase {
    /// As in JSON and the labels.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Birth => "birth",
            Phase::Exec => "exec",
            Phase::Death => "death",
            Phase::Restart => "restart",
            Phase::RuntimeRestart => "runtime_restart",
        }
    }

    /// A container came into being (a birth or a restart's new life).
    pub fn is_birth(self) -> bool {
        matches!(self, Phase::Birth | Phase::Restart)
    }
}

/// One step of a container birth, proven by one event.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StoryStep {
    /// What happened.
    pub kind: StepKind,
    /// Seq of the event that shows it.
    pub seq: u64,
    /// That event's time (the recording's `ts_ns`).
    pub ts_ns: u64,
    /// Its RFC 3339 UTC time on the recording's clock, when the clock has a date.
    pub time: Option<String>,
    /// The process it happened to.
    pub pid: u32,
    /// One line describing it.
    pub text: String,
    /// What its explanation must know of it beyond its kind (which rule, whose signal): set
    /// by `explain/facts.rs` once the story is built; not in the JSON.
    #[serde(skip)]
    pub facts: Facts,
}

/// The variant a step is, as the recording shows it: what [`super::explain::why`] tells
/// apart beyond the step's kind and its story's phase and machinery.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Facts {
    /// Nothing beyond the kind and the story.
    #[default]
    None,
    /// An adoption: which rule of kernel/exit.c find_new_reaper() picked the new parent.
    Adopted(super::process::Reaper),
    /// A SIGCHLD for a death: who the parent of record was.
    Reaped(Parent),
    /// A signal another process sent the container's init.
    Signal {
        /// Its number.
        signal: i32,
        /// Sent by the OCI runtime's `kill` run by the story's shim.
        runtime_kill: bool,
    },
    /// `runc delete`: run by the shim binary's own `delete` command (containerd's cleanup
    /// after the task is gone, with `--force`) rather than by the pod's shim.
    Delete {
        /// Run by a `containerd-shim… delete` process.
        cleanup: bool,
        /// `--force` in its argv.
        force: bool,
    },
    /// A CNI plugin run: its name, and the plugin that ran it (an IPAM plugin is its main
    /// plugin's child), bounded and escaped.
    Cni {
        /// The plugin's name.
        plugin: String,
        /// The plugin that ran it, if another plugin did.
        delegated_by: Option<String>,
    },
    /// An exec'd process's end: killed with its pid namespace when its init died.
    ExecEnd {
        /// Killed by zap_pid_ns_processes().
        zapped: bool,
    },
}

/// Who got a death's SIGCHLD: the parent of record at that moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parent {
    /// The container's shim (containerd's), its subreaper.
    Shim,
    /// conmon (CRI-O, podman), its subreaper.
    Conmon,
    /// The OCI runtime that started it and waits for it (a foreground `runc run`).
    Runtime,
    /// The host's init, pid 1.
    Init,
    /// Any other process (a subreaper of the machine's own, a pid namespace's init).
    Other,
}

impl StoryStep {
    /// A step at the event `seq` of time `ts_ns`, its wall time from `c`'s recording clock.
    pub(super) fn new(
        c: &Ctx,
        kind: StepKind,
        seq: u64,
        ts_ns: u64,
        pid: u32,
        text: String,
    ) -> Self {
        StoryStep {
            kind,
            seq,
            ts_ns,
            time: c.e.time_of(ts_ns),
            pid,
            text,
            facts: Facts::None,
        }
    }
}

/// One part of a container's life (its birth, an exec into it, its death, a restart), as
/// far as it was seen. Missing steps are absent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Story {
    /// Which part of the container's life.
    pub phase: Phase,
    /// For a restart: how many lives before this one the recording showed.
    pub attempt: Option<u32>,
    /// For a restart: the previous life's init; for a death or an exec: the story's own init.
    pub previous_init: Option<u32>,
    /// The container id, when argv showed it.
    pub container_id: Option<String>,
    /// Which machinery started the container.
    pub kind: StoryKind,
    /// `runc create`, `runc run`…
    pub runtime: Option<String>,
    /// The pod's sandbox id: the id its shim was started with (CRI's), when the shim also runs
    /// a sandbox (pause).
    pub sandbox_id: Option<String>,
    /// Whether this container is the pod's sandbox (its init exec'd pause).
    pub sandbox: bool,
    /// The shim process, when seen.
    pub shim_pid: Option<u32>,
    /// The OCI runtime process (`runc create`), when seen.
    pub runtime_pid: Option<u32>,
    /// The process that became the container's init.
    pub init_pid: u32,
    /// What INIT exec'd into (its name), if it did.
    pub workload: Option<String>,
    /// `namespace/name` of its pod, when the bundle's annotations named it.
    pub pod: Option<String>,
    /// The container's name in the pod, when named (none for the sandbox).
    pub container_name: Option<String>,
    /// Ordered by seq.
    pub steps: Vec<StoryStep>,
    /// A death story: what kubelet's ContainerStateTerminated would say, and the cause.
    pub terminated: Option<super::kubelet::Terminated>,
    /// A restart story: its count, the time since the last life ended, the back-off.
    pub restart: Option<super::kubelet::Restart>,
    /// A runtime restart story: the daemons, the survivors, what was lost.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime_restart: Option<Box<super::restart::RuntimeRestart>>,
}

/// The seq and time of a process's last exec (its birth's when it never exec'd): when a
/// program it runs started.
pub(super) fn last_exec(p: &Process) -> (u64, u64) {
    p.execs
        .last()
        .map_or((p.start_seq, p.birth_ts_ns), |x| (x.seq, x.ts_ns))
}

/// Whether `p` anchors a story: an oci-init that became `runc:[2:INIT]`, or a process that
/// exec'd out of an oci-init stage (a container's birth, or a process run in a running
/// container). A rename alone is anyone's (PR_SET_NAME): only a process the model made an
/// oci-init counts. Stories go in the order of their anchors' `(start_seq, id)`.
pub(super) fn is_anchor(p: &Process) -> bool {
    let init = matches!(p.role, Some(Role::OciInit { .. }));
    (init && p.stage_renames().any(|(s, _)| s == InitStage::Init))
        || p.workload_exec_seq().is_some()
}

/// The processes one container birth involves, found from INIT back to the shim.
struct Cast<'a> {
    /// The process that became the container's init (`runc:[2:INIT]`, or the one that exec'd
    /// out of an oci-init stage).
    init: &'a Process,
    /// `runc:[1:CHILD]`, which cloned INIT.
    child: Option<&'a Process>,
    /// `runc:[0:PARENT]`, which cloned CHILD.
    parent: Option<&'a Process>,
    /// The OCI runtime (`runc create`/`run`/`exec`).
    runtime: Option<&'a Process>,
    /// The shim (containerd-shim*, conmon) that ran the runtime.
    shim: Option<&'a Process>,
    /// `runc exec`: `init` is a process run in a running container, not its init.
    exec: bool,
}

impl<'a> Cast<'a> {
    /// Walks INIT's creators (who called clone) back through CHILD to PARENT. PARENT cloned
    /// CHILD and CHILD cloned INIT with CLONE_PARENT, which gives the new process its caller's
    /// parent (kernel/fork.c copy_process: real_parent = current->real_parent), so the runtime
    /// is the parent at birth of the first stage and of all the others; the shim is the
    /// runtime's parent at birth.
    fn of(c: &Ctx<'a>, init: &'a Process) -> Self {
        // Who a process is is read first; all of it only once it is in the cast.
        let creator = |p: &Process| p.creator.and_then(|x| c.meta(x));
        let whole = |p: &Process| c.get(p.id);
        let child = creator(init)
            .filter(|x| x.was_oci_init() && x.id != init.id)
            .and_then(whole);
        let parent = child
            .and_then(creator)
            .filter(|p| p.was_oci_init())
            .and_then(whole);
        let first = parent.or(child).unwrap_or(init);
        let runtime = first
            .birth_parent
            .and_then(|r| c.meta(r))
            .filter(|r| matches!(r.role, Some(Role::OciRuntime { .. })))
            .and_then(whole);
        let shim = runtime
            .and_then(|r| r.birth_parent)
            .and_then(|s| c.meta(s))
            .filter(|s| s.role == Some(Role::Shim))
            .and_then(whole);
        let exec = runtime.is_some_and(|r| {
            matches!(
                r.role,
                Some(Role::OciRuntime {
                    subcommand: Some(OciCommand::Exec)
                })
            )
        });
        Cast {
            init,
            child,
            parent,
            runtime,
            shim,
            exec,
        }
    }

    /// What `init` is called in the story's lines.
    fn who(&self) -> &'static str {
        if self.exec {
            "exec'd process"
        } else {
            "init"
        }
    }

    /// The init stages in the order runc's nsexec runs them, PARENT and CHILD when seen.
    fn stages(&self) -> [(Option<&'a Process>, InitStage); 3] {
        [
            (self.parent, InitStage::Parent),
            (self.child, InitStage::Child),
            (Some(self.init), InitStage::Init),
        ]
    }
}

/// One container's birth story, phase by phase as runc and the kernel go through it: who asked
/// for it, the runtime and its init stages, INIT's clone, the others' exits and INIT's
/// adoption, its cgroup, its workload; then what the story is about.
pub(super) fn build(c: &Ctx, init: &Process) -> Story {
    let cast = Cast::of(c, init);
    let mut steps = Vec::new();
    let mut step =
        |kind, seq, ts, pid, text: String| steps.push(StoryStep::new(c, kind, seq, ts, pid, text));
    // Pushed in this order: steps with the same seq keep it through the stable sort below.
    requester_steps(c, &cast, &mut step);
    runtime_started(&cast, &mut step);
    stage_steps(&cast, &mut step);
    clone_steps(&cast, &mut step);
    exit_steps(&cast, &mut step);
    adoption_step(c, &cast, &mut step);
    cgroup_steps(&cast, &mut step);
    workload_step(&cast, &mut step);
    steps.sort_by_key(|s| s.seq);
    summary(c, &cast, steps)
}

/// Who asked for the container. A new shim's own birth (the `shim start` process forks it and
/// exits, kernel/exit.c find_new_reaper hands it on, it sets PR_SET_CHILD_SUBREAPER), or the
/// pod's shim already running when an earlier runtime of the same shim created a container
/// (one shim per pod). `runc exec` enters a running container: no shim is born or found for
/// it. A sandbox also shows the CNI plugins the runtime daemon ran for the pod's network.
fn requester_steps(c: &Ctx, cast: &Cast, step: &mut impl FnMut(StepKind, u64, u64, u32, String)) {
    let (shim, runtime) = (cast.shim, cast.runtime);
    if !cast.exec {
        let earlier = shim.and_then(|sh| runtime.and_then(|rt| earlier_container(c, sh, rt)));
        match (shim, earlier) {
            (Some(shim), Some(first)) => {
                let (seq, ts, pid, text) = shim_reused(c, shim, first, runtime);
                step(StepKind::ShimReused, seq, ts, pid, text);
            }
            (Some(shim), None) => shim_birth(c, shim, step),
            _ => {}
        }
    }
    if cast.init.role == Some(Role::Sandbox) {
        for (seq, ts, pid, text) in cni_runs(c, cast.init, shim) {
            step(StepKind::CniPlugin, seq, ts, pid, text);
        }
    }
}

/// The OCI runtime's start: its last exec (the shim forks, then execs `runc create`), so the
/// step carries the exec's seq rather than the fork's.
fn runtime_started(cast: &Cast, step: &mut impl FnMut(StepKind, u64, u64, u32, String)) {
    let Some(rt) = cast.runtime else { return };
    let (seq, ts) = last_exec(rt);
    let by = cast
        .shim
        .map(|s| format!(" by shim {}", s.pid))
        .unwrap_or_default();
    let role = rt.role.map(|r| r.to_string()).unwrap_or_default();
    step(
        StepKind::RuntimeStarted,
        seq,
        ts,
        rt.pid,
        format!("{} ({role}) started{by}", label(rt)),
    );
}

/// The runtime's stages: the first stage that exec'd `runc init` (only the first does; the
/// others are its clones), then each stage renaming itself `runc:[0:PARENT]`, `[1:CHILD]`,
/// `[2:INIT]` in runc's nsexec.c (prctl(PR_SET_NAME), kernel/sys.c → set_task_comm: the comm
/// changes, the pid stays).
fn stage_steps(cast: &Cast, step: &mut impl FnMut(StepKind, u64, u64, u32, String)) {
    let stages = cast.stages();
    let first_exec = stages
        .iter()
        .filter_map(|(p, _)| *p)
        .find_map(|p| p.init_exec_seq().map(|s| (p, s)));
    if let Some((p, s)) = first_exec {
        let of = cast
            .runtime
            .map(|r| format!(" of {}", label(r)))
            .unwrap_or_default();
        step(
            StepKind::InitExec,
            s,
            p.exec_ts_ns(s).unwrap_or(p.birth_ts_ns),
            p.pid,
            format!("child {}{of} exec'd runc init", p.pid),
        );
    }
    for (p, stage) in stages {
        let Some(p) = p else { continue };
        if let Some((_, r)) = p.stage_renames().find(|(s, _)| *s == stage) {
            step(
                StepKind::StageRenamed,
                r.seq,
                r.ts_ns,
                p.pid,
                format!("{} renamed itself {}", p.pid, stage.comm()),
            );
        }
    }
}

/// INIT's birth: PARENT cloned CHILD and CHILD cloned INIT, both with CLONE_PARENT
/// (kernel/fork.c copy_process: real_parent = current->real_parent), so the runtime, not the
/// caller, is their parent. CHILD's clone is shown only when PARENT was seen.
fn clone_steps(cast: &Cast, step: &mut impl FnMut(StepKind, u64, u64, u32, String)) {
    let Some(c) = cast.child else { return };
    if cast.parent.is_some() {
        let (seq, ts) = (c.start_seq, c.birth_ts_ns);
        step(StepKind::ChildCloned, seq, ts, c.pid, clone_text(c));
    }
    let init = cast.init;
    let kind = if cast.exec {
        StepKind::ExecCloned
    } else {
        StepKind::InitCloned
    };
    step(
        kind,
        init.start_seq,
        init.birth_ts_ns,
        init.pid,
        clone_text(init),
    );
}

/// `caller cloned pid [with CLONE_PARENT]: parent P`, from the process's birth record.
fn clone_text(p: &Process) -> String {
    let l = p.lineage.first();
    let caller = l
        .and_then(|l| l.caller)
        .map(|c| c.to_string())
        .unwrap_or_else(|| "?".into());
    let how = if l.is_some_and(|l| l.how == How::CloneParent) {
        " with CLONE_PARENT"
    } else {
        ""
    };
    let parent = l.map_or(0, |l| l.parent);
    format!("{caller} cloned {}{how}: parent {parent}", p.pid)
}

/// The stages and the runtime leaving: CHILD and PARENT exit once they have relayed the pids,
/// and `runc create` exits while INIT waits on the exec fifo; the runtime's exit orphans INIT
/// (kernel/exit.c do_exit → exit_notify → forget_original_parent).
fn exit_steps(cast: &Cast, step: &mut impl FnMut(StepKind, u64, u64, u32, String)) {
    for p in [cast.child, cast.parent].into_iter().flatten() {
        if let Some(x) = p.exit_seq {
            step(
                StepKind::IntermediateExited,
                x,
                p.exit_ts_ns.unwrap_or_default(),
                p.pid,
                format!("{} exited", label(p)),
            );
        }
    }
    if let Some(rt) = cast.runtime {
        if let Some(x) = rt.exit_seq {
            let kind = if cast.exec {
                StepKind::ExecRuntimeExited
            } else {
                StepKind::RuntimeExited
            };
            let ts = rt.exit_ts_ns.unwrap_or_default();
            step(kind, x, ts, rt.pid, format!("{} exited", label(rt)));
        }
    }
}

/// INIT's adoption: orphaned by the runtime, it goes to the nearest subreaper ancestor, the
/// shim, or else to init (kernel/exit.c find_new_reaper). Its first adoption after birth.
fn adoption_step(c: &Ctx, cast: &Cast, step: &mut impl FnMut(StepKind, u64, u64, u32, String)) {
    let init = cast.init;
    if let Some(a) = init.lineage.iter().skip(1).find(|l| l.how == How::Adopted) {
        let reason = adopted_why(c, a.parent, a.reason);
        let kind = if cast.exec {
            StepKind::ExecAdopted
        } else {
            StepKind::InitAdopted
        };
        let who = cast.who();
        let text = format!("{who} {} adopted by {} ({reason})", init.pid, a.parent);
        step(kind, a.seq, a.ts_ns, init.pid, text);
    }
}

/// Why `pid` adopted, as a step says it in parentheses: the kernel's reason, led for a host
/// PID 1 that is no init system by what it is (trainees expect systemd there).
fn adopted_why(c: &Ctx, pid: u32, reason: Option<Reason>) -> String {
    let reason = reason.map(|r| r.to_string()).unwrap_or_default();
    match c.process_meta(pid).filter(|p| p.machine_init().is_some()) {
        Some(p) => format!("{}, the recording machine's init; {reason}", p.name()),
        None => reason,
    }
}

/// The container's cgroup: runc writes its `runc init` child into cgroup.procs early
/// (kernel/cgroup/cgroup.c cgroup_attach_task), and the later stages inherit it at fork
/// (cgroup_fork), so a move shown on PARENT or CHILD is also INIT's.
fn cgroup_steps(cast: &Cast, step: &mut impl FnMut(StepKind, u64, u64, u32, String)) {
    let init = cast.init;
    for (p, _) in cast.stages() {
        let Some(p) = p else { continue };
        for m in p.cgroup_moves() {
            let inherit = if p.id == init.id {
                ""
            } else {
                " (INIT inherits it at fork)"
            };
            step(
                StepKind::InitCgroup,
                m.seq,
                m.ts_ns,
                p.pid,
                format!(
                    "{} moved {} into cgroup {}{inherit}",
                    m.by,
                    label(p),
                    m.path
                ),
            );
        }
    }
}

/// The workload: INIT, unblocked by `runc start` (or `runc run`), execs the container's
/// program (fs/exec.c begin_new_exec); the pid and the parent stay.
fn workload_step(cast: &Cast, step: &mut impl FnMut(StepKind, u64, u64, u32, String)) {
    let init = cast.init;
    let Some(s) = init.workload_exec_seq() else {
        return;
    };
    let exe = init
        .execs
        .iter()
        .find(|x| x.seq == s)
        .map(|x| x.exe.to_string())
        .unwrap_or_default();
    let kind = if cast.exec {
        StepKind::ExecProgram
    } else {
        StepKind::WorkloadExec
    };
    let text = if cast.exec {
        format!("{} exec'd {exe}, the command asked for", init.pid)
    } else {
        format!("init {} exec'd {exe}", init.pid)
    };
    step(
        kind,
        s,
        init.exec_ts_ns(s).unwrap_or_default(),
        init.pid,
        text,
    );
}

/// The end: what the story is about. Its kind by the shim's name (conmon or containerd's); the
/// sandbox id is the shim's container id when the shim also runs the pod's pause; the
/// container id from INIT's bundle, else from the runtime's argv.
fn summary(c: &Ctx, cast: &Cast, steps: Vec<StoryStep>) -> Story {
    let (init, runtime, shim) = (cast.init, cast.runtime, cast.shim);
    let sandbox_id = shim
        .filter(|sh| {
            sh.children
                .iter()
                .filter_map(|&k| c.meta(k))
                .any(|k| k.role == Some(Role::Sandbox))
        })
        .and_then(|sh| sh.container_id.as_ref())
        .map(|c| c.to_string());
    let kind = match shim {
        Some(s) if s.name().starts_with("conmon") => StoryKind::Conmon,
        Some(_) => StoryKind::Containerd,
        None if runtime.is_some() => StoryKind::Direct,
        None => StoryKind::Unknown,
    };
    let container_id = init
        .container_id
        .as_ref()
        .or(runtime.and_then(|r| r.container_id.as_ref()))
        .map(|c| c.to_string());
    Story {
        phase: if cast.exec { Phase::Exec } else { Phase::Birth },
        attempt: None,
        previous_init: None,
        container_id,
        kind,
        runtime: runtime.map(runtime_text),
        sandbox_id,
        sandbox: init.role == Some(Role::Sandbox),
        shim_pid: shim.map(|s| s.pid),
        runtime_pid: runtime.map(|r| r.pid),
        init_pid: init.pid,
        workload: init.workload_exec_seq().map(|_| init.name()),
        pod: init.k8s.as_ref().and_then(|k| k.pod_text()),
        container_name: init
            .k8s
            .as_ref()
            .and_then(|k| k.container_name.as_deref().map(String::from)),
        steps,
        terminated: None,
        restart: None,
        runtime_restart: None,
    }
}

/// `runc create`: the runtime's program as it was invoked (argv[0]'s basename, else its name)
/// and its subcommand.
fn runtime_text(r: &Process) -> String {
    let sub = r
        .role
        .and_then(|x| x.detail())
        .map(|d| format!(" {d}"))
        .unwrap_or_default();
    let name = r
        .argv
        .first()
        .map_or_else(|| r.name(), |a| super::roles::basename(a).to_string());
    format!("{name}{sub}")
}

/// `runc delete 3188`: an OCI runtime by its program and subcommand, with its pid (which
/// `runc` a step means: kill, delete, state…); any other process as [`label`] names it.
pub(super) fn runtime_label(p: &Process) -> String {
    match p.role {
        Some(Role::OciRuntime {
            subcommand: Some(_),
        }) => {
            format!("{} {}", runtime_text(p), p.pid)
        }
        _ => label(p),
    }
}

/// The steps of a shim's own birth: started, its parent gone, adopted, subreaper.
fn shim_birth(c: &Ctx, shim: &Process, step: &mut impl FnMut(StepKind, u64, u64, u32, String)) {
    let creator = |p: &Process| p.creator.and_then(|x| c.meta(x));
    let by = shim.lineage.first().and_then(|l| l.caller);
    let by_text = match creator(shim) {
        Some(c) => format!(" by {}", label(c)),
        None => by.map(|b| format!(" by {b}")).unwrap_or_default(),
    };
    // Fork keeps the creator's cgroup, and no runtime moves the shim out of it.
    let cg = match (&shim.cgroup, shim.cgroup_moves().is_empty()) {
        (Some(c), true) => format!(" in its creator's cgroup {c}, where it stays"),
        _ => String::new(),
    };
    step(
        StepKind::ShimStarted,
        shim.start_seq,
        shim.birth_ts_ns,
        shim.pid,
        format!("shim {} started{by_text}{cg}", label(shim)),
    );
    let sp = shim.birth_parent.and_then(|p| c.get(p));
    if let Some(sp) = sp {
        if let Some(x) = sp.exit_seq {
            step(
                StepKind::ShimParentExited,
                x,
                sp.exit_ts_ns.unwrap_or_default(),
                sp.pid,
                format!("shim's parent {} exited", label(sp)),
            );
        }
        let adoption = shim.lineage.iter().find(
            |l| matches!(l.reason, Some(Reason::ParentExited { parent, .. }) if parent == sp.pid),
        );
        if let Some(a) = adoption {
            let reason = adopted_why(c, a.parent, a.reason);
            step(
                StepKind::ShimAdopted,
                a.seq,
                a.ts_ns,
                shim.pid,
                format!("shim {} adopted by {} ({reason})", shim.pid, a.parent),
            );
        }
    }
    if let (Some(s), Some(ts)) = (shim.subreaper_seq(), shim.subreaper_ts_ns()) {
        step(
            StepKind::ShimSubreaper,
            s,
            ts,
            shim.pid,
            format!("shim {} set PR_SET_CHILD_SUBREAPER", shim.pid),
        );
    }
}

/// An earlier OCI runtime (`runc create`) the same shim ran: then `rt`'s container joined a
/// shim that was already there (a pod's later container).
fn earlier_container<'a>(c: &Ctx<'a>, shim: &Process, rt: &Process) -> Option<&'a Process> {
    c.class(Key::RuntimesOf(shim.id))
        .into_iter()
        .filter(|r| r.birth_parent == Some(shim.id) && r.start_seq < rt.start_seq)
        .find(|r| {
            matches!(
                r.role,
                Some(Role::OciRuntime {
                    subcommand: Some(OciCommand::Create | OciCommand::Run)
                })
            )
        })
}

/// The step of a container joining its pod's running shim: the `shim start` process for this
/// container (same id, exited without a daemon child), or, if it was not seen, the runtime.
fn shim_reused(
    c: &Ctx,
    shim: &Process,
    first: &Process,
    runtime: Option<&Process>,
) -> (u64, u64, u32, String) {
    let first_id = first.container_id.as_deref().unwrap_or("?");
    let first_id = first_id.get(..12).unwrap_or(first_id);
    let pod = format!(
        "the pod's shim {} (running since {first_id}; one shim per pod)",
        shim.pid
    );
    let cid = runtime.and_then(|r| r.container_id.clone());
    let shims = cid.map_or_else(Vec::new, |id| c.class(Key::ShimsOf(id)));
    let cid = runtime.and_then(|r| r.container_id.as_deref());
    let start = shims.into_iter().find(|p| {
        p.role == Some(Role::Shim)
            && p.id != shim.id
            && p.start_seq > shim.start_seq
            && p.argv.iter().any(|a| a == "start")
            && cid.is_some()
            && p.container_id.as_deref() == cid
            && p.children
                .iter()
                .filter_map(|&k| c.meta(k))
                .all(|k| k.role != Some(Role::Shim))
    });
    match (start, runtime) {
        (Some(st), _) => (
            st.exit_seq.unwrap_or(st.start_seq),
            st.exit_ts_ns.unwrap_or(st.birth_ts_ns),
            st.pid,
            format!("shim start {} found {pod} and exited", label(st)),
        ),
        (None, Some(rt)) => (
            rt.start_seq,
            rt.birth_ts_ns,
            shim.pid,
            format!("no new shim: {pod} runs {}", label(rt)),
        ),
        (None, None) => (
            shim.start_seq,
            shim.birth_ts_ns,
            shim.pid,
            format!("no new shim: {pod}"),
        ),
    }
}

/// CNI plugin runs that set up a sandbox's network: plugins under the runtime daemon that
/// started the shim, after the previous sandbox came up and before this one's pause exec'd
/// (containerd runs CNI before or after creating the sandbox, by version).
fn cni_runs(c: &Ctx, sandbox: &Process, shim: Option<&Process>) -> Vec<(u64, u64, u32, String)> {
    let Some(end) = sandbox.workload_exec_seq() else {
        return Vec::new();
    };
    let after = c.sandbox_end_before(end).unwrap_or(0);
    let daemon = shim.and_then(|s| runtime_daemon_of(c, s));
    let mut runs: Vec<(u64, u64, u32, String)> = c
        .cni_between(after, end)
        .into_iter()
        .filter(|p| p.role == Some(Role::CniPlugin) && p.start_seq > after && p.start_seq < end)
        .filter(|p| daemon.is_none_or(|d| descends_from(c, p, d.id)))
        .map(|p| {
            let (seq, ts) = last_exec(p);
            let by = p
                .birth_parent
                .and_then(|b| c.meta(b))
                .map(|b| format!(" by {}", label(b)))
                .unwrap_or_default();
            let status = p
                .exit_status
                .as_ref()
                .map(|s| format!(", {s}"))
                .unwrap_or_else(|| ", still running".into());
            (
                seq,
                ts,
                p.pid,
                format!("cni plugin {} ran{by}{status}", label(p)),
            )
        })
        .collect();
    runs.sort_by_key(|r| r.0);
    runs
}

/// The runtime daemon among a process's first ancestors at birth.
pub(super) fn runtime_daemon_of<'a>(c: &Ctx<'a>, p: &Process) -> Option<&'a Process> {
    let mut at = p.birth_parent.and_then(|b| c.meta(b));
    for _ in 0..8 {
        let a = at?;
        if a.role == Some(Role::RuntimeDaemon) {
            return Some(a);
        }
        at = a.birth_parent.and_then(|b| c.meta(b));
    }
    None
}

/// Whether `ancestor` is among `p`'s first ancestors at birth.
pub(super) fn descends_from(c: &Ctx, p: &Process, ancestor: ProcId) -> bool {
    let mut at = p.birth_parent;
    for _ in 0..8 {
        match at {
            Some(a) if a == ancestor => return true,
            Some(a) => at = c.meta(a).and_then(|x| x.birth_parent),
            None => return false,
        }
    }
    false
}
