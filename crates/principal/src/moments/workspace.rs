//! The buffers a moment accumulator reuses from chunk to chunk.

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
    /// Blocks of bytes and their products (see `moments::bytes`).
    pub(crate) bytes: ByteBuffers,
    /// Threads for the passes and products of one piece.
    pub(crate) par: Par,
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
            bytes: Default::default(),
            par: Par::rayon(0),
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
