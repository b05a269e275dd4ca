//! Fitting sparse data, never densified: [`PcaParams::fit_sparse`] (a CSR matrix in memory),
//! [`PcaParams::fit_sparse_source`] (a re-readable [`SparseSource`], streamed), and
//! [`PcaModel::transform_sparse`]. The mean is subtracted inside every product (see
//! [`crate::sparse`]); with [`Centre::None`] nothing is subtracted (truncated SVD).

use faer::Mat;

use crate::collective::SingleProcess;
use crate::error::{PcaError, Result};
use crate::model::PcaModel;
use crate::moments::MomentAccumulator;
use crate::moments::columns::ColumnAccumulator;
use crate::options::{Centre, ComponentCount, MissingValues, Solver};
use crate::params::PcaParams;
use crate::plan::SolverPlan;
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
        if self.missing() == MissingValues::Em {
            return Err(PcaError::SolverUnsuitable {
                solver: "em",
                reason: "sparse data has no missing values: its absent entries are zeros".into(),
            });
        }
        if let ComponentCount::CrossValidated { .. } = self.components() {
            return Err(PcaError::CannotChoose {
                criterion: "cv",
                reason: "cross-validation of sparse data is not supported; choose with mle or \
                         gavish-donoho"
                    .into(),
            });
        }
        let d = source.n_features();
        let mut columns = ColumnAccumulator::new(d);
        let mut nnz = 0;
        source.pass(&mut |block| {
            nnz += block.nnz();
            columns.push_sparse(block)
        })?;
        let n = columns.n;
        self.check_shape(n, d)?;
        let solver = self.plan_sparse(n, d, nnz).solver;
        match solver {
            Solver::Gram | Solver::Svd | Solver::Auto => Err(PcaError::SolverUnsuitable {
                solver: solver.name(),
                reason: "it needs the data dense; sparse data is fitted by covariance, \
                         randomized, power or em"
                    .into(),
            }),
            Solver::Covariance => {
                let mut acc = MomentAccumulator::new(d);
                source.pass(&mut |block| acc.push_sparse(block))?;
                let moments = acc.finish()?;
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
                    self.fit_iterative(Rows::Sparse(source), prep, n, solver, &SingleProcess)
                }
                Centre::None => {
                    let raw = self.raw_preprocessing(&columns);
                    let model =
                        self.fit_iterative(Rows::Sparse(source), raw, n, solver, &SingleProcess)?;
                    self.uncentred_model(model, &columns)
                }
            },
        }
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
