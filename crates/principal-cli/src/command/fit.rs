//! `principal fit`: read data, fit a model, save it, report what was done.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use principal::{
    Centre, Collective, ComponentCount, IterativeOptions, MissingValues, PcaBuilder, PcaModel,
    PcaParams, PowerMethod, Precision, RandomizedMethod, Scaling, Solver, Whitening,
};
use principal_io::{
    ChunkReader, ColumnSelector, FileSource, Matrix, Missing, Part, ReadOptions, read_table,
    save_model, save_weighted_model,
};

use crate::args::{
    MemoryArgs, SelectArgs, check, one_of, parse_folds, parse_noise_sigma, usage_error,
};
use crate::budget;
use crate::models::{KindFit, ModelArgs, Shared};
use crate::progress::Progress;
use crate::select::{Selection, describe, show};
use crate::text::{self, percent};

/// How many per-component percentages the summary lists.
const SHOWN_COMPONENTS: usize = 5;

#[derive(Debug, Args)]
pub struct FitArgs {
    /// Data files: CSV or TSV (optionally .gz), NPY, IDX (optionally .gz), Parquet or Arrow IPC;
    /// a directory (its data files, sorted) or a quoted glob pattern such as 'parts/*.parquet'.
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,
    /// Keep K components (1 ≤ K ≤ min(n_samples, n_features)), or let a criterion choose
    /// them from the whole spectrum: mle (Minka's Bayesian evidence, as scikit-learn's
    /// n_components='mle'), gavish-donoho (Gavish & Donoho's optimal threshold on the singular
    /// values; --noise-sigma if the noise level is known) or cv (the largest held-out
    /// probabilistic-PCA log-likelihood over --folds folds, seeded by --seed).
    #[arg(short = 'k', long, value_name = "K|mle|gavish-donoho|cv", value_parser = parse_count, conflicts_with = "variance", allow_negative_numbers = true)]
    pub components: Option<ComponentCount>,
    /// With --components gavish-donoho: the noise's standard deviation per entry (in
    /// standardized units with --standardize); without it, estimated from the median singular
    /// value.
    #[arg(long, value_name = "SIGMA", value_parser = parse_noise_sigma, requires = "components", allow_negative_numbers = true)]
    pub noise_sigma: Option<f64>,
    /// With --components cv: the number of folds (at least 2; default 5).
    #[arg(long, value_name = "K", value_parser = parse_folds, requires = "components")]
    pub folds: Option<usize>,
    /// Keep the fewest components that explain at least this fraction F of the variance (0 < F ≤ 1).
    #[arg(long, value_name = "F", value_parser = parse_variance, allow_negative_numbers = true)]
    pub variance: Option<f64>,
    /// Divide each centred feature by its standard deviation (PCA of the correlation matrix).
    #[arg(long)]
    pub standardize: bool,
    /// Whiten: `transform` divides each code by the standard deviation of its component
    /// (√explained variance), so the training data's codes have unit variance (scikit-learn's
    /// whiten=True); `inverse` multiplies them back. Recorded in the model.
    #[arg(long)]
    pub whiten: bool,
    /// Do not subtract the mean: the truncated SVD of the raw matrix (scikit-learn's
    /// TruncatedSVD, scanpy's zero_center=False). The model's mean is zero; its explained
    /// variance is each component's codes' variance, as TruncatedSVD reports it.
    #[arg(long, visible_alias = "no-center", conflicts_with_all = ["standardize", "missing"])]
    pub no_centre: bool,
    /// Delta degrees of freedom: covariance = Xcᵀ Xc / (N − ddof).
    #[arg(long, value_name = "0|1", default_value = "1", value_parser = parse_ddof, allow_negative_numbers = true)]
    pub ddof: usize,
    /// The algorithm; auto picks by shape and reports why.
    #[arg(long, value_name = "SOLVER", default_value = "auto", value_parser = one_of::<Solver>(Solver::NAMES))]
    pub solver: Solver,
    /// Where to write the model (safetensors; any extension).
    #[arg(short, long, value_name = "MODEL")]
    pub output: PathBuf,
    #[command(flatten)]
    pub select: SelectArgs,
    #[command(flatten)]
    pub iterative: IterativeArgs,
    /// Products of the covariance solver for f32 input that is not small integers: full (f64,
    /// exact to rounding) or mixed (f32 products summed in f64, about twice as fast; every
    /// eigenvalue within 1.6e-5 of the total variance, in practice about 1e-6). Pixels and
    /// other small integers are always exact; f64 input always uses full.
    #[arg(long, value_name = "full|mixed", default_value = "full", value_parser = one_of::<Precision>(Precision::NAMES))]
    pub precision: Precision,
    /// Print how the solver and the reading mode were chosen: every solver's estimated
    /// multiply-adds and memory.
    #[arg(long)]
    pub explain: bool,
    /// Missing values (NaN, empty CSV cells, Parquet/Arrow nulls): `em` fits probabilistic PCA
    /// by EM on the observed values only (needs --components, below the number of features;
    /// the em solver). Without it a missing value is an error.
    #[arg(long, value_name = "em", value_parser = one_of::<MissingValues>(&["em"]), requires = "components", conflicts_with = "variance")]
    pub missing: Option<MissingValues>,
    /// Weight the rows by this numeric column of the data (FactoMineR's row.w): a weighted
    /// mean and covariance, the weights normalised to sum to 1 (equal weights give the
    /// unweighted fit). The column is not a feature; the model records its name and
    /// `describe` reads it. An exact fit in memory (solver svd, gram, covariance or auto), in
    /// one process, with every value present.
    #[arg(long, value_name = "COLUMN", conflicts_with = "missing")]
    pub row_weights: Option<String>,
    #[command(flatten)]
    pub memory: MemoryArgs,
    #[command(flatten)]
    pub kind: ModelArgs,
}

/// Settings of the randomized, power and em solvers.
#[derive(Debug, Args)]
pub struct IterativeArgs {
    /// Seed of the random start (randomized, power, em) and of the rows' assignment to folds
    /// (--components cv): the same seed gives the same model.
    #[arg(long, value_name = "S", default_value_t = 0)]
    pub seed: u64,
    /// Iterate until the a-posteriori error estimate max‖S b − λ b‖/λ₁ is at most T (0 < T < 1);
    /// with --missing em, until the estimated relative distance to EM's fixed point is.
    #[arg(long, value_name = "T", value_parser = parse_tolerance)]
    pub tolerance: Option<f64>,
    /// Passes beyond the first of the randomized solver (default: krylov 3 when K < 0.1·min(N, D),
    /// else 2; subspace 7, else 4).
    #[arg(long, value_name = "Q")]
    pub power_iterations: Option<usize>,
    /// Extra random columns of the randomized solver.
    #[arg(long, value_name = "P", default_value_t = 10)]
    pub oversampling: usize,
    /// Upper bound on passes when iterating to a tolerance (default 1000; --model
    /// factor-analysis 10000 EM steps, --model ica 200 as scikit-learn).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_iterations: Option<u64>,
    /// How the randomized solver iterates: block Krylov (Rayleigh–Ritz on every pass's block
    /// together; more accurate per pass) or subspace (on the last block, as scikit-learn).
    #[arg(long, value_name = "METHOD", default_value = "krylov", value_parser = one_of::<RandomizedMethod>(RandomizedMethod::NAMES))]
    pub randomized_method: RandomizedMethod,
    /// How the power solver finds several components.
    #[arg(long, value_name = "METHOD", default_value = "block", value_parser = one_of::<PowerMethod>(PowerMethod::NAMES))]
    pub power_method: PowerMethod,
}

/// A whole number K (`classify`: every K is compared, no criterion chooses).
pub(crate) fn parse_components(s: &str) -> Result<usize, String> {
    let k: usize = s
        .parse()
        .map_err(|_| format!("--components {s} is not a whole number"))?;
    check(PcaBuilder::new().components(ComponentCount::Fixed(k)))?;
    Ok(k)
}

/// K, mle, gavish-donoho or cv, as the library's [`ComponentCount`] (its own `FromStr`), the
/// range of K checked by the library.
fn parse_count(s: &str) -> Result<ComponentCount, String> {
    let count: ComponentCount = s.parse().map_err(|e| format!("--components {e}"))?;
    check(PcaBuilder::new().components(count))?;
    Ok(count)
}

pub(crate) fn parse_variance(s: &str) -> Result<f64, String> {
    let f: f64 = s
        .parse()
        .map_err(|_| format!("--variance {s} is not a number"))?;
    check(PcaBuilder::new().components(ComponentCount::VarianceFraction(f)))?;
    Ok(f)
}

pub(crate) fn parse_ddof(s: &str) -> Result<usize, String> {
    let ddof: usize = s
        .parse()
        .map_err(|_| format!("--ddof {s} is not allowed: use 0 or 1"))?;
    check(PcaBuilder::new().ddof(ddof))?;
    Ok(ddof)
}

fn parse_tolerance(s: &str) -> Result<f64, String> {
    let t: f64 = s
        .parse()
        .map_err(|_| format!("--tolerance {s} is not a number"))?;
    let options = IterativeOptions {
        tolerance: Some(t),
        ..Default::default()
    };
    check(PcaBuilder::new().iterative(options))?;
    Ok(t)
}

/// A validated `fit` request.
#[derive(Debug)]
pub struct FitConfig {
    inputs: Vec<PathBuf>,
    read: ReadOptions,
    params: PcaParams,
    output: PathBuf,
    explain: bool,
    memory_limit: u64,
    row_weights: Option<String>,
    /// The fit of a kind beyond PCA, when --model asks for one.
    kind: Option<KindFit>,
}

impl FitConfig {
    pub fn new(args: FitArgs) -> Result<Self> {
        let shared = match args.components {
            Some(ComponentCount::Fixed(components)) => Some(Shared {
                components,
                seed: args.iterative.seed,
                tolerance: args.iterative.tolerance,
                max_iterations: args
                    .iterative
                    .max_iterations
                    .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
                memory_limit: args.memory.bytes(),
            }),
            _ => None,
        };
        let usage = |message: String| usage_error::<FitArgs>("fit", message);
        let mut kind = KindFit::new(&args.kind, shared, usage)?;
        // Bayesian PCA fits missing values as PPCA does; no other kind beyond PCA has them.
        let missing_for_kind = args.kind.kind == principal::ModelKind::BayesianPca;
        if let Some(KindFit::BayesianPca(options)) = &mut kind {
            options.missing = args.missing.unwrap_or_default();
        } else if kind.is_some() && args.missing.is_some() {
            return Err(usage_error::<FitArgs>(
                "fit",
                format!(
                    "--missing em applies only to PCA and --model bayesian-pca, not to --model {}",
                    args.kind.kind
                ),
            )
            .into());
        }
        if kind.is_some() {
            let it = &args.iterative;
            crate::models::refuse_pca_flags::<FitArgs>(
                "fit",
                args.kind.kind,
                &[
                    ("--variance", args.variance.is_some()),
                    ("--standardize", args.standardize),
                    ("--whiten", args.whiten),
                    ("--solver", args.solver != Solver::Auto),
                    ("--missing", args.missing.is_some() && !missing_for_kind),
                    ("--explain", args.explain),
                    ("--precision", args.precision != Precision::Full),
                    ("--power-iterations", it.power_iterations.is_some()),
                    ("--ddof", args.ddof != 1),
                ],
            )?;
        }
        let components = match (args.components, args.variance) {
            (Some(ComponentCount::GavishDonoho { .. }), _) => ComponentCount::GavishDonoho {
                noise_sigma: args.noise_sigma,
            },
            (Some(ComponentCount::CrossValidated { .. }), _) => ComponentCount::CrossValidated {
                folds: args.folds.unwrap_or(ComponentCount::DEFAULT_FOLDS),
                seed: args.iterative.seed,
            },
            (Some(count), _) => count,
            (None, Some(f)) => ComponentCount::VarianceFraction(f),
            (None, None) => ComponentCount::All,
        };
        let misplaced = match components {
            ComponentCount::GavishDonoho { .. } => args.folds.map(|_| ("--folds", "cv")),
            ComponentCount::CrossValidated { .. } => {
                args.noise_sigma.map(|_| ("--noise-sigma", "gavish-donoho"))
            }
            _ => (args.noise_sigma.map(|_| ("--noise-sigma", "gavish-donoho")))
                .or(args.folds.map(|_| ("--folds", "cv"))),
        };
        if let Some((flag, rule)) = misplaced {
            return Err(usage_error::<FitArgs>(
                "fit",
                format!("{flag} applies only to --components {rule}"),
            )
            .into());
        }
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
            max_iterations: it
                .max_iterations
                .map_or(IterativeOptions::default().max_iterations, |n| {
                    usize::try_from(n).unwrap_or(usize::MAX)
                }),
            power_method: it.power_method,
            randomized_method: it.randomized_method,
        };
        let memory_limit = args.memory.bytes();
        let params = PcaBuilder::new()
            .components(components)
            .scaling(scaling)
            .ddof(args.ddof)
            .solver(args.solver)
            .iterative(iterative)
            .memory_limit(Some(memory_limit))
            .precision(args.precision)
            .missing(args.missing.unwrap_or_default())
            .centre(if args.no_centre {
                Centre::None
            } else {
                Centre::Mean
            })
            .whitening(if args.whiten {
                Whitening::UnitVariance
            } else {
                Whitening::None
            })
            .build()
            // The builder sees parameters only, no data: what it refuses is a combination of
            // flags (`--missing em --components mle`, `--solver svd --missing em`), exit 2.
            .map_err(|e| usage_error::<FitArgs>("fit", crate::flags::message(&e)))?;
        if args.row_weights.is_some() {
            let refused = match (params.solver(), params.components()) {
                (s @ (Solver::Randomized | Solver::Power | Solver::Em), _) => {
                    Some(format!("--solver {}", s.name()))
                }
                (_, ComponentCount::CrossValidated { .. }) => Some("--components cv".into()),
                _ => None,
            };
            if let Some(flag) = refused {
                return Err(usage_error::<FitArgs>(
                    "fit",
                    format!(
                        "--row-weights cannot be used with {flag}: weighted fits are exact \
                         (solver svd, gram, covariance or auto)"
                    ),
                )
                .into());
            }
        }
        let mut read = ReadOptions {
            missing: match params.missing() {
                MissingValues::Em => Missing::AsNan,
                _ => Missing::Reject,
            },
            ..Selection::new(args.select).read_options()
        };
        if let Some(column) = &args.row_weights {
            read.exclude.push(ColumnSelector::Name(column.clone()));
        }
        Ok(FitConfig {
            inputs: args.inputs,
            read,
            params,
            output: args.output,
            explain: args.explain,
            memory_limit,
            row_weights: args.row_weights,
            kind,
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
        // Missing values are fitted by em, whatever auto would pick for complete data.
        _ if config.params.missing() == MissingValues::Em => Solver::Em,
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
            if gz { len * 4 } else { len }
        })
        .sum()
}

pub fn run(config: &FitConfig, collective: &dyn Collective) -> Result<()> {
    if let Some(kind) = &config.kind {
        if config.row_weights.is_some() {
            return Err(anyhow::Error::from(usage_error::<FitArgs>(
                "fit",
                format!(
                    "--row-weights is for --model pca, not --model {}",
                    kind.kind()
                ),
            )));
        }
        if collective.size() > 1 {
            anyhow::bail!(
                "--model {} fits in one process only, not under MPI",
                kind.kind()
            );
        }
        let usage = |message: String| usage_error::<FitArgs>("fit", message);
        return kind.run(&config.inputs, &config.read, &config.output, usage);
    }
    if let Some(column) = &config.row_weights {
        if collective.size() > 1 {
            anyhow::bail!("--row-weights is fitted in one process: run it without mpirun or srun");
        }
        return run_weighted(config, column);
    }
    // A sparse input (MatrixMarket, 10x, an .h5ad file whose matrix is CSR or CSC) goes to
    // the sparse core; under MPI each process reads its own range of the rows.
    if let [input] = &config.inputs[..]
        && principal_io::is_sparse_input_with(input, &config.read)
    {
        return run_sparse(config, input, collective);
    }
    if collective.size() > 1 {
        return run_distributed(config, collective);
    }
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

    // Where a streamed fit's time went, for PRINCIPAL_TRACE: the passes, and the whole fit.
    let mut trace = None;
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
        let fitting = Instant::now();
        let model = config
            .params
            .fit_source(&mut source)
            .with_context(fit_error)?;
        source.finish();
        let passes = source.passes();
        let fit_time = fitting.elapsed();
        drop(source);
        trace = Some((files.pass_times(), fit_time));
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

    let writing = Instant::now();
    save_model(&config.output, &model, names.as_deref())?;
    if std::env::var_os("PRINCIPAL_TRACE").is_some() {
        text::stderr(&stage_times(&timing, trace, writing.elapsed()));
    }

    if model.scaling() == Scaling::Standardize && !model.zero_variance_features().is_empty() {
        text::stderr(&zero_variance_warning(&model, names.as_deref()));
    }
    let solver_plan = config.params.plan(model.n_samples(), model.n_features());
    if config.explain {
        text::stderr(&explanation(&solver_plan, &plan, config.memory_limit));
    }
    text::stderr(&summary(&model, config, &solver_plan.reason, &timing));
    Ok(())
}

/// `fit --row-weights COLUMN`: the data and its weights read into memory, fitted exactly.
fn run_weighted(config: &FitConfig, column: &str) -> Result<()> {
    let started = Instant::now();
    let table = read_table(&config.inputs, &config.read)?;
    let weights = read_table(
        &config.inputs,
        &ReadOptions {
            columns: Some(vec![ColumnSelector::Name(column.to_owned())]),
            ..ReadOptions::default()
        },
    )
    .with_context(|| format!("reading the row weights, column {column}"))?;
    let read_time = started.elapsed();
    let fitting = Instant::now();
    let x = table.data.into_f64();
    let weights = weights.data.into_f64();
    let model = config
        .params
        .fit_weighted(x.as_ref(), weights.as_slice())
        .with_context(|| {
            format!(
                "cannot fit {} weighted by column {column}",
                describe(&config.inputs)
            )
        })?;
    let timing = Timing::InMemory {
        read: read_time,
        fit: fitting.elapsed(),
    };
    let names = table.column_names;
    save_weighted_model(&config.output, &model, names.as_deref(), Some(column))?;
    if model.scaling() == Scaling::Standardize && !model.zero_variance_features().is_empty() {
        text::stderr(&zero_variance_warning(&model, names.as_deref()));
    }
    text::stderr(&summary(
        &model,
        config,
        &format!("rows weighted by column {column}: an exact SVD of the weighted rows"),
        &timing,
    ));
    Ok(())
}

/// `fit` over the ranks of an MPI job: every rank streams its part of the inputs (see
/// `principal_io::Part`), the ranks combine what they accumulated, and rank 0 writes the model
/// and prints the summary. An error on any rank (opening or reading its files, a bad value)
/// stops every rank with that rank's message.
fn run_distributed(config: &FitConfig, collective: &dyn Collective) -> Result<()> {
    let started = Instant::now();
    let part = Part {
        rank: collective.rank(),
        size: collective.size(),
    };
    let opened = ChunkReader::open_part(&config.inputs, &config.read, part);
    let fit_error = || format!("cannot fit {}", describe(&config.inputs));
    crate::processes::agree_opened(collective, &opened).with_context(fit_error)?;
    let reader = opened?;
    let d = reader.n_features();
    let names = reader.column_names().map(<[String]>::to_vec);
    let mut files = FileSource::from_reader(reader, budget::chunk_rows(d, config.memory_limit));
    let model = config
        .params
        .fit_distributed(&mut files, collective)
        .with_context(fit_error)?;
    if collective.rank() != 0 {
        return Ok(());
    }
    save_model(&config.output, &model, names.as_deref())?;
    if model.scaling() == Scaling::Standardize && !model.zero_variance_features().is_empty() {
        text::stderr(&zero_variance_warning(&model, names.as_deref()));
    }
    let processes = collective.size();
    let solver_plan = config
        .params
        .plan_across(model.n_samples(), model.n_features(), processes);
    if config.explain {
        let reading = ReadingPlan {
            streaming: true,
            why: format!("each of {processes} MPI processes streams its part of the inputs"),
        };
        text::stderr(&explanation(&solver_plan, &reading, config.memory_limit));
    }
    let timing = Timing::Distributed {
        total: started.elapsed(),
        processes,
    };
    text::stderr(&summary(&model, config, &solver_plan.reason, &timing));
    Ok(())
}

/// `fit` of a sparse input (a MatrixMarket file, a 10x directory or an `.h5ad` file with a
/// CSR or CSC matrix), never densified: its rows are held as CSR arrays or streamed from the
/// file (see `principal_io::SparseFile`).
/// Under MPI, each process opens its own range of the rows (`SparseFile::open_part`) and the
/// ranks fit them together (`fit_sparse_distributed`); rank 0 writes the model.
fn run_sparse(
    config: &FitConfig,
    input: &std::path::Path,
    collective: &dyn Collective,
) -> Result<()> {
    // The MatrixMarket readers take every column: a selection must not be ignored in silence
    // (an .h5ad file's reader selects).
    if principal_io::is_sparse_input(input)
        && (config.read.columns.is_some() || !config.read.exclude.is_empty())
    {
        return Err(anyhow::Error::from(usage_error::<FitArgs>(
            "fit",
            format!(
                "--columns and --exclude are not supported with sparse inputs yet ({}): select \
                 the genes with --mask-var in an .h5ad file, or write the selected columns",
                input.display()
            ),
        )));
    }
    let started = Instant::now();
    let fit_error = || format!("cannot fit {}", input.display());
    let processes = collective.size();
    let mut file = if processes > 1 {
        let opened = principal_io::SparseFile::open_part(
            input,
            &config.read,
            config.memory_limit,
            collective.rank(),
            processes,
        )
        .and_then(|mut part| part.hold_within(config.memory_limit).map(|()| part));
        crate::processes::agree_opened(collective, &opened).with_context(fit_error)?;
        opened?
    } else {
        let mut file =
            principal_io::SparseFile::open_with(input, &config.read, config.memory_limit)?;
        file.hold_within(config.memory_limit)?;
        file
    };
    // A file held in memory was read here, before the fit.
    let read = started.elapsed();
    let names = file.feature_names().map(<[String]>::to_vec);
    let mut counted = PassCounter {
        source: &mut file,
        passes: 0,
    };
    let model = config
        .params
        .fit_sparse_distributed(&mut counted, collective)
        .with_context(fit_error)?;
    let passes = counted.passes;
    if collective.rank() != 0 {
        return Ok(());
    }
    save_model(&config.output, &model, names.as_deref())?;
    if model.scaling() == Scaling::Standardize && !model.zero_variance_features().is_empty() {
        text::stderr(&zero_variance_warning(&model, names.as_deref()));
    }
    let solver_plan = config.params.plan_sparse(
        model.n_samples(),
        model.n_features(),
        file.declared_entries(),
    );
    if config.explain {
        let reading = ReadingPlan {
            streaming: file.is_streamed(),
            why: if processes > 1 {
                format!(
                    "each of {processes} MPI processes reads its range of the rows; {}",
                    file.reading()
                )
            } else {
                file.reading()
            },
        };
        text::stderr(&explanation(&solver_plan, &reading, config.memory_limit));
    }
    let timing = if processes > 1 {
        Timing::Distributed {
            total: started.elapsed(),
            processes,
        }
    } else if file.is_streamed() {
        Timing::Streamed {
            total: started.elapsed(),
            passes,
        }
    } else {
        Timing::InMemory {
            read,
            fit: started.elapsed() - read,
        }
    };
    text::stderr(&summary(&model, config, &solver_plan.reason, &timing));
    Ok(())
}

/// A sparse source that counts its passes (for the summary).
struct PassCounter<'a> {
    source: &'a mut dyn principal::sparse::SparseSource,
    passes: usize,
}

impl principal::sparse::SparseSource for PassCounter<'_> {
    fn n_features(&self) -> usize {
        self.source.n_features()
    }

    fn pass(
        &mut self,
        visit: &mut dyn FnMut(principal::sparse::CsrChunk<'_>) -> principal::Result<()>,
    ) -> principal::Result<()> {
        self.passes += 1;
        self.source.pass(visit)
    }
}

/// How long the work took.
enum Timing {
    Distributed {
        total: std::time::Duration,
        processes: usize,
    },
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
    let _ = match principal::byte_kernel() {
        Some(kernel) => writeln!(s, "byte-valued data (≤ 256 values a feature): {kernel}"),
        None => writeln!(
            s,
            "byte-valued data (≤ 256 values a feature): exact f32 products (no exact byte \
             kernel on this CPU, or PRINCIPAL_BYTE_KERNEL=none)"
        ),
    };
    if let Some(cap) = cpu_cap_note() {
        let _ = writeln!(s, "{cap}");
    }
    s
}

/// `--explain`'s line on `PRINCIPAL_CPU`, where it caps our kernels.
fn cpu_cap_note() -> Option<String> {
    match principal::cpu_limit() {
        principal::CpuLimit::Native => None,
        cap => Some(format!(
            "instructions: principal's own kernels capped at {} by PRINCIPAL_CPU={cap} \
             (faer's matrix products choose their own)",
            cap.to_string().to_uppercase()
        )),
    }
}

fn zero_variance_warning(model: &PcaModel, names: Option<&[String]>) -> String {
    let zero = model.zero_variance_features();
    let listed: Vec<String> = zero.iter().map(|&j| text::feature_name(names, j)).collect();
    let place = if names.is_some() {
        ""
    } else {
        " (counting the used columns from 0)"
    };
    format!(
        "warning: {} feature(s) have zero variance and keep scale 1 when standardizing{place}: {}\n",
        zero.len(),
        text::abbreviate(&listed, 20)
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
    if let Some(report) = model.missing_values() {
        s.push_str(&missing_summary(&report));
    } else if requested == model.solver() {
        let _ = writeln!(s, "solver: {}", model.solver());
    } else {
        let _ = writeln!(
            s,
            "solver: {} (chosen by {requested}: {why})",
            model.solver()
        );
    }
    if let Some(route) = model.eigen_route() {
        let _ = writeln!(s, "eigensolver: {route}");
    }
    if let Some(choice) = model.component_choice() {
        let _ = writeln!(s, "components: {choice}");
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
    if let Some(kernel) = principal::byte_kernel_ran() {
        let cap = match principal::cpu_limit() {
            principal::CpuLimit::Native => String::new(),
            cap => format!(" (PRINCIPAL_CPU={cap})"),
        };
        let _ = writeln!(s, "products: {kernel}{cap}");
    }
    let peak = budget::peak_memory_note();
    match timing {
        Timing::InMemory { read, fit } => {
            let _ = writeln!(
                s,
                "time: {} reading, {} fitting{peak}",
                text::duration(*read),
                text::duration(*fit)
            );
        }
        Timing::Distributed { total, processes } => {
            let _ = writeln!(
                s,
                "time: {} reading and fitting over {processes} MPI processes (rank 0's figures){peak}",
                text::duration(*total)
            );
        }
        Timing::Streamed { total, passes } => {
            let _ = writeln!(
                s,
                "time: {} reading and fitting, streamed in {passes} pass(es){peak}",
                text::duration(*total)
            );
        }
    }
    let _ = writeln!(s, "model written to {}", show(&config.output));
    s
}

/// `PRINCIPAL_TRACE`'s line: where the time of a fit went, by stage. Streamed: the reading
/// thread's time (reading, inflating, decoding), the solver's time on the chunks (products),
/// its waits for data, and the fit's time after the passes (eigensolver, model); then writing.
fn stage_times(
    timing: &Timing,
    streamed: Option<(principal_io::PassTimes, std::time::Duration)>,
    write: std::time::Duration,
) -> String {
    let s = |d: std::time::Duration| format!("{:.3} s", d.as_secs_f64());
    let stages = match (timing, streamed) {
        // Read by position: no reading thread; the solver's threads read their own pieces.
        (_, Some((pass, fit))) if pass.by_position == pass.passes => format!(
            "{} pass(es) read by position in {} piece(s) in {}: reads (pread, summed over the \
             threads) {}, reads and products {}; after the passes (eigensolver, model) {}",
            pass.passes,
            pass.chunks,
            s(pass.total),
            s(pass.reading),
            s(pass.visiting),
            s(fit.saturating_sub(pass.total)),
        ),
        (_, Some((pass, fit))) => format!(
            "{} pass(es) of {} chunk(s) in {}: reading thread (read, inflate, decode) {}{}, \
             products {}, waiting for data {}; after the passes (eigensolver, model) {}",
            pass.passes,
            pass.chunks,
            s(pass.total),
            s(pass.reading),
            pass.reading_cpu
                .map_or(String::new(), |cpu| format!(" ({} CPU)", s(cpu))),
            s(pass.visiting),
            s(pass.waiting),
            s(fit.saturating_sub(pass.total)),
        ),
        (Timing::InMemory { read, fit }, None) => {
            format!("read into memory {}, fit {}", s(*read), s(*fit))
        }
        (Timing::Streamed { total, .. } | Timing::Distributed { total, .. }, None) => {
            format!("read and fit {}", s(*total))
        }
    };
    format!("trace: {stages}; writing the model {}\n", s(write))
}

/// The lines of a fit with missing values: how many, and how EM went.
fn missing_summary(report: &principal::MissingValueReport) -> String {
    let total = report.observed + report.missing;
    let mut s = format!(
        "missing values: {} of {} ({})",
        report.missing,
        total,
        percent(report.missing as f64 / total.max(1) as f64)
    );
    if report.empty_rows > 0 {
        let _ = write!(
            s,
            "; {} row(s) with no observed value left out",
            report.empty_rows
        );
    }
    let shown = |v: Option<f64>| v.map_or("unknown".to_string(), |v| format!("{v:.2e}"));
    let _ = writeln!(
        s,
        "\nsolver: em on the observed values: {} passes, log-likelihood {:.6} per row, last \
         change {}, error estimate {}{}",
        report.iterations,
        report.log_likelihood,
        shown(report.change),
        shown(report.error_estimate),
        if report.converged {
            ""
        } else {
            " (tolerance NOT reached)"
        }
    );
    s
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::cli::{Cli, Command};

    fn fit_args(extra: &[&str]) -> super::FitArgs {
        let mut words = vec!["principal", "fit", "x.csv", "-o", "m"];
        words.extend_from_slice(extra);
        match Cli::try_parse_from(words).unwrap().command {
            Command::Fit(fit) => fit,
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn every_solver_name_parses() {
        for name in principal::Solver::NAMES {
            assert_eq!(fit_args(&["--solver", name]).solver.name(), *name);
        }
    }

    #[test]
    fn components_parse_to_the_library_count() {
        use principal::ComponentCount;
        let parsed = |v: &str| fit_args(&["--components", v]).components;
        assert_eq!(parsed("3"), Some(ComponentCount::Fixed(3)));
        assert_eq!(parsed("mle"), Some(ComponentCount::Mle));
        assert_eq!(
            parsed("gavish-donoho"),
            Some(ComponentCount::GavishDonoho { noise_sigma: None })
        );
        assert!(matches!(
            parsed("cv"),
            Some(ComponentCount::CrossValidated { .. })
        ));
        let words = [
            "principal",
            "fit",
            "x.csv",
            "-o",
            "m",
            "--components",
            "many",
        ];
        let err = Cli::try_parse_from(words).unwrap_err();
        assert_eq!(err.kind(), clap::error::ErrorKind::ValueValidation);
    }

    #[test]
    fn method_and_precision_flags_parse_to_the_library_enums() {
        let args = fit_args(&[
            "--precision",
            "mixed",
            "--randomized-method",
            "subspace",
            "--power-method",
            "deflation",
        ]);
        assert_eq!(args.precision, principal::Precision::Mixed);
        assert_eq!(
            args.iterative.randomized_method,
            principal::RandomizedMethod::Subspace
        );
        assert_eq!(
            args.iterative.power_method,
            principal::PowerMethod::Deflation
        );
        for (flag, bad) in [
            ("--precision", "half"),
            ("--randomized-method", "lanczos"),
            ("--power-method", "inverse"),
        ] {
            let words = ["principal", "fit", "x.csv", "-o", "m", flag, bad];
            let err = Cli::try_parse_from(words).unwrap_err();
            assert_eq!(
                err.kind(),
                clap::error::ErrorKind::InvalidValue,
                "{flag} {bad}"
            );
        }
    }
}
