//! Measures reading alone: opens the files with the streaming [`FileSource`] that
//! `principal fit` uses for the covariance solver (same chunk size as under the default
//! memory limit: 32 MiB of f64 per chunk, whole blocks of 256 rows) and drains full passes
//! without fitting.
//!
//! `cargo run --release -p principal-io --example read_throughput -- FILE... [--passes N]`
//!
//! prints, for every pass, the rows read, the MB of decoded data handed out (rows × columns ×
//! 4 or 8 bytes, as the fit receives it) and MB/s.

use std::path::PathBuf;
use std::time::Instant;

use principal::{ChunkRef, ChunkSource};
use principal_io::{FileSource, ReadOptions};

/// Rows per chunk as `principal fit` picks them when the memory limit is large (the default):
/// 32 MiB of f64, whole blocks of 256 rows.
fn chunk_rows(d: usize) -> usize {
    ((32usize << 20) / (8 * d.max(1)) / 256 * 256).max(256)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut files = Vec::new();
    let mut passes = 1usize;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--passes" {
            passes = args.next().ok_or("--passes needs a number")?.parse()?;
        } else {
            files.push(PathBuf::from(arg));
        }
    }
    if files.is_empty() {
        return Err("usage: read_throughput FILE... [--passes N]".into());
    }
    let options = ReadOptions::default();
    // The width first, to size chunks as the fit does.
    let d = principal_io::ChunkReader::open(&files, &options)?.n_features();
    let mut source = FileSource::open(&files, &options, chunk_rows(d))?;
    for pass in 1..=passes {
        let started = Instant::now();
        let (mut rows, mut bytes) = (0usize, 0usize);
        source.pass(&mut |chunk| {
            rows += chunk.nrows();
            bytes += match chunk {
                ChunkRef::F32(m) => m.nrows() * m.ncols() * 4,
                ChunkRef::F64(m) => m.nrows() * m.ncols() * 8,
            };
            Ok(())
        })?;
        let seconds = started.elapsed().as_secs_f64();
        let mb = bytes as f64 / 1e6;
        println!(
            "pass {pass}: {rows} rows × {d}, {mb:.1} MB in {seconds:.3} s: {:.0} MB/s",
            mb / seconds
        );
    }
    Ok(())
}
