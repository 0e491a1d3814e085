//! strace-like one-line rendering of events.
