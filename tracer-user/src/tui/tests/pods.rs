//! Pods: the pod view, a view scoped to a pod or a container, live and replayed; `w` writes the
//! live window.

use super::*;
use crate::synth::{PodAnnotations, Stream};

/// A shim (pid 100) running two `runc create`s of one pod, each followed by the metadata its
/// bundle gave: the sandbox `sb1` and the container `c1` (`nginx`), both of pod shop/web-7d9f.
fn pod_events() -> Vec<Event> {
    let mut b = Stream::default();
    let pod = PodAnnotations::new("shop", "web-7d9f").uid("u-42");
    shim_creates(&mut b, (110, 111), "sb1", pod.sandbox(), "/pause");
    shim_creates(&mut b, (120, 121), "c1", pod.container("nginx"), "/nginx");
    // Metadata takes no seq of its own: it repeats the exec's.
    let mut seq = 0;
    for ev in b.events.iter_mut() {
        if !ev.kind.is_metadata() {
            seq += 1;
        }
        ev.seq = seq;
    }
    b.events
}

/// The shim (100) forks `runc` to create container `cid` with `pod`'s annotations; runc's
/// `init` execs `workload`.
fn shim_creates(
    b: &mut Stream,
    (runc, init): (u32, u32),
    cid: &str,
    pod: PodAnnotations,
    workload: &str,
) {
    use crate::event::{CapturedStr, CloneFlags, Syscall};
    let fork = |child| EventKind::Fork {
        child_tid: child,
        child_tgid: child,
        child_ppid: 0,
        syscall: Some(Syscall::Clone),
        flags: Some(CloneFlags(0)),
        child_ns: None,
    };
    let exec = |pid, path| EventKind::Exec {
        cred: None,
        old_tid: pid,
        filename: CapturedStr::new(path),
    };
    b.push(100, 100, "containerd-shim", fork(runc));
    let argv = ["runc", "create", "--bundle", "/b", cid];
    let enter = EventKind::ExecEnter {
        syscall: Syscall::Execve,
        dirfd: -100,
        at_flags: 0,
        filename: CapturedStr::new("/usr/sbin/runc"),
        argv: argv.iter().map(|s| s.to_string()).collect(),
        argv_truncated: false,
    };
    b.push(runc, runc, "containerd-shim", enter);
    b.push(runc, runc, "runc", exec(runc, "/usr/sbin/runc"));
    b.push(runc, runc, "runc", pod.meta(runc, cid));
    b.push(runc, runc, "runc", fork(init));
    b.push(init, init, &workload[1..], exec(init, workload));
}

#[test]
fn pod_view_groups_pods_containers_and_processes() {
    let mut evs = pod_events();
    // The sandbox's runc exits, as runc create does once its init waits.
    let seq = evs.last().map_or(0, |e| e.seq) + 1;
    let exit = crate::event::EventKind::TaskExit {
        exit_code: 0,
        group_dead: true,
    };
    evs.push(Event::bare(seq, seq * 1000, 110, 110, "runc", exit));
    let mut s = replay_state("pods", &evs, evs.len(), (100, 24));
    let tree = screen(&mut s);
    assert!(tree.contains("<pod shop/web-7d9f · nginx>"), "{tree}");
    keys(&mut s, &[key('p')]);
    let text = screen(&mut s);
    let rows: Vec<&str> = text
        .lines()
        .map(|l| l.trim_matches('"').trim_end())
        .collect();
    let pos = |needle: &str| {
        rows.iter()
            .position(|r| r.contains(needle))
            .unwrap_or_else(|| panic!("no {needle:?} in\n{text}"))
    };
    // pod → sandbox (runc 110, init 111) → container nginx (runc 120, init 121).
    let order = [
        pos("pod shop/web-7d9f (uid u-42)"),
        pos("sandbox {cid:sb1}"),
        pos("110 runc"),
        pos("111 pause"),
        pos("container nginx {cid:c1}"),
        pos("120 runc"),
        pos("121 nginx"),
    ];
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}\n{text}");
    assert!(
        !text.contains("100 containerd-shim"),
        "outside the pod: {text}"
    );
    // The lineage keeps its shape: the init under the runc that cloned it.
    let indent = |i: usize| rows[i].find(|c: char| c.is_ascii_digit()).unwrap_or(0);
    assert!(indent(pos("121 nginx")) > indent(pos("120 runc")), "{text}");
    // The pod is named once in the tree, on its row; the exit status shows.
    let tree = &rows[..pos(" process ")];
    let named = tree.iter().filter(|r| r.contains("web-7d9f")).count();
    assert_eq!(named, 1, "{text}");
    assert!(rows[pos("110 runc")].contains("(exit 0)"), "{text}");
    insta::assert_snapshot!("pods_100x24", text);
    keys(&mut s, &[key('p')]);
    assert!(screen(&mut s).contains("100 containerd-shim"));
}

/// The values of the `snapshot` key in the header of the trace file at `path`, as read back.
fn snapshot_key(path: &std::path::Path) -> Vec<String> {
    let input = crate::Input::open(path).expect("readable");
    let header = input.header().expect("a trace file's header");
    header
        .extra
        .iter()
        .filter(|(k, _)| k == "snapshot")
        .map(|(_, v)| v.clone())
        .collect()
}

#[test]
fn w_writes_the_live_window_to_a_new_private_trace_file() {
    use std::os::unix::fs::PermissionsExt;
    let evs = fixture("runc");
    let mut s = AppState::new_live("pid 15126");
    s.ingest(Msg::Events(evs.clone()));
    reduce(&mut s, Action::SaveWindow);
    assert!(s.capture.save_requested);
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("w.trace");
    let n = crate::tui::save::write_window(&s, &path).expect("written");
    assert_eq!(n as usize, evs.len());
    let mode = std::fs::metadata(&path).expect("file").permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    // The file reads back into the same tree as the events themselves.
    let mut input = crate::Input::open(&path).expect("readable");
    let mut back = crate::Engine::new();
    back.seed_snapshot(&input.snapshot());
    while let Some(ev) = input.next_event() {
        back.apply(&ev.expect("event"));
    }
    let mut truth = crate::Engine::new();
    evs.iter().for_each(|ev| truth.apply(ev));
    let text = |e: &crate::Engine| crate::lineage::tree_text(e, Default::default());
    assert_eq!(text(&back), text(&truth));
    assert_eq!(snapshot_key(&path), ["followed"]);
    // Never over an existing file.
    assert!(crate::tui::save::write_window(&s, &path).is_err());
    // A view of every process (`--all`) was seeded from the whole host: the header says so.
    s.capture.seed_scope = crate::tracefile::SnapshotScope::All;
    let all = dir.path().join("all.trace");
    crate::tui::save::write_window(&s, &all).expect("written");
    assert_eq!(snapshot_key(&all), ["all"]);
    // Recording already: nothing to save.
    s.capture.save_requested = false;
    s.status.recording = Some("r.trace".into());
    reduce(&mut s, Action::SaveWindow);
    assert!(!s.capture.save_requested);
}

#[tokio::test]
async fn a_followed_replay_plays_what_is_published_after_it_opened() {
    use crate::input::TailItem;
    let evs = fixture("runc");
    let (head, rest) = evs.split_at(evs.len() / 3);
    let (tx, mut rx) = tokio::sync::mpsc::channel(8);
    let (_ctl, ctl_rx) = tokio::sync::mpsc::channel(8);
    let (tail, tail_rx) = tokio::sync::mpsc::channel(evs.len() + 2);
    let opts = ReplayOpts {
        at_end: true,
        speed: 4096.0,
        ..ReplayOpts::default()
    };
    let task = tokio::spawn(replay(
        head.iter().cloned().collect(),
        Vec::new(),
        opts,
        None,
        tx,
        ctl_rx,
        Some(tail_rx),
    ));
    let mut s = AppState::new_replay("nats://x/n1");
    while s.position() < head.len() {
        s.ingest(recv_events(&mut rx).await);
    }
    assert_eq!(s.playback.total, head.len());
    tail.send(TailItem::CaughtUp).await.unwrap();
    for ev in rest {
        tail.send(TailItem::Event(ev.clone())).await.unwrap();
    }
    // Waiting at the end, the new events play by themselves and the stories grow with them.
    while s.position() < evs.len() {
        s.ingest(recv_events(&mut rx).await);
    }
    assert_eq!(s.playback.total, evs.len());
    assert_eq!(s.playback.full_stories, stories_of(&evs));
    assert_ne!(
        s.playback.full_stories,
        stories_of(head),
        "the stories grew"
    );
    drop(tail);
    let end = recv_events(&mut rx).await;
    assert!(
        matches!(&end, Msg::Note(n) if n.contains("ended")),
        "{end:?}"
    );
    drop(rx);
    task.abort();
}

/// The processes the tree pane has a row for.
fn shown_processes(s: &AppState) -> std::collections::HashSet<crate::lineage::ProcId> {
    s.tree
        .rows
        .iter()
        .filter_map(|r| match r.kind {
            RowKind::Proc(id) => Some(id),
            _ => None,
        })
        .collect()
}

/// The story pane lists stories, all of container `name` (as the stories name it).
fn only_stories_of(s: &AppState, name: &str) {
    assert!(!s.story.stories.is_empty());
    assert!(s
        .story
        .stories
        .iter()
        .all(|st| st.container_name.as_deref() == Some(name)));
}

#[test]
fn a_view_scoped_to_a_pod_shows_its_processes_and_stories_only() {
    let mut input = crate::demo::open().unwrap();
    let seed = input.snapshot();
    let evs: Vec<Event> = input.by_ref().collect::<Result<_, _>>().unwrap();
    let mut s = AppState::new_replay("pod.trace");
    s.pod = Some(crate::lineage::PodScope::Typed(crate::lineage::PodQuery {
        pod: "shared".into(),
        ..Default::default()
    }));
    s.seed(&seed);
    let mut e = Engine::new();
    e.seed_snapshot(&seed);
    evs.iter().for_each(|ev| e.apply(ev));
    s.ingest(Msg::Init {
        total: evs.len(),
        stories: crate::lineage::stories(&e),
    });
    s.ingest(Msg::Events(evs.clone()));
    s.refresh();
    let scope = crate::lineage::pod_scope(&e, "shared");
    let shown = shown_processes(&s);
    assert!(!shown.is_empty());
    assert!(shown.iter().all(|id| scope.contains(id)));
    let in_pod: Vec<_> = e
        .processes()
        .filter(|p| crate::lineage::in_pod(p, "shared"))
        .collect();
    assert!(!in_pod.is_empty());
    assert!(
        in_pod.iter().all(|p| shown.contains(&p.id)),
        "every pod process shown"
    );
    assert!(!s.playback.full_stories.is_empty());
    assert!(s
        .playback
        .full_stories
        .iter()
        .all(|st| crate::lineage::story_in_pod(st, "shared")));
}

#[test]
fn a_guided_view_scoped_to_a_container_opens_at_its_first_step() {
    let mut input = crate::demo::Demo::Pod.open().expect("demo");
    let seed = input.snapshot();
    let events: crate::tracefile::PackedEvents =
        input.by_ref().collect::<Result<_, _>>().expect("events");
    let mut e = Engine::seeded(&seed);
    events.iter().for_each(|ev| e.apply(&ev));
    let q = crate::lineage::PodQuery {
        pod: "web".into(),
        namespace: None,
        container: Some("sidecar".into()),
    };
    let scope = crate::lineage::PodScope::Found(crate::lineage::resolve_pod(&e, &q).unwrap());
    // The truth from the stories' own container names, not the matcher.
    let first = crate::lineage::stories(&e)
        .iter()
        .filter(|st| st.container_name.as_deref() == Some("sidecar"))
        .flat_map(|st| st.steps.iter().map(|step| step.seq))
        .min()
        .expect("sidecar steps");
    let all_first = crate::lineage::stories(&e)
        .iter()
        .flat_map(|st| st.steps.iter().map(|step| step.seq))
        .min();
    assert!(
        all_first < Some(first),
        "the demo's first step is another's"
    );
    let opts = guided();
    let mut s = crate::tui::replay_state("demo".into(), Some(scope.clone()), &seed, &opts);
    for m in crate::tui::source::opening(events, &seed, &opts, Some(&scope)) {
        s.ingest(m);
    }
    s.refresh();
    assert_eq!(s.last_seq(), Some(first));
    only_stories_of(&s, "sidecar");
}

#[test]
fn a_live_view_waiting_for_a_container_shows_it_once_it_appears() {
    use crate::lineage::Process;
    let mut input = crate::demo::Demo::Pod.open().expect("demo");
    let seed = input.snapshot();
    let evs: Vec<Event> = input.by_ref().collect::<Result<_, _>>().expect("events");
    let mut s = AppState::new_live("all");
    s.pod = Some(crate::lineage::PodScope::Typed(crate::lineage::PodQuery {
        pod: "tracer-lab/web".into(),
        namespace: None,
        container: Some("sidecar".into()),
    }));
    s.seed(&seed);
    let container = |p: &Process| p.k8s.as_ref().and_then(|k| k.container_name.clone());
    // Until a process of the container is known, nothing: the pod's sandbox is not it.
    let first = evs
        .iter()
        .position(|ev| {
            matches!(&ev.kind, EventKind::ContainerMeta { .. }) && {
                let mut e = Engine::seeded(&seed);
                evs.iter()
                    .take_while(|x| x.seq <= ev.seq)
                    .for_each(|x| e.apply(x));
                let found = e
                    .processes()
                    .any(|p| container(p).as_deref() == Some("sidecar"));
                found
            }
        })
        .expect("the sidecar's bundle");
    s.ingest(Msg::Events(evs[..first].to_vec()));
    s.refresh();
    assert!(shown_processes(&s).is_empty());
    s.ingest(Msg::Events(evs[first..].to_vec()));
    s.refresh();
    let rows = shown_processes(&s);
    let of = |name: &str| -> Vec<crate::lineage::ProcId> {
        s.engine
            .processes()
            .filter(|p| container(p).as_deref() == Some(name))
            .map(|p| p.id)
            .collect()
    };
    assert!(!of("sidecar").is_empty() && !of("master").is_empty());
    assert!(of("sidecar").iter().all(|id| rows.contains(id)), "{rows:?}");
    assert!(!of("master").iter().any(|id| rows.contains(id)), "{rows:?}");
    only_stories_of(&s, "sidecar");
}

use crate::tui::fake::Kept;

/// containerd (pid 100) starting a shim that runs a container's sleep, three events lost on
/// the way, then everything exiting.
fn shim_script() -> crate::source::Script {
    use crate::source::{Script, Scripted};
    use crate::synth::{exec, exit, fork, process};
    let host = vec![process(1, 0, "init"), process(100, 1, "containerd")];
    Script::new(Some(100), host)
        .then(Scripted::Events(vec![
            fork(100, 101),
            exec(101, "/usr/bin/containerd-shim-runc-v2"),
        ]))
        .then(Scripted::Drop(3))
        .then(Scripted::Events(vec![
            fork(101, 102),
            exec(102, "/bin/sleep"),
        ]))
        .then(Scripted::Wait(std::time::Duration::from_millis(300)))
        .then(Scripted::Events(vec![
            exit(102, 0),
            exit(101, 0),
            exit(100, 0),
        ]))
}

#[tokio::test]
async fn the_live_view_of_a_synthetic_source_shows_births_drops_and_the_end_of_its_target() {
    let kept = Kept::default();
    // A one-message channel and an app that reads late: the source coalesces, never waits.
    let (tx, mut rx) = tokio::sync::mpsc::channel(1);
    let task = tokio::spawn(crate::tui::source::live(
        shim_script(),
        tx,
        Some(Box::new(kept.clone())),
    ));
    let mut s = AppState::new_live("pid 100");
    s.view.size = (100, 30);
    tokio::time::sleep(std::time::Duration::from_millis(150)).await;
    let mut seen_before_exit = None;
    while let Some(m) = tokio::time::timeout(std::time::Duration::from_secs(10), rx.recv())
        .await
        .expect("the live source never ended")
    {
        if matches!(m, Msg::TargetExited) {
            seen_before_exit = Some(s.stats.events);
        }
        s.ingest(m);
    }
    task.await.unwrap();
    // The seed (containerd and its ancestor) and all seven events, then the target's end.
    assert_eq!(seen_before_exit, Some(7), "the end came before the events");
    assert!(s.status.target_exited);
    assert_eq!(s.status.drops, 3);
    assert_eq!(s.stats.gaps(), 3);
    let text = screen(&mut s);
    for shown in ["containerd", "containerd-shim", "sleep", "drops 3"] {
        assert!(text.contains(shown), "{shown} missing:\n{text}");
    }
    // The recorder got every event and the final drop count.
    let (recorded, drops) = kept.0.lock().unwrap().clone();
    assert_eq!(
        recorded.iter().map(|e| e.seq).collect::<Vec<_>>(),
        [1, 2, 6, 7, 8, 9, 10]
    );
    assert_eq!(drops, Some(3));
}

#[tokio::test]
async fn the_live_source_stops_when_the_viewer_quits() {
    use crate::source::{Script, Scripted};
    use crate::synth::{fork, process};
    // A target that never ends: only the viewer's quit (the receiver dropped) stops it.
    let script = Script::new(Some(100), vec![process(100, 1, "containerd")])
        .then(Scripted::Events(vec![fork(100, 101)]));
    let kept = Kept::default();
    let (tx, mut rx) = tokio::sync::mpsc::channel(4);
    let task = tokio::spawn(crate::tui::source::live(
        script,
        tx,
        Some(Box::new(kept.clone())),
    ));
    assert!(matches!(rx.recv().await, Some(Msg::Seed(_))));
    drop(rx);
    tokio::time::timeout(std::time::Duration::from_secs(5), task)
        .await
        .expect("the source outlived the viewer")
        .unwrap();
    assert_eq!(
        kept.0.lock().unwrap().1,
        Some(0),
        "the recording was not finished"
    );
}
