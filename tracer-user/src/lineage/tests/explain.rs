//! Each explanation checked against the facts of the synthetic story it is told in: a
//! foreground `runc run`, a `runc create` by hand, podman's conmon.

use super::*;
use crate::lineage::explain::check::{failures, whys};

/// The runtime `rt`'s `runc init` stages, pids `rt + 1` to `rt + 3`: PARENT clones CHILD,
/// CHILD clones INIT (both with CLONE_PARENT), then CHILD and PARENT exit.
fn runc_stages(b: &mut Stream, rt: u32) {
    let (parent, child, init) = (rt + 1, rt + 2, rt + 3);
    b.fork(rt, parent);
    b.runc_init_stages(parent, child, init);
}

/// A `runc run` in the foreground from a shell: no shim, INIT never adopted, its death's
/// SIGCHLD to `runc run`.
#[test]
fn a_foreground_runc_run_is_told_without_a_shim() {
    let mut b = Stream::default();
    b.fork(1, 700);
    b.exec(700, "/usr/bin/runc", &["runc", "run", "box"]);
    runc_stages(&mut b, 700);
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
    assert!(
        started[0].contains("create and start in one"),
        "{started:?}"
    );
}

/// A `runc create` from a shell: INIT goes to pid 1, told by find_new_reaper's last rule.
#[test]
fn a_runc_create_by_hand_leaves_init_to_pid_1() {
    let mut b = Stream::default();
    b.fork(1, 700);
    b.exec(700, "/usr/bin/runc", &["runc", "create", "box"]);
    runc_stages(&mut b, 700);
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
    let mut b = Stream::default();
    b.fork(1, 500);
    b.exec(500, "/usr/bin/podman", &["podman", "run"]);
    b.fork(500, 600);
    let argv = [
        "/usr/bin/conmon",
        "--api-version",
        "1",
        "-c",
        "C0FFEE",
        "-u",
        "C0FFEE",
    ];
    b.exec(600, "/usr/bin/conmon", &argv);
    b.fork(600, 601);
    b.exit(600, 0);
    b.subreaper(601, 601, true);
    b.fork(601, 610);
    let runc = ["/usr/bin/runc", "create", "--bundle", "/b/C0FFEE", "C0FFEE"];
    b.exec(610, "/usr/bin/runc", &runc);
    runc_stages(&mut b, 610);
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
