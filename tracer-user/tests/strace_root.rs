//! An ordinary `strace -f CMD` log: its first pid is the traced command, the root of the tree,
//! and the start it never shows is no anomaly (no placeholder, no warning). Logs strace writes
//! in the test (`-o FILE`'s pid column, stderr's `[pid N]`) and crafted ones.

#[allow(dead_code)]
#[path = "../../tests/src/prereq.rs"]
mod prereq;

use std::path::Path;
use tracer::input::{Input, Loaded};
use tracer::lineage::How;

/// A log read as every command reads one.
fn load(name: &str, text: &[u8]) -> Loaded {
    let input = Input::from_reader(
        Path::new(name),
        Box::new(std::io::Cursor::new(text.to_vec())),
    )
    .expect("an strace log");
    Loaded::from_input(input, None).expect("read")
}

/// The tree's roots: processes without a parent in the model.
fn roots(l: &Loaded) -> Vec<(u32, How)> {
    l.engine
        .processes()
        .filter(|p| p.parent.is_none())
        .map(|p| (p.pid, p.lineage[0].how))
        .collect()
}

/// `pid`'s parent in the model.
fn parent_of(l: &Loaded, pid: u32) -> Option<u32> {
    let p = l.engine.process(pid)?;
    p.parent.and_then(|id| l.engine.get(id)).map(|pp| pp.pid)
}

/// `strace -f` of `sh -c` writing its own pid and its children's (the truth, from the
/// processes themselves) into `dir/pids`: `SH CHILD1 CHILD2`.
fn strace_sh(dir: &Path, to_file: bool) -> (Vec<u8>, [u32; 3]) {
    let pids = dir.join("pids");
    let script = format!(
        "sleep 0.01 & a=$!; sh -c 'exit 3' & b=$!; wait; echo $$ $a $b > {}",
        pids.display()
    );
    let log = strace_f(dir, to_file, &["sh", "-c", &script]);
    let text = std::fs::read_to_string(&pids).unwrap();
    let v: Vec<u32> = text
        .split_whitespace()
        .map(|w| w.parse().unwrap())
        .collect();
    (log, [v[0], v[1], v[2]])
}

/// `strace -f CMD`'s log, written with `-o FILE` or to stderr: its bytes.
fn strace_f(dir: &Path, to_file: bool, cmd: &[&str]) -> Vec<u8> {
    let log = dir.join(if to_file { "o.log" } else { "e.log" });
    let mut strace = std::process::Command::new("strace");
    strace.arg("-f");
    if to_file {
        strace.arg("-o").arg(&log);
    } else {
        strace.stderr(std::fs::File::create(&log).unwrap());
    }
    let st = strace.args(cmd).status().expect("strace runs");
    assert!(st.success(), "strace: {st}");
    std::fs::read(&log).unwrap()
}

#[test]
fn a_real_strace_log_has_the_traced_command_as_its_root() {
    if !prereq::require_program("strace", "strace") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for to_file in [true, false] {
        let (log, [sh, a, b]) = strace_sh(dir.path(), to_file);
        let form = if to_file { "-o FILE" } else { "stderr" };
        let l = load(form, &log);
        assert!(
            l.engine.warnings().is_empty(),
            "{form}: {:?}",
            l.engine.warnings()
        );
        assert_eq!(roots(&l), vec![(sh, How::Launched)], "{form}");
        assert_eq!(parent_of(&l, a), Some(sh), "{form}");
        assert_eq!(parent_of(&l, b), Some(sh), "{form}");
        let root = l.engine.process(sh).unwrap();
        assert_eq!(root.comm.to_string(), "sh", "{form}");
        assert!(l.notes.is_empty(), "{form}: {:?}", l.notes);
    }
}

#[test]
fn crafted_logs_of_both_forms_have_their_first_pid_as_root() {
    let column = "\
100   execve(\"/bin/sh\", [\"sh\"], 0x7ffe /* 1 var */) = 0
100   clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD, child_tidptr=0x7f0) = 101
101   execve(\"/bin/true\", [\"true\"], 0x7ffe /* 1 var */) = 0
101   exit_group(0)                     = ?
101   +++ exited with 0 +++
100   --- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED, si_pid=101, si_uid=0, si_status=0, si_utime=0, si_stime=0} ---
100   exit_group(0)                     = ?
100   +++ exited with 0 +++
";
    let stderr = "\
execve(\"/bin/sh\", [\"sh\"], 0x7ffe /* 1 var */) = 0
clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD, child_tidptr=0x7f0) = 101
[pid   101] execve(\"/bin/true\", [\"true\"], 0x7ffe /* 1 var */) = 0
[pid   101] exit_group(0)           = ?
[pid   101] +++ exited with 0 +++
[pid   100] --- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED, si_pid=101, si_uid=0, si_status=0, si_utime=0, si_stime=0} ---
[pid   100] exit_group(0)           = ?
+++ exited with 0 +++
";
    // `strace -p 100`: the process existed; it is the root, seen from the snapshot's side.
    let attached = "\
strace: Process 100 attached
100   clone(child_stack=NULL, flags=SIGCHLD) = 101
101   exit_group(0)                     = ?
101   +++ exited with 0 +++
";
    for (form, text, how) in [
        ("column", column, How::Launched),
        ("stderr", stderr, How::Launched),
        ("attached", attached, How::Snapshot),
    ] {
        let l = load(form, text.as_bytes());
        assert!(
            l.engine.warnings().is_empty(),
            "{form}: {:?}",
            l.engine.warnings()
        );
        assert_eq!(roots(&l), vec![(100, how)], "{form}");
        assert_eq!(parent_of(&l, 101), Some(100), "{form}");
    }
}

/// A log that never shows the initial process's pid: it is the root all the same, as pid 0
/// ("the initial process"), and only the note about its pid is said.
#[test]
fn an_initial_process_without_a_pid_is_the_root() {
    let text = "execve(\"/bin/true\", [\"true\"], 0x7ffe /* 1 var */) = 0\nexit_group(0) = ?\n+++ exited with 0 +++\n";
    let l = load("anon", text.as_bytes());
    assert!(l.engine.warnings().is_empty(), "{:?}", l.engine.warnings());
    assert_eq!(roots(&l), vec![(0, How::Launched)]);
}

/// A pid namespace torn down for real: `strace -f unshare --pid --fork sh -c ...`, the shell
/// (the namespace's init) starts two sleeps and exits, and the kernel kills them
/// (zap_pid_ns_processes). The truth comes from the shell: the sleeps' pids in the namespace
/// (`$!`) and its own host pid (the parent of a `cat` of the host's /proc). Both strace forms.
#[test]
fn a_real_namespace_teardown_is_the_zap_with_the_members_namespace_pids() {
    if !prereq::require_program("strace", "strace") || !prereq::require_root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let truth = dir.path().join("truth");
    let script = format!(
        "set -- $(cat /proc/self/stat); sleep 100 & a=$!; sleep 100 & b=$!; echo $4 $a $b > {}",
        truth.display()
    );
    for to_file in [true, false] {
        let log = strace_f(
            dir.path(),
            to_file,
            &["unshare", "--pid", "--fork", "sh", "-c", &script],
        );
        let v: Vec<u32> = std::fs::read_to_string(&truth)
            .unwrap()
            .split_whitespace()
            .map(|w| w.parse().unwrap())
            .collect();
        let (init, members) = (v[0], [v[1], v[2]]);
        let form = if to_file { "-o FILE" } else { "stderr" };
        let l = load(form, &log);
        let i = l.engine.process(init).expect("the init");
        assert_eq!(i.pidns.map(|n| n.ns_pid), Some(1), "{form}");
        for ns_pid in members {
            let m = l
                .engine
                .processes()
                .find(|p| p.pidns.is_some_and(|n| n.ns_pid == ns_pid))
                .unwrap_or_else(|| panic!("{form}: no member at pid {ns_pid} there"));
            let d = m.death().expect("dead");
            assert_eq!(
                (d.how, d.ns_init),
                (tracer::lineage::DeathHow::PidNs, Some(init)),
                "{form}: {d}"
            );
        }
    }
}

/// A parent whose SIGCHLD another of its threads dequeues (as Go's runtime does), traced
/// with `strace -f -o FILE -p`: no attach notices in the file, so the thread shows up
/// unannounced, maybe before its leader. The SIGCHLD is its process's: the model agrees. The
/// truth (pid, thread, child) comes from the program itself.
#[test]
fn a_real_sigchld_another_thread_dequeues_agrees_with_the_model() {
    use std::io::BufRead;
    if !prereq::require_program("strace", "strace") || !prereq::require_program("gcc", "gcc") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/strace_sigchld_thread.c");
    let exe = dir.path().join("sigchld_thread");
    let st = std::process::Command::new("gcc")
        .args(["-O0", "-pthread", "-o"])
        .arg(&exe)
        .arg(&src)
        .status()
        .unwrap();
    assert!(st.success(), "gcc: {st}");
    let (go, truth, log) = (
        dir.path().join("go"),
        dir.path().join("truth"),
        dir.path().join("o.log"),
    );
    let mut prog = std::process::Command::new(&exe)
        .arg(&go)
        .arg(&truth)
        .spawn()
        .unwrap();
    let mut strace = std::process::Command::new("strace")
        .args(["-f", "-o"])
        .arg(&log)
        .args(["-p", &prog.id().to_string()])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // strace says on stderr when it holds every thread: only then may the fork come
    let mut err = std::io::BufReader::new(strace.stderr.take().unwrap());
    let mut line = String::new();
    while !line.contains("attached") {
        line.clear();
        assert!(
            err.read_line(&mut line).unwrap() > 0,
            "strace ended before attaching"
        );
    }
    std::fs::write(&go, b"").unwrap();
    assert!(prog.wait().unwrap().success());
    assert!(strace.wait().unwrap().success());
    let v: Vec<u32> = std::fs::read_to_string(&truth)
        .unwrap()
        .split_whitespace()
        .map(|w| w.parse().unwrap())
        .collect();
    let (pid, child) = (v[0], v[2]);
    let l = load("-o FILE -p", &std::fs::read(&log).unwrap());
    let c = l.engine.sigchld_checks();
    assert_eq!((c.agreed, c.disagreed), (1, 0), "{:?}", l.engine.warnings());
    assert_eq!(parent_of(&l, child), Some(pid));
}
