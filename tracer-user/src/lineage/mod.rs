//! Lineage engine: turns lifecycle events into the kernel's process tree.
//!
//! [`Engine`] is a pure state machine: [`Engine::apply`] takes events in seq order (it copes
//! with gaps, reordering and unknown pids, turning them into [`Warning`]s), and the queries
//! give the current tree with each process's lineage history, runtime [`Role`]s and the
//! container-birth [`Story`]s. [`view`] renders the tree and stories as text and JSON.

pub mod across;
pub mod bundle;
mod cow;
mod death;
mod ending;
mod engine;
pub mod explain;
pub mod identity;
pub mod k8s;
pub mod kubelet;
mod lifecycle;
mod pidmap;
pub mod pod;
mod process;
mod reads;
mod reaper;
pub mod restart;
mod restart_story;
mod roles;
mod select;
mod store;
mod stories;
mod story;
mod transition;
mod tree;
pub mod view;

#[cfg(test)]
mod tests;

pub use ending::{terminates, Death, DeathHow, OomMark, SigchldChecks, SignalRecord, MAX_SIGNALS};
pub use engine::Retention;
pub use engine::{replay_until, Engine, SnapshotProcess, Warning, WarningKind, MAX_WARNINGS};
pub use pod::{
    in_pod, pod_scope, resolve as resolve_pod, story_in_pod, LiveScope, PodError, PodEvents,
    PodMatch, PodQuery, PodScope, SelectedPod,
};
pub use process::{
    adoption_kind, AdoptionTotals, CgroupMove, ExecRecord, How, LineageEntry, ProcId, Process,
    Reaper, Reason, Rename, SmallList, Thread, ADOPTION_KINDS,
};
pub use roles::{basename, classify, classify_program, Classified, InitStage, OciCommand, Role};
pub use select::{select_story, StoryChoiceError};
pub use stories::{stories, Stories, Work as StoryWork};
pub use story::{Facts, Parent, Phase, StepKind, Story, StoryKind, StoryStep};
pub use transition::{Actor, Adapter, Birth, ExecDone, Transition};
pub use tree::{Ancestors, NewParent};
pub use view::{
    node_label, numbered_story_text, pod_tree_text, story_json, story_text, story_text_with,
    subtree_text, traced_tree_text, tree_json, tree_text, write_tree_json, write_tree_text,
    JsonWarning, TextTree, TreeOpts,
};
