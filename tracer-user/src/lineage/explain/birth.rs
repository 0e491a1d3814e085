//! A container's birth: who keeps it (containerd's shim, conmon, or nobody), the OCI
//! runtime's `runc init` stages, INIT's adoption, cgroup and workload. The texts are data:
//! each arm is one variant's explanation.

use super::super::process::Reaper;
use super::super::story::{Facts, StepKind, StoryKind};
use super::{adoption, Command, Told};

type Text = (String, &'static str);

/// The keeper's own birth (the shim's or conmon's double fork, subreaper), a pod's shim
/// reused, and the CNI plugins a sandbox's network was set up with.
pub(super) fn keeper(t: &Told) -> Text {
    let conmon = t.kind() == StoryKind::Conmon;
    match (t.step.kind, conmon) {
        (StepKind::ShimStarted, false) => (
            "The containerd daemon does not parent its containers: it runs \
             `containerd-shim-runc-v2 start`, and that short-lived `start` process forks the \
             long-lived shim in its own process group and exits (a double fork). The shim, not \
             the daemon, then owns the container, so containerd can be restarted or upgraded \
             without killing what it started (the daemonless design)."
                .into(),
            "containerd pkg/shim (shim.Run, the `start` command), runtime/v2/runc/manager",
        ),
        (StepKind::ShimStarted, true) => (
            "CRI-O and podman do not parent their containers either: they start conmon, \
             which forks and lets its first process exit (a double fork, to daemonize), so the \
             conmon that stays is nobody's child but its reaper's. It runs the OCI runtime, \
             holds the container's stdio and records its exit status; the manager can be \
             restarted without killing it. One conmon per container."
                .into(),
            "conmon src/conmon.c (main: fork, setsid); podman libpod/oci_conmon_linux.go",
        ),
        (StepKind::ShimParentExited, false) => (
            "The `start` process printed the shim's socket address to containerd and exited, \
             as designed. Its children are now orphans: on its exit the kernel looks for a new \
             parent for each of them."
                .into(),
            "kernel/exit.c do_exit() → exit_notify() → forget_original_parent()",
        ),
        (StepKind::ShimParentExited, true) => (
            "conmon's first process forked the conmon that stays and exited, as designed \
             (daemonizing). The one that stays is now an orphan: on this exit the kernel looks \
             for a new parent for it."
                .into(),
            "conmon src/conmon.c; kernel/exit.c exit_notify() → forget_original_parent()",
        ),
        (StepKind::ShimAdopted, _) => {
            let (dying, who) = if conmon {
                ("conmon's first process", "conmon")
            } else {
                ("the `start` process", "the shim")
            };
            let reaper = adopted(t);
            let mut text = adoption(dying, reaper, None);
            text.push_str(&format!(
                " So {who} hangs off its new parent, never off the daemon that asked for it."
            ));
            (
                text,
                "kernel/exit.c find_new_reaper(), find_alive_thread(), find_child_reaper()",
            )
        }
        (StepKind::ShimSubreaper, false) => (
            "The shim made itself a child subreaper with prctl(PR_SET_CHILD_SUBREAPER, 1). \
             When the runc processes that create the container exit, their orphans (the \
             container's init and exec'd processes) are reparented to the shim instead of to \
             pid 1, so the shim can wait() for them and report their exit status to containerd."
                .into(),
            "kernel/sys.c prctl() sets signal->is_child_subreaper; containerd pkg/shim \
             (shim_unix.go: SetSubreaper(1))",
        ),
        (StepKind::ShimSubreaper, true) => (
            "conmon made itself a child subreaper with prctl(PR_SET_CHILD_SUBREAPER, 1) before \
             running the OCI runtime: when `runc create` exits, the container's init is \
             reparented to conmon instead of to pid 1, so conmon can wait() for it and write \
             its exit status for CRI-O or podman."
                .into(),
            "kernel/sys.c prctl() sets signal->is_child_subreaper; conmon src/conmon.c",
        ),
        (StepKind::ShimReused, _) => (
            "A pod has one shim. For each later container of the pod containerd still runs \
             `containerd-shim-runc-v2 start`; that process finds the pod's shim already \
             listening (the shim's address is derived from the sandbox id) and exits at once, \
             and the container is created by the shim that already holds the sandbox."
                .into(),
            "containerd runtime/v2/runc/manager (Start: the shim socket is per sandbox group)",
        ),
        _ => cni(t),
    }
}

/// The adoption rule the step's facts hold.
fn adopted(t: &Told) -> Option<Reaper> {
    match t.facts() {
        Facts::Adopted(r) => Some(*r),
        _ => None,
    }
}

/// The CNI plugins in the order the story shows them, an IPAM plugin told as its main
/// plugin's child: `loopback, bridge (which ran host-local for the address)`.
pub(super) fn cni_order(t: &Told, kind: StepKind) -> (String, usize) {
    let mut names: Vec<String> = Vec::new();
    for (plugin, delegated_by) in super::facts::cni_runs(t.story, kind) {
        match (delegated_by, names.last_mut()) {
            // Right after the plugin that ran it: told as that plugin's child.
            (Some(by), Some(last)) if last == by => last.push_str(&format!(
                " (which ran {plugin} as its IPAM plugin, its own child)"
            )),
            (Some(by), _) => names.push(format!("{plugin} (run by {by} as its IPAM plugin)")),
            (None, _) => names.push(plugin.to_string()),
        }
    }
    let first = names
        .first()
        .and_then(|f| f.split(' ').next())
        .unwrap_or("");
    let rounds = names
        .iter()
        .filter(|n| n.split(' ').next() == Some(first))
        .count();
    (names.join(", then "), rounds)
}

/// A CNI plugin run for a sandbox's network, as the recording ordered them.
fn cni(t: &Told) -> Text {
    let (order, _) = cni_order(t, StepKind::CniPlugin);
    let this = match t.facts() {
        Facts::Cni {
            plugin,
            delegated_by: Some(by),
        } => format!(
            " This one, {plugin}, is not the daemon's child: {by} ran it to get the pod's \
             address (a main plugin runs its network config's IPAM plugin itself)."
        ),
        _ => String::new(),
    };
    (
        format!(
            "{} wires the sandbox's network namespace before any container of the pod \
             starts: it runs the plugins of the network config as its own children, each a \
             short-lived process that reads its config on stdin and exits 0 on success. Here \
             they ran in this order: {order}.{this}",
            t.daemon()
        ),
        "containerd pkg/cri (sandbox_run.go setupPodNetwork) → go-cni → libcni \
         (AddNetworkList, ExecPlugin); CNI plugins pkg/ipam (ExecAdd)",
    )
}

/// The OCI runtime and its `runc init` stages, to INIT's clone.
pub(super) fn stages(t: &Told) -> Text {
    let exec = t.command() == Command::Exec;
    match (t.step.kind, exec) {
        (StepKind::RuntimeStarted, _) => runtime_started(t),
        (StepKind::InitExec, false) => (
            "runc re-executed itself as `runc init` (/proc/self/exe init) and sent it the \
             bootstrap data (namespaces, id maps) over a socket pair. A C constructor, \
             nsexec(), runs before the Go runtime starts, because setns() into a mount or user \
             namespace is refused to a multi-threaded process. For a new container runc puts \
             this first stage into the container's cgroup (manager.Apply) before it clones, so \
             every later stage inherits the cgroup at fork."
                .into(),
            "runc libcontainer/process_linux.go (initProcess.start), libcontainer/nsenter/nsexec.c",
        ),
        (StepKind::InitExec, true) => (
            "`runc exec` re-executed runc as `runc init` (/proc/self/exe init) and sent it the \
             running container's namespaces over a socket pair; nsexec(), a C constructor, \
             joins them before the Go runtime starts. Unlike a create, runc does not put this \
             first stage into the container's cgroup: it waits for the stages to finish, reads \
             the final process's pid from them and moves only that process in."
                .into(),
            "runc libcontainer/process_linux.go (setnsProcess.start, execSetns), \
             libcontainer/nsenter/nsexec.c",
        ),
        (StepKind::StageRenamed, false) => (
            "nsexec names each stage with prctl(PR_SET_NAME): runc:[0:PARENT] (stage 0: \
             relays the child's pid and the user-namespace id maps back to runc), \
             runc:[1:CHILD] (stage 1: joins the requested namespaces with setns() and unshares \
             the new ones, the pid namespace among them), runc:[2:INIT] (stage 2: the \
             container's first process, which finishes the setup in Go). Only the comm \
             changes; the pid stays."
                .into(),
            "runc libcontainer/nsenter/nsexec.c (stage-0/1/2); kernel/sys.c prctl → set_task_comm()",
        ),
        (StepKind::StageRenamed, true) => (
            "nsexec names each stage with prctl(PR_SET_NAME), for an exec as for a create: \
             runc:[0:PARENT] relays the pids back to runc, runc:[1:CHILD] joins the running \
             container's namespaces with setns() (an exec unshares none), and runc:[2:INIT] is \
             the process that will run the command: named after the stage, it is not the \
             container's init. Only the comm changes; the pid stays."
                .into(),
            "runc libcontainer/nsenter/nsexec.c (stage-0/1/2); kernel/sys.c prctl → set_task_comm()",
        ),
        (StepKind::ChildCloned, _) => (
            "PARENT cloned CHILD with CLONE_PARENT: the kernel gives the new process the \
             caller's parent as its parent, so CHILD's parent is the runc runtime process, not \
             the short-lived PARENT. runc can then wait() for it, and PARENT's exit orphans \
             nothing."
                .into(),
            "kernel/fork.c copy_process() (CLONE_PARENT: real_parent = current->real_parent); \
             runc nsexec.c clone_parent()",
        ),
        (StepKind::InitCloned, _) => (
            "CHILD, having unshared the new namespaces, cloned INIT with CLONE_PARENT: INIT's \
             parent is the runc runtime process and not the short-lived CHILD. When the \
             container has its own pid namespace, INIT is its first process, pid 1 there. It \
             is that namespace's child reaper (orphans inside are reparented to it), and when \
             it dies the kernel kills every other process in the namespace."
                .into(),
            "kernel/fork.c copy_process(), alloc_pid(); kernel/exit.c find_child_reaper(); \
             kernel/pid_namespace.c zap_pid_ns_processes(); runc nsexec.c",
        ),
        _ => (
            "The intermediate stage finished its part (namespaces joined, pids relayed over \
             the sync pipe) and exited. Nothing is orphaned: thanks to CLONE_PARENT the next \
             stage is the runtime's child, not this one's."
                .into(),
            "runc libcontainer/nsenter/nsexec.c (stage-0 and stage-1 exit)",
        ),
    }
}

/// The OCI runtime's start, by its subcommand and who ran it.
fn runtime_started(t: &Told) -> Text {
    let what = match t.command() {
        Command::Create => {
            "`runc create` reads the bundle's config.json, prepares the \
             container's state and cgroup, and starts `runc init` to build the container; it \
             exits once the container's init waits on the exec fifo for `runc start`."
        }
        Command::Run => {
            "`runc run` creates and starts the container in one command: it \
             reads the bundle's config.json, starts `runc init` to build the container, opens \
             the exec fifo itself once INIT waits on it (create and start in one) and, unless \
             detached, stays in the foreground as INIT's parent and exits with it."
        }
        Command::Exec => {
            "`runc exec` runs a new process in a running container: it reads \
             the container's state (its init's pid and namespaces) and starts `runc init` to \
             join them; no container is created."
        }
        Command::Other => "The OCI runtime was started for the container with its id.",
    };
    let by = match t.kind() {
        StoryKind::Containerd => {
            " The shim ran it: containerd reaches runc only through the \
             shim's task API."
        }
        StoryKind::Conmon => " conmon ran it, and stays to watch the container.",
        _ => {
            " It was run directly, from a shell or a script: no keeper process stands \
             between it and the container."
        }
    };
    (
        format!("{what}{by}"),
        "runc create.go / run.go / exec.go, utils_linux.go (runner.run), \
         libcontainer/container_linux.go (Start)",
    )
}

/// The runtime's exit, INIT's adoption, its cgroup and its workload.
pub(super) fn start(t: &Told) -> Text {
    let cmd = t.command();
    match t.step.kind {
        StepKind::RuntimeExited => runtime_exited(t, cmd),
        StepKind::InitAdopted => {
            let mut text = adoption("the runtime", adopted(t), t.keeper());
            if t.keeper().is_none() {
                text.push_str(" No keeper process waits for this container's init.");
            }
            (text, "kernel/exit.c find_new_reaper(), find_alive_thread()")
        }
        StepKind::WorkloadExec => {
            let by = match cmd {
                Command::Run => {
                    "`runc run` itself opened the exec fifo once INIT was ready \
                     (it creates and starts in one)"
                }
                _ => "`runc start` opened the exec fifo",
            };
            (
                format!(
                    "{by}, unblocking INIT, which execve()d the container's process. The pid, \
                     the parent and the namespaces stay; the program and the comm change."
                ),
                "runc libcontainer/standard_init_linux.go (Init → exec); fs/exec.c \
                 begin_new_exec()",
            )
        }
        _ => cgroup(t),
    }
}

/// The runtime's exit: `runc create` leaves INIT waiting for `runc start`; `runc run`
/// detached returns once it started; in the foreground it outlives INIT.
fn runtime_exited(t: &Told, cmd: Command) -> Text {
    let orphaned = t.has(StepKind::InitAdopted);
    let text = match (cmd, orphaned) {
        (Command::Run, false) => {
            "`runc run` stayed in the foreground as INIT's parent, \
             waited for it and exited with its status once it was gone: nothing was left to \
             orphan."
        }
        (Command::Run, true) => {
            "`runc run --detach` returned once the container's process \
             started: its exit orphans INIT, whose parent it was."
        }
        (Command::Create, _) => {
            "`runc create` returned once INIT waited on the exec fifo \
             for `runc start`: its exit orphans INIT, whose parent it was."
        }
        _ => {
            "The runtime process exited; INIT, whose parent it was, is orphaned if it still \
             lives."
        }
    };
    (
        text.into(),
        "runc create.go / run.go, libcontainer (exec.fifo); kernel/exit.c \
         forget_original_parent()",
    )
}

/// The container's cgroup: a create's first stage (the rest inherit it), or an exec's
/// final process.
fn cgroup(t: &Told) -> Text {
    if t.command() == Command::Exec {
        return (
            "For an exec runc moves the final process, the one that runs the command, into \
             the container's cgroup (cgroup.procs) after the nsexec stages relayed its pid and \
             exited; PARENT and CHILD never were in it. What it forks later is born there."
                .into(),
            "runc libcontainer/process_linux.go (setnsProcess.start: execSetns, then \
             cgroups.EnterPid); kernel/cgroup/cgroup.c cgroup_attach_task(), cgroup_fork()",
        );
    }
    let first = t.step.pid != t.story.init_pid;
    let who = if first {
        "the first `runc init` stage's pid into the container's cgroup (cgroup.procs) before \
         that stage cloned the others: fork copies the cgroup, so CHILD and INIT are born \
         inside it"
    } else {
        "INIT's pid into the container's cgroup (cgroup.procs)"
    };
    let keeper = match t.kind() {
        StoryKind::Containerd => {
            " while the shim stays in the cgroup it inherited from the \
             daemon. That is why `systemctl status containerd` still lists the shims."
        }
        StoryKind::Conmon => " while conmon stays in the cgroup it was started in.",
        _ => ".",
    };
    (
        format!("The runtime wrote {who}{keeper}"),
        "runc libcontainer/process_linux.go (initProcess.start: p.manager.Apply); \
         kernel/cgroup/cgroup.c cgroup_attach_task(), cgroup_fork()",
    )
}
