//! A PCA written into an AnnData `.h5ad` file where scanpy's `sc.pp.pca` puts it:
//! `obsm/X_pca` (cells × K, float32 as scanpy's default `dtype`), `varm/PCs` (genes × K, the
//! components by gene name; zero rows for the genes the model does not have, as scanpy fills
//! the genes outside `mask_var`), and the group `uns/pca` with `variance` and
//! `variance_ratio` (and `params`: `zero_center`, `mask_var`, `layer`). Each is written with
//! anndata's encoding attributes, replacing what the file had under those names; everything
//! else in the file is left as it was. The file is edited as a copy renamed over it
//! ([`edit_atomically`]), so a failure leaves it untouched.

#[cfg(feature = "h5ad")]
use std::collections::HashMap;
use std::path::Path;

use faer::MatRef;
#[cfg(feature = "h5ad")]
use hdf5_pure::{AttrValue, DatasetBuilder, File};

#[cfg(feature = "h5ad")]
use crate::error::IoError;
use crate::error::Result;
#[cfg(feature = "h5ad")]
use crate::format::h5ad::{hdf5_message, read_index};
#[cfg(feature = "h5ad")]
use crate::read::bounded::contain;
#[cfg(feature = "h5ad")]
use crate::write::edit_atomically;

/// What `sc.pp.pca` stores, as principal computed it.
#[derive(Clone, Copy, Debug)]
pub struct ScanpyPca<'a> {
    /// The cells' codes, cells × K.
    pub scores: MatRef<'a, f64>,
    /// The model's components, K × D (rows are components), over `feature_names`.
    pub components: MatRef<'a, f64>,
    /// The model's features: genes of the file's `var` index.
    pub feature_names: &'a [String],
    /// Explained variance per component (`uns/pca/variance`).
    pub variance: &'a [f64],
    /// Explained variance ratio per component (`uns/pca/variance_ratio`).
    pub variance_ratio: &'a [f64],
    /// The `var` column the model's genes were masked with, for `uns/pca/params/mask_var`.
    pub mask_var: Option<&'a str>,
    /// The layer the data came from, for `uns/pca/params/layer`.
    pub layer: Option<&'a str>,
    /// Whether the model centred the data (`uns/pca/params/zero_center`).
    pub zero_center: bool,
}

#[cfg(feature = "h5ad")]
fn format_error(path: &Path, detail: impl Into<String>) -> IoError {
    IoError::Format {
        path: path.to_owned(),
        detail: detail.into(),
    }
}

#[cfg(feature = "h5ad")]
fn h5<T>(path: &Path, what: &str, result: std::result::Result<T, hdf5_pure::Error>) -> Result<T> {
    result.map_err(|e| format_error(path, format!("{what}: {}", hdf5_message(&e))))
}

#[cfg(feature = "h5ad")]
/// anndata's encoding attributes.
fn encoding(kind: &str, version: &str) -> [(&'static str, AttrValue); 2] {
    [
        ("encoding-type", AttrValue::VarLenString(kind.to_owned())),
        (
            "encoding-version",
            AttrValue::VarLenString(version.to_owned()),
        ),
    ]
}

#[cfg(feature = "h5ad")]
fn array_attrs(b: &mut DatasetBuilder) {
    for (name, value) in encoding("array", "0.2.0") {
        b.set_attr(name, value);
    }
}

#[cfg(feature = "h5ad")]
/// Writes `pca` into the `.h5ad` file at `path` (see the module's documentation).
pub fn write_scanpy_pca(path: &Path, pca: &ScanpyPca<'_>) -> Result<()> {
    let (n_obs, k) = (pca.scores.nrows(), pca.scores.ncols());
    let d = pca.feature_names.len();
    if pca.components.nrows() != k
        || pca.components.ncols() != d
        || pca.variance.len() != k
        || pca.variance_ratio.len() != k
    {
        return Err(format_error(
            path,
            format!(
                "the PCA's parts disagree: {k} code columns, components {}×{}, {d} features, \
                 {} variances, {} ratios",
                pca.components.nrows(),
                pca.components.ncols(),
                pca.variance.len(),
                pca.variance_ratio.len()
            ),
        ));
    }
    // Checked on the original before the copy is made.
    let (obs, var) = {
        let file = h5(path, "the HDF5 file", File::open_streaming(path))?;
        (
            read_index(path, &file, "obs")?,
            read_index(path, &file, "var")?,
        )
    };
    if obs.len() != n_obs {
        return Err(format_error(
            path,
            format!(
                "the file has {} cells (obs) but {n_obs} rows of codes were computed",
                obs.len()
            ),
        ));
    }
    let gene: HashMap<&str, usize> = var
        .iter()
        .enumerate()
        .map(|(i, g)| (g.as_str(), i))
        .collect();
    // genes × K, row-major: each model feature's loadings at its gene's row.
    let mut loadings = vec![0.0f64; var.len() * k];
    for (f, name) in pca.feature_names.iter().enumerate() {
        let Some(&g) = gene.get(name.as_str()) else {
            return Err(format_error(
                path,
                format!("the model's feature {name:?} is not a gene of the file's var index"),
            ));
        };
        for c in 0..k {
            loadings[g * k + c] = pca.components[(c, f)];
        }
    }
    let mut scores = Vec::with_capacity(n_obs * k);
    for i in 0..n_obs {
        for c in 0..k {
            scores.push(pca.scores[(i, c)] as f32);
        }
    }
    // The editor's calls, like the readers', may panic on damage the reads above did not
    // reach: contained, the panic is an error naming the file, and the copy is discarded.
    edit_atomically(path, |copy| {
        contain(
            copy,
            || "the file's edit".to_owned(),
            || edit_copy(copy, pca, var.len(), &loadings, &scores),
        )
    })
}

#[cfg(feature = "h5ad")]
/// The edits of [`write_scanpy_pca`], made in `copy`.
fn edit_copy(
    copy: &Path,
    pca: &ScanpyPca<'_>,
    genes: usize,
    loadings: &[f64],
    scores: &[f32],
) -> Result<()> {
    let (n_obs, k) = (pca.scores.nrows(), pca.scores.ncols());
    let file = h5(copy, "opening the copy for editing", File::open_rw(copy))?;
    let root = file.root();
    let groups = h5(copy, "the file's root", root.groups())?;
    let leaf = |full: &String| full.rsplit('/').next().unwrap_or(full).to_owned();
    let has = |name: &str| groups.iter().any(|g| leaf(g) == name);
    // anndata's groups of a mapping (`dict`): obsm, varm, uns, uns/pca and its params.
    let dict_group = |name: &str| {
        h5(
            copy,
            name,
            root.create_group_with(name, |g| {
                for (attr, value) in encoding("dict", "0.1.0") {
                    g.set_attr(attr, value);
                }
            }),
        )
    };
    // anndata's arrays: `fill` gives the values and the shape.
    let array = |name: &str, fill: &dyn Fn(&mut DatasetBuilder)| {
        h5(
            copy,
            name,
            root.create_dataset(name, |b| {
                fill(b);
                array_attrs(b);
            }),
        )
    };
    for top in ["obsm", "varm", "uns"] {
        if !has(top) {
            dict_group(top)?;
        }
    }
    let exists = |group: &str, name: &str| -> Result<bool> {
        if !has(group) {
            return Ok(false);
        }
        let g = h5(copy, group, file.group(group))?;
        let mut names = h5(copy, group, g.datasets())?;
        names.extend(h5(copy, group, g.groups())?);
        Ok(names.iter().any(|n| leaf(n) == name))
    };
    for (group, name) in [("obsm", "X_pca"), ("varm", "PCs"), ("uns", "pca")] {
        if exists(group, name)? {
            h5(
                copy,
                &format!("removing the old {group}/{name}"),
                root.delete(&format!("{group}/{name}")),
            )?;
        }
    }
    array("obsm/X_pca", &|b| {
        b.with_f32_data(scores)
            .with_shape(&[n_obs as u64, k as u64]);
    })?;
    array("varm/PCs", &|b| {
        b.with_f64_data(loadings)
            .with_shape(&[genes as u64, k as u64]);
    })?;
    dict_group("uns/pca")?;
    for (name, values) in [
        ("variance", pca.variance),
        ("variance_ratio", pca.variance_ratio),
    ] {
        array(&format!("uns/pca/{name}"), &|b| {
            b.with_f64_data(values).with_shape(&[k as u64]);
        })?;
    }
    dict_group("uns/pca/params")?;
    let mut strings = vec![];
    if let Some(mask) = pca.mask_var {
        strings.push(("mask_var", mask));
    }
    if let Some(layer) = pca.layer {
        strings.push(("layer", layer));
    }
    for (name, value) in strings {
        h5(
            copy,
            &format!("uns/pca/params/{name}"),
            root.create_dataset(&format!("uns/pca/params/{name}"), |b| {
                b.with_vlen_strings(&[value]).with_shape(&[]);
                for (n, v) in encoding("string", "0.2.0") {
                    b.set_attr(n, v);
                }
            }),
        )?;
    }
    h5(
        copy,
        "uns/pca/params/zero_center",
        root.create_dataset("uns/pca/params/zero_center", |b| {
            b.with_u8_data(&[u8::from(pca.zero_center)]).with_shape(&[]);
            for (n, v) in encoding("numeric-scalar", "0.2.0") {
                b.set_attr(n, v);
            }
        }),
    )?;
    h5(copy, "writing the edits", file.commit())?;
    h5(copy, "closing the copy", file.close())
}

/// In a build without the cargo feature `h5ad`: the error naming it.
#[cfg(not(feature = "h5ad"))]
pub fn write_scanpy_pca(path: &Path, _pca: &ScanpyPca<'_>) -> Result<()> {
    Err(crate::error::Gated::H5ad.error(path, "written"))
}
