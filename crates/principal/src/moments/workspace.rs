//! The buffers a moment accumulator reuses from chunk to chunk, and what it learnt of them.

use crate::kernel::parallel::faer_par;
use faer::{Mat, Par};

/// Buffers reused from chunk to chunk: fresh D×D matrices for every piece of a few hundred rows
/// cost more in page faults than the products themselves.
#[derive(Clone, Debug)]
pub(crate) struct Workspace {
    /// The piece's result: lower triangle of its centred cross-products (upper: scratch).
    pub(crate) scatter: Mat<f64>,
    /// A block's f32 product, `(D + 1) × (D + 1)` (the ordered path adds a row of ones).
    pub(crate) partial: Mat<f32>,
    /// A block of rows as f32 columns.
    pub(crate) block32: Mat<f32>,
    /// A block of rows as f64 columns.
    pub(crate) block64: Mat<f64>,
    /// The ordered path's sums of one order's rows, in its ranks (D × D).
    pub(crate) ranked: Mat<f64>,
    /// Blocks of bytes and their products (see `moments::bytes`).
    pub(crate) bytes: ByteBuffers,
    /// Threads for the passes and products of one piece.
    pub(crate) par: Par,
    /// The ordered path's column orders for these chunks.
    pub(crate) orders: ColumnOrders,
}

/// A block's bytes and product, grown as needed.
#[derive(Clone, Debug, Default)]
pub(crate) struct ByteBuffers {
    /// `u` of a block, `(a + 1) × r` by rows: a row per feature, then a row of ones.
    pub(crate) u: Vec<u8>,
    /// `y` of a block, `a × r` by rows.
    pub(crate) y: Vec<i8>,
    /// The product `G`, `(a + 1) × a`, row-major (a block's corner `a` at most `D`).
    pub(crate) product: Vec<i32>,
}

impl Default for Workspace {
    fn default() -> Self {
        Workspace {
            scatter: Mat::new(),
            partial: Mat::new(),
            block32: Mat::new(),
            block64: Mat::new(),
            ranked: Mat::new(),
            bytes: Default::default(),
            par: faer_par(),
            orders: ColumnOrders::Unlearnt,
        }
    }
}

impl Workspace {
    /// Ready for rows of `d` features: the scatter zeroed, buffers of another width dropped.
    pub(crate) fn prepare(&mut self, d: usize) {
        if !self.fit(d) {
            self.scatter.fill(0.0);
        }
    }

    /// Buffers for rows of `d` features (those of another width dropped), the scatter left as
    /// it is, for a path that writes it before adding to it; true when they were made afresh
    /// (zeroed).
    pub(crate) fn fit(&mut self, d: usize) -> bool {
        if self.scatter.nrows() == d {
            return false;
        }
        *self = Workspace {
            scatter: Mat::zeros(d, d),
            // One more row and column for the ordered path's row of ones.
            partial: Mat::zeros(d + 1, d + 1),
            par: self.par,
            ..Default::default()
        };
        true
    }
}

/// Fewest rows for which ordering them is worth a pass: a streamed file's chunks of wide rows
/// (the CLI's are 5,120 rows of 784 features) take the path with the orders learnt from the
/// first of them; fewer rows leave too little out beside the blocks' ragged ends (in chunks of
/// 2,560 Fashion-MNIST rows, fixed 2,048-row blocks left 0.99 of the dense work and 512-row
/// blocks 0.71, bench/results.md).
pub(crate) const ORDERED_MIN_ROWS: usize = 4096;

/// The column orders of an accumulator's chunks, learnt from the first chunk the ordered path
/// is tried on and kept for the next ones (in a stream of chunks, learning them again for
/// each would cost more than it saves), and learnt again from a chunk they leave too much work
/// in, until the path is declined by the chunk they were learnt from: then the chunks take the
/// general path without another look (data that is not integers, has few zeros, or whose
/// zeros are too scattered to leave whole columns out). Which path a chunk takes changes its
/// speed, and its result only by the rounding of merging it whole rather than in pieces.
#[derive(Clone, Debug, Default)]
pub(crate) enum ColumnOrders {
    /// Nothing learnt yet.
    #[default]
    Unlearnt,
    /// Per order, each column's rank.
    Learnt(Vec<Vec<u32>>),
    /// The path does not apply to these chunks.
    Declined,
}

impl ColumnOrders {
    /// Whether a chunk of `n` rows may take the ordered path.
    pub(crate) fn may_take(&self, n: usize) -> bool {
        n >= ORDERED_MIN_ROWS && !matches!(self, ColumnOrders::Declined)
    }
}
