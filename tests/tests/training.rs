//! Training material on the real strace fixtures: every story step explained, and the
//! pictures rendered by real renderers: the SVG timeline through librsvg (`rsvg-convert`,
//! Debian librsvg2-bin) and the HTML page through a headless browser (Debian chromium). A
//! missing renderer fails the test (CI installs both).

use std::path::{Path, PathBuf};
use std::process::Command;

use tracer::lineage::Engine;
use tracer::picture::{svg, write_html, PictureOpts};

fn fixture_text(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/strace")
        .join(format!("{name}.log"));
    std::fs::read_to_string(p).expect("fixture")
}

fn engine_of(log: &str) -> Engine {
    let import = tracer::strace::parse_log(log).expect("import");
    let mut e = Engine::new();
    import.events.iter().for_each(|ev| e.apply(ev));
    e
}

#[test]
fn every_story_step_of_the_real_logs_is_explained() {
    let mut kinds = std::collections::HashSet::new();
    for name in ["ctr", "runc", "podman"] {
        let e = engine_of(&fixture_text(name));
        let stories = tracer::lineage::stories(&e);
        assert!(!stories.is_empty(), "{name}");
        // What `tracer story LOG --explain --format json` prints.
        let mut json = tracer::lineage::story_json(&stories);
        tracer::lineage::explain::add_whys(&mut json, &stories);
        for step in json["stories"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|s| s["steps"].as_array().unwrap())
        {
            let why = step["why"].as_str().unwrap_or_default();
            assert!(why.len() > 40 && why.ends_with('.'), "{step}");
            assert!(!step["why_source"].as_str().unwrap_or_default().is_empty());
            kinds.insert(step["kind"].as_str().unwrap().to_string());
        }
    }
    assert!(
        kinds.len() >= 10,
        "the logs show most step kinds: {kinds:?}"
    );
}

fn tool(name: &str, package: &str) -> PathBuf {
    tests::which(name).unwrap_or_else(|| {
        panic!("{name} is not installed (Debian package {package}); the picture tests need it")
    })
}

/// (width, height, distinct colours, share of non-white pixels) of a PNG.
fn png_stats(path: &Path) -> (u32, u32, usize, f64) {
    let file = std::fs::File::open(path).expect("png written");
    let mut dec = png::Decoder::new(std::io::BufReader::new(file));
    dec.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = dec.read_info().expect("a PNG");
    let mut buf = vec![0; reader.output_buffer_size().expect("size")];
    let info = reader.next_frame(&mut buf).expect("a frame");
    let px = info.color_type.samples();
    let data = &buf[..info.buffer_size()];
    let mut colours = std::collections::HashSet::new();
    let mut inked = 0usize;
    for p in data.chunks_exact(px) {
        let rgb = if px >= 3 {
            [p[0], p[1], p[2]]
        } else {
            [p[0]; 3]
        };
        colours.insert(rgb);
        if rgb.iter().any(|&c| c < 200) {
            inked += 1;
        }
    }
    let n = (data.len() / px).max(1);
    (
        info.width,
        info.height,
        colours.len(),
        inked as f64 / n as f64,
    )
}

/// A headless-browser screenshot of `html`, as a PNG in `dir`.
fn screenshot(chromium: &Path, dir: &Path, name: &str, html: &str) -> PathBuf {
    let page = dir.join(format!("{name}.html"));
    std::fs::write(&page, html).unwrap();
    let shot = dir.join(format!("{name}.png"));
    let out = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=1400,1000",
        ])
        .arg(format!("--user-data-dir={}", dir.join("profile").display()))
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(
        shot.is_file(),
        "no screenshot: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    shot
}

fn render_svg(svg_text: &str, dir: &Path, name: &str) -> PathBuf {
    let rsvg = tool("rsvg-convert", "librsvg2-bin");
    let src = dir.join(format!("{name}.svg"));
    let png = dir.join(format!("{name}.png"));
    std::fs::write(&src, svg_text).unwrap();
    let out = Command::new(rsvg)
        .arg(&src)
        .arg("-o")
        .arg(&png)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "rsvg-convert rejected the SVG: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    png
}

#[test]
fn svg_timeline_renders_with_librsvg_and_names_the_birth() {
    let dir = tests::temp_dir("picture-svg").unwrap();
    let e = engine_of(&fixture_text("ctr"));
    let stories = tracer::lineage::stories(&e);
    let text = svg(&e, &stories, &PictureOpts::default(), "ctr.log").unwrap();
    for needle in [
        "containerd-shim",
        "[shim]",
        "CLONE_PARENT",
        "runc:[2:INIT]",
        "[container]",
        "adopted by 15921",
        "PR_SET_CHILD_SUBREAPER",
        "killed SIGKILL",
    ] {
        assert!(text.contains(needle), "the picture lacks {needle:?}");
    }
    let png = render_svg(&text, &dir, "ctr");
    let (w, h, colours, inked) = png_stats(&png);
    assert!(w > 800 && h > 400, "{w}x{h}");
    assert!(colours > 16, "{colours} colours");
    assert!(inked > 0.02, "only {inked:.3} of the pixels drawn");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn hostile_names_stay_text() {
    let dir = tests::temp_dir("picture-hostile").unwrap();
    // The workload named with markup, quotes and an escape sequence (strace's octal).
    let log = fixture_text("ctr").replace("sleep", "<svg onload=x>&'\\33[31m");
    let e = engine_of(&log);
    let stories = tracer::lineage::stories(&e);
    assert!(!stories.is_empty());
    let all = PictureOpts {
        all: true,
        ..Default::default()
    };
    let text = svg(&e, &stories, &all, "<b>\"x\"</b>").unwrap();
    assert!(!text.contains("<svg onload"), "markup leaked");
    assert!(!text.contains("<b>"));
    assert!(text.contains("&lt;svg onload=x&gt;&amp;&apos;"));
    assert!(!text.contains('\u{1b}'));
    // librsvg parses it: well-formed XML.
    render_svg(&text, &dir, "hostile");
    let mut html = Vec::new();
    write_html(&e, &stories, &PictureOpts::default(), "<b>x</b>", &mut html).unwrap();
    let html = String::from_utf8(html).unwrap();
    assert!(!html.contains("<svg onload") && !html.contains("<b>"));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn html_page_is_self_contained_and_draws_in_a_browser() {
    let chromium = tool("chromium", "chromium");
    let dir = tests::temp_dir("picture-html").unwrap();
    let e = engine_of(&fixture_text("ctr"));
    let stories = tracer::lineage::stories(&e);
    let mut html = Vec::new();
    write_html(&e, &stories, &PictureOpts::default(), "ctr.log", &mut html).unwrap();
    let html = String::from_utf8(html).unwrap();
    // The picture, the stories with their explanations, the tree; nothing fetched.
    assert!(html.contains("<svg"));
    assert!(html.contains("find_new_reaper"), "explanations");
    assert!(html.contains("└─ "), "the tree");
    for fetch in ["<script", "<link", "<img", "src=", "@import", "url(http"] {
        assert!(!html.contains(fetch), "the page loads something: {fetch}");
    }
    let shot = screenshot(&chromium, &dir, "ctr", &html);
    let (w, h, colours, inked) = png_stats(&shot);
    assert!(w >= 1000 && h >= 700, "{w}x{h}");
    assert!(colours > 16, "blank page: {colours} colours");
    assert!(inked > 0.01, "blank page: {inked:.3} inked");
    // The check sees a blank page as blank.
    let blank = screenshot(
        &chromium,
        &dir,
        "blank",
        "<!DOCTYPE html><html><body></body></html>",
    );
    let (_, _, colours, inked) = png_stats(&blank);
    assert!(
        colours <= 16 && inked < 0.01,
        "{colours} colours, {inked:.3} inked"
    );
    let _ = std::fs::remove_dir_all(dir);
}
