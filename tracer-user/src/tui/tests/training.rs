//! Training: explanations, guided replay, zoom, horizontal scroll.

use super::*;

#[tokio::test]
async fn guided_replay_opens_at_the_first_step_with_its_explanation() {
    let (mut s, evs) = guided_state("ctr", (120, 40)).await;
    let first = s
        .playback
        .full_stories
        .iter()
        .flat_map(|st| &st.steps)
        .min_by_key(|st| st.seq)
        .cloned()
        .expect("a step");
    // The tree is the one at that moment: every event up to the step, none after.
    assert_eq!(s.last_seq(), Some(first.seq));
    assert!(s.engine.process(first.pid).is_some());
    assert!(evs.iter().any(|e| e.seq > first.seq));
    assert_eq!(s.story.current_step().map(|st| st.seq), Some(first.seq));
    assert_eq!(s.selected_process().map(|p| p.pid), Some(first.pid));
    assert_eq!(
        s.log.cursor,
        Some(first.seq),
        "the log shows the step's event"
    );
    let text = screen(&mut s);
    let why = {
        let (story, step) = s.story.current().expect("a step");
        assert_eq!(step, &first);
        crate::lineage::explain::why(story, step).text
    };
    let first_words: String = why.split_whitespace().take(4).collect::<Vec<_>>().join(" ");
    assert!(text.contains(&first_words), "{text}");
    insta::assert_snapshot!("guided_first_step_120x40", text);

    // `]` seeks to the next step; the explanation follows it.
    let c = reduce(&mut s, key(']'));
    let Some(Control::Seek(next)) = c.last().cloned() else {
        panic!("{c:?}")
    };
    assert!(next > first.seq);
    let upto = evs.iter().position(|e| e.seq > next).unwrap_or(evs.len());
    s.ingest(Msg::Events(evs[s.position()..upto].to_vec()));
    s.refresh();
    let step = s.story.current_step().cloned().expect("a step");
    assert_eq!(step.seq, next);
    assert_eq!(s.selected_process().map(|p| p.pid), Some(step.pid));
    insta::assert_snapshot!("guided_second_step_120x40", screen(&mut s));
}

#[tokio::test]
async fn guided_steps_visit_every_step_of_the_story_even_at_the_same_seq() {
    let (mut s, evs) = guided_state("ctr", (120, 40)).await;
    let all: Vec<u64> = s.playback.full_stories[0]
        .steps
        .iter()
        .map(|st| st.seq)
        .collect();
    // What the replay source does with a seek.
    let press = |s: &mut AppState, c: char| {
        for c in reduce(s, key(c)) {
            if let Control::Seek(q) = c {
                let n = evs.iter().position(|e| e.seq > q).unwrap_or(evs.len());
                if n >= s.position() {
                    s.ingest(Msg::Events(evs[s.position()..n].to_vec()));
                } else {
                    s.ingest(Msg::Goto(n));
                }
            }
        }
        s.refresh();
        s.story.current_step().expect("a step").seq
    };
    let mut seen = vec![s.story.current_step().expect("a step").seq];
    for _ in 1..all.len() {
        seen.push(press(&mut s, ']'));
    }
    assert_eq!(seen, all, "every step once, in order");
    assert!(
        all.windows(2).any(|w| w[0] == w[1]),
        "the fixture has steps sharing a seq"
    );
    let mut back = vec![seen.pop().unwrap()];
    for _ in 1..all.len() {
        back.push(press(&mut s, '['));
    }
    back.reverse();
    assert_eq!(back, all, "and back, every step once");
    assert_eq!(s.story.cursor, 0);
}

#[test]
fn explain_pane_toggles_with_e() {
    let mut s = at_end("ctr", (100, 30));
    keys(&mut s, &[key('s')]);
    let plain = screen(&mut s);
    keys(&mut s, &[key('e')]);
    assert!(s.view.show_explain);
    let explained = screen(&mut s);
    assert!(explained.contains("── why:"), "{explained}");
    assert!(!plain.contains("── why:"));
    insta::assert_snapshot!("explain_pane_100x30", explained);
    keys(&mut s, &[key('e')]);
    assert_eq!(screen(&mut s), plain, "e again hides it");
}

#[test]
fn zoom_gives_the_story_pane_the_screen() {
    let mut s = at_end("ctr", (80, 24));
    keys(&mut s, &[key('s'), key('e'), key('z')]);
    let text = screen(&mut s);
    // No other pane, and whole step lines.
    assert!(!text.contains("events "), "{text}");
    assert!(!text.contains("processes "), "{text}");
    // Every step shown is whole (wrapped lines joined back).
    let words = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
    let joined = words(
        &text
            .lines()
            .map(|l| l.trim_matches('"'))
            .collect::<Vec<_>>()
            .join(" "),
    );
    let steps: Vec<_> = s
        .story
        .stories
        .iter()
        .flat_map(|st| st.steps.clone())
        .collect();
    let last = steps.last().expect("steps");
    assert!(joined.contains(&words(&last.text)), "{text}");
    let long = steps
        .iter()
        .find(|st| st.text.len() > 70)
        .expect("a long step");
    keys(&mut s, &vec![Action::Up; steps.len()]);
    let top = screen(&mut s);
    let joined_top = words(
        &top.lines()
            .map(|l| l.trim_matches('"'))
            .collect::<Vec<_>>()
            .join(" "),
    );
    assert!(joined_top.contains(&words(&long.text)), "{top}");
    keys(&mut s, &vec![Action::Down; steps.len()]);
    insta::assert_snapshot!("zoomed_story_80x24", text);
    keys(&mut s, &[key('z')]);
    assert!(screen(&mut s).contains(" log (all)"));
}

#[test]
fn long_tree_rows_scroll_instead_of_being_cut() {
    let mut s = at_end("ctr", (60, 24));
    keys(&mut s, &[key('z')]);
    let before = screen(&mut s);
    // The label's tail is off screen before scrolling and on screen after.
    let shim = s.engine.process(15921).expect("shim");
    let label = crate::lineage::node_label(shim, crate::lineage::TreeOpts::default());
    let tail: String = label
        .chars()
        .rev()
        .take(12)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    assert!(!before.contains(&tail), "{before}");
    keys(&mut s, &vec![key('>'); 8]);
    let after = screen(&mut s);
    assert!(after.contains("◂ col"), "{after}");
    assert!(after.contains(&tail), "{after}");
    insta::assert_snapshot!("tree_scrolled_60x24", after);
    keys(&mut s, &vec![key('<'); 8]);
    assert_eq!(screen(&mut s), before);
}
