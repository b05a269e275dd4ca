//! What the caller hands the report: the model's numbers, labels, an image shape and
//! classification results. Plain numbers only; nothing here reads a file.

use std::cmp::Ordering;
use std::collections::HashMap;

use faer::MatRef;

use crate::error::{ReportError, Result};

/// Whether the model centred only or also divided each feature by its standard deviation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Scaling {
    /// Centred only: PCA of the covariance matrix.
    #[default]
    Centre,
    /// Centred and divided by the standard deviation: PCA of the correlation matrix.
    Standardize,
}

/// A fitted model, borrowed as plain numbers (the fields of `principal::PcaModel`).
///
/// Conventions: the data is N×D, one sample per row; codes are `z = Bᵀ (x − μ) / σ` and a
/// reconstruction is `x̃ = (B z) σ + μ` (σ = 1 when only centred);
/// `explained_variance_ratio[m] = λ_m / total_variance`, the total including discarded
/// directions; every variance divides by `N − ddof`.
///
/// [`Report::new`](crate::Report::new) checks that the arrays fit together.
#[derive(Clone, Copy, Debug)]
pub struct ModelView<'a> {
    /// Training samples N.
    pub n_samples: usize,
    /// Delta degrees of freedom of every variance (0 or 1).
    pub ddof: usize,
    /// Centre only, or standardize.
    pub scaling: Scaling,
    /// The solver that fitted the model, as its name (e.g. `"covariance"`).
    pub solver: &'a str,
    /// trace(S), in the model's units (standardized units when standardized).
    pub total_variance: f64,
    /// Mean of the discarded eigenvalues (the probabilistic-PCA σ²).
    pub noise_variance: f64,
    /// Training mean μ, length D.
    pub mean: &'a [f64],
    /// Training standard deviations σ (length D) when standardized.
    pub scale: Option<&'a [f64]>,
    /// Principal axes B, M×D with orthonormal rows, by decreasing eigenvalue.
    pub components: MatRef<'a, f64>,
    /// Eigenvalues λ₁ ≥ … ≥ λ_M.
    pub explained_variance: &'a [f64],
    /// λ_m / total_variance.
    pub explained_variance_ratio: &'a [f64],
}

impl ModelView<'_> {
    /// Number of features D.
    pub fn n_features(&self) -> usize {
        self.mean.len()
    }

    /// Number of components M.
    pub fn n_components(&self) -> usize {
        self.components.nrows()
    }

    /// Checks every length and that every number is finite.
    pub(crate) fn validate(&self) -> Result<()> {
        let bad = |message: String| Err(ReportError::InconsistentModel(message));
        let (d, m) = (self.n_features(), self.n_components());
        if d == 0 {
            return bad("the mean is empty".into());
        }
        if m == 0 {
            return bad("the model has no components".into());
        }
        if self.components.ncols() != d {
            return bad(format!(
                "the components are {m}×{} but the mean has {d} entries",
                self.components.ncols()
            ));
        }
        for (name, len) in [
            ("explained_variance", self.explained_variance.len()),
            (
                "explained_variance_ratio",
                self.explained_variance_ratio.len(),
            ),
        ] {
            if len != m {
                return bad(format!("{name} has {len} entries for {m} components"));
            }
        }
        if let Some(scale) = self.scale {
            if scale.len() != d {
                return bad(format!(
                    "the scale has {} entries but the mean has {d}",
                    scale.len()
                ));
            }
            if let Some(j) = scale.iter().position(|s| !(s.is_finite() && *s > 0.0)) {
                return bad(format!(
                    "scale[{j}] = {} is not a positive number",
                    scale[j]
                ));
            }
        }
        if (self.scale.is_some()) != (self.scaling == Scaling::Standardize) {
            return bad(format!(
                "scaling is {:?} but a scale is {}",
                self.scaling,
                if self.scale.is_some() {
                    "given"
                } else {
                    "missing"
                }
            ));
        }
        if self.n_samples <= self.ddof {
            return bad(format!(
                "n_samples {} is too few for ddof {}",
                self.n_samples, self.ddof
            ));
        }
        let named = [
            ("mean", self.mean),
            ("explained_variance", self.explained_variance),
            ("explained_variance_ratio", self.explained_variance_ratio),
            ("total_variance", std::slice::from_ref(&self.total_variance)),
            ("noise_variance", std::slice::from_ref(&self.noise_variance)),
        ];
        for (name, values) in named {
            if let Some(j) = values.iter().position(|v| !v.is_finite()) {
                return bad(format!("{name}[{j}] = {} is not finite", values[j]));
            }
        }
        for i in 0..m {
            for j in 0..d {
                let v = self.components[(i, j)];
                if !v.is_finite() {
                    return bad(format!("components[{i}, {j}] = {v} is not finite"));
                }
            }
        }
        Ok(())
    }
}

/// The shape of an image when every sample is one (pixels row by row, as MNIST).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImageShape {
    height: usize,
    width: usize,
}

impl ImageShape {
    /// `height` rows of `width` pixels; neither may be zero, and their product must not
    /// overflow (a wrapped product could equal the number of features by accident).
    pub fn new(height: usize, width: usize) -> Result<Self> {
        if height == 0 || width == 0 {
            return Err(ReportError::EmptyImageShape { height, width });
        }
        if height.checked_mul(width).is_none() {
            return Err(ReportError::ImageShapeTooLarge { height, width });
        }
        Ok(ImageShape { height, width })
    }

    /// Rows of pixels.
    pub fn height(&self) -> usize {
        self.height
    }

    /// Pixels per row.
    pub fn width(&self) -> usize {
        self.width
    }

    /// `height × width`.
    pub fn pixels(&self) -> usize {
        self.height * self.width
    }

    /// Errs unless `height × width = n_features`.
    pub(crate) fn check(&self, n_features: usize) -> Result<()> {
        if self.pixels() != n_features {
            return Err(ReportError::ImageShapeMismatch {
                height: self.height,
                width: self.width,
                n_features,
            });
        }
        Ok(())
    }
}

/// One label per sample, grouped into classes.
///
/// Classes are sorted by value when every label reads as a number (so `"10"` comes after
/// `"9"`), otherwise as text.
#[derive(Clone, Debug, PartialEq)]
pub struct Labels {
    classes: Vec<String>,
    class_of_row: Vec<usize>,
}

impl Labels {
    /// Groups `values` (one per sample, in row order) into classes.
    ///
    /// ```
    /// let labels = principal_report::Labels::new(&["10", "9", "10", "1"]);
    /// assert_eq!(labels.classes(), ["1", "9", "10"]);
    /// assert_eq!(labels.class_of(0), 2);
    /// ```
    pub fn new<S: AsRef<str>>(values: &[S]) -> Self {
        let mut distinct: Vec<&str> = values.iter().map(|v| v.as_ref()).collect();
        distinct.sort_unstable();
        distinct.dedup();
        let numbers: Option<Vec<f64>> = distinct
            .iter()
            .map(|s| s.trim().parse::<f64>().ok().filter(|v| v.is_finite()))
            .collect();
        if let Some(numbers) = numbers {
            let mut order: Vec<usize> = (0..distinct.len()).collect();
            order.sort_by(|&a, &b| {
                numbers[a]
                    .partial_cmp(&numbers[b])
                    .unwrap_or(Ordering::Equal)
                    .then_with(|| distinct[a].cmp(distinct[b]))
            });
            distinct = order.into_iter().map(|i| distinct[i]).collect();
        }
        let index: HashMap<&str, usize> =
            distinct.iter().enumerate().map(|(i, &s)| (s, i)).collect();
        let class_of_row = values.iter().map(|v| index[v.as_ref()]).collect();
        Labels {
            classes: distinct.into_iter().map(str::to_owned).collect(),
            class_of_row,
        }
    }

    /// The distinct labels, sorted.
    pub fn classes(&self) -> &[String] {
        &self.classes
    }

    /// The class (an index into [`classes`](Self::classes)) of sample `row`.
    ///
    /// # Panics
    /// When `row` is not below [`len`](Self::len).
    #[track_caller]
    pub fn class_of(&self, row: usize) -> usize {
        self.class_of_row[row]
    }

    /// Number of samples labelled.
    pub fn len(&self) -> usize {
        self.class_of_row.len()
    }

    /// Whether no sample is labelled.
    pub fn is_empty(&self) -> bool {
        self.class_of_row.is_empty()
    }

    /// Samples in each class.
    pub fn counts(&self) -> Vec<usize> {
        let mut counts = vec![0; self.classes.len()];
        for &c in &self.class_of_row {
            counts[c] += 1;
        }
        counts
    }
}

/// Results of nearest-neighbour recognition on the principal codes (eigenfaces): what
/// `principal classify --report` draws.
#[derive(Clone, Debug, PartialEq)]
pub struct Classification {
    classes: Vec<String>,
    confusion: Vec<Vec<u64>>,
    accuracy_by_components: Vec<(usize, f64)>,
    setting: Option<Recognition>,
}

/// How the test samples of a confusion matrix were recognised: by a majority of their
/// `neighbours` nearest training codes on the first `components` components.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Recognition {
    /// K, the number of leading components the codes were compared on.
    pub components: usize,
    /// N, the nearest training codes that vote.
    pub neighbours: usize,
}

impl Recognition {
    /// "the nearest training code on the first 50 components", or "a majority of the 5 nearest
    /// training codes on …": how captions name the method.
    pub fn describe(&self) -> String {
        let on = match self.components {
            1 => "on the first component".to_owned(),
            k => format!("on the first {k} components"),
        };
        match self.neighbours {
            1 => format!("the nearest training code {on}"),
            n => format!("a majority of the {n} nearest training codes {on}"),
        }
    }
}

impl Classification {
    /// `confusion[t][p]` counts test samples of true class `t` predicted as `p` (both indices
    /// into `classes`); `accuracy_by_components` lists `(K, accuracy)` for every number of
    /// components K that was tried (accuracy in [0, 1]; may be empty).
    pub fn new(
        classes: Vec<String>,
        confusion: Vec<Vec<u64>>,
        accuracy_by_components: Vec<(usize, f64)>,
    ) -> Result<Self> {
        let bad = |message: String| Err(ReportError::InvalidClassification(message));
        let k = classes.len();
        if k == 0 {
            return bad("there are no classes".into());
        }
        if confusion.len() != k {
            return bad(format!(
                "the confusion matrix has {} rows for {k} classes",
                confusion.len()
            ));
        }
        if let Some((t, row)) = confusion.iter().enumerate().find(|(_, r)| r.len() != k) {
            return bad(format!(
                "row {t} of the confusion matrix has {} entries for {k} classes",
                row.len()
            ));
        }
        if confusion.iter().flatten().sum::<u64>() == 0 {
            return bad("the confusion matrix counts no sample".into());
        }
        for &(components, accuracy) in &accuracy_by_components {
            if components == 0 {
                return bad("an accuracy is given for 0 components".into());
            }
            if !(0.0..=1.0).contains(&accuracy) {
                return bad(format!(
                    "the accuracy with {components} components is {accuracy}, not in [0, 1]"
                ));
            }
        }
        Ok(Classification {
            classes,
            confusion,
            accuracy_by_components,
            setting: None,
        })
    }

    /// Says how the confusion matrix's predictions were made (shown in captions); errs on a
    /// count of zero.
    pub fn with_setting(mut self, setting: Recognition) -> Result<Self> {
        if setting.components == 0 || setting.neighbours == 0 {
            return Err(ReportError::InvalidClassification(format!(
                "recognition with {} components and {} neighbours",
                setting.components, setting.neighbours
            )));
        }
        self.setting = Some(setting);
        Ok(self)
    }

    /// How the confusion matrix's predictions were made, when said.
    pub fn setting(&self) -> Option<Recognition> {
        self.setting
    }

    /// Class names, in the order of the confusion matrix's rows and columns.
    pub fn classes(&self) -> &[String] {
        &self.classes
    }

    /// `confusion()[true][predicted]`.
    pub fn confusion(&self) -> &[Vec<u64>] {
        &self.confusion
    }

    /// `(K, accuracy)` pairs, as given.
    pub fn accuracy_by_components(&self) -> &[(usize, f64)] {
        &self.accuracy_by_components
    }

    /// Correct predictions over all predictions, from the confusion matrix.
    pub fn accuracy(&self) -> f64 {
        let total: u64 = self.confusion.iter().flatten().sum();
        let correct: u64 = (0..self.classes.len()).map(|i| self.confusion[i][i]).sum();
        correct as f64 / total as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_labels_are_sorted_by_value_and_text_labels_alphabetically() {
        let numbers = Labels::new(&["10", "2", "1", "2"]);
        assert_eq!(numbers.classes(), ["1", "2", "10"]);
        assert_eq!(
            (0..4).map(|i| numbers.class_of(i)).collect::<Vec<_>>(),
            [2, 1, 0, 1]
        );
        assert_eq!(numbers.counts(), [1, 2, 1]);
        let words = Labels::new(&["virginica", "setosa", "versicolor", "setosa"]);
        assert_eq!(words.classes(), ["setosa", "versicolor", "virginica"]);
    }

    #[test]
    fn an_image_shape_with_a_zero_side_is_refused() {
        assert!(matches!(
            ImageShape::new(0, 28),
            Err(ReportError::EmptyImageShape {
                height: 0,
                width: 28
            })
        ));
    }

    /// 9223372036854776200 × 2 wraps to 784 in 64-bit arithmetic: it must not pass for 28×28.
    #[test]
    fn an_image_shape_whose_pixel_count_overflows_is_refused() {
        let height = usize::MAX / 2 + 393;
        assert_eq!(height.wrapping_mul(2), 784);
        let err = ImageShape::new(height, 2).unwrap_err();
        assert!(matches!(
            err,
            ReportError::ImageShapeTooLarge { width: 2, .. }
        ));
        assert!(err.to_string().contains("more pixels than"), "{err}");
        assert_eq!(ImageShape::new(28, 28).unwrap().pixels(), 784);
    }

    #[test]
    fn a_confusion_matrix_that_is_not_square_is_refused_with_its_row() {
        let err = Classification::new(
            vec!["a".into(), "b".into()],
            vec![vec![1, 0], vec![0]],
            vec![],
        )
        .unwrap_err();
        assert!(err.to_string().contains("row 1"), "{err}");
        let err = Classification::new(vec!["a".into()], vec![vec![3]], vec![(5, 1.5)]).unwrap_err();
        assert!(err.to_string().contains("1.5"), "{err}");
    }
}
