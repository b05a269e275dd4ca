//! `principal transform`: project data onto a saved model's components.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use principal_io::{
    load_model, read_table, write_matrix, ChunkReader, ColumnSelector, Matrix, ReadOptions,
    SavedModel,
};

use crate::args::TransformArgs;
use crate::report;
use crate::select::{describe, show, Selection};

/// A validated `transform` request.
#[derive(Debug)]
pub struct TransformConfig {
    model: PathBuf,
    inputs: Vec<PathBuf>,
    selection: Selection,
    output: PathBuf,
}

impl TransformConfig {
    pub fn new(args: TransformArgs) -> Self {
        TransformConfig {
            model: args.model,
            inputs: args.inputs,
            selection: Selection::new(args.select),
            output: args.output,
        }
    }
}

pub fn run(config: &TransformConfig) -> Result<()> {
    let saved = load_model(&config.model)?;
    let options = read_options(config, &saved)?;
    let table = read_table(&config.inputs, &options)?;
    let model = &saved.model;
    let (found, expected) = (table.data.ncols(), model.n_features());
    if found != expected {
        bail!(
            "{} has {found} feature column(s) but the model {} was fitted on {expected}{}",
            describe(&config.inputs),
            show(&config.model),
            if config.selection.is_explicit() {
                ""
            } else {
                "; choose columns with --columns or --exclude"
            }
        );
    }
    let codes = match &table.data {
        Matrix::F32(x) => model.transform(x.as_ref()),
        Matrix::F64(x) => model.transform(x.as_ref()),
    }
    .with_context(|| format!("cannot transform {}", describe(&config.inputs)))?;
    let names: Vec<String> = (1..=codes.ncols()).map(|i| format!("pc{i}")).collect();
    write_matrix(&config.output, codes.as_ref(), Some(&names))?;
    report::stderr(&format!(
        "wrote {} samples × {} components to {}\n",
        codes.nrows(),
        codes.ncols(),
        show(&config.output)
    ));
    Ok(())
}

/// The user's selection; or, when they gave none, the model knows its feature names and the
/// input has a header, the model's features picked by name.
fn read_options(config: &TransformConfig, saved: &SavedModel) -> Result<ReadOptions> {
    let options = config.selection.read_options();
    let Some(features) = saved.feature_names.as_deref() else {
        return Ok(options);
    };
    if config.selection.is_explicit() {
        return Ok(options);
    }
    let probe = ChunkReader::open(&config.inputs, &options)?;
    let Some(header) = probe.column_names() else {
        return Ok(options);
    };
    if let Some(missing) = features.iter().find(|name| !header.contains(name)) {
        bail!(
            "{} has no column named {missing:?}, a feature of the model {} (its features: {}); \
             use --columns or --exclude to choose the columns yourself",
            describe(&config.inputs),
            show(&config.model),
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
