//! Times `PcaParams::fit` alone on data already in memory — the quantity scikit-learn's
//! `PCA.fit` is timed for in `bench/run.sh` — so the two fits can be compared like for like.
//! The whole process (reading included) is what `principal fit` reports; this is the fit.
//!
//! `cargo run --release -p principal-io --example fit_in_memory -- FILE K SOLVER REPEAT [PRECISION]`
//! (PRECISION `full`, the default, or `mixed`) prints one JSON object: the read time, every
//! fit time, the solver chosen and the explained variances of the last fit.

use std::path::PathBuf;
use std::time::Instant;

use principal::{ComponentCount, PcaBuilder, Precision, Solver};
use principal_io::{Matrix, ReadOptions, read_table};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (file, k, solver, repeat, precision) = match args.as_slice() {
        [file, k, solver, repeat] => (file, k, solver, repeat, Precision::Full),
        [file, k, solver, repeat, precision] => (file, k, solver, repeat, precision.parse()?),
        _ => return Err("usage: fit_in_memory FILE K SOLVER REPEAT [PRECISION]".into()),
    };
    let solver: Solver = solver.parse()?;
    let params = PcaBuilder::new()
        .components(ComponentCount::Fixed(k.parse()?))
        .solver(solver)
        .precision(precision)
        .build()?;
    let started = Instant::now();
    let table = read_table(&[PathBuf::from(file)], &ReadOptions::default())?;
    let read_seconds = started.elapsed().as_secs_f64();
    let mut fit_seconds = Vec::new();
    let mut last = None;
    for _ in 0..repeat.parse::<usize>()? {
        let started = Instant::now();
        let model = match &table.data {
            Matrix::F32(x) => params.fit(x.as_ref())?,
            Matrix::F64(x) => params.fit(x.as_ref())?,
        };
        fit_seconds.push(started.elapsed().as_secs_f64());
        last = Some(model);
    }
    let model = last.ok_or("REPEAT must be at least 1")?;
    let list = |v: &[f64]| {
        v.iter()
            .map(|x| format!("{x:e}"))
            .collect::<Vec<_>>()
            .join(",")
    };
    println!(
        "{{\"read_seconds\":{read_seconds},\"fit_seconds\":[{}],\"solver\":\"{}\",\"explained_variance\":[{}]}}",
        list(&fit_seconds),
        model.solver().name(),
        list(model.explained_variance())
    );
    Ok(())
}
