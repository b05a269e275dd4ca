//! Writing a report directory: what index.html references, what is left out and why, the
//! caller's mistakes, and all-or-nothing replacement.

use crate::common;

use std::fs;
use std::path::Path;

use common::{clustered, fit, listing, referenced_files, summarise, view};
use principal::faer::Mat;
use principal_report::{
    Classification, FigureKind, ImageShape, Labels, NoProgress, Progress, Report,
    ReportDataBuilder, ReportError, ReportOptions, SampleChoice,
};

/// A small image data set: 4×4 "images" in three classes.
fn images() -> (Mat<f64>, Vec<String>) {
    clustered(240, 16, 3, 31)
}

/// Checks that every file index.html refers to exists and no address leaves the directory.
fn assert_references_exist(dir: &Path) -> Vec<String> {
    let html = fs::read_to_string(dir.join("index.html")).unwrap();
    let references = referenced_files(&html);
    assert!(!references.is_empty());
    for name in &references {
        assert!(
            !name.contains(':') && !name.starts_with('/') && !name.contains(".."),
            "{name} is not a file beside index.html"
        );
        assert!(dir.join(name).is_file(), "{name} is referenced but missing");
    }
    assert!(!html.contains("<script"), "no script");
    references
}

#[test]
fn a_full_report_references_only_files_that_exist_and_draws_every_figure() {
    let (x, labels) = images();
    let model = fit(&x);
    let data = summarise(&model, &x, Some(&labels), 100);
    let results = Classification::new(
        vec!["a".into(), "b".into()],
        vec![vec![9, 1], vec![2, 8]],
        vec![(1, 0.6), (4, 0.85)],
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report");
    let written = Report::new(view(&model))
        .unwrap()
        .with_data(&data)
        .unwrap()
        .with_image_shape(ImageShape::new(4, 4).unwrap())
        .unwrap()
        .with_classification(&results)
        .write(&out, &mut NoProgress)
        .unwrap();
    assert_eq!(written.figures, FigureKind::ALL);
    assert!(written.omitted.is_empty());
    assert!(!written.replaced);
    let references = assert_references_exist(&out);
    for kind in FigureKind::ALL {
        for extension in ["png", "svg"] {
            let name = format!("{}.{extension}", kind.file_stem());
            assert!(references.contains(&name), "index.html links {name}");
        }
    }
    // The numbers of the curves and counts beside them, linked from the page.
    let with_numbers = [
        FigureKind::Scree,
        FigureKind::Spectrum,
        FigureKind::ReconstructionError,
        FigureKind::ConfusionMatrix,
        FigureKind::AccuracyByComponents,
    ];
    for kind in with_numbers {
        let name = format!("{}.csv", kind.file_stem());
        assert!(references.contains(&name), "index.html links {name}");
    }
    // Nothing but the report: 10 figures in two formats, 5 CSV files and the page; no
    // temporary left.
    assert_eq!(listing(&out).len(), 26);
    // The CSV files hold the numbers drawn: here, the scree plot's ratios and the accuracy.
    let scree = fs::read_to_string(out.join("scree.csv")).unwrap();
    let ratios: Vec<f64> = scree
        .lines()
        .skip(1)
        .filter(|l| l.starts_with("explained_variance_ratio,"))
        .map(|l| l.rsplit(',').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(ratios, model.explained_variance_ratio());
    assert_eq!(
        fs::read_to_string(out.join("accuracy.csv")).unwrap(),
        "series,x,y\naccuracy,1,0.6\naccuracy,4,0.85\n"
    );
    assert_eq!(
        fs::read_to_string(out.join("confusion-matrix.csv")).unwrap(),
        "true,predicted,count\na,a,9\na,b,1\nb,a,2\nb,b,8\n"
    );
    assert_eq!(listing(dir.path()), ["report"]);
    let html = fs::read_to_string(out.join("index.html")).unwrap();
    for field in [
        "n_samples",
        "n_features",
        "n_components",
        "ddof",
        "standardize",
        "solver",
        "total variance",
        "noise variance",
        "explained_variance",
        "explained_variance_ratio",
        "cumulative ratio",
    ] {
        assert!(html.contains(field), "the summary shows {field}");
    }
}

#[test]
fn a_report_without_data_omits_the_data_figures_and_says_why() {
    let (x, _) = images();
    let model = fit(&x);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("model-only");
    let written = Report::new(view(&model))
        .unwrap()
        .write(&out, &mut NoProgress)
        .unwrap();
    assert_eq!(written.figures, [FigureKind::Scree, FigureKind::Spectrum]);
    let omitted: Vec<FigureKind> = written.omitted.iter().map(|o| o.kind).collect();
    assert_eq!(
        omitted,
        [
            FigureKind::ProjectionMap,
            FigureKind::PairsGrid,
            FigureKind::ReconstructionError,
            FigureKind::MeanAndComponents,
            FigureKind::Reconstructions,
            FigureKind::LatentGrid,
        ]
    );
    let html = fs::read_to_string(out.join("index.html")).unwrap();
    assert_references_exist(&out);
    assert!(html.contains("Figures not drawn"));
    assert!(html.contains("no data was given with the model"));
    assert!(html.contains("no image shape was given"));
    assert!(!html.contains("projection.png"));
    assert_eq!(
        listing(&out),
        [
            "index.html",
            "scree.csv",
            "scree.png",
            "scree.svg",
            "spectrum.csv",
            "spectrum.png",
            "spectrum.svg"
        ]
    );
}

#[test]
fn the_same_report_twice_is_the_same_bytes() {
    let (x, labels) = images();
    let model = fit(&x);
    let data = summarise(&model, &x, Some(&labels), 64);
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str| {
        let out = dir.path().join(name);
        Report::new(view(&model))
            .unwrap()
            .with_data(&data)
            .unwrap()
            .with_image_shape(ImageShape::new(4, 4).unwrap())
            .unwrap()
            .write(&out, &mut NoProgress)
            .unwrap();
        out
    };
    let (a, b) = (write("a"), write("b"));
    assert_eq!(listing(&a), listing(&b));
    for name in listing(&a) {
        assert_eq!(
            fs::read(a.join(&name)).unwrap(),
            fs::read(b.join(&name)).unwrap(),
            "{name}"
        );
    }
}

#[test]
fn a_one_component_model_omits_the_figures_that_need_two() {
    let (x, labels) = images();
    let model = principal::PcaBuilder::new()
        .components(principal::ComponentCount::Fixed(1))
        .build()
        .unwrap()
        .fit(x.as_ref())
        .unwrap();
    let data = summarise(&model, &x, Some(&labels), 240);
    let report = Report::new(view(&model))
        .unwrap()
        .with_data(&data)
        .unwrap()
        .with_image_shape(ImageShape::new(4, 4).unwrap())
        .unwrap();
    let (drawn, omitted) = report.plan();
    assert_eq!(
        drawn,
        [
            FigureKind::Scree,
            FigureKind::Spectrum,
            FigureKind::ReconstructionError,
            FigureKind::MeanAndComponents,
            FigureKind::Reconstructions,
        ]
    );
    for omission in &omitted {
        assert!(
            omission.reason.contains("only one component"),
            "{omission:?}"
        );
    }
    let err = report
        .figure(FigureKind::LatentGrid, &mut NoProgress)
        .unwrap_err();
    assert!(matches!(err, ReportError::CannotDraw { .. }), "{err}");
}

#[test]
fn an_image_shape_that_does_not_match_the_features_is_an_error_naming_both() {
    let (x, _) = images();
    let model = fit(&x);
    let err = Report::new(view(&model))
        .unwrap()
        .with_image_shape(ImageShape::new(28, 28).unwrap())
        .unwrap_err();
    assert!(matches!(
        err,
        ReportError::ImageShapeMismatch {
            height: 28,
            width: 28,
            n_features: 16
        }
    ));
    assert_eq!(
        err.to_string(),
        "image shape 28×28 has 784 pixels but the model has 16 features"
    );
}

#[test]
fn labels_of_the_wrong_length_are_an_error_naming_both_counts() {
    let (x, labels) = images();
    let model = fit(&x);
    let view = view(&model);
    let codes = model.transform(x.as_ref()).unwrap();
    // Too few labels: the row without one is named.
    let mut builder = ReportDataBuilder::new(
        &view,
        Some(Labels::new(&labels[..200])),
        SampleChoice::default(),
    )
    .unwrap();
    let err = builder.push(x.as_ref(), codes.as_ref()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "there are 200 labels but the data has more rows (row 200 has no label)"
    );
    // Too many labels: found at the end.
    let mut more = labels.clone();
    more.push("extra".into());
    let mut builder =
        ReportDataBuilder::new(&view, Some(Labels::new(&more)), SampleChoice::default()).unwrap();
    builder.push(x.as_ref(), codes.as_ref()).unwrap();
    let err = builder.finish().unwrap_err();
    assert!(matches!(
        err,
        ReportError::LabelCountMismatch {
            labels: 241,
            rows: 240
        }
    ));
}

#[test]
fn data_summarised_for_another_model_is_refused() {
    let (x, _) = images();
    let model = fit(&x);
    let fewer = principal::PcaBuilder::new()
        .components(principal::ComponentCount::Fixed(2))
        .build()
        .unwrap()
        .fit(x.as_ref())
        .unwrap();
    let data = summarise(&fewer, &x, None, 240);
    let err = Report::new(view(&model))
        .unwrap()
        .with_data(&data)
        .unwrap_err();
    assert!(
        matches!(err, ReportError::DataModelMismatch { .. }),
        "{err}"
    );
}

#[test]
fn a_directory_of_other_files_is_never_replaced() {
    let (x, _) = images();
    let model = fit(&x);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("mine");
    fs::create_dir(&out).unwrap();
    fs::write(out.join("notes.txt"), "precious").unwrap();
    // Even an index.html that this crate did not write does not make it a report.
    fs::write(out.join("index.html"), "<html>my page</html>").unwrap();
    let err = Report::new(view(&model))
        .unwrap()
        .write(&out, &mut NoProgress)
        .unwrap_err();
    assert!(
        matches!(err, ReportError::NotAReportDirectory { .. }),
        "{err}"
    );
    assert_eq!(listing(&out), ["index.html", "notes.txt"]);
    assert_eq!(
        fs::read_to_string(out.join("notes.txt")).unwrap(),
        "precious"
    );
    assert_eq!(listing(dir.path()), ["mine"], "no temporary directory left");
}

#[test]
fn a_file_in_the_way_is_refused() {
    let (x, _) = images();
    let model = fit(&x);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report");
    fs::write(&out, "a file").unwrap();
    let err = Report::new(view(&model))
        .unwrap()
        .write(&out, &mut NoProgress)
        .unwrap_err();
    assert!(matches!(err, ReportError::NotADirectory { .. }), "{err}");
    assert_eq!(fs::read_to_string(&out).unwrap(), "a file");
}

#[test]
fn an_earlier_report_and_an_empty_directory_are_replaced() {
    let (x, labels) = images();
    let model = fit(&x);
    let data = summarise(&model, &x, Some(&labels), 240);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report");
    fs::create_dir(&out).unwrap();
    let first = Report::new(view(&model))
        .unwrap()
        .write(&out, &mut NoProgress)
        .unwrap();
    assert!(first.replaced, "the empty directory was replaced");
    assert!(!out.join("projection.png").exists());
    let second = Report::new(view(&model))
        .unwrap()
        .with_data(&data)
        .unwrap()
        .write(&out, &mut NoProgress)
        .unwrap();
    assert!(second.replaced && second.leftover.is_none());
    assert!(out.join("projection.png").exists());
    assert_references_exist(&out);
    assert_eq!(listing(dir.path()), ["report"], "the old report is gone");
}

/// Makes the write fail half-way: when the first scatter starts drawing, the temporary
/// directory the report is being written into disappears (as on a full or vanished disk).
struct PullTheRug<'a> {
    parent: &'a Path,
    pulled: bool,
}

impl Progress for PullTheRug<'_> {
    fn begin(&mut self, _step: &str, _total: u64) {
        if self.pulled {
            return;
        }
        for entry in fs::read_dir(self.parent).unwrap() {
            let path = entry.unwrap().path();
            if path
                .file_name()
                .unwrap()
                .to_string_lossy()
                .contains(".partial-")
            {
                fs::remove_dir_all(&path).unwrap();
                self.pulled = true;
            }
        }
    }
}

#[test]
fn a_failure_half_way_leaves_no_partial_directory_and_keeps_the_earlier_report() {
    let (x, labels) = images();
    let model = fit(&x);
    let data = summarise(&model, &x, Some(&labels), 240);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report");
    Report::new(view(&model))
        .unwrap()
        .write(&out, &mut NoProgress)
        .unwrap();
    let before: Vec<(String, Vec<u8>)> = listing(&out)
        .into_iter()
        .map(|name| {
            let bytes = fs::read(out.join(&name)).unwrap();
            (name, bytes)
        })
        .collect();
    let mut rug = PullTheRug {
        parent: dir.path(),
        pulled: false,
    };
    let err = Report::new(view(&model))
        .unwrap()
        .with_data(&data)
        .unwrap()
        .write(&out, &mut rug)
        .unwrap_err();
    assert!(rug.pulled, "the failure was provoked");
    assert!(matches!(err, ReportError::Io { .. }), "{err}");
    let after: Vec<(String, Vec<u8>)> = listing(&out)
        .into_iter()
        .map(|name| {
            let bytes = fs::read(out.join(&name)).unwrap();
            (name, bytes)
        })
        .collect();
    assert_eq!(before, after, "the earlier report is untouched");
    assert_eq!(listing(dir.path()), ["report"], "no partial directory");
}

#[test]
fn an_unwritable_location_fails_before_drawing_and_creates_nothing() {
    let (x, _) = images();
    let model = fit(&x);
    let dir = tempfile::tempdir().unwrap();
    // The parent is a file: nothing can be created under it (as root too).
    fs::write(dir.path().join("file"), "x").unwrap();
    let out = dir.path().join("file").join("report");
    let err = Report::new(view(&model))
        .unwrap()
        .write(&out, &mut NoProgress)
        .unwrap_err();
    assert!(matches!(err, ReportError::Io { .. }), "{err}");
    assert!(err.to_string().contains("file"), "{err}");
    assert_eq!(listing(dir.path()), ["file"]);
}

#[test]
fn options_out_of_range_are_refused_by_name() {
    let (x, _) = images();
    let model = fit(&x);
    let mut options = ReportOptions::default();
    options.latent_grid.steps = 1;
    let err = Report::new(view(&model))
        .unwrap()
        .with_options(options)
        .unwrap_err();
    assert!(err.to_string().contains("latent_grid.steps = 1"), "{err}");
}
