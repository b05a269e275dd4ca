//! The values of Arrow arrays copied into row-major rows, checked on the way: a null or a
//! non-finite value is an error naming its row and column — except, when missing values are
//! read ([`Missing::AsNan`]), nulls and NaN, which become NaN (a null list, a row of NaN).
//! Numeric columns are scattered into their place in every row; a list column's lists are rows
//! already.

use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float16Type, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type,
    UInt16Type, UInt32Type, UInt64Type,
};
use arrow_array::{Array, GenericListArray, OffsetSizeTrait, RecordBatch};
use arrow_schema::DataType;
use half::f16;

use crate::error::{IoError, Result};
use crate::read::options::Missing;
use crate::read::rows::{Dst, RowBuf};

/// The rows of a batch being copied, for messages.
pub(super) struct Rows<'a> {
    pub(super) path: &'a Path,
    /// The file row of `offset`.
    pub(super) first_row: u64,
    /// The first row of the batch to copy.
    pub(super) offset: usize,
    /// How many rows to copy.
    pub(super) len: usize,
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
pub(super) fn list_row_len<O: OffsetSizeTrait>(l: &GenericListArray<O>, i: usize) -> Option<usize> {
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
    /// Exact for the types of [`fits_f32`](super::fits_f32), which alone are written to f32
    /// buffers.
    fn to_f32(self) -> f32;
    fn finite(self) -> bool {
        true
    }
    fn is_nan(self) -> bool {
        false
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
    #[inline]
    fn is_nan(self) -> bool {
        self.is_nan()
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
    #[inline]
    fn is_nan(self) -> bool {
        self.is_nan()
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
    #[inline]
    fn is_nan(self) -> bool {
        self.is_nan()
    }
}

/// The first NaN or infinity (the first infinity when `missing` reads NaN): its index and
/// value.
fn first_non_finite<T: Num>(s: &[T], missing: Missing) -> Option<(usize, f64)> {
    let nan_ok = missing == Missing::AsNan;
    s.iter()
        .position(|x| !(x.finite() || nan_ok && x.is_nan()))
        .map(|i| (i, s[i].to_f64()))
}

/// Writes NaN at `at` (a null read as a missing value).
fn set_nan(dst: &mut Dst<'_>, at: usize) {
    match dst {
        Dst::F32(out) => out[at] = f32::NAN,
        Dst::F64(out) => out[at] = f64::NAN,
    }
}

/// What a null is when missing values are not read.
const NULL: &str = "null (missing values are not supported)";

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

/// Copies `rows` of the numeric columns `cols` to `out`, row-major. Checks every value first:
/// the error is at the first row with a null or a non-finite value (its first such column);
/// with `Missing::AsNan`, nulls and NaN are NaN and only infinities are errors.
pub(super) fn copy_columns(
    rows: &Rows<'_>,
    batch: &RecordBatch,
    cols: &[usize],
    names: &[String],
    missing: Missing,
    out: &mut RowBuf,
) -> Result<()> {
    let (start, len) = (rows.offset, rows.len);
    let values: Vec<Typed<'_>> = cols
        .iter()
        .map(|&c| typed(batch.column(c).as_ref()))
        .collect();
    let mut bad: Option<(usize, usize, String)> = None;
    for (k, &c) in cols.iter().enumerate() {
        let null = match missing {
            Missing::Reject => first_null(batch.column(c).as_ref(), start, len),
            Missing::AsNan => None,
        }
        .map(|i| (i, NULL.to_owned()));
        let non_finite =
            with_values!(&values[k], s => first_non_finite(&s[start..start + len], missing))
                .map(|(i, v)| (i, format!("non-finite value {v}")));
        // A null slot holds an arbitrary value: the null is the error.
        let first = match (null, non_finite) {
            (Some(a), Some(b)) => Some(if b.0 < a.0 { b } else { a }),
            (a, b) => a.or(b),
        };
        if let Some((i, detail)) = first
            && bad.as_ref().is_none_or(|b| i < b.0)
        {
            bad = Some((i, k, detail));
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
    // Only with `Missing::AsNan` can a null be left here (else it was the error above).
    for (k, &c) in cols.iter().enumerate() {
        let column = batch.column(c);
        if column.null_count() > 0 {
            for i in (0..len).filter(|&i| column.is_null(start + i)) {
                set_nan(&mut dst, i * d + k);
            }
        }
    }
    Ok(())
}

/// Copies `rows` of a list column to `out`: every list is a row of `width` numbers. With
/// `Missing::AsNan` a null list is a row of NaN, and a null or NaN inside a list is NaN.
pub(super) fn copy_list(
    rows: &Rows<'_>,
    column: &dyn Array,
    name: &str,
    width: usize,
    missing: Missing,
    out: &mut RowBuf,
) -> Result<()> {
    let (start, len) = (rows.offset, rows.len);
    if missing == Missing::Reject
        && let Some(i) = first_null(column, start, len)
    {
        return Err(rows.error(i, name, NULL.into()));
    }
    let list = ListRows {
        rows,
        name,
        width,
        missing,
        null: |i| column.is_null(start + i),
    };
    match column.data_type() {
        DataType::FixedSizeList(..) => {
            let l = column.as_fixed_size_list();
            let first = l.value_offset(start) as usize;
            list.copy_values(l.values().as_ref(), out, |i| Ok(first + i * width))
        }
        DataType::List(_) => copy_var_list(&list, column.as_list::<i32>(), out),
        _ => copy_var_list(&list, column.as_list::<i64>(), out),
    }
}

/// The rows of a list column being copied.
struct ListRows<'a, F> {
    rows: &'a Rows<'a>,
    name: &'a str,
    width: usize,
    missing: Missing,
    /// Whether the list of row `i` (counting from `rows.offset`) is null.
    null: F,
}

fn copy_var_list<O: OffsetSizeTrait, F: Fn(usize) -> bool>(
    list: &ListRows<'_, F>,
    l: &GenericListArray<O>,
    out: &mut RowBuf,
) -> Result<()> {
    let (rows, width) = (list.rows, list.width);
    let offsets = l.value_offsets();
    list.copy_values(l.values().as_ref(), out, |i| {
        let (a, b) = (
            offsets[rows.offset + i].as_usize(),
            offsets[rows.offset + i + 1].as_usize(),
        );
        if b - a == width {
            Ok(a)
        } else {
            Err(rows.error(
                i,
                list.name,
                format!(
                    "a list of {} value(s) where the file's first row has {width}",
                    b - a
                ),
            ))
        }
    })
}

impl<F: Fn(usize) -> bool> ListRows<'_, F> {
    /// Copies the lists of the rows (list `i` is `values[start_of(i)..][..width]`) to `out`,
    /// checking for nulls and non-finite values inside them. A null list (only with
    /// `Missing::AsNan`) is a row of NaN, whatever its length.
    fn copy_values(
        &self,
        values: &dyn Array,
        out: &mut RowBuf,
        start_of: impl Fn(usize) -> Result<usize>,
    ) -> Result<()> {
        let (rows, name, width) = (self.rows, self.name, self.width);
        let typed = typed(values);
        let mut dst = out.grow(rows.len * width);
        for i in 0..rows.len {
            if (self.null)(i) {
                for p in 0..width {
                    set_nan(&mut dst, i * width + p);
                }
                continue;
            }
            let at = start_of(i)?;
            if self.missing == Missing::Reject
                && let Some(p) = first_null(values, at, width)
            {
                return Err(rows.error(
                    i,
                    name,
                    format!(
                        "null at position {p} of the list (missing values are not \
                             supported)"
                    ),
                ));
            }
            let bad = with_values!(&typed, s => {
                let list = &s[at..at + width];
                copy_into(list, &mut dst, i * width);
                first_non_finite(list, self.missing)
            });
            if let Some((p, v)) = bad {
                return Err(rows.error(
                    i,
                    name,
                    format!("non-finite value {v} at position {p} of the list"),
                ));
            }
            if values.null_count() > 0 {
                for p in (0..width).filter(|&p| values.is_null(at + p)) {
                    set_nan(&mut dst, i * width + p);
                }
            }
        }
        Ok(())
    }
}
