//! Each explanation is checked against the facts of the story it is told in: no shim in a
//! story without one, no `runc start` in an exec or a `runc run`, no grace period in a kill
//! at once, the CNI plugins in the order they ran, find_new_reaper's rule that applied.

use super::*;
use crate::lineage::explain::why;
use crate::lineage::kubelet::Cause;
use crate::lineage::process::Reaper;
use crate::lineage::story::{Facts, Parent};

/// What `text` (the explanation of `step` in `st`) may not say, or must say, given what the
/// story holds. `Err` names the first claim it gets wrong.
fn check(st: &Story, step: &StoryStep, text: &str) -> Result<(), String> {
    let says = |w: &str| text.contains(w);
    let no = |w: &str, why: &str| match says(w) {
        true => Err(format!("says {w:?} but {why}")),
        false => Ok(()),
    };
    if st.kind != StoryKind::Containerd {
        no("shim", "the story has no containerd shim")?;
        no("containerd", "the story is not containerd's")?;
    }
    if st.kind != StoryKind::Conmon {
        no("conmon", "the story has no conmon")?;
    }
    let runtime = st.runtime.as_deref().unwrap_or("");
    if st.phase == Phase::Exec || runtime.ends_with(" run") {
        no("runc start", "no `runc start` runs for an exec or a `runc run`")?;
        no("`runc create`", "the story's runtime is not `runc create`")?;
    }
    if st.phase == Phase::Exec {
        no("CHILD and INIT are born inside", "an exec's final process is moved")?;
        no("first stage into the container's cgroup (manager", "an exec's stages are not")?;
    }
    match st.terminated.as_ref().map(|t| &t.cause) {
        Some(Cause::StopContainer { .. }) => {}
        _ => {
            no("grace period ran out", "the story's end had no SIGTERM")?;
            no("terminationGracePeriodSeconds", "the story's end had no grace period")?;
            no("SIGTERM, then SIGKILL", "the story's end had no SIGTERM")?;
        }
    }
    no("waits the grace period", "the CRI plugin times a stop, not the shim")?;
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
                Reaper::Subreaper(p) => text.contains(&format!("picked")) && text.contains(&p.to_string()),
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
        Facts::Cni { .. } => cni_order_holds(st, step.kind, text).or_else(|e| fail(e))?,
        _ => {}
    }
    if step.kind == StepKind::RuntimeDelete && !step.text.starts_with("runc delete ") {
        return fail(format!("the step does not name the subcommand: {}", step.text));
    }
    Ok(())
}

/// The plugins named in the order the story's steps ran them, an IPAM plugin right after
/// its main plugin and told as its child.
fn cni_order_holds(st: &Story, kind: StepKind, text: &str) -> Result<(), String> {
    let mut at = 0;
    for s in st.steps.iter().filter(|s| s.kind == kind) {
        let Facts::Cni { plugin, delegated_by } = &s.facts else {
            continue;
        };
        let Some(i) = text[at..].find(plugin.as_str()) else {
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
fn failures(stories: &[Story]) -> Vec<String> {
    let mut bad = Vec::new();
    for st in stories {
        for step in &st.steps {
            let w = why(st, step);
            if let Err(e) = check(st, step, &w.text) {
                bad.push(format!("{:?} {:?} seq {}: {e}", st.phase, step.kind, step.seq));
            }
        }
    }
    bad
}

fn demo_stories(demo: crate::demo::Demo) -> Vec<Story> {
    let mut input = demo.open().unwrap();
    let mut e = input.seeded_engine();
    for ev in input.by_ref() {
        e.apply(&ev.unwrap());
    }
    stories(&e)
}

#[test]
fn every_bundled_story_is_explained_for_what_it_holds() {
    for &demo in crate::demo::Demo::ALL {
        let all = demo_stories(demo);
        assert!(!all.is_empty(), "{demo:?}");
        let bad = failures(&all);
        assert!(bad.is_empty(), "{demo:?}:\n{}", bad.join("\n"));
    }
}

/// The whys of the steps of `kind` in the stories of `phase` that `pick` keeps.
fn whys(all: &[Story], phase: Phase, kind: StepKind) -> Vec<String> {
    all.iter()
        .filter(|s| s.phase == phase)
        .flat_map(|s| s.steps.iter().map(move |x| (s, x)))
        .filter(|(_, x)| x.kind == kind)
        .map(|(s, x)| why(s, x).text)
        .collect()
}

#[test]
fn the_lifecycle_demo_tells_each_stop_exec_and_delete_as_it_was() {
    let all = demo_stories(crate::demo::Demo::Lifecycle);
    // The stopper: SIGTERM, then SIGKILL 2 s later, timed by containerd's CRI plugin.
    let stop = all
        .iter()
        .find(|s| matches!(s.terminated.as_ref().map(|t| &t.cause), Some(Cause::StopContainer { .. })))
        .expect("a StopContainer");
    let signals: Vec<String> = stop
        .steps
        .iter()
        .filter(|x| x.kind == StepKind::SignalSent)
        .map(|x| why(stop, x).text)
        .collect();
    assert_eq!(signals.len(), 2);
    assert!(signals[0].contains("CRI plugin") && signals[0].contains("not the shim, then times the grace period"), "{}", signals[0]);
    assert!(signals[1].contains("grace period") && signals[1].contains("ran out"), "{}", signals[1]);
    // A kill at once (StopPodSandbox): no SIGTERM, no grace period told.
    let at_once = all
        .iter()
        .filter(|s| matches!(s.terminated.as_ref().map(|t| &t.cause), Some(Cause::KilledAtOnce { .. })))
        .flat_map(|s| s.steps.iter().filter(|x| x.kind == StepKind::SignalSent).map(move |x| why(s, x).text))
        .collect::<Vec<_>>();
    assert!(!at_once.is_empty());
    for t in &at_once {
        assert!(t.contains("at once") && !t.contains("terminationGracePeriodSeconds"), "{t}");
    }
    // An exec: the final process joins the cgroup; no `runc start`.
    let cg = whys(&all, Phase::Exec, StepKind::InitCgroup);
    assert!(!cg.is_empty() && cg.iter().all(|t| t.contains("final process")), "{cg:?}");
    // The exec'd sleep killed with its namespace: not "the container goes on".
    let ends = whys(&all, Phase::Exec, StepKind::ExecEnded);
    assert!(ends.iter().any(|t| t.contains("zap_pid_ns_processes")), "{ends:?}");
    assert!(ends.iter().any(|t| t.contains("goes on")), "{ends:?}");
    // Each container's two deletes: the shim's, then the shim binary's cleanup.
    let deletes = whys(&all, Phase::Death, StepKind::RuntimeDelete);
    assert!(deletes.iter().any(|t| t.contains("task Delete")), "{deletes:?}");
    assert!(deletes.iter().any(|t| t.contains("`runc delete --force`")), "{deletes:?}");
}

#[test]
fn the_cni_order_is_the_recordings() {
    let all = demo_stories(crate::demo::Demo::Lifecycle);
    let w = whys(&all, Phase::Birth, StepKind::CniPlugin);
    assert!(!w.is_empty());
    for t in &w {
        assert!(
            t.contains("loopback, then bridge (which ran host-local as its IPAM plugin, its own child)"),
            "{t}"
        );
    }
}

/// A `runc run` in the foreground from a shell: no shim, INIT never adopted, its death's
/// SIGCHLD to `runc run`.
#[test]
fn a_foreground_runc_run_is_told_without_a_shim() {
    let mut b = B::default();
    b.fork(1, 700);
    b.exec(700, "/usr/bin/runc", &["runc", "run", "box"]);
    b.fork(700, 701);
    b.exec_comm(701, 701, "/proc/self/exe", &["runc", "init"], "exe");
    b.rename(701, 701, "runc:[0:PARENT]");
    b.clone(701, 702, cf::CLONE_PARENT);
    b.rename(702, 702, "runc:[1:CHILD]");
    b.clone(702, 703, cf::CLONE_PARENT);
    b.rename(703, 703, "runc:[2:INIT]");
    b.exit(702, 0);
    b.exit(701, 0);
    b.exec_comm(703, 703, "/bin/sh", &["sh"], "sh");
    b.exit(703, 0);
    b.logged_sigchld(703, 700);
    b.exit(700, 0);
    let all = stories(&b.engine());
    assert_eq!(all.len(), 2, "{all:?}");
    let bad = failures(&all);
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    let exited = whys(&all, Phase::Birth, StepKind::RuntimeExited);
    assert!(exited[0].contains("foreground"), "{exited:?}");
    let reaped = whys(&all, Phase::Death, StepKind::InitReaped);
    assert_eq!(reaped.len(), 1);
    assert!(reaped[0].contains("foreground `runc run`"), "{reaped:?}");
    let started = whys(&all, Phase::Birth, StepKind::RuntimeStarted);
    assert!(started[0].contains("create and start in one"), "{started:?}");
}

/// A `runc create` from a shell: INIT goes to pid 1, told by find_new_reaper's last rule.
#[test]
fn a_runc_create_by_hand_leaves_init_to_pid_1() {
    let mut b = B::default();
    b.fork(1, 700);
    b.exec(700, "/usr/bin/runc", &["runc", "create", "box"]);
    b.fork(700, 701);
    b.exec_comm(701, 701, "/proc/self/exe", &["runc", "init"], "exe");
    b.rename(701, 701, "runc:[0:PARENT]");
    b.clone(701, 702, cf::CLONE_PARENT);
    b.rename(702, 702, "runc:[1:CHILD]");
    b.clone(702, 703, cf::CLONE_PARENT);
    b.rename(703, 703, "runc:[2:INIT]");
    b.exit(702, 0);
    b.exit(701, 0);
    b.exit(700, 0);
    let all = stories(&b.engine());
    let bad = failures(&all);
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    let adopted = whys(&all, Phase::Birth, StepKind::InitAdopted);
    assert_eq!(adopted.len(), 1, "{all:?}");
    assert!(adopted[0].contains("pid 1, took it"), "{adopted:?}");
}

/// podman's conmon: its double fork, its subreaper, INIT adopted by it; nothing of
/// containerd's.
#[test]
fn a_conmon_story_is_told_as_conmon() {
    let mut b = B::default();
    b.fork(1, 500);
    b.exec(500, "/usr/bin/podman", &["podman", "run"]);
    b.fork(500, 600);
    let argv = ["/usr/bin/conmon", "--api-version", "1", "-c", "C0FFEE", "-u", "C0FFEE"];
    b.exec(600, "/usr/bin/conmon", &argv);
    b.fork(600, 601);
    b.exit(600, 0);
    b.subreaper(601, 601, true);
    b.fork(601, 610);
    let runc = ["/usr/bin/runc", "create", "--bundle", "/b/C0FFEE", "C0FFEE"];
    b.exec(610, "/usr/bin/runc", &runc);
    b.fork(610, 611);
    b.exec_comm(611, 611, "/proc/self/exe", &["runc", "init"], "exe");
    b.rename(611, 611, "runc:[0:PARENT]");
    b.clone(611, 612, cf::CLONE_PARENT);
    b.rename(612, 612, "runc:[1:CHILD]");
    b.clone(612, 613, cf::CLONE_PARENT);
    b.rename(613, 613, "runc:[2:INIT]");
    b.exit(612, 0);
    b.exit(611, 0);
    b.exit(610, 0);
    b.exec_comm(613, 613, "/usr/bin/nginx", &["nginx"], "nginx");
    b.exit(613, 0);
    b.logged_sigchld(613, 601);
    let all = stories(&b.engine());
    let bad = failures(&all);
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    let adopted = whys(&all, Phase::Birth, StepKind::InitAdopted);
    assert!(adopted[0].contains("picked conmon 601"), "{adopted:?}");
    let reaped = whys(&all, Phase::Death, StepKind::InitReaped);
    assert!(reaped[0].contains("conmon"), "{reaped:?}");
}

/// The checker itself finds what a wrong text would claim.
#[test]
fn the_checker_catches_a_wrong_variant() {
    let all = demo_stories(crate::demo::Demo::Lifecycle);
    let exec = all.iter().find(|s| s.phase == Phase::Exec).expect("an exec");
    let step = &exec.steps[0];
    assert!(check(exec, step, "`runc create` exits once INIT waits for `runc start`.").is_err());
    let at_once = all
        .iter()
        .find(|s| matches!(s.terminated.as_ref().map(|t| &t.cause), Some(Cause::KilledAtOnce { .. })))
        .expect("a kill at once");
    let step = &at_once.steps[0];
    assert!(check(at_once, step, "the shim waits the grace period, then SIGKILL.").is_err());
}
