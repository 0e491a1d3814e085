//! Which signals the `signal:signal_generate` probe reports.
//!
//! The tracepoint fires in __send_signal_locked (kernel/signal.c) for every signal generated
//! on the host, delivered or not; a Go program alone raises SIGURG for every goroutine
//! preemption. The default keeps the signals that end, stop or reap processes.

/// The signals a capture records ([`CaptureBuilder::signals`](super::CaptureBuilder::signals)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SignalSet {
    /// The signals that end, stop, continue or reap a process ([`SignalSet::DEFAULT`]).
    #[default]
    Default,
    /// Every signal, 1 to 64 (SIGURG, SIGWINCH, real-time signals too).
    All,
    /// None: the probe is not attached.
    None,
}

impl SignalSet {
    /// SIGCHLD, SIGKILL, SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGABRT, SIGSEGV, SIGBUS, SIGILL,
    /// SIGFPE, SIGSYS, SIGPIPE, SIGSTOP, SIGCONT.
    pub const DEFAULT: [i32; 15] = [
        libc::SIGCHLD,
        libc::SIGKILL,
        libc::SIGTERM,
        libc::SIGINT,
        libc::SIGHUP,
        libc::SIGQUIT,
        libc::SIGABRT,
        libc::SIGSEGV,
        libc::SIGBUS,
        libc::SIGILL,
        libc::SIGFPE,
        libc::SIGSYS,
        libc::SIGPIPE,
        libc::SIGSTOP,
        libc::SIGCONT,
    ];

    /// The probe's mask (`ProbeConfig::signal_mask`): bit n − 1 for signal n.
    pub fn mask(self) -> u64 {
        match self {
            SignalSet::Default => Self::DEFAULT.iter().fold(0, |m, &s| m | bit(s)),
            SignalSet::All => u64::MAX,
            SignalSet::None => 0,
        }
    }

    /// Whether signal `sig` is recorded.
    pub fn contains(self, sig: i32) -> bool {
        self.mask() & bit(sig) != 0
    }

    /// `default`, `all` or `none`, as the command line and trace headers name it.
    pub fn name(self) -> &'static str {
        match self {
            SignalSet::Default => "default",
            SignalSet::All => "all",
            SignalSet::None => "none",
        }
    }
}

/// The mask bit of signal `sig` (1..=64); 0 for anything else.
fn bit(sig: i32) -> u64 {
    match sig {
        1..=64 => 1u64 << (sig - 1),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks() {
        let d = SignalSet::Default;
        assert_eq!(d.mask().count_ones(), 15);
        for sig in [9, 15, 17, 19, 18, 31, 13] {
            assert!(d.contains(sig), "{sig}");
        }
        // SIGURG (Go's preemption), SIGWINCH, SIGUSR1, real-time signals: only with `all`.
        for sig in [23, 28, 10, 34, 64] {
            assert!(!d.contains(sig), "{sig}");
            assert!(SignalSet::All.contains(sig), "{sig}");
        }
        assert_eq!(SignalSet::None.mask(), 0);
        assert_eq!(SignalSet::default(), SignalSet::Default);
        // The probe's bit for signal n is n − 1, so SIGRTMAX (64) fits.
        assert_eq!(bit(1), 1);
        assert_eq!(bit(64), 1 << 63);
        assert_eq!((bit(0), bit(65), bit(-1)), (0, 0, 0));
    }
}
