//! `index.html`: one self-contained page (inline style, no script, no external address) with
//! the model's summary table and every figure.

use std::fmt::Write;

use crate::data::ReportData;
use crate::figures::FigureKind;
use crate::input::{Classification, ImageShape, ModelView, Scaling};
use crate::options::{Omission, ReportOptions};
use crate::staging::GENERATOR;
use crate::style::{percent, significant};

/// Components listed before the rest of the table is folded away.
const VISIBLE_COMPONENTS: usize = 20;

/// A drawn figure as the page shows it.
pub(crate) struct FigureEntry {
    pub(crate) kind: FigureKind,
    pub(crate) caption: String,
    pub(crate) size: (u32, u32),
    /// Whether `<stem>.csv` holds the numbers drawn.
    pub(crate) numbers: bool,
}

/// Everything the page shows.
pub(crate) struct Page<'a> {
    pub(crate) options: &'a ReportOptions,
    pub(crate) model: &'a ModelView<'a>,
    pub(crate) data: Option<&'a ReportData>,
    pub(crate) image_shape: Option<ImageShape>,
    pub(crate) classification: Option<&'a Classification>,
    pub(crate) figures: &'a [FigureEntry],
    pub(crate) omitted: &'a [Omission],
}

/// Text made safe inside HTML elements and attribute values.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "
body { font-family: 'DejaVu Sans', Verdana, sans-serif; max-width: 1100px; margin: 2em auto;
       padding: 0 1em; color: #222; line-height: 1.45; }
h1 { font-size: 1.7em; margin-bottom: 0.2em; }
h2 { font-size: 1.3em; margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 0.8em 0; }
th, td { padding: 0.25em 0.8em; border-bottom: 1px solid #e3e3e3; text-align: left; }
td.number, th.number { text-align: right; font-variant-numeric: tabular-nums; }
figure { margin: 2em 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #ddd; }
figcaption { margin-top: 0.4em; color: #444; }
.sources { color: #555; }
details summary { cursor: pointer; color: #335; }
";

/// The whole page.
pub(crate) fn index(page: &Page<'_>) -> String {
    let mut html = String::new();
    let title = escape(&page.options.title);
    let _ = write!(
        html,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"generator\" content=\"{GENERATOR}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{title}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{title}</h1>\n"
    );
    if !page.options.sources.is_empty() {
        html.push_str("<p class=\"sources\">");
        let lines: Vec<String> = page
            .options
            .sources
            .iter()
            .map(|(k, v)| format!("{}: <code>{}</code>", escape(k), escape(v)))
            .collect();
        html.push_str(&lines.join("<br>\n"));
        html.push_str("</p>\n");
    }
    summary(&mut html, page);
    components(&mut html, page.model);
    if let Some(results) = page.classification {
        classification(&mut html, results);
    }
    html.push_str("<h2>Figures</h2>\n");
    if page.figures.is_empty() {
        html.push_str("<p>No figure was drawn.</p>\n");
    }
    for entry in page.figures {
        let stem = entry.kind.file_stem();
        let heading = escape(entry.kind.title());
        let (width, height) = entry.size;
        let numbers = if entry.numbers {
            format!(", <a href=\"{stem}.csv\">numbers (CSV)</a>")
        } else {
            String::new()
        };
        let _ = write!(
            html,
            "<figure id=\"{stem}\">\n<a href=\"{stem}.svg\"><img src=\"{stem}.png\" \
             width=\"{width}\" height=\"{height}\" alt=\"{heading}\"></a>\n\
             <figcaption><b>{heading}.</b> {} (<a href=\"{stem}.svg\">SVG</a>, \
             <a href=\"{stem}.png\">PNG</a>{numbers})</figcaption>\n</figure>\n",
            escape(&entry.caption),
        );
    }
    if !page.omitted.is_empty() {
        html.push_str("<h2>Figures not drawn</h2>\n<ul>\n");
        for omission in page.omitted {
            let _ = writeln!(
                html,
                "<li><b>{}</b>: {}</li>",
                escape(omission.kind.title()),
                escape(&omission.reason)
            );
        }
        html.push_str("</ul>\n");
    }
    html.push_str("</body>\n</html>\n");
    html
}

fn row(html: &mut String, name: &str, value: &str) {
    let _ = writeln!(
        html,
        "<tr><th>{}</th><td>{}</td></tr>",
        escape(name),
        escape(value)
    );
}

fn summary(html: &mut String, page: &Page<'_>) {
    let model = page.model;
    html.push_str("<h2>Model</h2>\n<table>\n");
    row(html, "n_samples (N)", &model.n_samples.to_string());
    row(html, "n_features (D)", &model.n_features().to_string());
    row(html, "n_components (M)", &model.n_components().to_string());
    row(
        html,
        "ddof",
        &format!("{} (variances divide by N − {})", model.ddof, model.ddof),
    );
    row(
        html,
        "standardize",
        match model.scaling {
            Scaling::Centre => "no (centred only: PCA of the covariance matrix)",
            Scaling::Standardize => {
                "yes (each feature divided by its standard deviation: PCA of the correlation \
                 matrix)"
            }
        },
    );
    row(html, "solver", model.solver);
    row(
        html,
        "total variance (trace)",
        &significant(model.total_variance, 6),
    );
    row(
        html,
        "noise variance (mean of the discarded eigenvalues)",
        &significant(model.noise_variance, 6),
    );
    let kept: f64 = model.explained_variance_ratio.iter().sum();
    row(
        html,
        "variance explained by the M components",
        &percent(kept),
    );
    html.push_str("</table>\n");
    html.push_str("<h2>Data</h2>\n");
    match page.data {
        Some(data) => {
            html.push_str("<table>\n");
            row(html, "rows", &data.n_rows().to_string());
            if let Some(labels) = data.labels() {
                let classes = labels.classes();
                let mut names: Vec<String> = classes.iter().take(12).cloned().collect();
                if classes.len() > 12 {
                    names.push(format!("… ({} more)", classes.len() - 12));
                }
                row(
                    html,
                    "labels",
                    &format!(
                        "{} {}: {}",
                        classes.len(),
                        if classes.len() == 1 {
                            "class"
                        } else {
                            "classes"
                        },
                        names.join(", ")
                    ),
                );
            }
            html.push_str("</table>\n");
        }
        None => html.push_str(
            "<p>No data was given with the model: figures of the data (projections, \
             reconstructions, reconstruction error) are not drawn.</p>\n",
        ),
    }
    if let Some(shape) = page.image_shape {
        let _ = writeln!(
            html,
            "<p>Every sample is an image of {}×{} pixels (height × width).</p>",
            shape.height(),
            shape.width()
        );
    }
}

fn classification(html: &mut String, results: &Classification) {
    let method = results
        .setting()
        .map_or_else(|| "the nearest training code".to_owned(), |s| s.describe());
    let _ = write!(
        html,
        "<h2>Classification</h2>\n<p>Test samples labelled by {}: accuracy <b>{}</b> ({} \
         classes; the confusion matrix below).</p>\n",
        escape(&method),
        percent(results.accuracy()),
        results.classes().len()
    );
    if !results.accuracy_by_components().is_empty() {
        html.push_str(
            "<table>\n<tr><th class=\"number\">components K</th>\
             <th class=\"number\">accuracy</th></tr>\n",
        );
        for &(k, accuracy) in results.accuracy_by_components() {
            let _ = writeln!(
                html,
                "<tr><td class=\"number\">{k}</td><td class=\"number\">{}</td></tr>",
                percent(accuracy)
            );
        }
        html.push_str("</table>\n");
    }
}

fn components(html: &mut String, model: &ModelView<'_>) {
    html.push_str("<h2>Components</h2>\n");
    let m = model.n_components();
    let mut cumulative = 0.0;
    let rows: Vec<String> = (0..m)
        .map(|i| {
            cumulative += model.explained_variance_ratio[i];
            format!(
                "<tr><td class=\"number\">{}</td><td class=\"number\">{}</td>\
                 <td class=\"number\">{}</td><td class=\"number\">{}</td></tr>",
                i + 1,
                significant(model.explained_variance[i], 6),
                percent(model.explained_variance_ratio[i]),
                percent(cumulative)
            )
        })
        .collect();
    let head = "<table>\n<tr><th class=\"number\">component</th>\
                <th class=\"number\">explained_variance (λ)</th>\
                <th class=\"number\">explained_variance_ratio</th>\
                <th class=\"number\">cumulative ratio</th></tr>\n";
    html.push_str(head);
    for r in rows.iter().take(VISIBLE_COMPONENTS) {
        html.push_str(r);
        html.push('\n');
    }
    html.push_str("</table>\n");
    if m > VISIBLE_COMPONENTS {
        let _ = writeln!(html, "<details><summary>All {m} components</summary>");
        html.push_str(head);
        for r in &rows {
            html.push_str(r);
            html.push('\n');
        }
        html.push_str("</table>\n</details>\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_in_labels_is_escaped() {
        assert_eq!(
            escape("<b>\"A&B\"</b>"),
            "&lt;b&gt;&quot;A&amp;B&quot;&lt;/b&gt;"
        );
    }
}
