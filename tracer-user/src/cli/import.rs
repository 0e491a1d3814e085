//! `tracer import-strace`: an `strace -f` log into a trace file.

use super::reading::{finish_input, open_input, until_error};
use anyhow::{Context, Result};
use std::path::PathBuf;
use std::process::ExitCode;
use tracer::tracefile::{CaptureMode, Header, TraceWriter};

#[derive(clap::Args, Debug)]
pub struct ImportArgs {
    /// An `strace -f` log (or a trace file or `demo:NAME`, re-encoded); `-` reads stdin.
    pub log: PathBuf,
    /// The other files of an `strace -ff -o PREFIX` set, given one by one (`PREFIX.*`); the
    /// set can also be named by PREFIX alone.
    #[arg(value_name = "MORE")]
    pub more: Vec<PathBuf>,
    /// Trace file to write.
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
}

pub fn import_strace(mut args: ImportArgs) -> Result<ExitCode> {
    args.log = super::reading::one_recording(&args.log, &args.more)?;
    let mut input = open_input(&args.log)?;
    let mut header = Header::for_this_host(CaptureMode::Import {
        format: input.kind.name().to_string(),
        source: args.log.display().to_string(),
    });
    if let Some(h) = input.header() {
        // Re-encoding a trace file: keep what it says about its capture.
        header = h.clone();
    }
    // Written beside the target and renamed at the end: `-o` naming the input reads it whole.
    let file = super::output::out_file(Some(&args.output))?
        .context("-o -: a trace file is binary; name a file")?;
    let mut w = TraceWriter::new(std::io::BufWriter::with_capacity(256 << 10, file), &header)
        .with_context(|| format!("cannot write {}", tracer::escape::path(&args.output)))?;
    let mut err = None;
    for ev in until_error(&mut input, &mut err) {
        w.write_event(&ev)?;
    }
    let n = w.stats().events;
    let file = w.finish()?.into_inner().map_err(|e| e.into_error())?;
    finish_input(&input, err, false)?;
    super::output::commit(file, &args.output)?;
    tracer::say!("tracer: wrote {} ({n} events)", args.output.display());
    Ok(ExitCode::SUCCESS)
}
