//! Renders sample reports to look at:
//! - `iris/`: Iris (150 × 4, three species), every component;
//! - `digits/`: 5,000 MNIST digits (28 × 28), every component, with the image figures;
//! - `digits-classify/`: a model of 4,000 of the digits, the other 1,000 (every fifth row; the
//!   file is sorted by digit) as data, and nearest-code recognition of those 1,000 for
//!   several numbers of components K;
//! - `fashion/`: the 70,000 Fashion-MNIST images, when the Debian package `dataset-fashion-mnist`
//!   is installed (`/usr/share/datasets/fashion-mnist`): scatter figures of 70,000 points.
//!
//! ```text
//! cargo run --release -p principal-report --example sample_report -- [OUT_DIR]
//! ```
//! (`OUT_DIR` defaults to `target/sample-reports`). The data files are read by hand here; the
//! command-line tool reads them with principal-io.

use std::error::Error;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::time::Instant;

use faer::linalg::matmul::matmul;
use faer::{Accum, Mat, Par};
use principal::{PcaBuilder, PcaModel};
use principal_report::{
    Classification, ImageShape, Labels, ModelView, Progress, Report, ReportDataBuilder,
    ReportOptions, SampleChoice, Scaling,
};

type AnyResult<T> = Result<T, Box<dyn Error>>;

/// Prints each long step and its duration on stderr.
struct Steps {
    started: Option<(String, Instant)>,
}

impl Progress for Steps {
    fn begin(&mut self, step: &str, total: u64) {
        eprint!("  {step}: {total} … ");
        self.started = Some((step.to_owned(), Instant::now()));
    }
    fn end(&mut self) {
        if let Some((_, t)) = self.started.take() {
            eprintln!("{:.2} s", t.elapsed().as_secs_f64());
        }
    }
}

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data")
}

/// Iris: four numeric columns, then the species.
fn read_iris() -> AnyResult<(Mat<f64>, Vec<String>)> {
    let path = data_dir().join("iris.csv");
    let text = std::fs::read_to_string(&path)?;
    let mut values = Vec::new();
    let mut species = Vec::new();
    for (n, line) in text.lines().enumerate().skip(1) {
        if line.trim().is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split(',').collect();
        if fields.len() != 5 {
            return Err(format!(
                "{}: line {} has {} fields",
                path.display(),
                n + 1,
                fields.len()
            )
            .into());
        }
        for f in &fields[..4] {
            values.push(f.trim().parse::<f64>()?);
        }
        species.push(fields[4].trim().to_owned());
    }
    let rows = species.len();
    Ok((Mat::from_fn(rows, 4, |i, j| values[4 * i + j]), species))
}

/// MNIST-5k: 784 pixel columns, then the digit; no header.
fn read_digits() -> AnyResult<(Mat<f64>, Vec<String>)> {
    let path = data_dir().join("mnist-5k.csv.gz");
    let reader = BufReader::new(flate2::read::GzDecoder::new(std::fs::File::open(&path)?));
    let mut pixels = Vec::new();
    let mut digits = Vec::new();
    for (n, line) in reader.lines().enumerate() {
        let line = line?;
        let fields: Vec<&str> = line.split(',').collect();
        if fields.len() != 785 {
            return Err(format!(
                "{}: line {} has {} fields",
                path.display(),
                n + 1,
                fields.len()
            )
            .into());
        }
        for f in &fields[..784] {
            pixels.push(f.parse::<f64>()?);
        }
        digits.push(fields[784].to_owned());
    }
    let rows = digits.len();
    Ok((Mat::from_fn(rows, 784, |i, j| pixels[784 * i + j]), digits))
}

/// Fashion-MNIST's training and test images (IDX, gzip) and labels, 70,000 in all; `None`
/// when the data set is not installed.
fn read_fashion() -> AnyResult<Option<(Mat<f64>, Vec<String>)>> {
    let dir = Path::new("/usr/share/datasets/fashion-mnist");
    if !dir.exists() {
        return Ok(None);
    }
    let gunzip = |name: &str| -> AnyResult<Vec<u8>> {
        let mut bytes = Vec::new();
        flate2::read::GzDecoder::new(std::fs::File::open(dir.join(name))?)
            .read_to_end(&mut bytes)?;
        Ok(bytes)
    };
    let mut pixels = Vec::new();
    let mut labels = Vec::new();
    for part in ["train", "t10k"] {
        // IDX: a 16-byte header for images (magic, count, rows, columns), 8 for labels.
        let images = gunzip(&format!("{part}-images-idx3-ubyte.gz"))?;
        let classes = gunzip(&format!("{part}-labels-idx1-ubyte.gz"))?;
        pixels.extend(images[16..].iter().map(|&p| f64::from(p)));
        labels.extend(classes[8..].iter().map(|c| c.to_string()));
    }
    if pixels.len() != labels.len() * 784 {
        return Err(format!("{} pixels for {} labels", pixels.len(), labels.len()).into());
    }
    let rows = labels.len();
    Ok(Some((
        Mat::from_fn(rows, 784, |i, j| pixels[784 * i + j]),
        labels,
    )))
}

fn view(model: &PcaModel) -> ModelView<'_> {
    ModelView {
        n_samples: model.n_samples(),
        ddof: model.ddof(),
        scaling: match model.scale() {
            Some(_) => Scaling::Standardize,
            None => Scaling::Centre,
        },
        solver: model.solver().name(),
        total_variance: model.total_variance(),
        noise_variance: model.noise_variance(),
        mean: model.mean(),
        scale: model.scale(),
        components: model.components(),
        explained_variance: model.explained_variance(),
        explained_variance_ratio: model.explained_variance_ratio(),
    }
}

/// Writes the report of `model` with `x` (and its labels) as data.
fn report(
    out: &Path,
    name: &str,
    model: &PcaModel,
    x: &Mat<f64>,
    labels: &[String],
    shape: Option<ImageShape>,
    classification: Option<&Classification>,
    sources: Vec<(String, String)>,
) -> AnyResult<()> {
    let started = Instant::now();
    eprintln!("{name}:");
    let view = view(model);
    let mut builder =
        ReportDataBuilder::new(&view, Some(Labels::new(labels)), SampleChoice::default())?;
    // In chunks, as the command-line tool streams a large file.
    for start in (0..x.nrows()).step_by(1000) {
        let rows = x.as_ref().subrows(start, 1000.min(x.nrows() - start));
        let codes = model.transform(rows)?;
        builder.push(rows, codes.as_ref())?;
    }
    let data = builder.finish()?;
    let options = ReportOptions {
        title: format!("PCA report: {name}"),
        sources,
        ..ReportOptions::default()
    };
    let mut report = Report::new(view)?.with_data(&data)?.with_options(options)?;
    if let Some(shape) = shape {
        report = report.with_image_shape(shape)?;
    }
    if let Some(results) = classification {
        report = report.with_classification(results);
    }
    let written = report.write(&out.join(name), &mut Steps { started: None })?;
    eprintln!(
        "  wrote {} figures to {} in {:.2} s; not drawn: {:?}",
        written.figures.len(),
        written.dir.display(),
        started.elapsed().as_secs_f64(),
        written
            .omitted
            .iter()
            .map(|o| o.kind.file_stem())
            .collect::<Vec<_>>()
    );
    Ok(())
}

/// Nearest-code recognition of `test` codes among `train` codes with the first `k`
/// components: the predicted class of each test row.
fn nearest(train: &Mat<f64>, train_class: &[usize], test: &Mat<f64>, k: usize) -> Vec<usize> {
    let (a, b) = (train.as_ref().subcols(0, k), test.as_ref().subcols(0, k));
    let mut products = Mat::<f64>::zeros(test.nrows(), train.nrows());
    matmul(
        products.as_mut(),
        Accum::Replace,
        b,
        a.transpose(),
        1.0,
        Par::rayon(0),
    );
    let norms: Vec<f64> = (0..train.nrows())
        .map(|i| (0..k).map(|j| a[(i, j)] * a[(i, j)]).sum())
        .collect();
    (0..test.nrows())
        .map(|t| {
            // ‖a − b‖² = ‖a‖² − 2 a·b + ‖b‖², and ‖b‖² is the same for every a.
            let best = (0..train.nrows())
                .min_by(|&i, &j| {
                    let di = norms[i] - 2.0 * products[(t, i)];
                    let dj = norms[j] - 2.0 * products[(t, j)];
                    di.total_cmp(&dj)
                })
                .unwrap_or(0);
            train_class[best]
        })
        .collect()
}

fn main() -> AnyResult<()> {
    let out = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/sample-reports")
        });
    std::fs::create_dir_all(&out)?;

    let (iris, species) = read_iris()?;
    let model = PcaBuilder::new().build()?.fit(iris.as_ref())?;
    let sources = vec![("data".to_owned(), "data/iris.csv".to_owned())];
    report(&out, "iris", &model, &iris, &species, None, None, sources)?;

    let (digits, labels) = read_digits()?;
    let shape = ImageShape::new(28, 28)?;
    let model = PcaBuilder::new().build()?.fit(digits.as_ref())?;
    let sources = vec![("data".to_owned(), "data/mnist-5k.csv.gz".to_owned())];
    report(
        &out,
        "digits",
        &model,
        &digits,
        &labels,
        Some(shape),
        None,
        sources,
    )?;

    // Recognition: a model of four digits in five; the fifth is recognised by the nearest
    // training code.
    let (test_rows, train_rows): (Vec<usize>, Vec<usize>) =
        (0..digits.nrows()).partition(|i| i % 5 == 4);
    let pick = |rows: &[usize]| Mat::from_fn(rows.len(), 784, |i, j| digits[(rows[i], j)]);
    let (train, test) = (pick(&train_rows), pick(&test_rows));
    let model = PcaBuilder::new().build()?.fit(train.as_ref())?;
    let classes = Labels::new(&labels);
    let class_of =
        |rows: &[usize]| -> Vec<usize> { rows.iter().map(|&i| classes.class_of(i)).collect() };
    let (train_class, test_class) = (class_of(&train_rows), class_of(&test_rows));
    let test_labels: Vec<String> = test_rows.iter().map(|&i| labels[i].clone()).collect();
    let train_codes = model.transform(train.as_ref())?;
    let test_codes = model.transform(test.as_ref())?;
    let tried = [1, 2, 5, 10, 20, 50, 100, 200];
    let mut accuracy = Vec::new();
    let mut best: Option<(f64, Vec<usize>)> = None;
    for &k in &tried {
        let predicted = nearest(&train_codes, &train_class, &test_codes, k);
        let correct = predicted
            .iter()
            .zip(&test_class)
            .filter(|(p, t)| p == t)
            .count();
        let a = correct as f64 / test_rows.len() as f64;
        accuracy.push((k, a));
        if best.as_ref().is_none_or(|(b, _)| a > *b) {
            best = Some((a, predicted));
        }
    }
    let predicted = best.map(|b| b.1).unwrap_or_default();
    let n_classes = classes.classes().len();
    let mut confusion = vec![vec![0u64; n_classes]; n_classes];
    for (&p, &t) in predicted.iter().zip(&test_class) {
        confusion[t][p] += 1;
    }
    let results = Classification::new(classes.classes().to_vec(), confusion, accuracy)?;
    let sources = vec![
        (
            "model".to_owned(),
            "data/mnist-5k.csv.gz, four rows in five".to_owned(),
        ),
        (
            "data".to_owned(),
            "data/mnist-5k.csv.gz, every fifth row".to_owned(),
        ),
    ];
    report(
        &out,
        "digits-classify",
        &model,
        &test,
        &test_labels,
        Some(shape),
        Some(&results),
        sources,
    )?;

    if let Some((fashion, labels)) = read_fashion()? {
        let model = PcaBuilder::new().build()?.fit(fashion.as_ref())?;
        let sources = vec![(
            "data".to_owned(),
            "/usr/share/datasets/fashion-mnist (train and t10k)".to_owned(),
        )];
        report(
            &out,
            "fashion",
            &model,
            &fashion,
            &labels,
            Some(shape),
            None,
            sources,
        )?;
    }
    Ok(())
}
