//! One module per command: its clap arguments (`<Name>Args`), the validated request built from
//! them before any file is read (`<Name>Config`), and `run`.

pub mod align;
pub mod choose;
pub mod classify;
pub mod describe;
pub mod fit;
pub mod impute;
pub mod inspect;
pub mod inverse;
pub mod merge;
pub mod report;
pub mod sample;
pub mod score;
pub mod stats;
pub mod transform;
