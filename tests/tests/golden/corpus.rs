//! The strace corpus (tests/fixtures/strace/corpus): logs of real runs in every form people
//! bring them in (`-f`, `-ff`, `-p` mid-way, stamps, excerpts, wrapped and old-format text),
//! each judged against the kernel's own account of the run (bpftrace on task_newtask,
//! sched_process_exec and sched_process_exit, /proc at the log's end): every process's final
//! parent, its end, its role, its threads, one record per pid.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use tracer::lineage::{Engine, How, Role, WarningKind};

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/strace/corpus")
}

/// One row of `manifest.txt`.
struct Entry {
    log: String,
    truth: String,
    whole: bool,
}

fn manifest() -> Vec<Entry> {
    let text = std::fs::read_to_string(dir().join("manifest.txt")).expect("manifest");
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            assert!(w.len() >= 3, "manifest row {l:?}");
            assert!(matches!(w[2], "whole" | "excerpt"), "kind of {l:?}");
            Entry {
                log: w[0].into(),
                truth: w[1].into(),
                whole: w[2] == "whole",
            }
        })
        .collect()
}

/// A process as the kernel told it.
#[derive(Debug)]
struct Proc {
    pid: u32,
    /// Created in the log's run (not the process strace started or attached to).
    created: bool,
    parent: u32,
    /// wait(2) status at its end; `None`: alive when the log ended.
    status: Option<u32>,
    level: u32,
    execs: Vec<String>,
    /// The process that called clone (its tgid).
    creator: Option<u32>,
    /// strace attached to it (`-p`): its execs came before the log.
    attached: bool,
}

struct Truth {
    procs: Vec<Proc>,
    /// thread tid → its process
    threads: HashMap<u32, u32>,
}

fn truth(name: &str) -> Truth {
    let path = dir().join(format!("{name}.truth.txt"));
    let text = std::fs::read_to_string(&path).expect("truth");
    let mut t = Truth {
        procs: vec![],
        threads: HashMap::new(),
    };
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let w: Vec<&str> = line.split_whitespace().collect();
        match w.as_slice() {
            ["thread", tid, "of", pid] => {
                t.threads.insert(tid.parse().unwrap(), pid.parse().unwrap());
            }
            ["proc", pid, "by", by, "flags", flags, "parent", parent, "end", rest @ ..] => {
                let (status, rest) = match rest {
                    ["exit", s, rest @ ..] => (Some(s.parse().unwrap()), rest),
                    ["alive", rest @ ..] => (None, rest),
                    _ => panic!("{name}: end of {line:?}"),
                };
                let ["ns", ns, "exec", execs] = rest else {
                    panic!("{name}: {line:?}");
                };
                let level = ns.split('/').next().unwrap().parse().unwrap();
                t.procs.push(Proc {
                    pid: pid.parse().unwrap(),
                    created: *by != "-",
                    parent: parent.parse().unwrap(),
                    status,
                    level,
                    execs: match *execs {
                        "-" => vec![],
                        e => e.split(',').map(String::from).collect(),
                    },
                    creator: by.split('/').next().and_then(|c| c.parse().ok()),
                    attached: *flags == "-",
                });
            }
            _ => panic!("{name}: truth line {line:?}"),
        }
    }
    assert!(!t.procs.is_empty(), "{name}: no processes in its truth");
    t
}

/// The roles a trainer expects a process of the truth to go through, oldest first (the last
/// is the one it ends with): the machinery's programs by the file the kernel exec'd, runc's
/// init stages by what runc ran, and what they exec'd into is the container's; anything else
/// none. A process strace attached to made its execs before the log: the log cannot tell.
fn expected_roles(t: &Truth) -> HashMap<u32, Vec<Option<&'static str>>> {
    let mut roles: HashMap<u32, Vec<Option<&'static str>>> = HashMap::new();
    for p in &t.procs {
        let inherited = p
            .creator
            .and_then(|c| roles.get(&c).and_then(|r| r.last().copied()))
            .flatten();
        let mut path = vec![inherited];
        let shown = if p.attached { &[][..] } else { &p.execs[..] };
        for exe in shown {
            let base = exe.rsplit('/').next().unwrap_or("");
            let role = match (base, *path.last().unwrap()) {
                ("containerd", _) => Some("runtime-daemon"),
                ("containerd-shim-runc-v2" | "conmon", _) => Some("shim"),
                ("runc", _) => Some("oci-runtime"),
                // runc runs `runc init` through /proc/self/exe, then its own memfd copy
                ("exe" | "6", Some("oci-runtime" | "oci-init")) => Some("oci-init"),
                (_, Some("oci-init" | "container")) => Some("container"),
                _ => None,
            };
            path.push(role);
        }
        roles.insert(p.pid, path);
    }
    roles
}

fn load(e: &Entry) -> tracer::input::Loaded {
    tracer::input::Loaded::read(&dir().join(&e.log), None)
        .unwrap_or_else(|err| panic!("{}: {err}", e.log))
}

/// Judges one log of the manifest against its truth.
fn check(log: &str) {
    let entries = manifest();
    let e = entries
        .iter()
        .find(|e| e.log == log)
        .unwrap_or_else(|| panic!("{log} is not in manifest.txt"));
    let t = truth(&e.truth);
    let loaded = load(e);
    let engine = &loaded.engine;
    // The process strace started, when the log never shows its pid: the importer's
    // "initial process" (pid 0) is it.
    let root = t.procs.iter().find(|p| !p.created).map(|p| p.pid);
    let alias = root.filter(|&r| engine.process(r).is_none() && engine.process(0).is_some());
    let pid_of = |pid: u32| if pid == 0 { alias.unwrap_or(0) } else { pid };
    let judged = Judged {
        entry: e,
        truth: &t,
        engine,
        pid_of: &pid_of,
    };
    let mut problems = Vec::new();
    judged.records(&mut problems);
    let roles = expected_roles(&t);
    for tp in &t.procs {
        let at = if Some(tp.pid) == alias { 0 } else { tp.pid };
        judged.process(tp, at, &roles[&tp.pid], &mut problems);
    }
    judged.namespaces(&mut problems);
    judged.threads(&mut problems);
    judged.warnings(&mut problems);
    assert!(
        problems.is_empty(),
        "{log} against {}.truth.txt:\n  {}\nnotes: {:?}",
        e.truth,
        problems.join("\n  "),
        loaded.notes
    );
}

/// A parent the engine does not know is said so: a process whose birth is not in the log, or
/// one adopted by a pid namespace's init the log never shows.
fn told_unknown(p: &tracer::lineage::Process) -> bool {
    use tracer::lineage::{Reaper, Reason};
    p.born_how() == How::Unknown
        || p.last_adoption().is_some_and(|a| {
            matches!(
                a.reason,
                Some(Reason::ParentExited {
                    reaper: Reaper::NsInitUnseen,
                    ..
                })
            )
        })
}

/// Made by a clone whose flags the log does not show (the call's line was cut): a thread or
/// a process, as far as the log tells, and said so.
fn flags_unknown(p: &tracer::lineage::Process) -> bool {
    p.lineage
        .first()
        .is_some_and(|l| l.flags.is_none() && l.how != How::Unknown)
}

/// What one log's processes are judged in.
struct Judged<'a> {
    entry: &'a Entry,
    truth: &'a Truth,
    engine: &'a Engine,
    /// The log's pid of the truth's (the initial process's 0 stands for its pid).
    pid_of: &'a dyn Fn(u32) -> u32,
}

impl Judged<'_> {
    /// An excerpt may take a thread of the parent for the parent: the SIGCHLD's receiver
    /// (any thread of the parent's group may dequeue it) shown alone.
    fn thread_of(&self, shown: u32, parent: u32) -> bool {
        !self.entry.whole && self.truth.threads.get(&shown) == Some(&parent)
    }

    /// One record per pid (the truth's count: a pid the kernel reused is two), and none for
    /// a task that is no process of the run.
    fn records(&self, problems: &mut Vec<String>) {
        let (e, t) = (self.entry, self.truth);
        let truth_pids: HashSet<u32> = t.procs.iter().map(|p| p.pid).collect();
        let mut records: HashMap<u32, usize> = HashMap::new();
        for p in self.engine.processes() {
            let pid = (self.pid_of)(p.pid);
            *records.entry(pid).or_default() += 1;
            // An excerpt that cut a thread's creation shows it as a process of unknown
            // parent, or made by a clone whose flags it cut (said so).
            let untold = !e.whole && (told_unknown(p) || flags_unknown(p));
            if !truth_pids.contains(&pid) && pid != 1 && !untold {
                let what = match t.threads.contains_key(&p.pid) {
                    true => "a thread",
                    false => "no process of the run",
                };
                problems.push(format!("record {} {} is {what}", p.pid, p.name()));
            }
        }
        for (pid, n) in &records {
            let want = t.procs.iter().filter(|p| p.pid == *pid).count().max(1);
            if *n > want {
                problems.push(format!("pid {pid}: {n} records, the kernel made {want}"));
            }
        }
    }

    /// A process and its parent at the same nesting level are in one namespace (a child's
    /// namespace is its parent's or one below it).
    fn namespaces(&self, problems: &mut Vec<String>) {
        let t = self.truth;
        let level: HashMap<u32, u32> = t.procs.iter().map(|p| (p.pid, p.level)).collect();
        let ns = |pid: u32| {
            self.engine
                .process(pid)
                .and_then(|p| p.pidns)
                .map(|n| n.inum)
        };
        for tp in t.procs.iter().filter(|p| p.level > 0 && self.entry.whole) {
            if level.get(&tp.parent) == Some(&tp.level) && ns(tp.pid) != ns(tp.parent) {
                problems.push(format!(
                    "{} and its parent {} are in one pid namespace (engine: {:?}, {:?})",
                    tp.pid,
                    tp.parent,
                    ns(tp.pid),
                    ns(tp.parent)
                ));
            }
        }
    }

    /// Each thread of the truth the log names is its process's.
    fn threads(&self, problems: &mut Vec<String>) {
        let (whole, t) = (self.entry.whole, self.truth);
        for (tid, pid) in &t.threads {
            let Some((proc_, _)) = self.engine.thread_of(*tid) else {
                continue; // a thread the log never names
            };
            let shown_alone =
                |p: &tracer::lineage::Process| told_unknown(p) || flags_unknown(p) || p.pid == *tid;
            if proc_.pid == *pid
                // made by a thread of its process that the excerpt shows alone
                || (!whole && t.threads.get(&proc_.pid) == Some(pid))
                // an excerpt may not tell a thread it shows alone
                || (!whole && proc_.pid == *tid && shown_alone(proc_))
            {
                continue;
            }
            problems.push(format!("thread {tid} of {pid} is taken as {}'s", proc_.pid));
        }
    }

    /// No model/kernel disagreement. An excerpt that cut the threads' creations shows two
    /// threads of a parent apart: the model's parent and the one that dequeued the SIGCHLD.
    fn warnings(&self, problems: &mut Vec<String>) {
        let process_of = |tid: u32| self.truth.threads.get(&tid).copied().unwrap_or(tid);
        for w in self.engine.warnings() {
            match w.kind {
                WarningKind::SigchldDisagreement { model, kernel, .. }
                    if !self.entry.whole && process_of(model) == process_of(kernel) => {}
                WarningKind::Disagreement { .. } | WarningKind::SigchldDisagreement { .. } => {
                    problems.push(format!("warning: {w}"))
                }
                _ => {}
            }
        }
    }

    /// One process of the truth against the engine's newest record of its pid (`at`: 0 for
    /// the initial process whose pid the log never shows).
    fn process(
        &self,
        tp: &Proc,
        at: u32,
        roles: &[Option<&'static str>],
        problems: &mut Vec<String>,
    ) {
        let (e, engine) = (self.entry, self.engine);
        let Some(p) = engine.process(at) else {
            if e.whole {
                problems.push(format!(
                    "{} (exec {:?}) is not in the engine",
                    tp.pid, tp.execs
                ));
            }
            return;
        };
        let name = format!("{} {}", tp.pid, p.name());
        // The parent's record, when the engine has one: the initial process's pid is 0.
        let ppid = match p.parent.and_then(|id| engine.get(id)) {
            Some(parent) => (self.pid_of)(parent.pid),
            None => p.ppid,
        };
        if !tp.created {
            // started or attached by strace: its parent is not in the log
            if ppid != 0 {
                problems.push(format!("{name}: parent {ppid} (the log cannot show it)"));
            }
        } else if ppid != tp.parent && (e.whole || ppid != 0) && !self.thread_of(ppid, tp.parent) {
            problems.push(format!("{name}: parent {ppid} (kernel: {})", tp.parent));
        } else if ppid == 0 && !told_unknown(p) {
            problems.push(format!("{name}: parent unknown, not told as such"));
        }
        match (tp.status, p.exited, p.exit_status) {
            (None, true, _) => problems.push(format!("{name}: exited (kernel: alive)")),
            (Some(_), false, _) if e.whole => {
                problems.push(format!("{name}: alive (kernel: exited)"))
            }
            (Some(s), true, Some(st)) if st.to_wait_status() != s => {
                problems.push(format!("{name}: ended {st:?} (kernel: wait status {s:#x})"))
            }
            _ => {}
        }
        // Whether it ran in a pid namespace below the host's (the log shows none: inferred)
        let nested = p.pidns.is_some_and(|ns| ns.level > 0);
        if (tp.level > 0) != nested && (e.whole || nested) {
            problems.push(format!(
                "{name}: in a nested pid namespace: {nested} (kernel: level {})",
                tp.level
            ));
        }
        // A whole log ends with the role the process ended with; an excerpt may stop before
        // it, or know none.
        let got = p.role.map(Role::name);
        let last = roles.last().copied().flatten();
        if (e.whole && got != last) || (!e.whole && got.is_some() && !roles.contains(&got)) {
            problems.push(format!("{name}: role {got:?} (expected {last:?})"));
        }
    }
}

/// strace killed while the shim's execve was in the call: what it tried to run is what it
/// ran, as far as the log tells, and said so; its role is the shim's.
#[test]
fn an_exec_cut_by_the_logs_end_is_told_with_the_role_its_argv_names() {
    let e = manifest()
        .into_iter()
        .find(|e| e.log == "ctr-attach-cut.log")
        .unwrap();
    let loaded = load(&e);
    let text = std::fs::read_to_string(dir().join(&e.log)).unwrap();
    let last = text.lines().last().unwrap();
    let pid: u32 = last
        .strip_prefix("[pid ")
        .and_then(|r| r.split(']').next())
        .and_then(|p| p.trim().parse().ok())
        .expect("the last line is a task's");
    let p = loaded.engine.process(pid).expect("the shim");
    assert!(p.exec_unconfirmed(), "{:?}", p.execs);
    assert_eq!(p.exe.as_deref(), Some("/usr/bin/containerd-shim-runc-v2"));
    assert_eq!(p.role, Some(Role::Shim));
    let label = tracer::lineage::view::node_label(p, Default::default());
    assert!(
        label.contains("(exec result not in the recording)"),
        "{label}"
    );
}

/// Every row of the manifest has its test below, and its files are there.
#[test]
fn every_corpus_log_has_its_test_and_truth() {
    let tested: HashSet<&str> = TESTED.iter().copied().collect();
    for e in manifest() {
        assert!(tested.contains(e.log.as_str()), "{}: no test", e.log);
        assert!(
            dir().join(format!("{}.truth.txt", e.truth)).is_file(),
            "{}",
            e.truth
        );
    }
    assert_eq!(
        tested.len(),
        manifest().len(),
        "a test for a log not in the manifest"
    );
}

macro_rules! corpus_tests {
    ($($name:ident => $log:literal,)*) => {
        const TESTED: &[&str] = &[$($log),*];
        $(#[test] fn $name() { check($log); })*
    };
}

corpus_tests! {
    unshare_o => "unshare-o.log",
    unshare_ff => "unshare-ff.log",
    unshare_stderr => "unshare-stderr.log",
    runc_o => "runc-o.log",
    runc_stderr => "runc-stderr.log",
    runc_pidns => "runc-pidns.log",
    podman_o => "podman-o.log",
    clone_parent => "clone-parent.log",
    tini_o => "tini-o.log",
    tini_stderr => "tini-stderr.log",
    ctr_attach => "ctr-attach.log",
    shell_attach => "shell-attach.log",
    ctr_attach_grep => "ctr-attach-grep.log",
    ctr_attach_nonotice => "ctr-attach-nonotice.log",
    runc_stderr_head => "runc-stderr-head.log",
    runc_stderr_tail => "runc-stderr-tail.log",
    shell_attach_head => "shell-attach-head.log",
    runc_o_wrapped => "runc-o-wrapped.log",
    unshare_stderr_mail => "unshare-stderr-mail.log",
    podman_o_colour => "podman-o-colour.log",
    tini_o_tagged => "tini-o-tagged.log",
    runc_stderr_old => "runc-stderr-old.log",
    clone_parent_old => "clone-parent-old.log",
    ctr_attach_old => "ctr-attach-old.log",
    ctr_attach_cut => "ctr-attach-cut.log",
}
