//! A progress bar over the passes of an out-of-core fit: rows, bytes, pass number, ETA.
//! Drawn on stderr only when it is a terminal; silent otherwise (pipes, CI, tests).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use principal::{ChunkRef, ChunkSource};

/// The passes a fit will make over `rows` rows, when known beforehand.
pub type PlannedPasses<'a> = Box<dyn Fn(usize) -> Option<usize> + 'a>;

/// Wraps a source; every pass advances the bar by the rows it hands out.
pub struct Progress<'a> {
    inner: &'a mut dyn ChunkSource,
    bar: ProgressBar,
    passes: usize,
    rows: Option<u64>,
    bytes_per_row: u64,
    planned: PlannedPasses<'a>,
}

impl<'a> Progress<'a> {
    /// `rows`: the number of rows when known in advance (NPY, IDX, Parquet headers; otherwise
    /// after the first pass). `planned`: the passes the fit makes over that many rows, shown
    /// as "pass k of n" once both are known.
    pub fn new(
        inner: &'a mut dyn ChunkSource,
        rows: Option<u64>,
        bytes_per_value: u64,
        planned: PlannedPasses<'a>,
    ) -> Self {
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
            planned,
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
        let total = self
            .rows
            .and_then(|rows| (self.planned)(usize::try_from(rows).ok()?))
            .filter(|&total| total >= self.passes);
        let pass = match total {
            Some(total) => format!("pass {} of {total}", self.passes),
            None => format!("pass {}", self.passes),
        };
        let (bar, bytes_per_row) = (&self.bar, self.bytes_per_row);
        let mut seen = 0u64;
        self.inner.pass(&mut |chunk| {
            seen += chunk.nrows() as u64;
            bar.set_message(format!(
                "{pass}, {}",
                principal::format_bytes((seen * bytes_per_row) as f64)
            ));
            bar.inc(chunk.nrows() as u64);
            visit(chunk)
        })?;
        self.rows = Some(seen);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use principal::faer::Mat;
    use principal::InMemory;

    use super::*;

    #[test]
    fn the_message_names_the_pass_of_the_planned_total_and_the_bytes() {
        let x = Mat::<f64>::zeros(1000, 4);
        let mut source = InMemory::new(x.as_ref(), 300);
        // Rows unknown at first (as for CSV): the total appears from the second pass on.
        let mut progress = Progress::new(&mut source, None, 8, Box::new(|n| Some(n / 500)));
        progress.pass(&mut |_| Ok(())).unwrap();
        assert_eq!(progress.bar.message(), "pass 1, 32.0 kB");
        progress.pass(&mut |_| Ok(())).unwrap();
        assert_eq!(progress.bar.message(), "pass 2 of 2, 32.0 kB");
        // A plan that was exceeded is not shown; nor is one that is unknown.
        progress.pass(&mut |_| Ok(())).unwrap();
        assert_eq!(progress.bar.message(), "pass 3, 32.0 kB");
        let mut unknown = InMemory::new(x.as_ref(), 300);
        let mut progress = Progress::new(&mut unknown, Some(1000), 8, Box::new(|_| None));
        progress.pass(&mut |_| Ok(())).unwrap();
        assert_eq!(progress.bar.message(), "pass 1, 32.0 kB");
        assert_eq!(progress.passes(), 1);
    }
}
