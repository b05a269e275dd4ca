//! [`FileSource`]: files as a [`principal::ChunkSource`], read again on every pass, with the
//! next chunk decoded on a second thread while the solver works on the current one.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use faer::MatRef;

use crate::error::Result;
use crate::format::binary::PositionalRows;
use crate::read::options::ReadOptions;
use crate::read::rows::RowBuf;
use crate::reader::chunk_reader::ChunkReader;
use crate::reader::part::Part;
use crate::reader::shard::{DataSet, Shard, Slice};

/// Files as a re-readable [`principal::ChunkSource`] for the solvers that make several passes:
/// every pass reads the files again from the start, `chunk_rows` rows at a time (more for
/// files of bytes: `FileSource::most_rows`), so the data is never held in memory whole.
///
/// A pass reads and decodes the next chunk on a second thread while the solver works on the
/// current one, and hands chunks out as row-major views of the buffers they were decoded into
/// (no copy, no transpose): at most two chunks are in memory at a time.
pub struct FileSource {
    data: DataSet,
    chunk_rows: usize,
    times: PassTimes,
    /// The chunks of the last pass, kept for the next with their storage: a chunk read in
    /// place (`BinaryRows::read_rows_at`) is then neither allocated nor zeroed again.
    spare: Vec<RowBuf>,
    /// The same for passes of bytes as stored ([`principal::ChunkSource::pass_bytes`]).
    spare_bytes: Vec<Vec<u8>>,
}

/// Where the passes of a [`FileSource`] spent their time, summed over the passes made so far
/// (see [`FileSource::pass_times`]): what `PRINCIPAL_TRACE` prints after a fit.
///
/// The reading thread and the solver run at the same time, so `reading` and `visiting` may
/// add up to more than `total`; `waiting` is the part of `total` the solver had no chunk.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PassTimes {
    /// Passes made.
    pub passes: usize,
    /// Chunks handed out.
    pub chunks: usize,
    /// Wall time from the start of each pass to its end.
    pub total: Duration,
    /// Time the reading thread spent reading, inflating and decoding chunks.
    pub reading: Duration,
    /// The reading thread's CPU time over the passes, where the system tells it (Linux): on a
    /// loaded machine, what the reading cost, whatever the waits for a core.
    pub reading_cpu: Option<Duration>,
    /// Time the solver spent on the chunks it was handed (for the covariance solver, the
    /// products and the moments' other passes over the rows).
    pub visiting: Duration,
    /// Time the solver waited for the reading thread's next chunk.
    pub waiting: Duration,
    /// Passes read by position (see [`principal::RowsAt`]): no reading thread, the solver's
    /// threads read their own pieces. In them `chunks` counts the reads, `reading` sums their
    /// time over the threads, and `visiting` is the pass's wall time (reads and products).
    pub by_position: usize,
}

impl std::fmt::Debug for FileSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileSource")
            .field("paths", &self.data.paths)
            .field("options", &self.data.options)
            .field("chunk_rows", &self.chunk_rows)
            .field("n_features", &self.data.n_features)
            .field("column_names", &self.data.column_names)
            .field("f32", &self.data.f32)
            .finish()
    }
}

impl FileSource {
    /// Opens and checks every shard once (as [`ChunkReader::open`], which also expands
    /// directories and patterns), so that errors in the files' headers show before any pass.
    pub fn open(paths: &[PathBuf], options: &ReadOptions, chunk_rows: usize) -> Result<FileSource> {
        Ok(Self::from_reader(
            ChunkReader::open(paths, options)?,
            chunk_rows,
        ))
    }

    /// Process `part.rank`'s part of the data set (see [`ChunkReader::open_part`]), re-read
    /// on every pass.
    pub fn open_part(
        paths: &[PathBuf],
        options: &ReadOptions,
        part: Part,
        chunk_rows: usize,
    ) -> Result<FileSource> {
        Ok(Self::from_reader(
            ChunkReader::open_part(paths, options, part)?,
            chunk_rows,
        ))
    }

    /// The files of a reader just opened (whose shape and row count a caller may have looked
    /// at first to choose `chunk_rows`), without opening and checking them again.
    pub fn from_reader(reader: ChunkReader, chunk_rows: usize) -> FileSource {
        FileSource {
            data: reader.into_data_set(),
            chunk_rows: chunk_rows.max(1),
            times: PassTimes::default(),
            spare: Vec::new(),
            spare_bytes: Vec::new(),
        }
    }

    /// Where the passes made so far spent their time (the passes that ended without an error).
    pub fn pass_times(&self) -> PassTimes {
        self.times
    }

    /// Names of the kept columns, when the first shard has a header.
    pub fn column_names(&self) -> Option<&[String]> {
        self.data.column_names.as_deref()
    }

    /// Rows of a pass's largest chunks. The chunks start at `chunk_rows` rows and double up
    /// to it: the first chunk, which nothing overlaps, is read soon, and each next one is read
    /// while the solver works on the last, at most twice its size. Files of bytes go up to
    /// [`BYTE_CHUNK_GROWTH`] times `chunk_rows` rows (a byte chunk then holds half the
    /// memory of an f64 chunk of `chunk_rows` rows, an f32 chunk twice): fewer, larger chunks
    /// leave more to the exact products' ordered path (`principal`'s `moments::ordered`). Both
    /// passes of such files cut their chunks alike, so they give the same bits.
    fn most_rows(&self) -> usize {
        if self.data.bytes {
            self.chunk_rows.saturating_mul(BYTE_CHUNK_GROWTH)
        } else {
            self.chunk_rows
        }
    }

    /// A reader at the start of the data that opens each shard when it gets to it (and checks
    /// it then against what [`FileSource::open`] found), rather than all of them up front.
    fn restart(&self) -> ChunkReader {
        ChunkReader::restart(self.data.clone())
    }
}

/// CPU time of the calling thread so far, where the system tells it: Linux's
/// `/proc/thread-self/schedstat` (nanoseconds on a CPU); `None` elsewhere.
fn thread_cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let nanos = stat.split_whitespace().next()?.parse::<u64>().ok()?;
    Some(Duration::from_nanos(nanos))
}

/// The rows of a data set read by position ([`principal::RowsAt`]): its files' (or a
/// process's part of them) one after the other, when every one is a plain file of
/// native-endian `f64` rows with every column kept. Rows in messages are the files'.
struct ByPosition {
    /// Each file's rows, and the pass's row at which they start.
    files: Vec<(usize, PositionalRows)>,
    n_rows: usize,
    n_features: usize,
    /// Reads made and the wall time they took, summed over the threads.
    reads: AtomicUsize,
    reading: AtomicU64,
}

impl ByPosition {
    /// The data set's rows by position, or `None` when a file is not such a file.
    fn open(data: &DataSet) -> Result<Option<ByPosition>> {
        if data.f32 {
            return Ok(None);
        }
        let mut files = Vec::new();
        let mut n_rows = 0usize;
        for (i, path) in data.paths.iter().enumerate() {
            let slice = data.slices.as_ref().map(|s| &s[i]);
            let shard = match slice {
                Some(Slice::Skip) => continue,
                Some(slice) => slice.open(path, &data.options)?,
                None => Shard::open(path, &data.options)?,
            };
            data.check(path, &shard)?;
            let Shard::Binary(binary) = shard else {
                return Ok(None);
            };
            let Some(rows) = binary.positional()? else {
                return Ok(None);
            };
            let len = rows.rows.len();
            files.push((n_rows, rows));
            n_rows += len;
        }
        Ok(Some(ByPosition {
            files,
            n_rows,
            n_features: data.n_features,
            reads: AtomicUsize::new(0),
            reading: AtomicU64::new(0),
        }))
    }
}

impl principal::RowsAt for ByPosition {
    fn n_rows(&self) -> usize {
        self.n_rows
    }

    fn read_rows_at(&self, first_row: usize, out: &mut [f64]) -> principal::Result<()> {
        let at = Instant::now();
        let d = self.n_features.max(1);
        let (mut row, mut out) = (first_row, out);
        // The file holding `row`, and on into the next files for a piece that crosses one.
        let mut i = self.files.partition_point(|(start, _)| *start <= row) - 1;
        while !out.is_empty() {
            let (start, file) = &self.files[i];
            let rows = (out.len() / d).min(start + file.rows.len() - row);
            let (here, rest) = std::mem::take(&mut out).split_at_mut(rows * d);
            file.read(file.rows.start + row - start, here)
                .map_err(|e| principal::PcaError::Source(Box::new(e)))?;
            (row, out, i) = (row + rows, rest, i + 1);
        }
        self.reads.fetch_add(1, Ordering::Relaxed);
        let nanos = u64::try_from(at.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.reading.fetch_add(nanos, Ordering::Relaxed);
        Ok(())
    }

    fn non_finite(&self, row: usize, column: usize, value: f64) -> principal::PcaError {
        let i = self.files.partition_point(|(start, _)| *start <= row) - 1;
        let (start, file) = &self.files[i];
        let e = file.non_finite(file.rows.start + row - start, column, value);
        principal::PcaError::Source(Box::new(e))
    }
}

/// Chunks kept from pass to pass: the one being visited and the one being read.
const CHUNKS_IN_FLIGHT: usize = 2;

/// How many times `chunk_rows` rows the chunks of a file of bytes grow to (see
/// [`FileSource::most_rows`]): Fashion-MNIST from its `.gz` took 0.54 s against 0.61 s in
/// chunks of 4 × 5,120 rows (bench/results.md).
const BYTE_CHUNK_GROWTH: usize = 4;

impl principal::ChunkSource for FileSource {
    fn n_features(&self) -> usize {
        self.data.n_features
    }

    /// Plain files of native-endian `f64` rows are read by position: the solver's threads
    /// each read their own pieces (no reading thread, no chunk).
    fn pass_by_position(
        &mut self,
        visit: &mut dyn FnMut(&dyn principal::RowsAt) -> principal::Result<()>,
    ) -> Option<principal::Result<()>> {
        let started = Instant::now();
        let rows = match ByPosition::open(&self.data) {
            Ok(Some(rows)) => rows,
            Ok(None) => return None,
            Err(e) => return Some(Err(principal::PcaError::Source(Box::new(e)))),
        };
        let result = visit(&rows);
        if result.is_ok() {
            let total = started.elapsed();
            let sum = &mut self.times;
            sum.passes += 1;
            sum.by_position += 1;
            sum.chunks += rows.reads.load(Ordering::Relaxed);
            sum.total += total;
            sum.reading += Duration::from_nanos(rows.reading.load(Ordering::Relaxed));
            // No reading thread: the solver's threads read, each its own pieces.
            sum.reading_cpu = None;
            sum.visiting += total;
        }
        Some(result)
    }

    fn pass(
        &mut self,
        visit: &mut dyn FnMut(principal::ChunkRef<'_>) -> principal::Result<()>,
    ) -> principal::Result<()> {
        let d = self.data.n_features;
        let spare = std::mem::take(&mut self.spare);
        let (result, spare) =
            self.stream(
                spare,
                |reader, rows| reader.new_buf(rows, 1 << 24),
                ChunkReader::read_rows,
                &mut |buf, n| match buf {
                    RowBuf::F32(v) => visit(principal::ChunkRef::F32(
                        MatRef::from_row_major_slice(&v[..n * d], n, d),
                    )),
                    RowBuf::F64(v) => visit(principal::ChunkRef::F64(
                        MatRef::from_row_major_slice(&v[..n * d], n, d),
                    )),
                },
            );
        self.spare = spare;
        result
    }

    /// Files whose every value is stored as a byte (IDX `ubyte`, NPY `|u1`, every column
    /// kept) hand out their chunks as stored: the reading thread inflates and copies, and
    /// decodes nothing.
    fn pass_bytes(
        &mut self,
        visit: &mut dyn FnMut(MatRef<'_, u8>) -> principal::Result<()>,
    ) -> Option<principal::Result<()>> {
        if !self.data.bytes {
            return None;
        }
        let d = self.data.n_features;
        let spare = std::mem::take(&mut self.spare_bytes);
        let (result, spare) = self.stream(
            spare,
            |reader, rows| {
                Vec::with_capacity(rows.saturating_mul(reader.n_features()).min(1 << 24))
            },
            ChunkReader::read_byte_rows,
            &mut |buf, n| visit(MatRef::from_row_major_slice(&buf[..n * d], n, d)),
        );
        self.spare_bytes = spare;
        Some(result)
    }
}

impl FileSource {
    /// One pass: chunks of `chunk_rows` rows, growing to [`Self::most_rows`], read by `read`
    /// into buffers (`spare` first, the last pass's, then new ones from `new_buf(reader,
    /// most_rows)`, room for the largest chunk) on a reading thread, each handed
    /// to `visit(buffer, rows)` while the next is read; returns the pass's result and the
    /// buffers to keep for the next (at most [`CHUNKS_IN_FLIGHT`]). The pass's times are added
    /// to [`FileSource::pass_times`] when it succeeds.
    fn stream<B: Send>(
        &mut self,
        spare: Vec<B>,
        new_buf: fn(&ChunkReader, usize) -> B,
        read: fn(&mut ChunkReader, usize, &mut B) -> Result<usize>,
        visit: &mut dyn FnMut(&B, usize) -> principal::Result<()>,
    ) -> (principal::Result<()>, Vec<B>) {
        let (chunk_rows, most_rows) = (self.chunk_rows, self.most_rows());
        let mut reader = self.restart();
        let started = Instant::now();
        let mut times = PassTimes {
            passes: 1,
            ..PassTimes::default()
        };
        let mut kept = Vec::new();
        let result = std::thread::scope(|scope| {
            // A rendezvous channel: the reader decodes one chunk ahead and waits until the
            // solver takes it, so two buffers are in use (one visited, one being filled).
            // A chunk read: its rows, row-major, and how many (its first `n·D` values; the rest
            // is storage).
            let (full_tx, full_rx) = mpsc::sync_channel::<Result<(B, usize)>>(0);
            let (empty_tx, empty_rx) = mpsc::channel::<B>();
            // The last pass's chunks first, as they are (their length is their storage).
            for buf in spare {
                let _ = empty_tx.send(buf);
            }
            let reading = scope.spawn(move || {
                let mut rows = chunk_rows;
                let mut busy = Duration::ZERO;
                let cpu = thread_cpu_time();
                let spent = move |busy| (busy, cpu.zip(thread_cpu_time()).map(|(a, b)| b - a));
                loop {
                    let mut buf = empty_rx
                        .try_recv()
                        .unwrap_or_else(|_| new_buf(&reader, most_rows));
                    let at = Instant::now();
                    let decoded = match read(&mut reader, rows, &mut buf) {
                        Ok(0) => return (spent(busy), Some(buf), empty_rx),
                        Ok(n) => Ok((buf, n)),
                        Err(e) => Err(e),
                    };
                    busy += at.elapsed();
                    rows = rows.saturating_mul(2).min(most_rows);
                    let failed = decoded.is_err();
                    // A send fails when the pass has stopped (the visitor returned an error): stop.
                    if full_tx.send(decoded).is_err() || failed {
                        return (spent(busy), None, empty_rx);
                    }
                }
            });
            // On return (or a panic in `visit`) `full_rx` is dropped first, which ends the
            // reading thread at its next chunk; the scope then joins it.
            let mut asked = Instant::now();
            for decoded in full_rx {
                times.waiting += asked.elapsed();
                let (buf, n) = decoded.map_err(|e| principal::PcaError::Source(Box::new(e)))?;
                let at = Instant::now();
                visit(&buf, n)?;
                times.visiting += at.elapsed();
                times.chunks += 1;
                // Recycled: the reader takes it for the chunk after next.
                let _ = empty_tx.send(buf);
                asked = Instant::now();
            }
            // The channel ended: the reading thread has returned (a panic there goes on here,
            // as the scope would have raised it).
            let ((busy, cpu), unused, empty_rx) = reading
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (times.reading, times.reading_cpu) = (busy, cpu);
            // Kept for the next pass: the chunks recycled, then the one the reader last took.
            kept.extend(empty_rx.try_iter());
            kept.extend(unused);
            kept.truncate(CHUNKS_IN_FLIGHT);
            Ok::<(), principal::PcaError>(())
        });
        if result.is_err() {
            return (result, kept);
        }
        times.total = started.elapsed();
        let sum = &mut self.times;
        sum.passes += times.passes;
        sum.chunks += times.chunks;
        sum.total += times.total;
        sum.reading += times.reading;
        sum.reading_cpu = match (sum.passes, sum.reading_cpu, times.reading_cpu) {
            (1, _, cpu) => cpu,
            (_, Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
        sum.visiting += times.visiting;
        sum.waiting += times.waiting;
        (Ok(()), kept)
    }
}

#[cfg(test)]
mod tests {
    use principal::ChunkSource;
    use tempfile::TempDir;

    use super::*;
    use crate::test_util::*;
    use crate::{Mat, Matrix, Part, read_table};

    #[test]
    fn file_source_passes_repeat_the_data() {
        let dir = TempDir::new().unwrap();
        let a = write_file(dir.path(), "a.npy", &f64_npy(5, 3, false, 0.0));
        let b = write_file(
            dir.path(),
            "b-idx2",
            &idx(0x08, &[2, 3], &[1, 2, 3, 4, 5, 6]),
        );
        let mut source = FileSource::open(&[a, b], &ReadOptions::default(), 4).unwrap();
        assert_eq!(source.n_features(), 3);
        assert_eq!(source.column_names(), None);
        let mut passes = Vec::new();
        for _ in 0..2 {
            let mut seen = Vec::new();
            source
                .pass(&mut |chunk| {
                    assert!(chunk.nrows() <= 4);
                    if let principal::ChunkRef::F64(m) = chunk {
                        seen.extend((0..m.nrows()).map(|i| m[(i, 0)]));
                    }
                    Ok(())
                })
                .unwrap();
            passes.push(seen);
        }
        assert_eq!(passes[0], vec![0.0, 3.0, 6.0, 9.0, 12.0, 1.0, 4.0]);
        assert_eq!(passes[0], passes[1]);
    }

    /// Every row of every pass of `source`, with the chunks' element type; checks that chunks
    /// are row-major views of at most `size` rows.
    fn pass_rows(source: &mut FileSource, size: usize) -> (Vec<Vec<f64>>, bool) {
        let mut all = Vec::new();
        let mut f32 = None;
        source
            .pass(&mut |chunk| {
                assert!(chunk.nrows() >= 1 && chunk.nrows() <= size);
                let m = match chunk {
                    principal::ChunkRef::F32(m) => {
                        assert!(*f32.get_or_insert(true));
                        (
                            m.col_stride(),
                            m.row_stride(),
                            Mat::from_fn(m.nrows(), m.ncols(), |i, j| f64::from(m[(i, j)])),
                        )
                    }
                    principal::ChunkRef::F64(m) => {
                        assert!(!*f32.get_or_insert(false));
                        (m.col_stride(), m.row_stride(), m.to_owned())
                    }
                };
                let (col_stride, row_stride, m) = m;
                assert_eq!(
                    (col_stride, row_stride),
                    (1, m.ncols() as isize),
                    "row-major"
                );
                all.extend(
                    (0..m.nrows()).map(|i| (0..m.ncols()).map(|j| m[(i, j)]).collect::<Vec<_>>()),
                );
                Ok(())
            })
            .unwrap();
        (all, f32.unwrap_or(false))
    }

    #[cfg(all(feature = "parquet", feature = "arrow"))]
    #[test]
    fn file_source_equals_read_table_for_every_layout() {
        let dir = TempDir::new().unwrap();
        let d = dir.path();
        let csv: String = std::iter::once("a,b,c\n".to_owned())
            .chain((0..23).map(|i| format!("{i},{},{}\n", i * 2, f64::from(i) / 7.0)))
            .collect();
        let f32_npy = npy(
            "<f4",
            false,
            &[9, 3],
            &(0..27)
                .map(|i| i as f32 * 0.25)
                .flat_map(f32::to_le_bytes)
                .collect::<Vec<_>>(),
        );
        let columns = crate::test_util::batch(
            ["a", "b", "c"]
                .iter()
                .enumerate()
                .map(|(j, name)| {
                    let v: Vec<f64> = (0..31).map(|i| (i * 3 + j) as f64).collect();
                    (
                        *name,
                        std::sync::Arc::new(arrow_array::Float64Array::from(v))
                            as arrow_array::ArrayRef,
                    )
                })
                .collect(),
        );
        std::fs::create_dir(d.join("shards")).unwrap();
        let cases: Vec<Vec<PathBuf>> = vec![
            vec![write_file(d, "a.csv", csv.as_bytes())],
            vec![write_file(d, "a.csv.gz", &gz(csv.as_bytes()))],
            vec![write_file(d, "f.npy", &f32_npy)],
            vec![parquet_file(d, "p.parquet", &columns, 4)],
            vec![arrow_file(
                d,
                "p.arrow",
                &[columns.slice(0, 10), columns.slice(10, 21)],
                false,
            )],
            vec![
                write_file(d, "shards/1.npy", &f64_npy(5, 3, false, 0.0)),
                d.join("a.csv"),
                parquet_file(d, "shards/2.parquet", &columns, 7),
                write_file(d, "shards/3.npy", &f64_npy(1, 3, true, 100.0)),
            ],
            vec![d.join("f.npy"), d.join("f.npy")],
            vec![d.join("shards")],
            vec![d.join("shards/*.npy"), d.join("p.*")],
        ];
        for paths in &cases {
            let whole = read_table(paths, &ReadOptions::default()).unwrap();
            for size in [1, 3, 7, 1000] {
                let mut source = FileSource::open(paths, &ReadOptions::default(), size).unwrap();
                for _ in 0..2 {
                    let (got, f32) = pass_rows(&mut source, size);
                    assert_eq!(got, rows(&whole.data), "{paths:?} by {size}");
                    assert_eq!(f32, whole.data.is_f32(), "{paths:?}");
                }
            }
        }
        // A directory and a pattern are the files they expand to.
        let t = read_table(&[d.join("shards")], &ReadOptions::default()).unwrap();
        let files = [
            d.join("shards/1.npy"),
            d.join("shards/2.parquet"),
            d.join("shards/3.npy"),
        ];
        assert_eq!(t, read_table(&files, &ReadOptions::default()).unwrap());
        let r = ChunkReader::open(&[d.join("shards/*.npy")], &ReadOptions::default()).unwrap();
        assert_eq!(r.paths(), [d.join("shards/1.npy"), d.join("shards/3.npy")]);
        assert_eq!(r.n_rows_hint(), Some(6));
    }

    #[test]
    fn file_source_errors_mid_file_surface_with_their_message() {
        let dir = TempDir::new().unwrap();
        let mut text = String::from("a,b\n");
        for i in 0..100 {
            if i == 58 {
                text.push_str("1,oops\n");
            } else {
                text.push_str(&format!("{i},1\n"));
            }
        }
        let p = write_file(dir.path(), "bad.csv", text.as_bytes());
        let expected = err_of(read_table(
            std::slice::from_ref(&p),
            &ReadOptions::default(),
        ));
        assert!(
            expected.contains("line 60, column 2 (\"b\"): \"oops\" is not a number"),
            "{expected}"
        );
        let mut source = FileSource::open(&[p], &ReadOptions::default(), 7).unwrap();
        for _ in 0..2 {
            let mut seen = 0;
            let e = source
                .pass(&mut |chunk| {
                    seen += chunk.nrows();
                    Ok(())
                })
                .unwrap_err();
            assert_eq!(e.to_string(), expected);
            assert_eq!(seen, 56, "the chunks before the bad one");
        }
        // A shard that went bad after `open` is caught on the pass, with its message.
        let dir = TempDir::new().unwrap();
        let a = write_file(dir.path(), "a.csv", b"x,y\n1,2\n");
        let b = write_file(dir.path(), "b.csv", b"x,y\n3,4\n");
        let mut source = FileSource::open(&[a, b.clone()], &ReadOptions::default(), 1).unwrap();
        std::fs::write(&b, "x,z\n3,4\n").unwrap();
        let e = source.pass(&mut |_| Ok(())).unwrap_err().to_string();
        assert!(
            e.contains("its kept column 2 is \"z\" where the first shard has \"y\""),
            "{e}"
        );
        std::fs::remove_file(&b).unwrap();
        let e = source.pass(&mut |_| Ok(())).unwrap_err().to_string();
        assert!(e.contains(&format!("cannot open {}", b.display())), "{e}");
    }

    /// Files of bytes (IDX `ubyte`, raw and gzip, and NPY `|u1`, one or two shards) hand out
    /// by `pass_bytes` the chunks `pass` hands out (growing from `chunk_rows` rows to four
    /// times that), row for row and value for value, in at most two buffers kept from pass to
    /// pass; files of other values, a column selection or a
    /// Fortran-order array (whose rows are not read whole in order) make no such pass.
    #[test]
    fn files_of_bytes_pass_their_chunks_as_stored() {
        let dir = TempDir::new().unwrap();
        let (n, d) = (1003, 6);
        let values: Vec<u8> = (0..n * d).map(|k| (k * 37 % 256) as u8).collect();
        let (top, bottom) = values.split_at(600 * d);
        let idx3 = |v: &[u8]| idx(0x08, &[(v.len() / d) as u32, 2, 3], v);
        let raw = write_file(dir.path(), "a-idx3-ubyte", &idx3(&values));
        let packed = write_file(dir.path(), "a-idx3-ubyte.gz", &gz(&idx3(&values)));
        let first = write_file(dir.path(), "top.npy", &npy("|u1", false, &[600, d], top));
        let second = write_file(
            dir.path(),
            "bottom.npy",
            &npy("|u1", false, &[403, d], bottom),
        );
        for paths in [vec![raw.clone()], vec![packed], vec![first, second]] {
            let mut source = FileSource::open(&paths, &ReadOptions::default(), 100).unwrap();
            let mut widened = Vec::new();
            source
                .pass(&mut |chunk| {
                    let principal::ChunkRef::F32(m) = chunk else {
                        panic!("bytes are read as f32")
                    };
                    widened.push(
                        (0..m.nrows())
                            .map(|i| (0..d).map(|j| f64::from(m[(i, j)])).collect())
                            .collect::<Vec<Vec<f64>>>(),
                    );
                    Ok(())
                })
                .unwrap();
            // Chunks of 100 rows doubling up to 4 × 100 (files of bytes), whoever reads them.
            let rows: Vec<usize> = widened.iter().map(Vec::len).collect();
            assert_eq!(rows, [100, 200, 400, 303], "{paths:?}");
            for _ in 0..2 {
                let (mut stored, mut buffers) = (Vec::new(), std::collections::BTreeSet::new());
                source
                    .pass_bytes(&mut |m| {
                        buffers.insert(m.as_ptr() as usize);
                        stored.push(
                            (0..m.nrows())
                                .map(|i| (0..d).map(|j| f64::from(m[(i, j)])).collect())
                                .collect::<Vec<Vec<f64>>>(),
                        );
                        Ok(())
                    })
                    .expect("a file of bytes")
                    .unwrap();
                assert_eq!(stored, widened, "{paths:?}");
                assert!(buffers.len() <= 2, "{} buffers", buffers.len());
            }
        }
        let floats: Vec<u8> = values
            .iter()
            .flat_map(|&v| f32::from(v).to_be_bytes())
            .collect();
        let not_bytes = write_file(dir.path(), "f-idx3", &idx(0x0D, &[n as u32, 2, 3], &floats));
        let fortran = write_file(dir.path(), "f.npy", &npy("|u1", true, &[n, d], &values));
        for (paths, options) in [
            (vec![not_bytes], ReadOptions::default()),
            (vec![raw.clone(), fortran], ReadOptions::default()),
            (vec![raw], selection(Some(&["1", "3"]), &[])),
        ] {
            let mut source = FileSource::open(&paths, &options, 100).unwrap();
            assert!(
                source.pass_bytes(&mut |_| panic!("no chunk")).is_none(),
                "{paths:?}"
            );
        }
    }

    #[test]
    fn a_pass_recycles_two_chunk_buffers() {
        let dir = TempDir::new().unwrap();
        let p = write_file(dir.path(), "big.npy", &f64_npy(1000, 5, false, 0.0));
        let mut source = FileSource::open(&[p], &ReadOptions::default(), 10).unwrap();
        for _ in 0..3 {
            let mut buffers = std::collections::BTreeSet::new();
            let mut chunks = 0;
            source
                .pass(&mut |chunk| {
                    if let principal::ChunkRef::F64(m) = chunk {
                        buffers.insert(m.as_ptr() as usize);
                    }
                    chunks += 1;
                    Ok(())
                })
                .unwrap();
            // One visited, one being filled: 100 chunks in (at most) two buffers.
            assert_eq!(chunks, 100);
            assert!(buffers.len() <= 2, "{} buffers", buffers.len());
        }
    }

    /// The two chunks of a pass are kept for the next with their storage (a native-endian f64
    /// file is read into it, not decoded), and the passes hand out the rows of the same data
    /// stored big-endian (decoded) bit for bit, ragged last chunk included.
    #[test]
    fn chunks_keep_their_storage_from_pass_to_pass() {
        let dir = TempDir::new().unwrap();
        let (n, d, size) = (1003, 4, 100);
        let values: Vec<f64> = (0..n * d).map(|k| 1e6 + (k as f64).sqrt()).collect();
        let little: Vec<u8> = values.iter().flat_map(|x| x.to_le_bytes()).collect();
        let big: Vec<u8> = values.iter().flat_map(|x| x.to_be_bytes()).collect();
        let le = write_file(dir.path(), "le.npy", &npy("<f8", false, &[n, d], &little));
        let be = write_file(dir.path(), "be.npy", &npy(">f8", false, &[n, d], &big));
        let mut decoded = FileSource::open(&[be], &ReadOptions::default(), size).unwrap();
        let (want, _) = pass_rows(&mut decoded, size);
        let bits = |rows: &[Vec<f64>]| {
            rows.iter()
                .flat_map(|r| r.iter().map(|x| x.to_bits()))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            bits(&want),
            values.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        );
        let mut source = FileSource::open(&[le], &ReadOptions::default(), size).unwrap();
        let mut kept = Vec::new();
        for pass in 0..3 {
            let (got, _) = pass_rows(&mut source, size);
            assert_eq!(bits(&got), bits(&want), "pass {pass}");
            // Two chunks kept, each with a whole chunk's storage (the last, ragged chunk
            // read into one of them did not shorten it).
            assert_eq!(source.spare.len(), CHUNKS_IN_FLIGHT, "pass {pass}");
            let storage: Vec<(usize, usize)> = source
                .spare
                .iter()
                .map(|buf| match buf {
                    RowBuf::F64(v) => (v.as_ptr() as usize, v.len()),
                    RowBuf::F32(_) => panic!("f64 chunks expected"),
                })
                .collect();
            assert!(
                storage.iter().all(|&(_, len)| len >= size * d),
                "{storage:?}"
            );
            let mut addresses: Vec<usize> = storage.iter().map(|&(a, _)| a).collect();
            addresses.sort_unstable();
            if pass > 0 {
                assert_eq!(addresses, kept, "pass {pass} read into the same two chunks");
            }
            kept = addresses;
        }
    }

    #[test]
    fn a_failing_visitor_stops_the_pass_cleanly() {
        let dir = TempDir::new().unwrap();
        let p = write_file(dir.path(), "big.npy", &f64_npy(1000, 5, false, 0.0));
        let mut source = FileSource::open(&[p], &ReadOptions::default(), 10).unwrap();
        for stop_after in [1, 2, 99, 100] {
            let mut calls = 0;
            let e = source
                .pass(&mut |_| {
                    calls += 1;
                    if calls == stop_after {
                        Err(principal::PcaError::Source("the solver gave up".into()))
                    } else {
                        Ok(())
                    }
                })
                .unwrap_err();
            assert_eq!(e.to_string(), "the solver gave up");
            assert_eq!(calls, stop_after);
        }
        // A panicking visitor: the panic comes out, the reading thread ends.
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            source.pass(&mut |_| panic!("visitor panic"))
        }));
        assert!(caught.is_err());
        // The source is still good for full passes.
        let (all, _) = pass_rows(&mut source, 10);
        assert_eq!(all.len(), 1000);
        assert_eq!(all[999][4], 4999.0);
    }

    /// The same files read serially (each chunk read, then visited, on this thread) in the
    /// chunks [`FileSource`] hands out: what the read-ahead must not change.
    struct SerialSource {
        paths: Vec<std::path::PathBuf>,
        chunk_rows: usize,
        /// The largest chunks (the first `chunk_rows` rows, each next one twice the last).
        most_rows: usize,
    }

    impl principal::ChunkSource for SerialSource {
        fn n_features(&self) -> usize {
            ChunkReader::open(&self.paths, &ReadOptions::default())
                .unwrap()
                .n_features()
        }

        fn pass(
            &mut self,
            visit: &mut dyn FnMut(principal::ChunkRef<'_>) -> principal::Result<()>,
        ) -> principal::Result<()> {
            let mut reader = ChunkReader::open(&self.paths, &ReadOptions::default()).unwrap();
            let d = reader.n_features();
            let mut rows = self.chunk_rows;
            loop {
                let mut buf = reader.new_buf(rows, 1 << 24);
                let n = reader.read_rows(rows, &mut buf).unwrap();
                rows = (2 * rows).min(self.most_rows);
                if n == 0 {
                    return Ok(());
                }
                match &buf {
                    RowBuf::F32(v) => visit(principal::ChunkRef::F32(
                        MatRef::from_row_major_slice(&v[..n * d], n, d),
                    ))?,
                    RowBuf::F64(v) => visit(principal::ChunkRef::F64(
                        MatRef::from_row_major_slice(&v[..n * d], n, d),
                    ))?,
                }
            }
        }
    }

    /// Reading one chunk ahead on a second thread gives the model of the serial reading, bit
    /// for bit: f64 rows with an offset of 1e6 (the float path), f32 rows, and byte-valued
    /// images with blank borders (the ordered path and the byte products), each in chunks that
    /// leave a ragged last one; the covariance solver (one pass) and randomized (several).
    #[test]
    fn reading_ahead_gives_the_serial_models_bits() {
        use rand::{Rng, SeedableRng};
        let dir = TempDir::new().unwrap();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(26);
        let (n, d) = (5000, 30);
        let floats: Vec<f64> = (0..n * d)
            .map(|k| 1e6 + (k % d) as f64 + rng.random::<f64>())
            .collect();
        let f64_bytes: Vec<u8> = floats.iter().flat_map(|x| x.to_le_bytes()).collect();
        let f32_bytes: Vec<u8> = floats
            .iter()
            .flat_map(|x| ((x - 1e6) as f32).to_le_bytes())
            .collect();
        let (m, side) = (3000, 20);
        let pixels: Vec<u8> = (0..m * side * side)
            .map(|k| {
                let (i, j) = ((k / side) % side, k % side);
                let inside = (3..17).contains(&i) && (3..17).contains(&j);
                if inside { rng.random::<u8>() } else { 0 }
            })
            .collect();
        let cases = [
            (
                // Read by position (no reading thread): in pieces counted from the first row,
                // which the serial chunks meet when they are whole groups of pieces (or all).
                write_file(
                    dir.path(),
                    "f64.npy",
                    &npy("<f8", false, &[n, d], &f64_bytes),
                ),
                8192,
            ),
            (
                write_file(
                    dir.path(),
                    "f32.npy",
                    &npy("<f4", false, &[n, d], &f32_bytes),
                ),
                1024,
            ),
            (
                write_file(
                    dir.path(),
                    "images-idx3-ubyte.gz",
                    &gz(&idx(0x08, &[m as u32, side as u32, side as u32], &pixels)),
                ),
                1100,
            ),
        ];
        for (path, chunk_rows) in cases {
            for solver in [principal::Solver::Covariance, principal::Solver::Randomized] {
                let params = principal::PcaBuilder::new()
                    .components(principal::ComponentCount::Fixed(5))
                    .solver(solver)
                    .build()
                    .unwrap();
                let mut ahead = FileSource::open(
                    std::slice::from_ref(&path),
                    &ReadOptions::default(),
                    chunk_rows,
                )
                .unwrap();
                let overlapped = params.fit_source(&mut ahead).unwrap();
                let mut serial = SerialSource {
                    paths: vec![path.clone()],
                    chunk_rows,
                    most_rows: ahead.most_rows(),
                };
                let alone = params.fit_source(&mut serial).unwrap();
                let bits = |x: &[f64]| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
                let what = format!("{} by {solver:?}", path.display());
                assert_eq!(bits(overlapped.mean()), bits(alone.mean()), "{what}");
                assert_eq!(
                    bits(overlapped.explained_variance()),
                    bits(alone.explained_variance()),
                    "{what}"
                );
                let c = |m: &principal::PcaModel| {
                    let c = m.components();
                    (0..c.nrows())
                        .flat_map(|i| (0..c.ncols()).map(move |j| c[(i, j)].to_bits()))
                        .collect::<Vec<_>>()
                };
                assert_eq!(c(&overlapped), c(&alone), "{what}");
                let times = ahead.pass_times();
                assert!(
                    times.passes >= 1 && times.chunks >= times.passes,
                    "{times:?}"
                );
            }
        }
    }

    /// A plain native-endian `f64` `.npy` is read by position on the solver's threads (no
    /// reading thread: a pass makes many reads, though the chunk would hold every row), and
    /// the model is the in-memory fit's of the same rows, bit for bit, on 1, 2 or 3 threads:
    /// one file, two shards whose boundary falls inside a piece, and each process's part of
    /// them. A non-finite value is named by its file and the file's row, as when decoded.
    #[test]
    fn reading_by_position_gives_the_in_memory_models_bits() {
        use rand::{Rng, SeedableRng};
        let dir = TempDir::new().unwrap();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(6);
        let (n, d) = (9000, 40);
        let values: Vec<f64> = (0..n * d)
            .map(|k| 1e6 * (1 + k % d) as f64 + rng.random::<f64>() * (k % 7) as f64)
            .collect();
        let bytes = |rows: std::ops::Range<usize>| -> Vec<u8> {
            values[rows.start * d..rows.end * d]
                .iter()
                .flat_map(|x| x.to_le_bytes())
                .collect()
        };
        let npy_of = |name: &str, rows: std::ops::Range<usize>| {
            write_file(
                dir.path(),
                name,
                &npy("<f8", false, &[rows.len(), d], &bytes(rows)),
            )
        };
        let one = vec![npy_of("all.npy", 0..n)];
        let two = vec![npy_of("first.npy", 0..3001), npy_of("second.npy", 3001..n)];
        let params = principal::PcaBuilder::new()
            .components(principal::ComponentCount::Fixed(5))
            .solver(principal::Solver::Covariance)
            .build()
            .unwrap();
        let bits = |m: &principal::PcaModel| {
            let c = m.components();
            let mut b: Vec<u64> = m.mean().iter().map(|v| v.to_bits()).collect();
            b.extend(m.explained_variance().iter().map(|v| v.to_bits()));
            b.extend((0..c.nrows()).flat_map(|i| (0..c.ncols()).map(move |j| c[(i, j)].to_bits())));
            b
        };
        let options = ReadOptions::default();
        for paths in [&one, &two] {
            for part in [None, Some((0, 2)), Some((1, 2)), Some((2, 3))] {
                let open = || match part {
                    None => ChunkReader::open(paths, &options).unwrap(),
                    Some((rank, size)) => {
                        ChunkReader::open_part(paths, &options, Part { rank, size }).unwrap()
                    }
                };
                let Matrix::F64(x) = open().read_all().unwrap() else {
                    panic!("f64 rows expected");
                };
                let want = bits(&params.fit(x.as_ref()).unwrap());
                for threads in [1, 2, 3] {
                    let pool = rayon::ThreadPoolBuilder::new()
                        .num_threads(threads)
                        .build()
                        .unwrap();
                    let mut source = FileSource::from_reader(open(), 1 << 20);
                    let got = pool.install(|| bits(&params.fit_source(&mut source).unwrap()));
                    let what = format!("{paths:?}, part {part:?}, {threads} thread(s)");
                    assert_eq!(got, want, "{what}");
                    let times = source.pass_times();
                    assert!(times.passes == 1 && times.chunks > 1, "{what}: {times:?}");
                }
            }
        }
        // Non-finite values: the first in reading order, named by its file and row.
        let mut bad = values.clone();
        bad[6100 * d + 7] = f64::INFINITY;
        bad[7500 * d + 3] = f64::NAN;
        let bad_bytes: Vec<u8> = bad[3001 * d..]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let second = write_file(
            dir.path(),
            "second.npy",
            &npy("<f8", false, &[n - 3001, d], &bad_bytes),
        );
        for part in [None, Some((1, 2))] {
            let reader = match part {
                None => ChunkReader::open(&two, &options).unwrap(),
                Some((rank, size)) => {
                    ChunkReader::open_part(&two, &options, Part { rank, size }).unwrap()
                }
            };
            let mut source = FileSource::from_reader(reader, 1 << 20);
            let e = params.fit_source(&mut source).unwrap_err().to_string();
            let want = format!(
                "{}: non-finite value inf at row {}, column 7",
                second.display(),
                6100 - 3001
            );
            assert!(e.contains(&want), "{part:?}: {e}");
        }
    }
}
