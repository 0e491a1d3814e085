//! Damage: corrupted bytes, duplicated and forged frames, old versions, file modes, huge events.

use super::*;

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
