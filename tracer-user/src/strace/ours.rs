//! The notices `tracer trace` and `replay` print that strace has no line for, read back into
//! the events they were made from: `--- cgroup: 7 moved to "/kubepods/..." ---`, `--- OOM
//! killer: victim 7 total-vm=...kB ... in cgroup "..." (limit N bytes) ---` and `--- bundle of
//! "ID": KEY="VALUE" ... ---` (the runtime's container id and its known annotations).

use super::args::take_cstr;
use crate::event::{EventKind, OomInfo};
use std::collections::BTreeMap;

/// At most this many annotations are read from one bundle line (the capture keeps fewer).
const MAX_ANNOTATIONS: usize = 64;

/// The event of a notice of ours (the text between `--- ` and ` ---`), said by task `tid`;
/// `None` when the text is not one.
pub(crate) fn notice_event(inner: &str, tid: u32) -> Option<EventKind> {
    if let Some(r) = inner.strip_prefix("cgroup: ") {
        return cgroup(r);
    }
    if let Some(r) = inner.strip_prefix("OOM killer: victim ") {
        return oom(r);
    }
    bundle(inner.strip_prefix("bundle of ")?, tid)
}

fn cgroup(r: &str) -> Option<EventKind> {
    let (pid, r) = r.split_once(" moved to ")?;
    let (path, rest) = take_cstr(r)?;
    rest.is_empty().then_some(())?;
    Some(EventKind::CgroupAttach {
        pid: pid.parse().ok()?,
        hierarchy: 0,
        cgroup_id: 0,
        path,
    })
}

/// `7 total-vm=1kB anon-rss=2kB file-rss=3kB shmem-rss=4kB oom_score_adj=0[ in cgroup
/// "..."][ (limit N bytes)]`.
fn oom(r: &str) -> Option<EventKind> {
    let (tid, r) = r.split_once(' ')?;
    let mut it = r.splitn(5, ' ');
    let mut kb = |key: &str| -> Option<u64> {
        it.next()?
            .strip_prefix(key)?
            .strip_suffix("kB")?
            .parse()
            .ok()
    };
    let (total_vm_kb, anon_rss_kb, file_rss_kb, shmem_rss_kb) = (
        kb("total-vm=")?,
        kb("anon-rss=")?,
        kb("file-rss=")?,
        kb("shmem-rss=")?,
    );
    let last = it.next()?.strip_prefix("oom_score_adj=")?;
    let digits = last.find(' ').unwrap_or(last.len());
    let oom_score_adj = last.get(..digits)?.parse().ok()?;
    let mut rest = last.get(digits..)?;
    let mut cgroup = None;
    if let Some(c) = rest.strip_prefix(" in cgroup ") {
        let (path, after) = take_cstr(c)?;
        cgroup = Some(path.value);
        rest = after;
    }
    let limit = match rest.strip_prefix(" (limit ") {
        Some(l) => Some(l.strip_suffix(" bytes)")?.parse().ok()?),
        None if rest.is_empty() => None,
        None => return None,
    };
    Some(EventKind::OomVictim(OomInfo {
        tid: tid.parse().ok()?,
        total_vm_kb,
        anon_rss_kb,
        file_rss_kb,
        shmem_rss_kb,
        oom_score_adj,
        cgroup,
        limit,
    }))
}

/// `"ID": KEY="VALUE" KEY="VALUE"`.
fn bundle(r: &str, tid: u32) -> Option<EventKind> {
    let (id, mut r) = take_cstr(r)?;
    r = r.strip_prefix(':')?.trim_end();
    let mut annotations = BTreeMap::new();
    while let Some(kv) = r.strip_prefix(' ') {
        let (key, value) = kv.split_once('=')?;
        let (value, after) = take_cstr(value)?;
        if annotations.len() < MAX_ANNOTATIONS {
            annotations.insert(super::args::unescape(key), value.value);
        }
        r = after;
    }
    r.is_empty().then_some(())?;
    Some(EventKind::ContainerMeta {
        pid: tid,
        container_id: id.value,
        annotations,
    })
}
