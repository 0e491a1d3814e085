//! The enrichment stage of [`SourceLoop`](super::SourceLoop): what only the host knows about
//! events just read, asked of it at once (while it still shows it) and put into the stream,
//! so recordings keep it and readers never ask the host again.
//!
//! - A runtime's `create`/`run` exec (which execs count: [`bundle::bundle_of`]) is followed by
//!   its bundle's metadata, an [`EventKind::ContainerMeta`] ([`bundle::container_meta`] says
//!   what the bytes mean), read while the runtime still runs (a bundle given relative to its
//!   working directory is gone with it).
//! - An OOM victim the probe could not read the memory cgroup of (a kernel before 6.2 hands
//!   it no victim task) gets it and its limit from the host, before the victim is reaped.
//!
//! The stage reads the host through [`Host`], which a live source gives
//! ([`EventSource::host`](super::EventSource::host): the capture's `/proc`); a source with no
//! host (a recording, a script without one) passes its events on as they are.

use crate::event::{Event, EventKind, OomInfo};
use crate::lineage::bundle;

/// What the enrichment stage reads of the host a live source runs on.
pub trait Host {
    /// The bytes of runtime `pid`'s bundle config (`dir/config.json`; `None`: its working
    /// directory; a relative `dir` is its working directory's, which it inherited from its
    /// parent `ppid`) from each place it can be read, best first, as that runtime sees it.
    fn bundle_configs(&self, pid: u32, ppid: u32, dir: Option<&str>) -> Vec<Vec<u8>>;
    /// Fills the memory cgroup of OOM victim `info.tid` and that cgroup's limit, where the
    /// host still shows them (left `None` otherwise).
    fn oom_victim(&self, info: &mut OomInfo);
}

/// Enriches `events[start..]` (a batch just read) from `host`: OOM victims' cgroups filled in
/// place, each runtime exec's bundle metadata inserted right after it.
pub fn enrich(events: &mut Vec<Event>, start: usize, host: Option<&dyn Host>) {
    let Some(host) = host else {
        return;
    };
    for ev in &mut events[start..] {
        if let EventKind::OomVictim(info) = &mut ev.kind {
            if info.cgroup.is_none() {
                host.oom_victim(info);
            }
        }
    }
    if !events[start..]
        .iter()
        .any(|e| matches!(e.kind, EventKind::ExecEnter { .. }))
    {
        return;
    }
    let tail = events.split_off(start);
    for ev in tail {
        let meta = container_meta(&ev, host);
        events.push(ev);
        events.extend(meta);
    }
}

/// The bundle metadata that follows `ev`, when it is a runtime's `create`/`run` whose bundle
/// names a pod or container.
fn container_meta(ev: &Event, host: &dyn Host) -> Option<Event> {
    let EventKind::ExecEnter { filename, argv, .. } = &ev.kind else {
        return None;
    };
    let (container_id, dir) = bundle::bundle_of(&filename.value, argv)?;
    let configs = host.bundle_configs(ev.tgid, ev.ppid, dir.as_deref());
    bundle::container_meta(ev, container_id, &configs)
}
