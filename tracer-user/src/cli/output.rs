//! Command output on stdout: buffered, locked, and honest about write errors. A reader that
//! went away (`tracer tree F | head -1`) ends the command quietly with status 0; any other
//! write error (`> /dev/full`: no space left on device) is one line and a non-zero status.

use anyhow::Result;
use std::io::{self, BufWriter, Write};

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

/// Prints what the user must hear about an input once read ([`tracer::Input::notes`]) as
/// warnings on stderr, one line each.
pub fn print_input_notes(input: &tracer::Input, stopped_by_error: bool) {
    for n in input.notes(stopped_by_error) {
        eprintln!("tracer: warning: {}: {n}", input.path.display());
    }
}
