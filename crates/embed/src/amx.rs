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

/// `dst = bf16(src + bias)` row by row (width `bias.len()`), into rows of
/// stride `stride` (padding columns set to 0).
#[multiversion(targets("x86_64+avx512f+avx512vl+avx512dq+avx512bw", "x86_64+avx2+fma"))]
pub fn bias_to_bf16(src: &[f32], bias: &[f32], dst: &mut [u16], stride: usize) {
    let width = bias.len();
    for (from, to) in src.chunks_exact(width).zip(dst.chunks_exact_mut(stride)) {
        for ((d, &s), &b) in to.iter_mut().zip(from).zip(bias) {
            let bits = (s + b).to_bits();
            *d = ((bits + 0x7fff + ((bits >> 16) & 1)) >> 16) as u16;
        }
        to[width..].fill(0);
    }
}

/// The exact GELU `x·Φ(x)` to within 3e-5·|x| (Abramowitz & Stegun 7.1.25
/// for erf, `exp2_coarse` for its exponential): its result is rounded to
/// bf16 (2^-9 relative) next, and this costs about two thirds of
/// `kernels::fast_erf`'s five-term form.
#[inline(always)]
fn gelu_coarse(x: f32) -> f32 {
    let v = x * std::f32::consts::FRAC_1_SQRT_2;
    let a = v.abs();
    let t = 1.0 / (1.0 + 0.470_47 * a);
    let poly = t * (0.348_024_2 + t * (-0.095_879_8 + t * 0.747_855_6));
    let erf_abs = 1.0 - poly * exp2_coarse(-a * a * std::f32::consts::LOG2_E);
    let erf = if v < 0.0 { -erf_abs } else { erf_abs };
    0.5 * x * (1.0 + erf)
}

/// `dst = bf16(gelu(src + bias))` row by row (width `bias.len()`), into rows
/// of stride `stride` (padding columns set to 0), rounded once for the next
/// multiply.
#[multiversion(targets("x86_64+avx512f+avx512vl+avx512dq+avx512bw", "x86_64+avx2+fma"))]
pub fn bias_gelu_to_bf16(src: &[f32], bias: &[f32], dst: &mut [u16], stride: usize) {
    let width = bias.len();
    for (from, to) in src.chunks_exact(width).zip(dst.chunks_exact_mut(stride)) {
        for ((d, &s), &b) in to.iter_mut().zip(from).zip(bias) {
            let g = gelu_coarse(s + b);
            let bits = g.to_bits();
            *d = ((bits + 0x7fff + ((bits >> 16) & 1)) >> 16) as u16;
        }
        to[width..].fill(0);
    }
}

/// A buffer whose first element sits on a 64-byte boundary, so no 64-byte
/// tile row straddles two cache lines (measured: a 16-byte offset halves
/// the kernel's throughput).
#[derive(Debug, Clone, Default)]
pub struct Aligned<T> {
    storage: Vec<T>,
    /// Index of the first aligned element of `storage`.
    start: usize,
    len: usize,
}

/// bf16 values, 64-byte aligned.
pub type Bf16Buffer = Aligned<u16>;

impl<T: Copy + Default> Aligned<T> {
    /// `len` zeros.
    pub fn zeroed(len: usize) -> Self {
        let mut buffer = Self::default();
        buffer.reset(len);
        buffer
    }

    /// Makes the buffer `len` values long; the contents are unspecified
    /// (kept where the allocation is reused, zero where it is new).
    pub fn reset(&mut self, len: usize) {
        let size = std::mem::size_of::<T>();
        let spare = 64 / size; // room to align the start
        if self.storage.len() < len + spare {
            self.storage = vec![T::default(); len + spare];
            let address = self.storage.as_ptr() as usize;
            self.start = (64 - address % 64) % 64 / size;
        }
        self.len = len;
    }

    /// The values.
    pub fn as_slice(&self) -> &[T] {
        &self.storage[self.start..self.start + self.len]
    }

    /// The values, writable.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
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
    matmul_then(a, rows, w, Some(out), threads, Epilogue::None, &mut [], 0);
}

/// What [`matmul_then`] does with each block of 32 finished output rows
/// while they are still in cache: the f32 results of a 4,096-token pass
/// (up to 25 MB) would otherwise go out to memory and come back.
#[derive(Debug, Clone, Copy)]
pub enum Epilogue<'a> {
    /// Nothing: the f32 result stays in `out`.
    None,
    /// `staged = bf16(out + bias)`.
    Bias(&'a [f32]),
    /// `staged = bf16(gelu(out + bias))` (the exact GELU).
    BiasGelu(&'a [f32]),
    /// `out = layer_norm(out + residual + bias)` and `staged = bf16(out)`;
    /// `residual` has the rows and width of `out`.
    ResidualNorm {
        /// Added before the norm.
        residual: &'a [f32],
        /// Added before the norm.
        bias: &'a [f32],
        /// Norm scale.
        gamma: &'a [f32],
        /// Norm shift.
        beta: &'a [f32],
        /// Norm epsilon.
        eps: f32,
    },
}

impl Epilogue<'_> {
    /// Applies the epilogue to `rows` (output rows from `first` on, width
    /// `width`), writing bf16 rows of stride `stride` into `staged`.
    fn apply(self, rows: &mut [f32], width: usize, first: usize, staged: &mut [u16], stride: usize) {
        match self {
            Self::None => {}
            Self::Bias(bias) => bias_to_bf16(rows, bias, staged, stride),
            Self::BiasGelu(bias) => bias_gelu_to_bf16(rows, bias, staged, stride),
            Self::ResidualNorm { residual, bias, gamma, beta, eps } => {
                let residual = &residual[first * width..first * width + rows.len()];
                crate::kernels::add_bias_residual_norm(rows, residual, bias, gamma, beta, eps);
                convert_rows(rows, width, staged, stride);
            }
        }
    }
}

/// [`matmul`], then `epilogue` on each block of finished rows, writing its
/// bf16 rows (stride `stride`) into `staged`, which must hold `rows` rows
/// (unused, and may be empty, for [`Epilogue::None`]).
///
/// `out` may be `None` when only the bf16 rows are wanted
/// ([`Epilogue::Bias`], [`Epilogue::BiasGelu`]): each task then computes
/// into one block of 32 rows that stays in cache, and no `rows × n` f32
/// buffer is written at all.
///
/// # Panics
/// As [`matmul`]; when `staged` is too short or a residual has the wrong
/// shape.
#[allow(clippy::too_many_arguments)]
pub fn matmul_then(
    a: &[u16],
    rows: usize,
    w: &Bf16Matrix,
    out: Option<&mut [f32]>,
    threads: usize,
    epilogue: Epilogue<'_>,
    staged: &mut [u16],
    stride: usize,
) {
    assert!(available(), "AMX kernels called on a CPU or OS without AMX");
    let (k_pad, n) = (w.k_pad, w.n);
    assert!(a.len() >= padded_rows(rows) * k_pad, "input buffer shorter than the padded rows");
    match &out {
        Some(out) => assert_eq!(out.len(), rows * n, "output shape"),
        None => assert!(
            matches!(epilogue, Epilogue::Bias(_) | Epilogue::BiasGelu(_)),
            "only a bias or GELU epilogue can run without an f32 output"
        ),
    }
    let staged_rows = if matches!(epilogue, Epilogue::None) { 0 } else { rows };
    assert!(staged.len() >= staged_rows * stride && (staged_rows == 0 || stride >= n), "staged buffer too short");
    if let Epilogue::ResidualNorm { residual, .. } = epilogue {
        assert_eq!(residual.len(), rows * n, "residual shape");
    }
    if rows == 0 || n == 0 {
        return;
    }
    let blocks = padded_rows(rows) / BLOCK;
    let part_rows = blocks.div_ceil(threads.clamp(1, blocks)) * BLOCK;
    // One task per part: its output rows and its staged rows.
    let mut tasks = Vec::with_capacity(blocks.div_ceil(part_rows / BLOCK));
    let (mut out_rest, mut staged_rest) = (out, &mut staged[..staged_rows * stride]);
    let mut first = 0;
    while first < rows {
        let count = part_rows.min(rows - first);
        let out_part = match out_rest.take() {
            Some(rest) => {
                let (part, tail) = rest.split_at_mut(count * n);
                out_rest = Some(tail);
                Some(part)
            }
            None => None,
        };
        let staged_count = if staged_rows == 0 { 0 } else { count * stride };
        let (staged_part, staged_tail) = staged_rest.split_at_mut(staged_count);
        tasks.push((first, count, out_part, staged_part));
        staged_rest = staged_tail;
        first += count;
    }
    let work = |(first, count, out_rows, staged_part): (usize, usize, Option<&mut [f32]>, &mut [u16])| {
        let a_rows = &a[first * k_pad..(first + padded_rows(count)) * k_pad];
        match out_rows {
            Some(out_rows) => {
                let mut finish = |start: usize, end: usize, block: &mut [f32]| {
                    let staged_block = if staged_part.is_empty() {
                        &mut [][..]
                    } else {
                        &mut staged_part[start * stride..end * stride]
                    };
                    epilogue.apply(block, n, first + start, staged_block, stride);
                };
                // SAFETY: `available()` holds (asserted above); the slices
                // have the lengths `matmul_rows` asserts.
                unsafe { matmul_rows(a_rows, count, w, out_rows, &mut finish) };
            }
            None => {
                // One block of rows at a time into a buffer that stays in
                // cache; the epilogue takes the rows from there.
                let mut block = vec![0.0_f32; BLOCK * n];
                for start in (0..count).step_by(BLOCK) {
                    let rows_here = BLOCK.min(count - start);
                    let a_block = &a_rows[start * k_pad..(start + BLOCK) * k_pad];
                    let staged_block = &mut staged_part[start * stride..(start + rows_here) * stride];
                    let mut finish = |_: usize, _: usize, rows: &mut [f32]| {
                        epilogue.apply(rows, n, first + start, staged_block, stride);
                    };
                    // SAFETY: as above.
                    unsafe { matmul_rows(a_block, rows_here, w, &mut block[..rows_here * n], &mut finish) };
                }
            }
        }
    };
    if threads > 1 {
        tasks.into_par_iter().for_each(work);
    } else {
        tasks.into_iter().for_each(work);
    }
}

/// Loads [`TileConfig::full`] for this thread.
///
/// # Safety
/// AMX must be [`available`].
#[cfg(target_arch = "x86_64")]
unsafe fn configure_tiles() {
    let config = TileConfig::full();
    // SAFETY: a valid palette-1 configuration, 64-byte aligned; the caller
    // guarantees AMX and the permission.
    unsafe { std::arch::asm!("ldtilecfg [{0}]", in(reg) config.0.as_ptr(), options(nostack, readonly)) };
}

/// Returns this thread's tiles to their initial state (cheaper context
/// switches; no tile state outlives a kernel call).
///
/// # Safety
/// AMX must be [`available`].
#[cfg(target_arch = "x86_64")]
unsafe fn release_tiles() {
    // SAFETY: the caller guarantees AMX.
    unsafe { std::arch::asm!("tilerelease", options(nostack, nomem)) };
}

#[cfg(not(target_arch = "x86_64"))]
unsafe fn configure_tiles() {}

#[cfg(not(target_arch = "x86_64"))]
unsafe fn release_tiles() {}

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
/// values and `out` `count · n` (asserted). `finish(start, end, rows)` is
/// called with each block of finished rows.
#[cfg(target_arch = "x86_64")]
unsafe fn matmul_rows(
    a: &[u16],
    count: usize,
    w: &Bf16Matrix,
    out: &mut [f32],
    finish: &mut dyn FnMut(usize, usize, &mut [f32]),
) {
    use std::arch::asm;
    let (k_pad, n, n_pad) = (w.k_pad, w.n, w.n_pad);
    let packed = w.packed.as_slice();
    let row_blocks = padded_rows(count) / BLOCK;
    assert!(a.len() >= row_blocks * BLOCK * k_pad && out.len() >= count * n && packed.len() >= k_pad * n_pad);
    let a_stride = k_pad * 2; // bytes between A rows
    let b_stride = 64_usize; // bytes between B-tile rows (16 pairs)
    let tile_values = TILE * DEPTH; // bf16 values in one packed B tile
    let mut scratch = [0.0_f32; TILE * TILE];
    // SAFETY: the caller guarantees AMX.
    unsafe { configure_tiles() };
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
        // The block's rows are complete: the epilogue runs while they are
        // in cache. It uses no tiles, so the configuration stays loaded.
        let start = row_block * BLOCK;
        let end = (start + BLOCK).min(count);
        if start < end {
            finish(start, end, &mut out[start * n..end * n]);
        }
    }
    // SAFETY: no tile is used after.
    unsafe { release_tiles() };
}

/// Width of an attention head the AMX attention handles: one tile depth.
pub const HEAD_DIM: usize = DEPTH;

/// Buffers of [`attention`], reused from text to text.
#[derive(Debug, Default)]
pub struct AttentionScratch {
    /// One head's keys in B-tile layout: per block of 16 tokens, 16 rows of
    /// (token, dimension pair).
    keys: Bf16Buffer,
    /// One head's values in B-tile layout: per block of 32 tokens, two
    /// tiles (dimensions 0–15, 16–31) of 16 rows of (dimension, token pair).
    values: Bf16Buffer,
    /// Scores of 16 queries, `[16, keys padded to 16]`.
    scores: Aligned<f32>,
    /// Their softmax, `[16, keys padded to 32]` (zero beyond the length).
    probabilities: Bf16Buffer,
    /// One 16×32 output block.
    block: Aligned<f32>,
}

/// Rows [`attention`] reads for a text of `length` tokens: its length
/// rounded up to 32 (the rows past the text may hold anything finite).
pub fn attention_rows(length: usize) -> usize {
    length.div_ceil(BLOCK) * BLOCK
}

/// Self-attention of one text of `length` tokens on the AMX unit:
/// `out[i, head·32 + d] = Σ_j softmax_j(q_i·k_j · scale) · v_j[d]`.
///
/// `rows` holds the text's bf16 rows `[query | key | value]` (width
/// `3·heads·32`), at least [`attention_rows`]`(length)` of them: the rows
/// past the text (the next text's, or spare rows) are read by the tile
/// loads but never reach the result, as long as they are finite. `out`
/// receives the text's context rows in bf16 (width `heads·32`). Scores and
/// softmax are f32, the probabilities rounded to bf16 for the product with
/// the values.
///
/// # Panics
/// When AMX is not [`available`] or the shapes disagree.
pub fn attention(
    rows: &[u16],
    length: usize,
    heads: usize,
    scale: f32,
    out: &mut [u16],
    scratch: &mut AttentionScratch,
) {
    assert!(available(), "AMX kernels called on a CPU or OS without AMX");
    let hidden = heads * HEAD_DIM;
    let rows16 = length.div_ceil(TILE) * TILE;
    let rows32 = attention_rows(length);
    assert!(rows.len() >= rows32 * 3 * hidden, "attention needs the text's rows padded to 32");
    assert_eq!(out.len(), length * hidden, "output shape");
    if length == 0 {
        return;
    }
    scratch.keys.reset(rows16 * HEAD_DIM);
    scratch.values.reset(rows32 * HEAD_DIM);
    scratch.scores.reset(TILE * rows16);
    scratch.probabilities.reset(TILE * rows32);
    scratch.block.reset(TILE * HEAD_DIM);
    scratch.probabilities.as_mut_slice().fill(0);
    // The tile configuration holds for the whole text: the loops between
    // tile instructions (packing, softmax) use no tiles. Measured: loading
    // it per query block cost more than the products.
    // SAFETY: `available()` holds.
    unsafe { configure_tiles() };
    for head in 0..heads {
        pack_head(rows, hidden, head, rows16, rows32, scratch);
        for query_block in 0..rows16 / TILE {
            // SAFETY: `available()` holds, tiles are configured; the buffers
            // were sized above for this length.
            unsafe { head_scores(rows, scratch, query_block, rows16, hidden, head) };
            let valid = TILE.min(length - query_block * TILE);
            softmax_to_bf16(
                scratch.scores.as_mut_slice(),
                rows16,
                valid,
                length,
                scale,
                scratch.probabilities.as_mut_slice(),
                rows32,
            );
            // SAFETY: as above.
            unsafe { head_context(scratch, rows32) };
            let block = scratch.block.as_slice();
            for r in 0..valid {
                let row = query_block * TILE + r;
                convert_rows(
                    &block[r * HEAD_DIM..(r + 1) * HEAD_DIM],
                    HEAD_DIM,
                    &mut out[row * hidden + head * HEAD_DIM..row * hidden + (head + 1) * HEAD_DIM],
                    HEAD_DIM,
                );
            }
        }
    }
    // SAFETY: no tile is used after.
    unsafe { release_tiles() };
}

/// Copies one head's keys and values from the bf16 rows into their B-tile
/// layouts.
fn pack_head(rows: &[u16], hidden: usize, head: usize, rows16: usize, rows32: usize, scratch: &mut AttentionScratch) {
    let width = 3 * hidden;
    // Keys: per block of 16 tokens, row = dimension pair, column = token.
    // Written in output order: the 16 source rows of a block stay in L1,
    // while scattered writes were most of this function's time.
    let keys = scratch.keys.as_mut_slice();
    let key_base = hidden + head * HEAD_DIM;
    for (index, pair) in keys[..rows16 * HEAD_DIM].chunks_exact_mut(2).enumerate() {
        let (block, dimension_pair, column) = (index / (TILE * TILE), index / TILE % TILE, index % TILE);
        let at = (block * TILE + column) * width + key_base + 2 * dimension_pair;
        pair.copy_from_slice(&rows[at..at + 2]);
    }
    // Values: per block of 32 tokens, two tiles (dimensions 0–15, 16–31);
    // row = token pair, column = dimension.
    let values = scratch.values.as_mut_slice();
    let value_base = 2 * hidden + head * HEAD_DIM;
    for token_pair in 0..rows32 / 2 {
        let (block, row) = (token_pair / TILE, token_pair % TILE);
        let first = &rows[2 * token_pair * width + value_base..2 * token_pair * width + value_base + HEAD_DIM];
        let second =
            &rows[(2 * token_pair + 1) * width + value_base..(2 * token_pair + 1) * width + value_base + HEAD_DIM];
        for half in 0..2 {
            // One 64-byte tile row: the two tokens' values interleaved.
            let at = ((block * 2 + half) * TILE + row) * TILE * 2;
            let target = &mut values[at..at + TILE * 2];
            let (a, b) = (&first[half * TILE..(half + 1) * TILE], &second[half * TILE..(half + 1) * TILE]);
            for ((pair, &x), &y) in target.chunks_exact_mut(2).zip(a).zip(b) {
                pair[0] = x;
                pair[1] = y;
            }
        }
    }
}

/// Scores of query block `query_block` against every key block, into
/// `scratch.scores` (`[16, rows16]`).
///
/// # Safety
/// AMX must be available and the tiles configured ([`configure_tiles`]);
/// the scratch buffers must be sized by [`attention`] for a text of
/// `rows16` padded rows.
#[cfg(target_arch = "x86_64")]
unsafe fn head_scores(
    rows: &[u16],
    scratch: &mut AttentionScratch,
    query_block: usize,
    rows16: usize,
    hidden: usize,
    head: usize,
) {
    use std::arch::asm;
    let keys = scratch.keys.as_slice();
    let scores = scratch.scores.as_mut_slice();
    let width = 3 * hidden;
    assert!(rows.len() >= rows16 * width && keys.len() >= rows16 * HEAD_DIM && scores.len() >= TILE * rows16);
    assert!((head + 1) * HEAD_DIM <= hidden);
    // SAFETY: tmm0 reads 16 rows of 64 bytes, rows query_block·16.. (<
    // rows16) at column head·32 (+32 ≤ hidden) with stride 3·hidden: inside
    // `rows`.
    unsafe {
        asm!(
            "tileloadd tmm0, [{q} + {s}*1]",
            q = in(reg) rows.as_ptr().add(query_block * TILE * width + head * HEAD_DIM),
            s = in(reg) width * 2,
            options(nostack, readonly),
        );
    }
    for key_block in 0..rows16 / TILE {
        // SAFETY: key tile `key_block` is 1 KiB inside `keys`; the result
        // goes to columns key_block·16.. of the 16 score rows (stride
        // rows16), inside `scores`.
        unsafe {
            asm!(
                "tileloadd tmm1, [{k} + {sk}*1]",
                "tilezero tmm4",
                "tdpbf16ps tmm4, tmm0, tmm1",
                "tilestored [{c} + {sc}*1], tmm4",
                k = in(reg) keys.as_ptr().add(key_block * TILE * HEAD_DIM),
                sk = in(reg) 64_usize,
                c = in(reg) scores.as_mut_ptr().add(key_block * TILE),
                sc = in(reg) rows16 * 4,
                options(nostack),
            );
        }
    }
}

/// `block[16, 32] = probabilities[16, rows32] · values`.
///
/// # Safety
/// As [`head_scores`], for `rows32` padded rows.
#[cfg(target_arch = "x86_64")]
unsafe fn head_context(scratch: &mut AttentionScratch, rows32: usize) {
    use std::arch::asm;
    let probabilities = scratch.probabilities.as_slice();
    let values = scratch.values.as_slice();
    let block = scratch.block.as_mut_slice();
    assert!(
        probabilities.len() >= TILE * rows32 && values.len() >= rows32 * HEAD_DIM && block.len() >= TILE * HEAD_DIM
    );
    // SAFETY: zeroing touches no memory.
    unsafe { asm!("tilezero tmm4", "tilezero tmm5", options(nostack, nomem)) };
    for value_block in 0..rows32 / BLOCK {
        // SAFETY: the probability tile is 16 rows of 64 bytes at column
        // value_block·32 (< rows32) with stride rows32·2 bytes; the two
        // value tiles are 1 KiB each at tiles 2·value_block (+1) — all
        // inside their buffers.
        unsafe {
            asm!(
                "tileloadd tmm1, [{p} + {sp}*1]",
                "tileloadd tmm2, [{v0} + {sv}*1]",
                "tileloadd tmm3, [{v1} + {sv}*1]",
                "tdpbf16ps tmm4, tmm1, tmm2",
                "tdpbf16ps tmm5, tmm1, tmm3",
                p = in(reg) probabilities.as_ptr().add(value_block * BLOCK),
                sp = in(reg) rows32 * 2,
                v0 = in(reg) values.as_ptr().add(value_block * 2 * TILE * DEPTH),
                v1 = in(reg) values.as_ptr().add((value_block * 2 + 1) * TILE * DEPTH),
                sv = in(reg) 64_usize,
                options(nostack, readonly),
            );
        }
    }
    // SAFETY: two 16×16 f32 tiles into the 16×32 block (stride 128 bytes).
    unsafe {
        asm!(
            "tilestored [{c0} + {s}*1], tmm4",
            "tilestored [{c1} + {s}*1], tmm5",
            c0 = in(reg) block.as_mut_ptr(),
            c1 = in(reg) block.as_mut_ptr().add(TILE),
            s = in(reg) HEAD_DIM * 4,
            options(nostack),
        );
    }
}

#[cfg(not(target_arch = "x86_64"))]
unsafe fn head_scores(_: &[u16], _: &mut AttentionScratch, _: usize, _: usize, _: usize, _: usize) {
    unreachable!("AMX is never available off x86_64")
}

#[cfg(not(target_arch = "x86_64"))]
unsafe fn head_context(_: &mut AttentionScratch, _: usize) {
    unreachable!("AMX is never available off x86_64")
}

/// `2^t` for `t ≤ 0`, relative error < 1e-4: enough for probabilities that
/// are rounded to bf16 (2^-9) next, and a third cheaper than
/// `kernels::fast_exp` (one range reduction, degree 4).
#[inline(always)]
fn exp2_coarse(t: f32) -> f32 {
    const MAGIC: f32 = 12_582_912.0; // 1.5·2^23: rounds to an integer in the low bits
    let t = t.max(-126.0);
    let shifted = t + MAGIC;
    let n = shifted - MAGIC;
    let f = t - n; // in [-0.5, 0.5]
    // 2^f = e^(f·ln 2), Taylor to degree 4 (next term < 4.2e-5).
    let p = 1.0 + f * (std::f32::consts::LN_2 + f * (0.240_226_5 + f * (0.055_504_11 + f * 0.009_618_129)));
    let n_int = shifted.to_bits().wrapping_sub(MAGIC.to_bits());
    p * f32::from_bits(n_int.wrapping_add(127) << 23)
}

/// Softmax of `rows` score rows (the first `length` of each row of width
/// `stride`) after multiplying by `scale`, written as bf16 rows of width
/// `out_stride` (columns from `length` on are left as they are: zero).
#[multiversion(targets("x86_64+avx512f+avx512vl+avx512dq+avx512bw", "x86_64+avx2+fma"))]
fn softmax_to_bf16(
    scores: &mut [f32],
    stride: usize,
    rows: usize,
    length: usize,
    scale: f32,
    out: &mut [u16],
    out_stride: usize,
) {
    // Independent lane accumulators: a single running sum would keep
    // this loop from vectorising (the maximum is `kernels::max_of`).
    const LANES: usize = 16;
    for r in 0..rows {
        let row = &mut scores[r * stride..r * stride + length];
        let max = crate::kernels::max_of(row);
        // exp((v − max)·scale) = 2^(v·k − max·k), k = scale·log2 e.
        let k = scale * std::f32::consts::LOG2_E;
        let offset = max * k;
        let mut sums = [0.0_f32; LANES];
        let mut chunks = row.chunks_exact_mut(LANES);
        for chunk in &mut chunks {
            for (sum, value) in sums.iter_mut().zip(chunk.iter_mut()) {
                *value = exp2_coarse(*value * k - offset);
                *sum += *value;
            }
        }
        let mut tail = 0.0_f32;
        for value in chunks.into_remainder() {
            *value = exp2_coarse(*value * k - offset);
            tail += *value;
        }
        let inv = 1.0 / (tail + sums.iter().sum::<f32>());
        for (to, &value) in out[r * out_stride..r * out_stride + length].iter_mut().zip(row.iter()) {
            let bits = (value * inv).to_bits();
            *to = ((bits + 0x7fff + ((bits >> 16) & 1)) >> 16) as u16;
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
unsafe fn matmul_rows(_: &[u16], _: usize, _: &Bf16Matrix, _: &mut [f32], _: &mut dyn FnMut(usize, usize, &mut [f32])) {
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

    /// Attention in f64 on the bf16-rounded queries, keys and values.
    fn attention_reference(qkv: &[f32], length: usize, heads: usize, scale: f32) -> Vec<f32> {
        let hidden = heads * HEAD_DIM;
        let round = |v: f32| f64::from(from_bf16(to_bf16(v)));
        let mut out = vec![0.0; length * hidden];
        for head in 0..heads {
            for i in 0..length {
                let q = |d: usize| round(qkv[i * 3 * hidden + head * HEAD_DIM + d]);
                let scores: Vec<f64> = (0..length)
                    .map(|j| {
                        (0..HEAD_DIM)
                            .map(|d| q(d) * round(qkv[j * 3 * hidden + hidden + head * HEAD_DIM + d]))
                            .sum::<f64>()
                            * f64::from(scale)
                    })
                    .collect();
                let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let weights: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
                let sum: f64 = weights.iter().sum();
                for d in 0..HEAD_DIM {
                    let value: f64 = (0..length)
                        .map(|j| weights[j] / sum * round(qkv[j * 3 * hidden + 2 * hidden + head * HEAD_DIM + d]))
                        .sum();
                    out[i * hidden + head * HEAD_DIM + d] = value as f32;
                }
            }
        }
        out
    }

    /// Whether the tile kernels can run here. Machines of this project's
    /// kind come with AMX and without it (the hypervisor decides); without,
    /// nothing may call the kernels, and [`available`] is what keeps them
    /// from being called: it must not claim a unit the CPU does not list.
    /// The kernel tests then check that and say the kernels were not run.
    fn amx_here() -> bool {
        let listed = std::fs::read_to_string("/proc/cpuinfo")
            .map(|info| info.split_whitespace().any(|flag| flag == "amx_tile"))
            .unwrap_or(false);
        if available() {
            assert!(listed, "AMX reported available, but /proc/cpuinfo lists no amx_tile");
            return true;
        }
        #[allow(clippy::print_stderr)]
        {
            eprintln!("no usable AMX here (/proc/cpuinfo lists amx_tile: {listed}): the tile kernels were not run");
        }
        false
    }

    #[test]
    fn amx_attention_matches_a_scalar_reference() {
        if !amx_here() {
            return;
        }
        let mut scratch = AttentionScratch::default();
        for (length, heads) in [(1, 1), (5, 2), (16, 1), (17, 3), (33, 2), (70, 12)] {
            let hidden = heads * HEAD_DIM;
            let qkv: Vec<f32> = pseudo_random(length * 3 * hidden, length as u32).iter().map(|v| v * 3.0).collect();
            // The rows past the text hold other values (the next text's):
            // they must not reach the result.
            let padded = attention_rows(length);
            let mut rows: Vec<u16> =
                pseudo_random(padded * 3 * hidden, 99).iter().map(|&v| to_bf16(v * 50.0)).collect();
            convert_rows(&qkv, 3 * hidden, &mut rows, 3 * hidden);
            let mut out = vec![0_u16; length * hidden];
            attention(&rows, length, heads, 0.25, &mut out, &mut scratch);
            let want = attention_reference(&qkv, length, heads, 0.25);
            for (index, (&g, e)) in out.iter().zip(&want).enumerate() {
                // The probabilities and the output are rounded to bf16
                // (relative 2^-9 each).
                let g = from_bf16(g);
                assert!(
                    (g - e).abs() <= 8e-3 + e.abs() / 256.0,
                    "length {length}, heads {heads}, at {index}: {g} vs {e}"
                );
            }
        }
    }

    #[test]
    fn epilogues_equal_the_separate_passes() {
        if !amx_here() {
            return;
        }
        let (rows, k, n, stride) = (77, 40, 48, 64);
        let a = pseudo_random(rows * k, 5);
        let w = Bf16Matrix::pack(&pseudo_random(k * n, 6), k, n);
        let bias = pseudo_random(n, 7);
        let residual = pseudo_random(rows * n, 8);
        let (gamma, beta) = (pseudo_random(n, 9), pseudo_random(n, 10));
        let plain = amx_product(&a, rows, k, &w, 2);
        let mut input = Bf16Buffer::zeroed(padded_rows(rows) * w.input_stride());
        convert_rows(&a, k, input.as_mut_slice(), w.input_stride());
        let epilogues = [
            Epilogue::Bias(&bias),
            Epilogue::BiasGelu(&bias),
            Epilogue::ResidualNorm { residual: &residual, bias: &bias, gamma: &gamma, beta: &beta, eps: 1e-12 },
        ];
        for epilogue in epilogues {
            let mut out = vec![0.0; rows * n];
            let mut staged = vec![7_u16; rows * stride];
            matmul_then(input.as_slice(), rows, &w, Some(&mut out), 2, epilogue, &mut staged, stride);
            if !matches!(epilogue, Epilogue::ResidualNorm { .. }) {
                // Without an f32 output: the same bf16 rows.
                let mut alone = vec![7_u16; rows * stride];
                matmul_then(input.as_slice(), rows, &w, None, 2, epilogue, &mut alone, stride);
                assert_eq!(alone, staged, "{epilogue:?} without an f32 output");
            }
            let mut expected_out = plain.clone();
            let mut expected = vec![0_u16; rows * stride];
            match epilogue {
                Epilogue::Bias(b) => bias_to_bf16(&plain, b, &mut expected, stride),
                Epilogue::BiasGelu(b) => bias_gelu_to_bf16(&plain, b, &mut expected, stride),
                Epilogue::ResidualNorm { residual, bias, gamma, beta, eps } => {
                    crate::kernels::add_bias_residual_norm(&mut expected_out, residual, bias, gamma, beta, eps);
                    convert_rows(&expected_out, n, &mut expected, stride);
                    assert_eq!(out, expected_out);
                }
                Epilogue::None => unreachable!(),
            }
            assert_eq!(staged, expected, "{epilogue:?}");
        }
    }

    #[test]
    fn coarse_gelu_is_close_to_the_exact_one() {
        for i in -100_000..=100_000 {
            let x = i as f32 / 10_000.0;
            let exact = 0.5 * x * (1.0 + crate::kernels::fast_erf(x * std::f32::consts::FRAC_1_SQRT_2));
            let error = (gelu_coarse(x) - exact).abs();
            assert!(error <= 3e-5 * x.abs().max(1e-3), "gelu({x}): {} vs {exact}", gelu_coarse(x));
        }
    }

    #[test]
    fn coarse_exp2_is_accurate_enough_for_bf16_probabilities() {
        // Below -126 the result stays at 2^-126, nothing next to the row maximum (1).
        for i in 0..=126_000 {
            let t = -(i as f32) / 1000.0;
            let exact = 2.0_f64.powf(f64::from(t));
            let relative = ((f64::from(exp2_coarse(t)) - exact) / exact).abs();
            assert!(relative < 1e-4, "2^{t}: relative error {relative}");
        }
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
        if !amx_here() {
            return;
        }
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
