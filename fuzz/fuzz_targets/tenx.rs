#![no_main]
//! Fuzzes the 10x Genomics directory reader: `matrix.mtx` (genes × cells), `features.tsv` and
//! `barcodes.tsv`, split from the input at its first two NUL bytes.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| principal_fuzz::read_tenx(data));
