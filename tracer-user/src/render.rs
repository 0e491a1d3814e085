//! strace-like one-line rendering of events, with enter/exit pairing per thread.
//!
//! A syscall's enter is held until its exit so the usual case prints as one line
//! (`[pid 4085] clone(flags=CLONE_PARENT|SIGCHLD) = 4086`). When another thread's event comes
//! in between, the held call is printed `<unfinished ...>` and its exit later as
//! `<... clone resumed>) = 4086`, exactly as strace does.

use crate::escape::{escape, quoted as quote};
use crate::event::{Event, EventKind, ExitStatus, OomInfo, SignalInfo, SignalResult, Syscall};
use crate::names;
use std::collections::HashMap;
use std::fmt::Write as _;

/// Arguments of a held syscall enter, already formatted.
#[derive(Clone)]
struct Held {
    syscall: Syscall,
    args: String,
    /// Printed as `<unfinished ...>` already.
    flushed: bool,
    /// Host pid of the child, from the fork event (it may differ from the return value,
    /// which is in the caller's pid namespace).
    child: Option<u32>,
}

/// Turns events into strace-like lines. Feed events in order with [`LineRenderer::render`].
#[derive(Clone, Default)]
pub struct LineRenderer {
    held: HashMap<u32, Held>,
    /// Thread whose enter is held and printed nothing yet (at most one at a time).
    open: Option<u32>,
    /// Prefix each line with the event's sequence number.
    pub show_seq: bool,
    /// The events come from the "sched" probe set (no syscall probes, see
    /// [`CaptureBuilder::syscalls`](crate::capture::CaptureBuilder::syscalls) and the
    /// `probes` trace-header entry): no syscall exits arrive, so an execve line completes at
    /// its exec and a prctl line at once, both `= 0` (only successful ones are seen).
    pub sched_probes: bool,
}

fn ret_text(syscall: Syscall, ret: i64, child: Option<u32>) -> String {
    if ret < 0 {
        return format!("-1 {}", names::errno(-ret));
    }
    match child {
        Some(host) if syscall.creates_task() && ret > 0 && host as i64 != ret => {
            format!("{ret} (host pid {host})")
        }
        _ => ret.to_string(),
    }
}

impl LineRenderer {
    /// A renderer with no pending calls and default options.
    pub fn new() -> Self {
        Self::default()
    }

    fn prefix(&self, out: &mut String, ev: &Event, tid: u32) {
        if self.show_seq {
            let _ = write!(out, "#{:<6} ", ev.seq);
        }
        let _ = write!(out, "[pid {tid:>6}] ");
    }

    /// Prints the held enter of another thread as `<unfinished ...>` before `ev`'s line.
    fn flush_open(&mut self, ev: &Event, lines: &mut Vec<String>) {
        let Some(tid) = self.open.take() else { return };
        if tid == ev.tid {
            self.open = Some(tid);
            return;
        }
        if let Some(h) = self.held.get_mut(&tid) {
            let mut line = String::new();
            if self.show_seq {
                line.push_str("        ");
            }
            let _ = write!(
                line,
                "[pid {tid:>6}] {}({} <unfinished ...>",
                h.syscall, h.args
            );
            h.flushed = true;
            lines.push(line);
        }
    }

    fn hold(&mut self, ev: &Event, syscall: Syscall, args: String, lines: &mut Vec<String>) {
        self.flush_open(ev, lines);
        if let Some(old) = self.held.insert(
            ev.tid,
            Held {
                syscall,
                args,
                flushed: false,
                child: None,
            },
        ) {
            // An enter without exit (lost event): say so rather than drop it silently.
            if !old.flushed {
                let mut line = String::new();
                self.prefix(&mut line, ev, ev.tid);
                let _ = write!(line, "{}({} <no exit seen>", old.syscall, old.args);
                lines.push(line);
            }
        }
        self.open = Some(ev.tid);
    }

    /// The line for `tid`'s return from `syscall`: the held enter completed or resumed.
    fn syscall_exit(&mut self, ev: &Event, syscall: Syscall, ret: i64, lines: &mut Vec<String>) {
        self.flush_open(ev, lines);
        if self.open == Some(ev.tid) {
            self.open = None;
        }
        let mut line = String::new();
        self.prefix(&mut line, ev, ev.tid);
        match self.held.remove(&ev.tid) {
            Some(h) if h.syscall == syscall && !h.flushed => {
                let _ = write!(
                    line,
                    "{}({}) = {}",
                    h.syscall,
                    h.args,
                    ret_text(syscall, ret, h.child)
                );
            }
            Some(h) if h.syscall == syscall => {
                let _ = write!(
                    line,
                    "<... {} resumed>) = {}",
                    h.syscall,
                    ret_text(syscall, ret, h.child)
                );
            }
            // A new child returning from clone, or an exit whose enter we missed.
            _ => {
                let _ = write!(
                    line,
                    "<... {syscall} resumed>) = {}",
                    ret_text(syscall, ret, None)
                );
            }
        }
        lines.push(line);
    }

    /// Renders one event; returns zero or more finished lines.
    pub fn render(&mut self, ev: &Event) -> Vec<String> {
        let mut lines = Vec::new();
        match &ev.kind {
            EventKind::CloneEnter {
                syscall,
                flags,
                exit_signal,
            } => {
                let args = match syscall {
                    Syscall::Fork | Syscall::Vfork => String::new(),
                    Syscall::Clone3 => format!(
                        "{{flags={}, exit_signal={}}}",
                        names::clone_flags(flags.0),
                        names::signal(*exit_signal as i32)
                    ),
                    _ => format!(
                        "flags={}",
                        names::clone_flags_with_signal(flags.0, *exit_signal)
                    ),
                };
                self.hold(ev, *syscall, args, &mut lines);
            }
            EventKind::ExecEnter {
                syscall,
                dirfd,
                at_flags,
                filename,
                argv,
                argv_truncated,
            } => {
                let mut args = String::new();
                if *syscall == Syscall::Execveat {
                    if *dirfd == -100 {
                        args.push_str("AT_FDCWD, ");
                    } else {
                        let _ = write!(args, "{dirfd}, ");
                    }
                }
                args.push_str(&quote(&filename.value, filename.truncated));
                args.push_str(", [");
                for (i, a) in argv.iter().enumerate() {
                    if i > 0 {
                        args.push_str(", ");
                    }
                    args.push_str(&quote(a, false));
                }
                if *argv_truncated {
                    args.push_str(", ...");
                }
                args.push(']');
                if *syscall == Syscall::Execveat {
                    let _ = write!(args, ", {at_flags:#x}");
                }
                self.hold(ev, *syscall, args, &mut lines);
            }
            EventKind::PrctlEnter { option, arg2, name } => {
                let opt = names::prctl_option(*option);
                let args = match (name, *option) {
                    (Some(n), _) => format!("{opt}, {}", quote(&n.value, n.truncated)),
                    (None, tracer_common::prctl::PR_SET_PDEATHSIG) => {
                        format!("{opt}, {}", names::signal(*arg2 as i32))
                    }
                    (None, _) => format!("{opt}, {arg2}"),
                };
                if self.sched_probes {
                    self.flush_open(ev, &mut lines);
                    let mut line = String::new();
                    self.prefix(&mut line, ev, ev.tid);
                    let _ = write!(line, "{}({args}) = 0", Syscall::Prctl);
                    lines.push(line);
                } else {
                    self.hold(ev, Syscall::Prctl, args, &mut lines);
                }
            }
            EventKind::SyscallExit { syscall, ret } => {
                self.syscall_exit(ev, *syscall, *ret, &mut lines);
            }
            EventKind::ExitEnter { syscall, code } => {
                self.flush_open(ev, &mut lines);
                let mut line = String::new();
                self.prefix(&mut line, ev, ev.tid);
                let _ = write!(line, "{syscall}({code}) = ?");
                lines.push(line);
            }
            EventKind::Fork {
                child_tid,
                child_tgid,
                child_ppid,
                flags,
                ..
            } => {
                if let Some(h) = self.held.get_mut(&ev.tid) {
                    h.child = Some(*child_tid);
                }
                // Held line of the creator stays open: the fork happens inside its syscall.
                let mut line = String::new();
                if self.show_seq {
                    let _ = write!(line, "#{:<6} ", ev.seq);
                }
                if child_tgid != child_tid {
                    let _ = write!(line, "Thread {child_tid} attached (process {child_tgid})");
                } else {
                    let _ = write!(line, "Process {child_tid} attached (parent {child_ppid})");
                }
                // No clone line will say how it was created.
                if let (true, Some(f)) = (self.sched_probes, flags) {
                    let _ = write!(
                        line,
                        " by [pid {}] clone({})",
                        ev.tid,
                        names::clone_flags(f.0)
                    );
                }
                self.flush_open(ev, &mut lines);
                lines.push(line);
            }
            EventKind::Exec {
                old_tid, filename, ..
            } => {
                if *old_tid != ev.tid {
                    self.flush_open(ev, &mut lines);
                    let mut line = String::new();
                    self.prefix(&mut line, ev, *old_tid);
                    let _ = write!(
                        line,
                        "+++ superseded by execve in pid {} ({}) +++",
                        ev.tid,
                        escape(&filename.value)
                    );
                    lines.push(line);
                    // The exec's exit is reported in the leader's tid: move the held enter.
                    if let Some(h) = self.held.remove(old_tid) {
                        self.held.insert(ev.tid, h);
                    }
                }
                if self.sched_probes {
                    // No exit will come: the exec is the successful return.
                    match self.held.get(&ev.tid).map(|h| h.syscall) {
                        Some(sc) if sc.is_exec() => self.syscall_exit(ev, sc, 0, &mut lines),
                        _ => {}
                    }
                }
            }
            EventKind::TaskExit {
                exit_code,
                group_dead,
            } => {
                self.flush_open(ev, &mut lines);
                self.held.remove(&ev.tid);
                let mut line = String::new();
                self.prefix(&mut line, ev, ev.tid);
                let status = ExitStatus::from_wait_status(*exit_code);
                if *group_dead {
                    let _ = write!(line, "+++ {status} +++");
                } else {
                    let _ = write!(line, "+++ thread {status} +++");
                }
                lines.push(line);
            }
            // Not syscalls: notices in strace's `--- ... ---` style.
            EventKind::CgroupAttach { pid, path, .. } => {
                let text = format!(
                    "cgroup: {pid} moved to {}",
                    quote(&path.value, path.truncated)
                );
                self.notice(ev, &text, &mut lines);
            }
            EventKind::Signal(i) => {
                let text = signal_text(i);
                self.notice(ev, &text, &mut lines);
            }
            EventKind::OomVictim(o) => {
                let text = oom_text(o);
                self.notice(ev, &text, &mut lines);
            }
            EventKind::ContainerMeta {
                container_id,
                annotations,
                ..
            } => {
                let kv: Vec<String> = annotations
                    .iter()
                    .map(|(k, v)| format!("{k}={}", quote(v, false)))
                    .collect();
                let text = format!("bundle of {}: {}", quote(container_id, false), kv.join(" "));
                self.notice(ev, &text, &mut lines);
            }
        }
        lines
    }

    fn notice(&mut self, ev: &Event, text: &str, lines: &mut Vec<String>) {
        self.flush_open(ev, lines);
        let mut line = String::new();
        self.prefix(&mut line, ev, ev.tid);
        let _ = write!(line, "--- {text} ---");
        lines.push(line);
    }
}

/// strace's signal notice with the sender and target spelled out: `SIGTERM {si_code=SI_USER,
/// si_pid=100, si_tid=100} to 200 (tid 200)`, and what the kernel did when not delivered.
fn signal_text(i: &SignalInfo) -> String {
    let mut t = format!(
        "{} {{si_code={}, si_pid={}",
        names::signal(i.signal),
        names::si_code(i.signal, i.code),
        i.sender
    );
    if i.sender_tid != 0 && i.sender_tid != i.sender {
        let _ = write!(t, ", si_tid={}", i.sender_tid);
    }
    let _ = write!(t, "}} to {}", i.target);
    if i.target_tid != 0 && i.target_tid != i.target {
        let _ = write!(t, " (thread {})", i.target_tid);
    }
    match i.result {
        SignalResult::Delivered => {}
        SignalResult::Ignored => t.push_str(" ignored"),
        SignalResult::AlreadyPending => t.push_str(" already pending"),
        SignalResult::OverflowFail => t.push_str(" not queued (overflow)"),
        SignalResult::LoseInfo => t.push_str(" queued without its info"),
        SignalResult::Other => t.push_str(" (unknown result)"),
    }
    t
}

/// `OOM killer: victim 300 ... in cgroup "/kubepods/..." (limit 67108864 bytes)`.
fn oom_text(o: &OomInfo) -> String {
    let mut t = format!(
        "OOM killer: victim {} total-vm={}kB anon-rss={}kB file-rss={}kB shmem-rss={}kB oom_score_adj={}",
        o.tid, o.total_vm_kb, o.anon_rss_kb, o.file_rss_kb, o.shmem_rss_kb, o.oom_score_adj
    );
    if let Some(cg) = &o.cgroup {
        let _ = write!(t, " in cgroup {}", quote(cg, false));
    }
    if let Some(l) = o.limit {
        let _ = write!(t, " (limit {l} bytes)");
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{CapturedStr, CloneFlags};
    use tracer_common::clone_flags as cf;

    fn ev(seq: u64, tid: u32, kind: EventKind) -> Event {
        Event::bare(seq, 0, tid, tid, "x", kind)
    }

    fn all(events: &[Event]) -> Vec<String> {
        let mut r = LineRenderer::new();
        events.iter().flat_map(|e| r.render(e)).collect()
    }

    #[test]
    fn clone_parent_line_like_strace() {
        let lines = all(&[
            ev(
                1,
                4085,
                EventKind::CloneEnter {
                    syscall: Syscall::Clone,
                    flags: CloneFlags(cf::CLONE_PARENT),
                    exit_signal: 17,
                },
            ),
            ev(
                2,
                4085,
                EventKind::Fork {
                    child_tid: 4086,
                    child_tgid: 4086,
                    child_ppid: 4084,
                    syscall: Some(Syscall::Clone),
                    flags: Some(CloneFlags(cf::CLONE_PARENT)),
                    child_ns: None,
                },
            ),
            ev(
                3,
                4085,
                EventKind::SyscallExit {
                    syscall: Syscall::Clone,
                    ret: 4086,
                },
            ),
        ]);
        assert_eq!(
            lines,
            vec![
                "Process 4086 attached (parent 4084)",
                "[pid   4085] clone(flags=CLONE_PARENT|SIGCHLD) = 4086",
            ]
        );
    }

    #[test]
    fn sched_probe_set_completes_lines_without_exits() {
        let exec_enter = |file: &str| EventKind::ExecEnter {
            syscall: Syscall::Execve,
            dirfd: -100,
            at_flags: 0,
            filename: CapturedStr::new(file),
            argv: vec![file.into(), "-x".into()],
            argv_truncated: false,
        };
        let events = [
            ev(
                1,
                20,
                EventKind::Fork {
                    child_tid: 21,
                    child_tgid: 21,
                    child_ppid: 19,
                    syscall: None,
                    flags: Some(CloneFlags(cf::CLONE_PARENT)),
                    child_ns: None,
                },
            ),
            ev(
                2,
                21,
                EventKind::PrctlEnter {
                    option: tracer_common::prctl::PR_SET_NAME,
                    arg2: 0,
                    name: Some(CapturedStr::new("runc:[1:CHILD]")),
                },
            ),
            ev(3, 21, exec_enter("/bin/sh")),
            // Another thread's event in between: the exec line still completes at the exec.
            ev(
                4,
                30,
                EventKind::PrctlEnter {
                    option: tracer_common::prctl::PR_SET_CHILD_SUBREAPER,
                    arg2: 1,
                    name: None,
                },
            ),
            ev(
                5,
                21,
                EventKind::Exec {
                    cred: None,
                    old_tid: 21,
                    filename: CapturedStr::new("/bin/sh"),
                },
            ),
        ];
        let mut r = LineRenderer {
            sched_probes: true,
            ..LineRenderer::default()
        };
        let lines: Vec<String> = events.iter().flat_map(|e| r.render(e)).collect();
        assert_eq!(
            lines,
            vec![
                "Process 21 attached (parent 19) by [pid 20] clone(CLONE_PARENT)",
                r#"[pid     21] prctl(PR_SET_NAME, "runc:[1:CHILD]") = 0"#,
                r#"[pid     21] execve("/bin/sh", ["/bin/sh", "-x"] <unfinished ...>"#,
                "[pid     30] prctl(PR_SET_CHILD_SUBREAPER, 1) = 0",
                "[pid     21] <... execve resumed>) = 0",
            ]
        );
        // With syscall probes the same events wait for their exits.
        let held: Vec<String> = events
            .iter()
            .flat_map(|e| all(std::slice::from_ref(e)))
            .collect();
        assert_eq!(held, ["Process 21 attached (parent 19)"]);
    }

    #[test]
    fn namespace_pid_is_shown_with_host_pid() {
        let lines = all(&[
            ev(
                1,
                50,
                EventKind::CloneEnter {
                    syscall: Syscall::Fork,
                    flags: CloneFlags(0),
                    exit_signal: 17,
                },
            ),
            ev(
                2,
                50,
                EventKind::Fork {
                    child_tid: 51,
                    child_tgid: 51,
                    child_ppid: 50,
                    syscall: Some(Syscall::Fork),
                    flags: Some(CloneFlags(0)),
                    child_ns: None,
                },
            ),
            ev(
                3,
                50,
                EventKind::SyscallExit {
                    syscall: Syscall::Fork,
                    ret: 7,
                },
            ),
        ]);
        assert_eq!(lines[1], "[pid     50] fork() = 7 (host pid 51)");
    }

    #[test]
    fn interleaving_prints_unfinished_and_resumed() {
        let lines = all(&[
            ev(
                1,
                10,
                EventKind::ExecEnter {
                    syscall: Syscall::Execve,
                    dirfd: -100,
                    at_flags: 0,
                    filename: CapturedStr::new("/nope"),
                    argv: vec!["nope".into()],
                    argv_truncated: false,
                },
            ),
            ev(
                2,
                11,
                EventKind::ExitEnter {
                    syscall: Syscall::ExitGroup,
                    code: 3,
                },
            ),
            ev(
                3,
                10,
                EventKind::SyscallExit {
                    syscall: Syscall::Execve,
                    ret: -2,
                },
            ),
            ev(
                4,
                11,
                EventKind::TaskExit {
                    exit_code: 3 << 8,
                    group_dead: true,
                },
            ),
            ev(
                5,
                12,
                EventKind::TaskExit {
                    exit_code: 9,
                    group_dead: true,
                },
            ),
        ]);
        assert_eq!(
            lines,
            vec![
                "[pid     10] execve(\"/nope\", [\"nope\"] <unfinished ...>",
                "[pid     11] exit_group(3) = ?",
                "[pid     10] <... execve resumed>) = -1 ENOENT",
                "[pid     11] +++ exited with 3 +++",
                "[pid     12] +++ killed by SIGKILL +++",
            ]
        );
    }

    #[test]
    fn prctl_forms() {
        let lines = all(&[
            ev(
                1,
                5,
                EventKind::PrctlEnter {
                    option: 15,
                    arg2: 0,
                    name: Some(CapturedStr::new("runc:[0:PARENT]")),
                },
            ),
            ev(
                2,
                5,
                EventKind::SyscallExit {
                    syscall: Syscall::Prctl,
                    ret: 0,
                },
            ),
            ev(
                3,
                5,
                EventKind::PrctlEnter {
                    option: 36,
                    arg2: 1,
                    name: None,
                },
            ),
            ev(
                4,
                5,
                EventKind::SyscallExit {
                    syscall: Syscall::Prctl,
                    ret: 0,
                },
            ),
        ]);
        assert_eq!(
            lines,
            vec![
                "[pid      5] prctl(PR_SET_NAME, \"runc:[0:PARENT]\") = 0",
                "[pid      5] prctl(PR_SET_CHILD_SUBREAPER, 1) = 0",
            ]
        );
    }

    #[test]
    fn control_bytes_in_arguments_are_escaped_like_strace() {
        let name = CapturedStr {
            value: "\x1b]0;PWNED\x07".into(),
            truncated: false,
        };
        let lines = all(&[
            ev(
                1,
                5,
                EventKind::ExecEnter {
                    syscall: Syscall::Execve,
                    dirfd: -100,
                    at_flags: 0,
                    filename: CapturedStr {
                        value: "/tmp/\x1b[2J\x7f".into(),
                        truncated: false,
                    },
                    argv: vec!["a\nb".into(), "\x1b1".into()],
                    argv_truncated: false,
                },
            ),
            ev(
                2,
                5,
                EventKind::SyscallExit {
                    syscall: Syscall::Execve,
                    ret: 0,
                },
            ),
            ev(
                3,
                5,
                EventKind::PrctlEnter {
                    option: tracer_common::prctl::PR_SET_NAME,
                    arg2: 0,
                    name: Some(name),
                },
            ),
            ev(
                4,
                5,
                EventKind::SyscallExit {
                    syscall: Syscall::Prctl,
                    ret: 0,
                },
            ),
        ]);
        assert_eq!(
            lines[0],
            "[pid      5] execve(\"/tmp/\\33[2J\\177\", [\"a\\nb\", \"\\0331\"]) = 0"
        );
        assert!(lines[1].contains("\"\\33]0;PWNED\\7\""), "{}", lines[1]);
        assert!(lines.iter().all(|l| !l.chars().any(char::is_control)));
    }
}
