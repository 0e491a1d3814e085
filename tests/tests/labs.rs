//! End-to-end truth tests: each lab scenario (the drivers `cargo xtask lab` runs) is recorded
//! with the real probes, and the tree reconstructed from the trace must match /proc as it was
//! at the same moment, and the container-birth story steps must come in order.
//!
//! What is under test is the engine's *prediction*: every event carries the kernel's parent and
//! the engine adopts it when its model disagrees (a warning), so a disagreement fails the test
//! even when the corrected tree then matches /proc.
//!
//! Root, serialized (`--test-threads=1`, and a lock), and cleaned up even when they fail: the
//! scenario's guard removes containers, daemons, mounts and scratch files before any assertion
//! runs. `cargo xtask test` runs them as root; by hand:
//! `cargo build --release -p tracer-user && cargo test -p tests -- --ignored --test-threads=1 labs`
#![cfg(feature = "capture")]

use std::sync::{Mutex, MutexGuard};
use tests::labs::lifecycle::LifecycleTruth;
use tests::labs::{ContainerTruth, Lab, Moment, Outcome, ProcInfo, Scenario};
use tracer::input::Input;
use tracer::lineage::{
    DeathHow, Engine, How, Phase, Process, Role, StepKind, Story, StoryKind, WarningKind,
};
use tracer::Event;
use tracer::ExitStatus;

static SERIAL: Mutex<()> = Mutex::new(());

/// A lab's recording, read back.
struct Recorded {
    out: Outcome,
    snapshot: Vec<tracer::lineage::SnapshotProcess>,
    events: Vec<Event>,
    /// After every event.
    end: Engine,
    _serial: MutexGuard<'static, ()>,
}

fn record(s: Scenario) -> Recorded {
    record_with(s, |_| {})
}

fn record_with(s: Scenario, set: impl FnOnce(&mut Lab)) -> Recorded {
    let serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    assert!(tests::is_root(), "the lab tests need root");
    let tracer = tests::bins::release_tracer().expect("release tracer binary");
    let trace = tests::workspace_root()
        .join("target/labs")
        .join(format!("test-{}.trace", s.name()));
    let mut lab = Lab::new(tracer, trace, s);
    set(&mut lab);
    let out = tests::labs::run(s, &lab).unwrap_or_else(|e| panic!("lab {s}: {e:#}"));
    let mut input = Input::open(&out.trace).expect("open the recording");
    let snapshot = input.snapshot();
    let events: Vec<Event> = input
        .by_ref()
        .collect::<Result<_, _>>()
        .expect("read the recording");
    assert!(
        input.tail().is_some_and(|t| t.clean_end),
        "clean end record"
    );
    let stats = input.last_stats().copied().unwrap_or_default();
    assert_eq!(stats.drops, 0, "events dropped: {}", out.summary);
    assert_eq!(stats.decode_errors, 0);
    let mut end = input.seeded_engine();
    events.iter().for_each(|e| end.apply(e));
    tests::assert_no_model_disagreement(&end, s.name());
    // Every death the recording saw told its parent by SIGCHLD (do_notify_parent): checked
    // against the model above, and there were some to check.
    let sigchld = end.sigchld_checks();
    assert!(sigchld.agreed > 0, "{s}: no SIGCHLD checked: {sigchld:?}");
    assert_eq!(sigchld.disagreed, 0, "{s}: {sigchld:?}");
    // The only other anomalies allowed: a pid created between the /proc snapshot and the
    // probes' start (a placeholder), and a thread a process of the snapshot (the daemon the
    // recorder attached to: Go starts threads when it likes) created in that gap.
    let at_start = |pid: u32| snapshot.iter().any(|p| p.pid == pid);
    for w in end.warnings() {
        assert!(
            match w.kind {
                WarningKind::UnknownPid { .. } => true,
                WarningKind::UnknownThread { pid, .. } => at_start(pid),
                _ => false,
            },
            "unexpected anomaly: {w}"
        );
    }
    Recorded {
        out,
        snapshot,
        events,
        end,
        _serial: serial,
    }
}

impl Recorded {
    /// The engine after every event up to `boot_ns`.
    fn engine_at(&self, boot_ns: u64) -> Engine {
        let mut e = Engine::new();
        e.seed_snapshot(&self.snapshot);
        self.events
            .iter()
            .take_while(|ev| ev.ts_ns <= boot_ns)
            .for_each(|ev| e.apply(ev));
        e
    }

    /// Both directions, at every moment, for every process of the scenario: see
    /// [`Recorded::disagreements`].
    fn check_moments(&self) {
        assert!(!self.out.truth.moments.is_empty());
        let roots = self.out.truth.roots();
        for m in &self.out.truth.moments {
            let scenario = m.scenario(&roots);
            // (The followed command may be gone by then: `podman run -d` exits at once.)
            assert!(
                !scenario.is_empty(),
                "{}: none of {roots:?} in /proc",
                m.label
            );
            let wrong = self.disagreements(m, &scenario);
            eprintln!(
                "{}: {} processes of the scenario checked both ways",
                m.label,
                scenario.len()
            );
            assert!(
                wrong.is_empty(),
                "{}: {} processes in the scenario, {} wrong:\n  {}",
                m.label,
                scenario.len(),
                wrong.len(),
                wrong.join("\n  ")
            );
        }
    }

    /// Each process /proc shows in the scenario (the followed process, the daemons, the
    /// container monitors and their descendants) is alive in the engine with the same parent,
    /// and each one the engine has alive that the trace saw (not from the start snapshot) is
    /// in /proc with the same parent. /proc was walked between `boot_ns` and `end_ns`: the
    /// engine may agree at either instant (a process born or gone during the walk).
    fn disagreements(&self, m: &Moment, scenario: &[&ProcInfo]) -> Vec<String> {
        let (start, end) = (self.engine_at(m.boot_ns), self.engine_at(m.end_ns));
        let alive = |e: &Engine, pid: u32| e.process(pid).filter(|p| !p.exited).map(|p| p.ppid);
        let mut wrong = Vec::new();
        for t in scenario {
            if alive(&start, t.pid) != Some(t.ppid) && alive(&end, t.pid) != Some(t.ppid) {
                wrong.push(format!(
                    "/proc has {t}; the engine has it {}",
                    described(start.process(t.pid))
                ));
            }
        }
        let traced = start
            .processes()
            .filter(|p| !p.exited && p.born_how() != How::Snapshot);
        for p in traced {
            let in_proc = m.procs.iter().find(|t| t.pid == p.pid && !t.is_zombie());
            let gone_by_end = alive(&end, p.pid).is_none();
            if in_proc.map(|t| t.ppid) != Some(p.ppid) && !gone_by_end {
                wrong.push(format!(
                    "the engine has {} {} alive under {}; /proc has {}",
                    p.name(),
                    p.pid,
                    p.ppid,
                    in_proc.map_or("nothing".to_string(), |t| t.to_string())
                ));
            }
        }
        wrong
    }

    fn story_of(&self, c: &ContainerTruth) -> Story {
        let stories = tracer::lineage::stories(&self.end);
        stories
            .iter()
            .find(|s| s.init_pid == c.init.pid)
            .cloned()
            .unwrap_or_else(|| panic!("no story for {} (init {}): {stories:#?}", c.id, c.init.pid))
    }
}

/// How the engine has a process, for messages.
fn described(p: Option<&Process>) -> String {
    match p {
        None => "not at all".to_string(),
        Some(p) if p.exited => format!("exited (last parent {})", p.ppid),
        Some(p) => format!("under {} (as {})", p.ppid, p.name()),
    }
}

/// The container's init and its monitor (shim, conmon, runc run) as /proc showed them.
fn check_container(r: &Recorded, c: &ContainerTruth, monitor_role: fn(Option<Role>) -> bool) {
    assert_eq!(
        c.init.ppid, c.monitor.pid,
        "/proc: {}'s init {} has its monitor {} as parent",
        c.id, c.init.pid, c.monitor.pid
    );
    let init = r
        .end
        .process(c.init.pid)
        .expect("container init in the trace");
    assert_eq!(
        init.role,
        Some(Role::Container),
        "role of init {}",
        c.init.pid
    );
    assert_eq!(init.name(), c.init.comm);
    // It died where it lived.
    assert_eq!(
        init.ppid, c.init.ppid,
        "engine: parent of init {}",
        c.init.pid
    );
    let mon = r.end.process(c.monitor.pid).expect("monitor in the trace");
    assert!(
        monitor_role(mon.role),
        "role of {}: {:?}",
        c.monitor.pid,
        mon.role
    );
    assert_eq!(
        mon.ppid, c.monitor.ppid,
        "engine: parent of {}",
        c.monitor.pid
    );
}

/// `expected` appear in the story in this order (other steps may come in between), and the
/// steps are in event order.
fn assert_steps_in_order(story: &Story, expected: &[StepKind]) {
    let kinds: Vec<StepKind> = story.steps.iter().map(|s| s.kind).collect();
    let mut pos = 0;
    for k in expected {
        let found = kinds[pos..]
            .iter()
            .position(|x| x == k)
            .unwrap_or_else(|| panic!("step {k:?} missing or out of order in {kinds:?}"));
        pos += found + 1;
    }
    assert!(story.steps.windows(2).all(|w| w[0].seq <= w[1].seq));
}

#[test]
#[ignore = "root"]
fn labs_runc_init_is_born_under_runc_run() {
    let r = record(Scenario::Runc);
    r.check_moments();
    let c = &r.out.truth.containers[0];
    check_container(&r, c, |role| matches!(role, Some(Role::OciRuntime { .. })));
    let story = r.story_of(c);
    assert_eq!(story.kind, StoryKind::Direct);
    assert_eq!(story.runtime_pid, Some(c.monitor.pid));
    assert_steps_in_order(
        &story,
        &[
            StepKind::RuntimeStarted,
            StepKind::InitExec,
            StepKind::ChildCloned,
            StepKind::InitCloned,
            StepKind::WorkloadExec,
        ],
    );
    // CLONE_PARENT made it runc run's child at birth: never adopted.
    let init = r.end.process(c.init.pid).unwrap();
    assert_eq!(init.born_how(), How::CloneParent);
    assert!(init.last_adoption().is_none(), "{:?}", init.lineage);
    assert!(!story.steps.iter().any(|s| s.kind == StepKind::InitAdopted));
}

const SHIM_STEPS: &[StepKind] = &[
    StepKind::ShimStarted,
    StepKind::ShimAdopted,
    StepKind::RuntimeStarted,
    StepKind::InitExec,
    StepKind::ChildCloned,
    StepKind::InitCloned,
    StepKind::RuntimeExited,
    StepKind::InitAdopted,
    StepKind::WorkloadExec,
];

fn is_shim(role: Option<Role>) -> bool {
    role == Some(Role::Shim)
}

#[test]
#[ignore = "root"]
fn labs_containerd_two_shims_adopted_and_adopting() {
    let r = record(Scenario::Containerd);
    r.check_moments();
    let cs = &r.out.truth.containers;
    assert_eq!(cs.len(), 2);
    assert_ne!(cs[0].monitor.pid, cs[1].monitor.pid, "two shims");
    for c in cs {
        check_container(&r, c, is_shim);
        let shim = r.end.process(c.monitor.pid).unwrap();
        assert!(
            shim.is_subreaper,
            "shim {} set PR_SET_CHILD_SUBREAPER",
            shim.pid
        );
        assert_eq!(shim.container_id.as_deref(), Some(c.id.as_str()));
        assert!(shim.last_adoption().is_some(), "the shim was adopted");
        let story = r.story_of(c);
        assert_eq!(story.kind, StoryKind::Containerd);
        assert_eq!(story.shim_pid, Some(c.monitor.pid));
        assert_steps_in_order(&story, SHIM_STEPS);
        assert_steps_in_order(&story, &[StepKind::ShimSubreaper, StepKind::InitAdopted]);
    }
    // `tracer tree --traced`: the containers' machinery, not the rest of the host.
    let text = tracer::lineage::traced_tree_text(&r.end, Default::default());
    assert!(text.contains("[shim] {cid:lab-a}") && text.contains("[shim] {cid:lab-b}"));
    assert!(!text.contains("kthreadd"), "{text}");
}

#[test]
#[ignore = "root"]
fn labs_restart_container_and_exec_survive_under_the_shim() {
    let r = record(Scenario::Restart);
    r.check_moments();
    let t = &r.out.truth;
    let (d1, d2) = (&t.daemons[0], &t.daemons[1]);
    assert_ne!(d1.pid, d2.pid, "the daemon's pid changed");
    let (before, after) = (&t.containers[0], &t.after_restart[0]);
    assert_eq!(
        (
            before.init.pid,
            before.init.ppid,
            before.monitor.pid,
            before.monitor.ppid
        ),
        (
            after.init.pid,
            after.init.ppid,
            after.monitor.pid,
            after.monitor.ppid
        ),
        "/proc: pids and parents unchanged across the restart"
    );
    assert_eq!(t.exec[0], t.exec[1], "/proc: the exec'd process unchanged");
    assert_eq!(
        t.exec[0].ppid, before.monitor.pid,
        "/proc: exec'd process under the shim"
    );
    check_container(&r, before, is_shim);

    let e = &r.end;
    let old = e.process(d1.pid).expect("first containerd");
    let new = e.process(d2.pid).expect("second containerd");
    let died = old.exit_seq.expect("the first containerd exited");
    assert!(
        new.start_seq > died,
        "the second containerd started after the first died"
    );
    assert_eq!(new.ppid, old.ppid, "both started by the same supervisor");
    assert_eq!(old.role, Some(Role::RuntimeDaemon));
    assert_eq!(new.role, Some(Role::RuntimeDaemon));
    // `tracer story`'s answer to the experiment: both daemons, and the container's init and
    // shim (pids and parents from /proc above) among the survivors.
    let rs = tracer::lineage::restart::runtime_restarts(e);
    let r0 = rs
        .iter()
        .find(|x| x.old_pid == d1.pid)
        .expect("the restart found");
    assert_eq!(r0.new_pid, d2.pid);
    for (pid, parent) in [
        (before.init.pid, before.init.ppid),
        (before.monitor.pid, before.monitor.ppid),
    ] {
        let s = r0.survivors.iter().find(|s| s.pid == pid);
        assert_eq!(s.map(|s| s.parent), Some(parent), "{pid} survived: {r0:?}");
    }
    check_restart_story(e, (d1.pid, d2.pid), &[&before.init, &before.monitor]);

    let shim = e.process(before.monitor.pid).unwrap();
    assert!(
        shim.lineage.iter().all(|l| l.seq < died),
        "no change of the shim's parent after the restart: {:?}",
        shim.lineage
    );
    let exec = e
        .process(t.exec[0].pid)
        .expect("exec'd process in the trace");
    assert_eq!(exec.ppid, shim.pid);
    assert!(exec.start_seq < died, "exec'd before the restart");
    assert!(
        exec.exit_seq.is_some_and(|x| x > new.start_seq),
        "still alive after the restart"
    );
    let story = r.story_of(before);
    assert_steps_in_order(&story, SHIM_STEPS);
}

/// The restart as a story of the one list: the old daemon's end first, a survivor step for
/// each of `procs` (pids and parents from /proc) saying it lives on under that same parent, the
/// new daemon's start, and none of them the new daemon's child.
fn check_restart_story(e: &Engine, (old, new): (u32, u32), procs: &[&ProcInfo]) {
    let all = tracer::lineage::stories(e);
    let st = all
        .iter()
        .find(|s| s.phase == Phase::RuntimeRestart && s.previous_init == Some(old))
        .unwrap_or_else(|| panic!("no restart story of {old}: {all:#?}"));
    assert_eq!(
        (st.steps[0].kind, st.steps[0].pid),
        (StepKind::DaemonEnded, old)
    );
    for p in procs {
        let step = st
            .steps
            .iter()
            .find(|s| s.kind == StepKind::Survived && s.pid == p.pid)
            .unwrap_or_else(|| panic!("{} not told as a survivor: {st:#?}", p.pid));
        let want = format!("lives on: parent {} ", p.ppid);
        assert!(
            step.text.contains(&want),
            "/proc's parent {}: {}",
            p.ppid,
            step.text
        );
        assert_ne!(p.ppid, new, "/proc: not the new daemon's child");
    }
    let started = st.steps.iter().find(|s| s.kind == StepKind::DaemonStarted);
    assert_eq!(started.map(|s| s.pid), Some(new), "{st:#?}");
}

#[test]
#[ignore = "root"]
fn labs_podman_conmon_is_the_parent() {
    let r = record(Scenario::Podman);
    r.check_moments();
    let c = &r.out.truth.containers[0];
    check_container(&r, c, is_shim);
    let conmon = r.end.process(c.monitor.pid).unwrap();
    assert!(conmon.name().starts_with("conmon"), "{}", conmon.name());
    assert!(
        conmon.subreaper_seq().is_some(),
        "conmon set PR_SET_CHILD_SUBREAPER"
    );
    let story = r.story_of(c);
    assert_eq!(story.kind, StoryKind::Conmon);
    assert_eq!(story.shim_pid, Some(c.monitor.pid));
    assert_steps_in_order(&story, SHIM_STEPS);
}

/// The pod lab: each pod has one shim, adopted (by init or the nearest subreaper), whose
/// CLONE_PARENT-born children are exactly the pod's sandbox and containers; CNI plugins run
/// under containerd and exit 0; one `runc create` story per container, with its own id.
#[test]
#[ignore = "root"]
fn labs_pod_one_shim_per_pod_sandbox_containers_and_cni() {
    let r = record(Scenario::Pod);
    let t = &r.out.truth;
    assert_eq!(t.pods.len(), 2);
    assert_eq!(t.pods[0].containers.len(), 3, "sandbox + two containers");
    r.check_moments();
    let stories = tracer::lineage::stories(&r.end);
    for pod in &t.pods {
        check_pod(&r, pod);
    }
    // The shared-pid pod's orphan: /proc gives it to pause, the namespace's init.
    let shared = t.pods.iter().find(|p| p.shared_pid).expect("shared pod");
    let pause = shared.containers[0].init.pid;
    let inits: Vec<u32> = shared.containers.iter().map(|c| c.init.pid).collect();
    assert!(
        shared
            .procs
            .iter()
            .any(|p| p.ppid == pause && !inits.contains(&p.pid)),
        "/proc: an orphan adopted by pause in {:?}",
        shared.procs
    );
    // CNI plugins: run by containerd (IPAM by the plugin that needed it), at least one exited 0.
    let daemon = t.daemons[0].pid;
    let cni: Vec<_> = r
        .end
        .processes()
        .filter(|p| p.role == Some(Role::CniPlugin))
        .collect();
    assert!(!cni.is_empty(), "no cni-plugin in the trace");
    for p in &cni {
        let parent = r.end.process(p.lineage[0].parent);
        assert!(
            p.lineage[0].parent == daemon
                || parent.is_some_and(|x| x.role == Some(Role::CniPlugin)),
            "cni plugin {} {} born to {}",
            p.name(),
            p.pid,
            p.lineage[0].parent
        );
    }
    assert!(cni
        .iter()
        .any(|p| p.exit_status == Some(tracer::ExitStatus::Exited { code: 0 })));
    // One `runc create` story per container, each with its own id.
    let created: Vec<&Story> = stories
        .iter()
        .filter(|s| s.runtime.as_deref() == Some("runc create"))
        .collect();
    let all: usize = t.pods.iter().map(|p| p.containers.len()).sum();
    assert_eq!(created.len(), all, "{stories:#?}");
    let mut ids: Vec<&str> = created
        .iter()
        .filter_map(|s| s.container_id.as_deref())
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), all);
}

fn check_pod(r: &Recorded, pod: &tests::labs::PodTruth) {
    let shim = r.end.process(pod.shim.pid).expect("the pod's shim");
    assert_eq!(shim.role, Some(Role::Shim));
    assert_eq!(shim.ppid, pod.shim.ppid, "engine: the shim's parent");
    assert!(shim.last_adoption().is_some(), "the shim was adopted");
    assert_eq!(shim.container_id.as_deref(), Some(pod.sandbox_id.as_str()));
    // /proc: every container's init is the shim's child.
    let mut want: Vec<u32> = pod.containers.iter().map(|c| c.init.pid).collect();
    for c in &pod.containers {
        assert_eq!(c.init.ppid, pod.shim.pid, "/proc: parent of {}", c.id);
    }
    // While the pods ran (an ExecSync'd process, also born by CLONE_PARENT, may end up
    // under the shim too, but it was gone by then).
    let at = r.engine_at(r.out.truth.moments[0].boot_ns);
    let live_shim = at
        .process(pod.shim.pid)
        .expect("the shim while the pod ran");
    let mut got: Vec<u32> = at
        .children_of(live_shim)
        .into_iter()
        .filter(|c| !c.exited && c.born_how() == How::CloneParent)
        .map(|c| c.pid)
        .collect();
    want.sort();
    got.sort();
    assert_eq!(
        got, want,
        "{}: the shim's CLONE_PARENT-born children",
        pod.name
    );
    for (i, c) in pod.containers.iter().enumerate() {
        let p = r.end.process(c.init.pid).expect("container init");
        let role = if i == 0 {
            Role::Sandbox
        } else {
            Role::Container
        };
        assert_eq!(p.role, Some(role), "{} {}", p.name(), p.pid);
        let story = r.story_of(c);
        assert_eq!(story.container_id.as_deref(), Some(c.id.as_str()));
        assert_eq!(story.runtime.as_deref(), Some("runc create"));
        assert_eq!(story.sandbox_id.as_deref(), Some(pod.sandbox_id.as_str()));
        // Named from the bundles' annotations: the pod, and each app container.
        assert_eq!(story.pod.as_deref(), Some(pod.name.as_str()));
        assert_eq!(story.container_name, c.name);
        assert_eq!(story.shim_pid, Some(pod.shim.pid));
        if i == 0 {
            assert!(story.sandbox);
            assert_steps_in_order(&story, SHIM_STEPS);
            assert!(story.steps.iter().any(|s| s.kind == StepKind::CniPlugin));
        } else {
            assert_steps_in_order(
                &story,
                &[
                    StepKind::ShimReused,
                    StepKind::RuntimeStarted,
                    StepKind::InitCloned,
                    StepKind::InitAdopted,
                ],
            );
            assert!(!story.steps.iter().any(|s| s.kind == StepKind::ShimStarted));
        }
    }
}

/// `--lifecycle`: every death the runtime reports (ContainerStatus exit code and reason) is
/// told with the same how, signal and sender; the execs are execs, never births; the crashed
/// container's second life is a restart linked to the first; the pod's removal is told.
#[test]
#[ignore = "root"]
fn labs_pod_lifecycle_deaths_execs_and_a_restart() {
    let r = record_with(Scenario::Pod, |lab| lab.lifecycle = true);
    let t = r
        .out
        .truth
        .lifecycle
        .as_ref()
        .expect("the lifecycle pod ran");
    assert_deaths_as_the_runtime_says(&r, t);
    let stories = tracer::lineage::stories(&r.end);
    // Stories: the lifecycle pod's births are its sandbox and its five containers (the
    // crasher twice); the ExecSync and the detached exec are execs.
    let pod: Vec<&Story> = stories
        .iter()
        .filter(|s| s.pod.as_deref() == Some(t.pod.as_str()))
        .collect();
    let count = |ph: Phase| pod.iter().filter(|s| s.phase == ph).count();
    assert_eq!(count(Phase::Birth), 5, "{pod:#?}");
    assert_eq!(count(Phase::Restart), 1, "{pod:#?}");
    assert_eq!(count(Phase::Exec), 2, "{pod:#?}");
    let restart = pod.iter().find(|s| s.phase == Phase::Restart).unwrap();
    assert_eq!(
        (restart.attempt, restart.previous_init, restart.init_pid),
        (Some(1), Some(t.crashed.init), t.restarted.init)
    );
    assert_exec_stories(&r, t, &pod);
    // Every container's death is told, the sandbox's with the pod's removal.
    assert_eq!(count(Phase::Death), 6, "{pod:#?}");
    assert_death_stories(t, &pod);
}

/// A lifecycle container's end as its ContainerStatus says it: exit code and reason.
fn runtime_end(l: &tests::labs::lifecycle::Life) -> (i32, String) {
    let e = l.end.as_ref().expect("its ContainerStatus");
    (e.exit_code, e.reason.clone())
}

/// The lifecycle pod's deaths in the recording: how, signal, sender, OOM cgroup and limit,
/// each against what the runtime and /proc said.
fn assert_deaths_as_the_runtime_says(r: &Recorded, t: &LifecycleTruth) {
    let death_of = |pid: u32| {
        r.end
            .process(pid)
            .and_then(|p| p.death())
            .unwrap_or_else(|| panic!("no death for {pid}"))
    };
    let end = runtime_end;
    // The crash: exit 3 in the runtime's words and in the recording's.
    assert_eq!(end(&t.crashed), (3, "Error".to_string()));
    let d = death_of(t.crashed.init);
    assert_eq!(
        (d.how, d.status),
        (DeathHow::Exit, Some(ExitStatus::Exited { code: 3 }))
    );
    // The OOM kill: OOMKilled, in the container's memory cgroup, with its limit.
    assert_eq!(end(&t.hog), (137, "OOMKilled".to_string()));
    assert_eq!(t.oom_kills, 1, "/proc/vmstat oom_kill");
    let d = death_of(t.hog.init);
    assert_eq!(d.how, DeathHow::Oom, "{d}");
    let oom = d.oom.as_ref().unwrap();
    let cg = oom.cgroup.as_deref().unwrap_or_default();
    assert!(
        cg.ends_with(&t.hog.id) && t.hog_cgroup.ends_with(&t.hog.id),
        "{cg} / {}",
        t.hog_cgroup
    );
    // The capture reads the limit from the victim's /proc/TID/cgroup as the record arrives;
    // once the victim is exiting, v1 shows "/" there (proc_cgroup_show), and the limit is not
    // read: the cgroup then comes from the model. When read, it is the container's.
    assert!(
        oom.limit
            .is_none_or(|l| l == tests::labs::lifecycle::HOG_LIMIT as u64),
        "{d}"
    );
    // The stop: SIGTERM ignored by a pid 1 without a handler, SIGKILL after the grace period,
    // sent by the shim's `runc kill`.
    assert_eq!(end(&t.stopper).0, 137);
    let secs = tests::labs::lifecycle::GRACE_SECS as f64;
    assert!(t.stop_took.as_secs_f64() >= secs, "{:?}", t.stop_took);
    let d = death_of(t.stopper.init);
    assert_eq!((d.how, d.signal()), (DeathHow::Signal, Some(9)), "{d}");
    let by = d.sender().expect("SIGKILL's sender");
    let sender = r.end.process(by.sender).expect("the sender");
    assert_eq!(sender.name(), "runc", "{d}");
    assert_eq!(sender.ppid, t.shim.pid, "runc kill run by the shim: {d}");
    let stopper = r.end.process(t.stopper.init).unwrap();
    assert!(
        stopper
            .signals()
            .iter()
            .any(|s| s.signal == 15 && s.result == tracer::event::SignalResult::Ignored),
        "SIGTERM ignored: {:?}",
        stopper.signals()
    );
    // The pod's removal: app and the restarted crasher killed by SIGKILL; the detached
    // exec killed with app's pid namespace.
    for l in [&t.app, &t.restarted] {
        assert_eq!(end(l).0, 137, "{}", l.name);
        let d = death_of(l.init);
        assert_eq!(
            (d.how, d.signal()),
            (DeathHow::Signal, Some(9)),
            "{}: {d}",
            l.name
        );
    }
    let d = death_of(t.detached.pid);
    assert_eq!(
        (d.how, d.ns_init),
        (DeathHow::PidNs, Some(t.app.init)),
        "{d}"
    );
}

/// The ExecSync's and the detached exec's stories: execs, the detached one adopted, the
/// ExecSync's adoption as the kernel's SIGCHLD for it says.
fn assert_exec_stories(r: &Recorded, t: &LifecycleTruth, pod: &[&Story]) {
    let detached = pod
        .iter()
        .find(|s| s.phase == Phase::Exec && s.init_pid == t.detached.pid)
        .expect("the detached exec's story");
    assert!(detached
        .steps
        .iter()
        .any(|s| s.kind == StepKind::ExecAdopted));
    let sync = pod
        .iter()
        .find(|s| s.phase == Phase::Exec && s.init_pid != t.detached.pid)
        .expect("the ExecSync's story");
    assert!(sync.steps.iter().any(|s| s.kind == StepKind::ExecEnded));
    // The shim runs `runc exec --detach` and waits itself: whether `cat` outlives `runc exec`
    // is a race. The kernel's SIGCHLD for cat names its parent of record at its death: the
    // shim when cat was orphaned, runc when not. The story says the same.
    let cat = r
        .end
        .process(sync.init_pid)
        .expect("the ExecSync's process");
    let notified = cat
        .signals()
        .iter()
        .find(|s| s.signal == 17 && s.sender == cat.pid)
        .map(|s| s.target)
        .expect("cat's SIGCHLD");
    let adopted = sync.steps.iter().any(|s| s.kind == StepKind::ExecAdopted);
    assert_eq!(adopted, notified == t.shim.pid, "{sync:#?}");
    assert_eq!(!adopted, Some(notified) == sync.runtime_pid, "{sync:#?}");
}

/// The sandbox's death with the pod's removal, the stop's grace period, and each death
/// story's kubelet words as the runtime's ContainerStatus says them.
fn assert_death_stories(t: &LifecycleTruth, pod: &[&Story]) {
    let end = runtime_end;
    let sandbox_death = pod
        .iter()
        .find(|s| s.phase == Phase::Death && s.sandbox)
        .expect("the sandbox's death");
    assert_steps_in_order(
        sandbox_death,
        &[
            StepKind::InitDied,
            StepKind::ShimExited,
            StepKind::ShimReaped,
            StepKind::CniTeardown,
        ],
    );
    let stop = pod
        .iter()
        .find(|s| s.phase == Phase::Death && s.init_pid == t.stopper.init)
        .expect("the stopper's death");
    assert_steps_in_order(
        stop,
        &[
            StepKind::SignalSent,
            StepKind::SignalSent,
            StepKind::InitDied,
            StepKind::InitReaped,
        ],
    );
    assert!(
        stop.steps.iter().any(|s| s.text.contains("grace period")),
        "{stop:#?}"
    );
    // Each death story's kubelet words are what the runtime's ContainerStatus says.
    for l in [&t.crashed, &t.hog, &t.stopper, &t.app, &t.restarted] {
        let told = pod
            .iter()
            .find(|s| s.phase == Phase::Death && s.init_pid == l.init)
            .and_then(|s| s.terminated.as_ref())
            .unwrap_or_else(|| panic!("{}: no terminated", l.name));
        let said = (told.exit_code, told.reason.as_str().to_string());
        assert_eq!(said, end(l), "{}: {told:?}", l.name);
    }
}
