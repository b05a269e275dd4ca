//! `dimdesc`: the variables significantly related to one axis, as FactoMineR's `dimdesc` finds
//! them with `condes` — the weighted correlation of each quantitative variable with the axis
//! (Student's t test), the one-way analysis of variance of the axis by each qualitative
//! variable (F test, R²), and each category's deviation from the mean of the category means
//! (the t test of the category's indicator).

use statrs::function::beta::beta_reg;

/// A quantitative variable: an active column of the model or a supplementary one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variable {
    /// Column `j` of the active data (a feature of the model).
    Active(usize),
    /// Supplementary quantitative column `q`, in the order given.
    Quantitative(usize),
}

/// A quantitative variable's correlation with an axis.
#[derive(Clone, Debug, PartialEq)]
pub struct Correlation {
    /// Which variable.
    pub variable: Variable,
    /// The weighted correlation with the individuals' coordinates on the axis.
    pub correlation: f64,
    /// Two-sided p-value of Student's t test of no correlation.
    pub p_value: f64,
}

/// A qualitative variable's association with an axis (one-way analysis of variance).
#[derive(Clone, Debug, PartialEq)]
pub struct Association {
    /// Qualitative column, in the order given.
    pub column: usize,
    /// η²: the share of the axis's (weighted) variance between the categories.
    pub r2: f64,
    /// p-value of the F test of equal category means.
    pub p_value: f64,
}

/// A category's effect on an axis.
#[derive(Clone, Debug, PartialEq)]
pub struct CategoryEffect {
    /// Index into the description's categories ([`crate::describe::QualitativeTable::categories`]).
    pub category: usize,
    /// The category's mean coordinate less the (unweighted) mean of its variable's category
    /// means (R's `contr.sum` coefficient).
    pub estimate: f64,
    /// Two-sided p-value of the t test of the category indicator's correlation with the axis.
    pub p_value: f64,
}

/// What relates significantly to one axis, each list sorted as FactoMineR sorts it.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct AxisDescription {
    /// Quantitative variables (active and supplementary) with p-value ≤ the threshold, by
    /// decreasing correlation.
    pub quantitative: Vec<Correlation>,
    /// Qualitative variables with p-value ≤ the threshold, by increasing p-value.
    pub qualitative: Vec<Association>,
    /// Categories with p-value ≤ the threshold, by decreasing sign(estimate) / p-value.
    pub categories: Vec<CategoryEffect>,
}

/// The weighted (maximum-likelihood) correlation of `x` and `y`; `w` sums to 1. NaN when
/// either is constant.
pub(crate) fn weighted_correlation(x: &[f64], y: &[f64], w: &[f64]) -> f64 {
    let mx: f64 = x.iter().zip(w).map(|(a, w)| a * w).sum();
    let my: f64 = y.iter().zip(w).map(|(a, w)| a * w).sum();
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for ((a, b), w) in x.iter().zip(y).zip(w) {
        let (dx, dy) = (a - mx, b - my);
        sxy += w * dx * dy;
        sxx += w * dx * dx;
        syy += w * dy * dy;
    }
    sxy / (sxx * syy).sqrt()
}

/// Two-sided p-value of Student's t test of a correlation `r` over an effective count `n`
/// (t = √(n−2) |r| / √(1 − r²) on n − 2 degrees of freedom): `I_{1−r²}((n−2)/2, 1/2)`.
pub(crate) fn correlation_p_value(r: f64, n: f64) -> f64 {
    let df = n - 2.0;
    if !r.is_finite() || df <= 0.0 {
        return f64::NAN;
    }
    let x = (1.0 - r * r).clamp(0.0, 1.0);
    beta_reg(df / 2.0, 0.5, x)
}

/// Upper tail of Fisher's F distribution with `(d1, d2)` degrees of freedom at `f`.
pub(crate) fn f_upper_tail(f: f64, d1: f64, d2: f64) -> f64 {
    if !f.is_finite() || d1 <= 0.0 || d2 <= 0.0 {
        return if f == f64::INFINITY { 0.0 } else { f64::NAN };
    }
    beta_reg(d2 / 2.0, d1 / 2.0, (d2 / (d2 + d1 * f)).clamp(0.0, 1.0))
}

/// One qualitative variable's analysis of variance of `y`: its η², p-value, and each
/// category's estimate and p-value. `groups[i]` is row i's category (0..k), `r` the rows'
/// weights as condes uses them (raw, summing to `n`).
pub(crate) struct Anova {
    pub(crate) r2: f64,
    pub(crate) p_value: f64,
    pub(crate) estimates: Vec<f64>,
    pub(crate) p_values: Vec<f64>,
}

pub(crate) fn anova(y: &[f64], groups: &[usize], k: usize, r: &[f64]) -> Anova {
    let n: f64 = r.iter().sum();
    let mut weight = vec![0.0; k];
    let mut sum = vec![0.0; k];
    for ((&g, &yi), &ri) in groups.iter().zip(y).zip(r) {
        weight[g] += ri;
        sum[g] += ri * yi;
    }
    let means: Vec<f64> = sum.iter().zip(&weight).map(|(s, w)| s / w).collect();
    let grand: f64 = y.iter().zip(r).map(|(a, w)| a * w).sum::<f64>() / n;
    let between: f64 = (0..k).map(|g| weight[g] * (means[g] - grand).powi(2)).sum();
    let within: f64 = groups
        .iter()
        .zip(y)
        .zip(r)
        .map(|((&g, &yi), &ri)| ri * (yi - means[g]).powi(2))
        .sum();
    let (d1, d2) = ((k - 1) as f64, n - k as f64);
    let f = (between / d1) / (within / d2);
    let centre = means.iter().sum::<f64>() / k as f64;
    let estimates = means.iter().map(|m| m - centre).collect();
    let normalised: Vec<f64> = r.iter().map(|ri| ri / n).collect();
    let p_values = (0..k)
        .map(|g| {
            let indicator: Vec<f64> = groups.iter().map(|&h| f64::from(h == g)).collect();
            correlation_p_value(weighted_correlation(&indicator, y, &normalised), n)
        })
        .collect();
    Anova {
        r2: between / (between + within),
        p_value: f_upper_tail(f, d1, d2),
        estimates,
        p_values,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// R: `2 * pt(sqrt(8) * sqrt(0.25 / 0.75), 8, lower.tail = FALSE)` for r = 0.5, n = 10.
    #[test]
    fn correlation_p_value_matches_r() {
        let p = correlation_p_value(0.5, 10.0);
        assert!((p - 0.141_113_281_250_000_03).abs() < 1e-12, "{p}");
    }

    /// R: `pf(3, 2, 10, lower.tail = FALSE)`.
    #[test]
    fn f_tail_matches_r() {
        let p = f_upper_tail(3.0, 2.0, 10.0);
        assert!((p - 0.095_367_431_640_624_97).abs() < 1e-12, "{p}");
    }

    /// The estimates of R's `contr.sum` are the group means less their unweighted mean (not
    /// the grand mean, when the groups differ in size); η² is between / total.
    #[test]
    fn anova_of_two_unequal_groups() {
        let y = [1.0, 2.0, 3.0, 7.0, 8.0];
        let groups = [0, 0, 0, 1, 1];
        let a = anova(&y, &groups, 2, &[1.0; 5]);
        // Means 2 and 7.5, centre 4.75.
        assert!((a.estimates[0] + 2.75).abs() < 1e-12 && (a.estimates[1] - 2.75).abs() < 1e-12);
        // Grand mean 4.2: between 3·2.2² + 2·3.3² = 36.3, within 2 + 0.5.
        assert!((a.r2 - 36.3 / 38.8).abs() < 1e-12);
    }
}
