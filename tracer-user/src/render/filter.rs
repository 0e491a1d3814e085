//! strace's `-e trace=` and `-e signal=` for the lines [`super::LineRenderer`] prints.
//!
//! `-e trace=` takes classes of our events (`exec`, `fork`, `exit`, `signal`, `oom`, `cgroup`,
//! `rename`, `subreaper`, `prctl`, `bundle`), strace's syscall names for them (`execve`, `clone3`,
//! `exit_group`...), strace's classes (`process` / `%process`: exec, fork, exit and signal
//! lines), `all` and `none`; a leading `!` inverts the set, as in strace. Unlike strace, which
//! prints `+++` and signal lines whatever `-e trace=` says, the set is exact: those are the
//! `exit` and `signal` classes. `-e signal=` (`SIGTERM,SIGKILL`, `TERM`, `9`, `!SIGCHLD`, `all`,
//! `none`) then chooses which signal lines print.

use crate::event::{Event, EventKind, Syscall};
use tracer_common::prctl::{PR_SET_CHILD_SUBREAPER, PR_SET_NAME};

/// A class of lines `-e trace=` chooses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u16)]
pub enum Class {
    /// execve/execveat calls and the lines of a successful exec.
    Exec = 1,
    /// clone/clone3/fork/vfork calls and `Process N attached` lines.
    Fork = 2,
    /// exit/exit_group calls and `+++ exited/killed +++` lines.
    Exit = 4,
    /// Signal lines.
    Signal = 8,
    /// OOM-killer lines.
    Oom = 16,
    /// cgroup moves.
    Cgroup = 32,
    /// `prctl(PR_SET_NAME, ...)`: a thread's new name.
    Rename = 64,
    /// Every prctl line (renames and subreapers included).
    Prctl = 128,
    /// A runtime bundle's annotations.
    Bundle = 256,
    /// `prctl(PR_SET_CHILD_SUBREAPER, ...)`, and the probes' report of the flag.
    Subreaper = 512,
}

const ALL: u16 = 1023;

/// Which lines print: `-e trace=` classes and `-e signal=` signals.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineFilter {
    classes: u16,
    /// Bit N: signal N prints (1..=64; bit 0 for any other number).
    signals: u128,
}

impl Default for LineFilter {
    fn default() -> LineFilter {
        LineFilter {
            classes: ALL,
            signals: u128::MAX,
        }
    }
}

/// A word `-e` does not know; the message is the one line the command prints.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FilterError {
    /// An `-e` expression that is neither `trace=...` nor `signal=...`.
    #[error("-e {0}: only trace=CLASSES and signal=SIGNALS are known")]
    Qualifier(String),
    /// An unknown class or syscall in `trace=`.
    #[error("-e trace={0}: unknown class or syscall (known: exec, fork, clone, exit, signal, oom, cgroup, rename, subreaper, prctl, bundle, process, all, none, and the syscalls execve, execveat, clone, clone3, fork, vfork, exit, exit_group, prctl)")]
    Class(String),
    /// An unknown signal in `signal=`.
    #[error("-e signal={0}: unknown signal (SIGTERM, TERM, 15, all, none)")]
    Signal(String),
}

fn class_bits(word: &str) -> Option<u16> {
    let w = word.strip_prefix('%').unwrap_or(word);
    let c = |cs: &[Class]| cs.iter().fold(0u16, |b, c| b | *c as u16);
    Some(match w {
        "all" => ALL,
        "none" => 0,
        "execve" | "execveat" => c(&[Class::Exec]),
        "clone" | "clone3" | "vfork" => c(&[Class::Fork]),
        "exit_group" => c(&[Class::Exit]),
        "prctl" => c(&[Class::Prctl, Class::Rename, Class::Subreaper]),
        "process" => c(&[Class::Exec, Class::Fork, Class::Exit, Class::Signal]),
        w => Class::named(w)? as u16,
    })
}

fn signal_bit(word: &str) -> Option<u128> {
    let n = match word.parse::<i32>() {
        Ok(n) => n,
        Err(_) => {
            let name = match word.starts_with("SIG") {
                true => word.to_string(),
                false => format!("SIG{word}"),
            };
            crate::names::signal_number(&name)?
        }
    };
    (1..=64).contains(&n).then(|| 1u128 << n)
}

/// `a,b,!c` style lists: the union of the words, inverted when the list starts with `!`.
fn set<T: Copy + std::ops::BitOr<Output = T> + std::ops::Not<Output = T>>(
    list: &str,
    zero: T,
    word: impl Fn(&str) -> Option<T>,
) -> Result<T, String> {
    let (neg, list) = match list.strip_prefix('!') {
        Some(rest) => (true, rest),
        None => (false, list),
    };
    let mut bits = zero;
    for w in list.split(',') {
        bits = bits | word(w.trim()).ok_or_else(|| crate::escape::escape(w).into_owned())?;
    }
    Ok(if neg { !bits } else { bits })
}

impl LineFilter {
    /// Applies one `-e` expression (`trace=exec,fork`, `signal=!SIGCHLD`); a bare list is
    /// `trace=`, as in strace.
    pub fn qualify(&mut self, expr: &str) -> Result<(), FilterError> {
        let (key, list) = expr.split_once('=').unwrap_or(("trace", expr));
        match key {
            "trace" | "t" => {
                self.classes = set(list, 0u16, class_bits).map_err(FilterError::Class)? & ALL;
            }
            "signal" | "signals" | "s" => {
                self.signals = set(list, 0u128, |w| match w {
                    "all" => Some(u128::MAX),
                    "none" => Some(0),
                    w => signal_bit(w),
                })
                .map_err(FilterError::Signal)?;
            }
            _ => {
                return Err(FilterError::Qualifier(
                    crate::escape::escape(expr).into_owned(),
                ))
            }
        }
        Ok(())
    }

    /// A filter from every `-e` given, in order.
    pub fn from_exprs<S: AsRef<str>>(exprs: &[S]) -> Result<LineFilter, FilterError> {
        let mut f = LineFilter::default();
        for e in exprs {
            f.qualify(e.as_ref())?;
        }
        Ok(f)
    }

    /// Whether every line prints (no `-e` narrowed anything).
    pub fn is_all(&self) -> bool {
        *self == LineFilter::default()
    }

    fn has(&self, c: Class) -> bool {
        self.classes & c as u16 != 0
    }

    /// Whether `ev`'s lines print: under its kind's `-e trace=` word (the kind table's,
    /// `event::Kind`), or its syscall's; a prctl under `rename` or `subreaper` too for its
    /// option, a signal only if `-e signal=` keeps it.
    pub fn shows(&self, ev: &Event) -> bool {
        if let EventKind::Signal(i) = &ev.kind {
            let bit = match i.signal {
                1..=64 => 1u128 << i.signal,
                _ => 1,
            };
            return self.has(Class::Signal) && self.signals & bit != 0;
        }
        if let EventKind::PrctlEnter { option, .. } = &ev.kind {
            return self.has(Class::Prctl)
                || (*option == PR_SET_NAME && self.has(Class::Rename))
                || (*option == PR_SET_CHILD_SUBREAPER && self.has(Class::Subreaper));
        }
        match (ev.kind.kind().row().trace, ev.kind.call()) {
            (Some(word), _) => Class::named(word).is_some_and(|c| self.has(c)),
            (None, Some(s)) if s.is_exec() => self.has(Class::Exec),
            (None, Some(s)) if s.creates_task() => self.has(Class::Fork),
            (None, Some(Syscall::Prctl)) => {
                self.has(Class::Prctl) || self.has(Class::Rename) || self.has(Class::Subreaper)
            }
            (None, Some(_)) => self.has(Class::Exit),
            (None, None) => false,
        }
    }
}

impl Class {
    /// The class a `-e trace=` word names itself (`prctl` selects renames and subreapers
    /// too, as [`LineFilter::qualify`] reads it).
    pub fn named(word: &str) -> Option<Class> {
        Some(match word {
            "exec" => Class::Exec,
            "fork" => Class::Fork,
            "exit" => Class::Exit,
            "signal" => Class::Signal,
            "oom" => Class::Oom,
            "cgroup" => Class::Cgroup,
            "rename" => Class::Rename,
            "prctl" => Class::Prctl,
            "bundle" => Class::Bundle,
            "subreaper" => Class::Subreaper,
            _ => return None,
        })
    }
}

#[cfg(test)]
#[path = "filter_kinds_tests.rs"]
mod kinds_tests;
