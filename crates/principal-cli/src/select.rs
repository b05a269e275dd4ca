//! Column selection and input descriptions shared by `fit` and `transform`.

use std::path::{Path, PathBuf};

use principal_io::{ColumnSelector, HeaderMode, ReadOptions};

use crate::cli::SelectArgs;

/// Validated column selection: what `--columns`, `--exclude`, `--no-header` and `--column`
/// asked for.
#[derive(Debug)]
pub struct Selection {
    pub header: HeaderMode,
    pub columns: Option<Vec<ColumnSelector>>,
    pub exclude: Vec<ColumnSelector>,
    /// `--column`: a list column of embeddings (Parquet/Arrow) whose lists are the rows.
    pub list_column: Option<String>,
}

impl Selection {
    pub fn new(args: SelectArgs) -> Self {
        Selection {
            header: if args.no_header {
                HeaderMode::Absent
            } else {
                HeaderMode::Auto
            },
            columns: args.columns,
            exclude: args.exclude,
            list_column: args.column,
        }
    }

    /// True when the user chose columns themselves.
    pub fn is_explicit(&self) -> bool {
        self.columns.is_some() || !self.exclude.is_empty() || self.list_column.is_some()
    }

    pub fn read_options(&self) -> ReadOptions {
        ReadOptions {
            header: self.header,
            columns: self.columns.clone(),
            exclude: self.exclude.clone(),
            list_column: self.list_column.clone(),
        }
    }
}

/// The inputs for a message: one path, or the first and how many more.
pub fn describe(paths: &[PathBuf]) -> String {
    match paths {
        [] => "no input".into(),
        [one] => one.display().to_string(),
        [first, rest @ ..] => format!("{} and {} more file(s)", first.display(), rest.len()),
    }
}

/// `path` for a message.
pub fn show(path: &Path) -> String {
    path.display().to_string()
}
