//! The model kinds beyond PCA on the command line: their `fit` flags, fitting in memory, and
//! what `inspect`, `transform`, `inverse`, `score` and `sample` do with them. Each kind's
//! settings and description are in its own module; every `match` over the kinds here has one
//! arm per kind. An operation a kind does not define is a usage error naming both, raised
//! before anything is read or written.

mod args;
mod bayesian_pca;
mod factor_analysis;
mod ica;
mod kernel;
mod mixture;

pub use args::{ModelArgs, Shared};

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use principal::faer::Mat;
use principal::{ChunkRef, ModelKind, Operation, Real};
use principal_io::{
    AnyModel, Matrix, MatrixWriter, ReadOptions, SavedAnyModel, load_any_model, read_table,
    save_any_model,
};

use crate::args::usage_error;
use crate::select::{Selection, check_features, describe, model_read_options, show};
use crate::stream::{RowStream, summary};
use crate::text;

/// A validated fit of a kind beyond PCA.
#[derive(Clone, Debug)]
pub enum KindFit {
    FactorAnalysis(principal::FactorAnalysisParams),
    Kernel(principal::KernelPcaParams),
    Ica(principal::FastIcaParams),
    BayesianPca(principal::BayesianPcaOptions),
    Mixture(principal::MixtureOptions),
}

/// The flags each kind accepts, by the flag's name: any other kind given one is a usage error.
fn given_flags(args: &ModelArgs) -> Vec<(&'static str, ModelKind)> {
    let mut given = Vec::new();
    let mut note = |present: bool, flag: &'static str, kind: ModelKind| {
        if present {
            given.push((flag, kind));
        }
    };
    note(
        args.rotation.is_some(),
        "--rotation",
        ModelKind::FactorAnalysis,
    );
    note(args.kernel.is_some(), "--kernel", ModelKind::Kernel);
    note(args.gamma.is_some(), "--gamma", ModelKind::Kernel);
    note(args.degree.is_some(), "--degree", ModelKind::Kernel);
    note(args.coef0.is_some(), "--coef0", ModelKind::Kernel);
    note(args.alpha.is_some(), "--alpha", ModelKind::Kernel);
    note(args.pre_image.is_some(), "--pre-image", ModelKind::Kernel);
    note(args.fun.is_some(), "--fun", ModelKind::Ica);
    note(args.clusters.is_some(), "--clusters", ModelKind::Mixture);
    note(args.restarts.is_some(), "--restarts", ModelKind::Mixture);
    given
}

impl KindFit {
    /// The fit `args` ask for, checked before any data is read; `None` for PCA. `usage` makes
    /// the usage error of `fit`.
    pub fn new(
        args: &ModelArgs,
        shared: Option<Shared>,
        usage: impl Fn(String) -> clap::Error,
    ) -> Result<Option<KindFit>, clap::Error> {
        if let Some((flag, kind)) = given_flags(args).into_iter().find(|(_, k)| *k != args.kind) {
            return Err(usage(format!("{flag} applies only to --model {kind}")));
        }
        let kind = args.kind;
        let shared = match (kind, shared) {
            (ModelKind::Pca, _) => return Ok(None),
            (_, None) => {
                return Err(usage(format!(
                    "--model {kind} needs --components K (a whole number)"
                )));
            }
            (_, Some(shared)) => shared,
        };
        let fit = match kind {
            ModelKind::FactorAnalysis => {
                KindFit::FactorAnalysis(factor_analysis::params(args, shared))
            }
            ModelKind::Kernel => KindFit::Kernel(kernel::params(args, shared)),
            ModelKind::Ica => KindFit::Ica(ica::params(args, shared)),
            ModelKind::BayesianPca => KindFit::BayesianPca(bayesian_pca::params(shared)),
            ModelKind::Mixture => {
                if args.clusters.is_none() {
                    return Err(usage(
                        "--model mixture needs --clusters C (a whole number, at least 1)".into(),
                    ));
                }
                KindFit::Mixture(mixture::params(args, shared))
            }
            ModelKind::Pca => unreachable!(),
        };
        let checked = match &fit {
            KindFit::FactorAnalysis(p) => p.validate(),
            KindFit::Kernel(p) => p.validate(),
            KindFit::Ica(p) => p.validate(),
            KindFit::BayesianPca(p) => {
                check_latent(p.max_components, p.tolerance, p.max_iterations)
            }
            KindFit::Mixture(p) => check_mixture(p),
        };
        checked.map_err(|e| usage(crate::flags::message(&e)))?;
        Ok(Some(fit))
    }

    /// The kind fitted.
    pub fn kind(&self) -> ModelKind {
        match self {
            KindFit::FactorAnalysis(_) => ModelKind::FactorAnalysis,
            KindFit::Kernel(_) => ModelKind::Kernel,
            KindFit::Ica(_) => ModelKind::Ica,
            KindFit::BayesianPca(_) => ModelKind::BayesianPca,
            KindFit::Mixture(_) => ModelKind::Mixture,
        }
    }

    /// The most components the kind allows on N×D data, and why.
    fn max_components(&self, n: usize, d: usize) -> (usize, &'static str) {
        match self {
            KindFit::FactorAnalysis(_) => (
                d,
                "features: factor analysis has at most one factor per feature",
            ),
            KindFit::Kernel(_) => (
                n,
                "rows: kernel PCA has at most one component per training row",
            ),
            KindFit::Ica(_) => (
                n.min(d),
                "min(n_samples, n_features): ICA unmixes the principal components",
            ),
            KindFit::BayesianPca(_) => (
                d.saturating_sub(1),
                "n_features − 1: Bayesian PCA keeps some noise outside its components",
            ),
            KindFit::Mixture(_) => (
                d.saturating_sub(1),
                "n_features − 1: each cluster keeps some noise outside its components",
            ),
        }
    }

    fn components(&self) -> usize {
        match self {
            KindFit::FactorAnalysis(p) => p.n_components,
            KindFit::Kernel(p) => p.n_components,
            KindFit::Ica(p) => p.n_components,
            KindFit::BayesianPca(p) => p.max_components,
            KindFit::Mixture(p) => p.components,
        }
    }

    /// Reads `inputs` whole, fits, writes the model to `output` and reports on stderr.
    /// Settings the data makes impossible (more components than the kind allows, a kernel
    /// matrix over the memory limit) are refused before the fit, as usage errors.
    pub fn run(
        &self,
        inputs: &[PathBuf],
        read: &ReadOptions,
        output: &Path,
        usage: impl Fn(String) -> clap::Error,
    ) -> Result<()> {
        let started = Instant::now();
        let table = read_table(inputs, read)?;
        let x: Mat<f64> = match &table.data {
            Matrix::F32(x) => as_f64(x.as_ref()),
            Matrix::F64(x) => x.as_ref().to_owned(),
        };
        let (n, d) = (x.nrows(), x.ncols());
        let (max, what) = self.max_components(n, d);
        if self.components() > max {
            return Err(usage(format!(
                "--components {} is more than the {max} {what}",
                self.components()
            ))
            .into());
        }
        if let KindFit::Kernel(params) = self {
            params
                .check_memory(n)
                .map_err(|e| usage(crate::flags::message(&e)))?;
        }
        let read_time = started.elapsed();
        let fitting = Instant::now();
        let cannot = || format!("cannot fit --model {} to {}", self.kind(), describe(inputs));
        let model = match self {
            KindFit::FactorAnalysis(p) => {
                AnyModel::FactorAnalysis(p.fit(x.as_ref()).with_context(cannot)?)
            }
            KindFit::Kernel(p) => AnyModel::Kernel(p.fit(x.as_ref()).with_context(cannot)?),
            KindFit::Ica(p) => AnyModel::Ica(p.fit(x.as_ref()).with_context(cannot)?),
            KindFit::BayesianPca(p) => AnyModel::BayesianPca(
                principal::BayesianPca::fit(x.as_ref(), p).with_context(cannot)?,
            ),
            KindFit::Mixture(p) => {
                AnyModel::Mixture(principal::MixturePpca::fit(x.as_ref(), p).with_context(cannot)?)
            }
        };
        let fit_time = fitting.elapsed();
        save_any_model(output, &model, table.column_names.as_deref())?;
        let mut s = format!(
            "fitted --model {} with {} component(s) to {n} samples × {d} features from {}\n",
            model.kind(),
            self.components(),
            describe(inputs)
        );
        s.push_str(&match &model {
            AnyModel::FactorAnalysis(m) => factor_analysis::fit_summary(m),
            AnyModel::Kernel(m) => kernel::fit_summary(m),
            AnyModel::Ica(m) => ica::fit_summary(m),
            AnyModel::BayesianPca(m) => bayesian_pca::fit_summary(m),
            AnyModel::Mixture(m) => mixture::fit_summary(m),
            AnyModel::Pca(_) => String::new(),
        });
        s.push_str(&format!(
            "time: {} reading, {} fitting\nmodel written to {}\n",
            text::duration(read_time),
            text::duration(fit_time),
            show(output)
        ));
        text::stderr(&s);
        Ok(())
    }
}

/// The checks of the settings Bayesian PCA and the mixture share, before any data is read
/// (the library checks them again against the data's shape).
fn check_latent(components: usize, tolerance: f64, max_iterations: usize) -> principal::Result<()> {
    use principal::PcaError;
    if components == 0 {
        return Err(PcaError::ZeroComponents);
    }
    if !(tolerance > 0.0 && tolerance < 1.0) {
        return Err(PcaError::ToleranceOutOfRange(tolerance));
    }
    if max_iterations == 0 {
        return Err(PcaError::ZeroIterations);
    }
    Ok(())
}

fn check_mixture(p: &principal::MixtureOptions) -> principal::Result<()> {
    use principal::{Parameter, PcaError};
    let out = |parameter, allowed: &str| PcaError::OutOfRange {
        parameter,
        value: "0".into(),
        allowed: allowed.into(),
    };
    if p.clusters == 0 {
        return Err(out(
            Parameter::Clusters,
            "a mixture needs at least 1 cluster",
        ));
    }
    if p.restarts == 0 {
        return Err(out(Parameter::Restarts, "at least 1 start is needed"));
    }
    check_latent(p.components, p.tolerance, p.max_iterations)
}

/// The usage error of `operation` on a model of `kind` that does not define it.
pub fn unsupported<A: Args>(command: &'static str, kind: ModelKind, detail: &str) -> clap::Error {
    usage_error::<A>(
        command,
        format!("the model is --model {kind}, which does not define {command}{detail}"),
    )
}

/// The model in `path` when it is of a kind beyond PCA (`None` for PCA, which the commands
/// read themselves), checked to define `operation`: otherwise a usage error of `command`.
pub fn load_other<A: Args>(
    path: &Path,
    command: &'static str,
    operation: Operation,
) -> Result<Option<SavedAnyModel>> {
    let kind = principal_io::model_kind(path)?;
    if kind == ModelKind::Pca {
        return Ok(None);
    }
    let saved = load_any_model(path)?;
    let defined = saved.model.latent().is_some_and(|m| m.supports(operation));
    if !defined {
        let why = match operation {
            Operation::Report => " (its figures are PCA's)",
            Operation::Impute => " (it has no conditional distribution of missing values)",
            Operation::Score | Operation::Sample => " (it is not a density model)",
            Operation::Inverse if kind == ModelKind::Kernel => {
                " (it was fitted with --pre-image skip: fit it again without, to learn the \
                 pre-image map inverse needs)"
            }
            _ => "",
        };
        return Err(unsupported::<A>(command, kind, why).into());
    }
    Ok(Some(saved))
}

/// A usage error of `command`, naming the kind, when the model in `path` is not PCA: for the
/// commands that read PCA models only (`align`, `describe`), before anything is written.
pub fn require_pca<A: Args>(path: &Path, command: &'static str) -> Result<()> {
    let kind = principal_io::model_kind(path)?;
    if kind == ModelKind::Pca {
        return Ok(());
    }
    Err(unsupported::<A>(
        command,
        kind,
        &format!(
            " ({} is a {kind} model; {command} works on PCA models only)",
            show(path)
        ),
    )
    .into())
}

/// A usage error of `command` when any of `flags` (name, given) is given for a model of
/// `kind`: they are PCA's.
pub fn refuse_pca_flags<A: Args>(
    command: &'static str,
    kind: ModelKind,
    flags: &[(&str, bool)],
) -> Result<()> {
    match flags.iter().find(|(_, given)| *given) {
        Some((flag, _)) => Err(usage_error::<A>(
            command,
            format!("{flag} applies only to PCA models, not to --model {kind}"),
        )
        .into()),
        None => Ok(()),
    }
}

fn as_f64<T: Real>(x: principal::faer::MatRef<'_, T>) -> Mat<f64> {
    Mat::from_fn(x.nrows(), x.ncols(), |i, j| x[(i, j)].to_f64())
}

fn chunk_f64(chunk: ChunkRef<'_>) -> Mat<f64> {
    match chunk {
        ChunkRef::F32(x) => as_f64(x),
        ChunkRef::F64(x) => as_f64(x),
    }
}

/// What is done to each row of the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowMap {
    /// Latent coordinates (`transform`).
    Transform,
    /// The log-likelihood (`score`).
    Score,
    /// A mixture's most responsible cluster (`transform --clusters`).
    Clusters,
}

/// `transform` or `score` of `inputs` through a model of a kind beyond PCA, streamed a chunk
/// at a time to `output`.
pub fn map_rows(
    saved: &SavedAnyModel,
    model_path: &Path,
    inputs: &[PathBuf],
    selection: &Selection,
    output: &Path,
    memory_limit: u64,
    map: RowMap,
) -> Result<()> {
    let started = Instant::now();
    let Some(model) = saved.model.latent() else {
        anyhow::bail!("a PCA model reached the other kinds' path");
    };
    let options = model_read_options(
        inputs,
        selection,
        saved.feature_names.as_deref(),
        &show(model_path),
    )?;
    let columns = match map {
        RowMap::Transform => model.n_components(),
        RowMap::Score | RowMap::Clusters => 1,
    };
    let input = RowStream::open(inputs, &options, columns, memory_limit)?;
    check_features(
        input.n_features(),
        model.n_features(),
        inputs,
        selection,
        &show(model_path),
    )?;
    let names: Vec<String> = match map {
        RowMap::Transform => (1..=columns)
            .map(|i| format!("{}{i}", model.component_prefix()))
            .collect(),
        RowMap::Score => vec!["log_likelihood".into()],
        RowMap::Clusters => vec!["cluster".into()],
    };
    let out = MatrixWriter::create(output, columns, Some(&names))?;
    let verb = match map {
        RowMap::Transform | RowMap::Clusters => "transform",
        RowMap::Score => "score",
    };
    let cannot = || {
        format!(
            "cannot {verb} {} with the model {}",
            describe(inputs),
            show(model_path)
        )
    };
    let mut total = 0.0;
    let rows = input
        .map_into(out, |chunk| {
            let x = chunk_f64(chunk);
            match map {
                RowMap::Transform => model.transform(x.as_ref()),
                RowMap::Clusters => {
                    // The responsibilities' largest (the first on a tie).
                    let r = model.transform(x.as_ref())?;
                    Ok(Mat::from_fn(r.nrows(), 1, |i, _| {
                        (0..r.ncols())
                            .fold(0, |best, c| if r[(i, c)] > r[(i, best)] { c } else { best })
                            as f64
                    }))
                }
                RowMap::Score => {
                    let scores = model.score_samples(x.as_ref())?;
                    total += scores.iter().sum::<f64>();
                    Ok(Mat::from_fn(scores.len(), 1, |i, _| scores[i]))
                }
            }
        })
        .with_context(cannot)?;
    if map == RowMap::Score {
        text::stderr(&format!(
            "mean log-likelihood {:.6} per row over {rows} rows\n",
            total / rows.max(1) as f64
        ));
    }
    let what = match map {
        RowMap::Transform => "components",
        RowMap::Clusters => "cluster",
        RowMap::Score => "log-likelihood",
    };
    text::stderr(&summary(rows, columns, what, &show(output), started));
    Ok(())
}

/// `inverse` (or `sample --latent`) of the codes in `codes` through a model of a kind beyond
/// PCA.
pub fn inverse(
    saved: &SavedAnyModel,
    model_path: &Path,
    codes: &Path,
    output: &Path,
    memory_limit: u64,
) -> Result<()> {
    let started = Instant::now();
    let Some(model) = saved.model.latent() else {
        anyhow::bail!("a PCA model reached the other kinds' path");
    };
    let d = model.n_features();
    let input = RowStream::open(
        std::slice::from_ref(&codes.to_path_buf()),
        &ReadOptions::default(),
        d,
        memory_limit,
    )?;
    let cannot = || {
        format!(
            "cannot reconstruct from {} with the model {}",
            show(codes),
            show(model_path)
        )
    };
    let (found, expected) = (input.n_features(), model.n_components());
    if found != expected {
        return Err(principal::PcaError::ComponentMismatch { expected, found })
            .with_context(cannot);
    }
    let out = MatrixWriter::create(output, d, saved.feature_names.as_deref())?;
    let rows = input
        .map_into(out, |chunk| {
            model.inverse_transform(chunk_f64(chunk).as_ref())
        })
        .with_context(cannot)?;
    text::stderr(&summary(rows, d, "features", &show(output), started));
    Ok(())
}

/// `sample --count N --seed S` from a model of a kind beyond PCA.
pub fn sample(saved: &SavedAnyModel, count: u64, seed: u64, output: &Path) -> Result<()> {
    let started = Instant::now();
    let Some(model) = saved.model.latent() else {
        anyhow::bail!("a PCA model reached the other kinds' path");
    };
    let d = model.n_features();
    let rows = usize::try_from(count).unwrap_or(usize::MAX);
    let x = model.sample(rows, seed)?;
    let mut out = MatrixWriter::create(output, d, saved.feature_names.as_deref())?;
    out.write_rows(x.as_ref())?;
    out.finish()?;
    text::stderr(&summary(count, d, "features", &show(output), started));
    Ok(())
}

/// `inspect` of a model of a kind beyond PCA: JSON, or text for people.
pub fn inspect(saved: &SavedAnyModel, path: &Path, json: bool) -> Result<String> {
    let names = saved.feature_names.as_deref();
    let mut value = match &saved.model {
        AnyModel::FactorAnalysis(m) => factor_analysis::describe(m),
        AnyModel::Kernel(m) => kernel::describe(m),
        AnyModel::Ica(m) => ica::describe(m),
        AnyModel::BayesianPca(m) => bayesian_pca::describe(m),
        AnyModel::Mixture(m) => mixture::describe(m),
        AnyModel::Pca(_) => anyhow::bail!("a PCA model reached the other kinds' path"),
    };
    if let Some(object) = value.as_object_mut() {
        object.insert("model".into(), saved.model.kind().name().into());
        object.insert("n_features".into(), saved.model.n_features().into());
        if let Some(names) = names {
            object.insert("feature_names".into(), names.into());
        }
        object.insert("file".into(), show(path).into());
    }
    if json {
        return Ok(format!("{}\n", serde_json::to_string_pretty(&value)?));
    }
    let mut s = format!("model: {} ({})\n", saved.model.kind(), show(path));
    if let Some(object) = value.as_object() {
        for (key, v) in object {
            if key == "model" || key == "file" {
                continue;
            }
            let shown = match v {
                serde_json::Value::Array(items)
                    if items.len() > 8 || items.iter().any(|i| i.is_array()) =>
                {
                    format!("[{} values; see --json]", items.len())
                }
                other => other.to_string(),
            };
            s.push_str(&format!("{key}: {shown}\n"));
        }
    }
    Ok(s)
}
