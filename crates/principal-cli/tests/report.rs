//! `principal report`: the files it writes (valid PNG and SVG of sane sizes, an index.html that
//! references only files that exist), the numbers behind its curves (read from the CSV files
//! written beside them, i.e. the data each plot was drawn from, against the model), and bad
//! input: clear errors and no report directory, partial or otherwise.

use crate::common;

use std::fs;
use std::path::Path;

use common::{Env, data, iris, numbers};

/// The names in `dir`, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Every file name that `index.html` refers to with `src="…"` or `href="…"`.
fn referenced_files(html: &str) -> Vec<String> {
    let mut names = Vec::new();
    for attribute in ["src=\"", "href=\""] {
        let mut rest = html;
        while let Some(at) = rest.find(attribute) {
            rest = &rest[at + attribute.len()..];
            let end = rest.find('"').expect("closing quote");
            names.push(rest[..end].to_owned());
            rest = &rest[end..];
        }
    }
    names
}

/// Decodes a PNG whole (signature, chunks, checksums, pixels); returns its size.
fn decode_png(path: &Path) -> (u32, u32) {
    let file = fs::File::open(path).expect("open PNG");
    let mut reader = png::Decoder::new(std::io::BufReader::new(file))
        .read_info()
        .unwrap_or_else(|e| panic!("{}: not a PNG: {e}", path.display()));
    let mut pixels = vec![0; reader.output_buffer_size().expect("buffer size")];
    let info = reader
        .next_frame(&mut pixels)
        .unwrap_or_else(|e| panic!("{}: broken PNG: {e}", path.display()));
    (info.width, info.height)
}

/// Checks the report in `dir`: each of `stems` as a PNG that decodes and an SVG of the same
/// size, both of sane sizes; index.html referring only to files beside it that exist, and to
/// every figure.
fn assert_report(dir: &Path, stems: &[&str]) {
    let html = fs::read_to_string(dir.join("index.html")).expect("index.html");
    let references = referenced_files(&html);
    for name in &references {
        assert!(
            !name.contains(':') && !name.starts_with('/') && !name.contains(".."),
            "{name} is not a file beside index.html"
        );
        assert!(dir.join(name).is_file(), "{name} is referenced but missing");
    }
    for stem in stems {
        let png = dir.join(format!("{stem}.png"));
        let (width, height) = decode_png(&png);
        assert!(
            (300..=4000).contains(&width) && (200..=6000).contains(&height),
            "{stem}.png is {width}×{height}"
        );
        let bytes = fs::metadata(&png).unwrap().len();
        assert!(
            (2_000..8_000_000).contains(&bytes),
            "{stem}.png: {bytes} bytes"
        );
        let svg = fs::read_to_string(dir.join(format!("{stem}.svg"))).expect("SVG");
        let start = svg.trim_start();
        assert!(
            start.starts_with("<svg") || start.starts_with("<?xml"),
            "{stem}.svg starts with {:?}",
            &start[..start.len().min(40)]
        );
        assert!(
            svg.trim_end().ends_with("</svg>"),
            "{stem}.svg is cut short"
        );
        assert!(
            svg.contains(&format!("width=\"{width}\""))
                && svg.contains(&format!("height=\"{height}\"")),
            "{stem}.svg is not {width}×{height} like its PNG"
        );
        assert!(
            (1_000..4_000_000).contains(&svg.len()),
            "{stem}.svg: {} bytes",
            svg.len()
        );
        for extension in ["png", "svg"] {
            let name = format!("{stem}.{extension}");
            assert!(
                references.contains(&name),
                "index.html does not link {name}"
            );
        }
    }
    assert!(!html.contains("<script"), "index.html holds a script");
}

/// A figure's numbers from its CSV file (`series,x,y`): the (x, y) points of `series`.
fn series(dir: &Path, stem: &str, series: &str) -> Vec<(f64, f64)> {
    let text = fs::read_to_string(dir.join(format!("{stem}.csv"))).expect("figure CSV");
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("series,x,y"));
    let points: Vec<(f64, f64)> = lines
        .filter_map(|line| {
            let mut fields = line.split(',');
            (fields.next() == Some(series)).then(|| {
                let x = fields.next().unwrap().parse().unwrap();
                let y = fields.next().unwrap().parse().unwrap();
                (x, y)
            })
        })
        .collect();
    assert!(!points.is_empty(), "{stem}.csv has no series {series}");
    points
}

/// The error curve, as drawn, equals the discarded eigenvalues `(N − ddof)/N Σ_{j>k} λ_j` of
/// the model (read back with `inspect --json`), from k = 0 to M, to rounding.
fn assert_error_curve_is_the_discarded_eigenvalues(env: &Env, model: &str, dir: &Path) {
    let json = env.inspect(model);
    let lambda = numbers(&json["explained_variance"]);
    let n = json["n_samples"].as_f64().unwrap();
    let ddof = json["ddof"].as_f64().unwrap();
    let measured = series(dir, "reconstruction-error", "mean_squared_error");
    let discarded = series(dir, "reconstruction-error", "discarded_variance");
    assert_eq!(measured.len(), lambda.len() + 1, "k = 0 … M");
    let scale = measured[0].1;
    for (k, (&(x, error), &(_, drawn))) in measured.iter().zip(&discarded).enumerate() {
        assert_eq!(x, k as f64);
        let expected = (n - ddof) / n * lambda[k..].iter().sum::<f64>();
        assert!(
            (drawn - expected).abs() <= 1e-12 * scale,
            "k = {k}: discarded {drawn} drawn, {expected} from the model"
        );
        assert!(
            (error - expected).abs() <= 1e-10 * scale,
            "k = {k}: mean squared error {error}, discarded eigenvalues {expected}"
        );
    }
}

#[test]
fn an_iris_report_draws_the_data_figures_from_the_model_and_the_species_column() {
    let env = Env::new();
    env.ok(&["fit", &iris(), "--exclude", "species", "-o", "iris.pca"]);
    let stderr = env.ok(&[
        "report",
        "iris.pca",
        "--data",
        &iris(),
        "--label-column",
        "species",
        "-o",
        "out",
    ]);
    let out = env.path("out");
    let stems = [
        "scree",
        "spectrum",
        "projection",
        "pairs",
        "reconstruction-error",
        // The interpretation figures, drawn when --data is given and D ≤ 50.
        "correlation-circle",
        "biplot",
        "contributions",
    ];
    assert_report(&out, &stems);
    assert!(stderr.contains("with 8 figure(s)"), "{stderr}");
    assert!(
        stderr.contains("not drawn: components, reconstructions, latent-grid (no image shape"),
        "{stderr}"
    );
    // No progress bar when stderr is not a terminal.
    assert!(
        !stderr.contains('\r') && !stderr.contains('\x1b'),
        "{stderr:?}"
    );
    // The spectrum drawn is the model's, which is Iris's (ddof 1).
    let spectrum: Vec<f64> = series(&out, "spectrum", "explained_variance")
        .iter()
        .map(|p| p.1)
        .collect();
    for (drawn, reference) in spectrum
        .iter()
        .zip([4.22824171, 0.24267075, 0.07820950, 0.02383509])
    {
        assert!(
            (drawn - reference).abs() < 5e-9,
            "{drawn} against {reference}"
        );
    }
    let ratios: Vec<f64> = series(&out, "scree", "explained_variance_ratio")
        .iter()
        .map(|p| p.1)
        .collect();
    assert_eq!(
        ratios,
        numbers(&env.inspect("iris.pca")["explained_variance_ratio"])
    );
    assert_error_curve_is_the_discarded_eigenvalues(&env, "iris.pca", &out);
    let html = fs::read_to_string(out.join("index.html")).unwrap();
    assert!(
        html.contains("3 classes: setosa, versicolor, virginica") && html.contains("150"),
        "the page names the classes and the rows"
    );
    // Nothing left beside the report.
    assert_eq!(listing(env.dir.path()), ["iris.pca", "out"]);
}

#[test]
fn an_image_report_draws_all_eight_figures_and_the_error_curve_meets_the_eigenvalues() {
    let env = Env::new();
    let digits = data("mnist-5k.csv.gz").display().to_string();
    env.ok(&["fit", &digits, "--exclude", "784", "-o", "digits.pca"]);
    env.ok(&[
        "report",
        "digits.pca",
        "--data",
        &digits,
        "--label-column",
        "784",
        "--image-shape",
        "28x28",
        "-o",
        "digits",
    ]);
    let out = env.path("digits");
    assert_report(
        &out,
        &[
            "scree",
            "spectrum",
            "projection",
            "pairs",
            "reconstruction-error",
            "components",
            "reconstructions",
            "latent-grid",
        ],
    );
    assert_error_curve_is_the_discarded_eigenvalues(&env, "digits.pca", &out);
    let html = fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("10 classes: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9"));
    assert!(html.contains("28×28 pixels"));
}

#[test]
fn a_model_alone_draws_the_model_figures_and_says_what_needs_data() {
    let env = Env::new();
    env.ok(&["fit", &iris(), "--exclude", "species", "-o", "iris.pca"]);
    let stderr = env.ok(&["report", "iris.pca", "-o", "model-only"]);
    assert_report(&env.path("model-only"), &["scree", "spectrum"]);
    assert!(
        stderr.contains("not drawn: projection, pairs, reconstruction-error (no data was given"),
        "{stderr}"
    );
}

#[test]
fn label_files_and_samples_by_row_are_used() {
    let env = Env::new();
    env.ok(&["fit", &iris(), "--exclude", "species", "-o", "iris.pca"]);
    let species: String = fs::read_to_string(data("iris.csv"))
        .unwrap()
        .lines()
        .skip(1)
        .filter(|l| !l.is_empty())
        .map(|l| l.rsplit(',').next().unwrap().to_owned() + "\n")
        .collect();
    env.write("species.txt", format!("species\n{species}"));
    env.ok(&[
        "report",
        "iris.pca",
        "--data",
        &iris(),
        "--labels",
        "species.txt",
        "--samples",
        "0,50,100",
        "--image-shape",
        "2x2",
        "-o",
        "out",
    ]);
    let out = env.path("out");
    assert_report(&out, &["projection", "reconstructions"]);
    let html = fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("3 classes: setosa, versicolor, virginica"));
}

/// `dir` holds only `names`: no report, no hidden temporary directory.
fn assert_only(env: &Env, names: &[&str]) {
    assert_eq!(listing(env.dir.path()), names, "files left behind");
}

#[test]
fn an_image_shape_that_does_not_fit_the_features_is_an_error_and_writes_nothing() {
    let env = Env::new();
    env.ok(&["fit", &iris(), "--exclude", "species", "-o", "iris.pca"]);
    let stderr = env.fails(
        1,
        &[
            "report",
            "iris.pca",
            "--data",
            &iris(),
            "--image-shape",
            "2x3",
            "-o",
            "out",
        ],
    );
    assert!(
        stderr.contains(
            "--image-shape 2x3 does not fit the model iris.pca: image shape 2×3 has 6 pixels \
             but the model has 4 features"
        ),
        "{stderr}"
    );
    assert_only(&env, &["iris.pca"]);
    let stderr = env.fails(
        2,
        &["report", "iris.pca", "--image-shape", "28", "-o", "out"],
    );
    assert!(stderr.contains("is not HxW"), "{stderr}");
}

#[test]
fn labels_of_the_wrong_length_are_an_error_naming_both_counts_and_write_nothing() {
    let env = Env::new();
    env.ok(&["fit", &iris(), "--exclude", "species", "-o", "iris.pca"]);
    let labels: String = (0..149).map(|i| format!("{}\n", i % 3)).collect();
    env.write("short.txt", &labels);
    env.write("long.txt", labels.clone() + "1\n2\n");
    let stderr = env.fails(
        1,
        &[
            "report",
            "iris.pca",
            "--data",
            &iris(),
            "--labels",
            "short.txt",
            "-o",
            "out",
        ],
    );
    assert!(
        stderr.contains("the labels (short.txt) do not fit")
            && stderr.contains("149 labels but the data has more rows (row 149 has no label)"),
        "{stderr}"
    );
    let stderr = env.fails(
        1,
        &[
            "report",
            "iris.pca",
            "--data",
            &iris(),
            "--labels",
            "long.txt",
            "-o",
            "out",
        ],
    );
    assert!(
        stderr.contains("151 labels but the data has 150 rows"),
        "{stderr}"
    );
    assert_only(&env, &["iris.pca", "long.txt", "short.txt"]);
    // With a row count known before reading (NPY), the mismatch is found before streaming.
    let rows: Vec<Vec<f64>> = common::iris_rows().1;
    env.write("iris.npy", common::npy(&rows, false));
    let stderr = env.fails(
        1,
        &[
            "report",
            "iris.pca",
            "--data",
            "iris.npy",
            "--labels",
            "short.txt",
            "-o",
            "out",
        ],
    );
    assert!(
        stderr.contains("the labels (short.txt) are 149 but iris.npy has 150 rows"),
        "{stderr}"
    );
    assert!(!env.path("out").exists());
}

#[test]
fn data_options_without_data_are_usage_errors() {
    let env = Env::new();
    env.ok(&["fit", &iris(), "--exclude", "species", "-o", "iris.pca"]);
    env.write("labels.txt", "a\nb\n");
    for args in [
        &["--labels", "labels.txt"][..],
        &["--label-column", "species"],
        &["--samples", "1,2"],
    ] {
        let mut all = vec!["report", "iris.pca", "-o", "out"];
        all.extend_from_slice(args);
        let stderr = env.fails(2, &all);
        assert!(stderr.contains("--data"), "{args:?}: {stderr}");
    }
    let stderr = env.fails(
        2,
        &[
            "report",
            "iris.pca",
            "--data",
            &iris(),
            "--labels",
            "labels.txt",
            "--label-column",
            "species",
            "-o",
            "out",
        ],
    );
    assert!(stderr.contains("cannot be used with"), "{stderr}");
    assert_only(&env, &["iris.pca", "labels.txt"]);
}

#[test]
fn data_of_another_width_and_a_missing_label_column_are_errors() {
    let env = Env::new();
    env.ok(&["fit", &iris(), "--exclude", "species", "-o", "iris.pca"]);
    env.write("three.csv", "a,b,c\n1,2,3\n4,5,6\n");
    let stderr = env.fails(
        1,
        &["report", "iris.pca", "--data", "three.csv", "-o", "out"],
    );
    assert!(
        stderr.contains("three.csv has no column named \"sepal_length\""),
        "{stderr}"
    );
    let stderr = env.fails(
        1,
        &[
            "report",
            "iris.pca",
            "--data",
            &iris(),
            "--label-column",
            "kind",
            "-o",
            "out",
        ],
    );
    assert!(
        stderr.contains("cannot read the labels in column kind")
            && stderr.contains("no column named \"kind\""),
        "{stderr}"
    );
    assert_only(&env, &["iris.pca", "three.csv"]);
}

#[test]
fn a_failed_report_keeps_the_earlier_one_and_a_foreign_directory_is_refused() {
    let env = Env::new();
    env.ok(&["fit", &iris(), "--exclude", "species", "-o", "iris.pca"]);
    env.ok(&["report", "iris.pca", "-o", "out"]);
    let before = fs::read(env.path("out/index.html")).unwrap();
    env.write("short.txt", "a\nb\n");
    env.fails(
        1,
        &[
            "report",
            "iris.pca",
            "--data",
            &iris(),
            "--labels",
            "short.txt",
            "-o",
            "out",
        ],
    );
    assert_eq!(fs::read(env.path("out/index.html")).unwrap(), before);
    assert_eq!(
        listing(&env.path("out")).len(),
        7,
        "scree and spectrum (csv, png, svg), index"
    );
    assert_only(&env, &["iris.pca", "out", "short.txt"]);
    // An earlier report is replaced by a complete new one.
    env.ok(&["report", "iris.pca", "--data", &iris(), "-o", "out"]);
    assert!(env.path("out/projection.png").exists());
    // A directory of other files is never replaced.
    fs::create_dir(env.path("mine")).unwrap();
    env.write("mine/notes.txt", "keep me");
    let stderr = env.fails(1, &["report", "iris.pca", "-o", "mine"]);
    assert!(stderr.contains("refusing to replace it"), "{stderr}");
    assert_eq!(listing(&env.path("mine")), ["notes.txt"]);
}
