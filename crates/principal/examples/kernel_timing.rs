//! Times the covariance solver's pieces on a Fashion-MNIST-shaped matrix (60,000×784 of
//! pixel values), in-process: `cargo run --release -p principal --example kernel_timing`.
//! For tool-against-tool figures use `bench/run.sh`.

use std::time::Instant;

use principal::faer::Mat;
use principal::{ComponentCount, MomentAccumulator, PcaBuilder, Solver};

fn main() {
    if std::env::args().any(|a| a == "wide") {
        return wide();
    }
    let (n, d) = (60_000, 784);
    // Deterministic pseudo-pixels: mostly dark, some bright, correlated across neighbours.
    let mut state = 0x2545F4914F6CDD1Du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let pixels = Mat::<f32>::from_fn(n, d, |_, _| {
        let r = next();
        if r % 3 == 0 {
            (r >> 8) as u8 as f32
        } else {
            0.0
        }
    });
    let pixels64 = Mat::<f64>::from_fn(n, d, |i, j| f64::from(pixels[(i, j)]));
    let noisy = Mat::<f64>::from_fn(n, d, |i, j| pixels64[(i, j)] + 0.25);
    // Row-major storage, as readers produce it: the transpose of a D×N column-major matrix.
    let pixels_rows = pixels.transpose().to_owned();
    let noisy_rows = noisy.transpose().to_owned();
    for (name, run) in [
        (
            "moments, u8 in f32, row-major",
            Box::new(|| time_moments(pixels_rows.transpose())) as Box<dyn Fn() -> f64>,
        ),
        (
            "moments, u8 in f32, col-major",
            Box::new(|| time_moments(pixels.as_ref())),
        ),
        (
            "moments, u8 in f64, col-major",
            Box::new(|| time_moments(pixels64.as_ref())),
        ),
        (
            "moments, non-integer f64, row-major",
            Box::new(|| time_moments(noisy_rows.transpose())),
        ),
        (
            "moments, non-integer f64, col-major",
            Box::new(|| time_moments(noisy.as_ref())),
        ),
    ] {
        let mut times: Vec<f64> = (0..5).map(|_| run()).collect();
        times.sort_by(f64::total_cmp);
        println!("{name:38} median {:.3} s  min {:.3} s", times[2], times[0]);
    }
    let params = PcaBuilder::new()
        .components(ComponentCount::Fixed(50))
        .solver(Solver::Covariance)
        .build()
        .unwrap();
    let mut times: Vec<f64> = (0..5)
        .map(|_| {
            let t = Instant::now();
            params.fit(pixels_rows.transpose()).unwrap();
            t.elapsed().as_secs_f64()
        })
        .collect();
    times.sort_by(f64::total_cmp);
    println!(
        "{:38} median {:.3} s  min {:.3} s",
        "whole fit (f32 pixels, k=50)", times[2], times[0]
    );
}

fn time_moments<T: principal::Real>(x: principal::faer::MatRef<'_, T>) -> f64 {
    let t = Instant::now();
    let mut acc = MomentAccumulator::new(x.ncols());
    let mut start = 0;
    while start < x.nrows() {
        let rows = 4096.min(x.nrows() - start);
        acc.push(x.subrows(start, rows)).unwrap();
        start += rows;
    }
    acc.finish().unwrap();
    t.elapsed().as_secs_f64()
}

/// The wide case of the benchmark (2,000×20,000, rank-30 signal plus noise, 50 components):
/// randomized, in-process.
#[allow(dead_code)]
fn wide() {
    use principal::IterativeOptions;
    let (n, d) = (2000, 20_000);
    let mut state = 0x9E3779B97F4A7C15u64;
    let mut uniform = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    };
    let a = Mat::<f64>::from_fn(n, 30, |_, j| uniform() * 10.0 / (1.0 + j as f64));
    let b = Mat::<f64>::from_fn(30, d, |_, _| uniform());
    let mut x = &a * &b;
    for j in 0..d {
        for i in 0..n {
            x[(i, j)] += 0.1 * uniform();
        }
    }
    let exact = PcaBuilder::new()
        .components(ComponentCount::Fixed(50))
        .solver(Solver::Gram)
        .build()
        .unwrap();
    let exact = exact.fit(x.as_ref()).unwrap();
    let lam = exact.explained_variance();
    let krylov = IterativeOptions::default();
    let subspace = IterativeOptions {
        randomized_method: principal::RandomizedMethod::Subspace,
        ..krylov
    };
    for (name, options) in [
        ("krylov, default passes", krylov),
        (
            "krylov, 3 passes",
            IterativeOptions {
                power_iterations: Some(2),
                ..krylov
            },
        ),
        (
            "krylov, 4 passes",
            IterativeOptions {
                power_iterations: Some(3),
                ..krylov
            },
        ),
        (
            "krylov, tolerance 1e-6",
            IterativeOptions {
                tolerance: Some(1e-6),
                ..krylov
            },
        ),
        ("subspace, default passes", subspace),
        (
            "subspace, tolerance 1e-6",
            IterativeOptions {
                tolerance: Some(1e-6),
                ..subspace
            },
        ),
    ] {
        let params = PcaBuilder::new()
            .components(ComponentCount::Fixed(50))
            .solver(Solver::Randomized)
            .iterative(options)
            .build()
            .unwrap();
        let t = Instant::now();
        let model = params.fit(x.as_ref()).unwrap();
        let secs = t.elapsed().as_secs_f64();
        let got = model.explained_variance();
        let abs = got
            .iter()
            .zip(lam)
            .map(|(a, b)| (a - b).abs() / lam[0])
            .fold(0.0, f64::max);
        let rel = got
            .iter()
            .zip(lam)
            .map(|(a, b)| (a - b).abs() / b)
            .fold(0.0, f64::max);
        let r = model.iteration_report().unwrap();
        println!(
            "{name:26} {secs:.3} s  passes {:2}  estimate {:.1e}  max|Δλ|/λ1 {abs:.1e}  max|Δλ|/λ {rel:.1e}",
            r.passes, r.error_estimate
        );
    }
}
