//! Sparse rows as the sparse readers (MatrixMarket, 10x, `.h5ad`) build their CSR blocks.

use principal::sparse::Csr;

/// Adds a row to `csr` from its entries (columns, values), sorted by column, repeated columns
/// summed.
pub(crate) fn push_row(csr: &mut Csr<f64, u32>, entries: &mut [(usize, f64)]) {
    entries.sort_by_key(|e| e.0);
    let mut k = 0;
    while k < entries.len() {
        let (c, mut v) = entries[k];
        k += 1;
        while k < entries.len() && entries[k].0 == c {
            v += entries[k].1;
            k += 1;
        }
        csr.push_entry(c, v);
    }
    csr.end_row();
}
