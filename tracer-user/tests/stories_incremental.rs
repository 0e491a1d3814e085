//! A view that follows a recording keeps its stories up to date event by event
//! (`Stories::update`); after every event they must be the stories a one-shot build of the
//! same engine tells, on every bundled demo and every recording fixture.

use std::path::{Path, PathBuf};

use tracer::demo::Demo;
use tracer::lineage::{stories, Engine, Stories};
use tracer::{Event, Input};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures")
}

/// Every event of an opened recording, and the engine its snapshot seeds.
fn read(mut input: Input) -> (Engine, Vec<Event>) {
    let engine = input.seeded_engine();
    let events = input.by_ref().map(|r| r.expect("readable")).collect();
    (engine, events)
}

/// Applies `events` in batches of `batch`, comparing the updated stories with a one-shot
/// build after each; returns how many stories the recording tells.
fn check(name: &str, mut e: Engine, events: &[Event], batch: usize) -> usize {
    assert!(!events.is_empty(), "{name}: no events");
    let mut kept = Stories::build(&e);
    for chunk in events.chunks(batch) {
        chunk.iter().for_each(|ev| e.apply(ev));
        kept.update(&e);
        let seq = chunk.last().map_or(0, |ev| ev.seq);
        assert_eq!(
            kept.list(),
            stories(&e),
            "{name}: after seq {seq}, batch {batch}"
        );
    }
    kept.len()
}

#[test]
fn every_demo_tells_the_same_stories_followed_event_by_event() {
    for &d in Demo::ALL {
        let (e, events) = read(d.open().expect("demo opens"));
        for batch in [1, 16, 512] {
            let told = check(d.name(), e.clone(), &events, batch);
            assert!(told > 0, "{}: the demo tells no story", d.name());
        }
    }
}

#[test]
fn every_fixture_tells_the_same_stories_followed_event_by_event() {
    let mut told = 0;
    let strace = fixtures().join("strace");
    let mut logs: Vec<PathBuf> = std::fs::read_dir(&strace)
        .expect("strace fixtures")
        .map(|d| d.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    logs.sort();
    assert!(logs.len() >= 5, "strace fixtures missing: {logs:?}");
    for log in &logs {
        let text = std::fs::read_to_string(log).expect("fixture");
        let events = tracer::strace::parse_log(&text).expect("import").events;
        told += check(&log.display().to_string(), Engine::new(), &events, 1);
    }
    for t in ["trace/containerd-v1.trace", "demo/restart.trace"] {
        let path = fixtures().join(t);
        let (e, events) = read(Input::open(&path).expect("trace fixture"));
        told += check(t, e, &events, 1);
    }
    assert!(told > 0, "the fixtures tell no story");
}
