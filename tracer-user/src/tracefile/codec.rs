//! Binary encoding of the header and of events (see docs/trace-format.md).
//!
//! Primitives: LEB128 varints (u64, at most 10 bytes), zigzag for signed values, strings as
//! varint length + UTF-8 bytes. Decoding works on a byte slice that holds one whole frame
//! (or the whole header), so every length is checked against what is actually there before
//! anything is allocated.

use bytes::{Buf, BufMut};

use crate::event::{
    CapturedStr, CloneFlags, Comm, Event, EventKind, ExeFile, ExecCred, Kind, OomInfo, PidNs,
    PrctlShown, SignalInfo, SignalResult, Syscall, MAX_SHOWN_ARGS,
};

use super::{CaptureMode, Header, SnapshotEntry, StatsRecord};

/// Why a frame or header body could not be decoded (turned into a
/// [`super::TraceFileError::Garbage`] with the byte offset by the reader).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DecodeError(pub &'static str);

pub(crate) type DResult<T> = Result<T, DecodeError>;

// ---------------------------------------------------------------- primitives

#[inline]
pub(crate) fn put_varint(b: &mut impl BufMut, mut v: u64) {
    while v >= 0x80 {
        b.put_u8((v as u8) | 0x80);
        v >>= 7;
    }
    b.put_u8(v as u8);
}

#[inline]
fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

#[inline]
fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

#[inline]
pub(crate) fn put_ivarint(b: &mut impl BufMut, v: i64) {
    put_varint(b, zigzag(v));
}

pub(crate) fn put_str(b: &mut impl BufMut, s: &str) {
    put_varint(b, s.len() as u64);
    b.put_slice(s.as_bytes());
}

fn put_strs(b: &mut impl BufMut, v: &[String]) {
    put_varint(b, v.len() as u64);
    for s in v {
        put_str(b, s);
    }
}

/// A cursor over one frame's payload.
pub(crate) struct Cur<'a> {
    pub buf: &'a [u8],
}

impl<'a> Cur<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Cur { buf }
    }

    #[inline]
    pub fn u8(&mut self, what: &'static str) -> DResult<u8> {
        if self.buf.is_empty() {
            return Err(DecodeError(what));
        }
        Ok(self.buf.get_u8())
    }

    /// On error the cursor stays at the start of the item, so the reader can name its offset.
    #[inline]
    pub fn restoring<T>(&mut self, f: impl FnOnce(&mut Self) -> DResult<T>) -> DResult<T> {
        let save = self.buf;
        let r = f(self);
        if r.is_err() {
            self.buf = save;
        }
        r
    }

    #[inline]
    pub fn varint(&mut self, what: &'static str) -> DResult<u64> {
        self.restoring(|c| c.varint_raw(what))
    }

    #[inline]
    fn varint_raw(&mut self, what: &'static str) -> DResult<u64> {
        let mut v: u64 = 0;
        for i in 0..10 {
            let Some((&b, rest)) = self.buf.split_first() else {
                return Err(DecodeError(what));
            };
            self.buf = rest;
            if i == 9 && b > 1 {
                return Err(DecodeError(what));
            }
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(DecodeError(what))
    }

    #[inline]
    pub fn u32v(&mut self, what: &'static str) -> DResult<u32> {
        self.restoring(|c| u32::try_from(c.varint_raw(what)?).map_err(|_| DecodeError(what)))
    }

    #[inline]
    pub fn ivarint(&mut self, what: &'static str) -> DResult<i64> {
        Ok(unzigzag(self.varint(what)?))
    }

    pub fn i32v(&mut self, what: &'static str) -> DResult<i32> {
        self.restoring(|c| i32::try_from(c.ivarint(what)?).map_err(|_| DecodeError(what)))
    }

    pub fn bytes(&mut self, n: usize, what: &'static str) -> DResult<&'a [u8]> {
        if n > self.buf.len() {
            return Err(DecodeError(what));
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(head)
    }

    /// A length-prefixed UTF-8 string; the length is checked against the bytes left first.
    pub fn string(&mut self, what: &'static str) -> DResult<String> {
        self.restoring(|c| c.string_raw(what))
    }

    fn string_raw(&mut self, what: &'static str) -> DResult<String> {
        let n = self.varint(what)?;
        let n = usize::try_from(n).map_err(|_| DecodeError(what))?;
        let raw = self.bytes(n, what)?;
        match std::str::from_utf8(raw) {
            Ok(s) => Ok(s.to_owned()),
            Err(_) => Err(DecodeError(what)),
        }
    }

    /// A count of items that each take at least `min_item_bytes`: it cannot exceed what is left,
    /// so a forged count never causes a large allocation.
    pub fn count(&mut self, min_item_bytes: usize, what: &'static str) -> DResult<usize> {
        self.restoring(|c| c.count_raw(min_item_bytes, what))
    }

    fn count_raw(&mut self, min_item_bytes: usize, what: &'static str) -> DResult<usize> {
        let n = self.varint(what)?;
        let n = usize::try_from(n).map_err(|_| DecodeError(what))?;
        if n.saturating_mul(min_item_bytes.max(1)) > self.buf.len() {
            return Err(DecodeError(what));
        }
        Ok(n)
    }

    pub fn strings(&mut self, what: &'static str) -> DResult<Vec<String>> {
        let n = self.count(1, what)?;
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            v.push(self.string(what)?);
        }
        Ok(v)
    }

    fn u32s(&mut self, what: &'static str) -> DResult<Vec<u32>> {
        let n = self.count(1, what)?;
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            v.push(self.u32v(what)?);
        }
        Ok(v)
    }
}

// ---------------------------------------------------------------- header

const MODE_UNKNOWN: u8 = 0;
const MODE_PID: u8 = 1;
const MODE_ALL: u8 = 2;
const MODE_COMMAND: u8 = 3;
const MODE_IMPORT: u8 = 4;

pub(crate) fn encode_header(b: &mut impl BufMut, h: &Header) {
    put_str(b, &h.tool_version);
    put_varint(b, h.start_wall_ns);
    put_varint(b, h.start_boot_ns);
    put_str(b, &h.hostname);
    put_str(b, &h.kernel_release);
    match &h.mode {
        CaptureMode::Unknown => b.put_u8(MODE_UNKNOWN),
        CaptureMode::Pid(p) => {
            b.put_u8(MODE_PID);
            put_varint(b, u64::from(*p));
        }
        CaptureMode::All => b.put_u8(MODE_ALL),
        CaptureMode::Command(argv) => {
            b.put_u8(MODE_COMMAND);
            put_strs(b, argv);
        }
        CaptureMode::Import { format, source } => {
            b.put_u8(MODE_IMPORT);
            put_str(b, format);
            put_str(b, source);
        }
    }
    put_varint(b, h.snapshot.len() as u64);
    for p in &h.snapshot {
        put_varint(b, u64::from(p.pid));
        put_varint(b, u64::from(p.ppid));
        put_str(b, &p.comm);
        put_str(b, &p.exe);
        put_strs(b, &p.argv);
        put_varint(b, p.threads.len() as u64);
        for &t in &p.threads {
            put_varint(b, u64::from(t));
        }
    }
    put_varint(b, h.layouts.len() as u64);
    for (name, text) in &h.layouts {
        put_str(b, name);
        put_str(b, text);
    }
    put_varint(b, h.extra.len() as u64);
    for (k, v) in &h.extra {
        put_str(b, k);
        put_str(b, v);
    }
    // Version 2, after everything version 1 had: per snapshot process a marker (1: its pid
    // namespace follows, 2: the tracer launched it, 4: its cgroup follows), then those.
    for p in &h.snapshot {
        let marker = u8::from(p.ns.is_some())
            | (u8::from(p.launched) << 1)
            | (u8::from(p.cgroup.is_some()) << 2);
        b.put_u8(marker);
        if let Some(ns) = &p.ns {
            put_pidns_fields(b, ns);
        }
        if let Some(cg) = &p.cgroup {
            put_str(b, cg);
        }
    }
    // Version 4, after everything version 2 had: per snapshot process its real uid, a marker
    // (1: its credentials follow), then those.
    for p in &h.snapshot {
        put_varint(b, u64::from(p.uid));
        b.put_u8(u8::from(p.cred.is_some()));
        if let Some(cred) = &p.cred {
            put_cred(b, cred);
        }
    }
}

/// An exec's credentials: euid, fsuid, the user and pid namespaces' levels, the mount
/// namespace, a marker (1: it is the host's, 2: the executable follows, 4 (version 6): the
/// program it is follows), then the executable's device, inode, owner, mode and links, then
/// the program's byte.
fn put_cred(b: &mut impl BufMut, c: &ExecCred) {
    for v in [c.euid, c.fsuid, c.userns_level, c.pidns_level, c.mnt_ns] {
        put_varint(b, u64::from(v));
    }
    let marker = u8::from(c.host_mnt)
        | (u8::from(c.exe.is_some()) << 1)
        | (u8::from(c.program.is_some()) << 2);
    b.put_u8(marker);
    if let Some(x) = &c.exe {
        put_varint(b, x.dev);
        put_varint(b, x.ino);
        for v in [x.uid, x.mode, x.nlink] {
            put_varint(b, u64::from(v));
        }
    }
    if let Some(p) = c.program {
        b.put_u8(p.code());
    }
}

/// The format version that added an exec's program to its credentials.
pub(crate) const CRED_PROGRAM_SINCE: u16 = 6;

fn get_cred(c: &mut Cur<'_>, version: u16) -> DResult<ExecCred> {
    let euid = c.u32v("exec euid")?;
    let fsuid = c.u32v("exec fsuid")?;
    let userns_level = c.u32v("exec user namespace level")?;
    let pidns_level = c.u32v("exec pid namespace level")?;
    let mnt_ns = c.u32v("exec mount namespace")?;
    let marker = match version >= CRED_PROGRAM_SINCE {
        true => get_small(c, 7, "an exec credentials marker (0-7)")?,
        false => get_small(c, 3, "an exec credentials marker (0-3)")?,
    };
    let exe = if marker & 2 != 0 {
        Some(ExeFile {
            dev: c.varint("executable device")?,
            ino: c.varint("executable inode")?,
            uid: c.u32v("executable owner")?,
            mode: c.u32v("executable mode")?,
            nlink: c.u32v("executable link count")?,
        })
    } else {
        None
    };
    let program = if marker & 4 != 0 {
        let last = crate::event::program::Program::ALL.len() as u8 - 1;
        let code = get_small(c, last, "an executable's program (0-9)")?;
        crate::event::program::Program::from_code(code)
    } else {
        None
    };
    Ok(ExecCred {
        euid,
        fsuid,
        userns_level,
        pidns_level,
        mnt_ns,
        host_mnt: marker & 1 != 0,
        exe,
        program,
    })
}

fn put_pidns_fields(b: &mut impl BufMut, ns: &PidNs) {
    put_varint(b, ns.inum);
    put_varint(b, u64::from(ns.level));
    put_varint(b, u64::from(ns.ns_pid));
}

fn get_pidns_fields(c: &mut Cur<'_>) -> DResult<PidNs> {
    Ok(PidNs {
        inum: c.varint("pid namespace inode")?,
        level: c.u32v("pid namespace level")?,
        ns_pid: c.u32v("pid in its namespace")?,
    })
}

/// Decodes a header body. Bytes after the known fields are ignored (room for additions
/// within a format version).
pub(crate) fn decode_header(buf: &[u8], format_version: u16) -> DResult<Header> {
    let mut c = Cur::new(buf);
    let tool_version = c.string("tool version string")?;
    let start_wall_ns = c.varint("capture start (wall clock)")?;
    let start_boot_ns = c.varint("capture start (boot time)")?;
    let hostname = c.string("host name string")?;
    let kernel_release = c.string("kernel release string")?;
    let mode = get_mode(&mut c)?;
    let mut snapshot = get_snapshot(&mut c)?;
    let n = c.count(2, "layout count")?;
    let mut layouts = Vec::with_capacity(n);
    for _ in 0..n {
        layouts.push((c.string("layout name")?, c.string("layout format text")?));
    }
    let n = c.count(2, "extra field count")?;
    let mut extra = Vec::with_capacity(n);
    for _ in 0..n {
        extra.push((c.string("extra field key")?, c.string("extra field value")?));
    }
    get_snapshot_appendix(&mut c, format_version, &mut snapshot)?;
    Ok(Header {
        format_version,
        tool_version,
        start_wall_ns,
        start_boot_ns,
        hostname,
        kernel_release,
        mode,
        snapshot,
        layouts,
        extra,
    })
}

fn get_mode(c: &mut Cur<'_>) -> DResult<CaptureMode> {
    Ok(
        match get_small(c, MODE_IMPORT, "a known capture mode (0-4)")? {
            MODE_UNKNOWN => CaptureMode::Unknown,
            MODE_PID => CaptureMode::Pid(c.u32v("capture target pid")?),
            MODE_ALL => CaptureMode::All,
            MODE_COMMAND => CaptureMode::Command(c.strings("capture command argv")?),
            MODE_IMPORT => CaptureMode::Import {
                format: c.string("import format")?,
                source: c.string("import source")?,
            },
            _ => CaptureMode::Unknown,
        },
    )
}

/// The snapshot's processes as version 1 wrote them.
fn get_snapshot(c: &mut Cur<'_>) -> DResult<Vec<SnapshotEntry>> {
    // pid, ppid, comm, exe, argv count, thread count: at least 6 bytes each.
    let n = c.count(6, "snapshot process count")?;
    let mut snapshot = Vec::with_capacity(n);
    for _ in 0..n {
        snapshot.push(SnapshotEntry {
            pid: c.u32v("snapshot pid")?,
            ppid: c.u32v("snapshot ppid")?,
            comm: c.string("snapshot comm")?,
            exe: c.string("snapshot exe")?,
            argv: c.strings("snapshot argv")?,
            threads: c.u32s("snapshot threads")?,
            ns: None,
            launched: false,
            cgroup: None,
            uid: u32::MAX,
            cred: None,
        });
    }
    Ok(snapshot)
}

/// What later versions appended per snapshot process, after everything version 1 had.
fn get_snapshot_appendix(
    c: &mut Cur<'_>,
    format_version: u16,
    snapshot: &mut [SnapshotEntry],
) -> DResult<()> {
    // Appended within version 2: a header without it has no namespaces, cgroups or launch.
    if format_version >= 2 && !c.buf.is_empty() {
        for p in snapshot.iter_mut() {
            let marker = get_small(c, 7, "a snapshot process marker (0-7)")?;
            p.launched = marker & 2 != 0;
            if marker & 1 != 0 {
                p.ns = Some(get_pidns_fields(c)?);
            }
            if marker & 4 != 0 {
                p.cgroup = Some(c.string("snapshot cgroup")?);
            }
        }
    }
    // Appended in version 4: a header without it has no credentials.
    if format_version >= 4 && !c.buf.is_empty() {
        for p in snapshot.iter_mut() {
            p.uid = c.u32v("snapshot uid")?;
            if get_small(c, 1, "a snapshot credentials marker (0-1)")? != 0 {
                p.cred = Some(get_cred(c, format_version)?);
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------- stats records

pub(crate) fn encode_stats(b: &mut impl BufMut, s: &StatsRecord) {
    put_varint(b, s.events);
    put_varint(b, s.last_seq);
    put_varint(b, s.seq_gaps);
    put_varint(b, s.drops);
    put_varint(b, s.seq_issued);
    put_varint(b, s.decode_errors);
    put_varint(b, s.boot_ns);
}

pub(crate) fn decode_stats(buf: &[u8]) -> DResult<StatsRecord> {
    let mut c = Cur::new(buf);
    Ok(StatsRecord {
        events: c.varint("stats: events")?,
        last_seq: c.varint("stats: last seq")?,
        seq_gaps: c.varint("stats: sequence gaps")?,
        drops: c.varint("stats: drops")?,
        seq_issued: c.varint("stats: seq issued")?,
        decode_errors: c.varint("stats: decode errors")?,
        boot_ns: c.varint("stats: boot time")?,
    })
}

// ---------------------------------------------------------------- events

// Each kind's code is in the kind table (`event::Kind`); this one is the codec's own form of
// an exec: with the credentials and executable the kernel reported (format version 4).
const K_EXEC_CRED: u8 = 12;
const K_EXEC_CRED_SINCE: u16 = 4;
/// Any tag no format version has.
const BAD_TAG: &str = "an event tag (kind 0-13, bit 7 clear)";

/// The error for a tag a file of `version` may not hold (a later version's kind).
fn tag_too_new(version: u16) -> &'static str {
    match version {
        0..=2 => "an event tag (kind 0-9 before format version 3)",
        3 => "an event tag (kind 0-11 before format version 4)",
        _ => "an event tag (kind 0-12 before format version 5)",
    }
}

// Context bits (high nibble of the tag byte): which task fields differ from the previous
// event of the frame.
const C_TGID: u8 = 1 << 4;
const C_TID: u8 = 1 << 5; // tid != tgid: tid follows
const C_OTHER: u8 = 1 << 6; // ppid/uid/cgroup/comm: a mask byte follows
const C_RESERVED: u8 = 1 << 7;

const O_PPID: u8 = 1;
const O_UID: u8 = 2;
const O_CGROUP: u8 = 4;
const O_COMM: u8 = 8;

/// Delta state shared by the encoder and decoder within one frame (reset per frame so each
/// frame decodes on its own).
#[derive(Clone, Debug)]
pub(crate) struct Ctx {
    seq: u64,
    ts: u64,
    tgid: u32,
    ppid: u32,
    uid: u32,
    cgroup: u64,
    comm: Comm,
    /// The file's format version (kept across frames): a tag naming a kind a later version
    /// added is damage, not an event.
    version: u16,
}

impl Default for Ctx {
    /// The context of a file this tracer writes.
    fn default() -> Ctx {
        Ctx::for_version(super::FORMAT_VERSION)
    }
}

impl Ctx {
    /// A decoding context for a file of format `version`.
    pub fn for_version(version: u16) -> Ctx {
        Ctx {
            seq: 0,
            ts: 0,
            tgid: 0,
            ppid: 0,
            uid: 0,
            cgroup: 0,
            comm: Comm::default(),
            version,
        }
    }

    pub fn reset(&mut self) {
        *self = Ctx::for_version(self.version);
    }
}

fn put_syscall(b: &mut impl BufMut, s: Syscall) {
    b.put_u8(s.to_wire() as u8);
}

fn get_syscall(c: &mut Cur<'_>) -> DResult<Syscall> {
    c.restoring(|c| {
        let id = c.u8("a syscall id")?;
        Syscall::from_wire(u32::from(id)).ok_or(DecodeError("a known syscall id (1-9)"))
    })
}

fn put_captured(b: &mut impl BufMut, s: &CapturedStr) {
    b.put_u8(u8::from(s.truncated));
    put_str(b, &s.value);
}

fn get_bool(c: &mut Cur<'_>, what: &'static str) -> DResult<bool> {
    c.restoring(|c| match c.u8(what)? {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(DecodeError(what)),
    })
}

/// A byte that must be at most `max`.
fn get_small(c: &mut Cur<'_>, max: u8, what: &'static str) -> DResult<u8> {
    c.restoring(|c| {
        let v = c.u8(what)?;
        if v > max {
            return Err(DecodeError(what));
        }
        Ok(v)
    })
}

fn get_captured(c: &mut Cur<'_>, what: &'static str) -> DResult<CapturedStr> {
    let truncated = get_bool(c, what)?;
    Ok(CapturedStr {
        value: c.string(what)?,
        truncated,
    })
}

pub(crate) fn encode_event(b: &mut impl BufMut, ctx: &mut Ctx, ev: &Event) {
    let code = if let EventKind::Exec { cred: Some(_), .. } = &ev.kind {
        K_EXEC_CRED
    } else {
        ev.kind.kind().row().code
    };
    put_context(b, ctx, ev, code);
    put_kind(b, &ev.kind);
}

/// The tag byte (the kind's `code` and which task fields follow), the seq and time deltas and
/// the task fields that differ from the frame's previous event.
fn put_context(b: &mut impl BufMut, ctx: &mut Ctx, ev: &Event, code: u8) {
    let mut other = 0u8;
    if ev.ppid != ctx.ppid {
        other |= O_PPID;
    }
    if ev.uid != ctx.uid {
        other |= O_UID;
    }
    if ev.cgroup_id != ctx.cgroup {
        other |= O_CGROUP;
    }
    if ev.comm != ctx.comm {
        other |= O_COMM;
    }
    let mut tag = code;
    if ev.tgid != ctx.tgid {
        tag |= C_TGID;
    }
    if ev.tid != ev.tgid {
        tag |= C_TID;
    }
    if other != 0 {
        tag |= C_OTHER;
    }
    b.put_u8(tag);
    // seq is almost always previous + 1: store the difference from that.
    put_ivarint(b, ev.seq.wrapping_sub(ctx.seq).wrapping_sub(1) as i64);
    put_ivarint(b, ev.ts_ns.wrapping_sub(ctx.ts) as i64);
    if tag & C_TGID != 0 {
        put_varint(b, u64::from(ev.tgid));
    }
    if tag & C_TID != 0 {
        put_varint(b, u64::from(ev.tid));
    }
    if other != 0 {
        b.put_u8(other);
        if other & O_PPID != 0 {
            put_varint(b, u64::from(ev.ppid));
        }
        if other & O_UID != 0 {
            put_varint(b, u64::from(ev.uid));
        }
        if other & O_CGROUP != 0 {
            put_varint(b, ev.cgroup_id);
        }
        if other & O_COMM != 0 {
            let c = ev.comm.as_bytes();
            b.put_u8(c.len() as u8);
            b.put_slice(c);
        }
    }
    ctx.seq = ev.seq;
    ctx.ts = ev.ts_ns;
    ctx.tgid = ev.tgid;
    ctx.ppid = ev.ppid;
    ctx.uid = ev.uid;
    ctx.cgroup = ev.cgroup_id;
    ctx.comm = ev.comm;
}

/// The kind's own fields.
fn put_kind(b: &mut impl BufMut, kind: &EventKind) {
    match kind {
        EventKind::CloneEnter {
            syscall,
            flags,
            exit_signal,
        } => {
            put_syscall(b, *syscall);
            put_varint(b, flags.0);
            put_varint(b, u64::from(*exit_signal));
        }
        EventKind::SyscallExit { syscall, ret } => {
            put_syscall(b, *syscall);
            put_ivarint(b, *ret);
        }
        EventKind::ExecEnter { .. } => put_exec_enter(b, kind),
        EventKind::ExitEnter { syscall, code } => {
            put_syscall(b, *syscall);
            put_ivarint(b, i64::from(*code));
        }
        EventKind::PrctlEnter { .. } => put_prctl(b, kind),
        EventKind::Fork { .. } => put_fork(b, kind),
        EventKind::Exec {
            old_tid,
            filename,
            cred,
        } => {
            put_varint(b, u64::from(*old_tid));
            put_captured(b, filename);
            if let Some(cred) = cred {
                put_cred(b, cred);
            }
        }
        EventKind::TaskExit {
            exit_code,
            group_dead,
        } => {
            put_varint(b, u64::from(*exit_code));
            b.put_u8(u8::from(*group_dead));
        }
        EventKind::CgroupAttach {
            pid,
            hierarchy,
            cgroup_id,
            path,
        } => {
            put_varint(b, u64::from(*pid));
            put_varint(b, u64::from(*hierarchy));
            put_varint(b, *cgroup_id);
            put_captured(b, path);
        }
        EventKind::Signal(i) => put_signal(b, i),
        EventKind::OomVictim(o) => put_oom(b, o),
        EventKind::ContainerMeta { .. } => put_meta(b, kind),
        EventKind::Subreaper { on } => b.put_u8(u8::from(*on)),
    }
}

fn put_exec_enter(b: &mut impl BufMut, kind: &EventKind) {
    let EventKind::ExecEnter {
        syscall,
        dirfd,
        at_flags,
        filename,
        argv,
        argv_truncated,
    } = kind
    else {
        return;
    };
    put_syscall(b, *syscall);
    put_ivarint(b, *dirfd);
    put_varint(b, u64::from(*at_flags));
    put_captured(b, filename);
    b.put_u8(u8::from(*argv_truncated));
    put_strs(b, argv);
}

fn put_prctl(b: &mut impl BufMut, kind: &EventKind) {
    let EventKind::PrctlEnter {
        option,
        arg2,
        name,
        shown,
    } = kind
    else {
        return;
    };
    put_varint(b, u64::from(*option));
    put_varint(b, *arg2);
    let marker = name.as_ref().map_or(0, |n| if n.truncated { 2 } else { 1 });
    b.put_u8(marker | if shown.is_some() { 4 } else { 0 });
    if let Some(n) = name {
        put_str(b, &n.value);
    }
    if let Some(sh) = shown {
        put_prctl_shown(b, sh);
    }
}

fn put_fork(b: &mut impl BufMut, kind: &EventKind) {
    let EventKind::Fork {
        child_tid,
        child_tgid,
        child_ppid,
        syscall,
        flags,
        child_ns,
    } = kind
    else {
        return;
    };
    put_varint(b, u64::from(*child_tid));
    put_varint(b, u64::from(*child_tgid));
    put_varint(b, u64::from(*child_ppid));
    b.put_u8(syscall.map_or(0, |s| s.to_wire() as u8));
    // Marker bits: 1 = flags follow, 2 = the child's pid namespace follows (version 2).
    let marker = u8::from(flags.is_some()) | (u8::from(child_ns.is_some()) << 1);
    b.put_u8(marker);
    if let Some(f) = flags {
        put_varint(b, f.0);
    }
    if let Some(ns) = child_ns {
        put_pidns_fields(b, ns);
    }
}

fn put_meta(b: &mut impl BufMut, kind: &EventKind) {
    let EventKind::ContainerMeta {
        pid,
        container_id,
        annotations,
    } = kind
    else {
        return;
    };
    put_varint(b, u64::from(*pid));
    put_str(b, container_id);
    put_varint(b, annotations.len() as u64);
    for (k, v) in annotations {
        put_str(b, k);
        put_str(b, v);
    }
}

/// What an strace log showed of a prctl: a marker byte (bit 0: the arguments' text follows,
/// bit 1: the value read back follows as a varint), then those.
fn put_prctl_shown(b: &mut impl BufMut, sh: &PrctlShown) {
    b.put_u8(u8::from(sh.args.is_some()) | u8::from(sh.read.is_some()) << 1);
    if let Some(a) = &sh.args {
        put_str(b, a);
    }
    if let Some(r) = sh.read {
        put_varint(b, r);
    }
}

fn get_prctl_shown(c: &mut Cur<'_>) -> DResult<PrctlShown> {
    let m = get_small(c, 3, "prctl shown marker (0-3)")?;
    let args = match m & 1 {
        0 => None,
        _ => Some(c.string("prctl arguments")?).filter(|a| a.len() <= MAX_SHOWN_ARGS),
    };
    let read = match m & 2 {
        0 => None,
        _ => Some(c.varint("prctl value read")?),
    };
    Ok(PrctlShown { args, read })
}

fn put_signal(b: &mut impl BufMut, i: &SignalInfo) {
    put_ivarint(b, i64::from(i.signal));
    put_ivarint(b, i64::from(i.code));
    put_varint(b, u64::from(i.sender));
    put_varint(b, u64::from(i.sender_tid));
    put_varint(b, u64::from(i.target));
    put_varint(b, u64::from(i.target_tid));
    // bit 0: group; bit 1: the importer inferred the sender or the receiving process
    b.put_u8(u8::from(i.group) | u8::from(i.inferred) << 1);
    b.put_u8(i.result.to_wire() as u8);
}

fn get_signal(c: &mut Cur<'_>) -> DResult<SignalInfo> {
    let signal = c.i32v("a signal number")?;
    let code = c.i32v("a signal's si_code")?;
    let sender = c.u32v("a signal's sender")?;
    let sender_tid = c.u32v("a signal's sender thread")?;
    let target = c.u32v("a signal's target")?;
    let target_tid = c.u32v("a signal's target thread")?;
    let flags = get_small(c, 3, "a signal's flags (0-3)")?;
    Ok(SignalInfo {
        signal,
        code,
        sender,
        sender_tid,
        target,
        target_tid,
        group: flags & 1 != 0,
        result: SignalResult::from_wire(u32::from(get_small(c, 5, "a signal's result (0-5)")?)),
        inferred: flags & 2 != 0,
    })
}

/// Bytes of an OOM victim's cgroup path kept from a file or stream (a real one is a few
/// hundred bytes).
const MAX_OOM_CGROUP: usize = 4096;

fn put_oom(b: &mut impl BufMut, o: &OomInfo) {
    put_varint(b, u64::from(o.tid));
    for v in [o.total_vm_kb, o.anon_rss_kb, o.file_rss_kb, o.shmem_rss_kb] {
        put_varint(b, v);
    }
    put_ivarint(b, i64::from(o.oom_score_adj));
    let marker = u8::from(o.cgroup.is_some()) | (u8::from(o.limit.is_some()) << 1);
    b.put_u8(marker);
    if let Some(cg) = &o.cgroup {
        put_str(b, cg);
    }
    if let Some(l) = o.limit {
        put_varint(b, l);
    }
}

fn get_oom(c: &mut Cur<'_>) -> DResult<OomInfo> {
    let tid = c.u32v("an OOM victim's tid")?;
    let mut kb = [0u64; 4];
    for v in &mut kb {
        *v = c.varint("an OOM victim's memory figure")?;
    }
    let oom_score_adj = c.i32v("an OOM victim's oom_score_adj")?;
    let marker = get_small(c, 3, "an OOM field marker (0-3)")?;
    let cgroup = match marker & 1 {
        0 => None,
        _ => Some(crate::lineage::k8s::bounded(
            &c.string("an OOM cgroup")?,
            MAX_OOM_CGROUP,
        )),
    };
    let limit = match marker & 2 {
        0 => None,
        _ => Some(c.varint("an OOM cgroup's limit")?),
    };
    Ok(OomInfo {
        tid,
        total_vm_kb: kb[0],
        anon_rss_kb: kb[1],
        file_rss_kb: kb[2],
        shmem_rss_kb: kb[3],
        oom_score_adj,
        cgroup,
        limit,
    })
}

pub(crate) fn decode_event(c: &mut Cur<'_>, ctx: &mut Ctx) -> DResult<Event> {
    let tag = get_tag(c, ctx)?;
    let (seq, ts_ns, tgid, tid) = get_context(c, ctx, tag)?;
    let kind = get_kind(c, tag & 0x0f, ctx.version)?;
    Ok(Event {
        seq,
        ts_ns,
        tgid,
        tid,
        ppid: ctx.ppid,
        uid: ctx.uid,
        cgroup_id: ctx.cgroup,
        comm: ctx.comm,
        kind,
    })
}

/// The tag byte: a kind's code that a file of the context's version may hold, bit 7 clear.
fn get_tag(c: &mut Cur<'_>, ctx: &Ctx) -> DResult<u8> {
    c.restoring(|c| {
        let tag = c.u8("an event tag")?;
        let since = match tag & 0x0f {
            K_EXEC_CRED => Some(K_EXEC_CRED_SINCE),
            code => Kind::from_code(code).map(|k| k.row().since),
        };
        match since {
            Some(since) if tag & C_RESERVED == 0 && since <= ctx.version => Ok(tag),
            Some(_) if tag & C_RESERVED == 0 => Err(DecodeError(tag_too_new(ctx.version))),
            _ => Err(DecodeError(BAD_TAG)),
        }
    })
}

/// The seq, time, tgid and tid, and the task fields the tag says changed (kept in `ctx`).
fn get_context(c: &mut Cur<'_>, ctx: &mut Ctx, tag: u8) -> DResult<(u64, u64, u32, u32)> {
    let seq = ctx
        .seq
        .wrapping_add(1)
        .wrapping_add(c.ivarint("an event seq delta")? as u64);
    let ts_ns = ctx
        .ts
        .wrapping_add(c.ivarint("an event time delta")? as u64);
    let tgid = if tag & C_TGID != 0 {
        c.u32v("an event tgid")?
    } else {
        ctx.tgid
    };
    let tid = if tag & C_TID != 0 {
        c.u32v("an event tid")?
    } else {
        tgid
    };
    if tag & C_OTHER != 0 {
        let other = get_small(c, 0x0f, "an event context mask (bits 0-3)")?;
        if other & O_PPID != 0 {
            ctx.ppid = c.u32v("an event ppid")?;
        }
        if other & O_UID != 0 {
            ctx.uid = c.u32v("an event uid")?;
        }
        if other & O_CGROUP != 0 {
            ctx.cgroup = c.varint("an event cgroup id")?;
        }
        if other & O_COMM != 0 {
            ctx.comm = c.restoring(get_comm)?;
        }
    }
    ctx.seq = seq;
    ctx.ts = ts_ns;
    ctx.tgid = tgid;
    Ok((seq, ts_ns, tgid, tid))
}

fn get_comm(c: &mut Cur<'_>) -> DResult<Comm> {
    let n = get_small(c, 16, "an event comm length (at most 16)")? as usize;
    let raw = c.bytes(n, "an event comm")?;
    if raw.contains(&0) {
        return Err(DecodeError("an event comm without NUL bytes"));
    }
    Ok(Comm::from_bytes(raw))
}

/// The fields of the kind whose code is `code` (checked by [`get_tag`]).
fn get_kind(c: &mut Cur<'_>, code: u8, version: u16) -> DResult<EventKind> {
    let kind = match code {
        K_EXEC_CRED => Some(Kind::Exec),
        code => Kind::from_code(code),
    };
    Ok(match kind.ok_or(DecodeError(BAD_TAG))? {
        Kind::CloneEnter => EventKind::CloneEnter {
            syscall: get_syscall(c)?,
            flags: CloneFlags(c.varint("clone flags")?),
            exit_signal: c.u32v("clone exit signal")?,
        },
        Kind::SyscallExit => EventKind::SyscallExit {
            syscall: get_syscall(c)?,
            ret: c.ivarint("a syscall return value")?,
        },
        Kind::ExecEnter => get_exec_enter(c)?,
        Kind::ExitEnter => EventKind::ExitEnter {
            syscall: get_syscall(c)?,
            code: c.i32v("an exit code")?,
        },
        Kind::PrctlEnter => get_prctl(c)?,
        Kind::Fork => get_fork(c)?,
        Kind::Exec => EventKind::Exec {
            old_tid: c.u32v("exec old tid")?,
            filename: get_captured(c, "exec filename")?,
            cred: match code {
                K_EXEC_CRED => Some(get_cred(c, version)?),
                _ => None,
            },
        },
        Kind::TaskExit => EventKind::TaskExit {
            exit_code: c.u32v("task exit code")?,
            group_dead: get_bool(c, "task exit group_dead flag")?,
        },
        Kind::CgroupAttach => EventKind::CgroupAttach {
            pid: c.u32v("cgroup attach pid")?,
            hierarchy: c.u32v("cgroup hierarchy")?,
            cgroup_id: c.varint("cgroup id")?,
            path: get_captured(c, "cgroup path")?,
        },
        Kind::Signal => EventKind::Signal(get_signal(c)?),
        Kind::OomVictim => EventKind::OomVictim(get_oom(c)?),
        Kind::ContainerMeta => get_meta(c)?,
        Kind::Subreaper => EventKind::Subreaper {
            on: get_bool(c, "a subreaper flag (0-1)")?,
        },
    })
}

fn get_exec_enter(c: &mut Cur<'_>) -> DResult<EventKind> {
    let syscall = get_syscall(c)?;
    let dirfd = c.ivarint("exec dirfd")?;
    let at_flags = c.u32v("exec at_flags")?;
    let filename = get_captured(c, "exec filename")?;
    let argv_truncated = get_bool(c, "exec argv truncated flag")?;
    let argv = c.strings("exec argv")?;
    Ok(EventKind::ExecEnter {
        syscall,
        dirfd,
        at_flags,
        filename,
        argv,
        argv_truncated,
    })
}

fn get_prctl(c: &mut Cur<'_>) -> DResult<EventKind> {
    let option = c.u32v("prctl option")?;
    let arg2 = c.varint("prctl arg2")?;
    let marker = get_small(c, 6, "prctl name marker (0-6)")?;
    let name = match marker & 3 {
        0 => None,
        3 => return Err(DecodeError("prctl name marker (0-2)")),
        m => Some(CapturedStr {
            value: c.string("prctl name")?,
            truncated: m == 2,
        }),
    };
    let shown = match marker & 4 {
        0 => None,
        _ => Some(Box::new(get_prctl_shown(c)?)),
    };
    Ok(EventKind::PrctlEnter {
        option,
        arg2,
        name,
        shown,
    })
}

fn get_fork(c: &mut Cur<'_>) -> DResult<EventKind> {
    let child_tid = c.u32v("fork child tid")?;
    let child_tgid = c.u32v("fork child tgid")?;
    let child_ppid = c.u32v("fork child ppid")?;
    let syscall = match get_small(c, 9, "a fork syscall id (0-9)")? {
        0 => None,
        id => Syscall::from_wire(u32::from(id)),
    };
    let marker = get_small(c, 3, "fork field marker (0-3)")?;
    let flags = match marker & 1 {
        0 => None,
        _ => Some(CloneFlags(c.varint("fork flags")?)),
    };
    let child_ns = match marker & 2 {
        0 => None,
        _ => Some(get_pidns_fields(c)?),
    };
    Ok(EventKind::Fork {
        child_tid,
        child_tgid,
        child_ppid,
        syscall,
        flags,
        child_ns,
    })
}

fn get_meta(c: &mut Cur<'_>) -> DResult<EventKind> {
    use crate::lineage::k8s::{bounded, bounded_annotations, MAX_ID_BYTES};
    let pid = c.u32v("container meta pid")?;
    let container_id = bounded(&c.string("container meta id")?, MAX_ID_BYTES);
    let n = c.count(2, "annotation count")?;
    let mut raw = Vec::with_capacity(n.min(16));
    for _ in 0..n {
        raw.push((c.string("annotation key")?, c.string("annotation value")?));
    }
    // The bounds of a live capture, whatever wrote this file or stream.
    Ok(EventKind::ContainerMeta {
        pid,
        container_id,
        annotations: bounded_annotations(raw),
    })
}

#[cfg(test)]
#[path = "codec_kinds_tests.rs"]
mod kinds_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_and_reject_overlong() {
        for v in [0u64, 1, 127, 128, 300, u32::MAX as u64, u64::MAX] {
            let mut b = Vec::new();
            put_varint(&mut b, v);
            assert_eq!(Cur::new(&b).varint("x"), Ok(v));
        }
        for v in [0i64, -1, 1, i64::MIN, i64::MAX] {
            let mut b = Vec::new();
            put_ivarint(&mut b, v);
            assert_eq!(Cur::new(&b).ivarint("x"), Ok(v));
        }
        // 11 continuation bytes, and a 10th byte carrying more than 1 bit.
        assert!(Cur::new(&[0x80; 11]).varint("x").is_err());
        let mut over = vec![0xff; 9];
        over.push(0x02);
        assert!(Cur::new(&over).varint("x").is_err());
        assert!(Cur::new(&[0x80]).varint("x").is_err());
    }

    #[test]
    fn forged_counts_and_lengths_are_rejected_before_allocating() {
        let mut b = Vec::new();
        put_varint(&mut b, u64::MAX);
        assert!(Cur::new(&b).string("s").is_err());
        assert!(Cur::new(&b).strings("s").is_err());
        let mut b = Vec::new();
        put_varint(&mut b, 1 << 40);
        b.extend_from_slice(&[0; 100]);
        assert!(Cur::new(&b).strings("s").is_err());
    }
}
