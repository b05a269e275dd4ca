//! `principal fit`: read data, fit a model, save it, report what was done.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use principal::{
    ComponentCount, IterativeOptions, PcaBuilder, PcaModel, PcaParams, PowerMethod,
    RandomizedMethod, Scaling, Solver,
};
use principal_io::{read_table, save_model, ChunkReader, FileSource, Matrix, ReadOptions};

use crate::args::FitArgs;
use crate::budget;
use crate::progress::Progress;
use crate::report::{self, percent};
use crate::select::{describe, show, Selection};

/// How many per-component percentages the summary lists.
const SHOWN_COMPONENTS: usize = 5;

/// A validated `fit` request.
#[derive(Debug)]
pub struct FitConfig {
    inputs: Vec<PathBuf>,
    read: ReadOptions,
    params: PcaParams,
    output: PathBuf,
    explain: bool,
    memory_limit: u64,
}

impl FitConfig {
    pub fn new(args: FitArgs) -> Result<Self> {
        let components = match (args.components, args.variance) {
            (Some(k), _) => ComponentCount::Fixed(k),
            (None, Some(f)) => ComponentCount::VarianceFraction(f),
            (None, None) => ComponentCount::All,
        };
        let scaling = if args.standardize {
            Scaling::Standardize
        } else {
            Scaling::Centre
        };
        let it = &args.iterative;
        let iterative = IterativeOptions {
            seed: it.seed,
            tolerance: it.tolerance,
            power_iterations: it.power_iterations,
            oversampling: it.oversampling,
            max_iterations: usize::try_from(it.max_iterations).unwrap_or(usize::MAX),
            power_method: if it.power_method == "deflation" {
                PowerMethod::Deflation
            } else {
                PowerMethod::Block
            },
            randomized_method: if it.randomized_method == "subspace" {
                RandomizedMethod::Subspace
            } else {
                RandomizedMethod::BlockKrylov
            },
        };
        let memory_limit = args
            .memory_limit
            .unwrap_or_else(budget::default_memory_limit);
        let params = PcaBuilder::new()
            .components(components)
            .scaling(scaling)
            .ddof(args.ddof)
            .solver(args.solver)
            .iterative(iterative)
            .memory_limit(Some(memory_limit))
            .precision(args.precision.parse().map_err(anyhow::Error::msg)?)
            .build()?;
        Ok(FitConfig {
            inputs: args.inputs,
            read: Selection::new(args.select).read_options(),
            params,
            output: args.output,
            explain: args.explain,
            memory_limit,
        })
    }
}

/// Whether the data is read into memory or streamed from the files, and why.
struct ReadingPlan {
    streaming: bool,
    why: String,
}

/// Data that fits in half the budget is read into memory when a solver makes several passes
/// (memory is faster than re-reading); the covariance solver always streams (one pass, and
/// its memory is D² whatever N is); gram and svd need the data whole.
fn reading_plan(
    config: &FitConfig,
    rows: Option<usize>,
    d: usize,
    data_bytes: u64,
) -> Result<ReadingPlan> {
    let limit = config.memory_limit;
    let solver = match (config.params.solver(), rows) {
        (Solver::Auto, Some(n)) => config.params.plan(n, d).solver,
        (requested, _) => requested,
    };
    let size = format!("≈ {} MB of data", data_bytes.div_ceil(1_000_000));
    // With the row count known up front (NPY, IDX, Parquet) the rows are read into one buffer
    // of the exact size, which becomes the matrix; otherwise the growing buffer can hold up to
    // three times the data while it is reallocated.
    let held = if rows.is_some() { 1 } else { 3 };
    let fits = held * data_bytes <= limit / 2;
    let (streaming, why) = match solver {
        Solver::Covariance => (
            true,
            "covariance makes one pass; its memory is D², whatever N is".to_string(),
        ),
        Solver::Gram | Solver::Svd if data_bytes > limit => anyhow::bail!(
            "--solver {solver} needs the data in memory ({size}), over --memory-limit {} MB; \
             use --solver covariance, randomized or power, which stream from the files",
            limit / 1_000_000
        ),
        Solver::Gram | Solver::Svd => {
            (false, format!("{solver} needs the data in memory ({size})"))
        }
        _ if fits => (
            false,
            format!("{size} fits in half the memory limit; passes run from memory"),
        ),
        _ => (
            true,
            format!(
                "{size} exceeds half the memory limit of {} MB",
                limit / 1_000_000
            ),
        ),
    };
    Ok(ReadingPlan { streaming, why })
}

/// Bytes the data takes in memory: exact for binary formats, estimated from file sizes for
/// text (a number in text takes about as many bytes as an f64; gzip shrinks text about 4×).
fn data_bytes(inputs: &[PathBuf], rows: Option<usize>, d: usize, bytes_per_value: u64) -> u64 {
    if let Some(n) = rows {
        return n as u64 * d as u64 * bytes_per_value;
    }
    inputs
        .iter()
        .map(|p| {
            let len = std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
            let gz = p.extension().is_some_and(|e| e.eq_ignore_ascii_case("gz"));
            if gz {
                len * 4
            } else {
                len
            }
        })
        .sum()
}

pub fn run(config: &FitConfig) -> Result<()> {
    let started = Instant::now();
    let reader = ChunkReader::open(&config.inputs, &config.read)?;
    let (d, rows, f32) = (reader.n_features(), reader.n_rows_hint(), reader.is_f32());
    let bytes_per_value = if f32 { 4 } else { 8 };
    let plan = reading_plan(
        config,
        rows,
        d,
        data_bytes(&config.inputs, rows, d, bytes_per_value),
    )?;
    let fit_error = || format!("cannot fit {}", describe(&config.inputs));

    let (model, names, timing) = if plan.streaming {
        let mut files = FileSource::from_reader(reader, budget::chunk_rows(d, config.memory_limit));
        let names = files.column_names().map(<[String]>::to_vec);
        let params = &config.params;
        let mut source = Progress::new(
            &mut files,
            rows.map(|n| n as u64),
            bytes_per_value,
            Box::new(move |n| params.planned_passes(n, d)),
        );
        let model = config
            .params
            .fit_source(&mut source)
            .with_context(fit_error)?;
        source.finish();
        let passes = source.passes();
        (
            model,
            names,
            Timing::Streamed {
                total: started.elapsed(),
                passes,
            },
        )
    } else {
        drop(reader);
        let table = read_table(&config.inputs, &config.read)?;
        let read_time = started.elapsed();
        let fitting = Instant::now();
        let fitted = match &table.data {
            Matrix::F32(x) => config.params.fit(x.as_ref()),
            Matrix::F64(x) => config.params.fit(x.as_ref()),
        };
        let model = fitted.with_context(fit_error)?;
        (
            model,
            table.column_names,
            Timing::InMemory {
                read: read_time,
                fit: fitting.elapsed(),
            },
        )
    };

    save_model(&config.output, &model, names.as_deref())?;

    if model.scaling() == Scaling::Standardize && !model.zero_variance_features().is_empty() {
        report::stderr(&zero_variance_warning(&model, names.as_deref()));
    }
    let solver_plan = config.params.plan(model.n_samples(), model.n_features());
    if config.explain {
        report::stderr(&explanation(&solver_plan, &plan, config.memory_limit));
    }
    report::stderr(&summary(&model, config, &solver_plan.reason, &timing));
    Ok(())
}

/// How long the work took.
enum Timing {
    InMemory {
        read: std::time::Duration,
        fit: std::time::Duration,
    },
    Streamed {
        total: std::time::Duration,
        passes: usize,
    },
}

fn explanation(solver: &principal::SolverPlan, reading: &ReadingPlan, limit: u64) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "solver choice (memory limit {}):",
        crate::units::format_bytes(limit as f64)
    );
    let _ = writeln!(
        s,
        "  {:<11} {:>16} {:>12}  note",
        "solver", "multiply-adds", "memory"
    );
    for c in &solver.candidates {
        let cost = c
            .multiply_adds
            .map_or("unknown".to_string(), |m| format!("{m:.2e}"));
        let mark = if c.solver == solver.solver {
            "  ← chosen"
        } else {
            ""
        };
        let note = c
            .unsuitable
            .map(crate::units::unsuitable_note)
            .unwrap_or_default();
        let _ = writeln!(
            s,
            "  {:<11} {:>16} {:>12}  {note}{mark}",
            c.solver.name(),
            cost,
            crate::units::format_bytes(c.memory_bytes)
        );
    }
    let _ = writeln!(s, "  why: {}", solver.reason);
    let mode = if reading.streaming {
        "streamed from the files"
    } else {
        "read into memory"
    };
    let _ = writeln!(s, "data {mode}: {}", reading.why);
    s
}

fn zero_variance_warning(model: &PcaModel, names: Option<&[String]>) -> String {
    let zero = model.zero_variance_features();
    let listed: Vec<String> = zero
        .iter()
        .map(|&j| report::feature_name(names, j))
        .collect();
    let place = if names.is_some() {
        ""
    } else {
        " (counting the used columns from 0)"
    };
    format!(
        "warning: {} feature(s) have zero variance and keep scale 1 when standardizing{place}: {}\n",
        zero.len(),
        report::abbreviate(&listed, 20)
    )
}

fn summary(model: &PcaModel, config: &FitConfig, why: &str, timing: &Timing) -> String {
    let m = model.n_components();
    let ratios = model.explained_variance_ratio();
    let total: f64 = ratios.iter().sum();
    let mut per: Vec<String> = ratios
        .iter()
        .take(SHOWN_COMPONENTS)
        .enumerate()
        .map(|(i, r)| format!("pc{} {}", i + 1, percent(*r)))
        .collect();
    if m > SHOWN_COMPONENTS {
        per.push("…".into());
    }
    let mut s = String::new();
    let _ = writeln!(
        s,
        "fitted {m} component(s) to {} samples × {} features from {}",
        model.n_samples(),
        model.n_features(),
        describe(&config.inputs)
    );
    let _ = writeln!(
        s,
        "variance explained: {} in total ({})",
        percent(total),
        per.join(", ")
    );
    let standardize = if model.scaling() == Scaling::Standardize {
        ", standardized"
    } else {
        ""
    };
    let _ = writeln!(s, "settings: ddof {}{standardize}", model.ddof());
    let requested = config.params.solver();
    if requested == model.solver() {
        let _ = writeln!(s, "solver: {}", model.solver());
    } else {
        let _ = writeln!(
            s,
            "solver: {} (chosen by {requested}: {why})",
            model.solver()
        );
    }
    if let Some(report) = model.iteration_report() {
        let _ = writeln!(
            s,
            "iterations: {} passes, error estimate {:.2e}{}",
            report.passes,
            report.error_estimate,
            if report.converged {
                ""
            } else {
                " (tolerance NOT reached)"
            }
        );
    }
    let peak = budget::peak_memory_note();
    match timing {
        Timing::InMemory { read, fit } => {
            let _ = writeln!(
                s,
                "time: {} reading, {} fitting{peak}",
                report::duration(*read),
                report::duration(*fit)
            );
        }
        Timing::Streamed { total, passes } => {
            let _ = writeln!(
                s,
                "time: {} reading and fitting, streamed in {passes} pass(es){peak}",
                report::duration(*total)
            );
        }
    }
    let _ = writeln!(s, "model written to {}", show(&config.output));
    s
}
