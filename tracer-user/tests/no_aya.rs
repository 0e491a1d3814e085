//! The engine-only build (`--no-default-features`) must not pull in aya (nor aya-build, which
//! needs the BPF toolchain): consumers that only replay files build it without LLVM or root.
//! Runs in either feature set: it asks cargo about the dependency graph, not about this build.

use std::process::Command;

/// `cargo tree` of tracer-user over dependency kinds `edges` (`normal`, `normal,build`), one
/// package per line, with `features` (cargo's flags).
fn cargo_tree(edges: &str, features: &[&str]) -> String {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["tree", "--offline", "-p", "tracer-user", "-e", edges])
        .args(["--prefix", "none", "--format", "{p}", "--no-dedupe"])
        .args(features)
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Everything a build with `features` compiles, build scripts' dependencies included.
fn dependency_tree(features: &[&str]) -> String {
    cargo_tree("normal,build", features)
}

#[test]
fn engine_only_build_has_no_aya() {
    let tree = dependency_tree(&["--no-default-features"]);
    assert!(
        tree.lines().any(|l| l.starts_with("tracer-user ")),
        "{tree}"
    );
    let aya: Vec<&str> = tree.lines().filter(|l| l.contains("aya")).collect();
    assert!(aya.is_empty(), "engine-only build pulls in {aya:?}");
    assert!(!tree.contains("tracer-ebpf"), "{tree}");
}

/// The packages a build compiles (normal dependencies only: what an embedder's binary links),
/// each once.
fn packages(features: &[&str]) -> std::collections::BTreeSet<String> {
    cargo_tree("normal", features)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

#[test]
fn the_engine_alone_compiles_no_cli_viewer_runtime_or_client() {
    let engine = packages(&["--no-default-features"]);
    assert!(engine.len() <= 40, "{} packages: {engine:?}", engine.len());
    for stack in [
        "clap",
        "env_logger",
        "ratatui",
        "crossterm",
        "tokio",
        "aya",
        "async-nats",
        "prometheus",
        "hyper",
    ] {
        assert!(!engine.contains(stack), "the engine build compiles {stack}");
    }
    // Reading nats:// recordings needs the NATS client, not the probes.
    let readers = packages(&["--no-default-features", "--features", "nats"]);
    assert!(readers.contains("async-nats"), "{readers:?}");
    assert!(!readers.iter().any(|p| p.starts_with("aya")), "{readers:?}");
    // The check means something only if the full build does have them all.
    let full = packages(&[]);
    for stack in [
        "clap",
        "ratatui",
        "tokio",
        "aya",
        "async-nats",
        "prometheus",
    ] {
        assert!(full.contains(stack), "the default build lacks {stack}");
    }
}

/// The agent's loop runs over any live source: the library's `agent` feature is NATS and
/// metrics, without the probes (the rootless agent test builds without the BPF toolchain).
#[test]
fn the_agent_build_has_no_probes() {
    let tree = dependency_tree(&["--no-default-features", "--features", "agent"]);
    let aya: Vec<&str> = tree.lines().filter(|l| l.contains("aya")).collect();
    assert!(aya.is_empty(), "the agent build pulls in {aya:?}");
    assert!(!tree.contains("tracer-ebpf"), "{tree}");
    let agent = packages(&["--no-default-features", "--features", "agent"]);
    // 152 when this was written: NATS, hyper, prometheus and tokio over the engine.
    assert!(agent.len() <= 165, "{} packages: {agent:?}", agent.len());
    for stack in ["async-nats", "prometheus", "hyper", "tokio"] {
        assert!(agent.contains(stack), "the agent build lacks {stack}");
    }
}

/// Typed errors in the library: `anyhow` is compiled for the command's edge, never for the
/// engine, and the command does have it (so the check means something).
#[test]
fn only_the_edge_compiles_anyhow() {
    for features in [
        &[][..],
        &["--features", "agent"],
        &["--features", "capture"],
        &["--features", "tui"],
    ] {
        let build = packages(&[&["--no-default-features"][..], features].concat());
        assert!(!build.contains("anyhow"), "{features:?} compiles anyhow");
    }
    let cli = packages(&["--no-default-features", "--features", "cli"]);
    assert!(cli.contains("anyhow"), "{cli:?}");
}

#[test]
fn default_build_has_the_probes() {
    // The check above means something only if the default build does have aya.
    let tree = dependency_tree(&[]);
    assert!(tree.lines().any(|l| l.starts_with("aya ")), "{tree}");
}
