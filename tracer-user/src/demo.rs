//! The bundled demos: real recordings of `cargo xtask lab pod` (two CRI pods: sandboxes, CNI
//! plugins, containers under one shim per pod), `cargo xtask lab containerd` (two `ctr run`
//! containers, two shims) and `cargo xtask lab restart` (containerd restarted while its
//! container survives under its shim); see tests/fixtures/demo/README.md. Embedded in the binary so
//! `tracer demo` needs no root, no BPF and no LLVM.

use crate::input::{Input, InputError};

/// Which bundled recording.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Demo {
    /// `cargo xtask lab pod` (the default).
    #[default]
    Pod,
    /// `cargo xtask lab containerd`.
    Containerd,
    /// `cargo xtask lab pod --lifecycle`: execs, a crash and its restart, an OOM kill, a stop
    /// with a grace period, pods removed.
    Lifecycle,
    /// `cargo xtask lab restart`: containerd restarted by its supervisor while a container and
    /// an exec'd process live on under their shim.
    Restart,
}

/// How a command names a bundled demo where it takes a FILE: `demo:NAME` (`./demo:pod` is a
/// file of that name).
pub const FILE_PREFIX: &str = "demo:";

/// A `demo:NAME` that names no bundled demo.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("no bundled demo {} (demos: {})", crate::escape::escape(.0), Demo::names())]
pub struct UnknownDemo(pub String);

impl Demo {
    /// Every bundled demo, the default first.
    pub const ALL: &'static [Demo] = &[Demo::Pod, Demo::Containerd, Demo::Lifecycle, Demo::Restart];

    /// Its short name: `tracer demo NAME`, `demo:NAME`.
    pub fn key(self) -> &'static str {
        match self {
            Demo::Pod => "pod",
            Demo::Containerd => "containerd",
            Demo::Lifecycle => "lifecycle",
            Demo::Restart => "restart",
        }
    }

    /// One line on what it recorded (help text).
    pub fn about(self) -> &'static str {
        match self {
            Demo::Pod => "`cargo xtask lab pod`: two CRI pods (sandbox, CNI plugins, containers under one shim)",
            Demo::Containerd => "`cargo xtask lab containerd`: two `ctr run` containers, two shims",
            Demo::Lifecycle => "`cargo xtask lab pod --lifecycle`: the rest of a container's life (execs, a crash and its restart, an OOM kill, a stop with a grace period, the pods removed)",
            Demo::Restart => "`cargo xtask lab restart`: containerd restarted by its supervisor while its container and an exec'd process live on under their shim",
        }
    }

    /// The demo of short name `name`.
    pub fn from_name(name: &str) -> Result<Demo, UnknownDemo> {
        Demo::ALL
            .iter()
            .copied()
            .find(|d| d.key() == name)
            .ok_or_else(|| UnknownDemo(name.to_string()))
    }

    /// The demo a FILE argument names (`demo:NAME`); `None` when it is not of that form.
    pub fn from_path(path: &std::path::Path) -> Option<Result<Demo, UnknownDemo>> {
        let name = path.to_str()?.strip_prefix(FILE_PREFIX)?;
        Some(Demo::from_name(name))
    }

    /// `pod, containerd, ...`: the short names.
    pub fn names() -> String {
        let keys: Vec<&str> = Demo::ALL.iter().map(|d| d.key()).collect();
        keys.join(", ")
    }

    /// The trace file's bytes.
    pub fn bytes(self) -> &'static [u8] {
        match self {
            Demo::Pod => include_bytes!("../../tests/fixtures/demo/pod.trace"),
            Demo::Containerd => include_bytes!("../../tests/fixtures/demo/containerd.trace"),
            Demo::Lifecycle => include_bytes!("../../tests/fixtures/demo/lifecycle.trace"),
            Demo::Restart => include_bytes!("../../tests/fixtures/demo/restart.trace"),
        }
    }

    /// Name the demo goes by in messages.
    pub fn name(self) -> &'static str {
        match self {
            Demo::Pod => "demo:pod.trace",
            Demo::Containerd => "demo:containerd.trace",
            Demo::Lifecycle => "demo:lifecycle.trace",
            Demo::Restart => "demo:restart.trace",
        }
    }

    /// Title for the viewer.
    pub fn title(self) -> &'static str {
        match self {
            Demo::Pod => "demo: pod lab (CRI)",
            Demo::Containerd => "demo: containerd lab",
            Demo::Lifecycle => "demo: pod lifecycle lab (CRI)",
            Demo::Restart => "demo: containerd restart lab",
        }
    }

    /// The demo, opened like any trace file.
    pub fn open(self) -> Result<Input, InputError> {
        Input::from_trace_bytes(self.name(), self.bytes())
    }
}

/// The default demo trace file's bytes.
pub fn demo_trace() -> &'static [u8] {
    Demo::default().bytes()
}

/// The default demo, opened like any trace file.
pub fn open() -> Result<Input, InputError> {
    Demo::default().open()
}

/// The bundled pod demo read through the engine: what `--pod` picks out of it.
#[cfg(test)]
mod tests {
    use crate::event::Event;
    use crate::lineage::pod::has_pod;
    use crate::lineage::{story_in_pod, Engine, PodEvents};

    type Births = Vec<(Option<String>, Vec<(u64, u32)>)>;

    /// Each birth of pod `name`: its container and its steps (seq, pid).
    fn births(e: &Engine, name: &str) -> Births {
        crate::lineage::stories(e)
            .iter()
            .filter(|s| s.phase.is_birth() && story_in_pod(s, name))
            .map(|s| {
                let steps = s.steps.iter().map(|st| (st.seq, st.pid)).collect();
                (s.container_id.clone(), steps)
            })
            .collect()
    }

    /// Each demo's tree starts at PID 1 with the runtime (or, in the restart demo, its
    /// supervisor) right under it: nothing of the machine that recorded it in between.
    #[test]
    fn every_demo_tree_starts_at_pid_1_then_the_runtime() {
        use super::Demo;
        for &demo in Demo::ALL {
            let mut input = demo.open().unwrap();
            let mut e = input.seeded_engine();
            for ev in input.by_ref() {
                e.apply(&ev.unwrap());
            }
            let text = crate::lineage::traced_tree_text(&e, Default::default());
            let lines: Vec<&str> = text.lines().collect();
            assert!(lines[0].starts_with("1 "), "{demo:?}:\n{text}");
            let runtime = lines
                .iter()
                .position(|l| l.contains(" containerd [runtime-daemon]"));
            let depth = match demo {
                Demo::Restart => 2,
                _ => 1,
            };
            assert_eq!(runtime, Some(depth), "{demo:?}:\n{text}");
            // Each level of the tree indents by three columns: line N is PID 1's
            // (grand)child, not a later sibling's.
            for (n, line) in lines.iter().enumerate().take(depth + 1).skip(1) {
                let indent = line.chars().take_while(|c| !c.is_ascii_digit()).count();
                assert_eq!(indent, 3 * n, "{demo:?}:\n{text}");
            }
        }
    }

    /// The restart demo's engine, read like any recording.
    fn restart_engine() -> Engine {
        let input = super::Demo::Restart.open().unwrap();
        crate::input::Loaded::from_input(input, None)
            .unwrap()
            .engine
    }

    /// The restart demo tells containerd's restart as a story of the list, in order by its
    /// first step, and its JSON carries the survivors, the pids, the seqs and the times.
    #[test]
    fn the_restart_demo_tells_the_restart_as_a_story() {
        use crate::lineage::{Phase, StepKind};
        let e = restart_engine();
        let all = crate::lineage::stories(&e);
        let first = |s: &crate::lineage::Story| s.steps.first().map_or(u64::MAX, |x| x.seq);
        assert!(all.windows(2).all(|w| first(&w[0]) <= first(&w[1])));
        let st = all
            .iter()
            .find(|s| s.phase == Phase::RuntimeRestart)
            .expect("the restart's story");
        let r = st.runtime_restart.as_deref().unwrap();
        assert_eq!((r.old_pid, r.new_pid), (2058, 2173));
        let parents: Vec<(u32, u32)> = r.survivors.iter().map(|s| (s.pid, s.parent)).collect();
        assert_eq!(parents, vec![(2092, 1), (2117, 2092), (2154, 2092)]);
        let sig = r.signal.as_ref().unwrap();
        assert_eq!((sig.signal.as_str(), sig.sender), ("SIGTERM", 2046));
        let kinds: Vec<StepKind> = st.steps.iter().map(|s| s.kind).collect();
        assert_eq!(kinds.first(), Some(&StepKind::DaemonEnded));
        assert_eq!(
            kinds.iter().filter(|k| **k == StepKind::Survived).count(),
            3
        );
        assert!(kinds.contains(&StepKind::DaemonStarted));
        let json = crate::lineage::story_json(std::slice::from_ref(st));
        let j = &json["stories"][0];
        assert_eq!(j["phase"], "runtime_restart");
        let jr = &j["runtime_restart"];
        assert_eq!(
            (jr["old_pid"].as_u64(), jr["new_pid"].as_u64()),
            (Some(2058), Some(2173))
        );
        assert_eq!(jr["exit_seq"].as_u64(), Some(r.exit_seq));
        assert_eq!(jr["seq"].as_u64(), Some(r.seq));
        assert_eq!(jr["survivors"][0]["parent"].as_u64(), Some(1));
        assert_eq!(jr["survivors"][0]["role"], "shim");
        assert_eq!(jr["lost"].as_array().map(Vec::len), Some(0));
        for t in [&jr["exit_time"], &jr["time"], &j["steps"][0]["time"]] {
            assert!(
                t.as_str().is_some_and(|t| t.starts_with("2026-12-02T")),
                "{t}"
            );
        }
        assert_eq!(j["steps"][0]["kind"], "daemon_ended");
        assert_eq!(j["steps"][0]["seq"].as_u64(), Some(r.exit_seq));
    }

    #[test]
    fn every_demo_is_found_by_its_name_and_only_by_it() {
        for d in crate::demo::Demo::ALL {
            assert_eq!(crate::demo::Demo::from_name(d.key()), Ok(*d));
            let path = format!("demo:{}", d.key());
            assert_eq!(crate::demo::Demo::from_path(path.as_ref()), Some(Ok(*d)));
            assert!(d.open().is_ok(), "{}", d.key());
        }
        let e = crate::demo::Demo::from_name("x\x1b")
            .unwrap_err()
            .to_string();
        let names = crate::demo::Demo::names();
        assert_eq!(e, format!("no bundled demo x\\33 (demos: {names})"));
        assert_eq!(crate::demo::Demo::from_path("./demo:pod".as_ref()), None);
    }

    #[test]
    fn a_pod_is_resolved_by_name_sandbox_prefix_and_container() {
        use crate::lineage::{resolve_pod, PodError, PodQuery};
        let e = crate::input::Loaded::from_input(crate::demo::open().unwrap(), None)
            .unwrap()
            .engine;
        let q = |pod: &str, ns: Option<&str>, c: Option<&str>| PodQuery {
            pod: pod.into(),
            namespace: ns.map(Into::into),
            container: c.map(Into::into),
        };
        let web = resolve_pod(&e, &q("web", None, None)).unwrap();
        assert_eq!(web.text(), "tracer-lab/web");
        assert_eq!(
            resolve_pod(&e, &q("tracer-lab/web", None, None)),
            Ok(web.clone())
        );
        assert_eq!(
            resolve_pod(&e, &q("web", Some("tracer-lab"), None)),
            Ok(web.clone())
        );
        assert!(matches!(
            resolve_pod(&e, &q("web", Some("other"), None)),
            Err(PodError::NotFound { .. })
        ));
        assert!(matches!(
            resolve_pod(&e, &q("nosuch", None, None)),
            Err(PodError::NotFound { ref known, .. }) if known.len() == 2
        ));
        assert!(matches!(
            resolve_pod(&e, &q("web", None, Some("nosuch"))),
            Err(PodError::NoContainer { .. })
        ));
    }

    #[test]
    fn a_pods_events_tell_its_births_and_nothing_of_the_other_pod() {
        let mut input = crate::demo::open().unwrap();
        let seed = input.snapshot();
        let events: Vec<Event> = input.by_ref().collect::<Result<_, _>>().unwrap();
        let mut full = Engine::new();
        full.seed_snapshot(&seed);
        events.iter().for_each(|ev| full.apply(ev));
        assert_eq!(
            births(&full, "web").len(),
            3,
            "the fixture's pod: sandbox, master, sidecar"
        );
        assert!(
            !births(&full, "shared").is_empty(),
            "the fixture's other pod"
        );

        let web = PodEvents::new(&full, "tracer-lab/web");
        let kept: Vec<&Event> = events.iter().filter(|ev| web.contains(ev)).collect();
        assert!(!kept.is_empty() && kept.len() < events.len());
        let mut only = Engine::new();
        only.seed_snapshot(&seed);
        kept.iter().for_each(|ev| only.apply(ev));
        // The pod's births read the same from its events alone; the other pod is not there.
        assert_eq!(births(&only, "web"), births(&full, "web"));
        assert!(births(&only, "shared").is_empty());
        // Every chosen process was born the same way, to the same parent.
        let born = |e: &Engine, pid: u32, from: u64| {
            let p = e.processes().find(|p| p.pid == pid && p.start_seq == from);
            p.map(|p| (p.born_how(), p.lineage.first().map(|l| (l.parent, l.seq))))
        };
        for (pid, from, _) in web.lifetimes() {
            assert_eq!(born(&only, pid, from), born(&full, pid, from), "pid {pid}");
        }
        assert!(!has_pod(&only, "shared"));
        assert!(PodEvents::new(&full, "nope").is_empty());
    }
}

/// Every explanation of every bundled story checked against its story's facts
/// (`lineage::explain::check`), and each variant the lifecycle demo holds told as it was.
#[cfg(test)]
mod explained {
    use crate::lineage::explain::check::{check, failures, whys};
    use crate::lineage::explain::why;
    use crate::lineage::kubelet::Cause;
    use crate::lineage::{stories, Phase, StepKind, Story};

    /// The stories of `all` whose end's cause `f` keeps.
    fn ended_by(all: &[Story], f: fn(&Cause) -> bool) -> impl Iterator<Item = &Story> {
        all.iter()
            .filter(move |s| s.terminated.as_ref().is_some_and(|t| f(&t.cause)))
    }

    fn demo_stories(demo: crate::demo::Demo) -> Vec<Story> {
        let mut input = demo.open().unwrap();
        let mut e = input.seeded_engine();
        for ev in input.by_ref() {
            e.apply(&ev.unwrap());
        }
        stories(&e)
    }

    /// The demos were recorded on a VM whose PID 1 is `process_api`, no init system: a shim
    /// adopted by it is told what it is; an adoption by a shim (a subreaper) is not.
    #[test]
    fn an_adoption_by_a_pid_1_that_is_no_init_system_names_it() {
        let all = demo_stories(crate::demo::Demo::Pod);
        let steps = || all.iter().flat_map(|s| &s.steps);
        let by_one = steps()
            .filter(|s| s.kind == StepKind::ShimAdopted)
            .collect::<Vec<_>>();
        assert!(!by_one.is_empty());
        for s in by_one {
            assert!(
                s.text
                    .contains("adopted by 1 (process_api, the recording machine's init; parent "),
                "{}",
                s.text
            );
        }
        let by_shim = steps().find(|s| s.kind == StepKind::InitAdopted).unwrap();
        assert!(!by_shim.text.contains("machine's init"), "{}", by_shim.text);
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

    #[test]
    fn the_lifecycle_demo_tells_each_stop_exec_and_delete_as_it_was() {
        let all = demo_stories(crate::demo::Demo::Lifecycle);
        // The stopper: SIGTERM, then SIGKILL 2 s later, timed by containerd's CRI plugin.
        let stop = ended_by(&all, |c| matches!(c, Cause::StopContainer { .. }))
            .next()
            .expect("a StopContainer");
        let signals: Vec<String> = stop
            .steps
            .iter()
            .filter(|x| x.kind == StepKind::SignalSent)
            .map(|x| why(stop, x).text)
            .collect();
        assert_eq!(signals.len(), 2);
        assert!(
            signals[0].contains("CRI plugin")
                && signals[0].contains("CRI plugin, not the shim, times the grace period"),
            "{}",
            signals[0]
        );
        assert!(
            signals[1].contains("grace period") && signals[1].contains("ran out"),
            "{}",
            signals[1]
        );
        // A kill at once (StopPodSandbox): no SIGTERM, no grace period told.
        let at_once = ended_by(&all, |c| matches!(c, Cause::KilledAtOnce { .. }))
            .flat_map(|s| {
                s.steps
                    .iter()
                    .filter(|x| x.kind == StepKind::SignalSent)
                    .map(move |x| why(s, x).text)
            })
            .collect::<Vec<_>>();
        assert!(!at_once.is_empty());
        for t in &at_once {
            assert!(
                t.contains("at once") && !t.contains("terminationGracePeriodSeconds"),
                "{t}"
            );
        }
        // An exec: the final process joins the cgroup; no `runc start`.
        let cg = whys(&all, Phase::Exec, StepKind::InitCgroup);
        assert!(
            !cg.is_empty() && cg.iter().all(|t| t.contains("final process")),
            "{cg:?}"
        );
        // The exec'd sleep killed with its namespace: not "the container goes on".
        let ends = whys(&all, Phase::Exec, StepKind::ExecEnded);
        assert!(
            ends.iter().any(|t| t.contains("zap_pid_ns_processes")),
            "{ends:?}"
        );
        assert!(ends.iter().any(|t| t.contains("goes on")), "{ends:?}");
        // Each container's two deletes: the shim's, then the shim binary's cleanup.
        let deletes = whys(&all, Phase::Death, StepKind::RuntimeDelete);
        assert!(
            deletes.iter().any(|t| t.contains("task Delete")),
            "{deletes:?}"
        );
        assert!(
            deletes.iter().any(|t| t.contains("`runc delete --force`")),
            "{deletes:?}"
        );
    }

    #[test]
    fn the_cni_order_is_the_recordings() {
        let all = demo_stories(crate::demo::Demo::Lifecycle);
        let w = whys(&all, Phase::Birth, StepKind::CniPlugin);
        assert!(!w.is_empty());
        for t in &w {
            assert!(
                t.contains(
                    "loopback, then bridge (which ran host-local as its IPAM plugin, its own child)"
                ),
                "{t}"
            );
        }
    }

    /// The checker itself finds what a wrong text would claim.
    #[test]
    fn the_checker_catches_a_wrong_variant() {
        let all = demo_stories(crate::demo::Demo::Lifecycle);
        let exec = all
            .iter()
            .find(|s| s.phase == Phase::Exec)
            .expect("an exec");
        let step = &exec.steps[0];
        assert!(check(
            exec,
            step,
            "`runc create` exits once INIT waits for `runc start`."
        )
        .is_err());
        let at_once = ended_by(&all, |c| matches!(c, Cause::KilledAtOnce { .. }))
            .next()
            .expect("a kill at once");
        let step = &at_once.steps[0];
        assert!(check(
            at_once,
            step,
            "the shim waits the grace period, then SIGKILL."
        )
        .is_err());
    }
}
