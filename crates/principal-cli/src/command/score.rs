//! `principal score`: the log-likelihood of every row under a model seen as probabilistic PCA.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use principal::{ChunkRef, MissingValues, Units};
use principal_io::{MatrixWriter, Missing, load_model};

use crate::args::{MemoryArgs, SelectArgs, one_of};
use crate::command::transform::missing_reading;
use crate::select::{Selection, describe, open_for_model, show};
use crate::stream::summary;
use crate::text;

#[derive(Debug, Args)]
pub struct ScoreArgs {
    /// A model written by `principal fit`.
    #[arg(value_name = "MODEL")]
    pub model: PathBuf,
    /// Data files, as for `fit`.
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,
    /// Where to write one log-likelihood per row: .csv, .tsv, .npy or .parquet (column
    /// log_likelihood). The mean goes to stderr.
    #[arg(short, long, value_name = "LL")]
    pub output: PathBuf,
    /// The units of the density of a standardized model: standardized (the model's, as
    /// scikit-learn's score_samples after a StandardScaler) or original (minus Σ log scale_j,
    /// the Jacobian of standardizing). The same for a model that only centres.
    #[arg(long, value_name = "UNITS", default_value = "standardized", value_parser = one_of::<UnitsArg>(UnitsArg::NAMES))]
    pub units: UnitsArg,
    /// Missing values (NaN, empty CSV cells, nulls) are read, not errors: a row scores the
    /// density of its observed values (a row with none scores 0).
    #[arg(long, value_name = "em", value_parser = one_of::<MissingValues>(&["em"]))]
    pub missing: Option<MissingValues>,
    #[command(flatten)]
    pub select: SelectArgs,
    #[command(flatten)]
    pub memory: MemoryArgs,
}

/// `--units`, parsed into the library's [`Units`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnitsArg(pub Units);

impl UnitsArg {
    const NAMES: &'static [&'static str] = &["standardized", "original"];
}

impl FromStr for UnitsArg {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "standardized" => Ok(UnitsArg(Units::Standardized)),
            "original" => Ok(UnitsArg(Units::Original)),
            other => Err(format!(
                "unknown units {other:?}; expected standardized or original"
            )),
        }
    }
}

impl fmt::Display for UnitsArg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.0 {
            Units::Standardized => "standardized",
            Units::Original => "original",
        })
    }
}

/// A validated `score` request.
#[derive(Debug)]
pub struct ScoreConfig {
    model: PathBuf,
    inputs: Vec<PathBuf>,
    selection: Selection,
    output: PathBuf,
    units: Units,
    missing: Missing,
    memory_limit: u64,
}

impl ScoreConfig {
    pub fn new(args: ScoreArgs) -> Self {
        ScoreConfig {
            model: args.model,
            inputs: args.inputs,
            selection: Selection::new(args.select),
            output: args.output,
            units: args.units.0,
            missing: missing_reading(args.missing),
            memory_limit: args.memory.bytes(),
        }
    }
}

/// Streams the input a chunk at a time: each chunk's log-likelihoods are appended to the
/// output; their mean is reported at the end.
pub fn run(config: &ScoreConfig) -> Result<()> {
    let started = Instant::now();
    let operation = principal::Operation::Score;
    if let Some(other) = crate::models::load_other::<ScoreArgs>(&config.model, "score", operation)?
    {
        crate::models::refuse_pca_flags::<ScoreArgs>(
            "score",
            other.model.kind(),
            &[
                ("--units original", config.units == Units::Original),
                ("--missing", config.missing != Missing::Reject),
            ],
        )?;
        let map = crate::models::RowMap::Score;
        return crate::models::map_rows(
            &other,
            &config.model,
            &config.inputs,
            &config.selection,
            &config.output,
            config.memory_limit,
            map,
        );
    }
    let saved = load_model(&config.model)?;
    let input = open_for_model(
        &config.inputs,
        &config.selection,
        &saved,
        &config.model,
        config.missing,
        1,
        config.memory_limit,
    )?;
    let model = &saved.model;
    let ppca = model.probabilistic();
    let cannot = || {
        format!(
            "cannot score {} with the model {}",
            describe(&config.inputs),
            show(&config.model)
        )
    };
    // A degenerate model is refused before anything is written.
    ppca.log_det_covariance(config.units).with_context(cannot)?;
    let names = ["log_likelihood".to_string()];
    let out = MatrixWriter::create(&config.output, 1, Some(&names))?;
    let (units, missing) = (config.units, config.missing);
    let mut total = 0.0;
    let rows = input
        .map_into(out, |chunk| {
            let scores = match (chunk, missing) {
                (ChunkRef::F32(x), Missing::Reject) => ppca.score_samples(x, units),
                (ChunkRef::F64(x), Missing::Reject) => ppca.score_samples(x, units),
                (ChunkRef::F32(x), _) => ppca.score_samples_observed(x, units),
                (ChunkRef::F64(x), _) => ppca.score_samples_observed(x, units),
            }?;
            total += scores.iter().sum::<f64>();
            Ok(principal::faer::Mat::from_fn(scores.len(), 1, |i, _| {
                scores[i]
            }))
        })
        .with_context(cannot)?;
    let units = match model.scale() {
        Some(_) => format!(" ({} units)", UnitsArg(config.units)),
        None => String::new(),
    };
    text::stderr(&format!(
        "mean log-likelihood {:.6} per row{units} over {rows} rows\n",
        total / rows.max(1) as f64
    ));
    text::stderr(&summary(
        rows,
        1,
        "log-likelihood",
        &show(&config.output),
        started,
    ));
    Ok(())
}
