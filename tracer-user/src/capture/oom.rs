//! The OOM killer's victim's memory cgroup and that cgroup's limit, read from /proc as soon
//! as its record is read (by the loop's enrichment stage, through [`super::ProcHost`]) —
//! only where the probe could not read them from the victim task (a kernel before 6.2, whose
//! mark_victim tracepoint passes a pid, not the task): under load the victim may be exiting
//! by then, and an exiting task shows no cgroup.
//!
//! oom:mark_victim fires in __oom_kill_process (mm/oom_kill.c) right after the victim's
//! SIGKILL; the probe wakes the reader at once. /proc/TID/cgroup stays readable until the
//! victim is reaped (a zombie keeps its css_set until release_task), so a prompt read finds
//! the cgroup the kernel charged. The memory hierarchy is found in this process's
//! mountinfo: cgroup v1 (`cgroup` mounts, the one with the `memory` option; a hybrid host has
//! its memory controller there) or v2 (the `cgroup2` mount).

use std::io::Read;
use std::path::{Component, Path, PathBuf};

use crate::event::OomInfo;

/// Bytes read of `/proc/TID/cgroup` (one line per v1 hierarchy, each path at most PATH_MAX).
const CGROUP_FILE_BYTES: u64 = 64 << 10;
/// Bytes read of `/proc/self/mountinfo`: a node with thousands of mounts stays within this;
/// the cgroup mounts come early (they are made at boot).
const MOUNTINFO_BYTES: u64 = 4 << 20;
/// Bytes read of a limit file: a 20-digit number and a newline.
const LIMIT_BYTES: u64 = 64;
/// cgroup v1 reports "no limit" as PAGE_COUNTER_MAX pages in bytes (0x7ffffffffffff000 on
/// x86-64, rounded to the page size elsewhere): anything from 2^62 is unlimited.
const V1_UNLIMITED: u64 = 1 << 62;

/// A process's memory cgroup: its path in the memory hierarchy and which version that is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryCgroup {
    /// The path in the hierarchy (`/kubepods/burstable/pod…/…`).
    pub path: String,
    /// cgroup v2 (the unified hierarchy).
    pub v2: bool,
}

/// The memory cgroup of a `/proc/PID/cgroup` text: the v1 line whose controllers include
/// `memory`, else the v2 `0::` line.
pub fn memory_cgroup(proc_cgroup: &str) -> Option<MemoryCgroup> {
    let lines = proc_cgroup.lines().filter_map(|l| {
        let mut it = l.splitn(3, ':');
        Some((it.next()?, it.next()?, it.next()?))
    });
    let mut v2 = None;
    for (id, controllers, path) in lines {
        if id != "0" && controllers.split(',').any(|c| c == "memory") {
            // v1 shows "/" for a task already exiting (kernel/cgroup/cgroup.c
            // proc_cgroup_show, PF_EXITING): the victim got there first, its cgroup is unknown.
            return (path != "/").then(|| MemoryCgroup {
                path: path.to_string(),
                v2: false,
            });
        }
        if id == "0" && controllers.is_empty() {
            v2 = Some(MemoryCgroup {
                path: path.to_string(),
                v2: true,
            });
        }
    }
    v2
}

/// A mount of a cgroup hierarchy: the directory of the hierarchy it shows (`root`) and
/// where it is mounted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mount {
    /// The hierarchy's directory at the mount's top (`/` unless a subtree is mounted).
    pub root: String,
    /// The mount point.
    pub point: PathBuf,
}

/// The memory hierarchy's mounts in a mountinfo text (proc(5)), v1 (`cgroup` with the
/// `memory` super option) or v2 (`cgroup2`), in order.
pub fn memory_mounts(mountinfo: &str, v2: bool) -> Vec<Mount> {
    mountinfo
        .lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let mut fields = left.split(' ');
            let root = fields.nth(3)?;
            let point = fields.next()?;
            let mut right = right.split(' ');
            let (fstype, _source, opts) = (right.next()?, right.next()?, right.next()?);
            let wanted = if v2 {
                fstype == "cgroup2"
            } else {
                fstype == "cgroup" && opts.split(',').any(|o| o == "memory")
            };
            wanted.then(|| Mount {
                root: unescape(root),
                point: PathBuf::from(unescape(point)),
            })
        })
        .collect()
}

/// mountinfo's octal escapes (`\040` for a space, `\011`, `\012`, `\134`) undone.
fn unescape(field: &str) -> String {
    let b = field.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let oct = b
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match oct {
            Some(d) if b[i] == b'\\' && d[0] <= b'3' => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            _ => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The directory of cgroup `path` under `mount`: the path below the mount's root, joined to
/// its mount point. `None` when the mount does not show that cgroup, or the path is not a
/// plain absolute one.
pub fn cgroup_dir(mount: &Mount, path: &str) -> Option<PathBuf> {
    let root = mount.root.trim_end_matches('/');
    let below = path.strip_prefix(root)?;
    if !(below.is_empty() || below.starts_with('/')) || !path.starts_with('/') {
        return None;
    }
    let below = Path::new(below);
    if below
        .components()
        .any(|c| !matches!(c, Component::RootDir | Component::Normal(_)))
    {
        return None;
    }
    Some(mount.point.join(below.strip_prefix("/").unwrap_or(below)))
}

/// cgroup v1 `memory.limit_in_bytes`: a number; from 2^62 it means no limit.
pub fn parse_limit_v1(text: &str) -> Option<u64> {
    text.trim()
        .parse::<u64>()
        .ok()
        .filter(|&v| v < V1_UNLIMITED)
}

/// cgroup v2 `memory.max`: a number, or `max` for no limit.
pub fn parse_limit_v2(text: &str) -> Option<u64> {
    text.trim().parse::<u64>().ok()
}

/// At most `max` bytes of the file at `path`, as text; `None` if it cannot be opened or read.
fn read_bounded(path: &Path, max: u64) -> Option<String> {
    let file = std::fs::File::open(path).ok()?;
    let mut bytes = Vec::new();
    file.take(max).read_to_end(&mut bytes).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// The memory limit of `cg`, read from the first of this process's mounts of its hierarchy
/// that shows it.
fn limit_of(cg: &MemoryCgroup, mountinfo: &str) -> Option<u64> {
    let (file, parse): (_, fn(&str) -> Option<u64>) = if cg.v2 {
        ("memory.max", parse_limit_v2)
    } else {
        ("memory.limit_in_bytes", parse_limit_v1)
    };
    memory_mounts(mountinfo, cg.v2)
        .iter()
        .filter_map(|m| cgroup_dir(m, &cg.path))
        .find_map(|dir| read_bounded(&dir.join(file), LIMIT_BYTES))
        .and_then(|text| parse(&text))
}

/// Fills `info.cgroup` and `info.limit` from `proc_root` (a /proc mount): the victim's memory
/// cgroup, and that cgroup's limit as this process's mounts show it. Whatever cannot be read
/// stays `None`.
pub fn enrich_at(proc_root: &Path, info: &mut OomInfo) {
    let path = proc_root.join(info.tid.to_string()).join("cgroup");
    let Some(cg) = read_bounded(&path, CGROUP_FILE_BYTES).and_then(|t| memory_cgroup(&t)) else {
        return;
    };
    let mountinfo = read_bounded(&proc_root.join("self/mountinfo"), MOUNTINFO_BYTES);
    info.limit = mountinfo.and_then(|m| limit_of(&cg, &m));
    info.cgroup = Some(cg.path);
}

#[cfg(test)]
mod tests {
    use super::*;

    const HYBRID: &str = "9:name=systemd:/\n8:pids:/\n4:memory:/process_api/oom-1\n1:cpu:/\n0::/\n";

    #[test]
    fn memory_line_of_v1_then_v2() {
        let v1 = memory_cgroup(HYBRID).unwrap();
        assert_eq!((v1.path.as_str(), v1.v2), ("/process_api/oom-1", false));
        // A controller list naming memory among others; a path with colons stays whole.
        let joined = memory_cgroup("3:cpu,memory:/a:b\n").unwrap();
        assert_eq!(joined.path, "/a:b");
        let v2 = memory_cgroup("0::/kubepods.slice/pod.slice/cri-abc.scope\n").unwrap();
        assert_eq!(
            (v2.path.as_str(), v2.v2),
            ("/kubepods.slice/pod.slice/cri-abc.scope", true)
        );
        // `memsw` or a named hierarchy is not the memory controller.
        assert_eq!(memory_cgroup("5:name=memory:/x\n2:memsw:/y\n"), None);
        assert_eq!(memory_cgroup("garbage\n\n::\n"), None);
        // An exiting task's v1 lines read "/": unknown, not the root.
        assert_eq!(memory_cgroup("6:memory:/\n"), None);
    }

    const MOUNTINFO: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime shared:9 - cgroup2 cgroup2 rw
90 20 0:32 /kubepods /host\\040cg/mem rw master:3 - cgroup cgroup rw,memory
";

    #[test]
    fn mounts_of_each_version() {
        let v1 = memory_mounts(MOUNTINFO, false);
        assert_eq!(
            v1,
            [
                Mount {
                    root: "/".into(),
                    point: "/sys/fs/cgroup/memory".into()
                },
                Mount {
                    root: "/kubepods".into(),
                    point: "/host cg/mem".into()
                }
            ]
        );
        let v2 = memory_mounts(MOUNTINFO, true);
        assert_eq!(v2.len(), 1);
        assert_eq!(v2[0].point, Path::new("/sys/fs/cgroup/unified"));
        assert!(memory_mounts("no separator here\n- x\n", false).is_empty());
        assert_eq!(unescape("a\\040b\\134c\\9x\\"), "a b\\c\\9x\\");
    }

    #[test]
    fn directories_below_a_mount() {
        let whole = Mount {
            root: "/".into(),
            point: "/sys/fs/cgroup/memory".into(),
        };
        assert_eq!(
            cgroup_dir(&whole, "/a/b"),
            Some(PathBuf::from("/sys/fs/cgroup/memory/a/b"))
        );
        assert_eq!(
            cgroup_dir(&whole, "/"),
            Some(PathBuf::from("/sys/fs/cgroup/memory"))
        );
        let sub = Mount {
            root: "/kubepods".into(),
            point: "/host/mem".into(),
        };
        assert_eq!(
            cgroup_dir(&sub, "/kubepods/pod1"),
            Some(PathBuf::from("/host/mem/pod1"))
        );
        // Outside the mounted subtree, a name that only starts alike, hostile paths.
        assert_eq!(cgroup_dir(&sub, "/other"), None);
        assert_eq!(cgroup_dir(&sub, "/kubepods-x"), None);
        assert_eq!(cgroup_dir(&whole, "/a/../../etc"), None);
        assert_eq!(cgroup_dir(&whole, "relative"), None);
        assert_eq!(
            cgroup_dir(&whole, "/a/./b"),
            Some(PathBuf::from("/sys/fs/cgroup/memory/a/b"))
        );
    }

    #[test]
    fn limits() {
        assert_eq!(parse_limit_v1("33554432\n"), Some(33554432));
        assert_eq!(parse_limit_v1("9223372036854771712\n"), None);
        assert_eq!(
            parse_limit_v1(&format!("{}\n", (1u64 << 62) - 1)),
            Some((1 << 62) - 1)
        );
        assert_eq!(parse_limit_v1("-1\n"), None);
        assert_eq!(parse_limit_v2("33554432\n"), Some(33554432));
        assert_eq!(parse_limit_v2("max\n"), None);
        assert_eq!(parse_limit_v2(""), None);
    }

    #[test]
    fn enrich_from_a_fake_proc() {
        let dir = std::env::temp_dir().join(format!("tracer-oom-{}", std::process::id()));
        let cg = dir.join("mem/jail");
        std::fs::create_dir_all(dir.join("proc/42")).unwrap();
        std::fs::create_dir_all(dir.join("proc/self")).unwrap();
        std::fs::create_dir_all(&cg).unwrap();
        std::fs::write(dir.join("proc/42/cgroup"), "4:memory:/jail\n0::/\n").unwrap();
        let mountinfo = format!(
            "35 31 0:32 / {} rw - cgroup cgroup rw,memory\n",
            dir.join("mem").display()
        );
        std::fs::write(dir.join("proc/self/mountinfo"), mountinfo).unwrap();
        std::fs::write(cg.join("memory.limit_in_bytes"), "33554432\n").unwrap();
        let mut info = OomInfo {
            tid: 42,
            total_vm_kb: 0,
            anon_rss_kb: 0,
            file_rss_kb: 0,
            shmem_rss_kb: 0,
            oom_score_adj: 0,
            cgroup: None,
            limit: None,
        };
        enrich_at(&dir.join("proc"), &mut info);
        let got = (info.cgroup.clone(), info.limit);
        // A victim already gone: nothing.
        info.tid = 43;
        info.cgroup = None;
        info.limit = None;
        enrich_at(&dir.join("proc"), &mut info);
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(got, (Some("/jail".to_string()), Some(33554432)));
        assert_eq!((info.cgroup, info.limit), (None, None));
    }
}
