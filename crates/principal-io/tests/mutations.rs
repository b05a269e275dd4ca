//! Thousands of damaged files of every format, made from small good files by seeded mutations
//! (byte flips, truncations, inserted and duplicated bytes, headers overwritten with huge
//! sizes) and read through the real readers: each read must end in an error naming the file or
//! in a correct read, never a panic, an abort or a hang, and no damaged file may be accepted
//! where the damage is detectable.
//!
//! What is detectable: everything in a gzip file (its CRC-32 and length cover every byte of
//! the content; a change in the gzip header's own fields such as the time stamp changes
//! nothing read, so the read must then give the original data exactly); and any change of
//! length in NPY, IDX, Arrow IPC files and streams, and model files, whose headers, framing and
//! footers fix their length exactly. What is not: a changed byte inside the values of a format
//! without checksums (NPY, IDX, CSV, Arrow, Parquet without page checksums) is another valid
//! value; a changed header field can describe another valid file of the same size (`<f8` to
//! `>f8`, shape (20, 4) to (40, 2)); CSV has no end marker, so a file cut at a line end, or a
//! digit inserted, reads as other valid data; Parquet pages carry no checksum here, so a
//! byte inserted inside a page's values can shift them. Those reads are counted and printed.
//!
//! Besides the data readers with default options, the same damage goes through the other
//! readers of files: data read with missing values allowed (CSV with empty cells and `nan`, NPY
//! with NaN, Parquet with nulls), label files (IDX, text, NPY, Parquet) and statistics files.
//!
//! Reproduce one case: the seed is `SEED`, and every failure prints its format, case number
//! and mutation.
//!
//! `cargo test --release -p principal-io --test mutations -- --nocapture`

use std::path::{Path, PathBuf};

use crate::common;

#[cfg(feature = "arrow")]
use common::arrow_bytes;
use common::{
    Mutation, Rng, csv_bytes, csv_gaps_bytes, gz, idx, idx_labels_bytes, model_bytes, npy,
    npy_gaps_bytes, npy_labels_bytes, statistics_bytes, text_labels_bytes,
};
#[cfg(feature = "parquet")]
use common::{parquet_bytes, parquet_gaps_bytes, parquet_labels_bytes};
use principal_io::{
    Missing, ReadOptions, Table, load_model, load_statistics, panic_is_contained, read_label_files,
    read_table,
};
use tempfile::TempDir;

const SEED: u64 = 0x5eed_0019;
/// Mutations per format.
const CASES: usize = 320;

/// How damage to a format can go unseen.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Detects {
    /// Gzip: every change of the content is refused.
    Everything,
    /// Every change of length is refused; a changed byte may be another valid file.
    LengthChanges,
    /// A change may always read as other valid data (CSV, Parquet without page checksums).
    Structure,
}

/// Which reader reads a format's files.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Reader {
    /// `read_table` with missing values refused (the default) or read as NaN.
    Data(Missing),
    Model,
    Labels,
    Statistics,
}

struct Format {
    name: &'static str,
    file: &'static str,
    bytes: Vec<u8>,
    detects: Detects,
    reader: Reader,
    /// Mutate the gzip content rather than the compressed bytes (for half the cases).
    gz_of: Option<Vec<u8>>,
}

#[derive(Default, Debug)]
struct Tally {
    refused: usize,
    same: usize,
    /// Accepted with other data: undetectable damage (a value changed).
    other: usize,
    panics: Vec<String>,
    wrong: Vec<String>,
}

fn formats(dir: &Path) -> Vec<Format> {
    let data: Vec<f64> = (0..80).map(|k| f64::from(k) * 0.125 - 4.0).collect();
    let read_by = |name, file, bytes, detects, reader| Format {
        name,
        file,
        bytes,
        detects,
        reader,
        gz_of: None,
    };
    let plain = |name, file, bytes, detects| {
        read_by(name, file, bytes, detects, Reader::Data(Missing::Reject))
    };
    let gaps = |name, file, bytes, detects| {
        read_by(name, file, bytes, detects, Reader::Data(Missing::AsNan))
    };
    let labels = |name, file, bytes, detects| read_by(name, file, bytes, detects, Reader::Labels);
    let zipped = |name, file, content: Vec<u8>| Format {
        name,
        file,
        bytes: gz(&content),
        detects: Detects::Everything,
        reader: Reader::Data(Missing::Reject),
        gz_of: Some(content),
    };
    #[allow(unused_mut)] // without the format features
    let mut all = vec![
        plain("CSV", "d.csv", csv_bytes(), Detects::Structure),
        zipped("CSV.gz", "d.csv.gz", csv_bytes()),
        plain("NPY", "d.npy", npy(&data, 20, 4), Detects::LengthChanges),
        zipped("NPY.gz", "d.npy.gz", npy(&data, 20, 4)),
        plain("IDX", "d-idx3-ubyte", idx(12), Detects::LengthChanges),
        zipped("IDX.gz", "d-idx3-ubyte.gz", idx(12)),
        read_by(
            "model file",
            "m.safetensors",
            model_bytes(dir),
            Detects::LengthChanges,
            Reader::Model,
        ),
        gaps(
            "CSV, missing",
            "g.csv",
            csv_gaps_bytes(),
            Detects::Structure,
        ),
        gaps(
            "NPY, missing",
            "g.npy",
            npy_gaps_bytes(),
            Detects::LengthChanges,
        ),
        labels(
            "IDX labels",
            "l-idx1-ubyte",
            idx_labels_bytes(),
            Detects::LengthChanges,
        ),
        labels(
            "text labels",
            "l.csv",
            text_labels_bytes(),
            Detects::Structure,
        ),
        labels(
            "NPY labels",
            "l.npy",
            npy_labels_bytes(),
            Detects::LengthChanges,
        ),
        read_by(
            "statistics file",
            "s.stats",
            statistics_bytes(dir),
            Detects::LengthChanges,
            Reader::Statistics,
        ),
    ];
    // The formats behind cargo features, when built.
    #[cfg(feature = "parquet")]
    all.extend([
        plain("Parquet", "d.parquet", parquet_bytes(), Detects::Structure),
        gaps(
            "Parquet, missing",
            "g.parquet",
            parquet_gaps_bytes(),
            Detects::Structure,
        ),
        labels(
            "Parquet labels",
            "l.parquet",
            parquet_labels_bytes(),
            Detects::Structure,
        ),
    ]);
    #[cfg(feature = "arrow")]
    all.extend([
        plain(
            "Arrow IPC file",
            "d.arrow",
            arrow_bytes(false, false),
            Detects::LengthChanges,
        ),
        plain(
            "Arrow IPC file (LZ4)",
            "z.arrow",
            arrow_bytes(false, true),
            Detects::LengthChanges,
        ),
        plain(
            "Arrow IPC stream",
            "d.arrows",
            arrow_bytes(true, false),
            Detects::LengthChanges,
        ),
        zipped(
            "Arrow IPC stream.gz",
            "d.arrows.gz",
            arrow_bytes(true, false),
        ),
    ]);
    all
}

/// What a read gives, to compare: a table's shape, type and values (as bits, so that NaN
/// equals NaN) and names, a model or statistics printed, the labels.
#[derive(PartialEq, Debug)]
enum Read {
    Table(usize, usize, bool, Vec<u64>, Option<Vec<String>>),
    Printed(String),
    Labels(Vec<String>),
}

fn read(path: &Path, reader: Reader) -> Result<Read, String> {
    let path = path.to_owned();
    match reader {
        Reader::Data(missing) => {
            let options = ReadOptions {
                missing,
                ..ReadOptions::default()
            };
            read_table(std::slice::from_ref(&path), &options).map(|Table { data, column_names }| {
                let bits = data
                    .to_f64()
                    .as_slice()
                    .iter()
                    .map(|v| v.to_bits())
                    .collect();
                Read::Table(
                    data.nrows(),
                    data.ncols(),
                    data.is_f32(),
                    bits,
                    column_names,
                )
            })
        }
        Reader::Model => load_model(&path).map(|m| Read::Printed(format!("{m:?}"))),
        Reader::Labels => read_label_files(&[path]).map(Read::Labels),
        Reader::Statistics => load_statistics(&path).map(|s| Read::Printed(format!("{s:?}"))),
    }
    .map_err(|e| e.to_string())
}

#[test]
fn damaged_files_of_every_format_are_refused_or_read_correctly() {
    // Contained panics (inside the Arrow and Parquet decoders) are errors, not failures: keep
    // them quiet; any other panic is reported by the harness below.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !panic_is_contained() {
            default_hook(info);
        }
    }));
    let dir = TempDir::new().unwrap();
    let mut rng = Rng(SEED);
    let mut failures = Vec::new();
    let mut total = 0;
    println!(
        "{:<22} {:>6} {:>8} {:>10} {:>14}",
        "format", "files", "refused", "read same", "read other*"
    );
    for format in formats(dir.path()) {
        let good_path = dir.path().join(format!("good-{}", format.file));
        std::fs::write(&good_path, &format.bytes).unwrap();
        let good = read(&good_path, format.reader)
            .unwrap_or_else(|e| panic!("the good {} file does not read: {e}", format.name));
        let mut tally = Tally::default();
        let started = std::time::Instant::now();
        let mut slowest = (std::time::Duration::ZERO, 0);
        for case in 0..CASES {
            // Half the gzip cases damage the content (a lying header inside a good gzip).
            let inner = format.gz_of.as_ref().filter(|_| case % 2 == 1);
            let base = inner.unwrap_or(&format.bytes);
            let mutation = Mutation::random(&mut rng, base.len());
            let mutated = mutation.apply(base);
            let bytes = if inner.is_some() {
                gz(&mutated)
            } else {
                mutated
            };
            let path: PathBuf = dir.path().join(format.file);
            std::fs::write(&path, &bytes).unwrap();
            let label = format!("{} case {case}: {mutation:?}", format.name);
            let one = std::time::Instant::now();
            let outcome = std::panic::catch_unwind(|| read(&path, format.reader));
            slowest = slowest.max((one.elapsed(), case));
            match outcome {
                Err(_) => tally.panics.push(label),
                Ok(Err(message)) => {
                    tally.refused += 1;
                    if !message.contains(&path.display().to_string()) {
                        tally.wrong.push(format!(
                            "{label}: the error does not name the file: {message}"
                        ));
                    }
                }
                Ok(Ok(got)) if got == good => tally.same += 1,
                Ok(Ok(_)) => {
                    tally.other += 1;
                    let detectable = match format.detects {
                        Detects::Everything => inner.is_none() || mutation.changes_length(),
                        Detects::LengthChanges => mutation.changes_length(),
                        Detects::Structure => false,
                    };
                    // Inside a good gzip, damage to the content is judged by the content's
                    // own format (the gzip itself is intact).
                    let detectable =
                        detectable && !(inner.is_some() && format.name.starts_with("CSV"));
                    if detectable {
                        tally
                            .wrong
                            .push(format!("{label}: a damaged file was accepted"));
                    }
                }
            }
            total += 1;
        }
        println!(
            "{:<22} {:>6} {:>8} {:>10} {:>14}   panics {}, {:.2} s, slowest case {} {:.3} s",
            format.name,
            CASES,
            tally.refused,
            tally.same,
            tally.other,
            tally.panics.len(),
            started.elapsed().as_secs_f64(),
            slowest.1,
            slowest.0.as_secs_f64()
        );
        failures.extend(tally.panics.iter().map(|p| format!("panic: {p}")));
        failures.extend(tally.wrong);
    }
    println!(
        "{total} damaged files; * read as other valid data, where the damage cannot be seen \
         (see the module's documentation)"
    );
    assert!(
        failures.is_empty(),
        "{} failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The fuzzers' sparse and AnnData seeds (`common::mtx_bytes`, `common::h5ad_bytes`) are good
/// files that the readers take, with the values they were written with: a seed the readers
/// refused would start the `mtx` and `h5ad` targets from an error path.
#[test]
fn the_sparse_and_h5ad_seeds_read_as_written() {
    use principal::sparse::SparseSource;
    let dir = TempDir::new().unwrap();
    let mtx = dir.path().join("seed.mtx");
    std::fs::write(&mtx, common::mtx_bytes()).unwrap();
    let file = principal_io::SparseFile::open(&mtx, 1 << 26).unwrap();
    assert_eq!((file.n_samples(), file.n_features()), (5, 4));
    #[cfg(feature = "h5ad")]
    for layout in [
        common::H5adLayout::Dense,
        common::H5adLayout::Csr,
        common::H5adLayout::Csc,
    ] {
        let path = dir.path().join(format!("{layout:?}.h5ad"));
        std::fs::write(&path, common::h5ad_bytes(layout)).unwrap();
        let t = read_table(std::slice::from_ref(&path), &ReadOptions::default()).unwrap();
        assert_eq!((t.data.nrows(), t.data.ncols()), (5, 4), "{layout:?}");
        let expected = |i: usize, j: usize| {
            if (i + 2 * j).is_multiple_of(3) {
                0.0
            } else {
                (i * 4 + j) as f64 * 0.5 + 1.0
            }
        };
        let names: Vec<String> = (0..4).map(|j| format!("gene{j}")).collect();
        assert_eq!(t.column_names.as_deref(), Some(&names[..]), "{layout:?}");
        let dense = t.data.to_f64();
        for i in 0..5 {
            for j in 0..4 {
                assert_eq!(dense[(i, j)], expected(i, j), "{layout:?} ({i}, {j})");
            }
        }
        let layer = ReadOptions {
            layer: Some("counts".into()),
            ..ReadOptions::default()
        };
        assert!(read_table(std::slice::from_ref(&path), &layer).is_ok());
        if layout != common::H5adLayout::Dense {
            let mask = ReadOptions {
                mask_var: Some("hv".into()),
                ..ReadOptions::default()
            };
            let mut file = principal_io::SparseFile::open_with(&path, &mask, 1 << 26).unwrap();
            assert_eq!(file.n_features(), 3, "{layout:?}: hv keeps 3 genes");
            let mut rows = 0;
            file.pass(&mut |block| {
                rows += block.nrows();
                Ok(())
            })
            .unwrap();
            assert_eq!(rows, 5, "{layout:?}");
        }
    }
}
