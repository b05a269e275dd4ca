//! How to read a data set: the header mode of text files and the columns to keep.

use std::fmt;
use std::str::FromStr;

/// A column chosen by header name or by 0-based index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ColumnSelector {
    /// A header name (needs a header).
    Name(String),
    /// A 0-based index.
    Index(usize),
}

impl fmt::Display for ColumnSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ColumnSelector::Name(name) => f.write_str(name),
            ColumnSelector::Index(i) => write!(f, "{i}"),
        }
    }
}

/// Why a string is not a [`ColumnSelector`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseColumnSelectorError(String);

impl fmt::Display for ParseColumnSelectorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ParseColumnSelectorError {}

impl FromStr for ColumnSelector {
    type Err = ParseColumnSelectorError;

    /// All digits: a 0-based index; anything else: a name. Surrounding whitespace is ignored
    /// (header names are trimmed too), so `"a, b"` split on commas works.
    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        let s = s.trim();
        if s.is_empty() {
            return Err(ParseColumnSelectorError(
                "an empty column name or index".into(),
            ));
        }
        if s.bytes().all(|b| b.is_ascii_digit()) {
            return s
                .parse()
                .map(ColumnSelector::Index)
                .map_err(|_| ParseColumnSelectorError(format!("column index {s} is too large")));
        }
        Ok(ColumnSelector::Name(s.to_owned()))
    }
}

/// Whether the first record of a text file is a header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum HeaderMode {
    /// A header if any of its fields does not parse as a number.
    #[default]
    Auto,
    /// Always a header.
    Present,
    /// Never a header: the first record is data.
    Absent,
}

/// Whether a data set may have missing values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Missing {
    /// A missing value (an empty CSV cell, NaN) is an error naming its file, row and column.
    #[default]
    Reject,
    /// Missing values are read as NaN: empty CSV/TSV cells, `nan` (any case) in text, NaN in
    /// NPY and IDX floats, nulls and NaN in Parquet and Arrow (a null list of a list column is
    /// a row of NaN; the first row's list, which gives the width, must not be null).
    /// Infinities are still errors.
    AsNan,
}

/// How to read a data set. Binary formats (NPY, IDX) have no header: `header` does not apply
/// to them and columns are selected by index only.
#[derive(Clone, Debug, Default)]
pub struct ReadOptions {
    /// Header detection for text files.
    pub header: HeaderMode,
    /// Columns to keep, in this order; `None` keeps all.
    pub columns: Option<Vec<ColumnSelector>>,
    /// Columns to leave out (applied after `columns`); each must exist.
    pub exclude: Vec<ColumnSelector>,
    /// Parquet and Arrow only: the name of one list (or fixed-size list) column of numbers,
    /// such as embeddings, whose lists are the rows; every list must have the same length.
    /// Not combined with `columns` or `exclude`.
    pub list_column: Option<String>,
    /// Whether missing values are read (as NaN) or are errors.
    pub missing: Missing,
    /// AnnData `.h5ad` only: read `layers/NAME` instead of `X`.
    pub layer: Option<String>,
    /// AnnData `.h5ad` only: keep the genes whose boolean `var` column of this name is true
    /// (scanpy's `mask_var`), before `columns` and `exclude`.
    pub mask_var: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn column_selector_parses_digits_as_index() {
        assert_eq!(
            "3".parse::<ColumnSelector>().unwrap(),
            ColumnSelector::Index(3)
        );
        assert_eq!(
            " 03 ".parse::<ColumnSelector>().unwrap(),
            ColumnSelector::Index(3)
        );
        assert_eq!(
            "species".parse::<ColumnSelector>().unwrap(),
            ColumnSelector::Name("species".into())
        );
        assert_eq!(
            "x1".parse::<ColumnSelector>().unwrap(),
            ColumnSelector::Name("x1".into())
        );
        assert_eq!(
            "-1".parse::<ColumnSelector>().unwrap(),
            ColumnSelector::Name("-1".into())
        );
        assert!("".parse::<ColumnSelector>().is_err());
        assert!(
            "99999999999999999999999999"
                .parse::<ColumnSelector>()
                .is_err()
        );
    }
}
