//! Fitting without centring ([`Centre::None`]): the truncated SVD of the raw matrix, as
//! scikit-learn's `TruncatedSVD`. Every solver runs on the raw data with a zero mean (the
//! covariance route on the raw second moments, `Σ x xᵀ = scatter + N μμᵀ`, a sum of
//! non-negative terms); the model's variances are then those `TruncatedSVD` reports (see
//! [`crate::PcaBuilder::centre`]).

use faer::{Mat, MatRef};

use crate::collective::SingleProcess;
use crate::data::{ChunkSource, InMemory};
use crate::error::{PcaError, Result};
use crate::model::PcaModel;
use crate::moments::columns::ColumnAccumulator;
use crate::moments::{MomentAccumulator, MomentParts, Moments};
use crate::options::{Scaling, Solver};
use crate::params::PcaParams;
use crate::preprocess::Preprocessing;
use crate::real::{ChunkRef, Real};
use crate::solver::{self, Problem, Rows};

impl PcaParams {
    /// [`PcaParams::fit`] without centring.
    pub(crate) fn fit_uncentred<T: Real>(&self, x: MatRef<'_, T>) -> Result<PcaModel> {
        let (n, d) = (x.nrows(), x.ncols());
        self.check_shape(n, d)?;
        let mut columns = ColumnAccumulator::new(d);
        columns.push(x)?;
        let solver = self.plan(n, d).solver;
        let raw = self.raw_preprocessing(&columns);
        let model = match solver {
            Solver::Covariance => {
                let mut acc = MomentAccumulator::new(d).with_precision(self.precision());
                acc.push(x)?;
                return self.uncentred_from_moments(&acc.finish()?);
            }
            Solver::Randomized | Solver::Power | Solver::Em => self.fit_iterative(
                Rows::Dense(&mut InMemory::new(x, n)),
                raw,
                n,
                solver,
                &SingleProcess,
            )?,
            Solver::Gram | Solver::Svd | Solver::Auto => {
                let problem = Problem {
                    data: ChunkRef::from(x),
                    mean: &raw.mean,
                    scale: None,
                    ddof: self.ddof(),
                    n_components: self.wanted_vectors(n.min(d)),
                };
                let spectrum = match solver {
                    Solver::Gram => solver::gram::solve(&problem)?,
                    _ => solver::svd::solve(&problem)?,
                };
                self.model(spectrum, raw, n, solver, None)?
            }
        };
        self.uncentred_model(model, &columns)
    }

    /// [`PcaParams::fit_source`] without centring.
    pub(crate) fn fit_uncentred_source(&self, source: &mut dyn ChunkSource) -> Result<PcaModel> {
        let d = source.n_features();
        let mut columns = ColumnAccumulator::new(d);
        source.pass(&mut |chunk| columns.push_chunk(chunk))?;
        let n = columns.n;
        self.check_shape(n, d)?;
        let solver = self.plan(n, d).solver;
        match solver {
            Solver::Covariance => {
                let acc = MomentAccumulator::from_source(source, self.precision())?;
                self.uncentred_from_moments(&acc.finish()?)
            }
            Solver::Randomized | Solver::Power | Solver::Em => {
                let raw = self.raw_preprocessing(&columns);
                let model =
                    self.fit_iterative(Rows::Dense(source), raw, n, solver, &SingleProcess)?;
                self.uncentred_model(model, &columns)
            }
            Solver::Gram | Solver::Svd | Solver::Auto => {
                // They need the data whole, as `fit_source` gives it them.
                let mut whole = Mat::<f64>::zeros(n, d);
                let mut row = 0;
                source.pass(&mut |chunk| {
                    let rows = chunk.nrows();
                    if row + rows > n {
                        return Err(PcaError::Source(
                            "the source gave more rows on a later pass than on the first".into(),
                        ));
                    }
                    let mut part = whole.as_mut().subrows_mut(row, rows);
                    match chunk {
                        ChunkRef::F32(m) => {
                            part.copy_from(Mat::from_fn(rows, d, |i, j| f64::from(m[(i, j)])))
                        }
                        ChunkRef::F64(m) => part.copy_from(m),
                    }
                    row += rows;
                    Ok(())
                })?;
                self.with_solver(solver).fit_uncentred(whole.as_ref())
            }
        }
    }

    /// The covariance route without centring, from the (centred) moments of the data.
    pub(crate) fn uncentred_from_moments(&self, moments: &Moments) -> Result<PcaModel> {
        let (n, d) = (moments.n_samples(), moments.n_features());
        let mean = moments.mean();
        let scatter = moments.scatter();
        let columns = ColumnAccumulator {
            n,
            mean: mean.to_vec(),
            sum_sq: (0..d).map(|j| scatter[(j, j)].max(0.0)).collect(),
        };
        // Σ x xᵀ = Σ (x − μ)(x − μ)ᵀ + N μμᵀ: non-negative terms added, nothing cancels.
        // n·(μ_a μ_b), the product first: the same bits at (a, b) and (b, a).
        let second = Mat::from_fn(d, d, |a, b| {
            scatter[(a, b)] + n as f64 * (mean[a] * mean[b])
        });
        let raw = Moments::from_parts(MomentParts {
            n_samples: n,
            mean: vec![0.0; d],
            scatter: second,
            precision: moments.precision(),
        })?;
        let model = self.fit_resolved_moments(&raw, Solver::Covariance, None)?;
        self.uncentred_model(model, &columns)
    }

    /// Zero mean, the raw sums of squares `Σ x² = Σ (x − μ)² + N μ²`: what the solvers see
    /// of uncentred data.
    pub(crate) fn raw_preprocessing(&self, columns: &ColumnAccumulator) -> Preprocessing {
        let n = columns.n as f64;
        let sum_sq: Vec<f64> = (columns.mean.iter().zip(&columns.sum_sq))
            .map(|(m, s)| s + n * m * m)
            .collect();
        let d = columns.mean.len();
        Preprocessing::from_sums(
            vec![0.0; d],
            &sum_sq,
            columns.n,
            Scaling::Centre,
            self.ddof(),
        )
    }

    /// The model of the raw data (zero mean, eigenvalues σ²/(N − ddof)) with `TruncatedSVD`'s
    /// variances: each component's codes' variance `(σ² − N (μᵀv)²)/(N − ddof)`, as a fraction
    /// of the data's total (centred) variance.
    pub(crate) fn uncentred_model(
        &self,
        raw: PcaModel,
        columns: &ColumnAccumulator,
    ) -> Result<PcaModel> {
        let mut parts = raw.to_parts();
        let n = columns.n as f64;
        let denom = (columns.n - self.ddof()) as f64;
        let total: f64 = columns.sum_sq.iter().sum::<f64>() / denom;
        for m in 0..parts.components.nrows() {
            let along: f64 = (0..columns.mean.len())
                .map(|j| columns.mean[j] * parts.components[(m, j)])
                .sum();
            let sigma = parts.singular_values[m];
            let variance = ((sigma * sigma - n * along * along) / denom).max(0.0);
            parts.explained_variance[m] = variance;
            parts.explained_variance_ratio[m] = if total > 0.0 { variance / total } else { 0.0 };
        }
        parts.total_variance = total;
        // The variance left outside the kept directions (never negative: by Ky Fan, variances
        // along orthonormal directions sum to at most the trace), spread over the others among
        // min(N, D), so that the model's variances add up as every model's do.
        let (m, max) = (parts.components.nrows(), columns.n.min(columns.mean.len()));
        let kept: f64 = parts.explained_variance.iter().sum();
        parts.noise_variance = if m < max {
            (total - kept).max(0.0) / (max - m) as f64
        } else {
            0.0
        };
        PcaModel::from_parts(parts)
    }
}
