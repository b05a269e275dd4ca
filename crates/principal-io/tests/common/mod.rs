//! Small good files of every format, built in memory, and the seeded mutations that damage
//! them: the base of the damaged files the tests make (here and in the command-line tool's
//! tests, which include this file), and of the fuzzers' seed corpus
//! (`examples/fuzz_seeds.rs` includes it too).
#![allow(dead_code)]

use std::io::Write;
use std::path::Path;
#[cfg(any(feature = "parquet", feature = "arrow"))]
use std::sync::Arc;

use principal_io::save_model;

#[cfg(feature = "parquet")]
pub mod arrow_to_parquet;

/// Gzip of `bytes`, as one member.
pub fn gz(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

/// An NPY version 1.0 file with this header dict (padded as numpy pads it) and raw data.
pub fn npy_with(dict: &str, data: &[u8]) -> Vec<u8> {
    let mut dict = dict.to_owned();
    while !(10 + dict.len() + 1).is_multiple_of(64) {
        dict.push(' ');
    }
    dict.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out.extend_from_slice(data);
    out
}

/// An NPY file of `rows` × `cols` little-endian f64 in C order.
pub fn npy(data: &[f64], rows: usize, cols: usize) -> Vec<u8> {
    let bytes: Vec<u8> = data.iter().flat_map(|v| v.to_le_bytes()).collect();
    npy_with(
        &format!("{{'descr': '<f8', 'fortran_order': False, 'shape': ({rows}, {cols}), }}"),
        &bytes,
    )
}

/// The temporary files (`.NAME.tmp-…`) left in `dir`.
pub fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp-"))
        .collect()
}

/// An IDX file of `rows` 3×3 images of bytes.
pub fn idx(rows: u32) -> Vec<u8> {
    let mut out = vec![0, 0, 0x08, 3];
    for d in [rows, 3, 3] {
        out.extend_from_slice(&d.to_be_bytes());
    }
    out.extend((0..rows * 9).map(|k| (k * 7 % 256) as u8));
    out
}

#[cfg(any(feature = "parquet", feature = "arrow"))]
/// Three columns (f64, f32, i32) of `rows` rows.
pub fn record_batch(rows: usize, offset: f64) -> arrow_array::RecordBatch {
    use arrow_array::{ArrayRef, Float32Array, Float64Array, Int32Array};
    let a: ArrayRef = Arc::new(Float64Array::from(
        (0..rows)
            .map(|i| offset + i as f64 * 0.5)
            .collect::<Vec<_>>(),
    ));
    let b: ArrayRef = Arc::new(Float32Array::from(
        (0..rows).map(|i| (i * i) as f32).collect::<Vec<_>>(),
    ));
    let c: ArrayRef = Arc::new(Int32Array::from(
        (0..rows).map(|i| 1000 - i as i32).collect::<Vec<_>>(),
    ));
    arrow_array::RecordBatch::try_from_iter([("a", a), ("b", b), ("c", c)]).unwrap()
}

#[cfg(feature = "parquet")]
/// A Snappy Parquet file of 40 rows in row groups of 16.
pub fn parquet_bytes() -> Vec<u8> {
    parquet_of(&record_batch(40, 1.0), parquet::basic::Compression::SNAPPY)
}

#[cfg(feature = "arrow")]
/// An Arrow IPC stream or file of two batches (21 rows), LZ4-compressed or not.
pub fn arrow_bytes(stream: bool, compressed: bool) -> Vec<u8> {
    use arrow_ipc::writer::{FileWriter, IpcWriteOptions, StreamWriter};
    let batches = [record_batch(12, 0.0), record_batch(9, 100.0)];
    let schema = batches[0].schema();
    let options = if compressed {
        IpcWriteOptions::default()
            .try_with_compression(Some(arrow_ipc::CompressionType::LZ4_FRAME))
            .unwrap()
    } else {
        IpcWriteOptions::default()
    };
    let mut out = Vec::new();
    if stream {
        let mut w = StreamWriter::try_new_with_options(&mut out, &schema, options).unwrap();
        for b in &batches {
            w.write(b).unwrap();
        }
        w.finish().unwrap();
    } else {
        let mut w = FileWriter::try_new_with_options(&mut out, &schema, options).unwrap();
        for b in &batches {
            w.write(b).unwrap();
        }
        w.finish().unwrap();
    }
    out
}

/// A CSV file with a header and 25 rows of 3 numbers.
pub fn csv_bytes() -> Vec<u8> {
    let mut text = String::from("x,y,z\n");
    for i in 0..25 {
        text.push_str(&format!(
            "{},{},{}\n",
            i,
            f64::from(i) * 0.25 - 3.0,
            7 * i % 11
        ));
    }
    text.into_bytes()
}

/// A model file of a 4-feature fit (written through `dir`).
pub fn model_bytes(dir: &Path) -> Vec<u8> {
    let x = principal::faer::Mat::<f64>::from_fn(30, 4, |i, j| {
        ((i * 7 + j * 3) % 11) as f64 + (i as f64 * 0.3).sin() * j as f64
    });
    let model = principal::PcaBuilder::new()
        .build()
        .unwrap()
        .fit(x.as_ref())
        .unwrap();
    let path = dir.join("good.safetensors");
    let names: Vec<String> = ["a", "b", "c", "d"].iter().map(|s| s.to_string()).collect();
    save_model(&path, &model, Some(&names)).unwrap();
    std::fs::read(&path).unwrap()
}

/// A CSV file with a header and 25 rows of 3 numbers, some cells missing (empty or `nan`).
pub fn csv_gaps_bytes() -> Vec<u8> {
    let mut text = String::from("x,y,z\n");
    for i in 0..25 {
        let cell = |v: String, gap: bool| if gap { String::new() } else { v };
        text.push_str(&format!(
            "{},{},{}\n",
            cell(i.to_string(), i % 7 == 3),
            if i % 5 == 1 {
                "nan".into()
            } else {
                (f64::from(i) * 0.25 - 3.0).to_string()
            },
            cell((7 * i % 11).to_string(), i % 4 == 2)
        ));
    }
    text.into_bytes()
}

/// An NPY file of 20 × 4 f64 with NaN in every seventh value.
pub fn npy_gaps_bytes() -> Vec<u8> {
    let data: Vec<f64> = (0..80)
        .map(|k| {
            if k % 7 == 2 {
                f64::NAN
            } else {
                f64::from(k) * 0.5 - 9.0
            }
        })
        .collect();
    npy(&data, 20, 4)
}

/// A Snappy Parquet file of 40 rows, three nullable f64 columns with nulls and NaN, in row
/// groups of 16.
#[cfg(feature = "parquet")]
pub fn parquet_gaps_bytes() -> Vec<u8> {
    use arrow_array::{ArrayRef, Float64Array};
    let column = |k: usize| -> ArrayRef {
        Arc::new(Float64Array::from(
            (0..40)
                .map(|i| match (i + k) % 6 {
                    0 => None,
                    3 if k == 1 => Some(f64::NAN),
                    _ => Some(i as f64 * 0.75 - k as f64),
                })
                .collect::<Vec<_>>(),
        ))
    };
    let batch = arrow_array::RecordBatch::try_from_iter([
        ("a", column(0)),
        ("b", column(1)),
        ("c", column(2)),
    ])
    .unwrap();
    parquet_of(&batch, parquet::basic::Compression::SNAPPY)
}

/// `batch` as a Parquet file compressed with `codec`, in row groups of 16 rows.
#[cfg(feature = "parquet")]
pub fn parquet_of(batch: &arrow_array::RecordBatch, codec: parquet::basic::Compression) -> Vec<u8> {
    arrow_to_parquet::write_parquet(batch, Vec::new(), 16, codec)
}

/// The 30 labels (digits) of the label files below.
pub fn labels() -> Vec<u8> {
    (0..30u32).map(|i| (i * 7 % 10) as u8).collect()
}

/// An IDX label file (1-D unsigned bytes, MNIST's) of [`labels`].
pub fn idx_labels_bytes() -> Vec<u8> {
    let mut out = vec![0, 0, 0x08, 1];
    out.extend_from_slice(&30u32.to_be_bytes());
    out.extend(labels());
    out
}

/// A text file of [`labels`], one per line, under a header.
pub fn text_labels_bytes() -> Vec<u8> {
    let mut text = String::from("digit\n");
    for l in labels() {
        text.push_str(&format!("{l}\n"));
    }
    text.into_bytes()
}

/// A one-column NPY file of [`labels`] as f64.
pub fn npy_labels_bytes() -> Vec<u8> {
    let data: Vec<f64> = labels().into_iter().map(f64::from).collect();
    npy(&data, 30, 1)
}

/// A one-column Parquet file of [`labels`] as i32.
#[cfg(feature = "parquet")]
pub fn parquet_labels_bytes() -> Vec<u8> {
    use arrow_array::{ArrayRef, Int32Array};
    let column: ArrayRef = Arc::new(Int32Array::from(
        labels().into_iter().map(i32::from).collect::<Vec<_>>(),
    ));
    parquet_of(
        &arrow_array::RecordBatch::try_from_iter([("digit", column)]).unwrap(),
        parquet::basic::Compression::SNAPPY,
    )
}

/// A statistics file of 30 rows of 4 features (written through `dir`).
pub fn statistics_bytes(dir: &Path) -> Vec<u8> {
    let x = principal::faer::Mat::<f64>::from_fn(30, 4, |i, j| {
        ((i * 7 + j * 3) % 11) as f64 + (i as f64 * 0.3).sin() * j as f64
    });
    let mut acc = principal::MomentAccumulator::new(4);
    acc.push(x.as_ref()).unwrap();
    let statistics = principal_io::Statistics {
        moments: acc.finish().unwrap(),
        scaling: principal::Scaling::Centre,
        feature_names: Some(["a", "b", "c", "d"].iter().map(|s| s.to_string()).collect()),
    };
    let path = dir.join("good.stats");
    principal_io::save_statistics(&path, &statistics).unwrap();
    std::fs::read(&path).unwrap()
}

/// How [`h5ad_bytes`] stores its matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum H5adLayout {
    /// A 2-D float32 dataset `X`.
    Dense,
    /// A `csr_matrix` group `X` (float32 data, int32 indices, int64 indptr).
    Csr,
    /// A `csc_matrix` group `X` (float64 data, int32 indices, int32 indptr).
    Csc,
}

/// A small AnnData file of 5 cells × 4 genes (a third of the entries zero), written by the
/// `hdf5-pure` writer the tool edits files with: `X` as `layout` says, `obs` and `var` with
/// their `_index` names (variable-length strings in `obs`, fixed-length in `var`), a boolean
/// `var` column `hv` (for `--mask-var hv`) and the same matrix again dense as `layers/counts`.
#[cfg(feature = "h5ad")]
pub fn h5ad_bytes(layout: H5adLayout) -> Vec<u8> {
    use hdf5_pure::{AttrValue, FileBuilder};
    let (n, d) = (5usize, 4usize);
    let value = |i: usize, j: usize| -> f32 {
        if (i + 2 * j).is_multiple_of(3) {
            0.0
        } else {
            (i * d + j) as f32 * 0.5 + 1.0
        }
    };
    let dense: Vec<f32> = (0..n * d).map(|k| value(k / d, k % d)).collect();
    // Fixed-length string attributes: each variable-length string takes a 4 KiB global heap
    // collection of its own, and the seeds are to stay small.
    let text = |s: &str| AttrValue::String(s.to_owned());
    let mut b = FileBuilder::new();
    b.set_attr("encoding-type", text("anndata"));
    b.set_attr("encoding-version", text("0.1.0"));
    for (frame, names) in [
        (
            "obs",
            (0..n).map(|i| format!("cell{i}")).collect::<Vec<_>>(),
        ),
        ("var", (0..d).map(|j| format!("gene{j}")).collect()),
    ] {
        let mut g = b.create_group(frame);
        g.set_attr("_index", text("_index"));
        g.set_attr("encoding-type", text("dataframe"));
        g.set_attr("encoding-version", text("0.2.0"));
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let index = g.create_dataset("_index");
        if frame == "obs" {
            // Variable-length strings, as anndata ≥ 0.7 writes them.
            index.with_vlen_strings(&names);
        } else {
            // Fixed-length byte strings, as older files hold them.
            index.with_strings(&names).unwrap();
        }
        index.with_shape(&[names.len() as u64]);
        if frame == "var" {
            g.create_dataset("hv")
                .with_u8_data(&[1, 0, 1, 1])
                .with_shape(&[d as u64]);
        }
        b.add_group(g.finish());
    }
    let shape = [n as u64, d as u64];
    match layout {
        H5adLayout::Dense => {
            b.create_dataset("X")
                .with_f32_data(&dense)
                .with_shape(&shape);
        }
        H5adLayout::Csr | H5adLayout::Csc => {
            let csr = layout == H5adLayout::Csr;
            let (outer, inner) = if csr { (n, d) } else { (d, n) };
            let (mut data, mut indices, mut indptr) = (Vec::new(), Vec::new(), vec![0i64]);
            for o in 0..outer {
                for k in 0..inner {
                    let v = if csr { value(o, k) } else { value(k, o) };
                    if v != 0.0 {
                        data.push(v);
                        indices.push(k as i32);
                    }
                }
                indptr.push(data.len() as i64);
            }
            let mut g = b.create_group("X");
            g.set_attr(
                "encoding-type",
                text(if csr { "csr_matrix" } else { "csc_matrix" }),
            );
            g.set_attr("encoding-version", text("0.1.0"));
            g.set_attr("shape", AttrValue::I64Array(vec![n as i64, d as i64]));
            let nnz = [data.len() as u64];
            if csr {
                g.create_dataset("data")
                    .with_f32_data(&data)
                    .with_shape(&nnz);
                g.create_dataset("indptr")
                    .with_i64_data(&indptr)
                    .with_shape(&[indptr.len() as u64]);
            } else {
                let data: Vec<f64> = data.iter().map(|&v| f64::from(v)).collect();
                let indptr: Vec<i32> = indptr.iter().map(|&p| p as i32).collect();
                g.create_dataset("data")
                    .with_f64_data(&data)
                    .with_shape(&nnz);
                g.create_dataset("indptr")
                    .with_i32_data(&indptr)
                    .with_shape(&[indptr.len() as u64]);
            }
            g.create_dataset("indices")
                .with_i32_data(&indices)
                .with_shape(&nnz);
            b.add_group(g.finish());
        }
    }
    let mut layers = b.create_group("layers");
    layers
        .create_dataset("counts")
        .with_f32_data(&dense)
        .with_shape(&shape);
    b.add_group(layers.finish());
    b.finish().unwrap()
}

/// A MatrixMarket file of 5 rows × 4 columns, its entries out of row order.
pub fn mtx_bytes() -> Vec<u8> {
    b"%%MatrixMarket matrix coordinate real general\n% a comment\n5 4 7\n\
      1 1 1.5\n3 2 -2\n2 4 0.25\n5 1 3e2\n1 3 4\n4 4 1\n2 2 7\n"
        .to_vec()
}

/// splitmix64: a small, seeded, reproducible generator.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// One mutation, described for messages.
#[derive(Debug, Clone)]
pub enum Mutation {
    Flip {
        at: usize,
        xor: u8,
    },
    Truncate {
        len: usize,
    },
    Insert {
        at: usize,
        bytes: Vec<u8>,
    },
    Duplicate {
        at: usize,
        len: usize,
    },
    /// A huge or negative size written over bytes of a header or footer.
    Lie {
        at: usize,
        bytes: Vec<u8>,
    },
}

impl Mutation {
    pub fn random(rng: &mut Rng, len: usize) -> Mutation {
        let lies: [&[u8]; 6] = [
            &[0xff; 4],
            &[0xff, 0xff, 0xff, 0x7f],
            &[0x7f, 0xff, 0xff, 0xff],
            &[0xff; 8],
            &[0x00, 0x00, 0x00, 0x40],
            &[0x39, 0x39, 0x39, 0x39, 0x39, 0x39, 0x39, 0x39],
        ];
        match rng.below(5) {
            0 => Mutation::Flip {
                at: rng.below(len),
                xor: 1 + rng.below(255) as u8,
            },
            1 => Mutation::Truncate {
                len: rng.below(len),
            },
            2 => Mutation::Insert {
                at: rng.below(len + 1),
                bytes: (0..1 + rng.below(8)).map(|_| rng.next() as u8).collect(),
            },
            3 => {
                let at = rng.below(len);
                Mutation::Duplicate {
                    at,
                    len: 1 + rng.below(64.min(len - at)),
                }
            }
            _ => {
                // Headers and footers: the first and the last 256 bytes.
                let zone = 256.min(len);
                let at = if rng.below(2) == 0 {
                    rng.below(zone)
                } else {
                    len - 1 - rng.below(zone)
                };
                Mutation::Lie {
                    at,
                    bytes: lies[rng.below(lies.len())].to_vec(),
                }
            }
        }
    }

    pub fn changes_length(&self) -> bool {
        matches!(
            self,
            Mutation::Truncate { .. } | Mutation::Insert { .. } | Mutation::Duplicate { .. }
        )
    }

    pub fn apply(&self, good: &[u8]) -> Vec<u8> {
        let mut out = good.to_vec();
        match self {
            Mutation::Flip { at, xor } => out[*at] ^= xor,
            Mutation::Truncate { len } => out.truncate(*len),
            Mutation::Insert { at, bytes } => {
                out.splice(*at..*at, bytes.iter().copied());
            }
            Mutation::Duplicate { at, len } => {
                let copy = good[*at..*at + len].to_vec();
                out.splice(*at..*at, copy);
            }
            Mutation::Lie { at, bytes } => {
                for (k, b) in bytes.iter().enumerate() {
                    if let Some(x) = out.get_mut(at + k) {
                        *x = *b;
                    }
                }
            }
        }
        out
    }
}
