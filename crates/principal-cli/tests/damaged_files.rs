//! Damaged and hostile files through the real binary: a clear error (exit 1, one `error:` line
//! naming the file), never a crash, a hang or a giant allocation, and never an output left
//! behind or a good one overwritten.
//!
//! The regression tests rebuild the files; the seeded run damages good files of every
//! format with the mutations of principal-io's tests (whose builders it includes) and runs
//! `principal fit` (or `transform` with the damaged model file) on each, and a second run sends
//! damaged files through every other command that reads one (`choose`, `score`, `impute`,
//! `merge`, `report --labels`, `classify`, `sample`, `transform --posterior`, `fit --missing
//! em`). They run 24 and 5 files per format and command here; for the full run set
//! `PRINCIPAL_DAMAGED_CASES` (files per format and command in both):
//!
//! `PRINCIPAL_DAMAGED_CASES=250 cargo test --release -p principal-cli --test damaged_files -- --nocapture`

use crate::common;
use crate::io_files;

use std::time::{Duration, Instant};

use common::Env;
#[cfg(feature = "arrow")]
use io_files::arrow_bytes;
use io_files::{
    Mutation, Rng, csv_bytes, csv_gaps_bytes, gz, idx, idx_labels_bytes, labels, leftovers,
    model_bytes, npy, npy_gaps_bytes, npy_labels_bytes, npy_with, statistics_bytes,
    text_labels_bytes,
};
#[cfg(feature = "parquet")]
use io_files::{parquet_bytes, parquet_gaps_bytes, parquet_labels_bytes};

const SEED: u64 = 0x5eed_c119;
/// A command that runs longer than this on a file of a few kilobytes is hung.
const HANG: Duration = Duration::from_secs(20);

/// An NPY file whose header claims `shape` over `data_bytes` zero bytes.
fn lying_npy(shape: &str, data_bytes: usize) -> Vec<u8> {
    npy_with(
        &format!("{{'descr': '<f8', 'fortran_order': False, 'shape': {shape}, }}"),
        &vec![0; data_bytes],
    )
}

fn lying_idx(dims: &[u32]) -> Vec<u8> {
    let mut out = vec![0, 0, 0x08, dims.len() as u8];
    for d in dims {
        out.extend_from_slice(&d.to_be_bytes());
    }
    out.extend_from_slice(&[0; 100]);
    out
}

#[test]
fn lying_headers_fail_fit_and_transform_cleanly_and_leave_outputs_alone() {
    let env = Env::new();
    env.ok(&[
        "fit",
        &common::iris(),
        "--exclude",
        "species",
        "-o",
        "m.pca",
    ]);
    let model = std::fs::read(env.path("m.pca")).unwrap();
    env.write("codes.csv", "pc1\n1\n");
    let npy = lying_npy("(30, 1000000000000000)", 600);
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("wide.npy", npy.clone(), "shape (30, 1000000000000000)"),
        ("wide.npy.gz", gz(&npy), "shape (30, 1000000000000000)"),
        ("max-idx3-ubyte", lying_idx(&[u32::MAX; 3]), "too large"),
        (
            "big-idx3-ubyte.gz",
            gz(&lying_idx(&[20, 65535, 65535])),
            "dimensions [20, 65535, 65535]",
        ),
    ];
    for (name, bytes, says) in cases {
        let path = env.write(name, &bytes);
        let e = env.fails(1, &["fit", name, "-o", "m.pca"]);
        assert!(
            e.contains(&path.file_name().unwrap().to_string_lossy().to_string()),
            "{e}"
        );
        assert!(e.contains(says), "{name}: {e}");
        let e = env.fails(1, &["transform", "m.pca", name, "-o", "codes.csv"]);
        assert!(e.contains(says), "{name}: {e}");
        assert_eq!(std::fs::read(env.path("m.pca")).unwrap(), model);
        assert_eq!(std::fs::read(env.path("codes.csv")).unwrap(), b"pc1\n1\n");
    }
    assert_eq!(leftovers(env.dir.path()), Vec::<String>::new());
}

#[test]
fn damaged_gzip_trailers_fail_in_every_format() {
    let env = Env::new();
    let data: Vec<f64> = (0..80).map(f64::from).collect();
    #[allow(unused_mut)] // without the `arrow` feature
    let mut contents = vec![
        ("d.npy.gz", npy(&data, 20, 4)),
        ("d-idx3-ubyte.gz", idx(12)),
        ("d.csv.gz", csv_bytes()),
    ];
    #[cfg(feature = "arrow")]
    contents.push(("d.arrows.gz", arrow_bytes(true, false)));
    for (name, content) in contents {
        let mut bytes = gz(&content);
        env.write(name, &bytes);
        env.ok(&["fit", name, "-o", "m.pca"]);
        let n = bytes.len();
        bytes[n - 8] ^= 0x40;
        env.write(name, &bytes);
        let e = env.fails(1, &["fit", name, "-o", "other.pca"]);
        assert!(e.contains(name), "{e}");
        assert!(!env.path("other.pca").exists());
    }
}

#[cfg(feature = "arrow")]
#[test]
fn a_damaged_arrow_stream_is_an_error_about_the_file() {
    let env = Env::new();
    // A compressed buffer declaring 4116137501438162654 bytes (the abort).
    let good = arrow_bytes(true, true);
    let mut found = false;
    for at in (0..good.len() - 8).step_by(8) {
        let mut bytes = good.clone();
        bytes[at..at + 8].copy_from_slice(&4_116_137_501_438_162_654i64.to_le_bytes());
        env.write("s.arrows", &bytes);
        let out = env.run(&["fit", "s.arrows", "-o", "m.pca"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            matches!(out.status.code(), Some(0 | 1)) && !stderr.contains("internal error"),
            "byte {at}: {:?} {stderr}",
            out.status
        );
        found |= stderr.contains("more than its") && stderr.contains("compressed bytes can hold");
        assert!(!stderr.contains("did not converge"), "byte {at}: {stderr}");
    }
    assert!(found, "no buffer length was overwritten");
}

/// A format of the seeded run: its name, the file's name, a good file, the gzip's content to
/// damage instead (half the cases), and whether every change of length is detectable.
type Format = (&'static str, &'static str, Vec<u8>, Option<Vec<u8>>, bool);

/// The run over damaged files of every format: prints, per format, the files, how many were
/// refused, read as the good file, or read as other valid data (undetectable damage), and
/// asserts no crash, no hang, no detectable damage accepted, no output left or clobbered.
#[test]
fn seeded_damaged_files_never_crash_hang_or_lose_an_output() {
    let cases: usize = std::env::var("PRINCIPAL_DAMAGED_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(24);
    let env = Env::new();
    let dir = env.dir.path();
    let data: Vec<f64> = (0..80)
        .map(|k| f64::from(k) * 0.125 - 4.0 + (k % 7) as f64)
        .collect();
    #[allow(unused_mut)] // without the format features
    let mut formats: Vec<Format> = vec![
        ("CSV", "d.csv", csv_bytes(), None, false),
        (
            "CSV.gz",
            "d.csv.gz",
            gz(&csv_bytes()),
            Some(csv_bytes()),
            false,
        ),
        ("NPY", "d.npy", npy(&data, 20, 4), None, true),
        (
            "NPY.gz",
            "d.npy.gz",
            gz(&npy(&data, 20, 4)),
            Some(npy(&data, 20, 4)),
            true,
        ),
        ("IDX", "d-idx3-ubyte", idx(12), None, true),
        (
            "IDX.gz",
            "d-idx3-ubyte.gz",
            gz(&idx(12)),
            Some(idx(12)),
            true,
        ),
        ("model file", "m.safetensors", model_bytes(dir), None, true),
        // Sparse text (fixtures/sparse): a MatrixMarket file, gzipped, and a 10x directory's
        // matrix (its genes and barcodes left whole).
        (
            "MatrixMarket",
            "d.mtx",
            sparse_fixture("counts.mtx"),
            None,
            false,
        ),
        (
            "MatrixMarket.gz",
            "d.mtx.gz",
            gz(&sparse_fixture("counts.mtx")),
            Some(sparse_fixture("counts.mtx")),
            false,
        ),
        (
            "10x matrix.mtx.gz",
            "tenx/matrix.mtx.gz",
            sparse_fixture("tenx/matrix.mtx.gz"),
            Some(gunzip(&sparse_fixture("tenx/matrix.mtx.gz"))),
            false,
        ),
    ];
    // The formats behind cargo features, when built.
    #[cfg(feature = "parquet")]
    formats.push(("Parquet", "d.parquet", parquet_bytes(), None, false));
    #[cfg(feature = "arrow")]
    formats.extend([
        (
            "Arrow IPC file",
            "d.arrow",
            arrow_bytes(false, false),
            None,
            true,
        ),
        (
            "Arrow IPC file LZ4",
            "z.arrow",
            arrow_bytes(false, true),
            None,
            true,
        ),
        (
            "Arrow IPC stream",
            "d.arrows",
            arrow_bytes(true, false),
            None,
            true,
        ),
        (
            "Arrow IPC stream.gz",
            "d.arrows.gz",
            gz(&arrow_bytes(true, false)),
            Some(arrow_bytes(true, false)),
            true,
        ),
    ]);
    #[cfg(feature = "h5ad")]
    formats.extend([
        // Written by the anndata package (fixtures/generate_h5ad.py); HDF5 has no overall
        // length to check, so an appended byte may go unnoticed.
        (
            "AnnData h5ad (CSR)",
            "d.h5ad",
            std::fs::read(h5ad_fixture("x_csr_f64.h5ad")).unwrap(),
            None,
            false,
        ),
        (
            "AnnData h5ad (gzip)",
            "g.h5ad",
            std::fs::read(h5ad_fixture("x_csr_gzip.h5ad")).unwrap(),
            None,
            false,
        ),
        // Read as CSR blocks by the sparse core, CSC by per-gene cursors.
        (
            "AnnData h5ad (CSC)",
            "c.h5ad",
            std::fs::read(h5ad_fixture("x_csc_f64.h5ad")).unwrap(),
            None,
            false,
        ),
    ]);
    std::fs::create_dir_all(dir.join("tenx")).unwrap();
    for name in ["features.tsv.gz", "barcodes.tsv.gz"] {
        env.write(
            &format!("tenx/{name}"),
            sparse_fixture(&format!("tenx/{name}")),
        );
    }
    // Input for the model file's features, named a, b, c, d.
    env.write("good.csv", "a,b,c,d\n1,2,3,4\n0.5,-1,2,7\n3,3,0,1\n");
    let previous = b"previous output\n".to_vec();
    let mut rng = Rng(SEED);
    let mut failures = Vec::new();
    let mut total = [0usize; 8];
    println!(
        "{:<20} {:>5} {:>7} {:>5} {:>6} {:>7} {:>5} {:>8} {:>9}",
        "format", "files", "refused", "same", "other*", "crashes", "hangs", "accepted", "outputs"
    );
    for (name, file, good, inner, lengths) in formats {
        let model = file.ends_with(".safetensors");
        let command = |input: &str, out: &str| -> Vec<String> {
            // A 10x matrix is read through its directory.
            let input = input.strip_suffix("/matrix.mtx.gz").unwrap_or(input);
            let v: Vec<&str> = if model {
                vec!["transform", input, "good.csv", "-o", out]
            } else {
                vec!["fit", input, "-o", out]
            };
            v.into_iter().map(String::from).collect()
        };
        let out_name = if model { "codes.csv" } else { "out.pca" };
        // What the good file gives.
        env.write(file, &good);
        let good_out = if model {
            "good-out.csv"
        } else {
            "good-out.pca"
        };
        let args = command(file, good_out);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        env.ok(&args);
        let reference = std::fs::read(env.path(good_out)).unwrap();
        let [
            mut refused,
            mut same,
            mut other,
            mut crashes,
            mut hangs,
            mut accepted,
            mut lost,
        ] = [0usize; 7];
        for case in 0..cases {
            let base = inner.as_ref().filter(|_| case % 2 == 1);
            let mutation = Mutation::random(&mut rng, base.unwrap_or(&good).len());
            let mutated = mutation.apply(base.unwrap_or(&good));
            let bytes = if base.is_some() {
                gz(&mutated)
            } else {
                mutated
            };
            env.write(file, &bytes);
            env.write(out_name, &previous);
            let label = format!("{name} case {case}: {mutation:?}");
            let args = command(file, out_name);
            let started = Instant::now();
            let output = assert_cmd::Command::new(env!("CARGO_BIN_EXE_principal"))
                .current_dir(dir)
                .args(&args)
                .timeout(HANG)
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&output.stderr);
            if started.elapsed() >= HANG {
                hangs += 1;
                failures.push(format!("hang: {label}"));
            }
            let written = std::fs::read(env.path(out_name)).unwrap_or_default();
            match output.status.code() {
                Some(0) => {
                    if written == reference {
                        same += 1;
                    } else {
                        other += 1;
                        let detectable = if inner.is_some() {
                            base.is_none() || (lengths && mutation.changes_length())
                        } else {
                            lengths && mutation.changes_length()
                        };
                        if detectable {
                            accepted += 1;
                            failures.push(format!("accepted: {label}"));
                        }
                    }
                }
                Some(1)
                    if stderr.starts_with("error: ")
                        && stderr.lines().count() == 1
                        && !stderr.contains("internal error") =>
                {
                    refused += 1;
                    if written != previous {
                        lost += 1;
                        failures.push(format!("output clobbered: {label}"));
                    }
                }
                _ => {
                    crashes += 1;
                    failures.push(format!("crash: {label}: {:?} {stderr}", output.status));
                }
            }
            let left = leftovers(dir);
            if !left.is_empty() {
                lost += 1;
                failures.push(format!("left behind {left:?}: {label}"));
                for l in left {
                    let _ = std::fs::remove_file(dir.join(l));
                }
            }
        }
        println!(
            "{name:<20} {cases:>5} {refused:>7} {same:>5} {other:>6} {crashes:>7} {hangs:>5} \
             {accepted:>8} {lost:>9}"
        );
        for (t, v) in total
            .iter_mut()
            .zip([cases, refused, same, other, crashes, hangs, accepted, lost])
        {
            *t += v;
        }
    }
    println!(
        "{:<20} {:>5} {:>7} {:>5} {:>6} {:>7} {:>5} {:>8} {:>9}",
        "all", total[0], total[1], total[2], total[3], total[4], total[5], total[6], total[7]
    );
    println!(
        "* read as other valid data, where the damage cannot be seen; outputs: left behind or \
         clobbered"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A safetensors file (model or statistics) with its metadata and tensor bytes changed by
/// `edit`: the JSON header is parsed, edited and written back, padded to 8 bytes as
/// safetensors pads it (offsets count from the end of the header, so they stay right).
fn edit_safetensors(
    bytes: &[u8],
    edit: impl FnOnce(&mut serde_json::Map<String, serde_json::Value>, &mut [u8]),
) -> Vec<u8> {
    let len = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let mut header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + len]).unwrap();
    let mut data = bytes[8 + len..].to_vec();
    edit(header.as_object_mut().unwrap(), &mut data);
    let mut text = header.to_string().into_bytes();
    while !text.len().is_multiple_of(8) {
        text.push(b' ');
    }
    let mut out = (text.len() as u64).to_le_bytes().to_vec();
    out.extend(text);
    out.extend(data);
    out
}

/// Sets metadata `key` to `value`.
fn set_metadata(meta: &mut serde_json::Map<String, serde_json::Value>, key: &str, value: String) {
    meta["__metadata__"][key] = serde_json::Value::String(value);
}

/// Entry `index` of F64 tensor `name`, as a mutable value in the data bytes.
fn tensor_entry<'a>(
    meta: &serde_json::Map<String, serde_json::Value>,
    data: &'a mut [u8],
    name: &str,
    index: usize,
) -> &'a mut [u8] {
    let start = meta[name]["data_offsets"][0].as_u64().unwrap() as usize + index * 8;
    &mut data[start..start + 8]
}

/// Issue 24: a model whose noise variance is negative, 1e300 or above a kept component's
/// variance, or whose explained variance is negative, was accepted: `sample`, `score` and
/// `transform --posterior` exited 0 with it (and for a negative σ², `score` blamed 'the noise
/// variance is 0'). Each now fails reading the model, naming the file and the value, and
/// writes nothing.
#[test]
fn models_with_values_no_fit_gives_are_refused_by_every_command_that_uses_them() {
    let env = Env::new();
    env.ok(&[
        "fit",
        &common::iris(),
        "--exclude",
        "species",
        "-k",
        "2",
        "-o",
        "m.pca",
    ]);
    let good = std::fs::read(env.path("m.pca")).unwrap();
    let meta_of = |bytes: &[u8]| {
        let len = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
        serde_json::from_slice::<serde_json::Value>(&bytes[8..8 + len]).unwrap()
    };
    let header = meta_of(&good);
    let lambda2 = {
        let start = header["explained_variance"]["data_offsets"][0]
            .as_u64()
            .unwrap() as usize;
        let len = u64::from_le_bytes(good[..8].try_into().unwrap()) as usize;
        let at = 8 + len + start + 8;
        f64::from_le_bytes(good[at..at + 8].try_into().unwrap())
    };
    // σ² above λ₂ with a total that agrees with it (only the bound on σ² can refuse it).
    let above = lambda2 * 2.0;
    let (kept, lambda1) = {
        let start = header["explained_variance"]["data_offsets"][0]
            .as_u64()
            .unwrap() as usize;
        let len = u64::from_le_bytes(good[..8].try_into().unwrap()) as usize;
        let at = 8 + len + start;
        let l1 = f64::from_le_bytes(good[at..at + 8].try_into().unwrap());
        (l1 + lambda2, l1)
    };
    let damaged: Vec<(&str, Vec<u8>, String)> = vec![
        (
            "negative-noise.pca",
            edit_safetensors(&good, |m, _| {
                set_metadata(m, "noise_variance", "-0.5".into())
            }),
            "noise_variance = -0.5 is negative".into(),
        ),
        (
            "huge-noise.pca",
            edit_safetensors(&good, |m, _| {
                set_metadata(m, "noise_variance", "1e300".into())
            }),
            "noise_variance = 1000000000".into(),
        ),
        (
            "noise-above.pca",
            edit_safetensors(&good, |m, _| {
                set_metadata(m, "noise_variance", above.to_string());
                set_metadata(m, "total_variance", (kept + 2.0 * above).to_string());
            }),
            format!("noise_variance = {above} exceeds the variance of kept component 2"),
        ),
        (
            "negative-variance.pca",
            edit_safetensors(&good, |m, data| {
                tensor_entry(m, data, "explained_variance", 1)
                    .copy_from_slice(&(-lambda2).to_le_bytes());
            }),
            format!("explained_variance[1] = {} is negative", -lambda2),
        ),
    ];
    assert!(lambda1 > lambda2);
    env.write("z.csv", "pc1,pc2\n0.5,-0.5\n");
    for (name, bytes, says) in &damaged {
        env.write(name, bytes);
        for args in [
            vec!["sample", name, "--count", "5", "-o", "out.csv"],
            vec!["sample", name, "--latent", "z.csv", "-o", "out.csv"],
            vec!["score", name, &common::iris(), "-o", "out.csv"],
            vec![
                "transform",
                name,
                &common::iris(),
                "--posterior",
                "-o",
                "out.csv",
            ],
            vec!["impute", name, &common::iris(), "-o", "out.csv"],
        ] {
            let e = env.fails(1, &args);
            assert!(
                e.contains(&format!("model file {name}: inconsistent model: "))
                    && e.contains(says.as_str()),
                "{args:?}: wanted {says:?} in {e}"
            );
            assert!(!env.path("out.csv").exists(), "{args:?}");
        }
    }
    // The good model still serves them all.
    env.ok(&["sample", "m.pca", "--count", "5", "-o", "out.csv"]);
    env.ok(&["score", "m.pca", &common::iris(), "-o", "out.csv"]);
    env.ok(&[
        "transform",
        "m.pca",
        &common::iris(),
        "--posterior",
        "-o",
        "out.csv",
    ]);
    assert_eq!(leftovers(env.dir.path()), Vec::<String>::new());
}

/// Issue 24: `merge` added sample counts with wrapping: parts claiming 2⁶⁴ − 1 samples and 25
/// more fitted '24 samples, 100.00%', and 2⁶³ + 2⁶³ + 25 gave '25 samples'. The merge now
/// fails naming the part and the counts, and writes no model.
#[test]
fn merge_refuses_sample_counts_that_add_past_the_largest() {
    let env = Env::new();
    env.write("a.csv", "x,y\n1,2\n2,5\n4,4\n");
    env.ok(&["stats", "a.csv", "-o", "a.stats"]);
    let good = std::fs::read(env.path("a.stats")).unwrap();
    let claiming =
        |n: u64| edit_safetensors(&good, |m, _| set_metadata(m, "n_samples", n.to_string()));
    env.write("max.stats", claiming(u64::MAX));
    env.write("half.stats", claiming(1 << 63));
    let cases: [(&[&str], String); 2] = [
        (
            &["max.stats", "a.stats"],
            format!(
                "error: statistics file a.stats: the sample counts {} and 3 add up to more than {}, the largest count\n",
                u64::MAX,
                u64::MAX
            ),
        ),
        (
            &["half.stats", "half.stats", "a.stats"],
            format!(
                "error: statistics file half.stats: the sample counts {} and {} add up to more than {}, the largest count\n",
                1u64 << 63,
                1u64 << 63,
                u64::MAX
            ),
        ),
    ];
    for (parts, says) in cases {
        let mut args = vec!["merge"];
        args.extend_from_slice(parts);
        args.extend(["-o", "m.pca"]);
        let e = env.fails(1, &args);
        assert_eq!(e, says);
        assert!(!env.path("m.pca").exists());
    }
    assert_eq!(leftovers(env.dir.path()), Vec::<String>::new());
}

/// What a command of the run over every command writes: a file, a report directory, or
/// standard output.
#[derive(Clone, Copy)]
enum Writes {
    File(&'static str),
    Directory(&'static str),
    Stdout,
}

/// One command of the run over every command: the damaged file's format, its name, the good
/// file, whether every change of its length is detectable, the command (with the damaged
/// file's name in it) and what it writes.
struct Use {
    format: &'static str,
    file: &'static str,
    good: Vec<u8>,
    lengths: bool,
    args: Vec<&'static str>,
    writes: Writes,
}

/// What a command wrote: the file, the report's page, or standard output (`None` when a
/// file or directory it should have written is absent).
fn written(env: &Env, writes: Writes, stdout: &[u8]) -> Option<Vec<u8>> {
    match writes {
        Writes::File(name) => std::fs::read(env.path(name)).ok(),
        Writes::Directory(name) => std::fs::read(env.path(name).join("index.html")).ok(),
        Writes::Stdout => Some(stdout.to_vec()),
    }
}

/// Issue 24: the seeded damage through every command that reads a file besides `fit` and
/// `transform` — data (with and without missing values), model, statistics and label files
/// — with the same verdicts as the run above: a clean refusal (exit 1, one `error:` line, the
/// previous output untouched, no report directory, no temporary file) or a read of valid
/// data; never a crash, a hang, or detectable damage accepted.
#[test]
fn seeded_damaged_files_through_every_command_that_reads_one() {
    let cases: usize = std::env::var("PRINCIPAL_DAMAGED_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let env = Env::new();
    let dir = env.dir.path();
    // Good companions: 30 rows of the model's four features, its labels, a statistics part.
    let mut rows = String::from("a,b,c,d\n");
    for i in 0..30 {
        rows.push_str(&format!(
            "{},{},{},{}\n",
            i % 7,
            (i * 3) % 5,
            i as f64 * 0.5,
            (i * i) % 11
        ));
    }
    env.write("good.csv", rows);
    env.write("good.pca", model_bytes(dir));
    env.write("good.stats", statistics_bytes(dir));
    let text_labels: String = labels().iter().map(|l| format!("{l}\n")).collect();
    env.write("good-labels.txt", text_labels);
    // Models of the data files' own columns, for the commands that read data with a model.
    let data: Vec<f64> = (0..80)
        .map(|k| f64::from(k) * 0.125 - 4.0 + (k % 7) as f64)
        .collect();
    #[allow(unused_mut)] // without the `parquet` feature
    let mut fits = vec![
        ("fit-csv.csv", csv_bytes()),
        ("fit-npy.npy", npy(&data, 20, 4)),
        ("fit-gaps-csv.csv", csv_gaps_bytes()),
        ("fit-gaps-npy.npy", npy_gaps_bytes()),
    ];
    #[cfg(feature = "parquet")]
    fits.extend([
        ("fit-parquet.parquet", parquet_bytes()),
        ("fit-gaps-parquet.parquet", parquet_gaps_bytes()),
    ]);
    for (file, bytes) in fits {
        env.write(file, bytes);
        let model = format!("{}.pca", file.split('.').next().unwrap());
        env.ok(&["fit", file, "-k", "1", "--missing", "em", "-o", &model]);
    }
    let mut uses: Vec<Use> = Vec::new();
    let mut add = |format, file, good: Vec<u8>, lengths, args: &[&'static str], writes| {
        uses.push(Use {
            format,
            file,
            good,
            lengths,
            args: args.to_vec(),
            writes,
        })
    };
    let out = Writes::File("out.csv");
    #[allow(unused_mut)] // without the `parquet` feature
    let mut plain = vec![
        ("CSV", "d.csv", csv_bytes(), false, "fit-csv.pca"),
        ("NPY", "d.npy", npy(&data, 20, 4), true, "fit-npy.pca"),
    ];
    #[cfg(feature = "parquet")]
    plain.push((
        "Parquet",
        "d.parquet",
        parquet_bytes(),
        false,
        "fit-parquet.pca",
    ));
    for (format, file, good, lengths, model) in plain {
        add(
            format,
            file,
            good.clone(),
            lengths,
            &["choose", file],
            Writes::Stdout,
        );
        add(
            format,
            file,
            good,
            lengths,
            &["score", model, file, "-o", "out.csv"],
            out,
        );
    }
    #[allow(unused_mut)] // without the `parquet` feature
    let mut gaps = vec![
        (
            "CSV, missing",
            "g.csv",
            csv_gaps_bytes(),
            false,
            "fit-gaps-csv.pca",
        ),
        (
            "NPY, missing",
            "g.npy",
            npy_gaps_bytes(),
            true,
            "fit-gaps-npy.pca",
        ),
    ];
    #[cfg(feature = "parquet")]
    gaps.push((
        "Parquet, missing",
        "g.parquet",
        parquet_gaps_bytes(),
        false,
        "fit-gaps-parquet.pca",
    ));
    for (format, file, good, lengths, model) in gaps {
        add(
            format,
            file,
            good.clone(),
            lengths,
            &["impute", model, file, "-o", "out.csv"],
            out,
        );
        let fit = ["fit", file, "-k", "1", "--missing", "em", "-o", "out.pca"];
        add(format, file, good, lengths, &fit, Writes::File("out.pca"));
    }
    let model = model_bytes(dir);
    for (args, writes) in [
        (&["score", "m.pca", "good.csv", "-o", "out.csv"][..], out),
        (
            &[
                "sample", "m.pca", "--count", "4", "--seed", "3", "-o", "out.csv",
            ],
            out,
        ),
        (
            &[
                "transform",
                "m.pca",
                "good.csv",
                "--posterior",
                "-o",
                "out.csv",
            ],
            out,
        ),
    ] {
        add("model file", "m.pca", model.clone(), true, args, writes);
    }
    let merge = ["merge", "good.stats", "s.stats", "-o", "out.pca"];
    add(
        "statistics file",
        "s.stats",
        statistics_bytes(dir),
        true,
        &merge,
        Writes::File("out.pca"),
    );
    #[allow(unused_mut)] // without the `parquet` feature
    let mut label_files = vec![
        ("IDX labels", "l-idx1-ubyte", idx_labels_bytes(), true),
        ("text labels", "l.txt", text_labels_bytes(), false),
        ("NPY labels", "l.npy", npy_labels_bytes(), true),
    ];
    #[cfg(feature = "parquet")]
    label_files.push(("Parquet labels", "l.parquet", parquet_labels_bytes(), false));
    for (format, file, good, lengths) in label_files {
        let report = [
            "report", "good.pca", "--data", "good.csv", "--labels", file, "-o", "rep",
        ];
        add(
            format,
            file,
            good.clone(),
            lengths,
            &report,
            Writes::Directory("rep"),
        );
        let classify = [
            "classify",
            "--train",
            "good.csv",
            "--train-labels",
            file,
            "--test",
            "good.csv",
            "--test-labels",
            "good-labels.txt",
            "--json",
        ];
        add(format, file, good, lengths, &classify, Writes::Stdout);
    }

    let previous = b"previous output\n".to_vec();
    let mut rng = Rng(SEED ^ 24);
    let mut failures = Vec::new();
    println!(
        "{:<50} {:>5} {:>7} {:>5} {:>6}",
        "format and command", "files", "refused", "same", "other*"
    );
    for one in &uses {
        let label_of = |case: usize, m: &Mutation| {
            format!("{} through {:?}, case {case}: {m:?}", one.format, one.args)
        };
        let reset = || match one.writes {
            Writes::File(name) => {
                env.write(name, &previous);
            }
            Writes::Directory(name) => {
                let _ = std::fs::remove_dir_all(env.path(name));
            }
            Writes::Stdout => {}
        };
        env.write(one.file, &one.good);
        reset();
        let good_run = env.run(&one.args);
        assert!(
            good_run.status.success(),
            "{} through {:?}: the good file fails: {}",
            one.format,
            one.args,
            String::from_utf8_lossy(&good_run.stderr)
        );
        let reference = written(&env, one.writes, &good_run.stdout);
        let [mut refused, mut same, mut other] = [0usize; 3];
        for case in 0..cases {
            let mutation = Mutation::random(&mut rng, one.good.len());
            env.write(one.file, mutation.apply(&one.good));
            reset();
            let label = label_of(case, &mutation);
            let started = Instant::now();
            let output = assert_cmd::Command::new(env!("CARGO_BIN_EXE_principal"))
                .current_dir(dir)
                .args(&one.args)
                .timeout(HANG)
                .output()
                .unwrap();
            if started.elapsed() >= HANG {
                failures.push(format!("hang: {label}"));
            }
            let stderr = String::from_utf8_lossy(&output.stderr);
            let got = written(&env, one.writes, &output.stdout);
            match output.status.code() {
                Some(0) if got == reference => same += 1,
                Some(0) => {
                    other += 1;
                    if one.lengths && mutation.changes_length() {
                        failures.push(format!("accepted: {label}"));
                    }
                }
                Some(1)
                    if stderr.starts_with("error: ")
                        && stderr.lines().count() == 1
                        && !stderr.contains("internal error") =>
                {
                    refused += 1;
                    let untouched = match one.writes {
                        Writes::File(_) => got.as_deref() == Some(&previous[..]),
                        Writes::Directory(name) => !env.path(name).exists(),
                        Writes::Stdout => true,
                    };
                    if !untouched {
                        failures.push(format!("output written or clobbered: {label}"));
                    }
                }
                _ => failures.push(format!("crash: {label}: {:?} {stderr}", output.status)),
            }
            let left = leftovers(dir);
            if !left.is_empty() {
                failures.push(format!("left behind {left:?}: {label}"));
                for l in left {
                    let _ = std::fs::remove_file(dir.join(l));
                }
            }
        }
        let name = format!("{} | {}", one.format, one.args[0]);
        println!("{name:<50} {cases:>5} {refused:>7} {same:>5} {other:>6}");
    }
    println!("* read as other valid data, where the damage cannot be seen");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A file of fixtures/h5ad (written by fixtures/generate_h5ad.py with the anndata package).
/// The bytes of `fixtures/sparse/NAME`.
fn sparse_fixture(name: &str) -> Vec<u8> {
    std::fs::read(
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/sparse")
            .join(name),
    )
    .unwrap()
}

/// `bytes` decompressed (gzip).
fn gunzip(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::MultiGzDecoder::new(bytes), &mut out).unwrap();
    out
}

#[cfg(feature = "h5ad")]
fn h5ad_fixture(name: &str) -> String {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/h5ad")
        .join(name)
        .display()
        .to_string()
}

/// AnnData files damaged inside valid HDF5 (an indptr that decreases, an index out of range, a
/// shape attribute that disagrees with indptr), and a good one cut short everywhere.
#[cfg(feature = "h5ad")]
#[test]
fn damaged_h5ad_files_are_clear_errors() {
    let env = Env::new();
    let cases = [
        ("bad_indptr.h5ad", "indptr decreases at row 4"),
        (
            "bad_index.h5ad",
            "X/indices[3] = 22 (row 0) is out of range",
        ),
        (
            "bad_shape.h5ad",
            "X/indptr has 41 entries, but the shape attribute (42, 15)",
        ),
    ];
    for (name, says) in cases {
        let e = env.fails(1, &["fit", &h5ad_fixture(name), "-o", "m.pca"]);
        assert!(e.contains(name) && e.contains(says), "{name}: {e}");
        assert!(!env.path("m.pca").exists());
    }
    // Cut short at every few hundred bytes: an error naming the file, never a panic.
    let whole = std::fs::read(h5ad_fixture("x_csr_f64.h5ad")).unwrap();
    for cut in (0..whole.len()).step_by(997) {
        env.write("cut.h5ad", &whole[..cut]);
        let e = env.fails(1, &["fit", "cut.h5ad", "-o", "m.pca"]);
        assert!(e.contains("cut.h5ad"), "cut at {cut}: {e}");
    }
}
