//! `principal stats`: the mergeable statistics of some data (count, mean, centred
//! cross-products) to a file, for `principal merge` to combine with others into a model — the
//! way to fit data spread over machines without MPI (Slurm array jobs, Spark or Dask tasks, a
//! shell loop).

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use principal::{MomentAccumulator, Precision, Scaling};
use principal_io::{ChunkReader, Part, ReadOptions, Statistics, save_statistics};

use crate::args::{MemoryArgs, SelectArgs, one_of};
use crate::budget;
use crate::select::{Selection, describe, show};
use crate::text;

#[derive(Debug, Args)]
pub struct StatsArgs {
    /// Data files, as for `fit`.
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,
    /// Where to write the statistics (safetensors; any extension).
    #[arg(short, long, value_name = "PART")]
    pub output: PathBuf,
    /// The model these statistics are for standardizes (`merge` refuses to mix parts that
    /// differ in this).
    #[arg(long)]
    pub standardize: bool,
    /// Read only part I of N of the inputs (0 ≤ I < N), as `mpirun -n N` would give rank I:
    /// e.g. `--part $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT` in a 0-based array job.
    #[arg(long, value_name = "I/N", value_parser = parse_part)]
    pub part: Option<Part>,
    /// Products for f32 input that is not small integers, as for `fit`.
    #[arg(long, value_name = "full|mixed", default_value = "full", value_parser = one_of::<Precision>(Precision::NAMES))]
    pub precision: Precision,
    #[command(flatten)]
    pub select: SelectArgs,
    #[command(flatten)]
    pub memory: MemoryArgs,
}

/// `I/N` with `0 ≤ I < N`.
fn parse_part(s: &str) -> Result<Part, String> {
    let bad = || format!("--part {s:?} is not I/N with 0 ≤ I < N (such as 0/4)");
    let (i, n) = s.split_once('/').ok_or_else(bad)?;
    let (rank, size): (usize, usize) = (
        i.trim().parse().map_err(|_| bad())?,
        n.trim().parse().map_err(|_| bad())?,
    );
    if rank >= size {
        return Err(bad());
    }
    Ok(Part { rank, size })
}

/// A validated `stats` request.
#[derive(Debug)]
pub struct StatsConfig {
    inputs: Vec<PathBuf>,
    read: ReadOptions,
    output: PathBuf,
    scaling: Scaling,
    part: Option<Part>,
    precision: Precision,
    memory_limit: u64,
}

impl StatsConfig {
    pub fn new(args: StatsArgs) -> Self {
        StatsConfig {
            inputs: args.inputs,
            read: Selection::new(args.select).read_options(),
            output: args.output,
            scaling: if args.standardize {
                Scaling::Standardize
            } else {
                Scaling::Centre
            },
            part: args.part,
            precision: args.precision,
            memory_limit: args.memory.bytes(),
        }
    }
}

/// One pass over the inputs (or their part), chunk by chunk: memory D², whatever the rows.
pub fn run(config: &StatsConfig) -> Result<()> {
    let started = Instant::now();
    let mut reader = match config.part {
        Some(part) => ChunkReader::open_part(&config.inputs, &config.read, part)?,
        None => ChunkReader::open(&config.inputs, &config.read)?,
    };
    let d = reader.n_features();
    let names = reader.column_names().map(<[String]>::to_vec);
    let mut acc = MomentAccumulator::new(d).with_precision(config.precision);
    let rows = budget::chunk_rows(d, config.memory_limit);
    let failed = || format!("cannot compute statistics of {}", describe(&config.inputs));
    while let Some(chunk) = reader.next_chunk(rows)? {
        let pushed = match &chunk {
            principal_io::Matrix::F32(x) => acc.push(x.as_ref()),
            principal_io::Matrix::F64(x) => acc.push(x.as_ref()),
        };
        pushed.with_context(failed)?;
    }
    let moments = acc.finish().with_context(failed)?;
    let n = moments.n_samples();
    save_statistics(
        &config.output,
        &Statistics {
            moments,
            scaling: config.scaling,
            feature_names: names,
        },
    )?;
    let part = config.part.map_or(String::new(), |p| {
        format!(" (part {} of {})", p.rank, p.size)
    });
    text::stderr(&format!(
        "statistics of {n} samples × {d} features from {}{part} written to {} in {}\n",
        describe(&config.inputs),
        show(&config.output),
        text::duration(started.elapsed())
    ));
    Ok(())
}
