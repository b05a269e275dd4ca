//! The median of the Marchenko–Pastur distribution, computed numerically: what Gavish–Donoho's
//! threshold needs when the noise level is estimated from the median singular value.
//!
//! For an m×n matrix of independent standard normal entries (m ≤ n, β = m/n), the eigenvalues
//! of `Z Zᵀ / n` follow, as m, n → ∞, the Marchenko–Pastur law with density
//!
//! ```text
//! f(t) = √((b − t)(t − a)) / (2π β t),   a = (1 − √β)² ≤ t ≤ b = (1 + √β)²
//! ```
//!
//! (no mass at 0 for β ≤ 1). Its median μ_β solves `∫_a^μ f = ½`. The substitution
//! `t = a + (b − a) sin²φ` removes both square-root end points:
//!
//! ```text
//! f(t) dt = (b − a)² sin²φ cos²φ / (π β (a + (b − a) sin²φ)) dφ,   0 ≤ φ ≤ π/2
//! ```
//!
//! a smooth integrand, integrated by adaptive Simpson's rule to 1e-15; the median is found by
//! Newton's method on φ (the density is the derivative), safeguarded by bisection.

use std::f64::consts::{FRAC_PI_2, FRAC_PI_4, PI};

/// Absolute accuracy of each integral of the density (a probability).
const ACCURACY: f64 = 1e-15;

/// The median μ_β of the Marchenko–Pastur law of ratio `beta` ∈ (0, 1].
///
/// # Panics
/// When `beta` is not in (0, 1].
#[track_caller]
pub(crate) fn median(beta: f64) -> f64 {
    assert!(
        beta > 0.0 && beta <= 1.0,
        "aspect ratio {beta} is not in (0, 1]"
    );
    let law = Law::new(beta);
    // Newton's method on F(φ) = ½ (F' is the density), kept inside a bracket that bisection
    // shrinks whenever a step would leave it; F is integrated from the previous φ only.
    let (mut low, mut high) = (0.0, FRAC_PI_2);
    let mut phi = FRAC_PI_4;
    let mut mass = law.probability_between(0.0, phi);
    for _ in 0..100 {
        if mass < 0.5 {
            low = phi;
        } else {
            high = phi;
        }
        let density = law.density(phi);
        let newton = phi - (mass - 0.5) / density;
        let next = if density > 0.0 && newton > low && newton < high {
            newton
        } else {
            0.5 * (low + high)
        };
        if (next - phi).abs() <= 4.0 * f64::EPSILON * phi {
            break;
        }
        mass += law.probability_between(phi, next);
        phi = next;
    }
    law.point(phi)
}

/// Gavish & Donoho's λ*(β): the optimal hard threshold on the singular values of an m×n
/// matrix (β = m/n ≤ 1) with known noise σ per entry is `λ*(β) √n σ`, where
///
/// ```text
/// λ*(β) = √( 2(β + 1) + 8β / (β + 1 + √(β² + 14β + 1)) )
/// ```
///
/// (4/√3 for a square matrix).
pub(crate) fn optimal_coefficient(beta: f64) -> f64 {
    (2.0 * (beta + 1.0) + 8.0 * beta / (beta + 1.0 + (beta * beta + 14.0 * beta + 1.0).sqrt()))
        .sqrt()
}

/// ω(β) = λ*(β) / √μ_β: the threshold in units of the median singular value when the noise
/// is unknown (about 2.858 for a square matrix).
#[cfg(test)]
fn median_coefficient(beta: f64) -> f64 {
    optimal_coefficient(beta) / median(beta).sqrt()
}

/// The law of ratio β in the variable φ.
struct Law {
    a: f64,
    width: f64,
    beta: f64,
}

impl Law {
    fn new(beta: f64) -> Self {
        let root = beta.sqrt();
        let a = (1.0 - root).powi(2);
        let b = (1.0 + root).powi(2);
        Law {
            a,
            width: b - a,
            beta,
        }
    }

    /// The eigenvalue t at φ.
    fn point(&self, phi: f64) -> f64 {
        self.a + self.width * phi.sin().powi(2)
    }

    /// The density in φ.
    fn density(&self, phi: f64) -> f64 {
        let (s, c) = phi.sin_cos();
        if self.a == 0.0 {
            // β = 1: the point is width·sin²φ, which cancels (and is 0 at φ = 0).
            return self.width * c * c / (PI * self.beta);
        }
        self.width * self.width * s * s * c * c / (PI * self.beta * self.point(phi))
    }

    /// P(t ≤ point(φ)).
    #[cfg(test)]
    fn probability_below(&self, phi: f64) -> f64 {
        self.probability_between(0.0, phi)
    }

    /// P(point(from) < t ≤ point(to)), negative when `to < from`.
    fn probability_between(&self, from: f64, to: f64) -> f64 {
        if to < from {
            return -adaptive_simpson(&|x| self.density(x), to, from, ACCURACY);
        }
        adaptive_simpson(&|x| self.density(x), from, to, ACCURACY)
    }
}

/// `∫_a^b f` by adaptive Simpson's rule (Lyness 1969) to about `accuracy`: a panel is done
/// when its error estimate is within its share of `accuracy` or at the rounding of its own
/// value.
fn adaptive_simpson(f: &dyn Fn(f64) -> f64, a: f64, b: f64, accuracy: f64) -> f64 {
    let m = 0.5 * (a + b);
    let (fa, fm, fb) = (f(a), f(m), f(b));
    let whole = (b - a) / 6.0 * (fa + 4.0 * fm + fb);
    refine(f, [a, m, b], [fa, fm, fb], whole, accuracy, 40)
}

fn refine(
    f: &dyn Fn(f64) -> f64,
    [a, m, b]: [f64; 3],
    [fa, fm, fb]: [f64; 3],
    whole: f64,
    accuracy: f64,
    depth: u32,
) -> f64 {
    let (lm, rm) = (0.5 * (a + m), 0.5 * (m + b));
    let (flm, frm) = (f(lm), f(rm));
    let left = (m - a) / 6.0 * (fa + 4.0 * flm + fm);
    let right = (b - m) / 6.0 * (fm + 4.0 * frm + fb);
    let error = left + right - whole;
    let rounding = 4.0 * f64::EPSILON * (left.abs() + right.abs());
    if depth == 0 || error.abs() <= (15.0 * accuracy).max(rounding) {
        return left + right + error / 15.0;
    }
    refine(
        f,
        [a, lm, m],
        [fa, flm, fm],
        left,
        accuracy / 2.0,
        depth - 1,
    ) + refine(
        f,
        [m, rm, b],
        [fm, frm, fb],
        right,
        accuracy / 2.0,
        depth - 1,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_density_integrates_to_one() {
        for beta in [1e-4, 0.01, 0.1, 0.5, 0.9, 0.999, 1.0] {
            let total = Law::new(beta).probability_below(FRAC_PI_2);
            assert!((total - 1.0).abs() < 1e-13, "β {beta}: {total}");
        }
    }

    /// For β = 1 (a = 0, b = 4) the density in φ is 4 cos²φ / π, whose integral is
    /// `(2/π)(φ + sin φ cos φ)`: the quadrature equals it.
    #[test]
    fn the_square_case_has_a_closed_form() {
        let law = Law::new(1.0);
        for i in 0..=16 {
            let phi = FRAC_PI_2 * i as f64 / 16.0;
            let exact = 2.0 / PI * (phi + phi.sin() * phi.cos());
            assert!(
                (law.probability_below(phi) - exact).abs() < 1e-14,
                "φ {phi}"
            );
        }
    }

    /// The median found by bisection has half the mass below it, and lies inside the support.
    /// (Its values are compared with scipy's in `tests/choose_fixtures.rs`.)
    #[test]
    fn the_median_halves_the_mass() {
        for beta in [1e-3, 0.05, 0.25, 0.5, 0.75, 1.0] {
            let mu = median(beta);
            let law = Law::new(beta);
            // Back to φ, then the mass below.
            let phi = ((mu - law.a) / law.width).sqrt().asin();
            let mass = law.probability_below(phi);
            assert!((mass - 0.5).abs() < 1e-13, "β {beta}: mass {mass}");
            assert!(mu > law.a && mu < law.a + law.width);
        }
    }

    /// The medians and coefficients equal scipy's (adaptive QUADPACK quadrature with the
    /// square-root end point as an algebraic weight, and a root finder), from
    /// `fixtures/choose/marchenko_pastur.json` (`fixtures/generate_choose.py`).
    #[test]
    fn the_medians_equal_scipys() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/choose/marchenko_pastur.json"
        );
        let case: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let list = |key: &str| -> Vec<f64> {
            case[key]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_f64().unwrap())
                .collect()
        };
        let (betas, medians, stars, omegas) = (
            list("beta"),
            list("median"),
            list("lambda_star"),
            list("omega"),
        );
        assert!(betas.len() >= 10);
        for i in 0..betas.len() {
            let beta = betas[i];
            let mu = median(beta);
            assert!(
                (mu - medians[i]).abs() < 1e-12,
                "β {beta}: {mu} vs {}",
                medians[i]
            );
            assert!(
                (optimal_coefficient(beta) - stars[i]).abs() < 1e-14,
                "β {beta}"
            );
            assert!(
                (median_coefficient(beta) - omegas[i]).abs() < 1e-11,
                "β {beta}"
            );
        }
    }

    /// Gavish & Donoho's closed-form approximation `ω(β) ≈ 0.56β³ − 0.95β² + 1.82β + 1.43`
    /// is within 0.02 of the exact coefficient (their paper, eq. (5)); and the square case is
    /// λ* = 4/√3.
    #[test]
    fn the_coefficients_match_the_published_values() {
        assert!((optimal_coefficient(1.0) - 4.0 / 3f64.sqrt()).abs() < 1e-15);
        for i in 1..=20 {
            let beta = i as f64 / 20.0;
            let approx = 0.56 * beta.powi(3) - 0.95 * beta.powi(2) + 1.82 * beta + 1.43;
            let exact = median_coefficient(beta);
            assert!(
                (exact - approx).abs() < 0.02,
                "β {beta}: {exact} vs {approx}"
            );
        }
        assert!((median_coefficient(1.0) - 2.858).abs() < 1e-3);
    }
}
