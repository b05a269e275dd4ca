//! Intel AMX-INT8's tile product `tdpbusd` (`u8 × i8`, summed exactly in `i32`) behind a safe
//! interface: the one crate of principal with unsafe code. `principal`'s `kernel::amx` packs a
//! block's bytes into [`Tile`]s and walks the triangle of its product; this crate only detects
//! the hardware, configures a thread's tiles and multiplies 2 × 2 blocks of tiles. It also
//! holds the one other instruction that needs `unsafe`, `vpdpbusd` (256-bit in AVX-VNNI and
//! AVX-512 VNNI, 512-bit in AVX-512 VNNI), as tokens ([`Dot256`], [`Vnni512`]) for
//! `principal`'s `kernel::madd`; the command line's allocator, [`HugePages`], which asks Linux
//! for huge pages on large blocks; and
//! [`SubnormalsFlushed`], which sets a thread's MXCSR to flush subnormals while faer's
//! eigensolvers run (their norms make subnormals, slow on Intel cores).
//!
//! AMX (Xeon Sapphire Rapids and later) has 8 tile registers of up to 16 rows × 64 bytes.
//! `tdpbusd tmm_c, tmm_a, tmm_b` adds to C (16 × 16 `i32`) the product of A (16 rows × 64 `u8`)
//! and B (64 × 16 `i8`, stored as 16 rows of 16 groups of 4 consecutive `k`, the "VNNI"
//! layout: `B[k][n]` is byte `4n + k mod 4` of row `k / 4`):
//!
//! ```text
//! C[m][n] += Σ_{k < 64} A[m][k] · B[k / 4][4n + k mod 4]
//! ```
//!
//! 16,384 multiply-adds an instruction, 16 times AVX-512 VNNI's `vpdpbusd`. The sums wrap in
//! `i32` as integer additions do; the caller keeps them within `i32`, so they are exact.
//!
//! Rust's AMX intrinsics are unstable, so the instructions are written with `asm!`, the tile
//! registers named in the template (the compiler never allocates them). Three things must hold
//! before the first tile instruction, and [`available`] checks them once per process: the CPU
//! has AMX-TILE and AMX-INT8 (CPUID leaf 7, EDX bits 24 and 25) and palette 1 holds 8 tiles of
//! 16 rows × 64 bytes (leaf 0x1D); the operating system saves the tile state (XCR0 bits 17 and
//! 18); and Linux has granted this process the tile data state
//! (`arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)`; without it the first tile
//! instruction faults). Then each thread that multiplies loads a tile configuration
//! (`ldtilecfg`: the configuration is per thread) and releases it after (`tilerelease`):
//! [`Tiles`] is that configuration as a value that cannot leave its thread, and its
//! [`Tiles::multiply_block`] the only way to run a tile instruction.

use std::cell::Cell;
use std::marker::PhantomData;
use std::sync::OnceLock;

mod detect;
use detect::{cpu_has_amx_int8, detect};
mod vnni;
pub use vnni::{Avx512Vnni, AvxVnni, Dot256, WithDot256};
mod vnni512;
pub use vnni512::{Lanes16, Vnni512, WithVnni512};
mod huge_pages;
pub use huge_pages::{HUGE_BLOCK_BYTES, HugePages};
mod subnormals;
pub use subnormals::{SubnormalsFlushed, subnormals_flushed};
mod upper_state;
pub use upper_state::clear_upper_state;

/// Rows of a tile (palette 1's largest).
pub const TILE_ROWS: usize = 16;

/// Bytes of a tile's row (palette 1's largest): the `k` a tile of A spans.
pub const TILE_ROW_BYTES: usize = 64;

/// One tile register's contents: 16 rows of 64 bytes, a row a cache line.
#[repr(C, align(64))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tile<E>(pub [[E; TILE_ROW_BYTES]; TILE_ROWS]);

impl<E: Copy + Default> Default for Tile<E> {
    fn default() -> Self {
        Tile([[E::default(); TILE_ROW_BYTES]; TILE_ROWS])
    }
}

/// A 2 × 2 block of C tiles: 32 × 32 `i32`, row-major.
pub type BlockSums = [[i32; 2 * TILE_ROWS]; 2 * TILE_ROWS];

// A slice of tiles is a run of 1,024-byte tiles with no gaps: the kernel steps by 1,024 bytes.
const _: () = assert!(std::mem::size_of::<Tile<u8>>() == TILE_ROWS * TILE_ROW_BYTES);
const _: () = assert!(std::mem::size_of::<Tile<i8>>() == TILE_ROWS * TILE_ROW_BYTES);

/// Whether the tile product runs in this process: the CPU has AMX-TILE and AMX-INT8, the
/// operating system saves tile state and Linux granted this process the tile data state.
/// Decided (and the state requested) on the first call.
pub fn available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(detect)
}

/// Why the tile product does not run here, or `None` where it does: for tests and benchmarks
/// to say what they skipped.
pub fn unavailable_reason() -> Option<&'static str> {
    if available() {
        return None;
    }
    Some(if cfg!(not(target_arch = "x86_64")) {
        "not an x86-64 CPU"
    } else if !cpu_has_amx_int8() {
        "this CPU has no AMX-TILE/AMX-INT8 (CPUID leaf 7)"
    } else {
        "the operating system does not let this process use the tile state (XCR0 or \
         arch_prctl(ARCH_REQ_XCOMP_PERM) refused)"
    })
}

thread_local! {
    /// Whether a [`Tiles`] lives on this thread (a second one's drop would release the first's
    /// configuration).
    static CONFIGURED: Cell<bool> = const { Cell::new(false) };
}

/// This thread's tile configuration: 8 tiles of 16 rows × 64 bytes, loaded by
/// [`Tiles::configure`] and released when dropped. Neither `Send` nor `Sync`: the configuration
/// belongs to the thread that loaded it, so a `&Tiles` proves the thread may run tile
/// instructions.
pub struct Tiles {
    _thread: PhantomData<*const ()>,
    /// No value exists where there are no tiles.
    #[cfg(not(target_arch = "x86_64"))]
    never: std::convert::Infallible,
}

impl Tiles {
    /// Loads the configuration on this thread, or `None` where the tile product does not run
    /// ([`available`]) or this thread already holds a `Tiles`.
    pub fn configure() -> Option<Tiles> {
        if !available() || CONFIGURED.get() {
            return None;
        }
        #[cfg(target_arch = "x86_64")]
        {
            load_configuration();
            CONFIGURED.set(true);
            Some(Tiles {
                _thread: PhantomData,
            })
        }
        #[cfg(not(target_arch = "x86_64"))]
        None
    }

    /// `sums[16I + m][16J + n] = Σ_c Σ_{k < 64} a[I][c][m][k] · b[J][c][k / 4][4n + k mod 4]`
    /// for `I, J ∈ {0, 1}`: the 2 × 2 block of C that row tiles `a` (16 rows of U each, one
    /// tile a chunk of 64 `k`) and column tiles `b` (16 features each, VNNI layout) give over
    /// all their chunks `c`. Sums wrap in `i32` (the caller keeps them exact).
    ///
    /// # Panics
    /// If the four slices differ in length.
    #[track_caller]
    pub fn multiply_block(&self, a: [&[Tile<u8>]; 2], b: [&[Tile<i8>]; 2], sums: &mut BlockSums) {
        let chunks = a[0].len();
        assert!(
            a[1].len() == chunks && b[0].len() == chunks && b[1].len() == chunks,
            "the block's four runs of tiles have the same number of chunks"
        );
        if chunks == 0 {
            *sums = [[0; 2 * TILE_ROWS]; 2 * TILE_ROWS];
            return;
        }
        #[cfg(target_arch = "x86_64")]
        multiply_2x2(a, b, chunks, sums);
        #[cfg(not(target_arch = "x86_64"))]
        match self.never {}
    }
}

impl Drop for Tiles {
    fn drop(&mut self) {
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: a `Tiles` exists only on a thread whose configuration `configure` loaded
            // (AMX present and granted); `tilerelease` returns the tiles to their initial state
            // and touches no memory.
            unsafe { std::arch::asm!("tilerelease", options(nostack, nomem, preserves_flags)) };
            CONFIGURED.set(false);
        }
    }
}

/// The 64-byte operand of `ldtilecfg`: palette 1, tiles 0–7 of 16 rows × 64 bytes.
#[cfg(target_arch = "x86_64")]
#[repr(C, align(64))]
struct Configuration([u8; 64]);

#[cfg(target_arch = "x86_64")]
fn load_configuration() {
    let mut cfg = Configuration([0; 64]);
    cfg.0[0] = 1; // palette 1 (byte 1, the start row, 0)
    for tile in 0..8 {
        // Bytes 16..48: each tile's bytes a row (u16, little-endian); 48..64: its rows.
        cfg.0[16 + 2 * tile..18 + 2 * tile].copy_from_slice(&(TILE_ROW_BYTES as u16).to_le_bytes());
        cfg.0[48 + tile] = TILE_ROWS as u8;
    }
    // SAFETY: called only where `available()` holds (AMX-TILE present, its state enabled and
    // granted); `ldtilecfg` reads the 64 bytes of `cfg`, a valid palette-1 configuration
    // (rows ≤ 16, bytes a row ≤ 64, reserved bytes zero), and writes no memory.
    unsafe {
        std::arch::asm!(
            "ldtilecfg [{cfg}]",
            cfg = in(reg) cfg.0.as_ptr(),
            options(nostack, readonly, preserves_flags),
        )
    };
}

/// The kernel: C tiles 0–3 (the 2 × 2 block), A tiles 4–5, B tiles 6–7; per chunk, 4 loads and
/// 4 `tdpbusd` (each A tile serves two B tiles and each B tile two A tiles).
#[cfg(target_arch = "x86_64")]
fn multiply_2x2(a: [&[Tile<u8>]; 2], b: [&[Tile<i8>]; 2], chunks: usize, sums: &mut BlockSums) {
    // SAFETY: the caller holds a `Tiles` on this thread, so AMX-INT8 is present, its state is
    // granted and tiles 0–7 are configured as 16 rows × 64 bytes. Each `tileloadd` reads one
    // tile (16 rows of 64 bytes, 64 apart: 1,024 contiguous bytes) at the running pointers,
    // which start at the four slices and advance one tile per chunk for `chunks ≥ 1` chunks,
    // the length of all four slices (checked by the caller): every read lies in its slice.
    // The stores write rows of 64 bytes, 128 apart (a row of `sums` is 32 `i32`), at offsets 0
    // and 64 (tiles 0 and 1) and 2,048 and 2,112 (tiles 2 and 3, the block's lower 16 rows):
    // the last byte written is 2,112 + 15·128 + 63 = 4,095, inside the 4,096 bytes of `sums`.
    unsafe {
        std::arch::asm!(
            "tilezero tmm0",
            "tilezero tmm1",
            "tilezero tmm2",
            "tilezero tmm3",
            "2:",
            "tileloadd tmm4, [{a0} + {row}*1]",
            "tileloadd tmm6, [{b0} + {row}*1]",
            "tdpbusd tmm0, tmm4, tmm6",
            "tileloadd tmm7, [{b1} + {row}*1]",
            "tdpbusd tmm1, tmm4, tmm7",
            "tileloadd tmm5, [{a1} + {row}*1]",
            "tdpbusd tmm2, tmm5, tmm6",
            "tdpbusd tmm3, tmm5, tmm7",
            "add {a0}, 1024",
            "add {a1}, 1024",
            "add {b0}, 1024",
            "add {b1}, 1024",
            "dec {chunks}",
            "jnz 2b",
            "tilestored [{out} + {out_row}*1], tmm0",
            "tilestored [{out} + {out_row}*1 + 64], tmm1",
            "tilestored [{out} + {out_row}*1 + 2048], tmm2",
            "tilestored [{out} + {out_row}*1 + 2112], tmm3",
            a0 = inout(reg) a[0].as_ptr() => _,
            a1 = inout(reg) a[1].as_ptr() => _,
            b0 = inout(reg) b[0].as_ptr() => _,
            b1 = inout(reg) b[1].as_ptr() => _,
            chunks = inout(reg) chunks => _,
            row = in(reg) TILE_ROW_BYTES,
            out_row = in(reg) 2 * TILE_ROWS * std::mem::size_of::<i32>(),
            out = in(reg) sums.as_mut_ptr(),
            options(nostack),
        )
    };
}

/// [`Tiles::multiply_block`]'s sums by plain loops: the portable reference, on every machine
/// (for tests, and for running the packing and the triangle where there are no tiles).
///
/// # Panics
/// If the four slices differ in length.
#[track_caller]
pub fn reference_block(a: [&[Tile<u8>]; 2], b: [&[Tile<i8>]; 2], sums: &mut BlockSums) {
    let chunks = a[0].len();
    assert!(
        a[1].len() == chunks && b[0].len() == chunks && b[1].len() == chunks,
        "the block's four runs of tiles have the same number of chunks"
    );
    for (row, out) in sums.iter_mut().enumerate() {
        let (i, m) = (row / TILE_ROWS, row % TILE_ROWS);
        for (column, sum) in out.iter_mut().enumerate() {
            let (j, n) = (column / TILE_ROWS, column % TILE_ROWS);
            let mut total = 0i32;
            for c in 0..chunks {
                for k in 0..TILE_ROW_BYTES {
                    let u = i32::from(a[i][c].0[m][k]);
                    let y = i32::from(b[j][c].0[k / 4][4 * n + k % 4]);
                    total = total.wrapping_add(u * y);
                }
            }
            *sum = total;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn random_tiles<E: Copy + Default>(
        count: usize,
        rng: &mut ChaCha8Rng,
        draw: impl Fn(&mut ChaCha8Rng) -> E,
    ) -> Vec<Tile<E>> {
        (0..count)
            .map(|_| {
                let mut tile = Tile::default();
                for row in tile.0.iter_mut() {
                    for value in row.iter_mut() {
                        *value = draw(rng);
                    }
                }
                tile
            })
            .collect()
    }

    /// The reference against sums written out: one chunk, A's row m all (m + 1), B's feature n
    /// all (n − 8), so `C[m][n] = 64 (m + 1)(n − 8)`; and the VNNI layout's order of `k`
    /// (a single nonzero `k` of A picks byte `4n + k mod 4` of B's row `k / 4`).
    #[test]
    fn the_reference_block_sums_rows_of_a_against_vnni_columns_of_b() {
        let mut a = Tile::<u8>::default();
        for (m, row) in a.0.iter_mut().enumerate() {
            row.fill(m as u8 + 1);
        }
        let mut b = Tile::<i8>::default();
        for row in b.0.iter_mut() {
            for (byte, value) in row.iter_mut().enumerate() {
                *value = (byte / 4) as i8 - 8;
            }
        }
        let mut sums = [[0; 32]; 32];
        reference_block([&[a], &[a]], [&[b], &[b]], &mut sums);
        for (row, out) in sums.iter().enumerate() {
            for (column, &sum) in out.iter().enumerate() {
                let (m, n) = ((row % 16) as i32, (column % 16) as i32);
                assert_eq!(sum, 64 * (m + 1) * (n - 8), "{row}, {column}");
            }
        }
        let mut a = Tile::<u8>::default();
        a.0[3][37] = 1; // row 3, k = 37: B's row 9, byte 4n + 1
        let mut b = Tile::<i8>::default();
        for n in 0..16 {
            b.0[9][4 * n + 1] = n as i8 + 1;
        }
        reference_block([&[a], &[a]], [&[b], &[b]], &mut sums);
        assert_eq!(
            sums[3][..16],
            std::array::from_fn::<i32, 16, _>(|n| n as i32 + 1)
        );
        assert_eq!(
            sums[19][16..],
            std::array::from_fn::<i32, 16, _>(|n| n as i32 + 1)
        );
        assert!(sums[4].iter().all(|&s| s == 0));
    }

    /// `tdpbusd` gives the reference's sums bit for bit on random full bytes (1, 2, 5 and 32
    /// chunks: 64 to 2,048 values of `k`) and on the extremes (255 against −128 and 127), and
    /// overwrites garbage in `sums`. Ignored, with the reason, where the build found no tiles.
    #[test]
    #[cfg_attr(
        not(amx_tiles),
        ignore = "no AMX-INT8 tiles in this process (no AMX-TILE/AMX-INT8 on this CPU, or the \
                  operating system refused the tile state)"
    )]
    // Off x86-64 `Tiles` is uninhabited: the test compiles (and is ignored), its body unreachable.
    #[cfg_attr(not(target_arch = "x86_64"), allow(unreachable_code, unused_variables))]
    fn the_tile_product_gives_the_reference_sums_bit_for_bit() {
        let tiles = Tiles::configure().expect("the build found the tiles here");
        assert!(Tiles::configure().is_none(), "one configuration a thread");
        let mut rng = ChaCha8Rng::seed_from_u64(26);
        for chunks in [1, 2, 5, 32] {
            let a = random_tiles(2 * chunks, &mut rng, |rng| rng.random::<u8>());
            let b = random_tiles(2 * chunks, &mut rng, |rng| rng.random::<i8>());
            let (a0, a1) = a.split_at(chunks);
            let (b0, b1) = b.split_at(chunks);
            let mut want = [[0; 32]; 32];
            reference_block([a0, a1], [b0, b1], &mut want);
            let mut got = [[-7; 32]; 32];
            tiles.multiply_block([a0, a1], [b0, b1], &mut got);
            assert_eq!(got, want, "{chunks} chunks");
        }
        for y in [-128i8, 127] {
            let (a, b) = (
                vec![Tile([[255u8; 64]; 16]); 32],
                vec![Tile([[y; 64]; 16]); 32],
            );
            let mut got = [[0; 32]; 32];
            tiles.multiply_block([&a, &a], [&b, &b], &mut got);
            let want = 255 * i32::from(y) * 2048;
            assert!(got.iter().flatten().all(|&s| s == want), "{y}");
        }
        drop(tiles);
        assert!(
            Tiles::configure().is_some(),
            "released, so a thread may configure again"
        );
    }

    /// The build script's decision (`amx_tiles`, which the tile test's `ignore` follows) is the
    /// library's here; where there are no tiles, no `Tiles` can be made and the reason is given.
    #[test]
    fn the_build_decided_as_the_library_does_here() {
        assert_eq!(
            cfg!(amx_tiles),
            available(),
            "the build and this run disagree on the tiles: rebuild on this machine"
        );
        if !available() {
            let reason = unavailable_reason().expect("no tiles, so a reason");
            println!("AMX tile product not available here: {reason}");
            assert!(Tiles::configure().is_none());
        } else {
            assert_eq!(unavailable_reason(), None);
        }
    }
}
