//! What the fixture tests share (sklearn_fixtures.rs, probabilistic_fixtures.rs,
//! choose_fixtures.rs): where the fixtures are, which JSON files a directory holds, and one test
//! per case.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The repository's `fixtures/` directory.
pub fn fixtures_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures"))
}

/// The names (file stems) of the JSON files in `dir`.
pub fn json_stems(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|p| p.extension().and_then(|e| e.to_str()) == Some("json"))
        .map(|p| {
            p.file_stem()
                .expect("file stem")
                .to_string_lossy()
                .into_owned()
        })
        .collect()
}

/// `fixture_tests!(check: case, case; other_check: case;)`: a test of its own per case (so that
/// a failure names its case) calling its check with the case's name, and `CASES`, every case.
macro_rules! fixture_tests {
    ($($check:ident: $($name:ident),* $(,)?;)*) => {
        /// Every case with a test of its own (so that a failure names its case).
        const CASES: &[&str] = &[$($(stringify!($name)),*),*];
        $($(
            #[test]
            fn $name() {
                $check(stringify!($name));
            }
        )*)*
    };
}
pub(crate) use fixture_tests;
