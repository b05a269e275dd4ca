//! `principal merge`: combine statistics files (`principal stats`) into the model that one
//! pass over all their data would give (the covariance solver on the merged moments).

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use principal::{ComponentCount, PcaBuilder, Scaling, Solver};
use principal_io::{merge_statistics, save_model};

use crate::command::fit::{parse_components, parse_ddof, parse_variance};
use crate::select::{describe, show};
use crate::text::{self, percent};

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Statistics files written by `principal stats`, of the same features.
    #[arg(required = true, value_name = "PART")]
    pub parts: Vec<PathBuf>,
    /// Keep K components (1 ≤ K ≤ min(n_samples, n_features)).
    #[arg(short = 'k', long, value_name = "K", value_parser = parse_components, conflicts_with = "variance", allow_negative_numbers = true)]
    pub components: Option<usize>,
    /// Keep the fewest components that explain at least this fraction F of the variance (0 < F ≤ 1).
    #[arg(long, value_name = "F", value_parser = parse_variance, allow_negative_numbers = true)]
    pub variance: Option<f64>,
    /// Delta degrees of freedom: covariance = Xcᵀ Xc / (N − ddof).
    #[arg(long, value_name = "0|1", default_value = "1", value_parser = parse_ddof, allow_negative_numbers = true)]
    pub ddof: usize,
    /// Where to write the model (safetensors; any extension).
    #[arg(short, long, value_name = "MODEL")]
    pub output: PathBuf,
}

/// A validated `merge` request.
#[derive(Debug)]
pub struct MergeConfig {
    parts: Vec<PathBuf>,
    components: ComponentCount,
    ddof: usize,
    output: PathBuf,
}

impl MergeConfig {
    pub fn new(args: MergeArgs) -> Self {
        let components = match (args.components, args.variance) {
            (Some(k), _) => ComponentCount::Fixed(k),
            (None, Some(f)) => ComponentCount::VarianceFraction(f),
            (None, None) => ComponentCount::All,
        };
        MergeConfig {
            parts: args.parts,
            components,
            ddof: args.ddof,
            output: args.output,
        }
    }
}

pub fn run(config: &MergeConfig) -> Result<()> {
    let started = Instant::now();
    let merged = merge_statistics(&config.parts)?;
    let params = PcaBuilder::new()
        .components(config.components)
        .scaling(merged.scaling)
        .ddof(config.ddof)
        .solver(Solver::Covariance)
        .build()?;
    let model = params
        .fit_moments(&merged.moments)
        .with_context(|| format!("cannot fit the statistics {}", describe(&config.parts)))?;
    save_model(&config.output, &model, merged.feature_names.as_deref())?;
    let ratios = model.explained_variance_ratio();
    let mut s = String::new();
    let _ = writeln!(
        s,
        "fitted {} component(s) to {} samples × {} features from {} statistics file(s)",
        model.n_components(),
        model.n_samples(),
        model.n_features(),
        config.parts.len()
    );
    let _ = writeln!(
        s,
        "variance explained: {} in total",
        percent(ratios.iter().sum())
    );
    let standardized = if merged.scaling == Scaling::Standardize {
        ", standardized"
    } else {
        ""
    };
    let _ = writeln!(
        s,
        "settings: ddof {}{standardized}; solver: covariance; time: {}",
        model.ddof(),
        text::duration(started.elapsed())
    );
    let _ = writeln!(s, "model written to {}", show(&config.output));
    text::stderr(&s);
    Ok(())
}
