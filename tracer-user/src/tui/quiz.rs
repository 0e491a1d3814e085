//! Guided replay's quiz: before a step that shows a choice of the kernel's (who adopts an
//! orphan, which reaper, whose child a CLONE_PARENT clone is, who sent a death's signal) is
//! revealed, the user names the pid; the step's own explanation
//! ([`crate::lineage::explain::why`]) says the rule once the answer is judged.

use std::collections::HashSet;

use crate::lineage::{Engine, StepKind, Story, StoryStep};

/// The quiz's state: on or off, the question open, the answers judged and the score.
#[derive(Clone, Debug, Default)]
pub struct Quiz {
    /// Quiz mode (`--quiz`, `Q`).
    pub on: bool,
    /// The step (an index into the story pane's steps) asked about now; the replay waits
    /// just before its event.
    pub asking: Option<usize>,
    /// Digits typed as the answer.
    pub typed: String,
    /// An answer given, judged once the replay has reached its step: (step, the pid named;
    /// `None`: passed).
    pub judging: Option<(usize, Option<u32>)>,
    /// The last answer judged.
    pub verdict: Option<Verdict>,
    /// Steps asked already (never asked twice).
    pub answered: HashSet<usize>,
    /// Answers right.
    pub right: u32,
    /// Questions judged.
    pub asked: u32,
}

/// One answer, judged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// The step it was about.
    pub step: usize,
    /// The pid named (`None`: passed).
    pub guess: Option<u32>,
    /// The pid the recording shows (`None`: it shows none).
    pub truth: Option<u32>,
}

impl Verdict {
    /// Named the pid the recording shows.
    pub fn right(&self) -> bool {
        self.guess.is_some() && self.guess == self.truth
    }
}

/// Does the quiz ask before step kind `k`: an adoption (the reaper the kernel chose), the
/// parent a CLONE_PARENT clone gets, or the sender of a signal sent to a dying init?
pub fn asks(k: StepKind) -> bool {
    matches!(
        k,
        StepKind::ShimAdopted
            | StepKind::InitAdopted
            | StepKind::ExecAdopted
            | StepKind::ChildCloned
            | StepKind::InitCloned
            | StepKind::ExecCloned
            | StepKind::SignalSent
    )
}

/// The question asked before `step`, from its own line cut before the answer.
pub fn question(step: &StoryStep) -> String {
    let t = step.text.as_str();
    match step.kind {
        StepKind::SignalSent => {
            let what = t.split_once(" sent ").map_or(t, |(_, r)| r);
            let what = what.split(" —").next().unwrap_or(what);
            let what = what.split(", ").next().unwrap_or(what);
            format!("who sent {what}?")
        }
        StepKind::ChildCloned | StepKind::InitCloned | StepKind::ExecCloned => {
            let what = t.split(": parent").next().unwrap_or(t);
            format!("{what}: whose child is {}?", step.pid)
        }
        _ => {
            let who = t.split(" adopted by").next().unwrap_or(t);
            format!("who adopts {who}?")
        }
    }
}

/// The pid the answer to `step` is, as the engine shows it once the step's event is
/// applied: the sender of a signal (the step's own pid), else the parent the step's
/// process got at that event.
pub fn truth(e: &Engine, step: &StoryStep) -> Option<u32> {
    if step.kind == StepKind::SignalSent {
        return Some(step.pid);
    }
    let p = e.process(step.pid)?;
    p.lineage
        .iter()
        .find(|l| l.seq == step.seq)
        .map(|l| l.parent)
        .filter(|&pid| pid != 0)
}

impl Quiz {
    /// The answer waiting for its step, judged when the replay has applied the step's event
    /// (`at`: the last seq applied) in `e`; `stories` are the ones the steps are counted in.
    /// Whether it was judged now.
    pub fn judge(&mut self, stories: &[Story], e: &Engine, at: Option<u64>) -> bool {
        let Some((k, guess)) = self.judging else {
            return false;
        };
        let Some(step) = stories.iter().flat_map(|s| &s.steps).nth(k) else {
            self.judging = None;
            return false;
        };
        if at.is_none_or(|a| a < step.seq) {
            return false;
        }
        let v = Verdict {
            step: k,
            guess,
            truth: truth(e, step),
        };
        self.asked += 1;
        self.right += u32::from(v.right());
        self.verdict = Some(v);
        self.judging = None;
        true
    }

    /// Questions `stories` hold that are not asked yet.
    pub fn left(&self, stories: &[Story]) -> usize {
        let steps = stories.iter().flat_map(|s| &s.steps);
        steps
            .enumerate()
            .filter(|(k, st)| asks(st.kind) && !self.answered.contains(k))
            .count()
    }
}
