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
    if let Ok(mut chunks) = principal_io::ChunkReader::open(std::slice::from_ref(&path), &options)
    {
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

/// Reads `data` as a MatrixMarket file (a sparse input) and, when it opens, passes over its
/// rows: every block is a consistent CSR block of the declared width.
pub fn read_sparse(data: &[u8]) {
    use principal::sparse::SparseSource;
    quiet_contained_panics();
    let path = scratch("data.mtx");
    std::fs::write(&path, data).expect("the scratch file can be written");
    if let Ok(mut file) = principal_io::SparseFile::open(&path, 1 << 26) {
        let d = file.n_features();
        let mut rows = 0;
        let _ = file.pass(&mut |block| {
            assert_eq!(block.ncols(), d);
            rows += block.nrows();
            Ok(())
        });
        assert!(rows <= file.n_samples());
    }
}
