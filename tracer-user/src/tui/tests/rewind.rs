//! Rewind and the source: seeks from snapshots match a full replay; live retention; hostile names
//! on screen.

use super::*;

fn tree_of(s: &AppState) -> String {
    tree_text(&s.engine, TreeOpts::default())
}

/// `Msg::Goto(n)` leaves the engine and counts a straight replay of the first `n` events does.
fn goto_matches_replay(s: &mut AppState, evs: &[Event], n: usize) {
    s.ingest(Msg::Goto(n));
    assert_eq!(s.position(), n);
    let want = match n {
        0 => Engine::new(),
        n => replay_until(evs, evs[n - 1].seq),
    };
    assert_eq!(tree_of(s), tree_text(&want, TreeOpts::default()), "at {n}");
    assert_eq!(s.stats.events, n as u64, "at {n}");
}

#[test]
fn rewind_matches_replay_until() {
    // Big enough to cross several snapshots.
    let evs = crate::synth::fork_tree(6_000);
    let mut s = replay_state("synth", &evs, evs.len(), (80, 24));
    for n in [evs.len() - 1, 9_000, 4_097, 4_096, 100, 1, 0] {
        goto_matches_replay(&mut s, &evs, n);
    }
    // And forward again.
    s.ingest(Msg::Events(evs.clone()));
    assert_eq!(s.position(), evs.len());

    let evs = fixture("podman");
    let mut s = replay_state("podman.log", &evs, evs.len(), (80, 24));
    let log_full: Vec<String> = s.log.lines.iter().map(|l| l.text.clone()).collect();
    s.ingest(Msg::Goto(10));
    s.ingest(Msg::Events(evs[10..].to_vec()));
    let log_again: Vec<String> = s.log.lines.iter().map(|l| l.text.clone()).collect();
    assert_eq!(log_full, log_again, "the log is rebuilt identically");
}

#[test]
fn stepping_back_a_big_replay_keeps_snapshots_and_the_log_within_bounds() {
    let evs = crate::synth::fork_tree(30_000);
    assert!(evs.len() > LOG_CAP * 3);
    let mut s = AppState::new_replay("synth");
    s.playback.max_snapshots = 4;
    s.ingest(Msg::Init {
        total: evs.len(),
        stories: Vec::new(),
    });
    s.ingest(Msg::Events(evs.clone()));
    let held = s.playback.snapshots.len();
    assert!((2..=4).contains(&held), "{held} snapshots kept");
    assert_eq!(s.log.lines.len(), LOG_CAP);
    for n in [evs.len() - 1, evs.len() / 2, LOG_CAP + 7, 10] {
        s.ingest(Msg::Goto(n));
        let want = replay_until(&evs, evs[n - 1].seq);
        assert_eq!(tree_of(&s), tree_text(&want, TreeOpts::default()), "at {n}");
        // The log is what a straight replay to n would show in its last LOG_CAP lines.
        let straight = replay_state("synth", &evs, n, (80, 24));
        let log = |s: &AppState| {
            s.log
                .lines
                .iter()
                .map(|l| l.text.clone())
                .collect::<Vec<_>>()
        };
        let (got, want) = (log(&s), log(&straight));
        if let Some(i) = (0..got.len().min(want.len())).find(|&i| got[i] != want[i]) {
            panic!("log at {n}, line {i}: {:?} != {:?}", got[i], want[i]);
        }
        assert_eq!(got.len(), want.len(), "log at {n}");
    }
}

#[test]
fn seeks_from_snapshots_match_a_full_replay_at_and_around_every_snapshot() {
    let evs = crate::synth::fork_tree(20_000);
    let mut s = AppState::new_replay("synth");
    s.ingest(Msg::Init {
        total: evs.len(),
        stories: Vec::new(),
    });
    s.ingest(Msg::Events(evs.clone()));
    let marks: Vec<usize> = s.playback.snapshots.iter().map(|x| x.index).collect();
    assert!(marks.len() >= 3, "snapshots at {marks:?}");
    let (a, b, end) = (marks[1], marks[2], evs.len());
    // Back, then forward past a snapshot (restored from it), around each snapshot, and back
    // to the end the app holds.
    let order = [0, b + 1, a - 1, end - 1, 1, a, b, a + 1, b - 1, end, 2];
    for n in order {
        goto_matches_replay(&mut s, &evs, n);
    }
}

#[tokio::test]
async fn replay_source_obeys_controls() {
    let evs = fixture("runc");
    let total = evs.len();
    let (tx, mut rx) = tokio::sync::mpsc::channel(8);
    let (ctl, ctl_rx) = tokio::sync::mpsc::channel(8);
    let opts = ReplayOpts {
        paused: true,
        ..ReplayOpts::default()
    };
    let task = tokio::spawn(replay(
        evs.iter().cloned().collect(),
        Vec::new(),
        opts,
        None,
        tx,
        ctl_rx,
        None,
    ));
    let mut s = AppState::new_replay("runc.log");
    s.ingest(recv_events(&mut rx).await);
    assert_eq!(s.playback.total, total);
    assert!(!s.playback.full_stories.is_empty());

    ctl.send(Control::Step(1)).await.unwrap();
    s.ingest(recv_events(&mut rx).await);
    assert_eq!(s.position(), 1);
    ctl.send(Control::Step(1)).await.unwrap();
    s.ingest(recv_events(&mut rx).await);
    ctl.send(Control::Step(-1)).await.unwrap();
    let m = recv_events(&mut rx).await;
    assert!(matches!(m, Msg::Goto(1)));
    s.ingest(m);
    assert_eq!(s.position(), 1);
    // Ahead of what the app holds: to the last event it holds, then the events after.
    ctl.send(Control::Seek(evs[99].seq)).await.unwrap();
    let m = recv_events(&mut rx).await;
    assert!(matches!(m, Msg::Goto(2)));
    s.ingest(m);
    s.ingest(recv_events(&mut rx).await);
    assert_eq!(s.position(), 100);
    ctl.send(Control::End).await.unwrap();
    while s.position() < total {
        s.ingest(recv_events(&mut rx).await);
    }
    ctl.send(Control::Start).await.unwrap();
    s.ingest(recv_events(&mut rx).await);
    assert_eq!(s.position(), 0);
    // Back to the end, within what the app holds: one message.
    ctl.send(Control::End).await.unwrap();
    let m = recv_events(&mut rx).await;
    assert!(matches!(m, Msg::Goto(n) if n == total));
    s.ingest(m);
    assert_eq!(s.position(), total);
    ctl.send(Control::Start).await.unwrap();
    s.ingest(recv_events(&mut rx).await);

    // Playing fast reaches the end by itself.
    ctl.send(Control::Speed(4096.0)).await.unwrap();
    ctl.send(Control::Pause(false)).await.unwrap();
    while s.position() < total {
        s.ingest(recv_events(&mut rx).await);
    }
    assert_eq!(s.position(), total);
    drop(ctl);
    tokio::time::timeout(CEILING, task)
        .await
        .expect("source ends when the app is gone")
        .expect("no panic");
}

#[test]
fn live_drops_exited_processes_after_a_while() {
    let mut evs = crate::synth::fork_tree(20);
    let exited: Vec<u32> = (3..20).step_by(3).map(|i| 1000 + i).collect();
    let mut late = evs[0].clone();
    late.seq = evs.len() as u64 + 1;
    late.ts_ns += 2 * crate::tui::state::EXITED_KEEP_NS;
    evs.push(late);
    let pids = |s: &AppState| -> Vec<u32> {
        s.tree
            .rows
            .iter()
            .filter_map(|r| s.engine.get(r.kind.proc()).map(|p| p.pid))
            .collect()
    };
    let mut live = AppState::new_live("all");
    live.ingest(Msg::Events(evs[..evs.len() - 1].to_vec()));
    live.refresh();
    assert!(
        exited.iter().all(|p| pids(&live).contains(p)),
        "recent exits shown"
    );
    live.ingest(Msg::Events(vec![evs[evs.len() - 1].clone()]));
    live.refresh();
    let shown = pids(&live);
    assert!(exited.iter().all(|p| !shown.contains(p)), "{shown:?}");
    // Their orphans were adopted and still run.
    assert!(shown.contains(&1013), "{shown:?}");
    // Replay keeps them all.
    let n = evs.len();
    let s = replay_state("synth", &evs, n, (80, 24));
    assert!(exited.iter().all(|p| pids(&s).contains(p)));
}

#[test]
fn hostile_names_and_argv_are_escaped_on_screen() {
    use crate::event::{CapturedStr, EventKind, Syscall};
    let hostile = "\x1b]0;PWNED\x07";
    let evs = vec![
        Event::bare(
            1,
            1000,
            7,
            7,
            "sh",
            EventKind::ExecEnter {
                syscall: Syscall::Execve,
                dirfd: -100,
                at_flags: 0,
                filename: CapturedStr {
                    value: "/bin/x\x1b[2J".into(),
                    truncated: false,
                },
                argv: vec![format!("x{hostile}")],
                argv_truncated: false,
            },
        ),
        Event::bare(
            2,
            2000,
            7,
            7,
            hostile,
            EventKind::Exec {
                cred: None,
                old_tid: 7,
                filename: CapturedStr {
                    value: "/bin/x\x1b[2J".into(),
                    truncated: false,
                },
            },
        ),
    ];
    let mut s = replay_state("hostile", &evs, 2, (120, 30));
    let text = screen(&mut s);
    assert!(text.contains("\\33]0;PWNED\\7"), "{text}");
    assert!(!text.contains('\x1b') && !text.contains('\x07'), "{text}");
}
