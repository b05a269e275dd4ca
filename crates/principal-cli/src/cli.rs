//! The command line as clap parses it: the commands. Each command's own arguments live with
//! the command, in `command/<name>.rs`; the argument groups and value parsers several commands
//! share are in `args.rs`, below the commands.

use clap::{Parser, Subcommand};

use crate::command::{
    align, choose, classify, describe, fit, impute, inspect, inverse, merge, report, sample, score,
    stats, transform,
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
    /// Align MODEL's components to those of a reference model of the same features: match,
    /// flip and reorder them (or, with --rotate, rotate them within their subspace) so that
    /// codes are comparable, and print the principal angles between the two subspaces.
    Align(align::AlignArgs),
    /// What the components mean, in FactoMineR's terms: eigenvalues, the variables'
    /// coordinates, correlations, cos² and contributions, the individuals', supplementary
    /// individuals and variables projected onto the axes, and the variables significantly
    /// related to each axis (dimdesc).
    Describe(describe::DescribeArgs),
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;
    use crate::args::usage_error;
    use crate::command::fit::FitArgs;

    #[test]
    fn command_line_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    /// A command's usage error, built from its own arguments, reads as the one built from the
    /// whole command line: the same message and usage.
    #[test]
    fn a_usage_error_shows_the_commands_usage() {
        let message = "--folds applies only to --components cv".to_string();
        let from_args = usage_error::<FitArgs>("fit", message.clone()).render();
        let mut cli = Cli::command();
        let from_cli = cli
            .find_subcommand_mut("fit")
            .unwrap()
            .error(clap::error::ErrorKind::ArgumentConflict, message)
            .render();
        assert_eq!(from_args.to_string(), from_cli.to_string());
        assert!(from_args.to_string().contains("Usage: fit "), "{from_args}");
    }
}
