//! [`ChunkReader`]: one data set, from one file or several shards concatenated by rows, read a
//! chunk at a time; [`read_table`] reads it whole through the same path.

use std::path::PathBuf;

use crate::error::{IoError, Result};
use crate::read::inputs::expand_inputs;
use crate::read::matrix::Matrix;
use crate::read::options::ReadOptions;
use crate::read::rows::RowBuf;
use crate::reader::part::{Part, lines_in_file, slices};
use crate::reader::shard::{DataSet, Shard, Slice};

/// A data set as read by [`read_table`].
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    /// N×D, one sample per row.
    pub data: Matrix,
    /// Names of the kept columns, when the (first) source has a header.
    pub column_names: Option<Vec<String>>,
}

/// Reads one data set from one or more files (shards, concatenated by rows in the given order;
/// directories and glob patterns are expanded by [`expand_inputs`]).
///
/// Every shard must keep the same number of columns (and the same names when both have
/// headers). The format of each file is recognised by content, then extension: `.csv`, `.tsv`,
/// `.txt` (each optionally `.gz`), `.npy`, IDX (raw or gzip), Parquet (`.parquet`, `.pq`) and
/// Arrow IPC files or streams (`.arrow`, `.feather`, `.ipc`, `.arrows`). The result is f32 when
/// every shard is f32 or a small integer type (also f16), else f64.
pub fn read_table(paths: &[PathBuf], options: &ReadOptions) -> Result<Table> {
    let mut reader = ChunkReader::open(paths, options)?;
    let data = reader.read_all()?;
    let column_names = reader.column_names().map(<[String]>::to_vec);
    Ok(Table { data, column_names })
}

/// Streams one data set from one or more files (shards concatenated by rows), chunk by chunk,
/// so that a fit never holds the whole data in memory.
///
/// Every shard is opened and checked (format, header, selection, width) by [`ChunkReader::open`],
/// then read in turn. Chunks are f32 when every shard is f32 or a small integer type, else f64.
pub struct ChunkReader {
    data: DataSet,
    n_rows: Option<usize>,
    /// Every shard's size matches its header, so `n_rows` can size allocations.
    sizes_checked: bool,
    /// Index of the shard being read; `paths.len()` at the end.
    shard: usize,
    current: Option<Shard>,
}

impl std::fmt::Debug for ChunkReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChunkReader")
            .field("paths", &self.data.paths)
            .field("n_features", &self.data.n_features)
            .field("column_names", &self.data.column_names)
            .field("f32", &self.data.f32)
            .field("shard", &self.shard)
            .finish_non_exhaustive()
    }
}

impl ChunkReader {
    /// Opens every shard and checks that they agree. Directories and glob patterns among
    /// `paths` are expanded first ([`expand_inputs`]).
    pub fn open(paths: &[PathBuf], options: &ReadOptions) -> Result<ChunkReader> {
        let paths = expand_inputs(paths)?;
        let Some(first_path) = paths.first() else {
            return Err(IoError::NoInput);
        };
        let first = Shard::open(first_path, options)?;
        let mut data = DataSet {
            paths,
            options: options.clone(),
            n_features: first.n_features(),
            column_names: first.column_names().map(<[String]>::to_vec),
            f32: first.is_f32(),
            bytes: first.stores_bytes(),
            slices: None,
        };
        let mut n_rows = first.n_rows();
        let mut sizes_checked = first.size_checked();
        for path in &data.paths[1..] {
            // Opened only to be checked, then closed: many shards must not hold many files open.
            let shard = Shard::open(path, options)?;
            data.check(path, &shard)?;
            data.f32 &= shard.is_f32();
            data.bytes &= shard.stores_bytes();
            n_rows = n_rows
                .zip(shard.n_rows())
                .and_then(|(a, b)| a.checked_add(b));
            sizes_checked &= shard.size_checked();
        }
        Ok(ChunkReader {
            data,
            n_rows,
            sizes_checked,
            shard: 0,
            current: Some(first),
        })
    }

    /// Opens process `part.rank`'s part of the data set of `paths`, one of `part.size` parts
    /// that, taken in rank order, are its rows in order (see [`Part`] for how files are cut).
    /// Every shard is opened and checked as by [`ChunkReader::open`], so that the number of
    /// features, their names and the element type are the whole data set's on every process,
    /// even one whose part is empty. Rows (and lines) in messages are the file's.
    pub fn open_part(paths: &[PathBuf], options: &ReadOptions, part: Part) -> Result<ChunkReader> {
        let whole = ChunkReader::open(paths, options)?;
        let mut data = whole.data;
        let slices = slices(&data.paths, options, part)?;
        let n_rows = if slices
            .iter()
            .all(|s| matches!(s, Slice::Skip | Slice::Whole))
        {
            None
        } else {
            slices
                .iter()
                .try_fold(0usize, |a, s| s.n_rows(None).map(|n| a + n))
        };
        data.slices = Some(slices);
        let mut reader = ChunkReader::restart(data);
        reader.n_rows = n_rows.filter(|_| whole.sizes_checked);
        reader.sizes_checked = whole.sizes_checked;
        Ok(reader)
    }

    /// A reader at the start of a data set opened before, which opens each shard when it gets
    /// to it (and checks it then against what was found), rather than all of them up front.
    pub(crate) fn restart(data: DataSet) -> ChunkReader {
        ChunkReader {
            data,
            n_rows: None,
            sizes_checked: false,
            shard: 0,
            current: None,
        }
    }

    /// The data set read, to be read again by [`ChunkReader::restart`].
    pub(crate) fn into_data_set(self) -> DataSet {
        self.data
    }

    /// Number of kept columns.
    pub fn n_features(&self) -> usize {
        self.data.n_features
    }

    /// Names of the kept columns, when the first shard has a header.
    pub fn column_names(&self) -> Option<&[String]> {
        self.data.column_names.as_deref()
    }

    /// Whether chunks are [`Matrix::F32`].
    pub fn is_f32(&self) -> bool {
        self.data.f32
    }

    /// The files read, in order, after expanding directories and patterns.
    pub fn paths(&self) -> &[PathBuf] {
        &self.data.paths
    }

    /// The total number of rows when every shard's header says it (NPY, IDX, Parquet); `None`
    /// for text and Arrow.
    pub fn n_rows_hint(&self) -> Option<usize> {
        self.n_rows
    }

    /// Up to `max_rows` rows (crossing shard boundaries is fine); `Ok(None)` at the end.
    /// A `max_rows` of 0 is taken as 1.
    pub fn next_chunk(&mut self, max_rows: usize) -> Result<Option<Matrix>> {
        let max_rows = max_rows.max(1);
        let mut buf = self.new_buf(max_rows, 1 << 24);
        let n = self.read_rows(max_rows, &mut buf)?;
        Ok((n > 0).then(|| buf.into_matrix(n, self.data.n_features)))
    }

    /// Everything that is left, as one matrix.
    pub(crate) fn read_all(&mut self) -> Result<Matrix> {
        // Exact when the sizes are known to be true: no doubling on the way, the lowest peak.
        let rows = match self.n_rows {
            Some(n) if self.sizes_checked => n,
            _ => 0,
        };
        let mut buf = self.new_buf(rows, usize::MAX);
        let n = self.read_rows(usize::MAX, &mut buf)?;
        Ok(buf.into_matrix(n, self.data.n_features))
    }

    /// A buffer for `rows` rows, reserving at most `max_elements` up front (the caller's
    /// `max_rows` may be far more than what is left).
    pub(crate) fn new_buf(&self, rows: usize, max_elements: usize) -> RowBuf {
        let cap = rows.saturating_mul(self.data.n_features).min(max_elements);
        if self.data.f32 {
            RowBuf::F32(Vec::with_capacity(cap))
        } else {
            RowBuf::F64(Vec::with_capacity(cap))
        }
    }

    /// [`ChunkReader::read_rows`] as stored, for a data set whose every shard stores bytes
    /// ([`Shard::stores_bytes`]): the same rows, one byte a value.
    pub(crate) fn read_byte_rows(&mut self, max_rows: usize, out: &mut Vec<u8>) -> Result<usize> {
        self.read_into(max_rows, &mut |shard, rows, at| {
            shard.read_bytes(rows, out, at)
        })
    }

    /// Writes up to `max_rows` rows into `out` from its start, from as many shards as it takes;
    /// returns how many (0 at the end): they are `out`'s first `n·D` values. What `out` held
    /// (a recycled chunk) is storage to read into, so its length is kept: values past the rows
    /// read are stale.
    pub(crate) fn read_rows(&mut self, max_rows: usize, out: &mut RowBuf) -> Result<usize> {
        self.read_into(max_rows, &mut |shard, rows, at| {
            shard.read_rows(rows, out, at)
        })
    }

    /// Up to `max_rows` rows from as many shards as it takes, each shard's by `read(shard,
    /// rows, at)` (at most `rows` rows from value `at` of the caller's buffer on; how many);
    /// returns how many in all.
    fn read_into(
        &mut self,
        max_rows: usize,
        read: &mut dyn FnMut(&mut Shard, usize, usize) -> Result<usize>,
    ) -> Result<usize> {
        let d = self.data.n_features;
        let mut total = 0;
        while total < max_rows && self.shard < self.data.paths.len() {
            let slice = self.data.slices.as_ref().map(|s| &s[self.shard]);
            if slice == Some(&Slice::Skip) {
                self.shard += 1;
                continue;
            }
            let shard = match &mut self.current {
                Some(shard) => shard,
                None => {
                    let path = &self.data.paths[self.shard];
                    let shard = match slice {
                        Some(slice) => slice.open(path, &self.data.options)?,
                        None => Shard::open(path, &self.data.options)?,
                    };
                    // Checked again: the file may have changed since `open`.
                    self.data.check(path, &shard)?;
                    self.current.insert(shard)
                }
            };
            let n = match read(shard, max_rows - total, total * d) {
                Ok(n) => n,
                Err(e) => {
                    let path = &self.data.paths[self.shard];
                    return Err(match shard {
                        Shard::Csv(c) => match c.part_start() {
                            Some(start) => lines_in_file(e, path, start),
                            None => e,
                        },
                        _ => e,
                    });
                }
            };
            total += n;
            if total < max_rows {
                // The shard is exhausted.
                self.current = None;
                self.shard += 1;
            }
        }
        Ok(total)
    }
}

#[cfg(test)]
mod tests {
    use tempfile::TempDir;

    use super::*;
    use crate::test_util::*;
    use crate::{ColumnSelector, HeaderMode, RowMajorMat};

    /// Drains a chunk reader with chunks of `size` rows, checking every chunk's shape and type.
    fn drain(paths: &[PathBuf], options: &ReadOptions, size: usize) -> Matrix {
        let mut reader = ChunkReader::open(paths, options).unwrap();
        let mut all: Vec<Vec<f64>> = Vec::new();
        let mut f32 = None;
        while let Some(chunk) = reader.next_chunk(size).unwrap() {
            assert!(chunk.nrows() >= 1 && chunk.nrows() <= size);
            assert_eq!(chunk.ncols(), reader.n_features());
            assert_eq!(*f32.get_or_insert(chunk.is_f32()), chunk.is_f32());
            assert_eq!(chunk.is_f32(), reader.is_f32());
            all.extend(rows(&chunk));
        }
        assert!(
            reader.next_chunk(size).unwrap().is_none(),
            "stays at the end"
        );
        let d = reader.n_features();
        let n = all.len();
        let values: Vec<f64> = all.into_iter().flatten().collect();
        if f32 == Some(true) {
            Matrix::F32(RowMajorMat::new(
                values.iter().map(|&x| x as f32).collect(),
                n,
                d,
            ))
        } else {
            Matrix::F64(RowMajorMat::new(values, n, d))
        }
    }

    #[test]
    fn chunk_reader_equals_read_table() {
        let dir = TempDir::new().unwrap();
        let csv: String = std::iter::once("a,b,c\n".to_owned())
            .chain((0..17).map(|i| format!("{i},{},{}\n", i * 2, f64::from(i) / 7.0)))
            .collect();
        let images = idx(0x08, &[11, 2, 3], &(0..66u8).collect::<Vec<_>>());
        let cases: Vec<Vec<PathBuf>> = vec![
            vec![write_file(dir.path(), "a.csv", csv.as_bytes())],
            vec![write_file(dir.path(), "a.csv.gz", &gz(csv.as_bytes()))],
            vec![write_file(dir.path(), "c.npy", &f64_npy(13, 4, false, 0.0))],
            vec![write_file(dir.path(), "f.npy", &f64_npy(13, 4, true, 0.5))],
            vec![write_file(dir.path(), "i-idx3-ubyte", &images)],
            vec![
                write_file(dir.path(), "s1.npy", &f64_npy(5, 4, false, 0.0)),
                write_file(dir.path(), "s2.npy", &f64_npy(1, 4, true, 100.0)),
                write_file(dir.path(), "s3.npy", &f64_npy(7, 4, false, 200.0)),
            ],
            vec![
                dir.path().join("a.csv"),
                dir.path().join("a.csv.gz"),
                dir.path().join("a.csv"),
            ],
        ];
        for paths in &cases {
            let whole = read_table(paths, &ReadOptions::default()).unwrap();
            for size in [1, 3, 1000] {
                assert_eq!(
                    drain(paths, &ReadOptions::default(), size),
                    whole.data,
                    "{paths:?} chunks of {size}"
                );
            }
        }
    }

    #[test]
    fn read_all_keeps_the_row_major_buffer_without_spare_capacity() {
        let dir = TempDir::new().unwrap();
        let text: String = (0..1000).map(|i| format!("{i},{}\n", 2 * i)).collect();
        let cases = [
            // Sized from the header: reserved exactly.
            vec![write_file(dir.path(), "c.npy", &f64_npy(13, 4, false, 0.0))],
            vec![
                write_file(dir.path(), "s1.npy", &f64_npy(5, 4, true, 0.0)),
                write_file(dir.path(), "s2.npy", &f64_npy(7, 4, false, 9.0)),
            ],
            // Grown while reading: the spare capacity is handed back.
            vec![write_file(dir.path(), "t.csv", text.as_bytes())],
        ];
        for paths in &cases {
            let data = read_table(paths, &ReadOptions::default()).unwrap().data;
            let Matrix::F64(m) = data else {
                panic!("f64 expected")
            };
            let view = m.as_ref();
            assert_eq!(
                (view.col_stride(), view.row_stride()),
                (1, m.ncols() as isize)
            );
            let (nrows, ncols) = (m.nrows(), m.ncols());
            let values = m.into_vec();
            assert_eq!(values.len(), nrows * ncols, "{paths:?}");
            assert_eq!(values.capacity(), values.len(), "{paths:?}");
        }
    }

    #[test]
    fn shards_concatenate_by_rows_in_order() {
        let dir = TempDir::new().unwrap();
        let a = write_file(dir.path(), "a.csv", b"x,y,label\n1,2,cat\n3,4,dog\n");
        let b = write_file(dir.path(), "b.csv.gz", &gz(b"y,x,label\n6,5,cow\n"));
        // Selection is resolved per shard, by name: b's columns are in another order.
        let options = ReadOptions {
            columns: Some(vec![
                ColumnSelector::Name("x".into()),
                ColumnSelector::Name("y".into()),
            ]),
            ..Default::default()
        };
        let t = read_table(&[a.clone(), b.clone()], &options).unwrap();
        assert_eq!(
            rows(&t.data),
            vec![vec![1.0, 2.0], vec![3.0, 4.0], vec![5.0, 6.0]]
        );
        assert_eq!(t.column_names, names(&["x", "y"]));
        // A CSV shard with an f32 NPY shard: the whole is f64.
        let c = write_file(dir.path(), "c.csv", b"7,8\n");
        let d = write_file(
            dir.path(),
            "d.npy",
            &npy(
                "<f4",
                false,
                &[1, 2],
                &[9f32, 10.0].map(f32::to_le_bytes).concat(),
            ),
        );
        let t = read_table(&[c.clone(), d.clone()], &ReadOptions::default()).unwrap();
        assert!(matches!(t.data, Matrix::F64(_)));
        assert_eq!(rows(&t.data), vec![vec![7.0, 8.0], vec![9.0, 10.0]]);
        let t = read_table(&[d.clone(), d.clone()], &ReadOptions::default()).unwrap();
        assert!(matches!(t.data, Matrix::F32(_)));
        assert_eq!(
            ChunkReader::open(&[d.clone(), d], &ReadOptions::default())
                .unwrap()
                .n_rows_hint(),
            Some(2)
        );
    }

    #[test]
    fn mismatched_shards_are_named() {
        let dir = TempDir::new().unwrap();
        let a = write_file(dir.path(), "a.csv", b"x,y\n1,2\n");
        let b = write_file(dir.path(), "b.csv", b"x,y,z\n1,2,3\n");
        let e = err_of(read_table(&[a.clone(), b.clone()], &ReadOptions::default()));
        assert!(
            e.starts_with(&format!(
                "shard {} does not match the first shard {}",
                b.display(),
                a.display()
            )),
            "{e}"
        );
        assert!(
            e.contains("3 column(s) after selection, the first shard has 2"),
            "{e}"
        );
        let c = write_file(dir.path(), "c.csv", b"x,w\n1,2\n");
        let e = err_of(read_table(&[a.clone(), c], &ReadOptions::default()));
        assert!(
            e.contains("its kept column 2 is \"w\" where the first shard has \"y\""),
            "{e}"
        );
        // A bad shard later in the list fails at open, before any data is streamed.
        let bad = write_file(dir.path(), "bad.csv", b"x,y\n");
        assert!(
            err_of(ChunkReader::open(
                &[a.clone(), bad],
                &ReadOptions::default()
            ))
            .contains("bad.csv has no data rows")
        );
        // Shards without a header match by width.
        let n = write_file(dir.path(), "n.csv", b"5,6\n");
        let options = ReadOptions {
            header: HeaderMode::Auto,
            ..Default::default()
        };
        assert_eq!(read_table(&[a, n], &options).unwrap().data.nrows(), 2);
    }

    #[test]
    fn opening_errors_name_the_file() {
        let dir = TempDir::new().unwrap();
        assert!(matches!(
            read_table(&[], &ReadOptions::default()),
            Err(IoError::NoInput)
        ));
        let missing = dir.path().join("missing.csv");
        let e = err_of(read_table(
            std::slice::from_ref(&missing),
            &ReadOptions::default(),
        ));
        assert!(
            e.starts_with(&format!("cannot open {}", missing.display())),
            "{e}"
        );
        let e = err_of(read_table(
            &[dir.path().to_owned()],
            &ReadOptions::default(),
        ));
        assert!(
            e.starts_with(&format!(
                "directory {} holds no data files",
                dir.path().display()
            )),
            "{e}"
        );
    }
}
