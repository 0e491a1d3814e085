//! One pod's life across nodes: the stories of every node that held it, in wall-clock order,
//! and a pod deleted on one node linked to the one its owner started in its place.
//!
//! Each node's recording has its own boot clock; its [`crate::clock::Clock`] (a trace file's
//! header: the wall time of its start) turns a step's `ts_ns` into wall time, which is what
//! the nodes share. A ReplicaSet names its pods `<deployment>-<rs hash>-<suffix>`: a pod and
//! its replacement share the owner prefix ([`owner_prefix`]); a StatefulSet's pod keeps its
//! name. Within such a family, a pod whose life ended is *replaced* by the family's first
//! pod born after its stop began (the deletion that stops a pod also makes its owner create
//! the next one), and the gap runs from its end to the replacement's sandbox birth (negative
//! when the replacement started before the old pod was gone).

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::{json, Value};

use super::engine::Engine;
use super::pod::{
    family, key_text, names_family, owner_prefix, pods_seen, PodError, PodKey, PodQuery, PodSeen,
    SelectedPod,
};
use super::story::{Phase, StepKind, Story};
use crate::escape::escape;

/// Bytes of a node's name kept (the stream's subject allows 128; any other reader's name is
/// cut there too).
pub const MAX_NODE_NAME: usize = 128;

/// One node's recording read through the engine, by the node's name (as the stream names it:
/// hostile, bounded to [`MAX_NODE_NAME`] and escaped in text).
#[derive(Clone, Copy)]
pub struct NodeEngine<'a> {
    /// The node's name.
    pub node: &'a str,
    /// Its recording, read.
    pub engine: &'a Engine,
}

/// A pod on one node: its stories there and when its life began and ended, on the wall clock.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Part {
    /// The node (bounded).
    pub node: String,
    /// `namespace/name` of the pod.
    pub pod: String,
    /// Wall time (ns since the epoch) of its first step; `None` when the node's recording
    /// has no wall clock.
    pub first_ns: Option<i128>,
    /// Wall time of its last step.
    pub last_ns: Option<i128>,
    /// Its sandbox's birth (or its first container's when the sandbox was not seen).
    pub born_ns: Option<i128>,
    /// When its stop began: the first step of its last lives' deaths.
    pub stopping_ns: Option<i128>,
    /// Its end, when every container of it (its sandbox included) died last.
    pub ended_ns: Option<i128>,
    /// Its stories on that node (with `--container`, that container's), numbered from 1.
    pub stories: Vec<(usize, Story)>,
}

/// A pod that ended and the pod of its family started in its place.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Replaced {
    /// Index of the pod that ended in [`Across::parts`].
    pub from: usize,
    /// Index of its replacement.
    pub to: usize,
    /// From its end to the replacement's sandbox birth, ns (negative: born before the end).
    pub gap_ns: i128,
}

/// What `story nats://HOST:PORT/* --pod NAME` tells: each pod on each node that held it, in
/// wall-clock order (parts without a wall clock last), and the replacements.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Across {
    /// One per pod and node.
    pub parts: Vec<Part>,
    /// Pods replaced, in the order of the parts they lead to.
    pub replaced: Vec<Replaced>,
}

/// Does node `e` hold anything the query may select across nodes (the pod, a pod of its
/// family, a pod of the namespace)? What a reader keeps of the nodes it reads.
pub fn holds(e: &Engine, q: &PodQuery) -> bool {
    let in_ns = |ns: &str| q.namespace.as_deref().is_none_or(|n| n == ns);
    pods_seen(e).iter().any(|((ns, name), seen)| {
        in_ns(ns)
            && (q.every_pod()
                || q.pod.as_str().selects_seen(ns, name, seen)
                || seen.sandbox_ids.iter().any(|s| s.starts_with(&q.pod))
                || names_family(&q.pod, name)
                || owner_prefix(&q.pod).is_some_and(|p| family(name) == p))
    })
}

/// Matching a typed query against a pod as [`pods_seen`] lists it.
trait SelectsSeen {
    fn selects_seen(&self, ns: &str, name: &str, seen: &PodSeen) -> bool;
}

impl SelectsSeen for str {
    fn selects_seen(&self, ns: &str, name: &str, seen: &PodSeen) -> bool {
        use super::pod::{PodFacts, PodMatch};
        let f = |sandbox_id| PodFacts {
            namespace: ns,
            name,
            uid: &seen.uid,
            sandbox_id,
            container: None,
        };
        self.selects(&f(None)) || seen.sandbox_ids.iter().any(|s| self.selects(&f(Some(s))))
    }
}

/// One pod on one node, before its stories are told.
struct Seen<'a> {
    node: usize,
    key: PodKey,
    seen: &'a PodSeen,
}

/// The pods `q` asks for across `nodes`: the one it names (by the one pod matcher, on each
/// node) with the pods it replaced or was replaced by; else the family it names
/// (`web-7d9f8b6c4d`, `web`); with `-n NS` alone, every pod of the namespace.
pub fn tell(nodes: &[NodeEngine<'_>], q: &PodQuery) -> Result<Across, PodError> {
    let seen: Vec<BTreeMap<PodKey, PodSeen>> = nodes.iter().map(|n| pods_seen(n.engine)).collect();
    let all: Vec<Seen<'_>> = seen
        .iter()
        .enumerate()
        .flat_map(|(node, pods)| {
            pods.iter().map(move |(key, seen)| Seen {
                node,
                key: key.clone(),
                seen,
            })
        })
        .collect();
    let (named, chained) = chosen(&seen, &all, q)?;
    let families = families(&named);
    let candidates: Vec<&Seen<'_>> = all
        .iter()
        .filter(|s| {
            let fam = (s.key.0.clone(), family(&s.key.1).to_string());
            named.contains(&s.key) || (chained && families.contains(&fam))
        })
        .collect();
    // Each node's stories told once, for the nodes that hold a pod shown.
    let mut cache: Vec<Option<Vec<Story>>> = vec![None; nodes.len()];
    let mut parts = Vec::with_capacity(candidates.len());
    for s in candidates {
        let n = nodes[s.node];
        let stories = cache[s.node].get_or_insert_with(|| super::stories(n.engine));
        parts.push(part(n, stories, &s.key, q.container.as_deref()));
    }
    parts.sort_by_key(order);
    let replaced = replacements(&parts);
    let mut told = Across { parts, replaced };
    if chained {
        let keep = linked_to(&told.parts, &told.replaced, &named);
        told.keep(&keep);
    }
    told.replaced.sort_by_key(|l| (l.to, l.from));
    Ok(told)
}

/// Parts in wall-clock order, those without a clock last, then by node and pod.
fn order(p: &Part) -> (bool, Option<i128>, String, String) {
    (
        p.first_ns.is_none(),
        p.first_ns,
        p.node.clone(),
        p.pod.clone(),
    )
}

/// `(namespace, family)` of each pod named.
fn families(named: &BTreeSet<PodKey>) -> BTreeSet<PodKey> {
    named
        .iter()
        .map(|(ns, name)| (ns.clone(), family(name).to_string()))
        .collect()
}

/// The new index of each part kept.
fn renumber(keep: &[bool]) -> Vec<Option<usize>> {
    let mut next = 0;
    keep.iter()
        .map(|&k| {
            k.then(|| {
                next += 1;
                next - 1
            })
        })
        .collect()
}

/// The parts of the pods named, and of every pod linked to one of them by replacements (in
/// either direction, however many times).
fn linked_to(parts: &[Part], links: &[Replaced], named: &BTreeSet<PodKey>) -> Vec<bool> {
    let mut keep: Vec<bool> = parts
        .iter()
        .map(|p| {
            let (ns, name) = p.pod.split_once('/').unwrap_or(("", &p.pod));
            named.contains(&(ns.to_string(), name.to_string()))
        })
        .collect();
    loop {
        let mut grew = false;
        for l in links {
            if keep[l.from] != keep[l.to] {
                keep[l.from] = true;
                keep[l.to] = true;
                grew = true;
            }
        }
        if !grew {
            return keep;
        }
    }
}

/// The pods `q` names (`namespace`, `name`), and whether the pods linked to them come too
/// (a pod named by itself; not a family or a namespace, which are whole already).
fn chosen(
    seen: &[BTreeMap<PodKey, PodSeen>],
    all: &[Seen<'_>],
    q: &PodQuery,
) -> Result<(BTreeSet<PodKey>, bool), PodError> {
    let known = || {
        let keys: BTreeSet<String> = all.iter().map(|s| key_text(&s.key)).collect();
        keys.into_iter().collect::<Vec<_>>()
    };
    if let Some(ns) = q.namespace.as_deref().filter(|_| q.every_pod()) {
        let pods: BTreeSet<PodKey> = all
            .iter()
            .filter(|s| s.key.0 == ns)
            .map(|s| s.key.clone())
            .collect();
        if pods.is_empty() {
            return Err(PodError::NotFound {
                query: format!("{ns}/*"),
                known: known(),
            });
        }
        check_container(all, &pods, q)?;
        return Ok((pods, false));
    }
    let mut named = BTreeSet::new();
    for pods in seen {
        match super::pod::resolve_in(pods, q) {
            Ok(p) => {
                named.insert((p.namespace, p.name));
            }
            Err(PodError::NotFound { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    let chained = !named.is_empty();
    if !chained {
        let in_ns = |ns: &str| q.namespace.as_deref().is_none_or(|n| n == ns);
        named = all
            .iter()
            .filter(|s| in_ns(&s.key.0) && names_family(&q.pod, &s.key.1))
            .map(|s| s.key.clone())
            .collect();
        check_container(all, &named, q)?;
    }
    let namespaces: BTreeSet<&str> = named.iter().map(|k| k.0.as_str()).collect();
    let names: BTreeSet<&str> = named.iter().map(|k| k.1.as_str()).collect();
    match (namespaces.len(), chained && names.len() > 1) {
        (0, _) => Err(PodError::NotFound {
            query: match &q.namespace {
                Some(ns) => format!("{ns}/{}", q.pod),
                None => q.pod.clone(),
            },
            known: known(),
        }),
        (1, false) => Ok((named, chained)),
        _ => Err(PodError::Ambiguous {
            query: q.pod.clone(),
            candidates: named.iter().map(key_text).collect(),
        }),
    }
}

/// With `--container`: one pod of `pods` at least has it.
fn check_container(
    all: &[Seen<'_>],
    pods: &BTreeSet<PodKey>,
    q: &PodQuery,
) -> Result<(), PodError> {
    let Some(c) = &q.container else { return Ok(()) };
    let theirs = || all.iter().filter(|s| pods.contains(&s.key));
    if pods.is_empty() || theirs().any(|s| s.seen.containers.contains(c)) {
        return Ok(());
    }
    let known: BTreeSet<String> = theirs().flat_map(|s| s.seen.containers.clone()).collect();
    Err(PodError::NoContainer {
        pod: pods.iter().map(key_text).collect::<Vec<_>>().join(", "),
        container: c.clone(),
        known: known.into_iter().collect(),
    })
}

/// The wall time of a step at `ts_ns` on node `n`'s clock.
fn wall(n: NodeEngine<'_>, ts_ns: u64) -> Option<i128> {
    n.engine.clock().epoch_ns(ts_ns)
}

/// Pod `key` on node `n` (whose stories are `all`): its stories (of `container` only, when given) and its times (of
/// every container).
fn part(n: NodeEngine<'_>, all: &[Story], key: &PodKey, container: Option<&str>) -> Part {
    let pod = SelectedPod {
        namespace: key.0.clone(),
        name: key.1.clone(),
        container: None,
    };
    let stories: Vec<Story> = all
        .iter()
        .filter(|s| s.phase != Phase::RuntimeRestart && super::story_in_pod(s, &pod))
        .cloned()
        .collect();
    let first = |s: &Story| s.steps.first().and_then(|st| wall(n, st.ts_ns));
    let last = |s: &Story| s.steps.last().and_then(|st| wall(n, st.ts_ns));
    let births = stories.iter().filter(|s| s.phase.is_birth());
    let born = births
        .clone()
        .filter(|s| s.sandbox)
        .filter_map(first)
        .min()
        .or_else(|| births.filter_map(first).min());
    let (stopping_ns, ended_ns) = end_of(n, &stories);
    let shown = stories
        .iter()
        .filter(|s| container.is_none_or(|c| s.container_name.as_deref() == Some(c)));
    Part {
        node: super::k8s::bounded(n.node, MAX_NODE_NAME),
        pod: key_text(key),
        first_ns: stories.iter().filter_map(first).min(),
        last_ns: stories.iter().filter_map(last).max(),
        born_ns: born,
        stopping_ns,
        ended_ns,
        stories: shown
            .cloned()
            .enumerate()
            .map(|(i, s)| (i + 1, s))
            .collect(),
    }
}

/// When a pod's stop began and when it ended, from its stories on node `n`: each container's
/// (and the sandbox's) last story a death, the end the last of their deaths.
fn end_of(n: NodeEngine<'_>, stories: &[Story]) -> (Option<i128>, Option<i128>) {
    let mut last: BTreeMap<(bool, Option<&str>), &Story> = BTreeMap::new();
    for s in stories.iter().filter(|s| s.phase != Phase::Exec) {
        let at = s.steps.first().map(|st| st.ts_ns);
        let slot = last
            .entry((s.sandbox, s.container_name.as_deref()))
            .or_insert(s);
        if at >= slot.steps.first().map(|st| st.ts_ns) {
            *slot = s;
        }
    }
    if last.is_empty() || last.values().any(|s| s.phase != Phase::Death) {
        return (None, None);
    }
    let died = |s: &Story| {
        let step = s.steps.iter().find(|st| st.kind == StepKind::InitDied);
        step.or(s.steps.last()).and_then(|st| wall(n, st.ts_ns))
    };
    let began = last
        .values()
        .filter_map(|s| s.steps.first().and_then(|st| wall(n, st.ts_ns)))
        .min();
    (began, last.values().filter_map(|s| died(s)).max())
}

/// Within each family (same namespace, owner prefix or name), each pod that ended linked to
/// the first pod born after its stop began that no earlier end claimed.
fn replacements(parts: &[Part]) -> Vec<Replaced> {
    let fam = |p: &Part| {
        let (ns, name) = p.pod.split_once('/').unwrap_or(("", &p.pod));
        (ns.to_string(), family(name).to_string())
    };
    let mut ended: Vec<usize> = (0..parts.len())
        .filter(|&i| parts[i].ended_ns.is_some())
        .collect();
    ended.sort_by_key(|&i| parts[i].ended_ns);
    let mut claimed = BTreeSet::new();
    let mut links = Vec::new();
    for from in ended {
        let (old, stop) = (&parts[from], parts[from].stopping_ns);
        let next = (0..parts.len())
            .filter(|&to| to != from && !claimed.contains(&to) && fam(&parts[to]) == fam(old))
            .filter(|&to| {
                (old.node.as_str(), &old.pod) != (parts[to].node.as_str(), &parts[to].pod)
            })
            .filter_map(|to| Some((parts[to].born_ns?, to)))
            .filter(|&(born, _)| stop.is_some_and(|s| born > s) && old.born_ns < Some(born))
            .min();
        if let (Some((born, to)), Some(end)) = (next, old.ended_ns) {
            claimed.insert(to);
            links.push(Replaced {
                from,
                to,
                gap_ns: born - end,
            });
        }
    }
    links
}

/// `2026-12-04T10:00:00.000000000Z`, or `(no wall clock)`.
fn when(ns: Option<i128>) -> String {
    ns.and_then(crate::clock::rfc3339)
        .unwrap_or_else(|| "(no wall clock)".into())
}

/// `4.0 s after its end`, `350 ms before its end`.
pub fn gap_text(gap_ns: i128) -> String {
    let d = crate::clock::duration_text(u64::try_from(gap_ns.unsigned_abs()).unwrap_or(u64::MAX));
    match gap_ns < 0 {
        true => format!("{d} before its end"),
        false => format!("{d} after its end"),
    }
}

impl Across {
    /// Keeps in each part the story `sel` names (`--story`, within the part; its number
    /// kept); a part with none is left out. `Err` when no part has one (the first part's
    /// error says what it holds).
    pub fn retain_story(&mut self, sel: &str) -> Result<(), super::StoryChoiceError> {
        let mut first_err = None;
        let mut keep = Vec::new();
        for p in &mut self.parts {
            let list: Vec<Story> = p.stories.iter().map(|(_, s)| s.clone()).collect();
            match super::select_story(&list, sel) {
                Ok(i) => {
                    p.stories = vec![p.stories.swap_remove(i)];
                    keep.push(true);
                }
                Err(e) => {
                    first_err.get_or_insert(e);
                    keep.push(false);
                }
            }
        }
        if !keep.contains(&true) {
            if let Some(e) = first_err {
                return Err(e);
            }
        }
        self.keep(&keep);
        Ok(())
    }

    /// Keeps the parts `keep` says, and the links between two of them.
    fn keep(&mut self, keep: &[bool]) {
        let index = renumber(keep);
        let parts = std::mem::take(&mut self.parts);
        self.parts = parts
            .into_iter()
            .zip(keep)
            .filter_map(|(p, k)| k.then_some(p))
            .collect();
        self.replaced
            .retain_mut(|l| match (index[l.from], index[l.to]) {
                (Some(f), Some(t)) => {
                    (l.from, l.to) = (f, t);
                    true
                }
                _ => false,
            });
    }

    /// The text: each part headed by its node and pod (names escaped), its stories as
    /// `tracer story` prints them; before a replacement's part, the line that links it.
    pub fn text(&self, explain: bool) -> String {
        let mut out = String::new();
        let nodes: BTreeSet<&str> = self.parts.iter().map(|p| p.node.as_str()).collect();
        out.push_str(&format!(
            "{} pods on {} nodes, in wall-clock order\n",
            self.parts.len(),
            nodes.len()
        ));
        for (i, p) in self.parts.iter().enumerate() {
            for l in self.replaced.iter().filter(|l| l.to == i) {
                let old = &self.parts[l.from];
                out.push_str(&format!(
                    "\nreplaced: pod {} on node {} ended {}; pod {} on node {} started {}\n",
                    escape(&old.pod),
                    escape(&old.node),
                    when(old.ended_ns),
                    escape(&p.pod),
                    escape(&p.node),
                    gap_text(l.gap_ns)
                ));
            }
            out.push_str(&format!(
                "\nnode {}: pod {} ({} to {})\n",
                escape(&p.node),
                escape(&p.pod),
                when(p.first_ns),
                when(p.last_ns)
            ));
            if p.stories.is_empty() {
                out.push_str("no story of it\n");
            }
            let list: Vec<(usize, &Story)> = p.stories.iter().map(|(n, s)| (*n, s)).collect();
            out.push_str(&super::numbered_story_text(&list, explain));
        }
        out
    }

    /// The JSON: `{"parts": [{"node", "pod", "first", "last", "born", "ended", "stories"}],
    /// "replaced": [{"pod", "node", "ended", "by", "on", "born", "gap_ns", "gap"}]}`; each
    /// story numbered as in its part, with `why` when `explain`.
    pub fn json(&self, explain: bool) -> Value {
        let parts: Vec<Value> = self.parts.iter().map(|p| part_json(p, explain)).collect();
        let replaced: Vec<Value> = self
            .replaced
            .iter()
            .map(|l| {
                let (old, new) = (&self.parts[l.from], &self.parts[l.to]);
                json!({
                    "pod": old.pod, "node": old.node, "ended": old.ended_ns.and_then(crate::clock::rfc3339),
                    "by": new.pod, "on": new.node, "born": new.born_ns.and_then(crate::clock::rfc3339),
                    "gap_ns": i64::try_from(l.gap_ns).unwrap_or(i64::MAX), "gap": gap_text(l.gap_ns),
                })
            })
            .collect();
        json!({ "parts": parts, "replaced": replaced })
    }
}

/// One part's JSON.
fn part_json(p: &Part, explain: bool) -> Value {
    let (numbers, stories): (Vec<usize>, Vec<Story>) = p.stories.iter().cloned().unzip();
    let mut js = super::story_json(&stories);
    if explain {
        super::explain::add_whys(&mut js, &stories);
    }
    if let Some(list) = js["stories"].as_array_mut() {
        for (v, n) in list.iter_mut().zip(&numbers) {
            v["number"] = json!(n);
        }
    }
    let t = |ns: Option<i128>| ns.and_then(crate::clock::rfc3339);
    json!({
        "node": p.node, "pod": p.pod, "first": t(p.first_ns), "last": t(p.last_ns),
        "born": t(p.born_ns), "ended": t(p.ended_ns), "stories": js["stories"],
    })
}
