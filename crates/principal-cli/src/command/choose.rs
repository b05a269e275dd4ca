//! `principal choose`: every criterion for the number of components side by side — the number
//! each chooses and the curve it came from — from one exact fit, plus the permutations of
//! parallel analysis and the folds of cross-validation.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use principal::{
    ChoiceOutcome, ChoiceTable, ChooseOptions, ComponentChoice, Criterion, Curve, NoiseLevel,
    PcaBuilder, PcaParams, Scaling, Solver,
};
use principal_io::{Matrix, ReadOptions, read_table};
use serde_json::{Value, json};

use crate::args::{SelectArgs, one_of, parse_folds, parse_noise_sigma, parse_size};
use crate::budget;
use crate::select::{Selection, describe};
use crate::text::{self, percent, sig};
use crate::units::format_bytes;

#[derive(Debug, Args)]
pub struct ChooseArgs {
    /// Data files, as for `fit` (read into memory: parallel analysis permutes the columns).
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,
    /// The largest number of components considered: the rows of the table and the most any
    /// criterion keeps (default: min(n_samples, n_features)).
    #[arg(long, value_name = "K", value_parser = parse_max_components)]
    pub max_components: Option<usize>,
    /// Print one JSON object (every criterion, its choice and its curve) instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Divide each centred feature by its standard deviation (PCA of the correlation matrix).
    #[arg(long)]
    pub standardize: bool,
    /// Delta degrees of freedom: covariance = Xcᵀ Xc / (N − ddof).
    #[arg(long, value_name = "0|1", default_value = "1", value_parser = clap::value_parser!(u8).range(0..=1))]
    pub ddof: u8,
    /// The exact solver of the one fit (auto picks by shape).
    #[arg(long, value_name = "SOLVER", default_value = "auto", value_parser = one_of::<Solver>(&["auto", "covariance", "gram", "svd"]))]
    pub solver: Solver,
    /// Parallel analysis: how many copies of the data, each column permuted independently.
    #[arg(long, value_name = "P", default_value_t = ChooseOptions::default().permutations, value_parser = parse_permutations)]
    pub permutations: usize,
    /// Parallel analysis: the percentile of the permuted eigenvalues compared with (0 < Q < 100).
    #[arg(long, value_name = "Q", default_value_t = ChooseOptions::default().percentile, value_parser = parse_percentile)]
    pub percentile: f64,
    /// Cross-validation: the number of folds (at least 2).
    #[arg(long, value_name = "K", default_value_t = ChooseOptions::default().folds, value_parser = parse_folds)]
    pub folds: usize,
    /// Seed of the permutations and of the rows' assignment to folds.
    #[arg(long, value_name = "S", default_value_t = 0)]
    pub seed: u64,
    /// Gavish–Donoho: the noise's standard deviation per entry, if known (in standardized
    /// units with --standardize); else estimated from the median singular value.
    #[arg(long, value_name = "SIGMA", value_parser = parse_noise_sigma, allow_negative_numbers = true)]
    pub noise_sigma: Option<f64>,
    #[command(flatten)]
    pub select: SelectArgs,
    /// Working-memory budget, e.g. 300M, 2G (default: half of the machine's memory): the
    /// eigenvalues of every permutation, kept for their percentile, must fit in it (checked
    /// before the first permutation).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub memory_limit: Option<u64>,
}

fn parse_max_components(s: &str) -> Result<usize, String> {
    parse_setting("--max-components", "a whole number", s, |o, k| {
        o.max_components = Some(k)
    })
}

fn parse_permutations(s: &str) -> Result<usize, String> {
    parse_setting("--permutations", "a whole number", s, |o, p| {
        o.permutations = p
    })
}

fn parse_percentile(s: &str) -> Result<f64, String> {
    parse_setting("--percentile", "a number", s, |o, q| o.percentile = q)
}

/// The value of `flag` (`kind` says what it must be), checked by the library's own check of
/// the setting it makes (the message naming the flag).
fn parse_setting<T: std::str::FromStr + Copy>(
    flag: &str,
    kind: &str,
    s: &str,
    set: impl Fn(&mut ChooseOptions, T),
) -> Result<T, String> {
    let value: T = s.parse().map_err(|_| format!("{flag} {s} is not {kind}"))?;
    let mut options = ChooseOptions::default();
    set(&mut options, value);
    options.check().map_err(|e| crate::flags::message(&e))?;
    Ok(value)
}

/// A validated `choose` request.
#[derive(Debug)]
pub struct ChooseConfig {
    inputs: Vec<PathBuf>,
    read: ReadOptions,
    params: PcaParams,
    options: ChooseOptions,
    json: bool,
    memory_limit: u64,
}

impl ChooseConfig {
    pub fn new(args: ChooseArgs) -> Result<Self> {
        let scaling = if args.standardize {
            Scaling::Standardize
        } else {
            Scaling::Centre
        };
        let params = PcaBuilder::new()
            .scaling(scaling)
            .ddof(usize::from(args.ddof))
            .solver(args.solver)
            .build()?;
        let options = ChooseOptions {
            max_components: args.max_components,
            permutations: args.permutations,
            percentile: args.percentile,
            folds: args.folds,
            seed: args.seed,
            noise_sigma: args.noise_sigma,
        };
        options.check()?;
        Ok(ChooseConfig {
            inputs: args.inputs,
            read: Selection::new(args.select).read_options(),
            params,
            options,
            json: args.json,
            memory_limit: args
                .memory_limit
                .unwrap_or_else(budget::default_memory_limit),
        })
    }
}

pub fn run(config: &ChooseConfig) -> Result<()> {
    let started = Instant::now();
    let table = read_table(&config.inputs, &config.read)?;
    let read_time = started.elapsed();
    check_permutations(config, table.data.nrows(), table.data.ncols())?;
    let what = || {
        format!(
            "cannot choose the number of components of {}",
            describe(&config.inputs)
        )
    };
    let choices = match &table.data {
        Matrix::F32(x) => config.params.choose(x.as_ref(), &config.options),
        Matrix::F64(x) => config.params.choose(x.as_ref(), &config.options),
    }
    .with_context(what)?;
    let out = if config.json {
        let mut s = serde_json::to_string_pretty(&to_json(&choices))?;
        s.push('\n');
        s
    } else {
        tables(&choices, config, read_time)
    };
    text::stdout(&out)
}

/// Parallel analysis keeps min(N, D) eigenvalues of every permutation (twice: per permutation,
/// then per index for the percentile), 16 bytes per eigenvalue and permutation: refused before
/// the first permutation when that exceeds the budget.
fn check_permutations(config: &ChooseConfig, n: usize, d: usize) -> Result<()> {
    let permutations = config.options.permutations;
    let per_permutation = n.min(d) as u64 * 16;
    let bytes = (permutations as u64).checked_mul(per_permutation);
    let limit = config.memory_limit;
    if bytes.is_some_and(|b| b <= limit) {
        return Ok(());
    }
    let needs = bytes.map_or("more bytes than this machine can count".into(), |b| {
        format_bytes(b as f64)
    });
    anyhow::bail!(
        "--permutations {permutations}: parallel analysis keeps the {} eigenvalues of every \
         permuted copy of {} ({n} samples × {d} features), which would take {needs}, over the \
         memory limit of {} (--memory-limit); use at most {} permutations",
        n.min(d),
        describe(&config.inputs),
        format_bytes(limit as f64),
        limit / per_permutation.max(1)
    )
}

/// What a criterion compared, in a few words, for the first table.
fn how(choice: &ComponentChoice) -> String {
    let m = choice.n_components;
    let v = choice.value;
    let because = match choice.criterion {
        Criterion::VarianceFraction(_) => format!("{} explained by {m}", percent(v)),
        Criterion::Kaiser => format!("eigenvalues above the mean, {}", sig(v, 5)),
        Criterion::BrokenStick => "ratios above the broken stick's".to_string(),
        Criterion::ParallelAnalysis {
            permutations,
            percentile,
            seed,
        } => format!(
            "eigenvalues above the {percentile}th percentile of {permutations} permutations (seed {seed})"
        ),
        Criterion::Mle => format!("largest log evidence, {}", sig(v, 8)),
        Criterion::GavishDonoho(noise) => {
            let sigma = match noise {
                NoiseLevel::Known(s) => format!("σ {} given", sig(s, 5)),
                NoiseLevel::Estimated(s) => format!("σ {} estimated", sig(s, 5)),
            };
            format!("singular values above τ = {} ({sigma})", sig(v, 5))
        }
        Criterion::CrossValidation { folds, seed } => format!(
            "largest mean held-out log-likelihood, {} ({folds} folds, seed {seed})",
            sig(v, 8)
        ),
        // A criterion of a later library: its own summary.
        _ => choice.to_string(),
    };
    match choice.outcome {
        ChoiceOutcome::Chosen => because,
        ChoiceOutcome::ExactRank { rank } if rank > m => format!(
            "the centred data has rank {rank} exactly: the likelihood is unbounded there; capped at K"
        ),
        ChoiceOutcome::ExactRank { .. } => {
            "the centred data has this rank exactly: the likelihood is unbounded there".into()
        }
        ChoiceOutcome::RaisedToOne => format!("{because}; none passes, 1 kept"),
        ChoiceOutcome::Capped => format!("{because}; more would pass, capped at K"),
        ChoiceOutcome::SingleDimension => "the centred data spans one dimension".into(),
    }
}

/// The choices, then the curves row by row, then the work.
fn tables(t: &ChoiceTable, config: &ChooseConfig, read: std::time::Duration) -> String {
    let mut s = String::new();
    let standardized = if config.params.scaling() == Scaling::Standardize {
        ", standardized"
    } else {
        ""
    };
    let _ = writeln!(
        s,
        "number of components for {} samples × {} features from {} (ddof {}{standardized}; M ≤ {})",
        t.n_samples,
        t.n_features,
        describe(&config.inputs),
        config.params.ddof(),
        t.max_components
    );
    let _ = writeln!(s);
    let _ = writeln!(s, "{:<15} {:>4}  because", "criterion", "M");
    for c in &t.criteria {
        let _ = writeln!(
            s,
            "{:<15} {:>4}  {}",
            c.choice.criterion.name(),
            c.choice.n_components,
            how(&c.choice)
        );
    }
    for u in &t.unavailable {
        let flag = match u.criterion {
            Criterion::CrossValidation { .. } => " (--folds)",
            _ => "",
        };
        let _ = writeln!(
            s,
            "{:<15} {:>4}  not computed: {}{flag}",
            u.criterion.name(),
            "–",
            u.reason
        );
    }
    let _ = writeln!(s);
    // The curves: one column per curve, the threshold beside the statistic it bounds.
    let column = |name: &str| {
        t.criteria
            .iter()
            .find(|c| c.choice.criterion.name() == name)
    };
    let cumulative = column("variance 0.8").map(|c| &c.curve);
    let broken = column("broken-stick").map(|c| &c.curve);
    let parallel = column("parallel").map(|c| &c.curve);
    let mle = column("mle").map(|c| &c.curve);
    let gd = column("gavish-donoho").map(|c| &c.curve);
    let cv = column("cv").map(|c| &c.curve);
    let _ = writeln!(
        s,
        "{:>4} {:>12} {:>8} {:>10} {:>12} {:>12} {:>14} {:>12} {:>14}",
        "M",
        "eigenvalue",
        "ratio",
        "cumulative",
        "broken stick",
        "permuted",
        "log evidence",
        "singular",
        "held-out ll"
    );
    // The curve's statistic (or threshold) at row m, if it has one there.
    let value = |curve: Option<&Curve>, m: usize, threshold: bool| -> Option<f64> {
        let c = curve?;
        if threshold {
            c.threshold[m]
        } else {
            c.statistic[m]
        }
    };
    let at = |curve, m, threshold| value(curve, m, threshold).map_or("–".into(), |v| sig(v, 6));
    let pct = |curve, m, threshold| value(curve, m, threshold).map_or("–".into(), percent);
    for m in 0..t.max_components {
        let _ = writeln!(
            s,
            "{:>4} {:>12} {:>8} {:>10} {:>12} {:>12} {:>14} {:>12} {:>14}",
            m + 1,
            sig(t.eigenvalues[m], 6),
            percent(t.explained_variance_ratio[m]),
            pct(cumulative, m, false),
            pct(broken, m, true),
            at(parallel, m, true),
            at(mle, m, false),
            at(gd, m, false),
            at(cv, m, false)
        );
    }
    let _ = writeln!(
        s,
        "(broken stick: its expected ratio; permuted: the eigenvalue's percentile over the \
         permutations; singular: of the centred data, against τ above; – where undefined)"
    );
    let w = &t.work;
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "work: {} reading; {} fit and spectrum criteria ({} fit); {} parallel analysis ({} permuted spectra); {} cross-validation ({} fold fits)",
        text::duration(read),
        text::duration(w.fit_time),
        w.fits,
        text::duration(w.permutation_time),
        w.permuted_spectra,
        text::duration(w.cross_validation_time),
        w.fold_fits
    );
    s
}

/// One JSON object: the shape, the spectrum, every criterion with its choice and curve, and the
/// work. Undefined curve values are null.
fn to_json(t: &ChoiceTable) -> Value {
    let criteria: Vec<Value> = t
        .criteria
        .iter()
        .map(|c| {
            let choice = &c.choice;
            let mut entry = json!({
                "criterion": choice.criterion.name(),
                "n_components": choice.n_components,
                "value": finite(choice.value),
                "outcome": outcome_name(choice.outcome),
                "rank": match choice.outcome {
                    ChoiceOutcome::ExactRank { rank } => Some(rank),
                    _ => None,
                },
                "statistic": c.curve.statistic,
                "threshold": c.curve.threshold,
            });
            with_settings(&mut entry, choice.criterion);
            entry
        })
        .collect();
    let unavailable: Vec<Value> = t
        .unavailable
        .iter()
        .map(|u| {
            let mut entry = json!({ "criterion": u.criterion.name(), "reason": u.reason });
            with_settings(&mut entry, u.criterion);
            entry
        })
        .collect();
    let w = &t.work;
    json!({
        "n_samples": t.n_samples,
        "n_features": t.n_features,
        "max_components": t.max_components,
        "eigenvalues": t.eigenvalues,
        "explained_variance_ratio": t.explained_variance_ratio,
        "criteria": criteria,
        "unavailable": unavailable,
        "work": {
            "fits": w.fits,
            "permuted_spectra": w.permuted_spectra,
            "fold_fits": w.fold_fits,
            "fit_seconds": w.fit_time.as_secs_f64(),
            "permutation_seconds": w.permutation_time.as_secs_f64(),
            "cross_validation_seconds": w.cross_validation_time.as_secs_f64(),
        },
    })
}

/// Adds a criterion's settings (fraction, permutations, noise level, folds…) to its entry.
fn with_settings(entry: &mut Value, criterion: Criterion) {
    let settings = match criterion {
        Criterion::VarianceFraction(f) => json!({ "fraction": f }),
        Criterion::ParallelAnalysis {
            permutations,
            percentile,
            seed,
        } => json!({ "permutations": permutations, "percentile": percentile, "seed": seed }),
        Criterion::GavishDonoho(NoiseLevel::Known(s)) => {
            json!({ "noise_sigma": s, "noise_estimated": false })
        }
        Criterion::GavishDonoho(NoiseLevel::Estimated(s)) => {
            json!({ "noise_sigma": s, "noise_estimated": true })
        }
        Criterion::CrossValidation { folds, seed } => json!({ "folds": folds, "seed": seed }),
        _ => json!({}),
    };
    if let (Some(entry), Value::Object(settings)) = (entry.as_object_mut(), settings) {
        entry.extend(settings);
    }
}

fn finite(v: f64) -> Value {
    if v.is_finite() { json!(v) } else { Value::Null }
}

fn outcome_name(outcome: ChoiceOutcome) -> &'static str {
    match outcome {
        ChoiceOutcome::Chosen => "chosen",
        ChoiceOutcome::ExactRank { .. } => "exact rank",
        ChoiceOutcome::RaisedToOne => "raised to one",
        ChoiceOutcome::Capped => "capped",
        ChoiceOutcome::SingleDimension => "single dimension",
    }
}
