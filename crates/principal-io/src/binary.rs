//! Row-by-row decoding of dense binary arrays, shared by NPY and IDX.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::source::{read_full, RowBuf};
use crate::{IoError, Result};

/// Element types of NPY and IDX arrays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Elem {
    U8,
    I8,
    U16,
    I16,
    U32,
    I32,
    U64,
    I64,
    F32,
    F64,
}

impl Elem {
    pub(crate) fn size(self) -> usize {
        match self {
            Elem::U8 | Elem::I8 => 1,
            Elem::U16 | Elem::I16 => 2,
            Elem::U32 | Elem::I32 | Elem::F32 => 4,
            Elem::U64 | Elem::I64 | Elem::F64 => 8,
        }
    }

    /// Whether every value converts to f32 exactly, so the data can stay f32 (half the memory).
    pub(crate) fn fits_f32(self) -> bool {
        matches!(
            self,
            Elem::U8 | Elem::I8 | Elem::U16 | Elem::I16 | Elem::F32
        )
    }
}

/// An element type with its byte order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ElemType {
    pub elem: Elem,
    pub big_endian: bool,
}

impl ElemType {
    /// Decodes one element from exactly `size()` bytes. Values of `fits_f32` types are exact.
    #[inline]
    fn decode(self, b: &[u8]) -> f64 {
        macro_rules! num {
            ($t:ty, $n:literal) => {{
                let mut a = [0u8; $n];
                a.copy_from_slice(&b[..$n]);
                if self.big_endian {
                    <$t>::from_be_bytes(a)
                } else {
                    <$t>::from_le_bytes(a)
                }
            }};
        }
        match self.elem {
            Elem::U8 => f64::from(b[0]),
            Elem::I8 => f64::from(b[0] as i8),
            Elem::U16 => f64::from(num!(u16, 2)),
            Elem::I16 => f64::from(num!(i16, 2)),
            Elem::U32 => f64::from(num!(u32, 4)),
            Elem::I32 => f64::from(num!(i32, 4)),
            Elem::U64 => num!(u64, 8) as f64,
            Elem::I64 => num!(i64, 8) as f64,
            Elem::F32 => f64::from(num!(f32, 4)),
            Elem::F64 => num!(f64, 8),
        }
    }
}

/// Where the element bytes come from.
enum Layout {
    /// C order: one row at a time from the stream.
    Rows,
    /// Fortran order: the whole array, read at the first call (rows are not contiguous).
    Columns(Option<Vec<u8>>),
}

/// Streams the rows of an `nrows × ncols` array stored after a header of `data_start` bytes.
pub(crate) struct BinaryRows {
    path: PathBuf,
    reader: Box<dyn Read + Send>,
    elem: ElemType,
    nrows: usize,
    ncols: usize,
    kept: Vec<usize>,
    next_row: usize,
    row: Vec<u8>,
    data_start: u64,
    compressed: bool,
    size_checked: bool,
    layout: Layout,
}

/// Rows above this many bytes are refused when the file size cannot be checked (gzip):
/// a garbage header must give an error, not an allocation failure.
const MAX_ROW_BYTES: u64 = 1 << 30;

/// What a header says about the array.
pub(crate) struct ArrayHeader {
    pub elem: ElemType,
    pub nrows: usize,
    pub ncols: usize,
    pub fortran_order: bool,
    /// Bytes before the data.
    pub data_start: u64,
}

impl BinaryRows {
    /// Checks the promised size against the file (`file_len` is `None` for gzip and pipes,
    /// whose size is known only at the end) and prepares to stream rows.
    pub(crate) fn new(
        path: &Path,
        reader: Box<dyn Read + Send>,
        header: ArrayHeader,
        file_len: Option<u64>,
        compressed: bool,
        kept: Vec<usize>,
    ) -> Result<Self> {
        let size = header.elem.elem.size() as u64;
        let too_big = || IoError::Format {
            path: path.to_owned(),
            detail: format!(
                "the header's shape {}×{} is too large",
                header.nrows, header.ncols
            ),
        };
        let row_bytes = (header.ncols as u64)
            .checked_mul(size)
            .ok_or_else(too_big)?;
        let total = row_bytes
            .checked_mul(header.nrows as u64)
            .and_then(|t| t.checked_add(header.data_start))
            .ok_or_else(too_big)?;
        match file_len {
            Some(len) if len < total => {
                return Err(IoError::Truncated {
                    path: path.to_owned(),
                    expected: total,
                    actual: len,
                    compressed: false,
                })
            }
            None if row_bytes > MAX_ROW_BYTES => return Err(too_big()),
            _ => {}
        }
        let layout = if header.fortran_order && header.ncols > 1 {
            Layout::Columns(None)
        } else {
            Layout::Rows
        };
        Ok(BinaryRows {
            path: path.to_owned(),
            reader,
            elem: header.elem,
            nrows: header.nrows,
            ncols: header.ncols,
            kept,
            next_row: 0,
            row: vec![0; usize::try_from(row_bytes).map_err(|_| too_big())?],
            data_start: header.data_start,
            compressed,
            size_checked: file_len.is_some(),
            layout,
        })
    }

    pub(crate) fn nrows(&self) -> usize {
        self.nrows
    }

    pub(crate) fn n_features(&self) -> usize {
        self.kept.len()
    }

    /// Whether the file's size was checked against the header, so that `nrows` can be trusted
    /// for allocations.
    pub(crate) fn size_checked(&self) -> bool {
        self.size_checked
    }

    pub(crate) fn is_f32(&self) -> bool {
        self.elem.elem.fits_f32()
    }

    fn truncated(&self, data_bytes_read: u64) -> IoError {
        let size = self.elem.elem.size() as u64;
        IoError::Truncated {
            path: self.path.clone(),
            expected: self.data_start + self.nrows as u64 * self.ncols as u64 * size,
            actual: self.data_start + data_bytes_read,
            compressed: self.compressed,
        }
    }

    /// Appends up to `max_rows` rows (kept columns only) to `out`; returns how many.
    pub(crate) fn read_rows(&mut self, max_rows: usize, out: &mut RowBuf) -> Result<usize> {
        let n = max_rows.min(self.nrows - self.next_row);
        if n == 0 {
            return Ok(0);
        }
        if let Layout::Columns(None) = self.layout {
            let total = self.row.len() as u64 * self.nrows as u64;
            let mut all = Vec::new();
            let got = (&mut self.reader)
                .take(total)
                .read_to_end(&mut all)
                .map_err(|source| IoError::Read {
                    path: self.path.clone(),
                    source,
                })?;
            if (got as u64) < total {
                return Err(self.truncated(got as u64));
            }
            self.layout = Layout::Columns(Some(all));
        }
        let size = self.elem.elem.size();
        for _ in 0..n {
            let r = self.next_row;
            if let Layout::Columns(Some(all)) = &self.layout {
                // Column-major: element (r, j) is at (j·nrows + r)·size.
                for j in 0..self.ncols {
                    let at = (j * self.nrows + r) * size;
                    self.row[j * size..(j + 1) * size].copy_from_slice(&all[at..at + size]);
                }
            } else {
                let got =
                    read_full(&mut self.reader, &mut self.row).map_err(|source| IoError::Read {
                        path: self.path.clone(),
                        source,
                    })?;
                if got < self.row.len() {
                    return Err(self.truncated(r as u64 * self.row.len() as u64 + got as u64));
                }
            }
            self.push_row(r, out)?;
            self.next_row += 1;
        }
        Ok(n)
    }

    /// Decodes the kept columns of row `r` (in `self.row`) into `out`. One monomorphic loop per
    /// element type: this is the hot path when reading image sets.
    fn push_row(&self, r: usize, out: &mut RowBuf) -> Result<()> {
        let (row, kept, be) = (&self.row[..], &self.kept[..], self.elem.big_endian);
        macro_rules! push {
            ($v:expr, $t:ty, $n:literal, $conv:expr) => {{
                $v.extend(kept.iter().map(|&j| {
                    let mut a = [0u8; $n];
                    a.copy_from_slice(&row[j * $n..j * $n + $n]);
                    $conv(if be {
                        <$t>::from_be_bytes(a)
                    } else {
                        <$t>::from_le_bytes(a)
                    })
                }))
            }};
        }
        let non_finite = match out {
            RowBuf::F32(v) if self.elem.elem.fits_f32() => {
                let start = v.len();
                match self.elem.elem {
                    Elem::U8 => v.extend(kept.iter().map(|&j| f32::from(row[j]))),
                    Elem::I8 => v.extend(kept.iter().map(|&j| f32::from(row[j] as i8))),
                    Elem::U16 => push!(v, u16, 2, f32::from),
                    Elem::I16 => push!(v, i16, 2, f32::from),
                    _ => push!(v, f32, 4, std::convert::identity),
                }
                v[start..]
                    .iter()
                    .position(|x| !x.is_finite())
                    .map(|k| (k, f64::from(v[start + k])))
            }
            RowBuf::F64(v) => {
                let start = v.len();
                match self.elem.elem {
                    Elem::U8 => v.extend(kept.iter().map(|&j| f64::from(row[j]))),
                    Elem::I8 => v.extend(kept.iter().map(|&j| f64::from(row[j] as i8))),
                    Elem::U16 => push!(v, u16, 2, f64::from),
                    Elem::I16 => push!(v, i16, 2, f64::from),
                    Elem::U32 => push!(v, u32, 4, f64::from),
                    Elem::I32 => push!(v, i32, 4, f64::from),
                    Elem::U64 => push!(v, u64, 8, |x| x as f64),
                    Elem::I64 => push!(v, i64, 8, |x| x as f64),
                    Elem::F32 => push!(v, f32, 4, f64::from),
                    Elem::F64 => push!(v, f64, 8, std::convert::identity),
                }
                v[start..]
                    .iter()
                    .position(|x| !x.is_finite())
                    .map(|k| (k, v[start + k]))
            }
            // Not reached (a stream is f32 only when every shard fits f32); widen, never round.
            RowBuf::F32(_) => {
                let size = self.elem.elem.size();
                let mut bad = None;
                for (k, &j) in kept.iter().enumerate() {
                    let x = self.elem.decode(&row[j * size..(j + 1) * size]);
                    if !x.is_finite() && bad.is_none() {
                        bad = Some((k, x));
                    }
                    out.push_f64(x);
                }
                bad
            }
        };
        match non_finite {
            Some((k, value)) => Err(IoError::NonFiniteElement {
                path: self.path.clone(),
                row: r,
                column: kept[k],
                value,
            }),
            None => Ok(()),
        }
    }
}
