//! `principal merge`: combine statistics files (`principal stats`) into the model that one
//! pass over all their data would give (the covariance solver on the merged moments). The
//! merged moments give the whole spectrum, so mle and gavish-donoho choose the number of
//! components as `fit` would; cv needs the rows themselves and is refused.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use principal::{ComponentCount, PcaBuilder, Scaling, Solver};
use principal_io::{merge_statistics, save_model};

use crate::args::{check, parse_noise_sigma, usage_error};
use crate::command::fit::{parse_ddof, parse_variance};
use crate::select::{describe, show};
use crate::text::{self, percent};

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Statistics files written by `principal stats`, of the same features.
    #[arg(required = true, value_name = "PART")]
    pub parts: Vec<PathBuf>,
    /// Keep K components (1 ≤ K ≤ min(n_samples, n_features)), or let a criterion choose them
    /// from the merged spectrum: mle (Minka's Bayesian evidence) or gavish-donoho (Gavish &
    /// Donoho's threshold; --noise-sigma if the noise level is known). Not cv: the parts hold
    /// moments, not the rows that cross-validation refits.
    #[arg(short = 'k', long, value_name = "K|mle|gavish-donoho", value_parser = parse_merge_count, conflicts_with = "variance", allow_negative_numbers = true)]
    pub components: Option<ComponentCount>,
    /// With --components gavish-donoho: the noise's standard deviation per entry (in
    /// standardized units for standardized parts); without it, estimated from the median
    /// singular value.
    #[arg(long, value_name = "SIGMA", value_parser = parse_noise_sigma, requires = "components", allow_negative_numbers = true)]
    pub noise_sigma: Option<f64>,
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

/// K, mle or gavish-donoho (the library's [`ComponentCount`] and its check of K); cv is a usage
/// error that says why.
fn parse_merge_count(s: &str) -> Result<ComponentCount, String> {
    let count: ComponentCount = s.parse().map_err(|e| format!("--components {e}"))?;
    if let ComponentCount::CrossValidated { .. } = count {
        return Err(
            "--components cv is not available to merge: cross-validation refits held-out \
                    rows, and statistics files hold moments, not rows; use mle or gavish-donoho, \
                    or `principal fit --components cv` on the data itself"
                .into(),
        );
    }
    check(PcaBuilder::new().components(count))?;
    Ok(count)
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
    pub fn new(args: MergeArgs) -> Result<Self> {
        let components = match (args.components, args.variance) {
            (Some(ComponentCount::GavishDonoho { .. }), _) => ComponentCount::GavishDonoho {
                noise_sigma: args.noise_sigma,
            },
            (Some(count), _) => count,
            (None, Some(f)) => ComponentCount::VarianceFraction(f),
            (None, None) => ComponentCount::All,
        };
        if args.noise_sigma.is_some() && !matches!(components, ComponentCount::GavishDonoho { .. })
        {
            return Err(usage_error::<MergeArgs>(
                "merge",
                "--noise-sigma applies only to --components gavish-donoho".into(),
            )
            .into());
        }
        Ok(MergeConfig {
            parts: args.parts,
            components,
            ddof: args.ddof,
            output: args.output,
        })
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
    if let Some(choice) = model.component_choice() {
        let _ = writeln!(s, "components: {choice}");
    }
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
