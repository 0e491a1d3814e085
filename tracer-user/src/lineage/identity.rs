//! Who may speak for a container: the runtime daemon, a shim, an OCI runtime and its init
//! stages, a CNI plugin. A process's name and argv prove nothing (anyone can exec a binary
//! called `runc`, or `exec -a containerd-shim-runc-v2 … -id VICTIM`); what decides is what the
//! kernel says of its credentials and of the file it runs (docs/lineage.md, "Who may speak for
//! a container").

use crate::event::{ExeFile, ExecCred};

/// Why the kernel's word on a process keeps it from speaking for a container.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Refusal {
    /// Its effective or filesystem uid is not 0: it is not root.
    NotRoot,
    /// It lives in a user namespace other than the initial one: its uid 0 is nobody's on the
    /// host (kernel/user_namespace.c: a namespace's ids map onto its parent's).
    UserNamespace,
    /// It lives in a pid namespace below the host's: a container's process, whatever its uid.
    ContainerPidNs,
    /// It lives in a mount namespace other than the host's: a container's (root there owns
    /// every file it sees, so it can run any binary under any name).
    ContainerMntNs,
    /// Its executable belongs to another user than root, or others may write it.
    Executable,
}

impl Refusal {
    /// As in JSON (`not_root`).
    pub fn as_str(self) -> &'static str {
        match self {
            Refusal::NotRoot => "not_root",
            Refusal::UserNamespace => "user_namespace",
            Refusal::ContainerPidNs => "container_pid_namespace",
            Refusal::ContainerMntNs => "container_mount_namespace",
            Refusal::Executable => "executable_not_roots",
        }
    }

    /// Said to a reader (`it is not root`).
    pub fn text(self) -> &'static str {
        match self {
            Refusal::NotRoot => "it is not root",
            Refusal::UserNamespace => "its root is a user namespace's, not the host's",
            Refusal::ContainerPidNs => "it runs inside a container's pid namespace",
            Refusal::ContainerMntNs => "it runs inside a container's mount namespace",
            Refusal::Executable => "its executable is not root's alone",
        }
    }
}

/// Whether a process may speak for a container, by what the source saw of it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Standing {
    /// The source could not tell (an strace log, a recording older than credentials, a
    /// process whose /proc entry was unreadable): taken at its word, as before credentials
    /// were recorded.
    #[default]
    Unverified,
    /// Root of the initial user namespace in the host's pid and mount namespaces, running a
    /// file only root may change.
    Trusted,
    /// The kernel says it cannot.
    Refused(Refusal),
}

impl Standing {
    /// The process may speak for a container (trusted, or a source that cannot tell).
    pub fn may_speak(self) -> bool {
        !matches!(self, Standing::Refused(_))
    }

    /// As in JSON: `trusted`, `unverified`, or the refusal (`not_root`).
    pub fn as_str(self) -> &'static str {
        match self {
            Standing::Unverified => "unverified",
            Standing::Trusted => "trusted",
            Standing::Refused(r) => r.as_str(),
        }
    }
}

/// The standing the kernel's word `cred` gives a process; the first rule it breaks refuses it.
pub fn standing(cred: Option<&ExecCred>) -> Standing {
    let Some(c) = cred else {
        return Standing::Unverified;
    };
    let refusal = if c.euid != 0 || c.fsuid != 0 {
        Some(Refusal::NotRoot)
    } else if c.userns_level != 0 {
        Some(Refusal::UserNamespace)
    } else if c.pidns_level != 0 {
        Some(Refusal::ContainerPidNs)
    } else if !c.host_mnt {
        Some(Refusal::ContainerMntNs)
    } else if c.exe.is_some_and(|x| !roots_alone(&x)) {
        Some(Refusal::Executable)
    } else {
        None
    };
    refusal.map_or(Standing::Trusted, Standing::Refused)
}

/// Only root can change the file: owned by root and not writable by group or others — unless
/// it has no name left (a memfd, as runc re-executes itself from a sealed one, or a deleted
/// file), which nobody can open by a path to write.
fn roots_alone(x: &ExeFile) -> bool {
    x.uid == 0 && (x.mode & 0o022 == 0 || x.nlink == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root_on_host() -> ExecCred {
        crate::synth::root_cred()
    }

    #[test]
    fn root_on_the_host_running_roots_file_is_trusted_and_every_rule_refuses_alone() {
        let ok = root_on_host();
        assert_eq!(standing(Some(&ok)), Standing::Trusted);
        assert_eq!(standing(None), Standing::Unverified);
        let refused = |f: &dyn Fn(&mut ExecCred)| {
            let mut c = ok;
            f(&mut c);
            standing(Some(&c))
        };
        let r = Standing::Refused;
        assert_eq!(refused(&|c| c.euid = 65534), r(Refusal::NotRoot));
        assert_eq!(refused(&|c| c.fsuid = 1000), r(Refusal::NotRoot));
        assert_eq!(refused(&|c| c.userns_level = 1), r(Refusal::UserNamespace));
        assert_eq!(refused(&|c| c.pidns_level = 1), r(Refusal::ContainerPidNs));
        assert_eq!(refused(&|c| c.host_mnt = false), r(Refusal::ContainerMntNs));
        let exe = |f: &dyn Fn(&mut ExeFile)| {
            refused(&|c| {
                if let Some(x) = c.exe.as_mut() {
                    f(x)
                }
            })
        };
        assert_eq!(exe(&|x| x.uid = 65534), r(Refusal::Executable));
        assert_eq!(exe(&|x| x.mode = 0o100777), r(Refusal::Executable));
        assert_eq!(exe(&|x| x.mode = 0o100775), r(Refusal::Executable));
        // runc's sealed memfd: mode 0777, no name.
        assert_eq!(
            exe(&|x| {
                x.mode = 0o100777;
                x.nlink = 0
            }),
            Standing::Trusted
        );
        // Unread executable: the credentials alone decide.
        assert_eq!(refused(&|c| c.exe = None), Standing::Trusted);
    }
}
