//! The bundled lifecycle demo in the kubelet's words and with wall times: `tracer story`,
//! `tracer tree` and `tracer export` as JSON, checked against the recording's own events and
//! header (read here with the library's reader, never through the views under test).

#[allow(dead_code)]
#[path = "../../tests/src/prereq.rs"]
mod prereq;

use serde_json::Value;
use tracer::demo::Demo;
use tracer::EventKind;

const TRACER: &str = env!("CARGO_BIN_EXE_tracer");

/// What `tracer ARGS` prints, once it succeeded.
fn stdout_of(args: &[&str]) -> Vec<u8> {
    let out = std::process::Command::new(TRACER)
        .args(args)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    out.stdout
}

/// The JSON lines `tracer ARGS` prints.
fn lines_of(args: &[&str]) -> Vec<Value> {
    String::from_utf8_lossy(&stdout_of(args))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn json_of(args: &[&str]) -> Value {
    serde_json::from_slice(&stdout_of(args)).unwrap()
}

/// The lifecycle demo's header clock (wall ns at boot ns) and its events.
fn recording() -> ((i128, i128), Vec<tracer::Event>) {
    recording_of(Demo::Lifecycle)
}

/// A demo's header clock and its events.
fn recording_of(demo: Demo) -> ((i128, i128), Vec<tracer::Event>) {
    let mut input = demo.open().unwrap();
    let h = input.header().unwrap();
    let clock = (i128::from(h.start_wall_ns), i128::from(h.start_boot_ns));
    let mut evs = Vec::new();
    while let Some(ev) = input.next_event() {
        evs.push(ev.unwrap());
    }
    (clock, evs)
}

/// RFC 3339 text as ns since the epoch (parsed, not formatted, here).
fn parsed_ns(t: &Value) -> i128 {
    let s = t.as_str().unwrap_or_else(|| panic!("no time: {t}"));
    assert!(
        s.ends_with('Z') && s.len() == 30,
        "{s}: UTC with nanoseconds"
    );
    s.parse::<jiff::Timestamp>().unwrap().as_nanosecond()
}

/// `time` must be the header's wall time plus `ts_ns` since its boot time.
fn check_time((wall, boot): (i128, i128), ts: &Value, time: &Value) {
    let ts = i128::from(ts.as_u64().unwrap());
    assert_eq!(parsed_ns(time), wall + ts - boot, "time {time} of ts {ts}");
}

/// Signals the recording shows sent to `pid`: (name, ts).
fn signals_to(evs: &[tracer::Event], pid: u32) -> Vec<(String, u64)> {
    evs.iter()
        .filter(|e| matches!(e.kind, EventKind::Signal(_)))
        .map(|e| (serde_json::to_value(e).unwrap(), e.ts_ns))
        .filter(|(v, _)| v["target"] == pid && v["sender"] != pid)
        .map(|(v, ts)| (v["signal"].as_str().unwrap().to_string(), ts))
        .collect()
}

/// The exit (wait status, ts) the recording shows for process `pid`.
fn exit_of(evs: &[tracer::Event], pid: u32) -> (u32, u64) {
    evs.iter()
        .find_map(|e| {
            let EventKind::TaskExit {
                exit_code,
                group_dead: true,
            } = e.kind
            else {
                return None;
            };
            (e.tgid == pid).then_some((exit_code, e.ts_ns))
        })
        .unwrap_or_else(|| panic!("no exit of {pid}"))
}

fn death_of<'a>(stories: &'a [Value], name: &str, nth: usize) -> &'a Value {
    stories
        .iter()
        .filter(|s| s["phase"] == "death" && s["container_name"] == name)
        .nth(nth)
        .unwrap_or_else(|| panic!("no death {nth} of {name}"))
}

#[test]
fn the_lifecycle_demos_deaths_say_what_kubelet_would() {
    let (_, evs) = recording();
    let v = json_of(&["story", "--format", "json", "demo:lifecycle"]);
    let stories = v["stories"].as_array().unwrap();
    let text = |s: &Value| -> String {
        let steps = s["steps"].as_array().unwrap();
        steps
            .iter()
            .map(|x| x["text"].as_str().unwrap())
            .collect::<Vec<_>>()
            .join("\n")
    };

    // hog: the OOM killer chose its init (the recording's oom_victim event), SIGKILL: 137.
    let hog = death_of(stories, "hog", 0);
    let pid = hog["init_pid"].as_u64().unwrap() as u32;
    assert!(evs
        .iter()
        .any(|e| matches!(e.kind, EventKind::OomVictim(_)) && e.tgid == pid));
    assert_eq!(exit_of(&evs, pid).0 & 0x7f, 9, "killed by SIGKILL");
    let t = &hog["terminated"];
    assert_eq!(
        (t["reason"].as_str(), t["exitCode"].as_i64()),
        (Some("OOMKilled"), Some(137))
    );
    assert_eq!(t["cause"]["kind"], "oom_killer");
    assert!(
        text(hog).contains("Terminated: OOMKilled, exit code 137, ran "),
        "{}",
        text(hog)
    );

    // crasher's first life: its init exited with 3 (wait status 3 << 8).
    let crash = death_of(stories, "crasher", 0);
    let pid = crash["init_pid"].as_u64().unwrap() as u32;
    assert_eq!(exit_of(&evs, pid).0, 3 << 8);
    let t = &crash["terminated"];
    assert_eq!(
        (t["reason"].as_str(), t["exitCode"].as_i64()),
        (Some("Error"), Some(3))
    );
    assert_eq!(t["cause"], serde_json::json!({"kind": "exit", "code": 3}));

    // stopper: SIGTERM, then SIGKILL after the grace period, measured on the recording.
    let stop = death_of(stories, "stopper", 0);
    let pid = stop["init_pid"].as_u64().unwrap() as u32;
    let sigs = signals_to(&evs, pid);
    let term = sigs.iter().find(|s| s.0 == "SIGTERM").expect("SIGTERM").1;
    let kill = sigs.iter().find(|s| s.0 == "SIGKILL").expect("SIGKILL").1;
    let t = &stop["terminated"];
    assert_eq!(t["cause"]["kind"], "stop_container");
    assert_eq!(t["cause"]["grace_ns"].as_u64(), Some(kill - term));
    assert_eq!(
        (t["reason"].as_str(), t["exitCode"].as_i64()),
        (Some("Error"), Some(137))
    );
    let grace = format!(
        "{:.1} s after SIGTERM (the grace period)",
        (kill - term) as f64 / 1e9
    );
    assert!(
        text(stop).contains("Terminated: Error, exit code 137"),
        "{}",
        text(stop)
    );
    assert!(
        text(stop).contains("StopContainer: SIGTERM by runc"),
        "{}",
        text(stop)
    );
    assert!(text(stop).contains(&grace), "{grace} not in {}", text(stop));
}

#[test]
fn the_lifecycle_demos_restart_says_how_long_after_the_death() {
    let (_, evs) = recording();
    let v = json_of(&["story", "--format", "json", "demo:lifecycle"]);
    let stories = v["stories"].as_array().unwrap();
    let restart = stories.iter().find(|s| s["phase"] == "restart").unwrap();
    let r = &restart["restart"];
    assert_eq!(r["restartCount"], 1);
    let prev = restart["previous_init"].as_u64().unwrap() as u32;
    let died = exit_of(&evs, prev).1;
    let first = restart["steps"][0]["ts_ns"].as_u64().unwrap();
    assert_eq!(r["since_last_end_ns"].as_u64(), Some(first - died));
    // One restart: no back-off (the demo has no CrashLoopBackOff; see the synthetic tests).
    assert_eq!(r["back_off"], Value::Null);
}

/// `ts_ns` must be the time of the recording's event `seq`.
fn check_ts(evs: &[tracer::Event], seq: &Value, ts: &Value) {
    let seq = seq.as_u64().unwrap();
    let ev = evs.iter().find(|e| e.seq == seq).unwrap();
    assert_eq!(ts.as_u64(), Some(ev.ts_ns), "ts of seq {seq}");
}

#[test]
fn every_time_in_the_json_outputs_is_the_headers_wall_time_plus_ts() {
    let (clock, evs) = recording();
    let v = json_of(&["story", "--format", "json", "demo:lifecycle"]);
    let mut n = 0;
    for st in v["stories"].as_array().unwrap() {
        for step in st["steps"].as_array().unwrap() {
            check_ts(&evs, &step["seq"], &step["ts_ns"]);
            check_time(clock, &step["ts_ns"], &step["time"]);
            n += 1;
        }
        let t = &st["terminated"];
        if !t.is_null() {
            check_time(clock, &t["started_ts_ns"], &t["startedAt"]);
            check_time(clock, &t["finished_ts_ns"], &t["finishedAt"]);
            assert!(parsed_ns(&t["startedAt"]) <= parsed_ns(&t["finishedAt"]));
        }
    }
    assert!(n > 100, "{n} steps");
    let tree = json_of(&["tree", "--format", "json", "demo:lifecycle"]);
    for p in tree["processes"].as_array().unwrap() {
        // Processes of the start's snapshot were born before the recording (seq 0).
        if p["start_seq"] != 0 {
            check_ts(&evs, &p["start_seq"], &p["born_ts_ns"]);
        }
        check_time(clock, &p["born_ts_ns"], &p["born_time"]);
        if !p["exec_ts_ns"].is_null() {
            check_ts(&evs, &p["exec_seq"], &p["exec_ts_ns"]);
            check_time(clock, &p["exec_ts_ns"], &p["exec_time"]);
        }
        for l in p["lineage"].as_array().unwrap().iter().skip(1) {
            let ev = evs.iter().find(|e| e.seq == l["seq"]).unwrap();
            check_time(clock, &Value::from(ev.ts_ns), &l["time"]);
        }
        if !p["exit_ts_ns"].is_null() {
            check_ts(&evs, &p["exit_seq"], &p["exit_ts_ns"]);
            check_time(clock, &p["exit_ts_ns"], &p["exit_time"]);
            check_time(clock, &p["exit_ts_ns"], &p["death"]["time"]);
        }
        for m in p["cgroup_moves"].as_array().unwrap() {
            let ev = evs.iter().find(|e| e.seq == m["seq"]).unwrap();
            check_time(clock, &Value::from(ev.ts_ns), &m["time"]);
        }
        for s in p["signals"].as_array().unwrap() {
            check_ts(&evs, &s["seq"], &s["ts_ns"]);
            check_time(clock, &s["ts_ns"], &s["time"]);
        }
    }
    // Export's lines: each event's time, from the events as the recording holds them.
    let lines = lines_of(&["export", "--format", "jsonl", "demo:lifecycle"]);
    assert_eq!(lines.len(), evs.len());
    for (l, ev) in lines.iter().zip(&evs) {
        assert_eq!(l["seq"], ev.seq);
        check_time(clock, &Value::from(ev.ts_ns), &l["time"]);
    }
}

/// An `strace -f -tt` log has times of day and no date: no date is invented, and the lines
/// keep the log's own stamps as `time_of_day`.
#[test]
fn a_time_of_day_log_gets_no_invented_date() {
    let dir = std::env::temp_dir().join(format!("cli_kubelet-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("tt.log");
    let stamps = ["07:40:09.123456", "07:40:09.200000", "07:40:09.300000"];
    let text = format!(
        "100   {} execve(\"/bin/sh\", [\"sh\"], 0x7ffd /* 1 var */) = 0\n\
         100   {} clone(child_stack=NULL, flags=SIGCHLD, child_tidptr=0x7f) = 101\n\
         101   {} exit_group(0)     = ?\n101   {} +++ exited with 0 +++\n",
        stamps[0], stamps[1], stamps[2], stamps[2]
    );
    std::fs::write(&log, text).unwrap();
    let log = log.to_str().unwrap();
    let lines = lines_of(&["export", "--format", "jsonl", log]);
    assert!(!lines.is_empty());
    for l in &lines {
        assert_eq!(l["time"], Value::Null, "{l}");
        let tod = l["time_of_day"].as_str().unwrap();
        assert!(stamps.iter().any(|s| tod == format!("{s}000")), "{tod}");
    }
    let tree = json_of(&["tree", "--format", "json", log]);
    for p in tree["processes"].as_array().unwrap() {
        for k in ["born_time", "exec_time", "exit_time"] {
            assert_eq!(p[k], Value::Null, "{k} of {p}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The machine's clock now, ns since the epoch.
#[cfg(feature = "capture")]
fn now_ns() -> i128 {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    d.as_nanos() as i128
}

/// A live `trace --format json`: each line's time is on the machine's clock (within a second
/// of the run), from the capture's start as a trace header has it. Only a build with live
/// capture has `trace`.
#[cfg(feature = "capture")]
#[test]
fn live_trace_json_lines_carry_the_machines_time() {
    if !prereq::require_root() {
        return;
    }
    let before = now_ns();
    let lines = lines_of(&["trace", "--format", "json", "--", "/bin/true"]);
    let after = now_ns();
    assert!(lines.iter().any(|l| l["event"] == "exec"), "{lines:?}");
    for l in &lines {
        let t = parsed_ns(&l["time"]);
        assert!(
            t >= before - 1_000_000_000 && t <= after + 1_000_000_000,
            "{l}"
        );
    }
}

/// A runtime daemon's restart (the restart demo): its exit and new start have their times.
#[test]
fn a_runtime_restart_has_the_times_of_its_exit_and_new_start() {
    let (clock, evs) = recording_of(Demo::Restart);
    let v = json_of(&["story", "--format", "json", "demo:restart"]);
    let r = &v["runtime_restarts"][0];
    let ts_of = |seq: &Value| Value::from(evs.iter().find(|e| e.seq == *seq).unwrap().ts_ns);
    check_time(clock, &ts_of(&r["exit_seq"]), &r["exit_time"]);
    check_time(clock, &ts_of(&r["seq"]), &r["time"]);
}
