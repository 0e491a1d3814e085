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

#[test]
fn round_trip_header_events_and_end() {
    let h = sample_header();
    let evs = sample_events();
    let bytes = to_bytes(&h, &evs).unwrap();
    let mut r = TraceReader::new(Cursor::new(&bytes)).unwrap();
    assert_eq!(r.header(), &h);
    let got: Vec<Event> = r.events().collect::<Result<_, _>>().unwrap();
    assert_eq!(got, evs);
    assert!(r.tail().clean_end);
    assert_eq!(r.tail().unusable_bytes, 0);
    let end = r.last_stats().unwrap();
    assert_eq!(end.events, evs.len() as u64);
    assert_eq!(end.last_seq, 22);
    assert_eq!(end.seq_gaps, 22 - evs.len() as u64);
}

#[test]
fn annotations_read_back_are_bounded_like_a_live_capture() {
    use crate::lineage::k8s::{MAX_ID_BYTES, MAX_VALUE_BYTES};
    let huge = "é".repeat(1 << 19);
    let mut annotations = std::collections::BTreeMap::new();
    annotations.insert("io.kubernetes.cri.sandbox-name".to_string(), huge.clone());
    for i in 0..1000 {
        annotations.insert(format!("x.forged/{i}"), huge[..1000].to_string());
    }
    let meta = ev(
        1,
        7,
        7,
        EventKind::ContainerMeta {
            pid: 7,
            container_id: "c".repeat(1 << 20),
            annotations,
        },
    );
    let bytes = to_bytes(&sample_header(), &[meta]).unwrap();
    let (got, err) = read_events(&bytes);
    assert!(err.is_none(), "{err:?}");
    let EventKind::ContainerMeta {
        container_id,
        annotations,
        ..
    } = &got[0].kind
    else {
        panic!("{:?}", got[0].kind);
    };
    assert!(container_id.len() <= MAX_ID_BYTES);
    assert_eq!(annotations.len(), 1, "only the known keys are kept");
    let name = &annotations["io.kubernetes.cri.sandbox-name"];
    assert!(name.len() <= MAX_VALUE_BYTES && huge.starts_with(name.as_str()));
}

#[test]
fn stats_frames_come_between_events() {
    let h = sample_header();
    let evs = sample_events();
    let mut w = TraceWriter::new(Vec::new(), &h).unwrap();
    w.write_event(&evs[0]).unwrap();
    w.write_stats(3, 10, 1).unwrap();
    w.write_event(&evs[1]).unwrap();
    let bytes = w.finish().unwrap();
    let (recs, err, tail) = read_all(&bytes);
    assert!(err.is_none());
    assert!(tail.clean_end);
    assert_eq!(recs.len(), 4);
    assert_eq!(recs[0], Record::Event(evs[0].clone()));
    match &recs[1] {
        Record::Stats(s) => {
            assert_eq!(
                (s.events, s.drops, s.seq_issued, s.decode_errors),
                (1, 3, 10, 1)
            )
        }
        r => panic!("expected stats, got {r:?}"),
    }
    assert_eq!(recs[2], Record::Event(evs[1].clone()));
    assert!(matches!(recs[3], Record::End(s) if s.events == 2 && s.drops == 3));
}

#[test]
fn many_events_span_many_frames() {
    let h = Header::default();
    let base = sample_events();
    let evs: Vec<Event> = (0..50_000u64)
        .map(|i| {
            let mut e = base[(i % base.len() as u64) as usize].clone();
            e.seq = i + 1;
            e
        })
        .collect();
    let bytes = to_bytes(&h, &evs).unwrap();
    let (recs, err, tail) = read_all(&bytes);
    assert!(err.is_none());
    assert!(tail.frames > 2, "{} frames", tail.frames);
    assert_eq!(events_of(&recs), evs);
}

#[test]
fn every_truncation_keeps_whole_frames_and_reports_the_tail() {
    let h = sample_header();
    let evs = sample_events();
    let mut w = TraceWriter::new(Vec::new(), &h).unwrap();
    // Frame boundaries: one frame per flush.
    let mut boundaries = vec![];
    for e in &evs {
        w.write_event(e).unwrap();
        w.flush().unwrap();
        boundaries.push(w.bytes_written());
    }
    let bytes = w.finish().unwrap();
    for cut in 0..bytes.len() {
        let (recs, err, tail) = read_all(&bytes[..cut]);
        // Events whose frame ended at or before the cut are all there, in order.
        let whole = boundaries.iter().filter(|&&b| b as usize <= cut).count();
        let got = events_of(&recs);
        let (got2, err2) = read_events(&bytes[..cut]);
        assert_eq!(got2, got, "events() vs records at cut {cut}");
        if err2.is_some() {
            assert!(err.is_some());
        }
        if let Some(TraceFileError::BadMagic { .. } | TraceFileError::Truncated { .. }) = &err {
        } else if let Some(e) = &err {
            panic!("cut {cut}: unexpected error {e}");
        }
        if recs.is_empty() && err.is_some() && cut < boundaries[0] as usize {
            // Inside the preamble/header/first frame.
            assert!(got.is_empty());
            continue;
        }
        assert_eq!(got, evs[..whole].to_vec(), "cut at {cut}");
        assert!(!tail.clean_end);
        let expected_tail =
            cut as u64 - boundaries.get(whole.wrapping_sub(1)).copied().unwrap_or(0);
        if whole > 0 && whole < evs.len() {
            assert_eq!(tail.unusable_bytes, expected_tail, "cut at {cut}");
        }
    }
    let (recs, err, tail) = read_all(&bytes);
    assert!(err.is_none() && tail.clean_end);
    assert_eq!(events_of(&recs), evs);
}

#[test]
fn bad_magic_version_length_and_flags_are_named() {
    let bytes = to_bytes(&sample_header(), &sample_events()).unwrap();

    let mut b = bytes.clone();
    b[1] = b'X';
    let e = TraceReader::new(Cursor::new(&b)).err().unwrap();
    assert!(matches!(e, TraceFileError::BadMagic { .. }), "{e}");
    assert!(e.to_string().starts_with("byte 0: not a tracer trace file"));

    let e = TraceReader::new(Cursor::new(b"strace: Process 1 attached\n"))
        .err()
        .unwrap();
    assert!(matches!(e, TraceFileError::BadMagic { .. }));

    let mut b = bytes.clone();
    b[8] = 9;
    let e = TraceReader::new(Cursor::new(&b)).err().unwrap();
    assert!(
        matches!(
            e,
            TraceFileError::UnknownVersion {
                found: 9,
                offset: 8,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("version 9 is not supported"));

    let mut b = bytes.clone();
    b[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
    let e = TraceReader::new(Cursor::new(&b)).err().unwrap();
    assert!(
        matches!(e, TraceFileError::ImpossibleLength { offset: 12, .. }),
        "{e}"
    );

    let mut b = bytes.clone();
    b[10] = 1;
    let e = TraceReader::new(Cursor::new(&b)).err().unwrap();
    assert!(
        matches!(e, TraceFileError::Garbage { offset: 10, .. }),
        "{e}"
    );

    let mut b = bytes.clone();
    b[PREAMBLE_LEN + 2] ^= 0xff;
    let e = TraceReader::new(Cursor::new(&b)).err().unwrap();
    assert!(
        matches!(e, TraceFileError::Checksum { offset: 20, .. }),
        "{e}"
    );
}

#[test]
/// Version 1 has no frame marker: the first damaged frame stops the reader (every good frame
/// before it delivered), as it always did.
fn v1_impossible_frame_length_and_garbage_frames_stop_after_good_frames() {
    let h = Header::default();
    let evs = sample_events();
    let mut w = TraceWriter::new(Vec::new(), &h).unwrap();
    w.write_event(&evs[0]).unwrap();
    w.flush().unwrap();
    w.write_event(&evs[1]).unwrap();
    let (bytes, ends) = to_v1(&w.finish().unwrap());
    let good_end = ends[0];

    // Impossible length.
    let mut b = bytes.clone();
    b[good_end..good_end + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    let (recs, err, tail) = read_all(&b);
    assert_eq!(events_of(&recs), vec![evs[0].clone()]);
    let err = err.unwrap();
    assert!(
        matches!(err, TraceFileError::ImpossibleLength { offset, .. } if offset == good_end as u64),
        "{err}"
    );
    assert_eq!(tail.unusable_bytes, (b.len() - good_end) as u64);
    assert_eq!(tail.unusable_from, Some(good_end as u64));

    // Unknown mandatory frame type.
    let mut b = bytes.clone();
    b[good_end + 4] = 9;
    let (recs, err, _) = read_all(&b);
    assert_eq!(events_of(&recs).len(), 1);
    assert!(matches!(
        err,
        Some(TraceFileError::UnknownFrame { kind: 9, .. })
    ));

    // Flipped payload byte: checksum.
    let mut b = bytes.clone();
    b[good_end + FRAME_HEADER_LEN_V1 + 1] ^= 0x55;
    let (recs, err, _) = read_all(&b);
    assert_eq!(events_of(&recs).len(), 1);
    assert!(matches!(err, Some(TraceFileError::Checksum { .. })));

    // Garbage with a valid checksum (a buggy writer): names the byte inside the frame.
    let mut b = bytes[..good_end].to_vec();
    let payload = [0x0fu8, 0, 0];
    b.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    b.push(frame_type::EVENTS);
    b.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
    b.extend_from_slice(&payload);
    let (recs, err, tail) = read_all(&b);
    assert_eq!(events_of(&recs).len(), 1);
    let err = err.unwrap();
    assert!(
        matches!(err, TraceFileError::Garbage { offset, .. } if offset == (good_end + FRAME_HEADER_LEN_V1) as u64),
        "{err}"
    );
    assert!(err.to_string().contains("expected an event tag"), "{err}");
    assert_eq!(tail.unusable_bytes, (FRAME_HEADER_LEN_V1 + 3) as u64);

    // Optional unknown frame types are skipped.
    let mut b = bytes[..good_end].to_vec();
    b.extend_from_slice(&2u32.to_le_bytes());
    b.push(0x90);
    b.extend_from_slice(&crc32fast::hash(b"hi").to_le_bytes());
    b.extend_from_slice(b"hi");
    b.extend_from_slice(&bytes[good_end..]);
    let (recs, err, tail) = read_all(&b);
    assert!(err.is_none());
    assert!(tail.clean_end);
    assert_eq!(events_of(&recs), evs[..2].to_vec());

    // Data after the end record.
    let mut b = bytes.clone();
    b.extend_from_slice(b"junk");
    let (recs, err, tail) = read_all(&b);
    assert_eq!(events_of(&recs).len(), 2);
    assert!(matches!(err, Some(TraceFileError::AfterEnd { .. })));
    assert_eq!(tail.unusable_bytes, 4);
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

/// Which frames' events `got` is made of, in order; `None` when it is not whole frames.
fn frames_kept(
    got: &[Event],
    frames: &[(std::ops::Range<usize>, Vec<Event>)],
) -> Option<Vec<bool>> {
    let mut rest = got;
    let mut kept = vec![];
    for (_, evs) in frames {
        let whole = !evs.is_empty() && rest.starts_with(evs);
        if whole {
            rest = &rest[evs.len()..];
        }
        kept.push(whole || evs.is_empty());
    }
    rest.is_empty().then_some(kept)
}

#[test]
fn every_single_byte_corruption_is_an_error_or_harmless() {
    // Any byte of the file damaged in any way gives: an error (the preamble and header), or
    // exactly the original events, or the original events minus the damaged frame, with a
    // report that names the bytes, the frame and the events skipped.
    let (bytes, frames) = framed_sample();
    let evs = sample_events();
    let first_frame = frames[0].0.start;
    for i in 0..bytes.len() {
        for x in [0x01u8, 0x80, 0xff] {
            let mut b = bytes.clone();
            b[i] ^= x;
            let (recs, err, tail) = read_all(&b);
            if i < first_frame {
                // The version byte is not checksummed: 3 read as 2 is harmless while the
                // events use no kind version 3 added (and an error when they do).
                let same = err.is_none() && events_of(&recs) == evs;
                assert!(
                    (err.is_some() && recs.is_empty()) || (i == 8 && x == 1 && same),
                    "byte {i}: header damage read"
                );
                continue;
            }
            assert!(err.is_none(), "byte {i} ^ {x:#x}: {err:?}");
            let (k, (range, lost)) = frames
                .iter()
                .enumerate()
                .find(|(_, (r, _))| r.contains(&i))
                .unwrap();
            let got = events_of(&recs);
            let kept = frames_kept(&got, &frames).expect("whole frames");
            let want: Vec<bool> = (0..frames.len())
                .map(|j| j != k || lost.is_empty())
                .collect();
            assert_eq!(kept, want, "byte {i} ^ {x:#x}: only frame {k} may be lost");
            assert_eq!(got.len(), evs.len() - lost.len());
            if k + 1 == frames.len() {
                // The end frame: nothing after it to resynchronize at.
                assert!(!tail.clean_end);
                assert_eq!(tail.unusable_from, Some(range.start as u64), "byte {i}");
                assert_eq!(tail.unusable_bytes, range.len() as u64);
            } else {
                assert!(tail.clean_end, "byte {i}");
                assert_eq!(tail.damage_count, 1, "byte {i} ^ {x:#x}");
                let d = &tail.damage[0];
                assert_eq!(
                    (d.offset, d.bytes, d.frames, d.events),
                    (
                        range.start as u64,
                        range.len() as u64,
                        Some(1),
                        Some(lost.len() as u64)
                    ),
                    "byte {i} ^ {x:#x}: {d}"
                );
                assert_eq!(tail.count_disagrees(), !lost.is_empty());
            }
        }
    }
}

#[test]
fn a_flipped_length_bit_costs_that_frame_only() {
    let (bytes, frames) = framed_sample();
    // The second events frame: its payload length field is at +4..+8.
    let (range, lost) = &frames[1];
    for bit in 0..32 {
        let mut b = bytes.clone();
        b[range.start + 4 + bit / 8] ^= 1 << (bit % 8);
        let (recs, err, tail) = read_all(&b);
        assert!(err.is_none());
        let got = events_of(&recs);
        let want: Vec<Event> = sample_events()
            .into_iter()
            .filter(|e| !lost.contains(e))
            .collect();
        assert_eq!(got, want, "bit {bit}");
        assert_eq!(tail.skipped_frames, 1);
        assert_eq!(tail.skipped_events, lost.len() as u64);
        assert!(tail
            .warnings()
            .iter()
            .any(|w| w.contains(&format!("byte {}", range.start))));
    }
}

#[test]
fn a_duplicated_frame_is_read_once_and_reported() {
    let (bytes, frames) = framed_sample();
    let r = frames[1].0.clone();
    let mut b = bytes[..r.end].to_vec();
    b.extend_from_slice(&bytes[r.clone()]);
    b.extend_from_slice(&bytes[r.end..]);
    let (recs, err, tail) = read_all(&b);
    assert!(err.is_none());
    assert_eq!(events_of(&recs), sample_events());
    assert_eq!((tail.duplicate_frames, tail.forged_frames), (1, 0));
    assert!(!tail.count_disagrees());
    assert!(tail
        .warnings()
        .iter()
        .any(|w| w.contains("1 duplicated frames")));

    // Version 1 has no frame numbers: the events come twice, and the end record's count says
    // so.
    let (v1, ends) = to_v1(&bytes);
    let (s, e) = (ends[0], ends[1]);
    let mut b = v1[..e].to_vec();
    b.extend_from_slice(&v1[s..e]);
    b.extend_from_slice(&v1[e..]);
    let (recs, err, tail) = read_all(&b);
    assert!(err.is_none());
    assert_eq!(events_of(&recs).len(), sample_events().len() + 2);
    assert!(tail.count_disagrees());
    let w = tail.warnings().join("\n");
    assert!(
        w.contains(&format!(
            "the end record counts {} events written, {} were read",
            sample_events().len(),
            sample_events().len() + 2
        )),
        "{w}"
    );
}

/// Frame 1 of another writer (same number, other events), as a forger who knows the numbers
/// would write it.
fn forged_frame_one() -> Vec<u8> {
    let evs = sample_events();
    let mut w = TraceWriter::new(Vec::new(), &sample_header()).unwrap();
    w.write_event(&evs[0]).unwrap();
    w.flush().unwrap();
    let start = w.bytes_written() as usize;
    w.write_event(&evs[4]).unwrap();
    w.flush().unwrap();
    let end = w.bytes_written() as usize;
    w.finish().unwrap()[start..end].to_vec()
}

#[test]
fn a_frame_number_read_again_with_other_bytes_is_a_forgery_not_a_duplicate() {
    let (bytes, frames) = framed_sample();
    let r = frames[1].0.clone();
    // The real frame 1, then a forged frame 1, then a true copy of the real one.
    let mut b = bytes[..r.end].to_vec();
    b.extend_from_slice(&forged_frame_one());
    b.extend_from_slice(&bytes[r.clone()]);
    b.extend_from_slice(&bytes[r.end..]);
    let (recs, err, tail) = read_all(&b);
    assert!(err.is_none(), "{err:?}");
    assert_eq!(
        events_of(&recs),
        sample_events(),
        "the forged frame was read"
    );
    assert_eq!((tail.forged_frames, tail.duplicate_frames), (1, 1));
    let w = tail.warnings().join("\n");
    assert!(w.contains("1 frames forged"), "{w}");
    assert!(tail.damaged());
}

#[test]
fn damage_spanning_frames_is_one_stretch_with_its_counts() {
    let (bytes, frames) = framed_sample();
    let mut b = bytes.clone();
    // Garbage over the whole of frames 0 and 1 and the start of the stats frame.
    for x in &mut b[frames[0].0.start..frames[2].0.start + 3] {
        *x = 0xa5;
    }
    let (recs, err, tail) = read_all(&b);
    assert!(err.is_none());
    assert_eq!(events_of(&recs), sample_events()[4..].to_vec());
    assert_eq!(tail.damage_count, 1);
    assert_eq!(tail.skipped_frames, 3);
    assert_eq!(tail.skipped_events, 4);
    assert_eq!(
        tail.skipped_bytes,
        (frames[3].0.start - frames[0].0.start) as u64
    );
}

#[test]
fn version_1_files_still_read() {
    let (bytes, _) = framed_sample();
    let (v1, _) = to_v1(&bytes);
    let (recs, err, tail) = read_all(&v1);
    assert!(err.is_none() && tail.clean_end);
    assert_eq!(events_of(&recs), sample_events());
    assert_eq!(
        TraceReader::new(Cursor::new(&v1))
            .unwrap()
            .header()
            .format_version,
        1
    );
}

#[test]
fn created_files_are_0600_and_stay_so() {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join(format!("tracefile-perm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("x.trace");
    std::fs::write(&path, b"old").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let w = TraceWriter::create(&path, &sample_header()).unwrap();
    w.finish().unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let mut r = TraceReader::open(&path).unwrap();
    assert_eq!(r.events().count(), 0);
    assert!(r.tail().clean_end);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn huge_event_is_refused_not_written() {
    let mut w = TraceWriter::new(Vec::new(), &Header::default()).unwrap();
    let small = sample_events()[0].clone();
    w.write_event(&small).unwrap();
    let mut big = sample_events()[3].clone();
    if let EventKind::ExecEnter { argv, .. } = &mut big.kind {
        *argv = vec!["x".repeat(1 << 20); 17];
    }
    assert!(matches!(
        w.write_event(&big),
        Err(TraceFileError::EventTooLarge { .. })
    ));
    w.write_event(&small).unwrap();
    let bytes = w.finish().unwrap();
    let (recs, err, _) = read_all(&bytes);
    assert!(err.is_none());
    assert_eq!(events_of(&recs), vec![small.clone(), small]);
}

#[test]
fn boot_time_parses() {
    assert!(boot_time_ns().unwrap() > 0);
}

fn engine_json(snapshot: &[crate::lineage::SnapshotProcess], evs: &[Event]) -> serde_json::Value {
    let mut e = crate::lineage::Engine::seeded(snapshot);
    for ev in evs {
        e.apply(ev);
    }
    serde_json::json!({
        "tree": crate::lineage::tree_json(&e),
        "stories": crate::lineage::story_json(&crate::lineage::stories(&e)),
        "text": crate::lineage::tree_text(&e, Default::default()),
    })
}

fn engine_json_via_file(header: &Header, evs: &[Event]) -> serde_json::Value {
    let bytes = to_bytes(header, evs).unwrap();
    let mut r = TraceReader::new(Cursor::new(&bytes)).unwrap();
    let snapshot = r.header().snapshot_processes();
    let mut e = crate::lineage::Engine::seeded(&snapshot);
    for ev in r.events() {
        e.apply(&ev.unwrap());
    }
    assert!(r.tail().clean_end);
    serde_json::json!({
        "tree": crate::lineage::tree_json(&e),
        "stories": crate::lineage::story_json(&crate::lineage::stories(&e)),
        "text": crate::lineage::tree_text(&e, Default::default()),
    })
}

#[test]
fn engine_fed_from_the_file_ends_in_the_same_tree_as_fed_directly() {
    let mut h = sample_header();
    h.snapshot = synth::storm_snapshot();
    let evs: Vec<Event> = synth::Storm::new(30_000).collect();
    let direct = engine_json(&h.snapshot_processes(), &evs);
    assert!(direct["stories"]["stories"].as_array().unwrap().len() > 10);
    assert_eq!(engine_json_via_file(&h, &evs), direct);
}

mod prop {
    use super::*;
    use proptest::prelude::*;

    fn arb_syscall() -> impl Strategy<Value = Syscall> {
        (1u32..=9).prop_map(|i| Syscall::from_wire(i).unwrap())
    }

    fn arb_cstr() -> impl Strategy<Value = CapturedStr> {
        (".{0,20}", any::<bool>()).prop_map(|(value, truncated)| CapturedStr { value, truncated })
    }

    fn arb_kind() -> impl Strategy<Value = EventKind> {
        prop_oneof![
            (arb_syscall(), any::<u64>(), any::<u32>()).prop_map(|(syscall, f, exit_signal)| {
                EventKind::CloneEnter {
                    syscall,
                    flags: CloneFlags(f),
                    exit_signal,
                }
            }),
            (arb_syscall(), any::<i64>())
                .prop_map(|(syscall, ret)| EventKind::SyscallExit { syscall, ret }),
            (
                arb_syscall(),
                any::<i64>(),
                any::<u32>(),
                arb_cstr(),
                proptest::collection::vec(".{0,8}", 0..5),
                any::<bool>()
            )
                .prop_map(
                    |(syscall, dirfd, at_flags, filename, argv, argv_truncated)| {
                        EventKind::ExecEnter {
                            syscall,
                            dirfd,
                            at_flags,
                            filename,
                            argv,
                            argv_truncated,
                        }
                    }
                ),
            (arb_syscall(), any::<i32>())
                .prop_map(|(syscall, code)| EventKind::ExitEnter { syscall, code }),
            (any::<u32>(), any::<u64>(), proptest::option::of(arb_cstr())).prop_map(
                |(option, arg2, name)| EventKind::PrctlEnter {
                    option,
                    arg2,
                    name,
                    shown: None
                }
            ),
            (
                any::<u32>(),
                any::<u32>(),
                any::<u32>(),
                proptest::option::of(arb_syscall()),
                proptest::option::of(any::<u64>())
            )
                .prop_map(|(child_tid, child_tgid, child_ppid, syscall, flags)| {
                    EventKind::Fork {
                        child_tid,
                        child_tgid,
                        child_ppid,
                        syscall,
                        flags: flags.map(CloneFlags),
                        child_ns: None,
                    }
                }),
            (any::<u32>(), arb_cstr()).prop_map(|(old_tid, filename)| EventKind::Exec {
                old_tid,
                filename,
                cred: None
            }),
            (
                any::<u32>(),
                arb_cstr(),
                any::<[u32; 6]>(),
                any::<(bool, bool, u64, u64)>()
            )
                .prop_map(|(old_tid, filename, ids, (host_mnt, exe, dev, ino))| {
                    let exe = exe.then_some(crate::event::ExeFile {
                        dev,
                        ino,
                        uid: ids[5],
                        mode: ids[4],
                        nlink: ids[3],
                    });
                    let cred = crate::event::ExecCred {
                        euid: ids[0],
                        fsuid: ids[1],
                        userns_level: ids[2],
                        pidns_level: ids[3],
                        mnt_ns: ids[4],
                        host_mnt,
                        exe,
                    };
                    EventKind::Exec {
                        old_tid,
                        filename,
                        cred: Some(cred),
                    }
                }),
            (any::<u32>(), any::<bool>()).prop_map(|(exit_code, group_dead)| {
                EventKind::TaskExit {
                    exit_code,
                    group_dead,
                }
            }),
        ]
    }

    prop_compose! {
        fn arb_event()(
            seq in any::<u64>(), ts_ns in any::<u64>(),
            tgid in prop_oneof![Just(100u32), any::<u32>()],
            same_tid in any::<bool>(), tid in any::<u32>(),
            ppid in prop_oneof![Just(1u32), any::<u32>()],
            uid in prop_oneof![Just(0u32), any::<u32>()],
            cgroup_id in prop_oneof![Just(7u64), any::<u64>()],
            comm in proptest::collection::vec(1u8..=255, 0..=16),
            kind in arb_kind(),
        ) -> Event {
            Event {
                seq, ts_ns, tgid, tid: if same_tid { tgid } else { tid }, ppid, uid, cgroup_id,
                comm: Comm::from_bytes(&comm), kind,
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        #[test]
        fn write_then_read_is_identity(evs in proptest::collection::vec(arb_event(), 0..200)) {
            let bytes = to_bytes(&sample_header(), &evs).unwrap();
            let mut r = TraceReader::new(Cursor::new(&bytes)).unwrap();
            let got: Vec<Event> = r.events().collect::<Result<_, _>>().unwrap();
            prop_assert_eq!(got, evs);
            prop_assert!(r.tail().clean_end);
        }

        #[test]
        fn engine_state_survives_the_file(
            evs in proptest::collection::vec(arb_event(), 0..100),
            storm_len in 0u64..400,
            drop_every in 2usize..50,
        ) {
            // Random events, and a realistic storm with events lost here and there.
            let mut h = sample_header();
            h.snapshot = synth::storm_snapshot();
            let mut all: Vec<Event> = synth::Storm::new(storm_len)
                .enumerate()
                .filter(|(i, _)| i % drop_every != 0)
                .map(|(_, e)| e)
                .collect();
            all.extend(evs);
            let direct = engine_json(&h.snapshot_processes(), &all);
            prop_assert_eq!(engine_json_via_file(&h, &all), direct);
        }

        #[test]
        fn random_frames_with_valid_checksums_never_panic(
            frames in proptest::collection::vec(
                (prop_oneof![Just(1u8), Just(2), Just(3), Just(0x90), any::<u8>()],
                 proptest::collection::vec(any::<u8>(), 0..200)),
                1..6),
        ) {
            let mut bytes = to_bytes(&Header::default(), &[]).unwrap();
            // Keep the header, drop the end record: random frames follow.
            let body_len = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
            bytes.truncate(PREAMBLE_LEN + body_len);
            for (i, (kind, payload)) in frames.iter().enumerate() {
                push_frame(&mut bytes, *kind, i as u32, 0, payload);
            }
            let (recs, err, tail) = read_all(&bytes);
            if let Some(e) = &err {
                prop_assert!(e.offset().is_some());
                prop_assert!(tail.unusable_bytes > 0);
            }
            // What was read re-encodes to the same events.
            let evs = events_of(&recs);
            let again = to_bytes(&Header::default(), &evs).unwrap();
            let (recs2, err2, _) = read_all(&again);
            prop_assert!(err2.is_none());
            prop_assert_eq!(events_of(&recs2), evs);
        }

        #[test]
        fn random_bytes_after_a_valid_header_never_panic(tail in proptest::collection::vec(any::<u8>(), 0..512)) {
            let mut bytes = to_bytes(&Header::default(), &[]).unwrap();
            bytes.truncate(bytes.len() - FRAME_HEADER_LEN - 7);
            bytes.extend_from_slice(&tail);
            let _ = read_all(&bytes);
        }
    }
}

/// Regenerates the fuzz seeds: `TRACER_FUZZ_SEEDS=fuzz/seeds/trace_reader cargo test -p
/// tracer-user --no-default-features write_fuzz_seeds -- --ignored`.
#[test]
#[ignore]
fn write_fuzz_seeds() {
    let dir = std::path::PathBuf::from(std::env::var("TRACER_FUZZ_SEEDS").unwrap());
    std::fs::create_dir_all(&dir).unwrap();
    let small = to_bytes(&sample_header(), &sample_events()).unwrap();
    std::fs::write(dir.join("sample.trace"), &small).unwrap();
    // Version 1 stays readable.
    std::fs::write(dir.join("sample-v1.trace"), to_v1(&small).0).unwrap();
    // Damage the reader skips: a flipped length bit, a duplicated frame.
    let (framed, frames) = framed_sample();
    let mut flip = framed.clone();
    flip[frames[1].0.start + 5] ^= 0x08;
    std::fs::write(dir.join("flipped-length.trace"), flip).unwrap();
    let r = frames[1].0.clone();
    let mut dup = framed[..r.end].to_vec();
    dup.extend_from_slice(&framed[r.clone()]);
    dup.extend_from_slice(&framed[r.end..]);
    std::fs::write(dir.join("duplicated-frame.trace"), dup).unwrap();
    let storm: Vec<Event> = synth::Storm::new(300).collect();
    let h = Header {
        snapshot: synth::storm_snapshot(),
        ..Default::default()
    };
    let mut w = TraceWriter::new(Vec::new(), &h).unwrap();
    for (i, e) in storm.iter().enumerate() {
        w.write_event(e).unwrap();
        if i % 100 == 99 {
            w.write_stats(i as u64, 0, 0).unwrap();
        }
    }
    std::fs::write(dir.join("storm.trace"), w.finish().unwrap()).unwrap();
    std::fs::write(dir.join("cut.trace"), &small[..small.len() - 5]).unwrap();
    std::fs::write(
        dir.join("empty.trace"),
        to_bytes(&Header::default(), &[]).unwrap(),
    )
    .unwrap();
}

#[test]
fn probe_set_of_a_recording_comes_from_the_header() {
    let mut h = sample_header();
    assert!(!h.sched_probes(), "older recordings had syscall probes");
    h.extra.push(("probes".into(), "sched".into()));
    assert!(h.sched_probes());
    h.extra[1].1 = "sched+syscalls".into();
    assert!(!h.sched_probes());
}

/// `TRACER_BIG_TREE=FILE cargo test -p tracer-user --lib write_big_tree -- --ignored`: a
/// recording of 400,000 processes (a 4-ary fork tree) for measuring `tracer tree` at scale
/// (BENCHMARKS.md).
#[test]
#[ignore]
fn write_big_tree() {
    let path = std::path::PathBuf::from(std::env::var("TRACER_BIG_TREE").unwrap());
    let n: u32 = std::env::var("TRACER_BIG_TREE_PROCS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(400_000);
    let evs = crate::synth::fork_tree(n);
    let bytes = to_bytes(&Header::default(), &evs).unwrap();
    if let Ok(v1) = std::env::var("TRACER_BIG_TREE_V1") {
        // The same in format version 1, for tracers from before version 2.
        std::fs::write(v1, to_v1(&bytes).0).unwrap();
    }
    std::fs::write(path, bytes).unwrap();
}

/// `TRACER_BIG_THREADS=FILE cargo test -p tracer-user --lib write_many_threads -- --ignored`:
/// one process with 400,000 threads (`TRACER_BIG_THREADS_SHORT=1`: 400,000 that each exit
/// before the next is made), for measuring `tracer tree` on thread-heavy processes.
#[test]
#[ignore]
fn write_many_threads() {
    let path = std::path::PathBuf::from(std::env::var("TRACER_BIG_THREADS").unwrap());
    let short = std::env::var("TRACER_BIG_THREADS_SHORT").is_ok();
    let evs = crate::synth::many_threads(400_000, short);
    std::fs::write(path, to_bytes(&Header::default(), &evs).unwrap()).unwrap();
}

#[test]
fn hostile_frame_counts_never_overflow_the_report() {
    // Found by the fuzzer: a frame claiming u64::MAX events before it, after damage, twice.
    let mut b = to_bytes(&Header::default(), &[]).unwrap();
    let body_len = u32::from_le_bytes(b[12..16].try_into().unwrap()) as usize;
    b.truncate(PREAMBLE_LEN + body_len);
    b.extend_from_slice(b"damaged");
    push_frame(&mut b, frame_type::EVENTS, 1, u64::MAX, &[]);
    b.extend_from_slice(b"damaged");
    push_frame(&mut b, frame_type::EVENTS, 3, u64::MAX, &[]);
    let (recs, err, tail) = read_all(&b);
    assert!(err.is_none() && recs.is_empty());
    assert_eq!(tail.damage_count, 2);
    assert_eq!(tail.skipped_events, u64::MAX);
    assert_eq!(tail.skipped_frames, 2);
}

#[test]
fn signal_and_oom_events_round_trip_and_are_damage_in_a_version_2_file() {
    use crate::event::{OomInfo, SignalInfo, SignalResult};
    let sig = SignalInfo {
        signal: 15,
        code: -6,
        sender: 100,
        sender_tid: 101,
        target: 200,
        target_tid: 201,
        group: false,
        result: SignalResult::AlreadyPending,
        inferred: false,
    };
    let oom = OomInfo {
        tid: 200,
        total_vm_kb: 1 << 40,
        anon_rss_kb: 65_000,
        file_rss_kb: 1,
        shmem_rss_kb: 2,
        oom_score_adj: -998,
        cgroup: Some("/kubepods/pod1/c1".into()),
        limit: Some(64 << 20),
    };
    let evs = vec![
        Event::bare(1, 10, 100, 101, "sh", EventKind::Signal(sig)),
        Event::bare(2, 20, 200, 200, "eat", EventKind::OomVictim(oom.clone())),
        Event::bare(
            3,
            30,
            200,
            200,
            "eat",
            EventKind::OomVictim(OomInfo {
                cgroup: None,
                limit: None,
                ..oom
            }),
        ),
    ];
    let mut bytes = Vec::new();
    {
        let mut w = TraceWriter::new(&mut bytes, &Header::default()).unwrap();
        for ev in &evs {
            w.write_event(ev).unwrap();
        }
        w.finish().unwrap();
    }
    let (got, err) = read_events(&bytes);
    assert!(err.is_none(), "{err:?}");
    assert_eq!(got, evs);
    // The same bytes claiming version 2: those kinds did not exist then.
    bytes[8] = 2;
    let (got, _) = read_events(&bytes);
    assert!(got.is_empty(), "{got:?}");
}

/// Every kind of event, each optional field set (an strace import's prctl text and read-back
/// value, an inferred signal included), reads back from a trace file as it was written
/// (`tracer import-strace` keeps what the log showed).
#[test]
fn every_kind_with_every_optional_field_round_trips() {
    let evs = crate::synth::every_kind();
    let bytes = to_bytes(&sample_header(), &evs).unwrap();
    let mut r = TraceReader::new(Cursor::new(&bytes)).unwrap();
    let got: Vec<Event> = r.events().collect::<Result<_, _>>().unwrap();
    assert_eq!(got, evs);
}
