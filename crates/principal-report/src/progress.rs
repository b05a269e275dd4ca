//! Progress of long drawing steps, reported to whatever the caller plugs in (a terminal
//! progress bar in the command-line tool). This crate never touches a terminal.

/// Receives the progress of long steps: drawing tens of thousands of points, many images,
/// writing files. Every method has an empty default, so an implementation overrides only what
/// it shows.
///
/// ```
/// use principal_report::Progress;
///
/// /// Counts the units of work reported.
/// #[derive(Default)]
/// struct Tally { steps: Vec<String>, done: u64 }
///
/// impl Progress for Tally {
///     fn begin(&mut self, step: &str, _total: u64) { self.steps.push(step.to_owned()); }
///     fn advance(&mut self, done: u64) { self.done += done; }
/// }
/// ```
pub trait Progress {
    /// A step starts: `step` says what it is (e.g. "projection map (PNG)"), `total` counts its
    /// units (points, images, files).
    fn begin(&mut self, step: &str, total: u64) {
        let _ = (step, total);
    }

    /// `done` more units of the current step are finished.
    fn advance(&mut self, done: u64) {
        let _ = done;
    }

    /// The current step is over.
    fn end(&mut self) {}
}

/// Reports nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoProgress;

impl Progress for NoProgress {}

/// Calls `advance` every `every` units of a loop, and once more at the end with the rest, so
/// that a callback is not called per point.
pub(crate) struct Ticker<'p> {
    progress: &'p mut dyn Progress,
    every: u64,
    pending: u64,
}

impl<'p> Ticker<'p> {
    pub(crate) fn new(progress: &'p mut dyn Progress, step: &str, total: u64) -> Self {
        progress.begin(step, total);
        Ticker {
            progress,
            every: (total / 100).max(1),
            pending: 0,
        }
    }

    pub(crate) fn tick(&mut self) {
        self.pending += 1;
        if self.pending >= self.every {
            self.progress.advance(self.pending);
            self.pending = 0;
        }
    }
}

impl Drop for Ticker<'_> {
    fn drop(&mut self) {
        if self.pending > 0 {
            self.progress.advance(self.pending);
        }
        self.progress.end();
    }
}
