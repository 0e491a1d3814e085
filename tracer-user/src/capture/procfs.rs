//! /proc snapshot of the processes that exist when tracing starts.

use crate::event::PidNs;
use crate::event::SnapshotProcess;
use std::fs;
use std::path::Path;

/// `pid`'s ppid and comm from /proc/PID/stat (comm may contain spaces and parentheses).
pub fn parse_stat(stat: &str) -> Option<(String, u32)> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let comm = stat.get(open + 1..close)?.to_string();
    let mut rest = stat.get(close + 1..)?.split_whitespace();
    let _state = rest.next()?;
    let ppid = rest.next()?.parse().ok()?;
    Some((comm, ppid))
}

/// Reads one process; `None` if it vanished meanwhile.
pub fn read_process(root: &Path, pid: u32) -> Option<SnapshotProcess> {
    let dir = root.join(pid.to_string());
    let (comm, ppid) = parse_stat(&fs::read_to_string(dir.join("stat")).ok()?)?;
    // Kernel threads have no exe link.
    let exe = fs::read_link(dir.join("exe"))
        .ok()
        .map(|p| p.to_string_lossy().into_owned());
    let argv = fs::read(dir.join("cmdline"))
        .map(|b| {
            b.split(|&c| c == 0)
                .filter(|s| !s.is_empty())
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .collect()
        })
        .unwrap_or_default();
    let mut threads: Vec<u32> = fs::read_dir(dir.join("task"))
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    threads.sort_unstable();
    let ns = pid_ns(&dir);
    let cgroup = super::cgroup::reported().and_then(|h| {
        let text = fs::read_to_string(dir.join("cgroup")).ok()?;
        super::cgroup::path_in(&text, h)
    });
    // /proc does not show PR_SET_CHILD_SUBREAPER.
    Some(SnapshotProcess {
        pid,
        ppid,
        comm,
        exe,
        argv,
        threads,
        subreaper: false,
        ns,
        launched: false,
        cgroup,
    })
}

/// The pid namespace of the process at `dir` (`ns/pid` → `pid:[INUM]`) and its pid there
/// (the last `NSpid:` column of `status`; one column per level, the host's first).
fn pid_ns(dir: &Path) -> Option<PidNs> {
    let link = fs::read_link(dir.join("ns/pid")).ok()?;
    let inum = parse_ns_link(&link.to_string_lossy())?;
    let status = fs::read_to_string(dir.join("status")).ok()?;
    let (level, ns_pid) = parse_nspid(&status)?;
    Some(PidNs {
        inum,
        level,
        ns_pid,
    })
}

/// `pid:[4026531836]` → 4026531836.
pub fn parse_ns_link(link: &str) -> Option<u64> {
    link.strip_prefix("pid:[")?.strip_suffix(']')?.parse().ok()
}

/// `NSpid:\t8421\t1` → (level 1, pid 1 there).
pub fn parse_nspid(status: &str) -> Option<(u32, u32)> {
    let line = status.lines().find_map(|l| l.strip_prefix("NSpid:"))?;
    let pids: Vec<u32> = line
        .split_whitespace()
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    let level = u32::try_from(pids.len().checked_sub(1)?).ok()?;
    Some((level, *pids.last()?))
}

/// Every process under `/proc`, sorted by pid.
pub fn snapshot() -> Vec<SnapshotProcess> {
    snapshot_at(Path::new("/proc"))
}

/// Every process under `root` (a /proc mount), sorted by pid; unreadable entries are skipped.
pub fn snapshot_at(root: &Path) -> Vec<SnapshotProcess> {
    let mut pids: Vec<u32> = fs::read_dir(root)
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    pids.sort_unstable();
    pids.into_iter()
        .filter_map(|p| read_process(root, p))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_with_spaces_and_parens_in_comm() {
        let stat = "4086 (runc:[2:INIT] (x)) S 4074 4086 4086 0 -1 4194560";
        assert_eq!(parse_stat(stat), Some(("runc:[2:INIT] (x)".into(), 4074)));
        assert_eq!(parse_stat("garbage"), None);
        assert_eq!(parse_stat("1 (a) S notanumber"), None);
    }

    #[test]
    fn namespace_link_and_nspid() {
        assert_eq!(parse_ns_link("pid:[4026531836]"), Some(4026531836));
        assert_eq!(parse_ns_link("net:[1]"), None);
        assert_eq!(parse_nspid("Name:\tsh\nNSpid:\t8421\t1\n"), Some((1, 1)));
        assert_eq!(parse_nspid("NSpid:\t42\n"), Some((0, 42)));
        assert_eq!(parse_nspid("NSpid:\t\n"), None);
        assert_eq!(parse_nspid("NSpid:\t1\tx\n"), None);
    }

    #[test]
    fn reads_own_process() {
        let me = read_process(Path::new("/proc"), std::process::id()).expect("own /proc entry");
        assert_eq!(me.pid, std::process::id());
        assert!(me.threads.contains(&me.pid));
        let ns = me.ns.expect("own pid namespace");
        let link = fs::read_link("/proc/self/ns/pid").unwrap();
        assert_eq!(Some(ns.inum), parse_ns_link(&link.to_string_lossy()));
        assert!(!me.argv.is_empty());
    }
}
