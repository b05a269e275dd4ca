//! `--model mixture`: its settings, its fit's summary and its description.

use principal::{MixtureOptions, MixturePpca};
use serde_json::json;

use crate::models::args::{ModelArgs, Shared, json_rows};

pub(super) fn params(args: &ModelArgs, shared: Shared) -> MixtureOptions {
    let mut options = MixtureOptions::new(args.clusters.unwrap_or(0), shared.components);
    options.seed = shared.seed;
    if let Some(restarts) = args.restarts {
        options.restarts = restarts;
    }
    if let Some(tolerance) = shared.tolerance {
        options.tolerance = tolerance;
    }
    if let Some(max) = shared.max_iterations {
        options.max_iterations = max;
    }
    options
}

pub(super) fn fit_summary(m: &MixturePpca) -> String {
    let weights: Vec<String> = m.weights().iter().map(|w| format!("{w:.4}")).collect();
    format!(
        "mixture: {} cluster(s) of {} component(s), weights {}, log-likelihood {:.6} per row; \
         the best of {} restart(s) ({:?}), EM {} step(s){}\n",
        m.n_clusters(),
        m.n_components(),
        weights.join(" "),
        m.log_likelihood(),
        m.restart_log_likelihoods().len(),
        m.restart_log_likelihoods(),
        m.iterations(),
        if m.converged() {
            ""
        } else {
            " (tolerance NOT reached)"
        }
    )
}

pub(super) fn describe(m: &MixturePpca) -> serde_json::Value {
    let clusters: Vec<serde_json::Value> = m
        .clusters()
        .iter()
        .map(|c| {
            json!({
                "mean": c.mean,
                "components": json_rows(c.components.as_ref()),
                "explained_variance": c.explained_variance,
                "noise_variance": c.noise_variance,
            })
        })
        .collect();
    json!({
        "n_clusters": m.n_clusters(),
        "n_components": m.n_components(),
        "weights": m.weights(),
        "clusters": clusters,
        "n_samples": m.n_samples(),
        "log_likelihood": m.log_likelihood(),
        "n_iter": m.iterations(),
        "converged": m.converged(),
    })
}
