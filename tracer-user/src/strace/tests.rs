use super::*;
use crate::event::prctl_opt::{PR_SET_CHILD_SUBREAPER, PR_SET_NAME, PR_SET_PDEATHSIG};
use crate::event::PidNs;
use crate::event::{SignalInfo, SignalResult};
use crate::names::si_code::SI_TKILL;
use cf::{CLONE_PARENT, CLONE_VFORK, CLONE_VM};
use EventKind as K;

mod calls;
mod fixtures;
mod found;
mod inferred;
mod line_forms;
mod robustness;
mod signals;
mod stream;

const THREAD_FLAGS: &str = "CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD|CLONE_SYSVSEM|CLONE_SETTLS|CLONE_PARENT_SETTID|CLONE_CHILD_CLEARTID";

fn fixture(name: &str) -> String {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/strace")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// What the importer keeps of a prctl line's arguments as strace wrote them.
fn shown(args: &str) -> Option<Box<crate::event::PrctlShown>> {
    Some(Box::new(crate::event::PrctlShown {
        args: Some(args.into()),
        read: None,
    }))
}

/// The pid namespace of the `Fork` that made `child` (outer `None`: no such `Fork`).
fn fork_ns(imp: &Import, child: u32) -> Option<Option<PidNs>> {
    imp.events.iter().find_map(|ev| match ev.kind {
        K::Fork {
            child_tid,
            child_ns,
            ..
        } if child_tid == child => Some(child_ns),
        _ => None,
    })
}

fn parse(text: &str) -> Import {
    parse_log(text).expect("parses")
}

/// (tgid, tid, kind) of every event.
fn evs(imp: &Import) -> Vec<(u32, u32, EventKind)> {
    imp.events
        .iter()
        .map(|e| (e.tgid, e.tid, e.kind.clone()))
        .collect()
}

fn forks(imp: &Import) -> Vec<(u32, u32, u32, Option<u64>)> {
    imp.events
        .iter()
        .filter_map(|e| match e.kind {
            K::Fork {
                child_tid,
                child_tgid,
                flags,
                ..
            } => Some((e.tid, child_tid, child_tgid, flags.map(|f| f.0))),
            _ => None,
        })
        .collect()
}

fn clone_enter(sc: Syscall, flags: u64, sig: u32) -> EventKind {
    K::CloneEnter {
        syscall: sc,
        flags: CloneFlags(flags),
        exit_signal: sig,
    }
}

/// A Fork whose child's parent is `ppid` (copy_process: the caller's process, or its parent
/// with CLONE_PARENT or CLONE_THREAD).
fn fork_in(child: u32, tgid: u32, ppid: u32, sc: Syscall, flags: u64) -> EventKind {
    match fork(child, tgid, sc, flags) {
        K::Fork {
            child_tid,
            child_tgid,
            syscall,
            flags,
            child_ns,
            ..
        } => K::Fork {
            child_tid,
            child_tgid,
            child_ppid: ppid,
            syscall,
            flags,
            child_ns,
        },
        other => other,
    }
}

/// A Fork whose child's parent the log cannot tell (0).
fn fork(child: u32, tgid: u32, sc: Syscall, flags: u64) -> EventKind {
    K::Fork {
        child_tid: child,
        child_tgid: tgid,
        child_ppid: 0,
        syscall: Some(sc),
        flags: Some(CloneFlags(flags)),
        child_ns: None,
    }
}

fn sys_exit(sc: Syscall, ret: i64) -> EventKind {
    K::SyscallExit { syscall: sc, ret }
}

/// A signal delivered to `target_tid` of `target` (the receiver, whose log line it is).
fn sig_info(sig: i32, code: i32, sender: u32, target: u32, target_tid: u32) -> SignalInfo {
    SignalInfo {
        signal: sig,
        code,
        sender,
        sender_tid: 0,
        target,
        target_tid,
        group: code != SI_TKILL,
        result: SignalResult::Delivered,
        inferred: false,
    }
}

fn signal(sig: i32, code: i32, sender: u32, target: u32, target_tid: u32) -> EventKind {
    K::Signal(sig_info(sig, code, sender, target, target_tid))
}

fn exit(code: u32, group_dead: bool) -> EventKind {
    K::TaskExit {
        exit_code: code,
        group_dead,
    }
}

/// (pid, ppid, comm) rows of the ps part of a truth file.
fn truth_rows(truth: &str) -> Vec<(u32, u32, String)> {
    truth
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            Some((
                w.next()?.parse().ok()?,
                w.next()?.parse().ok()?,
                w.next()?.to_string(),
            ))
        })
        .collect()
}

fn execs(imp: &Import) -> Vec<(u32, String)> {
    imp.events
        .iter()
        .filter_map(|e| match &e.kind {
            K::Exec { filename, .. } => Some((e.tid, filename.value.clone())),
            _ => None,
        })
        .collect()
}
