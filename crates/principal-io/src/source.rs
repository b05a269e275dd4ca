//! Opening files (gzip and format detection), column selection, the streaming reader that
//! dispatches to the CSV, NPY, IDX, Parquet and Arrow readers, and [`FileSource`], which reads
//! ahead on a thread while the solver computes.

use std::fs::File;
use std::io::{self, BufReader, Cursor, Read};
use std::path::{Path, PathBuf};
use std::sync::mpsc;

use faer::MatRef;
use flate2::bufread::MultiGzDecoder;

use crate::binary::BinaryRows;
use crate::columnar::{self, ColumnarSource, Dst};
use crate::csv::CsvSource;
use crate::error::Column;
use crate::{
    expand_inputs, idx, npy, ColumnSelector, IoError, Matrix, ReadOptions, Result, RowMajorMat,
};

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
const PARQUET_MAGIC: &[u8] = b"PAR1";
const ARROW_MAGIC: &[u8] = b"ARROW1";
/// An Arrow IPC stream starts with a continuation marker before its schema message.
const ARROW_STREAM_MAGIC: &[u8] = &[0xff, 0xff, 0xff, 0xff];
const FEATHER_V1_MAGIC: &[u8] = b"FEA1";
/// Large reads: data files are read sequentially, often from slow disks or gzip.
const BUFFER: usize = 1 << 16;

/// The format of a file's (decompressed) content.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    /// Delimited text with this delimiter.
    Text(u8),
    Npy,
    Idx,
    Parquet,
    ArrowFile,
    ArrowStream,
}

/// A file opened for reading: decompressed if needed, its first bytes already classified.
pub(crate) struct Opened {
    pub reader: Box<dyn Read + Send>,
    pub format: Format,
    /// The file's size when it is a regular, uncompressed file (then truncation is checked up
    /// front); `None` for gzip and pipes, whose length shows only at the end.
    pub file_len: Option<u64>,
    /// Gzip-compressed: sizes in messages are of the decompressed content.
    pub compressed: bool,
}

/// Reads until `buf` is full or the stream ends; returns the bytes read.
pub(crate) fn read_full(reader: &mut dyn Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match reader.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Reads the first `n` bytes and returns them with a reader that yields them again.
fn peek<R: Read + Send + 'static>(
    mut reader: R,
    n: usize,
) -> io::Result<(Vec<u8>, Box<dyn Read + Send>)> {
    let mut prefix = vec![0; n];
    let got = read_full(&mut reader, &mut prefix)?;
    prefix.truncate(got);
    Ok((prefix.clone(), Box::new(Cursor::new(prefix).chain(reader))))
}

/// The lower-case file name without a trailing `.gz`.
fn inner_name(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    name.strip_suffix(".gz").map(str::to_owned).unwrap_or(name)
}

/// Whether bytes start like an IDX file: two zero bytes, a known type code, a dimension count.
pub(crate) fn is_idx_magic(b: &[u8]) -> bool {
    b.len() >= 4 && b[0] == 0 && b[1] == 0 && idx::elem_of(b[2]).is_some() && b[3] >= 1
}

/// Opens `path`, decompresses gzip (detected by magic bytes, whatever the name), and decides
/// the format from the content's first bytes, then the extension.
pub(crate) fn open(path: &Path) -> Result<Opened> {
    let open_err = |source| IoError::Open {
        path: path.to_owned(),
        source,
    };
    let read_err = |source| IoError::Read {
        path: path.to_owned(),
        source,
    };
    let file = File::open(path).map_err(open_err)?;
    let meta = file.metadata().map_err(open_err)?;
    if meta.is_dir() {
        return Err(open_err(io::Error::other("it is a directory")));
    }
    let (magic, raw) = peek(BufReader::with_capacity(BUFFER, file), 2).map_err(read_err)?;
    let compressed = magic == GZIP_MAGIC;
    let stream: Box<dyn Read + Send> = if compressed {
        Box::new(BufReader::with_capacity(
            BUFFER,
            MultiGzDecoder::new(BufReader::new(raw)),
        ))
    } else {
        raw
    };
    let (head, reader) = peek(stream, 6).map_err(read_err)?;
    let name = inner_name(path);
    let file_len = (!compressed && meta.is_file()).then_some(meta.len());
    let format_err = |detail: &str| {
        Err(IoError::Format {
            path: path.to_owned(),
            detail: detail.to_owned(),
        })
    };
    let arrow_name = [".arrow", ".arrows", ".feather", ".ipc"]
        .iter()
        .any(|e| name.ends_with(e));
    let format = if head.starts_with(npy::MAGIC) {
        Format::Npy
    } else if is_idx_magic(&head) {
        Format::Idx
    } else if head.starts_with(PARQUET_MAGIC) || head.starts_with(ARROW_MAGIC) {
        // Both are read from their footer: they need a seekable file.
        if compressed {
            return format_err(
                "gzip-compressed Parquet and Arrow files cannot be read (their data is found \
                 through a footer, which needs seeking): decompress the file first; Parquet and \
                 Arrow compress their data themselves",
            );
        }
        if head.starts_with(PARQUET_MAGIC) {
            Format::Parquet
        } else {
            Format::ArrowFile
        }
    } else if head.starts_with(ARROW_STREAM_MAGIC) {
        Format::ArrowStream
    } else if name.ends_with(".parquet") || name.ends_with(".pq") {
        return format_err(
            "the name says Parquet but the content does not start with the Parquet magic bytes PAR1",
        );
    } else if arrow_name && head.starts_with(FEATHER_V1_MAGIC) {
        return format_err(
            "Feather version 1 files cannot be read; rewrite it as Feather version 2 (Arrow IPC), \
             e.g. with pyarrow.feather.write_feather",
        );
    } else if arrow_name {
        return format_err(
            "the name says Arrow IPC but the content starts neither with the Arrow file magic \
             bytes ARROW1 nor as an Arrow IPC stream",
        );
    } else if name.ends_with(".npy") {
        return Err(IoError::Format {
            path: path.to_owned(),
            detail: "the name ends in .npy but the content does not start with the NPY magic bytes"
                .into(),
        });
    } else if name.ends_with(".tsv") || name.ends_with(".tab") {
        Format::Text(b'\t')
    } else if name.ends_with(".csv") {
        Format::Text(b',')
    } else {
        // .txt and other names: tab-separated when the first line has tabs and no comma.
        let (line, reader) = peek(reader, 64 * 1024).map_err(read_err)?;
        let first = line.split(|&b| b == b'\n').next().unwrap_or(&[]);
        let tab = first.contains(&b'\t') && !first.contains(&b',');
        return Ok(Opened {
            reader,
            format: Format::Text(if tab { b'\t' } else { b',' }),
            file_len,
            compressed,
        });
    };
    Ok(Opened {
        reader,
        format,
        file_len,
        compressed,
    })
}

/// Resolves `columns` and `exclude` against a file of `width` columns (with header `names`
/// when it has one) into the 0-based indices to keep, in order.
pub(crate) fn resolve_columns(
    path: &Path,
    width: usize,
    names: Option<&[String]>,
    options: &ReadOptions,
) -> Result<Vec<usize>> {
    let index_of = |sel: &ColumnSelector| -> Result<usize> {
        match sel {
            ColumnSelector::Index(i) if *i < width => Ok(*i),
            ColumnSelector::Index(i) => Err(IoError::ColumnOutOfRange {
                path: path.to_owned(),
                index: *i,
                count: width,
            }),
            ColumnSelector::Name(name) => {
                let Some(names) = names else {
                    return Err(IoError::NoHeader {
                        path: path.to_owned(),
                        name: name.clone(),
                    });
                };
                let mut hits = names
                    .iter()
                    .enumerate()
                    .filter(|(_, n)| *n == name)
                    .map(|(i, _)| i);
                match (hits.next(), hits.next()) {
                    (Some(i), None) => Ok(i),
                    (Some(first), Some(second)) => Err(IoError::AmbiguousColumn {
                        path: path.to_owned(),
                        name: name.clone(),
                        first: first + 1,
                        second: second + 1,
                    }),
                    (None, _) => Err(IoError::UnknownColumn {
                        path: path.to_owned(),
                        name: name.clone(),
                        available: names.to_vec(),
                    }),
                }
            }
        }
    };
    let mut kept: Vec<usize> = match &options.columns {
        Some(selection) => {
            let mut kept = Vec::with_capacity(selection.len());
            for sel in selection {
                let i = index_of(sel)?;
                if kept.contains(&i) {
                    return Err(IoError::DuplicateColumn {
                        path: path.to_owned(),
                        column: column_label(i, names),
                    });
                }
                kept.push(i);
            }
            kept
        }
        None => (0..width).collect(),
    };
    let mut excluded = Vec::with_capacity(options.exclude.len());
    for sel in &options.exclude {
        excluded.push(index_of(sel)?);
    }
    kept.retain(|i| !excluded.contains(i));
    if kept.is_empty() {
        return Err(IoError::NoColumns {
            path: path.to_owned(),
            available: width,
        });
    }
    Ok(kept)
}

/// The message label of 0-based column `i`.
pub(crate) fn column_label(i: usize, names: Option<&[String]>) -> Column {
    Column {
        number: i + 1,
        name: names.and_then(|n| n.get(i)).cloned(),
    }
}

/// Rows being collected, row-major, in the element type of the whole stream.
pub(crate) enum RowBuf {
    F32(Vec<f32>),
    F64(Vec<f64>),
}

impl RowBuf {
    /// Empties the buffer, keeping its allocation.
    fn clear(&mut self) {
        match self {
            RowBuf::F32(v) => v.clear(),
            RowBuf::F64(v) => v.clear(),
        }
    }

    /// Makes the buffer f64 (a no-op when it is).
    pub(crate) fn widen(&mut self) {
        if let RowBuf::F32(v) = self {
            *self = RowBuf::F64(v.iter().map(|&x| f64::from(x)).collect());
        }
    }

    /// Appends `n` zeros and returns them, to be filled in place.
    pub(crate) fn grow(&mut self, n: usize) -> Dst<'_> {
        match self {
            RowBuf::F32(v) => {
                let start = v.len();
                v.resize(start + n, 0.0);
                Dst::F32(&mut v[start..])
            }
            RowBuf::F64(v) => {
                let start = v.len();
                v.resize(start + n, 0.0);
                Dst::F64(&mut v[start..])
            }
        }
    }

    #[inline]
    pub(crate) fn push_f64(&mut self, v: f64) {
        match self {
            RowBuf::F64(b) => b.push(v),
            // Never reached (the stream is f64 when any shard is), but widening is always safe.
            RowBuf::F32(_) => {
                self.widen();
                self.push_f64(v);
            }
        }
    }

    /// The buffer (exactly `nrows` rows) as a matrix: moved, not copied.
    fn into_matrix(self, nrows: usize, ncols: usize) -> Matrix {
        /// Spare capacity (from growing while the row count was unknown) is handed back:
        /// a no-op when the buffer was reserved exactly, and for large buffers a shrink in
        /// place rather than a copy.
        fn fit<T>(mut v: Vec<T>, nrows: usize, ncols: usize) -> RowMajorMat<T> {
            v.shrink_to_fit();
            RowMajorMat::new(v, nrows, ncols)
        }
        match self {
            RowBuf::F32(b) => Matrix::F32(fit(b, nrows, ncols)),
            RowBuf::F64(b) => Matrix::F64(fit(b, nrows, ncols)),
        }
    }
}

/// One open shard, whatever its format.
enum Source {
    Csv(Box<CsvSource>),
    Binary(BinaryRows),
    Columnar(Box<ColumnarSource>),
}

impl Source {
    fn open(path: &Path, options: &ReadOptions) -> Result<Source> {
        let opened = open(path)?;
        let columnar = matches!(
            opened.format,
            Format::Parquet | Format::ArrowFile | Format::ArrowStream
        );
        if options.list_column.is_some() && !columnar {
            return Err(IoError::Format {
                path: path.to_owned(),
                detail: "a list column of embeddings (--column) can be read from Parquet and \
                         Arrow files only; this file is not one"
                    .into(),
            });
        }
        Ok(match opened.format {
            Format::Text(delimiter) => Source::Csv(Box::new(CsvSource::new(
                path,
                opened.reader,
                delimiter,
                options,
            )?)),
            Format::Npy => Source::Binary(npy::open_rows(path, opened, options)?),
            Format::Idx => Source::Binary(idx::open_rows(path, opened, options)?),
            Format::Parquet => {
                drop(opened);
                Source::Columnar(Box::new(columnar::open_parquet(path, options)?))
            }
            Format::ArrowFile => {
                drop(opened);
                Source::Columnar(Box::new(columnar::open_arrow_file(path, options)?))
            }
            Format::ArrowStream => Source::Columnar(Box::new(columnar::open_arrow_stream(
                path,
                opened.reader,
                options,
            )?)),
        })
    }

    fn n_features(&self) -> usize {
        match self {
            Source::Csv(c) => c.n_features(),
            Source::Binary(b) => b.n_features(),
            Source::Columnar(c) => c.n_features(),
        }
    }

    fn column_names(&self) -> Option<&[String]> {
        match self {
            Source::Csv(c) => c.kept_names(),
            Source::Binary(_) => None,
            Source::Columnar(c) => c.column_names(),
        }
    }

    fn is_f32(&self) -> bool {
        match self {
            Source::Csv(_) => false,
            Source::Binary(b) => b.is_f32(),
            Source::Columnar(c) => c.is_f32(),
        }
    }

    fn n_rows(&self) -> Option<usize> {
        match self {
            Source::Csv(_) => None,
            Source::Binary(b) => Some(b.nrows()),
            Source::Columnar(c) => c.n_rows(),
        }
    }

    fn size_checked(&self) -> bool {
        match self {
            Source::Csv(_) => false,
            Source::Binary(b) => b.size_checked(),
            Source::Columnar(c) => c.size_checked(),
        }
    }

    fn read_rows(&mut self, max_rows: usize, out: &mut RowBuf) -> Result<usize> {
        match self {
            Source::Csv(c) => c.read_rows(max_rows, out),
            Source::Binary(b) => b.read_rows(max_rows, out),
            Source::Columnar(c) => c.read_rows(max_rows, out),
        }
    }
}

/// Streams one data set from one or more files (shards concatenated by rows), chunk by chunk,
/// so that a fit never holds the whole data in memory.
///
/// Every shard is opened and checked (format, header, selection, width) by [`ChunkReader::open`],
/// then read in turn. Chunks are f32 when every shard is f32 or a small integer type, else f64.
pub struct ChunkReader {
    paths: Vec<PathBuf>,
    options: ReadOptions,
    n_features: usize,
    column_names: Option<Vec<String>>,
    f32: bool,
    n_rows: Option<usize>,
    /// Every shard's size matches its header, so `n_rows` can size allocations.
    sizes_checked: bool,
    /// Index of the shard being read; `paths.len()` at the end.
    shard: usize,
    current: Option<Source>,
}

impl std::fmt::Debug for ChunkReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChunkReader")
            .field("paths", &self.paths)
            .field("n_features", &self.n_features)
            .field("column_names", &self.column_names)
            .field("f32", &self.f32)
            .field("shard", &self.shard)
            .finish_non_exhaustive()
    }
}

impl ChunkReader {
    /// Opens every shard and checks that they agree. Directories and glob patterns among
    /// `paths` are expanded first ([`expand_inputs`]).
    pub fn open(paths: &[PathBuf], options: &ReadOptions) -> Result<ChunkReader> {
        let paths = &expand_inputs(paths)?[..];
        let Some(first_path) = paths.first() else {
            return Err(IoError::NoInput);
        };
        let first = Source::open(first_path, options)?;
        let n_features = first.n_features();
        let column_names = first.column_names().map(<[String]>::to_vec);
        let mut f32 = first.is_f32();
        let mut n_rows = first.n_rows();
        let mut sizes_checked = first.size_checked();
        for path in &paths[1..] {
            // Opened only to be checked, then closed: many shards must not hold many files open.
            let shard = Source::open(path, options)?;
            check_shard(
                path,
                first_path,
                &shard,
                n_features,
                column_names.as_deref(),
            )?;
            f32 &= shard.is_f32();
            n_rows = n_rows
                .zip(shard.n_rows())
                .and_then(|(a, b)| a.checked_add(b));
            sizes_checked &= shard.size_checked();
        }
        Ok(ChunkReader {
            paths: paths.to_vec(),
            options: options.clone(),
            n_features,
            column_names,
            f32,
            n_rows,
            sizes_checked,
            shard: 0,
            current: Some(first),
        })
    }

    /// Number of kept columns.
    pub fn n_features(&self) -> usize {
        self.n_features
    }

    /// Names of the kept columns, when the first shard has a header.
    pub fn column_names(&self) -> Option<&[String]> {
        self.column_names.as_deref()
    }

    /// Whether chunks are [`Matrix::F32`].
    pub fn is_f32(&self) -> bool {
        self.f32
    }

    /// The files read, in order, after expanding directories and patterns.
    pub fn paths(&self) -> &[PathBuf] {
        &self.paths
    }

    /// The total number of rows when every shard's header says it (NPY, IDX, Parquet); `None`
    /// for text and Arrow.
    pub fn n_rows_hint(&self) -> Option<usize> {
        self.n_rows
    }

    /// Up to `max_rows` rows (crossing shard boundaries is fine); `Ok(None)` at the end.
    /// A `max_rows` of 0 is taken as 1.
    pub fn next_chunk(&mut self, max_rows: usize) -> Result<Option<Matrix>> {
        let max_rows = max_rows.max(1);
        let mut buf = self.new_buf(max_rows, 1 << 24);
        let n = self.read_rows(max_rows, &mut buf)?;
        Ok((n > 0).then(|| buf.into_matrix(n, self.n_features)))
    }

    /// Everything that is left, as one matrix.
    pub(crate) fn read_all(&mut self) -> Result<Matrix> {
        // Exact when the sizes are known to be true: no doubling on the way, the lowest peak.
        let rows = match self.n_rows {
            Some(n) if self.sizes_checked => n,
            _ => 0,
        };
        let mut buf = self.new_buf(rows, usize::MAX);
        let n = self.read_rows(usize::MAX, &mut buf)?;
        Ok(buf.into_matrix(n, self.n_features))
    }

    /// A buffer for `rows` rows, reserving at most `max_elements` up front (the caller's
    /// `max_rows` may be far more than what is left).
    fn new_buf(&self, rows: usize, max_elements: usize) -> RowBuf {
        let cap = rows.saturating_mul(self.n_features).min(max_elements);
        if self.f32 {
            RowBuf::F32(Vec::with_capacity(cap))
        } else {
            RowBuf::F64(Vec::with_capacity(cap))
        }
    }

    fn read_rows(&mut self, max_rows: usize, out: &mut RowBuf) -> Result<usize> {
        let mut total = 0;
        while total < max_rows && self.shard < self.paths.len() {
            let source = match &mut self.current {
                Some(source) => source,
                None => {
                    let path = &self.paths[self.shard];
                    let source = Source::open(path, &self.options)?;
                    // Checked again: the file may have changed since `open`.
                    check_shard(
                        path,
                        &self.paths[0],
                        &source,
                        self.n_features,
                        self.column_names.as_deref(),
                    )?;
                    self.current.insert(source)
                }
            };
            let n = source.read_rows(max_rows - total, out)?;
            total += n;
            if total < max_rows {
                // The shard is exhausted.
                self.current = None;
                self.shard += 1;
            }
        }
        Ok(total)
    }
}

fn check_shard(
    path: &Path,
    first: &Path,
    shard: &Source,
    n_features: usize,
    names: Option<&[String]>,
) -> Result<()> {
    let mismatch = |detail| {
        Err(IoError::ShardMismatch {
            path: path.to_owned(),
            first: first.to_owned(),
            detail,
        })
    };
    if shard.n_features() != n_features {
        return mismatch(format!(
            "it has {} column(s) after selection, the first shard has {n_features}",
            shard.n_features()
        ));
    }
    if let (Some(a), Some(b)) = (names, shard.column_names()) {
        if let Some(j) = (0..a.len()).find(|&j| a[j] != b[j]) {
            return mismatch(format!(
                "its kept column {} is {:?} where the first shard has {:?}",
                j + 1,
                b[j],
                a[j]
            ));
        }
    }
    Ok(())
}

/// Files as a re-readable [`principal::ChunkSource`] for the solvers that make several passes:
/// every pass reads the files again from the start, `chunk_rows` rows at a time, so the data
/// is never held in memory whole.
///
/// A pass reads and decodes the next chunk on a second thread while the solver works on the
/// current one, and hands chunks out as row-major views of the buffers they were decoded into
/// (no copy, no transpose): at most two chunks are in memory at a time.
#[derive(Debug)]
pub struct FileSource {
    paths: Vec<PathBuf>,
    options: ReadOptions,
    chunk_rows: usize,
    n_features: usize,
    column_names: Option<Vec<String>>,
    f32: bool,
}

impl FileSource {
    /// Opens and checks every shard once (as [`ChunkReader::open`], which also expands
    /// directories and patterns), so that errors in the files' headers show before any pass.
    pub fn open(paths: &[PathBuf], options: &ReadOptions, chunk_rows: usize) -> Result<FileSource> {
        Ok(Self::from_reader(
            ChunkReader::open(paths, options)?,
            chunk_rows,
        ))
    }

    /// The files of a reader just opened (whose shape and row count a caller may have looked
    /// at first to choose `chunk_rows`), without opening and checking them again.
    pub fn from_reader(reader: ChunkReader, chunk_rows: usize) -> FileSource {
        FileSource {
            column_names: reader.column_names().map(<[String]>::to_vec),
            n_features: reader.n_features(),
            f32: reader.is_f32(),
            chunk_rows: chunk_rows.max(1),
            paths: reader.paths,
            options: reader.options,
        }
    }

    /// Names of the kept columns, when the first shard has a header.
    pub fn column_names(&self) -> Option<&[String]> {
        self.column_names.as_deref()
    }

    /// A reader at the start of the data that opens each shard when it gets to it (and checks
    /// it then against what [`FileSource::open`] found), rather than all of them up front.
    fn restart(&self) -> ChunkReader {
        ChunkReader {
            paths: self.paths.clone(),
            options: self.options.clone(),
            n_features: self.n_features,
            column_names: self.column_names.clone(),
            f32: self.f32,
            n_rows: None,
            sizes_checked: false,
            shard: 0,
            current: None,
        }
    }
}

/// A chunk decoded by the reading thread: its rows, row-major, and how many.
type Decoded = Result<(RowBuf, usize)>;

impl principal::ChunkSource for FileSource {
    fn n_features(&self) -> usize {
        self.n_features
    }

    fn pass(
        &mut self,
        visit: &mut dyn FnMut(principal::ChunkRef<'_>) -> principal::Result<()>,
    ) -> principal::Result<()> {
        let d = self.n_features;
        let chunk_rows = self.chunk_rows;
        let mut reader = self.restart();
        std::thread::scope(|scope| {
            // A rendezvous channel: the reader decodes one chunk ahead and waits until the
            // solver takes it, so two buffers are in use (one visited, one being filled).
            let (full_tx, full_rx) = mpsc::sync_channel::<Decoded>(0);
            let (empty_tx, empty_rx) = mpsc::channel::<RowBuf>();
            scope.spawn(move || loop {
                let mut buf = match empty_rx.try_recv() {
                    Ok(mut buf) => {
                        buf.clear();
                        buf
                    }
                    Err(_) => reader.new_buf(chunk_rows, 1 << 24),
                };
                let decoded = match reader.read_rows(chunk_rows, &mut buf) {
                    Ok(0) => return,
                    Ok(n) => Ok((buf, n)),
                    Err(e) => Err(e),
                };
                let failed = decoded.is_err();
                // A send fails when the pass has stopped (the visitor returned an error): stop.
                if full_tx.send(decoded).is_err() || failed {
                    return;
                }
            });
            // On return (or a panic in `visit`) `full_rx` is dropped first, which ends the
            // reading thread at its next chunk; the scope then joins it.
            for decoded in full_rx {
                let (buf, n) = decoded.map_err(|e| principal::PcaError::Source(Box::new(e)))?;
                match &buf {
                    RowBuf::F32(v) => visit(principal::ChunkRef::F32(
                        MatRef::from_row_major_slice(&v[..n * d], n, d),
                    ))?,
                    RowBuf::F64(v) => visit(principal::ChunkRef::F64(
                        MatRef::from_row_major_slice(&v[..n * d], n, d),
                    ))?,
                }
                // Recycled: the reader takes it for the chunk after next.
                let _ = empty_tx.send(buf);
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use principal::ChunkSource;
    use tempfile::TempDir;

    use super::*;
    use crate::test_util::*;
    use crate::{read_table, ColumnSelector, HeaderMode, Mat};

    fn f64_npy(rows: usize, cols: usize, fortran: bool, start: f64) -> Vec<u8> {
        let value = |i: usize, j: usize| start + (i * cols + j) as f64;
        let data: Vec<u8> = if fortran {
            (0..cols)
                .flat_map(|j| (0..rows).map(move |i| value(i, j)))
                .flat_map(f64::to_le_bytes)
                .collect()
        } else {
            (0..rows)
                .flat_map(|i| (0..cols).map(move |j| value(i, j)))
                .flat_map(f64::to_le_bytes)
                .collect()
        };
        npy("<f8", fortran, &[rows, cols], &data)
    }

    /// Drains a chunk reader with chunks of `size` rows, checking every chunk's shape and type.
    fn drain(paths: &[PathBuf], options: &ReadOptions, size: usize) -> Matrix {
        let mut reader = ChunkReader::open(paths, options).unwrap();
        let mut all: Vec<Vec<f64>> = Vec::new();
        let mut f32 = None;
        while let Some(chunk) = reader.next_chunk(size).unwrap() {
            assert!(chunk.nrows() >= 1 && chunk.nrows() <= size);
            assert_eq!(chunk.ncols(), reader.n_features());
            assert_eq!(*f32.get_or_insert(chunk.is_f32()), chunk.is_f32());
            assert_eq!(chunk.is_f32(), reader.is_f32());
            all.extend(rows(&chunk));
        }
        assert!(
            reader.next_chunk(size).unwrap().is_none(),
            "stays at the end"
        );
        let d = reader.n_features();
        let n = all.len();
        let values: Vec<f64> = all.into_iter().flatten().collect();
        if f32 == Some(true) {
            Matrix::F32(RowMajorMat::new(
                values.iter().map(|&x| x as f32).collect(),
                n,
                d,
            ))
        } else {
            Matrix::F64(RowMajorMat::new(values, n, d))
        }
    }

    #[test]
    fn chunk_reader_equals_read_table() {
        let dir = TempDir::new().unwrap();
        let csv: String = std::iter::once("a,b,c\n".to_owned())
            .chain((0..17).map(|i| format!("{i},{},{}\n", i * 2, f64::from(i) / 7.0)))
            .collect();
        let images = idx(0x08, &[11, 2, 3], &(0..66u8).collect::<Vec<_>>());
        let cases: Vec<Vec<PathBuf>> = vec![
            vec![write_file(dir.path(), "a.csv", csv.as_bytes())],
            vec![write_file(dir.path(), "a.csv.gz", &gz(csv.as_bytes()))],
            vec![write_file(dir.path(), "c.npy", &f64_npy(13, 4, false, 0.0))],
            vec![write_file(dir.path(), "f.npy", &f64_npy(13, 4, true, 0.5))],
            vec![write_file(dir.path(), "i-idx3-ubyte", &images)],
            vec![
                write_file(dir.path(), "s1.npy", &f64_npy(5, 4, false, 0.0)),
                write_file(dir.path(), "s2.npy", &f64_npy(1, 4, true, 100.0)),
                write_file(dir.path(), "s3.npy", &f64_npy(7, 4, false, 200.0)),
            ],
            vec![
                dir.path().join("a.csv"),
                dir.path().join("a.csv.gz"),
                dir.path().join("a.csv"),
            ],
        ];
        for paths in &cases {
            let whole = read_table(paths, &ReadOptions::default()).unwrap();
            for size in [1, 3, 1000] {
                assert_eq!(
                    drain(paths, &ReadOptions::default(), size),
                    whole.data,
                    "{paths:?} chunks of {size}"
                );
            }
        }
    }

    #[test]
    fn read_all_keeps_the_row_major_buffer_without_spare_capacity() {
        let dir = TempDir::new().unwrap();
        let text: String = (0..1000).map(|i| format!("{i},{}\n", 2 * i)).collect();
        let cases = [
            // Sized from the header: reserved exactly.
            vec![write_file(dir.path(), "c.npy", &f64_npy(13, 4, false, 0.0))],
            vec![
                write_file(dir.path(), "s1.npy", &f64_npy(5, 4, true, 0.0)),
                write_file(dir.path(), "s2.npy", &f64_npy(7, 4, false, 9.0)),
            ],
            // Grown while reading: the spare capacity is handed back.
            vec![write_file(dir.path(), "t.csv", text.as_bytes())],
        ];
        for paths in &cases {
            let data = read_table(paths, &ReadOptions::default()).unwrap().data;
            let Matrix::F64(m) = data else {
                panic!("f64 expected")
            };
            let view = m.as_ref();
            assert_eq!(
                (view.col_stride(), view.row_stride()),
                (1, m.ncols() as isize)
            );
            let (nrows, ncols) = (m.nrows(), m.ncols());
            let values = m.into_vec();
            assert_eq!(values.len(), nrows * ncols, "{paths:?}");
            assert_eq!(values.capacity(), values.len(), "{paths:?}");
        }
    }

    #[test]
    fn shards_concatenate_by_rows_in_order() {
        let dir = TempDir::new().unwrap();
        let a = write_file(dir.path(), "a.csv", b"x,y,label\n1,2,cat\n3,4,dog\n");
        let b = write_file(dir.path(), "b.csv.gz", &gz(b"y,x,label\n6,5,cow\n"));
        // Selection is resolved per shard, by name: b's columns are in another order.
        let options = ReadOptions {
            columns: Some(vec![
                ColumnSelector::Name("x".into()),
                ColumnSelector::Name("y".into()),
            ]),
            ..Default::default()
        };
        let t = read_table(&[a.clone(), b.clone()], &options).unwrap();
        assert_eq!(
            rows(&t.data),
            vec![vec![1.0, 2.0], vec![3.0, 4.0], vec![5.0, 6.0]]
        );
        assert_eq!(t.column_names, names(&["x", "y"]));
        // A CSV shard with an f32 NPY shard: the whole is f64.
        let c = write_file(dir.path(), "c.csv", b"7,8\n");
        let d = write_file(
            dir.path(),
            "d.npy",
            &npy(
                "<f4",
                false,
                &[1, 2],
                &[9f32, 10.0].map(f32::to_le_bytes).concat(),
            ),
        );
        let t = read_table(&[c.clone(), d.clone()], &ReadOptions::default()).unwrap();
        assert!(matches!(t.data, Matrix::F64(_)));
        assert_eq!(rows(&t.data), vec![vec![7.0, 8.0], vec![9.0, 10.0]]);
        let t = read_table(&[d.clone(), d.clone()], &ReadOptions::default()).unwrap();
        assert!(matches!(t.data, Matrix::F32(_)));
        assert_eq!(
            ChunkReader::open(&[d.clone(), d], &ReadOptions::default())
                .unwrap()
                .n_rows_hint(),
            Some(2)
        );
    }

    #[test]
    fn mismatched_shards_are_named() {
        let dir = TempDir::new().unwrap();
        let a = write_file(dir.path(), "a.csv", b"x,y\n1,2\n");
        let b = write_file(dir.path(), "b.csv", b"x,y,z\n1,2,3\n");
        let e = err_of(read_table(&[a.clone(), b.clone()], &ReadOptions::default()));
        assert!(
            e.starts_with(&format!(
                "shard {} does not match the first shard {}",
                b.display(),
                a.display()
            )),
            "{e}"
        );
        assert!(
            e.contains("3 column(s) after selection, the first shard has 2"),
            "{e}"
        );
        let c = write_file(dir.path(), "c.csv", b"x,w\n1,2\n");
        let e = err_of(read_table(&[a.clone(), c], &ReadOptions::default()));
        assert!(
            e.contains("its kept column 2 is \"w\" where the first shard has \"y\""),
            "{e}"
        );
        // A bad shard later in the list fails at open, before any data is streamed.
        let bad = write_file(dir.path(), "bad.csv", b"x,y\n");
        assert!(err_of(ChunkReader::open(
            &[a.clone(), bad],
            &ReadOptions::default()
        ))
        .contains("bad.csv has no data rows"));
        // Shards without a header match by width.
        let n = write_file(dir.path(), "n.csv", b"5,6\n");
        let options = ReadOptions {
            header: HeaderMode::Auto,
            ..Default::default()
        };
        assert_eq!(read_table(&[a, n], &options).unwrap().data.nrows(), 2);
    }

    #[test]
    fn opening_errors_name_the_file() {
        let dir = TempDir::new().unwrap();
        assert!(matches!(
            read_table(&[], &ReadOptions::default()),
            Err(IoError::NoInput)
        ));
        let missing = dir.path().join("missing.csv");
        let e = err_of(read_table(
            std::slice::from_ref(&missing),
            &ReadOptions::default(),
        ));
        assert!(
            e.starts_with(&format!("cannot open {}", missing.display())),
            "{e}"
        );
        let e = err_of(read_table(
            &[dir.path().to_owned()],
            &ReadOptions::default(),
        ));
        assert!(
            e.starts_with(&format!(
                "directory {} holds no data files",
                dir.path().display()
            )),
            "{e}"
        );
    }

    #[test]
    fn file_source_passes_repeat_the_data() {
        let dir = TempDir::new().unwrap();
        let a = write_file(dir.path(), "a.npy", &f64_npy(5, 3, false, 0.0));
        let b = write_file(
            dir.path(),
            "b-idx2",
            &idx(0x08, &[2, 3], &[1, 2, 3, 4, 5, 6]),
        );
        let mut source = FileSource::open(&[a, b], &ReadOptions::default(), 4).unwrap();
        assert_eq!(source.n_features(), 3);
        assert_eq!(source.column_names(), None);
        let mut passes = Vec::new();
        for _ in 0..2 {
            let mut seen = Vec::new();
            source
                .pass(&mut |chunk| {
                    assert!(chunk.nrows() <= 4);
                    if let principal::ChunkRef::F64(m) = chunk {
                        seen.extend((0..m.nrows()).map(|i| m[(i, 0)]));
                    }
                    Ok(())
                })
                .unwrap();
            passes.push(seen);
        }
        assert_eq!(passes[0], vec![0.0, 3.0, 6.0, 9.0, 12.0, 1.0, 4.0]);
        assert_eq!(passes[0], passes[1]);
    }

    /// Every row of every pass of `source`, with the chunks' element type; checks that chunks
    /// are row-major views of at most `size` rows.
    fn pass_rows(source: &mut FileSource, size: usize) -> (Vec<Vec<f64>>, bool) {
        let mut all = Vec::new();
        let mut f32 = None;
        source
            .pass(&mut |chunk| {
                assert!(chunk.nrows() >= 1 && chunk.nrows() <= size);
                let m = match chunk {
                    principal::ChunkRef::F32(m) => {
                        assert!(*f32.get_or_insert(true));
                        (
                            m.col_stride(),
                            m.row_stride(),
                            Mat::from_fn(m.nrows(), m.ncols(), |i, j| f64::from(m[(i, j)])),
                        )
                    }
                    principal::ChunkRef::F64(m) => {
                        assert!(!*f32.get_or_insert(false));
                        (m.col_stride(), m.row_stride(), m.to_owned())
                    }
                };
                let (col_stride, row_stride, m) = m;
                assert_eq!(
                    (col_stride, row_stride),
                    (1, m.ncols() as isize),
                    "row-major"
                );
                all.extend(
                    (0..m.nrows()).map(|i| (0..m.ncols()).map(|j| m[(i, j)]).collect::<Vec<_>>()),
                );
                Ok(())
            })
            .unwrap();
        (all, f32.unwrap_or(false))
    }

    #[test]
    fn file_source_equals_read_table_for_every_layout() {
        let dir = TempDir::new().unwrap();
        let d = dir.path();
        let csv: String = std::iter::once("a,b,c\n".to_owned())
            .chain((0..23).map(|i| format!("{i},{},{}\n", i * 2, f64::from(i) / 7.0)))
            .collect();
        let f32_npy = npy(
            "<f4",
            false,
            &[9, 3],
            &(0..27)
                .map(|i| i as f32 * 0.25)
                .flat_map(f32::to_le_bytes)
                .collect::<Vec<_>>(),
        );
        let columns = crate::test_util::batch(
            ["a", "b", "c"]
                .iter()
                .enumerate()
                .map(|(j, name)| {
                    let v: Vec<f64> = (0..31).map(|i| (i * 3 + j) as f64).collect();
                    (
                        *name,
                        std::sync::Arc::new(arrow_array::Float64Array::from(v))
                            as arrow_array::ArrayRef,
                    )
                })
                .collect(),
        );
        std::fs::create_dir(d.join("shards")).unwrap();
        let cases: Vec<Vec<PathBuf>> = vec![
            vec![write_file(d, "a.csv", csv.as_bytes())],
            vec![write_file(d, "a.csv.gz", &gz(csv.as_bytes()))],
            vec![write_file(d, "f.npy", &f32_npy)],
            vec![parquet_file(d, "p.parquet", &columns, 4)],
            vec![arrow_file(
                d,
                "p.arrow",
                &[columns.slice(0, 10), columns.slice(10, 21)],
                false,
            )],
            vec![
                write_file(d, "shards/1.npy", &f64_npy(5, 3, false, 0.0)),
                d.join("a.csv"),
                parquet_file(d, "shards/2.parquet", &columns, 7),
                write_file(d, "shards/3.npy", &f64_npy(1, 3, true, 100.0)),
            ],
            vec![d.join("f.npy"), d.join("f.npy")],
            vec![d.join("shards")],
            vec![d.join("shards/*.npy"), d.join("p.*")],
        ];
        for paths in &cases {
            let whole = read_table(paths, &ReadOptions::default()).unwrap();
            for size in [1, 3, 7, 1000] {
                let mut source = FileSource::open(paths, &ReadOptions::default(), size).unwrap();
                for _ in 0..2 {
                    let (got, f32) = pass_rows(&mut source, size);
                    assert_eq!(got, rows(&whole.data), "{paths:?} by {size}");
                    assert_eq!(f32, whole.data.is_f32(), "{paths:?}");
                }
            }
        }
        // A directory and a pattern are the files they expand to.
        let t = read_table(&[d.join("shards")], &ReadOptions::default()).unwrap();
        let files = [
            d.join("shards/1.npy"),
            d.join("shards/2.parquet"),
            d.join("shards/3.npy"),
        ];
        assert_eq!(t, read_table(&files, &ReadOptions::default()).unwrap());
        let r = ChunkReader::open(&[d.join("shards/*.npy")], &ReadOptions::default()).unwrap();
        assert_eq!(r.paths(), [d.join("shards/1.npy"), d.join("shards/3.npy")]);
        assert_eq!(r.n_rows_hint(), Some(6));
    }

    #[test]
    fn file_source_errors_mid_file_surface_with_their_message() {
        let dir = TempDir::new().unwrap();
        let mut text = String::from("a,b\n");
        for i in 0..100 {
            if i == 58 {
                text.push_str("1,oops\n");
            } else {
                text.push_str(&format!("{i},1\n"));
            }
        }
        let p = write_file(dir.path(), "bad.csv", text.as_bytes());
        let expected = err_of(read_table(
            std::slice::from_ref(&p),
            &ReadOptions::default(),
        ));
        assert!(
            expected.contains("line 60, column 2 (\"b\"): \"oops\" is not a number"),
            "{expected}"
        );
        let mut source = FileSource::open(&[p], &ReadOptions::default(), 7).unwrap();
        for _ in 0..2 {
            let mut seen = 0;
            let e = source
                .pass(&mut |chunk| {
                    seen += chunk.nrows();
                    Ok(())
                })
                .unwrap_err();
            assert_eq!(e.to_string(), expected);
            assert_eq!(seen, 56, "the chunks before the bad one");
        }
        // A shard that went bad after `open` is caught on the pass, with its message.
        let dir = TempDir::new().unwrap();
        let a = write_file(dir.path(), "a.csv", b"x,y\n1,2\n");
        let b = write_file(dir.path(), "b.csv", b"x,y\n3,4\n");
        let mut source = FileSource::open(&[a, b.clone()], &ReadOptions::default(), 1).unwrap();
        std::fs::write(&b, "x,z\n3,4\n").unwrap();
        let e = source.pass(&mut |_| Ok(())).unwrap_err().to_string();
        assert!(
            e.contains("its kept column 2 is \"z\" where the first shard has \"y\""),
            "{e}"
        );
        std::fs::remove_file(&b).unwrap();
        let e = source.pass(&mut |_| Ok(())).unwrap_err().to_string();
        assert!(e.contains(&format!("cannot open {}", b.display())), "{e}");
    }

    #[test]
    fn a_pass_recycles_two_chunk_buffers() {
        let dir = TempDir::new().unwrap();
        let p = write_file(dir.path(), "big.npy", &f64_npy(1000, 5, false, 0.0));
        let mut source = FileSource::open(&[p], &ReadOptions::default(), 10).unwrap();
        for _ in 0..3 {
            let mut buffers = std::collections::BTreeSet::new();
            let mut chunks = 0;
            source
                .pass(&mut |chunk| {
                    if let principal::ChunkRef::F64(m) = chunk {
                        buffers.insert(m.as_ptr() as usize);
                    }
                    chunks += 1;
                    Ok(())
                })
                .unwrap();
            // One visited, one being filled: 100 chunks in (at most) two buffers.
            assert_eq!(chunks, 100);
            assert!(buffers.len() <= 2, "{} buffers", buffers.len());
        }
    }

    #[test]
    fn a_failing_visitor_stops_the_pass_cleanly() {
        let dir = TempDir::new().unwrap();
        let p = write_file(dir.path(), "big.npy", &f64_npy(1000, 5, false, 0.0));
        let mut source = FileSource::open(&[p], &ReadOptions::default(), 10).unwrap();
        for stop_after in [1, 2, 99, 100] {
            let mut calls = 0;
            let e = source
                .pass(&mut |_| {
                    calls += 1;
                    if calls == stop_after {
                        Err(principal::PcaError::Source("the solver gave up".into()))
                    } else {
                        Ok(())
                    }
                })
                .unwrap_err();
            assert_eq!(e.to_string(), "the solver gave up");
            assert_eq!(calls, stop_after);
        }
        // A panicking visitor: the panic comes out, the reading thread ends.
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            source.pass(&mut |_| panic!("visitor panic"))
        }));
        assert!(caught.is_err());
        // The source is still good for full passes.
        let (all, _) = pass_rows(&mut source, 10);
        assert_eq!(all.len(), 1000);
        assert_eq!(all[999][4], 4999.0);
    }
}
