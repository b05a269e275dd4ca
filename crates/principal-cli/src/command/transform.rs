//! `principal transform`: project data onto a saved model's components; or, with
//! `--posterior`, the posterior means of the latent points of probabilistic PCA. With
//! `--missing em`, rows with missing values are completed from what they show first.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use principal::faer::{Mat, MatRef};
use principal::{ChunkRef, Collective, MissingValues, PcaError, PcaModel, Real};
use principal_io::{
    ChunkReader, MatrixWriter, Missing, Part, ReadOptions, SavedModel, load_model, write_matrix,
};

use crate::args::{MemoryArgs, SelectArgs, one_of};
use crate::select::{Selection, check_features, describe, model_read_options, show};
use crate::stream::{RowStream, summary};
use crate::text;

#[derive(Debug, Args)]
pub struct TransformArgs {
    /// A model written by `principal fit`.
    #[arg(value_name = "MODEL")]
    pub model: PathBuf,
    /// Data files, as for `fit`.
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,
    /// Where to write the codes: .csv, .tsv, .npy or .parquet (columns named pc1..pcM).
    #[arg(short, long, value_name = "CODES", required_unless_present = "into")]
    pub output: Option<PathBuf>,
    /// Write the codes into this AnnData .h5ad file where scanpy's sc.pp.pca puts them
    /// (obsm/X_pca, varm/PCs, uns/pca/variance and variance_ratio), leaving the rest of the
    /// file as it was; the file is replaced whole only when everything was written.
    #[arg(
        long,
        value_name = "H5AD",
        conflicts_with_all = ["output", "posterior", "posterior_cov", "missing"]
    )]
    pub into: Option<PathBuf>,
    /// Write the posterior means of the latent points, E[z | x] = M⁻¹ Wᵀ (x − μ) with
    /// M = WᵀW + σ²I (probabilistic PCA; columns z1..zM), instead of the codes.
    #[arg(long)]
    pub posterior: bool,
    /// Also write the posterior covariance σ² M⁻¹ (M×M), which every complete row shares.
    #[arg(
        long,
        value_name = "FILE",
        requires = "posterior",
        conflicts_with = "missing"
    )]
    pub posterior_cov: Option<PathBuf>,
    /// Missing values (NaN, empty CSV cells, nulls) are read, not errors: a row's codes (or
    /// posterior mean) are those given its observed values under the probabilistic model.
    #[arg(long, value_name = "em", value_parser = one_of::<MissingValues>(&["em"]))]
    pub missing: Option<MissingValues>,
    /// A mixture model (`fit --model mixture`): write each row's most responsible cluster as
    /// one column (`cluster`, 0-based, clusters by decreasing weight).
    #[arg(long, conflicts_with_all = ["posterior", "responsibilities"])]
    pub clusters: bool,
    /// A mixture model: write every cluster's responsibility for each row (cluster1..clusterC,
    /// summing to 1), which is also what a mixture's transform writes without a flag.
    #[arg(long, conflicts_with = "posterior")]
    pub responsibilities: bool,
    #[command(flatten)]
    pub select: SelectArgs,
    #[command(flatten)]
    pub memory: MemoryArgs,
}

/// What `transform` writes for each row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Output {
    /// `Bᵀ (x − μ)/s`.
    Codes,
    /// `E[z | x]`.
    PosteriorMeans,
}

/// A validated `transform` request.
#[derive(Debug)]
pub struct TransformConfig {
    model: PathBuf,
    inputs: Vec<PathBuf>,
    selection: Selection,
    output: PathBuf,
    /// `--into`: the AnnData file the codes go into (then `output` is a temporary NPY file
    /// beside it).
    into: Option<H5adTarget>,
    what: Output,
    posterior_cov: Option<PathBuf>,
    missing: Missing,
    memory_limit: u64,
    /// `--clusters` or `--responsibilities`: a mixture's outputs.
    clusters: Option<ClusterOutput>,
}

/// What `transform` writes for a mixture model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ClusterOutput {
    /// The most responsible cluster of each row.
    Labels,
    /// Every cluster's responsibility.
    Responsibilities,
}

impl TransformConfig {
    pub fn new(args: TransformArgs) -> Self {
        let (layer, mask_var) = (args.select.layer.clone(), args.select.mask_var.clone());
        TransformConfig {
            model: args.model,
            inputs: args.inputs,
            selection: Selection::new(args.select),
            output: match (&args.output, &args.into) {
                (Some(output), _) => output.clone(),
                (None, Some(into)) => codes_beside(into),
                (None, None) => unreachable!("clap requires --output or --into"),
            },
            into: args.into.map(|path| H5adTarget {
                path,
                layer,
                mask_var,
            }),
            what: if args.posterior {
                Output::PosteriorMeans
            } else {
                Output::Codes
            },
            posterior_cov: args.posterior_cov,
            missing: missing_reading(args.missing),
            memory_limit: args.memory.bytes(),
            clusters: if args.clusters {
                Some(ClusterOutput::Labels)
            } else if args.responsibilities {
                Some(ClusterOutput::Responsibilities)
            } else {
                None
            },
        }
    }
}

/// Where `--into` writes: the AnnData file and how its data were read.
#[derive(Debug)]
struct H5adTarget {
    path: PathBuf,
    layer: Option<String>,
    mask_var: Option<String>,
}

/// The temporary NPY file of codes on their way into the AnnData file `into`: beside it (the
/// same file system), named by the process.
fn codes_beside(into: &Path) -> PathBuf {
    let name = into
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    into.with_file_name(format!(".{name}.codes-{}.npy", std::process::id()))
}

/// Writes the codes in `config.output` (the temporary NPY file) and the model into the AnnData
/// file, and removes the temporary file whatever happens.
fn write_into(config: &TransformConfig, target: &H5adTarget, saved: &SavedModel) -> Result<()> {
    let written = (|| -> Result<()> {
        let names = saved.feature_names.as_deref().with_context(|| {
            format!(
                "the model {} has no feature names, so its components cannot be put on the \
                 genes of {} (fit it from an .h5ad file or a file with a header)",
                show(&config.model),
                show(&target.path)
            )
        })?;
        let table = principal_io::read_table(
            std::slice::from_ref(&config.output),
            &ReadOptions::default(),
        )?;
        let scores = table.data.to_f64();
        let model = &saved.model;
        principal_io::write_scanpy_pca(
            &target.path,
            &principal_io::ScanpyPca {
                scores: scores.as_ref(),
                components: model.components(),
                feature_names: names,
                variance: model.explained_variance(),
                variance_ratio: model.explained_variance_ratio(),
                mask_var: target.mask_var.as_deref(),
                layer: target.layer.as_deref(),
                zero_center: true,
            },
        )?;
        Ok(())
    })();
    let _ = std::fs::remove_file(&config.output);
    written.with_context(|| format!("cannot write the PCA into {}", show(&target.path)))
}

/// How the readers treat missing values under `--missing`.
pub fn missing_reading(missing: Option<MissingValues>) -> Missing {
    match missing {
        Some(MissingValues::Em) => Missing::AsNan,
        _ => Missing::Reject,
    }
}

/// Streams the input a chunk at a time: the codes of each chunk are appended to the output.
///
/// Over the ranks of an MPI job each rank transforms its part of the inputs (the parts in rank
/// order are the rows in order) into its own output file, named by rank ([`part_path`]): the
/// codes are as large as the data's M columns, so funnelling them through rank 0 would make
/// one process and one disk do all the writing. The parts appear together or not at all: a
/// rank whose part was written removes it when another rank failed.
pub fn run(config: &TransformConfig, collective: &dyn Collective) -> Result<()> {
    let started = Instant::now();
    let operation = principal::Operation::Transform;
    if let Some(other) =
        crate::models::load_other::<TransformArgs>(&config.model, "transform", operation)?
    {
        crate::models::refuse_pca_flags::<TransformArgs>(
            "transform",
            other.model.kind(),
            &[
                ("--posterior", config.what == Output::PosteriorMeans),
                ("--posterior-cov", config.posterior_cov.is_some()),
                ("--missing", config.missing != Missing::Reject),
            ],
        )?;
        if collective.size() > 1 {
            anyhow::bail!(
                "a {} model transforms in one process only, not under MPI",
                other.model.kind()
            );
        }
        let kind = other.model.kind();
        if let (Some(_), false) = (config.clusters, kind == principal::ModelKind::Mixture) {
            return Err(crate::args::usage_error::<TransformArgs>(
                "transform",
                format!(
                    "--clusters and --responsibilities apply only to --model mixture, not to \
                     --model {kind}"
                ),
            )
            .into());
        }
        let map = match config.clusters {
            Some(ClusterOutput::Labels) => crate::models::RowMap::Clusters,
            _ => crate::models::RowMap::Transform,
        };
        return crate::models::map_rows(
            &other,
            &config.model,
            &config.inputs,
            &config.selection,
            &config.output,
            config.memory_limit,
            map,
        );
    }
    if config.clusters.is_some() {
        return Err(crate::args::usage_error::<TransformArgs>(
            "transform",
            "--clusters and --responsibilities apply only to --model mixture, not to a PCA model"
                .into(),
        )
        .into());
    }
    let saved = load_model(&config.model)?;
    let (size, rank) = (collective.size(), collective.rank());
    let output = if size > 1 {
        part_path(&config.output, rank, size)
    } else {
        config.output.clone()
    };
    if let (Some(_), true) = (&config.into, size > 1) {
        anyhow::bail!("--into writes one AnnData file: run it in one process, not over MPI");
    }
    // A sparse input (MatrixMarket, 10x — whose readers take every column — or an .h5ad file
    // whose matrix is CSR or CSC, read with the model's genes selected) is projected block by
    // block, never densified.
    let sparse = match &config.inputs[..] {
        [input] if principal_io::is_sparse_input(input) => {
            if config.what != Output::Codes || config.missing != Missing::Reject {
                anyhow::bail!(
                    "sparse inputs are transformed to codes only (no --posterior, --missing)"
                );
            }
            Some((input, ReadOptions::default()))
        }
        [input] if config.what == Output::Codes && config.missing == Missing::Reject => {
            let options = read_options(config, &saved)?;
            principal_io::is_sparse_input_with(input, &options).then_some((input, options))
        }
        _ => None,
    };
    let written = if let Some((input, options)) = sparse {
        write_sparse_codes(config, &saved, input, &options, &output, collective)
    } else {
        let input = open_rows(config, &saved, collective)?;
        write_codes(config, &saved, input, &output, collective)
    };
    finish(config, &saved, written, &output, collective, started)
}

/// The dense rows of the inputs (a process's part of them under MPI), read as the model's
/// features.
fn open_rows(
    config: &TransformConfig,
    saved: &SavedModel,
    collective: &dyn Collective,
) -> Result<RowStream> {
    let options = ReadOptions {
        missing: config.missing,
        ..read_options(config, saved)?
    };
    let (size, rank) = (collective.size(), collective.rank());
    Ok(if size > 1 {
        let part = Part { rank, size };
        let opened = ChunkReader::open_part(&config.inputs, &options, part);
        crate::processes::agree_opened(collective, &opened)
            .with_context(|| format!("cannot transform {}", describe(&config.inputs)))?;
        RowStream::from_reader(opened?, saved.model.n_components(), config.memory_limit)
    } else {
        RowStream::open(
            &config.inputs,
            &options,
            saved.model.n_components(),
            config.memory_limit,
        )?
    })
}

/// After the codes were written (or not) to `output`: `--into`'s AnnData file, the ranks'
/// agreement that every part was written (or none is left), and the summary.
fn finish(
    config: &TransformConfig,
    saved: &SavedModel,
    written: Result<u64>,
    output: &Path,
    collective: &dyn Collective,
    started: Instant,
) -> Result<()> {
    let (size, rank) = (collective.size(), collective.rank());
    if let Some(target) = &config.into {
        if written.is_err() {
            let _ = std::fs::remove_file(output);
        }
        let rows = written?;
        write_into(config, target, saved)?;
        text::stderr(&summary(
            rows,
            saved.model.n_components(),
            "components",
            &format!("{} (obsm/X_pca, varm/PCs, uns/pca)", show(&target.path)),
            started,
        ));
        return Ok(());
    }
    if size == 1 {
        let rows = written?;
        text::stderr(&summary(
            rows,
            saved.model.n_components(),
            "components",
            &show(output),
            started,
        ));
        return Ok(());
    }
    let outcome = written
        .as_ref()
        .map(drop)
        .map_err(|e| PcaError::Source(anyhow::Error::msg(format!("{e:#}")).into()));
    if let Err(e) = principal::agree_outcome(collective, outcome) {
        if written.is_ok() {
            let _ = std::fs::remove_file(output);
        }
        return match written {
            Err(own) => Err(own),
            // The failing rank's message already says what it could not transform.
            Ok(_) => Err(e.into()),
        };
    }
    let mut rows = [written? as f64];
    collective.sum(&mut rows);
    if rank == 0 {
        if let Some(path) = &config.posterior_cov {
            let k = saved.model.n_components();
            let names: Vec<String> = (1..=k).map(|i| format!("z{i}")).collect();
            let covariance = saved.model.probabilistic().posterior_covariance()?;
            write_matrix(path, covariance.as_ref(), Some(&names))?;
        }
        let k = saved.model.n_components();
        let last = part_path(&config.output, size - 1, size);
        let place = format!("{size} parts, {} … {}", show(output), show(&last));
        text::stderr(&summary(rows[0] as u64, k, "components", &place, started));
    }
    Ok(())
}

/// The output of rank `rank` of `size`: `codes.npy` → `codes.part-0-of-3.npy`, the rank padded
/// so that the parts sort in rank order.
pub fn part_path(output: &Path, rank: usize, size: usize) -> PathBuf {
    let width = (size - 1).to_string().len();
    let name = output
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let label = format!("part-{rank:0width$}-of-{size}");
    let renamed = match name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => format!("{stem}.{label}.{ext}"),
        _ => format!("{name}.{label}"),
    };
    output.with_file_name(renamed)
}

/// The codes (or posterior means) of every row of `input`, written to `output`; the number of
/// rows. On one process, `--posterior-cov` is written beside them, completed only with them, so
/// a failure leaves neither file.
fn write_codes(
    config: &TransformConfig,
    saved: &SavedModel,
    input: RowStream,
    output: &Path,
    collective: &dyn Collective,
) -> Result<u64> {
    let model = &saved.model;
    check_features(
        input.n_features(),
        model.n_features(),
        &config.inputs,
        &config.selection,
        &show(&config.model),
    )?;
    let k = model.n_components();
    let prefix = match config.what {
        Output::Codes => "pc",
        Output::PosteriorMeans => "z",
    };
    let names: Vec<String> = (1..=k).map(|i| format!("{prefix}{i}")).collect();
    let cannot = || format!("cannot transform {}", describe(&config.inputs));
    let covariance = match &config.posterior_cov {
        Some(path) if collective.size() == 1 => {
            let covariance = model
                .probabilistic()
                .posterior_covariance()
                .with_context(cannot)?;
            let mut out = MatrixWriter::create(path, k, Some(&names))?;
            out.write_rows(covariance.as_ref())?;
            Some(out)
        }
        _ => None,
    };
    let out = MatrixWriter::create(output, k, Some(&names))?;
    let (what, missing) = (config.what, config.missing);
    let rows = input
        .map_into(out, |chunk| match chunk {
            ChunkRef::F32(x) => project(model, x, what, missing),
            ChunkRef::F64(x) => project(model, x, what, missing),
        })
        .with_context(cannot)?;
    if let Some(out) = covariance {
        out.finish()?;
    }
    Ok(rows)
}

/// The codes of a sparse input (MatrixMarket, 10x, an .h5ad file's CSR or CSC matrix), never
/// densified: each block of rows read from the file (under MPI, this process's range of them,
/// see `SparseFile::open_part`) projected as `X V − 1 μᵀV` and appended to `output`, which
/// appears only when complete; the number of rows.
fn write_sparse_codes(
    config: &TransformConfig,
    saved: &SavedModel,
    input: &Path,
    options: &ReadOptions,
    output: &Path,
    collective: &dyn Collective,
) -> Result<u64> {
    use principal::sparse::SparseSource;
    let model = &saved.model;
    let cannot = || format!("cannot transform {}", input.display());
    let (size, rank) = (collective.size(), collective.rank());
    let mut file = if size > 1 {
        let opened =
            principal_io::SparseFile::open_part(input, options, config.memory_limit, rank, size);
        crate::processes::agree_opened(collective, &opened).with_context(cannot)?;
        opened?
    } else {
        principal_io::SparseFile::open_with(input, options, config.memory_limit)?
    };
    check_features(
        file.n_features(),
        model.n_features(),
        &config.inputs,
        &config.selection,
        &show(&config.model),
    )?;
    let k = model.n_components();
    let names: Vec<String> = (1..=k).map(|i| format!("pc{i}")).collect();
    let mut out = MatrixWriter::create(output, k, Some(&names))?;
    let mut write_error = None;
    // Row numbers in messages count from the file's first row.
    let mut first = file.rows().start;
    let passed = file.pass(&mut |block| {
        let codes = model.transform_sparse(block).map_err(|e| match e {
            PcaError::NonFinite { row, column, value } => PcaError::NonFinite {
                row: row + first,
                column,
                value,
            },
            other => other,
        })?;
        first += block.nrows();
        if let Err(e) = out.write_rows(codes.as_ref()) {
            write_error = Some(e);
            return Err(PcaError::Source("the codes could not be written".into()));
        }
        Ok(())
    });
    if let Some(e) = write_error {
        return Err(e.into());
    }
    passed.with_context(cannot)?;
    let rows = out.rows();
    out.finish()?;
    Ok(rows)
}

/// One chunk's codes or posterior means; with missing values read, each row given what it
/// shows.
fn project<T: Real>(
    model: &PcaModel,
    x: MatRef<'_, T>,
    what: Output,
    missing: Missing,
) -> principal::Result<Mat<f64>> {
    let ppca = model.probabilistic();
    match (what, missing) {
        (Output::Codes, Missing::Reject) => model.transform(x),
        (Output::Codes, _) => ppca.transform_observed(x),
        (Output::PosteriorMeans, Missing::Reject) => Ok(ppca.posterior(x)?.mean),
        (Output::PosteriorMeans, _) => Ok(ppca.posterior_observed(x)?.mean),
    }
}

/// The user's selection; or, when they gave none, the model knows its feature names and the
/// input has a header, the model's features picked by name.
fn read_options(config: &TransformConfig, saved: &SavedModel) -> Result<ReadOptions> {
    model_read_options(
        &config.inputs,
        &config.selection,
        saved.feature_names.as_deref(),
        &show(&config.model),
    )
}
