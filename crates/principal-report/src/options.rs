//! What a report is asked for (its settings) and the figures it leaves out: both are shown on
//! the page, below the report that draws and writes it.

use crate::error::{ReportError, Result};
use crate::figures::{FigureKind, LatentGridOptions, PointOptions};

/// Settings of a report; [`Default`] suits most data.
#[derive(Clone, Debug, PartialEq)]
pub struct ReportOptions {
    /// The page's title.
    pub title: String,
    /// Lines shown under the title, e.g. `("model", "digits.safetensors")`.
    pub sources: Vec<(String, String)>,
    /// Scatter figures: SVG subsample size and seed.
    pub points: PointOptions,
    /// Components drawn as images beside the mean (at most).
    pub image_components: usize,
    /// The grid of codes of the latent-grid figure.
    pub latent_grid: LatentGridOptions,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            title: "Principal component analysis".into(),
            sources: Vec::new(),
            points: PointOptions::default(),
            image_components: 15,
            latent_grid: LatentGridOptions::default(),
        }
    }
}

impl ReportOptions {
    pub(crate) fn validate(&self) -> Result<()> {
        if self.points.svg_points == 0 {
            return Err(ReportError::InvalidOption {
                name: "points.svg_points",
                value: "0".into(),
                reason: "an SVG scatter needs at least one point",
            });
        }
        if self.image_components == 0 {
            return Err(ReportError::InvalidOption {
                name: "image_components",
                value: "0".into(),
                reason: "at least one component must be drawn as an image",
            });
        }
        self.latent_grid.validate()
    }
}

/// A figure the report leaves out, and why (shown in `index.html`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Omission {
    /// The figure.
    pub kind: FigureKind,
    /// Why it is not drawn, e.g. "no data was given".
    pub reason: String,
}
