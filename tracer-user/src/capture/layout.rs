//! Kernel layouts resolved at load time: tracefs `format` files for sched tracepoints and
//! BTF member offsets for the task_struct fields no tracepoint carries.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use tracer_common::{ProbeConfig, NO_OFFSET};

use super::CaptureError;

/// One field of a tracepoint record, from its `format` file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    /// Byte offset of the field in the record.
    pub offset: u32,
    /// Size of the field in bytes.
    pub size: u32,
    /// `__data_loc`: the slot holds (len << 16 | offset) of dynamic data.
    pub data_loc: bool,
}

/// Parses a tracefs `format` file into field name → [`Field`].
pub fn parse_format(text: &str) -> HashMap<String, Field> {
    let mut fields = HashMap::new();
    for line in text.lines() {
        let line = line.trim();
        let Some(rest) = line.strip_prefix("field:") else {
            continue;
        };
        let mut decl = "";
        let mut offset = None;
        let mut size = None;
        for (i, part) in rest.split(';').enumerate() {
            let part = part.trim();
            if i == 0 {
                decl = part;
            } else if let Some(v) = part.strip_prefix("offset:") {
                offset = v.trim().parse().ok();
            } else if let Some(v) = part.strip_prefix("size:") {
                size = v.trim().parse().ok();
            }
        }
        let (Some(offset), Some(size)) = (offset, size) else {
            continue;
        };
        // The name is the last token, without an array suffix: `char comm[16]`,
        // `__data_loc char[] filename`, `int * ptr`.
        let last = decl.split_whitespace().last().unwrap_or("");
        let name = last.split('[').next().unwrap_or("").trim_start_matches('*');
        if !name.is_empty() {
            fields.insert(
                name.to_string(),
                Field {
                    offset,
                    size,
                    data_loc: decl.contains("__data_loc"),
                },
            );
        }
    }
    fields
}

/// Where tracefs is mounted, or a clear error.
pub fn tracefs_root() -> Result<PathBuf, CaptureError> {
    for root in ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"] {
        if Path::new(root).join("events").is_dir() {
            return Ok(PathBuf::from(root));
        }
    }
    Err(CaptureError::KernelFeature(
        "tracefs is not mounted (mount -t tracefs nodev /sys/kernel/tracing)".into(),
    ))
}

/// The tracefs layouts the probes use, kept so trace files can record them.
#[derive(Clone, Debug, Default)]
pub struct TracepointLayouts {
    /// "sched/sched_process_fork" → format file text.
    pub formats: Vec<(String, String)>,
}

fn read_format(root: &Path, cat: &str, name: &str) -> Result<String, CaptureError> {
    let path = root.join("events").join(cat).join(name).join("format");
    std::fs::read_to_string(&path).map_err(|e| {
        CaptureError::KernelFeature(format!(
            "tracepoint {cat}:{name} unavailable ({}: {e})",
            path.display()
        ))
    })
}

fn need(fields: &HashMap<String, Field>, tp: &str, name: &str) -> Result<u32, CaptureError> {
    fields.get(name).map(|f| f.offset).ok_or_else(|| {
        CaptureError::KernelFeature(format!("tracepoint {tp} has no field `{name}`"))
    })
}

/// Fills the tracepoint offsets of `cfg` from the running kernel's format files.
pub fn tracepoint_offsets(
    root: &Path,
    cfg: &mut ProbeConfig,
) -> Result<TracepointLayouts, CaptureError> {
    let mut layouts = TracepointLayouts::default();
    let fork = read_format(root, "sched", "sched_process_fork")?;
    let f = parse_format(&fork);
    cfg.fork_parent_pid = need(&f, "sched_process_fork", "parent_pid")?;
    cfg.fork_child_pid = need(&f, "sched_process_fork", "child_pid")?;
    layouts
        .formats
        .push(("sched/sched_process_fork".into(), fork));

    let exec = read_format(root, "sched", "sched_process_exec")?;
    let f = parse_format(&exec);
    let filename = f.get("filename").ok_or_else(|| {
        CaptureError::KernelFeature("tracepoint sched_process_exec has no field `filename`".into())
    })?;
    if !filename.data_loc {
        return Err(CaptureError::KernelFeature(
            "sched_process_exec filename is not a __data_loc field on this kernel".into(),
        ));
    }
    cfg.exec_filename_loc = filename.offset;
    cfg.exec_pid = need(&f, "sched_process_exec", "pid")?;
    cfg.exec_old_pid = need(&f, "sched_process_exec", "old_pid")?;
    layouts
        .formats
        .push(("sched/sched_process_exec".into(), exec));

    let exit = read_format(root, "sched", "sched_process_exit")?;
    let f = parse_format(&exit);
    cfg.exit_pid = need(&f, "sched_process_exit", "pid")?;
    // group_dead only exists on newer kernels; older ones fall back to signal->live via BTF.
    cfg.exit_group_dead = f.get("group_dead").map_or(NO_OFFSET, |g| g.offset);
    layouts
        .formats
        .push(("sched/sched_process_exit".into(), exit));

    // The "sched" probe set's stand-ins for clone and prctl probes; without them only the
    // syscall tracepoints can report clone flags and names.
    if let Ok(text) = read_format(root, "task", "task_newtask") {
        let f = parse_format(&text);
        cfg.newtask_flags = f.get("clone_flags").map_or(NO_OFFSET, |g| g.offset);
        layouts.formats.push(("task/task_newtask".into(), text));
    }
    if let Ok(text) = read_format(root, "cgroup", "cgroup_attach_task") {
        let f = parse_format(&text);
        let off = |name: &str| f.get(name).map_or(NO_OFFSET, |g| g.offset);
        cfg.cgattach_root = off("dst_root");
        cfg.cgattach_level = off("dst_level");
        cfg.cgattach_id = off("dst_id");
        cfg.cgattach_pid = off("pid");
        cfg.cgattach_path = f
            .get("dst_path")
            .filter(|g| g.data_loc)
            .map_or(NO_OFFSET, |g| g.offset);
        layouts
            .formats
            .push(("cgroup/cgroup_attach_task".into(), text));
    }
    if let Ok(text) = read_format(root, "task", "task_rename") {
        let f = parse_format(&text);
        cfg.rename_pid = f.get("pid").map_or(NO_OFFSET, |g| g.offset);
        cfg.rename_newcomm = f
            .get("newcomm")
            .filter(|g| g.size == 16 && !g.data_loc)
            .map_or(NO_OFFSET, |g| g.offset);
        layouts.formats.push(("task/task_rename".into(), text));
    }
    if let Ok(text) = read_format(root, "oom", "mark_victim") {
        oom_offsets(&parse_format(&text), cfg);
        layouts.formats.push(("oom/mark_victim".into(), text));
    }
    Ok(layouts)
}

/// oom:mark_victim's fields. Kernels before 6.2 carry only `pid`; the memory fields are read
/// as 8-byte `unsigned long`s and `oom_score_adj` as a `short`, so a field of another size
/// is left out rather than misread.
fn oom_offsets(f: &HashMap<String, Field>, cfg: &mut ProbeConfig) {
    let sized = |name: &str, size: u32| {
        f.get(name)
            .filter(|g| g.size == size && !g.data_loc)
            .map_or(NO_OFFSET, |g| g.offset)
    };
    cfg.oom_pid = sized("pid", 4);
    cfg.oom_total_vm = sized("total_vm", 8);
    cfg.oom_anon_rss = sized("anon_rss", 8);
    cfg.oom_file_rss = sized("file_rss", 8);
    cfg.oom_shmem_rss = sized("shmem_rss", 8);
    cfg.oom_score_adj = sized("oom_score_adj", 2);
}

/// Byte offset of `member` (e.g. `real_parent`) inside struct `strukt`, searching
/// anonymous unions/structs the way C field access does.
fn member_offset(btf: &btf_rs::Btf, strukt: &str, member: &str) -> Result<u32, CaptureError> {
    let bits = member_bit_offset(btf, strukt, member)?;
    if bits % 8 != 0 {
        return Err(CaptureError::KernelFeature(format!(
            "BTF: {strukt}.{member} is a bitfield"
        )));
    }
    Ok(bits / 8)
}

/// [`member_offset`], or [`NO_OFFSET`] on a kernel without that member (the probe then
/// leaves what it would read unknown).
fn offset_or_none(btf: &btf_rs::Btf, strukt: &str, member: &str) -> u32 {
    member_offset(btf, strukt, member).unwrap_or(NO_OFFSET)
}

/// Bit offset of `member` inside struct `strukt` (bitfields included).
fn member_bit_offset(btf: &btf_rs::Btf, strukt: &str, member: &str) -> Result<u32, CaptureError> {
    use btf_rs::Type;
    let err = |what: String| CaptureError::KernelFeature(format!("BTF: {what}"));
    let types = btf
        .resolve_types_by_name(strukt)
        .map_err(|e| err(format!("struct {strukt} not found ({e})")))?;
    let s = types
        .into_iter()
        .find_map(|t| match t {
            Type::Struct(s) => Some(s),
            _ => None,
        })
        .ok_or_else(|| err(format!("{strukt} is not a struct")))?;

    fn search(btf: &btf_rs::Btf, s: &btf_rs::Struct, member: &str, depth: u32) -> Option<u32> {
        if depth > 8 {
            return None;
        }
        for m in &s.members {
            let name = btf.resolve_name(m).unwrap_or_default();
            if name == member {
                return Some(m.bit_offset());
            }
            if name.is_empty() {
                if let Ok(Type::Struct(inner) | Type::Union(inner)) = btf.resolve_chained_type(m) {
                    if let Some(off) = search(btf, &inner, member, depth + 1) {
                        return Some(m.bit_offset() + off);
                    }
                }
            }
        }
        None
    }
    search(btf, &s, member, 0).ok_or_else(|| err(format!("{strukt} has no member `{member}`")))
}

/// Fills the task_struct offsets of `cfg` from the kernel's BTF.
pub fn btf_offsets(path: &Path, cfg: &mut ProbeConfig) -> Result<(), CaptureError> {
    // Mapped, not parsed whole: a few lookups in a 6 MB blob are cheaper than indexing it
    // (~100 ms), and the start of every capture waits for this. Parsed where mmap is refused.
    let btf = btf_rs::Btf::from_file_with_backend(path, btf_rs::Backend::Mmap)
        .or_else(|_| btf_rs::Btf::from_file(path))
        .map_err(|e| {
            CaptureError::KernelFeature(format!(
                "kernel BTF unavailable at {} ({e})",
                path.display()
            ))
        })?;
    btf_fill(&btf, cfg)
}

/// The offsets the probes need, from a kernel's BTF.
fn btf_fill(btf: &btf_rs::Btf, cfg: &mut ProbeConfig) -> Result<(), CaptureError> {
    cfg.task_real_parent = member_offset(btf, "task_struct", "real_parent")?;
    cfg.task_tgid = member_offset(btf, "task_struct", "tgid")?;
    cfg.task_exit_code = member_offset(btf, "task_struct", "exit_code")?;
    cfg.task_signal = member_offset(btf, "task_struct", "signal")?;
    // Only needed where sched_process_exit lacks group_dead.
    if cfg.exit_group_dead == NO_OFFSET {
        cfg.signal_live = member_offset(btf, "signal_struct", "live")?;
    }
    // The "sched" probe set's; a missing one makes the capture attach syscall probes.
    let opt = |r: Result<u32, CaptureError>| r.unwrap_or(NO_OFFSET);
    cfg.task_mm = opt(member_offset(btf, "task_struct", "mm"));
    cfg.mm_arg_start = opt(member_offset(btf, "mm_struct", "arg_start"));
    cfg.mm_arg_end = opt(member_offset(btf, "mm_struct", "arg_end"));
    cfg.task_in_execve_bit = opt(member_bit_offset(btf, "task_struct", "in_execve"));
    cfg.signal_subreaper_bit = opt(member_bit_offset(
        btf,
        "signal_struct",
        "is_child_subreaper",
    ));
    cfg.signal_has_subreaper_bit = opt(member_bit_offset(
        btf,
        "signal_struct",
        "has_child_subreaper",
    ));
    cfg.task_comm = opt(member_offset(btf, "task_struct", "comm"));
    cfg.task_flags = opt(member_offset(btf, "task_struct", "flags"));
    pidns_offsets(btf, cfg);
    cred_offsets(btf, cfg);
    memcg_offsets(btf, cfg);
    Ok(())
}

/// What the raw mark_victim probe reads of the victim: its memory cgroup (through its
/// css_set's memory css, the cgroup's kernfs node and the mem_cgroup's page counter) and its
/// memory (mm counters, oom_score_adj). Any one missing leaves the classic tracepoint in use.
fn memcg_offsets(btf: &btf_rs::Btf, cfg: &mut ProbeConfig) {
    let opt = |s: &str, m: &str| offset_or_none(btf, s, m);
    cfg.task_cgroups = opt("task_struct", "cgroups");
    cfg.cssset_subsys = opt("css_set", "subsys");
    cfg.memory_cgrp_id = enum_value(btf, "cgroup_subsys_id", "memory_cgrp_id").unwrap_or(NO_OFFSET);
    cfg.css_cgroup = opt("cgroup_subsys_state", "cgroup");
    cfg.cgroup_kn = opt("cgroup", "kn");
    // Renamed `__parent` in 6.15 (kernfs: RCU-protected parent).
    cfg.kn_parent = match opt("kernfs_node", "__parent") {
        NO_OFFSET => opt("kernfs_node", "parent"),
        o => o,
    };
    cfg.kn_name = opt("kernfs_node", "name");
    cfg.kn_id = opt("kernfs_node", "id");
    // The css is mem_cgroup's first member, so a css pointer is the mem_cgroup's.
    let (css, memory) = (opt("mem_cgroup", "css"), opt("mem_cgroup", "memory"));
    let max = opt("page_counter", "max");
    cfg.memcg_max = if css == 0 && memory != NO_OFFSET && max != NO_OFFSET {
        memory + max
    } else {
        NO_OFFSET
    };
    cfg.mm_total_vm = opt("mm_struct", "total_vm");
    cfg.mm_rss_stat = opt("mm_struct", "rss_stat");
    cfg.percpu_counter_size = struct_size(btf, "percpu_counter").unwrap_or(NO_OFFSET);
    cfg.percpu_counter_count = opt("percpu_counter", "count");
    cfg.signal_oom_score_adj = opt("signal_struct", "oom_score_adj");
    // SAFETY: sysconf reads a constant.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    cfg.page_kb = u32::try_from(page / 1024).unwrap_or(4).max(1);
}

/// The raw mark_victim probe can run: the tracepoint hands over the victim task (since 6.2,
/// when it also gained the memory fields its format shows) and every offset it reads is known.
pub fn raw_oom_ready(cfg: &ProbeConfig) -> bool {
    let needed = [
        cfg.task_cgroups,
        cfg.cssset_subsys,
        cfg.memory_cgrp_id,
        cfg.css_cgroup,
        cfg.cgroup_kn,
        cfg.kn_parent,
        cfg.kn_name,
        cfg.kn_id,
        cfg.memcg_max,
        cfg.task_pid,
        cfg.task_tgid,
        cfg.task_mm,
        cfg.task_signal,
    ];
    cfg.oom_total_vm != NO_OFFSET && needed.iter().all(|&o| o != NO_OFFSET)
}

/// The value of enumerator `name` of enum `ty`.
fn enum_value(btf: &btf_rs::Btf, ty: &str, name: &str) -> Option<u32> {
    let types = btf.resolve_types_by_name(ty).ok()?;
    types.into_iter().find_map(|t| match t {
        btf_rs::Type::Enum(e) => e
            .members
            .iter()
            .find(|m| btf.resolve_name(*m).is_ok_and(|n| n == name))
            .map(|m| m.val()),
        _ => None,
    })
}

/// What the exec probe reads of the task's credentials, mount namespace and executable. Any
/// one missing leaves those facts unknown (the exec is then taken at its name, as a recording
/// without credentials is), nothing else.
fn cred_offsets(btf: &btf_rs::Btf, cfg: &mut ProbeConfig) {
    let opt = |s: &str, m: &str| offset_or_none(btf, s, m);
    cfg.task_cred = opt("task_struct", "cred");
    cfg.cred_euid = opt("cred", "euid");
    cfg.cred_fsuid = opt("cred", "fsuid");
    cfg.cred_user_ns = opt("cred", "user_ns");
    cfg.userns_level = opt("user_namespace", "level");
    cfg.task_nsproxy = opt("task_struct", "nsproxy");
    cfg.nsproxy_mnt_ns = opt("nsproxy", "mnt_ns");
    cfg.mntns_inum = match (opt("mnt_namespace", "ns"), opt("ns_common", "inum")) {
        (a, b) if a != NO_OFFSET && b != NO_OFFSET => a + b,
        _ => NO_OFFSET,
    };
    cfg.bprm_filename = opt("linux_binprm", "filename");
    cfg.mm_exe_file = opt("mm_struct", "exe_file");
    cfg.file_inode = opt("file", "f_inode");
    cfg.inode_mode = opt("inode", "i_mode");
    cfg.inode_uid = opt("inode", "i_uid");
    cfg.inode_ino = opt("inode", "i_ino");
    cfg.inode_nlink = opt("inode", "i_nlink");
    cfg.inode_sb = opt("inode", "i_sb");
    cfg.sb_dev = opt("super_block", "s_dev");
}

/// What the fork probe reads of the child: `task->pid`, and its pid namespace through
/// `task->thread_pid->numbers[level]` (`struct upid { int nr; struct pid_namespace *ns; }`).
/// Any one missing leaves the namespace unknown (0), nothing else.
fn pidns_offsets(btf: &btf_rs::Btf, cfg: &mut ProbeConfig) {
    let opt = |r: Result<u32, CaptureError>| r.unwrap_or(NO_OFFSET);
    cfg.task_pid = opt(member_offset(btf, "task_struct", "pid"));
    cfg.task_thread_pid = opt(member_offset(btf, "task_struct", "thread_pid"));
    cfg.pid_level = opt(member_offset(btf, "pid", "level"));
    cfg.pid_numbers = opt(member_offset(btf, "pid", "numbers"));
    cfg.upid_size = opt(struct_size(btf, "upid"));
    cfg.upid_ns = opt(member_offset(btf, "upid", "ns"));
    let ns = member_offset(btf, "pid_namespace", "ns");
    let inum = member_offset(btf, "ns_common", "inum");
    cfg.pidns_inum = match (ns, inum) {
        (Ok(a), Ok(b)) => a + b,
        _ => NO_OFFSET,
    };
}

/// Size in bytes of struct `strukt`.
fn struct_size(btf: &btf_rs::Btf, strukt: &str) -> Result<u32, CaptureError> {
    btf.resolve_types_by_name(strukt)
        .ok()
        .and_then(|types| {
            types.into_iter().find_map(|t| match t {
                btf_rs::Type::Struct(s) => Some(s.size() as u32),
                _ => None,
            })
        })
        .ok_or_else(|| CaptureError::KernelFeature(format!("BTF: struct {strukt} not found")))
}

#[cfg(test)]
mod tests {
    use super::*;

    const FORK: &str = "name: sched_process_fork
ID: 366
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:__data_loc char[] parent_comm;\toffset:8;\tsize:4;\tsigned:0;
\tfield:pid_t parent_pid;\toffset:12;\tsize:4;\tsigned:1;
\tfield:__data_loc char[] child_comm;\toffset:16;\tsize:4;\tsigned:0;
\tfield:pid_t child_pid;\toffset:20;\tsize:4;\tsigned:1;

print fmt: \"comm=%s pid=%d\"";

    #[test]
    fn parses_data_loc_and_plain_fields() {
        let f = parse_format(FORK);
        assert_eq!(
            f["child_pid"],
            Field {
                offset: 20,
                size: 4,
                data_loc: false
            }
        );
        assert_eq!(
            f["parent_comm"],
            Field {
                offset: 8,
                size: 4,
                data_loc: true
            }
        );
        assert_eq!(f["common_pid"].offset, 4);
    }

    #[test]
    fn parses_arrays_and_older_layouts() {
        // Older kernels: comm inline as char[16], no group_dead.
        let f = parse_format("\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;");
        assert_eq!(
            f["comm"],
            Field {
                offset: 8,
                size: 16,
                data_loc: false
            }
        );
        assert_eq!(f["pid"].offset, 24);
        assert!(!f.contains_key("group_dead"));
    }

    #[test]
    fn mark_victim_offsets_by_size() {
        let text = "\tfield:int pid;\toffset:8;\tsize:4;\tsigned:1;
\tfield:__data_loc char[] comm;\toffset:12;\tsize:4;\tsigned:0;
\tfield:unsigned long total_vm;\toffset:16;\tsize:8;\tsigned:0;
\tfield:unsigned long anon_rss;\toffset:24;\tsize:8;\tsigned:0;
\tfield:unsigned long file_rss;\toffset:32;\tsize:4;\tsigned:0;
\tfield:short oom_score_adj;\toffset:64;\tsize:2;\tsigned:1;";
        let mut cfg = ProbeConfig::EMPTY;
        oom_offsets(&parse_format(text), &mut cfg);
        assert_eq!(
            (cfg.oom_pid, cfg.oom_total_vm, cfg.oom_anon_rss),
            (8, 16, 24)
        );
        // A 4-byte unsigned long (a 32-bit kernel) and an absent field: not read.
        assert_eq!(
            (cfg.oom_file_rss, cfg.oom_shmem_rss),
            (NO_OFFSET, NO_OFFSET)
        );
        assert_eq!(cfg.oom_score_adj, 64);
        // Before 6.2: the pid alone.
        let mut cfg = ProbeConfig::EMPTY;
        oom_offsets(
            &parse_format("\tfield:int pid;\toffset:8;\tsize:4;\tsigned:1;"),
            &mut cfg,
        );
        assert_eq!((cfg.oom_pid, cfg.oom_total_vm), (8, NO_OFFSET));
    }

    #[test]
    fn garbage_yields_nothing() {
        assert!(parse_format("field:\nfield:int x; offset:zz; size:4;\n\u{0}").is_empty());
    }
}
