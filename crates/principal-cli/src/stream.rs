//! The row-by-row commands (`transform`, `inverse`): the input is streamed from its files a
//! chunk at a time (read ahead on a second thread), each chunk's result is appended to the
//! output file, and neither is ever held whole. Memory is two input chunks and one result
//! chunk, whatever the number of rows.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use principal::faer::Mat;
use principal::{ChunkRef, ChunkSource, PcaError};
use principal_io::{ChunkReader, FileSource, MatrixWriter, ReadOptions};

use crate::budget;
use crate::progress::Progress;
use crate::text;

/// Input files opened for one pass.
pub struct RowStream {
    files: FileSource,
    rows: Option<usize>,
    bytes_per_value: u64,
}

impl RowStream {
    /// Opens and checks the files (every shard's header, as `fit` does), with chunks sized
    /// from `memory_limit` for rows of the input's width or of `output_columns`, the wider.
    pub fn open(
        inputs: &[PathBuf],
        options: &ReadOptions,
        output_columns: usize,
        memory_limit: u64,
    ) -> Result<Self> {
        Ok(Self::from_reader(
            ChunkReader::open(inputs, options)?,
            output_columns,
            memory_limit,
        ))
    }

    /// The files of a reader just opened (a process's part of the inputs, say), as [`open`].
    ///
    /// [`open`]: RowStream::open
    pub fn from_reader(reader: ChunkReader, output_columns: usize, memory_limit: u64) -> Self {
        let (d, rows, f32) = (reader.n_features(), reader.n_rows_hint(), reader.is_f32());
        let chunk_rows = budget::chunk_rows(d.max(output_columns), memory_limit);
        let files = FileSource::from_reader(reader, chunk_rows);
        RowStream {
            files,
            rows,
            bytes_per_value: if f32 { 4 } else { 8 },
        }
    }

    /// The number of rows, when the files say it before they are read (NPY, IDX, Parquet).
    pub fn n_rows_hint(&self) -> Option<usize> {
        self.rows
    }

    /// Columns of the input (after selection).
    pub fn n_features(&self) -> usize {
        self.files.n_features()
    }

    /// Writes `map` of every chunk, in order, to `out` and completes the file; returns the
    /// number of rows. On any error (reading, mapping or writing) `out` is dropped, so nothing
    /// is left at its path and an existing file there is kept. A row named in an error of
    /// `map` is counted from the start of the data, not of its chunk.
    pub fn map_into(
        self,
        mut out: MatrixWriter,
        mut map: impl FnMut(ChunkRef<'_>) -> principal::Result<Mat<f64>>,
    ) -> Result<u64> {
        self.for_each(|first, chunk| {
            let result = map(chunk).map_err(|e| from_row(e, first))?;
            out.write_rows(result.as_ref())?;
            Ok(())
        })?;
        let rows = out.rows();
        out.finish()?;
        Ok(rows)
    }

    /// Hands every chunk, in order, to `visit` with the row of the data it starts at, under a
    /// progress bar (on a terminal); returns the number of rows. The first error (reading or
    /// from `visit`) ends the pass and is returned.
    pub fn for_each(
        mut self,
        mut visit: impl FnMut(usize, ChunkRef<'_>) -> Result<()>,
    ) -> Result<u64> {
        let mut done = 0usize;
        let mut visit_error: Option<anyhow::Error> = None;
        let mut source = Progress::new(
            &mut self.files,
            self.rows.map(|n| n as u64),
            self.bytes_per_value,
            Box::new(|_| Some(1)),
        );
        let passed = source.pass(&mut |chunk| {
            let rows = chunk.nrows();
            if let Err(e) = visit(done, chunk) {
                visit_error = Some(e);
                return Err(PcaError::Source("a chunk could not be processed".into()));
            }
            done += rows;
            Ok(())
        });
        source.finish();
        if let Some(e) = visit_error {
            return Err(e);
        }
        passed?;
        Ok(done as u64)
    }
}

/// The closing line of a streamed command: what was written where, how long it took, and
/// the peak memory.
pub fn summary(rows: u64, columns: usize, what: &str, path: &str, started: Instant) -> String {
    format!(
        "wrote {rows} samples × {columns} {what} to {path} in {}{}\n",
        text::duration(started.elapsed()),
        budget::peak_memory_note()
    )
}

/// `error` with the row it names counted from `first`, the chunk's first row in the data.
fn from_row(error: PcaError, first: usize) -> PcaError {
    match error {
        PcaError::NonFinite { row, column, value } => PcaError::NonFinite {
            row: first + row,
            column,
            value,
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_in_errors_count_from_the_start_of_the_data() {
        let e = from_row(
            PcaError::NonFinite {
                row: 3,
                column: 1,
                value: f64::NAN,
            },
            1000,
        );
        assert!(
            matches!(
                e,
                PcaError::NonFinite {
                    row: 1003,
                    column: 1,
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(matches!(
            from_row(PcaError::ZeroComponents, 7),
            PcaError::ZeroComponents
        ));
    }
}
