//! Cross-validation of the probabilistic-PCA likelihood: the rows dealt into k folds (seeded),
//! a model fitted to each fold's training rows, and its held-out rows scored for every number
//! of components at once.
//!
//! A fold's model with all its components has eigenvalues λ₁ ≥ … ≥ λ_p (p = min(N_train, D),
//! the rest zero) and eigenvectors u_i. Probabilistic PCA with M of them (Tipping & Bishop's
//! maximum likelihood) has `σ²_M = Σ_{i>M} λ_i / (D − M)`, the mean over all D − M remaining
//! directions, and covariance `C_M = Σ_{i≤M} λ_i u_i u_iᵀ + σ²_M (I − Σ_{i≤M} u_i u_iᵀ)`, so
//! with `z_i = u_iᵀ x` for a centred (scaled) held-out row x:
//!
//! ```text
//! log p(x) = −½ [ D log 2π + Σ_{i≤M} log λ_i + (D − M) log σ²_M
//!                + Σ_{i≤M} z_i²/λ_i + (‖x‖² − Σ_{i≤M} z_i²) / σ²_M ]
//! ```
//!
//! in closed form for every M: [`crate::ProbabilisticPca::score_by_component_count`], from one
//! projection of each held-out row onto its fold's components. An M is a candidate when λ_M is
//! above rounding in every fold. σ²_M is kept at least at the rounding of a zero eigenvalue:
//! when the data has exact rank r (noise-free beyond it) and the held-out rows lie in the
//! training rows' span, the likelihood at M = r is then very large but finite, and chosen; when
//! they do not (a feature seen in one row only), it is very small, and not.
//!
//! With N_train > D this is scikit-learn's `score` and the model's own likelihood. With
//! N_train ≤ D they average the noise over the N_train − M directions the training rows span
//! (the model's `noise_variance`), which overstates the noise in the D − N_train directions
//! they do not span by about D / N_train: held-out rows then look best explained by many
//! components (on 40×400 data of rank 2, 30 of them). The maximum-likelihood σ² recovers the
//! rank (tests/choosing.rs).

use faer::{Mat, MatRef};
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

use crate::choose::choice::{ComponentChoice, Criterion, Curve, SampleSpectrum, largest_of};
use crate::data::ChunkSource;
use crate::error::{PcaError, Result};
use crate::model::PcaModel;
use crate::probabilistic::gaussian::{NoiseAverage, Units};
use crate::real::{ChunkRef, Real};

/// The fold of each of `n` rows: a seeded random permutation dealt round-robin, so fold sizes
/// differ by at most one.
pub(crate) fn assign_folds(n: usize, folds: usize, seed: u64) -> Vec<u32> {
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(&mut ChaCha8Rng::seed_from_u64(seed));
    let mut fold_of = vec![0u32; n];
    for (position, &row) in order.iter().enumerate() {
        fold_of[row] = (position % folds) as u32;
    }
    fold_of
}

/// An error unless `folds` folds of `n` rows leave every training set at least 2 rows, more
/// than `ddof`, and every fold a held-out row.
pub(crate) fn check_folds(n: usize, folds: usize, ddof: usize) -> Result<()> {
    let cannot = |reason: String| PcaError::CannotChoose {
        criterion: "cv",
        reason,
    };
    if folds > n {
        return Err(cannot(format!(
            "{folds} folds of {n} sample(s) leave a fold with no held-out sample; use at most \
             {n} folds"
        )));
    }
    let training = n - n.div_ceil(folds.max(1));
    if training < 2 || training <= ddof {
        return Err(cannot(format!(
            "{folds} folds of {n} sample(s) leave {training} training sample(s) in a fold; \
             each fold needs at least 2 to fit"
        )));
    }
    Ok(())
}

/// Which rows of a fold a [`FoldRows`] hands out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FoldSide {
    /// Every row not in the fold: what the fold's model is fitted to.
    Training,
    /// The fold's own rows: what its model is scored on.
    HeldOut,
}

/// The columns of `n_features` other than the `constant` ones, in order; `None` when that is
/// all of them.
pub(crate) fn kept_columns(n_features: usize, constant: &[usize]) -> Option<Vec<usize>> {
    (!constant.is_empty()).then(|| (0..n_features).filter(|j| !constant.contains(j)).collect())
}

/// The rows of a source on one side of one fold, and the kept columns, as a source of their
/// own (same order on every pass): each chunk's selected rows, gathered in their stored type.
pub(crate) struct FoldRows<'a> {
    source: &'a mut dyn ChunkSource,
    fold_of: &'a [u32],
    fold: u32,
    side: FoldSide,
    columns: Option<&'a [usize]>,
}

impl<'a> FoldRows<'a> {
    /// The rows of `fold` on `side`, with the `columns` given (all when `None`).
    pub(crate) fn new(
        source: &'a mut dyn ChunkSource,
        fold_of: &'a [u32],
        fold: usize,
        side: FoldSide,
        columns: &'a Option<Vec<usize>>,
    ) -> Self {
        FoldRows {
            source,
            fold_of,
            fold: fold as u32,
            side,
            columns: columns.as_deref(),
        }
    }
}

impl ChunkSource for FoldRows<'_> {
    fn n_features(&self) -> usize {
        self.columns
            .map_or_else(|| self.source.n_features(), <[usize]>::len)
    }

    fn pass(&mut self, visit: &mut dyn FnMut(ChunkRef<'_>) -> Result<()>) -> Result<()> {
        let mut first = 0;
        let (fold_of, fold, held_out) = (self.fold_of, self.fold, self.side == FoldSide::HeldOut);
        let columns = self.columns;
        // A row beyond the first pass's count is in no fold: the check below reports it.
        let wanted = |row: usize| (fold_of.get(row) == Some(&fold)) == held_out;
        self.source.pass(&mut |chunk| {
            let rows: Vec<usize> = (0..chunk.nrows()).filter(|&i| wanted(first + i)).collect();
            first += chunk.nrows();
            if first > fold_of.len() {
                return Err(PcaError::Source(
                    "the source gave more rows on a later pass than on the first".into(),
                ));
            }
            match chunk {
                ChunkRef::F32(m) => visit_rows(m, &rows, columns, visit),
                ChunkRef::F64(m) => visit_rows(m, &rows, columns, visit),
            }
        })
    }
}

/// Hands `rows` of `m`, in `columns` (all when `None`), to `visit`: the chunk itself when it
/// is all of it.
fn visit_rows<T: Real>(
    m: MatRef<'_, T>,
    rows: &[usize],
    columns: Option<&[usize]>,
    visit: &mut dyn FnMut(ChunkRef<'_>) -> Result<()>,
) -> Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    let gathered = match columns {
        None if rows.len() == m.nrows() => return visit(ChunkRef::from(m)),
        None => Mat::from_fn(rows.len(), m.ncols(), |i, j| m[(rows[i], j)]),
        Some(cols) => Mat::from_fn(rows.len(), cols.len(), |i, j| m[(rows[i], cols[j])]),
    };
    visit(ChunkRef::from(gathered.as_ref()))
}

/// One fold's held-out rows scored for every number of components M = 1..=K by the fold's
/// model with all its K components ([`ProbabilisticPca::score_by_component_count`], with the
/// noise averaged over all D − M directions), summed over the rows.
pub(crate) struct FoldScores {
    rows: usize,
    totals: Vec<Option<f64>>,
}

impl FoldScores {
    pub(crate) fn new() -> Self {
        FoldScores {
            rows: 0,
            totals: Vec::new(),
        }
    }

    /// Adds a chunk of held-out rows.
    pub(crate) fn add(&mut self, model: &PcaModel, chunk: ChunkRef<'_>) -> Result<()> {
        let ppca = model.probabilistic();
        let floor = rounding(model);
        let (units, average) = (Units::Standardized, NoiseAverage::Ambient { floor });
        let means = match chunk {
            ChunkRef::F32(m) => ppca.score_by_component_count_with(m, units, average)?,
            ChunkRef::F64(m) => ppca.score_by_component_count_with(m, units, average)?,
        };
        let rows = chunk.nrows() as f64;
        // Entry 0 is M = 0; the candidates start at 1.
        let totals = means[1..].iter().map(|m| m.map(|m| m * rows));
        if self.rows == 0 {
            self.totals = totals.collect();
        } else {
            for (sum, t) in self.totals.iter_mut().zip(totals) {
                *sum = sum.zip(t).map(|(a, b)| a + b);
            }
        }
        self.rows += chunk.nrows();
        Ok(())
    }

    /// The held-out log-likelihood summed over the rows for M = 1..=`up_to`; `None` past K and
    /// where λ_M is a rounded zero of the fold's spectrum (a component of no variance).
    pub(crate) fn totals(&self, model: &PcaModel, up_to: usize) -> Vec<Option<f64>> {
        let values = model.explained_variance();
        let rounding = rounding(model);
        (1..=up_to)
            .map(|m| {
                let total = *self.totals.get(m - 1)?;
                (*values.get(m - 1)? > rounding).then_some(total)?
            })
            .collect()
    }
}

/// The largest eigenvalue of a fold's model that is a rounded zero
/// ([`SampleSpectrum::rounding`]).
fn rounding(model: &PcaModel) -> f64 {
    SampleSpectrum {
        eigenvalues: model.explained_variance(),
        n_samples: model.n_samples(),
        n_features: model.n_features(),
        ddof: model.ddof(),
        total_variance: model.total_variance(),
    }
    .rounding()
}

/// The M of largest mean held-out log-likelihood per sample over `n` rows, from every fold's
/// totals; candidates are the M proper in every fold. The curve is the mean per sample.
pub(crate) fn choose_by_likelihood(
    per_fold: &[Vec<Option<f64>>],
    n: usize,
    criterion: Criterion,
    max: usize,
) -> Result<(ComponentChoice, Curve)> {
    let len = per_fold.iter().map(Vec::len).min().unwrap_or(0);
    let mean: Vec<Option<f64>> = (0..len)
        .map(|i| {
            per_fold
                .iter()
                .map(|fold| fold[i])
                .sum::<Option<f64>>()
                .map(|total| total / n as f64)
        })
        .collect();
    let choice = largest_of(criterion, &mean, max).ok_or_else(|| PcaError::CannotChoose {
        criterion: "cv",
        reason: "no number of components gives every fold a proper model (the training \
                 folds are too small, or their variance is in one direction)"
            .into(),
    })?;
    Ok((choice, Curve::maximized(mean).resized(max)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::InMemory;

    fn fixture(name: &str) -> serde_json::Value {
        let path = format!(
            "{}/../../fixtures/choose/{name}.json",
            env!("CARGO_MANIFEST_DIR")
        );
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    fn matrix(v: &serde_json::Value) -> Mat<f64> {
        let rows = v.as_array().unwrap();
        let cols = rows[0].as_array().unwrap().len();
        Mat::from_fn(rows.len(), cols, |i, j| rows[i][j].as_f64().unwrap())
    }

    /// The held-out log-likelihood of every M equals the reference's dense Gaussian (relative
    /// 1e-9), tall (where it is scikit-learn's `PCA(n_components=M).fit(train).score(test)`)
    /// and wide (N < D), by every exact solver: `fixtures/choose/heldout_*.json`
    /// (`fixtures/generate_choose.py`).
    #[test]
    fn held_out_likelihoods_equal_scikit_learns_score() {
        use crate::options::{ComponentCount, Solver};
        use crate::params::PcaBuilder;
        for name in ["heldout_tall", "heldout_wide"] {
            let case = fixture(name);
            let (train, test) = (matrix(&case["train"]), matrix(&case["test"]));
            let reference = case["score"].as_array().unwrap();
            for solver in [Solver::Covariance, Solver::Gram, Solver::Svd] {
                let model = PcaBuilder::new()
                    .components(ComponentCount::All)
                    .solver(solver)
                    .build()
                    .unwrap()
                    .fit(train.as_ref())
                    .unwrap();
                let mut scores = FoldScores::new();
                // In two chunks, as a held-out pass hands them over.
                let half = test.nrows() / 2;
                for (start, rows) in [(0, half), (half, test.nrows() - half)] {
                    let chunk = test.as_ref().subrows(start, rows);
                    scores.add(&model, ChunkRef::from(chunk)).unwrap();
                }
                let ours = scores.totals(&model, reference.len());
                let mut compared = 0;
                for (i, r) in reference.iter().enumerate() {
                    let Some(r) = r.as_f64() else { continue };
                    let o = ours[i].unwrap_or_else(|| panic!("{name}, {solver}: M {}", i + 1))
                        / test.nrows() as f64;
                    assert!(
                        (o - r).abs() <= 1e-9 * r.abs(),
                        "{name}, {solver}: M {}: {o} vs the reference's {r}",
                        i + 1
                    );
                    compared += 1;
                }
                assert!(compared >= 5, "{name}: {compared} compared");
            }
        }
    }

    #[test]
    fn folds_are_balanced_seeded_and_cover_every_row() {
        let folds = assign_folds(23, 5, 9);
        for f in 0..5 {
            let size = folds.iter().filter(|&&g| g == f).count();
            assert!(size == 4 || size == 5, "fold {f}: {size}");
        }
        assert_eq!(folds, assign_folds(23, 5, 9));
        assert_ne!(folds, assign_folds(23, 5, 10));
    }

    #[test]
    fn too_many_folds_are_an_error() {
        let message = |n, folds, ddof| check_folds(n, folds, ddof).unwrap_err().to_string();
        assert!(check_folds(10, 5, 1).is_ok());
        assert!(
            message(4, 5, 1).ends_with(
                "5 folds of 4 sample(s) leave a fold with no held-out sample; use at most 4 folds"
            ),
            "{}",
            message(4, 5, 1)
        );
        // Two rows in two folds leave one training row.
        assert!(message(2, 2, 0).contains("leave 1 training sample(s) in a fold"));
        // Three rows in two folds leave one training row in the larger fold.
        assert!(message(3, 2, 1).contains("leave 1 training sample(s) in a fold"));
        assert!(check_folds(3, 3, 1).is_ok());
        assert!(check_folds(6, 3, 1).is_ok());
    }

    /// The two sides of a fold split the rows between them, in order, whatever the chunks.
    #[test]
    fn the_sides_of_a_fold_partition_the_rows() {
        let x = Mat::from_fn(11, 2, |i, j| (i * 10 + j) as f64);
        let folds = assign_folds(11, 3, 1);
        for chunk in [1, 4, 11] {
            let mut seen = Vec::new();
            for side in [FoldSide::Training, FoldSide::HeldOut] {
                let mut source = InMemory::new(x.as_ref(), chunk);
                let mut rows = FoldRows::new(&mut source, &folds, 2, side, &None);
                rows.pass(&mut |c| {
                    let ChunkRef::F64(m) = c else { panic!("f64") };
                    for i in 0..m.nrows() {
                        let row = (m[(i, 0)] / 10.0) as usize;
                        assert_eq!(folds[row] == 2, side == FoldSide::HeldOut);
                        seen.push(row);
                    }
                    Ok(())
                })
                .unwrap();
            }
            seen.sort();
            assert_eq!(seen, (0..11).collect::<Vec<_>>());
        }
        // Kept columns only: here the second, which holds row·10 + 1.
        let kept = kept_columns(2, &[0]);
        assert_eq!(kept.as_deref(), Some(&[1][..]));
        let mut source = InMemory::new(x.as_ref(), 4);
        let mut rows = FoldRows::new(&mut source, &folds, 0, FoldSide::HeldOut, &kept);
        assert_eq!(rows.n_features(), 1);
        rows.pass(&mut |c| {
            let ChunkRef::F64(m) = c else { panic!("f64") };
            assert_eq!(m.ncols(), 1);
            for i in 0..m.nrows() {
                assert_eq!(m[(i, 0)] % 10.0, 1.0);
            }
            Ok(())
        })
        .unwrap();
    }
}
