//! What the viewer's search looks at in a process, kept for the whole recording (the replay
//! source makes it as it opens: [`super::Msg::Index`]).

use crate::lineage::{Engine, Process};

/// What the search looks at in a process, kept for the whole recording: its pid and birth,
/// its name, executable, pod, container name and container id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Findable {
    /// Its pid.
    pub pid: u32,
    /// Its birth's seq (with the pid, which life of that pid).
    pub start_seq: u64,
    name: Box<str>,
    exe: Option<Box<str>>,
    pod: Option<Box<str>>,
    container: Option<Box<str>>,
    cid: Option<Box<str>>,
}

impl Findable {
    /// What the search looks at in `p`.
    pub fn of(p: &Process) -> Findable {
        let k8s = p.k8s.as_deref();
        Findable {
            pid: p.pid,
            start_seq: p.start_seq,
            name: p.name().into(),
            exe: p.exe.as_deref().map(|e| crate::lineage::basename(e).into()),
            pod: k8s.and_then(|k| k.pod_text()).map(Into::into),
            container: k8s
                .and_then(|k| k.container_name.as_deref())
                .map(Into::into),
            cid: p.container_id.as_deref().map(Into::into),
        }
    }

    /// Every process `e` holds, in the order of their records (their births').
    pub fn every(e: &Engine) -> Vec<Findable> {
        e.processes().map(Findable::of).collect()
    }

    /// Does it match the search `q`: a pid prefix (digits), else part of its name, a
    /// container-id prefix, or part of its pod's or container's name (case-insensitive)?
    pub fn matches(&self, q: &str) -> bool {
        let q = q.trim();
        if q.is_empty() {
            return false;
        }
        if q.bytes().all(|b| b.is_ascii_digit()) {
            return self.pid.to_string().starts_with(q);
        }
        let ql = q.to_lowercase();
        let has =
            |t: &Option<Box<str>>| t.as_deref().is_some_and(|t| t.to_lowercase().contains(&ql));
        self.name.to_lowercase().contains(&ql)
            || has(&self.pod)
            || has(&self.container)
            || has(&self.exe)
            || self
                .cid
                .as_deref()
                .is_some_and(|c| c.to_lowercase().starts_with(&ql))
    }
}
