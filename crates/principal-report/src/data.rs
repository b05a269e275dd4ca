//! What the report keeps of the data: gathered chunk by chunk, so that a data set larger than
//! memory can be streamed through the model once.
//!
//! Per sample only the codes on the first four components (for the map and the pairs grid)
//! and the label are kept; for the reconstruction-error curve, two kinds of sums: the total
//! squared norm of the centred-and-scaled rows and, per component, the sum of squared codes
//! (see [`reconstruction_error_curve`](crate::reconstruction_error_curve)); and the raw values
//! and codes of the few samples chosen for the reconstructions figure.

use faer::MatRef;

use crate::curves::{CompensatedSum, reconstruction_error_curve};
use crate::error::{ReportError, Result};
use crate::input::{Labels, ModelView};

/// Components kept per sample for the 2-D map and the pairs grid.
pub const LEADING_COMPONENTS: usize = 4;

/// Which samples the reconstructions figure shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SampleChoice {
    /// With labels, the first sample of each of the first `max` classes (in class order);
    /// without labels, the first `max` rows.
    FirstOfEachClass {
        /// At most this many samples.
        max: usize,
    },
    /// These 0-based rows, in this order (repeats dropped).
    Rows(Vec<usize>),
}

impl Default for SampleChoice {
    /// The first sample of each of up to ten classes (a digit of each kind for MNIST).
    fn default() -> Self {
        SampleChoice::FirstOfEachClass { max: 10 }
    }
}

/// A sample kept whole for the reconstructions figure.
#[derive(Clone, Debug, PartialEq)]
pub struct ChosenSample {
    /// 0-based row in the data.
    pub row: usize,
    /// Its class, when there are labels.
    pub class: Option<usize>,
    /// Its values as read (length D).
    pub values: Vec<f64>,
    /// Its codes on every component (length M).
    pub codes: Vec<f64>,
}

/// Gathers [`ReportData`] from chunks of rows and their codes.
///
/// ```
/// use principal_report::{faer::mat, ModelView, ReportDataBuilder, SampleChoice, Scaling};
///
/// // One component along the diagonal through the mean (1, 1).
/// let components = mat![[std::f64::consts::FRAC_1_SQRT_2, std::f64::consts::FRAC_1_SQRT_2]];
/// let model = ModelView {
///     n_samples: 2, ddof: 1, scaling: Scaling::Centre, solver: "svd",
///     total_variance: 4.0, noise_variance: 0.0,
///     mean: &[1.0, 1.0], scale: None, components: components.as_ref(),
///     explained_variance: &[4.0], explained_variance_ratio: &[1.0],
/// };
/// let rows = mat![[0.0, 0.0], [2.0, 2.0]];
/// let codes = mat![[-std::f64::consts::SQRT_2], [std::f64::consts::SQRT_2]];
/// let mut builder = ReportDataBuilder::new(&model, None, SampleChoice::default())?;
/// builder.push(rows.as_ref(), codes.as_ref())?;
/// let data = builder.finish()?;
/// assert_eq!(data.n_rows(), 2);
/// let curve = data.reconstruction_error_curve();
/// assert!((curve[0] - 2.0).abs() < 1e-12 && curve[1].abs() < 1e-12);
/// # Ok::<(), principal_report::ReportError>(())
/// ```
#[derive(Debug)]
pub struct ReportDataBuilder<'a> {
    mean: &'a [f64],
    scale: Option<&'a [f64]>,
    n_components: usize,
    labels: Option<Labels>,
    choice: SampleChoice,
    rows: usize,
    leading: Vec<f64>,
    squared_norms: CompensatedSum,
    code_squares: Vec<CompensatedSum>,
    samples: Vec<ChosenSample>,
}

impl<'a> ReportDataBuilder<'a> {
    /// Starts gathering data for `model`. `labels`, when given, must have one entry per row
    /// pushed (checked by [`push`](Self::push) and [`finish`](Self::finish)).
    pub fn new(
        model: &ModelView<'a>,
        labels: Option<Labels>,
        choice: SampleChoice,
    ) -> Result<Self> {
        model.validate()?;
        let m = model.n_components();
        Ok(ReportDataBuilder {
            mean: model.mean,
            scale: model.scale,
            n_components: m,
            labels,
            choice,
            rows: 0,
            leading: Vec::new(),
            squared_norms: CompensatedSum::default(),
            code_squares: vec![CompensatedSum::default(); m],
            samples: Vec::new(),
        })
    }

    /// Adds the next rows of the data, as read (`T` is `f32` or `f64`), and their codes
    /// `z = Bᵀ (x − μ) / σ` computed by the model (e.g. `principal::PcaModel::transform`).
    pub fn push<T: Copy + Into<f64>>(
        &mut self,
        rows: MatRef<'_, T>,
        codes: MatRef<'_, f64>,
    ) -> Result<()> {
        let (d, m) = (self.mean.len(), self.n_components);
        if rows.ncols() != d {
            return Err(ReportError::FeatureMismatch {
                expected: d,
                found: rows.ncols(),
            });
        }
        if codes.ncols() != m {
            return Err(ReportError::ComponentMismatch {
                expected: m,
                found: codes.ncols(),
            });
        }
        if rows.nrows() != codes.nrows() {
            return Err(ReportError::ChunkRowMismatch {
                data_rows: rows.nrows(),
                code_rows: codes.nrows(),
            });
        }
        if let Some(labels) = &self.labels
            && self.rows + rows.nrows() > labels.len()
        {
            return Err(ReportError::MoreRowsThanLabels {
                labels: labels.len(),
                row: labels.len(),
            });
        }
        let leading = m.min(LEADING_COMPONENTS);
        let mut values = vec![0.0; d];
        for i in 0..rows.nrows() {
            let row = self.rows + i;
            let mut squared_norm = 0.0;
            for j in 0..d {
                let x: f64 = rows[(i, j)].into();
                if !x.is_finite() {
                    return Err(ReportError::NonFinite {
                        what: "data",
                        row,
                        column: j,
                        value: x,
                    });
                }
                values[j] = x;
                let centred = x - self.mean[j];
                let scaled = self.scale.map_or(centred, |s| centred / s[j]);
                squared_norm += scaled * scaled;
            }
            for k in 0..m {
                let z = codes[(i, k)];
                if !z.is_finite() {
                    return Err(ReportError::NonFinite {
                        what: "code",
                        row,
                        column: k,
                        value: z,
                    });
                }
            }
            self.squared_norms.add(squared_norm);
            for k in 0..m {
                let z = codes[(i, k)];
                self.code_squares[k].add(z * z);
            }
            self.leading.extend((0..leading).map(|k| codes[(i, k)]));
            let class = self.labels.as_ref().map(|l| l.class_of(row));
            if self.wants(row, class) {
                self.samples.push(ChosenSample {
                    row,
                    class,
                    values: values.clone(),
                    codes: (0..m).map(|k| codes[(i, k)]).collect(),
                });
            }
        }
        self.rows += rows.nrows();
        Ok(())
    }

    /// Whether the sample at `row` (of `class`) is one to keep for the reconstructions.
    fn wants(&self, row: usize, class: Option<usize>) -> bool {
        match (&self.choice, class) {
            (SampleChoice::FirstOfEachClass { max }, Some(c)) => {
                c < *max && !self.samples.iter().any(|s| s.class == Some(c))
            }
            (SampleChoice::FirstOfEachClass { max }, None) => row < *max,
            (SampleChoice::Rows(rows), _) => rows.contains(&row),
        }
    }

    /// Checks the row count against the labels and the chosen rows, and returns the summary.
    pub fn finish(self) -> Result<ReportData> {
        if self.rows == 0 {
            return Err(ReportError::NoRows);
        }
        if let Some(labels) = &self.labels
            && labels.len() != self.rows
        {
            return Err(ReportError::LabelCountMismatch {
                labels: labels.len(),
                rows: self.rows,
            });
        }
        let mut samples = self.samples;
        match &self.choice {
            SampleChoice::FirstOfEachClass { .. } => {
                samples.sort_by_key(|s| (s.class, s.row));
            }
            SampleChoice::Rows(rows) => {
                if let Some(&row) = rows.iter().find(|&&r| r >= self.rows) {
                    return Err(ReportError::SampleOutOfRange {
                        row,
                        rows: self.rows,
                    });
                }
                let position = |row| rows.iter().position(|&r| r == row);
                samples.sort_by_key(|s| position(s.row));
            }
        }
        Ok(ReportData {
            n_rows: self.rows,
            n_features: self.mean.len(),
            n_components: self.n_components,
            n_leading: self.n_components.min(LEADING_COMPONENTS),
            leading: self.leading,
            labels: self.labels,
            squared_norm_total: self.squared_norms.value(),
            code_squares: self
                .code_squares
                .iter()
                .map(CompensatedSum::value)
                .collect(),
            samples,
        })
    }
}

/// What the report needs of the data, gathered by [`ReportDataBuilder`].
#[derive(Clone, Debug, PartialEq)]
pub struct ReportData {
    n_rows: usize,
    n_features: usize,
    n_components: usize,
    n_leading: usize,
    leading: Vec<f64>,
    labels: Option<Labels>,
    squared_norm_total: f64,
    code_squares: Vec<f64>,
    samples: Vec<ChosenSample>,
}

impl ReportData {
    /// Rows of data N.
    pub fn n_rows(&self) -> usize {
        self.n_rows
    }

    /// Features of the model the data was summarised with.
    pub fn n_features(&self) -> usize {
        self.n_features
    }

    /// Components of the model the data was summarised with.
    pub fn n_components(&self) -> usize {
        self.n_components
    }

    /// The labels, when given.
    pub fn labels(&self) -> Option<&Labels> {
        self.labels.as_ref()
    }

    /// Codes kept per sample: `min(M, 4)`.
    pub fn n_leading(&self) -> usize {
        self.n_leading
    }

    /// Code of sample `row` on component `k` (0-based, `k < n_leading()`).
    ///
    /// # Panics
    /// When `row` or `k` is out of range.
    #[track_caller]
    pub fn code(&self, row: usize, k: usize) -> f64 {
        assert!(k < self.n_leading, "component {k} was not kept");
        self.leading[row * self.n_leading + k]
    }

    /// `Σₙ ‖(xₙ − μ)/σ‖²` over the data.
    pub fn squared_norm_total(&self) -> f64 {
        self.squared_norm_total
    }

    /// `Σₙ zₙₘ²` for each component m.
    pub fn code_squares(&self) -> &[f64] {
        &self.code_squares
    }

    /// The samples kept for the reconstructions figure.
    pub fn samples(&self) -> &[ChosenSample] {
        &self.samples
    }

    /// Mean squared reconstruction error with k = 0, 1, …, M components (see
    /// [`reconstruction_error_curve`]).
    pub fn reconstruction_error_curve(&self) -> Vec<f64> {
        reconstruction_error_curve(self.n_rows, self.squared_norm_total, &self.code_squares)
    }
}

/// Errs unless `data` was gathered for a model of `model`'s shape.
pub(crate) fn check_data(model: &ModelView<'_>, data: &ReportData) -> Result<()> {
    if data.n_features() != model.n_features() || data.n_components() != model.n_components() {
        return Err(ReportError::DataModelMismatch {
            data_features: data.n_features(),
            data_components: data.n_components(),
            model_features: model.n_features(),
            model_components: model.n_components(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use faer::{Mat, mat};

    use super::*;
    use crate::Scaling;

    fn model_of<'a>(components: &'a Mat<f64>, mean: &'a [f64]) -> ModelView<'a> {
        ModelView {
            n_samples: 10,
            ddof: 1,
            scaling: Scaling::Centre,
            solver: "svd",
            total_variance: 1.0,
            noise_variance: 0.0,
            mean,
            scale: None,
            components: components.as_ref(),
            explained_variance: &[1.0],
            explained_variance_ratio: &[1.0],
        }
    }

    #[test]
    fn the_first_sample_of_each_class_is_kept_in_class_order() {
        let components = mat![[1.0, 0.0]];
        let model = model_of(&components, &[0.0, 0.0]);
        let labels = Labels::new(&["b", "a", "b", "c", "a"]);
        let mut builder = ReportDataBuilder::new(
            &model,
            Some(labels),
            SampleChoice::FirstOfEachClass { max: 2 },
        )
        .unwrap();
        let rows = Mat::from_fn(5, 2, |i, j| (10 * i + j) as f64);
        let codes = Mat::from_fn(5, 1, |i, _| rows[(i, 0)]);
        builder.push(rows.as_ref(), codes.as_ref()).unwrap();
        let data = builder.finish().unwrap();
        let kept: Vec<(usize, Option<usize>)> =
            data.samples().iter().map(|s| (s.row, s.class)).collect();
        assert_eq!(kept, [(1, Some(0)), (0, Some(1))]);
        assert_eq!(data.samples()[1].values, [0.0, 1.0]);
    }

    #[test]
    fn chosen_rows_beyond_the_data_are_an_error_naming_the_row() {
        let components = mat![[1.0, 0.0]];
        let model = model_of(&components, &[0.0, 0.0]);
        let mut builder =
            ReportDataBuilder::new(&model, None, SampleChoice::Rows(vec![1, 7])).unwrap();
        let rows = Mat::<f64>::zeros(3, 2);
        builder
            .push(rows.as_ref(), Mat::<f64>::zeros(3, 1).as_ref())
            .unwrap();
        assert!(matches!(
            builder.finish(),
            Err(ReportError::SampleOutOfRange { row: 7, rows: 3 })
        ));
    }

    #[test]
    fn a_nan_in_the_data_is_named_by_its_row_in_the_whole_data_set() {
        let components = mat![[1.0, 0.0]];
        let model = model_of(&components, &[0.0, 0.0]);
        let mut builder = ReportDataBuilder::new(&model, None, SampleChoice::default()).unwrap();
        let zeros = Mat::<f64>::zeros(3, 2);
        let codes = Mat::<f64>::zeros(3, 1);
        builder.push(zeros.as_ref(), codes.as_ref()).unwrap();
        let mut bad = Mat::<f32>::zeros(3, 2);
        bad[(1, 1)] = f32::NAN;
        let err = builder.push(bad.as_ref(), codes.as_ref()).unwrap_err();
        assert!(
            matches!(
                err,
                ReportError::NonFinite {
                    what: "data",
                    row: 4,
                    column: 1,
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn codes_of_the_wrong_width_and_rows_without_labels_are_errors() {
        let components = mat![[1.0, 0.0]];
        let model = model_of(&components, &[0.0, 0.0]);
        let labels = Labels::new(&["x", "y"]);
        let mut builder =
            ReportDataBuilder::new(&model, Some(labels), SampleChoice::default()).unwrap();
        let rows = Mat::<f64>::zeros(3, 2);
        assert!(matches!(
            builder.push(rows.as_ref(), Mat::<f64>::zeros(3, 2).as_ref()),
            Err(ReportError::ComponentMismatch {
                expected: 1,
                found: 2
            })
        ));
        assert!(matches!(
            builder.push(rows.as_ref(), Mat::<f64>::zeros(3, 1).as_ref()),
            Err(ReportError::MoreRowsThanLabels { labels: 2, row: 2 })
        ));
    }
}
