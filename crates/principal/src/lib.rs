//! # principal — principal component analysis, exact and fast
//!
//! The math of PCA and nothing else: no files, no terminal. Readers and writers live in
//! `principal-io`, the command-line tool in `principal-cli`.
//!
//! Two layers, as in faer:
//! - solver functions ([`solver`]), each returning a [`Spectrum`];
//! - an owned, fitted [`PcaModel`] with plain accessors named as in scikit-learn
//!   (`components()`, `explained_variance()`, … without the trailing underscore).
//!
//! Parameters are set on a [`PcaBuilder`], checked once into [`PcaParams`], and fitted to data
//! in memory ([`PcaParams::fit`], `f32` or `f64`), to a re-readable [`ChunkSource`] such as a
//! file read chunk by chunk ([`PcaParams::fit_source`]), or to [`Moments`] accumulated
//! elsewhere and merged ([`MomentAccumulator`], [`PcaParams::fit_moments`]; [`Moments`] are
//! stored and read back through [`MomentParts`]). Over several processes, each with its own
//! part of the rows, [`PcaParams::fit_distributed`] combines what each accumulated through a
//! small [`Collective`] trait (sum, broadcast, rank, size; [`SingleProcess`] for one).
//!
//! Recognition by nearest codes (eigenfaces): [`neighbours::nearest_neighbours`] finds the
//! nearest training codes of every query by blocked matrix products, exactly as a brute-force
//! search would, and [`neighbours::Neighbours::vote`] labels the queries.
//!
//! ## Conventions
//!
//! - Data is N×D, one sample per row. The mean μ is always subtracted; the covariance is
//!   `S = Xcᵀ Xc / (N − ddof)` with `ddof = 1` by default (numpy.cov, R, scikit-learn), or 0
//!   (divide by N).
//! - [`Scaling::Standardize`] divides each centred feature by its standard deviation σ (same
//!   ddof), so S is the correlation matrix (trace D); a feature of zero variance keeps σ = 1
//!   and is listed in [`PcaModel::zero_variance_features`].
//! - Components are the eigenvectors of S for the M largest eigenvalues, sorted by decreasing
//!   eigenvalue, orthonormal, each with its entry of largest magnitude positive (on ties, to
//!   a relative 1e-9, the first such entry).
//! - `explained_variance` = λ₁ ≥ … ≥ λ_M; `explained_variance_ratio` = λ_m / trace(S), the
//!   discarded directions included; `singular_values` = sqrt(λ_m (N − ddof));
//!   `noise_variance` = the mean of the discarded eigenvalues among the min(N, D), 0 when none
//!   is discarded.
//! - Codes are `z = Bᵀ (x − μ) / σ`, reconstructions `x̃ = (B z) σ + μ`.
//! - Results do not depend on an offset: data is centred before any product (a constant 1e6
//!   on every feature changes nothing beyond rounding). The same input and seed give the same
//!   model, bit for bit, on any number of threads: principal's sums are split by the data's
//!   shape, and faer's work into [`FAER_PIECES`] pieces whatever the threads
//!   ([`fix_faer_split`]). On another CPU (another instruction set) the last bits may differ.
//!
//! ```
//! use principal::{faer::mat, ComponentCount, PcaBuilder};
//!
//! // The houses example: price and area move together, so one component explains everything.
//! let x = mat![[10.0, 10.0], [2.0, 2.0], [7.0, 7.0], [1.0, 1.0], [5.0, 5.0]];
//! let model = PcaBuilder::new().components(ComponentCount::Fixed(1)).build()?.fit(x.as_ref())?;
//! let codes = model.transform(x.as_ref())?;
//! assert!((codes[(0, 0)].abs() - 7.0711).abs() < 1e-4);
//! assert!((model.explained_variance_ratio()[0] - 1.0).abs() < 1e-12);
//! // The solver `auto` chose, and why.
//! let plan = PcaBuilder::new().build()?.plan(5, 2);
//! assert_eq!(plan.solver, model.solver());
//! # Ok::<(), principal::PcaError>(())
//! ```

pub mod align;
mod choose;
mod collective;
mod data;
pub mod describe;
mod error;
mod fit;
mod kernel;
mod model;
pub mod models;
mod moments;
pub mod neighbours;
mod options;
mod params;
mod plan;
mod preprocess;
mod probabilistic;
mod real;
pub mod solver;
pub mod sparse;
mod sparse_fit;
mod uncentred;

pub use choose::choice::{ChoiceOutcome, ComponentChoice, Criterion, Curve, ExtraWork, NoiseLevel};
pub use choose::{
    ChoiceTable, ChoiceWork, ChooseOptions, CriterionResult, UnavailableCriterion,
    VARIANCE_FRACTIONS,
};
pub use collective::{Collective, SingleProcess, agree_outcome};
pub use data::{ChunkSource, InMemory, RowsAt};
pub use error::{Parameter, PcaError, Result};
pub use faer;
pub use kernel::bytes::{ByteKernel, byte_kernel, byte_kernel_ran};
pub use kernel::cpu::{CPU_LIMIT_VALUES, CpuLimit, cpu_limit, cpu_limit_setting};
pub use kernel::parallel::{FAER_PIECES, fix_faer_split};
pub use model::{ModelParts, PcaModel};
pub use models::bayesian_pca::{BayesianPca, BayesianPcaOptions, BayesianPcaParts};
pub use models::factor_analysis::{
    FactorAnalysis, FactorAnalysisParams, FactorAnalysisParts, Rotation,
};
pub use models::ica::{Contrast, FastIca, FastIcaParams, FastIcaParts};
pub use models::kernel_pca::{
    Kernel, KernelFunction, KernelPca, KernelPcaParams, KernelPcaParts, PreImage,
};
pub use models::mixture::{Cluster, MixtureOptions, MixtureParts, MixturePpca};
pub use models::{LatentModel, ModelKind, Operation};
pub use moments::{MomentAccumulator, MomentParts, Moments};
pub use options::{
    Basis, Centre, ComponentCount, IterativeOptions, MissingValues, PowerMethod, Precision,
    RandomizedMethod, Scaling, Solver, Whitening,
};
pub use params::{PcaBuilder, PcaParams};
pub use plan::{Candidate, SolverPlan, Unsuitable};
pub use probabilistic::gaussian::{Posterior, ProbabilisticPca, Units};
pub use probabilistic::observed::ObservedPosterior;
pub use probabilistic::sampling::Sampler;
pub use real::{ChunkRef, Real};
pub use solver::missing::{MissingValueReport, PassPoint};
pub use solver::{DenseReason, EigenRoute, IterationReport, Spectrum};
