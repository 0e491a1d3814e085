//! Wire types shared by the eBPF probes (`tracer-ebpf`) and userspace (`tracer-user`).
//!
//! Every record in the ring buffer starts with a [`Header`]; `Header::kind` says which record
//! follows and `Header::size` its full length, so the reader can check the length before it casts.
//! All structs are `#[repr(C)]`, `Copy`, and laid out without implicit padding (explicit `_pad`
//! fields, `u32` flags instead of `bool`) so the bytes the kernel writes are fully defined.
#![no_std]

pub const TASK_COMM_LEN: usize = 16;
/// Bytes kept of an exec filename (path), NUL included.
pub const FILENAME_LEN: usize = 256;
/// Bytes of argv kept per exec: the NUL-separated entries back to back, whole up to this
/// budget (a container runtime's argv — runc's `--root … --log <long path> … create --bundle …`
/// — is several hundred bytes; strace shows it whole, and so must this).
pub const ARGV_BYTES: usize = 4096;
/// argv entries the `execve` syscall probe walks at most (the "sched" set reads the new image's
/// argument area in one go and has no such limit below [`ARGV_BYTES`]).
pub const MAX_ARGS: usize = 64;
/// Bytes kept of a cgroup path (NUL included): Kubernetes' systemd-driver paths run to about
/// 170 bytes.
pub const CGROUP_PATH_LEN: usize = 512;
/// Marker for "this tracepoint has no such field on this kernel".
pub const NO_OFFSET: u32 = u32::MAX;
/// Names of the probe object's maps and load-time global, shared by both sides: the probes'
/// statics carry these names (the `#[map]` macro takes the static's own name) and the loader
/// looks them up by these constants; a test of the loader checks the built object has each
/// map, and loading fails at once without the global.
pub mod maps {
    /// The ring buffer of records.
    pub const EVENTS: &str = "EVENTS";
    /// The followed tgids.
    pub const FOLLOWED: &str = "FOLLOWED";
    /// Per-CPU failed reserves.
    pub const DROPS: &str = "DROPS";
    /// The global sequence counter.
    pub const SEQ: &str = "SEQ";
    /// The load-time configuration (`ProbeConfig`), a global overridden at load.
    pub const CONFIG: &str = "CONFIG";
    /// The maps the loader uses.
    pub const USED: [&str; 4] = [EVENTS, FOLLOWED, DROPS, SEQ];
}

/// The probes' classic tracepoint programs, by name, shared by both sides as the maps are: each
/// program is named after its tracepoint, the loader attaches every row of these tables (a
/// test of the loader checks the built object has each program), and a new probe is one more
/// row here beside its program in the probes.
pub mod tracepoints {
    /// The group of event kinds that selects a probe (the capture's choice of kinds).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Group {
        /// Clone flags and clone-family calls.
        Clone,
        /// Execs and their argv.
        Exec,
        /// exit and exit_group calls.
        Exit,
        /// prctl: names and the subreaper flag.
        Prctl,
        /// Generated signals.
        Signal,
        /// The OOM killer's victims.
        Oom,
    }

    /// One tracepoint program: its tracefs category, its name (the program's and the
    /// tracepoint's), whether the capture fails without it (else a kernel may lack it), and
    /// the group that selects it (`None`: always attached, the engine needs every death).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Tracepoint {
        /// tracefs category (`sched`, `task`, `syscalls`...).
        pub category: &'static str,
        /// The tracepoint's name, which is also its program's.
        pub name: &'static str,
        /// Whether every supported kernel has it.
        pub required: bool,
        /// The group that selects it, or `None` when always attached.
        pub group: Option<Group>,
        /// Whether the probes also have a typed program for it, `{name}_btf` (tp_btf: the
        /// arguments read in place, no tracefs record filled), which the loader tries first.
        pub typed: bool,
    }

    const fn needed(category: &'static str, name: &'static str, g: Group) -> Tracepoint {
        Tracepoint {
            category,
            name,
            required: true,
            group: Some(g),
            typed: false,
        }
    }

    const fn optional(category: &'static str, name: &'static str, g: Group) -> Tracepoint {
        Tracepoint {
            category,
            name,
            required: false,
            group: Some(g),
            typed: false,
        }
    }

    const fn typed(t: Tracepoint) -> Tracepoint {
        Tracepoint { typed: true, ..t }
    }

    /// Always attached (when their group is selected); births come from the raw
    /// sched_process_fork, which the loader attaches itself.
    pub const SCHED: &[Tracepoint] = &[
        typed(needed("sched", "sched_process_exec", Group::Exec)),
        Tracepoint {
            category: "sched",
            name: "sched_process_exit",
            required: true,
            group: None,
            typed: true,
        },
        // Cgroup moves: optional (a kernel without it only loses the cgroup history).
        Tracepoint {
            category: "cgroup",
            name: "cgroup_attach_task",
            required: false,
            group: None,
            typed: false,
        },
        // OOM kills (include/trace/events/oom.h): optional; a kernel without the tracepoint
        // only loses the victims (their SIGKILL still comes through signal_generate).
        optional("oom", "mark_victim", Group::Oom),
    ];

    /// Without syscall probes: clone flags and PR_SET_NAME from task tracepoints.
    pub const TASK: &[Tracepoint] = &[
        typed(needed("task", "task_newtask", Group::Clone)),
        typed(needed("task", "task_rename", Group::Prctl)),
    ];

    /// With syscall probes.
    pub const SYSCALLS: &[Tracepoint] = &[
        needed("syscalls", "sys_enter_clone", Group::Clone),
        needed("syscalls", "sys_exit_clone", Group::Clone),
        optional("syscalls", "sys_enter_clone3", Group::Clone),
        optional("syscalls", "sys_exit_clone3", Group::Clone),
        // fork/vfork exist on x86_64 but not on arm64.
        optional("syscalls", "sys_enter_fork", Group::Clone),
        optional("syscalls", "sys_exit_fork", Group::Clone),
        optional("syscalls", "sys_enter_vfork", Group::Clone),
        optional("syscalls", "sys_exit_vfork", Group::Clone),
        needed("syscalls", "sys_enter_execve", Group::Exec),
        needed("syscalls", "sys_exit_execve", Group::Exec),
        optional("syscalls", "sys_enter_execveat", Group::Exec),
        optional("syscalls", "sys_exit_execveat", Group::Exec),
        needed("syscalls", "sys_enter_exit", Group::Exit),
        needed("syscalls", "sys_enter_exit_group", Group::Exit),
        needed("syscalls", "sys_enter_prctl", Group::Prctl),
        needed("syscalls", "sys_exit_prctl", Group::Prctl),
    ];
}

/// Default ring-buffer size in bytes (must be a power of two multiple of the page size).
pub const DEFAULT_RING_BYTES: u32 = 8 << 20;

/// Record kinds (`Header::kind`).
pub mod kind {
    /// sys_enter of clone / clone3 / fork / vfork.
    pub const CLONE_ENTER: u32 = 1;
    /// sys_exit of any traced syscall that returns.
    pub const SYS_EXIT: u32 = 2;
    /// sys_enter of execve / execveat.
    pub const EXEC_ENTER: u32 = 3;
    /// sys_enter of exit / exit_group (they never return).
    pub const EXIT_ENTER: u32 = 4;
    /// sys_enter of prctl.
    pub const PRCTL_ENTER: u32 = 5;
    /// sched:sched_process_fork — authoritative creation of a task.
    pub const SCHED_FORK: u32 = 6;
    /// sched:sched_process_exec — a successful exec.
    pub const SCHED_EXEC: u32 = 7;
    /// sched:sched_process_exit — the final exit of a task.
    pub const SCHED_EXIT: u32 = 8;
    /// cgroup:cgroup_attach_task — a task moved to another cgroup.
    pub const CGROUP_ATTACH: u32 = 9;
    /// signal:signal_generate — a signal generated for a task.
    pub const SIGNAL: u32 = 10;
    /// oom:mark_victim — the OOM killer chose a victim.
    pub const OOM_VICTIM: u32 = 11;
    /// A process is (or is no longer) a child subreaper, read from its signal_struct by the
    /// "sched" probe set, which sees no prctl call.
    pub const SUBREAPER: u32 = 12;
}

/// Syscall identifiers used on the wire (independent of the architecture's numbers).
pub mod syscall {
    pub const UNKNOWN: u32 = 0;
    pub const CLONE: u32 = 1;
    pub const CLONE3: u32 = 2;
    pub const FORK: u32 = 3;
    pub const VFORK: u32 = 4;
    pub const EXECVE: u32 = 5;
    pub const EXECVEAT: u32 = 6;
    pub const EXIT: u32 = 7;
    pub const EXIT_GROUP: u32 = 8;
    pub const PRCTL: u32 = 9;
}

/// Bits of the `flags` fields that describe captured strings.
pub mod strflag {
    /// The filename did not fit and was cut.
    pub const FILENAME_TRUNCATED: u32 = 1;
    /// argv did not fit in [`ARGV_BYTES`](super::ARGV_BYTES) (or, with the syscall probe, had
    /// more than [`MAX_ARGS`](super::MAX_ARGS) entries) and was cut.
    pub const ARGV_TRUNCATED: u32 = 2;
    /// The filename could not be read from user memory.
    pub const FILENAME_FAULT: u32 = 4;
    /// argv could not be read (fully) from user memory.
    pub const ARGV_FAULT: u32 = 8;
    /// The PR_SET_NAME name could not be read from user memory.
    pub const NAME_FAULT: u32 = 16;
}

/// Linux clone flags (include/uapi/linux/sched.h).
pub mod clone_flags {
    pub const CSIGNAL: u64 = 0x0000_00ff;
    pub const CLONE_VM: u64 = 0x0000_0100;
    pub const CLONE_FS: u64 = 0x0000_0200;
    pub const CLONE_FILES: u64 = 0x0000_0400;
    pub const CLONE_SIGHAND: u64 = 0x0000_0800;
    pub const CLONE_PIDFD: u64 = 0x0000_1000;
    pub const CLONE_PTRACE: u64 = 0x0000_2000;
    pub const CLONE_VFORK: u64 = 0x0000_4000;
    pub const CLONE_PARENT: u64 = 0x0000_8000;
    pub const CLONE_THREAD: u64 = 0x0001_0000;
    pub const CLONE_NEWNS: u64 = 0x0002_0000;
    pub const CLONE_SYSVSEM: u64 = 0x0004_0000;
    pub const CLONE_SETTLS: u64 = 0x0008_0000;
    pub const CLONE_PARENT_SETTID: u64 = 0x0010_0000;
    pub const CLONE_CHILD_CLEARTID: u64 = 0x0020_0000;
    pub const CLONE_DETACHED: u64 = 0x0040_0000;
    pub const CLONE_UNTRACED: u64 = 0x0080_0000;
    pub const CLONE_CHILD_SETTID: u64 = 0x0100_0000;
    pub const CLONE_NEWCGROUP: u64 = 0x0200_0000;
    pub const CLONE_NEWUTS: u64 = 0x0400_0000;
    pub const CLONE_NEWIPC: u64 = 0x0800_0000;
    pub const CLONE_NEWUSER: u64 = 0x1000_0000;
    pub const CLONE_NEWPID: u64 = 0x2000_0000;
    pub const CLONE_NEWNET: u64 = 0x4000_0000;
    pub const CLONE_IO: u64 = 0x8000_0000;
    pub const CLONE_CLEAR_SIGHAND: u64 = 0x1_0000_0000;
    pub const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;
    pub const CLONE_NEWTIME: u64 = 0x0000_0080;
}

/// prctl options the tracer cares about (include/uapi/linux/prctl.h).
pub mod prctl {
    pub const PR_SET_PDEATHSIG: u32 = 1;
    pub const PR_SET_NAME: u32 = 15;
    pub const PR_GET_NAME: u32 = 16;
    pub const PR_SET_CHILD_SUBREAPER: u32 = 36;
    pub const PR_GET_CHILD_SUBREAPER: u32 = 37;
}

/// Common prefix of every ring-buffer record. 64 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// One of [`kind`].
    pub kind: u32,
    /// Size in bytes of the whole record, header included.
    pub size: u32,
    /// Global sequence number, starting at 1. A failed ring-buffer reserve also takes one, so
    /// a loss shows up as a gap as well as in the drop counter.
    pub seq: u64,
    /// `bpf_ktime_get_boot_ns()`.
    pub ktime_ns: u64,
    pub cgroup_id: u64,
    pub tgid: u32,
    pub tid: u32,
    /// tgid of the current task's real parent at the time of the event (0 if unreadable).
    pub ppid: u32,
    pub uid: u32,
    pub comm: [u8; TASK_COMM_LEN],
}

/// sys_enter of clone / clone3 / fork / vfork.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CloneEnter {
    pub hdr: Header,
    pub syscall: u32,
    /// Signal sent to the parent on exit (`flags & CSIGNAL` for clone, `exit_signal` for clone3).
    pub exit_signal: u32,
    /// Clone flags without the exit signal. fork = 0, vfork = CLONE_VM|CLONE_VFORK.
    pub flags: u64,
}

/// sys_exit of clone, clone3, fork, vfork, execve, execveat, prctl.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SysExit {
    pub hdr: Header,
    pub syscall: u32,
    pub _pad: u32,
    pub ret: i64,
}

/// sys_enter of execve / execveat: the path and argv.
///
/// Sent at its used length: `hdr.size` is [`EXEC_ENTER_HEAD`] + `argv_len`, so the bytes of
/// `argv` past `argv_len` are not on the wire.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExecEnter {
    pub hdr: Header,
    pub syscall: u32,
    /// Bytes of `argv` used (at most [`ARGV_BYTES`]).
    pub argv_len: u32,
    /// [`strflag`] bits.
    pub flags: u32,
    /// execveat's flags (AT_*), 0 for execve.
    pub at_flags: u32,
    /// execveat's dirfd, AT_FDCWD (-100) for execve.
    pub dirfd: i64,
    /// NUL-terminated path.
    pub filename: [u8; FILENAME_LEN],
    /// argv entries, each followed by a NUL, back to back (the kernel's own layout of the
    /// argument area); a last entry without its NUL was cut at the budget.
    pub argv: [u8; ARGV_BYTES],
}

/// Bytes of an [`ExecEnter`] before its `argv`: the smallest record of that kind.
pub const EXEC_ENTER_HEAD: usize = core::mem::offset_of!(ExecEnter, argv);

/// sys_enter of exit / exit_group.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExitEnter {
    pub hdr: Header,
    pub syscall: u32,
    pub code: i32,
}

/// A prctl call. Emitted at sys_enter, except PR_SET_NAME: emitted just before its sys_exit,
/// once the kernel has faulted in the page holding the name.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrctlEnter {
    pub hdr: Header,
    pub option: u32,
    /// [`strflag`] bits (NAME_FAULT).
    pub flags: u32,
    pub arg2: u64,
    /// PR_SET_NAME's new name (the kernel keeps 15 bytes + NUL, as this does). Read from user
    /// memory; if that faults after a successful call, the task's comm, which is the new name.
    pub name: [u8; TASK_COMM_LEN],
}

/// What the "sched" probe set (no syscall probes) reports of `signal_struct::is_child_subreaper`:
/// set, the first time the process creates a process or one of its descendants dies; cleared,
/// at its next birth after that. `hdr` is the subreaper (its leader); reported on another
/// process's behalf (at a descendant's death) its uid is unknown (`u32::MAX`) and its cgroup 0.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Subreaper {
    pub hdr: Header,
    /// 1: the flag is set; 0: it was cleared.
    pub on: u32,
    pub _pad: u32,
}

/// sched:sched_process_fork, fired in the creator's context.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchedFork {
    pub hdr: Header,
    pub child_tid: u32,
    /// The child's tgid: the creator's with CLONE_THREAD, else `child_tid`.
    pub child_tgid: u32,
    /// The child's real parent: the creator's real parent with CLONE_PARENT or CLONE_THREAD
    /// (read from task_struct), else the creator's tgid — copy_process()'s rule.
    pub child_ppid: u32,
    /// The syscall that created it (`syscall::UNKNOWN` for kernel-internal creation).
    pub syscall: u32,
    /// Clone flags seen at sys_enter (valid when `flags_known` is 1).
    pub clone_flags: u64,
    pub flags_known: u32,
    /// The child's pid namespace: nesting level (`thread_pid->level`), inode number
    /// (`numbers[level].ns->ns.inum`; 0 when the probe could not read the child task) and
    /// the child's pid there (`numbers[level].nr`; 0 when unknown).
    pub ns_level: u32,
    pub ns_inum: u32,
    pub ns_pid: u32,
}

/// sched:sched_process_exec: a successful exec. `hdr` describes the task after the exec.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchedExec {
    pub hdr: Header,
    /// The tid that called exec (differs from `hdr.tid` when a non-leader thread exec'd).
    pub old_tid: u32,
    /// [`strflag`] bits.
    pub flags: u32,
    /// What the kernel says of the task after the exec (begin_new_exec() has committed the
    /// new credentials and set `mm->exe_file` before the tracepoint fires): `cred->euid` and
    /// `cred->fsuid` (kuids: uids of the initial user namespace), the nesting level of
    /// `cred->user_ns` and of the task's pid namespace (0: the initial ones), and the inode
    /// number of its mount namespace. Valid with [`credflag::CRED`].
    pub euid: u32,
    pub fsuid: u32,
    pub userns_level: u32,
    pub pidns_level: u32,
    pub mnt_ns: u32,
    /// [`credflag`] bits.
    pub cred_flags: u32,
    /// The executable (`mm->exe_file->f_inode`): inode number, device (the kernel's
    /// `sb->s_dev` encoding, MAJOR << 20 | MINOR), owner (kuid), mode and link count (0 for a
    /// memfd or a deleted file). Valid with [`credflag::EXE`].
    pub exe_ino: u64,
    pub exe_dev: u32,
    pub exe_uid: u32,
    pub exe_mode: u32,
    pub exe_nlink: u32,
    pub filename: [u8; FILENAME_LEN],
}

/// Bits of [`SchedExec::cred_flags`].
pub mod credflag {
    /// euid, fsuid, the namespaces' levels and the mount namespace were read.
    pub const CRED: u32 = 1;
    /// The task's mount namespace is the one [`super::ProbeConfig::host_mntns`] names (the
    /// host's, as PID 1 has it).
    pub const HOST_MNT: u32 = 2;
    /// The executable's inode fields were read.
    pub const EXE: u32 = 4;
}

/// sched:sched_process_exit: a task is gone.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchedExit {
    pub hdr: Header,
    /// `task_struct::exit_code`: `(status << 8) | signal`, as wait(2) reports it.
    pub exit_code: u32,
    /// 1 when this was the last live thread of its process.
    pub group_dead: u32,
}

/// cgroup:cgroup_attach_task: task `pid` moved into cgroup `path` of hierarchy `hierarchy`.
/// `hdr` is the task that moved it (runc writing `cgroup.procs`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CgroupAttach {
    pub hdr: Header,
    /// The moved task (its thread id).
    pub pid: u32,
    /// The hierarchy id (`/proc/PID/cgroup`'s first column; 0 for cgroup v2).
    pub hierarchy: u32,
    /// Depth of the destination cgroup.
    pub level: u32,
    /// [`strflag`] bits for `path` (FILENAME_TRUNCATED / FILENAME_FAULT).
    pub flags: u32,
    /// The destination cgroup's id (its kernfs inode on v2).
    pub cgroup_id: u64,
    /// Path of the destination cgroup inside its hierarchy.
    pub path: [u8; CGROUP_PATH_LEN],
}

/// signal:signal_generate (kernel/signal.c __send_signal_locked, and the early returns of
/// send_signal_locked / do_notify_parent that drop a signal). `hdr` is the current task: the
/// sender, or for a signal the kernel raises, the task whose action raised it (the dying child
/// of a SIGCHLD, the dying init of a pid namespace's SIGKILLs).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SignalGenerate {
    pub hdr: Header,
    pub signal: i32,
    /// `si_code`: SI_USER for SEND_SIG_NOINFO, SI_KERNEL for SEND_SIG_PRIV, else the
    /// kernel_siginfo's own.
    pub code: i32,
    /// The target task (`task->pid`) and its process (`task->tgid`), host namespace.
    pub target_tid: u32,
    pub target_tgid: u32,
    /// 1 when sent to the whole thread group (PIDTYPE_TGID and wider), 0 for one thread.
    pub group: u32,
    /// TRACE_SIGNAL_DELIVERED (0) … TRACE_SIGNAL_LOSE_INFO (4).
    pub result: u32,
}

/// oom:mark_victim (mm/oom_kill.c mark_oom_victim, called from __oom_kill_process once the
/// SIGKILL is sent). `hdr` is the current task: the one whose allocation ran out of memory.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OomVictim {
    pub hdr: Header,
    /// The victim thread (`task->pid`, host namespace).
    pub tid: u32,
    /// `signal->oom_score_adj` (0 on a kernel whose tracepoint lacks it).
    pub oom_score_adj: i32,
    /// The victim's memory in KiB, as the tracepoint reports it (0 on a kernel whose
    /// tracepoint carries only the pid).
    pub total_vm: u64,
    pub anon_rss: u64,
    pub file_rss: u64,
    pub shmem_rss: u64,
    /// The victim's memory cgroup, read from the victim task at the tracepoint (the raw
    /// tracepoint hands it over; [`memcgflag::KNOWN`]): its kernfs node id (the cgroup's id,
    /// its directory's inode on v2), its limit in bytes (`mem_cgroup::memory.max`;
    /// [`memcgflag::LIMIT`]), and the names of the cgroup and its ancestors, the cgroup's
    /// own first, up to [`MEMCG_DEPTH`] below the hierarchy's root ([`memcgflag::CUT`] when
    /// deeper).
    pub memcg_id: u64,
    pub memcg_limit: u64,
    pub memcg_flags: u32,
    /// Names in `memcg_path` (the rest are empty).
    pub memcg_depth: u32,
    pub memcg_path: [[u8; MEMCG_NAME_LEN]; MEMCG_DEPTH],
}

/// Cgroup path components an OOM record carries, and bytes kept of each (NUL included).
pub const MEMCG_DEPTH: usize = 8;
pub const MEMCG_NAME_LEN: usize = 128;

/// Bits of [`OomVictim::memcg_flags`].
pub mod memcgflag {
    /// The victim's memory cgroup was read.
    pub const KNOWN: u32 = 1;
    /// Its limit was read (`memcg_limit`).
    pub const LIMIT: u32 = 2;
    /// The path is deeper than the record holds: its top is missing.
    pub const CUT: u32 = 4;
    /// A component's name was cut to `MEMCG_NAME_LEN - 1` bytes.
    pub const NAME_CUT: u32 = 8;
}

/// Load-time configuration, written into the probe's `.rodata` by userspace.
///
/// Offsets of non-syscall tracepoint fields come from tracefs `format` files, task_struct
/// member offsets from the kernel's BTF. [`NO_OFFSET`] means "absent on this kernel".
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProbeConfig {
    /// 1: trace every process; 0: only tgids in the FOLLOWED map (and what they create).
    pub follow_all: u32,
    /// The tracer's own tgid, never traced.
    pub self_tgid: u32,
    pub fork_parent_pid: u32,
    pub fork_child_pid: u32,
    pub exec_filename_loc: u32,
    pub exec_pid: u32,
    pub exec_old_pid: u32,
    pub exit_pid: u32,
    pub exit_group_dead: u32,
    pub task_real_parent: u32,
    pub task_tgid: u32,
    pub task_exit_code: u32,
    pub task_signal: u32,
    pub signal_live: u32,
    /// Wake the reader only once this many bytes are waiting (it also polls on a timer):
    /// one wakeup per event would cost a context switch per event.
    pub wakeup_bytes: u32,
    /// 1 when the syscall tracepoints are not attached ("sched" probe set): then
    /// sched_process_exec also reports argv (from the new mm) as an ExecEnter, and subreapers
    /// are reported from the signal_struct flags.
    pub no_syscall_probes: u32,
    /// task:task_newtask fields (clone flags without a syscall probe).
    pub newtask_flags: u32,
    /// task:task_rename fields (PR_SET_NAME without a syscall probe).
    pub rename_pid: u32,
    pub rename_newcomm: u32,
    /// BTF: `task_struct::mm`, `mm_struct::arg_start` / `arg_end`.
    pub task_mm: u32,
    pub mm_arg_start: u32,
    pub mm_arg_end: u32,
    /// BTF bitfields, as (byte offset << 3) | bit: `task_struct::in_execve`,
    /// `signal_struct::is_child_subreaper`.
    pub task_in_execve_bit: u32,
    pub signal_subreaper_bit: u32,
    /// BTF bitfield `signal_struct::has_child_subreaper` (as above).
    pub signal_has_subreaper_bit: u32,
    /// BTF: `task_struct::comm`, `task_struct::flags` (PF_*).
    pub task_comm: u32,
    pub task_flags: u32,
    /// BTF, for the child task the raw sched_process_fork tracepoint hands over:
    /// `task_struct::pid` and `::thread_pid`, `pid::level` and `::numbers`, the size of
    /// `struct upid` and the offset of `upid::ns`, and `pid_namespace::ns` + `ns_common::inum`.
    pub task_pid: u32,
    pub task_thread_pid: u32,
    pub pid_level: u32,
    pub pid_numbers: u32,
    pub upid_size: u32,
    pub upid_ns: u32,
    pub pidns_inum: u32,
    /// The cgroup hierarchy whose moves are reported ([`NO_OFFSET`]: every one), and the
    /// cgroup:cgroup_attach_task fields.
    pub cgroup_hierarchy: u32,
    pub cgattach_root: u32,
    pub cgattach_level: u32,
    pub cgattach_id: u32,
    pub cgattach_pid: u32,
    pub cgattach_path: u32,
    /// oom:mark_victim fields; the memory ones (`unsigned long`, KiB) and `oom_score_adj`
    /// (`short`) are [`NO_OFFSET`] on kernels whose tracepoint carries only the pid.
    pub oom_pid: u32,
    pub oom_total_vm: u32,
    pub oom_anon_rss: u32,
    pub oom_file_rss: u32,
    pub oom_shmem_rss: u32,
    pub oom_score_adj: u32,
    /// Signals signal_generate reports: bit n − 1 set = signal n (1..=64; signal 64,
    /// SIGRTMAX, would not fit a bit n). 0: none.
    pub signal_mask: u64,
    /// BTF, for the credentials sched_process_exec reports: `task_struct::cred`, `cred::euid`,
    /// `::fsuid`, `::user_ns`, `user_namespace::level`, `task_struct::nsproxy`,
    /// `nsproxy::mnt_ns`, `mnt_namespace::ns` + `ns_common::inum`.
    pub task_cred: u32,
    pub cred_euid: u32,
    pub cred_fsuid: u32,
    pub cred_user_ns: u32,
    pub userns_level: u32,
    pub task_nsproxy: u32,
    pub nsproxy_mnt_ns: u32,
    pub mntns_inum: u32,
    /// BTF, for the executable: `mm_struct::exe_file`, `file::f_inode`, `inode::i_mode`,
    /// `::i_uid`, `::i_ino`, `::i_nlink`, `::i_sb`, `super_block::s_dev`.
    pub mm_exe_file: u32,
    pub file_inode: u32,
    pub inode_mode: u32,
    pub inode_uid: u32,
    pub inode_ino: u32,
    pub inode_nlink: u32,
    pub inode_sb: u32,
    pub sb_dev: u32,
    /// The host's mount namespace (`/proc/1/ns/mnt`'s inode); 0 when unknown.
    pub host_mntns: u32,
    /// BTF, for the OOM victim's memory cgroup at the raw mark_victim tracepoint (whose first
    /// argument is the victim task since 6.2): `task_struct::cgroups`, `css_set::subsys`,
    /// the memory controller's index there (`memory_cgrp_id`), `cgroup_subsys_state::cgroup`,
    /// `cgroup::kn`, `kernfs_node::__parent` (`parent` before 6.15), `::name`, `::id`,
    /// `mem_cgroup::memory` + `page_counter::max`.
    pub task_cgroups: u32,
    pub cssset_subsys: u32,
    pub memory_cgrp_id: u32,
    pub css_cgroup: u32,
    pub cgroup_kn: u32,
    pub kn_parent: u32,
    pub kn_name: u32,
    pub kn_id: u32,
    pub memcg_max: u32,
    /// ... and its memory: `mm_struct::total_vm`, `::rss_stat` (`percpu_counter`s of
    /// MM_FILEPAGES, MM_ANONPAGES, MM_SWAPENTS, MM_SHMEMPAGES), the size of a
    /// `percpu_counter` and its `count`, `signal_struct::oom_score_adj`; the page size in KiB.
    pub mm_total_vm: u32,
    pub mm_rss_stat: u32,
    pub percpu_counter_size: u32,
    pub percpu_counter_count: u32,
    pub signal_oom_score_adj: u32,
    pub page_kb: u32,
    /// BTF: `linux_binprm::filename`, for the exec probe on the typed (tp_btf) tracepoint,
    /// whose third argument is the binprm (the classic one copies the name into its record).
    pub bprm_filename: u32,
    pub _pad: u32,
}

impl ProbeConfig {
    pub const EMPTY: ProbeConfig = ProbeConfig {
        follow_all: 0,
        self_tgid: 0,
        fork_parent_pid: NO_OFFSET,
        fork_child_pid: NO_OFFSET,
        exec_filename_loc: NO_OFFSET,
        exec_pid: NO_OFFSET,
        exec_old_pid: NO_OFFSET,
        exit_pid: NO_OFFSET,
        exit_group_dead: NO_OFFSET,
        task_real_parent: NO_OFFSET,
        task_tgid: NO_OFFSET,
        task_exit_code: NO_OFFSET,
        task_signal: NO_OFFSET,
        signal_live: NO_OFFSET,
        wakeup_bytes: 0,
        no_syscall_probes: 0,
        newtask_flags: NO_OFFSET,
        rename_pid: NO_OFFSET,
        rename_newcomm: NO_OFFSET,
        task_mm: NO_OFFSET,
        mm_arg_start: NO_OFFSET,
        mm_arg_end: NO_OFFSET,
        task_in_execve_bit: NO_OFFSET,
        signal_subreaper_bit: NO_OFFSET,
        signal_has_subreaper_bit: NO_OFFSET,
        task_comm: NO_OFFSET,
        task_flags: NO_OFFSET,
        task_pid: NO_OFFSET,
        task_thread_pid: NO_OFFSET,
        pid_level: NO_OFFSET,
        pid_numbers: NO_OFFSET,
        upid_size: NO_OFFSET,
        upid_ns: NO_OFFSET,
        pidns_inum: NO_OFFSET,
        cgroup_hierarchy: NO_OFFSET,
        cgattach_root: NO_OFFSET,
        cgattach_level: NO_OFFSET,
        cgattach_id: NO_OFFSET,
        cgattach_pid: NO_OFFSET,
        cgattach_path: NO_OFFSET,
        oom_pid: NO_OFFSET,
        oom_total_vm: NO_OFFSET,
        oom_anon_rss: NO_OFFSET,
        oom_file_rss: NO_OFFSET,
        oom_shmem_rss: NO_OFFSET,
        oom_score_adj: NO_OFFSET,
        signal_mask: 0,
        task_cred: NO_OFFSET,
        cred_euid: NO_OFFSET,
        cred_fsuid: NO_OFFSET,
        cred_user_ns: NO_OFFSET,
        userns_level: NO_OFFSET,
        task_nsproxy: NO_OFFSET,
        nsproxy_mnt_ns: NO_OFFSET,
        mntns_inum: NO_OFFSET,
        mm_exe_file: NO_OFFSET,
        file_inode: NO_OFFSET,
        inode_mode: NO_OFFSET,
        inode_uid: NO_OFFSET,
        inode_ino: NO_OFFSET,
        inode_nlink: NO_OFFSET,
        inode_sb: NO_OFFSET,
        sb_dev: NO_OFFSET,
        host_mntns: 0,
        task_cgroups: NO_OFFSET,
        cssset_subsys: NO_OFFSET,
        memory_cgrp_id: NO_OFFSET,
        css_cgroup: NO_OFFSET,
        cgroup_kn: NO_OFFSET,
        kn_parent: NO_OFFSET,
        kn_name: NO_OFFSET,
        kn_id: NO_OFFSET,
        memcg_max: NO_OFFSET,
        mm_total_vm: NO_OFFSET,
        mm_rss_stat: NO_OFFSET,
        percpu_counter_size: NO_OFFSET,
        percpu_counter_count: NO_OFFSET,
        signal_oom_score_adj: NO_OFFSET,
        page_kb: 4,
        bprm_filename: NO_OFFSET,
        _pad: 0,
    };
}

/// Value stored per thread between sys_enter of a clone-family call and sched_process_fork.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PendingClone {
    pub flags: u64,
    pub syscall: u32,
    pub _pad: u32,
}

#[cfg(feature = "user")]
mod pod {
    use super::*;
    // SAFETY: all of these are repr(C), Copy, without padding or pointers.
    unsafe impl aya::Pod for ProbeConfig {}
    unsafe impl aya::Pod for PendingClone {}
    unsafe impl aya::Pod for Header {}
}

// Layout is part of the wire format: fail the build if it changes by accident.
const _: () = {
    assert!(core::mem::size_of::<Header>() == 64);
    assert!(core::mem::size_of::<CloneEnter>() == 80);
    assert!(core::mem::size_of::<SysExit>() == 80);
    assert!(core::mem::size_of::<ExecEnter>() == 88 + FILENAME_LEN + ARGV_BYTES);
    assert!(EXEC_ENTER_HEAD == 88 + FILENAME_LEN);
    assert!(core::mem::size_of::<ExitEnter>() == 72);
    assert!(core::mem::size_of::<PrctlEnter>() == 96);
    assert!(core::mem::size_of::<Subreaper>() == 72);
    assert!(core::mem::size_of::<SchedFork>() == 104);
    assert!(core::mem::size_of::<SchedExec>() == 120 + FILENAME_LEN);
    assert!(core::mem::size_of::<SchedExit>() == 72);
    assert!(core::mem::size_of::<CgroupAttach>() == 88 + CGROUP_PATH_LEN);
    assert!(core::mem::size_of::<SignalGenerate>() == 88);
    assert!(core::mem::size_of::<OomVictim>() == 128 + MEMCG_DEPTH * MEMCG_NAME_LEN);
    assert!(core::mem::size_of::<ProbeConfig>() == 328);
    assert!(core::mem::offset_of!(ProbeConfig, signal_mask) == 184);
    assert!(core::mem::size_of::<PendingClone>() == 16);
};
