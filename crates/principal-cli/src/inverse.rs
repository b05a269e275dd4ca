//! `principal inverse`: reconstruct data from codes.

use std::path::PathBuf;

use anyhow::{Context, Result};
use principal_io::{load_model, read_table, write_matrix, Matrix, ReadOptions};

use crate::args::InverseArgs;
use crate::report;
use crate::select::show;

/// A validated `inverse` request.
#[derive(Debug)]
pub struct InverseConfig {
    model: PathBuf,
    codes: PathBuf,
    output: PathBuf,
}

impl InverseConfig {
    pub fn new(args: InverseArgs) -> Self {
        InverseConfig {
            model: args.model,
            codes: args.codes,
            output: args.output,
        }
    }
}

pub fn run(config: &InverseConfig) -> Result<()> {
    let saved = load_model(&config.model)?;
    let codes = read_table(std::slice::from_ref(&config.codes), &ReadOptions::default())?;
    let model = &saved.model;
    let reconstructed = match &codes.data {
        Matrix::F32(z) => model.inverse_transform(z.as_ref()),
        Matrix::F64(z) => model.inverse_transform(z.as_ref()),
    }
    .with_context(|| {
        format!(
            "cannot reconstruct from {} with the model {}",
            show(&config.codes),
            show(&config.model)
        )
    })?;
    write_matrix(
        &config.output,
        reconstructed.as_ref(),
        saved.feature_names.as_deref(),
    )?;
    report::stderr(&format!(
        "wrote {} samples × {} features to {}\n",
        reconstructed.nrows(),
        reconstructed.ncols(),
        show(&config.output)
    ));
    Ok(())
}
