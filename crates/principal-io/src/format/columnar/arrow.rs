//! Arrow IPC: files (Feather v2) and streams. The framing is read here, message by message,
//! and every length the file declares is checked before anything is allocated or handed to the
//! decoder of `arrow-ipc`, which trusts them (it aborts on a huge declared length and panics on
//! a buffer out of bounds):
//! - a message's metadata and body are read as they arrive, within what the file can hold;
//! - a record batch's field nodes and buffers must lie within its body, and a compressed
//!   buffer's declared decompressed length within what its compressed bytes can expand to;
//! - a stream must end with the end-of-stream marker, and nothing may follow it (for gzip this
//!   is also what verifies the trailer);
//! - a file is read from the front as the stream it holds, and its footer must agree with it:
//!   the same schema, and a block for every record batch, at its offset and of its lengths.
//!
//! What `arrow-ipc` still panics on (a schema with an unknown type code) is contained and
//! reported with the batch.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_buffer::Buffer;
use arrow_ipc as ipc;
use arrow_schema::{Schema, SchemaRef};

use crate::error::{IoError, Result};
use crate::format::columnar::{Batches, ColumnarSource, format_error, select};
use crate::read::bounded::{contain, expect_end, memory_ceiling, read_growing};
use crate::read::open::{Opened, read_full};
use crate::read::options::ReadOptions;

const ARROW_MAGIC: &[u8; 6] = b"ARROW1";
const CONTINUATION: [u8; 4] = [0xff; 4];
/// LZ4's largest expansion: a match grows by 255 bytes per byte of its length.
const LZ4_MAX_RATIO: u64 = 256;
/// Zstandard's largest expansion: a run-length block of 128 KiB coded in 4 bytes.
const ZSTD_MAX_RATIO: u64 = 32_768;

/// Opens an Arrow IPC file (Feather v2): the footer is read and checked, then the stream it
/// holds is read from the front with only the selected columns decoded.
pub(crate) fn open_file(path: &Path, options: &ReadOptions) -> Result<ColumnarSource> {
    let bad =
        |detail: String| format_error(path, format!("not a readable Arrow IPC file: {detail}"));
    let read_err = |source| IoError::Read {
        path: path.to_owned(),
        source,
    };
    let mut file = File::open(path).map_err(|source| IoError::Open {
        path: path.to_owned(),
        source,
    })?;
    let len = file.metadata().map_err(read_err)?.len();
    if len < 18 {
        return Err(bad(format!(
            "{len} bytes are too few for the magic and a footer"
        )));
    }
    let mut tail = [0u8; 10];
    file.seek(SeekFrom::Start(len - 10)).map_err(read_err)?;
    if read_full(&mut file, &mut tail).map_err(read_err)? < 10 || &tail[4..] != ARROW_MAGIC {
        return Err(bad(
            "it does not end with the magic bytes ARROW1 (cut short or damaged)".into(),
        ));
    }
    let footer_len = i32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]);
    let footer_start = match u64::try_from(footer_len) {
        Ok(n) if n > 0 && n <= len - 18 => len - 10 - n,
        _ => {
            return Err(bad(format!(
                "the footer length {footer_len} does not fit in the file's {len} bytes"
            )));
        }
    };
    let mut footer_bytes = vec![0u8; (len - 10 - footer_start) as usize];
    file.seek(SeekFrom::Start(footer_start)).map_err(read_err)?;
    if read_full(&mut file, &mut footer_bytes).map_err(read_err)? < footer_bytes.len() {
        return Err(bad("the footer is cut short".into()));
    }
    let footer = ipc::root_as_footer(&footer_bytes)
        .map_err(|e| bad(format!("its footer is damaged ({})", first_line(&e))))?;
    let schema = footer
        .schema()
        .ok_or_else(|| bad("its footer has no schema".into()))?;
    let footer_schema = contain(
        path,
        || "the footer's schema".into(),
        || Ok(ipc::convert::fb_to_schema(schema)),
    )?;
    let mut blocks = Vec::new();
    for (k, b) in footer.recordBatches().into_iter().flatten().enumerate() {
        let (offset, meta, body) = (b.offset(), b.metaDataLength(), b.bodyLength());
        let end = u64::try_from(offset)
            .ok()
            .zip(u64::try_from(meta).ok())
            .zip(u64::try_from(body).ok())
            .and_then(|((o, m), b)| o.checked_add(m)?.checked_add(b));
        match end {
            Some(end) if offset >= 8 && meta > 0 && end <= footer_start => {
                blocks.push((offset as u64, meta as u64, body as u64))
            }
            _ => {
                return Err(bad(format!(
                    "the footer's block for record batch {k} (offset {offset}, metadata \
                     {meta} bytes, body {body} bytes) does not lie within the file's data, \
                     bytes 8 to {footer_start}"
                )));
            }
        }
    }
    if blocks.is_empty() {
        return Err(IoError::NoData {
            path: path.to_owned(),
            detail: " (the Arrow file has no record batches)",
        });
    }
    // The magic, then zeros up to the writer's alignment (8 to 64 bytes), then the stream.
    let mut head = vec![0u8; footer_start.min(4096) as usize];
    file.seek(SeekFrom::Start(0)).map_err(read_err)?;
    let got = read_full(&mut file, &mut head).map_err(read_err)?;
    if got < 8 || &head[..6] != ARROW_MAGIC {
        return Err(bad("it does not start with the magic bytes ARROW1".into()));
    }
    let start = match head[6..got].iter().position(|&b| b != 0) {
        Some(p) if (6 + p) % 8 == 0 => (6 + p) as u64,
        _ => {
            return Err(bad(
                "no message starts after the magic bytes and their padding".into(),
            ));
        }
    };
    file.seek(SeekFrom::Start(start)).map_err(read_err)?;
    let framing = Framing {
        path: path.to_owned(),
        reader: Box::new(BufReader::with_capacity(1 << 16, file)),
        at: start,
        limit: Some(footer_start),
        file: true,
    };
    let (batches, schema) = IpcBatches::start(framing, Some((footer_schema, blocks)))?;
    finish_open(path, batches, schema, options)
}

/// Opens an Arrow IPC stream (`.arrows`; also what some tools write as `.arrow`), raw or
/// gzip-compressed: the schema comes first, then the batches, then the end-of-stream marker.
pub(crate) fn open_stream(
    path: &Path,
    opened: Opened,
    options: &ReadOptions,
) -> Result<ColumnarSource> {
    let framing = Framing {
        path: path.to_owned(),
        reader: opened.reader,
        at: 0,
        limit: opened.max_len,
        file: false,
    };
    let (batches, schema) = IpcBatches::start(framing, None)?;
    finish_open(path, batches, schema, options)
}

fn finish_open(
    path: &Path,
    mut batches: IpcBatches,
    schema: SchemaRef,
    options: &ReadOptions,
) -> Result<ColumnarSource> {
    let selected = select(path, &schema, options)?;
    batches.projection = selected.roots.clone();
    ColumnarSource::new(
        path,
        "Arrow",
        Batches::Arrow(Box::new(batches)),
        selected.projected(),
        None,
        false,
    )
}

/// The first line of a flatbuffer verifier's error (the rest is a trace through the tables).
fn first_line(e: &impl std::fmt::Display) -> String {
    e.to_string().lines().next().unwrap_or_default().to_owned()
}

/// A record batch's place in a file, as its footer gives it: offset, metadata length (with
/// its prefix), body length.
type Block = (u64, u64, u64);

/// One encapsulated message: its flatbuffer metadata and its body.
struct RawMessage {
    /// Where it starts in the content, and the lengths a file's footer gives for it.
    start: u64,
    meta_len: u64,
    meta: Vec<u8>,
    body: Vec<u8>,
}

/// Reads the encapsulated messages of an IPC stream: a continuation marker, the metadata's
/// length, the metadata (a flatbuffer `Message`), the body of the length it declares.
struct Framing {
    path: PathBuf,
    reader: Box<dyn Read + Send>,
    /// Bytes of the content consumed so far.
    at: u64,
    /// Where the messages must end: a file's footer, or the most the content can hold.
    limit: Option<u64>,
    file: bool,
}

impl Framing {
    fn error(&self, detail: String) -> IoError {
        let kind = if self.file { "file" } else { "stream" };
        format_error(
            &self.path,
            format!("damaged Arrow IPC {kind} at byte {}: {detail}", self.at),
        )
    }

    fn read_err(&self, source: std::io::Error) -> IoError {
        IoError::Read {
            path: self.path.clone(),
            source,
        }
    }

    /// Checks that `len` more bytes fit before the limit.
    fn fits(&self, len: u64, what: &str) -> Result<()> {
        match self.limit {
            Some(limit) if self.at.saturating_add(len) > limit => Err(self.error(format!(
                "{what} of {len} bytes runs past the end of the data (byte {limit})"
            ))),
            _ => Ok(()),
        }
    }

    /// Reads exactly `len` bytes, grown as they arrive.
    fn take(&mut self, len: u64, what: &str) -> Result<Vec<u8>> {
        self.fits(len, what)?;
        let len = usize::try_from(len).map_err(|_| self.error(format!("{what} is too large")))?;
        let mut buf = Vec::new();
        let got = read_growing(&mut self.reader, &mut buf, len).map_err(|e| self.read_err(e))?;
        if got < len {
            return Err(self.error(format!(
                "{what} of {len} bytes is cut short after {got}: the data is truncated"
            )));
        }
        buf.truncate(len);
        self.at += len as u64;
        Ok(buf)
    }

    /// The next message; `None` at the end-of-stream marker (or, in a file, at the footer).
    fn next(&mut self) -> Result<Option<RawMessage>> {
        let start = self.at;
        if self.file && Some(start) == self.limit {
            return Ok(None);
        }
        let mut word = [0u8; 4];
        let got = read_full(&mut self.reader, &mut word).map_err(|e| self.read_err(e))?;
        if got < 4 {
            return Err(self
                .error("the data ends without the end-of-stream marker: it is truncated".into()));
        }
        self.at += 4;
        let mut prefix = 4;
        if word == CONTINUATION {
            let got = read_full(&mut self.reader, &mut word).map_err(|e| self.read_err(e))?;
            if got < 4 {
                return Err(self.error("a message length is cut short".into()));
            }
            self.at += 4;
            prefix = 8;
        }
        let len = i32::from_le_bytes(word);
        if len == 0 {
            return Ok(None);
        }
        let meta_len =
            u64::try_from(len).map_err(|_| self.error(format!("a message length of {len}")))?;
        let meta = self.take(meta_len, "a message's metadata")?;
        let message = ipc::root_as_message(&meta).map_err(|e| {
            self.error(format!(
                "a message's metadata is damaged ({})",
                first_line(&e)
            ))
        })?;
        let body_len = message.bodyLength();
        let body_len = u64::try_from(body_len)
            .map_err(|_| self.error(format!("a message declares a body of {body_len} bytes")))?;
        let body = self.take(body_len, "a message's body")?;
        Ok(Some(RawMessage {
            start,
            meta_len: prefix + meta_len,
            meta,
            body,
        }))
    }
}

/// The record batches of an IPC stream, decoded with only the projected columns.
struct IpcBatches {
    framing: Framing,
    schema: SchemaRef,
    /// The file's columns to decode, sorted.
    projection: Vec<usize>,
    /// A file's footer blocks (offset, metadata length, body length), to be matched.
    blocks: Option<Vec<Block>>,
    /// Record batches read so far.
    batch: usize,
    done: bool,
}

impl IpcBatches {
    /// Reads the schema message that starts every stream (and, in a file, checks it against
    /// the footer's).
    fn start(
        mut framing: Framing,
        footer: Option<(Schema, Vec<Block>)>,
    ) -> Result<(IpcBatches, SchemaRef)> {
        let Some(first) = framing.next()? else {
            return Err(framing.error("it ends before its schema".into()));
        };
        let message = ipc::root_as_message(&first.meta).map_err(|e| {
            framing.error(format!(
                "its schema message is damaged ({})",
                first_line(&e)
            ))
        })?;
        let Some(fb_schema) = message.header_as_schema() else {
            return Err(framing
                .error("it does not start with a schema message: not an Arrow IPC stream".into()));
        };
        let path = framing.path.clone();
        let schema = contain(
            &path,
            || "the schema".into(),
            || Ok(ipc::convert::fb_to_schema(fb_schema)),
        )?;
        let blocks = match footer {
            Some((footer_schema, blocks)) => {
                if footer_schema.fields() != schema.fields() {
                    return Err(framing
                        .error("the footer's schema differs from the schema at the start".into()));
                }
                Some(blocks)
            }
            None => None,
        };
        let schema = Arc::new(schema);
        let batches = IpcBatches {
            framing,
            schema: Arc::clone(&schema),
            projection: Vec::new(),
            blocks,
            batch: 0,
            done: false,
        };
        Ok((batches, schema))
    }

    fn label(&self) -> String {
        format!("record batch {}", self.batch)
    }

    /// The next record batch, skipping dictionary batches (the columns read are numbers, never
    /// dictionary-encoded; their structure is checked all the same).
    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        loop {
            let Some(raw) = self.framing.next()? else {
                return self.end().map(|()| None);
            };
            let message = ipc::root_as_message(&raw.meta).map_err(|e| {
                self.framing
                    .error(format!("a message is damaged ({})", first_line(&e)))
            })?;
            match message.header_type() {
                ipc::MessageHeader::RecordBatch => {}
                ipc::MessageHeader::DictionaryBatch => {
                    let data = message
                        .header_as_dictionary_batch()
                        .and_then(|d| d.data())
                        .ok_or_else(|| self.framing.error("an empty dictionary batch".into()))?;
                    check_batch(data, &raw.body).map_err(|e| {
                        self.framing
                            .error(format!("a dictionary batch is damaged: {e}"))
                    })?;
                    continue;
                }
                other => {
                    return Err(self.framing.error(format!(
                        "a message of type {other:?} where record batches were expected"
                    )));
                }
            }
            if let Some(blocks) = &self.blocks {
                let found = (raw.start, raw.meta_len, raw.body.len() as u64);
                if blocks.get(self.batch) != Some(&found) {
                    return Err(self.framing.error(format!(
                        "{} (offset {}, metadata {} bytes, body {} bytes) does not match the \
                         footer's block for it ({:?})",
                        self.label(),
                        found.0,
                        found.1,
                        found.2,
                        blocks.get(self.batch)
                    )));
                }
            }
            let Some(fb_batch) = message.header_as_record_batch() else {
                return Err(self
                    .framing
                    .error(format!("{} has no header", self.label())));
            };
            check_batch(fb_batch, &raw.body).map_err(|e| {
                self.framing
                    .error(format!("{} is damaged: {e}", self.label()))
            })?;
            let version = message.version();
            let body = Buffer::from_vec(raw.body);
            let path = self.framing.path.clone();
            let label = self.label();
            let decoded = contain(
                &path,
                || label.clone(),
                || {
                    ipc::reader::read_record_batch(
                        &body,
                        fb_batch,
                        Arc::clone(&self.schema),
                        &HashMap::<i64, ArrayRef>::new(),
                        Some(&self.projection),
                        &version,
                    )
                    .map_err(|e| format_error(&path, format!("{label} cannot be decoded: {e}")))
                },
            )?;
            self.batch += 1;
            return Ok(Some(decoded));
        }
    }

    /// At the end-of-stream marker: a file's footer must list exactly the batches read and
    /// follow the marker; a stream must end there.
    fn end(&mut self) -> Result<()> {
        if let Some(blocks) = &self.blocks {
            if blocks.len() != self.batch {
                return Err(self.framing.error(format!(
                    "the footer lists {} record batch(es) but the data holds {}",
                    blocks.len(),
                    self.batch
                )));
            }
            if Some(self.framing.at) != self.framing.limit {
                return Err(self
                    .framing
                    .error("bytes between the end-of-stream marker and the footer".into()));
            }
            Ok(())
        } else {
            let at = self.framing.at;
            expect_end(&self.framing.path, &mut self.framing.reader, at)
        }
    }
}

impl Iterator for IpcBatches {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let next = self.next_batch();
        if !matches!(next, Ok(Some(_))) {
            self.done = true;
        }
        next.transpose()
    }
}

/// Checks a record batch's layout against its body before it is decoded: counts not negative,
/// every buffer within the body, and for a compressed body every buffer's declared
/// decompressed length within what its bytes can expand to and within memory.
fn check_batch(batch: ipc::RecordBatch<'_>, body: &[u8]) -> std::result::Result<(), String> {
    let body_len = body.len() as u64;
    if batch.length() < 0 {
        return Err(format!("a row count of {}", batch.length()));
    }
    for (k, node) in batch.nodes().into_iter().flatten().enumerate() {
        let (len, nulls) = (node.length(), node.null_count());
        if len < 0 || nulls < 0 || nulls > len {
            return Err(format!(
                "field node {k} declares {len} values of which {nulls} are null"
            ));
        }
    }
    let ratio = match batch.compression() {
        None => None,
        Some(c) if c.method() != ipc::BodyCompressionMethod::BUFFER => {
            return Err(format!("an unknown compression method {:?}", c.method()));
        }
        Some(c) => match c.codec() {
            ipc::CompressionType::LZ4_FRAME => Some(("LZ4", LZ4_MAX_RATIO)),
            ipc::CompressionType::ZSTD => Some(("Zstandard", ZSTD_MAX_RATIO)),
            other => return Err(format!("an unknown compression codec {other:?}")),
        },
    };
    let mut decompressed_total: u64 = 0;
    for (k, buf) in batch.buffers().into_iter().flatten().enumerate() {
        let (offset, len) = (buf.offset(), buf.length());
        let end = u64::try_from(offset)
            .ok()
            .zip(u64::try_from(len).ok())
            .and_then(|(o, l)| o.checked_add(l));
        if end.is_none_or(|end| end > body_len) {
            return Err(format!(
                "buffer {k} (offset {offset}, {len} bytes) lies outside the body of {body_len} \
                 bytes"
            ));
        }
        let Some((codec, ratio)) = ratio else {
            continue;
        };
        if len == 0 {
            continue;
        }
        if len < 8 {
            return Err(format!(
                "compressed buffer {k} has {len} bytes, too few for its 8-byte length"
            ));
        }
        let at = offset as usize;
        let mut prefix = [0u8; 8];
        prefix.copy_from_slice(&body[at..at + 8]);
        let declared = i64::from_le_bytes(prefix);
        let most = (len as u64 - 8).saturating_mul(ratio);
        match declared {
            // Not compressed (-1), or empty.
            -1 | 0 => {}
            d if d > 0 && (d as u64) <= most => {
                decompressed_total = decompressed_total.saturating_add(d as u64);
            }
            d => {
                return Err(format!(
                    "buffer {k} declares {d} bytes after {codec} decompression, more than its \
                     {} compressed bytes can hold (at most {most})",
                    len - 8
                ));
            }
        }
    }
    let ceiling = memory_ceiling();
    if decompressed_total > ceiling {
        return Err(format!(
            "its buffers declare {decompressed_total} bytes after decompression, more than this \
             machine's memory ({ceiling} bytes)"
        ));
    }
    Ok(())
}
