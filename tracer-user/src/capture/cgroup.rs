//! Which cgroup hierarchy the tracer reports, and a process's path in it.
//!
//! On a cgroup-v2 host there is one (unified) hierarchy, id 0 (`0::/path` in
//! `/proc/PID/cgroup`). On v1 and hybrid hosts each controller has its own; runtimes put a
//! container in all of them, so one is enough: `pids`, which every runtime joins (it enforces
//! `pids.max`), else `memory`, else the first listed.

use std::sync::OnceLock;

/// A cgroup hierarchy: its id (the first column of `/proc/PID/cgroup`) and what it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hierarchy {
    /// Hierarchy id; 0 for cgroup v2.
    pub id: u32,
    /// `pids`, `memory`... for v1; empty for v2.
    pub controllers: String,
}

impl Hierarchy {
    /// `8:pids` / `0:` (cgroup v2), as trace headers record it.
    pub fn label(&self) -> String {
        format!("{}:{}", self.id, self.controllers)
    }
}

/// The hierarchy to report, from this process's `/proc/self/cgroup` text; `unified_only` when
/// the host mounts cgroup v2 alone (`/sys/fs/cgroup/cgroup.controllers` exists).
pub fn choose_hierarchy(proc_cgroup: &str, unified_only: bool) -> Option<Hierarchy> {
    let lines: Vec<(u32, &str)> = proc_cgroup
        .lines()
        .filter_map(|l| {
            let mut it = l.splitn(3, ':');
            let id = it.next()?.parse().ok()?;
            let controllers = it.next()?;
            it.next()?;
            Some((id, controllers))
        })
        .collect();
    let v1: Vec<&(u32, &str)> = lines.iter().filter(|(id, _)| *id != 0).collect();
    let pick = |name: &str| {
        v1.iter()
            .find(|(_, c)| c.split(',').any(|x| x == name))
            .map(|&&(id, c)| (id, c))
    };
    let chosen = if unified_only || v1.is_empty() {
        lines.iter().find(|(id, _)| *id == 0).copied()
    } else {
        pick("pids")
            .or_else(|| pick("memory"))
            .or(v1.first().map(|&&x| x))
    };
    chosen.map(|(id, c)| Hierarchy {
        id,
        controllers: c.to_string(),
    })
}

/// The path in hierarchy `h` of a `/proc/PID/cgroup` text.
pub fn path_in(proc_cgroup: &str, h: &Hierarchy) -> Option<String> {
    proc_cgroup.lines().find_map(|l| {
        let mut it = l.splitn(3, ':');
        let id: u32 = it.next()?.parse().ok()?;
        let controllers = it.next()?;
        let path = it.next()?;
        (id == h.id && controllers == h.controllers).then(|| path.to_string())
    })
}

/// The hierarchy this host's processes are reported in (read once).
pub fn reported() -> Option<&'static Hierarchy> {
    static H: OnceLock<Option<Hierarchy>> = OnceLock::new();
    H.get_or_init(|| {
        let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        let unified = std::path::Path::new("/sys/fs/cgroup/cgroup.controllers").exists();
        choose_hierarchy(&text, unified)
    })
    .as_ref()
}

#[cfg(test)]
mod tests {
    use super::*;

    const HYBRID: &str = "9:name=systemd:/\n8:pids:/system.slice/containerd.service\n7:blkio:/\n4:memory:/x\n1:cpu,cpuacct:/\n0::/\n";

    #[test]
    fn v1_and_hybrid_report_pids_v2_the_unified_hierarchy() {
        let h = choose_hierarchy(HYBRID, false).unwrap();
        assert_eq!((h.id, h.controllers.as_str()), (8, "pids"));
        assert_eq!(h.label(), "8:pids");
        assert_eq!(
            path_in(HYBRID, &h).as_deref(),
            Some("/system.slice/containerd.service")
        );
        let v2 = "0::/kubepods.slice/kubepods-pod1.slice/cri-containerd-abc.scope\n";
        let h = choose_hierarchy(v2, true).unwrap();
        assert_eq!((h.id, h.label().as_str()), (0, "0:"));
        assert_eq!(
            path_in(v2, &h).as_deref(),
            Some("/kubepods.slice/kubepods-pod1.slice/cri-containerd-abc.scope")
        );
        // Without pids: memory; a path with colons stays whole.
        let h = choose_hierarchy("4:memory:/a:b\n1:cpu:/\n", false).unwrap();
        assert_eq!(path_in("4:memory:/a:b\n", &h).as_deref(), Some("/a:b"));
        assert_eq!(choose_hierarchy("garbage\n", false), None);
    }
}
