//! Fitting sparse data, never densified: [`PcaParams::fit_sparse`] (a CSR matrix in memory),
//! [`PcaParams::fit_sparse_source`] (a re-readable [`SparseSource`], streamed), and
//! [`PcaModel::transform_sparse`]. The mean is subtracted inside every product (see
//! [`crate::sparse`]); with [`Centre::None`] nothing is subtracted (truncated SVD).

use faer::Mat;

use crate::collective::{Collective, SingleProcess, agree_end, agree_width};
use crate::error::{PcaError, Result};
use crate::fit::cv_across_processes;
use crate::model::PcaModel;
use crate::moments::MomentAccumulator;
use crate::moments::columns::ColumnAccumulator;
use crate::options::{
    Centre, ComponentCount, IterativeOptions, MissingValues, RandomizedMethod, Solver,
};
use crate::params::PcaParams;
use crate::plan::SolverPlan;
use crate::plan::{SPARSE_MAX_PASSES, SPARSE_TOLERANCE};
use crate::preprocess::Preprocessing;
use crate::solver::Rows;
use crate::sparse::csr::CsrChunk;
use crate::sparse::products::project_into;
use crate::sparse::source::{SparseInMemory, SparseSource};

/// Rows per block when a CSR matrix in memory is fitted: views, nothing is copied; the blocks
/// bound the covariance route's pieces and the products' split between threads.
const IN_MEMORY_BLOCK_ROWS: usize = 65_536;

impl PcaParams {
    /// Fits a model to a sparse N×D matrix in memory, never densified (see
    /// [`Self::fit_sparse_source`]).
    ///
    /// ```
    /// use principal::sparse::CsrRef;
    /// use principal::{faer::mat, ComponentCount, PcaBuilder};
    /// // The houses example with its zeros stored sparsely: the same model as dense.
    /// let dense = mat![[10.0, 10.0], [2.0, 2.0], [0.0, 0.0], [1.0, 1.0], [5.0, 5.0]];
    /// let sparse = CsrRef::new(2, &[0, 2, 4, 4, 6, 8], &[0u32, 1, 0, 1, 0, 1, 0, 1],
    ///     &[10.0, 10.0, 2.0, 2.0, 1.0, 1.0, 5.0, 5.0])?;
    /// let params = PcaBuilder::new().components(ComponentCount::Fixed(1)).build()?;
    /// let (a, b) = (params.fit(dense.as_ref())?, params.fit_sparse(sparse.into())?);
    /// assert!((a.explained_variance()[0] - b.explained_variance()[0]).abs() < 1e-12);
    /// let codes = b.transform_sparse(sparse.into())?;
    /// assert!((codes[(0, 0)] - a.transform(dense.as_ref())?[(0, 0)]).abs() < 1e-12);
    /// # Ok::<(), principal::PcaError>(())
    /// ```
    pub fn fit_sparse(&self, x: CsrChunk<'_>) -> Result<PcaModel> {
        crate::kernel::parallel::fix_faer_split();
        self.fit_sparse_source(&mut SparseInMemory::new(x, IN_MEMORY_BLOCK_ROWS))
    }

    /// The plan for sparse `n_samples × n_features` data with `nnz` entries
    /// ([`SolverPlan::sparse`]).
    pub fn plan_sparse(&self, n_samples: usize, n_features: usize, nnz: usize) -> SolverPlan {
        let k = match self.components() {
            ComponentCount::Fixed(k) => Some(k),
            _ => None,
        };
        SolverPlan::sparse(
            self.solver(),
            n_samples,
            n_features,
            nnz,
            k,
            self.memory_limit(),
        )
    }

    /// Fits a model to sparse rows read block by block from `source`, which must yield the same
    /// rows on every pass, never densifying them: a first pass of column moments (and the
    /// count of entries, for the plan), then the covariance route (one more pass: the entries'
    /// cross-products, D×D) or an iterative solver (its passes of sparse × dense products).
    /// Gram and svd need the data dense and are refused; so are missing values (a sparse
    /// matrix's absent entries are zeros) and cross-validation (not done for sparse data).
    pub fn fit_sparse_source(&self, source: &mut dyn SparseSource) -> Result<PcaModel> {
        crate::kernel::parallel::fix_faer_split();
        if self.missing() == MissingValues::Em {
            return Err(no_missing_values());
        }
        if let ComponentCount::CrossValidated { .. } = self.components() {
            return Err(PcaError::CannotChoose {
                criterion: "cv",
                reason: "cross-validation of sparse data is not supported; choose with mle or \
                         gavish-donoho"
                    .into(),
            });
        }
        // One process is the distributed fit's case of one rank.
        let d = source.n_features();
        self.fit_sparse_across(source, d, &SingleProcess)
    }
}

impl PcaParams {
    /// Fits a model to the sparse rows of every process's `source` together, as one process
    /// holding all of them would (to rounding): every rank calls this with its own rows (a
    /// range of the file's, in rank order) and gets the same model, never densified.
    ///
    /// The ranks combine what they accumulated as [`Self::fit_distributed`] does: the column
    /// moments (and the count of entries, for the plan) in one reduction, then the covariance
    /// route's moments in one more, or one D×L block per pass of the iterative solvers (the
    /// sparse products reduced across ranks). Without centring, the raw moments follow from the
    /// combined centred ones. Gram, svd, missing values and cross-validation are refused as in
    /// [`Self::fit_sparse_source`]. A failure on any rank stops every rank with its message.
    /// With one process this is [`Self::fit_sparse_source`].
    pub fn fit_sparse_distributed(
        &self,
        source: &mut dyn SparseSource,
        collective: &dyn Collective,
    ) -> Result<PcaModel> {
        crate::kernel::parallel::fix_faer_split();
        if collective.size() == 1 {
            return self.fit_sparse_source(source);
        }
        // Refused before any row is read: every rank sees the same parameters.
        if self.missing() == MissingValues::Em {
            return Err(no_missing_values());
        }
        if let ComponentCount::CrossValidated { .. } = self.components() {
            return Err(cv_across_processes());
        }
        if let Solver::Gram | Solver::Svd = self.solver() {
            return Err(needs_dense(self.solver()));
        }
        let mut watched = WatchedSparse { source, collective };
        let d = agree_width(collective, watched.n_features())?;
        let model = self.fit_sparse_across(&mut watched, d, collective);
        agree_end(collective, model)
    }

    fn fit_sparse_across(
        &self,
        source: &mut dyn SparseSource,
        d: usize,
        collective: &dyn Collective,
    ) -> Result<PcaModel> {
        let mut columns = ColumnAccumulator::new(d);
        let mut nnz = 0;
        let pass = source.pass(&mut |block| {
            nnz += block.nnz();
            columns.push_sparse(block)
        });
        let columns = ColumnAccumulator::reduce(pass.map(|()| columns), collective)?;
        // A count: exact in f64 below 2⁵³.
        let mut entries = [nnz as f64];
        collective.sum(&mut entries);
        let (n, nnz) = (columns.n, entries[0] as usize);
        self.check_shape(n, d)?;
        let solver = self.plan_sparse(n, d, nnz).solver;
        let tuned;
        let this = match self.sparse_defaults(solver) {
            Some(params) => {
                tuned = params;
                &tuned
            }
            None => self,
        };
        match solver {
            Solver::Gram | Solver::Svd | Solver::Auto => Err(needs_dense(solver)),
            Solver::Covariance => {
                let mut acc = MomentAccumulator::new(d);
                let pass = source.pass(&mut |block| acc.push_sparse(block));
                let moments =
                    MomentAccumulator::reduce(pass.map(|()| acc), collective)?.finish()?;
                match self.centre() {
                    Centre::Mean => self.fit_resolved_moments(&moments, solver, None),
                    Centre::None => self.uncentred_from_moments(&moments),
                }
            }
            Solver::Randomized | Solver::Power | Solver::Em => match self.centre() {
                Centre::Mean => {
                    let prep = Preprocessing::from_sums(
                        columns.mean,
                        &columns.sum_sq,
                        n,
                        self.scaling(),
                        self.ddof(),
                    );
                    this.fit_iterative(Rows::Sparse(source), prep, n, solver, collective)
                }
                Centre::None => {
                    let raw = self.raw_preprocessing(&columns);
                    let model =
                        this.fit_iterative(Rows::Sparse(source), raw, n, solver, collective)?;
                    self.uncentred_model(model, &columns)
                }
            },
        }
    }
}

/// A rank's sparse rows, checked between blocks for another rank's failure: the pass stops
/// with [`PcaError::Stopped`] within a block of it (as `collective::Watched` does dense chunks).
struct WatchedSparse<'a> {
    source: &'a mut dyn SparseSource,
    collective: &'a dyn Collective,
}

impl SparseSource for WatchedSparse<'_> {
    fn n_features(&self) -> usize {
        self.source.n_features()
    }

    fn pass(&mut self, visit: &mut dyn FnMut(CsrChunk<'_>) -> Result<()>) -> Result<()> {
        let collective = self.collective;
        if collective.failure_announced() {
            return Err(PcaError::Stopped);
        }
        self.source.pass(&mut |block| {
            if collective.failure_announced() {
                return Err(PcaError::Stopped);
            }
            visit(block)
        })
    }
}

impl PcaParams {
    /// The parameters auto's randomized fit of sparse data runs with: block Krylov until its
    /// error estimate is at most [`SPARSE_TOLERANCE`] (at most [`SPARSE_MAX_PASSES`] passes),
    /// when the caller chose auto and gave neither a tolerance nor a pass count. `None` where
    /// the parameters stand as given.
    ///
    /// Why: single-cell spectra have a handful of clear components over a noise floor that
    /// decays slowly (λ₅₀/λ₅₁ ≈ 1.005 on the benchmark's matrix), and the passes tuned for
    /// scikit-learn's randomized default (4) left the 50th eigenvalue 11% off arpack's and the
    /// error estimate at 1e-2. To 1e-5 (18 passes there) the eigenvalues agree with arpack's to
    /// 3e-8 relative and the leading eleven components to sin θ 3e-8.
    fn sparse_defaults(&self, solver: Solver) -> Option<PcaParams> {
        let options = self.iterative();
        let untouched = options.tolerance.is_none() && options.power_iterations.is_none();
        (self.solver() == Solver::Auto && solver == Solver::Randomized && untouched).then(|| {
            let mut params = self.clone();
            params.set_iterative(IterativeOptions {
                tolerance: Some(SPARSE_TOLERANCE),
                max_iterations: options.max_iterations.min(SPARSE_MAX_PASSES),
                randomized_method: RandomizedMethod::BlockKrylov,
                ..options
            });
            params
        })
    }
}

impl PcaModel {
    /// Codes of sparse rows, `Z = X V − 1 (μᵀV)` (V the components divided by the scale when
    /// standardized), never densified; whitened as [`PcaModel::transform`] whitens.
    pub fn transform_sparse(&self, x: CsrChunk<'_>) -> Result<Mat<f64>> {
        let (d, m) = (self.n_features(), self.n_components());
        if x.ncols() != d {
            return Err(PcaError::FeatureMismatch {
                expected: d,
                found: x.ncols(),
            });
        }
        if let Some((row, column, value)) = x.first_non_finite() {
            return Err(PcaError::NonFinite { row, column, value });
        }
        let components = self.components();
        let scale = self.scale();
        let p_rows: Vec<f64> = (0..d)
            .flat_map(|j| {
                let s = scale.map_or(1.0, |s| s[j]);
                (0..m).map(move |c| components[(c, j)] / s)
            })
            .collect();
        let mean = self.mean();
        let shift: Vec<f64> = (0..m)
            .map(|c| (0..d).map(|j| mean[j] * p_rows[j * m + c]).sum())
            .collect();
        let mut codes = vec![0.0; x.nrows() * m];
        project_into(x, &p_rows, &shift, &mut codes);
        let mut z = Mat::from_fn(x.nrows(), m, |i, c| codes[i * m + c]);
        self.whiten(z.as_mut());
        Ok(z)
    }
}

/// `--missing em` on sparse data: its absent entries are zeros, not missing.
fn no_missing_values() -> PcaError {
    PcaError::SolverUnsuitable {
        solver: "em",
        reason: "sparse data has no missing values: its absent entries are zeros".into(),
    }
}

/// Gram and svd (and an unresolved auto) on sparse data.
fn needs_dense(solver: Solver) -> PcaError {
    PcaError::SolverUnsuitable {
        solver: solver.name(),
        reason: "it needs the data dense; sparse data is fitted by covariance, randomized, \
                 power or em"
            .into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::{IterativeOptions, Scaling};
    use crate::params::PcaBuilder;
    use crate::sparse::products::tests::{grouped_csr, random_csr};

    /// Largest difference between two models' components (signs fixed by the model) and
    /// explained variances, relative to the largest variance.
    fn distance(a: &PcaModel, b: &PcaModel) -> f64 {
        let top = a.explained_variance()[0].max(f64::MIN_POSITIVE);
        let values = (a.explained_variance().iter().zip(b.explained_variance()))
            .map(|(x, y)| (x - y).abs() / top)
            .fold(0.0, f64::max);
        let ratios = (a
            .explained_variance_ratio()
            .iter()
            .zip(b.explained_variance_ratio()))
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max);
        values
            .max(ratios)
            .max((a.components() - b.components()).norm_max())
    }

    /// Tall, wide and rank-deficient sparse matrices (a repeated column), centred and
    /// standardized: the covariance route and the randomized solver (to a tight tolerance) on
    /// the CSR rows give the dense fit's model; so does transform.
    #[test]
    fn sparse_fits_give_the_dense_model_on_every_route() {
        for (n, d, density, k) in [(3000, 15, 0.1, 3), (40, 120, 0.05, 4), (200, 9, 0.3, 2)] {
            let (csr, mut dense) = random_csr(n, d, density, 17);
            let csr = if d == 9 {
                // Column 8 repeats column 0: rank-deficient.
                let mut copy = crate::sparse::csr::Csr::<f64, u32>::new(d);
                for i in 0..n {
                    let (idx, val) = csr.as_ref().row(i);
                    let mut row: Vec<(usize, f64)> = (idx.iter().zip(val))
                        .filter(|(j, _)| **j != 8)
                        .map(|(j, v)| (*j as usize, *v))
                        .collect();
                    dense[(i, 8)] = dense[(i, 0)];
                    if dense[(i, 0)] != 0.0 {
                        row.push((8, dense[(i, 0)]));
                    }
                    copy.push_row(&row).unwrap();
                }
                copy
            } else {
                csr
            };
            for scaling in [Scaling::Centre, Scaling::Standardize] {
                let builder = PcaBuilder::new()
                    .components(ComponentCount::Fixed(k))
                    .scaling(scaling);
                let exact = builder.clone().solver(Solver::Svd).build().unwrap();
                let want = exact.fit(dense.as_ref()).unwrap();
                let covariance = builder.clone().solver(Solver::Covariance).build().unwrap();
                let got = covariance.fit_sparse(csr.as_chunk()).unwrap();
                assert!(
                    distance(&want, &got) < 1e-10,
                    "{n}×{d} {scaling:?} covariance"
                );
                let randomized = builder
                    .clone()
                    .solver(Solver::Randomized)
                    .iterative(IterativeOptions {
                        tolerance: Some(1e-13),
                        ..Default::default()
                    })
                    .build()
                    .unwrap();
                let got = randomized.fit_sparse(csr.as_chunk()).unwrap();
                assert!(
                    distance(&want, &got) < 1e-8,
                    "{n}×{d} {scaling:?} randomized"
                );
                let codes = got.transform_sparse(csr.as_chunk()).unwrap();
                let dense_codes = got.transform(dense.as_ref()).unwrap();
                assert!(
                    (codes - dense_codes).norm_max() < 1e-10,
                    "{n}×{d} transform"
                );
            }
        }
    }

    /// Auto's fit of sparse data with a single-cell-like spectrum (a few clear components over
    /// a noise floor that decays slowly) agrees with the exact dense fit: every one of 50
    /// eigenvalues to 1e-6 relative, the clear components to 1e-6, and the error estimate
    /// bounds the eigenvalues' error. The passes of dense data's default (4) do not.
    #[test]
    fn auto_fits_sparse_data_with_a_slowly_decaying_spectrum_as_exactly_as_dense() {
        let (n, d, k, clear) = (2000, 1500, 50, 4);
        // Five groups of rows, each with its own raised columns among the first 100.
        let (csr, dense) = grouped_csr((n, d, 0.03, 23), 5, 100, 4.0);
        let builder = PcaBuilder::new().components(ComponentCount::Fixed(k));
        let want = builder
            .clone()
            .solver(Solver::Covariance)
            .build()
            .unwrap()
            .fit(dense.as_ref())
            .unwrap();
        let plan = builder
            .clone()
            .build()
            .unwrap()
            .plan_sparse(n, d, csr.nnz());
        assert_eq!(plan.solver, Solver::Randomized, "{}", plan.reason);
        assert!(
            plan.reason.contains("until its error estimate"),
            "{}",
            plan.reason
        );
        let got = builder.build().unwrap().fit_sparse(csr.as_chunk()).unwrap();
        let (a, b) = (want.explained_variance(), got.explained_variance());
        let worst = (0..k)
            .map(|i| (a[i] - b[i]).abs() / a[i])
            .fold(0.0, f64::max);
        assert!(worst < 1e-6, "eigenvalues {worst:e} relative");
        let report = got.iteration_report().expect("an iterative fit");
        assert!(report.converged && report.error_estimate <= 1e-5);
        let bound = report.error_estimate * a[0];
        assert!((0..k).all(|i| (a[i] - b[i]).abs() <= bound));
        let components =
            (want.components().subrows(0, clear) - got.components().subrows(0, clear)).norm_max();
        assert!(components < 1e-6, "clear components {components:e}");
    }

    /// Without centring, every route gives the top right singular vectors of the raw matrix
    /// (faer's SVD of the dense copy), σ as singular values and the codes' variance as
    /// explained variance.
    #[test]
    fn without_centring_every_route_is_the_raw_matrix_svd() {
        let (n, d, k) = (500, 10, 3);
        let (csr, dense) = random_csr(n, d, 0.3, 23);
        let svd = dense.as_ref().thin_svd().unwrap();
        let builder = PcaBuilder::new()
            .components(ComponentCount::Fixed(k))
            .centre(Centre::None)
            .iterative(IterativeOptions {
                tolerance: Some(1e-13),
                ..Default::default()
            });
        let mut models = Vec::new();
        for solver in [Solver::Covariance, Solver::Randomized] {
            let params = builder.clone().solver(solver).build().unwrap();
            models.push(params.fit_sparse(csr.as_chunk()).unwrap());
            models.push(params.fit(dense.as_ref()).unwrap());
        }
        for solver in [Solver::Svd, Solver::Gram] {
            let params = builder.clone().solver(solver).build().unwrap();
            models.push(params.fit(dense.as_ref()).unwrap());
        }
        let total: f64 = (0..d)
            .map(|j| {
                let m = (0..n).map(|i| dense[(i, j)]).sum::<f64>() / n as f64;
                (0..n).map(|i| (dense[(i, j)] - m).powi(2)).sum::<f64>() / (n - 1) as f64
            })
            .sum();
        for model in &models {
            assert!(model.mean().iter().all(|&m| m == 0.0));
            for c in 0..k {
                let sigma = svd.S()[c];
                let tol = 1e-9 * svd.S()[0];
                assert!(
                    (model.singular_values()[c] - sigma).abs() < tol,
                    "{:?}",
                    model.solver()
                );
                let v = svd.V().col(c);
                let dot: f64 = (0..d).map(|j| v[j] * model.components()[(c, j)]).sum();
                assert!(
                    (dot.abs() - 1.0).abs() < 1e-9,
                    "{:?} component {c}",
                    model.solver()
                );
                let codes: Vec<f64> = (0..n).map(|i| sigma * svd.U()[(i, c)]).collect();
                let mean = codes.iter().sum::<f64>() / n as f64;
                let variance =
                    codes.iter().map(|z| (z - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
                let got = model.explained_variance()[c];
                assert!(
                    (got - variance).abs() < 1e-9 * variance.max(1.0),
                    "{:?}",
                    model.solver()
                );
                assert!((model.explained_variance_ratio()[c] - variance / total).abs() < 1e-9);
            }
        }
    }

    #[test]
    fn gram_and_svd_are_refused_for_sparse_data_and_auto_says_why() {
        let (csr, _) = random_csr(50, 6, 0.2, 1);
        let params = PcaBuilder::new().solver(Solver::Svd).build().unwrap();
        let err = params.fit_sparse(csr.as_chunk()).unwrap_err();
        assert!(err.to_string().contains("needs the data dense"), "{err}");
        let auto = PcaBuilder::new().build().unwrap();
        let model = auto.fit_sparse(csr.as_chunk()).unwrap();
        assert_eq!(model.solver(), Solver::Covariance);
        let plan = auto.plan_sparse(50, 6, csr.nnz());
        assert!(plan.reason.starts_with("sparse, "), "{}", plan.reason);
    }
}
