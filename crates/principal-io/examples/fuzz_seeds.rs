//! Writes the seed corpus of the fuzz targets (`fuzz/corpus/<target>/`): one small good file of
//! each format a target reads, the same files the mutation tests damage.
//!
//! `cargo run --release --workspace --example fuzz_seeds -- fuzz/corpus`

#[path = "../tests/common/mod.rs"]
mod common;

use std::path::PathBuf;

use common::{
    arrow_bytes, csv_bytes, csv_gaps_bytes, gz, idx, idx_labels_bytes, model_bytes, mtx_bytes, npy,
    npy_gaps_bytes, npy_labels_bytes, parquet_bytes, parquet_gaps_bytes, parquet_labels_bytes,
    statistics_bytes, text_labels_bytes,
};

/// The `tenx` target's input: a 10x directory's three files joined by NUL bytes.
fn tenx_bytes() -> Vec<u8> {
    let mut bytes = mtx_bytes();
    bytes.push(0);
    bytes.extend_from_slice(b"ENSG1\tA\tGene Expression\nENSG2\tB\tGene Expression\n\
                              ENSG3\tC\tGene Expression\nENSG4\tD\tGene Expression\nENSG5\tE\tGene Expression\n");
    bytes.push(0);
    bytes.extend_from_slice(b"AAAC-1\nAAAG-1\nAAAT-1\nAACA-1\n");
    bytes
}

fn main() -> std::io::Result<()> {
    let root = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "fuzz/corpus".into()),
    );
    let data: Vec<f64> = (0..24).map(|k| f64::from(k) * 0.125 - 1.0).collect();
    let scratch = tempfile::TempDir::new()?;
    let seeds: Vec<(&str, &str, Vec<u8>)> = vec![
        ("csv", "iris-like.csv", csv_bytes()),
        ("csv", "tabs.tsv", b"a\tb\n1\t2\n3\t4\n".to_vec()),
        ("npy", "c-order.npy", npy(&data, 6, 4)),
        ("idx", "images-idx3-ubyte", idx(4)),
        ("parquet", "snappy.parquet", parquet_bytes()),
        ("arrow_ipc", "plain.arrow", arrow_bytes(false, false)),
        ("arrow_ipc", "lz4.arrow", arrow_bytes(false, true)),
        ("arrow_ipc", "plain.arrows", arrow_bytes(true, false)),
        ("arrow_ipc", "lz4.arrows", arrow_bytes(true, true)),
        ("gzip", "csv.gz", gz(&csv_bytes())),
        ("gzip", "npy.gz", gz(&npy(&data, 6, 4))),
        ("gzip", "idx.gz", gz(&idx(4))),
        ("gzip", "arrows.gz", gz(&arrow_bytes(true, false))),
        (
            "model_file",
            "model.safetensors",
            model_bytes(scratch.path()),
        ),
        ("missing", "gaps.csv", csv_gaps_bytes()),
        ("missing", "gaps.npy", npy_gaps_bytes()),
        ("missing", "nulls.parquet", parquet_gaps_bytes()),
        ("labels", "labels-idx1-ubyte", idx_labels_bytes()),
        ("labels", "labels.txt", text_labels_bytes()),
        ("labels", "labels.npy", npy_labels_bytes()),
        ("labels", "labels.parquet", parquet_labels_bytes()),
        (
            "statistics_file",
            "part.stats",
            statistics_bytes(scratch.path()),
        ),
        ("mtx", "rows.mtx", mtx_bytes()),
        ("mtx", "rows.mtx.gz", gz(&mtx_bytes())),
        // 10x: matrix.mtx (5 genes × 4 cells), features.tsv and barcodes.tsv, split at NULs.
        ("tenx", "10x", tenx_bytes()),
    ];
    #[cfg(feature = "h5ad")]
    let seeds = {
        use common::{H5adLayout, h5ad_bytes};
        let mut seeds = seeds;
        seeds.extend([
            ("h5ad", "dense.h5ad", h5ad_bytes(H5adLayout::Dense)),
            ("h5ad", "csr.h5ad", h5ad_bytes(H5adLayout::Csr)),
            ("h5ad", "csc.h5ad", h5ad_bytes(H5adLayout::Csc)),
        ]);
        seeds
    };
    for (target, name, bytes) in seeds {
        let dir = root.join(target);
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join(format!("seed-{name}")), bytes)?;
    }
    Ok(())
}
