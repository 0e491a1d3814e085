//! JSON lines read back: what `tracer trace --format json` and `tracer export --format json`
//! print (one [`Event`] object per line, docs/events.md) as a recording. Streamed a line at a
//! time; each line bounded; a line that is not an event stops the reading with its number.

use std::io::BufRead;

use crate::event::Event;

/// Longest line read: one event's JSON (a trace file's frame is at most 16 MiB too).
pub const MAX_JSON_LINE_BYTES: usize = 16 << 20;

/// Longest part of a parser's message kept in an error (it can quote the input).
const MAX_MESSAGE_CHARS: usize = 160;

/// Why a line of a JSON-lines recording could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum JsonLineError {
    /// The line is not one event's JSON.
    #[error("line {line}: not a tracer event: {message}")]
    NotAnEvent {
        /// 1-based line number.
        line: u64,
        /// What the parser said (escaped, bounded).
        message: String,
    },
    /// The line is longer than [`MAX_JSON_LINE_BYTES`].
    #[error("line {line}: longer than {MAX_JSON_LINE_BYTES} bytes")]
    TooLong {
        /// 1-based line number.
        line: u64,
    },
    /// The last line has no newline and is not a whole event: the writer was stopped mid-line.
    #[error("line {line}: cut short (no newline at the end of the recording)")]
    Cut {
        /// 1-based line number.
        line: u64,
    },
    /// Reading failed.
    #[error("line {line}: {message}")]
    Io {
        /// 1-based line number.
        line: u64,
        /// The OS error.
        message: String,
    },
}

impl JsonLineError {
    /// The recording was cut inside its last line (a writer killed mid-write): the events
    /// before it are whole.
    pub fn is_truncation(&self) -> bool {
        matches!(self, JsonLineError::Cut { .. })
    }
}

/// Does a recording start like JSON lines (its first non-blank byte opens an object)?
/// No strace log line starts with `{`.
pub fn looks_like(prefix: &[u8]) -> bool {
    prefix.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')
}

/// The processes the first event of JSON lines shows and that existed before the recording
/// (a trace's lines carry no /proc snapshot): the one it happens in — the command `trace --
/// CMD` started, `launched` when that first event is its exec, as a trace file's snapshot
/// holds it — and its parent (the tracer, for a command it started), name unknown.
pub fn initial_processes(first: &Event) -> Vec<crate::event::SnapshotProcess> {
    use crate::event::{EventKind, SnapshotProcess};
    let initial = SnapshotProcess {
        pid: first.tgid,
        ppid: first.ppid,
        comm: first.comm.to_string(),
        threads: vec![first.tgid],
        uid: first.uid,
        launched: matches!(
            first.kind,
            EventKind::ExecEnter { .. } | EventKind::Exec { .. }
        ),
        ..Default::default()
    };
    let parent = (first.ppid != 0 && first.ppid != first.tgid).then(|| SnapshotProcess {
        pid: first.ppid,
        threads: vec![first.ppid],
        ..Default::default()
    });
    parent.into_iter().chain([initial]).collect()
}

/// Events read from JSON lines; blank lines are skipped. After an error, nothing more.
pub struct JsonLines<R> {
    src: R,
    line: u64,
    buf: Vec<u8>,
    failed: bool,
}

impl<R: BufRead> JsonLines<R> {
    /// Reads `src` a line at a time.
    pub fn new(src: R) -> Self {
        JsonLines {
            src,
            line: 0,
            buf: Vec::new(),
            failed: false,
        }
    }

    /// One line into `buf` (without its newline), at most [`MAX_JSON_LINE_BYTES`] kept;
    /// `Ok(None)` at the end, else whether it ended with a newline.
    fn read_line(&mut self) -> Result<Option<bool>, JsonLineError> {
        self.buf.clear();
        self.line += 1;
        let line = self.line;
        let limit = MAX_JSON_LINE_BYTES as u64 + 1;
        let n = std::io::Read::take(self.src.by_ref(), limit)
            .read_until(b'\n', &mut self.buf)
            .map_err(|e| JsonLineError::Io {
                line,
                message: e.to_string(),
            })?;
        if n == 0 {
            return Ok(None);
        }
        let newline = self.buf.last() == Some(&b'\n');
        if newline {
            self.buf.pop();
        }
        if self.buf.len() > MAX_JSON_LINE_BYTES {
            return Err(JsonLineError::TooLong { line });
        }
        Ok(Some(newline))
    }

    fn next_event(&mut self) -> Option<Result<Event, JsonLineError>> {
        loop {
            let newline = match self.read_line() {
                Ok(Some(nl)) => nl,
                Ok(None) => return None,
                Err(e) => return Some(Err(e)),
            };
            if self.buf.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let line = self.line;
            return Some(serde_json::from_slice(&self.buf).map_err(|e| {
                if !newline && e.is_eof() {
                    return JsonLineError::Cut { line };
                }
                JsonLineError::NotAnEvent {
                    line,
                    message: parser_message(&e),
                }
            }));
        }
    }
}

/// The parser's message without its position (the column of a line is noise here), escaped
/// and bounded: it can quote a field name or value from the input.
fn parser_message(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let text = match text.rfind(" at line ") {
        Some(i) => &text[..i],
        None => &text,
    };
    let cut: String = text.chars().take(MAX_MESSAGE_CHARS).collect();
    let more = if cut.len() < text.len() { "…" } else { "" };
    format!("{}{more}", crate::escape::escape(&cut))
}

impl<R: BufRead> Iterator for JsonLines<R> {
    type Item = Result<Event, JsonLineError>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let r = self.next_event();
        self.failed = matches!(r, Some(Err(_)));
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kind of event, each with its optional fields set, built with the test kit.
    pub(crate) fn one_of_each_kind() -> Vec<Event> {
        let evs = crate::synth::every_kind();
        let names: std::collections::BTreeSet<&str> = evs.iter().map(|e| e.kind.name()).collect();
        assert_eq!(
            names.len(),
            crate::event::Kind::ALL.len(),
            "synth::every_kind misses a kind: {names:?}"
        );
        evs
    }

    fn read(text: &str) -> Vec<Result<Event, JsonLineError>> {
        JsonLines::new(text.as_bytes()).collect()
    }

    #[test]
    fn every_kind_reads_back_as_written() {
        let evs = one_of_each_kind();
        let mut out = Vec::new();
        let clock = crate::clock::Clock::boot(1_764_747_609_000_000_000, 1);
        crate::export::write_jsonl(evs.clone().into_iter(), clock, &mut out).unwrap();
        let back: Vec<Event> = JsonLines::new(&out[..]).collect::<Result<_, _>>().unwrap();
        assert_eq!(back, evs);
    }

    #[test]
    fn unknown_fields_and_blank_lines_are_passed_over() {
        let ev = crate::synth::exit(42, 256);
        let mut v = serde_json::to_value(&ev).unwrap();
        v["time"] = "2026-12-02T10:00:00.000000001Z".into();
        v["pod"] = serde_json::json!({"name": "web"});
        let text = format!("\n  \n{v}\n\n");
        let got: Vec<Event> = read(&text).into_iter().collect::<Result<_, _>>().unwrap();
        assert_eq!(got, vec![ev]);
    }

    #[test]
    fn a_bad_line_is_one_error_with_its_number_and_ends_the_reading() {
        let good = serde_json::to_string(&crate::synth::exit(42, 256)).unwrap();
        let cases = [
            ("{\"seq\":1}", "missing field"),
            ("{\"seq\":\"x\"}", "invalid type"),
            ("{\"seq\":1", "EOF while parsing"),
            ("not json", "expected"),
            (
                &good.replace("task_exit", "task_exploded\\u001b[2J"),
                "unknown variant `task_exploded",
            ),
            (&good.replace("\"tid\":42", "\"tid\":-1"), "invalid value"),
        ];
        for (bad, says) in cases {
            let text = format!("{good}\n{bad}\n{good}\n");
            let got = read(&text);
            assert_eq!(got.len(), 2, "{bad}: {got:?}");
            let err = got[1].as_ref().unwrap_err();
            let msg = err.to_string();
            assert!(msg.starts_with("line 2: not a tracer event: "), "{msg}");
            assert!(msg.contains(says), "{bad}: {msg}");
            assert!(!msg.contains('\u{1b}') && !msg.contains('\n'), "{msg}");
            assert!(!err.is_truncation());
        }
    }

    #[test]
    fn a_cut_last_line_is_a_truncation_and_a_long_line_an_error() {
        let good = serde_json::to_string(&crate::synth::exit(42, 256)).unwrap();
        let got = read(&format!("{good}\n{}", &good[..good.len() / 2]));
        assert_eq!(got.len(), 2);
        assert_eq!(got[1], Err(JsonLineError::Cut { line: 2 }));
        // Cut with its newline: a damaged line, not a cut recording.
        let got = read(&format!("{good}\n{}\n", &good[..good.len() / 2]));
        assert!(matches!(
            got[1],
            Err(JsonLineError::NotAnEvent { line: 2, .. })
        ));
        let long = format!("{good}\n{}\n", " ".repeat(MAX_JSON_LINE_BYTES + 1));
        let got = read(&long);
        assert_eq!(got[1], Err(JsonLineError::TooLong { line: 2 }));
    }

    #[test]
    fn json_lines_are_told_by_their_first_byte() {
        assert!(looks_like(b"\n  {\"seq\":1"));
        assert!(!looks_like(b"1234 execve(\"/bin/true\")"));
        assert!(!looks_like(b"[pid 1] {"));
        assert!(!looks_like(b""));
    }
}
