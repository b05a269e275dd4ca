//! `principal impute`: the data with its missing values filled by their conditional means
//! under a model seen as probabilistic PCA.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use principal::ChunkRef;
use principal_io::{MatrixWriter, Missing, load_model};

use crate::args::{MemoryArgs, SelectArgs};
use crate::select::{Selection, describe, open_for_model, show};
use crate::stream::summary;
use crate::text;

#[derive(Debug, Args)]
pub struct ImputeArgs {
    /// A model written by `principal fit` (any fit; `--missing em` fits one to data with
    /// holes).
    #[arg(value_name = "MODEL")]
    pub model: PathBuf,
    /// Data files with missing values (NaN, empty CSV cells, Parquet/Arrow nulls), as for `fit`.
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,
    /// Where to write the filled data: .csv, .tsv, .npy or .parquet (the model's feature
    /// names as column names, when it has them).
    #[arg(short, long, value_name = "FILLED")]
    pub output: PathBuf,
    #[command(flatten)]
    pub select: SelectArgs,
    #[command(flatten)]
    pub memory: MemoryArgs,
}

/// A validated `impute` request.
#[derive(Debug)]
pub struct ImputeConfig {
    model: PathBuf,
    inputs: Vec<PathBuf>,
    selection: Selection,
    output: PathBuf,
    memory_limit: u64,
}

impl ImputeConfig {
    pub fn new(args: ImputeArgs) -> Self {
        ImputeConfig {
            model: args.model,
            inputs: args.inputs,
            selection: Selection::new(args.select),
            output: args.output,
            memory_limit: args.memory.bytes(),
        }
    }
}

/// Streams the input a chunk at a time: each chunk, its holes filled, is appended to the
/// output.
pub fn run(config: &ImputeConfig) -> Result<()> {
    let started = Instant::now();
    let operation = principal::Operation::Impute;
    crate::models::load_other::<ImputeArgs>(&config.model, "impute", operation)?;
    let saved = load_model(&config.model)?;
    let model = &saved.model;
    let d = model.n_features();
    let input = open_for_model(
        &config.inputs,
        &config.selection,
        &saved,
        &config.model,
        Missing::AsNan,
        d,
        config.memory_limit,
    )?;
    let ppca = model.probabilistic();
    let out = MatrixWriter::create(&config.output, d, saved.feature_names.as_deref())?;
    let mut filled = 0u64;
    let mut rows_with_holes = 0u64;
    let rows = input
        .map_into(out, |chunk| {
            let (holes, rows) = count_holes(chunk);
            filled += holes;
            rows_with_holes += rows;
            match chunk {
                ChunkRef::F32(x) => ppca.impute(x),
                ChunkRef::F64(x) => ppca.impute(x),
            }
        })
        .with_context(|| {
            format!(
                "cannot fill {} with the model {}",
                describe(&config.inputs),
                show(&config.model)
            )
        })?;
    text::stderr(&format!(
        "filled {filled} missing value(s) in {rows_with_holes} of {rows} rows\n"
    ));
    text::stderr(&summary(
        rows,
        d,
        "features",
        &show(&config.output),
        started,
    ));
    Ok(())
}

/// Missing values in the chunk, and rows with at least one.
fn count_holes(chunk: ChunkRef<'_>) -> (u64, u64) {
    fn count<T: principal::Real>(x: principal::faer::MatRef<'_, T>) -> (u64, u64) {
        let mut holes = 0;
        let mut rows = 0;
        for i in 0..x.nrows() {
            let here = (0..x.ncols())
                .filter(|&j| x[(i, j)].to_f64().is_nan())
                .count() as u64;
            holes += here;
            rows += u64::from(here > 0);
        }
        (holes, rows)
    }
    match chunk {
        ChunkRef::F32(x) => count(x),
        ChunkRef::F64(x) => count(x),
    }
}
