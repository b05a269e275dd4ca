#![no_main]
//! Fuzzes the statistics-file reader (safetensors with principal's moments).

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| principal_fuzz::read_statistics(data));
