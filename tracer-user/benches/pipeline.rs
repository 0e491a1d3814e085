//! Userspace hot paths: ring-buffer record decoding + lineage engine, and strace import.
//! Goals: decode + lineage >= 3M events/s on one core; strace import >= 500k lines/s.
//! Criterion prints the throughput (elem/s) of each.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use tracer::decode::{decode, to_bytes};
use tracer::event::EventKind;
use tracer::lineage::Engine;
use tracer_common::{
    clone_flags as cf, kind, syscall as sc, CloneEnter, ExecEnter, ExitEnter, Header, SchedExec,
    SchedExit, SchedFork, SysExit, ARGV_BYTES, EXEC_ENTER_HEAD, FILENAME_LEN,
};

/// Counts live heap bytes, for the engine's memory per process record.
struct Counting;

static HEAP: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator; only adds bookkeeping.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        HEAP.fetch_add(l.size(), Ordering::Relaxed);
        // SAFETY: the caller's layout contract is passed on unchanged.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        HEAP.fetch_sub(l.size(), Ordering::Relaxed);
        // SAFETY: `p` came from `alloc` with this layout.
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn hdr(kind: u32, size: usize, seq: u64, pid: u32, ppid: u32) -> Header {
    let mut comm = [0u8; 16];
    comm[..2].copy_from_slice(b"sh");
    Header {
        kind,
        size: size as u32,
        seq,
        ktime_ns: seq * 1000,
        cgroup_id: 1,
        tgid: pid,
        tid: pid,
        ppid,
        uid: 0,
        comm,
    }
}

/// A fork/exec/exit storm as the probes would emit it: per child 9 records
/// (clone enter, fork, exit in parent and child, exec enter, exec, exec exit, exit_group, exit).
fn wire_stream(events: usize) -> Vec<Vec<u8>> {
    let mut out = Vec::with_capacity(events);
    let mut seq = 0u64;
    let mut child = 2000u32;
    while out.len() < events {
        child = if child >= 4_000_000 { 2000 } else { child + 1 };
        let mut s = || {
            seq += 1;
            seq
        };
        shell_clones(&mut out, &mut s, child);
        child_runs_true(&mut out, &mut s, child);
    }
    out.truncate(events);
    out
}

/// The shell (1000, child of init) clones `child`: clone enter, fork, the clone's exit in
/// parent and child. `s` gives the next seq.
fn shell_clones(out: &mut Vec<Vec<u8>>, s: &mut impl FnMut() -> u64, child: u32) {
    let (shell, init) = (1000u32, 1u32);
    let next = |out: &mut Vec<Vec<u8>>, bytes: Vec<u8>| out.push(bytes);
    next(
        out,
        to_bytes(&CloneEnter {
            hdr: hdr(kind::CLONE_ENTER, 80, s(), shell, init),
            syscall: sc::CLONE,
            exit_signal: 17,
            flags: cf::CLONE_CHILD_SETTID,
        }),
    );
    next(
        out,
        to_bytes(&SchedFork {
            hdr: hdr(
                kind::SCHED_FORK,
                std::mem::size_of::<SchedFork>(),
                s(),
                shell,
                init,
            ),
            child_tid: child,
            child_tgid: child,
            child_ppid: shell,
            syscall: sc::CLONE,
            clone_flags: cf::CLONE_CHILD_SETTID,
            flags_known: 1,
            ns_level: 1,
            ns_inum: 4026532500,
            ns_pid: 2,
        }),
    );
    next(
        out,
        to_bytes(&SysExit {
            hdr: hdr(kind::SYS_EXIT, 80, s(), shell, init),
            syscall: sc::CLONE,
            _pad: 0,
            ret: child as i64,
        }),
    );
    next(
        out,
        to_bytes(&SysExit {
            hdr: hdr(kind::SYS_EXIT, 80, s(), child, shell),
            syscall: sc::CLONE,
            _pad: 0,
            ret: 0,
        }),
    );
}

/// `child` execs /bin/true and exits: exec enter, exec, exec exit, exit_group, exit.
fn child_runs_true(out: &mut Vec<Vec<u8>>, s: &mut impl FnMut() -> u64, child: u32) {
    let shell = 1000u32;
    let next = |out: &mut Vec<Vec<u8>>, bytes: Vec<u8>| out.push(bytes);
    let mut ex = ExecEnter {
        hdr: hdr(kind::EXEC_ENTER, EXEC_ENTER_HEAD + 5, s(), child, shell),
        syscall: sc::EXECVE,
        argv_len: 5,
        flags: 0,
        at_flags: 0,
        dirfd: -100,
        filename: [0; FILENAME_LEN],
        argv: [0; ARGV_BYTES],
    };
    ex.filename[..9].copy_from_slice(b"/bin/true");
    ex.argv[..5].copy_from_slice(b"true\0");
    let mut bytes = to_bytes(&ex);
    bytes.truncate(EXEC_ENTER_HEAD + 5);
    next(out, bytes);
    let mut se = SchedExec {
        hdr: hdr(
            kind::SCHED_EXEC,
            std::mem::size_of::<SchedExec>(),
            s(),
            child,
            shell,
        ),
        old_tid: child,
        flags: 0,
        // No credentials or executable read (cred_flags 0), as on a kernel without them.
        euid: 0,
        fsuid: 0,
        userns_level: 0,
        pidns_level: 0,
        mnt_ns: 0,
        cred_flags: 0,
        exe_ino: 0,
        exe_dev: 0,
        exe_uid: 0,
        exe_mode: 0,
        exe_nlink: 0,
        filename: [0; FILENAME_LEN],
    };
    se.filename[..9].copy_from_slice(b"/bin/true");
    next(out, to_bytes(&se));
    next(
        out,
        to_bytes(&SysExit {
            hdr: hdr(kind::SYS_EXIT, 80, s(), child, shell),
            syscall: sc::EXECVE,
            _pad: 0,
            ret: 0,
        }),
    );
    next(
        out,
        to_bytes(&ExitEnter {
            hdr: hdr(kind::EXIT_ENTER, 72, s(), child, shell),
            syscall: sc::EXIT_GROUP,
            code: 0,
        }),
    );
    next(
        out,
        to_bytes(&SchedExit {
            hdr: hdr(kind::SCHED_EXIT, 72, s(), child, shell),
            exit_code: 0,
            group_dead: 1,
        }),
    );
}

/// An `strace -f -tt` log of the same storm (7 lines per child).
fn strace_log(lines: usize) -> String {
    let mut s = String::with_capacity(lines * 90);
    s.push_str("strace: Process 1000 attached\n");
    let mut n = 1;
    let mut child = 2000u32;
    while n < lines {
        child += 1;
        s.push_str(&format!("[pid  1000] 10:00:00.000001 clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD, child_tidptr=0x7f) = {child}\n"));
        s.push_str(&format!("strace: Process {child} attached\n"));
        s.push_str(&format!("[pid {child}] 10:00:00.000002 execve(\"/bin/true\", [\"true\"], 0x7ffc /* 20 vars */) = 0\n"));
        s.push_str(&format!(
            "[pid {child}] 10:00:00.000003 exit_group(0) = ?\n"
        ));
        s.push_str(&format!(
            "[pid {child}] 10:00:00.000004 +++ exited with 0 +++\n"
        ));
        s.push_str(
            "[pid  1000] 10:00:00.000005 --- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED} ---\n",
        );
        s.push_str("[pid  1000] 10:00:00.000006 wait4(-1, NULL, 0, NULL) = 0\n");
        n += 7;
    }
    s
}

fn bench(c: &mut Criterion) {
    const N: usize = 450_000;
    let stream = wire_stream(N);
    let mut g = c.benchmark_group("pipeline");
    g.sample_size(10);
    g.throughput(Throughput::Elements(N as u64));
    g.bench_function("decode", |b| {
        b.iter(|| {
            for r in &stream {
                black_box(decode(r).ok());
            }
        })
    });
    g.bench_function("decode+lineage", |b| {
        b.iter_batched(
            Engine::new,
            |mut engine| {
                for r in &stream {
                    if let Ok(ev) = decode(r) {
                        engine.apply(&ev);
                    }
                }
                engine
            },
            BatchSize::PerIteration,
        )
    });
    // The engine alone, on events decoded beforehand.
    let events: Vec<_> = stream.iter().filter_map(|r| decode(r).ok()).collect();
    g.bench_function("lineage", |b| {
        b.iter_batched(
            Engine::new,
            |mut engine| {
                events.iter().for_each(|ev| engine.apply(ev));
                engine
            },
            BatchSize::PerIteration,
        )
    });
    let log = strace_log(N);
    let lines = log.lines().count() as u64;
    g.throughput(Throughput::Elements(lines));
    g.bench_function("strace-import (lines)", |b| {
        b.iter(|| black_box(tracer::strace::parse_log(&log).map(|i| i.events.len())))
    });
    g.bench_function("strace-import reader (lines)", |b| {
        b.iter(|| black_box(tracer::strace::parse_reader(log.as_bytes()).map(|i| i.events.len())))
    });
    g.finish();
}

/// `tracer tree --format json`: the tree streamed one process at a time to the writer (memory
/// stays at the engine's; the whole-document value it replaced peaked at 3.8 GB for 400k
/// processes, BENCHMARKS.md).
fn bench_tree_json(c: &mut Criterion) {
    const PROCS: u32 = 100_000;
    let mut e = Engine::new();
    for ev in tracer::synth::fork_tree(PROCS) {
        e.apply(&ev);
    }
    let mut g = c.benchmark_group("tree_json");
    g.throughput(Throughput::Elements(u64::from(PROCS)));
    g.sample_size(10);
    g.bench_function("stream_100k_procs", |b| {
        b.iter(|| {
            tracer::lineage::write_tree_json(black_box(&e), &[], None, &mut std::io::sink())
                .unwrap()
        })
    });
    g.finish();
}

/// Heap bytes per process record held by the engine (BENCHMARKS.md): live processes (the
/// storm without its exits) and exited ones (the whole storm), each exec'd once.
fn memory_per_process(_: &mut Criterion) {
    let events: Vec<_> = wire_stream(450_000)
        .iter()
        .filter_map(|r| decode(r).ok())
        .collect();
    let per_record = |live: bool| {
        let before = HEAP.load(Ordering::Relaxed);
        let mut e = Engine::new();
        let exit =
            |k: &EventKind| matches!(k, EventKind::TaskExit { .. } | EventKind::ExitEnter { .. });
        for ev in events.iter().filter(|ev| !(live && exit(&ev.kind))) {
            e.apply(ev);
        }
        let bytes = HEAP.load(Ordering::Relaxed).saturating_sub(before);
        let n = e.process_count().max(1);
        (bytes / n, n)
    };
    let (live, n) = per_record(true);
    let (exited, m) = per_record(false);
    println!("engine memory: {live} B per live process ({n} held), {exited} B per exited process ({m} held)");
}

criterion_group!(benches, bench, bench_tree_json, memory_per_process);
criterion_main!(benches);
