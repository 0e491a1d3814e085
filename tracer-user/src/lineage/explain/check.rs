//! The test kit that checks an explanation against the facts of the story it is told in:
//! what it may not say (no shim in a story without one, no `runc start` in an exec or a
//! `runc run`, no grace period in a kill at once) and what it must (the adoption rule that
//! applied, the CNI plugins in the order they ran). Used by the engine's tests and the
//! bundled demos' tests.

use crate::lineage::explain::why;
use crate::lineage::kubelet::Cause;
use crate::lineage::{Facts, Parent, Phase, Reaper, StepKind, Story, StoryKind, StoryStep};

/// What `text` (the explanation of `step` in `st`) may not say, or must say, given what the
/// story holds. `Err` names the first claim it gets wrong.
pub(crate) fn check(st: &Story, step: &StoryStep, text: &str) -> Result<(), String> {
    let says = |w: &str| text.contains(w);
    let no = |w: &str, why: &str| match says(w) {
        true => Err(format!("says {w:?} but {why}")),
        false => Ok(()),
    };
    if st.kind != StoryKind::Containerd {
        no("shim", "the story has no containerd shim")?;
        no("containerd", "the story is not containerd's")?;
    }
    if st.pod.is_none() {
        no("StopPodSandbox", "no pod asked for the container")?;
        no("CRI plugin", "no pod asked for the container")?;
        no("CRI RemoveContainer", "no pod asked for the container")?;
        no("kubelet's StopContainer", "no pod asked for the container")?;
    }
    if st.kind != StoryKind::Conmon {
        no("conmon", "the story has no conmon")?;
    }
    let runtime = st.runtime.as_deref().unwrap_or("");
    if st.phase == Phase::Exec || runtime.ends_with(" run") {
        no(
            "runc start",
            "no `runc start` runs for an exec or a `runc run`",
        )?;
        no("`runc create`", "the story's runtime is not `runc create`")?;
    }
    if st.phase == Phase::Exec {
        no(
            "CHILD and INIT are born inside",
            "an exec's final process is moved",
        )?;
        no(
            "first stage into the container's cgroup (manager",
            "an exec's stages are not",
        )?;
    }
    match st.terminated.as_ref().map(|t| &t.cause) {
        Some(Cause::StopContainer { .. }) => {}
        _ => {
            no("grace period ran out", "the story's end had no SIGTERM")?;
            no(
                "terminationGracePeriodSeconds",
                "the story's end had no grace period",
            )?;
            no("SIGTERM, then SIGKILL", "the story's end had no SIGTERM")?;
        }
    }
    no(
        "waits the grace period",
        "the CRI plugin times a stop, not the shim",
    )?;
    facts_hold(st, step, text)
}

/// The step's own facts, told as they are.
fn facts_hold(st: &Story, step: &StoryStep, text: &str) -> Result<(), String> {
    let fail = |why: String| Err(format!("{why}: {text}"));
    match &step.facts {
        Facts::Adopted(r) => {
            if !text.contains("find_alive_thread") {
                return fail("an adoption without find_new_reaper's thread rule".into());
            }
            let ok = match r {
                Reaper::Init => text.contains("pid 1, took it") && !text.contains("picked"),
                Reaper::Subreaper(p) => text.contains("picked") && text.contains(&p.to_string()),
                Reaper::NsInit(p) => text.contains(&p.to_string()),
                Reaper::NsInitUnseen => text.contains("not seen"),
            };
            if !ok {
                return fail(format!("not the rule that applied ({r:?})"));
            }
        }
        Facts::Reaped(Parent::Runtime) if !text.contains("runc run") => {
            return fail("the init's parent was its runtime".into())
        }
        Facts::Reaped(Parent::Init) if !text.contains("pid 1") => {
            return fail("the parent of record was pid 1".into())
        }
        Facts::ExecEnd { zapped: true } if text.contains("goes on") => {
            return fail("killed with its namespace, the container does not go on".into())
        }
        Facts::Delete { cleanup: true, .. } if !text.contains("--force") => {
            return fail("the cleanup's delete is a `--force` one".into())
        }
        Facts::Cni { .. } => cni_order_holds(st, step.kind, text).or_else(&fail)?,
        _ => {}
    }
    if step.kind == StepKind::RuntimeDelete && !step.text.starts_with("runc delete ") {
        return fail(format!(
            "the step does not name the subcommand: {}",
            step.text
        ));
    }
    Ok(())
}

/// The plugins named in the order the story's steps ran them, an IPAM plugin right after
/// its main plugin and told as its child.
fn cni_order_holds(st: &Story, kind: StepKind, text: &str) -> Result<(), String> {
    let mut at = 0;
    for (plugin, delegated_by) in crate::lineage::explain::facts::cni_runs(st, kind) {
        let Some(i) = text[at..].find(plugin) else {
            return Err(format!("{plugin} is not told where it ran"));
        };
        at += i + plugin.len();
        if let Some(by) = delegated_by {
            let right_after = format!("{by} (which ran {plugin} as its IPAM plugin");
            let later = format!("{plugin} (run by {by} as its IPAM plugin)");
            if !text.contains(&right_after) && !text.contains(&later) {
                return Err(format!("{plugin} is not told as {by}'s child"));
            }
        }
    }
    Ok(())
}

/// Every step of `stories` checked; the failures, one a line.
pub(crate) fn failures(stories: &[Story]) -> Vec<String> {
    let mut bad = Vec::new();
    for st in stories {
        for step in &st.steps {
            let w = why(st, step);
            if let Err(e) = check(st, step, &w.text) {
                bad.push(format!(
                    "{:?} {:?} seq {}: {e}",
                    st.phase, step.kind, step.seq
                ));
            }
        }
    }
    bad
}

/// The whys of the steps of `kind` in the stories of `phase` that `pick` keeps.
pub(crate) fn whys(all: &[Story], phase: Phase, kind: StepKind) -> Vec<String> {
    all.iter()
        .filter(|s| s.phase == phase)
        .flat_map(|s| s.steps.iter().map(move |x| (s, x)))
        .filter(|(_, x)| x.kind == kind)
        .map(|(s, x)| why(s, x).text)
        .collect()
}
