//! The report: which figures a model (and its data, labels, image shape, classification
//! results) allows, drawing them, and writing the directory with `index.html`.

use std::path::{Path, PathBuf};

use crate::data::{ReportData, check_data};
use crate::error::{ReportError, Result};
use crate::figures::figure::write_file;
use crate::figures::{self, Figure, FigureKind, Interpretation};
use crate::html::{self, FigureEntry, Page};
use crate::input::{Classification, ImageShape, ModelView};
use crate::options::{Omission, ReportOptions};
use crate::progress::Progress;
use crate::staging::Staging;

/// What [`Report::write`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WrittenReport {
    /// The report's directory.
    pub dir: PathBuf,
    /// The figures drawn, in page order (each as `<stem>.png` and `<stem>.svg`).
    pub figures: Vec<FigureKind>,
    /// The figures left out, with the reason.
    pub omitted: Vec<Omission>,
    /// Whether an earlier report (or an empty directory) was replaced.
    pub replaced: bool,
    /// Where the earlier report was left when it could not be deleted after the new one was
    /// in place (worth a warning; the new report is complete).
    pub leftover: Option<PathBuf>,
}

/// A report of one model: summary table and figures, written as a directory of PNG and SVG
/// files with an `index.html`.
///
/// Figures of the data need [`with_data`](Self::with_data); figures of images need
/// [`with_image_shape`](Self::with_image_shape); the classification figures need
/// [`with_classification`](Self::with_classification). What cannot be drawn is listed on the
/// page with the reason.
#[derive(Clone, Debug)]
pub struct Report<'a> {
    model: ModelView<'a>,
    data: Option<&'a ReportData>,
    image_shape: Option<ImageShape>,
    classification: Option<&'a Classification>,
    interpretation: Option<&'a Interpretation<'a>>,
    options: ReportOptions,
}

impl<'a> Report<'a> {
    /// A report of `model` alone, with default options. Errs when the model's arrays do not fit
    /// together.
    pub fn new(model: ModelView<'a>) -> Result<Self> {
        model.validate()?;
        Ok(Report {
            model,
            data: None,
            image_shape: None,
            classification: None,
            interpretation: None,
            options: ReportOptions::default(),
        })
    }

    /// Adds the data (gathered with [`ReportDataBuilder`](crate::ReportDataBuilder) against
    /// the same model).
    pub fn with_data(mut self, data: &'a ReportData) -> Result<Self> {
        check_data(&self.model, data)?;
        self.data = Some(data);
        Ok(self)
    }

    /// Says that every sample is an image of this shape; errs unless
    /// `height × width = n_features`.
    pub fn with_image_shape(mut self, shape: ImageShape) -> Result<Self> {
        shape.check(self.model.n_features())?;
        self.image_shape = Some(shape);
        Ok(self)
    }

    /// Adds classification results (confusion matrix, accuracy against K).
    /// Adds the figures of what the components mean ([`FigureKind::INTERPRETATION`]), drawn
    /// from `describe`'s quantities: checked here.
    pub fn with_interpretation(mut self, interpretation: &'a Interpretation<'a>) -> Result<Self> {
        interpretation.validate()?;
        self.interpretation = Some(interpretation);
        Ok(self)
    }

    pub fn with_classification(mut self, results: &'a Classification) -> Self {
        self.classification = Some(results);
        self
    }

    /// Replaces the options; errs on a value out of range.
    pub fn with_options(mut self, options: ReportOptions) -> Result<Self> {
        options.validate()?;
        self.options = options;
        Ok(self)
    }

    /// The figures that will be drawn, in page order, and those left out with the reason.
    pub fn plan(&self) -> (Vec<FigureKind>, Vec<Omission>) {
        let mut drawn = Vec::new();
        let mut omitted = Vec::new();
        for kind in FigureKind::ALL
            .into_iter()
            .chain(FigureKind::INTERPRETATION)
        {
            match self.reason_to_omit(kind) {
                None => drawn.push(kind),
                Some(Some(reason)) => omitted.push(Omission { kind, reason }),
                // Not relevant to this report at all (classification figures without results).
                Some(None) => {}
            }
        }
        (drawn, omitted)
    }

    /// `None` to draw `kind`; `Some(Some(reason))` to omit it saying why; `Some(None)` to omit
    /// it silently.
    fn reason_to_omit(&self, kind: FigureKind) -> Option<Option<String>> {
        let m = self.model.n_components();
        let no_data = || Some(Some("no data was given with the model".to_owned()));
        let no_shape = || {
            Some(Some(
                "no image shape was given (samples are not known to be images)".to_owned(),
            ))
        };
        let one_component = || {
            Some(Some(
                "the model has only one component; this figure needs two".to_owned(),
            ))
        };
        match kind {
            // Listed only when given (the report command gives them with --data and at most
            // 50 features).
            FigureKind::CorrelationCircle | FigureKind::Biplot | FigureKind::Contributions => {
                self.interpretation.map(|_| None).unwrap_or(Some(None))
            }
            FigureKind::IndividualsByGroup => match self.interpretation {
                Some(it) if it.groups.is_some() => None,
                _ => Some(None),
            },
            FigureKind::Scree => None,
            FigureKind::Spectrum => {
                if self.model.explained_variance.iter().any(|&v| v > 0.0) {
                    None
                } else {
                    Some(Some("no eigenvalue is positive".into()))
                }
            }
            FigureKind::ProjectionMap | FigureKind::PairsGrid => match self.data {
                None => no_data(),
                Some(_) if m < 2 => one_component(),
                Some(_) => None,
            },
            FigureKind::ReconstructionError => match self.data {
                None => no_data(),
                Some(_) => None,
            },
            FigureKind::MeanAndComponents => match self.image_shape {
                None => no_shape(),
                Some(_) => None,
            },
            FigureKind::Reconstructions => match (self.image_shape, self.data) {
                (None, _) => no_shape(),
                (_, None) => no_data(),
                (_, Some(data)) if data.samples().is_empty() => {
                    Some(Some("no sample was chosen for reconstruction".into()))
                }
                _ => None,
            },
            FigureKind::LatentGrid => match self.image_shape {
                None => no_shape(),
                Some(_) if m < 2 => one_component(),
                Some(_) => None,
            },
            FigureKind::ConfusionMatrix => self.classification.map(|_| None).unwrap_or(Some(None)),
            FigureKind::AccuracyByComponents => match self.classification {
                None => Some(None),
                Some(c) if c.accuracy_by_components().len() < 2 => Some(Some(
                    "accuracy was measured for fewer than two numbers of components".into(),
                )),
                Some(_) => None,
            },
        }
    }

    /// Draws one figure; errs with the reason when the report cannot draw it (see
    /// [`plan`](Self::plan)).
    pub fn figure(&self, kind: FigureKind, progress: &mut dyn Progress) -> Result<Figure> {
        if let Some(reason) = self.reason_to_omit(kind) {
            return Err(ReportError::CannotDraw {
                figure: kind.file_stem(),
                reason: reason.unwrap_or_else(|| "no classification results were given".into()),
            });
        }
        let (model, options) = (&self.model, &self.options);
        if let Some(it) = self.interpretation {
            match kind {
                FigureKind::CorrelationCircle => return figures::correlation_circle(it),
                FigureKind::Biplot => return figures::biplot(it),
                FigureKind::Contributions => return figures::contributions(it),
                FigureKind::IndividualsByGroup => return figures::individuals_by_group(it),
                _ => {}
            }
        }
        match (kind, self.data, self.image_shape, self.classification) {
            (FigureKind::Scree, ..) => figures::scree(model),
            (FigureKind::Spectrum, ..) => figures::spectrum(model),
            (FigureKind::ProjectionMap, Some(data), ..) => {
                figures::projection_map(model, data, &options.points, progress)
            }
            (FigureKind::PairsGrid, Some(data), ..) => {
                figures::pairs_grid(model, data, &options.points, progress)
            }
            (FigureKind::ReconstructionError, Some(data), ..) => {
                figures::reconstruction_error(model, data)
            }
            (FigureKind::MeanAndComponents, _, Some(shape), _) => {
                figures::mean_and_components(model, shape, options.image_components, progress)
            }
            (FigureKind::Reconstructions, Some(data), Some(shape), _) => {
                figures::reconstructions(model, data, shape, progress)
            }
            (FigureKind::LatentGrid, _, Some(shape), _) => {
                figures::latent_grid(model, shape, &options.latent_grid, progress)
            }
            (FigureKind::ConfusionMatrix, .., Some(results)) => figures::confusion_matrix(results),
            (FigureKind::AccuracyByComponents, .., Some(results)) => {
                figures::accuracy_by_components(results)
            }
            // reason_to_omit has named what is missing for every other combination.
            (kind, ..) => Err(ReportError::CannotDraw {
                figure: kind.file_stem(),
                reason: "what it needs was not given".into(),
            }),
        }
    }

    /// Draws every figure the report allows and writes `dir/index.html`, `dir/<stem>.png` and
    /// `dir/<stem>.svg`, and for curves and counts the numbers drawn as `dir/<stem>.csv`
    /// ([`Plotted::csv`](crate::Plotted::csv)).
    ///
    /// All or nothing: the files go into a temporary directory beside `dir`, renamed to `dir`
    /// once complete. `dir` may be absent, an empty directory, or an earlier report (its
    /// `index.html` written by this crate), which is replaced only once the new report is
    /// complete; any other existing `dir` is refused ([`ReportError::NotAReportDirectory`],
    /// [`ReportError::NotADirectory`]) and left alone. On error nothing is left behind and an
    /// earlier report is kept.
    pub fn write(&self, dir: &Path, progress: &mut dyn Progress) -> Result<WrittenReport> {
        let staging = Staging::new(dir)?;
        let (kinds, omitted) = self.plan();
        let mut entries = Vec::with_capacity(kinds.len());
        for &kind in &kinds {
            let figure = self.figure(kind, progress)?;
            let stem = kind.file_stem();
            write_file(&staging.path().join(format!("{stem}.png")), figure.png())?;
            write_file(
                &staging.path().join(format!("{stem}.svg")),
                figure.svg().as_bytes(),
            )?;
            let csv = figure.plotted().csv();
            if let Some(csv) = &csv {
                write_file(&staging.path().join(format!("{stem}.csv")), csv.as_bytes())?;
            }
            entries.push(FigureEntry {
                kind,
                caption: figure.caption().to_owned(),
                size: figure.size(),
                numbers: csv.is_some(),
            });
        }
        let page = Page {
            options: &self.options,
            model: &self.model,
            data: self.data,
            image_shape: self.image_shape,
            classification: self.classification,
            figures: &entries,
            omitted: &omitted,
        };
        write_file(
            &staging.path().join("index.html"),
            html::index(&page).as_bytes(),
        )?;
        let installed = staging.install()?;
        Ok(WrittenReport {
            dir: dir.to_owned(),
            figures: kinds,
            omitted,
            replaced: installed.replaced,
            leftover: installed.leftover,
        })
    }
}
