//! A container's end: the signals of a stop (StopContainer and its grace period, a
//! StopPodSandbox's kill at once), the OOM killer, the init's death and its SIGCHLD, the
//! pid namespace's teardown, `runc delete`, the pod's network and shim going, a restart.
//! The texts are data.

use super::super::kubelet::Cause;
use super::super::story::{Facts, Parent, StepKind, StoryKind};
use super::Told;

type Text = (String, &'static str);

const SIGTERM: i32 = 15;
const SIGKILL: i32 = 9;

/// What killed the init: a signal, the OOM killer, the pod's stop.
pub(super) fn kill(t: &Told) -> Text {
    match t.step.kind {
        StepKind::SignalSent => signal(t),
        StepKind::OomKilled => {
            let k8s = if t.story.pod.is_some() {
                " Kubernetes reports the container as OOMKilled."
            } else {
                ""
            };
            (
                format!(
                    "The container's memory cgroup reached its limit (memory.max, or \
                     memory.limit_in_bytes on cgroup v1) and reclaim could not free enough, \
                     so the kernel's OOM killer chose a process in that cgroup by its badness \
                     and sent it SIGKILL.{k8s}"
                ),
                "mm/memcontrol.c mem_cgroup_out_of_memory() → mm/oom_kill.c out_of_memory(), \
                 oom_kill_process(), mark_oom_victim()",
            )
        }
        _ => (
            "The pod's sandbox was killed at once too, after the container: CRI \
             StopPodSandbox stops every container of the pod with timeout 0 (SIGKILL, no \
             SIGTERM) and then the sandbox, so this container ended with its pod rather than \
             by a StopContainer of its own."
                .into(),
            "containerd pkg/cri sandbox_stop.go (stopPodSandbox → stopContainer(ctx, c, 0))",
        ),
    }
}

/// A signal to the init: a StopContainer's SIGTERM or its SIGKILL after the grace period,
/// a kill at once (StopPodSandbox, timeout 0), or any other sender's. Who asked and who
/// times the grace period: the kubelet and the runtime daemon's CRI plugin for a pod, the
/// client (ctr, nerdctl, podman) otherwise; the shim only runs `runc kill`.
fn signal(t: &Told) -> Text {
    let (sig, runtime_kill) = match t.facts() {
        Facts::Signal {
            signal,
            runtime_kill,
        } => (*signal, *runtime_kill),
        _ => (0, false),
    };
    let via = match t.kind() {
        StoryKind::Conmon => "ran `runc kill`",
        _ => "had the shim run `runc kill`",
    };
    let daemon = t.daemon();
    let cri = t.story.pod.is_some();
    let (asker, timer) = match cri {
        true => ("The kubelet's StopContainer", daemon),
        false => ("A stop", "the client that asked for the stop"),
    };
    let stop = matches!(t.cause(), Some(Cause::StopContainer { .. })) && runtime_kill;
    let at_once = matches!(t.cause(), Some(Cause::KilledAtOnce { .. })) && runtime_kill;
    let text = match (sig, stop, at_once) {
        (SIGTERM, true, _) => format!(
            "{asker} reached {daemon}, which {via} with the stop signal (SIGTERM, or the \
             image's STOPSIGNAL). Then {timer}, not the shim, times the grace period{} and asks \
             for SIGKILL the same way if the container still lives. A namespace's pid 1 \
             without a handler for SIGTERM never gets it.",
            if cri {
                " (the pod's terminationGracePeriodSeconds)"
            } else {
                ""
            }
        ),
        (SIGKILL, true, _) => format!(
            "The grace period {timer} timed ran out with the init still alive, so {daemon} \
             {via} again, with SIGKILL. SIGKILL cannot be caught or ignored, even by a \
             namespace's pid 1 when it comes from outside the namespace."
        ),
        (SIGKILL, _, true) if cri && t.story.sandbox => format!(
            "StopPodSandbox, after stopping the pod's containers, stops the sandbox itself: \
             {daemon} {via} with SIGKILL at once (no SIGTERM, no grace period) to end pause."
        ),
        (SIGKILL, _, true) if cri => format!(
            "SIGKILL with no SIGTERM before: a stop with timeout 0, as StopPodSandbox stops \
             every container of its pod (or RemoveContainer a running one), so there is no \
             grace period: {daemon} {via} with SIGKILL at once."
        ),
        (SIGKILL, _, true) => format!(
            "SIGKILL with no SIGTERM before: a client asked {daemon} to kill the task with \
             SIGKILL (as `ctr task kill -s SIGKILL` does), so there is no grace period: \
             {daemon} {via} with SIGKILL at once."
        ),
        _ => "A process sent the container's init a signal with kill(2). A namespace's pid 1 \
              ignores a signal it has no handler for, unless it is SIGKILL or SIGSTOP from \
              outside its namespace."
            .to_string(),
    };
    let source = match cri {
        true => {
            "kernel/signal.c kill_pid_info() → __send_signal_locked(), sig_task_ignored() \
             (SIGNAL_UNKILLABLE); runc kill.go; containerd pkg/cri (container_stop.go, \
             sandbox_stop.go)"
        }
        false => {
            "kernel/signal.c kill_pid_info() → __send_signal_locked(), sig_task_ignored() \
             (SIGNAL_UNKILLABLE); runc kill.go"
        }
    };
    (text, source)
}

/// The init's death, its SIGCHLD, the namespace's teardown, the kubelet's words.
pub(super) fn end(t: &Told) -> Text {
    match t.step.kind {
        StepKind::InitDied => (
            "The container's init ended: how, and who caused it, as the kernel recorded it \
             (its wait status, the signal that killed it and its sender). Being pid 1 of the \
             namespace, its death ends the container."
                .into(),
            "kernel/exit.c do_exit(), exit_notify(); kernel/signal.c",
        ),
        StepKind::InitReaped => reaped(t),
        StepKind::NamespaceKilled => (
            "When a pid namespace's init dies the kernel kills every other process left in \
             the namespace with SIGKILL (exec'd processes included) and waits for them: a \
             container cannot outlive its init."
                .into(),
            "kernel/pid_namespace.c zap_pid_ns_processes(), called from kernel/exit.c \
             find_child_reaper()",
        ),
        _ => terminated(t),
    }
}

/// The SIGCHLD for the init's death, by who its parent of record was.
fn reaped(t: &Told) -> Text {
    let who = match t.facts() {
        Facts::Reaped(Parent::Shim) => {
            "the shim, its parent since the runtime that created \
             it exited (the shim is its subreaper). The shim wait()s for it and reports the \
             exit status and reason (exit code, OOMKilled) to containerd."
        }
        Facts::Reaped(Parent::Conmon) => {
            "conmon, its parent since the runtime that created \
             it exited (conmon is its subreaper). conmon wait()s for it and writes its exit \
             status for CRI-O or podman."
        }
        Facts::Reaped(Parent::Runtime) => {
            "the runtime that started it: a foreground `runc \
             run` is INIT's parent all along (nothing adopted INIT), wait()s for it and exits \
             with its status."
        }
        Facts::Reaped(Parent::Init) => {
            "pid 1, which had adopted it (no subreaper was alive \
             when its runtime exited). Init reaps it; no runtime learns its status by wait()."
        }
        _ => "its parent of record, which wait()s for it.",
    };
    let source = match t.facts() {
        Facts::Reaped(Parent::Shim) => {
            "kernel/exit.c exit_notify() → kernel/signal.c do_notify_parent(); containerd \
             runtime/v2/runc (reaper)"
        }
        Facts::Reaped(Parent::Conmon) => {
            "kernel/exit.c exit_notify() → kernel/signal.c do_notify_parent(); conmon \
             src/conmon.c (exit file)"
        }
        Facts::Reaped(Parent::Runtime) => {
            "kernel/exit.c exit_notify() → kernel/signal.c do_notify_parent(); runc \
             utils_linux.go (runner.run waits for the process)"
        }
        _ => "kernel/exit.c exit_notify() → kernel/signal.c do_notify_parent()",
    };
    (
        format!("The kernel sent SIGCHLD to the init's parent of record, {who}"),
        source,
    )
}

/// What `kubectl describe pod` shows under Last State, for the cause the story holds.
fn terminated(t: &Told) -> Text {
    let cause = match t.cause() {
        Some(Cause::Exit { .. }) => "its own exit: Completed for code 0, Error otherwise",
        Some(Cause::OomKiller { .. }) => {
            "the OOM killer in the container's memory cgroup: \
             OOMKilled, exit code 137 (128 + SIGKILL)"
        }
        Some(Cause::StopContainer { .. }) => {
            "a StopContainer: SIGTERM, then SIGKILL if the \
             grace period ran out; Error, and 128 + the signal that ended it"
        }
        Some(Cause::KilledAtOnce { .. }) => {
            "a stop with timeout 0: SIGKILL at once, no \
             SIGTERM and no grace period; Error, exit code 137"
        }
        _ => "a signal: Error, exit code 128 + its number",
    };
    let whose = if t.story.pod.is_some() {
        "What `kubectl describe pod` will show under Last State: the runtime reports the \
         init's wait status to the kubelet as a ContainerStateTerminated."
    } else {
        "The init's wait status in a kubelet's words (no pod asked for this container)."
    };
    (
        format!(
            "{whose} Started is the init's exec of the workload, Finished its death. What the \
             recording shows ended it: {cause}."
        ),
        "containerd pkg/cri (container_stop.go, events.go: TaskExit, TaskOOM); kubelet \
         pkg/kubelet/kuberuntime (kuberuntime_container.go: toKubeContainerStatus)",
    )
}

/// After the death: `runc delete`, the pod's network, its shim, a restart.
pub(super) fn after(t: &Told) -> Text {
    match t.step.kind {
        StepKind::RuntimeDelete => delete(t),
        StepKind::CniTeardown => {
            let (order, rounds) = super::birth::cni_order(t, StepKind::CniTeardown);
            let again = if rounds > 1 {
                format!(
                    " The list ran {rounds} times here: a teardown may be asked for again \
                     (StopPodSandbox, RemovePodSandbox), and CNI DEL must succeed each time."
                )
            } else {
                String::new()
            };
            (
                format!(
                    "StopPodSandbox tears the pod's network down after its containers and its \
                     sandbox stopped: {} runs the network's CNI plugins again with \
                     CNI_COMMAND=DEL, which release the address and remove the pod's \
                     interface. Here: {order}.{again}",
                    t.daemon()
                ),
                "containerd pkg/cri (sandbox_stop.go teardownPodNetwork) → go-cni → libcni \
                 DelNetworkList",
            )
        }
        StepKind::ShimExited => (
            "With its last container gone and deleted, the pod's shim has nothing to hold and \
             exits (a shim lives as long as its pod)."
                .into(),
            "containerd runtime/v2/runc/task service (Shutdown)",
        ),
        StepKind::ShimReaped => {
            let who = match t.facts() {
                Facts::Reaped(Parent::Init) => "pid 1, which adopted it at its start",
                _ => "the subreaper that adopted it at its start",
            };
            (
                format!(
                    "The shim's parent of record, {who}, got SIGCHLD for its death and reaped \
                     it: the daemon that asked for the pod never was its parent."
                ),
                "kernel/exit.c exit_notify() → kernel/signal.c do_notify_parent()",
            )
        }
        _ => (
            "The container ended and the kubelet, following the pod's restart policy, asked \
             for it again: a new container with a new id is created in the same pod with the \
             same name (attempt N), by a new `runc create` under the pod's shim. Nothing of the \
             last life's processes survives."
                .into(),
            "kubelet pkg/kubelet/kuberuntime (computePodActions, startContainer); CRI \
             CreateContainer",
        ),
    }
}

/// `runc delete`: by the pod's shim (the task's Delete), or containerd's cleanup through
/// the shim binary's own `delete` command.
fn delete(t: &Told) -> Text {
    let text = match (t.facts(), t.kind()) {
        (Facts::Delete { cleanup: true, .. }, _) => {
            "After the task was deleted, containerd \
             closed its connection to the shim for this container and ran the shim binary's \
             own `delete` command (`containerd-shim-runc-v2 … delete`, a new short-lived \
             process, not the shim that ran the container), which runs `runc delete --force` \
             to remove whatever is left: a second delete of the same container is this \
             cleanup."
        }
        (_, StoryKind::Containerd) if t.story.pod.is_some() => {
            "With the container stopped, containerd's task Delete has the shim run `runc \
             delete`: runc removes its state directory and the container's cgroup. CRI \
             RemoveContainer removes the record later."
        }
        (_, StoryKind::Containerd) => {
            "With the container stopped, containerd's task Delete has the shim run `runc \
             delete`: runc removes its state directory and the container's cgroup."
        }
        (_, StoryKind::Conmon) => {
            "With the container stopped, CRI-O (or podman) ran `runc \
             delete`: runc removes its state directory and the container's cgroup."
        }
        _ => {
            "`runc delete` ran for the stopped container: runc removes its state directory \
             and the container's cgroup."
        }
    };
    (
        text.into(),
        "runc delete.go, libcontainer (Destroy); containerd runtime/v2 (shim.go \
         cleanupAfterDeadShim → binary.Delete), runtime/v2/runc/manager (Stop)",
    )
}
