//! `principal fit`: read data, fit a model, save it, report what was done.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use principal::{ComponentCount, PcaBuilder, PcaModel, PcaParams, Scaling};
use principal_io::{read_table, save_model, Matrix, ReadOptions};

use crate::args::FitArgs;
use crate::report::{self, percent};
use crate::select::{describe, show, Selection};

/// How many per-component percentages the summary lists.
const SHOWN_COMPONENTS: usize = 5;

/// A validated `fit` request.
#[derive(Debug)]
pub struct FitConfig {
    inputs: Vec<PathBuf>,
    read: ReadOptions,
    params: PcaParams,
    output: PathBuf,
}

impl FitConfig {
    pub fn new(args: FitArgs) -> Result<Self> {
        let components = match (args.components, args.variance) {
            (Some(k), _) => ComponentCount::Fixed(k),
            (None, Some(f)) => ComponentCount::VarianceFraction(f),
            (None, None) => ComponentCount::All,
        };
        let scaling = if args.standardize {
            Scaling::Standardize
        } else {
            Scaling::Center
        };
        let params = PcaBuilder::new()
            .components(components)
            .scaling(scaling)
            .ddof(args.ddof)
            .solver(args.solver)
            .build()?;
        Ok(FitConfig {
            inputs: args.inputs,
            read: Selection::new(args.select).read_options(),
            params,
            output: args.output,
        })
    }
}

pub fn run(config: &FitConfig) -> Result<()> {
    let started = Instant::now();
    let table = read_table(&config.inputs, &config.read)?;
    let read_time = started.elapsed();
    let (n, d) = (table.data.nrows(), table.data.ncols());

    let fitting = Instant::now();
    let fitted = match &table.data {
        Matrix::F32(x) => config.params.fit(x.as_ref()),
        Matrix::F64(x) => config.params.fit(x.as_ref()),
    };
    let model = fitted.with_context(|| format!("cannot fit {}", describe(&config.inputs)))?;
    let fit_time = fitting.elapsed();

    let names = table.column_names.as_deref();
    save_model(&config.output, &model, names)?;

    if model.scaling() == Scaling::Standardize && !model.zero_variance_features().is_empty() {
        report::stderr(&zero_variance_warning(&model, names));
    }
    let (_, why) = config.params.resolve_solver(n, d);
    report::stderr(&summary(&model, config, &why, read_time, fit_time));
    Ok(())
}

fn zero_variance_warning(model: &PcaModel, names: Option<&[String]>) -> String {
    let zero = model.zero_variance_features();
    let listed: Vec<String> = zero
        .iter()
        .map(|&j| report::feature_name(names, j))
        .collect();
    let place = if names.is_some() {
        ""
    } else {
        " (counting the used columns from 0)"
    };
    format!(
        "warning: {} feature(s) have zero variance and keep scale 1 when standardizing{place}: {}\n",
        zero.len(),
        report::abbreviate(&listed, 20)
    )
}

fn summary(
    model: &PcaModel,
    config: &FitConfig,
    why: &str,
    read_time: std::time::Duration,
    fit_time: std::time::Duration,
) -> String {
    let m = model.n_components();
    let ratios = model.explained_variance_ratio();
    let total: f64 = ratios.iter().sum();
    let mut per: Vec<String> = ratios
        .iter()
        .take(SHOWN_COMPONENTS)
        .enumerate()
        .map(|(i, r)| format!("pc{} {}", i + 1, percent(*r)))
        .collect();
    if m > SHOWN_COMPONENTS {
        per.push("…".into());
    }
    let mut s = String::new();
    let _ = writeln!(
        s,
        "fitted {m} component(s) to {} samples × {} features from {}",
        model.n_samples(),
        model.n_features(),
        describe(&config.inputs)
    );
    let _ = writeln!(
        s,
        "variance explained: {} in total ({})",
        percent(total),
        per.join(", ")
    );
    let standardize = if model.scaling() == Scaling::Standardize {
        ", standardized"
    } else {
        ""
    };
    let _ = writeln!(s, "settings: ddof {}{standardize}", model.ddof());
    let requested = config.params.solver();
    if requested == model.solver() {
        let _ = writeln!(s, "solver: {}", model.solver());
    } else {
        let _ = writeln!(
            s,
            "solver: {} (chosen by {requested}: {why})",
            model.solver()
        );
    }
    if let Some(report) = model.iteration_report() {
        let _ = writeln!(
            s,
            "iterations: {} passes, error estimate {:.2e}{}",
            report.passes,
            report.error_estimate,
            if report.converged {
                ""
            } else {
                " (tolerance NOT reached)"
            }
        );
    }
    let _ = writeln!(
        s,
        "time: {} reading, {} fitting",
        report::duration(read_time),
        report::duration(fit_time)
    );
    let _ = writeln!(s, "model written to {}", show(&config.output));
    s
}
