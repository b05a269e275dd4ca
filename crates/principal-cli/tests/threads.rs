//! The same input gives the same bits on any number of threads: every solver and model is
//! fitted, and a model with missing values applied, under `RAYON_NUM_THREADS` = 1, 2 and 3,
//! and the files written must be byte for byte the same. The data are large enough for faer
//! to split its work (its matrix–vector products, reductions to tridiagonal form and QR
//! factorisations round differently when split differently), and the certified
//! leading-eigenpair route is taken (400 features, a decaying spectrum).
use crate::common::{Env, Lcg, npy, to_csv};

const THREADS: [&str; 3] = ["1", "2", "3"];

/// 1,200 rows of 400 features: 12 factors of decaying weight plus noise, offset from zero;
/// with `missing`, one value in 40 is NaN.
fn data(missing: bool) -> Vec<u8> {
    let (n, d, factors) = (1200, 400, 12);
    let mut rng = Lcg(7);
    let loadings: Vec<Vec<f64>> = (0..factors)
        .map(|f| {
            let weight = 0.75f64.powi(f as i32);
            (0..d).map(|_| weight * (rng.next() - 0.5)).collect()
        })
        .collect();
    let rows: Vec<Vec<f64>> = (0..n)
        .map(|_| {
            let z: Vec<f64> = (0..factors).map(|_| rng.next() - 0.5).collect();
            (0..d)
                .map(|j| {
                    let value = 3.0
                        + (0..factors).map(|f| z[f] * loadings[f][j]).sum::<f64>() * 4.0
                        + 0.05 * (rng.next() - 0.5);
                    if missing && rng.next() < 0.025 {
                        f64::NAN
                    } else {
                        value
                    }
                })
                .collect()
        })
        .collect();
    npy(&rows, false)
}

/// Runs `args` (which write `output`) once per thread count; the outputs must be the same
/// bytes, else the thread counts that differ are added to `differ`.
fn same_bits(env: &Env, differ: &mut Vec<String>, output: &str, args: &[&str]) {
    let mut first: Option<Vec<u8>> = None;
    for threads in THREADS {
        let out = env.run_with_env(&[("RAYON_NUM_THREADS", Some(threads))], args);
        assert!(
            out.status.success(),
            "principal {args:?} on {threads} threads failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let bytes = std::fs::read(env.path(output)).expect("the output was written");
        match &first {
            None => first = Some(bytes),
            Some(one) if *one != bytes => {
                differ.push(format!("{args:?} on {threads} threads"));
            }
            Some(_) => {}
        }
    }
}

#[test]
fn every_pca_solver_gives_the_same_bits_on_any_number_of_threads() {
    let (env, mut differ) = (Env::new(), Vec::new());
    env.write("x.npy", data(false));
    // Every solver the library names, so that a new one is checked too.
    for &solver in principal::Solver::NAMES {
        let model = format!("{solver}.pca");
        same_bits(
            &env,
            &mut differ,
            &model,
            &["fit", "x.npy", "-k", "15", "--solver", solver, "-o", &model],
        );
    }
    same_bits(
        &env,
        &mut differ,
        "deflation.pca",
        &[
            "fit",
            "x.npy",
            "-k",
            "4",
            "--solver",
            "power",
            "--power-method",
            "deflation",
        ]
        .into_iter()
        .chain(["-o", "deflation.pca"])
        .collect::<Vec<_>>(),
    );
    same_bits(
        &env,
        &mut differ,
        "standardized.pca",
        &[
            "fit",
            "x.npy",
            "-k",
            "15",
            "--standardize",
            "-o",
            "standardized.pca",
        ],
    );
    same_bits(
        &env,
        &mut differ,
        "mle.pca",
        &["fit", "x.npy", "-k", "mle", "-o", "mle.pca"],
    );
    same_bits(
        &env,
        &mut differ,
        "cv.pca",
        &["fit", "x.npy", "-k", "cv", "-o", "cv.pca"],
    );
    assert!(differ.is_empty(), "not the same bits: {differ:#?}");
}

#[test]
fn missing_values_give_the_same_bits_on_any_number_of_threads() {
    let (env, mut differ) = (Env::new(), Vec::new());
    env.write("x.npy", data(true));
    same_bits(
        &env,
        &mut differ,
        "m.pca",
        &["fit", "x.npy", "-k", "8", "--missing", "em", "-o", "m.pca"],
    );
    // Bayesian PCA's EM runs only with holes (complete rows are solved directly).
    same_bits(
        &env,
        &mut differ,
        "b.pca",
        &[
            "fit",
            "x.npy",
            "--model",
            "bayesian-pca",
            "-k",
            "8",
            "--missing",
            "em",
            "--max-iterations",
            "10",
            "-o",
            "b.pca",
        ],
    );
    same_bits(
        &env,
        &mut differ,
        "codes.csv",
        &[
            "transform",
            "m.pca",
            "x.npy",
            "--missing",
            "em",
            "-o",
            "codes.csv",
        ],
    );
    assert!(differ.is_empty(), "not the same bits: {differ:#?}");
}

#[test]
fn the_related_models_give_the_same_bits_on_any_number_of_threads() {
    let (env, mut differ) = (Env::new(), Vec::new());
    env.write("x.npy", data(false));
    let fits: [(&str, &[&str]); 7] = [
        ("fa", &["--model", "factor-analysis", "-k", "12"]),
        (
            "varimax",
            &[
                "--model",
                "factor-analysis",
                "-k",
                "6",
                "--rotation",
                "varimax",
            ],
        ),
        // Bounded: the mixture takes 64 steps of five restarts here (half a minute each).
        // Bayesian PCA of complete rows takes no EM step (the limit is kept from when it did).
        (
            "bpca",
            &[
                "--model",
                "bayesian-pca",
                "-k",
                "15",
                "--max-iterations",
                "100",
            ],
        ),
        (
            "mixture",
            &[
                "--model",
                "mixture",
                "--clusters",
                "3",
                "-k",
                "4",
                "--restarts",
                "2",
                "--max-iterations",
                "8",
            ],
        ),
        ("kernel", &["--model", "kernel", "-k", "15"]),
        (
            "sigmoid",
            &["--model", "kernel", "--kernel", "sigmoid", "-k", "6"],
        ),
        ("ica", &["--model", "ica", "-k", "6"]),
    ];
    for (name, options) in fits {
        let model = format!("{name}.model");
        let mut args = vec!["fit", "x.npy", "-o", &model];
        args.extend_from_slice(options);
        same_bits(&env, &mut differ, &model, &args);
    }
    assert!(differ.is_empty(), "not the same bits: {differ:#?}");
}

/// Sparse input, no centring, streaming under a memory limit, a chosen count, row weights.
#[test]
fn other_inputs_and_modes_give_the_same_bits_on_any_number_of_threads() {
    let (env, mut differ) = (Env::new(), Vec::new());
    env.write("x.npy", data(false));
    // 2,000 × 600 integer counts, one entry in 20 stored.
    let mut rng = Lcg(11);
    let mut entries = Vec::new();
    for i in 1..=2000 {
        for j in 1..=600 {
            if rng.next() < 0.05 {
                entries.push(format!("{i} {j} {}", 1 + (rng.next() * 9.0) as u32));
            }
        }
    }
    let mtx = format!(
        "%%MatrixMarket matrix coordinate real general\n2000 600 {}\n{}\n",
        entries.len(),
        entries.join("\n")
    );
    env.write("s.mtx", mtx);
    // 800 rows of 300 features and a weight column.
    let header: Vec<String> = (0..300)
        .map(|j| format!("f{j}"))
        .chain(["w".into()])
        .collect();
    let rows: Vec<Vec<f64>> = (0..800)
        .map(|_| {
            let z = [rng.next(), rng.next(), rng.next()];
            let weight = 0.5 + rng.next();
            (0..300)
                .map(|j| z[j % 3] * (1.0 + j as f64 / 100.0) + 0.1 * rng.next())
                .chain([weight])
                .collect()
        })
        .collect();
    env.write("w.csv", to_csv(Some(&header), &rows));
    let runs: [(&str, &[&str]); 7] = [
        ("sparse", &["s.mtx", "-k", "10"]),
        (
            "sparse-randomized",
            &["s.mtx", "-k", "10", "--solver", "randomized"],
        ),
        ("uncentred", &["x.npy", "-k", "10", "--no-centre"]),
        ("streamed", &["x.npy", "-k", "10", "--memory-limit", "2MB"]),
        (
            "streamed-randomized",
            &[
                "x.npy",
                "-k",
                "10",
                "--solver",
                "randomized",
                "--memory-limit",
                "2MB",
            ],
        ),
        ("gavish-donoho", &["x.npy", "-k", "gavish-donoho"]),
        ("weighted", &["w.csv", "-k", "10", "--row-weights", "w"]),
    ];
    for (name, options) in runs {
        let model = format!("{name}.pca");
        let mut args = vec!["fit", "-o", &model];
        args.extend_from_slice(options);
        same_bits(&env, &mut differ, &model, &args);
    }
    assert!(differ.is_empty(), "not the same bits: {differ:#?}");
}
