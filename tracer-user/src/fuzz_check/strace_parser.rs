//! The strace importer's fuzz oracle.

use crate::strace::{parse_log, parse_reader, StraceError, MAX_LINE_BYTES};

/// The invariants the `strace_parser` fuzz target and its kept crashers check on arbitrary
/// bytes: no panic, and the two entry points agree — [`parse_log`] on the text and
/// [`parse_reader`] on its bytes give the same import (or both say it is not a log, after the
/// same number of lines). Inputs that are not UTF-8, or have a line longer than
/// [`MAX_LINE_BYTES`] (which only the reader cuts), go through the reader alone.
/// Panics when one is broken (it is a test oracle, not an API).
#[doc(hidden)]
pub fn strace_parser(data: &[u8]) {
    let from_reader = parse_reader(data);
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if text.split('\n').any(|l| l.len() > MAX_LINE_BYTES) {
        return;
    }
    match (parse_log(text), from_reader) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "parse_log and parse_reader disagree"),
        (
            Err(StraceError::NotAnStraceLog { lines: a }),
            Err(StraceError::NotAnStraceLog { lines: b }),
        ) => assert_eq!(a, b, "lines read before giving up"),
        (a, b) => panic!("parse_log gave {a:?}, parse_reader {b:?}"),
    }
}
