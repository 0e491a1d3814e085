//! Teaching: the selected story, its layout, threads, the opening.

use super::*;

/// A replay state on the bundled pod demo, opened as the viewer opens it.
fn demo_state(opts: &ReplayOpts, size: (u16, u16)) -> AppState {
    let mut input = crate::demo::Demo::Pod.open().expect("demo");
    let seed = input.snapshot();
    let events: crate::tracefile::PackedEvents =
        input.by_ref().collect::<Result<_, _>>().expect("events");
    let mut s = crate::tui::replay_state("demo".into(), None, &seed, opts);
    for m in crate::tui::source::opening(events, &seed, opts, None) {
        s.ingest(m);
    }
    s.view.size = size;
    s.set_now(60_000);
    s.refresh();
    s
}

#[tokio::test]
async fn brackets_step_through_the_story_selected_in_the_pane() {
    let (mut s, evs) = guided_state("ctr", (120, 40)).await;
    let lens: Vec<usize> = s.story.stories.iter().map(|st| st.steps.len()).collect();
    assert!(lens.len() >= 2 && lens[1] >= 2, "{lens:?}");
    // Select the second story's first step in the pane (no seek: the replay stays).
    let at = s.last_seq();
    while s.story.cursor < lens[0] {
        reduce(&mut s, Action::Down);
    }
    assert_eq!(s.last_seq(), at);
    let second = &s.story.stories[1].steps;
    let (first_seq, next_seq) = (second[0].seq, second[1].seq);
    // Ahead of the replay, `]` brings the replay to the selected step first...
    let c = reduce(&mut s, key(']'));
    assert_eq!(c.last(), Some(&Control::Seek(first_seq)), "{c:?}");
    assert_eq!(s.story.cursor, lens[0]);
    seek(&mut s, &evs, &c);
    assert_eq!(
        s.story.cursor, lens[0],
        "the replay's position does not move it"
    );
    // ... then to the next step of that story, wherever the other stories are (a step of
    // the same event needs no seek: a death's Terminated comes with the init's death).
    let c = reduce(&mut s, key(']'));
    let want = (next_seq != first_seq).then_some(Control::Seek(next_seq));
    assert_eq!(c.last(), want.as_ref(), "{c:?}");
    seek(&mut s, &evs, &c);
    assert_eq!(s.story.cursor, lens[0] + 1);
    // `[` back to its first step, then `[` again says so instead of leaving the story.
    let c = reduce(&mut s, key('['));
    let want = (next_seq != first_seq).then_some(Control::Seek(first_seq));
    assert_eq!(c.last(), want.as_ref(), "{c:?}");
    seek(&mut s, &evs, &c);
    let c = reduce(&mut s, key('['));
    assert!(!c.iter().any(|c| matches!(c, Control::Seek(_))), "{c:?}");
    assert_eq!(s.story.cursor, lens[0]);
    let msg = s.status.message.clone().unwrap_or_default();
    assert!(msg.contains("first step of this story"), "{msg}");
    // To its last step; one more `]` stays there and says so.
    for _ in 1..lens[1] {
        let c = reduce(&mut s, key(']'));
        seek(&mut s, &evs, &c);
    }
    assert_eq!(s.story.cursor, lens[0] + lens[1] - 1);
    let c = reduce(&mut s, key(']'));
    assert!(!c.iter().any(|c| matches!(c, Control::Seek(_))), "{c:?}");
    assert_eq!(s.story.cursor, lens[0] + lens[1] - 1, "no jump elsewhere");
    let msg = s.status.message.clone().unwrap_or_default();
    assert!(msg.contains("last step of this story"), "{msg}");
    // The first story's last step, though another story follows: `]` stays in it too.
    while s.story.cursor > lens[0] - 1 {
        reduce(&mut s, Action::Up);
    }
    let c = reduce(&mut s, key(']'));
    assert!(!c.iter().any(|c| matches!(c, Control::Seek(_))), "{c:?}");
    assert_eq!(s.story.cursor, lens[0] - 1, "no jump into the next story");
    let msg = s.status.message.clone().unwrap_or_default();
    assert!(msg.contains("last step of this story"), "{msg}");
    // The step's explanation is the one shown.
    let step = s.story.current_step().cloned().expect("step");
    let text = screen(&mut s);
    assert!(
        text.contains(&format!("why: {}", &step.text[..20])),
        "{text}"
    );
}

/// Where the story pane's box starts on a captured screen: the column of the corner before
/// its title.
fn story_box_col(text: &str) -> Option<usize> {
    text.lines().find_map(|l| {
        let l = l.trim_matches('"');
        let at = l.find(" guided · stories")?;
        Some(l[..at].chars().count().saturating_sub(1))
    })
}

#[tokio::test]
async fn the_guided_layout_gives_the_story_most_of_the_width_and_hides_the_log() {
    let (mut s, _) = guided_state("ctr", (160, 45)).await;
    let a = crate::tui::state::layout::layout(ratatui::layout::Rect::new(0, 0, 160, 45), &s);
    let story = a.story.expect("story pane");
    assert!(story.width * 100 >= 160 * 60, "{a:?}");
    assert!(a.log.is_empty(), "the log is hidden while guided: {a:?}");
    let text = screen(&mut s);
    let col = story_box_col(&text).unwrap_or_else(|| panic!("{text}"));
    assert!(
        (160 - col) * 100 >= 160 * 60,
        "story box at column {col}\n{text}"
    );
    assert!(!text.contains(" log ("), "{text}");
    // `L` brings the log back, and takes it away again.
    reduce(&mut s, key('L'));
    assert!(screen(&mut s).contains(" log (all)"));
    reduce(&mut s, key('L'));
    assert!(!screen(&mut s).contains(" log ("));
}

#[tokio::test]
async fn at_80x24_the_step_and_its_explanation_show_and_cut_text_says_more() {
    let (mut s, _) = guided_state("ctr", (80, 24)).await;
    let step = s.story.current_step().cloned().expect("step");
    let (story, _) = s.story.current().expect("a step");
    let story = story.clone();
    let why = crate::lineage::explain::why(&story, &step).text;
    let text = screen(&mut s);
    let start: String = why.split_whitespace().take(5).collect::<Vec<_>>().join(" ");
    assert!(text.contains(&start), "{text}");
    assert!(
        text.contains(&format!("why: {}", &step.text[..20])),
        "{text}"
    );
    // The steps go on below the pane: said.
    assert!(text.contains("more ↓"), "{text}");
    // Further down the story, its header stays on screen.
    let header = crate::lineage::view::story_header(&s.story.stories[0], true);
    keys(&mut s, &vec![Action::Down; 12]);
    let text = screen(&mut s);
    assert!(!text.contains(&format!("▸ {:>6}", step.seq)), "{text}");
    assert!(text.contains(&header), "{header}\n{text}");
    // A pane too short for the explanation: `more ↓ (m)`, and `m` shows the rest.
    let (mut s, _) = guided_state("ctr", (60, 18)).await;
    let text = screen(&mut s);
    assert!(text.contains("more ↓ (m)"), "{text}");
    let source = crate::lineage::explain::why(&story, &step).source;
    let tail: String = source.chars().take(12).collect();
    assert!(!text.contains(&tail), "{text}");
    let mut seen = false;
    for _ in 0..10 {
        reduce(&mut s, key('m'));
        seen |= screen(&mut s).contains(&tail);
    }
    assert!(seen, "m pages to the explanation's end");
}

#[test]
fn the_thread_key_hides_thread_lines_and_rows() {
    let mut s = at_end("ctr", (120, 40));
    let thread_lines = |s: &AppState| {
        s.log
            .visible()
            .iter()
            .filter(|l| l.text.contains("Thread ") || l.text.contains("+++ thread"))
            .count()
    };
    assert!(thread_lines(&s) > 0);
    let all = s.log.visible().len();
    reduce(&mut s, key('t'));
    let rows = |s: &AppState| {
        s.tree
            .rows
            .iter()
            .filter(|r| matches!(r.kind, RowKind::Thread { .. }))
            .count()
    };
    assert!(rows(&s) > 0);
    reduce(&mut s, key('T'));
    assert_eq!(thread_lines(&s), 0);
    assert!(!s.log.visible().is_empty() && s.log.visible().len() < all);
    assert_eq!(rows(&s), 0, "no thread rows either");
    assert!(screen(&mut s).contains("threads hidden"));
    reduce(&mut s, key('T'));
    assert!(thread_lines(&s) > 0 && rows(&s) > 0);
}

#[test]
fn the_status_bar_shows_one_event_count() {
    let evs = fixture("ctr");
    let mut s = replay_state("ctr.log", &evs, 100, (120, 40));
    let text = screen(&mut s);
    let status = text.lines().last().expect("status").to_string();
    assert!(
        status.contains(&format!("event 100/{}", evs.len())),
        "{status}"
    );
    // No other count: the numbers on it are the position's two.
    let numbers = status
        .split(|c: char| !c.is_ascii_digit())
        .filter(|w| !w.is_empty())
        .count();
    assert_eq!(numbers, 3, "100, the total and the speed: {status}");
    assert!(
        !status.contains("drops") && !status.contains("gaps"),
        "{status}"
    );
}

fn on_the_runtime(s: &AppState) {
    let p = s.selected_process().expect("a selection");
    let daemon = Some(crate::lineage::Role::RuntimeDaemon);
    assert_eq!(p.role, daemon, "{} selected", p.pid);
}

#[test]
fn the_demo_opens_guided_on_its_first_step_and_else_on_the_runtime() {
    let at_end = ReplayOpts {
        at_end: true,
        ..ReplayOpts::default()
    };
    let s = demo_state(&at_end, (160, 45));
    on_the_runtime(&s);
    // Played from its start, the selection moves to the daemon when it appears...
    let mut s = demo_state(&ReplayOpts::default(), (160, 45));
    let mut input = crate::demo::Demo::Pod.open().expect("demo");
    let evs: Vec<Event> = input.by_ref().collect::<Result<_, _>>().expect("events");
    s.ingest(Msg::Events(evs.clone()));
    s.refresh();
    on_the_runtime(&s);
    // ... unless one was chosen before.
    let mut s = demo_state(&ReplayOpts::default(), (160, 45));
    reduce(&mut s, Action::Down);
    let chosen = s.tree.selected;
    s.ingest(Msg::Events(evs));
    s.refresh();
    assert_eq!(s.tree.selected, chosen);
    let s = demo_state(&guided(), (80, 24));
    let step = s.story.current_step().expect("a step");
    assert_eq!(s.last_seq(), Some(step.seq));
    assert_eq!(s.selected_process().map(|p| p.pid), Some(step.pid));
}

#[test]
fn a_screenshot_is_the_opening_frame_as_plain_text() {
    let mut input = crate::demo::Demo::Pod.open().expect("demo");
    let seed = input.snapshot();
    let events = input.by_ref().collect::<Result<_, _>>().expect("events");
    let rec = crate::tui::Recording {
        events,
        seed,
        title: "demo".into(),
        tail: None,
        pod: None,
    };
    let size = "80x24".parse::<crate::tui::ScreenSize>().expect("size");
    let text = crate::tui::screenshot(rec, &guided(), size);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 24, "{text}");
    assert!(lines.iter().all(|l| l.chars().count() <= 80), "{text}");
    assert!(text.contains("guided · stories"), "{text}");
    assert!(
        lines[23].contains("REPLAY") && lines[23].contains("event "),
        "{text}"
    );
    // Story headers name the pod and what the container is, not a 64-hex id.
    let header = text
        .lines()
        .find(|l| l.starts_with("pod "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        header.contains(": sandbox ") || header.contains(": container "),
        "{header}"
    );
    assert!(
        !header
            .split(|c: char| !c.is_ascii_hexdigit())
            .any(|w| w.len() > 12),
        "{header}"
    );
    for bad in ["x24", "80x", "10x10", "80x24x1", "axb"] {
        assert!(bad.parse::<crate::tui::ScreenSize>().is_err(), "{bad}");
    }
}

/// The restart demo in the guided viewer: containerd's restart is a story of the walk, its
/// steps shown with their explanation and what the recording holds for them.
#[test]
fn the_guided_walk_reaches_the_runtime_restart_and_explains_it() {
    use crate::lineage::{Phase, StepKind};
    let opts = guided();
    let mut input = crate::demo::Demo::Restart.open().expect("demo");
    let seed = input.snapshot();
    let events: crate::tracefile::PackedEvents =
        input.by_ref().collect::<Result<_, _>>().expect("events");
    let mut s = crate::tui::replay_state("restart".into(), None, &seed, &opts);
    for m in crate::tui::source::opening(events, &seed, &opts, None) {
        s.ingest(m);
    }
    s.view.size = (160, 60);
    s.set_now(60_000);
    s.refresh();
    let steps = s.story.steps();
    let at = steps.iter().position(|&(i, j)| {
        let st = &s.story.stories[i];
        st.phase == Phase::RuntimeRestart && st.steps[j].kind == StepKind::Survived
    });
    s.story.cursor = at.expect("the restart's steps are in the walk");
    let text = screen(&mut s);
    assert!(text.contains("lives on: parent 1"), "{text}");
    assert!(
        text.contains("recording: shim 2092 kept parent 1"),
        "{text}"
    );
    assert!(text.contains("containerd's own cgroup /"), "{text}");
}

/// The detail pane's subreaper lines name their facts and agree with the adoption step: the
/// shim keeps the kernel's inherited has_child_subreaper flag after its parent (a subreaper)
/// exited, while the ancestor walk, like the step "adopted by 1", now ends at init.
#[test]
fn the_subreaper_lines_agree_with_the_adoption_step() {
    let evs = fixture("ctr");
    let stories = stories_of(&evs);
    let adopted = stories[0]
        .steps
        .iter()
        .find(|x| x.kind == crate::lineage::StepKind::ShimAdopted)
        .expect("the shim's adoption")
        .clone();
    assert!(adopted.text.contains("adopted by 1 "), "{}", adopted.text);
    // Before its parent's exit, the walk ends at that parent, a live subreaper.
    let before = evs.iter().position(|e| e.seq >= adopted.seq).unwrap();
    let mut s = replay_state("ctr", &evs, before, (200, 60));
    select_pid(&mut s, adopted.pid);
    let text = screen(&mut s);
    assert!(
        text.contains("orphans→  15913 (nearest live subreaper)"),
        "{text}"
    );
    // After it, the walk ends at init, as the step says, and the inherited flag stays.
    let mut s = replay_state("ctr", &evs, before + 1, (200, 60));
    select_pid(&mut s, adopted.pid);
    let text = screen(&mut s);
    assert!(
        text.contains("orphans→  1 (no live subreaper ancestor: init)"),
        "{text}"
    );
    assert!(
        text.contains("inherited has_child_subreaper (kernel flag)"),
        "{text}"
    );
    assert!(!text.contains("subreaper ancestor exists"), "{text}");
}

/// The viewer's explanations of the recorded fixtures (containerd's `ctr`, a `runc run` by
/// hand, podman's conmon) name nothing their stories do not hold.
#[test]
fn the_fixtures_stories_are_explained_for_what_they_hold() {
    for name in [
        "ctr",
        "runc",
        "podman",
        "runc-run",
        "runc-run-orphan",
        "runc-stderr",
    ] {
        let all = stories_of(&fixture(name));
        assert!(!all.is_empty(), "{name}");
        let bad = crate::lineage::explain::check::failures(&all);
        assert!(bad.is_empty(), "{name}:\n{}", bad.join("\n"));
    }
}
