//! Command output on stdout: buffered, locked, and honest about write errors. A reader that
//! went away (`tracer tree F | head -1`) ends the command quietly with status 0; any other
//! write error (`> /dev/full`: no space left on device) is one line and a non-zero status.

use anyhow::{Context, Result};
use std::io::{self, BufWriter, Write};
use std::path::Path;
use tracer::outfile::{OutFile, Refused};

/// Format words `-o` is mistaken for (`tracer tree F -o json`, a kubectl habit).
const FORMAT_WORDS: &[&str] = &[
    "json", "jsonl", "yaml", "dot", "text", "svg", "html", "perfetto",
];

/// Checks an `-o` path: a bare format word is a one-line error suggesting `--format` (a file
/// of that name is `-o ./json`). Every `-o` goes through it.
pub fn out_path(p: &Path) -> Result<&Path> {
    match p.to_str().filter(|s| FORMAT_WORDS.contains(s)) {
        Some(word) => anyhow::bail!(
            "-o {word} names the output file; for the format say --format {word} (-o ./{word} writes a file of that name)"
        ),
        None => Ok(p),
    }
}

/// The file `-o` names ([`out_path`] checked), written atomically; `None` for stdout
/// (absent or `-`).
pub fn out_file(p: Option<&Path>) -> Result<Option<OutFile>> {
    let Some(p) = p.filter(|p| p.as_os_str() != "-") else {
        return Ok(None);
    };
    let cannot = || format!("cannot create {}", tracer::escape::path(p));
    let f = OutFile::atomic(out_path(p)?).with_context(cannot)?;
    // Written in place (`-o /proc/self/fd/N`, `-o /dev/stdout`): onto the recording being
    // read it would overwrite what is still to be read. A file is replaced only at the end,
    // so `-o` naming the input file itself is fine.
    if f.identity().is_some_and(is_an_input) {
        return Err(anyhow::Error::new(io::Error::from(Refused::IsTheInput)).context(cannot()));
    }
    Ok(Some(f))
}

/// Runs `f` on the file `-o` names (created only when `f` succeeds; see [`out_file`]), or on
/// stdout ([`to_stdout`]) without one.
pub fn to_output(p: Option<&Path>, f: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> Result<()> {
    let (Some(mut file), Some(p)) = (out_file(p)?, p) else {
        return to_stdout(f);
    };
    let mut out = BufWriter::with_capacity(64 << 10, &mut file);
    f(&mut out)
        .and_then(|()| out.flush())
        .with_context(|| format!("cannot write {}", tracer::escape::path(p)))?;
    drop(out);
    commit(file, p)
}

/// Puts a finished output file in place.
pub fn commit(file: OutFile, p: &Path) -> Result<()> {
    file.commit()
        .with_context(|| format!("cannot write {}", tracer::escape::path(p)))
}

/// What a failed write means for the command: nothing for a closed pipe, else an error.
pub fn check_write(res: io::Result<()>) -> Result<()> {
    match res {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(anyhow::Error::new(e).context("cannot write the output")),
    }
}

/// Runs `f` on a buffered, locked stdout and flushes it; see [`check_write`].
pub fn to_stdout(f: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> Result<()> {
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(64 << 10, stdout.lock());
    check_write(f(&mut out).and_then(|()| out.flush()))
}

/// Prints a viewer's frame as text (`--screenshot`); see [`check_write`].
pub fn print_screenshot(frame: &str) -> Result<()> {
    to_stdout(|out| out.write_all(frame.as_bytes()))
}

/// Prints what the user must hear about an input once read ([`tracer::Input::notes`]) as
/// warnings on stderr, one line each.
pub fn print_input_notes(input: &tracer::Input, stopped_by_error: bool) {
    for n in input.notes(stopped_by_error) {
        tracer::say!("tracer: warning: {}: {n}", input.path.display());
    }
}

/// The device and inode of every file opened as an input (`-`: standard input's), so that an
/// output written in place onto one of them is refused ([`out_file`]); `reading::open_input`
/// notes each.
static INPUTS: std::sync::Mutex<Vec<(u64, u64)>> = std::sync::Mutex::new(Vec::new());

/// Notes the file at `path` (`-`: standard input) as one being read.
pub fn remember_input(path: &Path) {
    use std::os::unix::fs::MetadataExt;
    let meta = match path.as_os_str() == "-" {
        true => std::fs::metadata("/dev/stdin"),
        false => std::fs::metadata(path),
    };
    if let Ok(m) = meta {
        INPUTS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((m.dev(), m.ino()));
    }
}

/// Whether `id` (device, inode) is a file opened as an input.
fn is_an_input(id: (u64, u64)) -> bool {
    INPUTS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .contains(&id)
}
