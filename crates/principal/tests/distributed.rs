//! Fits over several processes ([`PcaParams::fit_distributed`]), with the ranks simulated by
//! threads sharing a [`Collective`] in memory: every split of the rows (uneven, with empty
//! ranks, under an offset of 1e6) gives every rank the same model, equal to one process's to
//! rounding; a failing rank stops every rank promptly with its message.

use crate::common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use common::random_matrix;
use principal::faer::{Mat, MatRef};
use principal::{
    ChunkRef, ChunkSource, Collective, ComponentCount, InMemory, IterativeOptions, PcaBuilder,
    PcaError, PcaModel, PcaParams, Scaling, SingleProcess, Solver,
};

/// What the ranks of one simulated job share.
struct Shared {
    barrier: Barrier,
    slots: Mutex<Vec<Vec<f64>>>,
    bytes: Mutex<Vec<u8>>,
    announced: Vec<AtomicBool>,
    collectives: AtomicUsize,
}

/// One rank of a job of threads: sums in rank order, so every rank gets the same bits.
struct Threads {
    rank: usize,
    shared: Arc<Shared>,
}

impl Threads {
    fn job(size: usize) -> Vec<Threads> {
        let shared = Arc::new(Shared {
            barrier: Barrier::new(size),
            slots: Mutex::new(vec![Vec::new(); size]),
            bytes: Mutex::new(Vec::new()),
            announced: (0..size).map(|_| AtomicBool::new(false)).collect(),
            collectives: AtomicUsize::new(0),
        });
        (0..size)
            .map(|rank| Threads {
                rank,
                shared: shared.clone(),
            })
            .collect()
    }
}

impl Collective for Threads {
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        self.shared.announced.len()
    }
    fn sum(&self, values: &mut [f64]) {
        self.shared.collectives.fetch_add(1, Ordering::Relaxed);
        self.shared.slots.lock().unwrap()[self.rank] = values.to_vec();
        self.shared.barrier.wait();
        {
            let slots = self.shared.slots.lock().unwrap();
            assert!(
                slots.iter().all(|s| s.len() == values.len()),
                "sums of one length"
            );
            for (i, v) in values.iter_mut().enumerate() {
                *v = slots.iter().fold(0.0, |a, s| a + s[i]);
            }
        }
        self.shared.barrier.wait();
    }
    fn broadcast(&self, values: &mut [f64], root: usize) {
        if self.rank == root {
            self.shared.slots.lock().unwrap()[root] = values.to_vec();
        }
        self.shared.barrier.wait();
        values.copy_from_slice(&self.shared.slots.lock().unwrap()[root]);
        self.shared.barrier.wait();
    }
    fn broadcast_bytes(&self, bytes: &mut Vec<u8>, root: usize) {
        if self.rank == root {
            *self.shared.bytes.lock().unwrap() = bytes.clone();
        }
        self.shared.barrier.wait();
        *bytes = self.shared.bytes.lock().unwrap().clone();
        self.shared.barrier.wait();
    }
    fn announce_failure(&self) {
        self.shared.announced[self.rank].store(true, Ordering::SeqCst);
    }
    fn failure_announced(&self) -> bool {
        let others = self.shared.announced.iter().enumerate();
        others
            .filter(|&(r, _)| r != self.rank)
            .any(|(_, a)| a.load(Ordering::SeqCst))
    }
}

/// Runs `fit` on every rank of a job of `parts.len()` threads, rank r with `parts[r]` (dense
/// or sparse rows).
fn on_ranks<S: Send>(
    parts: Vec<S>,
    fit: impl Fn(&mut S, &Threads) -> principal::Result<PcaModel> + Sync,
) -> Vec<principal::Result<PcaModel>> {
    let job = Threads::job(parts.len());
    std::thread::scope(|scope| {
        let handles: Vec<_> = parts
            .into_iter()
            .zip(job)
            .map(|(mut part, rank)| {
                let fit = &fit;
                scope.spawn(move || fit(&mut part, &rank))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// Contiguous parts of the rows of sizes `sizes` (which add up to the rows), in chunks of 37.
fn split<'a>(x: MatRef<'a, f64>, sizes: &[usize]) -> Vec<InMemory<'a, f64>> {
    assert_eq!(sizes.iter().sum::<usize>(), x.nrows());
    let mut start = 0;
    sizes
        .iter()
        .map(|&n| {
            let part = InMemory::new(x.subrows(start, n), 37);
            start += n;
            part
        })
        .collect()
}

/// Splits of `n` rows: one rank; two, even and uneven; three with an empty rank; four with one
/// row on a rank.
fn splits(n: usize) -> Vec<Vec<usize>> {
    vec![
        vec![n],
        vec![n / 2, n - n / 2],
        vec![7, n - 7],
        vec![n / 3, 0, n - n / 3],
        vec![1, n / 4, n / 2, n - 1 - n / 4 - n / 2],
    ]
}

/// Same mean, variances and components (up to sign) as `reference`, to `tolerance` relative.
fn assert_same_model(found: &PcaModel, reference: &PcaModel, tolerance: f64, what: &str) {
    assert_eq!(found.n_samples(), reference.n_samples(), "{what}");
    assert_eq!(found.n_components(), reference.n_components(), "{what}");
    if !matches!(reference.solver(), Solver::Gram | Solver::Svd) {
        assert_eq!(found.solver(), reference.solver(), "{what}: solver");
    }
    for (a, b) in found.mean().iter().zip(reference.mean()) {
        assert!(
            (a - b).abs() <= 1e-14 * b.abs().max(1.0),
            "{what}: mean {a} vs {b}"
        );
    }
    let top = reference.explained_variance()[0];
    for (a, b) in found
        .explained_variance()
        .iter()
        .zip(reference.explained_variance())
    {
        assert!(
            (a - b).abs() <= tolerance * top,
            "{what}: variance {a} vs {b}"
        );
    }
    let (c, r) = (found.components(), reference.components());
    for i in 0..r.nrows() {
        let dot: f64 = (0..r.ncols()).map(|j| c[(i, j)] * r[(i, j)]).sum();
        assert!(dot >= 1.0 - tolerance, "{what}: component {i}: cos {dot}");
    }
    assert!(
        (found.total_variance() - reference.total_variance()).abs()
            <= 1e-12 * reference.total_variance(),
        "{what}: total variance"
    );
}

fn params(solver: Solver, k: usize, scaling: Scaling) -> PcaParams {
    PcaBuilder::new()
        .solver(solver)
        .components(ComponentCount::Fixed(k))
        .scaling(scaling)
        .iterative(IterativeOptions {
            seed: 5,
            ..Default::default()
        })
        .build()
        .unwrap()
}

/// Every rank's model is the same, bit for bit, and equals one process's to `tolerance`.
fn check_every_split(x: &Mat<f64>, params: &PcaParams, tolerance: f64, what: &str) {
    let reference = params
        .fit_source(&mut InMemory::new(x.as_ref(), 100))
        .unwrap();
    for sizes in splits(x.nrows()) {
        let models: Vec<PcaModel> = on_ranks(split(x.as_ref(), &sizes), |part, rank| {
            params.fit_distributed(part, rank)
        })
        .into_iter()
        .map(|m| m.unwrap())
        .collect();
        for m in &models[1..] {
            assert_eq!(m, &models[0], "{what} {sizes:?}: ranks differ");
        }
        assert_same_model(
            &models[0],
            &reference,
            tolerance,
            &format!("{what} {sizes:?}"),
        );
    }
}

#[test]
fn covariance_over_every_split_equals_one_process() {
    for offset in [0.0, 1e6] {
        let x = random_matrix(600, 9, None, offset, 1);
        for scaling in [Scaling::Centre, Scaling::Standardize] {
            let what = format!("covariance, offset {offset}, {scaling:?}");
            // At 1e6, any two ways of summing the rows (chunks of 37 or 100, in parts) differ
            // by about ε·1e6 relative to the spread (the means' rounding), within 1e-10.
            let tolerance = if offset == 0.0 { 1e-12 } else { 1e-10 };
            check_every_split(
                &x,
                &params(Solver::Covariance, 4, scaling),
                tolerance,
                &what,
            );
            // Auto over several processes keeps covariance for tall data.
            check_every_split(&x, &params(Solver::Auto, 4, scaling), tolerance, &what);
        }
    }
}

#[test]
fn iterative_solvers_over_every_split_equal_one_process() {
    for offset in [0.0, 1e6] {
        let x = common::signal_plus_noise(500, 30, 4, 0.05, 2);
        let x = Mat::from_fn(x.nrows(), x.ncols(), |i, j| x[(i, j)] + offset);
        for solver in [Solver::Randomized, Solver::Em, Solver::Power] {
            for scaling in [Scaling::Centre, Scaling::Standardize] {
                let what = format!("{solver}, offset {offset}, {scaling:?}");
                check_every_split(&x, &params(solver, 3, scaling), 1e-8, &what);
            }
        }
    }
}

#[test]
fn auto_avoids_gram_and_svd_and_they_are_refused_over_several_processes() {
    // Wide: one process would take gram.
    let x = random_matrix(40, 300, None, 3.0, 4);
    let all = PcaBuilder::new().build().unwrap();
    let one = all.fit(x.as_ref()).unwrap();
    assert_eq!(one.solver(), Solver::Gram);
    let models = on_ranks(split(x.as_ref(), &[20, 20]), |part, rank| {
        all.fit_distributed(part, rank)
    });
    for m in &models {
        let m = m.as_ref().unwrap();
        assert_eq!(m.solver(), Solver::Covariance);
        // Every variance; the components but the last, whose variance is 0 (40 centred rows
        // have rank 39), so its direction is any in the null space.
        let top = one.explained_variance()[0];
        assert_eq!(m.n_components(), 40);
        for (a, b) in m.explained_variance().iter().zip(one.explained_variance()) {
            assert!((a - b).abs() <= 1e-12 * top, "variance {a} vs {b}");
        }
        for i in 0..39 {
            let dot: f64 = (0..300)
                .map(|j| m.components()[(i, j)] * one.components()[(i, j)])
                .sum();
            assert!(dot >= 1.0 - 1e-9, "component {i}: cos {dot}");
        }
    }
    for solver in [Solver::Gram, Solver::Svd] {
        let p = PcaBuilder::new().solver(solver).build().unwrap();
        for e in on_ranks(split(x.as_ref(), &[20, 20]), |part, rank| {
            p.fit_distributed(part, rank)
        }) {
            let e = e.unwrap_err().to_string();
            assert!(e.contains("needs the whole data in one process"), "{e}");
        }
    }
}

#[test]
fn errors_every_rank_reaches_alike_are_each_ranks_own() {
    // 10 features: 11 components are too many only for the whole data.
    let x = random_matrix(30, 10, None, 0.0, 6);
    let p = params(Solver::Covariance, 11, Scaling::Centre);
    for e in on_ranks(split(x.as_ref(), &[15, 15]), |part, rank| {
        p.fit_distributed(part, rank)
    }) {
        assert!(
            matches!(e, Err(PcaError::TooManyComponents { .. })),
            "{e:?}"
        );
    }
    // Ranks whose data has different widths.
    let y = random_matrix(30, 11, None, 0.0, 6);
    let parts = vec![
        InMemory::new(x.as_ref(), 10),
        InMemory::new(y.as_ref(), 10),
        InMemory::new(x.as_ref(), 10),
    ];
    for e in on_ranks(parts, |part, rank| p.fit_distributed(part, rank)) {
        let e = e.unwrap_err().to_string();
        assert_eq!(e, "rank 1: its data has 11 features where rank 0's has 10");
    }
}

/// A part that fails at its `fail_at`-th chunk of a pass, and is slow (a few ms per chunk)
/// otherwise; counts the chunks it gave.
struct Part<'a> {
    data: InMemory<'a, f64>,
    fail_at: Option<usize>,
    given: usize,
}

impl ChunkSource for Part<'_> {
    fn n_features(&self) -> usize {
        self.data.n_features()
    }
    fn pass(
        &mut self,
        visit: &mut dyn FnMut(ChunkRef<'_>) -> principal::Result<()>,
    ) -> principal::Result<()> {
        let (fail_at, given) = (self.fail_at, &mut self.given);
        let mut k = 0;
        self.data.pass(&mut |chunk| {
            k += 1;
            if Some(k) == fail_at {
                return Err(PcaError::Source(
                    "part.csv, line 12, column 3: \"x\" is not a number".into(),
                ));
            }
            std::thread::sleep(Duration::from_millis(3));
            *given += 1;
            visit(chunk)
        })
    }
}

#[test]
fn a_failing_rank_stops_every_rank_promptly_with_its_message() {
    // 300 chunks of 10 rows per rank: about a second of reading; rank 1 fails at its 3rd.
    let x = random_matrix(9000, 5, None, 0.0, 7);
    for solver in [Solver::Covariance, Solver::Randomized] {
        let p = params(solver, 2, Scaling::Centre);
        let started = Instant::now();
        let parts: Vec<Part> = (0..3)
            .map(|r| Part {
                data: InMemory::new(x.subrows(3000 * r, 3000), 10),
                fail_at: (r == 1).then_some(3),
                given: 0,
            })
            .collect();
        let job = Threads::job(3);
        let results: Vec<(principal::Result<PcaModel>, usize)> = std::thread::scope(|scope| {
            let handles: Vec<_> = parts
                .into_iter()
                .zip(job.iter())
                .map(|(mut part, rank)| {
                    let p = &p;
                    scope.spawn(move || (p.fit_distributed(&mut part, rank), part.given))
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let elapsed = started.elapsed();
        let message = "part.csv, line 12, column 3: \"x\" is not a number";
        for (rank, (result, given)) in results.iter().enumerate() {
            let e = result.as_ref().unwrap_err().to_string();
            if rank == 1 {
                assert_eq!(e, message);
            } else {
                assert_eq!(e, format!("rank 1: {message}"), "{solver} rank {rank}");
                // Stopped within a chunk or two of the failure, not at the end of the pass.
                assert!(*given < 20, "{solver} rank {rank} read {given} chunks");
            }
        }
        assert!(elapsed < Duration::from_secs(1), "{solver}: {elapsed:?}");
    }
}

#[test]
fn one_process_is_fit_source() {
    let x = random_matrix(200, 6, None, 1e6, 8);
    let p = params(Solver::Randomized, 2, Scaling::Standardize);
    let a = p
        .fit_distributed(&mut InMemory::new(x.as_ref(), 50), &SingleProcess)
        .unwrap();
    let b = p.fit_source(&mut InMemory::new(x.as_ref(), 50)).unwrap();
    assert_eq!(a, b);
}

/// Sparse rows split over ranks (uneven, an empty rank, one row on a rank): the covariance
/// route and the randomized solver, centred, standardized and uncentred, give every rank the
/// same model, equal to one process's sparse fit; a failing rank stops them all.
#[test]
fn sparse_fits_over_every_split_equal_one_process() {
    use principal::Centre;
    use principal::sparse::{Csr, SparseInMemory};
    let dense = common::signal_plus_noise(400, 12, 3, 0.05, 8);
    // About a third of the entries kept: a sparse matrix with structure.
    let mut csr = Csr::<f64, u32>::new(12);
    for i in 0..dense.nrows() {
        let row: Vec<(usize, f64)> = (0..12)
            .filter(|j| (i * 7 + j * 5) % 3 == 0)
            .map(|j| (j, dense[(i, j)]))
            .collect();
        csr.push_row(&row).unwrap();
    }
    for solver in [Solver::Covariance, Solver::Randomized] {
        for (scaling, centre) in [
            (Scaling::Centre, Centre::Mean),
            (Scaling::Standardize, Centre::Mean),
            (Scaling::Centre, Centre::None),
        ] {
            let params = PcaBuilder::new()
                .solver(solver)
                .components(ComponentCount::Fixed(3))
                .scaling(scaling)
                .centre(centre)
                .iterative(IterativeOptions {
                    seed: 5,
                    tolerance: Some(1e-13),
                    ..Default::default()
                })
                .build()
                .unwrap();
            let reference = params.fit_sparse(csr.as_chunk()).unwrap();
            for sizes in splits(csr.nrows()) {
                let what = format!("{solver} {scaling:?} {centre:?} {sizes:?}");
                let mut start = 0;
                let parts: Vec<_> = sizes
                    .iter()
                    .map(|&n| {
                        let part = SparseInMemory::new(csr.as_chunk().subrows(start, n), 29);
                        start += n;
                        part
                    })
                    .collect();
                let models: Vec<PcaModel> = on_ranks(parts, |part, rank| {
                    params.fit_sparse_distributed(part, rank)
                })
                .into_iter()
                .map(|m| m.unwrap())
                .collect();
                for m in &models[1..] {
                    assert_eq!(m, &models[0], "{what}: ranks differ");
                }
                assert_same_model(&models[0], &reference, 1e-10, &what);
                for (a, b) in models[0]
                    .explained_variance_ratio()
                    .iter()
                    .zip(reference.explained_variance_ratio())
                {
                    assert!((a - b).abs() < 1e-10, "{what}: ratio {a} vs {b}");
                }
            }
        }
    }
    // A non-finite value on rank 1 stops both ranks, rank 0 with rank 1's message.
    let mut bad = Csr::<f64, u32>::new(12);
    for i in 0..10 {
        bad.push_row(&[(i % 12, if i == 7 { f64::NAN } else { 1.0 })])
            .unwrap();
    }
    let params = PcaBuilder::new().build().unwrap();
    let parts = vec![
        SparseInMemory::new(bad.as_chunk().subrows(0, 5), 2),
        SparseInMemory::new(bad.as_chunk().subrows(5, 5), 2),
    ];
    let outcomes = on_ranks(parts, |part, rank| {
        params.fit_sparse_distributed(part, rank)
    });
    let message = outcomes[0].as_ref().unwrap_err().to_string();
    assert!(message.contains("rank 1"), "{message}");
    assert!(outcomes[1].is_err());
}
