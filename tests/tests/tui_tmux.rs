//! The viewer in a real terminal: `tracer view` on the ctr fixture inside a detached tmux
//! session of fixed size; keys are sent, the pane is captured, and after `q` (and after a
//! SIGTERM) the terminal must be back to a usable shell (alternate screen left, cooked mode).
//! tmux is a prerequisite (tests/src/prereq.rs): missing, the test fails unless opted out.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use tests::tmux::{Tmux, CEILING};

fn workspace() -> PathBuf {
    tests::workspace_root()
}

/// The viewer needs no capture: the debug build when fresh, else one of its own.
fn tracer_bin() -> PathBuf {
    tests::bins::debug_tracer("cli", "view", "tui-tmux")
}

#[test]
fn tui_replay_in_tmux() {
    if !tests::prereq::require_program("tmux", "tmux") {
        return;
    }
    let bin = tracer_bin();
    let fixture = workspace().join("tests/fixtures/strace/ctr.log");
    let t = Tmux::start("replay", 100, 30);
    t.wait_for(&["$"]);
    t.type_text(&format!("{} view {}", bin.display(), fixture.display()));
    t.send(&["Enter"]);
    t.wait_for(&["REPLAY", "ctr.log"]);
    // To the end of the recording: the whole tree.
    t.send(&["G"]);
    let screen = t.wait_for(&[
        "598/598",
        "containerd-shim [shim]",
        "runc [oci-runtime create]",
        "sleep [container]",
        "⤴ adopted ← 15913 exited",
        "(CLONE_PARENT via 15940)",
    ]);
    assert!(screen.contains("runc:[1:CHILD]"), "{screen}");

    // Search the container init: the detail pane shows its lineage.
    t.send(&["/"]);
    t.type_text("sleep");
    t.send(&["Enter"]);
    t.wait_for(&["process 15941", "adopted by 15921: parent 15931 exited"]);

    // Story pane, then step back one event.
    t.send(&["s"]);
    t.wait_for(&["stories 2", "init 15941 exec'd /bin/sleep"]);
    t.send(&[","]);
    t.wait_for(&["597/598"]);

    // Help overlay lists the keys; any key closes it.
    t.send(&["?"]);
    t.wait_for(&["keys (any key closes)", "q Ctrl-C"]);
    t.send(&["Escape"]);
    t.wait_until("help closed", |t| !t.capture().contains("keys (any key"));

    t.send(&["q"]);
    t.assert_terminal_usable("after-q-ok");

    // SIGTERM restores the terminal too.
    let pidfile = std::env::temp_dir().join(format!("tracer-tui-test-{}.pid", std::process::id()));
    let pid = t.start_viewer(
        &bin,
        &fixture.display().to_string(),
        &["REPLAY", "ctr.log"],
        &pidfile,
    );
    let st = Command::new("kill")
        .args(["-TERM", pid.trim()])
        .status()
        .expect("kill");
    assert!(st.success());
    t.assert_terminal_usable("after-term-ok");

    // The terminal goes away (tmux killed): the viewer must exit, not spin on a dead tty.
    let pid = t.start_viewer(
        &bin,
        &fixture.display().to_string(),
        &["REPLAY", "ctr.log"],
        &pidfile,
    );
    drop(t);
    let proc_dir = std::path::PathBuf::from(format!("/proc/{}", pid.trim()));
    let deadline = Instant::now() + CEILING;
    let gone = |state: &str| state.is_empty() || state.contains(") Z ");
    while !gone(&std::fs::read_to_string(proc_dir.join("stat")).unwrap_or_default())
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(100));
    }
    let state = std::fs::read_to_string(proc_dir.join("stat")).unwrap_or_default();
    // Gone, or a zombie waiting for tmux's reaper.
    assert!(gone(&state), "viewer still running after hangup: {state}");
}

/// Live view of a command (root; run with `--ignored`): its processes appear, `q` restores.
#[test]
#[ignore = "root"]
fn tui_live_in_tmux() {
    if !tests::prereq::require_program("tmux", "tmux") || !tests::prereq::require_root() {
        return;
    }
    let bin = tests::bins::capture_tracer();
    let t = Tmux::start("live", 120, 35);
    t.wait_for(&["$"]);
    t.type_text(&format!(
        "{} tui -- sh -c 'sleep 0.3; /bin/true; exec sleep 30'",
        bin.display()
    ));
    t.send(&["Enter"]);
    t.wait_for(&["LIVE", "cmd sh -c", "true (exit 0)", "sleep"]);
    t.send(&["q"]);
    t.assert_terminal_usable("after-live-ok");
}

// ---- the guided demo: properties of the screen, not of one recording's pids or seqs ----

/// `tracer demo ARGS` started in a fresh tmux session of `cols`×`rows`, once the pane shows
/// every needle.
fn demo_in_tmux(name: &str, cols: u16, rows: u16, args: &str, shows: &[&str]) -> Tmux {
    let bin = tracer_bin();
    let t = Tmux::start(name, cols, rows);
    t.wait_for(&["$"]);
    t.type_text(&format!("{} demo {args}", bin.display()));
    t.send(&["Enter"]);
    t.wait_for(shows);
    t
}

/// Column of the story pane's box (the corner before its title; 0 when it starts the row).
fn story_col(screen: &str) -> Option<usize> {
    screen.lines().find_map(|l| {
        let at = l.find(" guided · stories")?;
        let before = &l[..at];
        Some(
            before
                .chars()
                .count()
                .saturating_sub(usize::from(before.ends_with('┌'))),
        )
    })
}

/// The story pane's text, row by row (what lies right of its box's left edge).
fn story_rows(screen: &str) -> Vec<String> {
    let col = story_col(screen).unwrap_or(0);
    let skip = if col > 0 { col + 1 } else { 0 };
    screen
        .lines()
        .map(|l| l.chars().skip(skip).collect::<String>())
        .collect()
}

/// The selected step (`▸ SEQ TEXT`) and the header of the story it is in.
fn selected_step(screen: &str) -> Option<(String, String)> {
    let rows = story_rows(screen);
    let i = rows.iter().position(|r| r.starts_with('▸'))?;
    let header = rows[..i]
        .iter()
        .rev()
        .find(|r| r.starts_with("pod ") || r.starts_with("container "))?;
    Some((
        rows[i].trim_end().to_string(),
        header.trim_end().to_string(),
    ))
}

/// The status bar's `event N/M`.
fn position(screen: &str) -> Option<String> {
    let status = screen.lines().rev().find(|l| l.contains("REPLAY"))?;
    let at = status.find("event ")?;
    status[at..].split_whitespace().nth(1).map(str::to_string)
}

#[test]
fn demo_opens_guided_and_steps_within_the_selected_story_160x45() {
    if !tests::prereq::require_program("tmux", "tmux") {
        return;
    }
    let t = demo_in_tmux(
        "guided160",
        160,
        45,
        "",
        &["REPLAY", "guided · stories", "── why: "],
    );
    let screen = t.capture();
    // Teaching layout: the story and its explanation take at least 60% of the width, no log.
    let col = story_col(&screen).unwrap_or_else(|| panic!("no story pane:\n{screen}"));
    assert!(
        (160 - col) * 100 >= 160 * 60,
        "story box at column {col}:\n{screen}"
    );
    assert!(
        !screen.contains(" log ("),
        "the log is hidden while guided:\n{screen}"
    );
    let (step, first_story) = selected_step(&screen).unwrap_or_else(|| panic!("{screen}"));
    let start = position(&screen).expect("position");

    // Select a step of another story in the pane: the replay goes there with it, and the
    // status bar names the step's seq.
    let mut picked = None;
    for _ in 0..200 {
        let before = t.capture();
        t.send(&["Down"]);
        t.wait_until("the selection to move", |t| t.capture() != before);
        let now = t.capture();
        let (_, story) = selected_step(&now).unwrap_or_else(|| panic!("{now}"));
        if story != first_story {
            picked = Some(story);
            break;
        }
    }
    let story = picked.unwrap_or_else(|| panic!("one story only after {step}"));
    t.wait_until("the replay to follow the step", |t| {
        position(&t.capture()).as_deref() != Some(start.as_str())
    });
    let s = t.capture();
    let (now, _) = selected_step(&s).unwrap_or_else(|| panic!("{s}"));
    let seq = now
        .trim_start_matches('▸')
        .split_whitespace()
        .next()
        .unwrap_or_default();
    assert!(s.contains(&format!("step seq {seq} ")), "{s}");

    // `]` moves the replay through that story's steps, never into another one, and says so
    // at its last step.
    let mut last = (position(&t.capture()), selected_step(&t.capture()));
    let mut said = false;
    for _ in 0..100 {
        t.send(&["]"]);
        t.wait_until(
            "the replay or the step to move, or the status to speak",
            |t| {
                let s = t.capture();
                (position(&s), selected_step(&s)) != last || s.contains("last step of this story")
            },
        );
        let s = t.capture();
        let (_, now) = selected_step(&s).unwrap_or_else(|| panic!("{s}"));
        assert_eq!(now, story, "`]` left the selected story:\n{s}");
        if s.contains("last step of this story") {
            said = true;
            break;
        }
        last = (position(&s), selected_step(&s));
    }
    assert!(said, "never reached the story's last step");
    t.send(&["q"]);
    t.assert_terminal_usable("after-guided-ok");
}

#[test]
fn demo_guided_at_80x24_shows_the_step_and_says_more() {
    if !tests::prereq::require_program("tmux", "tmux") {
        return;
    }
    let t = demo_in_tmux(
        "guided80",
        80,
        24,
        "",
        &["REPLAY", "guided · stories", "── why: "],
    );
    let screen = t.capture();
    let (step, _) = selected_step(&screen).unwrap_or_else(|| panic!("{screen}"));
    assert!(step.len() > 10, "{screen}");
    // The explanation starts under its title line.
    let lines: Vec<&str> = screen.lines().collect();
    let why = lines
        .iter()
        .position(|l| l.starts_with("── why: "))
        .expect("why");
    assert!(
        lines
            .get(why + 1)
            .is_some_and(|l| l.split_whitespace().count() >= 4),
        "{screen}"
    );
    // Text cut at the pane's edge says so.
    assert!(screen.contains("more ↓"), "{screen}");
    assert!(!screen.contains(" log ("), "{screen}");
    t.send(&["q"]);
    t.assert_terminal_usable("after-guided80-ok");
}

/// A `Thread N attached` or `+++ thread exited` line of the event log.
fn thread_lines(screen: &str) -> usize {
    screen
        .lines()
        .filter(|l| (l.contains("Thread ") && l.contains(" attached")) || l.contains("+++ thread"))
        .count()
}

#[test]
fn the_thread_key_and_flag_hide_thread_lines() {
    if !tests::prereq::require_program("tmux", "tmux") {
        return;
    }
    // Free replay at its end, the log zoomed to the whole screen.
    let t = demo_in_tmux("threads", 160, 45, "--free", &["REPLAY", " log ("]);
    t.send(&["G"]);
    t.wait_for(&[" end "]);
    t.send(&["Tab"]);
    t.send(&["z"]);
    t.wait_until("thread lines in the log", |t| {
        thread_lines(&t.capture()) > 0
    });
    t.send(&["T"]);
    t.wait_until("thread lines hidden", |t| {
        let s = t.capture();
        thread_lines(&s) == 0 && s.contains("threads hidden")
    });
    t.send(&["q"]);
    t.assert_terminal_usable("after-threads-ok");
    drop(t);
    let t = demo_in_tmux(
        "nothreads",
        160,
        45,
        "--free --no-threads",
        &["REPLAY", "threads hidden"],
    );
    t.send(&["G"]);
    t.wait_for(&[" end "]);
    t.send(&["Tab"]);
    t.send(&["z"]);
    let s = t.wait_for(&[" log ("]);
    assert_eq!(thread_lines(&s), 0, "{s}");
    t.send(&["q"]);
    t.assert_terminal_usable("after-nothreads-ok");
}

/// `tracer demo --quiz` in a real terminal: `]` asks before the step is shown, digits and
/// Enter answer, the pane says wrong with the kernel rule, and the score is said on stderr
/// once the terminal is back.
#[test]
fn demo_quiz_asks_judges_and_says_the_score_at_the_end() {
    if !tests::prereq::require_program("tmux", "tmux") {
        return;
    }
    let t = demo_in_tmux(
        "quiz",
        120,
        40,
        "--quiz",
        &["REPLAY", "guided · stories", "quiz 0/0"],
    );
    let mut asked = false;
    for _ in 0..40 {
        let before = t.capture();
        t.send(&["]"]);
        t.wait_until("the step or the question to come", |t| {
            t.capture() != before
        });
        if t.capture().contains("── quiz: ") && t.capture().contains("Enter answers") {
            asked = true;
            break;
        }
    }
    assert!(asked, "no question:\n{}", t.capture());
    // No process of the demo has this pid (its pids are below 2^22, the kernel's pid_max).
    t.type_text("9999999");
    t.wait_for(&["pid: 9999999"]);
    t.send(&["Enter"]);
    let s = t.wait_for(&["wrong: you said 9999999, it is ", "quiz 0/1", "source: "]);
    assert!(s.contains("── why: "), "the step's own explanation:\n{s}");
    t.send(&["q"]);
    t.wait_for(&["tracer: quiz: 0 of 1 right"]);
    t.assert_terminal_usable("after-quiz-ok");
}
