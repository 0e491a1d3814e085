//! Golden tests: real strace captures of runc, containerd (ctr) and podman, imported and run
//! through the lineage engine, must give the tree `ps`/`pstree` showed at the same moment.
//! `runc-run` (tests/fixtures/strace/record-runc-run.sh) has the whole scenario in its truth,
//! read at a known moment: it is checked both ways.

use std::path::PathBuf;
use tracer::lineage::{Engine, How, Role, StepKind};

#[path = "golden/corpus.rs"]
mod corpus;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/strace")
        .join(name)
}

fn import(name: &str) -> Vec<tracer::Event> {
    let text = std::fs::read_to_string(fixture(&format!("{name}.log"))).expect("fixture");
    let import = tracer::strace::parse_log(&text).expect("import");
    assert_eq!(
        import.unreadable, 0,
        "{name}: unreadable lines {:?}",
        import.first_unreadable
    );
    import.events
}

/// The engine after every event of the log, or (`until_ns`) after those up to that time.
fn engine_until(name: &str, until_ns: Option<u64>) -> Engine {
    let mut e = Engine::new();
    import(name)
        .iter()
        .take_while(|ev| until_ns.is_none_or(|t| ev.ts_ns <= t))
        .for_each(|ev| e.apply(ev));
    e
}

/// Truth from the fixture: `ps` rows (pid, ppid, comm), pstree thread/child edges, and the
/// annotations: when /proc was read (`# moment`, seconds since the epoch as the log's `-ttt`
/// clock), strace's own pid (`# tracer`, or a `strace` row) and the process strace started or
/// attached to (`# initial`), whose parent and, when attached, name the log cannot show.
struct Truth {
    ps: Vec<(u32, u32, String)>,
    /// (process pid, thread tid)
    threads: Vec<(u32, u32)>,
    /// (parent pid, child pid)
    children: Vec<(u32, u32)>,
    moment_ns: Option<u64>,
    tracer: Option<u32>,
    initial: Option<u32>,
}

/// `SECS.NANOS` as nanoseconds.
fn epoch_ns(s: &str) -> Option<u64> {
    let (secs, frac) = s.split_once('.')?;
    let frac = format!("{frac:0<9}");
    Some(secs.parse::<u64>().ok()? * 1_000_000_000 + frac.get(..9)?.parse::<u64>().ok()?)
}

/// The number after `# KEY `.
fn annotation<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.strip_prefix("# ")?
        .strip_prefix(key)?
        .split_whitespace()
        .next()
}

fn truth(name: &str) -> Truth {
    let text = std::fs::read_to_string(fixture(&format!("{name}.truth.txt"))).expect("truth");
    let mut t = Truth {
        ps: vec![],
        threads: vec![],
        children: vec![],
        moment_ns: None,
        tracer: None,
        initial: None,
    };
    let mut in_ps = false;
    // pstree's open ancestors: (column of the name, pid).
    let mut stack: Vec<(usize, u32)> = Vec::new();
    for line in text.lines() {
        if line.starts_with('#') {
            if let Some(m) = annotation(line, "moment ") {
                t.moment_ns = Some(epoch_ns(m).expect("moment"));
            }
            if let Some(p) = annotation(line, "tracer ") {
                t.tracer = Some(p.parse().expect("tracer pid"));
            }
            if let Some(p) = annotation(line, "initial ") {
                t.initial = Some(p.parse().expect("initial pid"));
            }
            in_ps = line.contains("ps -eo");
            stack.clear();
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
        // pstree -pa: `name,pid args`, children `|-name,pid` indented under their parent,
        // threads `|-{name},tid`.
        let col = line
            .find(|c: char| !matches!(c, '|' | '`' | '-' | ' '))
            .unwrap_or(0);
        let item = &line[col..];
        let Some((label, rest)) = item.split_once(',') else {
            continue;
        };
        let id: u32 = match rest.split_whitespace().next().and_then(|s| s.parse().ok()) {
            Some(id) => id,
            None => continue,
        };
        while stack.last().is_some_and(|(c, _)| *c >= col) {
            stack.pop();
        }
        if let Some(&(_, parent)) = stack.last() {
            if label.starts_with('{') {
                t.threads.push((parent, id));
                continue;
            }
            t.children.push((parent, id));
        }
        stack.push((col, id));
    }
    for (pid, _, comm) in &t.ps {
        if comm == "strace" {
            t.tracer = Some(*pid);
        }
    }
    t
}

/// Every row of the truth, none skipped: strace itself is not in its log; the process strace
/// started or attached to is there with its parent unknown (and, attached, its name too: it
/// made no exec in the log); every other one has the truth's parent and name. pstree's children
/// agree. With a moment, the engine is taken at that moment and the check goes both ways:
/// every process the engine has alive then is a row of the truth, with the same threads.
fn check_against_truth(name: &str) -> Engine {
    let t = truth(name);
    let e = engine_until(name, t.moment_ns);
    assert!(!t.ps.is_empty(), "{name}: no truth rows");
    for (pid, ppid, comm) in &t.ps {
        if Some(*pid) == t.tracer {
            assert!(
                e.process(*pid).is_none(),
                "{name}: strace {pid} in its own log"
            );
            continue;
        }
        let p = e
            .process(*pid)
            .unwrap_or_else(|| panic!("{name}: {comm} {pid} is not in the engine"));
        if t.moment_ns.is_some() {
            assert!(
                !p.exited,
                "{name}: {comm} {pid} exited in the engine, alive in /proc"
            );
        }
        let initial = Some(*pid) == t.initial || Some(*ppid) == t.tracer;
        if initial {
            assert_eq!(
                (p.born_how(), p.ppid),
                (How::Unknown, 0),
                "{name}: {pid}'s parent is not in the log"
            );
        } else {
            assert_eq!(p.ppid, *ppid, "{name}: parent of {comm} {pid}");
        }
        let attached = initial && p.execs.is_empty();
        let want = if attached { "?" } else { comm.as_str() };
        assert_eq!(p.name(), want, "{name}: name of {pid}");
    }
    for (parent, child) in &t.children {
        let c = e
            .process(*child)
            .unwrap_or_else(|| panic!("{name}: pstree child {child} not in the engine"));
        assert_eq!(c.ppid, *parent, "{name}: pstree child {child} of {parent}");
    }
    if t.moment_ns.is_some() {
        for p in e.processes().filter(|p| !p.exited) {
            assert!(
                t.ps.iter().any(|(pid, _, _)| *pid == p.pid),
                "{name}: the engine has {} {} alive, /proc did not",
                p.name(),
                p.pid
            );
            let mut engine_tids: Vec<u32> = p.live_tids().filter(|t| *t != p.pid).collect();
            let mut truth_tids: Vec<u32> = t
                .threads
                .iter()
                .filter(|(pid, _)| *pid == p.pid)
                .map(|(_, tid)| *tid)
                .collect();
            engine_tids.sort_unstable();
            truth_tids.sort_unstable();
            assert_eq!(engine_tids, truth_tids, "{name}: threads of {}", p.pid);
        }
    } else {
        // Threads the log shows (pstree also lists threads of an attached process that made
        // no traced call; strace -p does not name them).
        let seen_tids: std::collections::HashSet<u32> = e
            .processes()
            .flat_map(|p| p.threads.iter().map(|t| t.tid))
            .collect();
        for (pid, tid) in t.threads.iter().filter(|(_, tid)| seen_tids.contains(tid)) {
            let p = e.process(*pid).expect("thread's process");
            assert!(
                p.threads.iter().any(|th| th.tid == *tid),
                "{name}: {tid} is a thread of {pid}"
            );
        }
    }
    e
}

#[test]
fn runc_run_every_process_of_the_scenario() {
    let e = check_against_truth("runc-run");
    let t = truth("runc-run");
    // runc run, the container init (sh) and its two sleeps, at least.
    assert!(t.ps.len() >= 4, "{:?}", t.ps);
    let sh =
        t.ps.iter()
            .find(|(_, _, comm)| comm == "sh")
            .expect("the container init");
    let init = e.process(sh.0).unwrap();
    assert_eq!(init.role, Some(Role::Container));
    // Born with CLONE_PARENT under `runc run`, never adopted.
    assert_eq!(init.born_how(), How::CloneParent);
    assert!(init.last_adoption().is_none(), "{:?}", init.lineage);
    let sleeps: Vec<u32> =
        t.ps.iter()
            .filter(|(_, ppid, comm)| comm == "sleep" && *ppid == sh.0)
            .map(|(pid, _, _)| *pid)
            .collect();
    assert_eq!(sleeps.len(), 2, "{:?}", t.ps);
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

/// The kernel stops its subreaper walk at the pid namespace (find_new_reaper): the orphan goes
/// to the namespace's init, not to `runc run` above it. strace shows no namespace: the importer
/// infers it from runc's CHILD → INIT clone (docs/lineage.md).
#[test]
fn runc_run_orphan_is_reaped_by_the_container_init() {
    let e = check_against_truth("runc-run-orphan");
    let t = truth("runc-run-orphan");
    let sh =
        t.ps.iter()
            .find(|(_, _, comm)| comm == "sh")
            .expect("the container init");
    // `(sleep 3003 &)`: the subshell exits and its sleep is adopted by the pid namespace's
    // init (sh), not by `runc run`, the subreaper above it in the host's namespace.
    let orphan =
        t.ps.iter()
            .find(|(pid, _, _)| e.process(*pid).is_some_and(|p| p.last_adoption().is_some()))
            .expect("an adopted process");
    assert_eq!(orphan.1, sh.0, "{:?}", t.ps);
}
