//! Writers: every file goes through [`write_atomically`], so a failed or interrupted write never
//! leaves a half-written file where a good one was.

use std::fmt::Write as _;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

#[cfg(feature = "parquet")]
use std::sync::Arc;

use faer::MatRef;
#[cfg(feature = "parquet")]
use parquet::basic::{Compression, Repetition, Type as PhysicalType};
#[cfg(feature = "parquet")]
use parquet::data_type::DoubleType;
#[cfg(feature = "parquet")]
use parquet::file::properties::WriterProperties;
#[cfg(feature = "parquet")]
use parquet::file::writer::SerializedFileWriter;
#[cfg(feature = "parquet")]
use parquet::schema::types::Type;

use crate::error::{IoError, Result};
use crate::format::npy;

/// The extensions [`write_matrix`] knows.
const MATRIX_EXTENSIONS: &str = ".npy, .csv, .tsv, .parquet, .pq";

/// Values per Parquet row group (64 MiB of f64): big enough for fast scans, small enough that
/// readers stream a file a row group at a time.
const ROW_GROUP_VALUES: usize = 1 << 23;

/// The most columns a Parquet output may have. The writer keeps every column of its open row
/// group in memory (about 5.5 KB of encoder state each, measured) and buffers a row group of
/// at least 1,024 rows: at this width about 55 MB and 82 MB, bounded whatever the rows. Wider
/// results go to NPY, CSV or TSV, which write a row at a time.
pub const MAX_PARQUET_COLUMNS: usize = 10_000;

/// Distinguishes temporary files of concurrent writes from one process to the same path.
static TEMP_COUNTER: AtomicUsize = AtomicUsize::new(0);

/// Writes a file atomically: `write` fills a temporary file in the same directory
/// (`.NAME.tmp-PID-K`), which is flushed, synced, and renamed over `path` only when `write`
/// succeeded. On any error the temporary file is removed and an existing file at `path` is
/// left untouched.
pub fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<()> {
    let (staged, file) = Staged::create(path)?;
    let mut out = BufWriter::new(file);
    let written = write(&mut out).and_then(|()| out.into_inner().map_err(|e| e.into_error()));
    match written {
        Ok(file) => staged.commit(file),
        Err(e) => Err(staged.fail(e)),
    }
}

/// Edits a file atomically: `path` is copied to a temporary file in the same directory, `edit`
/// changes the copy (given its path), and the copy is synced and renamed over `path` only when
/// `edit` succeeded. On any error the copy is removed and `path` is left as it was.
// Used by `transform --into`'s .h5ad writer only.
#[cfg_attr(not(feature = "h5ad"), allow(dead_code))]
pub(crate) fn edit_atomically(path: &Path, edit: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
    let (staged, mut file) = Staged::create(path)?;
    let copied = File::open(path).and_then(|mut original| io::copy(&mut original, &mut file));
    if let Err(e) = copied {
        return Err(staged.fail(e));
    }
    drop(file);
    edit(&staged.temp)?;
    match OpenOptions::new().write(true).open(&staged.temp) {
        Ok(file) => staged.commit(file),
        Err(e) => Err(staged.fail(e)),
    }
}

/// A temporary file in the destination's directory (`.NAME.tmp-PID-K`) that becomes the
/// destination on [`Staged::commit`]; dropped without that (an error, a panic), it is removed
/// and the destination is left as it was.
#[derive(Debug)]
struct Staged {
    path: PathBuf,
    temp: PathBuf,
    dir: PathBuf,
    committed: bool,
}

impl Staged {
    fn create(path: &Path) -> Result<(Staged, File)> {
        let err = |source| IoError::Write {
            path: path.to_owned(),
            source,
        };
        let name = path.file_name().ok_or_else(|| {
            err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the path does not name a file",
            ))
        })?;
        // Same directory: a rename across file systems would not be atomic (or would fail).
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
            _ => PathBuf::from("."),
        };
        let (temp, file) = create_temp(&dir, &name.to_string_lossy()).map_err(err)?;
        let staged = Staged {
            path: path.to_owned(),
            temp,
            dir,
            committed: false,
        };
        Ok((staged, file))
    }

    /// The error for `path`; the temporary file goes when `self` is dropped.
    fn fail(self, source: io::Error) -> IoError {
        IoError::Write {
            path: self.path.clone(),
            source,
        }
    }

    /// Syncs the written file and renames it over the destination.
    fn commit(mut self, file: File) -> Result<()> {
        let done = file.sync_all().and_then(|()| {
            drop(file);
            fs::rename(&self.temp, &self.path)
        });
        if let Err(e) = done {
            return Err(self.fail(e));
        }
        self.committed = true;
        // Makes the rename itself durable; not possible on every platform, so best effort.
        if let Ok(d) = File::open(&self.dir) {
            let _ = d.sync_all();
        }
        Ok(())
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.committed {
            let _ = fs::remove_file(&self.temp);
        }
    }
}

fn create_temp(dir: &Path, name: &str) -> io::Result<(PathBuf, File)> {
    loop {
        let k = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
        let temp = dir.join(format!(".{name}.tmp-{}-{k}", std::process::id()));
        match OpenOptions::new().write(true).create_new(true).open(&temp) {
            Ok(file) => return Ok((temp, file)),
            // Left behind by a killed process with a recycled id: try the next name.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Writes a matrix by extension (case-insensitive): `.npy` (f64, C order, little-endian),
/// `.csv` or `.tsv` (a header line from `column_names` when given; values printed with Rust's
/// shortest round-trip formatting, so reading them back gives the same f64), `.parquet` or
/// `.pq` (one non-null Float64 column per matrix column, named by `column_names` or `c1..cN`;
/// Snappy-compressed, no dictionary, row groups of about 64 MiB; at most
/// [`MAX_PARQUET_COLUMNS`] columns). NPY has no place for column names; they
/// are not written there.
///
/// The whole matrix at once; [`MatrixWriter`] writes one a block of rows at a time.
pub fn write_matrix(
    path: &Path,
    data: MatRef<'_, f64>,
    column_names: Option<&[String]>,
) -> Result<()> {
    let mut out = MatrixWriter::create(path, data.ncols(), column_names)?;
    out.write_rows(data)?;
    out.finish()
}

/// Writes a matrix a block of rows at a time, in the formats of [`write_matrix`], for results
/// too large to hold: the rows go to a temporary file beside `path`, which becomes `path` on
/// [`MatrixWriter::finish`]. Dropped before that (an error on the way, a panic), the temporary
/// file is removed and an existing file at `path` is left as it was.
///
/// ```
/// # let dir = tempfile::TempDir::new().unwrap();
/// # let path = dir.path().join("codes.npy");
/// use principal_io::{read_table, MatrixWriter, ReadOptions};
/// use principal_io::Mat;
///
/// let mut out = MatrixWriter::create(&path, 2, None)?;
/// for start in [0.0, 10.0] {
///     out.write_rows(Mat::from_fn(3, 2, |i, j| start + (2 * i + j) as f64).as_ref())?;
/// }
/// out.finish()?;
/// let back = read_table(&[path], &ReadOptions::default())?;
/// assert_eq!((back.data.nrows(), back.data.ncols()), (6, 2));
/// # Ok::<(), principal_io::IoError>(())
/// ```
#[derive(Debug)]
pub struct MatrixWriter {
    staged: Staged,
    sink: Sink,
    ncols: usize,
    rows: u64,
}

/// Where the rows go, by format.
// One per output file, so its size does not matter; with Parquet's variant (the largest) the
// lint does not fire.
#[cfg_attr(not(feature = "parquet"), allow(clippy::large_enum_variant))]
enum Sink {
    Npy(BufWriter<File>),
    Delimited(::csv::Writer<BufWriter<File>>),
    #[cfg(feature = "parquet")]
    Parquet(ParquetSink),
}

#[cfg(feature = "parquet")]
/// A Parquet file being written: the rows of the open row group, held by column until the
/// group is full, then written one column after the other (so only one column's encoder is
/// alive at a time).
struct ParquetSink {
    writer: SerializedFileWriter<BufWriter<File>>,
    /// The open row group's values, one vector per column.
    columns: Vec<Vec<f64>>,
    group_rows: usize,
}

impl std::fmt::Debug for Sink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Sink::Npy(_) => "Npy",
            Sink::Delimited(_) => "Delimited",
            #[cfg(feature = "parquet")]
            Sink::Parquet(_) => "Parquet",
        })
    }
}

impl MatrixWriter {
    /// Starts a file of `ncols` columns at `path`, its format by extension as in
    /// [`write_matrix`]; `column_names`, when given, must be `ncols` names.
    pub fn create(path: &Path, ncols: usize, column_names: Option<&[String]>) -> Result<Self> {
        Self::with_row_groups(path, ncols, column_names, row_group_rows(ncols))
    }

    /// [`MatrixWriter::create`] with Parquet row groups of `group_rows` rows.
    fn with_row_groups(
        path: &Path,
        ncols: usize,
        column_names: Option<&[String]>,
        group_rows: usize,
    ) -> Result<Self> {
        let extension = path
            .extension()
            .map(|e| e.to_string_lossy().to_lowercase())
            .unwrap_or_default();
        if !matches!(extension.as_str(), "npy" | "csv" | "tsv" | "parquet" | "pq") {
            return Err(IoError::UnknownExtension {
                path: path.to_owned(),
                extension: if extension.is_empty() {
                    "(none)".into()
                } else {
                    format!(".{extension}")
                },
                allowed: MATRIX_EXTENSIONS,
            });
        }
        #[cfg(not(feature = "parquet"))]
        if matches!(extension.as_str(), "parquet" | "pq") {
            return Err(crate::error::Gated::Parquet.error(path, "written"));
        }
        IoError::check_name_count(path, column_names, ncols)?;
        // Refused before the temporary file exists: running out of memory later would abort
        // with no chance to remove it.
        if matches!(extension.as_str(), "parquet" | "pq") && ncols > MAX_PARQUET_COLUMNS {
            return Err(IoError::TooWideForParquet {
                path: path.to_owned(),
                columns: ncols,
                max: MAX_PARQUET_COLUMNS,
            });
        }
        let (staged, file) = Staged::create(path)?;
        let mut out = BufWriter::new(file);
        let sink = match extension.as_str() {
            // The row count is written in place by `finish`.
            "npy" => out
                .write_all(&npy::f64_header(0, ncols))
                .map(|()| Sink::Npy(out)),
            "csv" | "tsv" => {
                // The csv writer quotes names that hold the delimiter, quotes or newlines.
                let mut csv = ::csv::WriterBuilder::new()
                    .delimiter(if extension == "csv" { b',' } else { b'\t' })
                    .from_writer(out);
                match column_names {
                    Some(names) => csv.write_record(names).map_err(io::Error::from),
                    None => Ok(()),
                }
                .map(|()| Sink::Delimited(csv))
            }
            #[cfg(feature = "parquet")]
            _ => parquet_sink(out, ncols, column_names, group_rows),
            #[cfg(not(feature = "parquet"))]
            _ => unreachable!("Parquet ({group_rows} rows a group) is refused above"),
        };
        match sink {
            Ok(sink) => Ok(MatrixWriter {
                staged,
                sink,
                ncols,
                rows: 0,
            }),
            Err(e) => Err(staged.fail(e)),
        }
    }

    /// Appends rows (as many columns as the file was created with).
    pub fn write_rows(&mut self, data: MatRef<'_, f64>) -> Result<()> {
        assert_eq!(
            data.ncols(),
            self.ncols,
            "MatrixWriter::write_rows: {} columns into a file of {}",
            data.ncols(),
            self.ncols
        );
        let written = match &mut self.sink {
            Sink::Npy(out) => npy::write_f64_rows(out, data),
            Sink::Delimited(out) => write_delimited_rows(out, data),
            #[cfg(feature = "parquet")]
            Sink::Parquet(sink) => sink.write_rows(data),
        };
        written.map_err(|e| IoError::Write {
            path: self.staged.path.clone(),
            source: e,
        })?;
        self.rows += data.nrows() as u64;
        Ok(())
    }

    /// Rows written so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Completes the file (NPY: its row count; Parquet: its footer), syncs it and puts it at
    /// its path.
    pub fn finish(self) -> Result<()> {
        let MatrixWriter {
            staged,
            sink,
            ncols,
            rows,
        } = self;
        let file = match sink {
            Sink::Npy(out) => out
                .into_inner()
                .map_err(|e| e.into_error())
                .and_then(|mut file| {
                    file.seek(SeekFrom::Start(0))?;
                    file.write_all(&npy::f64_header(rows, ncols))?;
                    Ok(file)
                }),
            Sink::Delimited(out) => out
                .into_inner()
                .map_err(|e| e.into_error())
                .and_then(|out| out.into_inner().map_err(|e| e.into_error())),
            #[cfg(feature = "parquet")]
            Sink::Parquet(sink) => sink
                .finish()
                .and_then(|out| out.into_inner().map_err(|e| e.into_error())),
        };
        match file {
            Ok(file) => staged.commit(file),
            Err(e) => Err(staged.fail(e)),
        }
    }
}

/// Rows per Parquet row group for rows of `d` values.
fn row_group_rows(d: usize) -> usize {
    (ROW_GROUP_VALUES / d.max(1)).clamp(1024, 1 << 20)
}

#[cfg(feature = "parquet")]
fn parquet_sink(
    out: BufWriter<File>,
    d: usize,
    column_names: Option<&[String]>,
    group_rows: usize,
) -> io::Result<Sink> {
    let fields = (0..d)
        .map(|j| {
            let name = column_names.map_or_else(|| format!("c{}", j + 1), |c| c[j].clone());
            Type::primitive_type_builder(&name, PhysicalType::DOUBLE)
                .with_repetition(Repetition::REQUIRED)
                .build()
                .map(Arc::new)
        })
        .collect::<parquet::errors::Result<Vec<_>>>()
        .map_err(parquet_io)?;
    let schema = Type::group_type_builder("schema")
        .with_fields(fields)
        .build()
        .map_err(parquet_io)?;
    // No dictionary: float columns rarely repeat a value, and each column's dictionary
    // encoder held about 65 KB while its row group was open (30 rows × 10,000 columns took
    // 0.7 GB; without it 0.05 GB).
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_dictionary_enabled(false)
        .build();
    let writer =
        SerializedFileWriter::new(out, Arc::new(schema), Arc::new(props)).map_err(parquet_io)?;
    Ok(Sink::Parquet(ParquetSink {
        writer,
        columns: vec![Vec::new(); d],
        group_rows,
    }))
}

#[cfg(feature = "parquet")]
/// A `parquet` writer's error as an I/O error: the file's own (a full disk) keeps its kind.
fn parquet_io(e: parquet::errors::ParquetError) -> io::Error {
    match e {
        parquet::errors::ParquetError::External(source) => match source.downcast::<io::Error>() {
            Ok(e) => *e,
            Err(other) => io::Error::other(other),
        },
        e => io::Error::other(e),
    }
}

#[cfg(feature = "parquet")]
impl ParquetSink {
    /// Rows into the open row group, which is written out each time it holds `group_rows`
    /// rows: row groups are cut across calls.
    fn write_rows(&mut self, data: MatRef<'_, f64>) -> io::Result<()> {
        let n = data.nrows();
        let mut start = 0;
        while start < n {
            let open = self.columns.first().map_or(0, Vec::len);
            let rows = (self.group_rows - open).min(n - start);
            for (j, column) in self.columns.iter_mut().enumerate() {
                let col = data.col(j).subrows(start, rows);
                column.extend((0..rows).map(|i| col[i]));
            }
            start += rows;
            if open + rows == self.group_rows {
                self.write_group()?;
            }
        }
        Ok(())
    }

    /// Writes the open row group (if it has rows), a column at a time.
    fn write_group(&mut self) -> io::Result<()> {
        if self.columns.first().is_none_or(Vec::is_empty) {
            return Ok(());
        }
        let mut group = self.writer.next_row_group().map_err(parquet_io)?;
        for values in &mut self.columns {
            let Some(mut column) = group.next_column().map_err(parquet_io)? else {
                return Err(io::Error::other(
                    "the Parquet writer has fewer columns than the data",
                ));
            };
            column
                .typed::<DoubleType>()
                .write_batch(values, None, None)
                .map_err(parquet_io)?;
            column.close().map_err(parquet_io)?;
            values.clear();
        }
        group.close().map_err(parquet_io)?;
        Ok(())
    }

    /// Writes the last row group and the footer.
    fn finish(mut self) -> io::Result<BufWriter<File>> {
        self.write_group()?;
        self.writer.into_inner().map_err(parquet_io)
    }
}

fn write_delimited_rows(
    out: &mut ::csv::Writer<BufWriter<File>>,
    data: MatRef<'_, f64>,
) -> io::Result<()> {
    let mut text = String::new();
    for i in 0..data.nrows() {
        for j in 0..data.ncols() {
            text.clear();
            let _ = write!(text, "{}", data[(i, j)]);
            out.write_field(&text)?;
        }
        out.write_record(None::<&[u8]>)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use tempfile::TempDir;

    use super::*;
    use crate::test_util::*;
    use crate::{HeaderMode, Mat, Matrix, ReadOptions, RowMajorMat, read_table};

    fn leftovers(dir: &Path) -> Vec<String> {
        fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains(".tmp-"))
            .collect()
    }

    /// Of `names`, those whose format this build writes (Parquet's behind its feature).
    fn written<'a>(names: &[&'a str]) -> Vec<&'a str> {
        let parquet = |n: &str| {
            let n = n.to_lowercase();
            n.ends_with("parquet") || n.ends_with("pq")
        };
        names
            .iter()
            .copied()
            .filter(|n| cfg!(feature = "parquet") || !parquet(n))
            .collect()
    }

    fn sample() -> Mat<f64> {
        Mat::from_fn(3, 2, |i, j| {
            [[0.1, -2.5e-12], [1e300, 7.0], [1.0 / 3.0, -0.0]][i][j]
        })
    }

    #[test]
    fn matrices_round_trip_exactly_in_every_format() {
        let dir = TempDir::new().unwrap();
        let m = sample();
        let header = names(&["first, with comma", "second \"quoted\""]);
        for name in written(&["m.npy", "m.csv", "m.tsv", "UPPER.CSV", "m.parquet", "m.PQ"]) {
            let path = dir.path().join(name);
            write_matrix(&path, m.as_ref(), header.as_deref()).unwrap();
            let t = read_table(&[path], &ReadOptions::default()).unwrap();
            assert_eq!(
                t.data,
                Matrix::F64(RowMajorMat::from_mat_ref(m.as_ref())),
                "{name}"
            );
            let expect_names = if name.ends_with(".npy") {
                None
            } else {
                header.clone()
            };
            assert_eq!(t.column_names, expect_names, "{name}");
        }
        write_matrix(&dir.path().join("plain.csv"), m.as_ref(), None).unwrap();
        let text = fs::read_to_string(dir.path().join("plain.csv")).unwrap();
        assert!(text.starts_with("0.1,-0.0000000000025\n"), "{text}");
        assert_eq!(leftovers(dir.path()), Vec::<String>::new());
    }

    #[test]
    fn unknown_extension_and_name_count_are_errors() {
        let dir = TempDir::new().unwrap();
        let e = write_matrix(&dir.path().join("m.xlsx"), sample().as_ref(), None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(
                "unknown extension \".xlsx\"; the allowed ones are .npy, .csv, .tsv, .parquet, .pq"
            ),
            "{e}"
        );
        let e = write_matrix(&dir.path().join("m"), sample().as_ref(), None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown extension \"(none)\""), "{e}");
        let e = write_matrix(
            &dir.path().join("m.csv"),
            sample().as_ref(),
            names(&["a"]).as_deref(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("1 column name(s) given for 2 column(s)"), "{e}");
        assert!(!dir.path().join("m.csv").exists());
    }

    #[cfg(feature = "parquet")]
    #[test]
    fn parquet_output_has_named_float64_columns_in_row_groups() {
        let dir = TempDir::new().unwrap();
        assert_eq!(row_group_rows(1), 1 << 20);
        assert_eq!(row_group_rows(64), 1 << 17);
        assert_eq!(row_group_rows(1 << 20), 1024);
        let path = dir.path().join("codes.parquet");
        let (n, d) = (5000, 3);
        let m = Mat::from_fn(n, d, |i, j| (i * d + j) as f64 * 0.5);
        // Blocks that do not line up with the row groups: the groups are cut across them.
        let mut out = MatrixWriter::with_row_groups(&path, d, None, 2048).unwrap();
        for (start, rows) in [(0, 1000), (1000, 0), (1000, 3001), (4001, 999)] {
            out.write_rows(m.as_ref().subrows(start, rows)).unwrap();
        }
        out.finish().unwrap();
        use parquet::file::reader::FileReader;
        let reader =
            parquet::file::reader::SerializedFileReader::new(File::open(&path).unwrap()).unwrap();
        let meta = reader.metadata();
        assert_eq!(meta.num_row_groups(), 3);
        assert_eq!(meta.row_group(2).num_rows(), 5000 - 2 * 2048);
        let schema = meta.file_metadata().schema_descr();
        assert_eq!(schema.column(0).name(), "c1");
        assert_eq!(schema.column(d - 1).name(), "c3");
        assert!(schema.columns().iter().all(|c| {
            c.physical_type() == PhysicalType::DOUBLE
                && c.self_type().get_basic_info().repetition() == Repetition::REQUIRED
        }));
        let t = read_table(&[path], &ReadOptions::default()).unwrap();
        assert_eq!(t.data, Matrix::F64(RowMajorMat::from_mat_ref(m.as_ref())));
        assert_eq!(t.column_names.unwrap()[1], "c2");
        assert_eq!(leftovers(dir.path()), Vec::<String>::new());
        // A row-major (transposed) view writes the same.
        let small = sample();
        let t_view = small.transpose().to_owned();
        let path = dir.path().join("t.pq");
        write_matrix(&path, t_view.transpose(), None).unwrap();
        assert_eq!(
            read_table(&[path], &ReadOptions::default()).unwrap().data,
            Matrix::F64(RowMajorMat::from_mat_ref(small.as_ref()))
        );
    }

    #[cfg(not(feature = "parquet"))]
    #[test]
    fn parquet_output_names_the_missing_feature_and_leaves_the_old_file() {
        let dir = TempDir::new().unwrap();
        for name in ["codes.parquet", "codes.PQ"] {
            let path = dir.path().join(name);
            fs::write(&path, "old contents\n").unwrap();
            let e = write_matrix(&path, sample().as_ref(), None).unwrap_err();
            assert!(
                matches!(
                    e,
                    IoError::FormatNotBuilt {
                        feature: "parquet",
                        ..
                    }
                ),
                "{e:?}"
            );
            assert_eq!(
                e.to_string(),
                format!(
                    "{}: Parquet files are not written by this build of principal (built \
                     without the cargo feature \"parquet\"; the default build has it: cargo \
                     build --release)",
                    path.display()
                )
            );
            assert_eq!(fs::read_to_string(&path).unwrap(), "old contents\n");
        }
        assert_eq!(leftovers(dir.path()), Vec::<String>::new());
    }

    #[test]
    fn failed_write_leaves_the_old_file_and_no_temporary() {
        let dir = TempDir::new().unwrap();
        let path = dir.path().join("out.csv");
        fs::write(&path, "old contents\n").unwrap();
        let e = write_atomically(&path, |w| {
            w.write_all(b"half of the new")?;
            Err(io::Error::other("disk on fire"))
        })
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("cannot write {}: disk on fire", path.display())
        );
        assert_eq!(fs::read_to_string(&path).unwrap(), "old contents\n");
        assert_eq!(leftovers(dir.path()), Vec::<String>::new());
        write_atomically(&path, |w| w.write_all(b"new\n")).unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "new\n");
        assert_eq!(leftovers(dir.path()), Vec::<String>::new());
    }

    #[test]
    fn missing_directory_is_an_error() {
        let dir = TempDir::new().unwrap();
        let path = dir.path().join("no/such/dir/out.npy");
        let e = write_matrix(&path, sample().as_ref(), None)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(&format!("cannot write {}", path.display())),
            "{e}"
        );
    }

    #[test]
    fn a_path_without_a_file_name_is_an_error() {
        let e = write_atomically(Path::new("/"), |_| Ok(()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("does not name a file"), "{e}");
    }

    #[test]
    fn blocks_of_rows_write_the_same_file_as_the_whole() {
        let dir = TempDir::new().unwrap();
        let (n, d) = (1000, 4);
        let m = Mat::from_fn(n, d, |i, j| ((i * d + j) as f64).sqrt() - 7.0);
        let header = names(&["a", "b", "c", "d"]);
        for ext in written(&["npy", "csv", "tsv", "parquet"]) {
            let whole = dir.path().join(format!("whole.{ext}"));
            write_matrix(&whole, m.as_ref(), header.as_deref()).unwrap();
            let blocks = dir.path().join(format!("blocks.{ext}"));
            let mut out = MatrixWriter::create(&blocks, d, header.as_deref()).unwrap();
            for (start, rows) in [(0, 0), (0, 1), (1, 498), (499, 0), (499, 500), (999, 1)] {
                out.write_rows(m.as_ref().subrows(start, rows)).unwrap();
            }
            assert_eq!(out.rows(), n as u64);
            assert!(
                !blocks.exists(),
                "{ext}: the file appears only when finished"
            );
            out.finish().unwrap();
            assert_eq!(
                fs::read(&whole).unwrap(),
                fs::read(&blocks).unwrap(),
                "{ext}"
            );
            let t = read_table(&[blocks], &ReadOptions::default()).unwrap();
            assert_eq!(
                t.data,
                Matrix::F64(RowMajorMat::from_mat_ref(m.as_ref())),
                "{ext}"
            );
        }
        // No rows at all: an NPY of shape (0, d), as numpy writes it.
        let empty = dir.path().join("empty.npy");
        MatrixWriter::create(&empty, d, None)
            .unwrap()
            .finish()
            .unwrap();
        let bytes = fs::read(&empty).unwrap();
        let header = String::from_utf8_lossy(&bytes[10..]);
        assert!(header.contains("'shape': (0, 4), }"), "{header}");
        assert_eq!(bytes.len() % 64, 0);
        assert_eq!(leftovers(dir.path()), Vec::<String>::new());
    }

    #[test]
    fn an_unfinished_writer_leaves_the_old_file_and_no_temporary() {
        let dir = TempDir::new().unwrap();
        let m = sample();
        for ext in written(&["npy", "csv", "parquet"]) {
            let path = dir.path().join(format!("out.{ext}"));
            fs::write(&path, "old contents\n").unwrap();
            let mut out = MatrixWriter::create(&path, m.ncols(), None).unwrap();
            out.write_rows(m.as_ref()).unwrap();
            assert_eq!(
                leftovers(dir.path()).len(),
                1,
                "{ext}: written to a temporary"
            );
            drop(out); // as on an error in the rows that were still to come
            assert_eq!(
                fs::read_to_string(&path).unwrap(),
                "old contents\n",
                "{ext}"
            );
            assert_eq!(leftovers(dir.path()), Vec::<String>::new(), "{ext}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]
        #[test]
        fn csv_round_trips_any_finite_value(values in prop::collection::vec(any::<f64>().prop_filter("finite", |v| v.is_finite()), 1..40)) {
            let dir = TempDir::new().unwrap();
            let m = Mat::from_fn(values.len(), 1, |i, _| values[i]);
            let path = dir.path().join("v.csv");
            write_matrix(&path, m.as_ref(), None).unwrap();
            let options = ReadOptions { header: HeaderMode::Absent, ..Default::default() };
            let t = read_table(&[path], &options).unwrap();
            let back = t.data.to_f64();
            for (i, v) in values.iter().enumerate() {
                prop_assert_eq!(back[(i, 0)].to_bits(), v.to_bits());
            }
        }
    }
}
