//! `principal`: the command-line front end of the principal PCA library.
//!
//! Glue only, as in ripgrep: `main` → [`run`] → one module per command ([`command`]), each
//! turning its raw arguments into a validated configuration before any file is read, then
//! running it. [`cli`] holds the command enum, above the commands; [`args`] the argument groups
//! and value parsers they share, below them. The math is in `principal`, files in
//! `principal-io`. Imports flow one way, downwards (`tests/layering.rs`).
//!
//! Exit codes: 0 success, 1 runtime or data error, 2 usage error. Errors are printed once, as
//! `error: <cause chain joined by ": ">`. A closed stdout pipe ends the program quietly.

mod args;
mod budget;
mod cli;
mod command;
mod flags;
mod interpretation;
mod models;
#[cfg(feature = "mpi")]
mod mpi;
mod processes;
mod progress;
mod select;
mod stream;
mod text;
mod units;

use std::io::{self, Write};
use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command};
use crate::command::{
    align, choose, classify, describe, fit, impute, inspect, inverse, merge, report, sample, score,
    stats, transform,
};
use crate::processes::Processes;

/// The system allocator, with huge pages asked for on blocks of 4 MiB and more: a fresh page
/// fault every 4 KiB of the matrices and chunks was up to a sixth of a run (bench/results.md).
#[global_allocator]
static ALLOCATOR: principal_amx::HugePages = principal_amx::HugePages;

fn main() -> ExitCode {
    // The same bits on any number of threads, also where no fit runs (inspect, align…).
    principal::fix_faer_split();
    // A panic is a bug; say so in one line instead of Rust's message and backtrace hint. Not
    // the panics of the Arrow and Parquet decoders on a damaged file: principal-io contains
    // them and reports an error naming the file.
    std::panic::set_hook(Box::new(|info| {
        if principal_io::panic_is_contained() {
            return;
        }
        let _ = writeln!(
            io::stderr(),
            "error: internal error (a bug in principal; please report it): {info}"
        );
    }));
    // A file size limit (`ulimit -f`) hit while writing: an error (EFBIG) that removes the
    // temporary file and keeps the old output, rather than SIGXFSZ ending the process. Caught
    // (the flag is not read), as ignoring a signal is not possible without unsafe code here.
    let _ = signal_hook::flag::register(
        signal_hook::consts::SIGXFSZ,
        std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)),
    );
    // faer's idle workers sleep at once instead of spinning up to 65,536 pauses (spindle's
    // default): on a quiet 2-core machine as fast, on a busy one a spinning thread took the core
    // its partner needed (GUIDE.md, "Threads that wait"). PRINCIPAL_SPIN_LIMIT sets another.
    let spin_limit = match std::env::var_os("PRINCIPAL_SPIN_LIMIT") {
        None => 0,
        Some(value) => match value.to_str().and_then(|v| v.parse::<u32>().ok()) {
            Some(limit) => limit,
            None => {
                print_error(&format!(
                    "PRINCIPAL_SPIN_LIMIT must be a whole number of pauses (0 to 4294967295), \
                     not {value:?}"
                ));
                return ExitCode::from(2);
            }
        },
    };
    spindle::SPIN_LIMIT.store(spin_limit, std::sync::atomic::Ordering::Relaxed);
    // PRINCIPAL_CPU caps our own kernels' instructions (GUIDE.md, "PRINCIPAL_CPU"); the library
    // reads an unknown value as no cap, the tool refuses it before any work starts.
    if let Err(message) = principal::cpu_limit_setting() {
        print_error(&message);
        return ExitCode::from(2);
    }
    // Under mpirun (feature `mpi`) every rank runs this; only rank 0 prints an error (every
    // rank has the failing rank's message) and every rank exits 1. Before the exit status is
    // known the processes are dropped, which finalizes MPI.
    let processes = match Processes::start() {
        Ok(processes) => processes,
        Err(message) => {
            if let Some(message) = message {
                print_error(&message);
            }
            return ExitCode::from(1);
        }
    };
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(&processes)));
    // Rank 0 writes the error before MPI is finalized: once finalized, the other ranks exit 1
    // and mpirun ends the job, which could kill rank 0 before its line was written.
    if let Ok(Err(err)) = &outcome
        && processes.is_root()
        && !is_broken_pipe(err)
        && !err.is::<clap::Error>()
    {
        print_error(&error_chain(err));
    }
    drop(processes);
    match outcome {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(err)) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        // A usage error found while validating: clap prints it with the usage, exit 2.
        Ok(Err(err)) if err.is::<clap::Error>() => match err.downcast::<clap::Error>() {
            Ok(usage) => usage.exit(),
            Err(_) => ExitCode::from(2),
        },
        Ok(Err(_)) | Err(_) => ExitCode::from(1),
    }
}

/// Prints `error: MESSAGE` on stderr in one write: under mpirun or srun, output forwarded from
/// other processes could otherwise land inside the line.
fn print_error(message: &str) {
    let _ = io::stderr().write_all(format!("error: {message}\n").as_bytes());
}

/// Parses the command line (usage errors exit 2 here), validates it, and runs one command.
fn run(processes: &Processes) -> anyhow::Result<()> {
    let cli = Cli::try_parse().unwrap_or_else(|err| err.exit());
    let collective = processes.collective();
    match cli.command {
        Command::Fit(args) => fit::run(&fit::FitConfig::new(args)?, collective),
        Command::Transform(args) => {
            transform::run(&transform::TransformConfig::new(args), collective)
        }
        Command::Inverse(args) => {
            processes.one_only("inverse")?;
            inverse::run(&inverse::InverseConfig::new(args))
        }
        Command::Inspect(args) => {
            processes.one_only("inspect")?;
            inspect::run(&inspect::InspectConfig::new(args))
        }
        Command::Stats(args) => {
            processes.one_only("stats")?;
            stats::run(&stats::StatsConfig::new(args))
        }
        Command::Merge(args) => {
            processes.one_only("merge")?;
            merge::run(&merge::MergeConfig::new(args)?)
        }
        Command::Align(args) => {
            processes.one_only("align")?;
            align::run(&align::AlignConfig::new(args))
        }
        Command::Choose(args) => {
            processes.one_only("choose")?;
            choose::run(&choose::ChooseConfig::new(args)?)
        }
        Command::Score(args) => {
            processes.one_only("score")?;
            score::run(&score::ScoreConfig::new(args))
        }
        Command::Sample(args) => {
            processes.one_only("sample")?;
            sample::run(&sample::SampleConfig::new(args))
        }
        Command::Impute(args) => {
            processes.one_only("impute")?;
            impute::run(&impute::ImputeConfig::new(args))
        }
        Command::Report(args) => {
            processes.one_only("report")?;
            report::run(&report::ReportConfig::new(args))
        }
        Command::Classify(args) => {
            processes.one_only("classify")?;
            classify::run(&classify::ClassifyConfig::new(args)?)
        }
        Command::Describe(args) => {
            processes.one_only("describe")?;
            describe::run(&describe::DescribeConfig::new(args)?)
        }
    }
}

/// True when the error comes from writing to a pipe whose reader has gone (`… | head`).
fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<io::Error>()
            .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
    })
}

/// The messages of an error and its causes joined by ": ", skipping a cause whose message the
/// previous one already contains (error types that print their source themselves).
fn error_chain(err: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in err.chain() {
        let message = match cause.downcast_ref::<principal::PcaError>() {
            Some(error) => flags::message(error),
            None => cause.to_string(),
        };
        if parts.last().is_some_and(|last| last.contains(&message)) {
            continue;
        }
        parts.push(message);
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_chain_joins_causes_once() {
        let err = anyhow::Error::msg("inner").context("outer");
        assert_eq!(error_chain(&err), "outer: inner");
        let dup =
            anyhow::Error::from(io::Error::other("disk full")).context("writing x: disk full");
        assert_eq!(error_chain(&dup), "writing x: disk full");
    }

    #[test]
    fn broken_pipe_is_recognised_through_context() {
        let err = anyhow::Error::from(io::Error::from(io::ErrorKind::BrokenPipe))
            .context("writing to stdout");
        assert!(is_broken_pipe(&err));
        assert!(!is_broken_pipe(&anyhow::Error::msg("other")));
    }
}
