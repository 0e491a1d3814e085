//! The README's and docs' screens, excerpts and help summaries are the binary's own output.
//!
//! A generated block is a marker comment followed by a fenced block:
//!
//! ````text
//! <!-- generated: tracer story demo:pod | from "container" | head 6 | ... -->
//! ```
//! (replaced by what `tracer story demo:pod` prints, filtered)
//! ```
//! ````
//!
//! The command runs in the workspace root with this test's `tracer`, in UTC. Filters, applied in order:
//! `from TEXT` drops the lines before the first one holding TEXT, `skip N` drops N lines,
//! `grep TEXT` keeps the lines holding TEXT, `head N` keeps N lines, `...` adds a `...` line
//! when lines were left out after the kept ones.
//!
//! `cargo test -p tracer-user --test cli_docs` fails on any block that differs from what the
//! binary prints, and on a picture of [`PICTURES`] that differs from what it draws; `cargo
//! xtask docs` (this test with `TRACER_DOCS_WRITE=1`) rewrites them.

// The docs show the default build (`tracer --help` lists `agent`); the engine-only and
// `cli,nats` test runs build a `tracer` without it, so they leave this check to the default run.
#![cfg(all(feature = "cli", feature = "agent", feature = "capture"))]

use std::path::{Path, PathBuf};
use std::process::Command;

const TRACER: &str = env!("CARGO_BIN_EXE_tracer");
const MARKER: &str = "<!-- generated: tracer ";
const MARKER_END: &str = " -->";
/// Files that hold generated blocks, relative to the workspace root.
const FILES: &[&str] = &["README.md", "docs/tui.md"];
/// Pictures the docs show, each the whole output of a `tracer` command.
const PICTURES: &[(&str, &str)] = &[(
    "docs/birth.svg",
    "export demo:containerd --story 1 --format svg",
)];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// One generated block: where its fenced body lies in the file's lines, and its recipe.
struct Block {
    /// Index of the first body line (after the opening fence).
    body: usize,
    /// Index of the closing fence.
    close: usize,
    recipe: String,
}

/// The generated blocks of `lines`; a marker without a fenced block after it is an error.
fn blocks(file: &str, lines: &[&str]) -> Vec<Block> {
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(rest) = line.trim().strip_prefix(MARKER) else {
            continue;
        };
        let recipe = rest
            .strip_suffix(MARKER_END)
            .unwrap_or_else(|| panic!("{file}:{}: a generated marker ends with `-->`", i + 1));
        let open = lines.get(i + 1).map(|l| l.trim_start());
        assert!(
            open.is_some_and(|l| l.starts_with("```")),
            "{file}:{}: a generated marker is followed by a fenced block",
            i + 1
        );
        let close = (i + 2..lines.len())
            .find(|&j| lines[j].trim() == "```")
            .unwrap_or_else(|| panic!("{file}:{}: the fenced block is never closed", i + 2));
        out.push(Block {
            body: i + 2,
            close,
            recipe: recipe.to_string(),
        });
    }
    out
}

/// What a recipe makes: the command's stdout, filtered.
fn generate(recipe: &str) -> String {
    let mut stages = recipe.split(" | ");
    let command = stages.next().unwrap_or_default();
    let args = shlex::split(command).unwrap_or_else(|| panic!("bad quoting in `{command}`"));
    let out = Command::new(TRACER)
        .args(&args)
        .current_dir(workspace())
        .env("NO_COLOR", "1")
        .env("COLUMNS", "100")
        // `-t`/`-tt` print local time, as strace does: the docs show UTC wherever they are made.
        .env("TZ", "UTC")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "`tracer {command}` failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("the docs show UTF-8 output");
    let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
    filter(lines, stages).join("\n")
}

/// Applies the recipe's filters to `lines`.
fn filter<'a>(mut lines: Vec<&'a str>, stages: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut cut = false;
    for stage in stages {
        let words = shlex::split(stage).unwrap_or_else(|| panic!("bad quoting in `{stage}`"));
        let arg = words.get(1).map(String::as_str).unwrap_or("");
        let n = || {
            arg.parse::<usize>()
                .unwrap_or_else(|_| panic!("`{stage}` needs a count"))
        };
        match words.first().map(String::as_str) {
            Some("from") => {
                let at = lines.iter().position(|l| l.contains(arg));
                let at = at.unwrap_or_else(|| panic!("`{stage}`: no line holds it"));
                lines.drain(..at);
            }
            Some("skip") => drop(lines.drain(..n().min(lines.len()))),
            Some("grep") => lines.retain(|l| l.contains(arg)),
            Some("head") => {
                cut = lines.len() > n();
                lines.truncate(n());
            }
            Some("...") if cut => lines.push("..."),
            Some("...") => {}
            _ => panic!("unknown filter `{stage}`"),
        }
    }
    lines
}

/// `file` with every generated block as the binary makes it now, and the recipes that changed.
fn regenerate(file: &str) -> (String, Vec<String>) {
    let text = std::fs::read_to_string(workspace().join(file)).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut out: Vec<String> = Vec::new();
    let mut changed = Vec::new();
    let mut next = 0;
    for b in blocks(file, &lines) {
        out.extend(lines[next..b.body].iter().map(|l| l.to_string()));
        let now = generate(&b.recipe);
        if lines[b.body..b.close].join("\n") != now {
            changed.push(b.recipe.clone());
        }
        out.extend(now.lines().map(str::to_string));
        next = b.close;
    }
    out.extend(lines[next..].iter().map(|l| l.to_string()));
    let mut joined = out.join("\n");
    if text.ends_with('\n') {
        joined.push('\n');
    }
    (joined, changed)
}

#[test]
fn generated_blocks_match_the_binary() {
    let write = std::env::var_os("TRACER_DOCS_WRITE").is_some();
    let mut stale = Vec::new();
    let mut total = 0;
    for file in FILES {
        let path = workspace().join(file);
        let lines = std::fs::read_to_string(&path).unwrap();
        total += blocks(file, &lines.lines().collect::<Vec<_>>()).len();
        let (now, changed) = regenerate(file);
        if write && !changed.is_empty() {
            std::fs::write(&path, now).unwrap();
            eprintln!(
                "cargo xtask docs: rewrote {} block(s) of {file}",
                changed.len()
            );
        } else {
            stale.extend(changed.into_iter().map(|r| format!("{file}: tracer {r}")));
        }
    }
    assert!(total > 0, "the docs hold generated blocks");
    assert!(
        stale.is_empty(),
        "generated blocks differ from what the binary prints (run `cargo xtask docs`):\n{}",
        stale.join("\n")
    );
}

#[test]
fn pictures_match_the_binary() {
    let write = std::env::var_os("TRACER_DOCS_WRITE").is_some();
    let mut stale = Vec::new();
    for (file, recipe) in PICTURES {
        let path = workspace().join(file);
        let now = generate(recipe) + "\n";
        if std::fs::read_to_string(&path).ok().as_deref() == Some(now.as_str()) {
            continue;
        }
        if write {
            std::fs::write(&path, now).unwrap();
            eprintln!("cargo xtask docs: rewrote {file}");
        } else {
            stale.push(format!("{file}: tracer {recipe}"));
        }
    }
    assert!(
        stale.is_empty(),
        "pictures differ from what the binary draws (run `cargo xtask docs`):\n{}",
        stale.join("\n")
    );
}

#[test]
fn filters_cut_and_mark() {
    let lines = vec!["a", "b x", "c", "d x", "e"];
    let f = |recipe: &str| filter(lines.clone(), recipe.split(" | ").skip(1)).join(",");
    assert_eq!(f("cmd | from x | head 2 | ..."), "b x,c,...");
    assert_eq!(f("cmd | grep x | head 5 | ..."), "b x,d x");
    assert_eq!(f("cmd | skip 3"), "d x,e");
}

#[test]
fn a_block_is_found_between_its_marker_and_fence() {
    let text = "x\n<!-- generated: tracer --version -->\n```\nold\nolder\n```\ny";
    let lines: Vec<&str> = text.lines().collect();
    let b = &blocks("t", &lines)[0];
    assert_eq!((b.body, b.close, b.recipe.as_str()), (3, 5, "--version"));
}
