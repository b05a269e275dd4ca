//! Reference fixtures computed with numpy and cross-checked against scikit-learn
//! (`fixtures/generate.py`; the JSON files are committed, so no Python is needed here).
//!
//! Every case is fitted with every solver (covariance, gram, svd and auto) and every field is
//! compared at 1e-10, scaled by the magnitude of what is compared:
//! - mean, scale, total variance, eigenvalues, ratios, singular values, noise variance:
//!   `|a − b| ≤ 1e-10 · max(1, |b|)`;
//! - components (unit vectors): `|a − b| ≤ 1e-10` per entry;
//! - codes: `1e-10 · R + 4 ε √D · max_j |μ_j| / σ_j`, with R the largest row norm of the centred
//!   (scaled) data, old or new. The second term is the rounding of the mean itself (ε|μ| per
//!   entry, in the reference and in the library), which matters only for the 1e6-offset case;
//! - reconstructions, feature j: `1e-10 · R · σ_j + 4 ε · max(|μ_j|, |b|)`: the codes' error
//!   scaled back, plus the rounding of adding the mean back.
//!
//! One exception, explained by rounding alone: a singular value is `sqrt(λ (N − ddof))`, and the
//! solvers that diagonalize a product (covariance, gram) know λ only to an absolute
//! `c · ε · λ₁` (backward-stable symmetric eigensolver). Through the square root this becomes
//! `min(δλ (N − ddof) / (2 s), sqrt(δλ (N − ddof)))`, negligible except for a singular value that
//! is zero in exact arithmetic (the centring null direction of the wide "all" case). That term
//! is added to the singular-value tolerance of those two solvers only, with `δλ = 64 ε λ₁`.
//!
//! Components with a zero eigenvalue are not unique (any unit vector of the null space fits):
//! a fixture's `compare_components` says how many rows are compared entry by entry; the rest are
//! checked to be unit vectors orthogonal to the others, and the codes of new data are compared
//! only in the determined columns.

use std::collections::BTreeSet;

use principal::faer::Mat;
use principal::{ComponentCount, PcaBuilder, PcaModel, Scaling, Solver};
use serde_json::Value;

use crate::fixture_files;
use fixture_files::{fixture_tests, fixtures_dir, json_stems};

const TOL: f64 = 1e-10;
const EPS: f64 = f64::EPSILON;
const SOLVERS: [Solver; 4] = [Solver::Covariance, Solver::Gram, Solver::Svd, Solver::Auto];
/// Messages shown per failing case (the count of all failures is always shown).
const MAX_MESSAGES: usize = 60;

/// One fixture file, parsed.
struct Case {
    name: String,
    count: ComponentCount,
    standardize: bool,
    ddof: usize,
    m: usize,
    compare: usize,
    x: Mat<f64>,
    mean: Vec<f64>,
    scale: Option<Vec<f64>>,
    zero_variance_features: Vec<usize>,
    total_variance: f64,
    components: Mat<f64>,
    explained_variance: Vec<f64>,
    explained_variance_ratio: Vec<f64>,
    singular_values: Vec<f64>,
    noise_variance: f64,
    transform: Mat<f64>,
    inverse: Mat<f64>,
    x_new: Mat<f64>,
    transform_new: Mat<f64>,
}

fn field<'a>(v: &'a Value, key: &str, case: &str) -> &'a Value {
    v.get(key)
        .unwrap_or_else(|| panic!("fixture {case}: missing field {key:?}"))
}

fn number(v: &Value, what: &str) -> f64 {
    v.as_f64()
        .unwrap_or_else(|| panic!("{what}: not a number: {v}"))
}

fn vector(v: &Value, what: &str) -> Vec<f64> {
    let items = v
        .as_array()
        .unwrap_or_else(|| panic!("{what}: not an array"));
    items
        .iter()
        .enumerate()
        .map(|(i, x)| number(x, &format!("{what}[{i}]")))
        .collect()
}

fn matrix(v: &Value, what: &str) -> Mat<f64> {
    let rows: Vec<Vec<f64>> = v
        .as_array()
        .unwrap_or_else(|| panic!("{what}: not an array of rows"))
        .iter()
        .enumerate()
        .map(|(i, r)| vector(r, &format!("{what}[{i}]")))
        .collect();
    let ncols = rows.first().map_or(0, Vec::len);
    assert!(rows.iter().all(|r| r.len() == ncols), "{what}: ragged rows");
    Mat::from_fn(rows.len(), ncols, |i, j| rows[i][j])
}

fn load(name: &str) -> Case {
    let path = fixtures_dir().join(format!("{name}.json"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let v: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()));
    let f = |key: &str| field(&v, key, name);
    assert_eq!(
        f("name").as_str(),
        Some(name),
        "fixture {name}: name field differs from the file name"
    );
    let params = f("params");
    let p = |key: &str| field(params, key, name);
    let nc = p("n_components");
    let count = if let Some(k) = nc.as_u64() {
        ComponentCount::Fixed(k as usize)
    } else {
        ComponentCount::VarianceFraction(number(nc, "n_components"))
    };
    let scale = match f("scale") {
        Value::Null => None,
        s => Some(vector(s, "scale")),
    };
    let m = f("n_components_chosen")
        .as_u64()
        .expect("n_components_chosen") as usize;
    Case {
        name: name.to_string(),
        count,
        standardize: p("standardize").as_bool().expect("standardize"),
        ddof: p("ddof").as_u64().expect("ddof") as usize,
        m,
        compare: f("compare_components").as_u64().map_or(m, |k| k as usize),
        x: matrix(f("x"), "x"),
        mean: vector(f("mean"), "mean"),
        scale,
        zero_variance_features: f("zero_variance_features")
            .as_array()
            .expect("zero_variance_features")
            .iter()
            .map(|j| j.as_u64().expect("feature index") as usize)
            .collect(),
        total_variance: number(f("total_variance"), "total_variance"),
        components: matrix(f("components"), "components"),
        explained_variance: vector(f("explained_variance"), "explained_variance"),
        explained_variance_ratio: vector(f("explained_variance_ratio"), "explained_variance_ratio"),
        singular_values: vector(f("singular_values"), "singular_values"),
        noise_variance: number(f("noise_variance"), "noise_variance"),
        transform: matrix(f("transform"), "transform"),
        inverse: matrix(f("inverse"), "inverse"),
        x_new: matrix(f("x_new"), "x_new"),
        transform_new: matrix(f("transform_new"), "transform_new"),
    }
}

/// Collects every mismatch of one case, naming solver, field and index.
struct Checker {
    case: String,
    run: String,
    failures: Vec<String>,
    /// Largest error/tolerance ratio per (run, field), printed with `--nocapture`.
    worst: Vec<(String, &'static str, f64)>,
}

impl Checker {
    fn check(&mut self, field: &'static str, index: String, got: f64, want: f64, tol: f64) {
        let err = (got - want).abs();
        let ratio = if err == 0.0 { 0.0 } else { err / tol };
        match self
            .worst
            .iter_mut()
            .find(|(r, f, _)| *r == self.run && *f == field)
        {
            Some(w) => w.2 = w.2.max(ratio),
            None => self.worst.push((self.run.clone(), field, ratio)),
        }
        if err.is_nan() || err > tol {
            self.failures.push(format!(
                "case {}, {}: {field}{index} = {got:e}, expected {want:e}, |diff| {err:.3e} > tol {tol:.3e}",
                self.case, self.run
            ));
        }
    }

    fn fail(&mut self, message: String) {
        self.failures
            .push(format!("case {}, {}: {message}", self.case, self.run));
    }
}

fn max_row_norm(x: &Mat<f64>, mean: &[f64], scale: Option<&[f64]>) -> f64 {
    (0..x.nrows())
        .map(|i| {
            (0..x.ncols())
                .map(|j| {
                    let v = (x[(i, j)] - mean[j]) / scale.map_or(1.0, |s| s[j]);
                    v * v
                })
                .sum::<f64>()
                .sqrt()
        })
        .fold(0.0, f64::max)
}

fn check_model(case: &Case, model: &PcaModel, requested: Solver, ck: &mut Checker) {
    let (n, d) = (case.x.nrows(), case.x.ncols());
    let rel = |b: f64| TOL * b.abs().max(1.0);

    // Shape and bookkeeping.
    if model.n_components() != case.m {
        ck.fail(format!(
            "n_components = {}, expected {}",
            model.n_components(),
            case.m
        ));
        return;
    }
    // `auto` must record what it resolved to; on these small exact-reference cases that is one
    // of the exact solvers (the comparisons below would fail for an approximate one anyway).
    let resolved_ok = match requested {
        Solver::Auto => matches!(
            model.solver(),
            Solver::Covariance | Solver::Gram | Solver::Svd
        ),
        other => model.solver() == other,
    };
    if !resolved_ok {
        ck.fail(format!(
            "solver() = {} for requested {requested}",
            model.solver()
        ));
    }
    if model.n_samples() != n || model.n_features() != d || model.ddof() != case.ddof {
        ck.fail(format!(
            "n_samples/n_features/ddof = {}/{}/{}, expected {n}/{d}/{}",
            model.n_samples(),
            model.n_features(),
            model.ddof(),
            case.ddof
        ));
    }
    let scaling = if case.standardize {
        Scaling::Standardize
    } else {
        Scaling::Centre
    };
    if model.scaling() != scaling {
        ck.fail(format!(
            "scaling() = {:?}, expected {scaling:?}",
            model.scaling()
        ));
    }
    if model.zero_variance_features() != case.zero_variance_features.as_slice() {
        ck.fail(format!(
            "zero_variance_features = {:?}, expected {:?}",
            model.zero_variance_features(),
            case.zero_variance_features
        ));
    }

    for (j, (&a, &b)) in model.mean().iter().zip(&case.mean).enumerate() {
        ck.check("mean", format!("[{j}]"), a, b, rel(b));
    }
    match (model.scale(), &case.scale) {
        (None, None) => {}
        (Some(got), Some(want)) => {
            for (j, (&a, &b)) in got.iter().zip(want).enumerate() {
                ck.check("scale", format!("[{j}]"), a, b, rel(b));
            }
        }
        (got, want) => ck.fail(format!("scale = {got:?}, expected {want:?}")),
    }
    ck.check(
        "total_variance",
        String::new(),
        model.total_variance(),
        case.total_variance,
        rel(case.total_variance),
    );

    let m = case.m;
    for k in 0..m {
        let b = case.explained_variance[k];
        ck.check(
            "explained_variance",
            format!("[{k}]"),
            model.explained_variance()[k],
            b,
            rel(b),
        );
        let b = case.explained_variance_ratio[k];
        ck.check(
            "explained_variance_ratio",
            format!("[{k}]"),
            model.explained_variance_ratio()[k],
            b,
            rel(b),
        );
    }
    // See the module comment: sqrt amplifies the eigenvalue rounding of the product solvers.
    let lambda1 = case.explained_variance[0];
    let dof = (n - case.ddof) as f64;
    let product_solver = matches!(model.solver(), Solver::Covariance | Solver::Gram);
    for k in 0..m {
        let b = case.singular_values[k];
        let mut tol = rel(b);
        if product_solver {
            let dl = 64.0 * EPS * lambda1 * dof;
            tol += (dl / (2.0 * b)).min(dl.sqrt());
        }
        ck.check(
            "singular_values",
            format!("[{k}]"),
            model.singular_values()[k],
            b,
            tol,
        );
    }
    ck.check(
        "noise_variance",
        String::new(),
        model.noise_variance(),
        case.noise_variance,
        rel(case.noise_variance),
    );

    // Components: determined rows entry by entry; the others as an orthonormal completion.
    let comps = model.components();
    for i in 0..case.compare {
        for j in 0..d {
            ck.check(
                "components",
                format!("[{i}][{j}]"),
                comps[(i, j)],
                case.components[(i, j)],
                TOL,
            );
        }
    }
    for i in case.compare..m {
        for k in 0..m {
            let dot: f64 = (0..d).map(|j| comps[(i, j)] * comps[(k, j)]).sum();
            let want = if i == k { 1.0 } else { 0.0 };
            ck.check(
                "components (orthonormality of undetermined row)",
                format!("[{i}]·[{k}]"),
                dot,
                want,
                TOL,
            );
        }
    }

    // Codes and reconstructions.
    let scale = case.scale.as_deref();
    let r = max_row_norm(&case.x, &case.mean, scale)
        .max(max_row_norm(&case.x_new, &case.mean, scale))
        .max(1.0);
    let sigma = |j: usize| scale.map_or(1.0, |s| s[j]);
    let mean_rounding = 4.0
        * EPS
        * (d as f64).sqrt()
        * (0..d)
            .map(|j| case.mean[j].abs() / sigma(j))
            .fold(0.0, f64::max);
    let code_tol = TOL * r + mean_rounding;
    let codes = match model.transform(case.x.as_ref()) {
        Ok(z) => z,
        Err(e) => return ck.fail(format!("transform failed: {e}")),
    };
    for i in 0..n {
        for k in 0..m {
            ck.check(
                "transform",
                format!("[{i}][{k}]"),
                codes[(i, k)],
                case.transform[(i, k)],
                code_tol,
            );
        }
    }
    match model.transform(case.x_new.as_ref()) {
        Ok(z) => {
            for i in 0..case.x_new.nrows() {
                for k in 0..case.compare {
                    ck.check(
                        "transform_new",
                        format!("[{i}][{k}]"),
                        z[(i, k)],
                        case.transform_new[(i, k)],
                        code_tol,
                    );
                }
            }
        }
        Err(e) => ck.fail(format!("transform of new data failed: {e}")),
    }
    match model.inverse_transform(codes.as_ref()) {
        Ok(xr) => {
            for i in 0..n {
                for j in 0..d {
                    let b = case.inverse[(i, j)];
                    let tol = TOL * r * sigma(j) + 4.0 * EPS * case.mean[j].abs().max(b.abs());
                    ck.check("inverse", format!("[{i}][{j}]"), xr[(i, j)], b, tol);
                }
            }
        }
        Err(e) => ck.fail(format!("inverse_transform failed: {e}")),
    }
}

fn run_case(name: &str) {
    let case = load(name);
    let (n, d) = (case.x.nrows(), case.x.ncols());
    assert_eq!(case.mean.len(), d, "{name}: mean length");
    assert_eq!(
        (case.components.nrows(), case.components.ncols()),
        (case.m, d),
        "{name}: components shape"
    );
    assert_eq!(case.transform.nrows(), n, "{name}: transform rows");
    let mut ck = Checker {
        case: case.name.clone(),
        run: String::new(),
        failures: Vec::new(),
        worst: Vec::new(),
    };

    let mut counts = vec![(case.count, format!("{:?}", case.count))];
    // With every component kept, `All` must give the same model.
    if case.count == ComponentCount::Fixed(n.min(d)) {
        counts.push((ComponentCount::All, "All".to_string()));
    }
    for solver in SOLVERS {
        for (count, label) in &counts {
            ck.run = format!("solver {solver}, components {label}");
            let scaling = if case.standardize {
                Scaling::Standardize
            } else {
                Scaling::Centre
            };
            let fitted = PcaBuilder::new()
                .components(*count)
                .scaling(scaling)
                .ddof(case.ddof)
                .solver(solver)
                .build()
                .and_then(|p| p.fit(case.x.as_ref()));
            match fitted {
                Ok(model) => check_model(&case, &model, solver, &mut ck),
                Err(e) => ck.fail(format!("fit failed: {e}")),
            }
        }
    }

    for (run, field, ratio) in &ck.worst {
        println!("{name}: {run}: {field}: max |diff|/tol = {ratio:.2e}");
    }
    if !ck.failures.is_empty() {
        let total = ck.failures.len();
        let shown: Vec<&str> = ck
            .failures
            .iter()
            .take(MAX_MESSAGES)
            .map(String::as_str)
            .collect();
        panic!(
            "fixture {name}: {total} mismatch(es){}\n{}",
            if total > MAX_MESSAGES {
                format!(", first {MAX_MESSAGES} shown")
            } else {
                String::new()
            },
            shown.join("\n")
        );
    }
}

fixture_tests!(
    run_case:
    iris_m2,
    iris_m4,
    iris_variance_095,
    iris_standardized_m3,
    tall_40x6_m3,
    wide_8x20_m5,
    wide_8x20_all,
    rank2_30x6_m2,
    offset_1e6_20x4_m2,
    constant_column_25x5_m3,
    random_standardized_ddof0_m3,
    center_ddof0_35x5_m2,
    digits_200_m10,
    wine_standardized_m5;
);

/// The directory holds at least 10 fixtures and every one of them has a test above: the suite
/// cannot pass vacuously, and a new fixture cannot be silently skipped.
#[test]
fn every_fixture_file_has_a_test() {
    let dir = fixtures_dir();
    let found = json_stems(&dir);
    assert!(
        found.len() >= 10,
        "only {} fixture files in {}: {found:?}",
        found.len(),
        dir.display()
    );
    let listed: BTreeSet<String> = CASES.iter().map(|s| s.to_string()).collect();
    let untested: Vec<_> = found.difference(&listed).collect();
    let missing: Vec<_> = listed.difference(&found).collect();
    assert!(
        untested.is_empty(),
        "fixture files without a test (add them to fixture_tests!): {untested:?}"
    );
    assert!(
        missing.is_empty(),
        "tests without a fixture file: {missing:?}"
    );
}
