//! Every figure function: the PNG decodes to the stated size, the SVG is one well-formed
//! document, and what was plotted equals what was given.

use crate::common;

use common::{assert_svg, clustered, fit, png_size, summarise, view};
use principal::faer::Mat;
use principal_report::figures::{
    SCREE_BARS, accuracy_by_components, confusion_matrix, latent_grid, mean_and_components,
    pairs_grid, projection_map, reconstruction_error, reconstructions, scree, spectrum,
};
use principal_report::{
    Classification, ColourScale, Figure, ImageShape, LatentGridOptions, NoProgress, Plotted,
    PointOptions, Progress, Recognition,
};

/// Checks both files of `figure`.
fn assert_files(figure: &Figure) {
    assert_eq!(png_size(figure.png()), figure.size(), "{:?}", figure.kind());
    assert_svg(figure.svg(), figure.size());
    assert!(!figure.caption().is_empty());
}

#[test]
fn the_scree_plot_draws_each_ratio_and_their_running_sum() {
    let (x, _) = clustered(200, 6, 3, 1);
    let model = fit(&x);
    let figure = scree(&view(&model)).unwrap();
    assert_files(&figure);
    let ratios = figure.plotted().series("explained_variance_ratio").unwrap();
    assert_eq!(ratios.ys(), model.explained_variance_ratio());
    let xs: Vec<f64> = ratios.points.iter().map(|p| p.0).collect();
    assert_eq!(xs, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let cumulative = figure.plotted().series("cumulative").unwrap().ys();
    let mut running = 0.0;
    for (c, r) in cumulative.iter().zip(model.explained_variance_ratio()) {
        running += r;
        assert_eq!(*c, running);
    }
    // Every component kept: the cumulative ratio ends at 1 to rounding.
    assert!((cumulative[5] - 1.0).abs() < 1e-12);
}

#[test]
fn a_scree_plot_of_many_components_shows_the_first_fifty_and_says_so() {
    let (x, _) = clustered(120, 80, 4, 2);
    let model = fit(&x);
    let figure = scree(&view(&model)).unwrap();
    let ratios = figure.plotted().series("explained_variance_ratio").unwrap();
    assert_eq!(ratios.points.len(), SCREE_BARS);
    assert_eq!(ratios.ys(), model.explained_variance_ratio()[..SCREE_BARS]);
    assert!(
        figure.caption().contains("first 50 of the 80"),
        "{}",
        figure.caption()
    );
}

#[test]
fn the_spectrum_draws_the_eigenvalues_and_leaves_out_rounding_zeros() {
    // Rank 3 in 8 dimensions: five eigenvalues are zero to rounding.
    let (low_rank, _) = clustered(50, 3, 2, 3);
    let x = Mat::from_fn(50, 8, |i, j| {
        let k = j % 3;
        low_rank[(i, k)] * (1.0 + j as f64)
    });
    let model = fit(&x);
    let figure = spectrum(&view(&model)).unwrap();
    assert_files(&figure);
    let drawn = figure.plotted().series("explained_variance").unwrap();
    assert_eq!(drawn.ys(), model.explained_variance()[..3]);
    assert!(figure.caption().contains("The last 5 are zero to rounding"));
}

#[test]
fn the_projection_map_draws_every_sample_in_png_and_a_stratified_subsample_in_svg() {
    // 70,000 samples, as Fashion-MNIST: the SVG keeps 5,000 points, each class its share.
    let (x, labels) = clustered(70_000, 4, 3, 4);
    let model = fit(&x);
    let data = summarise(&model, &x, Some(&labels), 10_000);
    let options = PointOptions::default();
    let figure = projection_map(&view(&model), &data, &options, &mut NoProgress).unwrap();
    assert_files(&figure);
    let Plotted::Points(counts) = figure.plotted() else {
        panic!("a scatter reports points");
    };
    assert_eq!(
        (counts.samples, counts.png, counts.svg),
        (70_000, 70_000, 5000)
    );
    // Classes of 23,334, 23,333 and 23,333 samples: 1,667 + 1,667 + 1,666 points.
    let per_class: Vec<(usize, usize)> = counts
        .per_class
        .iter()
        .map(|c| (c.samples, c.svg))
        .collect();
    assert_eq!(per_class, [(23_334, 1667), (23_333, 1667), (23_333, 1666)]);
    // The SVG holds one circle per point drawn, plus one per legend entry.
    assert_eq!(figure.svg().matches("<circle").count(), 5000 + 3);
    assert!(
        figure
            .caption()
            .contains("subsample of 5000 points (seed 0)")
    );
}

/// Counts the units of work reported.
#[derive(Default)]
struct Tally {
    steps: Vec<(String, u64)>,
    done: u64,
    ended: usize,
}

impl Progress for Tally {
    fn begin(&mut self, step: &str, total: u64) {
        self.steps.push((step.to_owned(), total));
    }
    fn advance(&mut self, done: u64) {
        self.done += done;
    }
    fn end(&mut self) {
        self.ended += 1;
    }
}

#[test]
fn the_pairs_grid_reports_its_progress_and_draws_the_first_four_components() {
    let (x, labels) = clustered(2000, 6, 4, 5);
    let model = fit(&x);
    let data = summarise(&model, &x, Some(&labels), 512);
    let mut tally = Tally::default();
    let options = PointOptions {
        svg_points: 800,
        seed: 7,
    };
    let figure = pairs_grid(&view(&model), &data, &options, &mut tally).unwrap();
    assert_files(&figure);
    let Plotted::Points(counts) = figure.plotted() else {
        panic!("a scatter reports points");
    };
    assert_eq!(counts.components, 4);
    // A quarter of the SVG budget in each of the 12 scatter panels.
    assert_eq!((counts.png, counts.svg), (2000, 200));
    assert_eq!(
        tally.steps,
        [
            ("pairs grid (PNG)".to_owned(), 2000 * 12),
            ("pairs grid (SVG)".to_owned(), 200 * 12)
        ]
    );
    assert_eq!((tally.done, tally.ended), (2200 * 12, 2));
}

#[test]
fn without_labels_the_map_has_one_colour_and_no_legend() {
    let (x, _) = clustered(900, 3, 3, 12);
    let model = fit(&x);
    let data = summarise(&model, &x, None, 300);
    let options = PointOptions {
        svg_points: 400,
        seed: 0,
    };
    let figure = projection_map(&view(&model), &data, &options, &mut NoProgress).unwrap();
    let Plotted::Points(counts) = figure.plotted() else {
        panic!("a scatter reports points");
    };
    assert!(counts.per_class.is_empty());
    assert_eq!(figure.svg().matches("<circle").count(), 400);
    assert!(!figure.svg().contains(">label<"));
    assert!(!figure.caption().contains("stratified"));
    let pairs = pairs_grid(&view(&model), &data, &options, &mut NoProgress).unwrap();
    assert_files(&pairs);
    let Plotted::Points(counts) = pairs.plotted() else {
        panic!("a scatter reports points");
    };
    // Three components: a 3×3 grid, six scatter panels of 100 points each in the SVG.
    assert_eq!((counts.components, counts.svg), (3, 100));
    assert_eq!(pairs.svg().matches("<circle").count(), 600);
}

#[test]
fn a_figure_saves_both_files_beside_each_other() {
    let (x, _) = clustered(100, 3, 2, 13);
    let model = fit(&x);
    let figure = scree(&view(&model)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    figure.save(dir.path()).unwrap();
    assert_eq!(
        std::fs::read(dir.path().join("scree.png")).unwrap(),
        figure.png()
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("scree.svg")).unwrap(),
        figure.svg()
    );
    assert_eq!(common::listing(dir.path()), ["scree.png", "scree.svg"]);
}

#[test]
fn the_same_inputs_give_the_same_files_byte_for_byte() {
    let (x, labels) = clustered(3000, 4, 3, 6);
    let model = fit(&x);
    let data = summarise(&model, &x, Some(&labels), 1000);
    let options = PointOptions {
        svg_points: 500,
        seed: 3,
    };
    let draw = || projection_map(&view(&model), &data, &options, &mut NoProgress).unwrap();
    let (a, b) = (draw(), draw());
    assert_eq!(a.png(), b.png());
    assert_eq!(a.svg(), b.svg());
    let other_seed = PointOptions { seed: 4, ..options };
    let c = projection_map(&view(&model), &data, &other_seed, &mut NoProgress).unwrap();
    assert_ne!(a.svg(), c.svg(), "another seed, another subsample");
}

#[test]
fn the_reconstruction_error_figure_draws_both_curves_from_k_0_to_m() {
    let (x, labels) = clustered(300, 5, 3, 8);
    let model = fit(&x);
    let data = summarise(&model, &x, Some(&labels), 100);
    let figure = reconstruction_error(&view(&model), &data).unwrap();
    assert_files(&figure);
    let measured = figure.plotted().series("mean_squared_error").unwrap();
    let discarded = figure.plotted().series("discarded_variance").unwrap();
    assert_eq!(measured.ys(), data.reconstruction_error_curve());
    let xs: Vec<f64> = discarded.points.iter().map(|p| p.0).collect();
    assert_eq!(xs, [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    assert_eq!(
        discarded.ys(),
        principal_report::discarded_variance_curve(
            model.n_samples(),
            model.ddof(),
            model.total_variance(),
            model.explained_variance()
        )
    );
}

#[test]
fn components_are_drawn_on_a_diverging_scale_symmetric_about_zero() {
    let (x, _) = clustered(400, 12, 3, 9);
    let model = fit(&x);
    let shape = ImageShape::new(3, 4).unwrap();
    let figure = mean_and_components(&view(&model), shape, 5, &mut NoProgress).unwrap();
    assert_files(&figure);
    let Plotted::Images(panels) = figure.plotted() else {
        panic!("an image grid reports its panels");
    };
    assert_eq!(panels.len(), 6);
    assert_eq!(panels[0].values, model.mean());
    let (low, high) = model
        .mean()
        .iter()
        .fold((f64::MAX, f64::MIN), |(l, h), &v| (l.min(v), h.max(v)));
    assert_eq!(panels[0].scale, ColourScale::Grey { low, high });
    for (m, panel) in panels[1..].iter().enumerate() {
        let row: Vec<f64> = (0..12).map(|j| model.components()[(m, j)]).collect();
        assert_eq!(panel.values, row);
        let limit = row.iter().fold(0.0f64, |a, v| a.max(v.abs()));
        assert_eq!(panel.scale, ColourScale::Diverging { limit });
    }
    // Each image is embedded once in the SVG, as a PNG of its own size.
    assert_eq!(figure.svg().matches("data:image/png;base64,").count(), 6);
}

#[test]
fn reconstructions_from_every_component_give_back_the_original() {
    let (x, labels) = clustered(600, 16, 4, 10);
    let model = fit(&x);
    let data = summarise(&model, &x, Some(&labels), 250);
    let shape = ImageShape::new(4, 4).unwrap();
    let figure = reconstructions(&view(&model), &data, shape, &mut NoProgress).unwrap();
    assert_files(&figure);
    let Plotted::Images(panels) = figure.plotted() else {
        panic!("an image grid reports its panels");
    };
    // Four samples (the first of each class), each: original, k = 1, 10, 16.
    assert_eq!(panels.len(), 4 * 4);
    let rows: Vec<usize> = data.samples().iter().map(|s| s.row).collect();
    assert_eq!(rows, [0, 1, 2, 3]);
    let scale = 100.0 * 16.0; // the data's magnitude
    for (s, group) in panels.chunks(4).enumerate() {
        let original: Vec<f64> = (0..16).map(|j| x[(rows[s], j)]).collect();
        assert_eq!(group[0].values, original);
        assert!(
            group[3].label.ends_with("16 components"),
            "{}",
            group[3].label
        );
        for (a, b) in group[3].values.iter().zip(&original) {
            assert!(
                (a - b).abs() <= 64.0 * f64::EPSILON * scale,
                "{a} against {b}"
            );
        }
        // With one component, the reconstruction lies on the line through the mean.
        assert_ne!(group[1].values, original);
    }
}

#[test]
fn the_centre_of_the_latent_grid_is_the_mean_image() {
    let (x, _) = clustered(300, 9, 3, 11);
    let model = fit(&x);
    let shape = ImageShape::new(3, 3).unwrap();
    let options = LatentGridOptions::default();
    let figure = latent_grid(&view(&model), shape, &options, &mut NoProgress).unwrap();
    assert_files(&figure);
    let Plotted::Images(panels) = figure.plotted() else {
        panic!("an image grid reports its panels");
    };
    assert_eq!(panels.len(), 81);
    let centre = &panels[40];
    assert_eq!(centre.label, "z1 = 0·√λ1, z2 = 0·√λ2");
    for (a, b) in centre.values.iter().zip(model.mean()) {
        assert!((a - b).abs() <= 1e-12 * b.abs().max(1.0), "{a} against {b}");
    }
    // The top-right image is μ + 2√λ₁ b₁ + 2√λ₂ b₂.
    let corner = &panels[8];
    let (l1, l2) = (
        model.explained_variance()[0].sqrt(),
        model.explained_variance()[1].sqrt(),
    );
    for j in 0..9 {
        let expected = model.mean()[j]
            + 2.0 * l1 * model.components()[(0, j)]
            + 2.0 * l2 * model.components()[(1, j)];
        assert!((corner.values[j] - expected).abs() <= 1e-12 * expected.abs().max(1.0));
    }
}

#[test]
fn the_confusion_matrix_draws_the_counts_given() {
    let classes: Vec<String> = ["cat", "dog", "bird"].map(String::from).to_vec();
    let counts = vec![vec![8, 1, 1], vec![0, 9, 1], vec![2, 0, 8]];
    let results = Classification::new(classes.clone(), counts.clone(), vec![]).unwrap();
    let figure = confusion_matrix(&results).unwrap();
    assert_files(&figure);
    assert_eq!(figure.plotted(), &Plotted::Counts { classes, counts });
    assert!(
        figure.caption().contains("25 of 30"),
        "{}",
        figure.caption()
    );
    assert!(figure.caption().contains("83.33%"), "{}", figure.caption());
    assert!(
        figure.caption().contains("by the nearest training code:"),
        "{}",
        figure.caption()
    );
    // The setting, when given, is named in the caption; a count of zero is refused.
    let setting = Recognition {
        components: 50,
        neighbours: 3,
    };
    let results = results.with_setting(setting).unwrap();
    let figure = confusion_matrix(&results).unwrap();
    assert!(
        figure
            .caption()
            .contains("by a majority of the 3 nearest training codes on the first 50 components"),
        "{}",
        figure.caption()
    );
    assert!(
        results
            .with_setting(Recognition {
                components: 0,
                neighbours: 1
            })
            .is_err()
    );
}

#[test]
fn the_accuracy_curve_is_sorted_by_the_number_of_components() {
    let results = Classification::new(
        vec!["a".into(), "b".into()],
        vec![vec![5, 0], vec![1, 4]],
        vec![(50, 0.9), (1, 0.4), (10, 0.8), (100, 0.85)],
    )
    .unwrap();
    let figure = accuracy_by_components(&results).unwrap();
    assert_files(&figure);
    let drawn = figure.plotted().series("accuracy").unwrap();
    assert_eq!(
        drawn.points,
        [(1.0, 0.4), (10.0, 0.8), (50.0, 0.9), (100.0, 0.85)]
    );
    let one = Classification::new(vec!["a".into()], vec![vec![1]], vec![(3, 1.0)]).unwrap();
    assert!(accuracy_by_components(&one).is_err());
}
