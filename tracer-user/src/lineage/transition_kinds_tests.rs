//! The adapter against the kind table (`event::Kind`): every kind becomes one of the
//! transitions its row lists.

use super::*;
use crate::event::{Kind, PrctlShown};

fn adapt(kind: EventKind) -> Transition {
    let ev = Event::bare(1, 0, 10, 10, "p", kind);
    Adapter::default().adapt(&ev).transition
}

/// Events beyond `synth::every_kind`'s one of each: the other arms of a kind.
fn variants() -> Vec<EventKind> {
    let prctl = |option, arg2, read: Option<u64>| EventKind::PrctlEnter {
        option,
        arg2,
        name: None,
        shown: read.map(|read| {
            Box::new(PrctlShown {
                args: None,
                read: Some(read),
            })
        }),
    };
    vec![
        prctl(prctl_opt::PR_SET_CHILD_SUBREAPER, 1, None),
        prctl(prctl_opt::PR_GET_CHILD_SUBREAPER, 0, Some(1)),
        prctl(prctl_opt::PR_GET_CHILD_SUBREAPER, 0, None),
        prctl(prctl_opt::PR_SET_PDEATHSIG, 9, None),
        EventKind::ExitEnter {
            syscall: Syscall::Exit,
            code: 0,
        },
        EventKind::Subreaper { on: false },
    ]
}

#[test]
fn every_kind_becomes_a_transition_its_row_lists() {
    let mut seen = std::collections::BTreeSet::new();
    for kind in crate::synth::every_kind()
        .into_iter()
        .map(|e| e.kind)
        .chain(variants())
    {
        let row = kind.kind().row();
        let t = adapt(kind.clone());
        assert!(
            row.engine.contains(&t.name()),
            "{} became {}, not one of {:?}",
            row.name,
            t.name(),
            row.engine
        );
        seen.insert((kind.kind(), t.name()));
    }
    // Each transition a row lists is made by some event above (the table lists no more).
    for &k in Kind::ALL {
        for t in k.row().engine {
            assert!(seen.contains(&(k, *t)), "{k:?} never became {t}");
        }
    }
}

/// The probes' subreaper report is what the prctl it stands for was, and so is the old
/// recordings' form of it (a `PrctlEnter`).
#[test]
fn the_subreaper_report_is_the_prctl_it_stands_for() {
    for on in [true, false] {
        let old = EventKind::PrctlEnter {
            option: prctl_opt::PR_SET_CHILD_SUBREAPER,
            arg2: u64::from(on),
            name: None,
            shown: None,
        };
        let report = adapt(EventKind::Subreaper { on });
        assert_eq!(report, adapt(old));
        assert!(matches!(report, Transition::Subreaper(a, o) if o == on && a.pid == 10));
    }
}
