//! `cargo xtask sources`: every function of the workspace's Rust code fits a screen, and no
//! source file holds a literal NUL byte (`grep` would take it for a binary and skip it).
//!
//! A function is an `fn` item, an impl's or a trait's method with a body, or an `fn` nested in
//! another's body; its length runs from its first line (visibility or `fn`; attributes and doc
//! comments left out) to its closing brace. Data tables may be longer: [`EXCEPTIONS`] names
//! each, with why.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use syn::visit::{self, Visit};

/// The longest a function may be, in lines.
pub const MAX_LINES: usize = 80;
/// The directories checked, relative to the workspace (`target` directories skipped).
pub const DIRS: [&str; 5] = [
    "tracer-user",
    "tracer-common",
    "tracer-ebpf",
    "xtask",
    "tests",
];
/// Files whose bytes are checked for NUL, by extension (every one also parsed if Rust).
const SOURCE_EXTENSIONS: [&str; 3] = ["rs", "c", "proto"];

/// Functions allowed past [`MAX_LINES`]: (file relative to the workspace, name as reported,
/// why). Only data tables belong here: a list read as one piece, which cut into parts would
/// say less.
pub const EXCEPTIONS: &[(&str, &str, &str)] = &[
    // None today: the kind tables (`synth::every_kind`, the codec tests' `arb_kind`) were cut
    // by the kinds they list. A new entry is (file, name, why).
];

/// A function over the limit, or a file with a NUL byte.
#[derive(Debug, PartialEq, Eq)]
pub struct Offender {
    pub file: PathBuf,
    pub line: usize,
    /// `name`, or `Type::name` for a method; `NUL byte` for a NUL.
    pub name: String,
    /// Lines, for a function.
    pub lines: usize,
}

impl std::fmt::Display for Offender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = format!("{}:{}", self.file.display(), self.line);
        if self.lines == 0 {
            write!(f, "{at}: {}", self.name)
        } else {
            write!(f, "{at}: {} is {} lines", self.name, self.lines)
        }
    }
}

/// `cargo xtask sources` (also run by `cargo xtask test`): one line when clean, else every
/// offender, then an error.
pub fn sources(root: &Path) -> Result<()> {
    let (files, offenders) = check(root, &DIRS, EXCEPTIONS)?;
    if offenders.is_empty() {
        println!("sources: {files} files, every function at most {MAX_LINES} lines, no NUL byte");
        return Ok(());
    }
    for o in &offenders {
        println!("{o}");
    }
    bail!(
        "sources: {} offenders (functions over {MAX_LINES} lines or NUL bytes, listed above)",
        offenders.len()
    )
}

/// Every offender under `dirs` of `root`, sorted by file and line, and how many files were
/// read. An exception naming no function over the limit is an offender too (a stale entry
/// would hide the next long function of that name).
pub fn check(
    root: &Path,
    dirs: &[&str],
    exceptions: &[(&str, &str, &str)],
) -> Result<(usize, Vec<Offender>)> {
    let mut files = Vec::new();
    for dir in dirs {
        walk(root, Path::new(dir), &mut files)?;
    }
    files.sort();
    let mut out = Vec::new();
    let mut used = vec![false; exceptions.len()];
    for file in &files {
        let bytes = std::fs::read(root.join(file))
            .with_context(|| format!("cannot read {}", file.display()))?;
        if let Some(at) = bytes.iter().position(|&b| b == 0) {
            let line = 1 + bytes[..at].iter().filter(|&&b| b == b'\n').count();
            out.push(offender(file, line, "NUL byte", 0));
        }
        if file.extension().is_some_and(|e| e == "rs") {
            for long in long_functions(file, &bytes)? {
                match exceptions
                    .iter()
                    .position(|(f, n, _)| Path::new(f) == long.file && *n == long.name)
                {
                    Some(i) => used[i] = true,
                    None => out.push(long),
                }
            }
        }
    }
    for ((f, n, _), _) in exceptions.iter().zip(&used).filter(|(_, u)| !**u) {
        out.push(offender(
            Path::new(f),
            0,
            &format!("exception {n}: no such function over the limit"),
            0,
        ));
    }
    out.sort_by(|a, b| (&a.file, a.line).cmp(&(&b.file, b.line)));
    Ok((files.len(), out))
}

fn offender(file: &Path, line: usize, name: &str, lines: usize) -> Offender {
    Offender {
        file: file.to_path_buf(),
        line,
        name: name.to_string(),
        lines,
    }
}

/// The source files under `dir` (relative to `root`), `target` directories and hidden ones
/// skipped.
fn walk(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let entries = std::fs::read_dir(root.join(dir))
        .with_context(|| format!("cannot list {}", dir.display()))?;
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = dir.join(&name);
        let kind = entry.file_type()?;
        if kind.is_dir() && name != "target" && !name.starts_with('.') {
            walk(root, &path, out)?;
        } else if kind.is_file()
            && path
                .extension()
                .is_some_and(|e| SOURCE_EXTENSIONS.iter().any(|x| e == *x))
        {
            out.push(path);
        }
    }
    Ok(())
}

/// The functions of one Rust file longer than [`MAX_LINES`].
fn long_functions(file: &Path, bytes: &[u8]) -> Result<Vec<Offender>> {
    let text = String::from_utf8_lossy(bytes);
    let ast = syn::parse_file(&text).map_err(|e| {
        let at = e.span().start();
        anyhow::anyhow!("cannot parse {}:{}: {e}", file.display(), at.line)
    })?;
    let mut finder = Finder {
        file,
        owner: None,
        out: Vec::new(),
    };
    finder.visit_file(&ast);
    Ok(finder.out)
}

/// Walks a file for functions, knowing the type whose impl or trait it is in.
struct Finder<'f> {
    file: &'f Path,
    owner: Option<String>,
    out: Vec<Offender>,
}

impl Finder<'_> {
    /// `first`: the function's first line after its attributes; `close`: its body's closing
    /// brace's.
    fn measure(&mut self, name: &syn::Ident, first: usize, close: usize) {
        let lines = close + 1 - first.min(close);
        if lines > MAX_LINES {
            let name = match &self.owner {
                Some(owner) => format!("{owner}::{name}"),
                None => name.to_string(),
            };
            self.out.push(offender(self.file, first, &name, lines));
        }
    }

    fn with_owner(&mut self, owner: Option<String>, walk: impl FnOnce(&mut Self)) {
        let outer = std::mem::replace(&mut self.owner, owner);
        walk(self);
        self.owner = outer;
    }
}

/// The first line of a function after its attributes: its visibility's, else its
/// signature's first keyword's.
fn head(vis: &syn::Visibility, sig: &syn::Signature) -> usize {
    let vis = match vis {
        syn::Visibility::Public(p) => Some(p.span),
        syn::Visibility::Restricted(r) => Some(r.pub_token.span),
        syn::Visibility::Inherited => None,
    };
    let keywords = [
        vis,
        sig.constness.as_ref().map(|t| t.span),
        sig.asyncness.as_ref().map(|t| t.span),
        match &sig.safety {
            syn::Safety::Safe(t) => Some(t.span),
            syn::Safety::Unsafe(t) => Some(t.span),
            _ => None,
        },
        sig.abi.as_ref().map(|a| a.extern_token.span),
    ];
    keywords
        .into_iter()
        .flatten()
        .next()
        .unwrap_or(sig.fn_token.span)
        .start()
        .line
}

fn close_line(block: &syn::Block) -> usize {
    block.brace_token.span.close().start().line
}

/// `Engine` for `impl Engine`, `Vec` for `impl<T> Trait for Vec<T>`.
fn type_name(ty: &syn::Type) -> Option<String> {
    match ty {
        syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        _ => Some("_".to_string()),
    }
}

impl<'ast> Visit<'ast> for Finder<'_> {
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.measure(&f.sig.ident, head(&f.vis, &f.sig), close_line(&f.block));
        // A nested fn is the file's, not a method of the impl around it.
        self.with_owner(None, |me| visit::visit_item_fn(me, f));
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        self.measure(&f.sig.ident, head(&f.vis, &f.sig), close_line(&f.block));
        visit::visit_impl_item_fn(self, f);
    }

    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        if let Some(block) = &f.default {
            let first = head(&syn::Visibility::Inherited, &f.sig);
            self.measure(&f.sig.ident, first, close_line(block));
        }
        visit::visit_trait_item_fn(self, f);
    }

    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        self.with_owner(type_name(&i.self_ty), |me| visit::visit_item_impl(me, i));
    }

    fn visit_item_trait(&mut self, t: &'ast syn::ItemTrait) {
        let name = Some(t.ident.to_string());
        self.with_owner(name, |me| visit::visit_item_trait(me, t));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An `fn` of exactly `lines` lines (a doc comment and an attribute above it, not counted).
    fn long_fn(head: &str, lines: usize) -> String {
        let body = "    let _ = 1;\n".repeat(lines - 2);
        format!("    /// Doc.\n    #[inline]\n    {head} {{\n{body}    }}\n")
    }

    /// Checks `files` (under the one directory `src`) with `exceptions`.
    fn run(files: &[(&str, &[u8])], exceptions: &[(&str, &str, &str)]) -> Vec<String> {
        let dir = tempfile::tempdir().expect("temp dir");
        for (name, bytes) in files {
            let path = dir.path().join("src").join(name);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, bytes).expect("write");
        }
        let (n, out) = check(dir.path(), &["src"], exceptions).expect("check runs");
        assert_eq!(n, files.len());
        out.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn a_function_of_81_lines_fails_and_80_passes() {
        let text = format!(
            "{}{}",
            long_fn("pub(crate) fn eighty()", 80),
            long_fn("fn eighty_one()", 81)
        );
        // The 80-line one's doc and attribute take lines 1-2: it runs 3..=82.
        assert_eq!(
            run(&[("a.rs", text.as_bytes())], &[]),
            ["src/a.rs:85: eighty_one is 81 lines"]
        );
    }

    #[test]
    fn methods_nested_and_unsafe_functions_are_measured_from_their_first_line() {
        let text = format!(
            "struct T;\nimpl T {{\n{}}}\ntrait U {{\n{}}}\nfn outer() {{\n{}}}\n",
            long_fn("pub unsafe fn method(&self)", 81),
            long_fn("fn provided(&self)", 81),
            long_fn("fn inner()", 81),
        );
        assert_eq!(
            run(&[("a.rs", text.as_bytes())], &[]),
            [
                "src/a.rs:5: T::method is 81 lines",
                "src/a.rs:90: U::provided is 81 lines",
                "src/a.rs:172: outer is 85 lines",
                "src/a.rs:175: inner is 81 lines",
            ]
        );
    }

    #[test]
    fn an_excepted_table_passes_and_a_stale_exception_fails() {
        let text = long_fn("fn table()", 120);
        let files: &[(&str, &[u8])] = &[("t.rs", text.as_bytes())];
        assert!(run(files, &[("src/t.rs", "table", "a table")]).is_empty());
        // Excepted in another file: still an offender.
        assert_eq!(
            run(files, &[("src/u.rs", "table", "a table")]),
            [
                "src/t.rs:3: table is 120 lines",
                "src/u.rs:0: exception table: no such function over the limit",
            ]
        );
    }

    #[test]
    fn a_nul_byte_fails_with_its_line() {
        let out = run(
            &[
                ("ok.rs", b"fn f() {}\n"),
                ("nul.rs", b"fn f() {}\nconst X: &str = \"a\0b\";\n"),
                ("probe.c", b"int x;\0\n"),
            ],
            &[],
        );
        assert_eq!(out, ["src/nul.rs:2: NUL byte", "src/probe.c:1: NUL byte"]);
    }
}
