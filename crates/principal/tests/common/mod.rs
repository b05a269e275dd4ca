//! What the whole-fit tests share: data (Iris, random matrices, signal plus noise), fitting
//! shorthands, and the relations every fit satisfies on its training data as a checked property.
// Each test file uses some of these.
#![allow(dead_code)]

use principal::faer::{Mat, MatRef};
use principal::{
    ComponentCount, IterativeOptions, PcaBuilder, PcaModel, PcaParams, Result, Scaling, Solver,
};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The exact solvers, `Auto` first and svd (the reference) last.
pub const EXACT_SOLVERS: [Solver; 4] =
    [Solver::Auto, Solver::Covariance, Solver::Gram, Solver::Svd];

/// Every solver, `Auto` first.
pub const EVERY_SOLVER: [Solver; 7] = [
    Solver::Auto,
    Solver::Covariance,
    Solver::Gram,
    Solver::Svd,
    Solver::Randomized,
    Solver::Power,
    Solver::Em,
];

pub fn fit_with(
    x: MatRef<'_, f64>,
    components: ComponentCount,
    scaling: Scaling,
    ddof: usize,
    solver: Solver,
) -> Result<PcaModel> {
    PcaBuilder::new()
        .components(components)
        .scaling(scaling)
        .ddof(ddof)
        .solver(solver)
        .build()?
        .fit(x)
}

pub fn iris() -> Mat<f64> {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/iris.csv"))
        .unwrap();
    let rows: Vec<Vec<f64>> = text
        .lines()
        .skip(1)
        .map(|l| l.split(',').take(4).map(|v| v.parse().unwrap()).collect())
        .collect();
    Mat::from_fn(rows.len(), 4, |i, j| rows[i][j])
}

/// An n×d matrix with entries of varied scale per column; `rank` limits the rank (plus noise 0);
/// `offset` is added to every entry.
pub fn random_matrix(n: usize, d: usize, rank: Option<usize>, offset: f64, seed: u64) -> Mat<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let base = match rank {
        None => Mat::from_fn(n, d, |_, j| rng.random_range(-1.0..1.0) * (1.0 + j as f64)),
        Some(r) => {
            let a = Mat::from_fn(n, r, |_, _| rng.random_range(-1.0..1.0));
            let b = Mat::from_fn(r, d, |_, _| rng.random_range(-1.0..1.0));
            &a * &b
        }
    };
    Mat::from_fn(n, d, |i, j| base[(i, j)] + offset)
}

pub fn max_abs_diff(a: MatRef<'_, f64>, b: MatRef<'_, f64>) -> f64 {
    let mut m = 0.0f64;
    for j in 0..a.ncols() {
        for i in 0..a.nrows() {
            m = m.max((a[(i, j)] - b[(i, j)]).abs());
        }
    }
    m
}

/// The relations every fit satisfies on its training data, with tolerances of rounding size:
/// the codes are uncorrelated with variances λ_m, the mean squared reconstruction error is
/// ((N − ddof)/N) Σ discarded λ, the residual is orthogonal to every component, and the
/// components are orthonormal.
pub fn check_relations(x: MatRef<'_, f64>, model: &PcaModel) -> Result<(), TestCaseError> {
    let (n, m) = (x.nrows(), model.n_components());
    let ddof = model.ddof();
    let lam = model.explained_variance();
    let scale = model.total_variance().max(1e-300);
    let size = ((n * x.ncols()) as f64).sqrt();
    // Rounding already present in the input: an offset of 1e6 stores each entry to ±1e6·ε.
    let min_scale = model
        .scale()
        .map_or(1.0, |s| s.iter().cloned().fold(f64::INFINITY, f64::min));
    let rounding = 4.0 * f64::EPSILON * x.norm_max() * size / min_scale;
    let tol = 1e-9 * scale * size + rounding * scale.sqrt();
    let z = model.transform(x).unwrap();
    // 1. Codes have variance λ_m and are uncorrelated (means are zero).
    for a in 0..m {
        for b in 0..m {
            let c: f64 = (0..n).map(|i| z[(i, a)] * z[(i, b)]).sum::<f64>() / (n - ddof) as f64;
            let want = if a == b { lam[a] } else { 0.0 };
            prop_assert!(
                (c - want).abs() <= tol,
                "code covariance ({a},{b}) = {c}, want {want}"
            );
        }
    }
    // 2. Mean squared reconstruction error = ((N − ddof)/N) Σ discarded λ.
    let discarded = (model.total_variance() - lam.iter().sum::<f64>()).max(0.0);
    let err = model.reconstruction_error(x).unwrap();
    let want = (n - ddof) as f64 / n as f64 * discarded;
    prop_assert!(
        (err - want).abs() <= tol,
        "reconstruction error {err}, want {want}"
    );
    // 3. The residual is orthogonal to every component.
    let back = model.inverse_transform(z.as_ref()).unwrap();
    let scale_of = |j: usize| model.scale().map_or(1.0, |s| s[j]);
    let residual = Mat::from_fn(n, x.ncols(), |i, j| {
        (x[(i, j)] - back[(i, j)]) / scale_of(j)
    });
    let dots = &residual * model.components().transpose();
    let norm = residual.norm_l2().max(1e-300);
    prop_assert!(
        dots.norm_max() <= 1e-9 * norm.max(scale.sqrt()) + rounding,
        "residual·components = {}",
        dots.norm_max()
    );
    // Orthonormal rows.
    let gram = model.components() * model.components().transpose();
    prop_assert!(
        max_abs_diff(gram.as_ref(), Mat::<f64>::identity(m, m).as_ref()) < 1e-10,
        "components not orthonormal"
    );
    Ok(())
}

/// Projector onto the span of the components.
pub fn projector(model: &PcaModel) -> Mat<f64> {
    model.components().transpose() * model.components()
}

/// Rank-`r` signal with decaying strengths plus small noise: a spectrum with clear gaps.
pub fn signal_plus_noise(n: usize, d: usize, r: usize, noise: f64, seed: u64) -> Mat<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let a = Mat::from_fn(n, r, |_, j| {
        rng.random_range(-1.0..1.0) * 2f64.powi(-(j as i32)) * 10.0
    });
    let b = Mat::from_fn(r, d, |_, _| rng.random_range(-1.0..1.0));
    let s = &a * &b;
    Mat::from_fn(n, d, |i, j| {
        s[(i, j)] + noise * rng.random_range(-1.0..1.0) + 3.0
    })
}

pub fn iterative(solver: Solver, k: usize, options: IterativeOptions) -> PcaParams {
    PcaBuilder::new()
        .components(ComponentCount::Fixed(k))
        .solver(solver)
        .iterative(options)
        .build()
        .unwrap()
}
