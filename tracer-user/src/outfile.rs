//! Output files written safely. The tool runs as root, often in directories other users
//! share (a sticky /tmp), and writes argv, which can hold secrets. It never changes a file it
//! did not create:
//!
//! * No component of an output path is a symbolic link: the path is walked one directory at
//!   a time from `/` (or the current directory), each opened with openat2(2)
//!   `RESOLVE_NO_SYMLINKS` (`O_NOFOLLOW` where the kernel lacks openat2), so a link another
//!   user planted anywhere on the way (`/tmp/x/traces -> /etc`) cannot aim root's write at a
//!   file of their choosing. A final symlink is refused the same way.
//! * Every directory on the way, the current directory included, is root's or ours and
//!   writable by no one else, unless it is sticky (as /tmp: others can add names there but
//!   never remove or rename ours). A directory another user can change could have the
//!   output's name swapped under us.
//! * Everything after the walk — the check of what is at the final name, the open, the
//!   temporary file, the rename — is done relative to the directory descriptor the walk
//!   opened (`openat`, `renameat2`), never by the path again.
//! * A block device is refused outright (a recording written over a disk). A character device,
//!   FIFO or socket (`/dev/null`, a terminal, a pipe) is written in place, as
//!   `strace -o /dev/null` does: opened without `O_CREAT` or `O_TRUNC`, and checked again
//!   after the open, so a name swapped for a regular file meanwhile is refused, not written.
//!   It must belong to root or to us: a FIFO another user planted in /tmp would hand them
//!   every argv recorded.
//! * The process's own descriptors — `/dev/stdout`, `/dev/stderr`, `/dev/fd/N`,
//!   `/proc/self/fd/N` — are what the invoker gave us: the descriptor itself is duplicated,
//!   never reopened through the link and never truncated, so it keeps its `O_APPEND` and its
//!   offset (`-o /dev/stdout >> log` appends). It must be open for writing and be no block
//!   device or directory. [`OutFile::identity`] tells the caller what it is, so that one
//!   naming the input being read can be refused before a byte is written.
//! * A regular file owned by another uid is never replaced or truncated.
//! * A new file is created with mode 0600, `O_EXCL|O_NOFOLLOW`, never a wider one.
//! * [`OutFile::atomic`] (exports, `import-strace`): the output goes to a temporary file in the
//!   target's directory (created `O_EXCL|O_NOFOLLOW`, 0600), renamed over the target only by
//!   [`OutFile::commit`], which first checks that the target is still what it was (absent, or
//!   a regular file of ours): a link or another owner's file that appeared meanwhile is left
//!   alone and the commit fails; a target that was absent is never replaced
//!   (`RENAME_NOREPLACE`). Until then the target is untouched, so a failed write leaves it as
//!   it was, and `-o` naming the input still reads the whole input.
//! * [`create_streaming`] (`record`, `tui --record`, `trace -o`): the file is created at its
//!   final path with `O_EXCL` so it can be read while it grows and a recording killed with
//!   SIGKILL leaves every whole frame where the user asked for it. An existing regular file of
//!   ours is first removed (not truncated in place: other hard links to it keep their content,
//!   and its mode is never changed); `O_EXCL` then refuses anything that appears at the path
//!   meanwhile.
//!
//! Every refusal is an `io::Error` whose message names the rule ([`Refused`]); callers add the
//! path.

mod walk;

use rustix::fs::{self as rfs, AtFlags, FileType, OFlags, RenameFlags, Stat};
use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::path::Path;
use walk::{euid, Parent};

/// Why an output path is refused: the rule it would break.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    /// The final component is a symbolic link.
    #[error("it is a symbolic link: output is never written through one")]
    Symlink,
    /// A directory of the path is a symbolic link.
    #[error("{0} is a symbolic link: no component of an output path may be one")]
    LinkOnTheWay(String),
    /// A directory of the path that another user can change.
    #[error("directory {dir} (uid {uid}, mode {mode:04o}) can be changed by another user: output goes only through directories of root's or ours that no one else can write, unless sticky (as /tmp)")]
    OpenDirectory {
        /// The directory, as the path names it.
        dir: String,
        /// Its owner.
        uid: u32,
        /// Its permission bits.
        mode: u32,
    },
    /// A symbolic link of another user on the way to a secret file.
    #[error("{link} is a symbolic link of uid {uid}: only root's or ours are followed to a key or credentials file")]
    ForeignLink {
        /// The link, as the path names it.
        link: String,
        /// Its owner.
        uid: u32,
    },
    /// A secret file another user owns or can change (ssh's rule for keys).
    #[error("it is {0}: a key or credentials file must be a regular file of root's or ours that no one else can write")]
    Unprotected(&'static str),
    /// A block device (a disk or partition).
    #[error("it is a block device: output is never written to one")]
    BlockDevice,
    /// A regular file of another user, or a FIFO, socket or device of neither root nor us.
    #[error("it belongs to uid {0}: output never goes to another user's file")]
    OtherOwner(u32),
    /// One of our descriptors named as the output is not open for writing.
    #[error("descriptor {0} is not open for writing")]
    NotWritable(RawFd),
    /// The output is the input being read (the same device and inode).
    #[error(
        "it is the input being read: writing there would overwrite the recording as it is read"
    )]
    IsTheInput,
    /// What is at the path changed between the check and the write.
    #[error("it changed while the output was written (now a link, another owner's file or another kind of file); left as it is")]
    Changed,
}

impl From<Refused> for io::Error {
    fn from(r: Refused) -> io::Error {
        io::Error::new(io::ErrorKind::PermissionDenied, r)
    }
}

/// What is at an output path's final name (never following a link).
enum Target {
    /// Nothing: a new file is created there.
    Missing,
    /// A regular file of this process's effective uid.
    Regular,
    /// A character device, FIFO or socket of root's or ours: written to in place.
    Special,
}

/// The descriptor `path` names when it is one of this process's own (see the module
/// documentation).
fn own_descriptor(path: &Path) -> Option<RawFd> {
    let s = path.as_os_str().as_encoded_bytes();
    let number = |rest: &[u8]| {
        let digits = !rest.is_empty() && rest.iter().all(u8::is_ascii_digit);
        std::str::from_utf8(rest)
            .ok()?
            .parse()
            .ok()
            .filter(|_| digits)
    };
    match s {
        b"/dev/stdout" => Some(1),
        b"/dev/stderr" => Some(2),
        _ => s
            .strip_prefix(b"/dev/fd/")
            .or_else(|| s.strip_prefix(b"/proc/self/fd/"))
            .and_then(number),
    }
}

/// A duplicate of our descriptor `fd`: the same open file, its offset and `O_APPEND` shared.
fn open_own(fd: RawFd) -> io::Result<File> {
    // SAFETY: F_DUPFD_CLOEXEC reads no memory of ours; a closed `fd` is EBADF.
    let dup = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3) };
    if dup < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `dup` was just returned by fcntl and nothing else owns it.
    let dup = unsafe { OwnedFd::from_raw_fd(dup) };
    let mode = rfs::fcntl_getfl(&dup)? & OFlags::RWMODE;
    if mode != OFlags::WRONLY && mode != OFlags::RDWR {
        return Err(Refused::NotWritable(fd).into());
    }
    let kind = FileType::from_raw_mode(rfs::fstat(&dup)?.st_mode);
    match kind {
        FileType::BlockDevice => Err(Refused::BlockDevice.into()),
        FileType::Directory => Err(io::Error::from(io::ErrorKind::IsADirectory)),
        _ => Ok(File::from(dup)),
    }
}

/// The rules of the module documentation, applied to what `lstat` says is at the final name.
fn classify(st: Option<&Stat>) -> io::Result<Target> {
    let Some(st) = st else {
        return Ok(Target::Missing);
    };
    let kind = FileType::from_raw_mode(st.st_mode);
    match kind {
        FileType::Symlink => return Err(Refused::Symlink.into()),
        FileType::Directory => return Err(io::Error::from(io::ErrorKind::IsADirectory)),
        FileType::BlockDevice => return Err(Refused::BlockDevice.into()),
        _ => {}
    }
    let regular = kind == FileType::RegularFile;
    // Ours, or (a device, FIFO or socket) root's.
    if !(st.st_uid == euid() || (st.st_uid == 0 && !regular)) {
        return Err(Refused::OtherOwner(st.st_uid).into());
    }
    Ok(if regular {
        Target::Regular
    } else {
        Target::Special
    })
}

/// The safe walk to `path`'s directory and what is at its final name.
fn target(path: &Path) -> io::Result<(Parent, Target)> {
    let parent = walk::parent(path)?;
    let t = classify(walk::lstat(&parent)?.as_ref())?;
    Ok((parent, t))
}

/// Opens a character device, FIFO or socket for writing as it is (no create, no truncate, no
/// mode change, no final symlink), then checks that what was opened is still no regular file
/// or block device, and still root's or ours.
fn open_special(parent: &Parent) -> io::Result<File> {
    let file = walk::open_at(
        &parent.dir,
        &parent.name,
        OFlags::WRONLY | OFlags::NOCTTY,
        0,
    )?;
    let st = rfs::fstat(&file)?;
    let kind = FileType::from_raw_mode(st.st_mode);
    let owner_ok = st.st_uid == euid() || st.st_uid == 0;
    let in_place = !matches!(
        kind,
        FileType::RegularFile | FileType::BlockDevice | FileType::Directory
    );
    if !(in_place && owner_ok) {
        return Err(Refused::Changed.into());
    }
    Ok(file)
}

/// Creates `name` in `parent` with mode 0600, failing if anything is there, a link included.
fn create_at(parent: &Parent, name: &std::ffi::OsStr) -> io::Result<File> {
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL;
    walk::open_at(&parent.dir, name, flags, 0o600)
}

/// Creates `path` with mode 0600, failing if anything exists there, a link included (a name
/// the tool chose itself, where nothing may be replaced); the path is walked as any output's.
pub fn create_new_private(path: &Path) -> io::Result<File> {
    let parent = walk::parent(path)?;
    create_at(&parent, &parent.name)
}

/// A file for a writer that streams (see the module documentation): created at `path`, 0600.
pub fn create_streaming(path: &Path) -> io::Result<File> {
    if let Some(fd) = own_descriptor(path) {
        return open_own(fd);
    }
    let (parent, t) = target(path)?;
    match t {
        Target::Special => open_special(&parent),
        Target::Missing => create_at(&parent, &parent.name),
        Target::Regular => {
            rfs::unlinkat(&parent.dir, &parent.name, AtFlags::empty())?;
            create_at(&parent, &parent.name)
        }
    }
}

/// Opens a file of secrets to read (NATS credentials, a TLS key, certificate or CA), under
/// ssh's rule for keys: no directory on the way that another user can change, no symbolic
/// link but root's or ours, and the file a regular file of root's or ours, writable by no
/// one else. A refusal names the rule ([`Refused`]).
pub fn open_secret(path: &Path) -> io::Result<File> {
    let file = walk::open_trusted(path)?;
    let st = rfs::fstat(&file)?;
    let why = if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        "not a regular file"
    } else if st.st_uid != 0 && st.st_uid != euid() {
        "another user's file"
    } else if st.st_mode & 0o022 != 0 {
        "writable by group or others"
    } else {
        return Ok(file);
    };
    Err(Refused::Unprotected(why).into())
}

/// An output being written: a temporary file to be renamed over the target, or a character
/// device, FIFO or descriptor of ours written in place.
#[derive(Debug)]
pub enum OutFile {
    /// A 0600 temporary file in the target's directory.
    Atomic(Pending),
    /// A character device, FIFO, socket, or one of our descriptors.
    Direct(File),
}

/// [`OutFile::Atomic`]'s temporary file, removed on drop unless committed.
#[derive(Debug)]
pub struct Pending {
    parent: Parent,
    tmp: OsString,
    file: File,
    /// Whether the target existed (a regular file of ours) when the output started.
    existed: bool,
    committed: bool,
}

impl Drop for Pending {
    fn drop(&mut self) {
        if !self.committed {
            let _ = rfs::unlinkat(&self.parent.dir, &self.tmp, AtFlags::empty());
        }
    }
}

impl Pending {
    /// Renames the temporary file to the target's name in the same directory: over the
    /// target when it existed, else never over anything (`RENAME_NOREPLACE`; on a file system
    /// without it, a hard link, which never replaces either, then the temporary name removed).
    fn put_in_place(&self) -> io::Result<()> {
        use rustix::io::Errno;
        let (dir, name) = (&self.parent.dir, &self.parent.name);
        let res = match self.existed {
            true => rfs::renameat(dir, &self.tmp, dir, name),
            false => match rfs::renameat_with(dir, &self.tmp, dir, name, RenameFlags::NOREPLACE) {
                Err(Errno::INVAL | Errno::NOSYS) => {
                    rfs::linkat(dir, &self.tmp, dir, name, AtFlags::empty())
                        .and_then(|()| rfs::unlinkat(dir, &self.tmp, AtFlags::empty()))
                }
                r => r,
            },
        };
        res.map_err(|e| match e {
            Errno::EXIST => Refused::Changed.into(),
            e => io::Error::from(e),
        })
    }
}

/// A fresh temporary file beside the target, in `parent`'s directory, 0600, `O_EXCL`.
fn temp_in(parent: &Parent) -> io::Result<(OsString, File)> {
    use std::hash::{BuildHasher, RandomState};
    let seed = RandomState::new();
    for n in 0u32..100 {
        // Unpredictable enough to avoid collisions; O_EXCL makes a collision harmless anyway.
        let tag = seed.hash_one((std::process::id(), n));
        let name = OsString::from(format!(".tracer-{tag:016x}.tmp"));
        match create_at(parent, &name) {
            Ok(f) => return Ok((name, f)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::from(io::ErrorKind::AlreadyExists))
}

impl OutFile {
    /// Starts an output that replaces `path` only when [`OutFile::commit`] is called.
    pub fn atomic(path: &Path) -> io::Result<OutFile> {
        if let Some(fd) = own_descriptor(path) {
            return Ok(OutFile::Direct(open_own(fd)?));
        }
        let (parent, t) = target(path)?;
        let existed = match t {
            Target::Special => return Ok(OutFile::Direct(open_special(&parent)?)),
            Target::Missing => false,
            Target::Regular => true,
        };
        let (tmp, file) = temp_in(&parent)?;
        Ok(OutFile::Atomic(Pending {
            parent,
            tmp,
            file,
            existed,
            committed: false,
        }))
    }

    /// The device and inode written to, for an output written in place (a device, FIFO or
    /// descriptor of ours): what a caller compares with its input's before writing.
    pub fn identity(&self) -> Option<(u64, u64)> {
        match self {
            OutFile::Atomic(_) => None,
            OutFile::Direct(f) => rfs::fstat(f).ok().map(|st| (st.st_dev, st.st_ino)),
        }
    }

    /// Flushes and puts the output in place (the rename; nothing for a device or FIFO). The
    /// target must still be what it was: absent (then the rename refuses to replace anything
    /// that appeared), or a regular file of ours.
    pub fn commit(self) -> io::Result<()> {
        match self {
            OutFile::Atomic(mut p) => {
                p.file.sync_all()?;
                let still = match classify(walk::lstat(&p.parent)?.as_ref()) {
                    Ok(Target::Missing) => !p.existed,
                    Ok(Target::Regular) => p.existed,
                    _ => false,
                };
                if !still {
                    return Err(Refused::Changed.into());
                }
                p.put_in_place()?;
                p.committed = true;
                Ok(())
            }
            OutFile::Direct(mut f) => f.flush(),
        }
    }

    fn file(&mut self) -> &mut File {
        match self {
            OutFile::Atomic(p) => &mut p.file,
            OutFile::Direct(f) => f,
        }
    }
}

impl Write for OutFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file().write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.file().flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::OpenOptions;
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt, PermissionsExt};
    use std::path::PathBuf;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("outfile-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// A FIFO at `path` with `mode`.
    fn mkfifo(path: &Path, mode: libc::mode_t) {
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: `c` is a valid NUL-terminated path for the duration of the call.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), mode) }, 0);
    }

    /// Whether the tests run as root: only root can make files, directories and links of
    /// another uid, so the tests that need them pass elsewhere and are covered by the root run.
    fn root_run() -> bool {
        euid() == 0
    }

    /// Makes `p` (a file, directory or the link itself) nobody's.
    fn give_to_nobody(p: &Path) {
        std::os::unix::fs::lchown(p, Some(65534), Some(65534)).unwrap();
    }

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn atomic_output_is_0600_and_replaces_only_at_commit() {
        let d = dir("atomic");
        let p = d.join("out.json");
        std::fs::write(&p, "old").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        let mut o = OutFile::atomic(&p).unwrap();
        o.write_all(b"new").unwrap();
        // Not committed: the target is still the old file; dropped: no temp file left.
        assert_eq!(std::fs::read(&p).unwrap(), b"old");
        drop(o);
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1);
        assert_eq!(mode(&p), 0o644);
        let mut o = OutFile::atomic(&p).unwrap();
        o.write_all(b"new").unwrap();
        o.commit().unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
        assert_eq!(mode(&p), 0o600);
        let fresh = d.join("fresh");
        OutFile::atomic(&fresh).unwrap().commit().unwrap();
        assert_eq!(mode(&fresh), 0o600);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn devices_and_fifos_are_written_in_place_mode_untouched() {
        let before = std::fs::metadata("/dev/null").unwrap();
        let mut o = OutFile::atomic(Path::new("/dev/null")).unwrap();
        assert!(matches!(o, OutFile::Direct(_)));
        o.write_all(b"x").unwrap();
        o.commit().unwrap();
        let mut f = create_streaming(Path::new("/dev/null")).unwrap();
        f.write_all(b"x").unwrap();
        let after = std::fs::metadata("/dev/null").unwrap();
        assert_eq!(before.permissions().mode(), after.permissions().mode());
        use std::os::unix::fs::MetadataExt;
        assert_eq!(before.ino(), after.ino());

        let d = dir("fifo");
        let fifo = d.join("pipe");
        mkfifo(&fifo, 0o640);
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(fifo).unwrap())
        };
        let mut o = OutFile::atomic(&fifo).unwrap();
        o.write_all(b"through the pipe").unwrap();
        o.commit().unwrap();
        assert_eq!(reader.join().unwrap(), b"through the pipe");
        assert_eq!(mode(&fifo), 0o640);
        assert!(std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn streaming_replaces_a_file_without_touching_it() {
        let d = dir("stream");
        let old = d.join("old.trace");
        std::fs::write(&old, "previous recording").unwrap();
        std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o644)).unwrap();
        let other = d.join("hardlink");
        std::fs::hard_link(&old, &other).unwrap();
        let mut f = create_streaming(&old).unwrap();
        f.write_all(b"new").unwrap();
        drop(f);
        assert_eq!(std::fs::read(&old).unwrap(), b"new");
        assert_eq!(mode(&old), 0o600);
        // The other name of the old file keeps the old content and mode.
        assert_eq!(std::fs::read(&other).unwrap(), b"previous recording");
        assert_eq!(mode(&other), 0o644);
        assert!(create_streaming(&d).is_err());
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// The rule an output error names, if it is a refusal.
    fn refusal(e: &io::Error) -> Option<&Refused> {
        e.get_ref()?.downcast_ref::<Refused>()
    }

    #[test]
    fn a_final_symlink_is_refused_by_every_writer_and_its_target_untouched() {
        let d = dir("symlink");
        let victim = d.join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let link = d.join("out");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let e = create_streaming(&link).unwrap_err();
        assert!(matches!(refusal(&e), Some(Refused::Symlink)), "{e}");
        let e = OutFile::atomic(&link).unwrap_err();
        assert!(matches!(refusal(&e), Some(Refused::Symlink)), "{e}");
        assert!(create_new_private(&link).is_err());
        // A dangling link is no way to create a file elsewhere either.
        let dangling = d.join("dangling");
        std::os::unix::fs::symlink(d.join("elsewhere"), &dangling).unwrap();
        assert!(create_streaming(&dangling).is_err());
        assert!(OutFile::atomic(&dangling).is_err());
        assert!(!d.join("elsewhere").exists());
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_link_planted_before_the_commit_is_left_alone() {
        let d = dir("race");
        let victim = d.join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let out = d.join("out.json");
        let mut o = OutFile::atomic(&out).unwrap();
        o.write_all(b"export").unwrap();
        // Between the start and the commit someone plants a link at the name.
        std::os::unix::fs::symlink(&victim, &out).unwrap();
        let e = o.commit().unwrap_err();
        assert!(matches!(refusal(&e), Some(Refused::Changed)), "{e}");
        assert!(std::fs::symlink_metadata(&out).unwrap().is_symlink());
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        // No temporary file is left behind either.
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 2);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn the_processs_own_descriptors_are_written_through() {
        let d = dir("own");
        let file = d.join("captured");
        let f = std::fs::File::create(&file).unwrap();
        use std::os::fd::AsRawFd;
        let fd = format!("/proc/self/fd/{}", f.as_raw_fd());
        let mut o = OutFile::atomic(Path::new(&fd)).unwrap();
        assert!(matches!(o, OutFile::Direct(_)));
        o.write_all(b"through the descriptor").unwrap();
        o.commit().unwrap();
        assert_eq!(std::fs::read(&file).unwrap(), b"through the descriptor");
        assert_eq!(own_descriptor(Path::new("/dev/stdout")), Some(1));
        assert_eq!(own_descriptor(Path::new("/dev/fd/7")), Some(7));
        assert_eq!(own_descriptor(Path::new("/dev/fd/1x")), None);
        assert_eq!(own_descriptor(Path::new("/proc/self/fd/")), None);
        assert_eq!(own_descriptor(Path::new("/proc/self/fd/+1")), None);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn another_users_file_or_fifo_is_never_written() {
        if !root_run() {
            return;
        }
        let d = dir("owner");
        let theirs = d.join("theirs.trace");
        std::fs::write(&theirs, "their data").unwrap();
        give_to_nobody(&theirs);
        // Their FIFO too: root's output would reach whoever reads it.
        let fifo = d.join("their.fifo");
        mkfifo(&fifo, 0o666);
        give_to_nobody(&fifo);
        // Someone reading it, as an attacker would be: opening it to write then never blocks.
        let _reader = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&fifo)
            .unwrap();
        for e in [
            create_streaming(&theirs).unwrap_err(),
            OutFile::atomic(&theirs).unwrap_err(),
            create_streaming(&fifo).unwrap_err(),
            OutFile::atomic(&fifo).unwrap_err(),
        ] {
            assert!(
                matches!(refusal(&e), Some(Refused::OtherOwner(65534))),
                "{e}"
            );
        }
        assert_eq!(std::fs::read(&theirs).unwrap(), b"their data");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn an_own_descriptor_keeps_its_append_flag_and_offset_and_is_never_truncated() {
        use std::io::{Seek, SeekFrom};
        use std::os::fd::AsRawFd;
        let d = dir("own-offset");
        let log = d.join("log");
        std::fs::write(&log, "first\n").unwrap();
        let appending = OpenOptions::new().append(true).open(&log).unwrap();
        let name = format!("/dev/fd/{}", appending.as_raw_fd());
        let mut o = OutFile::atomic(Path::new(&name)).unwrap();
        o.write_all(b"second\n").unwrap();
        o.commit().unwrap();
        assert_eq!(std::fs::read(&log).unwrap(), b"first\nsecond\n");
        // Not appending: the output goes at the descriptor's offset, the rest left as it is.
        let mut at = OpenOptions::new().write(true).open(&log).unwrap();
        at.seek(SeekFrom::Start(2)).unwrap();
        let name = format!("/proc/self/fd/{}", at.as_raw_fd());
        create_streaming(Path::new(&name))
            .unwrap()
            .write_all(b"XY")
            .unwrap();
        assert_eq!(std::fs::read(&log).unwrap(), b"fiXYt\nsecond\n");
        assert_eq!(at.stream_position().unwrap(), 4, "the offset is shared");
        let read_only = File::open(&log).unwrap();
        let name = format!("/dev/fd/{}", read_only.as_raw_fd());
        let e = OutFile::atomic(Path::new(&name)).unwrap_err();
        assert!(matches!(refusal(&e), Some(Refused::NotWritable(_))), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_link_anywhere_on_the_path_is_refused_by_every_writer() {
        links_on_the_way_are_refused("link-on-the-way");
    }

    /// The same walk on a kernel without openat2: `O_NOFOLLOW` opens refuse the same links.
    #[test]
    fn a_link_anywhere_on_the_path_is_refused_without_openat2_too() {
        walk::WITHOUT_OPENAT2.with(|w| w.set(true));
        links_on_the_way_are_refused("link-on-the-way-no-openat2");
    }

    fn links_on_the_way_are_refused(name: &str) {
        let d = dir(name);
        let elsewhere = d.join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::fs::write(elsewhere.join("passwd"), "precious").unwrap();
        // `ln -s /etc-like-dir traces`, then `-o traces/passwd` (and deeper, and a fresh name).
        std::os::unix::fs::symlink(&elsewhere, d.join("traces")).unwrap();
        std::fs::create_dir(elsewhere.join("sub")).unwrap();
        for out in ["traces/passwd", "traces/sub/new", "traces/new"] {
            let out = d.join(out);
            for e in [
                create_streaming(&out).unwrap_err(),
                OutFile::atomic(&out).unwrap_err(),
                create_new_private(&out).unwrap_err(),
            ] {
                assert!(matches!(refusal(&e), Some(Refused::LinkOnTheWay(_))), "{e}");
                assert!(e.to_string().contains("traces is a symbolic link"), "{e}");
            }
        }
        assert_eq!(
            std::fs::read(elsewhere.join("passwd")).unwrap(),
            b"precious"
        );
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 2);
        // A path through real directories (`.` and `..` included) is written.
        let ok = d.join("elsewhere/sub/../sub/./out");
        OutFile::atomic(&ok).unwrap().commit().unwrap();
        assert!(elsewhere.join("sub/out").is_file());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_directory_others_can_write_is_refused_unless_sticky() {
        let d = dir("open-dir");
        let open = d.join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = OutFile::atomic(&open.join("out")).unwrap_err();
        assert!(
            matches!(
                refusal(&e),
                Some(Refused::OpenDirectory { mode: 0o777, .. })
            ),
            "{e}"
        );
        let e = create_streaming(&open.join("deeper/out")).unwrap_err();
        assert!(
            matches!(refusal(&e), Some(Refused::OpenDirectory { .. })),
            "{e}"
        );
        // Group-writable is others too.
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o775)).unwrap();
        assert!(OutFile::atomic(&open.join("out")).is_err());
        // Sticky and ours, as /tmp: written.
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o1777)).unwrap();
        OutFile::atomic(&open.join("out"))
            .unwrap()
            .commit()
            .unwrap();
        create_streaming(&open.join("stream")).unwrap();
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_directory_of_another_user_is_refused_even_sticky() {
        if !root_run() {
            return;
        }
        let d = dir("their-dir");
        let theirs = d.join("theirs");
        std::fs::create_dir(&theirs).unwrap();
        give_to_nobody(&theirs);
        for mode in [0o755, 0o1777] {
            std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(mode)).unwrap();
            let e = OutFile::atomic(&theirs.join("out")).unwrap_err();
            assert!(
                matches!(refusal(&e), Some(Refused::OpenDirectory { uid: 65534, .. })),
                "{e}"
            );
        }
        assert_eq!(std::fs::read_dir(&theirs).unwrap().count(), 0);
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// `dir/name` written with `text` and `mode`.
    fn secret(dir: &Path, name: &str, text: &str, mode: u32) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        p
    }

    fn read_secret(p: &Path) -> io::Result<String> {
        use std::io::Read;
        let mut s = String::new();
        open_secret(p)?.read_to_string(&mut s)?;
        Ok(s)
    }

    #[test]
    fn a_secret_is_read_only_from_a_file_no_one_else_can_write() {
        let d = dir("secret");
        for mode in [0o600, 0o644, 0o400] {
            let p = secret(&d, "creds", "jwt", mode);
            assert_eq!(read_secret(&p).unwrap(), "jwt", "{mode:o}");
            std::fs::remove_file(&p).unwrap();
        }
        for mode in [0o664, 0o646, 0o666] {
            let p = secret(&d, "creds", "jwt", mode);
            let e = read_secret(&p).unwrap_err();
            assert!(
                matches!(
                    refusal(&e),
                    Some(Refused::Unprotected("writable by group or others"))
                ),
                "{mode:o}: {e}"
            );
            std::fs::remove_file(&p).unwrap();
        }
        // A FIFO is refused, not waited on.
        mkfifo(&d.join("fifo"), 0o600);
        let e = read_secret(&d.join("fifo")).unwrap_err();
        assert!(
            matches!(
                refusal(&e),
                Some(Refused::Unprotected("not a regular file"))
            ),
            "{e}"
        );
        // Through a directory others can write: refused as an output would be.
        let open = d.join("open");
        std::fs::create_dir(&open).unwrap();
        secret(&open, "key.pem", "key", 0o600);
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = read_secret(&open.join("key.pem")).unwrap_err();
        assert!(
            matches!(refusal(&e), Some(Refused::OpenDirectory { .. })),
            "{e}"
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// A Kubernetes Secret volume: `creds -> ..data/creds`, `..data -> ..2026_12_02`, links
    /// of ours (root's in a pod), relative and absolute, are followed.
    #[test]
    fn a_secret_is_reached_through_links_of_ours() {
        let d = dir("secret-links");
        let vol = d.join("vol");
        std::fs::create_dir_all(vol.join("..2026_12_02")).unwrap();
        secret(&vol.join("..2026_12_02"), "creds", "jwt", 0o644);
        std::os::unix::fs::symlink("..2026_12_02", vol.join("..data")).unwrap();
        std::os::unix::fs::symlink("..data/creds", vol.join("creds")).unwrap();
        assert_eq!(read_secret(&vol.join("creds")).unwrap(), "jwt");
        std::os::unix::fs::symlink(vol.join("creds"), d.join("absolute")).unwrap();
        assert_eq!(read_secret(&d.join("absolute")).unwrap(), "jwt");
        std::os::unix::fs::symlink("loop", d.join("loop")).unwrap();
        assert!(read_secret(&d.join("loop")).is_err());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_secret_behind_another_users_link_or_of_another_user_is_refused() {
        if !root_run() {
            return;
        }
        let d = dir("secret-theirs");
        let ours = secret(&d, "ours", "jwt", 0o600);
        let link = d.join("planted");
        std::os::unix::fs::symlink(&ours, &link).unwrap();
        give_to_nobody(&link);
        let e = read_secret(&link).unwrap_err();
        assert!(
            matches!(refusal(&e), Some(Refused::ForeignLink { uid: 65534, .. })),
            "{e}"
        );
        // Their link as a directory on the way, too.
        let via = d.join("via");
        std::os::unix::fs::symlink(".", &via).unwrap();
        give_to_nobody(&via);
        assert!(read_secret(&via.join("ours")).is_err());
        let theirs = secret(&d, "theirs", "jwt", 0o600);
        give_to_nobody(&theirs);
        let e = read_secret(&theirs).unwrap_err();
        assert!(
            matches!(
                refusal(&e),
                Some(Refused::Unprotected("another user's file"))
            ),
            "{e}"
        );
        std::fs::remove_dir_all(&d).unwrap();
    }
}
