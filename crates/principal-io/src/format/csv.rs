//! Delimited text (CSV, TSV), streamed record by record into f64.

use std::io::Read;
use std::path::{Path, PathBuf};

use ::csv::{ByteRecord, Reader, ReaderBuilder, Trim};

use crate::error::{IoError, Result};
use crate::read::columns::{column_label, resolve_columns, shell_word};
use crate::read::options::{HeaderMode, Missing, ReadOptions};
use crate::read::rows::RowBuf;

/// A text file being read: header handled, columns resolved, rows streamed.
pub(crate) struct CsvSource {
    path: PathBuf,
    reader: Reader<Box<dyn Read + Send>>,
    record: ByteRecord,
    /// `record` holds the first data row, read while detecting the header.
    pending: bool,
    /// Fields every record must have.
    n_fields: usize,
    /// What `n_fields` comes from, for ragged-row messages.
    reference: &'static str,
    names: Option<Vec<String>>,
    kept: Vec<usize>,
    kept_names: Option<Vec<String>>,
    first_data_line: u64,
    missing: Missing,
    delimiter: u8,
    /// Where a part ([`CsvSource::restrict`]) starts in the file: its lines count from there.
    part_start: Option<u64>,
}

pub(crate) fn parse_number(field: &[u8]) -> Option<f64> {
    std::str::from_utf8(field).ok()?.parse().ok()
}

pub(crate) fn line_of(record: &ByteRecord) -> u64 {
    record.position().map_or(0, |p| p.line())
}

impl CsvSource {
    pub(crate) fn new(
        path: &Path,
        stream: Box<dyn Read + Send>,
        delimiter: u8,
        options: &ReadOptions,
    ) -> Result<CsvSource> {
        let mut reader = text_reader(stream, delimiter);
        let mut record = ByteRecord::new();
        if !read_record(path, &mut reader, &mut record)? {
            return Err(IoError::NoData {
                path: path.to_owned(),
                detail: " (the file is empty)",
            });
        }
        let header = is_header(&record, options.header);
        let n_fields = record.len();
        let names = header.then(|| {
            record
                .iter()
                .map(|f| String::from_utf8_lossy(f).into_owned())
                .collect::<Vec<_>>()
        });
        if header && !read_record(path, &mut reader, &mut record)? {
            return Err(IoError::NoData {
                path: path.to_owned(),
                detail: " (only a header)",
            });
        }
        let kept = resolve_columns(path, n_fields, names.as_deref(), options)?;
        let kept_names = names
            .as_ref()
            .map(|n| kept.iter().map(|&i| n[i].clone()).collect());
        Ok(CsvSource {
            path: path.to_owned(),
            first_data_line: line_of(&record),
            reader,
            record,
            pending: true,
            n_fields,
            reference: if header {
                "the header"
            } else {
                "the first row"
            },
            names,
            kept,
            kept_names,
            missing: options.missing,
            delimiter,
            part_start: None,
        })
    }

    pub(crate) fn n_features(&self) -> usize {
        self.kept.len()
    }

    /// The byte at which a part's first line starts, when reading a part.
    pub(crate) fn part_start(&self) -> Option<u64> {
        self.part_start
    }

    /// Reads only the lines that start in the bytes `bytes` of the file (a process's part of
    /// it), the header excepted: the stream is reopened at the first line starting at or after
    /// `bytes.start` and ends with the line that holds `bytes.end − 1`. Only for uncompressed
    /// files without line breaks inside quoted fields. Lines in messages count from the part's
    /// start (`reader::part` turns them into the file's).
    pub(crate) fn restrict(&mut self, bytes: std::ops::Range<u64>) -> Result<()> {
        let data_start = self.record.position().map_or(0, |p| p.byte());
        let start = bytes.start.max(data_start);
        let stream = LineRange::open(&self.path, start, bytes.end.max(start), start > data_start)?;
        self.part_start = Some(stream.at);
        self.reader = text_reader(Box::new(stream), self.delimiter);
        self.pending = false;
        // No hint about a label column: the part's first line is not the file's first row.
        self.first_data_line = u64::MAX;
        Ok(())
    }

    pub(crate) fn kept_names(&self) -> Option<&[String]> {
        self.kept_names.as_deref()
    }

    /// Appends up to `max_rows` rows to `out`; returns how many (0 at the end).
    pub(crate) fn read_rows(&mut self, max_rows: usize, out: &mut RowBuf) -> Result<usize> {
        let mut n = 0;
        while n < max_rows {
            if self.pending {
                self.pending = false;
            } else if !read_record(&self.path, &mut self.reader, &mut self.record)? {
                break;
            }
            let line = line_of(&self.record);
            if self.record.len() != self.n_fields {
                return Err(IoError::RaggedRow {
                    path: self.path.clone(),
                    line,
                    found: self.record.len(),
                    expected: self.n_fields,
                    reference: self.reference,
                });
            }
            let nan_is_missing = self.missing == Missing::AsNan;
            for &j in &self.kept {
                let field = &self.record[j];
                match parse_number(field) {
                    Some(v) if v.is_finite() => out.push_f64(v),
                    Some(v) if v.is_nan() && nan_is_missing => out.push_f64(f64::NAN),
                    None if field.is_empty() && nan_is_missing => out.push_f64(f64::NAN),
                    Some(_) => {
                        return Err(IoError::NonFinite {
                            path: self.path.clone(),
                            line,
                            column: column_label(j, self.names.as_deref()),
                            value: String::from_utf8_lossy(field).into_owned(),
                        });
                    }
                    None if field.is_empty() => {
                        return Err(IoError::EmptyCell {
                            path: self.path.clone(),
                            line,
                            column: column_label(j, self.names.as_deref()),
                        });
                    }
                    None => return Err(self.non_numeric(line, j)),
                }
            }
            n += 1;
        }
        Ok(n)
    }

    fn non_numeric(&self, line: u64, j: usize) -> IoError {
        let column = column_label(j, self.names.as_deref());
        // On the first data row, nothing in the column has parsed: most likely a label column
        // (such as Iris's species), which the user wants to leave out rather than fix.
        let hint = if line == self.first_data_line {
            let selector = match &column.name {
                Some(name) => shell_word(name),
                None => j.to_string(),
            };
            format!("; the column looks non-numeric: leave it out with --exclude {selector}")
        } else {
            String::new()
        };
        IoError::NonNumeric {
            path: self.path.clone(),
            line,
            column,
            value: String::from_utf8_lossy(&self.record[j]).into_owned(),
            hint,
        }
    }
}

/// The bytes of the lines of a file that start in `[start, end)`: from `start` (moved on to the
/// next line start when `start` may fall inside a line) through the line holding `end − 1`.
struct LineRange {
    reader: std::io::BufReader<std::fs::File>,
    /// Bytes read so far, from the file's start.
    at: u64,
    end: u64,
    /// The last byte given ended a line (or nothing was given yet at a line start).
    line_start: bool,
}

impl LineRange {
    fn open(path: &Path, start: u64, end: u64, mid_line: bool) -> Result<LineRange> {
        use std::io::{BufRead, Seek, SeekFrom};
        let read_err = |source| IoError::Read {
            path: path.to_owned(),
            source,
        };
        let file = std::fs::File::open(path).map_err(|source| IoError::Open {
            path: path.to_owned(),
            source,
        })?;
        let mut reader = std::io::BufReader::with_capacity(1 << 16, file);
        let mut at = start;
        if mid_line {
            // The line that holds `start − 1` belongs to the part before: skip to its end.
            reader.seek(SeekFrom::Start(start - 1)).map_err(read_err)?;
            let mut skipped = Vec::new();
            at = start - 1 + reader.read_until(b'\n', &mut skipped).map_err(read_err)? as u64;
        } else {
            reader.seek(SeekFrom::Start(start)).map_err(read_err)?;
        }
        Ok(LineRange {
            reader,
            at,
            end,
            line_start: true,
        })
    }
}

impl Read for LineRange {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use std::io::BufRead;
        if self.at >= self.end && self.line_start {
            return Ok(0);
        }
        let available = self.reader.fill_buf()?;
        let mut n = available.len().min(buf.len());
        if self.at >= self.end {
            // Past the end: only the rest of the line that started before it.
            if let Some(k) = available[..n].iter().position(|&b| b == b'\n') {
                n = k + 1;
            }
        } else {
            n = n.min((self.end - self.at) as usize);
        }
        buf[..n].copy_from_slice(&available[..n]);
        self.reader.consume(n);
        self.at += n as u64;
        if n > 0 {
            self.line_start = buf[n - 1] == b'\n';
        } else {
            self.line_start = true;
        }
        Ok(n)
    }
}

/// A reader of delimited text as every reader of this crate configures it.
pub(crate) fn text_reader(
    stream: Box<dyn Read + Send>,
    delimiter: u8,
) -> Reader<Box<dyn Read + Send>> {
    // flexible: ragged rows are reported by us, with the line and both counts.
    ReaderBuilder::new()
        .delimiter(delimiter)
        .has_headers(false)
        .flexible(true)
        .trim(Trim::All)
        .from_reader(stream)
}

/// Whether the first record of a text file is a header under `mode`: with
/// [`HeaderMode::Auto`], when one of its fields does not parse as a number.
pub(crate) fn is_header(first: &ByteRecord, mode: HeaderMode) -> bool {
    match mode {
        HeaderMode::Present => true,
        HeaderMode::Absent => false,
        // An empty field is a missing value, not a name: it alone does not make a header.
        HeaderMode::Auto => first
            .iter()
            .any(|f| !f.is_empty() && parse_number(f).is_none()),
    }
}

pub(crate) fn read_record(
    path: &Path,
    reader: &mut Reader<Box<dyn Read + Send>>,
    record: &mut ByteRecord,
) -> Result<bool> {
    reader.read_byte_record(record).map_err(|e| {
        let line = e.position().map(|p| p.line());
        match e.into_kind() {
            ::csv::ErrorKind::Io(source) => IoError::Read {
                path: path.to_owned(),
                source,
            },
            other => IoError::Format {
                path: path.to_owned(),
                detail: match line {
                    Some(line) => format!("line {line}: {other:?}"),
                    None => format!("{other:?}"),
                },
            },
        }
    })
}

#[cfg(test)]
mod tests {
    use tempfile::TempDir;

    use crate::test_util::*;
    use crate::{HeaderMode, Matrix, ReadOptions, read_table};

    fn csv(text: &str) -> (TempDir, std::path::PathBuf) {
        let dir = TempDir::new().unwrap();
        let path = write_file(dir.path(), "data.csv", text.as_bytes());
        (dir, path)
    }

    fn with(header: HeaderMode) -> ReadOptions {
        ReadOptions {
            header,
            ..Default::default()
        }
    }

    #[test]
    fn header_is_detected() {
        let (_d, p) = csv("a,b,c\n1,2,3\n4,5.5,-6e-3\n");
        let t = read_one(&p).unwrap();
        assert!(matches!(t.data, Matrix::F64(_)));
        assert_eq!(
            rows(&t.data),
            vec![vec![1.0, 2.0, 3.0], vec![4.0, 5.5, -6e-3]]
        );
        assert_eq!(t.column_names, names(&["a", "b", "c"]));
    }

    #[test]
    fn numeric_first_row_is_data() {
        let (_d, p) = csv("1,2\n3,4\n");
        let t = read_one(&p).unwrap();
        assert_eq!(rows(&t.data), vec![vec![1.0, 2.0], vec![3.0, 4.0]]);
        assert_eq!(t.column_names, None);
    }

    #[test]
    fn header_modes_force_the_choice() {
        let (_d, p) = csv("1,2\n3,4\n");
        let t = read(std::slice::from_ref(&p), &with(HeaderMode::Present)).unwrap();
        assert_eq!(rows(&t.data), vec![vec![3.0, 4.0]]);
        assert_eq!(t.column_names, names(&["1", "2"]));
        let (_d, p) = csv("x,y\n3,4\n");
        let e = err_of(read(&[p], &with(HeaderMode::Absent)));
        assert!(e.contains("line 1, column 1: \"x\" is not a number"), "{e}");
    }

    #[test]
    fn quoted_fields_whitespace_and_crlf() {
        let (_d, p) = csv("\"name, with comma\",\"b\"\"q\"\r\n\"1.5\", 2 \r\n 3 ,\"4\"\r\n");
        let t = read_one(&p).unwrap();
        assert_eq!(t.column_names, names(&["name, with comma", "b\"q"]));
        assert_eq!(rows(&t.data), vec![vec![1.5, 2.0], vec![3.0, 4.0]]);
    }

    #[test]
    fn bom_blank_lines_and_missing_final_newline() {
        let (_d, p) = csv("\u{feff}a,b\n1,2\n\n3,4");
        let t = read_one(&p).unwrap();
        assert_eq!(t.column_names, names(&["a", "b"]));
        assert_eq!(rows(&t.data), vec![vec![1.0, 2.0], vec![3.0, 4.0]]);
    }

    #[test]
    fn missing_value_in_first_row_is_not_a_header() {
        let (_d, p) = csv("1,,3\n4,5,6\n");
        let e = err_of(read_one(&p));
        assert!(e.contains("line 1, column 2: empty cell"), "{e}");
    }

    #[test]
    fn tsv_and_txt_use_tabs() {
        let dir = TempDir::new().unwrap();
        let p = write_file(dir.path(), "d.tsv", b"a\tb\n1\t2\n");
        assert_eq!(rows(&read_one(&p).unwrap().data), vec![vec![1.0, 2.0]]);
        let p = write_file(dir.path(), "d.tsv.gz", &gz(b"a\tb\n1\t2\n"));
        assert_eq!(rows(&read_one(&p).unwrap().data), vec![vec![1.0, 2.0]]);
        let p = write_file(dir.path(), "d.txt", b"1\t2\n3\t4\n");
        assert_eq!(
            rows(&read_one(&p).unwrap().data),
            vec![vec![1.0, 2.0], vec![3.0, 4.0]]
        );
        let p = write_file(dir.path(), "e.txt", b"1,2\n3,4\n");
        assert_eq!(
            rows(&read_one(&p).unwrap().data),
            vec![vec![1.0, 2.0], vec![3.0, 4.0]]
        );
    }

    #[test]
    fn gzip_is_detected_by_content() {
        let dir = TempDir::new().unwrap();
        let text = b"a,b\n1,2\n3,4\n";
        let p = write_file(dir.path(), "d.csv.gz", &gz(text));
        let t = read_one(&p).unwrap();
        assert_eq!(rows(&t.data), vec![vec![1.0, 2.0], vec![3.0, 4.0]]);
        // Concatenated gzip members (as `cat a.gz b.gz`) are one stream.
        let mut two = gz(b"a,b\n1,2\n");
        two.extend(gz(b"3,4\n"));
        let p = write_file(dir.path(), "two.csv.gz", &two);
        assert_eq!(
            rows(&read_one(&p).unwrap().data),
            vec![vec![1.0, 2.0], vec![3.0, 4.0]]
        );
    }

    #[test]
    fn corrupt_gzip_is_a_read_error() {
        let dir = TempDir::new().unwrap();
        let mut bytes = gz(b"a,b\n1,2\n3,4\n");
        let n = bytes.len();
        bytes[n / 2] ^= 0xff;
        bytes.truncate(n - 4);
        let p = write_file(dir.path(), "bad.csv.gz", &bytes);
        let e = err_of(read_one(&p));
        assert!(e.contains("bad.csv.gz"), "{e}");
    }

    #[test]
    fn columns_by_name_and_index_in_the_given_order() {
        let (_d, p) = csv("a,b,c,d\n1,2,3,4\n5,6,7,8\n");
        let t = read(std::slice::from_ref(&p), &selection(Some(&["c", "0"]), &[])).unwrap();
        assert_eq!(t.column_names, names(&["c", "a"]));
        assert_eq!(rows(&t.data), vec![vec![3.0, 1.0], vec![7.0, 5.0]]);
        let t = read(std::slice::from_ref(&p), &selection(None, &["b", "3"])).unwrap();
        assert_eq!(t.column_names, names(&["a", "c"]));
        assert_eq!(rows(&t.data), vec![vec![1.0, 3.0], vec![5.0, 7.0]]);
        let t = read(&[p], &selection(Some(&["a", "b", "c"]), &["b"])).unwrap();
        assert_eq!(t.column_names, names(&["a", "c"]));
    }

    #[test]
    fn selection_errors() {
        let (_d, p) = csv("a,b,a2\n1,2,3\n");
        let e = err_of(read(
            std::slice::from_ref(&p),
            &selection(Some(&["zz"]), &[]),
        ));
        assert!(
            e.contains("no column named \"zz\"") && e.contains("\"a\", \"b\", \"a2\""),
            "{e}"
        );
        let e = err_of(read(std::slice::from_ref(&p), &selection(None, &["7"])));
        assert!(
            e.contains("column index 7 is out of range") && e.contains("3 column(s)"),
            "{e}"
        );
        let e = err_of(read(
            std::slice::from_ref(&p),
            &selection(Some(&["a", "0"]), &[]),
        ));
        assert!(e.contains("column 1 (\"a\") is selected twice"), "{e}");
        let e = err_of(read(
            std::slice::from_ref(&p),
            &selection(None, &["a", "b", "2"]),
        ));
        assert!(e.contains("no columns left"), "{e}");
        let (_d2, p) = csv("1,2\n3,4\n");
        let e = err_of(read(&[p], &selection(Some(&["a"]), &[])));
        assert!(e.contains("no header"), "{e}");
        let (_d3, p) = csv("x,y,x\n1,2,3\n");
        let e = err_of(read(&[p], &selection(None, &["x"])));
        assert!(e.contains("columns 1 and 3 both \"x\""), "{e}");
    }

    #[test]
    fn non_numeric_cell_names_line_column_and_value() {
        let (_d, p) = csv("a,b,species\n1,2,setosa\n");
        let e = err_of(read_one(&p));
        assert!(
            e.contains("data.csv, line 2, column 3 (\"species\"): \"setosa\" is not a number"),
            "{e}"
        );
        assert!(e.contains("--exclude species"), "{e}");
        // Further down, a bad cell is a typo, not a label column: no hint.
        let (_d, p) = csv("a,b\n1,2\n3,4\n5,x7\n");
        let e = err_of(read_one(&p));
        assert!(
            e.contains("line 4, column 2 (\"b\"): \"x7\" is not a number"),
            "{e}"
        );
        assert!(!e.contains("--exclude"), "{e}");
        // Without a header the hint gives the index.
        let (_d, p) = csv("1,abc\n");
        let e = err_of(read(&[p], &with(HeaderMode::Absent)));
        assert!(
            e.contains("line 1, column 2: \"abc\"") && e.contains("--exclude 1"),
            "{e}"
        );
        // Names that need quoting for the shell are quoted.
        let (_d, p) = csv("a,my label\n1,dog\n");
        assert!(err_of(read_one(&p)).contains("--exclude 'my label'"));
    }

    #[test]
    fn empty_cells_and_non_finite_values_are_errors() {
        let (_d, p) = csv("a,b\n1,2\n3,\n");
        let e = err_of(read_one(&p));
        assert!(e.contains("line 3, column 2 (\"b\"): empty cell"), "{e}");
        for bad in ["nan", "NaN", "inf", "-inf", "infinity", "1e999"] {
            let (_d, p) = csv(&format!("a,b\n1,2\n{bad},4\n"));
            let e = err_of(read_one(&p));
            assert!(
                e.contains(&format!(
                    "line 3, column 1 (\"a\"): \"{bad}\" is not a finite number"
                )),
                "{e}"
            );
        }
    }

    #[test]
    fn ragged_rows_are_errors() {
        let (_d, p) = csv("a,b,c,d,e\n1,2,3,4,5\n1,2,3\n");
        let e = err_of(read_one(&p));
        assert_eq!(
            e,
            format!("{}, line 3: 3 fields but the header has 5", p.display())
        );
        let (_d, p) = csv("1,2\n1,2,3\n");
        assert!(err_of(read_one(&p)).contains("line 2: 3 fields but the first row has 2"));
    }

    #[test]
    fn files_without_data_rows_are_errors() {
        let (_d, p) = csv("");
        assert!(err_of(read_one(&p)).contains("has no data rows (the file is empty)"));
        let (_d, p) = csv("a,b\n");
        assert!(err_of(read_one(&p)).contains("has no data rows (only a header)"));
    }

    #[test]
    fn iris_without_species() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/iris.csv");
        let e = err_of(read_one(&path));
        assert!(
            e.contains("column 5 (\"species\")") && e.contains("--exclude species"),
            "{e}"
        );
        let t = read(&[path], &selection(None, &["species"])).unwrap();
        assert_eq!((t.data.nrows(), t.data.ncols()), (150, 4));
        assert_eq!(
            t.column_names,
            names(&["sepal_length", "sepal_width", "petal_length", "petal_width"])
        );
        assert_eq!(rows(&t.data)[0], vec![5.1, 3.5, 1.4, 0.2]);
    }

    #[test]
    fn mnist_5k_gz_without_header() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/mnist-5k.csv.gz");
        let t = read_one(&path).unwrap();
        assert_eq!((t.data.nrows(), t.data.ncols()), (5000, 785));
        assert_eq!(t.column_names, None);
        let m = t.data.to_f64();
        assert!((0..5000).all(|i| (0.0..=9.0).contains(&m[(i, 784)])));
    }

    /// With `Missing::AsNan`, empty cells and `nan` in any case are NaN (a header is still
    /// detected); infinities stay errors; the default still rejects them.
    #[test]
    fn missing_values_are_read_as_nan_when_asked() {
        let asked = ReadOptions {
            missing: crate::Missing::AsNan,
            ..Default::default()
        };
        let (_d, p) = csv("a,b,c\n1,,3\nNaN,5,nan\n,,\n");
        let t = read_table(std::slice::from_ref(&p), &asked).unwrap();
        assert_eq!(t.column_names, names(&["a", "b", "c"]));
        let got = rows(&t.data);
        let shown: Vec<Vec<String>> = got
            .iter()
            .map(|r| r.iter().map(|v| v.to_string()).collect())
            .collect();
        assert_eq!(
            shown,
            [
                ["1", "NaN", "3"],
                ["NaN", "5", "NaN"],
                ["NaN", "NaN", "NaN"]
            ]
        );
        assert!(err_of(read_one(&p)).contains("line 2, column 2 (\"b\"): empty cell"));
        for bad in ["inf", "-infinity", "1e999"] {
            let (_d, p) = csv(&format!("a,b\n1,2\n{bad},4\n"));
            let e = err_of(read_table(&[p], &asked));
            assert!(e.contains("is not a finite number"), "{e}");
        }
    }
}
