//! Decoding of dense binary arrays, shared by NPY and IDX: in batches of whole rows when the
//! rows are stored in order and every column is kept (the common case), else row by row.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::error::{IoError, Result};
use crate::read::bounded::{GZIP_MAX_RATIO, check_memory, expect_end, read_growing};
use crate::read::columns::resolve_columns;
use crate::read::open::{Opened, read_full};
use crate::read::options::{Missing, ReadOptions};
use crate::read::rows::RowBuf;

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

/// Appends the elements of `bytes` (`N` bytes each) to `v`, decoded by `decode`, and returns the
/// index (from the first appended) of the first that `finite` rejects, if any. Works a block at
/// a time, checking each block while it is in cache; the check has no early exit within a block,
/// so that it vectorises.
#[inline(always)]
fn extend_checked<T: Copy, const N: usize>(
    v: &mut Vec<T>,
    bytes: &[u8],
    decode: impl Fn([u8; N]) -> T,
    finite: impl Fn(T) -> bool,
) -> Option<usize> {
    const BLOCK: usize = 1024;
    let start = v.len();
    for part in bytes.chunks(BLOCK * N) {
        let at = v.len();
        v.extend(
            part.chunks_exact(N)
                .map(|c| decode(c.try_into().expect("chunks of N bytes"))),
        );
        let block = &v[at..];
        if !block.iter().fold(true, |ok, &x| ok & finite(x)) {
            return block
                .iter()
                .position(|&x| !finite(x))
                .map(|k| at - start + k);
        }
    }
    None
}

/// Makes `v` at least `len` long, keeping what it holds. An empty `v` (a new chunk) is
/// replaced by zeroed memory from the allocator (for large chunks the system's fresh pages,
/// not a pass of writing zeros) of its capacity, so later chunks of that size find their room.
fn grow_storage<T: Copy + Default>(v: &mut Vec<T>, len: usize) -> std::io::Result<()> {
    if v.len() >= len {
        return Ok(());
    }
    if v.is_empty() && v.capacity() >= len {
        let capacity = v.capacity();
        *v = Vec::new();
        *v = vec![T::default(); capacity];
        return Ok(());
    }
    v.try_reserve(len - v.len())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::OutOfMemory, e.to_string()))?;
    v.resize(len, T::default());
    Ok(())
}

/// Accepts NaN (a missing value), rejects infinities.
fn not_infinite_f32(x: f32) -> bool {
    !x.is_infinite()
}

fn not_infinite_f64(x: f64) -> bool {
    !x.is_infinite()
}

/// Where the element bytes come from.
enum Layout {
    /// C order: rows read from the stream in order (in batches, or one at a time).
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
    /// The bytes of one row (row by row), grown as data arrives.
    row: Vec<u8>,
    row_bytes: usize,
    data_start: u64,
    /// The header's fields that say the size, for messages.
    header: String,
    compressed: bool,
    size_checked: bool,
    /// The stream was read to its end after the last row (and found to end there).
    ended: bool,
    layout: Layout,
    /// Rows per bulk read when the rows are stored in order (C order) and every column is kept
    /// in order: then whole batches are read with one call and decoded in one loop. 0 when
    /// rows must be read one at a time (column selection, Fortran order).
    batch_rows: usize,
    /// The bytes of one batch, reused from batch to batch, grown as data arrives.
    batch: Vec<u8>,
    /// Whether a NaN is a missing value or an error.
    missing: Missing,
    /// One past the last row to read: `nrows`, or the end of a part ([`BinaryRows::restrict`]).
    end: usize,
}

/// Bytes read at a time by the bulk path: large enough that the cost per call vanishes, small
/// enough that the batch is still in cache when it is decoded.
const BATCH_BYTES: usize = 1 << 20;

/// Rows of a plain file of native-endian `f64` rows (an NPY's, after its header), read by
/// position with `pread` from any thread, each into the caller's buffer, unchecked: the caller
/// finds a non-finite value by its sums and [`PositionalRows::non_finite`] names it, as
/// [`BinaryRows`] does.
#[derive(Debug)]
pub(crate) struct PositionalRows {
    path: PathBuf,
    file: std::fs::File,
    data_start: u64,
    /// The file's rows to read (a process's part, or all of them).
    pub(crate) rows: std::ops::Range<usize>,
    /// The rows the header promises (for a truncation's message).
    nrows: usize,
    ncols: usize,
    header: String,
}

impl PositionalRows {
    /// The error for a non-finite `value` at the file's `row` and `column`: [`BinaryRows`]'s.
    /// A NaN read as a missing value is an error here too: the moments cannot take it.
    pub(crate) fn non_finite(&self, row: usize, column: usize, value: f64) -> IoError {
        IoError::NonFiniteElement {
            path: self.path.clone(),
            row,
            column,
            value,
        }
    }

    /// Reads the file's rows from `row` on into `out` (whole rows, row-major).
    pub(crate) fn read(&self, row: usize, out: &mut [f64]) -> Result<()> {
        let d = self.ncols;
        let row_bytes = (d * size_of::<f64>()) as u64;
        let at = self.data_start + row as u64 * row_bytes;
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(out);
        if let Err(source) = read_exact_at(&self.file, bytes, at) {
            return Err(if source.kind() == std::io::ErrorKind::UnexpectedEof {
                // The file was cut after it was opened.
                let actual = self.file.metadata().map_or(at, |m| m.len());
                IoError::Truncated {
                    path: self.path.clone(),
                    header: self.header.clone(),
                    expected: self.data_start + self.nrows as u64 * row_bytes,
                    actual,
                    compressed: false,
                }
            } else {
                IoError::Read {
                    path: self.path.clone(),
                    source,
                }
            });
        }
        Ok(())
    }
}

#[cfg(unix)]
fn read_exact_at(file: &std::fs::File, bytes: &mut [u8], at: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, bytes, at)
}

/// Never called: [`BinaryRows::positional`] offers no positional rows off Unix.
#[cfg(not(unix))]
fn read_exact_at(_: &std::fs::File, _: &mut [u8], _: u64) -> std::io::Result<()> {
    Err(std::io::ErrorKind::Unsupported.into())
}

/// What a header says about the array.
pub(crate) struct ArrayHeader {
    pub elem: ElemType,
    pub nrows: usize,
    pub ncols: usize,
    pub fortran_order: bool,
    /// Bytes before the data.
    pub data_start: u64,
    /// The header's fields that give the size, as messages quote them, such as
    /// `shape (30, 4), descr '<f8'`.
    pub describe: String,
}

impl BinaryRows {
    /// Checks the size the header promises against what the file can hold before anything is
    /// allocated: exactly the file's size for a plain file, at most what its compressed bytes
    /// can expand to for gzip, and a row (and a Fortran-order array, read whole) within the
    /// machine's memory. Then resolves the selection and prepares to stream rows.
    pub(crate) fn new(
        path: &Path,
        opened: Opened,
        header: ArrayHeader,
        options: &ReadOptions,
    ) -> Result<Self> {
        let Opened {
            reader,
            file_len,
            compressed,
            max_len,
            ..
        } = opened;
        let size = header.elem.elem.size() as u64;
        let describe = &header.describe;
        let too_big = || IoError::Format {
            path: path.to_owned(),
            detail: format!("the header ({describe}) describes an array too large to address"),
        };
        let row_bytes = (header.ncols as u64)
            .checked_mul(size)
            .ok_or_else(too_big)?;
        let data_bytes = row_bytes
            .checked_mul(header.nrows as u64)
            .ok_or_else(too_big)?;
        let total = data_bytes
            .checked_add(header.data_start)
            .ok_or_else(too_big)?;
        match (file_len, max_len) {
            (Some(len), _) if len < total => {
                return Err(IoError::Truncated {
                    path: path.to_owned(),
                    header: describe.clone(),
                    expected: total,
                    actual: len,
                    compressed: false,
                });
            }
            (Some(len), _) if len > total => {
                return Err(IoError::Format {
                    path: path.to_owned(),
                    detail: format!(
                        "{} byte(s) after the end of the array that its header ({describe}) \
                         describes, which ends at byte {total}",
                        len - total
                    ),
                });
            }
            (None, Some(max)) if total > max => {
                return Err(IoError::Format {
                    path: path.to_owned(),
                    detail: format!(
                        "its header ({describe}) promises {total} bytes (decompressed), more \
                         than its {} compressed bytes can hold (at most {max})",
                        max / GZIP_MAX_RATIO
                    ),
                });
            }
            _ => {}
        }
        // Before anything sized by the width: with no rows the file holds no data to bound it
        // (a 75-byte gzip claimed 0 × 403,000,000 and had the column list take 3.2 GB; found by
        // the gzip fuzz target).
        if header.nrows == 0 {
            return Err(IoError::NoData {
                path: path.to_owned(),
                detail: " (the array has 0 rows)",
            });
        }
        // One row's bytes and the list of kept columns are held whatever the reading; a
        // Fortran-order array is held whole.
        let fortran = header.fortran_order && header.ncols > 1;
        let held = if fortran { data_bytes } else { row_bytes };
        check_memory(
            path,
            held.saturating_add((header.ncols as u64).saturating_mul(8)),
            || {
                if fortran {
                    format!("the Fortran-order array ({describe}), read whole,")
                } else {
                    format!("a row of {} values ({describe})", header.ncols)
                }
            },
        )?;
        let row_bytes = usize::try_from(row_bytes).map_err(|_| too_big())?;
        let kept = resolve_columns(path, header.ncols, None, options)?;
        let layout = if fortran {
            Layout::Columns(None)
        } else {
            Layout::Rows
        };
        let in_order = kept.iter().copied().eq(0..header.ncols);
        let batch_rows = match layout {
            Layout::Rows if in_order => (BATCH_BYTES / row_bytes.max(1)).max(1),
            _ => 0,
        };
        Ok(BinaryRows {
            path: path.to_owned(),
            reader,
            elem: header.elem,
            nrows: header.nrows,
            ncols: header.ncols,
            kept,
            next_row: 0,
            row: Vec::new(),
            row_bytes,
            data_start: header.data_start,
            header: header.describe,
            compressed,
            size_checked: file_len.is_some(),
            ended: false,
            layout,
            batch_rows,
            batch: Vec::new(),
            missing: options.missing,
            end: header.nrows,
        })
    }

    /// Whether a range of rows can be read without reading the rows before it: rows stored in
    /// order (C order) in an uncompressed file.
    pub(crate) fn splittable(&self) -> bool {
        !self.compressed && matches!(self.layout, Layout::Rows)
    }

    /// Reads only the rows `rows` (a process's part of the file), seeking to the first: rows
    /// keep their numbers in the file in messages. Only for [`BinaryRows::splittable`] files.
    pub(crate) fn restrict(&mut self, rows: std::ops::Range<usize>) -> Result<()> {
        use std::io::{Seek, SeekFrom};
        assert!(self.splittable() && rows.start <= rows.end && rows.end <= self.nrows);
        let read_err = |source| IoError::Read {
            path: self.path.clone(),
            source,
        };
        let mut file = std::fs::File::open(&self.path).map_err(|source| IoError::Open {
            path: self.path.clone(),
            source,
        })?;
        let at = self.data_start + rows.start as u64 * self.row_bytes as u64;
        file.seek(SeekFrom::Start(at)).map_err(read_err)?;
        self.reader = Box::new(std::io::BufReader::with_capacity(1 << 16, file));
        self.next_row = rows.start;
        self.end = rows.end;
        Ok(())
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
        IoError::Truncated {
            path: self.path.clone(),
            header: self.header.clone(),
            expected: self.data_start + self.nrows as u64 * self.row_bytes as u64,
            actual: self.data_start + data_bytes_read,
            compressed: self.compressed,
        }
    }

    /// A failed read, with the first row not yet read whole where rows are read in order (a
    /// gzip stream cut mid-deflate fails so, instead of ending short).
    fn read_error(&self, source: std::io::Error) -> IoError {
        let source = if matches!(self.layout, Layout::Rows)
            && source.kind() != std::io::ErrorKind::OutOfMemory
        {
            std::io::Error::new(
                source.kind(),
                format!(
                    "{source}, at row {} or a later one (counting from 0, as numpy does; the \
                     rows before it were read whole)",
                    self.next_row
                ),
            )
        } else {
            source
        };
        IoError::Read {
            path: self.path.clone(),
            source,
        }
    }

    /// After the last row: the stream must end there. For gzip this reads the last member's
    /// trailer, whose CRC-32 and length the decoder verifies.
    fn check_end(&mut self) -> Result<()> {
        if !self.ended && self.next_row == self.nrows {
            let end = self.data_start + self.nrows as u64 * self.row_bytes as u64;
            expect_end(&self.path, &mut self.reader, end)?;
            self.ended = true;
        }
        Ok(())
    }

    /// Writes up to `max_rows` rows (kept columns only) into `out` from its element `at` on,
    /// and returns how many; `out` keeps whatever storage it had past them (a recycled chunk's
    /// values, stale). Rows whose stored bytes are the chunk's values (native-endian `f64`
    /// into an f64 chunk or `f32` into an f32 one, every column in order) are read straight
    /// into that storage: no decoding, no copy, and no zeroing where a recycled chunk already
    /// has the room. Other rows are decoded after `out` is cut at `at`.
    pub(crate) fn read_rows_at(
        &mut self,
        max_rows: usize,
        out: &mut RowBuf,
        at: usize,
    ) -> Result<usize> {
        let n = max_rows.min(self.end - self.next_row);
        if n > 0 {
            // One monomorphic check per type and missing-value rule, so that it vectorises.
            let nan_ok = self.missing == Missing::AsNan;
            match out {
                RowBuf::F64(v) if self.reads_in_place(Elem::F64) => {
                    let (id, inf) = (std::convert::identity, not_infinite_f64);
                    if nan_ok {
                        self.read_in_place(n, v, at, inf, id)?;
                    } else {
                        self.read_in_place(n, v, at, f64::is_finite, id)?;
                    }
                }
                RowBuf::F32(v) if self.reads_in_place(Elem::F32) => {
                    if nan_ok {
                        self.read_in_place(n, v, at, not_infinite_f32, f64::from)?;
                    } else {
                        self.read_in_place(n, v, at, f32::is_finite, f64::from)?;
                    }
                }
                _ => {
                    out.truncate(at);
                    self.read_some(n, out)?;
                }
            }
        }
        self.check_end()?;
        Ok(n)
    }

    /// Whether every value is stored as a byte (`u8`) and whole rows are read in order (every
    /// column kept, C order): then [`BinaryRows::read_bytes_at`] reads them as stored.
    pub(crate) fn stores_bytes(&self) -> bool {
        self.batch_rows > 0 && self.elem.elem == Elem::U8
    }

    /// [`BinaryRows::read_rows_at`] for a file that [stores bytes](BinaryRows::stores_bytes):
    /// up to `max_rows` rows read as stored into `out` from its byte `at` on (its storage past
    /// `at` kept, stale), no decoding and no check (bytes are always finite); returns how many.
    pub(crate) fn read_bytes_at(
        &mut self,
        max_rows: usize,
        out: &mut Vec<u8>,
        at: usize,
    ) -> Result<usize> {
        assert!(
            self.stores_bytes(),
            "read_bytes_at on a file of other values"
        );
        let n = max_rows.min(self.end - self.next_row);
        if n > 0 {
            self.read_in_place(n, out, at, |_| true, f64::from)?;
        }
        self.check_end()?;
        Ok(n)
    }

    /// The rows still to read, to be read by position from any thread ([`PositionalRows`]):
    /// for native-endian `f64` rows stored in order, every column kept, in a plain
    /// (uncompressed) file; `None` otherwise.
    pub(crate) fn positional(&self) -> Result<Option<PositionalRows>> {
        if !cfg!(unix) || !self.reads_in_place(Elem::F64) || !self.splittable() {
            return Ok(None);
        }
        let file = std::fs::File::open(&self.path).map_err(|source| IoError::Open {
            path: self.path.clone(),
            source,
        })?;
        Ok(Some(PositionalRows {
            path: self.path.clone(),
            file,
            data_start: self.data_start,
            rows: self.next_row..self.end,
            nrows: self.nrows,
            ncols: self.ncols,
            header: self.header.clone(),
        }))
    }

    /// Whether rows go straight into a chunk of `chunk` elements: whole rows in order (the
    /// batched path) of that very type in this machine's byte order.
    fn reads_in_place(&self, chunk: Elem) -> bool {
        self.batch_rows > 0
            && self.elem.elem == chunk
            && self.elem.big_endian == cfg!(target_endian = "big")
    }

    /// Reads the next `n` rows into `v[at..at + n·D]`, a batch at a time: each batch is checked
    /// for non-finite values right after it arrives, while it is in cache. `v` grows only where
    /// it is too short, and only by the batch about to be read: as with decoding, memory follows
    /// the bytes that arrive, not a row count a damaged header may overstate.
    fn read_in_place<T: bytemuck::Pod + Default>(
        &mut self,
        n: usize,
        v: &mut Vec<T>,
        at: usize,
        finite: impl Fn(T) -> bool,
        widen: impl Fn(T) -> f64,
    ) -> Result<()> {
        let (d, row_bytes) = (self.ncols, self.row_bytes);
        let end = at + n * d;
        let mut start = at;
        while start < end {
            let len = (self.batch_rows * d).min(end - start);
            grow_storage(v, start + len).map_err(|e| self.read_error(e))?;
            let values = &mut v[start..start + len];
            let got = read_full(&mut *self.reader, bytemuck::cast_slice_mut(values))
                .map_err(|e| self.read_error(e))?;
            let read_before = self.next_row as u64 * row_bytes as u64;
            // The whole rows before a truncation are checked first, as row by row: a
            // non-finite value in them is reported before the truncation.
            let whole = got / row_bytes.max(1);
            let rows = &values[..whole * d];
            if !rows.iter().fold(true, |ok, &x| ok & finite(x)) {
                let k = rows
                    .iter()
                    .position(|&x| !finite(x))
                    .expect("a value failed");
                return Err(IoError::NonFiniteElement {
                    path: self.path.clone(),
                    row: self.next_row + k / d,
                    column: k % d,
                    value: widen(rows[k]),
                });
            }
            self.next_row += whole;
            if got < len * size_of::<T>() {
                return Err(self.truncated(read_before + got as u64));
            }
            start += len;
        }
        Ok(())
    }

    fn read_some(&mut self, n: usize, out: &mut RowBuf) -> Result<()> {
        if self.batch_rows > 0 {
            return self.read_batches(n, out);
        }
        if let Layout::Columns(None) = self.layout {
            let total = self.row_bytes * self.nrows;
            let mut all = Vec::new();
            let got =
                read_growing(&mut self.reader, &mut all, total).map_err(|e| self.read_error(e))?;
            if got < total {
                return Err(self.truncated(got as u64));
            }
            self.layout = Layout::Columns(Some(all));
        }
        let size = self.elem.elem.size();
        for _ in 0..n {
            let r = self.next_row;
            if let Layout::Columns(Some(all)) = &self.layout {
                if self.row.len() < self.row_bytes {
                    self.row.resize(self.row_bytes, 0);
                }
                // Column-major: element (r, j) is at (j·nrows + r)·size.
                for j in 0..self.ncols {
                    let at = (j * self.nrows + r) * size;
                    self.row[j * size..(j + 1) * size].copy_from_slice(&all[at..at + size]);
                }
            } else {
                let got = read_growing(&mut self.reader, &mut self.row, self.row_bytes)
                    .map_err(|e| self.read_error(e))?;
                if got < self.row_bytes {
                    return Err(self.truncated(r as u64 * self.row_bytes as u64 + got as u64));
                }
            }
            self.push_row(r, out)?;
            self.next_row += 1;
        }
        Ok(())
    }

    /// Appends the next `n` rows to `out` in batches of `batch_rows` rows (every column kept,
    /// rows stored in order): one read per batch, one decoding loop over the whole batch.
    fn read_batches(&mut self, n: usize, out: &mut RowBuf) -> Result<()> {
        let row_bytes = self.row_bytes;
        let end = self.next_row + n;
        while self.next_row < end {
            let len = self.batch_rows.min(end - self.next_row) * row_bytes;
            let got = read_growing(&mut self.reader, &mut self.batch, len)
                .map_err(|e| self.read_error(e))?;
            let read_before = self.next_row as u64 * row_bytes as u64;
            // The whole rows before a truncation are decoded first, as row by row: a non-finite
            // value in them is reported before the truncation.
            let whole = got / row_bytes.max(1);
            self.push_batch(whole, out)?;
            self.next_row += whole;
            if got < len {
                return Err(self.truncated(read_before + got as u64));
            }
        }
        Ok(())
    }

    /// Decodes the first `rows` rows of `self.batch` (every column, rows from `self.next_row`)
    /// into `out`, floats checked for finiteness as they are decoded. One monomorphic loop per
    /// element type and byte order over the whole batch, so that it vectorises.
    fn push_batch(&self, rows: usize, out: &mut RowBuf) -> Result<()> {
        let bytes = &self.batch[..rows * self.row_bytes];
        let (elem, be) = (self.elem.elem, self.elem.big_endian);
        macro_rules! push {
            ($v:expr, $t:ty, $n:literal, $conv:expr) => {{
                let items = bytes.chunks_exact($n);
                if be {
                    $v.extend(items.map(|c| $conv(<$t>::from_be_bytes(c.try_into().unwrap()))))
                } else {
                    $v.extend(items.map(|c| $conv(<$t>::from_le_bytes(c.try_into().unwrap()))))
                }
            }};
        }
        // Integers are always finite.
        macro_rules! ints {
            ($e:expr) => {{
                $e;
                None
            }};
        }
        // Floats are checked as they are decoded; a bad one is reported with its value.
        macro_rules! floats {
            ($v:expr, $finite:expr, $be:expr, $le:expr) => {{
                let start = $v.len();
                let k = if be {
                    extend_checked($v, bytes, $be, $finite)
                } else {
                    extend_checked($v, bytes, $le, $finite)
                };
                k.map(|k| (k, f64::from($v[start + k])))
            }};
        }
        if !elem.fits_f32() {
            // Not reached (a stream is f32 only when every shard fits f32); widen, never round.
            out.widen();
        }
        let nan_ok = self.missing == Missing::AsNan;
        let non_finite = match out {
            RowBuf::F32(v) => match elem {
                Elem::U8 => ints!(v.extend(bytes.iter().map(|&b| f32::from(b)))),
                Elem::I8 => ints!(v.extend(bytes.iter().map(|&b| f32::from(b as i8)))),
                Elem::U16 => ints!(push!(v, u16, 2, f32::from)),
                Elem::I16 => ints!(push!(v, i16, 2, f32::from)),
                _ if nan_ok => floats!(v, not_infinite_f32, f32::from_be_bytes, f32::from_le_bytes),
                _ => floats!(v, f32::is_finite, f32::from_be_bytes, f32::from_le_bytes),
            },
            RowBuf::F64(v) => match elem {
                Elem::U8 => ints!(v.extend(bytes.iter().map(|&b| f64::from(b)))),
                Elem::I8 => ints!(v.extend(bytes.iter().map(|&b| f64::from(b as i8)))),
                Elem::U16 => ints!(push!(v, u16, 2, f64::from)),
                Elem::I16 => ints!(push!(v, i16, 2, f64::from)),
                Elem::U32 => ints!(push!(v, u32, 4, f64::from)),
                Elem::I32 => ints!(push!(v, i32, 4, f64::from)),
                Elem::U64 => ints!(push!(v, u64, 8, |x| x as f64)),
                Elem::I64 => ints!(push!(v, i64, 8, |x| x as f64)),
                Elem::F32 if nan_ok => floats!(
                    v,
                    not_infinite_f64,
                    |a| f64::from(f32::from_be_bytes(a)),
                    |a| f64::from(f32::from_le_bytes(a))
                ),
                Elem::F32 => floats!(
                    v,
                    f64::is_finite,
                    |a| f64::from(f32::from_be_bytes(a)),
                    |a| f64::from(f32::from_le_bytes(a))
                ),
                Elem::F64 if nan_ok => {
                    floats!(v, not_infinite_f64, f64::from_be_bytes, f64::from_le_bytes)
                }
                Elem::F64 => floats!(v, f64::is_finite, f64::from_be_bytes, f64::from_le_bytes),
            },
        };
        match non_finite {
            // Every column is kept, in order: position k is row k / ncols, column k % ncols.
            Some((k, value)) => Err(IoError::NonFiniteElement {
                path: self.path.clone(),
                row: self.next_row + k / self.ncols,
                column: k % self.ncols,
                value,
            }),
            None => Ok(()),
        }
    }

    /// Decodes the kept columns of row `r` (in `self.row`) into `out`. One monomorphic loop per
    /// element type: this is the hot path when reading image sets.
    fn push_row(&self, r: usize, out: &mut RowBuf) -> Result<()> {
        let (row, kept, be) = (
            &self.row[..self.row_bytes],
            &self.kept[..],
            self.elem.big_endian,
        );
        let nan_ok = self.missing == Missing::AsNan;
        let bad = |x: f64| !(x.is_finite() || nan_ok && x.is_nan());
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
                    .position(|&x| bad(f64::from(x)))
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
                    .position(|&x| bad(x))
                    .map(|k| (k, v[start + k]))
            }
            // Not reached (a stream is f32 only when every shard fits f32); widen, never round.
            RowBuf::F32(_) => {
                let size = self.elem.elem.size();
                let is_bad = bad;
                let mut bad = None;
                for (k, &j) in kept.iter().enumerate() {
                    let x = self.elem.decode(&row[j * size..(j + 1) * size]);
                    if is_bad(x) && bad.is_none() {
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

#[cfg(test)]
mod tests {
    use std::path::Path;

    use tempfile::TempDir;

    use super::*;
    use crate::format::{idx, npy};
    use crate::read::open::{Format, open};
    use crate::test_util::*;
    use crate::{ColumnSelector, ReadOptions};

    /// `values` as the raw elements of NPY type `descr` (`<` little-, `>` big-endian, `|` bytes).
    fn encode(descr: &str, values: &[f64]) -> Vec<u8> {
        let be = descr.starts_with('>');
        macro_rules! enc {
            ($t:ty) => {
                values
                    .iter()
                    .flat_map(|&x| {
                        let x = x as $t;
                        if be {
                            x.to_be_bytes().to_vec()
                        } else {
                            x.to_le_bytes().to_vec()
                        }
                    })
                    .collect()
            };
        }
        match &descr[1..] {
            "u1" => enc!(u8),
            "i1" => enc!(i8),
            "u2" => enc!(u16),
            "i2" => enc!(i16),
            "u4" => enc!(u32),
            "i4" => enc!(i32),
            "u8" => enc!(u64),
            "i8" => enc!(i64),
            "f4" => enc!(f32),
            "f8" => enc!(f64),
            other => panic!("no such type {other}"),
        }
    }

    /// Values that every type holds exactly: small and, for signed and float types, negative.
    fn values(descr: &str, n: usize) -> Vec<f64> {
        let signed = !descr.contains('u');
        (0..n)
            .map(|k| {
                let x = ((k * 37 + 11) % 127) as f64;
                match &descr[1..] {
                    "f4" => f64::from(((x - 60.0) * 0.375 + k as f64 * 1e-3) as f32),
                    "f8" => (x - 60.0) * 0.375 + k as f64 * 1e-3,
                    _ if signed => x - 60.0,
                    _ => x,
                }
            })
            .collect()
    }

    impl BinaryRows {
        /// Appends up to `max_rows` rows to `out`, as a chunk reader does with a new chunk.
        fn read_rows(&mut self, max_rows: usize, out: &mut RowBuf) -> Result<usize> {
            let at = match out {
                RowBuf::F32(v) => v.len(),
                RowBuf::F64(v) => v.len(),
            };
            self.read_rows_at(max_rows, out, at)
        }
    }

    /// Opens `path` as `principal fit` does; `batch_rows` overrides the batch size (0: row by
    /// row).
    fn rows_of(path: &Path, options: &ReadOptions, batch_rows: Option<usize>) -> BinaryRows {
        let opened = open(path).unwrap();
        let mut rows = match opened.format {
            Format::Npy => npy::open_rows(path, opened, options),
            Format::Idx => idx::open_rows(path, opened, options),
            other => panic!("{other:?} is not binary"),
        }
        .unwrap();
        if let Some(b) = batch_rows {
            rows.batch_rows = b;
        }
        rows
    }

    /// Every value read in chunks of `chunk` rows into an f32 (`f32`) or f64 buffer, as f64,
    /// or the error message.
    fn drain(
        mut rows: BinaryRows,
        chunk: usize,
        f32: bool,
    ) -> std::result::Result<Vec<f64>, String> {
        let mut out = if f32 {
            RowBuf::F32(Vec::new())
        } else {
            RowBuf::F64(Vec::new())
        };
        let mut total = 0;
        loop {
            let n = rows.read_rows(chunk, &mut out).map_err(|e| e.to_string())?;
            assert!(n <= chunk);
            if n == 0 {
                break;
            }
            total += n;
        }
        assert_eq!(total, rows.nrows());
        Ok(match out {
            RowBuf::F32(v) => {
                assert!(f32, "stays f32");
                v.into_iter().map(f64::from).collect()
            }
            RowBuf::F64(v) => v,
        })
    }

    const TYPES: [&str; 13] = [
        "<f4", ">f4", "<f8", ">f8", "|u1", "|i1", "<i2", ">i2", "<u2", ">u4", "<i4", ">i8", "<u8",
    ];

    #[test]
    fn batches_equal_rows_one_at_a_time_for_every_type_and_byte_order() {
        let dir = TempDir::new().unwrap();
        let (n, d) = (53, 7);
        for descr in TYPES {
            let data = values(descr, n * d);
            let bytes = npy(descr, false, &[n, d], &encode(descr, &data));
            for (name, bytes) in [("a.npy", bytes.clone()), ("a.npy.gz", gz(&bytes))] {
                let path = write_file(dir.path(), name, &bytes);
                let options = ReadOptions::default();
                let whole = rows_of(&path, &options, None);
                assert!(whole.batch_rows > n, "{descr}: read in one batch");
                let fits = whole.is_f32();
                // f64 buffers too: an f32 shard in a stream that another shard makes f64.
                for f32 in [fits, false] {
                    let reference = drain(rows_of(&path, &options, Some(0)), 5, f32).unwrap();
                    assert_eq!(reference, data, "{descr} {name}");
                    // Chunks that end inside a batch, batches that end inside a chunk.
                    for (batch, chunk) in [(3, 5), (5, 3), (4, 4), (1, 7), (100, 10), (7, 1000)] {
                        let got = drain(rows_of(&path, &options, Some(batch)), chunk, f32);
                        assert_eq!(
                            got.unwrap(),
                            reference,
                            "{descr} {name} batches of {batch}, chunks of {chunk}"
                        );
                    }
                    assert_eq!(drain(whole_again(&path), 1000, f32).unwrap(), reference);
                }
            }
        }
        // IDX (big-endian), as MNIST's images: u8, i16, f32.
        for (code, descr) in [(0x08, ">u1"), (0x0B, ">i2"), (0x0D, ">f4"), (0x0E, ">f8")] {
            let data = values(descr, n * d);
            let bytes = idx(code, &[n as u32, d as u32], &encode(descr, &data));
            let path = write_file(dir.path(), "b-idx.gz", &gz(&bytes));
            let options = ReadOptions::default();
            let f32 = rows_of(&path, &options, None).is_f32();
            for (batch, chunk) in [(0, 6), (3, 5), (1000, 6), (1000, 1000)] {
                let got = drain(rows_of(&path, &options, Some(batch)), chunk, f32).unwrap();
                assert_eq!(got, data, "IDX {descr} batches of {batch}");
            }
        }
    }

    fn whole_again(path: &Path) -> BinaryRows {
        rows_of(path, &ReadOptions::default(), None)
    }

    /// An NPY file whose header is `extra` bytes longer than numpy makes it, so that the data
    /// starts off any alignment.
    fn npy_shifted(
        descr: &str,
        fortran: bool,
        shape: &[usize],
        data: &[u8],
        extra: usize,
    ) -> Vec<u8> {
        let mut bytes = npy(descr, fortran, shape, data);
        let len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
        let newline = 10 + len - 1;
        bytes.splice(newline..newline, std::iter::repeat_n(b' ', extra));
        bytes[8..10].copy_from_slice(&((len + extra) as u16).to_le_bytes());
        bytes
    }

    /// A chunk recycled with stale values: longer than any read, so that a read in place keeps
    /// its length.
    fn stale_chunk(f32: bool, len: usize) -> RowBuf {
        if f32 {
            RowBuf::F32(vec![f32::NAN; len])
        } else {
            RowBuf::F64(vec![-1e300; len])
        }
    }

    /// Native-endian f64 (and f32) rows in order go straight into a recycled chunk's storage
    /// (its length kept, nothing decoded); every other layout is decoded. Either way the rows
    /// are the bits of the row-by-row decoding: files whose data starts off any alignment,
    /// both byte orders, f32 into f32 and f64 chunks, bytes, Fortran order, gzip, and reads
    /// that start inside a chunk (after another shard's rows).
    #[test]
    fn a_recycled_chunk_is_read_in_place_with_the_decoded_bits() {
        let dir = TempDir::new().unwrap();
        let (n, d) = (61, 5);
        let native = if cfg!(target_endian = "little") {
            '<'
        } else {
            '>'
        };
        for descr in ["<f8", ">f8", "<f4", ">f4", "|u1"] {
            let mut data = values(descr, n * d);
            // A NaN as a missing value: in place, it is checked like any other value.
            data[17 * d + 2] = f64::NAN;
            let options = ReadOptions {
                missing: Missing::AsNan,
                ..Default::default()
            };
            for (fortran, extra, gzip) in [
                (false, 0, false),
                (false, 3, false),
                (false, 5, true),
                (true, 1, false),
            ] {
                let stored = if fortran {
                    let by_columns: Vec<f64> = (0..d)
                        .flat_map(|j| (0..n).map(move |i| (i, j)))
                        .map(|(i, j)| data[i * d + j])
                        .collect();
                    encode(descr, &by_columns)
                } else {
                    encode(descr, &data)
                };
                let bytes = npy_shifted(descr, fortran, &[n, d], &stored, extra);
                let bytes = if gzip { gz(&bytes) } else { bytes };
                let path = write_file(dir.path(), if gzip { "r.npy.gz" } else { "r.npy" }, &bytes);
                let fits = rows_of(&path, &options, None).is_f32();
                for f32 in [fits, false] {
                    let in_place = !fortran
                        && descr.starts_with(native)
                        && (descr.ends_with("f8") && !f32 || descr.ends_with("f4") && f32);
                    let what = format!(
                        "{descr} fortran {fortran}, offset +{extra}, gzip {gzip}, f32 chunk {f32}"
                    );
                    let reference = drain(rows_of(&path, &options, Some(0)), n, f32).unwrap();
                    let bits: Vec<u64> = reference.iter().map(|x| x.to_bits()).collect();
                    for (batch, chunk, at) in [(1000, 7, 0), (3, 10, 0), (4, 61, 0), (2, 9, 13)] {
                        let storage = at + chunk * d + 11;
                        // Fortran order is never batched (its rows are not contiguous).
                        let mut rows = rows_of(&path, &options, (!fortran).then_some(batch));
                        let mut out = stale_chunk(f32, storage);
                        let address = |out: &RowBuf| match out {
                            RowBuf::F32(v) => v.as_ptr() as usize,
                            RowBuf::F64(v) => v.as_ptr() as usize,
                        };
                        let first = address(&out);
                        let mut got = Vec::new();
                        loop {
                            let k = rows.read_rows_at(chunk, &mut out, at).unwrap();
                            if k == 0 {
                                break;
                            }
                            let (len, values): (usize, Vec<f64>) = match &out {
                                RowBuf::F32(v) => (
                                    v.len(),
                                    v[at..at + k * d].iter().map(|&x| f64::from(x)).collect(),
                                ),
                                RowBuf::F64(v) => (v.len(), v[at..at + k * d].to_vec()),
                            };
                            got.extend(values.iter().map(|x| x.to_bits()));
                            if in_place {
                                assert_eq!(len, storage, "{what}: the chunk keeps its storage");
                                assert_eq!(address(&out), first, "{what}: not reallocated");
                            } else {
                                assert_eq!(len, at + k * d, "{what}: decoded after the cut");
                            }
                        }
                        assert_eq!(
                            got, bits,
                            "{what}: batches of {batch}, chunks of {chunk} from {at}"
                        );
                    }
                }
            }
        }
    }

    /// A new, empty chunk read in place is sized from its capacity (so that the next chunks
    /// fit) and grows where the rows outnumber it, as a whole file read at once does.
    #[test]
    fn a_new_chunk_read_in_place_grows_to_its_rows() {
        let dir = TempDir::new().unwrap();
        let (n, d) = (300, 3);
        let data = values("<f8", n * d);
        let path = write_file(
            dir.path(),
            "g.npy",
            &npy("<f8", false, &[n, d], &encode("<f8", &data)),
        );
        for capacity in [0, 10 * d, n * d, 2 * n * d] {
            let mut rows = rows_of(&path, &ReadOptions::default(), Some(7));
            let mut out = RowBuf::F64(Vec::with_capacity(capacity));
            assert_eq!(rows.read_rows_at(n, &mut out, 0).unwrap(), n);
            let RowBuf::F64(v) = out else { panic!() };
            assert_eq!(v.len(), capacity.max(n * d), "capacity {capacity}");
            assert_eq!(v[..n * d], data[..], "capacity {capacity}");
        }
    }

    /// A compressed file whose header promises more rows than its data holds: a read in place
    /// grows the chunk by the batches that arrive, as decoding does, not to the promised rows
    /// before the truncation is found.
    #[test]
    fn a_read_in_place_grows_with_the_rows_that_arrive_not_the_header() {
        let dir = TempDir::new().unwrap();
        let (promised, present, d) = (1000, 2, 10);
        let data = values("<f8", present * d);
        let bytes = gz(&npy("<f8", false, &[promised, d], &encode("<f8", &data)));
        let path = write_file(dir.path(), "short.npy.gz", &bytes);
        let mut rows = rows_of(&path, &ReadOptions::default(), Some(7));
        let mut out = RowBuf::F64(Vec::new());
        let err = rows.read_rows_at(usize::MAX, &mut out, 0).unwrap_err();
        assert!(err.to_string().contains("short.npy.gz"), "{err}");
        let RowBuf::F64(v) = out else { panic!() };
        assert_eq!(v[..present * d], data[..]);
        assert!(v.capacity() <= 4 * 7 * d, "grew to {} values", v.capacity());
    }

    #[test]
    fn only_whole_rows_in_order_are_read_in_batches() {
        let dir = TempDir::new().unwrap();
        let c = write_file(
            dir.path(),
            "c.npy",
            &npy("<f8", false, &[4, 3], &encode("<f8", &[0.0; 12])),
        );
        let f = write_file(
            dir.path(),
            "f.npy",
            &npy("<f8", true, &[4, 3], &encode("<f8", &[0.0; 12])),
        );
        let select = |sel: Vec<usize>| ReadOptions {
            columns: Some(sel.into_iter().map(ColumnSelector::Index).collect()),
            ..Default::default()
        };
        assert!(rows_of(&c, &ReadOptions::default(), None).batch_rows > 0);
        assert!(rows_of(&c, &select(vec![0, 1, 2]), None).batch_rows > 0);
        assert_eq!(rows_of(&c, &select(vec![0, 2]), None).batch_rows, 0);
        assert_eq!(rows_of(&c, &select(vec![1, 0, 2]), None).batch_rows, 0);
        assert_eq!(rows_of(&f, &ReadOptions::default(), None).batch_rows, 0);
        // A batch holds whole rows, at least one.
        let wide = write_file(
            dir.path(),
            "w.npy",
            &npy("|u1", false, &[2, 3 << 20], &vec![1; 6 << 20]),
        );
        assert_eq!(rows_of(&wide, &ReadOptions::default(), None).batch_rows, 1);
    }

    #[test]
    fn truncation_inside_a_batch_is_reported_as_row_by_row() {
        let dir = TempDir::new().unwrap();
        let (n, d) = (40, 6);
        for descr in ["<f4", ">f8", "|u1", ">i2"] {
            let size = encode(descr, &[0.0]).len();
            let full = npy(descr, false, &[n, d], &encode(descr, &values(descr, n * d)));
            let header = full.len() - n * d * size;
            // Cut in row 17, 5 bytes into it.
            let cut = header + 17 * d * size + 5;
            let path = write_file(dir.path(), "t.npy.gz", &gz(&full[..cut]));
            let expected = format!(
                "{} is truncated: its header (shape ({n}, {d}), descr {descr:?}) promises {} bytes \
                 (decompressed) but there are only {cut}",
                path.display(),
                full.len()
            );
            let options = ReadOptions::default();
            let f32 = rows_of(&path, &options, None).is_f32();
            for (batch, chunk) in [(0, 4), (3, 5), (10, 4), (1000, 7), (1000, 1000)] {
                let e = drain(rows_of(&path, &options, Some(batch)), chunk, f32).unwrap_err();
                assert_eq!(e, expected, "{descr} batches of {batch}, chunks of {chunk}");
            }
            // The complete rows before the cut were handed out.
            let mut rows = rows_of(&path, &options, None);
            let mut out = RowBuf::F64(Vec::new());
            assert_eq!(rows.read_rows(10, &mut out).unwrap(), 10);
            assert!(rows.read_rows(1000, &mut out).is_err());
            let RowBuf::F64(v) = out else { panic!() };
            assert_eq!(v, values(descr, n * d)[..17 * d]);
        }
    }

    #[test]
    fn non_finite_values_name_their_row_and_column_in_every_batch() {
        let dir = TempDir::new().unwrap();
        let (n, d) = (300, 7);
        for descr in ["<f4", ">f4", "<f8", ">f8"] {
            // In the first block of a batch and far into it (blocks are 1024 elements).
            for (r, c, bad) in [(0, 0, f64::NAN), (2, 6, f64::INFINITY), (250, 3, f64::NAN)] {
                let mut data = values(descr, n * d);
                data[r * d + c] = bad;
                let path = write_file(
                    dir.path(),
                    "n.npy",
                    &npy(descr, false, &[n, d], &encode(descr, &data)),
                );
                let expected = format!(
                    "{}: non-finite value {bad} at row {r}, column {c} (counting from 0, as numpy \
                     does)",
                    path.display()
                );
                let options = ReadOptions::default();
                for f32 in [descr.ends_with("f4"), false] {
                    for (batch, chunk) in [(0, 9), (4, 9), (1000, 9), (1000, 1000), (251, 1000)] {
                        let e = drain(rows_of(&path, &options, Some(batch)), chunk, f32);
                        assert_eq!(
                            e.unwrap_err(),
                            expected,
                            "{descr} batches of {batch}, chunks of {chunk}"
                        );
                    }
                }
            }
            // Before a truncation in the same batch: the value is reported, as row by row.
            let mut data = values(descr, n * d);
            data[5 * d + 1] = f64::NAN;
            let full = npy(descr, false, &[n, d], &encode(descr, &data));
            let path = write_file(dir.path(), "nt.npy.gz", &gz(&full[..full.len() - 100]));
            for batch in [0, 1000] {
                let e = drain(
                    rows_of(&path, &ReadOptions::default(), Some(batch)),
                    1000,
                    false,
                );
                assert!(
                    e.as_ref().unwrap_err().contains("at row 5, column 1"),
                    "{descr}: {e:?}"
                );
            }
        }
    }
}
