//! The hash map the engine and the adapter key by pid or tid.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Fx-style hasher: pids are small integers, SipHash would dominate the per-event cost.
#[derive(Default, Clone, Copy)]
pub(crate) struct PidHasher(u64);

const FX_K: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl Hasher for PidHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(FX_K);
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.0 = (self.0.rotate_left(5) ^ u64::from(n)).wrapping_mul(FX_K);
    }
    fn write_usize(&mut self, n: usize) {
        self.0 = (self.0.rotate_left(5) ^ n as u64).wrapping_mul(FX_K);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

pub(crate) type PidMap<V> = HashMap<u32, V, BuildHasherDefault<PidHasher>>;
