//! What every fuzz target does: write the input to a file of a given name (the readers read
//! files; the name decides nothing but a text file's delimiter, the content decides the
//! format) and read it through the real readers. An error is a good outcome; a panic that the
//! readers do not contain, an abort, a timeout or an allocation past libFuzzer's limit is a
//! finding.

use std::path::PathBuf;
use std::sync::Once;

use principal_io::{
    load_model, load_statistics, panic_is_contained, read_label_files, read_table, Missing,
    ReadOptions,
};

/// A scratch file of this process with the given name.
fn scratch(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("principal-fuzz-{}-{name}", std::process::id()))
}

/// libfuzzer-sys turns every panic into an abort, also those the readers catch at their
/// boundary (inside the Arrow and Parquet decoders) and report as errors: those are let through.
fn quiet_contained_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let fuzzer_hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !panic_is_contained() {
                fuzzer_hook(info);
            }
        }));
    });
}

/// Reads `data` as a data file named `name`, whole and then in chunks.
pub fn read_data(name: &str, data: &[u8]) {
    read_data_with(name, data, Missing::Reject);
}

/// [`read_data`] with missing values read as NaN (empty cells, `nan`, Parquet and Arrow nulls)
/// when `missing` says so.
pub fn read_data_with(name: &str, data: &[u8], missing: Missing) {
    quiet_contained_panics();
    let path = scratch(name);
    std::fs::write(&path, data).expect("the scratch file can be written");
    let options = ReadOptions {
        missing,
        ..ReadOptions::default()
    };
    if let Ok(t) = read_table(std::slice::from_ref(&path), &options) {
        // A read that succeeds gives a consistent matrix.
        let (n, d) = (t.data.nrows(), t.data.ncols());
        assert!(n > 0 && d > 0, "{n}×{d}");
    }
    if let Ok(mut chunks) = principal_io::ChunkReader::open(std::slice::from_ref(&path), &options) {
        while let Ok(Some(chunk)) = chunks.next_chunk(7) {
            assert!(chunk.nrows() <= 7);
        }
    }
}

/// Reads `data` as a model file.
pub fn read_model(data: &[u8]) {
    quiet_contained_panics();
    let path = scratch("model.safetensors");
    std::fs::write(&path, data).expect("the scratch file can be written");
    let _ = load_model(&path);
}

/// Reads `data` as a label file (IDX labels, text, one-column NPY, Parquet or Arrow, by
/// content).
pub fn read_labels(data: &[u8]) {
    quiet_contained_panics();
    let path = scratch("labels.csv");
    std::fs::write(&path, data).expect("the scratch file can be written");
    let _ = read_label_files(std::slice::from_ref(&path));
}

/// Reads `data` as a statistics file.
pub fn read_statistics(data: &[u8]) {
    quiet_contained_panics();
    let path = scratch("part.stats");
    std::fs::write(&path, data).expect("the scratch file can be written");
    let _ = load_statistics(&path);
}

/// Passes over the rows of an open sparse input: every block is a consistent CSR block of the
/// declared width, and no more rows come than the file declares.
fn pass_all(file: &mut principal_io::SparseFile) {
    use principal::sparse::SparseSource;
    let d = file.n_features();
    let mut rows = 0;
    let _ = file.pass(&mut |block| {
        assert_eq!(block.ncols(), d);
        rows += block.nrows();
        Ok(())
    });
    assert!(rows <= file.rows().len() && file.rows().len() <= file.n_samples());
}

/// Reads `data` as a MatrixMarket file (a sparse input) and, when it opens, passes over its
/// rows.
pub fn read_sparse(data: &[u8]) {
    quiet_contained_panics();
    let path = scratch("data.mtx");
    std::fs::write(&path, data).expect("the scratch file can be written");
    if let Ok(mut file) = principal_io::SparseFile::open(&path, 1 << 26) {
        pass_all(&mut file);
    }
}

/// Reads `data` as a 10x Genomics directory: the bytes up to the first NUL are
/// `matrix.mtx` (genes × cells), up to the second `features.tsv`, the rest `barcodes.tsv`; a
/// file with no bytes left for it is absent. When the directory opens, its rows are passed
/// over.
pub fn read_tenx(data: &[u8]) {
    quiet_contained_panics();
    let dir = scratch("10x");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("the scratch directory can be made");
    let mut parts = data.splitn(3, |&b| b == 0);
    for name in ["matrix.mtx", "features.tsv", "barcodes.tsv"] {
        if let Some(part) = parts.next() {
            std::fs::write(dir.join(name), part).expect("the scratch file can be written");
        }
    }
    if let Ok(mut file) = principal_io::SparseFile::open(&dir, 1 << 26) {
        if let Some(names) = file.sample_names() {
            assert_eq!(names.len(), file.rows().len());
        }
        pass_all(&mut file);
    }
}

/// Reads `data` as an AnnData `.h5ad` file through every reader of one: the dense table
/// (whole and in chunks of 7 rows, which also reads `obs`/`var`'s names), the sparse reader
/// (every pass of its blocks, streamed and held in memory; with `--layer counts` and
/// `--mask-var hv` too), and, when it opens, the edit `transform --into` makes (a
/// one-component PCA of zeros written into the file, atomically).
pub fn read_h5ad(data: &[u8]) {
    quiet_contained_panics();
    read_data("data.h5ad", data);
    let path = scratch("data.h5ad");
    std::fs::write(&path, data).expect("the scratch file can be written");
    let layer = ReadOptions {
        layer: Some("counts".into()),
        ..ReadOptions::default()
    };
    let mask = ReadOptions {
        mask_var: Some("hv".into()),
        ..ReadOptions::default()
    };
    let _ = read_table(std::slice::from_ref(&path), &layer);
    let mut opened = None;
    for options in [&ReadOptions::default(), &mask] {
        if let Ok(mut file) = principal_io::SparseFile::open_with(&path, options, 1 << 26) {
            pass_all(&mut file);
            if file.hold_within(1 << 26).is_ok() {
                pass_all(&mut file);
            }
            opened.get_or_insert((file.n_samples(), file.feature_names().map(<[_]>::to_vec)));
        }
    }
    let _ = principal_io::SparseFile::open_part(&path, &ReadOptions::default(), 1 << 26, 1, 2)
        .map(|mut file| pass_all(&mut file));
    // The edit of `transform --into`, on a file the readers took.
    let (n, names) = match opened {
        Some((n, Some(names))) => (n, names),
        _ => match read_table(std::slice::from_ref(&path), &ReadOptions::default()) {
            Ok(t) => match t.column_names {
                Some(names) => (t.data.nrows(), names),
                None => return,
            },
            Err(_) => return,
        },
    };
    let scores = principal_io::Mat::<f64>::zeros(n, 1);
    let components = principal_io::Mat::<f64>::zeros(1, names.len());
    let pca = principal_io::ScanpyPca {
        scores: scores.as_ref(),
        components: components.as_ref(),
        feature_names: &names,
        variance: &[1.0],
        variance_ratio: &[1.0],
        mask_var: None,
        layer: None,
        zero_center: true,
    };
    let _ = principal_io::write_scanpy_pca(&path, &pca);
}
