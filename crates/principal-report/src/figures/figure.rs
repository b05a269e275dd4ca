//! What every figure is and how it is drawn: the figure kinds, a drawn [`Figure`] with the
//! numbers it plotted, and the one drawing routine ([`Draw`]) run for both PNG and SVG.

use std::fs;
use std::io::Write;
use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::error::{ReportError, Result};
use crate::style;

/// Which figure a [`Figure`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FigureKind {
    /// Proportion of variance per component (bars) and the cumulative proportion.
    Scree,
    /// Eigenvalues on a log scale.
    Spectrum,
    /// The data on components 1 and 2.
    ProjectionMap,
    /// The data on each pair of the first four components, histograms on the diagonal.
    PairsGrid,
    /// Mean squared reconstruction error and the discarded eigenvalues against M.
    ReconstructionError,
    /// The mean image and the first components as images.
    MeanAndComponents,
    /// Chosen samples reconstructed from 1, 10, 100, 500 components.
    Reconstructions,
    /// Images generated from a grid of codes on components 1 and 2.
    LatentGrid,
    /// Counts of true against predicted classes.
    ConfusionMatrix,
    /// Recognition accuracy against the number of components K.
    AccuracyByComponents,
    /// The variables' correlations with axes 1 and 2 as arrows in the unit circle.
    CorrelationCircle,
    /// Gabriel's covariance biplot: individuals and variables on one map.
    Biplot,
    /// The variables' contributions to axes 1 and 2, with the uniform contribution.
    Contributions,
    /// The individuals coloured by a qualitative variable, with its categories' barycentres.
    IndividualsByGroup,
}

impl FigureKind {
    /// Every kind, in the order a report shows them.
    pub const ALL: [FigureKind; 10] = [
        FigureKind::Scree,
        FigureKind::Spectrum,
        FigureKind::ProjectionMap,
        FigureKind::PairsGrid,
        FigureKind::ReconstructionError,
        FigureKind::MeanAndComponents,
        FigureKind::Reconstructions,
        FigureKind::LatentGrid,
        FigureKind::ConfusionMatrix,
        FigureKind::AccuracyByComponents,
    ];

    /// The figures of what the components mean (drawn from `describe`'s quantities), in the
    /// order a report shows them after [`Self::ALL`].
    pub const INTERPRETATION: [FigureKind; 4] = [
        FigureKind::CorrelationCircle,
        FigureKind::Biplot,
        FigureKind::Contributions,
        FigureKind::IndividualsByGroup,
    ];

    /// The name of its files: `<stem>.png` and `<stem>.svg`.
    pub fn file_stem(self) -> &'static str {
        match self {
            FigureKind::Scree => "scree",
            FigureKind::Spectrum => "spectrum",
            FigureKind::ProjectionMap => "projection",
            FigureKind::PairsGrid => "pairs",
            FigureKind::ReconstructionError => "reconstruction-error",
            FigureKind::MeanAndComponents => "components",
            FigureKind::Reconstructions => "reconstructions",
            FigureKind::LatentGrid => "latent-grid",
            FigureKind::ConfusionMatrix => "confusion-matrix",
            FigureKind::AccuracyByComponents => "accuracy",
            FigureKind::CorrelationCircle => "correlation-circle",
            FigureKind::Biplot => "biplot",
            FigureKind::Contributions => "contributions",
            FigureKind::IndividualsByGroup => "individuals-by-group",
        }
    }

    /// Its heading in the report.
    pub fn title(self) -> &'static str {
        match self {
            FigureKind::Scree => "Scree plot",
            FigureKind::Spectrum => "Eigenvalue spectrum",
            FigureKind::ProjectionMap => "Projection on components 1 and 2",
            FigureKind::PairsGrid => "Pairs of the first components",
            FigureKind::ReconstructionError => "Reconstruction error",
            FigureKind::MeanAndComponents => "Mean and components as images",
            FigureKind::Reconstructions => "Reconstructions",
            FigureKind::LatentGrid => "Images generated from the latent space",
            FigureKind::ConfusionMatrix => "Confusion matrix",
            FigureKind::AccuracyByComponents => "Accuracy against the number of components",
            FigureKind::CorrelationCircle => "Correlation circle",
            FigureKind::Biplot => "Biplot (covariance, α = 0)",
            FigureKind::Contributions => "Contributions of the variables to axes 1 and 2",
            FigureKind::IndividualsByGroup => "Individuals by category, with barycentres",
        }
    }
}

/// One drawn figure: its PNG and SVG bytes, a caption, and what it plotted.
///
/// The fields are the figures module's own (its drawing routines build and amend figures).
#[derive(Clone, Debug)]
pub struct Figure {
    pub(super) kind: FigureKind,
    pub(super) caption: String,
    pub(super) width: u32,
    pub(super) height: u32,
    pub(super) png: Vec<u8>,
    pub(super) svg: String,
    pub(super) plotted: Plotted,
}

impl Figure {
    /// Which figure this is.
    pub fn kind(&self) -> FigureKind {
        self.kind
    }

    /// One or two sentences saying what the figure shows (plain text).
    pub fn caption(&self) -> &str {
        &self.caption
    }

    /// Width and height in pixels (of the PNG; the SVG's user units are the same).
    pub fn size(&self) -> (u32, u32) {
        (self.width, self.height)
    }

    /// The PNG file's bytes.
    pub fn png(&self) -> &[u8] {
        &self.png
    }

    /// The SVG file's text.
    pub fn svg(&self) -> &str {
        &self.svg
    }

    /// The numbers the figure drew.
    pub fn plotted(&self) -> &Plotted {
        &self.plotted
    }

    /// Writes `<stem>.png` and `<stem>.svg` into `dir`, each through a temporary file renamed
    /// into place, so that a failure never leaves a partial file or damages an existing one.
    pub fn save(&self, dir: &Path) -> Result<()> {
        let stem = self.kind.file_stem();
        write_atomically(&dir.join(format!("{stem}.png")), &self.png)?;
        write_atomically(&dir.join(format!("{stem}.svg")), self.svg.as_bytes())
    }
}

/// The numbers a figure drew.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Plotted {
    /// Bars and lines: each series as drawn, in the axes' units.
    Series(Vec<Series>),
    /// Scatter plots: how many points each format drew.
    Points(PointCounts),
    /// Grids of images: each panel's values and colour scale.
    Images(Vec<ImagePanel>),
    /// A heat map of counts: `counts[row][column]`.
    Counts {
        /// Row and column names.
        classes: Vec<String>,
        /// The counts drawn.
        counts: Vec<Vec<u64>>,
    },
    /// Named things (variables, individuals, categories), one row each, with their values
    /// as drawn.
    Table(Table),
}

/// The rows of a [`Plotted::Table`]: each a name, a group and one value per column.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    /// The names of the value columns (e.g. `dim1`, `dim2`).
    pub columns: Vec<String>,
    /// The rows, in the order drawn.
    pub rows: Vec<TableRow>,
}

/// One row of a [`Table`].
#[derive(Clone, Debug, PartialEq)]
pub struct TableRow {
    /// What the row is (a variable's, an individual's or a category's name).
    pub name: String,
    /// Its group (e.g. `active`, `supplementary`, `individual`, a category).
    pub group: String,
    /// One value per column.
    pub values: Vec<f64>,
}

impl Plotted {
    /// The numbers of a figure of series or counts as CSV text, in long form: `series,x,y`
    /// (one row per point; floats as the shortest text that parses back to the same f64) or
    /// `true,predicted,count`. `None` for scatter plots and images, whose data is the input's.
    ///
    /// ```
    /// use principal_report::{Plotted, Series};
    /// let plotted = Plotted::Series(vec![Series { name: "ratio".into(), points: vec![(1.0, 0.75)] }]);
    /// assert_eq!(plotted.csv().unwrap(), "series,x,y\nratio,1,0.75\n");
    /// ```
    pub fn csv(&self) -> Option<String> {
        let mut out = String::new();
        match self {
            Plotted::Series(all) => {
                out.push_str("series,x,y\n");
                for series in all {
                    let name = csv_field(&series.name);
                    for (x, y) in &series.points {
                        out.push_str(&format!("{name},{x},{y}\n"));
                    }
                }
            }
            Plotted::Counts { classes, counts } => {
                out.push_str("true,predicted,count\n");
                for (t, row) in counts.iter().enumerate() {
                    for (p, count) in row.iter().enumerate() {
                        let (t, p) = (csv_field(&classes[t]), csv_field(&classes[p]));
                        out.push_str(&format!("{t},{p},{count}\n"));
                    }
                }
            }
            Plotted::Table(table) => {
                out.push_str("name,group");
                for c in &table.columns {
                    out.push(',');
                    out.push_str(&csv_field(c));
                }
                out.push('\n');
                for row in &table.rows {
                    out.push_str(&format!(
                        "{},{}",
                        csv_field(&row.name),
                        csv_field(&row.group)
                    ));
                    for v in &row.values {
                        out.push_str(&format!(",{v}"));
                    }
                    out.push('\n');
                }
            }
            Plotted::Points(_) | Plotted::Images(_) => return None,
        }
        Some(out)
    }

    /// The series named `name`, if this is a figure of series.
    pub fn series(&self, name: &str) -> Option<&Series> {
        match self {
            Plotted::Series(all) => all.iter().find(|s| s.name == name),
            _ => None,
        }
    }
}

/// `text` as one CSV field: quoted (quotes doubled) when it holds a comma, a quote or a line
/// break.
fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_owned()
    }
}

/// A named list of `(x, y)` points as drawn.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// The name in the legend.
    pub name: String,
    /// The points, in the axes' units.
    pub points: Vec<(f64, f64)>,
}

impl Series {
    /// The y values alone.
    pub fn ys(&self) -> Vec<f64> {
        self.points.iter().map(|p| p.1).collect()
    }
}

/// How many points a scatter figure drew, overall and per class.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PointCounts {
    /// Components on the axes (2 for the map; up to 4 for the pairs grid).
    pub components: usize,
    /// Samples in the data.
    pub samples: usize,
    /// Points drawn per panel in the PNG (every sample).
    pub png: usize,
    /// Points drawn per panel in the SVG (all, or a stratified subsample).
    pub svg: usize,
    /// Per class, in the labels' class order (empty without labels).
    pub per_class: Vec<ClassCount>,
}

/// How many samples of one class a scatter figure has and how many its SVG drew.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassCount {
    /// The label.
    pub class: String,
    /// Samples with this label (all drawn in the PNG).
    pub samples: usize,
    /// Points drawn in each SVG panel.
    pub svg: usize,
}

/// One image of an image grid.
#[derive(Clone, Debug, PartialEq)]
pub struct ImagePanel {
    /// Its heading (e.g. "PC1", "mean", "10 components").
    pub label: String,
    /// Pixel values, row by row (height × width).
    pub values: Vec<f64>,
    /// How values map to colours.
    pub scale: ColourScale,
}

/// The colour scale of an image.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ColourScale {
    /// Blue below 0, near-white at 0, red above, reaching full colour at ±`limit`
    /// (`limit` = the panel's largest |value|).
    Diverging {
        /// The magnitude drawn at full colour.
        limit: f64,
    },
    /// White at `low`, black at `high` (ink on paper); values beyond are clamped.
    Grey {
        /// Drawn white.
        low: f64,
        /// Drawn black.
        high: f64,
    },
}

/// Which file a drawing is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    Png,
    Svg,
}

/// The result of a drawing routine on a backend `DB`.
pub(crate) type DrawResult<DB> =
    std::result::Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// A figure's drawing routine, run once per format.
pub(crate) trait Draw {
    fn draw<DB: DrawingBackend>(
        &mut self,
        root: &DrawingArea<DB, Shift>,
        target: Target,
    ) -> DrawResult<DB>;

    /// SVG elements to add on top of what [`draw`](Draw::draw) drew for [`Target::Svg`]
    /// (elements plotters cannot make, such as embedded bitmaps).
    fn svg_overlay(&self) -> Result<String> {
        Ok(String::new())
    }
}

/// Runs `drawing` on a bitmap (encoded as PNG) and on an SVG document of `width × height`.
pub(crate) fn render(
    kind: FigureKind,
    (width, height): (u32, u32),
    caption: String,
    plotted: Plotted,
    drawing: &mut impl Draw,
) -> Result<Figure> {
    style::register_font()?;
    let failed = |message: String| ReportError::Draw {
        figure: kind.file_stem(),
        message,
    };
    let mut pixels = vec![255u8; width as usize * height as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut pixels, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| failed(e.to_string()))?;
        drawing
            .draw(&root, Target::Png)
            .map_err(|e| failed(e.to_string()))?;
        root.present().map_err(|e| failed(e.to_string()))?;
    }
    let png = encode_png(&pixels, width, height).map_err(|e| failed(e.to_string()))?;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| failed(e.to_string()))?;
        drawing
            .draw(&root, Target::Svg)
            .map_err(|e| failed(e.to_string()))?;
        root.present().map_err(|e| failed(e.to_string()))?;
    }
    let overlay = drawing.svg_overlay()?;
    if !overlay.is_empty() {
        let end = svg
            .rfind("</svg>")
            .ok_or_else(|| failed("the SVG document has no end tag".into()))?;
        svg.insert_str(end, &overlay);
    }
    Ok(Figure {
        kind,
        caption,
        width,
        height,
        png,
        svg,
        plotted,
    })
}

/// 8-bit RGB pixels, row by row, as a PNG file.
pub(crate) fn encode_png(
    pixels: &[u8],
    width: u32,
    height: u32,
) -> std::result::Result<Vec<u8>, String> {
    let mut bytes = Vec::new();
    let mut encoder = png::Encoder::new(&mut bytes, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().map_err(|e| e.to_string())?;
    writer.write_image_data(pixels).map_err(|e| e.to_string())?;
    writer.finish().map_err(|e| e.to_string())?;
    Ok(bytes)
}

/// Writes `bytes` to a temporary file beside `path`, then renames it to `path`.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let io = |action, source| ReportError::Io {
        action,
        path: path.to_owned(),
        source,
    };
    let mut file = tempfile::Builder::new()
        .prefix(".partial-")
        .tempfile_in(dir)
        .map_err(|e| io("create a temporary file for", e))?;
    file.write_all(bytes).map_err(|e| io("write", e))?;
    file.as_file().sync_all().map_err(|e| io("write", e))?;
    file.persist(path).map_err(|e| io("rename into", e.error))?;
    Ok(())
}

/// Writes a file inside a directory being built (no rename needed: the whole directory is
/// renamed into place at the end).
pub(crate) fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    fs::write(path, bytes).map_err(|source| ReportError::Io {
        action: "write",
        path: path.to_owned(),
        source,
    })
}

/// Draws an image of `shape` into `area` (in its pixel coordinates) at `(x, y)` with `zoom`
/// pixels per image pixel. In SVG, runs of equal colour along a row are one rectangle, which
/// keeps flat backgrounds (MNIST's borders) to a few elements.
pub(crate) fn draw_image<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    (x, y): (i32, i32),
    (height, width): (usize, usize),
    zoom: i32,
    colour_of: impl Fn(usize) -> RGBColor,
) -> DrawResult<DB> {
    for r in 0..height {
        let mut c = 0;
        while c < width {
            let colour = colour_of(r * width + c);
            let mut end = c + 1;
            while end < width && colour_of(r * width + end) == colour {
                end += 1;
            }
            let top = y + r as i32 * zoom;
            let left = x + c as i32 * zoom;
            let right = x + end as i32 * zoom;
            area.draw(&Rectangle::new(
                [(left, top), (right, top + zoom)],
                colour.filled(),
            ))?;
            c = end;
        }
    }
    Ok(())
}

/// Draws `text` centred horizontally at `(x, y)` (its top).
pub(crate) fn centred_text<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    text: &str,
    (x, y): (i32, i32),
    font: &TextStyle<'_>,
) -> DrawResult<DB> {
    use plotters::style::text_anchor::{HPos, Pos, VPos};
    let style = font.pos(Pos::new(HPos::Center, VPos::Top));
    area.draw(&Text::new(text.to_owned(), (x, y), style))
}
