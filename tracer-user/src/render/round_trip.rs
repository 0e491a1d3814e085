//! What the renderer prints reads back: synthetic events → [`LineRenderer`] → the strace
//! importer → the same processes, parents, exits, signals and times, for every option.

use super::{Decode, LineFilter, LineRenderer};
use crate::clock::{Clock, Stamper, Style};
use crate::event::{CapturedStr, CloneFlags, Event, EventKind, OomInfo, SignalResult, Syscall};
use crate::lineage::Engine;
use crate::synth;
use std::collections::BTreeMap;
use tracer_common::clone_flags as cf;

const START_WALL: u64 = 1_764_747_609_000_000_000;
const START_BOOT: u64 = 5_000_000_000;

fn at(mut ev: Event, seq: u64) -> Event {
    ev.seq = seq;
    ev.ts_ns = START_BOOT + seq * 1_234_567;
    ev
}

/// Every kind of event the live probes (sched set) produce, as a container's birth would:
/// processes, a thread whose leader ends first, renames, a cgroup move, signals delivered and
/// not, an OOM kill, exits and a death by signal.
fn events() -> Vec<Event> {
    let [t, th, rename, fork2] = births();
    let [bundle, cgroup, oom] = notices();
    let mut thread_end = synth::exit(1001, 0);
    thread_end.kind = EventKind::TaskExit {
        exit_code: 0,
        group_dead: false,
    };
    let mut last = synth::exit(1001, 3 << 8);
    last.tid = 1003;
    let evs = vec![
        bundle,
        t,
        synth::exec(1001, "/usr/bin/sh"),
        th,
        rename,
        fork2,
        synth::exec(1002, "/usr/bin/sleep"),
        cgroup,
        synth::kill(1001, 1002, 15, 0, SignalResult::Delivered),
        synth::kill(1001, 1002, 17, 0, SignalResult::Ignored),
        oom,
        synth::kill(1001, 1002, 9, 0, SignalResult::Delivered),
        synth::exit(1002, 9),
        thread_end,
        last,
    ];
    evs.into_iter()
        .enumerate()
        .map(|(i, e)| at(e, i as u64 + 1))
        .collect()
}

/// 1000 forks 1001 (no syscall known), which creates thread 1003 that renames itself, then
/// forks 1002.
fn births() -> [Event; 4] {
    let thread = cf::CLONE_VM | cf::CLONE_THREAD | cf::CLONE_SIGHAND;
    let mut t = synth::fork(1000, 1001);
    if let EventKind::Fork {
        child_tgid,
        flags,
        syscall,
        ..
    } = &mut t.kind
    {
        *child_tgid = 1001;
        *flags = Some(CloneFlags(0));
        *syscall = None;
    }
    let mut th = Event::bare(
        0,
        0,
        1001,
        1001,
        "",
        EventKind::Fork {
            child_tid: 1003,
            child_tgid: 1001,
            child_ppid: 1000,
            syscall: None,
            flags: Some(CloneFlags(thread)),
            child_ns: None,
        },
    );
    th.tid = 1001;
    let rename = Event::bare(
        0,
        0,
        1001,
        1003,
        "",
        EventKind::PrctlEnter {
            option: tracer_common::prctl::PR_SET_NAME,
            arg2: 0,
            name: Some(CapturedStr::new("wo>]rker\x1b")),
            shown: None,
        },
    );
    let mut fork2 = synth::fork(1001, 1002);
    if let EventKind::Fork { syscall, .. } = &mut fork2.kind {
        *syscall = None;
    }
    [t, th, rename, fork2]
}

/// What the probes report besides syscalls: a bundle's annotations (hostile), a cgroup move,
/// an OOM kill.
fn notices() -> [Event; 3] {
    let annotations = synth::PodAnnotations::new("default", "web\x1b");
    let meta = annotations.meta(1000, "c0ffee\"] x");
    let bundle = Event::bare(0, 0, 1000, 1000, "", meta);
    let cgroup = Event::bare(
        0,
        0,
        1000,
        1000,
        "",
        EventKind::CgroupAttach {
            pid: 1002,
            hierarchy: 0,
            cgroup_id: 7,
            path: CapturedStr::new("/kubepods/pod1"),
        },
    );
    let oom = Event::bare(
        0,
        0,
        1002,
        1002,
        "",
        EventKind::OomVictim(OomInfo {
            tid: 1002,
            total_vm_kb: 1,
            anon_rss_kb: 2,
            file_rss_kb: 3,
            shmem_rss_kb: 4,
            oom_score_adj: 0,
            cgroup: Some("/kubepods/pod1".into()),
            limit: Some(1 << 25),
        }),
    );
    [bundle, cgroup, oom]
}

/// Each process's parent, exit and end, every signal (receiver, signal, sender, result), and
/// the notices strace has no line for, as they are.
type Shape = (
    BTreeMap<u32, (u32, bool, Option<String>)>,
    Vec<(u32, i32, u32, SignalResult)>,
    Vec<EventKind>,
);

fn shape(evs: &[Event]) -> Shape {
    let mut e = Engine::new();
    evs.iter().for_each(|ev| e.apply(ev));
    let procs = e
        .processes()
        .filter(|p| p.pid != 1000)
        .map(|p| {
            (
                p.pid,
                (p.ppid, p.exited, p.exit_status.map(|s| s.to_string())),
            )
        })
        .collect();
    let sigs = evs
        .iter()
        .filter_map(|ev| {
            let EventKind::Signal(i) = &ev.kind else {
                return None;
            };
            Some((i.target, i.signal, i.sender, i.result))
        })
        .collect();
    let notices = evs
        .iter()
        .filter(|ev| {
            matches!(
                ev.kind,
                EventKind::CgroupAttach { .. }
                    | EventKind::OomVictim(_)
                    | EventKind::ContainerMeta { .. }
            )
        })
        .map(|ev| {
            let mut kind = ev.kind.clone();
            // A cgroup's id is not on the line.
            if let EventKind::CgroupAttach {
                hierarchy,
                cgroup_id,
                ..
            } = &mut kind
            {
                (*hierarchy, *cgroup_id) = (0, 0);
            }
            kind
        })
        .collect();
    (procs, sigs, notices)
}

fn render(evs: &[Event], r: &mut LineRenderer) -> String {
    let mut engine = Engine::new();
    let mut text = String::new();
    for ev in evs {
        engine.apply(ev);
        for l in r.render_in(ev, Some(&engine)) {
            text.push_str(&l);
            text.push('\n');
        }
    }
    text
}

fn renderers() -> Vec<LineRenderer> {
    let clock = Clock::boot(START_WALL, START_BOOT);
    let all = Decode {
        comm: true,
        pidns: true,
        k8s: true,
    };
    let mut out = Vec::new();
    for (style, seq, decode) in [
        (None, false, Decode::default()),
        (
            Some(Style::Seconds),
            true,
            Decode {
                comm: true,
                ..Decode::default()
            },
        ),
        (Some(Style::Micros), false, all),
        (Some(Style::Epoch), true, all),
        (Some(Style::Relative), false, Decode::default()),
    ] {
        out.push(LineRenderer {
            show_seq: seq,
            sched_probes: true,
            stamper: style.map(|s| Stamper::new(clock, s)),
            decode,
            ..LineRenderer::default()
        });
    }
    // a recording without wall time: blanks where the stamps would be
    out.push(LineRenderer {
        sched_probes: true,
        stamper: Some(Stamper::new(Clock::None, Style::Micros)),
        ..LineRenderer::default()
    });
    out
}

#[test]
fn every_line_reads_back_as_the_same_processes_and_signals() {
    let evs = events();
    let truth = shape(&evs);
    assert_eq!(
        (truth.0.len(), truth.1.len(), truth.2.len()),
        (2, 3, 3),
        "{truth:?}"
    );
    for mut r in renderers() {
        let text = render(&evs, &mut r);
        let back = crate::strace::parse_log(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(back.unreadable, 0, "{:?}\n{text}", back.first_unreadable);
        assert_eq!(shape(&back.events), truth, "{text}");
        assert!(!back.initial_pid_unknown, "{text}");
    }
}

#[test]
fn epoch_stamps_read_back_as_the_events_wall_time() {
    let evs = events();
    let clock = Clock::boot(START_WALL, START_BOOT);
    let mut r = LineRenderer {
        sched_probes: true,
        stamper: Some(Stamper::new(clock, Style::Epoch)),
        ..LineRenderer::default()
    };
    let back = crate::strace::parse_log(&render(&evs, &mut r)).unwrap();
    assert_eq!(back.clock, Clock::Epoch);
    let micros = |ns: i128| ns / 1000 * 1000;
    let want: Vec<i128> = evs
        .iter()
        .map(|e| micros(clock.epoch_ns(e.ts_ns).unwrap()))
        .collect();
    let got: Vec<i128> = back.events.iter().map(|e| i128::from(e.ts_ns)).collect();
    // The importer emits one event per line in line order; every stamp is one of ours.
    assert!(got.iter().all(|t| want.contains(t)), "{got:?} vs {want:?}");
    assert_eq!(got.first(), want.first());
}

#[test]
fn a_filtered_trace_reads_back_what_it_kept() {
    let evs = events();
    let mut r = LineRenderer {
        sched_probes: true,
        filter: LineFilter::from_exprs(&["trace=signal", "signal=!SIGCHLD"]).unwrap(),
        ..LineRenderer::default()
    };
    let text = render(&evs, &mut r);
    assert_eq!(text.lines().count(), 2, "{text}");
    let back = crate::strace::parse_log(&text).unwrap();
    let sigs: Vec<i32> = back
        .events
        .iter()
        .filter_map(|e| {
            let EventKind::Signal(i) = &e.kind else {
                return None;
            };
            Some(i.signal)
        })
        .collect();
    assert_eq!(sigs, [15, 9]);
}

#[test]
fn syscall_lines_read_back_with_their_children() {
    let clone = Event::bare(
        0,
        0,
        1001,
        1001,
        "",
        EventKind::CloneEnter {
            syscall: Syscall::Clone,
            flags: CloneFlags(0),
            exit_signal: 17,
        },
    );
    let exit = Event::bare(
        0,
        0,
        1001,
        1001,
        "",
        EventKind::SyscallExit {
            syscall: Syscall::Clone,
            ret: 1002,
        },
    );
    let evs: Vec<Event> = [
        synth::exec(1001, "/bin/sh"),
        clone,
        synth::fork(1001, 1002),
        exit,
        synth::exit(1002, 0),
        synth::exit(1001, 0),
    ]
    .into_iter()
    .enumerate()
    .map(|(i, e)| at(e, i as u64 + 1))
    .collect();
    let text = render(&evs, &mut LineRenderer::default());
    let back = crate::strace::parse_log(&text).unwrap();
    assert_eq!(back.unreadable, 0, "{:?}", back.first_unreadable);
    let forks = back
        .events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Fork { .. }));
    assert_eq!(forks.count(), 1, "{text}");
    assert_eq!(shape(&back.events).0, shape(&evs).0, "{text}");
}

/// A thread that is not the leader exec'd, as strace 6.1 printed it (`strace -f -o` of a
/// program whose second thread calls execv): the superseded line is in the leader's pid and
/// names the thread, then the exec returns there.
const NON_LEADER_EXEC: &str = "\
11068 clone3({flags=CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD|CLONE_SYSVSEM|CLONE_SETTLS|CLONE_PARENT_SETTID|CLONE_CHILD_CLEARTID, child_tid=0x7f81d308e990, parent_tid=0x7f81d308e990, exit_signal=0, stack=0x7f81d288e000, stack_size=0x7fff80, tls=0x7f81d308e6c0} => {parent_tid=[11069]}, 88) = 11069
11069 rseq(0x7f81d308efe0, 0x20, 0, 0x53053053) = 0
11068 pause( <unfinished ...>
11069 execve(\"/bin/true\", [\"/bin/true\"], 0x7fff050f0108 /* 35 vars */ <unfinished ...>
11068 <... pause resumed>)              = ?
11068 +++ superseded by execve in pid 11069 +++
11068 <... execve resumed>)             = 0
11068 exit_group(0)                     = ?
11068 +++ exited with 0 +++
";

#[test]
fn a_non_leader_exec_is_printed_in_stracess_own_order() {
    let imported = crate::strace::parse_log(NON_LEADER_EXEC).unwrap();
    assert_eq!(imported.unreadable, 0, "{:?}", imported.first_unreadable);
    let text = render(&imported.events, &mut LineRenderer::default());
    let body = |l: &str| {
        l.split_once("] ")
            .map(|(p, b)| (p.to_owned(), b.to_owned()))
    };
    let lines: Vec<(String, String)> = text.lines().filter_map(body).collect();
    let at = |needle: &str| lines.iter().position(|(_, b)| b.starts_with(needle));
    let sup = at("+++ superseded").expect(&text);
    let resumed = at("<... execve resumed>").expect(&text);
    assert_eq!(resumed, sup + 1, "{text}");
    assert_eq!(
        lines[sup],
        (
            "[pid  11068".into(),
            "+++ superseded by execve in pid 11069 +++".into()
        )
    );
    assert_eq!(lines[resumed].0, "[pid  11068", "{text}");
    let enter = at("execve(").expect(&text);
    assert!(enter < sup && lines[enter].0 == "[pid  11069", "{text}");
    // and it reads back as the same exec
    let back = crate::strace::parse_log(&text).unwrap();
    assert_eq!(back.unreadable, 0, "{:?}", back.first_unreadable);
    let exec = |evs: &[Event]| {
        evs.iter().find_map(|e| {
            let EventKind::Exec { old_tid, .. } = &e.kind else {
                return None;
            };
            Some((e.tid, *old_tid))
        })
    };
    assert_eq!(exec(&back.events), Some((11068, 11069)), "{text}");
    assert_eq!(exec(&imported.events), exec(&back.events));
}

/// strace's own arguments come back as it wrote them (symbolic names kept), as strace 6.1
/// printed them for an unprivileged process.
#[test]
fn prctl_arguments_are_printed_as_strace_wrote_them() {
    let real = concat!(
        "prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_KILL, 0, 0) = -1 EPERM (Operation not permitted)\n",
        "prctl(PR_GET_CHILD_SUBREAPER, [0])      = 0\n",
        "prctl(PR_SET_CHILD_SUBREAPER, 1)        = 0\n",
        "prctl(PR_GET_CHILD_SUBREAPER, [1])      = 0\n",
    );
    let imp = crate::strace::parse_log(real).unwrap();
    assert_eq!(imp.unreadable, 0, "{:?}", imp.first_unreadable);
    let mut r = LineRenderer::new();
    let lines: Vec<String> = imp.events.iter().flat_map(|e| r.render(e)).collect();
    let bodies: Vec<&str> = lines
        .iter()
        .map(|l| l.split_once("] ").map_or(l.as_str(), |p| p.1))
        .collect();
    assert_eq!(
        bodies,
        [
            // (the errno's text strace adds is not the renderer's habit)
            "prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_KILL, 0, 0) = -1 EPERM",
            "prctl(PR_GET_CHILD_SUBREAPER, [0]) = 0",
            "prctl(PR_SET_CHILD_SUBREAPER, 1) = 0",
            "prctl(PR_GET_CHILD_SUBREAPER, [1]) = 0",
        ]
    );
    // what is not printable ASCII, or too long, is not kept: the option and arg2 are printed
    let long = format!(
        "prctl(PR_SET_PDEATHSIG, SIGKILL, {}) = 0\n",
        "1, ".repeat(100) + "1"
    );
    let imp = crate::strace::parse_log(&long).unwrap();
    let lines: Vec<String> = imp.events.iter().flat_map(|e| r.render(e)).collect();
    assert!(
        lines[0].ends_with("prctl(PR_SET_PDEATHSIG, SIGKILL) = 0"),
        "{lines:?}"
    );
}

/// execveat's flags by name, as strace 6.1 printed a real `execveat(fd, "", ..., AT_EMPTY_PATH)`,
/// and read back from the renderer's line (which leaves envp out).
#[test]
fn execveat_flags_keep_their_names() {
    let real = "execveat(3, \"\", [\"true\"], 0x7ffc30ebb938 /* 0 vars */, AT_EMPTY_PATH) = 0\n";
    let imp = crate::strace::parse_log(real).unwrap();
    assert!(
        matches!(
            imp.events[0].kind,
            EventKind::ExecEnter {
                at_flags: 0x1000,
                dirfd: 3,
                ..
            }
        ),
        "{:?}",
        imp.events[0]
    );
    let mut r = LineRenderer::new();
    let text: String = imp
        .events
        .iter()
        .flat_map(|e| r.render(e))
        .map(|l| l + "\n")
        .collect();
    assert!(
        text.contains("execveat(3, \"\", [\"true\"], AT_EMPTY_PATH) = 0"),
        "{text}"
    );
    let back = crate::strace::parse_log(&text).unwrap();
    assert!(
        matches!(
            back.events[0].kind,
            EventKind::ExecEnter {
                at_flags: 0x1000,
                ..
            }
        ),
        "{text}"
    );
    assert_eq!(
        crate::names::at_flags(0x1100 | 0x2),
        "AT_SYMLINK_NOFOLLOW|AT_EMPTY_PATH|0x2"
    );
    assert_eq!(crate::names::at_flags(0), "0");
}
