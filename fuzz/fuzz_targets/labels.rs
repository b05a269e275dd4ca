#![no_main]
//! Fuzzes the label-file reader (IDX labels, text, one-column NPY, Parquet, Arrow).

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| principal_fuzz::read_labels(data));
