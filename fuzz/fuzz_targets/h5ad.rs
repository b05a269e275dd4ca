#![no_main]
//! Fuzzes the AnnData `.h5ad` readers (dense and sparse `X`, a layer, `--mask-var`, the
//! `obs`/`var` names, every pass of the sparse reader) and the edit of `transform --into`.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| principal_fuzz::read_h5ad(data));
