//! `principal classify`: recognition by nearest codes, the eigenfaces pipeline. A model of the
//! training set is fitted once with the largest K asked for; both sets are projected onto it;
//! every test sample gets the label of the majority of its N nearest training codes
//! (Euclidean distance) on the first K components, for each K.
//!
//! One fit serves every K exactly: an exact solver's components are the eigenvectors of the
//! covariance matrix by decreasing eigenvalue, and the K-component model is the first K of
//! them (the same vectors, not an approximation of them), so the first K codes of the largest
//! model are the codes of the K-component model.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Args;
use principal::faer::Mat;
use principal::neighbours::nearest_neighbours;
use principal::{ComponentCount, PcaBuilder, PcaModel, Scaling, Solver};
use principal_io::{ColumnSelector, Matrix, ReadOptions, read_table};
use principal_report::{
    Classification, ImageShape, Labels, Recognition, Report, ReportDataBuilder, ReportOptions,
    SampleChoice,
};
use serde_json::json;

use crate::args::SelectArgs;
use crate::budget;
use crate::command::fit::parse_components;
use crate::command::report::{LabelSource, model_view, parse_image_shape, write, written_summary};
use crate::select::{Selection, describe, model_read_options};
use crate::text;
use crate::units::format_bytes;

/// K when `--components` is not given (capped at what the data allows).
const DEFAULT_COMPONENTS: usize = 50;

#[derive(Debug, Args)]
pub struct ClassifyArgs {
    /// Training data: files as for `fit` (read into memory).
    #[arg(long, value_name = "INPUT", num_args = 1.., required = true)]
    pub train: Vec<PathBuf>,
    /// Labels of the training rows: IDX label files, text with one label per line, or a
    /// one-column NPY/Parquet/Arrow file.
    #[arg(long, value_name = "LABELS", num_args = 1.., required_unless_present = "label_column", conflicts_with = "label_column")]
    pub train_labels: Vec<PathBuf>,
    /// Test data, with the training data's columns.
    #[arg(long, value_name = "INPUT", num_args = 1.., required = true)]
    pub test: Vec<PathBuf>,
    /// Labels of the test rows.
    #[arg(long, value_name = "LABELS", num_args = 1.., required_unless_present = "label_column", conflicts_with = "label_column")]
    pub test_labels: Vec<PathBuf>,
    /// The column that holds the labels in both data sets, instead of label files (a header
    /// name or 0-based index); it is not a feature.
    #[arg(long, value_name = "NAME")]
    pub label_column: Option<ColumnSelector>,
    /// Numbers of components K to compare codes on, comma-separated (default 50, or fewer when
    /// the data allows fewer). One model is fitted, with the largest.
    #[arg(short = 'k', long, value_name = "K,..", value_delimiter = ',', num_args = 1, value_parser = parse_components, allow_negative_numbers = true)]
    pub components: Option<Vec<usize>>,
    /// Nearest training codes that vote on a test sample's label. A tie between labels goes
    /// to the one whose nearest code is nearest; equally near codes are taken in training order.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = parse_neighbours)]
    pub neighbours: usize,
    /// Divide each centred feature by its standard deviation before projecting.
    #[arg(long)]
    pub standardize: bool,
    /// Print the results as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Also write a report to this directory: the confusion matrix and accuracy figures, and
    /// the model's figures with the test set as data.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    /// With --report: every sample is an image of H rows of W pixels (e.g. 28x28).
    #[arg(long, value_name = "HxW", value_parser = parse_image_shape, requires = "report")]
    pub image_shape: Option<ImageShape>,
    #[command(flatten)]
    pub select: SelectArgs,
    /// Working-memory budget, e.g. 300M, 2G (default: half of the machine's memory): the
    /// confusion matrices and the neighbour lists must fit in it (checked before any is made).
    #[arg(long, value_name = "SIZE", value_parser = crate::args::parse_size)]
    pub memory_limit: Option<u64>,
}

fn parse_neighbours(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!(
            "--neighbours {s} is not allowed: it is a whole number of at least 1"
        )),
    }
}

/// A validated `classify` request.
#[derive(Debug)]
pub struct ClassifyConfig {
    train: Vec<PathBuf>,
    train_labels: LabelSource,
    test: Vec<PathBuf>,
    test_labels: LabelSource,
    /// Sorted, without repeats; `None`: the default.
    components: Option<Vec<usize>>,
    neighbours: usize,
    scaling: Scaling,
    json: bool,
    report: Option<PathBuf>,
    image_shape: Option<ImageShape>,
    selection: Selection,
    memory_limit: u64,
}

impl ClassifyConfig {
    pub fn new(args: ClassifyArgs) -> Result<Self> {
        let labels = |files| {
            LabelSource::new(files, args.label_column.clone())
                .context("labels are needed: --train-labels and --test-labels, or --label-column")
        };
        let train_labels = labels(args.train_labels)?;
        let test_labels = labels(args.test_labels)?;
        let components = args.components.map(|mut ks| {
            ks.sort_unstable();
            ks.dedup();
            ks
        });
        Ok(ClassifyConfig {
            train: args.train,
            train_labels,
            test: args.test,
            test_labels,
            components,
            neighbours: args.neighbours,
            scaling: if args.standardize {
                Scaling::Standardize
            } else {
                Scaling::Centre
            },
            json: args.json,
            report: args.report,
            image_shape: args.image_shape,
            selection: Selection::new(args.select),
            memory_limit: args
                .memory_limit
                .unwrap_or_else(budget::default_memory_limit),
        })
    }
}

/// One data set read whole, with its labels.
struct LabelledData {
    rows: Matrix,
    labels: Vec<String>,
    column_names: Option<Vec<String>>,
}

/// Reads `inputs` and their labels, and checks that there is one label per row.
fn read_labelled(
    inputs: &[PathBuf],
    source: &LabelSource,
    options: ReadOptions,
    selection: &Selection,
    flag: &str,
) -> Result<LabelledData> {
    let labels = source.read(inputs, selection)?;
    let table = read_table(inputs, &source.exclude_from(options))?;
    if labels.len() != table.data.nrows() {
        bail!(
            "{flag}: {} label(s) for the {} rows of {} ({}): one label per row is needed",
            labels.len(),
            table.data.nrows(),
            describe(inputs),
            source.describe(inputs)
        );
    }
    Ok(LabelledData {
        rows: table.data,
        labels,
        column_names: table.column_names,
    })
}

/// One K's results.
struct Outcome {
    components: usize,
    correct: u64,
    /// `confusion[true][predicted]`, classes as in [`Labels::classes`].
    confusion: Vec<Vec<u64>>,
    search: Duration,
}

impl Outcome {
    fn accuracy(&self, n_test: usize) -> f64 {
        self.correct as f64 / n_test as f64
    }
}

/// Where the time went.
#[derive(Default)]
struct Timings {
    read: Duration,
    fit: Duration,
    project: Duration,
}

pub fn run(config: &ClassifyConfig) -> Result<()> {
    let started = Instant::now();
    let mut timings = Timings::default();
    let train = read_labelled(
        &config.train,
        &config.train_labels,
        config.selection.read_options(),
        &config.selection,
        "--train",
    )?;
    let fitted_on = format!("fitted on {}", describe(&config.train));
    let test_options = model_read_options(
        &config.test,
        &config.selection,
        train.column_names.as_deref(),
        &fitted_on,
    )?;
    let test = read_labelled(
        &config.test,
        &config.test_labels,
        test_options,
        &config.selection,
        "--test",
    )?;
    if test.rows.ncols() != train.rows.ncols() {
        bail!(
            "{} has {} feature column(s) but the training data {} has {}",
            describe(&config.test),
            test.rows.ncols(),
            describe(&config.train),
            train.rows.ncols()
        );
    }
    timings.read = started.elapsed();

    let (n_train, d) = (train.rows.nrows(), train.rows.ncols());
    let largest_possible = n_train.min(d);
    let ks = match &config.components {
        Some(ks) => ks.clone(),
        None => vec![DEFAULT_COMPONENTS.min(largest_possible)],
    };
    let k_max = *ks.last().context("no number of components")?;
    if k_max > largest_possible {
        bail!(
            "--components {k_max} is too many: the training data ({n_train} rows × {d} features) \
             has at most {largest_possible} components"
        );
    }
    if config.neighbours > n_train {
        bail!(
            "--neighbours {} is more than the {n_train} training rows",
            config.neighbours
        );
    }
    if let Some(shape) = config.image_shape
        && shape.pixels() != d
    {
        bail!(
            "--image-shape: image shape {}×{} has {} pixels but the training data {} has \
                 {d} features",
            shape.height(),
            shape.width(),
            shape.pixels(),
            describe(&config.train)
        );
    }
    let n_test = test.labels.len();
    check_neighbour_lists(config, n_test)?;

    let all: Vec<&str> = train
        .labels
        .iter()
        .chain(&test.labels)
        .map(String::as_str)
        .collect();
    let classes = Labels::new(&all);
    let n_classes = classes.classes().len();
    check_confusion_matrices(config, n_classes, ks.len())?;

    let step = Instant::now();
    let model = fit(&train.rows, k_max, config.scaling)?;
    timings.fit = step.elapsed();
    let step = Instant::now();
    let train_codes = project(&model, &train.rows)?;
    let test_codes = project(&model, &test.rows)?;
    timings.project = step.elapsed();

    let train_class: Vec<usize> = (0..n_train).map(|i| classes.class_of(i)).collect();
    let test_class: Vec<usize> = (0..n_test).map(|i| classes.class_of(n_train + i)).collect();
    let outcomes: Vec<Outcome> = ks
        .iter()
        .map(|&k| {
            let step = Instant::now();
            let found = nearest_neighbours(
                train_codes.as_ref().subcols(0, k),
                test_codes.as_ref().subcols(0, k),
                config.neighbours,
            );
            let predicted = found.vote(&train_class);
            let mut confusion = vec![vec![0u64; n_classes]; n_classes];
            for (&p, &t) in predicted.iter().zip(&test_class) {
                confusion[t][p] += 1;
            }
            let correct = (0..n_classes).map(|c| confusion[c][c]).sum();
            Outcome {
                components: k,
                correct,
                confusion,
                search: step.elapsed(),
            }
        })
        .collect();
    // The confusion matrix shown: the best accuracy's (on a tie, the smallest K's).
    let best = outcomes.iter().enumerate().fold(0, |b, (i, o)| {
        if o.correct > outcomes[b].correct {
            i
        } else {
            b
        }
    });

    let results = Results {
        config,
        model: &model,
        classes: classes.classes(),
        outcomes: &outcomes,
        best,
        n_train,
        n_test,
    };
    if config.json {
        text::stdout(&(serde_json::to_string_pretty(&results.json())? + "\n"))?;
    } else {
        text::stdout(&results.text())?;
    }
    let mut summary = results.timing(&timings);
    if let Some(dir) = &config.report {
        let outcome = &outcomes[best];
        let classification = Classification::new(
            classes.classes().to_vec(),
            outcome.confusion.clone(),
            outcomes
                .iter()
                .map(|o| (o.components, o.accuracy(n_test)))
                .collect(),
        )?
        .with_setting(Recognition {
            components: outcome.components,
            neighbours: config.neighbours,
        })?;
        let drawn = Instant::now();
        let view = model_view(&model);
        let mut builder = ReportDataBuilder::new(
            &view,
            Some(Labels::new(&test.labels)),
            SampleChoice::default(),
        )?;
        match &test.rows {
            Matrix::F32(x) => builder.push(x.as_ref(), test_codes.as_ref())?,
            Matrix::F64(x) => builder.push(x.as_ref(), test_codes.as_ref())?,
        }
        let data = builder.finish()?;
        let options = ReportOptions {
            title: "PCA recognition by nearest codes".into(),
            sources: vec![
                ("training data".into(), describe(&config.train)),
                ("test data".into(), describe(&config.test)),
            ],
            ..ReportOptions::default()
        };
        let mut report = Report::new(view)?
            .with_data(&data)?
            .with_classification(&classification)
            .with_options(options)?;
        if let Some(shape) = config.image_shape {
            report = report
                .with_image_shape(shape)
                .context("--image-shape does not fit the data")?;
        }
        let written = write(&report, dir)?;
        summary += &written_summary(&written, drawn);
    }
    summary += &format!(
        "done in {}{}\n",
        text::duration(started.elapsed()),
        budget::peak_memory_note()
    );
    text::stderr(&summary);
    Ok(())
}

/// `bytes` in the budget's words: `None` (an overflow) or more than `limit` is too much.
fn over_budget(bytes: Option<u64>, limit: u64) -> Option<String> {
    match bytes {
        Some(b) if b <= limit => None,
        Some(b) => Some(format!(
            "would take {}, over the memory limit of {} (--memory-limit)",
            format_bytes(b as f64),
            format_bytes(limit as f64)
        )),
        None => Some("would take more bytes than this machine can count".into()),
    }
}

/// The nearest-neighbour search keeps each test row's `--neighbours` nearest training rows (a
/// row index and a squared distance, 16 bytes each) at once: refused before the search when
/// that exceeds the budget.
fn check_neighbour_lists(config: &ClassifyConfig, n_test: usize) -> Result<()> {
    let bytes = (n_test as u64)
        .checked_mul(config.neighbours as u64)
        .and_then(|b| b.checked_mul(16));
    if let Some(why) = over_budget(bytes, config.memory_limit) {
        let most = config.memory_limit / 16 / (n_test.max(1) as u64);
        bail!(
            "--neighbours {}: the lists of the {} nearest training codes of {n_test} test rows \
             {why}; use at most {most}",
            config.neighbours,
            config.neighbours
        );
    }
    Ok(())
}

/// One n_classes × n_classes confusion matrix of counts is kept per K: refused before the fit
/// when they exceed the budget (a label column of continuous values has about as many classes
/// as rows: 70,000 of them would take 39 GB per K).
fn check_confusion_matrices(config: &ClassifyConfig, n_classes: usize, n_ks: usize) -> Result<()> {
    let n = n_classes as u64;
    // Every K's matrix, and a copy of the best one for the report.
    let bytes = n
        .checked_mul(n)
        .and_then(|cells| cells.checked_mul(8))
        .and_then(|one| one.checked_mul(n_ks as u64 + 1));
    if let Some(why) = over_budget(bytes, config.memory_limit) {
        bail!(
            "the labels ({}; {}) have {n_classes} distinct values: {} confusion matrices of \
             {n_classes}×{n_classes} counts {why}. Are they class labels? A column of \
             continuous values has about as many classes as rows",
            config.train_labels.describe(&config.train),
            config.test_labels.describe(&config.test),
            n_ks + 1
        );
    }
    Ok(())
}

/// Fits `k` components with an exact solver: auto's choice when it is exact (covariance, gram
/// or svd), otherwise covariance for tall data and gram for wide — so that the first K
/// components are exactly the K-component model's.
fn fit(rows: &Matrix, k: usize, scaling: Scaling) -> Result<PcaModel> {
    let builder = PcaBuilder::new()
        .components(ComponentCount::Fixed(k))
        .scaling(scaling);
    let (n, d) = (rows.nrows(), rows.ncols());
    let solver = match builder.clone().build()?.plan(n, d).solver {
        exact @ (Solver::Covariance | Solver::Gram | Solver::Svd) => exact,
        _ if n >= d => Solver::Covariance,
        _ => Solver::Gram,
    };
    let params = builder.solver(solver).build()?;
    let model = match rows {
        Matrix::F32(x) => params.fit(x.as_ref()),
        Matrix::F64(x) => params.fit(x.as_ref()),
    };
    model.context("cannot fit the training data")
}

fn project(model: &PcaModel, rows: &Matrix) -> Result<Mat<f64>> {
    Ok(match rows {
        Matrix::F32(x) => model.transform(x.as_ref())?,
        Matrix::F64(x) => model.transform(x.as_ref())?,
    })
}

/// What classify prints.
struct Results<'a> {
    config: &'a ClassifyConfig,
    model: &'a PcaModel,
    classes: &'a [String],
    outcomes: &'a [Outcome],
    best: usize,
    n_train: usize,
    n_test: usize,
}

impl Results<'_> {
    fn method(&self) -> String {
        match self.config.neighbours {
            1 => "the label of the nearest training code".to_owned(),
            n => format!("the majority label of the {n} nearest training codes"),
        }
    }

    fn text(&self) -> String {
        let mut out = format!(
            "{} test samples labelled with {} among {} ({} classes), on the first K components \
             of a model fitted by {}:\n",
            self.n_test,
            self.method(),
            self.n_train,
            self.classes.len(),
            self.model.solver()
        );
        let _ = writeln!(out, "{:>6}  {:>8}  correct", "K", "accuracy");
        for o in self.outcomes {
            let _ = writeln!(
                out,
                "{:>6}  {:>8}  {} of {}",
                o.components,
                text::percent(o.accuracy(self.n_test)),
                o.correct,
                self.n_test
            );
        }
        let shown = &self.outcomes[self.best];
        let _ = writeln!(
            out,
            "\nconfusion matrix at K = {}{}: rows are true labels, columns predicted labels",
            shown.components,
            if self.outcomes.len() > 1 {
                " (the best accuracy)"
            } else {
                ""
            }
        );
        let names: Vec<String> = self
            .classes
            .iter()
            .map(|c| c.chars().take(12).collect())
            .collect();
        let name_width = names.iter().map(|n| n.chars().count()).max().unwrap_or(1);
        let largest = shown.confusion.iter().flatten().max().copied().unwrap_or(0);
        let cell = names
            .iter()
            .map(|n| n.chars().count())
            .chain([largest.to_string().len()])
            .max()
            .unwrap_or(1);
        let _ = write!(out, "{:>name_width$}", "");
        for name in &names {
            let _ = write!(out, "  {name:>cell$}");
        }
        out.push('\n');
        for (name, row) in names.iter().zip(&shown.confusion) {
            let _ = write!(out, "{name:>name_width$}");
            for count in row {
                let _ = write!(out, "  {count:>cell$}");
            }
            out.push('\n');
        }
        out
    }

    fn json(&self) -> serde_json::Value {
        json!({
            "n_train": self.n_train,
            "n_test": self.n_test,
            "n_features": self.model.n_features(),
            "neighbours": self.config.neighbours,
            "standardize": self.config.scaling == Scaling::Standardize,
            "solver": self.model.solver().name(),
            "classes": self.classes,
            "best_components": self.outcomes[self.best].components,
            "results": self.outcomes.iter().map(|o| json!({
                "components": o.components,
                "accuracy": o.accuracy(self.n_test),
                "correct": o.correct,
                "confusion": o.confusion,
            })).collect::<Vec<_>>(),
        })
    }

    fn timing(&self, t: &Timings) -> String {
        let searches: Vec<String> = self
            .outcomes
            .iter()
            .map(|o| format!("K = {}: {}", o.components, text::duration(o.search)))
            .collect();
        format!(
            "read {} training and {} test rows × {} features in {}; fitted {} components \
             ({}) in {}; projected both in {}; nearest-neighbour search ({} test × {} training \
             codes, blocked products) {}\n",
            self.n_train,
            self.n_test,
            self.model.n_features(),
            text::duration(t.read),
            self.model.n_components(),
            self.model.solver(),
            text::duration(t.fit),
            text::duration(t.project),
            self.n_test,
            self.n_train,
            searches.join(", ")
        )
    }
}
