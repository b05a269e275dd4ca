//! Parquet files in every compression codec principal reads (uncompressed, Snappy, gzip, LZ4,
//! LZ4_RAW, Zstandard, Brotli), written by the `parquet` crate and read back exactly, also
//! when a page compresses as far as its codec goes (a constant column).

use std::sync::Arc;

use crate::common;

use arrow_array::{ArrayRef, Float64Array, RecordBatch};
use parquet::basic::{BrotliLevel, Compression, GzipLevel, ZstdLevel};
use principal_io::{ReadOptions, read_table};

/// Every codec of the Parquet format but LZO, at its default level.
fn codecs() -> Vec<Compression> {
    vec![
        Compression::UNCOMPRESSED,
        Compression::SNAPPY,
        Compression::GZIP(GzipLevel::default()),
        Compression::LZ4,
        Compression::LZ4_RAW,
        Compression::ZSTD(ZstdLevel::default()),
        Compression::BROTLI(BrotliLevel::default()),
    ]
}

/// Issue 24: a Brotli-compressed Parquet file was refused with the `parquet` crate's raw
/// message ('Disabled feature at compile time: brotli'). Every codec reads back the values
/// written, bit for bit.
#[test]
fn parquet_files_of_every_codec_read_back_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let rows = 50_000;
    let varied: Vec<f64> = (0..rows).map(|i| (i as f64 * 0.37).sin() * 1e3).collect();
    // A constant column: 1 MiB pages that compress to a few bytes.
    let constant = vec![2.5; rows];
    let batch = RecordBatch::try_from_iter([
        (
            "varied",
            Arc::new(Float64Array::from(varied.clone())) as ArrayRef,
        ),
        (
            "constant",
            Arc::new(Float64Array::from(constant.clone())) as ArrayRef,
        ),
    ])
    .unwrap();
    for codec in codecs() {
        let bytes = common::arrow_to_parquet::write_parquet(&batch, Vec::new(), rows, codec);
        let path = dir.path().join("codec.parquet");
        std::fs::write(&path, &bytes).unwrap();
        let table = read_table(&[path], &ReadOptions::default())
            .unwrap_or_else(|e| panic!("{codec:?}: {e}"));
        let data = table.data.to_f64();
        assert_eq!((data.nrows(), data.ncols()), (rows, 2), "{codec:?}");
        let m = data.as_ref();
        for i in 0..rows {
            assert_eq!(
                m[(i, 0)].to_bits(),
                varied[i].to_bits(),
                "{codec:?} row {i}"
            );
            assert_eq!(
                m[(i, 1)].to_bits(),
                constant[i].to_bits(),
                "{codec:?} row {i}"
            );
        }
        assert_eq!(
            table.column_names,
            Some(vec!["varied".to_string(), "constant".to_string()])
        );
    }
}
