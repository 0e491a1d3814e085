//! The fleet table from synth-made node streams: segments with heartbeats, as an agent
//! publishes them, read back through the engine and the pod model.

use super::*;
use crate::event::{clone_flags as cf, Syscall};
use crate::nats::heartbeat::{Back, Heartbeat};
use crate::nats::tests::{as_received, numbered};
use crate::nats::{Received, Segment};
use crate::synth::{PodAnnotations, Stream};
use crate::tracefile::tests::sample_header;
use crate::Event;

/// The segments' wall clock at boot time 0: event `ts_ns` is at `T0 + ts_ns`.
const T0: u64 = 1_800_000_000_000_000_000;
const SEC: u64 = 1_000_000_000;

/// `runc create` of container `id` (container `app` of pod shop/`pod`) under the shim 500 by
/// runtime `base`, its init `base + 3` exec'ing `/bin/app`; returns the init's pid.
fn create(b: &mut Stream, base: u32, id: &str, pod: &str) -> u32 {
    let vf = cf::CLONE_VM | cf::CLONE_VFORK;
    let (rt, parent, child, init) = (base, base + 1, base + 2, base + 3);
    b.fork_full(500, 501, rt, rt, 0, Some(Syscall::Clone), Some(vf));
    let bundle = format!("/run/containerd/io.containerd.runtime.v2.task/k8s.io/{id}");
    let argv = ["runc", "create", "--bundle", &bundle, id];
    let seq = b.exec(rt, "/usr/bin/runc", &argv);
    let meta = PodAnnotations::new("shop", pod).named("app").meta(rt, id);
    b.events
        .push(Event::bare(seq, seq * 1000, rt, rt, "runc", meta));
    b.fork_full(rt, rt, parent, parent, 0, Some(Syscall::Clone), Some(vf));
    b.runc_init_stages(parent, child, init);
    b.exit(rt, 0);
    b.exec_comm(init, init, "/bin/app", &["/bin/app"], "app");
    init
}

/// A node: a shim whose pod shop/web's container dies and comes back, pod shop/db's
/// container running, and pod shop/old's container gone. Events `ts_ns` are `seq × 1000`.
fn node_events() -> Vec<Event> {
    let mut b = Stream::default();
    b.fork(1, 500);
    let argv = ["containerd-shim-runc-v2", "-id", "sb"];
    b.exec(500, "/usr/bin/containerd-shim-runc-v2", &argv);
    b.thread(500, 500, 501);
    let first = create(&mut b, 600, "c1", "web");
    b.exit(first, 1);
    create(&mut b, 700, "c2", "web");
    create(&mut b, 800, "c3", "db");
    let gone = create(&mut b, 900, "c4", "old");
    b.exit(gone, 0);
    b.events
}

/// The node's stream: one segment, a heartbeat after every event (the last `last`), the
/// events at `T0 + ts_ns`.
fn stream(id: &str, evs: &[Event], beats: &[Heartbeat]) -> Vec<Received> {
    let mut header = sample_header();
    header.start_wall_ns = T0;
    header.start_boot_ns = 0;
    let (mut seg, head) = Segment::start(id.into(), &header).unwrap();
    let mut msgs: Vec<Received> = head.iter().map(as_received).collect();
    for ev in evs {
        seg.write_event(ev).unwrap();
        msgs.extend(seg.flush(false).unwrap().iter().map(as_received));
    }
    for h in beats {
        msgs.extend(seg.heartbeat(h).iter().map(as_received));
    }
    numbered(&mut msgs);
    msgs
}

fn beat(wall_ns: u64) -> Heartbeat {
    Heartbeat {
        interval_ms: 10_000,
        wall_ns,
        events: 40,
        kernel_drops: 1,
        buffered: 0,
        dropped: 0,
        back: None,
    }
}

fn read(node: &str, msgs: Vec<Received>) -> NodeRead {
    let last = msgs.len() as u64;
    read_feed(node, Feed::from_messages(msgs, last)).unwrap()
}

#[test]
fn a_live_node_shows_its_pods_restarts_and_deaths() {
    let evs = node_events();
    let last_ts = evs.last().unwrap().ts_ns;
    let word = T0 + last_ts + 5 * SEC;
    let r = read("a", stream("a-run-0", &evs, &[beat(T0), beat(word)]));
    assert_eq!(r.last_event_ns, Some(T0 + last_ts));
    let now = word + 29 * SEC;
    let row = row(&r, now, DEFAULT_WINDOW);
    assert_eq!(row.state, State::Live);
    assert_eq!(
        row.last_word_ns,
        Some(word),
        "the later of its event and heartbeat"
    );
    assert_eq!(row.interval_ms, Some(10_000));
    let pods: Vec<(String, Vec<String>)> = row
        .pods
        .iter()
        .map(|p| (format!("{}/{}", p.namespace, p.name), p.containers.clone()))
        .collect();
    let app = vec!["app".to_string()];
    assert_eq!(
        pods,
        [
            ("shop/db".to_string(), app.clone()),
            ("shop/web".into(), app)
        ]
    );
    assert_eq!((row.restarts, row.deaths), (1, 2), "{:?}", row.ends);
    // Past three intervals without a word: silent since the last one, its pods as they were.
    let silent = super::row(&r, word + 31 * SEC, DEFAULT_WINDOW);
    assert_eq!(silent.state, State::Silent);
    assert_eq!(silent.pods, row.pods);
    let text = node_lines(&silent, 3600).join("\n");
    let t = clock::rfc3339(i128::from(word)).unwrap();
    assert!(text.starts_with(&format!("a: silent since {t}")), "{text}");
    assert!(text.contains("shop/web: app"), "{text}");
}

#[test]
fn restarts_and_deaths_before_the_window_are_left_out() {
    let evs = node_events();
    let r = read("a", stream("a-run-0", &evs, &[]));
    // The window starts after the node's last event.
    let now = T0 + evs.last().unwrap().ts_ns + 2 * SEC;
    let row = row(&r, now, Duration::from_secs(1));
    assert_eq!((row.restarts, row.deaths), (0, 0));
    assert_eq!(row.interval_ms, None, "no heartbeat: an agent before them");
    // Its last word is its last event; the default interval is assumed.
    assert_eq!(row.state, State::Live);
}

/// A dead node's stream with a heartbeat and deaths dated hours ahead of the reader (a
/// forger's, or a clock far off): not live, no death counted in the window, and said.
#[test]
fn a_word_dated_past_the_skew_is_not_the_nodes() {
    let evs = node_events();
    let last_ts = evs.last().unwrap().ts_ns;
    let hours = 3 * 3600 * SEC;
    let r = read("a", stream("a-run-0", &evs, &[beat(T0 + last_ts + hours)]));
    // The reader's clock: well after the node's events, hours before the forged heartbeat.
    let now = T0 + last_ts + 600 * SEC;
    let row = row(&r, now, DEFAULT_WINDOW);
    assert_eq!(row.state, State::Silent, "{:?}", row.notes);
    assert_eq!(row.last_word_ns, Some(T0 + last_ts));
    assert_eq!((row.heartbeat, row.interval_ms), (None, None));
    assert!(
        row.notes
            .iter()
            .any(|n| n.starts_with("its last heartbeat is dated")),
        "{:?}",
        row.notes
    );
    // The node's events themselves dated ahead: none is its word, its ends not counted.
    let early = T0 - hours;
    let ahead = super::row(&r, early, DEFAULT_WINDOW);
    assert_eq!(
        (ahead.state, ahead.restarts, ahead.deaths),
        (State::Unknown, 0, 0)
    );
    assert!(
        ahead
            .notes
            .iter()
            .any(|n| n.contains("restarts or deaths dated more than 300 s")),
        "{:?}",
        ahead.notes
    );
}

#[test]
fn an_agent_back_from_an_outage_says_what_it_buffered_and_dropped() {
    let back = Back {
        down_ns: T0 + 10 * SEC,
        back_ns: T0 + 70 * SEC,
        buffered: 1234,
        dropped: 5,
    };
    let beats = [
        beat(T0),
        Heartbeat {
            back: Some(back),
            ..beat(T0 + 70 * SEC)
        },
        beat(T0 + 80 * SEC),
    ];
    let r = read("b", stream("b-run-0", &node_events(), &beats));
    let row = row(&r, T0 + 85 * SEC, DEFAULT_WINDOW);
    assert_eq!(row.state, State::Live);
    let text = node_lines(&row, 3600).join("\n");
    let since = clock::rfc3339(i128::from(back.back_ns)).unwrap();
    let want = format!("back since {since}, 1234 events buffered, 5 dropped");
    assert!(text.contains(&want), "{text}");
    let json = serde_json::to_value(&row).unwrap();
    assert_eq!(json["back"]["buffered"], 1234);
    assert_eq!(json["state"], "live");
}

#[test]
fn hostile_names_are_escaped_and_pods_bounded() {
    let mut b = Stream::default();
    b.fork(1, 500);
    let argv = ["containerd-shim-runc-v2", "-id", "sb"];
    b.exec(500, "/usr/bin/containerd-shim-runc-v2", &argv);
    b.thread(500, 500, 501);
    create(&mut b, 600, "evil", "a\x1b[2J\nnode b: live");
    for i in 0..(MAX_PODS as u32 + 3) {
        create(&mut b, 1000 + 10 * i, &format!("c{i}"), &format!("p{i:03}"));
    }
    let r = read("a", stream("a-run-0", &b.events, &[beat(T0)]));
    let row = row(&r, T0 + SEC, DEFAULT_WINDOW);
    assert_eq!(row.pods.len(), MAX_PODS);
    assert_eq!(row.pods_left_out, 4);
    let text = node_lines(&row, 3600).join("\n");
    assert!(!text.contains('\x1b'), "{text}");
    assert!(
        text.lines().all(|l| !l.starts_with("node b")),
        "a pod name made a line of its own: {text}"
    );
    assert!(text.contains("and 4 more pods"), "{text}");
}

#[test]
fn only_a_server_is_a_fleet() {
    assert_eq!(server_of("nats://h:4222").unwrap(), "nats://h:4222");
    assert_eq!(server_of("nats://h:4222/").unwrap(), "nats://h:4222");
    // A cluster's list, with or without each item's scheme.
    for list in ["nats://a:1,nats://b:2", "nats://a:1,b:2"] {
        assert_eq!(server_of(list).unwrap(), "nats://a:1,b:2");
    }
    for bad in [
        "nats://h:4222/n1",
        "http://h",
        "nats://",
        "nats://u@h/",
        "nats://a:1,b:2/n1",
    ] {
        assert!(server_of(bad).is_err(), "{bad}");
    }
}
