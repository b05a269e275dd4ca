//! The iterative solvers, `--explain`, and data larger than the memory limit: streamed fits,
//! transforms and reconstructions.

use std::fs;

use serde_json::Value;

use crate::common;

use common::*;

fn mnist() -> String {
    data("mnist-5k.csv.gz").display().to_string()
}

fn eigenvalues(model: &Value) -> Vec<f64> {
    numbers(&model["explained_variance"])
}

#[test]
fn explain_lists_every_solver_with_its_cost_and_the_reading_mode() {
    let env = Env::new();
    let stderr = env.ok(&[
        "fit",
        &iris(),
        "--exclude",
        "species",
        "-k",
        "2",
        "-o",
        "m.pca",
        "--explain",
    ]);
    for solver in ["covariance", "gram", "svd", "randomized", "power", "em"] {
        assert!(
            stderr.contains(&format!("  {solver} ")),
            "{solver} missing:\n{stderr}"
        );
    }
    assert!(
        stderr.contains("← chosen") && stderr.contains("multiply-adds"),
        "{stderr}"
    );
    assert!(stderr.contains("data read into memory"), "{stderr}");
    // Sizes in units a person reads: the Gram matrix of Iris is 150² f64 and more.
    let stderr = env.ok(&[
        "fit",
        &iris(),
        "--exclude",
        "species",
        "-o",
        "m.pca",
        "--explain",
        "--memory-limit",
        "2.5G",
    ]);
    assert!(
        stderr.contains("solver choice (memory limit 2.50 GB)"),
        "{stderr}"
    );
    let gram = stderr.lines().find(|l| l.contains("  gram ")).unwrap();
    assert!(gram.contains(" kB"), "{gram}");
}

/// `PRINCIPAL_SPIN_LIMIT` changes how long faer's idle threads spin, never the work: the same
/// model bytes with principal's default (no spinning) as with spindle's own (65,536 pauses); a
/// value that is not a count is an error before anything is written.
#[test]
fn the_spin_limit_changes_no_bit_and_a_bad_one_is_refused() {
    let env = Env::new();
    let fit = |limit: Option<&str>, output: &str| {
        env.run_with_env(
            &[("PRINCIPAL_SPIN_LIMIT", limit)],
            &[
                "fit",
                &mnist(),
                "--exclude",
                "784",
                "-k",
                "10",
                "-o",
                output,
                "--solver",
                "randomized",
                "--seed",
                "3",
            ],
        )
    };
    let default = fit(None, "default.pca");
    assert!(default.status.success(), "{default:?}");
    let spinning = fit(Some("65536"), "spinning.pca");
    assert!(spinning.status.success(), "{spinning:?}");
    assert_eq!(
        fs::read(env.path("default.pca")).unwrap(),
        fs::read(env.path("spinning.pca")).unwrap()
    );
    let bad = fit(Some("-1"), "bad.pca");
    assert_eq!(bad.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(
        stderr.contains("PRINCIPAL_SPIN_LIMIT must be a whole number") && stderr.contains("\"-1\""),
        "{stderr}"
    );
    assert!(!env.path("bad.pca").exists());
}

/// `fit INPUT -k 10 -o OUTPUT --solver covariance --explain`, leaving out MNIST's last column
/// (its label) unless INPUT is an `.npy` file, which has none.
fn explained_covariance_fit<'a>(input: &'a str, output: &'a str) -> Vec<&'a str> {
    let mut args = vec!["fit", input];
    if !input.ends_with(".npy") {
        args.extend(["--exclude", "784"]);
    }
    args.extend([
        "-k",
        "10",
        "-o",
        output,
        "--solver",
        "covariance",
        "--explain",
    ]);
    args
}

/// The byte kernel: `--explain` names the one this CPU has and the summary the one that ran
/// (MNIST's pixels take the byte path to the covariance matrix); with it off
/// (`PRINCIPAL_BYTE_KERNEL=none`: exact f32 products) neither names one, and the model is the
/// same file, bit for bit.
#[test]
fn explain_and_summary_name_the_byte_kernel_and_turning_it_off_changes_no_bit() {
    assert!(
        std::env::var_os("PRINCIPAL_BYTE_KERNEL").is_none(),
        "run this test without PRINCIPAL_BYTE_KERNEL: it compares the kernel chosen here"
    );
    let env = Env::new();
    let mnist = mnist();
    let fit = |kernel: &str, output: &str| {
        let out = env.run_with_env(
            &[("PRINCIPAL_BYTE_KERNEL", Some(kernel))],
            &explained_covariance_fit(&mnist, output),
        );
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{kernel}: {stderr}");
        stderr
    };
    let best = fit("auto", "bytes.pca");
    let off = fit("none", "f32.pca");
    let line = "byte-valued data (≤ 256 values a feature): ";
    let f32_products = "exact f32 products (no exact byte kernel on this CPU, or \
                        PRINCIPAL_BYTE_KERNEL=none)";
    match principal::byte_kernel() {
        Some(kernel) => {
            assert!(best.contains(&format!("{line}{kernel}\n")), "{best}");
            assert!(best.contains(&format!("\nproducts: {kernel}\n")), "{best}");
        }
        None => {
            assert!(best.contains(&format!("{line}{f32_products}\n")), "{best}");
            assert!(!best.contains("\nproducts: "), "{best}");
        }
    }
    assert!(off.contains(&format!("{line}{f32_products}\n")), "{off}");
    assert!(!off.contains("\nproducts: "), "{off}");
    let read = |name: &str| fs::read(env.path(name)).expect("model written");
    assert!(read("bytes.pca") == read("f32.pca"), "the models differ");
}

/// `PRINCIPAL_CPU=avx2` caps our kernels at AVX2 and changes no bit: MNIST's pixels take the
/// AVX2 byte kernel (where this CPU has AVX2) instead of the best one here, and narrow f64 rows
/// AVX2's band width; `--explain` and the summary say so; a value it does not know is an error
/// (exit 2) naming it, before anything is written.
#[test]
fn the_avx2_cap_names_itself_changes_no_bit_and_an_unknown_one_is_refused() {
    let env = Env::new();
    let mut rng = Lcg(26);
    let rows: Vec<Vec<f64>> = (0..3000)
        .map(|_| (0..60).map(|_| rng.next() - 0.5).collect())
        .collect();
    env.write("narrow.npy", npy(&rows, false));
    let narrow = env.path("narrow.npy").display().to_string();
    let fit = |cpu: Option<&str>, input: &str, output: &str| {
        env.run_with_env(
            &[("PRINCIPAL_CPU", cpu), ("PRINCIPAL_BYTE_KERNEL", None)],
            &explained_covariance_fit(input, output),
        )
    };
    let cap = "instructions: principal's own kernels capped at AVX2 by PRINCIPAL_CPU=avx2 \
               (faer's matrix products choose their own)\n";
    for (input, name) in [(mnist(), "bytes"), (narrow, "narrow")] {
        let native = fit(None, &input, &format!("{name}.pca"));
        let native_err = String::from_utf8_lossy(&native.stderr).into_owned();
        assert!(native.status.success(), "{native_err}");
        assert!(!native_err.contains("instructions: "), "{native_err}");
        let capped = fit(Some("avx2"), &input, &format!("{name}-avx2.pca"));
        let capped_err = String::from_utf8_lossy(&capped.stderr).into_owned();
        assert!(capped.status.success(), "{capped_err}");
        assert!(capped_err.contains(cap), "{capped_err}");
        if name == "bytes" {
            #[cfg(target_arch = "x86_64")]
            let avx2 = std::arch::is_x86_feature_detected!("avx2");
            #[cfg(not(target_arch = "x86_64"))]
            let avx2 = false;
            if avx2 {
                assert!(
                    capped_err.contains(
                        "\nproducts: u8×i8 products widened to i16 (AVX2 vpmaddwd) \
                         (PRINCIPAL_CPU=avx2)\n"
                    ),
                    "{capped_err}"
                );
            } else {
                // No AVX2 here (or not x86-64): under the cap no byte kernel is left (the
                // others are beyond AVX2), so the exact f32 products ran and none is named.
                assert!(!capped_err.contains("\nproducts: "), "{capped_err}");
            }
        }
        let read = |file: String| fs::read(env.path(&file)).expect("model written");
        assert!(
            read(format!("{name}.pca")) == read(format!("{name}-avx2.pca")),
            "{name}: the models differ"
        );
    }
    let bad = fit(Some("avx512"), &mnist(), "bad.pca");
    assert_eq!(bad.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(
        stderr
            .contains("PRINCIPAL_CPU must be native, avx-vnni or avx2 (or unset), not \"avx512\""),
        "{stderr}"
    );
    assert!(!env.path("bad.pca").exists());
}

/// `PRINCIPAL_CPU=avx-vnni` (an Intel client CPU since Alder Lake: AVX2 and AVX-VNNI, no
/// AVX-512) changes no bit: MNIST's pixels take AVX-VNNI's `vpdpbusd` where this CPU has it,
/// else the AVX2 kernel (where AVX2 exists), and `--explain` and the summary say which.
#[test]
fn the_avx_vnni_cap_names_its_kernel_and_changes_no_bit() {
    let env = Env::new();
    let fit = |cpu: Option<&str>, output: &str| {
        let out = env.run_with_env(
            &[("PRINCIPAL_CPU", cpu), ("PRINCIPAL_BYTE_KERNEL", None)],
            &explained_covariance_fit(&mnist(), output),
        );
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{stderr}");
        stderr
    };
    fit(None, "native.pca");
    let capped = fit(Some("avx-vnni"), "vnni.pca");
    assert!(
        capped.contains(
            "instructions: principal's own kernels capped at AVX-VNNI by PRINCIPAL_CPU=avx-vnni \
             (faer's matrix products choose their own)\n"
        ),
        "{capped}"
    );
    #[cfg(target_arch = "x86_64")]
    let (vnni, avx2) = (
        std::arch::is_x86_feature_detected!("avxvnni")
            && std::arch::is_x86_feature_detected!("fma"),
        std::arch::is_x86_feature_detected!("avx2"),
    );
    #[cfg(not(target_arch = "x86_64"))]
    let (vnni, avx2) = (false, false);
    let kernel = if vnni {
        Some("u8×i8 products by AVX-VNNI (256-bit vpdpbusd)")
    } else if avx2 {
        println!("no AVX-VNNI on this CPU: the cap leaves the AVX2 kernel, checked instead");
        Some("u8×i8 products widened to i16 (AVX2 vpmaddwd)")
    } else {
        None
    };
    match kernel {
        Some(kernel) => assert!(
            capped.contains(&format!("\nproducts: {kernel} (PRINCIPAL_CPU=avx-vnni)\n")),
            "{capped}"
        ),
        None => assert!(!capped.contains("\nproducts: "), "{capped}"),
    }
    let read = |file: &str| fs::read(env.path(file)).expect("model written");
    assert!(read("native.pca") == read("vnni.pca"), "the models differ");
}

#[test]
fn randomized_fit_reports_its_error_estimate_and_a_seed_makes_it_repeatable() {
    let env = Env::new();
    let args = |out: &'static str, seed: &'static str| {
        vec![
            "fit",
            "MNIST",
            "--exclude",
            "784",
            "-k",
            "10",
            "--solver",
            "randomized",
            "--seed",
            seed,
            "-o",
            out,
        ]
    };
    let m = mnist();
    let run = |out, seed| {
        let a: Vec<&str> = args(out, seed)
            .into_iter()
            .map(|s| if s == "MNIST" { m.as_str() } else { s })
            .collect();
        env.ok(&a)
    };
    let stderr = run("a.pca", "3");
    assert!(stderr.contains("error estimate"), "{stderr}");
    run("b.pca", "3");
    run("c.pca", "4");
    let (a, b, c) = (
        fs::read(env.path("a.pca")).unwrap(),
        fs::read(env.path("b.pca")).unwrap(),
        fs::read(env.path("c.pca")).unwrap(),
    );
    assert_eq!(
        a, b,
        "the same seed must give the same model file, byte for byte"
    );
    assert_ne!(
        a, c,
        "another seed gives another (slightly different) model"
    );
    let report = &env.inspect("a.pca")["iteration_report"];
    assert!(report["passes"].as_u64().unwrap() >= 2, "{report}");
    assert!(
        report["error_estimate"].as_f64().unwrap() < 1e-2,
        "{report}"
    );
}

#[test]
fn streamed_fits_equal_in_memory_fits() {
    let env = Env::new();
    let m = mnist();
    let base = ["fit", m.as_str(), "--exclude", "784", "-k", "8"];
    let fit = |out: &str, extra: &[&str]| {
        let mut a = base.to_vec();
        a.extend_from_slice(extra);
        a.extend_from_slice(&["-o", out]);
        env.ok(&a)
    };
    // The exact reference, in memory.
    let exact = fit("svd.pca", &["--solver", "svd"]);
    assert!(exact.contains("reading,"), "{exact}");
    // Covariance always streams; randomized streams when the data exceeds half the budget.
    let cov = fit("cov.pca", &["--solver", "covariance"]);
    assert!(cov.contains("streamed in 1 pass"), "{cov}");
    let tol = [
        "--solver",
        "randomized",
        "--tolerance",
        "1e-9",
        "--seed",
        "1",
    ];
    fit("rand-memory.pca", &tol);
    let mut streamed = tol.to_vec();
    streamed.extend_from_slice(&["--memory-limit", "2M"]);
    let out = fit("rand-streamed.pca", &streamed);
    assert!(out.contains("streamed in"), "{out}");
    let reference = eigenvalues(&env.inspect("svd.pca"));
    for (name, tol) in [
        ("cov.pca", 1e-9),
        ("rand-memory.pca", 1e-7),
        ("rand-streamed.pca", 1e-7),
    ] {
        let got = eigenvalues(&env.inspect(name));
        assert_close(&got, &reference, tol * reference[0], name);
    }
    // Same seed, same passes: streaming changes nothing but where the rows come from.
    let (a, b) = (
        env.inspect("rand-memory.pca"),
        env.inspect("rand-streamed.pca"),
    );
    assert_same_model(&a, &b, 1e-9);
}

#[test]
fn gram_over_the_memory_limit_is_refused_before_reading() {
    let env = Env::new();
    let err = env.fails(
        1,
        &[
            "fit",
            &mnist(),
            "--exclude",
            "784",
            "--solver",
            "gram",
            "--memory-limit",
            "2M",
            "-o",
            "m.pca",
        ],
    );
    assert!(
        err.contains("--memory-limit") && err.contains("gram"),
        "{err}"
    );
    assert!(!env.path("m.pca").exists());
}

#[test]
fn power_iteration_converges_on_iris_and_says_how() {
    let env = Env::new();
    for method in ["block", "deflation"] {
        let stderr = env.ok(&[
            "fit",
            &iris(),
            "--exclude",
            "species",
            "-k",
            "2",
            "--solver",
            "power",
            "--power-method",
            method,
            "-o",
            "p.pca",
        ]);
        assert!(
            stderr.contains("passes") && !stderr.contains("NOT reached"),
            "{stderr}"
        );
        let got = eigenvalues(&env.inspect("p.pca"));
        assert_close(&got, &[4.22824171, 0.24267075], 1e-7, method);
    }
}

#[test]
fn em_converges_on_iris_and_says_how() {
    let env = Env::new();
    let args = ["fit", &iris(), "--exclude", "species", "-k", "2"];
    let stderr = env.ok(&[&args[..], &["--solver", "em", "-o", "em.pca"]].concat());
    assert!(
        stderr.contains("solver: em") && stderr.contains("passes, error estimate"),
        "{stderr}"
    );
    assert!(!stderr.contains("NOT reached"), "{stderr}");
    let model = env.inspect("em.pca");
    assert_eq!(model["solver"], "em");
    assert_close(&eigenvalues(&model), &[4.22824171, 0.24267075], 1e-7, "em");
}

#[test]
fn iterative_settings_are_checked_as_usage_errors() {
    let env = Env::new();
    for bad in [
        ["--tolerance", "0"],
        ["--tolerance", "2"],
        ["--max-iterations", "0"],
        ["--memory-limit", "12 parsecs"],
        ["--power-method", "magic"],
    ] {
        let mut args = vec!["fit", "x.csv", "-o", "m.pca"];
        args.extend_from_slice(&bad);
        env.fails(2, &args);
    }
}

/// Peak memory as `fit` reports it, in MB.
fn reported_peak_mb(stderr: &str) -> u64 {
    let at = stderr
        .find("peak memory ")
        .expect("fit reports its peak memory")
        + "peak memory ".len();
    stderr[at..]
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn a_file_far_larger_than_the_memory_limit_is_fitted_within_it() {
    // 120,000 × 100 f64 = 96 MB of data; the budget is 16 MB.
    let env = Env::new();
    let (n, d) = (120_000usize, 100usize);
    let mut rows = Vec::with_capacity(n);
    let mut rng = Lcg(11);
    for i in 0..n {
        let t = i as f64 / n as f64;
        rows.push(
            (0..d)
                .map(|j| (t * (1 + j % 7) as f64).sin() + 0.1 * rng.next())
                .collect::<Vec<f64>>(),
        );
    }
    env.write("big.npy", npy(&rows, false));
    drop(rows);
    let size_mb = fs::metadata(env.path("big.npy")).unwrap().len() / 1_000_000;
    assert!(size_mb >= 90);
    for solver in ["covariance", "randomized", "power", "em"] {
        let out = format!("{solver}.pca");
        let stderr = env.ok(&[
            "fit",
            "big.npy",
            "-k",
            "4",
            "--solver",
            solver,
            "--tolerance",
            "1e-8",
            "--memory-limit",
            "16M",
            "-o",
            &out,
        ]);
        assert!(stderr.contains("streamed in"), "{solver}: {stderr}");
        let peak = reported_peak_mb(&stderr);
        assert!(
            peak < 60,
            "{solver}: peak memory {peak} MB for a {size_mb} MB file under a 16 MB budget"
        );
    }
    // The streamed answers are the exact one (eigenvalues from the covariance solver).
    let exact = eigenvalues(&env.inspect("covariance.pca"));
    for name in ["randomized.pca", "power.pca", "em.pca"] {
        assert_close(
            &eigenvalues(&env.inspect(name)),
            &exact,
            1e-7 * exact[0],
            name,
        );
    }
}

/// Every value of `found` equals `expected`'s to within `tol` times the largest |value|.
fn assert_matrix_close(
    found: &principal_io::Matrix,
    expected: &principal::faer::Mat<f64>,
    tol: f64,
    what: &str,
) {
    let found = found.to_f64();
    assert_eq!(
        (found.nrows(), found.ncols()),
        (expected.nrows(), expected.ncols()),
        "{what}: shape"
    );
    let scale = (0..expected.nrows())
        .flat_map(|i| (0..expected.ncols()).map(move |j| (i, j)))
        .fold(0.0f64, |m, (i, j)| m.max(expected[(i, j)].abs()));
    for i in 0..expected.nrows() {
        for j in 0..expected.ncols() {
            let diff = (found[(i, j)] - expected[(i, j)]).abs();
            assert!(diff <= tol * scale, "{what}: ({i}, {j}) off by {diff:e}");
        }
    }
}

#[test]
fn transform_and_inverse_stream_files_larger_than_the_memory_limit() {
    // 60,000 × 100 f64 = 48 MB in, and 48 MB out of inverse; the budget is 8 MB (chunks of
    // 512 rows).
    let env = Env::new();
    let (n, d) = (60_000usize, 100usize);
    let mut rng = Lcg(5);
    let rows: Vec<Vec<f64>> = (0..n)
        .map(|i| {
            let t = i as f64 / n as f64;
            (0..d)
                .map(|j| (t * (1 + j % 5) as f64).cos() * 3.0 + 0.1 * rng.next() + 1e3)
                .collect()
        })
        .collect();
    env.write("big.npy", npy(&rows, false));
    drop(rows);
    let streamed = |args: &[&str]| env.ok(&[args, &["--memory-limit", "8M"]].concat());
    streamed(&["fit", "big.npy", "-k", "5", "-o", "m.pca"]);
    let stderr = streamed(&["transform", "m.pca", "big.npy", "-o", "codes.npy"]);
    let wrote = "wrote 60000 samples × 5 components to";
    assert!(stderr.contains(wrote), "{stderr}");
    let transform_peak = reported_peak_mb(&stderr);
    let stderr = streamed(&["inverse", "m.pca", "codes.npy", "-o", "back.npy"]);
    let wrote = "wrote 60000 samples × 100 features to";
    assert!(stderr.contains(wrote), "{stderr}");
    let inverse_peak = reported_peak_mb(&stderr);
    // Neither the 48 MB input of transform nor the 48 MB output of inverse is held.
    assert!(
        transform_peak < 40,
        "transform peaked at {transform_peak} MB"
    );
    assert!(inverse_peak < 40, "inverse peaked at {inverse_peak} MB");

    // The same numbers as the library's transform and inverse of the whole matrix at once.
    let model = principal_io::load_model(&env.path("m.pca")).unwrap().model;
    let read = |name: &str| {
        principal_io::read_table(&[env.path(name)], &principal_io::ReadOptions::default())
            .unwrap()
            .data
    };
    let data = read("big.npy").to_f64();
    let codes = model.transform(data.as_ref()).unwrap();
    assert_matrix_close(&read("codes.npy"), &codes, 1e-13, "codes");
    let back = model.inverse_transform(codes.as_ref()).unwrap();
    assert_matrix_close(&read("back.npy"), &back, 1e-13, "reconstruction");
    // In CSV and Parquet too (written a chunk at a time).
    let parquet = cfg!(feature = "parquet");
    for name in ["codes.csv", "codes.parquet"]
        .into_iter()
        .filter(|name| parquet || !name.ends_with(".parquet"))
    {
        streamed(&["transform", "m.pca", "big.npy", "-o", name]);
        assert_matrix_close(&read(name), &codes, 1e-13, name);
    }
}

#[test]
fn a_bad_value_in_a_late_chunk_leaves_the_old_output_and_no_temporary() {
    // 3,000 rows of 3 columns in chunks of 2,560 rows (1 MB budget); a NaN in row 2,900.
    let env = Env::new();
    let names: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
    let mut rng = Lcg(9);
    let rows: Vec<Vec<f64>> = (0..3000)
        .map(|_| (0..3).map(|_| rng.next()).collect())
        .collect();
    env.write("good.csv", to_csv(Some(&names), &rows));
    let mut text = to_csv(Some(&names), &rows);
    let line = text.lines().nth(2901).unwrap().to_owned();
    text = text.replacen(
        &line,
        &format!("{},nan", line.rsplit_once(',').unwrap().0),
        1,
    );
    env.write("bad.csv", text);
    env.ok(&["fit", "good.csv", "-k", "2", "-o", "m.pca"]);
    let parquet = cfg!(feature = "parquet");
    for output in ["codes.npy", "codes.csv", "codes.parquet"]
        .into_iter()
        .filter(|output| parquet || !output.ends_with(".parquet"))
    {
        env.write(output, "precious\n");
        let stderr = env.fails(
            1,
            &[
                "transform",
                "m.pca",
                "bad.csv",
                "-o",
                output,
                "--memory-limit",
                "1M",
            ],
        );
        assert!(stderr.contains("bad.csv, line 2902"), "{stderr}");
        assert!(stderr.contains("\"nan\""), "{stderr}");
        assert_eq!(
            fs::read(env.path(output)).unwrap(),
            b"precious\n",
            "{output}"
        );
    }
    let leftovers: Vec<_> = fs::read_dir(env.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains(".tmp-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// `PRINCIPAL_TRACE` prints where a fit's time went: for a streamed fit (covariance streams
/// from the files) the passes and chunks, the reading thread's and the products' times, the
/// waits, the eigensolver's and the writing's; for a fit from memory, reading and fitting.
/// Without it, no trace line.
#[test]
fn principal_trace_prints_the_time_of_every_stage() {
    let env = Env::new();
    let fit = |trace: bool, solver: &str| {
        let out = env.run_with_env(
            &[("PRINCIPAL_TRACE", trace.then_some("1"))],
            &[
                "fit",
                &mnist(),
                "--exclude",
                "784",
                "-k",
                "5",
                "-o",
                "m.pca",
                "--solver",
                solver,
            ],
        );
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{stderr}");
        stderr
    };
    let streamed = fit(true, "covariance");
    let line = streamed
        .lines()
        .find(|l| l.starts_with("trace: "))
        .unwrap_or_else(|| panic!("no trace line: {streamed}"));
    for stage in [
        "1 pass(es) of ",
        "reading thread (read, inflate, decode) ",
        "products ",
        "waiting for data ",
        "after the passes (eigensolver, model) ",
        "writing the model ",
    ] {
        assert!(line.contains(stage), "{stage:?} missing: {line}");
    }
    let in_memory = fit(true, "svd");
    assert!(
        in_memory
            .lines()
            .any(|l| l.starts_with("trace: read into memory ") && l.contains(", fit ")),
        "{in_memory}"
    );
    assert!(!fit(false, "covariance").contains("trace:"));
}

/// A covariance fit of MNIST's 784 pixels with 10 and with 50 components (the shape where the
/// covariance solver takes its certified partial eigensolver, `solver/leading.rs`) agrees with
/// scikit-learn's `PCA(svd_solver="full")`, LAPACK's SVD of the centred data
/// (`fixtures/generate_mnist.py`): variances, the noise variance (the total less the kept, here,
/// where scikit-learn sums the discarded eigenvalues) and the 10 components up to sign.
#[test]
fn mnist_with_a_fixed_count_agrees_with_scikit_learn() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/mnist/sklearn_full.json"
    );
    let fixture: Value = serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap();
    let env = Env::new();
    for k in [10, 50] {
        let reference = &fixture[format!("k{k}")];
        let output = format!("k{k}.pca");
        let count = k.to_string();
        env.ok(&[
            "fit",
            &mnist(),
            "--exclude",
            "784",
            "--solver",
            "covariance",
            "-k",
            &count,
            "-o",
            &output,
        ]);
        let model = env.inspect(&output);
        let want = numbers(&reference["explained_variance"]);
        let tolerance = 1e-10 * want[0];
        assert_close(
            &eigenvalues(&model),
            &want,
            tolerance,
            &format!("k = {k}, λ"),
        );
        let noise = [model["noise_variance"].as_f64().unwrap()];
        let want_noise = [reference["noise_variance"].as_f64().unwrap()];
        assert_close(
            &noise,
            &want_noise,
            tolerance,
            &format!("k = {k}, noise variance"),
        );
        if k == 10 {
            let (ours, theirs) = (
                matrix(&model["components"]),
                matrix(&reference["components"]),
            );
            for (i, (a, b)) in ours.iter().zip(&theirs).enumerate() {
                let cosine: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
                assert!(
                    (cosine.abs() - 1.0).abs() < 1e-10,
                    "component {i}: |cos| {}",
                    cosine.abs()
                );
            }
        }
    }
}
