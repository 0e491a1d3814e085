//! Lineage engine: turns lifecycle events into the kernel's process tree (see issue 3).
