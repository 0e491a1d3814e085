//! Snapshot tests (TestBackend + insta) on the real strace fixtures, reducer and key tests,
//! and the replay source driven through its channels.

use std::path::PathBuf;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::style::Color;
use ratatui::Terminal;

use super::action::{key_action, Action};
use super::msg::{Control, Msg};
use super::reduce::reduce;
use super::source::{replay, ReplayOpts};
use super::state::{AppState, Mode, Pane, RowKind, LOG_CAP};
use super::ui::draw;
use crate::event::{Event, EventKind};
use crate::lineage::{replay_until, tree_text, Engine, TreeOpts};

/// How long the replay source may take to answer before the test fails: generous (a loaded
/// machine is slow, not wrong); every wait ends as soon as the answer comes.
const CEILING: std::time::Duration = std::time::Duration::from_secs(60);

fn fixture(name: &str) -> Vec<Event> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/strace")
        .join(format!("{name}.log"));
    let text = std::fs::read_to_string(&path).expect("fixture");
    crate::strace::parse_log(&text).expect("import").events
}

fn stories_of(events: &[Event]) -> Vec<crate::lineage::Story> {
    let mut e = Engine::new();
    events.iter().for_each(|ev| e.apply(ev));
    crate::lineage::stories(&e)
}

/// A replay state with the first `upto` events of `events` applied, the clock far past any
/// highlight.
fn replay_state(title: &str, events: &[Event], upto: usize, size: (u16, u16)) -> AppState {
    let mut s = AppState::new_replay(title);
    s.view.size = size;
    s.playback.paused = true;
    s.ingest(Msg::Init {
        total: events.len(),
        stories: stories_of(events),
    });
    s.ingest(Msg::Events(events[..upto].to_vec()));
    s.set_now(60_000);
    s.refresh();
    s
}

fn at_end(name: &str, size: (u16, u16)) -> AppState {
    let evs = fixture(name);
    let n = evs.len();
    replay_state(&format!("{name}.log"), &evs, n, size)
}

fn render(s: &mut AppState) -> Terminal<TestBackend> {
    let mut t = Terminal::new(TestBackend::new(s.view.size.0, s.view.size.1)).expect("terminal");
    s.refresh();
    t.draw(|f| draw(f, s)).expect("draw");
    t
}

fn screen(s: &mut AppState) -> String {
    render(s).backend().to_string()
}

fn key(c: char) -> Action {
    let s = AppState::new_live("t");
    key_action(&KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE), &s).expect("mapped")
}

fn keys(s: &mut AppState, acts: &[Action]) -> Vec<Control> {
    acts.iter().flat_map(|a| reduce(s, a.clone())).collect()
}

fn select_pid(s: &mut AppState, pid: u32) {
    let id = s.engine.process(pid).expect("pid").id;
    s.tree.selected = Some(RowKind::Proc(id));
    s.refresh();
}

fn search(s: &mut AppState, q: &str) {
    reduce(s, Action::SearchStart);
    for c in q.chars() {
        reduce(s, Action::SearchChar(c));
    }
    reduce(s, Action::SearchConfirm);
}

async fn recv_any(rx: &mut tokio::sync::mpsc::Receiver<Msg>) -> Msg {
    tokio::time::timeout(CEILING, rx.recv())
        .await
        .expect("source answered")
        .expect("source alive")
}

/// The source's next message but the search's index.
async fn recv_events(rx: &mut tokio::sync::mpsc::Receiver<Msg>) -> Msg {
    loop {
        match recv_any(rx).await {
            Msg::Index(_) => continue,
            m => return m,
        }
    }
}

/// A guided replay as the source opens it: paused right after the first story step.
async fn guided_state(name: &str, size: (u16, u16)) -> (AppState, Vec<Event>) {
    let evs = fixture(name);
    let (tx, mut rx) = tokio::sync::mpsc::channel(8);
    let (_ctl, ctl_rx) = tokio::sync::mpsc::channel(8);
    let opts = ReplayOpts {
        guided: true,
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
    let mut s = AppState::new_replay(format!("{name}.log"));
    s.view.size = size;
    s.guide();
    s.ingest(recv_events(&mut rx).await); // Init
    let index = recv_any(&mut rx).await;
    assert!(matches!(index, Msg::Index(_)), "the search's index follows");
    s.ingest(index);
    s.ingest(recv_events(&mut rx).await); // up to the first step
                                          // Paused: nothing more comes.
    let more = tokio::time::timeout(std::time::Duration::from_millis(300), rx.recv()).await;
    assert!(more.is_err(), "a guided replay starts paused");
    task.abort();
    s.set_now(60_000);
    s.refresh();
    (s, evs)
}

fn guided() -> ReplayOpts {
    ReplayOpts {
        guided: true,
        ..ReplayOpts::default()
    }
}

/// What the replay source does with the seeks in `c`.
fn seek(s: &mut AppState, evs: &[Event], c: &[Control]) {
    for c in c {
        if let Control::Seek(q) = c {
            let n = evs.iter().position(|e| e.seq > *q).unwrap_or(evs.len());
            if n >= s.position() {
                s.ingest(Msg::Events(evs[s.position()..n].to_vec()));
            } else {
                s.ingest(Msg::Goto(n));
            }
        }
    }
    s.refresh();
}

// ---- the tests, one file per topic ----

mod pods;
mod reach_and_quiz;
mod reducer;
mod rewind;
mod screens;
mod seek;
mod teaching;
mod training;
