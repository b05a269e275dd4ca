//! Sparse inputs: MatrixMarket coordinate files (`.mtx`, `.mtx.gz`; rows are samples) and 10x
//! Genomics directories (`matrix.mtx.gz` genes × cells, `features.tsv.gz` or the older
//! `genes.tsv.gz`, `barcodes.tsv.gz`; rows are cells), read as CSR blocks of rows
//! ([`principal::sparse::SparseSource`]), never densified.
//!
//! Opening reads the file once: the header, every entry checked (indices in range, numbers
//! finite, as many entries as the header declares), the entries counted per row, and whether
//! they come sorted by row. A coordinate file is not sorted by row in general (a 10x matrix,
//! genes × cells, is sorted by cell: by our row). Then:
//! - entries sorted by row, and more than half the memory budget as CSR: every pass streams
//!   the text again, one block of rows at a time (memory: one block);
//! - otherwise the CSR arrays are built in memory from the counts (12 bytes an entry plus 8 a
//!   row: the sparse matrix's own size) and the passes read them. An unsorted file larger
//!   than that is refused with the command that sorts it.
//!
//! Entries repeated at the same place are summed, as scipy does. Only `coordinate` `real` or
//! `integer` `general` matrices are read.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::ops::Range;
use std::path::{Path, PathBuf};

use flate2::read::MultiGzDecoder;
use principal::PcaError;
use principal::sparse::{Csr, CsrChunk, SparseSource};

use crate::error::{IoError, Result};
use crate::format::h5ad::H5adSource;
use crate::read::open::{Format, open};
use crate::read::options::ReadOptions;
use crate::read::sparse_rows::push_row;

/// Stored bytes per entry of a CSR matrix in memory: a u32 index and an f64 value.
const ENTRY_BYTES: u64 = 12;

/// Entries per block a pass hands out.
const BLOCK_ENTRIES: usize = 1 << 22;

/// Which of the file's dimensions are the samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Orientation {
    /// MatrixMarket as given: rows are samples.
    RowsAreSamples,
    /// 10x: the file is genes × cells, and cells are the samples.
    ColumnsAreSamples,
}

/// Where a pass reads the rows from.
enum Storage {
    Memory(Csr<f64, u32>),
    /// Held rows whose every value is exact in f32 ([`SparseFile::hold_within`]): the same
    /// values in two thirds of the bytes, which the passes stream.
    Narrow(Csr<f32, u32>),
    Stream,
    /// An AnnData file's CSR or CSC matrix, read a block of rows at a time, blocks of at most
    /// `budget` entries.
    H5ad {
        source: Box<H5adSource>,
        budget: usize,
    },
}

/// A MatrixMarket file or 10x directory opened for reading by rows.
pub struct SparseFile {
    /// The `.mtx` / `.mtx.gz` file.
    path: PathBuf,
    orientation: Orientation,
    n_samples: usize,
    n_features: usize,
    /// Entries as declared (repeated places counted each time).
    declared: usize,
    storage: Storage,
    feature_names: Option<Vec<String>>,
    sample_names: Option<Vec<String>>,
    /// The samples this process reads, of `0..n_samples` (all of them but for a process's part
    /// of an MPI job, see [`SparseFile::open_part`]).
    rows: Range<usize>,
}

/// A process's share of the samples: process `rank` of `size` (as `crate::Part` names them;
/// that type lives in the layer above).
#[derive(Clone, Copy, Debug)]
struct Part {
    rank: usize,
    size: usize,
}

/// Process `part.rank`'s rows of `n` samples: an equal share, in rank order.
fn part_rows(n: usize, part: Option<Part>) -> Range<usize> {
    match part {
        None => 0..n,
        Some(Part { rank, size }) => {
            let (n, rank, size) = (n as u128, rank as u128, size.max(1) as u128);
            (rank * n / size) as usize..((rank + 1) * n / size) as usize
        }
    }
}

/// Whether `path` is a sparse input as `options` read it: what [`is_sparse_input`] says, or an
/// AnnData `.h5ad` file whose matrix (`X` or `--layer`'s) is stored CSR or CSC. A file that
/// cannot be opened is not (the dense reader then says why).
pub fn is_sparse_input_with(path: &Path, options: &ReadOptions) -> bool {
    if is_sparse_input(path) {
        return true;
    }
    let Ok(opened) = open(path) else {
        return false;
    };
    if opened.format != Format::Hdf5 {
        return false;
    }
    drop(opened);
    H5adSource::open(path, options).is_ok_and(|h| h.is_sparse())
}

/// Bytes an entry of an `.h5ad` block takes while it is read, measured (peak memory of fits
/// of 20,000 × 20,000 at 2.6% under limits of 100 MB and 1 GB: 43): the stored bytes the
/// HDF5 reader decodes, the i64 indices and f64 values it gives, the CSR block built.
const H5AD_ENTRY_BYTES: u64 = 44;

/// Most entries of an `.h5ad` block: about 23 MB while it is read. Larger blocks save no
/// measurable time (a block is a thousand rows and more) and count against the fit's peak
/// memory, which should stay under twice the sparse matrix's own size (issue 29: at 2²⁰
/// entries the 20,000-cell benchmark's peak was 2.08× its CSR arrays).
const H5AD_BLOCK_ENTRIES: u64 = 1 << 19;

/// Entries of a block an `.h5ad` pass hands out, under `memory_limit`: a quarter of it at
/// `H5AD_ENTRY_BYTES` an entry, between 2¹⁰ and `H5AD_BLOCK_ENTRIES`.
pub fn h5ad_block_entries(memory_limit: u64) -> usize {
    (memory_limit / 4 / H5AD_ENTRY_BYTES).clamp(1 << 10, H5AD_BLOCK_ENTRIES) as usize
}

/// Whether `path` names a sparse input: a `.mtx` / `.mtx.gz` file, or a directory holding
/// `matrix.mtx(.gz)` (10x).
pub fn is_sparse_input(path: &Path) -> bool {
    if path.is_dir() {
        return ["matrix.mtx.gz", "matrix.mtx"]
            .iter()
            .any(|m| path.join(m).is_file());
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    name.ends_with(".mtx") || name.ends_with(".mtx.gz")
}

fn open_text(path: &Path) -> Result<Box<dyn BufRead + Send>> {
    let open_err = |source| IoError::Open {
        path: path.to_owned(),
        source,
    };
    let mut file = BufReader::new(File::open(path).map_err(open_err)?);
    let gz = file
        .fill_buf()
        .map_err(|source| IoError::Read {
            path: path.to_owned(),
            source,
        })?
        .starts_with(&[0x1f, 0x8b]);
    Ok(if gz {
        Box::new(BufReader::with_capacity(1 << 16, MultiGzDecoder::new(file)))
    } else {
        Box::new(file)
    })
}

fn format_error(path: &Path, detail: String) -> IoError {
    IoError::Format {
        path: path.to_owned(),
        detail,
    }
}

/// The text of a MatrixMarket file, line by line, counting lines from 1.
struct Lines {
    path: PathBuf,
    reader: Box<dyn BufRead + Send>,
    line: String,
    number: usize,
}

impl Lines {
    fn open(path: &Path) -> Result<Self> {
        Ok(Lines {
            path: path.to_owned(),
            reader: open_text(path)?,
            line: String::new(),
            number: 0,
        })
    }

    /// Moves to the next line; false at the end of the file.
    fn advance(&mut self) -> Result<bool> {
        self.line.clear();
        let got = self.reader.read_line(&mut self.line).map_err(|source| {
            let source = if source.kind() == io::ErrorKind::UnexpectedEof {
                io::Error::new(
                    source.kind(),
                    format!(
                        "{source} after line {} (is the file cut short?)",
                        self.number
                    ),
                )
            } else {
                source
            };
            IoError::Read {
                path: self.path.clone(),
                source,
            }
        })?;
        if got == 0 {
            return Ok(false);
        }
        self.number += 1;
        Ok(true)
    }

    /// The current line, without its end.
    fn text(&self) -> &str {
        self.line.trim_end_matches(['\n', '\r'])
    }

    /// Moves to the next line that is neither blank nor a comment; false at the end.
    fn advance_to_entry(&mut self) -> Result<bool> {
        while self.advance()? {
            let t = self.text().trim_start();
            if !(t.is_empty() || t.starts_with('%')) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn error(&self, detail: String) -> IoError {
        format_error(&self.path, format!("line {}: {detail}", self.number))
    }
}

/// The header and size line: (rows, columns, entries) as the file declares them.
fn read_header(lines: &mut Lines) -> Result<(usize, usize, usize)> {
    lines.advance()?;
    let first = lines.text().to_ascii_lowercase();
    let words: Vec<&str> = first.split_ascii_whitespace().collect();
    if words.first() != Some(&"%%matrixmarket") || words.get(1) != Some(&"matrix") {
        return Err(lines.error(format!(
            "{first:?} is not a MatrixMarket header (%%MatrixMarket matrix coordinate real general)"
        )));
    }
    let (layout, field, symmetry) = (
        words.get(2).copied().unwrap_or(""),
        words.get(3).copied().unwrap_or(""),
        words.get(4).copied().unwrap_or(""),
    );
    if layout != "coordinate"
        || !matches!(field, "real" | "integer" | "double")
        || symmetry != "general"
    {
        return Err(lines.error(format!(
            "{layout} {field} {symmetry} matrices are not read: only coordinate real or integer general"
        )));
    }
    {
        if !lines.advance_to_entry()? {
            return Err(lines.error("the file ends before its size line".into()));
        }
        let line = lines.text().trim();
        let sizes: Vec<&str> = line.split_ascii_whitespace().collect();
        let parsed: Vec<Option<usize>> = sizes.iter().map(|s| s.parse().ok()).collect();
        match parsed[..] {
            [Some(m), Some(n), Some(l)] => Ok((m, n, l)),
            _ => Err(lines.error(format!(
                "size line {line:?} is not three counts (rows, columns, entries)"
            ))),
        }
    }
}

/// One entry: the file's row and column (from 1) checked against its sizes, and the value.
fn parse_entry(lines: &Lines, text: &str, m: usize, n: usize) -> Result<(usize, usize, f64)> {
    let mut fields = text.split_ascii_whitespace();
    let (Some(i), Some(j), Some(v), None) =
        (fields.next(), fields.next(), fields.next(), fields.next())
    else {
        return Err(lines.error(format!("{text:?} is not an entry (row, column, value)")));
    };
    let index = |s: &str, what: &str, max: usize| -> Result<usize> {
        match s.parse::<usize>() {
            Ok(k) if (1..=max).contains(&k) => Ok(k - 1),
            Ok(k) => Err(lines.error(format!("{what} index {k} is out of range 1..={max}"))),
            Err(_) => Err(lines.error(format!("{what} index {s:?} is not a whole number"))),
        }
    };
    let (i, j) = (index(i, "row", m)?, index(j, "column", n)?);
    match v.parse::<f64>() {
        Ok(x) if x.is_finite() => Ok((i, j, x)),
        Ok(_) => Err(lines.error(format!("{v:?} is not a finite number"))),
        Err(_) => Err(lines.error(format!("{v:?} is not a number"))),
    }
}

impl SparseFile {
    /// Opens a `.mtx` / `.mtx.gz` file (rows are samples) or a 10x directory (cells are
    /// samples), checking every entry; the CSR arrays are held in memory when they take at most
    /// half of `memory_limit` bytes or the file is not sorted by row.
    pub fn open(path: &Path, memory_limit: u64) -> Result<Self> {
        Self::open_rows(path, memory_limit, None)
    }

    fn open_rows(path: &Path, memory_limit: u64, part: Option<Part>) -> Result<Self> {
        if path.is_dir() {
            return Self::open_10x(path, memory_limit, part);
        }
        Self::open_file(path, Orientation::RowsAreSamples, memory_limit, part)
    }

    /// Opens process `rank`'s rows of `path` (one of `size` equal shares of the
    /// samples, in rank order) as [`SparseFile::open_with`] opens the whole: every process
    /// checks the whole file, as one process would, and keeps only its own rows — a MatrixMarket
    /// file (whose entries need not be sorted by row) is scanned by every process, which holds
    /// or streams its rows alone; an `.h5ad` CSR matrix is read from its part's `indptr` on; a
    /// CSC matrix is read by its cursors from the first row and the rows before the part are
    /// dropped block by block. The passes hand out the part's rows only.
    pub fn open_part(
        path: &Path,
        options: &ReadOptions,
        memory_limit: u64,
        rank: usize,
        size: usize,
    ) -> Result<Self> {
        Self::open_with_rows(path, options, memory_limit, Some(Part { rank, size }))
    }

    /// Opens `path` as [`SparseFile::open`] does, or an AnnData `.h5ad` file whose matrix is
    /// stored CSR or CSC, read as `options` say (`--layer`, `--mask-var`, `--columns`,
    /// `--exclude`; an error for a dense matrix), by blocks of rows of at most
    /// [`h5ad_block_entries`] entries: never densified, never held whole unless
    /// [`SparseFile::hold_within`] is asked to.
    pub fn open_with(path: &Path, options: &ReadOptions, memory_limit: u64) -> Result<Self> {
        Self::open_with_rows(path, options, memory_limit, None)
    }

    fn open_with_rows(
        path: &Path,
        options: &ReadOptions,
        memory_limit: u64,
        part: Option<Part>,
    ) -> Result<Self> {
        if is_sparse_input(path) {
            return Self::open_rows(path, memory_limit, part);
        }
        let mut source = H5adSource::open(path, options)?;
        if !source.is_sparse() {
            return Err(format_error(
                path,
                "its matrix is stored dense, not as a csr_matrix or csc_matrix".into(),
            ));
        }
        let n_samples = source.rows_to_read();
        let rows = part_rows(n_samples, part);
        // CSR (and dense) start at any row; CSC's cursors start at the first, and the pass
        // drops the rows before the part.
        if source.splittable() {
            source.restrict(rows.clone())?;
        }
        let entries = source.stored_entries();
        Ok(SparseFile {
            path: path.to_owned(),
            orientation: Orientation::RowsAreSamples,
            rows,
            n_samples,
            n_features: source.n_features(),
            declared: entries as usize,
            feature_names: source.column_names().map(<[String]>::to_vec),
            sample_names: None,
            storage: Storage::H5ad {
                source: Box::new(source),
                budget: h5ad_block_entries(memory_limit),
            },
        })
    }

    /// For a fit's many passes: an `.h5ad` matrix whose rows' CSR arrays (at most the file's
    /// entries at 12 bytes, a part or a mask keeps fewer) take at most half of `memory_limit`,
    /// as a MatrixMarket file's are held, is read now, once, and every later pass runs from
    /// memory (a pass from the file decodes its blocks again: an eighth of a fit's time at
    /// 20,000 cells). Otherwise, and for other files, nothing changes. A single pass
    /// (`transform`) streams instead: holding the rows would only add them to its peak.
    pub fn hold_within(&mut self, memory_limit: u64) -> Result<()> {
        if !matches!(self.storage, Storage::H5ad { .. }) {
            return Ok(());
        }
        let entries = self.declared as u64;
        let bytes = entries * ENTRY_BYTES + (self.rows.len() as u64 + 1) * 8;
        if bytes > memory_limit / 2 {
            return Ok(());
        }
        // Room for every entry first: no copy of growing arrays, so the peak is the arrays
        // and one block being read. Values are kept as f32 while every one converts exactly
        // (log-normalised counts stored as float32, as AnnData files usually hold them): the
        // same numbers, 8 bytes an entry instead of 12 for the passes to stream; the first
        // value that does not turns the rows read so far to f64.
        let mut held = Held::new(self.n_features, self.rows.len(), entries as usize);
        let read = self.pass(&mut |block| {
            let CsrChunk::F64U32(block) = block else {
                unreachable!("the .h5ad reader's blocks are f64 values with u32 indices")
            };
            held.append(block);
            Ok(())
        });
        match read {
            Ok(()) => {}
            Err(PcaError::Source(e)) => match e.downcast::<IoError>() {
                Ok(e) => return Err(*e),
                Err(e) => return Err(format_error(&self.path, e.to_string())),
            },
            Err(e) => return Err(format_error(&self.path, e.to_string())),
        }
        self.storage = held.finish();
        Ok(())
    }

    /// How the passes read the rows, for `--explain`.
    pub fn reading(&self) -> String {
        match &self.storage {
            Storage::Memory(_) | Storage::Narrow(_) => {
                "sparse rows read once and held as CSR arrays (within half the memory limit; \
                 the matrix's own size, never densified): every later pass runs from memory"
                    .into()
            }
            Storage::Stream => "sparse rows sorted by row, larger than half the memory limit: \
                                every pass reads the text a block of rows at a time"
                .into(),
            Storage::H5ad { source, budget } => format!(
                "AnnData {}: every pass reads CSR blocks of at most {budget} entries (≈ {} MB; \
                 at most a quarter of the memory limit) from the file, never densified, never whole{}",
                source.encoding(),
                (*budget as u64 * H5AD_ENTRY_BYTES).div_ceil(1_000_000),
                if source.encoding() == "csc_matrix" {
                    "; by columns, each block takes every gene's entries in its rows by a \
                     cursor per gene"
                } else {
                    ""
                }
            ),
        }
    }

    fn open_file(
        path: &Path,
        orientation: Orientation,
        memory_limit: u64,
        part: Option<Part>,
    ) -> Result<Self> {
        let mut lines = Lines::open(path)?;
        let (m, n, declared) = read_header(&mut lines)?;
        let (n_samples, n_features) = match orientation {
            Orientation::RowsAreSamples => (m, n),
            Orientation::ColumnsAreSamples => (n, m),
        };
        if n_features > u32::MAX as usize {
            return Err(format_error(
                path,
                format!("{n_features} features: more than 2³² − 1 are not read"),
            ));
        }
        // Before anything is allocated for them: a damaged size line must not ask for gigabytes.
        let per_shape = 8 * n_samples as u64 + 16 * n_features as u64;
        if per_shape > memory_limit {
            return Err(lines.error(format!(
                "{m} × {n}: the row counts and per-feature sums alone take ≈ {} MB, over the \
                 memory limit",
                per_shape.div_ceil(1_000_000)
            )));
        }
        // The check pass: every entry, the count per sample, whether sorted by sample.
        let mut counts = vec![0u32; n_samples];
        let mut sorted = true;
        let mut last = 0;
        let mut seen = 0usize;
        while lines.advance_to_entry()? {
            let text = lines.text();
            if seen == declared {
                return Err(lines.error(format!(
                    "more entries than the {declared} the header declares"
                )));
            }
            let (i, j, _) = parse_entry(&lines, text, m, n)?;
            let s = if orientation == Orientation::RowsAreSamples {
                i
            } else {
                j
            };
            sorted &= s >= last;
            last = s;
            counts[s] = counts[s]
                .checked_add(1)
                .ok_or_else(|| lines.error("more than 2³² entries in one row".into()))?;
            seen += 1;
        }
        if seen < declared {
            return Err(lines.error(format!(
                "the header declares {declared} entries but the file ends after {seen}"
            )));
        }
        // Only this process's rows are held or streamed.
        let rows = part_rows(n_samples, part);
        let own: u64 = counts[rows.clone()].iter().map(|&c| c as u64).sum();
        let bytes = own * ENTRY_BYTES + 8 * rows.len() as u64;
        let storage = if sorted && bytes > memory_limit / 2 {
            Storage::Stream
        } else {
            if bytes > memory_limit {
                return Err(format_error(
                    path,
                    format!(
                        "its entries are not sorted by row, and as CSR in memory they take ≈ {} MB, \
                         over the memory limit; sort the entries by row (for rows are samples: \
                         sort -k1,1n after the header) or raise --memory-limit",
                        bytes.div_ceil(1_000_000)
                    ),
                ));
            }
            Storage::Memory(Self::read_in_memory(
                path,
                orientation,
                &counts,
                rows.clone(),
            )?)
        };
        Ok(SparseFile {
            path: path.to_owned(),
            orientation,
            rows,
            n_samples,
            n_features,
            declared,
            storage,
            feature_names: None,
            sample_names: None,
        })
    }

    /// The CSR arrays of the samples `rows` from a second reading, laid out by `counts` (of
    /// every sample).
    fn read_in_memory(
        path: &Path,
        orientation: Orientation,
        counts: &[u32],
        rows: Range<usize>,
    ) -> Result<Csr<f64, u32>> {
        let first = rows.start;
        let counts = &counts[rows.clone()];
        let mut lines = Lines::open(path)?;
        let (m, n, _) = read_header(&mut lines)?;
        let d = if orientation == Orientation::RowsAreSamples {
            n
        } else {
            m
        };
        let mut start = Vec::with_capacity(counts.len() + 1);
        start.push(0usize);
        for &c in counts {
            start.push(start[start.len() - 1] + c as usize);
        }
        let total = start[counts.len()];
        let mut columns = vec![0u32; total];
        let mut values = vec![0.0f64; total];
        let mut next = start.clone();
        while lines.advance_to_entry()? {
            let text = lines.text();
            let (i, j, v) = parse_entry(&lines, text, m, n)?;
            let (s, f) = if orientation == Orientation::RowsAreSamples {
                (i, j)
            } else {
                (j, i)
            };
            if !rows.contains(&s) {
                continue;
            }
            let s = s - first;
            if next[s] >= start[s + 1] {
                return Err(lines.error("the file changed while it was read".into()));
            }
            columns[next[s]] = f as u32;
            values[next[s]] = v;
            next[s] += 1;
        }
        let mut csr = Csr::new(d);
        let mut row = Vec::new();
        for s in 0..counts.len() {
            row.clear();
            row.extend((start[s]..start[s + 1]).map(|k| (columns[k] as usize, values[k])));
            push_row(&mut csr, &mut row);
        }
        Ok(csr)
    }

    fn open_10x(dir: &Path, memory_limit: u64, part: Option<Part>) -> Result<Self> {
        let find = |names: &[&str]| names.iter().map(|n| dir.join(n)).find(|p| p.is_file());
        let matrix = find(&["matrix.mtx.gz", "matrix.mtx"]).ok_or_else(|| {
            format_error(
                dir,
                "a 10x directory holds matrix.mtx.gz; there is none".into(),
            )
        })?;
        let mut file =
            Self::open_file(&matrix, Orientation::ColumnsAreSamples, memory_limit, part)?;
        let features = find(&[
            "features.tsv.gz",
            "features.tsv",
            "genes.tsv.gz",
            "genes.tsv",
        ])
        .ok_or_else(|| {
            format_error(
                dir,
                "a 10x directory holds features.tsv.gz; there is none".into(),
            )
        })?;
        // Gene symbols (the second field), as scanpy's read_10x_mtx names the genes.
        let names = read_names(&features, 1)?;
        if names.len() != file.n_features {
            return Err(format_error(
                &features,
                format!(
                    "{} genes, but {} has {} rows",
                    names.len(),
                    matrix.display(),
                    file.n_features
                ),
            ));
        }
        file.feature_names = Some(names);
        if let Some(barcodes) = find(&["barcodes.tsv.gz", "barcodes.tsv"]) {
            let cells = read_names(&barcodes, 0)?;
            if cells.len() != file.n_samples {
                return Err(format_error(
                    &barcodes,
                    format!(
                        "{} barcodes, but {} has {} columns",
                        cells.len(),
                        matrix.display(),
                        file.n_samples
                    ),
                ));
            }
            file.sample_names = Some(cells[file.rows.clone()].to_vec());
        }
        Ok(file)
    }

    /// Samples (rows for us) in the whole file.
    pub fn n_samples(&self) -> usize {
        self.n_samples
    }

    /// The samples this process reads: all of them, or its part's (see
    /// [`SparseFile::open_part`]).
    pub fn rows(&self) -> Range<usize> {
        self.rows.clone()
    }

    /// Entries the file declares.
    pub fn declared_entries(&self) -> usize {
        self.declared
    }

    /// Feature names (10x: the gene symbols).
    pub fn feature_names(&self) -> Option<&[String]> {
        self.feature_names.as_deref()
    }

    /// Sample names (10x: the barcodes) of the rows this process reads.
    pub fn sample_names(&self) -> Option<&[String]> {
        self.sample_names.as_deref()
    }

    /// Whether the passes stream the text (the file is sorted by row and too large to hold).
    pub fn is_streamed(&self) -> bool {
        matches!(self.storage, Storage::Stream | Storage::H5ad { .. })
    }

    /// One pass streaming the text, which is sorted by sample: blocks of about
    /// [`BLOCK_ENTRIES`] entries, rows without entries included.
    fn stream_pass(
        &self,
        visit: &mut dyn FnMut(CsrChunk<'_>) -> principal::Result<()>,
    ) -> Result<Option<PcaError>> {
        let mut lines = Lines::open(&self.path)?;
        let (m, n, _) = read_header(&mut lines)?;
        let mut block = Csr::<f64, u32>::new(self.n_features);
        let mut row: Vec<(usize, f64)> = Vec::new();
        let rows = self.rows.clone();
        let mut current = rows.start;
        let mut emit = |block: &mut Csr<f64, u32>| -> Option<PcaError> {
            let outcome = visit(block.as_chunk());
            block.clear();
            outcome.err()
        };
        while lines.advance_to_entry()? {
            let text = lines.text();
            let (i, j, v) = parse_entry(&lines, text, m, n)?;
            let (s, f) = if self.orientation == Orientation::RowsAreSamples {
                (i, j)
            } else {
                (j, i)
            };
            if s < rows.start {
                continue;
            }
            if s >= rows.end {
                break;
            }
            if s < current {
                return Err(lines
                    .error("the file changed while it was read (no longer sorted by row)".into()));
            }
            while current < s {
                push_row(&mut block, &mut row);
                row.clear();
                current += 1;
                if block.nnz() >= BLOCK_ENTRIES
                    && let Some(e) = emit(&mut block)
                {
                    return Ok(Some(e));
                }
            }
            row.push((f, v));
        }
        while current < rows.end {
            push_row(&mut block, &mut row);
            row.clear();
            current += 1;
        }
        Ok(if block.nrows() > 0 {
            emit(&mut block)
        } else {
            None
        })
    }
}

/// The `field`-th tab-separated field of every line of a (gzipped) TSV file; the first when a
/// line has fewer.
fn read_names(path: &Path, field: usize) -> Result<Vec<String>> {
    let mut text = String::new();
    open_text(path)?
        .read_to_string(&mut text)
        .map_err(|source| IoError::Read {
            path: path.to_owned(),
            source,
        })?;
    Ok(text
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let fields: Vec<&str> = l.split('\t').collect();
            fields.get(field).unwrap_or(&fields[0]).to_string()
        })
        .collect())
}

/// Rows read once to be held ([`SparseFile::hold_within`]), their values kept as f32 while
/// every one converts exactly (log-normalised counts stored as float32, as AnnData files
/// usually hold them): the same numbers in 8 bytes an entry instead of 12, for every pass to
/// stream; the first value that does not turns the rows held so far to f64.
struct Held {
    narrow: Csr<f32, u32>,
    wide: Option<Csr<f64, u32>>,
    rows: usize,
    capacity: usize,
}

impl Held {
    /// Room for `rows` rows and `capacity` entries first: no copy of growing arrays, so the
    /// peak is the arrays and one block being read.
    fn new(n_features: usize, rows: usize, capacity: usize) -> Self {
        Held {
            narrow: Csr::with_capacity(n_features, rows, capacity),
            wide: None,
            rows,
            capacity,
        }
    }

    fn append(&mut self, block: principal::sparse::CsrRef<'_, f64, u32>) {
        let exact = |v: f64| f64::from(v as f32).to_bits() == v.to_bits();
        if self.wide.is_none() && !block.values().iter().all(|&v| exact(v)) {
            // The rows held so far, converted straight into the f64 arrays.
            let narrow = std::mem::replace(&mut self.narrow, Csr::new(block.ncols()));
            let mut csr = Csr::<f64, u32>::with_capacity(block.ncols(), self.rows, self.capacity);
            csr.append_converted(narrow.as_ref(), f64::from);
            self.wide = Some(csr);
        }
        match self.wide.as_mut() {
            Some(csr) => csr.append(block),
            None => self.narrow.append_converted(block, |v| v as f32),
        }
    }

    fn finish(self) -> Storage {
        match self.wide {
            Some(csr) => Storage::Memory(csr),
            None => Storage::Narrow(self.narrow),
        }
    }
}

/// A pass over rows held in memory: blocks of about [`BLOCK_ENTRIES`] entries, in order.
fn pass_held(
    x: CsrChunk<'_>,
    visit: &mut dyn FnMut(CsrChunk<'_>) -> principal::Result<()>,
) -> principal::Result<()> {
    let rows = (BLOCK_ENTRIES * x.nrows() / x.nnz().max(1)).clamp(1, x.nrows().max(1));
    let mut start = 0;
    while start < x.nrows() {
        let r = rows.min(x.nrows() - start);
        visit(x.subrows(start, r))?;
        start += r;
    }
    Ok(())
}

impl SparseSource for SparseFile {
    fn n_features(&self) -> usize {
        self.n_features
    }

    fn pass(
        &mut self,
        visit: &mut dyn FnMut(CsrChunk<'_>) -> principal::Result<()>,
    ) -> principal::Result<()> {
        match &mut self.storage {
            Storage::H5ad { source, budget }
                if !source.splittable() && self.rows != (0..self.n_samples) =>
            {
                // CSC read from its first row: the blocks' rows outside the part dropped.
                let rows = self.rows.clone();
                let mut first = 0;
                let mut keep = |block: CsrChunk<'_>| {
                    let (start, end) = (first, first + block.nrows());
                    first = end;
                    let (a, b) = (start.max(rows.start), end.min(rows.end));
                    if a < b {
                        visit(block.subrows(a - start, b - a))
                    } else {
                        Ok(())
                    }
                };
                match source.sparse_pass(*budget, &mut keep) {
                    Ok(None) => Ok(()),
                    Ok(Some(visit_error)) => Err(visit_error),
                    Err(e) => Err(PcaError::Source(Box::new(e))),
                }
            }
            Storage::H5ad { source, budget } => match source.sparse_pass(*budget, visit) {
                Ok(None) => Ok(()),
                Ok(Some(visit_error)) => Err(visit_error),
                Err(e) => Err(PcaError::Source(Box::new(e))),
            },
            Storage::Memory(csr) => pass_held(csr.as_chunk(), visit),
            Storage::Narrow(csr) => pass_held(csr.as_chunk(), visit),
            Storage::Stream => match self.stream_pass(visit) {
                Ok(None) => Ok(()),
                Ok(Some(visit_error)) => Err(visit_error),
                Err(e) => Err(PcaError::Source(Box::new(e))),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures")
            .join(name)
    }

    /// Every row a pass hands out, dense (small fixtures only), in order.
    fn rows_of(file: &mut SparseFile) -> Vec<Vec<f64>> {
        let d = file.n_features();
        let mut rows = Vec::new();
        file.pass(&mut |block| {
            let mut push = |idx: &[u32], val: &mut dyn Iterator<Item = f64>| {
                let mut row = vec![0.0; d];
                for (j, v) in idx.iter().zip(val) {
                    row[*j as usize] += v;
                }
                rows.push(row);
            };
            match block {
                CsrChunk::F64U32(x) => (0..x.nrows()).for_each(|i| {
                    let (idx, val) = x.row(i);
                    push(idx, &mut val.iter().copied())
                }),
                CsrChunk::F32U32(x) => (0..x.nrows()).for_each(|i| {
                    let (idx, val) = x.row(i);
                    push(idx, &mut val.iter().map(|&v| f64::from(v)))
                }),
                _ => panic!("the readers hand out u32 indices"),
            }
            Ok(())
        })
        .unwrap();
        rows
    }

    /// An `.h5ad` matrix whose CSR arrays take at most half the memory limit is read once by
    /// `hold_within` (not by opening: a transform's one pass streams): its passes go on after
    /// the file is emptied, with the rows a streamed pass reads (CSR and CSC, whole and a part
    /// of the rows). Over half the limit, the passes read the file
    /// (`is_streamed`; hdf5-pure may hold so small a file's blocks, so its emptying is not seen).
    #[test]
    #[cfg(feature = "h5ad")]
    fn an_h5ad_matrix_within_half_the_limit_is_read_once() {
        let dir = std::env::temp_dir().join(format!("principal-h5ad-held-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let options = ReadOptions::default();
        for name in ["x_csr_f64.h5ad", "x_csc_f64.h5ad"] {
            for part in [None, Some(Part { rank: 1, size: 3 })] {
                let path = dir.join(name);
                std::fs::copy(fixture("h5ad").join(name), &path).unwrap();
                // 133 entries: 1.6 kB as CSR arrays.
                let open = |limit| {
                    let mut file = SparseFile::open_with_rows(&path, &options, limit, part)?;
                    file.hold_within(limit)?;
                    Ok::<_, IoError>(file)
                };
                let mut streamed = open(2048).unwrap();
                let mut held = open(1 << 20).unwrap();
                let opened = SparseFile::open_with_rows(&path, &options, 1 << 20, part);
                assert!(opened.unwrap().is_streamed(), "{name}: opened, not held");
                assert!(streamed.is_streamed() && !held.is_streamed(), "{name}");
                let want = rows_of(&mut streamed);
                assert_eq!(want.len(), held.rows().len(), "{name} {part:?}");
                // Emptied in place (an open handle would still read a removed file).
                std::fs::write(&path, b"").unwrap();
                assert_eq!(rows_of(&mut held), want, "{name} {part:?}");
                assert_eq!(rows_of(&mut held), want, "{name} {part:?}: a second pass");
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Held rows keep f32 values while every value is exact in f32, and turn to f64 at the
    /// first block with one that is not (the rows before it kept): the same values either way.
    #[test]
    fn held_rows_are_narrowed_only_while_every_value_is_exact_in_f32() {
        let d = 5;
        let block = |values: &[f64]| {
            let mut csr = Csr::<f64, u32>::new(d);
            for (i, &v) in values.iter().enumerate() {
                csr.push_row(&[(i % d, v), ((i + 2) % d, -v)]).unwrap();
            }
            csr
        };
        let exact = block(&[1.5, 0.25, 3.0]);
        let inexact = block(&[0.1, 2.0]);
        let values = |storage: &Storage| -> Vec<f64> {
            match storage {
                Storage::Narrow(csr) => csr
                    .as_ref()
                    .values()
                    .iter()
                    .map(|&v| f64::from(v))
                    .collect(),
                Storage::Memory(csr) => csr.as_ref().values().to_vec(),
                _ => panic!("held rows"),
            }
        };
        let mut held = Held::new(d, 8, 16);
        held.append(exact.as_ref());
        held.append(exact.as_ref());
        let narrow = held.finish();
        assert!(matches!(narrow, Storage::Narrow(_)));
        assert_eq!(
            values(&narrow),
            [1.5, -1.5, 0.25, -0.25, 3.0, -3.0].repeat(2)
        );
        let mut held = Held::new(d, 8, 16);
        held.append(exact.as_ref());
        held.append(inexact.as_ref());
        held.append(exact.as_ref());
        let wide = held.finish();
        let Storage::Memory(csr) = &wide else {
            panic!("0.1 is not exact in f32: the rows are held as f64")
        };
        assert_eq!(csr.nrows(), 8);
        let mut want = vec![1.5, -1.5, 0.25, -0.25, 3.0, -3.0, 0.1, -0.1, 2.0, -2.0];
        want.extend([1.5, -1.5, 0.25, -0.25, 3.0, -3.0]);
        assert_eq!(values(&wide), want);
        assert_eq!(csr.as_ref().indptr(), [0, 2, 4, 6, 8, 10, 12, 14, 16]);
        assert_eq!(csr.as_ref().row(3).0, [0, 2]);
        assert_eq!(csr.as_ref().row(4).0, [1, 3]);
    }

    /// The parts of 1 to 4 processes hand out their equal ranges of the rows, which together
    /// are the whole file's rows in order: a shuffled MatrixMarket file held in memory, one
    /// sorted by row and streamed, a 10x directory (its barcodes sliced alike), and .h5ad CSR
    /// (indptr from the part on) and CSC (read from the first row, the part's rows kept).
    #[test]
    fn the_parts_rows_join_to_the_whole_file_in_every_format() {
        let dir = std::env::temp_dir().join(format!("principal-mtx-parts-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let sorted = dir.join("sorted.mtx");
        let (n, d) = (3000, 60);
        let mut text = String::new();
        let mut entries = 0;
        for i in 0..n {
            for j in 0..d {
                if (i * 7 + j * 13) % 5 < 2 {
                    text.push_str(&format!("{} {} {}\n", i + 1, j + 1, (i + j) % 9 + 1));
                    entries += 1;
                }
            }
        }
        std::fs::write(
            &sorted,
            format!("%%MatrixMarket matrix coordinate integer general\n{n} {d} {entries}\n{text}"),
        )
        .unwrap();
        // 72,000 entries ≈ 0.86 MB as CSR: under a limit of 256 kB streamed whole and in parts
        // of up to 4 processes (≈ 0.22 MB each, over half the limit).
        let inputs = [
            (fixture("sparse/counts.mtx"), 1u64 << 30),
            (fixture("sparse/tenx"), 1 << 30),
            (fixture("h5ad/x_csr_f64.h5ad"), 1 << 30),
            (fixture("h5ad/x_csc_f64.h5ad"), 1 << 30),
            (fixture("h5ad/x_csr_f64.h5ad"), 2048),
            (fixture("h5ad/x_csc_f64.h5ad"), 2048),
            (sorted.clone(), 1 << 18),
        ]
        .into_iter()
        .filter(|(path, _)| cfg!(feature = "h5ad") || path.extension().is_none_or(|e| e != "h5ad"))
        .collect::<Vec<_>>();
        let options = ReadOptions::default();
        for (path, limit) in &inputs {
            let mut whole = SparseFile::open_with(path, &options, *limit).unwrap();
            let expected = rows_of(&mut whole);
            let total = whole.n_samples();
            assert_eq!(expected.len(), total);
            for size in 1..=4 {
                let mut joined = Vec::new();
                let mut names = Vec::new();
                for rank in 0..size {
                    let mut part =
                        SparseFile::open_part(path, &options, *limit, rank, size).unwrap();
                    if path == &sorted {
                        assert!(part.is_streamed(), "{rank}/{size}");
                    }
                    let rows = part.rows();
                    assert_eq!(rows, rank * total / size..(rank + 1) * total / size);
                    let got = rows_of(&mut part);
                    assert_eq!(got.len(), rows.len(), "{path:?} {rank}/{size}");
                    joined.extend(got);
                    if let Some(cells) = part.sample_names() {
                        names.extend(cells.to_vec());
                    }
                }
                assert_eq!(joined, expected, "{path:?} over {size}");
                if let Some(cells) = whole.sample_names() {
                    assert_eq!(names, cells, "{path:?} barcodes");
                }
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
