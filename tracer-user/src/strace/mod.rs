//! strace log import: `strace -f` output to [`crate::Event`]s (see issue 3).
