//! Readers and writers (in progress).
