//! What a test needs from the machine (root, the probes, tmux, Graphviz, setpriv): one place
//! that decides between failing and skipping. `cargo xtask setup --tests` (run by
//! `cargo xtask test`) installs every prerequisite, so a missing one fails the test, naming
//! what to install. A developer's partial
//! run may opt out explicitly with `TRACER_TEST_SKIP=tmux,root,...` (or `all`): the test then
//! returns early and says so on stderr, and in the file named by `TRACER_TEST_SKIP_LOG`
//! (`cargo xtask test` sets it and lists the skipped tests by name at the end).
//!
//! Shared source: the `tests` crate compiles it as `tests::prereq`, tracer-user's integration
//! tests include it with `#[path]` (they cannot depend on the `tests` crate).

use std::io::Write;

/// The opt-out variable: prerequisite names separated by commas, or `all`.
pub const SKIP_VAR: &str = "TRACER_TEST_SKIP";
/// Where skips are appended, one `test<TAB>prerequisite<TAB>why` line each.
pub const SKIP_LOG_VAR: &str = "TRACER_TEST_SKIP_LOG";

/// True when the test may go on: `have` is true. When it is false the test fails (panics),
/// naming `what` and `why`, unless `what` is opted out in `TRACER_TEST_SKIP`; then the skip is
/// reported and the caller must return.
#[must_use = "return from the test when it is false"]
pub fn require(what: &str, have: bool, why: &str) -> bool {
    if have {
        return true;
    }
    let opted_out = std::env::var(SKIP_VAR)
        .is_ok_and(|v| v.split(',').map(str::trim).any(|w| w == what || w == "all"));
    if !opted_out {
        panic!(
            "missing prerequisite `{what}`: {why} (`cargo xtask setup` installs it; \
             {SKIP_VAR}={what} skips this test on purpose)"
        );
    }
    let test = std::thread::current()
        .name()
        .unwrap_or("unnamed test")
        .to_string();
    // Written to file descriptor 2 itself: the test harness captures what passing tests print
    // (through std's stderr too), and a skip must be seen.
    let note = format!("SKIPPED {test}: missing `{what}` ({why}; {SKIP_VAR} opts out)\n");
    // SAFETY: writes a buffer this function owns to fd 2; a short or failed write only loses
    // the note.
    let _ = unsafe { libc::write(2, note.as_ptr().cast(), note.len()) };
    if let Some(log) = std::env::var_os(SKIP_LOG_VAR) {
        let line = format!("{test}\t{what}\t{}\n", why.replace(['\t', '\n'], " "));
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log);
        if let Ok(mut f) = file {
            let _ = f.write_all(line.as_bytes());
        }
    }
    false
}

/// The effective user is root (loading BPF programs, running container runtimes).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// `require("root", ...)`.
#[must_use = "return from the test when it is false"]
pub fn require_root() -> bool {
    require(
        "root",
        is_root(),
        "the test loads the probes: run it as root",
    )
}

/// A program found in PATH (or the sbin directories): `require(name, ...)`.
#[must_use = "return from the test when it is false"]
pub fn require_program(name: &str, package: &str) -> bool {
    let path = std::env::var("PATH").unwrap_or_default();
    let found = path
        .split(':')
        .chain(["/usr/local/sbin", "/usr/sbin", "/sbin"])
        .any(|d| std::path::Path::new(d).join(name).is_file());
    require(
        name,
        found,
        &format!("`{name}` is not installed (Debian package {package})"),
    )
}
