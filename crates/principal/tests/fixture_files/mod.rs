//! What the fixture tests share (sklearn_fixtures.rs, probabilistic_fixtures.rs,
//! choose_fixtures.rs, independent_fixtures.rs, r_fixtures.rs): where the fixtures are, which
//! JSON files a directory holds, reading a file and its numbers, and one test per case.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use principal::faer::Mat;
use serde_json::Value;

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

/// The JSON file at `path` (relative to `fixtures/`).
#[allow(dead_code)] // not every fixture test reads files this way
pub fn load_json(path: &str) -> Value {
    let path = fixtures_dir().join(path);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()))
}

/// The case `name` of the fixture directory `dir`, checked to call itself by that name.
#[allow(dead_code)]
pub fn load_case(dir: &str, name: &str) -> Value {
    let v = load_json(&format!("{dir}/{name}.json"));
    assert_eq!(v["name"].as_str(), Some(name), "fixture {name}: its name");
    v
}

/// An array of numbers; `what` names it in the failure.
#[allow(dead_code)]
pub fn vector(v: &Value, what: &str) -> Vec<f64> {
    v.as_array()
        .unwrap_or_else(|| panic!("{what}: not an array"))
        .iter()
        .map(|x| {
            x.as_f64()
                .unwrap_or_else(|| panic!("{what}: {x} is not a number"))
        })
        .collect()
}

/// A matrix of numbers, `null` read as NaN (a missing value).
#[allow(dead_code)]
pub fn matrix_with_holes(v: &Value, what: &str) -> Mat<f64> {
    let rows: Vec<Vec<f64>> = v
        .as_array()
        .unwrap_or_else(|| panic!("{what}: not an array of rows"))
        .iter()
        .map(|r| {
            r.as_array()
                .unwrap_or_else(|| panic!("{what}: a row is not an array"))
                .iter()
                .map(|x| x.as_f64().unwrap_or(f64::NAN))
                .collect()
        })
        .collect();
    Mat::from_fn(rows.len(), rows[0].len(), |i, j| rows[i][j])
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
