//! The text of a log as people bring it, before a line is parsed: strace's own lines cut by
//! a spliced attach notice, and logs pasted into mail, markdown, chat or a web page — wrapped
//! at 72–80 columns, quoted with `> `, indented, coloured by `grep --color`, a tag such as
//! `strace: ` before every line, a shell prompt above them. What is done to each line:
//!
//! * ANSI escape sequences (CSI `ESC [ ... letter`, and other `ESC x` pairs) are removed
//!   from a line that does not read with them;
//! * in a log whose first line starts with `>` (a mail quote), the quote markers `> ` are
//!   removed from every line;
//! * a line `strace: LINE`, where LINE reads as a line of strace's other than its own notices,
//!   is LINE (a tag put before every line);
//! * a shell prompt line (`$ strace ...`, `root@node:~# strace ...`) is skipped, counted in
//!   [`Import::prompts`](super::Import::prompts);
//! * a line that does not read whole is held, and the next line is tried as its continuation:
//!   the two joined as they are (a splice, or `fold -s`, which keeps the space at the end of
//!   the first part), then with a space between (a wrapper that dropped it). A join that reads
//!   whole is the line, counted in [`Import::rejoined`](super::Import::rejoined) (splices by
//!   a notice are not: strace wrote them so). A line reads whole when it parses and does not
//!   end inside a parenthesis it opened after its return value (`= -1 ENOENT (No such`).
//!   When the next line reads alone instead, the held one is taken alone (applied if it
//!   parses, else unreadable). Held text is bounded ([`MAX_CARRY_BYTES`], [`MAX_PIECES`]).

use std::borrow::Cow;

use super::line::{self, Body, Line};
use super::{to_static, Parser, MAX_CARRY_BYTES, MAX_CARRY_CUTS};

/// At most this many lines are joined into one (a 4 KiB execve line wrapped at 72 columns is
/// some 60 of them); beyond it the held text is taken alone.
pub(super) const MAX_PIECES: usize = 128;

/// A line held while its continuation may still come.
#[derive(Debug)]
pub(super) struct Carry {
    /// Line number of its first piece.
    first_no: usize,
    text: String,
    /// The pieces joined to it: (line number, where its text starts in `text`); each is
    /// unreadable when no join reads whole.
    pieces: Vec<(usize, usize)>,
    /// Cut by spliced attach notices this many times (strace's own splits, not a wrap).
    cuts: u32,
}

/// How a pasted log was set in its page, learnt from its first lines.
#[derive(Debug, Default)]
pub(super) struct Paste {
    /// Its first line starts with `>`: a mail quote.
    quoted: Option<bool>,
    /// The indentation of its first line that is not a prompt (a markdown code block's four
    /// spaces): taken off every line, so that a wrapped line's pieces join as they were.
    indent: Option<usize>,
}

/// The line's text with what a paste added taken off: a mail quote, the page's indentation.
pub(super) fn clean<'a>(raw: &'a str, paste: &mut Paste) -> Cow<'a, str> {
    let mut text = Cow::Borrowed(raw);
    if text.bytes().all(|b| b.is_ascii_whitespace()) {
        return text;
    }
    if *paste.quoted.get_or_insert_with(|| text.starts_with('>')) && text.starts_with('>') {
        let mut rest: &str = &text;
        while let Some(r) = rest.strip_prefix('>') {
            rest = r.strip_prefix(' ').unwrap_or(r);
        }
        text = Cow::Owned(rest.to_owned());
    }
    if paste.indent.is_none() && !is_prompt(&text) {
        paste.indent = Some(text.len() - text.trim_start_matches([' ', '\t']).len());
    }
    let indent = paste.indent.unwrap_or(0);
    let lead = || {
        text.bytes()
            .take_while(|b| matches!(b, b' ' | b'\t'))
            .count()
    };
    if indent > 0 && lead() >= indent {
        text = match text {
            Cow::Borrowed(t) => Cow::Borrowed(&t[indent..]),
            Cow::Owned(t) => Cow::Owned(t[indent..].to_owned()),
        };
    }
    text
}

/// `s` without its ANSI escape sequences.
fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\x1b' {
            out.push(c);
            continue;
        }
        match chars.next() {
            // CSI: parameters and intermediates, then one final byte @ to ~
            Some('[') => {
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            // OSC: up to BEL or ESC \
            Some(']') => {
                while let Some(c) = chars.next() {
                    if c == '\x07' || (c == '\x1b' && chars.peek() == Some(&'\\')) {
                        chars.next_if_eq(&'\\');
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// A shell prompt before a command: `$ strace ...`, `# strace ...`, `user@host:~$ ...`,
/// `[root@node ~]# ...`, `% ...`.
pub(super) fn is_prompt(text: &str) -> bool {
    let t = text.trim_start();
    if t.starts_with('[') && !t.starts_with("[pid") {
        // `[user@host dir]# ...`
        let end = t.find("]# ").or_else(|| t.find("]$ "));
        return end.is_some_and(|e| t[..e].contains('@') && !t[e + 3..].trim().is_empty());
    }
    let Some((first, rest)) = t.split_once(' ') else {
        return false;
    };
    if rest.trim().is_empty() {
        return false;
    }
    match first {
        "$" | "#" | "%" => true,
        _ => {
            let sigil = first.ends_with('$') || first.ends_with('#') || first.ends_with('%');
            sigil && first.contains('@')
        }
    }
}

/// `text` as a line: [`line::parse_line`], and a tag `strace: ` put before a line of strace's.
pub(super) fn parse(text: &str) -> Option<Line<'_>> {
    let l = line::parse_line(text)?;
    if l.body != Body::Notice {
        return Some(l);
    }
    let Some(inner) = text.trim_start().strip_prefix("strace: ") else {
        return Some(l);
    };
    match line::parse_line(inner) {
        Some(i) if !matches!(i.body, Body::Notice | Body::Blank) => Some(i),
        _ => Some(l),
    }
}

/// A line that parses may still be cut: a call of a syscall the importer does not follow (read
/// up to its name) without its return, or inside the comment after its return value.
fn reads_whole(text: &str, l: &Line<'_>) -> bool {
    if !matches!(l.body, Body::Call { .. }) {
        return true;
    }
    // most calls end in their return value (`= 3`, `= ?`) or a marker (`...>`)
    let last = text.trim_end().as_bytes().last().copied().unwrap_or(b' ');
    if last.is_ascii_digit() || matches!(last, b'?' | b'>') {
        return true;
    }
    let Some(at) = return_at(text) else {
        return text.trim_end().ends_with("...>");
    };
    let tail = &text.as_bytes()[at..];
    let open = tail.iter().filter(|&&b| b == b'(').count();
    open <= tail.iter().filter(|&&b| b == b')').count()
}

/// Where the text after a call's return value starts: after the last `)`, spaces (strace
/// pads to a column), `=`.
fn return_at(text: &str) -> Option<usize> {
    let b = text.as_bytes();
    let mut end = b.len();
    while let Some(i) = text.get(..end)?.rfind(')') {
        let spaces = b[i + 1..].iter().take_while(|&&c| c == b' ').count();
        if spaces > 0 && b.get(i + 1 + spaces) == Some(&b'=') {
            return Some(i + 2 + spaces);
        }
        end = i;
    }
    None
}

/// What the start of a line of strace's looks like: a pid prefix or column, a stamp, a
/// task's end, a signal, a resumed call, a notice, or a call's name and its `(`.
fn looks_like_start(text: &str) -> bool {
    let t = text.trim_start();
    let b = t.as_bytes();
    if b.first().is_some_and(u8::is_ascii_digit)
        || ["[pid", "+++", "---", "<...", "strace: "]
            .iter()
            .any(|p| t.starts_with(p))
    {
        return true;
    }
    let name = b
        .iter()
        .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
        .count();
    name > 0 && b.get(name) == Some(&b'(')
}

impl Parser {
    /// Feeds one line (without its `\n`).
    pub fn feed_line(&mut self, raw: &str) {
        self.out.lines += 1;
        let no = self.out.lines;
        let cleaned = clean(raw, &mut self.paste);
        let text: &str = &cleaned;
        match self.carry.take() {
            None => self.take_line(no, text, None),
            Some(c) => self.continue_carry(no, text, c),
        }
    }

    /// The next line after a held one: the join if it reads whole, else each alone.
    fn continue_carry(&mut self, no: usize, text: &str, mut c: Carry) {
        for sep in ["", " "] {
            if sep == " " && (c.cuts > 0 || text.starts_with(' ')) {
                break; // a splice, or a space already there
            }
            let joined = format!("{}{sep}{text}", c.text);
            // (a line cut by a notice is taken as soon as the join parses, as strace wrote it)
            if line::find_spliced_notice(&joined).is_some()
                || parse(&joined).is_some_and(|l| c.cuts > 0 || reads_whole(&joined, &l))
            {
                if c.cuts == 0 {
                    self.out.rejoined += 1 + c.pieces.len();
                }
                return self.take_line(c.first_no, &joined, Some(c));
            }
        }
        let alone = parse(text).is_some() || is_prompt(text);
        if !alone
            && c.pieces.len() < MAX_PIECES
            && c.text.len() + text.len() <= MAX_CARRY_BYTES
            && c.cuts == 0
        {
            // still not whole: perhaps the next piece completes it
            c.pieces.push((no, c.text.len()));
            c.text.push_str(text);
            self.carry = Some(c);
            return;
        }
        self.flush(c);
        self.take_line(no, text, None);
    }

    /// A line (or a join, `from` the carry it came from): applied, held, or unreadable.
    fn take_line(&mut self, no: usize, text: &str, from: Option<Carry>) {
        // An attach notice spliced into the line: the text before it continues on the next line.
        if let Some(at) = line::find_spliced_notice(text) {
            if let Some(Line {
                body: notice @ Body::Attached { .. },
                ..
            }) = text.get(at..).and_then(line::parse_line)
            {
                self.deferred.push(to_static(notice));
                self.understood += 1; // the notice itself
                let prefix = text.get(..at).unwrap_or("");
                let cuts = from.as_ref().map_or(1, |c| c.cuts + 1);
                if prefix.len() <= MAX_CARRY_BYTES && cuts <= MAX_CARRY_CUTS {
                    self.carry = Some(Carry {
                        first_no: no,
                        text: prefix.to_owned(),
                        pieces: Vec::new(),
                        cuts,
                    });
                    return;
                }
                // not a real split any more (crafted input): stop joining
                self.unreadable(no, prefix);
                self.apply_deferred();
                return;
            }
        }
        let parsed = parse(text);
        if parsed.is_none() && text.contains('\x1b') {
            // coloured (`grep --color`, a terminal capture): no line of strace's reads with
            // the escapes in it. A line that is none of strace's without them either is kept
            // unreadable as it came (its escapes shown escaped).
            let plain = strip_ansi(text);
            if parse(&plain).is_some() || looks_like_start(&plain) {
                return self.take_line(no, &plain, from);
            }
        }
        if parsed.is_none() && from.is_none() && is_prompt(text) {
            self.out.prompts += 1;
            return;
        }
        let whole = parsed.as_ref().is_some_and(|l| reads_whole(text, l));
        let may_hold = from.is_none() && text.len() <= MAX_CARRY_BYTES;
        if !whole && may_hold && (parsed.is_some() || looks_like_start(text)) {
            self.carry = Some(Carry {
                first_no: no,
                text: text.to_owned(),
                pieces: Vec::new(),
                cuts: 0,
            });
            return;
        }
        match parsed {
            Some(l) => self.apply_counted(l),
            None => self.unreadable(no, text),
        }
        self.apply_deferred();
    }

    /// A held line whose continuation did not come: taken alone, and the pieces held with it
    /// unreadable.
    pub(super) fn flush(&mut self, c: Carry) {
        let head = c.pieces.first().map_or(c.text.len(), |p| p.1);
        let first = c.text.get(..head).unwrap_or("");
        match parse(first) {
            Some(l) => self.apply_counted(l),
            None => self.unreadable(c.first_no, first),
        }
        for (i, &(no, at)) in c.pieces.iter().enumerate() {
            let end = c.pieces.get(i + 1).map_or(c.text.len(), |p| p.1);
            self.unreadable(no, c.text.get(at..end).unwrap_or(""));
        }
        self.apply_deferred();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ansi_sequences_and_quotes_are_taken_off() {
        let coloured = "\x1b[01;31m\x1b[K123\x1b[m\x1b[K execve(\"/bin/true\", [], 0x0) = 0";
        assert_eq!(
            strip_ansi(coloured),
            "123 execve(\"/bin/true\", [], 0x0) = 0"
        );
        let mut p = Paste::default();
        assert_eq!(
            clean("> > [pid 1] exit(0) = ?", &mut p),
            "[pid 1] exit(0) = ?"
        );
        assert_eq!(clean(">[pid 1] exit(0) = ?", &mut p), "[pid 1] exit(0) = ?");
        // an unquoted log keeps a line's own `>`, and strace's own leading space
        let mut p = Paste::default();
        assert_eq!(clean("1 exit(0) = ?", &mut p), "1 exit(0) = ?");
        assert_eq!(
            clean(" > /lib/libc.so.6(+0x1) [0x1]", &mut p),
            " > /lib/libc.so.6(+0x1) [0x1]"
        );
        // a code block's indentation comes off every line, and only it
        let mut p = Paste::default();
        assert_eq!(clean("$ strace -f x", &mut p), "$ strace -f x");
        assert_eq!(clean("    1 clone(", &mut p), "1 clone(");
        assert_eq!(clean("     <unfinished ...>", &mut p), " <unfinished ...>");
    }

    #[test]
    fn prompts_are_told_from_lines() {
        for p in [
            "$ strace -f -p 1",
            "# strace -f ls",
            "root@node:~# strace -f -e trace=process runc run x",
            "[root@node ~]# strace -p 1",
            "user@host:/tmp$ strace ls",
        ] {
            assert!(is_prompt(p), "{p}");
        }
        for l in ["#12 [pid 1] exit(0) = ?", "1 exit(0) = ?", "$", "a$b c"] {
            assert!(!is_prompt(l), "{l}");
        }
    }

    fn whole(text: &str) -> bool {
        parse(text).is_some_and(|l| reads_whole(text, &l))
    }

    #[test]
    fn a_line_cut_in_its_comment_does_not_read_whole() {
        assert!(!whole("1 execve(\"/x\", [], 0x0) = -1 ENOENT (No such"));
        assert!(whole(
            "1 execve(\"/x\", [], 0x0) = -1 ENOENT (No such file or directory)"
        ));
        assert!(whole("1 exit_group(0) = ?"));
        assert!(whole("1 exit_group(3)               = ?"));
        assert!(whole(
            "--- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED} ---"
        ));
        assert!(whole(
            "1 execve(\"/x\", [], 0x0 /* 1 var */ <unfinished ...>"
        ));
        // a call the importer does not follow is read up to its name: it needs its return
        assert!(!whole("1 unshare(CLONE_NEWNS|CLONE_NEWUTS|CL"));
        assert!(whole("1 unshare(CLONE_NEWNS|CLONE_NEWUTS) = 0"));
        assert!(whole("1 wait4(-1,  <unfinished ...>"));
    }
}
