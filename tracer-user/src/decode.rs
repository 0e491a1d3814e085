//! Decoding of ring-buffer records (the `tracer-common` wire types) into [`Event`]s.
//!
//! Every length is checked before any cast; a record that is short, oversized for its kind or
//! of an unknown kind is an error, never a panic.

use crate::event::{
    CapturedStr, CloneFlags, Comm, Event, EventKind, ExeFile, ExecCred, Kind, OomInfo, PidNs,
    SignalInfo, SignalResult, Syscall,
};
use std::mem::size_of;
use tracer_common::{
    credflag, memcgflag, strflag, CgroupAttach, CloneEnter, ExecEnter, ExitEnter, Header,
    OomVictim, PrctlEnter, SchedExec, SchedExit, SchedFork, SignalGenerate, Subreaper, SysExit,
    EXEC_ENTER_HEAD, FILENAME_LEN, MEMCG_DEPTH,
};

/// Why a ring-buffer record could not be decoded. Records are checked before any copy, so a
/// bad record is skipped and counted (`Capture::decode_errors`), never fatal.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DecodeError {
    /// The record is shorter than the part being read.
    #[error("record of {len} bytes is shorter than its {need}-byte {what}")]
    Short {
        /// The part (header or record kind).
        what: &'static str,
        /// Bytes delivered.
        len: usize,
        /// Bytes that part needs.
        need: usize,
    },
    /// The header names a record kind this tracer does not know.
    #[error("unknown record kind {0}")]
    UnknownKind(u32),
    /// The header's size disagrees with the bytes delivered.
    #[error("record kind {kind} claims {claimed} bytes but {len} were delivered")]
    BadSize {
        /// Record kind from the header.
        kind: u32,
        /// Size the header claims.
        claimed: u32,
        /// Bytes delivered.
        len: usize,
    },
    /// A syscall id outside `tracer_common::syscall`.
    #[error("unknown syscall id {0}")]
    UnknownSyscall(u32),
}

/// Copies a `T` out of the front of `bytes` after checking the length.
fn read<T: Copy>(bytes: &[u8], what: &'static str) -> Result<T, DecodeError> {
    if bytes.len() < size_of::<T>() {
        return Err(DecodeError::Short {
            what,
            len: bytes.len(),
            need: size_of::<T>(),
        });
    }
    // SAFETY: the length was checked above; T is one of tracer-common's plain-old-data
    // records (repr(C), integers and byte arrays only, every bit pattern valid);
    // read_unaligned copes with any alignment of `bytes`.
    Ok(unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast::<T>()) })
}

/// A field of type `T` at byte `offset` of a record, the length checked.
fn field<T: Copy>(bytes: &[u8], offset: usize, what: &'static str) -> Result<T, DecodeError> {
    read(bytes.get(offset..).unwrap_or_default(), what)
}

/// argv entries stored back to back, each followed by a NUL; a last entry without its NUL
/// (cut at the budget) is kept as far as it goes.
fn split_argv(area: &[u8]) -> Vec<String> {
    let area = area.strip_suffix(&[0]).unwrap_or(area);
    if area.is_empty() {
        return Vec::new();
    }
    area.split(|&b| b == 0)
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .collect()
}

/// The credentials an exec record carries, when the probe could read them.
fn exec_cred(r: &SchedExec) -> Option<ExecCred> {
    if r.cred_flags & credflag::CRED == 0 {
        return None;
    }
    let exe = (r.cred_flags & credflag::EXE != 0).then(|| ExeFile {
        dev: user_dev(r.exe_dev),
        ino: r.exe_ino,
        uid: r.exe_uid,
        mode: r.exe_mode,
        nlink: r.exe_nlink,
    });
    Some(ExecCred {
        euid: r.euid,
        fsuid: r.fsuid,
        userns_level: r.userns_level,
        pidns_level: r.pidns_level,
        mnt_ns: r.mnt_ns,
        host_mnt: r.cred_flags & credflag::HOST_MNT != 0,
        exe,
        // judged by the capture, which knows the host's installed files
        program: None,
    })
}

/// The kernel's internal `dev_t` (MAJOR << 20 | MINOR: include/linux/kdev_t.h) as `stat(2)`
/// gives it (new_encode_dev()), so it compares with what /proc shows.
fn user_dev(dev: u32) -> u64 {
    let (major, minor) = (u64::from(dev >> 20), u64::from(dev & 0xf_ffff));
    (minor & 0xff) | (major << 8) | ((minor & !0xff) << 12)
}

/// Text up to the first NUL of a fixed buffer.
fn cstr(buf: &[u8]) -> String {
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

fn syscall(id: u32) -> Result<Syscall, DecodeError> {
    Syscall::from_wire(id).ok_or(DecodeError::UnknownSyscall(id))
}

/// Decodes one ring-buffer record.
pub fn decode(bytes: &[u8]) -> Result<Event, DecodeError> {
    let hdr: Header = read(bytes, "header")?;
    let kind = Kind::from_wire(hdr.kind).ok_or(DecodeError::UnknownKind(hdr.kind))?;
    let need = record_len(kind, &hdr)?;
    // The probe writes size_of::<T>() (an exec record: its used length); anything else means a
    // mismatched probe object.
    if hdr.size as usize != need || bytes.len() < need {
        return Err(DecodeError::BadSize {
            kind: hdr.kind,
            claimed: hdr.size,
            len: bytes.len(),
        });
    }
    let kind = decode_kind(kind, &hdr, &bytes[..need])?;
    Ok(Event {
        seq: hdr.seq,
        ts_ns: hdr.ktime_ns,
        tgid: hdr.tgid,
        tid: hdr.tid,
        ppid: hdr.ppid,
        uid: hdr.uid,
        cgroup_id: hdr.cgroup_id,
        comm: Comm::from_bytes(&hdr.comm),
        kind,
    })
}

/// The bytes a record of `kind` takes: its struct's size (an exec's argv: its used length).
fn record_len(kind: Kind, hdr: &Header) -> Result<usize, DecodeError> {
    let size = hdr.size as usize;
    Ok(match kind {
        Kind::CloneEnter => size_of::<CloneEnter>(),
        Kind::SyscallExit => size_of::<SysExit>(),
        // Sent at its used length: any size from the head to the whole record.
        Kind::ExecEnter if (EXEC_ENTER_HEAD..=size_of::<ExecEnter>()).contains(&size) => size,
        Kind::ExecEnter => size_of::<ExecEnter>(),
        Kind::ExitEnter => size_of::<ExitEnter>(),
        Kind::PrctlEnter => size_of::<PrctlEnter>(),
        Kind::Fork => size_of::<SchedFork>(),
        Kind::Exec => size_of::<SchedExec>(),
        Kind::TaskExit => size_of::<SchedExit>(),
        Kind::CgroupAttach => size_of::<CgroupAttach>(),
        Kind::Signal => size_of::<SignalGenerate>(),
        Kind::OomVictim => size_of::<OomVictim>(),
        Kind::Subreaper => size_of::<Subreaper>(),
        // The capture's own: no probe writes one, so no record id names it.
        Kind::ContainerMeta => return Err(DecodeError::UnknownKind(hdr.kind)),
    })
}

/// The event a record of `kind` holds (`bytes`: the whole record, its length checked).
fn decode_kind(kind: Kind, hdr: &Header, bytes: &[u8]) -> Result<EventKind, DecodeError> {
    Ok(match kind {
        Kind::CloneEnter => {
            let r: CloneEnter = read(bytes, "clone record")?;
            EventKind::CloneEnter {
                syscall: syscall(r.syscall)?,
                flags: CloneFlags(r.flags),
                exit_signal: r.exit_signal,
            }
        }
        Kind::SyscallExit => {
            let r: SysExit = read(bytes, "syscall exit record")?;
            EventKind::SyscallExit {
                syscall: syscall(r.syscall)?,
                ret: r.ret,
            }
        }
        Kind::ExecEnter => exec_enter(bytes)?,
        Kind::ExitEnter => {
            let r: ExitEnter = read(bytes, "exit record")?;
            EventKind::ExitEnter {
                syscall: syscall(r.syscall)?,
                code: r.code,
            }
        }
        Kind::PrctlEnter => prctl(read(bytes, "prctl record")?),
        Kind::Fork => fork(read(bytes, "fork record")?),
        Kind::Exec => exec(read(bytes, "exec record")?),
        Kind::TaskExit => {
            let r: SchedExit = read(bytes, "exit record")?;
            EventKind::TaskExit {
                exit_code: r.exit_code,
                group_dead: r.group_dead != 0,
            }
        }
        Kind::CgroupAttach => cgroup_attach(read(bytes, "cgroup attach record")?),
        Kind::Signal => signal(hdr, read(bytes, "signal record")?),
        Kind::OomVictim => oom_victim(read(bytes, "oom victim record")?),
        Kind::Subreaper => {
            let r: Subreaper = read(bytes, "subreaper record")?;
            EventKind::Subreaper { on: r.on != 0 }
        }
        Kind::ContainerMeta => return Err(DecodeError::UnknownKind(hdr.kind)),
    })
}

fn prctl(r: PrctlEnter) -> EventKind {
    let name = (r.option == tracer_common::prctl::PR_SET_NAME).then(|| CapturedStr {
        value: cstr(&r.name),
        // A fault means we could not read it at all; mark it rather than guess.
        truncated: r.flags & strflag::NAME_FAULT != 0,
    });
    EventKind::PrctlEnter {
        option: r.option,
        arg2: r.arg2,
        name,
        shown: None,
    }
}

fn fork(r: SchedFork) -> EventKind {
    let known = r.flags_known != 0;
    EventKind::Fork {
        child_tid: r.child_tid,
        child_tgid: r.child_tgid,
        child_ppid: r.child_ppid,
        syscall: if known {
            Syscall::from_wire(r.syscall)
        } else {
            None
        },
        flags: known.then_some(CloneFlags(r.clone_flags)),
        // An inode of 0: the classic tracepoint, which cannot see the child task.
        child_ns: (r.ns_inum != 0).then_some(PidNs {
            inum: u64::from(r.ns_inum),
            level: r.ns_level,
            ns_pid: r.ns_pid,
        }),
    }
}

fn exec(r: SchedExec) -> EventKind {
    EventKind::Exec {
        old_tid: r.old_tid,
        filename: CapturedStr {
            value: cstr(&r.filename),
            truncated: r.flags & strflag::FILENAME_TRUNCATED != 0,
        },
        cred: exec_cred(&r),
    }
}

fn cgroup_attach(r: CgroupAttach) -> EventKind {
    EventKind::CgroupAttach {
        pid: r.pid,
        hierarchy: r.hierarchy,
        cgroup_id: r.cgroup_id,
        path: CapturedStr {
            value: cstr(&r.path),
            truncated: r.flags & strflag::FILENAME_TRUNCATED != 0,
        },
    }
}

/// An exec record, read in place: it is sent at its used length, and copying out the whole
/// 4 KiB+ record (zero-filled past what was sent) was most of the decoder's work per exec.
fn exec_enter(bytes: &[u8]) -> Result<EventKind, DecodeError> {
    use std::mem::offset_of;
    let what = "exec record";
    let argv_len: u32 = field(bytes, offset_of!(ExecEnter, argv_len), what)?;
    let flags: u32 = field(bytes, offset_of!(ExecEnter, flags), what)?;
    let filename: [u8; FILENAME_LEN] = field(bytes, offset_of!(ExecEnter, filename), what)?;
    // Only what was sent counts, whatever argv_len claims.
    let area = bytes.get(EXEC_ENTER_HEAD..).unwrap_or_default();
    let used = (argv_len as usize).min(area.len());
    Ok(EventKind::ExecEnter {
        syscall: syscall(field(bytes, offset_of!(ExecEnter, syscall), what)?)?,
        dirfd: field(bytes, offset_of!(ExecEnter, dirfd), what)?,
        at_flags: field(bytes, offset_of!(ExecEnter, at_flags), what)?,
        filename: CapturedStr {
            value: cstr(&filename),
            truncated: flags & strflag::FILENAME_TRUNCATED != 0,
        },
        argv: split_argv(&area[..used]),
        argv_truncated: flags & (strflag::ARGV_TRUNCATED | strflag::ARGV_FAULT) != 0,
    })
}

/// A generated signal; the probe ran in the sender's context, so the header names it.
fn signal(hdr: &Header, r: SignalGenerate) -> EventKind {
    EventKind::Signal(SignalInfo {
        signal: r.signal,
        code: r.code,
        sender: hdr.tgid,
        sender_tid: hdr.tid,
        target: r.target_tgid,
        target_tid: r.target_tid,
        group: r.group != 0,
        result: SignalResult::from_wire(r.result),
        inferred: false,
    })
}

/// The OOM killer's victim. The memory cgroup and its limit are not on the wire: the capture
/// reads them from /proc while the victim is still there.
fn oom_victim(r: OomVictim) -> EventKind {
    EventKind::OomVictim(OomInfo {
        tid: r.tid,
        total_vm_kb: r.total_vm,
        anon_rss_kb: r.anon_rss,
        file_rss_kb: r.file_rss,
        shmem_rss_kb: r.shmem_rss,
        oom_score_adj: r.oom_score_adj,
        cgroup: memcg_path(&r),
        limit: memcg_limit(&r),
    })
}

/// The victim's memory cgroup as the probe read it: its path in the memory hierarchy, from
/// the names of the cgroup and its ancestors (leaf first on the wire), `…` in front when the
/// record could not hold its top.
fn memcg_path(r: &OomVictim) -> Option<String> {
    if r.memcg_flags & memcgflag::KNOWN == 0 {
        return None;
    }
    let depth = (r.memcg_depth as usize).min(MEMCG_DEPTH);
    let mut path = String::new();
    if r.memcg_flags & memcgflag::CUT != 0 {
        path.push('…');
    }
    for name in r.memcg_path[..depth].iter().rev() {
        path.push('/');
        path.push_str(&cstr(name));
    }
    if path.is_empty() {
        path.push('/');
    }
    Some(path)
}

/// Its limit in bytes; none for "no limit" (page_counter's PAGE_COUNTER_MAX, about 2^63
/// bytes: anything from 2^62 counts as unlimited, as cgroup v1's file shows it).
fn memcg_limit(r: &OomVictim) -> Option<u64> {
    (r.memcg_flags & memcgflag::LIMIT != 0 && r.memcg_limit < 1 << 62).then_some(r.memcg_limit)
}

/// Raw bytes of a wire record, for tests and synthetic sources.
pub fn to_bytes<T: Copy>(rec: &T) -> Vec<u8> {
    // SAFETY: T is a tracer-common record: repr(C) without padding, so every byte is
    // initialized and may be viewed as u8.
    unsafe { std::slice::from_raw_parts((rec as *const T).cast::<u8>(), size_of::<T>()) }.to_vec()
}

#[cfg(test)]
mod kind_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use tracer_common::{clone_flags as cf, kind, syscall as sc, ARGV_BYTES, FILENAME_LEN};

    fn header(kind: u32, size: usize) -> Header {
        let mut comm = [0u8; 16];
        comm[..4].copy_from_slice(b"runc");
        Header {
            kind,
            size: size as u32,
            seq: 7,
            ktime_ns: 1_000,
            cgroup_id: 42,
            tgid: 100,
            tid: 101,
            ppid: 1,
            uid: 0,
            comm,
        }
    }

    fn fork_record() -> SchedFork {
        SchedFork {
            hdr: header(kind::SCHED_FORK, size_of::<SchedFork>()),
            child_tid: 102,
            child_tgid: 102,
            child_ppid: 1,
            syscall: sc::CLONE,
            clone_flags: cf::CLONE_PARENT,
            flags_known: 1,
            ns_level: 1,
            ns_inum: 4026532000,
            ns_pid: 1,
        }
    }

    #[test]
    fn decodes_fork_with_header_fields() {
        let ev = decode(&to_bytes(&fork_record())).unwrap();
        assert_eq!(
            (ev.seq, ev.tgid, ev.tid, ev.ppid, ev.cgroup_id),
            (7, 100, 101, 1, 42)
        );
        assert_eq!(ev.comm.to_string(), "runc");
        assert_eq!(
            ev.kind,
            EventKind::Fork {
                child_tid: 102,
                child_tgid: 102,
                child_ppid: 1,
                syscall: Some(Syscall::Clone),
                flags: Some(CloneFlags(cf::CLONE_PARENT)),
                child_ns: Some(PidNs {
                    inum: 4026532000,
                    level: 1,
                    ns_pid: 1
                }),
            }
        );
    }

    #[test]
    fn unknown_flags_stay_unknown() {
        let mut r = fork_record();
        r.flags_known = 0;
        r.ns_inum = 0;
        let ev = decode(&to_bytes(&r)).unwrap();
        assert!(matches!(
            ev.kind,
            EventKind::Fork {
                syscall: None,
                flags: None,
                child_ns: None,
                ..
            }
        ));
    }

    #[test]
    fn every_short_prefix_is_an_error() {
        let bytes = to_bytes(&fork_record());
        for len in 0..bytes.len() {
            assert!(
                decode(&bytes[..len]).is_err(),
                "prefix of {len} bytes decoded"
            );
        }
    }

    #[test]
    fn lying_size_and_unknown_kind_are_errors() {
        let mut r = fork_record();
        r.hdr.size = 10_000;
        assert!(matches!(
            decode(&to_bytes(&r)),
            Err(DecodeError::BadSize { .. })
        ));
        let mut r = fork_record();
        r.hdr.kind = 99;
        assert_eq!(decode(&to_bytes(&r)), Err(DecodeError::UnknownKind(99)));
        let mut r = SysExit {
            hdr: header(kind::SYS_EXIT, 80),
            syscall: 77,
            _pad: 0,
            ret: 0,
        };
        assert_eq!(decode(&to_bytes(&r)), Err(DecodeError::UnknownSyscall(77)));
        r.syscall = sc::EXECVE;
        r.ret = -2;
        let ev = decode(&to_bytes(&r)).unwrap();
        assert_eq!(
            ev.kind,
            EventKind::SyscallExit {
                syscall: Syscall::Execve,
                ret: -2
            }
        );
    }

    fn exec_record(argv: &[u8], flags: u32) -> Vec<u8> {
        let mut r = ExecEnter {
            hdr: header(kind::EXEC_ENTER, EXEC_ENTER_HEAD + argv.len()),
            syscall: sc::EXECVE,
            argv_len: argv.len() as u32,
            flags,
            at_flags: 0,
            dirfd: -100,
            filename: [0; FILENAME_LEN],
            argv: [0; ARGV_BYTES],
        };
        r.filename[..9].copy_from_slice(b"/bin/runc");
        r.argv[..argv.len()].copy_from_slice(argv);
        let mut bytes = to_bytes(&r);
        bytes.truncate(EXEC_ENTER_HEAD + argv.len());
        bytes
    }

    fn exec_argv(bytes: &[u8]) -> (CapturedStr, Vec<String>, bool) {
        let ev = decode(bytes).unwrap();
        let EventKind::ExecEnter {
            filename,
            argv,
            argv_truncated,
            ..
        } = ev.kind
        else {
            panic!("wrong kind");
        };
        (filename, argv, argv_truncated)
    }

    #[test]
    fn exec_strings_and_truncation_flags() {
        let long = "l".repeat(300);
        let area = format!("runc\0{long}\0\0create\0");
        let (filename, argv, cut) = exec_argv(&exec_record(area.as_bytes(), 0));
        assert_eq!(filename, CapturedStr::new("/bin/runc"));
        assert_eq!(argv, vec!["runc", long.as_str(), "", "create"]);
        assert!(!cut);

        // Cut at the budget: the last entry has no NUL and is kept as far as it goes.
        let (_, argv, cut) = exec_argv(&exec_record(b"runc\0--lo", strflag::ARGV_TRUNCATED));
        assert_eq!(argv, vec!["runc", "--lo"]);
        assert!(cut);
        let (_, argv, _) = exec_argv(&exec_record(b"", strflag::ARGV_FAULT));
        assert!(argv.is_empty());
    }

    #[test]
    fn every_exec_field_is_read_in_place_at_any_alignment() {
        let mut r = ExecEnter {
            hdr: header(kind::EXEC_ENTER, EXEC_ENTER_HEAD + 5),
            syscall: sc::EXECVEAT,
            argv_len: 5,
            flags: strflag::FILENAME_TRUNCATED,
            at_flags: 0x1000,
            dirfd: 7,
            filename: [b'f'; FILENAME_LEN],
            argv: [0; ARGV_BYTES],
        };
        r.argv[..5].copy_from_slice(b"sh\0x\0");
        let whole = to_bytes(&r);
        // One byte in: the fields are read unaligned.
        let mut shifted = vec![0u8];
        shifted.extend_from_slice(&whole[..EXEC_ENTER_HEAD + 5]);
        let ev = decode(&shifted[1..]).unwrap();
        assert_eq!(
            ev.kind,
            EventKind::ExecEnter {
                syscall: Syscall::Execveat,
                dirfd: 7,
                at_flags: 0x1000,
                filename: CapturedStr {
                    value: "f".repeat(FILENAME_LEN),
                    truncated: true,
                },
                argv: vec!["sh".into(), "x".into()],
                argv_truncated: false,
            }
        );
        assert_eq!((ev.seq, ev.tgid, ev.tid), (7, 100, 101));
    }

    #[test]
    fn exec_record_lengths_are_checked() {
        let mut bytes = exec_record(b"runc\0", 0);
        // A lying argv_len is capped at what was sent.
        bytes[68..72].copy_from_slice(&4000u32.to_ne_bytes());
        assert_eq!(exec_argv(&bytes).1, vec!["runc"]);
        // Shorter than the head, or longer than the whole record: errors.
        let head = exec_record(b"", 0);
        assert!(decode(&head[..EXEC_ENTER_HEAD - 1]).is_err());
        let mut whole = exec_record(&[b'x'; ARGV_BYTES], 0);
        assert!(decode(&whole).is_ok());
        whole[4..8].copy_from_slice(&((EXEC_ENTER_HEAD + ARGV_BYTES + 1) as u32).to_ne_bytes());
        whole.push(0);
        assert!(matches!(decode(&whole), Err(DecodeError::BadSize { .. })));
        // Fewer bytes delivered than the header claims.
        let short = exec_record(b"runc\0", 0);
        assert!(decode(&short[..short.len() - 1]).is_err());
    }

    #[test]
    fn prctl_name_only_for_set_name() {
        let mut r = PrctlEnter {
            hdr: header(kind::PRCTL_ENTER, size_of::<PrctlEnter>()),
            option: tracer_common::prctl::PR_SET_NAME,
            flags: 0,
            arg2: 0xdead,
            name: [0; 16],
        };
        r.name[..15].copy_from_slice(b"runc:[1:CHILD]\0");
        let ev = decode(&to_bytes(&r)).unwrap();
        assert_eq!(
            ev.kind,
            EventKind::PrctlEnter {
                option: 15,
                arg2: 0xdead,
                name: Some(CapturedStr::new("runc:[1:CHILD]")),
                shown: None,
            }
        );
        r.option = tracer_common::prctl::PR_SET_CHILD_SUBREAPER;
        r.arg2 = 1;
        let ev = decode(&to_bytes(&r)).unwrap();
        assert_eq!(
            ev.kind,
            EventKind::PrctlEnter {
                option: 36,
                arg2: 1,
                name: None,
                shown: None,
            }
        );
    }

    fn signal_record() -> SignalGenerate {
        SignalGenerate {
            hdr: header(kind::SIGNAL, size_of::<SignalGenerate>()),
            signal: 15,
            code: 0,
            target_tid: 202,
            target_tgid: 200,
            group: 1,
            result: 2,
        }
    }

    #[test]
    fn signal_sender_is_the_header_task() {
        let ev = decode(&to_bytes(&signal_record())).unwrap();
        assert_eq!((ev.tgid, ev.tid), (100, 101));
        assert_eq!(
            ev.kind,
            EventKind::Signal(SignalInfo {
                signal: 15,
                code: 0,
                sender: 100,
                sender_tid: 101,
                target: 200,
                target_tid: 202,
                group: true,
                result: SignalResult::AlreadyPending,
                inferred: false,
            })
        );
        let mut r = signal_record();
        (r.group, r.result, r.code) = (0, 77, 0x80);
        let EventKind::Signal(info) = decode(&to_bytes(&r)).unwrap().kind else {
            panic!("not a signal");
        };
        assert_eq!(
            (info.group, info.result, info.code),
            (false, SignalResult::Other, 0x80)
        );
    }

    fn oom_record() -> OomVictim {
        OomVictim {
            hdr: header(kind::OOM_VICTIM, size_of::<OomVictim>()),
            tid: 300,
            oom_score_adj: -998,
            total_vm: 1 << 40,
            anon_rss: 32768,
            file_rss: 4,
            shmem_rss: 0,
            memcg_id: 0,
            memcg_limit: 0,
            memcg_flags: 0,
            memcg_depth: 0,
            memcg_path: [[0; tracer_common::MEMCG_NAME_LEN]; MEMCG_DEPTH],
        }
    }

    /// `oom_record` with the memory cgroup the raw probe read: `names` leaf first.
    fn oom_in(names: &[&str], flags: u32, limit: u64) -> OomInfo {
        let mut r = oom_record();
        (r.memcg_id, r.memcg_limit, r.memcg_flags) = (77, limit, flags);
        r.memcg_depth = names.len() as u32;
        for (slot, n) in r.memcg_path.iter_mut().zip(names) {
            slot[..n.len()].copy_from_slice(n.as_bytes());
        }
        let kind = decode(&to_bytes(&r)).unwrap().kind;
        let EventKind::OomVictim(info) = kind else {
            panic!("{kind:?}")
        };
        info
    }

    #[test]
    fn the_probes_memory_cgroup_is_its_path_from_the_root_and_its_limit() {
        use tracer_common::memcgflag::{CUT, KNOWN, LIMIT};
        let info = oom_in(&["ctr-1", "pod-a", "kubepods"], KNOWN | LIMIT, 32 << 20);
        assert_eq!(info.cgroup.as_deref(), Some("/kubepods/pod-a/ctr-1"));
        assert_eq!(info.limit, Some(32 << 20));
        // The hierarchy's root; no limit (PAGE_COUNTER_MAX pages in bytes).
        let root = oom_in(&[], KNOWN | LIMIT, 0x7fff_ffff_ffff_f000);
        assert_eq!((root.cgroup.as_deref(), root.limit), (Some("/"), None));
        // Deeper than the record: its top is marked missing.
        let deep = oom_in(&["leaf", "mid"], KNOWN | CUT, 0);
        assert_eq!(
            (deep.cgroup.as_deref(), deep.limit),
            (Some("…/mid/leaf"), None)
        );
        // A depth past the record's slots reads only the slots.
        let mut r = oom_record();
        (r.memcg_flags, r.memcg_depth) = (KNOWN, u32::MAX);
        assert!(decode(&to_bytes(&r)).is_ok());
    }

    #[test]
    fn oom_victim_without_cgroup_until_the_capture_reads_it() {
        let ev = decode(&to_bytes(&oom_record())).unwrap();
        assert_eq!(
            ev.kind,
            EventKind::OomVictim(OomInfo {
                tid: 300,
                total_vm_kb: 1 << 40,
                anon_rss_kb: 32768,
                file_rss_kb: 4,
                shmem_rss_kb: 0,
                oom_score_adj: -998,
                cgroup: None,
                limit: None,
            })
        );
    }

    #[test]
    fn signal_and_oom_records_are_length_checked() {
        for bytes in [to_bytes(&signal_record()), to_bytes(&oom_record())] {
            for len in 0..bytes.len() {
                assert!(decode(&bytes[..len]).is_err(), "prefix of {len} decoded");
            }
            // A size claiming more (or less) than the kind's record: a mismatched probe.
            for claimed in [bytes.len() + 8, bytes.len() - 8] {
                let mut b = bytes.clone();
                b[4..8].copy_from_slice(&(claimed as u32).to_ne_bytes());
                b.resize(claimed.max(bytes.len()), 0);
                assert!(
                    matches!(decode(&b), Err(DecodeError::BadSize { .. })),
                    "size {claimed}"
                );
            }
            // Extra bytes delivered past an honest size are not read.
            let mut b = bytes.clone();
            b.extend_from_slice(&[0xff; 16]);
            assert_eq!(decode(&b), decode(&bytes));
        }
    }

    #[test]
    fn exit_record_keeps_wait_status() {
        let r = SchedExit {
            hdr: header(kind::SCHED_EXIT, 72),
            exit_code: 9,
            group_dead: 1,
        };
        let ev = decode(&to_bytes(&r)).unwrap();
        assert_eq!(
            ev.kind,
            EventKind::TaskExit {
                exit_code: 9,
                group_dead: true
            }
        );
    }
}
