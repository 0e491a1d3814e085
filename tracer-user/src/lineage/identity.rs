//! Who may speak for a container: the runtime daemon, a shim, an OCI runtime and its init
//! stages, a CNI plugin. A process's name and argv prove nothing (anyone can exec a binary
//! called `runc`, or `exec -a containerd-shim-runc-v2 … -id VICTIM`); what decides is what the
//! kernel says of its credentials and of the file it runs (docs/lineage.md, "Who may speak for
//! a container").

pub use crate::event::program::{Installed, Program, CNI_DIRS, INSTALLED};
use crate::event::ExecCred;

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
    /// Its real uid is not 0: it is root only by the setuid (or file-capability) file it
    /// exec'd, which is that file's program, never the runtime.
    SetId,
    /// Its executable is none of the runtimes' installed files (nor a re-exec of one): a
    /// copy, a symlink's target, any other program under a runtime's name.
    NotInstalled,
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
            Refusal::SetId => "setuid_exec",
            Refusal::NotInstalled => "executable_not_installed",
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
            Refusal::SetId => "it is root only by a setuid exec (its real uid is not 0)",
            Refusal::NotInstalled => "its executable is not the runtime's installed file",
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

/// The standing the kernel's word `cred` gives a process of real uid `ruid` (`u32::MAX`:
/// unknown) running `program` (None: not judged, a recording older than the judgment); the
/// first rule it breaks refuses it.
///
/// Real uid: execve never changes it, and a setuid-root file run by anyone else makes its
/// effective and saved uids 0 (fs/exec.c bprm_fill_uid(), security/commoncap.c
/// cap_bprm_creds_from_file() sets suid = fsuid = euid) — so real, effective and filesystem
/// uids all 0 after the exec mean no privilege was gained by it.
pub fn standing(cred: Option<&ExecCred>, ruid: u32) -> Standing {
    let Some(c) = cred else {
        return Standing::Unverified;
    };
    let refusal = if c.euid != 0 || c.fsuid != 0 {
        Some(Refusal::NotRoot)
    } else if ruid != 0 && ruid != u32::MAX {
        Some(Refusal::SetId)
    } else if c.userns_level != 0 {
        Some(Refusal::UserNamespace)
    } else if c.pidns_level != 0 {
        Some(Refusal::ContainerPidNs)
    } else if !c.host_mnt {
        Some(Refusal::ContainerMntNs)
    } else if c.exe.is_some_and(|x| !x.roots_alone()) {
        Some(Refusal::Executable)
    } else if c.program == Some(Program::Other) {
        Some(Refusal::NotInstalled)
    } else {
        None
    };
    refusal.map_or(Standing::Trusted, Standing::Refused)
}

/// The credentials of an exec by a process that ran `before`: an OCI runtime re-executing
/// itself from a file with no name left (runc copies itself into a sealed memfd and execs
/// that, against CVE-2019-5736) is still that runtime; any other exec is its file's program.
pub fn reexec(mut cred: ExecCred, before: Option<Program>) -> ExecCred {
    let nameless = cred.exe.is_some_and(|x| x.nlink == 0);
    let runtime = matches!(before, Some(Program::Runc | Program::Crun));
    if cred.program == Some(Program::Other) && nameless && runtime {
        cred.program = before;
    }
    cred
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::ExeFile;

    fn root_on_host() -> ExecCred {
        crate::synth::root_cred()
    }

    #[test]
    fn root_on_the_host_running_roots_file_is_trusted_and_every_rule_refuses_alone() {
        let ok = root_on_host();
        assert_eq!(standing(Some(&ok), 0), Standing::Trusted);
        assert_eq!(standing(None, 0), Standing::Unverified);
        let refused = |f: &dyn Fn(&mut ExecCred)| {
            let mut c = ok;
            f(&mut c);
            standing(Some(&c), 0)
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

    /// nobody running a setuid-root file has euid and fsuid 0 and its own real uid.
    #[test]
    fn root_by_a_setuid_exec_is_refused_and_the_file_decides_the_program() {
        let root = root_on_host();
        assert_eq!(standing(Some(&root), 0), Standing::Trusted);
        let r = Standing::Refused;
        assert_eq!(standing(Some(&root), 65534), r(Refusal::SetId));
        assert_eq!(standing(Some(&root), u32::MAX), Standing::Trusted);
        let judged = |p| ExecCred {
            program: Some(p),
            ..root
        };
        assert_eq!(standing(Some(&judged(Program::Runc)), 0), Standing::Trusted);
        let other = judged(Program::Other);
        assert_eq!(standing(Some(&other), 0), r(Refusal::NotInstalled));

        let x = root.exe.expect("exe");
        let mut table = Installed::default();
        table.add(x.dev, x.ino, Program::Runc);
        assert_eq!(table.program_of(&x), Program::Runc);
        let elsewhere = ExeFile {
            ino: x.ino + 1,
            ..x
        };
        assert_eq!(table.program_of(&elsewhere), Program::Other);
        let writable = ExeFile {
            mode: 0o100_777,
            ..x
        };
        assert_eq!(table.program_of(&writable), Program::Other);
        let nobodys = ExeFile { uid: 65534, ..x };
        assert_eq!(table.program_of(&nobodys), Program::Other);
    }

    /// runc's exec of its sealed copy stays runc; a nameless file is nothing else's.
    #[test]
    fn only_a_runtime_re_executing_from_a_nameless_file_keeps_its_program() {
        let memfd = ExecCred {
            program: Some(Program::Other),
            exe: root_on_host().exe.map(|x| ExeFile {
                nlink: 0,
                mode: 0o100_777,
                ..x
            }),
            ..root_on_host()
        };
        let after = |before| reexec(memfd, before).program;
        assert_eq!(after(Some(Program::Runc)), Some(Program::Runc));
        assert_eq!(after(Some(Program::Crun)), Some(Program::Crun));
        assert_eq!(after(Some(Program::ContainerdShim)), Some(Program::Other));
        assert_eq!(after(Some(Program::Other)), Some(Program::Other));
        assert_eq!(after(None), Some(Program::Other));
        let named = ExecCred {
            exe: root_on_host().exe,
            ..memfd
        };
        assert_eq!(
            reexec(named, Some(Program::Runc)).program,
            Some(Program::Other)
        );
        for p in Program::ALL {
            assert_eq!(Program::from_code(p.code()), Some(p));
        }
    }
}
