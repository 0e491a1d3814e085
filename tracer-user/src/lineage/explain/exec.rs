//! A process run in a running container (`runc exec`): its clone into the container's
//! namespaces, its program, how `runc exec` left it, its end. The texts are data.

use super::super::story::{Facts, StepKind, StoryKind};
use super::{adoption, Told};

type Text = (String, &'static str);

/// One step of an exec story.
pub(super) fn why(t: &Told) -> Text {
    match t.step.kind {
        StepKind::ExecCloned => (
            "`runc exec` runs the same nsexec stages as a create, but CHILD does not unshare \
             new namespaces: it joins the running container's with setns() and clones the \
             process to run with CLONE_PARENT, so its parent is `runc exec`, not CHILD. The new \
             process is not the container's init and its death ends nothing else."
                .into(),
            "runc exec.go, libcontainer/process_linux.go (setnsProcess), nsenter/nsexec.c; \
             kernel/fork.c copy_process()",
        ),
        StepKind::ExecJoined => (
            "setns() into a pid namespace does not move the caller: its next child is born in \
             that namespace (kernel/pid_namespace.c pidns_install sets pid_ns_for_children). \
             So the exec'd process has the container's pid namespace and a pid there above 1: \
             the container's init stays pid 1, the child reaper of the namespace."
                .into(),
            "kernel/nsproxy.c setns(), kernel/pid_namespace.c pidns_install(); kernel/pid.c \
             alloc_pid()",
        ),
        StepKind::ExecProgram => {
            let asked = match t.kind() {
                StoryKind::Containerd => {
                    "through the shim: a CRI Exec or ExecSync, `ctr task exec`"
                }
                StoryKind::Conmon => "by CRI-O or podman: an ExecSync, `podman exec`",
                _ => "by hand: `runc exec` run from a shell",
            };
            (
                format!(
                    "The process runc cloned into the container execve()d the command asked \
                     for ({asked}). The pid, the parent and the namespaces stay; the program \
                     and the comm change."
                ),
                "runc libcontainer/setns_init_linux.go (Init → exec); fs/exec.c begin_new_exec()",
            )
        }
        StepKind::ExecRuntimeExited => runtime_exited(t),
        StepKind::ExecAdopted => {
            let dying = "`runc exec --detach`";
            let mut text = adoption(dying, adopted(t), t.keeper());
            text.push_str(" Its new parent waits for it and reports its exit.");
            (
                text,
                "kernel/exit.c find_new_reaper(); containerd runtime/v2/runc (Exec, process.Wait)",
            )
        }
        _ => ended(t),
    }
}

fn adopted(t: &Told) -> Option<super::super::process::Reaper> {
    match t.facts() {
        Facts::Adopted(r) => Some(*r),
        _ => None,
    }
}

/// `runc exec` returning: after the process (it waits), or at once (`--detach`).
fn runtime_exited(t: &Told) -> Text {
    let text = if t.has(StepKind::ExecAdopted) {
        "`runc exec --detach` returned once the process started: its exit orphans the \
         process, and the kernel gives it to the nearest subreaper."
    } else {
        "`runc exec` waited for the process it started and exited with its status: an exec \
         that ends first orphans nothing."
    };
    (
        text.into(),
        "runc exec.go (detach), utils_linux.go (runner.run); kernel/exit.c \
         forget_original_parent()",
    )
}

/// The exec'd process's end: its own, or killed with its pid namespace.
fn ended(t: &Told) -> Text {
    if matches!(t.facts(), Facts::ExecEnd { zapped: true }) {
        return (
            "The exec'd process was killed with its pid namespace: the container's init died, \
             and the kernel SIGKILLs every process left in the namespace and waits for them \
             (zap_pid_ns_processes). An exec'd process cannot outlive its container; its \
             parent of record still gets SIGCHLD and reaps it."
                .into(),
            "kernel/pid_namespace.c zap_pid_ns_processes(), from kernel/exit.c \
             find_child_reaper(); kernel/signal.c do_notify_parent()",
        );
    }
    (
        "The exec'd process ended: its exit status goes to its parent of record by SIGCHLD \
         and wait(), and the container goes on, as it was not the namespace's init."
            .into(),
        "kernel/exit.c do_exit() → exit_notify() → do_notify_parent()",
    )
}
