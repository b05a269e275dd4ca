//! `principal classify`: recognition by nearest codes. Its accuracy and confusion matrix on a
//! split of the committed digits (data/mnist-5k.csv.gz: every fifth row a test sample) equal a
//! brute-force reference computed here — every test code against every training code, the
//! distance summed directly, the labels voted — on codes of the same model; one fit with the
//! largest K gives what separate fits give; and bad input is a clear error.

use crate::common;

use std::fs;

use common::{Env, data};
use principal::faer::{Mat, MatRef};
use principal::{ComponentCount, PcaBuilder, PcaModel, Solver};
use principal_io::{Matrix, ReadOptions, read_table};
use serde_json::Value;

/// Writes `train.csv` (rows i with i % 5 ≠ 4) and `test.csv` (i % 5 = 4) from the first
/// `rows` digits: 784 pixels then the label, no header, as in the source file.
fn split(env: &Env, rows: usize) {
    let table = read_table(&[data("mnist-5k.csv.gz")], &ReadOptions::default()).unwrap();
    let x = table.data.into_f64();
    let line = |i: usize| -> String {
        let values: Vec<String> = (0..785)
            .map(|j| format!("{}", x.as_ref()[(i, j)]))
            .collect();
        values.join(",") + "\n"
    };
    // The file is sorted by digit: take rows from across it.
    let picked: Vec<usize> = (0..rows).map(|i| i * x.nrows() / rows).collect();
    let text = |test: bool| -> String {
        (0..rows)
            .filter(|n| (n % 5 == 4) == test)
            .map(|n| line(picked[n]))
            .collect()
    };
    env.write("train.csv", text(false));
    env.write("test.csv", text(true));
}

/// A split file as the CLI reads it (the same reader: f32 or f64, row by row) and its labels
/// (the last column).
fn read_split(env: &Env, name: &str) -> (Matrix, Vec<String>) {
    let table = read_table(&[env.path(name)], &ReadOptions::default()).unwrap();
    let all = table.data.to_f64();
    let labels = (0..all.nrows())
        .map(|i| format!("{}", all.as_ref()[(i, 784)]))
        .collect();
    (table.data, labels)
}

/// Fits `k` components to the pixels of a split (its first 784 columns, a row-major view, as
/// the CLI's own matrix is).
fn fit(x: &Matrix, k: usize, solver: Solver) -> PcaModel {
    let params = PcaBuilder::new()
        .components(ComponentCount::Fixed(k))
        .solver(solver)
        .build()
        .unwrap();
    match x {
        Matrix::F32(x) => params.fit(x.as_ref().subcols(0, 784)),
        Matrix::F64(x) => params.fit(x.as_ref().subcols(0, 784)),
    }
    .unwrap()
}

/// The codes of the pixels of a split.
fn codes(model: &PcaModel, x: &Matrix) -> Mat<f64> {
    match x {
        Matrix::F32(x) => model.transform(x.as_ref().subcols(0, 784)),
        Matrix::F64(x) => model.transform(x.as_ref().subcols(0, 784)),
    }
    .unwrap()
}

/// Brute force: for every test code the squared distance to every training code on the first
/// `k` components, summed term by term; the `n` nearest (ties to the earlier training row);
/// the majority label (a tie to the label met first, i.e. whose nearest code is nearest).
fn brute_force(
    train: MatRef<'_, f64>,
    train_labels: &[String],
    test: MatRef<'_, f64>,
    k: usize,
    n: usize,
) -> Vec<String> {
    (0..test.nrows())
        .map(|t| {
            let mut all: Vec<(f64, usize)> = (0..train.nrows())
                .map(|r| {
                    let mut d = 0.0;
                    for j in 0..k {
                        let e = test[(t, j)] - train[(r, j)];
                        d += e * e;
                    }
                    (d, r)
                })
                .collect();
            all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            let mut votes: Vec<(&str, usize)> = Vec::new();
            for &(_, r) in &all[..n] {
                let label = train_labels[r].as_str();
                match votes.iter_mut().find(|(l, _)| *l == label) {
                    Some((_, count)) => *count += 1,
                    None => votes.push((label, 1)),
                }
            }
            let most = votes.iter().map(|v| v.1).max().unwrap();
            votes.iter().find(|v| v.1 == most).unwrap().0.to_owned()
        })
        .collect()
}

fn classify_json(env: &Env, args: &[&str]) -> Value {
    let mut all = vec![
        "classify",
        "--train",
        "train.csv",
        "--test",
        "test.csv",
        "--label-column",
        "784",
        "--json",
    ];
    all.extend_from_slice(args);
    let out = env.run(&all);
    assert!(
        out.status.success(),
        "classify failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("classify --json prints one JSON object")
}

#[test]
fn accuracy_and_confusion_equal_a_brute_force_search_on_the_same_codes() {
    let env = Env::new();
    split(&env, 1500);
    let (train_x, train_labels) = read_split(&env, "train.csv");
    let (test_x, test_labels) = read_split(&env, "test.csv");
    assert_eq!((train_x.nrows(), test_x.nrows()), (1200, 300));
    for neighbours in [1, 4] {
        let json = classify_json(
            &env,
            &["-k", "20,3,8", "--neighbours", &neighbours.to_string()],
        );
        assert_eq!(json["n_train"], 1200);
        assert_eq!(json["n_test"], 300);
        let classes: Vec<String> = json["classes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap().to_owned())
            .collect();
        assert_eq!(classes, (0..10).map(|d| d.to_string()).collect::<Vec<_>>());
        let solver: Solver = json["solver"].as_str().unwrap().parse().unwrap();
        // The reference fits the largest K with the solver classify reports, as classify does.
        let model = fit(&train_x, 20, solver);
        let train_codes = codes(&model, &train_x);
        let test_codes = codes(&model, &test_x);
        let results = json["results"].as_array().unwrap();
        let ks: Vec<u64> = results
            .iter()
            .map(|r| r["components"].as_u64().unwrap())
            .collect();
        assert_eq!(ks, [3, 8, 20], "sorted");
        for result in results {
            let k = result["components"].as_u64().unwrap() as usize;
            let predicted = brute_force(
                train_codes.as_ref(),
                &train_labels,
                test_codes.as_ref(),
                k,
                neighbours,
            );
            let mut confusion = vec![vec![0u64; 10]; 10];
            for (p, t) in predicted.iter().zip(&test_labels) {
                confusion[t.parse::<usize>().unwrap()][p.parse::<usize>().unwrap()] += 1;
            }
            let correct: u64 = (0..10).map(|c| confusion[c][c]).sum();
            assert_eq!(result["correct"], correct, "K = {k}, N = {neighbours}");
            // (serde_json parses floats to within an ulp here.)
            let accuracy = result["accuracy"].as_f64().unwrap();
            assert!((accuracy - correct as f64 / 300.0).abs() < 1e-15);
            let drawn: Vec<Vec<u64>> = result["confusion"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| {
                    r.as_array()
                        .unwrap()
                        .iter()
                        .map(|c| c.as_u64().unwrap())
                        .collect()
                })
                .collect();
            assert_eq!(drawn, confusion, "K = {k}, N = {neighbours}");
        }
        // Not a vacuous comparison: recognition works on digits.
        let best = results
            .iter()
            .map(|r| r["accuracy"].as_f64().unwrap())
            .fold(0.0, f64::max);
        assert!(best > 0.8, "best accuracy {best}");
    }
}

#[test]
fn one_fit_with_the_largest_k_gives_what_a_fit_per_k_gives() {
    let env = Env::new();
    split(&env, 1000);
    let together = classify_json(&env, &["-k", "4,12,30"]);
    for (i, k) in ["4", "12", "30"].iter().enumerate() {
        let alone = classify_json(&env, &["-k", k]);
        assert_eq!(
            alone["results"][0], together["results"][i],
            "K = {k} fitted alone and as the first {k} of 30"
        );
    }
    // The components themselves: the first K of the K_max fit are the K fit's, to rounding.
    let (train_x, _) = read_split(&env, "train.csv");
    let solver: Solver = together["solver"].as_str().unwrap().parse().unwrap();
    let (small, large) = (fit(&train_x, 4, solver), fit(&train_x, 30, solver));
    for i in 0..4 {
        for j in 0..784 {
            let (a, b) = (small.components()[(i, j)], large.components()[(i, j)]);
            assert!(
                (a - b).abs() < 1e-12,
                "component {i}, feature {j}: {a} and {b}"
            );
        }
    }
}

#[test]
fn the_text_output_shows_the_accuracy_table_and_the_best_confusion_matrix() {
    let env = Env::new();
    split(&env, 500);
    let out = env.run(&[
        "classify",
        "--train",
        "train.csv",
        "--test",
        "test.csv",
        "--label-column",
        "784",
        "-k",
        "2,10",
    ]);
    assert!(out.status.success());
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        stdout.starts_with("100 test samples labelled with the label of the nearest training code among 400 (10 classes)"),
        "{stdout}"
    );
    assert!(stdout.contains("     K  accuracy  correct\n"), "{stdout}");
    assert!(
        stdout.contains("confusion matrix at K = 10 (the best accuracy): rows are true labels"),
        "{stdout}"
    );
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr
            .contains("nearest-neighbour search (100 test × 400 training codes, blocked products)"),
        "{stderr}"
    );
}

#[test]
fn with_report_the_confusion_and_accuracy_figures_hold_the_printed_numbers() {
    let env = Env::new();
    split(&env, 500);
    let json = classify_json(
        &env,
        &[
            "-k",
            "2,5,10",
            "--report",
            "recognition",
            "--image-shape",
            "28x28",
        ],
    );
    let dir = env.path("recognition");
    for stem in [
        "confusion-matrix",
        "accuracy",
        "projection",
        "components",
        "reconstructions",
    ] {
        for extension in ["png", "svg"] {
            let path = dir.join(format!("{stem}.{extension}"));
            assert!(
                fs::metadata(&path).map(|m| m.len() > 1000).unwrap_or(false),
                "{}",
                path.display()
            );
        }
    }
    let best = json["best_components"].as_u64().unwrap();
    let result = json["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["components"] == best)
        .unwrap();
    let csv = fs::read_to_string(dir.join("confusion-matrix.csv")).unwrap();
    let mut expected = String::from("true,predicted,count\n");
    for (t, row) in result["confusion"].as_array().unwrap().iter().enumerate() {
        for (p, count) in row.as_array().unwrap().iter().enumerate() {
            expected += &format!("{t},{p},{count}\n");
        }
    }
    assert_eq!(csv, expected);
    let drawn: Vec<(u64, f64)> = fs::read_to_string(dir.join("accuracy.csv"))
        .unwrap()
        .lines()
        .skip(1)
        .map(|line| {
            let fields: Vec<&str> = line.split(',').collect();
            assert_eq!(fields[0], "accuracy");
            (fields[1].parse().unwrap(), fields[2].parse().unwrap())
        })
        .collect();
    let printed: Vec<(u64, f64)> = json["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let (k, correct) = (
                r["components"].as_u64().unwrap(),
                r["correct"].as_u64().unwrap(),
            );
            (k, correct as f64 / 100.0)
        })
        .collect();
    assert_eq!(drawn, printed);
    let html = fs::read_to_string(dir.join("index.html")).unwrap();
    assert!(html.contains(&format!("on the first {best} components")));
}

#[test]
fn bad_input_is_a_clear_error() {
    let env = Env::new();
    split(&env, 500);
    env.write("few.txt", "1\n2\n3\n");
    let stderr = env.fails(
        1,
        &[
            "classify",
            "--train",
            "train.csv",
            "--train-labels",
            "few.txt",
            "--test",
            "test.csv",
            "--test-labels",
            "few.txt",
        ],
    );
    assert!(
        stderr.contains("--train: 3 label(s) for the 400 rows of train.csv (few.txt)"),
        "{stderr}"
    );
    let label = ["--label-column", "784"];
    let base = ["classify", "--train", "train.csv", "--test", "test.csv"];
    let with = |extra: &[&str]| -> Vec<String> {
        base.iter()
            .chain(&label)
            .chain(extra)
            .map(|s| s.to_string())
            .collect()
    };
    let run = |code: i32, extra: &[&str]| {
        let args = with(extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        env.fails(code, &args)
    };
    let stderr = run(1, &["-k", "401"]);
    assert!(stderr.contains("--components 401 is too many"), "{stderr}");
    let stderr = run(1, &["--neighbours", "401"]);
    assert!(
        stderr.contains("--neighbours 401 is more than the 400 training rows"),
        "{stderr}"
    );
    let stderr = run(2, &["--neighbours", "0"]);
    assert!(stderr.contains("--neighbours 0 is not allowed"), "{stderr}");
    let stderr = run(2, &["-k", "0"]);
    assert!(stderr.contains("--components 0 is not allowed"), "{stderr}");
    let stderr = env.fails(2, &base);
    assert!(stderr.contains("--train-labels"), "{stderr}");
    env.write("narrow.csv", "1,2,3\n4,5,6\n");
    let stderr = env.fails(
        1,
        &[
            "classify",
            "--train",
            "train.csv",
            "--test",
            "narrow.csv",
            "--label-column",
            "784",
        ],
    );
    assert!(
        stderr.contains("column index 784 is out of range"),
        "{stderr}"
    );
    // Refused before the fit, naming the training data's width.
    let stderr = run(1, &["--report", "out", "--image-shape", "27x27"]);
    assert!(
        stderr.contains(
            "--image-shape: image shape 27×27 has 729 pixels but the training data train.csv \
             has 784 features"
        ),
        "{stderr}"
    );
    assert!(!env.path("out").exists());
}

/// Writes `train.csv` (60,000 rows) and `test.csv` (10,000 rows) of two features and a label
/// column `label` whose values are continuous (every row its own value), as a regression
/// target's would be: 70,000 distinct labels.
fn continuous_labels(env: &Env) {
    let text = |rows: std::ops::Range<usize>| -> String {
        let mut s = String::from("x0,x1,label\n");
        for i in rows {
            let t = i as f64;
            s += &format!(
                "{},{},{}\n",
                (t * 0.37).sin(),
                (t * 0.11).cos(),
                0.5 + t * 1e-3
            );
        }
        s
    };
    env.write("train.csv", text(0..60_000));
    env.write("test.csv", text(60_000..70_000));
}

/// Sizes that come from the data and the command line are checked against the budget before
/// anything of that size is made, each with a clear error: a label column of continuous
/// values (70,000 classes, whose confusion matrices would take 78 GB) names the column and the
/// count of distinct labels; --neighbours that would need 9.6 GB of neighbour lists says so
/// and the most the budget allows; an image shape whose pixel count overflows (and would wrap
/// to 784) is a usage error.
#[test]
fn sizes_from_labels_and_flags_are_checked_before_allocating() {
    let env = Env::new();
    continuous_labels(&env);
    let base = [
        "classify",
        "--train",
        "train.csv",
        "--test",
        "test.csv",
        "--label-column",
        "label",
        "--memory-limit",
        "4G",
    ];
    let run = |code: i32, extra: &[&str]| {
        let args: Vec<&str> = base.iter().chain(extra).copied().collect();
        env.fails(code, &args)
    };
    let stderr = run(1, &[]);
    assert!(
        stderr.contains(
            "the labels (column label of train.csv; column label of test.csv) have 70000 \
             distinct values: 2 confusion matrices of 70000×70000 counts would take 78.4 GB, \
             over the memory limit of 4.00 GB (--memory-limit)"
        ),
        "{stderr}"
    );
    let stderr = run(1, &["--neighbours", "60000"]);
    assert!(
        stderr.contains(
            "--neighbours 60000: the lists of the 60000 nearest training codes of 10000 test \
             rows would take 9.60 GB, over the memory limit of 4.00 GB (--memory-limit); use \
             at most 25000"
        ),
        "{stderr}"
    );
    // 9223372036854776200 × 2 wraps to 784 = 28×28 in 64-bit arithmetic.
    let stderr = run(
        2,
        &["--report", "out", "--image-shape", "9223372036854776200x2"],
    );
    assert!(
        stderr.contains(
            "--image-shape \"9223372036854776200x2\": image shape 9223372036854776200×2 has \
             more pixels than this machine can count"
        ),
        "{stderr}"
    );
    assert!(!env.path("out").exists());
}
