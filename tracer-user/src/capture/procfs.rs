//! /proc snapshot of the processes that exist when tracing starts.

use crate::event::program::{Installed, Program, CNI_DIRS, INSTALLED};
use crate::event::{ExeFile, ExecCred, PidNs, SnapshotProcess};
use std::fs;
use std::os::unix::fs::MetadataExt;
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
    read_process_in(root, pid, &HostNs::of(root))
}

/// The user and mount namespaces of the host: PID 1's, or where even root may not read PID
/// 1's links (a VM's init kept from ptrace), kthreadd's (PID 2: kernel threads run in the
/// initial namespaces, init_nsproxy), else the tracer's own. A process in others is a
/// container's, whatever its uid. With them, the runtimes' files installed on the host, which
/// say what program a process runs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostNs {
    /// `/proc/1/ns/user`'s inode (0 when unreadable).
    pub user: u64,
    /// `/proc/1/ns/mnt`'s inode (0 when unreadable).
    pub mnt: u64,
    /// [`installed_programs`], read with them.
    pub programs: Installed,
}

impl HostNs {
    /// PID 1's namespaces under `root` (a /proc mount), else kthreadd's, else this process's.
    pub fn of(root: &Path) -> HostNs {
        let (init, me) = (root.join("1"), root.join("self"));
        let kthreadd = root.join("2");
        let is_kthreadd = fs::read_to_string(kthreadd.join("stat"))
            .ok()
            .and_then(|s| parse_stat(&s))
            .is_some_and(|(comm, ppid)| comm == "kthreadd" && ppid == 0);
        let read = |kind| {
            ns_inode(&init, kind)
                .or_else(|| ns_inode(&kthreadd, kind).filter(|_| is_kthreadd))
                .or_else(|| ns_inode(&me, kind))
        };
        HostNs {
            user: read("user").unwrap_or(0),
            mnt: read("mnt").unwrap_or(0),
            programs: installed_programs(),
        }
    }
}

/// Files read from one CNI directory at most (a plugin directory holds a few dozen).
const MAX_CNI_FILES: usize = 512;

/// The runtimes' files on this host by device and inode: each of [`INSTALLED`]'s paths and the
/// files of [`CNI_DIRS`] (symlinks followed: the kernel runs the file they lead to), when it is
/// a regular file in a directory only root may change (a group that may rename files there
/// could put any file of root's, hard-linked, at a runtime's path).
pub fn installed_programs() -> Installed {
    let mut table = Installed::default();
    let mut add = |path: &Path, program| {
        let Some(at) = on_host(path) else { return };
        let safe_dir = at
            .parent()
            .and_then(|d| fs::metadata(d).ok())
            .is_some_and(|m| m.uid() == 0 && m.mode() & 0o022 == 0);
        match fs::metadata(&at) {
            Ok(m) if safe_dir && m.is_file() => table.add(m.dev(), m.ino(), program),
            _ => {}
        }
    };
    for (program, paths) in INSTALLED {
        for path in *paths {
            add(Path::new(path), *program);
        }
    }
    for dir in CNI_DIRS {
        let Some(entries) = on_host(Path::new(dir)).and_then(|d| fs::read_dir(d).ok()) else {
            continue;
        };
        for e in entries.flatten().take(MAX_CNI_FILES) {
            add(&Path::new(dir).join(e.file_name()), Program::CniPlugin);
        }
    }
    table
}

/// `path` as the host's PID 1 sees it: through `/proc/1/root` (an agent in a container of
/// its own, in the host's pid namespace, sees the node's files there), its symbolic links
/// followed there too (an absolute target would otherwise resolve in the agent's root); the
/// path itself where `/proc/1/root` cannot be read.
fn on_host(path: &Path) -> Option<std::path::PathBuf> {
    let root = Path::new("/proc/1/root");
    if fs::symlink_metadata(root.join("usr")).is_err() {
        return Some(path.to_path_buf());
    }
    let mut p = path.to_path_buf();
    for _ in 0..8 {
        let at = root.join(p.strip_prefix("/").unwrap_or(&p));
        let m = fs::symlink_metadata(&at).ok()?;
        if !m.file_type().is_symlink() {
            return Some(at);
        }
        let target = fs::read_link(&at).ok()?;
        p = match target.is_absolute() {
            true => target,
            false => p.parent()?.join(target),
        };
    }
    None
}

/// The inode of the process at `dir`'s namespace `kind` (`ns/mnt` → `mnt:[INUM]`).
pub fn ns_inode(dir: &Path, kind: &str) -> Option<u64> {
    let link = fs::read_link(dir.join("ns").join(kind)).ok()?;
    let link = link.to_string_lossy();
    link.strip_prefix(kind)?
        .strip_prefix(":[")?
        .strip_suffix(']')?
        .parse()
        .ok()
}

/// `Uid:\t1000\t0\t0\t0` (real, effective, saved, filesystem) → the four uids.
pub fn parse_uids(status: &str) -> Option<[u32; 4]> {
    let line = status.lines().find_map(|l| l.strip_prefix("Uid:"))?;
    let mut ids = line.split_whitespace().map(str::parse::<u32>);
    let mut out = [0u32; 4];
    for slot in out.iter_mut() {
        *slot = ids.next()?.ok()?;
    }
    Some(out)
}

/// What /proc shows of a process's credentials and executable, in the terms the exec probe
/// reports them (its real uid apart). /proc shows whether a user namespace is the host's, not
/// its depth: any other is level 1.
fn cred_of(dir: &Path, status: &str, pidns: Option<PidNs>, host: &HostNs) -> Option<ExecCred> {
    let [_, euid, _, fsuid] = parse_uids(status)?;
    let user = ns_inode(dir, "user")?;
    let mnt = ns_inode(dir, "mnt")?;
    let exe = fs::metadata(dir.join("exe")).ok().map(|m| ExeFile {
        dev: m.dev(),
        ino: m.ino(),
        uid: m.uid(),
        mode: m.mode(),
        nlink: m.nlink() as u32,
    });
    Some(ExecCred {
        euid,
        fsuid,
        userns_level: u32::from(host.user == 0 || user != host.user),
        pidns_level: pidns?.level,
        mnt_ns: mnt as u32,
        host_mnt: host.mnt != 0 && mnt == host.mnt,
        program: exe
            .filter(|_| !host.programs.is_empty())
            .map(|x| host.programs.program_of(&x)),
        exe,
    })
}

/// [`read_process`] with the host's namespaces already read.
pub fn read_process_in(root: &Path, pid: u32, host: &HostNs) -> Option<SnapshotProcess> {
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
    let status = fs::read_to_string(dir.join("status")).unwrap_or_default();
    let uid = parse_uids(&status).map_or(u32::MAX, |u| u[0]);
    let cred = cred_of(&dir, &status, ns, host);
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
        uid,
        cred,
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
    let host = HostNs::of(root);
    pids.into_iter()
        .filter_map(|p| read_process_in(root, p, &host))
        .collect()
}

pub use crate::tracefile::SnapshotScope;

/// Whether a snapshot process is container machinery, by its comm, its exe's or its `argv[0]`'s
/// basename.
pub fn is_machinery(p: &SnapshotProcess) -> bool {
    let base = |s: &str| s.rsplit('/').next().unwrap_or("").to_string();
    [
        Some(p.comm.clone()),
        p.exe.as_deref().map(base),
        p.argv.first().map(|a| base(a)),
    ]
    .iter()
    .flatten()
    .any(|n| crate::names::is_runtime_machinery(n))
}

/// Out of `snap`: `followed` (with its descendants, if asked), the container machinery, and
/// the ancestors of all of them ([`SnapshotScope::Followed`]).
pub fn followed_scope(
    snap: Vec<SnapshotProcess>,
    followed: u32,
    descendants: bool,
) -> Vec<SnapshotProcess> {
    if descendants {
        crate::source::lineage_where(snap, is_machinery, Some(followed))
    } else {
        crate::source::lineage_where(snap, |p| p.pid == followed || is_machinery(p), None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A /proc of links: `pid` → (its `stat`, its `ns/mnt` and `ns/user` link text).
    fn fake_proc(entries: &[(&str, Option<&str>, Option<&str>)]) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        for (pid, stat, ns) in entries {
            let dir = root.path().join(pid);
            fs::create_dir_all(dir.join("ns")).unwrap();
            if let Some(stat) = stat {
                fs::write(dir.join("stat"), stat).unwrap();
            }
            if let Some(n) = ns {
                for kind in ["mnt", "user"] {
                    let link = format!("{kind}:[{n}]");
                    std::os::unix::fs::symlink(link, dir.join("ns").join(kind)).unwrap();
                }
            }
        }
        root
    }

    #[test]
    fn the_hosts_namespaces_are_pid_1s_else_kthreadds_else_our_own() {
        let kthreadd = Some("2 (kthreadd) S 0 0 0");
        let host = |e: &[(&str, Option<&str>, Option<&str>)]| {
            let h = HostNs::of(fake_proc(e).path());
            (h.user, h.mnt)
        };
        let both = |n| (n, n);
        let me = ("self", None, Some("300"));
        assert_eq!(
            host(&[("1", None, Some("100")), ("2", kthreadd, Some("200")), me]),
            both(100)
        );
        // PID 1's links unreadable (here: absent): the kernel threads' initial namespaces.
        assert_eq!(
            host(&[("1", None, None), ("2", kthreadd, Some("200")), me]),
            both(200)
        );
        // A PID 2 that is not kthreadd (a container's pid namespace) is nobody's reference.
        let other = Some("2 (sh) S 1 0 0");
        assert_eq!(
            host(&[("1", None, None), ("2", other, Some("200")), me]),
            both(300)
        );
    }

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

    fn proc(pid: u32, ppid: u32, comm: &str, argv0: &str) -> SnapshotProcess {
        SnapshotProcess {
            pid,
            ppid,
            comm: comm.into(),
            exe: None,
            argv: vec![argv0.into()],
            threads: vec![pid],
            subreaper: false,
            ns: None,
            launched: false,
            cgroup: None,
            uid: 0,
            cred: None,
        }
    }

    #[test]
    fn followed_scope_keeps_lineage_and_machinery_only() {
        let snap = vec![
            proc(1, 0, "init", "/sbin/init"),
            proc(2, 1, "sshd", "sshd"),
            proc(3, 2, "bash", "-bash"),
            proc(4, 3, "tracer", "tracer"),
            proc(5, 4, "sh", "sh"),
            proc(6, 1, "containerd", "/usr/bin/containerd"),
            proc(7, 1, "containerd-shim", "/usr/bin/containerd-shim-runc-v2"),
            proc(8, 7, "nginx", "nginx: master"),
            proc(9, 1, "cron", "/usr/sbin/cron"),
            proc(10, 9, "backup", "backup --password=x"),
            proc(11, 2, "node", "/opt/kubelet/bin/kubelet"),
        ];
        let kept: Vec<u32> = followed_scope(snap.clone(), 3, true)
            .iter()
            .map(|p| p.pid)
            .collect();
        // 3's ancestors and descendants; containerd, the shim and kubelet (by argv[0]) with
        // theirs; never the shim's container, cron or its child.
        assert_eq!(kept, vec![1, 2, 3, 4, 5, 6, 7, 11]);
        // A command the capture started: its descendants come as events, not from /proc.
        let kept: Vec<u32> = followed_scope(snap, 3, false)
            .iter()
            .map(|p| p.pid)
            .collect();
        assert_eq!(kept, vec![1, 2, 3, 6, 7, 11]);
    }
}
