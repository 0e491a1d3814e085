//! Streaming trace-file reader.

use bytes::Buf;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use super::codec::{decode_event, decode_header, decode_stats, Ctx, Cur, DecodeError};
use super::{
    frame_type, Header, StatsRecord, TraceFileError, FORMAT_VERSION, FRAME_HEADER_LEN, MAGIC,
    MAX_FRAME_LEN, MAX_HEADER_LEN, PREAMBLE_LEN,
};
use crate::event::Event;

/// One thing read from a trace file, in file order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Record {
    /// An event.
    Event(Event),
    /// Periodic counters.
    Stats(StatsRecord),
    /// The final counters: the recording ended cleanly.
    End(StatsRecord),
}

/// Whether a reader verifies the CRC-32 of the header and of every frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Checksums {
    /// A mismatch is an error (what every command does).
    #[default]
    Verify,
    /// Damaged bytes go on to the decoders, which must still never panic: how the fuzzer and
    /// the replay of its kept crashers read (a random input never has a valid checksum).
    Skip,
}

/// How a file ended, once the reader is exhausted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TailReport {
    /// The end record was read and nothing followed it.
    pub clean_end: bool,
    /// Bytes from the first unusable one to the end of the file (0 for a clean file).
    pub unusable_bytes: u64,
    /// Offset of the first unusable byte, when there was one.
    pub unusable_from: Option<u64>,
    /// The error that stopped reading, as text.
    pub error: Option<String>,
    /// The error was a cut-off file (a recording killed mid-write), not corruption.
    pub truncated: bool,
    /// Whole frames read.
    pub frames: u64,
}

enum State {
    Frames,
    /// An error was returned; nothing more comes.
    Failed,
    /// The end record was read (a clean end unless bytes follow).
    Ended,
    Done,
}

/// Reads a trace file record by record ([`Iterator`] of [`Record`]s; see
/// [`TraceReader::events`] for the events only). Bounded memory: one frame at a time.
///
/// After an error the iterator yields `None`; [`TraceReader::tail`] then tells how many bytes
/// at the end could not be used.
pub struct TraceReader<R: Read> {
    src: R,
    header: Header,
    /// Offset of the next unread byte.
    offset: u64,
    payload: Vec<u8>,
    /// Offset of `payload[0]` in the file.
    payload_offset: u64,
    /// Position in `payload` of the next event of the current events frame.
    pos: usize,
    ctx: Ctx,
    state: State,
    tail: TailReport,
    last_stats: Option<StatsRecord>,
    checksums: Checksums,
}

impl TraceReader<BufReader<File>> {
    /// Opens a file and reads its header.
    pub fn open(path: &Path) -> Result<Self, TraceFileError> {
        let file = File::open(path).map_err(|e| TraceFileError::Io {
            offset: 0,
            error: e,
        })?;
        TraceReader::new(BufReader::with_capacity(256 << 10, file))
    }
}

/// `read_exact` that tells how many bytes were there when the input ended early.
fn read_full(src: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match src.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Reads `len` bytes into `buf`, growing it only as data actually arrives (a forged length
/// never allocates more than the input holds). Returns how many bytes were read.
fn read_payload(src: &mut impl Read, len: u64, buf: &mut Vec<u8>) -> std::io::Result<u64> {
    buf.clear();
    let got = src.take(len).read_to_end(buf)?;
    Ok(got as u64)
}

impl<R: Read> TraceReader<R> {
    /// Reads and checks the preamble and header from `src`.
    pub fn new(src: R) -> Result<Self, TraceFileError> {
        TraceReader::with_checksums(src, Checksums::Verify)
    }

    /// [`TraceReader::new`], verifying checksums or not.
    pub fn with_checksums(mut src: R, checksums: Checksums) -> Result<Self, TraceFileError> {
        let io = |offset| move |e| TraceFileError::Io { offset, error: e };
        let mut pre = [0u8; PREAMBLE_LEN];
        let n = read_full(&mut src, &mut pre).map_err(io(0))?;
        if n < MAGIC.len() || pre[..MAGIC.len()] != MAGIC {
            return Err(TraceFileError::BadMagic {
                found: pre[..n.min(MAGIC.len())].to_vec(),
            });
        }
        if n < PREAMBLE_LEN {
            return Err(TraceFileError::Truncated {
                offset: n as u64,
                what: "the preamble",
                need: PREAMBLE_LEN as u64,
                have: n as u64,
            });
        }
        let mut p = &pre[MAGIC.len()..];
        let version = p.get_u16_le();
        let flags = p.get_u16_le();
        let header_len = u64::from(p.get_u32_le());
        let header_crc = p.get_u32_le();
        if version == 0 || version > FORMAT_VERSION {
            return Err(TraceFileError::UnknownVersion {
                offset: 8,
                found: version,
                supported: FORMAT_VERSION,
            });
        }
        if flags != 0 {
            return Err(TraceFileError::Garbage {
                offset: 10,
                what: "the preamble flags",
                expected: "0 (no flags are defined in format version 1)",
            });
        }
        if header_len > MAX_HEADER_LEN {
            return Err(TraceFileError::ImpossibleLength {
                offset: 12,
                what: "header",
                len: header_len,
                max: MAX_HEADER_LEN,
            });
        }
        let mut body = Vec::new();
        let got = read_payload(&mut src, header_len, &mut body).map_err(io(20))?;
        if got < header_len {
            return Err(TraceFileError::Truncated {
                offset: PREAMBLE_LEN as u64,
                what: "the header",
                need: header_len,
                have: got,
            });
        }
        let computed = crc32fast::hash(&body);
        if computed != header_crc && checksums == Checksums::Verify {
            return Err(TraceFileError::Checksum {
                offset: PREAMBLE_LEN as u64,
                what: "header",
                stored: header_crc,
                computed,
            });
        }
        let header = decode_header(&body, version).map_err(|DecodeError(expected)| {
            TraceFileError::Garbage {
                offset: PREAMBLE_LEN as u64,
                what: "the header",
                expected,
            }
        })?;
        Ok(TraceReader {
            src,
            header,
            offset: PREAMBLE_LEN as u64 + header_len,
            payload: Vec::new(),
            payload_offset: 0,
            pos: 0,
            ctx: Ctx::default(),
            state: State::Frames,
            tail: TailReport::default(),
            last_stats: None,
            checksums,
        })
    }

    /// The header, read when the reader was created.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The latest stats or end record read so far.
    pub fn last_stats(&self) -> Option<&StatsRecord> {
        self.last_stats.as_ref()
    }

    /// How the file ended (meaningful once the iterator returned `None`).
    pub fn tail(&self) -> &TailReport {
        &self.tail
    }

    /// Bytes consumed so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The events only (stats records are kept in [`TraceReader::last_stats`]).
    pub fn events(&mut self) -> Events<'_, R> {
        Events { r: self }
    }

    /// Stops with `err`: counts the bytes from `from` to the end of the input as unusable.
    fn fail(&mut self, from: u64, err: TraceFileError) -> TraceFileError {
        let rest = std::io::copy(&mut self.src, &mut std::io::sink()).unwrap_or(0);
        self.tail.unusable_bytes = self.offset.saturating_sub(from) + rest;
        self.tail.unusable_from = Some(from);
        self.tail.truncated = err.is_truncation();
        self.tail.error = Some(err.to_string());
        self.state = State::Failed;
        // Nothing of a failed frame is ever decoded.
        self.payload.clear();
        self.pos = 0;
        err
    }

    fn next_event_in_frame(&mut self) -> Option<Result<Event, TraceFileError>> {
        if self.pos >= self.payload.len() || !matches!(self.state, State::Frames) {
            return None;
        }
        let mut c = Cur::new(&self.payload[self.pos..]);
        match decode_event(&mut c, &mut self.ctx) {
            Ok(ev) => {
                self.pos = self.payload.len() - c.buf.len();
                Some(Ok(ev))
            }
            Err(DecodeError(expected)) => {
                let at = self.payload_offset + (self.payload.len() - c.buf.len()) as u64;
                let frame_start = self.payload_offset.saturating_sub(FRAME_HEADER_LEN as u64);
                let err = TraceFileError::Garbage {
                    offset: at,
                    what: "an event frame",
                    expected,
                };
                self.pos = self.payload.len();
                Some(Err(self.fail(frame_start, err)))
            }
        }
    }

    /// Reads the next frame header and payload. `Ok(None)` at a clean end of input.
    fn next_frame(&mut self) -> Result<Option<u8>, TraceFileError> {
        let start = self.offset;
        let mut head = [0u8; FRAME_HEADER_LEN];
        let n = read_full(&mut self.src, &mut head).map_err(|e| TraceFileError::Io {
            offset: start,
            error: e,
        })?;
        self.offset += n as u64;
        if n == 0 {
            return Ok(None);
        }
        if n < FRAME_HEADER_LEN {
            return Err(TraceFileError::Truncated {
                offset: start,
                what: "a frame header",
                need: FRAME_HEADER_LEN as u64,
                have: n as u64,
            });
        }
        let mut h = &head[..];
        let len = u64::from(h.get_u32_le());
        let kind = h.get_u8();
        let crc = h.get_u32_le();
        if len > MAX_FRAME_LEN {
            return Err(TraceFileError::ImpossibleLength {
                offset: start,
                what: "frame",
                len,
                max: MAX_FRAME_LEN,
            });
        }
        let known = matches!(
            kind,
            frame_type::EVENTS | frame_type::STATS | frame_type::END
        );
        if !known && kind < 0x80 {
            return Err(TraceFileError::UnknownFrame {
                offset: start + 4,
                kind,
            });
        }
        let got = read_payload(&mut self.src, len, &mut self.payload).map_err(|e| {
            TraceFileError::Io {
                offset: start,
                error: e,
            }
        })?;
        self.offset += got;
        if got < len {
            return Err(TraceFileError::Truncated {
                offset: start,
                what: "a frame",
                need: FRAME_HEADER_LEN as u64 + len,
                have: n as u64 + got,
            });
        }
        let computed = crc32fast::hash(&self.payload);
        if computed != crc && self.checksums == Checksums::Verify {
            return Err(TraceFileError::Checksum {
                offset: start,
                what: "frame",
                stored: crc,
                computed,
            });
        }
        self.payload_offset = start + FRAME_HEADER_LEN as u64;
        self.tail.frames += 1;
        Ok(Some(kind))
    }

    fn next_record(&mut self) -> Option<Result<Record, TraceFileError>> {
        loop {
            match self.state {
                State::Failed | State::Done => return None,
                State::Ended => {
                    let start = self.offset;
                    let mut b = [0u8; 1];
                    return match read_full(&mut self.src, &mut b) {
                        Ok(0) => {
                            self.tail.clean_end = true;
                            self.state = State::Done;
                            None
                        }
                        Ok(_) => {
                            self.offset += 1;
                            let err = TraceFileError::AfterEnd { offset: start };
                            Some(Err(self.fail(start, err)))
                        }
                        Err(e) => {
                            let err = TraceFileError::Io {
                                offset: start,
                                error: e,
                            };
                            Some(Err(self.fail(start, err)))
                        }
                    };
                }
                State::Frames => {}
            }
            if let Some(r) = self.next_event_in_frame() {
                return Some(r.map(Record::Event));
            }
            let start = self.offset;
            let kind = match self.next_frame() {
                Ok(Some(kind)) => kind,
                Ok(None) => {
                    // No end record: a recording that was stopped hard, cut at a frame edge.
                    self.state = State::Done;
                    return None;
                }
                Err(e) => return Some(Err(self.fail(start, e))),
            };
            self.pos = self.payload.len();
            match kind {
                frame_type::EVENTS => {
                    self.pos = 0;
                    self.ctx.reset();
                }
                frame_type::STATS | frame_type::END => {
                    let at = self.payload_offset;
                    match decode_stats(&self.payload) {
                        Ok(s) => {
                            self.last_stats = Some(s);
                            if kind == frame_type::END {
                                self.state = State::Ended;
                                return Some(Ok(Record::End(s)));
                            }
                            return Some(Ok(Record::Stats(s)));
                        }
                        Err(DecodeError(expected)) => {
                            let err = TraceFileError::Garbage {
                                offset: at,
                                what: "a stats frame",
                                expected,
                            };
                            return Some(Err(self.fail(start, err)));
                        }
                    }
                }
                _ => {} // optional frame type from a later writer: skipped
            }
        }
    }
}

impl<R: Read> Iterator for TraceReader<R> {
    type Item = Result<Record, TraceFileError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_record()
    }
}

/// The events of a [`TraceReader`], skipping stats records.
pub struct Events<'a, R: Read> {
    r: &'a mut TraceReader<R>,
}

impl<R: Read> Iterator for Events<'_, R> {
    type Item = Result<Event, TraceFileError>;

    fn next(&mut self) -> Option<Self::Item> {
        // Fast path: the next event of the current frame.
        if let Some(r) = self.r.next_event_in_frame() {
            return Some(r);
        }
        loop {
            match self.r.next_record()? {
                Ok(Record::Event(e)) => return Some(Ok(e)),
                Ok(_) => continue,
                Err(e) => return Some(Err(e)),
            }
        }
    }
}
