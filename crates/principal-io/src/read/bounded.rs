//! Sizes that come from files, checked before anything is allocated, and the decoders of other
//! crates kept from taking the process down:
//! - what a file can hold: its length, or for gzip the most its compressed bytes can expand to
//!   ([`GZIP_MAX_RATIO`]);
//! - the machine's memory ([`memory_ceiling`]), for what a well-formed file may still ask;
//! - buffers grown only as data arrives ([`read_growing`]), so a size that lies allocates
//!   about what is really there, and through `try_reserve`, so a failed allocation is an error;
//! - the end of the data checked ([`expect_end`]): compressed streams read to their end, their
//!   trailers verified, and bytes after the data refused;
//! - panics of the Arrow and Parquet decoders contained at the reader boundary ([`contain`]),
//!   quietly: [`panic_is_contained`] tells a panic hook to stay silent.

use std::any::Any;
use std::cell::Cell;
use std::io::{self, Read};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::sync::OnceLock;

use crate::error::{IoError, Result};

/// Deflate's largest expansion: a run of 258 bytes coded in two bits. A gzip file of `n`
/// bytes decompresses to at most `n · 1032` bytes, whatever its header claims.
pub(crate) const GZIP_MAX_RATIO: u64 = 1032;

/// Buffers grow by at most this much ahead of the data that has arrived (or by what they
/// already hold, whichever is more: doubling).
const GROWTH: usize = 1 << 20;

/// The machine's memory in bytes (`MemTotal` of /proc/meminfo), or 64 GiB where that cannot
/// be read. No single buffer sized by a file may exceed it: such a file cannot be read here
/// whatever it holds, and trying would end in the allocator aborting the process.
pub(crate) fn memory_ceiling() -> u64 {
    static CEILING: OnceLock<u64> = OnceLock::new();
    *CEILING.get_or_init(|| {
        std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|text| {
                let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
                let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
                Some(kib * 1024)
            })
            .unwrap_or(64 << 30)
    })
}

/// The error for a buffer of `bytes` sized by the file that the machine cannot hold.
pub(crate) fn check_memory(path: &Path, bytes: u64, what: impl FnOnce() -> String) -> Result<()> {
    let ceiling = memory_ceiling();
    if bytes <= ceiling {
        return Ok(());
    }
    Err(IoError::Format {
        path: path.to_owned(),
        detail: format!(
            "{} needs {bytes} bytes in memory, more than this machine has ({ceiling} bytes)",
            what()
        ),
    })
}

/// Reads up to `len` bytes into `buf` (from its start) and returns how many arrived. `buf` is
/// grown only as data arrives, doubling at most (never more than [`GROWTH`] past what has
/// arrived when that is larger), through `try_reserve`: a `len` taken from a header that lies
/// allocates about what the stream really holds. A `buf` already long enough is used as it is.
pub(crate) fn read_growing(
    reader: &mut dyn Read,
    buf: &mut Vec<u8>,
    len: usize,
) -> io::Result<usize> {
    let mut got = 0;
    while got < len {
        if buf.len() <= got {
            let step = got.max(GROWTH).min(len - got);
            buf.try_reserve(step)
                .map_err(|e| io::Error::new(io::ErrorKind::OutOfMemory, e.to_string()))?;
            buf.resize(got + step, 0);
        }
        let end = buf.len().min(len);
        match reader.read(&mut buf[got..end]) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Checks that `reader` has nothing left after the data: reading on to the end is what makes
/// a gzip decoder verify the last member's trailer (CRC-32 and length) and refuse a cut or a
/// damaged one. `data_end` is the content's length so far, for the message.
pub(crate) fn expect_end(path: &Path, reader: &mut dyn Read, data_end: u64) -> Result<()> {
    let mut probe = [0u8; 64];
    loop {
        match reader.read(&mut probe) {
            Ok(0) => return Ok(()),
            Ok(_) => {
                return Err(IoError::Format {
                    path: path.to_owned(),
                    detail: format!(
                        "unexpected bytes after the end of the data (at byte {data_end}): \
                         the file is damaged or holds something else after it"
                    ),
                });
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(source) => {
                return Err(IoError::Read {
                    path: path.to_owned(),
                    source,
                });
            }
        }
    }
}

thread_local! {
    /// Set while this thread runs a decoder under [`contain`].
    static CONTAINED: Cell<bool> = const { Cell::new(false) };
}

/// Whether a panic on this thread happens inside a decoder whose panics are contained (and
/// turned into an [`IoError`] naming the file): a panic hook that reports bugs should then
/// stay silent, as the panic is about a damaged file, not a bug of ours.
pub fn panic_is_contained() -> bool {
    CONTAINED.with(Cell::get)
}

/// Runs `decode` (a call into the Arrow or Parquet crates) and turns a panic in it into an
/// error naming the file and `what` was being decoded. The crates check most damage and return
/// errors, but some damaged files still make them panic (a slice out of bounds, an unknown
/// type code); the readers check what they can before calling them, and this is the backstop.
// Used by the readers behind the format features only.
#[cfg_attr(
    not(any(feature = "parquet", feature = "arrow", feature = "h5ad")),
    allow(dead_code)
)]
pub(crate) fn contain<T>(
    path: &Path,
    what: impl FnOnce() -> String,
    decode: impl FnOnce() -> Result<T>,
) -> Result<T> {
    let outer = CONTAINED.with(|c| c.replace(true));
    let result = catch_unwind(AssertUnwindSafe(decode));
    CONTAINED.with(|c| c.set(outer));
    result.unwrap_or_else(|payload| {
        Err(IoError::Format {
            path: path.to_owned(),
            detail: format!(
                "{} is damaged: its decoder failed ({})",
                what(),
                panic_message(payload.as_ref())
            ),
        })
    })
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hands out `chunk` bytes per read, from `len` bytes of 7s.
    struct Trickle {
        left: usize,
        chunk: usize,
    }

    impl Read for Trickle {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.left.min(self.chunk).min(buf.len());
            buf[..n].fill(7);
            self.left -= n;
            Ok(n)
        }
    }

    #[test]
    fn buffers_grow_with_the_data_not_with_the_claim() {
        let mut buf = Vec::new();
        let mut r = Trickle {
            left: 3000,
            chunk: 100,
        };
        // A claim of 1 TB over 3,000 bytes.
        let got = read_growing(&mut r, &mut buf, 1 << 40).unwrap();
        assert_eq!(got, 3000);
        assert!(buf.capacity() <= 2 * GROWTH, "{}", buf.capacity());
        assert!(buf[..got].iter().all(|&b| b == 7));
        // Data beyond the claim is left in the stream.
        let mut r = Trickle { left: 50, chunk: 7 };
        let mut buf = vec![0; 10];
        assert_eq!(read_growing(&mut r, &mut buf, 20).unwrap(), 20);
        assert_eq!(r.left, 30);
        // Large data arrives whole, the buffer doubling.
        let mut r = Trickle {
            left: 5 << 20,
            chunk: 1 << 16,
        };
        let mut buf = Vec::new();
        assert_eq!(read_growing(&mut r, &mut buf, 5 << 20).unwrap(), 5 << 20);
        assert_eq!(buf.len(), 5 << 20);
    }

    #[test]
    fn the_end_is_checked() {
        let path = Path::new("x.bin");
        assert!(expect_end(path, &mut io::empty(), 10).is_ok());
        let e = expect_end(path, &mut &b"junk"[..], 10).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("x.bin: unexpected bytes after the end of the data (at byte 10)"),
            "{e}"
        );
    }

    #[test]
    fn panics_are_contained_and_marked() {
        assert!(!panic_is_contained());
        let e = contain(
            Path::new("d.parquet"),
            || "row group 3".into(),
            || -> Result<()> {
                assert!(panic_is_contained());
                panic!("index out of bounds")
            },
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "d.parquet: row group 3 is damaged: its decoder failed (index out of bounds)"
        );
        assert!(!panic_is_contained());
        assert_eq!(contain(Path::new("a"), String::new, || Ok(5)).unwrap(), 5);
    }

    #[test]
    fn the_ceiling_is_the_machines_memory() {
        let c = memory_ceiling();
        assert!(c >= 1 << 28, "{c}");
        assert!(check_memory(Path::new("a"), c, String::new).is_ok());
        let e = check_memory(Path::new("a"), c + 1, || "a row".into()).unwrap_err();
        assert!(e.to_string().contains("a row needs"), "{e}");
    }
}
