#![no_main]
//! Fuzzes the data readers with missing values read as NaN (empty CSV cells, `nan`, NaN in NPY
//! and IDX floats, Parquet and Arrow nulls); the content decides the format.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| principal_fuzz::read_data_with(
    "data.csv",
    data,
    principal_io::Missing::AsNan
));
