//! Arrow IPC: files (Feather v2), read from their footer with only the selected columns, and
//! streams, read from the front.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use arrow_ipc::reader::{FileReader, StreamReader};

use crate::error::{IoError, Result};
use crate::format::columnar::{format_error, select, ColumnarSource};
use crate::read::options::ReadOptions;

/// Opens an Arrow IPC file (Feather v2): the footer, then only the selected columns.
pub(crate) fn open_file(path: &Path, options: &ReadOptions) -> Result<ColumnarSource> {
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
pub(crate) fn open_stream(
    path: &Path,
    stream: Box<dyn Read + Send>,
    options: &ReadOptions,
) -> Result<ColumnarSource> {
    let reader = StreamReader::try_new(BufReader::new(stream), None)
        .map_err(|e| format_error(path, format!("not a readable Arrow IPC stream: {e}")))?;
    let selected = select(path, &reader.schema(), options)?;
    ColumnarSource::new(path, "Arrow", Box::new(reader), selected, None, false)
}
