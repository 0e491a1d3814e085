//! The restart experiment: a runtime daemon restarted, its survivors and losses.

use super::*;

#[test]
fn a_restarted_daemon_lists_survivors_and_losses() {
    let (b, died) = restart_stream();
    let e = b.engine();
    let rs = restart::runtime_restarts(&e);
    assert_eq!(rs.len(), 1, "{rs:?}");
    let r = &rs[0];
    assert_eq!(
        (r.daemon.as_str(), r.old_pid, r.new_pid),
        ("containerd", 100, 200)
    );
    assert_eq!(r.exit_seq, died);
    assert!(r.seq > died);
    let shim = r
        .survivors
        .iter()
        .find(|s| s.pid == 111)
        .expect("the shim survived");
    assert_eq!(shim.role.as_deref(), Some("shim"));
    assert_eq!(shim.parent, 1);
    assert_eq!(shim.container_id.as_deref(), Some("c1"));
    assert!(r.survivors.iter().all(|s| s.pid != 140 && s.pid != 150));
    let what: Vec<(u32, &str)> = r.lost.iter().map(|l| (l.pid, l.what)).collect();
    assert_eq!(
        what,
        vec![(140, "reparented"), (150, "exited")],
        "{:?}",
        r.lost
    );
    let text = restart::restarts_text(&rs);
    assert!(text.contains("containerd restarted: 100 exited"), "{text}");
    assert!(text.contains("survived: 111 [shim] container c1"), "{text}");
}

#[test]
fn a_daemon_that_stays_down_is_no_restart() {
    let (mut b, _) = restart_stream();
    b.events.truncate(b.events.len() - 3);
    assert!(restart::runtime_restarts(&b.engine()).is_empty());
    let mut other = Stream::default();
    other.fork(1, 100);
    other.exec(100, "/usr/bin/containerd", &["containerd"]);
    other.fork(1, 200);
    other.exec(200, "/usr/bin/containerd", &["containerd"]);
    other.exit(100, 0);
    assert!(
        restart::runtime_restarts(&other.engine()).is_empty(),
        "a daemon started before the old one exited is no restart"
    );
}
