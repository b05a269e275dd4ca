//! Parquet files, read from their footer: the selection is resolved against the schema and only
//! the selected columns are decoded.

use std::fs::File;
use std::path::Path;

use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ProjectionMask;

use crate::error::{IoError, Result};
use crate::format::columnar::{batch_rows, format_error, select, ColumnarSource};
use crate::read::options::ReadOptions;

/// Opens a Parquet file: reads its footer, resolves the selection, and reads only the selected
/// columns.
pub(crate) fn open(path: &Path, options: &ReadOptions) -> Result<ColumnarSource> {
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
