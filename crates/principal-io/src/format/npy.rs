//! NPY (numpy's array file): the header is parsed here (a small, documented Python-literal
//! dict), the data streamed by [`BinaryRows`].
//!
//! Format: `\x93NUMPY`, major and minor version bytes, the header length (u16 in version 1,
//! u32 in versions 2 and 3, little-endian), then a dict such as
//! `{'descr': '<f8', 'fortran_order': False, 'shape': (150, 4), }` padded with spaces and a
//! newline, then the raw elements.

use std::io::{self, Read, Write};
use std::path::Path;

use faer::MatRef;

use crate::error::{IoError, Result};
use crate::format::binary::{ArrayHeader, BinaryRows, Elem, ElemType};
use crate::read::open::{NPY_MAGIC, Opened, read_full};
use crate::read::options::ReadOptions;

/// Headers longer than this are refused: real ones are a few hundred bytes.
const MAX_HEADER: usize = 1 << 20;
const SUPPORTED: &str = "f4, f8, i1, i2, i4, i8, u1, u2, u4, u8, b1";

/// Reads the header of an opened NPY file and prepares to stream its rows.
pub(crate) fn open_rows(
    path: &Path,
    mut opened: Opened,
    options: &ReadOptions,
) -> Result<BinaryRows> {
    let header = read_header(path, &mut opened.reader, opened.compressed)?;
    BinaryRows::new(path, opened, header, options)
}

fn read_header(path: &Path, reader: &mut dyn Read, compressed: bool) -> Result<ArrayHeader> {
    let bad = |detail: String| IoError::Format {
        path: path.to_owned(),
        detail: format!("bad NPY header: {detail}"),
    };
    let read_err = |source| IoError::Read {
        path: path.to_owned(),
        source,
    };
    let mut fixed = [0u8; 8];
    let got = read_full(reader, &mut fixed).map_err(read_err)?;
    if got < fixed.len() {
        return Err(IoError::Truncated {
            path: path.to_owned(),
            header: String::new(),
            expected: 8,
            actual: got as u64,
            compressed,
        });
    }
    let major = fixed[6];
    let len_bytes = match major {
        1 => 2,
        2 | 3 => 4,
        v => return Err(bad(format!("unknown NPY version {v}.{}", fixed[7]))),
    };
    let mut len_buf = [0u8; 4];
    let got = read_full(reader, &mut len_buf[..len_bytes]).map_err(read_err)?;
    if got < len_bytes {
        return Err(IoError::Truncated {
            path: path.to_owned(),
            header: String::new(),
            expected: (8 + len_bytes) as u64,
            actual: (8 + got) as u64,
            compressed,
        });
    }
    let header_len = u32::from_le_bytes(len_buf) as usize;
    if header_len > MAX_HEADER {
        return Err(bad(format!("the header claims {header_len} bytes")));
    }
    let mut text = vec![0u8; header_len];
    let got = read_full(reader, &mut text).map_err(read_err)?;
    let data_start = (8 + len_bytes + header_len) as u64;
    if got < header_len {
        return Err(IoError::Truncated {
            path: path.to_owned(),
            header: format!("header length {header_len}"),
            expected: data_start,
            actual: (8 + len_bytes + got) as u64,
            compressed,
        });
    }
    let text = String::from_utf8_lossy(&text);
    let dict =
        Literal::parse_dict(&text).map_err(|e| bad(format!("{e} in {:?}", text.trim_end())))?;
    let field = |key: &str| {
        dict.iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
            .ok_or_else(|| bad(format!("no {key:?} entry")))
    };
    let descr = match field("descr")? {
        Literal::Str(s) => s.clone(),
        Literal::List => {
            return Err(bad(
                "structured dtypes (record arrays) are not supported".into()
            ));
        }
        other => return Err(bad(format!("descr is {other:?}"))),
    };
    let elem = parse_descr(&descr).ok_or_else(|| IoError::Format {
        path: path.to_owned(),
        detail: format!("unsupported NPY dtype {descr:?}; supported: {SUPPORTED}"),
    })?;
    let fortran_order = match field("fortran_order")? {
        Literal::Bool(b) => *b,
        other => return Err(bad(format!("fortran_order is {other:?}"))),
    };
    let shape = match field("shape")? {
        Literal::Tuple(t) => t.clone(),
        other => return Err(bad(format!("shape is {other:?}"))),
    };
    let (nrows, ncols) = match shape[..] {
        [n] => (n, 1),
        [n, d] => (n, d),
        _ => {
            return Err(IoError::Format {
                path: path.to_owned(),
                detail: format!(
                    "the array has {} dimension(s), shape {shape:?}; only 2-D arrays (rows × features) and 1-D arrays (one column) can be read",
                    shape.len()
                ),
            });
        }
    };
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    let shape = match &dims[..] {
        [n] => format!("({n},)"),
        _ => format!("({})", dims.join(", ")),
    };
    Ok(ArrayHeader {
        elem,
        nrows,
        ncols,
        fortran_order,
        data_start,
        describe: format!("shape {shape}, descr {descr:?}"),
    })
}

/// `'<f8'` and friends.
fn parse_descr(descr: &str) -> Option<ElemType> {
    let (order, rest) = match descr.as_bytes().first()? {
        b'<' | b'>' | b'|' | b'=' => (descr.as_bytes()[0], &descr[1..]),
        _ => (b'=', descr),
    };
    let big_endian = match order {
        b'>' => true,
        b'=' => cfg!(target_endian = "big"),
        _ => false,
    };
    let elem = match rest {
        "f4" => Elem::F32,
        "f8" => Elem::F64,
        "i1" => Elem::I8,
        "i2" => Elem::I16,
        "i4" => Elem::I32,
        "i8" => Elem::I64,
        "u1" | "b1" => Elem::U8,
        "u2" => Elem::U16,
        "u4" => Elem::U32,
        "u8" => Elem::U64,
        _ => return None,
    };
    Some(ElemType { elem, big_endian })
}

/// The values an NPY header dict holds.
#[derive(Clone, Debug, PartialEq)]
enum Literal {
    Str(String),
    Bool(bool),
    Tuple(Vec<usize>),
    /// A list (structured dtype): recognised only to be refused clearly.
    List,
}

struct Parser<'a> {
    s: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn skip_ws(&mut self) {
        while self.at < self.s.len() && self.s[self.at].is_ascii_whitespace() {
            self.at += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.s.get(self.at).copied()
    }

    fn eat(&mut self, c: u8) -> std::result::Result<(), String> {
        if self.peek() == Some(c) {
            self.at += 1;
            Ok(())
        } else {
            Err(format!("expected {:?} at byte {}", c as char, self.at))
        }
    }

    fn string(&mut self) -> std::result::Result<String, String> {
        let q = self
            .peek()
            .filter(|&c| c == b'\'' || c == b'"')
            .ok_or_else(|| format!("expected a string at byte {}", self.at))?;
        let start = self.at + 1;
        let end = self.s[start..]
            .iter()
            .position(|&c| c == q)
            .ok_or("an unterminated string")?
            + start;
        self.at = end + 1;
        Ok(String::from_utf8_lossy(&self.s[start..end]).into_owned())
    }

    fn value(&mut self) -> std::result::Result<Literal, String> {
        match self.peek() {
            Some(b'\'' | b'"') => self.string().map(Literal::Str),
            Some(b'(') => {
                self.at += 1;
                let mut dims = Vec::new();
                loop {
                    match self.peek() {
                        Some(b')') => {
                            self.at += 1;
                            return Ok(Literal::Tuple(dims));
                        }
                        Some(c) if c.is_ascii_digit() => {
                            let start = self.at;
                            while self.at < self.s.len() && self.s[self.at].is_ascii_digit() {
                                self.at += 1;
                            }
                            let digits = std::str::from_utf8(&self.s[start..self.at]).unwrap_or("");
                            dims.push(
                                digits
                                    .parse()
                                    .map_err(|_| format!("dimension {digits} is too large"))?,
                            );
                            // Python 2 wrote long integers as `3L`.
                            if self.s.get(self.at) == Some(&b'L') {
                                self.at += 1;
                            }
                            if self.peek() == Some(b',') {
                                self.at += 1;
                            }
                        }
                        _ => return Err(format!("expected a dimension at byte {}", self.at)),
                    }
                }
            }
            Some(b'[') => Ok(Literal::List),
            _ => {
                let rest = &self.s[self.at..];
                if rest.starts_with(b"True") {
                    self.at += 4;
                    Ok(Literal::Bool(true))
                } else if rest.starts_with(b"False") {
                    self.at += 5;
                    Ok(Literal::Bool(false))
                } else {
                    Err(format!("unexpected value at byte {}", self.at))
                }
            }
        }
    }
}

impl Literal {
    fn parse_dict(text: &str) -> std::result::Result<Vec<(String, Literal)>, String> {
        let mut p = Parser {
            s: text.as_bytes(),
            at: 0,
        };
        p.eat(b'{')?;
        let mut entries = Vec::new();
        loop {
            if p.peek() == Some(b'}') {
                return Ok(entries);
            }
            let key = p.string()?;
            p.eat(b':')?;
            let value = p.value()?;
            if value == Literal::List {
                // A structured descr: nothing after it needs to be understood.
                entries.push((key, value));
                return Ok(entries);
            }
            entries.push((key, value));
            if p.peek() == Some(b',') {
                p.at += 1;
            } else {
                p.eat(b'}')?;
                return Ok(entries);
            }
        }
    }
}

/// The header of an NPY version 1.0 (2.0 if the header is too long) file of `rows` × `cols`
/// little-endian f64 in C order, padded so the data starts on a 64-byte boundary, as numpy
/// does. Its length does not depend on `rows` (it has room for any `u64`), so a writer that
/// learns the row count only at the end can write it in place, as numpy reserves room for
/// a growing first axis.
pub(crate) fn f64_header(rows: u64, cols: usize) -> Vec<u8> {
    let dict = |rows: u64| {
        format!("{{'descr': '<f8', 'fortran_order': False, 'shape': ({rows}, {cols}), }}")
    };
    let longest = dict(u64::MAX).len();
    let (version, len_bytes) = if longest + 64 <= u16::MAX as usize {
        (1u8, 2)
    } else {
        (2u8, 4)
    };
    let unpadded = NPY_MAGIC.len() + 2 + len_bytes + longest + 1;
    let header_len = longest + 1 + unpadded.next_multiple_of(64) - unpadded;
    let dict = dict(rows);
    let mut out = Vec::with_capacity(NPY_MAGIC.len() + 2 + len_bytes + header_len);
    out.extend_from_slice(NPY_MAGIC);
    out.extend_from_slice(&[version, 0]);
    if version == 1 {
        out.extend_from_slice(&(header_len as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&(header_len as u32).to_le_bytes());
    }
    out.extend_from_slice(dict.as_bytes());
    out.resize(out.len() + header_len - dict.len() - 1, b' ');
    out.push(b'\n');
    out
}

/// Appends the rows of `data` to an NPY file's data: little-endian f64, C order.
pub(crate) fn write_f64_rows(w: &mut dyn Write, data: MatRef<'_, f64>) -> io::Result<()> {
    let mut row = Vec::with_capacity(data.ncols() * 8);
    for i in 0..data.nrows() {
        row.clear();
        for j in 0..data.ncols() {
            row.extend_from_slice(&data[(i, j)].to_le_bytes());
        }
        w.write_all(&row)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use tempfile::TempDir;

    use super::*;
    use crate::test_util::*;
    use crate::{ColumnSelector, Mat, Matrix, RowMajorMat};

    fn bytes_le<T: Copy, const N: usize>(values: &[T], f: fn(T) -> [u8; N]) -> Vec<u8> {
        values.iter().flat_map(|&v| f(v)).collect()
    }

    /// Rows 2×3: [[1, 2, 3], [4, 5, 6]]; in Fortran order the columns come first.
    const C: [f64; 6] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    const F: [f64; 6] = [1.0, 4.0, 2.0, 5.0, 3.0, 6.0];
    fn expected() -> Vec<Vec<f64>> {
        vec![vec![1.0, 2.0, 3.0], vec![4.0, 5.0, 6.0]]
    }

    fn read_npy(bytes: &[u8]) -> crate::Result<crate::Table> {
        let dir = TempDir::new().unwrap();
        read_one(&write_file(dir.path(), "a.npy", bytes))
    }

    #[test]
    fn float_types_both_orders_both_endians() {
        let cases: Vec<(&str, bool, Vec<u8>, bool)> = vec![
            ("<f8", false, bytes_le(&C, f64::to_le_bytes), false),
            (">f8", false, bytes_le(&C, f64::to_be_bytes), false),
            ("<f8", true, bytes_le(&F, f64::to_le_bytes), false),
            (
                "<f4",
                false,
                bytes_le(&C.map(|v| v as f32), f32::to_le_bytes),
                true,
            ),
            (
                ">f4",
                true,
                bytes_le(&F.map(|v| v as f32), f32::to_be_bytes),
                true,
            ),
        ];
        for (descr, fortran, data, f32) in cases {
            let t = read_npy(&npy(descr, fortran, &[2, 3], &data)).unwrap();
            assert_eq!(rows(&t.data), expected(), "{descr} fortran={fortran}");
            assert_eq!(t.data.is_f32(), f32, "{descr}");
            assert_eq!(t.column_names, None);
        }
    }

    #[test]
    fn integer_types_map_to_f32_or_f64() {
        let small: Vec<(&str, Vec<u8>)> = vec![
            ("|u1", C.iter().map(|&v| v as u8).collect()),
            ("|i1", C.iter().map(|&v| v as i8 as u8).collect()),
            ("<u2", bytes_le(&C.map(|v| v as u16), u16::to_le_bytes)),
            (">i2", bytes_le(&C.map(|v| v as i16), i16::to_be_bytes)),
        ];
        for (descr, data) in small {
            let t = read_npy(&npy(descr, false, &[2, 3], &data)).unwrap();
            assert!(matches!(t.data, Matrix::F32(_)), "{descr}");
            assert_eq!(rows(&t.data), expected(), "{descr}");
        }
        let wide: Vec<(&str, Vec<u8>)> = vec![
            ("<i4", bytes_le(&C.map(|v| v as i32), i32::to_le_bytes)),
            (">u4", bytes_le(&C.map(|v| v as u32), u32::to_be_bytes)),
            ("<i8", bytes_le(&C.map(|v| v as i64), i64::to_le_bytes)),
            ("<u8", bytes_le(&C.map(|v| v as u64), u64::to_le_bytes)),
        ];
        for (descr, data) in wide {
            let t = read_npy(&npy(descr, false, &[2, 3], &data)).unwrap();
            assert!(matches!(t.data, Matrix::F64(_)), "{descr}");
            assert_eq!(rows(&t.data), expected(), "{descr}");
        }
        let t = read_npy(&npy("|i1", false, &[1, 2], &[0x80, 0xff])).unwrap();
        assert_eq!(rows(&t.data), vec![vec![-128.0, -1.0]]);
    }

    #[test]
    fn one_dimension_is_one_column_other_ranks_are_errors() {
        let t = read_npy(&npy(
            "<f8",
            false,
            &[3],
            &bytes_le(&[1.0, 2.0, 3.0], f64::to_le_bytes),
        ))
        .unwrap();
        assert_eq!(rows(&t.data), vec![vec![1.0], vec![2.0], vec![3.0]]);
        let e = err_of(read_npy(&npy("|u1", false, &[1, 2, 2], &[0; 4])));
        assert!(e.contains("3 dimension(s), shape [1, 2, 2]"), "{e}");
        let e = err_of(read_npy(&npy("<f8", false, &[], &[0; 8])));
        assert!(e.contains("0 dimension(s)"), "{e}");
    }

    #[test]
    fn non_finite_values_name_row_and_column() {
        let data = bytes_le(&[1.0, 2.0, 3.0, f64::NAN, 5.0, 6.0], f64::to_le_bytes);
        let e = err_of(read_npy(&npy("<f8", false, &[3, 2], &data)));
        assert!(
            e.contains("a.npy: non-finite value NaN at row 1, column 1"),
            "{e}"
        );
        let data = bytes_le(&[1.0, f32::INFINITY], f32::to_le_bytes);
        let e = err_of(read_npy(&npy("<f4", true, &[1, 2], &data)));
        assert!(e.contains("non-finite value inf at row 0, column 1"), "{e}");
    }

    #[test]
    fn truncated_files_say_expected_and_actual_bytes() {
        let full = npy("<f8", false, &[2, 3], &bytes_le(&C, f64::to_le_bytes));
        let cut = &full[..full.len() - 5];
        let e = err_of(read_npy(cut));
        assert_eq!(
            e.split_once(" is truncated").map(|(_, r)| r),
            Some(
                ": its header (shape (2, 3), descr \"<f8\") promises 176 bytes but there are only \
                 171"
            )
        );
        let dir = TempDir::new().unwrap();
        let p = write_file(dir.path(), "a.npy.gz", &gz(cut));
        let e = err_of(read_one(&p));
        assert!(
            e.contains("promises 176 bytes (decompressed) but there are only 171"),
            "{e}"
        );
        let e = err_of(read_npy(&full[..9]));
        assert!(e.contains("truncated"), "{e}");
    }

    #[test]
    fn bad_headers_are_errors() {
        let e = err_of(read_npy(b"not an npy file at all"));
        assert!(e.contains("does not start with the NPY magic"), "{e}");
        let e = err_of(read_npy(&npy("<c16", false, &[1, 1], &[0; 16])));
        assert!(e.contains("unsupported NPY dtype \"<c16\""), "{e}");
        let e = err_of(read_npy(&npy("<f2", false, &[1, 1], &[0; 2])));
        assert!(e.contains("unsupported NPY dtype"), "{e}");
        let mut structured = npy("<f8", false, &[1], &[0; 8]);
        let at = structured.windows(5).position(|w| w == b"'<f8'").unwrap();
        structured.splice(at..at + 5, *b"[('a'");
        let e = err_of(read_npy(&structured));
        assert!(e.contains("structured dtypes"), "{e}");
        let mut garbled = npy("<f8", false, &[1], &[0; 8]);
        garbled[10] = b'x';
        let e = err_of(read_npy(&garbled));
        assert!(e.contains("bad NPY header"), "{e}");
        let e = err_of(read_npy(&npy("<f8", false, &[0, 3], &[])));
        assert!(e.contains("no data rows"), "{e}");
        let e = err_of(read_npy(&npy("<f8", false, &[3, 0], &[])));
        assert!(e.contains("no columns left"), "{e}");
    }

    #[test]
    fn python2_and_version_2_headers() {
        let mut v1 = npy("<f8", false, &[2, 3], &bytes_le(&C, f64::to_le_bytes));
        let at = v1.windows(6).position(|w| w == b"(2, 3)").unwrap();
        v1.splice(at..at + 6, *b"(2L,3L)");
        // Keep the header length consistent: one byte longer.
        let len = u16::from_le_bytes([v1[8], v1[9]]) + 1;
        v1[8..10].copy_from_slice(&len.to_le_bytes());
        assert_eq!(rows(&read_npy(&v1).unwrap().data), expected());
        let v1 = npy("<f8", false, &[2, 3], &bytes_le(&C, f64::to_le_bytes));
        let len = u16::from_le_bytes([v1[8], v1[9]]) as u32;
        let mut v2 = b"\x93NUMPY\x02\x00".to_vec();
        v2.extend_from_slice(&len.to_le_bytes());
        v2.extend_from_slice(&v1[10..]);
        assert_eq!(rows(&read_npy(&v2).unwrap().data), expected());
    }

    #[test]
    fn columns_by_index_but_not_by_name() {
        let dir = TempDir::new().unwrap();
        let p = write_file(
            dir.path(),
            "a.npy",
            &npy("<f8", true, &[2, 3], &bytes_le(&F, f64::to_le_bytes)),
        );
        let options = ReadOptions {
            columns: Some(vec![ColumnSelector::Index(2), ColumnSelector::Index(0)]),
            ..Default::default()
        };
        let t = crate::read_table(std::slice::from_ref(&p), &options).unwrap();
        assert_eq!(rows(&t.data), vec![vec![3.0, 1.0], vec![6.0, 4.0]]);
        let options = ReadOptions {
            exclude: vec![ColumnSelector::Index(1)],
            ..Default::default()
        };
        assert_eq!(
            rows(
                &crate::read_table(std::slice::from_ref(&p), &options)
                    .unwrap()
                    .data
            ),
            vec![vec![1.0, 3.0], vec![4.0, 6.0]]
        );
        let options = ReadOptions {
            exclude: vec![ColumnSelector::Name("x".into())],
            ..Default::default()
        };
        let e = err_of(crate::read_table(&[p], &options));
        assert!(e.contains("the file has no header"), "{e}");
    }

    #[test]
    fn written_files_read_back_exactly() {
        let m = Mat::from_fn(5, 3, |i, j| {
            (i as f64 - 2.0) * 0.1 + j as f64 * 1e-300 + 1.0 / 3.0
        });
        let mut bytes = f64_header(5, 3);
        write_f64_rows(&mut bytes, m.as_ref()).unwrap();
        let header_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
        assert_eq!((10 + header_len) % 64, 0);
        assert_eq!(bytes[10 + header_len - 1], b'\n');
        let t = read_npy(&bytes).unwrap();
        assert_eq!(t.data, Matrix::F64(RowMajorMat::from_mat_ref(m.as_ref())));
    }

    #[test]
    fn the_header_has_one_length_for_every_row_count() {
        for cols in [1, 3, 784, 100_000] {
            let len = f64_header(0, cols).len();
            assert_eq!(len % 64, 0, "{cols}");
            for rows in [1, 150, 1 << 40, u64::MAX] {
                let header = f64_header(rows, cols);
                assert_eq!(header.len(), len, "{rows} × {cols}");
                // No data follows: the file is cut short (or, for u64::MAX rows, too large).
                let e = read_npy(&header).unwrap_err().to_string();
                assert!(e.contains("truncated") || e.contains("too large"), "{e}");
            }
            let empty = read_npy(&f64_header(0, cols)).unwrap_err().to_string();
            assert!(empty.contains("no data rows"), "{empty}");
        }
    }

    /// With `Missing::AsNan`, NaN is read (in bulk and row by row, under a column selection)
    /// and an infinity is still an error naming its row and column.
    #[test]
    fn nan_is_read_when_missing_values_are_asked_for() {
        let dir = TempDir::new().unwrap();
        let data = bytes_le(&[1.0, f64::NAN, 3.0, 4.0, f64::NAN, 6.0], f64::to_le_bytes);
        let path = write_file(dir.path(), "a.npy", &npy("<f8", false, &[3, 2], &data));
        for columns in [
            None,
            Some(vec![ColumnSelector::Index(1), ColumnSelector::Index(0)]),
        ] {
            let options = ReadOptions {
                columns: columns.clone(),
                missing: crate::Missing::AsNan,
                ..Default::default()
            };
            let t = crate::read_table(std::slice::from_ref(&path), &options).unwrap();
            let got = rows(&t.data);
            let nan_at: Vec<(usize, usize)> = (0..3)
                .flat_map(|i| (0..2).map(move |j| (i, j)))
                .filter(|&(i, j)| got[i][j].is_nan())
                .collect();
            let want = if columns.is_none() {
                [(0, 1), (2, 0)]
            } else {
                [(0, 0), (2, 1)]
            };
            assert_eq!(nan_at, want);
        }
        let data = bytes_le(&[1.0, f32::NAN, f32::NEG_INFINITY, 2.0], f32::to_le_bytes);
        let path = write_file(dir.path(), "b.npy", &npy("<f4", false, &[2, 2], &data));
        let options = ReadOptions {
            missing: crate::Missing::AsNan,
            ..Default::default()
        };
        let e = err_of(crate::read_table(std::slice::from_ref(&path), &options));
        assert!(
            e.contains("non-finite value -inf at row 1, column 0"),
            "{e}"
        );
    }
}
