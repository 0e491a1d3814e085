//! Every bundled story's picture, read back from its SVG: no step callout covers an
//! arrowhead, and every arrow starts on a drawn lifeline. At A4 and slide size, on both axes.

use super::{svg, Axis, Page, PictureOpts};
use crate::demo::Demo;
use crate::input::Loaded;

/// The numeric attribute `name` of an element's text.
fn attr(el: &str, name: &str) -> Option<f64> {
    let el = format!(" {el}");
    let at = el.find(&format!(" {name}=\""))? + name.len() + 3;
    el[at..].split('"').next()?.parse().ok()
}

/// The text of every `<TAG …/>` element of `svg`.
fn elements<'a>(svg: &'a str, tag: &str) -> Vec<&'a str> {
    svg.split(&format!("<{tag} "))
        .skip(1)
        .filter_map(|rest| rest.split("/>").next())
        .collect()
}

/// A line's ends.
fn ends(el: &str) -> [f64; 4] {
    ["x1", "y1", "x2", "y2"].map(|a| attr(el, a).unwrap_or_else(|| panic!("{a} of {el}")))
}

/// The box an arrowhead at the end of `l` covers: the marker is 7 stroke widths long and wide,
/// drawn back from the line's end (its tip a little past it); a square of that side, from a
/// little past the end to one side back, covers it whatever its direction.
fn head(l: [f64; 4], class: &str) -> [f64; 4] {
    let sw = match class {
        "cp" => 2.0,
        "sig" => 1.8,
        _ => 1.6,
    };
    let len = 7.0 * sw;
    let (dx, dy) = (l[2] - l[0], l[3] - l[1]);
    let d = dx.hypot(dy).max(1e-9);
    let (cx, cy) = (l[2] - dx / d * len * 0.4, l[3] - dy / d * len * 0.4);
    [
        cx - len / 2.0,
        cy - len / 2.0,
        cx + len / 2.0,
        cy + len / 2.0,
    ]
}

/// What is wrong in one picture: callouts over heads, arrows from no lifeline.
fn faults(svg: &str) -> Vec<String> {
    let lifelines: Vec<[f64; 4]> = elements(svg, "line")
        .into_iter()
        .filter(|l| l.contains("stroke-linecap=\"round\""))
        .map(ends)
        .collect();
    let mut out = Vec::new();
    let arrows: Vec<(&str, [f64; 4])> = elements(svg, "line")
        .into_iter()
        .filter(|l| l.contains("marker-end="))
        .filter_map(|l| Some((l.split('"').nth(1)?, ends(l))))
        .filter(|(_, e)| e != &[0.0, 0.0, 28.0, 0.0])
        .collect();
    for (class, a) in &arrows {
        let on = lifelines
            .iter()
            .any(|l| (l[1] - a[1]).abs() < 0.5 && l[0] - 1.0 <= a[0] && a[0] <= l[2] + 1.0);
        if !on {
            out.push(format!("{class} arrow {a:?} starts on no lifeline"));
        }
        let b = head(*a, class);
        for c in elements(svg, "circle")
            .iter()
            .filter(|c| c.contains("class=\"co\""))
        {
            let (cx, cy, r) = (
                attr(c, "cx").unwrap(),
                attr(c, "cy").unwrap(),
                attr(c, "r").unwrap(),
            );
            let (nx, ny) = (cx.clamp(b[0], b[2]), cy.clamp(b[1], b[3]));
            if (cx - nx).hypot(cy - ny) < r {
                out.push(format!(
                    "callout at ({cx}, {cy}) covers the head of {class} arrow {a:?}"
                ));
            }
        }
    }
    out
}

#[test]
fn no_callout_covers_an_arrowhead_and_every_arrow_starts_on_a_lifeline() {
    let mut checked = 0;
    let mut bad = Vec::new();
    for &demo in Demo::ALL {
        let e = Loaded::from_input(demo.open().unwrap(), None)
            .unwrap()
            .engine;
        let stories = crate::lineage::stories(&e);
        assert!(!stories.is_empty(), "{demo:?}");
        for (n, st) in stories.iter().enumerate() {
            for page in [Page::A4, Page::Wide] {
                for axis in [Axis::Events, Axis::Time] {
                    let opts = PictureOpts {
                        page: Some(page),
                        axis,
                        ..Default::default()
                    };
                    let pic = svg(&e, std::slice::from_ref(st), &opts, "t")
                        .unwrap_or_else(|err| panic!("{demo:?} story {} {axis:?}: {err}", n + 1));
                    for f in faults(&pic) {
                        bad.push(format!("{demo:?} story {} {page:?} {axis:?}: {f}", n + 1));
                    }
                    checked += 1;
                }
            }
        }
    }
    // Every process of each demo, with every story's steps, on both axes.
    for &demo in Demo::ALL {
        let e = Loaded::from_input(demo.open().unwrap(), None)
            .unwrap()
            .engine;
        let stories = crate::lineage::stories(&e);
        for axis in [Axis::Events, Axis::Time] {
            let opts = PictureOpts {
                all: true,
                axis,
                ..Default::default()
            };
            let pic = svg(&e, &stories, &opts, "t").unwrap();
            for f in faults(&pic) {
                bad.push(format!("{demo:?} --all {axis:?}: {f}"));
            }
        }
    }
    assert!(checked > 40, "{checked} pictures");
    assert!(bad.is_empty(), "{} faults:\n{}", bad.len(), bad.join("\n"));
}

/// The lifecycle demo's stop: SIGTERM (ignored by a pid 1 without a handler), SIGKILL, and
/// the dead child's SIGCHLD to the shim, each an arrow.
#[test]
fn a_stop_draws_its_sigterm_sigkill_and_sigchld() {
    let e = Loaded::from_input(Demo::Lifecycle.open().unwrap(), None)
        .unwrap()
        .engine;
    let stories = crate::lineage::stories(&e);
    let stop = stories
        .iter()
        .find(|s| {
            s.container_name.as_deref() == Some("stopper")
                && s.phase == crate::lineage::Phase::Death
        })
        .unwrap();
    let pic = svg(&e, std::slice::from_ref(stop), &PictureOpts::default(), "t").unwrap();
    for label in ["SIGTERM (ignored)", "SIGKILL", "SIGCHLD to the parent"] {
        assert_eq!(
            pic.matches(&format!(">{label}</text>")).count(),
            1,
            "{label}"
        );
    }
    let arrows = elements(&pic, "line class=\"sig\"");
    // The legend's arrow starts at 0.
    assert_eq!(
        arrows.iter().filter(|l| attr(l, "x1") != Some(0.0)).count(),
        3
    );
}
