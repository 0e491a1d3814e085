//! Reading a runtime's bundle config (`config.json`) as the runtime sees it, for the model
//! ([`crate::lineage::bundle`] decides which process is a runtime and what the bytes mean).
//!
//! The path comes from a traced process's argv: the file is opened without following a final
//! symlink, must be a regular file owned by root (runtimes' bundles are) and at most
//! [`MAX_CONFIG_BYTES`]; anything else is skipped, never an error.

use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::event::MAX_CONFIG_BYTES;

/// The bytes of `dir/config.json` (relative to `cwd`).
fn read_config(dir: Option<&str>, cwd: &Path) -> Option<Vec<u8>> {
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
    Some(bytes)
}

/// Where to read a runtime's bundle `dir` from, best first, as (base directory, path below
/// it). The path is the runtime's: through `/proc/PID/root` and `/proc/PID/cwd` it resolves in
/// the runtime's mount namespace, so an agent in a container of its own reads it without
/// mounting the runtime's state directories (this needs ptrace read access to the runtime:
/// CAP_SYS_PTRACE when the runtime has capabilities the reader lacks). An absolute path is
/// also tried as it is, in case the runtime exited before the read.
///
/// A relative one is the runtime's working directory's, as it was at its exec: `cwd/DIR`
/// while the runtime has not moved; its working directory itself once it is there (runc
/// chdirs into its bundle before it reads `config.json`, so by the time the read comes the
/// runtime's `cwd` usually is `…/DIR`); else its parent's `cwd/DIR` (the working directory the
/// runtime inherited at its fork), once the runtime is gone.
fn runtime_view(
    proc_root: &Path,
    pid: u32,
    ppid: u32,
    dir: Option<&str>,
) -> Vec<(PathBuf, Option<String>)> {
    let proc_pid = proc_root.join(pid.to_string());
    match dir {
        Some(d) if Path::new(d).is_absolute() => {
            let below = d.trim_start_matches('/').to_string();
            vec![
                (proc_pid.join("root"), Some(below.clone())),
                (PathBuf::from("/"), Some(below)),
            ]
        }
        rel => {
            let cwd = proc_pid.join("cwd");
            let mut views = vec![(cwd.clone(), rel.map(str::to_string))];
            if let Some(r) = rel {
                if std::fs::read_link(&cwd).is_ok_and(|at| ends_with_dir(&at, r)) {
                    views.push((cwd, None));
                }
                if ppid != 0 {
                    let parent = proc_root.join(ppid.to_string()).join("cwd");
                    views.push((parent, Some(r.to_string())));
                }
            }
            views
        }
    }
}

/// Whether directory `at` is where relative path `rel` leads from one of its ancestors: its
/// last components are `rel`'s (`.` components and trailing slashes aside; a `..` never
/// matches).
fn ends_with_dir(at: &Path, rel: &str) -> bool {
    use std::path::Component;
    let parts: Vec<_> = Path::new(rel).components().collect();
    let plain = parts
        .iter()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    let names: Vec<_> = parts
        .iter()
        .filter(|c| matches!(c, Component::Normal(_)))
        .collect();
    plain && !names.is_empty() && {
        let tail: Vec<_> = at.components().rev().take(names.len()).collect();
        tail.len() == names.len() && tail.iter().rev().zip(names).all(|(a, b)| a == b)
    }
}

/// The config.json of runtime `pid`'s (child of `ppid`) bundle `dir` from every place of
/// [`runtime_view`] that has a readable one, best first (the model takes the first that
/// parses: a file half written in one place does not hide the other).
pub(crate) fn runtime_configs(
    proc_root: &Path,
    pid: u32,
    ppid: u32,
    dir: Option<&str>,
) -> Vec<Vec<u8>> {
    runtime_view(proc_root, pid, ppid, dir)
        .into_iter()
        .filter_map(|(base, rel)| read_config(rel.as_deref(), &base))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_root_owned_regular_file_is_read() {
        let dir = std::env::temp_dir().join(format!("tracer-bundle-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("b")).unwrap();
        let cfg = r#"{"annotations":{"io.kubernetes.cri.sandbox-name":"web","io.kubernetes.cri.sandbox-namespace":"shop"}}"#;
        std::fs::write(dir.join("b/config.json"), cfg).unwrap();
        // SAFETY: geteuid has no preconditions.
        let as_root = unsafe { libc::geteuid() } == 0;
        let got = read_config(Some("b"), &dir);
        // Written by this test's user: read only when that is root.
        assert_eq!(got.is_some(), as_root);
        // A symlinked config.json is never followed.
        std::fs::create_dir_all(dir.join("l")).unwrap();
        std::os::unix::fs::symlink(dir.join("b/config.json"), dir.join("l/config.json")).unwrap();
        assert_eq!(read_config(Some("l"), &dir), None);
        assert_eq!(read_config(Some("missing"), &dir), None);
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
        let got = runtime_configs(&dir.join("proc"), 42, 0, Some(&bundle))
            .into_iter()
            .next();
        // Only root-owned bundles are read: written by root, this one is.
        // SAFETY: geteuid has no preconditions.
        let as_root = unsafe { libc::geteuid() } == 0;
        assert_eq!(got.is_some(), as_root, "{got:?}");
        if let Some(bytes) = got {
            assert_eq!(bytes, cfg.as_bytes());
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// `runc run --bundle eb` from /x: read as /x/eb before runc moves, as its working
    /// directory once it is in eb, as its parent's /x/eb once it is gone; a `..` or another
    /// directory of the same depth is never taken for it.
    #[test]
    fn a_relative_bundle_is_the_runtimes_working_directorys() {
        let root = std::env::temp_dir().join(format!("tracer-relbundle-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let (x, proc_root) = (root.join("x"), root.join("proc"));
        std::fs::create_dir_all(x.join("eb")).unwrap();
        for pid in ["42", "7"] {
            std::fs::create_dir_all(proc_root.join(pid)).unwrap();
        }
        let views = |cwd: Option<&Path>, parent: Option<&Path>| {
            for (pid, to) in [("42", cwd), ("7", parent)] {
                let link = proc_root.join(pid).join("cwd");
                let _ = std::fs::remove_file(&link);
                if let Some(to) = to {
                    std::os::unix::fs::symlink(to, &link).unwrap();
                }
            }
            runtime_view(&proc_root, 42, 7, Some("eb"))
        };
        let cwd42 = proc_root.join("42/cwd");
        let cwd7 = proc_root.join("7/cwd");
        let eb = Some("eb".to_string());
        assert_eq!(
            views(Some(&x), Some(&x)),
            [(cwd42.clone(), eb.clone()), (cwd7.clone(), eb.clone())]
        );
        let moved = views(Some(&x.join("eb")), None);
        assert_eq!(
            moved,
            [
                (cwd42.clone(), eb.clone()),
                (cwd42.clone(), None),
                (cwd7.clone(), eb.clone())
            ]
        );
        assert!(!views(Some(&root.join("ebx")), None).contains(&(cwd42.clone(), None)));
        assert!(ends_with_dir(Path::new("/a/b/eb"), "./b/eb/"));
        assert!(!ends_with_dir(Path::new("/a/eb"), "../eb"));
        assert!(!ends_with_dir(Path::new("/a/eb"), "."));
        // The config is read through each in turn: here, only the parent's view has one.
        std::fs::write(x.join("eb/config.json"), "{}").unwrap();
        let _ = views(Some(&root), Some(&x));
        let got = runtime_configs(&proc_root, 42, 7, Some("eb"));
        // SAFETY: geteuid has no preconditions.
        let as_root = unsafe { libc::geteuid() } == 0;
        assert_eq!(
            got,
            if as_root {
                vec![b"{}".to_vec()]
            } else {
                vec![]
            }
        );
        let _ = std::fs::remove_dir_all(&root);
    }
}
