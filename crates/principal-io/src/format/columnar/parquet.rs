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
    open_groups(path, options, None)
}

/// The number of rows of every row group, from the footer.
pub(crate) fn row_group_rows(path: &Path) -> Result<Vec<usize>> {
    let file = File::open(path).map_err(|source| IoError::Open {
        path: path.to_owned(),
        source,
    })?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(|e| format_error(path, format!("not a readable Parquet file: {e}")))?;
    let groups = builder.metadata().row_groups();
    Ok(groups
        .iter()
        .map(|g| usize::try_from(g.num_rows()).unwrap_or(0))
        .collect())
}

/// [`open`], reading only the row groups `groups` (consecutive, a process's part of the file)
/// when given: rows keep their numbers in the file in messages.
pub(crate) fn open_groups(
    path: &Path,
    options: &ReadOptions,
    groups: Option<&[usize]>,
) -> Result<ColumnarSource> {
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
    let group_rows = |g: &usize| {
        let rows = builder
            .metadata()
            .row_groups()
            .get(*g)
            .map(|m| m.num_rows());
        usize::try_from(rows.unwrap_or(0)).unwrap_or(0)
    };
    let (first_row, n_rows) = match groups {
        None => (0, n_rows),
        Some(groups) => {
            let before = groups
                .first()
                .map_or(0, |&g0| (0..g0).map(|g| group_rows(&g)).sum());
            (before, groups.iter().map(group_rows).sum())
        }
    };
    let builder = match groups {
        Some(groups) => builder.with_row_groups(groups.to_vec()),
        None => builder,
    };
    let reader = builder
        .with_projection(mask)
        .with_batch_size(batch_rows(selected.width))
        .build()
        .map_err(|e| format_error(path, format!("not a readable Parquet file: {e}")))?;
    let mut source = ColumnarSource::new(
        path,
        "Parquet",
        Box::new(reader),
        selected.projected(),
        Some(n_rows),
        size_checked,
    )?;
    source.first_row(first_row);
    Ok(source)
}
