use which::which;

/// Rebuild the probes when bpf-linker changes (it is not a cargo dependency, so cargo
/// would not notice on its own).
fn main() {
    if let Ok(linker) = which("bpf-linker") {
        println!("cargo:rerun-if-changed={}", linker.display());
    }
}
