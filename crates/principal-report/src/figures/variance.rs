//! Figures of variances: the scree plot, the eigenvalue spectrum, and the reconstruction
//! error against the number of components.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::curves::discarded_variance_curve;
use crate::data::ReportData;
use crate::error::{ReportError, Result};
use crate::figures::figure::{
    Draw, DrawResult, Figure, FigureKind, Plotted, Series, Target, render,
};
use crate::input::ModelView;
use crate::style::{
    self, AxisScale, GRID, LogAxis, label_font, percent, significant, tick_font, title_font,
};

/// Components shown as bars in the scree plot at most (more would be slivers).
pub const SCREE_BARS: usize = 50;

/// Name of the scree plot's bars in [`Plotted::Series`].
const RATIO: &str = "explained_variance_ratio";
/// Name of the scree plot's cumulative curve.
const CUMULATIVE: &str = "cumulative";

const WIDE: (u32, u32) = (1000, 650);

/// The scree plot: the proportion of variance explained by each component (bars, the first
/// [`SCREE_BARS`] at most) and their cumulative sum (line).
///
/// [`Plotted::Series`] holds `"explained_variance_ratio"` and `"cumulative"`, x = component
/// number (from 1).
pub fn scree(model: &ModelView<'_>) -> Result<Figure> {
    model.validate()?;
    let m = model.n_components();
    let shown = m.min(SCREE_BARS);
    let ratios = &model.explained_variance_ratio[..shown];
    let mut running = 0.0;
    let cumulative: Vec<f64> = ratios
        .iter()
        .map(|r| {
            running += r;
            running
        })
        .collect();
    let numbered = |ys: &[f64]| -> Vec<(f64, f64)> {
        ys.iter()
            .enumerate()
            .map(|(i, &y)| ((i + 1) as f64, y))
            .collect()
    };
    let plotted = Plotted::Series(vec![
        Series {
            name: RATIO.into(),
            points: numbered(ratios),
        },
        Series {
            name: CUMULATIVE.into(),
            points: numbered(&cumulative),
        },
    ]);
    let which = if shown < m {
        format!("each of the first {shown} of the {m} components")
    } else {
        format!("each of the {m} components")
    };
    let caption = format!(
        "Bars: the proportion of the total variance (trace of the {} matrix, {}) explained by \
         {which}; line: the cumulative proportion, {} after {shown}.",
        matrix_name(model),
        significant(model.total_variance, 4),
        percent(cumulative[shown - 1]),
    );
    let mut drawing = ScreeDrawing {
        ratios,
        cumulative: &cumulative,
    };
    render(FigureKind::Scree, WIDE, caption, plotted, &mut drawing)
}

/// "covariance" or "correlation".
fn matrix_name(model: &ModelView<'_>) -> &'static str {
    match model.scaling {
        crate::input::Scaling::Centre => "covariance",
        crate::input::Scaling::Standardize => "correlation",
    }
}

struct ScreeDrawing<'a> {
    ratios: &'a [f64],
    cumulative: &'a [f64],
}

impl Draw for ScreeDrawing<'_> {
    fn draw<DB: DrawingBackend>(
        &mut self,
        root: &DrawingArea<DB, Shift>,
        _: Target,
    ) -> DrawResult<DB> {
        let shown = self.ratios.len();
        let top = self.cumulative.iter().copied().fold(0.0, f64::max).max(0.0);
        let y_max = (top * 1.1).max(0.05);
        let mut chart = ChartBuilder::on(root)
            .caption("Scree plot: variance explained per component", title_font())
            .margin(20)
            .x_label_area_size(70)
            .y_label_area_size(100)
            .build_cartesian_2d(0.4..shown as f64 + 0.6, 0.0..y_max)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .max_light_lines(0)
            .bold_line_style(GRID)
            .x_labels(shown.min(12))
            .x_label_formatter(&integer_label)
            .y_label_formatter(&|v| format!("{:.0}%", 100.0 * v))
            .x_desc("component")
            .y_desc("proportion of variance")
            .axis_desc_style(label_font())
            .label_style(tick_font())
            .draw()?;
        let bar = style::PALETTE[0];
        chart
            .draw_series(self.ratios.iter().enumerate().map(|(i, &r)| {
                let x = (i + 1) as f64;
                Rectangle::new([(x - 0.4, 0.0), (x + 0.4, r)], bar.mix(0.85).filled())
            }))?
            .label("proportion of variance (λₘ / trace)")
            .legend(move |(x, y)| Rectangle::new([(x, y - 7), (x + 20, y + 7)], bar.filled()));
        let line = style::PALETTE[1];
        let points: Vec<(f64, f64)> = self
            .cumulative
            .iter()
            .enumerate()
            .map(|(i, &c)| ((i + 1) as f64, c))
            .collect();
        chart
            .draw_series(LineSeries::new(points.clone(), line.stroke_width(3)))?
            .label("cumulative proportion")
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], line.stroke_width(3)));
        if shown <= 30 {
            chart.draw_series(points.iter().map(|&p| Circle::new(p, 5, line.filled())))?;
        }
        if shown <= 12 {
            // Inside a tall bar (the first bar's top is the cumulative curve's first point),
            // above a short one.
            let inside = tick_font()
                .color(&WHITE)
                .pos(Pos::new(HPos::Center, VPos::Top));
            let above = tick_font().pos(Pos::new(HPos::Center, VPos::Bottom));
            chart.draw_series(self.ratios.iter().enumerate().map(|(i, &r)| {
                let x = (i + 1) as f64;
                if r > 0.15 * y_max {
                    Text::new(percent(r), (x, r - 0.02 * y_max), inside.clone())
                } else {
                    Text::new(percent(r), (x, r + 0.012 * y_max), above.clone())
                }
            }))?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::MiddleRight)
            .margin(15)
            .label_font(tick_font())
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK.mix(0.4))
            .draw()?;
        Ok(())
    }
}

/// A tick label for integer positions only (half-way ticks get none).
fn integer_label(v: &f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        format!("{}", v.round() as i64)
    } else {
        String::new()
    }
}

/// The eigenvalue spectrum: λ₁ ≥ … ≥ λ_M on a log scale, the "only a few are large" picture.
///
/// [`Plotted::Series`] holds `"explained_variance"`: (component number, λ) for every positive
/// eigenvalue (a log scale cannot show zero; the caption says how many were left out).
pub fn spectrum(model: &ModelView<'_>) -> Result<Figure> {
    model.validate()?;
    let m = model.n_components();
    // Eigenvalues below λ₁·D·ε are zero to rounding: on a log axis their rounding noise would
    // fill most of the height.
    let largest = model.explained_variance[0];
    let zero = largest * model.n_features() as f64 * f64::EPSILON;
    let points: Vec<(f64, f64)> = model
        .explained_variance
        .iter()
        .enumerate()
        .filter(|&(_, &v)| v > zero)
        .map(|(i, &v)| ((i + 1) as f64, v))
        .collect();
    if points.is_empty() {
        return Err(ReportError::CannotDraw {
            figure: FigureKind::Spectrum.file_stem(),
            reason: "no eigenvalue is positive: nothing to show on a log scale".into(),
        });
    }
    let left_out = m - points.len();
    let smallest = points.iter().map(|p| p.1).fold(f64::MAX, f64::min);
    let mut caption = format!(
        "The {m} eigenvalues of the {} matrix kept by the model, on a log scale: from {} down \
         to {} (a ratio of {}).",
        matrix_name(model),
        significant(largest, 4),
        significant(smallest, 4),
        significant(largest / smallest, 3),
    );
    if left_out > 0 {
        caption += &format!(
            " The last {left_out} are zero to rounding (at most λ₁·D·ε = {}) and not shown.",
            significant(zero, 2)
        );
    }
    let plotted = Plotted::Series(vec![Series {
        name: "explained_variance".into(),
        points: points.clone(),
    }]);
    let mut drawing = SpectrumDrawing { points: &points, m };
    render(FigureKind::Spectrum, WIDE, caption, plotted, &mut drawing)
}

struct SpectrumDrawing<'a> {
    points: &'a [(f64, f64)],
    m: usize,
}

impl Draw for SpectrumDrawing<'_> {
    fn draw<DB: DrawingBackend>(
        &mut self,
        root: &DrawingArea<DB, Shift>,
        _: Target,
    ) -> DrawResult<DB> {
        let high = self.points.iter().map(|p| p.1).fold(0.0, f64::max);
        let low = self.points.iter().map(|p| p.1).fold(f64::MAX, f64::min);
        let m = self.m as f64;
        let axis = LogAxis::new(low / 2.0, high * 2.0);
        let mut chart = ChartBuilder::on(root)
            .caption("Eigenvalue spectrum (log scale)", title_font())
            .margin(20)
            .x_label_area_size(70)
            .y_label_area_size(110)
            .build_cartesian_2d(
                0.5..m + 0.5,
                (low / 2.0..high * 2.0)
                    .log_scale()
                    .with_key_points(axis.key_points()),
            )?;
        chart
            .configure_mesh()
            .max_light_lines(0)
            .bold_line_style(GRID)
            .x_labels(12)
            .x_label_formatter(&integer_label)
            .y_label_formatter(&|v| axis.label(*v))
            .x_desc("component m")
            .y_desc("eigenvalue λₘ")
            .axis_desc_style(label_font())
            .label_style(tick_font())
            .draw()?;
        let colour = style::PALETTE[0];
        chart.draw_series(LineSeries::new(
            self.points.iter().copied(),
            colour.stroke_width(2),
        ))?;
        if self.points.len() <= 100 {
            chart.draw_series(
                self.points
                    .iter()
                    .map(|&p| Circle::new(p, 4, colour.filled())),
            )?;
        }
        Ok(())
    }
}

/// Mean squared reconstruction error of the data against the number of components k, and
/// the discarded eigenvalues `((N − ddof)/N) Σ_{j>k} λⱼ` on the same axes: on the training
/// data the two coincide (the minimum-error and maximum-variance views of PCA agree).
///
/// [`Plotted::Series`] holds `"mean_squared_error"` (from
/// [`ReportData::reconstruction_error_curve`]) and `"discarded_variance"` (from
/// [`discarded_variance_curve`](crate::discarded_variance_curve)), x = k from 0 to M.
pub fn reconstruction_error(model: &ModelView<'_>, data: &ReportData) -> Result<Figure> {
    model.validate()?;
    crate::data::check_data(model, data)?;
    let measured = data.reconstruction_error_curve();
    let discarded = discarded_variance_curve(
        model.n_samples,
        model.ddof,
        model.total_variance,
        model.explained_variance,
    );
    let numbered = |ys: &[f64]| -> Vec<(f64, f64)> {
        ys.iter().enumerate().map(|(k, &y)| (k as f64, y)).collect()
    };
    let measured = numbered(&measured);
    let discarded = numbered(&discarded);
    let units = match model.scaling {
        crate::input::Scaling::Centre => "",
        crate::input::Scaling::Standardize => " in standardized units",
    };
    let largest_gap = measured
        .iter()
        .zip(&discarded)
        .map(|(a, b)| (a.1 - b.1).abs())
        .fold(0.0, f64::max);
    let caption = format!(
        "Markers: the mean squared error (1/N) Σ‖xₙ − x̃ₙ‖²{units} of the {} rows of data \
         reconstructed from their first k codes, k = 0 to {}; line: the discarded eigenvalues \
         ((N − ddof)/N) · Σ λⱼ over j > k, with the model's N = {} and ddof = {}. On the training \
         data the two coincide; here they differ by at most {} ({} of the error with no \
         component).",
        data.n_rows(),
        model.n_components(),
        model.n_samples,
        model.ddof,
        significant(largest_gap, 3),
        percent(largest_gap / measured[0].1.max(f64::MIN_POSITIVE)),
    );
    let plotted = Plotted::Series(vec![
        Series {
            name: "mean_squared_error".into(),
            points: measured.clone(),
        },
        Series {
            name: "discarded_variance".into(),
            points: discarded.clone(),
        },
    ]);
    let mut drawing = ErrorDrawing {
        measured: &measured,
        discarded: &discarded,
        standardized: model.scaling == crate::input::Scaling::Standardize,
    };
    render(
        FigureKind::ReconstructionError,
        WIDE,
        caption,
        plotted,
        &mut drawing,
    )
}

struct ErrorDrawing<'a> {
    measured: &'a [(f64, f64)],
    discarded: &'a [(f64, f64)],
    standardized: bool,
}

impl Draw for ErrorDrawing<'_> {
    fn draw<DB: DrawingBackend>(
        &mut self,
        root: &DrawingArea<DB, Shift>,
        _: Target,
    ) -> DrawResult<DB> {
        let m = (self.measured.len() - 1) as f64;
        let high = self
            .measured
            .iter()
            .chain(self.discarded)
            .map(|p| p.1)
            .fold(0.0, f64::max);
        let y_max = if high > 0.0 { high * 1.05 } else { 1.0 };
        let scale = AxisScale::for_values(y_max);
        let label = move |v: &f64| scale.label(*v);
        let description = scale.describe(if self.standardized {
            "mean squared error (standardized units)"
        } else {
            "mean squared error"
        });
        let mut chart = ChartBuilder::on(root)
            .caption(
                "Reconstruction error against the number of components",
                title_font(),
            )
            .margin(20)
            .x_label_area_size(70)
            .y_label_area_size(110)
            .build_cartesian_2d(-0.02 * m.max(1.0)..m * 1.02 + 0.5, 0.0..y_max)?;
        chart
            .configure_mesh()
            .max_light_lines(0)
            .bold_line_style(GRID)
            .x_labels(12)
            .x_label_formatter(&integer_label)
            .y_label_formatter(&label)
            .x_desc("number of components k")
            .y_desc(description)
            .axis_desc_style(label_font())
            .label_style(tick_font())
            .draw()?;
        let line = style::PALETTE[1];
        chart
            .draw_series(LineSeries::new(
                self.discarded.iter().copied(),
                line.stroke_width(4),
            ))?
            .label("discarded eigenvalues: (N − ddof)/N × sum of λⱼ for j > k")
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 24, y)], line.stroke_width(4)));
        // At most about 60 markers, so that they stay apart; the series keeps every k.
        let step = self.measured.len().div_ceil(60).max(1);
        let marker = style::PALETTE[0];
        chart
            .draw_series(
                self.measured
                    .iter()
                    .step_by(step)
                    .map(|&p| Circle::new(p, 5, marker.stroke_width(2))),
            )?
            .label("mean squared reconstruction error of the data")
            .legend(move |(x, y)| Circle::new((x + 12, y), 5, marker.stroke_width(2)));
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .margin(15)
            .label_font(tick_font())
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK.mix(0.4))
            .draw()?;
        Ok(())
    }
}
