//! One pod picked out of a recording: which processes, stories and events are its. A pod
//! is named as its bundles' Kubernetes annotations name it (containerd's CRI plugin writes
//! `io.kubernetes.cri.sandbox-{namespace,name,uid,id}`): `namespace/name`, `name`, its uid,
//! or its sandbox's id or a unique prefix of it (what `crictl pods` prints).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use super::engine::Engine;
use super::process::{ProcId, Process};
use super::story::Story;
use crate::escape::escape;
use crate::event::Event;

/// What a recording says about the pod of a process or story: the facts a [`PodMatch`]
/// looks at.
#[derive(Clone, Copy, Debug, Default)]
pub struct PodFacts<'a> {
    /// Its Kubernetes namespace.
    pub namespace: &'a str,
    /// Its name.
    pub name: &'a str,
    /// Its uid (empty when the annotations did not say).
    pub uid: &'a str,
    /// Its sandbox's container id, when known.
    pub sandbox_id: Option<&'a str>,
    /// The container's name in the pod (none for the sandbox and the runtime's processes).
    pub container: Option<&'a str>,
}

impl<'a> PodFacts<'a> {
    /// What `p`'s bundle annotations say, when they name a pod.
    pub fn of_process(p: &'a Process) -> Option<PodFacts<'a>> {
        let k = p.k8s.as_deref()?;
        let pod = k.pod.as_deref()?;
        Some(PodFacts {
            namespace: &pod.namespace,
            name: &pod.name,
            uid: &pod.uid,
            sandbox_id: k.sandbox_id.as_deref(),
            container: k.container_name.as_deref(),
        })
    }

    /// What story `s` says of its pod, when it names one.
    pub fn of_story(s: &'a Story) -> Option<PodFacts<'a>> {
        let (namespace, name) = s.pod.as_deref()?.split_once('/')?;
        Some(PodFacts {
            namespace,
            name,
            uid: "",
            sandbox_id: s.sandbox_id.as_deref(),
            container: s.container_name.as_deref(),
        })
    }
}

/// Which pod (and container) a view keeps. The one matcher of every command's `--pod`: a
/// query's text as typed (`str`: exact, what a live view waiting for the pod can use) and a
/// pod [`resolve`]d against a recording ([`SelectedPod`]) both implement it.
pub trait PodMatch {
    /// Does this select the pod (and container) `f` describes?
    fn selects(&self, f: &PodFacts<'_>) -> bool;
}

/// A pod's text as typed: its name, `namespace/name`, its uid or its sandbox's full id.
impl PodMatch for str {
    fn selects(&self, f: &PodFacts<'_>) -> bool {
        let q = self;
        f.name == q
            || q.split_once('/') == Some((f.namespace, f.name))
            || (!f.uid.is_empty() && f.uid == q)
            || f.sandbox_id == Some(q)
    }
}

impl PodMatch for String {
    fn selects(&self, f: &PodFacts<'_>) -> bool {
        self.as_str().selects(f)
    }
}

/// `p` belongs to the pod `m` selects, as its bundle's annotations say.
pub fn in_pod(p: &Process, m: &(impl PodMatch + ?Sized)) -> bool {
    PodFacts::of_process(p).is_some_and(|f| m.selects(&f))
}

/// `s` is a story of a container of the pod `m` selects.
pub fn story_in_pod(s: &Story, m: &(impl PodMatch + ?Sized)) -> bool {
    PodFacts::of_story(s).is_some_and(|f| m.selects(&f))
}

/// The pod's processes and every ancestor of each (what `tree --pod` and the viewer's pod
/// scope show).
pub fn pod_scope(e: &Engine, m: &(impl PodMatch + ?Sized)) -> HashSet<ProcId> {
    e.with_ancestors(|p| in_pod(p, m))
}

/// Does the recording hold anything of the pod `m` selects?
pub fn has_pod(e: &Engine, m: &(impl PodMatch + ?Sized)) -> bool {
    e.processes().any(|p| in_pod(p, m))
}

/// The owner prefix of a ReplicaSet's pod, `<deployment>-<rs hash>-` of
/// `<deployment>-<rs hash>-<suffix>`: what a pod and the one its ReplicaSet made in its place
/// share. The hash (the pod-template-hash) is 1 to 10 and the suffix 5 lowercase letters or
/// digits, as the ReplicaSet controller names them; `None` for any other name.
pub fn owner_prefix(name: &str) -> Option<&str> {
    let word = |s: &str, len: std::ops::RangeInclusive<usize>| {
        len.contains(&s.len())
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    };
    let (head, suffix) = name.rsplit_once('-')?;
    let (deployment, hash) = head.rsplit_once('-')?;
    (!deployment.is_empty() && word(hash, 1..=10) && word(suffix, 5..=5))
        .then(|| &name[..head.len() + 1])
}

/// The family a pod's name puts it in across nodes: its ReplicaSet's owner prefix
/// ([`owner_prefix`]), else its own name (a StatefulSet's pod keeps its name wherever it
/// runs again).
pub fn family(name: &str) -> &str {
    owner_prefix(name).unwrap_or(name)
}

/// Does `query` name the family of pod `name` without naming the pod itself: its ReplicaSet's
/// pods (`web-7d9f8b6c4d` for `web-7d9f8b6c4d-abcde`) or its Deployment's (`web`)?
pub fn names_family(query: &str, name: &str) -> bool {
    let Some(prefix) = owner_prefix(name) else {
        return false;
    };
    let rs = &prefix[..prefix.len() - 1];
    let deployment = rs.rsplit_once('-').map_or(rs, |(d, _)| d);
    !query.is_empty() && (query == rs || query == deployment)
}

/// How a user names a pod: `--pod`, `-n/--namespace`, `--container`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodQuery {
    /// `namespace/name`, `name`, the pod's uid, or its sandbox's id or a unique prefix of it;
    /// empty (`-n NS` alone): every pod of [`PodQuery::namespace`].
    pub pod: String,
    /// Only a pod of this namespace.
    pub namespace: Option<String>,
    /// Only this container of the pod (its name in the pod spec).
    pub container: Option<String>,
}

/// A query as typed, matched exactly (no sandbox-id prefix: that needs [`resolve`], which
/// knows whether it is unique): what a live view waiting for the pod, and the viewer's scope,
/// use.
impl PodMatch for PodQuery {
    fn selects(&self, f: &PodFacts<'_>) -> bool {
        (self.pod.selects(f) || self.every_pod())
            && self.namespace.as_deref().is_none_or(|n| n == f.namespace)
            && self
                .container
                .as_deref()
                .is_none_or(|c| f.container == Some(c))
    }
}

impl PodQuery {
    /// `-n NS` alone: every pod of that namespace.
    pub fn every_pod(&self) -> bool {
        self.pod.is_empty() && self.namespace.is_some()
    }
}

/// A pod found in a recording by [`resolve`], and the container asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SelectedPod {
    /// The pod's namespace.
    pub namespace: String,
    /// The pod's name; empty for every pod of the namespace (`-n NS` alone).
    pub name: String,
    /// Only this container of it.
    pub container: Option<String>,
}

impl SelectedPod {
    /// `namespace/name`, or `namespace/*` for every pod of it.
    pub fn text(&self) -> String {
        match self.name.as_str() {
            "" => format!("{}/*", self.namespace),
            name => format!("{}/{name}", self.namespace),
        }
    }
}

/// The pod (and container) a view is scoped to: found in a recording, or as typed for a live
/// view that waits for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PodScope {
    /// Resolved against the whole recording (what `tree --pod` shows).
    Found(SelectedPod),
    /// As typed, matched exactly as events arrive.
    Typed(PodQuery),
}

impl PodScope {
    /// The pod as the user sees it named: `namespace/name`, or the query (`-n` as a prefix).
    pub fn pod_text(&self) -> String {
        match self {
            PodScope::Found(p) => p.text(),
            PodScope::Typed(q) => match &q.namespace {
                Some(ns) if q.pod.is_empty() => format!("{ns}/*"),
                Some(ns) => format!("{ns}/{}", q.pod),
                None => q.pod.clone(),
            },
        }
    }

    /// The one container asked for, if any.
    pub fn container(&self) -> Option<&str> {
        match self {
            PodScope::Found(p) => p.container.as_deref(),
            PodScope::Typed(q) => q.container.as_deref(),
        }
    }
}

impl PodMatch for PodScope {
    fn selects(&self, f: &PodFacts<'_>) -> bool {
        match self {
            PodScope::Found(p) => p.selects(f),
            PodScope::Typed(q) => q.selects(f),
        }
    }
}

impl PodMatch for SelectedPod {
    fn selects(&self, f: &PodFacts<'_>) -> bool {
        f.namespace == self.namespace
            && (self.name.is_empty() || f.name == self.name)
            && self
                .container
                .as_deref()
                .is_none_or(|c| f.container == Some(c))
    }
}

/// Why `--pod` found no one pod: each a one-line message, names escaped.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PodError {
    /// No pod of the recording is the one asked for.
    #[error(
        "no pod {} in the recording ({})",
        escape(query),
        listed("pods", known)
    )]
    NotFound {
        /// What was asked for.
        query: String,
        /// The recording's pods (`namespace/name`).
        known: Vec<String>,
    },
    /// Several pods answer to it.
    #[error(
        "{} names several pods: {}; say which by namespace/name or a longer sandbox id",
        escape(query),
        listed("", candidates)
    )]
    Ambiguous {
        /// What was asked for.
        query: String,
        /// The pods it names (`namespace/name`).
        candidates: Vec<String>,
    },
    /// The pod has no container of that name.
    #[error(
        "pod {} has no container {} ({})",
        escape(pod),
        escape(container),
        listed("containers", known)
    )]
    NoContainer {
        /// The pod (`namespace/name`).
        pod: String,
        /// The container asked for.
        container: String,
        /// The pod's containers.
        known: Vec<String>,
    },
}

/// At most this many names in an error message.
const MAX_LISTED: usize = 8;

/// `what: a, b, c` (escaped, at most [`MAX_LISTED`]), or `no what` when empty.
pub(super) fn listed(what: &str, names: &[String]) -> String {
    if names.is_empty() {
        return format!("no {what}");
    }
    let mut s: Vec<String> = names
        .iter()
        .take(MAX_LISTED)
        .map(|n| escape(n).into_owned())
        .collect();
    if names.len() > MAX_LISTED {
        s.push(format!("and {} more", names.len() - MAX_LISTED));
    }
    match what {
        "" => s.join(", "),
        w => format!("{w}: {}", s.join(", ")),
    }
}

/// A pod as a recording shows it: `namespace/name`, uid, sandbox ids.
#[derive(Debug, Default)]
pub(super) struct PodSeen {
    pub(super) uid: String,
    pub(super) sandbox_ids: BTreeSet<String>,
    pub(super) containers: BTreeSet<String>,
}

/// Every pod the recording's bundles named, by `(namespace, name)`.
pub(super) fn pods_seen(e: &Engine) -> BTreeMap<PodKey, PodSeen> {
    let mut pods: BTreeMap<PodKey, PodSeen> = BTreeMap::new();
    for f in e.processes().filter_map(PodFacts::of_process) {
        let seen = pods
            .entry((f.namespace.to_string(), f.name.to_string()))
            .or_default();
        if seen.uid.is_empty() {
            seen.uid = f.uid.to_string();
        }
        seen.sandbox_ids.extend(f.sandbox_id.map(str::to_string));
        seen.containers.extend(f.container.map(str::to_string));
    }
    pods
}

/// The one pod of the recording `q` names: exactly (`namespace/name`, `name`, uid, sandbox
/// id), else by a prefix of its sandbox id (crictl shows 13 digits); within `-n` when given;
/// with the container asked for, if any.
pub fn resolve(e: &Engine, q: &PodQuery) -> Result<SelectedPod, PodError> {
    resolve_in(&pods_seen(e), q)
}

/// A pod's key in [`pods_seen`]: `(namespace, name)`.
pub(super) type PodKey = (String, String);

/// `namespace/name`.
pub(super) fn key_text((ns, name): &PodKey) -> String {
    format!("{ns}/{name}")
}

/// The one pod of `pods` that `q` names (its container not checked).
fn find_pod<'p>(
    pods: &'p BTreeMap<PodKey, PodSeen>,
    q: &PodQuery,
) -> Result<(&'p PodKey, &'p PodSeen), PodError> {
    let exact = |(ns, name): &PodKey, seen: &PodSeen, sid: Option<&str>| {
        q.pod.as_str().selects(&PodFacts {
            namespace: ns,
            name,
            uid: &seen.uid,
            sandbox_id: sid,
            container: None,
        })
    };
    let pick = |by: &dyn Fn(&PodKey, &PodSeen) -> bool| -> Vec<(&'p PodKey, &'p PodSeen)> {
        let in_ns = |ns: &str| q.namespace.as_deref().is_none_or(|n| n == ns);
        pods.iter()
            .filter(|(k, seen)| in_ns(&k.0) && by(k, seen))
            .collect()
    };
    let mut found = pick(&|k, seen| {
        exact(k, seen, None) || seen.sandbox_ids.iter().any(|s| exact(k, seen, Some(s)))
    });
    if found.is_empty() && !q.pod.is_empty() {
        found = pick(&|_, seen| seen.sandbox_ids.iter().any(|s| s.starts_with(&q.pod)));
    }
    match found.as_slice() {
        [one] => Ok(*one),
        [] => Err(PodError::NotFound {
            query: match &q.namespace {
                Some(ns) => format!("{}/{}", ns, q.pod),
                None => q.pod.clone(),
            },
            known: pods.keys().map(key_text).collect(),
        }),
        many => Err(PodError::Ambiguous {
            query: q.pod.clone(),
            candidates: many.iter().map(|(k, _)| key_text(k)).collect(),
        }),
    }
}

/// `-n NS` alone among `pods`: every pod of the namespace (one at least), with the container
/// asked for in one of them at least.
fn resolve_namespace(
    pods: &BTreeMap<PodKey, PodSeen>,
    ns: &str,
    q: &PodQuery,
) -> Result<SelectedPod, PodError> {
    let in_ns: Vec<_> = pods.iter().filter(|(k, _)| k.0 == ns).collect();
    if in_ns.is_empty() {
        return Err(PodError::NotFound {
            query: format!("{ns}/*"),
            known: pods.keys().map(key_text).collect(),
        });
    }
    if let Some(c) = &q.container {
        if !in_ns.iter().any(|(_, seen)| seen.containers.contains(c)) {
            let known = in_ns.iter().flat_map(|(_, s)| s.containers.iter());
            return Err(PodError::NoContainer {
                pod: format!("{ns}/*"),
                container: c.clone(),
                known: known
                    .cloned()
                    .collect::<BTreeSet<_>>()
                    .into_iter()
                    .collect(),
            });
        }
    }
    Ok(SelectedPod {
        namespace: ns.to_string(),
        name: String::new(),
        container: q.container.clone(),
    })
}

/// [`resolve`] among `pods`.
pub(super) fn resolve_in(
    pods: &BTreeMap<PodKey, PodSeen>,
    q: &PodQuery,
) -> Result<SelectedPod, PodError> {
    if let Some(ns) = q.namespace.as_deref().filter(|_| q.every_pod()) {
        return resolve_namespace(pods, ns, q);
    }
    let (key, seen) = find_pod(pods, q)?;
    if let Some(c) = q
        .container
        .as_ref()
        .filter(|c| !seen.containers.contains(*c))
    {
        return Err(PodError::NoContainer {
            pod: key_text(key),
            container: c.clone(),
            known: seen.containers.iter().cloned().collect(),
        });
    }
    Ok(SelectedPod {
        namespace: key.0.clone(),
        name: key.1.clone(),
        container: q.container.clone(),
    })
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
    /// Picks the pod `m` selects out of the engine that read the whole recording.
    pub fn new(e: &Engine, m: &(impl PodMatch + ?Sized)) -> PodEvents {
        let mut ids: HashSet<ProcId> = e
            .processes()
            .filter(|p| in_pod(p, m))
            .map(|p| p.id)
            .collect();
        for st in super::stories(e).iter().filter(|s| story_in_pod(s, m)) {
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
                .signals()
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
        pids_of(ev).any(|p| self.chosen(p, ev.seq))
    }
}

/// Events a [`LiveScope`] holds back while their process is not known to be the pod's (a
/// runtime's fork and exec come before the bundle annotations that name its pod).
pub const HELD_EVENTS: usize = 4096;

/// A live stream narrowed to one pod (or every pod of a namespace), as events arrive: what
/// `trace`, `record` and `agent` keep with `--pod`/`-n`/`--container`. Its own engine reads
/// every event (the capture follows more than the pod); an event is kept when it acts on a
/// process of the pod as that engine knows it now — the pod's processes, and the runtime's
/// and shim's that act for it once their bundle or argv names it. Events of a process not
/// named yet wait (at most [`HELD_EVENTS`], the oldest dropped first) and are kept, in order,
/// with the event that names it: so a runtime's fork and exec come before its annotations.
pub struct LiveScope {
    query: PodQuery,
    engine: Engine,
    held: std::collections::VecDeque<Event>,
}

impl LiveScope {
    /// Waits for the pod `query` names as typed (exact: a live stream cannot know whether a
    /// prefix will stay unique); `seed` is what existed at the start (a recording's snapshot).
    pub fn new(query: PodQuery, seed: &[crate::event::SnapshotProcess]) -> LiveScope {
        let mut engine = Engine::with_retention(super::Retention::default());
        engine.seed_snapshot(seed);
        LiveScope {
            query,
            engine,
            held: std::collections::VecDeque::new(),
        }
    }

    /// What it was asked to keep.
    pub fn query(&self) -> &PodQuery {
        &self.query
    }

    /// The process `pid` is one of the pod's now, and was since `seq` at least.
    fn in_scope(&self, pid: u32, seq: u64) -> bool {
        pid != 0
            && self
                .engine
                .process(pid)
                .is_some_and(|p| p.start_seq <= seq && in_pod(p, &self.query))
    }

    /// Keeps in `batch` the pod's events (with those held back for a process the batch
    /// names as the pod's), in stream order.
    pub fn retain(&mut self, batch: &mut Vec<Event>) {
        let mut kept = Vec::new();
        for ev in batch.drain(..) {
            self.engine.apply(&ev);
            let named: Vec<u32> = pids_of(&ev).filter(|&p| self.in_scope(p, ev.seq)).collect();
            if named.is_empty() {
                if self.held.len() == HELD_EVENTS {
                    self.held.pop_front();
                }
                self.held.push_back(ev);
                continue;
            }
            let since = |pid: u32| self.engine.process(pid).map_or(u64::MAX, |p| p.start_seq);
            let starts: Vec<(u32, u64)> = named.iter().map(|&p| (p, since(p))).collect();
            let (theirs, rest): (Vec<Event>, Vec<Event>) = self.held.drain(..).partition(|h| {
                pids_of(h).any(|p| starts.iter().any(|&(q, from)| q == p && h.seq >= from))
            });
            self.held = rest.into();
            kept.extend(theirs);
            kept.push(ev);
        }
        *batch = kept;
    }
}

/// The processes (tgids) an event acts on: its own, and the one it creates, moves, names,
/// signals or kills (the one reading of [`PodEvents::contains`] and [`LiveScope`]).
fn pids_of(ev: &Event) -> impl Iterator<Item = u32> {
    let others = ev.kind.other_pids();
    std::iter::once(ev.tgid).chain(others.into_iter().flatten().filter(|&p| p != 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pod_is_named_by_name_namespace_and_name_uid_or_sandbox_id() {
        let f = PodFacts {
            namespace: "ns",
            name: "web",
            uid: "u-1",
            sandbox_id: Some("abcdef"),
            container: Some("nginx"),
        };
        for yes in ["web", "ns/web", "u-1", "abcdef"] {
            assert!(yes.selects(&f), "{yes}");
        }
        // A prefix is only for resolve, which knows whether it is unique.
        for no in ["other/web", "ns/we", "ns", "abc", ""] {
            assert!(!no.selects(&f), "{no}");
        }
        assert!(!"u-1".selects(&PodFacts { uid: "", ..f }));
        let sel = |container: Option<&str>| SelectedPod {
            namespace: "ns".into(),
            name: "web".into(),
            container: container.map(Into::into),
        };
        assert!(sel(None).selects(&f) && sel(Some("nginx")).selects(&f));
        assert!(!sel(Some("sidecar")).selects(&f));
        assert!(!sel(None).selects(&PodFacts {
            namespace: "x",
            ..f
        }));
        // Typed (a live view waiting for it): exact, narrowed by -n and --container.
        let typed = |pod: &str, ns: Option<&str>, c: Option<&str>| PodQuery {
            pod: pod.into(),
            namespace: ns.map(Into::into),
            container: c.map(Into::into),
        };
        for yes in [
            typed("web", None, None),
            typed("u-1", Some("ns"), Some("nginx")),
            typed("abcdef", None, Some("nginx")),
        ] {
            assert!(
                yes.selects(&f) && PodScope::Typed(yes.clone()).selects(&f),
                "{yes:?}"
            );
        }
        for no in [
            typed("web", Some("other"), None),
            typed("web", None, Some("sidecar")),
            typed("abc", None, None),
        ] {
            assert!(
                !no.selects(&f) && !PodScope::Typed(no.clone()).selects(&f),
                "{no:?}"
            );
        }
        assert!(!typed("web", None, Some("nginx")).selects(&PodFacts {
            container: None,
            ..f
        }));
        assert!(PodScope::Found(sel(Some("nginx"))).selects(&f));
        assert!(!PodScope::Found(sel(Some("sidecar"))).selects(&f));
    }

    #[test]
    fn a_replicasets_pod_has_an_owner_prefix_and_its_family_answers_to_it() {
        let pod = "web-7d9f8b6c4d-abcde";
        assert_eq!(owner_prefix(pod), Some("web-7d9f8b6c4d-"));
        assert_eq!(owner_prefix("my-web-5f6d-x2z4q"), Some("my-web-5f6d-"));
        // A StatefulSet's pod, a bare name, a suffix not of 5, a hash too long, upper case.
        for other in [
            "db-0",
            "web",
            "web-abcde",
            "web-7d9f-abcd",
            "w-7d9f8b6c4d1-abcde",
            "web-7D9F-abcde",
            "-7d9f-abcde",
        ] {
            assert_eq!(owner_prefix(other), None, "{other}");
            assert_eq!(family(other), other);
        }
        assert_eq!(family(pod), "web-7d9f8b6c4d-");
        for yes in ["web-7d9f8b6c4d", "web"] {
            assert!(names_family(yes, pod), "{yes}");
        }
        for no in ["", "web-7d9f", "web-7d9f8b6c4d-", "we", pod] {
            assert!(!names_family(no, pod), "{no}");
        }
    }

    #[test]
    fn a_prefix_or_a_name_naming_two_pods_is_ambiguous() {
        let pod = |sid: &str| PodSeen {
            uid: format!("uid-{sid}"),
            sandbox_ids: [sid.to_string()].into(),
            containers: ["app".to_string()].into(),
        };
        let key = |ns: &str, n: &str| (ns.to_string(), n.to_string());
        let pods: BTreeMap<_, _> = [
            (key("a", "web"), pod("abc123")),
            (key("b", "web"), pod("abd456")),
            (key("a", "db"), pod("ffee00")),
        ]
        .into();
        let q = |pod: &str, ns: Option<&str>| PodQuery {
            pod: pod.into(),
            namespace: ns.map(Into::into),
            container: None,
        };
        let found = |p: &str, ns| resolve_in(&pods, &q(p, ns)).map(|s| s.text());
        let two = vec!["a/web".to_string(), "b/web".to_string()];
        for (p, ns) in [("web", None), ("ab", None)] {
            assert_eq!(
                found(p, ns),
                Err(PodError::Ambiguous {
                    query: p.into(),
                    candidates: two.clone()
                })
            );
        }
        assert_eq!(found("web", Some("b")), Ok("b/web".into()));
        assert_eq!(found("abc", None), Ok("a/web".into()));
        assert_eq!(found("abd456", None), Ok("b/web".into()));
        assert_eq!(found("uid-ffee00", None), Ok("a/db".into()));
        assert_eq!(found("a/db", Some("b")).ok(), None);
        let e = found("zz", None).unwrap_err().to_string();
        assert_eq!(e, "no pod zz in the recording (pods: a/db, a/web, b/web)");
    }

    /// A node where `runc run` starts container `c-PID` of pod `shop/POD` (runtime pid `pid`,
    /// its init `pid + 1`), numbered from `first`.
    fn runc_run(pid: u32, pod: &str) -> Vec<Event> {
        use crate::synth;
        let cid = format!("c-{pid}");
        let argv = ["runc", "run", "--bundle", "/b", &cid];
        let mut evs = vec![synth::fork(1, pid)];
        evs.extend(synth::exec_argv(pid, "/usr/sbin/runc", &argv));
        evs.push(synth::container_meta(pid, &cid, "shop", pod, "web"));
        evs.push(synth::fork(pid, pid + 1));
        evs.push(synth::exec(pid + 1, "/bin/sleep"));
        evs.push(synth::exit(pid + 1, 0));
        evs
    }

    /// Numbers `evs` 1.. (a ContainerMeta repeats the seq of the exec before it).
    fn numbered(mut evs: Vec<Event>) -> Vec<Event> {
        let mut seq = 0;
        for ev in &mut evs {
            if !ev.kind.is_metadata() {
                seq += 1;
            }
            ev.seq = seq;
        }
        evs
    }

    fn kept(q: PodQuery, evs: &[Event]) -> Vec<u32> {
        let mut scope = LiveScope::new(q, &[]);
        let mut out = Vec::new();
        // One event a batch: what is held back must come out in order across batches.
        for ev in evs {
            let mut batch = vec![ev.clone()];
            scope.retain(&mut batch);
            out.extend(batch);
        }
        let mut seqs: Vec<(u64, &str)> = out.iter().map(|e| (e.seq, e.kind.name())).collect();
        assert!(
            out.windows(2).all(|w| w[0].seq <= w[1].seq),
            "kept in stream order"
        );
        seqs.sort();
        seqs.dedup();
        assert_eq!(seqs.len(), out.len(), "each event once");
        let mut pids: Vec<u32> = out.iter().flat_map(pids_of).filter(|&p| p != 1).collect();
        pids.sort();
        pids.dedup();
        pids
    }

    #[test]
    fn a_live_scope_keeps_a_pod_from_its_runtimes_fork_and_nothing_else() {
        let mut evs = runc_run(100, "web");
        evs.extend(runc_run(200, "db"));
        evs.push(crate::synth::fork(1, 300));
        evs.push(crate::synth::exec(300, "/bin/true"));
        let evs = numbered(evs);
        let q = |pod: &str, ns: Option<&str>| PodQuery {
            pod: pod.into(),
            namespace: ns.map(String::from),
            container: None,
        };
        assert_eq!(kept(q("shop/web", None), &evs), [100, 101]);
        assert_eq!(kept(q("db", Some("shop")), &evs), [200, 201]);
        // -n alone: every pod of the namespace.
        assert_eq!(kept(q("", Some("shop")), &evs), [100, 101, 200, 201]);
        assert!(kept(q("", Some("prod")), &evs).is_empty());
        // The runtime's fork and exec came before its annotations: kept with them.
        let mut scope = LiveScope::new(q("web", None), &[]);
        let mut all = evs.clone();
        scope.retain(&mut all);
        let kinds: Vec<&str> = all.iter().take(4).map(|e| e.kind.name()).collect();
        assert_eq!(kinds, ["fork", "exec_enter", "exec", "container_meta"]);
    }

    #[test]
    fn a_namespace_alone_selects_every_pod_of_it() {
        let f = |ns, name| PodFacts {
            namespace: ns,
            name,
            uid: "",
            sandbox_id: None,
            container: Some("web"),
        };
        let every = PodQuery {
            pod: String::new(),
            namespace: Some("shop".into()),
            container: None,
        };
        assert!(every.every_pod());
        assert!(every.selects(&f("shop", "a")) && every.selects(&f("shop", "b")));
        assert!(!every.selects(&f("prod", "a")));
        let web = PodQuery {
            container: Some("web".into()),
            ..every.clone()
        };
        assert!(web.selects(&f("shop", "a")));
        assert!(!PodQuery {
            container: Some("db".into()),
            ..every.clone()
        }
        .selects(&f("shop", "a")));
        // Resolved against a recording: the namespace's pods, `namespace/*`.
        let mut e = Engine::new();
        for ev in numbered([runc_run(100, "web"), runc_run(200, "db")].concat()) {
            e.apply(&ev);
        }
        let sel = resolve(&e, &every).unwrap();
        assert_eq!(sel.text(), "shop/*");
        assert!(sel.selects(&f("shop", "zzz")) && !sel.selects(&f("prod", "web")));
        assert_eq!(
            pod_scope(&e, &sel).len(),
            pod_scope(&e, "web").len() + pod_scope(&e, "db").len() - 1
        );
        let none = PodQuery {
            namespace: Some("prod".into()),
            ..every.clone()
        };
        let err = resolve(&e, &none).unwrap_err().to_string();
        assert!(
            err.starts_with("no pod prod/* in the recording (pods: shop/db, shop/web"),
            "{err}"
        );
        let nocont = PodQuery {
            container: Some("nope".into()),
            ..every
        };
        let err = resolve(&e, &nocont).unwrap_err().to_string();
        assert!(
            err.contains("has no container nope (containers: web)"),
            "{err}"
        );
    }
}
