//! One pod picked out of a recording: which processes, stories and events are its. A pod
//! is named as its bundles' Kubernetes annotations name it: `name` or `namespace/name`.

use std::collections::{HashMap, HashSet};

use super::engine::Engine;
use super::process::{ProcId, Process};
use super::story::Story;
use crate::event::{Event, EventKind};

/// Whether `pod` (`namespace/name`) is the pod `query` names (its name, or `namespace/name`).
fn pod_is(namespace: &str, name: &str, query: &str) -> bool {
    name == query || query.split_once('/') == Some((namespace, name))
}

/// `p` belongs to pod `name`, as its bundle's annotations say.
pub fn in_pod(p: &Process, name: &str) -> bool {
    p.k8s
        .as_ref()
        .and_then(|k| k.pod.as_ref())
        .is_some_and(|pod| pod_is(&pod.namespace, &pod.name, name))
}

/// `s` is the birth of a container of pod `name`.
pub fn story_in_pod(s: &Story, name: &str) -> bool {
    s.pod
        .as_deref()
        .and_then(|p| p.split_once('/'))
        .is_some_and(|(ns, n)| pod_is(ns, n, name))
}

/// The pod's processes and every ancestor of each (what `tree --pod` and the viewer's pod
/// scope show).
pub fn pod_scope(e: &Engine, name: &str) -> HashSet<ProcId> {
    e.with_ancestors(|p| in_pod(p, name))
}

/// Does the recording hold anything of pod `name`?
pub fn has_pod(e: &Engine, name: &str) -> bool {
    e.processes().any(|p| in_pod(p, name))
}

/// The events of one pod: those of its processes, and of every process one of its
/// container-birth stories names (the shim, the runtime, runc's stages, which exit before
/// or without the pod's annotations), each only within that process's lifetime (a pid can
/// be reused). A fork counts for the child too, a cgroup move and a bundle's annotations
/// for the process they name.
#[derive(Clone, Debug, Default)]
pub struct PodEvents {
    /// Lifetimes (first and last seq) of the chosen processes, by pid.
    windows: HashMap<u32, Vec<(u64, u64)>>,
}

impl PodEvents {
    /// Picks pod `name` out of the engine that read the whole recording.
    pub fn new(e: &Engine, name: &str) -> PodEvents {
        let mut ids: HashSet<ProcId> = e
            .processes()
            .filter(|p| in_pod(p, name))
            .map(|p| p.id)
            .collect();
        for st in super::lifecycle::stories(e)
            .iter()
            .filter(|s| story_in_pod(s, name))
        {
            for step in &st.steps {
                let alive_then = e.processes().find(|p| {
                    p.pid == step.pid
                        && p.start_seq <= step.seq
                        && p.exit_seq.is_none_or(|x| x >= step.seq)
                });
                ids.extend(alive_then.map(|p| p.id));
            }
        }
        let mut windows: HashMap<u32, Vec<(u64, u64)>> = HashMap::new();
        for p in ids.iter().filter_map(|&id| e.get(id)) {
            // Its death's SIGCHLD comes after its exit, raised in its context (exit_notify).
            let notified = p
                .signals
                .iter()
                .filter(|s| s.sender == p.pid && s.signal == super::ending::SIGCHLD && s.code > 0)
                .map(|s| s.seq);
            let end = p.exit_seq.map_or(u64::MAX, |x| notified.fold(x, u64::max));
            windows.entry(p.pid).or_default().push((p.start_seq, end));
        }
        PodEvents { windows }
    }

    /// Nothing of the pod was found.
    pub fn is_empty(&self) -> bool {
        self.windows.is_empty()
    }

    /// The chosen processes' lifetimes: pid, first and last seq (`u64::MAX` while alive).
    pub fn lifetimes(&self) -> impl Iterator<Item = (u32, u64, u64)> + '_ {
        self.windows
            .iter()
            .flat_map(|(&pid, w)| w.iter().map(move |&(from, to)| (pid, from, to)))
    }

    /// Processes chosen.
    pub fn process_count(&self) -> usize {
        self.windows.values().map(Vec::len).sum()
    }

    fn chosen(&self, pid: u32, seq: u64) -> bool {
        self.windows
            .get(&pid)
            .is_some_and(|w| w.iter().any(|&(from, to)| from <= seq && seq <= to))
    }

    /// Is `ev` one of the pod's events?
    pub fn contains(&self, ev: &Event) -> bool {
        let others = match &ev.kind {
            EventKind::Fork { child_tgid, .. } => [Some(*child_tgid), None],
            EventKind::CgroupAttach { pid, .. } | EventKind::ContainerMeta { pid, .. } => {
                [Some(*pid), None]
            }
            EventKind::Signal(i) => [Some(i.sender), Some(i.target)],
            EventKind::OomVictim(o) => [Some(o.tid), None],
            _ => [None, None],
        };
        self.chosen(ev.tgid, ev.seq)
            || others
                .into_iter()
                .flatten()
                .any(|p| p != 0 && self.chosen(p, ev.seq))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pod_is_named_by_name_or_namespace_and_name() {
        assert!(pod_is("ns", "web", "web"));
        assert!(pod_is("ns", "web", "ns/web"));
        assert!(!pod_is("ns", "web", "other/web"));
        assert!(!pod_is("ns", "web", "ns/we"));
        assert!(!pod_is("ns", "web", "ns"));
    }
}
