//! The line filter against the kind table (`event::Kind`): each kind's lines print under the
//! `-e trace=` word its row names, and not without it.

use super::*;
use crate::event::Kind;

fn shows(expr: &str, ev: &Event) -> bool {
    LineFilter::from_exprs(&[expr]).unwrap().shows(ev)
}

#[test]
fn each_kind_prints_under_its_rows_word() {
    let evs = crate::synth::every_kind();
    let mut kinds = std::collections::BTreeSet::new();
    for ev in &evs {
        let row = ev.kind.kind().row();
        let call = ev.kind.call().map(Syscall::name);
        let word = row
            .trace
            .or(call)
            .expect("a row without a word is a syscall's");
        assert!(shows(&format!("trace={word}"), ev), "{} {word}", row.name);
        assert!(
            !shows(&format!("trace=!{word}"), ev),
            "{} !{word}",
            row.name
        );
        kinds.insert(ev.kind.kind());
    }
    assert_eq!(kinds.len(), Kind::ALL.len(), "every_kind misses a kind");
}

/// `subreaper` picks the probes' report and the prctl calls that set the flag, nothing else;
/// `prctl` keeps every one of them. Without `subreaper` a call still prints as a prctl (as a
/// rename does without `rename`); the report does not.
#[test]
fn subreaper_is_its_own_word_inside_prctl() {
    let ev = |kind| Event::bare(1, 0, 10, 10, "p", kind);
    let call = |option| EventKind::PrctlEnter {
        option,
        arg2: 1,
        name: None,
        shown: None,
    };
    let report = ev(EventKind::Subreaper { on: true });
    let set = ev(call(PR_SET_CHILD_SUBREAPER));
    let other = ev(call(tracer_common::prctl::PR_SET_PDEATHSIG));
    let exit = ev(EventKind::SyscallExit {
        syscall: Syscall::Prctl,
        ret: 0,
    });
    for (expr, want) in [
        ("trace=subreaper", [true, true, false, true]),
        ("trace=prctl", [true, true, true, true]),
        ("trace=rename", [false, false, false, true]),
        ("trace=!subreaper", [false, true, true, true]),
        ("trace=!prctl", [false, false, false, false]),
    ] {
        let got = [&report, &set, &other, &exit].map(|e| shows(expr, e));
        assert_eq!(got, want, "{expr}");
    }
}

/// Each class has one word naming it (the words a kind's row may give), and they name every
/// class.
#[test]
fn the_class_words_name_each_class_once() {
    let words = [
        "exec",
        "fork",
        "exit",
        "signal",
        "oom",
        "cgroup",
        "rename",
        "prctl",
        "bundle",
        "subreaper",
    ];
    let mut bits = 0u16;
    for word in words {
        let class = Class::named(word).unwrap_or_else(|| panic!("{word}"));
        assert_eq!(bits & class as u16, 0, "{word} names a class twice");
        bits |= class as u16;
    }
    assert_eq!(bits, ALL);
    for &k in Kind::ALL {
        if let Some(word) = k.row().trace {
            assert!(words.contains(&word), "{k:?}: {word}");
        }
    }
}
