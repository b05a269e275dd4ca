//! One shard of a data set, opened by its format's reader, and [`DataSet`]: the shards in order
//! and what the first one says every other must agree with.

use std::ops::Range;
use std::path::{Path, PathBuf};

use crate::error::{IoError, Result};
use crate::format::binary::BinaryRows;
use crate::format::columnar::{ColumnarSource, arrow, parquet};
use crate::format::csv::CsvSource;
use crate::format::h5ad::H5adSource;
use crate::format::{idx, npy};
use crate::read::open::{Format, open};
use crate::read::options::ReadOptions;
use crate::read::rows::RowBuf;

/// One open shard, whatever its format: its header read and its selection resolved, its rows
/// still to come.
pub(crate) enum Shard {
    Csv(Box<CsvSource>),
    Binary(Box<BinaryRows>),
    Columnar(Box<ColumnarSource>),
    H5ad(Box<H5adSource>),
}

impl Shard {
    /// Opens `path`, recognises its format and reads its header.
    pub(crate) fn open(path: &Path, options: &ReadOptions) -> Result<Shard> {
        let opened = open(path)?;
        let columnar = matches!(
            opened.format,
            Format::Parquet | Format::ArrowFile | Format::ArrowStream
        );
        let h5ad = opened.format == Format::Hdf5;
        if (options.layer.is_some() || options.mask_var.is_some()) && !h5ad {
            return Err(IoError::Format {
                path: path.to_owned(),
                detail: "--layer and --mask-var apply to AnnData .h5ad files only; this file is \
                         not one"
                    .into(),
            });
        }
        if options.list_column.is_some() && !columnar {
            return Err(IoError::Format {
                path: path.to_owned(),
                detail: "a list column of embeddings (--column) can be read from Parquet and \
                         Arrow files only; this file is not one"
                    .into(),
            });
        }
        Ok(match opened.format {
            Format::Text(delimiter) => Shard::Csv(Box::new(CsvSource::new(
                path,
                opened.reader,
                delimiter,
                options,
            )?)),
            Format::Npy => Shard::Binary(Box::new(npy::open_rows(path, opened, options)?)),
            Format::Idx => Shard::Binary(Box::new(idx::open_rows(path, opened, options)?)),
            Format::Parquet => {
                drop(opened);
                Shard::Columnar(Box::new(parquet::open(path, options)?))
            }
            Format::ArrowFile => {
                drop(opened);
                Shard::Columnar(Box::new(arrow::open_file(path, options)?))
            }
            Format::ArrowStream => {
                Shard::Columnar(Box::new(arrow::open_stream(path, opened, options)?))
            }
            Format::Hdf5 => {
                drop(opened);
                Shard::H5ad(Box::new(H5adSource::open(path, options)?))
            }
        })
    }

    /// Number of kept columns.
    pub(crate) fn n_features(&self) -> usize {
        match self {
            Shard::Csv(c) => c.n_features(),
            Shard::Binary(b) => b.n_features(),
            Shard::Columnar(c) => c.n_features(),
            Shard::H5ad(h) => h.n_features(),
        }
    }

    /// Names of the kept columns, when the shard has them (a header, a schema).
    pub(crate) fn column_names(&self) -> Option<&[String]> {
        match self {
            Shard::Csv(c) => c.kept_names(),
            Shard::Binary(_) => None,
            Shard::Columnar(c) => c.column_names(),
            Shard::H5ad(h) => h.column_names(),
        }
    }

    /// Whether the shard's values are exact in f32.
    pub(crate) fn is_f32(&self) -> bool {
        match self {
            Shard::Csv(_) => false,
            Shard::Binary(b) => b.is_f32(),
            Shard::Columnar(c) => c.is_f32(),
            Shard::H5ad(h) => h.is_f32(),
        }
    }

    /// The number of rows, when the header says it.
    pub(crate) fn n_rows(&self) -> Option<usize> {
        match self {
            Shard::Csv(_) => None,
            Shard::Binary(b) => Some(b.nrows()),
            Shard::Columnar(c) => c.n_rows(),
            Shard::H5ad(h) => Some(h.n_rows()),
        }
    }

    /// Whether the file's size was checked against `n_rows`, so that it can size allocations.
    pub(crate) fn size_checked(&self) -> bool {
        match self {
            Shard::Csv(_) => false,
            Shard::Binary(b) => b.size_checked(),
            Shard::Columnar(c) => c.size_checked(),
            // The shape is checked against the arrays' lengths, which HDF5 checks against the
            // file as they are read.
            Shard::H5ad(_) => true,
        }
    }

    /// Whether every value is stored as a byte and can be read as stored
    /// ([`Shard::read_bytes`]).
    pub(crate) fn stores_bytes(&self) -> bool {
        matches!(self, Shard::Binary(b) if b.stores_bytes())
    }

    /// [`Shard::read_rows`] as stored, for a shard that [stores bytes](Shard::stores_bytes).
    pub(crate) fn read_bytes(
        &mut self,
        max_rows: usize,
        out: &mut Vec<u8>,
        at: usize,
    ) -> Result<usize> {
        match self {
            Shard::Binary(b) => b.read_bytes_at(max_rows, out, at),
            _ => panic!("read_bytes on a shard that does not store bytes"),
        }
    }

    /// Writes up to `max_rows` rows into `out` from its value `at` on; returns how many (0 at
    /// the end). The binary reader reads into the storage `out` has past `at`; the others
    /// append after cutting it there.
    pub(crate) fn read_rows(
        &mut self,
        max_rows: usize,
        out: &mut RowBuf,
        at: usize,
    ) -> Result<usize> {
        match self {
            Shard::Binary(b) => b.read_rows_at(max_rows, out, at),
            Shard::Csv(c) => {
                out.truncate(at);
                c.read_rows(max_rows, out)
            }
            Shard::Columnar(c) => {
                out.truncate(at);
                c.read_rows(max_rows, out)
            }
            Shard::H5ad(h) => {
                out.truncate(at);
                h.read_rows(max_rows, out)
            }
        }
    }
}

/// The files of one data set, in order, how they are read, and what the first shard says about
/// every row: the number of kept columns, their names, and the element type (f32 only when
/// every shard is f32 or a small integer type).
#[derive(Clone, Debug)]
pub(crate) struct DataSet {
    /// The files, after expanding directories and patterns; never empty.
    pub(crate) paths: Vec<PathBuf>,
    pub(crate) options: ReadOptions,
    /// Number of kept columns.
    pub(crate) n_features: usize,
    /// Names of the kept columns, when the first shard has them.
    pub(crate) column_names: Option<Vec<String>>,
    /// Whether every shard's values are exact in f32.
    pub(crate) f32: bool,
    /// Whether every shard stores its values as bytes, read as stored
    /// ([`Shard::stores_bytes`]).
    pub(crate) bytes: bool,
    /// A process's part of the data set: what it reads of each file (all of every file when
    /// `None`).
    pub(crate) slices: Option<Vec<Slice>>,
}

impl DataSet {
    /// Checks that `shard`, opened from `path`, keeps the first shard's columns (their number,
    /// and their names when both have names).
    pub(crate) fn check(&self, path: &Path, shard: &Shard) -> Result<()> {
        let n_features = self.n_features;
        let mismatch = |detail| {
            Err(IoError::ShardMismatch {
                path: path.to_owned(),
                first: self.paths[0].clone(),
                detail,
            })
        };
        if shard.n_features() != n_features {
            return mismatch(format!(
                "it has {} column(s) after selection, the first shard has {n_features}",
                shard.n_features()
            ));
        }
        if let (Some(a), Some(b)) = (self.column_names.as_deref(), shard.column_names())
            && let Some(j) = (0..a.len()).find(|&j| a[j] != b[j])
        {
            return mismatch(format!(
                "its kept column {} is {:?} where the first shard has {:?}",
                j + 1,
                b[j],
                a[j]
            ));
        }
        Ok(())
    }
}

/// What a process reads of one file (how a part is chosen and opened: `reader::part`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Slice {
    /// Nothing.
    Skip,
    /// All of it.
    Whole,
    /// These rows of an NPY or IDX file.
    Rows(Range<usize>),
    /// The lines of a text file that start in these bytes.
    Bytes(Range<u64>),
    /// These (consecutive) row groups of a Parquet file, holding this many rows.
    Groups(Vec<usize>, usize),
}
