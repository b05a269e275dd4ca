//! A progress bar over the passes of an out-of-core fit: rows, bytes, pass number, ETA (of the
//! whole fit when its passes are known beforehand, else of the current pass).
//! Drawn on stderr only when it is a terminal; silent otherwise (pipes, CI, tests).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use principal::faer::MatRef;
use principal::{ChunkRef, ChunkSource, RowsAt};

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

    /// Counts a pass beginning and sets the bar for it; returns its label.
    fn begin_pass(&mut self) -> String {
        self.passes += 1;
        let total = self
            .rows
            .and_then(|rows| (self.planned)(usize::try_from(rows).ok()?))
            .filter(|&total| total >= self.passes);
        match (total, self.rows) {
            // One pass in all: nothing to count.
            (Some(1), Some(rows)) => {
                self.bar.set_style(style(ONLY_PASS));
                self.bar.set_length(rows);
                String::from("reading")
            }
            // The bar spans every pass, so its ETA is the whole fit's.
            (Some(total), Some(rows)) => {
                self.bar.set_style(style(WHOLE_FIT));
                let (length, done) = (rows * total as u64, rows * (self.passes as u64 - 1));
                if self.bar.length() != Some(length) || self.bar.position() != done {
                    // First pass with a known plan (or a changed one): start the estimate here.
                    self.bar.set_length(length);
                    self.bar.set_position(done);
                    self.bar.reset_eta();
                }
                format!("pass {} of {total}", self.passes)
            }
            _ => {
                self.bar.set_style(style(ONE_PASS));
                self.bar.reset();
                if let Some(rows) = self.rows {
                    self.bar.set_length(rows);
                }
                format!("pass {}", self.passes)
            }
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
        let pass = self.begin_pass();
        let (bar, bytes_per_row) = (&self.bar, self.bytes_per_row);
        let mut seen = 0u64;
        self.inner.pass(&mut |chunk| {
            advance(bar, &pass, bytes_per_row, &mut seen, chunk.nrows());
            visit(chunk)
        })?;
        self.rows = Some(seen);
        Ok(())
    }

    /// A pass of bytes as stored moves the bar as an ordinary pass does.
    fn pass_bytes(
        &mut self,
        visit: &mut dyn FnMut(MatRef<'_, u8>) -> principal::Result<()>,
    ) -> Option<principal::Result<()>> {
        let pass = self.begin_pass();
        let (bar, bytes_per_row) = (&self.bar, self.bytes_per_row);
        let mut seen = 0u64;
        let done = self.inner.pass_bytes(&mut |chunk| {
            advance(bar, &pass, bytes_per_row, &mut seen, chunk.nrows());
            visit(chunk)
        });
        match &done {
            // Not made: the ordinary pass that follows counts itself.
            None => self.passes -= 1,
            Some(Ok(())) => self.rows = Some(seen),
            Some(Err(_)) => {}
        }
        done
    }

    /// A pass by position counts as a pass; the bar moves as the solver's threads read.
    fn pass_by_position(
        &mut self,
        visit: &mut dyn FnMut(&dyn RowsAt) -> principal::Result<()>,
    ) -> Option<principal::Result<()>> {
        let (bar, width) = (&self.bar, self.inner.n_features().max(1));
        let mut n_rows = None;
        let done = self.inner.pass_by_position(&mut |rows| {
            n_rows = Some(rows.n_rows() as u64);
            bar.set_style(style(ONE_PASS));
            bar.reset();
            bar.set_length(rows.n_rows() as u64);
            bar.set_message("reading");
            visit(&CountedRows { rows, bar, width })
        })?;
        self.passes += 1;
        if done.is_ok() {
            self.rows = n_rows;
        }
        Some(done)
    }
}

/// One chunk of `rows` rows of the pass labelled `pass` handed out: the bar moves, its message
/// shows the bytes seen so far.
fn advance(bar: &ProgressBar, pass: &str, bytes_per_row: u64, seen: &mut u64, rows: usize) {
    *seen += rows as u64;
    bar.set_message(format!(
        "{pass}, {}",
        crate::units::format_bytes((*seen * bytes_per_row) as f64)
    ));
    bar.inc(rows as u64);
}

/// Rows read by position, counted on the bar as they are read.
struct CountedRows<'a> {
    rows: &'a dyn RowsAt,
    bar: &'a ProgressBar,
    width: usize,
}

impl RowsAt for CountedRows<'_> {
    fn n_rows(&self) -> usize {
        self.rows.n_rows()
    }

    fn read_rows_at(&self, first_row: usize, out: &mut [f64]) -> principal::Result<()> {
        self.rows.read_rows_at(first_row, out)?;
        self.bar.inc((out.len() / self.width) as u64);
        Ok(())
    }
}

/// A bar over the drawing steps of a report (points, images, files), one step at a time.
/// Drawn on stderr only when it is a terminal, like the bar of the passes.
pub struct DrawingProgress {
    bar: ProgressBar,
}

impl DrawingProgress {
    pub fn new() -> Self {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        bar.set_style(style(DRAWING));
        DrawingProgress { bar }
    }
}

impl principal_report::Progress for DrawingProgress {
    fn begin(&mut self, step: &str, total: u64) {
        self.bar.reset();
        self.bar.set_length(total);
        self.bar.set_message(format!("drawing the {step}"));
    }

    fn advance(&mut self, done: u64) {
        self.bar.inc(done);
    }
}

impl Drop for DrawingProgress {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}

/// The bar of one drawing step.
const DRAWING: &str = "{msg} [{elapsed_precise}] {wide_bar} {human_pos}/{human_len}";

/// The bar over every pass of a fit whose passes are known: rows read in all of them.
const WHOLE_FIT: &str =
    "{msg} [{elapsed_precise}] {wide_bar} {human_pos}/{human_len} rows in all passes (ETA {eta})";
/// The bar of a command that makes one pass.
const ONLY_PASS: &str =
    "{msg} [{elapsed_precise}] {wide_bar} {human_pos}/{human_len} rows (ETA {eta})";
/// The bar over one pass, when the number of passes is not known.
const ONE_PASS: &str =
    "{msg} [{elapsed_precise}] {wide_bar} {human_pos}/{human_len} rows (ETA of this pass {eta})";

fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar())
}

#[cfg(test)]
mod tests {
    use principal::InMemory;
    use principal::faer::Mat;

    use super::*;

    #[test]
    fn the_message_names_the_pass_of_the_planned_total_and_the_bytes() {
        let x = Mat::<f64>::zeros(1000, 4);
        let mut source = InMemory::new(x.as_ref(), 300);
        // Rows unknown at first (as for CSV): the total appears from the second pass on.
        let mut progress = Progress::new(&mut source, None, 8, Box::new(|n| Some(n / 500)));
        progress.pass(&mut |_| Ok(())).unwrap();
        assert_eq!(progress.bar.message(), "pass 1, 32.0 kB");
        assert_eq!(progress.bar.length(), None);
        progress.pass(&mut |_| Ok(())).unwrap();
        assert_eq!(progress.bar.message(), "pass 2 of 2, 32.0 kB");
        // Once the plan is known the bar spans all passes (its ETA is the whole fit's).
        assert_eq!(progress.bar.length(), Some(2000));
        assert_eq!(progress.bar.position(), 2000);
        // A plan that was exceeded is not shown; nor is one that is unknown.
        progress.pass(&mut |_| Ok(())).unwrap();
        assert_eq!(progress.bar.message(), "pass 3, 32.0 kB");
        assert_eq!(progress.bar.length(), Some(1000));
        assert_eq!(progress.bar.position(), 1000);
        // Rows and plan known from the start: one bar over three passes, never reset.
        let mut known = InMemory::new(x.as_ref(), 300);
        let mut progress = Progress::new(&mut known, Some(1000), 8, Box::new(|_| Some(3)));
        let mut positions = Vec::new();
        for _ in 0..3 {
            progress.pass(&mut |_| Ok(())).unwrap();
            positions.push(progress.bar.position());
            assert_eq!(progress.bar.length(), Some(3000));
        }
        assert_eq!(positions, [1000, 2000, 3000]);
        assert_eq!(progress.bar.message(), "pass 3 of 3, 32.0 kB");
        // A single planned pass is not numbered.
        let mut once = InMemory::new(x.as_ref(), 300);
        let mut progress = Progress::new(&mut once, Some(1000), 8, Box::new(|_| Some(1)));
        progress.pass(&mut |_| Ok(())).unwrap();
        assert_eq!(progress.bar.message(), "reading, 32.0 kB");
        assert_eq!(
            (progress.bar.length(), progress.bar.position()),
            (Some(1000), 1000)
        );
        let mut unknown = InMemory::new(x.as_ref(), 300);
        let mut progress = Progress::new(&mut unknown, Some(1000), 8, Box::new(|_| None));
        progress.pass(&mut |_| Ok(())).unwrap();
        assert_eq!(progress.bar.message(), "pass 1, 32.0 kB");
        assert_eq!(progress.passes(), 1);
    }
}
