//! The crate's one error type.

use std::io;
use std::path::PathBuf;

/// Everything that can go wrong while summarising data, drawing figures or writing a report.
///
/// Mistakes of the caller (an image shape that does not fit the model, labels of the wrong
/// length, codes with the wrong number of columns) are errors naming the values involved, never
/// panics.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    /// The model's own arrays disagree (lengths, a non-finite value).
    #[error("the model is inconsistent: {0}")]
    InconsistentModel(String),

    /// `height × width` is not the model's number of features.
    #[error(
        "image shape {height}×{width} has {} pixels but the model has {n_features} features",
        height * width
    )]
    ImageShapeMismatch {
        /// Rows of pixels.
        height: usize,
        /// Columns of pixels.
        width: usize,
        /// The model's number of features.
        n_features: usize,
    },

    /// An image side of zero.
    #[error("image shape {height}×{width} has a side of zero")]
    EmptyImageShape {
        /// Rows of pixels.
        height: usize,
        /// Columns of pixels.
        width: usize,
    },

    /// `height × width` overflows the machine's integers: no data has that many features.
    #[error("image shape {height}×{width} has more pixels than this machine can count")]
    ImageShapeTooLarge {
        /// Rows of pixels.
        height: usize,
        /// Columns of pixels.
        width: usize,
    },

    /// A chunk of data has another number of columns than the model has features.
    #[error("the data has {found} feature columns but the model has {expected} features")]
    FeatureMismatch {
        /// The model's number of features.
        expected: usize,
        /// Columns of the data.
        found: usize,
    },

    /// A chunk of codes has another number of columns than the model has components.
    #[error("the codes have {found} columns but the model has {expected} components")]
    ComponentMismatch {
        /// The model's number of components.
        expected: usize,
        /// Columns of the codes.
        found: usize,
    },

    /// A chunk of data and its codes have different numbers of rows.
    #[error("a chunk of {data_rows} data rows came with {code_rows} rows of codes")]
    ChunkRowMismatch {
        /// Rows of data.
        data_rows: usize,
        /// Rows of codes.
        code_rows: usize,
    },

    /// NaN or infinity in the data or the codes (0-based row of the whole data set).
    #[error("{what} at row {row}, column {column} is {value}, not a finite number")]
    NonFinite {
        /// `"data"` or `"code"`.
        what: &'static str,
        /// 0-based row in the whole data set.
        row: usize,
        /// 0-based column.
        column: usize,
        /// The offending value.
        value: f64,
    },

    /// More rows of data were pushed than there are labels.
    #[error("there are {labels} labels but the data has more rows (row {row} has no label)")]
    MoreRowsThanLabels {
        /// Number of labels given.
        labels: usize,
        /// 0-based row of the first row without a label.
        row: usize,
    },

    /// Fewer rows of data than labels.
    #[error("there are {labels} labels but the data has {rows} rows")]
    LabelCountMismatch {
        /// Number of labels given.
        labels: usize,
        /// Number of rows of data.
        rows: usize,
    },

    /// No row of data was pushed.
    #[error("the data has no rows")]
    NoRows,

    /// A sample chosen for the reconstructions is beyond the data.
    #[error("row {row} was chosen for the reconstructions but the data has {rows} rows")]
    SampleOutOfRange {
        /// The chosen 0-based row.
        row: usize,
        /// Rows of data.
        rows: usize,
    },

    /// The data was summarised against another model.
    #[error(
        "the data was summarised for a model of {data_features} features and {data_components} \
         components, but the report's model has {model_features} and {model_components}"
    )]
    DataModelMismatch {
        /// Features of the model the data was summarised with.
        data_features: usize,
        /// Components of the model the data was summarised with.
        data_components: usize,
        /// Features of the report's model.
        model_features: usize,
        /// Components of the report's model.
        model_components: usize,
    },

    /// Classification results that do not fit together.
    #[error("invalid classification results: {0}")]
    InvalidClassification(String),

    /// A report option out of its range.
    #[error("option {name} = {value} is invalid: {reason}")]
    InvalidOption {
        /// The option's field name.
        name: &'static str,
        /// The value given.
        value: String,
        /// What is allowed.
        reason: &'static str,
    },

    /// The report's destination exists and is a file or a symbolic link.
    #[error("{} exists and is not a directory", path.display())]
    NotADirectory {
        /// The destination.
        path: PathBuf,
    },

    /// The report's destination is a directory with other content than a report: it is never
    /// replaced, so that a user's directory is not deleted by mistake.
    #[error(
        "{} is a non-empty directory without an index.html written by principal-report; \
         refusing to replace it (choose a new or empty directory)",
        path.display()
    )]
    NotAReportDirectory {
        /// The destination.
        path: PathBuf,
    },

    /// A file-system operation failed.
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        /// What was being done, e.g. `"write"`.
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },

    /// A figure that this report has not what it needs for.
    #[error("the {figure} figure cannot be drawn: {reason}")]
    CannotDraw {
        /// The figure's file stem.
        figure: &'static str,
        /// What is missing.
        reason: String,
    },

    /// The drawing library failed.
    #[error("drawing the {figure} figure failed: {message}")]
    Draw {
        /// The figure's file stem.
        figure: &'static str,
        /// The drawing library's message.
        message: String,
    },

    /// The bundled font could not be parsed (a broken build).
    #[error("the bundled DejaVu Sans font could not be loaded")]
    Font,
}

/// `Result` with [`ReportError`].
pub type Result<T, E = ReportError> = std::result::Result<T, E>;
