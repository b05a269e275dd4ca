//! What a fitted model's components mean, in FactoMineR's terms (`PCA()` and `dimdesc`): the
//! eigenvalues as percentages of the total variance, the variables' coordinates, correlations,
//! cos² and contributions, the individuals' coordinates, cos², contributions and distances,
//! and where supplementary individuals, quantitative and qualitative variables fall — projected,
//! never fitted.
//!
//! Conventions, as FactoMineR's (they match it exactly for a model fitted as it fits: ddof 0,
//! standardized for its `scale.unit = TRUE`):
//! - Rows carry weights `w` summing to 1 (uniform, 1/N, unless given; given weights are
//!   normalised), as FactoMineR's `row.w`. With ddof 1 the model's variances are
//!   `c = N/(N − 1)` times the weighted ones; the tables use the model's eigenvalues `λ` for
//!   coordinates of variables (`V√λ`), and the weighted variance of the coordinates, `λ/c`,
//!   where FactoMineR divides by the eigenvalue (contributions, v-tests), so contributions
//!   always sum to 100.
//! - Percentages are of the total variance (the trace), not of the kept components; distances
//!   and cos² are from the full distance to the centre, in the model's (scaled) units.
//! - Supplementary variables are computed from the active rows only; standardized, a
//!   supplementary quantitative variable is standardized by its own weighted standard
//!   deviation; unstandardized, its coordinate is its covariance with the unit-variance
//!   component and its correlation that over its standard deviation.
//! - A qualitative variable's categories are its distinct values in sorted (byte) order; each
//!   is the weighted barycentre of its rows, with `v_test = coord/√λ · √(n_k (N−1)/(N−n_k))`
//!   (`n_k`, `N` the sums of the weights as given) and η² the share of an axis's variance
//!   between the categories.
//! - Quotients of zero by zero (cos² of a point at the centre, a constant variable's
//!   correlation) are NaN, as in R.

mod dimdesc;

use faer::linalg::matmul::matmul;
use faer::{Accum, Mat, MatRef};

pub use crate::describe::dimdesc::{
    Association, AxisDescription, CategoryEffect, Correlation, Variable,
};
use crate::describe::dimdesc::{anova, correlation_p_value, weighted_correlation};
use crate::error::{PcaError, Result};
use crate::kernel::parallel::faer_par;
use crate::model::PcaModel;
use crate::preprocess::centre_scale_into;

/// FactoMineR's default number of axes described (`ncp = 5`).
pub const DEFAULT_AXES: usize = 5;

/// FactoMineR's default significance threshold of `dimdesc` (`proba = 0.05`).
pub const DEFAULT_SIGNIFICANCE: f64 = 0.05;

/// What to describe: the active rows (the model's features, in its order) and what is
/// projected onto the model without changing it.
#[derive(Clone, Debug)]
pub struct DescribeInput<'a> {
    /// The active individuals, N×D (usually the data the model was fitted to).
    pub data: MatRef<'a, f64>,
    /// Each active row's weight (any positive scale; FactoMineR's `row.w`); `None`: uniform.
    pub row_weights: Option<&'a [f64]>,
    /// Supplementary individuals, with the model's D features.
    pub supplementary_rows: Option<MatRef<'a, f64>>,
    /// Supplementary quantitative variables, one column per variable, one row per active row.
    pub quantitative: Option<MatRef<'a, f64>>,
    /// Supplementary qualitative variables: for each, the value of every active row.
    pub qualitative: &'a [Vec<String>],
    /// The number of axes described (at most the model's components).
    pub axes: usize,
    /// `dimdesc` keeps what has a p-value at most this.
    pub significance: f64,
    /// How many of the first axes `dimdesc` describes (at most `axes`).
    pub dimdesc_axes: usize,
}

impl<'a> DescribeInput<'a> {
    /// The active rows alone, with FactoMineR's defaults: 5 axes, 3 described by `dimdesc`
    /// at p ≤ 0.05.
    pub fn new(data: MatRef<'a, f64>) -> Self {
        DescribeInput {
            data,
            row_weights: None,
            supplementary_rows: None,
            quantitative: None,
            qualitative: &[],
            axes: DEFAULT_AXES,
            significance: DEFAULT_SIGNIFICANCE,
            dimdesc_axes: 3,
        }
    }
}

/// The eigenvalues (every component of the model).
#[derive(Clone, Debug, PartialEq)]
pub struct EigenTable {
    /// λ₁ ≥ … ≥ λ_M, the model's explained variances.
    pub eigenvalue: Vec<f64>,
    /// 100 λ_m / trace.
    pub percent: Vec<f64>,
    /// Running sum of `percent`.
    pub cumulative_percent: Vec<f64>,
}

/// The active variables (D rows, one column per axis).
#[derive(Clone, Debug, PartialEq)]
pub struct VariableTable {
    /// `V√λ`: each variable's covariance with the unit-variance component (its correlation
    /// when standardized).
    pub coord: Mat<f64>,
    /// Correlation of the variable with the component.
    pub cor: Mat<f64>,
    /// cor².
    pub cos2: Mat<f64>,
    /// Percent of the axis's variance from the variable: 100 V².
    pub contrib: Mat<f64>,
}

/// The active individuals (N rows, one column per axis).
#[derive(Clone, Debug, PartialEq)]
pub struct IndividualTable {
    /// The codes (projections onto the components).
    pub coord: Mat<f64>,
    /// coord² / dist².
    pub cos2: Mat<f64>,
    /// Percent of the axis's variance from the individual: 100 w coord² / (λ/c).
    pub contrib: Mat<f64>,
    /// Distance to the centre, in the model's (scaled) units.
    pub dist: Vec<f64>,
}

/// Supplementary individuals (one row each, one column per axis).
#[derive(Clone, Debug, PartialEq)]
pub struct SupplementaryIndividualTable {
    /// The codes.
    pub coord: Mat<f64>,
    /// coord² / dist².
    pub cos2: Mat<f64>,
    /// Distance to the centre.
    pub dist: Vec<f64>,
}

/// Supplementary quantitative variables (one row each, one column per axis).
#[derive(Clone, Debug, PartialEq)]
pub struct QuantitativeTable {
    /// Covariance (weighted, the model's ddof) with the unit-variance component, of the
    /// variable standardized when the model is.
    pub coord: Mat<f64>,
    /// Correlation with the component.
    pub cor: Mat<f64>,
    /// cor².
    pub cos2: Mat<f64>,
}

/// A category of a qualitative variable.
#[derive(Clone, Debug, PartialEq)]
pub struct Category {
    /// The qualitative variable, in the order given.
    pub column: usize,
    /// The value.
    pub level: String,
    /// The sum of the weights (as given) of its rows: its count without weights.
    pub weight: f64,
}

/// Supplementary qualitative variables: their categories' barycentres (one row per category,
/// one column per axis) and each variable's η² with each axis.
#[derive(Clone, Debug, PartialEq)]
pub struct QualitativeTable {
    /// The categories, variable by variable, values sorted.
    pub categories: Vec<Category>,
    /// The barycentre's codes.
    pub coord: Mat<f64>,
    /// coord² / dist².
    pub cos2: Mat<f64>,
    /// coord/√(λ/c) · √(n_k (N−1)/(N−n_k)); when the weights sum to at most 1,
    /// coord/√(λ/c) · √n_k (FactoMineR's rule).
    pub v_test: Mat<f64>,
    /// The barycentre's distance to the centre.
    pub dist: Vec<f64>,
    /// η² (correlation ratio) of each variable (row) with each axis (column).
    pub eta2: Mat<f64>,
}

/// Everything FactoMineR's `PCA()` and `dimdesc` report, for the first axes.
#[derive(Clone, Debug, PartialEq)]
pub struct Description {
    /// The eigenvalues.
    pub eig: EigenTable,
    /// The active variables.
    pub var: VariableTable,
    /// The active individuals.
    pub ind: IndividualTable,
    /// Supplementary individuals, when given.
    pub ind_sup: Option<SupplementaryIndividualTable>,
    /// Supplementary quantitative variables, when given.
    pub quanti_sup: Option<QuantitativeTable>,
    /// Supplementary qualitative variables, when given.
    pub quali_sup: Option<QualitativeTable>,
    /// Per axis (the first `dimdesc_axes`), what relates to it significantly.
    pub dimdesc: Vec<AxisDescription>,
}

fn invalid<T>(message: String) -> Result<T> {
    Err(PcaError::InvalidDescribeInput(message))
}

/// Describes `model` on `input` (see the module's conventions).
///
/// Fails when a width or length disagrees with the model or the active rows, a value is not
/// finite (naming its row and column), or a weight is negative, not finite, or all are zero.
pub fn describe(model: &PcaModel, input: &DescribeInput<'_>) -> Result<Description> {
    let (n, d) = (input.data.nrows(), input.data.ncols());
    if d != model.n_features() {
        return Err(PcaError::FeatureMismatch {
            expected: model.n_features(),
            found: d,
        });
    }
    if n <= model.ddof() {
        return Err(PcaError::TooFewSamples {
            n_samples: n,
            ddof: model.ddof(),
        });
    }
    let raw = match input.row_weights {
        Some(r) => {
            if r.len() != n {
                return invalid(format!("{} row weights for {n} rows", r.len()));
            }
            if let Some(i) = r.iter().position(|v| !v.is_finite() || *v < 0.0) {
                return invalid(format!(
                    "row weight {} at row {i} is not a non-negative number (rows count from 0)",
                    r[i]
                ));
            }
            r.to_vec()
        }
        None => vec![1.0; n],
    };
    let total_raw: f64 = raw.iter().sum();
    if total_raw <= 0.0 {
        return invalid("the row weights sum to zero".into());
    }
    let w: Vec<f64> = raw.iter().map(|r| r / total_raw).collect();
    let c = n as f64 / (n - model.ddof()) as f64;
    let k = input.axes.min(model.n_components());
    if k == 0 {
        return invalid("at least 1 axis must be described".into());
    }
    let lambda = &model.explained_variance()[..k];
    // The weighted variance of the coordinates along each axis: FactoMineR's eigenvalue.
    let lambda_w: Vec<f64> = lambda.iter().map(|l| l / c).collect();
    let basis = model.components().subrows(0, k);

    let eig = eigen_table(model);

    let y = prepared(model, input.data)?;
    let coord = project(y.as_ref(), basis);
    let dist2 = row_norms2(y.as_ref());
    let ind = IndividualTable {
        cos2: cos2(coord.as_ref(), &dist2),
        contrib: Mat::from_fn(n, k, |i, m| {
            100.0 * w[i] * coord[(i, m)].powi(2) / lambda_w[m]
        }),
        dist: dist2.iter().map(|v| v.sqrt()).collect(),
        coord,
    };

    let var_coord = Mat::from_fn(d, k, |j, m| basis[(m, j)] * lambda[m].sqrt());
    // Each scaled column's weighted variance, in the model's ddof.
    let column_var: Vec<f64> = (0..d)
        .map(|j| c * (0..n).map(|i| w[i] * y[(i, j)].powi(2)).sum::<f64>())
        .collect();
    let var_cor = Mat::from_fn(d, k, |j, m| var_coord[(j, m)] / column_var[j].sqrt());
    let var = VariableTable {
        cos2: Mat::from_fn(d, k, |j, m| var_cor[(j, m)].powi(2)),
        contrib: Mat::from_fn(d, k, |j, m| 100.0 * basis[(m, j)].powi(2)),
        coord: var_coord,
        cor: var_cor,
    };

    let ind_sup = match input.supplementary_rows {
        Some(rows) => {
            if rows.ncols() != d {
                return invalid(format!(
                    "the supplementary rows have {} columns but the model has {d} features",
                    rows.ncols()
                ));
            }
            let ys = prepared(model, rows)?;
            let coord = project(ys.as_ref(), basis);
            let dist2 = row_norms2(ys.as_ref());
            Some(SupplementaryIndividualTable {
                cos2: cos2(coord.as_ref(), &dist2),
                dist: dist2.iter().map(|v| v.sqrt()).collect(),
                coord,
            })
        }
        None => None,
    };

    // The unit-variance components (in the model's ddof): coordinates over √λ.
    let unit = Mat::from_fn(n, k, |i, m| ind.coord[(i, m)] / lambda[m].sqrt());
    let standardized = model.scale().is_some();
    let quanti_sup = match input.quantitative {
        Some(q) if q.ncols() > 0 => {
            if q.nrows() != n {
                return invalid(format!(
                    "the supplementary quantitative columns have {} rows but the data has {n}",
                    q.nrows()
                ));
            }
            check_finite(q, "supplementary quantitative columns")?;
            let nq = q.ncols();
            let mut coord = Mat::zeros(nq, k);
            let mut cor = Mat::zeros(nq, k);
            for v in 0..nq {
                let mean: f64 = (0..n).map(|i| w[i] * q[(i, v)]).sum();
                let var_w: f64 = (0..n).map(|i| w[i] * (q[(i, v)] - mean).powi(2)).sum();
                let sd = if standardized {
                    let sd = (c * var_w).sqrt();
                    if sd <= 1e-16 { 1.0 } else { sd }
                } else {
                    1.0
                };
                let t: Vec<f64> = (0..n).map(|i| (q[(i, v)] - mean) / sd).collect();
                let norm = (c * t.iter().zip(&w).map(|(t, w)| w * t * t).sum::<f64>()).sqrt();
                for m in 0..k {
                    let cov = c * (0..n).map(|i| w[i] * t[i] * unit[(i, m)]).sum::<f64>();
                    coord[(v, m)] = cov;
                    cor[(v, m)] = cov / norm;
                }
            }
            Some(QuantitativeTable {
                cos2: Mat::from_fn(nq, k, |v, m| cor[(v, m)].powi(2)),
                coord,
                cor,
            })
        }
        _ => None,
    };

    let groups = qualitative_groups(input.qualitative, n, &raw)?;
    let quali_sup = if groups.is_empty() {
        None
    } else {
        Some(qualitative_table(
            &groups,
            y.as_ref(),
            &ind.coord,
            basis,
            &w,
            &raw,
            &lambda_w,
        ))
    };

    let dimdesc = (0..input.dimdesc_axes.min(k))
        .map(|m| {
            describe_axis(
                ind.coord
                    .col(m)
                    .iter()
                    .copied()
                    .collect::<Vec<_>>()
                    .as_slice(),
                input,
                &groups,
                &raw,
                quali_sup.as_ref(),
            )
        })
        .collect();

    Ok(Description {
        eig,
        var,
        ind,
        ind_sup,
        quanti_sup,
        quali_sup,
        dimdesc,
    })
}

fn eigen_table(model: &PcaModel) -> EigenTable {
    let total = model.total_variance();
    let eigenvalue = model.explained_variance().to_vec();
    let percent: Vec<f64> = eigenvalue.iter().map(|l| 100.0 * l / total).collect();
    let cumulative_percent = percent
        .iter()
        .scan(0.0, |sum, p| {
            *sum += p;
            Some(*sum)
        })
        .collect();
    EigenTable {
        eigenvalue,
        percent,
        cumulative_percent,
    }
}

fn check_finite(x: MatRef<'_, f64>, what: &str) -> Result<()> {
    for j in 0..x.ncols() {
        for i in 0..x.nrows() {
            let v = x[(i, j)];
            if !v.is_finite() {
                return invalid(format!(
                    "non-finite value {v} in the {what} at row {i}, column {j} (rows and columns count from 0)"
                ));
            }
        }
    }
    Ok(())
}

/// `(x − μ)/σ` with the model's mean and scale.
fn prepared(model: &PcaModel, x: MatRef<'_, f64>) -> Result<Mat<f64>> {
    for j in 0..x.ncols() {
        for i in 0..x.nrows() {
            if !x[(i, j)].is_finite() {
                return Err(PcaError::NonFinite {
                    row: i,
                    column: j,
                    value: x[(i, j)],
                });
            }
        }
    }
    let mut y = Mat::zeros(x.nrows(), x.ncols());
    centre_scale_into(x, model.mean(), model.scale(), y.as_mut());
    Ok(y)
}

/// `y · basisᵀ`.
fn project(y: MatRef<'_, f64>, basis: MatRef<'_, f64>) -> Mat<f64> {
    let mut z = Mat::zeros(y.nrows(), basis.nrows());
    matmul(
        z.as_mut(),
        Accum::Replace,
        y,
        basis.transpose(),
        1.0,
        faer_par(),
    );
    z
}

fn row_norms2(y: MatRef<'_, f64>) -> Vec<f64> {
    (0..y.nrows())
        .map(|i| y.row(i).iter().map(|v| v * v).sum())
        .collect()
}

fn cos2(coord: MatRef<'_, f64>, dist2: &[f64]) -> Mat<f64> {
    Mat::from_fn(coord.nrows(), coord.ncols(), |i, m| {
        coord[(i, m)].powi(2) / dist2[i]
    })
}

/// One qualitative variable's rows by category: the sorted levels and each row's level.
struct Groups {
    levels: Vec<String>,
    of_row: Vec<usize>,
    /// Sum of the weights as given, per level.
    raw_weight: Vec<f64>,
}

fn qualitative_groups(columns: &[Vec<String>], n: usize, raw: &[f64]) -> Result<Vec<Groups>> {
    columns
        .iter()
        .enumerate()
        .map(|(v, values)| {
            if values.len() != n {
                return invalid(format!(
                    "qualitative column {v} has {} values for {n} rows",
                    values.len()
                ));
            }
            let mut levels: Vec<String> = values.to_vec();
            levels.sort();
            levels.dedup();
            let of_row: Vec<usize> = values
                .iter()
                .map(|s| levels.binary_search(s).expect("every value is a level"))
                .collect();
            let mut raw_weight = vec![0.0; levels.len()];
            for (&g, r) in of_row.iter().zip(raw) {
                raw_weight[g] += r;
            }
            Ok(Groups {
                levels,
                of_row,
                raw_weight,
            })
        })
        .collect()
}

fn qualitative_table(
    groups: &[Groups],
    y: MatRef<'_, f64>,
    coord_ind: &Mat<f64>,
    basis: MatRef<'_, f64>,
    w: &[f64],
    raw: &[f64],
    lambda_w: &[f64],
) -> QualitativeTable {
    let (n, d, k) = (y.nrows(), y.ncols(), basis.nrows());
    let total_raw: f64 = raw.iter().sum();
    let n_categories: usize = groups.iter().map(|g| g.levels.len()).sum();
    let mut categories = Vec::with_capacity(n_categories);
    // The barycentres of the scaled rows: (barycentre − μ)/σ, as the map is affine.
    let mut bary = Mat::<f64>::zeros(n_categories, d);
    let mut eta2 = Mat::zeros(groups.len(), k);
    let mut first = 0;
    for (v, g) in groups.iter().enumerate() {
        let mut weight = vec![0.0; g.levels.len()];
        for i in 0..n {
            let row = first + g.of_row[i];
            weight[g.of_row[i]] += w[i];
            for j in 0..d {
                bary[(row, j)] += w[i] * y[(i, j)];
            }
        }
        for (l, level) in g.levels.iter().enumerate() {
            for j in 0..d {
                bary[(first + l, j)] /= weight[l];
            }
            categories.push(Category {
                column: v,
                level: level.clone(),
                weight: g.raw_weight[l],
            });
        }
        for m in 0..k {
            let mut sums = vec![0.0; g.levels.len()];
            let mut total = 0.0;
            for i in 0..n {
                sums[g.of_row[i]] += w[i] * coord_ind[(i, m)];
                total += w[i] * coord_ind[(i, m)].powi(2);
            }
            let between: f64 = sums.iter().zip(&weight).map(|(s, w)| s * s / w).sum();
            eta2[(v, m)] = between / total;
        }
        first += g.levels.len();
    }
    let coord = project(bary.as_ref(), basis);
    let dist2 = row_norms2(bary.as_ref());
    let v_test = Mat::from_fn(n_categories, k, |r, m| {
        let n_k = categories[r].weight;
        let factor = if total_raw > 1.0 {
            (n_k / ((total_raw - n_k) / (total_raw - 1.0))).sqrt()
        } else {
            n_k.sqrt()
        };
        coord[(r, m)] / lambda_w[m].sqrt() * factor
    });
    QualitativeTable {
        categories,
        cos2: cos2(coord.as_ref(), &dist2),
        dist: dist2.iter().map(|v| v.sqrt()).collect(),
        v_test,
        eta2,
        coord,
    }
}

/// `condes` of one axis's coordinates `y` against every variable.
fn describe_axis(
    y: &[f64],
    input: &DescribeInput<'_>,
    groups: &[Groups],
    raw: &[f64],
    quali: Option<&QualitativeTable>,
) -> AxisDescription {
    let n = y.len();
    // condes's weights: as given, scaled up to the row count when they sum to less than 3.
    let total: f64 = raw.iter().sum();
    let r: Vec<f64> = if total < 3.0 {
        raw.iter().map(|v| v * n as f64).collect()
    } else {
        raw.to_vec()
    };
    let count: f64 = r.iter().sum();
    let w: Vec<f64> = r.iter().map(|v| v / count).collect();
    let threshold = input.significance;
    let mut quantitative = Vec::new();
    let mut push = |variable: Variable, x: Vec<f64>| {
        let correlation = weighted_correlation(&x, y, &w);
        let p_value = correlation_p_value(correlation, count);
        if p_value <= threshold {
            quantitative.push(Correlation {
                variable,
                correlation,
                p_value,
            });
        }
    };
    for j in 0..input.data.ncols() {
        push(
            Variable::Active(j),
            input.data.col(j).iter().copied().collect(),
        );
    }
    if let Some(q) = input.quantitative {
        for v in 0..q.ncols() {
            push(
                Variable::Quantitative(v),
                q.col(v).iter().copied().collect(),
            );
        }
    }
    // Decreasing correlation; R's rev(order()) reverses ties too.
    quantitative.sort_by(|a, b| b.correlation.total_cmp(&a.correlation));

    let mut qualitative = Vec::new();
    let mut categories = Vec::new();
    let mut first = 0;
    for (v, g) in groups.iter().enumerate() {
        let k = g.levels.len();
        if k >= 2 {
            let a = anova(y, &g.of_row, k, &r);
            if a.p_value <= threshold {
                qualitative.push(Association {
                    column: v,
                    r2: a.r2,
                    p_value: a.p_value,
                });
            }
            for l in 0..k {
                if a.p_values[l] <= threshold {
                    categories.push(CategoryEffect {
                        category: first + l,
                        estimate: a.estimates[l],
                        p_value: a.p_values[l],
                    });
                }
            }
        }
        first += k;
    }
    debug_assert!(quali.is_none_or(|t| t.categories.len() == first));
    qualitative.sort_by(|a, b| a.p_value.total_cmp(&b.p_value));
    let key = |e: &CategoryEffect| e.estimate.signum() / e.p_value;
    categories.sort_by(|a, b| key(b).total_cmp(&key(a)));
    AxisDescription {
        quantitative,
        qualitative,
        categories,
    }
}

#[cfg(test)]
mod tests {
    use faer::Mat;

    use super::*;
    use crate::options::{ComponentCount, Scaling};
    use crate::params::PcaBuilder;

    fn data() -> Mat<f64> {
        Mat::from_fn(12, 4, |i, j| {
            let t = i as f64;
            ((t + 1.0) * (j as f64 + 2.0)).sin() * 3.0 + t * (j as f64 - 1.5) * 0.2
        })
    }

    fn fit(x: &Mat<f64>, scaling: Scaling, ddof: usize) -> PcaModel {
        PcaBuilder::new()
            .scaling(scaling)
            .ddof(ddof)
            .components(ComponentCount::Fixed(4))
            .build()
            .unwrap()
            .fit(x.as_ref())
            .unwrap()
    }

    /// The relations FactoMineR's tables satisfy on the data the model was fitted to: every
    /// column of contributions sums to 100, an individual's cos² over all axes is 1, the
    /// variables' coordinates are their correlations when standardized, and percentages add
    /// up to 100 over every component.
    #[test]
    fn tables_satisfy_their_relations() {
        let x = data();
        for (scaling, ddof) in [
            (Scaling::Standardize, 0),
            (Scaling::Centre, 0),
            (Scaling::Standardize, 1),
            (Scaling::Centre, 1),
        ] {
            let model = fit(&x, scaling, ddof);
            let d = describe(&model, &DescribeInput::new(x.as_ref())).unwrap();
            for m in 0..4 {
                let sum: f64 = d.ind.contrib.col(m).iter().sum();
                assert!((sum - 100.0).abs() < 1e-9, "ind contrib {sum}");
                let sum: f64 = d.var.contrib.col(m).iter().sum();
                assert!((sum - 100.0).abs() < 1e-9, "var contrib {sum}");
            }
            for i in 0..12 {
                let sum: f64 = d.ind.cos2.row(i).iter().sum();
                assert!((sum - 1.0).abs() < 1e-9, "ind cos2 {sum}");
            }
            for j in 0..4 {
                let sum: f64 = d.var.cos2.row(j).iter().sum();
                assert!((sum - 1.0).abs() < 1e-9, "var cos2 {sum}");
            }
            let total = d.eig.cumulative_percent[3];
            assert!((total - 100.0).abs() < 1e-9);
        }
    }

    /// An active variable given again as a supplementary one lands exactly where it is, and
    /// a supplementary copy of an active row too.
    #[test]
    fn supplementary_copies_land_on_the_active_ones() {
        let x = data();
        for scaling in [Scaling::Standardize, Scaling::Centre] {
            for ddof in [0, 1] {
                let model = fit(&x, scaling, ddof);
                let copy = x.subcols(1, 1);
                let rows = x.subrows(3, 2);
                let input = DescribeInput {
                    quantitative: Some(copy),
                    supplementary_rows: Some(rows),
                    ..DescribeInput::new(x.as_ref())
                };
                let d = describe(&model, &input).unwrap();
                let q = d.quanti_sup.unwrap();
                let s = d.ind_sup.unwrap();
                for m in 0..4 {
                    assert!((q.coord[(0, m)] - d.var.coord[(1, m)]).abs() < 1e-9);
                    assert!((q.cor[(0, m)] - d.var.cor[(1, m)]).abs() < 1e-9);
                    assert!((s.coord[(1, m)] - d.ind.coord[(4, m)]).abs() < 1e-9);
                }
            }
        }
    }

    /// A category's barycentre is the weighted mean of its rows' coordinates; η² of a
    /// variable with one row per category is 1; integer weights act as repeated rows.
    #[test]
    fn categories_are_barycentres_and_weights_repeat_rows() {
        let x = data();
        let model = fit(&x, Scaling::Standardize, 0);
        let labels: Vec<String> = (0..12)
            .map(|i| ["a", "b", "c"][i % 3].to_string())
            .collect();
        let own: Vec<String> = (0..12).map(|i| format!("r{i:02}")).collect();
        let qualitative = vec![labels, own];
        let input = DescribeInput {
            qualitative: &qualitative,
            ..DescribeInput::new(x.as_ref())
        };
        let d = describe(&model, &input).unwrap();
        let q = d.quali_sup.unwrap();
        assert_eq!(q.categories.len(), 3 + 12);
        assert_eq!(q.categories[1].level, "b");
        for m in 0..4 {
            let mean: f64 = (0..12)
                .filter(|i| i % 3 == 1)
                .map(|i| d.ind.coord[(i, m)])
                .sum::<f64>()
                / 4.0;
            assert!((q.coord[(1, m)] - mean).abs() < 1e-9);
            assert!((q.eta2[(1, m)] - 1.0).abs() < 1e-9);
        }
        // Row 0 twice (weight 2) is the data with row 0 repeated.
        let mut weights = vec![1.0; 12];
        weights[0] = 2.0;
        let repeated = Mat::from_fn(13, 4, |i, j| x[(i.saturating_sub(1), j)]);
        let weighted_model = fit(&repeated, Scaling::Standardize, 0);
        let input = DescribeInput {
            row_weights: Some(&weights),
            ..DescribeInput::new(x.as_ref())
        };
        let weighted = describe(&weighted_model, &input).unwrap();
        let plain = describe(&weighted_model, &DescribeInput::new(repeated.as_ref())).unwrap();
        for m in 0..4 {
            assert!((weighted.ind.contrib[(0, m)] - 2.0 * plain.ind.contrib[(0, m)]).abs() < 1e-9);
            for j in 0..4 {
                assert!((weighted.var.cor[(j, m)] - plain.var.cor[(j, m)]).abs() < 1e-9);
            }
        }
    }

    #[test]
    fn bad_inputs_are_errors_naming_the_value() {
        let x = data();
        let model = fit(&x, Scaling::Standardize, 0);
        let weights = vec![-1.0; 12];
        let input = DescribeInput {
            row_weights: Some(&weights),
            ..DescribeInput::new(x.as_ref())
        };
        let err = describe(&model, &input).unwrap_err().to_string();
        assert!(err.contains("row weight -1 at row 0"), "{err}");
        let err = describe(&model, &DescribeInput::new(x.subcols(0, 3)))
            .unwrap_err()
            .to_string();
        assert!(err.contains("3 features"), "{err}");
    }
}
