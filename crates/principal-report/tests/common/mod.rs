//! Data, models and file checks shared by the crate's tests.
#![allow(dead_code)]

use std::path::Path;

use principal::faer::Mat;
use principal::{PcaBuilder, PcaModel};
use principal_report::{Labels, ModelView, ReportData, ReportDataBuilder, SampleChoice, Scaling};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// `n` samples of `d` features in `classes` clusters (class i of row r is r mod classes),
/// each feature with its own spread so that the eigenvalues are distinct; seeded.
pub fn clustered(n: usize, d: usize, classes: usize, seed: u64) -> (Mat<f64>, Vec<String>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let centres: Vec<Vec<f64>> = (0..classes)
        .map(|_| (0..d).map(|_| rng.random_range(-4.0..4.0)).collect())
        .collect();
    let x = Mat::from_fn(n, d, |_, _| 0.0);
    let mut x = x;
    for i in 0..n {
        for j in 0..d {
            let spread = 1.0 / (1.0 + j as f64);
            x[(i, j)] = centres[i % classes][j] + spread * rng.random_range(-1.0..1.0) + 100.0;
        }
    }
    let labels = (0..n).map(|i| format!("class {}", i % classes)).collect();
    (x, labels)
}

/// Every component, the default settings.
pub fn fit(x: &Mat<f64>) -> PcaModel {
    PcaBuilder::new()
        .build()
        .expect("default parameters")
        .fit(x.as_ref())
        .expect("fit")
}

/// The model as the report takes it.
pub fn view(model: &PcaModel) -> ModelView<'_> {
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

/// The data summarised for the report, pushed in chunks of `chunk` rows.
pub fn summarise(
    model: &PcaModel,
    x: &Mat<f64>,
    labels: Option<&[String]>,
    chunk: usize,
) -> ReportData {
    let view = view(model);
    let mut builder =
        ReportDataBuilder::new(&view, labels.map(Labels::new), SampleChoice::default())
            .expect("builder");
    for start in (0..x.nrows()).step_by(chunk) {
        let rows = x.as_ref().subrows(start, chunk.min(x.nrows() - start));
        let codes = model.transform(rows).expect("transform");
        builder.push(rows, codes.as_ref()).expect("push");
    }
    builder.finish().expect("finish")
}

/// Decodes a PNG file and returns its width and height (the whole image is decoded, so a
/// truncated or corrupt file fails here).
pub fn png_size(bytes: &[u8]) -> (u32, u32) {
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "PNG signature");
    let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    let mut reader = decoder.read_info().expect("PNG header");
    let mut buffer = vec![0; reader.output_buffer_size().expect("buffer size")];
    let info = reader.next_frame(&mut buffer).expect("PNG image data");
    (info.width, info.height)
}

/// Checks that `svg` is one SVG document of `width × height` and not absurdly large.
pub fn assert_svg(svg: &str, (width, height): (u32, u32)) {
    let start = svg.trim_start();
    assert!(
        start.starts_with("<svg") || start.starts_with("<?xml"),
        "SVG starts with {:?}",
        &start[..start.len().min(40)]
    );
    assert!(svg.trim_end().ends_with("</svg>"), "SVG ends with </svg>");
    assert_eq!(svg.matches("<svg").count(), 1, "one <svg> element");
    assert!(
        svg.contains(&format!("width=\"{width}\""))
            && svg.contains(&format!("height=\"{height}\"")),
        "SVG of {width}×{height}"
    );
    assert!(svg.len() < 4_000_000, "SVG of {} bytes", svg.len());
}

/// Every file name that `index.html` refers to with `src="…"` or `href="…"`.
pub fn referenced_files(html: &str) -> Vec<String> {
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

/// The names in `dir`, sorted.
pub fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}
