//! What an strace log shows of signals and deaths: which signals a death story lists, a
//! sender outside the receiver's pid namespace (si_pid 0) never told as pid 0, an inferred
//! sender said to be one.

use super::*;
use crate::event::SignalResult;
use crate::names::si_code::{SI_TKILL, SI_USER};

const SIGURG: i32 = 23;
const SIGWINCH: i32 = 28;

fn death_story(e: &Engine, init: u32) -> Story {
    stories(e)
        .into_iter()
        .find(|s| s.phase == Phase::Death && s.init_pid == init)
        .expect("a death story")
}

fn signal_texts(s: &Story) -> Vec<String> {
    let sent = s.steps.iter().filter(|t| t.kind == StepKind::SignalSent);
    sent.map(|t| t.text.clone()).collect()
}

/// Go's SIGURG (its own preemption, si_pid its own pid in its namespace, which the log
/// may not tie: 0) and a SIGWINCH end no one: the story lists the SIGTERM that did, sent
/// from outside the init's pid namespace (si_pid 0), never as "0 sent".
#[test]
fn a_death_story_lists_the_signals_that_end_a_process_and_no_pid_0() {
    let (mut b, init) = one_container();
    b.signal(0, "", SIGURG, SI_TKILL, init);
    b.signal(500, "shim", SIGWINCH, SI_USER, init);
    b.signal(0, "", SIGTERM, SI_USER, init);
    b.killed(init, SIGTERM);
    let e = b.engine();
    let texts = signal_texts(&death_story(&e, init));
    assert_eq!(texts.len(), 1, "{texts:?}");
    assert!(texts[0].starts_with(ending::OUTSIDE_SENDER), "{texts:?}");
    assert!(texts[0].contains("SIGTERM"), "{texts:?}");
    let death = e.process(init).and_then(|p| p.death()).unwrap();
    assert_eq!(
        death.to_string(),
        format!("killed by SIGTERM sent by {}", ending::OUTSIDE_SENDER)
    );
    assert_eq!(death.short(), "killed SIGTERM from outside its pid ns");
    // The signal that killed is listed whatever its default action: a SIGURG no one handles
    // never kills, but a fatal signal is the story's.
    let (mut b, init) = one_container();
    b.signal(500, "shim", SIGURG, SI_USER, init);
    b.signal(500, "shim", SIGKILL, SI_USER, init);
    b.killed(init, SIGKILL);
    let texts = signal_texts(&death_story(&b.engine(), init));
    assert_eq!(texts.len(), 1, "{texts:?}");
    assert!(
        texts[0].contains("SIGKILL") && texts[0].contains("500"),
        "{texts:?}"
    );
}

/// A sender the importer inferred is said to be inferred, in the story and the death.
#[test]
fn an_inferred_sender_is_told_as_inferred() {
    let (mut b, init) = one_container();
    let mut info = crate::synth::kill_info(500, init, SIGTERM, SI_USER, SignalResult::Delivered);
    info.inferred = true;
    b.push(init, init, "", EventKind::Signal(info));
    b.killed(init, SIGTERM);
    let e = b.engine();
    let texts = signal_texts(&death_story(&e, init));
    assert!(texts[0].contains("500 (inferred)"), "{texts:?}");
    let death = e.process(init).and_then(|p| p.death()).unwrap();
    assert!(
        death.to_string().contains("sent by 500 (inferred)"),
        "{death}"
    );
}

/// do_notify_parent() signals the parent's thread group; any of its threads may dequeue the
/// SIGCHLD (complete_signal()). A source that names the thread as the receiver agrees with
/// the model all the same.
#[test]
fn a_sigchld_a_thread_of_the_parent_dequeues_agrees_with_the_model() {
    let mut b = Stream::default();
    b.fork(1, 300);
    b.fork_full(
        300,
        300,
        301,
        300,
        1,
        Some(Syscall::Clone),
        Some(THREAD_FLAGS),
    );
    b.fork(300, 302);
    b.exit(302, 0);
    b.logged_sigchld(302, 301);
    let e = b.engine();
    let c = e.sigchld_checks();
    assert_eq!((c.agreed, c.disagreed), (1, 0), "{:?}", e.warnings());
}

/// The host's PID 1 that is no init system (a VM's `process_api`) is named for what it is,
/// in the one label model the tree and the viewer draw; systemd, a container's PID 1 (pid 1
/// in its own namespace) and any other pid are not.
#[test]
fn a_pid_1_that_is_no_init_system_is_the_recording_machines_init() {
    let label = |comm: &str| {
        let mut e = Engine::new();
        e.seed_snapshot(&[snap(1, 0, comm), snap(7, 1, "process_api")]);
        let one = node_label(e.process(1).unwrap(), TreeOpts::default());
        let seven = node_label(e.process(7).unwrap(), TreeOpts::default());
        (one, seven, e.process(1).unwrap().machine_init())
    };
    let (one, seven, words) = label("process_api");
    assert_eq!(one, "1 process_api (the recording machine's init)");
    assert_eq!(seven, "7 process_api");
    assert_eq!(
        words.as_deref(),
        Some("the recording machine's init (process_api)")
    );
    let (one, _, words) = label("systemd");
    assert_eq!((one.as_str(), words), ("1 systemd", None));
    // a hostile name: the label's own escape; the words are raw until written out
    let (one, _, words) = label("a\u{1b}[2J");
    assert_eq!(one, "1 a\\33[2J (the recording machine's init)");
    let words = words.unwrap();
    assert_eq!(
        crate::escape::escape(&words),
        "the recording machine's init (a\\33[2J)"
    );
}

/// A child named only after its parent's exit (an strace log names a child by its first line)
/// was born before that exit: it is the dead parent's, and that exit handed it to the reaper
/// of its pid namespace (find_new_reaper() never leaves it) — no second record of the parent.
#[test]
fn a_birth_told_after_the_parents_exit_is_that_exits_orphan() {
    let ns = |pid| Some(PidNs::inferred(1, 1, pid));
    let mut b = Stream::default();
    b.fork(1, 10);
    b.born(10, 20, 10, 0, ns(1)); // the namespace's init
    b.born(20, 21, 20, 0, ns(2)); // the subshell
    b.exit(21, 0);
    b.born(21, 22, 21, 0, ns(3)); // its child, told late
    let e = b.engine();
    assert_eq!(e.processes().filter(|p| p.pid == 21).count(), 1);
    let orphan = e.process(22).expect("the orphan");
    assert_eq!(orphan.ppid, 20, "{:?}", orphan.lineage);
    assert!(orphan.last_adoption().is_some());
    assert!(e.warnings().is_empty(), "{:?}", e.warnings());
}

/// A process whose birth the log lost: the process its SIGCHLD went to is its parent, said
/// so; a SIGCHLD to another process than a known parent is still a disagreement.
#[test]
fn a_sigchld_names_the_parent_the_log_did_not_show() {
    let mut b = Stream::default();
    b.fork(1, 30);
    b.exec(40, "/bin/sleep", &["sleep"]); // birth not in the log
    b.exit(40, 0);
    b.logged_sigchld(40, 30);
    b.fork(30, 41);
    b.exit(41, 0);
    b.logged_sigchld(41, 1);
    let e = b.engine();
    let p = e.process(40).unwrap();
    assert_eq!((p.ppid, p.parent_from_sigchld().is_some()), (30, true));
    let label = view::node_label(p, Default::default());
    assert!(
        label.contains("(parent inferred from its SIGCHLD)"),
        "{label}"
    );
    let disagreed = e.warnings().iter().any(|w| {
        matches!(
            w.kind,
            WarningKind::SigchldDisagreement {
                pid: 41,
                model: 30,
                kernel: 1
            }
        )
    });
    assert!(disagreed, "{:?}", e.warnings());
}

/// An exec whose result the input never gave is what its process ran, once the input ends;
/// a later result takes its place.
#[test]
fn an_exec_without_its_result_is_taken_as_run_at_the_inputs_end() {
    let mut b = Stream::default();
    b.fork(1, 50);
    b.exec_enter(
        50,
        50,
        "/usr/bin/containerd-shim-runc-v2",
        &["containerd-shim-runc-v2", "-id", "c1"],
    );
    let mut e = b.engine();
    assert_eq!(e.process(50).unwrap().role, None);
    e.end_of_input();
    let p = e.process(50).unwrap();
    assert!(p.exec_unconfirmed());
    assert_eq!(p.role, Some(Role::Shim));
    e.end_of_input(); // once
    assert_eq!(e.process(50).unwrap().execs.len(), 1);
}
