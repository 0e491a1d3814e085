//! Which execs start a container from an OCI bundle, and what its config says: a runtime's
//! `create --bundle DIR` (or `run`, whose bundle defaults to its working directory) is one
//! ([`bundle_of`]); the Kubernetes annotations of `DIR/config.json`'s bytes make the
//! [`EventKind::ContainerMeta`] that follows it in the stream ([`container_meta`]), so
//! recordings keep them and replays never read the bundle again. The live loop's enrichment
//! stage (`source::enrich`) reads the bytes as the runtime sees them and puts the metadata
//! in; this decides which process is a runtime and what the bytes mean.

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

/// The `ContainerMeta` that follows runtime exec `ev` of container `container_id` (both from
/// [`bundle_of`]), from its bundle config's bytes as read from each place it can be, best
/// first: the first that parses is used (a copy half written in one place does not hide
/// another). `None` when none parses or the config names no pod or container.
pub fn container_meta(ev: &Event, container_id: String, configs: &[Vec<u8>]) -> Option<Event> {
    let annotations = configs
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
}
