//! Container-birth stories: the ordered steps, each with the seq of the event that proves it.

use serde::Serialize;

use super::engine::Engine;
use super::process::{How, Process, Reason};
use super::roles::{InitStage, Role};

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
}

/// One step of a container birth, proven by one event.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StoryStep {
    /// What happened.
    pub kind: StepKind,
    /// Seq of the event that shows it.
    pub seq: u64,
    /// The process it happened to.
    pub pid: u32,
    /// One line describing it.
    pub text: String,
}

/// One container birth, as far as it was seen. Missing steps are absent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Story {
    /// The container id, when argv showed it.
    pub container_id: Option<String>,
    /// Which machinery started the container.
    pub kind: StoryKind,
    /// `runc create`, `runc run`…
    pub runtime: Option<String>,
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
}

fn label(p: &Process) -> String {
    format!("{} {}", p.name(), p.pid)
}

/// Every container birth the engine has seen: a process that became `runc:[2:INIT]` or
/// exec'd out of an oci-init stage.
pub fn stories(e: &Engine) -> Vec<Story> {
    let mut anchors: Vec<&Process> = e
        .processes()
        .filter(|p| {
            p.stage_renames().any(|(s, _)| s == InitStage::Init) || p.workload_exec_seq.is_some()
        })
        .collect();
    anchors.sort_by_key(|p| (p.start_seq, p.id));
    anchors.into_iter().map(|init| build(e, init)).collect()
}

fn build(e: &Engine, init: &Process) -> Story {
    let mut steps = Vec::new();
    let mut step = |kind, seq, pid, text: String| {
        steps.push(StoryStep {
            kind,
            seq,
            pid,
            text,
        })
    };

    let creator = |p: &Process| p.creator.and_then(|c| e.get(c));
    let child = creator(init).filter(|c| c.was_oci_init() && c.id != init.id);
    let parent = child.and_then(creator).filter(|p| p.was_oci_init());
    // The runtime is the parent at birth of the first stage (CLONE_PARENT keeps it for all).
    let first = parent.or(child).unwrap_or(init);
    let runtime = first
        .birth_parent
        .and_then(|r| e.get(r))
        .filter(|r| matches!(r.role, Some(Role::OciRuntime { .. })));
    let shim = runtime
        .and_then(|r| r.birth_parent)
        .and_then(|s| e.get(s))
        .filter(|s| s.role == Some(Role::Shim));

    if let Some(shim) = shim {
        let by = shim.lineage.first().and_then(|l| l.caller);
        let by_text = match creator(shim) {
            Some(c) => format!(" by {}", label(c)),
            None => by.map(|b| format!(" by {b}")).unwrap_or_default(),
        };
        // Fork keeps the creator's cgroup, and no runtime moves the shim out of it.
        let cg = match (&shim.cgroup, shim.cgroup_moves.is_empty()) {
            (Some(c), true) => format!(" in its creator's cgroup {c}, where it stays"),
            _ => String::new(),
        };
        step(
            StepKind::ShimStarted,
            shim.start_seq,
            shim.pid,
            format!("shim {} started{by_text}{cg}", label(shim)),
        );
        let sp = shim.birth_parent.and_then(|p| e.get(p));
        if let Some(sp) = sp {
            if let Some(x) = sp.exit_seq {
                step(
                    StepKind::ShimParentExited,
                    x,
                    sp.pid,
                    format!("shim's parent {} exited", label(sp)),
                );
            }
            let adoption = shim.lineage.iter().find(|l| {
                matches!(l.reason, Some(Reason::ParentExited { parent, .. }) if parent == sp.pid)
            });
            if let Some(a) = adoption {
                let reason = a.reason.map(|r| r.to_string()).unwrap_or_default();
                step(
                    StepKind::ShimAdopted,
                    a.seq,
                    shim.pid,
                    format!("shim {} adopted by {} ({reason})", shim.pid, a.parent),
                );
            }
        }
        if let Some(s) = shim.subreaper_seq {
            step(
                StepKind::ShimSubreaper,
                s,
                shim.pid,
                format!("shim {} set PR_SET_CHILD_SUBREAPER", shim.pid),
            );
        }
    }

    if let Some(rt) = runtime {
        let seq = rt.execs.last().map_or(rt.start_seq, |x| x.seq);
        let by = shim
            .map(|s| format!(" by shim {}", s.pid))
            .unwrap_or_default();
        let role = rt.role.map(|r| r.to_string()).unwrap_or_default();
        step(
            StepKind::RuntimeStarted,
            seq,
            rt.pid,
            format!("{} ({role}) started{by}", label(rt)),
        );
    }

    let stages = [
        (parent, InitStage::Parent),
        (child, InitStage::Child),
        (Some(init), InitStage::Init),
    ];
    for p in [parent, child, Some(init)].into_iter().flatten() {
        if let Some(s) = p.init_exec_seq {
            let of = runtime
                .map(|r| format!(" of {}", label(r)))
                .unwrap_or_default();
            step(
                StepKind::InitExec,
                s,
                p.pid,
                format!("child {}{of} exec'd runc init", p.pid),
            );
            break;
        }
    }
    for (p, stage) in stages {
        let Some(p) = p else { continue };
        if let Some((_, r)) = p.stage_renames().find(|(s, _)| *s == stage) {
            step(
                StepKind::StageRenamed,
                r.seq,
                p.pid,
                format!("{} renamed itself {}", p.pid, stage.comm()),
            );
        }
    }
    let clone_text = |p: &Process| {
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
    };
    if let Some(c) = child {
        if parent.is_some() {
            step(StepKind::ChildCloned, c.start_seq, c.pid, clone_text(c));
        }
        step(
            StepKind::InitCloned,
            init.start_seq,
            init.pid,
            clone_text(init),
        );
    }
    for p in [child, parent].into_iter().flatten() {
        if let Some(x) = p.exit_seq {
            step(
                StepKind::IntermediateExited,
                x,
                p.pid,
                format!("{} exited", label(p)),
            );
        }
    }
    if let Some(rt) = runtime {
        if let Some(x) = rt.exit_seq {
            step(
                StepKind::RuntimeExited,
                x,
                rt.pid,
                format!("{} exited", label(rt)),
            );
        }
    }
    if let Some(a) = init.lineage.iter().skip(1).find(|l| l.how == How::Adopted) {
        let reason = a.reason.map(|r| r.to_string()).unwrap_or_default();
        step(
            StepKind::InitAdopted,
            a.seq,
            init.pid,
            format!("init {} adopted by {} ({reason})", init.pid, a.parent),
        );
    }
    // runc moves its `runc init` child early; the later stages inherit it at fork.
    for p in [parent, child, Some(init)].into_iter().flatten() {
        for m in &p.cgroup_moves {
            let inherit = if p.id == init.id {
                ""
            } else {
                " (INIT inherits it at fork)"
            };
            step(
                StepKind::InitCgroup,
                m.seq,
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
    if let Some(s) = init.workload_exec_seq {
        let exe = init
            .execs
            .iter()
            .find(|x| x.seq == s)
            .map(|x| x.exe.to_string())
            .unwrap_or_default();
        step(
            StepKind::WorkloadExec,
            s,
            init.pid,
            format!("init {} exec'd {exe}", init.pid),
        );
    }
    steps.sort_by_key(|s| s.seq);

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
        container_id,
        kind,
        runtime: runtime.map(|r| {
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
        }),
        shim_pid: shim.map(|s| s.pid),
        runtime_pid: runtime.map(|r| r.pid),
        init_pid: init.pid,
        workload: init.workload_exec_seq.map(|_| init.name()),
        pod: init.k8s.as_ref().and_then(|k| k.pod_text()),
        container_name: init
            .k8s
            .as_ref()
            .and_then(|k| k.container_name.as_deref().map(String::from)),
        steps,
    }
}
