//! Big synthetic recordings for the scale benchmarks (`cargo xtask bench --only scale`):
//! the shapes `tracer tree`, the pictures and the viewer are measured on.

use anyhow::{Context, Result};
use std::path::Path;
use tracer::synth;
use tracer::tracefile::{to_bytes, Header};

/// How the processes of a big recording hang together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// A 4-ary fork tree, each child exec'd, every third exited.
    Tree,
    /// One chain: each process forked by the one before (the deepest tree).
    Chain,
    /// One process's threads, all alive (`short_lived`: each exits before the next).
    Threads {
        /// Each thread exits before the next is made (a churning pool).
        short_lived: bool,
    },
}

/// Writes a recording of `n` processes (or threads) of `shape` to `path`; the number of
/// events written.
pub fn write(path: &Path, shape: Shape, n: u32) -> Result<usize> {
    let evs = match shape {
        Shape::Tree => synth::fork_tree(n),
        Shape::Chain => synth::chain(n),
        Shape::Threads { short_lived } => synth::many_threads(n, short_lived),
    };
    let bytes = to_bytes(&Header::default(), &evs)?;
    std::fs::write(path, bytes).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(evs.len())
}
