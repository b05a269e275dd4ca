use std::fmt;
use std::str::FromStr;

use faer::{Mat, MatRef};

use crate::model::PcaModel;
use crate::moments::{ColumnAccumulator, MomentAccumulator, Moments};
use crate::prepare::Preprocessing;
use crate::solver::{self, IterativeProblem, Problem};
use crate::{ChunkRef, ChunkSource, InMemory, PcaError, Real, Result};

/// How many components to keep.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum ComponentCount {
    /// Exactly `k` components, `1 ≤ k ≤ min(n_samples, n_features)`.
    Fixed(usize),
    /// The smallest number of components whose explained-variance ratios sum to at least `f`,
    /// `0 < f ≤ 1`.
    VarianceFraction(f64),
    /// Every component: `min(n_samples, n_features)`.
    All,
}

/// Whether features are divided by their standard deviation after centring.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Scaling {
    /// Centre only: PCA of the covariance matrix.
    #[default]
    Center,
    /// Centre and divide by the standard deviation (same ddof): PCA of the correlation matrix.
    /// A zero-variance feature keeps scale 1.
    Standardize,
}

/// The arithmetic of the covariance solver's cross-products for `f32` input that is not made of
/// small integers (small integers, pixels among them, always take an exact f32 path, and `f64`
/// input always f64 products).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Precision {
    /// Every product in f64: results exact to f64 rounding.
    #[default]
    Full,
    /// `f32` input centred in f64 (each block of rows on its own mean), rounded to f32 and
    /// multiplied in f32 over blocks of [`MIXED_BLOCK_ROWS`] rows, the blocks summed in f64:
    /// about twice the speed. With `u = 2⁻²⁴`, every entry of the scatter matrix is within
    /// `(b + 3)·u·√(SᵢᵢSⱼⱼ)` of the exact one (b = block rows; the blocks' own scatters sum to
    /// at most S, so centring per block only tightens this), so by Weyl's inequality every
    /// eigenvalue is within `(b + 3)·u·trace` of the exact one: at most 1.6e-5 of the total
    /// variance (the error seen in practice is near √b·u, about 1e-6). The mean stays exact to
    /// f64 rounding.
    Mixed,
}

/// Rows per f32 block under [`Precision::Mixed`]: the `b` of its error bound.
pub const MIXED_BLOCK_ROWS: usize = 256;

impl Precision {
    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Precision::Full => "full",
            Precision::Mixed => "mixed",
        }
    }

    /// The bound on `max |λ̂ₖ − λₖ| / Σλ` that this precision guarantees (0 for `Full`, which
    /// is exact to f64 rounding).
    pub fn eigenvalue_bound(self) -> f64 {
        match self {
            Precision::Full => 0.0,
            Precision::Mixed => (MIXED_BLOCK_ROWS as f64 + 3.0) * f64::from(f32::EPSILON) / 2.0,
        }
    }
}

impl FromStr for Precision {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "full" => Ok(Precision::Full),
            "mixed" => Ok(Precision::Mixed),
            other => Err(format!(
                "unknown precision {other:?}: expected full or mixed"
            )),
        }
    }
}

/// The algorithm that computes the eigenpairs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Solver {
    /// Chosen at fit time from the shape; the choice is recorded in the model.
    #[default]
    Auto,
    /// Streaming mean and centred cross-products, then a D×D symmetric eigendecomposition.
    Covariance,
    /// The N×N Gram matrix and the transpose trick (N ≪ D).
    Gram,
    /// Thin SVD of the centred data: the accuracy reference.
    Svd,
    /// Randomized subspace iteration with oversampling; a few passes over the data.
    Randomized,
    /// The textbook's power iteration (deflation or block), iterated to a tolerance.
    Power,
    /// Expectation–maximization for probabilistic PCA, iterated to a tolerance.
    Em,
}

/// How the power solver finds several components.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PowerMethod {
    /// All at once: subspace iteration on a block of k vectors.
    #[default]
    Block,
    /// One at a time, each against the covariance with the previous ones removed.
    Deflation,
}

/// How the randomized solver iterates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum RandomizedMethod {
    /// Rayleigh–Ritz on the whole Krylov space of the passes so far (more accurate per pass).
    #[default]
    BlockKrylov,
    /// Rayleigh–Ritz on the last block only (classic power iterations, as scikit-learn).
    Subspace,
}

/// Settings of the iterative solvers (`randomized`, `power`, `em`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IterativeOptions {
    /// Seed of the random start; the same seed gives the same model, bit for bit.
    pub seed: u64,
    /// Stop when the a-posteriori error estimate `max ‖S b − λ b‖ / λ₁` is at most this.
    /// `randomized` without it runs a fixed number of power iterations; `power` and `em` use
    /// 1e-9.
    pub tolerance: Option<f64>,
    /// Power iterations of `randomized` (passes beyond the first); `None` for the default
    /// (block Krylov: 3 when k < 0.1 min(N, D), else 2; subspace: scikit-learn's 7, else 4)
    /// or, with a tolerance, as many as needed.
    pub power_iterations: Option<usize>,
    /// Extra columns of the random start of `randomized`.
    pub oversampling: usize,
    /// Upper bound on passes for tolerance-driven iteration.
    pub max_iterations: usize,
    /// Block or deflation for `power`.
    pub power_method: PowerMethod,
    /// Block Krylov or subspace iteration for `randomized`.
    pub randomized_method: RandomizedMethod,
}

impl Default for IterativeOptions {
    fn default() -> Self {
        IterativeOptions {
            seed: 0,
            tolerance: None,
            power_iterations: None,
            oversampling: 10,
            max_iterations: 1000,
            power_method: PowerMethod::Block,
            randomized_method: RandomizedMethod::BlockKrylov,
        }
    }
}

impl Solver {
    /// Every solver name accepted by [`FromStr`].
    pub const NAMES: &'static [&'static str] = &[
        "auto",
        "covariance",
        "gram",
        "svd",
        "randomized",
        "power",
        "em",
    ];

    /// The name used on the command line and in model files.
    pub fn name(self) -> &'static str {
        match self {
            Solver::Auto => "auto",
            Solver::Covariance => "covariance",
            Solver::Gram => "gram",
            Solver::Svd => "svd",
            Solver::Randomized => "randomized",
            Solver::Power => "power",
            Solver::Em => "em",
        }
    }

    /// Whether the solver returns exact eigenpairs (to rounding) rather than approximations.
    pub fn is_exact(self) -> bool {
        matches!(self, Solver::Covariance | Solver::Gram | Solver::Svd)
    }

    /// Resolves `Auto` for data of `n_samples × n_features` when `n_components` are wanted
    /// (`None`: the count depends on the spectrum, so an exact solver is needed). Other solvers
    /// are returned as they are. Returns the solver and a sentence saying why; see
    /// [`Solver::plan`] for the policy and the figures behind it.
    pub fn resolve(
        self,
        n_samples: usize,
        n_features: usize,
        n_components: Option<usize>,
    ) -> (Solver, String) {
        let plan = self.plan(n_samples, n_features, n_components, None);
        (plan.solver, plan.reason)
    }

    /// Estimated cost of every solver on this problem, and the choice.
    ///
    /// The policy compares multiply-adds and working memory (data not counted):
    /// - covariance: N·D²/2 + 10·D³, memory 2·D² doubles;
    /// - gram: N²·D/2 + 10·N³, memory 2·N² doubles and a block of centred columns (16 MiB);
    /// - svd: 2·N·D·min(N, D) + 10·min(N, D)³, memory 2·N·D doubles;
    /// - randomized: its default passes of 2·N·D·(k + 10), memory 4·D·(k + 10) doubles;
    /// - power, em: unknown passes of 2·N·D·k (the count depends on eigenvalue gaps).
    ///
    /// Auto takes svd for tiny problems (N·D ≤ 10⁴; the most accurate, time does not matter),
    /// else the cheaper of covariance and gram within the memory limit, unless k is known and
    /// randomized is at least 4× cheaper than that (exact answers are worth a little time) or
    /// no exact solver fits in memory. Power and em are never chosen: randomized subspace
    /// iteration with oversampling dominates them (em's span moves as subspace iteration's).
    pub fn plan(
        self,
        n_samples: usize,
        n_features: usize,
        n_components: Option<usize>,
        memory_limit: Option<u64>,
    ) -> SolverPlan {
        let (n, d) = (n_samples as f64, n_features as f64);
        let small = n.min(d);
        let k = n_components.map(|k| k as f64);
        let width = k.map(|k| (k + 10.0).min(small));
        let passes = n_components.map(|k| {
            let options = IterativeOptions::default();
            crate::solver::randomized::default_passes(&options, k, n_samples, n_features) as f64
        });
        let limit = memory_limit.map(|m| m as f64);
        let mut candidates = vec![
            Candidate::new(
                Solver::Covariance,
                Some(n * d * d / 2.0 + 10.0 * d * d * d),
                16.0 * d * d,
                limit,
            ),
            Candidate::new(
                Solver::Gram,
                Some(n * n * d / 2.0 + 10.0 * n * n * n),
                // N² twice (the Gram matrix, the eigensolver's) and a block of centred columns.
                8.0 * (2.0 * n * n + (n * d).min((256.0 * n).max(2_097_152.0))),
                limit,
            ),
            Candidate::new(
                Solver::Svd,
                Some(2.0 * n * d * small + 10.0 * small.powi(3)),
                16.0 * n * d,
                limit,
            ),
            Candidate::new(
                Solver::Randomized,
                width.zip(passes).map(|(w, p)| p * 2.0 * n * d * w),
                32.0 * d * width.unwrap_or(small),
                limit,
            ),
            Candidate::new(Solver::Power, None, 32.0 * d * k.unwrap_or(small), limit),
            Candidate::new(Solver::Em, None, 32.0 * d * k.unwrap_or(small), limit),
        ];
        if n_components.is_none() {
            for c in candidates.iter_mut().filter(|c| !c.solver.is_exact()) {
                c.note = Some("needs a fixed number of components".into());
            }
        }
        let cost = |s: Solver| {
            candidates
                .iter()
                .find(|c| c.solver == s)
                .and_then(|c| c.multiply_adds)
        };
        if self != Solver::Auto {
            let reason = format!("{} chosen by the caller", self.name());
            return SolverPlan {
                solver: self,
                reason,
                candidates,
            };
        }
        let fits = |s: Solver| candidates.iter().any(|c| c.solver == s && c.note.is_none());
        if n * d <= 1e4 && fits(Solver::Svd) {
            let reason =
                format!("small problem ({n_samples}×{n_features}): thin SVD, the most accurate");
            return SolverPlan {
                solver: Solver::Svd,
                reason,
                candidates,
            };
        }
        let exact = [Solver::Covariance, Solver::Gram, Solver::Svd]
            .into_iter()
            .filter(|&s| fits(s))
            .min_by(|&a, &b| {
                cost(a)
                    .unwrap_or(f64::INFINITY)
                    .total_cmp(&cost(b).unwrap_or(f64::INFINITY))
            });
        let randomized = cost(Solver::Randomized).filter(|_| fits(Solver::Randomized));
        let (solver, reason) = match (exact, randomized) {
            (Some(e), Some(r)) if r * 4.0 < cost(e).unwrap_or(f64::INFINITY) => (
                Solver::Randomized,
                format!(
                    "randomized ≈ {r:.2e} multiply-adds is over 4× cheaper than the exact {e} (≈ {:.2e})",
                    cost(e).unwrap_or(f64::NAN)
                ),
            ),
            (Some(e), _) => {
                let route = match e {
                    Solver::Covariance => format!("the {n_features}×{n_features} covariance matrix"),
                    Solver::Gram => format!("the {n_samples}×{n_samples} Gram matrix"),
                    _ => format!("a thin SVD of the {n_samples}×{n_features} data"),
                };
                (e, format!("exact; {route} is the cheapest exact route (≈ {:.2e} multiply-adds)", cost(e).unwrap_or(f64::NAN)))
            }
            (None, Some(r)) => (
                Solver::Randomized,
                format!("no exact solver fits in the memory limit; randomized ≈ {r:.2e} multiply-adds"),
            ),
            (None, None) => (
                Solver::Covariance,
                "nothing fits in the memory limit; covariance needs the least for an exact answer".into(),
            ),
        };
        SolverPlan {
            solver,
            reason,
            candidates,
        }
    }
}

/// One solver's estimated cost on a problem (see [`Solver::plan`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    /// The solver.
    pub solver: Solver,
    /// Estimated multiply-adds; `None` when unknown in advance (power).
    pub multiply_adds: Option<f64>,
    /// Estimated working memory in bytes, not counting the data.
    pub memory_bytes: f64,
    /// Why the solver cannot be used here, if it cannot.
    pub note: Option<String>,
}

impl Candidate {
    fn new(
        solver: Solver,
        multiply_adds: Option<f64>,
        memory_bytes: f64,
        limit: Option<f64>,
    ) -> Self {
        let note = limit.filter(|&l| memory_bytes > l).map(|l| {
            format!(
                "needs ≈ {}, over the memory limit of {}",
                format_bytes(memory_bytes),
                format_bytes(l)
            )
        });
        Candidate {
            solver,
            multiply_adds,
            memory_bytes,
            note,
        }
    }
}

/// The solver chosen for a problem, why, and what every solver would cost.
#[derive(Clone, Debug, PartialEq)]
pub struct SolverPlan {
    /// The solver that will run (never `Auto`).
    pub solver: Solver,
    /// One sentence: why this one.
    pub reason: String,
    /// Every solver's estimate.
    pub candidates: Vec<Candidate>,
}

impl fmt::Display for Solver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Solver {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        match s {
            "auto" => Ok(Solver::Auto),
            "covariance" => Ok(Solver::Covariance),
            "gram" => Ok(Solver::Gram),
            "svd" => Ok(Solver::Svd),
            "randomized" => Ok(Solver::Randomized),
            "power" => Ok(Solver::Power),
            "em" => Ok(Solver::Em),
            other => Err(format!(
                "unknown solver {other:?}; expected one of {}",
                Solver::NAMES.join(", ")
            )),
        }
    }
}

/// Builder for [`PcaParams`]; [`PcaBuilder::build`] validates everything once.
///
/// ```
/// use principal::{ComponentCount, PcaBuilder, Scaling, Solver};
/// let params = PcaBuilder::new()
///     .components(ComponentCount::VarianceFraction(0.95))
///     .scaling(Scaling::Standardize)
///     .ddof(1)
///     .solver(Solver::Svd)
///     .build()?;
/// assert_eq!(params.ddof(), 1);
/// assert!(PcaBuilder::new().ddof(2).build().is_err());
/// # Ok::<(), principal::PcaError>(())
/// ```
#[derive(Clone, Debug)]
pub struct PcaBuilder {
    components: ComponentCount,
    scaling: Scaling,
    ddof: usize,
    solver: Solver,
    iterative: IterativeOptions,
    memory_limit: Option<u64>,
    precision: Precision,
}

impl Default for PcaBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl PcaBuilder {
    /// Every component, centring only, ddof 1, automatic solver.
    pub fn new() -> Self {
        PcaBuilder {
            components: ComponentCount::All,
            scaling: Scaling::Center,
            ddof: 1,
            solver: Solver::Auto,
            iterative: IterativeOptions::default(),
            memory_limit: None,
            precision: Precision::Full,
        }
    }

    /// How many components to keep.
    pub fn components(mut self, components: ComponentCount) -> Self {
        self.components = components;
        self
    }

    /// Centre only, or centre and standardize.
    pub fn scaling(mut self, scaling: Scaling) -> Self {
        self.scaling = scaling;
        self
    }

    /// Delta degrees of freedom: 1 (sample covariance, the default) or 0 (divide by N).
    pub fn ddof(mut self, ddof: usize) -> Self {
        self.ddof = ddof;
        self
    }

    /// Which solver computes the eigenpairs.
    pub fn solver(mut self, solver: Solver) -> Self {
        self.solver = solver;
        self
    }

    /// Working-memory budget in bytes that `Auto` respects when choosing a solver.
    pub fn memory_limit(mut self, bytes: Option<u64>) -> Self {
        self.memory_limit = bytes;
        self
    }

    /// Seed, tolerance and iteration limits of the iterative solvers.
    pub fn iterative(mut self, options: IterativeOptions) -> Self {
        self.iterative = options;
        self
    }

    /// Full f64 products (the default) or mixed f32/f64 for `f32` input (see [`Precision`]).
    pub fn precision(mut self, precision: Precision) -> Self {
        self.precision = precision;
        self
    }

    /// Checks every parameter that can be checked without data.
    pub fn build(self) -> Result<PcaParams> {
        if let Some(t) = self.iterative.tolerance {
            if !(t > 0.0 && t < 1.0) {
                return Err(PcaError::ToleranceOutOfRange(t));
            }
        }
        if self.iterative.max_iterations == 0 {
            return Err(PcaError::ZeroIterations);
        }
        if self.ddof > 1 {
            return Err(PcaError::InvalidDdof(self.ddof));
        }
        match self.components {
            ComponentCount::Fixed(0) => return Err(PcaError::ZeroComponents),
            ComponentCount::VarianceFraction(f) if !(f > 0.0 && f <= 1.0) => {
                return Err(PcaError::VarianceFractionOutOfRange(f))
            }
            _ => {}
        }
        Ok(PcaParams {
            components: self.components,
            scaling: self.scaling,
            ddof: self.ddof,
            solver: self.solver,
            iterative: self.iterative,
            memory_limit: self.memory_limit,
            precision: self.precision,
        })
    }
}

/// Validated parameters: fit them to data with [`PcaParams::fit`] or to streamed
/// [`Moments`] with [`PcaParams::fit_moments`].
#[derive(Clone, Debug, PartialEq)]
pub struct PcaParams {
    components: ComponentCount,
    scaling: Scaling,
    ddof: usize,
    solver: Solver,
    iterative: IterativeOptions,
    memory_limit: Option<u64>,
    precision: Precision,
}

impl PcaParams {
    /// How many components to keep.
    pub fn components(&self) -> ComponentCount {
        self.components
    }
    /// Centre only, or standardize.
    pub fn scaling(&self) -> Scaling {
        self.scaling
    }
    /// Delta degrees of freedom (0 or 1).
    pub fn ddof(&self) -> usize {
        self.ddof
    }
    /// The requested solver (possibly `Auto`).
    pub fn solver(&self) -> Solver {
        self.solver
    }

    /// Settings of the iterative solvers.
    pub fn iterative(&self) -> IterativeOptions {
        self.iterative
    }

    /// The solver `fit` would use on `n_samples × n_features`, with the reason.
    pub fn resolve_solver(&self, n_samples: usize, n_features: usize) -> (Solver, String) {
        let plan = self.plan(n_samples, n_features);
        (plan.solver, plan.reason)
    }

    /// The full plan (every solver's estimated cost) for `n_samples × n_features`.
    pub fn plan(&self, n_samples: usize, n_features: usize) -> SolverPlan {
        let k = match self.components {
            ComponentCount::Fixed(k) => Some(k),
            ComponentCount::All | ComponentCount::VarianceFraction(_) => None,
        };
        self.solver
            .plan(n_samples, n_features, k, self.memory_limit)
    }

    /// The working-memory budget given to the builder.
    pub fn memory_limit(&self) -> Option<u64> {
        self.memory_limit
    }

    /// The arithmetic of the covariance solver's products for `f32` input.
    pub fn precision(&self) -> Precision {
        self.precision
    }

    /// Fits a model to `x` (N×D, one sample per row), `f32` or `f64`.
    pub fn fit<T: Real>(&self, x: MatRef<'_, T>) -> Result<PcaModel> {
        let (n, d) = (x.nrows(), x.ncols());
        self.check_shape(n, d)?;
        let (solver, _) = self.resolve_solver(n, d);
        match solver {
            Solver::Covariance => {
                let mut acc = MomentAccumulator::new(d).with_precision(self.precision);
                // The accumulator works through the rows in cache-sized pieces itself.
                acc.push(x)?;
                self.fit_resolved_moments(&acc.finish()?, solver)
            }
            Solver::Randomized | Solver::Power | Solver::Em => {
                let prep = Preprocessing::from_data(x, self.scaling, self.ddof)?;
                // One chunk: the products are as large as they can be, and nothing is copied.
                self.fit_iterative(&mut InMemory::new(x, n), prep, n, solver)
            }
            Solver::Gram | Solver::Svd | Solver::Auto => {
                let prep = Preprocessing::from_data(x, self.scaling, self.ddof)?;
                let wanted = self.wanted_vectors(n.min(d));
                let problem = Problem {
                    data: T::chunk(x),
                    mean: &prep.mean,
                    scale: prep.scale.as_deref(),
                    ddof: self.ddof,
                    n_components: wanted,
                };
                let spectrum = match solver {
                    Solver::Gram => solver::gram::solve(&problem)?,
                    _ => solver::svd::solve(&problem)?,
                };
                PcaModel::from_spectrum(self, spectrum, prep, n, solver)
            }
        }
    }

    /// Fits a model to data read chunk by chunk from `source`, which must yield the same rows
    /// on every pass. The covariance, randomized and power solvers never hold the data in
    /// memory; gram and svd collect it (they need it whole).
    pub fn fit_source(&self, source: &mut dyn ChunkSource) -> Result<PcaModel> {
        let d = source.n_features();
        if self.covariance_first(d) {
            let acc = MomentAccumulator::from_source(source, self.precision)?;
            let n = acc.n_samples();
            self.check_shape(n, d)?;
            let (solver, _) = self.resolve_solver(n, d);
            if solver == Solver::Covariance {
                return self.fit_resolved_moments(&acc.finish()?, solver);
            }
        }
        let mut columns = ColumnAccumulator::new(d);
        source.pass(&mut |chunk| columns.push_chunk(chunk))?;
        let n = columns.n;
        self.check_shape(n, d)?;
        let (solver, _) = self.resolve_solver(n, d);
        match solver {
            Solver::Randomized | Solver::Power | Solver::Em => {
                let prep = Preprocessing::from_sums(
                    columns.mean,
                    &columns.sum_sq,
                    n,
                    self.scaling,
                    self.ddof,
                );
                self.fit_iterative(source, prep, n, solver)
            }
            Solver::Covariance => {
                let acc = MomentAccumulator::from_source(source, self.precision)?;
                self.fit_resolved_moments(&acc.finish()?, solver)
            }
            Solver::Gram | Solver::Svd | Solver::Auto => {
                let mut whole = Mat::<f64>::zeros(n, d);
                let mut row = 0;
                source.pass(&mut |chunk| {
                    let rows = chunk.nrows();
                    if row + rows > n {
                        return Err(crate::source_error(
                            "the source gave more rows on a later pass than on the first",
                        ));
                    }
                    match chunk {
                        ChunkRef::F32(m) => whole
                            .as_mut()
                            .subrows_mut(row, rows)
                            .copy_from(Mat::from_fn(rows, d, |i, j| f64::from(m[(i, j)]))),
                        ChunkRef::F64(m) => whole.as_mut().subrows_mut(row, rows).copy_from(m),
                    }
                    row += rows;
                    Ok(())
                })?;
                PcaParams {
                    solver,
                    ..self.clone()
                }
                .fit(whole.as_ref())
            }
        }
    }

    /// The passes [`Self::fit_source`] makes over a source of `n_samples × n_features`, when
    /// they are known beforehand (for a progress display): one for the covariance solver, a
    /// pass of column sums and the planned iterations for randomized, and so on. `None` when
    /// iteration stops on convergence (the power solver, a tolerance) or the component count
    /// depends on the spectrum. Randomized block Krylov finishes early, in fewer passes, only
    /// when its basis spans every feature.
    pub fn planned_passes(&self, n_samples: usize, n_features: usize) -> Option<usize> {
        let (n, d) = (n_samples, n_features);
        let covariance_first = self.covariance_first(d);
        let (solver, _) = self.resolve_solver(n, d);
        if covariance_first && solver == Solver::Covariance {
            return Some(1);
        }
        // The moment pass (if it came first) and the pass of column sums.
        let before = usize::from(covariance_first) + 1;
        match solver {
            Solver::Covariance | Solver::Gram | Solver::Svd | Solver::Auto => Some(before + 1),
            Solver::Power | Solver::Em => None,
            Solver::Randomized => {
                let k = self.iterative_components(n, d)?;
                solver::randomized::known_passes(&self.iterative, k, n, d).map(|p| before + p)
            }
        }
    }

    /// The components an iterative solver computes for `n × d` data; `None` for a fraction of
    /// variance, which needs the whole spectrum.
    fn iterative_components(&self, n: usize, d: usize) -> Option<usize> {
        match self.components {
            ComponentCount::Fixed(k) => Some(k),
            ComponentCount::All => Some(n.min(d)),
            ComponentCount::VarianceFraction(_) => None,
        }
    }

    /// Whether `fit_source` accumulates moments in its first pass: a wide source is not worth a
    /// D×D accumulator unless asked for.
    fn covariance_first(&self, n_features: usize) -> bool {
        match self.solver {
            Solver::Covariance => true,
            Solver::Auto => n_features <= 4096,
            _ => false,
        }
    }

    fn fit_iterative(
        &self,
        source: &mut dyn ChunkSource,
        prep: Preprocessing,
        n: usize,
        solver: Solver,
    ) -> Result<PcaModel> {
        let d = prep.mean.len();
        let k = self
            .iterative_components(n, d)
            .ok_or_else(|| PcaError::SolverUnsuitable {
                solver: solver.name(),
                reason: "a fraction of variance needs the whole spectrum; give a number of components or use an exact solver".into(),
            })?;
        let mut problem = IterativeProblem {
            source,
            mean: &prep.mean,
            scale: prep.scale.as_deref(),
            centring: solver::Centring::choose(
                &prep.mean,
                prep.scale.as_deref(),
                prep.total_variance,
            ),
            n_samples: n,
            ddof: self.ddof,
            n_components: k,
            total_variance: prep.total_variance,
            options: self.iterative,
        };
        let spectrum = match solver {
            Solver::Power => solver::power::solve(&mut problem)?,
            Solver::Em => solver::em::solve(&mut problem)?,
            _ => solver::randomized::solve(&mut problem)?,
        };
        PcaModel::from_spectrum(self, spectrum, prep, n, solver)
    }

    /// Fits a model with the covariance solver to moments accumulated elsewhere (chunks of a
    /// file, threads, machines). The requested solver must be `Auto` or `Covariance`.
    pub fn fit_moments(&self, moments: &Moments) -> Result<PcaModel> {
        match self.solver {
            Solver::Auto | Solver::Covariance => {
                self.fit_resolved_moments(moments, Solver::Covariance)
            }
            other => Err(PcaError::SolverUnsuitable {
                solver: other.name(),
                reason: "streamed moments can only be fitted by the covariance solver".into(),
            }),
        }
    }

    fn fit_resolved_moments(&self, moments: &Moments, solver: Solver) -> Result<PcaModel> {
        let (n, d) = (moments.n_samples(), moments.n_features());
        self.check_shape(n, d)?;
        let prep = Preprocessing::from_moments(moments, self.scaling, self.ddof);
        let k = self.wanted_vectors(n.min(d));
        let spectrum = solver::covariance::solve_moments(moments, &prep, self.ddof, k)?;
        PcaModel::from_spectrum(self, spectrum, prep, n, solver)
    }

    /// How many eigenvectors a solver must return so that the count can be chosen afterwards.
    fn wanted_vectors(&self, max: usize) -> usize {
        match self.components {
            ComponentCount::Fixed(k) => k.min(max),
            ComponentCount::VarianceFraction(_) | ComponentCount::All => max,
        }
    }

    fn check_shape(&self, n: usize, d: usize) -> Result<()> {
        if n == 0 || d == 0 {
            return Err(PcaError::EmptyData {
                n_samples: n,
                n_features: d,
            });
        }
        if n <= self.ddof {
            return Err(PcaError::TooFewSamples {
                n_samples: n,
                ddof: self.ddof,
            });
        }
        if let ComponentCount::Fixed(k) = self.components {
            if k > n.min(d) {
                return Err(PcaError::TooManyComponents {
                    requested: k,
                    max: n.min(d),
                });
            }
        }
        Ok(())
    }
}

/// A byte count for people: decimal units (kB, MB, GB, TB, PB, EB) with three significant
/// digits, so that a plan's memory column stays readable from kilobytes to the N² of a Gram
/// matrix of ten million rows.
///
/// ```
/// use principal::format_bytes;
/// assert_eq!(format_bytes(950.0), "950 B");
/// assert_eq!(format_bytes(999.7), "1.00 kB");
/// assert_eq!(format_bytes(1_000_000.0), "1.00 MB");
/// assert_eq!(format_bytes(16_000_000_000.0), "16.0 GB");
/// assert_eq!(format_bytes(1.6e15), "1.60 PB");
/// ```
pub fn format_bytes(bytes: f64) -> String {
    const UNITS: [&str; 6] = ["kB", "MB", "GB", "TB", "PB", "EB"];
    if bytes.is_nan() || bytes < 999.5 {
        return format!("{bytes:.0} B");
    }
    let mut value = bytes;
    let mut unit = 0;
    while value >= 999.5 && unit < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    let unit = UNITS[unit - 1];
    match value {
        v if v >= 99.95 => format!("{v:.0} {unit}"),
        v if v >= 9.995 => format!("{v:.1} {unit}"),
        v => format!("{v:.2} {unit}"),
    }
}
