//! The interpretation figures (correlation circle, biplot, contributions, individuals by
//! category): drawn by `report --data` and `describe --output --figures`, and the numbers in
//! the CSV beside each are `describe`'s quantities.

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};

use common::{Env, iris, matrix, numbers};
use serde_json::Value;

fn decathlon() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/factominer/decathlon.csv")
        .display()
        .to_string()
}

/// A figure's CSV: `name,group,values...` rows.
fn table(path: PathBuf) -> Vec<(String, String, Vec<f64>)> {
    let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines();
    assert!(lines.next().unwrap().starts_with("name,group,"));
    lines
        .map(|l| {
            let cells: Vec<&str> = l.split(',').collect();
            (
                cells[0].to_owned(),
                cells[1].to_owned(),
                cells[2..].iter().map(|c| c.parse().unwrap()).collect(),
            )
        })
        .collect()
}

fn close(a: f64, b: f64, what: &str) {
    assert!(
        (a - b).abs() <= 1e-12 * a.abs().max(b.abs()).max(1.0),
        "{what}: {a} vs {b}"
    );
}

fn names(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect()
}

/// Checks the four CSVs in `dir` against `describe --json`'s tables `d`.
fn check_against_describe(dir: &Path, d: &Value, group_column: Option<&str>) {
    let var_names = names(&d["var"]["names"]);
    let cor = matrix(&d["var"]["cor"]);
    let coord = matrix(&d["var"]["coord"]);
    let contrib = matrix(&d["var"]["contrib"]);
    let eig = numbers(&d["eig"]["eigenvalue"]);

    let circle = table(dir.join("correlation-circle.csv"));
    let active: Vec<_> = circle.iter().filter(|r| r.1 == "active").collect();
    assert_eq!(active.len(), var_names.len());
    for (j, r) in active.iter().enumerate() {
        assert_eq!(r.0, var_names[j]);
        close(r.2[0], cor[j][0], "circle dim1");
        close(r.2[1], cor[j][1], "circle dim2");
    }
    let supplementary: Vec<_> = circle.iter().filter(|r| r.1 == "supplementary").collect();
    if d["quanti_sup"].is_null() {
        assert!(supplementary.is_empty());
    } else {
        let sup = matrix(&d["quanti_sup"]["cor"]);
        assert_eq!(supplementary.len(), sup.len());
        for (j, r) in supplementary.iter().enumerate() {
            close(r.2[0], sup[j][0], "supplementary dim1");
            close(r.2[1], sup[j][1], "supplementary dim2");
        }
    }

    let ind = matrix(&d["ind"]["coord"]);
    let biplot = table(dir.join("biplot.csv"));
    let points: Vec<_> = biplot.iter().filter(|r| r.1 == "individual").collect();
    let arrows: Vec<_> = biplot.iter().filter(|r| r.1 == "variable").collect();
    assert_eq!(points.len(), ind.len());
    for (i, r) in points.iter().enumerate() {
        close(r.2[0], ind[i][0] / eig[0].sqrt(), "biplot individual dim1");
        close(r.2[1], ind[i][1] / eig[1].sqrt(), "biplot individual dim2");
    }
    for (j, r) in arrows.iter().enumerate() {
        close(r.2[0], coord[j][0], "biplot variable dim1");
        close(r.2[1], coord[j][1], "biplot variable dim2");
    }

    let bars = table(dir.join("contributions.csv"));
    let plane = |j: usize| (contrib[j][0] * eig[0] + contrib[j][1] * eig[1]) / (eig[0] + eig[1]);
    let mut previous = f64::INFINITY;
    for r in bars.iter().filter(|r| r.1 == "variable") {
        let j = var_names.iter().position(|n| *n == r.0).unwrap();
        close(r.2[0], contrib[j][0], "contribution axis 1");
        close(r.2[1], contrib[j][1], "contribution axis 2");
        close(r.2[2], plane(j), "contribution plane");
        assert!(r.2[2] <= previous, "not sorted");
        previous = r.2[2];
    }
    let uniform = bars.iter().find(|r| r.1 == "uniform").unwrap();
    close(uniform.2[0], 100.0 / var_names.len() as f64, "uniform line");

    let by_group = dir.join("individuals-by-group.csv");
    match group_column {
        None => assert!(!by_group.exists()),
        Some(column) => {
            let rows = table(by_group);
            let categories = names(&d["quali_sup"]["names"]);
            let bary = matrix(&d["quali_sup"]["coord"]);
            let drawn: Vec<_> = rows.iter().filter(|r| r.1 == "barycentre").collect();
            let mine: Vec<usize> = (0..categories.len())
                .filter(|&k| categories[k].starts_with(&format!("{column}=")))
                .collect();
            assert_eq!(drawn.len(), mine.len());
            for (r, &k) in drawn.iter().zip(&mine) {
                assert_eq!(r.0, categories[k]);
                close(r.2[0], bary[k][0], "barycentre dim1");
                close(r.2[1], bary[k][1], "barycentre dim2");
            }
            let individuals: Vec<_> = rows.iter().filter(|r| r.1 != "barycentre").collect();
            assert_eq!(individuals.len(), ind.len());
            for (i, r) in individuals.iter().enumerate() {
                close(r.2[0], ind[i][0], "individual dim1");
                close(r.2[1], ind[i][1], "individual dim2");
            }
        }
    }
    for stem in ["correlation-circle", "biplot", "contributions"] {
        let png = fs::read(dir.join(format!("{stem}.png"))).unwrap();
        assert_eq!(&png[1..4], b"PNG", "{stem}.png");
        let svg = fs::read_to_string(dir.join(format!("{stem}.svg"))).unwrap();
        assert!(svg.contains("<svg"), "{stem}.svg");
    }
}

#[test]
fn the_report_draws_iris_interpretation_figures_with_describe_s_numbers() {
    let env = Env::new();
    let data = iris();
    env.ok(&[
        "fit",
        &data,
        "--exclude",
        "species",
        "--standardize",
        "--ddof",
        "0",
        "-o",
        "m",
    ]);
    env.ok(&[
        "report",
        "m",
        "--data",
        &data,
        "--qualitative",
        "species",
        "-o",
        "rep",
    ]);
    let out = env.run(&[
        "describe",
        "m",
        "--data",
        &data,
        "--qualitative",
        "species",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let d: Value = serde_json::from_slice(&out.stdout).unwrap();
    check_against_describe(&env.path("rep"), &d, Some("species"));
    let page = fs::read_to_string(env.path("rep/index.html")).unwrap();
    for stem in [
        "correlation-circle",
        "biplot",
        "contributions",
        "individuals-by-group",
    ] {
        assert!(
            page.contains(&format!("{stem}.png")),
            "{stem} not on the page"
        );
    }
    // The biplot states its scaling on the figure.
    let svg = fs::read_to_string(env.path("rep/biplot.svg")).unwrap();
    assert!(
        svg.contains("α = 0"),
        "the biplot does not state its scaling"
    );
}

#[test]
fn describe_draws_decathlon_figures_with_supplementary_variables_dashed() {
    let env = Env::new();
    let data = decathlon();
    env.ok(&[
        "fit",
        &data,
        "--exclude",
        "athlete,Rank,Points,Competition",
        "--standardize",
        "--ddof",
        "0",
        "-o",
        "m",
    ]);
    let args = [
        "describe",
        "m",
        "--data",
        &data,
        "--row-names",
        "athlete",
        "--quantitative",
        "Rank,Points",
        "--qualitative",
        "Competition",
    ];
    let mut with_figures = args.to_vec();
    with_figures.extend(["--output", "tables", "--figures"]);
    env.ok(&with_figures);
    let mut json = args.to_vec();
    json.push("--json");
    let out = env.run(&json);
    assert!(out.status.success());
    let d: Value = serde_json::from_slice(&out.stdout).unwrap();
    check_against_describe(&env.path("tables"), &d, Some("Competition"));
    // Supplementary arrows are drawn dashed: many short segments in their colour.
    let svg = fs::read_to_string(env.path("tables/correlation-circle.svg")).unwrap();
    assert!(
        svg.matches("#D62728").count() >= 12,
        "no dashed supplementary arrows"
    );
}

#[test]
fn without_data_or_with_many_features_the_report_has_no_interpretation_figures() {
    let env = Env::new();
    let wide: String = (0..60)
        .map(|i| {
            (0..51)
                .map(|j| (((i * 7 + j * 13) % 17) as f64 + (i * j) as f64 * 0.01).to_string())
                .collect::<Vec<_>>()
                .join(",")
                + "\n"
        })
        .collect();
    env.write("wide.csv", wide);
    env.ok(&["fit", "wide.csv", "--components", "3", "-o", "w"]);
    env.ok(&["report", "w", "--data", "wide.csv", "-o", "rep"]);
    assert!(!env.path("rep/correlation-circle.png").exists());
    env.ok(&["fit", &iris(), "--exclude", "species", "-o", "m"]);
    env.ok(&["report", "m", "-o", "plain"]);
    assert!(!env.path("plain/biplot.png").exists());
    let err = env.fails(
        1,
        &[
            "report",
            "w",
            "--data",
            "wide.csv",
            "--qualitative",
            "c1",
            "-o",
            "rep2",
        ],
    );
    assert!(err.contains("at most 50 features"), "{err}");
}
