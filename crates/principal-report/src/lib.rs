//! # principal-report — the figures and the HTML report of a principal component analysis
//!
//! Draws PNG and SVG figures of a fitted PCA and writes them, with the model's summary table,
//! into a directory with one self-contained `index.html` (no script, no external address).
//! The crate reads no file and touches no terminal: the caller hands it plain numbers (the
//! model's arrays, the data's codes, labels) and, optionally, a [`Progress`] to report long
//! steps to.
//!
//! ## Conventions
//! Data is N×D, one sample per row. The model's mean μ is always subtracted; when it
//! standardizes, each feature is also divided by its standard deviation σ (so the eigenvalues
//! are those of the correlation matrix and errors are in standardized units). Variances divide
//! by `N − ddof`. Codes are `z = Bᵀ (x − μ) / σ` with B the M×D matrix of orthonormal
//! components, sorted by decreasing eigenvalue λ₁ ≥ … ≥ λ_M; a reconstruction from the first k
//! codes is `x̃ = (Σ_{m≤k} zₘ bₘ) σ + μ`. `explained_variance_ratio[m] = λ_m / trace(S)`, the
//! trace including the directions the model did not keep.
//!
//! ## The figures
//! | figure | needs | file stem |
//! | --- | --- | --- |
//! | scree plot: proportion of variance per component (bars) and cumulative (line) | model | `scree` |
//! | eigenvalue spectrum, log scale | model | `spectrum` |
//! | 2-D map on components 1–2, coloured by label | data | `projection` |
//! | pairs grid of the first four components, histograms on the diagonal | data | `pairs` |
//! | mean squared reconstruction error and discarded eigenvalues against k | data | `reconstruction-error` |
//! | the mean and the first components as images | image shape | `components` |
//! | reconstructions from 1, 10, 100, 500 components | data, image shape | `reconstructions` |
//! | images generated from a 2-D grid of codes | image shape | `latent-grid` |
//! | confusion matrix | classification | `confusion-matrix` |
//! | accuracy against the number of components K | classification (≥ 2 K) | `accuracy` |
//!
//! A figure whose inputs are missing is listed in `index.html` with the reason. Each figure
//! function returns a [`Figure`]: the PNG bytes, the SVG text, a caption and the numbers it
//! plotted ([`Plotted`]). The numbers of curves and counts (scree, spectrum, reconstruction
//! error, confusion matrix, accuracy) are also written beside the figure as `<stem>.csv`
//! ([`Plotted::csv`]), for re-plotting elsewhere and for checking a report without reading
//! pixels.
//!
//! Scatter figures of large data: the PNG draws every sample with markers that shrink and fade
//! as N grows (70,000 points read as densities); the SVG, which holds one element per point,
//! draws a seeded random subsample of at most [`PointOptions::svg_points`] (5,000 by default;
//! a quarter of that in each panel of the pairs grid), stratified by label, and the caption
//! says so. Image panels are embedded in the SVG as small PNGs rather than one rectangle per
//! pixel. Long steps report to a [`Progress`]: the CLI plugs a progress bar into it.
//!
//! ## Writing
//! [`Report::write`] is all or nothing: the files go into a hidden temporary directory beside
//! the destination and are renamed into place when complete. The destination may be absent,
//! an empty directory or an earlier report (an `index.html` written by this crate), which is
//! replaced only once the new one is complete; any other existing path is refused and left
//! alone. Same inputs, same bytes: no timestamp is written and the subsample is seeded.
//!
//! ## How a caller uses it (the `principal report` command)
//! ```
//! use principal::{faer::Mat, PcaBuilder};
//! use principal_report::{
//!     ImageShape, Labels, ModelView, NoProgress, Report, ReportDataBuilder, SampleChoice,
//!     Scaling,
//! };
//!
//! // Any data; the CLI reads it with principal-io (and may stream it in chunks).
//! let x = Mat::from_fn(40, 4, |i, j| ((i * 7 + j * 3) % 11) as f64 + (i % 3) as f64 * j as f64);
//! let labels: Vec<String> = (0..40).map(|i| format!("{}", i % 3)).collect();
//! let fitted = PcaBuilder::new().build()?.fit(x.as_ref())?;
//!
//! // 1. The model as plain numbers.
//! let model = ModelView {
//!     n_samples: fitted.n_samples(),
//!     ddof: fitted.ddof(),
//!     scaling: if fitted.scale().is_some() { Scaling::Standardize } else { Scaling::Centre },
//!     solver: fitted.solver().name(),
//!     total_variance: fitted.total_variance(),
//!     noise_variance: fitted.noise_variance(),
//!     mean: fitted.mean(),
//!     scale: fitted.scale(),
//!     components: fitted.components(),
//!     explained_variance: fitted.explained_variance(),
//!     explained_variance_ratio: fitted.explained_variance_ratio(),
//! };
//!
//! // 2. The data, chunk by chunk: rows as read (f32 or f64) and their codes.
//! let mut builder =
//!     ReportDataBuilder::new(&model, Some(Labels::new(&labels)), SampleChoice::default())?;
//! for start in (0..40).step_by(16) {
//!     let rows = x.as_ref().subrows(start, 16.min(40 - start));
//!     let codes = fitted.transform(rows)?;
//!     builder.push(rows, codes.as_ref())?;
//! }
//! let data = builder.finish()?;
//!
//! // 3. The report: 2×2 "images" only to show the call.
//! let dir = tempfile::tempdir()?;
//! let written = Report::new(model)?
//!     .with_data(&data)?
//!     .with_image_shape(ImageShape::new(2, 2)?)?
//!     .write(&dir.path().join("report"), &mut NoProgress)?;
//! assert!(dir.path().join("report/index.html").exists());
//! assert!(written.omitted.is_empty());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! `principal classify --report DIR` adds [`Classification`] results with
//! [`Report::with_classification`].

mod curves;
mod data;
mod error;
pub mod figures;
mod html;
mod input;
mod options;
mod progress;
mod report;
mod staging;
mod style;

pub use curves::{discarded_variance_curve, reconstruction_error_curve};
pub use data::{ChosenSample, LEADING_COMPONENTS, ReportData, ReportDataBuilder, SampleChoice};
pub use error::{ReportError, Result};
pub use faer;
pub use figures::{
    ClassCount, ColourScale, Figure, FigureKind, Groups, ImagePanel, Interpretation,
    LatentGridOptions, Plotted, PointCounts, PointOptions, Series, Table, TableRow,
    reconstruction_counts, write_interpretation_figures,
};
pub use input::{Classification, ImageShape, Labels, ModelView, Recognition, Scaling};
pub use options::{Omission, ReportOptions};
pub use progress::{NoProgress, Progress};
pub use report::{Report, WrittenReport};
