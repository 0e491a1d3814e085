//! Output files written safely: the tool runs as root and writes argv, which can hold secrets.
//!
//! * A new file is created with mode 0600, never a wider one.
//! * A target that is not a regular file (`/dev/null`, a terminal, a FIFO) is written to
//!   directly, as `strace -o /dev/null` does: opened without `O_CREAT` or `O_TRUNC`, and its
//!   mode and owner are never touched.
//! * A symlink is followed: what is written or replaced is the file it points to.
//! * [`OutFile::atomic`] (exports, `import-strace`): the output goes to a temporary file in the
//!   target's directory, renamed over the target only by [`OutFile::commit`]. Until then the
//!   target is untouched, so a failed write leaves it as it was, and `-o` naming the input
//!   still reads the whole input.
//! * [`create_streaming`] (`record`, `tui --record`, `trace -o`): the file is created at its
//!   final path with `O_EXCL` so it can be read while it grows and a recording killed with
//!   SIGKILL leaves every whole frame where the user asked for it. An existing regular file is
//!   first removed (not truncated in place: other hard links to it keep their content, and its
//!   mode is never changed); `O_EXCL` then refuses anything that appears at the path meanwhile
//!   (a planted symlink).

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// What is at an output path.
enum Target {
    /// Nothing: a new file is created there.
    Missing(PathBuf),
    /// A regular file (symlinks resolved).
    Regular(PathBuf),
    /// A device, FIFO or socket: written to in place.
    Special(PathBuf),
}

fn target(path: &Path) -> io::Result<Target> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => Ok(Target::Regular(std::fs::canonicalize(path)?)),
        Ok(m) if m.is_dir() => Err(io::Error::new(
            io::ErrorKind::IsADirectory,
            "is a directory",
        )),
        Ok(_) => Ok(Target::Special(path.to_path_buf())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Target::Missing(path.to_path_buf())),
        Err(e) => Err(e),
    }
}

/// Opens a device or FIFO for writing as it is (no create, no truncate, no mode change).
fn open_special(path: &Path) -> io::Result<File> {
    OpenOptions::new().write(true).open(path)
}

/// Creates `path` with mode 0600, failing if anything exists there (a name the tool chose
/// itself, where nothing may be replaced).
pub fn create_new_private(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
}

/// A file for a writer that streams (see the module documentation): created at `path`, 0600.
pub fn create_streaming(path: &Path) -> io::Result<File> {
    match target(path)? {
        Target::Special(p) => open_special(&p),
        Target::Missing(p) => create_new_private(&p),
        Target::Regular(p) => {
            std::fs::remove_file(&p)?;
            create_new_private(&p)
        }
    }
}

/// An output being written: a temporary file to be renamed over the target, or a device or
/// FIFO written in place.
#[derive(Debug)]
pub enum OutFile {
    /// A 0600 temporary file in the target's directory, and the target.
    Atomic(tempfile::NamedTempFile, PathBuf),
    /// A device or FIFO.
    Direct(File),
}

impl OutFile {
    /// Starts an output that replaces `path` only when [`OutFile::commit`] is called.
    pub fn atomic(path: &Path) -> io::Result<OutFile> {
        let dest = match target(path)? {
            Target::Special(p) => return Ok(OutFile::Direct(open_special(&p)?)),
            Target::Missing(p) | Target::Regular(p) => p,
        };
        let dir = match dest.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        // tempfile creates it O_EXCL with mode 0600, and removes it if we never commit.
        let tmp = tempfile::Builder::new()
            .prefix(".tracer-")
            .suffix(".tmp")
            .tempfile_in(dir)?;
        Ok(OutFile::Atomic(tmp, dest))
    }

    /// Flushes and puts the output in place (the rename; nothing for a device or FIFO).
    pub fn commit(self) -> io::Result<()> {
        match self {
            OutFile::Atomic(tmp, dest) => {
                tmp.as_file().sync_all()?;
                tmp.persist(&dest).map_err(|e| e.error)?;
                Ok(())
            }
            OutFile::Direct(mut f) => f.flush(),
        }
    }

    fn file(&mut self) -> &mut File {
        match self {
            OutFile::Atomic(tmp, _) => tmp.as_file_mut(),
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
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: `c` is a valid NUL-terminated path for the duration of the call.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o640) }, 0);
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
    fn streaming_replaces_a_file_without_touching_it_and_follows_symlinks() {
        let d = dir("stream");
        let old = d.join("old.trace");
        std::fs::write(&old, "previous recording").unwrap();
        std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o644)).unwrap();
        let other = d.join("hardlink");
        std::fs::hard_link(&old, &other).unwrap();
        let link = d.join("link.trace");
        std::os::unix::fs::symlink(&old, &link).unwrap();
        let mut f = create_streaming(&link).unwrap();
        f.write_all(b"new").unwrap();
        drop(f);
        assert_eq!(std::fs::read(&old).unwrap(), b"new");
        assert_eq!(mode(&old), 0o600);
        assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
        // The other name of the old file keeps the old content and mode.
        assert_eq!(std::fs::read(&other).unwrap(), b"previous recording");
        assert_eq!(mode(&other), 0o644);
        assert!(create_streaming(&d).is_err());
        std::fs::remove_dir_all(&d).unwrap();
    }
}
