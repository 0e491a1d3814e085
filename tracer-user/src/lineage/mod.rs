//! Lineage engine: turns lifecycle events into the kernel's process tree.
//!
//! [`Engine`] is a pure state machine: [`Engine::apply`] takes events in seq order (it copes
//! with gaps, reordering and unknown pids, turning them into [`Warning`]s), and the queries
//! give the current tree with each process's lineage history, runtime [`Role`]s and the
//! container-birth [`Story`]s. [`view`] renders the tree and stories as text and JSON.

mod engine;
mod process;
mod reaper;
mod roles;
mod story;
mod transition;
pub mod view;

#[cfg(test)]
mod tests;

pub use engine::{
    replay_until, Ancestors, Engine, SnapshotProcess, Warning, WarningKind, MAX_WARNINGS,
};
pub use process::{ExecRecord, How, LineageEntry, ProcId, Process, Reaper, Reason, Rename, Thread};
pub use roles::{basename, classify, Classified, InitStage, OciCommand, Role};
pub use story::{stories, StepKind, Story, StoryKind, StoryStep};
pub use transition::{Actor, Adapter, Birth, ExecDone, Transition};
pub use view::{
    node_label, story_json, story_text, traced_tree_text, tree_json, tree_text, TreeOpts,
};
