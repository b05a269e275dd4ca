//! Streaming first and second moments: count, mean and centred cross-products, exact under
//! any offset, mergeable. [`MomentAccumulator`] is the door: it cuts chunks into pieces (and
//! splits large chunks of narrow rows between threads); `chunk` chooses each piece's path
//! (float, mixed, integer, bytes, ordered), each path in its own file; `columns` is the
//! per-feature first pass of the iterative solvers.
//!
//! Inside: `workspace` and `merge` at the bottom; `integer`, `float`, `columns`; `bytes` (uses
//! `integer`); `ordered` (uses `integer`, `bytes`); `chunk` (all paths); this file (`chunk`).

pub(crate) mod bytes;
pub(crate) mod chunk;
pub(crate) mod columns;
pub(crate) mod float;
pub(crate) mod integer;
pub(crate) mod merge;
pub(crate) mod ordered;
pub(crate) mod sparse;
pub(crate) mod workspace;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

use faer::{Mat, MatRef, Par};

use crate::collective::{Collective, Stage, agree, mean_across};
use crate::data::{ChunkSource, RowsAt};
use crate::error::{PcaError, Result};
use crate::kernel::bytes::{ByteProduct, MachineBytes};
use crate::kernel::parallel::faer_par;
use crate::kernel::products::{NARROW_MAX_FEATURES, RankTwoUpdate};
use crate::kernel::simd::dispatch;
use crate::moments::bytes::Stored;
use crate::moments::chunk::{piece_moments, stored_byte_piece_moments, whole_chunk_moments};
use crate::moments::merge::merge_mean;
use crate::moments::workspace::{ORDERED_MIN_ROWS, Workspace};
use crate::options::Precision;
use crate::real::{ChunkRef, Real};

/// Rows per piece. Narrow rows (at most [`NARROW_MAX_FEATURES`]) go in pieces of about
/// 256 KiB, a power of two of rows, at least 2·D (so that a piece's D² work, its merge, stays
/// small beside its N·D² products): a piece, read or copied, then stays in its core's
/// second-level cache for every look at it (the checks, the mean, the centring copy, the
/// products); the pieces are spread over the threads and merged in order. Wider rows: about
/// 4 MiB of f64 rows, at least 4·D, in whole blocks of 1,024 rows, the exact integer kernel's
/// block for pixels (a ragged last block would make one product in four a short, slow one).
pub(crate) fn cached_rows(n_features: usize) -> usize {
    let d = n_features.max(1);
    if d <= NARROW_MAX_FEATURES {
        let rows = ((1usize << 18) / (8 * d)).max(2 * d).clamp(64, 4096);
        // The largest power of two not above it.
        return 1 << rows.ilog2();
    }
    ((1usize << 19) / d)
        .max(4 * d)
        .div_ceil(1024)
        .saturating_mul(1024)
        .clamp(1024, 16384)
}

/// A chunk of bytes as `f32` rows (row-major).
fn widened(chunk: MatRef<'_, u8>) -> Vec<f32> {
    (0..chunk.nrows())
        .flat_map(|i| chunk.row(i).iter().map(|&b| f32::from(b)))
        .collect()
}

/// Accumulates count, mean and the centred cross-product matrix `Σ (x − μ)(x − μ)ᵀ` over chunks
/// of rows, and merges with other accumulators exactly (Chan, Golub & LeVeque's pairwise update):
/// the same piece serves chunks of a file, threads and machines.
///
/// ```text
/// n  = n_a + n_b,   δ = μ_b − μ_a,   μ = μ_a + δ n_b / n
/// M  = M_a + M_b + δ δᵀ n_a n_b / n
/// ```
///
/// Each chunk is centred on its own mean before its product is formed, so a constant offset
/// of 1e6 costs no accuracy (no `E[xxᵀ] − μμᵀ`).
///
/// ```
/// use principal::{faer::mat, MomentAccumulator};
/// let x = mat![[1.0, 2.0], [3.0, 5.0], [5.0, 11.0]];
/// let mut top = MomentAccumulator::new(2);
/// top.push(x.subrows(0, 1))?;
/// let mut bottom = MomentAccumulator::new(2);
/// bottom.push(x.subrows(1, 2))?;
/// top.merge(bottom)?;
/// let m = top.finish()?;
/// assert_eq!(m.n_samples(), 3);
/// assert!((m.mean()[1] - 6.0).abs() < 1e-12);
/// assert!((m.scatter()[(0, 0)] - 8.0).abs() < 1e-12);
/// # Ok::<(), principal::PcaError>(())
/// ```
#[derive(Clone, Debug)]
pub struct MomentAccumulator {
    n: usize,
    mean: Vec<f64>,
    scatter: Mat<f64>,
    precision: Precision,
    workspace: Workspace,
    /// The threads' buffers for narrow rows' pieces, kept from chunk to chunk.
    workers: Vec<PieceWorker>,
}

/// One thread's part in the pieces of narrow rows: the moments of its current group of pieces
/// (with their buffers), and the rows of a piece read by position (see [`RowsAt`]).
#[derive(Clone, Debug)]
struct PieceWorker {
    group: MomentAccumulator,
    rows: Vec<f64>,
}

/// Pieces per group: a thread takes a group of consecutive pieces and merges them in turn into
/// its own moments (in its cache), and the groups are merged in order into the accumulator: one
/// merge across threads (D² values from another core's cache) per group rather than per piece.
const PIECES_PER_GROUP: usize = 8;

/// The largest row-major copy [`MomentAccumulator::push`] makes of wide rows held column by
/// column.
const ROW_MAJOR_COPY_BYTES: usize = 64 << 20;

/// Groups a thread may finish ahead of the first group not yet merged: bounds the groups'
/// moments held for the in-order merge (each D²) when a thread falls behind.
const GROUPS_AHEAD: usize = 8;

/// `src`'s rows into `dst`, row-major: stripes of 64 rows on all threads, each stripe column
/// by column (it stays in the cache while its rows fill; row by row, each row's values would
/// come from D columns apart).
fn copy_row_major<T: Real>(src: MatRef<'_, T>, dst: &mut [T]) {
    use rayon::prelude::*;
    const TILE: usize = 64;
    let d = src.ncols();
    dst.par_chunks_mut(TILE * d)
        .enumerate()
        .for_each(|(stripe, rows)| {
            let (first, height) = (stripe * TILE, rows.len() / d);
            for j in 0..d {
                let column = src.col(j).subrows(first, height);
                for (i, &value) in column.iter().enumerate() {
                    rows[i * d + j] = value;
                }
            }
        });
}

/// The in-order merge of groups of pieces finished by several threads: what every thread
/// locks after its group.
struct InOrder<'a> {
    acc: &'a mut MomentAccumulator,
    /// The first group not yet merged.
    next: usize,
    /// Groups finished ahead of `next`: rows, mean and scatter (lower triangle).
    done: BTreeMap<usize, (usize, Vec<f64>, Mat<f64>)>,
    /// Scatter matrices of merged groups, for the next ones finished ahead.
    spare: Vec<Mat<f64>>,
    /// The first group (in order) that failed, and why.
    failed: Option<(usize, PcaError)>,
    /// A thread panicked: every other stops.
    stopped: bool,
}

impl InOrder<'_> {
    /// Merges group `k`'s moments (or keeps them until the groups before it are merged).
    fn finished(&mut self, k: usize, rows: usize, mean: Vec<f64>, scatter: &Mat<f64>) {
        if k != self.next {
            let d = scatter.nrows();
            let mut kept = self.spare.pop().unwrap_or_else(|| Mat::zeros(d, d));
            kept.copy_from(scatter);
            self.done.insert(k, (rows, mean, kept));
            return;
        }
        self.acc.combine(rows, &mean, scatter);
        self.next += 1;
        while let Some((rows, mean, kept)) = self.done.remove(&self.next) {
            self.acc.combine(rows, &mean, &kept);
            self.spare.push(kept);
            self.next += 1;
        }
    }

    /// Whether group `k` need not be computed: a group before it failed, or a thread panicked.
    fn skips(&self, k: usize) -> bool {
        self.stopped || self.failed.as_ref().is_some_and(|(j, _)| *j < k)
    }
}

fn lock<'a, 'b>(state: &'a Mutex<InOrder<'b>>) -> MutexGuard<'a, InOrder<'b>> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Wakes the other threads when a thread unwinds, so that none waits for a group that will
/// never be merged.
struct StopOnPanic<'a, 'b> {
    state: &'a Mutex<InOrder<'b>>,
    wake: &'a Condvar,
}

impl Drop for StopOnPanic<'_, '_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            lock(self.state).stopped = true;
            self.wake.notify_all();
        }
    }
}

/// The finished moments of a data set: what the covariance solver needs.
///
/// They can be stored and read back, or sent to another process, through their public parts
/// ([`Moments::into_parts`], [`Moments::from_parts`], which checks them), and merged with
/// others by turning them back into an accumulator (`MomentAccumulator::from(moments)`).
#[derive(Clone, Debug, PartialEq)]
pub struct Moments {
    n: usize,
    mean: Vec<f64>,
    scatter: Mat<f64>,
    precision: Precision,
}

/// The public parts of [`Moments`]: what a statistics file holds.
///
/// ```
/// use principal::{faer::mat, MomentAccumulator, Moments};
/// let mut acc = MomentAccumulator::new(2);
/// acc.push(mat![[1.0, 2.0], [3.0, 5.0], [5.0, 11.0]].as_ref())?;
/// let parts = acc.finish()?.into_parts();
/// assert_eq!((parts.n_samples, parts.mean[0]), (3, 3.0));
/// assert_eq!(parts.scatter[(0, 1)], parts.scatter[(1, 0)]);
/// let mut damaged = parts.clone();
/// damaged.scatter[(1, 1)] = -1.0;
/// assert!(Moments::from_parts(damaged).is_err());
/// let back = Moments::from_parts(parts)?;
/// assert_eq!(back.n_samples(), 3);
/// # Ok::<(), principal::PcaError>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct MomentParts {
    /// N, the number of rows.
    pub n_samples: usize,
    /// The mean of every feature (D).
    pub mean: Vec<f64>,
    /// `Σ (x − μ)(x − μ)ᵀ`, D×D and symmetric.
    pub scatter: Mat<f64>,
    /// The arithmetic the products of `f32` chunks were formed in ([`Precision::Mixed`] when
    /// any part of the data was accumulated with it).
    pub precision: Precision,
}

impl MomentAccumulator {
    /// An empty accumulator for rows of `n_features` values.
    pub fn new(n_features: usize) -> Self {
        MomentAccumulator {
            n: 0,
            mean: vec![0.0; n_features],
            scatter: Mat::zeros(n_features, n_features),
            precision: Precision::Full,
            workspace: Default::default(),
            workers: Vec::new(),
        }
    }

    /// The arithmetic of the products for `f32` chunks (see [`Precision`]); `Full` by default.
    pub fn with_precision(mut self, precision: Precision) -> Self {
        self.precision = precision;
        self
    }

    /// Number of rows pushed so far.
    pub fn n_samples(&self) -> usize {
        self.n
    }

    /// Number of features per row.
    pub fn n_features(&self) -> usize {
        self.mean.len()
    }

    /// Adds a chunk of rows. Non-finite values are rejected with their row counted from the first
    /// row ever pushed to this accumulator.
    pub fn push<T: Real>(&mut self, chunk: MatRef<'_, T>) -> Result<()> {
        self.check_width(chunk.ncols())?;
        let (n, d) = (chunk.nrows(), self.n_features());
        // Wide rows held column by column (a faer `Mat`, a Fortran-order array): the ordered
        // and byte paths read whole rows, so the rows go through row-major copies.
        if d > NARROW_MAX_FEATURES && chunk.col_stride() != 1 && n > 1 {
            return self.push_row_major_copies(chunk, ROW_MAJOR_COPY_BYTES);
        }
        if self.push_whole(chunk) {
            return Ok(());
        }
        // Wide rows: their products run on all threads, piece after piece.
        if d > NARROW_MAX_FEATURES {
            return self.push_pieces(chunk, self.n, faer_par());
        }
        // Narrow rows: their products run on one thread (in bands), so the pieces are spread
        // over the threads instead, each piece's passes and products on one thread, and merged
        // in order: the pieces depend on the shape only, so the result does not depend on the
        // number of threads or on which thread took which piece.
        let piece = cached_rows(d);
        if n <= piece {
            return self.push_pieces(chunk, self.n, Par::Seq);
        }
        let first = self.n;
        self.push_in_order(n, piece * PIECES_PER_GROUP, &|start, rows, worker| {
            let part = chunk.subrows(start, rows);
            worker.group.push_pieces(part, first + start, Par::Seq)
        })
    }

    /// Adds every row of `rows` (read by position) in the pieces and groups of [`Self::push`]
    /// for narrow rows, so with the same bits as pushing them as one chunk: each thread reads
    /// its pieces into its own buffer, which stays in its core's cache from the read to the
    /// products.
    fn push_by_position(&mut self, rows: &dyn RowsAt) -> Result<()> {
        let (n, d) = (rows.n_rows(), self.n_features());
        let piece = cached_rows(d);
        self.push_in_order(n, piece * PIECES_PER_GROUP, &|start, len, worker| {
            let PieceWorker {
                group,
                rows: values,
            } = worker;
            if values.len() < piece * d {
                values.resize(piece * d, 0.0);
            }
            let mut done = 0;
            while done < len {
                let r = piece.min(len - done);
                let values = &mut values[..r * d];
                rows.read_rows_at(start + done, values)?;
                let part = MatRef::from_row_major_slice(values, r, d);
                group
                    .push_pieces(part, start + done, Par::Seq)
                    .map_err(|e| match e {
                        PcaError::NonFinite { row, column, value } => {
                            rows.non_finite(row, column, value)
                        }
                        e => e,
                    })?;
                done += r;
            }
            Ok(())
        })
    }

    /// Adds `n` rows in groups of `group` rows: `moments_of(start, rows, worker)` adds rows
    /// `start..start + rows` to `worker.group` (empty before). The groups are taken by the
    /// threads in turn and merged in order, whichever thread finishes first, so the result is
    /// that of merging them one after the other on one thread. On an error, the first failing
    /// group's (in order) is returned.
    fn push_in_order(
        &mut self,
        n: usize,
        group: usize,
        moments_of: &(dyn Fn(usize, usize, &mut PieceWorker) -> Result<()> + Sync),
    ) -> Result<()> {
        let groups = n.div_ceil(group);
        let threads = rayon::current_num_threads().clamp(1, groups.max(1));
        let mut workers = std::mem::take(&mut self.workers);
        let (d, precision) = (self.n_features(), self.precision);
        if workers.len() < threads {
            workers.resize_with(threads, || PieceWorker {
                group: MomentAccumulator::new(d).with_precision(precision),
                rows: Vec::new(),
            });
        }
        let claimed = AtomicUsize::new(0);
        let wake = Condvar::new();
        let state = Mutex::new(InOrder {
            acc: self,
            next: 0,
            done: BTreeMap::new(),
            spare: Vec::new(),
            failed: None,
            stopped: false,
        });
        let work = |worker: &mut PieceWorker| {
            let _stop = StopOnPanic {
                state: &state,
                wake: &wake,
            };
            loop {
                let k = claimed.fetch_add(1, Ordering::Relaxed);
                if k >= groups {
                    return;
                }
                let mut s = lock(&state);
                while !s.skips(k) && k >= s.next + GROUPS_AHEAD {
                    s = wake.wait(s).unwrap_or_else(PoisonError::into_inner);
                }
                if s.skips(k) {
                    return;
                }
                drop(s);
                let start = k * group;
                worker.group.clear();
                let result = moments_of(start, group.min(n - start), worker);
                let mut s = lock(&state);
                match result {
                    Ok(()) => {
                        let g = &worker.group;
                        s.finished(k, g.n, g.mean.clone(), &g.scatter);
                    }
                    Err(e) => {
                        if s.failed.as_ref().is_none_or(|(j, _)| k < *j) {
                            s.failed = Some((k, e));
                        }
                    }
                }
                drop(s);
                wake.notify_all();
            }
        };
        if threads > 1 {
            use rayon::prelude::*;
            workers[..threads].par_iter_mut().for_each(work);
        } else {
            work(&mut workers[0]);
        }
        let state = state.into_inner().unwrap_or_else(PoisonError::into_inner);
        let failed = state.failed;
        self.workers = workers;
        match failed {
            Some((_, e)) => Err(e),
            None => Ok(()),
        }
    }

    /// Adds `chunk` whole by the ordered path (see `chunk`) and returns true, or returns false
    /// (nothing added) when that path does not apply.
    fn push_whole<T: Stored>(&mut self, chunk: MatRef<'_, T>) -> bool {
        let mut ws = std::mem::take(&mut self.workspace);
        ws.par = faer_par();
        let mean = whole_chunk_moments(chunk, &mut ws);
        if let Some(mean) = &mean {
            self.combine(chunk.nrows(), mean, &ws.scatter);
        }
        self.workspace = ws;
        mean.is_some()
    }

    /// Adds the rows of a wide chunk that is not row-major as [`Self::push`] adds row-major
    /// ones, through row-major copies: the ordered and byte paths read whole rows, and the
    /// copy costs a pass over the rows where those paths halve the time (Fashion-MNIST as a
    /// column-major f32 matrix: bench/results.md). Each copy is a whole number of
    /// [`cached_rows`] pieces, so that rows the pieces take give the bits of the same rows
    /// pushed row-major, within `bytes` ([`ROW_MAJOR_COPY_BYTES`] from `push`; a test's are
    /// smaller) unless that is fewer than [`ORDERED_MIN_ROWS`] rows (the ordered path's least).
    fn push_row_major_copies<T: Real>(&mut self, chunk: MatRef<'_, T>, bytes: usize) -> Result<()> {
        let (n, d) = (chunk.nrows(), chunk.ncols());
        let piece = cached_rows(d);
        let pieces =
            (bytes / (d * std::mem::size_of::<T>()) / piece).max(ORDERED_MIN_ROWS.div_ceil(piece));
        let most = pieces.saturating_mul(piece).min(n);
        let mut copy = vec![T::from_f64(0.0); most * d];
        let mut start = 0;
        while start < n {
            let rows = most.min(n - start);
            let copy = &mut copy[..rows * d];
            copy_row_major(chunk.subrows(start, rows), copy);
            self.push(MatRef::from_row_major_slice(copy, rows, d))?;
            start += rows;
        }
        Ok(())
    }

    /// Adds `chunk` piece by piece (rows counted from `first_row` in errors), each piece's
    /// passes and products run with `par`.
    fn push_pieces<T: Real>(
        &mut self,
        chunk: MatRef<'_, T>,
        first_row: usize,
        par: Par,
    ) -> Result<()> {
        let precision = self.precision;
        self.push_pieces_by(chunk.nrows(), par, |start, rows, ws| {
            let part = chunk.subrows(start, rows);
            piece_moments::<T, MachineBytes>(part, ws, first_row + start, precision)
        })
    }

    /// Adds `n` rows piece after piece, in order: `piece_moments(start, rows, ws)` gives the
    /// mean of rows `start..start + rows` and leaves their scatter in `ws.scatter` (`ws.par`
    /// is `par`). Stops at the first error.
    fn push_pieces_by(
        &mut self,
        n: usize,
        par: Par,
        mut piece_moments: impl FnMut(usize, usize, &mut Workspace) -> Result<Vec<f64>>,
    ) -> Result<()> {
        // Pieces of a few MiB: every look at the rows (checks, means, products) then hits the
        // cache; one look per piece at a large chunk would go to memory each time.
        let piece = cached_rows(self.n_features());
        let mut ws = std::mem::take(&mut self.workspace);
        ws.par = par;
        let mut start = 0;
        let result = loop {
            if start >= n {
                break Ok(());
            }
            let rows = piece.min(n - start);
            match piece_moments(start, rows, &mut ws) {
                Ok(mean_b) => self.combine(rows, &mean_b, &ws.scatter),
                Err(e) => break Err(e),
            }
            start += rows;
        };
        self.workspace = ws;
        result
    }

    /// An error unless a chunk of `found` features has this accumulator's number of them.
    fn check_width(&self, found: usize) -> Result<()> {
        if found != self.n_features() {
            return Err(PcaError::FeatureMismatch {
                expected: self.n_features(),
                found,
            });
        }
        Ok(())
    }

    /// Back to no rows, keeping the buffers.
    fn clear(&mut self) {
        self.n = 0;
        self.mean.fill(0.0);
        self.scatter.fill(0.0);
    }

    /// Adds a chunk of bytes as stored (`u8`: 8-bit pixels), with the bits of [`Self::push`] of
    /// the same values as `f32`. Wide rows go to the exact byte products straight from the
    /// bytes (no widening, no scan for integers): the chunk whole by the ordered path where
    /// `push` would take it, else piece by piece; anything else (narrow rows, a piece too
    /// short for the byte path, a machine without an exact byte product) is widened to `f32`
    /// first and taken as `push` takes it.
    ///
    /// ```
    /// use principal::{faer::Mat, MomentAccumulator};
    /// let bytes = Mat::<u8>::from_fn(3, 2, |i, j| (40 * i + j) as u8);
    /// let mut a = MomentAccumulator::new(2);
    /// a.push_bytes(bytes.as_ref())?;
    /// let mut b = MomentAccumulator::new(2);
    /// b.push(Mat::<f32>::from_fn(3, 2, |i, j| f32::from(bytes[(i, j)])).as_ref())?;
    /// assert_eq!(a.finish()?, b.finish()?);
    /// # Ok::<(), principal::PcaError>(())
    /// ```
    pub fn push_bytes(&mut self, chunk: MatRef<'_, u8>) -> Result<()> {
        self.check_width(chunk.ncols())?;
        let (n, d) = (chunk.nrows(), self.n_features());
        // Narrow rows go as f32 (row-major, as readers hand them out): the same path, so the
        // same bits.
        if d <= NARROW_MAX_FEATURES {
            let values = widened(chunk);
            return self.push(MatRef::from_row_major_slice(&values, n, d));
        }
        // The ordered path, straight from the bytes, where `push` takes it for the values as
        // f32 (the same orders and checks: the same bits).
        if self.push_whole(chunk) {
            return Ok(());
        }
        // The pieces of `push`'s wide rows, each straight from its bytes where the byte path
        // takes it.
        let (first_row, precision) = (self.n, self.precision);
        self.push_pieces_by(n, faer_par(), |start, rows, ws| {
            let part = chunk.subrows(start, rows);
            match stored_byte_piece_moments::<MachineBytes>(part, ws) {
                Some(mean) => Ok(mean),
                None => {
                    let values = widened(part);
                    let part = MatRef::from_row_major_slice(&values, rows, d);
                    piece_moments::<f32, MachineBytes>(part, ws, first_row + start, precision)
                }
            }
        })
    }

    /// Adds a chunk as a source hands it out (`f32` or `f64`).
    pub fn push_chunk(&mut self, chunk: ChunkRef<'_>) -> Result<()> {
        match chunk {
            ChunkRef::F32(m) => self.push(m),
            ChunkRef::F64(m) => self.push(m),
        }
    }

    /// One pass over `source`, with `precision` for its `f32` chunks.
    pub fn from_source(source: &mut dyn ChunkSource, precision: Precision) -> Result<Self> {
        let d = source.n_features();
        let mut acc = MomentAccumulator::new(d).with_precision(precision);
        // Narrow rows by position where the source can: each thread reads its own pieces.
        if (1..=NARROW_MAX_FEATURES).contains(&d)
            && let Some(done) = source.pass_by_position(&mut |rows| acc.push_by_position(rows))
        {
            done?;
            return Ok(acc);
        }
        // Wide rows stored as bytes, where the source has them and an exact byte product
        // takes them: the chunks as stored, never widened.
        if d > NARROW_MAX_FEATURES
            && MachineBytes::available().is_some()
            && let Some(done) = source.pass_bytes(&mut |chunk| acc.push_bytes(chunk))
        {
            done?;
            return Ok(acc);
        }
        source.pass(&mut |chunk| acc.push_chunk(chunk))?;
        Ok(acc)
    }

    /// Merges another accumulator into this one; the result equals one pass over both inputs.
    /// When either was accumulated with [`Precision::Mixed`], so is the result.
    pub fn merge(&mut self, other: MomentAccumulator) -> Result<()> {
        if other.n_features() != self.n_features() {
            return Err(PcaError::MergeMismatch {
                left: self.n_features(),
                right: other.n_features(),
            });
        }
        // Checked before anything changes: wrapping would leave a wrong count (and weights).
        if self.n.checked_add(other.n).is_none() {
            return Err(PcaError::SampleCountOverflow {
                left: self.n,
                right: other.n,
            });
        }
        if other.precision == Precision::Mixed {
            self.precision = Precision::Mixed;
        }
        if other.n > 0 {
            self.combine(other.n, &other.mean, &other.scatter);
        }
        Ok(())
    }

    /// The moments of every rank's rows, on every rank (the same bits everywhere): each rank
    /// accumulated its own rows into `local` (or failed: the agreement then stops every rank
    /// with that rank's error). One sum of the centred terms `M_r + n_r δ_r δ_rᵀ` (Chan's
    /// pairwise update for any number of parts, see `collective::mean_across`), in lower
    /// triangles: D(D+1)/2 values.
    pub(crate) fn reduce(
        local: Result<MomentAccumulator>,
        collective: &dyn Collective,
    ) -> Result<MomentAccumulator> {
        let (acc, outcome) = match local {
            // The count, doubled, with the precision in the low bit.
            Ok(acc) => {
                let code = 2 * acc.n + usize::from(acc.precision == Precision::Mixed);
                (Some(acc), Ok(code))
            }
            Err(e) => (None, Err(e)),
        };
        let codes = agree(collective, Stage::Moments, outcome)?;
        let mut acc = acc.expect("the agreement fails on a rank whose own work failed");
        if collective.size() == 1 {
            return Ok(acc);
        }
        let counts: Vec<usize> = codes.iter().map(|c| c / 2).collect();
        let (n, mean, delta) = mean_across(collective, &counts, &acc.mean);
        let d = acc.n_features();
        let own = acc.n as f64;
        let mut packed = Vec::with_capacity(d * (d + 1) / 2);
        for j in 0..d {
            let col = &acc.scatter.col_as_slice(j)[j..];
            packed.extend(
                col.iter()
                    .zip(&delta[j..])
                    .map(|(m, dl)| m + own * delta[j] * dl),
            );
        }
        collective.sum(&mut packed);
        let mut at = 0;
        for j in 0..d {
            let col = &mut acc.scatter.col_as_slice_mut(j)[j..];
            col.copy_from_slice(&packed[at..at + d - j]);
            at += d - j;
        }
        acc.n = n;
        acc.mean = mean;
        if codes.iter().any(|c| c % 2 == 1) {
            acc.precision = Precision::Mixed;
        }
        Ok(acc)
    }

    fn combine(&mut self, n_b: usize, mean_b: &[f64], scatter_b: &Mat<f64>) {
        let (delta, weight) = merge_mean(&mut self.mean, self.n, mean_b, n_b);
        // Only the lower triangle is kept while accumulating; `finish` mirrors it.
        let d = self.n_features();
        for j in 0..d {
            // `s += b + w·δ_j·δ`, vectorised for the machine (narrow rows merge a piece every
            // 256 KiB of rows); the `0·δ` term adds an exact zero.
            dispatch(RankTwoUpdate::<f64> {
                dst: &mut self.scatter.col_as_slice_mut(j)[j..],
                a: &delta[j..],
                alpha: weight * delta[j],
                b: &delta[j..],
                beta: 0.0,
                plus: Some(&scatter_b.col_as_slice(j)[j..]),
            });
        }
        self.n += n_b;
    }

    /// The moments of everything pushed and merged. Fails on an empty accumulator.
    pub fn finish(self) -> Result<Moments> {
        if self.n == 0 || self.n_features() == 0 {
            return Err(PcaError::EmptyData {
                n_samples: self.n,
                n_features: self.n_features(),
            });
        }
        let mut scatter = self.scatter;
        // Only the lower triangle was accumulated; the moments are symmetric.
        for j in 1..scatter.ncols() {
            for i in 0..j {
                scatter[(i, j)] = scatter[(j, i)];
            }
        }
        Ok(Moments {
            n: self.n,
            mean: self.mean,
            scatter,
            precision: self.precision,
        })
    }
}

impl From<Moments> for MomentAccumulator {
    /// An accumulator holding `moments`, to merge them with others or push more rows.
    fn from(moments: Moments) -> Self {
        MomentAccumulator {
            n: moments.n,
            mean: moments.mean,
            scatter: moments.scatter,
            precision: moments.precision,
            workspace: Default::default(),
            workers: Vec::new(),
        }
    }
}

impl Moments {
    /// Number of samples.
    pub fn n_samples(&self) -> usize {
        self.n
    }
    /// Number of features.
    pub fn n_features(&self) -> usize {
        self.mean.len()
    }
    /// The mean of every feature.
    pub fn mean(&self) -> &[f64] {
        &self.mean
    }
    /// `Σ (x − μ)(x − μ)ᵀ`, D×D and symmetric; divide by `N − ddof` for the covariance.
    pub fn scatter(&self) -> MatRef<'_, f64> {
        self.scatter.as_ref()
    }
    /// The arithmetic of the products of `f32` chunks ([`Precision::Mixed`] when any part of
    /// the data was accumulated with it).
    pub fn precision(&self) -> Precision {
        self.precision
    }

    /// The parts, to store or send.
    pub fn into_parts(self) -> MomentParts {
        MomentParts {
            n_samples: self.n,
            mean: self.mean,
            scatter: self.scatter,
            precision: self.precision,
        }
    }

    /// Moments from their parts, checked: at least one sample and one feature, a mean of D
    /// values and a D×D scatter matrix, every value finite, the scatter matrix symmetric with a
    /// non-negative diagonal and no entry beyond Cauchy–Schwarz's bound `√(MᵢᵢMⱼⱼ)` (to
    /// rounding): what every matrix of centred cross-products satisfies.
    pub fn from_parts(parts: MomentParts) -> Result<Moments> {
        let MomentParts {
            n_samples: n,
            mean,
            scatter,
            precision,
        } = parts;
        let d = mean.len();
        let invalid = |detail: String| Err(PcaError::InvalidMoments(detail));
        if n == 0 || d == 0 {
            return invalid(format!("{n} samples × {d} features: nothing to fit"));
        }
        if scatter.nrows() != d || scatter.ncols() != d {
            return invalid(format!(
                "the scatter matrix is {}×{} for a mean of {d} features",
                scatter.nrows(),
                scatter.ncols()
            ));
        }
        if let Some(j) = mean.iter().position(|m| !m.is_finite()) {
            return invalid(format!("mean {j} is {}", mean[j]));
        }
        for j in 0..d {
            for i in 0..d {
                let v = scatter[(i, j)];
                if !v.is_finite() {
                    return invalid(format!("scatter ({i}, {j}) is {v}"));
                }
            }
        }
        for j in 0..d {
            for i in 0..d {
                let (v, t) = (scatter[(i, j)], scatter[(j, i)]);
                if v.to_bits() != t.to_bits() {
                    return invalid(format!(
                        "the scatter matrix is not symmetric: ({i}, {j}) is {v}, ({j}, {i}) is {t}"
                    ));
                }
                if i == j && v < 0.0 {
                    return invalid(format!("scatter ({i}, {i}) is negative: {v}"));
                }
            }
        }
        for j in 0..d {
            for i in j + 1..d {
                let bound = (scatter[(i, i)] * scatter[(j, j)]).sqrt();
                let v = scatter[(i, j)];
                if v.abs() > bound * (1.0 + 1e-9) + f64::MIN_POSITIVE {
                    return invalid(format!(
                        "scatter ({i}, {j}) = {v} is beyond √(scatter ({i}, {i}) · scatter \
                         ({j}, {j})) = {bound}"
                    ));
                }
            }
        }
        Ok(Moments {
            n,
            mean,
            scatter,
            precision,
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::moments::workspace::ColumnOrders;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Chunks of bytes as stored give the bits of the same values pushed as `f32` rows (as
    /// readers hand them out), with whatever byte product this machine has, on every path the
    /// `f32` rows would take: wide rows in pieces (a whole piece and a short one, one under the
    /// byte path's fewest rows), narrow rows, and chunks long enough for the ordered path (an
    /// image with a blank border; then two more in the orders learnt from it), pushed in turn
    /// into one accumulator.
    #[test]
    fn chunks_of_bytes_give_the_bits_of_the_same_f32_rows() {
        let mut rng = ChaCha8Rng::seed_from_u64(26);
        let wide = 400;
        let mut chunks = vec![
            Mat::<u8>::from_fn(cached_rows(wide) + 1000, wide, |_, _| rng.random()),
            Mat::<u8>::from_fn(cached_rows(wide) + 40, wide, |_, _| rng.random()),
            Mat::<u8>::from_fn(9000, wide, |_, j| {
                let inside = (3..17).contains(&(j / 20)) && (3..17).contains(&(j % 20));
                if inside { rng.random() } else { 0 }
            }),
        ];
        // Two more in the orders learnt from it (a stream's later chunks).
        for _ in 0..2 {
            chunks.push(Mat::<u8>::from_fn(4500, wide, |_, j| {
                let inside = (2..15).contains(&(j / 20)) && (4..18).contains(&(j % 20));
                if inside { rng.random() } else { 0 }
            }));
        }
        for chunk in &chunks {
            assert!(chunk.ncols() > NARROW_MAX_FEATURES);
        }
        let narrow = vec![Mat::<u8>::from_fn(3000, 20, |_, _| rng.random())];
        for (d, chunks) in [(wide, &mut chunks), (20, &mut narrow.clone())] {
            let mut bytes = MomentAccumulator::new(d);
            let mut floats = MomentAccumulator::new(d);
            for chunk in chunks.iter() {
                let (n, d) = (chunk.nrows(), chunk.ncols());
                let stored: Vec<u8> = (0..n)
                    .flat_map(|i| (0..d).map(move |j| chunk[(i, j)]))
                    .collect();
                let widened: Vec<f32> = stored.iter().map(|&b| f32::from(b)).collect();
                bytes
                    .push_bytes(MatRef::from_row_major_slice(&stored, n, d))
                    .unwrap();
                floats
                    .push(MatRef::from_row_major_slice(&widened, n, d))
                    .unwrap();
            }
            if d == wide {
                for acc in [&bytes, &floats] {
                    assert!(matches!(acc.workspace.orders, ColumnOrders::Learnt(_)));
                }
            }
            let (a, b) = (bytes.finish().unwrap(), floats.finish().unwrap());
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(a.mean()), bits(b.mean()), "{d} features");
            for j in 0..d {
                let (x, y) = (a.scatter().col(j), b.scatter().col(j));
                assert!(
                    x.iter()
                        .zip(y.iter())
                        .all(|(x, y)| x.to_bits() == y.to_bits()),
                    "{d} features, column {j}"
                );
            }
        }
    }

    /// The obviously-correct reference: two-pass centring and a plain triple loop, compensated.
    pub(crate) fn reference_moments(x: &Mat<f64>) -> (Vec<f64>, Vec<Vec<f64>>) {
        let (n, d) = (x.nrows(), x.ncols());
        let mean: Vec<f64> = (0..d)
            .map(|j| (0..n).map(|i| x[(i, j)]).sum::<f64>() / n as f64)
            .collect();
        let scatter = (0..d)
            .map(|a| {
                (0..d)
                    .map(|b| {
                        (0..n)
                            .map(|i| (x[(i, a)] - mean[a]) * (x[(i, b)] - mean[b]))
                            .sum()
                    })
                    .collect()
            })
            .collect();
        (mean, scatter)
    }

    /// Uniform values of spread growing with the feature, around `offset` times the feature's
    /// number (a careless centring shows far from zero).
    pub(crate) fn tall(n: usize, d: usize, seed: u64, offset: f64) -> Mat<f64> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        Mat::from_fn(n, d, |_, j| {
            offset * (j as f64 + 1.0) + rng.random::<f64>() * (j as f64 + 1.0)
        })
    }

    pub(crate) fn moments_of(x: MatRef<'_, f64>, chunk_rows: usize) -> Moments {
        let mut acc = MomentAccumulator::new(x.ncols());
        let mut start = 0;
        while start < x.nrows() {
            let rows = chunk_rows.min(x.nrows() - start);
            acc.push(x.subrows(start, rows)).unwrap();
            start += rows;
        }
        acc.finish().unwrap()
    }

    #[test]
    fn a_chunk_split_between_threads_equals_small_pushes() {
        // Near zero the two agree to a few ulps. At 1e6 every merge of pushes of 1,000 rows
        // adds δδᵀ·n_a·n_b/n with δ (about 0.01) carrying the means' rounding, ε·1e6 ≈ 1e-10:
        // about 2e-9 per merge, 40 merges, against entries of about 3e3.
        for (offset, tolerance) in [(0.0, 1e-13), (1e6, 2e-11)] {
            let x = tall(40_000, 7, 1, offset);
            assert!(x.nrows() >= 2 * cached_rows(7));
            let whole = moments_of(x.as_ref(), x.nrows());
            let small = moments_of(x.as_ref(), 1000);
            for a in 0..7 {
                let (m, w) = (whole.mean()[a], small.mean()[a]);
                assert!(
                    (m - w).abs() <= 1e-15 * w.abs().max(1.0),
                    "mean {a}: {m} vs {w}"
                );
                for b in 0..=a {
                    let (s, t) = (whole.scatter()[(a, b)], small.scatter()[(a, b)]);
                    let scale = (small.scatter()[(a, a)] * small.scatter()[(b, b)]).sqrt();
                    assert!(
                        (s - t).abs() <= tolerance * scale,
                        "offset {offset} ({a},{b}): {s} vs {t}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_same_bits_on_any_number_of_threads() {
        // One piece (its passes and products parallel), then a chunk split between threads;
        // 100 features: products in bands; 400: faer's triangular product.
        for (rows, d) in [(5_000, 5), (40_000, 5), (3_000, 100), (1_500, 400)] {
            same_bits_on_any_number_of_threads(tall(rows, d, 2, 1e6));
        }
    }

    fn same_bits_on_any_number_of_threads(x: Mat<f64>) {
        // Column-major as built, and row-major as the readers hand chunks out.
        let rows = x.transpose().to_owned();
        for view in [x.as_ref(), rows.transpose()] {
            let on = |threads: usize| {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                pool.install(|| moments_of(view, view.nrows()))
            };
            let (one, two, three) = (on(1), on(2), on(3));
            for other in [&two, &three] {
                assert_eq!(one.mean(), other.mean());
                assert_eq!(one.scatter(), other.scatter());
            }
        }
    }

    /// Moments survive their parts (symmetric, as `scatter` says), merge again after a round
    /// trip as if never stored, and damaged parts are refused with what is wrong.
    #[test]
    fn moments_round_trip_through_their_parts_and_damaged_parts_are_refused() {
        let x = tall(3000, 4, 9, 1e6);
        let whole = moments_of(x.as_ref(), 3000);
        let s = whole.scatter();
        for i in 0..4 {
            for j in 0..4 {
                assert_eq!(s[(i, j)].to_bits(), s[(j, i)].to_bits());
            }
        }
        let back = Moments::from_parts(whole.clone().into_parts()).unwrap();
        assert_eq!(back, whole);
        let top = moments_of(x.subrows(0, 1000).as_ref(), 1000);
        let bottom = moments_of(x.subrows(1000, 2000).as_ref(), 2000);
        let stored = |m: Moments| Moments::from_parts(m.into_parts()).unwrap();
        let mut acc = MomentAccumulator::from(stored(top));
        acc.merge(MomentAccumulator::from(stored(bottom))).unwrap();
        let merged = acc.finish().unwrap();
        assert_eq!(merged.n_samples(), 3000);
        for i in 0..4 {
            let m = whole.mean()[i];
            assert!((merged.mean()[i] - m).abs() <= 1e-15 * m);
            for j in 0..4 {
                let scale = (s[(i, i)] * s[(j, j)]).sqrt();
                let e = (merged.scatter()[(i, j)] - s[(i, j)]).abs();
                assert!(e <= 1e-10 * scale, "({i}, {j}): {e}");
                assert_eq!(merged.scatter()[(i, j)], merged.scatter()[(j, i)]);
            }
        }
        let parts = whole.into_parts();
        type Damage = fn(&mut MomentParts);
        let damage: [(&str, Damage); 7] = [
            ("0 samples", |p| p.n_samples = 0),
            ("the scatter matrix is 4×3", |p| {
                p.scatter = p.scatter.subcols(0, 3).to_owned()
            }),
            ("mean 2 is NaN", |p| p.mean[2] = f64::NAN),
            ("scatter (1, 2) is inf", |p| {
                p.scatter[(1, 2)] = f64::INFINITY
            }),
            ("not symmetric", |p| p.scatter[(0, 3)] *= 1.5),
            ("scatter (2, 2) is negative", |p| p.scatter[(2, 2)] = -1.0),
            ("is beyond", |p| {
                let v = 2.0 * (p.scatter[(0, 0)] * p.scatter[(1, 1)]).sqrt();
                p.scatter[(0, 1)] = v;
                p.scatter[(1, 0)] = v;
            }),
        ];
        for (expected, damage) in damage {
            let mut bad = parts.clone();
            damage(&mut bad);
            let e = Moments::from_parts(bad).unwrap_err().to_string();
            assert!(
                e.starts_with("inconsistent moments: ") && e.contains(expected),
                "{e}"
            );
        }
    }

    #[test]
    fn a_non_finite_value_in_the_second_half_is_named_by_its_row() {
        let mut x = tall(40_000, 3, 3, 1e6);
        x[(35_000, 1)] = f64::INFINITY;
        let mut acc = MomentAccumulator::new(3);
        acc.push(tall(5, 3, 4, 1e6).as_ref()).unwrap();
        let err = acc.push(x.as_ref()).unwrap_err().to_string();
        assert!(err.contains("35005") && err.contains("inf"), "{err}");
    }

    /// A matrix's rows read by position, as a file's reader reads them: what
    /// `push_by_position` takes. Its errors for non-finite values say they are its own.
    struct MatrixRows<'a>(MatRef<'a, f64>);

    impl RowsAt for MatrixRows<'_> {
        fn n_rows(&self) -> usize {
            self.0.nrows()
        }

        fn read_rows_at(&self, first_row: usize, out: &mut [f64]) -> Result<()> {
            let d = self.0.ncols();
            for (i, row) in out.chunks_exact_mut(d).enumerate() {
                for (j, v) in row.iter_mut().enumerate() {
                    *v = self.0[(first_row + i, j)];
                }
            }
            Ok(())
        }

        fn non_finite(&self, row: usize, column: usize, value: f64) -> PcaError {
            PcaError::Source(format!("the matrix's row {row}, column {column}: {value}").into())
        }
    }

    /// Narrow rows go in pieces and groups counted from the first row, merged in order: rows
    /// read by position, pushed whole, or pushed in chunks of whole groups give the same bits,
    /// on 1, 2 or 3 threads; ragged last groups and pieces, an offset of 1e6, a single row,
    /// groups of few and of many pieces.
    #[test]
    fn pieces_merged_in_order_give_the_same_bits_however_the_rows_come() {
        for (n, d) in [(1, 3), (300, 100), (5_000, 100), (70_000, 5), (9_000, 320)] {
            // Row-major, as the readers hand chunks out (a column-major block sums its columns
            // in another order).
            let rows = tall(n, d, 7, 1e6).transpose().to_owned();
            let x = rows.transpose();
            let group = cached_rows(d) * PIECES_PER_GROUP;
            let want = moments_of(x.as_ref(), n);
            let in_groups = moments_of(x.as_ref(), group);
            assert_eq!(in_groups, want, "{n}×{d} in chunks of {group} rows");
            for threads in [1, 2, 3] {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                let (whole, by_position) = pool.install(|| {
                    let mut acc = MomentAccumulator::new(d);
                    acc.push_by_position(&MatrixRows(x.as_ref())).unwrap();
                    (moments_of(x.as_ref(), n), acc.finish().unwrap())
                });
                assert_eq!(whole, want, "{n}×{d} pushed whole on {threads} thread(s)");
                assert_eq!(
                    by_position, want,
                    "{n}×{d} by position on {threads} thread(s)"
                );
            }
        }
    }

    /// Wide rows held column by column go through row-major copies: images take the ordered
    /// path with the bits of the same rows pushed row-major; float rows cut into several
    /// copies give the bits of one row-major push (the copies end where pieces end); a
    /// non-finite value in a later copy is named by its row in the whole chunk.
    #[test]
    fn wide_column_major_rows_go_through_row_major_copies() {
        // Column-major D × N: its transpose is the rows, row-major.
        fn row_major<T: Copy>(x: &Mat<T>) -> Mat<T> {
            Mat::from_fn(x.ncols(), x.nrows(), |j, i| x[(i, j)])
        }
        let mut rng = ChaCha8Rng::seed_from_u64(21);
        // Images: a blank border, integer pixels inside.
        let (n, d) = (ORDERED_MIN_ROWS + 500, NARROW_MAX_FEATURES + 80);
        let by_columns = Mat::<f32>::from_fn(n, d, |_, j| {
            if j % 40 < 25 && rng.random_range(0..3) > 0 {
                rng.random_range(0..256) as f32
            } else {
                0.0
            }
        });
        let by_rows = row_major(&by_columns);
        let (mut columns, mut rows) = (MomentAccumulator::new(d), MomentAccumulator::new(d));
        columns.push(by_columns.as_ref()).unwrap();
        rows.push(by_rows.transpose()).unwrap();
        assert!(matches!(columns.workspace.orders, ColumnOrders::Learnt(_)));
        assert_eq!(columns.finish().unwrap(), rows.finish().unwrap());

        let (n, d) = (3 * ORDERED_MIN_ROWS + 300, NARROW_MAX_FEATURES + 20);
        let mut by_columns = Mat::<f64>::from_fn(n, d, |_, j| {
            1e3 + rng.random_range(-1.0..1.0) * (1.0 + j as f64)
        });
        let by_rows = row_major(&by_columns);
        let mut columns = MomentAccumulator::new(d);
        // The least copy: ORDERED_MIN_ROWS rows, so four copies.
        columns
            .push_row_major_copies(by_columns.as_ref(), 1)
            .unwrap();
        let mut rows = MomentAccumulator::new(d);
        rows.push(by_rows.transpose()).unwrap();
        assert_eq!(columns.finish().unwrap(), rows.finish().unwrap());

        by_columns[(2 * ORDERED_MIN_ROWS + 7, 3)] = f64::NAN;
        let mut columns = MomentAccumulator::new(d);
        columns.push(by_columns.subrows(0, 10)).unwrap();
        let e = columns
            .push_row_major_copies(by_columns.as_ref(), 1)
            .unwrap_err();
        assert!(
            matches!(e, PcaError::NonFinite { row, column: 3, .. } if row == 10 + 2 * ORDERED_MIN_ROWS + 7),
            "{e}"
        );
    }

    /// Rows whose first group is read only once a later group's non-finite value has been
    /// reported (or after a second, on one thread): the later failure comes first in time.
    struct LateFirstGroup<'a> {
        rows: MatrixRows<'a>,
        later_failed: std::sync::atomic::AtomicBool,
    }

    impl RowsAt for LateFirstGroup<'_> {
        fn n_rows(&self) -> usize {
            self.rows.n_rows()
        }

        fn read_rows_at(&self, first_row: usize, out: &mut [f64]) -> Result<()> {
            if first_row == 0 {
                let waited = std::time::Instant::now();
                while !self.later_failed.load(Ordering::SeqCst)
                    && waited.elapsed().as_secs_f64() < 1.0
                {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
            }
            self.rows.read_rows_at(first_row, out)
        }

        fn non_finite(&self, row: usize, column: usize, value: f64) -> PcaError {
            if row > 0 && row >= cached_rows(self.rows.0.ncols()) * PIECES_PER_GROUP {
                self.later_failed.store(true, Ordering::SeqCst);
            }
            self.rows.non_finite(row, column, value)
        }
    }

    /// The first non-finite value in reading order is reported, through the rows' own error,
    /// whichever thread found which first; a value in a later group does not hide it, even
    /// when that group fails first.
    #[test]
    fn the_first_non_finite_value_read_by_position_is_named_by_the_rows() {
        let (n, d) = (20_000, 100);
        let mut x = tall(n, d, 8, 1e6);
        x[(100, 5)] = f64::NAN;
        x[(4_106, 1)] = f64::INFINITY;
        for threads in [1, 2, 3] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let rows = LateFirstGroup {
                rows: MatrixRows(x.as_ref()),
                later_failed: false.into(),
            };
            let e = pool.install(|| {
                let mut acc = MomentAccumulator::new(d);
                acc.push_by_position(&rows).unwrap_err().to_string()
            });
            assert_eq!(
                e, "the matrix's row 100, column 5: NaN",
                "{threads} thread(s)"
            );
        }
        x[(100, 5)] = 1e6;
        x[(4_106, 1)] = 2e6;
        x[(15_000, 2)] = f64::NAN;
        x[(9_000, 7)] = f64::INFINITY;
        x[(12_345, 3)] = f64::NEG_INFINITY;
        for threads in [1, 2, 3] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let e = pool.install(|| {
                let mut acc = MomentAccumulator::new(d);
                acc.push_by_position(&MatrixRows(x.as_ref()))
                    .unwrap_err()
                    .to_string()
            });
            assert_eq!(
                e, "the matrix's row 9000, column 7: inf",
                "{threads} thread(s)"
            );
        }
    }
}
