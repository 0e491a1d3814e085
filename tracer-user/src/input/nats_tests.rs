//! A node's NATS stream read as one recording: segments cut inside a frame, forged segments
//! in the middle of the agent's, rotations, held messages, the follower's caught-up hook.

use super::Input;
use crate::nats::tests::{as_received, flushed_per_event, numbered, segment_of};
use crate::nats::{Fed, Feed, Part, Received, Segment, MAX_MESSAGE, QUIET_MESSAGES};
use crate::synth::sample_events;
use crate::tracefile::tests::sample_header;
use bytes::Bytes;
use std::sync::Arc;
use std::time::Duration;

/// Messages as a stream would hold them (sequence numbers from 1).
fn input_of(mut msgs: Vec<Received>) -> Input {
    numbered(&mut msgs);
    let last = msgs.len() as u64;
    Input::from_feed("nats://x/n", Feed::from_messages(msgs, last)).unwrap()
}

#[test]
fn a_segment_cut_inside_a_frame_ends_there_and_the_next_one_is_read() {
    let evs = sample_events();
    let mut msgs = flushed_per_event("a", &evs);
    // The agent stopped halfway through its last message.
    let last = msgs.last_mut().unwrap();
    last.payload = last.payload.slice(..last.payload.len() / 2);
    msgs.extend(flushed_per_event("b", &evs));
    let mut input = input_of(msgs);
    let got: Vec<_> = input.by_ref().collect::<Result<_, _>>().unwrap();
    let mut want = evs[..evs.len() - 1].to_vec();
    want.extend(evs.iter().cloned());
    assert_eq!(got, want);
    assert_eq!(input.cut_segments(), 1);
}

#[test]
fn a_follower_without_a_stored_segment_start_fails_at_once() {
    let (mut seg, head) = Segment::start("a".into(), &sample_header()).unwrap();
    seg.write_event(&sample_events()[0]).unwrap();
    let mut frames: Vec<Received> = seg.flush(false).unwrap().iter().map(as_received).collect();
    frames[0].seq = 7;
    assert!(!head.is_empty());
    // The stream still open (a live agent), its stored messages all frames.
    let (tx, rx) = std::sync::mpsc::sync_channel(4);
    tx.send(Fed::Msg(frames.remove(0))).unwrap();
    let (done, answer) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let opened = Input::from_feed("nats://x/n", Feed::new(rx, 7));
        let _ = done.send(opened.err().map(|e| e.to_string()));
    });
    let err = answer
        .recv_timeout(Duration::from_secs(30))
        .expect("opening waited for a segment that may never come")
        .expect("no segment start: an error");
    assert!(err.contains("no segment header"), "{err}");
    drop(tx);
}

#[test]
fn a_follower_hears_when_the_stored_events_are_read() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let evs = sample_events();
    // An agent's segment and the next one it rotated to.
    let mut msgs = flushed_per_event("n1-run-0", &evs);
    let b = flushed_per_event("n1-run-1", &evs);
    // Stored when the follower opened: segment 0, and 1 up to its 2nd event.
    let history = msgs.len() + (b.len() - evs.len()) + 2;
    msgs.extend(b);
    numbered(&mut msgs);
    let feed = Feed::from_messages(msgs, history as u64);
    let mut input = Input::from_feed("nats://x/n", feed).unwrap();
    let read = Arc::new(AtomicUsize::new(0));
    let at_hook = Arc::new(AtomicUsize::new(usize::MAX));
    let (r, h) = (read.clone(), at_hook.clone());
    input.on_caught_up(Box::new(move || {
        h.store(r.load(Ordering::SeqCst), Ordering::SeqCst)
    }));
    for ev in input.by_ref() {
        ev.unwrap();
        read.fetch_add(1, Ordering::SeqCst);
    }
    assert_eq!(read.load(Ordering::SeqCst), 2 * evs.len());
    assert_eq!(at_hook.load(Ordering::SeqCst), evs.len() + 2);
}

#[test]
fn a_forged_segment_start_inside_a_segment_is_reported_and_the_segment_read_whole() {
    let evs = sample_events();
    let mut msgs = flushed_per_event("n1-0123abcd-0", &evs);
    // Someone with publish rights on the subject starts a segment of their own in the
    // middle of the agent's.
    let forged = Received {
        segment: "n1-forged-0".into(),
        part: Some(Part::Header),
        index: Some(0),
        seq: 0,
        nonce: None,
        link: None,
        signed: None,
        payload: Bytes::from_static(b"not a trace file"),
    };
    msgs.insert(3, forged);
    // And the agent's next segment after it.
    msgs.extend(flushed_per_event("n1-0123abcd-1", &evs));
    let mut input = input_of(msgs);
    let got: Vec<_> = input.by_ref().collect::<Result<_, _>>().unwrap();
    let twice: Vec<_> = evs.iter().chain(evs.iter()).cloned().collect();
    assert_eq!(got, twice, "the agent's events, all of them");
    assert!(input.interleaved_messages() > 0);
    // The forged segment is no trace file: skipped and counted, not an end to reading.
    assert_eq!(input.bad_segments(), 1);
}

#[test]
fn a_forged_segment_with_frames_inside_a_segment_hides_none_of_it() {
    let evs = sample_events();
    let mut msgs = flushed_per_event("n1-0123abcd-0", &evs);
    // A whole forged segment, a trace file with events of its own, published in the
    // middle of the agent's: its header and two frames messages.
    let forged_evs: Vec<_> = evs.iter().take(2).cloned().collect();
    let forged = flushed_per_event("n1-forged-0", &forged_evs);
    for (k, m) in forged.into_iter().enumerate() {
        msgs.insert(3 + k, m);
    }
    let mut input = input_of(msgs);
    let got: Vec<_> = input.by_ref().collect::<Result<_, _>>().unwrap();
    // The agent's segment whole, then the forged one, read as its own segment after it.
    let want: Vec<_> = evs.iter().chain(forged_evs.iter()).cloned().collect();
    assert_eq!(got, want);
    assert_eq!(
        input.interleaved_messages(),
        (evs.len() - 2) as u64,
        "every message of the agent's after the forged start"
    );
    assert_eq!(input.skipped_messages(), 0);
}

#[test]
fn what_a_finished_segment_held_is_read_after_it() {
    let evs = sample_events();
    let mut msgs = segment_of("n1-0123abcd-0", &evs, true);
    let forged_evs: Vec<_> = evs.iter().take(2).cloned().collect();
    for (k, m) in flushed_per_event("n1-forged-0", &forged_evs)
        .into_iter()
        .enumerate()
    {
        msgs.insert(2 + k, m);
    }
    // The agent's next segment, after the first one's end record: the run's segments are
    // read on, the forged one after them.
    msgs.extend(segment_of("n1-0123abcd-1", &evs, true));
    let mut input = input_of(msgs);
    let got: Vec<_> = input.by_ref().collect::<Result<_, _>>().unwrap();
    let want: Vec<_> = evs
        .iter()
        .chain(evs.iter())
        .chain(forged_evs.iter())
        .cloned()
        .collect();
    assert_eq!(got, want);
    assert!(input.interleaved_messages() > 0);
}

#[test]
fn a_segment_silent_while_another_runs_on_ended_there() {
    let evs = sample_events();
    // An agent killed mid-segment (no end record), then restarted: a new run whose
    // messages outnumber QUIET_MESSAGES before the old one could have gone on.
    let mut msgs = flushed_per_event("n1-old-0", &evs[..2]);
    let mut long = Vec::new();
    while long.len() <= QUIET_MESSAGES + 2 {
        long.extend(evs.iter().cloned());
    }
    for (i, ev) in long.iter_mut().enumerate() {
        ev.seq = 1000 + i as u64;
    }
    msgs.extend(flushed_per_event("n1-new-0", &long));
    let mut input = input_of(msgs);
    let got: Vec<_> = input.by_ref().collect::<Result<_, _>>().unwrap();
    let want: Vec<_> = evs[..2].iter().chain(long.iter()).cloned().collect();
    assert_eq!(got, want, "both runs, in order, none lost");
    assert_eq!(input.interleaved_messages(), 0);
}

#[test]
fn a_rotation_ends_a_segment_at_its_successors_start() {
    let evs = sample_events();
    let mut msgs = flushed_per_event("n1-run-0", &evs[..3]);
    msgs.extend(flushed_per_event("n1-run-1", &evs[3..]));
    let mut input = input_of(msgs);
    let got: Vec<_> = input.by_ref().collect::<Result<_, _>>().unwrap();
    assert_eq!(got, evs);
    assert_eq!(input.interleaved_messages(), 0);
}

#[test]
fn segments_read_back_as_trace_files() {
    let evs = sample_events();
    let mut msgs = Vec::new();
    for id in ["a", "b"] {
        let (mut seg, head) = Segment::start(id.into(), &sample_header()).unwrap();
        msgs.extend(head.iter().map(as_received));
        for (i, ev) in evs.iter().enumerate() {
            seg.write_event(ev).unwrap();
            if i % 2 == 0 {
                msgs.extend(seg.flush(i == 0).unwrap().iter().map(as_received));
            }
        }
        if id == "a" {
            msgs.extend(seg.finish().unwrap().iter().map(as_received));
        } else {
            msgs.extend(seg.flush(true).unwrap().iter().map(as_received));
        }
    }
    // A late reader: frames of a segment whose header is gone come first.
    let mut late = vec![msgs[1].clone()];
    late.extend(msgs.iter().skip_while(|m| m.segment == "a").cloned());
    let mut input = input_of(msgs);
    assert_eq!(input.snapshot().len(), 2);
    let got: Vec<_> = input.by_ref().collect::<Result<_, _>>().unwrap();
    let twice: Vec<_> = evs.iter().chain(evs.iter()).cloned().collect();
    assert_eq!(got, twice);
    // The live segment has no end record yet.
    assert!(!input.tail().unwrap().clean_end);

    let mut input = input_of(late);
    let got: Vec<_> = input.by_ref().collect::<Result<_, _>>().unwrap();
    assert_eq!(got, evs);
    assert_eq!(input.skipped_messages(), 1);
}

#[test]
fn large_segments_are_cut_into_messages_that_join_again() {
    let mut header = sample_header();
    // A header far over one message: a big node's snapshot.
    header
        .extra
        .push(("note".into(), "x".repeat(3 * MAX_MESSAGE / 2)));
    let (mut seg, head) = Segment::start("big".into(), &header).unwrap();
    assert_eq!(head.len(), 2);
    assert!(head.iter().all(|m| m.payload.len() <= MAX_MESSAGE));
    let evs = sample_events();
    for ev in &evs {
        seg.write_event(ev).unwrap();
    }
    let tail = seg.finish().unwrap();
    assert_eq!(tail.iter().map(|m| m.events).sum::<u64>(), evs.len() as u64);
    let mut ids: Vec<u64> = head.iter().chain(&tail).map(|m| m.index).collect();
    ids.dedup();
    assert_eq!(ids, (0..ids.len() as u64).collect::<Vec<_>>());
    let msgs: Vec<Received> = head.iter().chain(&tail).map(as_received).collect();
    let mut input = input_of(msgs);
    assert_eq!(input.header().unwrap().extra, header.extra);
    let got: Vec<_> = input.by_ref().collect::<Result<_, _>>().unwrap();
    assert_eq!(got, evs);
    assert!(input.tail().unwrap().clean_end);
}

/// Frames numbered `from..from + n` (stats frames: no events), as someone who read the
/// stream and knows the next frame numbers would write them; with `exec`, the last one holds
/// an exec by pid 4194305 (a pid no sample event has).
fn frames_numbered(from: usize, n: usize, exec: bool) -> Bytes {
    let mut w = crate::tracefile::TraceWriter::new(Vec::new(), &sample_header()).unwrap();
    for _ in 0..from {
        w.write_stats(0, 0, 0).unwrap();
    }
    let start = w.bytes_written() as usize;
    for _ in 0..n {
        w.write_stats(0, 0, 0).unwrap();
    }
    if exec {
        w.write_event(&forged_exec()).unwrap();
        w.flush().unwrap();
    }
    let end = w.bytes_written() as usize;
    Bytes::from(w.finish().unwrap()[start..end].to_vec())
}

const FORGED_PID: u32 = 4_194_305;

fn forged_exec() -> crate::Event {
    let kind = crate::EventKind::Exec {
        old_tid: FORGED_PID,
        filename: crate::event::CapturedStr::new("/usr/bin/forged"),
        cred: None,
    };
    crate::Event::bare(2, 2, FORGED_PID, FORGED_PID, "forged", kind)
}

/// The agent's segment (header, one frame per event) with, after its first frame, a message
/// under its id holding frames 1 to 300 (the last with an exec of its own), numbered as the
/// agent's next message and carrying `nonce` (the segment's own when `None`) and the link of
/// the agent's last message (all a reader of the stream can know); its first frame is also
/// stored twice, as a publish can be.
fn segment_with_frames_ahead(nonce: Option<Option<String>>) -> Vec<Received> {
    let mut msgs = flushed_per_event("n1-0123abcd-0", &sample_events());
    let mut forged = msgs[1].clone();
    forged.payload = frames_numbered(1, 300, true);
    forged.index = Some(2);
    if let Some(nonce) = nonce {
        forged.nonce = nonce;
    }
    let retried = msgs[1].clone();
    msgs.insert(2, retried);
    msgs.insert(3, forged);
    msgs
}

#[test]
fn frames_numbered_ahead_by_someone_who_read_the_stream_are_dropped_unread() {
    let evs = sample_events();
    // A forger who read the stream has the segment's nonce and its links so far, and
    // publishes first under the agent's next index: without the next link it is not read.
    let mut input = input_of(segment_with_frames_ahead(None));
    let got: Vec<_> = input.by_ref().collect::<Result<_, _>>().unwrap();
    assert_eq!(
        got, evs,
        "every event of the agent's, and none of the forger's"
    );
    assert_eq!(
        (input.forged_messages(), input.duplicate_messages()),
        (1, 1)
    );
    let tail = input.tail().unwrap();
    assert_eq!((tail.forged_frames, tail.duplicate_frames), (0, 0));
    let notes = input.notes(false).join("\n");
    assert!(notes.contains("1 messages forged"), "{notes}");
    assert!(notes.contains("1 messages skipped: copies"), "{notes}");

    // A link guessed, or the agent's own index and link with other bytes (copied after
    // the agent published them): both dropped too.
    let mut msgs = flushed_per_event("n1-0123abcd-0", &evs);
    let mut guessed = msgs[1].clone();
    guessed.payload = frames_numbered(1, 3, true);
    guessed.index = Some(2);
    guessed.link = Some([0x5a; 16]);
    let mut copied = msgs[2].clone();
    copied.payload = frames_numbered(2, 3, true);
    msgs.insert(2, guessed);
    msgs.insert(4, copied);
    let mut input = input_of(msgs);
    let got: Vec<_> = input.by_ref().collect::<Result<_, _>>().unwrap();
    assert_eq!(got, evs);
    assert_eq!(input.forged_messages(), 2);
}

#[test]
fn segments_of_agents_before_proof_chains_still_tell_forged_frames_from_duplicates() {
    let evs = sample_events();
    let unlinked = || {
        let mut msgs = segment_with_frames_ahead(None);
        for m in &mut msgs {
            m.link = None;
        }
        msgs
    };
    // Read first, the forged frames are applied; the agent's under their numbers are not.
    let mut input = input_of(unlinked());
    let got: Vec<_> = input.by_ref().collect::<Result<_, _>>().unwrap();
    assert_eq!(got, [evs[0].clone(), forged_exec()]);
    let tail = input.tail().unwrap();
    assert_eq!(
        (tail.forged_frames, tail.duplicate_frames),
        (evs.len() as u64 - 1, 1),
        "the agent's frames under the forged numbers, and the retried one"
    );
    let notes = input.notes(false).join("\n");
    assert!(
        notes.contains(&format!("{} frames forged", evs.len() - 1)),
        "{notes}"
    );
    assert!(notes.contains("1 duplicated frames"), "{notes}");

    // Told as well once the agent rotated to its next segment.
    let mut msgs = unlinked();
    msgs.extend(flushed_per_event("n1-0123abcd-1", &evs));
    let mut input = input_of(msgs);
    let got: Vec<_> = input.by_ref().collect::<Result<_, _>>().unwrap();
    assert_eq!(got.len(), 2 + evs.len());
    let notes = input.notes(false).join("\n");
    let want = format!("earlier segments: {} frames forged", evs.len() - 1);
    assert!(notes.contains(&want), "{notes}");
}

#[test]
fn frames_without_their_segments_nonce_are_dropped_and_counted() {
    let evs = sample_events();
    // Someone who knows the segment's id but not its nonce (it cannot read the stream).
    for nonce in [None, Some("0".repeat(32))] {
        let mut input = input_of(segment_with_frames_ahead(Some(nonce)));
        let got: Vec<_> = input.by_ref().collect::<Result<_, _>>().unwrap();
        assert_eq!(got, evs, "every event of the agent's");
        assert_eq!(input.wrong_nonce_messages(), 1);
        assert_eq!(input.tail().unwrap().forged_frames, 0);
        let notes = input.notes(false).join("\n");
        assert!(notes.contains("1 messages dropped"), "{notes}");
    }
    // An agent before nonces (and links): its segments are read unchecked.
    let mut old = segment_with_frames_ahead(Some(None));
    for m in &mut old {
        m.nonce = None;
        m.link = None;
    }
    let mut input = input_of(old);
    let got: Vec<_> = input.by_ref().collect::<Result<_, _>>().unwrap();
    assert_eq!(got, [evs[0].clone(), forged_exec()]);
    assert_eq!(input.wrong_nonce_messages(), 0);
}
