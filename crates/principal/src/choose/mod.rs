//! Choosing the number of components: every criterion side by side ([`PcaParams::choose`]),
//! each with the number it chooses and the curve it read.
//!
//! | criterion | reads | extra work beyond one exact fit |
//! | --- | --- | --- |
//! | variance 0.8, 0.9, 0.95, 0.99 | cumulative explained-variance ratio | none |
//! | Kaiser | λ_m against the mean λ | none |
//! | broken stick | λ_m / trace against the broken stick | none |
//! | parallel analysis (Horn) | λ_m against the permuted data's percentile | eigenvalues of P permuted copies |
//! | mle (Minka) | log evidence | none |
//! | Gavish–Donoho | singular values against the threshold τ | none |
//! | cv | mean held-out log-likelihood | one fit per fold and a projection of every row |
//!
//! Inside: `choice` (what a choice records, the spectrum every rule reads) at the bottom;
//! `rules`, `evidence`, `marchenko_pastur` and `threshold` read the spectrum; `parallel`
//! permutes data in memory; `held_out` scores cross-validation folds (the fold fits are in
//! `fit.rs`, which resolves a [`crate::ComponentCount`] at fit time); this file, the door,
//! runs them all.

pub(crate) mod choice;
pub(crate) mod evidence;
pub(crate) mod held_out;
pub(crate) mod marchenko_pastur;
pub(crate) mod parallel;
pub(crate) mod rules;
pub(crate) mod threshold;

use std::time::{Duration, Instant};

use faer::MatRef;

use crate::choose::choice::{ComponentChoice, Criterion, Curve, SampleSpectrum};
use crate::data::InMemory;
use crate::error::{PcaError, Result};
use crate::options::{ComponentCount, Solver};
use crate::params::PcaParams;
use crate::real::Real;

/// The fractions of variance [`PcaParams::choose`] reports.
pub const VARIANCE_FRACTIONS: [f64; 4] = [0.8, 0.9, 0.95, 0.99];

/// Settings of [`PcaParams::choose`] beyond the fit's own (scaling, ddof, solver).
#[derive(Clone, Debug, PartialEq)]
pub struct ChooseOptions {
    /// The largest number of components considered (the rows of the table, the candidates of
    /// every criterion); `None` for min(N, D).
    pub max_components: Option<usize>,
    /// Permuted copies of the data in parallel analysis.
    pub permutations: usize,
    /// The percentile of the permuted eigenvalues that parallel analysis compares with, in
    /// (0, 100).
    pub percentile: f64,
    /// Folds of the cross-validation.
    pub folds: usize,
    /// Seed of the permutations and of the rows' assignment to folds.
    pub seed: u64,
    /// Gavish–Donoho's noise level per entry, if known.
    pub noise_sigma: Option<f64>,
}

impl Default for ChooseOptions {
    /// Every component considered, 100 permutations and the 95th percentile (Glorfeld's
    /// recommendation), 5 folds, seed 0, the noise level estimated.
    fn default() -> Self {
        ChooseOptions {
            max_components: None,
            permutations: 100,
            percentile: 95.0,
            folds: ComponentCount::DEFAULT_FOLDS,
            seed: 0,
            noise_sigma: None,
        }
    }
}

impl ChooseOptions {
    /// Checks every setting that can be checked without data; the errors name the setting
    /// ([`PcaError::parameter`]).
    pub fn check(&self) -> Result<()> {
        if self.max_components == Some(0) {
            return Err(PcaError::ZeroMaxComponents);
        }
        if self.permutations == 0 {
            return Err(PcaError::ZeroPermutations);
        }
        if !(self.percentile > 0.0 && self.percentile < 100.0) {
            return Err(PcaError::PercentileOutOfRange(self.percentile));
        }
        if self.folds < 2 {
            return Err(PcaError::TooFewFolds(self.folds));
        }
        if let Some(sigma) = self.noise_sigma
            && !(sigma > 0.0 && sigma.is_finite())
        {
            return Err(PcaError::NoiseSigmaOutOfRange(sigma));
        }
        Ok(())
    }
}

/// Every criterion's number of components and the curve it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct ChoiceTable {
    /// N.
    pub n_samples: usize,
    /// D.
    pub n_features: usize,
    /// K: the rows of every curve (M = 1..=K) and the most any criterion keeps.
    pub max_components: usize,
    /// λ₁ … λ_K.
    pub eigenvalues: Vec<f64>,
    /// λ_m / trace(S), m = 1..=K.
    pub explained_variance_ratio: Vec<f64>,
    /// One entry per criterion: the variance fractions of [`VARIANCE_FRACTIONS`], Kaiser,
    /// broken stick, parallel analysis, mle, Gavish–Donoho, cv, in that order, but for those
    /// in `unavailable`.
    pub criteria: Vec<CriterionResult>,
    /// The criteria this data cannot support, and why: cross-validation with fewer samples
    /// than folds. The others are still answered; asked for alone (`fit --components cv`),
    /// such a criterion is an error ([`PcaError::CannotChoose`]).
    pub unavailable: Vec<UnavailableCriterion>,
    /// What it took.
    pub work: ChoiceWork,
}

/// A criterion that the data cannot support, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct UnavailableCriterion {
    /// The rule, with its settings.
    pub criterion: Criterion,
    /// Why it has no answer here.
    pub reason: String,
}

/// One criterion's answer and its curve over M = 1..=K.
#[derive(Clone, Debug, PartialEq)]
pub struct CriterionResult {
    /// The number chosen, and how.
    pub choice: ComponentChoice,
    /// The curve it came from.
    pub curve: Curve,
}

/// The work [`PcaParams::choose`] did, counted as it was done: one exact fit, then only what
/// the criteria that need more ([`crate::Criterion::extra_work`]) asked for.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChoiceWork {
    /// Exact fits of the whole data (1).
    pub fits: usize,
    /// Eigenvalue computations of permuted copies (parallel analysis).
    pub permuted_spectra: usize,
    /// Exact fits of cross-validation folds (0 when cross-validation had too few samples).
    pub fold_fits: usize,
    /// Time of the whole-data fit and the criteria read off its spectrum.
    pub fit_time: Duration,
    /// Time of the permutations.
    pub permutation_time: Duration,
    /// Time of the cross-validation.
    pub cross_validation_time: Duration,
}

impl PcaParams {
    /// Every criterion for the number of components of `x` (N×D, at least 2 features) side by
    /// side: the number each chooses within `1..=K` and the curve it came from, from one exact
    /// fit (this params' scaling, ddof and solver, every component) wherever the criterion
    /// allows; parallel analysis adds the eigenvalues of `options.permutations` permuted
    /// copies, cross-validation one fit per fold. The requested number of components is
    /// ignored; an iterative solver is an error (the criteria need the whole spectrum).
    ///
    /// ```
    /// use principal::faer::Mat;
    /// use principal::{ChooseOptions, PcaBuilder};
    ///
    /// // Two strong directions in six features, plus a little uniform noise (xorshift64).
    /// let mut state = 0x9E37_79B9_7F4A_7C15_u64;
    /// let noise: Vec<f64> = (0..60 * 6)
    ///     .map(|_| {
    ///         state ^= state << 13;
    ///         state ^= state >> 7;
    ///         state ^= state << 17;
    ///         (state >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    ///     })
    ///     .collect();
    /// let x = Mat::from_fn(60, 6, |i, j| {
    ///     let (a, b) = ((i as f64 * 0.7).sin(), (i as f64 * 1.3).cos());
    ///     a * (j as f64 + 1.0) + b * (6.0 - j as f64) + 0.1 * noise[i * 6 + j]
    /// });
    /// let table = PcaBuilder::new().build()?.choose(x.as_ref(), &ChooseOptions::default())?;
    /// let mle = table.criteria.iter().find(|c| c.choice.criterion.name() == "mle").unwrap();
    /// assert_eq!(mle.choice.n_components, 2);
    /// assert_eq!((table.work.fits, table.work.permuted_spectra), (1, 100));
    /// # Ok::<(), principal::PcaError>(())
    /// ```
    pub fn choose<T: Real>(
        &self,
        x: MatRef<'_, T>,
        options: &ChooseOptions,
    ) -> Result<ChoiceTable> {
        options.check()?;
        let (n, d) = (x.nrows(), x.ncols());
        if d < 2 && n > 0 {
            return Err(PcaError::CannotChoose {
                criterion: "choose",
                reason: format!(
                    "it needs at least 2 features; the data has {d} (one feature is one component)"
                ),
            });
        }
        let solver = self.solver();
        if !(solver.is_exact() || solver == Solver::Auto) {
            return Err(PcaError::SolverUnsuitable {
                solver: solver.name(),
                reason: "choosing the number of components needs the whole spectrum; use an \
                         exact solver (auto, covariance, gram, svd)"
                    .into(),
            });
        }
        if n < 2 {
            return Err(PcaError::CannotChoose {
                criterion: "choose",
                reason: format!("it needs at least 2 samples; the data has {n}"),
            });
        }
        let mut work = ChoiceWork::default();
        let started = Instant::now();
        let model = self.with_components(ComponentCount::All).fit(x)?;
        work.fits += 1;
        let values = model.explained_variance();
        let constant = model.zero_variance_features();
        let sample = SampleSpectrum {
            eigenvalues: values,
            n_samples: n,
            n_features: d,
            ddof: self.ddof(),
            total_variance: model.total_variance(),
        };
        sample.check_choosable("choose")?;
        let max = options.max_components.unwrap_or(n.min(d)).min(n.min(d));
        let mut criteria = Vec::new();
        let mut add = |(choice, curve): (ComponentChoice, Curve)| {
            criteria.push(CriterionResult {
                choice,
                curve: curve.resized(max),
            })
        };
        for fraction in VARIANCE_FRACTIONS {
            add(rules::variance_fraction(&sample, fraction, max)?);
        }
        add(rules::kaiser(&sample, max));
        add(rules::broken_stick(&sample, max));
        let fit_time = started.elapsed();

        let started = Instant::now();
        let permuted = parallel::permuted_spectra(
            x,
            model.mean(),
            model.scale(),
            self.ddof(),
            self.precision(),
            options.permutations,
            options.percentile,
            options.seed,
        )?;
        work.permuted_spectra = permuted.spectra;
        let parallel_criterion = Criterion::ParallelAnalysis {
            permutations: options.permutations,
            percentile: options.percentile,
            seed: options.seed,
        };
        add(parallel::parallel_analysis(
            &sample,
            &permuted,
            parallel_criterion,
            max,
        ));
        work.permutation_time = started.elapsed();

        let started = Instant::now();
        add(evidence::mle(&sample, max)?);
        let varying = sample.varying(constant.len());
        add(threshold::gavish_donoho(
            &varying,
            options.noise_sigma,
            max,
        )?);
        work.fit_time = fit_time + started.elapsed();

        let started = Instant::now();
        let mut data = InMemory::new(x, 4096);
        let mut unavailable = Vec::new();
        match self.cross_validate(
            &mut data,
            &varying,
            constant,
            options.folds,
            options.seed,
            max,
        ) {
            Ok(cv) => {
                work.fold_fits = cv.fold_fits;
                add((cv.choice, cv.curve));
            }
            // Too few samples for the folds: the rest of the table still answers.
            Err(PcaError::CannotChoose { reason, .. }) => unavailable.push(UnavailableCriterion {
                criterion: Criterion::CrossValidation {
                    folds: options.folds,
                    seed: options.seed,
                },
                reason,
            }),
            Err(e) => return Err(e),
        }
        work.cross_validation_time = started.elapsed();

        Ok(ChoiceTable {
            n_samples: n,
            n_features: d,
            max_components: max,
            eigenvalues: values[..max].to_vec(),
            explained_variance_ratio: model.explained_variance_ratio()[..max].to_vec(),
            criteria,
            unavailable,
            work,
        })
    }
}
