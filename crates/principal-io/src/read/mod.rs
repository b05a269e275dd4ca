//! The leaves of the reader stack, which every format uses and which import nothing from the
//! formats: opening a file (gzip and format detection), sizes from files checked before they
//! are allocated and decoders' panics contained, how to read it (options), resolving and naming
//! columns, the row buffer decoders fill, the matrix a read gives, and the expansion of inputs
//! (directories, glob patterns) into files.

pub(crate) mod bounded;
pub(crate) mod columns;
pub(crate) mod inputs;
pub(crate) mod matrix;
pub(crate) mod open;
pub(crate) mod options;
pub(crate) mod rows;
pub(crate) mod sparse_rows;
