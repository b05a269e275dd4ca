//! The reconstruction-error curve, computed as the command-line tool will (codes from
//! `principal`, sums gathered chunk by chunk), equals the discarded eigenvalues
//! ((N − ddof)/N) Σ_{j>k} λⱼ on the training data.

use crate::common;

use common::{clustered, summarise, view};
use principal::faer::Mat;
use principal::{ComponentCount, PcaBuilder, Scaling, Solver};
use principal_report::figures::reconstruction_error;
use principal_report::{discarded_variance_curve, reconstruction_error_curve};

/// The largest gap between the measured curve and the discarded eigenvalues, in units of
/// ε × (the error with no component), and the bound it must stay under.
///
/// Why that bound: each point of either curve is a sum of at most M + 1 terms, each no larger
/// than the total Σₙ‖xₙ‖²/N = curve[0], and each carrying a relative rounding of about D·ε (a
/// squared norm or a code is a sum of D products; an eigenvalue is backward stable to about
/// D·ε·‖S‖). So the gap stays under (M + 1)·D·ε·curve[0]; the sums across rows are compensated
/// and add nothing that grows with N.
fn gap_and_bound(measured: &[f64], discarded: &[f64], d: usize) -> (f64, f64) {
    let m = measured.len() - 1;
    let unit = f64::EPSILON * measured[0];
    let gap = measured
        .iter()
        .zip(discarded)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    (gap / unit, ((m + 1) * d) as f64)
}

fn check(x: &Mat<f64>, builder: PcaBuilder, chunk: usize) {
    let model = builder.build().unwrap().fit(x.as_ref()).unwrap();
    let data = summarise(&model, x, None, chunk);
    let measured = data.reconstruction_error_curve();
    let discarded = discarded_variance_curve(
        model.n_samples(),
        model.ddof(),
        model.total_variance(),
        model.explained_variance(),
    );
    assert_eq!(measured.len(), model.n_components() + 1);
    let (gap, bound) = gap_and_bound(&measured, &discarded, x.ncols());
    println!(
        "N = {}, D = {}, M = {}, ddof = {}, {:?}, {:?}: largest gap {gap:.1} ε·MSE(0), bound {bound}",
        x.nrows(),
        x.ncols(),
        model.n_components(),
        model.ddof(),
        model.scaling(),
        model.solver()
    );
    assert!(gap <= bound, "gap {gap} ε·MSE(0) exceeds {bound}");
    // The model's own reconstruction error (a different computation: residuals x − x̃)
    // agrees at k = M.
    let direct = model.reconstruction_error(x.as_ref()).unwrap();
    let last = *measured.last().unwrap();
    assert!(
        (direct - last).abs() <= bound * f64::EPSILON * measured[0],
        "residuals give {direct}, the curve {last}"
    );
}

#[test]
fn the_measured_error_equals_the_discarded_eigenvalues_with_every_component() {
    let (x, _) = clustered(400, 6, 3, 21);
    check(&x, PcaBuilder::new(), 64);
}

#[test]
fn the_curves_agree_with_ddof_zero() {
    let (x, _) = clustered(250, 7, 4, 22);
    check(&x, PcaBuilder::new().ddof(0), 100);
}

#[test]
fn the_curves_agree_in_standardized_units() {
    let (x, _) = clustered(300, 10, 3, 23);
    check(&x, PcaBuilder::new().scaling(Scaling::Standardize), 77);
}

#[test]
fn the_curves_agree_when_the_model_keeps_fewer_components_than_the_rank() {
    // The last point is then the error of M components: the sum of the eigenvalues the model
    // did not keep, known only through the total variance.
    let (x, _) = clustered(300, 9, 3, 24);
    check(
        &x,
        PcaBuilder::new().components(ComponentCount::Fixed(3)),
        128,
    );
}

#[test]
fn the_curves_agree_with_fewer_samples_than_features() {
    // N < D: the Gram solver, and the curve reaches 0 at the rank N − 1.
    let (x, _) = clustered(30, 60, 3, 25);
    check(&x, PcaBuilder::new().solver(Solver::Gram), 7);
}

#[test]
fn chunks_of_any_size_give_the_same_curve_to_rounding() {
    let (x, _) = clustered(500, 5, 2, 26);
    let model = PcaBuilder::new().build().unwrap().fit(x.as_ref()).unwrap();
    let whole = summarise(&model, &x, None, 500).reconstruction_error_curve();
    let pieces = summarise(&model, &x, None, 33).reconstruction_error_curve();
    for (a, b) in whole.iter().zip(&pieces) {
        assert!(
            (a - b).abs() <= 8.0 * f64::EPSILON * whole[0],
            "{a} against {b}"
        );
    }
}

#[test]
fn on_other_data_the_figure_shows_the_curves_apart_and_says_by_how_much() {
    let (train, _) = clustered(300, 5, 3, 27);
    let (test, _) = clustered(300, 5, 3, 28);
    let model = PcaBuilder::new()
        .components(ComponentCount::Fixed(2))
        .build()
        .unwrap()
        .fit(train.as_ref())
        .unwrap();
    let data = summarise(&model, &test, None, 100);
    let figure = reconstruction_error(&view(&model), &data).unwrap();
    let measured = figure.plotted().series("mean_squared_error").unwrap().ys();
    let discarded = figure.plotted().series("discarded_variance").unwrap().ys();
    let gap = measured
        .iter()
        .zip(&discarded)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    assert!(gap > 1e-3 * measured[0], "other clusters, another error");
    assert!(figure.caption().contains("differ by at most"));
}

#[test]
fn the_error_curve_is_the_total_less_the_running_sum_of_squared_codes() {
    assert_eq!(
        reconstruction_error_curve(10, 50.0, &[30.0, 15.0, 5.0]),
        [5.0, 2.0, 0.5, 0.0]
    );
}
