//! Damaged and hostile files, one minimal file per kind of damage, built here: each read gives
//! an error naming the file (and the field or place), never a panic, an abort or an allocation
//! sized by a header that lies.
//!
//! The kinds are those of issue 19: sizes in headers that the file cannot hold (NPY, IDX);
//! damaged Arrow IPC and Parquet files; compressed streams whose gzip trailer is damaged or
//! cut, and bytes after the data.

use crate::common;

use std::io::Write;
use std::path::{Path, PathBuf};

#[cfg(feature = "arrow")]
use common::arrow_bytes;
use common::{gz, npy_with};

use principal_io::{ReadOptions, read_labels, read_table};
use tempfile::TempDir;

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn npy_f8(shape: &str, data: &[u8]) -> Vec<u8> {
    npy_with(
        &format!("{{'descr': '<f8', 'fortran_order': False, 'shape': {shape}, }}"),
        data,
    )
}

fn idx(code: u8, dims: &[u32], data: &[u8]) -> Vec<u8> {
    let mut out = vec![0, 0, code, dims.len() as u8];
    for d in dims {
        out.extend_from_slice(&d.to_be_bytes());
    }
    out.extend_from_slice(data);
    out
}

/// The error message of reading `path` whole, which must fail.
fn error_of(path: &Path) -> String {
    match read_table(&[path.to_owned()], &ReadOptions::default()) {
        Ok(t) => panic!(
            "{} was read ({}×{}) but is damaged",
            path.display(),
            t.data.nrows(),
            t.data.ncols()
        ),
        Err(e) => e.to_string(),
    }
}

fn assert_names(e: &str, path: &Path, parts: &[&str]) {
    assert!(e.contains(&path.display().to_string()), "{e}");
    for part in parts {
        assert!(e.contains(part), "{e:?} lacks {part:?}");
    }
}

// Class 1: sizes from a header, checked against the file before anything is allocated.

#[test]
fn an_npy_shape_the_file_cannot_hold_is_named() {
    let dir = TempDir::new().unwrap();
    // The file: (30, 10^15) over 600 bytes of data; the column list alone would take
    // 8 PB.
    let bytes = npy_f8("(30, 1000000000000000)", &[0; 600]);
    let p = write(dir.path(), "wide.npy", &bytes);
    let e = error_of(&p);
    assert_names(
        &e,
        &p,
        &[
            "is truncated",
            "shape (30, 1000000000000000), descr \"<f8\"",
            "promises 240000000000000128 bytes but there are only 728",
        ],
    );
    let p = write(dir.path(), "wide.npy.gz", &gz(&bytes));
    let e = error_of(&p);
    assert_names(
        &e,
        &p,
        &["shape (30, 1000000000000000)", "compressed bytes can hold"],
    );
    // Rows that overflow u64 with the element size; a 1-D shape.
    let p = write(
        dir.path(),
        "huge.npy",
        &npy_f8("(18446744073709551615, 3)", &[0; 48]),
    );
    assert_names(&error_of(&p), &p, &["too large to address"]);
    let p = write(dir.path(), "long.npy", &npy_f8("(100000000000,)", &[0; 16]));
    assert_names(
        &error_of(&p),
        &p,
        &["shape (100000000000,)", "is truncated"],
    );
}

#[test]
fn idx_dimensions_the_file_cannot_hold_are_named() {
    let dir = TempDir::new().unwrap();
    // [2^32 - 1] × 3: a product past u64 once the element size is counted.
    let bytes = idx(0x08, &[u32::MAX; 3], &[0; 100]);
    for (name, bytes) in [
        ("max-idx3-ubyte", bytes.clone()),
        ("max-idx3-ubyte.gz", gz(&bytes)),
    ] {
        let p = write(dir.path(), name, &bytes);
        assert_names(
            &error_of(&p),
            &p,
            &[
                "dimensions [4294967295, 4294967295, 4294967295]",
                "too large",
            ],
        );
    }
    // [20, 65535, 65535]: 34 GB of column list and 86 GB of data promised by 100 bytes.
    let bytes = idx(0x08, &[20, 65535, 65535], &[0; 100]);
    let p = write(dir.path(), "big-idx3-ubyte", &bytes);
    assert_names(
        &error_of(&p),
        &p,
        &[
            "is truncated",
            "dimensions [20, 65535, 65535] of 1-byte elements",
        ],
    );
    let p = write(dir.path(), "big-idx3-ubyte.gz", &gz(&bytes));
    assert_names(
        &error_of(&p),
        &p,
        &["dimensions [20, 65535, 65535]", "compressed bytes can hold"],
    );
    // A label count that lies: the labels are read as they arrive.
    let p = write(
        dir.path(),
        "lie-idx1-ubyte",
        &idx(0x08, &[u32::MAX], &[1, 2, 3]),
    );
    let e = read_labels(&p).unwrap_err().to_string();
    assert_names(&e, &p, &["is truncated", "dimensions [4294967295]"]);
}

#[test]
fn zero_rows_of_a_huge_width_are_refused_before_the_width_is_used() {
    // With no rows the file has no data to bound the width by: found by the gzip fuzz target
    // (a 75-byte IDX.gz of 0 × 403,000,000 had the column list take 3.2 GB). The width here is
    // beyond any machine's memory, so a check on it would speak of memory: the error must be
    // the empty array's, found before anything is sized by the width.
    let dir = TempDir::new().unwrap();
    let huge_idx = idx(0x08, &[0, 1 << 20, 1 << 20], &[]);
    let huge_npy = npy_f8("(0, 1099511627776)", &[]);
    for (name, bytes) in [
        ("zero-idx3-ubyte", huge_idx.clone()),
        ("zero-idx3-ubyte.gz", gz(&huge_idx)),
        ("zero.npy", huge_npy.clone()),
        ("zero.npy.gz", gz(&huge_npy)),
    ] {
        let p = write(dir.path(), name, &bytes);
        let e = error_of(&p);
        assert_names(&e, &p, &["0 rows"]);
        assert!(!e.contains("memory") && !e.contains("machine"), "{e}");
    }
}

#[test]
fn a_header_beyond_memory_is_refused_before_allocating_even_from_a_pipe() {
    // A pipe has no length to check the header against: only the machine's memory bounds it.
    let dir = TempDir::new().unwrap();
    let fifo = dir.path().join("pipe-idx3-ubyte");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    // mkfifo is part of coreutils, on every machine this project runs on.
    assert!(
        made.as_ref().is_ok_and(|s| s.success()),
        "mkfifo failed: {made:?}"
    );
    // One row of 2^40 bytes: no machine here holds it.
    let bytes = idx(0x08, &[1, 1 << 20, 1 << 20], &[0; 64]);
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            // The reader may stop early and close the pipe: a failed write is fine.
            let _ = std::fs::OpenOptions::new()
                .write(true)
                .open(&fifo)
                .and_then(|mut f| f.write_all(&bytes));
        })
    };
    let e = error_of(&fifo);
    writer.join().unwrap();
    assert_names(
        &e,
        &fifo,
        &[
            "a row of 1099511627776 values",
            "more than this machine has",
        ],
    );
}

#[test]
fn bytes_after_the_array_are_an_error() {
    let dir = TempDir::new().unwrap();
    let data: Vec<u8> = [1.0f64, 2.0].iter().flat_map(|v| v.to_le_bytes()).collect();
    let mut bytes = npy_f8("(1, 2)", &data);
    bytes.extend_from_slice(b"junk");
    let p = write(dir.path(), "tail.npy", &bytes);
    assert_names(&error_of(&p), &p, &["4 byte(s) after the end of the array"]);
    let p = write(dir.path(), "tail.npy.gz", &gz(&bytes));
    assert_names(
        &error_of(&p),
        &p,
        &["unexpected bytes after the end of the data"],
    );
    let mut bytes = idx(0x08, &[2, 2], &[1, 2, 3, 4]);
    bytes.push(9);
    let p = write(dir.path(), "tail-idx2-ubyte", &bytes);
    assert_names(&error_of(&p), &p, &["1 byte(s) after the end of the array"]);
    let p = write(dir.path(), "tail-idx2-ubyte.gz", &gz(&bytes));
    assert_names(
        &error_of(&p),
        &p,
        &["unexpected bytes after the end of the data"],
    );
    let p = write(dir.path(), "tail-idx1-ubyte", &idx(0x08, &[2], &[1, 2, 3]));
    let e = read_labels(&p).unwrap_err().to_string();
    assert_names(&e, &p, &["unexpected bytes after the end of the data"]);
}

// Class 3: every compressed stream read to its end, its trailer verified.

/// The damaged variants of a gzip file: the trailer's CRC-32 flipped, its length wrong, the
/// trailer cut, a second member cut, and garbage after the last member.
fn damaged_gzips(content: &[u8]) -> Vec<(&'static str, Vec<u8>)> {
    let good = gz(content);
    let n = good.len();
    let mut crc = good.clone();
    crc[n - 8] ^= 0x01;
    let mut isize = good.clone();
    isize[n - 4] ^= 0x01;
    let cut = good[..n - 3].to_vec();
    let half = content.len() / 2;
    let mut second_cut = gz(&content[..half]);
    let second = gz(&content[half..]);
    second_cut.extend_from_slice(&second[..second.len() - 5]);
    let mut garbage = good.clone();
    garbage.extend_from_slice(b"\0\0\0garbage");
    vec![
        ("a flipped CRC-32", crc),
        ("a wrong length", isize),
        ("a cut trailer", cut),
        ("a cut second member", second_cut),
        ("garbage after the stream", garbage),
    ]
}

#[test]
fn damaged_gzip_trailers_are_refused_in_every_format() {
    let dir = TempDir::new().unwrap();
    let data: Vec<u8> = (0..40)
        .map(|i| f64::from(i).to_le_bytes())
        .collect::<Vec<_>>()
        .concat();
    let mut csv = String::from("a,b,c,d\n");
    for i in 0..10 {
        csv.push_str(&format!("{i},{},{},{}\n", i * 2, i * 3, i * 4));
    }
    #[allow(unused_mut)] // without the `arrow` feature
    let mut contents: Vec<(&str, Vec<u8>)> = vec![
        ("d.npy.gz", npy_f8("(10, 4)", &data)),
        ("d-idx2-ubyte.gz", idx(0x08, &[10, 4], &[7; 40])),
        ("d.csv.gz", csv.into_bytes()),
    ];
    #[cfg(feature = "arrow")]
    contents.push(("d.arrows.gz", arrow_bytes(true, false)));
    for (name, content) in &contents {
        // The intact file reads.
        let p = write(dir.path(), name, &gz(content));
        let t = read_table(std::slice::from_ref(&p), &ReadOptions::default()).unwrap();
        assert!(t.data.nrows() >= 10, "{name}");
        for (damage, bytes) in damaged_gzips(content) {
            let p = write(dir.path(), name, &bytes);
            let e = read_table(std::slice::from_ref(&p), &ReadOptions::default())
                .map(|t| t.data.nrows())
                .expect_err(&format!("{name} with {damage} was accepted"));
            assert!(
                e.to_string().contains(&p.display().to_string()),
                "{name}, {damage}: {e}"
            );
        }
    }
    // IDX labels too.
    let labels = idx(0x08, &[10], &[3; 10]);
    for (damage, bytes) in damaged_gzips(&labels) {
        let p = write(dir.path(), "l-idx1-ubyte.gz", &bytes);
        assert!(
            read_labels(&p).is_err(),
            "labels with {damage} were accepted"
        );
    }
}

// Class 2: damaged Arrow IPC and Parquet metadata.

/// Every byte of the metadata of a small file set to values that make sizes and offsets lie
/// (0xff: huge or negative; 0x7f: huge; 0x00: zero): each read is an error naming the file or
/// a read of valid data, never a panic or an abort; the panics of the decoders that are still
/// contained are counted.
#[cfg(any(feature = "parquet", feature = "arrow"))]
fn damage_every_byte(dir: &Path, name: &str, good: &[u8], range: std::ops::Range<usize>) -> usize {
    let mut contained = 0;
    for at in range {
        for value in [0xff, 0x7f, 0x00, good[at] ^ 0x08] {
            if good[at] == value {
                continue;
            }
            let mut bytes = good.to_vec();
            bytes[at] = value;
            let p = write(dir, name, &bytes);
            if let Err(e) = read_table(std::slice::from_ref(&p), &ReadOptions::default()) {
                let e = e.to_string();
                assert!(
                    e.contains(&p.display().to_string()),
                    "byte {at} = {value}: {e}"
                );
                contained += usize::from(e.contains("its decoder failed"));
            }
        }
    }
    contained
}

#[cfg(feature = "arrow")]
#[test]
fn damaged_arrow_metadata_at_every_byte_is_an_error_or_a_valid_read() {
    let dir = TempDir::new().unwrap();
    principal_io_quiet();
    // A stream: the schema message and the first record batch's metadata (lengths, offsets,
    // the LZ4 buffers' declared sizes).
    let stream = arrow_bytes(true, true);
    damage_every_byte(dir.path(), "s.arrows", &stream, 0..stream.len().min(700));
    // A file: its footer (blocks, schema) and trailer.
    let file = arrow_bytes(false, false);
    let n = file.len();
    damage_every_byte(dir.path(), "f.arrow", &file, n.saturating_sub(400)..n);
}

#[cfg(feature = "parquet")]
#[test]
fn damaged_parquet_footer_at_every_byte_is_an_error_or_a_valid_read() {
    let dir = TempDir::new().unwrap();
    principal_io_quiet();
    let file = common::parquet_bytes();
    let n = file.len();
    let footer = u32::from_le_bytes(file[n - 8..n - 4].try_into().unwrap()) as usize;
    // The footer holds the column chunks' offsets and sizes, the row counts and the Arrow
    // schema stored by the writer (base64 in its key-value metadata).
    damage_every_byte(dir.path(), "f.parquet", &file, n - 8 - footer..n);
    // The first pages' headers (sizes the decoder allocates).
    damage_every_byte(dir.path(), "p.parquet", &file, 4..200);
}

/// The panics the readers contain are errors; keep the test output free of their messages.
#[cfg(any(feature = "parquet", feature = "arrow"))]
fn principal_io_quiet() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !principal_io::panic_is_contained() {
                hook(info);
            }
        }));
    });
}
