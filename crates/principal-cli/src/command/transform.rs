//! `principal transform`: project data onto a saved model's components.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use principal::{ChunkRef, Collective, PcaError};
use principal_io::{load_model, ChunkReader, MatrixWriter, Part, ReadOptions, SavedModel};

use crate::cli::{MemoryArgs, SelectArgs};
use crate::select::{check_features, describe, model_read_options, show, Selection};
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
///
/// Over the ranks of an MPI job each rank transforms its part of the inputs (the parts in rank
/// order are the rows in order) into its own output file, named by rank ([`part_path`]): the
/// codes are as large as the data's M columns, so funnelling them through rank 0 would make
/// one process and one disk do all the writing. The parts appear together or not at all: a
/// rank whose part was written removes it when another rank failed.
pub fn run(config: &TransformConfig, collective: &dyn Collective) -> Result<()> {
    let started = Instant::now();
    let saved = load_model(&config.model)?;
    let options = read_options(config, &saved)?;
    let (size, rank) = (collective.size(), collective.rank());
    let output = if size > 1 {
        part_path(&config.output, rank, size)
    } else {
        config.output.clone()
    };
    let input = if size > 1 {
        let part = Part { rank, size };
        let opened = ChunkReader::open_part(&config.inputs, &options, part);
        let outcome = opened
            .as_ref()
            .map(drop)
            .map_err(|e| PcaError::Source(anyhow::Error::msg(e.to_string()).into()));
        principal::agree_outcome(collective, outcome)
            .with_context(|| format!("cannot transform {}", describe(&config.inputs)))?;
        RowStream::from_reader(opened?, saved.model.n_components(), config.memory_limit)
    } else {
        RowStream::open(
            &config.inputs,
            &options,
            saved.model.n_components(),
            config.memory_limit,
        )?
    };
    let written = write_codes(config, &saved, input, &output);
    if size == 1 {
        let rows = written?;
        text::stderr(&summary(
            rows,
            saved.model.n_components(),
            "components",
            &show(&output),
            started,
        ));
        return Ok(());
    }
    let outcome = written
        .as_ref()
        .map(drop)
        .map_err(|e| PcaError::Source(anyhow::Error::msg(format!("{e:#}")).into()));
    if let Err(e) = principal::agree_outcome(collective, outcome) {
        if written.is_ok() {
            let _ = std::fs::remove_file(&output);
        }
        return match written {
            Err(own) => Err(own),
            // The failing rank's message already says what it could not transform.
            Ok(_) => Err(e.into()),
        };
    }
    let mut rows = [written? as f64];
    collective.sum(&mut rows);
    if rank == 0 {
        let k = saved.model.n_components();
        let last = part_path(&config.output, size - 1, size);
        let place = format!("{size} parts, {} … {}", show(&output), show(&last));
        text::stderr(&summary(rows[0] as u64, k, "components", &place, started));
    }
    Ok(())
}

/// The output of rank `rank` of `size`: `codes.npy` → `codes.part-0-of-3.npy`, the rank padded
/// so that the parts sort in rank order.
pub fn part_path(output: &Path, rank: usize, size: usize) -> PathBuf {
    let width = (size - 1).to_string().len();
    let name = output
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let label = format!("part-{rank:0width$}-of-{size}");
    let renamed = match name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => format!("{stem}.{label}.{ext}"),
        _ => format!("{name}.{label}"),
    };
    output.with_file_name(renamed)
}

/// The codes of every row of `input`, written to `output`; the number of rows.
fn write_codes(
    config: &TransformConfig,
    saved: &SavedModel,
    input: RowStream,
    output: &Path,
) -> Result<u64> {
    let model = &saved.model;
    check_features(
        input.n_features(),
        model.n_features(),
        &config.inputs,
        &config.selection,
        &show(&config.model),
    )?;
    let k = model.n_components();
    let names: Vec<String> = (1..=k).map(|i| format!("pc{i}")).collect();
    let out = MatrixWriter::create(output, k, Some(&names))?;
    input
        .map_into(out, |chunk| match chunk {
            ChunkRef::F32(x) => model.transform(x),
            ChunkRef::F64(x) => model.transform(x),
        })
        .with_context(|| format!("cannot transform {}", describe(&config.inputs)))
}

/// The user's selection; or, when they gave none, the model knows its feature names and the
/// input has a header, the model's features picked by name.
fn read_options(config: &TransformConfig, saved: &SavedModel) -> Result<ReadOptions> {
    model_read_options(
        &config.inputs,
        &config.selection,
        saved.feature_names.as_deref(),
        &show(&config.model),
    )
}
