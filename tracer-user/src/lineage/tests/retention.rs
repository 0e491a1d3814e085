//! Retention: bounded live state.

use super::*;

/// `n` short-lived children of `parent`, pids from `from`.
fn churn(b: &mut Stream, parent: u32, from: u32, n: u32) {
    for pid in from..from + n {
        b.fork(parent, pid);
        b.exit(pid, 0);
    }
}

fn engine_with(b: &Stream, r: Retention) -> Engine {
    let mut e = Engine::with_retention(r);
    e.seed_snapshot(&[snap(1, 0, "systemd")]);
    for ev in &b.events {
        e.apply(ev);
    }
    e
}

const SMALL: Retention = Retention {
    max_exited: 100,
    max_age_ns: u64::MAX,
};

#[test]
fn retention_keeps_live_processes_their_creators_and_adoptions_while_bounded() {
    let mut b = Stream::default();
    b.fork(1, 100); // a live shell
    b.fork(100, 300);
    b.fork(300, 301);
    b.fork(301, 302); // live grandchild of 300
    b.exit(301, 0); // 302 adopted by init, created by 301
    b.exit(300, 0);
    churn(&mut b, 100, 10_000, 20_000);
    let e = engine_with(&b, SMALL);
    let all = b.engine();
    // Bounded: the window, the live ones and a batch's slack, not 20,000.
    assert!(
        e.process_count() < 100 + 2 * 1024 + 10,
        "{}",
        e.process_count()
    );
    assert_eq!(e.pruned() as usize + e.process_count(), all.process_count());
    let p = e.process(302).expect("live process kept");
    assert_eq!(
        (p.ppid, p.parent.and_then(|i| e.get(i)).map(|q| q.pid)),
        (1, Some(1))
    );
    assert_eq!(reasons(&e, 302), reasons(&all, 302));
    let creator = p.creator.and_then(|c| e.get(c)).map(|c| c.pid);
    let birth = p.birth_parent.and_then(|c| e.get(c)).map(|c| c.pid);
    assert_eq!((creator, birth), (Some(301), Some(301)));
    // The creator's own creator stays too: no held record points to a dropped one.
    for q in e.processes() {
        for id in [q.parent, q.creator, q.birth_parent].into_iter().flatten() {
            assert!(
                e.get(id).is_some(),
                "pid {} points to a dropped record",
                q.pid
            );
        }
        for c in e.children_of(q) {
            assert!(e.get(c.id).is_some());
        }
    }
    assert!(child_pids(&e, 1).contains(&302));
    assert!(!child_pids(&e, 100).contains(&10_000), "old exits dropped");
    assert!(
        child_pids(&e, 100).contains(&29_999),
        "the newest exits kept"
    );
    // The newest exits are in the window, in order.
    let kept: Vec<u32> = e.children(100).iter().map(|c| c.pid).collect();
    assert!(kept.windows(2).all(|w| w[0] < w[1]));
    assert!(kept.len() >= 100);
}

#[test]
fn retention_keeps_the_stories_through_churn() {
    let (mut b, _) = containerd_story();
    churn(&mut b, 1, 100_000, 5_000);
    let e = engine_with(&b, SMALL);
    let all = b.engine();
    assert!(e.pruned() >= 4_000, "{}", e.pruned());
    let text = |e: &Engine| story_text(&stories(e));
    assert_eq!(text(&e), text(&all));
    assert_eq!(stories(&e).len(), 1);
    // The container ends: its story outlives the window.
    b.exit(1013, 0);
    churn(&mut b, 1, 200_000, 5_000);
    let (e, all) = (engine_with(&b, SMALL), b.engine());
    assert!(e.pruned() >= 9_000, "{}", e.pruned());
    assert_eq!(text(&e), text(&all));
}

#[test]
fn retention_drops_exits_older_than_the_age_window() {
    let mut b = Stream::default();
    b.fork(1, 100);
    churn(&mut b, 100, 1000, 3000);
    // Events are 1 µs apart, 3 per child: the last 500 µs hold about 167 exits.
    let r = Retention {
        max_exited: usize::MAX / 2,
        max_age_ns: 500_000,
    };
    let mut e = engine_with(&b, r);
    e.prune_now(b.events.last().unwrap().ts_ns);
    let exited = e.processes().filter(|p| p.exited).count();
    assert!((160..=170).contains(&exited), "{exited}");
    assert_eq!(e.process(100).map(|p| p.exited), Some(false));
    // Without a retention nothing is dropped.
    assert_eq!(b.engine().pruned(), 0);
    assert_eq!(b.engine().process_count(), 3002);
}
