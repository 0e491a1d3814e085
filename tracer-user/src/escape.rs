//! Making text a traced process or a recording controls safe to print: names (comm), argv,
//! paths, container ids, hostnames. A process can rename itself to `"\x1b]0;PWNED\x07"`; printed
//! raw, that takes over the terminal of whoever reads the output. Every text output and the
//! viewer go through [`escape`] (unquoted text) or [`quoted`] (strace's `"..."` arguments).
//!
//! The escapes are strace's: `\n`, `\t`, `\r`, `\v`, `\f`, `\\` (and `\"` inside quotes), any
//! other control byte in octal as short as possible (`\33`, `\177`), three digits when the next
//! byte is an octal digit (`\0331`), so the output reads back unambiguously. Unlike strace in the
//! C locale, printable non-ASCII characters stay as they are (names are UTF-8); C1 controls
//! (U+0080-U+009F, which some terminals obey like ESC sequences) and the invisible format
//! characters ([`is_invisible`]: bidirectional controls, which reorder what is displayed, and
//! zero-width ones, which hide text) are escaped byte by byte in octal. The HTML and SVG
//! outputs escape the same invisible characters the same way, and file names in error
//! messages go through [`path`].

use std::borrow::Cow;

/// Invisible format characters a name can hide behind: the bidirectional marks, embeddings,
/// overrides and isolates (U+061C, U+200E-U+200F, U+202A-U+202E, U+2066-U+2069, which reorder
/// what is displayed: "Trojan Source"), zero-width spaces and joiners (U+200B-U+200D, U+2060-
/// U+2064, U+FEFF), the line and paragraph separators (U+2028, U+2029) and the deprecated
/// format controls U+206A-U+206F.
pub fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{061c}'
            | '\u{200b}'..='\u{200f}'
            | '\u{2028}'..='\u{202e}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206f}'
            | '\u{feff}'
    )
}

/// Characters that are printed escaped (besides `\` and, when quoting, `"`).
fn needs_escape(c: char) -> bool {
    c.is_control() || is_invisible(c)
}

/// Appends `s` to `out` with control characters (and `\`, and `"` when `quote`) escaped.
fn push_escaped(out: &mut String, s: &str, quote: bool) {
    let bytes = s.as_bytes();
    for (i, c) in s.char_indices() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' if quote => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{b}' => out.push_str("\\v"),
            '\u{c}' => out.push_str("\\f"),
            c if needs_escape(c) => {
                let end = i + c.len_utf8();
                let next_is_octal = bytes.get(end).is_some_and(|b| (b'0'..=b'7').contains(b));
                for (k, &b) in bytes[i..end].iter().enumerate() {
                    // Only the last byte of the character is followed by the next character.
                    push_octal(out, b, next_is_octal || k + 1 < end - i);
                }
            }
            c => out.push(c),
        }
    }
}

/// `\ooo` as strace prints it: leading zeros dropped unless `full` (an octal digit follows).
fn push_octal(out: &mut String, b: u8, full: bool) {
    out.push('\\');
    if full || b >> 6 != 0 {
        out.push(char::from(b'0' + (b >> 6)));
    }
    if full || b >> 3 != 0 {
        out.push(char::from(b'0' + ((b >> 3) & 7)));
    }
    out.push(char::from(b'0' + (b & 7)));
}

/// `s` with control characters and `\` escaped; borrowed when nothing needed it.
pub fn escape(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| c == '\\' || needs_escape(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    push_escaped(&mut out, s, false);
    Cow::Owned(out)
}

/// A file name for a message: escaped like every other text a user or recording controls
/// (bytes that are not UTF-8 shown as U+FFFD).
pub fn path(p: &std::path::Path) -> String {
    escape(&p.to_string_lossy()).into_owned()
}

/// A name inside strace's `-Y` angle brackets (`[pid 7<sleep>]`, `si_pid=7<runc>`): escaped
/// as [`escape`] does, and `<`, `>` and `]` in octal too, so a name like `a>] x` cannot end
/// the brackets early and the line reads back.
pub fn angled(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 4);
    for part in escape(s).split_inclusive(['<', '>', ']']) {
        match part.strip_suffix(['<', '>', ']']) {
            Some(head) => {
                out.push_str(head);
                push_octal(&mut out, part.as_bytes()[part.len() - 1], true);
            }
            None => out.push_str(part),
        }
    }
    out
}

/// `"s"` as strace prints a string argument, with `...` after it when it was `truncated`.
pub fn quoted(s: &str, truncated: bool) -> String {
    let mut out = String::with_capacity(s.len() + 5);
    out.push('"');
    push_escaped(&mut out, s, true);
    out.push('"');
    if truncated {
        out.push_str("...");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_bytes_as_strace_prints_them() {
        assert_eq!(escape("\x1b]0;PWNED\x07"), "\\33]0;PWNED\\7");
        assert_eq!(escape("a\nb\tc\rd\u{b}e\u{c}"), "a\\nb\\tc\\rd\\ve\\f");
        assert_eq!(escape("\x7f"), "\\177");
        assert_eq!(escape("\x00"), "\\0");
        // An octal digit after the escape: three digits, or `\331` would read back as one byte.
        assert_eq!(escape("\x1b1"), "\\0331");
        assert_eq!(escape("\x1b8"), "\\338");
        assert_eq!(escape("back\\slash"), "back\\\\slash");
        assert_eq!(quoted("say \"hi\"\x1b", true), "\"say \\\"hi\\\"\\33\"...");
    }

    #[test]
    fn printable_unicode_stays_c1_and_bidi_do_not() {
        assert!(matches!(escape("kworker/0:1 été ✓"), Cow::Borrowed(_)));
        // U+009B is CSI for terminals that take 8-bit controls: bytes c2 9b.
        assert_eq!(escape("a\u{9b}2J"), "a\\302\\2332J");
        assert_eq!(escape("\u{202e}txt"), "\\342\\200\\256txt");
    }

    #[test]
    fn no_control_character_survives() {
        for c in (0u32..0x3000).filter_map(char::from_u32) {
            let s = format!("x{c}1");
            let e = escape(&s);
            assert!(
                !e.chars().any(needs_escape),
                "U+{:04X} printed raw: {e:?}",
                c as u32
            );
        }
    }
}
