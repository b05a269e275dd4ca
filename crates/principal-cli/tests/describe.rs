//! `principal describe` against FactoMineR: every table of `PCA()` and `dimdesc()` on the
//! fixtures of `fixtures/generate_factominer.R` (decathlon with supplementary rows,
//! quantitative and qualitative variables; Iris standardized and not; mtcars with row weights,
//! standardized and not), each quantity to 1e-8 relative, each axis flipped as FactoMineR's;
//! then the CSV files, the text tables and the errors.

use crate::common;

use std::path::{Path, PathBuf};

use common::Env;
use serde_json::Value;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/factominer")
}

fn load(name: &str) -> Value {
    let text = std::fs::read_to_string(fixtures().join(name)).expect("fixture");
    serde_json::from_str(&text).expect("fixture JSON")
}

fn strings(v: &Value) -> Vec<String> {
    match v {
        Value::Array(a) => a
            .iter()
            .map(|s| s.as_str().expect("a name").to_string())
            .collect(),
        // jsonlite writes a one-element vector as a scalar (auto_unbox).
        Value::String(s) => vec![s.clone()],
        other => panic!("not names: {other}"),
    }
}

fn vector(v: &Value) -> Vec<f64> {
    match v {
        Value::Array(a) => a.iter().map(|x| x.as_f64().unwrap_or(f64::NAN)).collect(),
        Value::Number(x) => vec![x.as_f64().unwrap()],
        other => panic!("not numbers: {other}"),
    }
}

fn rows(v: &Value) -> Vec<Vec<f64>> {
    v.as_array().expect("a matrix").iter().map(vector).collect()
}

/// `|ours − theirs| ≤ 1e-8 (|theirs| + floor)`: relative, with `floor` (1e-8 of the largest
/// value of the same quantity) for entries that are zero to rounding in both.
fn close(ours: f64, theirs: f64, floor: f64, what: &str) {
    assert!(
        (ours - theirs).abs() <= 1e-8 * (theirs.abs() + floor),
        "{what}: ours {ours}, FactoMineR {theirs}"
    );
}

struct Flip(Vec<f64>);

/// One table's matrix `key`, rows matched by name, columns by axis (ours flipped by `flip`
/// when `signed`), up to FactoMineR's number of axes.
fn compare_matrix(ours: &Value, theirs: &Value, key: &str, flip: &Flip, signed: bool, what: &str) {
    let (on, tn) = (strings(&ours["names"]), strings(&theirs["names"]));
    let (om, tm) = (rows(&ours[key]), rows(&theirs[key]));
    assert_eq!(on.len(), tn.len(), "{what}: names {on:?} vs {tn:?}");
    let floor = tm.iter().flatten().fold(0.0_f64, |a, b| a.max(b.abs()));
    for (t, name) in tn.iter().enumerate() {
        let o = on
            .iter()
            .position(|n| n == name)
            .unwrap_or_else(|| panic!("{what}: no row {name}"));
        for m in 0..tm[t].len().min(om[o].len()) {
            let sign = if signed { flip.0[m] } else { 1.0 };
            close(
                sign * om[o][m],
                tm[t][m],
                floor,
                &format!("{what}.{key}[{name}][{m}]"),
            );
        }
    }
}

fn compare_vector(ours: &Value, theirs: &Value, key: &str, what: &str) {
    let (on, tn) = (strings(&ours["names"]), strings(&theirs["names"]));
    let (ov, tv) = (vector(&ours[key]), vector(&theirs[key]));
    let floor = tv.iter().fold(0.0_f64, |a, b| a.max(b.abs()));
    for (t, name) in tn.iter().enumerate() {
        let o = on
            .iter()
            .position(|n| n == name)
            .unwrap_or_else(|| panic!("{what}: no row {name}"));
        close(ov[o], tv[t], floor, &format!("{what}.{key}[{name}]"));
    }
}

/// Fits as FactoMineR fits and describes with the fixture's options; compares every table.
fn check_case(case: &str) {
    let expected = load(&format!("{case}.json"));
    let env = Env::new();
    let data = fixtures().join(expected["files"]["data"].as_str().unwrap());
    let data = data.display().to_string();
    let quantitative = expected["quanti_sup"]["names"].clone();
    let quantitative = if quantitative.is_null() {
        vec![]
    } else {
        strings(&quantitative)
    };
    let qualitative = expected["quali_sup"]["eta2"]["names"].clone();
    let qualitative = if qualitative.is_null() {
        vec![]
    } else {
        strings(&qualitative)
    };
    let row_names = match case {
        "decathlon" => Some("athlete"),
        c if c.starts_with("mtcars") => Some("car"),
        _ => None,
    };
    let weighted = case.starts_with("mtcars");
    let mut not_features: Vec<String> = quantitative.iter().chain(&qualitative).cloned().collect();
    not_features.extend(row_names.map(String::from));
    let exclude = not_features.join(",");
    let mut fit = vec![
        "fit",
        &data,
        "-o",
        "model.safetensors",
        "--ddof",
        "0",
        "--exclude",
        &exclude,
    ];
    if expected["scale_unit"].as_bool().unwrap() {
        fit.push("--standardize");
    }
    if weighted {
        fit.extend(["--row-weights", "weight"]);
    }
    env.ok(&fit);
    let (q, l) = (quantitative.join(","), qualitative.join(","));
    let supplementary = expected["files"]["supplementary"]
        .as_str()
        .map(|f| fixtures().join(f).display().to_string());
    let mut args = vec!["describe", "model.safetensors", "--data", &data, "--json"];
    if !q.is_empty() {
        args.extend(["--quantitative", &q]);
    }
    if !l.is_empty() {
        args.extend(["--qualitative", &l]);
    }
    if let Some(r) = row_names {
        args.extend(["--row-names", r]);
    }
    if let Some(s) = &supplementary {
        args.extend(["--supplementary-rows", s]);
    }
    let out = env.run(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ours: Value = serde_json::from_slice(&out.stdout).expect("describe's JSON");

    // eig: FactoMineR lists min(D, N − 1) eigenvalues; every one of them is ours.
    let (oe, te) = (&ours["eig"], &expected["eig"]);
    for key in ["eigenvalue", "percent", "cumulative_percent"] {
        let (o, t) = (vector(&oe[key]), vector(&te[key]));
        let floor = t.iter().fold(0.0_f64, |a, b| a.max(b.abs()));
        for (m, tv) in t.iter().enumerate() {
            close(o[m], *tv, floor, &format!("{case}: eig.{key}[{m}]"));
        }
    }
    // Each axis's orientation from the variables' coordinates.
    let (ov, tv) = (rows(&ours["var"]["coord"]), rows(&expected["var"]["coord"]));
    let axes = tv[0].len();
    assert_eq!(ov[0].len(), axes, "{case}: 5 axes described");
    let flip = Flip(
        (0..axes)
            .map(|m| {
                let dot: f64 = ov.iter().zip(&tv).map(|(o, t)| o[m] * t[m]).sum();
                dot.signum()
            })
            .collect(),
    );
    let tables: [(&str, &[(&str, bool)]); 4] = [
        (
            "var",
            &[
                ("coord", true),
                ("cor", true),
                ("cos2", false),
                ("contrib", false),
            ],
        ),
        (
            "ind",
            &[("coord", true), ("cos2", false), ("contrib", false)],
        ),
        ("ind_sup", &[("coord", true), ("cos2", false)]),
        (
            "quanti_sup",
            &[("coord", true), ("cor", true), ("cos2", false)],
        ),
    ];
    for (table, keys) in tables {
        if expected[table].is_null() {
            assert!(ours[table].is_null(), "{case}: {table} not asked for");
            continue;
        }
        for (key, signed) in keys.iter() {
            compare_matrix(
                &ours[table],
                &expected[table],
                key,
                &flip,
                *signed,
                &format!("{case}: {table}"),
            );
        }
    }
    for table in ["ind", "ind_sup"] {
        if !expected[table].is_null() {
            compare_vector(
                &ours[table],
                &expected[table],
                "dist",
                &format!("{case}: {table}"),
            );
        }
    }
    if !expected["quali_sup"].is_null() {
        let (o, t) = (&ours["quali_sup"], &expected["quali_sup"]);
        for (key, signed) in [("coord", true), ("cos2", false), ("v_test", true)] {
            compare_matrix(o, t, key, &flip, signed, &format!("{case}: quali_sup"));
        }
        compare_vector(o, t, "dist", &format!("{case}: quali_sup"));
        compare_matrix(
            &o["eta2"],
            &t["eta2"],
            "values",
            &flip,
            false,
            &format!("{case}: eta2"),
        );
    }
    // dimdesc: the same significant variables in the same order, flipped where the axis is.
    let (od, td) = (
        ours["dimdesc"].as_array().unwrap(),
        expected["dimdesc"].as_array().unwrap(),
    );
    assert_eq!(od.len(), 3, "{case}: dimdesc describes 3 axes");
    for m in 0..3 {
        for (part, stat, signed) in [
            ("quanti", "correlation", true),
            ("quali", "r2", false),
            ("category", "estimate", true),
        ] {
            let (o, t) = (&od[m][part], &td[m][part]);
            if t.is_null() || t.as_object().is_some_and(|o| o.is_empty()) {
                assert!(
                    o.is_null(),
                    "{case}: dimdesc {m} {part}: ours {o}, none in FactoMineR"
                );
                continue;
            }
            let mut their_names = strings(&t["names"]);
            let mut their_stat = vector(&t[stat]);
            let mut their_p = vector(&t["p_value"]);
            // Flipping an axis reverses FactoMineR's order by correlation (by sign/p-value).
            if signed && flip.0[m] < 0.0 {
                their_names.reverse();
                their_stat.reverse();
                their_p.reverse();
            }
            assert_eq!(
                strings(&o["names"]),
                their_names,
                "{case}: dimdesc {m} {part}"
            );
            let sign = if signed { flip.0[m] } else { 1.0 };
            for (k, (os, op)) in vector(&o[stat])
                .iter()
                .zip(vector(&o["p_value"]))
                .enumerate()
            {
                close(
                    sign * os,
                    their_stat[k],
                    0.0,
                    &format!("{case}: dimdesc {m} {part} {stat} {k}"),
                );
                close(
                    op,
                    their_p[k],
                    0.0,
                    &format!("{case}: dimdesc {m} {part} p {k}"),
                );
            }
        }
    }
}

#[test]
fn decathlon_matches_factominer() {
    check_case("decathlon");
}

#[test]
fn iris_standardized_matches_factominer() {
    check_case("iris-standardized");
}

#[test]
fn iris_unstandardized_matches_factominer() {
    check_case("iris");
}

#[test]
fn weighted_rows_match_factominer() {
    check_case("mtcars-weighted");
}

#[test]
fn weighted_rows_unstandardized_match_factominer() {
    check_case("mtcars-weighted-centred");
}

fn iris_model(env: &Env) -> String {
    let data = fixtures().join("iris.csv").display().to_string();
    env.ok(&[
        "fit",
        &data,
        "-o",
        "m.safetensors",
        "--ddof",
        "0",
        "--standardize",
        "--exclude",
        "Species",
    ]);
    data
}

/// --output writes one CSV per table, the same numbers as the JSON; the text tables name
/// every table.
#[test]
fn csv_files_and_text_tables() {
    let env = Env::new();
    let data = iris_model(&env);
    let out = env.run(&[
        "describe",
        "m.safetensors",
        "--data",
        &data,
        "--qualitative",
        "Species",
        "--json",
        "--output",
        "tables",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    for file in [
        "eig.csv",
        "var.csv",
        "ind.csv",
        "quali_sup.csv",
        "quali_sup_eta2.csv",
        "dimdesc.csv",
    ] {
        assert!(env.path("tables").join(file).exists(), "{file}");
    }
    let var = std::fs::read_to_string(env.path("tables/var.csv")).unwrap();
    let mut lines = var.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(header[0], "name");
    assert_eq!(header[1], "coord.Dim.1");
    assert_eq!(
        header.len(),
        1 + 4 * 4,
        "coord, cor, cos2, contrib for 4 axes"
    );
    let first: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(first[0], "Sepal.Length");
    let value: f64 = first[1].parse().unwrap();
    assert_eq!(value, rows(&json["var"]["coord"])[0][0]);
    assert!(!env.path("tables/ind_sup.csv").exists());

    let text = env.ok(&[
        "describe",
        "m.safetensors",
        "--data",
        &data,
        "--qualitative",
        "Species",
        "--axes",
        "2",
    ]);
    let _ = text;
    let out = env.run(&[
        "describe",
        "m.safetensors",
        "--data",
        &data,
        "--qualitative",
        "Species",
        "--axes",
        "2",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    for title in [
        "Eigenvalues",
        "Individuals",
        "Variables",
        "Supplementary categories",
        "dimdesc: Dim.1",
    ] {
        assert!(text.contains(title), "{title} in\n{text}");
    }
    assert!(text.contains("Species=setosa"));
    assert!(!text.contains("Dim.3"), "--axes 2 shows 2 axes");
}

/// Unknown columns, text where numbers are expected, a column named twice, a data set of
/// another width: errors naming the column or value, exit non-zero, no output written.
#[test]
fn bad_requests_are_errors_naming_what_is_wrong() {
    let env = Env::new();
    let data = iris_model(&env);
    let err = env.fails(
        1,
        &[
            "describe",
            "m.safetensors",
            "--data",
            &data,
            "--quantitative",
            "Petal.Area",
        ],
    );
    assert!(err.contains("Petal.Area"), "{err}");
    let err = env.fails(
        1,
        &[
            "describe",
            "m.safetensors",
            "--data",
            &data,
            "--quantitative",
            "Species",
        ],
    );
    assert!(err.contains("setosa"), "{err}");
    let err = env.fails(
        2,
        &[
            "describe",
            "m.safetensors",
            "--data",
            &data,
            "--quantitative",
            "Species",
            "--qualitative",
            "Species",
        ],
    );
    assert!(err.contains("Species is named twice"), "{err}");
    let err = env.fails(
        2,
        &[
            "describe",
            "m.safetensors",
            "--data",
            &data,
            "--quantitative",
            "Sepal.Length",
        ],
    );
    assert!(
        err.contains("Sepal.Length is one of the model's features"),
        "{err}"
    );
    let narrow = env.write("narrow.csv", "a,b\n1,2\n3,4\n5,7\n");
    env.ok(&["fit", narrow.to_str().unwrap(), "-o", "narrow.safetensors"]);
    let err = env.fails(
        1,
        &[
            "describe",
            "narrow.safetensors",
            "--data",
            &data,
            "--output",
            "never",
        ],
    );
    assert!(err.contains('a'), "{err}");
    assert!(
        !env.path("never").exists(),
        "no output for a failed describe"
    );
}

/// `fit --row-weights`: the column is no feature and is recorded; iterative solvers and
/// missing values are refused; equal weights give the unweighted model.
#[test]
fn row_weights_are_recorded_and_refused_where_unsupported() {
    let env = Env::new();
    let csv = "x,y,z,w\n1,2,0.5,1\n2,1,0.1,1\n3,5,0.9,1\n4,3,0.3,1\n6,4,0.2,1\n";
    let path = env.write("d.csv", csv).display().to_string();
    env.ok(&[
        "fit",
        &path,
        "-o",
        "weighted.safetensors",
        "--row-weights",
        "w",
    ]);
    env.ok(&["fit", &path, "-o", "plain.safetensors", "--exclude", "w"]);
    let (weighted, plain) = (
        env.inspect("weighted.safetensors"),
        env.inspect("plain.safetensors"),
    );
    assert_eq!(weighted["n_features"], 3);
    for key in ["mean", "explained_variance"] {
        let (a, b) = (
            common::numbers(&weighted[key]),
            common::numbers(&plain[key]),
        );
        for (a, b) in a.iter().zip(&b) {
            assert!(
                (a - b).abs() <= 1e-12 * b.abs().max(1.0),
                "{key}: {a} vs {b}"
            );
        }
    }
    let err = env.fails(
        2,
        &[
            "fit",
            &path,
            "-o",
            "r.safetensors",
            "--row-weights",
            "w",
            "--solver",
            "randomized",
            "-k",
            "1",
        ],
    );
    assert!(
        err.contains("--row-weights cannot be used with --solver randomized"),
        "{err}"
    );
    let cv = [
        "fit",
        &path,
        "-o",
        "r.safetensors",
        "--row-weights",
        "w",
        "--components",
        "cv",
    ];
    let err = env.fails(2, &cv);
    assert!(
        err.contains("--row-weights cannot be used with --components cv"),
        "{err}"
    );
    let bad = env.write("bad.csv", "x,y,w\n1,2,1\n2,1,-3\n3,5,1\n");
    let err = env.fails(
        1,
        &[
            "fit",
            bad.to_str().unwrap(),
            "-o",
            "b.safetensors",
            "--row-weights",
            "w",
        ],
    );
    assert!(err.contains("row weight -3 at row 1"), "{err}");
    assert!(!env.path("b.safetensors").exists());
}
