//! The decoder against the kind table (`event::Kind`), and the subreaper record.

use super::*;
use tracer_common::kind as wire;

/// A record of record id `id` and `len` bytes, zeroed but for its header and a first field of
/// 1 (a known syscall where the kind has one).
fn record(id: u32, len: usize) -> Vec<u8> {
    let hdr = Header {
        kind: id,
        size: len as u32,
        seq: 3,
        ktime_ns: 9,
        cgroup_id: 0,
        tgid: 40,
        tid: 40,
        ppid: 1,
        uid: u32::MAX,
        comm: *b"shim\0\0\0\0\0\0\0\0\0\0\0\0",
    };
    let mut bytes = to_bytes(&hdr);
    bytes.resize(len, 0);
    if let Some(first) = bytes.get_mut(size_of::<Header>()..size_of::<Header>() + 4) {
        first.copy_from_slice(&1u32.to_ne_bytes());
    }
    bytes
}

/// Every record id the table names decodes to its kind, at the length the decoder asks of it.
#[test]
fn every_record_id_decodes_to_its_rows_kind() {
    for &k in Kind::ALL {
        let Some(id) = k.row().wire else {
            assert_eq!(
                k,
                Kind::ContainerMeta,
                "only the capture's own kind has no record"
            );
            continue;
        };
        let probe = Header {
            kind: id,
            size: u32::MAX,
            ..read::<Header>(&record(id, size_of::<Header>()), "header").unwrap()
        };
        let len = record_len(k, &probe).unwrap();
        let ev = decode(&record(id, len)).unwrap();
        assert_eq!(ev.kind.kind(), k, "record id {id}");
        assert_eq!(
            (ev.seq, ev.tgid, ev.comm.to_string()),
            (3, 40, "shim".into())
        );
    }
    let last = Kind::ALL.iter().filter_map(|k| k.row().wire).max().unwrap();
    assert_eq!(
        decode(&record(last + 1, 72)),
        Err(DecodeError::UnknownKind(last + 1))
    );
}

#[test]
fn a_subreaper_record_is_its_own_kind_and_length_checked() {
    let mut bytes = record(wire::SUBREAPER, size_of::<Subreaper>());
    let ev = decode(&bytes).unwrap();
    assert_eq!(ev.kind, EventKind::Subreaper { on: true });
    assert_eq!((ev.tgid, ev.ppid, ev.uid), (40, 1, u32::MAX));
    bytes[size_of::<Header>()..][..4].copy_from_slice(&0u32.to_ne_bytes());
    assert_eq!(
        decode(&bytes).unwrap().kind,
        EventKind::Subreaper { on: false }
    );
    for len in 0..bytes.len() {
        assert!(
            decode(&bytes[..len]).is_err(),
            "prefix of {len} bytes decoded"
        );
    }
    let mut long = bytes.clone();
    long.extend_from_slice(&[0; 8]);
    long[4..8].copy_from_slice(&80u32.to_ne_bytes());
    assert!(matches!(decode(&long), Err(DecodeError::BadSize { .. })));
}

/// The probes of older tracers reported a subreaper as a prctl record: it still reads as one.
#[test]
fn an_old_probes_subreaper_prctl_stays_a_prctl() {
    let mut bytes = record(wire::PRCTL_ENTER, size_of::<PrctlEnter>());
    let option = tracer_common::prctl::PR_SET_CHILD_SUBREAPER;
    bytes[64..68].copy_from_slice(&option.to_ne_bytes());
    bytes[72..80].copy_from_slice(&1u64.to_ne_bytes());
    let prctl = EventKind::PrctlEnter {
        option,
        arg2: 1,
        name: None,
        shown: None,
    };
    assert_eq!(decode(&bytes).unwrap().kind, prctl);
}
