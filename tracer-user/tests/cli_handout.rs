//! The pictures a trainer prints, checked by the tools that print them: `tracer export
//! --story N --page a4|16:9 --format svg` rendered by librsvg (`rsvg-convert`, Debian
//! librsvg2-bin) and the HTML handout printed to PDF by headless Chromium, read back with
//! poppler (`pdftotext`, `pdftoppm`). `cargo xtask setup --tests` installs all three; a
//! missing one fails the test.
//!
//! Checked as properties of the bundled pod recording (its pids change when it is
//! re-recorded): sizes, the smallest text once scaled to the page, the names shown, and where
//! the printed words land.

// Not every helper of the shared module is used here.
#[allow(dead_code)]
mod common;

use common::{temp, text, tracer, TRACER};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The bundled pod demo as a file.
fn pod_demo() -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/demo/pod.trace");
    p.to_str().unwrap().to_string()
}

/// `name` on PATH, or a failed test naming the Debian package.
fn tool(name: &str, package: &str) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!("{name} is not installed (Debian package {package}; `cargo xtask setup --tests` installs it)")
        })
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{cmd:?}: {}", text(&out.stderr));
    text(&out.stdout)
}

fn export(args: &[&str], out: &Path) -> String {
    let mut all = vec!["export"];
    all.extend_from_slice(args);
    all.extend(["-o", out.to_str().unwrap()]);
    let o = tracer(&all);
    assert!(o.status.success(), "tracer {all:?}: {}", text(&o.stderr));
    std::fs::read_to_string(out).unwrap()
}

/// The value of attribute `name` in `tag` (`name="…"`).
fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let at = tag.find(&format!(" {name}=\""))? + name.len() + 3;
    tag[at..].split('"').next()
}

/// Width and height of a PNG, from its IHDR chunk.
fn png_size(path: &Path) -> (u32, u32) {
    let b = std::fs::read(path).unwrap();
    assert_eq!(&b[1..4], b"PNG", "{} is no PNG", path.display());
    let be = |i: usize| u32::from_be_bytes(b[i..i + 4].try_into().unwrap());
    (be(16), be(20))
}

/// Every font size the SVG sets, in its own units: `font-size:Npx` in its style sheet and
/// `font-size="N"` attributes.
fn font_sizes(svg: &str) -> Vec<f64> {
    let mut v = Vec::new();
    for part in svg.split("font-size").skip(1) {
        let num: String = part
            .trim_start_matches([':', '=', '"'])
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        v.push(num.parse::<f64>().unwrap_or(0.0));
    }
    v
}

/// The story's pod (`namespace/name`) and what its container is called on a row.
fn pod_and_container(file: &str, n: usize) -> (String, String) {
    let json = run(Command::new(TRACER).args(["story", file, "--format", "json"]));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let st = &v["stories"][n - 1];
    let pod = st["pod"]
        .as_str()
        .expect("the demo's pod is named")
        .to_string();
    let container = match st["container_name"].as_str() {
        Some(c) => c.to_string(),
        None => {
            assert_eq!(st["sandbox"], true, "{st}");
            "sandbox (pause)".to_string()
        }
    };
    (pod, container)
}

/// Renders `svg` with librsvg and checks the page: its aspect, every text inside the
/// viewBox, and the smallest text at least 10 px once scaled to the page. Returns the PNG.
fn check_page(svg: &str, dir: &Path, name: &str, aspect: f64) -> PathBuf {
    let rsvg = tool("rsvg-convert", "librsvg2-bin");
    let src = dir.join(format!("{name}.svg"));
    let png = dir.join(format!("{name}.png"));
    std::fs::write(&src, svg).unwrap();
    run(Command::new(rsvg).arg(&src).arg("-o").arg(&png));
    let (w, h) = png_size(&png);
    assert!(
        (f64::from(w) / f64::from(h) - aspect).abs() < 0.01,
        "{name}: {w}×{h} is not the page's shape ({aspect:.3})"
    );
    let root = svg.split('>').next().unwrap();
    let vb: Vec<f64> = attr(root, "viewBox")
        .expect("a viewBox")
        .split(' ')
        .map(|n| n.parse().unwrap())
        .collect();
    let scale = f64::from(w) / vb[2];
    assert!((f64::from(h) / vb[3] - scale).abs() < 0.01, "scaled evenly");
    let least = font_sizes(svg).into_iter().fold(f64::MAX, f64::min);
    assert!(
        least * scale >= 10.0,
        "{name}: the smallest text is {least} × {scale:.3} = {:.1} px on the page",
        least * scale
    );
    for tag in svg.split("<text").skip(1) {
        let (x, y): (f64, f64) = (
            attr(tag, "x").unwrap().parse().unwrap(),
            attr(tag, "y").unwrap().parse().unwrap(),
        );
        assert!(
            x >= vb[0] && x < vb[0] + vb[2] && y > vb[1] && y <= vb[1] + vb[3],
            "{name}: text off the page: <text{}",
            tag.split('<').next().unwrap()
        );
    }
    png
}

#[test]
fn story_on_an_a4_page_is_readable_and_names_pod_and_container() {
    let dir = temp("cli-handout", "a4");
    let demo = pod_demo();
    let svg = export(
        &[&demo, "--story", "1", "--page", "a4", "--format", "svg"],
        &dir.join("s.svg"),
    );
    let root = svg.split('>').next().unwrap();
    assert_eq!(attr(root, "width"), Some("297mm"));
    assert_eq!(attr(root, "height"), Some("210mm"));
    check_page(&svg, &dir, "a4", 297.0 / 210.0);
    let (pod, container) = pod_and_container(&demo, 1);
    assert!(
        svg.contains(&format!("{pod} · {container}")),
        "rows name {pod} · {container}"
    );
    assert!(
        svg.contains(&format!("pod {pod}")),
        "a band titled with the pod"
    );
    assert!(
        !svg.contains("{cid:"),
        "rows name the pod, not the container id"
    );
    assert!(!svg.contains("rotate("), "no slanted captions");
    // Its callouts are the story's steps, each listed.
    let steps = run(Command::new(TRACER).args(["story", &demo]));
    let first = steps.split("\n\n").next().unwrap();
    let n = first.lines().filter(|l| l.starts_with("  [seq")).count();
    assert!(svg.contains(&format!(">{n}</text>")) && !svg.contains(&format!(">{}</text>", n + 1)));
    // The same story on a slide.
    let wide = export(
        &[&demo, "--story", "1", "--page", "16:9", "--format", "svg"],
        &dir.join("w.svg"),
    );
    check_page(&wide, &dir, "wide", 16.0 / 9.0);
    let _ = std::fs::remove_dir_all(dir);
}

/// Every numbered circle of the timeline (`class="co"`): centre and radius. The step list's
/// circles stand in one column at the left, one line apart.
fn callouts(svg: &str) -> Vec<(f64, f64, f64)> {
    svg.split("<circle class=\"co\"")
        .skip(1)
        .filter_map(|t| {
            let n = |a: &str| attr(t, a)?.parse::<f64>().ok();
            Some((n("cx")?, n("cy")?, n("r")?))
        })
        .collect()
}

#[test]
fn every_story_of_every_bundled_demo_fits_a4_and_a_slide_with_callouts_apart() {
    let dir = temp("cli-handout", "every");
    let mut drawn = 0;
    for demo in [
        "demo:pod",
        "demo:lifecycle",
        "demo:restart",
        "demo:containerd",
    ] {
        let json = run(Command::new(TRACER).args(["story", demo, "--format", "json"]));
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        let n = v["stories"].as_array().unwrap().len();
        assert!(n > 0, "{demo} has stories");
        for i in 1..=n {
            for (page, aspect) in [("a4", 297.0 / 210.0), ("16:9", 16.0 / 9.0)] {
                let name = format!("{}-{i}-{}", &demo[5..], &page[..2]);
                let svg = export(
                    &[
                        demo,
                        "--story",
                        &i.to_string(),
                        "--page",
                        page,
                        "--format",
                        "svg",
                    ],
                    &dir.join(format!("{name}.svg")),
                );
                check_page(&svg, &dir, &name, aspect);
                let co = callouts(&svg);
                for (k, a) in co.iter().enumerate() {
                    for b in &co[k + 1..] {
                        let d = ((a.0 - b.0).powi(2) + (a.1 - b.1).powi(2)).sqrt();
                        assert!(
                            d >= a.2 + b.2,
                            "{name}: callouts at {a:?} and {b:?} overlap"
                        );
                    }
                }
                drawn += 1;
            }
        }
    }
    assert!(drawn >= 90, "{drawn} pages");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_timeline_too_large_for_the_page_or_a_missing_story_is_one_line() {
    let dir = temp("cli-handout", "errors");
    let demo = pod_demo();
    let out = dir.join("x.svg");
    for args in [
        vec!["--page", "a4"],
        vec!["--story", "0"],
        vec!["--story", "9999"],
    ] {
        let mut all = vec![
            "export",
            &demo,
            "--format",
            "svg",
            "-o",
            out.to_str().unwrap(),
        ];
        all.extend(args.iter().copied());
        let o = tracer(&all);
        assert!(!o.status.success(), "{all:?}");
        let err = text(&o.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(!out.exists(), "nothing written");
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn pod_pictures_and_graphs_keep_the_runtime_daemon_as_a_real_node() {
    let dir = temp("cli-handout", "pod");
    let demo = pod_demo();
    let (pod, _) = pod_and_container(&demo, 1);
    let svg = export(
        &[&demo, "--pod", &pod, "--story", "1", "--format", "svg"],
        &dir.join("p.svg"),
    );
    assert!(
        svg.contains("containerd [runtime-daemon]"),
        "the daemon's row"
    );
    assert!(
        !svg.contains("placeholder"),
        "no process stands in for one unseen"
    );
    // The DOT graph of the pod: the daemon as seen, nothing outside what `tree --pod` shows.
    let dot = export(
        &[&demo, "--pod", &pod, "--format", "dot"],
        &dir.join("p.dot"),
    );
    assert!(dot.contains("containerd\\n[runtime-daemon]"), "{dot}");
    assert!(!dot.contains("placeholder"), "{dot}");
    let tree = run(Command::new(TRACER).args(["tree", &demo, "--pod", &pod]));
    let in_tree: std::collections::HashSet<&str> = tree
        .lines()
        .filter_map(|l| {
            l.trim_start_matches(['│', '├', '└', '─', ' '])
                .split(' ')
                .next()
        })
        .collect();
    let nodes: Vec<&str> = dot
        .lines()
        .filter(|l| !l.contains("->"))
        .filter_map(|l| l.split("[label=\"").nth(1)?.split([' ', '\\']).next())
        .collect();
    assert!(nodes.len() > 5, "{dot}");
    for pid in &nodes {
        assert!(
            in_tree.contains(pid),
            "{pid} is drawn but not in the pod's tree:\n{tree}"
        );
    }
    let rendered = run(Command::new(tool("dot", "graphviz"))
        .arg("-Tsvg")
        .arg(dir.join("p.dot")));
    assert!(rendered.contains(" containerd</text>"), "{rendered}");
    let _ = std::fs::remove_dir_all(dir);
}

/// The y of the first `<text>` of `class` whose text starts with `start`.
fn text_y(svg: &str, class: &str, start: &str) -> Option<f64> {
    svg.split(&format!("<text class=\"{class}\""))
        .skip(1)
        .find_map(|t| {
            let body = t.split('>').nth(1)?;
            body.starts_with(start)
                .then(|| attr(t, "y")?.parse().ok())
                .flatten()
        })
}

#[test]
fn init_and_the_runtime_daemon_stay_in_the_host_band() {
    let dir = temp("cli-handout", "bands");
    let demo = pod_demo();
    let json = run(Command::new(TRACER).args(["story", &demo, "--format", "json"]));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let n = v["stories"].as_array().unwrap().len();
    let mut seen_init = false;
    for i in 1..=n {
        let svg = export(
            &[&demo, "--story", &i.to_string(), "--format", "svg"],
            &dir.join(format!("{i}.svg")),
        );
        let pod_band = text_y(&svg, "grp", "pod ").expect("a pod band");
        // A death's story names init (pid 1) as the shim's parent of record.
        if let Some(y) = text_y(&svg, "pid", "1 ") {
            seen_init = true;
            assert!(y < pod_band, "story {i}: pid 1's row is in the pod's band");
        }
        if let Some(y) = svg
            .split("<text class=\"pid\"")
            .skip(1)
            .find(|t| t.contains("[runtime-daemon]"))
            .and_then(|t| attr(t, "y")?.parse::<f64>().ok())
        {
            assert!(
                y < pod_band,
                "story {i}: the daemon's row is in the pod's band"
            );
        }
    }
    assert!(seen_init, "some story draws pid 1");
    let _ = std::fs::remove_dir_all(dir);
}

/// (page width, page height, words with their boxes) of page `page` of a PDF, by pdftotext.
fn pdf_words(pdf: &Path, page: u32) -> (f64, f64, Vec<(String, [f64; 4])>) {
    let pdftotext = tool("pdftotext", "poppler-utils");
    let p = page.to_string();
    let html = run(Command::new(pdftotext)
        .args(["-bbox", "-f", &p, "-l", &p])
        .arg(pdf)
        .arg("-"));
    let page_tag = html.split("<page").nth(1).expect("a page");
    let num = |t: &str, a: &str| attr(t, a).unwrap().parse::<f64>().unwrap();
    let (pw, ph) = (num(page_tag, "width"), num(page_tag, "height"));
    let words = page_tag
        .split("<word")
        .skip(1)
        .map(|w| {
            let b = ["xMin", "yMin", "xMax", "yMax"].map(|a| num(w, a));
            let t = w.split('>').nth(1).unwrap().split('<').next().unwrap();
            (t.to_string(), b)
        })
        .collect();
    (pw, ph, words)
}

/// `html` printed to PDF by headless Chromium.
fn print_pdf(html: &Path, dir: &Path) -> PathBuf {
    let chromium = tool("chromium", "chromium");
    let pdf = html.with_extension("pdf");
    let out = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-pdf-header-footer",
        ])
        .arg(format!("--user-data-dir={}", dir.join("profile").display()))
        .arg(format!("--print-to-pdf={}", pdf.display()))
        .arg(format!("file://{}", html.display()))
        .output()
        .unwrap();
    assert!(pdf.is_file(), "no PDF: {}", text(&out.stderr));
    pdf
}

/// How often each plain word (ASCII letters and digits) occurs in the first picture of
/// `html`: its row labels, callout numbers, exit statuses, legend.
fn picture_words(html: &str) -> HashMap<String, usize> {
    let svg = html
        .split("<svg")
        .nth(1)
        .unwrap()
        .split("</svg>")
        .next()
        .unwrap();
    let mut n = HashMap::new();
    for t in svg.split("<text").skip(1) {
        let body = t.split('>').nth(1).unwrap().split('<').next().unwrap();
        for w in body.split_whitespace() {
            if w.chars().all(|c| c.is_ascii_alphanumeric()) {
                *n.entry(w.to_string()).or_insert(0) += 1;
            }
        }
    }
    n
}

/// The check of the printed page: every word of page 1 inside the page, and every word of
/// the timeline among them, as often as the timeline has it. A timeline cut by the page is
/// either cut out of the PDF (its right-hand words, the last callouts and exit statuses,
/// missing) or runs past the page's edge (a word's box outside it).
fn check_printed(html_text: &str, dir: &Path, name: &str) -> Result<PathBuf, String> {
    let html = dir.join(format!("{name}.html"));
    std::fs::write(&html, html_text).unwrap();
    let pdf = print_pdf(&html, dir);
    let (pw, ph, words) = pdf_words(&pdf, 1);
    if let Some((w, b)) = words
        .iter()
        .find(|(_, b)| b[0] < 0.0 || b[1] < 0.0 || b[2] > pw || b[3] > ph)
    {
        return Err(format!("{w:?} at {b:?} is off the {pw}×{ph} page"));
    }
    let mut on_page: HashMap<&str, usize> = HashMap::new();
    for (w, _) in &words {
        *on_page.entry(w.as_str()).or_insert(0) += 1;
    }
    let want = picture_words(html_text);
    assert!(want.len() > 20, "the picture has words: {want:?}");
    for (w, n) in want {
        let got = on_page.get(w.as_str()).copied().unwrap_or(0);
        if got < n {
            return Err(format!("{w:?}: {n} times in the timeline, {got} on page 1"));
        }
    }
    Ok(pdf)
}

#[test]
fn html_handout_prints_its_whole_timeline_on_an_a4_page() {
    let dir = temp("cli-handout", "print");
    let demo = pod_demo();
    let html = export(
        &[&demo, "--story", "1", "--format", "html"],
        &dir.join("h.html"),
    );
    assert!(html.contains("@page{size:A4 landscape"), "print style");
    assert!(html.contains("<code>"), "Markdown code spans rendered");
    let pdf = check_printed(&html, &dir, "story1").unwrap_or_else(|e| panic!("{e}"));
    let pdftoppm = tool("pdftoppm", "poppler-utils");
    run(Command::new(pdftoppm)
        .args(["-png", "-r", "96", "-f", "1", "-l", "1"])
        .arg(&pdf)
        .arg(dir.join("page")));
    let png = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().contains("page") && p.extension().is_some_and(|e| e == "png"))
        .expect("pdftoppm wrote page 1");
    let (w, h) = png_size(&png);
    assert!(w > h, "landscape: {w}×{h}");
    // The check sees a clipped timeline: the same page without its print style.
    let unstyled = html
        .replace("@media print", "@media nothing")
        .replace("@page{", "@nothing{");
    assert!(
        check_printed(&unstyled, &dir, "unstyled").is_err(),
        "the check passes a timeline clipped at the page's edge"
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// Each page's text (pdftotext, pages split at form feeds).
fn pdf_pages(pdf: &Path) -> Vec<String> {
    let all = run(Command::new(tool("pdftotext", "poppler-utils"))
        .arg(pdf)
        .arg("-"));
    all.split('\u{c}').map(str::to_string).collect()
}

#[test]
fn html_handout_starts_each_story_on_a_new_page() {
    let dir = temp("cli-handout", "pages");
    let demo = pod_demo();
    let path = dir.join("all.html");
    let html = export(&[&demo, "--format", "html"], &path);
    let heads: Vec<&str> = html
        .split("<section class=\"story\"><h2>")
        .skip(1)
        .map(|s| s.split("</h2>").next().unwrap())
        .collect();
    assert!(heads.len() > 2, "{} sections", heads.len());
    let pages = pdf_pages(&print_pdf(&path, &dir));
    // Each heading's start after the first (which follows the page's title) (60 characters:
    // the pod, the container id, the phase) begins as many pages as there are sections with
    // that heading.
    let start = |t: &str| -> String {
        let line = t.trim_start().lines().next().unwrap_or_default();
        line.chars().take(60).collect()
    };
    let mut want: HashMap<String, usize> = HashMap::new();
    for head in heads.into_iter().skip(1) {
        let head = head
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&apos;", "'")
            .replace("&amp;", "&");
        *want.entry(start(&head)).or_insert(0) += 1;
    }
    for (head, n) in want {
        let got = pages.iter().filter(|p| start(p) == head).count();
        assert!(got >= n, "{n} sections start with {head:?}, {got} pages");
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// The summary of a picture counts the processes it draws (a lifeline each), not every
/// process of the recording.
#[test]
fn the_summary_counts_the_processes_the_picture_draws() {
    let dir = temp("handout", "summary");
    let svg = dir.join("one.svg");
    let out = tracer(&[
        "export",
        &pod_demo(),
        "--story",
        "1",
        "--format",
        "svg",
        "-o",
        svg.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let picture = std::fs::read_to_string(&svg).unwrap();
    let lifelines = picture
        .matches("stroke-width=\"5\" stroke-linecap=\"round\"")
        .count();
    let tree = text(&tracer(&["tree", &pod_demo(), "--format", "json"]).stdout);
    let all = serde_json::from_str::<serde_json::Value>(&tree).unwrap()["processes"]
        .as_array()
        .map_or(0, Vec::len);
    assert!(lifelines > 0 && lifelines < all, "{lifelines} of {all}");
    let said = format!("1 stories, {lifelines} processes drawn");
    assert!(text(&out.stderr).contains(&said), "{}", text(&out.stderr));
}

/// The lifecycle demo's stop on a time axis, printed: the grace period between SIGTERM and
/// SIGKILL is room on the page (its arrows 2.0 s apart by the ticks), each signal an arrow.
#[test]
fn a_stop_on_a_time_axis_shows_its_grace_period() {
    let dir = temp("cli-handout", "time");
    let demo = "demo:lifecycle";
    let base = [
        demo,
        "--pod",
        "tracer-lab/life",
        "--container",
        "stopper",
        "--story",
        "2",
        "--axis",
        "time",
        "--format",
        "svg",
    ];
    for (page, aspect) in [("a4", 297.0 / 210.0), ("16:9", 16.0 / 9.0)] {
        let mut args = base.to_vec();
        args.extend(["--page", page]);
        let name = format!("stop-{}", &page[..2]);
        let svg = export(&args, &dir.join(format!("{name}.svg")));
        check_page(&svg, &dir, &name, aspect);
        assert!(svg.contains("; time across (100 px = "), "{name}");
        // The signal arrows' x, in order: SIGTERM, SIGKILL, SIGCHLD.
        let xs: Vec<f64> = svg
            .split("<line class=\"sig\"")
            .skip(1)
            // The legend's starts at 0.
            .filter(|l| attr(l, "x1") != Some("0"))
            .filter_map(|l| attr(l, "x2")?.parse().ok())
            .collect();
        assert_eq!(xs.len(), 3, "{name}: {xs:?}");
        // The header's scale: `100 px = 714 ms`.
        let scale = svg.split("time across (100 px = ").nth(1).unwrap();
        let (n, unit) = scale.split(',').next().unwrap().split_once(' ').unwrap();
        let secs: f64 = n.parse::<f64>().unwrap()
            * match unit {
                "s" => 1.0,
                "ms" => 1e-3,
                u => panic!("{name}: unit {u}"),
            };
        let px_per_s = 100.0 / secs;
        // The grace period: a wait written `2.0 s`, its room 2.0 s at that scale, and the
        // SIGKILL at least that far after the SIGTERM. Truth: SIGKILL came 2.0 s after SIGTERM
        // in the recording (`tracer story`'s words, from its time stamps).
        let waits: Vec<(f64, f64, String)> = svg
            .split("<path class=\"wait\" d=\"M")
            .skip(1)
            .map(|w| {
                let x0 = w.split(',').next().unwrap().parse().unwrap();
                let x1 = w.split('H').nth(1).unwrap().split('V').next().unwrap();
                let label = w
                    .split("</text>")
                    .next()
                    .unwrap()
                    .rsplit('>')
                    .next()
                    .unwrap();
                (x0, x1.parse().unwrap(), label.to_string())
            })
            .collect();
        let grace = waits.iter().find(|w| w.2 == "2.0 s");
        let Some(&(x0, x1, _)) = grace else {
            panic!("{name}: waits {waits:?}")
        };
        let room = (x1 - x0 + 4.0) / px_per_s;
        assert!((1.95..2.05).contains(&room), "{name}: {room:.3} s of room");
        assert!(xs[1] - xs[0] >= x1 - x0, "{name}: {xs:?} {x0} {x1}");
    }
    // Not for a format without a picture.
    let o = tracer(&["export", demo, "--axis", "time", "--format", "jsonl"]);
    assert!(!o.status.success());
    assert_eq!(text(&o.stderr).trim().lines().count(), 1);
    let _ = std::fs::remove_dir_all(dir);
}
