//! The probes' subreaper report prints as the prctl line older recordings printed for it.

use super::*;
use crate::event::prctl_opt::PR_SET_CHILD_SUBREAPER;

fn lines(kind: EventKind, sched_probes: bool) -> Vec<String> {
    let mut r = LineRenderer {
        sched_probes,
        ..LineRenderer::default()
    };
    let mut ev = Event::bare(7, 0, 30, 30, "shim", kind);
    ev.ppid = 1;
    r.render(&ev)
}

fn old_form(on: bool) -> EventKind {
    EventKind::PrctlEnter {
        option: PR_SET_CHILD_SUBREAPER,
        arg2: u64::from(on),
        name: None,
        shown: None,
    }
}

#[test]
fn the_subreaper_report_prints_as_its_old_prctl_and_reads_back_as_it() {
    for on in [true, false] {
        let report = lines(EventKind::Subreaper { on }, true);
        assert_eq!(report, lines(old_form(on), true));
        assert_eq!(report.len(), 1, "{report:?}");
        let call = format!("] prctl(PR_SET_CHILD_SUBREAPER, {}) = 0", u8::from(on));
        assert!(report[0].ends_with(&call), "{report:?}");
        // Whatever the recording's probe set says: no exit comes for a report.
        assert_eq!(lines(EventKind::Subreaper { on }, false), report);
        // Read back, the line is the call it stands for.
        let back = crate::strace::parse_log(&format!("{}\n", report[0])).unwrap();
        let EventKind::PrctlEnter { option, arg2, .. } = &back.events[0].kind else {
            panic!("{:?}", back.events);
        };
        assert_eq!((*option, *arg2), (PR_SET_CHILD_SUBREAPER, u64::from(on)));
    }
}

/// Perfetto's instant for the report is the one the old form made.
#[test]
fn the_subreaper_reports_perfetto_instant_is_the_old_prctls() {
    let perfetto = |kind| {
        let evs = vec![
            crate::synth::fork(1, 30),
            Event::bare(2, 5, 30, 30, "shim", kind),
        ];
        let mut out = Vec::new();
        crate::export::write_perfetto(&[], evs.into_iter(), &mut out).unwrap();
        String::from_utf8(out).unwrap()
    };
    let report = perfetto(EventKind::Subreaper { on: true });
    assert!(
        report.contains("prctl PR_SET_CHILD_SUBREAPER 1"),
        "{report}"
    );
    assert_eq!(report, perfetto(old_form(true)));
}
