//! The crate's single error type.
//!
//! Every message names the file. Errors about the data also say where: a line and a column for
//! text (both counted from 1, as an editor shows them, with the header name when there is one),
//! a row and a column index for binary arrays (counted from 0, as numpy indexes them), and quote
//! the offending value, so a front end can print them as they are.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use principal::PcaError;
use thiserror::Error;

/// A column of a text file, for messages: its 1-based number and its header name if any.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Column {
    /// 1-based, as an editor or spreadsheet counts.
    pub number: usize,
    /// The header name, when the file has a header.
    pub name: Option<String>,
}

impl fmt::Display for Column {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.name {
            Some(name) => write!(f, "column {} ({name:?})", self.number),
            None => write!(f, "column {}", self.number),
        }
    }
}

/// Everything that can go wrong while reading or writing files.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum IoError {
    /// `read_table` or `ChunkReader::open` was given no path.
    #[error("no input file given")]
    NoInput,
    /// The file could not be opened (missing, permissions, a directory…).
    #[error("cannot open {}: {source}", path.display())]
    Open { path: PathBuf, source: io::Error },
    /// Reading failed after opening (including corrupt gzip data).
    #[error("cannot read {}: {source}", path.display())]
    Read { path: PathBuf, source: io::Error },
    /// Writing, syncing or renaming failed.
    #[error("cannot write {}: {source}", path.display())]
    Write { path: PathBuf, source: io::Error },
    /// A text cell that does not parse as a number.
    #[error("{}, line {line}, {column}: {value:?} is not a number{hint}", path.display())]
    NonNumeric {
        path: PathBuf,
        line: u64,
        column: Column,
        value: String,
        hint: String,
    },
    /// An empty text cell (missing values are not supported).
    #[error("{}, line {line}, {column}: empty cell (missing values are not supported)", path.display())]
    EmptyCell {
        path: PathBuf,
        line: u64,
        column: Column,
    },
    /// A text cell holding NaN or infinity, or a number too large for f64 (such as `1e999`).
    #[error("{}, line {line}, {column}: {value:?} is not a finite number", path.display())]
    NonFinite {
        path: PathBuf,
        line: u64,
        column: Column,
        value: String,
    },
    /// NaN or infinity in a binary array.
    #[error("{}: non-finite value {value} at row {row}, column {column} (counting from 0, as numpy does)", path.display())]
    NonFiniteElement {
        path: PathBuf,
        row: usize,
        column: usize,
        value: f64,
    },
    /// A text row whose number of fields differs from the header's (or the first row's).
    #[error("{}, line {line}: {found} fields but {reference} has {expected}", path.display())]
    RaggedRow {
        path: PathBuf,
        line: u64,
        found: usize,
        expected: usize,
        reference: &'static str,
    },
    /// A file with no data rows.
    #[error("{} has no data rows{detail}", path.display())]
    NoData { path: PathBuf, detail: &'static str },
    /// The file has no columns, or the selection keeps none.
    #[error("{}: no columns left to read (the file has {available}, after --columns/--exclude none is kept)", path.display())]
    NoColumns { path: PathBuf, available: usize },
    /// A column selected by a name the header does not have.
    #[error("{}: no column named {name:?}; the columns are {}", path.display(), quote_list(available))]
    UnknownColumn {
        path: PathBuf,
        name: String,
        available: Vec<String>,
    },
    /// A column selected by name in a file without a header.
    #[error("{}: column {name:?} is selected by name, but the file has no header; select columns by 0-based index instead", path.display())]
    NoHeader { path: PathBuf, name: String },
    /// A column name that appears more than once in the header, so selecting it is ambiguous.
    #[error("{}: the header names columns {first} and {second} both {name:?}; select by 0-based index instead", path.display())]
    AmbiguousColumn {
        path: PathBuf,
        name: String,
        first: usize,
        second: usize,
    },
    /// A 0-based column index past the last column.
    #[error("{}: column index {index} is out of range: the file has {count} column(s), indices 0 to {}", path.display(), count.saturating_sub(1))]
    ColumnOutOfRange {
        path: PathBuf,
        index: usize,
        count: usize,
    },
    /// The same column selected twice by `columns`.
    #[error("{}: {column} is selected twice", path.display())]
    DuplicateColumn { path: PathBuf, column: Column },
    /// A shard whose kept columns differ from the first shard's.
    #[error("shard {} does not match the first shard {}: {detail}", path.display(), first.display())]
    ShardMismatch {
        path: PathBuf,
        first: PathBuf,
        detail: String,
    },
    /// A bad value in a Parquet or Arrow file: a null, NaN or infinity, or a list of the wrong
    /// length. Rows count from 0, as in the binary formats.
    #[error("{}, row {row} (counting from 0), column {column:?}: {detail}", path.display())]
    BadValue {
        path: PathBuf,
        row: u64,
        column: String,
        detail: String,
    },
    /// A Parquet or Arrow column that does not hold numbers.
    #[error("{}: column {column:?} holds {data_type}, not numbers; {hint}", path.display())]
    NonNumericColumn {
        path: PathBuf,
        column: String,
        data_type: String,
        hint: String,
    },
    /// An input glob pattern that matches no file.
    #[error("no file matches the pattern {pattern}")]
    NoMatch { pattern: String },
    /// An input glob pattern that does not parse.
    #[error("{pattern} is not a valid pattern: {detail}")]
    BadPattern { pattern: String, detail: String },
    /// An input directory without a file of a known data format.
    #[error("directory {} holds no data files (recognised: {allowed})", path.display())]
    EmptyDirectory {
        path: PathBuf,
        allowed: &'static str,
    },
    /// A binary file whose header is malformed or describes something unsupported.
    #[error("{}: {detail}", path.display())]
    Format { path: PathBuf, detail: String },
    /// A binary file shorter than its header says.
    #[error("{} is truncated: its header{} promises {expected} bytes{} but there are only {actual}", path.display(), in_parentheses(header), if *compressed { " (decompressed)" } else { "" })]
    Truncated {
        path: PathBuf,
        /// The header's fields that say the size, such as `shape (30, 4), descr '<f8'`;
        /// empty when the header itself is cut.
        header: String,
        expected: u64,
        actual: u64,
        compressed: bool,
    },
    /// An output path whose extension says no known format.
    #[error("{}: unknown extension {extension:?}; the allowed ones are {allowed}", path.display())]
    UnknownExtension {
        path: PathBuf,
        extension: String,
        allowed: &'static str,
    },
    /// A Parquet output wider than [`crate::MAX_PARQUET_COLUMNS`].
    #[error(
        "{}: {columns} columns are more than a Parquet output may have ({max}: the Parquet \
         writer holds every column of a row group in memory); write .npy, .csv or .tsv instead",
        path.display()
    )]
    TooWideForParquet {
        path: PathBuf,
        columns: usize,
        max: usize,
    },
    /// A file of a format whose cargo feature this build was made without (`parquet`, `arrow`,
    /// `h5ad`): recognised as today, by its magic bytes or extension, but not read or written.
    #[error(
        "{}: {format} files are not {verb} by this build of principal (built without the cargo \
         feature \"{feature}\"; the default build has it: cargo build --release)",
        path.display()
    )]
    FormatNotBuilt {
        path: PathBuf,
        /// "Parquet", "Arrow IPC", "AnnData (.h5ad)".
        format: &'static str,
        /// The cargo feature that brings it.
        feature: &'static str,
        /// "read" or "written".
        verb: &'static str,
    },
    /// Column or feature names whose count differs from the number of columns.
    #[error("{}: {names} column name(s) given for {columns} column(s)", path.display())]
    NameCount {
        path: PathBuf,
        names: usize,
        columns: usize,
    },
    /// A file that is not a principal statistics file.
    #[error("{} is not a principal statistics file ({detail})", path.display())]
    NotStatistics { path: PathBuf, detail: String },
    /// A statistics file written by an incompatible principal.
    #[error("statistics file {} has format version {found}; this principal reads version {supported}", path.display())]
    StatisticsVersion {
        path: PathBuf,
        found: String,
        supported: u32,
    },
    /// A statistics file that cannot be merged with the first one given.
    #[error("statistics file {} cannot be merged with {}: {detail}", path.display(), first.display())]
    StatisticsMismatch {
        path: PathBuf,
        first: PathBuf,
        detail: String,
    },
    /// A statistics file whose moments are inconsistent.
    #[error("statistics file {}: {source}", path.display())]
    InvalidStatistics { path: PathBuf, source: PcaError },
    /// A file that is not a principal model file (truncated, garbage, another safetensors file…).
    #[error("{} is not a principal model file ({detail})", path.display())]
    NotAModel { path: PathBuf, detail: String },
    /// A model file written by a newer (or older) incompatible principal.
    #[error("model file {} has format version {found}; this principal reads version {supported}", path.display())]
    ModelVersion {
        path: PathBuf,
        found: String,
        supported: u32,
    },
    /// A model file whose parts do not make a consistent model.
    #[error("model file {}: {source}", path.display())]
    InvalidModel { path: PathBuf, source: PcaError },
}

/// A format behind a cargo feature, for [`IoError::FormatNotBuilt`].
#[cfg(not(all(feature = "parquet", feature = "arrow", feature = "h5ad")))]
#[derive(Clone, Copy, Debug)]
pub(crate) enum Gated {
    #[cfg(not(feature = "parquet"))]
    Parquet,
    #[cfg(not(feature = "arrow"))]
    Arrow,
    #[cfg(not(feature = "h5ad"))]
    H5ad,
}

#[cfg(not(all(feature = "parquet", feature = "arrow", feature = "h5ad")))]
impl Gated {
    /// The error for a file of this format at `path`, which this build has not `verb` (read,
    /// written).
    pub(crate) fn error(self, path: &Path, verb: &'static str) -> IoError {
        let (format, feature) = match self {
            #[cfg(not(feature = "parquet"))]
            Gated::Parquet => ("Parquet", "parquet"),
            #[cfg(not(feature = "arrow"))]
            Gated::Arrow => ("Arrow IPC", "arrow"),
            #[cfg(not(feature = "h5ad"))]
            Gated::H5ad => ("AnnData (.h5ad)", "h5ad"),
        };
        IoError::FormatNotBuilt {
            path: path.to_owned(),
            format,
            feature,
            verb,
        }
    }
}

impl IoError {
    /// `Ok` when `names` (if given) has one name per column, else [`IoError::NameCount`].
    pub(crate) fn check_name_count(
        path: &Path,
        names: Option<&[String]>,
        columns: usize,
    ) -> Result<()> {
        match names {
            Some(names) if names.len() != columns => Err(IoError::NameCount {
                path: path.to_owned(),
                names: names.len(),
                columns,
            }),
            _ => Ok(()),
        }
    }
}

/// The crate's `Result`.
pub type Result<T, E = IoError> = std::result::Result<T, E>;

/// ` (text)`, or nothing for an empty text.
fn in_parentheses(text: &str) -> String {
    if text.is_empty() {
        String::new()
    } else {
        format!(" ({text})")
    }
}

fn quote_list(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("{n:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn column_display_has_number_and_name() {
        let c = Column {
            number: 5,
            name: Some("species".into()),
        };
        assert_eq!(c.to_string(), "column 5 (\"species\")");
        assert_eq!(
            Column {
                number: 2,
                name: None
            }
            .to_string(),
            "column 2"
        );
    }

    #[test]
    fn unknown_column_lists_names() {
        let e = IoError::UnknownColumn {
            path: "a.csv".into(),
            name: "x".into(),
            available: vec!["a".into(), "b".into()],
        };
        assert_eq!(
            e.to_string(),
            "a.csv: no column named \"x\"; the columns are \"a\", \"b\""
        );
    }
}
