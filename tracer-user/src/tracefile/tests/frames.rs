//! Round trips, frames, truncation, bad headers, version 1 frames.

use super::*;

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
    let meta = sample_event(
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
