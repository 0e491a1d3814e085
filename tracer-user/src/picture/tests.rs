use super::*;

#[test]
fn xml_text_escapes_markup_and_control_characters() {
    assert_eq!(
        xml_text("<a href=\"x\">&'\u{1b}[31m\0", 100),
        "&lt;a href=&quot;x&quot;&gt;&amp;&apos;\u{fffd}[31m\u{fffd}"
    );
    assert_eq!(xml_text("abcdef", 3), "abc…");
    // A right-to-left override would reorder what the picture shows: escaped as in text.
    assert_eq!(
        xml_text("a\u{202e}b\u{feff}", 100),
        "a\\342\\200\\256b\\357\\273\\277"
    );
}

#[test]
fn backticks_become_code_only_after_escaping() {
    let html = html::code_spans(&xml_text("run `a<b>` then `x", 100));
    assert_eq!(html, "run <code>a&lt;b&gt;</code> then `x");
}

#[test]
fn long_ids_are_cut_to_twelve() {
    let id = "53526b51604bf3f53685889f9573146c1be3e971219d09df9782c2f6eb6a150e";
    assert_eq!(
        short_ids(&format!("cgroup /pod-1/{id} (x)")),
        "cgroup /pod-1/53526b51604b… (x)"
    );
    assert_eq!(short_ids("pid 15100 seq 12"), "pid 15100 seq 12");
}

fn all() -> PictureOpts {
    PictureOpts {
        all: true,
        ..Default::default()
    }
}

#[test]
fn a_picture_of_every_process_is_cut_with_a_note() {
    let mut e = Engine::new();
    for ev in crate::synth::chain(MAX_LANES as u32 + 10) {
        e.apply(&ev);
    }
    let svg = svg(&e, &[], &all(), "t").unwrap();
    assert_eq!(svg.matches("<text class=\"pid\"").count(), MAX_LANES);
    // Each drawn lane's lifeline starts at its own birth column.
    assert_eq!(svg.matches("stroke-linecap=\"round\"").count(), MAX_LANES);
    assert!(svg.contains(&format!(
        "Cut to the first {MAX_LANES} of {} processes",
        MAX_LANES + 10
    )));
    let small = super::svg(&e, &[], &PictureOpts::default(), "t").unwrap();
    assert!(!small.contains("Cut to"));
}

#[test]
fn a_lifeline_runs_from_its_birth_to_its_exit_column() {
    let evs: Vec<_> = crate::synth::fork_tree(4).into_iter().collect();
    let mut e = Engine::new();
    for ev in &evs {
        e.apply(ev);
    }
    let svg = svg(&e, &[], &all(), "t").unwrap();
    // pid 1003's lifeline: from its own birth column to its own exit column, neither
    // another lane's.
    let (cols, _) = columns(&e, &actors(&e, &[], &all()));
    let g = Geo::new(&[], cols.len(), 0, &[], None);
    let at = |proc_pid: u32, pick: fn(&Mark) -> bool| {
        let i = cols
            .iter()
            .position(|c| e.get(c.proc).unwrap().pid == proc_pid && pick(&c.mark));
        i.map(|i| g.x(i))
    };
    let birth = at(1003, |m| matches!(m, Mark::Birth { .. })).unwrap();
    let exit = at(1003, |m| matches!(m, Mark::Exit(_))).unwrap();
    assert_ne!(birth, exit);
    let lifeline = format!("<line x1=\"{birth}\" y1=");
    let l = svg
        .find(&lifeline)
        .expect("the lifeline of 1003 starts at its birth");
    let element = svg[l..].split("/>").next().unwrap();
    assert!(element.contains(&format!("x2=\"{exit}\"")), "{element}");
}

#[test]
fn a_page_too_small_for_readable_text_is_an_error() {
    let mut e = Engine::new();
    for ev in crate::synth::chain(200) {
        e.apply(&ev);
    }
    let opts = PictureOpts {
        page: Some(Page::A4),
        ..all()
    };
    let err = svg(&e, &[], &opts, "t").unwrap_err();
    // No story drawn (every process is): only leaving out the page is advised, as for one
    // story, which cannot be cut further; several can.
    assert!(err.to_string().ends_with("leave out --page"), "{err}");
    let PictureError::TooBig { w, h, font, .. } = err else {
        panic!("{err}")
    };
    let many = PictureError::TooBig {
        stories: 2,
        page: Page::A4,
        w,
        h,
        font,
    };
    assert!(many.to_string().contains("--story N"), "{many}");
}

#[test]
fn callouts_in_neighbouring_narrow_columns_are_lifted_apart() {
    let mut e = Engine::new();
    for ev in crate::synth::chain(3) {
        e.apply(&ev);
    }
    let id = e.processes().next().unwrap().id;
    // 80 columns on an A4 page are narrowed to the least width, each with a step (two in
    // every fifth).
    let cols: Vec<Col> = (0..80)
        .map(|i| Col {
            seq: i,
            ts: i,
            proc: id,
            mark: Mark::Exec,
            callouts: if i % 5 == 0 { vec![1, 2] } else { vec![3] },
        })
        .collect();
    let row = Row {
        ids: vec![id],
        group: None,
        head: String::new(),
        sub: String::new(),
    };
    let g = Geo::new(&[row], cols.len(), 0, &[], Some(Page::A4));
    assert!(
        g.x(1) - g.x(0) < 2 * CALLOUT_R,
        "columns narrower than a callout"
    );
    let lane_of = HashMap::from([(id, 0)]);
    let spots = callout_spots(&g, &cols, &lane_of, &[]);
    assert_eq!(spots.len(), 96);
    for s in &spots {
        assert!(s.2 - CALLOUT_R >= g.lanes_top(), "{s:?} over the legend");
    }
    for (k, a) in spots.iter().enumerate() {
        for b in &spots[k + 1..] {
            let (dx, dy) = (a.1.abs_diff(b.1) as f64, a.2.abs_diff(b.2) as f64);
            assert!(
                dx.hypot(dy) >= 2.0 * CALLOUT_R as f64,
                "{a:?} and {b:?} overlap"
            );
        }
    }
}

#[test]
fn runs_of_one_program_share_a_row_only_once_the_last_has_ended() {
    // loopback 201 runs and ends, bridge 202 runs, loopback 203 is born well after 201's end
    // (its row), loopback 204 is born while 203 still runs (a row of its own). In this order
    // (seq renumbered).
    use crate::synth::{exec, exit, fork};
    let run = |pid, exe| [fork(100, pid), exec(pid, exe), exit(pid, 0)];
    let [b1, x1, e1] = run(201, "/usr/lib/cni/loopback");
    let [b2, x2, e2] = run(202, "/usr/lib/cni/bridge");
    let [b3, x3, e3] = run(203, "/usr/lib/cni/loopback");
    let [b4, x4, e4] = run(204, "/usr/lib/cni/loopback");
    let mut e = Engine::new();
    for (seq, mut ev) in (1..).zip([b1, x1, e1, b2, x2, e2, b3, x3, b4, x4, e3, e4]) {
        ev.seq = seq;
        e.apply(&ev);
    }
    let (rows, cols, ..) = content(&e, &[], &all());
    let pids = |r: &Row| -> Vec<u32> { r.ids.iter().map(|&id| e.get(id).unwrap().pid).collect() };
    let shared: Vec<Vec<u32>> = rows.iter().map(pids).filter(|p| p.len() > 1).collect();
    assert_eq!(
        shared,
        vec![vec![201, 203]],
        "{:?}",
        rows.iter().map(pids).collect::<Vec<_>>()
    );
    assert_eq!(rows.len(), 4, "100, 201+203, 202, 204");
    // Each run keeps its own birth and exit columns on the shared row.
    let ends = lane_ends(&cols);
    let span = |pid: u32| {
        let id = e.processes().find(|p| p.pid == pid).unwrap().id;
        ends[&id]
    };
    assert!(span(201).1 < span(203).0, "{:?} {:?}", span(201), span(203));
    let svg = svg(&e, &[], &all(), "t").unwrap();
    assert!(
        svg.contains(">201, 203 loopback [cni-plugin]</text>"),
        "{svg}"
    );
}

/// The restart demo's restart story drawn: the daemon's lifeline broken at the old pid's exit
/// and resumed under the new pid (both lanes drawn), each survivor outlined across the band,
/// and the survivors' table in the HTML handout.
#[test]
fn a_runtime_restart_is_drawn_broken_and_resumed_with_its_survivors() {
    let input = crate::demo::Demo::Restart.open().unwrap();
    let e = crate::input::Loaded::from_input(input, None)
        .unwrap()
        .engine;
    let all = crate::lineage::stories(&e);
    let st: Vec<Story> = all
        .into_iter()
        .filter(|s| s.phase == crate::lineage::Phase::RuntimeRestart)
        .collect();
    assert_eq!(st.len(), 1);
    let opts = PictureOpts {
        page: Some(Page::A4),
        ..Default::default()
    };
    let svg = svg(&e, &st, &opts, "demo:restart").unwrap();
    assert!(
        svg.contains("class=\"rbreak\" data-restart=\"2058 2173\""),
        "no break"
    );
    assert!(
        svg.contains(">2058 containerd [runtime-daemon]<"),
        "old lane"
    );
    assert!(
        svg.contains(">2173 containerd [runtime-daemon]<"),
        "new lane"
    );
    assert!(svg.contains("class=\"rgap\""), "no band");
    for pid in [2092, 2117, 2154] {
        assert!(
            svg.contains(&format!("data-survivor=\"{pid}\"")),
            "{pid} not outlined"
        );
    }
    let mut html = Vec::new();
    write_html(&e, &st, &opts, "demo:restart", &mut html).unwrap();
    let html = String::from_utf8(html).unwrap();
    assert!(html.contains("What lived on through the restart (2058 → 2173)"));
    assert!(html.contains(
        "<tr><td>2092</td><td>containerd-shim</td><td>shim</td><td>lab-r</td><td>1</td><td>1</td>"
    ));
    // Nothing of a restart in a birth's picture.
    let births: Vec<Story> = crate::lineage::stories(&e).into_iter().take(1).collect();
    assert!(!svg_of(&e, &births).contains("rbreak"));
}

fn svg_of(e: &Engine, st: &[Story]) -> String {
    svg(e, st, &PictureOpts::default(), "t").unwrap()
}
