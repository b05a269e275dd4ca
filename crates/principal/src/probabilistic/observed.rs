//! Rows with missing values (NaN): the posterior of the latent point given the observed
//! entries, the conditional means of the missing ones (imputation), the codes of the completed
//! rows, and the likelihood of what was observed.
//!
//! For a row observing the features O (in the model's units, `xs = (x − μ)/s`), with
//! `W_O = B_Oᵀ diag(a)`, `a_m = √(c_m − σ²)`:
//!
//! ```text
//! M_O = W_Oᵀ W_O + σ² I = diag(a) B_O B_Oᵀ diag(a) + σ² I,   B_O B_Oᵀ = I − B_H B_Hᵀ
//! z | x_O ~ N(M_O⁻¹ W_Oᵀ xs_O, σ² M_O⁻¹)
//! E[xs_H | x_O] = W_H E[z | x_O]                       (the missing features H)
//! log p(x_O) = −½ (|O| log 2π + log det M_O + (|O| − M) log σ² + (‖xs_O‖² − xs_Oᵀ W_O E[z|x_O]) / σ²)
//! ```
//!
//! A complete row gets exactly what the complete-data methods give (to rounding). A row with
//! nothing observed gets the prior: posterior N(0, I), the mean as its imputation, codes 0 and
//! log-likelihood 0 (the probability of observing nothing is 1). These need σ² > 0: with σ² = 0
//! the observed entries pin the latent point exactly or not at all, and such a model (every
//! component kept) is refused with [`PcaError::DegenerateModel`]. Infinities are errors naming
//! their row and column.

use faer::linalg::matmul::matmul;
use faer::linalg::solvers::Solve;
use faer::{Accum, Mat, MatRef, Side};

use crate::error::{PcaError, Result};
use crate::kernel::parallel::faer_par;
use crate::probabilistic::gaussian::{ProbabilisticPca, Units};
use crate::real::Real;

/// `ln(2π)`.
const LN_2PI: f64 = 1.837_877_066_409_345_5;

/// The posterior of the latent point of each row given its observed entries: the means (N×M)
/// and each row's covariance `σ² M_O⁻¹` (M×M; the same for every complete row).
#[derive(Clone, Debug, PartialEq)]
pub struct ObservedPosterior {
    /// N×M: `E[z | x_O]`.
    pub mean: Mat<f64>,
    /// One M×M covariance per row.
    pub covariances: Vec<Mat<f64>>,
}

/// What one row gives: the posterior and its pieces.
struct RowPosterior<'r> {
    /// Features missing in the row, in order.
    holes: &'r [usize],
    /// The standardized row with holes as 0.
    xs: &'r [f64],
    /// `E[z | x_O]`.
    mean: Vec<f64>,
    /// `σ² M_O⁻¹`.
    covariance: Mat<f64>,
    /// `log p(x_O)` in the model's units (0 when nothing is observed).
    log_likelihood: f64,
}

impl ProbabilisticPca<'_> {
    /// The posterior of the latent point of each row of `x` given its observed (non-NaN)
    /// entries.
    ///
    /// ```
    /// use principal::{faer::mat, ComponentCount, PcaBuilder};
    ///
    /// let x = mat![[2.0, 1.0, 0.5], [1.0, 3.0, 1.5], [4.0, 2.0, 2.5], [0.0, 1.0, 0.0], [3.0, 0.0, 1.0]];
    /// let model = PcaBuilder::new().components(ComponentCount::Fixed(1)).build()?.fit(x.as_ref())?;
    /// let ppca = model.probabilistic();
    /// let partial = mat![[2.0, f64::NAN, 0.5]];
    /// let posterior = ppca.posterior_observed(partial.as_ref())?;
    /// // Less is known than from the whole row: a wider posterior.
    /// let whole = ppca.posterior(x.as_ref().subrows(0, 1))?;
    /// assert!(posterior.covariances[0][(0, 0)] > whole.covariance[(0, 0)]);
    /// # Ok::<(), principal::PcaError>(())
    /// ```
    pub fn posterior_observed<T: Real>(&self, x: MatRef<'_, T>) -> Result<ObservedPosterior> {
        let m = self.model().n_components();
        let mut mean = Mat::zeros(x.nrows(), m);
        let mut covariances = Vec::with_capacity(x.nrows());
        self.for_observed_rows(x, |i, row| {
            for (k, v) in row.mean.iter().enumerate() {
                mean[(i, k)] = *v;
            }
            covariances.push(row.covariance);
        })?;
        Ok(ObservedPosterior { mean, covariances })
    }

    /// `x` with each missing (NaN) value replaced by its conditional mean given the row's
    /// observed values, `μ_H + s_H ⊙ W_H E[z | x_O]`, in the original units; observed values
    /// are kept as they are.
    pub fn impute<T: Real>(&self, x: MatRef<'_, T>) -> Result<Mat<f64>> {
        let model = self.model();
        let w = self.loadings();
        let mut out = Mat::from_fn(x.nrows(), x.ncols(), |i, j| x[(i, j)].to_f64());
        self.for_observed_rows(x, |i, row| {
            for &j in row.holes {
                let xs: f64 = (0..row.mean.len()).map(|k| w[(j, k)] * row.mean[k]).sum();
                out[(i, j)] = model.mean()[j] + model.scale().map_or(1.0, |s| s[j]) * xs;
            }
        })?;
        Ok(out)
    }

    /// The codes `Bᵀ (x̂ − μ)/s` of the rows completed by [`Self::impute`]: for a complete
    /// row, [`crate::PcaModel::transform`]'s (whitened when the model whitens).
    pub fn transform_observed<T: Real>(&self, x: MatRef<'_, T>) -> Result<Mat<f64>> {
        let model = self.model();
        let b = model.components();
        let w = self.loadings();
        let m = model.n_components();
        let mut codes = Mat::zeros(x.nrows(), m);
        self.for_observed_rows(x, |i, row| {
            let mut completed = row.xs.to_vec();
            for &j in row.holes {
                completed[j] = (0..m).map(|k| w[(j, k)] * row.mean[k]).sum();
            }
            for k in 0..m {
                codes[(i, k)] = (0..completed.len()).map(|j| b[(k, j)] * completed[j]).sum();
            }
        })?;
        model.whiten(codes.as_mut());
        Ok(codes)
    }

    /// The log-likelihood of each row's observed values, `log N(x_O; μ_O, C_OO)`: for a
    /// complete row, [`Self::score_samples`]'; 0 for a row with nothing observed. In the
    /// original units the Jacobian is that of the observed features, `−Σ_{j∈O} log s_j`.
    pub fn score_samples_observed<T: Real>(
        &self,
        x: MatRef<'_, T>,
        units: Units,
    ) -> Result<Vec<f64>> {
        let model = self.model();
        let mut out = vec![0.0; x.nrows()];
        self.for_observed_rows(x, |i, row| {
            let jacobian: f64 = match (units, model.scale()) {
                (Units::Original, Some(s)) => (0..s.len())
                    .filter(|j| row.holes.binary_search(j).is_err())
                    .map(|j| s[j].ln())
                    .sum(),
                _ => 0.0,
            };
            out[i] = row.log_likelihood - jacobian;
        })?;
        Ok(out)
    }

    /// Calls `f(i, posterior)` for every row of `x`, in order.
    fn for_observed_rows<T: Real>(
        &self,
        x: MatRef<'_, T>,
        mut f: impl FnMut(usize, RowPosterior<'_>),
    ) -> Result<()> {
        let model = self.model();
        let (d, m) = (model.n_features(), model.n_components());
        if x.ncols() != d {
            return Err(PcaError::FeatureMismatch {
                expected: d,
                found: x.ncols(),
            });
        }
        let noise = self.noise_variance();
        if noise <= 0.0 {
            return Err(PcaError::DegenerateModel(
                "the noise variance is 0 (every component kept, or data of lower rank): values \
                 missing from a row cannot be inferred from the others through the latent \
                 model; fit fewer components"
                    .into(),
            ));
        }
        let b = model.components();
        let a: Vec<f64> = self
            .component_variances()
            .iter()
            .map(|c| (c - noise).max(0.0).sqrt())
            .collect();
        let mean = model.mean();
        let identity = Mat::<f64>::identity(m, m);
        let complete = factor(&self.gram(&[], &a), noise)?;
        let mut holes = Vec::new();
        let mut xs = vec![0.0; d];
        // A block of standardized rows (holes 0) at a time, for one product with B.
        const BLOCK: usize = 256;
        for start in (0..x.nrows()).step_by(BLOCK) {
            let rows = BLOCK.min(x.nrows() - start);
            let mut block = Mat::<f64>::zeros(rows, d);
            for i in 0..rows {
                for j in 0..d {
                    let v = x[(start + i, j)].to_f64();
                    if v.is_nan() {
                        continue;
                    }
                    if !v.is_finite() {
                        return Err(PcaError::NonFinite {
                            row: start + i,
                            column: j,
                            value: v,
                        });
                    }
                    block[(i, j)] = (v - mean[j]) / model.scale().map_or(1.0, |s| s[j]);
                }
            }
            let mut projected = Mat::<f64>::zeros(rows, m);
            matmul(
                projected.as_mut(),
                Accum::Replace,
                block.as_ref(),
                b.transpose(),
                1.0,
                faer_par(),
            );
            for i in 0..rows {
                holes.clear();
                holes.extend((0..d).filter(|&j| x[(start + i, j)].to_f64().is_nan()));
                for (j, v) in xs.iter_mut().enumerate() {
                    *v = block[(i, j)];
                }
                if holes.len() == d {
                    f(
                        start + i,
                        RowPosterior {
                            holes: &holes,
                            xs: &xs,
                            mean: vec![0.0; m],
                            covariance: identity.clone(),
                            log_likelihood: 0.0,
                        },
                    );
                    continue;
                }
                let own;
                let (llt, log_det) = if holes.is_empty() {
                    (&complete.0, complete.1)
                } else {
                    own = factor(&self.gram(&holes, &a), noise)?;
                    (&own.0, own.1)
                };
                // W_Oᵀ xs_O = diag(a) B xs (holes are 0).
                let rhs: Vec<f64> = (0..m).map(|k| a[k] * projected[(i, k)]).collect();
                let solved = llt.solve(faer::ColRef::from_slice(&rhs));
                let posterior_mean: Vec<f64> = solved.iter().copied().collect();
                let covariance = llt.solve(&identity) * noise;
                let observed = (d - holes.len()) as f64;
                let squared: f64 = xs.iter().map(|v| v * v).sum();
                let explained: f64 = rhs.iter().zip(&posterior_mean).map(|(r, z)| r * z).sum();
                let log_likelihood = -0.5
                    * (observed * LN_2PI
                        + log_det
                        + (observed - m as f64) * noise.ln()
                        + (squared - explained) / noise);
                f(
                    start + i,
                    RowPosterior {
                        holes: &holes,
                        xs: &xs,
                        mean: posterior_mean,
                        covariance,
                        log_likelihood,
                    },
                );
            }
        }
        Ok(())
    }

    /// `diag(a) B_O B_Oᵀ diag(a)` for the row missing `holes`: `B_O B_Oᵀ = I − B_H B_Hᵀ` when
    /// fewer are missing than observed, else summed over the observed features.
    fn gram(&self, holes: &[usize], a: &[f64]) -> Mat<f64> {
        let b = self.model().components();
        let (m, d) = (b.nrows(), b.ncols());
        let sum_over = |features: &mut dyn Iterator<Item = usize>| {
            let mut g = Mat::<f64>::zeros(m, m);
            for j in features {
                for p in 0..m {
                    for q in 0..m {
                        g[(p, q)] += b[(p, j)] * b[(q, j)];
                    }
                }
            }
            g
        };
        let g = if 2 * holes.len() <= d {
            Mat::<f64>::identity(m, m) - sum_over(&mut holes.iter().copied())
        } else {
            sum_over(&mut (0..d).filter(|j| holes.binary_search(j).is_err()))
        };
        Mat::from_fn(m, m, |p, q| a[p] * g[(p, q)] * a[q])
    }
}

/// The Cholesky factor of `g + σ² I` and its log determinant.
fn factor(g: &Mat<f64>, noise: f64) -> Result<(faer::linalg::solvers::Llt<f64>, f64)> {
    let m = g.nrows();
    let mut with_noise = g.clone();
    for p in 0..m {
        with_noise[(p, p)] += noise;
    }
    let llt = with_noise.llt(Side::Lower).map_err(|_| {
        PcaError::DegenerateModel("M_O = W_OᵀW_O + σ²I is not positive definite".into())
    })?;
    let log_det = (0..m).map(|p| 2.0 * llt.L()[(p, p)].ln()).sum();
    Ok((llt, log_det))
}
