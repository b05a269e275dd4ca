//! The argument groups and value parsers that several commands share, and the usage error a
//! command raises after parsing. Values that can be checked without data are checked while
//! parsing (by the library's own validation, so the messages are the library's) and rejected as
//! usage errors (exit 2); everything else is checked when a command builds its configuration.

use std::str::FromStr;

use clap::Args;
use clap::builder::{PossibleValuesParser, TypedValueParser};
use principal_io::ColumnSelector;

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
    /// AnnData .h5ad: read the layer layers/NAME instead of X.
    #[arg(long, value_name = "NAME")]
    pub layer: Option<String>,
    /// AnnData .h5ad: keep the genes whose boolean var column COLUMN is true (as scanpy's
    /// mask_var='highly_variable'); the model's features are then these genes.
    #[arg(long, value_name = "COLUMN")]
    pub mask_var: Option<String>,
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
            ));
        }
    };
    let bytes = value * factor;
    if bytes.is_nan() || bytes < 1e6 {
        return Err(format!("--memory-limit {s:?} is below the minimum of 1M"));
    }
    Ok(bytes as u64)
}

/// A usage error found after parsing (a combination of flags clap cannot express): clap's own
/// error, with the usage of `command` (whose arguments are `A`), which `main` prints and exits
/// 2. The command is built from its own arguments rather than from the command line's enum,
/// which sits above the commands.
pub fn usage_error<A: Args>(command: &'static str, message: String) -> clap::Error {
    let mut sub = A::augment_args(clap::Command::new(command));
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
    use super::*;

    #[test]
    fn sizes_parse_with_decimal_and_binary_units() {
        assert_eq!(parse_size("300M"), Ok(300_000_000));
        assert_eq!(parse_size("2GiB"), Ok(2 * 1024 * 1024 * 1024));
        assert_eq!(parse_size("1.5g"), Ok(1_500_000_000));
        assert_eq!(parse_size("5000000"), Ok(5_000_000));
        assert!(
            parse_size("12 parsecs")
                .unwrap_err()
                .contains("unknown unit")
        );
        assert!(parse_size("10K").unwrap_err().contains("minimum"));
        assert!(parse_size("lots").is_err());
    }
}
