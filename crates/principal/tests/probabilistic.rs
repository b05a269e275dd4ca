//! Probabilistic PCA's relations over random shapes (tall, wide, offsets of 1e6, standardized,
//! ddof 0 and 1): the training data's mean log-likelihood, C C⁻¹ = I in both units, the
//! held-out curve against models cut to each size; and the degenerate models, which are errors
//! rather than infinities.

use crate::common;

use common::{fit_with, random_matrix};
use principal::faer::Mat;
use principal::{ComponentCount, PcaError, Scaling, Solver, Units};
use proptest::prelude::*;

const LN_2PI: f64 = 1.837_877_066_409_345_5;

#[derive(Clone, Debug)]
struct Case {
    n: usize,
    d: usize,
    m: usize,
    offset: f64,
    scaling: Scaling,
    ddof: usize,
    seed: u64,
}

/// Full-rank data (σ² > 0 for every M below min(N, D)), tall or wide.
fn cases() -> impl Strategy<Value = Case> {
    let shape = prop_oneof![(12usize..50, 2usize..9), (3usize..9, 10usize..30)];
    (
        shape,
        any::<u64>(),
        prop::bool::ANY,
        prop::bool::ANY,
        0usize..2,
        1usize..30,
    )
        .prop_map(|((n, d), seed, standardize, big_offset, ddof, m)| {
            // Centring takes one dimension: below min(N − 1, D) components, σ² > 0.
            let max = (n - 1).min(d);
            Case {
                n,
                d,
                m: 1 + m % (max - 1).max(1),
                offset: if big_offset { 1e6 } else { 0.0 },
                scaling: if standardize {
                    Scaling::Standardize
                } else {
                    Scaling::Centre
                },
                ddof,
                seed,
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// On the training data, `tr(C⁻¹ S) = min(N, D)` (the maximum-likelihood σ² makes the
    /// discarded directions' share exactly their number), so the mean log-likelihood is
    /// `−½ (D ln 2π + ln|C| + min(N, D) (N − ddof)/N)`; and `C C⁻¹ = I` in both units.
    #[test]
    fn the_training_log_likelihood_has_its_closed_form(case in cases()) {
        let x = random_matrix(case.n, case.d, None, case.offset, case.seed);
        let model = fit_with(x.as_ref(), ComponentCount::Fixed(case.m), case.scaling, case.ddof, Solver::Svd).unwrap();
        prop_assume!(model.noise_variance() > 0.0);
        let ppca = model.probabilistic();
        let (n, d) = (case.n as f64, case.d as f64);
        let log_det = ppca.log_det_covariance(Units::Standardized).unwrap();
        let want = -0.5 * (d * LN_2PI + log_det + (case.n.min(case.d) as f64) * (n - case.ddof as f64) / n);
        let got = model.score(x.as_ref()).unwrap();
        // Rounding: the offset's ε·1e6 in every centred entry, relative to the data's spread.
        let tol = 1e-9 * want.abs().max(d) + 1e-6 * case.offset * f64::EPSILON * d;
        prop_assert!((got - want).abs() <= tol, "mean log-likelihood {got}, closed form {want}");
        let jacobian = model.scale().map_or(0.0, |s| s.iter().map(|v| v.ln()).sum());
        let original = ppca.score(x.as_ref(), Units::Original).unwrap();
        prop_assert!((original - (got - jacobian)).abs() <= 1e-12 * got.abs().max(1.0));
        for units in [Units::Standardized, Units::Original] {
            let c = ppca.covariance(units);
            let p = ppca.precision(units).unwrap();
            let product = &c * &p;
            let k = ppca.component_variances();
            let cond = k.iter().fold(model.noise_variance(), |a, &b| a.max(b)) / model.noise_variance();
            let spread = model.scale().map_or(1.0, |s| {
                let (lo, hi) = s.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &v| (lo.min(v), hi.max(v)));
                hi / lo
            });
            let worst = (0..case.d)
                .flat_map(|i| (0..case.d).map(move |j| (i, j)))
                .map(|(i, j)| (product[(i, j)] - if i == j { 1.0 } else { 0.0 }).abs())
                .fold(0.0, f64::max);
            prop_assert!(worst <= 1e-12 * d * cond * spread, "{units:?}: |C P − I| = {worst:e}");
        }
    }

    /// The held-out curve from one fit with K components equals, at every M, the score of the
    /// model cut to M components ([`PcaModel::truncated`]) and of a fit with M components; at
    /// M = 0, the isotropic Gaussian with the mean of the min(N, D) eigenvalues.
    #[test]
    fn the_curve_by_number_of_components_equals_separate_fits(case in cases()) {
        let x = random_matrix(case.n, case.d, None, case.offset, case.seed);
        let held_out = random_matrix(7, case.d, None, case.offset, case.seed ^ 1);
        let fit = |count| fit_with(x.as_ref(), count, case.scaling, case.ddof, Solver::Svd).unwrap();
        let all = fit(ComponentCount::All);
        let k = case.m;
        let model = all.truncated(k).unwrap();
        for units in [Units::Standardized, Units::Original] {
            let curve = model.probabilistic().score_by_component_count(held_out.as_ref(), units).unwrap();
            prop_assert_eq!(curve.len(), k + 1);
            for m in 1..=k {
                let alone = fit(ComponentCount::Fixed(m));
                let want = alone.probabilistic().score(held_out.as_ref(), units).unwrap();
                let cut = model.truncated(m).unwrap().probabilistic().score(held_out.as_ref(), units).unwrap();
                let got = curve[m].expect("σ² > 0 below the rank");
                let tol = 1e-9 * want.abs().max(1.0);
                prop_assert!((got - want).abs() <= tol, "M = {m}: curve {got}, separate fit {want}");
                prop_assert!((cut - want).abs() <= tol, "M = {m}: truncated {cut}, separate fit {want}");
            }
            // M = 0: N(μ, σ₀² I), σ₀² the mean of the min(N, D) eigenvalues.
            let rank = case.n.min(case.d);
            let sigma0 = all.explained_variance()[..rank].iter().sum::<f64>() / rank as f64;
            let xs = Mat::from_fn(held_out.nrows(), case.d, |i, j| {
                (held_out[(i, j)] - all.mean()[j]) / all.scale().map_or(1.0, |s| s[j])
            });
            let sq = (0..xs.nrows()).map(|i| xs.row(i).squared_norm_l2()).sum::<f64>() / xs.nrows() as f64;
            let jacobian = match units {
                Units::Original => all.scale().map_or(0.0, |s| s.iter().map(|v| v.ln()).sum()),
                Units::Standardized => 0.0,
            };
            let d = case.d as f64;
            let want = -0.5 * (d * LN_2PI + d * sigma0.ln() + sq / sigma0) - jacobian;
            let got = curve[0].expect("σ₀² > 0");
            prop_assert!((got - want).abs() <= 1e-9 * want.abs().max(1.0), "M = 0: {got} against {want}");
        }
    }
}

/// A model whose noise variance is 0 with directions discarded has no density: every method
/// that needs C⁻¹ says so (and why) instead of returning an infinity or a NaN; the covariance
/// itself and the posterior (a point) are still defined.
#[test]
fn a_zero_noise_variance_is_a_clear_error() {
    // Rank 2 in 5 features, with two components (every kept λ > 0) and with three (the third
    // λ is 0 to rounding); and wide data with every component kept (M = N < D, the last λ 0).
    let low_rank = random_matrix(30, 5, Some(2), 3.0, 1);
    let wide = random_matrix(4, 9, None, 0.0, 2);
    for (x, count) in [
        (&low_rank, ComponentCount::Fixed(2)),
        (&low_rank, ComponentCount::Fixed(3)),
        (&wide, ComponentCount::All),
    ] {
        let model = zero_noise_model(x, count);
        let message = |e: PcaError| {
            assert!(matches!(e, PcaError::DegenerateModel(_)), "{e:?}");
            e.to_string()
        };
        let e = message(model.score_samples(x.as_ref()).unwrap_err());
        assert!(
            e.contains("the noise variance is 0") && e.contains("singular"),
            "{e}"
        );
        message(model.score(x.as_ref()).unwrap_err());
        message(model.get_precision().unwrap_err());
        let ppca = model.probabilistic();
        message(ppca.log_det_covariance(Units::Original).unwrap_err());
        let c = model.get_covariance();
        assert!(c.col_iter().all(|col| col.iter().all(|v| v.is_finite())));
        let curve = ppca
            .score_by_component_count(x.as_ref(), Units::Standardized)
            .unwrap();
        assert!(curve.iter().all(|v| v.is_none_or(f64::is_finite)));
        assert_eq!(*curve.last().unwrap(), None, "the full model's σ² is 0");
    }
}

/// The model as fitted, whose σ² is 0 only to rounding (rank 2 in 5 features: the discarded
/// eigenvalues come out of the eigensolver as ±1e-31 or so), is as degenerate as σ² = 0
/// exactly: no log-likelihood of +70 per row from a noise variance of 1e-31.
#[test]
fn a_noise_variance_that_is_zero_to_rounding_is_degenerate_too() {
    let x = random_matrix(30, 5, Some(2), 3.0, 1);
    let model = fit_with(
        x.as_ref(),
        ComponentCount::Fixed(2),
        Scaling::Centre,
        1,
        Solver::Svd,
    )
    .unwrap();
    let noise = model.noise_variance();
    assert!(noise < 1e-20, "{noise}");
    let e = model.score_samples(x.as_ref()).unwrap_err();
    assert!(
        matches!(e, PcaError::DegenerateModel(_)),
        "σ² = {noise:e}: {e:?}"
    );
    assert!(e.to_string().contains("the noise variance is"), "{e}");
    let curve = model
        .probabilistic()
        .score_by_component_count(x.as_ref(), Units::Standardized)
        .unwrap();
    assert_eq!(curve[2], None, "σ² = {noise:e} for two components");
    assert!(curve[1].is_some_and(f64::is_finite), "{curve:?}");
}

/// The model of `x` with `count` components by the svd solver, its noise variance (0 to
/// rounding) set to exactly 0.
fn zero_noise_model(x: &Mat<f64>, count: ComponentCount) -> principal::PcaModel {
    let model = fit_with(x.as_ref(), count, Scaling::Centre, 1, Solver::Svd).unwrap();
    assert!(model.noise_variance() < 1e-20, "{}", model.noise_variance());
    principal::PcaModel::from_parts(principal::ModelParts {
        noise_variance: 0.0,
        ..model.to_parts()
    })
    .unwrap()
}

/// σ² = 0 with every kept variance positive (rank-2 data, two components): the posterior of
/// the latent point is a point, `z = Λ^{-½} Bᵀ (x − μ)` (the codes over √λ), with covariance
/// 0; the limit σ → 0 of `M⁻¹ Wᵀ (x − μ)`, `M = WᵀW + σ²I`, `W = B (Λ − σ²I)^{½}`.
#[test]
fn with_zero_noise_the_posterior_is_a_point() {
    let x = random_matrix(30, 5, Some(2), 3.0, 1);
    let model = zero_noise_model(&x, ComponentCount::Fixed(2));
    assert_eq!(model.noise_variance(), 0.0);
    let l = model.explained_variance();
    assert!(l.iter().all(|&v| v > 1e-3 * l[0]), "{l:?}");
    let posterior = model.probabilistic().posterior(x.as_ref()).unwrap();
    assert_eq!(posterior.covariance, Mat::<f64>::zeros(2, 2));
    let codes = model.transform(x.as_ref()).unwrap();
    assert_eq!(posterior.mean.nrows(), x.nrows());
    for i in 0..x.nrows() {
        for m in 0..2 {
            let want = codes[(i, m)] / l[m].sqrt();
            assert!(
                (posterior.mean[(i, m)] - want).abs() <= 1e-12 * want.abs().max(1.0),
                "row {i}, component {m}: {} against {want}",
                posterior.mean[(i, m)]
            );
        }
    }
}

/// With every component kept of full-rank data, σ² = 0 is no obstacle: C is the sample
/// covariance, its density exists, and the mean training log-likelihood has the closed form
/// with `tr(S⁻¹ S) = D`.
#[test]
fn every_component_kept_is_the_full_gaussian() {
    let x = random_matrix(40, 5, None, 0.0, 3);
    let model = fit_with(
        x.as_ref(),
        ComponentCount::All,
        Scaling::Centre,
        0,
        Solver::Svd,
    )
    .unwrap();
    assert_eq!(model.noise_variance(), 0.0);
    let log_det: f64 = model.explained_variance().iter().map(|l| l.ln()).sum();
    let want = -0.5 * (5.0 * LN_2PI + log_det + 5.0);
    let got = model.score(x.as_ref()).unwrap();
    assert!(
        (got - want).abs() <= 1e-12 * want.abs(),
        "{got} against {want}"
    );
}

/// The largest deviation of the sample mean and covariance (divisor n − 1) of `x` from the
/// model's μ and C, each in units of its standard error: `√(C_jj / n)` for a mean and, from the
/// Wishart distribution of `(n − 1) S ~ W(C, n − 1)`, `√((C_ij² + C_ii C_jj) / (n − 1))` for a
/// covariance entry.
fn largest_standardized_deviation(x: &Mat<f64>, mean: &[f64], c: &Mat<f64>) -> f64 {
    let (n, d) = (x.nrows() as f64, x.ncols());
    let sample_mean: Vec<f64> = (0..d).map(|j| x.col(j).iter().sum::<f64>() / n).collect();
    let mut worst = 0.0f64;
    for j in 0..d {
        worst = worst.max((sample_mean[j] - mean[j]).abs() / (c[(j, j)] / n).sqrt());
    }
    for i in 0..d {
        for j in 0..=i {
            let s: f64 = (0..x.nrows())
                .map(|r| (x[(r, i)] - sample_mean[i]) * (x[(r, j)] - sample_mean[j]))
                .sum::<f64>()
                / (n - 1.0);
            let se = ((c[(i, j)].powi(2) + c[(i, i)] * c[(j, j)]) / (n - 1.0)).sqrt();
            worst = worst.max((s - c[(i, j)]).abs() / se);
        }
    }
    worst
}

/// Over 100,000 draws, the sample mean and covariance are the model's μ and C (in the original
/// units) within 5 standard errors each (the Wishart spread for the covariance; at 5 standard
/// errors a single entry strays with probability 6e-7, the 14 entries of 4 features together
/// below 1e-5); a model with σ² half as large again is rejected by the same samples, so the
/// check has the power to see a wrong noise level.
#[test]
fn samples_have_the_model_mean_and_covariance() {
    let x = common::iris();
    for scaling in [Scaling::Centre, Scaling::Standardize] {
        let model = fit_with(
            x.as_ref(),
            ComponentCount::Fixed(2),
            scaling,
            1,
            Solver::Svd,
        )
        .unwrap();
        let ppca = model.probabilistic();
        let samples = ppca.sample(100_000, 42);
        let c = ppca.covariance(Units::Original);
        let worst = largest_standardized_deviation(&samples, model.mean(), &c);
        assert!(worst <= 5.0, "{scaling:?}: {worst} standard errors");
        let noisier = principal::PcaModel::from_parts(principal::ModelParts {
            noise_variance: 1.5 * model.noise_variance(),
            ..model.to_parts()
        })
        .unwrap();
        let wrong = noisier.probabilistic().covariance(Units::Original);
        let off = largest_standardized_deviation(&samples, model.mean(), &wrong);
        assert!(
            off > 5.0,
            "{scaling:?}: a wrong σ² is only {off} standard errors off"
        );
        println!("{scaling:?}: largest deviation {worst:.2} standard errors; σ² × 1.5: {off:.2}");
    }
}

/// The same seed gives the same samples, bit for bit, however many are drawn at a time; another
/// seed gives others.
#[test]
fn the_same_seed_gives_the_same_samples() {
    let model = fit_with(
        common::iris().as_ref(),
        ComponentCount::Fixed(2),
        Scaling::Standardize,
        1,
        Solver::Svd,
    )
    .unwrap();
    let ppca = model.probabilistic();
    let whole = ppca.sample(1000, 3);
    let mut sampler = ppca.sampler(3);
    let mut pieces = Vec::new();
    for rows in [1, 499, 500] {
        pieces.push(sampler.next_block(rows));
    }
    let mut start = 0;
    for piece in &pieces {
        assert_eq!(piece.as_ref(), whole.as_ref().subrows(start, piece.nrows()));
        start += piece.nrows();
    }
    assert_eq!(ppca.sample(1000, 3), whole);
    assert_ne!(ppca.sample(1000, 4), whole);
}

/// `generate(z) = W z + μ`: the reconstruction of the codes `z ⊙ √(λ − σ²)`; the latent origin
/// is the mean. A model with σ² = 0 samples only its subspace.
#[test]
fn latent_points_map_to_w_z_plus_mu() {
    let model = fit_with(
        common::iris().as_ref(),
        ComponentCount::Fixed(2),
        Scaling::Standardize,
        1,
        Solver::Svd,
    )
    .unwrap();
    let ppca = model.probabilistic();
    let z = Mat::from_fn(9, 2, |i, j| (i as f64 - 4.0) * 0.5 + j as f64);
    let x = ppca.generate(z.as_ref()).unwrap();
    let a: Vec<f64> = model
        .explained_variance()
        .iter()
        .map(|l| (l - model.noise_variance()).sqrt())
        .collect();
    let codes = Mat::from_fn(9, 2, |i, j| z[(i, j)] * a[j]);
    let want = model.inverse_transform(codes.as_ref()).unwrap();
    assert!(common::max_abs_diff(x.as_ref(), want.as_ref()) <= 1e-12 * 10.0);
    let origin = ppca.generate(Mat::<f64>::zeros(1, 2).as_ref()).unwrap();
    for j in 0..4 {
        assert!((origin[(0, j)] - model.mean()[j]).abs() <= 1e-14 * model.mean()[j].abs());
    }
    let e = ppca.generate(Mat::<f64>::zeros(1, 3).as_ref()).unwrap_err();
    assert!(
        matches!(
            e,
            PcaError::ComponentMismatch {
                expected: 2,
                found: 3
            }
        ),
        "{e:?}"
    );
    // σ² = 0 (rank 2, two components): every sample reconstructs exactly.
    let low_rank = random_matrix(30, 5, Some(2), 3.0, 1);
    let model = fit_with(
        low_rank.as_ref(),
        ComponentCount::Fixed(2),
        Scaling::Centre,
        1,
        Solver::Svd,
    )
    .unwrap();
    let model = principal::PcaModel::from_parts(principal::ModelParts {
        noise_variance: 0.0,
        ..model.to_parts()
    })
    .unwrap();
    let samples = model.probabilistic().sample(50, 1);
    assert!(model.reconstruction_error(samples.as_ref()).unwrap() <= 1e-20);
}
