//! Minka's Bayesian model selection for PCA (Minka 2000, "Automatic choice of dimensionality
//! for PCA"): the Laplace approximation of the evidence p(X | k) of probabilistic PCA with k
//! components, for every k at once; scikit-learn's `n_components='mle'`.
//!
//! For the spectrum λ₁ ≥ … ≥ λ_d of N samples, with `v = Σ_{j>k} λ_j / (d − k)` and
//! `λ̂_j = λ_j` for j ≤ k, `v` beyond:
//!
//! ```text
//! log p(X | k) = −k log 2 + Σ_{i=1}^{k} [ log Γ((d − i + 1)/2) − log(π) (d − i + 1)/2 ]
//!              − (N/2) Σ_{i≤k} log λ_i − (N (d − k)/2) log v
//!              + log(2π) (m + k)/2                       m = d k − k (k + 1)/2
//!              − ½ Σ_{i≤k} Σ_{j>i} log( N (λ_i − λ_j)(1/λ̂_j − 1/λ̂_i) ) − (k/2) log N
//! ```
//!
//! the same terms as scikit-learn's `_assess_dimension`, so that the two agree wherever
//! scikit-learn's answer is defined. Where it is not, this one stays finite and sane:
//!
//! - **N ≤ D** (scikit-learn refuses N < D): the centred rows span N − 1 dimensions, and the
//!   zero eigenvalues beyond are there because N is small, not because the data is noise-free.
//!   With noise independent per entry, the transposed data is the same model with the roles
//!   swapped: D samples in the N − 1 dimensions the centred rows span. The evidence is
//!   evaluated there, d = N − 1 and n = D (the nonzero eigenvalues are the same; the evidence
//!   does not depend on their scale). Evaluated with n = N instead, it keeps nearly every
//!   component of very wide data (36 of 39 on 40×400 data of rank 2).
//! - **Exact rank** (the centred data has rank r < d, noise-free beyond r; the log(0) of
//!   scikit-learn's early versions, and its `n_components_ = 0` for data of small scale, whose
//!   eigenvalues fall under its absolute 1e-15): v → 0 at k = r and the evidence is unbounded
//!   there, so r is chosen. Zero is relative here ([`SampleSpectrum::rank`]): the evidence does
//!   not depend on the data's units, and neither does the answer.
//! - **Equal eigenvalues** (scikit-learn's "math domain error"): a cut between two equal
//!   eigenvalues defines no unique subspace, and k there is not a candidate; a pair of equal
//!   eigenvalues among the kept ones has a flat direction (any rotation of the pair fits equally
//!   well), where the Laplace approximation's curvature `N (λ_i − λ_j)(1/λ_j − 1/λ_i)` is 0:
//!   that pair's factor is left out (taken as 1) instead of dividing by zero. When every cut is
//!   between equal eigenvalues (isotropic data) one component is kept.
//!
//! Every k costs O(d) given the previous one's sums, O(d²) in all (a direct evaluation is
//! O(d³)).

use crate::choose::choice::{
    ChoiceOutcome, ComponentChoice, Criterion, Curve, SampleSpectrum, largest_of,
};
use crate::error::Result;

/// The number of components of largest evidence within `1..=max`, and the log evidence for
/// every k = 1..=max (`None` where k is not a candidate: a cut between equal eigenvalues, past
/// the span, or at an exact rank where the evidence is unbounded).
pub(crate) fn mle(spectrum: &SampleSpectrum<'_>, max: usize) -> Result<(ComponentChoice, Curve)> {
    spectrum.check_choosable("mle")?;
    let span = spectrum.span();
    let rank = spectrum.rank();
    let values = &spectrum.eigenvalues[..span];
    let tie = spectrum.rounding() / values[0];
    // Tall data: N samples in D dimensions; wide: D samples in the N − 1 the rows span.
    let samples = if spectrum.n_samples > spectrum.n_features {
        spectrum.n_samples
    } else {
        spectrum.n_features
    };
    if let Some(choice) = spectrum.exact_rank(Criterion::Mle, max) {
        // Finite below the rank; unbounded at it.
        let evidence = log_evidence(values, samples, rank - 1, tie);
        return Ok((choice, Curve::maximized(evidence).resized(max)));
    }
    let evidence = log_evidence(values, samples, span - 1, tie);
    let choice = largest_of(Criterion::Mle, &evidence, max).unwrap_or(ComponentChoice {
        criterion: Criterion::Mle,
        n_components: 1,
        value: f64::NAN,
        // Nowhere to cut: one dimension, or every eigenvalue equal.
        outcome: if span == 1 {
            ChoiceOutcome::SingleDimension
        } else {
            ChoiceOutcome::RaisedToOne
        },
    });
    Ok((choice, Curve::maximized(evidence).resized(max)))
}

/// The log evidence for k = 1..=last (`last < d`, the length of `values`, all of them positive
/// up to index `last`), `None` where the cut at k falls between eigenvalues equal to a relative
/// `tie`.
fn log_evidence(values: &[f64], n: usize, last: usize, tie: f64) -> Vec<Option<f64>> {
    let d = values.len();
    debug_assert!(last < d);
    let nf = n as f64;
    let log_n = nf.ln();
    let pi = std::f64::consts::PI;
    let tied = |a: f64, b: f64| a - b <= tie * a;
    // The gap of a pair, floored where they are equal: such pairs either fall on a cut (not a
    // candidate) or are removed again below, so the floor only keeps the sums finite.
    let log_gap = |a: f64, b: f64| (a - b).max(tie * a).max(f64::MIN_POSITIVE).ln();
    // tail[k] = Σ_{j ≥ k} λ_j, summed from the small end.
    let mut tail = vec![0.0; d + 1];
    for j in (0..d).rev() {
        tail[j] = tail[j + 1] + values[j];
    }
    let mut evidence = Vec::with_capacity(last);
    // Running sums over the kept indices i < k.
    let mut pu = 0.0;
    let mut sum_log_values = 0.0;
    // Σ_{i<k} Σ_{j>i} log(λ_i − λ_j): every pair of a kept index with a later one.
    let mut row_gaps = 0.0;
    // Σ over kept pairs i < j < k (not tied) of log(1/λ_j − 1/λ_i), and of the tied pairs'
    // log gaps, which row_gaps counted and which are taken out again.
    let mut kept_curvature = 0.0;
    let mut tied_gaps = 0.0;
    let mut tied_pairs = 0usize;
    for k in 1..=last {
        let new = k - 1;
        let lam = values[new];
        let free = (d - new) as f64;
        pu += libm::lgamma(free / 2.0) - pi.ln() * free / 2.0 - 2f64.ln();
        sum_log_values += lam.ln();
        row_gaps += (new + 1..d).map(|j| log_gap(lam, values[j])).sum::<f64>();
        for i in 0..new {
            if tied(values[i], lam) {
                tied_gaps += log_gap(values[i], lam);
                tied_pairs += 1;
            } else {
                kept_curvature += (1.0 / lam - 1.0 / values[i]).ln();
            }
        }
        if tied(lam, values[k]) {
            evidence.push(None);
            continue;
        }
        let kf = k as f64;
        let rest = (d - k) as f64;
        let v = tail[k] / rest;
        let pl = -nf / 2.0 * sum_log_values;
        let pv = -v.ln() * nf * rest / 2.0;
        let m = d as f64 * kf - kf * (kf + 1.0) / 2.0;
        let pp = (2.0 * pi).ln() * (m + kf) / 2.0;
        let to_noise: f64 = values[..k].iter().map(|&l| (1.0 / v - 1.0 / l).ln()).sum();
        let pairs = (k * d - k * (k + 1) / 2 - tied_pairs) as f64;
        let pa = row_gaps - tied_gaps + kept_curvature + rest * to_noise + pairs * log_n;
        evidence.push(Some(pu + pl + pv + pp - pa / 2.0 - kf * log_n / 2.0));
    }
    evidence
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::choose::choice::spectrum;

    /// scikit-learn's `_assess_dimension`, term by term and pair by pair: the O(d³) reference.
    fn direct(values: &[f64], k: usize, n: usize) -> f64 {
        let d = values.len();
        let (nf, pi) = (n as f64, std::f64::consts::PI);
        let mut pu = -(k as f64) * 2f64.ln();
        for i in 1..=k {
            let f = (d - i + 1) as f64;
            pu += libm::lgamma(f / 2.0) - pi.ln() * f / 2.0;
        }
        let pl = -values[..k].iter().map(|v| v.ln()).sum::<f64>() * nf / 2.0;
        let v = values[k..].iter().sum::<f64>() / (d - k) as f64;
        let pv = -v.ln() * nf * (d - k) as f64 / 2.0;
        let m = (d * k) as f64 - (k * (k + 1)) as f64 / 2.0;
        let pp = (2.0 * pi).ln() * (m + k as f64) / 2.0;
        let hat = |j: usize| if j < k { values[j] } else { v };
        let mut pa = 0.0;
        for i in 0..k {
            for j in i + 1..d {
                pa += ((values[i] - values[j]) * (1.0 / hat(j) - 1.0 / hat(i))).ln() + nf.ln();
            }
        }
        pu + pl + pv + pp - pa / 2.0 - k as f64 * nf.ln() / 2.0
    }

    #[test]
    fn the_running_sums_equal_the_direct_formula() {
        let values = [9.0, 4.5, 2.0, 1.1, 1.0, 0.9, 0.8, 0.75];
        let fast = log_evidence(&values, 40, 7, 1e-12);
        for k in 1..=7 {
            let want = direct(&values, k, 40);
            let got = fast[k - 1].unwrap();
            assert!(
                (got - want).abs() <= 1e-11 * want.abs(),
                "k {k}: {got} vs {want}"
            );
        }
    }

    #[test]
    fn equal_eigenvalues_are_never_cut_and_do_not_divide_by_zero() {
        // Two equal signal eigenvalues above two equal noise ones: scikit-learn takes log(0).
        let values = [3.0, 3.0, 1.0, 1.0];
        let (choice, curve) = mle(&spectrum(&values, 8, 4), 4).unwrap();
        assert_eq!(curve.statistic[0], None);
        assert_eq!(curve.statistic[2], None);
        assert!(curve.statistic[1].unwrap().is_finite());
        assert_eq!(
            (choice.n_components, choice.outcome),
            (2, ChoiceOutcome::Chosen)
        );
        // Isotropic: nowhere to cut.
        let flat = [2.0; 4];
        let (choice, _) = mle(&spectrum(&flat, 8, 4), 4).unwrap();
        assert_eq!(
            (choice.n_components, choice.outcome),
            (1, ChoiceOutcome::RaisedToOne)
        );
    }

    #[test]
    fn an_exact_rank_is_chosen_whatever_the_units() {
        for scale in [1e-12, 1.0, 1e12] {
            let values: Vec<f64> = [5.0, 2.0, 1e-17, 1e-18].iter().map(|v| v * scale).collect();
            let (choice, curve) = mle(&spectrum(&values, 30, 4), 4).unwrap();
            assert_eq!(
                (choice.n_components, choice.outcome),
                (2, ChoiceOutcome::ExactRank { rank: 2 }),
                "scale {scale}"
            );
            assert!(curve.statistic[0].unwrap().is_finite());
            assert_eq!(curve.statistic[1], None);
        }
    }

    #[test]
    fn the_answer_does_not_depend_on_the_units() {
        let values = [9.0, 4.5, 2.0, 1.1, 1.0, 0.9, 0.8, 0.75];
        let base = mle(&spectrum(&values, 40, 8), 8).unwrap().0;
        for scale in [1e-20, 1e-9, 1e9, 1e20] {
            let scaled: Vec<f64> = values.iter().map(|v| v * scale).collect();
            let choice = mle(&spectrum(&scaled, 40, 8), 8).unwrap().0;
            assert_eq!(choice.n_components, base.n_components, "scale {scale}");
        }
    }

    #[test]
    fn too_few_samples_or_no_variance_are_errors() {
        let one = [0.0];
        let err = mle(&spectrum(&one, 1, 3), 1).unwrap_err();
        assert!(err.to_string().contains("at least 2 samples"), "{err}");
        let constant = [0.0, 0.0];
        let err = mle(&spectrum(&constant, 10, 2), 2).unwrap_err();
        assert!(err.to_string().contains("constant"), "{err}");
    }
}
