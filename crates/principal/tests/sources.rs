//! Fitting from a re-readable source: the same model as in memory for every solver, the
//! passes planned beforehand are the passes made, and a source's errors come through whole.

use crate::common;

use common::{EVERY_SOLVER, max_abs_diff, signal_plus_noise};
use principal::faer::Mat;
use principal::{
    ChunkRef, ChunkSource, ComponentCount, InMemory, IterativeOptions, PcaBuilder, PcaError,
    RandomizedMethod, Result, Scaling, Solver,
};
/// A source that counts its passes and hands out `chunk` rows at a time, like a file.
struct CountingSource {
    data: Mat<f32>,
    chunk: usize,
    passes: usize,
}

impl ChunkSource for CountingSource {
    fn n_features(&self) -> usize {
        self.data.ncols()
    }
    fn pass(&mut self, visit: &mut dyn FnMut(ChunkRef<'_>) -> Result<()>) -> Result<()> {
        self.passes += 1;
        InMemory::new(self.data.as_ref(), self.chunk).pass(visit)
    }
}

#[test]
fn fitting_from_a_chunked_source_equals_the_in_memory_fit() {
    let x64 = signal_plus_noise(257, 12, 5, 0.1, 3);
    let x = Mat::from_fn(257, 12, |i, j| x64[(i, j)] as f32);
    for solver in EVERY_SOLVER {
        for scaling in [Scaling::Centre, Scaling::Standardize] {
            let params = PcaBuilder::new()
                .components(ComponentCount::Fixed(4))
                .scaling(scaling)
                .solver(solver)
                .iterative(IterativeOptions {
                    seed: 7,
                    ..Default::default()
                })
                .build()
                .unwrap();
            let memory = params.fit(x.as_ref()).unwrap();
            let mut source = CountingSource {
                data: x.clone(),
                chunk: 10,
                passes: 0,
            };
            let streamed = params.fit_source(&mut source).unwrap();
            assert_eq!(streamed.solver(), memory.solver());
            let tol = 1e-10 * memory.total_variance();
            for (a, b) in streamed
                .explained_variance()
                .iter()
                .zip(memory.explained_variance())
            {
                assert!((a - b).abs() <= tol, "{solver} {scaling:?}: {a} vs {b}");
            }
            let diff = max_abs_diff(streamed.components(), memory.components());
            assert!(
                diff < 1e-8,
                "{solver} {scaling:?}: components differ by {diff}"
            );
            if solver == Solver::Covariance {
                assert_eq!(source.passes, 1, "covariance is one pass");
            }
        }
    }
}

/// `planned_passes` is what `fit_source` does: for every solver and setting whose count is
/// known beforehand, tall and wide (auto's covariance first or not), the passes made.
#[test]
fn planned_passes_are_the_passes_made() {
    let mut planned_some = 0;
    for (n, d) in [(257, 12), (40, 1500), (60, 4200)] {
        let x64 = signal_plus_noise(n, d, 5, 0.1, 3);
        let x = Mat::from_fn(n, d, |i, j| x64[(i, j)] as f32);
        for solver in EVERY_SOLVER {
            if solver == Solver::Covariance && d > 1000 {
                continue; // a D² eigendecomposition: slow in a debug build
            }
            let settings = [
                (
                    ComponentCount::Fixed(4),
                    None,
                    None,
                    RandomizedMethod::BlockKrylov,
                ),
                (
                    ComponentCount::Fixed(4),
                    Some(2),
                    None,
                    RandomizedMethod::Subspace,
                ),
                (
                    ComponentCount::Fixed(4),
                    None,
                    None,
                    RandomizedMethod::Subspace,
                ),
                (
                    ComponentCount::Fixed(4),
                    None,
                    Some(1e-6),
                    RandomizedMethod::BlockKrylov,
                ),
                (
                    ComponentCount::All,
                    None,
                    None,
                    RandomizedMethod::BlockKrylov,
                ),
            ];
            for (components, power_iterations, tolerance, randomized_method) in settings {
                let params = PcaBuilder::new()
                    .components(components)
                    .solver(solver)
                    .iterative(IterativeOptions {
                        seed: 7,
                        power_iterations,
                        tolerance,
                        randomized_method,
                        ..Default::default()
                    })
                    .build()
                    .unwrap();
                let mut source = CountingSource {
                    data: x.clone(),
                    chunk: 50,
                    passes: 0,
                };
                let model = params.fit_source(&mut source).unwrap();
                let label = format!(
                    "{n}×{d} {solver} → {} {components:?} q {power_iterations:?} tol {tolerance:?} {randomized_method:?}",
                    model.solver()
                );
                match params.planned_passes(n, d) {
                    Some(p) => {
                        planned_some += 1;
                        assert_eq!(source.passes, p, "{label}");
                    }
                    None => assert!(
                        tolerance.is_some() || matches!(model.solver(), Solver::Power | Solver::Em),
                        "{label}: unknown"
                    ),
                }
            }
        }
    }
    assert!(planned_some >= 20, "{planned_some}");
}

#[test]
fn source_errors_pass_through_unchanged() {
    /// A reader's error, as `principal-io` would give one.
    #[derive(Debug)]
    struct Unreadable;
    impl std::fmt::Display for Unreadable {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("shard.csv: line 7: unreadable")
        }
    }
    impl std::error::Error for Unreadable {}
    struct Broken;
    impl ChunkSource for Broken {
        fn n_features(&self) -> usize {
            3
        }
        fn pass(&mut self, _: &mut dyn FnMut(ChunkRef<'_>) -> Result<()>) -> Result<()> {
            Err(PcaError::Source(Box::new(Unreadable)))
        }
    }
    let err = PcaBuilder::new()
        .build()
        .unwrap()
        .fit_source(&mut Broken)
        .unwrap_err();
    assert_eq!(err.to_string(), "shard.csv: line 7: unreadable");
    let PcaError::Source(inner) = &err else {
        panic!("not a source error: {err:?}")
    };
    assert!(inner.downcast_ref::<Unreadable>().is_some(), "{inner:?}");
}
