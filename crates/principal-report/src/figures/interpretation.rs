//! Figures of what the components mean, from FactoMineR's quantities (computed by the core's
//! `describe` and given here as plain tables, [`Interpretation`]): the correlation circle,
//! Gabriel's biplot, the variables' contributions to axes 1 and 2, and the individuals
//! coloured by a qualitative variable with its categories' barycentres.
//!
//! Each figure's numbers are a [`Plotted::Table`]: one row per drawn thing (its name, its
//! group, its coordinates as drawn), written beside the figure as CSV.

use std::path::Path;

use faer::MatRef;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::error::{ReportError, Result};
use crate::figures::figure::{
    Draw, DrawResult, Figure, FigureKind, Plotted, Table, TableRow, Target, render,
    write_atomically,
};
use crate::style::{self, GRID, label_font, significant, small_font, tick_font, title_font};

/// The most variables the figures of variables draw (more would be unreadable).
pub const MAX_VARIABLES: usize = 50;

const SQUARE: (u32, u32) = (900, 900);
const WIDE: (u32, u32) = (1100, 700);

/// A qualitative variable: each active row's category, and the categories' barycentres.
#[derive(Clone, Debug)]
pub struct Groups<'a> {
    /// The variable's (column's) name.
    pub name: &'a str,
    /// The categories' names (levels), in the order of `barycentres`' rows.
    pub levels: &'a [String],
    /// For each active row, the index of its level.
    pub of_row: &'a [usize],
    /// The categories' barycentres on the axes (levels × at least 2), from `describe`'s
    /// `quali_sup.coord`.
    pub barycentres: MatRef<'a, f64>,
}

/// What the interpretation figures draw: `describe`'s tables, first two axes used.
#[derive(Clone, Debug)]
pub struct Interpretation<'a> {
    /// Whether the model standardises (then a variable's coordinate is its correlation).
    pub standardized: bool,
    /// The eigenvalues λ of the axes (at least 2).
    pub eigenvalues: &'a [f64],
    /// Percent of the total variance of each axis.
    pub percent: &'a [f64],
    /// The active variables' names (D).
    pub variables: &'a [String],
    /// `var.coord`, D × at least 2: V√λ.
    pub var_coord: MatRef<'a, f64>,
    /// `var.cor`, D × at least 2: correlations with the axes.
    pub var_cor: MatRef<'a, f64>,
    /// `var.contrib`, D × at least 2, percent.
    pub var_contrib: MatRef<'a, f64>,
    /// Supplementary quantitative variables: names and `quanti_sup.cor`.
    pub supplementary: Option<(&'a [String], MatRef<'a, f64>)>,
    /// The active individuals' names (N).
    pub individuals: &'a [String],
    /// `ind.coord`, N × at least 2.
    pub ind_coord: MatRef<'a, f64>,
    /// A qualitative variable to colour the individuals by.
    pub groups: Option<Groups<'a>>,
}

impl Interpretation<'_> {
    /// Checks the shapes: two axes at least, one row per name, at most [`MAX_VARIABLES`].
    pub fn validate(&self) -> Result<()> {
        let bad = |reason: String| {
            Err(ReportError::CannotDraw {
                figure: "correlation-circle",
                reason,
            })
        };
        let d = self.variables.len();
        if self.eigenvalues.len() < 2 || self.percent.len() < 2 {
            return bad("the interpretation figures need two axes".into());
        }
        if d > MAX_VARIABLES {
            return bad(format!(
                "{d} variables are more than the {MAX_VARIABLES} the figures of variables draw"
            ));
        }
        for (name, m) in [
            ("var.coord", self.var_coord),
            ("var.cor", self.var_cor),
            ("var.contrib", self.var_contrib),
        ] {
            if m.nrows() != d || m.ncols() < 2 {
                return bad(format!(
                    "{name} is {}×{}, not {d} × at least 2",
                    m.nrows(),
                    m.ncols()
                ));
            }
        }
        if self.ind_coord.nrows() != self.individuals.len() || self.ind_coord.ncols() < 2 {
            return bad("ind.coord does not have one row per individual and two axes".into());
        }
        if let Some((names, cor)) = &self.supplementary
            && (cor.nrows() != names.len() || cor.ncols() < 2)
        {
            return bad("quanti_sup.cor does not have one row per name and two axes".into());
        }
        if let Some(g) = &self.groups
            && (g.of_row.len() != self.individuals.len()
                || g.barycentres.nrows() != g.levels.len()
                || g.barycentres.ncols() < 2
                || g.of_row.iter().any(|&k| k >= g.levels.len()))
        {
            return bad(format!("the groups of {:?} do not fit the data", g.name));
        }
        Ok(())
    }

    fn axis_label(&self, k: usize) -> String {
        format!("Dim {} ({:.2}%)", k + 1, self.percent[k])
    }
}

fn row(name: &str, group: &str, values: Vec<f64>) -> TableRow {
    TableRow {
        name: name.to_owned(),
        group: group.to_owned(),
        values,
    }
}

/// The correlation circle: each active variable an arrow to its correlations with axes 1 and
/// 2, inside the unit circle; supplementary quantitative variables dashed.
///
/// Table: `name, group (active | supplementary), dim1, dim2` (the correlations).
pub fn correlation_circle(it: &Interpretation<'_>) -> Result<Figure> {
    it.validate()?;
    let mut rows: Vec<TableRow> = (0..it.variables.len())
        .map(|j| {
            row(
                &it.variables[j],
                "active",
                vec![it.var_cor[(j, 0)], it.var_cor[(j, 1)]],
            )
        })
        .collect();
    if let Some((names, cor)) = &it.supplementary {
        rows.extend(
            (0..names.len())
                .map(|j| row(&names[j], "supplementary", vec![cor[(j, 0)], cor[(j, 1)]])),
        );
    }
    let table = Table {
        columns: vec!["dim1".into(), "dim2".into()],
        rows,
    };
    let caption = format!(
        "Each variable is an arrow to its correlations with axes 1 and 2 (the unit circle is a \
         correlation of 1); an arrow near the circle is well represented on this plane. \
         Supplementary variables (projected, not fitted) are dashed. Axes: {} and {}.",
        it.axis_label(0),
        it.axis_label(1)
    );
    let mut drawing = ArrowMap {
        title: "Correlation circle",
        x_label: it.axis_label(0),
        y_label: it.axis_label(1),
        table: table.clone(),
        circle: true,
        note: None,
    };
    render(
        FigureKind::CorrelationCircle,
        SQUARE,
        caption,
        Plotted::Table(table),
        &mut drawing,
    )
}

/// Gabriel's biplot, the covariance biplot (α = 0): individuals at `coord / √λ` (unit
/// variance along each axis), variables as arrows to `var.coord = V√λ`, so that the inner
/// product of an individual and a variable is the rank-2 approximation of its centred (and
/// scaled) value, an arrow's length approximates the variable's standard deviation and the
/// cosine between arrows their correlation.
///
/// Table: `name, group (individual | variable), dim1, dim2` as drawn.
pub fn biplot(it: &Interpretation<'_>) -> Result<Figure> {
    it.validate()?;
    let (s1, s2) = (it.eigenvalues[0].sqrt(), it.eigenvalues[1].sqrt());
    let unit = |v: f64, s: f64| if s > 0.0 { v / s } else { 0.0 };
    let mut rows: Vec<TableRow> = (0..it.individuals.len())
        .map(|i| {
            row(
                &it.individuals[i],
                "individual",
                vec![
                    unit(it.ind_coord[(i, 0)], s1),
                    unit(it.ind_coord[(i, 1)], s2),
                ],
            )
        })
        .collect();
    rows.extend((0..it.variables.len()).map(|j| {
        row(
            &it.variables[j],
            "variable",
            vec![it.var_coord[(j, 0)], it.var_coord[(j, 1)]],
        )
    }));
    let table = Table {
        columns: vec!["dim1".into(), "dim2".into()],
        rows,
    };
    let scaling =
        "covariance biplot (Gabriel, α = 0): individuals at coord/√λ, variables at √λ·loadings";
    let caption = format!(
        "Individuals (points) and variables (arrows) on one map, the {scaling}: the inner \
         product of an individual's point and a variable's arrow approximates its centred{} \
         value of that variable, an arrow's length its standard deviation. Axes: {} and {}.",
        if it.standardized {
            " and standardised"
        } else {
            ""
        },
        it.axis_label(0),
        it.axis_label(1)
    );
    let mut drawing = ArrowMap {
        title: "Biplot",
        x_label: it.axis_label(0),
        y_label: it.axis_label(1),
        table: table.clone(),
        circle: false,
        note: Some(scaling),
    };
    render(
        FigureKind::Biplot,
        SQUARE,
        caption,
        Plotted::Table(table),
        &mut drawing,
    )
}

/// The variables' contributions to axes 1 and 2 (percent), sorted by their contribution to
/// the plane, `(c₁ λ₁ + c₂ λ₂) / (λ₁ + λ₂)` (factoextra's `fviz_contrib(axes = 1:2)`), with
/// the uniform contribution 100/D a variable would have if all contributed alike.
///
/// Table: `name, group (variable | uniform), axis1, axis2, plane`, variables sorted.
pub fn contributions(it: &Interpretation<'_>) -> Result<Figure> {
    it.validate()?;
    let d = it.variables.len();
    let (l1, l2) = (it.eigenvalues[0], it.eigenvalues[1]);
    let plane = |j: usize| {
        let total = l1 + l2;
        if total > 0.0 {
            (it.var_contrib[(j, 0)] * l1 + it.var_contrib[(j, 1)] * l2) / total
        } else {
            0.0
        }
    };
    let mut order: Vec<usize> = (0..d).collect();
    order.sort_by(|&a, &b| plane(b).total_cmp(&plane(a)).then(a.cmp(&b)));
    let uniform = 100.0 / d as f64;
    let mut rows: Vec<TableRow> = order
        .iter()
        .map(|&j| {
            row(
                &it.variables[j],
                "variable",
                vec![it.var_contrib[(j, 0)], it.var_contrib[(j, 1)], plane(j)],
            )
        })
        .collect();
    rows.push(row("uniform", "uniform", vec![uniform, uniform, uniform]));
    let table = Table {
        columns: vec!["axis1".into(), "axis2".into(), "plane".into()],
        rows,
    };
    let caption = format!(
        "Each variable's contribution (percent of the axis's variance) to axis 1, to axis 2, \
         and to the plane of both (weighted by the eigenvalues), sorted by the last; the dashed \
         line is the uniform contribution 100/D = {}%: a variable above it contributes more \
         than an average one.",
        significant(uniform, 3)
    );
    let mut drawing = ContributionBars {
        table: table.clone(),
    };
    render(
        FigureKind::Contributions,
        WIDE,
        caption,
        Plotted::Table(table),
        &mut drawing,
    )
}

/// The individuals on axes 1 and 2 coloured by a qualitative variable's category, with each
/// category's barycentre (`quali_sup.coord`) as a large marker.
///
/// Table: `name, group (the category | barycentre), dim1, dim2`; barycentres are named
/// `column=level`.
pub fn individuals_by_group(it: &Interpretation<'_>) -> Result<Figure> {
    it.validate()?;
    let Some(g) = &it.groups else {
        return Err(ReportError::CannotDraw {
            figure: FigureKind::IndividualsByGroup.file_stem(),
            reason: "no qualitative variable was given".into(),
        });
    };
    let mut rows: Vec<TableRow> = (0..it.individuals.len())
        .map(|i| {
            row(
                &it.individuals[i],
                &g.levels[g.of_row[i]],
                vec![it.ind_coord[(i, 0)], it.ind_coord[(i, 1)]],
            )
        })
        .collect();
    rows.extend((0..g.levels.len()).map(|k| {
        row(
            &format!("{}={}", g.name, g.levels[k]),
            "barycentre",
            vec![g.barycentres[(k, 0)], g.barycentres[(k, 1)]],
        )
    }));
    let table = Table {
        columns: vec!["dim1".into(), "dim2".into()],
        rows,
    };
    let caption = format!(
        "The individuals on axes 1 and 2, coloured by {:?} ({} categories); each category's \
         barycentre (the weighted mean of its individuals' coordinates) is a large square. \
         Axes: {} and {}.",
        g.name,
        g.levels.len(),
        it.axis_label(0),
        it.axis_label(1)
    );
    let mut drawing = GroupMap {
        x_label: it.axis_label(0),
        y_label: it.axis_label(1),
        levels: g.levels.to_vec(),
        of_row: g.of_row.to_vec(),
        table: table.clone(),
        column: g.name.to_owned(),
    };
    render(
        FigureKind::IndividualsByGroup,
        SQUARE,
        caption,
        Plotted::Table(table),
        &mut drawing,
    )
}

/// Every interpretation figure `it` allows (the individuals by group only with groups).
pub fn interpretation_figures(it: &Interpretation<'_>) -> Result<Vec<Figure>> {
    let mut figures = vec![correlation_circle(it)?, biplot(it)?, contributions(it)?];
    if it.groups.is_some() {
        figures.push(individuals_by_group(it)?);
    }
    Ok(figures)
}

/// Draws the interpretation figures of `it` into `dir` (which must exist): for each,
/// `<stem>.png`, `<stem>.svg` and `<stem>.csv`, each written to a temporary file and renamed
/// into place. Returns the kinds written.
pub fn write_interpretation_figures(
    it: &Interpretation<'_>,
    dir: &Path,
) -> Result<Vec<FigureKind>> {
    let figures = interpretation_figures(it)?;
    let mut kinds = Vec::with_capacity(figures.len());
    for figure in &figures {
        figure.save(dir)?;
        if let Some(csv) = figure.plotted().csv() {
            let stem = figure.kind().file_stem();
            write_atomically(&dir.join(format!("{stem}.csv")), csv.as_bytes())?;
        }
        kinds.push(figure.kind());
    }
    Ok(kinds)
}

/// A square range holding every point and arrow tip (and the unit circle when drawn).
fn square_range(table: &Table, circle: bool) -> f64 {
    let largest = table
        .rows
        .iter()
        .flat_map(|r| r.values.iter().take(2))
        .map(|v| v.abs())
        .filter(|v| v.is_finite())
        .fold(if circle { 1.0 } else { 0.0 }, f64::max);
    (largest * 1.15).max(1e-9)
}

/// Points along a dashed segment from `a` to `b`: pairs of ends of the dashes.
fn dashes(a: (f64, f64), b: (f64, f64), count: usize) -> Vec<[(f64, f64); 2]> {
    let at = |t: f64| (a.0 + t * (b.0 - a.0), a.1 + t * (b.1 - a.1));
    (0..count)
        .map(|k| {
            let t0 = k as f64 / count as f64;
            [at(t0), at(t0 + 0.6 / count as f64)]
        })
        .collect()
}

/// An arrow's two head strokes at `tip`, pointing away from the origin, `size` long.
fn arrow_head(tip: (f64, f64), size: f64) -> [[(f64, f64); 2]; 2] {
    let length = (tip.0 * tip.0 + tip.1 * tip.1).sqrt();
    if length == 0.0 {
        return [[tip, tip], [tip, tip]];
    }
    let (ux, uy) = (tip.0 / length, tip.1 / length);
    let back = |angle: f64| {
        let (c, s) = (angle.cos(), angle.sin());
        (
            tip.0 - size * (ux * c - uy * s),
            tip.1 - size * (ux * s + uy * c),
        )
    };
    [[tip, back(0.45)], [tip, back(-0.45)]]
}

/// The correlation circle and the biplot: arrows for variables, points for individuals.
struct ArrowMap {
    title: &'static str,
    x_label: String,
    y_label: String,
    table: Table,
    circle: bool,
    note: Option<&'static str>,
}

impl Draw for ArrowMap {
    fn draw<DB: DrawingBackend>(
        &mut self,
        root: &DrawingArea<DB, Shift>,
        _: Target,
    ) -> DrawResult<DB> {
        let r = square_range(&self.table, self.circle);
        let mut chart = ChartBuilder::on(root)
            .caption(self.title, title_font())
            .margin(20)
            .x_label_area_size(60)
            .y_label_area_size(80)
            .build_cartesian_2d(-r..r, -r..r)?;
        chart
            .configure_mesh()
            .max_light_lines(0)
            .bold_line_style(GRID)
            .x_desc(self.x_label.as_str())
            .y_desc(self.y_label.as_str())
            .axis_desc_style(label_font())
            .label_style(tick_font())
            .draw()?;
        let axis = BLACK.mix(0.4);
        chart.draw_series([
            PathElement::new(vec![(-r, 0.0), (r, 0.0)], axis),
            PathElement::new(vec![(0.0, -r), (0.0, r)], axis),
        ])?;
        if self.circle {
            let circle: Vec<(f64, f64)> = (0..=360)
                .map(|k| {
                    let t = (k as f64).to_radians();
                    (t.cos(), t.sin())
                })
                .collect();
            chart.draw_series(std::iter::once(PathElement::new(
                circle,
                BLACK.stroke_width(2),
            )))?;
        }
        let head = 0.04 * r;
        let (active, supplementary, point) =
            (style::PALETTE[0], style::PALETTE[3], style::PALETTE[7]);
        for row in &self.table.rows {
            let tip = (row.values[0], row.values[1]);
            if !(tip.0.is_finite() && tip.1.is_finite()) {
                continue;
            }
            match row.group.as_str() {
                "individual" => {
                    chart.draw_series(std::iter::once(Circle::new(
                        tip,
                        3,
                        point.mix(0.6).filled(),
                    )))?;
                }
                group => {
                    let colour = if group == "supplementary" {
                        supplementary
                    } else {
                        active
                    };
                    let stroke = colour.stroke_width(2);
                    if group == "supplementary" {
                        chart.draw_series(
                            dashes((0.0, 0.0), tip, 12)
                                .into_iter()
                                .map(|d| PathElement::new(d.to_vec(), stroke)),
                        )?;
                    } else {
                        chart.draw_series(std::iter::once(PathElement::new(
                            vec![(0.0, 0.0), tip],
                            stroke,
                        )))?;
                    }
                    chart.draw_series(
                        arrow_head(tip, head)
                            .into_iter()
                            .map(|h| PathElement::new(h.to_vec(), stroke)),
                    )?;
                    let anchor = Pos::new(
                        if tip.0 >= 0.0 {
                            HPos::Left
                        } else {
                            HPos::Right
                        },
                        if tip.1 >= 0.0 {
                            VPos::Bottom
                        } else {
                            VPos::Top
                        },
                    );
                    chart.draw_series(std::iter::once(Text::new(
                        style::shorten(&row.name, 24),
                        tip,
                        small_font().color(&colour).pos(anchor),
                    )))?;
                }
            }
        }
        if let Some(note) = self.note {
            let (w, h) = root.dim_in_pixel();
            root.draw(&Text::new(
                note.to_owned(),
                (w as i32 / 2, h as i32 - 8),
                small_font().pos(Pos::new(HPos::Center, VPos::Bottom)),
            ))?;
        }
        Ok(())
    }
}

/// Bars of contributions: axis 1, axis 2 and the plane side by side per variable.
struct ContributionBars {
    table: Table,
}

impl Draw for ContributionBars {
    fn draw<DB: DrawingBackend>(
        &mut self,
        root: &DrawingArea<DB, Shift>,
        _: Target,
    ) -> DrawResult<DB> {
        let variables: Vec<&TableRow> = self
            .table
            .rows
            .iter()
            .filter(|r| r.group == "variable")
            .collect();
        let uniform = self
            .table
            .rows
            .iter()
            .find(|r| r.group == "uniform")
            .map_or(0.0, |r| r.values[0]);
        let d = variables.len();
        let top = variables
            .iter()
            .flat_map(|r| r.values.iter())
            .copied()
            .fold(uniform, f64::max)
            * 1.1;
        let names: Vec<String> = variables
            .iter()
            .map(|r| style::shorten(&r.name, 14))
            .collect();
        let mut chart = ChartBuilder::on(root)
            .caption(
                "Contributions of the variables to axes 1 and 2",
                title_font(),
            )
            .margin(20)
            .x_label_area_size(90)
            .y_label_area_size(80)
            .build_cartesian_2d(-0.5..d as f64 - 0.5, 0.0..top.max(1e-9))?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .max_light_lines(0)
            .bold_line_style(GRID)
            .x_labels(d.max(1))
            .x_label_formatter(&|x| {
                let i = x.round();
                if (x - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < names.len() {
                    names[i as usize].clone()
                } else {
                    String::new()
                }
            })
            .y_label_formatter(&|v| format!("{v:.0}%"))
            .y_desc("contribution (%)")
            .axis_desc_style(label_font())
            .label_style(tick_font())
            .draw()?;
        let labels = ["axis 1", "axis 2", "plane 1–2"];
        for (s, label) in labels.iter().enumerate() {
            let colour = style::PALETTE[s];
            let offset = (s as f64 - 1.0) * 0.27;
            chart
                .draw_series(variables.iter().enumerate().map(|(i, r)| {
                    let x = i as f64 + offset;
                    Rectangle::new([(x - 0.13, 0.0), (x + 0.13, r.values[s])], colour.filled())
                }))?
                .label(*label)
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 7), (x + 20, y + 7)], colour.filled())
                });
        }
        let red = style::PALETTE[3];
        chart
            .draw_series(
                dashes((-0.5, uniform), (d as f64 - 0.5, uniform), 3 * d.max(4))
                    .into_iter()
                    .map(|seg| PathElement::new(seg.to_vec(), red.stroke_width(2))),
            )?
            .label(format!("uniform 100/D = {:.3}%", uniform))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], red.stroke_width(2)));
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.3))
            .label_font(small_font())
            .position(SeriesLabelPosition::UpperRight)
            .draw()?;
        Ok(())
    }
}

/// Individuals coloured by category, barycentres as large squares.
struct GroupMap {
    x_label: String,
    y_label: String,
    levels: Vec<String>,
    of_row: Vec<usize>,
    table: Table,
    column: String,
}

impl Draw for GroupMap {
    fn draw<DB: DrawingBackend>(
        &mut self,
        root: &DrawingArea<DB, Shift>,
        _: Target,
    ) -> DrawResult<DB> {
        let r = square_range(&self.table, false);
        let mut chart = ChartBuilder::on(root)
            .caption(
                format!("Individuals by {}", style::shorten(&self.column, 30)),
                title_font(),
            )
            .margin(20)
            .x_label_area_size(60)
            .y_label_area_size(80)
            .build_cartesian_2d(-r..r, -r..r)?;
        chart
            .configure_mesh()
            .max_light_lines(0)
            .bold_line_style(GRID)
            .x_desc(self.x_label.as_str())
            .y_desc(self.y_label.as_str())
            .axis_desc_style(label_font())
            .label_style(tick_font())
            .draw()?;
        let axis = BLACK.mix(0.4);
        chart.draw_series([
            PathElement::new(vec![(-r, 0.0), (r, 0.0)], axis),
            PathElement::new(vec![(0.0, -r), (0.0, r)], axis),
        ])?;
        let colour = |k: usize| style::PALETTE.get(k).copied().unwrap_or(style::OTHER);
        let n = self.of_row.len();
        for (k, level) in self.levels.iter().enumerate() {
            let c = colour(k);
            let points: Vec<(f64, f64)> = (0..n)
                .filter(|&i| self.of_row[i] == k)
                .map(|i| (self.table.rows[i].values[0], self.table.rows[i].values[1]))
                .collect();
            chart
                .draw_series(
                    points
                        .into_iter()
                        .map(|p| Circle::new(p, 4, c.mix(0.7).filled())),
                )?
                .label(style::shorten(level, 24))
                .legend(move |(x, y)| Circle::new((x + 10, y), 5, c.filled()));
        }
        for (k, row) in self.table.rows[n..].iter().enumerate() {
            let p = (row.values[0], row.values[1]);
            let c = colour(k);
            chart.draw_series(std::iter::once(
                EmptyElement::at(p)
                    + Rectangle::new([(-9, -9), (9, 9)], c.filled())
                    + Rectangle::new([(-9, -9), (9, 9)], BLACK.stroke_width(2))
                    + Text::new(style::shorten(&self.levels[k], 20), (12, -12), label_font()),
            ))?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.3))
            .label_font(small_font())
            .position(SeriesLabelPosition::UpperRight)
            .draw()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use faer::mat;

    #[test]
    fn arrow_heads_point_back_towards_the_origin() {
        let [a, b] = arrow_head((1.0, 0.0), 0.1);
        assert!(a[1].0 < 1.0 && b[1].0 < 1.0);
        assert!((a[1].1 + b[1].1).abs() < 1e-12);
    }

    #[test]
    fn the_tables_hold_the_given_quantities() {
        let names: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
        let ind: Vec<String> = ["1", "2"].map(String::from).to_vec();
        let cor = mat![[0.9, 0.1], [-0.5, 0.8], [0.2, -0.3]];
        let contrib = mat![[60.0, 10.0], [30.0, 70.0], [10.0, 20.0]];
        let coords = mat![[2.0, -1.0], [-2.0, 1.0]];
        let it = Interpretation {
            standardized: true,
            eigenvalues: &[4.0, 1.0],
            percent: &[80.0, 20.0],
            variables: &names,
            var_coord: cor.as_ref(),
            var_cor: cor.as_ref(),
            var_contrib: contrib.as_ref(),
            supplementary: None,
            individuals: &ind,
            ind_coord: coords.as_ref(),
            groups: None,
        };
        let circle = correlation_circle(&it).unwrap();
        let Plotted::Table(t) = circle.plotted() else {
            panic!()
        };
        assert_eq!(t.rows[1].values, vec![-0.5, 0.8]);
        let bi = biplot(&it).unwrap();
        let Plotted::Table(t) = bi.plotted() else {
            panic!()
        };
        assert_eq!(t.rows[0].values, vec![1.0, -1.0]);
        let bars = contributions(&it).unwrap();
        let Plotted::Table(t) = bars.plotted() else {
            panic!()
        };
        // Plane: a (60·4 + 10)/5 = 50, b (120 + 70)/5 = 38, c (40 + 20)/5 = 12.
        let order: Vec<&str> = t.rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(order, ["a", "b", "c", "uniform"]);
        assert_eq!(t.rows[0].values, vec![60.0, 10.0, 50.0]);
        assert!((t.rows[3].values[0] - 100.0 / 3.0).abs() < 1e-12);
    }
}
