//! `--model kernel`: its settings, its fit's summary and its description.

use principal::{KernelPca, KernelPcaParams, PreImage};
use serde_json::json;

use crate::models::args::{ModelArgs, Shared};

pub(super) fn params(args: &ModelArgs, shared: Shared) -> KernelPcaParams {
    let defaults = KernelPcaParams::new(shared.components);
    KernelPcaParams {
        n_components: shared.components,
        kernel: args.kernel.unwrap_or_default(),
        gamma: args.gamma,
        degree: args.degree.unwrap_or(defaults.degree),
        coef0: args.coef0.unwrap_or(defaults.coef0),
        alpha: args.alpha.unwrap_or(defaults.alpha),
        pre_image: args.pre_image.unwrap_or_default(),
        memory_limit: Some(shared.memory_limit),
    }
}

pub(super) fn fit_summary(m: &KernelPca) -> String {
    let k = m.kernel();
    format!(
        "kernel PCA: kernel {} (gamma {}, degree {}, coef0 {}), {}; the model keeps the {} \
         training rows (transform needs them)\n",
        k.function,
        k.gamma,
        k.degree,
        k.coef0,
        match m.pre_image() {
            PreImage::Learn => format!("pre-image map learnt with ridge alpha {}", m.alpha()),
            PreImage::Skip => "pre-image map skipped (no inverse)".to_owned(),
        },
        m.n_samples()
    )
}

pub(super) fn describe(m: &KernelPca) -> serde_json::Value {
    let k = m.kernel();
    json!({
        "n_components": m.eigenvalues().len(),
        "n_samples": m.n_samples(),
        "kernel": k.function.name(),
        "gamma": k.gamma,
        "degree": k.degree,
        "coef0": k.coef0,
        "alpha": m.alpha(),
        "pre_image": m.pre_image().name(),
        "eigenvalues": m.eigenvalues(),
    })
}
