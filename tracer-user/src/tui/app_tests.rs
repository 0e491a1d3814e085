//! The whole viewer, as the user meets it, on a fake terminal: a real replay or a scripted
//! live source, keys pressed, the screen read as it is drawn, and the loop's end
//! (`tui/fake.rs`). The tmux tests (`tests/tests/`) keep the real terminal.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use crossterm::event::KeyCode;

use super::fake::{terminal, Kept, Keys, Step};
use super::{AppState, LiveOpts, Recording, ReplayOpts};
use crate::event::Event;
use crate::lineage::Engine;

/// Longest a whole-app test may run before its loop counts as stuck.
const STUCK: Duration = Duration::from_secs(60);

fn shows(t: impl Into<String>) -> Step {
    Step::Shows(t.into())
}

fn char(c: char) -> Step {
    Step::Key(KeyCode::Char(c))
}

/// The bundled pod demo, as the viewer opens a recording, and its events read on their own.
fn pod_demo() -> (Recording, Vec<Event>) {
    let mut input = crate::demo::Demo::Pod.open().expect("demo");
    let seed = input.snapshot();
    let events: Vec<Event> = input.by_ref().collect::<Result<_, _>>().expect("events");
    let rec = Recording {
        events: events.iter().cloned().collect(),
        seed,
        title: "demo".into(),
        tail: None,
        pod: None,
    };
    (rec, events)
}

/// Runs a replay of `rec` at `size` with `steps` to its end; the final state, the screen.
async fn replay(
    rec: Recording,
    opts: ReplayOpts,
    size: (u16, u16),
    steps: Vec<Step>,
) -> (AppState, super::fake::Screen) {
    let (mut term, screen) = terminal(size.0, size.1);
    let mut keys = Keys::new(&screen, steps);
    let app = super::app::replay_app(rec, opts, &mut term, &mut keys, false);
    let state = to_quit(app).await;
    script_done(&state, &keys);
    (state, screen)
}

/// The viewer `app` run to its end, which must come (on `q`) and be no failure.
async fn to_quit(
    app: impl std::future::Future<Output = Result<AppState, super::TuiError>>,
) -> AppState {
    tokio::time::timeout(STUCK, app)
        .await
        .expect("the viewer did not end on q")
        .expect("the viewer failed")
}

/// The viewer quit once its script was played whole.
fn script_done(state: &AppState, keys: &Keys) {
    assert_eq!(keys.left(), 0, "the viewer ended before the script did");
    assert!(state.quit);
}

#[tokio::test]
async fn a_replay_goes_to_its_end_and_start_and_steps_on_the_keys_then_quits() {
    let (rec, events) = pod_demo();
    let n = events.len();
    let paused = ReplayOpts {
        paused: true,
        ..ReplayOpts::default()
    };
    let steps = vec![
        shows(format!("event 0/{n} ")),
        char('G'),
        shows(format!("event {n}/{n} end")),
        char('g'),
        shows(format!("event 0/{n} ")),
        char('.'),
        char('.'),
        shows(format!("event 2/{n} ")),
        char(','),
        shows(format!("event 1/{n} ")),
        char('q'),
    ];
    let (state, screen) = replay(rec, paused, (100, 30), steps).await;
    assert_eq!(state.last_seq(), Some(events[0].seq));
    assert_eq!(screen.text().lines().count(), 30);
}

#[tokio::test]
async fn a_search_selects_its_process_and_a_resize_redraws_at_the_new_size() {
    let (rec, events) = pod_demo();
    // The truth: the recording's bridge plugins (one per sandbox), by their names in the
    // engine's records, in the order of their births.
    let mut e = Engine::seeded(&rec.seed);
    events.iter().for_each(|ev| e.apply(ev));
    let mut bridges: Vec<(u64, u32)> = e
        .processes()
        .filter(|p| p.name() == "bridge")
        .map(|p| (p.start_seq, p.pid))
        .collect();
    bridges.sort();
    let (n, first) = (bridges.len(), bridges[0].1);
    assert!(n > 1, "{bridges:?}");
    let end = ReplayOpts {
        at_end: true,
        paused: true,
        ..ReplayOpts::default()
    };
    let steps = vec![
        shows(" end"),
        char('/'),
        Step::Type("bridge".into()),
        shows("/bridge█"),
        Step::Key(KeyCode::Enter),
        shows(format!("match 1/{n} for \"bridge\"")),
        // The detail pane (from 120 columns) names the selected process.
        shows(format!("process {first}")),
        char('n'),
        shows(format!("match 2/{n} for \"bridge\"")),
        shows(format!("process {}", bridges[1].1)),
        Step::Resize(80, 24),
        Step::Drawn(80, 24),
        char('q'),
    ];
    let (state, screen) = replay(rec, end, (160, 45), steps).await;
    assert_eq!(state.selected_process().map(|p| p.pid), Some(bridges[1].1));
    // The frame, and the size the state lays out clicks and scrolling by.
    let text = screen.text();
    assert_eq!(state.view.size, (80, 24));
    assert_eq!(text.lines().count(), 24, "{text}");
    assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
}

#[tokio::test]
async fn the_guided_walk_moves_through_a_story_step_by_step() {
    let (rec, events) = pod_demo();
    let mut e = Engine::seeded(&rec.seed);
    events.iter().for_each(|ev| e.apply(ev));
    // The truth: the first story's steps, in order (the guided view opens at its first).
    let stories = crate::lineage::stories(&e);
    let first = stories
        .iter()
        .min_by_key(|st| st.steps.first().map(|s| s.seq))
        .expect("a story");
    let seqs: Vec<u64> = first.steps.iter().map(|s| s.seq).collect();
    assert!(seqs.len() >= 3, "{seqs:?}");
    let guided = ReplayOpts {
        guided: true,
        ..ReplayOpts::default()
    };
    // A step is reached when the replay's position is its event: the events up to its seq.
    let n = events.len();
    let at = |k: usize| {
        let pos = events.iter().take_while(|ev| ev.seq <= seqs[k]).count();
        shows(format!("step seq {} │ event {pos}/{n}", seqs[k]))
    };
    let steps = vec![
        at(0),
        char(']'),
        at(1),
        char(']'),
        at(2),
        char('['),
        at(1),
        char('q'),
    ];
    replay(rec, guided, (120, 40), steps).await;
}

/// `event N/M` on the screen: the position it shows.
fn position(text: &str) -> usize {
    let at = text.find("event ").expect("a position") + "event ".len();
    let digits: String = text[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().expect("a number")
}

#[tokio::test]
async fn space_pauses_a_playing_replay_and_plays_it_again() {
    let (rec, events) = pod_demo();
    let n = events.len();
    let (mut term, screen) = terminal(100, 30);
    // Played at a pace the test can see: the position stops while paused, then moves on.
    let slow = ReplayOpts {
        speed: 0.5,
        ..ReplayOpts::default()
    };
    let (paused, looked) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let steps = vec![
        shows("▶ 1/2x"),
        char(' '),
        shows("⏸ 1/2x"),
        Step::Cue(paused.clone()),
        Step::Until(looked.clone()),
        char(' '),
        shows("▶ 1/2x"),
        Step::Cue(paused.clone()),
    ];
    let mut keys = Keys::new(&screen, steps);
    let app = super::app::replay_app(rec, slow, &mut term, &mut keys, false);
    let watch = async {
        let at = || position(&screen.text());
        let cue = |c: &AtomicBool| c.swap(false, std::sync::atomic::Ordering::SeqCst);
        while !cue(&paused) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let held = at();
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert_eq!(at(), held, "the position moved while paused");
        looked.store(true, std::sync::atomic::Ordering::SeqCst);
        while !cue(&paused) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let end = std::time::Instant::now() + Duration::from_secs(30);
        while at() == held && std::time::Instant::now() < end {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        (held, at())
    };
    tokio::select! {
        _ = app => panic!("the viewer ended"),
        (held, later) = watch => assert!(held < later && later <= n, "{held} → {later}"),
    }
}

#[tokio::test]
async fn the_live_viewer_on_a_script_pauses_resumes_and_records_until_q() {
    use crate::source::{Script, Scripted};
    use crate::synth::{exec, exit, fork, process};
    let cue = Arc::new(AtomicBool::new(false));
    // containerd starts a shim, three events are lost; once the user paused, the shim starts
    // a sleep and everything exits.
    let host = vec![process(1, 0, "init"), process(100, 1, "containerd")];
    let script = Script::new(Some(100), host)
        .then(Scripted::Events(vec![
            fork(100, 101),
            exec(101, "/usr/bin/containerd-shim-runc-v2"),
        ]))
        .then(Scripted::Drop(3))
        .then(Scripted::Until(cue.clone()))
        .then(Scripted::Events(vec![
            fork(101, 102),
            exec(102, "/bin/sleep"),
        ]))
        .then(Scripted::Events(vec![
            exit(102, 0),
            exit(101, 0),
            exit(100, 0),
        ]));
    let kept = Kept::default();
    let opts = LiveOpts {
        title: "pid 100".into(),
        recorder: Some(Box::new(kept.clone())),
        record_path: Some("kept.trace".into()),
        ..LiveOpts::default()
    };
    let (mut term, screen) = terminal(100, 30);
    let steps = vec![
        shows("containerd-shim"),
        shows("drops 3"),
        shows("● rec kept.trace"),
        char(' '),
        shows("⏸ paused +0"),
        Step::Cue(cue),
        // The five events wait: nothing of them is drawn.
        shows("⏸ paused +5"),
        Step::Lacks("sleep".into()),
        char(' '),
        Step::Hides("paused".into()),
        shows("sleep"),
        shows("target exited"),
        char('q'),
    ];
    let mut keys = Keys::new(&screen, steps);
    let app = super::app::live_app(script, opts, &mut term, &mut keys, false);
    let (state, task) = tokio::time::timeout(STUCK, app)
        .await
        .expect("the live viewer did not end on q");
    let state = state.expect("the live viewer failed");
    assert!(state.quit && keys.left() == 0);
    tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .expect("the source outlived the viewer")
        .unwrap();
    // The script's own numbering: 1-2, three lost (3-5), then 6-10.
    let (recorded, drops) = kept.0.lock().unwrap().clone();
    let seqs: Vec<u64> = recorded.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, [1, 2, 6, 7, 8, 9, 10]);
    assert_eq!(drops, Some(3));
    assert_eq!(state.stats.events, 7);
}

// ---- the log's styling ----

/// The style of the cell where `needle` starts on the screen.
fn style_at(b: &ratatui::buffer::Buffer, needle: &str) -> ratatui::style::Style {
    for y in 0..b.area.height {
        let cells: Vec<(u16, &str)> = (0..b.area.width).map(|x| (x, b[(x, y)].symbol())).collect();
        let row: String = cells.iter().map(|c| c.1).collect();
        if let Some(at) = row.find(needle) {
            // Every symbol before it is one byte wide here (the log's ASCII, the pane's edge
            // excepted): count the cells whose symbols fill the bytes before it.
            let mut bytes = 0;
            let x = cells.iter().find(|c| {
                let here = bytes;
                bytes += c.1.len();
                here == at
            });
            return b[(x.expect("a cell").0, y)].style();
        }
    }
    panic!("{needle:?} is not on the screen");
}

#[test]
fn the_log_dims_a_task_end_by_its_event_never_by_its_text() {
    use crate::synth::{exec_argv, exit, fork, process};
    use ratatui::style::Modifier;
    // A command whose own text says what an exit line says.
    let argv = ["sh", "-c", "echo exited with 0; echo killed by SIGKILL"];
    let mut evs = vec![fork(100, 101)];
    evs.extend(exec_argv(101, "/bin/sh", &argv));
    evs.push(exit(101, 0));
    for (i, ev) in evs.iter_mut().enumerate() {
        ev.seq = i as u64 + 1;
        ev.ts_ns = ev.seq * 1_000;
    }
    let mut s = AppState::new_live("t");
    // No syscall exits: the exec's line is complete at the exec.
    s.set_sched_probes(true);
    s.ingest(super::Msg::Seed(vec![process(100, 1, "sh")]));
    s.ingest(super::Msg::Events(evs));
    s.view.size = (160, 30);
    s.refresh();
    let Ok(mut t) = ratatui::Terminal::new(ratatui::backend::TestBackend::new(160, 30));
    t.draw(|f| super::draw(f, &s)).expect("drawn");
    let b = t.backend().buffer();
    let dim = |needle: &str| style_at(b, needle).add_modifier.contains(Modifier::DIM);
    assert!(dim("+++ exited with 0 +++"), "the exit line is not dim");
    assert!(
        !dim("execve(\"/bin/sh\""),
        "the exec line is dim for its argv"
    );
}

/// A node's recording: one process forked from pid 1 that execs `path`.
fn node_recording(pid: u32, path: &str) -> Recording {
    let events = [crate::synth::fork(1, pid), crate::synth::exec(pid, path)];
    Recording {
        events: events.iter().cloned().collect(),
        seed: vec![crate::synth::process(1, 0, "init")],
        title: "nats://server/*".into(),
        tail: None,
        pod: None,
    }
}

/// Node `name`'s frame: its place on the status bar, its own process and no other node's.
fn on(name: &str, place: &str) -> Vec<Step> {
    let mut v = vec![
        shows(format!("node {name} ({place})")),
        shows(format!("{name}proc")),
    ];
    for other in ["alpha", "beta", "gamma"]
        .into_iter()
        .filter(|o| *o != name)
    {
        v.push(Step::Lacks(format!("{other}proc")));
    }
    v
}

#[tokio::test]
async fn across_nodes_the_node_keys_reopen_the_next_and_previous_node_round_the_list() {
    let names: Vec<String> = ["alpha", "beta", "gamma"].map(String::from).into();
    let mut opened = Vec::new();
    let mut open = |i: usize| {
        opened.push(i);
        let path = format!("/bin/{}proc", names[i]);
        let at_end = ReplayOpts {
            at_end: true,
            ..ReplayOpts::default()
        };
        Ok((node_recording(40, &path), at_end))
    };
    let mut steps = on("alpha", "1/3");
    steps.push(char('}'));
    steps.extend(on("beta", "2/3"));
    steps.push(char('}'));
    steps.extend(on("gamma", "3/3"));
    // Past the last node: round to the first, and back from the first to the last.
    steps.push(char('}'));
    steps.extend(on("alpha", "1/3"));
    steps.push(char('{'));
    steps.extend(on("gamma", "3/3"));
    steps.push(char('q'));
    let (mut term, screen) = terminal(120, 30);
    let mut keys = Keys::new(&screen, steps);
    let app = super::app::nodes_app(&names, &mut open, &mut term, &mut keys, false);
    let state = to_quit(app).await;
    script_done(&state, &keys);
    assert_eq!(
        opened,
        [0, 1, 2, 0, 2],
        "each switch opens the node asked for"
    );
}
