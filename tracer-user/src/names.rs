//! Symbolic names for clone flags, prctl options, signals and errnos, as strace prints them;
//! the program names of the container machinery.

use tracer_common::clone_flags as cf;

const CLONE_FLAG_NAMES: &[(u64, &str)] = &[
    (cf::CLONE_VM, "CLONE_VM"),
    (cf::CLONE_FS, "CLONE_FS"),
    (cf::CLONE_FILES, "CLONE_FILES"),
    (cf::CLONE_SIGHAND, "CLONE_SIGHAND"),
    (cf::CLONE_PIDFD, "CLONE_PIDFD"),
    (cf::CLONE_PTRACE, "CLONE_PTRACE"),
    (cf::CLONE_VFORK, "CLONE_VFORK"),
    (cf::CLONE_PARENT, "CLONE_PARENT"),
    (cf::CLONE_THREAD, "CLONE_THREAD"),
    (cf::CLONE_NEWNS, "CLONE_NEWNS"),
    (cf::CLONE_SYSVSEM, "CLONE_SYSVSEM"),
    (cf::CLONE_SETTLS, "CLONE_SETTLS"),
    (cf::CLONE_PARENT_SETTID, "CLONE_PARENT_SETTID"),
    (cf::CLONE_CHILD_CLEARTID, "CLONE_CHILD_CLEARTID"),
    (cf::CLONE_DETACHED, "CLONE_DETACHED"),
    (cf::CLONE_UNTRACED, "CLONE_UNTRACED"),
    (cf::CLONE_CHILD_SETTID, "CLONE_CHILD_SETTID"),
    (cf::CLONE_NEWCGROUP, "CLONE_NEWCGROUP"),
    (cf::CLONE_NEWUTS, "CLONE_NEWUTS"),
    (cf::CLONE_NEWIPC, "CLONE_NEWIPC"),
    (cf::CLONE_NEWUSER, "CLONE_NEWUSER"),
    (cf::CLONE_NEWPID, "CLONE_NEWPID"),
    (cf::CLONE_NEWNET, "CLONE_NEWNET"),
    (cf::CLONE_IO, "CLONE_IO"),
    (cf::CLONE_CLEAR_SIGHAND, "CLONE_CLEAR_SIGHAND"),
    (cf::CLONE_INTO_CGROUP, "CLONE_INTO_CGROUP"),
    (cf::CLONE_NEWTIME, "CLONE_NEWTIME"),
];

/// `CLONE_VM|CLONE_VFORK`, unknown bits as hex, `0` when empty. The exit signal is not included.
pub fn clone_flags(flags: u64) -> String {
    let mut out = String::new();
    let mut rest = flags & !cf::CSIGNAL;
    for &(bit, name) in CLONE_FLAG_NAMES {
        if rest & bit != 0 {
            if !out.is_empty() {
                out.push('|');
            }
            out.push_str(name);
            rest &= !bit;
        }
    }
    if rest != 0 {
        if !out.is_empty() {
            out.push('|');
        }
        out.push_str(&format!("{rest:#x}"));
    }
    if out.is_empty() {
        out.push('0');
    }
    out
}

/// Clone flags plus the exit signal, as strace prints `flags=`: `CLONE_PARENT|SIGCHLD`.
pub fn clone_flags_with_signal(flags: u64, exit_signal: u32) -> String {
    let base = flags & !cf::CSIGNAL;
    if exit_signal == 0 {
        return clone_flags(base);
    }
    let sig = signal(exit_signal as i32);
    if base == 0 {
        sig
    } else {
        format!("{}|{}", clone_flags(base), sig)
    }
}

/// Parses `CLONE_VM|CLONE_VFORK|SIGCHLD` (strace syntax, hex numbers allowed) into
/// `(flags, exit_signal)`. Unknown names yield `None`.
pub fn parse_clone_flags(text: &str) -> Option<(u64, u32)> {
    let mut flags = 0u64;
    let mut sig = 0u32;
    for part in text.split('|').map(str::trim).filter(|p| !p.is_empty()) {
        if let Some(&(bit, _)) = CLONE_FLAG_NAMES.iter().find(|(_, n)| *n == part) {
            flags |= bit;
        } else if let Some(n) = signal_number(part) {
            sig = n as u32;
        } else if let Some(hex) = part.strip_prefix("0x") {
            let v = u64::from_str_radix(hex, 16).ok()?;
            flags |= v & !cf::CSIGNAL;
            if v & cf::CSIGNAL != 0 {
                sig = (v & cf::CSIGNAL) as u32;
            }
        } else if let Ok(v) = part.parse::<u64>() {
            flags |= v & !cf::CSIGNAL;
            if v & cf::CSIGNAL != 0 {
                sig = (v & cf::CSIGNAL) as u32;
            }
        } else {
            return None;
        }
    }
    Some((flags, sig))
}

const PRCTL_NAMES: &[(u32, &str)] = &[
    (1, "PR_SET_PDEATHSIG"),
    (2, "PR_GET_PDEATHSIG"),
    (3, "PR_GET_DUMPABLE"),
    (4, "PR_SET_DUMPABLE"),
    (8, "PR_SET_KEEPCAPS"),
    (15, "PR_SET_NAME"),
    (16, "PR_GET_NAME"),
    (22, "PR_SET_SECCOMP"),
    (23, "PR_CAPBSET_READ"),
    (24, "PR_CAPBSET_DROP"),
    (35, "PR_SET_MM"),
    (36, "PR_SET_CHILD_SUBREAPER"),
    (37, "PR_GET_CHILD_SUBREAPER"),
    (38, "PR_SET_NO_NEW_PRIVS"),
    (39, "PR_GET_NO_NEW_PRIVS"),
    (47, "PR_CAP_AMBIENT"),
    (7, "PR_GET_KEEPCAPS"),
    (21, "PR_GET_SECCOMP"),
    (27, "PR_GET_SECUREBITS"),
    (28, "PR_SET_SECUREBITS"),
    (29, "PR_SET_TIMERSLACK"),
    (30, "PR_GET_TIMERSLACK"),
    (33, "PR_MCE_KILL"),
    (40, "PR_GET_TID_ADDRESS"),
    (41, "PR_SET_THP_DISABLE"),
    (42, "PR_GET_THP_DISABLE"),
    (45, "PR_SET_FP_MODE"),
    (46, "PR_GET_FP_MODE"),
    (52, "PR_GET_SPECULATION_CTRL"),
    (53, "PR_SET_SPECULATION_CTRL"),
    (57, "PR_SET_IO_FLUSHER"),
    (62, "PR_SCHED_CORE"),
    (0x5356_4d41, "PR_SET_VMA"),
    (0x5961_6d61, "PR_SET_PTRACER"),
];

/// `PR_SET_NAME`, or the number for options without a name here.
pub fn prctl_option(option: u32) -> String {
    PRCTL_NAMES
        .iter()
        .find(|(n, _)| *n == option)
        .map(|(_, s)| (*s).to_string())
        .unwrap_or_else(|| option.to_string())
}

/// `PR_SET_NAME` or a decimal number → the option number.
pub fn parse_prctl_option(text: &str) -> Option<u32> {
    PRCTL_NAMES
        .iter()
        .find(|(_, s)| *s == text)
        .map(|(n, _)| *n)
        .or_else(|| parse_int(text).and_then(|v| u32::try_from(v).ok()))
}

const SIGNALS: &[&str] = &[
    "",
    "SIGHUP",
    "SIGINT",
    "SIGQUIT",
    "SIGILL",
    "SIGTRAP",
    "SIGABRT",
    "SIGBUS",
    "SIGFPE",
    "SIGKILL",
    "SIGUSR1",
    "SIGSEGV",
    "SIGUSR2",
    "SIGPIPE",
    "SIGALRM",
    "SIGTERM",
    "SIGSTKFLT",
    "SIGCHLD",
    "SIGCONT",
    "SIGSTOP",
    "SIGTSTP",
    "SIGTTIN",
    "SIGTTOU",
    "SIGURG",
    "SIGXCPU",
    "SIGXFSZ",
    "SIGVTALRM",
    "SIGPROF",
    "SIGWINCH",
    "SIGIO",
    "SIGPWR",
    "SIGSYS",
];

/// `SIGKILL`, `SIGRT_3`, or the number.
pub fn signal(sig: i32) -> String {
    match sig {
        1..=31 => SIGNALS[sig as usize].to_string(),
        32..=64 => format!("SIGRT_{}", sig - 32),
        _ => sig.to_string(),
    }
}

/// `SIGKILL` → 9; also accepts `SIGRT_n`, `SIGRTMIN`, `SIGIOT`, `SIGPOLL`, `SIGCLD`.
pub fn signal_number(name: &str) -> Option<i32> {
    if let Some(i) = SIGNALS.iter().position(|s| !s.is_empty() && *s == name) {
        return Some(i as i32);
    }
    match name {
        "SIGIOT" => Some(6),
        "SIGPOLL" => Some(29),
        "SIGCLD" => Some(17),
        "SIGRTMIN" => Some(32),
        _ => name
            .strip_prefix("SIGRT_")
            .and_then(|n| n.parse::<i32>().ok())
            .map(|n| n + 32),
    }
}

/// `si_code` values every signal can carry (include/uapi/asm-generic/siginfo.h).
pub mod si_code {
    /// kill(2), sigsend, raise.
    pub const SI_USER: i32 = 0;
    /// Sent by the kernel (SEND_SIG_PRIV: OOM killer, zap_pid_ns_processes, ...).
    pub const SI_KERNEL: i32 = 0x80;
    /// sigqueue(3).
    pub const SI_QUEUE: i32 = -1;
    /// tkill(2) / tgkill(2).
    pub const SI_TKILL: i32 = -6;
    /// SIGCHLD: the child exited.
    pub const CLD_EXITED: i32 = 1;
    /// SIGCHLD: the child was killed.
    pub const CLD_KILLED: i32 = 2;
    /// SIGCHLD: the child was killed and dumped core.
    pub const CLD_DUMPED: i32 = 3;
    /// SIGCHLD: the child continued (the last of the CLD_* codes).
    pub const CLD_CONTINUED: i32 = 6;
}

const SI_CODES: &[(i32, &str)] = &[
    (0, "SI_USER"),
    (0x80, "SI_KERNEL"),
    (-1, "SI_QUEUE"),
    (-2, "SI_TIMER"),
    (-3, "SI_MESGQ"),
    (-4, "SI_ASYNCIO"),
    (-5, "SI_SIGIO"),
    (-6, "SI_TKILL"),
    (-7, "SI_DETHREAD"),
    (-60, "SI_ASYNCNL"),
];

/// The `si_code` names of one signal (include/uapi/asm-generic/siginfo.h): codes between 0 and
/// `SI_KERNEL` mean something different for each signal that the kernel raises itself (faults,
/// child state, I/O readiness, seccomp), as strace's tables name them on x86-64.
const SIGNAL_CODES: &[(i32, i32, &str)] = &[
    (4, 1, "ILL_ILLOPC"),
    (4, 2, "ILL_ILLOPN"),
    (4, 3, "ILL_ILLADR"),
    (4, 4, "ILL_ILLTRP"),
    (4, 5, "ILL_PRVOPC"),
    (4, 6, "ILL_PRVREG"),
    (4, 7, "ILL_COPROC"),
    (4, 8, "ILL_BADSTK"),
    (4, 9, "ILL_BADIADDR"),
    (5, 1, "TRAP_BRKPT"),
    (5, 2, "TRAP_TRACE"),
    (5, 3, "TRAP_BRANCH"),
    (5, 4, "TRAP_HWBKPT"),
    (5, 5, "TRAP_UNK"),
    (5, 6, "TRAP_PERF"),
    (7, 1, "BUS_ADRALN"),
    (7, 2, "BUS_ADRERR"),
    (7, 3, "BUS_OBJERR"),
    (7, 4, "BUS_MCEERR_AR"),
    (7, 5, "BUS_MCEERR_AO"),
    (8, 1, "FPE_INTDIV"),
    (8, 2, "FPE_INTOVF"),
    (8, 3, "FPE_FLTDIV"),
    (8, 4, "FPE_FLTOVF"),
    (8, 5, "FPE_FLTUND"),
    (8, 6, "FPE_FLTRES"),
    (8, 7, "FPE_FLTINV"),
    (8, 8, "FPE_FLTSUB"),
    (8, 14, "FPE_FLTUNK"),
    (8, 15, "FPE_CONDTRAP"),
    (11, 1, "SEGV_MAPERR"),
    (11, 2, "SEGV_ACCERR"),
    (11, 3, "SEGV_BNDERR"),
    (11, 4, "SEGV_PKUERR"),
    (11, 5, "SEGV_ACCADI"),
    (11, 6, "SEGV_ADIDERR"),
    (11, 7, "SEGV_ADIPERR"),
    (11, 8, "SEGV_MTEAERR"),
    (11, 9, "SEGV_MTESERR"),
    (11, 10, "SEGV_CPERR"),
    (17, 1, "CLD_EXITED"),
    (17, 2, "CLD_KILLED"),
    (17, 3, "CLD_DUMPED"),
    (17, 4, "CLD_TRAPPED"),
    (17, 5, "CLD_STOPPED"),
    (17, 6, "CLD_CONTINUED"),
    (29, 1, "POLL_IN"),
    (29, 2, "POLL_OUT"),
    (29, 3, "POLL_MSG"),
    (29, 4, "POLL_ERR"),
    (29, 5, "POLL_PRI"),
    (29, 6, "POLL_HUP"),
    (31, 1, "SYS_SECCOMP"),
    (31, 2, "SYS_USER_DISPATCH"),
];

/// `si_code` of signal `sig` by name, as strace prints it (`SI_USER`, `CLD_EXITED`,
/// `SEGV_MAPERR`); the number when it has none here.
pub fn si_code(sig: i32, code: i32) -> String {
    let per_signal = SIGNAL_CODES
        .iter()
        .find(|(s, c, _)| *s == sig && *c == code)
        .map(|(_, _, name)| *name);
    match per_signal.or_else(|| SI_CODES.iter().find(|(c, _)| *c == code).map(|(_, n)| *n)) {
        Some(name) => name.to_string(),
        None => code.to_string(),
    }
}

/// `SI_USER` → 0, `CLD_EXITED` → 1, `SEGV_ACCERR` → 2, a number as itself. strace prints a code
/// it has no name for as the unsigned int in hex (`0xfffffff7` for -9): that is read back
/// as the negative code it is.
pub fn si_code_number(name: &str) -> Option<i32> {
    if let Some((_, c, _)) = SIGNAL_CODES.iter().find(|(_, _, n)| *n == name) {
        return Some(*c);
    }
    if let Some((c, _)) = SI_CODES.iter().find(|(_, n)| *n == name) {
        return Some(*c);
    }
    let v = parse_int(name)?;
    i32::try_from(v).ok().or_else(|| {
        // an int printed as unsigned: only hex, only 32 bits
        let hex = name.trim().starts_with("0x");
        u32::try_from(v).ok().filter(|_| hex).map(|u| u as i32)
    })
}

const ERRNOS: &[(i64, &str)] = &[
    (1, "EPERM"),
    (2, "ENOENT"),
    (3, "ESRCH"),
    (4, "EINTR"),
    (5, "EIO"),
    (7, "E2BIG"),
    (8, "ENOEXEC"),
    (9, "EBADF"),
    (10, "ECHILD"),
    (11, "EAGAIN"),
    (12, "ENOMEM"),
    (13, "EACCES"),
    (14, "EFAULT"),
    (16, "EBUSY"),
    (17, "EEXIST"),
    (20, "ENOTDIR"),
    (21, "EISDIR"),
    (22, "EINVAL"),
    (24, "EMFILE"),
    (26, "ETXTBSY"),
    (28, "ENOSPC"),
    (36, "ENAMETOOLONG"),
    (38, "ENOSYS"),
    (40, "ELOOP"),
    (95, "EOPNOTSUPP"),
    (6, "ENXIO"),
    (15, "ENOTBLK"),
    (18, "EXDEV"),
    (19, "ENODEV"),
    (23, "ENFILE"),
    (25, "ENOTTY"),
    (27, "EFBIG"),
    (29, "ESPIPE"),
    (30, "EROFS"),
    (31, "EMLINK"),
    (32, "EPIPE"),
    (33, "EDOM"),
    (34, "ERANGE"),
    (35, "EDEADLK"),
    (39, "ENOTEMPTY"),
    (61, "ENODATA"),
    (62, "ETIME"),
    (75, "EOVERFLOW"),
    (110, "ETIMEDOUT"),
    (125, "ECANCELED"),
    // kernel-internal restart codes strace shows as `= ? ERESTARTNOINTR (To be restarted)`
    (512, "ERESTARTSYS"),
    (513, "ERESTARTNOINTR"),
    (514, "ERESTARTNOHAND"),
    (516, "ERESTART_RESTARTBLOCK"),
];

/// `ENOENT` for 2, the number otherwise.
pub fn errno(e: i64) -> String {
    ERRNOS
        .iter()
        .find(|(n, _)| *n == e)
        .map(|(_, s)| (*s).to_string())
        .unwrap_or_else(|| e.to_string())
}

/// `ENOENT` → 2; `None` for unknown names.
pub fn errno_number(name: &str) -> Option<i64> {
    ERRNOS.iter().find(|(_, s)| *s == name).map(|(n, _)| *n)
}

/// Decimal or 0x-hex integer.
pub fn parse_int(text: &str) -> Option<i64> {
    let t = text.trim();
    let (neg, t) = match t.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, t),
    };
    let v = if let Some(hex) = t.strip_prefix("0x") {
        i64::from_str_radix(hex, 16).ok()?
    } else {
        t.parse::<i64>().ok()?
    };
    Some(if neg { -v } else { v })
}

/// execveat()'s `AT_*` flags and their names.
const AT_FLAGS: &[(u32, &str)] = &[
    (0x100, "AT_SYMLINK_NOFOLLOW"),
    (0x400, "AT_SYMLINK_FOLLOW"),
    (0x800, "AT_NO_AUTOMOUNT"),
    (0x1000, "AT_EMPTY_PATH"),
];

/// `AT_EMPTY_PATH|AT_SYMLINK_NOFOLLOW` as strace writes them; bits without a name in hex
/// after the names; `0` for none.
pub fn at_flags(v: u32) -> String {
    let mut parts: Vec<String> = AT_FLAGS
        .iter()
        .filter(|(bit, _)| v & bit != 0)
        .map(|(_, n)| (*n).to_string())
        .collect();
    let rest = AT_FLAGS.iter().fold(v, |r, (bit, _)| r & !bit);
    if rest != 0 || parts.is_empty() {
        parts.push(if rest == 0 {
            "0".into()
        } else {
            format!("{rest:#x}")
        });
    }
    parts.join("|")
}

/// One `AT_*` name (or a number) → its bits.
pub fn parse_at_flag(text: &str) -> Option<u32> {
    let t = text.trim();
    AT_FLAGS
        .iter()
        .find(|(_, n)| *n == t)
        .map(|(b, _)| *b)
        .or_else(|| parse_int(t).and_then(|n| u32::try_from(n).ok()))
}

/// Container runtime daemons, by program name (also their kernel comm).
pub const RUNTIME_DAEMONS: &[&str] = &["containerd", "crio", "dockerd"];

/// OCI runtimes, by program name.
pub const OCI_RUNTIMES: &[&str] = &["runc", "crun"];

/// Whether `name` (a comm or a program's basename) is a container shim: `containerd-shim*`
/// (the kernel's 15-byte comm of `containerd-shim-runc-v2` included) or conmon.
pub fn is_shim(name: &str) -> bool {
    name.starts_with("containerd-shim") || name == "conmon"
}

/// Whether `name` (a comm or a program's basename) is part of the container machinery a node
/// runs: a runtime daemon, a shim, an OCI runtime, or kubelet. A scoped /proc snapshot keeps
/// these whatever is followed (the runtime that made what the recording shows).
pub fn is_runtime_machinery(name: &str) -> bool {
    RUNTIME_DAEMONS.contains(&name)
        || OCI_RUNTIMES.contains(&name)
        || is_shim(name)
        || name == "kubelet"
}

/// Init systems and container inits, by program name (also their kernel comm): what a trainee
/// expects to find as PID 1.
pub const INIT_SYSTEMS: &[&str] = &[
    "systemd",
    "init",
    "tini",
    "docker-init",
    "dumb-init",
    "catatonit",
    "s6-svscan",
    "runit",
    "runit-init",
    "openrc-init",
    "busybox",
    "upstart",
];

/// What a trainee is told of the host's PID 1 when it is no init system (a VM's agent such
/// as `process_api`): a label for teaching, from its name, never a decision of authority (a
/// name proves nothing). `None` for a known init system (or no name). Raw, as story texts
/// are: escaped where it is written out.
pub fn machine_init_words(name: &str) -> Option<String> {
    let name = name.trim();
    if name.is_empty() || name == "?" || INIT_SYSTEMS.contains(&name) {
        return None;
    }
    Some(format!("the recording machine's init ({name})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clone_flags_render_like_strace() {
        assert_eq!(
            clone_flags_with_signal(cf::CLONE_PARENT, 17),
            "CLONE_PARENT|SIGCHLD"
        );
        assert_eq!(clone_flags_with_signal(0, 17), "SIGCHLD");
        assert_eq!(
            clone_flags(cf::CLONE_VM | cf::CLONE_VFORK),
            "CLONE_VM|CLONE_VFORK"
        );
        assert_eq!(clone_flags(0), "0");
        assert_eq!(clone_flags(1 << 40), "0x10000000000");
    }

    #[test]
    fn clone_flags_parse_back() {
        assert_eq!(
            parse_clone_flags("CLONE_VM|CLONE_VFORK|SIGCHLD"),
            Some((cf::CLONE_VM | cf::CLONE_VFORK, 17))
        );
        assert_eq!(parse_clone_flags("CLONE_BOGUS"), None);
        assert_eq!(parse_clone_flags("0x11"), Some((0, 17)));
    }

    #[test]
    fn signals_and_options() {
        assert_eq!(signal(9), "SIGKILL");
        assert_eq!(signal(34), "SIGRT_2");
        assert_eq!(signal_number("SIGTERM"), Some(15));
        assert_eq!(signal_number("SIGRT_2"), Some(34));
        assert_eq!(prctl_option(36), "PR_SET_CHILD_SUBREAPER");
        assert_eq!(prctl_option(999), "999");
        assert_eq!(parse_prctl_option("PR_SET_NAME"), Some(15));
        assert_eq!(errno(2), "ENOENT");
        assert_eq!(si_code(17, 1), "CLD_EXITED");
        assert_eq!(si_code(15, 1), "1");
        assert_eq!(si_code(9, 0x80), "SI_KERNEL");
        assert_eq!(si_code_number("CLD_KILLED"), Some(2));
        assert_eq!(si_code_number("SI_TKILL"), Some(-6));
        assert_eq!(si_code_number("-7"), Some(-7));
        assert_eq!(si_code(11, 1), "SEGV_MAPERR");
        assert_eq!(si_code_number("SEGV_MAPERR"), Some(1));
        assert_eq!(si_code_number("0xfffffffa"), Some(-6));
        assert_eq!(si_code_number("0x1ffffffff"), None);
        assert_eq!(si_code_number("4294967290"), None);
        assert_eq!(parse_int("0x10"), Some(16));
        assert_eq!(parse_int("-2"), Some(-2));
    }

    #[test]
    fn every_si_code_name_round_trips() {
        let generic = SI_CODES.iter().map(|&(c, _)| (9, c));
        let per_signal = SIGNAL_CODES.iter().map(|&(s, c, _)| (s, c));
        for (sig, code) in generic.chain(per_signal) {
            let name = si_code(sig, code);
            assert!(name.starts_with(|c: char| c.is_ascii_uppercase()), "{name}");
            assert_eq!(si_code_number(&name), Some(code), "{name}");
        }
        // a code without a name is its number, and reads back as itself
        assert_eq!(si_code(11, 42), "42");
        assert_eq!(si_code_number(&si_code(11, -9)), Some(-9));
    }

    #[test]
    fn runtime_machinery_by_name() {
        for n in [
            "containerd",
            "containerd-shim",
            "containerd-shim-runc-v2",
            "conmon",
            "runc",
            "crun",
            "crio",
            "dockerd",
            "kubelet",
        ] {
            assert!(is_runtime_machinery(n), "{n}");
        }
        for n in ["", "sh", "sleep", "containerd2", "runc-helper", "kube"] {
            assert!(!is_runtime_machinery(n), "{n}");
        }
    }
}

/// A size in binary units as people read a memory limit: `32 MiB`, `1.5 GiB`, `100 B`.
pub fn size(bytes: u64) -> String {
    let opts = humansize::FormatSizeOptions::from(humansize::BINARY)
        .decimal_places(1)
        .decimal_zeroes(0);
    humansize::format_size(bytes, opts)
}

#[cfg(test)]
mod size_tests {
    #[test]
    fn sizes_read_in_binary_units() {
        assert_eq!(super::size(33_554_432), "32 MiB");
        assert_eq!(super::size(1536), "1.5 KiB");
        assert_eq!(super::size(100), "100 B");
        assert_eq!(super::size(u64::MAX), "16 EiB");
    }
}
