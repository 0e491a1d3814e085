//! Why each story step happens: the kernel rule or the runtime design behind it, with the
//! source that implements it. One table, one entry per [`StepKind`] (the match is exhaustive,
//! so a new kind does not build until it is explained).

use serde_json::Value;

use super::explain_restart as restart;
use super::story::{StepKind, Story, StoryStep};

/// The explanation of a [`StepKind`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Why {
    /// What the step means and why it happens, in a few sentences.
    pub text: &'static str,
    /// Where it lives: the kernel function or the runtime source file.
    pub source: &'static str,
}

/// The explanation of one step kind.
pub fn why(kind: StepKind) -> Why {
    let (text, source) = match kind {
        StepKind::ShimStarted => (
            "The containerd daemon does not parent its containers: it runs `containerd-shim-runc-v2 start`, \
             and that short-lived `start` process forks the long-lived shim in its own \
             process group and exits (a double fork). The shim, not the daemon, then owns the container, so \
             containerd can be restarted or upgraded without killing what it started \
             (the daemonless design).",
            "containerd pkg/shim (shim.Run, the `start` command), runtime/v2/runc/manager",
        ),
        StepKind::ShimParentExited => (
            "The `start` process printed the shim's socket address to containerd and exited, \
             as designed. Its children are now orphans: on its exit the kernel looks for a new \
             parent for each of them.",
            "kernel/exit.c do_exit() → exit_notify() → forget_original_parent()",
        ),
        StepKind::ShimAdopted => (
            "The kernel gave the orphaned shim a new parent: the nearest ancestor in the same \
             pid namespace that set PR_SET_CHILD_SUBREAPER, else that namespace's init (pid 1). \
             After this the shim hangs off init (or a subreaper such as a systemd user \
             manager), not off containerd.",
            "kernel/exit.c find_new_reaper(), find_child_reaper()",
        ),
        StepKind::ShimSubreaper => (
            "The shim made itself a child subreaper with prctl(PR_SET_CHILD_SUBREAPER, 1). When \
             the runc processes that create the container exit, their orphans (the container's \
             init and exec'd processes) are reparented to the shim instead of to pid 1, so the \
             shim can wait() for them and report their exit status to containerd.",
            "kernel/sys.c prctl() sets signal->is_child_subreaper; containerd pkg/shim \
             (shim_unix.go: SetSubreaper(1))",
        ),
        StepKind::RuntimeStarted => (
            "The OCI runtime (`runc create`, `runc run`) was started with the bundle and the \
             container id. It reads the bundle's config.json, prepares the container's state and \
             cgroup, and starts `runc init` to build the container; `runc create` exits once \
             the container's init waits for `runc start`.",
            "runc create.go / run.go, libcontainer/container_linux.go (Start)",
        ),
        StepKind::InitExec => (
            "runc re-executed itself as `runc init` (/proc/self/exe init) and sent it the \
             bootstrap data (namespaces, id maps) over a socket pair. A C constructor, nsexec(), \
             runs before the Go runtime starts, because setns() into a mount or user namespace \
             is refused to a multi-threaded process. runc puts this process into the \
             container's cgroup (manager.Apply) before it clones, so every later stage inherits \
             the cgroup at fork.",
            "runc libcontainer/process_linux.go (initProcess.start), libcontainer/nsenter/nsexec.c",
        ),
        StepKind::StageRenamed => (
            "nsexec names each stage with prctl(PR_SET_NAME): runc:[0:PARENT] (stage 0: \
             relays the child's pid and the user-namespace id maps back to runc), \
             runc:[1:CHILD] (stage 1: joins the requested namespaces with setns() and unshares \
             the new ones, the pid namespace among them), runc:[2:INIT] (stage 2: the \
             container's first process, which finishes the setup in Go). Only the comm \
             changes; the pid stays.",
            "runc libcontainer/nsenter/nsexec.c (stage-0/1/2); kernel/sys.c prctl → set_task_comm()",
        ),
        StepKind::ChildCloned => (
            "PARENT cloned CHILD with CLONE_PARENT: the kernel gives the new process the \
             caller's parent as its parent, so CHILD's parent is the runc runtime process, not \
             the short-lived PARENT. runc can then wait() for it, and PARENT's exit orphans \
             nothing.",
            "kernel/fork.c copy_process() (CLONE_PARENT: real_parent = current->real_parent); \
             runc nsexec.c clone_parent()",
        ),
        StepKind::InitCloned => (
            "CHILD, having unshared the new namespaces, cloned INIT with CLONE_PARENT: INIT's \
             parent is the runc runtime process and not the short-lived CHILD. When the \
             container has its own pid namespace, INIT is its first process, pid 1 there. It is that namespace's child \
             reaper (orphans inside are reparented to it), and when it dies the kernel kills \
             every other process in the namespace.",
            "kernel/fork.c copy_process(), alloc_pid(); kernel/exit.c find_child_reaper(); \
             kernel/pid_namespace.c zap_pid_ns_processes(); runc nsexec.c",
        ),
        StepKind::IntermediateExited => (
            "The intermediate stage finished its part (namespaces joined, pids relayed over the \
             sync pipe) and exited. Nothing is orphaned: thanks to CLONE_PARENT the next stage \
             is the runtime's child, not this one's.",
            "runc libcontainer/nsenter/nsexec.c (stage-0 and stage-1 exit)",
        ),
        StepKind::RuntimeExited => (
            "The runtime process exited: `runc create` leaves the container's init blocked on \
             the exec fifo until `runc start` opens it, and returns. Its exit orphans INIT, \
             whose parent it was. `runc run` instead waits for the container and exits with it.",
            "runc create.go, libcontainer (exec.fifo); kernel/exit.c forget_original_parent()",
        ),
        StepKind::InitAdopted => (
            "INIT's parent (the runtime) exited, so the kernel reparented INIT to the nearest \
             subreaper ancestor: the shim (or conmon), which is why it set \
             PR_SET_CHILD_SUBREAPER. Without one INIT would go to the host's init.",
            "kernel/exit.c find_new_reaper()",
        ),
        StepKind::WorkloadExec => (
            "`runc start` (or `runc run`) opened the exec fifo, unblocking INIT, which \
             execve()d the container's process. The pid, the parent and the namespaces stay; \
             the program and the comm change.",
            "runc libcontainer/standard_init_linux.go (Init → exec); fs/exec.c begin_new_exec()",
        ),
        StepKind::ShimReused => (
            "A pod has one shim. For each later container of the pod containerd still runs \
             `containerd-shim-runc-v2 start`; that process finds the pod's shim already \
             listening (the shim's address is derived from the sandbox id) and exits at once, \
             and the container is created by the shim that already holds the sandbox.",
            "containerd runtime/v2/runc/manager (Start: the shim socket is per sandbox group)",
        ),
        StepKind::CniPlugin => (
            "containerd's CRI plugin wires the sandbox's network namespace before any container \
             starts: it runs the CNI plugins of the network config (bridge, then host-local for \
             the address, loopback) as its own children, each a short-lived process that reads \
             its config on stdin and exits 0 on success.",
            "containerd pkg/cri (sandbox_run.go setupPodNetwork) → go-cni → libcni ExecPlugin",
        ),
        StepKind::InitCgroup => (
            "The runtime wrote the first `runc init` stage's pid into the container's cgroup              (cgroup.procs) before that stage cloned the others: fork copies the cgroup, so CHILD              and INIT are born inside it while the shim stays in the cgroup it inherited from              the daemon. That is why `systemctl status containerd` still lists the shims.",
            "runc libcontainer/process_linux.go (p.manager.Apply); kernel/cgroup/cgroup.c              cgroup_attach_task(), cgroup_fork()",
        ),
        // After the birth: exec, death, restart.
        StepKind::ExecCloned => (
            "`runc exec` runs the same nsexec stages as a create, but CHILD does not unshare new \
             namespaces: it joins the running container's with setns() and clones the process to \
             run with CLONE_PARENT, so its parent is `runc exec` (or the shim's runc), not CHILD. \
             The new process is not the container's init and its death ends nothing else.",
            "runc exec.go, libcontainer/process_linux.go (setnsProcess), nsenter/nsexec.c; \
             kernel/fork.c copy_process()",
        ),
        StepKind::ExecJoined => (
            "setns() into a pid namespace does not move the caller: its next child is born in \
             that namespace (kernel/pid_namespace.c pidns_install sets pid_ns_for_children). So \
             the exec'd process has the container's pid namespace and a pid there above 1: \
             the container's init stays pid 1, the child reaper of the namespace.",
            "kernel/nsproxy.c setns(), kernel/pid_namespace.c pidns_install(); kernel/pid.c alloc_pid()",
        ),
        StepKind::ExecProgram => (
            "The process runc cloned into the container execve()d the command asked for (CRI \
             ExecSync, `ctr task exec`, `podman exec`). The pid, the parent and the namespaces \
             stay; the program and the comm change.",
            "runc libcontainer/setns_init_linux.go (Init → exec); fs/exec.c begin_new_exec()",
        ),
        StepKind::ExecRuntimeExited => (
            "`runc exec` waits for the process it started and exits with its status, so an \
             exec that ends first orphans nothing. Detached (`runc exec --detach`, which the \
             shim uses), it returns at once and the process is orphaned: the kernel gives it to \
             the nearest subreaper, the shim.",
            "runc exec.go (detach), utils_linux.go (runner.run); kernel/exit.c forget_original_parent()",
        ),
        StepKind::ExecAdopted => (
            "The exec'd process outlived `runc exec --detach`, its parent, so the kernel \
             reparented it to the nearest child subreaper in its pid namespace's ancestry: the \
             shim, which waits for it and reports its exit to the runtime daemon.",
            "kernel/exit.c find_new_reaper(); containerd runtime/v2/runc (Exec, process.Wait)",
        ),
        StepKind::ExecEnded => (
            "The exec'd process ended: its exit status goes to its parent of record by \
             SIGCHLD and wait(), and the container goes on, as it was not the namespace's init.",
            "kernel/exit.c do_exit() → exit_notify() → do_notify_parent()",
        ),
        StepKind::SignalSent => (
            "A process sent the container's init a signal with kill(2). To stop a container the \
             shim runs `runc kill` (SIGTERM, or the image's STOPSIGNAL), waits the grace period \
             (CRI StopContainer's timeout, the pod's terminationGracePeriodSeconds), then sends \
             SIGKILL. A pid 1 ignores signals it has no handler for, except SIGKILL from outside \
             its namespace.",
            "kernel/signal.c kill_pid_info() → __send_signal_locked(), sig_task_ignored() \
             (SIGNAL_UNKILLABLE); runc kill.go; containerd pkg/cri (container_stop.go)",
        ),
        StepKind::OomKilled => (
            "The container's memory cgroup reached its limit (memory.limit_in_bytes or \
             memory.max, from CRI's memory_limit_in_bytes) and reclaim could not free enough, so \
             the kernel's OOM killer chose a process in that cgroup by its badness and sent it \
             SIGKILL. Kubernetes reports the container as OOMKilled.",
            "mm/memcontrol.c mem_cgroup_out_of_memory() → mm/oom_kill.c out_of_memory(), \
             oom_kill_process(), mark_oom_victim()",
        ),
        StepKind::InitDied => (
            "The container's init ended: how, and who caused it, as the kernel recorded it (its \
             wait status, the signal that killed it and its sender). Being pid 1 of the \
             namespace, its death ends the container.",
            "kernel/exit.c do_exit(), exit_notify(); kernel/signal.c",
        ),
        StepKind::InitReaped => (
            "The kernel sent SIGCHLD to the init's parent of record, the shim (its subreaper \
             since `runc create` exited), which wait()s for it and reports the exit status and \
             reason (exit code, OOMKilled) to the runtime daemon.",
            "kernel/exit.c exit_notify() → kernel/signal.c do_notify_parent(); containerd \
             runtime/v2/runc (reaper)",
        ),
        StepKind::NamespaceKilled => (
            "When a pid namespace's init dies the kernel kills every other process left in the \
             namespace with SIGKILL (exec'd processes included) and waits for them: a container \
             cannot outlive its init.",
            "kernel/pid_namespace.c zap_pid_ns_processes(), called from kernel/exit.c \
             find_child_reaper()",
        ),
        StepKind::RuntimeDelete => (
            "With the container stopped, the shim runs `runc delete`: runc removes its state \
             directory and the container's cgroup. CRI RemoveContainer removes the record later.",
            "runc delete.go, libcontainer (Destroy); containerd runtime/v2/runc (Delete)",
        ),
        StepKind::CniTeardown => (
            "StopPodSandbox tears the pod's network down after its containers and its sandbox \
             stopped: the CRI plugin runs the network's CNI plugins again with CNI_COMMAND=DEL, \
             which release the address and remove the pod's interface.",
            "containerd pkg/cri (sandbox_stop.go teardownPodNetwork) → go-cni → libcni DelNetworkList",
        ),
        StepKind::ShimExited => (
            "With its last container gone and deleted, the pod's shim has nothing to hold and \
             exits (a shim lives as long as its pod).",
            "containerd runtime/v2/runc/task service (Shutdown)",
        ),
        StepKind::ShimReaped => (
            "The shim's parent of record, init or the subreaper that adopted it at its start, \
             got SIGCHLD for its death and reaped it: the daemon that asked for the pod never \
             was its parent.",
            "kernel/exit.c exit_notify() → kernel/signal.c do_notify_parent()",
        ),
        StepKind::Restarted => (
            "The container ended and the kubelet, following the pod's restart policy, asked \
             for it again: a new container with a new id is created in the same pod with the \
             same name (attempt N), by a new `runc create` under the pod's shim. Nothing of the \
             last life's processes survives.",
            "kubelet pkg/kubelet/kuberuntime (computePodActions, startContainer); CRI CreateContainer",
        ),
        StepKind::Terminated => (
            "What `kubectl describe pod` will show under Last State: the runtime reports the \
             init's wait status to the kubelet as a ContainerStateTerminated. Reason OOMKilled \
             when the OOM killer struck in the container's memory cgroup, Completed for exit \
             code 0, Error otherwise; a signal N is exit code 128+N. Started is the init's exec \
             of the workload (`runc start`), Finished its death. The cause is what the \
             recording shows ended it: the process's own exit or crash, the OOM killer, or a \
             stop (SIGTERM, then SIGKILL when the grace period ran out; SIGKILL alone for a \
             timeout 0).",
            "containerd pkg/cri (container_stop.go, events.go: TaskExit, TaskOOM); kubelet \
             pkg/kubelet/kuberuntime (kuberuntime_container.go: toKubeContainerStatus)",
        ),
        StepKind::PodStopped => (
            "The pod's sandbox was killed at once too, after the container: CRI \
             StopPodSandbox stops every container of the pod with timeout 0 (SIGKILL, no \
             SIGTERM) and then the sandbox, so this container ended with its pod rather than \
             by a StopContainer of its own.",
            "containerd pkg/cri sandbox_stop.go (stopPodSandbox → stopContainer(ctx, c, 0))",
        ),
        StepKind::DaemonEnded => restart::DAEMON_ENDED,
        StepKind::Survived => restart::SURVIVED,
        StepKind::RestartLost => restart::RESTART_LOST,
        StepKind::DaemonStarted => restart::DAEMON_STARTED,
        StepKind::RestartUnchanged => restart::RESTART_UNCHANGED,
    };
    Why { text, source }
}

/// The explanation of one step of a story: its kind's ([`why`]), then what the recording holds
/// for it where the story carries it (a runtime restart's recorded cgroups, signal, parents).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepWhy {
    /// The kind's text, then the recording's facts.
    pub text: String,
    /// Where it lives.
    pub source: &'static str,
}

/// [`StepWhy`] of `step` in `st`.
pub fn why_step(st: &Story, step: &StoryStep) -> StepWhy {
    let w = why(step.kind);
    let text = match restart::recorded(st, step) {
        Some(facts) => format!("{} {facts}", w.text),
        None => w.text.to_string(),
    };
    StepWhy {
        text,
        source: w.source,
    }
}

/// Adds `"why"` and `"why_source"` to every step of a `story_json` value.
pub fn add_whys(json: &mut Value, stories: &[Story]) {
    let Some(out) = json.get_mut("stories").and_then(Value::as_array_mut) else {
        return;
    };
    for (js, st) in out.iter_mut().zip(stories) {
        let Some(steps) = js.get_mut("steps").and_then(Value::as_array_mut) else {
            continue;
        };
        for (jstep, step) in steps.iter_mut().zip(&st.steps) {
            let w = why_step(st, step);
            jstep["why"] = Value::from(w.text);
            jstep["why_source"] = Value::from(w.source);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kind, listed through an exhaustive match: a new variant fails to build here
    /// until it is added (and so explained).
    fn all_kinds() -> Vec<StepKind> {
        let every = [
            StepKind::ShimStarted,
            StepKind::ShimParentExited,
            StepKind::ShimAdopted,
            StepKind::ShimSubreaper,
            StepKind::RuntimeStarted,
            StepKind::InitExec,
            StepKind::StageRenamed,
            StepKind::ChildCloned,
            StepKind::InitCloned,
            StepKind::IntermediateExited,
            StepKind::RuntimeExited,
            StepKind::InitAdopted,
            StepKind::WorkloadExec,
            StepKind::InitCgroup,
            StepKind::ShimReused,
            StepKind::CniPlugin,
            StepKind::ExecCloned,
            StepKind::ExecJoined,
            StepKind::ExecProgram,
            StepKind::ExecRuntimeExited,
            StepKind::ExecAdopted,
            StepKind::ExecEnded,
            StepKind::SignalSent,
            StepKind::OomKilled,
            StepKind::InitDied,
            StepKind::InitReaped,
            StepKind::NamespaceKilled,
            StepKind::RuntimeDelete,
            StepKind::CniTeardown,
            StepKind::ShimExited,
            StepKind::ShimReaped,
            StepKind::Restarted,
            StepKind::Terminated,
            StepKind::PodStopped,
            StepKind::DaemonEnded,
            StepKind::Survived,
            StepKind::RestartLost,
            StepKind::DaemonStarted,
            StepKind::RestartUnchanged,
        ];
        for k in every {
            match k {
                StepKind::ShimStarted
                | StepKind::ShimParentExited
                | StepKind::ShimAdopted
                | StepKind::ShimSubreaper
                | StepKind::RuntimeStarted
                | StepKind::InitExec
                | StepKind::StageRenamed
                | StepKind::ChildCloned
                | StepKind::InitCloned
                | StepKind::IntermediateExited
                | StepKind::RuntimeExited
                | StepKind::InitAdopted
                | StepKind::WorkloadExec
                | StepKind::InitCgroup
                | StepKind::ShimReused
                | StepKind::CniPlugin
                | StepKind::ExecCloned
                | StepKind::ExecJoined
                | StepKind::ExecProgram
                | StepKind::ExecRuntimeExited
                | StepKind::ExecAdopted
                | StepKind::ExecEnded
                | StepKind::SignalSent
                | StepKind::OomKilled
                | StepKind::InitDied
                | StepKind::InitReaped
                | StepKind::NamespaceKilled
                | StepKind::RuntimeDelete
                | StepKind::CniTeardown
                | StepKind::ShimExited
                | StepKind::ShimReaped
                | StepKind::Restarted
                | StepKind::Terminated
                | StepKind::PodStopped
                | StepKind::DaemonEnded
                | StepKind::Survived
                | StepKind::RestartLost
                | StepKind::DaemonStarted
                | StepKind::RestartUnchanged => {}
            }
        }
        every.to_vec()
    }

    #[test]
    fn every_step_kind_has_a_sentence_and_a_source() {
        for k in all_kinds() {
            let w = why(k);
            let t = w.text.trim();
            assert!(t.len() >= 40, "{k:?}: too short: {t:?}");
            assert!(t.ends_with('.'), "{k:?}: not a sentence: {t:?}");
            assert!(!w.source.trim().is_empty(), "{k:?}: no source");
        }
    }

    #[test]
    fn whys_are_distinct() {
        let kinds = all_kinds();
        let texts: std::collections::HashSet<&str> = kinds.iter().map(|&k| why(k).text).collect();
        assert_eq!(texts.len(), kinds.len(), "two kinds share an explanation");
    }

    #[test]
    fn the_whys_name_the_kernel_rules() {
        assert!(why(StepKind::ShimAdopted)
            .source
            .contains("find_new_reaper"));
        assert!(why(StepKind::ShimSubreaper)
            .text
            .contains("PR_SET_CHILD_SUBREAPER"));
        assert!(why(StepKind::InitCloned).text.contains("CLONE_PARENT"));
        assert!(why(StepKind::InitCloned)
            .source
            .contains("zap_pid_ns_processes"));
        assert!(why(StepKind::ChildCloned).source.contains("nsexec.c"));
        assert!(why(StepKind::ShimStarted).text.contains("double fork"));
    }
}
