//! `principal inverse`: reconstruct data from codes.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use principal::{ChunkRef, PcaError};
use principal_io::{MatrixWriter, ReadOptions, load_model};

use crate::args::MemoryArgs;
use crate::select::show;
use crate::stream::{RowStream, summary};
use crate::text;

#[derive(Debug, Args)]
pub struct InverseArgs {
    /// A model written by `principal fit`.
    #[arg(value_name = "MODEL")]
    pub model: PathBuf,
    /// Codes: CSV/TSV (with or without a header) or NPY, one column per component.
    #[arg(value_name = "CODES")]
    pub codes: PathBuf,
    /// Where to write the reconstruction: .csv, .tsv, .npy or .parquet.
    #[arg(short, long, value_name = "RECONSTRUCTED")]
    pub output: PathBuf,
    #[command(flatten)]
    pub memory: MemoryArgs,
}

/// A validated `inverse` request.
#[derive(Debug)]
pub struct InverseConfig {
    model: PathBuf,
    codes: PathBuf,
    output: PathBuf,
    memory_limit: u64,
}

impl InverseConfig {
    pub fn new(args: InverseArgs) -> Self {
        InverseConfig {
            model: args.model,
            codes: args.codes,
            output: args.output,
            memory_limit: args.memory.bytes(),
        }
    }
}

/// Streams the codes a chunk at a time: the reconstruction of each chunk is appended to the
/// output.
pub fn run(config: &InverseConfig) -> Result<()> {
    let started = Instant::now();
    let operation = principal::Operation::Inverse;
    if let Some(other) =
        crate::models::load_other::<InverseArgs>(&config.model, "inverse", operation)?
    {
        return crate::models::inverse(
            &other,
            &config.model,
            &config.codes,
            &config.output,
            config.memory_limit,
        );
    }
    let saved = load_model(&config.model)?;
    let model = &saved.model;
    let codes = std::slice::from_ref(&config.codes);
    let input = RowStream::open(
        codes,
        &ReadOptions::default(),
        model.n_features(),
        config.memory_limit,
    )?;
    let (found, expected) = (input.n_features(), model.n_components());
    let cannot = || {
        format!(
            "cannot reconstruct from {} with the model {}",
            show(&config.codes),
            show(&config.model)
        )
    };
    if found != expected {
        return Err(PcaError::ComponentMismatch { expected, found }).with_context(cannot);
    }
    let d = model.n_features();
    let out = MatrixWriter::create(&config.output, d, saved.feature_names.as_deref())?;
    let rows = input
        .map_into(out, |chunk| match chunk {
            ChunkRef::F32(z) => model.inverse_transform(z),
            ChunkRef::F64(z) => model.inverse_transform(z),
        })
        .with_context(cannot)?;
    text::stderr(&summary(
        rows,
        d,
        "features",
        &show(&config.output),
        started,
    ));
    Ok(())
}
