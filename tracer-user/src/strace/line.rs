//! Pure, allocation-free parsing of one strace output line into its parts. No state: what the
//! parts mean for the process tree is decided in [`super::Parser`].

use super::args::{find_close, leading_int, parse_signal, split_top};
use crate::event::Syscall;

/// A timestamp as printed before the syscall.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stamp {
    /// `-ttt`: seconds since the epoch, in ns.
    Epoch(u64),
    /// `-t` / `-tt`: time of day, ns since midnight.
    TimeOfDay(u64),
    /// `-r`: time since the previous line, in ns.
    Relative(u64),
}

/// How a syscall line ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum End {
    /// ` <unfinished ...>`: the rest comes in a `<... name resumed>` line.
    Unfinished,
    /// ` <pid changed to N ...>`: a non-leader exec; it resumes as pid N.
    PidChanged(u32),
    /// `= value` (errors as `-errno`); `None` for `= ?`.
    Returned(Option<i64>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Body<'a> {
    Blank,
    /// `name(args...`: `args` is the text between the parentheses (up to the marker when
    /// unfinished). `syscall` is `None` for syscalls the importer does not follow.
    Call {
        syscall: Option<Syscall>,
        args: &'a str,
        end: End,
    },
    /// `<... name resumed>rest`: `args` the arguments printed at the call's exit (strace
    /// before 5.3 printed all of clone's there: `<... clone resumed> child_stack=..., flags=...)`).
    Resumed {
        syscall: Option<Syscall>,
        args: &'a str,
        end: End,
    },
    /// `+++ exited with N +++`.
    Exited(i32),
    /// `+++ killed by SIG +++`, with `(core dumped)`.
    Killed {
        signal: u32,
        core: bool,
    },
    /// `+++ superseded by execve in pid OLD +++` (`OLD` absent in old strace versions).
    Superseded(Option<u32>),
    /// `--- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED, si_pid=7, ...} ---`: the task stopped
    /// to receive a signal (a `--- stopped by SIGSTOP ---` group stop is a [`Body::Notice`]).
    Signal(SigLine),
    /// `+++ thread exited with N +++` / `+++ thread killed by SIG +++` (ours: a thread's end,
    /// the leader's too while other threads live): the wait status.
    ThreadEnd(u32),
    /// Ours: `Process C attached (parent P) by [pid X] clone(FLAGS)` and `Thread C attached
    /// (process P) by [pid X]`: a task's birth with its creator, parent and flags.
    Born(Born),
    /// Ours: `--- cgroup: ... ---`, `--- OOM killer: victim ... ---`, `--- bundle of ... ---`
    /// (the text between the dashes).
    Ours(&'a str),
    /// `strace: Process N attached [with M threads]`.
    Attached {
        pid: u32,
        threads: Option<u32>,
    },
    /// `strace: Process N detached`, ` <detached ...>`, other `strace: ` messages.
    Notice,
    /// `unshare(CLONE_NEWPID|...) = 0`, a whole line that succeeded: the flags (the caller's
    /// next children go to a new pid namespace with CLONE_NEWPID).
    Unshare(u64),
}

/// A birth line of ours (`tracer trace` prints them; strace never does).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Born {
    pub child: u32,
    /// The child's process: itself, or for a thread the process it joined.
    pub tgid: u32,
    /// The parent copy_process gave a new process (0: unknown); none for a thread.
    pub parent: Option<u32>,
    /// The task that called clone.
    pub by: Option<u32>,
    /// `clone3(...)` etc. after the creator, when no clone line follows (sched probes).
    pub syscall: Option<Syscall>,
    pub flags: Option<u64>,
}

/// A signal the receiver stopped for, as strace prints its siginfo.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SigLine {
    pub signal: u32,
    /// `si_code`: who raised it (`SI_USER` kill, `SI_TKILL` tgkill, `SI_KERNEL`, `CLD_*`...).
    pub code: i32,
    /// `si_pid`: the sender's process as a pid of the *receiver's* pid namespace (the kernel
    /// writes it so: task_tgid_nr_ns() / task_pid_nr_ns(tsk, parent's ns)); 0 when the sender is
    /// outside that namespace. `None` when strace printed none (faults, SI_KERNEL, timers) or a
    /// negative one (sigqueueinfo's caller may write anything there).
    pub si_pid: Option<u32>,
    /// strace's own translation of `si_pid`, `/* N in strace's PID NS */`
    /// (`--decode-pids=pidns`): the sender as the log names pids.
    pub strace_pid: Option<u32>,
    /// What the kernel did with it: strace's lines are all delivered; ours say `(ignored)`,
    /// `(already pending)`... after the siginfo when it was not.
    pub result: crate::event::SignalResult,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Line<'a> {
    pub pid: Option<u32>,
    /// The pid came in the `123   ` column of `-o FILE -f` (strace writes attach notices to
    /// stderr then, never into the file).
    pub column: bool,
    pub stamp: Option<Stamp>,
    /// A second stamp (`-r` printed after an absolute one).
    pub stamp2: Option<Stamp>,
    pub body: Body<'a>,
}

const NOTICE: &str = "strace: Process ";

/// Where an attach notice spliced into the line starts, when the notice runs to the end of
/// the line (so a notice quoted inside a string argument, which strace escapes, never counts).
pub(crate) fn find_spliced_notice(line: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(rel) = line.get(from..)?.find(NOTICE) {
        let at = from + rel;
        if at > 0 && parse_notice(line.get(at..)?).is_some() {
            return Some(at);
        }
        from = at + NOTICE.len();
    }
    None
}

/// `strace: Process N attached`, `... attached with M threads`, `... detached`.
fn parse_notice(s: &str) -> Option<Body<'static>> {
    let rest = s.strip_prefix(NOTICE)?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let pid: u32 = rest.get(..digits)?.parse().ok()?;
    let rest = rest.get(digits..)?.trim_end();
    if rest == " attached" {
        return Some(Body::Attached { pid, threads: None });
    }
    if let Some(n) = rest
        .strip_prefix(" attached with ")
        .and_then(|r| r.strip_suffix(" threads"))
    {
        return Some(Body::Attached {
            pid,
            threads: Some(n.trim().parse().ok()?),
        });
    }
    if rest == " detached" || rest == " suspended" {
        return Some(Body::Notice);
    }
    None
}

/// Parses one line (without its newline). `None`: not a form strace writes.
pub(crate) fn parse_line(raw: &str) -> Option<Line<'_>> {
    let s = raw.strip_suffix('\r').unwrap_or(raw);
    let mut line = Line {
        pid: None,
        column: false,
        stamp: None,
        stamp2: None,
        body: Body::Blank,
    };
    let mut s = s.trim_start_matches(' ');
    if s.trim().is_empty() {
        return Some(line);
    }
    // `#SEQ ` (ours, `--seq`)
    if let Some(rest) = s.strip_prefix('#') {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && rest.as_bytes().get(digits) == Some(&b' ') {
            s = rest.get(digits..)?.trim_start_matches(' ');
        }
    }
    if s.starts_with("strace: ") {
        line.body = parse_notice(s).unwrap_or(Body::Notice);
        return Some(line);
    }
    // pid prefix: "[pid  123] " (stderr) or "123   " (-o FILE with -f), maybe "<comm>" (-Y).
    if let Some(rest) = s.strip_prefix("[pid") {
        let rest = rest.trim_start_matches(' ');
        let (pid, rest) = take_pid(rest, ">]")?;
        // ours: ` k8s=NS/POD/CONTAINER` (`]` inside is escaped)
        let rest = match rest.strip_prefix(" k8s=") {
            Some(k) => k.get(k.find(']')?..)?,
            None => rest,
        };
        let rest = rest.strip_prefix(']')?;
        line.pid = Some(pid);
        s = rest.trim_start_matches(' ');
    } else if s.as_bytes().first().is_some_and(u8::is_ascii_digit) {
        let digits = s.bytes().take_while(u8::is_ascii_digit).count();
        let after = s.as_bytes().get(digits).copied();
        if matches!(after, Some(b' ') | Some(b'<')) {
            let (pid, rest) = take_pid(s, "> ")?;
            if !rest.starts_with(' ') {
                return None;
            }
            line.pid = Some(pid);
            line.column = true;
            s = rest.trim_start_matches(' ');
        }
    }
    // up to two timestamps; ours print `??:??:??`-like blanks where the recording has no time
    for slot in 0..2 {
        if let Some(end) = s.find(' ').filter(|&e| e > 0 && is_blank_stamp(&s[..e])) {
            s = s.get(end..)?.trim_start_matches(' ');
            continue;
        }
        if !s.as_bytes().first().is_some_and(u8::is_ascii_digit) {
            break;
        }
        let end = s.find(' ')?;
        let stamp = parse_stamp(s.get(..end)?)?;
        if slot == 0 {
            line.stamp = Some(stamp);
        } else {
            line.stamp2 = Some(stamp);
        }
        s = s.get(end..)?.trim_start_matches(' ');
    }
    // -i: the instruction pointer, "[00007f3c9a8e1b2d] "
    if let Some(rest) = s.strip_prefix('[') {
        let hex = rest.bytes().take_while(u8::is_ascii_hexdigit).count();
        if hex > 0 && rest.as_bytes().get(hex) == Some(&b']') {
            s = rest.get(hex + 1..)?.trim_start_matches(' ');
        }
    }
    line.body = parse_body(s)?;
    Some(line)
}

/// `??:??:??`, `??:??:??.??????`, `??????????.??????`, `?.??????`: a stamp of ours with no
/// time behind it.
fn is_blank_stamp(tok: &str) -> bool {
    tok.contains('?') && tok.bytes().all(|b| matches!(b, b'?' | b':' | b'.'))
}

fn take_pid<'a>(s: &'a str, comm_end: &str) -> Option<(u32, &'a str)> {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    let pid: u32 = s.get(..digits)?.parse().ok()?;
    let mut rest = s.get(digits..)?;
    if rest.starts_with('<') {
        // -Y / --decode-pids=comm: "123<comm>" (the comm itself may contain '>'); ours may
        // be followed by ` k8s=...` (and escape the '>' of a comm)
        let end = rest.find(comm_end).or_else(|| rest.find("> k8s="))?;
        rest = rest.get(end + 1..)?;
    }
    Some((pid, rest))
}

pub(crate) fn parse_stamp(tok: &str) -> Option<Stamp> {
    let (int, frac) = match tok.split_once('.') {
        Some((i, f)) => (i, f),
        None => (tok, ""),
    };
    if !frac.bytes().all(|b| b.is_ascii_digit()) || frac.len() > 9 {
        return None;
    }
    let mut frac_ns: u64 = 0;
    if !frac.is_empty() {
        frac_ns = frac.parse().ok()?;
        frac_ns *= 10u64.pow(9 - frac.len() as u32);
    }
    if int.contains(':') {
        let mut parts = int.split(':');
        let h: u64 = parts.next()?.parse().ok()?;
        let m: u64 = parts.next()?.parse().ok()?;
        let sec: u64 = parts.next()?.parse().ok()?;
        if parts.next().is_some() || h > 23 || m > 59 || sec > 60 {
            return None;
        }
        return Some(Stamp::TimeOfDay(
            (h * 3600 + m * 60 + sec) * 1_000_000_000 + frac_ns,
        ));
    }
    if frac.is_empty() {
        return None;
    }
    let secs: u64 = int.parse().ok()?;
    let ns = secs.checked_mul(1_000_000_000)?.checked_add(frac_ns)?;
    // -r gaps are small; -ttt values are seconds since 1970. A million seconds (11.5 days)
    // separates them safely.
    Some(if secs >= 1_000_000 {
        Stamp::Epoch(ns)
    } else {
        Stamp::Relative(ns)
    })
}

fn parse_body(s: &str) -> Option<Body<'_>> {
    let s = strip_duration(s.trim_end());
    if let Some(r) = s.strip_prefix("+++ ") {
        return task_end(r.strip_suffix(" +++")?);
    }
    if let Some(inner) = s.strip_prefix("--- ").and_then(|r| r.strip_suffix(" ---")) {
        return signal_body(inner);
    }
    if let Some(b) = born(s) {
        return Some(Body::Born(b));
    }
    if s == "<detached ...>" || s.ends_with(" <no exit seen>")
        || s.starts_with("> ") // -k stack trace
        || (s.starts_with("[ Process PID=") && s.ends_with(" ]"))
    {
        return Some(Body::Notice);
    }
    if let Some(r) = s.strip_prefix("<... ") {
        return resumed_body(r);
    }
    call_body(s)
}

/// The text between `+++ ` and ` +++`: a thread's or a process's end, or an exec that
/// superseded it.
fn task_end(r: &str) -> Option<Body<'_>> {
    if let Some(t) = r.strip_prefix("thread ") {
        return thread_end(t);
    }
    if let Some(n) = r.strip_prefix("exited with ") {
        return Some(Body::Exited(n.trim().parse().ok()?));
    }
    if let Some(sig) = r.strip_prefix("killed by ") {
        let (sig, core) = match sig.strip_suffix(" (core dumped)") {
            Some(s) => (s, true),
            None => (sig, false),
        };
        return Some(Body::Killed {
            signal: super::args::parse_signal(sig)?,
            core,
        });
    }
    if r == "superseded by execve" {
        return Some(Body::Superseded(None));
    }
    if let Some(p) = r.strip_prefix("superseded by execve in pid ") {
        return Some(Body::Superseded(Some(p.trim().parse().ok()?)));
    }
    None
}

/// `name resumed>rest) = ret`, the text after `<... `.
fn resumed_body(r: &str) -> Option<Body<'_>> {
    let close = r.find(" resumed>")?;
    let name = r.get(..close)?;
    if !is_ident(name) {
        return None;
    }
    let rest = r.get(close + " resumed>".len()..)?;
    let syscall = Syscall::from_name(name);
    let (args, end) = if syscall.is_some() {
        match tail_marker(rest) {
            Some((args, end)) => (args, end),
            None => {
                let close = find_close(rest, 1)?;
                (rest.get(..close)?, returned(rest.get(close + 1..)?)?)
            }
        }
    } else {
        ("", End::Returned(None)) // not followed: the value is not needed
    };
    Some(Body::Resumed { syscall, args, end })
}

/// `name(args) = ret`, or `name(args <unfinished ...>`.
fn call_body(s: &str) -> Option<Body<'_>> {
    let open = s.find('(')?;
    let name = s.get(..open)?;
    if !is_ident(name) {
        return None;
    }
    let syscall = Syscall::from_name(name);
    let after = s.get(open + 1..)?;
    if name == "unshare" {
        if let Some(flags) = unshared(after) {
            return Some(Body::Unshare(flags));
        }
    }
    if syscall.is_none() {
        return Some(Body::Call {
            syscall,
            args: "",
            end: End::Returned(None),
        });
    }
    if let Some((args, end)) = tail_marker(after) {
        return Some(Body::Call { syscall, args, end });
    }
    let close = find_close(after, 1)?;
    let args = after.get(..close)?;
    let end = returned(after.get(close + 1..)?)?;
    Some(Body::Call { syscall, args, end })
}

/// The flags of an `unshare(FLAGS) = 0` line (the text after its `(`); `None` for any
/// other shape (unfinished, failed), which is skipped as other calls are.
fn unshared(after: &str) -> Option<u64> {
    let close = find_close(after, 1)?;
    let ok = returned(after.get(close + 1..)?)? == End::Returned(Some(0));
    let (flags, _) = super::args::parse_flags_lenient(after.get(..close)?);
    ok.then_some(flags)
}

/// `name` as strace prints syscall names: `clone3`, `_llseek`, `syscall_0x1b4`.
fn is_ident(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && !name.as_bytes()[0].is_ascii_digit()
        && (name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            || name.bytes().all(|b| b == b'?')) // "????(" : syscall not known at attach
}

/// Drops a trailing `-T` duration `<0.000123>`.
fn strip_duration(s: &str) -> &str {
    if let Some(open) = s.strip_suffix('>').and_then(|t| t.rfind(" <")) {
        let inner = s.get(open + 2..s.len() - 1).unwrap_or("");
        if !inner.is_empty() && inner.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
            return s.get(..open).unwrap_or(s).trim_end();
        }
    }
    s
}

/// ` <unfinished ...>` / ` <pid changed to N ...>` at the end: (text before it, end).
fn tail_marker(s: &str) -> Option<(&str, End)> {
    if let Some(before) = s.strip_suffix("<unfinished ...>") {
        return Some((before.trim_end(), End::Unfinished));
    }
    let before_close = s.strip_suffix(" ...>")?;
    let at = before_close.rfind("<pid changed to ")?;
    let pid = before_close
        .get(at + "<pid changed to ".len()..)?
        .parse()
        .ok()?;
    Some((before_close.get(..at)?.trim_end(), End::PidChanged(pid)))
}

/// The text after the closing parenthesis: ` = 0`, ` = -1 ENOENT (...)`, ` = ?`,
/// ` = ? ERESTARTNOINTR (To be restarted)`, ` = 3</dev/null>`, ` = 0x7f00 (flags ...)`.
fn returned(s: &str) -> Option<End> {
    let r = s.trim_start().strip_prefix('=')?.trim_start();
    let (value, rest) = if let Some(rest) = r.strip_prefix('?') {
        (None, rest)
    } else {
        let (v, rest) = leading_int(r)?;
        (Some(v), rest)
    };
    let rest = rest.trim_start();
    let errno_name = rest
        .split(' ')
        .next()
        .filter(|w| w.starts_with('E') && w.len() > 1);
    let errno = errno_name.map(|w| crate::names::errno_number(w).unwrap_or(1));
    Some(End::Returned(match (value, errno) {
        (Some(-1), Some(e)) | (None, Some(e)) => Some(-e),
        (v, _) => v,
    }))
}

/// The inside of `--- ... ---`: `SIGCHLD {si_signo=SIGCHLD, ...}` (strace's print_stopped with
/// the siginfo of a signal-delivery stop) or `stopped by SIGSTOP` (a group stop, no siginfo).
/// A siginfo that does not read is not a form strace writes: `None`.
fn signal_body(inner: &str) -> Option<Body<'_>> {
    if is_our_notice(inner) {
        return Some(Body::Ours(inner));
    }
    if inner.starts_with("stopped by ") {
        return Some(Body::Notice);
    }
    let (name, info) = inner.split_once(' ')?;
    let signal = signal_number(name)?;
    let (info, result) = signal_result(info);
    let fields = info.strip_prefix('{')?.strip_suffix('}')?;
    let mut sig = siginfo(signal, fields)?;
    sig.result = result;
    Some(Body::Signal(sig))
}

/// Linux numbers signals 1 to `_NSIG` (64; 128 on MIPS, the most of any architecture).
fn signal_number(text: &str) -> Option<u32> {
    parse_signal(text).filter(|n| (1..=128).contains(n))
}

/// The fields of a siginfo: `si_signo` (if given) must name the stop's signal, `si_code` must
/// be there. A field given twice counts once, the first time: with `-Y` strace prints the
/// sender's comm after `si_pid`, and a comm may hold `, si_code=...` of its own.
fn siginfo(signal: u32, fields: &str) -> Option<SigLine> {
    let mut signo = None;
    let mut code = None;
    let mut pid = None;
    for field in split_top(fields) {
        let Some((key, value)) = field.split_once('=') else {
            continue;
        };
        match key {
            "si_signo" if signo.is_none() => signo = Some(signal_number(without_comment(value))?),
            "si_code" if code.is_none() => {
                code = Some(crate::names::si_code_number(without_comment(value))?)
            }
            "si_pid" if pid.is_none() => pid = Some(sender_pid(value)?),
            _ => {}
        }
    }
    if signo.is_some_and(|s| s != signal) {
        return None;
    }
    let (si_pid, strace_pid) = pid.unwrap_or((None, None));
    Some(SigLine {
        signal,
        code: code?,
        si_pid,
        strace_pid,
        result: crate::event::SignalResult::Delivered,
    })
}

/// `-X verbose` adds the name: `0x11 /* SIGCHLD */`.
fn without_comment(value: &str) -> &str {
    value.split(" /*").next().unwrap_or("").trim()
}

/// `7`, `7<sleep>` (`-Y`), `7 /* 11215 in strace's PID NS */` (`--decode-pids=pidns`): (si_pid,
/// strace's translation). `None`: not a number strace prints for a pid_t.
fn sender_pid(value: &str) -> Option<(Option<u32>, Option<u32>)> {
    let (v, rest) = leading_int(value.trim_start())?;
    let pid = i32::try_from(v).ok()?;
    let si_pid = u32::try_from(pid).ok();
    let strace_pid = rest
        .trim_end()
        .strip_suffix(" in strace's PID NS */")
        .and_then(|r| r.rfind("/* ").and_then(|at| r.get(at + 3..)))
        .and_then(|n| n.parse::<u32>().ok())
        .filter(|&n| n > 0 && i32::try_from(n).is_ok());
    Some((si_pid, strace_pid))
}

/// Ours after a siginfo: what the kernel did with a signal it did not deliver.
fn signal_result(info: &str) -> (&str, crate::event::SignalResult) {
    use crate::event::SignalResult as R;
    const SUFFIXES: [(&str, R); 5] = [
        (" (ignored)", R::Ignored),
        (" (already pending)", R::AlreadyPending),
        (" (not queued: overflow)", R::OverflowFail),
        (" (queued without its info)", R::LoseInfo),
        (" (unknown result)", R::Other),
    ];
    for (suffix, r) in SUFFIXES {
        if let Some(head) = info.strip_suffix(suffix) {
            return (head, r);
        }
    }
    (info, R::Delivered)
}

/// Our notices strace has no line for: cgroup moves, the OOM killer's victims, a bundle's
/// annotations.
fn is_our_notice(inner: &str) -> bool {
    inner.starts_with("cgroup: ")
        || inner.starts_with("OOM killer: victim ")
        || inner.starts_with("bundle of \"")
}

/// `thread exited with N` / `thread killed by SIG [(core dumped)]`: the wait status.
fn thread_end(t: &str) -> Option<Body<'static>> {
    if let Some(n) = t.strip_prefix("exited with ") {
        let code: i32 = n.trim().parse().ok()?;
        return Some(Body::ThreadEnd(((code as u32) & 0xff) << 8));
    }
    let sig = t.strip_prefix("killed by ")?;
    let (sig, core) = match sig.strip_suffix(" (core dumped)") {
        Some(s) => (s, 0x80),
        None => (sig, 0),
    };
    Some(Body::ThreadEnd((signal_number(sig)? & 0x7f) | core))
}

/// `Process C attached (parent P) by [pid X<comm>] clone(FLAGS)`, `Thread C attached (process
/// P) by [pid X]` (ours).
fn born(s: &str) -> Option<Born> {
    let (thread, rest) = match s.strip_prefix("Process ") {
        Some(r) => (false, r),
        None => (true, s.strip_prefix("Thread ")?),
    };
    let (child, rest) = leading_u32(rest)?;
    let key = if thread {
        " attached (process "
    } else {
        " attached (parent "
    };
    let (other, rest) = leading_u32(rest.strip_prefix(key)?)?;
    let rest = rest.strip_prefix(')')?;
    let mut b = Born {
        child,
        tgid: if thread { other } else { child },
        parent: (!thread).then_some(other),
        by: None,
        syscall: None,
        flags: None,
    };
    let Some(by) = rest.strip_prefix(" by [pid ") else {
        return rest.is_empty().then_some(b);
    };
    let (pid, after) = leading_u32(by.trim_start_matches(' '))?;
    b.by = Some(pid);
    // the creator's label (`<comm>`, ` k8s=...`, both escaped) runs to the first `]`
    let after = after.get(after.find(']')? + 1..)?;
    if let Some(call) = after.strip_prefix(' ') {
        let open = call.find('(')?;
        b.syscall = Some(Syscall::from_name(call.get(..open)?)?);
        let flags = call.get(open + 1..)?.strip_suffix(')')?;
        b.flags = Some(crate::names::parse_clone_flags(flags)?.0);
    } else if !after.is_empty() {
        return None;
    }
    Some(b)
}

fn leading_u32(s: &str) -> Option<(u32, &str)> {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    Some((s.get(..digits)?.parse().ok()?, s.get(digits..)?))
}
