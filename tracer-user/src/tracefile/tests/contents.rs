//! What a file carries: every kind and field (property tests too), the engine fed from a file, the
//! fuzz seeds and scale recordings.

use super::*;

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
    h.snapshot = crate::synth::storm_snapshot()
        .iter()
        .map(Into::into)
        .collect();
    let evs: Vec<Event> = crate::synth::Storm::new(30_000).collect();
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
            arb_exec_enter(),
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
            arb_exec_with_cred(),
            (any::<u32>(), any::<bool>()).prop_map(|(exit_code, group_dead)| {
                EventKind::TaskExit {
                    exit_code,
                    group_dead,
                }
            }),
        ]
    }

    fn arb_exec_enter() -> impl Strategy<Value = EventKind> {
        (
            arb_syscall(),
            any::<i64>(),
            any::<u32>(),
            arb_cstr(),
            proptest::collection::vec(".{0,8}", 0..5),
            any::<bool>(),
        )
            .prop_map(
                |(syscall, dirfd, at_flags, filename, argv, argv_truncated)| EventKind::ExecEnter {
                    syscall,
                    dirfd,
                    at_flags,
                    filename,
                    argv,
                    argv_truncated,
                },
            )
    }

    /// An exec with the credentials and executable the kernel reported.
    fn arb_exec_with_cred() -> impl Strategy<Value = EventKind> {
        (
            any::<u32>(),
            arb_cstr(),
            any::<[u32; 6]>(),
            any::<(bool, bool, u64, u64)>(),
            proptest::option::of(0..crate::event::program::Program::ALL.len()),
        )
            .prop_map(
                |(old_tid, filename, ids, (host_mnt, exe, dev, ino), program)| {
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
                        program: program.map(|i| crate::event::program::Program::ALL[i]),
                    };
                    EventKind::Exec {
                        old_tid,
                        filename,
                        cred: Some(cred),
                    }
                },
            )
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
            h.snapshot = crate::synth::storm_snapshot().iter().map(Into::into).collect();
            let mut all: Vec<Event> = crate::synth::Storm::new(storm_len)
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
    let storm: Vec<Event> = crate::synth::Storm::new(300).collect();
    let h = Header {
        snapshot: crate::synth::storm_snapshot()
            .iter()
            .map(Into::into)
            .collect(),
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
