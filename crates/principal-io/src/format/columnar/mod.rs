//! Parquet and Arrow IPC files: numeric columns, or one list column of embeddings (one row per
//! list), streamed a record batch at a time (Parquet: pages of a row group; Arrow: one IPC
//! batch), so a file is never held in memory whole.
//!
//! What the two formats share is here: the selection resolved against a schema and
//! [`ColumnarSource`], which streams record batches into rows. `parquet` and `arrow` open their
//! files; `parquet_columns` decodes Parquet's columns into Arrow arrays with the `parquet`
//! crate's own column readers; `copy` moves the values of Arrow arrays into rows, checking them.

#[cfg(feature = "arrow")]
pub(crate) mod arrow;
// Each format's opener when its feature is off (the other's is on): an error naming it.
#[cfg(not(feature = "arrow"))]
#[path = "arrow_absent.rs"]
pub(crate) mod arrow;
mod copy;
#[cfg(feature = "parquet")]
pub(crate) mod parquet;
#[cfg(not(feature = "parquet"))]
#[path = "parquet_absent.rs"]
pub(crate) mod parquet;
#[cfg(feature = "parquet")]
mod parquet_columns;
#[cfg(feature = "parquet")]
mod thrift;

use std::path::{Path, PathBuf};

use arrow_array::RecordBatch;
use arrow_array::cast::AsArray;
use arrow_schema::{DataType, Schema};

use crate::error::{IoError, Result};
use crate::format::columnar::copy::{Rows, copy_columns, copy_list, list_row_len};
use crate::read::bounded::contain;
use crate::read::columns::{resolve_columns, shell_word};
use crate::read::options::{ColumnSelector, Missing, ReadOptions};
use crate::read::rows::RowBuf;

/// Values per record batch: big enough to amortise the per-batch work, small enough that a
/// batch (8 MiB of f64) is nothing next to a chunk.
// Parquet's only (as are the items below so marked): Arrow's batches are the file's.
#[cfg_attr(not(feature = "parquet"), allow(dead_code))]
const BATCH_VALUES: usize = 1 << 20;

/// Where record batches come from.
pub(crate) enum Batches {
    /// Parquet's column readers, with the last row of every row group (counting from 0), to
    /// name the row group of an error.
    #[cfg_attr(not(feature = "parquet"), allow(dead_code))]
    Parquet {
        reader: Box<dyn GroupBatches>,
        group_ends: Vec<u64>,
    },
    /// Arrow IPC's batches, framed and checked by `arrow`.
    #[cfg_attr(not(feature = "arrow"), allow(dead_code))]
    Arrow(Box<dyn Iterator<Item = Result<RecordBatch>> + Send>),
    /// After an error or a contained panic: the decoder's state is not to be trusted.
    Failed,
}

/// Batches of rows decoded from a file's row groups (Parquet's, by `parquet`).
pub(crate) trait GroupBatches: Send {
    /// The next batch, `None` after the last; `label` names its row group in messages.
    fn next_batch(&mut self, label: &str) -> Option<Result<RecordBatch>>;
}

/// Which columns become the features.
#[derive(Clone, Debug)]
enum Plan {
    /// Numeric columns: their positions in a batch and their names.
    Columns { at: Vec<usize>, names: Vec<String> },
    /// One list column at `at`: every row is a list of `width` numbers.
    List {
        at: usize,
        name: String,
        width: usize,
    },
}

/// The selection resolved against a schema, in terms of the file's top-level columns.
struct Selected {
    /// The file's columns to read, sorted (a projection returns them in file order).
    roots: Vec<usize>,
    plan: Plan,
    f32: bool,
    /// The list length, unless it must be read from the first row (`List`, `LargeList`).
    width: Option<usize>,
    /// A kept column that does not hold numbers.
    non_numeric: Option<NonNumeric>,
    /// Whether nulls and NaN are missing values or errors.
    missing: Missing,
}

/// A kept column that does not hold numbers: an error at the first read, as a label column of
/// a CSV file is, so that the names can still be looked at (`transform` picks a model's
/// features from them).
#[derive(Clone, Debug)]
struct NonNumeric {
    column: String,
    data_type: String,
    hint: String,
}

/// A Parquet or Arrow file being read.
pub(crate) struct ColumnarSource {
    path: PathBuf,
    /// "Parquet" or "Arrow", for messages.
    format: &'static str,
    batches: Batches,
    plan: Plan,
    non_numeric: Option<NonNumeric>,
    f32: bool,
    /// Whether nulls and NaN are missing values or errors.
    missing: Missing,
    n_rows: Option<usize>,
    size_checked: bool,
    batch: Option<RecordBatch>,
    /// Rows of `batch` already handed out.
    offset: usize,
    /// Rows of the file already handed out: the 0-based row of the next one.
    row: u64,
}

fn is_numeric(t: &DataType) -> bool {
    t.is_integer() || t.is_floating()
}

/// Whether every value of the type is exact in f32 (the same rule as for NPY).
fn fits_f32(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Int8
            | DataType::UInt8
            | DataType::Int16
            | DataType::UInt16
            | DataType::Float16
            | DataType::Float32
    )
}

/// The element type of a list type, and its length when the type fixes it.
fn list_of(t: &DataType) -> Option<(&DataType, Option<usize>)> {
    match t {
        DataType::FixedSizeList(child, n) => Some((child.data_type(), usize::try_from(*n).ok())),
        DataType::List(child) | DataType::LargeList(child) => Some((child.data_type(), None)),
        _ => None,
    }
}

fn format_error(path: &Path, detail: String) -> IoError {
    IoError::Format {
        path: path.to_owned(),
        detail,
    }
}

fn select(path: &Path, schema: &Schema, options: &ReadOptions) -> Result<Selected> {
    let names: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
    if let Some(list) = &options.list_column {
        if options.columns.is_some() || !options.exclude.is_empty() {
            return Err(format_error(
                path,
                "a list column of embeddings cannot be combined with a selection of columns \
                 (--columns or --exclude)"
                    .into(),
            ));
        }
        let by_name = ReadOptions {
            columns: Some(vec![ColumnSelector::Name(list.clone())]),
            ..Default::default()
        };
        let at = resolve_columns(path, names.len(), Some(&names), &by_name)?[0];
        let field = schema.field(at);
        let Some((child, width)) = list_of(field.data_type()) else {
            return Err(format_error(
                path,
                format!(
                    "column {list:?} holds {}, not lists of numbers (embeddings); without \
                     --column, numeric columns are read as the features",
                    field.data_type()
                ),
            ));
        };
        if !is_numeric(child) {
            return Err(format_error(
                path,
                format!("column {list:?} holds lists of {child}, not lists of numbers"),
            ));
        }
        if width == Some(0) {
            return Err(IoError::NoColumns {
                path: path.to_owned(),
                available: 0,
            });
        }
        return Ok(Selected {
            roots: vec![at],
            plan: Plan::List {
                at,
                name: list.clone(),
                width: width.unwrap_or(0),
            },
            f32: fits_f32(child),
            width,
            non_numeric: None,
            missing: options.missing,
        });
    }
    let kept = resolve_columns(path, names.len(), Some(&names), options)?;
    let non_numeric = kept.iter().find_map(|&i| {
        let t = schema.field(i).data_type();
        if is_numeric(t) {
            return None;
        }
        let word = shell_word(&names[i]);
        let hint = match list_of(t) {
            Some((child, _)) if is_numeric(child) => format!(
                "to read its lists as the rows' features use --column {word}, or leave it out \
                 with --exclude {word}"
            ),
            _ => format!("leave it out with --exclude {word}"),
        };
        Some(NonNumeric {
            column: names[i].clone(),
            data_type: t.to_string(),
            hint,
        })
    });
    let f32 = kept.iter().all(|&i| fits_f32(schema.field(i).data_type()));
    let width = Some(kept.len());
    let mut roots = kept.clone();
    roots.sort_unstable();
    Ok(Selected {
        roots,
        plan: Plan::Columns {
            names: kept.iter().map(|&i| names[i].clone()).collect(),
            at: kept,
        },
        f32,
        width,
        non_numeric,
        missing: options.missing,
    })
}

/// Rows per record batch for rows of `width` values (unknown: 0).
#[cfg_attr(not(feature = "parquet"), allow(dead_code))]
fn batch_rows(width: Option<usize>) -> usize {
    match width {
        Some(w) if w > 0 => (BATCH_VALUES / w).clamp(64, 65_536),
        _ => 1024,
    }
}

impl Selected {
    /// The plan for batches that hold only `roots`, in file order.
    fn projected(mut self) -> Self {
        let rank = |i: usize| self.roots.binary_search(&i).expect("a read column");
        self.plan = match self.plan {
            Plan::Columns { at, names } => Plan::Columns {
                at: at.iter().map(|&i| rank(i)).collect(),
                names,
            },
            Plan::List { at, name, width } => Plan::List {
                at: rank(at),
                name,
                width,
            },
        };
        self
    }
}

impl ColumnarSource {
    fn new(
        path: &Path,
        format: &'static str,
        batches: Batches,
        selected: Selected,
        n_rows: Option<usize>,
        size_checked: bool,
    ) -> Result<ColumnarSource> {
        let mut source = ColumnarSource {
            path: path.to_owned(),
            format,
            batches,
            plan: selected.plan,
            non_numeric: selected.non_numeric,
            f32: selected.f32,
            missing: selected.missing,
            n_rows,
            size_checked,
            batch: None,
            offset: 0,
            row: 0,
        };
        if selected.width.is_none() {
            // A variable-length list column: the first row says the width.
            if !source.next_batch()? {
                return Err(source.no_data());
            }
            let Plan::List { at, name, width } = &mut source.plan else {
                unreachable!("only lists have an unknown width")
            };
            let column = source.batch.as_ref().expect("a batch").column(*at);
            let first = match column.data_type() {
                DataType::List(_) => list_row_len(column.as_list::<i32>(), 0),
                _ => list_row_len(column.as_list::<i64>(), 0),
            };
            match first {
                Some(0) => {
                    return Err(IoError::BadValue {
                        path: source.path.clone(),
                        row: 0,
                        column: name.clone(),
                        detail: "an empty list, so no features".into(),
                    });
                }
                Some(n) => *width = n,
                None => {
                    return Err(IoError::BadValue {
                        path: source.path.clone(),
                        row: 0,
                        column: name.clone(),
                        detail: match source.missing {
                            Missing::Reject => "null (missing values are not supported)".into(),
                            // The lists' length is read from the first row.
                            Missing::AsNan => {
                                "a null list in the first row, whose list must give the \
                                 number of features"
                                    .into()
                            }
                        },
                    });
                }
            }
        }
        Ok(source)
    }

    pub(crate) fn n_features(&self) -> usize {
        match &self.plan {
            Plan::Columns { at, .. } => at.len(),
            Plan::List { width, .. } => *width,
        }
    }

    /// The kept columns' names; `None` for a list column, whose features have no names.
    pub(crate) fn column_names(&self) -> Option<&[String]> {
        match &self.plan {
            Plan::Columns { names, .. } => Some(names),
            Plan::List { .. } => None,
        }
    }

    pub(crate) fn is_f32(&self) -> bool {
        self.f32
    }

    /// Numbers the rows from `row` in messages (a part that starts inside the file).
    #[cfg_attr(not(feature = "parquet"), allow(dead_code))]
    pub(crate) fn first_row(&mut self, row: usize) {
        self.row = row as u64;
    }

    pub(crate) fn n_rows(&self) -> Option<usize> {
        self.n_rows
    }

    pub(crate) fn size_checked(&self) -> bool {
        self.size_checked
    }

    fn no_data(&self) -> IoError {
        IoError::NoData {
            path: self.path.clone(),
            detail: if self.format == "Parquet" {
                " (the Parquet file has 0 rows)"
            } else {
                " (the Arrow data has 0 rows)"
            },
        }
    }

    /// What the next batch is part of, for messages: the row group of a Parquet file, the
    /// batch of an Arrow file (which names itself).
    fn next_label(&self) -> String {
        match &self.batches {
            Batches::Parquet { group_ends, .. } => {
                match group_ends.iter().position(|&last| last >= self.row) {
                    Some(k) => format!("row group {k} (from row {})", self.row),
                    None => format!("the row group after row {}", self.row),
                }
            }
            _ => format!("the record batch after row {}", self.row),
        }
    }

    /// Moves to the next non-empty batch; `false` at the end. The decoders of other crates run
    /// contained: a panic in them is an error naming the file and the row group or batch.
    fn next_batch(&mut self) -> Result<bool> {
        loop {
            let label = self.next_label();
            let path = &self.path;
            let batches = &mut self.batches;
            let next = contain(
                path,
                || label.clone(),
                || {
                    Ok(match batches {
                        Batches::Parquet { reader, .. } => reader.next_batch(&label),
                        Batches::Arrow(reader) => reader.next(),
                        Batches::Failed => None,
                    })
                },
            );
            match next {
                Ok(None) => {
                    self.batch = None;
                    return Ok(false);
                }
                Err(e) | Ok(Some(Err(e))) => {
                    self.batches = Batches::Failed;
                    self.batch = None;
                    return Err(e);
                }
                Ok(Some(Ok(batch))) if batch.num_rows() == 0 => {}
                Ok(Some(Ok(batch))) => {
                    self.batch = Some(batch);
                    self.offset = 0;
                    return Ok(true);
                }
            }
        }
    }

    /// Appends up to `max_rows` rows to `out` (row-major); returns how many (0 at the end).
    pub(crate) fn read_rows(&mut self, max_rows: usize, out: &mut RowBuf) -> Result<usize> {
        if let Some(bad) = &self.non_numeric {
            return Err(IoError::NonNumericColumn {
                path: self.path.clone(),
                column: bad.column.clone(),
                data_type: bad.data_type.clone(),
                hint: bad.hint.clone(),
            });
        }
        if !self.f32 {
            // Only if a shard changed type since the stream was opened: widen, never round.
            out.widen();
        }
        let mut n = 0;
        while n < max_rows {
            let left = self
                .batch
                .as_ref()
                .map_or(0, |b| b.num_rows() - self.offset);
            if left == 0 {
                if !self.next_batch()? {
                    if self.row == 0 {
                        return Err(self.no_data());
                    }
                    break;
                }
                continue;
            }
            let take = left.min(max_rows - n);
            let batch = self.batch.as_ref().expect("a batch");
            let at = Rows {
                path: &self.path,
                first_row: self.row,
                offset: self.offset,
                len: take,
            };
            match &self.plan {
                Plan::Columns { at: cols, names } => {
                    copy_columns(&at, batch, cols, names, self.missing, out)?;
                }
                Plan::List {
                    at: col,
                    name,
                    width,
                } => {
                    copy_list(&at, batch.column(*col), name, *width, self.missing, out)?;
                }
            }
            self.offset += take;
            self.row += take as u64;
            n += take;
        }
        Ok(n)
    }
}

#[cfg(test)]
// The tests write files of both formats.
#[cfg(all(feature = "parquet", feature = "arrow"))]
mod tests {
    use std::sync::Arc;

    use arrow_array::{
        ArrayRef, FixedSizeListArray, Float16Array, Float32Array, Float64Array, Int8Array,
        Int16Array, Int32Array, Int64Array, LargeListArray, ListArray, StringArray, UInt8Array,
        UInt16Array, UInt32Array, UInt64Array,
    };
    use tempfile::TempDir;

    use arrow_array::types::{Float32Type, Float64Type, Int64Type};
    use half::f16;

    use super::*;
    use crate::test_util::*;
    use crate::{ChunkReader, Matrix, read_table};

    fn f64s(v: &[f64]) -> ArrayRef {
        Arc::new(Float64Array::from(v.to_vec()))
    }

    fn f32s(v: &[f32]) -> ArrayRef {
        Arc::new(Float32Array::from(v.to_vec()))
    }

    fn list_options(name: &str) -> ReadOptions {
        ReadOptions {
            list_column: Some(name.into()),
            ..Default::default()
        }
    }

    /// Every integer and float type, as a table of 3 rows.
    fn all_types() -> arrow_array::RecordBatch {
        batch(vec![
            ("i8", Arc::new(Int8Array::from(vec![-1, 2, 3])) as ArrayRef),
            ("i16", Arc::new(Int16Array::from(vec![-300, 2, 3]))),
            ("i32", Arc::new(Int32Array::from(vec![-70000, 2, 3]))),
            ("i64", Arc::new(Int64Array::from(vec![-(1 << 40), 2, 3]))),
            ("u8", Arc::new(UInt8Array::from(vec![255, 2, 3]))),
            ("u16", Arc::new(UInt16Array::from(vec![65535, 2, 3]))),
            (
                "u32",
                Arc::new(UInt32Array::from(vec![4_000_000_000, 2, 3])),
            ),
            ("u64", Arc::new(UInt64Array::from(vec![1 << 50, 2, 3]))),
            (
                "f16",
                Arc::new(Float16Array::from(vec![
                    f16::from_f32(0.5),
                    f16::from_f32(-2.0),
                    f16::from_f32(3.0),
                ])),
            ),
            ("f32", f32s(&[0.25, 2.0, 3.0])),
            ("f64", f64s(&[0.1, 2.0, 3.0])),
        ])
    }

    #[test]
    fn numeric_columns_of_every_type() {
        let dir = TempDir::new().unwrap();
        let b = all_types();
        let paths = [
            parquet_file(dir.path(), "t.parquet", &b, 2),
            arrow_file(dir.path(), "t.arrow", std::slice::from_ref(&b), false),
            arrow_file(dir.path(), "t.arrows", std::slice::from_ref(&b), true),
        ];
        for p in &paths {
            let t = read_table(std::slice::from_ref(p), &ReadOptions::default()).unwrap();
            assert!(!t.data.is_f32(), "{p:?}");
            assert_eq!(
                t.column_names,
                names(&[
                    "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "f32", "f64"
                ])
            );
            assert_eq!(
                rows(&t.data)[0],
                vec![
                    -1.0,
                    -300.0,
                    -70000.0,
                    -(2f64.powi(40)),
                    255.0,
                    65535.0,
                    4e9,
                    2f64.powi(50),
                    0.5,
                    0.25,
                    0.1
                ],
                "{p:?}"
            );
            assert_eq!(rows(&t.data)[2], vec![3.0; 11], "{p:?}");
        }
        // Types exact in f32 stay f32; one wider column makes the whole f64.
        let small = selection(Some(&["i8", "i16", "u8", "u16", "f16", "f32"]), &[]);
        let t = read_table(&paths[..1], &small).unwrap();
        let Matrix::F32(m) = &t.data else {
            panic!("f32 expected")
        };
        assert_eq!(
            (0..6).map(|j| m[(0, j)]).collect::<Vec<_>>(),
            vec![-1.0, -300.0, 255.0, 65535.0, 0.5, 0.25]
        );
        let t = read_table(&paths[..1], &selection(Some(&["f32", "f64"]), &[])).unwrap();
        assert!(matches!(t.data, Matrix::F64(_)));
    }

    #[test]
    fn columns_are_chosen_by_name_index_or_exclusion() {
        let dir = TempDir::new().unwrap();
        let b = batch(vec![
            (
                "id",
                Arc::new(StringArray::from(vec!["a", "b"])) as ArrayRef,
            ),
            ("x", f64s(&[1.0, 2.0])),
            ("y", f64s(&[3.0, 4.0])),
            ("z", f64s(&[5.0, 6.0])),
        ]);
        let p = parquet_file(dir.path(), "t.pq", &b, 100);
        let read = |o: &ReadOptions| read_table(std::slice::from_ref(&p), o);
        let t = read(&selection(Some(&["z", "1"]), &[])).unwrap();
        assert_eq!(t.column_names, names(&["z", "x"]));
        assert_eq!(rows(&t.data), vec![vec![5.0, 1.0], vec![6.0, 2.0]]);
        let t = read(&selection(None, &["id", "y"])).unwrap();
        assert_eq!(t.column_names, names(&["x", "z"]));
        assert_eq!(rows(&t.data), vec![vec![1.0, 5.0], vec![2.0, 6.0]]);
        // A non-numeric column is an error unless left out, at the first read (as in CSV), so
        // the names can be looked at first.
        let r = ChunkReader::open(std::slice::from_ref(&p), &ReadOptions::default()).unwrap();
        assert_eq!(r.column_names(), names(&["id", "x", "y", "z"]).as_deref());
        let e = err_of(read(&ReadOptions::default()));
        assert_eq!(
            e,
            format!(
                "{}: column \"id\" holds Utf8, not numbers; leave it out with --exclude id",
                p.display()
            )
        );
        let e = err_of(read(&selection(Some(&["nope"]), &[])));
        assert!(e.contains("no column named \"nope\""), "{e}");
    }

    fn embeddings(rows: usize, width: i32) -> FixedSizeListArray {
        FixedSizeListArray::from_iter_primitive::<Float32Type, _, _>(
            (0..rows).map(|i| Some((0..width).map(move |j| Some((i * 10) as f32 + j as f32)))),
            width,
        )
    }

    #[test]
    fn a_list_column_gives_the_rows() {
        let dir = TempDir::new().unwrap();
        let b = batch(vec![
            ("id", Arc::new(StringArray::from(vec!["a"; 7])) as ArrayRef),
            ("embedding", Arc::new(embeddings(7, 3))),
        ]);
        let expect: Vec<Vec<f64>> = (0..7)
            .map(|i| (0..3).map(|j| (i * 10 + j) as f64).collect())
            .collect();
        let paths = [
            parquet_file(dir.path(), "e.parquet", &b, 3),
            arrow_file(
                dir.path(),
                "e.feather",
                &[b.slice(0, 4), b.slice(4, 3)],
                false,
            ),
            arrow_file(dir.path(), "e.ipc", std::slice::from_ref(&b), true),
        ];
        for p in &paths {
            let t = read_table(std::slice::from_ref(p), &list_options("embedding")).unwrap();
            assert!(t.data.is_f32(), "{p:?}");
            assert_eq!(t.column_names, None);
            assert_eq!(rows(&t.data), expect, "{p:?}");
            for size in [1, 2, 5, 100] {
                let mut r =
                    ChunkReader::open(std::slice::from_ref(p), &list_options("embedding")).unwrap();
                let mut all = Vec::new();
                while let Some(c) = r.next_chunk(size).unwrap() {
                    all.extend(rows(&c));
                }
                assert_eq!(all, expect, "{p:?} by {size}");
            }
        }
        // Without --column the list column is non-numeric, with a hint.
        let e = err_of(read_table(&paths[..1], &selection(None, &["id"])));
        assert!(
            e.contains("column \"embedding\" holds FixedSizeList")
                && e.contains("use --column embedding, or leave it out with --exclude embedding"),
            "{e}"
        );
        // Variable-length lists, f64, read from a sliced (offset) array.
        let lists = ListArray::from_iter_primitive::<Float64Type, _, _>(
            (0..5).map(|i| Some(vec![Some(i as f64), Some(-(i as f64))])),
        );
        let b = batch(vec![("v", Arc::new(lists.slice(1, 4)) as ArrayRef)]);
        let p = parquet_file(dir.path(), "l.parquet", &b, 2);
        let t = read_table(std::slice::from_ref(&p), &list_options("v")).unwrap();
        assert!(!t.data.is_f32());
        assert_eq!(
            rows(&t.data),
            (1..5)
                .map(|i| vec![i as f64, -(i as f64)])
                .collect::<Vec<_>>()
        );
        let large = LargeListArray::from_iter_primitive::<Int64Type, _, _>(
            (0..3).map(|i| Some(vec![Some(i), Some(7)])),
        );
        let b = batch(vec![("v", Arc::new(large) as ArrayRef)]);
        let p = arrow_file(dir.path(), "large.arrow", &[b], false);
        let t = read_table(std::slice::from_ref(&p), &list_options("v")).unwrap();
        assert_eq!(rows(&t.data)[2], vec![2.0, 7.0]);
    }

    #[test]
    fn list_column_errors() {
        let dir = TempDir::new().unwrap();
        let ragged = ListArray::from_iter_primitive::<Float32Type, _, _>(
            (0..9).map(|i| Some(vec![Some(1.0); if i == 7 { 2 } else { 3 }])),
        );
        let b = batch(vec![
            ("x", f64s(&[0.0; 9])),
            ("v", Arc::new(ragged) as ArrayRef),
        ]);
        let p = parquet_file(dir.path(), "r.parquet", &b, 4);
        let e = err_of(read_table(std::slice::from_ref(&p), &list_options("v")));
        assert_eq!(
            e,
            format!(
                "{}, row 7 (counting from 0), column \"v\": a list of 2 value(s) where the file's \
                 first row has 3",
                p.display()
            )
        );
        let nulls = FixedSizeListArray::from_iter_primitive::<Float64Type, _, _>(
            (0..6).map(|i| (i != 4).then(|| vec![Some(1.0), Some(2.0)])),
            2,
        );
        let b = batch(vec![("v", Arc::new(nulls) as ArrayRef)]);
        let p = parquet_file(dir.path(), "n.parquet", &b, 4);
        let e = err_of(read_table(std::slice::from_ref(&p), &list_options("v")));
        assert!(
            e.ends_with(
                "row 4 (counting from 0), column \"v\": null (missing values are not supported)"
            ),
            "{e}"
        );
        let inner = FixedSizeListArray::from_iter_primitive::<Float64Type, _, _>(
            (0..6).map(|i| Some(vec![Some(1.0), (i != 5).then_some(2.0)])),
            2,
        );
        let b = batch(vec![("v", Arc::new(inner) as ArrayRef)]);
        let p = arrow_file(dir.path(), "i.arrow", &[b], false);
        let e = err_of(read_table(std::slice::from_ref(&p), &list_options("v")));
        assert!(
            e.ends_with("row 5 (counting from 0), column \"v\": null at position 1 of the list (missing values are not supported)"),
            "{e}"
        );
        let nan = FixedSizeListArray::from_iter_primitive::<Float32Type, _, _>(
            (0..3).map(|i| Some(vec![Some(1.0), Some(if i == 2 { f32::NAN } else { 0.0 })])),
            2,
        );
        let b = batch(vec![
            ("v", Arc::new(nan) as ArrayRef),
            ("x", f64s(&[1.0; 3])),
        ]);
        let p = parquet_file(dir.path(), "nan.parquet", &b, 4);
        let e = err_of(read_table(std::slice::from_ref(&p), &list_options("v")));
        assert!(
            e.ends_with("row 2 (counting from 0), column \"v\": non-finite value NaN at position 1 of the list"),
            "{e}"
        );
        // Not a list; unknown; with a selection; on a CSV file.
        let e = err_of(read_table(std::slice::from_ref(&p), &list_options("x")));
        assert!(
            e.contains("column \"x\" holds Float64, not lists of numbers"),
            "{e}"
        );
        let e = err_of(read_table(std::slice::from_ref(&p), &list_options("w")));
        assert!(e.contains("no column named \"w\""), "{e}");
        let both = ReadOptions {
            list_column: Some("v".into()),
            exclude: vec![ColumnSelector::Name("x".into())],
            ..Default::default()
        };
        let e = err_of(read_table(std::slice::from_ref(&p), &both));
        assert!(
            e.contains("cannot be combined with a selection of columns"),
            "{e}"
        );
        let csv = write_file(dir.path(), "a.csv", b"v\n1\n");
        let e = err_of(read_table(&[csv], &list_options("v")));
        assert!(e.contains("Parquet and Arrow files only"), "{e}");
        let mut words =
            arrow_array::builder::ListBuilder::new(arrow_array::builder::StringBuilder::new());
        words.values().append_value("a");
        words.append(true);
        let b = batch(vec![("w", Arc::new(words.finish()) as ArrayRef)]);
        let p = parquet_file(dir.path(), "w.parquet", &b, 4);
        let e = err_of(read_table(std::slice::from_ref(&p), &list_options("w")));
        assert!(
            e.contains("column \"w\" holds lists of Utf8, not lists of numbers"),
            "{e}"
        );
        let e = err_of(read_one(&p));
        assert!(e.ends_with("leave it out with --exclude w"), "{e}");
    }

    #[test]
    fn nulls_and_non_finite_values_name_row_and_column() {
        let dir = TempDir::new().unwrap();
        let mut x: Vec<Option<f64>> = (0..10).map(|i| Some(i as f64)).collect();
        x[8] = None;
        let mut y: Vec<f32> = vec![1.0; 10];
        y[9] = f32::INFINITY;
        let b = batch(vec![
            ("x", Arc::new(Float64Array::from(x)) as ArrayRef),
            ("y", f32s(&y)),
        ]);
        let p = parquet_file(dir.path(), "n.parquet", &b, 3);
        let e = err_of(read_table(
            std::slice::from_ref(&p),
            &ReadOptions::default(),
        ));
        assert_eq!(
            e,
            format!(
                "{}, row 8 (counting from 0), column \"x\": null (missing values are not supported)",
                p.display()
            )
        );
        let e = err_of(read_table(
            std::slice::from_ref(&p),
            &selection(Some(&["y"]), &[]),
        ));
        assert!(
            e.ends_with("row 9 (counting from 0), column \"y\": non-finite value inf"),
            "{e}"
        );
        // The first bad row wins, whatever its column.
        let b = batch(vec![
            ("a", f64s(&[1.0, 1.0, f64::NAN])),
            ("b", f64s(&[1.0, f64::NEG_INFINITY, 1.0])),
        ]);
        let p = arrow_file(dir.path(), "n.arrow", &[b], false);
        let e = err_of(read_table(
            std::slice::from_ref(&p),
            &ReadOptions::default(),
        ));
        assert!(
            e.ends_with("row 1 (counting from 0), column \"b\": non-finite value -inf"),
            "{e}"
        );
    }

    /// With `Missing::AsNan`, nulls (of any numeric type, of a list, inside a list) and NaN
    /// are read as NaN, in Parquet and Arrow, whole and chunk by chunk; infinities stay errors.
    #[test]
    fn nulls_are_read_as_nan_when_missing_values_are_asked_for() {
        let dir = TempDir::new().unwrap();
        let as_nan = |options: ReadOptions| ReadOptions {
            missing: Missing::AsNan,
            ..options
        };
        // NaN as None, to compare.
        let holes = |m: &Matrix| -> Vec<Vec<Option<f64>>> {
            rows(m)
                .into_iter()
                .map(|r| r.into_iter().map(|v| (!v.is_nan()).then_some(v)).collect())
                .collect()
        };
        let b = batch(vec![
            (
                "x",
                Arc::new(Float64Array::from(vec![
                    Some(1.0),
                    None,
                    Some(3.0),
                    Some(4.0),
                ])) as ArrayRef,
            ),
            (
                "u",
                Arc::new(UInt8Array::from(vec![None, Some(2), Some(3), None])),
            ),
            ("y", f32s(&[0.5, 1.5, f32::NAN, 3.5])),
        ]);
        let want = vec![
            vec![Some(1.0), None, Some(0.5)],
            vec![None, Some(2.0), Some(1.5)],
            vec![Some(3.0), Some(3.0), None],
            vec![Some(4.0), None, Some(3.5)],
        ];
        let paths = [
            parquet_file(dir.path(), "m.parquet", &b, 3),
            arrow_file(
                dir.path(),
                "m.arrow",
                &[b.slice(0, 1), b.slice(1, 3)],
                false,
            ),
        ];
        for p in &paths {
            let options = as_nan(ReadOptions::default());
            let t = read_table(std::slice::from_ref(p), &options).unwrap();
            assert_eq!(holes(&t.data), want, "{p:?}");
            let mut r = ChunkReader::open(std::slice::from_ref(p), &options).unwrap();
            let mut all = Vec::new();
            while let Some(c) = r.next_chunk(1).unwrap() {
                all.extend(holes(&c));
            }
            assert_eq!(all, want, "{p:?} row by row");
            // Without the option the first null is the error it always was.
            let e = err_of(read_table(std::slice::from_ref(p), &ReadOptions::default()));
            assert!(
                e.ends_with(
                    "row 0 (counting from 0), column \"u\": null (missing values are not supported)"
                ),
                "{e}"
            );
        }
        let b = batch(vec![("x", f64s(&[1.0, f64::NAN, f64::INFINITY]))]);
        let p = parquet_file(dir.path(), "inf.parquet", &b, 3);
        let e = err_of(read_table(
            std::slice::from_ref(&p),
            &as_nan(ReadOptions::default()),
        ));
        assert!(
            e.ends_with("row 2 (counting from 0), column \"x\": non-finite value inf"),
            "{e}"
        );

        // Lists: a null list is a row of NaN; a null or NaN inside a list is NaN.
        let fixed = FixedSizeListArray::from_iter_primitive::<Float64Type, _, _>(
            [
                Some(vec![Some(1.0), Some(2.0)]),
                None,
                Some(vec![None, Some(f64::NAN)]),
                Some(vec![Some(7.0), None]),
            ],
            2,
        );
        let var = ListArray::from_iter_primitive::<Float32Type, _, _>([
            Some(vec![Some(1.0), Some(2.0)]),
            None,
            Some(vec![None, Some(f32::NAN)]),
            Some(vec![Some(7.0), None]),
        ]);
        let want = vec![
            vec![Some(1.0), Some(2.0)],
            vec![None, None],
            vec![None, None],
            vec![Some(7.0), None],
        ];
        for (name, array) in [
            ("fixed", Arc::new(fixed) as ArrayRef),
            ("var", Arc::new(var) as ArrayRef),
        ] {
            let b = batch(vec![("v", array)]);
            for p in [
                parquet_file(dir.path(), &format!("{name}.parquet"), &b, 2),
                arrow_file(
                    dir.path(),
                    &format!("{name}.arrow"),
                    std::slice::from_ref(&b),
                    false,
                ),
            ] {
                let options = as_nan(list_options("v"));
                let t = read_table(std::slice::from_ref(&p), &options).unwrap();
                assert_eq!(holes(&t.data), want, "{p:?}");
                let e = err_of(read_table(std::slice::from_ref(&p), &list_options("v")));
                assert!(e.contains("row 1 (counting from 0)"), "{e}");
            }
        }
        // A variable-length list column's first row gives the width: it cannot be null.
        let var = ListArray::from_iter_primitive::<Float64Type, _, _>([
            None,
            Some(vec![Some(1.0), Some(2.0)]),
        ]);
        let b = batch(vec![("v", Arc::new(var) as ArrayRef)]);
        let p = parquet_file(dir.path(), "first.parquet", &b, 2);
        let e = err_of(read_table(
            std::slice::from_ref(&p),
            &as_nan(list_options("v")),
        ));
        assert!(
            e.ends_with(
                "a null list in the first row, whose list must give the number of features"
            ),
            "{e}"
        );
    }

    #[test]
    fn row_groups_are_streamed_and_counted() {
        let dir = TempDir::new().unwrap();
        let n = 1000;
        let b = batch(vec![
            ("a", f64s(&(0..n).map(|i| i as f64).collect::<Vec<_>>())),
            (
                "b",
                f32s(&(0..n).map(|i| (i * 2) as f32).collect::<Vec<_>>()),
            ),
        ]);
        let p = parquet_file(dir.path(), "g.parquet", &b, 97);
        let whole = read_table(std::slice::from_ref(&p), &ReadOptions::default()).unwrap();
        assert_eq!(whole.data.nrows(), n);
        assert_eq!(rows(&whole.data)[999], vec![999.0, 1998.0]);
        let r = ChunkReader::open(std::slice::from_ref(&p), &ReadOptions::default()).unwrap();
        assert_eq!(r.n_rows_hint(), Some(n));
        for size in [1, 33, 97, 250, 5000] {
            let mut r =
                ChunkReader::open(std::slice::from_ref(&p), &ReadOptions::default()).unwrap();
            let mut got = Vec::new();
            while let Some(c) = r.next_chunk(size).unwrap() {
                assert!(c.nrows() <= size);
                got.extend(rows(&c));
            }
            assert_eq!(got, rows(&whole.data), "chunks of {size}");
        }
    }

    #[test]
    fn parquet_and_arrow_shards_mix_with_others() {
        let dir = TempDir::new().unwrap();
        let b = batch(vec![("x", f64s(&[1.0, 2.0])), ("y", f64s(&[3.0, 4.0]))]);
        let a = parquet_file(dir.path(), "a.parquet", &b, 1);
        let c = write_file(dir.path(), "c.csv", b"x,y\n5,6\n");
        let f = arrow_file(dir.path(), "f.arrow", &[b.slice(1, 1)], false);
        let t = read_table(&[a.clone(), c, f], &ReadOptions::default()).unwrap();
        assert_eq!(
            rows(&t.data),
            vec![
                vec![1.0, 3.0],
                vec![2.0, 4.0],
                vec![5.0, 6.0],
                vec![2.0, 4.0]
            ]
        );
        assert_eq!(t.column_names, names(&["x", "y"]));
        let other = batch(vec![("x", f64s(&[1.0])), ("w", f64s(&[3.0]))]);
        let o = parquet_file(dir.path(), "o.parquet", &other, 1);
        let e = err_of(read_table(&[a, o], &ReadOptions::default()));
        assert!(
            e.contains("its kept column 2 is \"w\" where the first shard has \"y\""),
            "{e}"
        );
    }

    #[test]
    fn content_and_names_must_agree() {
        let dir = TempDir::new().unwrap();
        let b = batch(vec![("x", f64s(&[1.0]))]);
        let p = parquet_file(dir.path(), "p.parquet", &b, 1);
        let zipped = write_file(dir.path(), "p.parquet.gz", &gz(&std::fs::read(&p).unwrap()));
        let e = err_of(read_table(&[zipped], &ReadOptions::default()));
        assert!(
            e.contains("gzip-compressed Parquet and Arrow files cannot be read"),
            "{e}"
        );
        let fake = write_file(dir.path(), "fake.parquet", b"x\n1\n");
        let e = err_of(read_table(&[fake], &ReadOptions::default()));
        assert!(e.contains("the name says Parquet"), "{e}");
        let v1 = write_file(dir.path(), "old.feather", b"FEA1\0\0\0\0");
        let e = err_of(read_table(&[v1], &ReadOptions::default()));
        assert!(e.contains("Feather version 1"), "{e}");
        // A truncated Parquet file: no footer.
        let bytes = std::fs::read(&p).unwrap();
        let cut = write_file(dir.path(), "cut.parquet", &bytes[..bytes.len() / 2]);
        let e = err_of(read_table(
            std::slice::from_ref(&cut),
            &ReadOptions::default(),
        ));
        assert!(
            e.starts_with(&format!("{}: not a readable Parquet file", cut.display())),
            "{e}"
        );
        // An Arrow stream needs no seeking: gzip is fine.
        let stream = arrow_file(dir.path(), "s.arrows", std::slice::from_ref(&b), true);
        let zipped = write_file(
            dir.path(),
            "s.arrows.gz",
            &gz(&std::fs::read(&stream).unwrap()),
        );
        assert_eq!(rows(&read_one(&zipped).unwrap().data), vec![vec![1.0]]);
        // Renamed to anything, the content decides.
        let renamed = write_file(dir.path(), "data.bin", &bytes);
        assert_eq!(read_one(&renamed).unwrap().data.nrows(), 1);
    }

    #[test]
    fn empty_files_have_no_data() {
        let dir = TempDir::new().unwrap();
        let b = batch(vec![("x", f64s(&[]))]);
        let p = parquet_file(dir.path(), "e.parquet", &b, 10);
        let e = err_of(read_one(&p));
        assert!(
            e.contains("has no data rows (the Parquet file has 0 rows)"),
            "{e}"
        );
        let p = arrow_file(dir.path(), "e.arrows", std::slice::from_ref(&b), true);
        let e = err_of(read_one(&p));
        assert!(
            e.contains("has no data rows (the Arrow data has 0 rows)"),
            "{e}"
        );
        let p = arrow_file(dir.path(), "e.arrow", &[b], false);
        let e = err_of(read_one(&p));
        assert!(e.contains("has no data rows"), "{e}");
    }
}
