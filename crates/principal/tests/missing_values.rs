//! Fitting with missing values (`MissingValues::Em`): with nothing missing EM reaches the exact
//! PCA; every pass keeps the likelihood from falling, and the reported one is the dense
//! Gaussian density of the observed entries; with 10% and 30% of the values missing at random
//! it recovers the complete-data subspace better than mean imputation followed by PCA; rows and
//! features that are entirely missing, infinities and NaN without `Em` are handled as
//! documented.

use crate::common;
use crate::missing_data;

use common::{fit_with, iris, random_matrix};
use missing_data::{knock_out, largest_angle_sine, low_rank_plus_noise, mean_imputed};
use principal::faer::{Mat, MatRef};
use principal::{
    ComponentCount, IterativeOptions, MissingValues, PassPoint, PcaBuilder, PcaError, PcaModel,
    Scaling, Solver,
};

fn fit_missing(
    x: MatRef<'_, f64>,
    k: usize,
    scaling: Scaling,
    tolerance: Option<f64>,
) -> Result<PcaModel, PcaError> {
    PcaBuilder::new()
        .components(ComponentCount::Fixed(k))
        .scaling(scaling)
        .missing(MissingValues::Em)
        .iterative(IterativeOptions {
            tolerance,
            max_iterations: 100_000,
            ..Default::default()
        })
        .build()?
        .fit(x)
}

/// With nothing missing, EM's fixed point is the exact PCA: the same subspace, eigenvalues and
/// σ² (N > D), mean, centred or standardized, and under an offset of 1e6.
#[test]
fn with_nothing_missing_em_is_the_exact_fit() {
    for (x, k) in [
        (iris(), 2),
        (low_rank_plus_noise(300, 12, 3, 0.5, 1), 3),
        (random_matrix(60, 7, None, 1e6, 2), 3),
    ] {
        for scaling in [Scaling::Centre, Scaling::Standardize] {
            let exact = fit_with(
                x.as_ref(),
                ComponentCount::Fixed(k),
                scaling,
                1,
                Solver::Svd,
            )
            .unwrap();
            let em = fit_missing(x.as_ref(), k, scaling, Some(1e-12)).unwrap();
            let report = em.missing_values().expect("a missing-value fit reports");
            assert_eq!(report.missing, 0);
            assert!(report.converged, "{report:?}");
            let sine = largest_angle_sine(&em, &exact).unwrap();
            let lambda = exact.explained_variance();
            let what = format!("{scaling:?}, k = {k}, {} iterations", report.iterations);
            assert!(sine <= 1e-8, "{what}: sin of the largest angle {sine:e}");
            for m in 0..k {
                let rel = (em.explained_variance()[m] - lambda[m]).abs() / lambda[0];
                assert!(rel <= 1e-10, "{what}: λ{m} off by {rel:e} of λ₁");
            }
            let rel = (em.noise_variance() - exact.noise_variance()).abs() / exact.noise_variance();
            assert!(rel <= 1e-10, "{what}: σ² off by {rel:e}");
            println!("{what}: sin θ {sine:.1e}, σ² {rel:.1e}");
            let spread = exact.total_variance().sqrt();
            for j in 0..x.ncols() {
                let s = exact.scale().map_or(1.0, |s| s[j]);
                let off = (em.mean()[j] - exact.mean()[j]).abs() / s;
                assert!(
                    off <= 1e-9 * spread + 1e-15 * exact.mean()[j].abs(),
                    "{what}: mean {j} off by {off:e}"
                );
            }
            if let (Some(a), Some(b)) = (em.scale(), exact.scale()) {
                for j in 0..x.ncols() {
                    assert!((a[j] - b[j]).abs() <= 1e-12 * b[j]);
                }
            }
        }
    }
}

/// The data the likelihood tests fit: 20% missing from rank 3 plus noise, Iris with 10%
/// missing, and little noise (σ²/λ₁ about 1e-4, where plain EM creeps and the accelerations
/// do the work) with 10% missing.
fn likelihood_cases() -> Vec<(&'static str, Mat<f64>, usize)> {
    vec![
        (
            "200×10, rank 3",
            knock_out(&low_rank_plus_noise(200, 10, 3, 0.3, 3), 0.2, 4),
            3,
        ),
        ("iris", knock_out(&iris(), 0.1, 5), 2),
        (
            "600×8, little noise",
            knock_out(&low_rank_plus_noise(600, 8, 2, 0.02, 11), 0.1, 12),
            2,
        ),
    ]
}

/// A fit with missing values stopped after `passes` passes (or at a tolerance of 1e-300,
/// which no fit meets).
fn fit_passes(x: MatRef<'_, f64>, k: usize, scaling: Scaling, passes: usize) -> PcaModel {
    PcaBuilder::new()
        .components(ComponentCount::Fixed(k))
        .scaling(scaling)
        .missing(MissingValues::Em)
        .iterative(IterativeOptions {
            tolerance: Some(1e-300),
            max_iterations: passes,
            ..Default::default()
        })
        .build()
        .unwrap()
        .fit(x)
        .unwrap()
}

/// EM's defining property, pass by pass, from the likelihood of every pass: along the
/// iteration (each EM step with its parameter expansion, and each SQUAREM extrapolation it
/// kept) the likelihood never decreases beyond rounding; an extrapolation is kept only when at
/// least as likely as the EM step it extends, and dropped when less; the likelihood rises
/// from the start; the reported likelihood is the best of the passes; and a fit stopped
/// earlier made the same passes.
#[test]
fn every_pass_keeps_the_likelihood_from_falling() {
    let (mut kept, mut dropped) = (0, 0);
    for (name, x, k) in likelihood_cases() {
        for scaling in [Scaling::Centre, Scaling::Standardize] {
            let what = format!("{name}, {scaling:?}");
            let model = fit_passes(x.as_ref(), k, scaling, 60);
            let report = model.missing_values().unwrap();
            let (history, points) = (&report.log_likelihood_history, &report.pass_points);
            assert_eq!(report.iterations, 60, "{what}");
            assert!(!report.converged, "{what}");
            assert_eq!(history.len(), 60, "{what}");
            assert_eq!(points.len(), 60, "{what}");
            assert_eq!(points[0], PassPoint::EmStep, "{what}");
            // Rounding: each row's term (‖e‖² − eᵀW z̄)/σ² is a difference of two numbers of
            // size ‖e‖²/σ², so the mean log-likelihood is known to about ε·trace(C)/σ² (the
            // ratio does not depend on units or ddof); near the optimum the passes' values
            // jitter by less than one of those (0.7 at most in these cases).
            let rounding = 4.0 * f64::EPSILON * model.total_variance() / model.noise_variance();
            // The path: every pass but the dropped extrapolations, each at least as likely as
            // the one before it on the path.
            let mut previous = f64::NEG_INFINITY;
            let mut worst_drop = 0.0f64;
            for (t, (&ll, &point)) in history.iter().zip(points).enumerate() {
                match point {
                    PassPoint::RejectedExtrapolation => {
                        // Dropped because less likely than the EM step before it.
                        assert!(ll < history[t - 1], "{what}, pass {t}: {ll} dropped");
                        assert_eq!(points[t - 1], PassPoint::EmStep, "{what}, pass {t}");
                        dropped += 1;
                        continue;
                    }
                    PassPoint::Extrapolation => {
                        assert_eq!(points[t - 1], PassPoint::EmStep, "{what}, pass {t}");
                        kept += 1;
                    }
                    PassPoint::EmStep => {}
                }
                assert!(ll.is_finite(), "{what}, pass {t}: {ll}");
                assert!(
                    ll >= previous - rounding,
                    "{what}, pass {t} ({point:?}): {previous} → {ll}, a drop of {:e} where \
                     rounding is {rounding:e}",
                    previous - ll
                );
                worst_drop = worst_drop.max(previous - ll);
                previous = ll;
            }
            println!(
                "{what}: worst drop {worst_drop:e}, {:.2} of the rounding bound",
                worst_drop / rounding
            );
            assert!(
                previous > history[0] + 1.0,
                "{what}: {} → {previous}",
                history[0]
            );
            // The reported likelihood is a pass's, the best to rounding.
            let best = history.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            assert!(history.contains(&report.log_likelihood), "{what}");
            assert!(
                report.log_likelihood >= best - rounding,
                "{what}: reported {} of best {best}",
                report.log_likelihood
            );
            // Stopped after fewer passes: the same passes, and the best of those reported.
            for passes in [1, 2, 3, 7, 20] {
                let early = fit_passes(x.as_ref(), k, scaling, passes);
                let early = early.missing_values().unwrap();
                assert_eq!(early.log_likelihood_history, history[..passes], "{what}");
                assert_eq!(early.pass_points, points[..passes], "{what}");
                let best = history[..passes]
                    .iter()
                    .copied()
                    .fold(f64::NEG_INFINITY, f64::max);
                assert!(
                    early.log_likelihood >= best - rounding,
                    "{what}, {passes} passes"
                );
            }
        }
    }
    // Both branches of the safeguard were taken.
    assert!(kept > 0 && dropped > 0, "{kept} kept, {dropped} dropped");
}

/// `log N(e; 0, C)` for `e` (length n) by a dense Cholesky factor of the n×n `c`.
fn dense_log_density(c: Mat<f64>, e: &[f64]) -> f64 {
    use principal::faer::linalg::solvers::Solve;
    let n = e.len();
    let llt = c
        .llt(principal::faer::Side::Lower)
        .expect("C is positive definite");
    let e = Mat::from_fn(n, 1, |p, _| e[p]);
    let solved = llt.solve(&e);
    let log_det: f64 = (0..n).map(|p| 2.0 * llt.L()[(p, p)].ln()).sum();
    let quad: f64 = (0..n).map(|p| e[(p, 0)] * solved[(p, 0)]).sum();
    -0.5 * (n as f64 * 1.837_877_066_409_345_5 + log_det + quad)
}

/// The reported log-likelihood is the mean over the rows (with a value) of the Gaussian
/// density of each row's observed entries under the fitted model, computed here densely:
/// `C = W Wᵀ + σ² I = Σ_m (λ_m − σ²) u_m u_mᵀ + σ² I` with the model's components u, variances
/// λ and σ² (divisor N, as EM maximises the likelihood: the model's are multiplied back by
/// (N − ddof)/N), restricted to the observed features, in the model's units (standardized
/// ones when standardizing). Converged fits and fits stopped early; ddof 0 and 1.
#[test]
fn the_reported_likelihood_is_the_dense_density_of_the_observed_entries() {
    for (name, mut x, k) in likelihood_cases() {
        // A row with nothing observed is left out of the fit and of the mean.
        for j in 0..x.ncols() {
            x[(5, j)] = f64::NAN;
        }
        for (scaling, ddof, passes) in [
            (Scaling::Centre, 1, 100_000),
            (Scaling::Standardize, 1, 100_000),
            (Scaling::Centre, 0, 5),
            (Scaling::Standardize, 0, 100_000),
        ] {
            let what = format!("{name}, {scaling:?}, ddof {ddof}, {passes} passes");
            let model = PcaBuilder::new()
                .components(ComponentCount::Fixed(k))
                .scaling(scaling)
                .ddof(ddof)
                .missing(MissingValues::Em)
                .iterative(IterativeOptions {
                    max_iterations: passes,
                    ..Default::default()
                })
                .build()
                .unwrap()
                .fit(x.as_ref())
                .unwrap();
            let report = model.missing_values().unwrap();
            let (n, d) = (x.nrows(), x.ncols());
            let fitted_rows = n - 1;
            assert_eq!(model.n_samples(), fitted_rows, "{what}");
            let to_ml = (fitted_rows - ddof) as f64 / fitted_rows as f64;
            let noise = model.noise_variance() * to_ml;
            let u = model.components();
            let mut c = Mat::<f64>::identity(d, d) * noise;
            for (m, &lambda) in model.explained_variance().iter().enumerate() {
                let w2 = lambda * to_ml - noise;
                for i in 0..d {
                    for j in 0..d {
                        c[(i, j)] += w2 * u[(m, i)] * u[(m, j)];
                    }
                }
            }
            let scale = |j: usize| model.scale().map_or(1.0, |s| s[j]);
            let mut total = 0.0;
            for i in (0..n).filter(|&i| i != 5) {
                let observed: Vec<usize> = (0..d).filter(|&j| !x[(i, j)].is_nan()).collect();
                let e: Vec<f64> = observed
                    .iter()
                    .map(|&j| (x[(i, j)] - model.mean()[j]) / scale(j))
                    .collect();
                let c_oo = Mat::from_fn(observed.len(), observed.len(), |p, q| {
                    c[(observed[p], observed[q])]
                });
                total += dense_log_density(c_oo, &e);
            }
            let dense = total / fitted_rows as f64;
            let reported = report.log_likelihood;
            assert!(
                (reported - dense).abs() <= 1e-10 * dense.abs().max(1.0),
                "{what}: reported {reported}, dense {dense}"
            );
            println!("{what}: {reported} (dense {dense})");
        }
    }
}

/// With 10% and 30% of the values missing at random, EM's subspace stays within a few degrees
/// of the complete-data PCA's, and closer than PCA of the mean-imputed data.
#[test]
fn em_recovers_the_subspace_better_than_mean_imputation() {
    let complete = low_rank_plus_noise(1000, 20, 3, 0.5, 5);
    let truth = fit_with(
        complete.as_ref(),
        ComponentCount::Fixed(3),
        Scaling::Centre,
        1,
        Solver::Svd,
    )
    .unwrap();
    for (fraction, bound_degrees) in [(0.1, 2.0), (0.3, 4.0)] {
        let x = knock_out(&complete, fraction, 6);
        let em = fit_missing(x.as_ref(), 3, Scaling::Centre, None).unwrap();
        let imputed = fit_with(
            mean_imputed(&x).as_ref(),
            ComponentCount::Fixed(3),
            Scaling::Centre,
            1,
            Solver::Svd,
        )
        .unwrap();
        let em_angle = largest_angle_sine(&em, &truth).unwrap().asin().to_degrees();
        let imputed_angle = largest_angle_sine(&imputed, &truth)
            .unwrap()
            .asin()
            .to_degrees();
        println!("{fraction}: EM {em_angle:.3}°, mean imputation {imputed_angle:.3}°");
        assert!(em_angle <= bound_degrees, "{fraction}: EM {em_angle}°");
        assert!(
            em_angle < imputed_angle,
            "{fraction}: EM {em_angle}° against {imputed_angle}°"
        );
    }
}

/// Little noise (σ²/λ₁ about 1e-4) is where plain EM creeps (by 1 − 2σ²/λ₁ a pass); with
/// parameter expansion and extrapolation the fit converges in a few dozen passes, to the
/// subspace of the complete data within a fraction of a degree.
#[test]
fn little_noise_converges_in_few_passes() {
    let complete = low_rank_plus_noise(2000, 8, 2, 0.02, 11);
    let x = knock_out(&complete, 0.1, 12);
    let em = fit_missing(x.as_ref(), 2, Scaling::Centre, None).unwrap();
    let report = em.missing_values().unwrap();
    assert!(report.converged && report.iterations <= 100, "{report:?}");
    let truth = fit_with(
        complete.as_ref(),
        ComponentCount::Fixed(2),
        Scaling::Centre,
        1,
        Solver::Svd,
    )
    .unwrap();
    let angle = largest_angle_sine(&em, &truth).unwrap().asin().to_degrees();
    assert!(angle < 0.1, "{angle}°");
    println!("{} passes, {angle:.4}°", report.iterations);
}

/// A row with no observed value is left out (and counted); a feature with none is an error
/// naming it; an infinity is an error naming its row and column; without `Em` a NaN is the
/// same error as ever.
#[test]
fn empty_rows_empty_features_and_bad_values() {
    let mut x = knock_out(&low_rank_plus_noise(50, 6, 2, 0.3, 7), 0.1, 8);
    let base = fit_missing(x.as_ref(), 2, Scaling::Centre, None).unwrap();
    for j in 0..6 {
        x[(10, j)] = f64::NAN;
    }
    let report_before = base.missing_values().unwrap();
    let with_empty = {
        let mut y = Mat::<f64>::zeros(51, 6);
        for i in 0..51 {
            for j in 0..6 {
                y[(i, j)] = if i == 50 { f64::NAN } else { x[(i, j)] };
            }
        }
        y
    };
    let model = fit_missing(with_empty.as_ref(), 2, Scaling::Centre, None).unwrap();
    let report = model.missing_values().unwrap();
    assert_eq!(report.empty_rows, 2, "{report:?}");
    assert_eq!(model.n_samples(), 49);
    assert!(report.missing > report_before.missing);

    let mut column_gone = x.clone();
    for i in 0..50 {
        column_gone[(i, 4)] = f64::NAN;
    }
    let e = fit_missing(column_gone.as_ref(), 2, Scaling::Centre, None).unwrap_err();
    assert!(matches!(e, PcaError::EmptyFeature { column: 4 }), "{e:?}");
    assert!(
        e.to_string().starts_with("feature 4 has no observed value"),
        "{e}"
    );

    let mut infinite = x.clone();
    infinite[(7, 3)] = f64::INFINITY;
    let e = fit_missing(infinite.as_ref(), 2, Scaling::Centre, None).unwrap_err();
    assert!(
        matches!(
            e,
            PcaError::NonFinite {
                row: 7,
                column: 3,
                ..
            }
        ),
        "{e:?}"
    );

    let e = fit_with(
        x.as_ref(),
        ComponentCount::Fixed(2),
        Scaling::Centre,
        1,
        Solver::Auto,
    )
    .unwrap_err();
    let first_nan = (0..50)
        .flat_map(|i| (0..6).map(move |j| (i, j)))
        .find(|&(i, j)| x[(i, j)].is_nan())
        .unwrap();
    match e {
        PcaError::NonFinite { row, column, value } => {
            assert_eq!((row, column), first_nan);
            assert!(value.is_nan());
        }
        other => panic!("{other:?}"),
    }
}

/// `Em` needs a fixed number of components below D and the em (or auto) solver.
#[test]
fn missing_values_need_a_fixed_count_below_the_features_and_em() {
    let build = |count, solver| {
        PcaBuilder::new()
            .components(count)
            .solver(solver)
            .missing(MissingValues::Em)
            .build()
    };
    assert!(build(ComponentCount::Fixed(2), Solver::Em).is_ok());
    for (count, solver) in [
        (ComponentCount::All, Solver::Auto),
        (ComponentCount::VarianceFraction(0.9), Solver::Auto),
        (ComponentCount::Fixed(2), Solver::Svd),
    ] {
        let e = build(count, solver).unwrap_err();
        assert!(matches!(e, PcaError::SolverUnsuitable { .. }), "{e:?}");
    }
    let x = iris();
    let e = fit_missing(x.as_ref(), 4, Scaling::Centre, None).unwrap_err();
    assert!(
        e.to_string()
            .contains("at most min(n_samples, n_features − 1) = 3"),
        "{e}"
    );
}

/// The dense Gaussian conditioning of `x_H` on `x_O` under the model covariance C (original
/// units): `μ_H + C_HO C_OO⁻¹ (x_O − μ_O)`, and `log N(x_O; μ_O, C_OO)`.
fn dense_conditional(model: &PcaModel, row: &[f64]) -> (Vec<f64>, f64) {
    use principal::faer::linalg::solvers::Solve;
    let c = model.probabilistic().covariance(principal::Units::Original);
    let observed: Vec<usize> = (0..row.len()).filter(|&j| !row[j].is_nan()).collect();
    let holes: Vec<usize> = (0..row.len()).filter(|&j| row[j].is_nan()).collect();
    let c_oo = Mat::from_fn(observed.len(), observed.len(), |p, q| {
        c[(observed[p], observed[q])]
    });
    let e = Mat::from_fn(observed.len(), 1, |p, _| {
        row[observed[p]] - model.mean()[observed[p]]
    });
    let llt = c_oo.llt(principal::faer::Side::Lower).unwrap();
    let solved = llt.solve(&e);
    let fill = holes
        .iter()
        .map(|&h| {
            model.mean()[h]
                + (0..observed.len())
                    .map(|p| c[(h, observed[p])] * solved[(p, 0)])
                    .sum::<f64>()
        })
        .collect();
    let log_det: f64 = (0..observed.len())
        .map(|p| 2.0 * llt.L()[(p, p)].ln())
        .sum();
    let quad: f64 = (0..observed.len())
        .map(|p| e[(p, 0)] * solved[(p, 0)])
        .sum();
    let n = observed.len() as f64;
    (fill, -0.5 * (n * 1.837_877_066_409_345_5 + log_det + quad))
}

/// Rows with holes: the imputation is the Gaussian conditional mean and the score the
/// marginal density of the observed values (both against dense D×D formulas, in the original
/// units of a standardized model); complete rows get what the complete-data methods give; an
/// empty row gets the prior; σ² = 0 and infinities are errors.
#[test]
fn partly_observed_rows_are_conditioned_on_what_they_show() {
    use principal::Units;
    let x = low_rank_plus_noise(200, 8, 2, 0.4, 9);
    let model = fit_with(
        x.as_ref(),
        ComponentCount::Fixed(2),
        Scaling::Standardize,
        1,
        Solver::Svd,
    )
    .unwrap();
    let ppca = model.probabilistic();
    let mut rows = knock_out(&x.as_ref().subrows(0, 30).to_owned(), 0.3, 10);
    for j in 0..8 {
        rows[(29, j)] = f64::NAN;
    }
    let filled = ppca.impute(rows.as_ref()).unwrap();
    let scores = ppca
        .score_samples_observed(rows.as_ref(), Units::Original)
        .unwrap();
    let posterior = ppca.posterior_observed(rows.as_ref()).unwrap();
    let codes = ppca.transform_observed(rows.as_ref()).unwrap();
    for i in 0..29 {
        let row: Vec<f64> = (0..8).map(|j| rows[(i, j)]).collect();
        let (fill, ll) = dense_conditional(&model, &row);
        let holes: Vec<usize> = (0..8).filter(|&j| row[j].is_nan()).collect();
        for (h, want) in holes.iter().zip(&fill) {
            assert!(
                (filled[(i, *h)] - want).abs() <= 1e-10 * want.abs().max(1.0),
                "row {i} feature {h}"
            );
        }
        for j in (0..8).filter(|j| !row[*j].is_nan()) {
            assert_eq!(filled[(i, j)], row[j]);
        }
        assert!(
            (scores[i] - ll).abs() <= 1e-10 * ll.abs().max(1.0),
            "row {i}: {} against {ll}",
            scores[i]
        );
        // The codes are those of the completed row.
        let completed = Mat::from_fn(1, 8, |_, j| filled[(i, j)]);
        let want = model.transform(completed.as_ref()).unwrap();
        for k in 0..2 {
            assert!((codes[(i, k)] - want[(0, k)]).abs() <= 1e-10 * want[(0, k)].abs().max(1.0));
        }
    }
    // The row with nothing observed: the prior, the mean, codes 0, log-likelihood 0.
    assert_eq!(scores[29], 0.0);
    for j in 0..8 {
        assert!((filled[(29, j)] - model.mean()[j]).abs() <= 1e-12 * model.mean()[j].abs());
    }
    assert_eq!(
        posterior.mean.row(29).iter().copied().collect::<Vec<_>>(),
        vec![0.0, 0.0]
    );
    assert_eq!(posterior.covariances[29], Mat::<f64>::identity(2, 2));
    assert!(codes.row(29).iter().all(|v| v.abs() <= 1e-12));
    // Complete rows: the complete-data methods' answers.
    let complete = x.as_ref().subrows(100, 20);
    let whole = ppca.posterior(complete).unwrap();
    let observed = ppca.posterior_observed(complete).unwrap();
    assert!(common::max_abs_diff(whole.mean.as_ref(), observed.mean.as_ref()) <= 1e-12);
    assert!(
        common::max_abs_diff(whole.covariance.as_ref(), observed.covariances[7].as_ref()) <= 1e-14
    );
    let a = ppca.score_samples(complete, Units::Original).unwrap();
    let b = ppca
        .score_samples_observed(complete, Units::Original)
        .unwrap();
    for (p, q) in a.iter().zip(&b) {
        assert!((p - q).abs() <= 1e-11 * p.abs());
    }
    let t = model.transform(complete).unwrap();
    let u = ppca.transform_observed(complete).unwrap();
    assert!(common::max_abs_diff(t.as_ref(), u.as_ref()) <= 1e-12);
    assert_eq!(ppca.impute(complete).unwrap(), complete.to_owned());

    let mut bad = rows.clone();
    bad[(3, 5)] = f64::NEG_INFINITY;
    let e = ppca.impute(bad.as_ref()).unwrap_err();
    assert!(
        matches!(
            e,
            PcaError::NonFinite {
                row: 3,
                column: 5,
                ..
            }
        ),
        "{e:?}"
    );
    let full = fit_with(
        x.as_ref(),
        ComponentCount::All,
        Scaling::Centre,
        1,
        Solver::Svd,
    )
    .unwrap();
    let e = full.probabilistic().impute(rows.as_ref()).unwrap_err();
    assert!(matches!(e, PcaError::DegenerateModel(_)), "{e:?}");
}
