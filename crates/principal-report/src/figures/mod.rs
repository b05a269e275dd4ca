//! The figures: each function draws one figure into memory, as PNG and as SVG, and returns it
//! with the numbers it plotted ([`Plotted`]), so that a test (or a caller) can check what was
//! drawn against what was given.
//!
//! One drawing routine serves both formats (`figure::Draw`); where the formats must differ
//! (tens of thousands of points, which an SVG file would hold as as many elements) the routine
//! is told the `figure::Target`.

pub(crate) mod classification;
pub(crate) mod figure;
pub(crate) mod images;
pub(crate) mod interpretation;
pub(crate) mod points;
pub(crate) mod variance;

pub use classification::{accuracy_by_components, confusion_matrix};
pub use figure::{
    ClassCount, ColourScale, Figure, FigureKind, ImagePanel, Plotted, PointCounts, Series, Table,
    TableRow,
};
pub use images::{
    LatentGridOptions, latent_grid, mean_and_components, reconstruction_counts, reconstructions,
};
pub use interpretation::{
    Groups, Interpretation, MAX_VARIABLES, biplot, contributions, correlation_circle,
    individuals_by_group, interpretation_figures, write_interpretation_figures,
};
pub use points::{PointOptions, pairs_grid, projection_map};
pub use variance::{SCREE_BARS, reconstruction_error, scree, spectrum};
