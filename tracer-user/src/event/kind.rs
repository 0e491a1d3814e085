//! Every kind of event, declared once: [`EventKind`] (what happened, with its fields), what
//! each kind says to the parts that ask about several kinds (the task it creates or ends, the
//! pids it names, the prctl or the syscall it is), and the one table that says, per kind, how
//! each part of the tracer names it. Adding a kind starts here (ARCHITECTURE.md, "Adding an
//! event kind").
//!
//! The table gives the ring-buffer record id (`tracer_common::kind`, what the probes write),
//! the [`EventKind`](super::EventKind) variant, its name (the JSON `event` field, the per-kind
//! counts), the trace-file codec's code and the format version that added it, the
//! `-e trace=` word whose lines it prints under, and the engine's transitions it may become.
//! The decoder, the codec, the line filter and the engine's adapter each match every kind
//! without a wildcard arm, so the compiler names each place a new kind must be handled; the
//! tests of `tracefile`, `render::filter` and `lineage::transition` check that those places
//! agree with this table.

use serde::{Deserialize, Serialize};
use tracer_common::kind as wire;

use super::{
    prctl_opt, CapturedStr, CloneFlags, ExecCred, OomInfo, PidNs, PrctlShown, SignalInfo, Syscall,
};

/// What happened. Enter/exit pairs are matched by `tid` (exec success by `Exec::old_tid`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum EventKind {
    /// A clone-family call starts. For fork `flags` is empty; for vfork CLONE_VM|CLONE_VFORK.
    CloneEnter {
        /// Which call.
        syscall: Syscall,
        /// Clone flags (without the exit signal).
        flags: CloneFlags,
        /// Signal sent to the parent at exit (`SIGCHLD` usually).
        exit_signal: u32,
    },
    /// A traced syscall returned (`ret` < 0 is -errno). In a new child, clone returns 0.
    SyscallExit {
        /// Which call.
        syscall: Syscall,
        /// Return value; negative is -errno.
        ret: i64,
    },
    /// An exec starts: the path asked for and the first argv entries.
    ExecEnter {
        /// `execve` or `execveat`.
        syscall: Syscall,
        /// `execveat`'s dirfd (`AT_FDCWD` = -100 for execve).
        dirfd: i64,
        /// `execveat`'s flags (0 for execve).
        at_flags: u32,
        /// The path asked for.
        filename: CapturedStr,
        /// The first argv entries.
        argv: Vec<String>,
        /// argv had more entries (or longer ones) than captured.
        argv_truncated: bool,
    },
    /// exit / exit_group called with `code` (these never return).
    ExitEnter {
        /// `exit` or `exit_group`.
        syscall: Syscall,
        /// The exit code passed.
        code: i32,
    },
    /// prctl(option, arg2, ...) called; `name` is PR_SET_NAME's new name.
    PrctlEnter {
        /// The `PR_*` option.
        option: u32,
        /// The second argument (`PR_SET_CHILD_SUBREAPER`'s flag...).
        arg2: u64,
        /// `PR_SET_NAME`'s new name, when the probe could read it.
        name: Option<CapturedStr>,
        /// What an strace log showed of the call beyond its option and second argument
        /// (the probes: none).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        shown: Option<Box<PrctlShown>>,
    },
    /// A task was created (sched_process_fork, or an strace clone + attach notice).
    /// The event's own tgid/tid are the creator's (the caller).
    Fork {
        /// The new task's thread id (host pid namespace).
        child_tid: u32,
        /// The new task's process id (equal to `child_tid` unless it is a thread).
        child_tgid: u32,
        /// The child's real parent tgid (0 if the source could not tell).
        child_ppid: u32,
        /// The creating call, when known.
        syscall: Option<Syscall>,
        /// Its clone flags, when known.
        flags: Option<CloneFlags>,
        /// The child's pid namespace and its pid there, when the source knows them.
        #[serde(skip_serializing_if = "Option::is_none")]
        child_ns: Option<PidNs>,
    },
    /// A successful exec (sched_process_exec). The event's tid is the task after the exec;
    /// `old_tid` the thread that called exec (they differ for a non-leader thread).
    Exec {
        /// The thread that called exec.
        old_tid: u32,
        /// The exec'd file.
        filename: CapturedStr,
        /// What the kernel said of the task's credentials and executable after the exec,
        /// when the source could see them (the probes can; strace logs cannot).
        #[serde(skip_serializing_if = "Option::is_none")]
        cred: Option<ExecCred>,
    },
    /// A task ended (sched_process_exit). `exit_code` is wait(2)'s status word:
    /// `(status << 8) | signal`. `group_dead`: it was the last thread of its process.
    TaskExit {
        /// wait(2) status word.
        exit_code: u32,
        /// It was the last thread of its process.
        group_dead: bool,
    },
    /// A task was moved into another cgroup (cgroup:cgroup_attach_task). The event's own
    /// tgid/tid are the task that moved it (runc writing `cgroup.procs`).
    CgroupAttach {
        /// The moved task (thread id; a process's leader when a runtime moves a process).
        pid: u32,
        /// The hierarchy (`/proc/PID/cgroup`'s first column; 0 for cgroup v2).
        hierarchy: u32,
        /// The destination cgroup's id.
        cgroup_id: u64,
        /// The destination's path inside the hierarchy.
        path: CapturedStr,
    },
    /// A signal was generated for a task (signal:signal_generate, or an strace
    /// `--- SIG… {…} ---` line). The event's own tgid/tid/comm are the task the source saw it
    /// in: the probe's current task (the sender; for a signal the kernel raises, the task whose
    /// action raised it, e.g. the dying child for SIGCHLD), or the receiver for strace.
    Signal(SignalInfo),
    /// The OOM killer chose a victim (oom:mark_victim). The event's own tgid/tid are the task
    /// that was allocating when memory ran out.
    OomVictim(OomInfo),
    /// Not a kernel event: what the capture read from an OCI bundle's `config.json` when the
    /// runtime (`pid`) started on it — the Kubernetes annotations. Carries the seq of the
    /// exec it was read for and takes no sequence number of its own ([`EventKind::is_metadata`]).
    ContainerMeta {
        /// The OCI runtime process.
        pid: u32,
        /// The container id the runtime was given.
        container_id: String,
        /// The known annotations (`io.kubernetes.*`), bounded.
        annotations: std::collections::BTreeMap<String, String>,
    },
    /// The process is (`on`) or is no longer a child subreaper, as the probes without syscall
    /// probes read it from the kernel (`signal_struct::is_child_subreaper`): they see no
    /// prctl call, only its effect, when the process next creates a process or a descendant
    /// of it dies (before anyone can have been adopted by it). The engine takes it as the
    /// `PR_SET_CHILD_SUBREAPER` call it stands for; a prctl call a source saw is a
    /// [`EventKind::PrctlEnter`].
    Subreaper {
        /// The flag is set (false: it was cleared).
        on: bool,
    },
}

impl EventKind {
    /// Short name, as in the JSON `event` field ([`Kind::name`]).
    pub fn name(&self) -> &'static str {
        self.kind().name()
    }

    /// Which kind it is.
    pub fn kind(&self) -> Kind {
        match self {
            EventKind::CloneEnter { .. } => Kind::CloneEnter,
            EventKind::SyscallExit { .. } => Kind::SyscallExit,
            EventKind::ExecEnter { .. } => Kind::ExecEnter,
            EventKind::ExitEnter { .. } => Kind::ExitEnter,
            EventKind::PrctlEnter { .. } => Kind::PrctlEnter,
            EventKind::Fork { .. } => Kind::Fork,
            EventKind::Exec { .. } => Kind::Exec,
            EventKind::TaskExit { .. } => Kind::TaskExit,
            EventKind::CgroupAttach { .. } => Kind::CgroupAttach,
            EventKind::Signal(_) => Kind::Signal,
            EventKind::OomVictim(_) => Kind::OomVictim,
            EventKind::ContainerMeta { .. } => Kind::ContainerMeta,
            EventKind::Subreaper { .. } => Kind::Subreaper,
        }
    }

    /// Metadata the capture added, not a kernel event: it repeats the seq of the event it was
    /// read for, so sequence accounting (gaps, order) skips it.
    pub fn is_metadata(&self) -> bool {
        matches!(self, EventKind::ContainerMeta { .. })
    }

    /// The task it creates: `(child_tid, child_tgid)`.
    pub fn new_task(&self) -> Option<(u32, u32)> {
        self.facts().new_task
    }

    /// The end of the event's own task: whether it was the last of its process.
    pub fn task_end(&self) -> Option<bool> {
        self.facts().task_end
    }

    /// The processes it names besides its own task's (0: unknown): a new child, a moved task,
    /// a runtime, a signal's sender and target, an OOM victim.
    pub fn other_pids(&self) -> [Option<u32>; 2] {
        self.facts().other_pids
    }

    /// The syscall whose enter or exit it is.
    pub fn call(&self) -> Option<Syscall> {
        self.facts().call
    }

    /// The prctl call the event is or stands for: its option, second argument and
    /// `PR_SET_NAME`'s name ([`EventKind::Subreaper`] stands for
    /// `prctl(PR_SET_CHILD_SUBREAPER, on)`).
    pub fn as_prctl(&self) -> Option<(u32, u64, Option<&CapturedStr>)> {
        self.facts().prctl
    }

    /// What the kind says to the parts that ask about several kinds: one arm per kind.
    fn facts(&self) -> Facts<'_> {
        let none = Facts::default();
        match self {
            EventKind::CloneEnter { syscall, .. }
            | EventKind::SyscallExit { syscall, .. }
            | EventKind::ExecEnter { syscall, .. }
            | EventKind::ExitEnter { syscall, .. } => Facts {
                call: Some(*syscall),
                ..none
            },
            EventKind::PrctlEnter {
                option, arg2, name, ..
            } => Facts {
                call: Some(Syscall::Prctl),
                prctl: Some((*option, *arg2, name.as_ref())),
                ..none
            },
            EventKind::Fork {
                child_tid,
                child_tgid,
                ..
            } => Facts {
                new_task: Some((*child_tid, *child_tgid)),
                other_pids: [Some(*child_tgid), None],
                ..none
            },
            EventKind::Exec { .. } => none,
            EventKind::TaskExit { group_dead, .. } => Facts {
                task_end: Some(*group_dead),
                ..none
            },
            EventKind::CgroupAttach { pid, .. } | EventKind::ContainerMeta { pid, .. } => Facts {
                other_pids: [Some(*pid), None],
                ..none
            },
            EventKind::Signal(i) => Facts {
                other_pids: [Some(i.sender), Some(i.target)],
                ..none
            },
            EventKind::OomVictim(o) => Facts {
                other_pids: [Some(o.tid), None],
                ..none
            },
            EventKind::Subreaper { on } => Facts {
                prctl: Some((prctl_opt::PR_SET_CHILD_SUBREAPER, u64::from(*on), None)),
                ..none
            },
        }
    }
}

/// `EventKind::facts`: what the parts that ask about several kinds ask.
#[derive(Debug, Default)]
struct Facts<'a> {
    new_task: Option<(u32, u32)>,
    task_end: Option<bool>,
    other_pids: [Option<u32>; 2],
    call: Option<Syscall>,
    prctl: Option<(u32, u64, Option<&'a CapturedStr>)>,
}

/// What the table says of one kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KindRow {
    /// The name: the JSON `event` field (serde's snake_case of the variant).
    pub name: &'static str,
    /// The ring-buffer record id (`tracer_common::kind`); none for what no probe writes.
    pub wire: Option<u32>,
    /// The trace-file codec's code (the low nibble of an event's tag byte).
    pub code: u8,
    /// The first trace-format version whose files may hold that code: a reader refuses it in
    /// older files, as damage.
    pub since: u16,
    /// The `-e trace=` word its lines print under; none: its syscall's (`execve`, `clone`,
    /// `prctl`...), whose class decides.
    pub trace: Option<&'static str>,
    /// The engine transitions (`lineage::Transition` variants) the adapter may make of it.
    pub engine: &'static [&'static str],
}

/// Declares [`Kind`], [`Kind::ALL`] and each kind's [`KindRow`] from one list.
macro_rules! declare_kinds {
    ($(
        $(#[doc = $doc:literal])*
        $kind:ident: $name:literal, wire $wire:expr, code $code:literal since $since:literal,
            trace $trace:expr, engine [$($engine:literal),+];
    )*) => {
        /// Which kind an event is: an [`EventKind`](super::EventKind) without its fields.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Kind {
            $($(#[doc = $doc])* $kind,)*
        }

        impl Kind {
            /// Every kind, in the table's order.
            pub const ALL: &'static [Kind] = &[$(Kind::$kind),*];

            /// The kind's row of the table.
            pub const fn row(self) -> &'static KindRow {
                match self {
                    $(Kind::$kind => &KindRow {
                        name: $name,
                        wire: $wire,
                        code: $code,
                        since: $since,
                        trace: $trace,
                        engine: &[$($engine),+],
                    },)*
                }
            }
        }
    };
}

// Codes 0 to 9 were read by every format version (version 1 readers took 8 and 9 too); code
// 12 is the codec's exec with credentials (format version 4), a form of `Exec`.
declare_kinds! {
    /// A clone-family call starts.
    CloneEnter: "clone_enter", wire Some(wire::CLONE_ENTER), code 0 since 1,
        trace None, engine ["Alive"];
    /// A traced syscall returned.
    SyscallExit: "syscall_exit", wire Some(wire::SYS_EXIT), code 1 since 1,
        trace None, engine ["Alive"];
    /// An exec starts (its argv, held until its outcome).
    ExecEnter: "exec_enter", wire Some(wire::EXEC_ENTER), code 2 since 1,
        trace None, engine ["Alive"];
    /// exit or exit_group called.
    ExitEnter: "exit_enter", wire Some(wire::EXIT_ENTER), code 3 since 1,
        trace None, engine ["ExitGroupCalled", "Alive"];
    /// A prctl call.
    PrctlEnter: "prctl_enter", wire Some(wire::PRCTL_ENTER), code 4 since 1,
        trace Some("prctl"), engine ["Renamed", "Subreaper", "SubreaperSeen", "Alive"];
    /// A task was created.
    Fork: "fork", wire Some(wire::SCHED_FORK), code 5 since 1,
        trace Some("fork"), engine ["Born"];
    /// A successful exec.
    Exec: "exec", wire Some(wire::SCHED_EXEC), code 6 since 1,
        trace Some("exec"), engine ["Exec"];
    /// A task ended.
    TaskExit: "task_exit", wire Some(wire::SCHED_EXIT), code 7 since 1,
        trace Some("exit"), engine ["TaskExit"];
    /// A task moved to another cgroup.
    CgroupAttach: "cgroup_attach", wire Some(wire::CGROUP_ATTACH), code 8 since 1,
        trace Some("cgroup"), engine ["CgroupMoved"];
    /// A runtime bundle's annotations (the capture's, no probe's).
    ContainerMeta: "container_meta", wire None, code 9 since 1,
        trace Some("bundle"), engine ["ContainerMeta"];
    /// A generated signal.
    Signal: "signal", wire Some(wire::SIGNAL), code 10 since 3,
        trace Some("signal"), engine ["Signal"];
    /// The OOM killer's victim.
    OomVictim: "oom_victim", wire Some(wire::OOM_VICTIM), code 11 since 3,
        trace Some("oom"), engine ["OomVictim"];
    /// A process became (or stopped being) a child subreaper, read from the kernel.
    Subreaper: "subreaper", wire Some(wire::SUBREAPER), code 13 since 5,
        trace Some("subreaper"), engine ["Subreaper"];
}

impl Kind {
    /// The newest trace-format version a kind needs: the version a writer writes.
    pub const NEWEST_FORMAT: u16 = {
        let (mut newest, mut i) = (0, 0);
        while i < Kind::ALL.len() {
            if Kind::ALL[i].row().since > newest {
                newest = Kind::ALL[i].row().since;
            }
            i += 1;
        }
        newest
    };

    /// Its name (the JSON `event` field).
    pub const fn name(self) -> &'static str {
        self.row().name
    }

    /// The kind a ring-buffer record id names; none for an id no kind has.
    pub fn from_wire(id: u32) -> Option<Kind> {
        Kind::ALL.iter().copied().find(|k| k.row().wire == Some(id))
    }

    /// The kind a trace-file code names (12, the exec with credentials, is the codec's).
    pub fn from_code(code: u8) -> Option<Kind> {
        Kind::ALL.iter().copied().find(|k| k.row().code == code)
    }

    /// The kind of this name.
    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.iter().copied().find(|k| k.row().name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// Each id space (record id, codec code, name) names each kind once, and reads back to it.
    #[test]
    fn the_id_spaces_match_one_to_one() {
        let (mut wires, mut codes, mut names) = (BTreeSet::new(), BTreeSet::new(), BTreeSet::new());
        for &k in Kind::ALL {
            let row = k.row();
            if let Some(id) = row.wire {
                assert!(wires.insert(id), "{k:?}: record id {id} twice");
                assert_eq!(Kind::from_wire(id), Some(k));
            }
            assert!(codes.insert(row.code), "{k:?}: code {} twice", row.code);
            assert_eq!(Kind::from_code(row.code), Some(k));
            assert!(row.code < 16 && row.code != 12, "{k:?}: code {}", row.code);
            assert!(names.insert(row.name), "{k:?}: name {} twice", row.name);
            assert_eq!(Kind::from_name(row.name), Some(k));
            assert!(row.since >= 1, "{k:?}: format version {}", row.since);
        }
        // The record ids run from 1 without a gap.
        let last = wires.last().copied().unwrap_or(0);
        assert_eq!(wires, (1..=last).collect::<BTreeSet<_>>());
        assert_eq!(Kind::from_wire(0), None);
        assert_eq!(Kind::from_code(12), None);
    }
}
