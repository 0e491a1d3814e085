//! The pid-namespace zap as `death.rs` models it, applied through the engine in the order a
//! waiting tracer reports it.

use crate::event::{Event, EventKind, Syscall};
use crate::lineage::{DeathHow, Engine};
use crate::synth::{self, NESTED_BASE};

/// The init of one namespace and its worker, the worker's SIGKILL reported between the init's
/// `exit_group` and its end (as strace prints a zap: zap_pid_ns_processes() waits for the
/// members inside the init's own exit), or after the init's end when `init_first`.
fn teardown(init_first: bool) -> Engine {
    let init = NESTED_BASE;
    let [born_init, born_worker, init_exit, worker_exit]: [Event; 4] =
        synth::nested_namespaces(1).try_into().expect("four events");
    let exit_group = EventKind::ExitEnter {
        syscall: Syscall::ExitGroup,
        code: 0,
    };
    let exit_group = Event::bare(0, 0, init, init, "", exit_group);
    let mut evs = vec![born_init, born_worker, exit_group];
    if init_first {
        evs.extend([init_exit, worker_exit]);
    } else {
        evs.extend([worker_exit, init_exit]);
    }
    let mut e = Engine::new();
    for (seq, mut ev) in (1..).zip(evs) {
        ev.seq = seq;
        e.apply(&ev);
    }
    e
}

#[test]
fn a_member_killed_before_its_init_ends_is_zapped_at_the_inits_end() {
    let (init, worker) = (NESTED_BASE, NESTED_BASE + 1);
    for init_first in [false, true] {
        let e = teardown(init_first);
        let init_end = e.process(init).and_then(|p| p.exit_seq);
        assert_eq!(init_end, Some(if init_first { 4 } else { 5 }));
        let w = e.process(worker).expect("the worker");
        assert_eq!(
            w.zapped_by(),
            Some((init, init_end.unwrap_or(0))),
            "init first: {init_first}"
        );
        let d = w.death().expect("dead");
        assert_eq!((d.how, d.ns_init), (DeathHow::PidNs, Some(init)));
    }
}
