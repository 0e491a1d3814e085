//! A clone whose flags come with its return. strace before 5.3 decoded clone's arguments only
//! at the call's exit (`SYS_FUNC(clone)` printed nothing while `entering(tcp)`): a call cut by
//! another task's line is `clone( <unfinished ...>`, and its flags are in `<... clone resumed>
//! child_stack=NULL, flags=CLONE_PARENT|SIGCHLD) = N`. The child is often named before that
//! (its notice, its first line): its `Fork` went out with the flags unknown, and the caller's
//! `CloneEnter` with none. Both are held (the stream releases nothing from the entry on) and
//! written again here once the flags are known: whether the child is a thread, the parent
//! copy_process() gave it (CLONE_PARENT), its pid namespace (CLONE_NEWPID, runc's INIT).

use super::{CloneRec, Parser, Pending};
use crate::event::{CloneFlags, EventKind};

impl Parser {
    /// `tid`'s clone returns, its flags printed only now.
    pub(super) fn flags_at_return(&mut self, tid: u32, (flags, exit_signal): (u64, u32)) {
        let Some(&Pending::Clone(id)) = self.pending.get(&tid) else {
            return;
        };
        let Some(c) = self.clones.get(id).filter(|c| c.flags.is_none()).cloned() else {
            return;
        };
        self.clones.update(id, |c| c.flags = Some(flags));
        let base = self.released.count;
        if let Some(EventKind::CloneEnter {
            flags: f,
            exit_signal: s,
            ..
        }) = c
            .enter_at
            .and_then(|at| at.checked_sub(base))
            .and_then(|at| self.out.events.get_mut(at))
            .map(|e| &mut e.kind)
        {
            *f = CloneFlags(flags);
            *s = exit_signal;
        }
        if let (Some(child), Some(at)) = (c.child, c.fork_at.and_then(|a| a.checked_sub(base))) {
            let c = CloneRec {
                flags: Some(flags),
                ..c
            };
            self.rewrite_fork(&c, child, at);
        }
    }

    /// The `Fork` at `at` (held) of clone `c`, whose flags are now known, made again: its
    /// child a thread or a process, its parent, its namespace.
    fn rewrite_fork(&mut self, c: &CloneRec, child: u32, at: usize) {
        let thread = c.makes_thread();
        let child_tgid = if thread { self.tgid(c.caller) } else { child };
        let child_ns = if thread {
            self.set_thread(child, child_tgid);
            self.parents.remove(&child);
            self.nested.remove(&child);
            // what the child did so far was its process's
            for e in self.out.events[at..].iter_mut().filter(|e| e.tid == child) {
                e.tgid = child_tgid;
            }
            None
        } else {
            // A new namespace inferred already (an unshare(CLONE_NEWPID) before) stands: the
            // inference is made once per child.
            let made = match self.out.events.get(at).map(|e| &e.kind) {
                Some(EventKind::Fork { child_ns, .. }) => child_ns.filter(|ns| ns.ns_pid == 1),
                _ => None,
            };
            let nested = self.nested.contains(&c.tgid);
            let ns = made.or_else(|| self.pidns.born(c.tgid, c.caller, child, c.flags, nested));
            if ns.is_some_and(|ns| ns.ns_pid == 1 || ns.level > 0) || self.nested.contains(&c.tgid)
            {
                self.nested.insert(child);
            }
            ns
        };
        let child_ppid = self.new_parent(c);
        if !thread {
            match child_ppid {
                Some(p) => self.parents.insert(child, p),
                None => self.parents.remove(&child),
            };
        }
        if let Some(EventKind::Fork {
            child_tgid: t,
            child_ppid: p,
            flags: f,
            child_ns: n,
            ..
        }) = self.out.events.get_mut(at).map(|e| &mut e.kind)
        {
            *t = child_tgid;
            *p = child_ppid.unwrap_or(0);
            *f = Some(CloneFlags(c.flags.unwrap_or(0)));
            *n = child_ns;
        }
    }
}
