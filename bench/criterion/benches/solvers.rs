//! Criterion benchmarks of the solvers' kernels: `cargo bench` in bench/criterion (a workspace of its own).
//! Tool-against-tool figures (principal vs scikit-learn) come from `bench/run.sh`.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use principal::faer::Mat;
use principal::{ComponentCount, IterativeOptions, MomentAccumulator, PcaBuilder, Solver};

/// Deterministic pseudo-pixels in 0..=255, stored row-major (as readers produce them).
fn pixels(n: usize, d: usize) -> Mat<f32> {
    let mut state = 0x2545F4914F6CDD1Du64;
    Mat::from_fn(d, n, |_, _| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        if state.is_multiple_of(3) {
            (state >> 8) as u8 as f32
        } else {
            0.0
        }
    })
}

fn moments(c: &mut Criterion) {
    let (n, d) = (16_384, 784);
    let rows = pixels(n, d);
    let as_f64 = Mat::<f64>::from_fn(d, n, |j, i| f64::from(rows[(j, i)]) + 0.5);
    let mut group = c.benchmark_group("moments_16384x784");
    group.sample_size(10);
    group.bench_function("u8_values_f32_exact_path", |b| {
        b.iter(|| {
            let mut acc = MomentAccumulator::new(d);
            acc.push(rows.transpose()).unwrap();
            acc.finish().unwrap()
        })
    });
    group.bench_function("non_integer_f64", |b| {
        b.iter(|| {
            let mut acc = MomentAccumulator::new(d);
            acc.push(as_f64.transpose()).unwrap();
            acc.finish().unwrap()
        })
    });
    group.finish();
}

fn solvers(c: &mut Criterion) {
    let (n, d) = (1000, 2000);
    let data = pixels(n, d);
    let x = data.transpose();
    let mut group = c.benchmark_group("fit_1000x2000_k20");
    group.sample_size(10);
    for solver in [Solver::Gram, Solver::Svd, Solver::Randomized, Solver::Power] {
        let params = PcaBuilder::new()
            .components(ComponentCount::Fixed(20))
            .solver(solver)
            .iterative(IterativeOptions {
                tolerance: Some(1e-6),
                ..Default::default()
            })
            .build()
            .unwrap();
        group.bench_with_input(BenchmarkId::from_parameter(solver), &params, |b, p| {
            b.iter(|| p.fit(x).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, moments, solvers);
criterion_main!(benches);
