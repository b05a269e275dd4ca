//! Parquet and Arrow IPC files: numeric columns, or one list column of embeddings (one row per
//! list), streamed a record batch at a time (Parquet: pages of a row group; Arrow: one IPC
//! batch), so a file is never held in memory whole.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float16Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type,
    UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{Array, GenericListArray, OffsetSizeTrait, RecordBatch};
use arrow_ipc::reader::{FileReader, StreamReader};
use arrow_schema::{ArrowError, DataType, Schema};
use half::f16;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ProjectionMask;

use crate::csv::shell_word;
use crate::source::{resolve_columns, RowBuf};
use crate::{ColumnSelector, IoError, ReadOptions, Result};

/// Values per record batch: big enough to amortise the per-batch work, small enough that a
/// batch (8 MiB of f64) is nothing next to a chunk.
const BATCH_VALUES: usize = 1 << 20;

type Batches = Box<dyn Iterator<Item = std::result::Result<RecordBatch, ArrowError>> + Send>;

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

/// An Arrow error while reading: I/O errors keep their kind, the rest are about the content.
fn arrow_error(path: &Path, format: &str, e: ArrowError) -> IoError {
    match e {
        ArrowError::IoError(_, source) => IoError::Read {
            path: path.to_owned(),
            source,
        },
        e => format_error(path, format!("cannot decode the {format} data: {e}")),
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
    })
}

/// Rows per record batch for rows of `width` values (unknown: 0).
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

/// Opens a Parquet file: reads its footer, resolves the selection, and reads only the selected
/// columns.
pub(crate) fn open_parquet(path: &Path, options: &ReadOptions) -> Result<ColumnarSource> {
    let open_err = |source| IoError::Open {
        path: path.to_owned(),
        source,
    };
    let file = File::open(path).map_err(open_err)?;
    let file_len = file.metadata().map_err(open_err)?.len();
    let builder = ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(|e| format_error(path, format!("not a readable Parquet file: {e}")))?;
    let selected = select(path, builder.schema(), options)?;
    let num_rows = builder.metadata().file_metadata().num_rows();
    let n_rows = usize::try_from(num_rows)
        .map_err(|_| format_error(path, format!("the footer gives {num_rows} rows")))?;
    if n_rows == 0 {
        return Err(IoError::NoData {
            path: path.to_owned(),
            detail: " (the Parquet file has 0 rows)",
        });
    }
    // The row count sizes `read_all`'s allocation: trusted only when it is plausible for the
    // file's size, so that a corrupt footer gives an error rather than a huge allocation.
    let size_checked = selected.width.is_some_and(|w| {
        (n_rows as u64).saturating_mul(w as u64).saturating_mul(8)
            <= file_len.saturating_mul(64).max(1 << 30)
    });
    let mask = ProjectionMask::roots(builder.parquet_schema(), selected.roots.iter().copied());
    let reader = builder
        .with_projection(mask)
        .with_batch_size(batch_rows(selected.width))
        .build()
        .map_err(|e| format_error(path, format!("not a readable Parquet file: {e}")))?;
    ColumnarSource::new(
        path,
        "Parquet",
        Box::new(reader),
        selected.projected(),
        Some(n_rows),
        size_checked,
    )
}

/// Opens an Arrow IPC file (Feather v2): the footer, then only the selected columns.
pub(crate) fn open_arrow_file(path: &Path, options: &ReadOptions) -> Result<ColumnarSource> {
    let open = || {
        File::open(path).map_err(|source| IoError::Open {
            path: path.to_owned(),
            source,
        })
    };
    let bad = |e| format_error(path, format!("not a readable Arrow IPC file: {e}"));
    let probe = FileReader::try_new_buffered(open()?, None).map_err(bad)?;
    let selected = select(path, &probe.schema(), options)?;
    if probe.num_batches() == 0 {
        return Err(IoError::NoData {
            path: path.to_owned(),
            detail: " (the Arrow file has no record batches)",
        });
    }
    drop(probe);
    let reader =
        FileReader::try_new_buffered(open()?, Some(selected.roots.clone())).map_err(bad)?;
    ColumnarSource::new(
        path,
        "Arrow",
        Box::new(reader),
        selected.projected(),
        None,
        false,
    )
}

/// Opens an Arrow IPC stream (`.arrows`; also what some tools write as `.arrow`). The schema
/// comes first; every column is decoded, as the projection is known only after it.
pub(crate) fn open_arrow_stream(
    path: &Path,
    stream: Box<dyn Read + Send>,
    options: &ReadOptions,
) -> Result<ColumnarSource> {
    let reader = StreamReader::try_new(BufReader::new(stream), None)
        .map_err(|e| format_error(path, format!("not a readable Arrow IPC stream: {e}")))?;
    let selected = select(path, &reader.schema(), options)?;
    ColumnarSource::new(path, "Arrow", Box::new(reader), selected, None, false)
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
                    })
                }
                Some(n) => *width = n,
                None => {
                    return Err(IoError::BadValue {
                        path: source.path.clone(),
                        row: 0,
                        column: name.clone(),
                        detail: "null (missing values are not supported)".into(),
                    })
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

    /// Moves to the next non-empty batch; `false` at the end.
    fn next_batch(&mut self) -> Result<bool> {
        loop {
            match self.batches.next() {
                None => {
                    self.batch = None;
                    return Ok(false);
                }
                Some(Err(e)) => return Err(arrow_error(&self.path, self.format, e)),
                Some(Ok(batch)) if batch.num_rows() == 0 => {}
                Some(Ok(batch)) => {
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
                    copy_columns(&at, batch, cols, names, out)?;
                }
                Plan::List {
                    at: col,
                    name,
                    width,
                } => {
                    copy_list(&at, batch.column(*col), name, *width, out)?;
                }
            }
            self.offset += take;
            self.row += take as u64;
            n += take;
        }
        Ok(n)
    }
}

/// The rows of a batch being copied, for messages.
struct Rows<'a> {
    path: &'a Path,
    /// The file row of `offset`.
    first_row: u64,
    offset: usize,
    len: usize,
}

impl Rows<'_> {
    fn error(&self, i: usize, column: &str, detail: String) -> IoError {
        IoError::BadValue {
            path: self.path.to_owned(),
            row: self.first_row + i as u64,
            column: column.to_owned(),
            detail,
        }
    }
}

/// The length of list `i`, `None` when the list is null.
fn list_row_len<O: OffsetSizeTrait>(l: &GenericListArray<O>, i: usize) -> Option<usize> {
    (!l.is_null(i)).then(|| l.value_length(i).as_usize())
}

/// The first null of `a` in `start..start + len`, relative to `start`.
fn first_null(a: &dyn Array, start: usize, len: usize) -> Option<usize> {
    if a.null_count() == 0 {
        return None;
    }
    (0..len).find(|&i| a.is_null(start + i))
}

/// A numeric array's values.
enum Typed<'a> {
    I8(&'a [i8]),
    I16(&'a [i16]),
    I32(&'a [i32]),
    I64(&'a [i64]),
    U8(&'a [u8]),
    U16(&'a [u16]),
    U32(&'a [u32]),
    U64(&'a [u64]),
    F16(&'a [f16]),
    F32(&'a [f32]),
    F64(&'a [f64]),
}

/// Runs `$body` with `$s` bound to the values' slice, whatever their type.
macro_rules! with_values {
    ($typed:expr, $s:ident => $body:expr) => {
        match $typed {
            Typed::I8($s) => $body,
            Typed::I16($s) => $body,
            Typed::I32($s) => $body,
            Typed::I64($s) => $body,
            Typed::U8($s) => $body,
            Typed::U16($s) => $body,
            Typed::U32($s) => $body,
            Typed::U64($s) => $body,
            Typed::F16($s) => $body,
            Typed::F32($s) => $body,
            Typed::F64($s) => $body,
        }
    };
}

/// The values of a numeric array (checked by `select`), offset applied.
fn typed(a: &dyn Array) -> Typed<'_> {
    match a.data_type() {
        DataType::Int8 => Typed::I8(a.as_primitive::<Int8Type>().values()),
        DataType::Int16 => Typed::I16(a.as_primitive::<Int16Type>().values()),
        DataType::Int32 => Typed::I32(a.as_primitive::<Int32Type>().values()),
        DataType::Int64 => Typed::I64(a.as_primitive::<Int64Type>().values()),
        DataType::UInt8 => Typed::U8(a.as_primitive::<UInt8Type>().values()),
        DataType::UInt16 => Typed::U16(a.as_primitive::<UInt16Type>().values()),
        DataType::UInt32 => Typed::U32(a.as_primitive::<UInt32Type>().values()),
        DataType::UInt64 => Typed::U64(a.as_primitive::<UInt64Type>().values()),
        DataType::Float16 => Typed::F16(a.as_primitive::<Float16Type>().values()),
        DataType::Float32 => Typed::F32(a.as_primitive::<Float32Type>().values()),
        DataType::Float64 => Typed::F64(a.as_primitive::<Float64Type>().values()),
        // `select` let through only the types above; a file changed since then lands here.
        other => panic!("not a numeric type: {other}"),
    }
}

/// A number as stored in a column.
trait Num: Copy {
    fn to_f64(self) -> f64;
    /// Exact for the types of [`fits_f32`], which alone are written to f32 buffers.
    fn to_f32(self) -> f32;
    fn finite(self) -> bool {
        true
    }
}

macro_rules! int_num {
    ($($t:ty),*) => {$(
        impl Num for $t {
            #[inline]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline]
            fn to_f32(self) -> f32 {
                self as f32
            }
        }
    )*};
}
int_num!(i8, i16, i32, i64, u8, u16, u32, u64);

impl Num for f16 {
    #[inline]
    fn to_f64(self) -> f64 {
        f16::to_f64(self)
    }
    #[inline]
    fn to_f32(self) -> f32 {
        f16::to_f32(self)
    }
    #[inline]
    fn finite(self) -> bool {
        self.is_finite()
    }
}

impl Num for f32 {
    #[inline]
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    #[inline]
    fn to_f32(self) -> f32 {
        self
    }
    #[inline]
    fn finite(self) -> bool {
        self.is_finite()
    }
}

impl Num for f64 {
    #[inline]
    fn to_f64(self) -> f64 {
        self
    }
    #[inline]
    fn to_f32(self) -> f32 {
        self as f32
    }
    #[inline]
    fn finite(self) -> bool {
        self.is_finite()
    }
}

/// The first NaN or infinity: its index and value.
fn first_non_finite<T: Num>(s: &[T]) -> Option<(usize, f64)> {
    s.iter()
        .position(|x| !x.finite())
        .map(|i| (i, s[i].to_f64()))
}

/// Writes `src` into column `k` of the row-major block `dst` of rows of `d` values.
fn scatter<T: Num>(src: &[T], dst: &mut Dst<'_>, d: usize, k: usize) {
    match dst {
        Dst::F32(out) => {
            for (i, &x) in src.iter().enumerate() {
                out[i * d + k] = x.to_f32();
            }
        }
        Dst::F64(out) => {
            for (i, &x) in src.iter().enumerate() {
                out[i * d + k] = x.to_f64();
            }
        }
    }
}

/// Writes `src` to `dst` at `at` (contiguous: a list's values are a row).
fn copy_into<T: Num>(src: &[T], dst: &mut Dst<'_>, at: usize) {
    match dst {
        Dst::F32(out) => {
            for (o, &x) in out[at..at + src.len()].iter_mut().zip(src) {
                *o = x.to_f32();
            }
        }
        Dst::F64(out) => {
            for (o, &x) in out[at..at + src.len()].iter_mut().zip(src) {
                *o = x.to_f64();
            }
        }
    }
}

/// The new rows of a [`RowBuf`], to be filled in place.
pub(crate) enum Dst<'a> {
    F32(&'a mut [f32]),
    F64(&'a mut [f64]),
}

/// Copies `rows` of the numeric columns `cols` to `out`, row-major. Checks every value first:
/// the error is at the first row with a null or a non-finite value (its first such column).
fn copy_columns(
    rows: &Rows<'_>,
    batch: &RecordBatch,
    cols: &[usize],
    names: &[String],
    out: &mut RowBuf,
) -> Result<()> {
    let (start, len) = (rows.offset, rows.len);
    let values: Vec<Typed<'_>> = cols
        .iter()
        .map(|&c| typed(batch.column(c).as_ref()))
        .collect();
    let mut bad: Option<(usize, usize, String)> = None;
    for (k, &c) in cols.iter().enumerate() {
        let null = first_null(batch.column(c).as_ref(), start, len)
            .map(|i| (i, "null (missing values are not supported)".to_owned()));
        let non_finite = with_values!(&values[k], s => first_non_finite(&s[start..start + len]))
            .map(|(i, v)| (i, format!("non-finite value {v}")));
        // A null slot holds an arbitrary value: the null is the error.
        let first = match (null, non_finite) {
            (Some(a), Some(b)) => Some(if b.0 < a.0 { b } else { a }),
            (a, b) => a.or(b),
        };
        if let Some((i, detail)) = first {
            if bad.as_ref().is_none_or(|b| i < b.0) {
                bad = Some((i, k, detail));
            }
        }
    }
    if let Some((i, k, detail)) = bad {
        return Err(rows.error(i, &names[k], detail));
    }
    let d = cols.len();
    let mut dst = out.grow(len * d);
    // Blocks of rows small enough to stay in cache while every column is written into them.
    let block = (32_768 / d).max(16);
    for r in (0..len).step_by(block) {
        let end = (r + block).min(len);
        let mut part = match &mut dst {
            Dst::F32(v) => Dst::F32(&mut v[r * d..end * d]),
            Dst::F64(v) => Dst::F64(&mut v[r * d..end * d]),
        };
        for (k, v) in values.iter().enumerate() {
            with_values!(v, s => scatter(&s[start + r..start + end], &mut part, d, k));
        }
    }
    Ok(())
}

/// Copies `rows` of a list column to `out`: every list is a row of `width` numbers.
fn copy_list(
    rows: &Rows<'_>,
    column: &dyn Array,
    name: &str,
    width: usize,
    out: &mut RowBuf,
) -> Result<()> {
    let (start, len) = (rows.offset, rows.len);
    if let Some(i) = first_null(column, start, len) {
        return Err(rows.error(i, name, "null (missing values are not supported)".into()));
    }
    match column.data_type() {
        DataType::FixedSizeList(..) => {
            let l = column.as_fixed_size_list();
            let first = l.value_offset(start) as usize;
            copy_values(rows, l.values().as_ref(), name, width, out, |i| {
                Ok(first + i * width)
            })
        }
        DataType::List(_) => copy_var_list(rows, column.as_list::<i32>(), name, width, out),
        _ => copy_var_list(rows, column.as_list::<i64>(), name, width, out),
    }
}

fn copy_var_list<O: OffsetSizeTrait>(
    rows: &Rows<'_>,
    l: &GenericListArray<O>,
    name: &str,
    width: usize,
    out: &mut RowBuf,
) -> Result<()> {
    let offsets = l.value_offsets();
    copy_values(rows, l.values().as_ref(), name, width, out, |i| {
        let (a, b) = (
            offsets[rows.offset + i].as_usize(),
            offsets[rows.offset + i + 1].as_usize(),
        );
        if b - a == width {
            Ok(a)
        } else {
            Err(rows.error(
                i,
                name,
                format!(
                    "a list of {} value(s) where the file's first row has {width}",
                    b - a
                ),
            ))
        }
    })
}

/// Copies the lists of `rows` (list `i` is `values[start_of(i)..][..width]`) to `out`, checking
/// for nulls and non-finite values inside them.
fn copy_values(
    rows: &Rows<'_>,
    values: &dyn Array,
    name: &str,
    width: usize,
    out: &mut RowBuf,
    start_of: impl Fn(usize) -> Result<usize>,
) -> Result<()> {
    let typed = typed(values);
    let mut dst = out.grow(rows.len * width);
    for i in 0..rows.len {
        let at = start_of(i)?;
        if let Some(p) = first_null(values, at, width) {
            return Err(rows.error(
                i,
                name,
                format!("null at position {p} of the list (missing values are not supported)"),
            ));
        }
        let bad = with_values!(&typed, s => {
            let list = &s[at..at + width];
            copy_into(list, &mut dst, i * width);
            first_non_finite(list)
        });
        if let Some((p, v)) = bad {
            return Err(rows.error(
                i,
                name,
                format!("non-finite value {v} at position {p} of the list"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{
        ArrayRef, FixedSizeListArray, Float16Array, Float32Array, Float64Array, Int16Array,
        Int32Array, Int64Array, Int8Array, LargeListArray, ListArray, StringArray, UInt16Array,
        UInt32Array, UInt64Array, UInt8Array,
    };
    use tempfile::TempDir;

    use super::*;
    use crate::test_util::*;
    use crate::{read_table, ChunkReader, Matrix};

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
                names(&["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "f32", "f64"])
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
