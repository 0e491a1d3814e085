//! What the capture gives the loop's enrichment stage ([`crate::source::enrich`]) and its
//! followed set ([`crate::source::Followed`]): this host's `/proc` (a runtime's bundle config
//! as the runtime sees it, an OOM victim's memory cgroup) and the probes' map of followed
//! processes.

use std::path::{Path, PathBuf};

use aya::maps::{HashMap as BpfHashMap, MapData};

use super::{bundle, oom, CaptureError};
use crate::event::OomInfo;
use crate::source::{Host, Mirror};

/// A host read through its proc filesystem.
#[derive(Clone, Debug)]
pub struct ProcHost {
    root: PathBuf,
}

impl ProcHost {
    /// This host: `/proc`.
    pub fn new() -> ProcHost {
        ProcHost::at(Path::new("/proc"))
    }

    /// The proc filesystem at `root` (a test's fake one).
    pub fn at(root: &Path) -> ProcHost {
        ProcHost {
            root: root.to_path_buf(),
        }
    }
}

impl Default for ProcHost {
    fn default() -> Self {
        ProcHost::new()
    }
}

impl Host for ProcHost {
    fn bundle_configs(&self, pid: u32, ppid: u32, dir: Option<&str>) -> Vec<Vec<u8>> {
        bundle::runtime_configs(&self.root, pid, ppid, dir)
    }
    fn oom_victim(&self, info: &mut OomInfo) {
        oom::enrich_at(&self.root, info)
    }
}

/// The probes' map of followed tgids, the kernel side of the capture's followed set: the
/// probes add each birth of a followed process and remove each death themselves.
pub(super) struct KernelFollowed(BpfHashMap<MapData, u32, u32>);

impl KernelFollowed {
    /// The map, taken out of the loaded probe object.
    pub(super) fn take(ebpf: &mut aya::Ebpf) -> Result<KernelFollowed, CaptureError> {
        use tracer_common::maps::FOLLOWED;
        let map = ebpf
            .take_map(FOLLOWED)
            .ok_or_else(|| CaptureError::Map(format!("{FOLLOWED} missing")))?;
        BpfHashMap::try_from(map)
            .map(KernelFollowed)
            .map_err(|e| CaptureError::Map(format!("{FOLLOWED}: {e}")))
    }
}

impl Mirror for KernelFollowed {
    type Error = CaptureError;
    fn add(&mut self, tgid: u32) -> Result<(), CaptureError> {
        use tracer_common::maps::FOLLOWED;
        self.0
            .insert(tgid, 1, 0)
            .map_err(|e| CaptureError::Map(format!("{FOLLOWED} insert: {e}")))
    }
    /// A walk of the map, one syscall per key.
    fn count(&self) -> Option<usize> {
        Some(self.0.keys().filter(|k| k.is_ok()).count())
    }
}
