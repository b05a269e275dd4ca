//! Small good files of every format, built in memory: the base of the damaged files the tests
//! make, and of the fuzzers' seed corpus (`examples/fuzz_seeds.rs` includes this file).
#![allow(dead_code)]

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use principal_io::save_model;

/// Gzip of `bytes`, as one member.
pub fn gz(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

/// An NPY file of `rows` × `cols` little-endian f64 in C order.
pub fn npy(data: &[f64], rows: usize, cols: usize) -> Vec<u8> {
    let mut dict =
        format!("{{'descr': '<f8', 'fortran_order': False, 'shape': ({rows}, {cols}), }}");
    while !(10 + dict.len() + 1).is_multiple_of(64) {
        dict.push(' ');
    }
    dict.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out.extend(data.iter().flat_map(|v| v.to_le_bytes()));
    out
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

/// A Snappy Parquet file of 40 rows in row groups of 16.
pub fn parquet_bytes() -> Vec<u8> {
    let batch = record_batch(40, 1.0);
    let props = parquet::file::properties::WriterProperties::builder()
        .set_max_row_group_size(16)
        .set_compression(parquet::basic::Compression::SNAPPY)
        .build();
    let mut out = Vec::new();
    let mut w =
        parquet::arrow::ArrowWriter::try_new(&mut out, batch.schema(), Some(props)).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    out
}

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

