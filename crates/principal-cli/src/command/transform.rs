//! `principal transform`: project data onto a saved model's components.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;
use principal::ChunkRef;
use principal_io::{
    load_model, ChunkReader, ColumnSelector, MatrixWriter, ReadOptions, SavedModel,
};

use crate::cli::{MemoryArgs, SelectArgs};
use crate::select::{describe, show, Selection};
use crate::stream::{summary, RowStream};
use crate::text;

#[derive(Debug, Args)]
pub struct TransformArgs {
    /// A model written by `principal fit`.
    #[arg(value_name = "MODEL")]
    pub model: PathBuf,
    /// Data files, as for `fit`.
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,
    /// Where to write the codes: .csv, .tsv, .npy or .parquet (columns named pc1..pcM).
    #[arg(short, long, value_name = "CODES")]
    pub output: PathBuf,
    #[command(flatten)]
    pub select: SelectArgs,
    #[command(flatten)]
    pub memory: MemoryArgs,
}

/// A validated `transform` request.
#[derive(Debug)]
pub struct TransformConfig {
    model: PathBuf,
    inputs: Vec<PathBuf>,
    selection: Selection,
    output: PathBuf,
    memory_limit: u64,
}

impl TransformConfig {
    pub fn new(args: TransformArgs) -> Self {
        TransformConfig {
            model: args.model,
            inputs: args.inputs,
            selection: Selection::new(args.select),
            output: args.output,
            memory_limit: args.memory.bytes(),
        }
    }
}

/// Streams the input a chunk at a time: the codes of each chunk are appended to the output.
pub fn run(config: &TransformConfig) -> Result<()> {
    let started = Instant::now();
    let saved = load_model(&config.model)?;
    let options = read_options(config, &saved)?;
    let input = RowStream::open(
        &config.inputs,
        &options,
        saved.model.n_components(),
        config.memory_limit,
    )?;
    let model = &saved.model;
    let (found, expected) = (input.n_features(), model.n_features());
    if found != expected {
        bail!(
            "{} has {found} feature column(s) but the model {} was fitted on {expected}{}",
            describe(&config.inputs),
            show(&config.model),
            if config.selection.is_explicit() {
                ""
            } else {
                "; choose columns with --columns or --exclude"
            }
        );
    }
    let k = model.n_components();
    let names: Vec<String> = (1..=k).map(|i| format!("pc{i}")).collect();
    let out = MatrixWriter::create(&config.output, k, Some(&names))?;
    let rows = input
        .map_into(out, |chunk| match chunk {
            ChunkRef::F32(x) => model.transform(x),
            ChunkRef::F64(x) => model.transform(x),
        })
        .with_context(|| format!("cannot transform {}", describe(&config.inputs)))?;
    text::stderr(&summary(
        rows,
        k,
        "components",
        &show(&config.output),
        started,
    ));
    Ok(())
}

/// The user's selection; or, when they gave none, the model knows its feature names and the
/// input has a header, the model's features picked by name.
fn read_options(config: &TransformConfig, saved: &SavedModel) -> Result<ReadOptions> {
    let options = config.selection.read_options();
    let Some(features) = saved.feature_names.as_deref() else {
        return Ok(options);
    };
    if config.selection.is_explicit() {
        return Ok(options);
    }
    let probe = ChunkReader::open(&config.inputs, &options)?;
    let Some(header) = probe.column_names() else {
        return Ok(options);
    };
    if let Some(missing) = features.iter().find(|name| !header.contains(name)) {
        bail!(
            "{} has no column named {missing:?}, a feature of the model {} (its features: {}); \
             use --columns or --exclude to choose the columns yourself",
            describe(&config.inputs),
            show(&config.model),
            features.join(", ")
        );
    }
    Ok(ReadOptions {
        columns: Some(
            features
                .iter()
                .map(|name| ColumnSelector::Name(name.clone()))
                .collect(),
        ),
        ..options
    })
}
