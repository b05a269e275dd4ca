//! `--model bayesian-pca`: its settings, its fit's summary and its description.

use principal::{BayesianPca, BayesianPcaOptions};
use serde_json::json;

use crate::models::args::{Shared, json_rows};

pub(super) fn params(shared: Shared) -> BayesianPcaOptions {
    let mut options = BayesianPcaOptions::new(shared.components);
    if let Some(tolerance) = shared.tolerance {
        options.tolerance = tolerance;
    }
    if let Some(max) = shared.max_iterations {
        options.max_iterations = max;
    }
    options
}

pub(super) fn fit_summary(m: &BayesianPca) -> String {
    let steps = m.iterations();
    let how = match (m.solved_directly(), m.converged()) {
        (true, true) => format!(
            "EM {steps} step(s) in the covariance's eigenbasis, then its fixed point solved \
             directly (complete rows)"
        ),
        (true, false) => format!(
            "EM {steps} step(s) in the covariance's eigenbasis; its fixed point did NOT settle"
        ),
        (false, true) => format!("EM {steps} step(s)"),
        (false, false) => format!("EM {steps} step(s) (tolerance NOT reached)"),
    };
    format!(
        "Bayesian PCA: ARD kept {} of {} component(s) (a column is switched off when ‖w‖² falls \
         below 1e-9 of the total variance), σ² {:.6}, log-likelihood {:.6} per row; {how}\n",
        m.n_components(),
        m.max_components(),
        m.noise_variance(),
        m.log_likelihood(),
    )
}

pub(super) fn describe(m: &BayesianPca) -> serde_json::Value {
    // A switched-off column's α is +∞, which JSON cannot hold: null.
    let alpha: Vec<Option<f64>> = m
        .alpha()
        .iter()
        .map(|a| a.is_finite().then_some(*a))
        .collect();
    json!({
        "n_components": m.n_components(),
        "max_components": m.max_components(),
        "alpha": alpha,
        "n_samples": m.n_samples(),
        "log_likelihood": m.log_likelihood(),
        "noise_variance": m.noise_variance(),
        "mean": m.mean(),
        "components": json_rows(m.components()),
        "n_iter": m.iterations(),
        "converged": m.converged(),
    })
}
