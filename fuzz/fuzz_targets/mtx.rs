#![no_main]
//! Fuzzes the MatrixMarket reader (sparse rows, `SparseFile`).

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| principal_fuzz::read_sparse(data));
