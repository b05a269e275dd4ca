//! A process's part of a data set, for fits over several processes: which rows of which files
//! each of `size` processes reads, so that together they read every row once, in order.
//!
//! The files are laid end to end by their size in bytes and cut into `size` equal byte ranges;
//! a process reads what starts in its range. A file that can be entered in the middle is split
//! there: rows of an uncompressed NPY (C order) or IDX file, lines of an uncompressed CSV or
//! TSV file (which must have no line breaks inside quoted fields), row groups of a Parquet
//! file. Other files (gzip, Arrow, Fortran-order NPY) go whole to the process whose range
//! holds their middle. Every process computes the same cuts from the same files, and the
//! parts, taken in rank order, are the data set's rows in order.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::error::{IoError, Result};
use crate::format::columnar::parquet;
use crate::read::open::{Format, open};
use crate::read::options::ReadOptions;
use crate::reader::shard::{Shard, Slice};

/// One process's share of a data set: process `rank` of `size` (an MPI rank, a Slurm array
/// task, …). See [`crate::ChunkReader::open_part`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Part {
    /// This process's number, from 0.
    pub rank: usize,
    /// Number of processes sharing the data set.
    pub size: usize,
}

impl Slice {
    /// Rows in the slice, when known without reading it.
    pub(crate) fn n_rows(&self, whole: Option<usize>) -> Option<usize> {
        match self {
            Slice::Skip => Some(0),
            Slice::Whole => whole,
            Slice::Rows(r) => Some(r.len()),
            Slice::Bytes(_) => None,
            Slice::Groups(_, rows) => Some(*rows),
        }
    }

    /// Opens `path` and positions it at the slice (not for `Skip`).
    pub(crate) fn open(&self, path: &Path, options: &ReadOptions) -> Result<Shard> {
        if let Slice::Groups(groups, _) = self {
            return Ok(Shard::Columnar(Box::new(parquet::open_groups(
                path,
                options,
                Some(groups),
            )?)));
        }
        let mut shard = Shard::open(path, options)?;
        match (self, &mut shard) {
            (Slice::Rows(rows), Shard::Binary(b)) if b.splittable() => b.restrict(rows.clone())?,
            (Slice::Bytes(bytes), Shard::Csv(c)) => c.restrict(bytes.clone())?,
            (Slice::Rows(rows), Shard::H5ad(h)) if h.splittable() => h.restrict(rows.clone())?,
            (Slice::Whole, _) => {}
            _ => {
                return Err(IoError::Format {
                    path: path.to_owned(),
                    detail: "the file changed while a part of it was being read".into(),
                });
            }
        }
        Ok(shard)
    }
}

/// How a file can be cut.
enum Cuts {
    Whole,
    Rows(usize),
    Bytes,
    Groups(Vec<usize>),
}

fn cuts(path: &Path, options: &ReadOptions) -> Result<Cuts> {
    let opened = open(path)?;
    if opened.compressed {
        return Ok(Cuts::Whole);
    }
    Ok(match opened.format {
        Format::Text(_) => Cuts::Bytes,
        Format::Parquet => Cuts::Groups(parquet::row_group_rows(path)?),
        Format::Npy | Format::Idx => {
            drop(opened);
            match Shard::open(path, options)? {
                Shard::Binary(b) if b.splittable() => Cuts::Rows(b.nrows()),
                _ => Cuts::Whole,
            }
        }
        Format::ArrowFile | Format::ArrowStream => Cuts::Whole,
        Format::Hdf5 => {
            drop(opened);
            match Shard::open(path, options)? {
                Shard::H5ad(h) if h.splittable() => Cuts::Rows(h.n_rows()),
                _ => Cuts::Whole,
            }
        }
    })
}

/// What process `part.rank` reads of every file of `paths` (already expanded).
pub(crate) fn slices(paths: &[PathBuf], options: &ReadOptions, part: Part) -> Result<Vec<Slice>> {
    assert!(part.size >= 1 && part.rank < part.size, "{part:?}");
    let mut sizes = Vec::with_capacity(paths.len());
    for path in paths {
        let meta = std::fs::metadata(path).map_err(|source| IoError::Open {
            path: path.clone(),
            source,
        })?;
        // At least a byte, so that every file has a place.
        sizes.push(meta.len().max(1));
    }
    let total: u128 = sizes.iter().map(|&s| u128::from(s)).sum();
    let (rank, size) = (part.rank as u128, part.size as u128);
    // This process's byte range of the files laid end to end.
    let (lo, hi) = (rank * total / size, (rank + 1) * total / size);
    let mut out = Vec::with_capacity(paths.len());
    let mut f0: u128 = 0;
    for (path, &len) in paths.iter().zip(&sizes) {
        let f1 = f0 + u128::from(len);
        let slice = if f1 <= lo || f0 >= hi {
            Slice::Skip
        } else {
            match cuts(path, options)? {
                Cuts::Whole => {
                    let middle = (f0 + f1) / 2;
                    if (lo..hi).contains(&middle) {
                        Slice::Whole
                    } else {
                        Slice::Skip
                    }
                }
                Cuts::Bytes => Slice::Bytes((lo.max(f0) - f0) as u64..(hi.min(f1) - f0) as u64),
                Cuts::Rows(n) => {
                    let row = |b: u128| (n as u128 * (b.clamp(f0, f1) - f0) / (f1 - f0)) as usize;
                    let rows = row(lo)..row(hi);
                    if rows.is_empty() {
                        Slice::Skip
                    } else if rows.len() == n {
                        Slice::Whole
                    } else {
                        Slice::Rows(rows)
                    }
                }
                Cuts::Groups(groups) => {
                    let n: usize = groups.iter().sum();
                    let row = |b: u128| (n as u128 * (b.clamp(f0, f1) - f0) / (f1 - f0)) as usize;
                    let rows = row(lo)..row(hi);
                    // A group belongs to the process whose rows hold its first row.
                    let mut first = 0;
                    let mut mine = Vec::new();
                    let mut count = 0;
                    for (g, &len) in groups.iter().enumerate() {
                        if rows.contains(&first) && len > 0 {
                            mine.push(g);
                            count += len;
                        }
                        first += len;
                    }
                    match mine.len() {
                        0 => Slice::Skip,
                        k if k == groups.len() => Slice::Whole,
                        _ => Slice::Groups(mine, count),
                    }
                }
            }
        };
        out.push(slice);
        f0 = f1;
    }
    Ok(out)
}

/// `e` with its line (of a text part that starts at byte `start` of `path`) counted from the
/// file's first line instead of the part's: the newlines before `start` are counted, once, on
/// this error path only.
pub(crate) fn lines_in_file(e: IoError, path: &Path, start: u64) -> IoError {
    let before = match count_newlines(path, start) {
        Ok(n) => n,
        Err(_) => return e,
    };
    match e {
        IoError::NonNumeric {
            path,
            line,
            column,
            value,
            hint,
        } => IoError::NonNumeric {
            path,
            line: line + before,
            column,
            value,
            hint,
        },
        IoError::EmptyCell { path, line, column } => IoError::EmptyCell {
            path,
            line: line + before,
            column,
        },
        IoError::NonFinite {
            path,
            line,
            column,
            value,
        } => IoError::NonFinite {
            path,
            line: line + before,
            column,
            value,
        },
        IoError::RaggedRow {
            path,
            line,
            found,
            expected,
            reference,
        } => IoError::RaggedRow {
            path,
            line: line + before,
            found,
            expected,
            reference,
        },
        other => other,
    }
}

fn count_newlines(path: &Path, end: u64) -> std::io::Result<u64> {
    let file = std::fs::File::open(path)?;
    let mut reader = std::io::BufReader::with_capacity(1 << 16, file.take(end));
    let mut buf = vec![0u8; 1 << 16];
    let mut n = 0;
    loop {
        let k = reader.read(&mut buf)?;
        if k == 0 {
            return Ok(n);
        }
        n += buf[..k].iter().filter(|&&b| b == b'\n').count() as u64;
    }
}

#[cfg(test)]
mod tests {
    #[cfg(feature = "parquet")]
    use std::sync::Arc;

    use tempfile::TempDir;

    use super::*;
    use crate::test_util::*;
    use crate::{ChunkReader, FileSource, read_table};

    /// Every row of a part, by chunks of `size`.
    fn part_rows(paths: &[PathBuf], part: Part, size: usize) -> Vec<Vec<f64>> {
        let mut reader = ChunkReader::open_part(paths, &ReadOptions::default(), part).unwrap();
        let mut all = Vec::new();
        while let Some(chunk) = reader.next_chunk(size).unwrap() {
            all.extend(rows(&chunk));
        }
        all
    }

    /// The parts of every data set, for 1 to 6 processes, are its rows in order, each once;
    /// and a FileSource over a part gives the same rows on every pass.
    #[test]
    fn parts_in_rank_order_are_the_rows_in_order() {
        let dir = TempDir::new().unwrap();
        let d = dir.path();
        let csv: String = std::iter::once("a,b,c\n".to_owned())
            .chain((0..57).map(|i| format!("{i},{},{}\n", i * 2, f64::from(i) / 7.0)))
            .collect();
        let no_header: String = (0..31).map(|i| format!("{i}\t{}\r\n", -i)).collect();
        #[cfg(feature = "parquet")]
        let columns = batch(
            ["a", "b", "c"]
                .iter()
                .enumerate()
                .map(|(j, name)| {
                    let v: Vec<f64> = (0..45).map(|i| (i * 3 + j) as f64).collect();
                    (
                        *name,
                        Arc::new(arrow_array::Float64Array::from(v)) as arrow_array::ArrayRef,
                    )
                })
                .collect(),
        );
        let images = idx(0x08, &[23, 2, 3], &(0..138u8).collect::<Vec<_>>());
        let mut cases: Vec<Vec<PathBuf>> = vec![
            vec![write_file(d, "big.npy", &f64_npy(101, 3, false, 0.0))],
            vec![write_file(d, "a.csv", csv.as_bytes())],
            vec![write_file(d, "t.tsv", no_header.as_bytes())],
            vec![write_file(d, "i-idx3-ubyte", &images)],
            vec![write_file(d, "fortran.npy", &f64_npy(20, 3, true, 5.0))],
        ];
        let mut mixed = vec![
            write_file(d, "s1.npy", &f64_npy(5, 3, false, 0.0)),
            d.join("a.csv"),
            write_file(d, "z.csv.gz", &gz(csv.as_bytes())),
        ];
        // Parquet files are cut at their row groups.
        #[cfg(feature = "parquet")]
        {
            cases.push(vec![parquet_file(d, "p.parquet", &columns, 4)]);
            mixed.push(parquet_file(d, "q.parquet", &columns, 7));
        }
        mixed.extend([
            write_file(d, "s2.npy", &f64_npy(40, 3, false, 100.0)),
            write_file(d, "s3.npy", &f64_npy(1, 3, true, 1000.0)),
        ]);
        cases.push(mixed);
        for paths in &cases {
            let whole = rows(&read_table(paths, &ReadOptions::default()).unwrap().data);
            for size in 1..=6 {
                let mut joined = Vec::new();
                for rank in 0..size {
                    let part = Part { rank, size };
                    let got = part_rows(paths, part, 7);
                    let mut source =
                        FileSource::open_part(paths, &ReadOptions::default(), part, 5).unwrap();
                    for _ in 0..2 {
                        let mut again: Vec<Vec<f64>> = Vec::new();
                        principal::ChunkSource::pass(&mut source, &mut |chunk| {
                            if let principal::ChunkRef::F64(m) = chunk {
                                again.extend(
                                    (0..m.nrows())
                                        .map(|i| (0..m.ncols()).map(|j| m[(i, j)]).collect()),
                                );
                            } else if let principal::ChunkRef::F32(m) = chunk {
                                again.extend((0..m.nrows()).map(|i| {
                                    (0..m.ncols()).map(|j| f64::from(m[(i, j)])).collect()
                                }));
                            }
                            Ok(())
                        })
                        .unwrap();
                        assert_eq!(again, got, "{paths:?} {part:?}");
                    }
                    joined.extend(got);
                }
                assert_eq!(joined, whole, "{paths:?} in {size} parts");
            }
        }
        // A large single file is shared out: every one of 3 processes gets rows.
        let big = [d.join("big.npy")];
        for rank in 0..3 {
            let n = part_rows(&big, Part { rank, size: 3 }, 100).len();
            assert!((33..=34).contains(&n), "rank {rank}: {n} rows");
        }
    }

    /// Bad values in a part are named by the file's line (text) or row (binary, Parquet).
    #[test]
    fn errors_in_a_part_name_the_files_line_or_row() {
        let dir = TempDir::new().unwrap();
        let mut text = String::from("x,y\n");
        for i in 0..100 {
            text.push_str(&if i == 80 {
                "1,oops\n".to_owned()
            } else {
                format!("{i},1\n")
            });
        }
        let csv = write_file(dir.path(), "bad.csv", text.as_bytes());
        let expected = err_of(read_table(
            std::slice::from_ref(&csv),
            &ReadOptions::default(),
        ));
        assert!(expected.contains("line 82, column 2 (\"y\")"), "{expected}");
        let failing = |paths: &[PathBuf], size: usize| {
            (0..size)
                .filter_map(|rank| {
                    let mut r =
                        ChunkReader::open_part(paths, &ReadOptions::default(), Part { rank, size })
                            .unwrap();
                    loop {
                        match r.next_chunk(3) {
                            Ok(Some(_)) => {}
                            Ok(None) => return None,
                            Err(e) => return Some((rank, e.to_string())),
                        }
                    }
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(failing(std::slice::from_ref(&csv), 3), [(2, expected)]);
        let mut values: Vec<f64> = (0..60).map(f64::from).collect();
        values[47] = f64::NAN;
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let npy_path = write_file(dir.path(), "bad.npy", &npy("<f8", false, &[20, 3], &bytes));
        let failed = failing(&[npy_path], 4);
        assert_eq!(failed.len(), 1);
        assert_eq!(failed[0].0, 3);
        assert!(
            failed[0].1.contains("at row 15, column 2"),
            "{:?}",
            failed[0]
        );
    }
}
