#![no_main]
//! Fuzzes the reader of data.gz files (the content decides the format; the name only a text
//! file's delimiter).

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| principal_fuzz::read_data("data.gz", data));
