//! Intel AMX (Advanced Matrix Extensions) kernels: bf16 matrix multiplies on
//! the tile unit, for the encoder's dense layers and attention.
//!
//! Stable Rust has no AMX intrinsics, so the tile instructions are written
//! as inline `asm!` with fixed tile registers. Everything that touches tiles
//! is in this module, each `unsafe` block with the reason it is sound; the
//! rest of the crate calls the safe functions below, which check shapes and
//! slice lengths first.
//!
//! Use is decided at run time by [`available`]: the CPU must report AMX-TILE
//! and AMX-BF16 (CPUID leaf 7), the OS must enable tile state in XCR0, and
//! Linux must grant this process the tile data state (`arch_prctl`
//! `ARCH_REQ_XCOMP_PERM`). Anywhere else callers keep the f32 path. The tile
//! configuration is per thread, so every kernel call loads it and releases
//! the tiles on return (no tile state outlives a call).
//!
//! Not here: the f32 and int8 kernels and the elementwise loops
//! (`kernels`), the model's data flow (`bert`).

#![allow(unsafe_code)]

use std::sync::OnceLock;

use multiversion::multiversion;
use rayon::prelude::*;

/// Rows, columns (of 4-byte elements) and depth (bf16 values) of one tile
/// product: C[16×16 f32] += A[16×32 bf16] · B[32×16 bf16].
const TILE: usize = 16;
/// Depth of one `tdpbf16ps` (32 bf16 values per A-tile row).
const DEPTH: usize = 32;
/// Rows and columns of the register block: 2×2 result tiles.
const BLOCK: usize = 32;

/// Whether the AMX bf16 kernels can run in this process (checked once).
pub fn available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(detect)
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn detect() -> bool {
    use std::arch::x86_64::{__cpuid_count, _xgetbv};
    let leaf1 = __cpuid_count(1, 0);
    let osxsave = leaf1.ecx & (1 << 27) != 0;
    if !osxsave {
        return false;
    }
    let leaf7 = __cpuid_count(7, 0);
    let amx_bf16 = leaf7.edx & (1 << 22) != 0;
    let amx_tile = leaf7.edx & (1 << 24) != 0;
    if !(amx_bf16 && amx_tile) {
        return false;
    }
    // SAFETY: XGETBV is available because OSXSAVE is set (checked above).
    let xcr0 = unsafe { _xgetbv(0) };
    // Bits 17 (XTILECFG) and 18 (XTILEDATA): the OS saves tile state.
    if xcr0 & (0b11 << 17) != 0b11 << 17 {
        return false;
    }
    request_tile_permission()
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
fn detect() -> bool {
    false
}

/// Asks Linux for the tile data state (`arch_prctl(ARCH_REQ_XCOMP_PERM,
/// XFEATURE_XTILEDATA)`); without it the first tile instruction faults.
/// The permission is per process and cannot be dropped, so asking twice is
/// harmless.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn request_tile_permission() -> bool {
    const SYS_ARCH_PRCTL: i64 = 158;
    const ARCH_REQ_XCOMP_PERM: u64 = 0x1023;
    const XFEATURE_XTILEDATA: u64 = 18;
    let result: i64;
    // SAFETY: a plain system call with two integer arguments; the kernel
    // clobbers only rax (result), rcx and r11, declared here. It touches no
    // memory of ours.
    unsafe {
        std::arch::asm!(
            "syscall",
            inlateout("rax") SYS_ARCH_PRCTL => result,
            in("rdi") ARCH_REQ_XCOMP_PERM,
            in("rsi") XFEATURE_XTILEDATA,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    result == 0
}

/// `f32 → bf16` with round-to-nearest-even (the same rounding as
/// `vcvtneps2bf16`); values here are finite.
#[inline(always)]
pub fn to_bf16(value: f32) -> u16 {
    let bits = value.to_bits();
    ((bits + 0x7fff + ((bits >> 16) & 1)) >> 16) as u16
}

/// `bf16 → f32` (exact).
#[inline(always)]
pub fn from_bf16(value: u16) -> f32 {
    f32::from_bits(u32::from(value) << 16)
}

/// Converts `rows` rows of width `width` (row-major, stride `width`) into
/// bf16 rows of stride `stride ≥ width`; the padding columns are set to 0.
#[multiversion(targets("x86_64+avx512f+avx512vl+avx512dq+avx512bw", "x86_64+avx2+fma"))]
pub fn convert_rows(src: &[f32], width: usize, dst: &mut [u16], stride: usize) {
    for (from, to) in src.chunks_exact(width).zip(dst.chunks_exact_mut(stride)) {
        for (d, &s) in to.iter_mut().zip(from) {
            let bits = s.to_bits();
            *d = ((bits + 0x7fff + ((bits >> 16) & 1)) >> 16) as u16;
        }
        to[width..].fill(0);
    }
}

/// A bf16 buffer whose first element sits on a 64-byte boundary, so no
/// 64-byte tile row straddles two cache lines (measured: a 16-byte offset
/// halves the kernel's throughput).
#[derive(Debug, Clone, Default)]
pub struct Bf16Buffer {
    storage: Vec<u16>,
    /// Index of the first aligned element of `storage`.
    start: usize,
    len: usize,
}

impl Bf16Buffer {
    /// `len` zeros.
    pub fn zeroed(len: usize) -> Self {
        let mut buffer = Self::default();
        buffer.reset(len);
        buffer
    }

    /// Makes the buffer `len` values long; the contents are unspecified
    /// (kept where the allocation is reused, zero where it is new).
    pub fn reset(&mut self, len: usize) {
        const SPARE: usize = 32; // 64 bytes of u16: room to align the start
        if self.storage.len() < len + SPARE {
            self.storage = vec![0; len + SPARE];
            let address = self.storage.as_ptr() as usize;
            self.start = (64 - address % 64) % 64 / 2;
        }
        self.len = len;
    }

    /// The values.
    pub fn as_slice(&self) -> &[u16] {
        &self.storage[self.start..self.start + self.len]
    }

    /// The values, writable.
    pub fn as_mut_slice(&mut self) -> &mut [u16] {
        &mut self.storage[self.start..self.start + self.len]
    }
}

/// A weight matrix `[k, n]` rounded to bf16 and packed in the B-tile layout
/// of `tdpbf16ps`: for each group of 16 columns, `k/2` rows of 16 pairs
/// (column `j`'s values for depth `2p` and `2p + 1` adjacent), so each
/// 32-deep, 16-wide tile is 1 KiB of contiguous memory. `k` is padded with
/// zeros to a multiple of 32 and `n` to a multiple of 32.
#[derive(Debug, Clone)]
pub struct Bf16Matrix {
    k: usize,
    n: usize,
    /// `k` rounded up to a multiple of [`DEPTH`].
    k_pad: usize,
    /// `n` rounded up to a multiple of [`BLOCK`].
    n_pad: usize,
    packed: Bf16Buffer,
}

impl Bf16Matrix {
    /// Packs a row-major `[k, n]` f32 matrix.
    pub fn pack(weight: &[f32], k: usize, n: usize) -> Self {
        assert_eq!(weight.len(), k * n, "weight shape");
        let k_pad = k.div_ceil(DEPTH) * DEPTH;
        let n_pad = n.div_ceil(BLOCK) * BLOCK;
        let mut packed = Bf16Buffer::zeroed(k_pad * n_pad);
        let values = packed.as_mut_slice();
        for kk in 0..k {
            for j in 0..n {
                values[Self::index(kk, j, k_pad)] = to_bf16(weight[kk * n + j]);
            }
        }
        Self { k, n, k_pad, n_pad, packed }
    }

    /// Position of element (kk, j) in the packed layout.
    fn index(kk: usize, j: usize, k_pad: usize) -> usize {
        ((j / TILE * (k_pad / 2) + kk / 2) * TILE + j % TILE) * 2 + kk % 2
    }

    /// Rows (input width).
    pub fn k(&self) -> usize {
        self.k
    }

    /// Columns (output width).
    pub fn n(&self) -> usize {
        self.n
    }

    /// Row stride (in bf16 values) an input must have: `k` padded to 32.
    pub fn input_stride(&self) -> usize {
        self.k_pad
    }
}

/// Rows of the bf16 input buffer for `rows` rows of data: padded to the
/// register block, so every tile load stays inside the buffer.
pub fn padded_rows(rows: usize) -> usize {
    rows.div_ceil(BLOCK) * BLOCK
}

/// `out[rows, n] = a[rows, k] · W` on the AMX unit, f32 accumulation.
///
/// `a` holds bf16 rows of stride `w.input_stride()` (zero-padded columns),
/// at least [`padded_rows`]`(rows)` of them (the padding rows' values are
/// ignored in the result), best 64-byte aligned (a [`Bf16Buffer`]). `out` is row-major `rows × w.n()`. With
/// `threads > 1` the rows are split into that many contiguous parts, one
/// task each (each task loads the tile configuration once).
///
/// # Panics
/// When AMX is not [`available`] or a buffer is too short.
pub fn matmul(a: &[u16], rows: usize, w: &Bf16Matrix, out: &mut [f32], threads: usize) {
    assert!(available(), "AMX kernels called on a CPU or OS without AMX");
    let (k_pad, n) = (w.k_pad, w.n);
    assert!(a.len() >= padded_rows(rows) * k_pad, "input buffer shorter than the padded rows");
    assert_eq!(out.len(), rows * n, "output shape");
    if rows == 0 || n == 0 {
        return;
    }
    let blocks = padded_rows(rows) / BLOCK;
    let part_rows = blocks.div_ceil(threads.clamp(1, blocks)) * BLOCK;
    let work = |(part, out_rows): (usize, &mut [f32])| {
        let first = part * part_rows;
        let count = out_rows.len() / n;
        let a_rows = &a[first * k_pad..(first + padded_rows(count)) * k_pad];
        // SAFETY: `available()` holds (asserted above); the slices have the
        // lengths `matmul_rows` asserts.
        unsafe { matmul_rows(a_rows, count, w, out_rows) };
    };
    if threads > 1 {
        out.par_chunks_mut(part_rows * n).enumerate().for_each(work);
    } else {
        work((0, out));
    }
}

/// The tile configuration: palette 1, all eight tiles 16 rows × 64 bytes.
#[repr(C, align(64))]
struct TileConfig([u8; 64]);

impl TileConfig {
    fn full() -> Self {
        let mut bytes = [0_u8; 64];
        bytes[0] = 1;
        for tile in 0..8 {
            bytes[16 + 2 * tile] = 64;
            bytes[48 + tile] = TILE as u8;
        }
        Self(bytes)
    }
}

/// One task: `out[count, n] = a · W` for `count` rows, 2×2 result tiles in
/// tmm0–3, the two A tiles in tmm4–5, the two B tiles in tmm6–7.
///
/// # Safety
/// AMX must be [`available`]. `a` must hold `padded_rows(count) · k_pad`
/// values and `out` `count · n` (asserted).
#[cfg(target_arch = "x86_64")]
unsafe fn matmul_rows(a: &[u16], count: usize, w: &Bf16Matrix, out: &mut [f32]) {
    use std::arch::asm;
    let (k_pad, n, n_pad) = (w.k_pad, w.n, w.n_pad);
    let packed = w.packed.as_slice();
    let row_blocks = padded_rows(count) / BLOCK;
    assert!(a.len() >= row_blocks * BLOCK * k_pad && out.len() >= count * n && packed.len() >= k_pad * n_pad);
    let config = TileConfig::full();
    let a_stride = k_pad * 2; // bytes between A rows
    let b_stride = 64_usize; // bytes between B-tile rows (16 pairs)
    let tile_values = TILE * DEPTH; // bf16 values in one packed B tile
    let mut scratch = [0.0_f32; TILE * TILE];
    // SAFETY: `config` is a valid palette-1 configuration (64-byte aligned).
    unsafe { asm!("ldtilecfg [{0}]", in(reg) config.0.as_ptr(), options(nostack, readonly)) };
    // Row blocks outside, column blocks inside: a block's 32 input rows
    // (24 KiB at width 384) stay in L1 while the weights stream from L2.
    // Measured on the 2-core VM at 384×1152: 850–920 GFLOP/s per core-second
    // this way, 190–250 with weight panels kept in L1 and 128 input rows
    // streamed instead.
    for row_block in 0..row_blocks {
        let a_top = a.as_ptr().wrapping_add(row_block * BLOCK * k_pad);
        let a_bottom = a_top.wrapping_add(TILE * k_pad);
        for column_block in 0..n_pad / BLOCK {
            let b_first = packed.as_ptr().wrapping_add(column_block * 2 * (k_pad / 2) * TILE * 2);
            let b_second = b_first.wrapping_add((k_pad / 2) * TILE * 2);
            // SAFETY: zeroing tiles touches no memory.
            unsafe {
                asm!("tilezero tmm0", "tilezero tmm1", "tilezero tmm2", "tilezero tmm3", options(nostack, nomem))
            };
            for depth_block in 0..k_pad / DEPTH {
                // SAFETY: A tiles read 16 rows of 64 bytes from row
                // row_block·32 (+16), column depth_block·32: inside `a`
                // (rows < row_blocks·32, columns < k_pad). B tiles read 1 KiB
                // at tile (column group, depth block): inside `packed`
                // (column groups < n_pad/16, depth < k_pad).
                unsafe {
                    asm!(
                        "tileloadd tmm4, [{a0} + {sa}*1]",
                        "tileloadd tmm5, [{a1} + {sa}*1]",
                        "tileloadd tmm6, [{b0} + {sb}*1]",
                        "tileloadd tmm7, [{b1} + {sb}*1]",
                        "tdpbf16ps tmm0, tmm4, tmm6",
                        "tdpbf16ps tmm1, tmm4, tmm7",
                        "tdpbf16ps tmm2, tmm5, tmm6",
                        "tdpbf16ps tmm3, tmm5, tmm7",
                        a0 = in(reg) a_top.add(depth_block * DEPTH),
                        a1 = in(reg) a_bottom.add(depth_block * DEPTH),
                        b0 = in(reg) b_first.add(depth_block * tile_values),
                        b1 = in(reg) b_second.add(depth_block * tile_values),
                        sa = in(reg) a_stride,
                        sb = in(reg) b_stride,
                        options(nostack, readonly),
                    );
                }
            }
            for (tile_index, (tile_row, tile_column)) in [(0, 0), (0, 1), (1, 0), (1, 1)].into_iter().enumerate() {
                let row = row_block * BLOCK + tile_row * TILE;
                let column = column_block * BLOCK + tile_column * TILE;
                if row >= count || column >= n {
                    continue;
                }
                let full = row + TILE <= count && column + TILE <= n;
                let (target, stride) = if full {
                    (out.as_mut_ptr().wrapping_add(row * n + column), n * 4)
                } else {
                    (scratch.as_mut_ptr(), TILE * 4)
                };
                // SAFETY: a full tile writes rows row..row+16 and columns
                // column..column+16 of `out`, all inside it (checked by
                // `full`); a partial one writes the 16×16 scratch.
                unsafe { store_tile(tile_index, target, stride) };
                if !full {
                    for r in 0..TILE.min(count - row) {
                        let width = TILE.min(n - column);
                        out[(row + r) * n + column..(row + r) * n + column + width]
                            .copy_from_slice(&scratch[r * TILE..r * TILE + width]);
                    }
                }
            }
        }
    }
    // SAFETY: releases this thread's tile state; no tile is used after.
    unsafe { asm!("tilerelease", options(nostack, nomem)) };
}

#[cfg(not(target_arch = "x86_64"))]
unsafe fn matmul_rows(_: &[u16], _: usize, _: &Bf16Matrix, _: &mut [f32]) {
    unreachable!("AMX is never available off x86_64")
}

/// `tilestored` of result tile `index` (0–3) to `target` with `stride` bytes
/// between rows.
///
/// # Safety
/// 16 rows of 64 bytes at `target + r·stride` must be writable.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn store_tile(index: usize, target: *mut f32, stride: usize) {
    use std::arch::asm;
    // SAFETY: the caller guarantees the 16 rows are writable.
    unsafe {
        match index {
            0 => asm!("tilestored [{t} + {s}*1], tmm0", t = in(reg) target, s = in(reg) stride, options(nostack)),
            1 => asm!("tilestored [{t} + {s}*1], tmm1", t = in(reg) target, s = in(reg) stride, options(nostack)),
            2 => asm!("tilestored [{t} + {s}*1], tmm2", t = in(reg) target, s = in(reg) stride, options(nostack)),
            _ => asm!("tilestored [{t} + {s}*1], tmm3", t = in(reg) target, s = in(reg) stride, options(nostack)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pseudo_random(n: usize, seed: u32) -> Vec<f32> {
        let mut state = seed;
        (0..n)
            .map(|_| {
                state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                (state >> 8) as f32 / (1 << 24) as f32 * 2.0 - 1.0
            })
            .collect()
    }

    /// The scalar product of the bf16-rounded inputs, in f64.
    fn reference(a: &[f32], rows: usize, k: usize, w: &[f32], n: usize) -> Vec<f32> {
        let round = |v: f32| f64::from(from_bf16(to_bf16(v)));
        let mut out = vec![0.0; rows * n];
        for r in 0..rows {
            for j in 0..n {
                out[r * n + j] = (0..k).map(|kk| round(a[r * k + kk]) * round(w[kk * n + j])).sum::<f64>() as f32;
            }
        }
        out
    }

    fn amx_product(a: &[f32], rows: usize, k: usize, w: &Bf16Matrix, threads: usize) -> Vec<f32> {
        let stride = w.input_stride();
        let mut buffer = Bf16Buffer::zeroed(padded_rows(rows) * stride);
        convert_rows(a, k, buffer.as_mut_slice(), stride);
        let mut out = vec![f32::NAN; rows * w.n()];
        matmul(buffer.as_slice(), rows, w, &mut out, threads);
        out
    }

    #[test]
    fn bf16_rounding_is_to_nearest_even() {
        assert_eq!(to_bf16(1.0), 0x3f80);
        // 1 + 2^-8 lies halfway between two bf16 values: ties go to even.
        assert_eq!(to_bf16(1.0 + 1.0 / 256.0), 0x3f80);
        assert_eq!(to_bf16(1.0 + 3.0 / 256.0), 0x3f82);
        assert_eq!(from_bf16(to_bf16(-2.5)), -2.5);
    }

    #[test]
    fn amx_products_of_odd_shapes_match_a_scalar_reference() {
        // The project's machines (and CI) have AMX; on one without, this
        // test cannot check the kernel and says so.
        assert!(available(), "this CPU or OS lacks AMX, so the AMX kernel cannot be tested here");
        for (rows, k, n, threads) in
            [(1, 1, 1, 1), (5, 7, 3, 1), (17, 33, 17, 1), (31, 64, 48, 2), (33, 95, 70, 2), (130, 384, 96, 2)]
        {
            let a = pseudo_random(rows * k, 7 + rows as u32);
            let w = pseudo_random(k * n, 11 + n as u32);
            let packed = Bf16Matrix::pack(&w, k, n);
            let got = amx_product(&a, rows, k, &packed, threads);
            let want = reference(&a, rows, k, &w, n);
            for (index, (g, e)) in got.iter().zip(&want).enumerate() {
                // Products of bf16 values are exact in f32; only the f32
                // accumulation order differs from the f64 reference.
                assert!((g - e).abs() <= 1e-5 * (k as f32).sqrt() * 4.0, "{rows}×{k}·{k}×{n} at {index}: {g} vs {e}");
            }
        }
    }
}
