//! Copy-on-write containers for the engine's big tables, so that cloning an engine (a
//! viewer's seek checkpoint) costs O(chunks), not O(records): a clone shares every chunk
//! with the original, and the first write to a shared chunk copies that chunk only. Records
//! of exited processes are rarely written again, so checkpoints of one recording share
//! most of their memory.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::sync::Arc;

use super::pidmap::PidHasher;

/// Elements per chunk of a [`Chunked`]: a write to a shared chunk copies this many.
const CHUNK: usize = 256;

/// A vector in shared chunks of [`CHUNK`] elements.
#[derive(Clone, Debug)]
pub(crate) struct Chunked<T> {
    chunks: Vec<Arc<Vec<T>>>,
    len: usize,
}

impl<T> Default for Chunked<T> {
    fn default() -> Self {
        Chunked {
            chunks: Vec::new(),
            len: 0,
        }
    }
}

impl<T: Clone> Chunked<T> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn get(&self, i: usize) -> Option<&T> {
        self.chunks.get(i / CHUNK)?.get(i % CHUNK)
    }

    /// Element `i`, its chunk copied first if a clone shares it.
    pub fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        let chunk = self.chunks.get_mut(i / CHUNK)?;
        Arc::make_mut(chunk).get_mut(i % CHUNK)
    }

    pub fn push(&mut self, v: T) {
        if self.len.is_multiple_of(CHUNK) {
            self.chunks.push(Arc::new(Vec::with_capacity(CHUNK)));
        }
        if let Some(last) = self.chunks.last_mut() {
            Arc::make_mut(last).push(v);
            self.len += 1;
        }
    }

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &T> + '_ {
        self.chunks.iter().flat_map(|c| c.iter())
    }

    /// Applies `f` to the elements `pick` selects, copying only the shared chunks that hold
    /// one (a rare sweep, such as a pid namespace's zap, leaves the others shared).
    pub fn update_where(&mut self, pick: impl Fn(&T) -> bool, mut f: impl FnMut(&mut T)) {
        for chunk in &mut self.chunks {
            if chunk.iter().any(&pick) {
                Arc::make_mut(chunk)
                    .iter_mut()
                    .filter(|v| pick(v))
                    .for_each(&mut f);
            }
        }
    }

    /// Keeps the elements `keep` says to, in order (rebuilds every chunk; an element is
    /// moved, or copied only when a clone still shares its chunk).
    pub fn retain(&mut self, mut keep: impl FnMut(&T) -> bool) {
        let old = std::mem::take(self);
        for chunk in old.chunks {
            for v in Arc::unwrap_or_clone(chunk) {
                if keep(&v) {
                    self.push(v);
                }
            }
        }
    }
}

/// Pids per shard of a [`CowPidMap`]: the kernel hands out pids in increasing order, so the
/// pids a stretch of events writes fall in a few shards and a checkpoint copies only those.
const SHARD_PIDS: u32 = 4096;

type Shard<V> = HashMap<u32, V, BuildHasherDefault<PidHasher>>;

/// A pid-keyed map in shards of [`SHARD_PIDS`] consecutive pids, shared between clones.
#[derive(Clone, Debug)]
pub(crate) struct CowPidMap<V> {
    shards: HashMap<u32, Arc<Shard<V>>, BuildHasherDefault<PidHasher>>,
}

impl<V> Default for CowPidMap<V> {
    fn default() -> Self {
        CowPidMap {
            shards: HashMap::default(),
        }
    }
}

impl<V: Clone> CowPidMap<V> {
    pub fn get(&self, pid: &u32) -> Option<&V> {
        self.shards.get(&(pid / SHARD_PIDS))?.get(pid)
    }

    pub fn insert(&mut self, pid: u32, v: V) -> Option<V> {
        let shard = self.shards.entry(pid / SHARD_PIDS).or_default();
        Arc::make_mut(shard).insert(pid, v)
    }

    pub fn remove(&mut self, pid: &u32) -> Option<V> {
        let shard = self.shards.get_mut(&(pid / SHARD_PIDS))?;
        if !shard.contains_key(pid) {
            return None;
        }
        Arc::make_mut(shard).remove(pid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clone_keeps_its_values_when_the_original_is_written() {
        let mut a = Chunked::default();
        (0..1000u32).for_each(|i| a.push(i));
        let b = a.clone();
        *a.get_mut(700).unwrap() = 7;
        a.push(5);
        a.update_where(|v| *v == 3, |v| *v = 33);
        assert_eq!(
            (b.get(700), b.get(3), b.len()),
            (Some(&700), Some(&3), 1000)
        );
        assert_eq!((a.get(700), a.get(3), a.len()), (Some(&7), Some(&33), 1001));
        // Only the three written chunks were copied.
        let shared = a
            .chunks
            .iter()
            .zip(&b.chunks)
            .filter(|(x, y)| Arc::ptr_eq(x, y))
            .count();
        assert_eq!(shared, b.chunks.len() - 3);
        a.retain(|v| v % 2 == 0);
        assert_eq!(a.iter().copied().take(3).collect::<Vec<_>>(), vec![0, 2, 4]);

        let mut m = CowPidMap::default();
        (0..10_000u32).for_each(|p| {
            m.insert(p, p);
        });
        let n = m.clone();
        m.insert(5, 50);
        m.remove(&9000);
        assert_eq!((n.get(&5), n.get(&9000)), (Some(&5), Some(&9000)));
        assert_eq!((m.get(&5), m.get(&9000)), (Some(&50), None));
        assert_eq!(m.remove(&9000), None);
    }
}
