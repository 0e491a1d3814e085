//! The OCI bundle a runtime starts on: when a capture sees `runc create --bundle DIR` (or
//! `runc run`, whose bundle defaults to its working directory) exec, it reads
//! `DIR/config.json`'s Kubernetes annotations and puts them in the stream as a
//! [`EventKind::ContainerMeta`] right after the exec, so recordings keep them and replays never
//! read the bundle again.
//!
//! The path comes from a traced process's argv: the file is opened without following a final
//! symlink, must be a regular file owned by root (runtimes' bundles are) and at most
//! [`MAX_CONFIG_BYTES`]; anything else is skipped, never an error.

use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::event::{Event, EventKind};
use crate::lineage::k8s::{annotations_from_config, MAX_CONFIG_BYTES};
use crate::lineage::{classify, OciCommand, Role};

/// The bundle directory of a runtime invocation, when its argv is `create`/`run`:
/// `--bundle DIR`, `--bundle=DIR`, `-b DIR`, `-b=DIR`, else (for `run`) `None` meaning "its
/// working directory". Returns `(container id, bundle)`.
pub(crate) fn bundle_of(filename: &str, argv: &[String]) -> Option<(String, Option<String>)> {
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

/// Reads the known annotations of `dir/config.json` (relative to `cwd`).
fn read_annotations(
    dir: Option<&str>,
    cwd: &Path,
) -> Option<std::collections::BTreeMap<String, String>> {
    let dir = match dir {
        Some(d) => cwd.join(d),
        None => cwd.to_path_buf(),
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(dir.join("config.json"))
        .ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.uid() != 0 || meta.len() > MAX_CONFIG_BYTES {
        return None;
    }
    let mut bytes = Vec::new();
    file.take(MAX_CONFIG_BYTES + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    annotations_from_config(&bytes).ok()
}

/// Adds a `ContainerMeta` after every runtime exec in `events[start..]` whose bundle names a
/// pod or container. `proc_root` is `/proc` (the runtime's working directory is read there).
pub(crate) fn enrich(events: &mut Vec<Event>, start: usize, proc_root: &Path) {
    if !events[start..]
        .iter()
        .any(|e| matches!(e.kind, EventKind::ExecEnter { .. }))
    {
        return;
    }
    let tail = events.split_off(start);
    for ev in tail {
        let meta = meta_for(&ev, proc_root);
        events.push(ev);
        events.extend(meta);
    }
}

/// Where to read a runtime's bundle `dir` from, best first, as (base directory, path below
/// it). The path is the runtime's: through `/proc/PID/root` and `/proc/PID/cwd` it resolves in
/// the runtime's mount namespace, so an agent in a container of its own reads it without
/// mounting the runtime's state directories (this needs ptrace read access to the runtime:
/// CAP_SYS_PTRACE when the runtime has capabilities the reader lacks). An absolute path is
/// also tried as it is, in case the runtime exited before the read; a relative one needs the
/// runtime's working directory, which is gone with it.
fn runtime_view(proc_root: &Path, pid: u32, dir: Option<&str>) -> Vec<(PathBuf, Option<String>)> {
    let proc_pid = proc_root.join(pid.to_string());
    match dir {
        Some(d) if Path::new(d).is_absolute() => {
            let below = d.trim_start_matches('/').to_string();
            vec![
                (proc_pid.join("root"), Some(below.clone())),
                (PathBuf::from("/"), Some(below)),
            ]
        }
        rel => vec![(proc_pid.join("cwd"), rel.map(str::to_string))],
    }
}

/// The annotations of the bundle `dir` of runtime `pid`, from the first place of
/// [`runtime_view`] that has a readable config.json.
fn runtime_annotations(
    proc_root: &Path,
    pid: u32,
    dir: Option<&str>,
) -> Option<std::collections::BTreeMap<String, String>> {
    runtime_view(proc_root, pid, dir)
        .into_iter()
        .find_map(|(base, rel)| read_annotations(rel.as_deref(), &base))
}

fn meta_for(ev: &Event, proc_root: &Path) -> Option<Event> {
    let EventKind::ExecEnter { filename, argv, .. } = &ev.kind else {
        return None;
    };
    let (container_id, dir) = bundle_of(&filename.value, argv)?;
    let annotations = runtime_annotations(proc_root, ev.tgid, dir.as_deref())?;
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
    fn only_a_root_owned_regular_file_is_read() {
        let dir = std::env::temp_dir().join(format!("tracer-bundle-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("b")).unwrap();
        let cfg = r#"{"annotations":{"io.kubernetes.cri.sandbox-name":"web","io.kubernetes.cri.sandbox-namespace":"shop"}}"#;
        std::fs::write(dir.join("b/config.json"), cfg).unwrap();
        let as_root = unsafe { libc::geteuid() } == 0;
        let got = read_annotations(Some("b"), &dir);
        // Written by this test's user: read only when that is root.
        assert_eq!(got.is_some(), as_root);
        // A symlinked config.json is never followed.
        std::fs::create_dir_all(dir.join("l")).unwrap();
        std::os::unix::fs::symlink(dir.join("b/config.json"), dir.join("l/config.json")).unwrap();
        assert_eq!(read_annotations(Some("l"), &dir), None);
        assert_eq!(read_annotations(Some("missing"), &dir), None);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_absolute_bundle_is_read_in_the_runtimes_mount_namespace() {
        // A fake /proc whose PID/root is another directory: the bundle exists only there, as
        // it does for an agent in a container reading a runtime's bundle on the host.
        let dir = std::env::temp_dir().join(format!("tracer-bundle-ns-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let bundle = format!("/tracer-test-bundle-{}", std::process::id());
        let inside = dir.join("their-root").join(bundle.trim_start_matches('/'));
        std::fs::create_dir_all(&inside).unwrap();
        std::fs::create_dir_all(dir.join("proc/42")).unwrap();
        std::os::unix::fs::symlink(dir.join("their-root"), dir.join("proc/42/root")).unwrap();
        let cfg = r#"{"annotations":{"io.kubernetes.cri.sandbox-name":"web"}}"#;
        std::fs::write(inside.join("config.json"), cfg).unwrap();
        assert!(
            !Path::new(&bundle).exists(),
            "{bundle} must not exist on this root"
        );
        let got = runtime_annotations(&dir.join("proc"), 42, Some(&bundle));
        // Only root-owned bundles are read: written by root, this one is.
        // SAFETY: geteuid has no preconditions.
        let as_root = unsafe { libc::geteuid() } == 0;
        assert_eq!(got.is_some(), as_root, "{got:?}");
        if let Some(a) = got {
            assert_eq!(
                a.get("io.kubernetes.cri.sandbox-name").map(String::as_str),
                Some("web")
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
