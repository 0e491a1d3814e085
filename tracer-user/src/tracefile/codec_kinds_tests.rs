//! The codec against the kind table (`event::Kind`), and the bytes it writes against
//! recordings older tracers wrote.

use super::*;
use crate::event::PrctlShown;

fn encode(evs: &[Event]) -> Vec<u8> {
    let (mut b, mut ctx) = (Vec::new(), Ctx::default());
    for ev in evs {
        encode_event(&mut b, &mut ctx, ev);
    }
    b
}

fn decode_all(mut buf: &[u8], version: u16) -> DResult<Vec<Event>> {
    let mut ctx = Ctx::for_version(version);
    let mut evs = Vec::new();
    while !buf.is_empty() {
        let mut c = Cur::new(buf);
        evs.push(decode_event(&mut c, &mut ctx)?);
        buf = c.buf;
    }
    Ok(evs)
}

/// Each kind's tag carries its row's code (an exec with credentials, the codec's 12), its
/// JSON `event` field is its row's name, and it reads back as written.
#[test]
fn every_kind_is_written_with_its_rows_code_and_named_by_its_row() {
    for ev in crate::synth::every_kind() {
        let row = ev.kind.kind().row();
        let bytes = encode(std::slice::from_ref(&ev));
        let cred = matches!(ev.kind, EventKind::Exec { cred: Some(_), .. });
        let (code, since) = match cred {
            true => (K_EXEC_CRED, K_EXEC_CRED_SINCE),
            false => (row.code, row.since),
        };
        assert_eq!(bytes[0] & 0x0f, code, "{}", row.name);
        assert!(since <= super::super::FORMAT_VERSION, "{}", row.name);
        assert_eq!(
            decode_all(&bytes, since).unwrap(),
            std::slice::from_ref(&ev)
        );
        if since > 1 {
            assert!(decode_all(&bytes, since - 1).is_err(), "{}", row.name);
        }
        let json = serde_json::to_value(&ev).unwrap();
        assert_eq!(json["event"], row.name);
    }
}

/// A kind is damage in a file older than the version that added it, and the error says which
/// kinds that version has.
#[test]
fn a_kind_is_refused_before_its_format_version() {
    let version = crate::event::Kind::NEWEST_FORMAT;
    assert!(version >= K_EXEC_CRED_SINCE);
    for v in 2..version {
        let next = format!("before format version {})", v + 1);
        assert!(tag_too_new(v).ends_with(&next), "{v}: {}", tag_too_new(v));
    }
    let report = Event::bare(1, 5, 10, 10, "sh", EventKind::Subreaper { on: true });
    let bytes = encode(std::slice::from_ref(&report));
    assert_eq!(bytes[0] & 0x0f, 13);
    assert_eq!(decode_all(&bytes, 5).unwrap(), [report]);
    for (version, expected) in [
        (4, "an event tag (kind 0-12 before format version 5)"),
        (3, "an event tag (kind 0-11 before format version 4)"),
        (2, "an event tag (kind 0-9 before format version 3)"),
    ] {
        assert_eq!(decode_all(&bytes, version), Err(DecodeError(expected)));
    }
    for tag in [14u8, 15, 0x80] {
        let mut b = bytes.clone();
        b[0] = tag;
        assert_eq!(decode_all(&b, 5), Err(DecodeError(BAD_TAG)), "{tag:#x}");
    }
}

/// The probes' subreaper report as recordings before its kind hold it: a prctl_enter frame
/// (option 36, arg2 1, no name). It reads exactly as it did: a `PrctlEnter`, every byte.
#[test]
fn an_old_recordings_subreaper_prctl_reads_as_before() {
    // tag 4 | tgid follows, seq delta 0, time delta +7 (14), tgid 42, option 36, arg2 1, no name
    let old = [0x14, 0x00, 0x0e, 42, 36, 1, 0];
    let evs = decode_all(&old, 4).unwrap();
    let prctl = EventKind::PrctlEnter {
        option: crate::event::prctl_opt::PR_SET_CHILD_SUBREAPER,
        arg2: 1,
        name: None,
        shown: None,
    };
    assert_eq!(evs, [Event::bare(1, 7, 42, 42, "", prctl)]);
    assert_eq!(encode(&evs), old);
    // What the strace importer keeps of a real call is still a prctl too.
    let mut call = evs[0].clone();
    if let EventKind::PrctlEnter { shown, .. } = &mut call.kind {
        *shown = Some(Box::new(PrctlShown {
            args: Some("PR_SET_CHILD_SUBREAPER, 1".into()),
            read: None,
        }));
    }
    assert_eq!(
        decode_all(&encode(std::slice::from_ref(&call)), 5).unwrap(),
        [call]
    );
}

/// The events frames of recordings older tracers wrote (the bundled demos, format version 3;
/// the fuzz seeds, version 2), read and written again, are the same bytes.
#[test]
fn recordings_of_older_tracers_are_written_again_byte_for_byte() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let files = [
        "tests/fixtures/demo/pod.trace",
        "tests/fixtures/demo/containerd.trace",
        "tests/fixtures/demo/lifecycle.trace",
        "tests/fixtures/demo/restart.trace",
        "fuzz/seeds/trace_reader/sample.trace",
        "fuzz/seeds/trace_reader/storm.trace",
    ];
    let mut frames = 0;
    for name in files {
        let file = std::fs::read(root.join(name)).unwrap();
        let version = u16::from_le_bytes([file[8], file[9]]);
        let header_len = u32::from_le_bytes(file[12..16].try_into().unwrap()) as usize;
        let mut at = 20 + header_len;
        while at + 29 <= file.len() {
            let len = u32::from_le_bytes(file[at + 4..at + 8].try_into().unwrap()) as usize;
            let payload = &file[at + 29..at + 29 + len];
            if file[at + 8] == super::super::frame_type::EVENTS {
                let evs = decode_all(payload, version).unwrap();
                assert_eq!(encode(&evs), payload, "{name}: frame at byte {at}");
                frames += 1;
            }
            at += 29 + len;
        }
    }
    assert!(frames >= files.len(), "{frames} frames");
}

/// An exec's program (format version 6) reads back as written; in a version 5 file the
/// marker bit that announces it is damage, and an unknown program's byte is too.
#[test]
fn an_execs_program_is_version_6s() {
    use crate::event::program::Program;
    let mut cred = crate::synth::root_cred();
    cred.program = Some(Program::Runc);
    let mut ev = crate::synth::exec(7, "/usr/bin/runc");
    if let EventKind::Exec { cred: c, .. } = &mut ev.kind {
        *c = Some(cred);
    }
    let bytes = encode(std::slice::from_ref(&ev));
    assert_eq!(
        decode_all(&bytes, CRED_PROGRAM_SINCE).unwrap(),
        [ev.clone()]
    );
    let marker = "an exec credentials marker (0-3)";
    assert_eq!(decode_all(&bytes, 5), Err(DecodeError(marker)));
    let last = bytes.len() - 1;
    assert_eq!(bytes[last], Program::Runc.code());
    let mut bad = bytes.clone();
    bad[last] = Program::ALL.len() as u8;
    let err = "an executable's program (0-9)";
    assert_eq!(decode_all(&bad, CRED_PROGRAM_SINCE), Err(DecodeError(err)));
}
