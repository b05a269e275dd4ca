//! `principal stats` and `principal merge`: statistics of parts of a data set, computed
//! separately, merge into the model one `fit` over all of it gives — for every split, under an
//! offset of 1e6 — and parts that do not belong together are refused with a clear error.

use crate::common;

use common::*;

/// `inspect --json` of a model, without what legitimately differs between a fit and a merge.
fn model_json(env: &Env, model: &str) -> serde_json::Value {
    let mut json = env.inspect(model);
    json.as_object_mut().unwrap().remove("iteration_report");
    json
}

#[test]
fn merged_parts_of_iris_give_the_fitted_model() {
    let env = Env::new();
    let (names, rows) = iris_rows();
    env.ok(&[
        "fit",
        &iris(),
        "--exclude",
        "species",
        "--solver",
        "covariance",
        "-o",
        "fit.pca",
    ]);
    let whole = model_json(&env, "fit.pca");
    // Files of 1, 49 and 100 rows: whole files, one part each.
    let mut parts = Vec::new();
    for (k, (start, end)) in [(0, 1), (1, 50), (50, 150)].into_iter().enumerate() {
        let name = format!("rows-{k}.csv");
        env.write(&name, to_csv(Some(&names), &rows[start..end]));
        let part = format!("part-{k}.stats");
        let said = env.ok(&["stats", &name, "-o", &part]);
        assert!(said.contains(&format!(
            "statistics of {} samples × 4 features",
            end - start
        )));
        parts.push(part);
    }
    let mut args = vec!["merge"];
    args.extend(parts.iter().map(String::as_str));
    args.extend(["-o", "merged.pca"]);
    let said = env.ok(&args);
    assert!(
        said.contains(
            "fitted 4 component(s) to 150 samples × 4 features from 3 statistics file(s)"
        ),
        "{said}"
    );
    assert_same_model(&model_json(&env, "merged.pca"), &whole, 1e-12);
    // The feature names travel through the parts into the model.
    assert_eq!(
        env.inspect("merged.pca")["feature_names"],
        serde_json::json!(["sepal_length", "sepal_width", "petal_length", "petal_width"])
    );
    // --part I/N of one file: the same, for several N.
    for n in [1, 2, 3, 7] {
        let mut args: Vec<String> = vec!["merge".into()];
        for i in 0..n {
            let part = format!("p{i}-of-{n}.stats");
            let spec = format!("{i}/{n}");
            env.ok(&[
                "stats",
                &iris(),
                "--exclude",
                "species",
                "--part",
                &spec,
                "-o",
                &part,
            ]);
            args.push(part);
        }
        args.extend(["-k".into(), "2".into(), "-o".into(), format!("m{n}.pca")]);
        env.ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
        env.ok(&[
            "fit",
            &iris(),
            "--exclude",
            "species",
            "--solver",
            "covariance",
            "-k",
            "2",
            "-o",
            "fit2.pca",
        ]);
        assert_same_model(
            &model_json(&env, &format!("m{n}.pca")),
            &model_json(&env, "fit2.pca"),
            1e-12,
        );
    }
}

#[test]
fn every_split_under_an_offset_of_a_million_merges_to_the_fit() {
    let env = Env::new();
    let mut rng = Lcg(42);
    let rows: Vec<Vec<f64>> = (0..300)
        .map(|_| {
            (0..5)
                .map(|j| 1e6 + (j as f64 + 1.0) * rng.next())
                .collect()
        })
        .collect();
    env.write("all.npy", npy(&rows, false));
    for standardize in [false, true] {
        let flag: &[&str] = if standardize { &["--standardize"] } else { &[] };
        let mut fit = vec![
            "fit",
            "all.npy",
            "--solver",
            "covariance",
            "-k",
            "3",
            "-o",
            "fit.pca",
        ];
        fit.extend(flag);
        env.ok(&fit);
        let whole = model_json(&env, "fit.pca");
        for cuts in [
            vec![0, 300],
            vec![0, 1, 300],
            vec![0, 150, 151, 299, 300],
            vec![0, 7, 100, 200, 300],
        ] {
            let mut merge: Vec<String> = vec!["merge".into()];
            for (k, w) in cuts.windows(2).enumerate() {
                let name = format!("rows-{k}.npy");
                env.write(&name, npy(&rows[w[0]..w[1]], false));
                let part = format!("rows-{k}.stats");
                let mut stats = vec!["stats", name.as_str(), "-o", part.as_str()];
                stats.extend(flag);
                env.ok(&stats);
                merge.push(part);
            }
            merge.extend(["-k", "3", "-o", "merged.pca"].map(String::from));
            env.ok(&merge.iter().map(String::as_str).collect::<Vec<_>>());
            // The parts' sums differ from one pass's by rounding at 1e6 (ε·1e6 of the spread).
            assert_same_model(&model_json(&env, "merged.pca"), &whole, 1e-9);
        }
    }
}

#[test]
fn parts_that_do_not_belong_together_are_refused() {
    let env = Env::new();
    env.ok(&["stats", &iris(), "--exclude", "species", "-o", "four.stats"]);
    env.ok(&[
        "stats",
        &iris(),
        "--columns",
        "sepal_length,sepal_width",
        "-o",
        "two.stats",
    ]);
    env.ok(&[
        "stats",
        &iris(),
        "--columns",
        "sepal_length,sepal_width,petal_length,petal_width",
        "-o",
        "same.stats",
    ]);
    env.ok(&[
        "stats",
        &iris(),
        "--columns",
        "sepal_width,sepal_length,petal_length,petal_width",
        "-o",
        "swapped.stats",
    ]);
    env.ok(&[
        "stats",
        &iris(),
        "--exclude",
        "species",
        "--standardize",
        "-o",
        "std.stats",
    ]);
    // Same features, same names: fine.
    env.ok(&["merge", "four.stats", "same.stats", "-o", "ok.pca"]);
    let e = env.fails(1, &["merge", "four.stats", "two.stats", "-o", "m.pca"]);
    assert!(e.contains("statistics file two.stats cannot be merged with four.stats: it has 2 features, the first has 4"), "{e}");
    let e = env.fails(1, &["merge", "four.stats", "swapped.stats", "-o", "m.pca"]);
    assert!(
        e.contains("its feature 1 is \"sepal_width\" where the first has \"sepal_length\""),
        "{e}"
    );
    let e = env.fails(1, &["merge", "four.stats", "std.stats", "-o", "m.pca"]);
    assert!(
        e.contains("it is standardized where the first is centred only"),
        "{e}"
    );
    // Another version of the format.
    let bytes = std::fs::read(env.path("four.stats")).unwrap();
    let key = b"\"format_version\":\"1\"";
    let at = bytes.windows(key.len()).position(|w| w == key).unwrap();
    let mut v9 = bytes.clone();
    v9[at + key.len() - 2] = b'9';
    env.write("v9.stats", v9);
    let e = env.fails(1, &["merge", "four.stats", "v9.stats", "-o", "m.pca"]);
    assert!(
        e.contains("statistics file v9.stats has format version 9; this principal reads version 1"),
        "{e}"
    );
    // A model is not a statistics file, nor is data.
    env.ok(&["fit", &iris(), "--exclude", "species", "-o", "model.pca"]);
    let e = env.fails(1, &["merge", "four.stats", "model.pca", "-o", "m.pca"]);
    assert!(
        e.contains("model.pca is not a principal statistics file"),
        "{e}"
    );
    assert!(!env.path("m.pca").exists(), "no model from a failed merge");
    // Usage: --part out of range, a solver merge does not have.
    let e = env.fails(2, &["stats", &iris(), "--part", "3/3", "-o", "x.stats"]);
    assert!(
        e.contains("--part \"3/3\" is not I/N with 0 ≤ I < N"),
        "{e}"
    );
}

/// Rank 3 plus isotropic noise, 400×12, offset: a spectrum that mle and gavish-donoho read.
fn rank_three_rows() -> Vec<Vec<f64>> {
    let mut rng = Lcg(7);
    (0..400)
        .map(|_| {
            let z: Vec<f64> = (0..3).map(|_| 2.0 * rng.next() - 1.0).collect();
            (0..12)
                .map(|j| {
                    let signal = 10.0 * z[0] * (j as f64 + 1.0) / 12.0
                        + 6.0 * z[1] * ((j % 3) as f64 - 1.0)
                        + 4.0 * z[2] * if j < 6 { 1.0 } else { -1.0 };
                    100.0 + signal + 0.3 * (rng.next() - 0.5)
                })
                .collect()
        })
        .collect()
}

/// `merge --components mle|gavish-donoho` chooses from the merged spectrum what `fit` chooses
/// from the data (the number, the reason and the model), standardized or not, with the noise
/// level known or estimated; the summary says how the count was chosen.
#[test]
fn merge_chooses_the_components_fit_chooses() {
    let env = Env::new();
    let rows = rank_three_rows();
    env.write("all.npy", npy(&rows, false));
    let mut parts = Vec::new();
    for (k, w) in [0, 90, 91, 400].windows(2).enumerate() {
        let name = format!("rows-{k}.npy");
        env.write(&name, npy(&rows[w[0]..w[1]], false));
        parts.push(name);
    }
    let criteria: [&[&str]; 3] = [
        &["--components", "mle"],
        &["--components", "gavish-donoho"],
        &["-k", "gavish-donoho", "--noise-sigma", "0.0866"],
    ];
    for standardize in [false, true] {
        let flag: &[&str] = if standardize { &["--standardize"] } else { &[] };
        let mut stats_files = Vec::new();
        for (k, name) in parts.iter().enumerate() {
            let part = format!("part-{k}-{standardize}.stats");
            let mut stats = vec!["stats", name.as_str(), "-o", part.as_str()];
            stats.extend(flag);
            env.ok(&stats);
            stats_files.push(part);
        }
        for criterion in criteria {
            let mut fit = vec!["fit", "all.npy", "--solver", "covariance", "-o", "fit.pca"];
            fit.extend(flag);
            fit.extend(criterion);
            env.ok(&fit);
            let mut merge = vec!["merge"];
            merge.extend(stats_files.iter().map(String::as_str));
            merge.extend(criterion);
            merge.extend(["-o", "merged.pca"]);
            let said = env.ok(&merge);
            let (merged, whole) = (model_json(&env, "merged.pca"), model_json(&env, "fit.pca"));
            let chosen = whole["n_components"].as_u64().unwrap();
            if !standardize {
                assert_eq!(chosen, 3, "{criterion:?} on rank-3 data");
            }
            assert!(
                said.contains(&format!("fitted {chosen} component(s) to 400 samples"))
                    && said.contains(&format!(
                        "components: {chosen} component(s) chosen by {}",
                        criterion[1]
                    )),
                "{criterion:?}: {said}"
            );
            assert_same_model(&merged, &whole, 1e-9);
        }
    }
}

/// cv needs the rows: `merge --components cv` is a usage error that says why; --noise-sigma
/// without gavish-donoho too. Nothing is written.
#[test]
fn merge_refuses_cross_validation_and_a_misplaced_noise_level() {
    let env = Env::new();
    env.ok(&["stats", &iris(), "--exclude", "species", "-o", "four.stats"]);
    let e = env.fails(2, &["merge", "four.stats", "-k", "cv", "-o", "m.pca"]);
    assert!(
        e.contains("--components cv is not available to merge")
            && e.contains("statistics files hold moments, not rows"),
        "{e}"
    );
    let e = env.fails(
        2,
        &[
            "merge",
            "four.stats",
            "-k",
            "mle",
            "--noise-sigma",
            "0.5",
            "-o",
            "m.pca",
        ],
    );
    assert!(
        e.contains("--noise-sigma applies only to --components gavish-donoho"),
        "{e}"
    );
    assert!(!env.path("m.pca").exists());
}
