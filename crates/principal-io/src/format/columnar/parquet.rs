//! Parquet files, read from their footer: the selection is resolved against the schema and only
//! the selected columns are decoded.
//!
//! The `parquet` crate trusts the sizes a file declares (it reserves a footer's element counts
//! at once, and a page's declared sizes), so they are checked here first, against the file:
//! - the footer lies within the file and its Thrift structure is sound ([`walk_struct`]);
//! - the row groups' row counts add up to the file's, and every column chunk lies within the
//!   data, before the footer;
//! - every page of the columns read lies within its column chunk, and its declared sizes are
//!   what its compressed bytes can expand to (and, for Snappy, what the page's data says).
//!
//! What the crate still panics on (a damaged Arrow schema stored in the footer) is contained
//! and reported with the file.

use std::fs::File;
use std::io::{Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, RecordBatchOptions};
use arrow_schema::{Field, Schema};
use parquet::basic::Compression;
use parquet::file::metadata::ParquetMetaData;
use parquet::file::reader::{FileReader, SerializedFileReader};

use crate::error::{IoError, Result};
use crate::format::columnar::parquet_columns::{ReadColumn, arrow_schema};
use crate::format::columnar::thrift::{int_field, walk_struct};
use crate::format::columnar::{
    Batches, ColumnarSource, GroupBatches, batch_rows, format_error, select,
};
use crate::read::bounded::{contain, memory_ceiling, read_growing};
use crate::read::open::read_full;
use crate::read::options::ReadOptions;

/// Opens a Parquet file: checks and reads its footer, resolves the selection, checks the pages
/// of the selected columns, and reads only those columns.
pub(crate) fn open(path: &Path, options: &ReadOptions) -> Result<ColumnarSource> {
    open_groups(path, options, None)
}

/// The number of rows of every row group, from the footer.
pub(crate) fn row_group_rows(path: &Path) -> Result<Vec<usize>> {
    let reader = open_footer(path)?.1;
    Ok(reader
        .metadata()
        .row_groups()
        .iter()
        .map(|g| usize::try_from(g.num_rows()).unwrap_or(0))
        .collect())
}

/// Checks the footer (see [`check_footer`]) and has the `parquet` crate decode it. Returns
/// where the data ends, and the reader.
fn open_footer(path: &Path) -> Result<(u64, SerializedFileReader<File>, u64)> {
    let open_err = |source| IoError::Open {
        path: path.to_owned(),
        source,
    };
    let mut file = File::open(path).map_err(open_err)?;
    let file_len = file.metadata().map_err(open_err)?.len();
    let data_end = check_footer(path, &mut file, file_len)?;
    let reader = contain(
        path,
        || "the footer".into(),
        || {
            SerializedFileReader::new(file)
                .map_err(|e| format_error(path, format!("not a readable Parquet file: {e}")))
        },
    )?;
    Ok((data_end, reader, file_len))
}

/// [`open`], reading only the row groups `groups` (consecutive, a process's part of the file)
/// when given: rows keep their numbers in the file in messages.
pub(crate) fn open_groups(
    path: &Path,
    options: &ReadOptions,
    groups: Option<&[usize]>,
) -> Result<ColumnarSource> {
    let (data_end, reader, file_len) = open_footer(path)?;
    let meta = reader.metadata();
    let group_ends = check_row_groups(path, meta, data_end)?;
    let schema = contain(
        path,
        || "the footer's Arrow schema".into(),
        || Ok(arrow_schema(meta.file_metadata())),
    )?;
    let selected = select(path, &schema, options)?;
    let num_rows = meta.file_metadata().num_rows();
    let n_rows = usize::try_from(num_rows)
        .map_err(|_| format_error(path, format!("the footer gives {num_rows} rows")))?;
    if n_rows == 0 {
        return Err(IoError::NoData {
            path: path.to_owned(),
            detail: " (the Parquet file has 0 rows)",
        });
    }
    check_pages(path, meta, &selected.roots)?;
    // The row count sizes `read_all`'s allocation: trusted only when it is plausible for the
    // file's size, so that a corrupt footer gives an error rather than a huge allocation.
    let size_checked = selected.width.is_some_and(|w| {
        (n_rows as u64).saturating_mul(w as u64).saturating_mul(8)
            <= file_len.saturating_mul(64).max(1 << 30)
    });
    let group_rows = |g: usize| {
        let rows = meta.row_groups().get(g).map(|m| m.num_rows());
        usize::try_from(rows.unwrap_or(0)).unwrap_or(0)
    };
    let groups: Vec<usize> = match groups {
        Some(groups) => groups.to_vec(),
        None => (0..meta.num_row_groups()).collect(),
    };
    let first_row = groups
        .first()
        .map_or(0, |&g0| (0..g0).map(group_rows).sum());
    let n_rows = if groups.len() == meta.num_row_groups() {
        n_rows
    } else {
        groups.iter().map(|&g| group_rows(g)).sum()
    };
    let columns = selected
        .roots
        .iter()
        .map(|&root| ReadColumn::new(meta.file_metadata().schema_descr(), root, &schema))
        .collect();
    let batches = ParquetBatches {
        path: path.to_owned(),
        reader,
        groups,
        next_group: 0,
        rows_left: 0,
        columns,
        batch_rows: batch_rows(selected.width),
    };
    let mut source = ColumnarSource::new(
        path,
        "Parquet",
        Batches::Parquet {
            reader: Box::new(batches),
            group_ends,
        },
        selected.projected(),
        Some(n_rows),
        size_checked,
    )?;
    source.first_row(first_row);
    Ok(source)
}

/// The selected columns of a Parquet file decoded a batch of rows at a time, row group after
/// row group, into Arrow arrays (of the types [`arrow_schema`] gives them) that the shared
/// code copies into rows. A batch never spans two row groups.
struct ParquetBatches {
    path: PathBuf,
    reader: SerializedFileReader<File>,
    /// The row groups to read, in order, and the next of them.
    groups: Vec<usize>,
    next_group: usize,
    /// Rows of the current row group not yet decoded.
    rows_left: usize,
    /// The columns read (the file's top-level columns, in file order).
    columns: Vec<ReadColumn>,
    batch_rows: usize,
}

impl GroupBatches for ParquetBatches {
    fn next_batch(&mut self, label: &str) -> Option<Result<RecordBatch>> {
        let path = &self.path;
        let what = || format!("the Parquet data of {label}");
        while self.rows_left == 0 {
            let &g = self.groups.get(self.next_group)?;
            self.next_group += 1;
            let group = match self.reader.get_row_group(g) {
                Ok(group) => group,
                Err(e) => return Some(Err(decode_error(path, &what(), e))),
            };
            self.rows_left = usize::try_from(group.metadata().num_rows()).unwrap_or(0);
            for column in &mut self.columns {
                if let Err(e) = column.start_group(group.as_ref()) {
                    return Some(Err(decode_error(path, &what(), e)));
                }
            }
        }
        let n = self.rows_left.min(self.batch_rows);
        self.rows_left -= n;
        let mut fields = Vec::with_capacity(self.columns.len());
        let mut arrays: Vec<ArrayRef> = Vec::with_capacity(self.columns.len());
        for column in &mut self.columns {
            match column.read(n) {
                Ok(array) => {
                    fields.push(Field::new(
                        column.name(),
                        array.data_type().clone(),
                        array.null_count() > 0,
                    ));
                    arrays.push(array);
                }
                Err(e) => return Some(Err(decode_error(path, &what(), e))),
            }
        }
        let options = RecordBatchOptions::new().with_row_count(Some(n));
        Some(
            RecordBatch::try_new_with_options(Arc::new(Schema::new(fields)), arrays, &options)
                .map_err(|e| format_error(path, format!("{} cannot be decoded: {e}", what()))),
        )
    }
}

/// A `parquet` error while decoding `what`: I/O errors keep their kind, the rest are about the
/// content.
fn decode_error(path: &Path, what: &str, e: parquet::errors::ParquetError) -> IoError {
    match e {
        parquet::errors::ParquetError::External(source) => {
            match source.downcast::<std::io::Error>() {
                Ok(source) => IoError::Read {
                    path: path.to_owned(),
                    source: *source,
                },
                Err(other) => format_error(path, format!("{what} cannot be decoded: {other}")),
            }
        }
        e => format_error(path, format!("{what} cannot be decoded: {e}")),
    }
}

/// Checks the magic bytes at both ends, that the footer's length fits in the file, and that the
/// footer is one sound Thrift structure filling it. Returns where the data ends (the footer's
/// start).
fn check_footer(path: &Path, file: &mut File, len: u64) -> Result<u64> {
    let bad = |detail: String| format_error(path, format!("not a readable Parquet file: {detail}"));
    let read_err = |source| IoError::Read {
        path: path.to_owned(),
        source,
    };
    if len < 12 {
        return Err(bad(format!(
            "{len} bytes are too few for the magic bytes and a footer"
        )));
    }
    let mut head = [0u8; 4];
    let mut tail = [0u8; 8];
    file.seek(SeekFrom::Start(0)).map_err(read_err)?;
    read_full(file, &mut head).map_err(read_err)?;
    file.seek(SeekFrom::Start(len - 8)).map_err(read_err)?;
    read_full(file, &mut tail).map_err(read_err)?;
    if &head != b"PAR1" || &tail[4..] != b"PAR1" {
        return Err(bad(
            "it does not start and end with the magic bytes PAR1 (cut short, damaged, or \
             encrypted)"
                .into(),
        ));
    }
    let footer_len = u64::from(u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]));
    if footer_len + 12 > len {
        return Err(bad(format!(
            "the footer's length {footer_len} does not fit in the file's {len} bytes"
        )));
    }
    let start = len - 8 - footer_len;
    let mut footer = Vec::new();
    file.seek(SeekFrom::Start(start)).map_err(read_err)?;
    read_growing(file, &mut footer, footer_len as usize).map_err(read_err)?;
    let (used, _) = walk_struct(&footer).map_err(|e| bad(format!("its footer is damaged: {e}")))?;
    if used as u64 != footer_len {
        return Err(bad(format!(
            "its footer's metadata takes {used} of the {footer_len} bytes the footer length says"
        )));
    }
    file.seek(SeekFrom::Start(0)).map_err(read_err)?;
    Ok(start)
}

/// Checks that the row groups' row counts add up to the file's and that every column chunk lies
/// within the data. Returns the last row (counting from 0) of every row group.
fn check_row_groups(path: &Path, meta: &ParquetMetaData, data_end: u64) -> Result<Vec<u64>> {
    let bad = |detail: String| format_error(path, format!("damaged Parquet footer: {detail}"));
    let mut total: u64 = 0;
    let mut ends = Vec::with_capacity(meta.num_row_groups());
    for (k, group) in meta.row_groups().iter().enumerate() {
        let rows = u64::try_from(group.num_rows())
            .map_err(|_| bad(format!("row group {k} has {} rows", group.num_rows())))?;
        total = total.saturating_add(rows);
        ends.push(total.wrapping_sub(1));
        for (j, column) in group.columns().iter().enumerate() {
            let start = column
                .dictionary_page_offset()
                .unwrap_or(column.data_page_offset());
            let size = column.compressed_size();
            let end = u64::try_from(start)
                .ok()
                .zip(u64::try_from(size).ok())
                .and_then(|(s, n)| s.checked_add(n));
            if start < 4 || end.is_none_or(|end| end > data_end) || column.num_values() < 0 {
                return Err(bad(format!(
                    "row group {k}, column {j} ({}): its {size} bytes at offset {start} do not \
                     lie within the data (bytes 4 to {data_end}), or it has {} values",
                    column.column_path(),
                    column.num_values()
                )));
            }
        }
    }
    let declared = meta.file_metadata().num_rows();
    if u64::try_from(declared).ok() != Some(total) {
        return Err(bad(format!(
            "the file declares {declared} rows but its row groups hold {total}"
        )));
    }
    Ok(ends)
}

/// The most a page's bytes can expand to under each codec: Snappy's copies code at most 64
/// bytes in 3; LZ4's matches grow by 255 bytes per byte; deflate 258 bytes in 2 bits;
/// Zstandard a 128 KiB run in 4 bytes.
fn max_ratio(codec: Compression) -> u64 {
    match codec {
        Compression::UNCOMPRESSED => 1,
        Compression::SNAPPY => 24,
        Compression::LZ4 | Compression::LZ4_RAW => 256,
        Compression::GZIP(_) => 1032,
        _ => 32_768,
    }
}

/// Page header fields (Thrift ids): `PageHeader` and its `DataPageHeaderV2` (8) and
/// `DictionaryPageHeader` (7).
const UNCOMPRESSED_SIZE: i16 = 2;
const COMPRESSED_SIZE: i16 = 3;
const DICTIONARY_HEADER: i16 = 7;
const V2_HEADER: i16 = 8;

/// Walks the pages of the selected columns' chunks (headers only; the data is skipped) and
/// checks every page's declared sizes against its chunk and its codec, before the `parquet`
/// crate allocates them.
fn check_pages(path: &Path, meta: &ParquetMetaData, roots: &[usize]) -> Result<()> {
    let schema = meta.file_metadata().schema_descr();
    let leaves: Vec<usize> = (0..schema.num_columns())
        .filter(|&i| roots.contains(&schema.get_column_root_idx(i)))
        .collect();
    let mut file = File::open(path).map_err(|source| IoError::Open {
        path: path.to_owned(),
        source,
    })?;
    let read_err = |source| IoError::Read {
        path: path.to_owned(),
        source,
    };
    let mut header = Vec::new();
    let ceiling = memory_ceiling();
    for (k, group) in meta.row_groups().iter().enumerate() {
        for &j in &leaves {
            let Some(column) = group.columns().get(j) else {
                return Err(format_error(
                    path,
                    format!("damaged Parquet footer: row group {k} has no column {j}"),
                ));
            };
            let bad = |page: usize, detail: String| {
                format_error(
                    path,
                    format!(
                        "damaged Parquet data: row group {k}, column {j} ({}), page {page}: \
                         {detail}",
                        column.column_path()
                    ),
                )
            };
            let codec = column.compression();
            let start = column
                .dictionary_page_offset()
                .unwrap_or(column.data_page_offset()) as u64;
            let end = start + column.compressed_size() as u64;
            let mut at = start;
            let mut page = 0;
            while at < end {
                // A header is usually tens of bytes; statistics can make it longer.
                let mut want = (end - at).min(1 << 12);
                let (used, fields) = loop {
                    file.seek(SeekFrom::Start(at)).map_err(read_err)?;
                    let got =
                        read_growing(&mut file, &mut header, want as usize).map_err(read_err)?;
                    match walk_struct(&header[..got]) {
                        Ok(found) => break found,
                        Err(_) if want < (end - at).min(1 << 24) => {
                            want = (want * 16).min(end - at).min(1 << 24)
                        }
                        Err(e) => return Err(bad(page, format!("its header is damaged: {e}"))),
                    }
                };
                let size = |id| int_field(&fields, 0, id).unwrap_or(-1);
                let (uncompressed, compressed) = (size(UNCOMPRESSED_SIZE), size(COMPRESSED_SIZE));
                let data = at + used as u64;
                let data_end_of_page = u64::try_from(compressed)
                    .ok()
                    .and_then(|c| data.checked_add(c));
                if uncompressed < 0 || data_end_of_page.is_none_or(|e| e > end) {
                    return Err(bad(
                        page,
                        format!(
                            "its declared sizes ({compressed} bytes compressed, {uncompressed} \
                             uncompressed) do not fit in the column chunk"
                        ),
                    ));
                }
                let (uncompressed, compressed) = (uncompressed as u64, compressed as u64);
                let most = compressed.saturating_mul(max_ratio(codec)).min(ceiling);
                if uncompressed > most.max(compressed) {
                    return Err(bad(
                        page,
                        format!(
                            "it declares {uncompressed} bytes uncompressed, more than its \
                             {compressed} bytes can hold under {codec:?}"
                        ),
                    ));
                }
                if let Some(n) = int_field(&fields, DICTIONARY_HEADER, 1)
                    && (n < 0 || n as u64 > uncompressed)
                {
                    return Err(bad(
                        page,
                        format!("a dictionary of {n} values in {uncompressed} bytes"),
                    ));
                }
                if codec == Compression::SNAPPY {
                    // Snappy's own length, which the decoder allocates, must be the page's.
                    let levels = int_field(&fields, V2_HEADER, 5).unwrap_or(0).max(0) as u64
                        + int_field(&fields, V2_HEADER, 6).unwrap_or(0).max(0) as u64;
                    let compressed_values = int_field(&fields, V2_HEADER, 7) != Some(0);
                    let values = uncompressed.saturating_sub(levels);
                    if compressed_values && values > 0 && levels < compressed {
                        file.seek(SeekFrom::Start(data + levels))
                            .map_err(read_err)?;
                        let mut prefix = [0u8; 10];
                        let got = read_full(
                            &mut file,
                            &mut prefix[..(compressed - levels).min(10) as usize],
                        )
                        .map_err(read_err)?;
                        let declared = snappy_length(&prefix[..got]);
                        if declared != Some(values) {
                            return Err(bad(
                                page,
                                format!(
                                    "its Snappy data declares {declared:?} bytes where the page \
                                     header says {values}"
                                ),
                            ));
                        }
                    }
                }
                at = data + compressed;
                page += 1;
            }
        }
    }
    Ok(())
}

/// The uncompressed length that starts a Snappy block (a little-endian varint of at most
/// 32 bits).
fn snappy_length(bytes: &[u8]) -> Option<u64> {
    let mut value = 0u64;
    for (k, &b) in bytes.iter().take(5).enumerate() {
        value |= u64::from(b & 0x7f) << (7 * k);
        if b & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snappy_lengths_are_varints() {
        assert_eq!(snappy_length(&[0x05]), Some(5));
        assert_eq!(snappy_length(&[0xfe, 0xff, 0x7f]), Some(2_097_150));
        assert_eq!(snappy_length(&[0x80, 0x80]), None);
    }
}
