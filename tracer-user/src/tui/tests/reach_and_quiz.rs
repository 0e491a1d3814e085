//! Reaching a story (by search or by asking for it), and the quiz.

use super::*;

/// The pid a step's own line names as its answer: `adopted by N`, `: parent N`.
fn answer_in_text(text: &str) -> u32 {
    let after = text
        .split_once("adopted by ")
        .or_else(|| text.split_once(": parent "))
        .map(|(_, r)| r)
        .expect("an answer in the line");
    let digits: String = after.chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().expect("a pid")
}

/// `]` until the quiz asks (the source's seeks applied on the way).
fn next_question(s: &mut AppState, evs: &[Event]) -> usize {
    for _ in 0..40 {
        let c = reduce(s, key(']'));
        seek(s, evs, &c);
        if let Some(q) = s.quiz.asking {
            return q;
        }
    }
    panic!("no question");
}

#[tokio::test]
async fn the_quiz_asks_before_the_step_and_judges_right_and_wrong_with_the_kernel_rule() {
    let (mut s, evs) = guided_state("ctr", (100, 30)).await;
    reduce(&mut s, key('Q'));
    assert!(s.quiz.on);
    // The shim's adoption shares its event with its parent's exit: asked before either.
    let q = next_question(&mut s, &evs);
    let step = s.story.current_step().cloned().expect("step");
    assert_eq!(s.story.cursor, q);
    assert_eq!(step.kind, crate::lineage::StepKind::ShimAdopted);
    assert!(
        s.last_seq().is_some_and(|a| a < step.seq),
        "the replay waits before it"
    );
    let truth = answer_in_text(&step.text);
    let text = screen(&mut s);
    assert!(
        !text.contains(&step.text),
        "the answer is not on screen:\n{text}"
    );
    assert!(text.contains("who adopts shim 15921?"), "{text}");
    a_wrong_pid_is_judged_wrong_with_the_rule(&mut s, &evs, &step, truth);
    // Back before its event and on again: a question is asked once.
    for _ in 0..2 {
        let c = reduce(&mut s, key('['));
        seek(&mut s, &evs, &c);
    }
    assert!(s.last_seq().is_some_and(|a| a < step.seq));
    let c = reduce(&mut s, key(']'));
    seek(&mut s, &evs, &c);
    assert!(s.quiz.asking.is_none());
    // The CLONE_PARENT clone: `[` on its question leaves it open for later, unanswered;
    // then it is answered by selecting the parent in the tree, and Enter.
    let q2 = next_question(&mut s, &evs);
    let c = reduce(&mut s, key('['));
    seek(&mut s, &evs, &c);
    assert_eq!(s.quiz.asking, None);
    assert!(!s.quiz.answered.contains(&q2));
    assert_eq!(next_question(&mut s, &evs), q2);
    assert!(q2 > q);
    let step = s.story.current_step().cloned().expect("step");
    assert_eq!(step.kind, crate::lineage::StepKind::ChildCloned);
    let truth = answer_in_text(&step.text);
    select_pid(&mut s, truth);
    let c = reduce(&mut s, Action::QuizAnswer);
    seek(&mut s, &evs, &c);
    let v = s.quiz.verdict.clone().expect("judged");
    assert_eq!(
        (v.guess, v.truth, v.right()),
        (Some(truth), Some(truth), true)
    );
    assert_eq!((s.quiz.right, s.quiz.asked), (1, 2));
    let text = screen(&mut s);
    assert!(text.contains(&format!("right: {truth}")), "{text}");
    assert!(text.contains("quiz: 1 of 2 right"), "{text}");
    insta::assert_snapshot!("quiz_right_100x30", text);
}

/// The quiz's first question (who adopts the shim, whose answer is `truth`) answered with a
/// wrong pid, typed: judged wrong, the rule shown, the score kept.
fn a_wrong_pid_is_judged_wrong_with_the_rule(
    s: &mut AppState,
    evs: &[Event],
    step: &crate::lineage::StoryStep,
    truth: u32,
) {
    let wrong = truth + 15912;
    for c in wrong.to_string().chars() {
        reduce(s, Action::QuizDigit(c));
    }
    assert!(screen(s).contains(&format!("pid: {wrong}")));
    let c = reduce(s, Action::QuizAnswer);
    seek(s, evs, &c);
    let v = s.quiz.verdict.clone().expect("judged");
    assert_eq!(
        (v.guess, v.truth, v.right()),
        (Some(wrong), Some(truth), false)
    );
    assert_eq!((s.quiz.right, s.quiz.asked), (0, 1));
    let (story, _) = s.story.current().expect("a step");
    let rule = crate::lineage::explain::why(story, step).text;
    let text = screen(s);
    assert!(
        text.contains(&format!("wrong: you said {wrong}, it is {truth}")),
        "{text}"
    );
    assert!(
        text.contains(
            &rule
                .split_whitespace()
                .take(6)
                .collect::<Vec<_>>()
                .join(" ")
        ),
        "{text}"
    );
    assert!(
        text.contains("quiz 0/1"),
        "the status bar keeps the score:\n{text}"
    );
    insta::assert_snapshot!("quiz_wrong_100x30", text);
}

#[test]
fn quiz_keys_are_digits_enter_and_esc_only_while_asking() {
    let mut s = AppState::new_replay("t");
    let k = |s: &AppState, c: KeyCode| key_action(&KeyEvent::new(c, KeyModifiers::NONE), s);
    assert_eq!(k(&s, KeyCode::Char('Q')), Some(Action::ToggleQuiz));
    assert_eq!(k(&s, KeyCode::Char('4')), None);
    s.quiz.asking = Some(0);
    assert_eq!(k(&s, KeyCode::Char('4')), Some(Action::QuizDigit('4')));
    assert_eq!(k(&s, KeyCode::Enter), Some(Action::QuizAnswer));
    assert_eq!(k(&s, KeyCode::Esc), Some(Action::QuizPass));
    assert_eq!(
        k(&s, KeyCode::Down),
        Some(Action::Down),
        "the tree still moves"
    );
}

#[tokio::test]
async fn a_search_finds_a_process_the_replay_has_not_reached_and_goes_there() {
    let (mut s, evs) = guided_state("ctr", (100, 30)).await;
    assert!(s.engine.process(15941).is_none(), "not born yet");
    let born = evs
        .iter()
        .find(|e| {
            matches!(
                &e.kind,
                EventKind::Fork {
                    child_tgid: 15941,
                    ..
                }
            )
        })
        .map(|e| e.seq)
        .expect("its birth");
    let c = search_seeking(&mut s, &evs, "15941");
    assert!(c.contains(&Control::Seek(born)), "{c:?}");
    assert_eq!(s.selected_process().map(|p| p.pid), Some(15941));
    // Hidden (exited processes not shown, its ancestor folded): shown.
    s.tree.show_exited = false;
    select_pid(&mut s, 15921);
    reduce(&mut s, Action::Left);
    search(&mut s, "PARENT");
    assert_eq!(s.selected_process().map(|p| p.pid), Some(15938));
}

/// A search for `q`, its controls applied as the source would.
fn search_seeking(s: &mut AppState, evs: &[Event], q: &str) -> Vec<Control> {
    reduce(s, Action::SearchStart);
    for c in q.chars() {
        reduce(s, Action::SearchChar(c));
    }
    let c = reduce(s, Action::SearchConfirm);
    seek(s, evs, &c);
    c
}

#[tokio::test]
async fn up_and_down_in_the_story_pane_move_the_tree_and_the_status_names_the_seq() {
    let (mut s, evs) = guided_state("ctr", (100, 30)).await;
    let steps: Vec<_> = s.story.stories[0].steps.clone();
    let c = reduce(&mut s, Action::Down);
    assert_eq!(c.last(), Some(&Control::Seek(steps[1].seq)), "{c:?}");
    seek(&mut s, &evs, &c);
    assert_eq!(s.selected_process().map(|p| p.pid), Some(steps[1].pid));
    let text = screen(&mut s);
    assert!(
        text.contains(&format!("step seq {}", steps[1].seq)),
        "{text}"
    );
    // Not guided: the tree selects the step's process, no seek.
    let mut s = at_end("ctr", (100, 30));
    reduce(&mut s, Action::ToggleStory);
    let c = reduce(&mut s, Action::Down);
    assert!(c.is_empty(), "{c:?}");
    let step = s.story.current_step().cloned().expect("step");
    assert_eq!(s.selected_process().map(|p| p.pid), Some(step.pid));
}

#[test]
fn a_guided_replay_opens_at_the_story_asked_for() {
    let evs = fixture("ctr");
    let opts = ReplayOpts {
        guided: true,
        story: Some(1),
        ..ReplayOpts::default()
    };
    let mut s = crate::tui::replay_state("ctr.log".into(), None, &[], &opts);
    for m in crate::tui::source::opening(evs.iter().cloned().collect(), &[], &opts, None) {
        s.ingest(m);
    }
    s.refresh();
    let death = &s.story.stories[1];
    assert_eq!(s.story.cursor, s.story.stories[0].steps.len());
    assert_eq!(s.last_seq(), Some(death.steps[0].seq));
}
