//! A process that makes exactly the lifecycle syscalls it is told to, so root tests can
//! trace it and assert exact results. Each step prints nothing (but `pace` and `burst`, which
//! print what they made, for the bench); the exit codes are fixed.
//!
//! Usage: actor [ARGS... --] STEP...   (with `--`, only what follows it are steps: the
//! arguments before it are there for argv to claim something, e.g. `runc create ID`) Steps:
//!   fork            glibc fork() (the clone syscall); child exits 3
//!   sysfork         the fork syscall itself; child exits 8
//!   vfork           vfork(); child exits 4
//!   clone-parent    clone(CLONE_PARENT|SIGCHLD); child exits 5 (its parent is our parent)
//!   clone3          clone3({exit_signal=SIGCHLD}); child exits 6
//!   thread          a pthread (CLONE_THREAD) that exits
//!   name            prctl(PR_SET_NAME, "actor-renamed")
//!   name:NAME       prctl(PR_SET_NAME, NAME)
//!   stages          what `runc init` does, without being runc: rename to runc:[0:PARENT],
//!                   clone(CLONE_PARENT) a child that renames to runc:[1:CHILD] and clones
//!                   (CLONE_PARENT) one that renames to runc:[2:INIT] and exits 0 after 300 ms
//!   subreaper       prctl(PR_SET_CHILD_SUBREAPER, 1)
//!   late-subreaper  fork a child (exits 9 after 200 ms) that forks a grandchild (exits 10
//!                   after 400 ms); then become a subreaper, create nothing more, and reap
//!                   both (the grandchild is adopted when the child exits)
//!   exec-fail       execve("/nonexistent/actor") → ENOENT
//!   storm:N         N × fork() whose children exit at once
//!   threads:N       N × a thread that exits at once (the cheapest clone/exit burst)
//!   pace:MODE:RATE:SECS[:WORKERS]
//!                   lifetimes of MODE (`vfork`: a vfork() child that exits at once and is
//!                   reaped; `fork`: the same with fork(); `thread`: a std thread that exits and
//!                   is joined; `clone-thread`: a bare clone(CLONE_THREAD) on a stack kept for
//!                   reuse, whose child only exits, waited for on its cleared tid, the
//!                   cheapest thread lifetime) at RATE lifetimes/s in all (0: as fast as it
//!                   can) for SECS seconds, over WORKERS threads (default one per CPU); prints
//!                   `lifetimes N seconds S`
//!   burst:MODE:N    N lifetimes of MODE as fast as it can, over the workers; prints the same
//!   signals:RATE:SECS
//!                   kill(getpid(), SIGUSR1) with a handler that does nothing, from the main
//!                   thread (the one a process-directed signal wakes), at RATE signals/s (0:
//!                   as fast as it can) for SECS seconds; prints `signals N seconds S`
//!   exit:N          exit_group(N)
//!   sigkill         kill(getpid(), SIGKILL)
//!   cgroup:DIR      move into the cgroup at DIR (writes its pid to DIR/cgroup.procs); exits
//!                   11 if it cannot
//!   eat-memory      allocate and touch memory, 1 MiB at a time, until killed (a memory
//!                   cgroup's OOM killer); exits 12 after 4 GiB untouched by it
//!   exec:PATH       execve(PATH, [PATH]) (ends the step list)

use std::ffi::CString;

fn wait_child(pid: libc::pid_t) {
    let mut status = 0;
    // SAFETY: plain waitpid on our own child.
    unsafe { libc::waitpid(pid, &mut status, 0) };
}

/// Touches 1 MiB after another and keeps it, until the OOM killer ends this process.
fn eat_memory() -> ! {
    const MIB: usize = 1 << 20;
    let mut kept: Vec<Vec<u8>> = Vec::new();
    for _ in 0..4096 {
        let mut block = vec![0u8; MIB];
        for page in block.chunks_mut(4096) {
            // A zeroed allocation may be unbacked until written: write every page.
            // SAFETY: a valid, exclusive pointer into this block.
            unsafe { std::ptr::write_volatile(page.as_mut_ptr(), 1) };
        }
        kept.push(block);
    }
    // SAFETY: exiting without unwinding.
    unsafe { libc::_exit(12) }
}

/// Moves this process into the cgroup at `dir`.
fn enter_cgroup(dir: &str) {
    let procs = std::path::Path::new(dir).join("cgroup.procs");
    if std::fs::write(procs, std::process::id().to_string()).is_err() {
        // SAFETY: exiting without unwinding.
        unsafe { libc::_exit(11) }
    }
}

/// fork() a child that exits with `code` at once, and reap it.
fn fork_exit(code: i32) {
    // SAFETY: the child only calls _exit; waitpid on our own child.
    unsafe {
        let pid = libc::fork();
        if pid == 0 {
            libc::_exit(code);
        }
        wait_child(pid);
    }
}

/// vfork() a child that exits with `code` at once, and reap it. The child returns from
/// nothing: it only calls _exit, which vfork allows.
fn vfork_exit(code: i32) {
    // SAFETY: as above; the parent is suspended until the child's _exit.
    unsafe {
        #[allow(deprecated)]
        let pid = libc::vfork();
        if pid == 0 {
            libc::_exit(code);
        }
        wait_child(pid);
    }
}

/// One lifetime of `mode` (see the usage): a process or thread that starts and ends.
fn lifetime(mode: &str) {
    match mode {
        "vfork" => vfork_exit(0),
        "fork" => fork_exit(0),
        "thread" => std::thread::spawn(|| ()).join().expect("thread"),
        "clone-thread" => CLONE_STACK.with(|stack| clone_thread(&mut stack.borrow_mut())),
        other => {
            eprintln!("actor: unknown lifetime mode {other}");
            std::process::exit(2);
        }
    }
}

thread_local! {
    /// Each worker's stack for its `clone-thread` children, one at a time.
    static CLONE_STACK: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(vec![0; 64 << 10]);
}

/// What a `clone-thread` child runs: nothing (glibc's clone then calls the exit syscall).
extern "C" fn thread_body(_: *mut libc::c_void) -> libc::c_int {
    0
}

/// A thread that only exits, created by a bare clone() on `stack` (as pthread_create does,
/// without its stack allocation, TLS set-up and the Rust runtime's guard pages), then waited
/// for as pthread_join does: the kernel clears its tid word at its exit and wakes the futex.
fn clone_thread(stack: &mut [u8]) {
    let flags = libc::CLONE_VM
        | libc::CLONE_FS
        | libc::CLONE_FILES
        | libc::CLONE_SIGHAND
        | libc::CLONE_THREAD
        | libc::CLONE_SYSVSEM
        | libc::CLONE_PARENT_SETTID
        | libc::CLONE_CHILD_CLEARTID;
    let tid = std::sync::atomic::AtomicI32::new(0);
    // The stack grows down from its end, kept 16-byte aligned.
    let top = (stack.as_mut_ptr() as usize + stack.len()) & !15;
    // SAFETY: the child runs `thread_body` alone on `stack`, which nothing else uses until the
    // child is gone (waited for below, before this returns); it touches no memory of ours but
    // that stack and `tid`, which the kernel writes at its start and clears at its exit.
    let pid = unsafe {
        libc::clone(
            thread_body,
            top as *mut libc::c_void,
            flags,
            std::ptr::null_mut(),
            tid.as_ptr(),
            std::ptr::null_mut::<libc::c_void>(),
            tid.as_ptr(),
        )
    };
    if pid < 0 {
        eprintln!("actor: clone: {}", std::io::Error::last_os_error());
        std::process::exit(1);
    }
    // CLONE_PARENT_SETTID wrote the tid before clone returned; it is 0 once the child is gone.
    loop {
        let v = tid.load(std::sync::atomic::Ordering::Acquire);
        if v == 0 {
            break;
        }
        // SAFETY: a futex wait on a live aligned i32, woken by the kernel when it clears it.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                tid.as_ptr(),
                libc::FUTEX_WAIT,
                v,
                std::ptr::null::<libc::timespec>(),
            )
        };
    }
}

extern "C" fn on_usr1(_: libc::c_int) {}

/// kill(getpid(), SIGUSR1) at `rate` signals/s (0: unpaced) for `secs` seconds, from this
/// (the main) thread, the one the kernel picks first for a process-directed signal: no
/// other thread is woken. Paced by schedule in runs of 64, the clock read once a run.
fn signals(rate: f64, secs: f64) {
    // SAFETY: installing a handler that does nothing (async-signal-safe).
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_usr1 as extern "C" fn(libc::c_int) as usize;
        sa.sa_flags = libc::SA_RESTART;
        libc::sigaction(libc::SIGUSR1, &sa, std::ptr::null_mut());
    }
    const RUN: u64 = 64;
    let start = std::time::Instant::now();
    let mut done = 0u64;
    loop {
        let t = start.elapsed().as_secs_f64();
        if t >= secs {
            break;
        }
        if rate > 0.0 && done as f64 >= t * rate {
            std::thread::sleep(std::time::Duration::from_micros(100));
            continue;
        }
        for _ in 0..RUN {
            // SAFETY: a signal to ourselves that our handler takes.
            unsafe { libc::kill(libc::getpid(), libc::SIGUSR1) };
        }
        done += RUN;
    }
    println!(
        "signals {done} seconds {:.3}",
        start.elapsed().as_secs_f64()
    );
}

/// Lifetimes of `mode` over `workers` threads: at `rate` per second in all (0: unpaced)
/// until `secs` have passed or `count` lifetimes were made, whichever comes first. Pacing is
/// by schedule (lifetimes due so far), so a worker that fell behind catches up. Prints what
/// it made and how long it took, for the bench's sustained rate.
fn lifetimes(mode: &str, rate: f64, secs: f64, count: u64, workers: Option<u64>) {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    let workers = workers.unwrap_or(cpus).max(1);
    let start = std::time::Instant::now();
    let made: u64 = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|w| {
                // Worker w makes every workers-th lifetime of the count.
                let quota = count / workers + u64::from(w < count % workers);
                s.spawn(move || worker(mode, rate / workers as f64, secs, quota, start))
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("worker")).sum()
    });
    println!(
        "lifetimes {made} seconds {:.3}",
        start.elapsed().as_secs_f64()
    );
}

fn worker(mode: &str, rate: f64, secs: f64, quota: u64, start: std::time::Instant) -> u64 {
    let mut done = 0u64;
    while done < quota {
        let t = start.elapsed().as_secs_f64();
        if t >= secs {
            break;
        }
        if rate > 0.0 && done as f64 >= t * rate {
            std::thread::sleep(std::time::Duration::from_micros(200));
            continue;
        }
        lifetime(mode);
        done += 1;
    }
    done
}

/// `MODE:RATE:SECS` (pace) or `MODE:N` (burst), parsed; exits 2 when malformed. Fields past
/// `N` are left out (see [`field_after`]).
fn parse_fields<const N: usize>(step: &str, rest: &str) -> [String; N] {
    let v: Vec<String> = rest.split(':').take(N).map(str::to_string).collect();
    v.try_into().unwrap_or_else(|_| {
        eprintln!("actor: bad step {step}");
        std::process::exit(2)
    })
}

/// `pace:MODE:RATE:SECS[:WORKERS]`.
fn pace(step: &str) {
    let rest = &step[5..];
    let [mode, rate, secs] = parse_fields(step, rest);
    let workers = field_after(step, rest, 3);
    lifetimes(
        &mode,
        number(step, &rate),
        number(step, &secs),
        u64::MAX,
        workers,
    );
}

/// The optional field after the first `n` of `rest`, as a number.
fn field_after(step: &str, rest: &str, n: usize) -> Option<u64> {
    let field = rest.split(':').nth(n)?;
    Some(number(step, field) as u64)
}

fn number(step: &str, field: &str) -> f64 {
    field.parse().unwrap_or_else(|_| {
        eprintln!("actor: bad number in {step}");
        std::process::exit(2)
    })
}

/// PR_SET_NAME to `name`.
fn rename(name: &str) {
    let name = CString::new(name).expect("no NUL");
    // SAFETY: a NUL-terminated name the kernel copies.
    unsafe { libc::prctl(libc::PR_SET_NAME, name.as_ptr() as libc::c_ulong, 0, 0, 0) };
}

/// clone(CLONE_PARENT|SIGCHLD): the child runs `child` and exits with its code.
fn clone_parent(child: impl FnOnce() -> i32) {
    let flags = (libc::CLONE_PARENT | libc::SIGCHLD) as libc::c_ulong;
    // SAFETY: a fork-like clone (no CLONE_VM); the child only renames, clones, sleeps, exits.
    let pid = unsafe { libc::syscall(libc::SYS_clone, flags, 0usize, 0usize, 0usize, 0usize) };
    if pid == 0 {
        let code = child();
        // SAFETY: exiting the child without unwinding.
        unsafe { libc::_exit(code) };
    }
}

/// runc init's three stages, imitated.
fn stages() {
    rename("runc:[0:PARENT]");
    clone_parent(|| {
        rename("runc:[1:CHILD]");
        clone_parent(|| {
            rename("runc:[2:INIT]");
            std::thread::sleep(std::time::Duration::from_millis(300));
            0
        });
        0
    });
    // The stages are our parent's children: it reaps them. Let them run first.
    std::thread::sleep(std::time::Duration::from_millis(100));
}

/// The fork syscall itself (not glibc's fork, which is clone); the child exits with `code`.
fn sysfork_exit(code: i32) {
    // SAFETY: the child only calls _exit; waitpid on our own child.
    unsafe {
        let pid = libc::syscall(libc::SYS_fork);
        if pid == 0 {
            libc::_exit(code);
        }
        wait_child(pid as libc::pid_t);
    }
}

/// clone(CLONE_PARENT|SIGCHLD): a child of our parent, which exits with `code`.
fn clone_parent_exit(code: i32) {
    let flags = (libc::CLONE_PARENT | libc::SIGCHLD) as libc::c_ulong;
    // SAFETY: a fork-like clone (no CLONE_VM): the child only calls _exit.
    let pid = unsafe { libc::syscall(libc::SYS_clone, flags, 0usize, 0usize, 0usize, 0usize) };
    if pid == 0 {
        // SAFETY: _exit in the child.
        unsafe { libc::_exit(code) };
    }
    // Not our child: our parent reaps it. Give it time to exit first.
    std::thread::sleep(std::time::Duration::from_millis(50));
}

/// clone3({exit_signal=SIGCHLD}); the child exits with `code`.
fn clone3_exit(code: i32) {
    #[repr(C)]
    #[derive(Default)]
    struct CloneArgs {
        flags: u64,
        pidfd: u64,
        child_tid: u64,
        parent_tid: u64,
        exit_signal: u64,
        stack: u64,
        stack_size: u64,
        tls: u64,
    }
    let args = CloneArgs {
        exit_signal: libc::SIGCHLD as u64,
        ..Default::default()
    };
    // SAFETY: clone3 reads `args` (alive and of the size given) and makes a fork-like child
    // (no CLONE_VM) that only calls _exit; waitpid on our own child.
    unsafe {
        let pid = libc::syscall(
            libc::SYS_clone3,
            &args as *const CloneArgs,
            std::mem::size_of::<CloneArgs>(),
        );
        if pid == 0 {
            libc::_exit(code);
        }
        wait_child(pid as libc::pid_t);
    }
}

/// A child (exits 9 after 200 ms) forking a grandchild (exits 10 after 400 ms); then a
/// subreaper, reaping both (the grandchild adopted when the child exits).
fn late_subreaper() {
    // SAFETY: the children only sleep and _exit; prctl and waitpid on our own process and
    // children.
    unsafe {
        let child = libc::fork();
        if child == 0 {
            if libc::fork() == 0 {
                libc::usleep(400_000);
                libc::_exit(10);
            }
            libc::usleep(200_000);
            libc::_exit(9);
        }
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0);
        wait_child(child);
        // The adopted grandchild.
        let mut status = 0;
        libc::waitpid(-1, &mut status, 0);
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let steps = match args.iter().rposition(|a| a == "--") {
        Some(i) => args[i + 1..].to_vec(),
        None => args,
    };
    for step in &steps {
        // SAFETY (whole match): raw syscalls in a single-threaded process (the thread step
        // joins before returning); children only call _exit.
        unsafe {
            match step.as_str() {
                "fork" => fork_exit(3),
                "sysfork" => sysfork_exit(8),
                "sigkill" => {
                    libc::kill(libc::getpid(), libc::SIGKILL);
                }
                "eat-memory" => eat_memory(),
                s if s.starts_with("cgroup:") => enter_cgroup(&s[7..]),
                "vfork" => vfork_exit(4),
                "clone-parent" => clone_parent_exit(5),
                "clone3" => clone3_exit(6),
                "thread" => {
                    std::thread::spawn(|| ()).join().expect("thread");
                }
                "name" => rename("actor-renamed"),
                s if s.starts_with("name:") => rename(&s[5..]),
                "stages" => stages(),
                "subreaper" => {
                    libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0);
                }
                "late-subreaper" => late_subreaper(),
                "exec-fail" => {
                    let path = CString::new("/nonexistent/actor").expect("no NUL");
                    let argv = [path.as_ptr(), std::ptr::null()];
                    let envp = [std::ptr::null()];
                    libc::execve(path.as_ptr(), argv.as_ptr(), envp.as_ptr());
                }
                s if s.starts_with("storm:") => {
                    let n: u32 = s[6..].parse().expect("storm:N");
                    for _ in 0..n {
                        fork_exit(0);
                    }
                }
                s if s.starts_with("threads:") => {
                    let n: u32 = s[8..].parse().expect("threads:N");
                    for _ in 0..n {
                        std::thread::spawn(|| ()).join().expect("thread");
                    }
                }
                s if s.starts_with("pace:") => pace(s),
                s if s.starts_with("burst:") => {
                    let [mode, n] = parse_fields(s, &s[6..]);
                    lifetimes(&mode, 0.0, f64::INFINITY, number(s, &n) as u64, None);
                }
                s if s.starts_with("signals:") => {
                    let [rate, secs] = parse_fields(s, &s[8..]);
                    signals(number(s, &rate), number(s, &secs));
                }
                s if s.starts_with("exit:") => {
                    let code: i32 = s[5..].parse().expect("exit:N");
                    libc::syscall(libc::SYS_exit_group, code);
                }
                s if s.starts_with("exec:") => {
                    let path = CString::new(&s[5..]).expect("no NUL");
                    let argv = [path.as_ptr(), std::ptr::null()];
                    let envp = [std::ptr::null()];
                    libc::execve(path.as_ptr(), argv.as_ptr(), envp.as_ptr());
                    libc::_exit(126);
                }
                other => {
                    eprintln!("actor: unknown step {other}");
                    libc::_exit(2);
                }
            }
        }
    }
}
