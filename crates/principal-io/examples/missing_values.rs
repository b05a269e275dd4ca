//! Measures the fit with missing values (`MissingValues::Em`) against the usual shortcut, mean
//! imputation followed by PCA: values are knocked out at random (each one independently with
//! probability 10% or 30%, seeded), both methods fit k components to what is left, and each is
//! compared with the exact PCA of the complete data.
//!
//! `cargo run --release -p principal-io --example missing_values -- [REPEATS]` (default 5)
//! prints one Markdown table (GUIDE.md's): for each data set and fraction missing, the
//! median over REPEATS knock-out seeds of
//! - the largest principal angle between each method's k-dimensional subspace and the
//!   complete data's (degrees; the range over the seeds in brackets), and in how many runs
//!   EM's angle is the smaller;
//! - the root-mean-square error of the knocked-out values filled by each model's conditional
//!   mean given the row's observed values (`ProbabilisticPca::impute`), and by the column
//!   means alone;
//! - EM's passes and the fit's seconds.
//!
//! With 0% missing, EM is compared with the exact fit it must reproduce. Every run is also
//! printed to stderr. Run from the repository's root (it reads `data/`).

use std::path::PathBuf;
use std::time::Instant;

use principal::faer::Mat;
use principal::{
    ComponentCount, IterativeOptions, MissingValues, PcaBuilder, PcaModel, Scaling, Solver,
};
use principal_io::{ColumnSelector, Matrix, ReadOptions, read_table};

type Error = Box<dyn std::error::Error>;

// The knock-outs, synthetic data and angle of the library's missing-values tests.
#[path = "../../principal/tests/missing_data/mod.rs"]
mod missing_data;
use missing_data::{knock_out, largest_angle_sine, low_rank_plus_noise, mean_imputed};

/// One data set of the table.
struct DataSet {
    name: &'static str,
    x: Mat<f64>,
    k: usize,
}

fn main() -> Result<(), Error> {
    let repeats: u64 = match std::env::args().nth(1) {
        Some(r) => r.parse()?,
        None => 5,
    };
    let sets = [
        DataSet {
            name: "Iris (150 × 4)",
            x: read("data/iris.csv", &["species"])?,
            k: 2,
        },
        DataSet {
            name: "MNIST-5k digits (5,000 × 784)",
            x: read("data/mnist-5k.csv.gz", &["784"])?,
            k: 10,
        },
        DataSet {
            name: "synthetic rank 5 + noise (2,000 × 50)",
            x: low_rank_plus_noise(2000, 50, 5, 0.5, 1),
            k: 5,
        },
    ];
    println!(
        "| data | k | missing | largest angle, EM | largest angle, mean imputation + PCA | \
         EM closer | RMSE of filled values, EM | RMSE, mean imputation + PCA | RMSE, column means | \
         EM passes | EM seconds |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for set in &sets {
        let exact = fit_exact(&set.x, set.k)?;
        for fraction in [0.0, 0.1, 0.3] {
            let runs = if fraction == 0.0 { 1 } else { repeats };
            let mut rows = Vec::new();
            for seed in 1..=runs {
                let row = measure(set, &exact, fraction, seed)?;
                eprintln!("{} {fraction} seed {seed}: {row:?}", set.name);
                rows.push(row);
            }
            let sorted = |f: fn(&Run) -> f64| {
                let mut v: Vec<f64> = rows.iter().map(f).collect();
                v.sort_by(f64::total_cmp);
                v
            };
            let median = |f: fn(&Run) -> f64| {
                let v = sorted(f);
                let n = v.len();
                if n % 2 == 1 {
                    v[n / 2]
                } else {
                    0.5 * (v[n / 2 - 1] + v[n / 2])
                }
            };
            let degrees = |a: f64| {
                if a < 1e-3 {
                    format!("{a:.1e}°")
                } else {
                    format!("{a:.2}°")
                }
            };
            // The median, and the range over the seeds when there are several.
            let angle = |f: fn(&Run) -> f64| {
                let v = sorted(f);
                if v.len() == 1 {
                    degrees(v[0])
                } else {
                    format!(
                        "{} ({}–{})",
                        degrees(median(f)),
                        degrees(v[0]),
                        degrees(v[v.len() - 1])
                    )
                }
            };
            let rmse = |r: f64| {
                if fraction == 0.0 {
                    "—".to_string()
                } else {
                    format!("{r:.3}")
                }
            };
            let wins = rows.iter().filter(|r| r.em_angle < r.imputed_angle).count();
            println!(
                "| {} | {} | {}% | {} | {} | {} | {} | {} | {} | {} | {:.2} |",
                set.name,
                set.k,
                (fraction * 100.0).round(),
                angle(|r| r.em_angle),
                if fraction == 0.0 {
                    "—".to_string()
                } else {
                    angle(|r| r.imputed_angle)
                },
                if fraction == 0.0 {
                    "—".to_string()
                } else {
                    format!("{wins} of {}", rows.len())
                },
                rmse(median(|r| r.em_rmse)),
                rmse(median(|r| r.imputed_rmse)),
                rmse(median(|r| r.column_mean_rmse)),
                median(|r| r.passes as f64),
                median(|r| r.seconds),
            );
        }
    }
    Ok(())
}

/// The measures of one knock-out.
#[derive(Debug)]
struct Run {
    em_angle: f64,
    imputed_angle: f64,
    em_rmse: f64,
    imputed_rmse: f64,
    column_mean_rmse: f64,
    passes: usize,
    seconds: f64,
}

fn measure(set: &DataSet, exact: &PcaModel, fraction: f64, seed: u64) -> Result<Run, Error> {
    let holed = knock_out(&set.x, fraction, seed);
    let started = Instant::now();
    let em = PcaBuilder::new()
        .components(ComponentCount::Fixed(set.k))
        .missing(MissingValues::Em)
        .iterative(IterativeOptions {
            max_iterations: 10_000,
            ..Default::default()
        })
        .build()?
        .fit(holed.as_ref())?;
    let seconds = started.elapsed().as_secs_f64();
    let report = em.missing_values().ok_or("an EM fit reports")?;
    if !report.converged {
        eprintln!("{}: EM did not converge: {report:?}", set.name);
    }
    let filled = mean_imputed(&holed);
    let imputed = fit_exact(&filled, set.k)?;
    let error = |fill: &Mat<f64>| {
        let (mut sum, mut count) = (0.0, 0usize);
        for i in 0..holed.nrows() {
            for j in 0..holed.ncols() {
                if holed[(i, j)].is_nan() {
                    sum += (fill[(i, j)] - set.x[(i, j)]).powi(2);
                    count += 1;
                }
            }
        }
        (sum / count.max(1) as f64).sqrt()
    };
    Ok(Run {
        em_angle: largest_angle_sine(&em, exact)?.asin().to_degrees(),
        imputed_angle: largest_angle_sine(&imputed, exact)?.asin().to_degrees(),
        em_rmse: error(&em.probabilistic().impute(holed.as_ref())?),
        imputed_rmse: error(&imputed.probabilistic().impute(holed.as_ref())?),
        column_mean_rmse: error(&filled),
        passes: report.iterations,
        seconds,
    })
}

/// The exact PCA (SVD, centred, ddof 1) with k components.
fn fit_exact(x: &Mat<f64>, k: usize) -> Result<PcaModel, Error> {
    Ok(PcaBuilder::new()
        .components(ComponentCount::Fixed(k))
        .scaling(Scaling::Centre)
        .solver(Solver::Svd)
        .build()?
        .fit(x.as_ref())?)
}

/// A data file of the repository with `exclude`d columns left out, as f64.
fn read(path: &str, exclude: &[&str]) -> Result<Mat<f64>, Error> {
    let options = ReadOptions {
        exclude: exclude
            .iter()
            .map(|c| c.parse())
            .collect::<Result<Vec<ColumnSelector>, _>>()?,
        ..Default::default()
    };
    let table = read_table(&[PathBuf::from(path)], &options)?;
    Ok(match table.data {
        Matrix::F32(x) => Mat::from_fn(x.nrows(), x.ncols(), |i, j| f64::from(x[(i, j)])),
        Matrix::F64(x) => Mat::from_fn(x.nrows(), x.ncols(), |i, j| x[(i, j)]),
    })
}
