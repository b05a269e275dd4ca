//! AnnData `.h5ad` files (HDF5, read with the pure-Rust `hdf5-pure` crate): the matrix `X`, or
//! `layers/NAME`, stored dense (a 2-D dataset) or sparse (a `csr_matrix` or `csc_matrix` group
//! of `data`, `indices` and `indptr` with a `shape` attribute), streamed by rows in the stream's
//! element type; the genes' names (`var`'s index) are the column names, and a boolean `var`
//! column can keep only the genes it marks (`--mask-var`, scanpy's `mask_var`).
//!
//! Every read is a window: a dense matrix by row hyperslabs; CSR by `indptr`'s slice for the
//! rows, then those rows' `indices` and `data`; CSC by one cursor per kept column, each block
//! of rows taking from every column the entries whose (sorted) row indices fall in it — so
//! CSC is never turned around in memory (the cursors are O(D); each block reads each kept
//! column's entries once, so a file is read once in all, at the cost of two small reads per
//! column and block). Whatever the file says is checked before it is used: `indptr`
//! non-decreasing and within the arrays, indices within the shape, the arrays as long as the
//! shape and `indptr` say, values finite.

use std::ops::Range;
use std::path::{Path, PathBuf};

use hdf5_pure::{AttrValue, DType, Dataset, File};
use principal::PcaError;
use principal::sparse::{Csr, CsrChunk};

use crate::error::{IoError, Result};
use crate::read::bounded::contain;
use crate::read::columns::resolve_columns;
use crate::read::options::{Missing, ReadOptions};
use crate::read::rows::{Dst, RowBuf};
use crate::read::sparse_rows::push_row;

/// The most entries of a CSC column read ahead at once while looking for a block's end.
const CSC_WINDOW_MAX: u64 = 1 << 16;

/// How the matrix is stored.
enum Stored {
    Dense(Dataset),
    Csr {
        data: Dataset,
        indices: Dataset,
        indptr: Dataset,
        nnz: u64,
    },
    Csc {
        data: Dataset,
        indices: Dataset,
        /// Column pointers (D + 1 of them, checked at open).
        colptr: Vec<u64>,
        /// For every column, the position in `indices`/`data` of its next unread entry.
        cursor: Vec<u64>,
    },
}

/// An open `.h5ad` file: its matrix, its kept genes and where the next row is.
pub(crate) struct H5adSource {
    path: PathBuf,
    /// Where the matrix lives in the file (`X` or `layers/NAME`), for messages.
    matrix_path: String,
    stored: Stored,
    n_rows: usize,
    n_cols: usize,
    /// For every stored column, its place among the kept columns.
    position: Vec<Option<usize>>,
    n_kept: usize,
    names: Vec<String>,
    f32: bool,
    missing: Missing,
    /// The first row to read (a process's part starts later).
    first: usize,
    next: usize,
    end: usize,
    /// The `hdf5-pure` file, kept open while the datasets are read.
    _file: File,
}

/// The error for `detail` about `path`.
fn format_error(path: &Path, detail: impl Into<String>) -> IoError {
    IoError::Format {
        path: path.to_owned(),
        detail: detail.into(),
    }
}

/// An `hdf5-pure` error as a message: its own "… error: " wording folded into the one
/// `error:` line the command prints.
pub(crate) fn hdf5_message(e: &hdf5_pure::Error) -> String {
    e.to_string().replace(" error: ", ": ")
}

/// Runs an `hdf5-pure` call, its errors and panics turned into errors naming the file and
/// `what` was being read.
fn h5<T>(
    path: &Path,
    what: impl Fn() -> String,
    call: impl FnOnce() -> std::result::Result<T, hdf5_pure::Error>,
) -> Result<T> {
    contain(path, &what, || {
        call().map_err(|e| format_error(path, format!("{}: {}", what(), hdf5_message(&e))))
    })
}

/// A string attribute's value, whatever string encoding it was written with.
fn attr_string(value: &AttrValue) -> Option<String> {
    match value {
        AttrValue::String(s)
        | AttrValue::AsciiString(s)
        | AttrValue::VarLenString(s)
        | AttrValue::VarLenAsciiString(s) => Some(s.clone()),
        AttrValue::StringSized { value, .. } | AttrValue::AsciiStringSized { value, .. } => {
            Some(value.clone())
        }
        _ => None,
    }
}

/// An integer array attribute (such as `shape`).
fn attr_integers(value: &AttrValue) -> Option<Vec<i128>> {
    Some(match value {
        AttrValue::I64Array(v) => v.iter().map(|&x| i128::from(x)).collect(),
        AttrValue::I32Array(v) => v.iter().map(|&x| i128::from(x)).collect(),
        AttrValue::U64Array(v) => v.iter().map(|&x| i128::from(x)).collect(),
        AttrValue::U32Array(v) => v.iter().map(|&x| i128::from(x)).collect(),
        AttrValue::I64(x) => vec![i128::from(*x)],
        AttrValue::U64(x) => vec![i128::from(*x)],
        _ => return None,
    })
}

/// Whether values of this stored type are exact in f32.
fn exact_in_f32(dtype: &DType) -> bool {
    matches!(
        dtype,
        DType::F32 | DType::I8 | DType::I16 | DType::U8 | DType::U16
    )
}

fn is_numeric(dtype: &DType) -> bool {
    matches!(
        dtype,
        DType::F32
            | DType::F64
            | DType::I8
            | DType::I16
            | DType::I32
            | DType::I64
            | DType::U8
            | DType::U16
            | DType::U32
            | DType::U64
    )
}

fn is_integer(dtype: &DType) -> bool {
    is_numeric(dtype) && !matches!(dtype, DType::F32 | DType::F64)
}

/// The strings of a dataframe's index (`obs` or `var`): the dataset its `_index` attribute
/// names, variable-length (anndata ≥ 0.7) or fixed-length byte strings (older files).
pub(crate) fn read_index(path: &Path, file: &File, frame: &str) -> Result<Vec<String>> {
    let group = h5(path, || format!("the {frame} group"), || file.group(frame))?;
    let attrs = h5(
        path,
        || format!("the attributes of {frame}"),
        || group.attrs(),
    )?;
    let key = attrs
        .get("_index")
        .and_then(attr_string)
        .unwrap_or_else(|| "_index".to_owned());
    let name = format!("{frame}/{key}");
    let dataset = h5(path, || format!("dataset {name}"), || file.dataset(&name))?;
    h5(
        path,
        || format!("the names in {name}"),
        || dataset.read_string(),
    )
}

/// The values of boolean column `column` of `var` (a bool dataset, or anndata's
/// `nullable-boolean` group of `values` and `mask`, where a masked entry is false).
fn read_mask(path: &Path, file: &File, column: &str, n_cols: usize) -> Result<Vec<bool>> {
    let name = format!("var/{column}");
    let what = || format!("the var column {column:?} (--mask-var)");
    let var = h5(path, || "the var group".into(), || file.group("var"))?;
    let columns = h5(path, || "the var group".into(), || var.datasets())?;
    let groups = h5(path, || "the var group".into(), || var.groups())?;
    let leaf = |full: &String| full.rsplit('/').next().unwrap_or(full).to_owned();
    let values = if columns.iter().any(|c| leaf(c) == column) {
        let dataset = h5(path, what, || file.dataset(&name))?;
        bool_values(path, &dataset, &name)?
    } else if groups.iter().any(|g| leaf(g) == column) {
        let values = h5(path, what, || file.dataset(&format!("{name}/values")))?;
        let mask = h5(path, what, || file.dataset(&format!("{name}/mask")))?;
        let values = bool_values(path, &values, &name)?;
        let mask = bool_values(path, &mask, &name)?;
        values.iter().zip(&mask).map(|(&v, &m)| v && !m).collect()
    } else {
        let mut available: Vec<String> = columns.iter().chain(&groups).map(leaf).collect();
        available.retain(|c| c != "_index");
        return Err(format_error(
            path,
            format!(
                "--mask-var {column:?}: var has no column of that name; its columns are {}",
                if available.is_empty() {
                    "none".to_owned()
                } else {
                    available.join(", ")
                }
            ),
        ));
    };
    if values.len() != n_cols {
        return Err(format_error(
            path,
            format!(
                "the var column {column:?} has {} values for {n_cols} genes",
                values.len()
            ),
        ));
    }
    Ok(values)
}

fn bool_values(path: &Path, dataset: &Dataset, name: &str) -> Result<Vec<bool>> {
    let dtype = h5(path, || format!("the type of {name}"), || dataset.dtype())?;
    let boolean = match &dtype {
        DType::Enum(members) => members.len() == 2,
        other => is_integer(other),
    };
    if !boolean {
        return Err(format_error(
            path,
            format!("{name} holds {dtype}, not booleans: --mask-var needs a boolean var column"),
        ));
    }
    let raw = h5(
        path,
        || format!("the values of {name}"),
        || dataset.read_raw(),
    )?;
    let size = h5(
        path,
        || format!("the type of {name}"),
        || dataset.element_size(),
    )? as usize;
    Ok(raw
        .chunks_exact(size.max(1))
        .map(|c| c.iter().any(|&b| b != 0))
        .collect())
}

impl H5adSource {
    /// Opens `path` and reads what the rows need: the matrix's encoding, shape and element
    /// type, the genes' names, and the mask.
    pub(crate) fn open(path: &Path, options: &ReadOptions) -> Result<H5adSource> {
        let file = h5(
            path,
            || "the HDF5 file".into(),
            || File::open_streaming(path),
        )?;
        let matrix_path = match &options.layer {
            Some(layer) => format!("layers/{layer}"),
            None => "X".to_owned(),
        };
        let root = file.root();
        let top_groups = h5(path, || "the file's root".into(), || root.groups())?;
        let top_sets = h5(path, || "the file's root".into(), || root.datasets())?;
        let leaf = |full: &String| full.rsplit('/').next().unwrap_or(full).to_owned();
        let in_root = |name: &str| {
            top_groups.iter().any(|g| leaf(g) == name) || top_sets.iter().any(|d| leaf(d) == name)
        };
        if let Some(layer) = &options.layer {
            let layers = if in_root("layers") {
                let group = h5(path, || "layers".into(), || file.group("layers"))?;
                let mut names: Vec<String> = h5(path, || "layers".into(), || group.groups())?
                    .iter()
                    .chain(&h5(path, || "layers".into(), || group.datasets())?)
                    .map(leaf)
                    .collect();
                names.sort();
                names
            } else {
                Vec::new()
            };
            if !layers.contains(layer) {
                return Err(format_error(
                    path,
                    format!(
                        "--layer {layer:?}: the file has no layer of that name; its layers are {}",
                        if layers.is_empty() {
                            "none".to_owned()
                        } else {
                            layers.join(", ")
                        }
                    ),
                ));
            }
        } else if !in_root("X") {
            return Err(format_error(
                path,
                "the file has no X matrix (an AnnData file written with X=None); read one of \
                 its layers with --layer NAME",
            ));
        }
        let is_group = if options.layer.is_some() {
            let group = h5(path, || "layers".into(), || file.group("layers"))?;
            h5(path, || "layers".into(), || group.groups())?
                .iter()
                .any(|g| leaf(g) == leaf(&matrix_path))
        } else {
            top_groups.iter().any(|g| leaf(g) == "X")
        };
        let (stored, n_rows, n_cols, dtype) = if is_group {
            open_sparse(path, &file, &matrix_path)?
        } else {
            let dataset = h5(
                path,
                || format!("dataset {matrix_path}"),
                || file.dataset(&matrix_path),
            )?;
            let shape = h5(
                path,
                || format!("the shape of {matrix_path}"),
                || dataset.shape(),
            )?;
            if shape.len() != 2 {
                return Err(format_error(
                    path,
                    format!(
                        "{matrix_path} has {} dimension(s) {shape:?}; a matrix has 2",
                        shape.len()
                    ),
                ));
            }
            let dtype = h5(
                path,
                || format!("the type of {matrix_path}"),
                || dataset.dtype(),
            )?;
            (
                Stored::Dense(dataset),
                shape[0] as usize,
                shape[1] as usize,
                dtype,
            )
        };
        if !is_numeric(&dtype) {
            return Err(format_error(
                path,
                format!("{matrix_path} holds {dtype}, not numbers"),
            ));
        }
        if n_rows == 0 {
            return Err(IoError::NoData {
                path: path.to_owned(),
                detail: "",
            });
        }
        let var_names = read_index(path, &file, "var")?;
        IoError::check_name_count(path, Some(&var_names), n_cols).map_err(|_| {
            format_error(
                path,
                format!(
                    "var has {} gene names for the {n_cols} columns of {matrix_path}",
                    var_names.len()
                ),
            )
        })?;
        let obs_names = read_index(path, &file, "obs")?;
        if obs_names.len() != n_rows {
            return Err(format_error(
                path,
                format!(
                    "obs has {} cell names for the {n_rows} rows of {matrix_path}",
                    obs_names.len()
                ),
            ));
        }
        // The mask first (scanpy's mask_var), then --columns/--exclude among the masked genes.
        let masked: Vec<usize> = match &options.mask_var {
            Some(column) => {
                let mask = read_mask(path, &file, column, n_cols)?;
                let kept: Vec<usize> = (0..n_cols).filter(|&j| mask[j]).collect();
                if kept.is_empty() {
                    return Err(format_error(
                        path,
                        format!("--mask-var {column:?}: the column marks no gene"),
                    ));
                }
                kept
            }
            None => (0..n_cols).collect(),
        };
        let masked_names: Vec<String> = masked.iter().map(|&j| var_names[j].clone()).collect();
        let chosen = resolve_columns(path, masked.len(), Some(&masked_names), options)?;
        let mut position = vec![None; n_cols];
        for (p, &c) in chosen.iter().enumerate() {
            position[masked[c]] = Some(p);
        }
        let names = chosen.iter().map(|&c| masked_names[c].clone()).collect();
        Ok(H5adSource {
            path: path.to_owned(),
            matrix_path,
            stored,
            n_rows,
            n_cols,
            position,
            n_kept: chosen.len(),
            names,
            f32: exact_in_f32(&dtype),
            missing: options.missing,
            first: 0,
            next: 0,
            end: n_rows,
            _file: file,
        })
    }

    pub(crate) fn n_features(&self) -> usize {
        self.n_kept
    }

    pub(crate) fn column_names(&self) -> Option<&[String]> {
        Some(&self.names)
    }

    pub(crate) fn is_f32(&self) -> bool {
        self.f32
    }

    pub(crate) fn n_rows(&self) -> usize {
        self.n_rows
    }

    /// Whether a process can read a part of the rows: dense and CSR, not CSC (whose cursors
    /// start at the first row).
    pub(crate) fn splittable(&self) -> bool {
        !matches!(self.stored, Stored::Csc { .. })
    }

    /// Reads only `rows` from now on (a process's part of the file); CSR and dense only, as a
    /// CSC file's cursors start at its first row.
    pub(crate) fn restrict(&mut self, rows: Range<usize>) -> Result<()> {
        if matches!(self.stored, Stored::Csc { .. }) && rows.start > 0 {
            return Err(format_error(
                &self.path,
                format!(
                    "{} is stored by columns (csc_matrix), which is read from its first row \
                     only; several processes need it by rows (adata.X = adata.X.tocsr())",
                    self.matrix_path
                ),
            ));
        }
        self.next = rows.start.min(self.n_rows);
        self.first = self.next;
        self.end = rows.end.min(self.n_rows).max(self.next);
        Ok(())
    }

    /// Appends up to `max_rows` rows to `out`; returns how many (0 at the end).
    pub(crate) fn read_rows(&mut self, max_rows: usize, out: &mut RowBuf) -> Result<usize> {
        let k = max_rows.min(self.end - self.next);
        if k == 0 {
            return Ok(0);
        }
        let r0 = self.next;
        let n_kept = self.n_kept;
        let mut block = vec![0.0f64; k * n_kept];
        match &mut self.stored {
            Stored::Dense(dataset) => read_dense(
                &self.path,
                &self.matrix_path,
                dataset,
                r0,
                k,
                self.n_cols,
                &self.position,
                self.n_kept,
                &mut block,
            )?,
            Stored::Csr {
                data,
                indices,
                indptr,
                nnz,
            } => read_csr(
                &self.path,
                &self.matrix_path,
                (data, indices, indptr, *nnz),
                r0,
                k,
                self.n_cols,
                &self.position,
                self.n_kept,
                &mut block,
            )?,
            Stored::Csc {
                data,
                indices,
                colptr,
                cursor,
            } => read_csc(
                &self.path,
                &self.matrix_path,
                (data, indices, colptr, cursor),
                (r0, k, self.n_rows),
                &self.position,
                &mut |i, p, v| block[i * n_kept + p] += v,
            )?,
        }
        self.check_values(r0, &block)?;
        match out.grow(block.len()) {
            Dst::F32(d) => {
                for (d, &v) in d.iter_mut().zip(&block) {
                    *d = v as f32;
                }
            }
            Dst::F64(d) => d.copy_from_slice(&block),
        }
        self.next += k;
        Ok(k)
    }

    /// Whether the matrix is stored sparse (CSR or CSC): then [`Self::sparse_pass`] reads it.
    pub(crate) fn is_sparse(&self) -> bool {
        !matches!(self.stored, Stored::Dense(_))
    }

    /// How the matrix is stored, for `--explain`: `csr_matrix`, `csc_matrix` or `dense`.
    pub(crate) fn encoding(&self) -> &'static str {
        match self.stored {
            Stored::Dense(_) => "dense",
            Stored::Csr { .. } => "csr_matrix",
            Stored::Csc { .. } => "csc_matrix",
        }
    }

    /// The entries stored in the rows to read (all columns, before the mask): the sparse cost
    /// model's count. A dense matrix's every value.
    pub(crate) fn stored_entries(&self) -> u64 {
        match &self.stored {
            Stored::Dense(_) => ((self.end - self.first) * self.n_cols) as u64,
            Stored::Csr { nnz, .. } => *nnz,
            Stored::Csc { colptr, .. } => colptr[self.n_cols],
        }
    }

    /// The rows to read (the whole file, or a process's part).
    pub(crate) fn rows_to_read(&self) -> usize {
        self.end - self.first
    }

    /// One pass over the rows to read as CSR blocks (the kept columns only, renumbered;
    /// repeated entries summed), never densified: `visit` gets blocks of at most `budget`
    /// stored entries (a row with more is a block of its own). CSR reads each block's slice
    /// of `indptr`, then its `indices` and `data`; CSC takes each kept column's entries in the
    /// block's rows by the column's cursor (see the module's documentation), the block's rows
    /// sized by the matrix's mean entries per row. Returns the error `visit` returned, if any.
    /// Memory: one block's entries, about 44 bytes each while it is built, and for CSR the
    /// `indptr` of the rows to read (8 bytes a row).
    pub(crate) fn sparse_pass(
        &mut self,
        budget: usize,
        visit: &mut dyn FnMut(CsrChunk<'_>) -> principal::Result<()>,
    ) -> Result<Option<PcaError>> {
        let budget = budget.max(1) as u64;
        let (first, end, n_rows, n_cols) = (self.first, self.end, self.n_rows, self.n_cols);
        let mut block = Csr::<f64, u32>::new(self.n_kept);
        let mut row: Vec<(usize, f64)> = Vec::new();
        match &mut self.stored {
            Stored::Dense(_) => unreachable!("sparse_pass of a dense matrix"),
            Stored::Csr {
                data,
                indices,
                indptr,
                nnz,
            } => {
                if first == end {
                    return Ok(None);
                }
                let raw = window(
                    &self.path,
                    &self.matrix_path,
                    "indptr",
                    first as u64..(end + 1) as u64,
                    |a, n| indptr.read_i64_rows(a, n),
                )?;
                let ptr =
                    checked_pointers(&self.path, &self.matrix_path, &raw, first, *nnz, "row")?;
                let mut r = 0;
                while r < end - first {
                    // As many rows as fit in the budget, at least one.
                    let mut k = 1;
                    while r + k < end - first && ptr[r + k + 1] - ptr[r] <= budget {
                        k += 1;
                    }
                    let span = ptr[r]..ptr[r + k];
                    block.clear();
                    let (cols, values) = if span.is_empty() {
                        (Vec::new(), Vec::new())
                    } else {
                        (
                            window(
                                &self.path,
                                &self.matrix_path,
                                "indices",
                                span.clone(),
                                |a, n| indices.read_i64_rows(a, n),
                            )?,
                            window(
                                &self.path,
                                &self.matrix_path,
                                "data",
                                span.clone(),
                                |a, n| data.read_f64_rows(a, n),
                            )?,
                        )
                    };
                    for i in 0..k {
                        row.clear();
                        let at = first + r + i;
                        for e in (ptr[r + i] - span.start)..(ptr[r + i + 1] - span.start) {
                            let e = e as usize;
                            let j = cols[e];
                            if j < 0 || j as u64 >= n_cols as u64 {
                                return Err(format_error(
                                    &self.path,
                                    format!(
                                        "{}/indices[{}] = {j} (row {at}) is out of range: the \
                                         matrix has {n_cols} columns",
                                        self.matrix_path,
                                        span.start + e as u64,
                                    ),
                                ));
                            }
                            if let Some(p) = self.position[j as usize] {
                                row.push((p, values[e]));
                            }
                        }
                        finite_row(&self.path, at, &row, &self.position)?;
                        push_row(&mut block, &mut row);
                    }
                    if let Err(e) = visit(block.as_chunk()) {
                        return Ok(Some(e));
                    }
                    r += k;
                }
            }
            Stored::Csc {
                data,
                indices,
                colptr,
                cursor,
            } => {
                cursor.copy_from_slice(&colptr[..n_cols]);
                let nnz = colptr[n_cols].max(1);
                let rows_per_block =
                    ((budget as u128 * n_rows as u128 / nnz as u128) as usize).max(1);
                // (row in the block, kept position, value), gathered column by column, then
                // laid out by row with a counting sort.
                let mut entries: Vec<(u32, u32, f64)> = Vec::new();
                let mut counts: Vec<usize> = Vec::new();
                let mut by_row: Vec<(usize, f64)> = Vec::new();
                let mut r0 = first;
                while r0 < end {
                    let k = rows_per_block.min(end - r0);
                    entries.clear();
                    read_csc(
                        &self.path,
                        &self.matrix_path,
                        (data, indices, colptr, cursor),
                        (r0, k, n_rows),
                        &self.position,
                        &mut |i, p, v| entries.push((i as u32, p as u32, v)),
                    )?;
                    counts.clear();
                    counts.resize(k + 1, 0);
                    for &(i, _, _) in &entries {
                        counts[i as usize + 1] += 1;
                    }
                    for i in 0..k {
                        counts[i + 1] += counts[i];
                    }
                    by_row.clear();
                    by_row.resize(entries.len(), (0, 0.0));
                    let mut next = counts.clone();
                    for &(i, p, v) in &entries {
                        by_row[next[i as usize]] = (p as usize, v);
                        next[i as usize] += 1;
                    }
                    block.clear();
                    for i in 0..k {
                        row.clear();
                        row.extend_from_slice(&by_row[counts[i]..counts[i + 1]]);
                        finite_row(&self.path, r0 + i, &row, &self.position)?;
                        push_row(&mut block, &mut row);
                    }
                    if let Err(e) = visit(block.as_chunk()) {
                        return Ok(Some(e));
                    }
                    r0 += k;
                }
            }
        }
        Ok(None)
    }

    /// NaN is an error unless missing values are read; infinities always are.
    fn check_values(&self, r0: usize, block: &[f64]) -> Result<()> {
        let allow_nan = self.missing == Missing::AsNan;
        if let Some(at) = block
            .iter()
            .position(|v| !v.is_finite() && (!allow_nan || !v.is_nan()))
        {
            let kept = at % self.n_kept;
            let column = self
                .position
                .iter()
                .position(|&p| p == Some(kept))
                .unwrap_or(0);
            return Err(IoError::NonFiniteElement {
                path: self.path.clone(),
                row: r0 + at / self.n_kept,
                column,
                value: block[at],
            });
        }
        Ok(())
    }
}

/// A sparse row's values checked finite (a sparse fit has no missing values); the error names
/// the row, the stored column and the value.
fn finite_row(
    path: &Path,
    row: usize,
    entries: &[(usize, f64)],
    position: &[Option<usize>],
) -> Result<()> {
    if let Some(&(p, value)) = entries.iter().find(|e| !e.1.is_finite()) {
        let column = position.iter().position(|&q| q == Some(p)).unwrap_or(0);
        return Err(IoError::NonFiniteElement {
            path: path.to_owned(),
            row,
            column,
            value,
        });
    }
    Ok(())
}

/// Opens a `csr_matrix` or `csc_matrix` group: its arrays, and its shape checked against them.
fn open_sparse(path: &Path, file: &File, name: &str) -> Result<(Stored, usize, usize, DType)> {
    let group = h5(path, || format!("group {name}"), || file.group(name))?;
    let attrs = h5(
        path,
        || format!("the attributes of {name}"),
        || group.attrs(),
    )?;
    let encoding = attrs.get("encoding-type").and_then(attr_string);
    let csr = match encoding.as_deref() {
        Some("csr_matrix") => true,
        Some("csc_matrix") => false,
        other => {
            return Err(format_error(
                path,
                format!(
                    "{name} is a group with encoding-type {}: only csr_matrix and csc_matrix \
                     groups (or a dense dataset) can be read",
                    other.map_or("(none)".to_owned(), |e| format!("{e:?}"))
                ),
            ));
        }
    };
    let shape = attrs
        .get("shape")
        .and_then(attr_integers)
        .filter(|s| {
            s.len() == 2
                && s.iter()
                    .all(|&d| (0..=i128::from(u32::MAX) * 1024).contains(&d))
        })
        .ok_or_else(|| {
            format_error(
                path,
                format!("{name} has no valid shape attribute (two non-negative integers)"),
            )
        })?;
    let (n_rows, n_cols) = (shape[0] as usize, shape[1] as usize);
    let open = |part: &str| {
        let full = format!("{name}/{part}");
        h5(path, || format!("dataset {full}"), || file.dataset(&full))
    };
    let (data, indices, indptr) = (open("data")?, open("indices")?, open("indptr")?);
    let length = |d: &Dataset, part: &str| -> Result<u64> {
        let s = h5(path, || format!("the shape of {name}/{part}"), || d.shape())?;
        match s.as_slice() {
            [n] => Ok(*n),
            _ => Err(format_error(
                path,
                format!("{name}/{part} has shape {s:?}; it must be one-dimensional"),
            )),
        }
    };
    let nnz = length(&data, "data")?;
    if length(&indices, "indices")? != nnz {
        return Err(format_error(
            path,
            format!(
                "{name}/indices has {} entries but {name}/data has {nnz}",
                length(&indices, "indices")?
            ),
        ));
    }
    let outer = if csr { n_rows } else { n_cols };
    let n_ptr = length(&indptr, "indptr")?;
    if n_ptr != outer as u64 + 1 {
        return Err(format_error(
            path,
            format!(
                "{name}/indptr has {n_ptr} entries, but the shape attribute ({n_rows}, {n_cols}) \
                 of a {} needs {}",
                if csr { "csr_matrix" } else { "csc_matrix" },
                outer + 1
            ),
        ));
    }
    for (part, d) in [("indices", &indices), ("indptr", &indptr)] {
        let t = h5(path, || format!("the type of {name}/{part}"), || d.dtype())?;
        if !is_integer(&t) {
            return Err(format_error(
                path,
                format!("{name}/{part} holds {t}, not integers"),
            ));
        }
    }
    let dtype = h5(path, || format!("the type of {name}/data"), || data.dtype())?;
    let stored = if csr {
        Stored::Csr {
            data,
            indices,
            indptr,
            nnz,
        }
    } else {
        // D + 1 column pointers: O(D), read and checked once.
        let raw = h5(path, || format!("{name}/indptr"), || indptr.read_i64())?;
        let colptr = checked_pointers(path, name, &raw, 0, nnz, "column")?;
        let cursor = colptr[..n_cols].to_vec();
        Stored::Csc {
            data,
            indices,
            colptr,
            cursor,
        }
    };
    Ok((stored, n_rows, n_cols, dtype))
}

/// `raw` (pointers starting at row or column `first`) checked: non-negative, non-decreasing,
/// and within the `nnz` entries.
fn checked_pointers(
    path: &Path,
    name: &str,
    raw: &[i64],
    first: usize,
    nnz: u64,
    unit: &str,
) -> Result<Vec<u64>> {
    let mut out = Vec::with_capacity(raw.len());
    let mut previous = 0u64;
    for (i, &p) in raw.iter().enumerate() {
        let at = first + i;
        if p < 0 || p as u64 > nnz {
            return Err(format_error(
                path,
                format!("{name}/indptr[{at}] = {p} is outside the {nnz} stored entries"),
            ));
        }
        let p = p as u64;
        if i > 0 && p < previous {
            return Err(format_error(
                path,
                format!(
                    "{name}/indptr decreases at {unit} {}: indptr[{}] = {previous} but \
                     indptr[{at}] = {p}",
                    at - 1,
                    at - 1
                ),
            ));
        }
        previous = p;
        out.push(p);
    }
    Ok(out)
}

#[allow(clippy::too_many_arguments)]
fn read_dense(
    path: &Path,
    name: &str,
    dataset: &Dataset,
    r0: usize,
    k: usize,
    n_cols: usize,
    position: &[Option<usize>],
    n_kept: usize,
    block: &mut [f64],
) -> Result<()> {
    let values = h5(
        path,
        || format!("rows {r0} to {} of {name}", r0 + k - 1),
        || dataset.read_f64_rows(r0 as u64, k as u64),
    )?;
    if values.len() != k * n_cols {
        return Err(format_error(
            path,
            format!(
                "{name}: rows {r0} to {} gave {} values, not {}: the file is damaged",
                r0 + k - 1,
                values.len(),
                k * n_cols
            ),
        ));
    }
    for (i, row) in values.chunks_exact(n_cols).enumerate() {
        for (j, &v) in row.iter().enumerate() {
            if let Some(p) = position[j] {
                block[i * n_kept + p] = v;
            }
        }
    }
    Ok(())
}

/// A window of a 1-D dataset, checked to be whole.
fn window<T>(
    path: &Path,
    name: &str,
    part: &str,
    range: Range<u64>,
    read: impl FnOnce(u64, u64) -> std::result::Result<Vec<T>, hdf5_pure::Error>,
) -> Result<Vec<T>> {
    let want = range.end - range.start;
    let got = h5(
        path,
        || format!("{name}/{part}[{}..{}]", range.start, range.end),
        || read(range.start, want),
    )?;
    if got.len() as u64 != want {
        return Err(format_error(
            path,
            format!(
                "{name}/{part}[{}..{}] gave {} values, not {want}: the file is damaged",
                range.start,
                range.end,
                got.len()
            ),
        ));
    }
    Ok(got)
}

#[allow(clippy::too_many_arguments)]
fn read_csr(
    path: &Path,
    name: &str,
    (data, indices, indptr, nnz): (&Dataset, &Dataset, &Dataset, u64),
    r0: usize,
    k: usize,
    n_cols: usize,
    position: &[Option<usize>],
    n_kept: usize,
    block: &mut [f64],
) -> Result<()> {
    let raw = window(
        path,
        name,
        "indptr",
        r0 as u64..(r0 + k + 1) as u64,
        |a, n| indptr.read_i64_rows(a, n),
    )?;
    let ptr = checked_pointers(path, name, &raw, r0, nnz, "row")?;
    let span = ptr[0]..ptr[k];
    if span.is_empty() {
        return Ok(());
    }
    let cols = window(path, name, "indices", span.clone(), |a, n| {
        indices.read_i64_rows(a, n)
    })?;
    let values = window(path, name, "data", span.clone(), |a, n| {
        data.read_f64_rows(a, n)
    })?;
    for i in 0..k {
        for e in (ptr[i] - span.start)..(ptr[i + 1] - span.start) {
            let e = e as usize;
            let j = cols[e];
            if j < 0 || j as u64 >= n_cols as u64 {
                return Err(format_error(
                    path,
                    format!(
                        "{name}/indices[{}] = {j} (row {}) is out of range: the matrix has \
                         {n_cols} columns",
                        span.start + e as u64,
                        r0 + i
                    ),
                ));
            }
            if let Some(p) = position[j as usize] {
                // Duplicate entries add up, as in scipy.
                block[i * n_kept + p] += values[e];
            }
        }
    }
    Ok(())
}

/// Takes from every kept column of a CSC matrix its entries in rows `r0 .. r0 + k`, advancing
/// the column's cursor: `put(row − r0, kept position, value)` for each.
fn read_csc(
    path: &Path,
    name: &str,
    (data, indices, colptr, cursor): (&Dataset, &Dataset, &[u64], &mut [u64]),
    (r0, k, n_rows): (usize, usize, usize),
    position: &[Option<usize>],
    put: &mut dyn FnMut(usize, usize, f64),
) -> Result<()> {
    let r1 = (r0 + k) as i64;
    for (j, &p) in position.iter().enumerate() {
        let Some(p) = p else { continue };
        let end = colptr[j + 1];
        let start = cursor[j];
        if start == end {
            continue;
        }
        // Guess the column's share of this block, then widen until an entry past it shows.
        let remaining = end - start;
        let mut guess = ((remaining as u128 * k as u128).div_ceil((n_rows - r0) as u128) as u64
            + 8)
        .min(remaining);
        let (rows, taken) = loop {
            let rows = window(path, name, "indices", start..start + guess, |a, n| {
                indices.read_i64_rows(a, n)
            })?;
            let taken = rows.iter().take_while(|&&r| r < r1).count() as u64;
            if taken < guess || start + guess == end {
                break (rows, taken);
            }
            guess = (guess * 2).min(remaining).min(guess + CSC_WINDOW_MAX);
        };
        let mut previous = r0 as i64;
        for (e, &r) in rows[..taken as usize].iter().enumerate() {
            let at = start + e as u64;
            if r < 0 || r as u64 >= n_rows as u64 {
                return Err(format_error(
                    path,
                    format!(
                        "{name}/indices[{at}] = {r} (column {j}) is out of range: the matrix has \
                         {n_rows} rows"
                    ),
                ));
            }
            if r < previous {
                return Err(format_error(
                    path,
                    format!(
                        "{name}/indices[{at}] = {r} (column {j}) comes after row {previous}: the \
                         row indices of a csc_matrix must be sorted within each column to be \
                         read by rows (adata.X.sort_indices() sorts them)"
                    ),
                ));
            }
            previous = r;
        }
        if taken == 0 {
            continue;
        }
        let values = window(path, name, "data", start..start + taken, |a, n| {
            data.read_f64_rows(a, n)
        })?;
        for (&r, &v) in rows.iter().zip(&values) {
            put(r as usize - r0, p, v);
        }
        cursor[j] = start + taken;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/h5ad")
            .join(name)
    }

    /// fixtures/h5ad/counts.csv: the 40 × 15 counts every fixture holds.
    fn counts() -> Vec<f64> {
        let text = std::fs::read_to_string(fixture("counts.csv")).unwrap();
        text.lines()
            .skip(1)
            .flat_map(|l| {
                l.split(',')
                    .map(|v| v.parse::<f64>().unwrap())
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    fn read_all(name: &str, options: &ReadOptions, block: usize) -> (Vec<f64>, usize) {
        let mut source = H5adSource::open(&fixture(name), options).unwrap();
        let mut out = RowBuf::F64(Vec::new());
        let mut rows = 0;
        loop {
            let n = source.read_rows(block, &mut out).unwrap();
            if n == 0 {
                break;
            }
            assert!(n <= block);
            rows += n;
        }
        let RowBuf::F64(values) = out else {
            unreachable!()
        };
        (values, rows)
    }

    #[test]
    fn blocks_of_any_size_give_the_counts_in_every_encoding() {
        let expected = counts();
        for name in [
            "x_csr_f64.h5ad",
            "x_csc_f64.h5ad",
            "x_dense_f64.h5ad",
            "x_csc_i32.h5ad",
            "x_csr_gzip.h5ad",
            "x_dense_lzf.h5ad",
        ] {
            // Blocks of 1, 3, 7 and 40 rows: CSC's cursors carry over from block to block.
            for block in [1, 3, 7, 40] {
                let (values, rows) = read_all(name, &ReadOptions::default(), block);
                assert_eq!(rows, 40, "{name}");
                assert_eq!(values, expected, "{name} in blocks of {block}");
            }
        }
    }

    #[test]
    fn the_mask_and_the_selection_keep_their_genes_in_order() {
        let expected = counts();
        let options = ReadOptions {
            mask_var: Some("highly_variable".into()),
            exclude: vec![crate::ColumnSelector::Name("gene4".into())],
            ..ReadOptions::default()
        };
        let source = H5adSource::open(&fixture("mask.h5ad"), &options).unwrap();
        let kept = [1, 2, 7, 8, 11, 14];
        let names: Vec<String> = kept.iter().map(|j| format!("gene{j}")).collect();
        assert_eq!(source.column_names().unwrap(), names.as_slice());
        assert!(source.is_f32());
        for block in [1, 6, 40] {
            let (values, _) = read_all("mask.h5ad", &options, block);
            let want: Vec<f64> = (0..40)
                .flat_map(|i| kept.iter().map(move |&j| (i, j)))
                .map(|(i, j)| expected[i * 15 + j])
                .collect();
            assert_eq!(values, want, "blocks of {block}");
        }
    }

    #[test]
    fn a_part_of_the_rows_is_read_from_csr_and_dense_but_not_csc() {
        let expected = counts();
        for name in ["x_csr_f64.h5ad", "x_dense_f64.h5ad"] {
            let mut source = H5adSource::open(&fixture(name), &ReadOptions::default()).unwrap();
            assert!(source.splittable());
            source.restrict(10..17).unwrap();
            let mut out = RowBuf::F64(Vec::new());
            assert_eq!(source.read_rows(100, &mut out).unwrap(), 7);
            assert_eq!(source.read_rows(100, &mut out).unwrap(), 0);
            let RowBuf::F64(values) = out else {
                unreachable!()
            };
            assert_eq!(values, expected[10 * 15..17 * 15], "{name}");
        }
        let mut csc =
            H5adSource::open(&fixture("x_csc_f64.h5ad"), &ReadOptions::default()).unwrap();
        assert!(!csc.splittable());
        assert!(csc.restrict(10..17).is_err());
    }
    /// The rows of every sparse pass of `source` in blocks of at most `budget` entries, as
    /// dense rows (for comparison only), checking each block's bound.
    fn sparse_rows(source: &mut H5adSource, budget: usize) -> (Vec<f64>, usize) {
        let d = source.n_features();
        // CSR blocks hold at most `budget` entries (or one row); CSC blocks at most the rows
        // that hold `budget` entries at the matrix's mean per row.
        let csc_rows = (budget * source.rows_to_read() / source.stored_entries() as usize).max(1);
        let csc = source.encoding() == "csc_matrix";
        let mut rows = Vec::new();
        let mut blocks = 0;
        for _ in 0..2 {
            rows.clear();
            blocks = 0;
            let failed = source
                .sparse_pass(budget, &mut |block| {
                    let CsrChunk::F64U32(x) = block else {
                        panic!("f64 values, u32 indices")
                    };
                    assert!(
                        if csc {
                            x.nrows() <= csc_rows
                        } else {
                            x.nnz() <= budget || x.nrows() == 1
                        },
                        "{} entries in {} rows",
                        x.nnz(),
                        x.nrows()
                    );
                    for i in 0..x.nrows() {
                        let mut dense = vec![0.0; d];
                        let (columns, values) = x.row(i);
                        for (&j, &v) in columns.iter().zip(values) {
                            dense[j as usize] += v;
                        }
                        rows.extend(dense);
                    }
                    blocks += 1;
                    Ok(())
                })
                .unwrap();
            assert!(failed.is_none());
        }
        (rows, blocks)
    }

    #[test]
    fn sparse_passes_give_the_counts_in_blocks_within_the_budget() {
        let expected = counts();
        for name in [
            "x_csr_f64.h5ad",
            "x_csc_f64.h5ad",
            "x_csr_gzip.h5ad",
            "x_csc_i32.h5ad",
        ] {
            let mut source = H5adSource::open(&fixture(name), &ReadOptions::default()).unwrap();
            assert!(source.is_sparse());
            assert_eq!(source.stored_entries(), 133, "{name}");
            for budget in [1, 10, 50, 1000] {
                let (values, blocks) = sparse_rows(&mut source, budget);
                assert_eq!(values, expected, "{name} in blocks of {budget} entries");
                // 133 entries in blocks of at most `budget` (a CSC block is sized by the mean
                // entries per row, so it may hold a few more rows' worth less).
                assert!(
                    blocks >= 133usize.div_ceil(budget).min(40),
                    "{name}: {blocks}"
                );
            }
        }
        let dense = H5adSource::open(&fixture("x_dense_f64.h5ad"), &ReadOptions::default());
        assert!(!dense.unwrap().is_sparse());
    }

    #[test]
    fn sparse_passes_keep_the_masked_genes_and_a_part_of_the_rows() {
        let expected = counts();
        let options = ReadOptions {
            mask_var: Some("highly_variable".into()),
            exclude: vec![crate::ColumnSelector::Name("gene4".into())],
            ..ReadOptions::default()
        };
        let mut source = H5adSource::open(&fixture("mask.h5ad"), &options).unwrap();
        let kept = [1, 2, 7, 8, 11, 14];
        let want: Vec<f64> = (0..40)
            .flat_map(|i| kept.iter().map(move |&j| (i, j)))
            .map(|(i, j)| expected[i * 15 + j])
            .collect();
        for budget in [1, 7, 1000] {
            assert_eq!(
                sparse_rows(&mut source, budget).0,
                want,
                "blocks of {budget}"
            );
        }
        let mut part =
            H5adSource::open(&fixture("x_csr_f64.h5ad"), &ReadOptions::default()).unwrap();
        part.restrict(10..17).unwrap();
        assert_eq!(part.rows_to_read(), 7);
        assert_eq!(sparse_rows(&mut part, 5).0, expected[10 * 15..17 * 15]);
    }
}
