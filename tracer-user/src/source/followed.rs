//! The followed set, with one owner: [`Followed`] keeps which processes a follow-mode source
//! follows (the roots it was given, every process they create, none whose thread group died),
//! and mirrors its roots into what filters the events ([`Mirror`]: the capture's kernel map).
//!
//! The probes grow and shrink their map themselves, at each birth and each death, before user
//! space reads those events (a child's first events must not be missed while user space
//! catches up); so the set here follows the same rule from the events, and the map is asked
//! only to confirm what the events cannot tell yet: whether an empty set is really empty (a
//! birth still unread), and after events were lost (a death may be among them).

use crate::event::Event;
use std::cell::Cell;
use std::collections::HashSet;
use std::time::{Duration, Instant};

/// How often, after events were lost, the mirror is asked whether anything is still followed
/// (a walk of the kernel map, one syscall per key).
const WALK_EVERY: Duration = Duration::from_secs(1);

/// Where a [`Followed`] set is mirrored for the probes to filter by (the capture implements it
/// over its kernel map). It is told only of the processes chosen by hand: births and deaths
/// the probes apply themselves.
pub trait Mirror {
    /// Why following failed there.
    type Error;
    /// Follows `tgid` there too.
    fn add(&mut self, tgid: u32) -> Result<(), Self::Error>;
    /// How many processes it holds now (may walk a map: asked rarely); `None`: there is no
    /// mirror, the set is the whole truth.
    fn count(&self) -> Option<usize>;
}

/// No mirror: a source whose events are the whole truth (a scripted source).
#[derive(Clone, Copy, Debug, Default)]
pub struct Unmirrored;

impl Mirror for Unmirrored {
    type Error = std::convert::Infallible;
    fn add(&mut self, _tgid: u32) -> Result<(), Self::Error> {
        Ok(())
    }
    fn count(&self) -> Option<usize> {
        None
    }
}

/// The followed set (see the module's documentation): kept from the events read, mirrored
/// through `M`.
#[derive(Debug)]
pub struct Followed<M> {
    live: HashSet<u32>,
    mirror: M,
    /// When the mirror was last walked because events were lost.
    last_walk: Cell<Instant>,
}

impl<M: Mirror> Followed<M> {
    /// An empty set mirrored into `mirror`.
    pub fn new(mirror: M) -> Self {
        Followed {
            live: HashSet::new(),
            mirror,
            last_walk: Cell::new(Instant::now()),
        }
    }

    /// Follows `tgid` (and what it creates from now on), in the mirror first: the set never
    /// holds what the probes do not follow.
    pub fn follow(&mut self, tgid: u32) -> Result<(), M::Error> {
        self.mirror.add(tgid)?;
        self.live.insert(tgid);
        Ok(())
    }

    /// Applies the events read, as the probes did: a followed process's new process is
    /// followed (the probes follow every birth they report), a process whose thread group died
    /// is not.
    pub fn observe(&mut self, evs: &[Event]) {
        for ev in evs {
            if let Some((child_tid, child_tgid)) = ev.kind.new_task() {
                if child_tid == child_tgid {
                    self.live.insert(child_tgid);
                }
            }
            if ev.kind.task_end() == Some(true) {
                self.live.remove(&ev.tgid);
            }
        }
    }

    /// Whether `tgid` is followed, as the events read so far tell.
    pub fn contains(&self, tgid: u32) -> bool {
        self.live.contains(&tgid)
    }

    /// How many processes are followed, as the events read so far tell.
    pub fn len(&self) -> usize {
        self.live.len()
    }

    /// Whether the events read so far leave nothing followed.
    pub fn is_empty(&self) -> bool {
        self.live.is_empty()
    }

    /// How many processes are followed now: the mirror's count (births not read yet
    /// included), or the set's without a mirror.
    pub fn count(&self) -> usize {
        self.mirror.count().unwrap_or(self.live.len())
    }

    /// Every followed process is gone. Known from the events read; the mirror confirms an
    /// empty set, and is asked at most once a second while `lost()` says events were lost.
    pub fn gone(&self, lost: impl FnOnce() -> bool) -> bool {
        if self.live.is_empty() {
            return self.count() == 0;
        }
        if self.last_walk.get().elapsed() < WALK_EVERY {
            return false;
        }
        self.last_walk.set(Instant::now());
        lost() && self.count() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::EventKind;
    use crate::synth::{exit, fork};

    /// A kernel map stand-in: what it holds, and whether it refuses new entries (full).
    #[derive(Default)]
    struct Map {
        keys: HashSet<u32>,
        full: bool,
    }

    impl Mirror for Map {
        type Error = &'static str;
        fn add(&mut self, tgid: u32) -> Result<(), Self::Error> {
            if self.full {
                return Err("full");
            }
            self.keys.insert(tgid);
            Ok(())
        }
        fn count(&self) -> Option<usize> {
            Some(self.keys.len())
        }
    }

    /// A thread of `tgid`: a birth that follows no new process.
    fn thread(tgid: u32, tid: u32) -> Event {
        let mut ev = fork(tgid, tid);
        if let EventKind::Fork { child_tgid, .. } = &mut ev.kind {
            *child_tgid = tgid;
        }
        ev
    }

    #[test]
    fn a_chosen_process_is_followed_only_once_its_mirror_follows_it() {
        let mut f = Followed::new(Map::default());
        f.follow(10).unwrap();
        assert!(f.contains(10) && f.mirror.keys.contains(&10));
        f.mirror.full = true;
        assert_eq!(f.follow(11), Err("full"));
        assert!(
            !f.contains(11),
            "the set holds what the probes do not follow"
        );
        assert_eq!(f.len(), 1);
    }

    #[test]
    fn births_and_group_deaths_are_applied_as_the_probes_apply_them() {
        let mut f = Followed::new(Unmirrored);
        f.follow(10).unwrap_or_else(|never| match never {});
        f.observe(&[fork(10, 11), thread(11, 12), fork(11, 13)]);
        assert!(f.contains(11) && f.contains(13) && !f.contains(12));
        assert_eq!(f.count(), 3, "without a mirror the set counts itself");
        f.observe(&[exit(10, 0), exit(11, 0), exit(13, 0)]);
        assert!(f.is_empty() && f.gone(|| false));
    }

    #[test]
    fn the_mirror_confirms_the_end_and_is_walked_after_losses() {
        let mut f = Followed::new(Map::default());
        f.follow(10).unwrap();
        f.observe(&[exit(10, 0)]);
        // The probes followed a birth whose event is not read yet: not gone.
        f.mirror.keys = HashSet::from([20]);
        assert!(f.is_empty() && !f.gone(|| false));
        f.mirror.keys.clear();
        assert!(f.gone(|| false));
        // The set says 30 lives, its death was lost: the map is walked, once a second.
        f.follow(30).unwrap();
        f.mirror.keys.clear();
        // Walked "just now" whatever the load (an instant ahead reads as no time elapsed).
        f.last_walk.set(Instant::now() + WALK_EVERY * 3600);
        assert!(!f.gone(|| true), "walked again within a second");
        f.last_walk.set(Instant::now() - WALK_EVERY);
        assert!(!f.gone(|| false), "nothing lost: the set is believed");
        f.last_walk.set(Instant::now() - WALK_EVERY);
        assert!(f.gone(|| true));
    }
}
