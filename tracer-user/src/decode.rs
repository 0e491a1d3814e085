//! Decoding of ring-buffer records into [`crate::Event`].
