//! A build without a format's cargo feature (`parquet`, `arrow`, `h5ad`) still recognises its
//! files, by magic bytes or extension, and says which feature reads them: through every door a
//! file comes in (a read, a part of a data set, a labels file, an `.h5ad` edit). These tests
//! run only in such builds (`cargo test --no-default-features`).

use std::path::{Path, PathBuf};

use tempfile::TempDir;

/// `bytes` written at `dir/name`.
fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// The message for `path` of `format`, not built without `feature`.
fn not_built(path: &Path, format: &str, feature: &str, verb: &str) -> String {
    format!(
        "{}: {format} files are not {verb} by this build of principal (built without the cargo \
         feature \"{feature}\"; the default build has it: cargo build --release)",
        path.display()
    )
}

/// The error of reading `path` whole.
fn read_error(path: &Path, options: &principal_io::ReadOptions) -> String {
    principal_io::read_table(&[path.to_owned()], options)
        .unwrap_err()
        .to_string()
}

#[cfg(not(feature = "parquet"))]
#[test]
fn parquet_files_name_the_missing_feature() {
    use principal_io::{ChunkReader, Part, ReadOptions, read_label_files};
    let dir = TempDir::new().unwrap();
    let options = ReadOptions::default();
    // By the magic bytes, whatever the name; and by the name.
    for name in ["d.parquet", "d.pq", "part-0"] {
        let p = write(dir.path(), name, b"PAR1\0\0\0\0PAR1");
        let expected = not_built(&p, "Parquet", "parquet", "read");
        assert_eq!(read_error(&p, &options), expected);
        // A part of a data set is cut at Parquet's row groups.
        let part = ChunkReader::open_part(
            std::slice::from_ref(&p),
            &options,
            Part { rank: 1, size: 2 },
        );
        assert_eq!(part.err().unwrap().to_string(), expected);
        assert_eq!(
            read_label_files(std::slice::from_ref(&p))
                .unwrap_err()
                .to_string(),
            expected
        );
    }
}

#[cfg(not(feature = "arrow"))]
#[test]
fn arrow_files_and_streams_name_the_missing_feature() {
    let dir = TempDir::new().unwrap();
    let options = principal_io::ReadOptions::default();
    let file = b"ARROW1\0\0\xff\xff\xff\xff\0\0\0\0ARROW1";
    let stream = b"\xff\xff\xff\xff\x10\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0";
    for (name, bytes) in [
        ("d.arrow", &file[..]),
        ("d.feather", &file[..]),
        ("d", &file[..]),
        ("d.arrows", &stream[..]),
        ("d.ipc", &stream[..]),
    ] {
        let p = write(dir.path(), name, bytes);
        assert_eq!(
            read_error(&p, &options),
            not_built(&p, "Arrow IPC", "arrow", "read"),
            "{name}"
        );
    }
}

#[cfg(not(feature = "h5ad"))]
#[test]
fn h5ad_files_name_the_missing_feature_for_reading_and_writing() {
    use principal_io::{ReadOptions, ScanpyPca, is_sparse_input_with, write_scanpy_pca};
    let dir = TempDir::new().unwrap();
    let bytes = b"\x89HDF\r\n\x1a\n\0\0\0\0\0\0\0\0";
    for name in ["cells.h5ad", "cells.h5", "cells"] {
        let p = write(dir.path(), name, bytes);
        let expected = not_built(&p, "AnnData (.h5ad)", "h5ad", "read");
        for options in [
            ReadOptions::default(),
            ReadOptions {
                layer: Some("counts".into()),
                ..Default::default()
            },
            ReadOptions {
                mask_var: Some("highly_variable".into()),
                ..Default::default()
            },
        ] {
            assert_eq!(read_error(&p, &options), expected, "{name} {options:?}");
            // Not taken for a sparse input: the dense reader then gives the error above.
            assert!(!is_sparse_input_with(&p, &options));
        }
        // `transform --into`: refused, the file left as it was.
        let scores = faer::Mat::<f64>::zeros(2, 1);
        let components = faer::Mat::<f64>::zeros(1, 1);
        let genes = vec!["g".to_owned()];
        let pca = ScanpyPca {
            scores: scores.as_ref(),
            components: components.as_ref(),
            feature_names: &genes,
            variance: &[1.0],
            variance_ratio: &[1.0],
            mask_var: None,
            layer: None,
            zero_center: true,
        };
        assert_eq!(
            write_scanpy_pca(&p, &pca).unwrap_err().to_string(),
            not_built(&p, "AnnData (.h5ad)", "h5ad", "written")
        );
        assert_eq!(std::fs::read(&p).unwrap(), bytes);
    }
}
