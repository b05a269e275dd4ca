//! The working-memory budget (`--memory-limit`) and what it decides for streamed commands.

/// Half of the machine's memory (from /proc/meminfo), or 4 GB where that cannot be read.
pub fn default_memory_limit() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
            let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kib * 1024 / 2)
        })
        .unwrap_or(4_000_000_000)
}

/// Rows per chunk when streaming: about 1/16 of the budget (a pass holds two chunks, one read
/// ahead), at most 32 MiB of f64, whole blocks of 256 rows.
pub fn chunk_rows(d: usize, limit: u64) -> usize {
    let bytes = (limit / 16).min(32 << 20) as usize;
    let rows = bytes / (8 * d.max(1));
    (rows / 256 * 256).max(256)
}

/// Peak resident memory of this process so far, in bytes (Linux; `None` elsewhere).
fn peak_memory() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    Some(line.split_whitespace().nth(1)?.parse::<u64>().ok()? * 1024)
}

/// `"; peak memory N MB"` for a command's closing line, or nothing where it cannot be read.
pub fn peak_memory_note() -> String {
    peak_memory().map_or(String::new(), |b| {
        format!("; peak memory {} MB", b.div_ceil(1_000_000))
    })
}
