//! `w` in the live view: what the view holds, written as a trace file.

use std::path::Path;

use crate::tracefile::{probe_set_name, CaptureMode, Header, TraceFileError, TraceWriter};

use super::state::AppState;

/// Writes the window to a new `tracer-live-SECONDS[-N].trace` in the current directory
/// (never over an existing file); returns its name and the number of events.
pub fn write_new(s: &AppState) -> Result<(std::path::PathBuf, u64), TraceFileError> {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut last = None;
    for n in 0..100 {
        let path = match n {
            0 => format!("tracer-live-{secs}.trace"),
            n => format!("tracer-live-{secs}-{n}.trace"),
        };
        match write_window(s, Path::new(&path)) {
            Err(TraceFileError::Write(e)) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                last = Some(e);
            }
            r => return r.map(|n| (path.into(), n)),
        }
    }
    Err(TraceFileError::Write(last.unwrap_or_else(|| {
        std::io::Error::other("no free file name")
    })))
}

/// Writes the live view's window to a new file at `path` (mode 0600, never over an existing
/// file): the processes seen at the start as the snapshot, then the newest events kept.
/// Returns how many events were written.
pub fn write_window(s: &AppState, path: &Path) -> Result<u64, TraceFileError> {
    let (seed, events, cut) = &s.capture.window;
    let mut header = Header::for_this_host(CaptureMode::Unknown);
    header.snapshot = seed.iter().map(Into::into).collect();
    header.set_snapshot_scope(s.capture.seed_scope);
    let probes = probe_set_name(!s.sched_probes());
    header.extra.push(("probes".into(), probes.into()));
    header
        .extra
        .push(("written_from".into(), format!("live view {}", s.title)));
    if *cut {
        header.extra.push((
            "note".into(),
            "the live view kept only its newest events; earlier ones are not in this file".into(),
        ));
    }
    let file = crate::outfile::create_new_private(path).map_err(TraceFileError::Write)?;
    let mut w = TraceWriter::new(file, &header)?;
    for ev in events {
        w.write_event(ev)?;
    }
    w.set_counters(s.status.drops, 0, 0);
    w.finish()?;
    Ok(events.len() as u64)
}
