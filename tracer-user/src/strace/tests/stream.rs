//! The log read as a stream (`Stream`): the events and counts of the whole import, a window
//! of events held at most.

use super::*;
use crate::synth;

/// The logs the stream is checked on: calls in flight, calls resumed, a pid namespace's
/// teardown (held whole), the anonymous initial process, real logs of runtimes (threads,
/// notices spliced into lines, SIGCHLD, pid namespaces).
fn logs() -> Vec<(String, String)> {
    let mut v = vec![
        ("unfinished".into(), synth::strace_unfinished_clones(300)),
        ("resumed".into(), synth::strace_resumed_clones(300)),
        ("pidns".into(), synth::strace_pidns_teardown(40)),
        (
            "anonymous".into(),
            "execve(\"/bin/sh\", [\"sh\"], 0x1 /* 2 vars */) = 0\n\
             clone(child_stack=NULL, flags=SIGCHLD) = 11\n\
             [pid 11] exit_group(0) = ?\n\
             [pid 11] +++ exited with 0 +++\n\
             [pid 10] wait4(-1, NULL, 0, NULL) = 11\n"
                .repeat(50),
        ),
    ];
    for f in [
        "runc.log",
        "ctr.log",
        "podman.log",
        "runc-run.log",
        "runc-run-orphan.log",
        "runc-stderr.log",
        "unshare-pidns.log",
    ] {
        v.push((f.into(), fixture(f)));
    }
    v
}

/// Every event of `text` through a stream of `window`, its final report, and the most events
/// it held at once.
fn streamed(text: &str, window: usize) -> (Vec<Event>, Import, usize) {
    let mut st = Stream::with_window(text.as_bytes(), window);
    st.prime().expect("a log");
    let mut evs = Vec::new();
    let mut most = st.held();
    while let Some(ev) = st.next_event() {
        evs.push(ev.expect("reads"));
        most = most.max(st.held());
    }
    (evs, st.report(), most)
}

#[test]
fn a_stream_gives_the_events_and_counts_of_the_whole_import() {
    for (name, text) in logs() {
        let whole = parse_reader(text.as_bytes()).expect("a log");
        for window in [1, 2, 7, STREAM_WINDOW] {
            let (evs, report, _) = streamed(&text, window);
            assert_eq!(evs, whole.events, "{name}, window {window}");
            let counts = Import {
                events: Vec::new(),
                ..whole.clone()
            };
            assert_eq!(report, counts, "{name}, window {window}");
        }
    }
}

#[test]
fn a_stream_holds_a_window_of_events_not_the_log() {
    // 20,000 tasks, each resuming a clone made before tracing and exiting: 60,000 lines.
    let text = synth::strace_resumed_clones(20_000);
    let whole = parse_log(&text).expect("a log");
    assert!(whole.events.len() > 40_000, "{}", whole.events.len());
    let window = 100;
    let (evs, _, most) = streamed(&text, window);
    assert_eq!(evs, whole.events);
    assert!(most <= 3 * window, "held {most} events at once");
}

#[test]
fn a_log_of_nothing_strace_wrote_is_refused_at_once() {
    let mut st = Stream::new("hello\nworld\n".as_bytes());
    assert!(matches!(
        st.prime(),
        Err(StraceError::NotAnStraceLog { lines: 2 })
    ));
    assert!(st.next_event().is_none());
}
