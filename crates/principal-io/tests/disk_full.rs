//! A write that runs out of room, as when the disk fills up or a file size limit is hit
//! (RLIMIT_FSIZE, which `ulimit -f` sets): the error names the file and says why, the previous
//! output is left as it was, and no temporary file stays behind, in every output format and for
//! model files.
//!
//! The test runs itself again in a child process under `ulimit -f` (in `sh`), with SIGXFSZ
//! ignored (`trap '' XFSZ`, inherited across exec) so that a write past the limit fails with
//! EFBIG instead of the signal ending the process; the command-line tool ignores the signal
//! itself.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::leftovers;

use principal::faer::Mat;
use principal_io::{save_model, write_matrix};
use tempfile::TempDir;

const CHILD: &str = "PRINCIPAL_IO_FSIZE_CHILD";
const OUTPUTS: [&str; 4] = [
    "codes.npy",
    "codes.csv",
    "codes.parquet",
    "model.safetensors",
];

/// The [`OUTPUTS`] this build writes (Parquet behind its cargo feature).
fn outputs() -> impl Iterator<Item = &'static str> {
    OUTPUTS
        .into_iter()
        .filter(|name| cfg!(feature = "parquet") || !name.ends_with(".parquet"))
}

fn write_output(path: &Path, rows: usize, cols: usize) -> principal_io::Result<()> {
    let x = Mat::from_fn(rows, cols, |i, j| (i * cols + j) as f64 / 7.0 + 0.1);
    if path.extension().is_some_and(|e| e == "safetensors") {
        let model = principal::PcaBuilder::new()
            .build()
            .unwrap()
            .fit(x.as_ref())
            .unwrap();
        save_model(path, &model, None)
    } else {
        write_matrix(path, x.as_ref(), None)
    }
}

/// In the child, under the size limit: every write is larger than the limit and must fail.
fn child(dir: &Path) {
    for name in outputs() {
        let path = dir.join(name);
        // 400 columns: the model's 400×400 components are 1.3 MB, the matrices 3.2 MB.
        let e = write_output(&path, 1000, 400)
            .err()
            .unwrap_or_else(|| panic!("{name} was written past the file size limit"))
            .to_string();
        assert!(
            e.contains(&path.display().to_string()) && e.contains("too large"),
            "{name}: {e}"
        );
        println!("{name}: {e}");
    }
}

#[test]
fn a_size_limit_hit_while_writing_fails_cleanly_in_every_format() {
    if let Some(dir) = std::env::var_os(CHILD) {
        return child(Path::new(&dir));
    }
    let dir = TempDir::new().unwrap();
    // The previous outputs, small and good.
    let mut before = Vec::new();
    for name in outputs() {
        let path = dir.path().join(name);
        write_output(&path, 5, 3).unwrap();
        before.push((path.clone(), std::fs::read(&path).unwrap()));
    }
    let exe: PathBuf = std::env::current_exe().unwrap();
    // 256 blocks: 128 KiB in dash's 512-byte blocks, 256 KiB in bash's 1024-byte ones.
    // This test's name in the test binary: its module path below the crate root.
    let module = module_path!().split_once("::").map_or("", |(_, m)| m);
    let name = format!("{module}::a_size_limit_hit_while_writing_fails_cleanly_in_every_format");
    let output = Command::new("sh")
        .arg("-c")
        .arg(
            "trap '' XFSZ; ulimit -f 256 && exec \"$0\" --exact \"$1\" --nocapture \
             --test-threads=1",
        )
        .arg(&exe)
        .arg(&name)
        .env(CHILD, dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the child failed: {}\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    // Not vacuous: the child ran the writes (the last one, whichever formats are built).
    assert!(
        stdout.contains("model.safetensors: cannot write"),
        "{stdout}"
    );
    for (path, bytes) in before {
        assert_eq!(
            std::fs::read(&path).unwrap(),
            bytes,
            "{} changed",
            path.display()
        );
    }
    assert_eq!(leftovers(dir.path()), Vec::<String>::new());
}
