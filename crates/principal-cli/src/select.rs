//! Column selection and input descriptions shared by the commands that read data.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use principal_io::{ChunkReader, ColumnSelector, HeaderMode, Missing, ReadOptions, SavedModel};

use crate::args::SelectArgs;
use crate::stream::RowStream;

/// Validated column selection: what `--columns`, `--exclude`, `--no-header` and `--column`
/// asked for.
#[derive(Debug)]
pub struct Selection {
    pub header: HeaderMode,
    pub columns: Option<Vec<ColumnSelector>>,
    pub exclude: Vec<ColumnSelector>,
    /// `--column`: a list column of embeddings (Parquet/Arrow) whose lists are the rows.
    pub list_column: Option<String>,
    /// `--layer`: an AnnData file's layer to read instead of X.
    pub layer: Option<String>,
    /// `--mask-var`: an AnnData file's boolean var column keeping the genes it marks.
    pub mask_var: Option<String>,
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
            layer: args.layer,
            mask_var: args.mask_var,
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
            layer: self.layer.clone(),
            mask_var: self.mask_var.clone(),
            ..Default::default()
        }
    }
}

/// The columns to read from `inputs` for a model with feature names `features`: the user's
/// selection; or, when they gave none, the model knows its feature names and the input has a
/// header, the model's features picked by name (a missing one is an error naming it).
/// `model` names the model in messages.
pub fn model_read_options(
    inputs: &[PathBuf],
    selection: &Selection,
    features: Option<&[String]>,
    model: &str,
) -> Result<ReadOptions> {
    let options = selection.read_options();
    let Some(features) = features else {
        return Ok(options);
    };
    if selection.is_explicit() {
        return Ok(options);
    }
    let probe = ChunkReader::open(inputs, &options)?;
    let Some(header) = probe.column_names() else {
        return Ok(options);
    };
    if let Some(missing) = features.iter().find(|name| !header.contains(name)) {
        bail!(
            "{} has no column named {missing:?}, a feature of the model {model} (its features: \
             {}); use --columns or --exclude to choose the columns yourself",
            describe(inputs),
            features.join(", ")
        );
    }
    Ok(ReadOptions {
        columns: Some(
            features
                .iter()
                .map(|name| ColumnSelector::Name(name.clone()))
                .collect(),
        ),
        ..options
    })
}

/// Errs unless the data read from `inputs` has the model's number of features.
pub fn check_features(
    found: usize,
    expected: usize,
    inputs: &[PathBuf],
    selection: &Selection,
    model: &str,
) -> Result<()> {
    if found != expected {
        bail!(
            "{} has {found} feature column(s) but the model {model} was fitted on {expected}{}",
            describe(inputs),
            if selection.is_explicit() {
                ""
            } else {
                "; choose columns with --columns or --exclude"
            }
        );
    }
    Ok(())
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

/// The rows of `inputs` for the model `saved` (read from `model`) in one process: the model's
/// columns ([`model_read_options`]), missing values read as `missing` says, and the width
/// checked; `output_columns` sizes the chunks.
pub fn open_for_model(
    inputs: &[PathBuf],
    selection: &Selection,
    saved: &SavedModel,
    model: &Path,
    missing: Missing,
    output_columns: usize,
    memory_limit: u64,
) -> Result<RowStream> {
    let options = ReadOptions {
        missing,
        ..model_read_options(
            inputs,
            selection,
            saved.feature_names.as_deref(),
            &show(model),
        )?
    };
    let input = RowStream::open(inputs, &options, output_columns, memory_limit)?;
    check_features(
        input.n_features(),
        saved.model.n_features(),
        inputs,
        selection,
        &show(model),
    )?;
    Ok(input)
}
