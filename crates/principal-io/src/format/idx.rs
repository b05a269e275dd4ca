//! IDX, the format of MNIST and Fashion-MNIST: `0x00 0x00 TYPE NDIM`, NDIM big-endian u32
//! dimensions, then big-endian elements. An N×H×W image file becomes N rows of H·W features.

use std::io::Read;
use std::path::Path;

use crate::error::{IoError, Result};
use crate::format::binary::{ArrayHeader, BinaryRows, Elem, ElemType};
use crate::read::bounded::{expect_end, read_growing};
use crate::read::open::{Format, Opened, open, read_full};
use crate::read::options::ReadOptions;

/// The element type of an IDX type code.
fn elem_of(code: u8) -> Option<Elem> {
    Some(match code {
        0x08 => Elem::U8,
        0x09 => Elem::I8,
        0x0B => Elem::I16,
        0x0C => Elem::I32,
        0x0D => Elem::F32,
        0x0E => Elem::F64,
        _ => return None,
    })
}

/// Reads the magic and the dimensions.
fn read_header(path: &Path, reader: &mut dyn Read, compressed: bool) -> Result<(Elem, Vec<usize>)> {
    let read_err = |source| IoError::Read {
        path: path.to_owned(),
        source,
    };
    let mut magic = [0u8; 4];
    let got = read_full(reader, &mut magic).map_err(read_err)?;
    let elem = match elem_of(magic[2]) {
        Some(elem) if got == 4 && magic[0] == 0 && magic[1] == 0 && magic[3] >= 1 => elem,
        _ => {
            return Err(IoError::Format {
                path: path.to_owned(),
                detail: "not an IDX file: it does not start with the IDX magic 0x00 0x00 TYPE NDIM"
                    .into(),
            });
        }
    };
    let ndim = usize::from(magic[3]);
    let mut dims = vec![0u8; 4 * ndim];
    let got = read_full(reader, &mut dims).map_err(read_err)?;
    if got < dims.len() {
        return Err(IoError::Truncated {
            path: path.to_owned(),
            header: format!("{ndim} dimensions"),
            expected: 4 + dims.len() as u64,
            actual: 4 + got as u64,
            compressed,
        });
    }
    let dims = dims
        .chunks_exact(4)
        .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]) as usize)
        .collect();
    Ok((elem, dims))
}

/// Reads the header of an opened IDX file and prepares to stream its rows.
pub(crate) fn open_rows(
    path: &Path,
    mut opened: Opened,
    options: &ReadOptions,
) -> Result<BinaryRows> {
    let (elem, dims) = read_header(path, &mut opened.reader, opened.compressed)?;
    let describe = format!("dimensions {dims:?} of {}-byte elements", elem.size());
    // Their product may overflow: then the array is too large, whatever the file holds.
    let ncols = dims[1..]
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| IoError::Format {
            path: path.to_owned(),
            detail: format!("the header ({describe}) describes an array too large to address"),
        })?;
    let header = ArrayHeader {
        elem: ElemType {
            elem,
            big_endian: true,
        },
        nrows: dims[0],
        ncols,
        fortran_order: false,
        data_start: 4 + 4 * dims.len() as u64,
        describe,
    };
    BinaryRows::new(path, opened, header, options)
}

/// Reads an IDX label file (one dimension, unsigned bytes, as MNIST's
/// `train-labels-idx1-ubyte`), raw or gzip-compressed.
pub fn read_labels(path: &Path) -> Result<Vec<u8>> {
    let opened = open(path)?;
    if opened.format != Format::Idx {
        return Err(IoError::Format {
            path: path.to_owned(),
            detail:
                "not an IDX label file: it does not start with the IDX magic 0x00 0x00 0x08 0x01"
                    .into(),
        });
    }
    let compressed = opened.compressed;
    let mut reader = opened.reader;
    let (elem, dims) = read_header(path, &mut reader, compressed)?;
    if elem != Elem::U8 || dims.len() != 1 {
        return Err(IoError::Format {
            path: path.to_owned(),
            detail: format!(
                "not an IDX label file: labels are 1-D unsigned bytes (idx1-ubyte) but this holds {} dimension(s) {dims:?} of {elem:?}",
                dims.len()
            ),
        });
    }
    let n = dims[0];
    // Grown as the labels arrive: a count that lies allocates what the file holds.
    let mut labels = Vec::new();
    let got = read_growing(&mut reader, &mut labels, n).map_err(|source| IoError::Read {
        path: path.to_owned(),
        source,
    })?;
    if got < n {
        return Err(IoError::Truncated {
            path: path.to_owned(),
            header: format!("dimensions {dims:?}"),
            expected: 8 + n as u64,
            actual: 8 + got as u64,
            compressed,
        });
    }
    labels.truncate(n);
    expect_end(path, &mut reader, 8 + n as u64)?;
    Ok(labels)
}

#[cfg(test)]
mod tests {
    use tempfile::TempDir;

    use super::*;
    use crate::read::open::IDX_TYPE_CODES;
    use crate::test_util::*;
    use crate::{ChunkReader, Matrix};

    /// Three 2×2 images with pixel (k, r, c) = 10k + 2r + c.
    fn images() -> Vec<u8> {
        idx(
            0x08,
            &[3, 2, 2],
            &(0..3u8)
                .flat_map(|k| (0..4u8).map(move |p| 10 * k + p))
                .collect::<Vec<_>>(),
        )
    }

    fn expected() -> Vec<Vec<f64>> {
        (0..3)
            .map(|k| (0..4).map(|p| f64::from(10 * k + p)).collect())
            .collect()
    }

    #[test]
    fn the_type_codes_detection_accepts_are_the_ones_read() {
        for code in 0..=u8::MAX {
            assert_eq!(
                elem_of(code).is_some(),
                IDX_TYPE_CODES.contains(&code),
                "type code {code:#04x}"
            );
        }
    }

    #[test]
    fn images_raw_and_gz_become_rows_of_pixels() {
        let dir = TempDir::new().unwrap();
        for (name, bytes) in [
            ("train-images-idx3-ubyte", images()),
            ("train-images-idx3-ubyte.gz", gz(&images())),
        ] {
            let t = read_one(&write_file(dir.path(), name, &bytes)).unwrap();
            assert!(matches!(t.data, Matrix::F32(_)), "{name}");
            assert_eq!(rows(&t.data), expected(), "{name}");
            assert_eq!(t.column_names, None);
        }
        // Recognised by content, whatever the name.
        let t = read_one(&write_file(dir.path(), "pixels.bin", &gz(&images()))).unwrap();
        assert_eq!(rows(&t.data), expected());
    }

    #[test]
    fn other_element_types() {
        let dir = TempDir::new().unwrap();
        let f64s: Vec<u8> = [1.5f64, -2.0, 3.25, 4.0]
            .iter()
            .flat_map(|v| v.to_be_bytes())
            .collect();
        let t = read_one(&write_file(dir.path(), "a.idx", &idx(0x0E, &[2, 2], &f64s))).unwrap();
        assert!(matches!(t.data, Matrix::F64(_)));
        assert_eq!(rows(&t.data), vec![vec![1.5, -2.0], vec![3.25, 4.0]]);
        let i16s: Vec<u8> = [-300i16, 7].iter().flat_map(|v| v.to_be_bytes()).collect();
        let t = read_one(&write_file(dir.path(), "b.idx", &idx(0x0B, &[2], &i16s))).unwrap();
        assert!(matches!(t.data, Matrix::F32(_)));
        assert_eq!(rows(&t.data), vec![vec![-300.0], vec![7.0]]);
        let i32s: Vec<u8> = [-70000i32, 1 << 30]
            .iter()
            .flat_map(|v| v.to_be_bytes())
            .collect();
        let t = read_one(&write_file(dir.path(), "c.idx", &idx(0x0C, &[1, 2], &i32s))).unwrap();
        assert_eq!(rows(&t.data), vec![vec![-70000.0, f64::from(1 << 30)]]);
        let f32s: Vec<u8> = [f32::NAN].iter().flat_map(|v| v.to_be_bytes()).collect();
        let e = err_of(read_one(&write_file(
            dir.path(),
            "d.idx",
            &idx(0x0D, &[1, 1], &f32s),
        )));
        assert!(e.contains("non-finite value NaN at row 0, column 0"), "{e}");
    }

    /// A gzip stream cut mid-deflate fails as a read error, not a short file: the message
    /// names the first row not yet read whole, and every row before it was really in the
    /// stream (counted by decoding the cut stream apart).
    #[test]
    fn a_gzip_stream_cut_mid_deflate_names_the_row_it_reached() {
        use std::io::Read;
        let (n, side) = (3000u32, 32u32);
        let row_bytes = (side * side) as usize;
        // Pixels from a linear congruential sequence: gzip barely shrinks them, so the cut
        // falls well inside the rows.
        let mut state = 12345u32;
        let pixels: Vec<u8> = (0..n as usize * row_bytes)
            .map(|_| {
                state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                (state >> 24) as u8
            })
            .collect();
        let whole = gz(&idx(0x08, &[n, side, side], &pixels));
        let cut = &whole[..whole.len() * 3 / 5];
        let mut decoded = Vec::new();
        assert!(
            flate2::read::GzDecoder::new(cut)
                .read_to_end(&mut decoded)
                .is_err()
        );
        let header = 4 + 4 * 3;
        let in_stream = (decoded.len() - header) / row_bytes;
        let dir = TempDir::new().unwrap();
        let e = err_of(read_one(&write_file(dir.path(), "cut-idx3-ubyte.gz", cut)));
        assert!(e.contains("cannot read"), "{e}");
        let row: usize = e
            .split("at row ")
            .nth(1)
            .and_then(|rest| rest.split(' ').next())
            .and_then(|r| r.parse().ok())
            .unwrap_or_else(|| panic!("no row in {e:?}"));
        assert!(
            row > 0 && row <= in_stream,
            "row {row}, {in_stream} whole rows in the cut stream: {e}"
        );
    }

    #[test]
    fn truncated_files_say_expected_and_actual_bytes() {
        let dir = TempDir::new().unwrap();
        let full = images();
        let cut = &full[..full.len() - 3];
        let e = err_of(read_one(&write_file(dir.path(), "cut-idx3-ubyte", cut)));
        assert!(
            e.contains(
                "cut-idx3-ubyte is truncated: its header (dimensions [3, 2, 2] of 1-byte \
                 elements) promises 28 bytes but there are only 25"
            ),
            "{e}"
        );
        let e = err_of(read_one(&write_file(
            dir.path(),
            "cut-idx3-ubyte.gz",
            &gz(cut),
        )));
        assert!(
            e.contains("promises 28 bytes (decompressed) but there are only 25"),
            "{e}"
        );
        // A chunk reader reports the same error when it reaches the cut.
        let mut reader =
            ChunkReader::open(&[dir.path().join("cut-idx3-ubyte.gz")], &Default::default())
                .unwrap();
        assert_eq!(reader.next_chunk(2).unwrap().unwrap().nrows(), 2);
        assert!(reader.next_chunk(2).is_err());
        let e = err_of(read_one(&write_file(
            dir.path(),
            "hdr-idx3-ubyte",
            &full[..9],
        )));
        assert!(
            e.contains("its header (3 dimensions) promises 16 bytes but there are only 9"),
            "{e}"
        );
        let e = err_of(read_one(&write_file(
            dir.path(),
            "empty-idx3-ubyte",
            &idx(0x08, &[0, 2, 2], &[]),
        )));
        assert!(e.contains("no data rows"), "{e}");
    }

    #[test]
    fn labels() {
        let dir = TempDir::new().unwrap();
        let bytes = idx(0x08, &[4], &[5, 0, 4, 1]);
        assert_eq!(
            read_labels(&write_file(dir.path(), "l-idx1-ubyte", &bytes)).unwrap(),
            vec![5, 0, 4, 1]
        );
        assert_eq!(
            read_labels(&write_file(dir.path(), "l-idx1-ubyte.gz", &gz(&bytes))).unwrap(),
            vec![5, 0, 4, 1]
        );
        let e = err_of(read_labels(&write_file(
            dir.path(),
            "short-idx1-ubyte",
            &bytes[..10],
        )));
        assert!(e.contains("promises 12 bytes but there are only 10"), "{e}");
        let e = err_of(read_labels(&write_file(
            dir.path(),
            "i-idx3-ubyte",
            &images(),
        )));
        assert!(
            e.contains("not an IDX label file") && e.contains("3 dimension(s)"),
            "{e}"
        );
        let e = err_of(read_labels(&write_file(dir.path(), "x.csv", b"1,2\n")));
        assert!(e.contains("not an IDX label file"), "{e}");
        let e = err_of(read_labels(&dir.path().join("missing")));
        assert!(e.starts_with("cannot open"), "{e}");
    }

    /// Real files from the Debian package `dataset-fashion-mnist`. Ignored by default, so that
    /// `cargo test` counts it as ignored, with the reason, where the package may be absent;
    /// `.ci/run` installs the package and runs it (`cargo test --release -p principal-io --lib
    /// -- --ignored fashion_mnist`), and there a missing file is a failure.
    #[test]
    #[ignore = "needs the Debian package dataset-fashion-mnist (apt-get install \
                dataset-fashion-mnist); run with: cargo test --release -p principal-io --lib \
                -- --ignored fashion_mnist"]
    fn fashion_mnist_test_set() {
        let dir = Path::new("/usr/share/datasets/fashion-mnist");
        let images = dir.join("t10k-images-idx3-ubyte.gz");
        assert!(
            images.exists(),
            "{} is missing: apt-get install dataset-fashion-mnist",
            images.display()
        );
        let t = read_one(&images).unwrap();
        assert!(matches!(t.data, Matrix::F32(_)));
        assert_eq!((t.data.nrows(), t.data.ncols()), (10_000, 784));
        let labels = read_labels(&dir.join("t10k-labels-idx1-ubyte.gz")).unwrap();
        assert_eq!(labels.len(), 10_000);
        assert!(labels.iter().all(|&l| l < 10));
    }
}
