//! Inputs as given on a command line: files, directories of shards, and glob patterns.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::{IoError, Result};

/// The data extensions a directory's files are picked by (also with `.gz` after them), for
/// messages.
pub(crate) const DATA_EXTENSIONS: &str = ".csv, .tsv, .tab, .txt, .npy, .parquet, .pq, .arrow, .arrows, .feather, .ipc (text and NPY also .gz), and IDX names (…-idx3-ubyte)";

/// Whether a file name says a data format this crate reads.
fn is_data_name(name: &str) -> bool {
    let name = name.to_lowercase();
    if name.starts_with('.') {
        // Hidden files: editors' swap files, `.crc` checksums, our own temporary files.
        return false;
    }
    if name.contains("idx") && name.contains("ubyte") {
        return true;
    }
    let inner = name.strip_suffix(".gz").unwrap_or(&name);
    let Some((_, ext)) = inner.rsplit_once('.') else {
        return false;
    };
    let plain = matches!(ext, "csv" | "tsv" | "tab" | "txt" | "npy");
    let columnar = matches!(
        ext,
        "parquet" | "pq" | "arrow" | "arrows" | "feather" | "ipc"
    );
    plain || (columnar && inner.len() == name.len())
}

fn is_pattern(path: &Path) -> bool {
    path.to_string_lossy().contains(['*', '?', '['])
}

/// Expands the inputs of one data set into the files to read, in order:
/// - a directory: its regular files (not recursing) whose names say a data format (`.csv`,
///   `.tsv`, `.tab`, `.txt`, `.npy`, those with `.gz`, `.parquet`, `.pq`, `.arrow`, `.arrows`,
///   `.feather`, `.ipc`, IDX names such as `train-images-idx3-ubyte`), hidden files left out,
///   sorted by name; none is an error;
/// - a path with `*`, `?` or `[` that does not exist as it is: a glob pattern (`**` recurses),
///   its matching regular files in sorted order; no match is an error naming the pattern;
/// - anything else (a file, or a missing path whose error shows when it is opened): unchanged.
///
/// [`ChunkReader::open`](crate::ChunkReader::open), [`read_table`](crate::read_table) and
/// [`FileSource::open`](crate::FileSource::open) call it, so they all accept directories and
/// patterns; expanding twice changes nothing.
pub fn expand_inputs(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::with_capacity(paths.len());
    for path in paths {
        if path.is_dir() {
            let open_err = |source| IoError::Open {
                path: path.clone(),
                source,
            };
            let mut files = Vec::new();
            for entry in fs::read_dir(path).map_err(open_err)? {
                let entry = entry.map_err(open_err)?;
                let name = entry.file_name();
                let file = entry.path();
                // `metadata` follows symbolic links: a link to a data file counts.
                if is_data_name(&name.to_string_lossy()) && file.is_file() {
                    files.push(file);
                }
            }
            if files.is_empty() {
                return Err(IoError::EmptyDirectory {
                    path: path.clone(),
                    allowed: DATA_EXTENSIONS,
                });
            }
            files.sort();
            out.extend(files);
        } else if is_pattern(path) && !path.exists() {
            let pattern = path.to_string_lossy().into_owned();
            let options = glob::MatchOptions {
                require_literal_leading_dot: true,
                ..Default::default()
            };
            let matches = glob::glob_with(&pattern, options).map_err(|e| IoError::BadPattern {
                pattern: pattern.clone(),
                detail: e.to_string(),
            })?;
            let mut files = Vec::new();
            for m in matches {
                let file = m.map_err(|e| IoError::Open {
                    path: e.path().to_owned(),
                    source: e.into(),
                })?;
                if file.is_file() {
                    files.push(file);
                }
            }
            if files.is_empty() {
                return Err(IoError::NoMatch { pattern });
            }
            files.sort();
            out.extend(files);
        } else {
            out.push(path.clone());
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use tempfile::TempDir;

    use super::*;
    use crate::test_util::*;

    #[test]
    fn data_names() {
        for yes in [
            "a.csv",
            "A.CSV.GZ",
            "b.tsv",
            "c.npy",
            "c.npy.gz",
            "part-0001.snappy.parquet",
            "x.pq",
            "e.arrow",
            "e.feather",
            "e.ipc",
            "train-images-idx3-ubyte",
            "t10k-labels.idx1-ubyte.gz",
        ] {
            assert!(is_data_name(yes), "{yes}");
        }
        for no in [
            "README.md",
            "_SUCCESS",
            ".part-0001.parquet.crc",
            ".a.csv.tmp-12-0",
            "x.parquet.gz",
            "model.safetensors",
            "noext",
        ] {
            assert!(!is_data_name(no), "{no}");
        }
    }

    #[test]
    fn directories_give_their_data_files_sorted() {
        let dir = TempDir::new().unwrap();
        let d = dir.path();
        for name in [
            "b.csv",
            "a.csv",
            "c.npy",
            "notes.md",
            ".hidden.csv",
            "_SUCCESS",
        ] {
            write_file(d, name, b"1\n");
        }
        std::fs::create_dir(d.join("sub.csv")).unwrap();
        let plain = d.join("z.tsv");
        let got = expand_inputs(&[d.to_owned(), plain.clone()]).unwrap();
        assert_eq!(
            got,
            vec![d.join("a.csv"), d.join("b.csv"), d.join("c.npy"), plain]
        );
        assert_eq!(expand_inputs(&got).unwrap(), got, "idempotent");
        let empty = d.join("empty");
        std::fs::create_dir(&empty).unwrap();
        let e = err_of(expand_inputs(std::slice::from_ref(&empty)));
        assert!(
            e.starts_with(&format!(
                "directory {} holds no data files",
                empty.display()
            )),
            "{e}"
        );
    }

    #[test]
    fn patterns_give_their_matches_sorted() {
        let dir = TempDir::new().unwrap();
        let d = dir.path();
        for name in ["s10.csv", "s02.csv", "s01.csv", "other.csv", ".s03.csv"] {
            write_file(d, name, b"1\n");
        }
        std::fs::create_dir(d.join("s99.csv")).unwrap();
        let got = expand_inputs(&[d.join("s*.csv")]).unwrap();
        assert_eq!(
            got,
            vec![d.join("s01.csv"), d.join("s02.csv"), d.join("s10.csv")]
        );
        let got = expand_inputs(&[d.join("s0?.csv"), d.join("other.csv")]).unwrap();
        assert_eq!(
            got,
            vec![d.join("s01.csv"), d.join("s02.csv"), d.join("other.csv")]
        );
        let pattern = d.join("nothing*.parquet");
        let e = err_of(expand_inputs(std::slice::from_ref(&pattern)));
        assert_eq!(
            e,
            format!("no file matches the pattern {}", pattern.display())
        );
        let e = err_of(expand_inputs(&[d.join("bad[.csv")]));
        assert!(
            e.contains("bad[.csv") && e.contains("not a valid pattern"),
            "{e}"
        );
        // A file whose name has a pattern character is taken as it is.
        let odd = write_file(d, "odd[1].csv", b"1\n");
        assert_eq!(
            expand_inputs(std::slice::from_ref(&odd)).unwrap(),
            vec![odd]
        );
    }
}
