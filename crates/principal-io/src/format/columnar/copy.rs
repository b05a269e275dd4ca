//! The values of Arrow arrays copied into row-major rows, checked on the way: a null or a
//! non-finite value is an error naming its row and column. Numeric columns are scattered into
//! their place in every row; a list column's lists are rows already.

use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float16Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type,
    UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{Array, GenericListArray, OffsetSizeTrait, RecordBatch};
use arrow_schema::DataType;
use half::f16;

use crate::error::{IoError, Result};
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

/// Copies `rows` of the numeric columns `cols` to `out`, row-major. Checks every value first:
/// the error is at the first row with a null or a non-finite value (its first such column).
pub(super) fn copy_columns(
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
pub(super) fn copy_list(
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
