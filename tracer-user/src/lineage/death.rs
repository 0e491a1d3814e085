//! Signals and deaths: who sent what to whom (kernel/signal.c __send_signal_locked(),
//! do_notify_parent()), the OOM killer's victims (mm/oom_kill.c mark_oom_victim()), and how
//! each process ended.

use crate::event::{OomInfo, SignalInfo};

use super::engine::Engine;
use super::transition::Actor;

impl Engine {
    /// A generated signal.
    pub(super) fn on_signal(&mut self, _a: &Actor, _info: &SignalInfo) {}

    /// The OOM killer chose a victim.
    pub(super) fn on_oom_victim(&mut self, _a: &Actor, _info: &OomInfo) {}
}
