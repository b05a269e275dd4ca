//! The harness of the end-to-end tests: a temporary directory per test, the real `principal`
//! executable run in it, and readers for what it writes. Each `tests/<topic>.rs` file includes
//! it with `mod common;` and uses what it needs.
#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;
use tempfile::TempDir;

pub fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../data")
        .join(name)
}

pub fn iris() -> String {
    data("iris.csv").display().to_string()
}

/// A temporary working directory and the commands run in it.
pub struct Env {
    pub dir: TempDir,
}

impl Env {
    pub fn new() -> Self {
        Env {
            dir: tempfile::tempdir().expect("temporary directory"),
        }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn write(&self, name: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let path = self.path(name);
        fs::write(&path, contents).expect("write test file");
        path
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.run_with_env(&[], args)
    }

    /// [`Env::run`] with environment variables set (`Some`) or removed (`None`).
    pub fn run_with_env(&self, vars: &[(&str, Option<&str>)], args: &[&str]) -> Output {
        let mut command = assert_cmd::Command::new(env!("CARGO_BIN_EXE_principal"));
        command.current_dir(self.dir.path());
        for &(name, value) in vars {
            match value {
                Some(value) => command.env(name, value),
                None => command.env_remove(name),
            };
        }
        command.args(args).output().expect("run principal")
    }

    /// Runs a command that must succeed; returns its stderr.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            out.status.success(),
            "principal {args:?} failed with {:?}:\n{stderr}",
            out.status.code()
        );
        stderr
    }

    /// Runs a command that must fail with `code`; returns its stderr, checked to be one clean
    /// error message (no panic, no backtrace).
    pub fn fails(&self, code: i32, args: &[&str]) -> String {
        let out = self.run(args);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(
            out.status.code(),
            Some(code),
            "principal {args:?}: wrong exit code; stderr:\n{stderr}"
        );
        assert!(
            stderr.starts_with("error: "),
            "no `error: ` prefix:\n{stderr}"
        );
        assert_eq!(
            stderr.matches("error:").count(),
            1,
            "error printed more than once:\n{stderr}"
        );
        for bad in ["panicked", "RUST_BACKTRACE", "internal error", "Backtrace"] {
            assert!(!stderr.contains(bad), "{bad:?} in stderr:\n{stderr}");
        }
        stderr
    }

    pub fn inspect(&self, model: &str) -> Value {
        let out = self.run(&["inspect", model, "--json"]);
        assert!(
            out.status.success(),
            "inspect failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("inspect --json prints one JSON object")
    }

    /// A CSV written by principal: (header, rows).
    pub fn read_csv(&self, name: &str) -> (Option<Vec<String>>, Vec<Vec<f64>>) {
        parse_csv(&fs::read_to_string(self.path(name)).expect("read output CSV"))
    }
}

pub fn parse_csv(text: &str) -> (Option<Vec<String>>, Vec<Vec<f64>>) {
    let mut lines = text.lines().filter(|l| !l.is_empty()).peekable();
    let first: Vec<String> = lines
        .peek()
        .expect("non-empty CSV")
        .split(',')
        .map(str::to_string)
        .collect();
    let header = if first.iter().any(|c| c.parse::<f64>().is_err()) {
        lines.next();
        Some(first)
    } else {
        None
    };
    let rows = lines
        .map(|l| {
            l.split(',')
                .map(|c| c.parse::<f64>().expect("a number"))
                .collect()
        })
        .collect();
    (header, rows)
}

pub fn numbers(value: &Value) -> Vec<f64> {
    value
        .as_array()
        .expect("array")
        .iter()
        .map(|v| v.as_f64().expect("number"))
        .collect()
}

pub fn matrix(value: &Value) -> Vec<Vec<f64>> {
    value
        .as_array()
        .expect("array of rows")
        .iter()
        .map(numbers)
        .collect()
}

/// Iris as read from the shipped CSV: (feature names, 150×4 rows).
pub fn iris_rows() -> (Vec<String>, Vec<Vec<f64>>) {
    let text = fs::read_to_string(data("iris.csv")).expect("iris.csv");
    let mut lines = text.lines();
    let header = lines
        .next()
        .unwrap()
        .split(',')
        .take(4)
        .map(str::to_string)
        .collect();
    let rows = lines
        .filter(|l| !l.is_empty())
        .map(|l| l.split(',').take(4).map(|c| c.parse().unwrap()).collect())
        .collect();
    (header, rows)
}

pub fn to_csv(header: Option<&[String]>, rows: &[Vec<f64>]) -> String {
    let mut s = String::new();
    if let Some(h) = header {
        s += &h.join(",");
        s.push('\n');
    }
    for row in rows {
        s += &row
            .iter()
            .map(|v| v.to_string())
            .collect::<Vec<_>>()
            .join(",");
        s.push('\n');
    }
    s
}

/// An NPY file (version 1.0, C order) holding `rows` as little-endian f64 or f32.
pub fn npy(rows: &[Vec<f64>], f32: bool) -> Vec<u8> {
    let (n, d) = (rows.len(), rows[0].len());
    let descr = if f32 { "<f4" } else { "<f8" };
    let mut header =
        format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': ({n}, {d}), }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    for v in rows.iter().flatten() {
        if f32 {
            bytes.extend_from_slice(&(*v as f32).to_le_bytes());
        } else {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
    }
    bytes
}

/// Deterministic pseudo-random numbers in [0, 1) (a 64-bit LCG; no dependency needed).
pub struct Lcg(pub u64);

impl Lcg {
    pub fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

pub fn assert_close(found: &[f64], expected: &[f64], tol: f64, what: &str) {
    assert_eq!(found.len(), expected.len(), "{what}: lengths differ");
    for (i, (a, b)) in found.iter().zip(expected).enumerate() {
        assert!(
            (a - b).abs() <= tol,
            "{what}[{i}]: {a} vs {b} (tolerance {tol})"
        );
    }
}

/// Two `inspect --json` outputs agree: equal non-float fields, floats to `tol` relative.
pub fn assert_same_model(a: &Value, b: &Value, tol: f64) {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) if x.is_f64() || y.is_f64() => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            assert!(
                (x - y).abs() <= tol * x.abs().max(y.abs()).max(1.0),
                "{x} vs {y}"
            );
        }
        (Value::Array(x), Value::Array(y)) => {
            assert_eq!(x.len(), y.len());
            x.iter()
                .zip(y)
                .for_each(|(x, y)| assert_same_model(x, y, tol));
        }
        (Value::Object(x), Value::Object(y)) => {
            assert_eq!(x.keys().collect::<Vec<_>>(), y.keys().collect::<Vec<_>>());
            x.iter().for_each(|(k, v)| assert_same_model(v, &y[k], tol));
        }
        _ => assert_eq!(a, b),
    }
}

pub const IRIS_EIGENVALUES: [f64; 4] = [4.22824171, 0.24267075, 0.07820950, 0.02383509];
pub const IRIS_PC1: [f64; 4] = [-0.361387, 0.084523, -0.856671, -0.358289];
