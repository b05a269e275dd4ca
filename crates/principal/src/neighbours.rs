//! Nearest neighbours among codes: the recognition step of eigenfaces. Training samples are
//! stored as their codes; a new sample is projected and labelled by the training codes nearest
//! to its own (Euclidean distance), by a majority vote of the `count` nearest.
//!
//! The distances of a block of query rows to a block of reference rows come from one matrix
//! product, never a loop per pair:
//!
//! ```text
//! ‖q − r‖² = ‖q‖² + ‖r‖² − 2 q·r      (q·r for a whole block: R_b Q_bᵀ, faer's matmul)
//! ```
//!
//! Blocks of 256 query rows run in parallel (rayon); each multiplies its queries by the
//! reference rows 2,048 at a time, in f32, and keeps, per query, the candidates whose expanded
//! distance is within a rounding bound of the `count`-th smallest seen so far. The products'
//! rounding, and the expansion's cancellation when q ≈ r, would decide near-ties wrongly, so
//! the candidates' distances are then recomputed
//! directly, `Σₖ (qₖ − rₖ)²` in the order of k, and the `count` smallest kept, ties going to the
//! lower reference row. The bound makes the result exactly that of a brute-force search which
//! computes every distance that way and sorts by (distance, row): see [`nearest_neighbours`].

use faer::linalg::matmul::matmul;
use faer::traits::ComplexField;
use faer::{Accum, Mat, MatRef, Par};
use rayon::prelude::*;

use crate::real::Real;

/// Query rows per parallel task.
const QUERY_BLOCK: usize = 256;
/// Reference rows per product: a 2,048 × 256 block of f32 products is 2 MiB.
const REFERENCE_BLOCK: usize = 2048;

/// The `count` nearest reference rows of every query row, nearest first.
#[derive(Clone, Debug, PartialEq)]
pub struct Neighbours {
    count: usize,
    rows: Vec<usize>,
    squared_distances: Vec<f64>,
}

impl Neighbours {
    /// Neighbours kept per query.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Number of query rows.
    pub fn n_queries(&self) -> usize {
        self.rows.len().checked_div(self.count).unwrap_or(0)
    }

    /// The reference rows nearest to query `query`, nearest first (ties: lower row first).
    ///
    /// # Panics
    /// When `query` is not below [`n_queries`](Self::n_queries).
    #[track_caller]
    pub fn rows(&self, query: usize) -> &[usize] {
        &self.rows[query * self.count..(query + 1) * self.count]
    }

    /// Their squared distances `Σₖ (qₖ − rₖ)²`, in the same order.
    ///
    /// # Panics
    /// When `query` is not below [`n_queries`](Self::n_queries).
    #[track_caller]
    pub fn squared_distances(&self, query: usize) -> &[f64] {
        &self.squared_distances[query * self.count..(query + 1) * self.count]
    }

    /// The class of every query by a majority vote of its neighbours, where `classes[r]` is
    /// the class of reference row `r`. A tie between classes goes to the one whose nearest
    /// member among the neighbours is nearest (with one neighbour: that neighbour's class).
    ///
    /// ```
    /// use principal::{faer::mat, neighbours::nearest_neighbours};
    ///
    /// let reference = mat![[0.0], [1.0], [5.0], [6.0], [7.0]];
    /// let classes = [0, 0, 1, 1, 1];
    /// let queries = mat![[0.4], [5.6], [3.1]];
    /// let found = nearest_neighbours(reference.as_ref(), queries.as_ref(), 3);
    /// assert_eq!(found.rows(2), [2, 1, 3]);
    /// assert_eq!(found.vote(&classes), [0, 1, 1]);
    /// // With two neighbours, query 2 sees one of each class: the nearest (row 2) decides.
    /// let found = nearest_neighbours(reference.as_ref(), queries.as_ref(), 2);
    /// assert_eq!(found.vote(&classes)[2], 1);
    /// ```
    ///
    /// # Panics
    /// When a neighbour's row is not below `classes.len()`.
    #[track_caller]
    pub fn vote(&self, classes: &[usize]) -> Vec<usize> {
        let mut votes: Vec<(usize, usize)> = Vec::with_capacity(self.count);
        (0..self.n_queries())
            .map(|q| {
                // (class, votes) in the order each class is first met, i.e. by its nearest
                // member: the first class with the most votes wins.
                votes.clear();
                for &row in self.rows(q) {
                    let class = classes[row];
                    match votes.iter_mut().find(|(c, _)| *c == class) {
                        Some((_, n)) => *n += 1,
                        None => votes.push((class, 1)),
                    }
                }
                let most = votes.iter().map(|&(_, n)| n).max().unwrap_or(0);
                votes
                    .iter()
                    .find(|&&(_, n)| n == most)
                    .map_or(0, |&(c, _)| c)
            })
            .collect()
    }
}

/// The `count` nearest rows of `reference` to every row of `queries` by Euclidean distance
/// (both N×K: codes on the same K components).
///
/// The result is exactly that of the brute-force search: for every pair compute
/// `Σₖ (qₖ − rₖ)²` in f64, k in order, and keep the `count` smallest, ties to the lower
/// reference row. The search computes the distances by blocked products instead — in f32,
/// twice as fast as f64, unless a squared norm exceeds 10³⁰ — and so with rounding errors of up
/// to `e = (K + 4) u (‖q‖² + 2‖q‖‖r‖ + ‖r‖²)`, u the unit roundoff of the products (2⁻²⁴ in
/// f32, 2⁻⁵³ in f64; the rounding of the codes to f32 included). It keeps every candidate whose
/// product distance lies within `16 (K + 4) u (‖q‖² + maxᵣ ‖r‖²)` — at least twice the sum of
/// the product's and the direct sum's error bounds — of the `count`-th smallest, so no row of
/// the brute-force answer can be dropped, then recomputes the candidates' distances directly in
/// f64. Work: one N_q × N_r × K product, in blocks, plus a scan of its N_q × N_r entries and a
/// direct distance per candidate (with codes of distinct samples, a few per query).
///
/// ```
/// use principal::{faer::mat, neighbours::nearest_neighbours};
///
/// let reference = mat![[0.0, 0.0], [3.0, 4.0], [1.0, 1.0]];
/// let queries = mat![[2.9, 4.2], [0.1, 0.0]];
/// let found = nearest_neighbours(reference.as_ref(), queries.as_ref(), 2);
/// assert_eq!(found.rows(0), [1, 2]);
/// assert_eq!(found.rows(1), [0, 2]);
/// assert!((found.squared_distances(1)[0] - 0.01).abs() < 1e-15);
/// ```
///
/// # Panics
/// When the two have different numbers of columns, `count` is 0, or `count` exceeds the
/// number of reference rows.
#[track_caller]
pub fn nearest_neighbours(
    reference: MatRef<'_, f64>,
    queries: MatRef<'_, f64>,
    count: usize,
) -> Neighbours {
    check_shapes(reference, queries, count);
    let f32_is_safe = [reference, queries].iter().all(|m| {
        (0..m.nrows()).all(|i| (0..m.ncols()).map(|j| m[(i, j)] * m[(i, j)]).sum::<f64>() < 1e30)
    });
    if f32_is_safe {
        search::<f32>(reference, queries, count)
    } else {
        search::<f64>(reference, queries, count)
    }
}

#[track_caller]
fn check_shapes(reference: MatRef<'_, f64>, queries: MatRef<'_, f64>, count: usize) {
    assert!(
        reference.ncols() == queries.ncols(),
        "the reference rows have {} columns and the queries {}",
        reference.ncols(),
        queries.ncols()
    );
    assert!(count >= 1, "at least one neighbour must be asked for");
    assert!(
        count <= reference.nrows(),
        "{count} neighbours asked for among {} reference rows",
        reference.nrows()
    );
}

/// The search with products in `T`.
fn search<T: Real + ComplexField>(
    reference: MatRef<'_, f64>,
    queries: MatRef<'_, f64>,
    count: usize,
) -> Neighbours {
    let k = reference.ncols();
    // One row per column: each row contiguous, for the direct distances and the products.
    let reference_rows = reference.transpose().to_owned();
    let query_rows = queries.transpose().to_owned();
    let reference_products = Mat::from_fn(k, reference.nrows(), |i, j| {
        T::from_f64(reference_rows[(i, j)])
    });
    let reference_norms: Vec<f64> = (0..reference.nrows())
        .map(|r| squared_norm(column(reference_rows.as_ref(), r)))
        .collect();
    let largest_norm = reference_norms.iter().copied().fold(0.0, f64::max);
    let unit_roundoff = if std::mem::size_of::<T>() == 4 {
        f64::from(f32::EPSILON) / 2.0
    } else {
        f64::EPSILON / 2.0
    };
    let n_queries = queries.nrows();
    let mut rows = vec![0usize; n_queries * count];
    let mut squared_distances = vec![0.0; n_queries * count];
    let search = Search {
        reference: reference_rows.as_ref(),
        reference_products: reference_products.as_ref(),
        reference_norms: &reference_norms,
        tolerance_factor: 16.0 * (k as f64 + 4.0) * unit_roundoff,
        largest_norm,
        count,
    };
    rows.par_chunks_mut(QUERY_BLOCK * count)
        .zip(squared_distances.par_chunks_mut(QUERY_BLOCK * count))
        .enumerate()
        .for_each(|(block, (rows, distances))| {
            let start = block * QUERY_BLOCK;
            let n = rows.len() / count;
            search.block(
                query_rows.as_ref().subcols(start, n),
                &mut rows[..],
                &mut distances[..],
            );
        });
    Neighbours {
        count,
        rows,
        squared_distances,
    }
}

/// Column `j` of a column-major matrix as a slice.
fn column<T>(m: MatRef<'_, T>, j: usize) -> &[T] {
    m.col(j).try_as_col_major().unwrap().as_slice()
}

/// What every query block searches.
struct Search<'a, T> {
    /// K × N_r: reference row r is column r.
    reference: MatRef<'a, f64>,
    /// The same in the products' type.
    reference_products: MatRef<'a, T>,
    reference_norms: &'a [f64],
    /// The tolerance is this × (‖q‖² + `largest_norm`).
    tolerance_factor: f64,
    largest_norm: f64,
    count: usize,
}

/// One query's candidates: product distances (without ‖q‖²) within `threshold`.
struct Candidates {
    found: Vec<(f64, usize)>,
    threshold: f64,
    tolerance: f64,
    /// Prune when `found` reaches this length.
    capacity: usize,
}

impl Candidates {
    fn new(count: usize, tolerance: f64) -> Self {
        Candidates {
            found: Vec::with_capacity(2 * count + 32),
            threshold: f64::INFINITY,
            tolerance,
            capacity: 2 * count + 32,
        }
    }

    /// Keeps only the candidates within the tolerance of the `count`-th smallest.
    fn prune(&mut self, count: usize) {
        if self.found.len() > count {
            let (_, nth, _) = self
                .found
                .select_nth_unstable_by(count - 1, |a, b| a.0.total_cmp(&b.0));
            self.threshold = nth.0 + self.tolerance;
            let threshold = self.threshold;
            self.found.retain(|c| c.0 <= threshold);
        }
        // Many near-ties (repeated rows) survive a pruning: grow, so pruning stays rare.
        if self.found.len() * 2 > self.capacity {
            self.capacity = 2 * self.found.len();
        }
    }

    /// Adds the reference rows `first..` whose distance (from their products with the query
    /// and their squared norms) is within the threshold.
    fn scan<T: Real>(&mut self, products: &[T], norms: &[f64], first: usize, count: usize) {
        const LANES: usize = 16;
        let chunks = products.chunks_exact(LANES).zip(norms.chunks_exact(LANES));
        let whole = chunks.len() * LANES;
        for (chunk, (products, norms)) in chunks.enumerate() {
            // Counted without a branch, so that the test vectorizes; most chunks hold no
            // candidate once the threshold has come down.
            let threshold = self.threshold;
            let hits: u32 = products
                .iter()
                .zip(norms)
                .map(|(&p, &n)| u32::from(n - 2.0 * p.to_f64() <= threshold))
                .sum();
            if hits > 0 {
                self.add(products, norms, first + chunk * LANES, count);
            }
        }
        self.add(&products[whole..], &norms[whole..], first + whole, count);
    }

    fn add<T: Real>(&mut self, products: &[T], norms: &[f64], first: usize, count: usize) {
        for (r, (&product, &norm)) in products.iter().zip(norms).enumerate() {
            // ‖q − r‖² − ‖q‖²: the same shift for every r of this query.
            let distance = norm - 2.0 * product.to_f64();
            if distance <= self.threshold {
                self.found.push((distance, first + r));
                if self.found.len() >= self.capacity {
                    self.prune(count);
                }
            }
        }
    }
}

impl<T: Real + ComplexField> Search<'_, T> {
    /// Searches for the queries in the columns of `queries` (K × n), writing `count` rows and
    /// distances per query.
    fn block(&self, queries: MatRef<'_, f64>, rows: &mut [usize], distances: &mut [f64]) {
        let count = self.count;
        let n = queries.ncols();
        let query_products = Mat::from_fn(queries.nrows(), n, |i, j| T::from_f64(queries[(i, j)]));
        let mut candidates: Vec<Candidates> = (0..n)
            .map(|q| {
                let norm = squared_norm(column(queries, q));
                Candidates::new(count, self.tolerance_factor * (norm + self.largest_norm))
            })
            .collect();
        let n_reference = self.reference.ncols();
        let mut products = Mat::<T>::zeros(REFERENCE_BLOCK.min(n_reference), n);
        for start in (0..n_reference).step_by(REFERENCE_BLOCK) {
            let m = REFERENCE_BLOCK.min(n_reference - start);
            let block = self.reference_products.subcols(start, m);
            let mut products = products.as_mut().subrows_mut(0, m);
            // products[r, q] = r·q: column q holds query q's products with the block.
            matmul(
                products.as_mut(),
                Accum::Replace,
                block.transpose(),
                query_products.as_ref(),
                T::from_f64(1.0),
                Par::Seq,
            );
            let norms = &self.reference_norms[start..start + m];
            for (q, found) in candidates.iter_mut().enumerate() {
                found.scan(column(products.as_ref(), q), norms, start, count);
            }
        }
        for (q, mut found) in candidates.into_iter().enumerate() {
            found.prune(count);
            let query = column(queries, q);
            let mut exact: Vec<(f64, usize)> = found
                .found
                .iter()
                .map(|&(_, r)| (squared_distance(query, column(self.reference, r)), r))
                .collect();
            exact.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            for (i, &(distance, r)) in exact.iter().take(count).enumerate() {
                rows[q * count + i] = r;
                distances[q * count + i] = distance;
            }
        }
    }
}

/// `Σₖ aₖ²`, k in order.
fn squared_norm(a: &[f64]) -> f64 {
    a.iter().map(|v| v * v).sum()
}

/// `Σₖ (aₖ − bₖ)²`, k in order: the distance the result is defined by.
fn squared_distance(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| {
            let d = x - y;
            d * d
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::*;

    /// Every distance computed directly, sorted by (distance, row).
    fn brute_force(
        reference: MatRef<'_, f64>,
        queries: MatRef<'_, f64>,
        count: usize,
    ) -> Neighbours {
        let row = |m: MatRef<'_, f64>, i: usize| -> Vec<f64> {
            (0..m.ncols()).map(|j| m[(i, j)]).collect()
        };
        let mut rows = Vec::new();
        let mut squared_distances = Vec::new();
        for q in 0..queries.nrows() {
            let query = row(queries, q);
            let mut all: Vec<(f64, usize)> = (0..reference.nrows())
                .map(|r| {
                    let d: f64 = query
                        .iter()
                        .zip(row(reference, r))
                        .map(|(a, b)| (a - b) * (a - b))
                        .sum();
                    (d, r)
                })
                .collect();
            all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            rows.extend(all.iter().take(count).map(|p| p.1));
            squared_distances.extend(all.iter().take(count).map(|p| p.0));
        }
        Neighbours {
            count,
            rows,
            squared_distances,
        }
    }

    /// Random data; with `levels`, values from a few integers (many exact ties), and some
    /// reference rows repeated.
    fn data(
        rng: &mut ChaCha8Rng,
        n: usize,
        k: usize,
        levels: Option<i32>,
        offset: f64,
    ) -> Mat<f64> {
        let mut x = Mat::from_fn(n, k, |_, _| match levels {
            Some(l) => f64::from(rng.random_range(0..l)) + offset,
            None => rng.random::<f64>() * 10.0 - 5.0 + offset,
        });
        for i in (3..n).step_by(7) {
            let source = rng.random_range(0..i);
            for j in 0..k {
                x[(i, j)] = x[(source, j)];
            }
        }
        x
    }

    #[test]
    fn the_search_equals_brute_force_over_shapes_ties_and_offsets() {
        let mut rng = ChaCha8Rng::seed_from_u64(16);
        // Sizes across the block edges (256 queries, 2,048 reference rows).
        let shapes = [
            (1, 1, 1, 1),
            (5, 3, 2, 5),
            (40, 17, 3, 4),
            (2049, 300, 5, 3),
            (2100, 257, 1, 7),
            (700, 520, 30, 1),
            (300, 40, 0, 2),
        ];
        for (case, &(n_reference, n_queries, k, count)) in shapes.iter().enumerate() {
            for (levels, offset) in [(None, 0.0), (Some(3), 0.0), (None, 1e6), (Some(2), -1e3)] {
                let reference = data(&mut rng, n_reference, k, levels, offset);
                let mut queries = data(&mut rng, n_queries, k, levels, offset);
                // Some queries are reference rows: distance 0.
                for q in (0..n_queries).step_by(5) {
                    let r = rng.random_range(0..n_reference);
                    for j in 0..k {
                        queries[(q, j)] = reference[(r, j)];
                    }
                }
                let (reference, queries) = (reference.as_ref(), queries.as_ref());
                let expected = brute_force(reference, queries, count);
                for (products, found) in [
                    ("auto", nearest_neighbours(reference, queries, count)),
                    ("f32", search::<f32>(reference, queries, count)),
                    ("f64", search::<f64>(reference, queries, count)),
                ] {
                    assert_eq!(
                        found, expected,
                        "case {case}: {n_reference}×{k} reference, {n_queries} queries, \
                         {count} neighbours, levels {levels:?}, offset {offset}, {products} \
                         products"
                    );
                    assert_eq!(found.n_queries(), n_queries);
                }
            }
        }
    }

    #[test]
    fn codes_too_large_for_f32_products_are_searched_in_f64() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let reference = data(&mut rng, 300, 4, None, 1e16);
        let queries = data(&mut rng, 50, 4, None, 1e16);
        let found = nearest_neighbours(reference.as_ref(), queries.as_ref(), 2);
        assert_eq!(found, brute_force(reference.as_ref(), queries.as_ref(), 2));
        // In f32 the products overflow nothing here but lose every digit of the differences:
        // the band then holds every row, and the direct distances still decide.
        assert_eq!(
            search::<f32>(reference.as_ref(), queries.as_ref(), 2),
            found
        );
    }

    #[test]
    fn majority_vote_counts_and_breaks_ties_by_the_nearest() {
        let found = Neighbours {
            count: 4,
            rows: vec![0, 1, 2, 3, 3, 2, 1, 0, 4, 4, 4, 4],
            squared_distances: vec![0.0; 12],
        };
        let classes = [7, 2, 2, 7, 5];
        // Query 0: 7, 2, 2, 7 — two each; 7 is met first. Query 1: 7, 2, 2, 7 likewise.
        // Query 2: 5 four times.
        assert_eq!(found.vote(&classes), [7, 7, 5]);
        let classes = [1, 2, 2, 3, 5];
        // Query 0: 1, 2, 2, 3 — 2 has the majority although 1 is nearest.
        assert_eq!(found.vote(&classes)[0], 2);
    }

    #[test]
    #[should_panic(expected = "3 neighbours asked for among 2 reference rows")]
    fn more_neighbours_than_reference_rows_is_a_caller_bug() {
        let x = Mat::<f64>::zeros(2, 1);
        nearest_neighbours(x.as_ref(), x.as_ref(), 3);
    }
}
