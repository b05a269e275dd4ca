//! `principal describe`: what a model's components mean, in FactoMineR's terms — eigenvalues,
//! variables, individuals, supplementary individuals and variables, and `dimdesc` — as text
//! tables, one JSON object, or CSV files in a directory.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args;
use principal::describe::{
    AxisDescription, DEFAULT_AXES, DescribeInput, Description, Variable, describe,
};
use principal::faer::{Mat, MatRef};
use principal_io::{
    ColumnSelector, HeaderMode, ReadOptions, SavedModel, load_model, read_label_column, read_table,
    write_atomically,
};
use serde_json::{Value, json};

use crate::args::usage_error;
use crate::interpretation::{group_parts, interpretation};
use crate::text::{self, sig};

#[derive(Debug, Args)]
pub struct DescribeArgs {
    /// A model written by `principal fit`.
    #[arg(value_name = "MODEL")]
    pub model: PathBuf,
    /// The active individuals: the data the model was fitted to (shards in order), with the
    /// model's columns and any supplementary columns named below.
    #[arg(long, required = true, num_args = 1.., value_name = "INPUT")]
    pub data: Vec<PathBuf>,
    /// Supplementary individuals (the model's columns, and the --row-names column if given):
    /// projected onto the axes, never fitted.
    #[arg(long, num_args = 1.., value_name = "INPUT")]
    pub supplementary_rows: Vec<PathBuf>,
    /// Supplementary quantitative variables: numeric columns of --data not in the model.
    #[arg(long, value_delimiter = ',', value_name = "A,B,..")]
    pub quantitative: Vec<String>,
    /// Supplementary qualitative variables: text columns of --data; each category is the
    /// barycentre of its rows.
    #[arg(long, value_delimiter = ',', value_name = "C,D,..")]
    pub qualitative: Vec<String>,
    /// The column naming the individuals (in --data and --supplementary-rows); without it
    /// they are numbered from 1.
    #[arg(long, value_name = "COLUMN")]
    pub row_names: Option<String>,
    /// How many axes to describe (at most the model's components); dimdesc describes the
    /// first 3 of them.
    #[arg(long, default_value_t = DEFAULT_AXES, value_name = "K")]
    pub axes: usize,
    /// Print one JSON object (keys eig, var, ind, ind_sup, quanti_sup, quali_sup, dimdesc)
    /// instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Also write every table as a CSV file in DIR (created if missing).
    #[arg(long, value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// With --output, also draw the interpretation figures into DIR (PNG and SVG, and the
    /// CSV of the numbers drawn beside each): the correlation circle, the biplot, the
    /// contributions, and with --qualitative the individuals coloured by its first column.
    #[arg(long, requires = "output")]
    pub figures: bool,
}

/// A validated `describe` request.
#[derive(Debug)]
pub struct DescribeConfig {
    args: DescribeArgs,
}

impl DescribeConfig {
    pub fn new(args: DescribeArgs) -> Result<Self> {
        let err = |message: String| usage_error::<DescribeArgs>("describe", message);
        if args.axes == 0 {
            return Err(err("--axes 0 is not allowed: describe at least 1 axis".into()).into());
        }
        let mut seen = BTreeSet::new();
        for name in args
            .quantitative
            .iter()
            .chain(&args.qualitative)
            .chain(&args.row_names)
        {
            if name.is_empty() {
                return Err(err("an empty column name was given".into()).into());
            }
            if !seen.insert(name) {
                return Err(err(format!(
                    "column {name} is named twice among --quantitative, --qualitative and --row-names"
                ))
                .into());
            }
        }
        Ok(DescribeConfig { args })
    }
}

/// The tables' row names and the description.
struct Described {
    description: Description,
    variables: Vec<String>,
    individuals: Vec<String>,
    supplementary: Vec<String>,
    quantitative: Vec<String>,
    qualitative: Vec<String>,
    categories: Vec<String>,
    /// Each qualitative column's value on every active row.
    qualitative_values: Vec<Vec<String>>,
    axes: usize,
}

fn select(names: &[String]) -> Option<Vec<ColumnSelector>> {
    Some(
        names
            .iter()
            .map(|n| ColumnSelector::Name(n.clone()))
            .collect(),
    )
}

/// The model's columns of `inputs`: by the model's feature names when it has them, else every
/// column but those `describe` was told are something else.
fn read_active(
    inputs: &[PathBuf],
    saved: &SavedModel,
    others: &[String],
) -> Result<(Mat<f64>, Vec<String>)> {
    let options = match &saved.feature_names {
        Some(features) => {
            if let Some(clash) = others.iter().find(|o| features.contains(o)) {
                return Err(usage_error::<DescribeArgs>(
                    "describe",
                    format!("column {clash} is one of the model's features, so it cannot be supplementary or name the rows"),
                )
                .into());
            }
            ReadOptions {
                header: HeaderMode::Auto,
                columns: select(features),
                ..ReadOptions::default()
            }
        }
        None => ReadOptions {
            exclude: others
                .iter()
                .map(|n| ColumnSelector::Name(n.clone()))
                .collect(),
            ..ReadOptions::default()
        },
    };
    let table = read_table(inputs, &options)?;
    let d = saved.model.n_features();
    let data = table.data.into_f64();
    if data.ncols() != d {
        return Err(usage_error::<DescribeArgs>(
            "describe",
            format!(
                "{} has {} feature column(s) but the model was fitted on {d}",
                show_inputs(inputs),
                data.ncols()
            ),
        )
        .into());
    }
    let data = data.as_ref().to_owned();
    let variables = table
        .column_names
        .or_else(|| saved.feature_names.clone())
        .unwrap_or_else(|| (1..=d).map(|j| format!("x{j}")).collect());
    Ok((data, variables))
}

fn show_inputs(inputs: &[PathBuf]) -> String {
    inputs
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn read_text_column(inputs: &[PathBuf], name: &str) -> Result<Vec<String>> {
    Ok(read_label_column(
        inputs,
        &ColumnSelector::Name(name.to_string()),
        HeaderMode::Auto,
    )?)
}

fn row_names(inputs: &[PathBuf], column: Option<&str>, n: usize) -> Result<Vec<String>> {
    match column {
        Some(c) => read_text_column(inputs, c),
        None => Ok((1..=n).map(|i| i.to_string()).collect()),
    }
}

fn gather(config: &DescribeConfig) -> Result<Described> {
    let args = &config.args;
    let saved = load_model(&args.model)?;
    let mut others: Vec<String> = args
        .quantitative
        .iter()
        .chain(&args.qualitative)
        .chain(&args.row_names)
        .cloned()
        .collect();
    let weights_column = saved.row_weights.clone();
    others.extend(weights_column.clone());
    let (data, variables) = read_active(&args.data, &saved, &others)?;
    let n = data.nrows();
    let individuals = row_names(&args.data, args.row_names.as_deref(), n)?;
    let row_weights = match &weights_column {
        Some(column) => {
            let table = read_table(
                &args.data,
                &ReadOptions {
                    columns: select(std::slice::from_ref(column)),
                    ..ReadOptions::default()
                },
            )
            .with_context(|| {
                format!("reading the row weights (column {column}) the model was fitted with")
            })?;
            Some(table.data.into_f64().as_slice().to_vec())
        }
        None => None,
    };
    let quantitative = if args.quantitative.is_empty() {
        None
    } else {
        let table = read_table(
            &args.data,
            &ReadOptions {
                columns: select(&args.quantitative),
                ..ReadOptions::default()
            },
        )?;
        Some(table.data.into_f64().as_ref().to_owned())
    };
    let qualitative: Vec<Vec<String>> = args
        .qualitative
        .iter()
        .map(|c| read_text_column(&args.data, c))
        .collect::<Result<_>>()?;
    let (supplementary_rows, supplementary) = if args.supplementary_rows.is_empty() {
        (None, Vec::new())
    } else {
        let mut others = Vec::new();
        others.extend(args.row_names.clone());
        let (rows, _) = read_active(&args.supplementary_rows, &saved, &others)?;
        let names = row_names(
            &args.supplementary_rows,
            args.row_names.as_deref(),
            rows.nrows(),
        )?;
        (Some(rows), names)
    };
    let input = DescribeInput {
        row_weights: row_weights.as_deref(),
        supplementary_rows: supplementary_rows.as_ref().map(|m| m.as_ref()),
        quantitative: quantitative.as_ref().map(|m| m.as_ref()),
        qualitative: &qualitative,
        axes: args.axes,
        ..DescribeInput::new(data.as_ref())
    };
    let description = describe(&saved.model, &input).with_context(|| {
        format!(
            "describing {} on {}",
            args.model.display(),
            show_inputs(&args.data)
        )
    })?;
    let categories = description
        .quali_sup
        .as_ref()
        .map(|q| {
            q.categories
                .iter()
                .map(|c| format!("{}={}", args.qualitative[c.column], c.level))
                .collect()
        })
        .unwrap_or_default();
    let axes = description.var.coord.ncols();
    Ok(Described {
        description,
        variables,
        individuals,
        supplementary,
        quantitative: args.quantitative.clone(),
        qualitative: args.qualitative.clone(),
        categories,
        qualitative_values: qualitative,
        axes,
    })
}

pub fn run(config: &DescribeConfig) -> Result<()> {
    crate::models::require_pca::<DescribeArgs>(&config.args.model, "describe")?;
    let described = gather(config)?;
    if let Some(dir) = &config.args.output {
        write_csv_files(dir, &described)?;
        if config.args.figures {
            draw_figures(config, dir, &described)?;
        }
    }
    let text = if config.args.json {
        let mut s = serde_json::to_string_pretty(&to_json(&described))?;
        s.push('\n');
        s
    } else {
        tables(&described)
    };
    text::stdout(&text)
}

fn rows(m: MatRef<'_, f64>) -> Vec<Vec<f64>> {
    (0..m.nrows())
        .map(|i| m.row(i).iter().copied().collect())
        .collect()
}

fn variable_name(d: &Described, v: Variable) -> String {
    match v {
        Variable::Active(j) => d.variables[j].clone(),
        Variable::Quantitative(q) => d.quantitative[q].clone(),
    }
}

fn dimdesc_json(d: &Described, axis: &AxisDescription) -> Value {
    let mut o = serde_json::Map::new();
    if !axis.quantitative.is_empty() {
        o.insert(
            "quanti".into(),
            json!({
                "names": axis.quantitative.iter().map(|c| variable_name(d, c.variable)).collect::<Vec<_>>(),
                "correlation": axis.quantitative.iter().map(|c| c.correlation).collect::<Vec<_>>(),
                "p_value": axis.quantitative.iter().map(|c| c.p_value).collect::<Vec<_>>(),
            }),
        );
    }
    if !axis.qualitative.is_empty() {
        o.insert(
            "quali".into(),
            json!({
                "names": axis.qualitative.iter().map(|a| d.qualitative[a.column].clone()).collect::<Vec<_>>(),
                "r2": axis.qualitative.iter().map(|a| a.r2).collect::<Vec<_>>(),
                "p_value": axis.qualitative.iter().map(|a| a.p_value).collect::<Vec<_>>(),
            }),
        );
    }
    if !axis.categories.is_empty() {
        o.insert(
            "category".into(),
            json!({
                "names": axis.categories.iter().map(|c| d.categories[c.category].clone()).collect::<Vec<_>>(),
                "estimate": axis.categories.iter().map(|c| c.estimate).collect::<Vec<_>>(),
                "p_value": axis.categories.iter().map(|c| c.p_value).collect::<Vec<_>>(),
            }),
        );
    }
    Value::Object(o)
}

/// One object whose keys are FactoMineR's tables; non-finite values (0/0) are null.
fn to_json(d: &Described) -> Value {
    let r = &d.description;
    let eig_names: Vec<String> = (1..=r.eig.eigenvalue.len())
        .map(|m| format!("comp {m}"))
        .collect();
    json!({
        "eig": {
            "names": eig_names,
            "eigenvalue": r.eig.eigenvalue,
            "percent": r.eig.percent,
            "cumulative_percent": r.eig.cumulative_percent,
        },
        "var": {
            "names": d.variables,
            "coord": rows(r.var.coord.as_ref()),
            "cor": rows(r.var.cor.as_ref()),
            "cos2": rows(r.var.cos2.as_ref()),
            "contrib": rows(r.var.contrib.as_ref()),
        },
        "ind": {
            "names": d.individuals,
            "coord": rows(r.ind.coord.as_ref()),
            "cos2": rows(r.ind.cos2.as_ref()),
            "contrib": rows(r.ind.contrib.as_ref()),
            "dist": r.ind.dist,
        },
        "ind_sup": r.ind_sup.as_ref().map(|t| json!({
            "names": d.supplementary,
            "coord": rows(t.coord.as_ref()),
            "cos2": rows(t.cos2.as_ref()),
            "dist": t.dist,
        })),
        "quanti_sup": r.quanti_sup.as_ref().map(|t| json!({
            "names": d.quantitative,
            "coord": rows(t.coord.as_ref()),
            "cor": rows(t.cor.as_ref()),
            "cos2": rows(t.cos2.as_ref()),
        })),
        "quali_sup": r.quali_sup.as_ref().map(|t| json!({
            "names": d.categories,
            "coord": rows(t.coord.as_ref()),
            "cos2": rows(t.cos2.as_ref()),
            "v_test": rows(t.v_test.as_ref()),
            "dist": t.dist,
            "eta2": {"names": d.qualitative, "values": rows(t.eta2.as_ref())},
        })),
        "dimdesc": r.dimdesc.iter().map(|a| dimdesc_json(d, a)).collect::<Vec<_>>(),
    })
}

/// A table: a header and rows of text, columns right-aligned but the first.
fn render(out: &mut String, title: &str, header: &[String], body: &[Vec<String>]) {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in body {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let mut s = String::new();
        for (k, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            if k == 0 {
                let _ = write!(s, "{cell:<w$}");
            } else {
                let _ = write!(s, "  {cell:>w$}");
            }
        }
        s.trim_end().to_string()
    };
    let _ = writeln!(out, "{title}");
    let _ = writeln!(out, "{}", line(header));
    for row in body {
        let _ = writeln!(out, "{}", line(row));
    }
    out.push('\n');
}

/// A named table of per-axis matrices (each quantity's K columns side by side, axis by axis)
/// and optional per-row columns first.
struct Block<'a> {
    names: &'a [String],
    leading: Vec<(&'static str, &'a [f64])>,
    per_axis: Vec<(&'static str, MatRef<'a, f64>)>,
}

fn block_rows(b: &Block<'_>, axes: usize, digits: usize) -> (Vec<String>, Vec<Vec<String>>) {
    let mut header = vec![String::new()];
    header.extend(b.leading.iter().map(|(n, _)| n.to_string()));
    for m in 0..axes {
        for (k, (q, _)) in b.per_axis.iter().enumerate() {
            header.push(if k == 0 {
                format!("Dim.{}", m + 1)
            } else {
                q.to_string()
            });
        }
    }
    let body = (0..b.names.len())
        .map(|i| {
            let mut row = vec![b.names[i].clone()];
            row.extend(b.leading.iter().map(|(_, v)| sig(v[i], digits)));
            for m in 0..axes {
                for (_, mat) in &b.per_axis {
                    row.push(sig(mat[(i, m)], digits));
                }
            }
            row
        })
        .collect();
    (header, body)
}

fn tables(d: &Described) -> String {
    let r = &d.description;
    let k = d.axes;
    let mut out = String::new();
    let header: Vec<String> = ["", "eigenvalue", "% of variance", "cumulative %"]
        .map(String::from)
        .to_vec();
    let body: Vec<Vec<String>> = (0..r.eig.eigenvalue.len())
        .map(|m| {
            vec![
                format!("comp {}", m + 1),
                sig(r.eig.eigenvalue[m], 6),
                format!("{:.3}", r.eig.percent[m]),
                format!("{:.3}", r.eig.cumulative_percent[m]),
            ]
        })
        .collect();
    render(&mut out, "Eigenvalues", &header, &body);
    let mut block = |title: &str, b: Block<'_>| {
        let (header, body) = block_rows(&b, k, 4);
        render(&mut out, title, &header, &body);
    };
    block(
        "Individuals (Dim.k: coordinate; ctr: contribution %; cos2: quality)",
        Block {
            names: &d.individuals,
            leading: vec![("dist", &r.ind.dist)],
            per_axis: vec![
                ("coord", r.ind.coord.as_ref()),
                ("ctr", r.ind.contrib.as_ref()),
                ("cos2", r.ind.cos2.as_ref()),
            ],
        },
    );
    block(
        "Variables (Dim.k: coordinate V√λ; cor: correlation; ctr: contribution %; cos2)",
        Block {
            names: &d.variables,
            leading: vec![],
            per_axis: vec![
                ("coord", r.var.coord.as_ref()),
                ("cor", r.var.cor.as_ref()),
                ("ctr", r.var.contrib.as_ref()),
                ("cos2", r.var.cos2.as_ref()),
            ],
        },
    );
    if let Some(t) = &r.ind_sup {
        block(
            "Supplementary individuals",
            Block {
                names: &d.supplementary,
                leading: vec![("dist", &t.dist)],
                per_axis: vec![("coord", t.coord.as_ref()), ("cos2", t.cos2.as_ref())],
            },
        );
    }
    if let Some(t) = &r.quanti_sup {
        block(
            "Supplementary quantitative variables (Dim.k: coordinate; cor: correlation)",
            Block {
                names: &d.quantitative,
                leading: vec![],
                per_axis: vec![
                    ("coord", t.coord.as_ref()),
                    ("cor", t.cor.as_ref()),
                    ("cos2", t.cos2.as_ref()),
                ],
            },
        );
    }
    if let Some(t) = &r.quali_sup {
        block(
            "Supplementary categories (Dim.k: barycentre's coordinate; v.test)",
            Block {
                names: &d.categories,
                leading: vec![("dist", &t.dist)],
                per_axis: vec![
                    ("coord", t.coord.as_ref()),
                    ("cos2", t.cos2.as_ref()),
                    ("v.test", t.v_test.as_ref()),
                ],
            },
        );
        block(
            "Supplementary qualitative variables (η²)",
            Block {
                names: &d.qualitative,
                leading: vec![],
                per_axis: vec![("eta2", t.eta2.as_ref())],
            },
        );
    }
    for (m, axis) in r.dimdesc.iter().enumerate() {
        let mut body = Vec::new();
        for c in &axis.quantitative {
            body.push(vec![
                variable_name(d, c.variable),
                "correlation".into(),
                sig(c.correlation, 4),
                sig(c.p_value, 4),
            ]);
        }
        for a in &axis.qualitative {
            body.push(vec![
                d.qualitative[a.column].clone(),
                "R²".into(),
                sig(a.r2, 4),
                sig(a.p_value, 4),
            ]);
        }
        for c in &axis.categories {
            body.push(vec![
                d.categories[c.category].clone(),
                "estimate".into(),
                sig(c.estimate, 4),
                sig(c.p_value, 4),
            ]);
        }
        let header = ["", "", "value", "p-value"].map(String::from).to_vec();
        let title = format!("dimdesc: Dim.{} (p ≤ 0.05)", m + 1);
        if body.is_empty() {
            let _ = writeln!(out, "{title}\nnothing significant\n");
        } else {
            render(&mut out, &title, &header, &body);
        }
    }
    out
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Rows of a CSV file: a header, then one line per row; numbers in full precision.
fn write_csv(path: &Path, header: &[String], body: &[(String, Vec<f64>)]) -> Result<()> {
    write_atomically(path, |out| {
        let head: Vec<String> = header.iter().map(|h| csv_field(h)).collect();
        writeln!(out, "{}", head.join(","))?;
        for (name, values) in body {
            let mut line = csv_field(name);
            for v in values {
                line.push(',');
                if v.is_finite() {
                    let _ = write!(line, "{v:?}");
                }
            }
            writeln!(out, "{line}")?;
        }
        Ok(())
    })?;
    Ok(())
}

fn table_csv(
    path: &Path,
    names: &[String],
    leading: &[(&str, &[f64])],
    per_axis: &[(&str, MatRef<'_, f64>)],
) -> Result<()> {
    let axes = per_axis.first().map_or(0, |(_, m)| m.ncols());
    let mut header = vec!["name".to_string()];
    header.extend(leading.iter().map(|(n, _)| n.to_string()));
    for (q, _) in per_axis {
        header.extend((1..=axes).map(|m| format!("{q}.Dim.{m}")));
    }
    let body: Vec<(String, Vec<f64>)> = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let mut v: Vec<f64> = leading.iter().map(|(_, x)| x[i]).collect();
            for (_, mat) in per_axis {
                v.extend(mat.row(i).iter().copied());
            }
            (name.clone(), v)
        })
        .collect();
    write_csv(path, &header, &body)
}

/// eig.csv, var.csv, ind.csv, and ind_sup.csv, quanti_sup.csv, quali_sup.csv,
/// quali_sup_eta2.csv when given; dimdesc.csv (axis, kind, name, value, p-value).
fn write_csv_files(dir: &Path, d: &Described) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let r = &d.description;
    let eig_names: Vec<String> = (1..=r.eig.eigenvalue.len())
        .map(|m| format!("comp {m}"))
        .collect();
    let eig = Mat::from_fn(r.eig.eigenvalue.len(), 3, |m, c| match c {
        0 => r.eig.eigenvalue[m],
        1 => r.eig.percent[m],
        _ => r.eig.cumulative_percent[m],
    });
    write_csv(
        &dir.join("eig.csv"),
        &["name", "eigenvalue", "percent", "cumulative_percent"].map(String::from),
        &eig_names
            .iter()
            .enumerate()
            .map(|(m, n)| (n.clone(), eig.row(m).iter().copied().collect()))
            .collect::<Vec<_>>(),
    )?;
    table_csv(
        &dir.join("var.csv"),
        &d.variables,
        &[],
        &[
            ("coord", r.var.coord.as_ref()),
            ("cor", r.var.cor.as_ref()),
            ("cos2", r.var.cos2.as_ref()),
            ("contrib", r.var.contrib.as_ref()),
        ],
    )?;
    table_csv(
        &dir.join("ind.csv"),
        &d.individuals,
        &[("dist", &r.ind.dist)],
        &[
            ("coord", r.ind.coord.as_ref()),
            ("cos2", r.ind.cos2.as_ref()),
            ("contrib", r.ind.contrib.as_ref()),
        ],
    )?;
    if let Some(t) = &r.ind_sup {
        table_csv(
            &dir.join("ind_sup.csv"),
            &d.supplementary,
            &[("dist", &t.dist)],
            &[("coord", t.coord.as_ref()), ("cos2", t.cos2.as_ref())],
        )?;
    }
    if let Some(t) = &r.quanti_sup {
        table_csv(
            &dir.join("quanti_sup.csv"),
            &d.quantitative,
            &[],
            &[
                ("coord", t.coord.as_ref()),
                ("cor", t.cor.as_ref()),
                ("cos2", t.cos2.as_ref()),
            ],
        )?;
    }
    if let Some(t) = &r.quali_sup {
        table_csv(
            &dir.join("quali_sup.csv"),
            &d.categories,
            &[("dist", &t.dist)],
            &[
                ("coord", t.coord.as_ref()),
                ("cos2", t.cos2.as_ref()),
                ("v_test", t.v_test.as_ref()),
            ],
        )?;
        table_csv(
            &dir.join("quali_sup_eta2.csv"),
            &d.qualitative,
            &[],
            &[("eta2", t.eta2.as_ref())],
        )?;
    }
    write_atomically(&dir.join("dimdesc.csv"), |out| {
        writeln!(out, "axis,kind,name,value,p_value")?;
        let num = |v: f64| {
            if v.is_finite() {
                format!("{v:?}")
            } else {
                String::new()
            }
        };
        for (m, axis) in r.dimdesc.iter().enumerate() {
            for c in &axis.quantitative {
                let name = csv_field(&variable_name(d, c.variable));
                writeln!(
                    out,
                    "{},correlation,{name},{},{}",
                    m + 1,
                    num(c.correlation),
                    num(c.p_value)
                )?;
            }
            for a in &axis.qualitative {
                let name = csv_field(&d.qualitative[a.column]);
                writeln!(out, "{},r2,{name},{},{}", m + 1, num(a.r2), num(a.p_value))?;
            }
            for c in &axis.categories {
                let name = csv_field(&d.categories[c.category]);
                writeln!(
                    out,
                    "{},estimate,{name},{},{}",
                    m + 1,
                    num(c.estimate),
                    num(c.p_value)
                )?;
            }
        }
        Ok(())
    })?;
    Ok(())
}

/// The interpretation figures of `d` into `dir` (principal-report draws them from the tables).
fn draw_figures(config: &DescribeConfig, dir: &Path, d: &Described) -> Result<()> {
    let model = load_model(&config.args.model)?;
    let groups = match (
        config.args.qualitative.first(),
        d.qualitative_values.first(),
    ) {
        (Some(name), Some(values)) => Some(group_parts(&d.description, 0, name, values)?),
        _ => None,
    };
    let it = interpretation(
        &d.description,
        model.model.scale().is_some(),
        &d.variables,
        &d.individuals,
        &d.quantitative,
        groups.as_ref(),
    );
    principal_report::write_interpretation_figures(&it, dir)
        .with_context(|| format!("cannot draw the figures into {}", dir.display()))?;
    Ok(())
}
