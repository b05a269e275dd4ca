//! Damaged and hostile files through the real binary: a clear error (exit 1, one `error:` line
//! naming the file), never a crash, a hang or a giant allocation, and never an output left
//! behind or a good one overwritten.
//!
//! The regression tests rebuild the files; the seeded run damages good files of every
//! format with the mutations of principal-io's tests (whose builders it includes) and runs
//! `principal fit` (or `transform` with the damaged model file) on each. It runs 24 files per format
//! here; for the full run set `PRINCIPAL_DAMAGED_CASES`:
//!
//! `PRINCIPAL_DAMAGED_CASES=250 cargo test --release -p principal-cli --test damaged_files -- --nocapture`

mod common;
#[path = "../../principal-io/tests/common/mod.rs"]
mod io_files;

use std::time::{Duration, Instant};

use common::Env;
use io_files::{
    arrow_bytes, csv_bytes, gz, idx, leftovers, model_bytes, npy, npy_with, parquet_bytes,
    Mutation, Rng,
};

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
    for (name, content) in [
        ("d.npy.gz", npy(&data, 20, 4)),
        ("d-idx3-ubyte.gz", idx(12)),
        ("d.csv.gz", csv_bytes()),
        ("d.arrows.gz", arrow_bytes(true, false)),
    ] {
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
    let formats: Vec<Format> = vec![
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
        ("Parquet", "d.parquet", parquet_bytes(), None, false),
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
        ("model file", "m.safetensors", model_bytes(dir), None, true),
    ];
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
        let [mut refused, mut same, mut other, mut crashes, mut hangs, mut accepted, mut lost] =
            [0usize; 7];
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
