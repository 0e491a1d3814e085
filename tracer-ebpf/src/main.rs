//! tracer's probes: process-lifecycle syscalls and sched tracepoints into one ring buffer.
//!
//! Two probe sets share these programs. "sched" (the default): sched_process_* plus
//! task_newtask (clone flags) and task_rename (PR_SET_NAME), argv read at sched_process_exec.
//! "sched+syscalls" adds the syscall tracepoints for strace's detail (every call and its
//! return, failed execs, every prctl), at a cost to *every* syscall on the host.
//!
//! Every entry point is a thin wrapper over a `try_*` function. Filtering (follow mode, the
//! tracer itself) happens before anything is reserved, so untraced processes cost a map lookup.
#![no_std]
#![no_main]
// atomic_xadd: the BPF target has no CAS, so core's AtomicU64::fetch_add is not offered, but
// BPF_ATOMIC fetch-add exists (kernel >= 5.12) and LLVM emits it for this intrinsic.
#![allow(internal_features)]
#![feature(core_intrinsics)]

use core::{
    intrinsics::{atomic_xadd, AtomicOrdering},
    ptr::{addr_of_mut, read_volatile},
};

use aya_ebpf::{
    helpers::{
        bpf_get_current_cgroup_id, bpf_get_current_comm, bpf_get_current_pid_tgid,
        bpf_get_current_task, bpf_get_current_task_btf, bpf_get_current_uid_gid,
        bpf_ktime_get_boot_ns, bpf_probe_read_kernel, bpf_probe_read_kernel_str_bytes,
        bpf_probe_read_user, bpf_probe_read_user_buf, bpf_probe_read_user_str_bytes,
    },
    macros::{btf_tracepoint, map, raw_tracepoint, tracepoint},
    maps::{Array, HashMap, LruHashMap, PerCpuArray, RingBuf},
    programs::{BtfTracePointContext, RawTracePointContext, TracePointContext},
    EbpfContext,
};
use aya_log_ebpf::warn;
use tracer_common::{
    clone_flags::{CLONE_PARENT, CLONE_THREAD, CLONE_VFORK, CLONE_VM, CSIGNAL},
    credflag, kind, memcgflag, prctl, strflag, syscall, CgroupAttach, CloneEnter, ExecEnter,
    ExitEnter, Header, OomVictim, PendingClone, PrctlEnter, ProbeConfig, SchedExec, SchedExit,
    SchedFork, SignalGenerate, Subreaper, SysExit, ARGV_BYTES, DEFAULT_RING_BYTES, EXEC_ENTER_HEAD,
    MAX_ARGS, MEMCG_DEPTH, NO_OFFSET,
};

/// Written by userspace at load time (tracefs offsets, BTF offsets, mode).
#[unsafe(no_mangle)]
static CONFIG: ProbeConfig = ProbeConfig::EMPTY;

/// Size is overridden at load time (`--ring-bytes`).
#[map]
static EVENTS: RingBuf = RingBuf::with_byte_size(DEFAULT_RING_BYTES, 0);

/// tgids being followed (follow mode). Seeded by userspace, grown at fork.
#[map]
static FOLLOWED: HashMap<u32, u32> = HashMap::with_max_entries(65536, 0);

/// Clone flags seen at sys_enter, keyed by tid, read back in sched_process_fork.
#[map]
static PENDING: HashMap<u32, PendingClone> = HashMap::with_max_entries(16384, 0);

/// PR_SET_NAME's user pointer, keyed by tid, between sys_enter and sys_exit of prctl.
#[map]
static PENDING_NAME: HashMap<u32, u64> = HashMap::with_max_entries(4096, 0);

/// Processes already reported as child subreapers (the "sched" probe set infers the prctl).
#[map]
static SUBREAPERS: HashMap<u32, u32> = HashMap::with_max_entries(4096, 0);

/// Followed processes on their way out, by the last thread's tid: its task pointer. Their
/// exit (sched_process_exit) takes them out of FOLLOWED, but the kernel notifies their parent
/// after that (exit_notify → do_notify_parent), in their context: that SIGCHLD is theirs.
/// LRU-bounded; an entry counts only for the very task that left it.
#[map]
static DYING: LruHashMap<u32, u64> = LruHashMap::with_max_entries(4096, 0);

/// Failed ring-buffer reserves, per CPU.
#[map]
static DROPS: PerCpuArray<u64> = PerCpuArray::with_max_entries(1, 0);

/// An exec record being built, and room past its argv for the syscall probe's last entry to
/// overrun the budget: the verifier bounds a string read by its buffer, not by the bytes left.
#[repr(C)]
struct ExecScratch {
    rec: ExecEnter,
    spill: [u8; ARGV_BYTES],
}

/// Per-CPU room to build an ExecEnter, sent from here at its used length (a ring-buffer
/// reserve must have a constant size; a 4 KiB+ reserve per exec would waste the ring).
#[map]
static EXEC_SCRATCH: PerCpuArray<ExecScratch> = PerCpuArray::with_max_entries(1, 0);

/// The global sequence counter (index 0).
#[map]
static SEQ: Array<u64> = Array::with_max_entries(1, 0);

// bpf_ringbuf_submit / bpf_ringbuf_query flags (include/uapi/linux/bpf.h).
const BPF_RB_NO_WAKEUP: u64 = 1;
const BPF_RB_FORCE_WAKEUP: u64 = 2;
const BPF_RB_AVAIL_DATA: u64 = 0;

// Syscall tracepoints have a stable layout: 8 bytes of common header + __syscall_nr, then the
// arguments (or the return value) as 8-byte slots from offset 16.
const ARG0: usize = 16;
const ARG1: usize = 24;
const ARG2: usize = 32;
const ARG4: usize = 48;
const RET: usize = 16;

#[inline(always)]
fn cfg(field: &u32) -> u32 {
    // SAFETY: CONFIG lives in .rodata; volatile keeps the compiler from folding the defaults.
    unsafe { read_volatile(field) }
}

#[inline(always)]
fn current_tgid() -> u32 {
    (bpf_get_current_pid_tgid() >> 32) as u32
}

#[inline(always)]
fn traced(tgid: u32) -> bool {
    if tgid == cfg(&CONFIG.self_tgid) {
        return false;
    }
    if cfg(&CONFIG.follow_all) != 0 {
        return true;
    }
    // SAFETY: the value is not used beyond this check.
    unsafe { FOLLOWED.get(&tgid).is_some() }
}

#[inline(always)]
fn next_seq() -> u64 {
    match SEQ.get_ptr_mut(0) {
        // SAFETY: map values are 8-byte aligned and live as long as the map.
        // SeqCst, not Relaxed: LLVM 22 lowers a relaxed fetch-add to a plain `lock +=` and
        // then uses the addend as the "fetched" value (every event got seq 2).
        Some(p) => (unsafe { atomic_xadd::<u64, u64, { AtomicOrdering::SeqCst }>(p, 1) }) + 1,
        None => 0,
    }
}

#[inline(always)]
fn count_drop() {
    if let Some(p) = DROPS.get_ptr_mut(0) {
        // SAFETY: per-CPU slot, only this CPU writes it while preemption is off.
        unsafe { *p += 1 };
    }
}

/// Reads `task->field` at a BTF-resolved offset (a probe read).
#[inline(always)]
fn task_read<T>(task: *const u8, off: u32) -> Option<T> {
    read_field::<false, T>(task, off)
}

/// Reads `base->field` at offset `off`. `TYPED`: a plain load, in a typed (tp_btf) program
/// where `base` is a BTF-typed kernel pointer and `off` a constant of the frozen CONFIG:
/// the verifier checks the load against the kernel's type and makes it fault-tolerant, and
/// no helper is called. Else a probe read.
#[inline(always)]
fn read_field<const TYPED: bool, T>(base: *const u8, off: u32) -> Option<T> {
    if base.is_null() || off == NO_OFFSET {
        return None;
    }
    if TYPED {
        // SAFETY: checked by the verifier as above.
        Some(unsafe { read_volatile(base.add(off as usize) as *const T) })
    } else {
        // SAFETY: bpf_probe_read_kernel tolerates bad pointers.
        unsafe { bpf_probe_read_kernel(base.add(off as usize) as *const T) }.ok()
    }
}

/// The current task; BTF-typed (for [`read_field`]'s plain loads) when `TYPED`.
#[inline(always)]
fn current_task<const TYPED: bool>() -> *const u8 {
    // SAFETY: helpers without arguments; the pointer is only read through read_field.
    unsafe {
        if TYPED {
            bpf_get_current_task_btf() as *const u8
        } else {
            bpf_get_current_task() as *const u8
        }
    }
}

/// A field of a (non-syscall) tracepoint record at an offset from its tracefs format file.
#[inline(always)]
fn tp_field<T>(ctx: &TracePointContext, off: &u32) -> Result<T, i32> {
    let off = cfg(off);
    if off == NO_OFFSET {
        return Err(1);
    }
    // SAFETY: an offset this kernel's format file gave; read with a probe read.
    unsafe { ctx.read_at(off as usize) }
}

/// Flags for a string read into `buf`: `cut` when it filled the buffer, `fault` (and an empty
/// string) when it could not be read.
#[inline(always)]
fn str_flags<E>(read: Result<usize, E>, buf: &mut [u8], cut: u32, fault: u32) -> u32 {
    match read {
        Ok(n) if n >= buf.len() - 1 => cut,
        Ok(_) => 0,
        Err(_) => {
            buf[0] = 0;
            fault
        }
    }
}

/// A BTF bitfield given as (byte offset << 3) | bit, of the struct at `base`.
#[inline(always)]
fn bit_set<const TYPED: bool>(base: *const u8, spec: u32) -> bool {
    if spec == NO_OFFSET {
        return false;
    }
    read_field::<TYPED, u8>(base, spec >> 3).is_some_and(|b| b & (1 << (spec & 7)) != 0)
}

/// tgid of the current task's real parent (0 when unreadable).
#[inline(always)]
fn current_ppid<const TYPED: bool>() -> u32 {
    let task = current_task::<TYPED>();
    let parent: Option<u64> = read_field::<TYPED, u64>(task, cfg(&CONFIG.task_real_parent));
    match parent {
        Some(p) => {
            read_field::<TYPED, i32>(p as *const u8, cfg(&CONFIG.task_tgid)).unwrap_or(0) as u32
        }
        None => 0,
    }
}

/// Writes the common header of a record about the current task.
///
/// # Safety
/// `hdr` points at a writable record header.
#[inline(always)]
unsafe fn fill_header<const TYPED: bool>(hdr: *mut Header, kind: u32, size: usize, seq: u64) {
    let pid_tgid = bpf_get_current_pid_tgid();
    // SAFETY: the caller's header.
    unsafe {
        addr_of_mut!((*hdr).kind).write(kind);
        addr_of_mut!((*hdr).size).write(size as u32);
        addr_of_mut!((*hdr).seq).write(seq);
        addr_of_mut!((*hdr).ktime_ns).write(bpf_ktime_get_boot_ns());
        addr_of_mut!((*hdr).cgroup_id).write(bpf_get_current_cgroup_id());
        addr_of_mut!((*hdr).tgid).write((pid_tgid >> 32) as u32);
        addr_of_mut!((*hdr).tid).write(pid_tgid as u32);
        addr_of_mut!((*hdr).ppid).write(current_ppid::<TYPED>());
        addr_of_mut!((*hdr).uid).write(bpf_get_current_uid_gid() as u32);
        addr_of_mut!((*hdr).comm).write(bpf_get_current_comm().unwrap_or([0; 16]));
    }
}

/// [`fill_header`] from `src`, a header written by it for the current task a moment ago (its
/// tid may have been changed: the current one is put back).
///
/// # Safety
/// `hdr` points at a writable record header, `src` at a whole header.
#[inline(always)]
unsafe fn copy_header(hdr: *mut Header, src: *const Header, kind: u32, size: usize, seq: u64) {
    // SAFETY: the caller's headers.
    unsafe {
        hdr.write(src.read());
        addr_of_mut!((*hdr).kind).write(kind);
        addr_of_mut!((*hdr).size).write(size as u32);
        addr_of_mut!((*hdr).seq).write(seq);
        addr_of_mut!((*hdr).tid).write(bpf_get_current_pid_tgid() as u32);
    }
}

/// BPF_RB_NO_WAKEUP unless enough is waiting; userspace also drains on a short timer.
#[inline(always)]
fn wakeup_flag() -> u64 {
    let pending = EVENTS.query(BPF_RB_AVAIL_DATA);
    if pending >= cfg(&CONFIG.wakeup_bytes) as u64 {
        BPF_RB_FORCE_WAKEUP
    } else {
        BPF_RB_NO_WAKEUP
    }
}

/// A lost record: counted per CPU, and a burnt sequence number so it shows as a gap too.
#[inline(always)]
fn lose_record() {
    count_drop();
    next_seq();
}

/// Reserves a record of type `T`, fills its header and hands it to `fill`.
/// A failed reserve is counted per CPU and leaves a gap in the sequence.
#[inline(always)]
fn emit<T: 'static>(kind: u32, fill: impl FnOnce(*mut T)) {
    emit_waking::<T>(kind, false, fill)
}

/// [`emit`], the header's task reads typed when `TYPED` (see [`read_field`]).
#[inline(always)]
fn emit_as<T: 'static, const TYPED: bool>(kind: u32, fill: impl FnOnce(*mut T)) {
    emit_from::<T, TYPED>(kind, false, None, fill)
}

/// [`emit`], waking the reader at once when `now` (else only once enough is waiting).
#[inline(always)]
fn emit_waking<T: 'static>(kind: u32, now: bool, fill: impl FnOnce(*mut T)) {
    emit_from::<T, false>(kind, now, None, fill)
}

/// [`emit_waking`], the header copied from `same` (a record just built about the current
/// task at this same moment) when given, instead of asked of the helpers again.
#[inline(always)]
fn emit_from<T: 'static, const TYPED: bool>(
    kind: u32,
    now: bool,
    same: Option<*const Header>,
    fill: impl FnOnce(*mut T),
) {
    let Some(mut entry) = EVENTS.reserve::<T>(0) else {
        lose_record();
        return;
    };
    // Taken after the reserve so sequence order follows ring order as closely as possible.
    let seq = next_seq();
    let rec = entry.as_mut_ptr();
    let size = core::mem::size_of::<T>();
    // Every record starts with a Header (checked by the layout asserts in tracer-common).
    // SAFETY: `rec` points at a reserved, writable record of size_of::<T>() bytes; `same`
    // is a whole Header in map memory.
    unsafe {
        match same {
            Some(src) => copy_header(rec as *mut Header, src, kind, size, seq),
            None => fill_header::<TYPED>(rec as *mut Header, kind, size, seq),
        }
    };
    fill(rec);
    entry.submit(if now {
        BPF_RB_FORCE_WAKEUP
    } else {
        wakeup_flag()
    });
}

/// Builds an ExecEnter in the per-CPU scratch (`fill` writes everything after the header and
/// returns the bytes of argv used) and copies it to the ring at that length. A failed copy
/// is counted like a failed reserve (its sequence number was taken, so it leaves a gap).
/// Returns the record's header (in the scratch, whether or not the copy to the ring worked).
#[inline(always)]
fn emit_exec<const TYPED: bool>(
    fill: impl FnOnce(*mut ExecScratch) -> usize,
) -> Option<*const Header> {
    let Some(s) = EXEC_SCRATCH.get_ptr_mut(0) else {
        lose_record();
        return None;
    };
    // SAFETY: the per-CPU value, this program's alone while it runs.
    let rec = unsafe { addr_of_mut!((*s).rec) };
    // SAFETY: `rec` is a whole, writable ExecEnter.
    unsafe {
        fill_header::<TYPED>(
            rec as *mut Header,
            kind::EXEC_ENTER,
            EXEC_ENTER_HEAD,
            next_seq(),
        )
    };
    let used = fill(s);
    let size = EXEC_ENTER_HEAD + if used > ARGV_BYTES { ARGV_BYTES } else { used };
    // SAFETY: as above; `size` is at most size_of::<ExecEnter>().
    let bytes = unsafe {
        addr_of_mut!((*rec).hdr.size).write(size as u32);
        core::slice::from_raw_parts(rec as *const u8, size)
    };
    if EVENTS.output::<[u8]>(bytes, wakeup_flag()).is_err() {
        count_drop();
    }
    Some(rec as *const Header)
}

// ---- clone family -------------------------------------------------------------------------

#[inline(always)]
fn clone_enter(sc: u32, flags: u64, exit_signal: u32) -> Result<u32, i32> {
    if !traced(current_tgid()) {
        return Ok(0);
    }
    let tid = bpf_get_current_pid_tgid() as u32;
    let pending = PendingClone {
        flags,
        syscall: sc,
        _pad: 0,
    };
    let _ = PENDING.insert(&tid, &pending, 0);
    emit::<CloneEnter>(kind::CLONE_ENTER, |r| unsafe {
        addr_of_mut!((*r).syscall).write(sc);
        addr_of_mut!((*r).exit_signal).write(exit_signal);
        addr_of_mut!((*r).flags).write(flags);
    });
    Ok(0)
}

fn try_enter_clone(ctx: &TracePointContext) -> Result<u32, i32> {
    // SAFETY: syscall tracepoint argument slot.
    let raw: u64 = unsafe { ctx.read_at(ARG0)? };
    clone_enter(syscall::CLONE, raw & !CSIGNAL, (raw & CSIGNAL) as u32)
}

fn try_enter_clone3(ctx: &TracePointContext) -> Result<u32, i32> {
    if !traced(current_tgid()) {
        return Ok(0);
    }
    // SAFETY: syscall tracepoint argument slot; user memory is read with probe reads.
    let uargs: u64 = unsafe { ctx.read_at(ARG0)? };
    let flags: u64 = unsafe { bpf_probe_read_user(uargs as *const u64) }.unwrap_or(0);
    // struct clone_args { flags, pidfd, child_tid, parent_tid, exit_signal, ... }
    let sig: u64 = unsafe { bpf_probe_read_user((uargs + 32) as *const u64) }.unwrap_or(0);
    clone_enter(syscall::CLONE3, flags, sig as u32)
}

#[tracepoint]
pub fn sys_enter_clone(ctx: TracePointContext) -> u32 {
    try_enter_clone(&ctx).unwrap_or(1)
}

#[tracepoint]
pub fn sys_enter_clone3(ctx: TracePointContext) -> u32 {
    try_enter_clone3(&ctx).unwrap_or(1)
}

#[tracepoint]
pub fn sys_enter_fork(_ctx: TracePointContext) -> u32 {
    clone_enter(syscall::FORK, 0, 17).unwrap_or(1)
}

#[tracepoint]
pub fn sys_enter_vfork(_ctx: TracePointContext) -> u32 {
    clone_enter(syscall::VFORK, CLONE_VM | CLONE_VFORK, 17).unwrap_or(1)
}

// ---- syscall exits -------------------------------------------------------------------------

fn try_sys_exit(ctx: &TracePointContext, sc: u32) -> Result<u32, i32> {
    let pid_tgid = bpf_get_current_pid_tgid();
    if matches!(
        sc,
        syscall::CLONE | syscall::CLONE3 | syscall::FORK | syscall::VFORK
    ) {
        // Always clean up, even if the process stopped being traced meanwhile.
        let _ = PENDING.remove(&(pid_tgid as u32));
    }
    if !traced((pid_tgid >> 32) as u32) {
        return Ok(0);
    }
    // SAFETY: syscall exit tracepoint return-value slot.
    let ret: i64 = unsafe { ctx.read_at(RET)? };
    emit::<SysExit>(kind::SYS_EXIT, |r| unsafe {
        addr_of_mut!((*r).syscall).write(sc);
        addr_of_mut!((*r)._pad).write(0);
        addr_of_mut!((*r).ret).write(ret);
    });
    Ok(0)
}

macro_rules! sys_exit_probe {
    ($name:ident, $sc:expr) => {
        #[tracepoint]
        pub fn $name(ctx: TracePointContext) -> u32 {
            try_sys_exit(&ctx, $sc).unwrap_or(1)
        }
    };
}

sys_exit_probe!(sys_exit_clone, syscall::CLONE);
sys_exit_probe!(sys_exit_clone3, syscall::CLONE3);
sys_exit_probe!(sys_exit_fork, syscall::FORK);
sys_exit_probe!(sys_exit_vfork, syscall::VFORK);
sys_exit_probe!(sys_exit_execve, syscall::EXECVE);
sys_exit_probe!(sys_exit_execveat, syscall::EXECVEAT);

// ---- exec ----------------------------------------------------------------------------------

/// Fills an ExecEnter's call fields and filename (with `read`); returns the string flags.
///
/// # Safety
/// `r` points at a writable ExecEnter record.
#[inline(always)]
unsafe fn exec_head(
    r: *mut ExecEnter,
    sc: u32,
    at_flags: u32,
    dirfd: i64,
    read: impl FnOnce(&mut [u8]) -> Result<usize, i32>,
) -> u32 {
    // SAFETY: the caller's record.
    unsafe {
        addr_of_mut!((*r).syscall).write(sc);
        addr_of_mut!((*r).at_flags).write(at_flags);
        addr_of_mut!((*r).dirfd).write(dirfd);
        let fname = &mut *addr_of_mut!((*r).filename);
        let res = read(fname);
        str_flags(
            res,
            fname,
            strflag::FILENAME_TRUNCATED,
            strflag::FILENAME_FAULT,
        )
    }
}

fn try_exec_enter(ctx: &TracePointContext, sc: u32) -> Result<u32, i32> {
    if !traced(current_tgid()) {
        return Ok(0);
    }
    // execve(filename, argv, envp); execveat(dirfd, filename, argv, envp, flags)
    let (dirfd, fname_off, argv_off) = if sc == syscall::EXECVEAT {
        // SAFETY: syscall tracepoint argument slot.
        (unsafe { ctx.read_at::<i64>(ARG0)? }, ARG1, ARG2)
    } else {
        (-100, ARG0, ARG1)
    };
    let at_flags: u64 = if sc == syscall::EXECVEAT {
        unsafe { ctx.read_at(ARG4)? }
    } else {
        0
    };
    let filename: u64 = unsafe { ctx.read_at(fname_off)? };
    let argv: u64 = unsafe { ctx.read_at(argv_off)? };
    let _ = emit_exec::<false>(|s| unsafe {
        let r = addr_of_mut!((*s).rec);
        let mut flags = exec_head(r, sc, at_flags as u32, dirfd, |buf| {
            bpf_probe_read_user_str_bytes(filename as *const u8, buf).map(|s| s.len())
        });
        let (used, argv_flags) = argv_from_pointers(s, argv);
        flags |= argv_flags;
        addr_of_mut!((*r).argv_len).write(used as u32);
        addr_of_mut!((*r).flags).write(flags);
        used
    });
    Ok(0)
}

/// Copies the strings of a user argv array back to back (NUL after each) into the scratch
/// record's argv; returns the bytes used (at most ARGV_BYTES) and the string flags.
///
/// # Safety
/// `s` is the per-CPU scratch value.
#[inline(always)]
unsafe fn argv_from_pointers(s: *mut ExecScratch, argv: u64) -> (usize, u32) {
    // SAFETY: argv is followed by `spill` (repr(C)), so ARGV_BYTES from any offset below
    // ARGV_BYTES stay inside the scratch value.
    let base = unsafe { addr_of_mut!((*s).rec.argv) } as *mut u8;
    let mut off = 0usize;
    for i in 0..MAX_ARGS {
        // SAFETY: user memory, read with a probe read.
        let p: u64 = match unsafe { bpf_probe_read_user((argv as *const u64).wrapping_add(i)) } {
            Ok(p) => p,
            Err(_) => return (off, strflag::ARGV_FAULT),
        };
        if p == 0 {
            return (off, 0);
        }
        if off >= ARGV_BYTES {
            return (ARGV_BYTES, strflag::ARGV_TRUNCATED);
        }
        // The mask changes nothing (off < ARGV_BYTES, a power of two) but bounds it for the
        // verifier.
        let at = off & (ARGV_BYTES - 1);
        // SAFETY: see above.
        let dst = unsafe { core::slice::from_raw_parts_mut(base.add(at), ARGV_BYTES) };
        // SAFETY: user memory, read with a probe read.
        match unsafe { bpf_probe_read_user_str_bytes(p as *const u8, dst) } {
            Ok(v) if v.len() < ARGV_BYTES - 1 && at + v.len() < ARGV_BYTES => {
                off = at + v.len() + 1
            }
            Ok(_) => return (ARGV_BYTES, strflag::ARGV_TRUNCATED),
            Err(_) => return (at, strflag::ARGV_FAULT),
        }
    }
    // MAX_ARGS walked: cut only if another entry follows.
    // SAFETY: user memory, read with a probe read.
    let next: u64 =
        unsafe { bpf_probe_read_user((argv as *const u64).wrapping_add(MAX_ARGS)) }.unwrap_or(0);
    (
        off,
        if next != 0 {
            strflag::ARGV_TRUNCATED
        } else {
            0
        },
    )
}

#[tracepoint]
pub fn sys_enter_execve(ctx: TracePointContext) -> u32 {
    try_exec_enter(&ctx, syscall::EXECVE).unwrap_or(1)
}

#[tracepoint]
pub fn sys_enter_execveat(ctx: TracePointContext) -> u32 {
    try_exec_enter(&ctx, syscall::EXECVEAT).unwrap_or(1)
}

// ---- exit / prctl --------------------------------------------------------------------------

fn try_exit_enter(ctx: &TracePointContext, sc: u32) -> Result<u32, i32> {
    if !traced(current_tgid()) {
        return Ok(0);
    }
    // SAFETY: syscall tracepoint argument slot.
    let code: u64 = unsafe { ctx.read_at(ARG0)? };
    emit::<ExitEnter>(kind::EXIT_ENTER, |r| unsafe {
        addr_of_mut!((*r).syscall).write(sc);
        addr_of_mut!((*r).code).write(code as i32);
    });
    Ok(0)
}

#[tracepoint]
pub fn sys_enter_exit(ctx: TracePointContext) -> u32 {
    try_exit_enter(&ctx, syscall::EXIT).unwrap_or(1)
}

#[tracepoint]
pub fn sys_enter_exit_group(ctx: TracePointContext) -> u32 {
    try_exit_enter(&ctx, syscall::EXIT_GROUP).unwrap_or(1)
}

fn try_prctl_enter(ctx: &TracePointContext) -> Result<u32, i32> {
    if !traced(current_tgid()) {
        return Ok(0);
    }
    // SAFETY: syscall tracepoint argument slots.
    let option: u64 = unsafe { ctx.read_at(ARG0)? };
    let arg2: u64 = unsafe { ctx.read_at(ARG1)? };
    if option as u32 == prctl::PR_SET_NAME {
        // The name's page may not be mapped yet (runc's CHILD renames itself right after
        // clone, before touching that page), and a tracepoint cannot fault it in. The kernel
        // will have faulted it by sys_exit: report the call from there.
        let tid = bpf_get_current_pid_tgid() as u32;
        if PENDING_NAME.insert(&tid, &arg2, 0).is_ok() {
            return Ok(0);
        }
    }
    emit_prctl(option as u32, arg2, false);
    Ok(0)
}

/// Emits a PrctlEnter; for PR_SET_NAME the name is read from user memory, falling back to
/// the task's comm (which *is* the new name) after a successful call.
#[inline(always)]
fn emit_prctl(option: u32, arg2: u64, succeeded: bool) {
    emit::<PrctlEnter>(kind::PRCTL_ENTER, |r| unsafe {
        addr_of_mut!((*r).option).write(option);
        addr_of_mut!((*r).arg2).write(arg2);
        let name = &mut *addr_of_mut!((*r).name);
        name[0] = 0;
        let mut flags = 0;
        if option == prctl::PR_SET_NAME
            && bpf_probe_read_user_str_bytes(arg2 as *const u8, name).is_err()
        {
            match bpf_get_current_comm() {
                Ok(comm) if succeeded => *name = comm,
                _ => {
                    name[0] = 0;
                    flags |= strflag::NAME_FAULT;
                }
            }
        }
        addr_of_mut!((*r).flags).write(flags);
    });
}

fn try_prctl_exit(ctx: &TracePointContext) -> Result<u32, i32> {
    let tid = bpf_get_current_pid_tgid() as u32;
    // SAFETY: value copied out immediately.
    if let Some(arg2) = unsafe { PENDING_NAME.get(&tid) }.copied() {
        let _ = PENDING_NAME.remove(&tid);
        if traced(current_tgid()) {
            // SAFETY: syscall exit tracepoint return-value slot.
            let ret: i64 = unsafe { ctx.read_at(RET)? };
            emit_prctl(prctl::PR_SET_NAME, arg2, ret == 0);
        }
    }
    try_sys_exit(ctx, syscall::PRCTL)
}

#[tracepoint]
pub fn sys_exit_prctl(ctx: TracePointContext) -> u32 {
    try_prctl_exit(&ctx).unwrap_or(1)
}

#[tracepoint]
pub fn sys_enter_prctl(ctx: TracePointContext) -> u32 {
    try_prctl_enter(&ctx).unwrap_or(1)
}

// ---- sched tracepoints (offsets from tracefs format files) ---------------------------------

/// The child's pid namespace (level, inode, pid there) from its `thread_pid`:
/// `numbers[level]` is the `struct upid` of the namespace the task lives in.
#[inline(always)]
fn child_pidns(child: *const u8) -> (u32, u32, u32) {
    let pid: u64 = task_read(child, cfg(&CONFIG.task_thread_pid)).unwrap_or(0);
    let pid = pid as *const u8;
    let Some(level) = task_read::<u32>(pid, cfg(&CONFIG.pid_level)) else {
        return (0, 0, 0);
    };
    let (numbers, size) = (cfg(&CONFIG.pid_numbers), cfg(&CONFIG.upid_size));
    // Nesting is capped at 32 levels by the kernel (MAX_PID_NS_LEVEL); the mask keeps the
    // offset provably bounded for the verifier.
    if numbers == NO_OFFSET || size == NO_OFFSET || level > 32 {
        return (level, 0, 0);
    }
    let upid = numbers + (level & 63) * (size & 0xff);
    let nr = task_read::<i32>(pid, upid).unwrap_or(0) as u32;
    let ns: u64 = task_read(pid, upid + cfg(&CONFIG.upid_ns)).unwrap_or(0);
    let inum = task_read::<u32>(ns as *const u8, cfg(&CONFIG.pidns_inum)).unwrap_or(0);
    (level, inum, nr)
}

/// One birth, from either fork tracepoint. `child` is the new task when the raw tracepoint
/// handed it over (then its real parent and pid namespace are read from it), else null.
#[inline(always)]
fn sched_fork<C: EbpfContext>(ctx: &C, child_pid: u32, child: *const u8) -> Result<u32, i32> {
    let pid_tgid = bpf_get_current_pid_tgid();
    let parent_tgid = (pid_tgid >> 32) as u32;
    if !traced(parent_tgid) {
        return Ok(0);
    }
    // SAFETY: value copied out immediately.
    let pending = unsafe { PENDING.get(&(pid_tgid as u32)) }.copied();
    if pending.is_some() {
        let _ = PENDING.remove(&(pid_tgid as u32));
    }
    let (flags, sc, known) = match pending {
        Some(p) => (p.flags, p.syscall, 1u32),
        None => (0, syscall::UNKNOWN, 0u32),
    };
    let is_thread = flags & CLONE_THREAD != 0;
    let child_tgid = if is_thread { parent_tgid } else { child_pid };
    if !is_thread && cfg(&CONFIG.follow_all) == 0 && FOLLOWED.insert(&child_tgid, &1, 0).is_err() {
        warn!(
            ctx,
            "tracer: FOLLOWED map full; pid {} not followed", child_tgid
        );
    }
    // The child's own real_parent when we have the child; else copy_process()'s rule:
    // CLONE_PARENT/CLONE_THREAD children get the creator's real parent.
    let real: u64 = task_read(child, cfg(&CONFIG.task_real_parent)).unwrap_or(0);
    let from_child = task_read::<i32>(real as *const u8, cfg(&CONFIG.task_tgid)).unwrap_or(0);
    let ppid_rule = flags & (CLONE_PARENT | CLONE_THREAD) != 0;
    let (level, inum, nr) = child_pidns(child);
    emit::<SchedFork>(kind::SCHED_FORK, |r| unsafe {
        let child_ppid = if from_child > 0 {
            from_child as u32
        } else if ppid_rule {
            (*r).hdr.ppid
        } else {
            parent_tgid
        };
        addr_of_mut!((*r).child_tid).write(child_pid);
        addr_of_mut!((*r).child_tgid).write(child_tgid);
        addr_of_mut!((*r).child_ppid).write(child_ppid);
        addr_of_mut!((*r).syscall).write(sc);
        addr_of_mut!((*r).clone_flags).write(flags);
        addr_of_mut!((*r).flags_known).write(known);
        addr_of_mut!((*r).ns_level).write(level);
        addr_of_mut!((*r).ns_inum).write(inum);
        addr_of_mut!((*r).ns_pid).write(nr);
    });
    Ok(0)
}

fn try_sched_fork_raw(ctx: &RawTracePointContext) -> Result<u32, i32> {
    // TP_PROTO(struct task_struct *parent, struct task_struct *child)
    let child: *const u8 = ctx.arg(1);
    let pid = task_read::<i32>(child, cfg(&CONFIG.task_pid)).ok_or(1)?;
    sched_fork(ctx, pid as u32, child)
}

/// The raw sched_process_fork tracepoint: it hands over the child task itself (the classic
/// tracepoint only copies its pid), so the child's real parent and pid namespace are exact.
#[raw_tracepoint(tracepoint = "sched_process_fork")]
pub fn sched_process_fork_raw(ctx: RawTracePointContext) -> i32 {
    try_sched_fork_raw(&ctx).map_or(1, |r| r as i32)
}

fn try_sched_fork(ctx: &TracePointContext) -> Result<u32, i32> {
    let child_pid = tp_field::<i32>(ctx, &CONFIG.fork_child_pid)? as u32;
    sched_fork(ctx, child_pid, core::ptr::null())
}

/// Fallback where raw tracepoints cannot attach: no pid namespace, parent by rule.
#[tracepoint]
pub fn sched_process_fork(ctx: TracePointContext) -> u32 {
    try_sched_fork(&ctx).unwrap_or(1)
}

fn try_sched_exec(ctx: &TracePointContext) -> Result<u32, i32> {
    if !traced(current_tgid()) {
        return Ok(0);
    }
    let old_pid: i32 = tp_field(ctx, &CONFIG.exec_old_pid)?;
    let loc: u32 = tp_field(ctx, &CONFIG.exec_filename_loc)?;
    // __data_loc: low 16 bits offset from the record start, high 16 bits length.
    let src = unsafe { (ctx.as_ptr() as *const u8).add((loc & 0xffff) as usize) };
    sched_exec::<false>(old_pid, src)
}

fn try_sched_exec_btf(ctx: &BtfTracePointContext) -> Result<u32, i32> {
    if !traced(current_tgid()) {
        return Ok(0);
    }
    // TP_PROTO(struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm): the name
    // the classic tracepoint copies into its record is bprm->filename.
    let old_pid = ctx.arg::<u64>(1) as i32;
    let bprm: *const u8 = ctx.arg(2);
    let src: u64 = task_read(bprm, cfg(&CONFIG.bprm_filename)).ok_or(1)?;
    sched_exec::<true>(old_pid, src as *const u8)
}

/// The exec of the current (traced) task: `old_pid` its tid before, `src` its file's name.
#[inline(always)]
fn sched_exec<const TYPED: bool>(old_pid: i32, src: *const u8) -> Result<u32, i32> {
    let same = if cfg(&CONFIG.no_syscall_probes) != 0 {
        exec_argv_from_mm::<TYPED>(src, old_pid as u32)
    } else {
        None
    };
    emit_from::<SchedExec, TYPED>(kind::SCHED_EXEC, false, same, |r| unsafe {
        addr_of_mut!((*r).old_tid).write(old_pid as u32);
        exec_cred::<TYPED>(r);
        let fname = &mut *addr_of_mut!((*r).filename);
        let read = bpf_probe_read_kernel_str_bytes(src, fname).map(|s| s.len());
        let flags = str_flags(
            read,
            fname,
            strflag::FILENAME_TRUNCATED,
            strflag::FILENAME_FAULT,
        );
        addr_of_mut!((*r).flags).write(flags);
    });
    Ok(0)
}

/// What the kernel says of the current task's credentials and executable right after its
/// exec: who may speak for a container is decided from these, never from a name.
///
/// # Safety
/// `r` points at a reserved, writable SchedExec.
#[inline(always)]
unsafe fn exec_cred<const TYPED: bool>(r: *mut SchedExec) {
    // The current task; every field read at BTF offsets (see read_field).
    let task = current_task::<TYPED>();
    let rd = |base: u64, off: &u32| read_field::<TYPED, u64>(base as *const u8, cfg(off));
    let rd32 = |base: u64, off: &u32| read_field::<TYPED, u32>(base as *const u8, cfg(off));
    let cred: u64 = rd(task as u64, &CONFIG.task_cred).unwrap_or(0);
    let euid = rd32(cred, &CONFIG.cred_euid);
    let fsuid = rd32(cred, &CONFIG.cred_fsuid);
    let userns: u64 = rd(cred, &CONFIG.cred_user_ns).unwrap_or(0);
    let userns_level = rd32(userns, &CONFIG.userns_level);
    let nsproxy: u64 = rd(task as u64, &CONFIG.task_nsproxy).unwrap_or(0);
    let mnt: u64 = rd(nsproxy, &CONFIG.nsproxy_mnt_ns).unwrap_or(0);
    let mnt_ns = rd32(mnt, &CONFIG.mntns_inum);
    let pid: u64 = rd(task as u64, &CONFIG.task_thread_pid).unwrap_or(0);
    let pidns_level = rd32(pid, &CONFIG.pid_level);
    let mut flags = 0;
    if euid.is_some()
        && fsuid.is_some()
        && userns_level.is_some()
        && mnt_ns.is_some()
        && pidns_level.is_some()
    {
        flags |= credflag::CRED;
    }
    let (m, host) = (mnt_ns.unwrap_or(0), cfg(&CONFIG.host_mntns));
    if host != 0 && m == host {
        flags |= credflag::HOST_MNT;
    }
    // Every field written, read or not: a reserved record's bytes are not zeroed.
    // SAFETY: the caller's record.
    unsafe {
        addr_of_mut!((*r).euid).write(euid.unwrap_or(u32::MAX));
        addr_of_mut!((*r).fsuid).write(fsuid.unwrap_or(u32::MAX));
        addr_of_mut!((*r).userns_level).write(userns_level.unwrap_or(0));
        addr_of_mut!((*r).pidns_level).write(pidns_level.unwrap_or(0));
        addr_of_mut!((*r).mnt_ns).write(m);
        addr_of_mut!((*r).cred_flags).write(flags | exe_inode::<TYPED>(task, r));
    }
}

/// The current task's executable (`mm->exe_file->f_inode`) into `r`; [`credflag::EXE`] when
/// it was read.
///
/// # Safety
/// `r` points at a reserved, writable SchedExec.
#[inline(always)]
unsafe fn exe_inode<const TYPED: bool>(task: *const u8, r: *mut SchedExec) -> u32 {
    let rd = |base: u64, off: &u32| read_field::<TYPED, u64>(base as *const u8, cfg(off));
    let rd32 = |base: u64, off: &u32| read_field::<TYPED, u32>(base as *const u8, cfg(off));
    let mm: u64 = rd(task as u64, &CONFIG.task_mm).unwrap_or(0);
    let file: u64 = rd(mm, &CONFIG.mm_exe_file).unwrap_or(0);
    let inode: u64 = rd(file, &CONFIG.file_inode).unwrap_or(0);
    let sb: u64 = rd(inode, &CONFIG.inode_sb).unwrap_or(0);
    let ino = rd(inode, &CONFIG.inode_ino);
    let mode = read_field::<TYPED, u16>(inode as *const u8, cfg(&CONFIG.inode_mode));
    let uid = rd32(inode, &CONFIG.inode_uid);
    let nlink = rd32(inode, &CONFIG.inode_nlink);
    let dev = rd32(sb, &CONFIG.sb_dev);
    let all = ino.is_some() && mode.is_some() && uid.is_some() && nlink.is_some() && dev.is_some();
    // SAFETY: the caller's record.
    unsafe {
        addr_of_mut!((*r).exe_ino).write(ino.unwrap_or(0));
        addr_of_mut!((*r).exe_dev).write(dev.unwrap_or(0));
        addr_of_mut!((*r).exe_uid).write(uid.unwrap_or(u32::MAX));
        addr_of_mut!((*r).exe_mode).write(mode.unwrap_or(0) as u32);
        addr_of_mut!((*r).exe_nlink).write(nlink.unwrap_or(0));
    }
    if all {
        credflag::EXE
    } else {
        0
    }
}

/// Without syscall probes: the exec's argv, read from the new image's argument area
/// (`mm->arg_start..arg_end`, NUL-separated strings the kernel just copied there) in one read
/// of up to ARGV_BYTES, reported as the ExecEnter a sys_enter_execve probe would have sent.
/// Returns that record's header, for the exec record that follows.
#[inline(always)]
fn exec_argv_from_mm<const TYPED: bool>(
    filename: *const u8,
    old_tid: u32,
) -> Option<*const Header> {
    // The current task; fields read at BTF offsets (see read_field).
    let task = current_task::<TYPED>();
    let mm: u64 = read_field::<TYPED, u64>(task, cfg(&CONFIG.task_mm)).unwrap_or(0);
    let mm = mm as *const u8;
    let start: u64 = read_field::<TYPED, u64>(mm, cfg(&CONFIG.mm_arg_start)).unwrap_or(0);
    let end: u64 = read_field::<TYPED, u64>(mm, cfg(&CONFIG.mm_arg_end)).unwrap_or(0);
    // SAFETY: the scratch record; the argument area is read with a probe read, at most
    // ARGV_BYTES into the ARGV_BYTES of `argv`.
    emit_exec::<TYPED>(|s| unsafe {
        let r = addr_of_mut!((*s).rec);
        // The call was made by the thread that is now the leader; a non-leader exec
        // reports it under its old tid, as sys_enter_execve would have.
        addr_of_mut!((*r).hdr.tid).write(old_tid);
        let mut flags = exec_head(r, syscall::EXECVE, 0, -100, |buf| {
            bpf_probe_read_kernel_str_bytes(filename, buf).map(|s| s.len())
        });
        let mut len = 0usize;
        if start == 0 || end < start {
            flags |= strflag::ARGV_FAULT;
        } else {
            len = (end - start) as usize;
            if len > ARGV_BYTES {
                len = ARGV_BYTES;
                flags |= strflag::ARGV_TRUNCATED;
            }
            let dst = core::slice::from_raw_parts_mut(addr_of_mut!((*r).argv) as *mut u8, len);
            if bpf_probe_read_user_buf(start as *const u8, dst).is_err() {
                flags |= strflag::ARGV_FAULT;
                len = 0;
            }
        }
        addr_of_mut!((*r).argv_len).write(len as u32);
        addr_of_mut!((*r).flags).write(flags);
        len
    })
}

#[tracepoint]
pub fn sched_process_exec(ctx: TracePointContext) -> u32 {
    try_sched_exec(&ctx).unwrap_or(1)
}

/// The typed tracepoint (tp_btf): its arguments read in place, not from a tracefs record.
#[btf_tracepoint(function = "sched_process_exec")]
pub fn sched_process_exec_btf(ctx: BtfTracePointContext) -> i32 {
    try_sched_exec_btf(&ctx).map_or(1, |r| r as i32)
}

fn try_sched_exit(ctx: &TracePointContext) -> Result<u32, i32> {
    let gd_off = cfg(&CONFIG.exit_group_dead);
    sched_exit::<false>(|task| {
        if gd_off != NO_OFFSET {
            // SAFETY: offset from this kernel's format file.
            return Ok((unsafe { ctx.read_at::<u8>(gd_off as usize)? } != 0) as u32);
        }
        // Older kernels: the signal struct's live count is already decremented here.
        let sig: Option<u64> = task_read(task, cfg(&CONFIG.task_signal));
        Ok(match sig {
            Some(s) => {
                (task_read::<i32>(s as *const u8, cfg(&CONFIG.signal_live)) == Some(0)) as u32
            }
            None => 0,
        })
    })
}

/// The exit of the current task; `group_dead` says, given the task, whether it is its
/// process's last thread.
#[inline(always)]
fn sched_exit<const TYPED: bool>(
    group_dead: impl FnOnce(*const u8) -> Result<u32, i32>,
) -> Result<u32, i32> {
    let pid_tgid = bpf_get_current_pid_tgid();
    let tgid = (pid_tgid >> 32) as u32;
    if !traced(tgid) {
        return Ok(0);
    }
    // A task killed inside clone/prctl never reaches sys_exit: drop what it left behind so a
    // later task reusing the tid does not inherit it. Looked up first: a delete takes the
    // bucket's lock even for a key that is not there, which is every exit but a rare one.
    let tid = pid_tgid as u32;
    remove_if_present(&PENDING, tid);
    if cfg(&CONFIG.no_syscall_probes) == 0 {
        remove_if_present(&PENDING_NAME, tid);
    }
    // The current task; fields read at BTF offsets (see read_field).
    let task = current_task::<TYPED>();
    let exit_code = read_field::<TYPED, i32>(task, cfg(&CONFIG.task_exit_code)).unwrap_or(0);
    let group_dead = group_dead(task)?;
    if group_dead != 0 && cfg(&CONFIG.no_syscall_probes) != 0 {
        report_ancestor_subreaper::<TYPED>(task);
    }
    emit_as::<SchedExit, TYPED>(kind::SCHED_EXIT, |r| unsafe {
        addr_of_mut!((*r).exit_code).write(exit_code as u32);
        addr_of_mut!((*r).group_dead).write(group_dead);
    });
    if group_dead != 0 {
        remove_if_present(&SUBREAPERS, tgid);
        if cfg(&CONFIG.follow_all) == 0 {
            let _ = FOLLOWED.remove(&tgid);
            let _ = DYING.insert(&(pid_tgid as u32), &(task as u64), 0);
        }
    }
    Ok(0)
}

/// The current task is a followed process's last thread, past its exit tracepoint (see
/// DYING): the signals it raises while it dies are the followed process's.
#[inline(always)]
fn current_is_dying_followed() -> bool {
    let tid = bpf_get_current_pid_tgid() as u32;
    // SAFETY: the value is copied out at once.
    let Some(&task) = (unsafe { DYING.get(&tid) }) else {
        return false;
    };
    // SAFETY: the current task pointer, only compared.
    task == unsafe { bpf_get_current_task() }
}

#[tracepoint]
pub fn sched_process_exit(ctx: TracePointContext) -> u32 {
    try_sched_exit(&ctx).unwrap_or(1)
}

/// The typed tracepoint (tp_btf): TP_PROTO(struct task_struct *p, bool group_dead).
#[btf_tracepoint(function = "sched_process_exit")]
pub fn sched_process_exit_btf(ctx: BtfTracePointContext) -> i32 {
    let group_dead = (ctx.arg::<u64>(1) & 0xff != 0) as u32;
    sched_exit::<true>(|_| Ok(group_dead)).map_or(1, |r| r as i32)
}

// ---- task tracepoints: the "sched" probe set's stand-ins for syscall probes ----------------
//
// Any enabled syscall tracepoint puts every syscall of every task on the kernel's slower
// traced-syscall path. Without them, clone flags come from task_newtask, PR_SET_NAME from
// task_rename, and PR_SET_CHILD_SUBREAPER from the process's signal_struct.

fn try_newtask(ctx: &TracePointContext) -> Result<u32, i32> {
    if !traced(current_tgid()) {
        return Ok(0);
    }
    newtask::<false>(tp_field(ctx, &CONFIG.newtask_flags)?)
}

/// A new task of the current (traced) process, made with clone `flags`.
#[inline(always)]
fn newtask<const TYPED: bool>(flags: u64) -> Result<u32, i32> {
    let pid_tgid = bpf_get_current_pid_tgid();
    let tgid = (pid_tgid >> 32) as u32;
    let pending = PendingClone {
        flags: flags & !CSIGNAL,
        syscall: syscall::UNKNOWN,
        _pad: 0,
    };
    // Read back (and removed) by sched_process_fork, which follows in the same call. (io_uring
    // and vhost workers get no sched_process_fork: their entry waits for the creator's next
    // clone, which replaces it, or its exit, which removes it.)
    let _ = PENDING.insert(&(pid_tgid as u32), &pending, 0);
    if flags & CLONE_THREAD == 0 {
        report_subreaper::<TYPED>(tgid);
    }
    Ok(0)
}

/// A child subreaper is reported (a `Subreaper` record: no prctl call is seen) the first time it
/// creates a process, or, if it set the flag after creating its children, when one of its
/// descendants dies (before the kernel reparents that one's children): before either, nobody
/// can have been adopted by it.
#[inline(always)]
fn report_subreaper<const TYPED: bool>(tgid: u32) {
    // The current task; fields read at BTF offsets (see read_field).
    let task = current_task::<TYPED>();
    let on = is_subreaper::<TYPED>(task, cfg(&CONFIG.signal_subreaper_bit));
    if on && first_report(tgid) {
        emit_subreaper::<TYPED>(true);
    } else if !on && remove_if_present(&SUBREAPERS, tgid) {
        // Cleared since it was reported (conmon does so before it runs its exit command, so
        // that command is not reparented to it): say so before this child exists.
        emit_subreaper::<TYPED>(false);
    }
}

/// A `Subreaper` record of the current task's process.
#[inline(always)]
fn emit_subreaper<const TYPED: bool>(on: bool) {
    // SAFETY: `r` is the reserved record emit hands over, written field by field.
    emit_as::<Subreaper, TYPED>(kind::SUBREAPER, |r| unsafe {
        addr_of_mut!((*r).on).write(u32::from(on));
        addr_of_mut!((*r)._pad).write(0);
    });
}

/// Whether `task`'s signal_struct has bitfield `bit` set (is/has_child_subreaper).
#[inline(always)]
fn is_subreaper<const TYPED: bool>(task: *const u8, bit: u32) -> bool {
    let sig: u64 = read_field::<TYPED, u64>(task, cfg(&CONFIG.task_signal)).unwrap_or(0);
    sig != 0 && bit_set::<TYPED>(sig as *const u8, bit)
}

/// Deletes `key` if it is there (a lock-free lookup first: the delete itself takes the
/// bucket's lock); whether it was.
#[inline(always)]
fn remove_if_present<V>(map: &HashMap<u32, V>, key: u32) -> bool {
    // SAFETY: the value is not used beyond this check.
    unsafe { map.get(&key) }.is_some() && map.remove(&key).is_ok()
}

/// True once per subreaper process (atomic: two of its threads may fork at once).
#[inline(always)]
fn first_report(tgid: u32) -> bool {
    const BPF_NOEXIST: u64 = 1;
    SUBREAPERS.insert(&tgid, &1, BPF_NOEXIST).is_ok()
}

/// At a process's death, the nearest subreaper among its ancestors will adopt its children
/// (the kernel's find_new_reaper): report it now if it never was. `has_child_subreaper`
/// says whether there is one at all, so the usual death costs one read.
#[inline(always)]
fn report_ancestor_subreaper<const TYPED: bool>(task: *const u8) {
    if !is_subreaper::<TYPED>(task, cfg(&CONFIG.signal_has_subreaper_bit)) {
        return;
    }
    let mut t: u64 = task_read(task, cfg(&CONFIG.task_real_parent)).unwrap_or(0);
    for _ in 0..16 {
        let tgid = task_read::<i32>(t as *const u8, cfg(&CONFIG.task_tgid)).unwrap_or(0) as u32;
        if t == 0 || tgid <= 1 {
            return;
        }
        if is_subreaper::<false>(t as *const u8, cfg(&CONFIG.signal_subreaper_bit)) {
            if traced(tgid) && first_report(tgid) {
                emit_subreaper_of(t as *const u8, tgid);
            }
            return;
        }
        t = task_read(t as *const u8, cfg(&CONFIG.task_real_parent)).unwrap_or(0);
    }
}

/// A `Subreaper` record (the flag set) on behalf of another process (`task`, its leader).
#[inline(always)]
fn emit_subreaper_of(task: *const u8, tgid: u32) {
    let parent: u64 = task_read(task, cfg(&CONFIG.task_real_parent)).unwrap_or(0);
    let ppid = task_read::<i32>(parent as *const u8, cfg(&CONFIG.task_tgid)).unwrap_or(0);
    let comm: [u8; 16] = task_read(task, cfg(&CONFIG.task_comm)).unwrap_or([0; 16]);
    // SAFETY: `r` is the reserved record emit hands over, written field by field.
    emit::<Subreaper>(kind::SUBREAPER, |r| unsafe {
        addr_of_mut!((*r).hdr.tgid).write(tgid);
        addr_of_mut!((*r).hdr.tid).write(tgid);
        addr_of_mut!((*r).hdr.ppid).write(ppid as u32);
        addr_of_mut!((*r).hdr.comm).write(comm);
        // Not read for another task: "unknown" (docs/events.md).
        addr_of_mut!((*r).hdr.uid).write(u32::MAX);
        addr_of_mut!((*r).hdr.cgroup_id).write(0);
        addr_of_mut!((*r).on).write(1);
        addr_of_mut!((*r)._pad).write(0);
    });
}

#[tracepoint]
pub fn task_newtask(ctx: TracePointContext) -> u32 {
    try_newtask(&ctx).unwrap_or(1)
}

/// The typed tracepoint (tp_btf): TP_PROTO(struct task_struct *task, u64 clone_flags).
#[btf_tracepoint(function = "task_newtask")]
pub fn task_newtask_btf(ctx: BtfTracePointContext) -> i32 {
    if !traced(current_tgid()) {
        return 0;
    }
    newtask::<true>(ctx.arg::<u64>(1)).map_or(1, |r| r as i32)
}

fn try_rename(ctx: &TracePointContext) -> Result<u32, i32> {
    let pid_tgid = bpf_get_current_pid_tgid();
    if !traced((pid_tgid >> 32) as u32) {
        return Ok(0);
    }
    let pid: i32 = tp_field(ctx, &CONFIG.rename_pid)?;
    // Renaming another task (a write to /proc/PID/comm) is not that task's prctl.
    if pid as u32 != pid_tgid as u32 {
        return Ok(0);
    }
    rename::<false>(|| tp_field(ctx, &CONFIG.rename_newcomm))
}

/// The current (traced) task renamed itself; `name` reads the new name.
#[inline(always)]
fn rename<const TYPED: bool>(name: impl FnOnce() -> Result<[u8; 16], i32>) -> Result<u32, i32> {
    // exec renames the task to its file's basename: that is reported as the exec. io_uring
    // and vhost workers name themselves in the kernel: no prctl either.
    // The current task; fields read at BTF offsets (see read_field).
    let task = current_task::<TYPED>();
    const PF_IO_WORKER: u32 = 0x10;
    const PF_USER_WORKER: u32 = 0x4000;
    let pf: u32 = read_field::<TYPED, u32>(task, cfg(&CONFIG.task_flags)).unwrap_or(0);
    let in_execve = bit_set::<TYPED>(task, cfg(&CONFIG.task_in_execve_bit));
    if in_execve || pf & (PF_IO_WORKER | PF_USER_WORKER) != 0 {
        return Ok(0);
    }
    let name = name()?;
    emit_as::<PrctlEnter, TYPED>(kind::PRCTL_ENTER, |r| unsafe {
        addr_of_mut!((*r).option).write(prctl::PR_SET_NAME);
        addr_of_mut!((*r).arg2).write(0);
        addr_of_mut!((*r).name).write(name);
        addr_of_mut!((*r).flags).write(0);
    });
    Ok(0)
}

#[tracepoint]
pub fn task_rename(ctx: TracePointContext) -> u32 {
    try_rename(&ctx).unwrap_or(1)
}

fn try_rename_btf(ctx: &BtfTracePointContext) -> Result<u32, i32> {
    if !traced(current_tgid()) {
        return Ok(0);
    }
    // TP_PROTO(struct task_struct *task, const char *comm). Renaming another task (a write
    // to /proc/PID/comm) is not that task's prctl.
    let task: *const u8 = ctx.arg(0);
    // SAFETY: the current task pointer, only compared.
    if task as u64 != unsafe { bpf_get_current_task() } {
        return Ok(0);
    }
    let comm: *const u8 = ctx.arg(1);
    rename::<true>(|| {
        let mut name = [0u8; 16];
        // SAFETY: a kernel string read with a probe read into the buffer (NUL-terminated,
        // as the task's comm is).
        unsafe { bpf_probe_read_kernel_str_bytes(comm, &mut name) }.map_err(|_| 1)?;
        Ok(name)
    })
}

/// The typed tracepoint (tp_btf): the task and the new name handed over in place.
#[btf_tracepoint(function = "task_rename")]
pub fn task_rename_btf(ctx: BtfTracePointContext) -> i32 {
    try_rename_btf(&ctx).map_or(1, |r| r as i32)
}

#[cfg(not(test))]
// ---- cgroup moves ---------------------------------------------------------------------------

fn try_cgroup_attach(ctx: &TracePointContext) -> Result<u32, i32> {
    let root: i32 = tp_field(ctx, &CONFIG.cgattach_root)?;
    let want = cfg(&CONFIG.cgroup_hierarchy);
    if want != NO_OFFSET && root as u32 != want {
        return Ok(0);
    }
    let pid = tp_field::<i32>(ctx, &CONFIG.cgattach_pid)? as u32;
    // The mover (runc) or the moved task (a followed process leader) must be traced.
    if !traced(current_tgid()) && !traced(pid) {
        return Ok(0);
    }
    let level: i32 = tp_field(ctx, &CONFIG.cgattach_level)?;
    let id: u64 = tp_field(ctx, &CONFIG.cgattach_id)?;
    let loc: u32 = tp_field(ctx, &CONFIG.cgattach_path)?;
    // __data_loc: low 16 bits offset from the record start, high 16 bits length.
    // SAFETY: an offset inside this tracepoint's record, read below with a probe read.
    let src = unsafe { (ctx.as_ptr() as *const u8).add((loc & 0xffff) as usize) };
    // SAFETY: `r` is the reserved record; each field is written in place, the path through a
    // probe read bounded by the buffer.
    emit::<CgroupAttach>(kind::CGROUP_ATTACH, |r| unsafe {
        addr_of_mut!((*r).pid).write(pid);
        addr_of_mut!((*r).hierarchy).write(root as u32);
        addr_of_mut!((*r).level).write(level as u32);
        addr_of_mut!((*r).cgroup_id).write(id);
        let path = &mut *addr_of_mut!((*r).path);
        let read = bpf_probe_read_kernel_str_bytes(src, path).map(|s| s.len());
        let flags = str_flags(
            read,
            path,
            strflag::FILENAME_TRUNCATED,
            strflag::FILENAME_FAULT,
        );
        addr_of_mut!((*r).flags).write(flags);
    });
    Ok(0)
}

#[tracepoint]
pub fn cgroup_attach_task(ctx: TracePointContext) -> u32 {
    try_cgroup_attach(&ctx).unwrap_or(1)
}

// ---- signals and OOM kills ------------------------------------------------------------------

// The `info` values that are not pointers (include/linux/sched/signal.h).
const SEND_SIG_NOINFO: u64 = 0;
const SEND_SIG_PRIV: u64 = 1;
// include/uapi/asm-generic/siginfo.h
const SI_USER: i32 = 0;
const SI_KERNEL: i32 = 0x80;
/// `kernel_siginfo::si_code`: after `si_signo` and `si_errno` (the __SIGINFO layout, fixed
/// by the uapi siginfo_t it mirrors).
const SI_CODE_OFFSET: usize = 8;

/// Whether signal `sig` is in the configured mask (bit sig − 1).
#[inline(always)]
fn signal_wanted(sig: u32) -> bool {
    // SAFETY: CONFIG lives in .rodata; volatile keeps the compiler from folding the default.
    let mask = unsafe { read_volatile(&CONFIG.signal_mask) };
    (1..=64).contains(&sig) && mask & (1u64 << ((sig - 1) & 63)) != 0
}

/// `si_code` as the tracepoint's own TP_STORE_SIGINFO (include/trace/events/signal.h)
/// computes it: the two non-pointer `info` values stand for SI_USER and SI_KERNEL.
#[inline(always)]
fn si_code(info: u64) -> i32 {
    match info {
        SEND_SIG_NOINFO => SI_USER,
        SEND_SIG_PRIV => SI_KERNEL,
        // SAFETY: a kernel pointer handed over by the tracepoint, read with a probe read.
        p => unsafe { bpf_probe_read_kernel((p as usize + SI_CODE_OFFSET) as *const i32) }
            .unwrap_or(0),
    }
}

fn try_signal_generate(ctx: &RawTracePointContext) -> Result<u32, i32> {
    // TP_PROTO(int sig, struct kernel_siginfo *info, struct task_struct *task, int group,
    //          int result), fired by __send_signal_locked (kernel/signal.c) for every
    // signal generated, delivered or not.
    let sig = ctx.arg::<u64>(0) as u32;
    if !signal_wanted(sig) {
        return Ok(0);
    }
    let task: *const u8 = ctx.arg(2);
    let tgid = task_read::<i32>(task, cfg(&CONFIG.task_tgid)).ok_or(1)? as u32;
    if !traced(current_tgid()) && !traced(tgid) && !current_is_dying_followed() {
        return Ok(0);
    }
    let tid = task_read::<i32>(task, cfg(&CONFIG.task_pid)).unwrap_or(0) as u32;
    let code = si_code(ctx.arg(1));
    let group = (ctx.arg::<u64>(3) as u32 != 0) as u32;
    let result = ctx.arg::<u64>(4) as u32;
    // SAFETY: `r` is the reserved record; each field is written in place.
    emit::<SignalGenerate>(kind::SIGNAL, |r| unsafe {
        addr_of_mut!((*r).signal).write(sig as i32);
        addr_of_mut!((*r).code).write(code);
        addr_of_mut!((*r).target_tid).write(tid);
        addr_of_mut!((*r).target_tgid).write(tgid);
        addr_of_mut!((*r).group).write(group);
        addr_of_mut!((*r).result).write(result);
    });
    Ok(0)
}

/// The raw tracepoint, for the target task itself: the classic one copies only its pid.
#[raw_tracepoint(tracepoint = "signal_generate")]
pub fn signal_generate(ctx: RawTracePointContext) -> i32 {
    try_signal_generate(&ctx).map_or(1, |r| r as i32)
}

/// A memory field of mark_victim (KiB); 0 where this kernel's tracepoint lacks it.
#[inline(always)]
fn oom_field(ctx: &TracePointContext, off: &u32) -> u64 {
    tp_field::<u64>(ctx, off).unwrap_or(0)
}

fn try_mark_victim(ctx: &TracePointContext) -> Result<u32, i32> {
    // mark_oom_victim (mm/oom_kill.c), from __oom_kill_process right after the victim's
    // SIGKILL, in the context of the task whose allocation failed.
    let pid = tp_field::<i32>(ctx, &CONFIG.oom_pid)? as u32;
    if !traced(current_tgid()) && !traced(pid) {
        return Ok(0);
    }
    let total_vm = oom_field(ctx, &CONFIG.oom_total_vm);
    let anon = oom_field(ctx, &CONFIG.oom_anon_rss);
    let file = oom_field(ctx, &CONFIG.oom_file_rss);
    let shmem = oom_field(ctx, &CONFIG.oom_shmem_rss);
    let adj = tp_field::<i16>(ctx, &CONFIG.oom_score_adj).unwrap_or(0);
    // Woken at once: userspace reads the victim's /proc/PID/cgroup, which is gone once the
    // victim is reaped.
    // SAFETY: `r` is the reserved record; each field is written in place.
    emit_waking::<OomVictim>(kind::OOM_VICTIM, true, |r| unsafe {
        addr_of_mut!((*r).tid).write(pid);
        addr_of_mut!((*r).oom_score_adj).write(i32::from(adj));
        addr_of_mut!((*r).total_vm).write(total_vm);
        addr_of_mut!((*r).anon_rss).write(anon);
        addr_of_mut!((*r).file_rss).write(file);
        addr_of_mut!((*r).shmem_rss).write(shmem);
        // No task here: the memory cgroup is left to userspace (a kernel before 6.2).
        addr_of_mut!((*r).memcg_id).write(0);
        addr_of_mut!((*r).memcg_limit).write(0);
        addr_of_mut!((*r).memcg_flags).write(0);
        addr_of_mut!((*r).memcg_depth).write(0);
    });
    Ok(0)
}

/// The classic tracepoint, where the raw one cannot give the victim task (before 6.2).
#[tracepoint]
pub fn mark_victim(ctx: TracePointContext) -> u32 {
    try_mark_victim(&ctx).unwrap_or(1)
}

/// An mm counter (`mm->rss_stat[i]`, a percpu_counter's global count) in KiB.
#[inline(always)]
fn mm_counter_kb(mm: *const u8, i: u32) -> u64 {
    let (base, size) = (cfg(&CONFIG.mm_rss_stat), cfg(&CONFIG.percpu_counter_size));
    let count = cfg(&CONFIG.percpu_counter_count);
    if base == NO_OFFSET || size == NO_OFFSET || count == NO_OFFSET {
        return 0;
    }
    let n = task_read::<i64>(mm, base + (i & 3) * (size & 0xff) + count).unwrap_or(0);
    (if n < 0 { 0 } else { n as u64 }) * u64::from(cfg(&CONFIG.page_kb))
}

/// The victim's memory cgroup, as the kernel names it, into `r`: the memory controller's css
/// of its css_set, that cgroup's kernfs node (id, name and ancestors' names) and the
/// mem_cgroup's limit (the css is its first member).
///
/// # Safety
/// `r` points at a reserved, writable OomVictim.
#[inline(always)]
unsafe fn victim_memcg(task: *const u8, r: *mut OomVictim) {
    let cset: u64 = task_read(task, cfg(&CONFIG.task_cgroups)).unwrap_or(0);
    let (subsys, idx) = (cfg(&CONFIG.cssset_subsys), cfg(&CONFIG.memory_cgrp_id));
    let css: u64 = if subsys == NO_OFFSET || idx > 15 {
        0
    } else {
        task_read(cset as *const u8, subsys + (idx & 15) * 8).unwrap_or(0)
    };
    let cgrp: u64 = task_read(css as *const u8, cfg(&CONFIG.css_cgroup)).unwrap_or(0);
    let mut kn: u64 = task_read(cgrp as *const u8, cfg(&CONFIG.cgroup_kn)).unwrap_or(0);
    let id = task_read::<u64>(kn as *const u8, cfg(&CONFIG.kn_id));
    let max = task_read::<u64>(css as *const u8, cfg(&CONFIG.memcg_max));
    let mut flags = 0;
    let mut depth = 0u32;
    // SAFETY: the caller's record; a reserved record's bytes are not zeroed.
    unsafe {
        addr_of_mut!((*r).memcg_id).write(0);
        addr_of_mut!((*r).memcg_limit).write(0);
    }
    if let Some(id) = id {
        flags |= memcgflag::KNOWN;
        // SAFETY: the caller's record.
        unsafe { addr_of_mut!((*r).memcg_id).write(id) };
    }
    if let Some(pages) = max {
        flags |= memcgflag::LIMIT;
        // No 128-bit multiply on BPF: a count this large is "no limit" anyway.
        let page = u64::from(cfg(&CONFIG.page_kb)) * 1024;
        let bytes = if pages >= 1 << 50 {
            u64::MAX
        } else {
            pages * page
        };
        // SAFETY: the caller's record.
        unsafe { addr_of_mut!((*r).memcg_limit).write(bytes) };
    }
    for i in 0..MEMCG_DEPTH {
        let parent: u64 = task_read(kn as *const u8, cfg(&CONFIG.kn_parent)).unwrap_or(0);
        // SAFETY: the caller's record; slot `i` is in bounds.
        let slot = unsafe { &mut (*addr_of_mut!((*r).memcg_path))[i] };
        slot[0] = 0;
        if kn == 0 || parent == 0 {
            // The hierarchy's root (no parent) is not part of a cgroup's path.
            continue;
        }
        let name: u64 = task_read(kn as *const u8, cfg(&CONFIG.kn_name)).unwrap_or(0);
        // SAFETY: a kernel string read with a probe read into the slot.
        let read = unsafe { bpf_probe_read_kernel_str_bytes(name as *const u8, slot) };
        flags |= str_flags(read.map(|s| s.len()), slot, memcgflag::NAME_CUT, 0);
        depth += 1;
        kn = parent;
    }
    let above: u64 = task_read(kn as *const u8, cfg(&CONFIG.kn_parent)).unwrap_or(0);
    if kn != 0 && above != 0 {
        flags |= memcgflag::CUT;
    }
    // SAFETY: the caller's record.
    unsafe {
        addr_of_mut!((*r).memcg_flags).write(flags);
        addr_of_mut!((*r).memcg_depth).write(depth);
    }
}

fn try_mark_victim_raw(ctx: &RawTracePointContext) -> Result<u32, i32> {
    // TP_PROTO(struct task_struct *task, uid_t uid) since 6.2: mark_oom_victim (mm/oom_kill.c),
    // from __oom_kill_process right after the victim's SIGKILL, the victim still whole.
    let task: *const u8 = ctx.arg(0);
    let pid = task_read::<i32>(task, cfg(&CONFIG.task_pid)).ok_or(1)? as u32;
    let tgid = task_read::<i32>(task, cfg(&CONFIG.task_tgid)).ok_or(1)? as u32;
    if !traced(current_tgid()) && !traced(tgid) {
        return Ok(0);
    }
    let mm: u64 = task_read(task, cfg(&CONFIG.task_mm)).unwrap_or(0);
    let mm = mm as *const u8;
    let pages: u64 = task_read(mm, cfg(&CONFIG.mm_total_vm)).unwrap_or(0);
    let total_vm = pages * u64::from(cfg(&CONFIG.page_kb));
    let signal: u64 = task_read(task, cfg(&CONFIG.task_signal)).unwrap_or(0);
    let adj = task_read::<i16>(signal as *const u8, cfg(&CONFIG.signal_oom_score_adj));
    // SAFETY: `r` is the reserved record; each field is written in place.
    emit_waking::<OomVictim>(kind::OOM_VICTIM, true, |r| unsafe {
        addr_of_mut!((*r).tid).write(pid);
        addr_of_mut!((*r).oom_score_adj).write(i32::from(adj.unwrap_or(0)));
        addr_of_mut!((*r).total_vm).write(total_vm);
        // include/linux/mm_types_task.h: MM_FILEPAGES 0, MM_ANONPAGES 1, MM_SHMEMPAGES 3.
        addr_of_mut!((*r).anon_rss).write(mm_counter_kb(mm, 1));
        addr_of_mut!((*r).file_rss).write(mm_counter_kb(mm, 0));
        addr_of_mut!((*r).shmem_rss).write(mm_counter_kb(mm, 3));
        victim_memcg(task, r);
    });
    Ok(0)
}

/// The raw tracepoint: the victim task itself, so its memory cgroup and limit are read here,
/// at the kill, not from /proc after it (where an exiting victim shows none).
#[raw_tracepoint(tracepoint = "mark_victim")]
pub fn mark_victim_raw(ctx: RawTracePointContext) -> i32 {
    try_mark_victim_raw(&ctx).map_or(1, |r| r as i32)
}

#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    loop {}
}

#[unsafe(link_section = "license")]
#[unsafe(no_mangle)]
static LICENSE: [u8; 13] = *b"Dual MIT/GPL\0";
