//! Figures of recognition by nearest codes (eigenfaces): the confusion matrix and the accuracy
//! against the number of components.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::error::{ReportError, Result};
use crate::figures::figure::{
    Draw, DrawResult, Figure, FigureKind, Plotted, Series, Target, centred_text, render,
};
use crate::input::Classification;
use crate::style::{self, label_font, percent, shorten, small_font, tick_font, title_font};

/// The confusion matrix as a heat map: row = true class, column = predicted class, each cell
/// coloured by its count (white 0 to dark blue at the largest) and labelled with it.
///
/// [`Plotted::Counts`] holds the counts drawn.
pub fn confusion_matrix(results: &Classification) -> Result<Figure> {
    let classes = results.classes();
    let k = classes.len();
    let total: u64 = results.confusion().iter().flatten().sum();
    let method = results
        .setting()
        .map_or_else(|| "the nearest training code".to_owned(), |s| s.describe());
    let caption = format!(
        "Test samples by true label (rows) and the label predicted (columns) by {method}: {} of \
         {total} on the diagonal, an accuracy of {}. Colour: white at 0, dark blue at the largest \
         count.",
        (0..k).map(|i| results.confusion()[i][i]).sum::<u64>(),
        percent(results.accuracy()),
    );
    let cell = (640 / k as i32).clamp(16, 70);
    let names: Vec<String> = classes.iter().map(|c| shorten(c, 12)).collect();
    let longest = names.iter().map(|n| n.chars().count()).max().unwrap_or(1) as i32;
    let label_width = (longest * 11 + 30).max(60);
    let left = label_width + 40;
    // Column headings side by side when they fit their cells (about 11 px a character at
    // 18 px, 9 at 15 px), otherwise turned to read upwards, with room above for the longest.
    let char_width = if cell >= 28 { 11 } else { 9 };
    let upright = longest * char_width <= cell - 6;
    let top = if upright {
        110
    } else {
        70 + longest * char_width + 10
    };
    let width = (left + k as i32 * cell + 40).max(560);
    let height = top + k as i32 * cell + 40;
    let plotted = Plotted::Counts {
        classes: classes.to_vec(),
        counts: results.confusion().to_vec(),
    };
    let title = match results.setting() {
        Some(s) => format!(
            "Confusion matrix, K = {} (accuracy {})",
            s.components,
            percent(results.accuracy())
        ),
        None => format!(
            "Confusion matrix (accuracy {})",
            percent(results.accuracy())
        ),
    };
    let mut drawing = ConfusionDrawing {
        names,
        counts: results.confusion(),
        title,
        cell,
        left,
        top,
        upright,
    };
    render(
        FigureKind::ConfusionMatrix,
        (width as u32, height as u32),
        caption,
        plotted,
        &mut drawing,
    )
}

struct ConfusionDrawing<'a> {
    names: Vec<String>,
    counts: &'a [Vec<u64>],
    title: String,
    cell: i32,
    left: i32,
    top: i32,
    /// Column headings horizontal (else turned 90°, reading upwards).
    upright: bool,
}

impl Draw for ConfusionDrawing<'_> {
    fn draw<DB: DrawingBackend>(
        &mut self,
        root: &DrawingArea<DB, Shift>,
        _: Target,
    ) -> DrawResult<DB> {
        let (width, _) = root.dim_in_pixel();
        let k = self.names.len() as i32;
        let (cell, left, top) = (self.cell, self.left, self.top);
        centred_text(root, &self.title, (width as i32 / 2, 14), &title_font())?;
        centred_text(
            root,
            "predicted label",
            (
                left + k * cell / 2,
                if self.upright { top - 50 } else { 50 },
            ),
            &label_font(),
        )?;
        let largest = self.counts.iter().flatten().copied().max().unwrap_or(1) as f64;
        let show_counts = cell >= 28;
        let count_font = if cell >= 44 {
            tick_font()
        } else {
            small_font()
        };
        for (t, row) in self.counts.iter().enumerate() {
            for (p, &n) in row.iter().enumerate() {
                let (x, y) = (left + p as i32 * cell, top + t as i32 * cell);
                let colour = style::sequential(n as f64, largest);
                root.draw(&Rectangle::new(
                    [(x, y), (x + cell, y + cell)],
                    colour.filled(),
                ))?;
                if show_counts {
                    let ink = if style::is_dark(colour) { WHITE } else { BLACK };
                    let font = count_font
                        .color(&ink)
                        .pos(Pos::new(HPos::Center, VPos::Center));
                    root.draw(&Text::new(
                        n.to_string(),
                        (x + cell / 2, y + cell / 2),
                        font,
                    ))?;
                }
            }
        }
        root.draw(&Rectangle::new(
            [(left, top), (left + k * cell, top + k * cell)],
            RGBColor(120, 120, 120).stroke_width(1),
        ))?;
        let names_font = if cell >= 28 {
            tick_font()
        } else {
            small_font()
        };
        // Predicted labels across the top, true labels down the left.
        for (i, name) in self.names.iter().enumerate() {
            let centre = i as i32 * cell + cell / 2;
            if self.upright {
                let above = names_font.pos(Pos::new(HPos::Center, VPos::Bottom));
                root.draw(&Text::new(name.clone(), (left + centre, top - 6), above))?;
            } else {
                // Turned 270°: the text's start is at its bottom, just above its column.
                let upwards = names_font
                    .transform(FontTransform::Rotate270)
                    .pos(Pos::new(HPos::Left, VPos::Center));
                root.draw(&Text::new(name.clone(), (left + centre, top - 8), upwards))?;
            }
            let beside = names_font.pos(Pos::new(HPos::Right, VPos::Center));
            root.draw(&Text::new(name.clone(), (left - 10, top + centre), beside))?;
        }
        let true_label = label_font()
            .transform(FontTransform::Rotate270)
            .pos(Pos::new(HPos::Center, VPos::Top));
        root.draw(&Text::new(
            "true label".to_owned(),
            (8, top + k * cell / 2),
            true_label,
        ))?;
        Ok(())
    }
}

/// Recognition accuracy against the number of components K, one point per K tried (a log
/// axis when the K span a factor of 20 or more).
///
/// [`Plotted::Series`] holds `"accuracy"`: (K, accuracy) sorted by K. Needs at least two K.
pub fn accuracy_by_components(results: &Classification) -> Result<Figure> {
    let mut points: Vec<(f64, f64)> = results
        .accuracy_by_components()
        .iter()
        .map(|&(k, a)| (k as f64, a))
        .collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    if points.len() < 2 {
        return Err(ReportError::InvalidClassification(format!(
            "an accuracy curve needs at least 2 numbers of components; {} given",
            points.len()
        )));
    }
    let best = points
        .iter()
        .copied()
        .fold(points[0], |b, p| if p.1 > b.1 { p } else { b });
    let voters = match results.setting().map_or(1, |s| s.neighbours) {
        1 => "the nearest training code".to_owned(),
        n => format!("a majority of the {n} nearest training codes"),
    };
    let caption = format!(
        "Accuracy of recognition by {voters} on the first K components, for each K tried; the \
         best is {} at K = {}.",
        percent(best.1),
        best.0
    );
    let plotted = Plotted::Series(vec![Series {
        name: "accuracy".into(),
        points: points.clone(),
    }]);
    let mut drawing = AccuracyDrawing { points: &points };
    render(
        FigureKind::AccuracyByComponents,
        (1000, 650),
        caption,
        plotted,
        &mut drawing,
    )
}

struct AccuracyDrawing<'a> {
    points: &'a [(f64, f64)],
}

impl AccuracyDrawing<'_> {
    fn finish<DB: DrawingBackend, X>(
        &self,
        chart: &mut ChartContext<'_, DB, Cartesian2d<X, plotters::coord::types::RangedCoordf64>>,
    ) -> DrawResult<DB>
    where
        X: Ranged<ValueType = f64>,
    {
        let colour = style::PALETTE[0];
        chart.draw_series(LineSeries::new(
            self.points.iter().copied(),
            colour.stroke_width(3),
        ))?;
        chart.draw_series(
            self.points
                .iter()
                .map(|&p| Circle::new(p, 6, colour.filled())),
        )?;
        Ok(())
    }
}

impl Draw for AccuracyDrawing<'_> {
    fn draw<DB: DrawingBackend>(
        &mut self,
        root: &DrawingArea<DB, Shift>,
        _: Target,
    ) -> DrawResult<DB> {
        let (first, last) = (self.points[0].0, self.points[self.points.len() - 1].0);
        let low = self.points.iter().map(|p| p.1).fold(1.0, f64::min);
        let y_range = (low - 0.1).max(0.0)..1.0;
        let title = "Recognition accuracy against the number of components";
        let integer = |v: &f64| {
            if (v - v.round()).abs() < 1e-9 {
                format!("{}", v.round() as i64)
            } else {
                String::new()
            }
        };
        let mut builder = ChartBuilder::on(root);
        builder
            .caption(title, title_font())
            .margin(20)
            .x_label_area_size(70)
            .y_label_area_size(100);
        if last / first >= 20.0 {
            // A tick at every K tried (a log axis would otherwise mark only powers of ten).
            let tried: Vec<f64> = self.points.iter().map(|p| p.0).collect();
            let x_range = (first / 1.3..last * 1.3).log_scale().with_key_points(tried);
            let mut chart = builder.build_cartesian_2d(x_range, y_range)?;
            chart
                .configure_mesh()
                .max_light_lines(0)
                .bold_line_style(style::GRID)
                .x_label_formatter(&integer)
                .y_label_formatter(&|v| format!("{:.0}%", 100.0 * v))
                .x_desc("number of components K (log scale)")
                .y_desc("accuracy")
                .axis_desc_style(label_font())
                .label_style(tick_font())
                .draw()?;
            self.finish(&mut chart)
        } else {
            let pad = 0.05 * (last - first);
            let mut chart = builder.build_cartesian_2d(first - pad..last + pad, y_range)?;
            chart
                .configure_mesh()
                .max_light_lines(0)
                .bold_line_style(style::GRID)
                .x_label_formatter(&integer)
                .y_label_formatter(&|v| format!("{:.0}%", 100.0 * v))
                .x_desc("number of components K")
                .y_desc("accuracy")
                .axis_desc_style(label_font())
                .label_style(tick_font())
                .draw()?;
            self.finish(&mut chart)
        }
    }
}
