//! Which execs start a container from an OCI bundle, and what its config says: when a
//! runtime's `create --bundle DIR` (or `run`, whose bundle defaults to its working directory)
//! exec is read, the live source is asked for `DIR/config.json`'s bytes as the runtime sees
//! them ([`crate::source::EventSource::bundle_configs`]); its Kubernetes annotations go into the
//! stream as an [`EventKind::ContainerMeta`] right after the exec, so recordings keep them and
//! replays never read the bundle again. The source only reads bytes; this decides which
//! process is a runtime and what the bytes mean.

use crate::event::{Event, EventKind};

use super::k8s::annotations_from_config;
use super::roles::{classify, OciCommand, Role};

/// The bundle directory of a runtime invocation, when its argv is `create`/`run`:
/// `--bundle DIR`, `--bundle=DIR`, `-b DIR`, `-b=DIR`, else (for `run`) `None` meaning "its
/// working directory". Returns `(container id, bundle)`.
pub fn bundle_of(filename: &str, argv: &[String]) -> Option<(String, Option<String>)> {
    let c = classify(b"", Some(filename), argv)?;
    let Role::OciRuntime {
        subcommand: Some(OciCommand::Create | OciCommand::Run),
    } = c.role
    else {
        return None;
    };
    let mut dir = None;
    let mut it = argv.iter();
    while let Some(a) = it.next() {
        if let Some(v) = a
            .strip_prefix("--bundle=")
            .or_else(|| a.strip_prefix("-b="))
        {
            dir = Some(v.to_string());
        } else if a == "--bundle" || a == "-b" {
            dir = it.next().cloned();
        }
    }
    Some((c.container_id?, dir))
}

/// Adds a `ContainerMeta` after every runtime exec in `events[start..]` whose bundle names a
/// pod or container; `configs(pid, dir)` reads that runtime's `dir/config.json` (`None`: its
/// working directory) from each place it can, best first: the first that parses is used.
pub fn enrich(
    events: &mut Vec<Event>,
    start: usize,
    mut configs: impl FnMut(u32, Option<&str>) -> Vec<Vec<u8>>,
) {
    if !events[start..]
        .iter()
        .any(|e| matches!(e.kind, EventKind::ExecEnter { .. }))
    {
        return;
    }
    let tail = events.split_off(start);
    for ev in tail {
        let meta = meta_for(&ev, &mut configs);
        events.push(ev);
        events.extend(meta);
    }
}

fn meta_for(
    ev: &Event,
    configs: &mut impl FnMut(u32, Option<&str>) -> Vec<Vec<u8>>,
) -> Option<Event> {
    let EventKind::ExecEnter { filename, argv, .. } = &ev.kind else {
        return None;
    };
    let (container_id, dir) = bundle_of(&filename.value, argv)?;
    let annotations = configs(ev.tgid, dir.as_deref())
        .iter()
        .find_map(|bytes| annotations_from_config(bytes).ok())?;
    if annotations.is_empty() {
        return None;
    }
    Some(Event {
        kind: EventKind::ContainerMeta {
            pid: ev.tgid,
            container_id,
            annotations,
        },
        ..ev.clone()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn bundle_flags_in_every_form() {
        let cases = [
            ("runc create --bundle /b/x id1", Some("/b/x")),
            (
                "runc --root /r --log /l create --bundle=/b/y --pid-file p id1",
                Some("/b/y"),
            ),
            ("runc run -b rel id1", Some("rel")),
            ("runc run id1", None),
        ];
        for (a, want) in cases {
            let (id, dir) = bundle_of("/usr/sbin/runc", &argv(a)).expect(a);
            assert_eq!((id.as_str(), dir.as_deref()), ("id1", want), "{a}");
        }
        assert_eq!(bundle_of("/usr/sbin/runc", &argv("runc start id1")), None);
        assert_eq!(bundle_of("/bin/sh", &argv("sh -c x")), None);
    }

    #[test]
    fn a_runtime_create_is_followed_by_its_bundles_annotations() {
        use crate::event::CapturedStr;
        let exec = |pid: u32, line: &str| {
            let kind = EventKind::ExecEnter {
                syscall: crate::event::Syscall::Execve,
                dirfd: -100,
                at_flags: 0,
                filename: CapturedStr::new("/usr/sbin/runc"),
                argv: argv(line),
                argv_truncated: false,
            };
            Event::bare(1, 1, pid, pid, "runc", kind)
        };
        let mut evs = vec![
            exec(7, "runc create --bundle /b/x id1"),
            exec(8, "runc start id1"),
        ];
        let cfg = br#"{"annotations":{"io.kubernetes.cri.sandbox-name":"web"}}"#;
        let mut asked = Vec::new();
        enrich(&mut evs, 0, |pid, dir| {
            asked.push((pid, dir.map(str::to_string)));
            // A half-written copy first: the next place's is used.
            vec![b"{\"annotations\":".to_vec(), cfg.to_vec()]
        });
        // Only the create was asked about, and its metadata follows it.
        assert_eq!(asked, [(7, Some("/b/x".to_string()))]);
        assert_eq!(evs.len(), 3);
        let EventKind::ContainerMeta {
            pid,
            container_id,
            annotations,
        } = &evs[1].kind
        else {
            panic!("{:?}", evs[1].kind);
        };
        assert_eq!((*pid, container_id.as_str()), (7, "id1"));
        assert_eq!(
            annotations
                .get("io.kubernetes.cri.sandbox-name")
                .map(String::as_str),
            Some("web")
        );
    }
}
