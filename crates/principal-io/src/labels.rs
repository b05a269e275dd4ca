//! Labels of a data set's samples (digits, species, classes), one per row: from label files —
//! MNIST's IDX label files, a text file of one label per line, a one-column NPY, Parquet or
//! Arrow file — or from a column of the data files themselves. Labels are text: classes are
//! compared as strings, and numbers from binary files are written as integers when they are.

use std::path::{Path, PathBuf};

use ::csv::ByteRecord;

use crate::error::{Column, IoError, Result};
use crate::format::csv::{is_header, line_of, parse_number, read_record, text_reader};
use crate::format::idx;
use crate::read::columns::{column_label, resolve_columns};
use crate::read::matrix::Matrix;
use crate::read::open::{Format, open};
use crate::read::options::{ColumnSelector, HeaderMode, ReadOptions};
use crate::reader::chunk_reader::read_table;

/// Reads the labels in `paths`, concatenated in order (as the shards of a data set are).
///
/// Each file is one of:
/// - an IDX label file (1-D unsigned bytes, MNIST's `train-labels-idx1-ubyte`, raw or gzip);
/// - delimited text with one label per line (optionally gzip). The first line is a header
///   when it is not a number and either every later line is a number or its text occurs on
///   no later line (a name, not a class); otherwise it is the first label;
/// - NPY, Parquet or Arrow holding one numeric column.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// let path = dir.path().join("species.csv");
/// std::fs::write(&path, "species\nsetosa\nvirginica\nsetosa\n")?;
/// let labels = principal_io::read_label_files(&[path])?;
/// assert_eq!(labels, ["setosa", "virginica", "setosa"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn read_label_files(paths: &[PathBuf]) -> Result<Vec<String>> {
    if paths.is_empty() {
        return Err(IoError::NoInput);
    }
    let mut labels = Vec::new();
    for path in paths {
        let opened = open(path)?;
        match opened.format {
            Format::Idx => {
                labels.extend(idx::read_labels(path)?.iter().map(u8::to_string));
            }
            Format::Text(delimiter) => {
                let mut reader = text_reader(opened.reader, delimiter);
                let mut record = ByteRecord::new();
                let mut lines = Vec::new();
                while read_record(path, &mut reader, &mut record)? {
                    let line = line_of(&record);
                    if record.len() != 1 {
                        return Err(IoError::Format {
                            path: path.clone(),
                            detail: format!(
                                "line {line} has {} fields: a labels file holds one label per \
                                 line (to take labels from a column of the data, name the column \
                                 instead)",
                                record.len()
                            ),
                        });
                    }
                    lines.push((line, record[0].to_vec()));
                }
                labels.extend(text_labels(path, lines)?);
            }
            Format::Hdf5 => {
                return Err(IoError::Format {
                    path: path.clone(),
                    detail: "an AnnData .h5ad file cannot be a labels file: write the obs column \
                             to a text file (adata.obs[COLUMN].to_csv(...))"
                        .into(),
                });
            }
            Format::Npy | Format::Parquet | Format::ArrowFile | Format::ArrowStream => {
                let table = read_table(std::slice::from_ref(path), &ReadOptions::default())?;
                if table.data.ncols() != 1 {
                    return Err(IoError::Format {
                        path: path.clone(),
                        detail: format!(
                            "a labels file holds one column, but this one has {}",
                            table.data.ncols()
                        ),
                    });
                }
                labels.extend(number_labels(table.data));
            }
        }
    }
    Ok(labels)
}

/// The labels of a one-column text file from its lines, the header (if any) dropped.
fn text_labels(path: &Path, lines: Vec<(u64, Vec<u8>)>) -> Result<Vec<String>> {
    let Some((first, rest)) = lines.split_first() else {
        return Err(IoError::NoData {
            path: path.to_owned(),
            detail: " (the labels file is empty)",
        });
    };
    let is_number = |field: &[u8]| parse_number(field).is_some();
    let header = !rest.is_empty()
        && !is_number(&first.1)
        && (rest.iter().all(|(_, f)| is_number(f)) || rest.iter().all(|(_, f)| *f != first.1));
    let name = header.then(|| String::from_utf8_lossy(&first.1).into_owned());
    let body = if header { rest } else { &lines[..] };
    body.iter()
        .map(|(line, field)| {
            // Text has no NUL byte; a binary file too short to show its format (an IDX label
            // file cut inside its 4-byte magic number, 0 0 8 1) would otherwise be a label.
            if field.contains(&0) {
                return Err(IoError::Format {
                    path: path.to_owned(),
                    detail: format!(
                        "line {line} holds a NUL byte: not a text file of labels (nor a whole \
                         IDX label file)"
                    ),
                });
            }
            if field.is_empty() {
                return Err(IoError::EmptyCell {
                    path: path.to_owned(),
                    line: *line,
                    column: Column {
                        number: 1,
                        name: name.clone(),
                    },
                });
            }
            Ok(String::from_utf8_lossy(field).into_owned())
        })
        .collect()
}

/// Reads the labels in one column of a data set's files (shards, concatenated in order): the
/// same rows a reader of the data yields, so label `i` belongs to row `i`. In text files
/// (CSV, TSV, optionally gzip) the column is chosen by header name or 0-based index and its
/// fields are taken as text (`setosa`); in NPY, IDX, Parquet and Arrow files it must hold
/// numbers. `header` decides whether the first line of a text file is a header, as for the
/// data ([`HeaderMode::Auto`]: when one of its fields is not a number).
///
/// ```
/// use principal_io::{read_label_column, ColumnSelector, HeaderMode};
/// # let dir = tempfile::tempdir()?;
/// let path = dir.path().join("iris.csv");
/// std::fs::write(&path, "petal_length,species\n1.4,setosa\n5.1,virginica\n")?;
/// let species = ColumnSelector::Name("species".into());
/// let labels = read_label_column(&[path], &species, HeaderMode::Auto)?;
/// assert_eq!(labels, ["setosa", "virginica"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn read_label_column(
    paths: &[PathBuf],
    column: &ColumnSelector,
    header: HeaderMode,
) -> Result<Vec<String>> {
    if paths.is_empty() {
        return Err(IoError::NoInput);
    }
    let options = ReadOptions {
        header,
        columns: Some(vec![column.clone()]),
        ..ReadOptions::default()
    };
    let mut labels = Vec::new();
    for path in paths {
        let opened = open(path)?;
        let Format::Text(delimiter) = opened.format else {
            let table = read_table(std::slice::from_ref(path), &options)?;
            labels.extend(number_labels(table.data));
            continue;
        };
        let mut reader = text_reader(opened.reader, delimiter);
        let mut record = ByteRecord::new();
        if !read_record(path, &mut reader, &mut record)? {
            return Err(IoError::NoData {
                path: path.clone(),
                detail: " (the file is empty)",
            });
        }
        let n_fields = record.len();
        let names: Option<Vec<String>> = is_header(&record, header).then(|| {
            record
                .iter()
                .map(|f| String::from_utf8_lossy(f).into_owned())
                .collect()
        });
        let index = resolve_columns(path, n_fields, names.as_deref(), &options)?[0];
        let reference = if names.is_some() {
            "the header"
        } else {
            "the first row"
        };
        let before = labels.len();
        let mut pending = names.is_none();
        loop {
            if pending {
                pending = false;
            } else if !read_record(path, &mut reader, &mut record)? {
                break;
            }
            let line = line_of(&record);
            if record.len() != n_fields {
                return Err(IoError::RaggedRow {
                    path: path.clone(),
                    line,
                    found: record.len(),
                    expected: n_fields,
                    reference,
                });
            }
            let field = &record[index];
            if field.is_empty() {
                return Err(IoError::EmptyCell {
                    path: path.clone(),
                    line,
                    column: column_label(index, names.as_deref()),
                });
            }
            labels.push(String::from_utf8_lossy(field).into_owned());
        }
        if labels.len() == before {
            return Err(IoError::NoData {
                path: path.clone(),
                detail: " (only a header)",
            });
        }
    }
    Ok(labels)
}

/// The numbers of a one-column matrix as labels.
fn number_labels(data: Matrix) -> impl Iterator<Item = String> {
    data.into_f64().into_vec().into_iter().map(number_label)
}

/// A number as a label: integers without a decimal point (`7`, not `7.0`).
fn number_label(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else {
        format!("{value}")
    }
}

#[cfg(test)]
mod tests {
    use tempfile::TempDir;

    use super::*;
    use crate::test_util::*;

    fn text(dir: &TempDir, name: &str, content: &str) -> PathBuf {
        write_file(dir.path(), name, content.as_bytes())
    }

    #[test]
    fn idx_label_files_are_concatenated_in_order() {
        let dir = TempDir::new().unwrap();
        let train = write_file(
            dir.path(),
            "train-labels-idx1-ubyte",
            &idx(0x08, &[3], &[5, 0, 4]),
        );
        let test = write_file(
            dir.path(),
            "t10k-labels-idx1-ubyte.gz",
            &gz(&idx(0x08, &[2], &[9, 2])),
        );
        assert_eq!(
            read_label_files(&[train, test]).unwrap(),
            ["5", "0", "4", "9", "2"]
        );
    }

    #[test]
    fn a_one_column_text_file_has_a_header_only_when_its_first_line_is_a_name() {
        let dir = TempDir::new().unwrap();
        let read = |content: &str| read_label_files(&[text(&dir, "l.csv", content)]).unwrap();
        // A name over numbers, and a name that is no class.
        assert_eq!(read("digit\n3\n1\n3\n"), ["3", "1", "3"]);
        assert_eq!(
            read("species\nsetosa\nvirginica\n"),
            ["setosa", "virginica"]
        );
        // No header: numbers only, or a first line that is one of the classes.
        assert_eq!(read("3\n1\n"), ["3", "1"]);
        assert_eq!(read("cat\ndog\ncat\n"), ["cat", "dog", "cat"]);
        // A single line is a label.
        assert_eq!(read("cat\n"), ["cat"]);
        // gzip, and TSV by name.
        let gz_path = write_file(dir.path(), "l.csv.gz", &gz(b"label\n7\n8\n"));
        assert_eq!(read_label_files(&[gz_path]).unwrap(), ["7", "8"]);
    }

    #[test]
    fn bad_label_files_are_named_with_the_line() {
        let dir = TempDir::new().unwrap();
        let err = |path: PathBuf| read_label_files(&[path]).unwrap_err().to_string();
        let e = err(text(&dir, "two.csv", "a,1\nb,2\n"));
        assert!(
            e.contains("two.csv") && e.contains("line 1 has 2 fields"),
            "{e}"
        );
        // A quoted empty field is an empty label (the csv reader skips blank lines).
        let e = err(text(&dir, "empty.csv", "label\n\"\"\n3\n"));
        assert!(
            e.contains("empty.csv, line 2, column 1 (\"label\"): empty cell"),
            "{e}"
        );
        let e = err(text(&dir, "nothing.csv", ""));
        assert!(e.contains("nothing.csv has no data rows"), "{e}");
        let e = err(write_file(
            dir.path(),
            "images-idx3-ubyte",
            &idx(0x08, &[1, 2, 2], &[0, 1, 2, 3]),
        ));
        assert!(e.contains("not an IDX label file"), "{e}");
        let e = err(dir.path().join("missing.csv"));
        assert!(e.starts_with("cannot open"), "{e}");
    }

    /// Found by the seeded mutation test (issue 24): an IDX label file cut to 1–3 bytes is
    /// too short to be seen as IDX and was read as one text label of NUL bytes.
    #[test]
    fn an_idx_label_file_cut_inside_its_magic_number_is_refused() {
        let dir = TempDir::new().unwrap();
        for len in 1..=3 {
            let path = write_file(dir.path(), "l-idx1-ubyte", &[0, 0, 8, 1][..len]);
            let e = read_label_files(std::slice::from_ref(&path))
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(&path.display().to_string())
                    && e.contains("line 1 holds a NUL byte: not a text file of labels"),
                "{len} bytes: {e}"
            );
        }
        let path = text(&dir, "ok.txt", "digit\n8\n1\n");
        assert_eq!(read_label_files(&[path]).unwrap(), ["8", "1"]);
    }

    #[test]
    fn a_column_of_the_data_is_read_as_text_with_the_data_s_header_rule() {
        let dir = TempDir::new().unwrap();
        let a = text(&dir, "a.csv", "x,species\n1.5,setosa\n2.5,virginica\n");
        let b = text(&dir, "b.csv", "x,species\n3.5, setosa \n");
        let species = ColumnSelector::Name("species".into());
        assert_eq!(
            read_label_column(&[a.clone(), b], &species, HeaderMode::Auto).unwrap(),
            ["setosa", "virginica", "setosa"]
        );
        // No header: by index; numeric labels stay as written.
        let digits = text(&dir, "d.csv", "0,0,7\n1,2,3\n");
        assert_eq!(
            read_label_column(&[digits], &ColumnSelector::Index(2), HeaderMode::Auto).unwrap(),
            ["7", "3"]
        );
        let e = read_label_column(
            std::slice::from_ref(&a),
            &ColumnSelector::Name("kind".into()),
            HeaderMode::Auto,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("no column named \"kind\""), "{e}");
        let ragged = text(&dir, "r.csv", "x,species\n1,setosa\n2\n");
        let e = read_label_column(&[ragged], &species, HeaderMode::Auto)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("r.csv, line 3: 1 fields but the header has 2"),
            "{e}"
        );
        let empty = text(&dir, "e.csv", "x,species\n1,\n");
        let e = read_label_column(&[empty], &species, HeaderMode::Auto)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("line 2, column 2 (\"species\"): empty cell"),
            "{e}"
        );
    }

    #[test]
    fn a_column_of_a_binary_file_gives_integer_labels() {
        let dir = TempDir::new().unwrap();
        let path = write_file(
            dir.path(),
            "x.npy",
            &npy(
                "<f8",
                false,
                &[3, 2],
                &[0.5f64, 1.0, 0.25, 2.0, 0.75, 3.5]
                    .iter()
                    .flat_map(|v| v.to_le_bytes())
                    .collect::<Vec<_>>(),
            ),
        );
        assert_eq!(
            read_label_column(
                std::slice::from_ref(&path),
                &ColumnSelector::Index(1),
                HeaderMode::Auto
            )
            .unwrap(),
            ["1", "2", "3.5"]
        );
        let one = write_file(
            dir.path(),
            "y.npy",
            &npy(
                "<i8",
                false,
                &[2],
                &[4i64, 9]
                    .iter()
                    .flat_map(|v| v.to_le_bytes())
                    .collect::<Vec<_>>(),
            ),
        );
        assert_eq!(read_label_files(&[one]).unwrap(), ["4", "9"]);
        let e = read_label_files(&[path]).unwrap_err().to_string();
        assert!(e.contains("one column, but this one has 2"), "{e}");
    }
}
