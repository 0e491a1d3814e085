//! Heartbeats written and read back: their text, and a segment's chain around them.

use super::*;
use crate::nats::tests::{as_received, numbered};
use crate::nats::{Received, SharedFeed};
use crate::synth::sample_events;
use crate::tracefile::tests::sample_header;
use std::sync::{Arc, Mutex};

fn beat(events: u64) -> Heartbeat {
    Heartbeat {
        interval_ms: 10_000,
        wall_ns: 1_700_000_000_000_000_000,
        events,
        kernel_drops: 2,
        buffered: 3,
        dropped: 4,
        back: None,
    }
}

#[test]
fn the_text_reads_back_and_anything_else_is_refused() {
    let mut h = beat(9);
    assert_eq!(Heartbeat::parse(h.text().as_bytes()), Some(h));
    h.back = Some(Back {
        down_ns: 5,
        back_ns: 6,
        buffered: 7,
        dropped: 8,
    });
    assert_eq!(Heartbeat::parse(h.text().as_bytes()), Some(h));
    let long = format!("{} x={}", beat(1).text(), "1".repeat(MAX_TEXT));
    for bad in [
        "",
        "v=2 interval_ms=1 wall_ns=1 events=1 kernel_drops=1 buffered=1 dropped=1",
        "v=1 interval_ms=1",
        "v=1 interval_ms=-1 wall_ns=1 events=1 kernel_drops=1 buffered=1 dropped=1",
        "v=1 interval_ms=1 wall_ns=1 events=1 kernel_drops=1 buffered=1 dropped=1 down_ns=1 back_ns=2",
        "v=1  interval_ms=1",
        long.as_str(),
    ] {
        assert_eq!(Heartbeat::parse(bad.as_bytes()), None, "{bad}");
    }
    assert_eq!(Heartbeat::parse(b"\xff=1"), None);
    // Unknown words are a later version's, and left.
    let more = format!("{} later=1", beat(1).text());
    assert_eq!(Heartbeat::parse(more.as_bytes()), Some(beat(1)));
}

/// Segment `id`: its header, a frames message per event with a heartbeat after each, and the
/// heartbeats' texts in order.
fn with_beats(id: &str) -> (Vec<Received>, Vec<Heartbeat>) {
    let (mut seg, head) = Segment::start(id.into(), &sample_header()).unwrap();
    let mut msgs: Vec<Received> = head.iter().map(as_received).collect();
    let mut beats = Vec::new();
    for (i, ev) in sample_events().iter().enumerate() {
        seg.write_event(ev).unwrap();
        msgs.extend(seg.flush(false).unwrap().iter().map(as_received));
        let h = beat(i as u64 + 1);
        msgs.extend(seg.heartbeat(&h).iter().map(as_received));
        beats.push(h);
    }
    (msgs, beats)
}

/// Reads `msgs` as a stream holding them: the events, the heartbeats heard, the feed.
fn read(mut msgs: Vec<Received>) -> (Vec<crate::Event>, Vec<(String, Heartbeat)>, SharedFeed) {
    numbered(&mut msgs);
    let last = msgs.len() as u64;
    let mut feed = Feed::from_messages(msgs, last);
    let heard = Arc::new(Mutex::new(Vec::new()));
    let h = heard.clone();
    feed.on_heartbeat(Box::new(move |id, beat| {
        h.lock().unwrap().push((id.to_string(), beat))
    }));
    let feed: SharedFeed = Arc::new(Mutex::new(feed));
    let mut events = Vec::new();
    while let Some(seg) = Feed::next_segment(&feed, true) {
        let mut r = crate::TraceReader::new(seg.unwrap()).unwrap();
        events.extend(r.events().map(|e| e.unwrap()));
        // Nothing of a heartbeat reached the trace reader: no bytes it had to skip.
        assert_eq!(r.tail().skipped_bytes, 0, "{:?}", r.tail());
    }
    let heard = heard.lock().unwrap().clone();
    (events, heard, feed)
}

#[test]
fn heartbeats_are_heard_and_never_read_as_trace_bytes() {
    let (msgs, beats) = with_beats("n1-run-0");
    assert!(msgs.iter().any(|m| m.part == Some(Part::Heartbeat)));
    let (events, heard, feed) = read(msgs);
    assert_eq!(events, sample_events(), "every event, nothing else");
    let want: Vec<_> = beats.iter().map(|b| ("n1-run-0".to_string(), *b)).collect();
    assert_eq!(heard, want);
    let f = crate::nats::lock(&feed);
    assert_eq!((f.forged(), f.skipped(), f.interleaved()), (0, 0, 0));
}

#[test]
fn a_forged_heartbeat_is_not_heard_and_cannot_take_an_index_from_the_agent() {
    let (mut msgs, beats) = with_beats("n1-run-0");
    // Someone who reads the stream copies the first heartbeat (its id, nonce and link) with
    // words of its own, and publishes it again after the agent's.
    let first = msgs
        .iter()
        .position(|m| m.part == Some(Part::Heartbeat))
        .unwrap();
    let mut copy = msgs[first].clone();
    copy.payload = Bytes::from(beat(999).text().into_bytes());
    msgs.insert(first + 1, copy.clone());
    // And a frames message under that heartbeat's index and link: the index is the agent's.
    let mut frames = msgs[first - 1].clone();
    frames.index = copy.index;
    frames.link = copy.link;
    msgs.insert(first + 2, frames);
    // A heartbeat ahead of the agent under the next index, without the next link.
    let mut ahead = copy.clone();
    ahead.index = copy.index.map(|i| i + 1);
    msgs.insert(first + 3, ahead);
    let (events, heard, feed) = read(msgs);
    assert_eq!(events, sample_events(), "the agent's events, none twice");
    assert_eq!(heard.len(), beats.len(), "{heard:?}");
    assert!(heard.iter().all(|(_, b)| b.events != 999));
    assert_eq!(crate::nats::lock(&feed).forged(), 3);
}

#[test]
fn heartbeats_of_a_segment_without_a_chain_are_never_heard() {
    let (mut msgs, _) = with_beats("n1-run-0");
    // An agent before chains: no link on any message. A heartbeat there is someone else's.
    for m in &mut msgs {
        m.link = None;
    }
    let (events, heard, feed) = read(msgs);
    assert_eq!(events, sample_events());
    assert!(heard.is_empty(), "{heard:?}");
    assert_eq!(
        crate::nats::lock(&feed).forged(),
        sample_events().len() as u64
    );
}

#[test]
fn forged_heartbeats_of_other_segments_end_no_segment_early() {
    // A forger cannot stretch or cut the agent's segment with heartbeats: those under other
    // ids are held and skipped as any other segment's messages are, and the agent's segment
    // is read to its end.
    let (mut msgs, beats) = with_beats("n1-run-0");
    let mut forged = msgs[2].clone();
    forged.segment = "n1-other-0".into();
    forged.part = Some(Part::Heartbeat);
    for _ in 0..5 {
        msgs.insert(3, forged.clone());
    }
    let (events, heard, feed) = read(msgs);
    assert_eq!(events, sample_events());
    assert_eq!(heard.len(), beats.len());
    assert_eq!(crate::nats::lock(&feed).skipped(), 5);
}

#[test]
fn an_outbox_tells_a_waiting_heartbeat_whatever_took_it_out() {
    let (mut seg, head) = Segment::start("n1-run-0".into(), &sample_header()).unwrap();
    let mut o = Outbox::new(10);
    o.push_all(head.clone());
    assert!(!o.holds_heartbeat());
    o.push_all(seg.heartbeat(&beat(1)));
    assert!(o.holds_heartbeat());
    // Published, or dropped with a stream that lost its segment: none waits any more.
    o.pop();
    o.pop();
    assert!(!o.holds_heartbeat());
    o.push_all(seg.heartbeat(&beat(2)));
    o.after_stream_lost("n1-run-1", &[]);
    assert!(!o.holds_heartbeat());
}
