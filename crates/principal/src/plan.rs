//! `auto`: every solver's estimated cost on a problem, the choice and the reason for it.

use std::fmt;

use crate::options::{IterativeOptions, Solver};
use crate::solver::randomized;

/// The error estimate (`max ‖S b − θ b‖ / θ₁`) auto's randomized fit of sparse data iterates
/// to when no tolerance or pass count is given (see `PcaParams::sparse_defaults`).
pub(crate) const SPARSE_TOLERANCE: f64 = 1e-5;

/// The most passes auto's randomized fit of sparse data makes to reach [`SPARSE_TOLERANCE`]:
/// passes of 16 columns (`randomized::LANCZOS_WIDTH`), about as many products as the 60 passes
/// of 60 columns allowed before.
pub(crate) const SPARSE_MAX_PASSES: usize = 200;

/// What auto's reason says of the randomized fit of sparse data.
const SPARSE_ITERATION: &str = "block Krylov until its error estimate is at most 1e-5 (block \
    Lanczos, blocks of 16 columns: about 30 passes; at most 200) unless a tolerance or pass \
    count is given: sparse single-cell spectra decay slowly, and the few passes of dense data \
    leave their eigenvalues far from exact";

/// Passes the cost model counts for auto's randomized fit of sparse data: about what
/// [`SPARSE_TOLERANCE`] took on the benchmark's single-cell matrix (29, of 16 columns).
const SPARSE_EXPECTED_PASSES: f64 = 30.0;

/// The solver chosen for a problem, why, and what every solver would cost.
///
/// ```
/// use principal::{Solver, SolverPlan};
/// // Tall data: the D×D covariance matrix is the cheapest exact route.
/// let plan = SolverPlan::new(Solver::Auto, 100_000, 50, Some(5), None);
/// assert_eq!(plan.solver, Solver::Covariance);
/// assert_eq!(plan.candidates.len(), 6);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct SolverPlan {
    /// The solver that will run (never `Auto`).
    pub solver: Solver,
    /// One sentence: why this one.
    pub reason: String,
    /// Every solver's estimate.
    pub candidates: Vec<Candidate>,
}

/// One solver's estimated cost on a problem (see [`SolverPlan::new`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    /// The solver.
    pub solver: Solver,
    /// Estimated multiply-adds; `None` when unknown in advance (power, em).
    pub multiply_adds: Option<f64>,
    /// Estimated working memory in bytes, not counting the data.
    pub memory_bytes: f64,
    /// Why the solver cannot be used here, if it cannot.
    pub unsuitable: Option<Unsuitable>,
}

/// Why a solver cannot be used on a problem.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum Unsuitable {
    /// Its working memory is over the memory limit.
    OverMemoryLimit {
        /// The memory it needs, in bytes.
        needed_bytes: f64,
        /// The limit, in bytes.
        limit_bytes: f64,
    },
    /// It computes a fixed number of components, and the count depends on the spectrum (a
    /// fraction of variance) or is every component.
    NeedsComponentCount,
    /// It needs the whole data in one process, and the fit runs over several (gram, svd).
    NeedsOneProcess,
    /// It needs the data dense, and the data is sparse (gram, svd).
    NeedsDense,
}

impl fmt::Display for Unsuitable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unsuitable::OverMemoryLimit {
                needed_bytes,
                limit_bytes,
            } => write!(
                f,
                "needs ≈ {needed_bytes:.0} bytes, over the memory limit of {limit_bytes:.0} bytes"
            ),
            Unsuitable::NeedsComponentCount => f.write_str("needs a fixed number of components"),
            Unsuitable::NeedsOneProcess => f.write_str("needs the whole data in one process"),
            Unsuitable::NeedsDense => f.write_str("needs the data dense, and it is sparse"),
        }
    }
}

impl Candidate {
    fn new(
        solver: Solver,
        multiply_adds: Option<f64>,
        memory_bytes: f64,
        limit: Option<f64>,
    ) -> Self {
        let unsuitable = limit
            .filter(|&l| memory_bytes > l)
            .map(|l| Unsuitable::OverMemoryLimit {
                needed_bytes: memory_bytes,
                limit_bytes: l,
            });
        Candidate {
            solver,
            multiply_adds,
            memory_bytes,
            unsuitable,
        }
    }
}

impl SolverPlan {
    /// Estimated cost of every solver on `n_samples × n_features` data when `n_components` are
    /// wanted (`None`: the count depends on the spectrum, so an exact solver is needed), within
    /// `memory_limit` bytes of working memory; and the choice: `requested` itself unless it is
    /// `Auto`.
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
    pub fn new(
        requested: Solver,
        n_samples: usize,
        n_features: usize,
        n_components: Option<usize>,
        memory_limit: Option<u64>,
    ) -> SolverPlan {
        Self::across(
            requested,
            n_samples,
            n_features,
            n_components,
            memory_limit,
            1,
        )
    }

    /// [`SolverPlan::new`] for a fit whose data is spread over `processes` processes: when
    /// there are several, gram and svd (which need the whole data in one process) are
    /// unsuitable, so auto chooses covariance or randomized.
    ///
    /// ```
    /// use principal::{Solver, SolverPlan};
    /// // Wide data, every component: gram in one process, covariance over several.
    /// assert_eq!(SolverPlan::new(Solver::Auto, 200, 3_000, None, None).solver, Solver::Gram);
    /// let plan = SolverPlan::across(Solver::Auto, 200, 3_000, None, None, 4);
    /// assert_eq!(plan.solver, Solver::Covariance);
    /// ```
    pub fn across(
        requested: Solver,
        n_samples: usize,
        n_features: usize,
        n_components: Option<usize>,
        memory_limit: Option<u64>,
        processes: usize,
    ) -> SolverPlan {
        let (n, d) = (n_samples as f64, n_features as f64);
        let small = n.min(d);
        let k = n_components.map(|k| k as f64);
        let width = k.map(|k| (k + 10.0).min(small));
        let passes = n_components.map(|k| {
            let options = IterativeOptions::default();
            randomized::default_passes(&options, k, n_samples, n_features) as f64
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
                c.unsuitable = Some(Unsuitable::NeedsComponentCount);
            }
        }
        if processes > 1 {
            let whole = |c: &&mut Candidate| matches!(c.solver, Solver::Gram | Solver::Svd);
            for c in candidates.iter_mut().filter(whole) {
                c.unsuitable = Some(Unsuitable::NeedsOneProcess);
            }
        }
        let cost = |s: Solver| {
            candidates
                .iter()
                .find(|c| c.solver == s)
                .and_then(|c| c.multiply_adds)
        };
        if requested != Solver::Auto {
            let reason = format!("{} chosen by the caller", requested.name());
            return SolverPlan {
                solver: requested,
                reason,
                candidates,
            };
        }
        let fits = |s: Solver| {
            candidates
                .iter()
                .any(|c| c.solver == s && c.unsuitable.is_none())
        };
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
                    Solver::Covariance => {
                        format!("the {n_features}×{n_features} covariance matrix")
                    }
                    Solver::Gram => format!("the {n_samples}×{n_samples} Gram matrix"),
                    _ => format!("a thin SVD of the {n_samples}×{n_features} data"),
                };
                (
                    e,
                    format!(
                        "exact; {route} is the cheapest exact route (≈ {:.2e} multiply-adds)",
                        cost(e).unwrap_or(f64::NAN)
                    ),
                )
            }
            (None, Some(r)) => (
                Solver::Randomized,
                format!(
                    "no exact solver fits in the memory limit; randomized ≈ {r:.2e} multiply-adds"
                ),
            ),
            (None, None) => (
                Solver::Covariance,
                "nothing fits in the memory limit; covariance needs the least for an exact answer"
                    .into(),
            ),
        };
        SolverPlan {
            solver,
            reason,
            candidates,
        }
    }
}

impl SolverPlan {
    /// The plan for sparse data of `n_samples × n_features` with `nnz` stored entries, never
    /// densified: gram and svd are unsuitable, and the costs count the entries instead of
    /// N·D:
    /// - covariance: the cross-products of every row's entries, ≈ nnz²/N (rows of equal
    ///   length), plus one D×D merge per 4,096 rows and 10·D³ for the eigensolver; memory
    ///   3·D² doubles (the accumulator, a piece's cross-products, the eigensolver's);
    /// - randomized: under auto about 30 passes of 2·nnz·16 (block Lanczos of 16 columns to
    ///   an error estimate of 1e-5, `SPARSE_TOLERANCE`), memory counted as D·(k + 30 + 12·16)
    ///   doubles (a basis of k + 30 + 8·16 columns and a pass's blocks); chosen by the caller,
    ///   its default passes of 2·nnz·(k + 10), memory 12·D·(k + 10) doubles (the block Krylov
    ///   basis grows to 10·D·(k + 10) before a restart);
    /// - power, em: unknown passes of 2·nnz·k.
    ///
    /// Auto takes covariance when the count depends on the spectrum, else the cheaper of
    /// covariance and randomized unless randomized is less than 4× cheaper (exact answers are
    /// worth a little time), within the memory limit; the reason gives the sparsity.
    ///
    /// ```
    /// use principal::{Solver, SolverPlan};
    /// // A single-cell atlas: 200,000 cells × 20,000 genes at 2.4% non-zero, 50 components.
    /// let plan = SolverPlan::sparse(Solver::Auto, 200_000, 20_000, 96_000_000, Some(50), None);
    /// assert_eq!(plan.solver, Solver::Randomized);
    /// assert!(plan.reason.contains("2.40% non-zero"));
    /// // 1,000 highly variable genes at 10% non-zero: the covariance matrix is cheap.
    /// let plan = SolverPlan::sparse(Solver::Auto, 200_000, 1_000, 20_000_000, Some(50), None);
    /// assert_eq!(plan.solver, Solver::Covariance);
    /// ```
    pub fn sparse(
        requested: Solver,
        n_samples: usize,
        n_features: usize,
        nnz: usize,
        n_components: Option<usize>,
        memory_limit: Option<u64>,
    ) -> SolverPlan {
        let (n, d, z) = (n_samples as f64, n_features as f64, nnz as f64);
        let small = n.min(d);
        let k = n_components.map(|k| k as f64);
        let block = k.map(|k| (k + 10.0).min(small));
        // Auto: block Lanczos of narrow blocks to a tolerance (`randomized::lanczos_shape`).
        let lanczos = randomized::LANCZOS_WIDTH as f64;
        let (width, passes) = if requested == Solver::Auto {
            (
                block.map(|b| b.min(lanczos)),
                k.map(|_| SPARSE_EXPECTED_PASSES),
            )
        } else {
            let options = IterativeOptions::default();
            let passes = n_components
                .map(|k| randomized::default_passes(&options, k, n_samples, n_features) as f64);
            (block, passes)
        };
        let randomized_memory = match (requested, k) {
            (Solver::Auto, Some(k)) => {
                let extra = randomized::LANCZOS_EXTRA as f64;
                8.0 * d * (k + extra + 12.0 * lanczos).min(small)
            }
            _ => 96.0 * d * block.unwrap_or(small),
        };
        let limit = memory_limit.map(|m| m as f64);
        let per_row = z / n.max(1.0);
        let mut candidates = vec![
            Candidate::new(
                Solver::Covariance,
                Some(n * per_row * per_row + (n / 4096.0).ceil() * d * d + 10.0 * d * d * d),
                24.0 * d * d,
                limit,
            ),
            Candidate::new(Solver::Gram, None, 0.0, None),
            Candidate::new(Solver::Svd, None, 0.0, None),
            Candidate::new(
                Solver::Randomized,
                width.zip(passes).map(|(w, p)| p * 2.0 * z * w),
                randomized_memory,
                limit,
            ),
            Candidate::new(Solver::Power, None, 32.0 * d * k.unwrap_or(small), limit),
            Candidate::new(Solver::Em, None, 32.0 * d * k.unwrap_or(small), limit),
        ];
        for c in &mut candidates {
            if matches!(c.solver, Solver::Gram | Solver::Svd) {
                c.unsuitable = Some(Unsuitable::NeedsDense);
            } else if n_components.is_none() && !c.solver.is_exact() {
                c.unsuitable = Some(Unsuitable::NeedsComponentCount);
            }
        }
        let density = 100.0 * z / (n * d).max(1.0);
        let sparsity = format!("sparse, {nnz} non-zeros ({density:.2}% non-zero)");
        if requested != Solver::Auto {
            let reason = format!("{} chosen by the caller; {sparsity}", requested.name());
            return SolverPlan {
                solver: requested,
                reason,
                candidates,
            };
        }
        let usable = |s: Solver| {
            candidates
                .iter()
                .find(|c| c.solver == s && c.unsuitable.is_none())
                .and_then(|c| c.multiply_adds)
        };
        let (solver, reason) = match (usable(Solver::Covariance), usable(Solver::Randomized)) {
            (Some(c), Some(r)) if r * 4.0 < c => (
                Solver::Randomized,
                format!(
                    "{sparsity}: randomized ≈ {r:.2e} multiply-adds is over 4× cheaper than the \
                     exact covariance route (≈ {c:.2e}); {SPARSE_ITERATION}"
                ),
            ),
            (Some(c), _) => (
                Solver::Covariance,
                format!(
                    "{sparsity}: exact; the {n_features}×{n_features} covariance matrix of the \
                     entries' cross-products (≈ {c:.2e} multiply-adds)"
                ),
            ),
            (None, Some(r)) => (
                Solver::Randomized,
                format!(
                    "{sparsity}: the covariance matrix does not fit in the memory limit; \
                     randomized ≈ {r:.2e} multiply-adds; {SPARSE_ITERATION}"
                ),
            ),
            // Nothing fits: the route that needs the least memory, so that a limit far below
            // the D×D covariance matrix (20,000 genes: 9.6 GB) is not answered with it.
            (None, None) => {
                let memory = |s: Solver| {
                    candidates
                        .iter()
                        .find(|c| c.solver == s)
                        .map_or(f64::INFINITY, |c| c.memory_bytes)
                };
                let (covariance, randomized) =
                    (memory(Solver::Covariance), memory(Solver::Randomized));
                if n_components.is_some() && randomized < covariance {
                    (
                        Solver::Randomized,
                        format!(
                            "{sparsity}: nothing fits in the memory limit; randomized needs the \
                             least (≈ {:.0} MB, the covariance route ≈ {:.0} MB)",
                            randomized / 1e6,
                            covariance / 1e6
                        ),
                    )
                } else {
                    (
                        Solver::Covariance,
                        format!(
                            "{sparsity}: nothing fits in the memory limit; covariance needs the \
                             least for an exact answer"
                        ),
                    )
                }
            }
        };
        SolverPlan {
            solver,
            reason,
            candidates,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A budget below a solver's memory rules it out, and says by how much; a count that
    /// depends on the spectrum rules out the iterative solvers; nothing fitting falls back to
    /// covariance.
    #[test]
    fn candidates_over_the_budget_or_without_a_count_are_unsuitable() {
        let plan = SolverPlan::new(Solver::Auto, 2_000, 20_000, Some(10), Some(100_000_000));
        let covariance = &plan.candidates[0];
        assert_eq!(covariance.solver, Solver::Covariance);
        assert_eq!(
            covariance.unsuitable,
            Some(Unsuitable::OverMemoryLimit {
                needed_bytes: 16.0 * 20_000.0 * 20_000.0,
                limit_bytes: 1e8,
            })
        );
        assert_eq!(
            covariance.unsuitable.unwrap().to_string(),
            "needs ≈ 6400000000 bytes, over the memory limit of 100000000 bytes"
        );
        assert_eq!(plan.solver, Solver::Randomized);
        let spectrum = SolverPlan::new(Solver::Auto, 2_000, 20_000, None, None);
        for c in &spectrum.candidates {
            let wanted = (!c.solver.is_exact()).then_some(Unsuitable::NeedsComponentCount);
            assert_eq!(c.unsuitable, wanted, "{}", c.solver);
        }
        assert!(spectrum.solver.is_exact());
        let nothing = SolverPlan::new(Solver::Auto, 1_000_000, 1_000_000, Some(5), Some(1));
        assert_eq!(nothing.solver, Solver::Covariance);
        let chosen = SolverPlan::new(Solver::Power, 10, 10, Some(2), None);
        assert_eq!(
            (chosen.solver, chosen.reason.as_str()),
            (Solver::Power, "power chosen by the caller")
        );
    }

    /// 20,000 genes within 32 MB: neither route fits, and the D×D covariance (9.6 GB) must not
    /// be the answer when randomized needs 44 MB; without a count only covariance can answer.
    #[test]
    fn sparse_data_over_every_budget_takes_the_route_that_needs_the_least_memory() {
        let plan = SolverPlan::sparse(
            Solver::Auto,
            20_000,
            20_000,
            10_000_000,
            Some(50),
            Some(32 << 20),
        );
        let over = |s: Solver| {
            plan.candidates.iter().any(|c| {
                c.solver == s && matches!(c.unsuitable, Some(Unsuitable::OverMemoryLimit { .. }))
            })
        };
        assert!(over(Solver::Covariance) && over(Solver::Randomized));
        assert_eq!(plan.solver, Solver::Randomized, "{}", plan.reason);
        assert!(
            plan.reason.contains("randomized needs the least"),
            "{}",
            plan.reason
        );
        let plan = SolverPlan::sparse(
            Solver::Auto,
            20_000,
            20_000,
            10_000_000,
            None,
            Some(32 << 20),
        );
        assert_eq!(plan.solver, Solver::Covariance, "{}", plan.reason);
    }
}
