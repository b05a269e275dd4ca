//! What choosing the number of components records: the rule ([`Criterion`]), the number, the
//! value that decided it and how ([`ComponentChoice`]); and the sample spectrum every rule reads
//! ([`SampleSpectrum`]), with the numerical rank and the span that the likelihood-based rules
//! need to stay finite.

use std::fmt;

use crate::error::{PcaError, Result};

/// The rule that chose a number of components.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum Criterion {
    /// The fewest components whose explained-variance ratios sum to at least the fraction.
    VarianceFraction(f64),
    /// Kaiser's rule: the eigenvalues above the mean eigenvalue.
    Kaiser,
    /// The broken stick: the leading ratios above the broken stick's expected ratios.
    BrokenStick,
    /// Horn's parallel analysis: the leading eigenvalues above the given percentile of the
    /// eigenvalues of the data with each column permuted independently.
    ParallelAnalysis {
        /// Permuted copies of the data.
        permutations: usize,
        /// The percentile compared with, in (0, 100).
        percentile: f64,
        /// Seed of the permutations.
        seed: u64,
    },
    /// Minka's Bayesian evidence (scikit-learn's `n_components='mle'`).
    Mle,
    /// Gavish & Donoho's optimal hard threshold on the singular values.
    GavishDonoho(NoiseLevel),
    /// Held-out probabilistic-PCA log-likelihood by k-fold cross-validation.
    CrossValidation {
        /// Number of folds.
        folds: usize,
        /// Seed of the rows' assignment to folds.
        seed: u64,
    },
}

impl Criterion {
    /// A short name: `variance 0.95`, `kaiser`, `broken-stick`, `parallel`, `mle`,
    /// `gavish-donoho`, `cv`.
    pub fn name(&self) -> String {
        match self {
            Criterion::VarianceFraction(f) => format!("variance {f}"),
            Criterion::Kaiser => "kaiser".into(),
            Criterion::BrokenStick => "broken-stick".into(),
            Criterion::ParallelAnalysis { .. } => "parallel".into(),
            Criterion::Mle => "mle".into(),
            Criterion::GavishDonoho(_) => "gavish-donoho".into(),
            Criterion::CrossValidation { .. } => "cv".into(),
        }
    }

    /// What the criterion costs beyond one exact fit of the whole data.
    pub fn extra_work(&self) -> ExtraWork {
        match *self {
            Criterion::ParallelAnalysis { permutations, .. } => {
                ExtraWork::PermutedSpectra(permutations)
            }
            Criterion::CrossValidation { folds, .. } => ExtraWork::FoldFits(folds),
            _ => ExtraWork::None,
        }
    }
}

/// What a criterion costs beyond the spectrum of one exact fit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExtraWork {
    /// Nothing: the criterion reads the fit's eigenvalues.
    None,
    /// The eigenvalues of this many permuted copies of the data (parallel analysis).
    PermutedSpectra(usize),
    /// One exact fit of the training rows per fold, and one projection of every row onto its
    /// fold's components (cross-validation).
    FoldFits(usize),
}

/// The noise level Gavish–Donoho's threshold used.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum NoiseLevel {
    /// Given by the caller: the standard deviation per entry.
    Known(f64),
    /// Estimated from the median singular value: `σ̂ = median / √(n · μ_β)`, with `μ_β` the
    /// median of the Marchenko–Pastur distribution.
    Estimated(f64),
}

impl NoiseLevel {
    /// The standard deviation per entry, given or estimated.
    pub fn sigma(self) -> f64 {
        match self {
            NoiseLevel::Known(s) | NoiseLevel::Estimated(s) => s,
        }
    }
}

/// How a criterion arrived at its number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChoiceOutcome {
    /// The rule's own answer.
    Chosen,
    /// The centred data has exact rank r below the dimension it could span (noise-free beyond
    /// r): every probabilistic-PCA likelihood is unbounded at r, which is chosen (or the
    /// largest number considered, when r is more).
    ExactRank {
        /// r.
        rank: usize,
    },
    /// The rule keeps no component (nothing above its threshold, or every eigenvalue equal);
    /// a model has at least one.
    RaisedToOne,
    /// The rule would keep more than the largest number considered, which is kept.
    Capped,
    /// The centred data spans one dimension (two samples, or one feature): one component.
    SingleDimension,
}

/// How a fit's number of components was chosen: by which rule, the number, and the value that
/// decided it.
///
/// `value` is, by criterion: the cumulative explained-variance ratio reached (variance
/// fraction); the mean eigenvalue (Kaiser); the broken stick's expected ratio at M (broken
/// stick); the permuted eigenvalues' percentile at M (parallel analysis); the log evidence at M
/// (mle); the threshold τ on the singular values (Gavish–Donoho); the mean held-out
/// log-likelihood per sample at M (cross-validation). With [`ChoiceOutcome::ExactRank`] it is
/// the rank's eigenvalue over the largest (the last one above rounding), and NaN where the rule
/// was not evaluated.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ComponentChoice {
    /// The rule.
    pub criterion: Criterion,
    /// The number of components it chose, at least 1.
    pub n_components: usize,
    /// The number that decided it (see above).
    pub value: f64,
    /// How it was reached.
    pub outcome: ChoiceOutcome,
}

impl fmt::Display for ComponentChoice {
    /// One line for a fit's summary, e.g. `3 component(s) chosen by mle (Minka's evidence):
    /// log evidence -1234.5`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = self.n_components;
        let v = self.value;
        match self.criterion {
            Criterion::VarianceFraction(fraction) => write!(
                f,
                "{m} component(s) chosen by variance {fraction}: the fewest reaching {}% of the variance ({}%)",
                fraction * 100.0,
                round_percent(v)
            )?,
            Criterion::Kaiser => write!(
                f,
                "{m} component(s) chosen by Kaiser's rule: eigenvalues above the mean {v:.6e}"
            )?,
            Criterion::BrokenStick => write!(
                f,
                "{m} component(s) chosen by the broken stick (expected ratio at {m}: {v:.4})"
            )?,
            Criterion::ParallelAnalysis {
                permutations,
                percentile,
                seed,
            } => write!(
                f,
                "{m} component(s) chosen by parallel analysis: eigenvalues above the {percentile}th \
                 percentile of {permutations} column permutations (seed {seed}; at {m}: {v:.6e})"
            )?,
            Criterion::Mle => write!(
                f,
                "{m} component(s) chosen by mle (Minka's Bayesian evidence): log evidence {v:.6}"
            )?,
            Criterion::GavishDonoho(noise) => {
                let how = match noise {
                    NoiseLevel::Known(s) => format!("noise σ {s} given"),
                    NoiseLevel::Estimated(s) => {
                        format!("noise σ {s:.6e} estimated from the median singular value")
                    }
                };
                write!(
                    f,
                    "{m} component(s) chosen by gavish-donoho: singular values above the threshold {v:.6e} ({how})"
                )?
            }
            Criterion::CrossValidation { folds, seed } => write!(
                f,
                "{m} component(s) chosen by cv ({folds}-fold cross-validation, seed {seed}): mean held-out log-likelihood {v:.6} per sample"
            )?,
        }
        match self.outcome {
            ChoiceOutcome::Chosen => Ok(()),
            ChoiceOutcome::ExactRank { rank } if rank > m => write!(
                f,
                "; the centred data has rank {rank} exactly (noise-free beyond it), where the likelihood is unbounded; capped at {m}"
            ),
            ChoiceOutcome::ExactRank { rank } => write!(
                f,
                "; the centred data has rank {rank} exactly (noise-free beyond it), where the likelihood is unbounded"
            ),
            ChoiceOutcome::RaisedToOne => {
                f.write_str("; the rule keeps no component, and a model keeps at least 1")
            }
            ChoiceOutcome::Capped => {
                write!(f, "; the rule would keep more, capped at {m}")
            }
            ChoiceOutcome::SingleDimension => {
                f.write_str("; the centred data spans a single dimension")
            }
        }
    }
}

/// A percentage with enough digits to tell it from its neighbours.
fn round_percent(ratio: f64) -> String {
    let p = ratio * 100.0;
    let s = format!("{p:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A criterion's curve over M = 1, 2, …: the statistic it reads at each M and, for a rule that
/// compares it with a threshold, the threshold at each M (`None` for a rule that takes the
/// largest statistic, and where the statistic is undefined).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Curve {
    /// The statistic at M = 1, 2, … (index M − 1).
    pub statistic: Vec<Option<f64>>,
    /// What it is compared with at each M, as long as `statistic`.
    pub threshold: Vec<Option<f64>>,
}

impl Curve {
    /// A statistic compared with a threshold at every M (the threshold as long as the
    /// statistic, or shorter).
    pub(crate) fn compared(
        statistic: impl Iterator<Item = f64>,
        threshold: impl Iterator<Item = f64>,
    ) -> Curve {
        let statistic: Vec<Option<f64>> = statistic.map(Some).collect();
        let mut threshold: Vec<Option<f64>> = threshold.take(statistic.len()).map(Some).collect();
        threshold.resize(statistic.len(), None);
        Curve {
            statistic,
            threshold,
        }
    }

    /// A statistic whose largest value decides.
    pub(crate) fn maximized(statistic: Vec<Option<f64>>) -> Curve {
        let threshold = vec![None; statistic.len()];
        Curve {
            statistic,
            threshold,
        }
    }

    /// The curve cut (or padded with `None`) to `len` values.
    pub(crate) fn resized(mut self, len: usize) -> Curve {
        self.statistic.resize(len, None);
        self.threshold.resize(len, None);
        self
    }
}

/// Eigenvalues below `RANK_TOLERANCE · max(N, D) · ε · λ₁` count as zero: the rounding of an
/// exactly zero eigenvalue by the exact solvers (the covariance route's backward-stable
/// eigensolver leaves about `D · ε · λ₁`; the accumulation of N rows adds its own).
const RANK_TOLERANCE: f64 = 64.0;

/// The eigenvalues of a sample covariance (or correlation) matrix and the shape they came from:
/// what every criterion reads.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SampleSpectrum<'a> {
    /// Every eigenvalue the exact solvers return, min(N, D) of them, non-increasing.
    pub(crate) eigenvalues: &'a [f64],
    /// N.
    pub(crate) n_samples: usize,
    /// D (see [`Self::varying`]).
    pub(crate) n_features: usize,
    /// The divisor of the covariance is `N − ddof`.
    pub(crate) ddof: usize,
    /// trace(S): the denominator of the explained-variance ratios.
    pub(crate) total_variance: f64,
}

impl SampleSpectrum<'_> {
    /// The same spectrum without `constant` features of zero variance. A constant feature
    /// carries neither signal nor noise; it only adds a zero eigenvalue, which reads as an exact
    /// rank to a likelihood and pulls Gavish–Donoho's median down: cross-validation and
    /// Gavish–Donoho leave constant features out. (mle keeps them, as scikit-learn does: its
    /// answer for data with constant features is the rank.)
    pub(crate) fn varying(&self, constant: usize) -> Self {
        SampleSpectrum {
            n_features: self.n_features - constant,
            ..*self
        }
    }

    /// `min(N − 1, D)`: the dimension the centred data can span (centring removes one).
    pub(crate) fn span(&self) -> usize {
        (self.n_samples.saturating_sub(1))
            .min(self.n_features)
            .min(self.eigenvalues.len())
    }

    /// The largest eigenvalue that counts as a rounded zero.
    pub(crate) fn rounding(&self) -> f64 {
        let largest = self.eigenvalues.first().copied().unwrap_or(0.0);
        let size = self.n_samples.max(self.n_features) as f64;
        RANK_TOLERANCE * size * f64::EPSILON * largest
    }

    /// The numerical rank: the eigenvalues above [`Self::rounding`] (0 for constant data).
    pub(crate) fn rank(&self) -> usize {
        let rounding = self.rounding();
        self.eigenvalues[..self.span()]
            .iter()
            .take_while(|&&v| v > rounding)
            .count()
    }

    /// The eigenvalues' ratios to the total variance (0 when it is 0).
    pub(crate) fn ratio(&self, value: f64) -> f64 {
        if self.total_variance > 0.0 {
            value / self.total_variance
        } else {
            0.0
        }
    }

    /// The singular values of the centred (scaled) data, `sqrt(λ (N − ddof))`, over the span.
    pub(crate) fn singular_values(&self) -> Vec<f64> {
        let divisor = (self.n_samples - self.ddof) as f64;
        self.eigenvalues[..self.span()]
            .iter()
            .map(|v| (v * divisor).sqrt())
            .collect()
    }

    /// An error unless the criterion has something to choose from: at least 2 samples, and
    /// some variance.
    pub(crate) fn check_choosable(&self, criterion: &'static str) -> Result<()> {
        if self.n_samples < 2 {
            return Err(PcaError::CannotChoose {
                criterion,
                reason: format!(
                    "it needs at least 2 samples; the data has {}",
                    self.n_samples
                ),
            });
        }
        if self.rank() == 0 {
            return Err(PcaError::CannotChoose {
                criterion,
                reason: "every feature is constant (total variance 0)".into(),
            });
        }
        Ok(())
    }

    /// The choice of a data set of exact rank below its span (noise-free beyond it), when it is
    /// one: every probabilistic-PCA likelihood is unbounded there. `None` for full-rank data.
    pub(crate) fn exact_rank(&self, criterion: Criterion, max: usize) -> Option<ComponentChoice> {
        let rank = self.rank();
        (rank >= 1 && rank < self.span()).then(|| ComponentChoice {
            criterion,
            n_components: rank.min(max),
            value: self.eigenvalues[rank - 1] / self.eigenvalues[0],
            outcome: ChoiceOutcome::ExactRank { rank },
        })
    }
}

/// The choice of a rule that takes the largest value of its curve (index M − 1; `None` where
/// undefined), the first on ties: capped at `max` when that is beyond it; `None` when the
/// curve has no value.
pub(crate) fn largest_of(
    criterion: Criterion,
    curve: &[Option<f64>],
    max: usize,
) -> Option<ComponentChoice> {
    let (m, value) = curve
        .iter()
        .enumerate()
        .filter_map(|(i, v)| v.map(|v| (i + 1, v)))
        .fold(None, |best: Option<(usize, f64)>, (m, v)| match best {
            Some((_, b)) if b >= v => best,
            _ => Some((m, v)),
        })?;
    Some(if m > max {
        ComponentChoice {
            criterion,
            n_components: max,
            value: curve[max - 1].unwrap_or(f64::NAN),
            outcome: ChoiceOutcome::Capped,
        }
    } else {
        ComponentChoice {
            criterion,
            n_components: m,
            value,
            outcome: ChoiceOutcome::Chosen,
        }
    })
}

/// The choice of a rule that keeps the `count` leading components passing its test, within
/// `1..=max`: at least one, at most `max`.
pub(crate) fn leading_count(
    criterion: Criterion,
    count: usize,
    max: usize,
    value_at: impl Fn(usize) -> f64,
) -> ComponentChoice {
    let (n_components, outcome) = if count == 0 {
        (1, ChoiceOutcome::RaisedToOne)
    } else if count > max {
        (max, ChoiceOutcome::Capped)
    } else {
        (count, ChoiceOutcome::Chosen)
    };
    ComponentChoice {
        criterion,
        n_components,
        value: value_at(n_components),
        outcome,
    }
}

/// A spectrum of `n` samples of `d` features with ddof 1, for tests.
#[cfg(test)]
pub(crate) fn spectrum(values: &[f64], n: usize, d: usize) -> SampleSpectrum<'_> {
    SampleSpectrum {
        eigenvalues: values,
        n_samples: n,
        n_features: d,
        ddof: 1,
        total_variance: values.iter().sum(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_span_leaves_out_the_centring_direction_of_wide_data() {
        let values = [3.0, 2.0, 1.0, 0.0];
        assert_eq!(spectrum(&values, 4, 10).span(), 3);
        assert_eq!(spectrum(&values, 100, 4).span(), 4);
        assert_eq!(spectrum(&values, 4, 10).rank(), 3);
        assert!(
            spectrum(&values, 4, 10)
                .exact_rank(Criterion::Mle, 9)
                .is_none()
        );
    }

    #[test]
    fn rounded_zeros_do_not_count_in_the_rank() {
        let values = [5.0, 1.0, 1e-14, 3e-16];
        let s = spectrum(&values, 50, 4);
        assert_eq!(s.rank(), 2);
        let choice = s.exact_rank(Criterion::Mle, 4).unwrap();
        assert_eq!(
            (choice.n_components, choice.outcome),
            (2, ChoiceOutcome::ExactRank { rank: 2 })
        );
        let capped = s.exact_rank(Criterion::Mle, 1).unwrap();
        assert_eq!(
            (capped.n_components, capped.outcome),
            (1, ChoiceOutcome::ExactRank { rank: 2 })
        );
        assert!(capped.to_string().ends_with("capped at 1"), "{capped}");
        assert_eq!(spectrum(&[0.0, 0.0], 5, 2).rank(), 0);
    }

    #[test]
    fn the_largest_value_is_the_first_on_ties_and_capped() {
        let curve = [Some(1.0), None, Some(3.0), Some(3.0), Some(2.0)];
        let best = largest_of(Criterion::Mle, &curve, 5).unwrap();
        assert_eq!((best.n_components, best.value), (3, 3.0));
        let capped = largest_of(Criterion::Mle, &curve, 2).unwrap();
        assert_eq!(
            (capped.n_components, capped.outcome),
            (2, ChoiceOutcome::Capped)
        );
        assert!(largest_of(Criterion::Mle, &[None, None], 2).is_none());
    }

    #[test]
    fn leading_counts_are_kept_within_one_and_the_maximum() {
        let at = |m: usize| m as f64;
        let none = leading_count(Criterion::Kaiser, 0, 5, at);
        assert_eq!(
            (none.n_components, none.outcome),
            (1, ChoiceOutcome::RaisedToOne)
        );
        let many = leading_count(Criterion::Kaiser, 7, 5, at);
        assert_eq!(
            (many.n_components, many.outcome),
            (5, ChoiceOutcome::Capped)
        );
        let some = leading_count(Criterion::Kaiser, 3, 5, at);
        assert_eq!((some.n_components, some.value), (3, 3.0));
    }

    #[test]
    fn the_summary_line_names_the_criterion_and_the_value() {
        let choice = ComponentChoice {
            criterion: Criterion::GavishDonoho(NoiseLevel::Estimated(0.5)),
            n_components: 3,
            value: 12.5,
            outcome: ChoiceOutcome::Chosen,
        };
        let line = choice.to_string();
        assert!(
            line.starts_with("3 component(s) chosen by gavish-donoho"),
            "{line}"
        );
        assert!(
            line.contains("1.250000e1") && line.contains("estimated"),
            "{line}"
        );
        let exact = ComponentChoice {
            criterion: Criterion::Mle,
            n_components: 2,
            value: 1e-3,
            outcome: ChoiceOutcome::ExactRank { rank: 2 },
        };
        assert!(exact.to_string().contains("rank 2 exactly"), "{exact}");
    }
}
