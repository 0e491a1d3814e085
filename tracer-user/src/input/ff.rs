//! `strace -ff -o PREFIX` writes one file per task, `PREFIX.PID`, its lines without a pid.
//! The set is read as one log: each line given its file's pid (as `-f -o FILE` writes it) and
//! the files merged by the lines' `-t`/`-tt`/`-ttt` stamps (a line's stamp is its call's entry,
//! so a parent's clone comes before its child's first line). Files without such stamps (none,
//! or `-r`'s, which count from each file's line before) cannot be merged by time: they are
//! read whole, one after another, in pid order, and the input says so.
//!
//! Bounded: at most `MAX_FILES` files, at most `OPEN_AT_ONCE` open at a time (the others
//! are opened again where they were left).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// Most files a set is read with.
pub const MAX_FILES: usize = 100_000;
/// Files held open at once.
const OPEN_AT_ONCE: usize = 256;
/// A line of a file is cut at this many bytes (the importer's own limit).
const MAX_LINE: usize = crate::strace::MAX_LINE_BYTES;

/// The files of the set `prefix` names: every `PREFIX.PID` beside it, by pid. `None` when
/// there is none.
pub fn files_of(prefix: &Path) -> std::io::Result<Option<Vec<(u32, PathBuf)>>> {
    let Some(name) = prefix.file_name().and_then(|n| n.to_str()) else {
        return Ok(None);
    };
    let dir = match prefix.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(&dir)? {
        let entry = entry?;
        let file = entry.file_name();
        let Some(pid) = file
            .to_str()
            .and_then(|f| f.strip_prefix(name)?.strip_prefix('.'))
            .filter(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if files.len() == MAX_FILES {
            return Err(std::io::Error::other(format!(
                "more than {MAX_FILES} files in the strace -ff set"
            )));
        }
        files.push((pid, dir.join(file)));
    }
    files.sort();
    Ok((!files.is_empty()).then_some(files))
}

/// One file of the set, read a line at a time.
struct Cursor {
    pid: u32,
    path: PathBuf,
    /// Where its next line starts.
    offset: u64,
    reader: Option<BufReader<File>>,
    last_used: u64,
    /// Time of day: a day is added when the clock goes back by more than 12 h.
    day_ns: u64,
    last_ns: Option<u64>,
    /// The key of its line before (a line without a stamp keeps it).
    key: u64,
}

/// The set's lines in one stream, each `PID LINE\n`.
pub struct Merged {
    cursors: Vec<Cursor>,
    /// (key, pid, cursor) of each file's next line, whose text is in `next`.
    heap: BinaryHeap<Reverse<(u64, u32, usize)>>,
    next: Vec<Option<Vec<u8>>>,
    out: Vec<u8>,
    at: usize,
    tick: u64,
    open: usize,
    by_time: bool,
}

impl Merged {
    /// Opens the set `files` (from [`files_of`]).
    pub fn new(files: Vec<(u32, PathBuf)>) -> std::io::Result<Merged> {
        let mut m = Merged {
            next: (0..files.len()).map(|_| None).collect(),
            cursors: files
                .into_iter()
                .map(|(pid, path)| Cursor {
                    pid,
                    path,
                    offset: 0,
                    reader: None,
                    last_used: 0,
                    day_ns: 0,
                    last_ns: None,
                    key: 0,
                })
                .collect(),
            heap: BinaryHeap::new(),
            out: Vec::new(),
            at: 0,
            tick: 0,
            open: 0,
            by_time: true,
        };
        for i in 0..m.cursors.len() {
            m.advance(i)?;
        }
        // Merged by time only when every file's first line has an absolute stamp.
        m.by_time = m.next.iter().flatten().all(|l| {
            std::str::from_utf8(l)
                .ok()
                .and_then(crate::strace::ff_stamp)
                .is_some_and(|(absolute, _)| absolute)
        });
        if !m.by_time {
            m.heap = (0..m.cursors.len())
                .filter(|&i| m.next[i].is_some())
                .map(|i| Reverse((0, m.cursors[i].pid, i)))
                .collect();
        }
        Ok(m)
    }

    /// The files were merged by their time stamps (else read in pid order).
    pub fn by_time(&self) -> bool {
        self.by_time
    }

    /// How many files the set has.
    pub fn files(&self) -> usize {
        self.cursors.len()
    }

    /// Reads file `i`'s next line into `next[i]` and queues it.
    fn advance(&mut self, i: usize) -> std::io::Result<()> {
        self.ensure_open(i)?;
        let c = &mut self.cursors[i];
        let Some(reader) = c.reader.as_mut() else {
            return Ok(());
        };
        let mut line = Vec::new();
        let n = reader
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut line)?;
        if n == 0 {
            c.reader = None;
            self.open -= 1;
            self.next[i] = None;
            return Ok(());
        }
        c.offset += n as u64;
        if line.last() == Some(&b'\n') {
            line.pop();
        } else if line.len() > MAX_LINE {
            // the rest of an overlong line is skipped
            reader
                .skip_until(b'\n')
                .map(|skipped| c.offset += skipped as u64)?;
        }
        let stamp = std::str::from_utf8(&line)
            .ok()
            .and_then(crate::strace::ff_stamp);
        if let Some((true, ns)) = stamp {
            if c.last_ns.is_some_and(|last| ns + 43_200_000_000_000 < last) {
                c.day_ns += 86_400_000_000_000;
            }
            c.last_ns = Some(ns);
            c.key = c.day_ns.saturating_add(ns);
        }
        let key = if self.by_time { c.key } else { 0 };
        self.heap.push(Reverse((key, c.pid, i)));
        self.next[i] = Some(line);
        Ok(())
    }

    /// File `i` open at its offset, the least recently used closed past [`OPEN_AT_ONCE`].
    fn ensure_open(&mut self, i: usize) -> std::io::Result<()> {
        self.tick += 1;
        self.cursors[i].last_used = self.tick;
        if self.cursors[i].reader.is_some() {
            return Ok(());
        }
        if self.open >= OPEN_AT_ONCE {
            if let Some(lru) = (0..self.cursors.len())
                .filter(|&k| k != i && self.cursors[k].reader.is_some())
                .min_by_key(|&k| self.cursors[k].last_used)
            {
                self.cursors[lru].reader = None;
                self.open -= 1;
            }
        }
        let c = &mut self.cursors[i];
        let mut f = File::open(&c.path)?;
        f.seek(SeekFrom::Start(c.offset))?;
        c.reader = Some(BufReader::with_capacity(16 << 10, f));
        self.open += 1;
        Ok(())
    }
}

impl Read for Merged {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.at == self.out.len() {
            let Some(Reverse((_, pid, i))) = self.heap.pop() else {
                return Ok(0);
            };
            self.out.clear();
            self.at = 0;
            if let Some(line) = self.next[i].take() {
                self.out.extend_from_slice(pid.to_string().as_bytes());
                self.out.push(b' ');
                self.out.extend_from_slice(&line);
                self.out.push(b'\n');
            }
            self.advance(i)?;
        }
        let n = buf.len().min(self.out.len() - self.at);
        buf[..n].copy_from_slice(&self.out[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(dir: &Path, files: &[(u32, &str)]) -> Vec<(u32, PathBuf)> {
        for (pid, text) in files {
            std::fs::write(dir.join(format!("log.{pid}")), text).unwrap();
        }
        std::fs::write(dir.join("log.x1"), "not of the set").unwrap();
        files_of(&dir.join("log")).unwrap().expect("a set")
    }

    fn merged(files: Vec<(u32, PathBuf)>) -> (String, bool) {
        let mut m = Merged::new(files).unwrap();
        let mut s = String::new();
        m.read_to_string(&mut s).unwrap();
        (s, m.by_time())
    }

    #[test]
    fn files_are_merged_by_their_stamps_with_their_pids() {
        let dir = tempfile::tempdir().unwrap();
        let files = set(
            dir.path(),
            &[
                (10, "12:00:00.000001 clone(child_stack=NULL, flags=SIGCHLD) = 11\n12:00:00.000005 +++ exited with 0 +++\n"),
                (11, "12:00:00.000002 execve(\"/bin/true\", [\"true\"], 0x0 /* 0 vars */) = 0\n12:00:00.000004 +++ exited with 0 +++\n"),
            ],
        );
        assert_eq!(files.iter().map(|f| f.0).collect::<Vec<_>>(), [10, 11]);
        let (text, by_time) = merged(files);
        assert!(by_time);
        let pids: Vec<&str> = text.lines().map(|l| l.split(' ').next().unwrap()).collect();
        assert_eq!(pids, ["10", "11", "11", "10"], "{text}");
    }

    #[test]
    fn files_without_stamps_are_read_in_pid_order_and_few_are_open() {
        let dir = tempfile::tempdir().unwrap();
        let texts: Vec<(u32, String)> = (1..=300u32)
            .map(|p| (p, format!("exit_group({p}) = ?\n+++ exited with 0 +++\n")))
            .collect();
        let refs: Vec<(u32, &str)> = texts.iter().map(|(p, t)| (*p, t.as_str())).collect();
        let (text, by_time) = merged(set(dir.path(), &refs));
        assert!(!by_time);
        assert_eq!(text.lines().count(), 600);
        assert!(text.starts_with("1 exit_group(1) = ?\n1 +++ exited with 0 +++\n2 exit_group(2)"));
    }
}
