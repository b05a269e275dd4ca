//! The command line as clap parses it: the commands, and the argument groups and value parsers
//! that several commands share. Each command's own arguments live with the command, in
//! `command/<name>.rs`. Values that can be checked without data are checked while parsing (by
//! the library's own validation, so the messages are the library's) and rejected as usage
//! errors (exit 2); everything else is checked when a command builds its configuration.

use std::str::FromStr;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand};
use principal_io::ColumnSelector;

use crate::command::{
    choose, classify, fit, impute, inspect, inverse, merge, report, sample, score, stats, transform,
};

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

/// One variant per command; its arguments are defined in `command/<name>.rs`.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Fit a PCA model to the rows of INPUT (one sample per row) and save it to MODEL.
    ///
    /// Several inputs are shards of one data set, read in order. Without --components or
    /// --variance every component is kept (min(n_samples, n_features) of them).
    Fit(fit::FitArgs),
    /// Project data onto a model's components: z = ((x − mean) / scale) · componentsᵀ.
    ///
    /// When the model knows its feature names and the input has a header, the model's columns
    /// are picked from the input by name (unless --columns or --exclude is given).
    Transform(transform::TransformArgs),
    /// Reconstruct data from codes: x = (z · components) · scale + mean.
    Inverse(inverse::InverseArgs),
    /// Describe a model file: shape, settings and the variance explained by each component.
    Inspect(inspect::InspectArgs),
    /// Write the mergeable statistics of INPUT (count, mean, centred cross-products) to PART.
    ///
    /// Parts computed anywhere (array jobs, tasks, a loop) combine with `principal merge` into
    /// the model one pass over all the data would give.
    Stats(stats::StatsArgs),
    /// Combine statistics files written by `principal stats` into a model saved to MODEL.
    Merge(merge::MergeArgs),
    /// The log-likelihood of each row under the model as probabilistic PCA (mean on stderr).
    Score(score::ScoreArgs),
    /// Generate data from the model as probabilistic PCA: seeded samples, or the points of
    /// given latent coordinates.
    Sample(sample::SampleArgs),
    /// Fill the missing values (NaN, empty CSV cells) of data with their conditional means
    /// given each row's observed values.
    Impute(impute::ImputeArgs),
    /// Draw a model's figures (PNG and SVG) and an index.html showing them with its summary:
    /// scree plot, spectrum; with --data, the 2-D map, pairs grid and reconstruction error;
    /// with --image-shape, components as images, reconstructions and generated images.
    Report(report::ReportArgs),
    /// Recognise test samples by their nearest training codes (eigenfaces): fit on the training
    /// set, project both sets, and report the accuracy for each K and a confusion matrix.
    Classify(classify::ClassifyArgs),
    /// How many components: every criterion's number (variance fractions, Kaiser, broken stick,
    /// parallel analysis, mle, Gavish–Donoho, cross-validation) and the curve it came from.
    ///
    /// One exact fit gives every criterion but two: parallel analysis adds the eigenvalues of
    /// --permutations permuted copies of the data, cross-validation one fit per fold.
    Choose(choose::ChooseArgs),
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

/// The working-memory budget of a command that reads data.
#[derive(Debug, Args)]
pub struct MemoryArgs {
    /// Working-memory budget, e.g. 300M, 2G, 512MiB (default: half of the machine's memory).
    /// Data larger than the budget is streamed from the files in chunks of about a sixteenth
    /// of it (at most 32 MiB), never held in memory.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub memory_limit: Option<u64>,
}

impl MemoryArgs {
    /// The budget in bytes: the one given, or half of the machine's memory.
    pub fn bytes(&self) -> u64 {
        self.memory_limit
            .unwrap_or_else(crate::budget::default_memory_limit)
    }
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

/// A usage error found after parsing (a combination of flags clap cannot express): clap's own
/// error, which `main` prints with the usage and exits 2.
pub fn usage_error(command: &str, message: String) -> clap::Error {
    use clap::CommandFactory;
    let mut cli = Cli::command();
    let mut sub = cli.find_subcommand_mut(command).cloned().unwrap_or(cli);
    sub.error(clap::error::ErrorKind::ArgumentConflict, message)
}

/// The library's own check of one parameter, its message naming the flag.
pub fn check(builder: principal::PcaBuilder) -> Result<(), String> {
    builder
        .build()
        .map(drop)
        .map_err(|e| crate::flags::message(&e))
}

/// `--noise-sigma`: the noise's standard deviation per entry (a positive number), checked by
/// the library.
pub fn parse_noise_sigma(s: &str) -> Result<f64, String> {
    let sigma: f64 = s
        .parse()
        .map_err(|_| format!("--noise-sigma {s} is not a number"))?;
    let count = principal::ComponentCount::GavishDonoho {
        noise_sigma: Some(sigma),
    };
    check(principal::PcaBuilder::new().components(count))?;
    Ok(sigma)
}

/// `--folds`: the folds of cross-validation (at least 2), checked by the library.
pub fn parse_folds(s: &str) -> Result<usize, String> {
    let folds: usize = s
        .parse()
        .map_err(|_| format!("--folds {s} is not a whole number"))?;
    let count = principal::ComponentCount::CrossValidated { folds, seed: 0 };
    check(principal::PcaBuilder::new().components(count))?;
    Ok(folds)
}

/// A parser for one of the library's option enums: clap lists `names` in `--help` and in its
/// error for any other value, and the enum's own `FromStr` makes the value. No string reaches
/// the commands.
pub fn one_of<T>(names: &'static [&'static str]) -> impl TypedValueParser<Value = T>
where
    T: FromStr<Err = String> + Clone + Send + Sync + 'static,
{
    PossibleValuesParser::new(names).try_map(|s| s.parse::<T>())
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
}
