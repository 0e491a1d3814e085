//! Streaming trace-file reader.

use bytes::Buf;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use super::codec::{decode_event, decode_header, decode_stats, Ctx, Cur, DecodeError};
use super::{
    frame_type, Header, StatsRecord, TraceFileError, FORMAT_VERSION, FRAMED_VERSION,
    FRAME_HEADER_LEN, FRAME_HEADER_LEN_V1, FRAME_SYNC, MAGIC, MAX_FRAME_LEN, MAX_HEADER_LEN,
    PREAMBLE_LEN,
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

/// Bytes the reader skipped to get from damage to the next good frame (format version 2).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Damage {
    /// Offset of the first byte skipped.
    pub offset: u64,
    /// Bytes skipped.
    pub bytes: u64,
    /// Frames lost, from the frame numbers (`None` when the damage runs to the end of the file).
    pub frames: Option<u64>,
    /// Events lost, from the next good frame's count of events before it (`None`: unknown).
    pub events: Option<u64>,
    /// What was wrong at `offset` (the first problem of the run).
    pub what: String,
}

impl std::fmt::Display for Damage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "byte {}: {} bytes skipped", self.offset, self.bytes)?;
        match (self.frames, self.events) {
            (Some(fr), Some(ev)) => write!(f, " ({fr} frames, {ev} events lost)")?,
            (Some(fr), None) => write!(f, " ({fr} frames lost)")?,
            _ => f.write_str(" (to the end of the file)")?,
        }
        write!(f, ": {}", self.what)
    }
}

/// How many [`Damage`] runs [`TailReport::damage`] keeps (all are counted).
pub const MAX_KEPT_DAMAGE: usize = 32;

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
    /// Events delivered.
    pub events: u64,
    /// Damaged stretches skipped before a good frame (version 2 resynchronizes at the next
    /// frame marker), the first [`MAX_KEPT_DAMAGE`].
    pub damage: Vec<Damage>,
    /// Damaged stretches skipped, all of them.
    pub damage_count: u64,
    /// Bytes skipped in them.
    pub skipped_bytes: u64,
    /// Frames lost in them (known from the frame numbers of the good frames after them).
    pub skipped_frames: u64,
    /// Events lost in them (known from the good frames after them).
    pub skipped_events: u64,
    /// Frames whose number was already read with the same bytes (a duplicated copy): skipped,
    /// not delivered twice.
    pub duplicate_frames: u64,
    /// Frames whose number was already read with other bytes (or too long ago to compare):
    /// someone wrote frames under numbers that are not theirs. Skipped; see
    /// [`TraceReader`] for the copy read first.
    pub forged_frames: u64,
    /// The end record's count of events written, when it was read.
    pub end_events: Option<u64>,
}

impl TailReport {
    /// Frames were skipped, duplicated, or the end record's count disagrees with what was read.
    pub fn damaged(&self) -> bool {
        self.damage_count > 0
            || self.duplicate_frames > 0
            || self.forged_frames > 0
            || self.count_disagrees()
    }

    /// Adds what `other` (another file read after this one: a NATS stream's next segment)
    /// skipped to this report's damage and frame counts, so that its warnings tell both.
    pub fn absorb_damage(&mut self, other: &TailReport) {
        let room = MAX_KEPT_DAMAGE.saturating_sub(self.damage.len());
        self.damage.extend(other.damage.iter().take(room).cloned());
        self.damage_count += other.damage_count;
        self.skipped_bytes = self.skipped_bytes.saturating_add(other.skipped_bytes);
        self.skipped_frames = self.skipped_frames.saturating_add(other.skipped_frames);
        self.skipped_events = self.skipped_events.saturating_add(other.skipped_events);
        self.duplicate_frames += other.duplicate_frames;
        self.forged_frames += other.forged_frames;
    }

    /// The end record counts a different number of events than were read.
    pub fn count_disagrees(&self) -> bool {
        self.end_events.is_some_and(|n| n != self.events)
    }

    /// One line per problem, for people (empty for a clean file).
    pub fn warnings(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .damage
            .iter()
            .map(|d| format!("damaged: {d}"))
            .collect();
        if self.damage_count > self.damage.len() as u64 {
            out.push(format!(
                "damaged: {} more damaged stretches not listed",
                self.damage_count - self.damage.len() as u64
            ));
        }
        if self.damage_count > 0 {
            out.push(format!(
                "damage skipped in all: {} bytes, {} frames, {} events (known)",
                self.skipped_bytes, self.skipped_frames, self.skipped_events
            ));
        }
        if self.duplicate_frames > 0 {
            out.push(format!(
                "{} duplicated frames skipped (their events were already read)",
                self.duplicate_frames
            ));
        }
        if self.forged_frames > 0 {
            out.push(format!(
                "{} frames forged: their number was already read with other bytes (someone else wrote \
                 frames under this recording's numbers); not read, and the first copy read under \
                 each such number may be forged too",
                self.forged_frames
            ));
        }
        if let (Some(n), true) = (self.end_events, self.count_disagrees()) {
            out.push(format!(
                "the end record counts {n} events written, {} were read",
                self.events
            ));
        }
        out
    }
}

/// A damaged stretch being skipped: where it started and why.
struct Skipping {
    from: u64,
    what: String,
}

/// The input with bytes pushed back (resynchronization rereads what a bad frame header took).
struct Src<R> {
    inner: R,
    back: Vec<u8>,
    back_pos: usize,
}

impl<R: Read> Src<R> {
    /// Makes `bytes` the next ones read, before anything not yet read.
    fn unread(&mut self, bytes: &[u8]) {
        let mut v = Vec::with_capacity(bytes.len() + self.back.len() - self.back_pos);
        v.extend_from_slice(bytes);
        v.extend_from_slice(&self.back[self.back_pos..]);
        self.back = v;
        self.back_pos = 0;
    }
}

impl<R: Read> Read for Src<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.back_pos < self.back.len() {
            let n = buf.len().min(self.back.len() - self.back_pos);
            buf[..n].copy_from_slice(&self.back[self.back_pos..self.back_pos + n]);
            self.back_pos += n;
            if self.back_pos == self.back.len() {
                self.back.clear();
                self.back_pos = 0;
            }
            return Ok(n);
        }
        self.inner.read(buf)
    }
}

/// A frame header, checked.
struct FrameHead {
    len: u64,
    kind: u8,
    /// Version 2: frame number and events written before the frame.
    number: Option<(u32, u64)>,
    crc: u32,
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
    src: Src<R>,
    header: Header,
    version: u16,
    /// Version 2: the number the next frame should have.
    next_frame: u32,
    /// A damaged stretch being skipped.
    skipping: Option<Skipping>,
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
    /// Digests of the frames read last, to tell a duplicate from a forgery.
    seen: FrameDigests,
}

/// How many frames' digests a reader keeps: a duplicate comes right after its original (a
/// retried write or publish), so older numbers read again are not compared but counted as
/// forged. 4096 × 12 bytes.
const KEPT_DIGESTS: usize = 4096;

/// Digests of the last [`KEPT_DIGESTS`] frames by number. Keyed SipHash with a key of this
/// process (`RandomState`): a writer who cannot see the key cannot make other bytes digest
/// alike, as it could with the frame's CRC-32.
struct FrameDigests {
    key: std::collections::hash_map::RandomState,
    by_number: std::collections::HashMap<u32, u64>,
    order: std::collections::VecDeque<u32>,
}

impl FrameDigests {
    fn new() -> FrameDigests {
        FrameDigests {
            key: Default::default(),
            by_number: Default::default(),
            order: Default::default(),
        }
    }

    fn digest(&self, kind: u8, before: u64, payload: &[u8]) -> u64 {
        use std::hash::{BuildHasher, Hasher};
        let mut h = self.key.build_hasher();
        h.write_u8(kind);
        h.write_u64(before);
        h.write(payload);
        h.finish()
    }

    /// Remembers frame `number`'s digest, forgetting the oldest past [`KEPT_DIGESTS`].
    fn keep(&mut self, number: u32, digest: u64) {
        if self.by_number.insert(number, digest).is_none() {
            self.order.push_back(number);
        }
        while self.order.len() > KEPT_DIGESTS {
            if let Some(old) = self.order.pop_front() {
                self.by_number.remove(&old);
            }
        }
    }

    /// Whether frame `number` was read with this very digest (a harmless duplicate).
    fn same(&self, number: u32, digest: u64) -> bool {
        self.by_number.get(&number) == Some(&digest)
    }
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

/// What the preamble says: the format version and the header's length and checksum.
struct Preamble {
    version: u16,
    header_len: u64,
    header_crc: u32,
}

/// Reads and checks the preamble: the magic, a known version, no flags, a header length
/// within bounds.
fn read_preamble(src: &mut impl Read) -> Result<Preamble, TraceFileError> {
    let mut pre = [0u8; PREAMBLE_LEN];
    let n = read_full(src, &mut pre).map_err(|e| TraceFileError::Io {
        offset: 0,
        error: e,
    })?;
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
    Ok(Preamble {
        version,
        header_len,
        header_crc,
    })
}

impl<R: Read> TraceReader<R> {
    /// Reads and checks the preamble and header from `src`.
    pub fn new(src: R) -> Result<Self, TraceFileError> {
        TraceReader::with_checksums(src, Checksums::Verify)
    }

    /// [`TraceReader::new`], verifying checksums or not.
    pub fn with_checksums(mut src: R, checksums: Checksums) -> Result<Self, TraceFileError> {
        let io = |offset| move |e| TraceFileError::Io { offset, error: e };
        let Preamble {
            version,
            header_len,
            header_crc,
        } = read_preamble(&mut src)?;
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
            src: Src {
                inner: src,
                back: Vec::new(),
                back_pos: 0,
            },
            header,
            version,
            next_frame: 0,
            skipping: None,
            offset: PREAMBLE_LEN as u64 + header_len,
            payload: Vec::new(),
            payload_offset: 0,
            pos: 0,
            ctx: Ctx::for_version(version),
            state: State::Frames,
            tail: TailReport::default(),
            last_stats: None,
            checksums,
            seen: FrameDigests::new(),
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

    /// Stops with `err`: counts the bytes from `from` (or from the damaged stretch being
    /// skipped) to the end of the input as unusable.
    fn fail(&mut self, from: u64, err: TraceFileError) -> TraceFileError {
        let from = self.skipping.take().map_or(from, |sk| sk.from.min(from));
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

    /// Version 2 and later: frames carry a marker, a number and a header checksum.
    fn framed(&self) -> bool {
        self.version >= FRAMED_VERSION
    }

    fn frame_header_len(&self) -> usize {
        if self.framed() {
            FRAME_HEADER_LEN
        } else {
            FRAME_HEADER_LEN_V1
        }
    }

    fn next_event_in_frame(&mut self) -> Option<Result<Event, TraceFileError>> {
        if self.pos >= self.payload.len() || !matches!(self.state, State::Frames) {
            return None;
        }
        let mut c = Cur::new(&self.payload[self.pos..]);
        match decode_event(&mut c, &mut self.ctx) {
            Ok(ev) => {
                self.pos = self.payload.len() - c.buf.len();
                self.tail.events += 1;
                Some(Ok(ev))
            }
            Err(DecodeError(expected)) => {
                let at = self.payload_offset + (self.payload.len() - c.buf.len()) as u64;
                let frame_start = self
                    .payload_offset
                    .saturating_sub(self.frame_header_len() as u64);
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

    /// Checks a frame header read at `start`.
    fn parse_head(&self, start: u64, head: &[u8]) -> Result<FrameHead, TraceFileError> {
        let mut h = head;
        let mut number = None;
        if self.framed() {
            if h[..FRAME_SYNC.len()] != FRAME_SYNC {
                return Err(TraceFileError::Garbage {
                    offset: start,
                    what: "a frame header",
                    expected: "the frame marker",
                });
            }
            let (body, stored) = head.split_at(FRAME_HEADER_LEN - 4);
            let stored = u32::from_le_bytes([stored[0], stored[1], stored[2], stored[3]]);
            let computed = crc32fast::hash(body);
            if computed != stored && self.checksums == Checksums::Verify {
                return Err(TraceFileError::Checksum {
                    offset: start,
                    what: "frame header",
                    stored,
                    computed,
                });
            }
            h.advance(FRAME_SYNC.len());
        }
        let len = u64::from(h.get_u32_le());
        let kind = h.get_u8();
        if self.framed() {
            number = Some((h.get_u32_le(), h.get_u64_le()));
        }
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
                offset: start + 4 + if self.framed() { 4 } else { 0 },
                kind,
            });
        }
        Ok(FrameHead {
            len,
            kind,
            number,
            crc,
        })
    }

    /// A damaged frame at `start`: remembers where the damaged stretch began (unless one is
    /// being skipped already) and positions the input at the next frame marker after `start`,
    /// or at the end of the input. `taken` are the bytes read from `start` on.
    fn resync(&mut self, start: u64, taken: &[u8], what: String) -> Result<(), TraceFileError> {
        if self.skipping.is_none() {
            self.skipping = Some(Skipping { from: start, what });
        }
        self.src.unread(&taken[1..]);
        self.offset = start + 1;
        let mut window = [0u8; FRAME_SYNC.len()];
        let mut seen = 0usize;
        loop {
            let mut b = [0u8; 1];
            let n = read_full(&mut self.src, &mut b).map_err(|e| TraceFileError::Io {
                offset: self.offset,
                error: e,
            })?;
            if n == 0 {
                return Ok(());
            }
            self.offset += 1;
            window.rotate_left(1);
            window[FRAME_SYNC.len() - 1] = b[0];
            seen += 1;
            if seen >= FRAME_SYNC.len() && window == FRAME_SYNC {
                self.src.unread(&FRAME_SYNC);
                self.offset -= FRAME_SYNC.len() as u64;
                return Ok(());
            }
        }
    }

    /// A good version-2 frame of `kind` numbered `number` with `before` events before it, at
    /// `start` (its payload read): whether to deliver it (a number not read yet), closing the
    /// damaged stretch it ends. A number read again is a duplicate when its bytes are the
    /// same, else a forgery (frame numbers are hostile: the writer may not be the one who
    /// wrote the frames before).
    fn accept_numbered(&mut self, start: u64, kind: u8, number: u32, before: u64) -> bool {
        let digest = self.seen.digest(kind, before, &self.payload);
        if number < self.next_frame {
            if self.seen.same(number, digest) {
                self.tail.duplicate_frames += 1;
            } else {
                self.tail.forged_frames += 1;
            }
            return false;
        }
        self.seen.keep(number, digest);
        let frames = u64::from(number - self.next_frame);
        let events = before.saturating_sub(self.tail.events);
        let sk = self.skipping.take();
        if sk.is_some() || frames > 0 {
            let (from, what) = sk.map_or_else(
                || {
                    (
                        start,
                        format!("frames {} to {} missing", self.next_frame, number - 1),
                    )
                },
                |sk| (sk.from, sk.what),
            );
            // A hostile count of events before the frame can be anything: saturate.
            self.tail.damage_count += 1;
            self.tail.skipped_bytes = self.tail.skipped_bytes.saturating_add(start - from);
            self.tail.skipped_frames = self.tail.skipped_frames.saturating_add(frames);
            self.tail.skipped_events = self.tail.skipped_events.saturating_add(events);
            if self.tail.damage.len() < MAX_KEPT_DAMAGE {
                self.tail.damage.push(Damage {
                    offset: from,
                    bytes: start - from,
                    frames: Some(frames),
                    events: Some(events),
                    what,
                });
            }
        }
        self.next_frame = number.saturating_add(1);
        true
    }

    /// Reads the payload of the frame at `start` whose header (`hlen` bytes) is `h`; false
    /// when its checksum fails in version 2 (the frame is then skipped whole: its header, and
    /// so its length, is good).
    fn read_frame_payload(
        &mut self,
        start: u64,
        hlen: u64,
        h: &FrameHead,
    ) -> Result<bool, TraceFileError> {
        let got = read_payload(&mut self.src, h.len, &mut self.payload).map_err(|e| {
            TraceFileError::Io {
                offset: start,
                error: e,
            }
        })?;
        self.offset += got;
        if got < h.len {
            return Err(TraceFileError::Truncated {
                offset: start,
                what: "a frame",
                need: hlen + h.len,
                have: hlen + got,
            });
        }
        let computed = crc32fast::hash(&self.payload);
        if computed == h.crc || self.checksums == Checksums::Skip {
            return Ok(true);
        }
        let err = TraceFileError::Checksum {
            offset: start,
            what: "frame",
            stored: h.crc,
            computed,
        };
        if !self.framed() {
            return Err(err);
        }
        if self.skipping.is_none() {
            self.skipping = Some(Skipping {
                from: start,
                what: err.to_string(),
            });
        }
        Ok(false)
    }

    /// Reads the next good frame header and payload. `Ok(None)` at the end of input. Version 2
    /// skips damaged frames (see [`TailReport::damage`]); version 1 stops at the first.
    fn next_frame(&mut self) -> Result<Option<u8>, TraceFileError> {
        loop {
            let start = self.offset;
            let hlen = self.frame_header_len();
            let mut head_buf = [0u8; FRAME_HEADER_LEN];
            let head = &mut head_buf[..hlen];
            let n = read_full(&mut self.src, head).map_err(|e| TraceFileError::Io {
                offset: start,
                error: e,
            })?;
            self.offset += n as u64;
            if n == 0 {
                return Ok(None);
            }
            if n < hlen {
                return Err(TraceFileError::Truncated {
                    offset: start,
                    what: "a frame header",
                    need: hlen as u64,
                    have: n as u64,
                });
            }
            let h = match self.parse_head(start, head) {
                Ok(h) => h,
                Err(e) if self.framed() => {
                    self.resync(start, &head_buf[..hlen], e.to_string())?;
                    continue;
                }
                Err(e) => return Err(e),
            };
            if !self.read_frame_payload(start, hlen as u64, &h)? {
                continue;
            }
            if let Some((number, before)) = h.number {
                if !self.accept_numbered(start, h.kind, number, before) {
                    continue;
                }
            }
            self.payload_offset = start + hlen as u64;
            self.tail.frames += 1;
            return Ok(Some(h.kind));
        }
    }

    /// The input ended: a damaged stretch being skipped is the unusable tail.
    fn ended_without_end_record(&mut self) {
        if let Some(sk) = self.skipping.take() {
            self.tail.unusable_bytes = self.offset - sk.from;
            self.tail.unusable_from = Some(sk.from);
            self.tail.error = Some(sk.what);
        }
        self.state = State::Done;
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
                    // No end record: a recording that was stopped hard, cut at a frame edge,
                    // or damage up to the end.
                    self.ended_without_end_record();
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
                                self.tail.end_events = Some(s.events);
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
