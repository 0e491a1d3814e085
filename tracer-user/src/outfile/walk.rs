//! The one walk from a path to the directory its final name is in: no symbolic link in any
//! component, and no directory on the way that another user could change (see the module
//! documentation of [`crate::outfile`]). Everything after the walk is done relative to the
//! directory descriptor it returns, never by the path again.

use super::Refused;
use rustix::fs::{self as rfs, FileType, Mode, OFlags, ResolveFlags, Stat};
use rustix::io::Errno;
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Component, Path};
use std::sync::atomic::{AtomicBool, Ordering};

/// The directory an output's final name is in, opened safely, and that name.
#[derive(Debug)]
pub(super) struct Parent {
    /// `O_PATH` descriptor of the directory.
    pub dir: OwnedFd,
    /// The final component (never `.`, `..` or empty).
    pub name: OsString,
}

/// This process's effective uid: the owner whose files and directories are "ours".
pub(super) fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

/// Whether openat2(2) is missing (Linux before 5.6, or filtered away as ENOSYS): then each
/// component is opened with `O_NOFOLLOW` instead, which refuses the same links.
static NO_OPENAT2: AtomicBool = AtomicBool::new(false);

#[cfg(test)]
thread_local! {
    /// A test's thread walks as on a kernel without openat2.
    pub(super) static WITHOUT_OPENAT2: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether to use the `O_NOFOLLOW` walk.
fn without_openat2() -> bool {
    #[cfg(test)]
    if WITHOUT_OPENAT2.with(std::cell::Cell::get) {
        return true;
    }
    NO_OPENAT2.load(Ordering::Relaxed)
}

/// Opens `name` in `dir` as a directory (`O_PATH`), never through a symbolic link.
fn open_dir_at(dir: &OwnedFd, name: &OsStr) -> io::Result<OwnedFd> {
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let resolve = ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
    for _ in 0..8 {
        if without_openat2() {
            break;
        }
        match rfs::openat2(dir, name, flags, Mode::empty(), resolve) {
            // A rename elsewhere raced the lookup: the kernel asks for another try.
            Err(Errno::AGAIN) => continue,
            Err(Errno::NOSYS) => NO_OPENAT2.store(true, Ordering::Relaxed),
            r => return Ok(r?),
        }
    }
    // O_PATH|O_NOFOLLOW opens a final link itself rather than failing: `check_dir` refuses it.
    Ok(rfs::openat(dir, name, flags, Mode::empty())?)
}

/// The rule for a directory on the way: root's or ours, and writable by no one else unless
/// sticky (as /tmp: others may add names there but not remove or rename ours).
fn check_dir(fd: &OwnedFd, shown: &Path) -> io::Result<()> {
    let st = rfs::fstat(fd)?;
    let kind = FileType::from_raw_mode(st.st_mode);
    if kind == FileType::Symlink {
        return Err(Refused::LinkOnTheWay(crate::escape::path(shown)).into());
    }
    if kind != FileType::Directory {
        return Err(io::Error::from(io::ErrorKind::NotADirectory));
    }
    if dir_is_safe(&st) {
        return Ok(());
    }
    Err(Refused::OpenDirectory {
        dir: crate::escape::path(shown),
        uid: st.st_uid,
        mode: st.st_mode & 0o7777,
    }
    .into())
}

/// [`check_dir`]'s rule on a directory's `stat`.
fn dir_is_safe(st: &Stat) -> bool {
    let owner_ok = st.st_uid == 0 || st.st_uid == euid();
    let others_write = st.st_mode & 0o022 != 0;
    let sticky = st.st_mode & 0o1000 != 0;
    owner_ok && (!others_write || sticky)
}

/// Why a failed step failed: a link where a directory was expected is said as such.
fn step_error(dir: &OwnedFd, name: &OsStr, shown: &Path, e: io::Error) -> io::Error {
    let lstat = rfs::statat(dir, name, rfs::AtFlags::SYMLINK_NOFOLLOW);
    match lstat {
        Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::Symlink => {
            Refused::LinkOnTheWay(crate::escape::path(shown)).into()
        }
        _ => e,
    }
}

/// Walks to the directory `path`'s final component is in (from `/`, or from the current
/// directory for a relative path), checking that directory and each one on the way.
pub(super) fn parent(path: &Path) -> io::Result<Parent> {
    let mut parts: Vec<Component> = path.components().collect();
    let name = match parts.pop() {
        Some(Component::Normal(n)) => n.to_os_string(),
        _ => return Err(io::Error::from(io::ErrorKind::IsADirectory)),
    };
    let (mut dir, mut shown) = start_dir(matches!(parts.first(), Some(Component::RootDir)))?;
    for part in parts {
        let step: &OsStr = match part {
            Component::Normal(n) => n,
            Component::ParentDir => "..".as_ref(),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => continue,
        };
        shown.push(step);
        let next = open_dir_at(&dir, step).map_err(|e| step_error(&dir, step, &shown, e))?;
        check_dir(&next, &shown)?;
        dir = next;
    }
    Ok(Parent { dir, name })
}

/// What is at `name` in `parent` (`lstat`: a final link is itself); `None` when nothing is.
pub(super) fn lstat(parent: &Parent) -> io::Result<Option<Stat>> {
    match rfs::statat(&parent.dir, &parent.name, rfs::AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => Ok(Some(st)),
        Err(Errno::NOENT) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Opens `name` in `dir` with `flags` (and `mode` when creating), never through a link.
pub(super) fn open_at(
    dir: &OwnedFd,
    name: &OsStr,
    flags: OFlags,
    mode: u32,
) -> io::Result<std::fs::File> {
    let flags = flags | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rfs::openat(dir.as_fd(), name, flags, Mode::from_raw_mode(mode))?;
    Ok(std::fs::File::from(fd))
}

/// The components of `path` still to walk, `..` kept (the kernel's meaning of it).
fn parts_of(path: &Path) -> std::collections::VecDeque<OsString> {
    path.components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            Component::ParentDir => Some("..".into()),
            _ => None,
        })
        .collect()
}

/// The directory a walk starts from: `/` for an absolute path, else the current one; checked.
fn start_dir(absolute: bool) -> io::Result<(OwnedFd, std::path::PathBuf)> {
    let start = if absolute { "/" } else { "." };
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let dir = rfs::open(start, flags, Mode::empty())?;
    let shown = std::path::PathBuf::from(start);
    check_dir(&dir, &shown)?;
    Ok((dir, shown))
}

/// Opens `path` to read a secret (credentials, a key): every directory on the way checked as
/// for an output, and a symbolic link, in any component, followed only when it is root's or
/// ours (a Kubernetes Secret volume is links of root's: `creds -> ..data/creds`), never one
/// another user could have planted; at most 16 links. The file itself is the caller's to
/// check.
pub(super) fn open_trusted(path: &Path) -> io::Result<std::fs::File> {
    use std::os::unix::ffi::OsStrExt;
    let mut todo = parts_of(path);
    let (mut dir, mut shown) = start_dir(path.is_absolute())?;
    let mut links = 0;
    while let Some(part) = todo.pop_front() {
        shown.push(&part);
        let st = rfs::statat(&dir, &part, rfs::AtFlags::SYMLINK_NOFOLLOW)?;
        match FileType::from_raw_mode(st.st_mode) {
            FileType::Symlink => {
                if st.st_uid != 0 && st.st_uid != euid() {
                    let link = crate::escape::path(&shown);
                    return Err(Refused::ForeignLink {
                        link,
                        uid: st.st_uid,
                    }
                    .into());
                }
                links += 1;
                if links > 16 {
                    return Err(Errno::LOOP.into());
                }
                let to = rfs::readlinkat(&dir, &part, Vec::new())?;
                let to = Path::new(OsStr::from_bytes(to.as_bytes()));
                if to.is_absolute() {
                    (dir, shown) = start_dir(true)?;
                } else {
                    shown.pop();
                }
                parts_of(to)
                    .into_iter()
                    .rev()
                    .for_each(|p| todo.push_front(p));
            }
            FileType::Directory if !todo.is_empty() => {
                let next = open_dir_at(&dir, &part)?;
                check_dir(&next, &shown)?;
                dir = next;
            }
            _ if todo.is_empty() => {
                // O_NONBLOCK: a FIFO put there is refused by the caller, not waited on.
                let flags = OFlags::RDONLY | OFlags::NOCTTY | OFlags::NONBLOCK;
                return open_at(&dir, &part, flags, 0);
            }
            _ => return Err(io::Error::from(io::ErrorKind::NotADirectory)),
        }
    }
    Err(io::Error::from(io::ErrorKind::IsADirectory))
}
