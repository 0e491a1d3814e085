//! Output files written safely. The tool runs as root, often in directories other users
//! share (a sticky /tmp), and writes argv, which can hold secrets. It never changes a file it
//! did not create:
//!
//! * The final component of an output path is never followed: a symlink there is refused, so
//!   a link another user planted cannot aim root's write at a file of their choosing.
//! * A block device is refused outright (a recording written over a disk). A character device,
//!   FIFO or socket (`/dev/null`, a terminal, a pipe) is written in place, as
//!   `strace -o /dev/null` does: opened without `O_CREAT` or `O_TRUNC`, and checked again
//!   after the open, so a name swapped for a regular file meanwhile is refused, not written.
//!   It must belong to root or to us: a FIFO another user planted in /tmp would hand them
//!   every argv recorded.
//! * The process's own descriptors — `/dev/stdout`, `/dev/stderr`, `/dev/fd/N`,
//!   `/proc/self/fd/N` — are links by nature and are what the invoker gave us: they are opened
//!   through the link, without truncation, whatever they are but a block device or directory.
//! * A regular file owned by another uid is never replaced or truncated.
//! * A new file is created with mode 0600, `O_EXCL|O_NOFOLLOW`, never a wider one.
//! * [`OutFile::atomic`] (exports, `import-strace`): the output goes to a temporary file in the
//!   target's directory (created `O_EXCL|O_NOFOLLOW`, 0600), renamed over the target only by
//!   [`OutFile::commit`], which first checks that the target is still what it was (absent, or
//!   a regular file of ours): a link or another owner's file that appeared meanwhile is left
//!   alone and the commit fails. Until then the target is untouched, so a failed write leaves
//!   it as it was, and `-o` naming the input still reads the whole input.
//! * [`create_streaming`] (`record`, `tui --record`, `trace -o`): the file is created at its
//!   final path with `O_EXCL` so it can be read while it grows and a recording killed with
//!   SIGKILL leaves every whole frame where the user asked for it. An existing regular file of
//!   ours is first removed (not truncated in place: other hard links to it keep their content,
//!   and its mode is never changed); `O_EXCL` then refuses anything that appears at the path
//!   meanwhile.
//!
//! Every refusal is an `io::Error` whose message names the rule ([`Refused`]); callers add the
//! path.

use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Why an output path is refused: the rule it would break.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    /// The final component is a symbolic link.
    #[error("it is a symbolic link: output is never written through one")]
    Symlink,
    /// A block device (a disk or partition).
    #[error("it is a block device: output is never written to one")]
    BlockDevice,
    /// A regular file of another user, or a FIFO, socket or device of neither root nor us.
    #[error("it belongs to uid {0}: output never goes to another user's file")]
    OtherOwner(u32),
    /// What is at the path changed between the check and the write.
    #[error("it changed while the output was written (now a link, another owner's file or another kind of file); left as it is")]
    Changed,
}

impl From<Refused> for io::Error {
    fn from(r: Refused) -> io::Error {
        io::Error::new(io::ErrorKind::PermissionDenied, r)
    }
}

/// What is at an output path (never following a final symlink).
enum Target {
    /// Nothing: a new file is created there.
    Missing(PathBuf),
    /// A regular file of this process's effective uid.
    Regular(PathBuf),
    /// A character device, FIFO or socket of root's or ours: written to in place.
    Special(PathBuf),
    /// One of this process's own descriptors (`/dev/stdout`, `/dev/fd/N`...).
    Own(PathBuf),
}

/// Whether `path` names one of this process's descriptors (see the module documentation).
fn own_descriptor(path: &Path) -> bool {
    let s = path.as_os_str().as_encoded_bytes();
    let fd_number = |rest: &[u8]| !rest.is_empty() && rest.iter().all(u8::is_ascii_digit);
    matches!(s, b"/dev/stdout" | b"/dev/stderr")
        || s.strip_prefix(b"/dev/fd/").is_some_and(fd_number)
        || s.strip_prefix(b"/proc/self/fd/").is_some_and(fd_number)
}

/// Opens one of this process's descriptors by its name, without truncating what it is.
fn open_own(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new().write(true).open(path)?;
    let kind = file.metadata()?.file_type();
    if kind.is_block_device() {
        return Err(Refused::BlockDevice.into());
    }
    Ok(file)
}

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

fn target(path: &Path) -> io::Result<Target> {
    if own_descriptor(path) {
        return Ok(Target::Own(path.to_path_buf()));
    }
    match std::fs::symlink_metadata(path) {
        Ok(m) => classify(path, &m),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Target::Missing(path.to_path_buf())),
        Err(e) => Err(e),
    }
}

/// The rules of the module documentation, applied to what `lstat` says is at `path`.
fn classify(path: &Path, m: &Metadata) -> io::Result<Target> {
    let kind = m.file_type();
    if kind.is_symlink() {
        return Err(Refused::Symlink.into());
    }
    if kind.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::IsADirectory,
            "it is a directory",
        ));
    }
    if kind.is_block_device() {
        return Err(Refused::BlockDevice.into());
    }
    // Ours, or (a device, FIFO or socket) root's.
    let owner_ok = m.uid() == euid() || (m.uid() == 0 && !kind.is_file());
    if !owner_ok {
        return Err(Refused::OtherOwner(m.uid()).into());
    }
    if kind.is_file() {
        return Ok(Target::Regular(path.to_path_buf()));
    }
    Ok(Target::Special(path.to_path_buf()))
}

/// Opens a character device, FIFO or socket for writing as it is (no create, no truncate, no
/// mode change, no final symlink), then checks that what was opened is still no regular file
/// or block device, and still root's or ours.
fn open_special(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NOCTTY)
        .open(path)?;
    let m = file.metadata()?;
    let kind = m.file_type();
    let owner_ok = m.uid() == euid() || m.uid() == 0;
    if kind.is_file() || kind.is_block_device() || kind.is_dir() || !owner_ok {
        return Err(Refused::Changed.into());
    }
    Ok(file)
}

/// Creates `path` with mode 0600, failing if anything exists there, a link included (a name
/// the tool chose itself, where nothing may be replaced).
pub fn create_new_private(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

/// A file for a writer that streams (see the module documentation): created at `path`, 0600.
pub fn create_streaming(path: &Path) -> io::Result<File> {
    match target(path)? {
        Target::Special(p) => open_special(&p),
        Target::Own(p) => open_own(&p),
        Target::Missing(p) => create_new_private(&p),
        Target::Regular(p) => {
            std::fs::remove_file(&p)?;
            create_new_private(&p)
        }
    }
}

/// An output being written: a temporary file to be renamed over the target, or a character
/// device or FIFO written in place.
#[derive(Debug)]
pub enum OutFile {
    /// A 0600 temporary file in the target's directory, the target, and whether the target
    /// existed (a regular file of ours) when the output started.
    Atomic(tempfile::NamedTempFile, PathBuf, bool),
    /// A character device or FIFO.
    Direct(File),
}

impl OutFile {
    /// Starts an output that replaces `path` only when [`OutFile::commit`] is called.
    pub fn atomic(path: &Path) -> io::Result<OutFile> {
        let (dest, existed) = match target(path)? {
            Target::Special(p) => return Ok(OutFile::Direct(open_special(&p)?)),
            Target::Own(p) => return Ok(OutFile::Direct(open_own(&p)?)),
            Target::Missing(p) => (p, false),
            Target::Regular(p) => (p, true),
        };
        let dir = match dest.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        // tempfile creates it O_CREAT|O_EXCL (which never follows a link) with mode 0600, and
        // removes it if we never commit.
        let tmp = tempfile::Builder::new()
            .prefix(".tracer-")
            .suffix(".tmp")
            .tempfile_in(dir)?;
        Ok(OutFile::Atomic(tmp, dest, existed))
    }

    /// Flushes and puts the output in place (the rename; nothing for a device or FIFO). The
    /// target must still be what it was: absent (then the rename refuses to replace anything
    /// that appeared), or a regular file of ours.
    pub fn commit(self) -> io::Result<()> {
        match self {
            OutFile::Atomic(tmp, dest, existed) => {
                tmp.as_file().sync_all()?;
                let still = match target(&dest) {
                    Ok(Target::Missing(_)) => !existed,
                    Ok(Target::Regular(_)) => existed,
                    _ => false,
                };
                if !still {
                    return Err(Refused::Changed.into());
                }
                if existed {
                    tmp.persist(&dest).map_err(|e| e.error)?;
                } else {
                    tmp.persist_noclobber(&dest).map_err(|e| e.error)?;
                }
                Ok(())
            }
            OutFile::Direct(mut f) => f.flush(),
        }
    }

    fn file(&mut self) -> &mut File {
        match self {
            OutFile::Atomic(tmp, _, _) => tmp.as_file_mut(),
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
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};

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
        assert!(own_descriptor(Path::new("/dev/stdout")));
        assert!(!own_descriptor(Path::new("/dev/fd/1x")));
        assert!(!own_descriptor(Path::new("/proc/self/fd/")));
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn another_users_file_or_fifo_is_never_written() {
        if euid() != 0 {
            // Only root can make a file of another uid here; the root run covers it.
            return;
        }
        let d = dir("owner");
        let theirs = d.join("theirs.trace");
        std::fs::write(&theirs, "their data").unwrap();
        std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
        // Their FIFO too: root's output would reach whoever reads it.
        let fifo = d.join("their.fifo");
        mkfifo(&fifo, 0o666);
        std::os::unix::fs::chown(&fifo, Some(65534), Some(65534)).unwrap();
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
}
