#![no_main]
//! Fuzzes the model-file reader (safetensors with principal's metadata).

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| principal_fuzz::read_model(data));
