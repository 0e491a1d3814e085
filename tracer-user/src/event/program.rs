//! The runtime programs a process's executable can be, by the file the kernel exec'd, and
//! where runtimes install them: shared by the capture (which looks each exec's file up) and
//! the engine (whose roles come from it: `lineage::identity`).

use super::ExeFile;
use serde::{Deserialize, Serialize};

/// The runtime program a process's executable is, by the file the kernel exec'd (its device
/// and inode), never by a name: the capture looks the inode up among the files installed at
/// the runtimes' paths ([`INSTALLED`]) and records the answer with the exec.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Program {
    /// None of theirs: any other file (a copy, `/usr/bin/passwd` under any name).
    Other,
    /// `containerd`.
    Containerd,
    /// CRI-O's `crio`.
    Crio,
    /// Docker's `dockerd`.
    Dockerd,
    /// `podman` (its API service is what an agent follows on a podman node).
    Podman,
    /// `containerd-shim`, `containerd-shim-runc-v1`, `containerd-shim-runc-v2`.
    ContainerdShim,
    /// `conmon` (CRI-O's and podman's monitor).
    Conmon,
    /// `runc`.
    Runc,
    /// `crun`.
    Crun,
    /// A file in a CNI plugin directory.
    CniPlugin,
}

/// Where runtimes install their programs, as distributions and upstream releases do
/// (docs/lineage.md lists them); a file there counts only when root alone may change it.
pub const INSTALLED: &[(Program, &[&str])] = &[
    (
        Program::Containerd,
        &["/usr/bin/containerd", "/usr/local/bin/containerd"],
    ),
    (Program::Crio, &["/usr/bin/crio", "/usr/local/bin/crio"]),
    (
        Program::Dockerd,
        &[
            "/usr/sbin/dockerd",
            "/usr/bin/dockerd",
            "/usr/local/bin/dockerd",
        ],
    ),
    (
        Program::Podman,
        &["/usr/bin/podman", "/usr/local/bin/podman"],
    ),
    (
        Program::ContainerdShim,
        &[
            "/usr/bin/containerd-shim-runc-v2",
            "/usr/local/bin/containerd-shim-runc-v2",
            "/usr/bin/containerd-shim-runc-v1",
            "/usr/local/bin/containerd-shim-runc-v1",
            "/usr/bin/containerd-shim",
            "/usr/local/bin/containerd-shim",
        ],
    ),
    (
        Program::Conmon,
        &[
            "/usr/bin/conmon",
            "/usr/local/bin/conmon",
            "/usr/libexec/podman/conmon",
            "/usr/local/libexec/podman/conmon",
            "/usr/libexec/crio/conmon",
        ],
    ),
    (
        Program::Runc,
        &[
            "/usr/bin/runc",
            "/usr/sbin/runc",
            "/usr/local/bin/runc",
            "/usr/local/sbin/runc",
            "/usr/libexec/crio/runc",
            "/usr/lib/cri-o-runc/sbin/runc",
        ],
    ),
    (
        Program::Crun,
        &[
            "/usr/bin/crun",
            "/usr/local/bin/crun",
            "/usr/libexec/crio/crun",
        ],
    ),
];

/// The directories whose files are CNI plugins (Debian's, upstream's, Fedora's).
pub const CNI_DIRS: &[&str] = &["/usr/lib/cni", "/opt/cni/bin", "/usr/libexec/cni"];

impl Program {
    /// Every program, in code order (index = [`Program::code`]).
    pub const ALL: [Program; 10] = [
        Program::Other,
        Program::Containerd,
        Program::Crio,
        Program::Dockerd,
        Program::Podman,
        Program::ContainerdShim,
        Program::Conmon,
        Program::Runc,
        Program::Crun,
        Program::CniPlugin,
    ];

    /// Its byte in a trace file.
    pub fn code(self) -> u8 {
        Self::ALL.iter().position(|&p| p == self).unwrap_or(0) as u8
    }

    /// The program of byte `code`, if any.
    pub fn from_code(code: u8) -> Option<Program> {
        Self::ALL.get(usize::from(code)).copied()
    }

    /// The daemon name a follower looks for (`containerd`), for a daemon.
    pub fn daemon_name(self) -> Option<&'static str> {
        match self {
            Program::Containerd => Some("containerd"),
            Program::Crio => Some("crio"),
            Program::Dockerd => Some("dockerd"),
            Program::Podman => Some("podman"),
            _ => None,
        }
    }

    /// The shim program a daemon of this kind runs its containers under.
    pub fn shim(self) -> Option<Program> {
        match self {
            Program::Containerd | Program::Dockerd => Some(Program::ContainerdShim),
            Program::Crio | Program::Podman => Some(Program::Conmon),
            _ => None,
        }
    }
}

/// The runtime files of a host by device and inode, as [`INSTALLED`] and [`CNI_DIRS`] name
/// them (the capture's `capture::procfs::installed_programs` reads them).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Installed {
    by_inode: std::collections::HashMap<(u64, u64), Program>,
}

impl Installed {
    /// Adds the file at (`dev`, `ino`) as `program`.
    pub fn add(&mut self, dev: u64, ino: u64, program: Program) {
        self.by_inode.entry((dev, ino)).or_insert(program);
    }

    /// The program the executable `x` is: one of the table's files only root may change,
    /// else [`Program::Other`].
    pub fn program_of(&self, x: &ExeFile) -> Program {
        match self.by_inode.get(&(x.dev, x.ino)) {
            Some(&p) if x.roots_alone() && x.nlink > 0 => p,
            _ => Program::Other,
        }
    }

    /// Files in the table.
    pub fn len(&self) -> usize {
        self.by_inode.len()
    }

    /// No file in the table.
    pub fn is_empty(&self) -> bool {
        self.by_inode.is_empty()
    }
}
