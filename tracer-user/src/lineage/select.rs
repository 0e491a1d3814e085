//! `--story N|CONTAINER|KIND`: which story of a list a user means, the same rule for
//! `story`, `export`, `view` and `demo`.

use super::pod::listed;
use super::story::Story;
use crate::escape::escape;

/// The phase words every recording may hold; a phase a newer engine adds is a word too as
/// soon as a story of it is listed (its `as_str()`).
const KINDS: [&str; 4] = ["birth", "exec", "death", "restart"];

/// Why no story answers to a selector.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoryChoiceError {
    /// A number outside `1..=count`.
    #[error(
        "no story {number} (numbered from 1 as `tracer story` lists them): the recording has {}",
        has(*count, containers, phases)
    )]
    NoNumber {
        /// What was asked for.
        number: usize,
        /// Stories in the list.
        count: usize,
        /// The containers they are of (names, else short ids), in list order.
        containers: Vec<String>,
        /// Their phases, in list order.
        phases: Vec<String>,
    },
    /// No story of that container, of that phase, or both.
    #[error(
        "no story matches {}: the recording has {}",
        escape(selector),
        has(*count, containers, phases)
    )]
    NoMatch {
        /// What was asked for.
        selector: String,
        /// Stories in the list.
        count: usize,
        /// The containers they are of.
        containers: Vec<String>,
        /// Their phases.
        phases: Vec<String>,
    },
    /// A container-id prefix that several containers' ids start with.
    #[error(
        "{} is the start of several container ids ({}); give more of it or the container's name",
        escape(selector),
        listed("", ids)
    )]
    Ambiguous {
        /// What was asked for.
        selector: String,
        /// The ids it starts (short form).
        ids: Vec<String>,
    },
}

/// `N stories (1-N) of containers a, b (phases birth, death)`, or `no stories`.
fn has(count: usize, containers: &[String], phases: &[String]) -> String {
    if count == 0 {
        return "no stories".into();
    }
    format!(
        "{count} stories (1-{count}; {}; {})",
        listed("containers", containers),
        listed("phases", phases)
    )
}

/// The index in `stories` of the story `sel` names, as `--story` takes it: `N` (numbered
/// from 1 in list order), `CONTAINER` (a container's name, or its id or a prefix of it: its
/// first story), `CONTAINER:KIND` (that container's first story of that phase, `hog:death`)
/// or `KIND` alone (the first story of that phase: birth, exec, death, restart; `restart`
/// also names a runtime daemon's restart).
pub fn select_story(stories: &[Story], sel: &str) -> Result<usize, StoryChoiceError> {
    let sel = sel.trim();
    // A number in range is a number; other digits may start a container's id.
    if !sel.is_empty() && sel.bytes().all(|b| b.is_ascii_digit()) {
        let n = sel.parse::<usize>().unwrap_or(usize::MAX);
        if let Some(i) = n.checked_sub(1).filter(|&i| i < stories.len()) {
            return Ok(i);
        }
        ambiguous_id(stories, sel)?;
        return stories
            .iter()
            .position(|s| of_container(s, sel))
            .ok_or_else(|| no_number(stories, n));
    }
    let (who, kind) = match sel.rsplit_once(':') {
        Some((c, k)) if is_kind(stories, k) => (Some(c), Some(k)),
        _ if is_kind(stories, sel) => (None, Some(sel)),
        _ => (Some(sel), None),
    };
    if let Some(c) = who {
        ambiguous_id(stories, c)?;
    }
    stories
        .iter()
        .position(|s| who.is_none_or(|c| of_container(s, c)) && kind.is_none_or(|k| of_kind(s, k)))
        .ok_or_else(|| no_match(stories, sel))
}

/// Is `word` a phase word: one of [`KINDS`] or a listed story's phase?
fn is_kind(stories: &[Story], word: &str) -> bool {
    KINDS.contains(&word) || stories.iter().any(|s| s.phase.as_str() == word)
}

/// Is `s` of phase `kind`? `restart` is also a runtime daemon's restart.
fn of_kind(s: &Story, kind: &str) -> bool {
    let p = s.phase.as_str();
    p == kind || (kind == "restart" && p == "runtime_restart")
}

/// Is `s` a story of container `c`: its name, or its id or a prefix of it?
fn of_container(s: &Story, c: &str) -> bool {
    !c.is_empty()
        && (s.container_name.as_deref() == Some(c)
            || s.container_id
                .as_deref()
                .is_some_and(|id| id.starts_with(c)))
}

/// An id prefix that starts several containers' ids, and names none of them, is an error.
fn ambiguous_id(stories: &[Story], c: &str) -> Result<(), StoryChoiceError> {
    if stories
        .iter()
        .any(|s| s.container_name.as_deref() == Some(c))
    {
        return Ok(());
    }
    let mut ids: Vec<String> = Vec::new();
    for id in stories.iter().filter_map(|s| s.container_id.as_deref()) {
        if !c.is_empty() && id.starts_with(c) && !ids.iter().any(|k| id.starts_with(k.as_str())) {
            ids.push(short(id).to_string());
        }
    }
    match ids.len() {
        0 | 1 => Ok(()),
        _ => Err(StoryChoiceError::Ambiguous {
            selector: c.to_string(),
            ids,
        }),
    }
}

/// The first twelve characters of an id, as crictl prints it.
fn short(id: &str) -> &str {
    id.char_indices().nth(12).map_or(id, |(i, _)| &id[..i])
}

/// The containers (name, else short id) and phases of `stories`, each once, in list order.
fn what_is_there(stories: &[Story]) -> (Vec<String>, Vec<String>) {
    let (mut containers, mut phases) = (Vec::new(), Vec::new());
    for s in stories {
        let c = s
            .container_name
            .as_deref()
            .or(s.container_id.as_deref().map(short));
        if let Some(c) = c.filter(|c| !containers.iter().any(|k: &String| k == c)) {
            containers.push(c.to_string());
        }
        let p = s.phase.as_str().to_string();
        if !phases.contains(&p) {
            phases.push(p);
        }
    }
    (containers, phases)
}

fn no_number(stories: &[Story], number: usize) -> StoryChoiceError {
    let (containers, phases) = what_is_there(stories);
    StoryChoiceError::NoNumber {
        number,
        count: stories.len(),
        containers,
        phases,
    }
}

fn no_match(stories: &[Story], sel: &str) -> StoryChoiceError {
    let (containers, phases) = what_is_there(stories);
    StoryChoiceError::NoMatch {
        selector: sel.to_string(),
        count: stories.len(),
        containers,
        phases,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lineage::{Phase, StoryKind};

    fn story(phase: Phase, name: Option<&str>, id: &str) -> Story {
        Story {
            phase,
            attempt: None,
            previous_init: None,
            container_id: Some(id.into()),
            kind: StoryKind::Containerd,
            runtime: None,
            sandbox_id: None,
            sandbox: name.is_none(),
            shim_pid: None,
            runtime_pid: None,
            init_pid: 1,
            workload: None,
            pod: Some("lab/life".into()),
            container_name: name.map(Into::into),
            steps: Vec::new(),
            terminated: None,
            restart: None,
            runtime_restart: None,
        }
    }

    /// `restart` names a container's restart or, first in list order, a runtime daemon's.
    #[test]
    fn restart_also_names_a_runtime_restart() {
        let mut l = list();
        l.insert(2, story(Phase::RuntimeRestart, None, "-"));
        assert_eq!(select_story(&l, "restart"), Ok(2));
        assert_eq!(select_story(&l, "runtime_restart"), Ok(2));
        l.remove(2);
        assert_eq!(select_story(&l, "restart"), Ok(5));
    }

    /// The lifecycle demo's shape: a sandbox, app (with an exec), a crasher that restarts
    /// under a new id, a hog that dies.
    fn list() -> Vec<Story> {
        vec![
            story(Phase::Birth, None, "1b452cdec5b0aa"),
            story(Phase::Birth, Some("app"), "7bf17a834fbdaa"),
            story(Phase::Exec, Some("app"), "7bf17a834fbdaa"),
            story(Phase::Birth, Some("crasher"), "4feb0e2d608daa"),
            story(Phase::Death, Some("crasher"), "4feb0e2d608daa"),
            story(Phase::Restart, Some("crasher"), "9c47b70c7e76aa"),
            story(Phase::Birth, Some("hog"), "70008cfc84c9aa"),
            story(Phase::Death, Some("hog"), "70008cfc84c9aa"),
        ]
    }

    #[test]
    fn a_number_counts_from_one_in_list_order() {
        let l = list();
        assert_eq!(select_story(&l, "1"), Ok(0));
        assert_eq!(select_story(&l, "8"), Ok(7));
        for bad in ["0", "12", "99999999999999999999999"] {
            let e = select_story(&l, bad).unwrap_err().to_string();
            assert!(e.contains("8 stories (1-8"), "{e}");
            assert!(e.contains("app, crasher, hog"), "{e}");
            assert!(e.starts_with("no story "), "{e}");
        }
    }

    #[test]
    fn a_container_by_name_or_id_prefix_is_its_first_story() {
        let l = list();
        assert_eq!(select_story(&l, "hog"), Ok(6));
        assert_eq!(select_story(&l, "crasher"), Ok(3));
        assert_eq!(select_story(&l, "9c47"), Ok(5));
        assert_eq!(select_story(&l, "1b452cdec5b0aa"), Ok(0));
        // `4` is a number; `4f` the crasher's first life's id.
        assert_eq!(select_story(&l, "4f"), Ok(3));
    }

    #[test]
    fn container_and_kind_pick_that_phase_and_kind_alone_the_first_of_it() {
        let l = list();
        assert_eq!(select_story(&l, "hog:death"), Ok(7));
        assert_eq!(select_story(&l, "crasher:restart"), Ok(5));
        assert_eq!(select_story(&l, "app:exec"), Ok(2));
        assert_eq!(select_story(&l, "death"), Ok(4));
        assert_eq!(select_story(&l, "exec"), Ok(2));
        assert_eq!(select_story(&l, "restart"), Ok(5));
        assert_eq!(select_story(&l, "birth"), Ok(0));
    }

    #[test]
    fn what_matches_nothing_says_what_the_recording_has() {
        let l = list();
        let e = select_story(&l, "hog:exec").unwrap_err().to_string();
        assert_eq!(
            e,
            "no story matches hog:exec: the recording has 8 stories (1-8; containers: 1b452cdec5b0, \
             app, crasher, hog; phases: birth, exec, death, restart)"
        );
        assert!(select_story(&l, "nginx").is_err());
        assert!(select_story(&l, "").is_err());
        assert!(select_story(&[], "death")
            .unwrap_err()
            .to_string()
            .contains("no stories"));
        // A hostile selector is escaped.
        let e = select_story(&l, "x\x1b[2J").unwrap_err().to_string();
        assert!(!e.contains('\x1b'), "{e}");
    }

    #[test]
    fn an_id_prefix_of_several_containers_is_ambiguous() {
        let mut l2 = list();
        l2.push(story(Phase::Birth, Some("other"), "70aa"));
        let e = select_story(&l2, "70").unwrap_err();
        assert!(matches!(e, StoryChoiceError::Ambiguous { .. }), "{e}");
        assert_eq!(select_story(&l2, "700"), Ok(6));
        // Digits past the list's numbers may start an id.
        assert_eq!(select_story(&l2, "70008"), Ok(6));
    }
}
