//! Aligning a model to a reference: the same components, the same signs, the same order, so
//! that the codes of a model refitted on new data (next month's batch, a bootstrap sample,
//! another version) are comparable column by column with the reference's.
//!
//! Two layers, as elsewhere: functions over matrix views ([`principal_angles`],
//! [`procrustes_rotation`]) and [`align`], which takes two fitted models and returns the
//! aligned model with what was done ([`AlignedModel`]).
//!
//! ```text
//! match:   C = B Aᵀ (M×K cosines); pairs of largest |C| first; each matched row of B flipped
//!          to a positive cosine and moved to its reference's place
//! rotate:  A Bᵀ = U Σ Vᵀ,  R = U Vᵀ  (orthogonal Procrustes: R minimises ‖R B − A‖_F),
//!          B' = R B,  λ'_k = Σ_j R_kj² λ_j  (the variance of the codes along B'_k)
//! angles:  cos θ_i = σ_i(A Bᵀ), sin θ_i = σ_i(S − (S Lᵀ) L) with S the smaller basis, L the
//!          larger (Björck & Golub 1973; the sine for small angles, where acos loses digits)
//! ```

use faer::linalg::matmul::matmul;
use faer::{Accum, Mat, MatRef, Par};

use crate::error::{PcaError, Result};
use crate::model::PcaModel;
use crate::options::Basis;

/// How [`align`] moves a model's components towards the reference's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Alignment {
    /// Each component is matched to a reference component, flipped to agree with it and moved
    /// to its place: the components stay eigenvectors.
    #[default]
    Match,
    /// The components are rotated within their subspace to best match the reference's
    /// (orthogonal Procrustes): no longer eigenvectors ([`Basis::Rotated`]). Needs as many
    /// components as the reference.
    Rotate,
}

/// How one component of the aligned model relates to the model it came from and to the
/// reference.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ComponentMatch {
    /// The component's index in the model before alignment (for [`Alignment::Rotate`], its
    /// own index: every rotated component mixes all of them).
    pub original: usize,
    /// The reference component it was matched to, `None` when the model has more components
    /// than the reference and this one was left over.
    pub reference: Option<usize>,
    /// Whether its sign was flipped (always `false` for [`Alignment::Rotate`]).
    pub flipped: bool,
    /// The cosine between the aligned component and its reference component (0 when
    /// unmatched).
    pub cosine: f64,
}

/// The result of [`align`].
#[derive(Clone, Debug, PartialEq)]
pub struct AlignedModel {
    /// The aligned model: its component k matches reference component `matches[k].reference`.
    pub model: PcaModel,
    /// One entry per component of [`Self::model`].
    pub matches: Vec<ComponentMatch>,
    /// The principal angles between the two models' subspaces, in radians, increasing;
    /// min(M, K) of them. Rotation and flips do not change them.
    pub angles: Vec<f64>,
    /// For [`Alignment::Rotate`], the M×M orthogonal R with `B' = R B`.
    pub rotation: Option<Mat<f64>>,
}

/// `a · bᵀ` for two matrices of rows, by faer.
fn rows_product(a: MatRef<'_, f64>, b: MatRef<'_, f64>) -> Mat<f64> {
    let mut c = Mat::<f64>::zeros(a.nrows(), b.nrows());
    matmul(c.as_mut(), Accum::Replace, a, b.transpose(), 1.0, Par::Seq);
    c
}

fn singular_values(x: MatRef<'_, f64>) -> Result<Vec<f64>> {
    if x.nrows() == 0 || x.ncols() == 0 {
        return Ok(Vec::new());
    }
    x.singular_values().map_err(|e| PcaError::NoConvergence {
        solver: "align",
        detail: format!("the SVD of a {}×{} matrix: {e:?}", x.nrows(), x.ncols()),
    })
}

/// The principal angles (radians, increasing) between the spans of the rows of `a` and `b`,
/// each with orthonormal rows and the same number of columns: min(rows) angles.
///
/// # Panics
/// When the column counts differ.
#[track_caller]
pub fn principal_angles(a: MatRef<'_, f64>, b: MatRef<'_, f64>) -> Result<Vec<f64>> {
    assert_eq!(a.ncols(), b.ncols(), "bases of different dimensions");
    let (small, large) = if a.nrows() <= b.nrows() {
        (a, b)
    } else {
        (b, a)
    };
    let k = small.nrows();
    let mut cosines = singular_values(rows_product(small, large).as_ref())?;
    cosines.sort_by(|x, y| y.total_cmp(x));
    // The part of the smaller basis outside the larger one's span: its singular values are
    // the sines, accurate where the cosines are near 1.
    let mut outside = small.to_owned();
    let projection = rows_product(small, large);
    matmul(
        outside.as_mut(),
        Accum::Add,
        projection.as_ref(),
        large,
        -1.0,
        Par::Seq,
    );
    let mut sines = singular_values(outside.as_ref())?;
    sines.sort_by(|x, y| x.total_cmp(y));
    Ok((0..k)
        .map(|i| {
            let c = cosines[i].clamp(0.0, 1.0);
            let s = sines.get(i).copied().unwrap_or(0.0).clamp(0.0, 1.0);
            if c * c >= 0.5 { s.asin() } else { c.acos() }
        })
        .collect())
}

/// The orthogonal M×M matrix R minimising ‖R B − A‖_F for `b` and `reference` (`a`), both M×D
/// with orthonormal rows: R = U Vᵀ from the SVD A Bᵀ = U Σ Vᵀ (Schönemann 1966).
///
/// # Panics
/// When the shapes differ.
#[track_caller]
pub fn procrustes_rotation(b: MatRef<'_, f64>, reference: MatRef<'_, f64>) -> Result<Mat<f64>> {
    assert_eq!(b.nrows(), reference.nrows(), "different numbers of rows");
    assert_eq!(b.ncols(), reference.ncols(), "different numbers of columns");
    let c = rows_product(reference, b);
    let svd = c.svd().map_err(|e| PcaError::NoConvergence {
        solver: "align",
        detail: format!("the SVD of the {}×{} cosines: {e:?}", c.nrows(), c.ncols()),
    })?;
    let mut r = Mat::<f64>::zeros(c.nrows(), c.ncols());
    matmul(
        r.as_mut(),
        Accum::Replace,
        svd.U(),
        svd.V().transpose(),
        1.0,
        Par::Seq,
    );
    Ok(r)
}

/// Checks that `model` and `reference` can be aligned: the same features and the same
/// preprocessing (standardised or not, ddof, whitening); their names, when known, are the
/// caller's to compare.
fn check_comparable(model: &PcaModel, reference: &PcaModel, alignment: Alignment) -> Result<()> {
    let refuse = |reason: String| Err(PcaError::NotAlignable(reason));
    if model.n_features() != reference.n_features() {
        return refuse(format!(
            "the model has {} features and the reference {}",
            model.n_features(),
            reference.n_features()
        ));
    }
    let standardized = |m: &PcaModel| {
        if m.scale().is_some() {
            "standardised"
        } else {
            "not standardised"
        }
    };
    if model.scale().is_some() != reference.scale().is_some() {
        return refuse(format!(
            "the model is {} and the reference {}",
            standardized(model),
            standardized(reference)
        ));
    }
    if model.ddof() != reference.ddof() {
        return refuse(format!(
            "the model was fitted with ddof {} and the reference with ddof {}",
            model.ddof(),
            reference.ddof()
        ));
    }
    if model.whitening() != reference.whitening() {
        return refuse(format!(
            "the model's codes are whitened {} and the reference's {}",
            model.whitening().name(),
            reference.whitening().name()
        ));
    }
    if alignment == Alignment::Rotate {
        if model.n_components() != reference.n_components() {
            return refuse(format!(
                "rotating needs as many components as the reference: the model has {} and \
                 the reference {}",
                model.n_components(),
                reference.n_components()
            ));
        }
        if model.basis() == Basis::Rotated {
            return refuse(
                "the model's components are already rotated, so the variances along new \
                 rotations are unknown: rotate the model it came from"
                    .into(),
            );
        }
    }
    Ok(())
}

/// Aligns `model` to `reference` ([`Alignment`]): a model of the same features and
/// preprocessing, its components matched, flipped and reordered (or rotated) to agree with the
/// reference's, with the principal angles between the two subspaces.
///
/// Only the components and what belongs to each (its variance, ratio and singular value) move:
/// the mean, scale, total and noise variance stay the model's own. Matched components are
/// placed in the order of their reference components; components left over when the model has
/// more come last, in their own order.
///
/// ```
/// use principal::{faer::mat, align::{align, Alignment}, PcaBuilder};
/// let x = mat![[2.0, 1.0, 0.5], [1.0, 3.0, 1.5], [4.0, 2.0, 2.5], [0.0, 1.0, 0.0]];
/// let model = PcaBuilder::new().build()?.fit(x.as_ref())?;
/// let aligned = align(&model, &model, Alignment::Match)?;
/// assert!(aligned.angles.iter().all(|&a| a < 1e-7));
/// # Ok::<(), principal::PcaError>(())
/// ```
pub fn align(model: &PcaModel, reference: &PcaModel, alignment: Alignment) -> Result<AlignedModel> {
    check_comparable(model, reference, alignment)?;
    let b = model.components();
    let a = reference.components();
    let angles = principal_angles(a, b)?;
    let parts = model.to_parts();
    match alignment {
        Alignment::Match => {
            let (components, matches) = matched(b, a);
            let order: Vec<usize> = matches.iter().map(|m| m.original).collect();
            let pick = |v: &[f64]| order.iter().map(|&i| v[i]).collect::<Vec<f64>>();
            let aligned = PcaModel::from_parts(principal_parts(
                components,
                pick(&parts.explained_variance),
                parts,
                model.basis(),
            ))?;
            Ok(AlignedModel {
                model: aligned,
                matches,
                angles,
                rotation: None,
            })
        }
        Alignment::Rotate => {
            let r = procrustes_rotation(b, a)?;
            let mut components = Mat::<f64>::zeros(b.nrows(), b.ncols());
            matmul(
                components.as_mut(),
                Accum::Replace,
                r.as_ref(),
                b,
                1.0,
                Par::Seq,
            );
            let lambda = &parts.explained_variance;
            // The codes are z' = R z with cov z = Λ: the variance along B'_k is Σ_j R_kj² λ_j.
            let variance: Vec<f64> = (0..r.nrows())
                .map(|k| (0..r.ncols()).map(|j| r[(k, j)].powi(2) * lambda[j]).sum())
                .collect();
            let matches = (0..r.nrows())
                .map(|k| ComponentMatch {
                    original: k,
                    reference: Some(k),
                    flipped: false,
                    cosine: (0..b.ncols()).map(|j| components[(k, j)] * a[(k, j)]).sum(),
                })
                .collect();
            let aligned =
                PcaModel::from_parts(principal_parts(components, variance, parts, Basis::Rotated))?;
            Ok(AlignedModel {
                model: aligned,
                matches,
                angles,
                rotation: Some(r),
            })
        }
    }
}

/// `parts` with new components and their variances, the ratios and singular values that
/// follow from those.
fn principal_parts(
    components: Mat<f64>,
    variance: Vec<f64>,
    mut parts: crate::model::ModelParts,
    basis: Basis,
) -> crate::model::ModelParts {
    let total = parts.total_variance;
    let dof = (parts.n_samples - parts.ddof) as f64;
    parts.explained_variance_ratio = variance
        .iter()
        .map(|&v| if total > 0.0 { v / total } else { 0.0 })
        .collect();
    parts.singular_values = variance
        .iter()
        .map(|&v| (v.max(0.0) * dof).sqrt())
        .collect();
    parts.explained_variance = variance;
    parts.components = components;
    parts.basis = basis;
    parts
}

/// The rows of `b` matched to rows of `a` by largest |cosine| first, flipped to a positive
/// cosine, in the order of their matches (left-overs last), with what was done to each.
fn matched(b: MatRef<'_, f64>, a: MatRef<'_, f64>) -> (Mat<f64>, Vec<ComponentMatch>) {
    let cosines = rows_product(b, a);
    let (m, k) = (b.nrows(), a.nrows());
    let mut pairs: Vec<(usize, usize)> = (0..m).flat_map(|i| (0..k).map(move |j| (i, j))).collect();
    // Largest |cosine| first; ties by index, so the result does not depend on the sort.
    pairs.sort_by(|&(i, j), &(p, q)| {
        cosines[(p, q)]
            .abs()
            .total_cmp(&cosines[(i, j)].abs())
            .then((i, j).cmp(&(p, q)))
    });
    let mut of_model: Vec<Option<usize>> = vec![None; m];
    let mut taken = vec![false; k];
    for (i, j) in pairs {
        if of_model[i].is_none() && !taken[j] {
            of_model[i] = Some(j);
            taken[j] = true;
        }
    }
    let mut order: Vec<usize> = (0..m).collect();
    // Matched ones by their reference index, then the left-overs in their own order.
    order.sort_by_key(|&i| (of_model[i].unwrap_or(usize::MAX), i));
    let mut matches = Vec::with_capacity(m);
    let components = Mat::from_fn(m, b.ncols(), |row, col| {
        let i = order[row];
        let flip = of_model[i].is_some_and(|j| cosines[(i, j)] < 0.0);
        if flip { -b[(i, col)] } else { b[(i, col)] }
    });
    for &i in &order {
        let (flipped, cosine) = match of_model[i] {
            Some(j) => (cosines[(i, j)] < 0.0, cosines[(i, j)].abs()),
            None => (false, 0.0),
        };
        matches.push(ComponentMatch {
            original: i,
            reference: of_model[i],
            flipped,
            cosine,
        });
    }
    (components, matches)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::ComponentCount;
    use crate::params::PcaBuilder;
    use faer::Mat;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Gaussian-ish data with a clear spectrum: N×D, column j scaled by (D − j).
    fn data(n: usize, d: usize, seed: u64) -> Mat<f64> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        Mat::from_fn(n, d, |_, j| {
            (rng.random::<f64>() - 0.5) * (d - j) as f64 + if j == 0 { 1e6 } else { 0.0 }
        })
    }

    fn fit(x: MatRef<'_, f64>, m: usize) -> PcaModel {
        PcaBuilder::new()
            .components(ComponentCount::Fixed(m))
            .build()
            .unwrap()
            .fit(x)
            .unwrap()
    }

    /// A random orthogonal M×M matrix: Q of the QR of a random matrix.
    fn orthogonal(m: usize, seed: u64) -> Mat<f64> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let g = Mat::from_fn(m, m, |_, _| rng.random::<f64>() - 0.5);
        g.qr().compute_Q()
    }

    #[test]
    fn angles_of_a_basis_with_itself_are_zero_and_with_its_complement_right() {
        let q = orthogonal(5, 1);
        let a = q.as_ref().subrows(0, 2);
        let b = q.as_ref().subrows(2, 3);
        let same = principal_angles(a, a).unwrap();
        assert!(same.iter().all(|&t| t.abs() < 1e-14), "{same:?}");
        let right = principal_angles(a, b).unwrap();
        assert_eq!(right.len(), 2);
        for t in right {
            assert!((t - std::f64::consts::FRAC_PI_2).abs() < 1e-12, "{t}");
        }
    }

    #[test]
    fn a_small_known_angle_is_measured_to_rounding() {
        // Two lines in the plane at 1e-9 rad: acos of the cosine would give only ~1e-8.
        let t = 1e-9_f64;
        let a = faer::mat![[1.0, 0.0, 0.0]];
        let b = faer::mat![[t.cos(), t.sin(), 0.0]];
        let angles = principal_angles(a.as_ref(), b.as_ref()).unwrap();
        assert!((angles[0] - t).abs() < 1e-20, "{angles:?}");
        let wide = 1.2_f64;
        let c = faer::mat![[wide.cos(), 0.0, wide.sin()]];
        let angles = principal_angles(a.as_ref(), c.as_ref()).unwrap();
        assert!((angles[0] - wide).abs() < 1e-14, "{angles:?}");
    }

    #[test]
    fn rotate_recovers_a_rotated_copy_of_the_reference() {
        for (n, d, m, seed) in [(60, 5, 3, 1), (8, 30, 6, 2), (40, 4, 4, 3), (30, 6, 1, 4)] {
            let x = data(n, d, seed);
            let reference = fit(x.as_ref(), m);
            let q = orthogonal(m, seed + 100);
            let mut parts = reference.to_parts();
            let mut rotated = Mat::<f64>::zeros(m, d);
            matmul(
                rotated.as_mut(),
                Accum::Replace,
                q.as_ref(),
                reference.components(),
                1.0,
                Par::Seq,
            );
            parts.components = rotated;
            let copy = PcaModel::from_parts(parts).unwrap();
            let aligned = align(&copy, &reference, Alignment::Rotate).unwrap();
            let diff = (aligned.model.components() - reference.components()).norm_max();
            assert!(diff < 1e-10, "{n}×{d}, M = {m}: {diff}");
            assert_eq!(aligned.model.basis(), Basis::Rotated);
            assert!(
                aligned.angles.iter().all(|&t| t < 1e-7),
                "{:?}",
                aligned.angles
            );
        }
    }

    #[test]
    fn rotated_variances_are_the_variances_of_the_rotated_codes() {
        let x = data(80, 5, 7);
        let reference = fit(x.as_ref(), 3);
        let other = fit(data(80, 5, 8).as_ref(), 3);
        let aligned = align(&other, &reference, Alignment::Rotate).unwrap();
        let own = aligned.model.transform(data(80, 5, 8).as_ref()).unwrap();
        for k in 0..3 {
            let col: Vec<f64> = (0..80).map(|i| own[(i, k)]).collect();
            let mean = col.iter().sum::<f64>() / 80.0;
            let var = col.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / 79.0;
            let expected = aligned.model.explained_variance()[k];
            assert!(
                (var - expected).abs() < 1e-9 * expected,
                "{k}: {var} vs {expected}"
            );
        }
        let before: f64 = other.explained_variance().iter().sum();
        let after: f64 = aligned.model.explained_variance().iter().sum();
        assert!((before - after).abs() < 1e-12 * before);
    }

    #[test]
    fn matching_undoes_a_permutation_and_flips() {
        let x = data(50, 4, 9);
        let reference = fit(x.as_ref(), 3);
        let mut parts = reference.to_parts();
        let b = reference.components();
        // Model component 0 = −ref 2, 1 = ref 0, 2 = −ref 1.
        let source = [(2, -1.0), (0, 1.0), (1, -1.0)];
        parts.components = Mat::from_fn(3, 4, |i, j| source[i].1 * b[(source[i].0, j)]);
        let ev = reference.explained_variance();
        parts.explained_variance = source.iter().map(|&(i, _)| ev[i]).collect();
        parts.explained_variance_ratio = source
            .iter()
            .map(|&(i, _)| reference.explained_variance_ratio()[i])
            .collect();
        parts.singular_values = source
            .iter()
            .map(|&(i, _)| reference.singular_values()[i])
            .collect();
        let shuffled = PcaModel::from_parts(parts).unwrap();
        let aligned = align(&shuffled, &reference, Alignment::Match).unwrap();
        assert_eq!(aligned.model.components(), reference.components());
        assert_eq!(
            aligned.model.explained_variance(),
            reference.explained_variance()
        );
        let originals: Vec<usize> = aligned.matches.iter().map(|m| m.original).collect();
        assert_eq!(originals, [1, 2, 0]);
        let flips: Vec<bool> = aligned.matches.iter().map(|m| m.flipped).collect();
        assert_eq!(flips, [false, true, true]);
        assert_eq!(aligned.model.basis(), Basis::Eigenvectors);
    }

    #[test]
    fn left_over_components_come_last_in_their_order() {
        let x = data(50, 5, 10);
        let reference = fit(x.as_ref(), 2);
        let model = fit(x.as_ref(), 4);
        let aligned = align(&model, &reference, Alignment::Match).unwrap();
        let refs: Vec<Option<usize>> = aligned.matches.iter().map(|m| m.reference).collect();
        assert_eq!(refs, [Some(0), Some(1), None, None]);
        assert_eq!(aligned.angles.len(), 2);
        assert!(align(&model, &reference, Alignment::Rotate).is_err());
    }

    #[test]
    fn models_of_other_features_or_preprocessing_are_refused() {
        let x = data(40, 4, 11);
        let reference = fit(x.as_ref(), 2);
        let narrower = fit(x.as_ref().subcols(0, 3), 2);
        let standardized = PcaBuilder::new()
            .components(ComponentCount::Fixed(2))
            .scaling(crate::options::Scaling::Standardize)
            .build()
            .unwrap()
            .fit(x.as_ref())
            .unwrap();
        let ddof0 = PcaBuilder::new()
            .components(ComponentCount::Fixed(2))
            .ddof(0)
            .build()
            .unwrap()
            .fit(x.as_ref())
            .unwrap();
        let whitened = reference
            .clone()
            .with_whitening(crate::options::Whitening::UnitVariance);
        for (other, words) in [
            (&narrower, "3 features and the reference 4"),
            (&standardized, "standardised and the reference not"),
            (&ddof0, "ddof 0 and the reference with ddof 1"),
            (&whitened, "whitened unit-variance"),
        ] {
            let err = align(other, &reference, Alignment::Match)
                .unwrap_err()
                .to_string();
            assert!(err.contains(words), "{err}");
        }
    }
}
