use super::*;
use crate::event::{CapturedStr, CloneFlags, Comm, Event, EventKind, Syscall};
use std::io::Cursor;

pub(crate) fn ev(seq: u64, tgid: u32, tid: u32, kind: EventKind) -> Event {
    Event {
        seq,
        ts_ns: 1_000_000 + seq * 1000,
        tgid,
        tid,
        ppid: 1,
        uid: 0,
        cgroup_id: 42,
        comm: Comm::new("sh"),
        kind,
    }
}

/// One of each kind, with awkward values.
pub(crate) fn sample_events() -> Vec<Event> {
    let mut v = vec![
        ev(
            1,
            100,
            100,
            EventKind::CloneEnter {
                syscall: Syscall::Clone,
                flags: CloneFlags(0x0100_0000 | 0x8000),
                exit_signal: 17,
            },
        ),
        ev(
            2,
            100,
            100,
            EventKind::Fork {
                child_tid: 101,
                child_tgid: 101,
                child_ppid: 100,
                syscall: Some(Syscall::Clone),
                flags: Some(CloneFlags(0x8000)),
                child_ns: None,
            },
        ),
        ev(
            3,
            100,
            100,
            EventKind::SyscallExit {
                syscall: Syscall::Clone,
                ret: 101,
            },
        ),
        ev(
            4,
            101,
            101,
            EventKind::ExecEnter {
                syscall: Syscall::Execveat,
                dirfd: -100,
                at_flags: 0x1000,
                filename: CapturedStr {
                    value: "/usr/bin/runc ünïcode \"q\"".into(),
                    truncated: true,
                },
                argv: vec!["runc".into(), "--root".into(), "".into(), "init".into()],
                argv_truncated: true,
            },
        ),
        ev(
            5,
            101,
            101,
            EventKind::Exec {
                cred: None,
                old_tid: 101,
                filename: CapturedStr::new("/usr/bin/runc"),
            },
        ),
        ev(
            6,
            101,
            102,
            EventKind::PrctlEnter {
                option: 15,
                arg2: u64::MAX,
                name: Some(CapturedStr::new("runc:[2:INIT]")),
                shown: None,
            },
        ),
        ev(
            7,
            101,
            102,
            EventKind::PrctlEnter {
                option: 36,
                arg2: 1,
                name: None,
                shown: None,
            },
        ),
        ev(
            8,
            101,
            101,
            EventKind::ExitEnter {
                syscall: Syscall::ExitGroup,
                code: -1,
            },
        ),
        ev(
            20,
            101,
            101,
            EventKind::TaskExit {
                exit_code: 0x8b,
                group_dead: true,
            },
        ),
        ev(
            21,
            100,
            100,
            EventKind::Fork {
                child_tid: 103,
                child_tgid: 103,
                child_ppid: 0,
                syscall: None,
                flags: None,
                child_ns: None,
            },
        ),
        ev(
            22,
            100,
            100,
            EventKind::SyscallExit {
                syscall: Syscall::Vfork,
                ret: -11,
            },
        ),
    ];
    // Fields changing between events, time going backwards, a 16-byte comm, max values.
    v[3].ts_ns = 5;
    v[4].uid = u32::MAX;
    v[5].comm = Comm::from_bytes(b"0123456789abcdef");
    v[6].cgroup_id = u64::MAX;
    v[7].ppid = 0;
    v[8].ts_ns = u64::MAX;
    v[9].seq = 3; // backwards
    v[10].tgid = u32::MAX;
    v[10].tid = 0;
    v
}

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
