//! The HTML handout: one self-contained page (no network) with, per story, its timeline and
//! its numbered steps explained; the tree at the end. Printed, each story starts a page (A4
//! landscape) and its timeline is scaled to the page's width.

use std::fmt::Write as _;
use std::io::Write;

use super::{draw, short_ids, xml_text, Drawn, Page, PictureError, PictureOpts};
use crate::lineage::{explain, view, Engine, Phase, Story};

const PAGE_STYLE: &str = "body{font-family:'DejaVu Sans',Verdana,sans-serif;margin:24px;color:#222;background:#fff;max-width:1400px}\
h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ccc}\
.pic{overflow-x:auto;border:1px solid #ddd}\
pre{background:#f6f6f6;padding:12px;overflow-x:auto;font-size:12px}\
ol{padding-left:0;list-style:none}li{margin:10px 0}.seq{font-family:monospace;color:#666;margin-right:8px}\
.n{display:inline-block;min-width:1.5em;height:1.5em;line-height:1.5em;border:1.5px solid #b2182b;border-radius:1em;\
color:#b2182b;font-weight:bold;text-align:center;font-size:12px;margin-right:8px}\
code{background:#f0f0f0;padding:0 3px;border-radius:3px;font-size:90%}\
.why{margin:4px 0 0 72px;color:#333}\
table.surv{border-collapse:collapse;margin:8px 0}table.surv td,table.surv th{border:1px solid #ccc;padding:3px 8px;font-size:13px;text-align:left}.src{margin:2px 0 0 72px;color:#777;font-size:12px;font-family:monospace}\
@page{size:A4 landscape;margin:10mm}\
@media print{body{margin:0;max-width:none}\
.pic{overflow:visible;border:none}.pic svg{width:100%;height:auto;max-height:170mm}\
section.story+section.story{break-before:page}h2{margin-top:0}li{break-inside:avoid}pre{white-space:pre-wrap;overflow:visible}}";

/// Text already escaped ([`xml_text`]) with each pair of Markdown backticks made `<code>`: the
/// escaping comes first, so nothing the text holds becomes markup; an unpaired backtick
/// stays as it is.
pub fn code_spans(escaped: &str) -> String {
    let parts: Vec<&str> = escaped.split('`').collect();
    let mut out = String::with_capacity(escaped.len() + 32);
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        if i % 2 == 1 && !last {
            let _ = write!(out, "<code>{part}</code>");
        } else if i % 2 == 1 {
            // The opening backtick had no closing one.
            out.push('`');
            out.push_str(part);
        } else {
            out.push_str(part);
        }
    }
    out
}

/// Writes the page of `stories` (each with its own picture) to `out`.
pub fn write_html(
    e: &Engine,
    stories: &[Story],
    opts: &PictureOpts,
    title: &str,
    out: &mut impl Write,
) -> Result<(), PictureError> {
    let t = xml_text(title, 200);
    let mut s = String::with_capacity(64 << 10);
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>Container stories: {t}</title><style>{PAGE_STYLE}</style></head><body>\
         <h1>Container stories: {t}</h1>\
         <p>Container births: {}; execs into running containers: {}; deaths: {}; runtime restarts: {}. \
         Each story has its picture (a lifeline per process, {} across, rows grouped per pod) \
         and its steps, numbered as on the picture, with the kernel rule or runtime design behind each.</p>",
        stories.iter().filter(|s| s.phase.is_birth()).count(),
        stories.iter().filter(|s| s.phase == Phase::Exec).count(),
        stories.iter().filter(|s| s.phase == Phase::Death).count(),
        stories
            .iter()
            .filter(|s| s.phase == Phase::RuntimeRestart)
            .count(),
        match opts.axis {
            super::Axis::Events => "seq",
            super::Axis::Time => "time",
        },
    );
    if opts.all {
        s.push_str("<section class=\"story\"><h2>Every process</h2><div class=\"pic\">");
        s.push_str(&draw(e, stories, opts, title, Drawn::InPage)?);
        s.push_str("</div></section>");
    }
    if stories.is_empty() {
        s.push_str("<p>No container story found.</p>");
    }
    // Written a section at a time: the page of a million processes is mostly its tree.
    out.write_all(s.as_bytes())?;
    let one = PictureOpts {
        all: false,
        ..opts.clone()
    };
    for st in stories {
        s.clear();
        story_section(&mut s, e, st, &one, title)?;
        out.write_all(s.as_bytes())?;
    }
    drop(s);
    out.write_all(b"<section class=\"story\"><h2>Process tree at the end</h2><pre>")?;
    let mut lines = EscapedLines {
        out: &mut *out,
        line: Vec::new(),
        first: true,
    };
    view::write_tree_text(
        e,
        view::TreeOpts::default(),
        view::TextTree::Traced,
        &mut lines,
    )?;
    lines.finish()?;
    out.write_all(b"</pre></section></body></html>\n")?;
    Ok(())
}

/// The tree's text as the page shows it, written as it comes: each line escaped
/// ([`xml_text`], cut at 300 characters), lines joined by `\n` (a `\r` ending one dropped and
/// no newline after the last, as `str::lines` and `join` make it).
struct EscapedLines<'w, W: Write + ?Sized> {
    out: &'w mut W,
    /// The line under way (a write may end inside a character).
    line: Vec<u8>,
    first: bool,
}

impl<W: Write + ?Sized> EscapedLines<'_, W> {
    fn put_line(&mut self) -> std::io::Result<()> {
        let text = String::from_utf8_lossy(&self.line);
        let text = text.strip_suffix('\r').unwrap_or(&text);
        if !self.first {
            self.out.write_all(b"\n")?;
        }
        self.first = false;
        self.out.write_all(xml_text(text, 300).as_bytes())?;
        self.line.clear();
        Ok(())
    }

    /// The last line, when the text did not end with a newline.
    fn finish(mut self) -> std::io::Result<()> {
        if !self.line.is_empty() {
            self.put_line()?;
        }
        Ok(())
    }
}

impl<W: Write + ?Sized> Write for EscapedLines<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut rest = buf;
        while let Some(i) = rest.iter().position(|&b| b == b'\n') {
            self.line.extend_from_slice(&rest[..i]);
            self.put_line()?;
            rest = &rest[i + 1..];
        }
        self.line.extend_from_slice(rest);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// One story: its title, its picture, its numbered steps with their explanations.
fn story_section(
    s: &mut String,
    e: &Engine,
    st: &Story,
    opts: &PictureOpts,
    title: &str,
) -> Result<(), PictureError> {
    let head = view::story_text(std::slice::from_ref(st));
    let head = short_ids(head.lines().next().unwrap_or_default());
    let _ = write!(
        s,
        "<section class=\"story\"><h2>{}</h2><div class=\"pic\">",
        xml_text(&head, 200)
    );
    // Laid out for the printed page (its columns as narrow as readable there); the print style
    // scales it to the page's width.
    let page = PictureOpts {
        page: Some(opts.page.unwrap_or(Page::A4)),
        ..opts.clone()
    };
    s.push_str(&draw(
        e,
        std::slice::from_ref(st),
        &page,
        title,
        Drawn::InPage,
    )?);
    s.push_str("</div><ol>");
    for (n, step) in st.steps.iter().enumerate() {
        let w = explain::why(st, step);
        let _ = write!(
            s,
            "<li><span class=\"n\">{}</span><span class=\"seq\">seq {}</span>{}<p class=\"why\">{}</p><p class=\"src\">{}</p></li>",
            n + 1,
            step.seq,
            xml_text(&short_ids(&step.text), 300),
            code_spans(&xml_text(&w.text, 3000)),
            code_spans(&xml_text(w.source, 300))
        );
    }
    s.push_str("</ol>");
    if let Some(r) = &st.runtime_restart {
        super::restart::survivors_table(s, r);
    }
    s.push_str("</section>");
    Ok(())
}
