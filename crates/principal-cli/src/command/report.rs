//! `principal report`: figures (PNG and SVG) and an `index.html` of a model and, with `--data`,
//! of data projected onto it. The data is streamed once, a chunk at a time: each chunk's codes
//! are summarised (the first four codes and the label of every row, sums for the error curve,
//! the few rows to reconstruct) and the chunk is dropped.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Args;
use principal::describe::{DescribeInput, Description};
use principal::{ChunkRef, PcaModel, Scaling as ModelScaling};
use principal_io::{
    ColumnSelector, ReadOptions, SavedModel, load_model, read_label_column, read_label_files,
    read_table,
};
use principal_report::{
    ImageShape, Labels, ModelView, Report, ReportData, ReportDataBuilder, ReportOptions,
    SampleChoice, Scaling, WrittenReport, figures::MAX_VARIABLES,
};

use crate::args::{MemoryArgs, SelectArgs};
use crate::budget;
use crate::interpretation::{GroupParts, group_parts, interpretation};
use crate::progress::DrawingProgress;
use crate::select::{Selection, check_features, describe, model_read_options, show};
use crate::stream::RowStream;
use crate::text;

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A model written by `principal fit`.
    #[arg(value_name = "MODEL")]
    pub model: PathBuf,
    /// Data to project and draw (the 2-D map, the pairs grid, the reconstruction error,
    /// reconstructions): files as for `fit`, read once, a chunk at a time.
    #[arg(long, value_name = "INPUT", num_args = 1..)]
    pub data: Vec<PathBuf>,
    /// Labels of the data's rows, one per row, to colour the maps: IDX label files (MNIST's
    /// `*-labels-idx1-ubyte`), text with one label per line, or a one-column NPY/Parquet/Arrow
    /// file; several files are concatenated, as the data's shards are.
    #[arg(long, value_name = "LABELS", num_args = 1.., requires = "data", conflicts_with = "label_column")]
    pub labels: Vec<PathBuf>,
    /// The column of the data that holds the labels (a header name or 0-based index); it is
    /// not a feature.
    #[arg(long, value_name = "NAME", requires = "data")]
    pub label_column: Option<ColumnSelector>,
    /// A text column of the data (not a feature): the individuals of the interpretation
    /// figures (drawn with --data when the model has at most 50 features) are coloured by its
    /// categories, each with its barycentre.
    #[arg(long, value_name = "COLUMN", requires = "data")]
    pub qualitative: Option<String>,
    /// Every sample is an image of H rows of W pixels (e.g. 28x28): adds the mean and the
    /// components as images, reconstructions, and images generated from the latent space.
    #[arg(long, value_name = "HxW", value_parser = parse_image_shape)]
    pub image_shape: Option<ImageShape>,
    /// The samples to reconstruct, as 0-based rows of the data (default: the first row of each
    /// of up to ten classes, or the first ten rows without labels).
    #[arg(
        long,
        value_name = "ROW,..",
        value_delimiter = ',',
        num_args = 1,
        requires = "data"
    )]
    pub samples: Option<Vec<usize>>,
    /// The page's title.
    #[arg(long, value_name = "TEXT")]
    pub title: Option<String>,
    /// The report's directory: absent, empty, or an earlier report (replaced once the new one is
    /// complete); any other directory is refused.
    #[arg(short, long, value_name = "DIR")]
    pub output: PathBuf,
    #[command(flatten)]
    pub select: SelectArgs,
    #[command(flatten)]
    pub memory: MemoryArgs,
}

/// `HxW` (or `H×W`): an image shape with two positive sides.
pub fn parse_image_shape(s: &str) -> Result<ImageShape, String> {
    let bad = || format!("--image-shape {s:?} is not HxW, e.g. 28x28 (height x width, in pixels)");
    let (h, w) = s.trim().split_once(['x', 'X', '×']).ok_or_else(bad)?;
    let side = |t: &str| t.trim().parse::<usize>().map_err(|_| bad());
    ImageShape::new(side(h)?, side(w)?).map_err(|e| format!("--image-shape {s:?}: {e}"))
}

/// Where a data set's labels come from.
#[derive(Debug, Clone)]
pub enum LabelSource {
    /// Label files, concatenated.
    Files(Vec<PathBuf>),
    /// A column of the data.
    Column(ColumnSelector),
}

impl LabelSource {
    /// From `--labels` / `--label-column` (at most one of them given).
    pub fn new(files: Vec<PathBuf>, column: Option<ColumnSelector>) -> Option<Self> {
        match column {
            Some(column) => Some(LabelSource::Column(column)),
            None if files.is_empty() => None,
            None => Some(LabelSource::Files(files)),
        }
    }

    /// Reads the labels of the rows of `inputs`.
    pub fn read(&self, inputs: &[PathBuf], selection: &Selection) -> Result<Vec<String>> {
        match self {
            LabelSource::Files(files) => read_label_files(files)
                .with_context(|| format!("cannot read the labels {}", describe(files))),
            LabelSource::Column(column) => read_label_column(inputs, column, selection.header)
                .with_context(|| {
                    format!(
                        "cannot read the labels in column {column} of {}",
                        describe(inputs)
                    )
                }),
        }
    }

    /// `options` with the label column left out of the features, unless the user chose the
    /// columns themselves or the model's features were picked by name.
    pub fn exclude_from(&self, mut options: ReadOptions) -> ReadOptions {
        if let LabelSource::Column(column) = self
            && options.columns.is_none()
            && options.list_column.is_none()
            && !options.exclude.contains(column)
        {
            options.exclude.push(column.clone());
        }
        options
    }

    /// What the labels are, for the report's page.
    pub fn describe(&self, inputs: &[PathBuf]) -> String {
        match self {
            LabelSource::Files(files) => describe(files),
            LabelSource::Column(column) => format!("column {column} of {}", describe(inputs)),
        }
    }
}

/// A validated `report` request.
#[derive(Debug)]
pub struct ReportConfig {
    model: PathBuf,
    data: Vec<PathBuf>,
    labels: Option<LabelSource>,
    qualitative: Option<String>,
    image_shape: Option<ImageShape>,
    samples: SampleChoice,
    title: Option<String>,
    output: PathBuf,
    selection: Selection,
    memory_limit: u64,
}

impl ReportConfig {
    pub fn new(args: ReportArgs) -> Self {
        ReportConfig {
            model: args.model,
            data: args.data,
            labels: LabelSource::new(args.labels, args.label_column),
            qualitative: args.qualitative,
            image_shape: args.image_shape,
            samples: args
                .samples
                .map_or_else(SampleChoice::default, SampleChoice::Rows),
            title: args.title,
            output: args.output,
            selection: Selection::new(args.select),
            memory_limit: args.memory.bytes(),
        }
    }
}

/// The model's numbers as the report reads them.
pub fn model_view(model: &PcaModel) -> ModelView<'_> {
    ModelView {
        n_samples: model.n_samples(),
        ddof: model.ddof(),
        scaling: match model.scaling() {
            ModelScaling::Standardize => Scaling::Standardize,
            ModelScaling::Centre => Scaling::Centre,
        },
        solver: model.solver().name(),
        total_variance: model.total_variance(),
        noise_variance: model.noise_variance(),
        mean: model.mean(),
        scale: model.scale(),
        components: model.components(),
        explained_variance: model.explained_variance(),
        explained_variance_ratio: model.explained_variance_ratio(),
    }
}

/// Checks everything that needs no data (the model, the image shape), then streams the data,
/// draws every figure and writes the directory, all or nothing.
pub fn run(config: &ReportConfig) -> Result<()> {
    let started = Instant::now();
    let operation = principal::Operation::Report;
    crate::models::load_other::<ReportArgs>(&config.model, "report", operation)?;
    let saved = load_model(&config.model)?;
    // The figures draw projections (reconstructions multiply them by the components): a model
    // that whitens its codes is drawn without whitening, which changes nothing else.
    let model = &saved
        .model
        .clone()
        .with_whitening(principal::Whitening::None);
    let model_name = show(&config.model);
    let mut report = Report::new(model_view(model))
        .with_context(|| format!("cannot draw the model {model_name}"))?;
    if let Some(shape) = config.image_shape {
        report = report.with_image_shape(shape).with_context(|| {
            format!(
                "--image-shape {}x{} does not fit the model {model_name}",
                shape.height(),
                shape.width()
            )
        })?;
    }
    let mut sources = vec![("model".to_owned(), model_name.clone())];
    let data = if config.data.is_empty() {
        None
    } else {
        sources.push(("data".to_owned(), describe(&config.data)));
        if let Some(labels) = &config.labels {
            sources.push(("labels".to_owned(), labels.describe(&config.data)));
        }
        Some(summarise_data(
            config,
            model,
            saved.feature_names.as_deref(),
        )?)
    };
    if let Some(data) = &data {
        report = report.with_data(data)?;
    }
    // FactoMineR's quantities for the interpretation figures: the data in memory (at most
    // 50 features), described as `principal describe` does.
    let described = if data.is_some() && interpretable(model) {
        Some(describe_data(config, model, &saved)?)
    } else {
        if let Some(column) = &config.qualitative {
            bail!(
                "--qualitative {column} colours the interpretation figures, which need a model \
                 of 2 or more components and at most {MAX_VARIABLES} features; {model_name} has \
                 {} component(s) and {} features",
                model.n_components(),
                model.n_features()
            );
        }
        None
    };
    let interpretation = described.as_ref().map(|d| {
        interpretation(
            &d.description,
            model.scale().is_some(),
            &d.variables,
            &d.individuals,
            &[],
            d.groups.as_ref(),
        )
    });
    if let Some(it) = &interpretation {
        report = report
            .with_interpretation(it)
            .with_context(|| format!("cannot draw the interpretation figures of {model_name}"))?;
    }
    let options = ReportOptions {
        title: config
            .title
            .clone()
            .unwrap_or_else(|| format!("PCA report: {model_name}")),
        sources,
        ..ReportOptions::default()
    };
    let report = report.with_options(options)?;
    let written = write(&report, &config.output)?;
    text::stderr(&written_summary(&written, started));
    Ok(())
}

/// Whether the interpretation figures are drawn: two axes, at most [`MAX_VARIABLES`] features.
fn interpretable(model: &PcaModel) -> bool {
    model.n_components() >= 2 && model.n_features() <= MAX_VARIABLES
}

/// `describe`'s tables of the data on the model, with the names of their rows.
struct Described {
    description: Description,
    variables: Vec<String>,
    individuals: Vec<String>,
    groups: Option<GroupParts>,
}

/// Reads the data (the model's features, as the stream does) into memory, and the
/// qualitative column and row weights when there are, and describes them on the model.
fn describe_data(config: &ReportConfig, model: &PcaModel, saved: &SavedModel) -> Result<Described> {
    let inputs = &config.data;
    let model_name = show(&config.model);
    let mut options = model_read_options(
        inputs,
        &config.selection,
        saved.feature_names.as_deref(),
        &model_name,
    )?;
    if let Some(source) = &config.labels {
        options = source.exclude_from(options);
    }
    let extra: Vec<ColumnSelector> = config
        .qualitative
        .iter()
        .chain(&saved.row_weights)
        .map(|c| ColumnSelector::Name(c.clone()))
        .collect();
    if options.columns.is_none() && options.list_column.is_none() {
        for c in extra {
            if !options.exclude.contains(&c) {
                options.exclude.push(c);
            }
        }
    }
    let table = read_table(inputs, &options)
        .with_context(|| format!("cannot read {} to describe it", describe(inputs)))?;
    let data = table.data.into_f64().as_ref().to_owned();
    let d = model.n_features();
    let variables = saved
        .feature_names
        .clone()
        .or(table.column_names)
        .unwrap_or_else(|| (1..=d).map(|j| format!("x{j}")).collect());
    let individuals: Vec<String> = (1..=data.nrows()).map(|i| i.to_string()).collect();
    let qualitative: Vec<Vec<String>> = match &config.qualitative {
        Some(column) => vec![
            read_label_column(
                inputs,
                &ColumnSelector::Name(column.clone()),
                config.selection.header,
            )
            .with_context(|| format!("cannot read column {column} of {}", describe(inputs)))?,
        ],
        None => Vec::new(),
    };
    let weights = match &saved.row_weights {
        Some(column) => Some(
            read_table(
                inputs,
                &ReadOptions {
                    columns: Some(vec![ColumnSelector::Name(column.clone())]),
                    ..ReadOptions::default()
                },
            )
            .with_context(|| format!("cannot read the row weights (column {column})"))?
            .data
            .into_f64()
            .as_slice()
            .to_vec(),
        ),
        None => None,
    };
    let input = DescribeInput {
        row_weights: weights.as_deref(),
        qualitative: &qualitative,
        axes: 2,
        dimdesc_axes: 2,
        ..DescribeInput::new(data.as_ref())
    };
    let description = principal::describe::describe(model, &input)
        .with_context(|| format!("cannot describe {} on {model_name}", describe(inputs)))?;
    let groups = match &config.qualitative {
        Some(column) => Some(group_parts(&description, 0, column, &qualitative[0])?),
        None => None,
    };
    Ok(Described {
        description,
        variables,
        individuals,
        groups,
    })
}

/// Reads the labels, then streams the data through the model into the report's summary.
fn summarise_data(
    config: &ReportConfig,
    model: &PcaModel,
    features: Option<&[String]>,
) -> Result<ReportData> {
    let model_name = show(&config.model);
    let inputs = &config.data;
    let labels = match &config.labels {
        Some(source) => Some(source.read(inputs, &config.selection)?),
        None => None,
    };
    let mut options = model_read_options(inputs, &config.selection, features, &model_name)?;
    if let Some(source) = &config.labels {
        options = source.exclude_from(options);
    }
    let stream = RowStream::open(inputs, &options, model.n_components(), config.memory_limit)?;
    check_features(
        stream.n_features(),
        model.n_features(),
        inputs,
        &config.selection,
        &model_name,
    )?;
    let label_note = || {
        config
            .labels
            .as_ref()
            .map(|l| format!("the labels ({})", l.describe(inputs)))
            .unwrap_or_default()
    };
    let summarising = || {
        if config.labels.is_some() {
            format!("{} do not fit {}", label_note(), describe(inputs))
        } else {
            format!("cannot summarise {}", describe(inputs))
        }
    };
    if let (Some(labels), Some(rows)) = (&labels, stream.n_rows_hint())
        && labels.len() != rows
    {
        bail!(
            "{} are {} but {} has {rows} rows: one label per row is needed",
            label_note(),
            labels.len(),
            describe(inputs)
        );
    }
    let view = model_view(model);
    let mut builder = ReportDataBuilder::new(
        &view,
        labels.as_deref().map(Labels::new),
        config.samples.clone(),
    )?;
    let projecting = || format!("cannot project {}", describe(inputs));
    stream.for_each(|_, chunk| {
        match chunk {
            ChunkRef::F32(x) => {
                let codes = model.transform(x).with_context(projecting)?;
                builder.push(x, codes.as_ref()).with_context(summarising)?
            }
            ChunkRef::F64(x) => {
                let codes = model.transform(x).with_context(projecting)?;
                builder.push(x, codes.as_ref()).with_context(summarising)?
            }
        }
        Ok(())
    })?;
    builder.finish().with_context(summarising)
}

/// Draws and writes `report` into `dir` under a progress bar.
pub fn write(report: &Report<'_>, dir: &Path) -> Result<WrittenReport> {
    let mut progress = DrawingProgress::new();
    let written = report
        .write(dir, &mut progress)
        .with_context(|| format!("cannot write the report {}", show(dir)))?;
    Ok(written)
}

/// What was written where, what was left out and why.
pub fn written_summary(written: &WrittenReport, started: Instant) -> String {
    let drawn: Vec<&str> = written.figures.iter().map(|k| k.file_stem()).collect();
    let mut summary = format!(
        "wrote {}/index.html with {} figure(s) ({}) as PNG and SVG in {}{}\n",
        show(&written.dir),
        drawn.len(),
        drawn.join(", "),
        text::duration(started.elapsed()),
        budget::peak_memory_note()
    );
    // One line per reason: "not drawn: components, reconstructions, latent-grid (no image …)".
    let mut reasons: Vec<(&str, Vec<&str>)> = Vec::new();
    for omission in &written.omitted {
        let stem = omission.kind.file_stem();
        match reasons.iter_mut().find(|(r, _)| *r == omission.reason) {
            Some((_, stems)) => stems.push(stem),
            None => reasons.push((&omission.reason, vec![stem])),
        }
    }
    for (reason, stems) in reasons {
        summary += &format!("not drawn: {} ({reason})\n", stems.join(", "));
    }
    if let Some(leftover) = &written.leftover {
        summary += &format!(
            "warning: the previous report could not be deleted: it is at {}\n",
            show(leftover)
        );
    }
    summary
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_shapes_parse_as_height_x_width() {
        let shape = parse_image_shape("28x27").unwrap();
        assert_eq!((shape.height(), shape.width()), (28, 27));
        assert_eq!(parse_image_shape(" 4×5 ").unwrap().pixels(), 20);
        assert!(parse_image_shape("28").unwrap_err().contains("is not HxW"));
        assert!(
            parse_image_shape("0x28")
                .unwrap_err()
                .contains("side of zero")
        );
        assert!(parse_image_shape("ax3").is_err());
    }

    #[test]
    fn the_label_column_is_left_out_of_the_features_unless_columns_were_chosen() {
        let source = LabelSource::Column(ColumnSelector::Index(784));
        let options = source.exclude_from(ReadOptions::default());
        assert_eq!(options.exclude, [ColumnSelector::Index(784)]);
        let chosen = ReadOptions {
            columns: Some(vec![ColumnSelector::Index(0)]),
            ..ReadOptions::default()
        };
        assert!(source.exclude_from(chosen).exclude.is_empty());
        let files = LabelSource::Files(vec![PathBuf::from("l.csv")]);
        assert!(
            files
                .exclude_from(ReadOptions::default())
                .exclude
                .is_empty()
        );
    }
}
