//! Streaming trace-file writer.

use bytes::{BufMut, BytesMut};
use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::time::Instant;

use super::codec::{encode_event, encode_header, encode_stats, Ctx};
use super::{
    frame_type, Header, StatsRecord, TraceFileError, FLUSH_INTERVAL, FORMAT_VERSION,
    FRAME_HEADER_LEN, FRAME_MAX_EVENTS, FRAME_SYNC, FRAME_TARGET_BYTES, MAGIC, MAX_FRAME_LEN,
    MAX_HEADER_LEN,
};

/// Writes a trace file frame by frame. Memory stays bounded by one frame
/// ([`FRAME_TARGET_BYTES`] plus one event); each sealed frame goes to `out` in one
/// `write_all`, so a process killed at any point leaves only whole frames plus at most one
/// partial one at the tail.
///
/// Call [`TraceWriter::maybe_flush`] periodically (the writer also checks the clock every
/// few hundred events) so events reach the file within [`FLUSH_INTERVAL`]; finish with
/// [`TraceWriter::finish`], which writes the end record.
pub struct TraceWriter<W: Write> {
    out: W,
    frame: BytesMut,
    frame_events: usize,
    ctx: Ctx,
    last_flush: Instant,
    stats: StatsRecord,
    bytes_written: u64,
    since_clock_check: u32,
    /// Number of the next frame sealed.
    frame_number: u32,
    /// Metadata events written (they take no sequence number).
    metadata: u64,
}

impl TraceWriter<File> {
    /// Creates `path` with mode 0600 and writes the header; the file is readable as it grows
    /// (see [`crate::outfile::create_streaming`] for what happens to an existing `path`).
    pub fn create(path: &Path, header: &Header) -> Result<Self, TraceFileError> {
        let file = crate::outfile::create_streaming(path).map_err(TraceFileError::Write)?;
        TraceWriter::new(file, header)
    }
}

impl<W: Write> TraceWriter<W> {
    /// Writes the preamble and header to `out`.
    pub fn new(mut out: W, header: &Header) -> Result<Self, TraceFileError> {
        let mut body = BytesMut::new();
        encode_header(&mut body, header);
        if body.len() as u64 > MAX_HEADER_LEN {
            return Err(TraceFileError::Write(std::io::Error::other(format!(
                "header of {} bytes exceeds the format's {MAX_HEADER_LEN}-byte limit",
                body.len()
            ))));
        }
        let mut pre = BytesMut::with_capacity(super::PREAMBLE_LEN + body.len());
        pre.put_slice(&MAGIC);
        pre.put_u16_le(FORMAT_VERSION);
        pre.put_u16_le(0);
        pre.put_u32_le(body.len() as u32);
        pre.put_u32_le(crc32fast::hash(&body));
        pre.put_slice(&body);
        out.write_all(&pre).map_err(TraceFileError::Write)?;
        out.flush().map_err(TraceFileError::Write)?;
        let mut w = TraceWriter {
            out,
            frame: BytesMut::with_capacity(FRAME_TARGET_BYTES + 4096),
            frame_events: 0,
            ctx: Ctx::default(),
            last_flush: Instant::now(),
            stats: StatsRecord::default(),
            bytes_written: pre.len() as u64,
            since_clock_check: 0,
            frame_number: 0,
            metadata: 0,
        };
        w.start_frame();
        Ok(w)
    }

    fn start_frame(&mut self) {
        self.frame.clear();
        self.frame.put_bytes(0, FRAME_HEADER_LEN);
        self.frame_events = 0;
        self.ctx.reset();
    }

    /// Appends one event; seals the frame when it is full.
    pub fn write_event(&mut self, ev: &crate::Event) -> Result<(), TraceFileError> {
        let before = self.frame.len();
        encode_event(&mut self.frame, &mut self.ctx, ev);
        if (self.frame.len() - FRAME_HEADER_LEN) as u64 > MAX_FRAME_LEN {
            // Too big with what the frame holds already: seal those (which also resets the
            // delta state the failed encode changed), then retry alone.
            let ev_len = self.frame.len() - before;
            self.frame.truncate(before);
            self.seal_or_reset()?;
            encode_event(&mut self.frame, &mut self.ctx, ev);
            let len = self.frame.len() - FRAME_HEADER_LEN;
            if len as u64 > MAX_FRAME_LEN {
                self.start_frame();
                return Err(TraceFileError::EventTooLarge {
                    len: len.max(ev_len),
                    max: MAX_FRAME_LEN,
                });
            }
        }
        self.frame_events += 1;
        self.stats.events += 1;
        // Metadata repeats the seq of the event it was read for: it fills no gap.
        self.metadata += u64::from(ev.kind.is_metadata());
        self.stats.last_seq = self.stats.last_seq.max(ev.seq);
        let kernel_events = self.stats.events - self.metadata;
        self.stats.seq_gaps = self.stats.last_seq.saturating_sub(kernel_events);
        if self.frame.len() >= FRAME_TARGET_BYTES || self.frame_events >= FRAME_MAX_EVENTS {
            self.seal(frame_type::EVENTS)?;
        }
        self.since_clock_check += 1;
        if self.since_clock_check >= 512 {
            self.since_clock_check = 0;
            self.maybe_flush()?;
        }
        Ok(())
    }

    fn seal_or_reset(&mut self) -> Result<(), TraceFileError> {
        if self.frame_events > 0 {
            self.seal(frame_type::EVENTS)
        } else {
            self.start_frame();
            Ok(())
        }
    }

    /// Writes the frame being built (if it holds anything, or is not an event frame) to `out`.
    fn seal(&mut self, kind: u8) -> Result<(), TraceFileError> {
        if kind == frame_type::EVENTS && self.frame_events == 0 {
            return Ok(());
        }
        let payload_len = self.frame.len() - FRAME_HEADER_LEN;
        let crc = crc32fast::hash(&self.frame[FRAME_HEADER_LEN..]);
        let events_before = self.stats.events - self.frame_events as u64;
        let mut head = &mut self.frame[..FRAME_HEADER_LEN];
        head.put_slice(&FRAME_SYNC);
        head.put_u32_le(payload_len as u32);
        head.put_u8(kind);
        head.put_u32_le(self.frame_number);
        head.put_u64_le(events_before);
        head.put_u32_le(crc);
        let head_crc = crc32fast::hash(&self.frame[..FRAME_HEADER_LEN - 4]);
        (&mut self.frame[FRAME_HEADER_LEN - 4..FRAME_HEADER_LEN]).put_u32_le(head_crc);
        self.frame_number = self.frame_number.wrapping_add(1);
        self.out
            .write_all(&self.frame)
            .map_err(TraceFileError::Write)?;
        self.bytes_written += self.frame.len() as u64;
        self.start_frame();
        Ok(())
    }

    fn write_stats_frame(&mut self, kind: u8) -> Result<(), TraceFileError> {
        self.seal(frame_type::EVENTS)?;
        self.stats.boot_ns = super::boot_time_ns().unwrap_or(0);
        let stats = self.stats;
        encode_stats(&mut self.frame, &stats);
        self.seal(kind)
    }

    /// Records the capture's counters (cumulative values) in a stats frame, after the events
    /// written so far. `seq_issued` is 0 when unknown.
    pub fn write_stats(
        &mut self,
        drops: u64,
        seq_issued: u64,
        decode_errors: u64,
    ) -> Result<(), TraceFileError> {
        self.set_counters(drops, seq_issued, decode_errors);
        self.write_stats_frame(frame_type::STATS)?;
        self.flush()
    }

    /// Updates the counters the next stats or end record will carry.
    pub fn set_counters(&mut self, drops: u64, seq_issued: u64, decode_errors: u64) {
        self.stats.drops = drops;
        self.stats.seq_issued = seq_issued;
        self.stats.decode_errors = decode_errors;
    }

    /// Seals the current frame and flushes `out`.
    pub fn flush(&mut self) -> Result<(), TraceFileError> {
        self.seal(frame_type::EVENTS)?;
        self.out.flush().map_err(TraceFileError::Write)?;
        self.last_flush = Instant::now();
        Ok(())
    }

    /// Flushes if [`FLUSH_INTERVAL`] passed since the last flush. Returns whether it did.
    pub fn maybe_flush(&mut self) -> Result<bool, TraceFileError> {
        if self.last_flush.elapsed() >= FLUSH_INTERVAL {
            self.flush()?;
            return Ok(true);
        }
        Ok(false)
    }

    /// What has been written so far (events, highest seq, gaps, the last counters given).
    pub fn stats(&self) -> &StatsRecord {
        &self.stats
    }

    /// Bytes handed to `out` so far (the frame being built not included).
    pub fn bytes_written(&self) -> u64 {
        self.bytes_written
    }

    /// Writes the last events and the end record, flushes, and returns `out`.
    pub fn finish(mut self) -> Result<W, TraceFileError> {
        self.write_stats_frame(frame_type::END)?;
        self.out.flush().map_err(TraceFileError::Write)?;
        Ok(self.out)
    }
}
