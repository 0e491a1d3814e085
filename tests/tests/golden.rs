//! Golden tests: real strace captures of runc, containerd (ctr) and podman, imported and run
//! through the lineage engine, must give the tree `ps`/`pstree` showed at the same moment.

use std::path::PathBuf;
use tracer::lineage::{Engine, How, Role, StepKind};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/strace")
        .join(name)
}

fn engine(name: &str) -> Engine {
    let text = std::fs::read_to_string(fixture(&format!("{name}.log"))).expect("fixture");
    let import = tracer::strace::parse_log(&text).expect("import");
    assert_eq!(
        import.unreadable, 0,
        "{name}: unreadable lines {:?}",
        import.first_unreadable
    );
    let mut e = Engine::new();
    import.events.iter().for_each(|ev| e.apply(ev));
    e
}

/// Truth from the fixture: `ps` rows (pid, ppid, comm) and pstree thread/child edges.
struct Truth {
    ps: Vec<(u32, u32, String)>,
    /// (process pid, thread tid)
    threads: Vec<(u32, u32)>,
    /// (parent pid, child pid)
    children: Vec<(u32, u32)>,
}

fn truth(name: &str) -> Truth {
    let text = std::fs::read_to_string(fixture(&format!("{name}.truth.txt"))).expect("truth");
    let mut t = Truth {
        ps: vec![],
        threads: vec![],
        children: vec![],
    };
    let mut in_ps = false;
    let mut root = None;
    for line in text.lines() {
        if line.starts_with('#') {
            in_ps = line.contains("ps -eo");
            root = None;
            continue;
        }
        if line.trim_start().starts_with("PID") {
            continue;
        }
        if in_ps {
            let cols: Vec<&str> = line.split_whitespace().collect();
            if cols.len() >= 3 {
                t.ps.push((
                    cols[0].parse().unwrap(),
                    cols[1].parse().unwrap(),
                    cols[2].to_string(),
                ));
            }
            continue;
        }
        // pstree -pa: `name,pid args`, children `|-name,pid`, threads `|-{name},tid`.
        let item = line.trim_start().trim_start_matches(['|', '`', '-', ' ']);
        let Some((label, rest)) = item.split_once(',') else {
            continue;
        };
        let id: u32 = match rest.split_whitespace().next().and_then(|s| s.parse().ok()) {
            Some(id) => id,
            None => continue,
        };
        if !line.starts_with(' ') {
            root = Some(id);
        } else if let Some(r) = root {
            if label.starts_with('{') {
                t.threads.push((r, id));
            } else {
                t.children.push((r, id));
            }
        }
    }
    t
}

/// Every process of the truth that the log saw has the truth's parent and name; pstree's
/// threads and children agree.
fn check_against_truth(name: &str) -> Engine {
    let e = engine(name);
    let t = truth(name);
    let mut checked = 0;
    for (pid, ppid, comm) in &t.ps {
        let Some(p) = e.process(*pid) else { continue }; // strace itself is not in its log
                                                         // A process strace attached to (-p) has a parent the log cannot show.
        let parent_unknowable = p.ppid == 0 && p.born_how() == How::Unknown;
        if (*ppid == 1 || e.process(*ppid).is_some()) && !parent_unknowable {
            assert_eq!(p.ppid, *ppid, "{name}: parent of {pid}");
        }
        if !p.name().is_empty() && p.name() != "?" {
            assert_eq!(p.name(), comm.as_str(), "{name}: name of {pid}");
        }
        checked += 1;
    }
    assert!(checked >= 1, "{name}: no truth row matched the log");
    // Threads the log shows (pstree also lists threads of an attached process that made no
    // traced call; strace -p does not name them).
    let seen_tids: std::collections::HashSet<u32> = e
        .processes()
        .flat_map(|p| p.threads.iter().map(|t| t.tid))
        .collect();
    for (pid, tid) in t.threads.iter().filter(|(_, tid)| seen_tids.contains(tid)) {
        if let Some(p) = e.process(*pid) {
            assert!(
                p.threads.iter().any(|th| th.tid == *tid),
                "{name}: {tid} is a thread of {pid}"
            );
        }
    }
    for (parent, child) in &t.children {
        if let Some(c) = e.process(*child) {
            assert_eq!(c.ppid, *parent, "{name}: pstree child {child} of {parent}");
        }
    }
    e
}

#[test]
fn runc_run_detached_init_ends_under_init() {
    let e = check_against_truth("runc");
    let init = e.process(15136).expect("container init");
    assert_eq!(init.role, Some(Role::Container));
    // Born by CLONE_PARENT under `runc run`, adopted by init once runc exited.
    assert_eq!(init.ppid, 1);
    assert!(init.last_adoption().is_some());
}

#[test]
fn runc_stderr_style_with_namespace_pids() {
    let e = check_against_truth("runc-stderr");
    // The container init's threads were created with namespace return values 2..5; the
    // attach notices give the host tids.
    let init = e.process(15286).expect("container init");
    for tid in 15287..=15290 {
        assert!(init.threads.iter().any(|t| t.tid == tid), "thread {tid}");
    }
    assert!(
        e.process(2).is_none(),
        "a namespace pid leaked into the tree"
    );
}

#[test]
fn containerd_shim_and_container_parents() {
    let e = check_against_truth("ctr");
    let shim = e.process(15921).expect("shim");
    assert_eq!(shim.role, Some(Role::Shim));
    assert_eq!(shim.container_id.as_deref(), Some("fx-ctr"));
    assert!(shim.is_subreaper);
    assert_eq!(
        shim.ppid, 1,
        "the shim is adopted by init when `shim start` exits"
    );
    let sleep = e.process(15941).expect("container");
    assert_eq!(sleep.ppid, 15921);
    assert_eq!(sleep.role, Some(Role::Container));

    let stories = tracer::lineage::stories(&e);
    let story = stories
        .iter()
        .find(|s| s.init_pid == 15941)
        .expect("story of fx-ctr");
    let kinds: Vec<StepKind> = story.steps.iter().map(|s| s.kind).collect();
    let expected_order = [
        StepKind::ShimStarted,
        StepKind::ShimAdopted,
        StepKind::ShimSubreaper,
        StepKind::InitExec,
        StepKind::ChildCloned,
        StepKind::InitCloned,
        StepKind::InitAdopted,
        StepKind::WorkloadExec,
    ];
    let mut pos = 0;
    for k in expected_order {
        let found = kinds[pos..]
            .iter()
            .position(|x| *x == k)
            .unwrap_or_else(|| panic!("step {k:?} missing or out of order in {kinds:?}"));
        pos += found + 1;
    }
    assert!(
        story.steps.windows(2).all(|w| w[0].seq <= w[1].seq),
        "steps in event order"
    );
}

#[test]
fn podman_conmon_is_the_container_parent() {
    let e = check_against_truth("podman");
    let conmon = e.process(17075).expect("conmon");
    assert_eq!(conmon.role, Some(Role::Shim));
    assert_eq!(conmon.ppid, 1);
    let init = e.process(17089).expect("container");
    assert_eq!(init.ppid, 17075);
    assert_eq!(init.role, Some(Role::Container));
    let stories = tracer::lineage::stories(&e);
    assert!(
        stories
            .iter()
            .any(|s| s.init_pid == 17089 && s.shim_pid == Some(17075)),
        "{stories:#?}"
    );
}
