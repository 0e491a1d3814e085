//! Signal lines: `--- SIG… {…} ---` becomes one `Signal` event of its receiver, its sender
//! named by the log's pids.

use super::*;
use crate::event::{ExitStatus, SignalInfo};
use crate::names::si_code::{SI_KERNEL, SI_USER};

/// Every `*.log` of the fixture directory, by name.
fn all_fixtures() -> Vec<(String, String)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/strace");
    let mut logs: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".log"))
        .map(|n| (n.clone(), fixture(&n)))
        .collect();
    logs.sort();
    assert!(logs.len() >= 6, "{logs:?}");
    logs
}

/// The pid a line's prefix names (`[pid N]` or the `-o` column), read without the importer.
fn prefix_pid(line: &str) -> Option<u32> {
    let s = line.trim_start();
    let s = s.strip_prefix("[pid").map(str::trim_start).unwrap_or(s);
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    // a timestamp (`09:15:30.7`, `1796068628.3`) is no pid
    matches!(s.as_bytes().get(digits), Some(b' ' | b']'))
        .then(|| s[..digits].parse().ok())
        .flatten()
}

/// `key=value` of a siginfo line, up to the next `,` or `}`.
fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let at = line.find(&format!(" {key}="))? + key.len() + 2;
    let rest = &line[at..];
    Some(&rest[..rest.find([',', '}']).unwrap_or(rest.len())])
}

/// (receiver pid when the line shows one, signal, si_code, si_pid) of each generated signal
/// line — the log's own text, read with plain string search.
type TextSignal<'a> = (Option<u32>, &'a str, &'a str, Option<&'a str>);

fn text_signals(log: &str) -> Vec<TextSignal<'_>> {
    log.lines()
        .filter(|l| l.contains("--- SIG"))
        .map(|l| {
            let name = l.split("--- ").nth(1).unwrap().split(' ').next().unwrap();
            let code = field(l, "si_code").unwrap();
            (prefix_pid(l), name, code, field(l, "si_pid"))
        })
        .collect()
}

/// Pids the log shows tasks under: prefixes and attach notices.
fn log_pids(log: &str) -> HashSet<u32> {
    let notices = log.split("strace: Process ").skip(1).filter_map(|r| {
        let d = r.bytes().take_while(u8::is_ascii_digit).count();
        r[..d].parse().ok()
    });
    log.lines().filter_map(prefix_pid).chain(notices).collect()
}

fn signals(imp: &Import) -> Vec<(u32, SignalInfo)> {
    imp.events
        .iter()
        .filter_map(|e| match e.kind {
            K::Signal(i) => Some((e.tid, i)),
            _ => None,
        })
        .collect()
}

#[test]
fn every_fixture_signal_line_is_one_event_of_its_receiver_in_log_order() {
    for (name, log) in all_fixtures() {
        let text = text_signals(&log);
        let imp = parse(&log);
        let events = signals(&imp);
        assert!(!text.is_empty(), "{name}");
        assert_eq!(
            events.len(),
            text.len(),
            "{name}: one event per signal line"
        );
        let pids = log_pids(&log);
        for ((tid, sig, code, si_pid), (etid, i)) in text.iter().zip(&events) {
            assert_eq!(tid.unwrap_or(*etid), *etid, "{name}");
            assert_eq!(crate::names::signal(i.signal), *sig, "{name}");
            assert_eq!(crate::names::si_code(i.signal, i.code), *code, "{name}");
            assert_eq!((i.target_tid, i.result), (*etid, SignalResult::Delivered));
            assert_eq!(i.group, *code != "SI_TKILL", "{name}");
            // a sender is a pid of the log, never a pid of a container's namespace
            match si_pid {
                None | Some("0") => assert_eq!(i.sender, 0, "{name}"),
                Some(_) => assert!(pids.contains(&i.sender), "{name}: {i:?}"),
            }
        }
        assert_eq!(imp.untranslated_senders, 0, "{name}");
        // signals take sequence numbers like the other events, in log order
        let seqs: Vec<u64> = imp.events.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, (1..=imp.events.len() as u64).collect::<Vec<_>>());
    }
}

/// The log's own account of a clone: the attach notice right after `[pid caller] clone(...)
/// = ret` names the child.
fn child_of_clone_returning(log: &str, caller: u32, ret: &str) -> u32 {
    let call = format!("[pid {caller}] ");
    let mut lines = log.lines();
    lines
        .find(|l| {
            l.starts_with(&call) && l.contains("clone(") && l.ends_with(&format!(") = {ret}"))
        })
        .expect("the clone line");
    let notice = lines.next().unwrap();
    notice
        .strip_prefix("strace: Process ")
        .and_then(|r| r.strip_suffix(" attached"))
        .expect("an attach notice")
        .parse()
        .unwrap()
}

/// The container's init in a runc-run truth: the `sh` that `runc run` is the parent of.
fn truth_init(truth: &str) -> u32 {
    let rows = truth_rows(truth);
    let runc = rows.iter().find(|r| r.2 == "runc").unwrap().0;
    rows.iter().find(|r| r.1 == runc && r.2 == "sh").unwrap().0
}

/// The events of the signal lines `init` received whose `si_pid` is `si_pid`.
fn received(log: &str, init: u32, si_pid: &str) -> Vec<SignalInfo> {
    let imp = parse(log);
    text_signals(log)
        .into_iter()
        .zip(signals(&imp))
        .filter(|((tid, ..), _)| *tid == Some(init))
        .filter(|((.., p), _)| *p == Some(si_pid))
        .map(|(_, (_, i))| i)
        .collect()
}

#[test]
fn a_namespace_pid_in_si_pid_is_the_log_pid_its_clone_named() {
    // runc-run-orphan: the container's init (sh) gets SIGCHLD from its subshell, si_pid=7 in
    // the container's namespace; the clone that returned 7 is followed by the notice naming
    // the subshell's host pid.
    let log = fixture("runc-run-orphan.log");
    let init = truth_init(&fixture("runc-run-orphan.truth.txt"));
    let subshell = child_of_clone_returning(&log, init, "7");
    let got = received(&log, init, "7");
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].sender, subshell);
    assert_eq!((got[0].target, got[0].code), (init, 1)); // CLD_EXITED
                                                         // Go's preemption signal from its own runtime: pid 1 of the namespace is the init itself.
    for log in ["runc-run-orphan", "runc-run"] {
        let text = fixture(&format!("{log}.log"));
        let init = truth_init(&fixture(&format!("{log}.truth.txt")));
        let got = received(&text, init, "1");
        assert!(!got.is_empty(), "{log}");
        assert!(got.iter().all(|i| i.sender == init && !i.group), "{log}");
        // si_pid 0: the kernel's word that the sender is outside the namespace (runc)
        let outside = received(&text, init, "0");
        assert!(outside.iter().all(|i| i.sender == 0 && i.code == SI_USER));
    }
}

#[test]
fn a_signal_a_thread_receives_targets_its_process() {
    // runc-run's truth lists runc's threads (`{runc},TID` under `runc,PID` in its pstree).
    let truth = fixture("runc-run.truth.txt");
    let runc = truth_rows(&truth).iter().find(|r| r.2 == "runc").unwrap().0;
    let threads: HashSet<u32> = truth
        .lines()
        .filter_map(|l| l.split("{runc},").nth(1)?.trim().parse().ok())
        .collect();
    let imp = parse(&fixture("runc-run.log"));
    let by_threads: Vec<SignalInfo> = signals(&imp)
        .into_iter()
        .filter(|(tid, _)| threads.contains(tid))
        .map(|(_, i)| i)
        .collect();
    assert!(by_threads.len() >= 5);
    assert!(by_threads
        .iter()
        .all(|i| i.target == runc && i.target_tid != runc));
}

#[test]
fn killed_by_lines_still_give_deaths_with_their_signal() {
    let mut deaths = 0;
    for (name, log) in all_fixtures() {
        let imp = parse(&log);
        let killed: Vec<(u32, i32)> = imp
            .events
            .iter()
            .filter_map(|e| match e.kind {
                K::TaskExit { exit_code, .. } => match ExitStatus::from_wait_status(exit_code) {
                    ExitStatus::Killed { signal, .. } => Some((e.tid, signal)),
                    ExitStatus::Exited { .. } => None,
                },
                _ => None,
            })
            .collect();
        let text: Vec<(u32, i32)> = log
            .lines()
            .filter_map(|l| {
                let sig = l.split("+++ killed by ").nth(1)?.split(' ').next()?;
                Some((prefix_pid(l)?, crate::names::signal_number(sig)?))
            })
            .collect();
        assert_eq!(killed, text, "{name}");
        deaths += text.len();
    }
    assert!(deaths >= 5);
}

#[test]
fn signal_line_shapes() {
    let imp = parse(concat!(
        "10 --- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED, si_pid=123, si_uid=0, si_status=0, si_utime=0, si_stime=0} ---\n",
        "10 --- SIGTERM {si_signo=SIGTERM, si_code=SI_USER, si_pid=1, si_uid=0} ---\n",
        "10 --- SIGSEGV {si_signo=SIGSEGV, si_code=SEGV_MAPERR, si_addr=NULL} ---\n",
        "10 --- SIGKILL {si_signo=SIGKILL, si_code=SI_KERNEL} ---\n",
        "10 --- SIGURG {si_signo=SIGURG, si_code=SI_TKILL, si_pid=10, si_uid=0} ---\n",
        "10 --- SIGSYS {si_signo=SIGSYS, si_code=SYS_SECCOMP, si_call_addr=0x7f, si_syscall=__NR_ptrace, si_arch=AUDIT_ARCH_X86_64} ---\n",
        "10 --- SIGALRM {si_signo=SIGALRM, si_code=SI_TIMER, si_timerid=0, si_overrun=0, si_int=0, si_ptr=NULL} ---\n",
        "10 --- SIGRT_1 {si_signo=SIGRT_1, si_code=SI_QUEUE, si_pid=-5, si_uid=0, si_int=1, si_ptr=0x1} ---\n",
        // -X verbose, -X raw, a code strace has no name for (an unsigned int in hex)
        "10 --- SIGCHLD {si_signo=0x11 /* SIGCHLD */, si_code=0x2 /* CLD_KILLED */, si_pid=124} ---\n",
        "10 --- SIGTERM {si_signo=15, si_code=0, si_pid=2} ---\n",
        "10 --- SIGUSR1 {si_signo=SIGUSR1, si_code=0xfffffff7, si_pid=3, si_uid=0} ---\n",
        // -Y comm and --decode-pids=pidns
        "10 --- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED, si_pid=125<sleep>, si_uid=0} ---\n",
        "10 --- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED, si_pid=4<sh> /* 4711 in strace's PID NS */, si_uid=0} ---\n",
        "10 --- stopped by SIGSTOP ---\n",
    ));
    assert_eq!(
        (imp.unreadable, imp.skipped),
        (0, 1),
        "{:?}",
        imp.first_unreadable
    );
    let got: Vec<(i32, i32, u32, bool)> = signals(&imp)
        .iter()
        .map(|(_, i)| (i.signal, i.code, i.sender, i.group))
        .collect();
    assert_eq!(
        got,
        [
            (17, 1, 123, true),
            (15, SI_USER, 1, true),
            (11, 1, 0, true),
            (9, SI_KERNEL, 0, true),
            (23, SI_TKILL, 10, false),
            (31, 1, 0, true),
            (14, -2, 0, true),
            (33, -1, 0, true),
            (17, 2, 124, true),
            (15, 0, 2, true),
            (10, -9, 3, true),
            (17, 1, 125, true),
            (17, 1, 4711, true),
        ]
    );
    assert!(signals(&imp)
        .iter()
        .all(|(tid, i)| (*tid, i.target, i.target_tid) == (10, 10, 10)));
}

#[test]
fn signal_lines_that_do_not_read_are_counted_not_guessed() {
    for line in [
        "--- SIGCHLD {si_signo=SIGCHLD} ---", // no si_code
        "--- SIGCHLD {si_signo=SIGTERM, si_code=SI_USER} ---", // names another signal
        "--- SIGSEGV {si_signo=SIGSEGV, si_code=SEGV_NEWTHING} ---", // a name of no known code
        "--- SIGNOPE {si_signo=SIGNOPE, si_code=SI_USER} ---",
        "--- 0 {si_code=SI_USER} ---",
        "--- 129 {si_code=SI_USER} ---",
        "--- SIGCHLD (Child exited) @ 0 (0) ---", // strace 4.5's form: no si_code
        "--- SIGTERM {si_signo=SIGTERM, si_code=SI_USER, si_pid=99999999999} ---",
        "--- SIGTERM {si_signo=SIGTERM, si_code=SI_USER, si_pid=x} ---",
        "--- SIGTERM {si_signo=SIGTERM, si_code=SI_USER ---",
    ] {
        let imp = parse(&format!("5 exit(0) = ?\n5 {line}\n"));
        assert_eq!((imp.events.len(), imp.unreadable), (1, 1), "{line}");
    }
}

#[test]
fn a_sender_the_log_cannot_tie_is_unknown_and_counted() {
    // -o log: 101 is pid 1 of a new namespace; its clone returns 2, the child's host pid
    // comes with its first line.
    let imp = parse(concat!(
        "100 clone(child_stack=NULL, flags=CLONE_NEWPID|SIGCHLD) = 101\n",
        "101 clone(child_stack=NULL, flags=SIGCHLD) = 2\n",
        "102 exit_group(0) = ?\n",
        "102 +++ exited with 0 +++\n",
        "101 --- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED, si_pid=2, si_uid=0, si_status=0} ---\n",
        "101 --- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED, si_pid=3, si_uid=0, si_status=0} ---\n",
        "101 --- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED, si_pid=3 /* 4242 in strace's PID NS */, si_uid=0} ---\n",
        "101 --- SIGURG {si_signo=SIGURG, si_code=SI_TKILL, si_pid=1, si_uid=0} ---\n",
        "101 --- SIGTERM {si_signo=SIGTERM, si_code=SI_USER, si_pid=0, si_uid=0} ---\n",
        "101 exit_group(0) = ?\n",
        "101 +++ exited with 0 +++\n",
        "100 --- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED, si_pid=101, si_uid=0, si_status=0} ---\n",
    ));
    let senders: Vec<u32> = signals(&imp).iter().map(|(_, i)| i.sender).collect();
    assert_eq!(senders, [102, 0, 4242, 101, 0, 101]);
    // only si_pid=3 is a namespace pid nothing in the log gave
    assert_eq!(imp.untranslated_senders, 1);
}

#[test]
fn a_child_named_before_its_clone_returns_is_tied_to_the_return_too() {
    // stderr style: the notice splits the clone line, or comes while the call is unfinished;
    // either way the return value comes after it. A namespace pid freed and handed out again
    // names the newer child.
    let imp = parse(concat!(
        "[pid   100] clone(child_stack=NULL, flags=CLONE_NEWPID|SIGCHLD) = 101\n",
        "strace: Process 101 attached\n",
        "[pid   101] clone(child_stack=NULL, flags=SIGCHLDstrace: Process 102 attached\n",
        ", child_tidptr=0x1) = 2\n",
        "[pid   102] +++ exited with 0 +++\n",
        "[pid   101] --- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED, si_pid=2, si_uid=0} ---\n",
        "[pid   101] clone(child_stack=NULL, flags=SIGCHLD <unfinished ...>\n",
        "strace: Process 103 attached\n",
        "[pid   101] <... clone resumed>, child_tidptr=0x1) = 2\n",
        "[pid   103] +++ killed by SIGKILL +++\n",
        "[pid   101] --- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_KILLED, si_pid=2, si_uid=0} ---\n",
    ));
    assert_eq!(imp.unreadable, 0, "{:?}", imp.first_unreadable);
    let senders: Vec<u32> = signals(&imp).iter().map(|(_, i)| i.sender).collect();
    assert_eq!(senders, [102, 103]);
    assert_eq!(imp.untranslated_senders, 0);
}

#[test]
fn a_signal_of_the_initial_process_gets_its_pid_once_known() {
    let imp = parse(concat!(
        "--- SIGURG {si_signo=SIGURG, si_code=SI_TKILL, si_pid=4085, si_uid=0} ---\n",
        "clone(child_stack=NULL, flags=SIGCHLD) = 4086\n",
        "[pid  4086] exit_group(0) = ?\n",
        "[pid  4085] exit_group(0) = ?\n",
    ));
    assert!(!imp.initial_pid_unknown);
    assert_eq!(
        signals(&imp),
        [(4085, super::sig_info(23, SI_TKILL, 4085, 4085, 4085))]
    );
    assert_eq!((imp.events[0].tgid, imp.events[0].seq), (4085, 1));
}

#[test]
fn hostile_signal_lines_never_panic() {
    let huge = "9".repeat(400);
    let deep = "{".repeat(50_000);
    let mut cases: Vec<String> = vec![
        "--- ---".into(),
        "---  ---".into(),
        "--- SIGCHLD ---".into(),
        "--- SIGCHLD { ---".into(),
        "--- SIGCHLD } ---".into(),
        "--- SIGCHLD {} ---".into(),
        "--- SIGCHLD {{{{}} ---".into(),
        "--- SIGCHLD {si_code=} ---".into(),
        "--- SIGCHLD {=, =, si_pid=} ---".into(),
        "--- SIGCHLD {si_code=CLD_EXITED, si_pid=2147483648} ---".into(),
        "--- SIGCHLD {si_code=CLD_EXITED, si_pid=-2147483649} ---".into(),
        "--- SIGCHLD {si_code=CLD_EXITED, si_pid=1 /* 99999999999 in strace's PID NS */} ---"
            .into(),
        "--- SIGCHLD {si_code=CLD_EXITED, si_pid=1 /*  in strace's PID NS */} ---".into(),
        "--- SIGCHLD {si_code=CLD_EXITED, si_pid=1< in strace's PID NS */} ---".into(),
        "--- SIGCHLD {si_code=CLD_EXITED, si_pid=1<a,si_code=SI_KERNEL>} ---".into(),
        "--- SIGCHLD {si_code=\"\\\", si_pid=\"} ---".into(),
        format!("--- SIGCHLD {{si_code={huge}, si_pid={huge}}} ---"),
        format!("--- {huge} {{si_code=SI_USER}} ---"),
        format!("--- SIGCHLD {deep} ---"),
        format!("--- SIGCHLD {{si_code=CLD_EXITED, si_pid=1{deep}}} ---"),
        "--- SIG\u{fffd}CHLD {si_code=CLD_\u{0}EXITED, si_pid=\u{7f}1} ---".into(),
        "--- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED, si_pid=7, si_uid=0} --".into(),
    ];
    // a real line cut at every byte, and with its bytes replaced
    let real = "[pid 11199] 1796068628.466139 --- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED, si_pid=7, si_uid=0, si_status=0, si_utime=0, si_stime=0} ---";
    for i in 0..=real.len() {
        cases.push(real[..i].into());
        cases.push(format!("{}\u{fffd}{}", &real[..i], &real[i..]));
    }
    for c in &cases {
        for imp in [
            parse_log(c),
            parse_log(&format!("1 exit(0) = ?\n{c}\n1 {c}\n")),
        ] {
            let Ok(imp) = imp else { continue };
            assert!(signals(&imp)
                .iter()
                .all(|(_, i)| (1..=128).contains(&i.signal)));
        }
        let mut bytes = c.as_bytes().to_vec();
        bytes.extend_from_slice(b"\n\xff\xfe--- SIGTERM {si_code=\xc3SI_USER} ---\n");
        let _ = parse_reader(&bytes[..]);
    }
}

/// Every SIGCHLD a real log holds went to the process the model has as the child's parent at
/// that moment (do_notify_parent), or to the reaper a dying parent handed a zombie to: none
/// disagrees, and each one was checked (its child is in the log).
#[test]
fn every_fixture_sigchld_goes_to_the_models_parent() {
    for (name, log) in all_fixtures() {
        let cld = text_signals(&log)
            .iter()
            .filter(|(_, sig, code, _)| *sig == "SIGCHLD" && code.starts_with("CLD_"))
            .count();
        let imp = parse(&log);
        let mut e = crate::lineage::Engine::new();
        imp.events.iter().for_each(|ev| e.apply(ev));
        let c = e.sigchld_checks();
        let bad: Vec<String> = e.warnings().iter().map(|w| w.to_string()).collect();
        assert_eq!(c.disagreed, 0, "{name}: {bad:#?}");
        assert_eq!(c.agreed as usize, cld, "{name}: {c:?}");
    }
}
