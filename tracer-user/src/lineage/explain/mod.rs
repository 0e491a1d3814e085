//! Why each story step happens: the kernel rule or the runtime design behind it, with the
//! source that implements it, told for the variant the story holds (`runc create`, `run` or
//! `exec`; containerd's shim, conmon or no shim; a StopContainer or a StopPodSandbox; the CNI
//! plugins as they ran). Every [`StepKind`] is matched exhaustively, so a new kind does not
//! build until it is explained; each group of kinds has its module: `birth` (the shim, the
//! runtime and its stages), `exec` (`runc exec`), `death` (signals, OOM, reaping,
//! `runc delete`, the pod's teardown, restarts). `facts` reads from the records what the
//! variants tell apart.

use serde_json::Value;

use super::kubelet::Cause;
use super::story::{Facts, Phase, StepKind, Story, StoryKind, StoryStep};

mod birth;
#[cfg(test)]
pub(crate) mod check;
mod death;
mod exec;
pub(super) mod facts;
mod restart;

/// The explanation of one step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Why {
    /// What the step means and why it happens, in a few sentences.
    pub text: String,
    /// Where it lives: the kernel function or the runtime source file.
    pub source: &'static str,
}

/// A step in its story: what the explanations read.
pub(super) struct Told<'a> {
    pub story: &'a Story,
    pub step: &'a StoryStep,
}

/// The OCI runtime's subcommand a story was told for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Command {
    Create,
    Run,
    Exec,
    Other,
}

impl Told<'_> {
    /// `create`, `run`, `exec` from the story's `runc create`…
    pub fn command(&self) -> Command {
        let last = self
            .story
            .runtime
            .as_deref()
            .and_then(|r| r.rsplit(' ').next());
        match last {
            Some("create") => Command::Create,
            Some("run") => Command::Run,
            Some("exec") => Command::Exec,
            _ if self.story.phase == Phase::Exec => Command::Exec,
            _ => Command::Other,
        }
    }

    /// The machinery that started the container.
    pub fn kind(&self) -> StoryKind {
        self.story.kind
    }

    /// Whether the story holds a step of `kind`.
    pub fn has(&self, kind: StepKind) -> bool {
        self.story.steps.iter().any(|s| s.kind == kind)
    }

    /// The cause of a death story's end, as the kubelet would tell it.
    pub fn cause(&self) -> Option<&Cause> {
        self.story.terminated.as_ref().map(|t| &t.cause)
    }

    /// The step's facts.
    pub fn facts(&self) -> &Facts {
        &self.step.facts
    }

    /// What the runtime daemon is called: containerd's CRI plugin, or CRI-O/podman.
    pub fn daemon(&self) -> &'static str {
        match (self.kind(), self.story.pod.is_some()) {
            (StoryKind::Conmon, true) => "CRI-O",
            (StoryKind::Conmon, false) => "podman",
            (_, true) => "containerd's CRI plugin",
            (_, false) => "containerd",
        }
    }

    /// What the container's keeper is called: the shim, conmon, or nothing.
    pub fn keeper(&self) -> Option<&'static str> {
        match self.kind() {
            StoryKind::Containerd => Some("the shim"),
            StoryKind::Conmon => Some("conmon"),
            _ => None,
        }
    }
}

/// The explanation of `step` in `story`.
pub fn why(story: &Story, step: &StoryStep) -> Why {
    let t = Told { story, step };
    let (text, source) = match step.kind {
        StepKind::ShimStarted
        | StepKind::ShimParentExited
        | StepKind::ShimAdopted
        | StepKind::ShimSubreaper
        | StepKind::ShimReused
        | StepKind::CniPlugin => birth::keeper(&t),
        StepKind::RuntimeStarted
        | StepKind::InitExec
        | StepKind::StageRenamed
        | StepKind::ChildCloned
        | StepKind::InitCloned
        | StepKind::IntermediateExited => birth::stages(&t),
        StepKind::RuntimeExited
        | StepKind::InitAdopted
        | StepKind::WorkloadExec
        | StepKind::InitCgroup => birth::start(&t),
        StepKind::ExecCloned
        | StepKind::ExecJoined
        | StepKind::ExecProgram
        | StepKind::ExecRuntimeExited
        | StepKind::ExecAdopted
        | StepKind::ExecEnded => exec::why(&t),
        StepKind::SignalSent | StepKind::OomKilled | StepKind::PodStopped => death::kill(&t),
        StepKind::InitDied
        | StepKind::InitReaped
        | StepKind::NamespaceKilled
        | StepKind::Terminated => death::end(&t),
        StepKind::RuntimeDelete
        | StepKind::CniTeardown
        | StepKind::ShimExited
        | StepKind::ShimReaped
        | StepKind::Restarted => death::after(&t),
        StepKind::DaemonEnded => restart::why(&t, restart::DAEMON_ENDED),
        StepKind::Survived => restart::why(&t, restart::SURVIVED),
        StepKind::RestartLost => restart::why(&t, restart::RESTART_LOST),
        StepKind::DaemonStarted => restart::why(&t, restart::DAEMON_STARTED),
        StepKind::RestartUnchanged => restart::why(&t, restart::RESTART_UNCHANGED),
    };
    Why { text, source }
}

/// find_new_reaper()'s rules in the kernel's order, and the one that picked `reaper` for the
/// orphans of `dying` (which ended as a whole: the model adopts only at a process's end, so
/// no live thread of it was left to take them). `by` names the reaper when it is the
/// story's shim or conmon.
pub(super) fn adoption(
    dying: &str,
    reaper: Option<super::process::Reaper>,
    by: Option<&str>,
) -> String {
    use super::process::Reaper;
    let rules = format!(
        "On {dying}'s exit the kernel looked for a new parent for its children \
         (find_new_reaper), in this order: another live thread of the dying process \
         (find_alive_thread: a multi-threaded parent such as a Go program keeps its children \
         while any of its threads lives, so one thread's exit moves nothing); then, only if \
         the dying process has_child_subreaper, the nearest live ancestor in the same pid \
         namespace that set PR_SET_CHILD_SUBREAPER; else the namespace's init. The first \
         rule found nobody: {dying} had ended with its last thread"
    );
    let picked = match (reaper, by) {
        (Some(Reaper::Subreaper(p)), Some(by)) => format!(
            "; the second rule picked {by} {p}, which set PR_SET_CHILD_SUBREAPER for exactly \
             this."
        ),
        (Some(Reaper::Subreaper(p)), None) => {
            format!("; the second rule picked the subreaper ancestor {p}.")
        }
        (Some(Reaper::Init), _) => "; no live subreaper ancestor was found, so the host's \
             init, pid 1, took it."
            .to_string(),
        (Some(Reaper::NsInit(p)), _) => {
            format!("; no subreaper in its pid namespace, so that namespace's init {p} took it.")
        }
        (Some(Reaper::NsInitUnseen), _) => {
            "; no subreaper in its pid namespace, so that namespace's init (not seen) took it."
                .to_string()
        }
        (None, _) => ".".to_string(),
    };
    format!("{rules}{picked}")
}

/// Adds `"why"` and `"why_source"` to every step of a `story_json` value.
pub fn add_whys(json: &mut Value, stories: &[Story]) {
    let Some(out) = json.get_mut("stories").and_then(Value::as_array_mut) else {
        return;
    };
    for (js, st) in out.iter_mut().zip(stories) {
        let Some(steps) = js.get_mut("steps").and_then(Value::as_array_mut) else {
            continue;
        };
        for (jstep, step) in steps.iter_mut().zip(&st.steps) {
            let w = why(st, step);
            jstep["why"] = Value::from(w.text);
            jstep["why_source"] = Value::from(w.source);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use StepKind as K;

    /// Every kind (a new one goes here and into [`listed`], which fails to build without it).
    const EVERY: [StepKind; 39] = [
        K::ShimStarted,
        K::ShimParentExited,
        K::ShimAdopted,
        K::ShimSubreaper,
        K::RuntimeStarted,
        K::InitExec,
        K::StageRenamed,
        K::ChildCloned,
        K::InitCloned,
        K::IntermediateExited,
        K::RuntimeExited,
        K::InitAdopted,
        K::WorkloadExec,
        K::InitCgroup,
        K::ShimReused,
        K::CniPlugin,
        K::ExecCloned,
        K::ExecJoined,
        K::ExecProgram,
        K::ExecRuntimeExited,
        K::ExecAdopted,
        K::ExecEnded,
        K::SignalSent,
        K::OomKilled,
        K::InitDied,
        K::InitReaped,
        K::NamespaceKilled,
        K::RuntimeDelete,
        K::CniTeardown,
        K::ShimExited,
        K::ShimReaped,
        K::Restarted,
        K::Terminated,
        K::PodStopped,
        K::DaemonEnded,
        K::Survived,
        K::RestartLost,
        K::DaemonStarted,
        K::RestartUnchanged,
    ];

    /// An exhaustive match over the kinds: a new variant fails to build here until added.
    fn listed(k: StepKind) {
        match k {
            K::ShimStarted
            | K::ShimParentExited
            | K::ShimAdopted
            | K::ShimSubreaper
            | K::RuntimeStarted
            | K::InitExec
            | K::StageRenamed
            | K::ChildCloned
            | K::InitCloned
            | K::IntermediateExited
            | K::RuntimeExited
            | K::InitAdopted
            | K::WorkloadExec
            | K::InitCgroup
            | K::ShimReused
            | K::CniPlugin
            | K::ExecCloned
            | K::ExecJoined
            | K::ExecProgram
            | K::ExecRuntimeExited
            | K::ExecAdopted
            | K::ExecEnded
            | K::SignalSent
            | K::OomKilled
            | K::InitDied
            | K::InitReaped
            | K::NamespaceKilled
            | K::RuntimeDelete
            | K::CniTeardown
            | K::ShimExited
            | K::ShimReaped
            | K::Restarted
            | K::Terminated
            | K::PodStopped
            | K::DaemonEnded
            | K::Survived
            | K::RestartLost
            | K::DaemonStarted
            | K::RestartUnchanged => {}
        }
    }

    /// Every kind, each checked by [`listed`]'s exhaustive match (and so explained).
    pub(crate) fn all_kinds() -> Vec<StepKind> {
        EVERY.iter().for_each(|&k| listed(k));
        EVERY.to_vec()
    }

    /// A containerd `runc create` story with one step of `kind` and no facts.
    fn bare(kind: StepKind) -> (Story, StoryStep) {
        let step = StoryStep {
            kind,
            seq: 1,
            ts_ns: 0,
            time: None,
            pid: 2,
            text: String::new(),
            facts: Facts::None,
        };
        let story = Story {
            phase: Phase::Birth,
            attempt: None,
            previous_init: None,
            container_id: None,
            kind: StoryKind::Containerd,
            runtime: Some("runc create".into()),
            sandbox_id: None,
            sandbox: false,
            shim_pid: None,
            runtime_pid: None,
            init_pid: 3,
            workload: None,
            pod: None,
            container_name: None,
            steps: vec![step.clone()],
            terminated: None,
            runtime_restart: None,
            restart: None,
        };
        (story, step)
    }

    #[test]
    fn every_step_kind_has_a_sentence_and_a_source() {
        for k in all_kinds() {
            let (st, step) = bare(k);
            let w = why(&st, &step);
            let t = w.text.trim();
            assert!(t.len() >= 40, "{k:?}: too short: {t:?}");
            assert!(t.ends_with('.'), "{k:?}: not a sentence: {t:?}");
            assert!(!t.contains("  "), "{k:?}: a run of spaces: {t:?}");
            assert!(!w.source.trim().is_empty(), "{k:?}: no source");
        }
    }

    #[test]
    fn whys_are_distinct() {
        let kinds = all_kinds();
        let texts: std::collections::HashSet<String> = kinds
            .iter()
            .map(|&k| {
                let (st, step) = bare(k);
                why(&st, &step).text
            })
            .collect();
        assert_eq!(texts.len(), kinds.len(), "two kinds share an explanation");
    }

    #[test]
    fn the_whys_name_the_kernel_rules() {
        let w = |k| {
            let (st, step) = bare(k);
            why(&st, &step)
        };
        assert!(w(StepKind::ShimAdopted).source.contains("find_new_reaper"));
        assert!(w(StepKind::ShimAdopted).text.contains("find_alive_thread"));
        assert!(w(StepKind::ShimSubreaper)
            .text
            .contains("PR_SET_CHILD_SUBREAPER"));
        assert!(w(StepKind::InitCloned).text.contains("CLONE_PARENT"));
        assert!(w(StepKind::InitCloned)
            .source
            .contains("zap_pid_ns_processes"));
        assert!(w(StepKind::ChildCloned).source.contains("nsexec.c"));
        assert!(w(StepKind::ShimStarted).text.contains("double fork"));
    }
}
