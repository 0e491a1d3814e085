//! The enrichment stage ([`super::enrich`]), alone and as a stage of the loop over a source
//! that gives a host: a sibling of both, so neither imports the other's test.

use super::enrich::{enrich, Host};
use crate::event::{Event, EventKind, OomInfo};
use crate::synth;
use std::sync::{Arc, Mutex};

const CONFIG: &[u8] = br#"{"annotations":{"io.kubernetes.cri.sandbox-name":"web"}}"#;

/// Which runtime's bundle a host was asked for: its pid and bundle directory.
type Asked = Vec<(u32, Option<String>)>;

/// A host with runtime bundles (a half-written copy first, then a whole one) and OOM
/// victim 1001's cgroup; it notes which bundles it was asked for.
#[derive(Clone, Default)]
struct FakeHost {
    asked: Arc<Mutex<Asked>>,
}

impl Host for FakeHost {
    fn bundle_configs(&self, pid: u32, _ppid: u32, dir: Option<&str>) -> Vec<Vec<u8>> {
        let mut asked = self.asked.lock().unwrap();
        asked.push((pid, dir.map(str::to_string)));
        vec![b"{\"annotations\":".to_vec(), CONFIG.to_vec()]
    }
    fn oom_victim(&self, info: &mut OomInfo) {
        if info.tid == 1001 {
            info.cgroup = Some("/jail".into());
            info.limit = Some(32 << 20);
        }
    }
}

/// The kit's OOM victim (tid 1001), its cgroup as the probe read it.
fn victim(cgroup: Option<&str>) -> Event {
    let mut ev = synth::every_kind()
        .into_iter()
        .find(|e| matches!(e.kind, EventKind::OomVictim(_)))
        .expect("the kit has an OOM victim");
    if let EventKind::OomVictim(info) = &mut ev.kind {
        info.cgroup = cgroup.map(str::to_string);
        info.limit = None;
    }
    ev
}

/// runc 7 creates container id1 from bundle /b/x; runc 8 starts it; two OOM victims, the
/// first unknown to the probe, the second read by it.
fn batch() -> Vec<Event> {
    let runc = "/usr/sbin/runc";
    let create = synth::exec_argv(7, runc, &["runc", "create", "--bundle", "/b/x", "id1"]);
    let start = synth::exec_argv(8, runc, &["runc", "start", "id1"]);
    let mut evs: Vec<Event> = create.into_iter().chain(start).collect();
    evs.extend([victim(None), victim(Some("/probe/read"))]);
    evs
}

/// `evs[i]`'s OOM victim's cgroup and limit.
fn oom(evs: &[Event], i: usize) -> (Option<String>, Option<u64>) {
    match &evs[i].kind {
        EventKind::OomVictim(info) => (info.cgroup.clone(), info.limit),
        other => panic!("{other:?}"),
    }
}

/// `evs[i]`'s container metadata: its pid, container id and pod name.
fn meta(evs: &[Event], i: usize) -> (u32, String, Option<String>) {
    match &evs[i].kind {
        EventKind::ContainerMeta {
            pid,
            container_id,
            annotations,
        } => (
            *pid,
            container_id.clone(),
            annotations.get("io.kubernetes.cri.sandbox-name").cloned(),
        ),
        other => panic!("{other:?}"),
    }
}

/// The metadata and OOM facts of [`batch`] after the stage: the create's metadata right
/// after it, the unknown victim filled, the known one as the probe read it.
fn check_enriched(evs: &[Event]) {
    assert_eq!(evs.len(), 7, "{evs:#?}");
    assert_eq!(meta(evs, 1), (7, "id1".into(), Some("web".into())));
    assert_eq!(
        evs[1].seq, evs[0].seq,
        "the metadata takes its exec's place"
    );
    assert_eq!(oom(evs, 5), (Some("/jail".into()), Some(32 << 20)));
    assert_eq!(oom(evs, 6), (Some("/probe/read".into()), None));
}

#[test]
fn a_runtime_create_gets_its_bundles_metadata_and_a_victim_its_cgroup() {
    let host = FakeHost::default();
    let mut evs = batch();
    enrich(&mut evs, 0, Some(&host));
    check_enriched(&evs);
    // Only the create was asked about (start names no bundle), where runc sees it.
    let asked = host.asked.lock().unwrap().clone();
    assert_eq!(asked, [(7, Some("/b/x".to_string()))]);
}

#[test]
fn only_the_new_events_are_enriched_and_never_without_a_host() {
    let host = FakeHost::default();
    // The create was enriched with an earlier batch: not asked again.
    let mut evs = batch();
    enrich(&mut evs, 2, Some(&host));
    assert_eq!(evs.len(), 6);
    assert!(host.asked.lock().unwrap().is_empty());
    assert_eq!(oom(&evs, 4), (Some("/jail".into()), Some(32 << 20)));
    // A source with no host (a recording) passes its events on as they are.
    let mut evs = batch();
    enrich(&mut evs, 0, None);
    assert_eq!(evs, batch());
}

/// The stage is the loop's: a scripted source's host is read as the capture's is.
#[cfg(any(feature = "capture", feature = "tui", feature = "agent"))]
#[tokio::test]
async fn the_loop_enriches_through_its_sources_host() {
    use crate::source::{CaptureItem, Script, Scripted, SourceLoop};
    // The script's batch is read at once; its items wait in the loop's queue.
    let read = |script: Script| async move {
        let mut lp = SourceLoop::new(script);
        let first = lp.next().await.expect("an item").unwrap();
        let items: Vec<CaptureItem> = std::iter::once(first)
            .chain(std::iter::from_fn(|| lp.ready()))
            .collect();
        items
            .into_iter()
            .map(|item| match item {
                CaptureItem::Event(ev) => ev,
                CaptureItem::Notice(n) => panic!("{n}"),
            })
            .collect::<Vec<_>>()
    };
    let with_host = Script::new(None, Vec::new())
        .host(FakeHost::default())
        .then(Scripted::Events(batch()));
    check_enriched(&read(with_host).await);
    let without = Script::new(None, Vec::new()).then(Scripted::Events(batch()));
    let evs = read(without).await;
    assert_eq!(evs.len(), 6);
    assert_eq!(oom(&evs, 4), (None, None));
}
