//! A progress bar over the passes of an out-of-core fit: rows, bytes, pass number, ETA.
//! Drawn on stderr only when it is a terminal; silent otherwise (pipes, CI, tests).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use principal::{ChunkRef, ChunkSource};

/// Wraps a source; every pass advances the bar by the rows it hands out.
pub struct Progress<'a> {
    inner: &'a mut dyn ChunkSource,
    bar: ProgressBar,
    passes: usize,
    rows: Option<u64>,
    bytes_per_row: u64,
}

impl<'a> Progress<'a> {
    /// `rows`: the number of rows when known in advance (NPY, IDX, Parquet headers).
    pub fn new(inner: &'a mut dyn ChunkSource, rows: Option<u64>, bytes_per_value: u64) -> Self {
        let bar = ProgressBar::with_draw_target(rows, ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template(
                "{msg} [{elapsed_precise}] {wide_bar} {human_pos}/{human_len} rows (ETA {eta})",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        let bytes_per_row = inner.n_features() as u64 * bytes_per_value;
        Progress {
            inner,
            bar,
            passes: 0,
            rows,
            bytes_per_row,
        }
    }

    /// Passes made so far.
    pub fn passes(&self) -> usize {
        self.passes
    }

    /// Removes the bar from the terminal.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl ChunkSource for Progress<'_> {
    fn n_features(&self) -> usize {
        self.inner.n_features()
    }

    fn pass(
        &mut self,
        visit: &mut dyn FnMut(ChunkRef<'_>) -> principal::Result<()>,
    ) -> principal::Result<()> {
        self.passes += 1;
        self.bar.reset();
        if let Some(rows) = self.rows {
            self.bar.set_length(rows);
        }
        let (bar, bytes_per_row, pass) = (&self.bar, self.bytes_per_row, self.passes);
        let mut seen = 0u64;
        self.inner.pass(&mut |chunk| {
            seen += chunk.nrows() as u64;
            bar.set_message(format!(
                "pass {pass}, {} MB",
                seen * bytes_per_row / 1_000_000
            ));
            bar.inc(chunk.nrows() as u64);
            visit(chunk)
        })?;
        self.rows = Some(seen);
        Ok(())
    }
}
