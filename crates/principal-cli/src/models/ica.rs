//! `--model ica`: its settings, its fit's summary and its description.

use principal::{FastIca, FastIcaParams};
use serde_json::json;

use crate::models::args::{ModelArgs, Shared, json_rows};

pub(super) fn params(args: &ModelArgs, shared: Shared) -> FastIcaParams {
    FastIcaParams {
        n_components: shared.components,
        fun: args.fun.unwrap_or_default(),
        tolerance: shared.tolerance.unwrap_or(FastIcaParams::DEFAULT_TOLERANCE),
        max_iterations: shared
            .max_iterations
            .unwrap_or(FastIcaParams::DEFAULT_MAX_ITERATIONS),
        seed: shared.seed,
        initial_unmixing: None,
    }
}

pub(super) fn fit_summary(m: &FastIca) -> String {
    format!(
        "ica: fun {}, seed {}; {} step(s), last change {:.1e}{}\n",
        m.fun(),
        m.seed(),
        m.n_iter(),
        m.change(),
        if m.converged() {
            " (converged)".to_string()
        } else {
            format!(
                " (tolerance {:.1e} NOT reached: raise --max-iterations)",
                m.tolerance()
            )
        }
    )
}

pub(super) fn describe(m: &FastIca) -> serde_json::Value {
    json!({
        "n_components": m.components().nrows(),
        "n_samples": m.n_samples(),
        "fun": m.fun().name(),
        "seed": m.seed(),
        "n_iter": m.n_iter(),
        "converged": m.converged(),
        "change": m.change(),
        "tolerance": m.tolerance(),
        "mean": m.mean(),
        "components": json_rows(m.components()),
        "mixing": json_rows(m.mixing()),
    })
}
