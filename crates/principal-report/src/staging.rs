//! Writing a report directory all or nothing.
//!
//! The report is written into a hidden temporary directory beside the destination
//! (`.NAME.partial-XXXXXX`, on the same file system) and renamed into place once complete.
//! A failure before that point removes the temporary directory and leaves the destination as
//! it was. The destination may be:
//! - absent: the new report takes its name;
//! - an empty directory: it is replaced;
//! - a directory whose `index.html` was written by this crate (it carries [`GENERATOR`]): the
//!   old report is moved aside, the new one renamed into place, then the old one deleted (if
//!   the rename fails the old report is moved back);
//! - anything else (a file, a symbolic link, a directory with other content): refused, so that
//!   a user's directory is never deleted by mistake.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use tempfile::TempDir;

use crate::error::{ReportError, Result};

/// The `<meta name="generator">` content that marks an `index.html` as this crate's.
pub(crate) const GENERATOR: &str = "principal-report";

/// What the destination holds before writing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Destination {
    Absent,
    EmptyDirectory,
    Report,
}

/// A report being written: a temporary directory that becomes the destination on
/// [`install`](Staging::install), or disappears when dropped.
pub(crate) struct Staging {
    temporary: TempDir,
    destination: PathBuf,
    found: Destination,
}

fn io<'p>(action: &'static str, path: &'p Path) -> impl FnOnce(std::io::Error) -> ReportError + 'p {
    move |source| ReportError::Io {
        action,
        path: path.to_owned(),
        source,
    }
}

/// Whether `dir/index.html` names this crate as its generator.
fn holds_report(dir: &Path) -> bool {
    let Ok(file) = fs::File::open(dir.join("index.html")) else {
        return false;
    };
    // The marker is in the head: the first few kilobytes suffice.
    let mut head = String::new();
    let _ = file.take(4096).read_to_string(&mut head);
    head.contains(&format!(
        "<meta name=\"generator\" content=\"{GENERATOR}\">"
    ))
}

fn inspect(destination: &Path) -> Result<Destination> {
    let metadata = match fs::symlink_metadata(destination) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Destination::Absent),
        Err(e) => return Err(io("inspect", destination)(e)),
    };
    if !metadata.is_dir() {
        return Err(ReportError::NotADirectory {
            path: destination.to_owned(),
        });
    }
    let mut entries = fs::read_dir(destination).map_err(io("read", destination))?;
    if entries.next().is_none() {
        return Ok(Destination::EmptyDirectory);
    }
    if holds_report(destination) {
        Ok(Destination::Report)
    } else {
        Err(ReportError::NotAReportDirectory {
            path: destination.to_owned(),
        })
    }
}

/// The directory holding `path` (`.` for a bare name) and `path`'s file name.
fn parent_and_name(path: &Path) -> Result<(PathBuf, String)> {
    let name = path
        .file_name()
        .ok_or_else(|| ReportError::Io {
            action: "use as a report directory",
            path: path.to_owned(),
            source: std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "the path has no final name",
            ),
        })?
        .to_string_lossy()
        .into_owned();
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    };
    Ok((parent, name))
}

impl Staging {
    /// Checks the destination and creates the temporary directory beside it.
    pub(crate) fn new(destination: &Path) -> Result<Self> {
        let found = inspect(destination)?;
        let (parent, name) = parent_and_name(destination)?;
        let temporary = tempfile::Builder::new()
            .prefix(&format!(".{name}.partial-"))
            .tempdir_in(&parent)
            .map_err(io("create a temporary directory in", &parent))?;
        Ok(Staging {
            temporary,
            destination: destination.to_owned(),
            found,
        })
    }

    /// Where to write the report's files.
    pub(crate) fn path(&self) -> &Path {
        self.temporary.path()
    }

    /// Renames the complete report into place.
    pub(crate) fn install(self) -> Result<Installed> {
        let Staging {
            temporary,
            destination,
            found,
        } = self;
        // Checked again: the destination may have changed while the report was drawn.
        if inspect(&destination)? != found {
            return Err(ReportError::Io {
                action: "replace",
                path: destination,
                source: std::io::Error::other("the directory changed while the report was written"),
            });
        }
        let staged = temporary.path().to_owned();
        match found {
            Destination::Absent => {
                fs::rename(&staged, &destination)
                    .map_err(io("rename the report to", &destination))?;
            }
            Destination::EmptyDirectory => {
                fs::remove_dir(&destination).map_err(io("replace", &destination))?;
                if let Err(e) = fs::rename(&staged, &destination) {
                    let _ = fs::create_dir(&destination);
                    return Err(io("rename the report to", &destination)(e));
                }
            }
            Destination::Report => {
                let aside = aside_name(&destination)?;
                fs::rename(&destination, &aside)
                    .map_err(io("move the previous report aside:", &destination))?;
                if let Err(e) = fs::rename(&staged, &destination) {
                    let _ = fs::rename(&aside, &destination);
                    return Err(io("rename the report to", &destination)(e));
                }
                // The new report is in place: failing to delete the old copy is no failure of
                // the report, but the caller is told where it was left.
                if fs::remove_dir_all(&aside).is_err() {
                    let _ = temporary.keep();
                    return Ok(Installed {
                        replaced: true,
                        leftover: Some(aside),
                    });
                }
            }
        }
        // Renamed away: nothing is left for the guard to delete.
        let _ = temporary.keep();
        Ok(Installed {
            replaced: found != Destination::Absent,
            leftover: None,
        })
    }
}

/// The outcome of [`Staging::install`].
pub(crate) struct Installed {
    /// Whether an empty directory or an earlier report was replaced.
    pub(crate) replaced: bool,
    /// Where the previous report was left when it could not be deleted.
    pub(crate) leftover: Option<PathBuf>,
}

/// A free name beside `destination` for moving the old report aside.
fn aside_name(destination: &Path) -> Result<PathBuf> {
    let (parent, name) = parent_and_name(destination)?;
    let pid = std::process::id();
    (0..1000)
        .map(|i| parent.join(format!(".{name}.previous-{pid}-{i}")))
        .find(|p| fs::symlink_metadata(p).is_err())
        .ok_or_else(|| ReportError::Io {
            action: "find a free name beside",
            path: destination.to_owned(),
            source: std::io::Error::other("1000 names were taken"),
        })
}
