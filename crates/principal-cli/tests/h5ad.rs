//! AnnData `.h5ad` files through the real binary, on the fixtures that `fixtures/generate_h5ad.py`
//! wrote with the `anndata` package (fixtures/h5ad/): X dense, CSR and CSC in float64, float32
//! and int32, compressed with gzip and LZF, a layer, a mask column, the older string encoding —
//! each must give the model of the same counts read from CSV, to 1e-10; `--mask-var` the model
//! of the masked columns alone; `transform --into` scanpy's fields, read back here through
//! the library (the Python `anndata` package reads them in crates/principal-py/tests). The
//! damaged files are in tests/damaged_files.rs.

use crate::common;

use std::path::PathBuf;

use common::{Env, assert_close, assert_same_model};

fn fixture(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/h5ad")
        .join(name)
        .display()
        .to_string()
}

/// The model of `fit INPUT… -k 4 -o MODEL` by the covariance route (which dense and sparse
/// inputs both take), through `inspect --json`, without the fields that name the input.
fn fit_json(env: &Env, input: &[&str], model: &str) -> serde_json::Value {
    fit_json_by(env, input, model, &["--solver", "covariance"])
}

/// The model of `fit INPUT… -k 4 -o MODEL SOLVER…`, as [`fit_json`].
fn fit_json_by(env: &Env, input: &[&str], model: &str, solver: &[&str]) -> serde_json::Value {
    let mut args = vec!["fit"];
    args.extend_from_slice(input);
    args.extend_from_slice(&["-k", "4", "-o", model]);
    args.extend_from_slice(solver);
    env.ok(&args);
    let mut json = env.inspect(model);
    if let Some(object) = json.as_object_mut() {
        // The sparse fit records no iteration report (an absent or null one).
        object.retain(|key, _| {
            !["input", "inputs", "source", "created", "iteration_report"].contains(&key.as_str())
        });
    }
    json
}

#[test]
fn every_encoding_and_element_type_gives_the_csv_model() {
    let env = Env::new();
    let csv = fit_json(&env, &[&fixture("counts.csv")], "csv.pca");
    let mut files = vec![
        "x_csr_gzip.h5ad".to_owned(),
        "x_dense_lzf.h5ad".to_owned(),
        "old_strings.h5ad".to_owned(),
    ];
    for kind in ["csr", "csc", "dense"] {
        for dtype in ["f64", "f32", "i32"] {
            files.push(format!("x_{kind}_{dtype}.h5ad"));
        }
    }
    for name in &files {
        let h5ad = fit_json(&env, &[&fixture(name)], "h.pca");
        assert_same_model(&h5ad, &csv, 1e-10);
    }
    // The sparse encodings go to the sparse core, whose randomized route (mean subtracted
    // inside the products) gives the dense one's model too.
    let randomized = ["--solver", "randomized", "--tolerance", "1e-13"];
    let csv_randomized = fit_json_by(&env, &[&fixture("counts.csv")], "r.pca", &randomized);
    for name in ["x_csr_f64.h5ad", "x_csc_f32.h5ad", "x_csr_gzip.h5ad"] {
        let h5ad = fit_json_by(&env, &[&fixture(name)], "h.pca", &randomized);
        assert_same_model(&h5ad, &csv_randomized, 1e-10);
    }
    // The layer holds the counts; X holds half of them.
    let layer = fit_json(
        &env,
        &[&fixture("layer.h5ad"), "--layer", "counts"],
        "l.pca",
    );
    assert_same_model(&layer, &csv, 1e-10);
    let x = fit_json(&env, &[&fixture("layer.h5ad")], "x.pca");
    assert!(
        (x["explained_variance"][0].as_f64().unwrap()
            - csv["explained_variance"][0].as_f64().unwrap() / 4.0)
            .abs()
            < 1e-9,
        "X is half the counts: {x}"
    );
}

#[test]
fn mask_var_fits_the_masked_genes_alone() {
    let env = Env::new();
    let masked = fit_json(
        &env,
        &[&fixture("mask.h5ad"), "--mask-var", "highly_variable"],
        "m.pca",
    );
    let columns = fit_json(&env, &[&fixture("mask_columns.csv")], "c.pca");
    assert_same_model(&masked, &columns, 1e-10);
    assert_eq!(
        masked["feature_names"],
        serde_json::json!([
            "gene1", "gene2", "gene4", "gene7", "gene8", "gene11", "gene14"
        ])
    );
    let e = env.fails(
        1,
        &[
            "fit",
            &fixture("mask.h5ad"),
            "--mask-var",
            "nope",
            "-o",
            "n.pca",
        ],
    );
    assert!(
        e.contains("no column") && e.contains("highly_variable"),
        "{e}"
    );
    let e = env.fails(
        1,
        &[
            "fit",
            &fixture("mask.h5ad"),
            "--mask-var",
            "mean",
            "-o",
            "n.pca",
        ],
    );
    assert!(e.contains("not booleans"), "{e}");
    let e = env.fails(
        1,
        &[
            "fit",
            &fixture("counts.csv"),
            "--mask-var",
            "x",
            "-o",
            "n.pca",
        ],
    );
    assert!(e.contains(".h5ad files only"), "{e}");
    let e = env.fails(
        1,
        &[
            "fit",
            &fixture("layer.h5ad"),
            "--layer",
            "nope",
            "-o",
            "n.pca",
        ],
    );
    assert!(e.contains("its layers are counts"), "{e}");
}

#[test]
fn transform_of_an_h5ad_equals_that_of_the_csv() {
    let env = Env::new();
    env.ok(&["fit", &fixture("counts.csv"), "-k", "3", "-o", "m.pca"]);
    env.ok(&[
        "transform",
        "m.pca",
        &fixture("counts.csv"),
        "-o",
        "csv.csv",
    ]);
    for name in ["x_csc_f32.h5ad", "x_csr_i32.h5ad", "x_dense_f64.h5ad"] {
        env.ok(&["transform", "m.pca", &fixture(name), "-o", "h.csv"]);
        let (_, a) = env.read_csv("csv.csv");
        let (_, b) = env.read_csv("h.csv");
        assert_close(&b.concat(), &a.concat(), 1e-10, name);
    }
}

#[test]
fn transform_into_writes_scanpys_fields_and_keeps_the_rest() {
    let env = Env::new();
    let data = env.path("data.h5ad");
    std::fs::copy(fixture("mask.h5ad"), &data).unwrap();
    env.ok(&[
        "fit",
        "data.h5ad",
        "--mask-var",
        "highly_variable",
        "-k",
        "3",
        "-o",
        "m.pca",
    ]);
    env.ok(&["transform", "m.pca", "data.h5ad", "-o", "codes.csv"]);
    env.ok(&["transform", "m.pca", "data.h5ad", "--into", "data.h5ad"]);
    // Twice: the second run replaces the first's fields.
    env.ok(&["transform", "m.pca", "data.h5ad", "--into", "data.h5ad"]);
    let leftovers: Vec<_> = std::fs::read_dir(env.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    let file = hdf5_pure::File::open(&data).unwrap();
    let (_, codes) = env.read_csv("codes.csv");
    let x_pca = file.dataset("obsm/X_pca").unwrap();
    assert_eq!(x_pca.shape().unwrap(), vec![40, 3]);
    let stored = x_pca.read_f64().unwrap();
    assert_close(&stored, &codes.concat(), 1e-4, "obsm/X_pca (float32)");
    let model = env.inspect("m.pca");
    let pcs = file.dataset("varm/PCs").unwrap();
    assert_eq!(pcs.shape().unwrap(), vec![15, 3]);
    let pcs = pcs.read_f64().unwrap();
    let components = common::matrix(&model["components"]);
    let kept = [1, 2, 4, 7, 8, 11, 14];
    for gene in 0..15 {
        for c in 0..3 {
            let expected = kept
                .iter()
                .position(|&g| g == gene)
                .map_or(0.0, |f| components[c][f]);
            assert_eq!(pcs[gene * 3 + c], expected, "varm/PCs[{gene}, {c}]");
        }
    }
    let variance = file
        .dataset("uns/pca/variance")
        .unwrap()
        .read_f64()
        .unwrap();
    assert_close(
        &variance,
        &common::numbers(&model["explained_variance"]),
        0.0,
        "variance",
    );
    let ratio = file
        .dataset("uns/pca/variance_ratio")
        .unwrap()
        .read_f64()
        .unwrap();
    assert_close(
        &ratio,
        &common::numbers(&model["explained_variance_ratio"]),
        0.0,
        "variance_ratio",
    );
    // Everything else as it was: X and var's columns read the same.
    let original = hdf5_pure::File::open(fixture("mask.h5ad")).unwrap();
    for name in ["X/data", "X/indices", "X/indptr", "var/mean"] {
        assert_eq!(
            file.dataset(name).unwrap().read_f64().unwrap(),
            original.dataset(name).unwrap().read_f64().unwrap(),
            "{name}"
        );
    }
    let fitted = fit_json(
        &env,
        &["data.h5ad", "--mask-var", "highly_variable"],
        "again.pca",
    );
    let before = fit_json(
        &env,
        &[&fixture("mask.h5ad"), "--mask-var", "highly_variable"],
        "before.pca",
    );
    assert_same_model(&fitted, &before, 0.0);
}

#[test]
fn a_failed_into_leaves_the_file_as_it_was() {
    let env = Env::new();
    let data = env.path("data.h5ad");
    std::fs::copy(fixture("x_csr_f64.h5ad"), &data).unwrap();
    // Codes of 5 cells cannot go into a file of 40: found when writing, after the codes.
    env.ok(&["fit", &fixture("counts.csv"), "-o", "m.pca"]);
    let counts = std::fs::read_to_string(fixture("counts.csv")).unwrap();
    let short: Vec<&str> = counts.lines().take(6).collect();
    env.write("short.csv", short.join("\n"));
    let before = std::fs::read(&data).unwrap();
    let e = env.fails(
        1,
        &["transform", "m.pca", "short.csv", "--into", "data.h5ad"],
    );
    assert!(e.contains("40 cells (obs) but 5 rows"), "{e}");
    // A model without feature names neither.
    env.write("plain.csv", "1,2\n3,5\n4,4\n");
    env.ok(&["fit", "plain.csv", "--no-header", "-o", "plain.pca"]);
    env.fails(
        1,
        &["transform", "plain.pca", "plain.csv", "--into", "data.h5ad"],
    );
    assert_eq!(std::fs::read(&data).unwrap(), before);
    let leftovers: Vec<_> = std::fs::read_dir(env.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    let e = env.fails(
        2,
        &[
            "transform",
            "plain.pca",
            "plain.csv",
            "--into",
            "d.h5ad",
            "-o",
            "c.csv",
        ],
    );
    assert!(e.contains("--into"), "{e}");
}

#[test]
fn sparse_matrices_are_read_as_csr_blocks_and_dense_ones_as_rows() {
    let env = Env::new();
    // 133 entries: 1.6 KB as CSR arrays, within half of any limit (at least 1M): fit reads
    // them once and every pass runs from memory (the streamed passes of larger files are
    // format::mtx's unit test's).
    let held = "data read into memory: sparse rows read once and held as CSR arrays";
    for (name, route) in [
        ("x_csr_f64.h5ad", Some(held)),
        ("x_csc_i32.h5ad", Some(held)),
        ("x_dense_f64.h5ad", None),
    ] {
        let stderr = env.ok(&["fit", &fixture(name), "-k", "2", "-o", "m.pca", "--explain"]);
        match route {
            Some(route) => {
                assert!(stderr.contains(route), "{name}: {stderr}");
                assert!(
                    stderr.contains("why: sparse, 133 non-zeros"),
                    "{name}: {stderr}"
                );
            }
            None => {
                assert!(!stderr.contains("AnnData"), "{name}: {stderr}");
                assert!(!stderr.contains("why: sparse"), "{name}: {stderr}");
            }
        }
    }
    // The mask applies to the sparse blocks: the masked genes' model, by the sparse route.
    let stderr = env.ok(&[
        "fit",
        &fixture("mask.h5ad"),
        "--mask-var",
        "highly_variable",
        "-k",
        "2",
        "-o",
        "m.pca",
        "--explain",
    ]);
    assert!(stderr.contains("held as CSR arrays"), "{stderr}");
}

/// `transform` of an .h5ad CSR matrix reads sparse row blocks and projects them, never
/// densified: wide_csr.h5ad is 60 × 200,000 with 3,000 entries — one dense row takes 1.6 MB,
/// the whole CSR matrix 36 kB — and under --memory-limit 1M its codes equal those of the same
/// entries as MatrixMarket. Densifying rows shows in the process's peak memory (≈ 240 MB
/// through the dense reader on this file, ≈ 70 MB sparse), which the summary reports.
#[test]
fn transform_of_a_wide_sparse_h5ad_reads_sparse_blocks_within_the_memory_limit() {
    let env = Env::new();
    env.ok(&[
        "fit",
        &fixture("wide.mtx"),
        "-k",
        "3",
        "--solver",
        "randomized",
        "-o",
        "w.pca",
    ]);
    env.ok(&["transform", "w.pca", &fixture("wide.mtx"), "-o", "mtx.csv"]);
    let said = env.ok(&[
        "transform",
        "w.pca",
        &fixture("wide_csr.h5ad"),
        "-o",
        "h5ad.csv",
        "--memory-limit",
        "1M",
    ]);
    let (_, a) = env.read_csv("mtx.csv");
    let (_, b) = env.read_csv("h5ad.csv");
    assert_eq!(b.len(), 60);
    assert_close(&b.concat(), &a.concat(), 1e-10, "wide h5ad");
    let peak: f64 = said
        .split("peak memory ")
        .nth(1)
        .and_then(|rest| rest.split(" MB").next())
        .and_then(|mb| mb.trim().parse().ok())
        .unwrap_or_else(|| panic!("no peak memory in {said}"));
    assert!(peak < 150.0, "peak memory {peak} MB: {said}");
}
