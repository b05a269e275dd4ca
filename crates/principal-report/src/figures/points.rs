//! Scatter figures of the codes: the 2-D map on components 1–2 and the pairs grid of the first
//! four components.
//!
//! Large data sets: the PNG draws every sample with markers whose size and opacity shrink as
//! N grows (70,000 points stay readable as densities); the SVG, whose size grows by an element
//! per point, draws a stratified random subsample of at most [`PointOptions::svg_points`]
//! points, each class in proportion to its size, and says so in the caption. Points are drawn
//! in a seeded random order so that no class is always on top.

use std::ops::Range;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

use crate::data::ReportData;
use crate::data::check_data;
use crate::error::{ReportError, Result};
use crate::figures::figure::{
    ClassCount, Draw, DrawResult, Figure, FigureKind, Plotted, PointCounts, Target, centred_text,
    render,
};
use crate::input::ModelView;
use crate::progress::Progress;
use crate::progress::Ticker;
use crate::style::{self, label_font, percent, shorten, small_font, tick, tick_font, title_font};

/// How scatter figures treat many points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PointOptions {
    /// Points drawn in an SVG scatter at most: beyond, a stratified random subsample of this
    /// size (the PNG always draws every sample). The pairs grid, with up to twelve scatter
    /// panels, draws a quarter of this many in each.
    pub svg_points: usize,
    /// Seed of the drawing order and of the SVG subsample: the same seed, the same files.
    pub seed: u64,
}

impl Default for PointOptions {
    /// 5,000 points in SVG (a file of about 0.5 MB), seed 0.
    fn default() -> Self {
        PointOptions {
            svg_points: 5000,
            seed: 0,
        }
    }
}

/// Classes beyond this many share one colour, "other" (the most frequent keep theirs).
const COLOURED_CLASSES: usize = style::PALETTE.len();

/// What both scatter figures share: drawing order, SVG subsample, colours, marker sizes.
struct PointPlan {
    /// Every row, in drawing order (a seeded permutation).
    order: Vec<usize>,
    /// The rows the SVG draws, in drawing order.
    svg: Vec<usize>,
    /// Per class: its colour (`None`: "other").
    class_colour: Vec<Option<RGBColor>>,
    /// Per class: samples, and points in the SVG.
    per_class: Vec<(usize, usize)>,
}

impl PointPlan {
    /// The plan for `data`, with at most `svg_points` points in the SVG.
    fn new(data: &ReportData, svg_points: usize, seed: u64) -> Self {
        let n = data.n_rows();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut order: Vec<usize> = (0..n).collect();
        order.shuffle(&mut rng);
        let class_of = |row: usize| data.labels().map_or(0, |l| l.class_of(row));
        let counts = data.labels().map_or_else(|| vec![n], |l| l.counts());
        let quotas = stratified_quotas(&counts, svg_points.min(n));
        // The first `quota` rows of each class in a uniformly random order are a uniformly
        // random subsample of that class.
        let mut taken = vec![0; counts.len()];
        let svg = order
            .iter()
            .copied()
            .filter(|&row| {
                let c = class_of(row);
                let keep = taken[c] < quotas[c];
                taken[c] += usize::from(keep);
                keep
            })
            .collect();
        let class_colour = class_colours(&counts);
        PointPlan {
            order,
            svg,
            class_colour,
            per_class: counts.into_iter().zip(quotas).collect(),
        }
    }

    fn rows(&self, target: Target) -> &[usize] {
        match target {
            Target::Png => &self.order,
            Target::Svg => &self.svg,
        }
    }

    fn colour(&self, data: &ReportData, row: usize) -> RGBColor {
        match data.labels() {
            Some(labels) => self.class_colour[labels.class_of(row)].unwrap_or(style::OTHER),
            None => style::PALETTE[0],
        }
    }

    fn counts(&self, data: &ReportData, components: usize) -> PointCounts {
        PointCounts {
            components,
            samples: data.n_rows(),
            png: self.order.len(),
            svg: self.svg.len(),
            per_class: match data.labels() {
                Some(labels) => labels
                    .classes()
                    .iter()
                    .zip(&self.per_class)
                    .map(|(name, &(samples, svg))| ClassCount {
                        class: name.clone(),
                        samples,
                        svg,
                    })
                    .collect(),
                None => Vec::new(),
            },
        }
    }

    /// Legend entries: (name, colour), the uncoloured classes gathered as "other".
    fn legend(&self, data: &ReportData) -> Vec<(String, RGBColor)> {
        let Some(labels) = data.labels() else {
            return Vec::new();
        };
        let mut entries: Vec<(String, RGBColor)> = labels
            .classes()
            .iter()
            .zip(&self.class_colour)
            .filter_map(|(name, colour)| colour.map(|c| (shorten(name, 16), c)))
            .collect();
        let others = self.class_colour.iter().filter(|c| c.is_none()).count();
        if others > 0 {
            entries.push((format!("other ({others} classes)"), style::OTHER));
        }
        entries
    }

    /// A sentence on what the PNG and the SVG drew.
    /// `points` names what the SVG's count counts; markers are at most `max_radius` pixels.
    fn sentence(
        &self,
        options: &PointOptions,
        data: &ReportData,
        points: &str,
        max_radius: u32,
    ) -> String {
        let n = data.n_rows();
        let (radius, opacity) = marker(n);
        let radius = radius.min(max_radius);
        let mut text = format!(
            "The PNG draws all {n} samples (markers of radius {radius} px at opacity {opacity}); "
        );
        if self.svg.len() < n {
            text += &format!(
                "the SVG, to stay small, a random subsample of {} {points} (seed {}){}.",
                self.svg.len(),
                options.seed,
                if data.labels().is_some() {
                    ", stratified so that each label keeps its share"
                } else {
                    ""
                }
            );
        } else {
            text += "the SVG draws them all too.";
        }
        let others = self.class_colour.iter().filter(|c| c.is_none()).count();
        if others > 0 {
            text += &format!(
                " Only the {} most frequent of the {} labels have a colour of their own; the \
                 other {others} are drawn in black.",
                self.class_colour.len() - others,
                self.class_colour.len()
            );
        }
        text
    }
}

/// Splits `total` among classes of `counts` in proportion (largest remainders; ties to the
/// earlier class), never more than a class has.
fn stratified_quotas(counts: &[usize], total: usize) -> Vec<usize> {
    let n: usize = counts.iter().sum();
    if n == 0 {
        return vec![0; counts.len()];
    }
    let exact: Vec<f64> = counts
        .iter()
        .map(|&c| c as f64 * total as f64 / n as f64)
        .collect();
    let mut quotas: Vec<usize> = exact.iter().map(|q| q.floor() as usize).collect();
    let mut missing = total.saturating_sub(quotas.iter().sum());
    let mut by_remainder: Vec<usize> = (0..counts.len()).collect();
    by_remainder.sort_by(|&a, &b| {
        let (ra, rb) = (exact[a] - exact[a].floor(), exact[b] - exact[b].floor());
        rb.total_cmp(&ra).then(a.cmp(&b))
    });
    for &c in by_remainder.iter().cycle().take(2 * counts.len()) {
        if missing == 0 {
            break;
        }
        if quotas[c] < counts[c] {
            quotas[c] += 1;
            missing -= 1;
        }
    }
    quotas
}

/// Colours per class: the palette in class order when it suffices, else the most frequent
/// classes (one slot left for "other") keep a colour.
fn class_colours(counts: &[usize]) -> Vec<Option<RGBColor>> {
    if counts.len() <= COLOURED_CLASSES {
        return (0..counts.len()).map(|c| Some(style::PALETTE[c])).collect();
    }
    let mut by_size: Vec<usize> = (0..counts.len()).collect();
    by_size.sort_by(|&a, &b| counts[b].cmp(&counts[a]).then(a.cmp(&b)));
    let mut coloured: Vec<usize> = by_size[..COLOURED_CLASSES - 1].to_vec();
    coloured.sort_unstable();
    let mut colours = vec![None; counts.len()];
    for (slot, &c) in coloured.iter().enumerate() {
        colours[c] = Some(style::PALETTE[slot]);
    }
    colours
}

/// Largest marker radius of the map (pixels).
const MAP_RADIUS: u32 = 4;
/// Largest marker radius of the pairs grid, whose panels are smaller.
const PAIRS_RADIUS: u32 = 2;

/// Marker radius (pixels) and opacity for `n` points: large and solid for a few, small and
/// faint for many, so that dense regions read as densities instead of a solid blot.
fn marker(n: usize) -> (u32, f64) {
    match n {
        0..=2_000 => (4, 0.8),
        2_001..=20_000 => (2, 0.5),
        _ => (1, 0.3),
    }
}

/// The range of component `k`'s codes, with 5% room on each side.
fn code_range(data: &ReportData, k: usize) -> Range<f64> {
    let (mut low, mut high) = (f64::MAX, f64::MIN);
    for row in 0..data.n_rows() {
        let v = data.code(row, k);
        low = low.min(v);
        high = high.max(v);
    }
    let pad = if high > low {
        0.05 * (high - low)
    } else {
        low.abs().max(1.0) * 0.05
    };
    low - pad..high + pad
}

/// "PC1 (92.46%)".
fn axis_name(model: &ModelView<'_>, k: usize) -> String {
    format!(
        "PC{} ({} of variance)",
        k + 1,
        percent(model.explained_variance_ratio[k])
    )
}

/// Errs unless the model has two components to plot against each other.
fn needs_two_components(model: &ModelView<'_>) -> Result<()> {
    if model.n_components() < 2 {
        return Err(ReportError::CannotDraw {
            figure: "scatter",
            reason: "a scatter of components needs 2 components; the model has 1".into(),
        });
    }
    Ok(())
}

/// The 2-D map: every sample's codes on components 1 and 2, coloured by label with a legend.
///
/// [`Plotted::Points`] says how many points each format drew.
pub fn projection_map(
    model: &ModelView<'_>,
    data: &ReportData,
    options: &PointOptions,
    progress: &mut dyn Progress,
) -> Result<Figure> {
    model.validate()?;
    check_data(model, data)?;
    needs_two_components(model)?;
    let plan = PointPlan::new(data, options.svg_points, options.seed);
    let caption = format!(
        "Each sample's codes on components 1 (x) and 2 (y){}. {}",
        if data.labels().is_some() {
            ", coloured by label"
        } else {
            ""
        },
        plan.sentence(options, data, "points", MAP_RADIUS)
    );
    let plotted = Plotted::Points(plan.counts(data, 2));
    let legend = plan.legend(data);
    let legend_width = legend_width(&legend);
    let mut drawing = MapDrawing {
        data,
        plan: &plan,
        legend,
        legend_width,
        axes: [axis_name(model, 0), axis_name(model, 1)],
        progress,
    };
    render(
        FigureKind::ProjectionMap,
        (900 + legend_width, 800),
        caption,
        plotted,
        &mut drawing,
    )
}

/// Pixels for a legend of these entries at the right of a figure (0 without entries).
fn legend_width(legend: &[(String, RGBColor)]) -> u32 {
    if legend.is_empty() {
        return 0;
    }
    let longest = legend
        .iter()
        .map(|e| e.0.chars().count())
        .max()
        .unwrap_or(0);
    (60 + 11 * longest as u32).clamp(120, 320)
}

/// Draws the legend's entries in a column from the top of `area`.
fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    title: &str,
    legend: &[(String, RGBColor)],
    top: i32,
) -> DrawResult<DB> {
    let left = tick_font().pos(Pos::new(HPos::Left, VPos::Center));
    area.draw(&Text::new(
        title.to_owned(),
        (10, top),
        label_font().pos(Pos::new(HPos::Left, VPos::Center)),
    ))?;
    let spacing = if legend.len() > 20 { 22 } else { 28 };
    for (i, (name, colour)) in legend.iter().enumerate() {
        let y = top + 36 + spacing * i as i32;
        area.draw(&Circle::new((20, y), 7, colour.filled()))?;
        area.draw(&Text::new(name.clone(), (36, y), left.clone()))?;
    }
    Ok(())
}

struct MapDrawing<'a, 'p> {
    data: &'a ReportData,
    plan: &'a PointPlan,
    legend: Vec<(String, RGBColor)>,
    legend_width: u32,
    axes: [String; 2],
    progress: &'p mut dyn Progress,
}

impl Draw for MapDrawing<'_, '_> {
    fn draw<DB: DrawingBackend>(
        &mut self,
        root: &DrawingArea<DB, Shift>,
        target: Target,
    ) -> DrawResult<DB> {
        let (width, _) = root.dim_in_pixel();
        let (plot, legend_area) = root.split_horizontally(width - self.legend_width);
        let mut chart = ChartBuilder::on(&plot)
            .caption("Projection on components 1 and 2", title_font())
            .margin(20)
            .x_label_area_size(70)
            .y_label_area_size(90)
            .build_cartesian_2d(code_range(self.data, 0), code_range(self.data, 1))?;
        chart
            .configure_mesh()
            .max_light_lines(0)
            .bold_line_style(style::GRID)
            .x_label_formatter(&|v| tick(*v))
            .y_label_formatter(&|v| tick(*v))
            .x_desc(self.axes[0].as_str())
            .y_desc(self.axes[1].as_str())
            .axis_desc_style(label_font())
            .label_style(tick_font())
            .draw()?;
        let rows = self.plan.rows(target);
        let (radius, opacity) = marker(rows.len());
        let radius = radius.min(MAP_RADIUS);
        let step = match target {
            Target::Png => "projection map (PNG)",
            Target::Svg => "projection map (SVG)",
        };
        let mut ticker = Ticker::new(&mut *self.progress, step, rows.len() as u64);
        let (data, plan) = (self.data, self.plan);
        chart.draw_series(rows.iter().map(|&row| {
            ticker.tick();
            let colour = plan.colour(data, row);
            Circle::new(
                (data.code(row, 0), data.code(row, 1)),
                radius,
                colour.mix(opacity).filled(),
            )
        }))?;
        drop(ticker);
        if !self.legend.is_empty() {
            draw_legend(&legend_area, "label", &self.legend, 90)?;
        }
        Ok(())
    }
}

/// The pairs grid: codes on each pair of the first `min(M, 4)` components (row i, column j:
/// component j across, component i up), and on the diagonal each component's histogram (one
/// outline per label, or filled bars without labels).
///
/// [`Plotted::Points`] says how many points each scatter panel drew.
pub fn pairs_grid(
    model: &ModelView<'_>,
    data: &ReportData,
    options: &PointOptions,
    progress: &mut dyn Progress,
) -> Result<Figure> {
    model.validate()?;
    check_data(model, data)?;
    needs_two_components(model)?;
    let k = data.n_leading();
    let plan = PointPlan::new(data, (options.svg_points / 4).max(1), options.seed);
    let caption = format!(
        "Codes on each pair of the first {k} components: the panel in row i, column j has \
         component j across and component i up; the diagonal shows each component's histogram \
         (30 bins{}). {}",
        if data.labels().is_some() {
            ", one outline per label"
        } else {
            ""
        },
        plan.sentence(options, data, "points in each panel", PAIRS_RADIUS)
    );
    let plotted = Plotted::Points(plan.counts(data, k));
    let legend = plan.legend(data);
    let legend_width = legend_width(&legend);
    let panel = 300;
    let size = (k as u32 * panel + 40 + legend_width, k as u32 * panel + 90);
    let ranges = (0..k).map(|c| code_range(data, c)).collect();
    let names = (0..k)
        .map(|c| {
            format!(
                "PC{} ({})",
                c + 1,
                percent(model.explained_variance_ratio[c])
            )
        })
        .collect();
    let mut drawing = PairsDrawing {
        data,
        plan: &plan,
        legend,
        legend_width,
        ranges,
        names,
        progress,
    };
    render(FigureKind::PairsGrid, size, caption, plotted, &mut drawing)
}

struct PairsDrawing<'a, 'p> {
    data: &'a ReportData,
    plan: &'a PointPlan,
    legend: Vec<(String, RGBColor)>,
    legend_width: u32,
    ranges: Vec<Range<f64>>,
    names: Vec<String>,
    progress: &'p mut dyn Progress,
}

/// Bins of the diagonal histograms.
const BINS: usize = 30;

/// Per class (or one for all), the counts in each of [`BINS`] bins over `range` of component
/// `c`.
fn histograms(data: &ReportData, c: usize, range: &Range<f64>) -> Vec<Vec<u64>> {
    let classes = data.labels().map_or(1, |l| l.classes().len());
    let width = (range.end - range.start) / BINS as f64;
    let mut counts = vec![vec![0u64; BINS]; classes];
    for row in 0..data.n_rows() {
        let bin = (((data.code(row, c) - range.start) / width) as usize).min(BINS - 1);
        let class = data.labels().map_or(0, |l| l.class_of(row));
        counts[class][bin] += 1;
    }
    counts
}

/// The diagonal panel of component `c`: its histogram, named in the corner.
fn draw_histogram<DB: DrawingBackend>(
    cell: &DrawingArea<DB, Shift>,
    data: &ReportData,
    plan: &PointPlan,
    (c, range, name): (usize, &Range<f64>, &str),
    bottom: bool,
) -> DrawResult<DB> {
    let counts = histograms(data, c, range);
    let top = counts.iter().flatten().copied().max().unwrap_or(1).max(1) as f64;
    let width = (range.end - range.start) / BINS as f64;
    let mut chart = ChartBuilder::on(cell)
        .margin(6)
        .x_label_area_size(34)
        .y_label_area_size(54)
        .build_cartesian_2d(range.clone(), 0.0..top * 1.25)?;
    chart
        .configure_mesh()
        .disable_mesh()
        .x_labels(if bottom { 4 } else { 0 })
        .y_labels(0)
        .x_label_formatter(&|v| tick(*v))
        .label_style(small_font())
        .draw()?;
    let edge = |b: usize| range.start + b as f64 * width;
    if data.labels().is_some() {
        for (class, bins) in counts.iter().enumerate() {
            let colour = plan.class_colour[class].unwrap_or(style::OTHER);
            // A step outline: up and across each bin.
            let mut path = vec![(edge(0), 0.0)];
            for (b, &n) in bins.iter().enumerate() {
                path.push((edge(b), n as f64));
                path.push((edge(b + 1), n as f64));
            }
            path.push((edge(BINS), 0.0));
            chart.draw_series(LineSeries::new(path, colour.stroke_width(2)))?;
        }
    } else {
        chart.draw_series(counts[0].iter().enumerate().map(|(b, &n)| {
            Rectangle::new(
                [(edge(b), 0.0), (edge(b + 1), n as f64)],
                style::PALETTE[0].mix(0.7).filled(),
            )
        }))?;
    }
    // In the cell's pixels: right of the (empty) y label area, below the margin.
    cell.draw(&Text::new(
        name.to_owned(),
        (6 + 54 + 8, 6 + 6),
        tick_font().pos(Pos::new(HPos::Left, VPos::Top)),
    ))?;
    Ok(())
}

impl Draw for PairsDrawing<'_, '_> {
    fn draw<DB: DrawingBackend>(
        &mut self,
        root: &DrawingArea<DB, Shift>,
        target: Target,
    ) -> DrawResult<DB> {
        let k = self.ranges.len();
        let (width, _) = root.dim_in_pixel();
        centred_text(
            root,
            &format!("Pairs of the first {k} components"),
            (width as i32 / 2, 14),
            &title_font(),
        )?;
        let root = root.margin(60, 0, 0, 0);
        let (width, _) = root.dim_in_pixel();
        let (grid, legend_area) = root.split_horizontally(width - self.legend_width);
        let grid = grid.margin(0, 10, 10, 30);
        let cells = grid.split_evenly((k, k));
        let rows = self.plan.rows(target);
        let (radius, opacity) = marker(rows.len());
        let radius = radius.min(PAIRS_RADIUS);
        let step = match target {
            Target::Png => "pairs grid (PNG)",
            Target::Svg => "pairs grid (SVG)",
        };
        let mut ticker = Ticker::new(&mut *self.progress, step, (rows.len() * k * (k - 1)) as u64);
        for (index, cell) in cells.iter().enumerate() {
            let (i, j) = (index / k, index % k);
            let bottom = i == k - 1;
            if i == j {
                let panel = (j, &self.ranges[j], self.names[j].as_str());
                draw_histogram(cell, self.data, self.plan, panel, bottom)?;
                continue;
            }
            let mut chart = ChartBuilder::on(cell)
                .margin(6)
                .x_label_area_size(34)
                .y_label_area_size(54)
                .build_cartesian_2d(self.ranges[j].clone(), self.ranges[i].clone())?;
            chart
                .configure_mesh()
                .disable_mesh()
                .x_labels(if bottom { 4 } else { 0 })
                .y_labels(if j == 0 { 4 } else { 0 })
                .x_label_formatter(&|v| tick(*v))
                .y_label_formatter(&|v| tick(*v))
                .label_style(small_font())
                .draw()?;
            let (data, plan) = (self.data, self.plan);
            chart.draw_series(rows.iter().map(|&row| {
                ticker.tick();
                Circle::new(
                    (data.code(row, j), data.code(row, i)),
                    radius,
                    plan.colour(data, row).mix(opacity).filled(),
                )
            }))?;
        }
        drop(ticker);
        if !self.legend.is_empty() {
            draw_legend(&legend_area, "label", &self.legend, 40)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotas_are_proportional_and_add_up_to_the_total() {
        assert_eq!(stratified_quotas(&[50, 30, 20], 10), [5, 3, 2]);
        let quotas = stratified_quotas(&[7000, 6000, 57_000], 5000);
        assert_eq!(quotas.iter().sum::<usize>(), 5000);
        assert_eq!(quotas, [500, 429, 4071]);
        // Never more than a class has, even when the total asks for everything.
        assert_eq!(stratified_quotas(&[1, 2], 3), [1, 2]);
    }

    #[test]
    fn with_many_classes_the_most_frequent_keep_a_colour() {
        let mut counts = vec![1; 25];
        counts[24] = 100;
        let colours = class_colours(&counts);
        assert!(colours[24].is_some());
        assert_eq!(colours.iter().filter(|c| c.is_some()).count(), 19);
    }
}
