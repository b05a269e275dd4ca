//! Generating data from the probabilistic model: ancestral sampling (`z ~ N(0, I)`, then
//! `x = W z + μ + ε`), seeded, and the points `x = W z + μ` of chosen latent coordinates.

use faer::linalg::matmul::matmul;
use faer::{Accum, Mat, MatRef};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};

use crate::error::{PcaError, Result};
use crate::kernel::parallel::faer_par;
use crate::kernel::scan::check_finite;
use crate::probabilistic::gaussian::ProbabilisticPca;
use crate::real::Real;

/// A seeded stream of samples from a probabilistic model, in the data's original units.
///
/// Row by row, the generator (ChaCha8 seeded with the seed) gives the M latent normals, then
/// the D noise normals: the samples depend only on the seed and their position, not on how
/// many are drawn at a time, so `next_block(10)` twice gives the rows of `next_block(20)`.
///
/// ```
/// use principal::{faer::mat, ComponentCount, PcaBuilder};
///
/// let x = mat![[2.0, 1.0, 0.5], [1.0, 3.0, 1.5], [4.0, 2.0, 2.5], [0.0, 1.0, 0.0], [3.0, 0.0, 1.0]];
/// let model = PcaBuilder::new().components(ComponentCount::Fixed(1)).build()?.fit(x.as_ref())?;
/// let ppca = model.probabilistic();
/// let mut sampler = ppca.sampler(7);
/// let (a, b) = (sampler.next_block(2), sampler.next_block(3));
/// let all = ppca.sampler(7).next_block(5);
/// assert_eq!(all.as_ref().subrows(2, 3), b.as_ref());
/// assert_eq!(all.as_ref().subrows(0, 2), a.as_ref());
/// # Ok::<(), principal::PcaError>(())
/// ```
pub struct Sampler<'a> {
    ppca: ProbabilisticPca<'a>,
    /// Wᵀ, M×D, in the model's units.
    loadings_t: Mat<f64>,
    noise_sd: f64,
    rng: ChaCha8Rng,
}

impl<'a> ProbabilisticPca<'a> {
    /// A seeded stream of samples `x = W z + μ + ε` (`z ~ N(0, I_M)`, `ε ~ N(0, σ² I_D)`, in
    /// the model's units, then scaled and shifted back to the original ones). The same seed
    /// gives the same samples, bit for bit. A model with σ² = 0 samples its subspace.
    pub fn sampler(&self, seed: u64) -> Sampler<'a> {
        let w = self.loadings();
        Sampler {
            ppca: *self,
            loadings_t: w.transpose().to_owned(),
            // σ² ≥ 0: `PcaModel::from_parts` refuses a negative one and no fit makes one.
            noise_sd: self.noise_variance().sqrt(),
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }

    /// `count` samples, N×D in the original units: `self.sampler(seed).next_block(count)`.
    pub fn sample(&self, count: usize, seed: u64) -> Mat<f64> {
        self.sampler(seed).next_block(count)
    }

    /// The points `x = W z + μ` of the latent coordinates `z` (N×M), in the original units:
    /// the means of the data that the latent points generate (the textbook's walk through a
    /// 2-D latent space).
    pub fn generate<T: Real>(&self, latent: MatRef<'_, T>) -> Result<Mat<f64>> {
        let model = self.model();
        if latent.ncols() != model.n_components() {
            return Err(PcaError::ComponentMismatch {
                expected: model.n_components(),
                found: latent.ncols(),
            });
        }
        check_finite(latent, 0)?;
        let z = Mat::from_fn(latent.nrows(), latent.ncols(), |i, j| {
            latent[(i, j)].to_f64()
        });
        let w = self.loadings();
        let mut x = Mat::zeros(z.nrows(), model.n_features());
        matmul(
            x.as_mut(),
            Accum::Replace,
            z.as_ref(),
            w.transpose(),
            1.0,
            faer_par(),
        );
        to_original_units(self, &mut x);
        Ok(x)
    }
}

impl Sampler<'_> {
    /// The next `rows` samples, `rows`×D in the original units.
    pub fn next_block(&mut self, rows: usize) -> Mat<f64> {
        let (m, d) = (self.loadings_t.nrows(), self.loadings_t.ncols());
        let mut z = Mat::<f64>::zeros(rows, m);
        let mut x = Mat::<f64>::zeros(rows, d);
        for i in 0..rows {
            for k in 0..m {
                z[(i, k)] = StandardNormal.sample(&mut self.rng);
            }
            for j in 0..d {
                let e: f64 = StandardNormal.sample(&mut self.rng);
                x[(i, j)] = self.noise_sd * e;
            }
        }
        matmul(
            x.as_mut(),
            Accum::Add,
            z.as_ref(),
            self.loadings_t.as_ref(),
            1.0,
            faer_par(),
        );
        to_original_units(&self.ppca, &mut x);
        x
    }
}

/// `x ⊙ s + μ` row by row: from the model's units to the original ones.
fn to_original_units(ppca: &ProbabilisticPca<'_>, x: &mut Mat<f64>) {
    let model = ppca.model();
    let mean = model.mean();
    for j in 0..x.ncols() {
        let s = model.scale().map_or(1.0, |s| s[j]);
        for i in 0..x.nrows() {
            x[(i, j)] = x[(i, j)] * s + mean[j];
        }
    }
}
