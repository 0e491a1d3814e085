//! Pieces of strace's argument syntax: top-level splitting, C strings, arrays, flag words.
//!
//! Everything here works on byte offsets of ASCII delimiters, so slicing never lands inside a
//! UTF-8 sequence, and every loop is a single linear pass (no recursion, no regex).

use crate::event::CapturedStr;

/// Index of the `)` that closes a call whose `(` was already consumed (`depth` open groups),
/// skipping strings and nested `()[]{}`. `None` when the text ends first.
pub(crate) fn find_close(s: &str, depth: usize) -> Option<usize> {
    let b = s.as_bytes();
    let mut depth = depth as isize;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => i = skip_string(b, i),
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => {
                depth -= 1;
                if depth == 0 {
                    return if b[i] == b')' { Some(i) } else { None };
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// From the opening quote at `start`, the index of the closing quote (or the last byte).
fn skip_string(b: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return i,
            _ => i += 1,
        }
    }
    b.len().saturating_sub(1)
}

/// Splits at top-level commas (outside strings and brackets). Pieces are trimmed.
pub(crate) fn split_top(s: &str) -> SplitTop<'_> {
    SplitTop {
        s,
        pos: 0,
        done: s.trim().is_empty(),
    }
}

pub(crate) struct SplitTop<'a> {
    s: &'a str,
    pos: usize,
    done: bool,
}

impl<'a> Iterator for SplitTop<'a> {
    type Item = &'a str;
    fn next(&mut self) -> Option<&'a str> {
        if self.done {
            return None;
        }
        let b = self.s.as_bytes();
        let start = self.pos;
        let mut depth = 0isize;
        let mut i = start;
        while i < b.len() {
            match b[i] {
                b'"' => i = skip_string(b, i),
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' | b'}' => depth -= 1,
                b',' if depth <= 0 => {
                    self.pos = i + 1;
                    return Some(self.s.get(start..i).unwrap_or("").trim());
                }
                _ => {}
            }
            i += 1;
        }
        self.done = true;
        let piece = self.s.get(start..).unwrap_or("").trim();
        Some(piece)
    }
}

/// `key=value` among top-level pieces.
pub(crate) fn keyed<'a>(args: &'a str, key: &str) -> Option<&'a str> {
    split_top(args).find_map(|a| a.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
}

/// A strace string argument: `"..."` with C escapes, optionally followed by `...` (cut short).
/// `NULL`, addresses and anything else that is not a quoted string yield `None`.
pub(crate) fn parse_cstr(arg: &str) -> Option<CapturedStr> {
    let b = arg.as_bytes();
    if b.first() != Some(&b'"') {
        return None;
    }
    let end = skip_string(b, 0);
    if end == 0 || b.get(end) != Some(&b'"') {
        // unterminated: take what there is, marked as cut
        return Some(CapturedStr {
            value: unescape(arg.get(1..).unwrap_or("")),
            truncated: true,
        });
    }
    let inner = arg.get(1..end).unwrap_or("");
    let truncated = arg
        .get(end + 1..)
        .unwrap_or("")
        .trim_start()
        .starts_with("...");
    Some(CapturedStr {
        value: unescape(inner),
        truncated,
    })
}

/// A quoted string at the start of `s` (`"..."`, with `...` after it when cut) and the text
/// after it; `None` when `s` does not start with a whole one.
pub(crate) fn take_cstr(s: &str) -> Option<(CapturedStr, &str)> {
    let end = skip_string(s.as_bytes(), 0);
    if !s.starts_with('"') || end == 0 || s.as_bytes().get(end) != Some(&b'"') {
        return None;
    }
    let rest = s.get(end + 1..)?;
    let (truncated, rest) = match rest.strip_prefix("...") {
        Some(r) => (true, r),
        None => (false, rest),
    };
    let value = unescape(s.get(1..end)?);
    Some((CapturedStr { value, truncated }, rest))
}

/// Undoes strace's C-style escapes: `\n \t \r \v \f \a \b \e \" \\ \xHH \NNN` (octal).
/// Invalid UTF-8 after unescaping is replaced lossily.
pub fn unescape(s: &str) -> String {
    if !s.contains('\\') {
        return s.to_owned();
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c != b'\\' {
            out.push(c);
            i += 1;
            continue;
        }
        let Some(&e) = b.get(i + 1) else {
            out.push(b'\\');
            break;
        };
        i += 2;
        match e {
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'r' => out.push(b'\r'),
            b'v' => out.push(0x0b),
            b'f' => out.push(0x0c),
            b'a' => out.push(0x07),
            b'b' => out.push(0x08),
            b'e' => out.push(0x1b),
            b'x' => {
                let mut v: u32 = 0;
                let mut n = 0;
                while n < 2 {
                    match b.get(i).and_then(|d| (*d as char).to_digit(16)) {
                        Some(d) => {
                            v = v * 16 + d;
                            i += 1;
                            n += 1;
                        }
                        None => break,
                    }
                }
                if n == 0 {
                    out.extend_from_slice(b"\\x");
                } else {
                    out.push(v as u8);
                }
            }
            b'0'..=b'7' => {
                let mut v: u32 = (e - b'0') as u32;
                let mut n = 1;
                while n < 3 {
                    match b.get(i) {
                        Some(d @ b'0'..=b'7') => {
                            v = v * 8 + (d - b'0') as u32;
                            i += 1;
                            n += 1;
                        }
                        _ => break,
                    }
                }
                out.push((v & 0xff) as u8);
            }
            other => out.push(other),
        }
    }
    match String::from_utf8(out) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    }
}

/// An argv array: `["a", "b", ...]` → (entries, truncated). `NULL`/addresses → empty, not cut.
pub(crate) fn parse_argv(arg: &str) -> (Vec<String>, bool) {
    let Some(inner) = arg.strip_prefix('[') else {
        return (Vec::new(), false);
    };
    let inner = match inner.rfind(']') {
        Some(end) => inner.get(..end).unwrap_or(""),
        None => inner, // cut mid-array
    };
    let mut argv = Vec::new();
    let mut truncated = arg.rfind(']').is_none();
    for piece in split_top(inner) {
        if piece.is_empty() {
            continue;
        }
        if piece == "..." || piece.starts_with("/*") {
            truncated = true;
            continue;
        }
        match parse_cstr(piece) {
            Some(s) => {
                truncated |= s.truncated;
                argv.push(s.value);
            }
            None => truncated = true,
        }
    }
    (argv, truncated)
}

/// Clone flags, leniently: names unknown to [`crate::names`] are ignored rather than fatal.
pub(crate) fn parse_flags_lenient(text: &str) -> (u64, u32) {
    // `-X verbose`: "0x1200011 /* CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD */"
    let text = text.split("/*").next().unwrap_or("").trim();
    if let Some(v) = crate::names::parse_clone_flags(text) {
        return v;
    }
    let mut flags = 0;
    let mut sig = 0;
    for part in text.split('|') {
        if let Some((f, s)) = crate::names::parse_clone_flags(part) {
            flags |= f;
            if s != 0 {
                sig = s;
            }
        }
    }
    (flags, sig)
}

/// A signal given by name or number.
pub(crate) fn parse_signal(text: &str) -> Option<u32> {
    let t = text.trim();
    crate::names::signal_number(t)
        .map(|n| n as u32)
        .or_else(|| crate::names::parse_int(t).and_then(|v| u32::try_from(v).ok()))
}

/// An fd argument: `AT_FDCWD`, `3`, `3</path>` (-y).
pub(crate) fn parse_dirfd(text: &str) -> i64 {
    let t = text.trim();
    if t.starts_with("AT_FDCWD") {
        return -100;
    }
    let digits = t.find('<').map_or(t, |p| t.get(..p).unwrap_or(""));
    crate::names::parse_int(digits).unwrap_or(-100)
}

/// execveat's flags: `AT_EMPTY_PATH|AT_SYMLINK_NOFOLLOW`, numbers allowed; unknown names ignored.
pub(crate) fn parse_at_flags(text: &str) -> u32 {
    text.split('|')
        .filter_map(crate::names::parse_at_flag)
        .fold(0, |v, bit| v | bit)
}

/// A number at the start of `text` (`123`, `-1`, `0x1f`), with the rest.
pub(crate) fn leading_int(text: &str) -> Option<(i64, &str)> {
    let b = text.as_bytes();
    let mut i = 0;
    if b.first() == Some(&b'-') {
        i = 1;
    }
    if b.get(i) == Some(&b'0') && b.get(i + 1) == Some(&b'x') {
        i += 2;
        while b.get(i).is_some_and(u8::is_ascii_hexdigit) {
            i += 1;
        }
    } else {
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
    }
    let num = text.get(..i)?;
    let v = crate::names::parse_int(num)?;
    Some((v, text.get(i..).unwrap_or("")))
}
