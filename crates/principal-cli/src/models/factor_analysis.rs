//! `--model factor-analysis`: its settings, its fit's summary and its description.

use principal::{FactorAnalysis, FactorAnalysisParams};
use serde_json::json;

use crate::models::args::{ModelArgs, Shared, json_rows};

pub(super) fn params(args: &ModelArgs, shared: Shared) -> FactorAnalysisParams {
    FactorAnalysisParams {
        n_components: shared.components,
        rotation: args.rotation.unwrap_or_default(),
        tolerance: shared
            .tolerance
            .unwrap_or(FactorAnalysisParams::DEFAULT_TOLERANCE),
        max_iterations: shared
            .max_iterations
            .unwrap_or(FactorAnalysisParams::DEFAULT_MAX_ITERATIONS),
    }
}

pub(super) fn fit_summary(m: &FactorAnalysis) -> String {
    format!(
        "factor analysis: rotation {}, log-likelihood {:.6} per row; EM {} step(s), ψ within \
         {:.1e} of the fixed point (estimated){}\n",
        m.rotation(),
        m.log_likelihood(),
        m.n_iter(),
        m.distance(),
        if m.converged() {
            ""
        } else {
            " (tolerance NOT reached)"
        }
    )
}

pub(super) fn describe(m: &FactorAnalysis) -> serde_json::Value {
    json!({
        "n_components": m.components().nrows(),
        "n_samples": m.n_samples(),
        "rotation": m.rotation().name(),
        "log_likelihood": m.log_likelihood(),
        "noise_variance": m.noise_variance(),
        "mean": m.mean(),
        "components": json_rows(m.components()),
        "n_iter": m.n_iter(),
        "converged": m.converged(),
        "distance": m.distance(),
        "tolerance": m.tolerance(),
    })
}
