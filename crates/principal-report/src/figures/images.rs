//! Figures for image data (every sample an H×W image): the mean and the components as images,
//! reconstructions from a growing number of components, and images generated from a grid of
//! codes on the first two components.

use faer::linalg::matmul::matmul;
use faer::{Accum, Mat, Par};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;

use crate::data::ReportData;
use crate::data::check_data;
use crate::error::{ReportError, Result};
use crate::figures::figure::{
    ColourScale, Draw, DrawResult, Figure, FigureKind, ImagePanel, Plotted, Target, centred_text,
    draw_image, encode_png, render,
};
use crate::input::{ImageShape, ModelView};
use crate::progress::Progress;
use crate::progress::Ticker;
use crate::style::{self, label_font, percent, shorten, significant, tick, tick_font, title_font};

/// Numbers of components of the reconstructions figure, before capping at the model's M.
const RECONSTRUCTION_COUNTS: [usize; 4] = [1, 10, 100, 500];

/// The numbers of components the reconstructions figure uses for a model of `m` components:
/// 1, 10, 100 and 500, each capped at `m`, repeats dropped.
///
/// ```
/// assert_eq!(principal_report::reconstruction_counts(784), [1, 10, 100, 500]);
/// assert_eq!(principal_report::reconstruction_counts(50), [1, 10, 50]);
/// ```
pub fn reconstruction_counts(m: usize) -> Vec<usize> {
    let mut counts: Vec<usize> = RECONSTRUCTION_COUNTS.iter().map(|&k| k.min(m)).collect();
    counts.dedup();
    counts
}

/// Screen pixels per image pixel, so that an image is about `target` pixels on its long side.
fn zoom(shape: ImageShape, target: usize) -> i32 {
    let long = shape.height().max(shape.width());
    ((target as f64 / long as f64).round() as i32).max(1)
}

/// Smallest and largest value.
fn range_of<'a>(values: impl IntoIterator<Item = &'a f64>) -> (f64, f64) {
    values
        .into_iter()
        .fold((f64::MAX, f64::MIN), |(lo, hi), &v| (lo.min(v), hi.max(v)))
}

/// The mean image and the first `count` components as images (eigen-digits, eigenfaces).
///
/// The mean is grey (white at its lowest value, black at its highest); each component uses a
/// diverging map centred at 0 and scaled symmetrically to ±its own largest |value|.
/// [`Plotted::Images`] holds the panels: `"mean"`, then `"PC1"`, `"PC2"`, ….
pub fn mean_and_components(
    model: &ModelView<'_>,
    shape: ImageShape,
    count: usize,
    progress: &mut dyn Progress,
) -> Result<Figure> {
    model.validate()?;
    shape.check(model.n_features())?;
    let shown = count.min(model.n_components());
    let (low, high) = range_of(model.mean);
    let mut panels = vec![ImagePanel {
        label: "mean".into(),
        values: model.mean.to_vec(),
        scale: ColourScale::Grey { low, high },
    }];
    for m in 0..shown {
        let values: Vec<f64> = (0..model.n_features())
            .map(|j| model.components[(m, j)])
            .collect();
        let limit = values.iter().fold(0.0, |a: f64, v| a.max(v.abs()));
        panels.push(ImagePanel {
            label: format!("PC{}", m + 1),
            values,
            scale: ColourScale::Diverging { limit },
        });
    }
    let headings = panels
        .iter()
        .enumerate()
        .map(|(i, p)| match i {
            0 => "mean".to_owned(),
            _ => format!(
                "{} ({})",
                p.label,
                percent(model.explained_variance_ratio[i - 1])
            ),
        })
        .collect();
    let caption = format!(
        "Left: the mean image (white at its lowest value {}, black at its highest {}). Then the \
         first {shown} components as images{}: blue negative, white zero, red positive, each \
         scaled to ±its own largest |value|; in brackets the proportion of variance each \
         explains.",
        significant(low, 3),
        significant(high, 3),
        if model.scaling == crate::input::Scaling::Standardize {
            " (in standardized units)"
        } else {
            ""
        },
    );
    let layout = GridLayout {
        title: format!("Mean and first {shown} components"),
        shape,
        zoom: zoom(shape, 112),
        columns: (shown + 1).min(4),
        headings: Headings::PerPanel(headings),
        row_axis: None,
        row_labels: Vec::new(),
        footer: Footer::DivergingBar,
    };
    draw_grid(
        FigureKind::MeanAndComponents,
        layout,
        caption,
        panels,
        progress,
    )
}

/// Chosen samples (rows) reconstructed from 1, 10, 100 and 500 components (capped at the
/// model's M, see [`reconstruction_counts`]), the original in the first column:
/// `x̃ = (Σ_{m≤k} zₘ bₘ) σ + μ`.
///
/// Every panel shares one grey scale, white at the originals' lowest value and black at
/// their highest (reconstructions beyond it are clamped). [`Plotted::Images`] holds the panels
/// sample by sample: original first, then each k.
pub fn reconstructions(
    model: &ModelView<'_>,
    data: &ReportData,
    shape: ImageShape,
    progress: &mut dyn Progress,
) -> Result<Figure> {
    model.validate()?;
    check_data(model, data)?;
    shape.check(model.n_features())?;
    let samples = data.samples();
    if samples.is_empty() {
        return Err(ReportError::CannotDraw {
            figure: FigureKind::Reconstructions.file_stem(),
            reason: "no sample was chosen for reconstruction".into(),
        });
    }
    let counts = reconstruction_counts(model.n_components());
    let codes = Mat::from_fn(samples.len(), model.n_components(), |i, m| {
        samples[i].codes[m]
    });
    let reconstructed: Vec<Mat<f64>> = counts
        .iter()
        .map(|&k| reconstruct(model, codes.as_ref().subcols(0, k)))
        .collect();
    let (low, high) = range_of(samples.iter().flat_map(|s| &s.values));
    let scale = ColourScale::Grey { low, high };
    let mut panels = Vec::new();
    let mut row_labels = Vec::new();
    // Rows are named by their class when the classes differ (one sample of each), otherwise
    // by their row in the data.
    let mut classes: Vec<Option<usize>> = samples.iter().map(|s| s.class).collect();
    classes.sort_unstable();
    classes.dedup();
    let by_class = classes.len() == samples.len();
    for (i, sample) in samples.iter().enumerate() {
        let name = match (sample.class, data.labels()) {
            (Some(c), Some(labels)) if by_class => shorten(&labels.classes()[c], 14),
            _ => format!("row {}", sample.row),
        };
        panels.push(ImagePanel {
            label: format!("row {}: original", sample.row),
            values: sample.values.clone(),
            scale,
        });
        for (&k, x) in counts.iter().zip(&reconstructed) {
            panels.push(ImagePanel {
                label: format!("row {}: {k} components", sample.row),
                values: (0..model.n_features()).map(|j| x[(i, j)]).collect(),
                scale,
            });
        }
        row_labels.push(name);
    }
    let mut headings = vec!["original".to_owned()];
    headings.extend(counts.iter().map(|k| format!("k = {k}")));
    let caption = format!(
        "Each row: a sample of the data (first column, {}) and its reconstructions \
         x̃ = (B z) σ + μ from its first {} codes. One grey scale throughout: white at {}, \
         black at {} (the originals' range; reconstructions beyond it are clamped).",
        match (data.labels(), by_class) {
            (Some(_), true) => "one of each label, named by it",
            _ => "named by its row in the data, counted from 0",
        },
        counts
            .iter()
            .map(|k| k.to_string())
            .collect::<Vec<_>>()
            .join(", "),
        significant(low, 3),
        significant(high, 3),
    );
    let layout = GridLayout {
        title: "Reconstructions from the first k components".into(),
        shape,
        zoom: zoom(shape, 84),
        columns: counts.len() + 1,
        headings: Headings::Columns {
            axis: None,
            names: headings,
        },
        row_axis: None,
        row_labels,
        footer: Footer::None,
    };
    draw_grid(
        FigureKind::Reconstructions,
        layout,
        caption,
        panels,
        progress,
    )
}

/// `(codes · B[..k, :]) σ + μ` for codes with k columns.
fn reconstruct(model: &ModelView<'_>, codes: faer::MatRef<'_, f64>) -> Mat<f64> {
    let k = codes.ncols();
    let mut x = Mat::zeros(codes.nrows(), model.n_features());
    matmul(
        x.as_mut(),
        Accum::Replace,
        codes,
        model.components.subrows(0, k),
        1.0,
        Par::Seq,
    );
    for j in 0..model.n_features() {
        let s = model.scale.map_or(1.0, |s| s[j]);
        for i in 0..x.nrows() {
            x[(i, j)] = x[(i, j)] * s + model.mean[j];
        }
    }
    x
}

/// The grid of codes of the latent-grid figure.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LatentGridOptions {
    /// Values per axis (at least 2; odd puts 0 in the middle).
    pub steps: usize,
    /// The grid reaches ±`extent` standard deviations √λ₁, √λ₂.
    pub extent: f64,
}

impl Default for LatentGridOptions {
    /// 9 × 9 images, z from −2 to 2 standard deviations in steps of 0.5.
    fn default() -> Self {
        LatentGridOptions {
            steps: 9,
            extent: 2.0,
        }
    }
}

/// Images generated from a grid of codes on the first two components, `x̃ = (B z) σ + μ`,
/// with z₁ (across) and z₂ (up) from −extent to +extent standard deviations √λ₁, √λ₂ and every
/// other code 0.
///
/// One grey scale for the whole grid (white at the lowest generated value, black at the
/// highest). [`Plotted::Images`] holds the panels row by row from the top (z₂ largest), each
/// row left to right (z₁ increasing).
pub fn latent_grid(
    model: &ModelView<'_>,
    shape: ImageShape,
    options: &LatentGridOptions,
    progress: &mut dyn Progress,
) -> Result<Figure> {
    model.validate()?;
    shape.check(model.n_features())?;
    options.validate()?;
    if model.n_components() < 2 {
        return Err(ReportError::CannotDraw {
            figure: FigureKind::LatentGrid.file_stem(),
            reason: "a latent grid needs 2 components; the model has 1".into(),
        });
    }
    let steps = options.steps;
    let t = |i: usize| -options.extent + 2.0 * options.extent * i as f64 / (steps - 1) as f64;
    let sd = [
        model.explained_variance[0].max(0.0).sqrt(),
        model.explained_variance[1].max(0.0).sqrt(),
    ];
    // Row r from the top has z₂ = t(steps − 1 − r); column c has z₁ = t(c).
    let codes = Mat::from_fn(steps * steps, 2, |g, axis| {
        let (r, c) = (g / steps, g % steps);
        match axis {
            0 => t(c) * sd[0],
            _ => t(steps - 1 - r) * sd[1],
        }
    });
    let images = reconstruct(model, codes.as_ref());
    let d = model.n_features();
    // White at the mean image's lowest value (the background of pixel data), black at the
    // highest value generated; generated values below the background are clamped to white.
    let (low, _) = range_of(model.mean);
    let (generated_low, high) = range_of(images.col_iter().flat_map(|c| c.iter()));
    let scale = ColourScale::Grey { low, high };
    let panels: Vec<ImagePanel> = (0..steps * steps)
        .map(|g| ImagePanel {
            label: format!(
                "z1 = {}·√λ1, z2 = {}·√λ2",
                tick(t(g % steps)),
                tick(t(steps - 1 - g / steps))
            ),
            values: (0..d).map(|j| images[(g, j)]).collect(),
            scale,
        })
        .collect();
    let caption = format!(
        "New images x̃ = (B z) σ + μ from a {steps}×{steps} grid of codes: z₁ across and z₂ up, \
         each from −{0} to +{0} standard deviations (√λ₁ = {1}, √λ₂ = {2}), every other code 0. \
         One grey scale: white at {3} (the mean image's lowest value; generated values reach \
         {5} and lower ones are drawn white), black at {4} (the highest generated value).",
        tick(options.extent),
        significant(sd[0], 4),
        significant(sd[1], 4),
        significant(low, 3),
        significant(high, 3),
        significant(generated_low, 3),
    );
    let layout = GridLayout {
        title: "Images generated from a grid of codes on components 1 and 2".into(),
        shape,
        zoom: zoom(shape, 84),
        columns: steps,
        headings: Headings::Columns {
            axis: Some("z₁ / √λ₁".into()),
            names: (0..steps).map(|c| tick(t(c))).collect(),
        },
        row_axis: Some("z₂ / √λ₂".into()),
        row_labels: (0..steps).map(|r| tick(t(steps - 1 - r))).collect(),
        footer: Footer::None,
    };
    draw_grid(FigureKind::LatentGrid, layout, caption, panels, progress)
}

impl LatentGridOptions {
    pub(crate) fn validate(&self) -> Result<()> {
        if self.steps < 2 {
            return Err(ReportError::InvalidOption {
                name: "latent_grid.steps",
                value: self.steps.to_string(),
                reason: "a grid needs at least 2 values per axis",
            });
        }
        if !(self.extent.is_finite() && self.extent > 0.0) {
            return Err(ReportError::InvalidOption {
                name: "latent_grid.extent",
                value: self.extent.to_string(),
                reason: "the extent must be a positive number of standard deviations",
            });
        }
        Ok(())
    }
}

/// Text above the images.
enum Headings {
    /// One heading above each panel.
    PerPanel(Vec<String>),
    /// One heading per column above the first row, optionally under an axis name.
    Columns {
        axis: Option<String>,
        names: Vec<String>,
    },
}

/// What goes under the images.
enum Footer {
    None,
    /// A diverging colour bar from −max|v| to +max|v|.
    DivergingBar,
}

/// Where the images of a grid go.
struct GridLayout {
    title: String,
    shape: ImageShape,
    zoom: i32,
    columns: usize,
    headings: Headings,
    /// The name of what the row labels count, above them.
    row_axis: Option<String>,
    row_labels: Vec<String>,
    footer: Footer,
}

const GAP: i32 = 12;
const TITLE_HEIGHT: i32 = 60;
const HEADING_HEIGHT: i32 = 30;

impl GridLayout {
    fn image_size(&self) -> (i32, i32) {
        (
            self.shape.width() as i32 * self.zoom,
            self.shape.height() as i32 * self.zoom,
        )
    }

    /// Room for the row labels: about 11 px a character of the 18 px tick font (DejaVu Sans
    /// averages 0.55–0.6 em), and the 12 px gap before the images.
    fn left(&self) -> i32 {
        let longest = self
            .row_labels
            .iter()
            .chain(&self.row_axis)
            .map(|l| l.chars().count())
            .max();
        match longest {
            None => 20,
            Some(chars) => (11 * chars as i32 + 30).max(80),
        }
    }

    /// Height of the column headings' band (0 when headings are per panel).
    fn top(&self) -> i32 {
        TITLE_HEIGHT
            + match &self.headings {
                Headings::PerPanel(_) => 0,
                Headings::Columns { axis: None, .. } => HEADING_HEIGHT,
                Headings::Columns { axis: Some(_), .. } => 2 * HEADING_HEIGHT,
            }
    }

    fn cell(&self) -> (i32, i32) {
        let (w, h) = self.image_size();
        let heading = match self.headings {
            Headings::PerPanel(_) => HEADING_HEIGHT,
            Headings::Columns { .. } => 0,
        };
        // Wide enough for a per-panel heading such as "PC10 (1.23%)".
        let min_width = match self.headings {
            Headings::PerPanel(_) => 150,
            Headings::Columns { .. } => 0,
        };
        ((w + GAP).max(min_width), h + heading + GAP)
    }

    fn size(&self, panels: usize) -> (u32, u32) {
        let rows = panels.div_ceil(self.columns) as i32;
        let (cw, ch) = self.cell();
        let footer = match self.footer {
            Footer::None => 10,
            Footer::DivergingBar => 80,
        };
        let width = (self.left() + self.columns as i32 * cw + 20).max(640);
        let height = self.top() + rows * ch + footer;
        (width as u32, height as u32)
    }

    /// Top-left corner of panel `index`'s image.
    fn origin(&self, index: usize) -> (i32, i32) {
        let (row, column) = ((index / self.columns) as i32, (index % self.columns) as i32);
        let (cw, ch) = self.cell();
        let heading = match self.headings {
            Headings::PerPanel(_) => HEADING_HEIGHT,
            Headings::Columns { .. } => 0,
        };
        let (w, _) = self.image_size();
        (
            self.left() + column * cw + (cw - w) / 2,
            self.top() + row * ch + heading,
        )
    }
}

fn draw_grid(
    kind: FigureKind,
    layout: GridLayout,
    caption: String,
    panels: Vec<ImagePanel>,
    progress: &mut dyn Progress,
) -> Result<Figure> {
    let size = layout.size(panels.len());
    let mut drawing = GridDrawing {
        layout: &layout,
        panels: &panels,
        progress,
    };
    let figure = render(
        kind,
        size,
        caption,
        Plotted::Images(Vec::new()),
        &mut drawing,
    )?;
    Ok(Figure {
        plotted: Plotted::Images(panels),
        ..figure
    })
}

struct GridDrawing<'a, 'p> {
    layout: &'a GridLayout,
    panels: &'a [ImagePanel],
    progress: &'p mut dyn Progress,
}

impl ImagePanel {
    /// The colour of pixel `p`.
    fn colour(&self, p: usize) -> RGBColor {
        match self.scale {
            ColourScale::Diverging { limit } => style::diverging(self.values[p], limit),
            ColourScale::Grey { low, high } => style::grey(self.values[p], low, high),
        }
    }
}

impl Draw for GridDrawing<'_, '_> {
    fn svg_overlay(&self) -> Result<String> {
        let layout = self.layout;
        let (height, width) = (layout.shape.height(), layout.shape.width());
        let (w, h) = layout.image_size();
        let mut overlay = String::new();
        for (index, panel) in self.panels.iter().enumerate() {
            let pixels: Vec<u8> = (0..height * width)
                .flat_map(|p| {
                    let c = panel.colour(p);
                    [c.0, c.1, c.2]
                })
                .collect();
            let png = encode_png(&pixels, width as u32, height as u32).map_err(|message| {
                ReportError::Draw {
                    figure: "image grid",
                    message,
                }
            })?;
            let (x, y) = layout.origin(index);
            overlay += &format!(
                "<image x=\"{x}\" y=\"{y}\" width=\"{w}\" height=\"{h}\" \
                 preserveAspectRatio=\"none\" style=\"image-rendering:pixelated\" \
                 href=\"data:image/png;base64,{}\"/>\n",
                BASE64.encode(png)
            );
        }
        Ok(overlay)
    }

    fn draw<DB: DrawingBackend>(
        &mut self,
        root: &DrawingArea<DB, Shift>,
        target: Target,
    ) -> DrawResult<DB> {
        let layout = self.layout;
        let (width, height) = root.dim_in_pixel();
        let (width, height) = (width as i32, height as i32);
        centred_text(root, &layout.title, (width / 2, 14), &title_font())?;
        let (cw, _) = layout.cell();
        let (w, h) = layout.image_size();
        match &layout.headings {
            Headings::PerPanel(_) => {}
            Headings::Columns { axis, names } => {
                let mut y = TITLE_HEIGHT;
                if let Some(axis) = axis {
                    let span = layout.columns as i32 * cw;
                    centred_text(root, axis, (layout.left() + span / 2, y), &label_font())?;
                    y += HEADING_HEIGHT;
                }
                for (c, name) in names.iter().enumerate() {
                    let x = layout.left() + c as i32 * cw + cw / 2;
                    centred_text(root, name, (x, y + 4), &tick_font())?;
                }
            }
        }
        let step = match target {
            Target::Png => "images (PNG)",
            Target::Svg => "images (SVG)",
        };
        let mut ticker = Ticker::new(&mut *self.progress, step, self.panels.len() as u64);
        let shape = (layout.shape.height(), layout.shape.width());
        for (index, panel) in self.panels.iter().enumerate() {
            let (x, y) = layout.origin(index);
            if let Headings::PerPanel(headings) = &layout.headings {
                centred_text(
                    root,
                    &headings[index],
                    (x + w / 2, y - HEADING_HEIGHT + 4),
                    &tick_font(),
                )?;
            }
            // The SVG holds each image as a small PNG (see `svg_overlay`): thousands of pixel
            // rectangles would make it megabytes.
            if target == Target::Png {
                draw_image(root, (x, y), shape, layout.zoom, |p| panel.colour(p))?;
            }
            root.draw(&Rectangle::new(
                [(x - 1, y - 1), (x + w, y + h)],
                RGBColor(190, 190, 190).stroke_width(1),
            ))?;
            ticker.tick();
        }
        drop(ticker);
        let row_label = tick_font().pos(Pos::new(HPos::Right, VPos::Center));
        for (r, label) in layout.row_labels.iter().enumerate() {
            let (_, y) = layout.origin(r * layout.columns);
            root.draw(&Text::new(
                label.clone(),
                (layout.left() - 12, y + h / 2),
                row_label.clone(),
            ))?;
        }
        if let Some(axis) = &layout.row_axis {
            let font = label_font().pos(Pos::new(HPos::Right, VPos::Top));
            root.draw(&Text::new(
                axis.clone(),
                (layout.left() - 12, TITLE_HEIGHT),
                font,
            ))?;
        }
        match &layout.footer {
            Footer::None => {}
            Footer::DivergingBar => {
                let (bar_width, bar_height) = (360, 18);
                let left = (width - bar_width) / 2;
                let top = height - 66;
                for i in 0..bar_width {
                    let v = -1.0 + 2.0 * (f64::from(i) + 0.5) / f64::from(bar_width);
                    root.draw(&Rectangle::new(
                        [(left + i, top), (left + i + 1, top + bar_height)],
                        style::diverging(v, 1.0).filled(),
                    ))?;
                }
                root.draw(&Rectangle::new(
                    [(left - 1, top - 1), (left + bar_width, top + bar_height)],
                    RGBColor(120, 120, 120).stroke_width(1),
                ))?;
                let font = tick_font();
                let y = top + bar_height + 6;
                centred_text(root, "−max |value|", (left, y), &font)?;
                centred_text(root, "0", (left + bar_width / 2, y), &font)?;
                centred_text(root, "+max |value|", (left + bar_width, y), &font)?;
                let note = tick_font().pos(Pos::new(HPos::Right, VPos::Center));
                root.draw(&Text::new(
                    "components:".to_owned(),
                    (left - 14, top + bar_height / 2),
                    note,
                ))?;
            }
        }
        Ok(())
    }
}
