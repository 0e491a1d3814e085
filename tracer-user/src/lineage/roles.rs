//! Container-runtime roles and container ids, from names, exe paths and argv alone.

use super::identity::Program;
use std::fmt;

/// The last path component (`/usr/bin/runc` → `runc`).
pub fn basename(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The three stages of `runc init` (libcontainer/nsenter), named by PR_SET_NAME.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum InitStage {
    /// `runc:[0:PARENT]`: joins namespaces, clones CHILD.
    Parent,
    /// `runc:[1:CHILD]`: unshares, clones INIT.
    Child,
    /// `runc:[2:INIT]`: becomes the container's first process.
    Init,
}

impl InitStage {
    /// `runc:[0:PARENT]` → Parent, etc.
    pub fn from_comm(comm: &[u8]) -> Option<InitStage> {
        match comm {
            b"runc:[0:PARENT]" => Some(InitStage::Parent),
            b"runc:[1:CHILD]" => Some(InitStage::Child),
            b"runc:[2:INIT]" => Some(InitStage::Init),
            _ => None,
        }
    }

    /// `PARENT`, `CHILD`, `INIT`.
    pub fn as_str(self) -> &'static str {
        match self {
            InitStage::Parent => "0:PARENT",
            InitStage::Child => "1:CHILD",
            InitStage::Init => "2:INIT",
        }
    }

    /// The comm runc gives the stage.
    pub fn comm(self) -> &'static str {
        match self {
            InitStage::Parent => "runc:[0:PARENT]",
            InitStage::Child => "runc:[1:CHILD]",
            InitStage::Init => "runc:[2:INIT]",
        }
    }
}

/// An OCI runtime subcommand. `Copy` so roles are copied on fork without allocating.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OciCommand {
    /// `create`.
    Create,
    /// `start`.
    Start,
    /// `run`.
    Run,
    /// `exec`.
    Exec,
    /// `delete`.
    Delete,
    /// `kill`.
    Kill,
    /// `state`.
    State,
    /// `ps`.
    Ps,
    /// `pause`.
    Pause,
    /// `resume`.
    Resume,
    /// `update`.
    Update,
    /// `events`.
    Events,
    /// `list`.
    List,
    /// `features`.
    Features,
    /// `checkpoint`.
    Checkpoint,
    /// `restore`.
    Restore,
    /// `spec`.
    Spec,
    /// Any other subcommand.
    Other,
}

impl OciCommand {
    fn parse(s: &str) -> OciCommand {
        match s {
            "create" => OciCommand::Create,
            "start" => OciCommand::Start,
            "run" => OciCommand::Run,
            "exec" => OciCommand::Exec,
            "delete" => OciCommand::Delete,
            "kill" => OciCommand::Kill,
            "state" => OciCommand::State,
            "ps" => OciCommand::Ps,
            "pause" => OciCommand::Pause,
            "resume" => OciCommand::Resume,
            "update" => OciCommand::Update,
            "events" => OciCommand::Events,
            "list" => OciCommand::List,
            "features" => OciCommand::Features,
            "checkpoint" => OciCommand::Checkpoint,
            "restore" => OciCommand::Restore,
            "spec" => OciCommand::Spec,
            _ => OciCommand::Other,
        }
    }

    /// The subcommand as typed (`create`).
    pub fn as_str(self) -> &'static str {
        match self {
            OciCommand::Create => "create",
            OciCommand::Start => "start",
            OciCommand::Run => "run",
            OciCommand::Exec => "exec",
            OciCommand::Delete => "delete",
            OciCommand::Kill => "kill",
            OciCommand::State => "state",
            OciCommand::Ps => "ps",
            OciCommand::Pause => "pause",
            OciCommand::Resume => "resume",
            OciCommand::Update => "update",
            OciCommand::Events => "events",
            OciCommand::List => "list",
            OciCommand::Features => "features",
            OciCommand::Checkpoint => "checkpoint",
            OciCommand::Restore => "restore",
            OciCommand::Spec => "spec",
            OciCommand::Other => "other",
        }
    }

    /// Subcommands whose first positional argument is a container id.
    fn takes_id(self) -> bool {
        !matches!(
            self,
            OciCommand::List | OciCommand::Features | OciCommand::Spec | OciCommand::Other
        )
    }
}

/// What a process is in the container machinery.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// containerd, crio, dockerd.
    RuntimeDaemon,
    /// containerd-shim*, conmon.
    Shim,
    /// runc / crun with a subcommand (`None` when argv shows none).
    OciRuntime {
        /// The subcommand.
        subcommand: Option<OciCommand>,
    },
    /// `runc init` and its stages (`None` before the first rename).
    OciInit {
        /// The stage, once renamed.
        stage: Option<InitStage>,
    },
    /// The pause container.
    Sandbox,
    /// What an oci-init stage exec'd into (and whatever that then runs).
    Container,
    /// A CNI plugin: a program in a CNI bin directory, or a standard plugin run by a runtime.
    CniPlugin,
}

impl Role {
    /// `oci-runtime` etc., as in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Role::RuntimeDaemon => "runtime-daemon",
            Role::Shim => "shim",
            Role::OciRuntime { .. } => "oci-runtime",
            Role::OciInit { .. } => "oci-init",
            Role::Sandbox => "sandbox",
            Role::Container => "container",
            Role::CniPlugin => "cni-plugin",
        }
    }

    /// The subcommand or stage, when there is one.
    pub fn detail(self) -> Option<&'static str> {
        match self {
            Role::OciRuntime { subcommand } => subcommand.map(OciCommand::as_str),
            Role::OciInit { stage } => stage.map(InitStage::as_str),
            _ => None,
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())?;
        if let Some(d) = self.detail() {
            write!(f, " {d}")?;
        }
        Ok(())
    }
}

/// A role and, when argv shows it, a container id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Classified {
    /// The role.
    pub role: Role,
    /// The container id, when argv shows it.
    pub container_id: Option<String>,
}

/// Classifies by comm, exe and argv; `None` when nothing matches.
pub fn classify(comm: &[u8], exe: Option<&str>, argv: &[String]) -> Option<Classified> {
    if let Some(stage) = InitStage::from_comm(comm) {
        return Some(Classified {
            role: Role::OciInit { stage: Some(stage) },
            container_id: None,
        });
    }
    let comm = std::str::from_utf8(comm).unwrap_or("");
    let names = [
        exe.map(basename),
        argv.first().map(|a| basename(a)),
        Some(comm),
    ];
    let any = |f: &dyn Fn(&str) -> bool| names.iter().flatten().any(|n| !n.is_empty() && f(n));

    if any(&|n| n.starts_with("containerd-shim")) {
        return Some(Classified {
            role: Role::Shim,
            container_id: opt_value(argv, &["-id", "--id"]),
        });
    }
    if any(&|n| n == "conmon") {
        return Some(Classified {
            role: Role::Shim,
            container_id: opt_value(argv, &["-c", "--cid"]),
        });
    }
    if any(&|n| crate::names::RUNTIME_DAEMONS.contains(&n)) {
        return Some(Classified {
            role: Role::RuntimeDaemon,
            container_id: None,
        });
    }
    if any(&|n| crate::names::OCI_RUNTIMES.contains(&n)) {
        return Some(classify_oci(argv));
    }
    if any(&|n| n == "pause") {
        return Some(Classified {
            role: Role::Sandbox,
            container_id: None,
        });
    }
    let cni = |p: &str| in_cni_dir(p);
    if exe.is_some_and(cni) || argv.first().is_some_and(|a| cni(a)) {
        return Some(Classified {
            role: Role::CniPlugin,
            container_id: None,
        });
    }
    None
}

/// The role of a process whose executable is `program` (the capture's judgment of the file
/// the kernel exec'd): the program decides the role, argv only its detail (a subcommand, a
/// container id) and comm only runc init's stages (its renames). `None` for [`Program::Other`]
/// and for podman, which is not a role of its own.
pub fn classify_program(program: Program, comm: &[u8], argv: &[String]) -> Option<Classified> {
    let role = |role| Classified {
        role,
        container_id: None,
    };
    match program {
        Program::Runc | Program::Crun => Some(match InitStage::from_comm(comm) {
            Some(stage) => role(Role::OciInit { stage: Some(stage) }),
            None => classify_oci(argv),
        }),
        Program::ContainerdShim => Some(Classified {
            role: Role::Shim,
            container_id: opt_value(argv, &["-id", "--id"]),
        }),
        Program::Conmon => Some(Classified {
            role: Role::Shim,
            container_id: opt_value(argv, &["-c", "--cid"]),
        }),
        Program::Containerd | Program::Crio | Program::Dockerd => Some(role(Role::RuntimeDaemon)),
        Program::CniPlugin => Some(role(Role::CniPlugin)),
        Program::Podman | Program::Other => None,
    }
}

/// The reference plugins of containernetworking/plugins (main, ipam, meta), as runtimes find
/// them in their CNI bin directories (`/opt/cni/bin`, Debian's `/usr/lib/cni`, or whatever
/// `bin_dir` / `--cni-bin-dir` says).
pub const CNI_PLUGINS: &[&str] = &[
    "bridge",
    "host-device",
    "ipvlan",
    "loopback",
    "macvlan",
    "ptp",
    "vlan",
    "dummy",
    "tap",
    "win-bridge",
    "win-overlay",
    "host-local",
    "dhcp",
    "static",
    "bandwidth",
    "firewall",
    "portmap",
    "sbr",
    "tuning",
    "vrf",
    "flannel",
    "calico",
    "calico-ipam",
    "cilium-cni",
];

/// A path in a directory CNI plugins live in by convention (`…/cni/bin/X`, `…/cni/X`).
fn in_cni_dir(path: &str) -> bool {
    let Some((dir, name)) = path.rsplit_once('/') else {
        return false;
    };
    !name.is_empty() && (dir.ends_with("/cni/bin") || dir.ends_with("/cni"))
}

/// Whether an exec'd program is a standard CNI plugin by name (the engine also asks for a
/// runtime daemon among its ancestors before calling it one: `bridge` alone is too common).
pub fn is_cni_plugin_name(exe: Option<&str>, argv: &[String]) -> bool {
    let named = |p: &str| CNI_PLUGINS.contains(&basename(p));
    exe.is_some_and(named) || argv.first().is_some_and(|a| named(a))
}

/// The value of `-id X`, `--id X` or `--id=X`.
fn opt_value(argv: &[String], names: &[&str]) -> Option<String> {
    let mut it = argv.iter().skip(1);
    while let Some(a) = it.next() {
        if names.contains(&a.as_str()) {
            return it.next().filter(|v| !v.is_empty()).cloned();
        }
        if let Some((k, v)) = a.split_once('=') {
            if names.contains(&k) && !v.is_empty() {
                return Some(v.to_string());
            }
        }
    }
    None
}

/// Global runc/crun options that take a value.
const GLOBAL_VALUE_OPTS: &[&str] = &[
    "--root",
    "--log",
    "--log-format",
    "--criu",
    "--rootless",
    "--cgroup-manager",
];
/// Subcommand options that take a value.
const SUB_VALUE_OPTS: &[&str] = &[
    "--bundle",
    "-b",
    "--console-socket",
    "--pid-file",
    "--preserve-fds",
    "--process",
    "-p",
    "--cwd",
    "--env",
    "-e",
    "--user",
    "-u",
    "--cap",
    "-c",
    "--apparmor",
    "--process-label",
    "--additional-gids",
    "-g",
    "--image-path",
    "--work-path",
    "--parent-path",
    "--page-server",
    "--manage-cgroups-mode",
    "--empty-ns",
    "--format",
    "-f",
    "--interval",
];

/// runc/crun argv: `runc [global opts] SUBCOMMAND [opts] ID ...`.
fn classify_oci(argv: &[String]) -> Classified {
    let mut i = 1;
    let mut sub = None;
    while i < argv.len() {
        let a = argv[i].as_str();
        if a.starts_with('-') {
            if !a.contains('=') && GLOBAL_VALUE_OPTS.contains(&a) {
                i += 1;
            }
            i += 1;
            continue;
        }
        sub = Some(a);
        i += 1;
        break;
    }
    let Some(sub) = sub else {
        return Classified {
            role: Role::OciRuntime { subcommand: None },
            container_id: None,
        };
    };
    if sub == "init" {
        return Classified {
            role: Role::OciInit { stage: None },
            container_id: None,
        };
    }
    let cmd = OciCommand::parse(sub);
    let mut bundle = None;
    let mut id = None;
    while i < argv.len() {
        let a = argv[i].as_str();
        if a.starts_with('-') && a.len() > 1 {
            if let Some(v) = a.strip_prefix("--bundle=") {
                bundle = Some(v);
            } else if !a.contains('=') && SUB_VALUE_OPTS.contains(&a) {
                if matches!(a, "--bundle" | "-b") {
                    bundle = argv.get(i + 1).map(String::as_str);
                }
                i += 1;
            }
            i += 1;
            continue;
        }
        id = Some(a);
        break;
    }
    let container_id = if cmd.takes_id() {
        id.or_else(|| bundle.map(|b| basename(b.trim_end_matches('/'))))
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    } else {
        None
    };
    Classified {
        role: Role::OciRuntime {
            subcommand: Some(cmd),
        },
        container_id,
    }
}
