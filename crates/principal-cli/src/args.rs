//! The raw command line, as clap parses it. Values that can be checked without data are checked
//! here (by the library's own validation, so the messages are the library's) and rejected as
//! usage errors (exit 2); everything else is checked when the configuration is built.

use std::path::PathBuf;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand};
use principal::{ComponentCount, PcaBuilder, Solver};
use principal_io::ColumnSelector;

/// Principal component analysis of tabular data: fit a model, project data onto it,
/// reconstruct data from codes, and inspect a model file.
#[derive(Debug, Parser)]
#[command(
    name = "principal",
    version,
    propagate_version = true,
    arg_required_else_help = true
)]
#[command(after_help = "Exit codes: 0 success, 1 runtime or data error, 2 usage error.")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Fit a PCA model to the rows of INPUT (one sample per row) and save it to MODEL.
    ///
    /// Several inputs are shards of one data set, read in order. Without --components or
    /// --variance every component is kept (min(n_samples, n_features) of them).
    Fit(FitArgs),
    /// Project data onto a model's components: z = ((x − mean) / scale) · componentsᵀ.
    ///
    /// When the model knows its feature names and the input has a header, the model's columns
    /// are picked from the input by name (unless --columns or --exclude is given).
    Transform(TransformArgs),
    /// Reconstruct data from codes: x = (z · components) · scale + mean.
    Inverse(InverseArgs),
    /// Describe a model file: shape, settings and the variance explained by each component.
    Inspect(InspectArgs),
}

/// Which columns of a table to use.
#[derive(Debug, Args)]
pub struct SelectArgs {
    /// Use only these columns, in this order: names from the header, or 0-based indices.
    #[arg(long, value_name = "A,B,..", value_delimiter = ',', num_args = 1)]
    pub columns: Option<Vec<ColumnSelector>>,
    /// Leave out these columns: names from the header, or 0-based indices.
    #[arg(long, value_name = "A,B,..", value_delimiter = ',', num_args = 1)]
    pub exclude: Vec<ColumnSelector>,
    /// The first row of a CSV/TSV file is data, not column names (default: detected).
    #[arg(long)]
    pub no_header: bool,
    /// Read rows from one list/fixed-size-list column of embeddings (Parquet/Arrow)
    #[arg(long, value_name = "NAME")]
    pub column: Option<String>,
}

#[derive(Debug, Args)]
pub struct FitArgs {
    /// Data files: CSV or TSV (optionally .gz), NPY, IDX (optionally .gz), Parquet or Arrow IPC;
    /// a directory (its data files, sorted) or a quoted glob pattern such as 'parts/*.parquet'.
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,
    /// Keep K components (1 ≤ K ≤ min(n_samples, n_features)).
    #[arg(short = 'k', long, value_name = "K", value_parser = parse_components, conflicts_with = "variance", allow_negative_numbers = true)]
    pub components: Option<usize>,
    /// Keep the fewest components that explain at least this fraction F of the variance (0 < F ≤ 1).
    #[arg(long, value_name = "F", value_parser = parse_variance, allow_negative_numbers = true)]
    pub variance: Option<f64>,
    /// Divide each centred feature by its standard deviation (PCA of the correlation matrix).
    #[arg(long)]
    pub standardize: bool,
    /// Delta degrees of freedom: covariance = Xcᵀ Xc / (N − ddof).
    #[arg(long, value_name = "0|1", default_value = "1", value_parser = parse_ddof, allow_negative_numbers = true)]
    pub ddof: usize,
    /// The algorithm; auto picks by shape and reports why.
    #[arg(long, value_name = "SOLVER", default_value = "auto", value_parser = solver_parser())]
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
    #[arg(long, value_name = "full|mixed", default_value = "full", value_parser = ["full", "mixed"])]
    pub precision: String,
    /// Print how the solver and the reading mode were chosen: every solver's estimated
    /// multiply-adds and memory.
    #[arg(long)]
    pub explain: bool,
    /// Working-memory budget, e.g. 300M, 2G, 512MiB (default: half of the machine's memory).
    /// Data larger than the budget is streamed from the files, never held in memory.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub memory_limit: Option<u64>,
}

/// Settings of the randomized, power and em solvers.
#[derive(Debug, Args)]
pub struct IterativeArgs {
    /// Seed of the random start (randomized, power, em): the same seed gives the same model.
    #[arg(long, value_name = "S", default_value_t = 0)]
    pub seed: u64,
    /// Iterate until the a-posteriori error estimate max‖S b − λ b‖/λ₁ is at most T (0 < T < 1).
    #[arg(long, value_name = "T", value_parser = parse_tolerance)]
    pub tolerance: Option<f64>,
    /// Passes beyond the first of the randomized solver (default: krylov 3 when K < 0.1·min(N, D),
    /// else 2; subspace 7, else 4).
    #[arg(long, value_name = "Q")]
    pub power_iterations: Option<usize>,
    /// Extra random columns of the randomized solver.
    #[arg(long, value_name = "P", default_value_t = 10)]
    pub oversampling: usize,
    /// Upper bound on passes when iterating to a tolerance.
    #[arg(long, value_name = "N", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_iterations: u64,
    /// How the randomized solver iterates: block Krylov (Rayleigh–Ritz on every pass's block
    /// together; more accurate per pass) or subspace (on the last block, as scikit-learn).
    #[arg(long, value_name = "METHOD", default_value = "krylov", value_parser = ["krylov", "subspace"])]
    pub randomized_method: String,
    /// How the power solver finds several components.
    #[arg(long, value_name = "METHOD", default_value = "block", value_parser = ["block", "deflation"])]
    pub power_method: String,
}

#[derive(Debug, Args)]
pub struct TransformArgs {
    /// A model written by `principal fit`.
    #[arg(value_name = "MODEL")]
    pub model: PathBuf,
    /// Data files, as for `fit`.
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,
    /// Where to write the codes: .csv, .tsv, .npy or .parquet (columns named pc1..pcM).
    #[arg(short, long, value_name = "CODES")]
    pub output: PathBuf,
    #[command(flatten)]
    pub select: SelectArgs,
    /// Working-memory budget, e.g. 300M, 2G (default: half of the machine's memory). The
    /// input is streamed in chunks of about a sixteenth of it, at most 32 MiB.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub memory_limit: Option<u64>,
}

#[derive(Debug, Args)]
pub struct InverseArgs {
    /// A model written by `principal fit`.
    #[arg(value_name = "MODEL")]
    pub model: PathBuf,
    /// Codes: CSV/TSV (with or without a header) or NPY, one column per component.
    #[arg(value_name = "CODES")]
    pub codes: PathBuf,
    /// Where to write the reconstruction: .csv, .tsv, .npy or .parquet.
    #[arg(short, long, value_name = "RECONSTRUCTED")]
    pub output: PathBuf,
    /// Working-memory budget, e.g. 300M, 2G (default: half of the machine's memory). The
    /// input is streamed in chunks of about a sixteenth of it, at most 32 MiB.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub memory_limit: Option<u64>,
}

#[derive(Debug, Args)]
pub struct InspectArgs {
    /// A model written by `principal fit`.
    #[arg(value_name = "MODEL")]
    pub model: PathBuf,
    /// Print one JSON object with every field of the model instead of a table.
    #[arg(long)]
    pub json: bool,
}

fn parse_components(s: &str) -> Result<usize, String> {
    let k: usize = s
        .parse()
        .map_err(|_| format!("--components {s} is not a whole number"))?;
    PcaBuilder::new()
        .components(ComponentCount::Fixed(k))
        .build()
        .map_err(|e| crate::flags::message(&e))?;
    Ok(k)
}

fn parse_variance(s: &str) -> Result<f64, String> {
    let f: f64 = s
        .parse()
        .map_err(|_| format!("--variance {s} is not a number"))?;
    PcaBuilder::new()
        .components(ComponentCount::VarianceFraction(f))
        .build()
        .map_err(|e| crate::flags::message(&e))?;
    Ok(f)
}

fn parse_ddof(s: &str) -> Result<usize, String> {
    let ddof: usize = s
        .parse()
        .map_err(|_| format!("--ddof {s} is not allowed: use 0 or 1"))?;
    PcaBuilder::new()
        .ddof(ddof)
        .build()
        .map_err(|e| crate::flags::message(&e))?;
    Ok(ddof)
}

fn parse_tolerance(s: &str) -> Result<f64, String> {
    let t: f64 = s
        .parse()
        .map_err(|_| format!("--tolerance {s} is not a number"))?;
    let options = principal::IterativeOptions {
        tolerance: Some(t),
        ..Default::default()
    };
    PcaBuilder::new()
        .iterative(options)
        .build()
        .map_err(|e| crate::flags::message(&e))?;
    Ok(t)
}

/// A size in bytes: a number with an optional unit K, M, G, T (powers of 1000) or KiB, MiB,
/// GiB, TiB (powers of 1024); a trailing B is optional.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("--memory-limit {s:?} is not a size such as 300M or 2GiB"))?;
    let factor = match unit.trim().to_ascii_lowercase().trim_end_matches('b') {
        "" => 1.0,
        "k" => 1e3,
        "m" => 1e6,
        "g" => 1e9,
        "t" => 1e12,
        "ki" => 1024.0,
        "mi" => 1024.0 * 1024.0,
        "gi" => 1024.0 * 1024.0 * 1024.0,
        "ti" => 1024.0f64.powi(4),
        _ => {
            return Err(format!(
                "--memory-limit {s:?}: unknown unit {unit:?}; use K, M, G, T, KiB, MiB, GiB or TiB"
            ))
        }
    };
    let bytes = value * factor;
    if bytes.is_nan() || bytes < 1e6 {
        return Err(format!("--memory-limit {s:?} is below the minimum of 1M"));
    }
    Ok(bytes as u64)
}

fn solver_parser() -> impl TypedValueParser<Value = Solver> {
    PossibleValuesParser::new(Solver::NAMES).try_map(|s| s.parse::<Solver>())
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn command_line_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn sizes_parse_with_decimal_and_binary_units() {
        assert_eq!(parse_size("300M"), Ok(300_000_000));
        assert_eq!(parse_size("2GiB"), Ok(2 * 1024 * 1024 * 1024));
        assert_eq!(parse_size("1.5g"), Ok(1_500_000_000));
        assert_eq!(parse_size("5000000"), Ok(5_000_000));
        assert!(parse_size("12 parsecs")
            .unwrap_err()
            .contains("unknown unit"));
        assert!(parse_size("10K").unwrap_err().contains("minimum"));
        assert!(parse_size("lots").is_err());
    }

    #[test]
    fn every_solver_name_parses() {
        for name in Solver::NAMES {
            let cli =
                Cli::try_parse_from(["principal", "fit", "x.csv", "-o", "m", "--solver", name])
                    .unwrap();
            let Command::Fit(fit) = cli.command else {
                panic!("not fit")
            };
            assert_eq!(fit.solver.name(), *name);
        }
    }
}
