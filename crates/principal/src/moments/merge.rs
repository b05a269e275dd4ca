//! Chan, Golub & LeVeque's pairwise update of a mean: the step every merge of moments takes
//! (accumulators, blocks of rows, per-feature sums).

/// One step of Chan, Golub & LeVeque's pairwise update: folds `n_b` rows of mean `mean_b` into
/// `n_a` rows of mean `mean` (updated in place). Returns `δ = μ_b − μ_a` and the weight
/// `n_a n_b / n` with which `δδᵀ` joins the merged scatter (`M = M_a + M_b + w δδᵀ`).
pub(crate) fn merge_mean(
    mean: &mut [f64],
    n_a: usize,
    mean_b: &[f64],
    n_b: usize,
) -> (Vec<f64>, f64) {
    let delta: Vec<f64> = mean_b.iter().zip(&*mean).map(|(b, a)| b - a).collect();
    if n_b == 0 {
        return (delta, 0.0);
    }
    let n = (n_a + n_b) as f64;
    let (weight, frac) = (n_a as f64 * n_b as f64 / n, n_b as f64 / n);
    for (m, dl) in mean.iter_mut().zip(&delta) {
        *m += dl * frac;
    }
    (delta, weight)
}
