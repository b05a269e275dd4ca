//! Products of a block with itself, lower triangle only (half the work), and the rank-one
//! updates and widening additions that go with them, column by column of the triangle.

use faer::linalg::matmul::triangular::{BlockStructure, matmul};
use faer::reborrow::ReborrowMut;
use faer::{Accum, MatMut, MatRef, Par};
use rayon::prelude::*;

use crate::kernel::simd::{Kernel, dispatch};

/// Widest rows that count as narrow: up to here [`lower_product`] multiplies in bands on one
/// thread, faster there than faer's triangular product (bench/results.md, "Measurements moved
/// out of the math crate's doc comments"), so a chunk of narrow rows gets its parallelism by
/// being split between threads instead (the moment accumulator); wider rows take faer's
/// parallel triangular product, and the byte products and the ordered path, which pay only
/// for wide rows.
pub(crate) const NARROW_MAX_FEATURES: usize = 320;

/// `dst (+)= Lower(Y Yᵀ)` for a D×n block Y. Only the lower triangle of `dst` is meaningful:
/// the strictly upper part may receive partial products.
///
/// Products of narrow rows (at most [`NARROW_MAX_FEATURES`]) go in bands of a few vector
/// registers' worth of rows (see [`band_bytes`]), from the bottom: band `[r0, r1)` is the
/// plain product `Y[r0..r1] · Y[..r1]ᵀ`, which covers the triangle's rows `r0..r1` and spills
/// only into the upper part of its own diagonal block. The bands always run on one thread
/// (split over two they are slower), so the choice, and the bits of the result, depend on the
/// shape only.
pub(crate) fn lower_product<E: faer::traits::ComplexField>(
    dst: faer::MatMut<'_, E>,
    accum: Accum,
    y: MatRef<'_, E>,
    par: Par,
) {
    let d = y.nrows();
    if d > NARROW_MAX_FEATURES {
        return matmul(
            dst,
            BlockStructure::TriangularLower,
            accum,
            y,
            BlockStructure::Rectangular,
            y.transpose(),
            BlockStructure::Rectangular,
            E::one_impl(),
            par,
        );
    }
    let width = (band_bytes() / std::mem::size_of::<E>()).max(1);
    lower_product_in_bands(dst, accum, y, width);
}

/// Bytes of a band's column: three vector registers of faer's kernels. Where they are AVX-512,
/// 192 (24 f64 rows, 48 f32; its kernels of three registers by up to eight columns, about 1.3×
/// the rate of one register's on D = 100 on the Xeon, bench/results.md), but one register, 64
/// (8 f64 rows, 16 f32), where the CPU splits 512-bit instructions in halves (AMD's Zen 4):
/// there one register's kernels run about as fast as three's, and narrower bands compute less
/// of the diagonal blocks' upper part (D = 100: 5,392 entries computed for the triangle's
/// 5,050, instead of 6,160), so whole fits were 2–14% faster for D from 30 to 320, f64 and
/// f32 (2026-11-27, bench/results.md). Without AVX-512 (and under `PRINCIPAL_CPU=avx2`),
/// three AVX2 registers, 96 (12 f64 rows, faer's widest AVX2 kernel, 1.15–1.2× the rate of
/// bands of 8 rows on D = 100 under the AVX2 proxy, on the Xeon and on Zen 4). The width does
/// not change the bits: faer's kernels sum each entry over the rows in the same order whatever
/// the band (`bands_of_any_width_give_the_same_bits`).
fn band_bytes() -> usize {
    band_bytes_for(
        crate::kernel::cpu::avx512f(),
        crate::kernel::cpu::avx512_in_halves(),
    )
}

/// [`band_bytes`] for a CPU with (or without) AVX-512 for our kernels, run in halves or not.
fn band_bytes_for(avx512: bool, in_halves: bool) -> usize {
    match (avx512, in_halves) {
        (true, false) => 192,
        (true, true) => 64,
        (false, _) => 96,
    }
}

/// Fewest rows of the top band (the triangle's first rows): faer multiplies a one-row band as
/// a matrix-vector product and a band of two rows (a 2×2×n product) by its small-matrix
/// kernels, both summing the rows in another order than its general kernel, which every other
/// band takes; so a narrower remainder joins the band below it.
const TOP_BAND_ROWS: usize = 3;

/// The bands of [`lower_product`], `width` rows each from the bottom, the top one
/// [`TOP_BAND_ROWS`] or more (up to `width + 2`), on one thread.
fn lower_product_in_bands<E: faer::traits::ComplexField>(
    mut dst: faer::MatMut<'_, E>,
    accum: Accum,
    y: MatRef<'_, E>,
    width: usize,
) {
    let d = y.nrows();
    let mut end = d;
    while end > 0 {
        let mut start = end.saturating_sub(width);
        if start < TOP_BAND_ROWS {
            start = 0;
        }
        faer::linalg::matmul::matmul(
            dst.rb_mut().submatrix_mut(start, 0, end - start, end),
            accum,
            y.subrows(start, end - start),
            y.subrows(0, end).transpose(),
            E::one_impl(),
            Par::Seq,
        );
        end = start;
    }
}

/// `dst += src` on the lower triangle, f32 into f64, by columns; on all threads if `par` says so.
pub(crate) fn add_lower(dst: MatMut<'_, f64>, src: MatRef<'_, f32>, par: Par) {
    for_lower_columns(dst, src, par, |_, dst, src| {
        dispatch(AddWidened { dst, src })
    });
}

/// Calls `f(j, dst[j.., j], src[j.., j])` for every column `j` of the lower triangles of `dst`
/// and `src` (same shape), on all threads if `par` says so.
pub(crate) fn for_lower_columns(
    dst: MatMut<'_, f64>,
    src: MatRef<'_, f32>,
    par: Par,
    f: impl Fn(usize, &mut [f64], &[f32]) + Sync,
) {
    let column = |(j, (dst, src)): (usize, (faer::ColMut<'_, f64>, faer::ColRef<'_, f32>))| {
        let dst = dst
            .try_as_col_major_mut()
            .expect("columns of a Mat are contiguous");
        let src = src
            .try_as_col_major()
            .expect("columns of a Mat are contiguous");
        f(j, &mut dst.as_slice_mut()[j..], &src.as_slice()[j..]);
    };
    if par.degree() > 1 {
        dst.par_col_iter_mut()
            .zip(src.par_col_iter())
            .enumerate()
            .for_each(column);
    } else {
        dst.col_iter_mut()
            .zip(src.col_iter())
            .enumerate()
            .for_each(column);
    }
}

/// `dst += src`, f32 widened to f64.
struct AddWidened<'a> {
    dst: &'a mut [f64],
    src: &'a [f32],
}

impl Kernel for AddWidened<'_> {
    type Output = ();
    #[inline(always)]
    fn run(self) {
        for (r, p) in self.dst.iter_mut().zip(self.src) {
            *r += f64::from(*p);
        }
    }
}

/// `dst += alpha·a + beta·b`, plus `plus` widened to f64 if given: one column of two rank-one
/// updates (and of a product computed in f32 or in i32, both widened exactly).
pub(crate) struct RankTwoUpdate<'a, P = f32> {
    pub(crate) dst: &'a mut [f64],
    pub(crate) a: &'a [f64],
    pub(crate) alpha: f64,
    pub(crate) b: &'a [f64],
    pub(crate) beta: f64,
    pub(crate) plus: Option<&'a [P]>,
}

impl<P: Copy + Into<f64>> Kernel for RankTwoUpdate<'_, P> {
    type Output = ();
    #[inline(always)]
    fn run(self) {
        let (alpha, beta) = (self.alpha, self.beta);
        let terms = self.dst.iter_mut().zip(self.a).zip(self.b);
        match self.plus {
            None => terms.for_each(|((m, a), b)| *m += alpha * a + beta * b),
            Some(plus) => terms
                .zip(plus)
                .for_each(|(((m, a), b), p)| *m += (*p).into() + alpha * a + beta * b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::real::Real;
    use faer::Mat;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Small integers: every sum is exact, so the banded (sequential) and triangular (parallel)
    /// products must give the plain triple loop's lower triangle bit for bit, accumulated or not,
    /// whether D is a multiple of the band or not.
    fn check_lower_product<E: Real + faer::traits::ComplexField>() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        for (d, n) in [
            (1, 3),
            (7, 5),
            (8, 300),
            (9, 1),
            (16, 40),
            (17, 40),
            (37, 300),
            (100, 64),
        ] {
            let mut int = |range: i32| E::from_f64(f64::from(rng.random_range(-range..=range)));
            let y = Mat::<E>::from_fn(d, n, |_, _| int(20));
            let start = Mat::<E>::from_fn(d, d, |_, _| int(9));
            for (accum, kept) in [(Accum::Replace, 0.0), (Accum::Add, 1.0)] {
                for par in [Par::Seq, Par::rayon(2)] {
                    let mut got = start.clone();
                    lower_product(got.as_mut(), accum, y.as_ref(), par);
                    for b in 0..d {
                        for a in b..d {
                            let dot: f64 = (0..n)
                                .map(|i| y[(a, i)].to_f64() * y[(b, i)].to_f64())
                                .sum();
                            let want = dot + kept * start[(a, b)].to_f64();
                            assert_eq!(
                                got[(a, b)].to_f64(),
                                want,
                                "d {d} n {n} ({a}, {b}) {par:?}"
                            );
                        }
                    }
                }
            }
        }
    }

    /// The band widths (rows) whose bits `bands_of_any_width_give_the_same_bits` compares with
    /// bands of 8 rows.
    const TESTED_WIDTHS: [usize; 5] = [4, 12, 16, 24, 48];

    /// Every CPU's band, f64 and f32, is one whose bits are checked.
    #[test]
    fn every_cpus_band_width_is_checked_for_its_bits() {
        for (avx512, in_halves) in [(false, false), (false, true), (true, false), (true, true)] {
            let bytes = band_bytes_for(avx512, in_halves);
            for rows in [bytes / 8, bytes / 4] {
                assert!(
                    rows == 8 || TESTED_WIDTHS.contains(&rows),
                    "{bytes} bytes: bands of {rows} rows are not compared"
                );
            }
        }
    }

    /// The bands' width depends on the machine (see [`band_bytes`]), the model's bits may not:
    /// on rounded (not exact) products, every width gives the bits of one register's bands,
    /// for every D up to 64 (every remainder of every width, so top bands of one and two
    /// rows, which faer would multiply otherwise) and case 2's 100 and the widest narrow 320,
    /// over blocks of a few rows to 1,024 (faer's small-matrix kernels below 16³ products).
    /// x86-64 only: faer's NEON kernels sum bands of 4 or 12 rows in another order than bands
    /// of 8 (1 to 4 ulps, seen under qemu-aarch64), and there no choice of the band depends on
    /// the machine ([`band_bytes`] is 96 bytes on every aarch64 CPU), so no model's bits do.
    #[test]
    #[cfg_attr(
        not(target_arch = "x86_64"),
        ignore = "faer's NEON kernels sum bands of other widths in another order; the band is \
                  the same on every aarch64 CPU (96 bytes), so no model depends on it"
    )]
    fn bands_of_any_width_give_the_same_bits() {
        check_bands_of_any_width::<f64>();
        check_bands_of_any_width::<f32>();
    }

    fn check_bands_of_any_width<E: Real + faer::traits::ComplexField>() {
        let mut rng = ChaCha8Rng::seed_from_u64(8);
        let shapes = (1..=64)
            .chain([100, 320])
            .flat_map(|d| [5, 64, 255, 655, 1024].map(|n| (d, n)));
        for (d, n) in shapes {
            let y = Mat::<E>::from_fn(d, n, |_, _| E::from_f64(rng.random::<f64>() - 0.5));
            let bands = |width| {
                let mut dst = Mat::<E>::zeros(d, d);
                lower_product_in_bands(dst.as_mut(), Accum::Replace, y.as_ref(), width);
                dst
            };
            let one = bands(8);
            for width in TESTED_WIDTHS {
                let got = bands(width);
                for b in 0..d {
                    for a in b..d {
                        assert_eq!(
                            got[(a, b)].to_f64().to_bits(),
                            one[(a, b)].to_f64().to_bits(),
                            "{} d {d} n {n} width {width} ({a}, {b})",
                            std::any::type_name::<E>()
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn banded_and_triangular_products_give_the_exact_lower_triangle() {
        check_lower_product::<f32>();
        check_lower_product::<f64>();
    }

    /// GFLOP/s of the f64 products of one block on one thread, by the thread's CPU time
    /// (Linux's /proc/thread-self/schedstat), which a loaded machine disturbs less than wall
    /// time: `lower_product` (bands for D ≤ 320) against faer's plain product `Y·Yᵀ` and its
    /// triangular product, for case 2's D = 100 with blocks of 256–8,192 rows and
    /// Fashion-MNIST's D = 784. Flops counted as 2·D²·n for all three, so that the rates
    /// compare the times of the same job (the triangle does about half of them). A
    /// measurement, not a check: `cargo test --release --workspace --lib -- --ignored
    /// --nocapture time_f64_block_products` (bench/results.md).
    #[test]
    #[ignore = "a timing loop, for bench/results.md"]
    fn time_f64_block_products() {
        let cpu = crate::kernel::thread_cpu_seconds;
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        for (d, n) in [
            (100, 256),
            (100, 512),
            (100, 1024),
            (100, 2048),
            (100, 8192),
            (784, 1024),
        ] {
            let y = Mat::<f64>::from_fn(d, n, |_, _| rng.random::<f64>() - 0.5);
            let mut dst = Mat::<f64>::zeros(d, d);
            let reps = (4_000_000_000 / (2 * d * d * n)).max(3);
            let flops = (2 * d * d * n * reps) as f64;
            let time = |f: &mut dyn FnMut()| {
                f();
                let start = cpu();
                for _ in 0..reps {
                    f();
                }
                flops / (cpu() - start) / 1e9
            };
            let ours = time(&mut || lower_product(dst.as_mut(), Accum::Add, y.as_ref(), Par::Seq));
            let bands: Vec<String> = [8, 16, 24, 32, 48, 64]
                .into_iter()
                .map(|w| {
                    let rate = time(&mut || {
                        lower_product_in_bands(dst.as_mut(), Accum::Add, y.as_ref(), w)
                    });
                    format!("{w}: {rate:5.1}")
                })
                .collect();
            eprintln!(
                "D {d:4} n {n:5}, bands of (rows: GFLOP/s) {}",
                bands.join(", ")
            );
            let plain = time(&mut || {
                faer::linalg::matmul::matmul(
                    dst.as_mut(),
                    Accum::Add,
                    y.as_ref(),
                    y.transpose(),
                    1.0,
                    Par::Seq,
                )
            });
            let lower = |dst: &mut Mat<f64>, par| {
                matmul(
                    dst.as_mut(),
                    BlockStructure::TriangularLower,
                    Accum::Add,
                    y.as_ref(),
                    BlockStructure::Rectangular,
                    y.transpose(),
                    BlockStructure::Rectangular,
                    1.0,
                    par,
                )
            };
            let triangular = time(&mut || lower(&mut dst, Par::Seq));
            // On two threads, by wall time (CPU time would count both threads' waits).
            let wall = std::time::Instant::now();
            for _ in 0..reps {
                lower(&mut dst, Par::rayon(2));
            }
            let two = flops / wall.elapsed().as_secs_f64() / 1e9;
            eprintln!(
                "D {d:4} n {n:5}, one thread: lower_product {ours:5.1}, faer Y·Yᵀ {plain:5.1}, \
                 faer triangular {triangular:5.1} GFLOP/s (2·D²·n flops per product, CPU time); \
                 faer triangular on 2 threads {two:5.1} GFLOP/s (wall)"
            );
            std::hint::black_box(&dst);
        }
    }
}
