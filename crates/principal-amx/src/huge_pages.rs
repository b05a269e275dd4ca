//! The system allocator, asking Linux for transparent huge pages on large blocks.
//!
//! Most Linux systems leave transparent huge pages to programs that ask for them
//! (`/sys/kernel/mm/transparent_hugepage/enabled` = `madvise`). Without them every 4 KiB of a
//! fresh block costs a page fault when first written: reading a 320 MB matrix took 134,000
//! faults, about a sixth of principal's whole run (bench/results.md). glibc asks for huge pages
//! only under `GLIBC_TUNABLES=glibc.malloc.hugetlb=1`, which a program cannot set for itself;
//! [`HugePages`] does what that setting does, for blocks of at least [`HUGE_BLOCK_BYTES`]:
//! after the system allocator hands one out, `madvise(MADV_HUGEPAGE)` over its whole pages.
//! Where huge pages are off (`never`) or the call fails, nothing changes: the advice is a hint,
//! and the memory is the system allocator's either way.

use std::alloc::{GlobalAlloc, Layout, System};

/// Smallest block [`HugePages`] asks huge pages for: two of the usual 2 MiB pages, so that a
/// block holds at least one whole huge page however it is aligned.
pub const HUGE_BLOCK_BYTES: usize = 4 << 20;

/// [`System`], with huge pages asked for on blocks of at least [`HUGE_BLOCK_BYTES`] (Linux; the
/// plain system allocator elsewhere). For a program's `#[global_allocator]`:
///
/// ```
/// #[global_allocator]
/// static ALLOCATOR: principal_amx::HugePages = principal_amx::HugePages;
///
/// let large = vec![0u8; 16 << 20];
/// assert!(large.iter().all(|&b| b == 0));
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct HugePages;

impl HugePages {
    /// Asks for huge pages over the whole pages of `len` bytes from `block`, if it is large.
    fn advise(block: *mut u8, len: usize) {
        #[cfg(target_os = "linux")]
        if !block.is_null() && len >= HUGE_BLOCK_BYTES {
            const PAGE: usize = 4096;
            let start = (block as usize).next_multiple_of(PAGE);
            let end = (block as usize + len) / PAGE * PAGE;
            // SAFETY: [start, end) lies within the block just allocated, which this program
            // owns; MADV_HUGEPAGE only marks the mapping as eligible for huge pages (it does
            // not change its contents or what may be accessed), and a failure is ignored.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = (block, len);
    }
}

// SAFETY: every call goes to `System` with the same arguments and returns its result; the
// only addition is the advice, which neither reads nor writes the memory.
unsafe impl GlobalAlloc for HugePages {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc`, passed on.
        let block = unsafe { System.alloc(layout) };
        Self::advise(block, layout.size());
        block
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc_zeroed`, passed on. Fresh pages from the
        // system read as zeros whatever their size, so the advice keeps them zeroed.
        let block = unsafe { System.alloc_zeroed(layout) };
        Self::advise(block, layout.size());
        block
    }

    unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract for `dealloc`, passed on.
        unsafe { System.dealloc(block, layout) }
    }

    unsafe fn realloc(&self, block: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract for `realloc`, passed on.
        let moved = unsafe { System.realloc(block, layout, new_size) };
        Self::advise(moved, new_size);
        moved
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Blocks large and small, zeroed or not, grown and shrunk, keep their contents through
    /// the allocator: the advice changes nothing that can be read.
    #[test]
    fn blocks_keep_their_contents() {
        let allocator = HugePages;
        for size in [
            16,
            4096,
            HUGE_BLOCK_BYTES - 1,
            HUGE_BLOCK_BYTES,
            3 * HUGE_BLOCK_BYTES + 123,
        ] {
            let layout = Layout::from_size_align(size, 64).unwrap();
            // SAFETY: a non-zero size; the block is written and read within its size, then
            // grown to a non-zero size and freed with the layout it has.
            unsafe {
                let zeroed = allocator.alloc_zeroed(layout);
                assert!(!zeroed.is_null());
                let bytes = std::slice::from_raw_parts_mut(zeroed, size);
                assert!(bytes.iter().all(|&b| b == 0), "{size} bytes zeroed");
                for (i, b) in bytes.iter_mut().enumerate() {
                    *b = (i % 251) as u8;
                }
                let grown = allocator.realloc(zeroed, layout, 2 * size);
                assert!(!grown.is_null());
                let bytes = std::slice::from_raw_parts(grown, size);
                assert!(bytes.iter().enumerate().all(|(i, &b)| b == (i % 251) as u8));
                allocator.dealloc(grown, Layout::from_size_align(2 * size, 64).unwrap());
                let plain = allocator.alloc(layout);
                assert!(!plain.is_null());
                plain.write_bytes(7, size);
                allocator.dealloc(plain, layout);
            }
        }
    }

    /// A large block's mapping is marked for huge pages (`hg` among its flags in
    /// `/proc/self/smaps`) where the kernel has transparent huge pages; a small block's is not
    /// asked for them. Where the kernel has none, the advice fails and only the contents are
    /// checked (above).
    #[test]
    #[cfg(target_os = "linux")]
    fn large_blocks_are_marked_for_huge_pages() {
        let flags_at = |address: usize| -> Vec<String> {
            let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
            let mut inside = false;
            for line in smaps.lines() {
                if let Some((range, _)) = line.split_once(' ')
                    && let Some((from, to)) = range.split_once('-')
                    && let (Ok(from), Ok(to)) = (
                        usize::from_str_radix(from, 16),
                        usize::from_str_radix(to, 16),
                    )
                {
                    inside = (from..to).contains(&address);
                } else if inside && let Some(flags) = line.strip_prefix("VmFlags:") {
                    return flags.split_whitespace().map(String::from).collect();
                }
            }
            panic!("no mapping holds {address:#x}");
        };
        let has_thp = std::path::Path::new("/sys/kernel/mm/transparent_hugepage/enabled").exists();
        let allocator = HugePages;
        let large = Layout::from_size_align(3 * HUGE_BLOCK_BYTES, 64).unwrap();
        // SAFETY: a non-zero size, freed with its layout; only the address is looked at.
        unsafe {
            let block = allocator.alloc(large);
            let middle = block as usize + large.size() / 2;
            let flags = flags_at(middle);
            assert_eq!(flags.iter().any(|f| f == "hg"), has_thp, "{flags:?}");
            allocator.dealloc(block, large);
        }
        if !has_thp {
            eprintln!("this kernel has no transparent huge pages: only the contents were checked");
        }
    }
}
