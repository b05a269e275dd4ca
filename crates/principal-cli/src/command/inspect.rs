//! `principal inspect`: describe a model file, as a table or as one JSON object.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use principal::{Basis, PcaModel, Scaling};
use principal_io::{SavedModel, load_model};
use serde_json::{Value, json};

use crate::select::show;
use crate::text::{self, percent, sig};

#[derive(Debug, Args)]
pub struct InspectArgs {
    /// A model written by `principal fit`.
    #[arg(value_name = "MODEL")]
    pub model: PathBuf,
    /// Print one JSON object with every field of the model instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// A validated `inspect` request.
#[derive(Debug)]
pub struct InspectConfig {
    model: PathBuf,
    json: bool,
}

impl InspectConfig {
    pub fn new(args: InspectArgs) -> Self {
        InspectConfig {
            model: args.model,
            json: args.json,
        }
    }
}

pub fn run(config: &InspectConfig) -> Result<()> {
    if principal_io::model_kind(&config.model)? != principal::ModelKind::Pca {
        let saved = principal_io::load_any_model(&config.model)?;
        text::stdout(&crate::models::inspect(&saved, &config.model, config.json)?)?;
        return Ok(());
    }
    let saved = load_model(&config.model)?;
    let text = if config.json {
        let mut s = serde_json::to_string_pretty(&to_json(&saved))?;
        s.push('\n');
        s
    } else {
        table(&saved, &show(&config.model))
    };
    text::stdout(&text)
}

/// Every field of the model; floats are written so that they parse back to the same `f64`.
fn to_json(saved: &SavedModel) -> Value {
    let model = &saved.model;
    let components: Vec<Vec<f64>> = (0..model.n_components())
        .map(|i| {
            (0..model.n_features())
                .map(|j| model.components()[(i, j)])
                .collect()
        })
        .collect();
    let value = json!({
        "n_samples": model.n_samples(),
        "n_features": model.n_features(),
        "n_components": model.n_components(),
        "ddof": model.ddof(),
        "standardize": model.scaling() == Scaling::Standardize,
        "solver": model.solver().name(),
        "feature_names": saved.feature_names,
        "mean": model.mean(),
        "scale": model.scale(),
        "components": components,
        "explained_variance": model.explained_variance(),
        "explained_variance_ratio": model.explained_variance_ratio(),
        "singular_values": model.singular_values(),
        "noise_variance": model.noise_variance(),
        "total_variance": model.total_variance(),
        "zero_variance_features": model.zero_variance_features(),
        // "eigenvectors", or "rotated" by `principal align --rotate`.
        "basis": model.basis().name(),
        "format_version": principal_io::MODEL_FORMAT_VERSION,
        // Iterative solvers only: passes, a-posteriori error estimate, convergence.
        "iteration_report": model.iteration_report().map(|r| json!({
            "passes": r.passes,
            "error_estimate": r.error_estimate,
            "converged": r.converged,
        })),
        // Fits with missing values only (`fit --missing em`): counts and how EM went.
        "missing_values": model.missing_values().map(|r| json!({
            "method": "em",
            "observed": r.observed,
            "missing": r.missing,
            "empty_rows": r.empty_rows,
            "iterations": r.iterations,
            "log_likelihood": r.log_likelihood,
            "change": r.change,
            "error_estimate": r.error_estimate,
            "converged": r.converged,
        })),
    });
    value
}

fn table(saved: &SavedModel, path: &str) -> String {
    let model: &PcaModel = &saved.model;
    let mut s = String::new();
    let yes_no = |b: bool| if b { "yes" } else { "no" };
    let rows = [
        ("model", path.to_string()),
        ("n_samples", model.n_samples().to_string()),
        ("n_features", model.n_features().to_string()),
        ("n_components", model.n_components().to_string()),
        ("ddof", model.ddof().to_string()),
        (
            "standardize",
            yes_no(model.scaling() == Scaling::Standardize).to_string(),
        ),
        ("solver", model.solver().to_string()),
        ("total_variance", sig(model.total_variance(), 8)),
        ("noise_variance", sig(model.noise_variance(), 8)),
    ];
    for (key, value) in rows {
        let _ = writeln!(s, "{key:<16}{value}");
    }
    if let Some(report) = model.iteration_report() {
        let passes = format!(
            "{} passes, error estimate {:.2e}, {}",
            report.passes,
            report.error_estimate,
            if report.converged {
                "converged"
            } else {
                "NOT converged"
            }
        );
        let _ = writeln!(s, "{:<16}{passes}", "iterations");
    }
    if let Some(report) = model.missing_values() {
        let fit = format!(
            "em: {} of {} values missing, {} empty row(s) left out; {} passes, {}",
            report.missing,
            report.missing + report.observed,
            report.empty_rows,
            report.iterations,
            if report.converged {
                "converged"
            } else {
                "NOT converged"
            }
        );
        let _ = writeln!(s, "{:<16}{fit}", "missing_values");
    }
    if model.basis() == Basis::Rotated {
        let _ = writeln!(
            s,
            "{:<16}rotated to a reference (align --rotate): not eigenvectors, codes correlated; \
             explained_variance is the variance along each rotated component",
            "basis"
        );
    }
    if let Some(names) = &saved.feature_names {
        let _ = writeln!(s, "{:<16}{}", "feature_names", text::abbreviate(names, 12));
    }
    if !model.zero_variance_features().is_empty() {
        let zero: Vec<String> = model
            .zero_variance_features()
            .iter()
            .map(|&j| text::feature_name(saved.feature_names.as_deref(), j))
            .collect();
        let _ = writeln!(s, "{:<16}{}", "zero_variance", text::abbreviate(&zero, 12));
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "{:<10} {:>20} {:>10} {:>11} {:>18}",
        "component", "explained_variance", "ratio", "cumulative", "singular_value"
    );
    let cumulative = text::cumulative(model);
    for i in 0..model.n_components() {
        let _ = writeln!(
            s,
            "{:<10} {:>20} {:>10} {:>11} {:>18}",
            format!("pc{}", i + 1),
            sig(model.explained_variance()[i], 9),
            percent(model.explained_variance_ratio()[i]),
            percent(cumulative[i]),
            sig(model.singular_values()[i], 9),
        );
    }
    s
}
