//! Logs as people find them (docs/strace-import.md): old strace's clones, excerpts' threads,
//! execs cut by the log's end, pasted text. The corpus (tests/tests/golden/corpus.rs) has the
//! real ones; these pin each rule on a few lines.

use super::*;

/// strace before 5.3: `clone( <unfinished ...>`, the flags at the return. The child, named by
/// its notice while the call was open, is what the flags make it: a CLONE_PARENT child of the
/// caller's parent, a thread of the caller's process (its events so far rewritten too).
#[test]
fn old_strace_gives_clone_flags_at_the_return() {
    let imp = parse(concat!(
        "[pid 10] fork() = 11\n",
        "strace: Process 11 attached\n",
        "[pid 11] clone( <unfinished ...>\n",
        "strace: Process 12 attached\n",
        "[pid 12] prctl(PR_SET_NAME, \"stage\") = 0\n",
        "[pid 11] <... clone resumed> child_stack=NULL, flags=CLONE_PARENT|SIGCHLD) = 12\n",
        "[pid 11] clone( <unfinished ...>\n",
        "strace: Process 13 attached\n",
        "[pid 13] prctl(PR_SET_NAME, \"worker\") = 0\n",
        "[pid 11] <... clone resumed> child_stack=0x7f00, flags=CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD|CLONE_SYSVSEM, parent_tidptr=0x1, tls=0x2, child_tidptr=0x3) = 13\n",
    ));
    assert_eq!(imp.unreadable, 0, "{:?}", imp.first_unreadable);
    let f = forks(&imp);
    assert_eq!(f[1], (11, 12, 12, Some(CLONE_PARENT)), "{f:?}");
    let thread_flags = f[2].3.expect("flags");
    assert_eq!((f[2].1, f[2].2), (13, 11));
    assert!(thread_flags & cf::CLONE_THREAD != 0);
    let parent_of_12 = imp.events.iter().find_map(|e| match e.kind {
        K::Fork {
            child_tid: 12,
            child_ppid,
            ..
        } => Some(child_ppid),
        _ => None,
    });
    assert_eq!(parent_of_12, Some(10), "CLONE_PARENT: the caller's parent");
    // the thread's rename, printed before its clone returned, is its process's
    let rename = imp.events.iter().find(|e| e.tid == 13).map(|e| e.tgid);
    assert_eq!(rename, Some(11));
    // the caller's entry carries the flags too
    let enters: Vec<u64> = imp
        .events
        .iter()
        .filter_map(|e| match e.kind {
            K::CloneEnter { flags, .. } => Some(flags.0),
            _ => None,
        })
        .collect();
    assert_eq!(enters[1], CLONE_PARENT, "{enters:?}");
}

/// `attached with 3 threads`: unknown pids are its threads only tentatively. One that execs
/// as itself, one a SIGCHLD names, one whose exit_group leaves the process running: each a
/// process of its own; a real thread stays one.
#[test]
fn an_attach_notices_count_gives_threads_only_until_the_log_says_otherwise() {
    let imp = parse(concat!(
        "strace: Process 100 attached with 3 threads\n",
        "[pid 101] clone(child_stack=NULL, flags=CLONE_VM|CLONE_VFORK|SIGCHLD <unfinished ...>\n",
        "[pid 205] execve(\"/usr/bin/shim\", [\"shim\"], 0x1 /* 1 var */) = 0\n",
        "[pid 206] exit_group(0) = ?\n",
        "[pid 206] +++ exited with 0 +++\n",
        "[pid 101] clone(child_stack=NULL, flags=SIGCHLD) = 300\n",
    ));
    assert_eq!(imp.unreadable, 0, "{:?}", imp.first_unreadable);
    let tgid_of = |tid: u32| imp.events.iter().find(|e| e.tid == tid).map(|e| e.tgid);
    // 101 a thread of 100 (nothing says otherwise); 205 exec'd as itself
    assert_eq!(tgid_of(101), Some(100));
    assert_eq!(tgid_of(205), Some(205));
    // 206 called exit_group, and its supposed process called again after it: not 100's
    assert_eq!(tgid_of(206), Some(206));
    let end = imp.events.iter().find_map(|e| match e.kind {
        K::TaskExit { group_dead, .. } if e.tid == 206 => Some(group_dead),
        _ => None,
    });
    assert_eq!(end, Some(true), "a leader's end is its process's");
}

/// strace killed in a call: the exec attempts still open are counted; readers take them as
/// run (`Engine::end_of_input`).
#[test]
fn execs_cut_by_the_logs_end_are_counted() {
    let imp = parse(concat!(
        "[pid 10] clone(child_stack=NULL, flags=SIGCHLD) = 11\n",
        "[pid 11] execve(\"/usr/sbin/runc\", [\"runc\", \"create\", \"c1\"], 0x1 /* 1 var */ <unfinished ...>\n",
    ));
    assert_eq!(imp.unfinished_execs, 1);
}

/// Text pasted into mail: quoted, wrapped inside the errno's comment and inside a word, with
/// a prompt above it and colour in it; one line per event, nothing unreadable, the joins and
/// the prompt counted.
#[test]
fn pasted_text_reads_as_the_log_it_was() {
    let imp = parse(concat!(
        "> $ strace -f -o log sh\n",
        "> 10 execve(\"/nope\", [\"x\"], 0x1 /* 1 var */) = -1 ENOENT (No such \n",
        "> file or directory)\n",
        "> 10 execve(\"/bin/true\", [\"true\"], 0x1 /* 1 var */) = 0\n",
        "> \u{1b}[01;31m10\u{1b}[m clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|CLONE_CHILD_SE\n",
        "> TTID|SIGCHLD, child_tidptr=0x7f) = 11\n",
    ));
    assert_eq!(imp.unreadable, 0, "{:?}", imp.first_unreadable);
    assert_eq!((imp.rejoined, imp.prompts), (2, 1));
    assert_eq!(forks(&imp).len(), 1);
    assert_eq!(execs(&imp), [(10, "/bin/true".to_string())]);
}
