//! `cargo xtask modules`: the module graphs of tracer-user (library, binary and test targets)
//! and of the `tests` crate (library, binaries and test targets), feature-gated and test modules
//! included, have no import cycle, and tracer-user keeps the "never" rules of ARCHITECTURE.md's
//! `## Import rules`.
//!
//! Nodes are modules; module A refers to module B when a path in A's code (a `use`, or a path in
//! an expression, type, pattern or macro call) resolves into B. Paths are resolved through
//! `crate::`, `super::`, `self::`, submodules and the names `use`s bring in, and re-exports are
//! followed to the module that defines the item. Edges are levelized before cycles are sought:
//! an edge between `a::b::c` and `a::d::e` is one between the siblings `a::b` and `a::d`, and an
//! edge between a module and its own ancestor is no cycle (a parent owns its children).

use anyhow::{anyhow, bail, Context, Result};
use petgraph::{algo::tarjan_scc, graph::DiGraph};
use proc_macro2::{TokenStream, TokenTree};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use syn::ext::IdentExt;
use syn::visit::{self, Visit};
use syn::{Ident, Item, ItemMod, UseTree};

/// One crate checked: each Cargo target is a crate of its own (a test target or binary names
/// the library as an outside crate, so the library is not part of its graph).
#[derive(Debug, Clone)]
pub struct Krate {
    /// `library`, `tests test live`...
    pub label: String,
    /// Its root file, relative to the workspace.
    pub root: PathBuf,
    /// Whether ARCHITECTURE.md's import rules (about tracer-user's modules) apply to it.
    pub ruled: bool,
}

impl Krate {
    pub fn new(label: &str, root: &str, ruled: bool) -> Self {
        Krate {
            label: label.to_string(),
            root: PathBuf::from(root),
            ruled,
        }
    }
}

/// The crates checked under the workspace `root`: tracer-user's library and binary (under the
/// rules), then every other target of tracer-user and of the `tests` crate, found the way cargo
/// finds them (`tests/*.rs`, `tests/*/main.rs`, `src/bin/*.rs`).
pub fn workspace_crates(root: &Path) -> Result<Vec<Krate>> {
    let mut out = vec![
        Krate::new("library", "tracer-user/src/lib.rs", true),
        Krate::new("binary", "tracer-user/src/main.rs", true),
        Krate::new("tests", "tests/src/lib.rs", false),
    ];
    for (label, dir) in [
        ("tracer-user test", "tracer-user/tests"),
        ("tests bin", "tests/src/bin"),
        ("tests test", "tests/tests"),
    ] {
        for (name, file) in targets_in(root, Path::new(dir))? {
            out.push(Krate {
                label: format!("{label} {name}"),
                root: file,
                ruled: false,
            });
        }
    }
    Ok(out)
}

/// Cargo's auto-discovered targets in `dir`: `x.rs` and `x/main.rs`, by name, sorted; none
/// when there is no such directory.
fn targets_in(root: &Path, dir: &Path) -> Result<Vec<(String, PathBuf)>> {
    let mut out = Vec::new();
    let entries = match std::fs::read_dir(root.join(dir)) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        r => r.with_context(|| format!("cannot list {}", dir.display()))?,
    };
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        if let Some(stem) = name.strip_suffix(".rs").filter(|_| path.is_file()) {
            out.push((stem.to_string(), dir.join(&name)));
        } else if path.join("main.rs").is_file() {
            out.push((name.clone(), dir.join(&name).join("main.rs")));
        }
    }
    out.sort();
    Ok(out)
}

const RULES_FILE: &str = "ARCHITECTURE.md";
const RULES_HEADING: &str = "## Import rules";
/// Deeper than any real module tree: a `#[path]` loop stops here instead of recursing forever.
const MAX_DEPTH: usize = 32;

/// `cargo xtask modules` (also run by `cargo xtask test`): one line when the graph is clean,
/// else every cycle and broken rule, then an error.
pub fn modules(root: &Path) -> Result<()> {
    let report = check(root, &workspace_crates(root)?, RULES_FILE)?;
    if report.cycles.is_empty() && report.violations.is_empty() {
        println!(
            "modules: {} modules, {} edges, no cycles, {} rules kept",
            report.modules, report.edges, report.rules
        );
        return Ok(());
    }
    for cycle in &report.cycles {
        println!("cycle ({}): {}", cycle.krate, cycle.members.join(", "));
        for edge in &cycle.edges {
            println!("  {edge}");
        }
    }
    for violation in &report.violations {
        println!("{violation}");
    }
    bail!(
        "modules: {} import cycles, {} import-rule problems (listed above)",
        report.cycles.len(),
        report.violations.len()
    )
}

/// What the check found over every crate.
#[derive(Debug)]
pub struct Report {
    pub modules: usize,
    /// Distinct module-to-module references (before levelizing), self-references left out.
    pub edges: usize,
    pub cycles: Vec<Cycle>,
    /// One line per reference that breaks an import rule, or why the rules cannot be read
    /// (a missing section, a bullet that is no rule, a module that does not exist).
    pub violations: Vec<String>,
    pub rules: usize,
}

/// Sibling modules that refer to each other in a ring (one strongly connected component).
#[derive(Debug)]
pub struct Cycle {
    pub krate: String,
    /// Sorted, as `crate::a::b`.
    pub members: Vec<String>,
    /// Each edge inside the component with one example reference (file:line and the path).
    pub edges: Vec<String>,
}

/// Runs the whole check over `crates` under `root`; the rules come from `rules_file`, which
/// must have the rules section (a deleted one must not pass quietly). Rules that cannot be
/// read are reported with the cycles, which are still sought.
pub fn check(root: &Path, crates: &[Krate], rules_file: &str) -> Result<Report> {
    let (rules, mut violations) = match read_rules(root, rules_file) {
        Ok(rules) => (rules, Vec::new()),
        Err(e) => (Vec::new(), vec![format!("{e:#}")]),
    };
    let mut loaded = Vec::new();
    for krate in crates {
        let modules = load_crate(root, &krate.root).with_context(|| {
            format!(
                "cannot read the {} crate ({})",
                krate.label,
                krate.root.display()
            )
        })?;
        let refs = references(&modules);
        loaded.push((krate.label.clone(), modules, refs));
    }
    let ruled: Vec<_> = crates
        .iter()
        .zip(&loaded)
        .filter(|(k, _)| k.ruled)
        .map(|(_, l)| l)
        .collect();
    violations.extend(check_rules(&rules, &ruled, rules_file));
    let mut report = Report {
        modules: loaded.iter().map(|(_, m, _)| m.len()).sum(),
        edges: 0,
        cycles: Vec::new(),
        violations,
        rules: rules.len(),
    };
    for (label, modules, refs) in &loaded {
        let distinct: HashSet<(usize, usize)> = refs.iter().map(|r| (r.from, r.to)).collect();
        report.edges += distinct.len();
        report.cycles.extend(cycles(label, modules, refs));
    }
    Ok(report)
}

// ---------------------------------------------------------------------------------------------
// Loading: the module tree, from `mod` declarations.

/// One module, as the walk over `mod` declarations found it.
#[derive(Default)]
struct Module {
    /// `["tracefile", "reader"]` for `crate::tracefile::reader`; empty for the crate root.
    path: Vec<String>,
    parent: Option<usize>,
    /// The file holding its code (an inline module's is its parent's), relative to the root.
    file: PathBuf,
    children: HashMap<String, usize>,
    /// Names of the items it defines other than modules: they shadow glob imports.
    defined: HashSet<String>,
    /// `use`s by the name they bring in (`use a::b as c` is `c` → `[a, b]`).
    named: HashMap<String, Vec<String>>,
    /// Glob imports' prefixes (`use super::*` is `[super]`).
    globs: Vec<Vec<String>>,
    /// Every path its code names, in source order.
    refs: Vec<RawRef>,
}

/// A path as written, not yet resolved.
struct RawRef {
    segs: Vec<String>,
    line: usize,
    /// Written in a `use`: it may name a module itself, which a path in code cannot.
    in_use: bool,
}

/// Where a module's `mod x;` declarations look for files.
struct Dirs {
    /// `x.rs` or `x/mod.rs` in here.
    child_dir: PathBuf,
    /// `#[path = "..."]` is relative to this.
    path_base: PathBuf,
}

fn load_crate(root: &Path, root_file: &Path) -> Result<Vec<Module>> {
    let mut loader = Loader {
        root,
        modules: Vec::new(),
    };
    // The crate root owns its directory: `mod x;` in src/lib.rs is src/x.rs.
    loader.load_file(Vec::new(), None, root_file, true)?;
    Ok(loader.modules)
}

struct Loader<'a> {
    root: &'a Path,
    modules: Vec<Module>,
}

impl Loader<'_> {
    /// Adds the module whose code is `file`, and its submodules. `owns_dir`: `mod.rs`, crate
    /// roots and `#[path]` files find `mod b;` beside them; `a.rs` finds it in `a/`.
    fn load_file(
        &mut self,
        path: Vec<String>,
        parent: Option<usize>,
        file: &Path,
        owns_dir: bool,
    ) -> Result<usize> {
        if path.len() > MAX_DEPTH {
            bail!(
                "modules nested deeper than {MAX_DEPTH} at {}",
                file.display()
            );
        }
        let abs = self.root.join(file);
        let text = std::fs::read_to_string(&abs)
            .with_context(|| format!("cannot read {}", abs.display()))?;
        let ast = syn::parse_file(&text).map_err(|e| parse_error(file, &e))?;
        let dir = file.parent().unwrap_or(Path::new("")).to_path_buf();
        let child_dir = match (owns_dir, file.file_stem()) {
            (false, Some(stem)) => dir.join(stem),
            _ => dir.clone(),
        };
        let dirs = Dirs {
            child_dir,
            path_base: dir,
        };
        self.add(path, parent, file, ast.items, &dirs)
    }

    /// Adds one module made of `items` (a file's or an inline block's), its submodules first.
    fn add(
        &mut self,
        path: Vec<String>,
        parent: Option<usize>,
        file: &Path,
        mut items: Vec<Item>,
        dirs: &Dirs,
    ) -> Result<usize> {
        let id = self.modules.len();
        self.modules.push(Module {
            path,
            parent,
            file: file.to_path_buf(),
            ..Module::default()
        });
        for item in &mut items {
            if let Item::Mod(decl) = item {
                let child = self.add_child(id, decl, dirs)?;
                self.modules[id].children.insert(ident(&decl.ident), child);
            }
        }
        scan(&mut self.modules[id], &items);
        Ok(id)
    }

    /// A `mod` declaration, whatever its `#[cfg]`: an inline block's items are moved out of the
    /// parent (so its code counts as the child's, not the parent's), a file is read.
    fn add_child(&mut self, parent: usize, decl: &mut ItemMod, dirs: &Dirs) -> Result<usize> {
        let name = ident(&decl.ident);
        let mut path = self.modules[parent].path.clone();
        path.push(name.clone());
        let attr = path_attr(decl, &self.modules[parent].file)?;
        if let Some((_, items)) = decl.content.take() {
            let dir = dirs.child_dir.join(attr.unwrap_or(name));
            let inline = Dirs {
                child_dir: dir.clone(),
                path_base: dir,
            };
            let file = self.modules[parent].file.clone();
            return self.add(path, Some(parent), &file, items, &inline);
        }
        let (file, owns_dir) = match attr {
            Some(p) => (dirs.path_base.join(p), true),
            None => self.find_file(&dirs.child_dir, &name)?,
        };
        self.load_file(path, Some(parent), &file, owns_dir)
    }

    /// `x.rs`, else `x/mod.rs` (which owns its directory).
    fn find_file(&self, dir: &Path, name: &str) -> Result<(PathBuf, bool)> {
        let flat = dir.join(format!("{name}.rs"));
        if self.root.join(&flat).is_file() {
            return Ok((flat, false));
        }
        let nested = dir.join(name).join("mod.rs");
        if self.root.join(&nested).is_file() {
            return Ok((nested, true));
        }
        bail!(
            "`mod {name};`: neither {} nor {} exists",
            flat.display(),
            nested.display()
        )
    }
}

/// The value of `#[path = "..."]` on a `mod`, if any.
fn path_attr(decl: &ItemMod, file: &Path) -> Result<Option<String>> {
    let Some(attr) = decl.attrs.iter().find(|a| a.path().is_ident("path")) else {
        return Ok(None);
    };
    let value = &attr
        .meta
        .require_name_value()
        .map_err(|e| parse_error(file, &e))?
        .value;
    match value {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(s),
            ..
        }) => Ok(Some(s.value())),
        _ => Err(parse_error(
            file,
            &syn::Error::new(decl.ident.span(), "#[path] needs a string"),
        )),
    }
}

fn parse_error(file: &Path, e: &syn::Error) -> anyhow::Error {
    let at = e.span().start();
    anyhow!(
        "cannot parse {}:{}:{}: {e}",
        file.display(),
        at.line,
        at.column + 1
    )
}

fn ident(id: &Ident) -> String {
    id.unraw().to_string()
}

// ---------------------------------------------------------------------------------------------
// Scanning: what each module defines, imports and names.

/// Fills in a module's names and references from its own items (inline submodules' items
/// were already moved out).
fn scan(module: &mut Module, items: &[Item]) {
    module.defined = items.iter().filter_map(item_name).collect();
    let mut collector = Collector {
        module,
        line_of_use: 0,
    };
    for item in items {
        collector.visit_item(item);
    }
}

/// The name an item other than a module brings into its module's namespace.
fn item_name(item: &Item) -> Option<String> {
    let id = match item {
        Item::Const(i) => &i.ident,
        Item::Enum(i) => &i.ident,
        Item::ExternCrate(i) => i.rename.as_ref().map_or(&i.ident, |(_, r)| r),
        Item::Fn(i) => &i.sig.ident,
        Item::Macro(i) => i.ident.as_ref()?,
        Item::Static(i) => &i.ident,
        Item::Struct(i) => &i.ident,
        Item::Trait(i) => &i.ident,
        Item::TraitAlias(i) => &i.ident,
        Item::Type(i) => &i.ident,
        Item::Union(i) => &i.ident,
        _ => return None,
    };
    Some(ident(id))
}

/// Walks a module's code for `use`s and paths. `use`s inside function bodies count as the
/// module's: resolution here is by module, and such a `use` still ties the two modules.
struct Collector<'m> {
    module: &'m mut Module,
    line_of_use: usize,
}

impl<'ast> Visit<'ast> for Collector<'_> {
    fn visit_item_mod(&mut self, _: &'ast ItemMod) {
        // An inline module's code is its own (moved out already); one inside a function body
        // is too rare to model.
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        // `use ::x` is another crate.
        if u.leading_colon.is_none() {
            self.line_of_use = u.use_token.span.start().line;
            self.use_tree(&u.tree, Vec::new());
        }
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        // One segment is a local name (a variable may shadow a module) or an imported one,
        // whose `use` is already a reference; `::x` is another crate.
        if p.leading_colon.is_none() && p.segments.len() > 1 {
            let segs = p.segments.iter().map(|s| ident(&s.ident)).collect();
            let line = p.segments[0].ident.span().start().line;
            self.push(segs, line, false);
        }
        visit::visit_path(self, p);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        // Macro arguments are tokens to syn (`assert_eq!(crate::input::detect(..), ..)`).
        self.macro_tokens(mac.tokens.clone());
        visit::visit_macro(self, mac);
    }
}

impl Collector<'_> {
    fn push(&mut self, segs: Vec<String>, line: usize, in_use: bool) {
        self.module.refs.push(RawRef { segs, line, in_use });
    }

    /// One reference per leaf of a `use` tree, and the names it brings in.
    fn use_tree(&mut self, tree: &UseTree, mut prefix: Vec<String>) {
        let line = self.line_of_use;
        match tree {
            UseTree::Path(p) => {
                prefix.push(ident(&p.ident));
                self.use_tree(&p.tree, prefix);
            }
            UseTree::Name(n) => self.use_leaf(prefix, &n.ident, &n.ident, line),
            UseTree::Rename(r) => self.use_leaf(prefix, &r.ident, &r.rename, line),
            UseTree::Glob(_) => {
                self.module.globs.push(prefix.clone());
                self.push(prefix, line, true);
            }
            UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(t, prefix.clone());
                }
            }
        }
    }

    /// `use a::b as c` (`name` is `b`, `alias` is `c`); `use a::{self}` names `a` itself.
    fn use_leaf(&mut self, mut segs: Vec<String>, name: &Ident, alias: &Ident, line: usize) {
        let name = ident(name);
        if name != "self" {
            segs.push(name);
        }
        let alias = match ident(alias).as_str() {
            "self" => segs.last().cloned(),
            "_" => None,
            a => Some(a.to_string()),
        };
        if let Some(alias) = alias {
            // The first `use` of a name wins (two in different function bodies are rare).
            self.module
                .named
                .entry(alias)
                .or_insert_with(|| segs.clone());
        }
        self.push(segs, line, true);
    }

    /// Paths of two or more segments in macro tokens (`a::b`, `$crate::x`).
    fn macro_tokens(&mut self, tokens: TokenStream) {
        let tts: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < tts.len() {
            match &tts[i] {
                TokenTree::Group(g) => {
                    self.macro_tokens(g.stream());
                    i += 1;
                }
                TokenTree::Ident(first) => {
                    let (segs, next) = token_path(&tts, i);
                    // After `::` it is the tail of `::x::y` (another crate).
                    if segs.len() > 1 && !(i >= 2 && colons_at(&tts, i - 2)) {
                        self.push(segs, first.span().start().line, false);
                    }
                    i = next;
                }
                _ => i += 1,
            }
        }
    }
}

/// The `a::b::c` starting at token `i` (an identifier), and the index after it.
fn token_path(tts: &[TokenTree], i: usize) -> (Vec<String>, usize) {
    let mut segs = Vec::new();
    let mut at = i;
    while let Some(TokenTree::Ident(id)) = tts.get(at) {
        segs.push(ident(id));
        if !(colons_at(tts, at + 1) && matches!(tts.get(at + 3), Some(TokenTree::Ident(_)))) {
            return (segs, at + 1);
        }
        at += 3;
    }
    (segs, at)
}

/// Whether tokens `i` and `i + 1` are `::`.
fn colons_at(tts: &[TokenTree], i: usize) -> bool {
    let colon =
        |t: Option<&TokenTree>| matches!(t, Some(TokenTree::Punct(p)) if p.as_char() == ':');
    colon(tts.get(i)) && colon(tts.get(i + 1))
}

// ---------------------------------------------------------------------------------------------
// Resolution: a path, written in some module, to the module it lands in.

/// Where a path lands: a module, and whether the path names that module itself (all of its
/// segments were modules) or an item in it.
#[derive(Clone, Copy, Debug)]
struct Landing {
    module: usize,
    names_module: bool,
}

impl Landing {
    fn module(module: usize) -> Self {
        Landing {
            module,
            names_module: true,
        }
    }
}

struct Resolver<'a> {
    modules: &'a [Module],
    /// What a name means in a module, once known; `None` while being worked out, so a `use`
    /// loop (or two globs importing each other) ends instead of recursing forever.
    memo: HashMap<(usize, String), Option<Landing>>,
}

impl<'a> Resolver<'a> {
    fn new(modules: &'a [Module]) -> Self {
        Resolver {
            modules,
            memo: HashMap::new(),
        }
    }

    /// `segs` as written in module `ctx`; `None` when it starts outside the crate (another
    /// crate, a local name, a generic parameter).
    fn resolve(&mut self, ctx: usize, segs: &[String]) -> Option<Landing> {
        let (first, rest) = segs.split_first()?;
        let start = match first.as_str() {
            "crate" | "$crate" => Landing::module(0),
            "self" => Landing::module(ctx),
            "super" => return self.resolve_super(ctx, rest),
            name => self.member(ctx, name)?,
        };
        Some(self.descend(start, rest))
    }

    /// `super::` (repeatable) from `ctx`; past the crate root is an error rustc reports.
    fn resolve_super(&mut self, ctx: usize, rest: &[String]) -> Option<Landing> {
        let parent = self.modules[ctx].parent?;
        match rest.first().map(String::as_str) {
            Some("super") => self.resolve_super(parent, &rest[1..]),
            _ => Some(self.descend(Landing::module(parent), rest)),
        }
    }

    /// Follows `rest` down from `at` while it names modules (through `use`s, so re-exports
    /// land where the item is defined); a name a module does not know (a variant, an
    /// associated item, something a macro made) stops the walk in that module.
    fn descend(&mut self, mut at: Landing, rest: &[String]) -> Landing {
        for seg in rest {
            if !at.names_module {
                break;
            }
            at = self.member(at.module, seg).unwrap_or(Landing {
                module: at.module,
                names_module: false,
            });
        }
        at
    }

    /// What `name` means inside module `m` (memoized; see `memo`).
    fn member(&mut self, m: usize, name: &str) -> Option<Landing> {
        let key = (m, name.to_string());
        if let Some(known) = self.memo.get(&key) {
            return *known;
        }
        self.memo.insert(key.clone(), None);
        let found = self.lookup(m, name);
        self.memo.insert(key, found);
        found
    }

    /// A submodule, an item of `m`'s own, what a named `use` brings in, then what a glob does
    /// (the weakest: everything else shadows it).
    fn lookup(&mut self, m: usize, name: &str) -> Option<Landing> {
        let module = &self.modules[m];
        if let Some(&child) = module.children.get(name) {
            return Some(Landing::module(child));
        }
        if module.defined.contains(name) {
            return Some(Landing {
                module: m,
                names_module: false,
            });
        }
        if let Some(target) = module.named.get(name) {
            return self.resolve(m, target);
        }
        for glob in &module.globs {
            if let Some(Landing {
                module: source,
                names_module: true,
            }) = self.resolve(m, glob)
            {
                if let Some(found) = self.member(source, name) {
                    return Some(found);
                }
            }
        }
        None
    }
}

/// A resolved reference from one module of a crate into another.
struct Reference {
    from: usize,
    to: usize,
    /// `tracer-user/src/tracefile/fuzz_check.rs:12 crate::input::detect`.
    example: String,
}

/// Every reference between two different modules of the crate, in module then source order.
fn references(modules: &[Module]) -> Vec<Reference> {
    let mut resolver = Resolver::new(modules);
    let mut out = Vec::new();
    for (from, module) in modules.iter().enumerate() {
        for raw in &module.refs {
            let Some(landing) = resolver.resolve(from, &raw.segs) else {
                continue;
            };
            // Outside a `use`, a path that names a module itself is no dependency
            // (`pub(in crate::x)`, a macro's own syntax).
            if (landing.names_module && !raw.in_use) || landing.module == from {
                continue;
            }
            out.push(Reference {
                from,
                to: landing.module,
                example: format!(
                    "{}:{} {}",
                    module.file.display(),
                    raw.line,
                    raw.segs.join("::")
                ),
            });
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Cycles: levelized edges, strongly connected components among each parent's children.

fn display(path: &[String]) -> String {
    std::iter::once("crate")
        .chain(path.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join("::")
}

/// An edge as it counts for cycles: between the children of the two modules' lowest common
/// ancestor. `None` between a module and its own ancestor or descendant (a parent owns them).
fn levelize<'p>(a: &'p [String], b: &'p [String]) -> Option<(&'p [String], &'p [String])> {
    let common = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    if common == a.len() || common == b.len() {
        return None;
    }
    Some((&a[..=common], &b[..=common]))
}

/// Sibling edges grouped by parent, each with its first example reference.
type Levels<'p> = BTreeMap<&'p [String], BTreeMap<(&'p [String], &'p [String]), &'p str>>;

fn cycles(krate: &str, modules: &[Module], refs: &[Reference]) -> Vec<Cycle> {
    let mut levels: Levels = BTreeMap::new();
    for r in refs {
        let (from, to) = (&modules[r.from].path, &modules[r.to].path);
        if let Some((a, b)) = levelize(from, to) {
            let parent = &a[..a.len() - 1];
            levels
                .entry(parent)
                .or_default()
                .entry((a, b))
                .or_insert(&r.example);
        }
    }
    let mut out = Vec::new();
    for edges in levels.values() {
        out.extend(sibling_cycles(krate, edges));
    }
    out.sort_by(|x, y| x.members.cmp(&y.members));
    out
}

/// The strongly connected components of more than one module among one parent's children.
fn sibling_cycles(krate: &str, edges: &BTreeMap<(&[String], &[String]), &str>) -> Vec<Cycle> {
    let mut graph = DiGraph::<&[String], ()>::new();
    let mut nodes = HashMap::new();
    for &(a, b) in edges.keys() {
        let na = *nodes.entry(a).or_insert_with(|| graph.add_node(a));
        let nb = *nodes.entry(b).or_insert_with(|| graph.add_node(b));
        graph.add_edge(na, nb, ());
    }
    let mut out = Vec::new();
    for scc in tarjan_scc(&graph).into_iter().filter(|c| c.len() > 1) {
        let inside: HashSet<&[String]> = scc.iter().map(|&n| graph[n]).collect();
        let mut members: Vec<String> = inside.iter().map(|p| display(p)).collect();
        members.sort();
        let edges = edges
            .iter()
            .filter(|((a, b), _)| inside.contains(a) && inside.contains(b))
            .map(|((a, b), ex)| format!("{} -> {}  ({ex})", display(a), display(b)))
            .collect();
        out.push(Cycle {
            krate: krate.to_string(),
            members,
            edges,
        });
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Import rules: "`a` never imports `b`, `c`" lines in ARCHITECTURE.md.

/// One rule: no reference from `subject` (or below) into any `banned` module (or below).
#[derive(Debug)]
struct Rule {
    line: usize,
    subject: Vec<String>,
    banned: Vec<Vec<String>>,
}

fn read_rules(root: &Path, rules_file: &str) -> Result<Vec<Rule>> {
    let path = root.join(rules_file);
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    parse_rules(&text, rules_file)
}

/// The bullets of the rules section (up to the next heading). Wrapped bullets continue on
/// indented lines; a bullet that does not read as a rule is an error, so a typo cannot
/// silently drop a rule; so are a missing section and an empty one.
fn parse_rules(text: &str, file: &str) -> Result<Vec<Rule>> {
    let mut lines = text.lines().enumerate();
    if !lines.any(|(_, l)| l.trim_end() == RULES_HEADING) {
        bail!("{file} has no `{RULES_HEADING}` section: the module check needs its rules");
    }
    let mut bullets: Vec<(usize, String)> = Vec::new();
    let heading = |l: &str| l.starts_with("# ") || l.starts_with("## ");
    for (n, line) in lines.take_while(|(_, l)| !heading(l)) {
        if let Some(rest) = line.strip_prefix("- ") {
            bullets.push((n + 1, rest.to_string()));
        } else if let (Some(last), true) = (bullets.last_mut(), line.starts_with(' ')) {
            last.1.push(' ');
            last.1.push_str(line.trim());
        }
    }
    if bullets.is_empty() {
        bail!("{file}: `{RULES_HEADING}` has no rule (`- `a` never imports `b`, `c``)");
    }
    bullets
        .iter()
        .map(|(n, b)| parse_rule(*n, b).with_context(|| format!("{file}:{n}: `- {b}`")))
        .collect()
}

fn parse_rule(line: usize, bullet: &str) -> Result<Rule> {
    let (left, right) = bullet
        .split_once(" never imports ")
        .context("a rule reads `- `a` never imports `b`, `c``")?;
    let subject = match quoted(left)?.as_slice() {
        [one] => one.clone(),
        _ => bail!("a rule has one module before `never imports`"),
    };
    let banned = quoted(right)?;
    if banned.is_empty() {
        bail!("no module after `never imports`");
    }
    Ok(Rule {
        line,
        subject,
        banned,
    })
}

/// The `backticked` module paths in a text (`lineage::engine` is `[lineage, engine]`).
fn quoted(text: &str) -> Result<Vec<Vec<String>>> {
    let mut out = Vec::new();
    for name in text.split('`').skip(1).step_by(2) {
        let path: Vec<String> = name.split("::").map(str::to_string).collect();
        let valid = |s: &String| {
            syn::parse_str::<Ident>(s).is_ok() && !matches!(s.as_str(), "crate" | "self" | "super")
        };
        if !path.iter().all(valid) {
            bail!("`{name}` is not a module path relative to the crate root");
        }
        out.push(path);
    }
    Ok(out)
}

/// Every reference breaking a rule, in each crate that has the rule's subject. A module a
/// rule names must exist in some crate (a renamed module would make the rule vacuous).
fn check_rules(
    rules: &[Rule],
    crates: &[&(String, Vec<Module>, Vec<Reference>)],
    file: &str,
) -> Vec<String> {
    let exists = |p: &Vec<String>| {
        crates
            .iter()
            .any(|(_, ms, _)| ms.iter().any(|m| &m.path == p))
    };
    let mut out = Vec::new();
    for rule in rules {
        if let Some(missing) = std::iter::once(&rule.subject)
            .chain(&rule.banned)
            .find(|p| !exists(p))
        {
            out.push(format!(
                "{file}:{}: no module `{}`",
                rule.line,
                missing.join("::")
            ));
            continue;
        }
        for (_, modules, refs) in crates {
            for r in refs {
                let (from, to) = (&modules[r.from].path, &modules[r.to].path);
                if let (true, Some(b)) = (
                    from.starts_with(&rule.subject),
                    rule.banned.iter().find(|b| to.starts_with(b)),
                ) {
                    out.push(format!(
                        "rule {file}:{} (`{}` never imports `{}`): {} -> {}  ({})",
                        rule.line,
                        rule.subject.join("::"),
                        b.join("::"),
                        display(from),
                        display(to),
                        r.example
                    ));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULES: &str = "# Architecture\n\n## Import rules\n\n- `b` never imports `c`\n";
    /// Kept by every test library: `c` is an empty module.
    const KEPT: &str = "## Import rules\n\n- `c` never imports `a`\n";

    /// Checks a synthetic library made of `files` (paths under `src/`), with `rules` as its
    /// ARCHITECTURE.md.
    fn analyse_with(files: &[(&str, &str)], rules: &str) -> Result<Report> {
        let dir = tempfile::tempdir()?;
        for (name, text) in files {
            let path = dir.path().join("src").join(name);
            std::fs::create_dir_all(path.parent().context("no parent")?)?;
            std::fs::write(path, text)?;
        }
        std::fs::write(dir.path().join("ARCHITECTURE.md"), rules)?;
        check(
            dir.path(),
            &[Krate::new("library", "src/lib.rs", true)],
            "ARCHITECTURE.md",
        )
    }

    /// As `analyse_with`, with a rule every test library keeps.
    fn analyse(files: &[(&str, &str)]) -> Report {
        let mut all = files.to_vec();
        if !files.iter().any(|(n, _)| *n == "c.rs") {
            all.push(("c.rs", ""));
        }
        match analyse_with(&all, KEPT) {
            Ok(report) => report,
            Err(e) => panic!("check failed: {e:#}"),
        }
    }

    fn members(report: &Report) -> Vec<Vec<String>> {
        report.cycles.iter().map(|c| c.members.clone()).collect()
    }

    const LIB_AB: &str = "mod a;\nmod b;\nmod c;\n";

    #[test]
    fn sibling_cycle_through_use_is_found() {
        let r = analyse(&[
            ("lib.rs", LIB_AB),
            ("a.rs", "use crate::b::B;\npub struct A;\n"),
            ("b.rs", "use crate::a::A;\npub struct B;\n"),
        ]);
        assert_eq!(members(&r), [["crate::a", "crate::b"]]);
        assert_eq!(
            r.cycles[0].edges,
            [
                "crate::a -> crate::b  (src/a.rs:1 crate::b::B)",
                "crate::b -> crate::a  (src/b.rs:1 crate::a::A)",
            ]
        );
    }

    #[test]
    fn sibling_cycle_through_expression_paths_is_found() {
        let r = analyse(&[
            ("lib.rs", LIB_AB),
            ("a.rs", "pub fn f() {\n    crate::b::g();\n}\n"),
            ("b.rs", "pub fn g() {\n    let _ = super::a::f;\n}\n"),
        ]);
        assert_eq!(members(&r), [["crate::a", "crate::b"]]);
        assert!(r.cycles[0].edges[0].ends_with("(src/a.rs:2 crate::b::g)"));
    }

    #[test]
    fn cycle_through_a_use_alias_and_a_macro_is_found() {
        // a reaches b only through the alias (`use crate as top` is a reference to the root, an
        // ancestor), b reaches a only inside a macro call.
        let r = analyse(&[
            ("lib.rs", LIB_AB),
            (
                "a.rs",
                "use crate as top;\npub fn f() -> top::b::B { todo!() }\n",
            ),
            (
                "b.rs",
                "pub struct B;\nfn g() { assert!(crate::a::f().is_ok()); }\n",
            ),
        ]);
        assert_eq!(members(&r), [["crate::a", "crate::b"]]);
    }

    #[test]
    fn parent_and_child_referring_to_each_other_is_no_cycle() {
        let r = analyse(&[
            ("lib.rs", "mod a;\nmod c;\n"),
            (
                "a/mod.rs",
                "mod child;\npub struct T;\npub fn f() { child::g(); }\n",
            ),
            ("a/child.rs", "pub fn g() -> super::T { super::T }\n"),
        ]);
        assert!(r.cycles.is_empty(), "{:?}", r.cycles);
        // Both references were seen: the test is not empty by accident.
        assert_eq!(r.edges, 2);
    }

    #[test]
    fn deep_references_count_between_siblings() {
        // a::x -> b::y and b::z -> a: a cycle between a and b, found only once levelized.
        let r = analyse(&[
            ("lib.rs", LIB_AB),
            ("a.rs", "mod x;\n"),
            ("a/x.rs", "fn f() { crate::b::y::g(); }\n"),
            ("b.rs", "pub mod y;\nmod z;\n"),
            ("b/y.rs", "pub fn g() {}\n"),
            ("b/z.rs", "use crate::a;\n"),
        ]);
        assert_eq!(members(&r), [["crate::a", "crate::b"]]);
    }

    #[test]
    fn cycle_through_a_re_export_is_found() {
        // `crate::X` is `b::X`: a refers to b, not to the root (which would be no cycle).
        let r = analyse(&[
            ("lib.rs", "mod a;\nmod b;\nmod c;\npub use b::X;\n"),
            ("a.rs", "pub fn f() -> crate::X { todo!() }\n"),
            (
                "b.rs",
                "mod inner;\npub use inner::X;\nfn g() { crate::a::f(); }\n",
            ),
            ("b/inner.rs", "pub struct X;\n"),
        ]);
        assert_eq!(members(&r), [["crate::a", "crate::b"]]);
    }

    #[test]
    fn cycle_through_an_inline_test_module_is_found() {
        let r = analyse(&[
            ("lib.rs", LIB_AB),
            (
                "a.rs",
                "pub fn f() {}\n#[cfg(test)]\nmod tests {\n    use super::*;\n    use crate::b::helper;\n}\n",
            ),
            ("b.rs", "pub fn helper() {}\nfn g() { crate::a::f() }\n"),
        ]);
        assert_eq!(members(&r), [["crate::a", "crate::b"]]);
        assert!(r.cycles[0].edges[0].contains("src/a.rs:5 crate::b::helper"));
    }

    #[test]
    fn inline_test_module_is_a_module_of_its_own() {
        // a::tests and a::x refer to each other: a cycle among a's children.
        let r = analyse(&[
            ("lib.rs", "mod a;\nmod c;\n"),
            (
                "a/mod.rs",
                "mod x;\n#[cfg(test)]\nmod tests {\n    pub fn helper() {}\n    fn t() { super::x::X; }\n}\n",
            ),
            ("a/x.rs", "pub struct X;\n#[cfg(test)]\nfn t() { super::tests::helper() }\n"),
        ]);
        assert_eq!(members(&r), [["crate::a::tests", "crate::a::x"]]);
    }

    #[test]
    fn glob_from_parent_and_local_names_make_no_false_edges() {
        // `x` is a local variable in a::tests, though a has a submodule `x` the glob brings in.
        let r = analyse(&[
            ("lib.rs", "mod a;\nmod c;\n"),
            ("a/mod.rs", "mod x;\n#[cfg(test)]\nmod tests {\n    use super::*;\n    fn t() { let x = 1; let _ = x; }\n}\n"),
            ("a/x.rs", "fn t() { super::tests::helper() }\n"),
        ]);
        assert!(r.cycles.is_empty(), "{:?}", r.cycles);
    }

    #[test]
    fn path_attribute_is_followed() {
        let r = analyse(&[
            (
                "lib.rs",
                "#[path = \"elsewhere/a_impl.rs\"]\nmod a;\nmod b;\nmod c;\n",
            ),
            ("elsewhere/a_impl.rs", "pub fn f() { crate::b::g() }\n"),
            ("b.rs", "pub fn g() { crate::a::f() }\n"),
        ]);
        assert_eq!(members(&r), [["crate::a", "crate::b"]]);
    }

    #[test]
    fn never_rule_violation_is_found() {
        let files = [
            ("lib.rs", LIB_AB),
            ("a.rs", "pub fn f() {}\n"),
            ("b.rs", "mod deep;\n"),
            ("b/deep.rs", "fn g() {\n    crate::c::h();\n}\n"),
            ("c.rs", "pub fn h() {}\n"),
        ];
        let r = analyse_with(&files, RULES).expect("check runs");
        assert_eq!(
            r.violations,
            ["rule ARCHITECTURE.md:5 (`b` never imports `c`): crate::b::deep -> crate::c  (src/b/deep.rs:2 crate::c::h)"]
        );
        assert_eq!(r.rules, 1);
    }

    #[test]
    fn missing_or_broken_rules_section_fails() {
        let files = [("lib.rs", "mod b;\nmod c;\n"), ("b.rs", ""), ("c.rs", "")];
        for (rules, why) in [
            (
                "# Architecture\n\nNo rules here.\n",
                "no `## Import rules` section",
            ),
            ("## Import rules\n\nProse only.\n## Next\n", "has no rule"),
            ("## Import rules\n\n- `b` imports `c`\n", "never imports"),
            (
                "## Import rules\n\n- `b` never imports `nope`\n",
                "no module `nope`",
            ),
        ] {
            let r = analyse_with(&files, rules).expect("the modules are still checked");
            assert!(
                matches!(r.violations.as_slice(), [v] if v.contains(why)),
                "{:?}",
                r.violations
            );
        }
    }

    #[test]
    fn unparsable_file_is_an_error_naming_it() {
        let err = analyse_with(&[("lib.rs", "mod a;\n"), ("a.rs", "fn f( {\n")], RULES)
            .expect_err("a.rs does not parse");
        assert!(
            format!("{err:#}").contains("cannot parse src/a.rs:1"),
            "{err:#}"
        );
    }

    /// Writes `files` (paths relative to the workspace) under a new directory.
    fn workspace(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("temp dir");
        for (name, text) in files {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
            std::fs::write(path, text).expect("write");
        }
        dir
    }

    /// A workspace whose tracer-user is clean, with `tests` files added.
    fn workspace_with_tests(tests: &[(&str, &str)]) -> Report {
        let mut files = vec![
            ("ARCHITECTURE.md", KEPT),
            ("tracer-user/src/lib.rs", "mod a;\nmod c;\n"),
            ("tracer-user/src/a.rs", "pub fn f() { crate::c::g() }\n"),
            ("tracer-user/src/c.rs", "pub fn g() {}\n"),
            ("tracer-user/src/main.rs", "fn main() {}\n"),
            ("tracer-user/tests/cli.rs", "#[test]\nfn t() {}\n"),
            ("tests/src/bin/actor.rs", "fn main() {}\n"),
        ];
        files.extend_from_slice(tests);
        let dir = workspace(&files);
        let crates = workspace_crates(dir.path()).expect("targets listed");
        check(dir.path(), &crates, "ARCHITECTURE.md").expect("check runs")
    }

    #[test]
    fn every_target_of_both_crates_is_checked() {
        let r = workspace_with_tests(&[
            ("tests/src/lib.rs", "pub mod labs;\n"),
            ("tests/src/labs/mod.rs", "pub mod pod;\n"),
            ("tests/src/labs/pod.rs", ""),
            ("tests/tests/live.rs", "#[test]\nfn t() {}\n"),
            ("tests/tests/agent/main.rs", "mod common;\n"),
            ("tests/tests/agent/common.rs", ""),
        ]);
        // library 3, binary 1, tracer-user test 1, tests 3, bin 1, live 1, agent 2.
        assert_eq!(r.modules, 12);
        assert!(r.cycles.is_empty() && r.violations.is_empty(), "{r:?}");
    }

    #[test]
    fn a_cycle_in_the_tests_library_is_reported() {
        let r = workspace_with_tests(&[
            ("tests/src/lib.rs", "pub mod labs;\n"),
            (
                "tests/src/labs/mod.rs",
                "pub mod lifecycle;\npub mod pod;\n",
            ),
            (
                "tests/src/labs/pod.rs",
                "pub fn run_pod() {}\nfn pod() { super::lifecycle::lifecycle() }\n",
            ),
            (
                "tests/src/labs/lifecycle.rs",
                "pub fn lifecycle() { super::pod::run_pod() }\n",
            ),
        ]);
        assert_eq!(
            members(&r),
            [["crate::labs::lifecycle", "crate::labs::pod"]]
        );
        assert_eq!(r.cycles[0].krate, "tests");
        assert!(r.cycles[0].edges[0].contains("tests/src/labs/lifecycle.rs:1"));
    }

    #[test]
    fn a_cycle_in_a_test_target_is_reported() {
        let r = workspace_with_tests(&[
            ("tests/src/lib.rs", ""),
            ("tests/tests/agent/main.rs", "mod nats;\nmod rights;\n"),
            (
                "tests/tests/agent/nats.rs",
                "pub fn start() { crate::rights::f() }\n",
            ),
            (
                "tests/tests/agent/rights.rs",
                "pub fn f() { crate::nats::start() }\n",
            ),
        ]);
        assert_eq!(members(&r), [["crate::nats", "crate::rights"]]);
        assert_eq!(r.cycles[0].krate, "tests test agent");
    }

    #[test]
    fn import_rules_bind_tracer_user_only() {
        // The tests crate's own `c` may import `a`: the rule is about tracer-user's `c`.
        let r = workspace_with_tests(&[
            ("tests/src/lib.rs", "mod a;\nmod c;\n"),
            ("tests/src/a.rs", "pub fn f() {}\n"),
            ("tests/src/c.rs", "fn g() { crate::a::f() }\n"),
        ]);
        assert!(r.violations.is_empty(), "{:?}", r.violations);
        // The same reference in tracer-user breaks it.
        let files = [
            ("ARCHITECTURE.md", KEPT),
            ("tracer-user/src/lib.rs", "mod a;\nmod c;\n"),
            ("tracer-user/src/a.rs", "pub fn f() {}\n"),
            ("tracer-user/src/c.rs", "fn g() { crate::a::f() }\n"),
            ("tracer-user/src/main.rs", "fn main() {}\n"),
            ("tracer-user/tests/x.rs", ""),
            ("tests/src/lib.rs", ""),
            ("tests/src/bin/x.rs", ""),
            ("tests/tests/x.rs", ""),
        ];
        let dir = workspace(&files);
        let crates = workspace_crates(dir.path()).expect("targets");
        let r = check(dir.path(), &crates, "ARCHITECTURE.md").expect("check runs");
        assert_eq!(r.violations.len(), 1, "{:?}", r.violations);
    }

    #[test]
    fn levelize_keeps_siblings_and_drops_ancestors() {
        let p = |s: &str| -> Vec<String> { s.split("::").map(str::to_string).collect() };
        let (abc, ade, ab) = (p("a::b::c"), p("a::d::e"), p("a::b"));
        assert_eq!(levelize(&abc, &ade), Some((&abc[..2], &ade[..2])));
        assert_eq!(levelize(&abc, &ab), None);
        assert_eq!(levelize(&ab, &abc), None);
    }
}
