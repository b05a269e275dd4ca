//! A `principal` built without a format's cargo feature (`parquet`, `arrow`, `h5ad`) says, for
//! a file of that format, which feature reads or writes it, exits 1 and writes nothing. These
//! tests run only in such builds (`cargo test --no-default-features`).

use crate::common;

use common::Env;

/// A small numeric table with a header, to fit a model of.
#[cfg(not(all(feature = "parquet", feature = "h5ad")))]
const NUMBERS: &str = "a,b,c\n1,2,3\n2,1,5\n4,4,1\n0,3,3\n5,0,2\n";

/// What the message says of `file` in `format`, not built without `feature`.
fn not_built(file: &str, format: &str, feature: &str, verb: &str) -> String {
    format!(
        "{file}: {format} files are not {verb} by this build of principal (built without the \
         cargo feature \"{feature}\"; the default build has it: cargo build --release)"
    )
}

/// The names in the directory that are not in `before`.
fn new_files(env: &Env, before: &[&str]) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(env.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !before.contains(&n.as_str()))
        .collect();
    names.sort();
    names
}

#[cfg(not(feature = "parquet"))]
#[test]
fn parquet_inputs_outputs_and_labels_name_the_missing_feature() {
    let env = Env::new();
    env.write("d.parquet", b"PAR1\0\0\0\0PAR1");
    env.write("x.csv", NUMBERS);
    env.ok(&["fit", "x.csv", "-k", "2", "-o", "m.pca"]);
    let stderr = env.fails(1, &["fit", "d.parquet", "-o", "d.pca"]);
    assert!(
        stderr.contains(&not_built("d.parquet", "Parquet", "parquet", "read")),
        "{stderr}"
    );
    // An output: refused, the old file left alone.
    env.write("codes.parquet", "precious\n");
    let stderr = env.fails(1, &["transform", "m.pca", "x.csv", "-o", "codes.parquet"]);
    assert!(
        stderr.contains("Parquet files are not written by this build of principal")
            && stderr.contains("codes.parquet")
            && stderr.contains("cargo feature \"parquet\""),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read(env.path("codes.parquet")).unwrap(),
        b"precious\n"
    );
    assert_eq!(
        new_files(&env, &["d.parquet", "x.csv", "m.pca", "codes.parquet"]),
        Vec::<String>::new()
    );
}

#[cfg(not(feature = "arrow"))]
#[test]
fn arrow_inputs_name_the_missing_feature() {
    let env = Env::new();
    env.write("d.feather", b"ARROW1\0\0\xff\xff\xff\xff\0\0\0\0ARROW1");
    env.write(
        "d.arrows",
        b"\xff\xff\xff\xff\x10\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0",
    );
    for file in ["d.feather", "d.arrows"] {
        let stderr = env.fails(1, &["fit", file, "-o", "d.pca"]);
        assert!(
            stderr.contains(&not_built(file, "Arrow IPC", "arrow", "read")),
            "{stderr}"
        );
    }
    assert!(!env.path("d.pca").exists());
}

#[cfg(not(feature = "h5ad"))]
#[test]
fn h5ad_inputs_and_into_name_the_missing_feature() {
    let env = Env::new();
    let cells = b"\x89HDF\r\n\x1a\n\0\0\0\0\0\0\0\0";
    env.write("cells.h5ad", cells);
    let read = not_built("cells.h5ad", "AnnData (.h5ad)", "h5ad", "read");
    for extra in [
        &[][..],
        &["--layer", "counts"],
        &["--mask-var", "highly_variable"],
    ] {
        let mut args = vec!["fit", "cells.h5ad", "-o", "c.pca"];
        args.extend(extra);
        let stderr = env.fails(1, &args);
        assert!(stderr.contains(&read), "{extra:?}: {stderr}");
    }
    // `transform --into`: the codes of other data, refused before the file is touched.
    env.write("x.csv", NUMBERS);
    env.ok(&["fit", "x.csv", "-k", "2", "-o", "m.pca"]);
    let stderr = env.fails(1, &["transform", "m.pca", "x.csv", "--into", "cells.h5ad"]);
    assert!(stderr.contains("cargo feature \"h5ad\""), "{stderr}");
    assert_eq!(std::fs::read(env.path("cells.h5ad")).unwrap(), cells);
    assert_eq!(
        new_files(&env, &["cells.h5ad", "x.csv", "m.pca"]),
        Vec::<String>::new()
    );
}
