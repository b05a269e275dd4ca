//! Issue 24: writing wide data as Parquet (`inverse` or `sample` with 200,000 features) aborted
//! on memory and left `.x.parquet.tmp-PID-0` behind: the writer held about 70 KB per column
//! (its dictionary encoders) whatever the rows. One test per process here, so that the peak
//! memory it reads is its own.

use crate::common;

use common::leftovers;
use principal_io::{MAX_PARQUET_COLUMNS, Mat, MatrixWriter, ReadOptions, read_table};

/// Peak resident memory of this process, in bytes (Linux).
fn peak_memory() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace()
        .nth(1)
        .unwrap()
        .parse::<u64>()
        .unwrap()
        * 1024
}

#[test]
fn wide_parquet_is_written_in_bounded_memory_and_wider_is_refused_before_any_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.parquet");
    // Wider than the writer allows: refused naming the file, no temporary file, an existing
    // file untouched.
    std::fs::write(&path, b"previous").unwrap();
    for columns in [MAX_PARQUET_COLUMNS + 1, 200_000] {
        let e = MatrixWriter::create(&path, columns, None)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            format!(
                "{}: {columns} columns are more than a Parquet output may have (10000: the \
                 Parquet writer holds every column of a row group in memory); write .npy, \
                 .csv or .tsv instead",
                path.display()
            )
        );
        assert_eq!(std::fs::read(&path).unwrap(), b"previous");
        assert_eq!(leftovers(dir.path()), Vec::<String>::new());
    }
    // As wide as allowed: 30 rows of 10,000 columns (2.4 MB of values) took 0.7 GB before.
    let (rows, d) = (30, MAX_PARQUET_COLUMNS);
    let x = Mat::<f64>::from_fn(rows, d, |i, j| (i * 31 + j) as f64 * 0.1);
    let before = peak_memory();
    let mut out = MatrixWriter::create(&path, d, None).unwrap();
    out.write_rows(x.as_ref()).unwrap();
    out.finish().unwrap();
    let grew = peak_memory().saturating_sub(before);
    assert!(
        grew < 150_000_000,
        "writing grew the peak memory by {grew} bytes"
    );
    let back = read_table(&[path], &ReadOptions::default())
        .unwrap()
        .data
        .to_f64();
    assert_eq!((back.nrows(), back.ncols()), (rows, d));
    assert!((0..rows).all(|i| (0..d).all(|j| back.as_ref()[(i, j)] == x[(i, j)])));
}
