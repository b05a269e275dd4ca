//! Fitting: [`PcaParams::fit`] (data in memory), [`PcaParams::fit_source`] (a re-readable
//! source, streamed) and [`PcaParams::fit_moments`] (moments accumulated elsewhere); each
//! resolves the solver, prepares the mean and scale, runs the solver's one entry point and
//! builds the model.

use faer::{Mat, MatRef};

use crate::choose::choice::{ComponentChoice, Criterion, Curve, SampleSpectrum};
use crate::choose::evidence;
use crate::choose::held_out::{self, FoldRows, FoldScores, FoldSide};
use crate::choose::rules;
use crate::choose::threshold;
use crate::collective::{Collective, SingleProcess, Watched, agree_end, agree_width};
use crate::data::{ChunkSource, InMemory};
use crate::error::{PcaError, Result};
use crate::model::PcaModel;
use crate::moments::columns::ColumnAccumulator;
use crate::moments::{MomentAccumulator, Moments};
use crate::options::{Centre, ComponentCount, MissingValues, Solver};
use crate::params::PcaParams;
use crate::preprocess::Preprocessing;
use crate::real::{ChunkRef, Real};
use crate::solver::covariance::Eigenvalues;
use crate::solver::missing::MissingProblem;
use crate::solver::{self, IterativeProblem, Problem, Rows};

/// Widest source whose first pass `auto` spends on the D×D moments (see
/// [`PcaParams::fit_source`]): wider than this, a D×D accumulator is not worth it unless asked
/// for.
const COVARIANCE_FIRST_MAX_FEATURES: usize = 4096;

/// Rows per chunk when data in memory is fitted with missing values.
const MISSING_CHUNK_ROWS: usize = 4096;

/// Rows per chunk when data in memory is cross-validated: bounds the copy of a fold's rows.
const FOLD_CHUNK_ROWS: usize = 4096;

/// What cross-validation found: the choice, the mean held-out log-likelihood per M, and the
/// folds fitted.
pub(crate) struct CrossValidation {
    pub(crate) choice: ComponentChoice,
    pub(crate) curve: Curve,
    pub(crate) fold_fits: usize,
}

impl PcaParams {
    /// Fits a model to `x` (N×D, one sample per row), `f32` or `f64`.
    pub fn fit<T: Real>(&self, x: MatRef<'_, T>) -> Result<PcaModel> {
        crate::kernel::parallel::fix_faer_split();
        if self.centre() == Centre::None {
            return self.fit_uncentred(x);
        }
        if self.missing() == MissingValues::Em {
            // Chunks of rows: each pass makes a centred f64 copy of one chunk only.
            return self.fit_missing(&mut InMemory::new(x, MISSING_CHUNK_ROWS));
        }
        let (n, d) = (x.nrows(), x.ncols());
        self.check_shape(n, d)?;
        let solver = self.plan(n, d).solver;
        match solver {
            Solver::Covariance => {
                let mut acc = MomentAccumulator::new(d).with_precision(self.precision());
                // The accumulator works through the rows in cache-sized pieces itself.
                acc.push(x)?;
                let mut data = InMemory::new(x, FOLD_CHUNK_ROWS);
                self.fit_resolved_moments(&acc.finish()?, solver, Some(&mut data))
            }
            Solver::Randomized | Solver::Power | Solver::Em => {
                let prep = Preprocessing::from_data(x, self.scaling(), self.ddof())?;
                // One chunk: the products are as large as they can be, and nothing is copied.
                self.fit_iterative(
                    Rows::Dense(&mut InMemory::new(x, n)),
                    prep,
                    n,
                    solver,
                    &SingleProcess,
                )
            }
            Solver::Gram | Solver::Svd | Solver::Auto => {
                let prep = Preprocessing::from_data(x, self.scaling(), self.ddof())?;
                let problem = Problem {
                    data: ChunkRef::from(x),
                    mean: &prep.mean,
                    scale: prep.scale.as_deref(),
                    ddof: self.ddof(),
                    n_components: self.wanted_vectors(n.min(d)),
                };
                let spectrum = match solver {
                    Solver::Gram => solver::gram::solve(&problem)?,
                    _ => solver::svd::solve(&problem)?,
                };
                let mut data = InMemory::new(x, FOLD_CHUNK_ROWS);
                self.model(spectrum, prep, n, solver, Some(&mut data))
            }
        }
    }

    /// Fits a model to `x` (N×D) whose rows carry weights (FactoMineR's `row.w`): the mean and
    /// covariance are weighted, with the weights normalised to sum to 1,
    /// `μ = Σ wᵢ xᵢ` and `S = N/(N − ddof) · Σ wᵢ (xᵢ − μ)(xᵢ − μ)ᵀ` (so equal weights give
    /// [`PcaParams::fit`]'s model, and ddof 0 FactoMineR's), standardized by the weighted
    /// standard deviations. The fit is exact: the thin SVD of the centred (scaled) rows, each
    /// multiplied by √(N wᵢ). `weights` are any non-negative numbers, not all zero.
    ///
    /// Refused where weights have no meaning yet: missing values, the iterative solvers, and
    /// cross-validation (which would split the weighted rows).
    pub fn fit_weighted(&self, x: MatRef<'_, f64>, weights: &[f64]) -> Result<PcaModel> {
        crate::kernel::parallel::fix_faer_split();
        let (n, d) = (x.nrows(), x.ncols());
        let refuse = |solver: &'static str, reason: &str| {
            Err(PcaError::SolverUnsuitable {
                solver,
                reason: reason.into(),
            })
        };
        if self.missing() == MissingValues::Em {
            return refuse(
                "em",
                "row weights are not supported with missing values; fill them first \
                 (principal impute) or fit without weights",
            );
        }
        if let s @ (Solver::Randomized | Solver::Power | Solver::Em) = self.solver() {
            return refuse(
                s.name(),
                "row weights need an exact solver (svd, gram, covariance or auto, which \
                 fit them by an SVD)",
            );
        }
        if let ComponentCount::CrossValidated { .. } = self.components() {
            return Err(PcaError::CannotChoose {
                criterion: "cv",
                reason: "cross-validation is not supported with row weights".into(),
            });
        }
        self.check_shape(n, d)?;
        if weights.len() != n {
            return Err(PcaError::InvalidWeights(format!(
                "{} row weights for {n} rows",
                weights.len()
            )));
        }
        if let Some(i) = weights.iter().position(|w| !w.is_finite() || *w < 0.0) {
            return Err(PcaError::InvalidWeights(format!(
                "row weight {} at row {i} is not a non-negative number (rows count from 0)",
                weights[i]
            )));
        }
        let total: f64 = weights.iter().sum();
        if total <= 0.0 {
            return Err(PcaError::InvalidWeights(
                "the row weights sum to zero".into(),
            ));
        }
        // Rows weighted to an average of 1: the unweighted fit's rows when all are equal.
        let scaled: Vec<f64> = weights.iter().map(|w| w * n as f64 / total).collect();
        let mut mean = vec![0.0; d];
        let mut sum_sq = vec![0.0; d];
        for j in 0..d {
            let col = x.col(j);
            // The plain mean first, then the weighted mean of the deviations from it: an
            // offset of 1e6 costs nothing.
            let rough = col.iter().sum::<f64>() / n as f64;
            if !rough.is_finite() {
                let i = col.iter().position(|v| !v.is_finite()).unwrap_or(0);
                return Err(PcaError::NonFinite {
                    row: i,
                    column: j,
                    value: col[i],
                });
            }
            let shift: f64 = col
                .iter()
                .zip(&scaled)
                .map(|(v, w)| w * (v - rough))
                .sum::<f64>()
                / n as f64;
            mean[j] = rough + shift;
            sum_sq[j] = col
                .iter()
                .zip(&scaled)
                .map(|(v, w)| w * (v - mean[j]).powi(2))
                .sum();
        }
        let prep = Preprocessing::from_sums(mean, &sum_sq, n, self.scaling(), self.ddof());
        let mut z = Mat::<f64>::zeros(n, d);
        for j in 0..d {
            let s = prep.scale.as_ref().map_or(1.0, |s| s[j]);
            for i in 0..n {
                z[(i, j)] = scaled[i].sqrt() * (x[(i, j)] - prep.mean[j]) / s;
            }
        }
        let zeros = vec![0.0; d];
        let problem = Problem {
            data: ChunkRef::from(z.as_ref()),
            mean: &zeros,
            scale: None,
            ddof: self.ddof(),
            n_components: self.wanted_vectors(n.min(d)),
        };
        let spectrum = solver::svd::solve(&problem)?;
        self.model(spectrum, prep, n, Solver::Svd, None)
    }

    /// Fits a model to data read chunk by chunk from `source`, which must yield the same rows
    /// on every pass. The covariance, randomized, power and em solvers never hold the data in
    /// memory; gram and svd collect it (they need it whole).
    pub fn fit_source(&self, source: &mut dyn ChunkSource) -> Result<PcaModel> {
        crate::kernel::parallel::fix_faer_split();
        if self.centre() == Centre::None {
            return self.fit_uncentred_source(source);
        }
        if self.missing() == MissingValues::Em {
            return self.fit_missing(source);
        }
        let d = source.n_features();
        if self.covariance_first(d) {
            let acc = MomentAccumulator::from_source(source, self.precision())?;
            let n = acc.n_samples();
            self.check_shape(n, d)?;
            let solver = self.plan(n, d).solver;
            if solver == Solver::Covariance {
                return self.fit_resolved_moments(&acc.finish()?, solver, Some(source));
            }
        }
        let mut columns = ColumnAccumulator::new(d);
        source.pass(&mut |chunk| columns.push_chunk(chunk))?;
        let n = columns.n;
        self.check_shape(n, d)?;
        let solver = self.plan(n, d).solver;
        match solver {
            Solver::Randomized | Solver::Power | Solver::Em => {
                let prep = Preprocessing::from_sums(
                    columns.mean,
                    &columns.sum_sq,
                    n,
                    self.scaling(),
                    self.ddof(),
                );
                self.fit_iterative(Rows::Dense(source), prep, n, solver, &SingleProcess)
            }
            Solver::Covariance => {
                let acc = MomentAccumulator::from_source(source, self.precision())?;
                self.fit_resolved_moments(&acc.finish()?, solver, Some(source))
            }
            Solver::Gram | Solver::Svd | Solver::Auto => {
                let mut whole = Mat::<f64>::zeros(n, d);
                let mut row = 0;
                source.pass(&mut |chunk| {
                    let rows = chunk.nrows();
                    if row + rows > n {
                        return Err(PcaError::Source(
                            "the source gave more rows on a later pass than on the first".into(),
                        ));
                    }
                    match chunk {
                        ChunkRef::F32(m) => whole
                            .as_mut()
                            .subrows_mut(row, rows)
                            .copy_from(Mat::from_fn(rows, d, |i, j| f64::from(m[(i, j)]))),
                        ChunkRef::F64(m) => whole.as_mut().subrows_mut(row, rows).copy_from(m),
                    }
                    row += rows;
                    Ok(())
                })?;
                self.with_solver(solver).fit(whole.as_ref())
            }
        }
    }

    /// Fits a model to the rows of every process's `source` together, as one process holding
    /// all of them would (to rounding, for any number of processes and any split of the rows):
    /// every rank calls this with its own part and gets the same model.
    ///
    /// Each rank accumulates its own rows; the ranks then combine what they accumulated
    /// through `collective`: the covariance solver's moments in one reduction (Chan's update,
    /// on centred terms), the iterative solvers' column sums, then one D×L block per pass.
    /// Gram and svd need the whole data in one process and are refused (auto avoids them:
    /// [`PcaParams::plan_across`]). A failure on any rank — its data, or a parameter that the
    /// whole data rules out — stops every rank at its next agreement with that rank's message
    /// ([`PcaError::OtherRank`] on the others); the others also stop reading within a chunk.
    /// With one process this is [`PcaParams::fit_source`].
    pub fn fit_distributed(
        &self,
        source: &mut dyn ChunkSource,
        collective: &dyn Collective,
    ) -> Result<PcaModel> {
        crate::kernel::parallel::fix_faer_split();
        let processes = collective.size();
        if processes == 1 {
            return self.fit_source(source);
        }
        if self.centre() == Centre::None {
            return Err(PcaError::SolverUnsuitable {
                solver: self.solver().name(),
                reason: "a fit without centring runs in one process for now".into(),
            });
        }
        if let Solver::Gram | Solver::Svd = self.solver() {
            return Err(one_process_only(self.solver()));
        }
        // Refused before any row is read: every rank sees the same parameters, so every rank
        // returns this error at once, with no collective step to agree on.
        if let ComponentCount::CrossValidated { .. } = self.components() {
            return Err(cv_across_processes());
        }
        if self.missing() == MissingValues::Em {
            return Err(PcaError::SolverUnsuitable {
                solver: "em",
                reason: "missing values are fitted in one process for now; run without mpirun"
                    .into(),
            });
        }
        let mut watched = Watched { source, collective };
        let d = agree_width(collective, watched.n_features())?;
        let model = self.fit_across(&mut watched, d, collective);
        agree_end(collective, model)
    }

    fn fit_across(
        &self,
        source: &mut dyn ChunkSource,
        d: usize,
        collective: &dyn Collective,
    ) -> Result<PcaModel> {
        let processes = collective.size();
        let precision = self.precision();
        if self.covariance_first(d) {
            let local = MomentAccumulator::from_source(source, precision);
            let acc = MomentAccumulator::reduce(local, collective)?;
            let n = acc.n_samples();
            self.check_shape(n, d)?;
            let solver = self.plan_across(n, d, processes).solver;
            if solver == Solver::Covariance {
                return self.fit_resolved_moments(&acc.finish()?, solver, None);
            }
        }
        let mut columns = ColumnAccumulator::new(d);
        let pass = source.pass(&mut |chunk| columns.push_chunk(chunk));
        let columns = ColumnAccumulator::reduce(pass.map(|()| columns), collective)?;
        let n = columns.n;
        self.check_shape(n, d)?;
        let solver = self.plan_across(n, d, processes).solver;
        match solver {
            Solver::Randomized | Solver::Power | Solver::Em => {
                let prep = Preprocessing::from_sums(
                    columns.mean,
                    &columns.sum_sq,
                    n,
                    self.scaling(),
                    self.ddof(),
                );
                self.fit_iterative(Rows::Dense(source), prep, n, solver, collective)
            }
            Solver::Covariance => {
                let local = MomentAccumulator::from_source(source, precision);
                let acc = MomentAccumulator::reduce(local, collective)?;
                self.fit_resolved_moments(&acc.finish()?, solver, None)
            }
            Solver::Gram | Solver::Svd | Solver::Auto => Err(one_process_only(solver)),
        }
    }

    /// Fits a model with the covariance solver to moments accumulated elsewhere (chunks of a
    /// file, threads, machines). The requested solver must be `Auto` or `Covariance`.
    pub fn fit_moments(&self, moments: &Moments) -> Result<PcaModel> {
        crate::kernel::parallel::fix_faer_split();
        match self.solver() {
            Solver::Auto | Solver::Covariance => match self.centre() {
                Centre::Mean => self.fit_resolved_moments(moments, Solver::Covariance, None),
                Centre::None => self.uncentred_from_moments(moments),
            },
            other => Err(PcaError::SolverUnsuitable {
                solver: other.name(),
                reason: "streamed moments can only be fitted by the covariance solver".into(),
            }),
        }
    }

    /// The passes [`Self::fit_source`] makes over a source of `n_samples × n_features`, when
    /// they are known beforehand (for a progress display): one for the covariance solver, a
    /// pass of column sums and the planned iterations for randomized, and so on. `None` when
    /// iteration stops on convergence (the power and em solvers, a tolerance) or the component
    /// count depends on the spectrum. Randomized block Krylov finishes early, in fewer passes,
    /// only when its basis spans every feature.
    pub fn planned_passes(&self, n_samples: usize, n_features: usize) -> Option<usize> {
        let (n, d) = (n_samples, n_features);
        if self.missing() == MissingValues::Em {
            return None;
        }
        let covariance_first = self.covariance_first(d);
        let solver = self.plan(n, d).solver;
        if covariance_first && solver == Solver::Covariance {
            return Some(1);
        }
        // The moment pass (if it came first) and the pass of column sums.
        let before = usize::from(covariance_first) + 1;
        match solver {
            Solver::Covariance | Solver::Gram | Solver::Svd | Solver::Auto => Some(before + 1),
            Solver::Power | Solver::Em => None,
            Solver::Randomized => {
                let k = self.iterative_components(n, d)?;
                solver::randomized::known_passes(&self.iterative(), k, n, d).map(|p| before + p)
            }
        }
    }

    /// The components an iterative solver computes for `n × d` data; `None` for a count that
    /// depends on the whole spectrum (a fraction of variance, mle, gavish-donoho, cv).
    pub(crate) fn iterative_components(&self, n: usize, d: usize) -> Option<usize> {
        match self.components() {
            ComponentCount::Fixed(k) => Some(k),
            ComponentCount::All => Some(n.min(d)),
            _ => None,
        }
    }

    /// Whether `fit_source` accumulates moments in its first pass: a wide source is not worth a
    /// D×D accumulator unless asked for.
    fn covariance_first(&self, n_features: usize) -> bool {
        match self.solver() {
            Solver::Covariance => true,
            Solver::Auto => n_features <= COVARIANCE_FIRST_MAX_FEATURES,
            _ => false,
        }
    }

    pub(crate) fn fit_iterative(
        &self,
        rows: Rows<'_>,
        prep: Preprocessing,
        n: usize,
        solver: Solver,
        collective: &dyn Collective,
    ) -> Result<PcaModel> {
        let d = prep.mean.len();
        let k = self
            .iterative_components(n, d)
            .ok_or_else(|| PcaError::SolverUnsuitable {
                solver: solver.name(),
                reason: format!(
                    "{} needs the whole spectrum; give a number of components or use an exact solver",
                    spectrum_rule(self.components())
                ),
            })?;
        let mut rows = rows;
        let mut problem = IterativeProblem::over(
            rows.reborrow(),
            &prep.mean,
            prep.scale.as_deref(),
            n,
            self.ddof(),
            k,
            prep.total_variance,
            self.iterative(),
        )
        .across(collective);
        let spectrum = match solver {
            Solver::Power => solver::power::solve(&mut problem)?,
            Solver::Em => solver::em::solve(&mut problem)?,
            _ => solver::randomized::solve(&mut problem)?,
        };
        self.model(spectrum, prep, n, solver, None)
    }

    /// Probabilistic PCA by EM on the observed values (NaN missing); [`PcaParams`]' builder
    /// has checked that the number of components is fixed.
    fn fit_missing(&self, source: &mut dyn ChunkSource) -> Result<PcaModel> {
        let ComponentCount::Fixed(k) = self.components() else {
            unreachable!("PcaBuilder::build lets missing values through with a fixed count only")
        };
        let mut problem = MissingProblem {
            source,
            n_components: k,
            scaling: self.scaling(),
            ddof: self.ddof(),
            options: self.iterative(),
        };
        let fit = solver::missing::solve(&mut problem)?;
        Ok(PcaModel::from_missing_fit(fit, self.ddof())?.with_whitening(self.whitening()))
    }

    /// The covariance solver on `moments`; `data`, when there is any, for cross-validation.
    pub(crate) fn fit_resolved_moments(
        &self,
        moments: &Moments,
        solver: Solver,
        data: Option<&mut dyn ChunkSource>,
    ) -> Result<PcaModel> {
        let (n, d) = (moments.n_samples(), moments.n_features());
        self.check_shape(n, d)?;
        let prep = Preprocessing::from_moments(moments, self.scaling(), self.ddof());
        let k = self.wanted_vectors(n.min(d));
        // A fixed count needs only the leading eigenvalues; a rule reads them all.
        let values = match self.components() {
            ComponentCount::Fixed(_) => Eigenvalues::Leading,
            _ => Eigenvalues::All,
        };
        let scale = prep.scale.as_deref();
        let spectrum = solver::covariance::solve(moments, scale, self.ddof(), k, values)?;
        self.model(spectrum, prep, n, solver, data)
    }

    /// The model: the number of components resolved (a rule applied to the spectrum, or
    /// cross-validation over `data`), then the components kept.
    pub(crate) fn model(
        &self,
        spectrum: solver::Spectrum,
        prep: Preprocessing,
        n: usize,
        solver: Solver,
        data: Option<&mut dyn ChunkSource>,
    ) -> Result<PcaModel> {
        let d = prep.mean.len();
        let max = n.min(d);
        let sample = SampleSpectrum {
            eigenvalues: &spectrum.eigenvalues,
            n_samples: n,
            n_features: d,
            ddof: self.ddof(),
            total_variance: prep.total_variance,
        };
        let choice = match self.components() {
            ComponentCount::Fixed(_) | ComponentCount::All => None,
            ComponentCount::VarianceFraction(f) => {
                Some(rules::variance_fraction(&sample, f, max)?.0)
            }
            ComponentCount::Mle => Some(evidence::mle(&sample, max)?.0),
            ComponentCount::GavishDonoho { noise_sigma } => {
                let varying = sample.varying(prep.zero_variance.len());
                Some(threshold::gavish_donoho(&varying, noise_sigma, max)?.0)
            }
            ComponentCount::CrossValidated { folds, seed } => {
                let data = data.ok_or_else(|| PcaError::CannotChoose {
                    criterion: "cv",
                    reason: "cross-validation refits the rows themselves: moments alone, or a \
                             fit across processes, cannot be cross-validated"
                        .into(),
                })?;
                let constant = &prep.zero_variance;
                let varying = sample.varying(constant.len());
                Some(
                    self.cross_validate(data, &varying, constant, folds, seed, max)?
                        .choice,
                )
            }
        };
        let m = match (self.components(), choice) {
            (ComponentCount::Fixed(k), _) => k,
            (_, Some(choice)) => choice.n_components,
            _ => max,
        };
        Ok(
            PcaModel::from_spectrum(spectrum, prep, m, choice, self.ddof(), n, solver)?
                .with_whitening(self.whitening()),
        )
    }

    /// Chooses M by `folds`-fold cross-validation of the held-out probabilistic-PCA
    /// log-likelihood over the rows of `data` (whose whole spectrum is `sample`, its constant
    /// features left out as [`SampleSpectrum::varying`] says), among
    /// `1..=max`: one exact fit with every component per fold, then one pass scoring its held-out
    /// rows for every M at once. The `constant` features (zero variance in all of `data`) are
    /// left out of the folds: they carry nothing to score.
    pub(crate) fn cross_validate(
        &self,
        data: &mut dyn ChunkSource,
        sample: &SampleSpectrum<'_>,
        constant: &[usize],
        folds: usize,
        seed: u64,
        max: usize,
    ) -> Result<CrossValidation> {
        let n = sample.n_samples;
        sample.check_choosable("cv")?;
        held_out::check_folds(n, folds, self.ddof())?;
        let criterion = Criterion::CrossValidation { folds, seed };
        // Every component of the training rows, by an exact solver.
        let requested = self.solver();
        let exact = if requested.is_exact() {
            requested
        } else {
            Solver::Auto
        };
        let fold_params = self.with_components(ComponentCount::All).with_solver(exact);
        let fold_of = held_out::assign_folds(n, folds, seed);
        let kept = held_out::kept_columns(data.n_features(), constant);
        let up_to = sample.n_features.min(n);
        let mut per_fold = Vec::with_capacity(folds);
        let mut fold_fits = 0;
        for fold in 0..folds {
            let mut training = FoldRows::new(data, &fold_of, fold, FoldSide::Training, &kept);
            let model = fold_params.fit_source(&mut training)?;
            fold_fits += 1;
            let mut scores = FoldScores::new();
            FoldRows::new(data, &fold_of, fold, FoldSide::HeldOut, &kept)
                .pass(&mut |chunk| scores.add(&model, chunk))?;
            per_fold.push(scores.totals(&model, up_to));
        }
        let (choice, curve) = held_out::choose_by_likelihood(&per_fold, n, criterion, max)?;
        Ok(CrossValidation {
            choice,
            curve,
            fold_fits,
        })
    }

    /// How many eigenvectors a solver must return so that the count can be chosen afterwards.
    pub(crate) fn wanted_vectors(&self, max: usize) -> usize {
        match self.components() {
            ComponentCount::Fixed(k) => k.min(max),
            _ => max,
        }
    }

    pub(crate) fn check_shape(&self, n: usize, d: usize) -> Result<()> {
        if n == 0 || d == 0 {
            return Err(PcaError::EmptyData {
                n_samples: n,
                n_features: d,
            });
        }
        // Before ddof's own check, which would suggest ddof 0: no rule chooses from one sample.
        let rule = self.components();
        if n < 2 && rule.needs_spectrum() && !matches!(rule, ComponentCount::VarianceFraction(_)) {
            return Err(PcaError::CannotChoose {
                criterion: spectrum_rule(rule),
                reason: format!("it needs at least 2 samples; the data has {n}"),
            });
        }
        if n <= self.ddof() {
            return Err(PcaError::TooFewSamples {
                n_samples: n,
                ddof: self.ddof(),
            });
        }
        if let ComponentCount::Fixed(k) = self.components()
            && k > n.min(d)
        {
            return Err(PcaError::TooManyComponents {
                requested: k,
                max: n.min(d),
            });
        }
        Ok(())
    }
}

/// The rule a spectrum-dependent count names: `variance fraction`, `mle`, `gavish-donoho`, `cv`.
pub(crate) fn spectrum_rule(count: ComponentCount) -> &'static str {
    match count {
        ComponentCount::VarianceFraction(_) => "a fraction of variance",
        ComponentCount::Mle => "mle",
        ComponentCount::GavishDonoho { .. } => "gavish-donoho",
        ComponentCount::CrossValidated { .. } => "cv",
        ComponentCount::Fixed(_) | ComponentCount::All => "a number of components",
    }
}

/// The error for gram and svd over several processes.
/// Cross-validation under several processes (dense or sparse rows).
pub(crate) fn cv_across_processes() -> PcaError {
    PcaError::CannotChoose {
        criterion: "cv",
        reason: "cross-validation refits held-out rows, and across processes each holds only \
                 its part of them; run it in one process, or choose with mle or gavish-donoho, \
                 which read the combined spectrum"
            .into(),
    }
}

fn one_process_only(solver: Solver) -> PcaError {
    PcaError::SolverUnsuitable {
        solver: solver.name(),
        reason: "it needs the whole data in one process; over several processes use \
                 covariance, randomized, power or em"
            .into(),
    }
}
