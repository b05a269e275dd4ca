//! Opening a data file: gzip is detected by its magic bytes and decompressed, and the format of
//! the content is decided from its first bytes, then from the file name. The magic bytes of
//! every format live here, so that detection needs none of the format readers.

use std::fs::File;
use std::io::{self, BufReader, Cursor, Read};
use std::path::Path;

use flate2::bufread::MultiGzDecoder;

use crate::error::{IoError, Result};
use crate::read::bounded::GZIP_MAX_RATIO;

/// NPY's magic bytes (`\x93NUMPY`), which also start the files this crate writes.
pub(crate) const NPY_MAGIC: &[u8] = b"\x93NUMPY";
/// IDX element type codes (the third byte of the magic): u8, i8, i16, i32, f32, f64.
pub(crate) const IDX_TYPE_CODES: [u8; 6] = [0x08, 0x09, 0x0B, 0x0C, 0x0D, 0x0E];

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
const PARQUET_MAGIC: &[u8] = b"PAR1";
const ARROW_MAGIC: &[u8] = b"ARROW1";
/// An Arrow IPC stream starts with a continuation marker before its schema message.
const ARROW_STREAM_MAGIC: &[u8] = &[0xff, 0xff, 0xff, 0xff];
const FEATHER_V1_MAGIC: &[u8] = b"FEA1";
/// The first 6 bytes of HDF5's signature (`\x89HDF\r\n\x1a\n`), as many as are peeked.
const HDF5_MAGIC: &[u8] = b"\x89HDF\r\n";
/// Large reads: data files are read sequentially, often from slow disks or gzip.
const BUFFER: usize = 1 << 16;

/// The format of a file's (decompressed) content.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    /// Delimited text with this delimiter.
    Text(u8),
    Npy,
    Idx,
    Parquet,
    ArrowFile,
    ArrowStream,
    /// HDF5: an AnnData `.h5ad` file.
    Hdf5,
}

/// A file opened for reading: decompressed if needed, its first bytes already classified.
pub(crate) struct Opened {
    pub reader: Box<dyn Read + Send>,
    pub format: Format,
    /// The file's size when it is a regular, uncompressed file (then truncation is checked up
    /// front); `None` for gzip and pipes, whose length shows only at the end.
    pub file_len: Option<u64>,
    /// Gzip-compressed: sizes in messages are of the decompressed content.
    pub compressed: bool,
    /// The most bytes the content can hold: the file's size, or for gzip the most its
    /// compressed bytes expand to ([`GZIP_MAX_RATIO`] times); `None` for pipes.
    pub max_len: Option<u64>,
}

/// Reads until `buf` is full or the stream ends; returns the bytes read.
pub(crate) fn read_full(reader: &mut dyn Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match reader.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Reads the first `n` bytes and returns them with a reader that yields them again.
fn peek<R: Read + Send + 'static>(
    mut reader: R,
    n: usize,
) -> io::Result<(Vec<u8>, Box<dyn Read + Send>)> {
    let mut prefix = vec![0; n];
    let got = read_full(&mut reader, &mut prefix)?;
    prefix.truncate(got);
    Ok((prefix.clone(), Box::new(Cursor::new(prefix).chain(reader))))
}

/// The lower-case file name without a trailing `.gz`.
fn inner_name(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    name.strip_suffix(".gz").map(str::to_owned).unwrap_or(name)
}

/// Whether bytes start like an IDX file: two zero bytes, a known type code, a dimension count.
fn is_idx_magic(b: &[u8]) -> bool {
    b.len() >= 4 && b[0] == 0 && b[1] == 0 && IDX_TYPE_CODES.contains(&b[2]) && b[3] >= 1
}

/// Opens `path`, decompresses gzip (detected by magic bytes, whatever the name), and decides
/// the format from the content's first bytes, then the extension.
pub(crate) fn open(path: &Path) -> Result<Opened> {
    let open_err = |source| IoError::Open {
        path: path.to_owned(),
        source,
    };
    let read_err = |source| IoError::Read {
        path: path.to_owned(),
        source,
    };
    let file = File::open(path).map_err(open_err)?;
    let meta = file.metadata().map_err(open_err)?;
    if meta.is_dir() {
        return Err(open_err(io::Error::other("it is a directory")));
    }
    let (magic, raw) = peek(BufReader::with_capacity(BUFFER, file), 2).map_err(read_err)?;
    let compressed = magic == GZIP_MAGIC;
    let stream: Box<dyn Read + Send> = if compressed {
        Box::new(BufReader::with_capacity(
            BUFFER,
            MultiGzDecoder::new(BufReader::new(raw)),
        ))
    } else {
        raw
    };
    let (head, reader) = peek(stream, 6).map_err(read_err)?;
    let name = inner_name(path);
    let file_len = (!compressed && meta.is_file()).then_some(meta.len());
    let max_len = meta.is_file().then(|| {
        if compressed {
            meta.len().saturating_mul(GZIP_MAX_RATIO)
        } else {
            meta.len()
        }
    });
    let format_err = |detail: &str| {
        Err(IoError::Format {
            path: path.to_owned(),
            detail: detail.to_owned(),
        })
    };
    let arrow_name = [".arrow", ".arrows", ".feather", ".ipc"]
        .iter()
        .any(|e| name.ends_with(e));
    let format = if head.starts_with(NPY_MAGIC) {
        Format::Npy
    } else if is_idx_magic(&head) {
        Format::Idx
    } else if head.starts_with(PARQUET_MAGIC) || head.starts_with(ARROW_MAGIC) {
        // Both are read from their footer: they need a seekable file.
        if compressed {
            return format_err(
                "gzip-compressed Parquet and Arrow files cannot be read (their data is found \
                 through a footer, which needs seeking): decompress the file first; Parquet and \
                 Arrow compress their data themselves",
            );
        }
        if head.starts_with(PARQUET_MAGIC) {
            Format::Parquet
        } else {
            Format::ArrowFile
        }
    } else if head.starts_with(HDF5_MAGIC) {
        // Read through HDF5's object tree, which needs seeking.
        if compressed {
            return format_err(
                "gzip-compressed HDF5 (.h5ad) files cannot be read (HDF5 is read by seeking): \
                 decompress the file first; HDF5 compresses its datasets itself",
            );
        }
        Format::Hdf5
    } else if name.ends_with(".h5ad") || name.ends_with(".h5") {
        return format_err(
            "the name says HDF5 (.h5ad) but the content does not start with the HDF5 signature",
        );
    } else if head.starts_with(ARROW_STREAM_MAGIC) {
        Format::ArrowStream
    } else if name.ends_with(".parquet") || name.ends_with(".pq") {
        return format_err(
            "the name says Parquet but the content does not start with the Parquet magic bytes PAR1",
        );
    } else if arrow_name && head.starts_with(FEATHER_V1_MAGIC) {
        return format_err(
            "Feather version 1 files cannot be read; rewrite it as Feather version 2 (Arrow IPC), \
             e.g. with pyarrow.feather.write_feather",
        );
    } else if arrow_name {
        return format_err(
            "the name says Arrow IPC but the content starts neither with the Arrow file magic \
             bytes ARROW1 nor as an Arrow IPC stream",
        );
    } else if name.ends_with(".npy") {
        return Err(IoError::Format {
            path: path.to_owned(),
            detail: "the name ends in .npy but the content does not start with the NPY magic bytes"
                .into(),
        });
    } else if name.ends_with(".tsv") || name.ends_with(".tab") {
        Format::Text(b'\t')
    } else if name.ends_with(".csv") {
        Format::Text(b',')
    } else {
        // .txt and other names: tab-separated when the first line has tabs and no comma.
        let (line, reader) = peek(reader, 64 * 1024).map_err(read_err)?;
        let first = line.split(|&b| b == b'\n').next().unwrap_or(&[]);
        let tab = first.contains(&b'\t') && !first.contains(&b',');
        return Ok(Opened {
            reader,
            format: Format::Text(if tab { b'\t' } else { b',' }),
            file_len,
            compressed,
            max_len,
        });
    };
    Ok(Opened {
        reader,
        format,
        file_len,
        compressed,
        max_len,
    })
}
