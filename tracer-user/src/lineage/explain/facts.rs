//! The facts a story's explanations tell apart, read from the records once the story is
//! built: which rule of find_new_reaper() adopted a process, who got a death's SIGCHLD, whose
//! signal a step is, which `runc delete` is containerd's cleanup, the CNI plugins and who ran
//! them, an exec'd process killed with its pid namespace.

use super::super::process::{How, Process, Reason};
use super::super::reads::Ctx;
use super::super::roles::{OciCommand, Role};
use super::super::story::{Facts, Parent, StepKind, Story, StoryKind, StoryStep};

/// A plugin's name at most this long in an explanation (it comes from the recording).
const NAME_MAX: usize = 32;

/// Sets every step's [`Facts`] from the records it shows.
pub(in crate::lineage) fn annotate(c: &Ctx, st: &mut Story) {
    let (shim, kind, init) = (st.shim_pid, st.kind, st.init_pid);
    for step in &mut st.steps {
        step.facts = facts(c, step, shim, kind, init);
    }
}

fn facts(c: &Ctx, s: &StoryStep, shim: Option<u32>, kind: StoryKind, init: u32) -> Facts {
    let me = || c.born_by(s.pid, s.seq);
    match s.kind {
        StepKind::ShimAdopted | StepKind::InitAdopted | StepKind::ExecAdopted => me()
            .and_then(|p| adoption(p, s.seq))
            .map_or(Facts::None, Facts::Adopted),
        StepKind::InitReaped | StepKind::ShimReaped => {
            Facts::Reaped(parent(me(), s.pid, shim, kind))
        }
        StepKind::SignalSent => signal(c, s, init),
        StepKind::RuntimeDelete => me().map_or(Facts::None, |d| delete(c, d, shim)),
        StepKind::CniPlugin | StepKind::CniTeardown => me().map_or(Facts::None, |p| cni(c, p)),
        StepKind::ExecEnded => Facts::ExecEnd {
            zapped: me().is_some_and(|p| p.zapped_by().is_some()),
        },
        _ => Facts::None,
    }
}

/// The rule that picked the parent of `p`'s adoption at `seq`.
fn adoption(p: &Process, seq: u64) -> Option<super::super::process::Reaper> {
    p.lineage
        .iter()
        .filter(|l| l.how == How::Adopted && l.seq == seq)
        .find_map(|l| match l.reason {
            Some(Reason::ParentExited { reaper, .. }) => Some(reaper),
            _ => None,
        })
}

/// Who the parent of record that got a SIGCHLD was.
fn parent(p: Option<&Process>, pid: u32, shim: Option<u32>, kind: StoryKind) -> Parent {
    let runtime = p.is_some_and(|p| matches!(p.role, Some(Role::OciRuntime { .. })));
    match (Some(pid) == shim, kind) {
        (true, StoryKind::Conmon) => Parent::Conmon,
        (true, _) => Parent::Shim,
        _ if runtime => Parent::Runtime,
        _ if pid == 1 => Parent::Init,
        _ => Parent::Other,
    }
}

/// The signal a [`StepKind::SignalSent`] step shows: its number, and whether the OCI
/// runtime's `kill` sent it.
fn signal(c: &Ctx, s: &StoryStep, init: u32) -> Facts {
    let Some(rec) = c
        .born_by(init, s.seq)
        .and_then(|i| i.signals().iter().find(|r| r.seq == s.seq).cloned())
    else {
        return Facts::None;
    };
    let runtime_kill = c.born_by(rec.sender, s.seq).is_some_and(|p| {
        p.role
            == Some(Role::OciRuntime {
                subcommand: Some(OciCommand::Kill),
            })
    });
    Facts::Signal {
        signal: rec.signal,
        runtime_kill,
    }
}

/// `runc delete` run by the pod's shim, or by the shim binary's own `delete` command.
fn delete(c: &Ctx, d: &Process, shim: Option<u32>) -> Facts {
    let by = d.birth_parent.and_then(|b| c.meta(b));
    let cleanup = by.is_some_and(|b| {
        b.role == Some(Role::Shim) && Some(b.pid) != shim && b.argv.iter().any(|a| a == "delete")
    });
    Facts::Delete {
        cleanup,
        force: d.argv.iter().any(|a| a == "--force" || a == "-f"),
    }
}

/// A CNI plugin and the plugin that ran it, if one did (an IPAM plugin).
fn cni(c: &Ctx, p: &Process) -> Facts {
    let by = p
        .birth_parent
        .and_then(|b| c.meta(b))
        .filter(|b| b.role == Some(Role::CniPlugin));
    Facts::Cni {
        plugin: bounded(&p.name()),
        delegated_by: by.map(|b| bounded(&b.name())),
    }
}

/// A name from the recording, escaped and cut to [`NAME_MAX`] characters.
fn bounded(name: &str) -> String {
    let cut: String = name.chars().take(NAME_MAX).collect();
    crate::escape::escape(&cut).into_owned()
}

/// The CNI plugin runs a story's steps of `kind` show, in their order: each plugin's name
/// and the plugin that ran it, if one did.
pub(crate) fn cni_runs(st: &Story, kind: StepKind) -> impl Iterator<Item = (&str, Option<&str>)> {
    st.steps
        .iter()
        .filter(move |s| s.kind == kind)
        .filter_map(|s| match &s.facts {
            Facts::Cni {
                plugin,
                delegated_by,
            } => Some((plugin.as_str(), delegated_by.as_deref())),
            _ => None,
        })
}

#[cfg(test)]
mod tests {
    /// A plugin's name comes from the recording: an explanation gets it escaped and cut.
    #[test]
    fn names_from_the_recording_are_escaped_and_bounded() {
        let hostile = format!("\u{1b}[2J\u{202e}bridge{}", "x".repeat(100));
        let b = super::bounded(&hostile);
        assert!(
            !b.chars().any(|c| c.is_control() || c == '\u{202e}'),
            "{b:?}"
        );
        assert!(b.len() < 100, "{b:?}");
        assert_eq!(super::bounded("host-local"), "host-local");
    }
}
