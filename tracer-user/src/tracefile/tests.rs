use super::*;
use crate::event::{CapturedStr, CloneFlags, Comm, Event, EventKind, Syscall};
use crate::synth::{sample_event, sample_events};
use std::io::Cursor;

pub(crate) fn sample_header() -> Header {
    let mut h = Header::for_this_host(CaptureMode::Command(vec![
        "sh".into(),
        "-c".into(),
        "true".into(),
    ]));
    h.snapshot = vec![
        SnapshotEntry {
            pid: 1,
            ppid: 0,
            comm: "systemd".into(),
            exe: "/usr/lib/systemd/systemd".into(),
            argv: vec!["/sbin/init".into()],
            threads: vec![1],
            ..Default::default()
        },
        SnapshotEntry {
            pid: 100,
            ppid: 1,
            comm: "sh".into(),
            exe: String::new(),
            argv: vec![],
            threads: vec![100, 104],
            uid: 0,
            cred: Some(crate::synth::root_cred()),
            ..Default::default()
        },
    ];
    h.layouts = vec![(
        "sched/sched_process_fork".into(),
        "name: sched_process_fork\nformat:\n\tfield:char parent_comm[16];\toffset:8;\tsize:16;\n"
            .into(),
    )];
    h.extra = vec![("ring_bytes".into(), "1048576".into())];
    h
}

fn read_all(bytes: &[u8]) -> (Vec<Record>, Option<TraceFileError>, TailReport) {
    let mut r = match TraceReader::new(Cursor::new(bytes)) {
        Ok(r) => r,
        Err(e) => return (vec![], Some(e), TailReport::default()),
    };
    let mut recs = Vec::new();
    let mut err = None;
    for x in r.by_ref() {
        match x {
            Ok(rec) => recs.push(rec),
            Err(e) => {
                assert!(err.is_none(), "a second error after {e}");
                err = Some(e);
            }
        }
    }
    (recs, err, r.tail().clone())
}

/// The same through [`TraceReader::events`] (the path the commands use).
fn read_events(bytes: &[u8]) -> (Vec<Event>, Option<TraceFileError>) {
    let Ok(mut r) = TraceReader::new(Cursor::new(bytes)) else {
        return (vec![], None);
    };
    let mut evs = Vec::new();
    let mut err = None;
    for x in r.events() {
        match x {
            Ok(e) => evs.push(e),
            Err(e) => {
                assert!(err.is_none(), "a second error after {e}");
                err = Some(e);
            }
        }
    }
    (evs, err)
}

fn events_of(recs: &[Record]) -> Vec<Event> {
    recs.iter()
        .filter_map(|r| match r {
            Record::Event(e) => Some(e.clone()),
            _ => None,
        })
        .collect()
}

/// Rewrites a version-2 file as version 1 (9-byte frame headers); returns it and the end
/// offset of each frame.
pub(crate) fn to_v1(v2: &[u8]) -> (Vec<u8>, Vec<usize>) {
    let header_len = u32::from_le_bytes(v2[12..16].try_into().unwrap()) as usize;
    let mut out = v2[..PREAMBLE_LEN + header_len].to_vec();
    out[8..10].copy_from_slice(&1u16.to_le_bytes());
    let mut at = out.len();
    let mut ends = vec![];
    while at < v2.len() {
        let h = &v2[at..at + FRAME_HEADER_LEN];
        let len = u32::from_le_bytes(h[4..8].try_into().unwrap()) as usize;
        out.extend_from_slice(&h[4..9]);
        out.extend_from_slice(&h[21..25]);
        out.extend_from_slice(&v2[at + FRAME_HEADER_LEN..at + FRAME_HEADER_LEN + len]);
        ends.push(out.len());
        at += FRAME_HEADER_LEN + len;
    }
    (out, ends)
}

/// Appends a version-2 frame with valid checksums.
pub(crate) fn push_frame(b: &mut Vec<u8>, kind: u8, number: u32, before: u64, payload: &[u8]) {
    let start = b.len();
    b.extend_from_slice(&FRAME_SYNC);
    b.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    b.push(kind);
    b.extend_from_slice(&number.to_le_bytes());
    b.extend_from_slice(&before.to_le_bytes());
    b.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
    let head_crc = crc32fast::hash(&b[start..]);
    b.extend_from_slice(&head_crc.to_le_bytes());
    b.extend_from_slice(payload);
}

/// Each frame of a file: its byte range and its events.
type Frames = Vec<(std::ops::Range<usize>, Vec<Event>)>;

/// A file of several frames, and each frame's byte range and events (events frames of two
/// events, a stats frame in the middle, the end frame last).
fn framed_sample() -> (Vec<u8>, Frames) {
    let evs = sample_events();
    let mut w = TraceWriter::new(Vec::new(), &sample_header()).unwrap();
    let mut frames = vec![];
    let mut start = w.bytes_written() as usize;
    for (i, pair) in evs.chunks(2).enumerate() {
        for e in pair {
            w.write_event(e).unwrap();
        }
        w.flush().unwrap();
        let end = w.bytes_written() as usize;
        frames.push((start..end, pair.to_vec()));
        start = end;
        if i == 1 {
            w.write_stats(3, 0, 0).unwrap();
            let end = w.bytes_written() as usize;
            frames.push((start..end, vec![]));
            start = end;
        }
    }
    let bytes = w.finish().unwrap();
    frames.push((start..bytes.len(), vec![]));
    (bytes, frames)
}

// ---- the tests, one file per topic ----

mod contents;
mod damage;
mod frames;
